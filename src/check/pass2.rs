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
//! Relies on pass 1 for `dir_blocks` (as pass 1 merges them), `dirs`,
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
use super::htree_check;
use super::problem::{Code, Problem, ProblemList};
use super::state::{DirBlock, State, iflag};
use crate::engine::{Control, ScratchArena, ScratchSlice, Threads, par_map};
use crate::fs::bytes::le32;
use crate::fs::casefold;
use crate::fs::dir_entry::{inode_at, rec_len_at};
use crate::fs::group_desc::BG_INODE_UNINIT;
use crate::fs::htree;
use crate::fs::inode::{self, ROOT_INO, field};
use crate::fs::num::{Blk, Ino, LBlk};
use crate::fs::superblock::{compat, incompat, ro_compat};
use crate::fs::xattr;
use crate::narrow;
use crate::volume::stage::Blocks;
use crate::volume::{Allocator, Fs};
use std::sync::RwLock;

/// The detail of `FeatureLargeFiles` on a revision 0 file system, where
/// e2fsck also asks to make the revision dynamic (the repair of the
/// feature does).
pub const LARGE_FILES_REV0: &str = "on a revision 0 file system";

/// Directory blocks per work unit: big enough for long sequential reads,
/// small enough to spread a few large directories over all threads.
const UNIT_BLOCKS: usize = 32;
/// Directories per unit when reading inodes (generations, inline data).
const INODE_UNIT: usize = 512;
/// In-inode xattr area magic.
/// Size of i_block, the first part of an inline directory.
const INLINE_IBLOCK: usize = field::I_BLOCK_LEN;

pub(crate) struct StateTargets<'a> {
    st: &'a State,
    fs: &'a Fs,
    /// Inode table blocks listed as bad (sorted): their inodes cannot be read.
    bad_itable: Vec<u64>,
    /// While pass 1 runs: the encryption policy ids merged so far (sorted
    /// by inode), instead of `State::enc_policy`.
    policies: Option<&'a RwLock<Vec<(u32, u32)>>>,
}

impl<'a> StateTargets<'a> {
    /// Targets for units checked while pass 1 runs (`policies`: see the
    /// field).
    pub fn new(fs: &'a Fs, st: &'a State, policies: Option<&'a RwLock<Vec<(u32, u32)>>>) -> Self {
        StateTargets {
            st,
            fs,
            bad_itable: bad_itable_blocks(fs),
            policies,
        }
    }

    /// The encryption policy id of `ino` (merged already).
    pub fn policy_of(&self, ino: Ino) -> Option<u32> {
        Targets::policy(self, ino)
    }
}

/// `StateTargets` for a unit checked while pass 1 still runs: before
/// anything about an inode is read, `gate(ino)` returns only once pass 1
/// has merged the unit holding it, so every verdict is the one a check
/// after pass 1 would reach.
pub(crate) struct Gated<'a, G: Fn(Ino)> {
    pub base: &'a StateTargets<'a>,
    pub gate: G,
}

impl<G: Fn(Ino)> Targets for Gated<'_, G> {
    fn info(&self, ino: Ino) -> TargetInfo {
        (self.gate)(ino);
        self.base.info(ino)
    }
    fn add_link(&self, ino: Ino) {
        self.base.add_link(ino);
    }
    fn policy(&self, ino: Ino) -> Option<u32> {
        (self.gate)(ino);
        self.base.policy(ino)
    }
}

impl Targets for StateTargets<'_> {
    fn info(&self, ino: Ino) -> TargetInfo {
        let s = self.st;
        let in_bad_block = !self.bad_itable.is_empty()
            && self
                .fs
                .inode_location(ino)
                .is_some_and(|(b, _)| self.bad_itable.binary_search(&b).is_ok());
        TargetInfo {
            used: s.inode_used.get(ino),
            dir: s.inode_dir.get(ino),
            reg: s.is_reg(ino),
            bad: s.has_iflag(ino, iflag::BAD),
            in_bad_block,
            ftype: s.ftype(ino),
            ea_inode: s.has_iflag(ino, iflag::EA_INODE),
            csum_failed: s.has_iflag(ino, iflag::CSUM_FAILED),
        }
    }
    fn add_link(&self, ino: Ino) {
        self.st.links_seen.incr(ino);
    }
    fn policy(&self, ino: Ino) -> Option<u32> {
        let Some(p) = self.policies else {
            return self.st.policy(ino);
        };
        if !self.st.has_iflag(ino, iflag::ENCRYPTED) {
            return None;
        }
        let p = p.read().unwrap_or_else(|e| e.into_inner());
        p.binary_search_by_key(&ino.get(), |&(i, _)| i)
            .ok()
            .map(|k| p[k].1)
    }
}

/// Collects the data blocks of `blocks` that fall in an inode table.
struct BadItable<'a> {
    fs: &'a Fs,
    out: Vec<u64>,
}

