//! Group metadata relocated: a block bitmap, inode bitmap or inode table
//! whose descriptor points outside its group, onto other metadata, or at
//! a bad block gets a new home, as e2fsck does at the end of its pass 1.
//!
//! The new location is the lowest run of free blocks (per pass 1, and not
//! staged) inside the group — inside the flex group with flex_bg, then
//! anywhere. What the old location held is copied when it was inside the
//! file system (a conflict or a bad block: the contents may still be
//! right); a location outside it leaves the new blocks zeroed, which for
//! an inode table loses the group's inodes, as with e2fsck. Staged alone
//! in its round: the next round's check reads the new bitmaps (pass 5
//! then rewrites them from what it found) and the new table.

use super::edit_bytes;
use crate::check::Fs;
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::bytes::{put_le16, put_le32};
use crate::fs::group_desc;
use crate::fs::superblock::incompat;
use crate::repair::overlay::Overlay;
use std::collections::BTreeMap;

/// Codes this file fixes.
pub(super) const CODES: &[Code] = &[
    Code::GdBlockBitmapLocation,
    Code::GdInodeBitmapLocation,
    Code::GdInodeTableLocation,
    Code::GdMetadataOverlap,
    Code::BadBlockInMetadata,
];

const BG_CHECKSUM: usize = 0x1E;

/// Which of a group's metadata moves (in e2fsck's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    BlockBitmap,
    InodeBitmap,
    InodeTable,
}

impl Kind {
    /// Offsets of the location's low and high halves in a descriptor.
    fn fields(self) -> (usize, usize) {
        match self {
            Kind::BlockBitmap => (0x0, 0x20),
            Kind::InodeBitmap => (0x4, 0x24),
            Kind::InodeTable => (0x8, 0x28),
        }
    }
}

/// What one problem asks to move: (group, kind, copy the old contents).
fn target(fs: &Fs, p: &Problem) -> Option<(u32, Kind, bool)> {
    let kind_of = |d: &str| match d {
        "Block bitmap" => Some(Kind::BlockBitmap),
        "Inode bitmap" => Some(Kind::InodeBitmap),
        "Inode table" => Some(Kind::InodeTable),
        _ => None,
    };
    match p.code {
        Code::GdBlockBitmapLocation => Some((p.group?, Kind::BlockBitmap, false)),
        Code::GdInodeBitmapLocation => Some((p.group?, Kind::InodeBitmap, false)),
        Code::GdInodeTableLocation => Some((p.group?, Kind::InodeTable, false)),
        Code::GdMetadataOverlap => Some((p.group?, kind_of(p.detail.as_str())?, true)),
        Code::BadBlockInMetadata => {
            // Which group's bitmap or table holds the bad block.
            let b = p.blk?;
            let n = u64::from(fs.geo.inode_table_blocks);
            fs.gds.iter().enumerate().find_map(|(g, gd)| {
                let kind = if gd.block_bitmap == b {
                    Kind::BlockBitmap
                } else if gd.inode_bitmap == b {
                    Kind::InodeBitmap
                } else if b >= gd.inode_table && b < gd.inode_table.saturating_add(n) {
                    Kind::InodeTable
                } else {
                    return None;
                };
                Some((g as u32, kind, true))
            })
        }
        _ => None,
    }
}

/// Relocates what the selected problems name. Returns which problems it
/// fixed, None when it staged nothing.
pub(super) fn relocate(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    problems: &[Problem],
    wanted: impl Fn(&Problem) -> bool,
) -> Result<Option<Vec<bool>>, String> {
    let mut moves: BTreeMap<(u32, Kind), (bool, Vec<usize>)> = BTreeMap::new();
    for (k, p) in problems.iter().enumerate() {
        if !wanted(p) || !CODES.contains(&p.code) {
            continue;
        }
        if let Some((g, kind, copy)) = target(fs, p) {
            let e = moves.entry((g, kind)).or_insert((copy, Vec::new()));
            // A location outside the file system has nothing to copy.
            e.0 &= copy;
            e.1.push(k);
        }
    }
    if moves.is_empty() {
        return Ok(None);
    }
    let geo = &fs.geo;
    let bs = fs.block_size();
    let ds = geo.desc_size as usize;
    let mut raw = fs.gd_raw.clone();
    let mut fixed = vec![false; problems.len()];
    let mut staged = false;
    for ((g, kind), (copy, ks)) in moves {
        let Some(gd) = fs.gds.get(g as usize) else {
            continue;
        };
        let (old, num) = match kind {
            Kind::BlockBitmap => (gd.block_bitmap, 1),
            Kind::InodeBitmap => (gd.inode_bitmap, 1),
            Kind::InodeTable => (gd.inode_table, u64::from(geo.inode_table_blocks)),
        };
        let Some(new) = find_run(fs, state, overlay, g, num) else {
            continue;
        };
        let copy_from =
            (copy && geo.block_in_fs(old) && old.saturating_add(num) <= geo.blocks_count)
                .then_some(old);
        for i in 0..num {
            let mut buf = vec![0u8; bs];
            if let Some(o) = copy_from {
                overlay
                    .read_at(&fs.dev, (o + i) * bs as u64, &mut buf)
                    .map_err(|e| format!("cannot read block {}: {e}", o + i))?;
            }
            overlay.stage(new + i, buf).map_err(|e| e.to_string())?;
            state.block_used.set(new + i);
            state.block_meta.set(new + i);
            mark_in_bitmap(fs, overlay, &mut raw, new + i)?;
        }
        let d = raw
            .get_mut(g as usize * ds..(g as usize + 1) * ds)
            .ok_or_else(|| format!("descriptor of group {g} is missing"))?;
        let (lo, hi) = kind.fields();
        put_le32(d, lo, new as u32);
        if gd.wide {
            put_le32(d, hi, (new >> 32) as u32);
        }
        if let Some(c) = group_desc::compute_checksum(&fs.sb, g, d) {
            put_le16(d, BG_CHECKSUM, c);
        }
        for k in ks {
            fixed[k] = true;
        }
        staged = true;
    }
    if !staged {
        return Ok(None);
    }
    for i in 0..geo.desc_blocks {
        let start = (i as usize).saturating_mul(bs);
        let end = start.saturating_add(bs).min(raw.len());
        if start >= end || raw[start..end] == fs.gd_raw[start..end] {
            continue;
        }
        let blk = geo.desc_block_location(fs.sb_block, i);
        let new = &raw[start..end];
        edit_bytes(fs, overlay, blk * bs as u64, bs, |b| {
            b[..new.len()].copy_from_slice(new)
        })?;
    }
    Ok(Some(fixed))
}

