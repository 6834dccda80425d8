//! The jbd2 journal on disk (big-endian): the journal superblock, and the
//! log blocks recovery walks — block headers, descriptor tags, commit and
//! revoke blocks — with their checksums (v1 crc32_be transaction sums, v2/v3
//! crc32c block checksums).
//!
//! Pure functions of byte slices: nothing here reads the device, and no
//! input makes them panic (fields past the end of a slice read as zero, tag
//! walks are bounded by the block size).

use super::checksum::crc32c_raw;

pub const JBD2_MAGIC: u32 = 0xC03B_3998;
pub const BLOCKTYPE_DESCRIPTOR: u32 = 1;
pub const BLOCKTYPE_COMMIT: u32 = 2;
pub const BLOCKTYPE_SB_V1: u32 = 3;
pub const BLOCKTYPE_SB_V2: u32 = 4;
pub const BLOCKTYPE_REVOKE: u32 = 5;

/// Size of the common block header (magic, type, sequence).
pub const HEADER_SIZE: usize = 12;
/// Size of a revoke block's header (block header plus r_count).
pub const REVOKE_HEADER_SIZE: usize = 16;
/// Size of the v2/v3 checksum tail of descriptor and revoke blocks.
pub const TAIL_SIZE: usize = 4;
/// A tag without SAME_UUID is followed by the 16-byte journal UUID.
pub const TAG_UUID_SIZE: usize = 16;
/// Fast-commit area size when the superblock leaves s_num_fc_blks at 0.
pub const DEFAULT_FC_BLOCKS: u32 = 256;

pub mod compat {
    /// v1 transaction checksums (crc32_be over descriptor and data blocks,
    /// stored in the commit block).
    pub const CHECKSUM: u32 = 0x1;
}

pub mod incompat {
    pub const REVOKE: u32 = 0x1;
    pub const BIT64: u32 = 0x2;
    pub const ASYNC_COMMIT: u32 = 0x4;
    pub const CSUM_V2: u32 = 0x8;
    pub const CSUM_V3: u32 = 0x10;
    pub const FAST_COMMIT: u32 = 0x20;
    pub const KNOWN: u32 = REVOKE | BIT64 | ASYNC_COMMIT | CSUM_V2 | CSUM_V3 | FAST_COMMIT;
}

pub mod tag_flags {
    /// The block's first four bytes were the jbd2 magic and were zeroed in
    /// the log so it would not be taken for a log block; replay restores them.
    pub const ESCAPE: u32 = 0x1;
    /// The tag is not followed by a UUID.
    pub const SAME_UUID: u32 = 0x2;
    pub const DELETED: u32 = 0x4;
    pub const LAST_TAG: u32 = 0x8;
}

/// Commit block checksum types (h_chksum_type).
pub mod chksum_type {
    pub const CRC32: u8 = 1;
    pub const MD5: u8 = 2;
    pub const SHA1: u8 = 3;
    pub const CRC32C: u8 = 4;
}
/// h_chksum_size that goes with a v1 CRC32 commit checksum.
pub const CRC32_CHKSUM_SIZE: u8 = 4;

pub fn be16(b: &[u8], off: usize) -> u16 {
    match b.get(off..off.wrapping_add(2)) {
        Some(s) => u16::from_be_bytes([s[0], s[1]]),
        None => 0,
    }
}

