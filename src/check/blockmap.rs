//! Walking an inode's block map: extent trees and ext2/3 indirect blocks.
//!
//! Shared by pass 1 (which checks every node and claims every block) and
//! pass 1B (which only needs the same list of blocks again). Both run the
//! same walker so that 1B sees exactly the blocks pass 1 claimed: a mapping
//! entry pass 1 rejects (out of range, out of order, ...) is skipped, as
//! e2fsck does when a fix is declined, and is then skipped by 1B as well.
//!
//! Every loop is bounded: extent depth by `MAX_DEPTH`, nodes by a budget
//! derived from the file system size, indirect levels are fixed.

use super::problem::{Code, Problem};
use crate::fs::extent::{self, EXTENT_MAGIC};
use crate::fs::inode;
use crate::fs::num::{Blk, Ino};
use crate::io::readahead::Prefetch;
use crate::narrow;
use crate::volume::Fs;

mod split;
pub use split::walk_extents_split;

/// Deepest tree walked at all: bounds recursion and scratch space. A
/// deeper root is still walked, since its entries are read as index
/// entries whatever they hold and are rejected on the way down; only a
/// chain of this many valid nodes stops the walk
/// (`InodeExtentTreeUnwalkable`).
pub const WALK_DEPTH_LIMIT: u16 = 32;

/// The depth above which e2fsck suggests a tree be made shallower: the
/// depth a tree mapping every logical block would need, counted as
/// libext2fs counts it (rounded-down logarithms of 2^32, of the root's
/// four entries and of the entries a block holds).
pub fn max_tree_depth(block_size: u32) -> u16 {
    let per_block = (block_size.saturating_sub(12) / 12).max(2);
    let log2 = |n: u64| narrow::sat16(63 - n.leading_zeros());
    1 + (log2(u64::from(u32::MAX)) - log2(4)) / log2(u64::from(per_block))
}

/// What the walker reports besides problems.
pub trait MapVisitor {
    /// A run of `len` data blocks at logical `lblk`, physical `pblk`, all
    /// inside the file system.
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, unwritten: bool);
    /// A mapping block (extent node below the root, indirect block), inside
    /// the file system. It is counted in i_blocks and claimed like data.
    fn node(&mut self, pblk: u64);
    /// A problem found on the way; pass 1B ignores them.
    fn problem(&mut self, p: Problem);
    /// A data pointer at logical `lblk` outside the file system, which a
    /// repair clears (reported through `problem` as well): e2fsck's pass
    /// 1 still lists that block of a directory, as a hole, for pass 2.
    fn cleared_data(&mut self, _lblk: u64) {}
    /// `blocks` more blocks of a regular file, already claimed, that its
    /// map names again (e2fsck counts them once more in i_blocks), the
    /// largest logical data block among them if any.
    fn repeated(&mut self, _blocks: u64, _last_lblk: Option<u64>) {}
    /// An extent node reached, with a valid header: its level (0 the
    /// root in the inode, counting down the tree), its entries in use and
    /// their room (pass 1E's statistics).
    fn extent_node(&mut self, _level: u16, _entries: u16, _max: u16) {}
    /// Whether an indirect block at `pblk` lies on the file system's
    /// critical metadata (superblock or descriptor copies, bitmaps, inode
    /// tables), where e2fsck walks it all the same but never writes it:
    /// it says so, and forgets an illegal pointer in it without a word.
    fn on_metadata(&self, _pblk: u64) -> bool {
        false
    }
    /// Whether to stop early (a budget ran out, or the caller found what it
    /// wanted).
    fn done(&self) -> bool {
        false
    }
    /// Whether the walk ends at an extent node failing its checksum or
    /// whose header is bad, the node itself counted, as a walk of
    /// libext2fs with checksums verified does (e2fsck's pass 1B under
    /// -n). The walk then reports the node's problem at once.
    fn stops_at_bad_node(&self) -> bool {
        false
    }
    /// Whether subtrees of a large extent tree may be walked apart, on
    /// other threads, and taken in with `absorb`: true only for a visitor
    /// whose state does not depend on the order of the blocks beyond what
    /// `Subtree` carries, and whose claims commute (a set union, a second
    /// claim marking a block shared, in any order).
    fn splittable(&self) -> bool {
        false
    }
    /// Takes in a subtree walked apart: what `data` and `node` would have
    /// done for it, its claims included. False when it cannot (a budget
    /// the subtree would use up), having done nothing: the subtree is then
    /// walked in place.
    fn absorb(&mut self, _s: &Subtree) -> bool {
        false
    }
}

/// What a subtree walked apart mapped, for `MapVisitor::absorb`.
#[derive(Clone, Debug, Default)]
pub struct Subtree {
    /// Data blocks and tree nodes below the subtree's root.
    pub blocks: u64,
    /// First block of its first data run, last block of its last one.
    pub first_pblk: Option<u64>,
    pub last_pblk: u64,
    /// A data run that does not follow the previous one on disk.
    pub fragmented: bool,
    pub last_block: Option<u64>,
    pub last_init: Option<u64>,
    /// Every block `data` and `node` were given.
    pub claims: ClaimLog,
    /// Pass 1E's per-level statistics of its nodes (`extent_node`).
    pub tree: crate::check::pass1e::TreeStats,
}

/// Blocks to claim, 64 to an entry: a leaf of one-block extents is a
/// dozen words to OR into the shared map instead of hundreds of atomic
/// claims, so taking a subtree in costs little beside walking it.
#[derive(Clone, Debug, Default)]
pub struct ClaimLog {
    /// (word, bits): block `64 * word + k` for each bit k.
    pub words: Vec<(u64, u64)>,
    /// Blocks logged again while their bit was already in the last word:
    /// each is one claim more (the map then marks it shared).
    pub again: Vec<u64>,
}

impl ClaimLog {
    #[inline]
    pub fn add(&mut self, pblk: u64, len: u64) {
        if len == 1 {
            // Most runs of a fragmented file: one bit.
            let (w, bit) = (pblk / 64, 1u64 << (pblk % 64));
            match self.words.last_mut() {
                Some((lw, bits)) if *lw == w => {
                    if *bits & bit != 0 {
                        self.again.push(pblk);
                    }
                    *bits |= bit;
                }
                _ => self.words.push((w, bit)),
            }
            return;
        }
        self.add_run(pblk, len);
    }

    fn add_run(&mut self, pblk: u64, len: u64) {
        let (mut b, end) = (pblk, pblk.saturating_add(len));
        while b < end {
            let w = b / 64;
            let n = (end - b).min(64 - b % 64);
            let mask = (u64::MAX >> (64 - n)) << (b % 64);
            match self.words.last_mut() {
                Some((lw, bits)) if *lw == w => {
                    let mut twice = *bits & mask;
                    while twice != 0 {
                        self.again.push(w * 64 + u64::from(twice.trailing_zeros()));
                        twice &= twice - 1;
                    }
                    *bits |= mask;
                }
                _ => self.words.push((w, mask)),
            }
            b += n;
        }
    }
}

