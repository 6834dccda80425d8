//! The two checksums ext4 uses: crc32c (metadata_csum) and crc16 (gdt_csum).
//!
//! ext4 chains crc32c "raw": no inversion on entry or exit, the seed being the
//! previous value. The `crc32c` crate inverts on both sides, so we undo that.

/// crc32c continued from `seed` without the usual pre/post inversion.
#[inline]
pub fn crc32c_raw(seed: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() < SMALL && std::is_x86_feature_detected!("sse4.2") {
        return small_sse42(seed, data);
    }
    !crc32c::crc32c_append(!seed, data)
}

/// `crc32c_raw` of the 8 little-endian bytes of `v`: one instruction
/// where the CPU has it (every inode's checksum seed is one).
#[inline]
pub fn crc32c_raw_u64(seed: u32, v: u64) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("sse4.2") {
        #[target_feature(enable = "sse4.2")]
        fn run(seed: u32, v: u64) -> u32 {
            #[allow(clippy::cast_possible_truncation)] // the crc is 32 bits wide
            let c = std::arch::x86_64::_mm_crc32_u64(u64::from(seed), v) as u32;
            c
        }
        // SAFETY: SSE 4.2 was detected on this CPU.
        #[allow(unsafe_code)]
        return unsafe { run(seed, v) };
    }
    crc32c_raw(seed, &v.to_le_bytes())
}

/// Below this many bytes the crate's three-lane code has nothing to
/// split (it starts at 3 x 256 bytes) and costs more in set-up than the
/// data: pass 1 checksums every inode in pieces of 4 to 124 bytes.
#[cfg(target_arch = "x86_64")]
const SMALL: usize = 768;

/// crc32c of a short buffer with the SSE 4.2 instruction (raw).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn small_sse42(seed: u32, data: &[u8]) -> u32 {
    // SAFETY: called only once SSE 4.2 was detected on this CPU.
    unsafe { sse42(seed, data) }
}

/// 8 bytes at a time, then 4, 2 and 1 (the instruction has no
/// inversion: raw).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
fn sse42(seed: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64};
    let mut words = data.chunks_exact(8);
    let mut c = u64::from(seed);
    for w in &mut words {
        c = _mm_crc32_u64(c, u64::from_le_bytes(w.try_into().unwrap_or_default()));
    }
    #[allow(clippy::cast_possible_truncation)] // the crc is 32 bits wide
    let mut c = c as u32;
    let mut rest = words.remainder();
    if let Some((w, r)) = rest.split_first_chunk::<4>() {
        c = _mm_crc32_u32(c, u32::from_le_bytes(*w));
        rest = r;
    }
    if let Some((w, r)) = rest.split_first_chunk::<2>() {
        c = _mm_crc32_u16(c, u16::from_le_bytes(*w));
        rest = r;
    }
    if let Some(&b) = rest.first() {
        c = _mm_crc32_u8(c, b);
    }
    c
}

/// `crc32c_raw` of `data` with the 16 bytes at `at` ANDed with `mask`
/// (a checksum field counted as zero), without copying `data`: one call
/// per inode in pass 1. `at + 16` must not pass the end of `data`.
pub fn crc32c_raw_masked(seed: u32, data: &[u8], at: usize, mask: &[u8; 16]) -> u32 {
    let (head, rest) = data.split_at(at);
    let (field, tail) = rest.split_first_chunk::<16>().expect("16 bytes at `at`");
    let w = (u128::from_le_bytes(*field) & u128::from_le_bytes(*mask)).to_le_bytes();
    #[cfg(target_arch = "x86_64")]
    if data.len() < SMALL && std::is_x86_feature_detected!("sse4.2") {
        #[target_feature(enable = "sse4.2")]
        fn run(seed: u32, head: &[u8], w: &[u8; 16], tail: &[u8]) -> u32 {
            let c = sse42(seed, head);
            let c = sse42(c, w);
            sse42(c, tail)
        }
        // SAFETY: SSE 4.2 was detected on this CPU.
        #[allow(unsafe_code)]
        return unsafe { run(seed, head, &w, tail) };
    }
    crc32c_raw(crc32c_raw(crc32c_raw(seed, head), &w), tail)
}

/// Table for crc16 with the reflected polynomial 0xA001 (CRC-16/ARC).
const CRC16_TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        #[allow(clippy::cast_possible_truncation)] // i < 256
        let mut c = i as u16;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xA001
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// crc16 (poly 0x8005 reflected) continued from `seed`, as gdt_csum chains it.
pub fn crc16(seed: u16, data: &[u8]) -> u16 {
    data.iter().fold(seed, |c, &b| {
        (c >> 8) ^ CRC16_TABLE[((c ^ u16::from(b)) & 0xFF) as usize]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_raw_known_value() {
        // crc32c("123456789") = 0xE3069283 with standard inversion.
        assert_eq!(!crc32c_raw(!0, b"123456789"), 0xE306_9283);
        // Chaining equals one pass.
        let a = crc32c_raw(!0, b"1234");
        assert_eq!(crc32c_raw(a, b"56789"), crc32c_raw(!0, b"123456789"));
    }

    #[test]
    fn short_buffers_match_the_crate() {
        // Every length around the short path's edge, every alignment.
        let data: Vec<u8> = (0..2000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in 0..8 {
            for len in (0..900).chain([1023, 1024, 1500]) {
                let d = &data[start..start + len];
                for seed in [0, !0, 0x1234_5678] {
                    if let Ok(w) = <[u8; 8]>::try_from(d) {
                        assert_eq!(
                            crc32c_raw_u64(seed, u64::from_le_bytes(w)),
                            crc32c_raw(seed, d)
                        );
                    }
                    assert_eq!(
                        crc32c_raw(seed, d),
                        !crc32c::crc32c_append(!seed, d),
                        "start {start} len {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn masked_is_a_zeroed_copy() {
        let data: Vec<u8> = (0..1100u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        let mut mask = [0xFF; 16];
        mask[4..6].fill(0);
        mask[10..12].fill(0);
        for len in [16, 17, 136, 256, 512, 1024, 1100] {
            for at in [0, 8, 0x78, len - 16]
                .into_iter()
                .filter(|at| at + 16 <= len)
            {
                let mut copy = data[..len].to_vec();
                for (b, m) in copy[at..at + 16].iter_mut().zip(&mask) {
                    *b &= m;
                }
                assert_eq!(
                    crc32c_raw_masked(5, &data[..len], at, &mask),
                    crc32c_raw(5, &copy)
                );
            }
        }
    }

    #[test]
    fn crc16_known_value() {
        assert_eq!(crc16(0, b"123456789"), 0xBB3D);
        let a = crc16(0xFFFF, b"1234");
        assert_eq!(crc16(a, b"56789"), crc16(0xFFFF, b"123456789"));
    }
}
