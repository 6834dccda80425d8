//! Linear directory entries and the metadata_csum tail of a directory block.

use super::bytes::{le16, le32, put_le16, put_le32, u8_at};
use super::checksum::crc32c_raw;
use super::num::Ino;

/// Entry header: inode(4) rec_len(2) name_len(1) file_type(1).
pub const HEADER_LEN: usize = 8;
pub const TAIL_LEN: usize = 12;
pub const TAIL_FT: u8 = 0xDE;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry<'a> {
    pub offset: usize,
    pub inode: u32,
    pub rec_len: usize,
    pub name_len: usize,
    pub file_type: u8,
    pub name: &'a [u8],
}

/// rec_len as stored, decoded for blocks of 64 KiB (where 0 and 65535 both
/// mean "the whole block").
pub fn decode_rec_len(raw: u16, block_size: usize) -> usize {
    if block_size < 65536 {
        raw as usize
    } else if raw == 65535 || raw == 0 {
        block_size
    } else {
        (raw as usize & 65532) | ((raw as usize & 3) << 16)
    }
}

/// rec_len as stored for a record of `len` bytes: the inverse of
/// `decode_rec_len` (64 KiB blocks keep bits 16-17 in the low two bits,
/// and a whole-block record is 65535).
// Below 64 KiB blocks a record's length fits in 16 bits; at 64 KiB the
// bits above 15 are folded into the low two, which a record never uses.
#[allow(clippy::cast_possible_truncation)]
pub fn encode_rec_len(len: usize, block_size: usize) -> u16 {
    if block_size < 65536 {
        len as u16
    } else if len == block_size {
        65535
    } else {
        ((len & 65532) | ((len >> 16) & 3)) as u16
    }
}

/// Minimal record length holding a name of `name_len` bytes.
pub fn rec_len_for(name_len: usize) -> usize {
    (HEADER_LEN + name_len + 3) & !3
}

/// Why an entry could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryError {
    /// rec_len smaller than the header, not a multiple of 4, or past the end.
    BadRecLen,
    /// name_len does not fit in rec_len.
    NameTooLong,
}

/// Reads the entry at `off` in `b` (the directory block, or the part that
/// holds entries). `filetype`: whether the name_len high byte is a file type.
pub fn read_entry(b: &[u8], off: usize, filetype: bool) -> Result<DirEntry<'_>, EntryError> {
    if off + HEADER_LEN > b.len() {
        return Err(EntryError::BadRecLen);
    }
    let inode = le32(b, off);
    let rec_len = decode_rec_len(le16(b, off + 4), b.len());
    let (name_len, file_type) = if filetype {
        (usize::from(u8_at(b, off + 6)), u8_at(b, off + 7))
    } else {
        (usize::from(le16(b, off + 6)), 0)
    };
    if rec_len < HEADER_LEN || !rec_len.is_multiple_of(4) || off + rec_len > b.len() {
        return Err(EntryError::BadRecLen);
    }
    if HEADER_LEN + name_len > rec_len {
        return Err(EntryError::NameTooLong);
    }
    Ok(DirEntry {
        offset: off,
        inode,
        rec_len,
        name_len,
        file_type,
        name: &b[off + HEADER_LEN..off + HEADER_LEN + name_len],
    })
}

/// Is there a well-formed checksum tail at the end of `b`?
pub fn has_tail(b: &[u8]) -> bool {
    if b.len() < TAIL_LEN {
        return false;
    }
    let t = b.len() - TAIL_LEN;
    le32(b, t) == 0
        && usize::from(le16(b, t + 4)) == TAIL_LEN
        && u8_at(b, t + 6) == 0
        && u8_at(b, t + 7) == TAIL_FT
}

pub fn stored_tail_checksum(b: &[u8]) -> u32 {
    le32(b, b.len().saturating_sub(4))
}

