//! Little-endian field access that never panics: bytes past the end read as 0.

#[inline]
pub fn le16(b: &[u8], off: usize) -> u16 {
    match b.get(off..off.wrapping_add(2)) {
        Some(s) => u16::from_le_bytes([s[0], s[1]]),
        None => 0,
    }
}

#[inline]
pub fn le32(b: &[u8], off: usize) -> u32 {
    match b.get(off..off.wrapping_add(4)) {
        Some(s) => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

#[inline]
pub fn le64(b: &[u8], off: usize) -> u64 {
    u64::from(le32(b, off)) | (u64::from(le32(b, off.wrapping_add(4))) << 32)
}

#[inline]
pub fn u8_at(b: &[u8], off: usize) -> u8 {
    b.get(off).copied().unwrap_or(0)
}

/// Writes are only used to build test buffers and to zero checksum fields
/// before hashing; out-of-range writes are ignored.
#[inline]
pub fn put_le16(b: &mut [u8], off: usize, v: u16) {
    if let Some(s) = b.get_mut(off..off.wrapping_add(2)) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

#[inline]
pub fn put_le32(b: &mut [u8], off: usize, v: u32) {
    if let Some(s) = b.get_mut(off..off.wrapping_add(4)) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_end_are_zero() {
        let b = [1u8, 2, 3];
        assert_eq!(le16(&b, 0), 0x0201);
        assert_eq!(le16(&b, 2), 0);
        assert_eq!(le32(&b, usize::MAX), 0);
        assert_eq!(u8_at(&b, 3), 0);
    }
}
