//! Writes a large, valid ext4 benchmark image directly (issue 17).
//!
//! Creating millions of files through a loop mount or `mkfs.ext4 -d` takes
//! hours; this tool lets `mkfs.ext4` lay out the empty file system (so the
//! geometry is exactly what a user gets) and then fills the inode tables,
//! directory blocks, bitmaps and counters itself, in disk order, with two
//! coalescing writers. File data blocks are allocated but never written:
//! they are holes of the sparse image, which a checker never reads.
//!
//! The tree is a complete 100-ary forest of directories under the root
//! (directory i's subdirectories are 100(i+1) .. 100(i+1)+99, the first
//! hundred hang from the root), every directory holding the same number of
//! files; for `mix` the files of each directory follow the size and width
//! distributions described in bench/README.md. Inodes are numbered
//! directory by directory (a directory, then its files), as a tree copied
//! depth-first by `cp -a` onto a fresh file system would be.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

use pfsck::fs::dir_entry;
use pfsck::fs::extent::{self, Extent, ExtentIndex};
use pfsck::fs::geometry::Geometry;
use pfsck::fs::group_desc::{
    BG_BLOCK_UNINIT, BG_INODE_UNINIT, DescMut, GroupDesc, bitmap_checksum,
};
use pfsck::fs::inode::{self, InodeMut, S_IFDIR, S_IFREG, flags};
use pfsck::fs::num::Ino;
use pfsck::fs::superblock::{Superblock, SuperblockMut};

const FANOUT: u64 = 100;
const FIRST_INO: u32 = 12;
const LOST_FOUND_INO: u32 = 11;
/// A fixed time stamp: images are identical for a given command line.
const TIME: u32 = 1_700_000_000;
const FT_REG: u8 = 1;
const FT_DIR: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Directories of 99 files of 100 bytes (bench/run.py's `file`).
    Files,
    /// 25% directories, each with 3 files of 100 bytes (`dir25`).
    Dir25,
    /// 50% directories, each with 1 file of 100 bytes (`dir50`).
    Dir50,
    /// Directories of 1,000 empty files (`zero`).
    Zero,
    /// A realistic mix of file sizes and directory widths (`mix`).
    Mix,
    /// A few huge files of one-block extents with one-block holes between
    /// them (bench/run.py's `frag`, linux-ext4's "Case-4"): `--extents`
    /// in all, over `--files` files in one directory.
    Frag,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "files" | "file" => Kind::Files,
            "dir25" => Kind::Dir25,
            "dir50" => Kind::Dir50,
            "zero" => Kind::Zero,
            "mix" => Kind::Mix,
            "frag" => Kind::Frag,
            _ => return None,
        })
    }
    /// Files per directory (the mean, for `mix`).
    fn files_per_dir(self) -> u64 {
        match self {
            Kind::Files => 99,
            Kind::Dir25 => 3,
            Kind::Dir50 => 1,
            Kind::Zero => 1000,
            Kind::Mix => 7,
            Kind::Frag => 4,
        }
    }
}

struct Args {
    kind: Kind,
    inodes: u64,
    out: PathBuf,
    seed: u64,
    check: Option<String>,
    /// `frag`: extents in all, and the files holding them.
    extents: u64,
    files: u64,
    /// Bytes per block: 1024 packs a directory-heavy image's metadata into
    /// a quarter of the page cache 4096 needs.
    block_size: u64,
}

fn usage() -> ! {
    eprintln!(
        "usage: mkimage --kind files|dir25|dir50|zero|mix --inodes N[k|M] [--seed S] \
         [--block-size 1024|2048|4096] [--check E2FSCK | --no-check] OUT.img\n       \
         mkimage --kind frag --extents N[k|M] [--files F] [--block-size B] \
         [--check E2FSCK | --no-check] OUT.img"
    );
    std::process::exit(2)
}

fn parse_count(s: &str) -> Option<u64> {
    let (n, mul) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1_000),
        b'm' | b'M' => (&s[..s.len() - 1], 1_000_000),
        _ => (s, 1),
    };
    n.parse::<u64>().ok()?.checked_mul(mul)
}

