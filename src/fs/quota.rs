//! The quota files ext4 keeps in hidden inodes: the kernel's "vfsv1"
//! format (quota tree format version 2, revisions 0 and 1).
//!
//! The file is cut into 1 KiB quota blocks. Block 0 starts with a header
//! (magic per quota type, version) followed by the info fields (grace
//! times, flags, how many blocks the file has, the first free block and
//! the first data block with a free entry). Block 1 is the root of a radix
//! tree of depth 4 keyed by the id, one byte per level: index blocks hold
//! 256 little-endian block numbers (0 = none), and the references of the
//! last level point at data blocks, which hold a 16-byte header (next and
//! previous block with free entries, entries in use) and then fixed-size
//! entries (id, limits, usage, grace times); an all-zero entry is free.
//!
//! Reading accepts what e2fsprogs' quota library accepts: any magic but
//! this type's in big-endian order, revision 0 (32-bit limits) or 1, info
//! fields that fit the file's size; a reference past the declared blocks
//! is followed anyway (e2fsck only logs it).
//!
//! Writing builds a new revision 1 file from a list of entries exactly as
//! that library writes one from nothing (what e2fsck does when it updates
//! quota): default grace times, ids inserted in increasing order, tree
//! blocks appended as the insertion needs them, entries packed into the
//! data block with free entries. Entries with no usage and no limits are
//! left out; a grace time starts when usage is above a soft limit.
//!
//! Parser and writer are pure: blocks come from, and go to, the caller.
//! Every loop is bounded: depth 4, 256 references per index block, a fixed
//! number of entries per data block, each block read at most once per
//! level, and a written file of at most `MAX_BLOCKS` blocks.

use super::bytes::{le32, le64, put_le16, put_le32};
use crate::narrow::lo32;
use std::collections::BTreeSet;

/// Size of a quota block, whatever the file system block size.
pub const QUOTA_BLOCK: usize = 1024;
/// Magic numbers of the user, group and project quota files.
pub const MAGICS: [u32; 3] = [0xD9C0_1F11, 0xD9C0_1927, 0xD9C0_3F14];
/// Revision 0 (32-bit limits) and 1 (64-bit) of the tree format.
pub const VERSION_R0: u32 = 0;
pub const VERSION_R1: u32 = 1;
/// The tree's root block.
const TREE_ROOT: u32 = 1;
const TREE_DEPTH: usize = 4;
const INFO_OFFSET: usize = 8;
const DATA_HEADER_LEN: usize = 16;
/// Size of one entry of each revision.
const ENTRY_LEN_R0: usize = 48;
const ENTRY_LEN_R1: usize = 72;
const ENTRIES_PER_BLOCK: usize = (QUOTA_BLOCK - DATA_HEADER_LEN) / ENTRY_LEN_R1;
/// Grace period a new file gets (7 days, e2fsprogs' and the kernel's
/// default).
pub const DEFAULT_GRACE: u32 = 7 * 24 * 60 * 60;
/// A file larger than this (2 GiB) is refused by e2fsprogs.
const MAX_FILE_SIZE: u64 = 1 << 31;
/// Largest file the writer builds, in quota blocks (256 MiB: a repair
/// holds it in memory).
pub const MAX_BLOCKS: usize = 1 << 18;

/// The header and info block of a quota file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub magic: u32,
    pub version: u32,
    pub bgrace: u32,
    pub igrace: u32,
    /// Blocks in the file according to the info block.
    pub blocks: u32,
    pub free_blk: u32,
    pub free_entry: u32,
}

/// The limits of one id (blocks in 1 KiB units, as quota tools count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub bhard: u64,
    pub bsoft: u64,
    pub ihard: u64,
    pub isoft: u64,
}

impl Limits {
    pub fn is_zero(&self) -> bool {
        *self == Limits::default()
    }
}