pub fn be32(b: &[u8], off: usize) -> u32 {
    match b.get(off..off.wrapping_add(4)) {
        Some(s) => u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

pub fn be64(b: &[u8], off: usize) -> u64 {
    (u64::from(be32(b, off)) << 32) | u64::from(be32(b, off.wrapping_add(4)))
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
    pub uuid: [u8; 16],
    pub nr_users: u32,
    pub checksum_type: u8,
    pub num_fc_blocks: u32,
    pub checksum: u32,
}

/// Bytes of the version 1 superblock layout: header, block size, length,
/// first block, sequence, start and errno.
pub const SUPERBLOCK_V1_LEN: usize = 0x24;

/// Zeroes what follows the version 1 layout of a journal superblock.
pub fn clear_v2_fields(jsb: &mut [u8]) {
    if let Some(rest) = jsb.get_mut(SUPERBLOCK_V1_LEN..) {
        rest.fill(0);
    }
}

pub fn parse_superblock(b: &[u8]) -> JournalSuperblock {
    let mut uuid = [0u8; 16];
    if let Some(s) = b.get(0x30..0x40) {
        uuid.copy_from_slice(s);
    }
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
        uuid,
        nr_users: be32(b, 0x40),
        checksum_type: b.get(0x50).copied().unwrap_or(0),
        num_fc_blocks: be32(b, 0x54),
        checksum: be32(b, 0xFC),
    }
}

impl JournalSuperblock {
    /// Feature flags exist only in v2 superblocks; a v1 journal has none
    /// whatever the bytes say.
    fn incompat(&self) -> u32 {
        if self.blocktype == BLOCKTYPE_SB_V2 {
            self.feature_incompat
        } else {
            0
        }
    }
    pub fn has_incompat(&self, f: u32) -> bool {
        self.incompat() & f != 0
    }
    pub fn has_v1_checksum(&self) -> bool {
        self.blocktype == BLOCKTYPE_SB_V2 && self.feature_compat & compat::CHECKSUM != 0
    }
    pub fn has_csum_v2v3(&self) -> bool {
        self.has_incompat(incompat::CSUM_V2 | incompat::CSUM_V3)
    }
    pub fn csum_v3(&self) -> bool {
        self.has_incompat(incompat::CSUM_V3)
    }
    pub fn is_64bit(&self) -> bool {
        self.has_incompat(incompat::BIT64)
    }
    pub fn async_commit(&self) -> bool {
        self.has_incompat(incompat::ASYNC_COMMIT)
    }
    pub fn fast_commit(&self) -> bool {
        self.has_incompat(incompat::FAST_COMMIT)
    }

    /// Blocks reserved for fast commits at the end of the journal.
    pub fn fc_blocks(&self) -> u32 {
        match (self.fast_commit(), self.num_fc_blocks) {
            (false, _) => 0,
            (true, 0) => DEFAULT_FC_BLOCKS,
            (true, n) => n,
        }
    }

    /// Bytes per descriptor tag. v3 has its own 16-byte layout; otherwise
    /// the classic tag loses its high block word without 64bit and gains a
    /// 16-bit checksum with v2.
    pub fn tag_bytes(&self) -> usize {
        if self.csum_v3() {
            return 16;
        }
        let mut sz = 12;
        if self.has_incompat(incompat::CSUM_V2) {
            sz += 2;
        }
        if !self.is_64bit() {
            sz -= 4;
        }
        sz
    }

    /// Bytes at the end of descriptor and revoke blocks holding a checksum.
    pub fn tail_size(&self) -> usize {
        if self.has_csum_v2v3() { TAIL_SIZE } else { 0 }
    }

    /// Seed of the v2/v3 block checksums: crc32c of the journal UUID.
    pub fn csum_seed(&self) -> u32 {
        crc32c_raw(!0, &self.uuid)
    }
}

/// Checksum of the journal superblock (v2/v3): crc32c over its first 1024
/// bytes with the checksum field zeroed.
fn put_be32(b: &mut [u8], off: usize, v: u32) {
    if let Some(s) = b.get_mut(off..off + 4) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

/// A new, empty v2 journal superblock of `block_size` bytes (as mke2fs
/// and e2fsck write one): `maxlen` blocks, the log starting at block 1
/// with sequence 1 and nothing in it, one user (`uuid`, the file
/// system's).
pub fn new_superblock(block_size: u32, maxlen: u32, uuid: &[u8; 16]) -> Vec<u8> {
    let mut b = vec![0u8; block_size as usize];
    put_be32(&mut b, 0x0, JBD2_MAGIC);
    put_be32(&mut b, 0x4, BLOCKTYPE_SB_V2);
    put_be32(&mut b, 0xC, block_size);
    put_be32(&mut b, 0x10, maxlen);
    put_be32(&mut b, 0x14, 1);
    put_be32(&mut b, 0x18, 1);
    put_be32(&mut b, 0x40, 1);
    if let Some(u) = b.get_mut(0x30..0x40) {
        u.copy_from_slice(uuid);
    }
    b
}

/// A journal superblock reset after replay: the next transaction is
/// `sequence`, the log empty (s_start 0), the checksum redone where the
/// journal has one.
pub fn reset_superblock(b: &mut [u8], sequence: u32) {
    put_be32(b, 0x18, sequence);
    put_be32(b, 0x1C, 0);
    redo_sb_checksum(b);
}

/// Stores `errno` as the journal superblock's error number (the kernel
/// records why it aborted the journal there; e2fsck clears it once it has
/// turned it into the file system's error state), checksum redone where
/// the journal has one.
pub fn set_errno(b: &mut [u8], errno: i32) {
    put_be32(b, 0x20, errno as u32);
    redo_sb_checksum(b);
}

fn redo_sb_checksum(b: &mut [u8]) {
    let j = parse_superblock(b);
    if j.blocktype == BLOCKTYPE_SB_V2 && j.has_csum_v2v3() && b.len() >= SUPERBLOCK_LEN {
        let c = compute_sb_checksum(b);
        put_be32(b, 0xFC, c);
    }
}

/// Bytes of a journal superblock (the rest of its block is unused).
pub const SUPERBLOCK_LEN: usize = 1024;

pub fn compute_sb_checksum(b: &[u8]) -> u32 {
    let mut d = b.get(..1024).unwrap_or(b).to_vec();
    if let Some(s) = d.get_mut(0xFC..0x100) {
        s.fill(0);
    }
    crc32c_raw(!0, &d)
}

/// The header every log block starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub magic: u32,
    pub blocktype: u32,
    pub sequence: u32,
}

pub fn parse_header(b: &[u8]) -> Header {
    Header {
        magic: be32(b, 0),
        blocktype: be32(b, 4),
        sequence: be32(b, 8),
    }
}

/// One descriptor tag: where a log block goes home, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    pub blocknr: u64,
    pub flags: u32,
    /// crc32c of (sequence, block) — all 32 bits with v3, the low 16 with v2.
    pub checksum: u32,
}