fn parse_args() -> Args {
    let mut kind = None;
    let mut inodes = None;
    let mut out = None;
    let mut seed = 1;
    let mut check = Some("e2fsck".to_string());
    let mut extents = 0;
    let mut files = 4;
    let mut block_size = 4096;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--kind" => kind = it.next().as_deref().and_then(Kind::parse),
            "--inodes" => inodes = it.next().as_deref().and_then(parse_count),
            "--extents" => extents = it.next().as_deref().and_then(parse_count).unwrap_or(0),
            "--files" => files = it.next().as_deref().and_then(parse_count).unwrap_or(0),
            "--seed" => {
                seed = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--check" => check = Some(it.next().unwrap_or_else(|| usage())),
            "--no-check" => check = None,
            "--block-size" => {
                block_size = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|b| [1024, 2048, 4096].contains(b))
                    .unwrap_or_else(|| usage())
            }
            s if !s.starts_with('-') && out.is_none() => out = Some(PathBuf::from(s)),
            _ => usage(),
        }
    }
    if kind == Some(Kind::Frag) && inodes.is_none() {
        inodes = Some(100);
    }
    match (kind, inodes, out) {
        (Some(Kind::Frag), _, _) if extents < files || files == 0 => usage(),
        (Some(kind), Some(inodes), Some(out)) if inodes >= 100 => Args {
            kind,
            inodes,
            out,
            seed,
            check,
            extents,
            files,
            block_size,
        },
        _ => usage(),
    }
}

/// A small deterministic generator (splitmix64): the same seed gives the
/// same image.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A standard normal deviate (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// The shape of the `mix` kind; see bench/README.md for the figures and
/// their source.
fn mix_file_size(rng: &mut Rng) -> u64 {
    // Log-normal around a 4 KiB median, with a heavy tail; capped so that a
    // file's blocks fit a depth-1 extent tree.
    let x = (4096f64.ln() + 2.0 * rng.normal()).exp();
    if rng.unit() < 0.02 {
        0
    } else {
        (x as u64).clamp(1, 64 << 20)
    }
}

fn mix_files_in_dir(rng: &mut Rng) -> u64 {
    // Most directories are small, a few are wide: geometric-like with a
    // mean near 15 and a tail into the thousands.
    let x = (2.0f64.ln() + 1.6 * rng.normal()).exp();
    (x as u64).min(5000)
}

/// Collects writes that follow each other and issues them as one pwrite.
struct Coalescer<'a> {
    file: &'a File,
    start: u64,
    buf: Vec<u8>,
    limit: usize,
}

impl<'a> Coalescer<'a> {
    fn new(file: &'a File) -> Self {
        Coalescer {
            file,
            start: 0,
            buf: Vec::with_capacity(8 << 20),
            limit: 8 << 20,
        }
    }
    fn write(&mut self, off: u64, data: &[u8]) -> std::io::Result<()> {
        if self.buf.is_empty() || self.start + self.buf.len() as u64 != off {
            self.flush()?;
            self.start = off;
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= self.limit {
            self.flush()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            self.file.write_all_at(&self.buf, self.start)?;
            self.start += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }
}

/// A bitmap of the whole file system, one bit per block or inode.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: u64) -> Bits {
        Bits(vec![0; n.div_ceil(64) as usize])
    }
    fn get(&self, i: u64) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 != 0
    }
    fn set(&mut self, i: u64) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: u64) {
        self.0[(i / 64) as usize] &= !(1 << (i % 64));
    }
}

/// What an inode is, beyond its blocks.
#[derive(Clone, Copy)]
struct Meta {
    mode: u16,
    size: u64,
    links: u16,
}

struct Image {
    file: File,
    sb: Superblock,
    geo: Geometry,
    descs: Vec<u8>,
    blocks: Bits,
    inodes: Bits,
    /// Blocks allocated here, per group (their bitmaps must be written).
    touched: Vec<bool>,
    used_dirs: Vec<u32>,
    cursor: u64,
    seed: u32,
    bs: usize,
}

