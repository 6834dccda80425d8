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
use crate::check::Fs;
use crate::fs::bytes::put_le16;
use crate::fs::bytes::put_le32;
use crate::fs::superblock::SUPERBLOCK_OFFSET;
use crate::repair::overlay::Overlay;

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