impl Tag {
    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }
}

/// The tags of a descriptor block, in log order. The walk stops at
/// LAST_TAG or when the next tag would run into the checksum tail, as the
/// kernel's does, so it visits at most block_size / tag_bytes tags.
pub fn parse_tags(j: &JournalSuperblock, block: &[u8]) -> Vec<Tag> {
    let tag_bytes = j.tag_bytes();
    let limit = block.len().saturating_sub(j.tail_size());
    let mut out = Vec::new();
    let mut off = HEADER_SIZE;
    while off.checked_add(tag_bytes).is_some_and(|end| end <= limit) {
        // Both layouts keep the known flags in the 16 bits at offset 6 (v3
        // stores a 32-bit big-endian word at 4).
        let (flags, checksum) = if j.csum_v3() {
            (be32(block, off + 4), be32(block, off + 12))
        } else {
            (
                u32::from(be16(block, off + 6)),
                u32::from(be16(block, off + 4)),
            )
        };
        let mut blocknr = u64::from(be32(block, off));
        if j.is_64bit() {
            blocknr |= u64::from(be32(block, off + 8)) << 32;
        }
        let tag = Tag {
            blocknr,
            flags,
            checksum,
        };
        out.push(tag);
        off += tag_bytes;
        if !tag.has(tag_flags::SAME_UUID) {
            off = off.saturating_add(TAG_UUID_SIZE);
        }
        if tag.has(tag_flags::LAST_TAG) {
            break;
        }
    }
    out
}

/// crc32c over the whole block with the four bytes at `off` taken as zero.
fn crc32c_zeroed(seed: u32, block: &[u8], off: usize) -> u32 {
    let Some(end) = off.checked_add(4).filter(|&e| e <= block.len()) else {
        return crc32c_raw(seed, block);
    };
    let c = crc32c_raw(seed, &block[..off]);
    let c = crc32c_raw(c, &[0u8; 4]);
    crc32c_raw(c, &block[end..])
}

/// Does the v2/v3 tail checksum of a descriptor or revoke block match?
/// Always true without v2/v3.
pub fn tail_checksum_ok(j: &JournalSuperblock, block: &[u8]) -> bool {
    if !j.has_csum_v2v3() {
        return true;
    }
    let Some(off) = block.len().checked_sub(TAIL_SIZE) else {
        return false;
    };
    crc32c_zeroed(j.csum_seed(), block, off) == be32(block, off)
}

