//! Extent tree nodes: a 12-byte header followed by 12-byte entries, either
//! in the inode's i_block (root) or in a whole block with a checksum tail.

use super::bytes::{le16, le32, put_le16, put_le32};
use super::checksum::crc32c_raw;
use crate::narrow::{hi16, lo32};

pub const EXTENT_MAGIC: u16 = 0xF30A;
/// Lengths above this mark an unwritten (preallocated) extent.
pub const INIT_MAX_LEN: u16 = 32768;
/// The deepest tree the kernel builds (and accepts).
pub const MAX_DEPTH: u16 = 5;
/// Bytes of a node header and of each entry after it.
pub const HEADER_LEN: usize = 12;
pub const ENTRY_LEN: usize = 12;
/// Entries the root in i_block holds.
pub const ROOT_MAX: u16 = 4;

/// One encoded entry, leaf or index.
pub type RawEntry = [u8; ENTRY_LEN];

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

impl Extent {
    /// The 12 bytes of this leaf entry (`len` at most 32768 written,
    /// 32767 unwritten).
    pub fn encode(&self) -> RawEntry {
        let mut e = [0u8; ENTRY_LEN];
        put_le32(&mut e, 0, self.lblk);
        let raw_len = if self.unwritten {
            self.len + u32::from(INIT_MAX_LEN)
        } else {
            self.len
        };
        // An extent covers at most 32768 blocks (32767 unwritten, stored
        // plus 32768): the raw length fits 16 bits.
        #[allow(clippy::cast_possible_truncation)]
        put_le16(&mut e, 4, raw_len as u16);
        put_le16(&mut e, 6, hi16(self.pblk));
        put_le32(&mut e, 8, lo32(self.pblk));
        e
    }
}

impl ExtentIndex {
    /// The 12 bytes of this index entry.
    pub fn encode(&self) -> RawEntry {
        let mut e = [0u8; ENTRY_LEN];
        put_le32(&mut e, 0, self.lblk);
        put_le32(&mut e, 4, lo32(self.leaf));
        put_le16(&mut e, 8, hi16(self.leaf));
        e
    }
}

/// Writes a node header (magic, entry count, capacity, depth) at the
/// start of `b`, the root's 60 bytes or a tree block; the generation
/// field is left as it is.
pub fn put_header(b: &mut [u8], entries: u16, max: u16, depth: u16) {
    put_le16(b, 0, EXTENT_MAGIC);
    put_le16(b, 2, entries);
    put_le16(b, 4, max);
    put_le16(b, 6, depth);
}

pub fn set_entry_count(b: &mut [u8], n: u16) {
    put_le16(b, 2, n);
}

pub fn set_depth(b: &mut [u8], depth: u16) {
    put_le16(b, 6, depth);
}

/// The logical block of the node's first entry (leaf and index entries
/// both start with it).
pub fn first_lblk(b: &[u8]) -> u32 {
    le32(b, HEADER_LEN)
}

/// Sets the logical block of a raw entry, leaf or index.
pub fn set_entry_lblk(e: &mut [u8], lblk: u32) {
    put_le32(e, 0, lblk);
}

/// Sets the raw ee_len of a leaf entry: up to `INIT_MAX_LEN` an
/// initialized extent of that length, above it an unwritten one.
pub fn set_leaf_raw_len(e: &mut [u8], raw_len: u16) {
    put_le16(e, 4, raw_len);
}

/// The raw bytes of entry `i`; None past the end of `b`.
pub fn raw_entry(b: &[u8], i: usize) -> Option<RawEntry> {
    let off = HEADER_LEN + ENTRY_LEN * i;
    b.get(off..off + ENTRY_LEN)?.try_into().ok()
}