type Res<T> = Result<T, String>;

fn io<T>(what: &str, r: std::io::Result<T>) -> Res<T> {
    r.map_err(|e| format!("{what}: {e}"))
}

impl Image {
    fn open(path: &PathBuf) -> Res<Image> {
        let file = io("open", OpenOptions::new().read(true).write(true).open(path))?;
        let mut raw = vec![0u8; 1024];
        io("read superblock", file.read_exact_at(&mut raw, 1024))?;
        let sb = Superblock::parse(&raw);
        let geo = Geometry::new(&sb)?;
        if geo.cluster_bits != 0 || geo.meta_bg {
            return Err("bigalloc and meta_bg are not generated".into());
        }
        let bs = geo.block_size as usize;
        let gdt_start = (geo.first_data_block + 1) * bs as u64;
        let mut descs = vec![0u8; geo.desc_blocks as usize * bs];
        io(
            "read descriptors",
            file.read_exact_at(&mut descs, gdt_start),
        )?;
        let mut img = Image {
            file,
            seed: sb.csum_seed(),
            blocks: Bits::new(geo.blocks_count),
            inodes: Bits::new(geo.inodes_count as u64 + 1),
            touched: vec![false; geo.groups as usize],
            used_dirs: vec![0; geo.groups as usize],
            cursor: geo.first_data_block,
            sb,
            geo,
            descs,
            bs,
        };
        img.load_bitmaps()?;
        Ok(img)
    }

    fn desc(&self, g: u32) -> GroupDesc {
        let ds = self.geo.desc_size as usize;
        GroupDesc::parse(&self.descs[g as usize * ds..(g as usize + 1) * ds])
    }