/// What the caller knows about the inode, for the checks that depend on it.
#[derive(Clone, Copy, Debug)]
pub struct MapInfo {
    pub ino: u32,
    pub is_dir: bool,
    /// Last logical block inside i_size (`u64::MAX` for an empty file,
    /// meaning "everything is past EOF").
    pub eof_block: u64,
    /// Checksum seed of the inode, when extent blocks carry checksums.
    pub csum_seed: Option<u32>,
    /// large_dir: directories may exceed 2^(21-log) blocks... (e2fsck's
    /// "directory too big" limit applies only without it).
    pub large_dir: bool,
    /// e2fsck -n: every fix is declined, so a node whose checksum fails
    /// is still asked about after its entries' problems (a fix of one of
    /// them rewrites the node, checksum included).
    pub read_only: bool,
    /// The inode's own checksum fails and the check leaves it so:
    /// libext2fs verifies a node's checksum by reading the inode again
    /// (for its generation), which then fails, so every node fails its.
    pub inode_unreadable: bool,
}

impl MapInfo {
    /// A map walked outside pass 1 (the journal, orphans, a file about to
    /// be replaced): no size to judge blocks against and no checksums.
    pub fn unbounded(ino: u32, is_dir: bool) -> MapInfo {
        MapInfo {
            ino,
            is_dir,
            eof_block: u64::MAX - 1,
            csum_seed: None,
            large_dir: true,
            read_only: false,
            inode_unreadable: false,
        }
    }
}

/// Scratch space reused across inodes (no per-inode allocation).
pub struct Scratch {
    /// One per tree level (extent) or indirect level. A level's buffers
    /// are allocated when a walk first reaches it: trees are one or two
    /// levels deep, and 33 blocks for every worker were ~130 KiB each
    /// (issue 4: peak RSS).
    levels: Vec<Level>,
    /// Subtrees of huge files walked apart (`walk_extents_split`), how
    /// many of them were taken in, and how many helpers walked (for `-t`).
    pub split: [u64; 3],
}

/// A level of a walk: the node being scanned, and the nodes its parent
/// lists next, read ahead.
struct Level {
    buf: Vec<u8>,
    ahead: Prefetch,
}

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch::new()
    }
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            levels: (0..(WALK_DEPTH_LIMIT as usize + 1))
                .map(|_| Level {
                    buf: Vec::new(),
                    ahead: Prefetch::new(0),
                })
                .collect(),
            split: [0; 3],
        }
    }

    /// Starts a walk. Blocks read ahead for an earlier walk stay usable:
    /// a `Device` never changes under its reader (read-only, overlay fixed
    /// when it is built), and a repair checks its staged blocks through a
    /// new one, with new scratch space.
    fn begin(&mut self) -> &mut [Level] {
        &mut self.levels[..]
    }
}

/// The next level down, its scratch block one block long.
fn next_level(levels: &mut [Level], block_size: usize) -> Option<(&mut Level, &mut [Level])> {
    let (level, rest) = levels.split_first_mut()?;
    level.buf.resize(block_size, 0);
    level.ahead.set_block_size(block_size);
    Some((level, rest))
}

/// The detail of an extent node with no entries (a node libext2fs
/// steps over, unlike one with a bad header).
pub const EMPTY_NODE: &str = "empty node";

/// Does `b` (`len` bytes of node) carry a header e2fsck's library accepts?
/// Returns the reason when not.
pub fn header_problem(b: &[u8], len: usize) -> Option<&'static str> {
    let h = extent::parse_header(b);
    if h.magic != EXTENT_MAGIC {
        return Some("bad magic");
    }
    let max = extent::max_entries(len);
    // Room is left for a checksum tail: the stored max may be up to two
    // entries smaller than what fits.
    if h.max > max || h.max < max.saturating_sub(2) {
        return Some("bad max entries");
    }
    if h.entries > h.max {
        return Some("more entries than max");
    }
    None
}

/// Why pass 1 rejects an extent tree entry; e2fsck removes such an entry
/// (with the subtree below an index). Shared by the check and the repair
/// (`fix/blockmap.rs`) so both judge entries alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryFault {
    BadStart,
    Order,
    PastEnd,
    ZeroLength,
    EndsBeyond,
    DirTooBig,
    /// Starts inside the previous leaf extent of the file, though not
    /// before where its node may start (e2fsck's "collision").
    Overlap,
}

/// One entry of a node: a leaf extent or an index (whose length runs to
/// the next index or the node's end).
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub leaf: bool,
    pub lblk: u64,
    pub pblk: u64,
    pub len: u64,
    pub unwritten: bool,
}

/// What an entry is judged against at its place in the walk.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Entries may not start before this logical block.
    pub start: u64,
    /// Last logical block of the previous leaf extent of the file.
    pub last_lblk: Option<u64>,
    /// Last logical block the node may map (None: the root).
    pub end: Option<u64>,
    pub nblocks: u64,
    pub first_data_block: u64,
    pub eof_block: u64,
    /// A directory without large_dir: blocks it may not reach.
    pub dir_limit: Option<u64>,
}

/// Entry `i` of node `b` as (lblk, pblk, len, unwritten). An index
/// entry's length runs to the next entry's start or, for the last one, to
/// `end_blk`, the node's own end (`child_end_blk`), as e2fsck's library
/// measures it: in 32 bits, so it wraps where the end lies before the
/// entry, and is 0 where they meet.
pub fn node_entry(b: &[u8], i: usize, leaf: bool, end_blk: u64) -> (u64, u64, u64, bool) {
    if leaf {
        let e = extent::parse_leaf(b, i);
        return (u64::from(e.lblk), e.pblk, u64::from(e.len), e.unwritten);
    }
    let ix = extent::parse_index(b, i);
    let next = child_end_blk(b, i, end_blk);
    let len = u64::from(narrow::lo32(next.wrapping_sub(u64::from(ix.lblk))));
    (u64::from(ix.lblk), ix.leaf, len, false)
}

/// Where the subtree below index entry `i` of node `b` ends (exclusive):
/// the next entry's start, or for the last entry the node's own end
/// `end_blk`. At the root that end is i_size in blocks, so e2fsck bounds
/// the last subtree by the file's size.
pub fn child_end_blk(b: &[u8], i: usize, end_blk: u64) -> u64 {
    let entries = extent::parse_header(b).entries as usize;
    if i + 1 < entries {
        u64::from(extent::parse_index(b, i + 1).lblk)
    } else {
        end_blk
    }
}

/// The last logical block an index entry's subtree may map, None for no
/// bound: e2fsck takes an end of 0 as none (an entry at 0 of length 0
/// wraps to the largest block, which bounds nothing either).
pub fn child_bound(lblk: u64, len: u64) -> Option<u64> {
    (lblk + len).checked_sub(1).filter(|&e| e != 0)
}

/// The end of the root node for an inode whose last block inside i_size
/// is `eof_block`: i_size in blocks.
pub fn root_end_blk(eof_block: u64) -> u64 {
    eof_block.wrapping_add(1)
}

