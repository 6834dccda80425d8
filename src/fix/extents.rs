//! Pass 1E: a block-mapped file rebuilt as an extent tree, as e2fsck does
//! for every block map with `-E bmap2extent`, and for a regular file or
//! directory of a bigalloc file system ("cannot be block mapped": the
//! kernel cannot allocate clusters to a block map).
//!
//! The mapping stays what it is: the data blocks are walked in logical
//! order (pass 1's walker, so exactly the blocks pass 1 claimed), runs
//! that continue each other logically and physically become one extent
//! (at most 32768 blocks), the indirect blocks are given back and no
//! longer counted in i_blocks (e2fsck's accounting: each counted as a
//! cluster). Up to four extents sit in the inode; more go to leaf blocks
//! under as many index levels as they need (`volume::extent::build`).
//! The allocator's map follows what is given back and taken, and the
//! summary is rewritten from it in the same round, as libext2fs' block
//! statistics follow e2fsck's pass 1E.
//!
//! It runs once pass 1D has nothing left to copy, as e2fsck's pass 1E runs
//! after it: pass 1D copies the blocks of the files sharing with this one
//! as they were.

use crate::check::blockmap::{MapVisitor, Scratch};
use crate::check::pass1;
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::extent::{Extent, INIT_MAX_LEN};
use crate::fs::inode::{Inode, flags, inode_csum_seed};
use crate::fs::num::{Blk, Ino};
use crate::fs::superblock::{incompat, ro_compat};
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol, extent};

/// Inode `ino`'s block map converted to an extent tree, as e2fsck's pass
/// 1E converts one (`-E bmap2extent`, and every block map on bigalloc).
/// Only the mapping changes: the data blocks, i_size and the contents
/// stay. The indirect blocks are given back first, so the tree's blocks
/// may take their place; the tree is as deep as its extents need (up to
/// four in the inode, then full leaves under full index nodes), its
/// blocks taken from the file's first data block on, as libext2fs places
/// a new tree block. i_blocks loses the indirect blocks and gains the
/// tree's, each counted as a whole cluster. Returns whether it staged the
/// inode (false: not a block map, a deleted or inline inode, a reserved
/// one e2fsck leaves, no extents feature, or a map the walk found
/// anything wrong with: the fix of that comes first, and the next round
/// converts what it leaves).
pub(super) fn convert(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
) -> super::Result<bool> {
    if !fs.sb.has_incompat(incompat::EXTENTS)
        || (ino != crate::fs::inode::ROOT_INO && ino < fs.geo.first_ino)
    {
        // e2fsck answers yes and does nothing without the feature.
        return Ok(false);
    }
    let Some(raw) = vol::read_inode(fs, overlay, Ino(ino))? else {
        return Ok(false);
    };
    let inode = Inode::parse(&raw);
    if inode.has_flag(flags::EXTENTS)
        || inode.has_flag(flags::INLINE_DATA)
        || inode.links_count == 0
        || !pass1::has_valid_blocks(&inode)
    {
        return Ok(false);
    }
    let c = Leaves::walk(fs, state, ino, &inode);
    if c.problems || c.done() {
        return Ok(false);
    }
    // A block map has no unwritten runs.
    let runs: Vec<(u64, u64, u64)> = c.runs.iter().map(|&(l, p, n, _)| (l, p, n)).collect();
    // Extents hold at most 32768 blocks and a 32-bit logical start.
    let Some(extents) = extent::split_runs(&runs, u64::from(INIT_MAX_LEN)) else {
        return Ok(false);
    };
    let seed = fs
        .metadata_csum()
        .then(|| inode_csum_seed(fs.csum_seed, Ino(ino), inode.generation));
    let mut alloc = Allocator::new(fs, &state.block_used);
    let checkpoint = alloc.checkpoint();
    c.free_nodes(fs, &mut alloc, &[]);
    let goal = Blk(c.runs.first().map_or(0, |r| r.1));
    let view: &Overlay = overlay;
    let built = extent::build(&extents, fs.block_size(), usize::MAX, seed, || {
        alloc.take(view, goal).map(Blk::get)
    });
    let Some(tree) = built else {
        alloc.rollback(checkpoint);
        return Ok(false);
    };
    for (b, node) in &tree.leaves {
        overlay.stage(Blk(*b), node.clone())?;
    }
    let (root, leaves) = (tree.root, tree.leaves);
    let huge = fs.sb.has_ro_compat(ro_compat::HUGE_FILE) && inode.has_flag(flags::HUGE_FILE);
    let unit = if huge { 1 } else { fs.geo.block_sectors() } << fs.geo.cluster_bits;
    let hi_ok = fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
    let (old, new) = (c.nodes.len() as u64, leaves.len() as u64);
    Ok(vol::edit_inode(fs, overlay, Ino(ino), |m| {
        let blocks = m
            .blocks(hi_ok)
            .saturating_sub(old.saturating_mul(unit))
            .saturating_add(new.saturating_mul(unit));
        m.set_blocks(blocks, hi_ok);
        m.set_flags(m.flags() | flags::EXTENTS);
        m.i_block_mut().copy_from_slice(&root);
    })?)
}

/// The data runs and mapping blocks of a block map or extent tree: what
/// a rebuild as an extent tree starts from (a block map's, or pass 1E's
/// read of the tree).
struct Leaves {
    /// (logical, physical, length, unwritten), merged as e2fsck merges
    /// them: continuing each other logically and physically, both
    /// written or both unwritten, under 2^32 blocks.
    runs: Vec<(u64, u64, u64, bool)>,
    nodes: Vec<u64>,
    problems: bool,
    budget: u64,
}