    fn desc_mut(&mut self, g: u32) -> DescMut<'_> {
        let ds = self.geo.desc_size as usize;
        DescMut(&mut self.descs[g as usize * ds..(g as usize + 1) * ds])
    }

    /// What mkfs left in use: the stored bitmaps of initialised groups, and
    /// for every group its superblock and descriptor copies and whatever
    /// group's bitmaps and inode table flex_bg placed in it.
    fn load_bitmaps(&mut self) -> Res<()> {
        let bs = self.bs;
        let mut buf = vec![0u8; bs];
        for g in 0..self.geo.groups {
            let d = self.desc(g);
            for (first, n) in self.geo.group_super_and_gdt(g) {
                (first..first + n).for_each(|b| self.blocks.set(b));
            }
            self.blocks.set(d.block_bitmap);
            self.blocks.set(d.inode_bitmap);
            let it = self.geo.inode_table_blocks as u64;
            (d.inode_table..d.inode_table + it).for_each(|b| self.blocks.set(b));
            let first = self.geo.group_first_block(g);
            if !d.has_flag(BG_BLOCK_UNINIT) {
                io(
                    "read block bitmap",
                    self.file
                        .read_exact_at(&mut buf, d.block_bitmap * bs as u64),
                )?;
                for i in 0..self.geo.group_blocks(g) as u64 {
                    if buf[(i / 8) as usize] >> (i % 8) & 1 != 0 {
                        self.blocks.set(first + i);
                    }
                }
            }
            if !d.has_flag(BG_INODE_UNINIT) {
                io(
                    "read inode bitmap",
                    self.file
                        .read_exact_at(&mut buf, d.inode_bitmap * bs as u64),
                )?;
                let ipg = self.geo.inodes_per_group as u64;
                for i in 0..ipg {
                    if buf[(i / 8) as usize] >> (i % 8) & 1 != 0 {
                        self.inodes.set(g as u64 * ipg + i + 1);
                    }
                }
            }
            self.used_dirs[g as usize] = d.used_dirs_count;
        }
        Ok(())
    }

    fn alloc_block(&mut self) -> Res<u64> {
        while self.cursor < self.geo.blocks_count && self.blocks.get(self.cursor) {
            self.cursor += 1;
        }
        if self.cursor >= self.geo.blocks_count {
            return Err("file system full (generator sized it too small)".into());
        }
        let b = self.cursor;
        self.blocks.set(b);
        self.touched[self.geo.group_of_block(b) as usize] = true;
        self.cursor += 1;
        Ok(b)
    }

    fn free_block(&mut self, b: u64) {
        self.blocks.clear(b);
        self.touched[self.geo.group_of_block(b) as usize] = true;
    }

    /// `n` blocks as extents (runs of consecutive blocks).
    fn alloc_extents(&mut self, n: u64) -> Res<Vec<Extent>> {
        let mut out: Vec<Extent> = Vec::new();
        for lblk in 0..n {
            let b = self.alloc_block()?;
            match out.last_mut() {
                Some(e) if e.pblk + e.len as u64 == b && e.len < 32768 => e.len += 1,
                _ => out.push(Extent {
                    lblk: lblk as u32,
                    len: 1,
                    pblk: b,
                    unwritten: false,
                }),
            }
        }
        Ok(out)
    }

    /// `n` one-block extents at even logical blocks, each followed by a
    /// free block on disk: a file fallocated, then punched at every other
    /// block.
    fn alloc_holey(&mut self, n: u64) -> Res<Vec<Extent>> {
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            let b = self.alloc_block()?;
            let hole = self.alloc_block()?;
            self.free_block(hole);
            out.push(Extent {
                lblk: u32::try_from(2 * i).map_err(|_| "file too large")?,
                len: 1,
                pblk: b,
                unwritten: false,
            });
        }
        Ok(out)
    }

    fn inode_offset(&self, ino: u32) -> u64 {
        let ipg = self.geo.inodes_per_group;
        let g = (ino - 1) / ipg;
        let idx = (ino - 1) % ipg;
        self.desc(g).inode_table * self.bs as u64 + idx as u64 * self.geo.inode_size as u64
    }

    /// Fills `raw` (one inode) for a file or directory whose data is
    /// `extents`; leaf blocks beyond the four the inode holds are written
    /// through `data` and counted in i_blocks.
    fn make_inode(
        &mut self,
        raw: &mut [u8],
        ino: u32,
        meta: Meta,
        extents: &[Extent],
        data: &mut Coalescer,
    ) -> Res<()> {
        raw.fill(0);
        let mut blocks: u64 = extents.iter().map(|e| e.len as u64).sum();
        let mut i_block = [0u8; 60];
        if extents.len() <= 4 {
            extent::put_header(&mut i_block, extents.len() as u16, 4, 0);
            let entries: Vec<_> = extents.iter().map(Extent::encode).collect();
            extent::put_entries(&mut i_block, &entries);
        } else {
            // Leaves full of extents, then index levels over them until the
            // four entries of the inode hold the top one.
            let per_node = extent::max_entries(self.bs) as usize;
            let iseed = inode::inode_csum_seed(self.seed, Ino(ino), 0);
            let mut level: Vec<[u8; 12]> = extents.iter().map(Extent::encode).collect();
            let mut firsts: Vec<u32> = extents.iter().map(|e| e.lblk).collect();
            let mut depth = 0u16;
            while level.len() > 4 {
                let mut up = Vec::with_capacity(level.len().div_ceil(per_node));
                let mut up_firsts = Vec::with_capacity(up.capacity());
                for (chunk, lblks) in level.chunks(per_node).zip(firsts.chunks(per_node)) {
                    let node = self.alloc_block()?;
                    blocks += 1;
                    let mut b = vec![0u8; self.bs];
                    extent::put_header(&mut b, chunk.len() as u16, per_node as u16, depth);
                    extent::put_entries(&mut b, chunk);
                    extent::set_block_checksum(iseed, &mut b);
                    io("write extent block", data.write(node * self.bs as u64, &b))?;
                    up.push(
                        ExtentIndex {
                            lblk: lblks[0],
                            leaf: node,
                        }
                        .encode(),
                    );
                    up_firsts.push(lblks[0]);
                }
                level = up;
                firsts = up_firsts;
                depth += 1;
            }
            extent::put_header(&mut i_block, level.len() as u16, 4, depth);
            extent::put_entries(&mut i_block, &level);
        }
        let mut m = InodeMut(raw);
        m.set_mode(meta.mode);
        m.set_size(meta.size);
        m.set_times(TIME);
        m.set_links(meta.links);
        m.set_blocks(blocks * (self.bs as u64 / 512), true);
        m.set_flags(flags::EXTENTS);
        m.i_block_mut().copy_from_slice(&i_block);
        if raw.len() > inode::GOOD_OLD_INODE_SIZE {
            let mut m = InodeMut(raw);
            m.set_extra_isize(32);
            m.set_crtime(TIME);
        }
        if self.sb.metadata_csum() {
            InodeMut(raw).set_checksum(self.seed, Ino(ino));
        }
        self.inodes.set(ino as u64);
        if meta.mode & inode::S_IFMT == S_IFDIR {
            self.used_dirs[self.geo.group_of_inode(Ino(ino)) as usize] += 1;
        }
        Ok(())
    }

    /// Directory blocks holding '.', '..' and `entries`, packed in order.
    fn dir_blocks(&self, ino: u32, parent: u32, entries: &[(Vec<u8>, u32, u8)]) -> Vec<Vec<u8>> {
        let bs = self.bs;
        let csum = self.sb.metadata_csum();
        let end = if csum { bs - 12 } else { bs };
        let mut blocks = Vec::new();
        let mut b = vec![0u8; bs];
        let mut off = 0;
        let mut last = 0;
        let all = [
            (b".".to_vec(), ino, FT_DIR),
            (b"..".to_vec(), parent, FT_DIR),
        ];
        for (name, child, ft) in all.iter().chain(entries) {
            let len = dir_entry::rec_len_for(name.len());
            if off + len > end {
                dir_entry::put_rec_len(&mut b, last, end - last);
                blocks.push(std::mem::replace(&mut b, vec![0u8; bs]));
                off = 0;
            }
            dir_entry::put_entry(&mut b, bs, off, *child, len, name, Some(*ft));
            last = off;
            off += len;
        }
        dir_entry::put_rec_len(&mut b, last, end - last);
        blocks.push(b);
        if csum {
            let iseed = inode::inode_csum_seed(self.seed, Ino(ino), 0);
            for b in &mut blocks {
                dir_entry::put_tail_header(b);
                dir_entry::set_tail_checksum(iseed, b);
            }
        }
        blocks
    }

    fn write_dir(
        &mut self,
        ino: u32,
        parent: u32,
        entries: &[(Vec<u8>, u32, u8)],
        subdirs: u16,
        raw: &mut [u8],
        data: &mut Coalescer,
    ) -> Res<()> {
        let blocks = self.dir_blocks(ino, parent, entries);
        let extents = self.alloc_extents(blocks.len() as u64)?;
        let mut lblk = 0usize;
        for e in &extents {
            for i in 0..e.len as usize {
                let off = (e.pblk + i as u64) * self.bs as u64;
                io("write directory", data.write(off, &blocks[lblk + i]))?;
            }
            lblk += e.len as usize;
        }
        let size = (blocks.len() * self.bs) as u64;
        // dir_nlink: a directory with 64999 or more subdirectories says 1.
        let links = if (subdirs as u32) + 2 >= 65000 {
            1
        } else {
            subdirs + 2
        };
        let meta = Meta {
            mode: S_IFDIR | 0o755,
            size,
            links,
        };
        self.make_inode(raw, ino, meta, &extents, data)
    }

    /// Bitmaps, descriptors and the superblock for what was allocated.
    fn finish(&mut self) -> Res<()> {
        let bs = self.bs;
        let ipg = self.geo.inodes_per_group;
        let mut total_free_blocks = 0u64;
        let mut total_free_inodes = 0u64;
        for g in 0..self.geo.groups {
            let first = self.geo.group_first_block(g);
            let nblocks = self.geo.group_blocks(g) as u64;
            let mut bb = vec![0u8; bs];
            let mut free_b = 0u32;
            for i in 0..(bs as u64 * 8) {
                if i >= nblocks || self.blocks.get(first + i) {
                    bb[(i / 8) as usize] |= 1 << (i % 8);
                } else {
                    free_b += 1;
                }
            }
            let mut ib = vec![0u8; bs];
            let mut free_i = 0u32;
            let mut highest = 0u32;
            for i in 0..(bs as u32 * 8) {
                let ino = g as u64 * ipg as u64 + i as u64 + 1;
                if i >= ipg || self.inodes.get(ino) {
                    ib[(i / 8) as usize] |= 1 << (i % 8);
                    if i < ipg {
                        highest = i + 1;
                    }
                } else {
                    free_i += 1;
                }
            }
            total_free_blocks += free_b as u64;
            total_free_inodes += free_i as u64;
            let d = self.desc(g);
            let inodes_used = highest > 0;
            let write_blocks = self.touched[g as usize];
            let write_inodes = inodes_used;
            let used_dirs = self.used_dirs[g as usize];
            let sb = self.sb.clone();
            let bcs = bitmap_checksum(&sb, &bb[..(self.geo.blocks_per_group / 8) as usize], d.wide);
            let ics = bitmap_checksum(&sb, &ib[..(ipg / 8) as usize], d.wide);
            if write_blocks {
                io(
                    "write block bitmap",
                    self.file.write_all_at(&bb, d.block_bitmap * bs as u64),
                )?;
            }
            if write_inodes {
                io(
                    "write inode bitmap",
                    self.file.write_all_at(&ib, d.inode_bitmap * bs as u64),
                )?;
            }
            let mut m = self.desc_mut(g);
            m.set_free_blocks(free_b);
            m.set_free_inodes(free_i);
            m.set_used_dirs(used_dirs);
            let mut fl = d.flags;
            if write_blocks {
                fl &= !BG_BLOCK_UNINIT;
                m.set_block_bitmap_csum(bcs);
            }
            if write_inodes {
                fl &= !BG_INODE_UNINIT;
                m.set_inode_bitmap_csum(ics);
                m.set_itable_unused(ipg - highest);
            }
            m.set_flags(fl);
            m.set_checksum(&sb, g);
        }
        let gdt_start = (self.geo.first_data_block + 1) * bs as u64;
        io(
            "write descriptors",
            self.file.write_all_at(&self.descs, gdt_start),
        )?;
        let mut raw = self.sb.raw.clone();
        raw.resize(1024, 0);
        let mut m = SuperblockMut(&mut raw);
        m.set_free_blocks(
            total_free_blocks,
            self.sb.has_incompat(pfsck::fs::superblock::incompat::BIT64),
        );
        m.set_free_inodes(total_free_inodes as u32);
        m.set_checksum();
        io("write superblock", self.file.write_all_at(&raw, 1024))?;
        io("sync", self.file.sync_data())
    }
}

