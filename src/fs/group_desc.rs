//! Block group descriptors (32 bytes, or `s_desc_size` with 64bit).

use super::bytes::{le16, le32, put_le16, put_le32};
use super::checksum::{crc16, crc32c_raw};
use super::superblock::Superblock;
use crate::narrow::{lo16, lo32};

pub const BG_INODE_UNINIT: u16 = 0x1;
pub const BG_BLOCK_UNINIT: u16 = 0x2;
pub const BG_INODE_ZEROED: u16 = 0x4;

const CHECKSUM_OFFSET: usize = 0x1E;

/// Byte offsets of descriptor fields: (low half, high half). The high
/// halves exist in descriptors of 64 bytes or more.
pub mod field {
    pub const BLOCK_BITMAP: (usize, usize) = (0x00, 0x20);
    pub const INODE_BITMAP: (usize, usize) = (0x04, 0x24);
    pub const INODE_TABLE: (usize, usize) = (0x08, 0x28);
    pub const FREE_BLOCKS: (usize, usize) = (0x0C, 0x2C);
    pub const FREE_INODES: (usize, usize) = (0x0E, 0x2E);
    pub const USED_DIRS: (usize, usize) = (0x10, 0x30);
    pub const FLAGS: usize = 0x12;
    pub const BLOCK_BITMAP_CSUM: (usize, usize) = (0x18, 0x38);
    pub const INODE_BITMAP_CSUM: (usize, usize) = (0x1A, 0x3A);
    pub const ITABLE_UNUSED: (usize, usize) = (0x1C, 0x32);
    pub const CHECKSUM: usize = super::CHECKSUM_OFFSET;
}

/// Which of a group's metadata locations a descriptor field names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Location {
    BlockBitmap,
    InodeBitmap,
    InodeTable,
}

/// The raw bytes of one descriptor (`desc_size` of them), edited field by
/// field; 32-bit counts split over a low and, in wide descriptors, a high
/// 16-bit half.
pub struct DescMut<'a>(pub &'a mut [u8]);

/// The flags of raw descriptor `d`.
pub fn flags_of(d: &[u8]) -> u16 {
    le16(d, field::FLAGS)
}