/// One id as the quota file records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dquot {
    pub id: u32,
    /// Bytes in use.
    pub space: u64,
    pub inodes: u64,
    pub limits: Limits,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaError {
    /// A block could not be read.
    Unreadable(u32),
    /// The magic of this quota type in big-endian order.
    WrongEndian,
    BadVersion(u32),
    /// Info fields that do not fit the file (e2fsprogs refuses the file).
    BadInfo(String),
    /// A tree reference past the blocks the info block counts (e2fsprogs
    /// stops reading the tree there).
    BadReference(u32, u32),
}

impl std::fmt::Display for QuotaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuotaError::Unreadable(b) => write!(f, "quota block {b} cannot be read"),
            QuotaError::WrongEndian => write!(f, "stored in the wrong byte order"),
            QuotaError::BadVersion(v) => write!(f, "unsupported version {v}"),
            QuotaError::BadInfo(why) => write!(f, "{why}"),
            QuotaError::BadReference(r, n) => {
                write!(f, "a tree reference to block {r} of {n}")
            }
        }
    }
}

/// Parses block 0 of a quota file of type `qtype` (0 user, 1 group, 2
/// project) whose inode says it is `size` bytes long, and checks it as
/// e2fsprogs does before it reads the tree.
pub fn parse_header(block0: &[u8], qtype: usize, size: u64) -> Result<Header, QuotaError> {
    let i = INFO_OFFSET;
    let h = Header {
        magic: le32(block0, 0),
        version: le32(block0, 4),
        bgrace: le32(block0, i),
        igrace: le32(block0, i + 4),
        blocks: le32(block0, i + 12),
        free_blk: le32(block0, i + 16),
        free_entry: le32(block0, i + 20),
    };
    if MAGICS.get(qtype) == Some(&h.magic.swap_bytes()) {
        return Err(QuotaError::WrongEndian);
    }
    if h.version != VERSION_R0 && h.version != VERSION_R1 {
        return Err(QuotaError::BadVersion(h.version));
    }
    let file_blocks = size.div_ceil(QUOTA_BLOCK as u64);
    if size > MAX_FILE_SIZE || u64::from(h.blocks) > file_blocks {
        return Err(QuotaError::BadInfo(format!(
            "{} blocks in a file of {size} bytes",
            h.blocks
        )));
    }
    if h.free_blk >= h.blocks || h.free_entry >= h.blocks {
        return Err(QuotaError::BadInfo(format!(
            "free block {} or free entry {} past {} blocks",
            h.free_blk, h.free_entry, h.blocks
        )));
    }
    Ok(h)
}

/// The used entries of one data block of a file of revision `version`.
pub fn parse_data_block(b: &[u8], version: u32) -> Vec<Dquot> {
    let len = if version == VERSION_R0 {
        ENTRY_LEN_R0
    } else {
        ENTRY_LEN_R1
    };
    let mut out = Vec::new();
    for i in 0..(QUOTA_BLOCK - DATA_HEADER_LEN) / len {
        let off = DATA_HEADER_LEN + i * len;
        let Some(e) = b.get(off..off + len) else {
            break;
        };
        if e.iter().all(|&x| x == 0) {
            continue;
        }
        out.push(if version == VERSION_R0 {
            Dquot {
                id: le32(e, 0),
                inodes: u64::from(le32(e, 12)),
                space: le64(e, 24),
                limits: Limits {
                    ihard: u64::from(le32(e, 4)),
                    isoft: u64::from(le32(e, 8)),
                    bhard: u64::from(le32(e, 16)),
                    bsoft: u64::from(le32(e, 20)),
                },
            }
        } else {
            Dquot {
                id: le32(e, 0),
                inodes: le64(e, 24),
                space: le64(e, 48),
                limits: Limits {
                    ihard: le64(e, 8),
                    isoft: le64(e, 16),
                    bhard: le64(e, 32),
                    bsoft: le64(e, 40),
                },
            }
        });
    }
    out
}