impl MapVisitor for BadItable<'_> {
    fn data(&mut self, _lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        let per = u64::from(self.fs.geo.inode_table_blocks);
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
    let Ok(raw) = fs.read_inode_raw(Ino::BAD) else {
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

/// `repairing`: see `hidden_files`.
pub fn fs_params(fs: &Fs, repairing: bool) -> FsParams {
    let sb = &fs.sb;
    // e2fsck reads the marks whatever the features say: without group
    // checksums they are wrong (pass 0 clears them when it may), and -n
    // leaves them for pass 2 to trip on.
    // The first unused inode is computed as e2fsck computes it, in 32-bit
    // unsigned arithmetic: a mark larger than the group wraps below the
    // group (every inode of it unused) or, past inode 0, to the top (none
    // unused).
    let ipg = fs.geo.inodes_per_group;
    let groups = fs
        .gds
        .iter()
        .enumerate()
        .map(|(g, gd)| {
            let base = narrow::sat32(g as u64).wrapping_mul(ipg);
            let first = base
                .wrapping_add(1)
                .wrapping_add(ipg)
                .wrapping_sub(gd.itable_unused);
            let first_unused = u64::from(first).saturating_sub(u64::from(base) + 1);
            GroupInodes {
                inode_uninit: gd.has_flag(BG_INODE_UNINIT),
                first_unused: narrow::sat32(first_unused.min(u64::from(ipg))),
            }
        })
        .collect();
    FsParams {
        bs: fs.block_size(),
        inodes_count: fs.geo.inodes_count,
        first_ino: fs.geo.first_ino,
        hidden: hidden_files(fs, repairing),
        inodes_per_group: fs.geo.inodes_per_group,
        // As pass 0 left it: a repair clears the Hurd's filetype feature
        // there (`superblock::hurd_filetype`), -n keeps it.
        filetype: sb.has_incompat(incompat::FILETYPE),
        metadata_csum: sb.has_ro_compat(ro_compat::METADATA_CSUM),
        largedir: sb.has_incompat(incompat::LARGEDIR),
        inline_data: sb.has_incompat(incompat::INLINE_DATA),
        hash_seed: sb.hash_seed,
        unsigned_hash: sb.unsigned_hash(),
        strict_names: sb.has_incompat(incompat::CASEFOLD)
            && sb.encoding_flags & casefold::ENCODING_STRICT != 0,
        repairing,
        groups,
    }
}

/// The quota files and the orphan file, by the superblock, where their
/// feature is on (without it, pass 0 reports a field naming a linked
/// inode: `SbInodeFieldNoFeature`); zero elsewhere. A repair leaves the
/// user and group files alone: it moves those `quota::visible` finds to
/// their reserved inodes before the passes, as e2fsck does, and writes
/// the others' quota anew in their reserved inodes (where e2fsck's
/// rewrite points the field too), after which no entry names a quota
/// file; rejected here, a file linked again in /lost+found would still
/// be named by the field in the round's re-check.
fn hidden_files(fs: &Fs, repairing: bool) -> [u32; 4] {
    let sb = &fs.sb;
    // e2fsck -n rejects an entry naming any of the fields, feature or not.
    let quota = sb.has_ro_compat(ro_compat::QUOTA) || !repairing;
    let orphan = sb.has_compat(compat::ORPHAN_FILE) || !repairing;
    let keep = |on: bool, ino: u32| {
        if on && ino >= fs.geo.first_ino {
            ino
        } else {
            0
        }
    };
    [
        keep(quota && !repairing, sb.usr_quota_inum),
        keep(quota && !repairing, sb.grp_quota_inum),
        keep(quota, sb.prj_quota_inum),
        keep(orphan, sb.orphan_file_inum),
    ]
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

/// How pass 2 ends.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// `dir_blocks` is kept for the repairs.
    Repair,
    /// `dir_blocks` is dropped; `stop_before`: a first block where the
    /// check stops (`stops::dir_without_info`), the problems ending with
    /// those of the blocks checked before it.
    ReadOnly { stop_before: Option<DirBlock> },
}

/// Pass 2 after pass 1 (and 1B): what needs every directory block
/// checked. `outs`: the units checked while pass 1 ran, in the order they
/// were formed. Their problems are put back in e2fsck's block order (with
/// dir_index first blocks, then the others, each sorted by physical
/// block, as if checked in that order); holes,
/// inline directories, parents and second links, htree structure and
/// large_file follow as before. `counts`: what `Units2` gathered.
pub(crate) fn finish(
    fs: &Fs,
    state: &mut State,
    outs: Vec<UnitOut2>,
    mut counts: DirCounts,
    run: Finish,
    threads: Threads,
    ctl: &Control,
) -> ProblemList {
    let stop_before = match run {
        Finish::Repair => None,
        Finish::ReadOnly { stop_before } => stop_before,
    };
    if run != Finish::Repair {
        keep_rebuilt_dir_blocks(state, &outs);
    }
    let fsp = fs_params(fs, run == Finish::Repair);
    let st: &State = state;
    let mut problems = ProblemList::new();
    let mut alloc = Allocator::new(fs, &st.block_used);
    find_holes(
        &fsp,
        &mut counts,
        &mut |d| hole_block(fs, &mut alloc, d),
        &mut problems,
    );

    let cut = block_order_problems(fs, &outs, stop_before, &mut problems);
    let targets = StateTargets::new(fs, st, None);
    let inline_dirs = inline_table(fs, &fsp, st, threads, ctl);
    let inline_sinks = check_inline_dirs(fs, &fsp, st, &inline_dirs, &targets, threads, ctl);
    drop(inline_dirs);
    let inline_outs: Vec<UnitOut2> = inline_sinks
        .into_iter()
        .map(|mut s| {
            let p = std::mem::take(&mut s.problems);
            problems.append_range(&p, 0..p.mark());
            UnitOut2::compact(s, Vec::new())
        })
        .collect();
    // e2fsck's rule: an entry may not name an inode that xattrs refer to
    // for their values (an EA_INODE_FL inode no xattr uses is pass 4's).
    if problems.codes().any(|c| c == Code::DirEntryEaInode) {
        problems.retain(|p| {
            p.code != Code::DirEntryEaInode
                || p.args()
                    .num
                    .is_some_and(|n| st.ea_refs(Ino(narrow::sat32(n))) > 0)
        });
    }

    // What follows depends on no order: parents are decided by sorted
    // keys, '..' comes from block 0 only, htree records are sorted.
    let all: Vec<&UnitOut2> = outs.iter().chain(inline_outs.iter()).collect();
    // The htrees first, reported after the links: the block counts are
    // gone before merge_links and the tree of paths add theirs (the peak
    // of the check is in this function).
    let mut htree_probs = ProblemList::new();
    verify_htrees(&counts, &all, run != Finish::Repair, &mut htree_probs);
    drop(counts);
    let (dotdot, lf, link_probs, mut named_by) = merge_links(st, &all);
    problems.extend(link_probs);
    problems.append(htree_probs);
    problems.extend(large_file_problem(fs, st));

    // The names the tree of paths keeps, taken out so that all of pass
    // 2's results go before the tree copies the directory lists.
    let (ends, names) = take_parents_and_names(st, &all, &mut named_by);
    let mut parent = named_by;
    if let Some(r) = dir_index_of(st, Ino::ROOT) {
        parent[r] = ROOT_INO;
    }
    let mut later_dotdots = Vec::new();
    let mut unreadable = Vec::new();
    let mut before_later = Vec::new();
    for r in all.iter().filter_map(|o| o.rest.as_deref()) {
        later_dotdots.extend_from_slice(&r.sink.later_dotdots);
        before_later.extend_from_slice(&r.sink.before_later);
        unreadable.extend_from_slice(&r.sink.unreadable);
    }
    drop(all);
    drop(outs);
    drop(inline_outs);
    // Thousands of small allocations freed: their heap pages go back
    // before the tree's copies are made.
    crate::engine::memory::release_free();
    // In place: Ino is a u32.
    state.dir_parent = parent.into_iter().map(Ino).collect::<Vec<_>>().into();
    state.dir_dotdot = dotdot.into();
    state.settle_lists();
    state.lost_found = lf;
    let mut tree = super::paths::DirTree::with_names(state, ends, names);
    tree.add_disk_facts(
        fs,
        later_dotdots,
        before_later,
        unreadable,
        run == Finish::Repair,
    );
    state.tree = Some(std::sync::Arc::new(tree));
    if let Some(n) = cut {
        let mut k = 0;
        problems.retain(|_| {
            k += 1;
            k <= n
        });
    }
    problems
}

/// Drops `state.dir_blocks` after a check that repairs nothing, but for
/// the blocks of the directories pass 3A rebuilds.
fn keep_rebuilt_dir_blocks(state: &mut State, outs: &[UnitOut2]) {
    // Only repairs read the block list after this (issue 17: 16
    // bytes a directory block, held under the check's peak below),
    // and pass 3A reads the blocks of the directories it rebuilds.
    let rebuilt: std::collections::HashSet<u32> = outs
        .iter()
        .filter_map(|o| o.rest.as_deref())
        .flat_map(|r| r.sink.problems.iter())
        .filter(|p| p.code == Code::DirEntryDuplicate)
        .filter_map(|p| p.args().ino.map(Ino::get))
        .collect();
    let mut kept: Vec<DirBlock> = state
        .dir_blocks
        .iter()
        .filter(|d| rebuilt.contains(&d.ino.get()))
        .copied()
        .collect();
    // In inode order until now (pass 1 sorts them for repairs only).
    kept.sort_unstable();
    state.dir_blocks = kept.into();
}

/// Appends the units' problems to `problems` block by block, in
/// e2fsck's order; where the check stops before block `stop_before`,
/// how many problems go before it.
fn block_order_problems(
    fs: &Fs,
    outs: &[UnitOut2],
    stop_before: Option<DirBlock>,
    problems: &mut ProblemList,
) -> Option<usize> {
    // Each block's problems, in e2fsck's order: with dir_index, every
    // directory's first block (it holds the htree root), then the other
    // blocks, each group by physical block (a directory's logical blocks
    // are distinct, so no two blocks share a key).
    let zero_first = fs.sb.has_compat(crate::fs::superblock::compat::DIR_INDEX);
    let mut marks: Vec<(DirBlock, usize, u32, u32)> = outs
        .iter()
        .enumerate()
        .filter_map(|(k, o)| Some((k, o.rest.as_deref()?)))
        .flat_map(|(k, r)| r.marks.iter().map(move |&(b, s, e)| (b, k, s, e)))
        .collect();
    marks.sort_by_key(|m| (zero_first && m.0.lblk != LBlk(0), m.0));
    let mut cut = None;
    for (b, k, s, e) in marks {
        if cut.is_none()
            && stop_before.is_some_and(|at| (zero_first && b.lblk != LBlk(0), b) > (false, at))
        {
            cut = Some(problems.len());
        }
        if let Some(r) = outs[k].rest.as_deref() {
            problems.append_range(&r.sink.problems, s as usize..e as usize);
        }
    }
    if stop_before.is_some() && cut.is_none() {
        cut = Some(problems.len());
    }
    cut
}

/// The large_file feature missing while pass 1 found large files.
fn large_file_problem(fs: &Fs, st: &State) -> Option<Problem> {
    if st.stats.large_files == 0
        || fs
            .sb
            .has_ro_compat(crate::fs::superblock::ro_compat::LARGE_FILE)
    {
        return None;
    }
    let mut p = Problem::new(Code::FeatureLargeFiles);
    if fs.sb.rev_level == 0 {
        p = p.detail(LARGE_FILES_REV0);
    }
    Some(p)
}

/// Each directory's deciding entry in `named_by` becomes its parent in
/// place (0 for none); returns the end of each one's name in the names
/// laid end to end, and those names.
fn take_parents_and_names(
    st: &State,
    all: &[&UnitOut2],
    named_by: &mut [u32],
) -> (Vec<u32>, Vec<u8>) {
    let mut ends = Vec::with_capacity(named_by.len());
    let mut names = Vec::new();
    let starts = entry_starts(all);
    for (k, by) in named_by.iter_mut().enumerate() {
        if k % 4096 == 0
            && let Some(s) = &st.spill
        {
            s.tick();
        }
        let mut parent = 0;
        if *by != NO_ENTRY {
            let (k, j) = entry_at(&starts, *by);
            names.extend_from_slice(all[k].name(j).unwrap_or(&[]));
            parent = all[k].parent(j).get();
        }
        *by = parent;
        ends.push(narrow::sat32(names.len()));
    }
    (ends, names)
}

/// A directory as a pass-2 unit carries it.
#[derive(Clone)]
struct UnitDir {
    info: DirInfo,
    /// Block 0 of an indexed directory, and its hash version once one of
    /// the directory's units has read it (a large directory spans many
    /// units: the root is read once).
    root: Option<(u64, std::sync::Arc<std::sync::OnceLock<Option<u8>>>)>,
}

/// Directory blocks checked together, sorted by physical block, with
/// what pass 1 found about their directories.
pub(crate) struct Unit2 {
    blocks: Vec<DirBlock>,
    /// Sorted by inode.
    dirs: Vec<UnitDir>,
}

impl Unit2 {
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// A unit of some of this unit's blocks (sorted), with their
    /// directories.
    pub fn subset(&self, blocks: Vec<DirBlock>) -> Unit2 {
        let dirs = self
            .dirs
            .iter()
            .filter(|d| blocks.iter().any(|b| b.ino == d.info.params.ino))
            .cloned()
            .collect();
        Unit2 { blocks, dirs }
    }
}

/// The highest inode number a directory block's entries name (within the
/// file system): what must be final before the block is checked. u32::MAX
/// when the records do not chain cleanly (the check may then read the
/// block otherwise; let it wait for all of pass 1).
pub(crate) fn max_target(fsp: &FsParams, b: &[u8]) -> u32 {
    let mut off = 0usize;
    let mut max = 0u32;
    while off < b.len() {
        if off + 8 > b.len() {
            return u32::MAX;
        }
        let ino = inode_at(b, off).get();
        let rec_len = rec_len_at(b, off, b.len());
        if rec_len < 8 || off + rec_len > b.len() {
            return u32::MAX;
        }
        if ino <= fsp.inodes_count {
            max = max.max(ino);
        }
        off += rec_len;
    }
    max
}

/// Forms pass-2 units while pass 1 merges its units: a directory's
/// blocks are all found with its inode, so once that unit is merged its
/// parameters are final. Blocks gather until a unit is full, are sorted
/// by physical block and cut into units of `UNIT_BLOCKS`. Depends only on
/// the merge order, so the units are the same for any thread count.
pub(crate) struct Units2 {
    limit: u32,
    csum: Option<u32>,
    blocks: Vec<DirBlock>,
    /// The directories of `blocks`, sorted by inode. Pass 1's units merge
    /// in inode order, so they arrive sorted and are appended: a map
    /// cost ~300 instructions a directory to insert and drop again.
    dirs: Vec<UnitDir>,
    /// Which of a merged unit's directories have blocks to check.
    wanted: Vec<bool>,
    /// What `finish` needs of the directories' block lists.
    pub counts: DirCounts,
}

/// All `finish` needs of every directory's block list, gathered as pass
/// 1 merges them (issue 17: not a word per directory on a sound file
/// system; the full list is kept only for repairs).
#[derive(Default)]
pub(crate) struct DirCounts {
    /// Directory blocks pass 1 listed.
    pub blocks: u64,
    /// (directory, highest logical block + 1) of indexed directories, in
    /// inode order.
    htree: Vec<(Ino, u32)>,
    /// Directories with fewer blocks listed than their highest one, or
    /// whose cleared blocks reach past it (a repair's view), in inode
    /// order.
    holed: Vec<Holed>,
}

/// A directory with holes in e2fsck's list of its blocks.
struct Holed {
    ino: Ino,
    /// The logical blocks listed.
    lblks: Vec<u32>,
    /// One past the last block e2fsck lists: past the last listed when
    /// pass 1 cleared blocks beyond it (`UnitOut::dir_tails`), whose
    /// holes a repair gives new blocks.
    end: u32,
    /// Where libext2fs looks for those new blocks first: the directory's
    /// block 0 when mapped (else the first block of its group's flex
    /// group, looked up when needed).
    goal: Option<Blk>,
}

impl DirCounts {
    /// The highest logical block + 1 of indexed directory `ino`.
    fn numblocks(&self, ino: Ino) -> u32 {
        self.htree
            .binary_search_by_key(&ino, |h| h.0)
            .map_or(0, |k| self.htree[k].1)
    }
}

impl Units2 {
    pub fn new(fs: &Fs) -> Units2 {
        Units2 {
            limit: lblk_limit(fs),
            csum: fs
                .sb
                .has_ro_compat(ro_compat::METADATA_CSUM)
                .then_some(fs.csum_seed),
            blocks: Vec::new(),
            dirs: Vec::new(),
            wanted: Vec::new(),
            counts: DirCounts::default(),
        }
    }

    /// Takes one merged pass-1 unit's directories (inode, generation; in
    /// inode order) and their blocks; `policy`: a directory's policy id.
    pub fn add(
        &mut self,
        st: &State,
        (dirs, blocks, tails): super::state::UnitDirs,
        policy: &dyn Fn(Ino) -> Option<u32>,
        out: &mut dyn FnMut(Unit2),
    ) {
        let mut infos: Vec<UnitDir> = dirs
            .iter()
            .map(|&(ino, generation)| {
                let i = Ino(ino);
                let inline = st.has_iflag(i, iflag::INLINE);
                UnitDir {
                    info: DirInfo {
                        params: DirParams {
                            ino: i,
                            csum_seed: self.csum.map_or(0, |seed| {
                                inode::inode_csum_seed(seed, Ino(ino), generation)
                            }),
                            htree: (st.has_iflag(i, iflag::HTREE) && !inline)
                                .then(HtreeParams::default),
                            policy: policy(i),
                            casefold: st.has_iflag(i, iflag::CASEFOLD),
                        },
                        inline,
                        numblocks: 0,
                        nlisted: 0,
                    },
                    root: None,
                }
            })
            .collect();
        let find = |infos: &[UnitDir], ino: Ino| {
            infos.binary_search_by_key(&ino, |d| d.info.params.ino).ok()
        };
        for b in blocks.iter().filter(|b| b.lblk.0 <= self.limit) {
            if let Some(i) = find(&infos, b.ino) {
                let d = &mut infos[i];
                d.info.numblocks = d.info.numblocks.max(b.lblk.0.saturating_add(1));
                d.info.nlisted = d.info.nlisted.saturating_add(1);
                if b.lblk == LBlk(0) && d.info.params.htree.is_some() {
                    d.root = Some((b.pblk.0, Default::default()));
                }
            }
        }
        self.counts.blocks += blocks.len() as u64;
        for d in &mut infos {
            let (ino, numblocks) = (d.info.params.ino, d.info.numblocks);
            if let Some(h) = d.info.params.htree.as_mut() {
                h.numblocks = numblocks;
                self.counts.htree.push((ino, numblocks));
            }
            let end = tails
                .binary_search_by_key(&ino, |t| t.0)
                .map_or(numblocks, |k| tails[k].1.min(self.limit.saturating_add(1)))
                .max(numblocks);
            if (d.info.nlisted < numblocks || end > numblocks) && !d.info.inline {
                let mine = || {
                    blocks
                        .iter()
                        .filter(|b| b.ino == ino && b.lblk.0 <= self.limit)
                };
                self.counts.holed.push(Holed {
                    ino,
                    lblks: mine().map(|b| b.lblk.0).collect(),
                    end,
                    goal: mine().find(|b| b.lblk == LBlk(0)).map(|b| b.pblk),
                });
            }
        }
        // Only the blocks pass 2 checks (as `check_unit` would skip them).
        self.wanted.clear();
        self.wanted.resize(infos.len(), false);
        for b in blocks {
            if let Some(i) = find(&infos, b.ino)
                && !infos[i].info.inline
                && b.lblk.0 <= self.limit
                && st.inode_used.get(b.ino)
            {
                self.blocks.push(*b);
                self.wanted[i] = true;
            }
        }
        for (d, _) in infos.into_iter().zip(&self.wanted).filter(|(_, w)| **w) {
            let ino = d.info.params.ino;
            if self.dirs.last().is_none_or(|l| l.info.params.ino < ino) {
                self.dirs.push(d);
            } else if let Err(at) = self.dir_at(ino) {
                // Out of inode order: kept sorted all the same (the first
                // listing of a directory stays, as before).
                self.dirs.insert(at, d);
            }
        }
        if self.blocks.len() >= UNIT_BLOCKS {
            self.emit(false, out);
        }
    }

    /// Emits what is left (pass 1 is merged).
    pub fn flush(&mut self, out: &mut dyn FnMut(Unit2)) {
        self.emit(true, out);
    }

    fn emit(&mut self, all: bool, out: &mut dyn FnMut(Unit2)) {
        self.blocks.sort_unstable();
        let full = if all {
            self.blocks.len()
        } else {
            self.blocks.len() / UNIT_BLOCKS * UNIT_BLOCKS
        };
        let rest = self.blocks.split_off(full);
        for chunk in self.blocks.chunks(UNIT_BLOCKS) {
            let mut inos: Vec<Ino> = chunk.iter().map(|b| b.ino).collect();
            inos.sort_unstable();
            inos.dedup();
            out(Unit2 {
                blocks: chunk.to_vec(),
                dirs: inos
                    .iter()
                    .filter_map(|&i| self.dir_at(i).ok().map(|k| self.dirs[k].clone()))
                    .collect(),
            });
        }
        self.blocks = rest;
        let mut keep: Vec<Ino> = self.blocks.iter().map(|b| b.ino).collect();
        keep.sort_unstable();
        keep.dedup();
        self.dirs
            .retain(|d| keep.binary_search(&d.info.params.ino).is_ok());
    }

    /// Where directory `ino` is in `dirs`, or would go.
    fn dir_at(&self, ino: Ino) -> Result<usize, usize> {
        self.dirs.binary_search_by_key(&ino, |d| d.info.params.ino)
    }
}

/// What one pass-2 unit checked, filled as it runs.
#[derive(Default)]
struct UnitRaw {
    sink: Sink,
    /// (block, start, end) of each block's problems in `sink.problems`
    /// (its marks: byte offsets).
    marks: Vec<(DirBlock, u32, u32)>,
}

/// What one pass-2 unit found, as kept to the end of pass 2 (issue 17:
/// every unit's is held until then, the largest structure of a check of
/// a tree of small directories; 29 bytes a directory, down from 64).
pub(crate) struct UnitOut2 {
    /// (block key, directory key) of each block holding entries of `subs`
    /// (`SubdirRef::key`'s first two parts, shared by a block's entries).
    keys: ScratchSlice<(u64, u64)>,
    subs: ScratchSlice<Sub>,
    /// The names of `subs`.
    names: ScratchSlice<u8>,
    /// (directory, its '..' target).
    dotdots: ScratchSlice<(Ino, Ino)>,
    /// What few units have: problems, lost+found entries, htree records.
    rest: Option<Box<UnitRaw>>,
}

/// An entry naming a directory, as `UnitOut2` keeps it (a `SubdirRef`
/// less its block's keys: 12 bytes, not 32).
#[derive(Clone, Copy)]
struct Sub {
    child: Ino,
    /// Where the name is in `UnitOut2::names` (24 bits: a unit's names
    /// come from at most `UNIT_BLOCKS` blocks, or one inode each of
    /// `INODE_UNIT` inline directories), then its length.
    name: u32,
    /// Index in `UnitOut2::keys` (a block, or an inline directory).
    block: u16,
    off: u16,
}

const _: () = assert!(std::mem::size_of::<Sub>() == 12);
/// A unit's names fit `Sub::name`'s 24 bits: at most 255 bytes an entry
/// of at least 8 bytes, in at most 32 blocks of 64 KiB, or 512 inodes.
const _: () = assert!(UNIT_BLOCKS * (64 << 10) < 1 << 24);
const _: () = assert!(INODE_UNIT < 1 << 16);

impl Sub {
    fn name_range(&self) -> std::ops::Range<usize> {
        let start = (self.name >> 8) as usize;
        start..start + (self.name & 0xff) as usize
    }
}

impl UnitOut2 {
    /// Keeps what `finish` needs of a unit's sink and marks.
    fn compact(mut sink: Sink, marks: Vec<(DirBlock, u32, u32)>) -> UnitOut2 {
        let mut keys: Vec<(u64, u64)> = Vec::new();
        let subs: Box<[Sub]> = sink
            .subdirs
            .iter()
            .map(|r| {
                let (kb, kd, off) = r.key();
                if keys.last() != Some(&(kb, kd)) {
                    keys.push((kb, kd));
                }
                Sub {
                    child: r.child,
                    name: (r.name_start << 8) | u32::from(r.name_len),
                    // A unit's blocks or inline directories: asserted above to fit.
                    block: narrow::sat16(keys.len() - 1),
                    off,
                }
            })
            .collect();
        let names = std::mem::take(&mut sink.names).into_boxed_slice();
        let dotdots = std::mem::take(&mut sink.dotdots).into_boxed_slice();
        sink.subdirs = Vec::new();
        sink.release_scratch();
        let rest = (!sink.problems.is_empty()
            || !marks.is_empty()
            || !sink.lost_found.is_empty()
            || !sink.dx.is_empty()
            || !sink.leaves.is_empty()
            || !sink.later_dotdots.is_empty()
            || !sink.unreadable.is_empty()
            || !sink.before_later.is_empty())
        .then(|| Box::new(UnitRaw { sink, marks }));
        UnitOut2 {
            keys: keys.into(),
            subs: subs.into(),
            names: names.into(),
            dotdots: dotdots.into(),
            rest,
        }
    }

    /// With `--max-memory`, moves what every unit has to the scratch
    /// file (`arena`), where a trim drops it from memory (issue 17: 13
    /// bytes an inode on a tree of small directories, the largest part
    /// of such a check); the rare problems and records stay in memory.
    pub(crate) fn settle(&mut self, arena: Option<&ScratchArena>) {
        self.keys.settle(arena);
        self.subs.settle(arena);
        self.names.settle(arena);
        self.dotdots.settle(arena);
    }

    /// Entry `j`'s order key (`SubdirRef::key`).
    fn key(&self, j: usize) -> (u64, u64, u16) {
        let s = self.subs[j];
        let (kb, kd) = self.keys[s.block as usize];
        (kb, kd, s.off)
    }

    /// The directory holding entry `j`.
    fn parent(&self, j: usize) -> Ino {
        Ino((self.key(j).1 >> 32) as u32)
    }

    fn name(&self, j: usize) -> Option<&[u8]> {
        self.names.get(self.subs[j].name_range())
    }

    fn sink(&self) -> Option<&Sink> {
        self.rest.as_deref().map(|r| &r.sink)
    }
}

/// Bytes the units' results hold (`-t`'s census).
pub(crate) fn out_bytes(outs: &[UnitOut2]) -> u64 {
    fn cap<T>(v: &Vec<T>) -> usize {
        v.capacity() * std::mem::size_of::<T>()
    }
    let per: usize = outs
        .iter()
        .map(|o| {
            std::mem::size_of_val(&*o.keys)
                + std::mem::size_of_val(&*o.subs)
                + o.names.len()
                + std::mem::size_of_val(&*o.dotdots)
                + o.rest.as_deref().map_or(0, |r| {
                    let k = &r.sink;
                    std::mem::size_of::<UnitRaw>()
                        + cap(&r.marks)
                        + cap(&k.subdirs)
                        + cap(&k.names)
                        + cap(&k.dotdots)
                        + cap(&k.lost_found)
                        + cap(&k.dx)
                        + cap(&k.leaves)
                        + k.problems.heap_bytes()
                })
        })
        .sum();
    (per + std::mem::size_of_val(outs)) as u64
}

/// Of those, the bytes in `--max-memory`'s scratch file.
pub(crate) fn out_scratch_bytes(outs: &[UnitOut2]) -> u64 {
    fn b<T: Copy>(x: &ScratchSlice<T>) -> usize {
        if x.in_scratch() {
            std::mem::size_of_val(&**x)
        } else {
            0
        }
    }
    let n: usize = outs
        .iter()
        .map(|o| b(&o.keys) + b(&o.subs) + b(&o.names) + b(&o.dotdots))
        .sum();
    n as u64
}

/// Asks the kernel for a unit's blocks (readahead, `hint_blocks`), unless
/// its first block is in the page cache already (then the rest most
/// likely is too). Returns whether it was (None: the device cannot say).
pub(crate) fn prefetch(fs: &Fs, unit: &Unit2) -> Option<bool> {
    let bsz = fs.block_size() as u64;
    let cached = match unit.blocks.iter().find(|db| fs.geo.block_in_fs(db.pblk.0)) {
        Some(first) => {
            let mut probe = vec![0u8; fs.block_size()];
            fs.dev
                .is_cached(first.pblk.0.saturating_mul(bsz), &mut probe)
        }
        None => None,
    };
    if cached != Some(true) {
        hint_blocks(fs, unit);
    }
    cached
}

/// Holes of up to this many blocks between a unit's blocks are hinted
/// with them: one request reading through them costs less than two. On
/// the bench's cold cache (virtio disk) hinting each block of a
/// directory-heavy image whose directory blocks alternate with file
/// blocks took 2.6-3.0 s, through 1-2 block holes 1.5-1.8 s; where they
/// are 3 apart it made no difference; through holes of up to 16 blocks
/// it took 1.9-2.5 s instead of 1.4-1.7 s (the kernel reads the holes).
const HINT_GAP: u64 = 2;

/// `posix_fadvise(WILLNEED)` over a unit's blocks (sorted by physical
/// block), small holes included.
fn hint_blocks(fs: &Fs, unit: &Unit2) {
    let bsz = fs.block_size() as u64;
    let mut hint: Option<(u64, u64)> = None;
    for db in unit
        .blocks
        .iter()
        .filter(|db| fs.geo.block_in_fs(db.pblk.0))
    {
        hint = match hint {
            Some((a, b)) if db.pblk.0 >= b && db.pblk.0 - b <= HINT_GAP => Some((a, db.pblk.0 + 1)),
            other => {
                if let Some((a, b)) = other {
                    fs.dev.will_need(a * bsz, (b - a) * bsz);
                }
                Some((db.pblk.0, db.pblk.0 + 1))
            }
        };
    }
    if let Some((a, b)) = hint {
        fs.dev.will_need(a * bsz, (b - a) * bsz);
    }
}

/// Checks one unit. `plan(block, bytes)` is asked before each block is
/// checked: false leaves it out (the caller parks it). `own_hint`: ask
/// for the unit's blocks up front (readahead is on). Returns the findings
/// and whether the reads found their data ready (None: nothing read).
pub(crate) fn check_unit2<T: Targets>(
    fs: &Fs,
    fsp: &FsParams,
    unit: &Unit2,
    targets: &T,
    plan: &mut dyn FnMut(&DirBlock, &[u8]) -> bool,
    buf: &mut Vec<u8>,
    own_hint: bool,
) -> (UnitOut2, Option<bool>) {
    let zero_first = fs.sb.has_compat(crate::fs::superblock::compat::DIR_INDEX);
    let mut dirs: Vec<DirInfo> = unit.dirs.iter().map(|d| d.info).collect();
    let mut io = ReadClock::default();
    // The leaves need their root's hash version, read from block 0.
    // Without a block 0, e2fsck hashes them with the version it starts
    // from, the legacy hash as stored (no unsigned variant).
    for (d, ud) in dirs.iter_mut().zip(&unit.dirs) {
        if let (Some(h), None) = (d.params.htree.as_mut(), &ud.root) {
            h.hash_version = Some(crate::fs::dx_hash::DX_HASH_LEGACY);
        }
        if let (Some(h), Some((pblk, version))) = (d.params.htree.as_mut(), &ud.root) {
            h.hash_version = *version.get_or_init(|| {
                if buf.len() < fsp.bs {
                    buf.resize(fsp.bs, 0);
                }
                let b = &mut buf[..fsp.bs];
                let ok =
                    fs.geo.block_in_fs(*pblk) && io.time(|| fs.read_block_into(*pblk, b)).is_ok();
                ok.then(|| fsp.effective_hash_version(htree::parse_root_info(b).hash_version))
            });
        }
    }
    if own_hint {
        hint_blocks(fs, unit);
    }
    let mut out = UnitRaw::default();
    let lookup = |ino: Ino| {
        unit.dirs
            .binary_search_by_key(&ino, |d| d.info.params.ino)
            .ok()
            .map(|i| &dirs[i])
    };
    check_unit(
        fs,
        fsp,
        &lookup,
        &unit.blocks,
        zero_first,
        targets,
        plan,
        buf,
        &mut io,
        &mut out,
    );
    (UnitOut2::compact(out.sink, out.marks), io.ready())
}

/// Was a unit's data ready when it was read? Runs read one by one are
/// first asked of the page cache alone (`read_blocks_cached`): a miss in
/// a block the unit needs means not ready. Batched reads (a slow device),
/// and devices that cannot say what is cached, are timed instead: ready
/// when served at cache speed.
#[derive(Default)]
struct ReadClock {
    requests: u64,
    time: std::time::Duration,
    /// Runs asked of the cache, and those it did not hold.
    asked: u64,
    missed: u64,
}

impl ReadClock {
    fn time<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let t = std::time::Instant::now();
        let r = f();
        self.time += t.elapsed();
        self.requests += 1;
        r
    }

    /// Reads `buf` from block `blk`, from the cache when it holds it.
    /// `needed(k)`: is the run's k-th block one the unit checks (not a
    /// hole read through)? A hole the cache lacks is no sign of a cold
    /// cache: nothing but these reads ever asks for it.
    fn read(
        &mut self,
        fs: &Fs,
        blk: u64,
        buf: &mut [u8],
        needed: &dyn Fn(usize) -> bool,
    ) -> crate::error::Result<()> {
        use crate::io::FromCache;
        let upto = match fs.read_blocks_cached(blk, buf) {
            Ok(FromCache::Filled) => {
                self.asked += 1;
                return Ok(());
            }
            Ok(FromCache::Upto(n)) => n,
            Ok(FromCache::Unknown) | Err(_) => {
                return self.time(|| fs.read_blocks(blk, buf));
            }
        };
        self.asked += 1;
        // The blocks of the first page the cache lacks (only that one is
        // known to be missing).
        let bs = fs.block_size();
        let start = blk.saturating_mul(bs as u64);
        let at = start.saturating_add(upto as u64);
        // The page cache holds whole pages (4 KiB here).
        let page = 4096u64;
        let page_end = (at / page + 1) * page;
        let lacking = upto / bs..narrow::to_usize(page_end - start).div_ceil(bs);
        if lacking.into_iter().any(needed) {
            self.missed += 1;
        }
        self.time(|| fs.read_blocks(blk, buf))
    }

    fn ready(&self) -> Option<bool> {
        if self.asked > 0 {
            return Some(self.missed == 0);
        }
        (self.requests > 0).then(|| {
            u64::try_from(self.time.as_micros()).unwrap_or(u64::MAX)
                < crate::io::SLOW_US * self.requests
        })
    }
}

fn dir_index_of(st: &State, ino: Ino) -> Option<usize> {
    st.dir_index(ino)
}

/// The table of pass 2's inline directories: flags, checksum seed.
fn inline_table(
    fs: &Fs,
    fsp: &FsParams,
    st: &State,
    threads: Threads,
    ctl: &Control,
) -> Vec<DirInfo> {
    let idx: Vec<usize> = (0..st.dirs.len())
        .filter(|&i| st.has_iflag(st.dirs[i], iflag::INLINE))
        .collect();
    let mut dirs: Vec<DirInfo> = idx
        .iter()
        .map(|&i| {
            let ino = st.dirs[i];
            DirInfo {
                params: DirParams {
                    ino,
                    csum_seed: 0,
                    htree: None,
                    policy: st.policy(ino),
                    casefold: st.has_iflag(ino, iflag::CASEFOLD),
                },
                inline: true,
                numblocks: 0,
                nlisted: 0,
            }
        })
        .collect();
    if fsp.metadata_csum && !dirs.is_empty() {
        let gens = if st.dir_gen.len() == st.dirs.len() {
            idx.iter().map(|&i| st.dir_gen[i]).collect()
        } else {
            let inos: Vec<Ino> = dirs.iter().map(|d| d.params.ino).collect();
            read_generations(fs, &inos, threads, ctl)
        };
        for (d, g) in dirs.iter_mut().zip(gens) {
            d.params.csum_seed = inode::inode_csum_seed(fs.csum_seed, d.params.ino, g);
        }
    }
    dirs
}

/// Reads i_generation of each directory, visiting inode tables in order and
/// each table block once per unit.
fn read_generations(fs: &Fs, inos: &[Ino], threads: Threads, ctl: &Control) -> Vec<u32> {
    let units = inos.len().div_ceil(INODE_UNIT);
    let parts: Vec<Vec<u32>> = par_map(
        units,
        threads,
        ctl,
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
                    le32(buf, off + field::I_GENERATION)
                })
                .collect()
        },
    );
    parts.into_iter().flatten().collect()
}

