//! The primary superblock and descriptor table, restored from the backup
//! the check used.
//!
//! When the primary superblock (or the descriptors it leads to) is
//! unusable, pass 0 loads a backup and every pass judges the file system
//! through it; e2fsck then writes that superblock and table back as the
//! primary ones. Staged alone, in a round of its own: the next round's
//! check reads the primary again and the usual fixes (counts, bitmaps)
//! follow from there, with their edits landing on the restored copy.

use super::edit_bytes;
use crate::fs::bytes::put_le16;
use crate::fs::bytes::put_le32;
use crate::fs::superblock::SUPERBLOCK_OFFSET;
use crate::repair::overlay::Overlay;
use crate::volume::Fs;

/// Which group's copy a superblock is (0 for the primary).
const S_BLOCK_GROUP_NR: usize = 0x5A;
const S_CHECKSUM: usize = 0x3FC;
const SUPERBLOCK_SIZE: usize = 1024;

/// Did the check read a backup instead of the primary superblock?
pub(super) fn used_backup(fs: &Fs) -> bool {
    fs.sb_block != SUPERBLOCK_OFFSET / u64::from(fs.geo.block_size)
}

/// Stages the loaded superblock and descriptor table as the primary ones.
pub(super) fn restore_primary(fs: &Fs, overlay: &mut Overlay) -> Result<(), String> {
    let bs = fs.block_size();
    let mut sb = fs.sb.raw.clone();
    sb.resize(SUPERBLOCK_SIZE, 0);
    put_le16(&mut sb, S_BLOCK_GROUP_NR, 0);
    if fs.metadata_csum() {
        let c = crate::fs::checksum::crc32c_raw(!0, &sb[..S_CHECKSUM]);
        put_le32(&mut sb, S_CHECKSUM, c);
    }
    edit_bytes(fs, overlay, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, |b| {
        b.copy_from_slice(&sb)
    })?;
    let primary = SUPERBLOCK_OFFSET / bs as u64;
    for i in 0..fs.geo.desc_blocks {
        let start = (i as usize).saturating_mul(bs);
        let end = start.saturating_add(bs).min(fs.gd_raw.len());
        if start >= end {
            break;
        }
        let blk = fs.geo.desc_block_location(primary, i);
        if !fs.geo.block_in_fs(blk) && blk != primary + 1 + u64::from(i) {
            continue;
        }
        let table = &fs.gd_raw[start..end];
        let pos = blk
            .checked_mul(bs as u64)
            .ok_or_else(|| format!("descriptor block {blk} lies beyond the addressable range"))?;
        edit_bytes(fs, overlay, pos, bs, |b| {
            b[..table.len()].copy_from_slice(table)
        })?;
    }
    Ok(())
}

const S_INODES_COUNT: usize = 0x0;

/// A wrong inodes count (the check went on with the groups times the
/// inodes per group, as e2fsck does after loading the superblock despite
/// it) is set to that product.
pub(super) fn fix_inodes_count(fs: &Fs, overlay: &mut Overlay) -> Result<bool, String> {
    let want = fs.geo.inodes_count;
    if fs.sb.inodes_count == want {
        return Ok(false);
    }
    super::edit_superblock(fs, overlay, |sb| put_le32(sb, S_INODES_COUNT, want))?;
    Ok(true)
}

const S_FEATURE_COMPAT: usize = 0x5C;
const S_RESERVED_GDT_BLOCKS: usize = 0xCE;
/// The part of an inode e2fsck clears (its `struct ext2_inode`).
const GOOD_OLD_INODE_SIZE: usize = 128;

/// The resize inode, as e2fsck's pass 0 settles it: with meta_bg the
/// feature cannot work and is turned off; without the feature the inode
/// must be empty, so it is cleared, and there are no reserved GDT blocks.
/// An invalid resize inode while the feature stays is `resize.rs`'s.
/// Returns whether something was staged.
pub(super) fn fix_resize_inode(
    fs: &Fs,
    overlay: &mut Overlay,
    p: &crate::check::problem::Problem,
) -> Result<bool, String> {
    use crate::fs::superblock::{compat, incompat};
    if p.code != crate::check::problem::Code::SbResizeInodeNoFeature {
        return Ok(false);
    }
    let has = fs.sb.has_compat(compat::RESIZE_INODE);
    if has && !fs.sb.has_incompat(incompat::META_BG) {
        return Ok(false);
    }
    // Without the feature there are no reserved GDT blocks either.
    super::edit_superblock(fs, overlay, |sb| {
        let c = crate::fs::bytes::le32(sb, S_FEATURE_COMPAT) & !compat::RESIZE_INODE;
        put_le32(sb, S_FEATURE_COMPAT, c);
        put_le16(sb, S_RESERVED_GDT_BLOCKS, 0);
    })?;
    let ino = crate::fs::inode::RESIZE_INO;
    let Some(pos) = fs.inode_location(ino).and_then(|(blk, off)| {
        blk.checked_mul(fs.block_size() as u64)?
            .checked_add(off as u64)
    }) else {
        return Ok(has);
    };
    let csum = fs.metadata_csum();
    let seed = fs.csum_seed;
    edit_bytes(fs, overlay, pos, fs.geo.inode_size as usize, |b| {
        let n = GOOD_OLD_INODE_SIZE.min(b.len());
        b[..n].fill(0);
        if csum {
            super::inode::set_checksum(seed, ino, b);
        }
    })?;
    Ok(true)
}
