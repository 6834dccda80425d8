//! The quota files ext4 keeps in hidden inodes: the kernel's "vfsv1"
//! format (quota tree format version 2, revision 1).
//!
//! The file is cut into 1 KiB quota blocks. Block 0 starts with a header
//! (magic per quota type, version) followed by the info fields (grace
//! times, flags, how many blocks the file has, free lists). Block 1 is the
//! root of a radix tree of depth 4 keyed by the id, one byte per level:
//! index blocks hold 256 little-endian block numbers (0 = none), and the
//! references of the last level point at data blocks, which hold a 16-byte
//! header and then fixed-size entries (id, limits, usage, grace times); an
//! all-zero entry is free.
//!
//! The parser is pure: blocks come from a caller's reader. Every loop is
//! bounded: depth 4, 256 references per index block, a fixed number of
//! entries per data block, and each block is read at most once (a block
//! already visited is skipped, so a tree with cycles or shared nodes ends).

use super::bytes::{le32, le64};
use std::collections::BTreeSet;

/// Size of a quota block, whatever the file system block size.
pub const QUOTA_BLOCK: usize = 1024;
/// Magic numbers of the user, group and project quota files.
pub const MAGICS: [u32; 3] = [0xD9C0_1F11, 0xD9C0_1927, 0xD9C0_3F14];
/// The only revision of the tree format ext4 uses (64-bit limits).
pub const VERSION_R1: u32 = 1;
/// The tree's root block.
const TREE_ROOT: u32 = 1;
const TREE_DEPTH: usize = 4;
const INFO_OFFSET: usize = 8;
const DATA_HEADER_LEN: usize = 16;
/// Size of one revision-1 entry.
const ENTRY_LEN: usize = 72;
const ENTRIES_PER_BLOCK: usize = (QUOTA_BLOCK - DATA_HEADER_LEN) / ENTRY_LEN;

/// The header and info block of a quota file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub magic: u32,
    pub version: u32,
    /// Blocks in the file according to the info block: references must
    /// stay below it.
    pub blocks: u32,
}

/// Usage of one id as the quota file records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dquot {
    pub id: u32,
    /// Bytes in use.
    pub space: u64,
    pub inodes: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaError {
    /// A block could not be read.
    Unreadable(u32),
    /// The magic is not the one of this quota type.
    BadMagic(u32),
    BadVersion(u32),
    /// A tree reference points past the blocks the info block declares.
    BadReference {
        block: u32,
        reference: u32,
    },
}

impl std::fmt::Display for QuotaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuotaError::Unreadable(b) => write!(f, "quota block {b} cannot be read"),
            QuotaError::BadMagic(m) => write!(f, "bad magic {m:#x}"),
            QuotaError::BadVersion(v) => write!(f, "unsupported version {v}"),
            QuotaError::BadReference { block, reference } => {
                write!(f, "illegal reference {reference} in quota block {block}")
            }
        }
    }
}

/// Parses block 0 of a quota file of type `qtype` (0 user, 1 group, 2
/// project) and checks its magic and version.
pub fn parse_header(block0: &[u8], qtype: usize) -> Result<Header, QuotaError> {
    let h = Header {
        magic: le32(block0, 0),
        version: le32(block0, 4),
        blocks: le32(block0, INFO_OFFSET + 12),
    };
    if MAGICS.get(qtype) != Some(&h.magic) {
        return Err(QuotaError::BadMagic(h.magic));
    }
    if h.version != VERSION_R1 {
        return Err(QuotaError::BadVersion(h.version));
    }
    Ok(h)
}

/// The used entries of one data block.
pub fn parse_data_block(b: &[u8]) -> Vec<Dquot> {
    let mut out = Vec::new();
    for i in 0..ENTRIES_PER_BLOCK {
        let off = DATA_HEADER_LEN + i * ENTRY_LEN;
        let Some(e) = b.get(off..off + ENTRY_LEN) else {
            break;
        };
        if e.iter().all(|&x| x == 0) {
            continue;
        }
        out.push(Dquot {
            id: le32(e, 0),
            inodes: le64(e, 24),
            space: le64(e, 48),
        });
    }
    out
}

/// Reads every entry of a quota file of type `qtype`. `read(n, buf)` fills
/// `buf` with quota block `n` (zeros past the end of the file) or fails.
/// Entries come in tree order; data blocks reached twice count once.
pub fn read_dquots(
    qtype: usize,
    read: &mut dyn FnMut(u32, &mut [u8; QUOTA_BLOCK]) -> bool,
) -> Result<Vec<Dquot>, QuotaError> {
    let mut buf = [0u8; QUOTA_BLOCK];
    if !read(0, &mut buf) {
        return Err(QuotaError::Unreadable(0));
    }
    let header = parse_header(&buf, qtype)?;
    let mut walk = TreeWalk {
        blocks: header.blocks,
        visited: BTreeSet::new(),
        out: Vec::new(),
        read,
    };
    walk.node(TREE_ROOT, 0)?;
    Ok(walk.out)
}

