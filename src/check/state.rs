//! What the passes learn about the file system and hand to the next ones.
//!
//! Shared maps are lock-free (atomic bitmaps and counters) so workers of a
//! pass write to them without merging; everything else is built from
//! per-worker results merged once, in unit order.

use super::xattr::EaCharge;
use crate::engine::{ScratchList, Spill};
use crate::fs::num::{Blk, Cluster, Ino, LBlk};
use crate::volume::{ClusterMap, InodeCounts, InodeMap};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Per-inode flag bits kept by pass 1 (`State::has_iflag`), one bitmap
/// each.
pub mod iflag {
    /// Directory uses an htree index (INDEX_FL).
    pub const HTREE: u8 = 0x1;
    /// Directory or file keeps its data inline in the inode.
    pub const INLINE: u8 = 0x2;
    /// Pass 1 found the inode broken beyond repair of single fields: entries
    /// pointing at it are themselves reported by pass 2.
    pub const BAD: u8 = 0x4;
    /// Encrypted with a readable policy (its id is in `State::enc_policy`).
    pub const ENCRYPTED: u8 = 0x8;
    /// CASEFOLD_FL on a casefold file system: names hash (and compare)
    /// case-insensitively.
    pub const CASEFOLD: u8 = 0x10;
    /// Lies in an inode table block the bad-block list names: in use, never
    /// read (pass 4 leaves its count alone, as e2fsck does).
    pub const IN_BAD_BLOCK: u8 = 0x20;
    /// Carries EA_INODE_FL (in use or reserved): e2fsck tracks it as an EA
    /// inode, so pass 4 judges it as one even when no xattr refers to it.
    pub const EA_INODE: u8 = 0x40;
    /// Its checksum fails and a read-only check leaves it so: e2fsck -n
    /// cannot read the inode again after pass 1.
    pub const CSUM_FAILED: u8 = 0x80;
    /// How many flags there are (bits 0..COUNT).
    pub const COUNT: usize = 8;
}

/// Bits of a file type (`FileType as u8`, 0..=7).
const FTYPE_BITS: usize = 3;
const FT_REG: u8 = 1;
const FT_DIR: u8 = 2;

/// Policy id of every encrypted inode whose version this checker does not
/// know (e2fsck takes them as sharing one policy).
pub const POLICY_UNRECOGNIZED: u32 = u32::MAX;

/// One block of a directory, as found by pass 1 while mapping the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirBlock {
    /// Physical block (first field: sorting gives disk order).
    pub pblk: Blk,
    pub ino: Ino,
    /// Logical block number in the directory.
    pub lblk: LBlk,
}

/// What one merged pass-1 unit hands pass 2: its directories (inode,
/// i_generation), their blocks, and where a repair's view of their
/// cleared blocks ends (`pass1::UnitOut::dir_tails`).
pub type UnitDirs<'a> = (&'a [(u32, u32)], &'a [DirBlock], &'a [(Ino, u32)]);

/// Counts for the summary line and `-v`.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub inodes_used: u64,
    pub regular: u64,
    pub directories: u64,
    pub chardev: u64,
    pub blockdev: u64,
    pub fifos: u64,
    pub sockets: u64,
    pub symlinks: u64,
    pub fast_symlinks: u64,
    pub fragmented: u64,
    pub extent_files: u64,
    pub inline_files: u64,
    pub large_files: u64,
    /// Indexed directories of 2 GiB or more (e2fsck's large_dirs).
    pub large_dirs: u64,
    /// Directories among `fragmented`.
    pub fragmented_dirs: u64,
    /// Block-mapped inodes with an indirect, double and triple indirect
    /// block.
    pub ind_inodes: [u64; 3],
    /// Extent-mapped inodes by the depth of their tree (the last counts
    /// that depth and deeper, as e2fsck's histogram).
    pub extent_depths: [u64; 5],
    /// Blocks listed in the bad blocks inode.
    pub bad_blocks: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.inodes_used += o.inodes_used;
        self.regular += o.regular;
        self.directories += o.directories;
        self.chardev += o.chardev;
        self.blockdev += o.blockdev;
        self.fifos += o.fifos;
        self.sockets += o.sockets;
        self.symlinks += o.symlinks;
        self.fast_symlinks += o.fast_symlinks;
        self.fragmented += o.fragmented;
        self.extent_files += o.extent_files;
        self.inline_files += o.inline_files;
        self.large_files += o.large_files;
        self.large_dirs += o.large_dirs;
        self.fragmented_dirs += o.fragmented_dirs;
        for (a, b) in self.ind_inodes.iter_mut().zip(o.ind_inodes) {
            *a += b;
        }
        for (a, b) in self.extent_depths.iter_mut().zip(o.extent_depths) {
            *a += b;
        }
        self.bad_blocks += o.bad_blocks;
    }
}

