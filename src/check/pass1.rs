//! Pass 1: inodes, blocks and sizes.
//!
//! Checks every inode pass 1 can see (`Fs::inodes_to_scan`): mode and
//! flags against the file type and the features, dtime, extra_isize and the
//! in-inode xattrs, the inode checksum, the block map (extent tree or
//! indirect blocks), i_size and i_blocks against what is mapped, symlinks,
//! device inodes, inline data, the reserved inodes, xattr blocks and their
//! reference counts.
//!
//! Collects into `State`: the block map (file system metadata first, then
//! every block an inode claims, duplicates in `block_dup`), the metadata map
//! (`block_meta`), the inode maps, file types, link counts, per-inode flags,
//! directory blocks (sorted by physical block for repairs), the directory list, the
//! xattr blocks, the references to EA inodes, the summary statistics and,
//! with the quota feature, the space and inodes charged to each user, group
//! and project id (per unit, merged in unit order).
//!
//! Relies on pass 0: the geometry and the group descriptors are validated
//! (descriptor locations outside the file system are skipped here).
//!
//! Parallel: the inode tables are cut into units of up to `UNIT_BLOCKS`
//! blocks, each read with one `read_at`; units run on `par_fold_io` and their
//! results are merged in unit order, so any thread count gives the same
//! report. Blocks are claimed in the shared atomic map; which thread claims
//! a shared block first does not matter, only that it is claimed twice.

use super::blockmap::{self, MapInfo, MapVisitor, Scratch, Subtree};
use super::problem::{Code, Problem, ProblemList};
use super::state::{DirBlock, POLICY_UNRECOGNIZED, QUOTA_TYPES, QuotaUsage, State, Stats, iflag};
use super::xattr::{self, EaCharge};
use crate::engine::{Control, ScratchList, Threads};
use crate::fs::bytes::le32;
use crate::fs::crypt::{self, Policy};
use crate::fs::dir_entry;
use crate::fs::inode::{self, DIRECT_BLOCKS, FileType, Inode, flags};
use crate::fs::num::{Blk, Cluster, Group, Ino, LBlk};
use crate::fs::superblock::{compat, incompat, ro_compat};
use crate::narrow;
use crate::volume::Fs;

/// The details that tell apart the kinds of problem sharing a code
/// (`InodeBadFlags`, `InodeBadSize`); the fixes dispatch on them.
pub mod detail {
    pub const INLINE_AND_EXTENTS: &str = "both INLINE_DATA_FL and EXTENTS_FL";
    pub const EXTENTS_FL_MISSING: &str = "missing EXTENTS_FL, but the inode is in extents format";
    pub const FADDR: &str = "i_faddr";
    pub const DIR_SIZE_HIGH: &str = "directory i_size_high";
    pub const BLOCKS_HI: &str = "i_blocks_hi without huge_file";
    pub const HURD_FRAG: &str = "i_frag";
    pub const HURD_FSIZE: &str = "i_fsize";
    pub const SPECIAL_SIZE: &str = "special file";
    pub const ZERO_LENGTH_DIR: &str = "zero-length directory";
    pub const BAD_BLOCKS_INODE: &str = "bad blocks inode";
    pub const RESERVED_BAD_MODE: &str = "reserved inode has bad mode";
    pub const ORPHAN_FILE_MODE: &str = "the orphan file is not a regular file";
    pub const JOURNAL_MODE: &str = "journal inode is not a regular file";
    pub const JOURNAL_UNUSED: &str = "journal inode is not in use, but contains data";
    pub const QUOTA_MODE: &str = "quota inode is not a regular file";
    pub const QUOTA_UNUSED: &str = "quota inode is not in use, but contains data";
    /// A slow symlink that maps blocks in direct slots past the first:
    /// each is an illegal or too-big block, which e2fsck -y zeroes in
    /// pass 1 before its pass 2 judges the symlink again.
    pub const SYMLINK_EXTRA_BLOCKS: &str = "more than one block";
    /// An index flag on an inline-data inode (`HtreeRootInvalid`): no
    /// block holds a root, and the fix only clears the flag.
    pub const INLINE_INDEX: &str = "inline data holds no index root";
    /// An extent block on the way to an index root fails its checksum
    /// (`HtreeRootInvalid`, read-only checks only).
    pub const PATH_CSUM: &str = "an extent block on the way to it fails its checksum";
}

/// Inode-table blocks per unit: one read of 128 KiB with 4 KiB blocks (the
/// largest request FUSE and many block layers pass whole; larger units
/// measured no faster), small enough that units balance across threads and
/// that each worker's buffer stays small beside e2fsck's whole footprint.
const UNIT_BLOCKS: u64 = 32;

/// Marks every block of file system metadata (superblock and descriptor
/// copies, reserved GDT blocks, bitmaps, inode tables, the MMP block) in
/// `state.block_used` and `state.block_meta`.
pub fn mark_metadata(fs: &Fs, state: &State) {
    let geo = &fs.geo;
    let mark = |b: u64| {
        if geo.block_in_fs(b) || b < geo.blocks_count {
            state.block_used.set(state.cluster(b));
            state.block_meta.set(state.cluster(b));
        }
    };
    // With 1 KiB blocks, block 0 (boot block) belongs to no group but is
    // never free: e2fsck counts it as used in the summary.
    if geo.first_data_block > 0 {
        state.block_used.set(Cluster(0));
    }
    for g in 0..geo.groups {
        fs.group_metadata_blocks(g).for_each(&mark);
    }
    if fs.sb.has_incompat(incompat::MMP) && geo.block_in_fs(fs.sb.mmp_block) {
        mark(fs.sb.mmp_block);
    }
}

/// One slice of an inode table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unit {
    pub group: u32,
    /// Index of the first inode of the slice in its group.
    pub first: u32,
    pub count: u32,
}

pub(crate) fn make_units(fs: &Fs) -> Vec<Unit> {
    let geo = &fs.geo;
    let per_unit = narrow::sat32((UNIT_BLOCKS * u64::from(geo.inodes_per_block())).max(1));
    let mut units = Vec::new();
    for g in 0..geo.groups {
        let n = fs.inodes_to_scan(g);
        let mut first = 0;
        while first < n {
            let count = per_unit.min(n - first);
            units.push(Unit {
                group: g,
                first,
                count,
            });
            first += count;
        }
    }
    units
}

/// An i_blocks check waiting for its xattr block to be validated.
struct PendingIBlocks {
    ino: u32,
    acl: u64,
    /// Expected i_blocks without the xattr block.
    expect: u64,
    /// What one block adds to i_blocks.
    unit: u64,
    stored: u64,
    hi_bad: bool,
    /// Quota ids and the blocks and inodes charged before the xattr block.
    quota: Option<([u32; QUOTA_TYPES], u64, u64)>,
}

/// What one unit found; merged in unit order.
#[derive(Default)]
pub(crate) struct UnitOut {
    /// Link counts other than 1 of used inodes, in inode order.
    links_other: Vec<(Ino, u16)>,
    /// Used inodes whose block map was not walked, in inode order.
    unmapped: Vec<Ino>,
    problems: ProblemList,
    dir_blocks: Vec<DirBlock>,
    /// (directory inode, i_generation).
    dirs: Vec<(u32, u32)>,
    /// Directories whose cleared blocks reach past their last (a
    /// repair's view), and one past the last of those: in inode order.
    dir_tails: Vec<(Ino, u32)>,
    /// (xattr block, referencing inode, its i_generation).
    xrefs: Vec<(u64, u32, u32)>,
    /// EA inodes referred to by in-inode xattrs, once per entry.
    ea_refs: Vec<u32>,
    /// Quota usage of the unit's inodes; None without the quota feature.
    quota: Option<QuotaUsage>,
    pending_iblocks: Vec<PendingIBlocks>,
    /// Encrypted inodes with a readable policy, in inode order.
    policies: Vec<(u32, Policy)>,
    stats: Stats,
    /// Huge files' subtrees walked apart, taken in, and walked by helpers.
    pub split: [u64; 3],
}

impl UnitOut {
    /// Appends the next unit's output (units are absorbed in order).
    fn absorb(&mut self, o: UnitOut) {
        self.links_other.extend(o.links_other);
        self.unmapped.extend(o.unmapped);
        self.problems.append(o.problems);
        self.dir_blocks.extend(o.dir_blocks);
        self.dirs.extend(o.dirs);
        self.dir_tails.extend(o.dir_tails);
        self.xrefs.extend(o.xrefs);
        self.ea_refs.extend(o.ea_refs);
        if let (Some(q), Some(uq)) = (self.quota.as_mut(), o.quota) {
            q.merge(uq);
        }
        self.pending_iblocks.extend(o.pending_iblocks);
        self.policies.extend(o.policies);
        self.stats.add(&o.stats);
        for (a, b) in self.split.iter_mut().zip(o.split) {
            *a += b;
        }
    }
}

/// Per-thread buffers, reused for every unit and inode.
pub(crate) struct Worker {
    table: Vec<u8>,
    /// The inodes of the inode-table block being checked, parsed, and
    /// whether each passes its checksum.
    parsed: Vec<(Inode, bool)>,
    block: Vec<u8>,
    scratch: Scratch,
}

/// What every inode check needs, computed once.
pub(crate) struct Ctx<'a> {
    pub fs: &'a Fs,
    pub state: &'a State,
    pub extents: bool,
    pub inline_data: bool,
    pub huge_file: bool,
    pub dir_index: bool,
    pub ext_attr: bool,
    pub large_dir: bool,
    pub csum: bool,
    pub bit64: bool,
    pub imagic: bool,
    pub casefold: bool,
    pub quota: bool,
    pub prealloc_dir_blocks: u64,
    /// Superblock times are plausible, so a small dtime means an orphan.
    pub low_dtime_check: bool,
    /// Inode table blocks the bad-block list names (sorted): their inodes
    /// cannot be read, so they count as in use and are not checked.
    pub bad_itable: Vec<u64>,
    /// Threads a huge extent tree's subtrees may be walked on (1: none):
    /// the walk and helpers that live as long as it.
    pub split: usize,
    /// Pass 1E's offers made (`check::Options::optimize_extents`), and
    /// not for directories (`-D` rebuilds them all).
    pub optimize_extents: bool,
    pub rehash_dirs: bool,
    /// `-E bmap2extent`: block maps reported for conversion.
    pub convert_bmap: bool,
    /// A check whose fixes are all declined (-n).
    pub read_only: bool,
}

impl<'a> Ctx<'a> {
    pub fn new(fs: &'a Fs, state: &'a State) -> Ctx<'a> {
        let sb = &fs.sb;
        Ctx {
            fs,
            state,
            extents: sb.has_incompat(incompat::EXTENTS),
            inline_data: sb.has_incompat(incompat::INLINE_DATA),
            huge_file: sb.has_ro_compat(ro_compat::HUGE_FILE),
            dir_index: sb.has_compat(compat::DIR_INDEX),
            ext_attr: sb.has_compat(compat::EXT_ATTR),
            large_dir: sb.has_incompat(incompat::LARGEDIR),
            csum: sb.metadata_csum(),
            bit64: sb.is_64bit(),
            imagic: sb.has_compat(compat::IMAGIC_INODES),
            casefold: sb.has_incompat(incompat::CASEFOLD),
            quota: sb.has_ro_compat(ro_compat::QUOTA),
            low_dtime_check: {
                let ic = sb.inodes_count;
                let mkfs_time = sb.mkfs_time();
                !((sb.wtime != 0 && sb.wtime < ic)
                    || (sb.mtime != 0 && sb.mtime < ic)
                    || (mkfs_time != 0 && mkfs_time < ic))
            },
            prealloc_dir_blocks: u64::from(sb.prealloc_dir_blocks()),
            bad_itable: Vec::new(),
            split: 1,
            optimize_extents: true,
            rehash_dirs: false,
            convert_bmap: false,
            read_only: false,
        }
    }
}

/// Pass 1's scan as the pipeline (`check::pipeline`) runs it: units
/// scanned on any worker in any order, merged in unit order by `Merged`,
/// then `finish` once all are merged.
pub(crate) struct Scan<'a> {
    ctx: Ctx<'a>,
    units: Vec<Unit>,
    /// First inode of each unit.
    firsts: Vec<u32>,
}

impl<'a> Scan<'a> {
    /// Marks the metadata blocks and cuts the inode tables into units.
    pub fn new(fs: &'a Fs, state: &'a State) -> Scan<'a> {
        mark_metadata(fs, state);
        let mut ctx = Ctx::new(fs, state);
        ctx.bad_itable = super::pass2::bad_itable_blocks(fs);
        let units = make_units(fs);
        let firsts = units.iter().map(|&u| unit_first_ino(fs, u)).collect();
        Scan { ctx, units, firsts }
    }

    /// Lets a huge file's extent tree be walked on `threads` threads.
    pub fn split_huge_files(&mut self, threads: usize) {
        self.ctx.split = threads;
    }

    /// Whether pass 1E's offers are made, and for directories.
    pub fn optimize_extents(&mut self, on: bool, rehash_dirs: bool) {
        self.ctx.optimize_extents = on;
        self.ctx.rehash_dirs = rehash_dirs;
    }

    /// Whether block maps are reported for conversion (`-E bmap2extent`).
    pub fn convert_bmap(&mut self, on: bool) {
        self.ctx.convert_bmap = on;
    }

    /// Whether every fix will be declined (-n).
    pub fn read_only(&mut self, on: bool) {
        self.ctx.read_only = on;
    }

    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Inodes in unit `u` (its cost, for the scheduler).
    pub fn items(&self, u: usize) -> u64 {
        self.units.get(u).map_or(0, |x| u64::from(x.count))
    }

    /// Every inode below this number is final once units 0..=u are
    /// merged: units cover the inode tables in increasing order, and an
    /// inode's state is written only while its own unit is scanned
    /// (inodes past a group's scanned part are never written).
    pub fn final_below(&self, u: usize) -> u32 {
        self.firsts.get(u + 1).copied().unwrap_or(u32::MAX)
    }

    /// How many units must be merged for inode `ino` to be final (the
    /// inverse of `final_below`).
    pub fn units_needed(&self, ino: u32) -> usize {
        self.firsts.partition_point(|&f| f <= ino)
    }

    pub fn worker(&self) -> Worker {
        let bs = self.ctx.fs.block_size();
        Worker {
            table: Vec::new(),
            parsed: Vec::new(),
            block: vec![0u8; bs],
            scratch: Scratch::new(),
        }
    }

    /// Scans unit `u`, reading the inode table into `table` (any
    /// buffer: it is resized).
    pub fn scan(&self, w: &mut Worker, table: &mut Vec<u8>, u: usize) -> UnitOut {
        std::mem::swap(&mut w.table, table);
        let out = scan_unit(&self.ctx, w, self.units[u]);
        std::mem::swap(&mut w.table, table);
        out
    }
}