struct TreeWalk<'a> {
    blocks: u32,
    visited: BTreeSet<u32>,
    out: Vec<Dquot>,
    read: &'a mut dyn FnMut(u32, &mut [u8; QUOTA_BLOCK]) -> bool,
}

impl TreeWalk<'_> {
    fn load(&mut self, blk: u32) -> Result<[u8; QUOTA_BLOCK], QuotaError> {
        let mut buf = [0u8; QUOTA_BLOCK];
        if (self.read)(blk, &mut buf) {
            Ok(buf)
        } else {
            Err(QuotaError::Unreadable(blk))
        }
    }

    /// Index block `blk` at `depth` (0 is the root); recursion is bounded
    /// by `TREE_DEPTH`.
    fn node(&mut self, blk: u32, depth: usize) -> Result<(), QuotaError> {
        if !self.visited.insert(blk) {
            return Ok(());
        }
        let buf = self.load(blk)?;
        for i in 0..QUOTA_BLOCK / 4 {
            let r = le32(&buf, i * 4);
            if r == 0 {
                continue;
            }
            if r >= self.blocks {
                return Err(QuotaError::BadReference {
                    block: blk,
                    reference: r,
                });
            }
            if depth + 1 < TREE_DEPTH {
                self.node(r, depth + 1)?;
            } else if self.visited.insert(r) {
                let data = self.load(r)?;
                self.out.extend(parse_data_block(&data));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::put_le32;

    fn put_le64(b: &mut [u8], off: usize, v: u64) {
        put_le32(b, off, v as u32);
        put_le32(b, off + 4, (v >> 32) as u32);
    }

    /// A user quota file: header, root, three index levels, one data block
    /// holding ids 0 and 1000.
    fn file() -> Vec<[u8; QUOTA_BLOCK]> {
        let mut f = vec![[0u8; QUOTA_BLOCK]; 6];
        put_le32(&mut f[0], 0, MAGICS[0]);
        put_le32(&mut f[0], 4, 1);
        put_le32(&mut f[0], INFO_OFFSET + 12, 6);
        // id 0 -> refs[0] at every level; id 1000 = 0x3E8 -> 0,0,3,0xE8.
        put_le32(&mut f[1], 0, 2);
        put_le32(&mut f[2], 0, 3);
        put_le32(&mut f[3], 0, 4);
        put_le32(&mut f[3], 3 * 4, 4);
        put_le32(&mut f[4], 0, 5);
        put_le32(&mut f[4], 0xE8 * 4, 5);
        let d = &mut f[5];
        put_le64(d, DATA_HEADER_LEN + 24, 2);
        put_le64(d, DATA_HEADER_LEN + 48, 8192);
        let e = DATA_HEADER_LEN + ENTRY_LEN;
        put_le32(d, e, 1000);
        put_le64(d, e + 24, 1);
        put_le64(d, e + 48, 4096);
        f
    }

    fn reader(f: &[[u8; QUOTA_BLOCK]]) -> impl FnMut(u32, &mut [u8; QUOTA_BLOCK]) -> bool + '_ {
        |n, buf| {
            *buf = f.get(n as usize).copied().unwrap_or([0; QUOTA_BLOCK]);
            true
        }
    }

    #[test]
    fn reads_tree() {
        let f = file();
        let got = read_dquots(0, &mut reader(&f)).unwrap();
        assert_eq!(
            got,
            vec![
                Dquot {
                    id: 0,
                    space: 8192,
                    inodes: 2
                },
                Dquot {
                    id: 1000,
                    space: 4096,
                    inodes: 1
                },
            ]
        );
    }

    #[test]
    fn rejects_bad_files() {
        let f = file();
        assert_eq!(
            read_dquots(1, &mut reader(&f)),
            Err(QuotaError::BadMagic(MAGICS[0]))
        );
        let mut g = file();
        put_le32(&mut g[0], 4, 0);
        assert_eq!(
            read_dquots(0, &mut reader(&g)),
            Err(QuotaError::BadVersion(0))
        );
        let mut g = file();
        put_le32(&mut g[2], 8, 77);
        assert!(matches!(
            read_dquots(0, &mut reader(&g)),
            Err(QuotaError::BadReference { reference: 77, .. })
        ));
        assert_eq!(
            read_dquots(0, &mut |_, _| false),
            Err(QuotaError::Unreadable(0))
        );
    }

    #[test]
    fn cycles_end() {
        // Every index entry points back at the root or the next level.
        let mut g = file();
        for i in 0..256 {
            put_le32(&mut g[1], i * 4, 1);
            put_le32(&mut g[2], i * 4, 2);
        }
        put_le32(&mut g[1], 4, 2);
        let got = read_dquots(0, &mut reader(&g)).unwrap();
        assert!(got.is_empty());
    }
}