/// Does a journalled copy match its tag's checksum (v2: low 16 bits)?
/// Always true without v2/v3.
pub fn data_checksum_ok(j: &JournalSuperblock, tag: &Tag, sequence: u32, block: &[u8]) -> bool {
    if !j.has_csum_v2v3() {
        return true;
    }
    let c = crc32c_raw(j.csum_seed(), &sequence.to_be_bytes());
    let c = crc32c_raw(c, block);
    if j.csum_v3() {
        c == tag.checksum
    } else {
        c & 0xFFFF == tag.checksum
    }
}

/// Offset of h_chksum[0] in a commit block.
const COMMIT_CHKSUM_OFF: usize = 16;

/// A commit block's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    pub chksum_type: u8,
    pub chksum_size: u8,
    /// `h_chksum[0]`: the v1 crc32_be sum, or the v2/v3 block checksum.
    pub chksum: u32,
    pub commit_sec: u64,
    pub commit_nsec: u32,
}

pub fn parse_commit(b: &[u8]) -> Commit {
    Commit {
        chksum_type: b.get(12).copied().unwrap_or(0),
        chksum_size: b.get(13).copied().unwrap_or(0),
        chksum: be32(b, COMMIT_CHKSUM_OFF),
        commit_sec: be64(b, 0x30),
        commit_nsec: be32(b, 0x38),
    }
}

/// Does the v2/v3 commit block checksum (over the block with `h_chksum[0]`
/// zeroed) match? Always true without v2/v3.
pub fn commit_checksum_ok(j: &JournalSuperblock, block: &[u8]) -> bool {
    if !j.has_csum_v2v3() {
        return true;
    }
    crc32c_zeroed(j.csum_seed(), block, COMMIT_CHKSUM_OFF) == be32(block, COMMIT_CHKSUM_OFF)
}

/// Does a commit block agree with the v1 transaction sum? A commit that
/// carries no checksum at all (type, size and value zero) is accepted, as
/// older kernels wrote such commits with the feature on.
pub fn commit_v1_ok(c: &Commit, running_sum: u32) -> bool {
    let matches = c.chksum_type == chksum_type::CRC32
        && c.chksum_size == CRC32_CHKSUM_SIZE
        && c.chksum == running_sum;
    let absent = c.chksum_type == 0 && c.chksum_size == 0 && c.chksum == 0;
    matches || absent
}

/// Why a revoke block cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevokeError {
    /// r_count runs into the checksum tail or past the block.
    CountTooLarge(u32),
}

/// The block numbers a revoke block lists. r_count is the number of bytes
/// used, header included; records are 8 bytes with 64bit, else 4.
pub fn parse_revoke(j: &JournalSuperblock, block: &[u8]) -> Result<Vec<u64>, RevokeError> {
    let rcount = be32(block, HEADER_SIZE);
    let room = block.len().saturating_sub(j.tail_size());
    if rcount as usize > room {
        return Err(RevokeError::CountTooLarge(rcount));
    }
    let rec = if j.is_64bit() { 8 } else { 4 };
    let max = rcount as usize;
    let mut out = Vec::new();
    let mut off = REVOKE_HEADER_SIZE;
    while off + rec <= max {
        out.push(if rec == 8 {
            be64(block, off)
        } else {
            u64::from(be32(block, off))
        });
        off += rec;
    }
    Ok(out)
}