/// An xattr block seen by pass 1: its stored refcount and how many inodes
/// point at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct XattrBlockRef {
    pub blk: u64,
    pub refcount: u32,
    pub seen: u32,
    /// What its EA-inode entries charge to every inode referring to it.
    pub charge: EaCharge,
}

/// Space (in bytes) and inodes charged to one quota id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuotaUse {
    pub space: u64,
    pub inodes: u64,
}

/// Quota types, in the order of the superblock's quota inode fields.
pub const QUOTA_TYPES: usize = 3;

/// Usage per id, by quota type (user, group, project), as pass 1 counts it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuotaUsage {
    pub by_type: [BTreeMap<u32, QuotaUse>; QUOTA_TYPES],
}

impl QuotaUsage {
    /// Charges `space` bytes and `inodes` inodes to the ids of one inode
    /// (uid, gid, project id).
    pub fn charge(&mut self, ids: [u32; QUOTA_TYPES], space: u64, inodes: u64) {
        for (map, id) in self.by_type.iter_mut().zip(ids) {
            let u = map.entry(id).or_default();
            u.space = u.space.saturating_add(space);
            u.inodes = u.inodes.saturating_add(inodes);
        }
    }

    pub fn merge(&mut self, other: QuotaUsage) {
        for (map, o) in self.by_type.iter_mut().zip(other.by_type) {
            for (id, v) in o {
                let u = map.entry(id).or_default();
                u.space = u.space.saturating_add(v.space);
                u.inodes = u.inodes.saturating_add(v.inodes);
            }
        }
    }
}