fn name(prefix: u8, n: u64) -> Vec<u8> {
    let mut v = vec![prefix];
    v.extend_from_slice(n.to_string().as_bytes());
    v
}

/// Number of directories and the blocks they and their files need.
struct Plan {
    dirs: u64,
    files: u64,
    data_blocks: u64,
}

fn plan(args: &Args) -> Plan {
    let (kind, inodes) = (args.kind, args.inodes);
    if kind == Kind::Frag {
        // Each extent's block and the hole after it, the tree's nodes.
        return Plan {
            dirs: 1,
            files: args.files,
            data_blocks: args.extents * 2 + args.extents / 300 + 16,
        };
    }
    let per = kind.files_per_dir();
    let dirs = (inodes - FIRST_INO as u64 + 1).div_ceil(per + 1);
    let files = dirs * per;
    let file_blocks = match kind {
        Kind::Zero => 0,
        // Mean of the capped log-normal above is about 30 KiB; leave room
        // (16 blocks of 4 KiB).
        Kind::Mix => files * 16 * 4096 / args.block_size,
        _ => files,
    };
    Plan {
        dirs,
        files,
        data_blocks: file_blocks + dirs * (1 + per * 24 / args.block_size + 1),
    }
}

fn run(args: &Args) -> Res<()> {
    let t0 = Instant::now();
    let p = plan(args);
    let total_inodes = FIRST_INO as u64 + p.dirs + p.files;
    let bs = args.block_size;
    // A block bitmap covers one block's worth of bits.
    let per_group = bs * 8;
    let itable_blocks = total_inodes * 256 / bs;
    // Room for the data, the inode tables, a journal of up to 1 GiB, and a
    // fifth spare, rounded to whole groups.
    let journal = (1 << 30) / bs;
    let blocks =
        ((p.data_blocks + itable_blocks + journal) * 6 / 5).div_ceil(per_group) * per_group;
    let groups = blocks / per_group;
    // mkfs rounds inodes per group up to fill the inode table's blocks.
    let ipg = total_inodes.div_ceil(groups).max(16);
    if ipg > per_group {
        return Err("too many inodes for the space (raise file sizes)".into());
    }
    let _ = std::fs::remove_file(&args.out);
    io(
        "create image",
        File::create(&args.out).and_then(|f| f.set_len(blocks * bs)),
    )?;
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-b", &bs.to_string(), "-I", "256"])
        .args(["-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard"])
        .args(["-N", &(ipg * groups).to_string()])
        .arg(&args.out)
        .arg(blocks.to_string())
        .status();
    match st {
        Ok(s) if s.success() => {}
        other => return Err(format!("mkfs.ext4 failed: {other:?}")),
    }
    let t_mkfs = t0.elapsed();
    let mut img = Image::open(&args.out)?;
    fill(&mut img, args, p.dirs)?;
    img.finish()?;
    report(args, &img, t_mkfs, t0)
}

