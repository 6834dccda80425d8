//! Holes in a directory (pass 1 and pass 2: "unallocated block"), closed
//! as e2fsck closes them:
//!
//! - a directory mapped by extents in the inode has its extents moved down
//!   so they follow each other (e2fsck's "block N should be at block M");
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

use super::edit_bytes;
use super::lostfound::{dir_seed, inode_pos};
use crate::check::state::{State, iflag};
use crate::fs::bytes::{le16, le32, put_le16, put_le32};
use crate::fs::dir_entry::{TAIL_LEN, compute_tail_checksum, encode_rec_len};
use crate::fs::extent::{EXTENT_MAGIC, INIT_MAX_LEN};
use crate::fs::inode::field::*;
use crate::fs::inode::flags;
use crate::repair::overlay::Overlay;
use crate::volume::Fs;

/// Direct block pointers in i_block.
const DIRECT: usize = 12;
/// Extent entries the inode holds.
const ROOT_ENTRIES: usize = 4;

/// Closes the holes of directory `dir`; returns whether anything was staged.
pub(super) fn fix(fs: &Fs, state: &State, overlay: &mut Overlay, dir: u32) -> Result<bool, String> {
    if !state.inode_dir.get(dir as u64) || state.has_iflag(dir, iflag::INLINE) {
        return Ok(false);
    }
    let pos = inode_pos(fs, dir)?;
    let isize = fs.geo.inode_size as usize;
    let mut raw = vec![0u8; isize];
    overlay
        .read_at(&fs.dev, pos, &mut raw)
        .map_err(|e| format!("cannot read inode {dir}: {e}"))?;
    let iflags = le32(&raw, I_FLAGS);
    if iflags & flags::EXTENTS != 0 {
        collapse(fs, overlay, dir, pos, &raw)
    } else {
        allocate(fs, state, overlay, dir, pos, &raw)
    }
}

/// Moves the extents of an inode-held (depth 0) extent tree down so that
/// each starts where the one before ends.
fn collapse(
    fs: &Fs,
    overlay: &mut Overlay,
    dir: u32,
    pos: u64,
    raw: &[u8],
) -> Result<bool, String> {
    let root = &raw[I_BLOCK..I_BLOCK + 60];
    let n = le16(root, 2) as usize;
    if le16(root, 0) != EXTENT_MAGIC || le16(root, 6) != 0 || n > ROOT_ENTRIES {
        return Ok(false);
    }
    let mut starts = Vec::with_capacity(n);
    let mut next = 0u32;
    for i in 0..n {
        let e = 12 + 12 * i;
        let lblk = le32(root, e);
        let raw_len = le16(root, e + 4);
        let len = if raw_len > INIT_MAX_LEN {
            raw_len - INIT_MAX_LEN
        } else {
            raw_len
        } as u32;
        // Out of order or overlapping extents are pass 1's to fix.
        if lblk < next {
            return Ok(false);
        }
        starts.push(next);
        next = next.saturating_add(len);
    }
    if (0..n).all(|i| le32(root, 12 + 12 * i) == starts[i]) {
        return Ok(false);
    }
    let csum = fs.metadata_csum();
    let seed = fs.csum_seed;
    edit_bytes(fs, overlay, pos, raw.len(), |b| {
        for (i, s) in starts.iter().enumerate() {
            put_le32(b, I_BLOCK + 12 + 12 * i, *s);
        }
        if csum {
            super::inode::set_checksum(seed, dir, b);
        }
    })?;
    Ok(true)
}

/// Gives each hole among the direct pointers of a block-mapped directory
/// a new, empty directory block.
fn allocate(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    dir: u32,
    pos: u64,
    raw: &[u8],
) -> Result<bool, String> {
    if le32(raw, I_FLAGS) & flags::HUGE_FILE != 0 {
        return Ok(false);
    }
    // The blocks the directory has: holes are what lies below the last
    // (every empty direct pointer, when an indirect block follows).
    let last = if le32(raw, I_BLOCK + 4 * DIRECT) != 0 {
        DIRECT
    } else {
        (0..DIRECT)
            .rev()
            .find(|&i| le32(raw, I_BLOCK + 4 * i) != 0)
            .unwrap_or(0)
    };
    let holes: Vec<usize> = (0..last)
        .filter(|&i| le32(raw, I_BLOCK + 4 * i) == 0)
        .collect();
    if holes.is_empty() {
        return Ok(false);
    }
    let bs = fs.block_size();
    let csum = fs.metadata_csum();
    let seed = if csum {
        Some(dir_seed(fs, state, overlay, dir)?)
    } else {
        None
    };
    let geo = &fs.geo;
    let mut search = geo.first_data_block;
    let mut given = Vec::new();
    for &h in &holes {
        let Some(blk) = (search..geo.blocks_count).find(|&b| !state.block_used.get(b)) else {
            break;
        };
        // Block pointers are 32 bits.
        if u32::try_from(blk).is_err() {
            break;
        }
        search = blk + 1;
        state.block_used.set(blk);
        let mut b = vec![0u8; bs];
        let end = if csum { bs - TAIL_LEN } else { bs };
        put_le16(&mut b, 4, encode_rec_len(end, bs));
        if let Some(seed) = seed {
            super::dirblock::write_tail_header(&mut b);
            let c = compute_tail_checksum(seed, &b);
            put_le32(&mut b, bs - 4, c);
        }
        overlay.stage(blk, b).map_err(|e| e.to_string())?;
        given.push((h, blk as u32));
    }
    if given.is_empty() {
        return Ok(false);
    }
    let sectors = (bs / 512) as u32 * given.len() as u32;
    let csum_seed = fs.csum_seed;
    edit_bytes(fs, overlay, pos, raw.len(), |b| {
        for &(h, blk) in &given {
            put_le32(b, I_BLOCK + 4 * h, blk);
        }
        let blocks = le32(b, I_BLOCKS_LO).saturating_add(sectors);
        put_le32(b, I_BLOCKS_LO, blocks);
        if csum {
            super::inode::set_checksum(csum_seed, dir, b);
        }
    })?;
    Ok(true)
}