/// Holes reported per directory at most.
const MAX_HOLES_SHOWN: u32 = 1 << 12;

/// Reports logical blocks missing inside a directory's mapped range, and
/// in a repair those past it that pass 1 cleared (each given a new block
/// by `take`, the directory and the hole's logical block given).
fn find_holes(
    fsp: &FsParams,
    counts: &mut DirCounts,
    take: &mut dyn FnMut(&Holed) -> Option<Blk>,
    out: &mut ProblemList,
) {
    // largedir lets the kernel punch out emptied blocks.
    if fsp.largedir {
        return;
    }
    // Merged in inode order already; sorted again as insurance.
    counts.holed.sort_by_key(|h| h.ino);
    for d in &mut counts.holed {
        d.lblks.sort_unstable();
        d.lblks.dedup();
        let ino = d.ino;
        let mut expect = 0u32;
        let mut shown = 0u32;
        for &lb in &d.lblks {
            // Each missing block, as e2fsck asks about each; up to a
            // bound, so that a sparse directory with a huge hole does
            // not produce millions of lines.
            for h in expect..lb {
                if shown == MAX_HOLES_SHOWN {
                    break;
                }
                shown += 1;
                out.push(Problem::new(Code::DirHole).ino(ino).num(u64::from(h)));
            }
            expect = lb.saturating_add(1);
        }
        let indexed = counts
            .htree
            .binary_search_by_key(&ino, |h| h.0)
            .ok()
            .filter(|&k| counts.htree[k].1 > 0);
        for h in expect..d.end.min(expect.saturating_add(MAX_HOLES_SHOWN - shown)) {
            let Some(blk) = take(d) else {
                out.push(Problem::new(Code::DirHole).ino(ino).num(u64::from(h)));
                continue;
            };
            out.push(
                Problem::new(Code::DirHoleCleared)
                    .ino(ino)
                    .num(u64::from(h))
                    .blk(blk),
            );
            // Past every block the index was built over: e2fsck clears
            // the index at the first such block, and checks no other
            // block of the directory against it.
            if let Some(k) = indexed.filter(|&k| counts.htree[k].1 > 0) {
                out.push(Problem::new(Code::HtreeUnexpectedBlock).ino(ino));
                counts.htree[k].1 = 0;
            }
        }
    }
}