/// Pass 1's unit outputs folded in unit order.
pub(crate) struct Merged {
    all: UnitOut,
    /// Encryption policies by first appearance (inode order).
    policy_ids: std::collections::BTreeMap<Vec<u8>, u32>,
    /// With `--max-memory`, the lists below grow in the scratch file.
    spill: Option<std::sync::Arc<crate::engine::Spill>>,
    /// Link counts other than 1, in inode order.
    links_other: ScratchList<(Ino, u16)>,
    /// Every directory, in unit order.
    dirs: ScratchList<Ino>,
    /// Each directory's i_generation (parallel to `dirs`), kept for
    /// repairs only (`keep`): pass 2's units take each unit's as it is
    /// merged (`absorb`).
    gens: ScratchList<u32>,
    /// Every directory block (pass 1C reads them to name the owners of
    /// shared blocks; pass 2's end drops them unless repairing).
    blocks: ScratchList<DirBlock>,
    keep: bool,
    /// The last unit absorbed: its directories and directory blocks.
    unit_dirs: Vec<(u32, u32)>,
    unit_blocks: Vec<DirBlock>,
    unit_tails: Vec<(Ino, u32)>,
}

impl Merged {
    /// Huge files' subtrees walked apart so far, taken in, and walked by
    /// helpers.
    pub fn split(&self) -> [u64; 3] {
        self.all.split
    }

    /// `keep`: keep the directories' generations for repairs; `spill`:
    /// `--max-memory`'s scratch file.
    pub fn new(fs: &Fs, keep: bool, spill: Option<std::sync::Arc<crate::engine::Spill>>) -> Merged {
        Merged {
            all: UnitOut {
                quota: fs
                    .sb
                    .has_ro_compat(ro_compat::QUOTA)
                    .then(QuotaUsage::default),
                ..UnitOut::default()
            },
            policy_ids: Default::default(),
            spill,
            links_other: ScratchList::new(),
            dirs: ScratchList::new(),
            gens: ScratchList::new(),
            blocks: ScratchList::new(),
            keep,
            unit_dirs: Vec::new(),
            unit_blocks: Vec::new(),
            unit_tails: Vec::new(),
        }
    }

    /// Appends the next unit's output. The encrypted inodes' policy ids
    /// go to `policies` at once (ids in order of first appearance: the
    /// same for any thread count), for pass 2 to read while pass 1 runs.
    /// Returns the unit's directories (inode, i_generation), directory
    /// blocks and the ends of their cleared blocks (`UnitOut::dir_tails`).
    pub fn absorb(
        &mut self,
        mut o: UnitOut,
        policies: &std::sync::RwLock<Vec<(u32, u32)>>,
    ) -> super::state::UnitDirs<'_> {
        if !o.policies.is_empty() {
            let mut p = policies.write().unwrap_or_else(|e| e.into_inner());
            for (ino, pol) in std::mem::take(&mut o.policies) {
                let id = match pol {
                    Policy::Known(k) => {
                        let next = narrow::sat32(self.policy_ids.len());
                        *self.policy_ids.entry(k).or_insert(next)
                    }
                    _ => POLICY_UNRECOGNIZED,
                };
                p.push((ino, id));
            }
        }
        self.unit_dirs = std::mem::take(&mut o.dirs);
        self.unit_blocks = std::mem::take(&mut o.dir_blocks);
        self.unit_tails = std::mem::take(&mut o.dir_tails);
        let spill = self.spill.as_ref();
        self.links_other
            .extend_from_slice(&std::mem::take(&mut o.links_other), spill);
        let inos: Vec<Ino> = self.unit_dirs.iter().map(|d| Ino(d.0)).collect();
        self.dirs.extend_from_slice(&inos, spill);
        if self.keep {
            let gens: Vec<u32> = self.unit_dirs.iter().map(|d| d.1).collect();
            self.gens.extend_from_slice(&gens, spill);
        }
        self.blocks.extend_from_slice(&self.unit_blocks, spill);
        self.all.absorb(o);
        (&self.unit_dirs, &self.unit_blocks, &self.unit_tails)
    }
}

/// What pass 1 does once every unit is merged: the state's lists, the
/// xattr blocks (each validated once), the i_blocks checks that waited
/// for them, quota, the resize inode. `enc_policy`: what `absorb` filled.
pub(crate) fn finish(
    fs: &Fs,
    state: &mut State,
    merged: Merged,
    enc_policy: Vec<(u32, u32)>,
    repairing: bool,
    threads: Threads,
    ctl: &Control,
) -> ProblemList {
    let Merged {
        all,
        links_other,
        dirs,
        gens,
        blocks: mut dir_blocks,
        ..
    } = merged;
    let UnitOut {
        links_other: _,
        unmapped,
        mut problems,
        dir_blocks: _,
        dirs: _,
        dir_tails: _,
        xrefs,
        mut ea_refs,
        mut quota,
        pending_iblocks: pending,
        policies: _,
        stats,
        split: _,
    } = all;
    state.enc_policy = enc_policy;
    state.add_links_other(links_other);
    state.add_unmapped(unmapped);
    state.stats.add(&stats);
    // Both read every page of their lists: with `--max-memory`, a look
    // at the resident size after each.
    let look = |s: &State| {
        if let Some(s) = &s.spill {
            s.check();
        }
    };
    look(state);
    if repairing {
        // Only the repairs want every directory block in disk order; a
        // read-only check keeps them in inode order, and at pass 2's end
        // only a few, sorted then (`pass2::finish`). The sort ran on one
        // thread after the pipeline: 1.2 s of -m2 on dir50-1k at 10M
        // inodes (5M blocks) on a loaded machine.
        dir_blocks.sort_unstable_capped();
        look(state);
    }
    // Grown by doubling while merging: the spare half is dead weight for
    // the rest of the check.
    dir_blocks.shrink_to_fit();
    state.dir_blocks = dir_blocks;
    // Without repairs `gens` is empty: pass 2's units took each
    // directory's generation (checksum seed) as pass 1 merged it, and
    // the few inline directories read theirs again.
    let (mut dirs, mut gens) = (dirs, gens);
    if !dirs.is_sorted_by(|a, b| a < b) {
        // Units arrive in inode order, so this is not reached; it keeps
        // the binary searches of later passes sound whatever happens.
        if gens.len() == dirs.len() {
            let mut pairs: Vec<(Ino, u32)> =
                dirs.iter().copied().zip(gens.iter().copied()).collect();
            pairs.sort_unstable();
            pairs.dedup_by_key(|d| d.0);
            let (d, g): (Vec<Ino>, Vec<u32>) = pairs.into_iter().unzip();
            (dirs, gens) = (d.into(), g.into());
        } else {
            dirs.vec_mut().sort_unstable();
            dirs.vec_mut().dedup();
        }
    }
    dirs.shrink_to_fit();
    state.set_dirs(dirs);
    state.dir_gen = gens;
    state.settle_lists();
    // dir_parent and dir_dotdot are pass 2's to fill.
    problems.extend(xattr::check_blocks(
        fs,
        state,
        xrefs,
        &mut ea_refs,
        repairing,
        threads,
        ctl,
    ));
    for p in pending {
        // A valid block counts once, plus the EA-inode values it holds.
        let charge = state
            .xattr_blocks
            .binary_search_by_key(&p.acl, |x| x.blk)
            .ok()
            .map(|k| state.xattr_blocks[k].charge);
        let blocks = charge.map_or(0, |c| 1 + c.blocks);
        if let (Some(q), Some((ids, base_blocks, base_inodes))) = (quota.as_mut(), p.quota) {
            // Counted in clusters with bigalloc: e2fsck charges cluster size.
            let space = (base_blocks + blocks)
                .saturating_mul(u64::from(fs.geo.block_size) << fs.geo.cluster_bits);
            q.charge(ids, space, base_inodes + charge.map_or(0, |c| c.inodes));
        }
        let expect = p.expect + blocks * p.unit;
        if expect != p.stored || p.hi_bad {
            problems.push(
                Problem::new(Code::InodeIBlocks)
                    .ino(Ino(p.ino))
                    .num(p.stored)
                    .num2(expect),
            );
        }
    }
    ea_refs.sort_unstable();
    for r in ea_refs {
        match state.ea_inode_refs.last_mut() {
            Some(last) if last.0 == r => last.1 += 1,
            _ => state.ea_inode_refs.push((r, 1)),
        }
    }
    state.quota = quota;
    state.stats.inodes_used = state.inode_used.count();
    if state.stats.large_dirs > 0 && !fs.sb.has_incompat(incompat::LARGEDIR) {
        problems.push(Problem::new(Code::FeatureLargeDirs));
    }
    problems
}

fn scan_unit(ctx: &Ctx, w: &mut Worker, u: Unit) -> UnitOut {
    let fs = ctx.fs;
    let geo = &fs.geo;
    let isz = geo.inode_len();
    let first_ino = u.group * geo.inodes_per_group + u.first + 1;
    let n = u.count as usize;
    let mut out = UnitOut::default();
    let at = match read_unit(fs, u, &mut w.table) {
        Ok(Some(at)) => at,
        Ok(None) => return out,
        Err(p) => {
            out.problems.push(p);
            return out;
        }
    };
    let table_buf = std::mem::take(&mut w.table);
    let mut parsed = std::mem::take(&mut w.parsed);
    let table = &table_buf[at];
    // One inode-table block at a time (units are whole blocks): its
    // inodes parsed and checksummed once, for the garbage test of the
    // block and then for each inode's check.
    let ipb = geo.inodes_per_block().max(1) as usize;
    let mut ino = first_ino;
    for block in table[..n * isz].chunks(ipb * isz) {
        parsed.clear();
        for (i, raw) in block.chunks_exact(isz).enumerate() {
            let inode = Inode::parse(raw);
            let ok = inode_csum_ok(ctx, ino + narrow::sat32(i), raw, &inode);
            parsed.push((inode, ok));
        }
        let garbage = block_insane(ctx, ipb, &parsed);
        for (raw, (inode, ok)) in block.chunks_exact(isz).zip(&parsed) {
            check_inode(ctx, w, &mut out, ino, raw, inode, (*ok, garbage));
            ino += 1;
        }
    }
    w.parsed = parsed;
    w.table = table_buf;
    out.split = std::mem::take(&mut w.scratch.split);
    out
}

/// e2fsck's questions about the resize feature and inode, asked before
/// its pass 1, each under its own code: resize_inode with meta_bg (which
/// a repair turns off), reserved GDT blocks without the feature, then
/// the inode itself ([`check_resize_inode`], when `read_inode`).
pub(crate) fn check_resize(fs: &Fs, repairing: bool, read_inode: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut has = fs.sb.has_compat(compat::RESIZE_INODE);
    let mut reserved = fs.sb.reserved_gdt_blocks;
    if has && fs.sb.has_incompat(crate::fs::superblock::incompat::META_BG) {
        out.push(
            Problem::new(Code::SbResizeInodeNoFeature)
                .e2fsck(0x000051)
                .detail("resize_inode cannot go with meta_bg".to_string()),
        );
        // A yes turns the feature off, with its reserved GDT blocks.
        if repairing {
            (has, reserved) = (false, 0);
        }
    }
    if !has && reserved != 0 {
        out.push(
            Problem::new(Code::SbResizeInodeNoFeature)
                .e2fsck(0x00002E)
                .num(u64::from(reserved))
                .detail(format!(
                    "resize_inode is not enabled, but {reserved} GDT blocks are reserved"
                )),
        );
    }
    if read_inode {
        out.extend(check_resize_inode(fs, has));
    }
    out
}

