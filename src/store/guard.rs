//! The last check before a repair reaches the device: the primary
//! superblock and the primary descriptor blocks are written only as their
//! encoders staged them (`volume::edit`'s superblock and descriptor
//! editors, the primary restored from a backup, the journal replay).
//! Any other fix that stages one of those blocks (a block map edit whose
//! "indirect block" is really the superblock, say) is a bug that would
//! leave a file system no one can open: the whole commit is refused, and
//! nothing is written. So is a superblock left without its magic number.

use super::overlay::Overlay;
use super::{Result, StoreError};
use crate::fs::geometry::Geometry;
use crate::fs::num::Blk;
use crate::fs::superblock::{EXT2_MAGIC as MAGIC, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, Superblock};

/// Refuses the commit of `changes` (the blocks that differ from the
/// device) when a primary superblock or descriptor block among them was
/// not staged by its encoders, or when the superblock bytes change and
/// `sb_after` (the superblock as the commit would leave it) has no magic.
pub(super) fn check(overlay: &Overlay, changes: &[u64], sb_after: &[u8]) -> Result<()> {
    let bs = u64::from(overlay.block_size());
    let sb_first = SUPERBLOCK_OFFSET / bs;
    let sb_last = (SUPERBLOCK_OFFSET + SUPERBLOCK_SIZE as u64 - 1) / bs;
    let on_sb = |b: u64| (sb_first..=sb_last).contains(&b);
    let sb = Superblock::parse(sb_after);
    if changes.iter().any(|&b| on_sb(b)) && sb.magic != MAGIC {
        return Err(StoreError::Refused(
            "the repair would leave the primary superblock without its magic number; \
             nothing was written"
                .to_string(),
        ));
    }
    // The descriptor table's place follows from the superblock written.
    let geo = Geometry::despite_inodes_count(&sb)
        .ok()
        .filter(|g| u64::from(g.block_size) == bs);
    let on_desc = |b: u64| {
        geo.as_ref()
            .is_some_and(|g| is_primary_desc(g, sb_first, b))
    };
    for &b in changes {
        if (on_sb(b) || on_desc(b)) && !overlay.staged_by_encoder(Blk(b)) {
            let what = if on_sb(b) {
                "the primary superblock"
            } else {
                "a primary group descriptor block"
            };
            return Err(StoreError::Refused(format!(
                "a fix other than the superblock and descriptor editors staged block {b} \
                 ({what}); nothing was written"
            )));
        }
    }
    Ok(())
}

/// Is `b` one of the primary descriptor table's blocks (the table after
/// superblock block `sb_block`; with meta_bg, the first block after each
/// meta group's superblock slot)?
fn is_primary_desc(geo: &Geometry, sb_block: u64, b: u64) -> bool {
    let plain = if geo.meta_bg {
        geo.first_meta_bg.min(geo.desc_blocks)
    } else {
        geo.desc_blocks
    };
    if b > sb_block && b - sb_block - 1 < u64::from(plain) {
        return true;
    }
    if !geo.meta_bg || b < geo.first_data_block {
        return false;
    }
    let g = geo.group_of_block(b);
    let per = geo.desc_per_block.max(1);
    if !g.is_multiple_of(per) {
        return false;
    }
    let i = g / per;
    i >= geo.first_meta_bg && i < geo.desc_blocks && geo.desc_block_location(sb_block, i) == b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::overlay::Overlay;

    /// A superblock of a small 1 KiB file system: 8 groups of 1024 blocks,
    /// one descriptor block.
    fn sb_bytes() -> Vec<u8> {
        use crate::fs::bytes::{put_le16, put_le32};
        let mut b = vec![0u8; SUPERBLOCK_SIZE];
        put_le32(&mut b, 0x0, 8 * 256); // inodes_count
        put_le32(&mut b, 0x4, 8192); // blocks_count
        put_le32(&mut b, 0x14, 1); // first_data_block
        put_le32(&mut b, 0x20, 1024); // blocks_per_group
        put_le32(&mut b, 0x24, 1024); // clusters_per_group
        put_le32(&mut b, 0x28, 256); // inodes_per_group
        put_le16(&mut b, 0x38, MAGIC);
        put_le32(&mut b, 0x4C, 1); // rev_level
        put_le32(&mut b, 0x54, 11); // first_ino
        put_le16(&mut b, 0x58, 128); // inode_size
        b
    }

    fn overlay_with(sb_stage: Option<bool>, gdt_stage: Option<bool>) -> Overlay {
        let mut o = Overlay::new(1024, 8192 * 1024, u64::MAX).unwrap();
        let put = |o: &mut Overlay, b: u64, data: Vec<u8>, enc: bool| {
            if enc {
                o.stage_encoded(Blk(b), data).unwrap()
            } else {
                o.stage(Blk(b), data).unwrap()
            }
        };
        if let Some(enc) = sb_stage {
            let mut blk = sb_bytes();
            blk[0] = 1;
            put(&mut o, 1, blk, enc);
        }
        if let Some(enc) = gdt_stage {
            put(&mut o, 2, vec![7u8; 1024], enc);
        }
        o
    }

    #[test]
    fn encoders_may_write_the_primary_superblock_and_descriptors() {
        let o = overlay_with(Some(true), Some(true));
        assert!(check(&o, &[1, 2], &sb_bytes()).is_ok());
    }

    #[test]
    fn other_writes_of_the_primary_superblock_are_refused() {
        let o = overlay_with(Some(false), None);
        let e = check(&o, &[1], &sb_bytes()).unwrap_err();
        assert!(e.to_string().contains("primary superblock"), "{e}");
    }

    #[test]
    fn other_writes_of_a_primary_descriptor_block_are_refused() {
        let o = overlay_with(Some(true), Some(false));
        let e = check(&o, &[1, 2], &sb_bytes()).unwrap_err();
        assert!(e.to_string().contains("descriptor"), "{e}");
        // The same block restaged by the encoder is written.
        let mut o = o;
        o.stage_encoded(Blk(2), vec![8u8; 1024]).unwrap();
        assert!(check(&o, &[1, 2], &sb_bytes()).is_ok());
    }

    #[test]
    fn a_superblock_without_magic_is_refused() {
        let o = overlay_with(Some(true), None);
        let mut bad = sb_bytes();
        bad[crate::fs::superblock::MAGIC_AT] = 0;
        assert!(check(&o, &[1], &bad).is_err());
        // Untouched, a bad primary is not the repair's doing.
        assert!(check(&o, &[300], &bad).is_ok());
    }

    #[test]
    fn other_blocks_are_anyone_s() {
        let mut o = Overlay::new(1024, 8192 * 1024, u64::MAX).unwrap();
        o.stage(Blk(300), vec![1u8; 1024]).unwrap();
        assert!(check(&o, &[300], &sb_bytes()).is_ok());
    }
}