/// Reads every entry of a quota file of type `qtype`, `size` bytes long.
/// `read(n, buf)` fills `buf` with quota block `n` (zeros past the end of
/// the file) or fails. Entries come in tree order; data blocks reached
/// twice count once.
pub fn read_dquots(
    qtype: usize,
    size: u64,
    read: &mut dyn FnMut(u32, &mut [u8; QUOTA_BLOCK]) -> bool,
) -> Result<Vec<Dquot>, QuotaError> {
    let mut buf = [0u8; QUOTA_BLOCK];
    if !read(0, &mut buf) {
        return Err(QuotaError::Unreadable(0));
    }
    let header = parse_header(&buf, qtype, size)?;
    let mut walk = TreeWalk {
        version: header.version,
        blocks: header.blocks,
        index_seen: BTreeSet::new(),
        data_seen: BTreeSet::new(),
        out: Vec::new(),
        read,
    };
    walk.node(TREE_ROOT, 0)?;
    Ok(walk.out)
}

struct TreeWalk<'a> {
    version: u32,
    /// Blocks in the file according to the info block.
    blocks: u32,
    /// (block, depth) of index blocks read: the same block at the same
    /// depth has the same subtree.
    index_seen: BTreeSet<(u32, usize)>,
    data_seen: BTreeSet<u32>,
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
        if !self.index_seen.insert((blk, depth)) {
            return Ok(());
        }
        let buf = self.load(blk)?;
        for i in 0..QUOTA_BLOCK / 4 {
            let r = le32(&buf, i * 4);
            if r == 0 {
                continue;
            }
            if r >= self.blocks {
                return Err(QuotaError::BadReference(r, self.blocks));
            }
            if depth + 1 < TREE_DEPTH {
                self.node(r, depth + 1)?;
            } else if self.data_seen.insert(r) {
                let data = self.load(r)?;
                self.out.extend(parse_data_block(&data, self.version));
            }
        }
        Ok(())
    }
}

/// A quota file built by [`write_file`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The file's quota blocks, in file order (its size is their total).
    pub blocks: Vec<[u8; QUOTA_BLOCK]>,
    /// Quota blocks in the order the writer first wrote them (each once):
    /// the order in which a file system allocates them.
    pub first_written: Vec<u32>,
}

/// Builds the quota file of type `qtype` holding `entries` (any order,
/// ids unique), as e2fsprogs writes a new one at time `now`. None when the
/// file would exceed `MAX_BLOCKS`.
pub fn write_file(qtype: usize, entries: &[Dquot], now: u64) -> Option<Written> {
    let mut w = TreeWriter {
        blocks: vec![[0u8; QUOTA_BLOCK]; 2],
        written: vec![false; 2],
        first_written: Vec::new(),
        free_entry: 0,
    };
    // The header and the info block are written first.
    w.touch(0);
    let mut sorted: Vec<&Dquot> = entries.iter().collect();
    sorted.sort_by_key(|d| d.id);
    for d in sorted {
        if d.space == 0 && d.inodes == 0 && d.limits.is_zero() {
            continue;
        }
        let (blk, slot) = w.insert(d.id, TREE_ROOT, 0)?;
        let off = DATA_HEADER_LEN + slot * ENTRY_LEN_R1;
        let e = &mut w.blocks[blk as usize][off..off + ENTRY_LEN_R1];
        put_entry(e, d, now);
    }
    let nblocks = u32::try_from(w.blocks.len()).ok()?;
    let free_entry = w.free_entry;
    let b0 = &mut w.blocks[0];
    put_le32(b0, 0, *MAGICS.get(qtype)?);
    put_le32(b0, 4, VERSION_R1);
    let i = INFO_OFFSET;
    put_le32(b0, i, DEFAULT_GRACE);
    put_le32(b0, i + 4, DEFAULT_GRACE);
    put_le32(b0, i + 8, 0);
    put_le32(b0, i + 12, nblocks);
    // Nothing is ever freed in a new file: no free block list.
    put_le32(b0, i + 16, 0);
    put_le32(b0, i + 20, free_entry);
    Some(Written {
        blocks: w.blocks,
        first_written: w.first_written,
    })
}

