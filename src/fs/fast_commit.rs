//! ext4 fast-commit blocks: the area at the end of the jbd2 journal where
//! the kernel logs inode-level changes between full commits, as a stream
//! of little-endian tag-length-value records (ext4_fc_tl) crossing block
//! boundaries only between records.
//!
//! The scan validates the stream as recovery does: the area must open
//! with a HEAD naming the expected transaction, and only the records up to
//! the last TAIL whose tid and running crc32c match are replayed. The crc
//! covers every record since the previous TAIL (tag, length and value),
//! and of the TAIL itself its tag, length and tid.
//!
//! Pure functions of byte slices: no input makes them panic, and a record
//! whose value runs past its block ends the stream.

use super::bytes::{le16, le32};
use super::checksum::crc32c_raw;
use super::extent::{self, Extent};
use super::num::Ino;

/// Record tags (ext4_fc_tl.fc_tag).
pub mod tag {
    pub const ADD_RANGE: u16 = 1;
    pub const DEL_RANGE: u16 = 2;
    pub const CREAT: u16 = 3;
    pub const LINK: u16 = 4;
    pub const UNLINK: u16 = 5;
    pub const INODE: u16 = 6;
    pub const PAD: u16 = 7;
    pub const TAIL: u16 = 8;
    pub const HEAD: u16 = 9;
}

/// Bytes of a record header (tag, length).
pub const TL_LEN: usize = 4;
/// Bytes of a dentry record's value before the name (parent, inode).
pub const DENTRY_FIXED: usize = 8;
/// HEAD features recovery understands: none.
pub const SUPPORTED_FEATURES: u32 = 0;

/// What a dentry record does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DentryOp {
    Create,
    Link,
    Unlink,
}

/// One record, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tag {
    Head {
        features: u32,
        tid: u32,
    },
    /// Maps `extent` into inode `ino` (replacing what it overlaps).
    AddRange {
        ino: Ino,
        extent: Extent,
    },
    /// Unmaps logical blocks `lblk..lblk+len` of inode `ino`.
    DelRange {
        ino: Ino,
        lblk: u32,
        len: u32,
    },
    Dentry {
        op: DentryOp,
        parent: Ino,
        ino: Ino,
        name: Vec<u8>,
    },
    /// The inode's image as the kernel had it (its first bytes: at least
    /// the 128-byte base, plus the extra fields it logged).
    Inode {
        ino: Ino,
        raw: Vec<u8>,
    },
    Pad,
    Tail {
        tid: u32,
        crc: u32,
    },
    Unknown(u16),
}

/// One record in a block: where it starts, its tag and value length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub offset: usize,
    pub tag: u16,
    pub len: usize,
}

impl Record {
    fn value<'a>(&self, b: &'a [u8]) -> Option<&'a [u8]> {
        b.get(self.offset + TL_LEN..self.offset + TL_LEN + self.len)
    }
}

/// The records of a block in order. Recovery walks records while the next
/// one starts before the block's last byte; one whose header or value
/// would run past the block ends the walk (marked by `truncated`).
pub fn records(b: &[u8]) -> (Vec<Record>, bool) {
    let end = b.len().saturating_sub(1);
    let mut out = Vec::new();
    let mut cur = 0usize;
    while cur < end {
        if cur + TL_LEN > b.len() {
            return (out, true);
        }
        let r = Record {
            offset: cur,
            tag: le16(b, cur),
            len: usize::from(le16(b, cur + 2)),
        };
        if cur + TL_LEN + r.len > b.len() {
            return (out, true);
        }
        out.push(r);
        cur += TL_LEN + r.len;
    }
    (out, false)
}