/// libext2fs' choice of the new block for a hole of directory `d`: from
/// its block 0 on, else from the first block of its (flex) group.
fn hole_block(fs: &Fs, alloc: &mut Allocator, d: &Holed) -> Option<Blk> {
    let goal = d.goal.unwrap_or_else(|| {
        // libext2fs rounds down to the flex group whether flex_bg is
        // on or not (the geometry keeps the shift below 32).
        let g = d.ino.group(fs.geo.inodes_per_group).0;
        let log_flex = u32::from(fs.sb.log_groups_per_flex).min(31);
        Blk(fs.geo.group_first_block(g & !((1u32 << log_flex) - 1)))
    });
    alloc.take(&Blocks::new(fs.geo.block_size), goal)
}

/// Holes between a unit's blocks read through with them, at most (bytes,
/// and only where the device is fast): one request copying a few KiB
/// more costs less than a system call per block. 1M-inode dir50-1k
/// (each directory block followed by its file's), warm, -m2, min of 5:
/// 502,197 `preadv2` -> 22,346, user+system CPU 1.71 -> 1.03 s; dir50
/// with 4 KiB blocks (4 KiB holes, 500k inodes): 251,382 -> 16,602,
/// 0.84 -> 0.72 s.
const HOLE_BYTES: u64 = 8192;
/// Largest single read (bytes): 128 KiB, a FUSE request's limit; each
/// worker's buffer is this big.
const SPAN_BYTES: u64 = 128 * 1024;