impl DescMut<'_> {
    pub fn wide(&self) -> bool {
        self.0.len() >= 64
    }
    fn get_split16(&self, (lo, hi): (usize, usize)) -> u32 {
        let h = if self.wide() {
            u32::from(le16(self.0, hi)) << 16
        } else {
            0
        };
        u32::from(le16(self.0, lo)) | h
    }
    fn put_split16(&mut self, (lo, hi): (usize, usize), v: u32) {
        put_le16(self.0, lo, lo16(v));
        if self.wide() {
            put_le16(self.0, hi, (v >> 16) as u16);
        }
    }
    pub fn set_location(&mut self, which: Location, blk: u64) {
        let (lo, hi) = match which {
            Location::BlockBitmap => field::BLOCK_BITMAP,
            Location::InodeBitmap => field::INODE_BITMAP,
            Location::InodeTable => field::INODE_TABLE,
        };
        put_le32(self.0, lo, lo32(blk));
        if self.wide() {
            put_le32(self.0, hi, (blk >> 32) as u32);
        }
    }
    pub fn free_blocks(&self) -> u32 {
        self.get_split16(field::FREE_BLOCKS)
    }
    pub fn set_free_blocks(&mut self, v: u32) {
        self.put_split16(field::FREE_BLOCKS, v);
    }
    pub fn free_inodes(&self) -> u32 {
        self.get_split16(field::FREE_INODES)
    }
    pub fn set_free_inodes(&mut self, v: u32) {
        self.put_split16(field::FREE_INODES, v);
    }
    pub fn used_dirs(&self) -> u32 {
        self.get_split16(field::USED_DIRS)
    }
    pub fn set_used_dirs(&mut self, v: u32) {
        self.put_split16(field::USED_DIRS, v);
    }
    pub fn flags(&self) -> u16 {
        le16(self.0, field::FLAGS)
    }
    pub fn set_flags(&mut self, v: u16) {
        put_le16(self.0, field::FLAGS, v);
    }
    pub fn set_block_bitmap_csum(&mut self, v: u32) {
        self.put_split16(field::BLOCK_BITMAP_CSUM, v);
    }
    pub fn set_inode_bitmap_csum(&mut self, v: u32) {
        self.put_split16(field::INODE_BITMAP_CSUM, v);
    }
    pub fn itable_unused(&self) -> u32 {
        self.get_split16(field::ITABLE_UNUSED)
    }
    pub fn set_itable_unused(&mut self, v: u32) {
        self.put_split16(field::ITABLE_UNUSED, v);
    }
    /// Stores the checksum of descriptor `group`, when the file system
    /// checksums descriptors.
    pub fn set_checksum(&mut self, sb: &Superblock, group: u32) {
        if let Some(c) = compute_checksum(sb, group, self.0) {
            put_le16(self.0, CHECKSUM_OFFSET, c);
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupDesc {
    pub block_bitmap: u64,
    pub inode_bitmap: u64,
    pub inode_table: u64,
    pub free_blocks_count: u32,
    pub free_inodes_count: u32,
    pub used_dirs_count: u32,
    pub flags: u16,
    pub exclude_bitmap: u64,
    pub block_bitmap_csum: u32,
    pub inode_bitmap_csum: u32,
    pub itable_unused: u32,
    pub checksum: u16,
    /// Whether the high halves exist (descriptor of 64 bytes or more).
    pub wide: bool,
}

impl GroupDesc {
    /// Parses one descriptor; `b` is exactly `desc_size` bytes (32 or more).
    pub fn parse(b: &[u8]) -> GroupDesc {
        let wide = b.len() >= 64;
        let hi32 = |off| {
            if wide {
                u64::from(le32(b, off)) << 32
            } else {
                0
            }
        };
        let hi16 = |off| {
            if wide {
                u32::from(le16(b, off)) << 16
            } else {
                0
            }
        };
        GroupDesc {
            block_bitmap: u64::from(le32(b, 0x0)) | hi32(0x20),
            inode_bitmap: u64::from(le32(b, 0x4)) | hi32(0x24),
            inode_table: u64::from(le32(b, 0x8)) | hi32(0x28),
            free_blocks_count: u32::from(le16(b, 0xC)) | hi16(0x2C),
            free_inodes_count: u32::from(le16(b, 0xE)) | hi16(0x2E),
            used_dirs_count: u32::from(le16(b, 0x10)) | hi16(0x30),
            flags: le16(b, 0x12),
            exclude_bitmap: u64::from(le32(b, 0x14)) | hi32(0x34),
            block_bitmap_csum: u32::from(le16(b, 0x18)) | hi16(0x38),
            inode_bitmap_csum: u32::from(le16(b, 0x1A)) | hi16(0x3A),
            itable_unused: u32::from(le16(b, 0x1C)) | hi16(0x32),
            checksum: le16(b, CHECKSUM_OFFSET),
            wide,
        }
    }

    pub fn has_flag(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    /// Whether `bm`, the group's block bitmap (its bytes up to the last
    /// bit of the group), carries the stored checksum.
    pub fn block_bitmap_csum_ok(&self, sb: &Superblock, bm: &[u8]) -> bool {
        bitmap_checksum(sb, bm, self.wide) == self.block_bitmap_csum
    }

    /// Whether `bm`, the group's inode bitmap, carries the stored checksum.
    pub fn inode_bitmap_csum_ok(&self, sb: &Superblock, bm: &[u8]) -> bool {
        bitmap_checksum(sb, bm, self.wide) == self.inode_bitmap_csum
    }
}

/// The checksum descriptor `group` (raw bytes `b`) should carry, or None when
/// the file system does not checksum descriptors.
pub fn compute_checksum(sb: &Superblock, group: u32, b: &[u8]) -> Option<u16> {
    let mut d = b.to_vec();
    put_le16(&mut d, CHECKSUM_OFFSET, 0);
    if sb.metadata_csum() {
        // A descriptor size below 32 (read despite superblock errors)
        // narrows what the checksum covers.
        let len = d
            .len()
            .min(crate::narrow::to_usize(u64::from(sb.desc_size())));
        let c = crc32c_raw(sb.csum_seed(), &group.to_le_bytes());
        let c = crc32c_raw(c, &d[..len]);
        Some((c & 0xFFFF) as u16)
    } else if sb.has_ro_compat(super::superblock::ro_compat::GDT_CSUM) {
        let c = crc16(!0, &sb.uuid);
        let c = crc16(c, &group.to_le_bytes());
        let c = crc16(c, &d[..CHECKSUM_OFFSET.min(d.len())]);
        // The bytes after the checksum field count only for wide descriptors.
        let c = if d.len() > CHECKSUM_OFFSET + 2 {
            crc16(c, &d[CHECKSUM_OFFSET + 2..])
        } else {
            c
        };
        Some(c)
    } else {
        None
    }
}

/// crc32c of a bitmap as stored in the descriptor (low 16 bits only for
/// narrow descriptors). `bytes` is the part of the bitmap that is used.
pub fn bitmap_checksum(sb: &Superblock, bytes: &[u8], wide: bool) -> u32 {
    let c = crc32c_raw(sb.csum_seed(), bytes);
    if wide { c } else { c & 0xFFFF }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::put_le32;

    #[test]
    fn parse_narrow_and_wide() {
        let mut b = vec![0u8; 64];
        put_le32(&mut b, 0x0, 5);
        put_le32(&mut b, 0x20, 1);
        put_le16(&mut b, 0x12, BG_INODE_UNINIT);
        let w = GroupDesc::parse(&b);
        assert_eq!(w.block_bitmap, (1 << 32) | 5);
        assert!(w.has_flag(BG_INODE_UNINIT));
        let n = GroupDesc::parse(&b[..32]);
        assert_eq!(n.block_bitmap, 5);
        let mut d = DescMut(&mut b);
        d.set_free_blocks(0x1_0002);
        d.set_location(Location::InodeTable, 7 << 32 | 9);
        let w = GroupDesc::parse(&b);
        assert_eq!(
            (w.free_blocks_count, w.inode_table),
            (0x1_0002, 7 << 32 | 9)
        );
        let mut narrow = vec![0u8; 32];
        DescMut(&mut narrow).set_free_blocks(0x1_0002);
        assert_eq!(GroupDesc::parse(&narrow).free_blocks_count, 2);
    }
}