/// e2fsck's tests of one entry, in its order: an overlap with the file's
/// previous extent is judged last, where it is not already out of order
/// in its node (`start` is the previous extent's last block there).
pub fn entry_fault(e: &Entry, b: &Bounds) -> Option<EntryFault> {
    let last = e.lblk + e.len.max(1) - 1;
    if e.pblk == 0 || e.pblk < b.first_data_block || e.pblk >= b.nblocks {
        Some(EntryFault::BadStart)
    } else if e.lblk < b.start {
        Some(EntryFault::Order)
    } else if b.end.is_some_and(|end| last > end) && !(last > b.eof_block && e.unwritten) {
        Some(EntryFault::PastEnd)
    } else if e.leaf && e.len == 0 {
        Some(EntryFault::ZeroLength)
    } else if e.leaf && e.pblk.saturating_add(e.len) > b.nblocks {
        Some(EntryFault::EndsBeyond)
    } else if e.leaf && b.dir_limit.is_some_and(|l| e.lblk + e.len > l) {
        Some(EntryFault::DirTooBig)
    } else if e.leaf && b.last_lblk.is_some_and(|l| e.lblk <= l) {
        Some(EntryFault::Overlap)
    } else {
        None
    }
}

struct ExtentWalk<'a, 's, V: MapVisitor> {
    fs: &'a Fs,
    info: MapInfo,
    root_depth: u16,
    v: &'a mut V,
    nodes_left: u64,
    /// Last logical block of the previous leaf extent (or None before the
    /// first one): extents must be sorted and may not overlap.
    last_lblk: Option<u64>,
    dir_limit: u64,
    /// Problems reported so far (a repair reports a bad node checksum
    /// only when nothing below the node is wrong).
    problems: u32,
    /// Nodes below the root walked so far. A tree reaches each node once;
    /// a node reached again (index entries sharing a child) stops the
    /// walk, so memory and problems stay those of a tree of the same size.
    seen: NodeSet,
    stopped: bool,
    /// The lowest first logical block of the leaf entries judged while no
    /// extent was taken yet (`last_lblk` None): a subtree walked apart
    /// judged them without its predecessors' last block, which is right
    /// only when they all lie past it.
    pending_min: Option<u64>,
    /// The physical block of the last entry scanned (leaf or index, at
    /// any depth): where e2fsck's walk stands when it ends a node, and so
    /// the block it names asking about that node's checksum.
    last_pblk: u64,
    /// Subtrees walked ahead on other threads (`split`).
    spec: Option<&'a mut split::Spec<'s>>,
}

/// Blocks a directory may have without large_dir (2^21 bytes' worth of
/// 1 KiB blocks, scaled to the block size, as e2fsck counts).
pub fn dir_block_limit(fs: &Fs) -> u64 {
    let log = u64::from(fs.geo.block_size.trailing_zeros());
    1u64 << (21u64.saturating_sub(log.saturating_sub(10)))
}

/// Walks the extent tree rooted in `root` (the inode's 60-byte i_block).
pub fn walk_extents<V: MapVisitor>(
    fs: &Fs,
    info: MapInfo,
    root: &[u8],
    scratch: &mut Scratch,
    v: &mut V,
) {
    if let Some(why) = header_problem(root, 60) {
        v.problem(
            Problem::new(Code::InodeExtentHeader)
                .ino(Ino(info.ino))
                .detail(why),
        );
        return;
    }
    let h = extent::parse_header(root);
    too_deep(fs, info.ino, h.depth, v);
    let end_blk = root_end_blk(info.eof_block);
    ExtentWalk::new(fs, info, v, h.depth, None).node(
        root,
        h.depth,
        0,
        None,
        end_blk,
        scratch.begin(),
    );
}

/// e2fsck's "could be more shallow": a root deeper than any tree of the
/// file system's block size needs.
fn too_deep<V: MapVisitor>(fs: &Fs, ino: u32, depth: u16, v: &mut V) {
    let shallow = max_tree_depth(fs.geo.block_size);
    if depth > shallow {
        v.problem(
            Problem::new(Code::InodeExtentTooDeep)
                .ino(Ino(ino))
                .num(u64::from(depth))
                .num2(u64::from(shallow)),
        );
    }
}

impl<'a, 's, V: MapVisitor> ExtentWalk<'a, 's, V> {
    /// A walk of a tree whose root says `root_depth`, with subtrees
    /// walked ahead by `spec`'s helpers, if any.
    fn new(
        fs: &'a Fs,
        info: MapInfo,
        v: &'a mut V,
        root_depth: u16,
        spec: Option<&'a mut split::Spec<'s>>,
    ) -> Self {
        ExtentWalk {
            fs,
            info,
            root_depth,
            v,
            // Each node occupies a distinct claim; more nodes than blocks
            // means loops or sharing, and walking further proves nothing.
            nodes_left: fs.geo.blocks_count,
            last_lblk: None,
            dir_limit: dir_block_limit(fs),
            problems: 0,
            seen: NodeSet::default(),
            stopped: false,
            pending_min: None,
            last_pblk: 0,
            spec,
        }
    }
}

/// The extent tree nodes met in one walk. Fixed SipHash keys: the set is
/// never iterated, and `RandomState::new()` (a thread-local read and
/// write) was a visible part of pass 1's cost per inode, most inodes
/// having no node at all.
type NodeSet = std::collections::HashSet<
    u64,
    std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>,
>;

/// What follows an index entry's descent in its node's scan.
enum Step {
    /// The walk stops here (a budget ran out, a shared node).
    Stop,
    /// The entry is judged bad: the next one is checked against the same
    /// start.
    Skip,
    /// The child was walked: the next entry starts past this one.
    Next,
}

impl<V: MapVisitor> ExtentWalk<'_, '_, V> {
    fn report(&mut self, p: Problem) {
        self.problems += 1;
        self.v.problem(p);
    }

    /// Scans one node whose entries must lie in [start, end] (end None: no
    /// limit, as at the root) and whose last index runs to `end_blk`.
    fn node(
        &mut self,
        b: &[u8],
        depth: u16,
        start: u64,
        end: Option<u64>,
        end_blk: u64,
        levels: &mut [Level],
    ) {
        let h = extent::parse_header(b);
        self.v
            .extent_node(self.root_depth.saturating_sub(depth), h.entries, h.max);
        let ino = self.info.ino;
        let nblocks = self.fs.geo.blocks_count;
        let fdb = self.fs.geo.first_data_block;
        let mut start_block = start;
        for i in 0..usize::from(h.entries) {
            if self.v.done() || self.stopped {
                return;
            }
            let leaf = depth == 0;
            let (lblk, pblk, len, unwritten) = node_entry(b, i, leaf, end_blk);
            self.last_pblk = pblk;
            if leaf && self.last_lblk.is_none() && pblk != 0 && pblk >= fdb && pblk < nblocks {
                self.pending_min = Some(self.pending_min.map_or(lblk, |m| m.min(lblk)));
            }
            let fault = entry_fault(
                &Entry {
                    leaf,
                    lblk,
                    pblk,
                    len,
                    unwritten,
                },
                &Bounds {
                    start: start_block,
                    last_lblk: self.last_lblk,
                    end,
                    nblocks,
                    first_data_block: fdb,
                    eof_block: self.info.eof_block,
                    dir_limit: (self.info.is_dir && !self.info.large_dir).then_some(self.dir_limit),
                },
            );
            let last = lblk + len.max(1) - 1;
            let bad = |what: &str, e2: u32| {
                Problem::new(Code::InodeExtentBad)
                    .ino(Ino(ino))
                    .num(lblk)
                    .blk(Blk(pblk))
                    .num2(len)
                    .e2fsck(e2)
                    .detail(what.to_string())
            };
            let problem = fault.map(|f| match f {
                EntryFault::BadStart => bad("bad start block", 0x010058),
                EntryFault::Order => Problem::new(Code::InodeExtentOrder)
                    .ino(Ino(ino))
                    .num(lblk)
                    .blk(Blk(pblk))
                    .num2(len),
                EntryFault::PastEnd => Problem::new(Code::InodeExtentPastEof)
                    .ino(Ino(ino))
                    .num(lblk)
                    .blk(Blk(pblk))
                    .num2(len),
                EntryFault::ZeroLength => bad("zero length", 0x010066),
                EntryFault::EndsBeyond => bad("ends beyond the file system", 0x010059),
                EntryFault::DirTooBig => bad("directory too big", 0x010044),
                EntryFault::Overlap => bad("overlaps the previous extent", 0x01007D),
            });
            if let Some(p) = problem {
                self.report(p);
                continue;
            }
            if leaf {
                if unwritten && self.info.is_dir {
                    self.report(bad("uninitialized extent in a directory", 0x010073));
                }
                self.v.data(lblk, pblk, len, unwritten);
                self.last_lblk = Some(last);
                start_block = last;
                continue;
            }
            // Index entry: descend.
            match self.descend(b, i, h.entries, depth, (lblk, pblk, len), end_blk, levels) {
                Step::Stop => return,
                Step::Skip => continue,
                Step::Next => {}
            }
            start_block = lblk;
        }
    }

