//! e2fsck's salvage of a directory block (or inline area) whose chain of
//! records breaks: a bad rec_len or name_len, a record running past the
//! end, no room for a header at the end. Pure byte edits, shared by pass
//! 2's walk (which goes on over a salvaged copy, as e2fsck does, so that
//! the entries after the broken one are counted) and the repair (which
//! stages the same bytes), so both see the same records at the same
//! offsets.
//!
//! At the first record that cannot be read:
//! - a record of exactly 8 bytes (a header and nothing else) is cut out,
//!   the rest of the area moving up over it;
//! - a record running past the end but whose name fits in what is left
//!   is shortened to end at the end;
//! - a record of plausible length (a multiple of 4, inside the area) is
//!   given to the entry before it, and the walk goes on after it;
//! - otherwise the rest of the area goes to the entry before, or, first
//!   in the area, becomes one empty record.

use super::dir_entry::{
    HEADER_LEN, inode_at, name_len_at, rec_len_at, rec_len_for, set_file_type_at, set_inode_at,
    set_name_len_at, set_rec_len_at, set_stored_rec_len,
};
use super::num::Ino;

/// Smallest record holding a name.
pub const MIN_REC: usize = 12;

/// The length of the record at `off` of `b` (an entry area) when it is
/// readable: a header fits, its rec_len is a multiple of 4 inside the
/// area and holds the name.
pub fn readable(b: &[u8], bs: usize, off: usize) -> Option<usize> {
    let room = b.len().checked_sub(off)?;
    if room < HEADER_LEN {
        return None;
    }
    let rec = rec_len_at(b, off, bs);
    let name_len = name_len_at(b, off);
    (rec >= MIN_REC && rec.is_multiple_of(4) && rec <= room && name_len + HEADER_LEN <= rec)
        .then_some(rec)
}

/// One salvage step at the unreadable record at `off` of `b` (an entry
/// area; `bs` decodes rec_len, `inodes` is the file system's inode
/// count), `prev` being the last readable record before it. Returns the
/// offset the walk goes on from: `off` itself when the record was
/// rewritten or the area moved up over it (to be read again), past it
/// when the record before absorbed it, `b.len()` when the rest of the
/// area is gone (or cannot hold a record at all).
pub fn salvage_at(b: &mut [u8], bs: usize, inodes: u32, off: usize, prev: Option<usize>) -> usize {
    salvage_step(b, bs, inodes, off, prev).0
}

/// [`salvage_at`], also telling whether the step gave the rest of the
/// area to the record before (see [`stray_rec_len`]).
pub fn salvage_step(
    b: &mut [u8],
    bs: usize,
    inodes: u32,
    off: usize,
    prev: Option<usize>,
) -> (usize, bool) {
    let max = b.len();
    if off >= max {
        return (max, false);
    }
    let room = max - off;
    let (rec, name_len) = if room < HEADER_LEN {
        (room, 0)
    } else {
        (rec_len_at(b, off, bs), name_len_at(b, off))
    };
    if rec == HEADER_LEN && room >= HEADER_LEN + MIN_REC {
        b.copy_within(off + HEADER_LEN..max, off);
        b[max - HEADER_LEN..].fill(0);
        return (off, false);
    }
    if rec > room
        && room > HEADER_LEN
        && rec_len_for(name_len) <= room
        && inode_at(b, off).get() <= inodes
        && !b[off + HEADER_LEN..off + HEADER_LEN + name_len].contains(&0)
    {
        set_rec_len_at(b, off, room, bs);
        return (off, false);
    }
    let next = match prev {
        Some(p) if rec != 0 && rec.is_multiple_of(4) && rec <= room => {
            grow(b, bs, p, rec);
            off + rec
        }
        Some(p) => {
            grow(b, bs, p, room);
            return (max, true);
        }
        None => {
            set_inode_at(b, off, Ino::NONE);
            set_rec_len_at(b, off, room, bs);
            set_name_len_at(b, off, 0);
            set_file_type_at(b, off, 0);
            // An area too short or oddly sized for one record stays
            // unreadable: nothing more to walk.
            if room >= MIN_REC && room.is_multiple_of(4) {
                off
            } else {
                max
            }
        }
    };
    (next, false)
}