/// Writes the tree: directory i's inode, then its files', directory by
/// directory. Each directory's width is fixed first (for `mix` from the
/// random stream), since a directory names its subdirectories' inodes.
fn fill(img: &mut Image, args: &Args, dirs: u64) -> Res<()> {
    let mut rng = Rng(args.seed);
    let bs = args.block_size;
    let mut widths: Vec<u32> = Vec::with_capacity(dirs as usize);
    let mut firsts: Vec<u32> = Vec::with_capacity(dirs as usize);
    let mut next = FIRST_INO as u64;
    for _ in 0..dirs {
        let w = match args.kind {
            Kind::Mix => mix_files_in_dir(&mut rng),
            Kind::Frag => args.files,
            k => k.files_per_dir(),
        };
        if next + 1 + w > img.geo.inodes_count as u64 + 1 {
            break;
        }
        widths.push(w as u32);
        firsts.push(next as u32);
        next += 1 + w;
    }
    let dirs = widths.len() as u64;
    let file_file = img.file.try_clone().map_err(|e| e.to_string())?;
    let itable_file = img.file.try_clone().map_err(|e| e.to_string())?;
    let mut data = Coalescer::new(&file_file);
    let mut itab = Coalescer::new(&itable_file);
    write_root(img, dirs.min(FANOUT), |c| firsts[c as usize], &mut data)?;
    let isz = img.geo.inode_size as usize;
    let mut buf = Vec::new();
    for i in 0..dirs {
        let ino = firsts[i as usize];
        let per = widths[i as usize];
        let parent = if i < FANOUT {
            2
        } else {
            firsts[(i / FANOUT - 1) as usize]
        };
        let first_child = FANOUT * (i + 1);
        let nsub = dirs.saturating_sub(first_child).min(FANOUT);
        let mut entries = Vec::with_capacity(nsub as usize + per as usize);
        for c in 0..nsub {
            entries.push((name(b'd', c), firsts[(first_child + c) as usize], FT_DIR));
        }
        for f in 0..per {
            entries.push((name(b'f', f as u64), ino + 1 + f, FT_REG));
        }
        buf.clear();
        buf.resize(isz * (per as usize + 1), 0);
        let (dir_raw, files_raw) = buf.split_at_mut(isz);
        img.write_dir(ino, parent, &entries, nsub as u16, dir_raw, &mut data)?;
        for (f, raw) in files_raw.chunks_mut(isz).enumerate() {
            let (size, ext) = match args.kind {
                Kind::Frag => {
                    let n = args.extents / args.files
                        + u64::from((f as u64) < args.extents % args.files);
                    (n.max(1) * 2 * bs - bs, img.alloc_holey(n)?)
                }
                k => {
                    let size = match k {
                        Kind::Mix => mix_file_size(&mut rng),
                        Kind::Zero => 0,
                        _ => 100,
                    };
                    (size, img.alloc_extents(size.div_ceil(bs))?)
                }
            };
            let meta = Meta {
                mode: S_IFREG | 0o644,
                size,
                links: 1,
            };
            img.make_inode(raw, ino + 1 + f as u32, meta, &ext, &mut data)?;
        }
        write_inode_run(img, ino, &buf, &mut itab)?;
    }
    data.flush().map_err(|e| e.to_string())?;
    itab.flush().map_err(|e| e.to_string())
}

