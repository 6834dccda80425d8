//! Pass 2: directory structure.
//!
//! Checks every directory block pass 1 found: record lengths and name
//! lengths, the checksum tail (metadata_csum), '.' and '..', each entry's
//! inode number (range, reserved, in use, in an uninitialised part of the
//! inode table, flagged bad), name characters, file type, duplicate names
//! within a block, second links to a directory; for indexed directories
//! the root and node headers, their checksums, and (once all blocks are
//! read) that every leaf is referenced once, at the right depth, with names
//! hashing into its range. Inline directories are checked from the inode.
//!
//! Collects: `links_seen` (every valid entry, '.' and '..' included),
//! `dir_parent` (the first entry naming each directory, in e2fsck's block
//! order), `dir_dotdot`, and `lost_found`.
//!
//! Relies on pass 1 for `dir_blocks` (sorted by physical block), `dirs`,
//! `inode_used`, `inode_dir`, `ftype`, `iflags` (HTREE,
//! INLINE, BAD) and optionally `dir_gen`.
//!
//! Blocks are split into units of neighbouring blocks, read in coalesced
//! runs by worker threads that each fill their own `Sink`; sinks are merged
//! in unit order, so the result does not depend on the thread count. The
//! only shared writes are the atomic link counters.

use super::blockmap::{self, MapVisitor, Scratch};
use super::dirblock::{
    self, BlockPos, DirParams, DxKind, DxRec, FsParams, GroupInodes, HtreeParams, LeafRec, Sink,
    TargetInfo, Targets,
};
use super::fsview::Fs;
use super::htree_check;
use super::problem::{Code, Problem};
use super::state::{DirBlock, State, iflag};
use crate::engine::{Threads, par_map};
use crate::error::Result;
use crate::fs::bytes::{le16, le32};
use crate::fs::casefold;
use crate::fs::group_desc::BG_INODE_UNINIT;
use crate::fs::htree;
use crate::fs::inode::{self, GOOD_OLD_INODE_SIZE, ROOT_INO};
use crate::fs::superblock::{incompat, ro_compat};
use crate::fs::xattr;

/// Directory blocks per work unit: big enough for long sequential reads,
/// small enough to spread a few large directories over all threads.
const UNIT_BLOCKS: usize = 32;
/// Directories per unit when reading inodes (generations, inline data).
const INODE_UNIT: usize = 512;
/// In-inode xattr area magic.
const XATTR_IN_INODE_MAGIC: u32 = 0xEA02_0000;
/// Size of i_block, the first part of an inline directory.
const INLINE_IBLOCK: usize = 60;
const EXT2_OS_HURD: u32 = 1;
/// xattr name index of "system." names.
const XATTR_INDEX_SYSTEM: u8 = 7;

struct StateTargets<'a> {
    st: &'a State,
    fs: &'a Fs,
    /// Inode table blocks listed as bad (sorted): their inodes cannot be read.
    bad_itable: Vec<u64>,
}

impl Targets for StateTargets<'_> {
    fn info(&self, ino: u32) -> TargetInfo {
        let s = self.st;
        let i = ino as u64;
        let in_bad_block = !self.bad_itable.is_empty()
            && self
                .fs
                .inode_location(ino)
                .is_some_and(|(b, _)| self.bad_itable.binary_search(&b).is_ok());
        TargetInfo {
            used: s.inode_used.get(i),
            dir: s.inode_dir.get(i),
            reg: s.is_reg(ino),
            bad: s.has_iflag(ino, iflag::BAD),
            in_bad_block,
            ftype: s.ftype(ino),
        }
    }
    fn add_link(&self, ino: u32) {
        self.st.links_seen.incr(ino as usize);
    }
    fn policy(&self, ino: u32) -> Option<u32> {
        self.st.policy(ino)
    }
}

/// Collects the data blocks of `blocks` that fall in an inode table.
struct BadItable<'a> {
    fs: &'a Fs,
    out: Vec<u64>,
}

impl MapVisitor for BadItable<'_> {
    fn data(&mut self, _lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        let per = self.fs.geo.inode_table_blocks as u64;
        for b in pblk..pblk.saturating_add(len) {
            let g = self.fs.geo.group_of_block(b) as usize;
            if let Some(gd) = self.fs.gds.get(g)
                && b >= gd.inode_table
                && b < gd.inode_table.saturating_add(per)
            {
                self.out.push(b);
            }
        }
    }
    fn node(&mut self, _pblk: u64) {}
    fn problem(&mut self, _p: Problem) {}
    fn done(&self) -> bool {
        // A bad-block list is short; a garbage one must not run away.
        self.out.len() >= 1 << 20
    }
}