/// e2fsck's walk, once a salvage step gave the rest of an area to the
/// record before, goes on from the end of a whole block of `bs` bytes,
/// not from the area's end. Where the area ends earlier (before a
/// checksum tail, or the entries of an inline directory), it then finds
/// its walk off the end and gives the broken record, by then inside the
/// record before, the rec_len that would have reached the block's end
/// from it. That value, or None where e2fsck leaves the record alone:
/// the area is a whole block, or the field does not lie inside the area.
/// `b` runs from the start of e2fsck's buffer to the area's end (so for
/// an inline directory's first part, all of i_block), `off` is the broken
/// record's offset in it.
pub fn stray_rec_len(b: &[u8], bs: usize, off: usize) -> Option<u16> {
    let end = b.len();
    if end == bs || off + HEADER_LEN > end {
        return None;
    }
    // e2fsck stores it in the 16-bit field as it is, high bits lost.
    let v = rec_len_at(b, off, bs) + bs - end;
    Some(crate::narrow::lo16(crate::narrow::sat32(v)))
}

/// Leaves [`stray_rec_len`] in the record at `off` of `b`, as e2fsck's
/// repair does. Whether there was one to leave.
pub fn put_stray_rec_len(b: &mut [u8], bs: usize, off: usize) -> bool {
    let Some(v) = stray_rec_len(b, bs, off) else {
        return false;
    };
    set_stored_rec_len(b, off, v);
    true
}

/// How many salvage steps an area of `len` bytes can take: each one
/// advances, or moves the area up by 8 bytes (at most len/8 times before
/// only zeros are left), or empties the first record.
pub fn max_steps(len: usize) -> usize {
    2 * (len / 4 + 2)
}

/// Makes every record of `b` (an entry area) readable, step by step as
/// `salvage_at`. Returns whether it changed anything.
pub fn salvage(b: &mut [u8], bs: usize, inodes: u32) -> bool {
    let max = b.len();
    let mut off = 0usize;
    let mut prev: Option<usize> = None;
    let mut changed = false;
    for _ in 0..max_steps(max) {
        if off >= max {
            break;
        }
        if let Some(rec) = readable(b, bs, off) {
            prev = Some(off);
            off += rec;
            continue;
        }
        changed = true;
        off = salvage_at(b, bs, inodes, off, prev);
    }
    changed
}

/// Adds `by` bytes to the record at `p`.
pub fn grow(b: &mut [u8], bs: usize, p: usize, by: usize) {
    let rec = rec_len_at(b, p, bs) + by;
    set_rec_len_at(b, p, rec, bs);
}

/// Directory blocks written by hand, for the unit tests here and of the
/// fixers that edit them.
#[cfg(test)]
pub(crate) mod testing {
    use super::readable;
    use crate::fs::bytes::{le32, put_le16, put_le32};

    pub const BS: usize = 1024;

