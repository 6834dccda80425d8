//! Holes in a directory (pass 1 and pass 2: "unallocated block"), closed
//! as e2fsck closes them:
//!
//! - a directory mapped by extents in the inode has its extents moved down
//!   so they follow each other (e2fsck's "block N should be at block M";
//!   on bigalloc each keeps its blocks' offsets in their clusters);
//!   i_size is then too big, which the next round's check reports and the
//!   inode fixes correct, and an htree index pointing at the old numbers is
//!   rebuilt the round after;
//! - a directory mapped by block pointers gets, for each hole among its
//!   direct pointers, a new block holding one empty record (and its
//!   checksum tail): the lowest block neither in use nor already taken by
//!   this repair (marked in `State::block_used`, so the next summary
//!   allocates it).
//!
//! Deeper extent trees and holes behind indirect blocks are left for now.

use super::lostfound::dir_seed;
use crate::check::state::{State, iflag};
use crate::fs::dir_entry;
use crate::fs::extent::{self, EXTENT_MAGIC, ROOT_MAX};
use crate::fs::inode::{InodeMut, flags};
use crate::fs::num::{Blk, Ino};
use crate::narrow;
use crate::store::overlay::Overlay;
use crate::volume::{Allocator, Fs, edit as vol};

// Direct block pointers in i_block.
use crate::fs::inode::DIRECT_BLOCKS as DIRECT;

/// Closes the holes of directory `dir`; returns whether anything was staged.
pub(super) fn fix(fs: &Fs, state: &State, overlay: &mut Overlay, dir: Ino) -> super::Result<bool> {
    if !state.inode_dir.get(dir) || state.has_iflag(dir, iflag::INLINE) {
        return Ok(false);
    }
    let Some(mut raw) = vol::read_inode(fs, overlay, dir)? else {
        return Err(format!("inode {dir} lies beyond the addressable range").into());
    };
    if InodeMut(&mut raw).flags() & flags::EXTENTS != 0 {
        collapse(fs, overlay, dir, &mut raw)
    } else if fs.geo.cluster_bits > 0 {
        // A block map on bigalloc is pass 1E's to rebuild as extents; a
        // block given per hole would break the cluster rules.
        Ok(false)
    } else {
        allocate(fs, state, overlay, dir, &mut raw)
    }
}

/// Moves the extents of an inode-held (depth 0) extent tree down so that
/// each starts where the one before ends.
fn collapse(fs: &Fs, overlay: &mut Overlay, dir: Ino, raw: &mut [u8]) -> super::Result<bool> {
    let root = InodeMut(raw).i_block().to_vec();
    let h = extent::parse_header(&root);
    let n = usize::from(h.entries);
    if h.magic != EXTENT_MAGIC || h.depth != 0 || n > usize::from(ROOT_MAX) {
        return Ok(false);
    }
    let ratio = 1u64 << fs.geo.cluster_bits;
    let mut moved = Vec::with_capacity(n);
    let mut next = 0u64;
    for i in 0..n {
        let mut e = extent::parse_leaf(&root, i);
        // Out of order or overlapping extents are pass 1's to fix.
        if u64::from(e.lblk) < next {
            return Ok(false);
        }
        if u64::from(e.lblk) > next {
            // On bigalloc a block keeps its offset in its cluster (e2fsck's
            // rule), so the moved extent obeys the cluster rules.
            let to = next.next_multiple_of(ratio) | (e.pblk & (ratio - 1));
            let Ok(to) = u32::try_from(to) else {
                return Ok(false);
            };
            e.lblk = to;
        }
        moved.push(e.encode());
        next = u64::from(e.lblk) + u64::from(e.len);
    }
    if (0..n).all(|i| extent::raw_entry(&root, i) == Some(moved[i])) {
        return Ok(false);
    }
    vol::edit_inode(fs, overlay, dir, |m| {
        extent::put_entries(m.i_block_mut(), &moved)
    })?;
    Ok(true)
}

/// Gives each hole among the direct pointers of a block-mapped directory
/// a new, empty directory block.
fn allocate(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    dir: Ino,
    raw: &mut [u8],
) -> super::Result<bool> {
    let node = InodeMut(raw);
    if node.flags() & flags::HUGE_FILE != 0 {
        return Ok(false);
    }
    // The blocks the directory has: holes are what lies below the last
    // (every empty direct pointer, when an indirect block follows).
    let last = if node.block_ptr(DIRECT) != 0 {
        DIRECT
    } else {
        (0..DIRECT)
            .rev()
            .find(|&i| node.block_ptr(i) != 0)
            .unwrap_or(0)
    };
    let holes: Vec<usize> = (0..last).filter(|&i| node.block_ptr(i) == 0).collect();
    if holes.is_empty() {
        return Ok(false);
    }
    let bs = fs.block_size();
    let seed = if fs.metadata_csum() {
        Some(dir_seed(fs, state, overlay, dir)?)
    } else {
        None
    };
    let mut alloc = Allocator::new(fs, &state.block_used);
    let mut search = alloc.first_data_block();
    let mut given = Vec::new();
    for &h in &holes {
        let Some(blk) = alloc.take_from(overlay, search, Blk::PTR32_END) else {
            break;
        };
        search = blk.next();
        overlay.stage(blk, dir_entry::empty_block(bs, seed))?;
        // Taken below Blk::PTR32_END.
        given.push((h, narrow::sat32(blk.get())));
    }
    if given.is_empty() {
        return Ok(false);
    }
    let sectors = fs.geo.block_sectors() * given.len() as u64;
    vol::edit_inode(fs, overlay, dir, |m| {
        for &(h, blk) in &given {
            m.set_block_ptr(h, blk);
        }
        let blocks = m
            .blocks(false)
            .saturating_add(sectors)
            .min(u64::from(u32::MAX));
        m.set_blocks(blocks, false);
    })?;
    Ok(true)
}