/// Inode table blocks in the bad-block list (inode 1), sorted.
pub(crate) fn bad_itable_blocks(fs: &Fs) -> Vec<u64> {
    let Ok(raw) = fs.read_inode_raw(inode::BAD_INO) else {
        return Vec::new();
    };
    let ino = inode::Inode::parse(&raw);
    if ino.is_all_zero_block() {
        return Vec::new();
    }
    let mut v = BadItable {
        fs,
        out: Vec::new(),
    };
    let mut scratch = Scratch::new();
    blockmap::walk_indirect(fs, inode::BAD_INO, &ino.block_ptrs(), &mut scratch, &mut v);
    v.out.sort_unstable();
    v.out.dedup();
    v.out
}

pub fn fs_params(fs: &Fs) -> FsParams {
    let sb = &fs.sb;
    let groups = if fs.uninit_bg() {
        let ipg = fs.geo.inodes_per_group;
        fs.gds
            .iter()
            .map(|gd| GroupInodes {
                inode_uninit: gd.has_flag(BG_INODE_UNINIT),
                first_unused: ipg.saturating_sub(gd.itable_unused.min(ipg)),
            })
            .collect()
    } else {
        Vec::new()
    };
    FsParams {
        bs: fs.block_size(),
        inodes_count: fs.geo.inodes_count,
        first_ino: fs.geo.first_ino,
        inodes_per_group: fs.geo.inodes_per_group,
        // e2fsck treats a Hurd file system as having no file types in its
        // entries, whatever the feature flag says (the Hurd never sets them).
        filetype: sb.has_incompat(incompat::FILETYPE) && sb.creator_os != EXT2_OS_HURD,
        metadata_csum: sb.has_ro_compat(ro_compat::METADATA_CSUM),
        largedir: sb.has_incompat(incompat::LARGEDIR),
        hash_seed: sb.hash_seed,
        unsigned_hash: sb.unsigned_hash(),
        strict_names: sb.has_incompat(incompat::CASEFOLD)
            && sb.encoding_flags & casefold::ENCODING_STRICT != 0,
        groups,
    }
}

/// What pass 2 needs to know about each directory of `state.dirs`.
#[derive(Clone, Copy, Default)]
struct DirInfo {
    params: DirParams,
    inline: bool,
    /// Highest logical block seen + 1, and how many blocks were listed.
    numblocks: u32,
    nlisted: u32,
}

/// Logical blocks a directory may have without largedir: e2fsck leaves any
/// block past 2 GiB out of the directory (pass 1 calls it too big).
fn lblk_limit(fs: &Fs) -> u32 {
    if fs.sb.has_incompat(incompat::LARGEDIR) {
        u32::MAX
    } else {
        1u32 << (21 - fs.sb.log_block_size.min(6))
    }
}

pub fn run(fs: &Fs, state: &mut State, threads: Threads) -> Result<Vec<Problem>> {
    let fsp = fs_params(fs);
    let limit = lblk_limit(fs);
    let st: &State = state;
    let mut dirs = dir_table(fs, &fsp, st, limit, threads);
    let mut problems = Vec::new();
    find_holes(&fsp, st, &dirs, limit, &mut problems);
    read_root_hash_versions(fs, &fsp, st, &mut dirs, threads);

    let targets = StateTargets {
        st,
        fs,
        bad_itable: bad_itable_blocks(fs),
    };
    let blocks = &st.dir_blocks;
    let n_units = blocks.len().div_ceil(UNIT_BLOCKS);
    let zero_first = fs.sb.has_compat(crate::fs::superblock::compat::DIR_INDEX);
    let sinks: Vec<Sink> = par_map(n_units, threads, Vec::<u8>::new, |buf, u| {
        let start = u * UNIT_BLOCKS;
        let end = (start + UNIT_BLOCKS).min(blocks.len());
        let mut sink = Sink::default();
        check_unit(
            fs,
            &fsp,
            st,
            &dirs,
            &blocks[start..end],
            limit,
            zero_first,
            &targets,
            buf,
            &mut sink,
        );
        sink
    });
    let inline_sinks = check_inline_dirs(fs, &fsp, st, &dirs, &targets, threads);

    let all: Vec<&Sink> = sinks.iter().chain(inline_sinks.iter()).collect();
    for s in &all {
        problems.extend(s.problems.iter().cloned());
    }
    let (parent, dotdot, lf, link_probs) = merge_links(st, &all);
    problems.extend(link_probs);
    verify_htrees(st, &dirs, &all, &mut problems);
    if st.stats.large_files > 0
        && !fs
            .sb
            .has_ro_compat(crate::fs::superblock::ro_compat::LARGE_FILE)
    {
        problems.push(Problem::new(Code::FeatureLargeFiles));
    }

    state.dir_parent = parent;
    state.dir_dotdot = dotdot;
    state.lost_found = lf;
    Ok(problems)
}