/// Writes consecutive inodes starting at `first`, split where the inode
/// table of one group ends.
fn write_inode_run(img: &Image, first: u32, raw: &[u8], itab: &mut Coalescer) -> Res<()> {
    let isz = img.geo.inode_size as usize;
    let n = raw.len() / isz;
    for k in 0..n {
        let off = img.inode_offset(first + k as u32);
        io(
            "write inodes",
            itab.write(off, &raw[k * isz..(k + 1) * isz]),
        )?;
    }
    Ok(())
}

/// Rewrites the root directory mkfs made (., .., lost+found) to hold the
/// top `n` directories too.
fn write_root(
    img: &mut Image,
    n: u64,
    child: impl Fn(u64) -> u32,
    data: &mut Coalescer,
) -> Res<()> {
    let isz = img.geo.inode_size as usize;
    let mut raw = vec![0u8; isz];
    let off = img.inode_offset(2);
    io("read root", img.file.read_exact_at(&mut raw, off))?;
    // The old block (mkfs gives the root one, in the inode's only extent).
    let old = extent::parse_leaf(&raw[0x28..0x28 + 60], 0);
    for b in old.pblk..old.pblk + old.len as u64 {
        img.free_block(b);
    }
    let mut entries = vec![(b"lost+found".to_vec(), LOST_FOUND_INO, FT_DIR)];
    for c in 0..n {
        entries.push((name(b'd', c), child(c), FT_DIR));
    }
    img.used_dirs[0] -= 1;
    img.write_dir(2, 2, &entries, n as u16 + 1, &mut raw, data)?;
    io("write root", img.file.write_all_at(&raw, off))?;
    Ok(())
}