/// Sets `blk`'s bit in the on-disk block bitmap of its group, with that
/// bitmap's checksum, as e2fsck's allocation does. The next round's pass 5
/// would not see the bit missing when the moved metadata belongs to an
/// uninit group (it reads as used through that group), but the checksum
/// e2fsck computes over the bitmap it reads would then be wrong.
fn mark_in_bitmap(fs: &Fs, overlay: &mut Overlay, raw: &mut [u8], blk: u64) -> Result<(), String> {
    let geo = &fs.geo;
    let h = geo.group_of_block(blk);
    let Some(gd) = fs.gds.get(h as usize) else {
        return Ok(());
    };
    if fs.uninit_bg() && gd.has_flag(group_desc::BG_BLOCK_UNINIT) {
        return Ok(());
    }
    let bm = gd.block_bitmap;
    if !geo.block_in_fs(bm)
        || bm == crate::fs::superblock::SUPERBLOCK_OFFSET / fs.block_size() as u64
    {
        return Ok(());
    }
    let bit = blk - geo.group_first_block(h);
    let bs = fs.block_size();
    let mut bytes = Vec::new();
    edit_bytes(fs, overlay, bm * bs as u64, bs, |b| {
        if let Some(x) = b.get_mut((bit / 8) as usize) {
            *x |= 1 << (bit % 8);
        }
        bytes = b.to_vec();
    })?;
    if fs.metadata_csum() {
        let n = ((geo.blocks_per_group / 8) as usize).min(bytes.len());
        let c = group_desc::bitmap_checksum(&fs.sb, &bytes[..n], gd.wide);
        let ds = geo.desc_size as usize;
        if let Some(d) = raw.get_mut(h as usize * ds..(h as usize + 1) * ds) {
            put_le16(d, 0x18, c as u16);
            if gd.wide {
                put_le16(d, 0x38, (c >> 16) as u16);
            }
            if let Some(c) = group_desc::compute_checksum(&fs.sb, h, d) {
                put_le16(d, BG_CHECKSUM, c);
            }
        }
    }
    Ok(())
}

/// The lowest run of `num` free blocks for group `g`'s metadata.
fn find_run(fs: &Fs, state: &State, overlay: &Overlay, g: u32, num: u64) -> Option<u64> {
    let geo = &fs.geo;
    let free = |b: u64| !state.block_used.get(b) && overlay.get(b).is_none();
    let search = |first: u64, last: u64| -> Option<u64> {
        let mut run = 0u64;
        let mut b = first;
        while b <= last && b < geo.blocks_count {
            if free(b) {
                run += 1;
                if run == num {
                    return Some(b + 1 - num);
                }
            } else {
                run = 0;
            }
            b += 1;
        }
        None
    };
    if fs.sb.has_incompat(incompat::FLEX_BG) && geo.flex_bg_size > 1 {
        let size = geo.flex_bg_size;
        let first_group = (u64::from(g) / size) * size;
        let last_group = (first_group + size - 1).min(u64::from(geo.groups) - 1);
        search(
            geo.group_first_block(first_group as u32),
            geo.group_last_block(last_group as u32),
        )
        .or_else(|| search(geo.first_data_block, geo.blocks_count - 1))
    } else {
        search(geo.group_first_block(g), geo.group_last_block(g))
    }
}