/// Stores one revision 1 entry. A grace time runs from `now` when usage
/// is above a soft limit (1 KiB blocks for space, rounded up).
fn put_entry(e: &mut [u8], d: &Dquot, now: u64) {
    let put64 = |e: &mut [u8], off: usize, v: u64| {
        put_le32(e, off, lo32(v));
        put_le32(e, off + 4, (v >> 32) as u32);
    };
    let l = d.limits;
    let over_b = l.bsoft != 0 && d.space.div_ceil(1024) > l.bsoft;
    let over_i = l.isoft != 0 && d.inodes > l.isoft;
    let grace = now.saturating_add(u64::from(DEFAULT_GRACE));
    put_le32(e, 0, d.id);
    put64(e, 8, l.ihard);
    put64(e, 16, l.isoft);
    put64(e, 24, d.inodes);
    put64(e, 32, l.bhard);
    put64(e, 40, l.bsoft);
    put64(e, 48, d.space);
    put64(e, 56, if over_b { grace } else { 0 });
    put64(e, 64, if over_i { grace } else { 0 });
    // An all-zero entry would read as free.
    if e.iter().all(|&x| x == 0) {
        put64(e, 64, 1);
    }
}

/// e2fsprogs' tree insertion on a file built from nothing (no block is
/// ever freed, so new blocks are always appended).
struct TreeWriter {
    blocks: Vec<[u8; QUOTA_BLOCK]>,
    written: Vec<bool>,
    first_written: Vec<u32>,
    /// The data block whose entries are not all used (0: none).
    free_entry: u32,
}

impl TreeWriter {
    fn touch(&mut self, blk: u32) {
        if let Some(w) = self.written.get_mut(blk as usize)
            && !*w
        {
            *w = true;
            self.first_written.push(blk);
        }
    }

    /// A new zeroed block at the end of the file (written at once, as the
    /// library does to be sure it is allocated).
    fn new_block(&mut self) -> Option<u32> {
        if self.blocks.len() >= MAX_BLOCKS {
            return None;
        }
        let blk = u32::try_from(self.blocks.len()).ok()?;
        self.blocks.push([0u8; QUOTA_BLOCK]);
        self.written.push(false);
        self.touch(blk);
        Some(blk)
    }

    /// Inserts `id` below tree block `blk` at `depth`; returns the data
    /// block and the slot of its entry.
    fn insert(&mut self, id: u32, blk: u32, depth: usize) -> Option<(u32, usize)> {
        let idx = ((id >> (8 * (TREE_DEPTH - 1 - depth))) & 0xFF) as usize;
        let r = le32(&self.blocks[blk as usize], idx * 4);
        let (child, at) = if depth == TREE_DEPTH - 1 {
            self.free_slot()?
        } else if r == 0 {
            let nb = self.new_block()?;
            let at = self.insert(id, nb, depth + 1)?;
            (nb, at)
        } else {
            let at = self.insert(id, r, depth + 1)?;
            (r, at)
        };
        if r == 0 {
            put_le32(&mut self.blocks[blk as usize], idx * 4, child);
            self.touch(blk);
        }
        Some(if depth == TREE_DEPTH - 1 {
            (child, at.1)
        } else {
            at
        })
    }

    /// The data block with free entries (a new one when there is none) and
    /// the slot taken in it; a block whose last slot is taken leaves the
    /// free list.
    fn free_slot(&mut self) -> Option<(u32, (u32, usize))> {
        let blk = if self.free_entry != 0 {
            self.free_entry
        } else {
            let b = self.new_block()?;
            self.free_entry = b;
            b
        };
        let b = &mut self.blocks[blk as usize];
        let used = u16::from_le_bytes([b[8], b[9]]) as usize;
        if used + 1 >= ENTRIES_PER_BLOCK {
            self.free_entry = 0;
        }
        // A block this writer fills holds at most ENTRIES_PER_BLOCK entries.
        #[allow(clippy::cast_possible_truncation)]
        put_le16(b, 8, (used + 1) as u16);
        // Entries are never freed here, so the next slot is the free one.
        let slot = used.min(ENTRIES_PER_BLOCK - 1);
        self.touch(blk);
        Some((blk, (blk, slot)))
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data, small by construction
mod tests {
    use super::*;

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
        let e = DATA_HEADER_LEN + ENTRY_LEN_R1;
        put_le32(d, e, 1000);
        put_le64(d, e + 24, 1);
        put_le64(d, e + 32, 500);
        put_le64(d, e + 48, 4096);
        f
    }

    fn reader(f: &[[u8; QUOTA_BLOCK]]) -> impl FnMut(u32, &mut [u8; QUOTA_BLOCK]) -> bool + '_ {
        |n, buf| {
            *buf = f.get(n as usize).copied().unwrap_or([0; QUOTA_BLOCK]);
            true
        }
    }

