//! Hashed directory index (htree) nodes: the dx_root in a directory's first
//! block and dx_node blocks below it. Both hide inside what looks like an
//! ordinary directory block to old readers.

use super::bytes::{le16, le32, put_le16, put_le32, u8_at};
use super::checksum::crc32c_raw;

/// Offset of dx_root_info in block 0 (after the fake "." and ".." entries).
pub const ROOT_INFO_OFFSET: usize = 0x18;
/// The kernel supports at most 2 index levels, 3 with large_dir.
pub const MAX_LEVELS: u8 = 2;
pub const MAX_LEVELS_LARGEDIR: u8 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DxRootInfo {
    pub reserved_zero: u32,
    pub hash_version: u8,
    pub info_length: u8,
    pub indirect_levels: u8,
    pub unused_flags: u8,
}

pub fn parse_root_info(b: &[u8]) -> DxRootInfo {
    DxRootInfo {
        reserved_zero: le32(b, ROOT_INFO_OFFSET),
        hash_version: u8_at(b, ROOT_INFO_OFFSET + 4),
        info_length: u8_at(b, ROOT_INFO_OFFSET + 5),
        indirect_levels: u8_at(b, ROOT_INFO_OFFSET + 6),
        unused_flags: u8_at(b, ROOT_INFO_OFFSET + 7),
    }
}

/// Writes a dx_root_info (reserved field left as it is) with the
/// standard 8-byte length.
pub fn put_root_info(b: &mut [u8], hash_version: u8, indirect_levels: u8) {
    b[ROOT_INFO_OFFSET + 4] = hash_version;
    b[ROOT_INFO_OFFSET + 5] = ROOT_INFO_LEN;
    b[ROOT_INFO_OFFSET + 6] = indirect_levels;
}

/// The standard dx_root_info length.
pub const ROOT_INFO_LEN: u8 = 8;

/// Offset of the count/limit header of a dx_root (given its info length).
pub fn root_count_offset(info: &DxRootInfo) -> usize {
    ROOT_INFO_OFFSET + usize::from(info.info_length)
}

/// A dx_node starts with a fake empty entry of 8 bytes.
pub const NODE_COUNT_OFFSET: usize = 8;
/// The checksum tail of an index block (metadata_csum).
pub const DX_TAIL_LEN: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountLimit {
    pub limit: u16,
    pub count: u16,
}

pub fn parse_count_limit(b: &[u8], off: usize) -> CountLimit {
    CountLimit {
        limit: le16(b, off),
        count: le16(b, off + 2),
    }
}

/// Entry `i` of the index starting at `off`: (hash, block). Entry 0's hash
/// slot holds the count/limit, so its hash reads as 0.
pub fn dx_entry(b: &[u8], off: usize, i: usize) -> (u32, u32) {
    let e = off + 8 * i;
    let hash = if i == 0 { 0 } else { le32(b, e) };
    (hash, le32(b, e + 4))
}

/// How many entries fit between `off` and the end of the block, leaving room
/// for the 8-byte checksum tail when metadata_csum is on.
pub fn expected_limit(block_size: usize, off: usize, csum: bool) -> usize {
    let room = block_size.saturating_sub(off) - if csum { DX_TAIL_LEN } else { 0 };
    room / 8
}

/// The dx tail checksum: over the used entries, then the whole 8-byte tail
/// with its checksum field taken as zero. None when the tail lies outside
/// the block.
pub fn compute_tail_checksum(
    inode_seed: u32,
    b: &[u8],
    count_off: usize,
    cl: CountLimit,
) -> Option<u32> {
    let tail = count_off + usize::from(cl.limit) * 8;
    let used = count_off + usize::from(cl.count) * 8;
    if tail + 8 > b.len() || used > tail {
        return None;
    }
    let c = crc32c_raw(inode_seed, &b[..used]);
    let c = crc32c_raw(c, &b[tail..tail + 4]);
    Some(crc32c_raw(c, &[0u8; 4]))
}

pub fn stored_tail_checksum(b: &[u8], count_off: usize, cl: CountLimit) -> u32 {
    le32(b, count_off + usize::from(cl.limit) * 8 + 4)
}

pub fn set_tail_checksum(b: &mut [u8], count_off: usize, cl: CountLimit, c: u32) {
    put_le32(b, count_off + usize::from(cl.limit) * 8 + 4, c);
}

/// Writes an index (count, limit, entries) at `count_off`; the first
/// entry's hash slot holds the count and limit.
// A limit and a count are at most a block's worth of 8-byte entries,
// 8192 in a 64 KiB block: both fit 16 bits.
#[allow(clippy::cast_possible_truncation)]
pub fn put_index(b: &mut [u8], count_off: usize, limit: usize, entries: &[(u32, u32)]) {
    put_le16(b, count_off, limit as u16);
    put_le16(b, count_off + 2, entries.len() as u16);
    for (i, &(h, blk)) in entries.iter().enumerate() {
        if i > 0 {
            put_le32(b, count_off + 8 * i, h);
        }
        put_le32(b, count_off + 8 * i + 4, blk);
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data, small by construction
mod tests {
    use super::*;
    use crate::fs::bytes::{put_le16, put_le32};

    #[test]
    fn root_layout() {
        let mut b = vec![0u8; 4096];
        b[ROOT_INFO_OFFSET + 4] = 1;
        b[ROOT_INFO_OFFSET + 5] = 8;
        let info = parse_root_info(&b);
        let off = root_count_offset(&info);
        assert_eq!(off, 0x20);
        put_le16(&mut b, off, expected_limit(4096, off, true) as u16);
        put_le16(&mut b, off + 2, 2);
        put_le32(&mut b, off + 4, 1);
        put_le32(&mut b, off + 8, 0x1234);
        put_le32(&mut b, off + 12, 2);
        let cl = parse_count_limit(&b, off);
        assert_eq!(cl.limit, 507);
        assert_eq!(dx_entry(&b, off, 0), (0, 1));
        assert_eq!(dx_entry(&b, off, 1), (0x1234, 2));
        assert!(compute_tail_checksum(7, &b, off, cl).is_some());
    }
}
