//! On-disk bitmap blocks (block and inode bitmaps): bit `i` is bit `i % 8`
//! of byte `i / 8`, as the kernel's little-endian bit operations lay it
//! out. The byte index is computed here, once, so that the passes and the
//! summary writer index bitmap bytes without casts.

use crate::narrow::to_usize;

/// The byte holding bit `i`.
pub fn byte_of(i: u64) -> usize {
    to_usize(i / 8)
}

/// The byte holding bit `i`, and the bit's mask in that byte.
pub fn byte_and_mask(i: u64) -> (usize, u8) {
    (byte_of(i), 1 << (i % 8))
}

/// Is bit `i` set? A bit past the end of the slice reads as clear.
pub fn test(bm: &[u8], i: u64) -> bool {
    let (byte, mask) = byte_and_mask(i);
    bm.get(byte).is_some_and(|&b| b & mask != 0)
}

/// Clears bit `i`; a bit past the end of the slice is left alone.
pub fn clear(bm: &mut [u8], i: u64) {
    let (byte, mask) = byte_and_mask(i);
    if let Some(b) = bm.get_mut(byte) {
        *b &= !mask;
    }
}

/// Sets bit `i`; a bit past the end of the slice is left alone.
pub fn set(bm: &mut [u8], i: u64) {
    let (byte, mask) = byte_and_mask(i);
    if let Some(b) = bm.get_mut(byte) {
        *b |= mask;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_little_endian_within_bytes() {
        let mut bm = vec![0xFFu8, 0x00];
        assert!(test(&bm, 7));
        assert!(!test(&bm, 8));
        assert!(!test(&bm, 64));
        clear(&mut bm, 3);
        clear(&mut bm, 99);
        assert_eq!(bm, [0xF7, 0x00]);
        assert_eq!(byte_and_mask(10), (1, 4));
    }
}
