//! The jbd2 journal superblock (big-endian, in the journal's first block).

use super::checksum::crc32c_raw;

pub const JBD2_MAGIC: u32 = 0xC03B_3998;
pub const BLOCKTYPE_SB_V1: u32 = 3;
pub const BLOCKTYPE_SB_V2: u32 = 4;

pub mod incompat {
    pub const REVOKE: u32 = 0x1;
    pub const BIT64: u32 = 0x2;
    pub const ASYNC_COMMIT: u32 = 0x4;
    pub const CSUM_V2: u32 = 0x8;
    pub const CSUM_V3: u32 = 0x10;
    pub const FAST_COMMIT: u32 = 0x20;
    pub const KNOWN: u32 = REVOKE | BIT64 | ASYNC_COMMIT | CSUM_V2 | CSUM_V3 | FAST_COMMIT;
}

fn be32(b: &[u8], off: usize) -> u32 {
    match b.get(off..off + 4) {
        Some(s) => u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalSuperblock {
    pub magic: u32,
    pub blocktype: u32,
    pub blocksize: u32,
    pub maxlen: u32,
    pub first: u32,
    pub sequence: u32,
    pub start: u32,
    pub errno: i32,
    pub feature_compat: u32,
    pub feature_incompat: u32,
    pub feature_ro_compat: u32,
    pub nr_users: u32,
    pub checksum_type: u8,
    pub num_fc_blocks: u32,
    pub checksum: u32,
}

pub fn parse_superblock(b: &[u8]) -> JournalSuperblock {
    JournalSuperblock {
        magic: be32(b, 0),
        blocktype: be32(b, 4),
        blocksize: be32(b, 0xC),
        maxlen: be32(b, 0x10),
        first: be32(b, 0x14),
        sequence: be32(b, 0x18),
        start: be32(b, 0x1C),
        errno: be32(b, 0x20) as i32,
        feature_compat: be32(b, 0x24),
        feature_incompat: be32(b, 0x28),
        feature_ro_compat: be32(b, 0x2C),
        nr_users: be32(b, 0x40),
        checksum_type: b.get(0x50).copied().unwrap_or(0),
        num_fc_blocks: be32(b, 0x54),
        checksum: be32(b, 0xFC),
    }
}

impl JournalSuperblock {
    pub fn has_csum_v2v3(&self) -> bool {
        self.feature_incompat & (incompat::CSUM_V2 | incompat::CSUM_V3) != 0
    }
}

/// Checksum of the journal superblock (v2/v3): crc32c over its first 1024
/// bytes with the checksum field zeroed.
pub fn compute_sb_checksum(b: &[u8]) -> u32 {
    let mut d = b.get(..1024).unwrap_or(b).to_vec();
    if let Some(s) = d.get_mut(0xFC..0x100) {
        s.fill(0);
    }
    crc32c_raw(!0, &d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_big_endian() {
        let mut b = vec![0u8; 1024];
        b[0..4].copy_from_slice(&JBD2_MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&BLOCKTYPE_SB_V2.to_be_bytes());
        b[0xC..0x10].copy_from_slice(&4096u32.to_be_bytes());
        let j = parse_superblock(&b);
        assert_eq!(j.magic, JBD2_MAGIC);
        assert_eq!(j.blocksize, 4096);
        let _ = compute_sb_checksum(&b[..10]);
    }
}