    fn size(f: &[[u8; QUOTA_BLOCK]]) -> u64 {
        (f.len() * QUOTA_BLOCK) as u64
    }

    #[test]
    fn reads_tree() {
        let f = file();
        let got = read_dquots(0, size(&f), &mut reader(&f)).unwrap();
        assert_eq!(
            got,
            vec![
                Dquot {
                    id: 0,
                    space: 8192,
                    inodes: 2,
                    limits: Limits::default(),
                },
                Dquot {
                    id: 1000,
                    space: 4096,
                    inodes: 1,
                    limits: Limits {
                        bhard: 500,
                        ..Limits::default()
                    },
                },
            ]
        );
    }

    #[test]
    fn rejects_what_e2fsprogs_rejects() {
        let f = file();
        let n = size(&f);
        // Another type's magic is read all the same; this type's magic in
        // big-endian order is not.
        assert!(read_dquots(1, n, &mut reader(&f)).is_ok());
        let mut g = file();
        put_le32(&mut g[0], 0, MAGICS[0].swap_bytes());
        assert_eq!(
            read_dquots(0, n, &mut reader(&g)),
            Err(QuotaError::WrongEndian)
        );
        let mut g = file();
        put_le32(&mut g[0], 4, 2);
        assert_eq!(
            read_dquots(0, n, &mut reader(&g)),
            Err(QuotaError::BadVersion(2))
        );
        // More blocks than the file holds, free lists past the end.
        assert!(matches!(
            read_dquots(0, n - 1024, &mut reader(&f)),
            Err(QuotaError::BadInfo(_))
        ));
        let mut g = file();
        put_le32(&mut g[0], INFO_OFFSET + 20, 6);
        assert!(matches!(
            read_dquots(0, n, &mut reader(&g)),
            Err(QuotaError::BadInfo(_))
        ));
        assert_eq!(
            read_dquots(0, n, &mut |_, _| false),
            Err(QuotaError::Unreadable(0))
        );
        // A reference past the declared blocks ends the read (e2fsck
        // 1.47.4: "Illegal reference (77 >= 6)").
        let mut g = file();
        put_le32(&mut g[2], 8, 77);
        assert_eq!(
            read_dquots(0, n, &mut reader(&g)),
            Err(QuotaError::BadReference(77, 6))
        );
    }