fn dir_index_of(st: &State, ino: u32) -> Option<usize> {
    st.dir_index(ino)
}

/// Builds the per-directory table: flags, checksum seed, block counts.
fn dir_table(fs: &Fs, fsp: &FsParams, st: &State, limit: u32, threads: Threads) -> Vec<DirInfo> {
    let mut dirs: Vec<DirInfo> = st
        .dirs
        .iter()
        .map(|&ino| {
            let inline = st.has_iflag(ino, iflag::INLINE);
            DirInfo {
                params: DirParams {
                    ino,
                    csum_seed: 0,
                    htree: if st.has_iflag(ino, iflag::HTREE) && !inline {
                        Some(HtreeParams::default())
                    } else {
                        None
                    },
                    policy: st.policy(ino),
                    casefold: st.has_iflag(ino, iflag::CASEFOLD),
                },
                inline,
                numblocks: 0,
                nlisted: 0,
            }
        })
        .collect();
    for b in st.dir_blocks.iter().filter(|b| b.lblk <= limit) {
        if let Some(i) = dir_index_of(st, b.ino) {
            let d = &mut dirs[i];
            d.numblocks = d.numblocks.max(b.lblk.saturating_add(1));
            d.nlisted = d.nlisted.saturating_add(1);
        }
    }
    for d in &mut dirs {
        if let Some(h) = d.params.htree.as_mut() {
            h.numblocks = d.numblocks;
        }
    }
    if fsp.metadata_csum {
        let gens = if st.dir_gen.len() == st.dirs.len() {
            st.dir_gen.clone()
        } else {
            read_generations(fs, &st.dirs, threads)
        };
        for (d, g) in dirs.iter_mut().zip(gens) {
            d.params.csum_seed = inode::inode_csum_seed(fs.csum_seed, d.params.ino, g);
        }
    }
    dirs
}

/// Reads i_generation of each directory, visiting inode tables in order and
/// each table block once per unit.
fn read_generations(fs: &Fs, inos: &[u32], threads: Threads) -> Vec<u32> {
    let units = inos.len().div_ceil(INODE_UNIT);
    let parts: Vec<Vec<u32>> = par_map(
        units,
        threads,
        || (u64::MAX, vec![0u8; fs.block_size()]),
        |(cur, buf), u| {
            let chunk = &inos[u * INODE_UNIT..((u + 1) * INODE_UNIT).min(inos.len())];
            chunk
                .iter()
                .map(|&ino| {
                    let Some((blk, off)) = fs.inode_location(ino) else {
                        return 0;
                    };
                    if *cur != blk {
                        if fs.read_block_into(blk, buf).is_err() {
                            *cur = u64::MAX;
                            return 0;
                        }
                        *cur = blk;
                    }
                    le32(buf, off + 0x64)
                })
                .collect()
        },
    );
    parts.into_iter().flatten().collect()
}