/// The checksum a directory block's tail should hold.
pub fn compute_tail_checksum(inode_seed: u32, b: &[u8]) -> u32 {
    crc32c_raw(inode_seed, &b[..b.len().saturating_sub(TAIL_LEN)])
}

/// Whether the record at `off` names exactly `name` (one name length
/// byte, as with the filetype feature).
pub fn name_is(b: &[u8], off: usize, name: &[u8]) -> bool {
    name_len_at(b, off) == name.len()
        && b.get(off + HEADER_LEN..off + HEADER_LEN + name.len()) == Some(name)
}

/// Where an inline directory's entries start in i_block: after the
/// parent's inode number.
pub const INLINE_ENTRIES_OFFSET: usize = 4;

/// An inline directory's parent: the first 4 bytes of i_block (its
/// entries follow).
/// Where an inline directory's entries start in i_block (after the parent).
pub const INLINE_ENTRIES_AT: usize = 4;

pub fn inline_parent(i_block: &[u8]) -> u32 {
    le32(i_block, 0)
}

pub fn set_inline_parent(i_block: &mut [u8], ino: Ino) {
    put_le32(i_block, 0, ino.0);
}

/// The rec_len of the record at `off` as stored (not decoded).
pub fn stored_rec_len(b: &[u8], off: usize) -> u16 {
    le16(b, off.wrapping_add(4))
}

/// Stores `v` as the rec_len of the record at `off`, as it is (not
/// encoded).
pub fn set_stored_rec_len(b: &mut [u8], off: usize, v: u16) {
    put_le16(b, off.wrapping_add(4), v);
}

/// The hash stored after the name of the record at `off` (casefolded and
/// encrypted names), for a name of `name_len` bytes.
pub fn hash_after_name(b: &[u8], off: usize, name_len: usize) -> u32 {
    le32(b, off + rec_len_for(name_len))
}

/// The inode number of the record at `off`.
pub fn inode_at(b: &[u8], off: usize) -> Ino {
    Ino(le32(b, off))
}

/// Sets the inode number of the record at `off` (`Ino::NONE`: unused).
pub fn set_inode_at(b: &mut [u8], off: usize, ino: Ino) {
    put_le32(b, off, ino.0);
}

/// The rec_len of the record at `off`, decoded for a block of `bs` bytes.
pub fn rec_len_at(b: &[u8], off: usize, bs: usize) -> usize {
    decode_rec_len(le16(b, off.wrapping_add(4)), bs)
}

/// Stores `len` as the rec_len of the record at `off`, encoded for a
/// block of `bs` bytes.
pub fn set_rec_len_at(b: &mut [u8], off: usize, len: usize, bs: usize) {
    put_le16(b, off.wrapping_add(4), encode_rec_len(len, bs));
}

/// The name length of the record at `off` with the filetype feature (one
/// byte). Like `fs::bytes`, past the end reads 0 and writes are dropped.
pub fn name_len_at(b: &[u8], off: usize) -> usize {
    usize::from(u8_at(b, off.wrapping_add(6)))
}

/// The name length of the record at `off` without the filetype feature
/// (both bytes).
pub fn name_len16_at(b: &[u8], off: usize) -> usize {
    usize::from(le16(b, off.wrapping_add(6)))
}

pub fn set_name_len_at(b: &mut [u8], off: usize, len: u8) {
    if let Some(x) = b.get_mut(off.wrapping_add(6)) {
        *x = len;
    }
}

/// The file type byte of the record at `off` (filetype feature).
pub fn file_type_at(b: &[u8], off: usize) -> u8 {
    u8_at(b, off.wrapping_add(7))
}

pub fn set_file_type_at(b: &mut [u8], off: usize, ft: u8) {
    if let Some(x) = b.get_mut(off.wrapping_add(7)) {
        *x = ft;
    }
}

/// Stores the rec_len of the record at `off` in `b` (a block, or its part
/// before a checksum tail), encoded for a block of `b.len()` bytes.
pub fn put_rec_len(b: &mut [u8], off: usize, len: usize) {
    put_le16(b, off + 4, encode_rec_len(len, b.len()));
}