/// Table for crc32_be: polynomial 0x04C11DB7, most significant bit first.
const CRC32_BE_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        #[allow(clippy::cast_possible_truncation)] // i < 256
        let mut c = (i as u32) << 24;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04C1_1DB7
            } else {
                c << 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// crc32_be continued from `seed`, no inversion: the v1 transaction sum
/// chains it over the descriptor and data blocks starting from !0.
pub fn crc32_be(seed: u32, data: &[u8]) -> u32 {
    data.iter().fold(seed, |c, &b| {
        (c << 8) ^ CRC32_BE_TABLE[((c >> 24) as u8 ^ b) as usize]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sb(incompat: u32) -> JournalSuperblock {
        let mut b = vec![0u8; 1024];
        b[0..4].copy_from_slice(&JBD2_MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&BLOCKTYPE_SB_V2.to_be_bytes());
        b[0xC..0x10].copy_from_slice(&1024u32.to_be_bytes());
        b[0x28..0x2C].copy_from_slice(&incompat.to_be_bytes());
        b[0x30..0x40].copy_from_slice(&[7u8; 16]);
        parse_superblock(&b)
    }

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

    #[test]
    fn tag_sizes() {
        assert_eq!(sb(0).tag_bytes(), 8);
        assert_eq!(sb(incompat::BIT64).tag_bytes(), 12);
        assert_eq!(sb(incompat::CSUM_V2).tag_bytes(), 10);
        assert_eq!(sb(incompat::CSUM_V2 | incompat::BIT64).tag_bytes(), 14);
        assert_eq!(sb(incompat::CSUM_V3).tag_bytes(), 16);
        assert_eq!(sb(incompat::CSUM_V3 | incompat::BIT64).tag_bytes(), 16);
    }

    #[test]
    fn tags_uuid_and_last() {
        let j = sb(incompat::CSUM_V3 | incompat::BIT64);
        let mut b = vec![0u8; 1024];
        // First tag carries a UUID, second shares it and is the last.
        b[12..16].copy_from_slice(&100u32.to_be_bytes());
        b[16..20].copy_from_slice(&tag_flags::ESCAPE.to_be_bytes());
        b[20..24].copy_from_slice(&1u32.to_be_bytes());
        let t2 = 12 + 16 + 16;
        b[t2..t2 + 4].copy_from_slice(&200u32.to_be_bytes());
        b[t2 + 4..t2 + 8]
            .copy_from_slice(&(tag_flags::SAME_UUID | tag_flags::LAST_TAG).to_be_bytes());
        b[t2 + 8..t2 + 12].copy_from_slice(&1u32.to_be_bytes());
        let tags = parse_tags(&j, &b);
        assert_eq!(tags.len(), 2);
        assert_eq!(tags[0].blocknr, 100 | (1 << 32));
        assert!(tags[0].has(tag_flags::ESCAPE));
        assert_eq!(tags[1].blocknr, 200 | (1 << 32));
    }

    #[test]
    fn tags_bounded_by_tail() {
        let j = sb(incompat::CSUM_V3);
        let mut b = vec![0u8; 1024];
        for off in (12..1024).step_by(16) {
            if let Some(s) = b.get_mut(off + 4..off + 8) {
                s.copy_from_slice(&tag_flags::SAME_UUID.to_be_bytes());
            }
        }
        // (1024 - 4 - 12) / 16 tags fit before the tail.
        assert_eq!(parse_tags(&j, &b).len(), 63);
        assert!(parse_tags(&j, &[]).is_empty());
        assert!(parse_tags(&j, &b[..20]).is_empty());
    }

    #[test]
    fn tail_and_commit_checksums_roundtrip() {
        let j = sb(incompat::CSUM_V3);
        let mut b = vec![0xAB; 1024];
        let c = crc32c_zeroed(j.csum_seed(), &b, 1020);
        b[1020..].copy_from_slice(&c.to_be_bytes());
        assert!(tail_checksum_ok(&j, &b));
        b[100] ^= 1;
        assert!(!tail_checksum_ok(&j, &b));
        let c = crc32c_zeroed(j.csum_seed(), &b, 16);
        b[16..20].copy_from_slice(&c.to_be_bytes());
        assert!(commit_checksum_ok(&j, &b));
        assert!(!tail_checksum_ok(&j, &[1, 2]));
    }

    #[test]
    fn revoke_records() {
        let j = sb(incompat::BIT64 | incompat::CSUM_V3);
        let mut b = vec![0u8; 1024];
        b[12..16].copy_from_slice(&32u32.to_be_bytes());
        b[16..24].copy_from_slice(&5u64.to_be_bytes());
        b[24..32].copy_from_slice(&(1u64 << 40).to_be_bytes());
        assert_eq!(parse_revoke(&j, &b), Ok(vec![5, 1 << 40]));
        b[12..16].copy_from_slice(&1021u32.to_be_bytes());
        assert_eq!(parse_revoke(&j, &b), Err(RevokeError::CountTooLarge(1021)));
        b[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse_revoke(&j, &b).is_err());
    }

    #[test]
    fn crc32_be_known_value() {
        // CRC-32/MPEG-2 of "123456789" is 0x0376E6E7 (init !0, no xorout).
        assert_eq!(crc32_be(!0, b"123456789"), 0x0376_E6E7);
    }
}