#[allow(clippy::too_many_arguments)]
fn check_unit<'d, T: Targets>(
    fs: &Fs,
    fsp: &FsParams,
    dir_of: &dyn Fn(Ino) -> Option<&'d DirInfo>,
    blocks: &[DirBlock],
    zero_first: bool,
    targets: &T,
    plan: &mut dyn FnMut(&DirBlock, &[u8]) -> bool,
    buf: &mut Vec<u8>,
    io: &mut ReadClock,
    out: &mut UnitRaw,
) {
    let bs = fsp.bs;
    let bsz = bs as u64;
    let slow = fs.dev.is_slow();
    let runs = read_runs(blocks, bsz, slow);
    let span_of =
        |&(i, j): &(usize, usize)| narrow::to_usize(blocks[j - 1].pblk - blocks[i].pblk + 1);
    let in_fs = |&(i, j): &(usize, usize)| {
        fs.geo.block_in_fs(blocks[i].pblk.0) && fs.geo.block_in_fs(blocks[j - 1].pblk.0)
    };
    // On a slow (or cold) device the unit's runs are all requested at
    // once, into one buffer, instead of one after the other.
    let batched = runs.len() > 1 && slow;
    let mut base = vec![0usize; runs.len()];
    let mut whole = vec![false; runs.len()];
    let mut at = 0;
    if batched {
        for (r, run) in runs.iter().enumerate() {
            base[r] = at;
            at += span_of(run) * bs;
        }
    } else {
        at = runs.iter().map(span_of).max().unwrap_or(0) * bs;
    }
    let at = crate::io::aligned(buf, at);
    let buf = &mut buf[at];
    if batched {
        let mut reqs: Vec<(u64, &mut [u8])> = Vec::new();
        let mut which = Vec::new();
        let mut rest = &mut buf[..];
        for (r, run) in runs.iter().enumerate() {
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(span_of(run) * bs);
            rest = tail;
            if in_fs(run) {
                reqs.push((blocks[run.0].pblk.0.saturating_mul(bsz), chunk));
                which.push(r);
            }
        }
        let n = reqs.len() as u64;
        let t = std::time::Instant::now();
        let results = fs.dev.read_many(&mut reqs);
        io.time += t.elapsed();
        io.requests += n;
        for (r, res) in which.into_iter().zip(results) {
            whole[r] = res.is_ok();
        }
    }
    let sink = &mut out.sink;
    for (r, run) in runs.iter().enumerate() {
        let first = blocks[run.0].pblk.0;
        let need = span_of(run) * bs;
        if !batched {
            let run_blocks = &blocks[run.0..run.1];
            let needed = |k: usize| run_blocks.iter().any(|db| db.pblk.0 - first == k as u64);
            whole[r] = in_fs(run) && io.read(fs, first, &mut buf[..need], &needed).is_ok();
        }
        let buf = &mut buf[base[r]..base[r] + need];
        for db in &blocks[run.0..run.1] {
            let Some(d) = dir_of(db.ino) else {
                continue;
            };
            let start = narrow::sat32(sink.problems.mark());
            let k = narrow::to_usize(db.pblk.0 - first);
            let b = &mut buf[k * bs..(k + 1) * bs];
            if !whole[r] {
                // Pass 1 reports blocks outside the file system; a read
                // error inside it is ours to report.
                if !fs.geo.block_in_fs(db.pblk.0) {
                    continue;
                }
                if io.time(|| fs.read_block_into(db.pblk.0, b)).is_err() {
                    sink.problems.push(
                        Problem::new(Code::DirBlockUnreadable)
                            .ino(db.ino)
                            .blk(db.pblk),
                    );
                    out.marks
                        .push((*db, start, narrow::sat32(sink.problems.mark())));
                    continue;
                }
            }
            if !plan(db, b) {
                // Parked: checked later, as a unit of its own.
                continue;
            }
            let pos = BlockPos {
                lblk: db.lblk.0,
                pblk: db.pblk.0,
                zero_first,
            };
            dirblock::check_block(fsp, &d.params, pos, b, targets, sink);
            let end = narrow::sat32(sink.problems.mark());
            if end > start {
                out.marks.push((*db, start, end));
            }
        }
    }
}