/// Decodes a record's value; None when it is too short for its tag.
pub fn decode(b: &[u8], r: &Record) -> Option<Tag> {
    let v = r.value(b)?;
    let need = |n: usize| (v.len() >= n).then_some(());
    Some(match r.tag {
        tag::HEAD => {
            need(8)?;
            Tag::Head {
                features: le32(v, 0),
                tid: le32(v, 4),
            }
        }
        tag::ADD_RANGE => {
            need(4 + extent::ENTRY_LEN)?;
            let mut raw = [0u8; extent::ENTRY_LEN];
            raw.copy_from_slice(&v[4..4 + extent::ENTRY_LEN]);
            Tag::AddRange {
                ino: Ino(le32(v, 0)),
                extent: extent::decode_leaf(&raw),
            }
        }
        tag::DEL_RANGE => {
            need(12)?;
            Tag::DelRange {
                ino: Ino(le32(v, 0)),
                lblk: le32(v, 4),
                len: le32(v, 8),
            }
        }
        tag::CREAT | tag::LINK | tag::UNLINK => {
            need(DENTRY_FIXED)?;
            let op = match r.tag {
                tag::CREAT => DentryOp::Create,
                tag::LINK => DentryOp::Link,
                _ => DentryOp::Unlink,
            };
            Tag::Dentry {
                op,
                parent: Ino(le32(v, 0)),
                ino: Ino(le32(v, 4)),
                name: v[DENTRY_FIXED..].to_vec(),
            }
        }
        tag::INODE => {
            need(4)?;
            Tag::Inode {
                ino: Ino(le32(v, 0)),
                raw: v[4..].to_vec(),
            }
        }
        tag::PAD => Tag::Pad,
        tag::TAIL => {
            need(8)?;
            Tag::Tail {
                tid: le32(v, 0),
                crc: le32(v, 4),
            }
        }
        t => Tag::Unknown(t),
    })
}

/// Why the scan fails recovery (the kernel's error codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanError {
    /// EFSBADCRC: a TAIL's crc or tid does not match and nothing before
    /// it was valid.
    BadCrc,
    /// EINVAL: the HEAD names another transaction.
    WrongTid { found: u32 },
    /// EOPNOTSUPP: the HEAD asks for features recovery does not know.
    Unsupported { features: u32 },
    /// ECANCELED: an unknown record before any valid TAIL.
    Unknown { tag: u16 },
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::BadCrc => write!(f, "fast-commit tail fails its checksum"),
            ScanError::WrongTid { found } => {
                write!(f, "fast-commit head names transaction {found}")
            }
            ScanError::Unsupported { features } => {
                write!(f, "fast-commit features {features:#x} are unknown")
            }
            ScanError::Unknown { tag } => write!(f, "unknown fast-commit tag {tag}"),
        }
    }
}

/// What the scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// The records to replay, in order: everything up to the last valid
    /// TAIL (HEAD, PAD and TAIL included, as replay counts them).
    pub tags: Vec<Tag>,
    /// Recovery fails (nothing at all is replayed then).
    pub error: Option<ScanError>,
}

enum Step {
    Continue,
    Stop,
}

/// Scans the fast-commit area, `blocks` in order (None for a block that
/// cannot be read, which ends the area), for transaction `expected_tid`.
/// An area that does not open with a HEAD holds nothing to replay.
pub fn scan<'a>(blocks: impl IntoIterator<Item = Option<&'a [u8]>>, expected_tid: u32) -> Scan {
    let mut all: Vec<Tag> = Vec::new();
    let mut valid = 0usize;
    let mut crc = 0u32;
    let mut out = Scan::default();
    'blocks: for (n, b) in blocks.into_iter().enumerate() {
        let Some(b) = b else { break };
        let (recs, truncated) = records(b);
        if n == 0 && recs.first().is_none_or(|r| r.tag != tag::HEAD) {
            break;
        }
        for r in &recs {
            let whole = &b[r.offset..r.offset + TL_LEN + r.len];
            let step = match decode(b, r) {
                Some(Tag::Tail { tid, crc: stored }) => {
                    all.push(Tag::Tail { tid, crc: stored });
                    crc = crc32c_raw(crc, &whole[..TL_LEN + 4]);
                    let ok = tid == expected_tid && stored == crc;
                    crc = 0;
                    if ok {
                        valid = all.len();
                        Step::Continue
                    } else if valid > 0 {
                        Step::Stop
                    } else {
                        out.error = Some(ScanError::BadCrc);
                        Step::Stop
                    }
                }
                Some(Tag::Head { features, tid }) => {
                    if features & !SUPPORTED_FEATURES != 0 {
                        out.error = Some(ScanError::Unsupported { features });
                        Step::Stop
                    } else if tid != expected_tid {
                        out.error = Some(ScanError::WrongTid { found: tid });
                        Step::Stop
                    } else {
                        all.push(Tag::Head { features, tid });
                        crc = crc32c_raw(crc, whole);
                        Step::Continue
                    }
                }
                // A record recovery does not know, or too short for its
                // tag: the end of the stream, or a failure before any
                // valid TAIL.
                Some(Tag::Unknown(_)) | None => {
                    if valid == 0 {
                        out.error = Some(ScanError::Unknown { tag: r.tag });
                    }
                    Step::Stop
                }
                Some(t) => {
                    all.push(t);
                    crc = crc32c_raw(crc, whole);
                    Step::Continue
                }
            };
            if let Step::Stop = step {
                break 'blocks;
            }
        }
        if truncated {
            break;
        }
    }
    if out.error.is_none() {
        all.truncate(valid);
        out.tags = all;
    }
    out
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data, small by construction
mod tests {
    use super::*;