pub struct State {
    /// log2 of blocks per cluster: the three block maps below are indexed
    /// by cluster (`cluster`), which is the block itself without bigalloc.
    pub cluster_bits: u32,
    /// Blocks in use: file system metadata and every block an inode claims.
    pub block_used: ClusterMap,
    /// Blocks claimed more than once (for pass 1B).
    pub block_dup: ClusterMap,
    /// File system metadata (superblock and descriptor copies, reserved GDT
    /// blocks, bitmaps, inode tables): pass 1B names it as an owner.
    pub block_meta: ClusterMap,
    /// Indexed by inode number (bit 0 unused): in use per pass 1.
    pub inode_used: InodeMap,
    pub inode_dir: InodeMap,
    /// Used inodes whose block map pass 1 did not walk (inline symlinks,
    /// unused reserved inodes), sorted: pass 1B walks every other used
    /// inode again. Read with `map_walked`.
    unmapped: Vec<Ino>,
    /// The file type of used inodes that are not directories (those are
    /// `inode_dir`), as `FileType as u8` XOR 1, bit k in map k: regular
    /// files are all zeros, so these maps cost memory only where special
    /// files are. Read with `ftype` and `is_reg`.
    ftype_bits: [InodeMap; FTYPE_BITS],
    /// i_links_count of used inodes whose count is not 1, sorted by inode;
    /// every other used inode has 1 (nearly all files). Read with
    /// `i_links`.
    links_other: ScratchList<(Ino, u16)>,
    /// One map per `iflag` bit. Read with `has_iflag`.
    iflags: [InodeMap; iflag::COUNT],
    /// References found in directories (pass 2), by inode number.
    pub links_seen: InodeCounts,
    /// Directory blocks, sorted by physical block when repairing (a
    /// read-only check leaves them in inode order, and keeps past pass 2
    /// only those of the directories pass 3A rebuilds, sorted).
    pub dir_blocks: ScratchList<DirBlock>,
    /// Directories in use, sorted; `dir_parent`/`dir_dotdot` are parallel.
    pub dirs: ScratchList<Ino>,
    /// The directory holding the (first) entry that names this directory; 0 if none.
    pub dir_parent: ScratchList<Ino>,
    /// The inode the directory's '..' entry points at; 0 if missing.
    pub dir_dotdot: ScratchList<Ino>,
    /// i_generation of each directory in `dirs` (parallel), for the seed of
    /// directory block checksums. Pass 1 may leave it empty; pass 2 then
    /// reads the directory inodes itself.
    pub dir_gen: ScratchList<u32>,
    /// Where in `dirs` each run of inode numbers starts (`dir_index`),
    /// made when pass 1 sets `dirs`.
    dir_buckets: DirBuckets,
    /// The inode named "lost+found" in the root directory (pass 2);
    /// `Ino::NONE` if none.
    pub lost_found: Ino,
    /// Directory paths for messages (pass 2).
    pub tree: Option<std::sync::Arc<super::paths::DirTree>>,
    /// Xattr blocks referenced by inodes, sorted by block.
    pub xattr_blocks: Vec<XattrBlockRef>,
    /// (EA inode, xattr entries referring to it), sorted; ea_inode only.
    pub ea_inode_refs: Vec<(u32, u64)>,
    /// Quota usage computed by pass 1; None without the quota feature.
    pub quota: Option<QuotaUsage>,
    /// Pass 1B: every inode mapping a multiply-claimed block, in inode
    /// order, with those blocks in map order (repeats kept): one per claim
    /// as e2fsck counts them (with bigalloc, the first block of each run
    /// of blocks in one logical and one physical cluster). Empty when no
    /// block is shared.
    pub dup_owners: Vec<(Ino, Vec<u64>)>,
    /// Pass 1B to 1C's account of the sharing, for the report.
    pub dups: Option<std::sync::Arc<super::pass1b::Dups>>,
    /// (inode, encryption policy id) of the inodes flagged `ENCRYPTED`,
    /// sorted; equal ids mean equal policies.
    pub enc_policy: Vec<(u32, u32)>,
    pub stats: Stats,
    /// `--max-memory`: the scratch file the maps above live in.
    pub spill: Option<Arc<Spill>>,
    /// Has any block been claimed twice (is `block_dup` worth reading)?
    dup_seen: std::sync::atomic::AtomicBool,
}

impl State {
    pub fn new(blocks_count: u64, inodes_count: u32) -> State {
        State::with_clusters(blocks_count, inodes_count, 0)
    }

    /// A state whose block maps have one bit per cluster of 2^`bits` blocks.
    pub fn with_clusters(blocks_count: u64, inodes_count: u32, bits: u32) -> State {
        State::with_clusters_in(blocks_count, inodes_count, bits, None)
    }