impl Leaves {
    /// Walks inode `ino`'s map with pass 1's rules, collecting its runs
    /// and tree nodes.
    fn walk(fs: &Fs, state: &State, ino: u32, inode: &Inode) -> Leaves {
        let ctx = pass1::Ctx::new(fs, state);
        let mut c = Leaves {
            runs: Vec::new(),
            nodes: Vec::new(),
            problems: false,
            budget: fs.geo.blocks_count,
        };
        let mut scratch = Scratch::new();
        pass1::walk_map(&ctx, ino, inode, false, &mut scratch, &mut c);
        c
    }

    /// Gives back the mapping blocks not in `kept`, unless a block's
    /// cluster (bigalloc) also holds the file's data.
    fn free_nodes(&self, fs: &Fs, alloc: &mut Allocator, kept: &[u64]) {
        let bits = fs.geo.cluster_bits;
        let data_in = |b: u64| {
            let cl = b >> bits;
            self.runs
                .iter()
                .any(|&(_, p, n, _)| p >> bits <= cl && cl <= (p + n - 1) >> bits)
        };
        for &b in &self.nodes {
            if !kept.contains(&b) && !data_in(b) {
                alloc.free(Blk(b));
            }
        }
    }
}

impl MapVisitor for Leaves {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, unwritten: bool) {
        let len = len.min(self.budget);
        self.budget -= len;
        if len == 0 {
            return;
        }
        if let Some(r) = self.runs.last_mut()
            && r.0 + r.2 == lblk
            && r.1 + r.2 == pblk
            && r.3 == unwritten
            && r.2 + len < 1 << 32
        {
            r.2 += len;
            return;
        }
        self.runs.push((lblk, pblk, len, unwritten));
    }
    fn node(&mut self, pblk: u64) {
        self.budget = self.budget.saturating_sub(1);
        self.nodes.push(pblk);
    }
    fn problem(&mut self, p: Problem) {
        // A tree too deep is what the rebuild mends.
        self.problems |= p.code != Code::InodeExtentTooDeep;
    }
    fn done(&self) -> bool {
        self.budget == 0
    }
}

/// Pass 1E's optimisation: inode `ino`'s extent tree rebuilt with as few
/// levels and blocks as its extents need (`check::pass1e` judged it
/// could be shorter or narrower). The mapping stays what it is; extents
/// that continue each other are merged (at most 32768 blocks written,
/// 32767 unwritten). The tree blocks are reused in order for the new
/// tree, any more taken from the allocator, those left over given back
/// (the summary follows); i_blocks follows the count of tree blocks.
/// Returns whether it staged the new tree (false: no longer an extent
/// tree, a deleted or inline inode, a reserved inode e2fsck leaves, or a
/// tree the walk found anything wrong with).
pub(super) fn optimize(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
) -> super::Result<bool> {
    if !fs.sb.has_incompat(incompat::EXTENTS)
        || (ino != crate::fs::inode::ROOT_INO && ino < fs.geo.first_ino)
    {
        return Ok(false);
    }
    let Some(raw) = vol::read_inode(fs, overlay, Ino(ino))? else {
        return Ok(false);
    };
    let inode = Inode::parse(&raw);
    if !inode.has_flag(flags::EXTENTS)
        || inode.has_flag(flags::INLINE_DATA)
        || inode.links_count == 0
    {
        return Ok(false);
    }
    let c = Leaves::walk(fs, state, ino, &inode);
    if c.problems || c.done() {
        return Ok(false);
    }
    let mut extents = Vec::new();
    for &(l, p, n, unwritten) in &c.runs {
        // The longest extent of each kind.
        let max = u64::from(INIT_MAX_LEN) - u64::from(unwritten);
        let mut k = 0;
        while k < n {
            let len = (n - k).min(max);
            let Ok(lblk) = u32::try_from(l + k) else {
                return Ok(false);
            };
            extents.push(Extent {
                lblk,
                len: narrow::sat32(len),
                pblk: p + k,
                unwritten,
            });
            k += len;
        }
    }
    let seed = fs
        .metadata_csum()
        .then(|| inode_csum_seed(fs.csum_seed, Ino(ino), inode.generation));
    let mut alloc = Allocator::new(fs, &state.block_used);
    let checkpoint = alloc.checkpoint();
    let mut reuse = c.nodes.iter().copied();
    let view: &Overlay = overlay;
    let built = extent::build(&extents, fs.block_size(), usize::MAX, seed, || {
        reuse
            .next()
            .or_else(|| alloc.take_lowest(view).map(Blk::get))
    });
    let Some(tree) = built else {
        alloc.rollback(checkpoint);
        return Ok(false);
    };
    // A tree block left over is given back.
    let kept: Vec<u64> = tree.leaves.iter().map(|l| l.0).collect();
    c.free_nodes(fs, &mut alloc, &kept);
    for (b, node) in &tree.leaves {
        overlay.stage(Blk(*b), node.clone())?;
    }
    let huge = fs.sb.has_ro_compat(ro_compat::HUGE_FILE) && inode.has_flag(flags::HUGE_FILE);
    let unit = if huge { 1 } else { fs.geo.block_sectors() } << fs.geo.cluster_bits;
    let hi_ok = fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
    let (old, new) = (c.nodes.len() as u64, tree.leaves.len() as u64);
    let root = tree.root;
    Ok(vol::edit_inode(fs, overlay, Ino(ino), |m| {
        let blocks = m
            .blocks(hi_ok)
            .saturating_sub(old.saturating_mul(unit))
            .saturating_add(new * unit);
        m.set_blocks(blocks, hi_ok);
        m.i_block_mut().copy_from_slice(&root);
    })?)
}