    /// Walks the child node an index entry of `b` (entry `i` of `entries`,
    /// at `depth`) names: `(lblk, pblk, len)` as `node_entry` reads it.
    #[allow(clippy::too_many_arguments)]
    fn descend(
        &mut self,
        b: &[u8],
        i: usize,
        entries: u16,
        depth: u16,
        (lblk, pblk, len): (u64, u64, u64),
        end_blk: u64,
        levels: &mut [Level],
    ) -> Step {
        let ino = self.info.ino;
        if self.nodes_left == 0 {
            return Step::Stop;
        }
        if !self.seen.insert(pblk) {
            // The blocks below other paths are neither claimed nor
            // known, as with a tree too deep: the inode cannot keep
            // them.
            self.stopped = true;
            self.report(
                Problem::new(Code::InodeExtentTreeShared)
                    .ino(Ino(ino))
                    .blk(Blk(pblk)),
            );
            return Step::Stop;
        }
        self.nodes_left -= 1;
        let Some((Level { buf, ahead }, rest)) = next_level(levels, self.fs.block_size()) else {
            // The blocks below are neither claimed nor known: the
            // inode must not keep them unclaimed (pass 5 would free
            // what it still maps).
            self.report(
                Problem::new(Code::InodeExtentTreeUnwalkable)
                    .ino(Ino(ino))
                    .num(u64::from(WALK_DEPTH_LIMIT)),
            );
            return Step::Stop;
        };
        let node_end = child_bound(lblk, len);
        let node_end_blk = child_end_blk(b, i, end_blk);
        let task = split::Task {
            pblk,
            lblk,
            root_depth: self.root_depth,
            end: node_end,
            end_blk: node_end_blk,
            depth: depth - 1,
            room: rest.len(),
        };
        let mut walked = self.spec.as_deref_mut().and_then(|s| s.take(task));
        let mut read = false;
        let head = match &walked {
            Some(w) => w.head.clone(),
            None => {
                read = true;
                // The children this node lists next are read ahead
                // with it.
                let geo = &self.fs.geo;
                let next = (i + 1..entries as usize)
                    .map(|j| extent::parse_index(b, j).leaf)
                    .filter(|&p| geo.block_in_fs(p));
                match ahead.read(&self.fs.dev, pblk, next, buf) {
                    Ok(()) => split::child_head(&self.info, buf),
                    Err(e) => split::ChildHead {
                        read_err: Some(e.to_string()),
                        ..split::ChildHead::default()
                    },
                }
            }
        };
        if let Some(e) = head.read_err {
            let p = Problem::new(Code::InodeBlockBitmapUnreadable)
                .ino(Ino(ino))
                .blk(Blk(pblk))
                .detail(format!("extent node: {e}"));
            if self.info.read_only {
                // e2fsck -n declines to ignore the error: its walk of
                // the tree fails there and goes no further.
                self.report(p.e2fsck(0x010057).num(lblk));
                self.stopped = true;
                return Step::Stop;
            }
            self.report(p);
            return Step::Skip;
        }
        if let Some(why) = head.why {
            self.report(
                Problem::new(Code::InodeExtentNodeBad)
                    .ino(Ino(ino))
                    .blk(Blk(pblk))
                    .num(lblk)
                    .detail(why),
            );
            if self.v.stops_at_bad_node() {
                // libext2fs's walk has handed the node's block over
                // before it fails to go down into it.
                self.v.node(pblk);
                self.stopped = true;
                return Step::Stop;
            }
            return Step::Skip;
        }
        self.v.node(pblk);
        if head.csum_bad && self.v.stops_at_bad_node() {
            self.stopped = true;
            self.report(
                Problem::new(Code::InodeExtentNodeChecksum)
                    .ino(Ino(ino))
                    .blk(Blk(pblk)),
            );
            return Step::Stop;
        }
        if head.entries == 0 {
            return self.empty_node(ino, pblk, lblk);
        }
        let first = head.first;
        let mut had_problem = false;
        if first != lblk {
            had_problem = true;
            self.report(
                Problem::new(Code::InodeExtentIndexEnd)
                    .ino(Ino(ino))
                    .num(lblk)
                    .num2(first),
            );
        }
        let before = self.problems;
        // e2fsck scans the child from its own first block (after
        // moving the index there when it may).
        match walked.as_mut() {
            Some(w) if self.fits(w) => self.take_in(w),
            _ => {
                if !read
                    && ahead
                        .read(&self.fs.dev, pblk, std::iter::empty(), buf)
                        .is_err()
                {
                    // Read once already (by a helper): a device failing
                    // now is reported as the first read would have been.
                    self.report(
                        Problem::new(Code::InodeBlockBitmapUnreadable)
                            .ino(Ino(ino))
                            .blk(Blk(pblk))
                            .detail("extent node: read failed".to_string()),
                    );
                    return Step::Skip;
                }
                self.node(buf, depth - 1, first, node_end, node_end_blk, rest);
            }
        }
        if let (Some(w), Some(s)) = (walked, self.spec.as_deref_mut()) {
            s.give_back(w);
        }
        had_problem |= self.problems != before;
        if head.csum_bad && (!had_problem || self.info.read_only) {
            self.report(
                Problem::new(Code::InodeExtentNodeChecksum)
                    .ino(Ino(ino))
                    .blk(Blk(pblk))
                    .num(self.last_pblk),
            );
        }
        Step::Next
    }

