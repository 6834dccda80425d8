//! The multiple-mount protection block (incompat `mmp`): a node using the
//! file system keeps rewriting its sequence number; a checker marks it as
//! being checked. Little-endian, in the block `s_mmp_block` names.

use super::bytes::{le16, le32, le64, put_le16, put_le32};
use super::checksum::crc32c_raw;

pub const MMP_MAGIC: u32 = 0x004D_4D50;
/// Nobody uses the file system (unmounted cleanly, or a checker is done).
pub const SEQ_CLEAN: u32 = 0xFF4D_4D50;
/// A checker (e2fsck, or pfsck repairing) holds the file system.
pub const SEQ_FSCK: u32 = 0xE24D_4D50;
/// The largest sequence number a mounting node writes.
pub const SEQ_MAX: u32 = 0xE24D_4D4F;
/// Where the checksum lies: the rest of the block is unused.
const CHECKSUM_OFFSET: usize = 0x3FC;
const NODENAME: std::ops::Range<usize> = 0x10..0x50;
const BDEVNAME: std::ops::Range<usize> = 0x50..0x70;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mmp {
    pub magic: u32,
    pub seq: u32,
    pub time: u64,
    pub nodename: String,
    pub bdevname: String,
    pub check_interval: u16,
    pub checksum: u32,
}

fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

pub fn parse(b: &[u8]) -> Mmp {
    Mmp {
        magic: le32(b, 0),
        seq: le32(b, 4),
        time: le64(b, 8),
        nodename: b.get(NODENAME).map(text).unwrap_or_default(),
        bdevname: b.get(BDEVNAME).map(text).unwrap_or_default(),
        check_interval: le16(b, 0x70),
        checksum: le32(b, CHECKSUM_OFFSET),
    }
}

/// The metadata_csum checksum of an MMP block (`seed`: the file system's
/// checksum seed).
pub fn compute_checksum(seed: u32, b: &[u8]) -> u32 {
    crc32c_raw(seed, &b[..CHECKSUM_OFFSET.min(b.len())])
}

/// Writes the fields a checker sets: sequence, time, node and device
/// names, and the check interval; the checksum when `seed` is given.
/// The block keeps its length; everything else is zeroed.
pub fn write(b: &mut [u8], m: &Mmp, seed: Option<u32>) {
    b.fill(0);
    if b.len() < CHECKSUM_OFFSET + 4 {
        return;
    }
    put_le32(b, 0, m.magic);
    put_le32(b, 4, m.seq);
    b[8..16].copy_from_slice(&m.time.to_le_bytes());
    for (range, s) in [(NODENAME, &m.nodename), (BDEVNAME, &m.bdevname)] {
        let n = s.len().min(range.len() - 1);
        b[range.start..range.start + n].copy_from_slice(&s.as_bytes()[..n]);
    }
    put_le16(b, 0x70, m.check_interval);
    if let Some(seed) = seed {
        let c = compute_checksum(seed, b);
        put_le32(b, CHECKSUM_OFFSET, c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let m = Mmp {
            magic: MMP_MAGIC,
            seq: SEQ_FSCK,
            time: 1_795_751_305,
            nodename: "node".into(),
            bdevname: "disk.img".into(),
            check_interval: 5,
            checksum: 0,
        };
        let mut b = vec![0u8; 1024];
        write(&mut b, &m, Some(7));
        let back = parse(&b);
        assert_eq!(back.checksum, compute_checksum(7, &b));
        assert_eq!(
            Mmp {
                checksum: 0,
                ..back
            },
            m
        );
    }
}