/// A unit's blocks (sorted) cut into runs read with one request each:
/// neighbours on disk, and on a fast device blocks apart by holes of up
/// to `HOLE_BYTES`, within `SPAN_BYTES`. (Holes of up to 16 blocks,
/// 4 KiB, once read 4x the bytes and took 3x the warm-cache time on
/// dir25: hence a bound in bytes, and small.) A slow device
/// reads no holes: its runs are requested at once into one buffer,
/// which would grow with them. Equal blocks (shared by two
/// directories) end a run so that each copy is checked as read.
fn read_runs(blocks: &[DirBlock], bsz: u64, slow: bool) -> Vec<(usize, usize)> {
    let hole = if slow { 0 } else { HOLE_BYTES / bsz };
    let span = (SPAN_BYTES / bsz).max(1);
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < blocks.len() {
        let first = blocks[i].pblk;
        let mut j = i + 1;
        while j < blocks.len() {
            let (prev, cur) = (blocks[j - 1].pblk, blocks[j].pblk);
            if cur <= prev || cur - prev - 1 > hole || cur - first >= span {
                break;
            }
            j += 1;
        }
        runs.push((i, j));
        i = j;
    }
    runs
}

/// Checks the directories that keep their entries in the inode.
fn check_inline_dirs<T: Targets + Sync>(
    fs: &Fs,
    fsp: &FsParams,
    st: &State,
    dirs: &[DirInfo],
    targets: &T,
    threads: Threads,
    ctl: &Control,
) -> Vec<Sink> {
    // e2fsck -n reads an inline directory again to size its data; when
    // the inode's checksum fails (left so in pass 1) that read fails and
    // the directory is skipped whole: its '.' and '..' are not seen.
    let inl: Vec<&DirInfo> = dirs
        .iter()
        .filter(|d| st.inode_used.get(d.params.ino))
        .filter(|d| !st.has_iflag(d.params.ino, iflag::CSUM_FAILED))
        .collect();
    let units = inl.len().div_ceil(INODE_UNIT);
    par_map(
        units,
        threads,
        ctl,
        || (),
        |_, u| {
            let mut sink = Sink::default();
            for d in &inl[u * INODE_UNIT..((u + 1) * INODE_UNIT).min(inl.len())] {
                let ino = d.params.ino;
                let Ok(raw) = fs.read_inode_raw(ino) else {
                    continue;
                };
                let iblock = raw.get(field::I_BLOCK..field::I_BLOCK_END).unwrap_or(&[]);
                let part = second_part(fs, &raw);
                let ea: &[u8] = &part;
                let size = INLINE_IBLOCK + ea.len();
                // A directory's inline size must hold whole 4-byte records,
                // and a second part too short for one entry is invalid.
                if !size.is_multiple_of(4) || (size > INLINE_IBLOCK && size < INLINE_IBLOCK + 12) {
                    sink.problems.push(
                        Problem::new(Code::DirInlineBad)
                            .ino(ino)
                            .detail(format!("size {size}")),
                    );
                    // A repair's yes cannot store the corrected size:
                    // libext2fs writes system.data only in the inode, and
                    // e2fsck then asks to truncate the directory.
                    if fsp.repairing && xattr::inline_data(&raw).is_none() {
                        sink.problems
                            .push(Problem::new(Code::DirInlineSizeStuck).ino(ino));
                    }
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
    xattr::inline_data(raw)
        .and_then(|d| raw.get(d.value.0..d.value.1))
        .unwrap_or(&[])
}

/// An inline directory's data past i_block as libext2fs hands it to e2fsck:
/// the in-inode "system.data", or, when the inode holds none, one kept in
/// the xattr block. The kernel never stores it there, but pass 1 accepts
/// it, and e2fsck sizes and checks the directory by it.
fn second_part<'a>(fs: &Fs, raw: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
    if xattr::inline_data(raw).is_some() {
        return std::borrow::Cow::Borrowed(inline_ea(raw));
    }
    block_inline_data(fs, raw).map_or(std::borrow::Cow::Borrowed(&[]), std::borrow::Cow::Owned)
}

/// The value of a "system.data" in the inode's xattr block, if the block
/// can be read and holds one.
fn block_inline_data(fs: &Fs, raw: &[u8]) -> Option<Vec<u8>> {
    let acl = inode::Inode::parse(raw).acl_block(fs.sb.is_64bit());
    if acl == 0 || !fs.geo.block_in_fs(acl) {
        return None;
    }
    let mut buf = vec![0; fs.geo.block_len()];
    fs.read_block_into(acl, &mut buf).ok()?;
    if xattr::parse_block_header(&buf).magic != xattr::XATTR_MAGIC {
        return None;
    }
    let entries = xattr::read_entries(&buf, xattr::BLOCK_HEADER_LEN).ok()?;
    let e = entries.iter().find(|e| {
        e.value_inum == 0 && xattr::name_is(e.name_index, e.name, xattr::INDEX_SYSTEM, b"data")
    })?;
    let at = usize::from(e.value_offs);
    buf.get(at..at.checked_add(usize::try_from(e.value_size).ok()?)?)
        .map(<[u8]>::to_vec)
}

/// No entry (in `Links`' per-directory entry numbers).
const NO_ENTRY: u32 = u32::MAX;

/// Decides each directory's parent (the first entry naming it, in e2fsck's
/// block order) and '..'; reports second links to directories.
/// Each directory's '..', lost+found, the problems of second links to
/// directories, and per directory the entry that decides its parent
/// (numbered across `sinks` in order; `NO_ENTRY` for none, and for the
/// root, its own parent).
type Links = (Vec<Ino>, Ino, Vec<Problem>, Vec<u32>);

/// Where entry `g` (numbered across the units in order) is: (unit,
/// index in its `subs`). `starts`: each unit's first entry number.
fn entry_at(starts: &[u32], g: u32) -> (usize, usize) {
    let k = starts.partition_point(|&s| s <= g) - 1;
    (k, (g - starts[k]) as usize)
}

/// Each unit's first entry number (`entry_at`).
fn entry_starts(sinks: &[&UnitOut2]) -> Vec<u32> {
    let mut n = 0u32;
    sinks
        .iter()
        .map(|s| {
            let at = n;
            n += narrow::sat32(s.subs.len());
            at
        })
        .collect()
}

fn merge_links(st: &State, sinks: &[&UnitOut2]) -> Links {
    let n = st.dirs.len();
    let mut dotdot = vec![Ino::NONE; n];
    let mut probs = Vec::new();
    // With `--max-memory` the units' results are read back from the
    // scratch file: a look at the resident size every few units drops
    // them again.
    let tick = || {
        if let Some(s) = &st.spill {
            s.tick();
        }
    };
    for s in sinks {
        tick();
        for &(d, t) in s.dotdots.iter() {
            if let Some(i) = dir_index_of(st, d)
                && dotdot[i] == Ino::NONE
            {
                dotdot[i] = t;
            }
        }
    }
    // A directory named once (all of them, on a sound file system) has
    // that entry for its parent, whatever the order; only the entries of
    // directories named twice or more are sorted into e2fsck's order.
    // (Sorting every entry held one more 8-byte reference per entry at
    // the peak of the check.)
    let mut named_by = vec![NO_ENTRY; n];
    // The root is its own parent: an entry naming it is a second link.
    let root = dir_index_of(st, Ino::ROOT);
    let mut twice: Vec<u32> = Vec::new();
    let mut g = 0u32;
    for s in sinks {
        tick();
        for sub in s.subs.iter() {
            if let Some(i) = dir_index_of(st, sub.child) {
                if named_by[i] == NO_ENTRY && Some(i) != root {
                    named_by[i] = g;
                } else {
                    twice.push(narrow::sat32(i));
                }
            }
            g += 1;
        }
    }
    let starts = entry_starts(sinks);
    if !twice.is_empty() {
        twice.sort_unstable();
        twice.dedup();
        let mut refs: Vec<(u32, u32)> = sinks
            .iter()
            .enumerate()
            .flat_map(|(k, s)| {
                s.subs
                    .iter()
                    .enumerate()
                    .filter(|(_, sub)| {
                        dir_index_of(st, sub.child)
                            .is_some_and(|i| twice.binary_search(&narrow::sat32(i)).is_ok())
                    })
                    .map(move |(j, _)| (narrow::sat32(k), narrow::sat32(j)))
            })
            .collect();
        refs.sort_by_key(|&(k, j)| sinks[k as usize].key(j as usize));
        for &i in &twice {
            named_by[i as usize] = NO_ENTRY;
        }
        for (k, j) in refs {
            let (o, j) = (sinks[k as usize], j as usize);
            let Some(i) = dir_index_of(st, o.subs[j].child) else {
                continue;
            };
            if named_by[i] == NO_ENTRY && Some(i) != root {
                named_by[i] = starts[k as usize] + narrow::sat32(j);
            } else {
                let first = if Some(i) == root {
                    Ino::ROOT
                } else {
                    let (wk, wj) = entry_at(&starts, named_by[i]);
                    sinks[wk].parent(wj)
                };
                let name = o.name(j).unwrap_or(&[]);
                probs.push(
                    Problem::new(Code::DirEntryLinkToDir)
                        .ino(o.parent(j))
                        .num(u64::from(o.subs[j].child.get()))
                        .num2(u64::from(first.get()))
                        .detail(super::dirblock::name_str(name)),
                );
            }
        }
    }
    let lf = sinks
        .iter()
        .filter_map(|s| s.sink())
        .flat_map(|s| s.lost_found.iter())
        .min()
        .map_or(Ino::NONE, |&(_, ino)| ino);
    (dotdot, lf, probs, named_by)
}

/// Runs the whole-tree checks of every indexed directory; `rootless`:
/// those whose root block was not read too, as e2fsck -n judges them (a
/// repair has cleared their index in pass 1).
fn verify_htrees(counts: &DirCounts, outs: &[&UnitOut2], rootless: bool, out: &mut ProblemList) {
    let sinks: Vec<&Sink> = outs.iter().filter_map(|o| o.sink()).collect();
    let mut dx: Vec<&DxRec> = sinks.iter().flat_map(|s| s.dx.iter()).collect();
    let mut leaves: Vec<LeafRec> = sinks
        .iter()
        .flat_map(|s| s.leaves.iter().copied())
        .collect();
    if dx.is_empty() && leaves.is_empty() {
        return;
    }
    // Per directory: the root first, then nodes in the order e2fsck reads
    // them (by physical block).
    dx.sort_by_key(|r| (r.dir, r.kind != DxKind::Root, r.pblk, r.lblk));
    leaves.sort_unstable_by_key(|l| (l.dir, l.lblk));
    // Every indexed directory with a block read: one whose root was not
    // read (a hole) has leaves only.
    let mut dirs: Vec<Ino> = dx.iter().map(|r| r.dir).collect();
    if rootless {
        dirs.extend(leaves.iter().map(|l| l.dir));
        dirs.sort_unstable();
    }
    dirs.dedup();
    for dir in dirs {
        let (ds, de) = (
            dx.partition_point(|r| r.dir < dir),
            dx.partition_point(|r| r.dir <= dir),
        );
        let ls = leaves.partition_point(|l| l.dir < dir);
        let le = leaves.partition_point(|l| l.dir <= dir);
        let numblocks = counts.numblocks(dir);
        htree_check::verify(dir, numblocks, &dx[ds..de], &leaves[ls..le], out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(pblks: &[u64]) -> Vec<DirBlock> {
        pblks
            .iter()
            .map(|&p| DirBlock {
                pblk: Blk(p),
                ino: Ino::ROOT,
                lblk: LBlk(0),
            })
            .collect()
    }

    #[test]
    fn runs_read_through_small_holes_on_a_fast_device_only() {
        // 1 KiB blocks: holes of up to 8 blocks are read through.
        let b = blocks(&[10, 12, 14, 23, 33, 33, 34]);
        assert_eq!(read_runs(&b, 1024, false), [(0, 4), (4, 5), (5, 7)]);
        // A slow device reads neighbours only.
        assert_eq!(
            read_runs(&b, 1024, true),
            [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 7)]
        );
        // 4 KiB blocks: two-block holes, and 32 blocks to a read at most.
        let b = blocks(&[0, 3, 7, 31, 32, 40]);
        assert_eq!(read_runs(&b, 4096, false), [(0, 2), (2, 3), (3, 5), (5, 6)]);
        let b: Vec<DirBlock> = blocks(&(0..40).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(read_runs(&b, 4096, false), [(0, 16), (16, 32), (32, 40)]);
    }
}