/// e2fsck's check of the resize inode (done before its pass 1), with the
/// feature as it stands then (`has`): without resize_inode it must be
/// empty; with it, only the double indirect block is set, and it maps the
/// reserved GDT blocks, each of which maps the same block's backups in
/// the groups that carry a superblock copy.
fn check_resize_inode(fs: &Fs, has: bool) -> Option<Problem> {
    let bad = |why: &str| {
        Some(
            Problem::new(Code::SbResizeInodeNoFeature)
                .e2fsck(0x000030)
                .detail(why.to_string()),
        )
    };
    let raw = fs.read_inode_raw(Ino::RESIZE).ok()?;
    let ri = Inode::parse(&raw);
    let ptrs = ri.block_ptrs();
    if !has {
        if ptrs.iter().any(|&p| p != 0) {
            return Some(
                Problem::new(Code::SbResizeInodeNoFeature)
                    .e2fsck(0x00002F)
                    .detail(
                        "resize_inode is not enabled, but the resize inode is not empty"
                            .to_string(),
                    ),
            );
        }
        return None;
    }
    let dind = u64::from(ptrs[13]);
    if ptrs.iter().enumerate().any(|(i, &p)| i != 13 && p != 0)
        || dind == 0
        || ri.links_count == 0
        || ri.mode & inode::S_IFREG == 0
        || !fs.geo.block_in_fs(dind)
    {
        return bad("bad block pointers, mode or link count");
    }
    let geo = &fs.geo;
    let apb = u64::from(geo.block_size / 4);
    let Ok(dbuf) = fs.read_block(dind) else {
        return bad("double indirect block unreadable");
    };
    let mut first = geo.first_data_block + 1 + u64::from(geo.desc_blocks);
    if geo.block_size == 1024 && geo.first_data_block == 0 {
        // 1 KiB bigalloc: the superblock is block 1 of group 0's cluster.
        first += 1;
    }
    // e2fsck 1.47 looks at the first quarter of the reserved GDT blocks
    // only (its loop runs to s_reserved_gdt_blocks / 4): a wrong entry
    // past that is not "not valid" (pass 1 judges those blocks as any
    // other map, its i_blocks included), so the verdicts agree.
    let n = u64::from(geo.reserved_gdt_blocks) / 4;
    // The double indirect block must map each of those reserved GDT
    // blocks; the first one it does not decides, unless a block before it
    // is wrong.
    let mapped = (0..n)
        .take_while(|&k| {
            let gdt_off = (u64::from(geo.desc_blocks) + k) % apb;
            u64::from(le32(&dbuf, narrow::to_usize(gdt_off * 4))) == first + k
        })
        .count() as u64;
    // Each mapped block lists the block's backups; read 16 at a time, all
    // in flight at once on a slow device.
    let bsz = geo.block_len();
    let mut bufs = vec![0u8; 16.min(narrow::to_usize(mapped)) * bsz];
    let mut k = 0;
    while k < mapped {
        let m = (mapped - k).min(16) as usize;
        let mut reqs: Vec<(u64, &mut [u8])> = bufs[..m * bsz]
            .chunks_mut(bsz)
            .enumerate()
            .map(|(i, c)| ((first + k + i as u64) * u64::from(geo.block_size), c))
            .collect();
        let results = fs.dev.read_many(&mut reqs);
        for (i, r) in results.iter().enumerate() {
            if r.is_err() {
                return bad("reserved GDT block unreadable");
            }
            let ibuf = &bufs[i * bsz..(i + 1) * bsz];
            let pblk = first + k + i as u64;
            let mut j = 0usize;
            for g in 1..geo.groups {
                if !geo.group_has_super(g) {
                    continue;
                }
                let expect = pblk + u64::from(g) * u64::from(geo.blocks_per_group);
                if u64::from(inode::map_ptr(ibuf, j)) != expect {
                    return bad("reserved GDT backup not mapped");
                }
                j += 1;
            }
        }
        k += m as u64;
    }
    if mapped < n {
        return bad("reserved GDT block not mapped");
    }
    None
}

/// Number of the first inode of unit `u`.
pub(crate) fn unit_first_ino(fs: &Fs, u: Unit) -> u32 {
    u.group * fs.geo.inodes_per_group + u.first + 1
}

/// Reads the inode-table slice of `u` into `buf` with one read, at a page
/// boundary inside it (`io::aligned`), and says where. Ok(None) when the
/// table lies outside the file system (pass 0 reported it).
pub(crate) fn read_unit(
    fs: &Fs,
    u: Unit,
    buf: &mut Vec<u8>,
) -> std::result::Result<Option<std::ops::Range<usize>>, Problem> {
    let geo = &fs.geo;
    let isz = u64::from(geo.inode_size);
    let table = fs.gd_at(Group(u.group)).inode_table;
    let byte0 = u64::from(u.first) * isz;
    let bsz = u64::from(geo.block_size);
    let start_blk = table.saturating_add(byte0 / bsz);
    let nbytes = u64::from(u.count) * isz;
    let end_blk = start_blk.saturating_add(nbytes.div_ceil(bsz));
    if !geo.block_in_fs(table) || end_blk > geo.blocks_count {
        return Ok(None);
    }
    let at = crate::io::aligned(buf, narrow::to_usize(nbytes));
    let off = start_blk * bsz + byte0 % bsz;
    fs.dev.read_at(off, &mut buf[at.clone()]).map_err(|e| {
        Problem::new(Code::InodeTableUnreadable)
            .group(Group(u.group))
            .blk(Blk(start_blk))
            .detail(e.to_string())
    })?;
    Ok(Some(at))
}

/// Is the inode's checksum right? An inode whose first 128 bytes are all
/// zero is accepted whatever its checksum (never written).
fn inode_csum_ok(ctx: &Ctx, ino: u32, raw: &[u8], inode: &Inode) -> bool {
    if !ctx.csum {
        return true;
    }
    if inode::compute_checksum(ctx.fs.csum_seed, Ino(ino), raw) == inode.stored_checksum() {
        return true;
    }
    raw[..inode::GOOD_OLD_INODE_SIZE.min(raw.len())]
        .iter()
        .all(|&b| b == 0)
}

/// Per-inode findings before they are folded into the unit's output.
struct InodeCheck<'o> {
    out: &'o mut UnitOut,
    state: &'o State,
    ino: u32,
    /// The block map was walked (`check_blocks` ran).
    mapped: bool,
    /// The link count was recorded (`set_links`).
    linked: bool,
    /// The file type was recorded (`mark_used`).
    typed: bool,
    /// The inode's checksum is right (or not kept).
    csum_ok: bool,
}

impl InodeCheck<'_> {
    fn report(&mut self, p: Problem) {
        self.out.problems.push(p);
    }
    fn set_flag(&mut self, f: u8) {
        self.state.set_iflag(Ino(self.ino), f);
    }
    fn set_links(&mut self, links: u16) {
        if self.linked
            && self
                .out
                .links_other
                .last()
                .is_some_and(|l| l.0 == Ino(self.ino))
        {
            self.out.links_other.pop();
        }
        self.linked = true;
        if links != 1 {
            self.out.links_other.push((Ino(self.ino), links));
        }
    }
    /// A used inode whose count and type pass 1 never read (in a bad
    /// block, or an unused reserved inode) has count 0 and no type.
    fn finish(&mut self) {
        if !self.state.inode_used.get(Ino(self.ino)) {
            return;
        }
        if !self.linked {
            self.out.links_other.push((Ino(self.ino), 0));
        }
        if !self.typed {
            self.state.set_ftype(Ino(self.ino), 0);
        }
        if !self.mapped {
            self.out.unmapped.push(Ino(self.ino));
        }
    }
    fn bad(&mut self, p: Problem) {
        self.set_flag(iflag::BAD);
        self.report(p);
    }
}

/// e2fsck's inode-table sanity test (done by libext2fs' inode scan): an
/// inode-table block in which more than half the inodes fail their
/// checksum or have an impossible extent header or block map holds
/// garbage as a whole. `parsed` holds the block's inodes, each with
/// whether it passes its checksum.
fn block_insane(ctx: &Ctx, ipb: usize, parsed: &[(Inode, bool)]) -> bool {
    if ipb < 2 || ctx.fs.geo.inode_size == 0 {
        return false;
    }
    let bad = parsed
        .iter()
        .filter(|(inode, csum_ok)| {
            !csum_ok
                || (inode.has_flag(flags::EXTENTS)
                    && blockmap::header_problem(&inode.block, 60).is_some())
                || block_map_insane(ctx.fs, inode)
        })
        .count();
    bad > ipb / 2
}

/// More than half of i_block's pointers outside the file system, for a
/// block-mapped file, directory or slow symlink in use.
fn block_map_insane(fs: &Fs, inode: &Inode) -> bool {
    if inode.has_flag(flags::INLINE_DATA) || inode.has_flag(flags::EXTENTS) {
        return false;
    }
    if !inode.is_reg() && !inode.is_symlink() && !inode.is_dir() {
        return false;
    }
    if (inode.is_symlink() && inode.size <= 60) || inode.links_count == 0 {
        return false;
    }
    let bad = inode
        .block_ptrs()
        .iter()
        .filter(|&&p| p != 0 && !fs.geo.block_in_fs(u64::from(p)))
        .count();
    bad > 15 / 2
}

fn check_inode(
    ctx: &Ctx,
    w: &mut Worker,
    out: &mut UnitOut,
    ino: u32,
    raw: &[u8],
    inode: &Inode,
    (csum_ok, garbage): (bool, bool),
) {
    let mut c = InodeCheck {
        out,
        state: ctx.state,
        ino,
        mapped: false,
        linked: false,
        typed: false,
        csum_ok,
    };
    if let Some(blk) = in_bad_itable_block(ctx, ino) {
        // e2fsck cannot read such an inode: it counts as in use, unchecked
        // (pass 2 then drops the entries naming it). When it is the bad
        // block inode itself, the list is not believed: e2fsck offers to
        // clear it.
        ctx.state.inode_used.set(Ino(ino));
        c.set_flag(iflag::IN_BAD_BLOCK);
        if ino == inode::BAD_INO {
            c.report(
                Problem::new(Code::BadBlocksInodeInBadBlock)
                    .ino(Ino(ino))
                    .blk(Blk(blk)),
            );
        }
        c.finish();
        return;
    }
    if garbage && inode.links_count > 0 {
        c.report(Problem::new(Code::InodeGarbage).ino(Ino(ino)));
    }
    check_inode_body(ctx, w, &mut c, raw, inode);
    c.finish();
    // e2fsck reports a bad checksum ("passes checks, but checksum does not
    // match") after its other checks unless one of them rewrote the inode;
    // read-only, nothing is rewritten, so it is always reported. The bad
    // blocks inode's checksum is one of the contents it judges invalid.
    if !csum_ok && ino != inode::BAD_INO {
        c.report(Problem::new(Code::InodeChecksum).ino(Ino(ino)));
        if ctx.read_only {
            c.set_flag(iflag::CSUM_FAILED);
        }
    }
}

/// The inode table block holding `ino`, when the bad-block list names it.
fn in_bad_itable_block(ctx: &Ctx, ino: u32) -> Option<u64> {
    if ctx.bad_itable.is_empty() {
        return None;
    }
    let (blk, _) = ctx.fs.inode_location(Ino(ino))?;
    ctx.bad_itable.binary_search(&blk).is_ok().then_some(blk)
}

/// A reserved inode that holds a file when its feature names it (journal,
/// quota): checked like a regular file then; otherwise it must be empty.
/// A stray one with links that e2fsck was not let clear (-n) goes on to
/// its checks of an ordinary inode, which claim the blocks it maps: they
/// stay in use. No
/// directory entry names it, nor does pass 4 look at a reserved inode, so
/// nothing else of those checks is ever asked about.
#[allow(clippy::too_many_arguments)]
fn reserved_file(
    ctx: &Ctx,
    w: &mut Worker,
    c: &mut InodeCheck,
    raw: &[u8],
    inode: &Inode,
    ino: u32,
    wanted: bool,
) {
    let journal = ino == inode::JOURNAL_INO;
    ctx.state.inode_used.set(Ino(ino));
    if wanted {
        if !inode.is_reg() {
            let (e2, what) = if journal {
                (0x010035, detail::JOURNAL_MODE)
            } else {
                (0x010062, detail::QUOTA_MODE)
            };
            c.report(
                Problem::new(Code::InodeReservedBad)
                    .ino(Ino(ino))
                    .e2fsck(e2)
                    .detail(what),
            );
        }
        mark_used(ctx, c, inode);
        check_blocks(ctx, w, c, raw, inode, false, EaCharge::default());
    } else if inode.links_count > 0
        // e2fsck looks at the low 32 bits of the block count alone (seed
        // fz36, damage 14820: only the high 16 set, no problem to it).
        || narrow::lo32(inode.blocks_raw) != 0
        || inode.block_ptrs()[0] != 0
    {
        let (e2, what) = if journal {
            (0x010034, detail::JOURNAL_UNUSED)
        } else {
            (0x010063, detail::QUOTA_UNUSED)
        };
        c.report(
            Problem::new(Code::InodeReservedBad)
                .ino(Ino(ino))
                .e2fsck(e2)
                .detail(what),
        );
        // Without links e2fsck is done with it, as with any unlinked inode.
        if ctx.read_only && inode.links_count > 0 {
            mark_used(ctx, c, inode);
            check_blocks(ctx, w, c, raw, inode, false, EaCharge::default());
        }
    }
}

fn mark_used(ctx: &Ctx, c: &mut InodeCheck, inode: &Inode) {
    ctx.state.inode_used.set(Ino(c.ino));
    c.set_links(inode.links_count);
    ctx.state.set_ftype(Ino(c.ino), inode.file_type() as u8);
    c.typed = true;
}

fn check_inode_body(ctx: &Ctx, w: &mut Worker, c: &mut InodeCheck, raw: &[u8], inode: &Inode) {
    let fs = ctx.fs;
    let ino = c.ino;
    let first_ino = fs.geo.first_ino;
    let links = inode.links_count;

    check_flag_features(ctx, w, c, raw, inode);
    if check_reserved(ctx, w, c, raw, inode) {
        return;
    }

    if links == 0 {
        // The kernel sets dtime when it frees an inode; a typed inode
        // without links and without dtime was never properly deleted.
        if ino >= first_ino && inode.dtime == 0 && inode.mode != 0 {
            c.report(Problem::new(Code::InodeZeroDtimeDeleted).ino(Ino(ino)));
        }
        return;
    }
    if inode.dtime != 0 && ino != inode::ROOT_INO {
        c.report(Problem::new(Code::InodeDtimeSet).ino(Ino(ino)));
    }
    mark_used(ctx, c, inode);
    check_used_fields(ctx, c, inode);
    let owner = xattr::Owner {
        ino,
        generation: inode.generation,
    };
    let ibody = xattr::check_inode_extra(
        fs,
        &mut c.out.problems,
        &mut c.out.ea_refs,
        owner,
        raw,
        inode,
    );
    if ctx.extents
        && inode.has_flag(flags::EXTENTS)
        && inode.is_symlink()
        && !has_valid_blocks(inode)
    {
        c.report(
            Problem::new(Code::InodeFastSymlink)
                .ino(Ino(ino))
                .e2fsck(0x01005D)
                .detail("fast symlink has EXTENTS_FL set"),
        );
    }
    if inode.has_flag(flags::ENCRYPT) {
        check_encryption(ctx, w, c, raw, inode);
    }
    if let Some(what) = really_dir(ctx, w, ino, raw, inode) {
        // Read-only, the mode stays what it is and the inode is checked
        // as such; the fix makes it a directory for the next round.
        c.report(
            Problem::new(Code::InodeReallyDir)
                .ino(Ino(ino))
                .detail(what),
        );
    }
    if check_file_type(ctx, w, c, raw, inode) {
        check_blocks(ctx, w, c, raw, inode, false, ibody);
    }
}