fn report(args: &Args, img: &Image, t_mkfs: std::time::Duration, t0: Instant) -> Res<()> {
    let used = img.geo.inodes_count as u64 - {
        let mut f = 0u64;
        for g in 0..img.geo.groups {
            f += img.desc(g).free_inodes_count as u64;
        }
        f
    };
    let t_fill = t0.elapsed();
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "{}: kind {:?}, {} inodes used of {}, {} blocks, mkfs {:.1} s, total {:.1} s",
        args.out.display(),
        args.kind,
        used,
        img.geo.inodes_count,
        img.geo.blocks_count,
        t_mkfs.as_secs_f64(),
        t_fill.as_secs_f64()
    );
    if let Some(e2fsck) = &args.check {
        let t = Instant::now();
        let o = Command::new(e2fsck)
            .arg("-fn")
            .arg(&args.out)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("{e2fsck}: {e}"))?;
        if o.status.code() != Some(0) {
            let _ = out.write_all(&o.stdout);
            return Err(format!(
                "{e2fsck} -fn exited {:?}: the image is not valid",
                o.status.code()
            ));
        }
        let _ = writeln!(
            out,
            "{e2fsck} -fn: clean in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = parse_args();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mkimage: {e}");
            ExitCode::FAILURE
        }
    }
}
