//! The two checksums ext4 uses: crc32c (metadata_csum) and crc16 (gdt_csum).
//!
//! ext4 chains crc32c "raw": no inversion on entry or exit, the seed being the
//! previous value. The `crc32c` crate inverts on both sides, so we undo that.

/// crc32c continued from `seed` without the usual pre/post inversion.
#[inline]
pub fn crc32c_raw(seed: u32, data: &[u8]) -> u32 {
    !crc32c::crc32c_append(!seed, data)
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
    fn crc16_known_value() {
        assert_eq!(crc16(0, b"123456789"), 0xBB3D);
        let a = crc16(0xFFFF, b"1234");
        assert_eq!(crc16(a, b"56789"), crc16(0xFFFF, b"123456789"));
    }
}