    /// A child node listing no entries. libext2fs will not go down into
    /// it: e2fsck's walk of the tree fails there, and -n declines to clear
    /// the inode and gives up, as on a node it cannot read. A repair
    /// judges the node damaged.
    fn empty_node(&mut self, ino: u32, pblk: u64, lblk: u64) -> Step {
        if self.info.read_only {
            self.report(
                Problem::new(Code::InodeBlockBitmapUnreadable)
                    .ino(Ino(ino))
                    .blk(Blk(pblk))
                    .detail("extent node: it lists no entries to go down to".to_string())
                    .e2fsck(0x010057)
                    .num(lblk),
            );
            self.stopped = true;
            return Step::Stop;
        }
        self.report(
            Problem::new(Code::InodeExtentNodeBad)
                .ino(Ino(ino))
                .blk(Blk(pblk))
                .num(lblk)
                .detail(EMPTY_NODE),
        );
        Step::Skip
    }

    /// Whether a subtree walked apart is what walking it here would give:
    /// the leaf entries it judged before taking an extent lie past the
    /// last one taken so far, it shares no node with what was walked, and
    /// neither budget runs out inside it. Then the visitor takes it in
    /// (its claims included).
    fn fits(&mut self, w: &split::Walked) -> bool {
        let order_ok = match (self.last_lblk, w.pending_min) {
            (Some(l), Some(m)) => m > l,
            _ => true,
        };
        order_ok
            && (w.nodes.len() as u64) < self.nodes_left
            && !w.nodes.iter().any(|n| self.seen.contains(n))
            && self.v.absorb(&w.sub)
    }

    fn take_in(&mut self, w: &mut split::Walked) {
        self.nodes_left -= w.nodes.len() as u64;
        self.seen.extend(w.nodes.drain(..));
        for p in w.problems.drain(..) {
            self.report(p);
        }
        if w.last_lblk.is_some() {
            self.last_lblk = w.last_lblk;
        }
        if w.last_pblk != 0 {
            self.last_pblk = w.last_pblk;
        }
        self.stopped |= w.stopped;
        if let Some(s) = self.spec.as_deref_mut() {
            s.taken += 1;
        }
    }
}

/// Walks ext2/3 block pointers: 12 direct, then single, double and triple
/// indirect. Out-of-range pointers are reported ("illegal block") and
/// skipped with everything below them. `count_only_dind` is for the resize
/// inode, whose indirect blocks are reserved GDT blocks (metadata).
pub fn walk_indirect<V: MapVisitor>(
    fs: &Fs,
    ino: u32,
    ptrs: &[u32; 15],
    scratch: &mut Scratch,
    v: &mut V,
) {
    walk_indirect_limited(fs, ino, ptrs, (None, None), false, scratch, v);
}

/// Like [`walk_indirect`], with data blocks past logical block `limit`
/// reported like illegal ones (e2fsck's "causes directory to be too big",
/// see [`indirect_limit`]). Returns whether e2fsck's walk of the map ends
/// in error, which stops its -n: an illegal indirect pointer that no
/// indirect block read after it (its walk keeps the last error of a read
/// or a pointer, a good read clearing it) makes up for. `read_only`: the
/// illegal indirect pointers stay, and the walk of the indirect block
/// holding one ends there, as do those of the blocks above it up to the
/// inode (e2fsck's walk gives up on a block at its first error).
/// `count_from`: for a regular file, the blocks counted before its map
/// (what its xattrs charge), from which every block met counts toward
/// [`file_block_limit`].
pub fn walk_indirect_limited<V: MapVisitor>(
    fs: &Fs,
    ino: u32,
    ptrs: &[u32; 15],
    (limit, count_from): (Option<u64>, Option<u64>),
    read_only: bool,
    scratch: &mut Scratch,
    v: &mut V,
) -> bool {
    let apb = u64::from(fs.geo.block_size / 4);
    // Only a slow symlink is limited to block 0 (see `indirect_limit`).
    let too_big = if limit == Some(0) { 0x010046 } else { 0x010044 };
    let mut illegal = PtrCount {
        illegal: 0,
        limit,
        too_big,
        seen: std::collections::HashSet::new(),
        meta_revisits: 0,
        stopped: false,
        in_meta: false,
        bad_ind: false,
        read_only,
        unwind: false,
        count: count_from.map(|counted| FileCount {
            counted,
            max: file_block_limit(fs),
            crossed: false,
            refs: 0,
            last_data: None,
            subtrees: std::collections::HashMap::new(),
            shared_said: false,
        }),
        replay: 0,
        silent: 0,
        raised: 0,
    };
    let levels = scratch.begin();
    for (i, &p) in ptrs.iter().enumerate().take(12) {
        if v.done() || illegal.stopped {
            return false;
        }
        if p != 0 {
            visit_ptr(
                fs,
                ino,
                u64::from(p),
                i as u64,
                0,
                apb,
                &mut *levels,
                &[],
                &mut illegal,
                v,
            );
        }
    }
    let mut base = 12u64;
    for level in 1..=3u32 {
        let p = ptrs[11 + level as usize];
        if p != 0 && !illegal.stopped {
            visit_ptr(
                fs,
                ino,
                u64::from(p),
                base,
                level,
                apb,
                &mut *levels,
                &[],
                &mut illegal,
                v,
            );
        }
        // The inode's own pointers are each walked whatever came before.
        illegal.unwind = false;
        base += apb.pow(level);
    }
    illegal.bad_ind
}

/// Walks of an indirect block on metadata after its first, per inode:
/// each costs one block of pointers, and blocks off metadata reached
/// again still stop the walk, so the work stays bounded.
const META_REVISITS: u32 = 8;

/// Illegal pointers met so far in one inode, and the data block limit.
struct PtrCount {
    illegal: u32,
    limit: Option<u64>,
    /// e2fsck's code for a block past `limit`: a directory or a symlink
    /// made too big.
    too_big: u32,
    /// Indirect blocks walked so far. A map reaches each once; one
    /// reached again (pointers sharing an indirect block) stops the walk,
    /// so work and problems stay those of a map of the same size.
    seen: std::collections::HashSet<u64>,
    /// Indirect blocks on metadata walked again (see [`META_REVISITS`]).
    meta_revisits: u32,
    stopped: bool,
    /// The pointers being walked sit in an indirect block on metadata.
    in_meta: bool,
    /// The last indirect pointer met was illegal, with no indirect block
    /// read since (see [`walk_indirect_limited`]).
    bad_ind: bool,
    /// Illegal indirect pointers are kept (-n).
    read_only: bool,
    /// An illegal indirect pointer was kept: the indirect blocks being
    /// walked end their walks.
    unwind: bool,
    /// A regular file's block count (None for other maps).
    count: Option<FileCount>,
    /// Subtrees being walked again, whose blocks were claimed already.
    replay: u32,
    /// Subtrees below a block past a file's limit, claimed by a repair
    /// without a word (see `claim_too_big`).
    silent: u32,
    /// Problems this walk raised so far.
    raised: u64,
}