/// The inode's flags against the features and each other, and a dtime
/// that is an orphan list link.
fn check_flag_features(ctx: &Ctx, w: &mut Worker, c: &mut InodeCheck, raw: &[u8], inode: &Inode) {
    let fs = ctx.fs;
    let ino = c.ino;
    let first_ino = fs.geo.first_ino;
    let links = inode.links_count;

    // e2fsck judges these flags on every inode it does not skip as
    // deleted: the reserved ones too, whatever their link count.
    if links > 0 || ino < first_ino {
        check_type_flags(ctx, c, inode);
    }
    if inline_and_extents(ctx, inode, ino) {
        if is_special(inode) {
            c.report(
                Problem::new(Code::InodeDeviceBlocks)
                    .ino(Ino(ino))
                    .e2fsck(0x010076),
            );
        } else {
            // e2fsck keeps one of the two mappings or clears the inode,
            // asking in turn until a yes; -n hears every question.
            for e2 in inline_extents_questions(inode, fs.geo.blocks_count) {
                c.report(
                    Problem::new(Code::InodeBadFlags)
                        .ino(Ino(ino))
                        .e2fsck(e2)
                        .detail(detail::INLINE_AND_EXTENTS),
                );
                if !ctx.read_only {
                    break;
                }
            }
        }
    }
    if inode.has_flag(flags::INLINE_DATA) && !ctx.inline_data && ino >= first_ino {
        // Sound inline data asks first to set the feature; declined (or
        // unsound), whether to clear the inode. Declined, the flag stays
        // and the inode is checked on (its i_block then maps nothing).
        let sound = xattr::inline_data_size(ctx.fs, raw, inode, &mut w.block, true).is_ok();
        if sound {
            c.report(
                Problem::new(Code::InodeInlineNoFeature)
                    .ino(Ino(ino))
                    .e2fsck(0x01006F),
            );
        }
        if !sound || ctx.read_only {
            c.report(
                Problem::new(Code::InodeInlineNoFeature)
                    .ino(Ino(ino))
                    .e2fsck(0x010070),
            );
        }
    }
    if inode.has_flag(flags::EXTENTS)
        && !ctx.extents
        && (links > 0 || matches!(ino, inode::BAD_INO | inode::ROOT_INO | inode::JOURNAL_INO))
    {
        // e2fsck first offers to set the feature for a sound root; a
        // repair says yes once and the rest read as extents
        // (`features_asked_once`); declined, or for a bad root, it
        // offers to clear the inode.
        let sound = extent_mapped(ctx, inode);
        if sound {
            c.report(Problem::new(Code::InodeExtentFormatNoFeature).ino(Ino(ino)));
        }
        if !sound || ctx.read_only {
            c.report(Problem::new(Code::InodeExtentsNoFeature).ino(Ino(ino)));
        }
    }
    if ctx.extents
        && !inode.has_flag(flags::EXTENTS)
        && (links > 0 || matches!(ino, inode::BAD_INO | inode::ROOT_INO | inode::JOURNAL_INO))
        && (inode.is_reg() || inode.is_dir())
        && blockmap::header_problem(&inode.block, 60).is_none()
    {
        c.report(
            Problem::new(Code::InodeBadFlags)
                .ino(Ino(ino))
                .e2fsck(0x01005C)
                .detail(detail::EXTENTS_FL_MISSING),
        );
    }
    if inode.has_flag(flags::INLINE_DATA)
        && ctx.inline_data
        && ino >= first_ino
        && let Err(why) =
            xattr::inline_data_size_verified(ctx.fs, (raw, inode, c.csum_ok), &mut w.block)
    {
        c.report(
            Problem::new(Code::InodeInlineData)
                .ino(Ino(ino))
                .detail(why),
        );
    }

    // A dtime smaller than the inode count is an orphan list link: the
    // list was not processed (unless the clock itself is that low).
    if ctx.low_dtime_check && inode.dtime != 0 && inode.dtime < fs.geo.inodes_count {
        c.report(
            Problem::new(Code::InodeOrphanInUse)
                .ino(Ino(ino))
                .detail("part of a corrupted orphan linked list"),
        );
    }
}

/// Does the inode hold its data inline? Without the feature, a repair
/// sets it back for sound inline data (`features_asked_once`), so the
/// rest of the check reads the inode as the repaired file system will.
fn inline_mapped(ctx: &Ctx, w: &mut Worker, raw: &[u8], inode: &Inode) -> bool {
    inode.has_flag(flags::INLINE_DATA)
        && (ctx.inline_data
            || (!ctx.read_only
                && xattr::inline_data_size(ctx.fs, raw, inode, &mut w.block, true).is_ok()))
}

/// Is the inode's map an extent tree? Without the feature the library
/// still follows a flagged inode whose root header is sound, as e2fsck's
/// block iteration does while it offers to set the feature.
fn extent_mapped(ctx: &Ctx, inode: &Inode) -> bool {
    inode.has_flag(flags::EXTENTS)
        && (ctx.extents || blockmap::header_problem(&inode.block, 60).is_none())
}

/// A repair sets the extents feature at the first inode in extent format,
/// and the inline_data feature at the first inode with sound inline data
/// (e2fsck asks once; after the yes, no other inode is in question), so
/// only that inode's question stays in `problems`.
pub fn features_asked_once(problems: &mut ProblemList) {
    let (mut extents, mut inline) = (false, false);
    problems.retain(|p| {
        let seen = match p.code {
            Code::InodeExtentFormatNoFeature => &mut extents,
            Code::InodeInlineNoFeature if p.e2fsck_override() == Some(0x01006F) => &mut inline,
            _ => return true,
        };
        !std::mem::replace(seen, true)
    });
}

/// Does e2fsck judge the inode's pair of INLINE_DATA_FL and EXTENTS_FL
/// (set together, on an inode it does not skip as deleted, with either
/// feature)?
fn inline_and_extents(ctx: &Ctx, inode: &Inode, ino: u32) -> bool {
    inode.has_flag(flags::INLINE_DATA)
        && inode.has_flag(flags::EXTENTS)
        && (ctx.extents || ctx.inline_data)
        && (inode.links_count > 0 || ino < ctx.fs.geo.first_ino)
}

/// A device, FIFO or socket.
fn is_special(inode: &Inode) -> bool {
    matches!(
        inode.file_type(),
        FileType::CharDev | FileType::BlockDev | FileType::Fifo | FileType::Socket
    )
}

/// e2fsck's questions, in order, about a file with both INLINE_DATA_FL
/// and EXTENTS_FL: drop the inline flag (i_block holds an extent header),
/// drop the extent flag (the size fits inline), drop both (i_block could
/// be a block map), or clear the inode, which it always asks last.
pub(crate) fn inline_extents_questions(inode: &Inode, blocks_count: u64) -> Vec<u32> {
    let mut out = Vec::new();
    if blockmap::header_problem(&inode.block, 60).is_none() {
        out.push(0x010077);
    }
    // Unsigned and wrapping, as e2fsck computes it: an i_extra_isize
    // past the inode's end makes the room huge, so the size fits.
    let max_inline_ea = if inode.disk_size > inode::GOOD_OLD_INODE_SIZE {
        (inode.disk_size as u64)
            .wrapping_sub((inode::GOOD_OLD_INODE_SIZE + usize::from(inode.extra_isize)) as u64)
    } else {
        0
    };
    if inode.size < xattr::MIN_INLINE_DATA_SIZE.wrapping_add(max_inline_ea) {
        out.push(0x010078);
    }
    if inode
        .block_ptrs()
        .iter()
        .all(|&b| u64::from(b) < blocks_count)
    {
        out.push(0x010079);
    }
    out.push(0x01007A);
    out
}

/// The reserved inodes (below the first ordinary one): true when the
/// inode is checked in full here.
fn check_reserved(
    ctx: &Ctx,
    w: &mut Worker,
    c: &mut InodeCheck,
    raw: &[u8],
    inode: &Inode,
) -> bool {
    let fs = ctx.fs;
    let ino = c.ino;
    let first_ino = fs.geo.first_ino;
    let links = inode.links_count;

    match ino {
        inode::BAD_INO => {
            if !c.csum_ok
                || inode.mode != 0
                || inode.uid != 0
                || inode.gid != 0
                || links != 0
                || inode.has_flag(flags::INLINE_DATA)
                || inode.acl_block(ctx.bit64) != 0
            {
                // e2fsck has a code of its own for the bad blocks inode.
                c.report(
                    Problem::new(Code::InodeReservedBad)
                        .ino(Ino(ino))
                        .detail(detail::BAD_BLOCKS_INODE)
                        .e2fsck(0x010065),
                );
            }
            ctx.state.inode_used.set(Ino(ino));
            check_blocks(ctx, w, c, raw, inode, true, EaCharge::default());
            return true;
        }
        inode::ROOT_INO => {
            if !inode.is_dir() {
                c.report(Problem::new(Code::RootNotDirectory).ino(Ino(ino)));
            }
            if inode.dtime != 0 && links > 0 {
                c.report(
                    Problem::new(Code::InodeDtimeSet)
                        .ino(Ino(ino))
                        .e2fsck(0x010002),
                );
            }
        }
        inode::JOURNAL_INO => {
            let wanted = fs.sb.journal_inum == inode::JOURNAL_INO;
            reserved_file(ctx, w, c, raw, inode, ino, wanted);
            return true;
        }
        inode::USR_QUOTA_INO | inode::GRP_QUOTA_INO => {
            let sb = &fs.sb;
            let wanted = ctx.quota
                && (sb.usr_quota_inum == ino
                    || sb.grp_quota_inum == ino
                    || sb.prj_quota_inum == ino);
            reserved_file(ctx, w, c, raw, inode, ino, wanted);
            return true;
        }
        // The project quota file has no reserved inode: e2fsck takes the
        // one the superblock names for a reserved quota inode, in use
        // whatever its link count, and makes it a regular file when it
        // is not one (its quota is written again after pass 5).
        _ if ctx.quota && ino == fs.sb.prj_quota_inum => {
            reserved_file(ctx, w, c, raw, inode, ino, true);
            return true;
        }
        // e2fsck makes the orphan file a regular file (mode 0100000) in
        // its pass 1; read as a directory, its blocks would be judged as
        // directory blocks. Without links it is an unused inode to e2fsck.
        _ if ino == fs.sb.orphan_file_inum
            && links > 0
            && ino >= first_ino
            && fs.sb.has_compat(compat::ORPHAN_FILE)
            && !inode.is_reg() =>
        {
            c.report(
                Problem::new(Code::InodeReservedBad)
                    .ino(Ino(ino))
                    .e2fsck(0x01008F)
                    .detail(detail::ORPHAN_FILE_MODE),
            );
        }
        // e2fsck looks at the orphan file before the reserved range: one
        // that s_first_ino puts below the first ordinary inode is still
        // the orphan file, not a reserved inode with a bad mode.
        _ if ino == fs.sb.orphan_file_inum
            && ino < first_ino
            && fs.sb.has_compat(compat::ORPHAN_FILE) =>
        {
            ctx.state.inode_used.set(Ino(ino));
            if !inode.is_reg() {
                c.report(
                    Problem::new(Code::InodeReservedBad)
                        .ino(Ino(ino))
                        .e2fsck(0x01008F)
                        .detail(detail::ORPHAN_FILE_MODE),
                );
            }
            c.set_links(links);
            check_blocks(ctx, w, c, raw, inode, false, EaCharge::default());
            return true;
        }
        _ if ino < first_ino => {
            ctx.state.inode_used.set(Ino(ino));
            let bad_mode = match ino {
                inode::BOOT_LOADER_INO => inode.is_dir(),
                inode::RESIZE_INO => inode.mode != 0 && !inode.is_reg(),
                _ => inode.mode != 0,
            };
            if bad_mode {
                c.report(
                    Problem::new(Code::InodeReservedBad)
                        .ino(Ino(ino))
                        .detail(detail::RESERVED_BAD_MODE),
                );
            }
            c.set_links(links);
            check_blocks(ctx, w, c, raw, inode, false, EaCharge::default());
            return true;
        }
        _ => {}
    }
    false
}

