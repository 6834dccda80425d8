//! Linear directory entries and the metadata_csum tail of a directory block.

use super::bytes::{le16, le32, u8_at};
use super::checksum::crc32c_raw;

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
        (u8_at(b, off + 6) as usize, u8_at(b, off + 7))
    } else {
        (le16(b, off + 6) as usize, 0)
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
        && le16(b, t + 4) as usize == TAIL_LEN
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