/// Writes a record at `off`: inode, rec_len (encoded for `block_size`),
/// name and, with the filetype feature (`file_type` Some), the type byte;
/// without it the name length takes both bytes.
pub fn put_entry(
    b: &mut [u8],
    block_size: usize,
    off: usize,
    ino: u32,
    rec_len: usize,
    name: &[u8],
    file_type: Option<u8>,
) {
    put_le32(b, off, ino);
    put_le16(b, off + 4, encode_rec_len(rec_len, block_size));
    put_name(b, off, name, file_type);
}

/// Writes the name (and its length, and the type with filetype) of the
/// record at `off`, leaving its inode and rec_len as they are.
// A name is at most 255 bytes (EXT4_NAME_LEN): its length fits a u8.
#[allow(clippy::cast_possible_truncation)]
pub fn put_name(b: &mut [u8], off: usize, name: &[u8], file_type: Option<u8>) {
    match file_type {
        Some(ft) => {
            if let Some(h) = b.get_mut(off + 6..off + 8) {
                h.copy_from_slice(&[name.len() as u8, ft]);
            }
        }
        None => put_le16(b, off + 6, name.len() as u16),
    }
    if let Some(n) = b.get_mut(off + HEADER_LEN..off + HEADER_LEN + name.len()) {
        n.copy_from_slice(name);
    }
}

/// Writes the fields of a checksum tail (not the checksum) at the end of
/// `b`.
pub fn put_tail_header(b: &mut [u8]) {
    let Some(t) = b.len().checked_sub(TAIL_LEN) else {
        return;
    };
    put_le32(b, t, 0);
    #[allow(clippy::cast_possible_truncation)] // TAIL_LEN is 12
    put_le16(b, t + 4, TAIL_LEN as u16);
    b[t + 6] = 0;
    b[t + 7] = TAIL_FT;
}

/// Stores the checksum of directory block `b` in its tail.
pub fn set_tail_checksum(inode_seed: u32, b: &mut [u8]) {
    let c = compute_tail_checksum(inode_seed, b);
    let n = b.len();
    put_le32(b, n.saturating_sub(4), c);
}

/// Adds entry `name` → `ino` (type `ft`) in the first record of `b` with
/// room for it after its own name; false when there is none.
pub fn insert_entry(b: &mut [u8], ino: Ino, name: &[u8], ft: u8, filetype: bool) -> bool {
    let need = rec_len_for(name.len());
    let mut off = 0;
    while off + HEADER_LEN <= b.len() {
        let rec = rec_len_at(b, off, b.len());
        if rec < HEADER_LEN || !rec.is_multiple_of(4) || off + rec > b.len() {
            // A broken block is pass 2's to report; nothing is added to it.
            return false;
        }
        let used = inode_at(b, off);
        let name_len = if filetype {
            name_len_at(b, off)
        } else {
            name_len16_at(b, off)
        };
        // An empty record (inode 0) is reused whole, except the first of
        // the block, which is kept as it is so '.' is never overwritten.
        let (at, len) = if used == Ino::NONE && off != 0 {
            (off, rec)
        } else {
            let mine = rec_len_for(name_len);
            (off + mine, rec.saturating_sub(mine))
        };
        if len >= need {
            if at != off {
                // Split: the existing entry keeps just what its name needs.
                put_rec_len(b, off, at - off);
                put_rec_len(b, at, len);
            }
            set_inode_at(b, at, ino);
            put_name(b, at, name, filetype.then_some(ft));
            // Bytes after the name are zeroed so no old name shows through.
            b[at + HEADER_LEN + name.len()..at + len].fill(0);
            return true;
        }
        off += rec;
    }
    false
}

