//! Pass 1E: a block-mapped file rebuilt as an extent tree, as e2fsck does
//! for a regular file or directory of a bigalloc file system ("cannot be
//! block mapped": the kernel cannot allocate clusters to a block map).
//!
//! The mapping stays what it is: the data blocks are walked in logical
//! order (pass 1's walker, so exactly the blocks pass 1 claimed), runs
//! that continue each other logically and physically become one extent
//! (at most 32768 blocks), the indirect blocks are dropped and no longer
//! counted in i_blocks (e2fsck's accounting: each counted as a cluster).
//! Up to four extents sit in the inode; more go to leaf blocks under a
//! one-level index in the inode (lowest free clusters), up to four leaves.
//! The freed blocks and i_blocks are judged again by the next round's
//! check, as e2fsck's next run would.
//!
//! It runs once pass 1D has nothing left to copy, as e2fsck's pass 1E runs
//! after it: pass 1D copies the blocks of the files sharing with this one
//! as they were.

use crate::check::blockmap::{MapVisitor, Scratch};
use crate::check::pass1;
use crate::check::problem::Problem;
use crate::check::state::State;
use crate::fs::extent::INIT_MAX_LEN;
use crate::fs::inode::{Inode, flags, inode_csum_seed};
use crate::fs::num::Blk;
use crate::fs::superblock::{incompat, ro_compat};
use crate::repair::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol, extent};

/// The data runs and mapping blocks of a block map.
struct Collect {
    /// (logical, physical, length), merged as e2fsck merges them.
    runs: Vec<(u64, u64, u64)>,
    nodes: u64,
    budget: u64,
}

impl MapVisitor for Collect {
    fn data(&mut self, lblk: u64, pblk: u64, len: u64, _unwritten: bool) {
        let len = len.min(self.budget);
        self.budget -= len;
        if len == 0 {
            return;
        }
        if let Some(r) = self.runs.last_mut()
            && r.0 + r.2 == lblk
            && r.1 + r.2 == pblk
            && r.2 + len < 1 << 32
        {
            r.2 += len;
            return;
        }
        self.runs.push((lblk, pblk, len));
    }
    fn node(&mut self, _pblk: u64) {
        self.budget = self.budget.saturating_sub(1);
        self.nodes += 1;
    }
    fn problem(&mut self, _p: Problem) {}
    fn done(&self) -> bool {
        self.budget == 0
    }
}

/// Rebuilds inode `ino`'s block map as an extent tree. Returns whether it
/// staged the new inode (false: not a block map, no extents feature, or
/// too many extents for a one-level tree).
pub(super) fn rebuild(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
) -> super::Result<bool> {
    if !fs.sb.has_incompat(incompat::EXTENTS) {
        // e2fsck answers yes and does nothing without the feature.
        return Ok(false);
    }
    let Some(raw) = vol::read_inode(fs, overlay, ino)? else {
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
    let ctx = pass1::Ctx::new(fs, state);
    let mut c = Collect {
        runs: Vec::new(),
        nodes: 0,
        budget: fs.geo.blocks_count,
    };
    let mut scratch = Scratch::new();
    pass1::walk_map(&ctx, ino, &inode, false, &mut scratch, &mut c);
    // Extents hold at most 32768 blocks and a 32-bit logical start.
    let Some(extents) = extent::split_runs(&c.runs, u64::from(INIT_MAX_LEN)) else {
        return Ok(false);
    };
    let seed = fs
        .metadata_csum()
        .then(|| inode_csum_seed(fs.csum_seed, ino, inode.generation));
    let mut alloc = Allocator::new(fs, &state.block_used);
    let checkpoint = alloc.checkpoint();
    let view: &Overlay = overlay;
    let built = extent::build(&extents, fs.block_size(), 4, seed, || {
        alloc.take_lowest(view).map(Blk::get)
    });
    let Some(tree) = built else {
        alloc.rollback(checkpoint);
        return Ok(false);
    };
    for (b, node) in &tree.leaves {
        overlay.stage(*b, node.clone())?;
    }
    let (root, leaves) = (tree.root, tree.leaves);
    // i_blocks loses the mapping blocks and gains the leaves, each
    // counted as a whole cluster (e2fsck's i_blocks arithmetic).
    let huge = fs.sb.has_ro_compat(ro_compat::HUGE_FILE) && inode.has_flag(flags::HUGE_FILE);
    let unit = if huge {
        1
    } else {
        u64::from(fs.geo.block_size / 512)
    } << fs.geo.cluster_bits;
    let hi_ok = fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
    let new_leaves = leaves.len() as u64;
    Ok(vol::edit_inode(fs, overlay, ino, |m| {
        let blocks = m
            .blocks(hi_ok)
            .saturating_sub(c.nodes.saturating_mul(unit))
            .saturating_add(new_leaves * unit);
        m.set_blocks(blocks, hi_ok);
        m.set_flags(m.flags() | flags::EXTENTS);
        m.i_block_mut().copy_from_slice(&root);
    })?)
}