/// Reports logical blocks missing inside a directory's mapped range.
fn find_holes(fsp: &FsParams, st: &State, dirs: &[DirInfo], limit: u32, out: &mut Vec<Problem>) {
    // largedir lets the kernel punch out emptied blocks.
    if fsp.largedir {
        return;
    }
    let holed: Vec<usize> = dirs
        .iter()
        .enumerate()
        .filter(|(_, d)| !d.inline && d.nlisted < d.numblocks)
        .map(|(i, _)| i)
        .collect();
    if holed.is_empty() {
        return;
    }
    let mut per: Vec<Vec<u32>> = vec![Vec::new(); holed.len()];
    for b in st.dir_blocks.iter().filter(|b| b.lblk <= limit) {
        if let Some(i) = dir_index_of(st, b.ino)
            && let Ok(k) = holed.binary_search(&i)
        {
            per[k].push(b.lblk);
        }
    }
    for (k, &i) in holed.iter().enumerate() {
        let l = &mut per[k];
        l.sort_unstable();
        l.dedup();
        let mut expect = 0u32;
        for &lb in l.iter() {
            // Report each gap's first block only: a sparse directory with
            // a huge hole must not produce millions of lines.
            if lb > expect {
                out.push(
                    Problem::new(Code::DirHole)
                        .ino(dirs[i].params.ino)
                        .num(expect as u64),
                );
            }
            expect = lb.saturating_add(1);
        }
    }
}

/// Reads block 0 of every indexed directory for its hash version, which
/// the leaves (possibly checked before their root) need.
fn read_root_hash_versions(
    fs: &Fs,
    fsp: &FsParams,
    st: &State,
    dirs: &mut [DirInfo],
    threads: Threads,
) {
    let roots: Vec<(usize, u64)> = st
        .dir_blocks
        .iter()
        .filter(|b| b.lblk == 0)
        .filter_map(|b| {
            let i = dir_index_of(st, b.ino)?;
            dirs[i].params.htree.map(|_| (i, b.pblk))
        })
        .collect();
    let units = roots.len().div_ceil(INODE_UNIT);
    let versions: Vec<Vec<Option<u8>>> = par_map(
        units,
        threads,
        || vec![0u8; fs.block_size()],
        |buf, u| {
            roots[u * INODE_UNIT..((u + 1) * INODE_UNIT).min(roots.len())]
                .iter()
                .map(|&(_, pblk)| {
                    if !fs.geo.block_in_fs(pblk) || fs.read_block_into(pblk, buf).is_err() {
                        return None;
                    }
                    let info = htree::parse_root_info(buf);
                    Some(fsp.effective_hash_version(info.hash_version))
                })
                .collect()
        },
    );
    for (&(i, _), v) in roots.iter().zip(versions.into_iter().flatten()) {
        if let Some(h) = dirs[i].params.htree.as_mut() {
            h.hash_version = v;
        }
    }
}

/// Reads and checks one unit of directory blocks.
/// Largest step between blocks read in one request (1: adjacent only).
const MAX_GAP: u64 = 1;
/// Largest single read, in blocks: runs are cut at 128 KiB with 4 KiB
/// blocks (a FUSE request's limit; each worker's buffer is this big).
const MAX_SPAN: u64 = 32;