/// A directory block of `bs` bytes with one empty record over it all,
/// or, with a checksum seed (metadata_csum), over all but the tail.
pub fn empty_block(bs: usize, seed: Option<u32>) -> Vec<u8> {
    let mut b = vec![0u8; bs];
    let end = if seed.is_some() { bs - TAIL_LEN } else { bs };
    put_le16(&mut b, 4, encode_rec_len(end, bs));
    seal_new(&mut b, seed);
    b
}

/// The first block of a new directory `ino`: '.' and '..' (naming
/// `parent`) over the whole block, with the checksum tail when `seed` is
/// given. `file_type` is the directory type byte with filetype.
pub fn dots_block(
    bs: usize,
    ino: u32,
    parent: u32,
    file_type: Option<u8>,
    seed: Option<u32>,
) -> Vec<u8> {
    let mut b = vec![0u8; bs];
    let end = if seed.is_some() { bs - TAIL_LEN } else { bs };
    put_entry(&mut b, bs, 0, ino, rec_len_for(1), b".", file_type);
    put_entry(&mut b, bs, 12, parent, end - 12, b"..", file_type);
    seal_new(&mut b, seed);
    b
}

fn seal_new(b: &mut [u8], seed: Option<u32>) {
    if let Some(seed) = seed {
        put_tail_header(b);
        set_tail_checksum(seed, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::{put_le16, put_le32};

    #[test]
    fn reads_entries_and_tail() {
        let mut b = vec![0u8; 1024];
        put_le32(&mut b, 0, 2);
        put_le16(&mut b, 4, 12);
        b[6] = 1;
        b[7] = 2;
        b[8] = b'.';
        put_le32(&mut b, 12, 2);
        put_le16(&mut b, 16, 1024 - 12 - 12);
        b[18] = 2;
        b[19] = 2;
        b[20] = b'.';
        b[21] = b'.';
        let t = 1024 - 12;
        put_le16(&mut b, t + 4, 12);
        b[t + 7] = TAIL_FT;
        let e = read_entry(&b, 0, true).unwrap();
        assert_eq!((e.inode, e.rec_len, e.name), (2, 12, &b"."[..]));
        let e = read_entry(&b, 12, true).unwrap();
        assert_eq!(e.name, b"..");
        assert!(has_tail(&b));
        assert_eq!(read_entry(&b, 1020, true), Err(EntryError::BadRecLen));
        put_le16(&mut b, 4, 13);
        assert_eq!(read_entry(&b, 0, true), Err(EntryError::BadRecLen));
    }

    #[test]
    fn new_blocks_read_back() {
        for bs in [1024, 65536] {
            let b = dots_block(bs, 11, 2, Some(2), Some(7));
            let dot = read_entry(&b, 0, true).unwrap();
            let dotdot = read_entry(&b, 12, true).unwrap();
            assert_eq!((dot.inode, dot.name, dot.file_type), (11, &b"."[..], 2));
            assert_eq!((dotdot.inode, dotdot.rec_len), (2, bs - 12 - TAIL_LEN));
            assert!(has_tail(&b));
            assert_eq!(stored_tail_checksum(&b), compute_tail_checksum(7, &b));
            let e = empty_block(bs, None);
            let r = read_entry(&e, 0, false).unwrap();
            assert_eq!((r.inode, r.rec_len, r.name_len), (0, bs, 0));
        }
        let b = dots_block(1024, 11, 2, None, None);
        let dotdot = read_entry(&b, 12, false).unwrap();
        assert_eq!((dotdot.name, dotdot.rec_len), (&b".."[..], 1012));
    }

    #[test]
    fn big_block_rec_len() {
        assert_eq!(decode_rec_len(65535, 65536), 65536);
        assert_eq!(decode_rec_len(12, 4096), 12);
        for (len, bs) in [
            (12, 4096),
            (4096, 4096),
            (65536, 65536),
            (65532, 65536),
            (12, 65536),
        ] {
            assert_eq!(decode_rec_len(encode_rec_len(len, bs), bs), len);
        }
    }
}