/// Fields a used inode must keep clear without the features that use
/// them.
fn check_used_fields(ctx: &Ctx, c: &mut InodeCheck, inode: &Inode) {
    let ino = c.ino;
    if inode.faddr != 0 {
        c.bad(
            Problem::new(Code::InodeBadFlags)
                .ino(Ino(ino))
                .e2fsck(0x02000D)
                .detail(detail::FADDR),
        );
    }
    if inode.is_dir() && !ctx.large_dir && inode.size_high != 0 {
        c.bad(
            Problem::new(Code::InodeBadSize)
                .ino(Ino(ino))
                .num(inode.size)
                .detail(detail::DIR_SIZE_HIGH),
        );
    }
    if !ctx.bit64 && inode.file_acl >> 32 != 0 && user_inode(&ctx.fs.geo, ino) {
        c.bad(
            Problem::new(Code::InodeFileAcl)
                .ino(Ino(ino))
                .e2fsck(0x020048)
                .blk(Blk(inode.file_acl)),
        );
    }
    let hi = inode.blocks_raw >> 32;
    if ctx.fs.sb.creator_os == crate::fs::superblock::OS_HURD {
        // The Hurd keeps its fragment number and size in what Linux reads
        // as i_blocks_hi; e2fsck judges them there, each on its own.
        for (value, code, what) in [
            (hi & 0xFF, 0x020010, detail::HURD_FRAG),
            (hi >> 8 & 0xFF, 0x020011, detail::HURD_FSIZE),
        ] {
            if value != 0 {
                c.bad(
                    Problem::new(Code::InodeBadFlags)
                        .ino(Ino(ino))
                        .e2fsck(code)
                        .num(value)
                        .detail(what),
                );
            }
        }
    } else if !ctx.huge_file && hi != 0 {
        c.bad(
            Problem::new(Code::InodeBadFlags)
                .ino(Ino(ino))
                .e2fsck(0x020044)
                .detail(detail::BLOCKS_HI),
        );
    }
    if inode.has_flag(flags::IMAGIC) && !ctx.imagic {
        c.report(Problem::new(Code::InodeImagic).ino(Ino(ino)));
    }
}

/// What each file type asks of the inode, counted in the statistics:
/// false when its blocks are not to be walked (inline symlinks).
fn check_file_type(
    ctx: &Ctx,
    w: &mut Worker,
    c: &mut InodeCheck,
    raw: &[u8],
    inode: &Inode,
) -> bool {
    let ino = c.ino;
    match inode.file_type() {
        FileType::Directory => {
            ctx.state.inode_dir.set(Ino(ino));
            c.out.dirs.push((ino, inode.generation));
            c.out.stats.directories += 1;
        }
        FileType::Regular => {
            c.out.stats.regular += 1;
        }
        t @ (FileType::CharDev | FileType::BlockDev | FileType::Fifo | FileType::Socket) => {
            // A repair has cleared both flags by now (e2fsck's yes to
            // 0x010076 above), and judges the device without them. It
            // has cleared INDEX_FL too (a yes to "not a directory"), and
            // e2fsck's pass 2 judges the device again without it: the
            // index flag alone never costs a device its inode under -y.
            let cleared;
            let both = inline_and_extents(ctx, inode, ino);
            let inode = if !ctx.read_only && (both || inode.has_flag(flags::INDEX)) {
                let mut copy = inode.clone();
                if both {
                    copy.flags &= !(flags::INLINE_DATA | flags::EXTENTS);
                }
                copy.flags &= !flags::INDEX;
                cleared = copy;
                &cleared
            } else {
                inode
            };
            if !device_ok(inode) {
                let e2 = match t {
                    FileType::CharDev => 0x020018,
                    FileType::BlockDev => 0x020019,
                    FileType::Fifo => 0x020025,
                    _ => 0x020026,
                };
                c.bad(
                    Problem::new(Code::InodeDeviceBlocks)
                        .ino(Ino(ino))
                        .e2fsck(e2),
                );
            } else {
                if inode.has_flag(flags::INLINE_DATA) || inode.has_flag(flags::EXTENTS) {
                    c.report(
                        Problem::new(Code::InodeDeviceBlocks)
                            .ino(Ino(ino))
                            .e2fsck(0x010076),
                    );
                }
                if inode.has_flag(flags::IMMUTABLE) || inode.has_flag(flags::APPEND) {
                    c.report(Problem::new(Code::SpecialImmutable).ino(Ino(ino)));
                }
                if inode.size != 0 {
                    c.report(
                        Problem::new(Code::InodeBadSize)
                            .ino(Ino(ino))
                            .e2fsck(0x010032)
                            .num(inode.size)
                            .detail(detail::SPECIAL_SIZE),
                    );
                }
                match t {
                    FileType::CharDev => c.out.stats.chardev += 1,
                    FileType::BlockDev => c.out.stats.blockdev += 1,
                    FileType::Fifo => c.out.stats.fifos += 1,
                    _ => c.out.stats.sockets += 1,
                }
            }
        }
        FileType::Symlink => match symlink_problem(ctx, w, raw, &without_index(ctx, inode)) {
            Some(why) => c.bad(
                Problem::new(Code::InodeFastSymlink)
                    .ino(Ino(ino))
                    .detail(why),
            ),
            None => {
                if inode.has_flag(flags::IMMUTABLE) || inode.has_flag(flags::APPEND) {
                    c.report(Problem::new(Code::SpecialImmutable).ino(Ino(ino)));
                }
                c.out.stats.symlinks += 1;
                if inode.has_flag(flags::INLINE_DATA) {
                    c.set_flag(iflag::INLINE);
                    return false;
                }
                if is_fast_symlink(inode) {
                    c.out.stats.fast_symlinks += 1;
                }
            }
        },
        FileType::Unknown => {
            c.bad(
                Problem::new(Code::InodeBadMode)
                    .ino(Ino(ino))
                    .num(u64::from(inode.mode)),
            );
        }
    }
    true
}

/// The inode as a repair's pass 2 judges it: e2fsck's pass 1 has cleared
/// INDEX_FL from any inode that is not a directory by then (a yes to
/// "not a directory"), so the flag alone never costs a symlink its inode.
/// Read-only, the flag stays and the symlink is invalid, as e2fsck -n says.
fn without_index<'a>(ctx: &Ctx, inode: &'a Inode) -> std::borrow::Cow<'a, Inode> {
    if ctx.read_only || !inode.has_flag(flags::INDEX) || inode.is_dir() {
        return std::borrow::Cow::Borrowed(inode);
    }
    let mut copy = inode.clone();
    copy.flags &= !flags::INDEX;
    std::borrow::Cow::Owned(copy)
}

/// Flags that only one type of inode may carry: CASEFOLD (directories,
/// with the feature) and EA_INODE (regular files). An inode keeping
/// EA_INODE is an EA inode for the later passes, referred to or not.
fn check_type_flags(ctx: &Ctx, c: &mut InodeCheck, inode: &Inode) {
    let ino = c.ino;
    if inode.has_flag(flags::CASEFOLD) {
        if !inode.is_dir() {
            c.report(Problem::new(Code::InodeCasefoldNonDir).ino(Ino(ino)));
        }
        if !ctx.casefold {
            c.report(Problem::new(Code::InodeCasefold).ino(Ino(ino)));
        } else {
            c.set_flag(iflag::CASEFOLD);
        }
    }
    if inode.has_flag(flags::EA_INODE) {
        if !inode.is_reg() {
            c.report(Problem::new(Code::InodeEaInodeNonReg).ino(Ino(ino)));
        }
        // Declined (-n), the flag stays and e2fsck tracks the inode; the
        // repair clears it before the next round looks again.
        c.set_flag(iflag::EA_INODE);
    }
}

/// e2fsck's guess that an inode whose mode is neither a directory, a
/// regular file nor a symlink is really a directory: its first block (or
/// its inline data) starts with '.' naming itself and '..'. Returns what
/// the mode says it is. One departure: a block counts as taken only when
/// it is file system metadata (e2fsck also looks at the blocks inodes
/// scanned before it claimed, which depends on scan order here).
fn really_dir(ctx: &Ctx, w: &mut Worker, ino: u32, raw: &[u8], inode: &Inode) -> Option<String> {
    let fs = ctx.fs;
    let geo = &fs.geo;
    if inode.is_dir() || inode.is_reg() || inode.is_symlink() || inode.block_ptr(0) == 0 {
        return None;
    }
    let what = match inode.file_type() {
        FileType::CharDev => "character device".to_string(),
        FileType::BlockDev => "block device".to_string(),
        FileType::Fifo => "FIFO".to_string(),
        FileType::Socket => "socket".to_string(),
        _ => format!("unknown file type with mode 0{:o}", inode.mode),
    };
    let good_ino = |i: u32, zero_ok: bool| {
        i < geo.inodes_count && (i >= geo.first_ino || i == inode::ROOT_INO || (zero_ok && i == 0))
    };
    let mut not_device = false;
    let blk = if ctx.inline_data && inode.has_flag(flags::INLINE_DATA) {
        let size = xattr::inline_data_size(fs, raw, inode, &mut w.block, true).ok()?;
        let b = &inode.block;
        let first = dir_entry::INLINE_ENTRIES_OFFSET;
        let rec_len = dir_entry::rec_len_at(b, first, fs.block_size());
        if size & 3 != 0
            || !good_ino(dir_entry::inline_parent(b), false)
            || !good_ino(dir_entry::inode_at(b, first).get(), true)
            || rec_len > 56
        {
            return None;
        }
        return Some(what);
    } else if ctx.extents && inode.has_flag(flags::EXTENTS) {
        not_device = true;
        first_extent_block(ctx, w, inode)?
    } else {
        for (i, &p) in inode.block_ptrs().iter().enumerate() {
            if p == 0 {
                continue;
            }
            not_device |= i >= 4;
            if !geo.block_in_fs(u64::from(p))
                || ctx.state.block_meta.get(ctx.state.cluster(u64::from(p)))
            {
                return None;
            }
        }
        u64::from(inode.block_ptrs()[0])
    };
    if matches!(inode.file_type(), FileType::CharDev | FileType::BlockDev)
        && inode.links_count == 1
        && !not_device
    {
        return None;
    }
    if !geo.block_in_fs(blk) || fs.read_block_into(blk, &mut w.block).is_err() {
        return None;
    }
    let b = &w.block;
    let bs = b.len();
    let rec = |off: usize| dir_entry::rec_len_at(b, off, bs);
    let r1 = rec(0);
    let named = |off: usize, name: &[u8]| dir_entry::name_is(b, off, name);
    if !named(0, b".")
        || dir_entry::inode_at(b, 0).get() != ino
        || r1 < 12
        || r1 % 4 != 0
        || r1 >= bs - 12
    {
        return None;
    }
    let r2 = rec(r1);
    if !named(r1, b"..") || r2 < 12 || r2 % 4 != 0 {
        return None;
    }
    Some(what)
}

/// Where an extent tree maps logical block 0 (0 for a hole), following
/// index nodes down their first entry as libext2fs's lookup does for it;
/// None when a node on the way cannot be read as one (e2fsck's lookup
/// fails and it takes the inode for what its mode says).
fn first_extent_block(ctx: &Ctx, w: &mut Worker, inode: &Inode) -> Option<u64> {
    use crate::fs::extent;
    let fs = ctx.fs;
    let mut node = inode.block.to_vec();
    let mut depth = extent::parse_header(&node).depth;
    if depth > extent::MAX_DEPTH {
        return None;
    }
    loop {
        let h = extent::parse_header(&node);
        if blockmap::header_problem(&node, node.len()).is_some() || h.depth != depth {
            return None;
        }
        if h.depth == 0 {
            return Some(
                (0..usize::from(h.entries))
                    .map(|i| extent::parse_leaf(&node, i))
                    .find(|e| e.lblk == 0 && e.len > 0)
                    .map_or(0, |e| e.pblk),
            );
        }
        if h.entries == 0 {
            return None;
        }
        let child = extent::parse_index(&node, 0).leaf;
        if !fs.geo.block_in_fs(child) || fs.read_block_into(child, &mut w.block).is_err() {
            return None;
        }
        node.clone_from(&w.block);
        depth -= 1;
    }
}

/// Whether an extent block on the way to logical block 0 fails its
/// checksum, when the check leaves it so (`-n`). e2fsck looks the index
/// root up through the extent tree with checksums verified, and judges
/// the root unusable when the lookup fails; a repair rewrites the block
/// with its checksum in pass 1 first. `csum_ok`: the inode's own
/// checksum holds; when it fails, the lookup cannot verify any node.
fn path_csum_bad(ctx: &Ctx, w: &mut Worker, (ino, csum_ok): (u32, bool), inode: &Inode) -> bool {
    use crate::fs::extent;
    if !(ctx.read_only && ctx.csum && extent_mapped(ctx, inode)) {
        return false;
    }
    let seed = inode::inode_csum_seed(ctx.fs.csum_seed, Ino(ino), inode.generation);
    let mut node = inode.block.to_vec();
    let mut depth = extent::parse_header(&node).depth;
    if depth > extent::MAX_DEPTH {
        return false;
    }
    loop {
        // Levels are counted down from the root's depth: a child's own
        // depth field is not read.
        let h = extent::parse_header(&node);
        if depth == 0 || h.entries == 0 || blockmap::header_problem(&node, node.len()).is_some() {
            return false;
        }
        // The lookup goes down the first entry, or the second when that
        // one starts at block 0 too.
        let i = usize::from(h.entries >= 2 && extent::parse_index(&node, 1).lblk == 0);
        let child = extent::parse_index(&node, i).leaf;
        if !ctx.fs.geo.block_in_fs(child) || ctx.fs.read_block_into(child, &mut w.block).is_err() {
            return false;
        }
        node.clone_from(&w.block);
        // Without the inode read again, no node's checksum holds.
        let sum_ok = csum_ok
            && extent::compute_block_checksum(seed, &node)
                .is_some_and(|c| c == extent::stored_block_checksum(&node));
        if !sum_ok && blockmap::header_problem(&node, node.len()).is_none() {
            return true;
        }
        depth -= 1;
    }
}

/// An inode flagged ENCRYPT needs a readable encryption context (with or
/// without the feature, as e2fsck); its policy is kept for pass 2, which
/// compares it with the directory's.
fn check_encryption(ctx: &Ctx, w: &mut Worker, c: &mut InodeCheck, raw: &[u8], inode: &Inode) {
    let ino = c.ino;
    let value = xattr::find_value(
        ctx.fs,
        raw,
        inode,
        &mut w.block,
        crypt::XATTR_INDEX,
        crypt::XATTR_NAME,
    );
    match value.map(|v| crypt::parse_context(&v)) {
        None => c.report(Problem::new(Code::InodeEncryptNoXattr).ino(Ino(ino))),
        Some(Policy::Corrupt) => c.report(Problem::new(Code::InodeEncryptCorrupt).ino(Ino(ino))),
        Some(p) => {
            c.set_flag(iflag::ENCRYPTED);
            c.out.policies.push((ino, p));
        }
    }
}

