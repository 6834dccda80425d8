//! Narrowing a number, on purpose and by name.
//!
//! ext4 splits wide values into `_lo` and `_hi` fields, and pfsck indexes
//! memory with numbers read as u64. Both narrow a number; a bare `as` does
//! it silently whether or not bits can be lost. These helpers say which
//! narrowing is meant, so that the `as` casts left in the code (and clippy's
//! `cast_possible_truncation`, run over src/) are the ones to look at.

/// The low 32 bits of a wider value: the `_lo` field of a split one.
#[allow(clippy::cast_possible_truncation)] // dropping the high bits is the point
pub const fn lo32(v: u64) -> u32 {
    v as u32
}

/// Bits 32 to 47: the 16-bit `_hi` field of a 48-bit value (a block number,
/// `i_blocks`, the xattr block).
#[allow(clippy::cast_possible_truncation)] // bits above 48 are not on disk
pub const fn hi16(v: u64) -> u16 {
    (v >> 32) as u16
}

/// Bits 32 to 39: the 8-bit `_hi` byte of a 40-bit time stamp.
#[allow(clippy::cast_possible_truncation)] // bits above 40 are not on disk
pub const fn hi8(v: u64) -> u8 {
    (v >> 32) as u8
}

/// The low 16 bits of a 32-bit value: the `_lo` half of a split checksum.
#[allow(clippy::cast_possible_truncation)] // dropping the high bits is the point
pub const fn lo16(v: u32) -> u16 {
    v as u16
}

/// A byte offset, length or index held as u64, as a usize. Lossless where
/// usize has 64 bits; elsewhere a value that does not fit becomes
/// `usize::MAX`, which no buffer reaches, so indexing with it panics rather
/// than reading the wrong place.
#[inline]
pub fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// A count, length or index that fits in 32 bits by construction (a list
/// the check built, a field of a block), as u32. Should it ever not fit,
/// it becomes `u32::MAX`, past every limit the format checks, instead of
/// wrapping to a small, plausible value.
#[inline]
pub fn sat32<T: TryInto<u32>>(v: T) -> u32 {
    v.try_into().unwrap_or(u32::MAX)
}

/// As [`sat32`], for 16-bit fields (an entry count, an offset in a block).
#[inline]
pub fn sat16<T: TryInto<u16>>(v: T) -> u16 {
    v.try_into().unwrap_or(u16::MAX)
}

/// As [`sat32`], for 8-bit fields (a name length).
#[inline]
pub fn sat8<T: TryInto<u8>>(v: T) -> u8 {
    v.try_into().unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturating_narrowing_never_wraps() {
        assert_eq!(sat32(7u64), 7);
        assert_eq!(sat32(u64::from(u32::MAX) + 1), u32::MAX);
        assert_eq!(sat16(70_000usize), u16::MAX);
        assert_eq!(sat8(255u32), 255);
        assert_eq!(sat8(256u32), u8::MAX);
        assert_eq!(lo32(0x1_0000_0002), 2);
        assert_eq!(hi16(0x1234_0000_0000), 0x1234);
    }
}