    /// The same, its per-inode and per-block maps in `spill`'s scratch
    /// file (`--max-memory`).
    pub fn with_clusters_in(
        blocks_count: u64,
        inodes_count: u32,
        bits: u32,
        spill: Option<&Arc<Spill>>,
    ) -> State {
        let clusters = blocks_count.div_ceil(1 << bits);
        let inode_map = || InodeMap::new_in(inodes_count, spill);
        State {
            cluster_bits: bits,
            block_used: ClusterMap::new_in(clusters, spill),
            block_dup: ClusterMap::new_in(clusters, spill),
            block_meta: ClusterMap::new_in(clusters, spill),
            inode_used: inode_map(),
            inode_dir: inode_map(),
            unmapped: Vec::new(),
            ftype_bits: std::array::from_fn(|_| inode_map()),
            links_other: ScratchList::new(),
            iflags: std::array::from_fn(|_| inode_map()),
            links_seen: InodeCounts::new_in(inodes_count, spill),
            dir_blocks: ScratchList::new(),
            dirs: ScratchList::new(),
            dir_parent: ScratchList::new(),
            dir_dotdot: ScratchList::new(),
            dir_gen: ScratchList::new(),
            dir_buckets: DirBuckets::default(),
            lost_found: Ino::NONE,
            tree: None,
            xattr_blocks: Vec::new(),
            ea_inode_refs: Vec::new(),
            quota: None,
            dup_owners: Vec::new(),
            dups: None,
            enc_policy: Vec::new(),
            stats: Stats::default(),
            spill: spill.cloned(),
            dup_seen: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether `block_dup` may have a bit set: pass 1B does not read an
    /// empty map (whose every page, read from the scratch file, would
    /// become resident).
    pub fn any_dup(&self) -> bool {
        self.dup_seen.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// One step of a pass over the maps: with `--max-memory`, now and then
    /// a look at the resident size (`Spill::tick`).
    pub fn tick(&self) {
        if let Some(s) = &self.spill {
            s.tick();
        }
    }

    /// Bytes each structure holds in memory now, by name (`-t`): maps by
    /// their resident pages, lists by their capacity.
    pub fn census(&self) -> Vec<(&'static str, u64)> {
        fn cap<T>(v: &Vec<T>) -> u64 {
            (v.capacity() * std::mem::size_of::<T>()) as u64
        }
        let flags: u64 = self.iflags.iter().map(|m| m.resident_bytes()).sum();
        let ftype: u64 = self.ftype_bits.iter().map(|m| m.resident_bytes()).sum();
        let dir_lists = self.dirs.bytes()
            + self.dir_parent.bytes()
            + self.dir_dotdot.bytes()
            + self.dir_gen.bytes();
        vec![
            ("block_used", self.block_used.resident_bytes()),
            ("block_dup", self.block_dup.resident_bytes()),
            ("block_meta", self.block_meta.resident_bytes()),
            ("inode_used", self.inode_used.resident_bytes()),
            ("inode_dir", self.inode_dir.resident_bytes()),
            ("file types", ftype),
            ("inode flags", flags),
            ("links_seen", self.links_seen.resident_bytes()),
            ("links_other", self.links_other.bytes()),
            ("unmapped", cap(&self.unmapped)),
            ("dir_blocks", self.dir_blocks.bytes()),
            ("dirs (4 lists)", dir_lists),
        ]
    }

    /// `--max-memory`: the directory lists and link counts, built in
    /// memory, move to the scratch file, where a trim drops them from
    /// memory with the maps (issue 17).
    pub fn settle_lists(&mut self) {
        fn settle<T: Copy>(l: &mut ScratchList<T>, s: &Arc<Spill>) {
            if !l.in_scratch() {
                let v = std::mem::take(l.vec_mut());
                *l = ScratchList::settle(v, Some(s));
            }
        }
        let Some(s) = self.spill.clone() else {
            return;
        };
        settle(&mut self.links_other, &s);
        settle(&mut self.dir_blocks, &s);
        settle(&mut self.dirs, &s);
        settle(&mut self.dir_parent, &s);
        settle(&mut self.dir_dotdot, &s);
        settle(&mut self.dir_gen, &s);
        // Their copies in memory are gone; the copies in the file count
        // until the next trim.
        crate::engine::memory::release_free();
        s.check();
    }

    /// Directory `dir`'s blocks as (logical, physical), in logical order.
    /// A logical block pass 1 recorded twice is listed twice: callers that
    /// must notice a conflict look for equal neighbours.
    pub fn dir_blocks_of(&self, dir: Ino) -> Vec<(LBlk, Blk)> {
        let mut blocks: Vec<(LBlk, Blk)> = self
            .dir_blocks
            .iter()
            .filter(|d| d.ino == dir)
            .map(|d| (d.lblk, d.pblk))
            .collect();
        blocks.sort_unstable();
        blocks
    }

    /// `dir_blocks_of` with identical (logical, physical) pairs listed once.
    pub fn dir_blocks_once(&self, dir: Ino) -> Vec<(LBlk, Blk)> {
        let mut blocks = self.dir_blocks_of(dir);
        blocks.dedup();
        blocks
    }

    /// Index of directory `ino` in `dirs`, if it is one.
    pub fn dir_index(&self, ino: Ino) -> Option<usize> {
        self.dir_buckets.find(&self.dirs, ino)
    }

    /// Sets the directory list (sorted, without repeats) and its index.
    pub fn set_dirs(&mut self, dirs: ScratchList<Ino>) {
        self.dir_buckets = DirBuckets::new(&dirs);
        self.dirs = dirs;
    }

    /// How many xattr entries refer to EA inode `ino`.
    pub fn ea_refs(&self, ino: Ino) -> u64 {
        self.ea_inode_refs
            .binary_search_by_key(&ino.get(), |&(i, _)| i)
            .map_or(0, |k| self.ea_inode_refs[k].1)
    }

    /// The encryption policy id of inode `ino`; None when it is not
    /// encrypted (or its policy could not be read).
    pub fn policy(&self, ino: Ino) -> Option<u32> {
        if !self.has_iflag(ino, iflag::ENCRYPTED) {
            return None;
        }
        self.enc_policy
            .binary_search_by_key(&ino.get(), |&(i, _)| i)
            .ok()
            .map(|k| self.enc_policy[k].1)
    }

    /// Does `ino` have any of the `iflag` bits in `f`?
    pub fn has_iflag(&self, ino: Ino, f: u8) -> bool {
        // Only the maps of the flags asked for: called per inode and entry.
        let mut rest = f;
        while rest != 0 {
            let k = rest.trailing_zeros() as usize;
            if self.iflags.get(k).is_some_and(|m| m.get(ino)) {
                return true;
            }
            rest &= rest - 1;
        }
        false
    }

    /// Sets the `iflag` bits `f` of `ino` (any thread).
    pub fn set_iflag(&self, ino: Ino, f: u8) {
        for (k, m) in self.iflags.iter().enumerate() {
            if f & (1 << k) != 0 {
                m.set(ino);
            }
        }
    }

    /// The file type pass 1 found (`FileType as u8`); 0 for unused inodes.
    pub fn ftype(&self, i: Ino) -> u8 {
        if !self.inode_used.get(i) {
            return 0;
        }
        if self.inode_dir.get(i) {
            return FT_DIR;
        }
        self.ftype_bits
            .iter()
            .enumerate()
            .fold(FT_REG, |t, (k, m)| t ^ (u8::from(m.get(i)) << k))
    }

    /// Is `ino` a regular file in use? The journal and quota inodes are
    /// not: pass 1 checks them as reserved files, never as user files.
    pub fn is_reg(&self, ino: Ino) -> bool {
        !matches!(ino, Ino::USR_QUOTA | Ino::GRP_QUOTA | Ino::JOURNAL) && self.ftype(ino) == FT_REG
    }

    /// Records the file type of used inode `ino` (any thread). Directories
    /// are `inode_dir`; a used inode recorded with no type at all reads as
    /// a regular file (reserved inodes other than the root: nothing asks).
    pub fn set_ftype(&self, i: Ino, t: u8) {
        if t == FT_DIR {
            return;
        }
        for (k, m) in self.ftype_bits.iter().enumerate() {
            if (t ^ FT_REG) & (1 << k) != 0 {
                m.set(i);
            } else {
                m.clear(i);
            }
        }
    }

    /// i_links_count of `ino` as pass 1 read it (0 for unused inodes).
    pub fn i_links(&self, ino: Ino) -> u16 {
        if !self.inode_used.get(ino) {
            return 0;
        }
        self.links_other
            .binary_search_by_key(&ino, |&(i, _)| i)
            .map_or(1, |k| self.links_other[k].1)
    }

    /// The link counts other than 1 of inodes `from` and above, in inode
    /// order: a walk over inodes in order reads them with a cursor instead
    /// of a search per inode.
    pub fn links_other_from(&self, from: Ino) -> &[(Ino, u16)] {
        let k = self.links_other.partition_point(|&(i, _)| i < from);
        &self.links_other[k..]
    }

    /// Appends the link counts other than 1 of used inodes, in increasing
    /// inode order (pass 1 merges its units in order; out of order, the
    /// list is sorted again).
    pub fn add_links_other(&mut self, counts: ScratchList<(Ino, u16)>) {
        let before = self.links_other.len();
        if before == 0 {
            // Taken as it is: a copy would double it for a moment.
            self.links_other = counts;
        } else {
            self.links_other.vec_mut().extend_from_slice(&counts);
        }
        let sorted = self.links_other[before.saturating_sub(1)..]
            .windows(2)
            .all(|w| w[0].0 < w[1].0);
        if !sorted {
            let l = self.links_other.vec_mut();
            l.sort_by_key(|&(i, _)| i);
            l.dedup_by_key(|&mut (i, _)| i);
        }
    }

    /// Did pass 1 walk the block map of `ino`? (Every used inode but the
    /// few in `unmapped`.)
    pub fn map_walked(&self, ino: Ino) -> bool {
        self.inode_used.get(ino) && self.unmapped.binary_search(&ino).is_err()
    }

    /// Appends used inodes whose map pass 1 did not walk, in increasing
    /// order (as `add_links_other`).
    pub fn add_unmapped(&mut self, inos: impl IntoIterator<Item = Ino>) {
        let before = self.unmapped.len();
        self.unmapped.extend(inos);
        if !self.unmapped[before.saturating_sub(1)..].is_sorted() {
            self.unmapped.sort_unstable();
            self.unmapped.dedup();
        }
    }

    /// Sets i_links_count of used inode `ino` (repairs and tests).
    pub fn set_i_links(&mut self, ino: Ino, v: u16) {
        let k = self.links_other.binary_search_by_key(&ino, |&(i, _)| i);
        match (k, v) {
            (Ok(k), 1) => {
                self.links_other.vec_mut().remove(k);
            }
            (Ok(k), _) => self.links_other[k].1 = v,
            (Err(_), 1) => {}
            (Err(k), _) => self.links_other.vec_mut().insert(k, (ino, v)),
        }
    }

    /// What the summary rewrite writes from: the maps of blocks
    /// (clusters), inodes and directories in use.
    pub fn in_use(&self) -> crate::volume::summary::InUse<'_> {
        crate::volume::summary::InUse {
            clusters: &self.block_used,
            inodes: &self.inode_used,
            dirs: &self.inode_dir,
        }
    }

    /// The index of block `blk` in the block maps.
    pub fn cluster(&self, blk: u64) -> Cluster {
        Blk(blk).cluster(self.cluster_bits)
    }

    /// `claim_block` for the blocks of `mask` in word `w` of the map (a
    /// file system without bigalloc: a block is its own cluster).
    pub fn claim_word(&self, w: u64, mask: u64) {
        debug_assert_eq!(self.cluster_bits, 0);
        if let Some(s) = &self.spill {
            s.tick_often();
        }
        let twice = self.block_used.set_word(w, mask);
        if twice != 0 {
            self.dup_seen
                .store(true, std::sync::atomic::Ordering::Relaxed);
            self.block_dup.set_word(w, twice);
        }
    }

    /// Claims `blk` (its cluster) for a file; returns false (and marks it
    /// as duplicate) if it was already claimed.
    pub fn claim_block(&self, blk: u64) -> bool {
        let c = self.cluster(blk);
        if let Some(s) = &self.spill {
            s.tick_often();
        }
        if self.block_used.set(c) {
            self.dup_seen
                .store(true, std::sync::atomic::Ordering::Relaxed);
            self.block_dup.set(c);
            false
        } else {
            true
        }
    }
}

/// Finds a directory in a sorted directory list in a few steps: for each
/// run of 2^shift inode numbers, where its directories start. Pass 2's end
/// and pass 3 look every directory up at least once; a binary search over
/// half a million directories took ~100 instructions and several cache
/// misses a look-up (issue 17). About one entry per 8 directories.
#[derive(Clone, Debug, Default)]
pub(crate) struct DirBuckets {
    shift: u32,
    /// `first[b]`: how many directories have an inode number below
    /// `b << shift`; one more entry than runs.
    first: Vec<u32>,
}

impl DirBuckets {
    /// The index of `dirs` (sorted, without repeats), up to its last.
    pub(crate) fn new(dirs: &[Ino]) -> DirBuckets {
        let top = u64::from(dirs.last().map_or(0, |d| d.get()));
        let runs = u64::try_from(dirs.len() / 8).unwrap_or(u64::MAX).max(1);
        let mut shift = 0;
        while (top >> shift) + 1 > runs {
            shift += 1;
        }
        let n = (top >> shift) + 2;
        let mut first = Vec::with_capacity(crate::narrow::to_usize(n));
        let mut k = 0usize;
        for b in 0..n {
            while k < dirs.len() && u64::from(dirs[k].get()) < b << shift {
                k += 1;
            }
            first.push(crate::narrow::sat32(k));
        }
        DirBuckets { shift, first }
    }

    /// The index of `ino` in `dirs`. Only answers from its run when the
    /// entries around that run bracket it (so a list set without this
    /// index, or changed since, is searched whole): the answer is always
    /// the binary search's.
    pub(crate) fn find(&self, dirs: &[Ino], ino: Ino) -> Option<usize> {
        let b = crate::narrow::to_usize(u64::from(ino.get()) >> self.shift);
        if let (Some(&lo), Some(&hi)) = (self.first.get(b), self.first.get(b + 1)) {
            let (lo, hi) = (lo as usize, hi as usize);
            let start = u64::from(ino.get()) >> self.shift << self.shift;
            let end = start + (1 << self.shift);
            let below = lo == 0 || dirs.get(lo - 1).is_some_and(|d| u64::from(d.get()) < start);
            let above = hi == dirs.len() || dirs.get(hi).is_some_and(|d| u64::from(d.get()) >= end);
            if lo <= hi && hi <= dirs.len() && below && above {
                return dirs[lo..hi].binary_search(&ino).ok().map(|k| lo + k);
            }
        }
        dirs.binary_search(&ino).ok()
    }
}

#[cfg(test)]
mod dir_bucket_tests {
    use super::*;

    #[test]
    fn finds_what_a_binary_search_finds() {
        let dirs: Vec<Ino> = [2u32, 11, 12, 40, 41, 42, 43, 99, 300, 301, 1000]
            .into_iter()
            .map(Ino)
            .collect();
        for n in [1, 2, 5, 11] {
            let b = DirBuckets::new(&dirs[..n]);
            for i in 0..=1100 {
                let found = dirs[..n].binary_search(&Ino(i)).ok();
                assert_eq!(b.find(&dirs[..n], Ino(i)), found, "{i}");
            }
            // A list changed after the index was made is still searched right.
            for i in 0..=1100 {
                assert_eq!(b.find(&dirs, Ino(i)), dirs.binary_search(&Ino(i)).ok());
            }
        }
        let many: Vec<Ino> = (1..5000u32).map(|i| Ino(i * 3)).collect();
        let b = DirBuckets::new(&many);
        for i in 0..16000 {
            assert_eq!(b.find(&many, Ino(i)), many.binary_search(&Ino(i)).ok());
        }
        assert_eq!(DirBuckets::default().find(&dirs, Ino(99)), Some(7));
    }
}