/// e2fsck's rule for device, FIFO and socket inodes: no INDEX or EXTENTS
/// flag, and with IMMUTABLE/APPEND no stray block pointers (the kernel
/// does not always clear them otherwise).
pub(crate) fn device_ok(inode: &Inode) -> bool {
    if inode.has_flag(flags::INDEX) || inode.has_flag(flags::EXTENTS) {
        return false;
    }
    if inode.has_flag(flags::IMMUTABLE) || inode.has_flag(flags::APPEND) {
        return inode.block_ptrs()[4..].iter().all(|&p| p == 0);
    }
    true
}

fn is_fast_symlink(inode: &Inode) -> bool {
    inode.is_symlink() && inode.size != 0 && inode.size < 60
}

/// Does i_block hold a block map (as opposed to a fast symlink target,
/// inline data or a device number)?
pub(crate) fn has_valid_blocks(inode: &Inode) -> bool {
    if !inode.is_dir() && !inode.is_reg() && !inode.is_symlink() {
        return false;
    }
    if inode.is_symlink() {
        if inode.file_acl == 0 {
            if inode.blocks_raw & 0xFFFF_FFFF == 0 {
                return false;
            }
            // i_blocks also counts the EA-inode values charged to the
            // owner, so a short size still means a fast symlink.
            return !is_fast_symlink(inode);
        } else {
            if inode.size >= 60 {
                return true;
            }
            if inode.size > 4 && inode.block_ptrs()[1] == 0 {
                return true;
            }
            return false;
        }
    }
    !inode.has_flag(flags::INLINE_DATA)
}

/// Why a symlink is invalid, or None. Same rules as e2fsck: a size that
/// fits, a target whose length (up to the first NUL) is the size, one
/// block at logical 0 for a slow symlink.
fn symlink_problem(ctx: &Ctx, w: &mut Worker, raw: &[u8], inode: &Inode) -> Option<&'static str> {
    if inode.size_high != 0 || inode.size == 0 {
        return Some("bad size");
    }
    if inode.has_flag(flags::INDEX) {
        return Some("INDEX_FL set");
    }
    if inode.has_flag(flags::INLINE_DATA) {
        if inode.has_flag(flags::EXTENTS) {
            return Some("inline data and EXTENTS_FL");
        }
        return match xattr::inline_data_size(ctx.fs, raw, inode, &mut w.block, false) {
            Ok(sz) if sz == inode.size => None,
            _ => Some("inline data size does not match i_size"),
        };
    }
    let fs = ctx.fs;
    // Without its encryption context the flag goes (`check_encryption`,
    // e2fsck clears it first): the target is then judged as plain text.
    let encrypted = inode.has_flag(flags::ENCRYPT)
        && xattr::find_value(
            fs,
            raw,
            inode,
            &mut w.block,
            crypt::XATTR_INDEX,
            crypt::XATTR_NAME,
        )
        .is_some();
    let target: &[u8] = if is_fast_symlink(inode) {
        if inode.has_flag(flags::EXTENTS) {
            return Some("fast symlink with EXTENTS_FL");
        }
        &inode.block
    } else {
        let blk = if inode.has_flag(flags::EXTENTS) {
            let h = crate::fs::extent::parse_header(&inode.block);
            if blockmap::header_problem(&inode.block, 60).is_some()
                || h.entries != 1
                || h.depth != 0
            {
                return Some("bad extent tree");
            }
            let e = crate::fs::extent::parse_leaf(&inode.block, 0);
            if e.lblk != 0 || e.len != 1 {
                return Some("bad extent");
            }
            e.pblk
        } else {
            // Pointers outside the file system are illegal blocks, which
            // e2fsck's -y clears before it judges the symlink (declined,
            // they leave it invalid, and the illegal block says so).
            // An indirect block stays mapped once the blocks it lists are
            // cleared; direct blocks past the first go (the repair waits
            // for them before it judges the symlink again).
            let p = inode.block_ptrs();
            let kept = |x: &u32| *x != 0 && fs.geo.block_in_fs(u64::from(*x));
            if p[DIRECT_BLOCKS..].iter().any(kept) {
                return Some("an indirect block");
            }
            if p[1..DIRECT_BLOCKS].iter().any(kept) {
                return Some(detail::SYMLINK_EXTRA_BLOCKS);
            }
            u64::from(p[0])
        };
        if !fs.geo.block_in_fs(blk) {
            return Some("block out of range");
        }
        if fs.read_block_into(blk, &mut w.block).is_err() {
            return Some("block unreadable");
        }
        &w.block
    };
    // An encrypted target is a 16-bit length and ciphertext (NULs allowed).
    let len = if encrypted {
        crypt::symlink_len(target)
    } else {
        target.iter().position(|&b| b == 0).unwrap_or(target.len())
    };
    if len >= target.len() {
        return Some("target not terminated");
    }
    if len as u64 != inode.size {
        return Some("target length does not match i_size");
    }
    None
}

/// Problems one walk reports about cluster rules at most (a run is
/// reported block by block).
const MAX_CLUSTER_REPORTS: usize = 1 << 16;

/// Claims blocks and gathers what the size checks need.
struct Claimer<'a> {
    fs: &'a Fs,
    state: &'a State,
    /// Walking the bad blocks inode: its blocks may not be metadata.
    bad_blocks: bool,
    /// Inode table blocks in the bad-block list (see `Ctx::bad_itable`).
    bad_itable: &'a [u64],
    /// The bad blocks inode's blocks met so far (its list is short).
    bad_seen: Vec<u64>,
    /// Block pointers (not an extent tree): mapping blocks are in line.
    indirect: bool,
    ino: u32,
    /// Claim nothing: the resize inode's blocks are metadata (reserved GDT
    /// blocks), counted in i_blocks only.
    no_claim: bool,
    is_dir: bool,
    blocks: u64,
    /// Of `blocks`, the map's own: indirect blocks, extent tree nodes.
    nodes: u64,
    last_block: Option<u64>,
    last_init: Option<u64>,
    prev_pblk: u64,
    fragmented: bool,
    dir_blocks: &'a mut Vec<DirBlock>,
    problems: &'a mut ProblemList,
    /// Next logical block expected in a directory (holes are reported).
    dir_next: u64,
    holes: u32,
    /// A repair's view (e2fsck -y): one past the last illegal data block
    /// of a block-mapped directory, which its pass 1 clears but still
    /// lists for pass 2 (0 when none, or when not repairing).
    cleared_end: u64,
    repairing: bool,
    budget: u64,
    /// log2 of blocks per cluster (bigalloc), and the last data block
    /// claimed as (physical, logical).
    cluster_bits: u32,
    prev: Option<(u64, u64)>,
    /// Pass 1E's statistics of the extent tree.
    tree: super::pass1e::TreeStats,
    /// Where logical block 0 is mapped.
    first_block: Option<u64>,
}

impl Claimer<'_> {
    /// One run of data blocks of a bigalloc file, as e2fsck counts it. A
    /// run whose first block sits at another offset in its cluster than
    /// its logical block, or that leaves the previous run's physical
    /// cluster in the middle of a logical cluster, breaks the cluster
    /// rules: each of its blocks is reported and claimed twice (pass 1B
    /// then looks at it). Then every cluster the run covers is claimed
    /// and counted once, but the first when the previous run already
    /// ended in it.
    fn cluster_run(&mut self, lblk: u64, pblk: u64, len: u64) {
        let bits = self.cluster_bits;
        let mask = (1u64 << bits) - 1;
        let same = |x: u64, y: u64| x >> bits == y >> bits;
        let unaligned = lblk & mask != pblk & mask
            || self
                .prev
                .is_some_and(|(pb, pl)| lblk & mask != 0 && same(lblk, pl) && !same(pblk, pb));
        if unaligned {
            for k in 0..len {
                if self.problems.len() < MAX_CLUSTER_REPORTS {
                    self.problems.push(
                        Problem::new(Code::ClusterMisaligned)
                            .ino(Ino(self.ino))
                            .num(lblk + k)
                            .blk(Blk(pblk + k)),
                    );
                }
                self.claim(pblk + k);
                self.claim(pblk + k);
            }
        }
        let last = pblk + len - 1;
        let mut c = pblk >> bits;
        if self.prev.is_some_and(|(pb, _)| same(pb, pblk)) {
            c += 1;
        }
        while c <= last >> bits {
            self.claim(c << bits);
            self.blocks += 1;
            c += 1;
        }
        self.prev = Some((last, lblk + len - 1));
    }

    /// An indirect block of the bad blocks inode that e2fsck refuses:
    /// file system metadata, or a block met before in the walk (e2fsck
    /// sees the bad blocks inode first, when only those are in use).
    /// Reported, not claimed; the walk goes on below it, as e2fsck -n's.
    fn bad_index(&mut self, b: u64) -> bool {
        let meta = self.state.block_meta.get(self.state.cluster(b));
        if !meta && !self.bad_seen.contains(&b) {
            return false;
        }
        let (e2, what) = if meta {
            (0x01004D, "file system metadata")
        } else {
            (0x010015, "a block of its own list")
        };
        self.problems.push(
            Problem::new(Code::BadBlocksInodeIndirect)
                .ino(Ino(self.ino))
                .e2fsck(e2)
                .blk(Blk(b))
                .detail(what),
        );
        true
    }

    /// Simplistic contiguity, as e2fsck's: each block must follow the
    /// previous one (the resize inode's map is scattered by design).
    fn note_position(&mut self, pblk: u64, len: u64) {
        if self.ino != inode::RESIZE_INO && self.prev_pblk != 0 && pblk != self.prev_pblk + 1 {
            self.fragmented = true;
        }
        self.prev_pblk = pblk + len.saturating_sub(1);
    }

    fn claim(&mut self, b: u64) {
        if self.no_claim {
            return;
        }
        if self.bad_blocks {
            self.bad_seen.push(b);
        }
        if self.bad_blocks && self.bad_itable.binary_search(&b).is_ok() {
            // A bad inode table block only costs the inodes in it.
            return;
        }
        if self.bad_blocks && self.state.block_meta.get(self.state.cluster(b)) {
            // A bad block inside a backup superblock or descriptor copy is
            // harmless; inside live metadata the metadata must move.
            if let Some(p) = bad_metadata(self.fs, b) {
                self.problems.push(p.ino(Ino(self.ino)));
            }
            return;
        }
        self.state.claim_block(b);
    }
}

/// What a bad block the file system's own metadata holds is, as e2fsck
/// looks for it group by group: a superblock or descriptor copy (the
/// primary's refused, a backup's a warning; with meta_bg a backup's goes
/// unreported), a bitmap (moved), and else nothing it names (a reserved
/// descriptor block: a warning). Inode table blocks are handled before.
fn bad_metadata(fs: &crate::volume::Fs, b: u64) -> Option<Problem> {
    let geo = &fs.geo;
    let descs = u64::from(geo.desc_blocks);
    for (g, gd) in (0..geo.groups).zip(&fs.gds) {
        let first = geo.group_first_block(g);
        let copy = if !geo.group_has_super(g) {
            None
        } else if b == first {
            Some((0x010019, 0x01001B, "superblock"))
        } else if b > first && b <= first + descs {
            Some((0x01001A, 0x01001C, "group descriptors"))
        } else {
            None
        };
        match copy {
            Some((primary, _, _)) if g == 0 => {
                return Some(
                    Problem::new(Code::BadBlockInMetadata)
                        .e2fsck(primary)
                        .blk(Blk(b)),
                );
            }
            Some(_) if geo.meta_bg => return None,
            Some((_, backup, what)) => {
                return Some(
                    Problem::new(Code::BadBlockInBackup)
                        .e2fsck(backup)
                        .blk(Blk(b))
                        .group(Group(g))
                        .detail(what),
                );
            }
            None => {}
        }
        for (at, e2) in [(gd.block_bitmap, 0x01000A), (gd.inode_bitmap, 0x01000B)] {
            if at == b {
                return Some(
                    Problem::new(Code::BadBlockInMetadata)
                        .e2fsck(e2)
                        .blk(Blk(b))
                        .group(Group(g)),
                );
            }
        }
    }
    Some(Problem::new(Code::BadBlockUnnamed).blk(Blk(b)))
}