    #[test]
    fn reads_revision_0() {
        let mut f = file();
        put_le32(&mut f[0], 4, 0);
        let d = &mut f[5];
        d.fill(0);
        put_le32(d, DATA_HEADER_LEN, 7);
        put_le32(d, DATA_HEADER_LEN + 12, 3);
        put_le32(d, DATA_HEADER_LEN + 16, 99);
        put_le64(d, DATA_HEADER_LEN + 24, 2048);
        let got = read_dquots(0, size(&f), &mut reader(&f)).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].id, got[0].inodes, got[0].space), (7, 3, 2048));
        assert_eq!(got[0].limits.bhard, 99);
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
        // Bounded by the depth and by reading each block once per level
        // (what the blocks hold at the last level reads as entries, as
        // e2fsprogs reads it).
        let mut reads = 0;
        let mut r = reader(&g);
        let mut counting = |n: u32, buf: &mut [u8; QUOTA_BLOCK]| {
            reads += 1;
            r(n, buf)
        };
        assert!(read_dquots(0, size(&g), &mut counting).is_ok());
        assert!(reads <= 1 + g.len() * (TREE_DEPTH + 1), "{reads} reads");
    }

    #[test]
    fn rejects_references_past_the_info_blocks() {
        // The info block counts 6 blocks: a reference to block 6 or past
        // it is illegal to e2fsprogs, at any depth.
        for (blk, slot) in [(1, 7), (3, 0), (4, 0xE8)] {
            let mut g = file();
            put_le32(&mut g[blk], slot * 4, 6);
            assert_eq!(
                read_dquots(0, size(&g), &mut reader(&g)),
                Err(QuotaError::BadReference(6, 6)),
                "block {blk} slot {slot}"
            );
        }
    }

    fn dq(id: u32, space: u64, inodes: u64) -> Dquot {
        Dquot {
            id,
            space,
            inodes,
            limits: Limits::default(),
        }
    }

    #[test]
    fn writes_what_it_reads() {
        let mut entries: Vec<Dquot> = (0..40)
            .map(|i| dq(i * 37, 4096 * u64::from(i), u64::from(i)))
            .collect();
        entries.push(Dquot {
            id: 0x0102_0304,
            space: 0,
            inodes: 0,
            limits: Limits {
                isoft: 5,
                ..Limits::default()
            },
        });
        // No usage, no limits: left out.
        entries.push(dq(77_777, 0, 0));
        let w = write_file(2, &entries, 1000).unwrap();
        let f = &w.blocks;
        let mut got = read_dquots(2, size(f), &mut reader(f)).unwrap();
        got.sort_by_key(|d| d.id);
        // Ids 0 and 77777 have neither usage nor limits.
        let mut want: Vec<Dquot> = entries
            .iter()
            .filter(|d| d.space != 0 || d.inodes != 0 || !d.limits.is_zero())
            .copied()
            .collect();
        want.sort_by_key(|d| d.id);
        assert_eq!(got, want);
        // Every block is written, the header first.
        let mut order = w.first_written.clone();
        assert_eq!(order[0], 0);
        order.sort_unstable();
        assert_eq!(order, (0..f.len() as u32).collect::<Vec<_>>());
        assert_eq!(le32(&f[0], INFO_OFFSET + 12), f.len() as u32);
    }

    #[test]
    fn layout_of_one_id() {
        // Header, root, three index blocks, a data block; the root is
        // written last, once the path below it exists.
        let w = write_file(0, &[dq(0, 1024, 1)], 0).unwrap();
        assert_eq!(w.blocks.len(), 6);
        assert_eq!(w.first_written, vec![0, 2, 3, 4, 5, 1]);
        assert_eq!(le32(&w.blocks[1], 0), 2);
        assert_eq!(le32(&w.blocks[4], 0), 5);
        // Free entry: the data block; its header counts one entry.
        assert_eq!(le32(&w.blocks[0], INFO_OFFSET + 20), 5);
        assert_eq!(w.blocks[5][8], 1);
    }

    #[test]
    fn full_data_block_leaves_the_free_list() {
        let entries: Vec<Dquot> = (0..ENTRIES_PER_BLOCK as u32 + 1)
            .map(|i| dq(i, 1, 1))
            .collect();
        let w = write_file(0, &entries, 0).unwrap();
        // 14 entries fill block 5; the 15th opens block 6.
        assert_eq!(w.blocks.len(), 7);
        assert_eq!(w.blocks[5][8] as usize, ENTRIES_PER_BLOCK);
        assert_eq!(le32(&w.blocks[0], INFO_OFFSET + 20), 6);
    }

    #[test]
    fn grace_starts_over_a_soft_limit() {
        let d = Dquot {
            id: 5,
            space: 3 * 1024 + 1,
            inodes: 9,
            limits: Limits {
                bsoft: 3,
                isoft: 9,
                ..Limits::default()
            },
        };
        let w = write_file(0, &[d], 100).unwrap();
        let e = &w.blocks[5][DATA_HEADER_LEN..DATA_HEADER_LEN + ENTRY_LEN_R1];
        assert_eq!(le64(e, 56), 100 + u64::from(DEFAULT_GRACE));
        assert_eq!(le64(e, 64), 0);
    }
}