/// e2fsck's running count of a regular file's blocks as its walk meets
/// them, each as often as the map names it (indirect blocks too, after
/// what its xattrs charge): the block that brings it to 2^(31 -
/// s_log_block_size) makes the file too big, and so does every block
/// after it, since those are not counted.
struct FileCount {
    counted: u64,
    max: u64,
    crossed: bool,
    /// Nonzero pointers met, too big or not.
    refs: u64,
    /// The largest logical data block counted.
    last_data: Option<u64>,
    /// Indirect blocks (number, level) walked whole and clean.
    subtrees: std::collections::HashMap<(u64, u32), Walked>,
    /// The map was said to reach an indirect block more than once.
    shared_said: bool,
}

impl FileCount {
    /// Counts one more block; true when it is too big instead.
    fn too_big(&mut self) -> bool {
        self.crossed |= self.counted + 1 >= self.max;
        if !self.crossed {
            self.counted += 1;
        }
        self.crossed
    }
}

/// What the subtree below an indirect block counted, walked once.
#[derive(Clone, Copy)]
struct Walked {
    counted: u64,
    refs: u64,
    /// Its largest logical data block, from the subtree's first.
    last: Option<u64>,
}

/// The count a regular file's blocks may not reach (e2fsck's
/// max_blocks, the same with or without huge_file).
pub fn file_block_limit(fs: &Fs) -> u64 {
    1u64 << (31 - (fs.geo.block_size.trailing_zeros() - 10))
}

/// Illegal pointers after which the walk of one inode stops: e2fsck -y
/// clears the inode at the twelfth, and its -n asks again at every
/// twelfth without end; a hundred questions are enough to tell.
const ILLEGAL_PTRS_SHOWN: u32 = 12 * 100;

/// The last logical block a block-mapped inode may map (None: no limit
/// but the map's own): e2fsck clears blocks past 2^21 bytes' worth of
/// 1 KiB blocks in a directory without large_dir, and past block 0 in a
/// slow symlink.
pub fn indirect_limit(fs: &Fs, is_dir: bool, is_symlink: bool, large_dir: bool) -> Option<u64> {
    if is_dir && !large_dir {
        Some(dir_block_limit(fs))
    } else if is_symlink {
        Some(0)
    } else {
        None
    }
}

/// Where one pointer sits in the map: its block, the first logical block
/// it maps, its level (0 for data) and the pointers its parent lists after
/// it (read ahead with it).
#[derive(Clone, Copy)]
struct At<'b> {
    blk: u64,
    lblk: u64,
    level: u32,
    siblings: &'b [u8],
}

#[allow(clippy::too_many_arguments)]
fn visit_ptr<V: MapVisitor>(
    fs: &Fs,
    ino: u32,
    blk: u64,
    lblk: u64,
    level: u32,
    apb: u64,
    levels: &mut [Level],
    siblings: &[u8],
    illegal: &mut PtrCount,
    v: &mut V,
) {
    if v.done() || illegal.stopped {
        return;
    }
    let at = At {
        blk,
        lblk,
        level,
        siblings,
    };
    if let Some(c) = illegal.count.as_mut() {
        c.refs += 1;
    }
    let too_big = level == 0 && illegal.limit.is_some_and(|l| lblk > l);
    if !fs.geo.block_in_fs(blk) || too_big {
        illegal_ptr(fs, ino, at, too_big, illegal, v);
        return;
    }
    if illegal.silent == 0 && illegal.count.as_mut().is_some_and(|c| c.too_big()) {
        file_too_big(ino, at, illegal, v);
        if illegal.read_only {
            // e2fsck -n keeps the block and walks what it maps, each block
            // too big in turn (its count no longer moves).
            if level > 0 {
                illegal.replay += 1;
                walk_children(fs, ino, at, apb, levels, illegal, v);
                illegal.replay -= 1;
            }
            return;
        }
        claim_too_big(fs, ino, at, apb, levels, illegal, v);
        return;
    }
    if level == 0 {
        if let Some(c) = illegal.count.as_mut() {
            c.last_data = c.last_data.max(Some(lblk));
        }
        if illegal.replay > 0 {
            v.repeated(1, Some(lblk));
        } else {
            v.data(lblk, blk, 1, false);
        }
        return;
    }
    let on_meta = ino != crate::fs::inode::RESIZE_INO && v.on_metadata(blk);
    if on_meta {
        illegal.raised += 1;
        v.problem(
            Problem::new(Code::InodeIndirectOnMetadata)
                .ino(Ino(ino))
                .blk(Blk(blk)),
        );
    }
    // The resize inode's map is judged by its own check (pass 1 counts
    // its blocks only): e2fsck accepts reserved blocks listed twice past
    // the part it reads, and its map is two levels, bounded anyway.
    // An indirect block on metadata is never written by a repair, and
    // e2fsck walks it as often as the map names it (its blocks then shared
    // and cloned in pass 1D, the file kept): walked again a few times, as
    // e2fsck; past that the walk stops as for any shared indirect block.
    let again = ino != crate::fs::inode::RESIZE_INO && !illegal.seen.insert(blk);
    if again && !on_meta && revisit(fs, ino, at, apb, levels, illegal, v) {
        return;
    }
    if again && on_meta && illegal.meta_revisits < META_REVISITS {
        illegal.meta_revisits += 1;
    } else if again {
        // The blocks below other paths are neither claimed nor known: the
        // inode cannot keep them (a repair clears it).
        illegal.stopped = true;
        illegal.raised += 1;
        v.problem(
            Problem::new(Code::InodeBlockMapShared)
                .ino(Ino(ino))
                .blk(Blk(blk)),
        );
        return;
    }
    if illegal.replay > 0 {
        v.repeated(1, None);
    } else {
        v.node(blk);
    }
    let before = illegal
        .count
        .as_ref()
        .map(|c| (c.counted, c.refs, illegal.raised));
    walk_children(fs, ino, at, apb, levels, illegal, v);
    if let (Some((counted, refs, raised)), Some(c)) = (before, illegal.count.as_mut()) {
        // Only a subtree walked whole, with nothing wrong in it, is counted
        // again without a walk when the map names it again.
        if raised == illegal.raised
            && !illegal.stopped
            && !c.crossed
            && !illegal.unwind
            && !v.done()
        {
            let sub = Walked {
                counted: c.counted - counted,
                refs: c.refs - refs,
                last: c.last_data.and_then(|l| l.checked_sub(lblk)),
            };
            c.subtrees.insert((blk, level), sub);
        }
    }
}

/// A pointer outside the file system, or past the largest logical block
/// its inode may map: reported, never followed.
fn illegal_ptr<V: MapVisitor>(
    fs: &Fs,
    ino: u32,
    at: At,
    too_big: bool,
    illegal: &mut PtrCount,
    v: &mut V,
) {
    let At {
        blk, lblk, level, ..
    } = at;
    illegal.illegal += 1;
    // In an indirect block that is really metadata the pointer is
    // garbage of that metadata: e2fsck drops it in core only, unasked
    // (it may not write the block), though it counts toward the
    // twelfth.
    if illegal.in_meta {
        return;
    }
    illegal.raised += 1;
    illegal.bad_ind |= level > 0;
    illegal.unwind |= level > 0 && illegal.read_only;
    let why = if fs.geo.block_in_fs(blk) {
        ", past the file's largest logical block"
    } else {
        ""
    };
    let e2 = if too_big { illegal.too_big } else { 0x01000E };
    twelfth(ino, illegal, v);
    v.problem(
        Problem::new(Code::InodeIllegalBlock)
            .ino(Ino(ino))
            .blk(Blk(blk))
            .e2fsck(e2)
            .detail(format!("{}, logical {lblk}{why}", level_name(level))),
    );
    // A block past a directory's limit e2fsck drops from its list.
    if level == 0 && !too_big {
        v.cleared_data(lblk);
    }
}