impl MapVisitor for Claimer<'_> {
    fn extent_node(&mut self, level: u16, entries: u16, max: u16) {
        self.tree.node(level, entries, max);
    }

    fn data(&mut self, lblk: u64, pblk: u64, len: u64, unwritten: bool) {
        if lblk == 0 && len > 0 {
            self.first_block = Some(pblk);
        }
        let len = len.min(self.budget);
        self.budget -= len;
        self.note_position(pblk, len);
        if self.cluster_bits > 0 && !self.no_claim && !self.bad_blocks {
            if len > 0 {
                self.cluster_run(lblk, pblk, len);
            }
        } else {
            for k in 0..len {
                self.claim(pblk + k);
            }
            self.blocks += len;
        }
        let last = lblk + len.saturating_sub(1);
        self.last_block = Some(self.last_block.map_or(last, |l| l.max(last)));
        if !unwritten {
            self.last_init = Some(self.last_init.map_or(last, |l| l.max(last)));
        }
        if self.is_dir {
            if lblk > self.dir_next {
                // A gap can span billions of blocks: report the first few,
                // count the rest without walking them.
                let gap = lblk - self.dir_next;
                let shown = gap.min(16u64.saturating_sub(u64::from(self.holes)));
                for h in self.dir_next..self.dir_next + shown {
                    let mut p = Problem::new(Code::InodeDirHole).ino(Ino(self.ino)).num(h);
                    // e2fsck asks once per extent that starts past a
                    // gap whether to move it down (it names the extent's
                    // logical start); a block map's holes it finds in
                    // pass 2 only.
                    if h == self.dir_next && !self.indirect {
                        p = p.e2fsck(0x010072).blk(Blk(lblk));
                    }
                    self.problems.push(p);
                }
                self.holes = self
                    .holes
                    .saturating_add(gap.try_into().unwrap_or(u32::MAX));
            }
            for k in 0..len {
                if let Ok(l) = u32::try_from(lblk + k) {
                    self.dir_blocks.push(DirBlock {
                        pblk: Blk(pblk + k),
                        ino: Ino(self.ino),
                        lblk: LBlk(l),
                    });
                }
            }
            self.dir_next = self.dir_next.max(lblk + len);
        }
    }

    fn node(&mut self, pblk: u64) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        if self.indirect {
            // e2fsck sees indirect blocks in file order, before what they
            // map; extent tree nodes do not count for contiguity.
            self.note_position(pblk, 1);
        }
        if !(self.bad_blocks && self.bad_index(pblk)) {
            self.claim(pblk);
        }
        self.blocks += 1;
        self.nodes += 1;
    }

    fn problem(&mut self, p: Problem) {
        self.problems.push(p);
    }

    fn repeated(&mut self, blocks: u64, last_lblk: Option<u64>) {
        self.blocks += blocks;
        if let Some(last) = last_lblk {
            self.last_block = self.last_block.max(Some(last));
            self.last_init = self.last_init.max(Some(last));
        }
    }

    fn cleared_data(&mut self, lblk: u64) {
        if self.repairing && self.is_dir && self.indirect {
            self.cleared_end = self.cleared_end.max(lblk.saturating_add(1));
        }
    }

    fn done(&self) -> bool {
        self.budget == 0
    }

    fn on_metadata(&self, pblk: u64) -> bool {
        // The MMP block is in `block_meta` but not in e2fsck's map of
        // critical metadata; the bad blocks inode has rules of its own.
        !self.bad_blocks
            && !self.no_claim
            && pblk != self.fs.sb.mmp_block
            && self.state.block_meta.get(self.state.cluster(pblk))
    }

    /// A regular file's claims are plain claims, in any order; what else
    /// it keeps is sums, maxima and the ends of its runs.
    fn splittable(&self) -> bool {
        !self.no_claim
            && !self.bad_blocks
            && !self.indirect
            && !self.is_dir
            && self.cluster_bits == 0
            && self.ino != inode::RESIZE_INO
    }

    fn absorb(&mut self, s: &Subtree) -> bool {
        if s.blocks >= self.budget {
            return false;
        }
        self.budget -= s.blocks;
        self.blocks += s.blocks;
        if let Some(first) = s.first_pblk {
            self.note_position(first, 1);
            self.fragmented |= s.fragmented;
            self.prev_pblk = s.last_pblk;
        }
        let max = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        self.last_block = max(self.last_block, s.last_block);
        self.last_init = max(self.last_init, s.last_init);
        self.tree.add(&s.tree);
        for &(w, bits) in &s.claims.words {
            self.state.claim_word(w, bits);
        }
        for &b in &s.claims.again {
            self.state.claim_block(b);
        }
        true
    }
}

/// Walks the block map of `ino` the way pass 1 does (pass 1B repeats it):
/// nothing for inline data or inodes without a map, the extent tree when
/// the file system and the inode use extents, block pointers otherwise.
/// Returns whether a map was walked.
pub(crate) fn walk_map<V: MapVisitor>(
    ctx: &Ctx,
    ino: u32,
    inode: &Inode,
    bad_blocks: bool,
    scratch: &mut Scratch,
    v: &mut V,
) -> bool {
    // Only where a file's count nears its limit does what its xattrs
    // charge matter: the block, if any, is counted as pass 1 counts it.
    let charged = u64::from(inode.acl_block(ctx.bit64) != 0);
    walk_map_of(ctx, ino, (inode, true, charged), bad_blocks, scratch, v)
}

/// [`walk_map`] of an inode whose own checksum holds or not (`csum_ok`),
/// with `charged` blocks counted before its map (its xattrs').
fn walk_map_of<V: MapVisitor>(
    ctx: &Ctx,
    ino: u32,
    (inode, csum_ok, charged): (&Inode, bool, u64),
    bad_blocks: bool,
    scratch: &mut Scratch,
    v: &mut V,
) -> bool {
    let fs = ctx.fs;
    if ctx.inline_data && inode.has_flag(flags::INLINE_DATA) {
        return false;
    }
    if !bad_blocks && !has_valid_blocks(inode) {
        return false;
    }
    // e2fsck's walk of a block map follows EXTENTS_FL whatever the
    // feature, and under a root that is no extent header finds no block
    // and no error (seed fz36, damage 18836: not the garbage pointers).
    if !bad_blocks && inode.has_flag(flags::EXTENTS) && !extent_mapped(ctx, inode) {
        return false;
    }
    if extent_mapped(ctx, inode) && !bad_blocks {
        let bs = u64::from(fs.geo.block_size);
        // Unsigned like e2fsck's: an empty file has every block past EOF
        // wrapped to "no block is past EOF".
        let eof_block = inode.size.div_ceil(bs).wrapping_sub(1);
        let info = MapInfo {
            ino,
            is_dir: inode.is_dir(),
            eof_block,
            csum_seed: ctx
                .csum
                .then(|| inode::inode_csum_seed(fs.csum_seed, Ino(ino), inode.generation)),
            large_dir: ctx.large_dir,
            read_only: ctx.read_only,
            inode_unreadable: ctx.read_only && !csum_ok,
        };
        if ctx.split > 1 && v.splittable() {
            blockmap::walk_extents_split(fs, info, &inode.block, scratch, v, ctx.split);
        } else {
            blockmap::walk_extents(fs, info, &inode.block, scratch, v);
        }
    } else {
        let limit = if bad_blocks {
            None
        } else {
            blockmap::indirect_limit(fs, inode.is_dir(), inode.is_symlink(), ctx.large_dir)
        };
        // A regular file's blocks are counted toward e2fsck's limit; not
        // on bigalloc, where it counts clusters, nor in the resize
        // inode's map of reserved blocks.
        let count_from =
            (inode.is_reg() && !bad_blocks && ino != inode::RESIZE_INO && fs.geo.cluster_bits == 0)
                .then_some(charged);
        let failed = blockmap::walk_indirect_limited(
            fs,
            ino,
            &inode.block_ptrs(),
            (limit, count_from),
            ctx.read_only,
            scratch,
            v,
        );
        if failed && ctx.read_only {
            // Where e2fsck -n gives up (`stop_at_illegal_indirect`).
            v.problem(Problem::new(Code::StoppedAtIllegalIndirect).ino(Ino(ino)));
        }
    }
    true
}

/// Pass 1E's offer for the extent tree just walked, as e2fsck makes it at
/// the end of the walk. Not for a directory `-D` rebuilds anyway. A tree
/// too deep (`InodeExtentTooDeep`) is offered it too, as by e2fsck when
/// it declines that problem's forced rebuild (-n, -p). Not for a root
/// whose header is refused: e2fsck walks no tree then, so has none to
/// judge.
fn offer_pass1e(ctx: &Ctx, c: &mut InodeCheck, inode: &Inode, tree: &super::pass1e::TreeStats) {
    if !ctx.optimize_extents || (inode.is_dir() && ctx.rehash_dirs) {
        return;
    }
    if blockmap::header_problem(&inode.block, inode.block.len()).is_some() {
        return;
    }
    let bs = ctx.fs.geo.block_size;
    let depth = crate::fs::extent::parse_header(&inode.block).depth;
    if let Some(p) = tree.problem(c.ino, depth, bs) {
        c.report(p);
    }
}

/// Where block 0 of an inode whose map is not walked (its mode has no
/// blocks) lies, as e2fsck's lookup finds it to judge an index flag on it.
fn unwalked_block0(ctx: &Ctx, w: &mut Worker, inode: &Inode) -> Option<u64> {
    if inode.has_flag(flags::EXTENTS) {
        first_extent_block(ctx, w, inode)
    } else {
        Some(u64::from(inode.block_ptr(0)))
    }
}

/// e2fsck's first look at an htree directory (pass 1): block 0 must be
/// mapped and hold a dx_root whose info fields are sane. The problem comes
/// with the e2fsck code of its kind.
fn htree_root_problem(
    ctx: &Ctx,
    w: &mut Worker,
    inode: &Inode,
    root: Option<u64>,
) -> Option<(u32, String)> {
    let fs = ctx.fs;
    if inode.has_flag(flags::INLINE_DATA) {
        return Some((0x010049, detail::INLINE_INDEX.into()));
    }
    let Some(blk) = root.filter(|&b| b != 0) else {
        return Some((0x010049, "block 0 is not mapped".into()));
    };
    if !fs.geo.block_in_fs(blk) {
        return Some((
            0x010049,
            format!("block 0 maps to {blk}, outside the file system"),
        ));
    }
    if fs.read_block_into(blk, &mut w.block).is_err() {
        return Some((0x010049, "block 0 cannot be read".into()));
    }
    let b = &w.block;
    // dx_root_info follows the '.' and '..' entries (24 bytes).
    let reserved_zero = u32::from_le_bytes([b[24], b[25], b[26], b[27]]);
    let hash_version = b[28];
    let info_length = b[29];
    let levels = b[30];
    let flags = b[31];
    if reserved_zero != 0 || info_length < 8 {
        return Some((0x010049, "bad dx_root info".into()));
    }
    // legacy, half_md4, tea, siphash (the unsigned variants are never stored)
    if !matches!(hash_version, 0 | 1 | 2 | 6) {
        return Some((0x01004A, format!("unsupported hash version {hash_version}")));
    }
    // Entries of an encrypted casefolded directory carry their hash (a
    // keyed siphash); no other directory may use it.
    let hash_in_dirent = inode.has_flag(flags::ENCRYPT) && inode.has_flag(flags::CASEFOLD);
    if hash_in_dirent && hash_version != 6 {
        return Some((
            0x01008D,
            "an encrypted casefolded directory needs siphash".into(),
        ));
    }
    if !hash_in_dirent && hash_version == 6 {
        return Some((0x01008E, "siphash on a directory that cannot use it".into()));
    }
    if flags & 1 != 0 {
        return Some((0x01004B, "incompatible htree root node flag".into()));
    }
    if levels > 3 {
        return Some((0x01004C, format!("tree depth {levels} is too big")));
    }
    if levels > 2 && !ctx.large_dir {
        let blockbits = u64::from(fs.geo.block_size.trailing_zeros());
        let idx_pb = 1u64 << (blockbits - 3);
        let max = (idx_pb - 1) * (idx_pb - 2);
        if inode.size < max << blockbits && inode.blocks_raw < max << (blockbits - 9) {
            return Some((0x01004C, format!("tree depth {levels} is too big")));
        }
    }
    None
}

/// e2fsck's limit on i_size for a block-mapped file.
fn max_indirect_size(bs: u64) -> u64 {
    let apb = bs / 4;
    (12 + apb + apb * apb + apb * apb * apb).saturating_mul(bs)
}

/// The quota ids of an inode: uid, gid and the project id, which exists
/// only when i_extra_isize covers it.
fn quota_ids(raw: &[u8], inode: &Inode) -> [u32; QUOTA_TYPES] {
    [inode.uid, inode.gid, inode::projid(raw)]
}

/// What walking an inode's block map found, for the size and count checks.
struct MapWalk {
    /// Blocks (clusters with bigalloc) the map claims, its own included.
    mapped: u64,
    last_block: Option<u64>,
    last_init: Option<u64>,
    is_dir: bool,
    inline: bool,
    /// A directory whose i_size is that of its inline data.
    sized_inline: bool,
    extent_mapped: bool,
    /// The map was walked (an inode whose mode has blocks).
    walked: bool,
}

/// e2fsck's look at an index root in pass 1, once the map is walked:
/// `walked`, `first_block` (the walk's first mapped block) and where this
/// inode's directory blocks start in the unit's list.
fn check_index_root(
    ctx: &Ctx,
    w: &mut Worker,
    c: &mut InodeCheck,
    inode: &Inode,
    (walked, first_block, dir_blocks_start): (bool, Option<u64>, usize),
) {
    let ino = c.ino;
    let is_dir = inode.is_dir();
    // libext2fs maps no block of an inode flagged inline: e2fsck
    // finds no root block for its index.
    let root = if inode.has_flag(flags::INLINE_DATA) {
        None
    } else if is_dir {
        c.out.dir_blocks[dir_blocks_start..]
            .iter()
            .find(|d| d.ino == Ino(ino) && d.lblk == LBlk(0))
            .map(|d| d.pblk.0)
    } else if walked {
        first_block
    } else {
        unwalked_block0(ctx, w, inode)
    };
    let lookup_fails = path_csum_bad(ctx, w, (ino, c.csum_ok), inode);
    match lookup_fails
        .then(|| (0x010049, detail::PATH_CSUM.to_string()))
        .or_else(|| htree_root_problem(ctx, w, inode, root))
    {
        Some((e2, why)) => c.report(
            Problem::new(Code::HtreeRootInvalid)
                .ino(Ino(ino))
                .e2fsck(e2)
                .detail(why),
        ),
        // e2fsck counts an index it keeps, of a size that needs
        // large_dir, before it judges the size against the blocks.
        None if inode.size >= 0x8000_0000 => c.out.stats.large_dirs += 1,
        None => {}
    }
}

/// Did the walk of this inode's extent tree fail as e2fsck's does: a
/// node it could not read (named 0x010057), among the problems from
/// `start` on?
fn walk_failed(c: &InodeCheck, start: usize) -> bool {
    (start..c.out.problems.len()).any(|k| {
        c.out.problems.get(k).is_some_and(|p| {
            p.code == Code::InodeBlockBitmapUnreadable && p.e2fsck_code() == Some(0x010057)
        })
    })
}