    /// A block of (inode, name, rec_len) records from offset 0.
    pub fn block(recs: &[(u32, &[u8], usize)]) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        let mut off = 0;
        for &(ino, name, rec) in recs {
            put_le32(&mut b, off, ino);
            put_le16(&mut b, off + 4, rec as u16);
            b[off + 6] = name.len() as u8;
            b[off + 7] = 1;
            b[off + 8..off + 8 + name.len()].copy_from_slice(name);
            off += rec;
        }
        b
    }

    /// The (offset, inode, rec_len) of every record of `b`.
    pub fn chain(b: &[u8]) -> Vec<(usize, u32, usize)> {
        let mut v = Vec::new();
        let mut off = 0;
        while off < b.len() {
            let rec = readable(b, BS, off).expect("readable chain");
            v.push((off, le32(b, off), rec));
            off += rec;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{BS, block, chain};
    use super::*;
    use crate::fs::bytes::put_le16;

    #[test]
    fn bad_rec_len_goes_to_the_previous_entry() {
        let mut b = block(&[(12, b"a", 12), (13, b"b", 12), (14, b"c", 1000)]);
        put_le16(&mut b, 16, 14); // not a multiple of 4
        assert!(salvage(&mut b, BS, 100));
        // Impossible record: the rest of the block goes to "a".
        assert_eq!(chain(&b), vec![(0, 12, BS)]);

        let mut b = block(&[(12, b"a", 12), (13, b"b", 16), (14, b"c", 996)]);
        b[18] = 20; // name longer than its record
        assert!(salvage(&mut b, BS, 100));
        assert_eq!(chain(&b), vec![(0, 12, 28), (28, 14, 996)]);
    }

    #[test]
    fn one_step_goes_on_after_the_absorbed_record() {
        let mut b = block(&[(12, b"a", 12), (13, b"b", 16), (14, b"c", 996)]);
        b[18] = 20;
        assert_eq!(readable(&b, BS, 12), None);
        assert_eq!(salvage_at(&mut b, BS, 100, 12, Some(0)), 28);
        assert_eq!(chain(&b), vec![(0, 12, 28), (28, 14, 996)]);
    }

    #[test]
    fn overrunning_record_is_cut_at_the_end() {
        let mut b = block(&[(12, b"a", 12), (13, b"bb", 2000)]);
        assert!(salvage(&mut b, BS, 100));
        assert_eq!(chain(&b), vec![(0, 12, 12), (12, 13, 1012)]);
    }

    #[test]
    fn no_room_for_a_header_at_the_end() {
        let mut b = block(&[(12, b"a", 12), (13, b"b", 1008)]);
        // 4 bytes left after "b": no header fits.
        assert!(salvage(&mut b, BS, 100));
        assert_eq!(chain(&b), vec![(0, 12, 12), (12, 13, 1012)]);
    }

    #[test]
    fn header_only_record_is_cut_out() {
        let mut b = block(&[(12, b"a", 12), (13, b"b", 8)]);
        let mut rest = block(&[(14, b"c", 1000)]);
        rest.truncate(1004);
        b[20..1024].copy_from_slice(&rest[..1004]);
        assert!(salvage(&mut b, BS, 100));
        let c = chain(&b);
        assert_eq!(c[0], (0, 12, 12));
        assert_eq!(c[1].1, 14);
        assert_eq!(c.iter().map(|r| r.2).sum::<usize>(), BS);
    }

    #[test]
    fn broken_first_record_empties_the_block() {
        let mut b = block(&[(12, b"a", 12)]);
        put_le16(&mut b, 4, 0);
        assert!(salvage(&mut b, BS, 100));
        assert_eq!(chain(&b), vec![(0, 0, BS)]);
        let mut ok = block(&[(12, b"a", BS)]);
        assert!(!salvage(&mut ok, BS, 100));
    }

    #[test]
    fn rest_given_before_a_tail_leaves_a_stray_rec_len() {
        let mut b = block(&[(12, b"a", 12), (13, b"bb", 12), (14, b"c", 988)]);
        put_le16(&mut b, 16, 13);
        let area = &mut b[..BS - 12];
        assert_eq!(salvage_step(area, BS, 100, 12, Some(0)), (BS - 12, true));
        // 13 + 1024 - 1012, in the record "a" now covers.
        assert_eq!(stray_rec_len(area, BS, 12), Some(25));
        assert!(put_stray_rec_len(area, BS, 12));
        assert_eq!(rec_len_at(area, 12, BS), 25);
        assert_eq!(rec_len_at(area, 0, BS), BS - 12);
        // A whole block's walk ends at its end: nothing stray.
        assert_eq!(stray_rec_len(&b, BS, 12), None);
        // No header left for the field.
        assert_eq!(stray_rec_len(&b[..16], BS, 12), None);
    }

    #[test]
    fn odd_area_ends() {
        // An area no record fits exactly: the steps stop.
        let mut b = vec![0xFFu8; 10];
        assert!(salvage(&mut b, BS, 100));
    }
}