/// e2fsck asks again at every twelfth illegal block, before naming it (a
/// read-only check hears each question; a repair clears the inode at the
/// first).
fn twelfth<V: MapVisitor>(ino: u32, illegal: &mut PtrCount, v: &mut V) {
    if illegal.illegal.is_multiple_of(12) {
        v.problem(Problem::new(Code::InodeTooManyIllegalBlocks).ino(Ino(ino)));
        illegal.stopped = illegal.illegal >= ILLEGAL_PTRS_SHOWN;
    }
}

fn level_name(level: u32) -> &'static str {
    match level {
        0 => "data block",
        1 => "indirect block",
        2 => "double indirect block",
        _ => "triple indirect block",
    }
}

/// A block that brings a regular file's count to its limit, or comes
/// after one that did: e2fsck neither counts nor claims it.
fn file_too_big<V: MapVisitor>(ino: u32, at: At, illegal: &mut PtrCount, v: &mut V) {
    illegal.illegal += 1;
    illegal.raised += 1;
    twelfth(ino, illegal, v);
    v.problem(
        Problem::new(Code::InodeIllegalBlock)
            .ino(Ino(ino))
            .blk(Blk(at.blk))
            .e2fsck(0x010045)
            .detail(format!(
                "{}, logical {}, past the block count a file may reach",
                level_name(at.level),
                at.lblk
            )),
    );
}

/// A block past a file's limit in a repair: e2fsck clears the pointer
/// and walks nothing below it, which the repair does only by clearing the
/// inode (at the twelfth); until then the block and what it maps stay
/// claimed, so that no block the inode still maps is counted free.
fn claim_too_big<V: MapVisitor>(
    fs: &Fs,
    ino: u32,
    at: At,
    apb: u64,
    levels: &mut [Level],
    illegal: &mut PtrCount,
    v: &mut V,
) {
    if illegal.replay > 0 {
        return;
    }
    if at.level == 0 {
        v.data(at.lblk, at.blk, 1, false);
        return;
    }
    if !illegal.seen.insert(at.blk) {
        return;
    }
    v.node(at.blk);
    illegal.silent += 1;
    walk_children(fs, ino, at, apb, levels, illegal, v);
    illegal.silent -= 1;
}

/// An indirect block of a regular file met again, below a subtree walked
/// whole and clean the first time: e2fsck walks it again, each block
/// counting once more. Its count is added without a walk, unless the
/// file's limit falls inside it: then it is walked again, claiming
/// nothing, to the block that reaches the limit. False when the subtree
/// is not known (the walk stops there as for any shared block).
fn revisit<V: MapVisitor>(
    fs: &Fs,
    ino: u32,
    at: At,
    apb: u64,
    levels: &mut [Level],
    illegal: &mut PtrCount,
    v: &mut V,
) -> bool {
    let Some(c) = illegal.count.as_mut() else {
        return false;
    };
    let Some(sub) = c.subtrees.get(&(at.blk, at.level)).copied() else {
        return false;
    };
    // Said once; the subtrees around it stay clean (their counts known).
    if !c.shared_said {
        c.shared_said = true;
        v.problem(
            Problem::new(Code::InodeBlockMapShared)
                .ino(Ino(ino))
                .blk(Blk(at.blk)),
        );
    }
    v.repeated(1, None);
    if c.counted + sub.counted < c.max {
        c.counted += sub.counted;
        c.refs += sub.refs;
        if let Some(last) = sub.last {
            c.last_data = c.last_data.max(Some(at.lblk + last));
        }
        v.repeated(sub.counted, sub.last.map(|l| at.lblk + l));
        return true;
    }
    illegal.replay += 1;
    walk_children(fs, ino, at, apb, levels, illegal, v);
    illegal.replay -= 1;
    true
}