    const BS: usize = 1024;

    fn rec(tag: u16, val: &[u8]) -> Vec<u8> {
        let mut r = tag.to_le_bytes().to_vec();
        r.extend_from_slice(&(val.len() as u16).to_le_bytes());
        r.extend_from_slice(val);
        r
    }

    fn head(tid: u32) -> Vec<u8> {
        let mut v = 0u32.to_le_bytes().to_vec();
        v.extend_from_slice(&tid.to_le_bytes());
        rec(tag::HEAD, &v)
    }

    /// A TAIL closing `since` (the records after the previous TAIL), with
    /// the crc recovery expects unless `bad`.
    fn tail(tid: u32, since: &[u8], bad: bool) -> Vec<u8> {
        let mut t = rec(tag::TAIL, &[0u8; 8]);
        t[4..8].copy_from_slice(&tid.to_le_bytes());
        let crc = crc32c_raw(crc32c_raw(0, since), &t[..8]);
        t[8..12].copy_from_slice(&(crc ^ u32::from(bad)).to_le_bytes());
        t
    }

    fn add_range(ino: u32, lblk: u32, len: u32, pblk: u64) -> Vec<u8> {
        let mut v = ino.to_le_bytes().to_vec();
        v.extend_from_slice(
            &Extent {
                lblk,
                len,
                pblk,
                unwritten: false,
            }
            .encode(),
        );
        rec(tag::ADD_RANGE, &v)
    }

    fn dentry(t: u16, parent: u32, ino: u32, name: &[u8]) -> Vec<u8> {
        let mut v = parent.to_le_bytes().to_vec();
        v.extend_from_slice(&ino.to_le_bytes());
        v.extend_from_slice(name);
        rec(t, &v)
    }

    /// The stream in a block, the rest filled with a PAD record (as the
    /// kernel does), which the next TAIL's crc covers.
    fn padded(stream: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let pad = rec(tag::PAD, &vec![0u8; BS - stream.len() - TL_LEN]);
        let mut b = stream.to_vec();
        b.extend_from_slice(&pad);
        (b, pad)
    }

    fn block(stream: &[u8]) -> Vec<u8> {
        let mut b = stream.to_vec();
        b.resize(BS, 0);
        b
    }

    fn run(blocks: &[Vec<u8>], tid: u32) -> Scan {
        scan(blocks.iter().map(|b| Some(b.as_slice())), tid)
    }

    #[test]
    fn valid_commit_is_replayed_whole() {
        let mut body = head(6);
        body.extend(add_range(14, 0, 1, 1107));
        body.extend(dentry(tag::CREAT, 12, 14, b"new"));
        body.extend(dentry(tag::UNLINK, 12, 13, b"old"));
        let mut s = body.clone();
        s.extend(tail(6, &body, false));
        let out = run(&[block(&s)], 6);
        assert_eq!(out.error, None);
        assert_eq!(out.tags.len(), 5);
        assert_eq!(
            out.tags[1],
            Tag::AddRange {
                ino: Ino(14),
                extent: Extent {
                    lblk: 0,
                    len: 1,
                    pblk: 1107,
                    unwritten: false
                }
            }
        );
        assert_eq!(
            out.tags[3],
            Tag::Dentry {
                op: DentryOp::Unlink,
                parent: Ino(12),
                ino: Ino(13),
                name: b"old".to_vec()
            }
        );
    }

