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