/// A repair's view of a block-mapped directory whose illegal blocks
/// (cleared) reach past its last legal one, up to `end`: e2fsck's pass 2
/// meets them as holes, unless the inode had too many to be kept.
fn note_cleared_tail(c: &mut InodeCheck, end: u64) {
    let ino = Ino(c.ino);
    let cleared = c
        .out
        .problems
        .iter_where(|code| code == Code::InodeTooManyIllegalBlocks)
        .any(|(_, p)| p.args().ino == Some(ino));
    if let (false, Ok(end)) = (cleared, u32::try_from(end)) {
        c.out.dir_tails.push((ino, end));
    }
}

/// Walks the inode's blocks, claims them, and checks i_size and i_blocks.
/// `ibody` is what the inode's in-inode EA-inode entries charge to it.
fn check_blocks(
    ctx: &Ctx,
    w: &mut Worker,
    c: &mut InodeCheck,
    raw: &[u8],
    inode: &Inode,
    bad_blocks: bool,
    ibody: EaCharge,
) {
    let fs = ctx.fs;
    let ino = c.ino;
    // The xattr block counts in i_blocks only if it turns out valid, which
    // is known after the scan (blocks are validated once, in order). The
    // bad blocks inode's is never looked at (e2fsck walks that inode's
    // list alone): its i_file_acl only makes the inode invalid.
    let acl = if bad_blocks {
        None
    } else {
        check_file_acl(ctx, c, inode)
    };

    let is_dir = inode.is_dir();
    let extent_mapped = extent_mapped(ctx, inode);
    // Declined (-n), each of e2fsck's questions about an index leads to
    // the next: not a directory, no dir_index, then its root judged.
    let index = inode.has_flag(flags::INDEX);
    if index && !is_dir {
        c.report(Problem::new(Code::InodeIndexNotDir).ino(Ino(ino)));
    }
    if index && !ctx.dir_index && (is_dir || ctx.read_only) {
        c.report(Problem::new(Code::InodeIndexNoFeature).ino(Ino(ino)));
    }
    if index && is_dir && ctx.dir_index {
        c.set_flag(iflag::HTREE);
    }

    let mut claimer = Claimer {
        fs,
        state: ctx.state,
        bad_blocks,
        bad_itable: &ctx.bad_itable,
        bad_seen: Vec::new(),
        indirect: !extent_mapped || bad_blocks,
        ino,
        no_claim: ino == inode::RESIZE_INO,
        is_dir,
        blocks: 0,
        nodes: 0,
        last_block: None,
        last_init: None,
        prev_pblk: 0,
        fragmented: false,
        dir_blocks: &mut c.out.dir_blocks,
        problems: &mut c.out.problems,
        dir_next: 0,
        holes: 0,
        cleared_end: 0,
        repairing: !ctx.read_only,
        budget: fs.geo.blocks_count,
        cluster_bits: fs.geo.cluster_bits,
        prev: None,
        tree: Default::default(),
        first_block: None,
    };
    let inline = inline_mapped(ctx, w, raw, inode);
    let dir_blocks_start = claimer.dir_blocks.len();
    let problems_start = claimer.problems.len();
    let charged = ibody.blocks + u64::from(acl.is_some());
    let walked = walk_map_of(
        ctx,
        ino,
        (inode, c.csum_ok, charged),
        bad_blocks,
        &mut w.scratch,
        &mut claimer,
    );
    if walked && !extent_mapped {
        claimer.last_init = claimer.last_block;
    }
    if ino == inode::RESIZE_INO && walked {
        // Only the double indirect block is the inode's own; what it maps
        // are reserved GDT blocks, already marked as metadata. A mode
        // that maps no block (a cleared one) leaves it free, as e2fsck's
        // map walk never reaches it then.
        let dind = u64::from(inode.block_ptrs()[13]);
        if fs.geo.block_in_fs(dind) {
            ctx.state.claim_block(dind);
        }
    }
    c.mapped = true;
    let Claimer {
        blocks: mapped,
        nodes,
        last_block,
        last_init,
        fragmented,
        tree,
        first_block,
        cleared_end,
        dir_next,
        ..
    } = claimer;
    if cleared_end > dir_next {
        note_cleared_tail(c, cleared_end);
    }
    if walked && extent_mapped && !bad_blocks {
        offer_pass1e(ctx, c, inode, &tree);
    }
    if ctx.read_only && extent_mapped && walk_failed(c, problems_start) {
        // Where e2fsck -n gives up (`stop_at_illegal_indirect`).
        c.report(Problem::new(Code::StoppedAtUnreadableExtent).ino(Ino(ino)));
    }
    if index && ((is_dir && ctx.dir_index) || ctx.read_only) {
        check_index_root(ctx, w, c, inode, (walked, first_block, dir_blocks_start));
    }
    if extent_mapped {
        c.out.stats.extent_files += 1;
        let depth = crate::fs::extent::parse_header(&inode.block).depth;
        c.out.stats.extent_depths[usize::from(depth).min(4)] += 1;
    } else if walked && user_inode(&fs.geo, ino) {
        // e2fsck counts the files' maps, not those of the journal or the
        // other reserved inodes.
        let ptrs = inode.block_ptrs();
        for (n, &p) in c
            .out
            .stats
            .ind_inodes
            .iter_mut()
            .zip(&ptrs[DIRECT_BLOCKS..])
        {
            *n += u64::from(p != 0);
        }
    }
    if bad_blocks {
        // e2fsck counts the listed blocks, not the indirect blocks that
        // list them.
        c.out.stats.bad_blocks += mapped - nodes;
        return;
    }
    if inline {
        c.set_flag(iflag::INLINE);
        c.out.stats.inline_files += 1;
    }

    // e2fsck excuses a directory flagged inline from having blocks, and
    // sizes it by its inline data, with or without the feature: a
    // repair sets the feature back rather than clear it.
    let flagged_inline = inode.has_flag(flags::INLINE_DATA);
    if is_dir && !flagged_inline && mapped == 0 {
        c.report(
            Problem::new(Code::InodeBadSize)
                .ino(Ino(ino))
                .e2fsck(0x010006)
                .num(inode.size)
                .detail(detail::ZERO_LENGTH_DIR),
        );
    }
    if fragmented && mapped < u64::from(fs.geo.blocks_per_group) {
        c.out.stats.fragmented += 1;
        c.out.stats.fragmented_dirs += u64::from(is_dir);
    }
    let walk = MapWalk {
        mapped,
        last_block,
        last_init,
        is_dir,
        inline,
        sized_inline: is_dir && flagged_inline,
        extent_mapped,
        walked,
    };
    check_size(ctx, w, c, raw, inode, &walk);
    check_iblocks(ctx, c, raw, inode, &walk, acl, ibody);
}

/// Is `ino` a file as e2fsck counts files: the root or an inode from
/// s_first_ino on, not one of the other reserved inodes? Only those can be
/// named by a directory entry that pass 2 does not reject first, so what
/// e2fsck leaves to pass 2's judgement of bad inodes is never asked about
/// the others; nor are their maps, quota or bigalloc block maps counted.
fn user_inode(geo: &crate::fs::geometry::Geometry, ino: u32) -> bool {
    ino >= geo.first_ino || ino == inode::ROOT_INO
}

/// The inode's xattr block (i_file_acl): its number when it is to be
/// checked (later, in block order), None when there is none or it is
/// invalid (reported).
fn check_file_acl(ctx: &Ctx, c: &mut InodeCheck, inode: &Inode) -> Option<u64> {
    let acl = inode.acl_block(ctx.bit64);
    if acl == 0 {
        return None;
    }
    if !ctx.ext_attr || !ctx.fs.geo.block_in_fs(acl) {
        if !user_inode(&ctx.fs.geo, c.ino) {
            // e2fsck only marks the inode bad here; its pass 2 judges a
            // bad inode when an entry names it, and none names these.
            return None;
        }
        // e2fsck: "should be zero" without the feature, "invalid"
        // with it.
        let e2 = if ctx.ext_attr { 0x020032 } else { 0x02000E };
        c.bad(
            Problem::new(Code::InodeFileAcl)
                .ino(Ino(c.ino))
                .e2fsck(e2)
                .blk(Blk(acl)),
        );
        // Declined, the block stays: e2fsck -n then also finds it out
        // of range.
        if !ctx.ext_attr && ctx.read_only && !ctx.fs.geo.block_in_fs(acl) {
            c.bad(
                Problem::new(Code::InodeFileAcl)
                    .ino(Ino(c.ino))
                    .e2fsck(0x020032)
                    .blk(Blk(acl)),
            );
        }
        None
    } else {
        c.out.xrefs.push((acl, c.ino, inode.generation));
        Some(acl)
    }
}

/// i_size against the mapped blocks (symlinks are checked on their own).
fn check_size(
    ctx: &Ctx,
    w: &mut Worker,
    c: &mut InodeCheck,
    raw: &[u8],
    inode: &Inode,
    walk: &MapWalk,
) {
    let bs = u64::from(ctx.fs.geo.block_size);
    let size = inode.size;
    let nlast = walk.last_block.map_or(0, |l| l + 1);
    // What i_size should be: the mapped blocks, or for an inline
    // directory the inline data (0 when it cannot be sized, as e2fsck).
    let mut want_size = nlast * bs;
    let bad_size = if walk.is_dir {
        if walk.sized_inline {
            let sz = xattr::inline_data_size(ctx.fs, raw, inode, &mut w.block, false);
            want_size = *sz.as_ref().unwrap_or(&0);
            sz.is_err() || want_size != size
        } else if size & (bs - 1) != 0 {
            true
        } else {
            let nblock = size / bs;
            nblock > nlast || (nblock < nlast && nlast - nblock > ctx.prealloc_dir_blocks)
        }
    } else if walk.last_init.is_some_and(|l| size < l.saturating_mul(bs))
        && !inode.has_flag(flags::VERITY)
    {
        true
    } else if !walk.extent_mapped {
        size > max_indirect_size(bs)
    } else {
        size > (1u64 << (32 + bs.trailing_zeros())) - 1
    };
    if bad_size && !inode.is_symlink() {
        c.report(
            Problem::new(Code::InodeISize)
                .ino(Ino(c.ino))
                .num(size)
                .num2(want_size),
        );
    }
    if inode.is_reg() && size >= 0x8000_0000 {
        c.out.stats.large_files += 1;
    }
}

/// i_blocks against the blocks counted, and the quota charge: both wait
/// for the xattr block's verdict when the inode has one.
fn check_iblocks(
    ctx: &Ctx,
    c: &mut InodeCheck,
    raw: &[u8],
    inode: &Inode,
    walk: &MapWalk,
    acl: Option<u64>,
    ibody: EaCharge,
) {
    let fs = ctx.fs;
    let ino = c.ino;
    let bs = u64::from(fs.geo.block_size);
    // Values kept in EA inodes count in their owner's i_blocks.
    let blocks = ibody.blocks + walk.mapped;
    // i_blocks: 512-byte units, or file system blocks with HUGE_FILE;
    // with bigalloc what was counted are clusters.
    let huge = ctx.huge_file && inode.has_flag(flags::HUGE_FILE);
    let unit = fs.geo.i_blocks_per_cluster(huge);
    let expect = blocks * unit;
    let stored = if ctx.huge_file {
        inode.blocks_raw
    } else {
        inode.blocks_raw & 0xFFFF_FFFF
    };
    let hi_bad = huge && inode.blocks_raw >> 32 != 0;
    // e2fsck charges quota for the blocks it counted (not i_blocks), for
    // every inode but the reserved ones, the project quota file, the
    // orphan file and EA inodes (their values are charged to the inodes
    // owning the xattrs).
    let quota = (ctx.quota
        && user_inode(&fs.geo, ino)
        && ino != fs.sb.prj_quota_inum
        && ino != fs.sb.orphan_file_inum
        && !inode.has_flag(flags::EA_INODE))
    .then(|| (quota_ids(raw, inode), blocks, 1 + ibody.inodes));
    if let Some(acl) = acl {
        c.out.pending_iblocks.push(PendingIBlocks {
            ino,
            acl,
            expect,
            unit,
            stored,
            hi_bad,
            quota,
        });
    } else if expect != stored || hi_bad {
        c.report(
            Problem::new(Code::InodeIBlocks)
                .ino(Ino(ino))
                .num(stored)
                .num2(expect),
        );
    }
    // Block maps cannot express clusters: e2fsck rebuilds regular files
    // and directories as extent trees (symlinks are never rewritten). It
    // asks whenever the feature is set, clusters of one block included.
    if fs.sb.has_ro_compat(ro_compat::BIGALLOC)
        && (inode.is_reg() || walk.is_dir)
        && !walk.extent_mapped
        && !walk.inline
        && walk.mapped > 0
        && user_inode(&fs.geo, ino)
    {
        c.report(Problem::new(Code::InodeBigallocBlockMap).ino(Ino(ino)));
    } else if ctx.convert_bmap
        && walk.walked
        && !walk.extent_mapped
        && user_inode(&fs.geo, ino)
        && inode.links_count > 0
    {
        // -E bmap2extent: every block map e2fsck's pass 1E rebuilds (it
        // skips an inode without links), symlinks with a block included.
        c.report(Problem::new(Code::InodeBlockMapToExtents).ino(Ino(ino)));
    }
    if let (None, Some((ids, blocks, inodes))) = (acl, quota) {
        // `blocks` are clusters with bigalloc: e2fsck charges cluster size.
        c.out.quota.get_or_insert_with(QuotaUsage::default).charge(
            ids,
            blocks.saturating_mul(bs << fs.geo.cluster_bits),
            inodes,
        );
    }
}