#[allow(clippy::too_many_arguments)]
fn check_unit<T: Targets>(
    fs: &Fs,
    fsp: &FsParams,
    st: &State,
    dirs: &[DirInfo],
    blocks: &[DirBlock],
    limit: u32,
    zero_first: bool,
    targets: &T,
    buf: &mut Vec<u8>,
    sink: &mut Sink,
) {
    let bs = fsp.bs;
    // Ask for the whole unit up front: the kernel reads the scattered
    // blocks in the background, in disk order, while this loop consumes
    // them one by one.
    // Adjacent blocks share one hint. (Hints spanning holes of up to 16
    // blocks made cold runs 2-3x slower: the kernel then reads the holes.)
    let bsz = bs as u64;
    let mut hint: Option<(u64, u64)> = None;
    for db in blocks.iter().filter(|db| fs.geo.block_in_fs(db.pblk)) {
        hint = match hint {
            Some((a, b)) if db.pblk == b => Some((a, b + 1)),
            other => {
                if let Some((a, b)) = other {
                    fs.dev.will_need(a * bsz, (b - a) * bsz);
                }
                Some((db.pblk, db.pblk + 1))
            }
        };
    }
    if let Some((a, b)) = hint {
        fs.dev.will_need(a * bsz, (b - a) * bsz);
    }
    // Neighbouring blocks on disk are read with one request. (Reading
    // through holes was tried: on directory-heavy images it read 4x the
    // bytes and tripled warm-cache time; the readahead hints above serve
    // cold caches better.) Equal blocks (shared by two directories) end a
    // run so that each copy is checked as read.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < blocks.len() {
        let first = blocks[i].pblk;
        let mut j = i + 1;
        while j < blocks.len() {
            let (prev, cur) = (blocks[j - 1].pblk, blocks[j].pblk);
            if cur <= prev || cur - prev > MAX_GAP || cur - first >= MAX_SPAN {
                break;
            }
            j += 1;
        }
        runs.push((i, j));
        i = j;
    }
    let span_of = |&(i, j): &(usize, usize)| (blocks[j - 1].pblk - blocks[i].pblk + 1) as usize;
    let in_fs = |&(i, j): &(usize, usize)| {
        fs.geo.block_in_fs(blocks[i].pblk) && fs.geo.block_in_fs(blocks[j - 1].pblk)
    };
    // On a slow (or cold) device the unit's runs are all requested at
    // once, into one buffer, instead of one after the other.
    let batched = runs.len() > 1 && fs.dev.is_slow();
    let mut base = vec![0usize; runs.len()];
    let mut whole = vec![false; runs.len()];
    if batched {
        let mut at = 0;
        for (r, run) in runs.iter().enumerate() {
            base[r] = at;
            at += span_of(run) * bs;
        }
        if buf.len() < at {
            buf.resize(at, 0);
        }
        let mut reqs: Vec<(u64, &mut [u8])> = Vec::new();
        let mut which = Vec::new();
        let mut rest = &mut buf[..at];
        for (r, run) in runs.iter().enumerate() {
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(span_of(run) * bs);
            rest = tail;
            if in_fs(run) {
                reqs.push((blocks[run.0].pblk.saturating_mul(bsz), chunk));
                which.push(r);
            }
        }
        for (r, res) in which.into_iter().zip(fs.dev.read_many(&mut reqs)) {
            whole[r] = res.is_ok();
        }
    }
    for (r, run) in runs.iter().enumerate() {
        let first = blocks[run.0].pblk;
        let need = span_of(run) * bs;
        if !batched {
            if buf.len() < need {
                buf.resize(need, 0);
            }
            whole[r] = in_fs(run) && fs.read_blocks(first, &mut buf[..need]).is_ok();
        }
        let buf = &mut buf[base[r]..base[r] + need];
        for db in &blocks[run.0..run.1] {
            let Some(di) = dir_index_of(st, db.ino) else {
                continue;
            };
            let d = &dirs[di];
            if d.inline || db.lblk > limit || !st.inode_used.get(db.ino as u64) {
                continue;
            }
            let k = (db.pblk - first) as usize;
            let b = &mut buf[k * bs..(k + 1) * bs];
            if !whole[r] {
                // Pass 1 reports blocks outside the file system; a read
                // error inside it is ours to report.
                if !fs.geo.block_in_fs(db.pblk) {
                    continue;
                }
                if fs.read_block_into(db.pblk, b).is_err() {
                    sink.problems.push(
                        Problem::new(Code::DirBlockUnreadable)
                            .ino(db.ino)
                            .blk(db.pblk),
                    );
                    continue;
                }
            }
            let pos = BlockPos {
                lblk: db.lblk,
                pblk: db.pblk,
                zero_first,
            };
            dirblock::check_block(fsp, &d.params, pos, b, targets, sink);
        }
    }
}

/// Checks the directories that keep their entries in the inode.
fn check_inline_dirs<T: Targets + Sync>(
    fs: &Fs,
    fsp: &FsParams,
    st: &State,
    dirs: &[DirInfo],
    targets: &T,
    threads: Threads,
) -> Vec<Sink> {
    let inl: Vec<&DirInfo> = dirs
        .iter()
        .filter(|d| d.inline && st.inode_used.get(d.params.ino as u64))
        .collect();
    let units = inl.len().div_ceil(INODE_UNIT);
    par_map(
        units,
        threads,
        || (),
        |_, u| {
            let mut sink = Sink::default();
            for d in &inl[u * INODE_UNIT..((u + 1) * INODE_UNIT).min(inl.len())] {
                let ino = d.params.ino;
                let Ok(raw) = fs.read_inode_raw(ino) else {
                    continue;
                };
                let iblock = raw.get(0x28..0x28 + INLINE_IBLOCK).unwrap_or(&[]);
                let ea = inline_ea(&raw);
                let size = INLINE_IBLOCK + ea.len();
                // A directory's inline size must hold whole 4-byte records,
                // and a second part too short for one entry is invalid.
                if !size.is_multiple_of(4) || (size > INLINE_IBLOCK && size < INLINE_IBLOCK + 12) {
                    sink.problems.push(
                        Problem::new(Code::DirInlineBad)
                            .ino(ino)
                            .detail(format!("size {size}")),
                    );
                }
                dirblock::check_inline(fsp, &d.params, iblock, ea, targets, &mut sink);
            }
            sink
        },
    )
}

