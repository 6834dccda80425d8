//! Orphan file blocks: inode numbers, then a magic and a checksum in the
//! last 8 bytes.

use super::bytes::{le32, put_le32};
use super::checksum::crc32c_raw;
use super::num::Ino;

/// Tail magic of an orphan file block.
pub const BLOCK_MAGIC: u32 = 0x0B10_CA04;
/// Bytes of the tail (magic, checksum).
const TAIL_LEN: usize = 8;

/// The magic a block carries.
pub fn magic(b: &[u8]) -> u32 {
    le32(b, b.len().saturating_sub(TAIL_LEN))
}

pub fn stored_checksum(b: &[u8]) -> u32 {
    le32(b, b.len().saturating_sub(4))
}

/// The checksum of block `b` at physical block `pblk` of orphan file
/// `ino` (generation `generation`).
pub fn compute_checksum(fs_seed: u32, ino: Ino, generation: u32, pblk: u64, b: &[u8]) -> u32 {
    let c = crc32c_raw(fs_seed, &ino.get().to_le_bytes());
    let c = crc32c_raw(c, &generation.to_le_bytes());
    let c = crc32c_raw(c, &pblk.to_le_bytes());
    crc32c_raw(c, &b[..b.len().saturating_sub(TAIL_LEN)])
}

/// The inode numbers a block holds (0 for an empty slot).
pub fn entries(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
    (0..b.len().saturating_sub(TAIL_LEN) / 4).map(move |k| le32(b, k * 4))
}

/// An empty block: no entries, the magic, and the checksum when `csum`
/// gives (fs seed, inode, generation, physical block).
pub fn empty_block(bs: usize, csum: Option<(u32, Ino, u32, u64)>) -> Vec<u8> {
    let mut b = vec![0u8; bs];
    put_le32(&mut b, bs - TAIL_LEN, BLOCK_MAGIC);
    if let Some((seed, ino, generation, pblk)) = csum {
        let c = compute_checksum(seed, ino, generation, pblk, &b);
        put_le32(&mut b, bs - 4, c);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_block_reads_back() {
        let b = empty_block(1024, Some((1, Ino(12), 3, 99)));
        assert_eq!(magic(&b), BLOCK_MAGIC);
        assert_eq!(stored_checksum(&b), compute_checksum(1, Ino(12), 3, 99, &b));
        assert!(entries(&b).all(|e| e == 0));
        assert_eq!(entries(&b).count(), 254);
    }
}