    #[test]
    fn only_up_to_the_last_good_tail() {
        // Two fast commits in one transaction, the second torn (bad crc):
        // the first is replayed, the scan stops without an error.
        let mut first = head(9);
        first.extend(dentry(tag::LINK, 2, 20, b"a"));
        let mut s = first.clone();
        s.extend(tail(9, &first, false));
        let second = dentry(tag::LINK, 2, 21, b"b");
        s.extend(second.clone());
        s.extend(tail(9, &second, true));
        let out = run(&[block(&s)], 9);
        assert_eq!(out.error, None);
        assert_eq!(out.tags.len(), 3);
        // The second commit spans into the next block and is good there.
        let mut s = first.clone();
        s.extend(tail(9, &first, false));
        let (b1, pad) = padded(&s);
        let mut covered = pad.clone();
        covered.extend_from_slice(&second);
        let mut s2 = second.clone();
        s2.extend(tail(9, &covered, false));
        let out = run(&[b1, block(&s2)], 9);
        assert_eq!(out.error, None);
        assert_eq!(out.tags.len(), 6);
        assert_eq!(out.tags[3], Tag::Pad);
    }

    #[test]
    fn failures_before_any_valid_tail() {
        let body = head(3);
        let mut s = body.clone();
        s.extend(tail(3, &body, true));
        assert_eq!(run(&[block(&s)], 3).error, Some(ScanError::BadCrc));
        // Right crc, wrong tid in the tail.
        let mut s = body.clone();
        s.extend(tail(4, &body, false));
        assert_eq!(run(&[block(&s)], 3).error, Some(ScanError::BadCrc));
        // A head of another transaction.
        assert_eq!(
            run(&[block(&head(2))], 3).error,
            Some(ScanError::WrongTid { found: 2 })
        );
        let mut h = head(3);
        h[4] = 1;
        assert_eq!(
            run(&[block(&h)], 3).error,
            Some(ScanError::Unsupported { features: 1 })
        );
        let mut s = head(3);
        s.extend(rec(42, &[1, 2]));
        assert_eq!(
            run(&[block(&s)], 3).error,
            Some(ScanError::Unknown { tag: 42 })
        );
    }

    #[test]
    fn no_head_means_nothing_to_replay() {
        let out = run(&[vec![0u8; BS]], 1);
        assert_eq!(out, Scan::default());
        let out = run(&[], 1);
        assert_eq!(out, Scan::default());
        // An unreadable first block, too.
        assert_eq!(scan([None], 1), Scan::default());
    }

    #[test]
    fn records_bounded_by_block() {
        // A value that would run past the block ends the walk.
        let mut b = vec![0u8; 16];
        b[0..2].copy_from_slice(&tag::PAD.to_le_bytes());
        b[2..4].copy_from_slice(&4u16.to_le_bytes());
        b[8..10].copy_from_slice(&tag::PAD.to_le_bytes());
        b[10..12].copy_from_slice(&100u16.to_le_bytes());
        let (r, truncated) = records(&b);
        assert_eq!(r.len(), 1);
        assert!(truncated);
        assert_eq!(records(&[]), (vec![], false));
        // Short values decode to None, never panic.
        let r = Record {
            offset: 0,
            tag: tag::ADD_RANGE,
            len: 2,
        };
        assert_eq!(decode(&[1, 0, 2, 0, 0, 0], &r), None);
    }

    /// Garbage never panics and yields only whole records.
    #[test]
    fn garbage_is_bounded() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..300 {
            let mut blocks = Vec::new();
            for _ in 0..3 {
                let mut b = vec![0u8; 256];
                for byte in b.iter_mut() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *byte = (x % 11) as u8;
                }
                b[0] = tag::HEAD as u8;
                b[1] = 0;
                blocks.push(b);
            }
            let _ = run(&blocks, (x % 3) as u32);
        }
    }
}