/// Writes `entries` after the header of node `b` and sets its entry count
/// (entries past them are left as they are).
pub fn put_entries(b: &mut [u8], entries: &[RawEntry]) {
    // No more entries than max_entries (a u16) fit after the header.
    #[allow(clippy::cast_possible_truncation)]
    set_entry_count(b, entries.len() as u16);
    for (i, e) in entries.iter().enumerate() {
        let off = HEADER_LEN + ENTRY_LEN * i;
        if let Some(slot) = b.get_mut(off..off + ENTRY_LEN) {
            slot.copy_from_slice(e);
        }
    }
}

/// `put_entries`, and the slots past them up to the node's capacity
/// zeroed (stale entries past the count would only confuse a reader).
pub fn put_entries_zeroed(b: &mut [u8], entries: &[RawEntry]) {
    put_entries(b, entries);
    let max = parse_header(b).max as usize;
    let end = (HEADER_LEN + ENTRY_LEN * max).min(b.len());
    let from = (HEADER_LEN + ENTRY_LEN * entries.len()).min(end);
    b[from..end].fill(0);
}

/// An encoded leaf entry, decoded.
pub fn decode_leaf(e: &RawEntry) -> Extent {
    let raw_len = le16(e, 4);
    let (len, unwritten) = if raw_len > INIT_MAX_LEN {
        (u32::from(raw_len - INIT_MAX_LEN), true)
    } else {
        (u32::from(raw_len), false)
    };
    Extent {
        lblk: le32(e, 0),
        len,
        pblk: (u64::from(le16(e, 6)) << 32) | u64::from(le32(e, 8)),
        unwritten,
    }
}

/// Points an encoded index entry at `leaf` (its other bytes kept).
pub fn set_index_leaf(e: &mut RawEntry, leaf: u64) {
    put_le32(e, 4, lo32(leaf));
    put_le16(e, 8, hi16(leaf));
}

/// The logical block an encoded entry starts at (leaf or index).
pub fn entry_lblk(e: &RawEntry) -> u32 {
    le32(e, 0)
}

/// Stores the checksum of tree block `b` in its tail (metadata_csum);
/// nothing when the tail would lie outside the block.
pub fn set_block_checksum(inode_seed: u32, b: &mut [u8]) {
    if let Some(c) = compute_block_checksum(inode_seed, b) {
        let off = tail_offset(parse_header(b).max);
        put_le32(b, off, c);
    }
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
    let mut e = [0u8; ENTRY_LEN];
    let raw = entry(b, i);
    e[..raw.len()].copy_from_slice(raw);
    decode_leaf(&e)
}

pub fn parse_index(b: &[u8], i: usize) -> ExtentIndex {
    let e = entry(b, i);
    ExtentIndex {
        lblk: le32(e, 0),
        leaf: (u64::from(le16(e, 8)) << 32) | u64::from(le32(e, 4)),
    }
}

/// How many entries fit in a node of `len` bytes (the root: 60 bytes, 4).
pub fn max_entries(len: usize) -> u16 {
    u16::try_from(len.saturating_sub(12) / 12).unwrap_or(u16::MAX)
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
        assert_eq!(&e.encode()[..], &b[12..24]);
    }

    #[test]
    fn built_nodes_parse_back() {
        let mut node = vec![0u8; 1024];
        let max = max_entries(node.len());
        put_header(&mut node, 0, max, 1);
        let ix = ExtentIndex {
            lblk: 9,
            leaf: 3 << 32 | 77,
        };
        let leaf = Extent {
            lblk: 1,
            len: 32768,
            pblk: 5,
            unwritten: false,
        };
        put_entries_zeroed(&mut node, &[ix.encode(), leaf.encode()]);
        let h = parse_header(&node);
        assert_eq!(
            (h.magic, h.entries, h.max, h.depth),
            (EXTENT_MAGIC, 2, max, 1)
        );
        assert_eq!(parse_index(&node, 0), ix);
        assert_eq!(parse_leaf(&node, 1), leaf);
        assert_eq!(raw_entry(&node, 1).map(|e| entry_lblk(&e)), Some(1));
        set_block_checksum(42, &mut node);
        assert_eq!(
            compute_block_checksum(42, &node),
            Some(stored_block_checksum(&node))
        );
    }
}
