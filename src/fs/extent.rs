//! Extent tree nodes: a 12-byte header followed by 12-byte entries, either
//! in the inode's i_block (root) or in a whole block with a checksum tail.

use super::bytes::{le16, le32};
use super::checksum::crc32c_raw;

pub const EXTENT_MAGIC: u16 = 0xF30A;
/// Lengths above this mark an unwritten (preallocated) extent.
pub const INIT_MAX_LEN: u16 = 32768;
/// The deepest tree the kernel builds (and accepts).
pub const MAX_DEPTH: u16 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtentHeader {
    pub magic: u16,
    pub entries: u16,
    pub max: u16,
    pub depth: u16,
    pub generation: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub lblk: u32,
    pub len: u32,
    pub pblk: u64,
    pub unwritten: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtentIndex {
    pub lblk: u32,
    pub leaf: u64,
}

pub fn parse_header(b: &[u8]) -> ExtentHeader {
    ExtentHeader {
        magic: le16(b, 0),
        entries: le16(b, 2),
        max: le16(b, 4),
        depth: le16(b, 6),
        generation: le32(b, 8),
    }
}

fn entry(b: &[u8], i: usize) -> &[u8] {
    let off = 12 + 12 * i;
    b.get(off..off + 12).unwrap_or(&[])
}

pub fn parse_leaf(b: &[u8], i: usize) -> Extent {
    let e = entry(b, i);
    let raw_len = le16(e, 4);
    let (len, unwritten) = if raw_len > INIT_MAX_LEN {
        ((raw_len - INIT_MAX_LEN) as u32, true)
    } else {
        (raw_len as u32, false)
    };
    Extent {
        lblk: le32(e, 0),
        len,
        pblk: ((le16(e, 6) as u64) << 32) | le32(e, 8) as u64,
        unwritten,
    }
}

pub fn parse_index(b: &[u8], i: usize) -> ExtentIndex {
    let e = entry(b, i);
    ExtentIndex {
        lblk: le32(e, 0),
        leaf: ((le16(e, 8) as u64) << 32) | le32(e, 4) as u64,
    }
}

/// How many entries fit in a node of `len` bytes (the root: 60 bytes, 4).
pub fn max_entries(len: usize) -> u16 {
    (len.saturating_sub(12) / 12).min(u16::MAX as usize) as u16
}

/// Offset of the checksum tail of a tree block with `max` entries.
pub fn tail_offset(max: u16) -> usize {
    12 + 12 * max as usize
}

/// The checksum the tail of extent block `b` should hold; None when the
/// tail would lie outside the block.
pub fn compute_block_checksum(inode_seed: u32, b: &[u8]) -> Option<u32> {
    let h = parse_header(b);
    let off = tail_offset(h.max);
    if off + 4 > b.len() {
        return None;
    }
    Some(crc32c_raw(inode_seed, &b[..off]))
}

pub fn stored_block_checksum(b: &[u8]) -> u32 {
    let h = parse_header(b);
    le32(b, tail_offset(h.max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::{put_le16, put_le32};

    #[test]
    fn parse_root_leaf() {
        let mut b = [0u8; 60];
        put_le16(&mut b, 0, EXTENT_MAGIC);
        put_le16(&mut b, 2, 1);
        put_le16(&mut b, 4, 4);
        put_le32(&mut b, 12, 7);
        put_le16(&mut b, 16, INIT_MAX_LEN + 3);
        put_le16(&mut b, 18, 1);
        put_le32(&mut b, 20, 100);
        let h = parse_header(&b);
        assert_eq!(
            (h.magic, h.entries, h.max, h.depth),
            (EXTENT_MAGIC, 1, 4, 0)
        );
        let e = parse_leaf(&b, 0);
        assert_eq!(
            e,
            Extent {
                lblk: 7,
                len: 3,
                pblk: (1 << 32) | 100,
                unwritten: true
            }
        );
        assert_eq!(parse_leaf(&b, 99).len, 0);
        assert_eq!(max_entries(60), 4);
        assert_eq!(max_entries(4096), 340);
    }
}