/// Reads indirect block `at` and visits its pointers.
fn walk_children<V: MapVisitor>(
    fs: &Fs,
    ino: u32,
    at: At,
    apb: u64,
    levels: &mut [Level],
    illegal: &mut PtrCount,
    v: &mut V,
) {
    let At {
        blk,
        lblk,
        level,
        siblings,
    } = at;
    let Some((Level { buf, ahead }, rest)) = next_level(levels, fs.block_size()) else {
        return;
    };
    // The indirect blocks the parent lists after this one are read ahead
    // with it (for level 1 these are the file's next indirect blocks).
    let next = inode::map_ptrs(siblings)
        .map(u64::from)
        .filter(|&p| p != 0 && fs.geo.block_in_fs(p));
    if let Err(e) = ahead.read(&fs.dev, blk, next, buf) {
        illegal.raised += 1;
        v.problem(
            Problem::new(Code::InodeBlockBitmapUnreadable)
                .ino(Ino(ino))
                .blk(Blk(blk))
                .detail(format!("indirect block: {e}")),
        );
        return;
    }
    illegal.bad_ind = false;
    let span = apb.pow(level - 1);
    let per = narrow::to_usize(apb);
    let ptrs = &buf[..(per * 4).min(buf.len())];
    let outer_meta = std::mem::replace(
        &mut illegal.in_meta,
        ino != crate::fs::inode::RESIZE_INO && v.on_metadata(blk),
    );
    for k in 0..per {
        let p = inode::map_ptr(ptrs, k);
        if p != 0 {
            visit_ptr(
                fs,
                ino,
                u64::from(p),
                lblk + k as u64 * span,
                level - 1,
                apb,
                rest,
                ptrs.get((k + 1) * 4..).unwrap_or(&[]),
                illegal,
                v,
            );
        }
        if v.done() || illegal.stopped || illegal.unwind {
            break;
        }
    }
    illegal.in_meta = outer_meta;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::{put_le16, put_le32};
    use crate::fs::geometry::Geometry;
    use crate::fs::superblock::Superblock;
    use crate::io::Device;

    const BS: usize = 1024;
    const NBLOCKS: u64 = 256;

    /// A 256-block, 1 KiB-block file system image in a temporary file,
    /// with `blocks` written at the given block numbers.
    fn test_fs(name: &str, blocks: &[(u64, Vec<u8>)]) -> (Fs, std::path::PathBuf) {
        let mut sbb = vec![0u8; 1024];
        put_le32(&mut sbb, 0x0, 64); // inodes_count
        put_le32(&mut sbb, 0x4, NBLOCKS as u32);
        put_le32(&mut sbb, 0x14, 1); // first_data_block
        put_le32(&mut sbb, 0x20, 8192); // blocks_per_group
        put_le32(&mut sbb, 0x24, 8192); // clusters_per_group
        put_le32(&mut sbb, 0x28, 64); // inodes_per_group
        put_le16(&mut sbb, 0x38, 0xEF53);
        put_le32(&mut sbb, 0x4C, 1); // rev_level
        put_le32(&mut sbb, 0x54, 11); // first_ino
        put_le16(&mut sbb, 0x58, 128); // inode_size
        let sb = Superblock::parse(&sbb);
        let geo = Geometry::new(&sb).expect("geometry");
        let mut img = vec![0u8; NBLOCKS as usize * BS];
        for (b, data) in blocks {
            let off = *b as usize * BS;
            img[off..off + data.len()].copy_from_slice(data);
        }
        let path =
            std::env::temp_dir().join(format!("pfsck-blockmap-{name}-{}", std::process::id()));
        std::fs::write(&path, &img).unwrap();
        let dev = Device::open_read_only(&path).unwrap();
        let fs = Fs {
            dev,
            sb,
            sb_block: 1,
            geo,
            gds: vec![Default::default()],
            gd_raw: vec![0u8; 32],
            csum_seed: 0,
            clock: crate::engine::Clock::System,
        };
        (fs, path)
    }

    #[derive(Default)]
    struct Rec {
        data: Vec<(u64, u64, u64, bool)>,
        nodes: Vec<u64>,
        probs: Vec<Code>,
    }

    impl MapVisitor for Rec {
        fn data(&mut self, lblk: u64, pblk: u64, len: u64, unwritten: bool) {
            self.data.push((lblk, pblk, len, unwritten));
        }
        fn node(&mut self, pblk: u64) {
            self.nodes.push(pblk);
        }
        fn problem(&mut self, p: Problem) {
            self.probs.push(p.code);
        }
    }

    fn header(b: &mut [u8], entries: u16, max: u16, depth: u16) {
        put_le16(b, 0, EXTENT_MAGIC);
        put_le16(b, 2, entries);
        put_le16(b, 4, max);
        put_le16(b, 6, depth);
    }

    fn leaf(b: &mut [u8], i: usize, lblk: u32, len: u16, pblk: u32) {
        let o = 12 + 12 * i;
        put_le32(b, o, lblk);
        put_le16(b, o + 4, len);
        put_le32(b, o + 8, pblk);
    }

    fn index(b: &mut [u8], i: usize, lblk: u32, child: u32) {
        let o = 12 + 12 * i;
        put_le32(b, o, lblk);
        put_le32(b, o + 4, child);
    }

    fn info(ino: u32) -> MapInfo {
        MapInfo {
            ino,
            is_dir: false,
            eof_block: 100,
            csum_seed: None,
            large_dir: false,
            read_only: false,
            inode_unreadable: false,
        }
    }

    #[test]
    fn extent_root_leaf_and_problems() {
        let (fs, path) = test_fs("leaf", &[]);
        let mut root = [0u8; 60];
        header(&mut root, 4, 4, 0);
        leaf(&mut root, 0, 0, 3, 50);
        leaf(&mut root, 1, 10, 32768 + 2, 60); // unwritten
        leaf(&mut root, 2, 5, 1, 70); // out of order
        leaf(&mut root, 3, 20, 1, 9999); // outside the fs
        let mut r = Rec::default();
        walk_extents(&fs, info(12), &root, &mut Scratch::new(), &mut r);
        assert_eq!(r.data, vec![(0, 50, 3, false), (10, 60, 2, true)]);
        assert_eq!(r.probs, vec![Code::InodeExtentOrder, Code::InodeExtentBad]);
        assert!(r.nodes.is_empty());

        let mut bad = root;
        put_le16(&mut bad, 0, 0x1234);
        let mut r = Rec::default();
        walk_extents(&fs, info(12), &bad, &mut Scratch::new(), &mut r);
        assert_eq!(r.probs, vec![Code::InodeExtentHeader]);
        assert!(r.data.is_empty());
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn extent_index_to_leaf() {
        let max = extent::max_entries(BS);
        let mut child = vec![0u8; BS];
        header(&mut child, 2, max, 0);
        leaf(&mut child, 0, 0, 4, 100);
        leaf(&mut child, 1, 8, 1, 110);
        let mut child2 = vec![0u8; BS];
        header(&mut child2, 1, max, 0);
        leaf(&mut child2, 0, 30, 1, 120); // index says 20: start mismatch
        let mut badchild = vec![0u8; BS];
        // libext2fs derives a node's level from the root and never reads a
        // child's depth field, so a leaf whose field is wrong is still walked.
        header(&mut badchild, 1, max, 1);
        leaf(&mut badchild, 0, 50, 1, 130);
        let (fs, path) = test_fs("index", &[(40, child), (41, child2), (42, badchild)]);
        let mut root = [0u8; 60];
        header(&mut root, 3, 4, 1);
        index(&mut root, 0, 0, 40);
        index(&mut root, 1, 20, 41);
        index(&mut root, 2, 50, 42);
        let mut r = Rec::default();
        walk_extents(&fs, info(12), &root, &mut Scratch::new(), &mut r);
        assert_eq!(r.nodes, vec![40, 41, 42]);
        assert_eq!(
            r.data,
            vec![
                (0, 100, 4, false),
                (8, 110, 1, false),
                (30, 120, 1, false),
                (50, 130, 1, false)
            ]
        );
        assert_eq!(r.probs, vec![Code::InodeExtentIndexEnd]);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn extent_child_past_parent_range() {
        let max = extent::max_entries(BS);
        let mut child = vec![0u8; BS];
        header(&mut child, 2, max, 0);
        leaf(&mut child, 0, 0, 4, 100);
        leaf(&mut child, 1, 15, 10, 110); // beyond next index (20)
        let mut child2 = vec![0u8; BS];
        header(&mut child2, 1, max, 0);
        leaf(&mut child2, 0, 20, 1, 130);
        let (fs, path) = test_fs("range", &[(40, child), (41, child2)]);
        let mut root = [0u8; 60];
        header(&mut root, 2, 4, 1);
        index(&mut root, 0, 0, 40);
        index(&mut root, 1, 20, 41);
        let mut r = Rec::default();
        walk_extents(&fs, info(12), &root, &mut Scratch::new(), &mut r);
        assert_eq!(r.probs, vec![Code::InodeExtentPastEof]);
        assert_eq!(r.data, vec![(0, 100, 4, false), (20, 130, 1, false)]);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn indirect_blocks_and_illegal_pointers() {
        let mut ind = vec![0u8; BS];
        put_le32(&mut ind, 0, 80);
        put_le32(&mut ind, 4, 5000); // illegal
        put_le32(&mut ind, 8, 81);
        let (fs, path) = test_fs("ind", &[(70, ind)]);
        let mut ptrs = [0u32; 15];
        ptrs[0] = 60;
        ptrs[1] = 0; // hole
        ptrs[2] = 61;
        ptrs[12] = 70;
        ptrs[13] = 9999; // illegal double indirect
        let mut r = Rec::default();
        walk_indirect(&fs, 12, &ptrs, &mut Scratch::new(), &mut r);
        assert_eq!(r.nodes, vec![70]);
        assert_eq!(
            r.data,
            vec![
                (0, 60, 1, false),
                (2, 61, 1, false),
                (12, 80, 1, false),
                (14, 81, 1, false)
            ]
        );
        assert_eq!(
            r.probs,
            vec![Code::InodeIllegalBlock, Code::InodeIllegalBlock]
        );
        std::fs::remove_file(path).unwrap();
    }
}