/// The value of the in-inode "system.data" attribute (the inline data past
/// i_block), or empty.
fn inline_ea(raw: &[u8]) -> &[u8] {
    if raw.len() <= GOOD_OLD_INODE_SIZE {
        return &[];
    }
    let extra = le16(raw, 0x80) as usize;
    let start = GOOD_OLD_INODE_SIZE + extra;
    if le32(raw, start) != XATTR_IN_INODE_MAGIC {
        return &[];
    }
    let Some(area) = raw.get(start + 4..) else {
        return &[];
    };
    let Ok(entries) = xattr::read_entries(area, 0) else {
        return &[];
    };
    for e in entries {
        if e.name_index == XATTR_INDEX_SYSTEM && e.name == b"data" && e.value_inum == 0 {
            let s = e.value_offs as usize;
            return area.get(s..s + e.value_size as usize).unwrap_or(&[]);
        }
    }
    &[]
}

/// Decides each directory's parent (the first entry naming it, in e2fsck's
/// block order) and '..'; reports second links to directories.
fn merge_links(st: &State, sinks: &[&Sink]) -> (Vec<u32>, Vec<u32>, u32, Vec<Problem>) {
    let n = st.dirs.len();
    let mut parent = vec![0u32; n];
    let mut dotdot = vec![0u32; n];
    let mut probs = Vec::new();
    if let Some(r) = dir_index_of(st, ROOT_INO) {
        parent[r] = ROOT_INO;
    }
    for s in sinks {
        for &(d, t) in &s.dotdots {
            if let Some(i) = dir_index_of(st, d)
                && dotdot[i] == 0
            {
                dotdot[i] = t;
            }
        }
    }
    let mut refs: Vec<(usize, usize)> = sinks
        .iter()
        .enumerate()
        .flat_map(|(k, s)| (0..s.subdirs.len()).map(move |j| (k, j)))
        .collect();
    refs.sort_by_key(|&(k, j)| sinks[k].subdirs[j].key());
    for (k, j) in refs {
        let r = sinks[k].subdirs[j];
        let Some(i) = dir_index_of(st, r.child) else {
            continue;
        };
        if parent[i] == 0 {
            parent[i] = r.parent();
        } else {
            let s = r.name_start as usize;
            let name = sinks[k]
                .names
                .get(s..s + r.name_len as usize)
                .unwrap_or(&[]);
            probs.push(
                Problem::new(Code::DirEntryLinkToDir)
                    .ino(r.parent())
                    .num(r.child as u64)
                    .num2(parent[i] as u64)
                    .detail(String::from_utf8_lossy(name).into_owned()),
            );
        }
    }
    let lf = sinks
        .iter()
        .flat_map(|s| s.lost_found.iter())
        .min()
        .map_or(0, |&(_, ino)| ino);
    (parent, dotdot, lf, probs)
}

/// Runs the whole-tree checks of every indexed directory.
fn verify_htrees(st: &State, dirs: &[DirInfo], sinks: &[&Sink], out: &mut Vec<Problem>) {
    let mut dx: Vec<&DxRec> = sinks.iter().flat_map(|s| s.dx.iter()).collect();
    if dx.is_empty() {
        return;
    }
    // Per directory: the root first, then nodes in the order e2fsck reads
    // them (by physical block).
    dx.sort_by_key(|r| (r.dir, r.kind != DxKind::Root, r.pblk, r.lblk));
    let mut leaves: Vec<LeafRec> = sinks
        .iter()
        .flat_map(|s| s.leaves.iter().copied())
        .collect();
    leaves.sort_unstable_by_key(|l| (l.dir, l.lblk));
    let mut i = 0;
    while i < dx.len() {
        let dir = dx[i].dir;
        let mut j = i;
        while j < dx.len() && dx[j].dir == dir {
            j += 1;
        }
        let ls = leaves.partition_point(|l| l.dir < dir);
        let le = leaves.partition_point(|l| l.dir <= dir);
        let numblocks = dir_index_of(st, dir).map_or(0, |k| dirs[k].numblocks);
        htree_check::verify(dir, numblocks, &dx[i..j], &leaves[ls..le], out);
        i = j;
    }
}
