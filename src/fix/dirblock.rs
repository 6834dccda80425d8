//! Pass 2 fixes of one directory block as a whole: salvaging a block whose
//! chain of records breaks (a bad rec_len or name_len, a record running
//! past the end, no room for a header at the end), adding a missing
//! checksum tail where the last record has room for it, removing an
//! entry known by its offset (zero-length names, links to '.'), and an
//! inline directory's size made whole (`fix_inline_size`).
//!
//! Salvage follows e2fsck's rules (`fs::dir_salvage`), the same steps
//! pass 2's walk took on its copy of the block: the entries it keeps were
//! counted there, and the offsets of the problems found after the broken
//! record are those of the salvaged block, which this round's fixes of
//! the block (staged after the salvage) see.

use super::lostfound::dir_seed;
use crate::check::dirblock::{Tail, tail_state};
use crate::check::problem::{Code, Problem};
use crate::check::state::{State, iflag};
use crate::fs::bytes::{le32, put_le32};
use crate::fs::dir_entry::{HEADER_LEN, TAIL_LEN, put_tail_header, rec_len_for};
use crate::fs::dir_entry::{
    INLINE_ENTRIES_AT, inode_at, name_len_at, put_name, set_file_type_at, set_inode_at,
    set_name_len_at, set_rec_len_at,
};
use crate::fs::dir_salvage::{MIN_REC, grow, put_stray_rec_len, readable, salvage};
use crate::fs::inode::field::*;
use crate::fs::num::{Blk, Ino};
use crate::fs::superblock::incompat;
use crate::store::overlay::Overlay;
use crate::volume::Fs;

/// Stages the fix of one block problem; false when it could not be fixed
/// in place (a missing tail without room: the caller rebuilds the
/// directory instead).
pub(super) fn fix(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
) -> super::Result<bool> {
    let (Some(dir), Some(Blk(pblk))) = (p.args().ino, p.args().blk) else {
        return Ok(false);
    };
    let inodes = fs.geo.inodes_count;
    let bs = fs.block_size();
    let at = p.args().num2.map(crate::narrow::to_usize);
    if state.has_iflag(dir, iflag::INLINE) {
        return match (p.code, p.args().num, at) {
            (Code::DirBlockCorrupt, Some(part), _) => edit_inline(fs, overlay, dir, part, |b| {
                let entries = if part == 0 { INLINE_ENTRIES_AT } else { 0 };
                salvage(&mut b[entries..], bs, inodes)
            }),
            (Code::DirEntryBadRecLen, Some(part), Some(off)) => {
                edit_inline(fs, overlay, dir, part, |b| put_stray_rec_len(b, bs, off))
            }
            _ => Ok(false),
        };
    }
    if !writable(fs, state, pblk) {
        return Ok(false);
    }
    let csum = fs.metadata_csum();
    match p.code {
        Code::DirBlockCorrupt => edit(fs, state, overlay, dir, pblk, |b| {
            // The same end the check walked to: before the tail unless
            // the records run cleanly into the tail's place.
            let end = if csum && tail_state(b) != Tail::Missing {
                bs - TAIL_LEN
            } else {
                bs
            };
            let changed = salvage(&mut b[..end], bs, inodes);
            if changed && end < bs {
                put_tail_header(b);
            }
            changed
        }),
        Code::DirBlockNoTail if csum => edit(fs, state, overlay, dir, pblk, insert_tail),
        Code::DirEntryBadRecLen => {
            let Some(off) = at else {
                return Ok(false);
            };
            edit(fs, state, overlay, dir, pblk, |b| {
                let end = if csum && tail_state(b) != Tail::Missing {
                    bs - TAIL_LEN
                } else {
                    bs
                };
                put_stray_rec_len(&mut b[..end], bs, off)
            })
        }
        Code::DirEntryZeroLenName | Code::DirEntryLinkToDot | Code::DirDotSecondEntry => {
            let Some(off) = p.args().num.and_then(|n| usize::try_from(n).ok()) else {
                return Ok(false);
            };
            edit(fs, state, overlay, dir, pblk, |b| {
                let end = if csum && tail_state(b) != Tail::Missing {
                    bs - TAIL_LEN
                } else {
                    bs
                };
                remove_at(&mut b[..end], bs, off)
            })
        }
        _ => Ok(false),
    }
}

/// e2fsck's fix of a missing '.' (its check_dot): the first record of
/// block 0 becomes '.'; one longer than two records is split at 12 bytes,
/// and what follows is kept when it reads as '..' (its name "..\0": a
/// salvage that emptied the first record leaves the old records in place
/// behind it, so the whole chain comes back) and otherwise becomes one
/// empty record. Whether it staged something; false for what it cannot
/// edit in place (inline directories, unwritable blocks), which the
/// caller rebuilds instead.
pub(super) fn fix_dot(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    p: &Problem,
) -> super::Result<bool> {
    let (Some(dir), Some(Blk(pblk))) = (p.args().ino, p.args().blk) else {
        return Ok(false);
    };
    if p.code != Code::DirDotMissing
        || state.has_iflag(dir, iflag::INLINE)
        || !writable(fs, state, pblk)
    {
        return Ok(false);
    }
    let bs = fs.block_size();
    let csum = fs.metadata_csum();
    let ftype = if fs.sb.has_incompat(incompat::FILETYPE) {
        FT_DIR
    } else {
        0
    };
    edit(fs, state, overlay, dir, pblk, |b| {
        let end = if csum && tail_state(b) != Tail::Missing {
            bs - TAIL_LEN
        } else {
            bs
        };
        let b = &mut b[..end];
        let Some(rec) = readable(b, bs, 0) else {
            return false;
        };
        set_inode_at(b, 0, dir);
        // '.', its padding's first byte cleared.
        put_name(b, 0, b".\0", Some(ftype));
        set_name_len_at(b, 0, 1);
        if rec > 2 * MIN_REC {
            set_rec_len_at(b, 0, MIN_REC, bs);
            if b[MIN_REC + HEADER_LEN..MIN_REC + HEADER_LEN + 3] != *b"..\0" {
                set_inode_at(b, MIN_REC, Ino::NONE);
                set_rec_len_at(b, MIN_REC, rec - MIN_REC, bs);
                set_name_len_at(b, MIN_REC, 0);
                set_file_type_at(b, MIN_REC, ftype);
            }
        }
        true
    })
}

/// File type of a directory in an entry.
const FT_DIR: u8 = 2;

/// May a fix rewrite directory block `pblk`? Not outside the file system,
/// and not while another file or the file system's metadata claims it too
/// (pass 1B's fixes decide whose it is first).
pub(super) fn writable(fs: &Fs, state: &State, pblk: u64) -> bool {
    fs.geo.block_in_fs(pblk)
        && !state.block_dup.get(state.cluster(pblk))
        && !state.block_meta.get(state.cluster(pblk))
}

/// Lets `f` change part `part` of an inline directory (0: i_block, the
/// parent's number then entries; 1: the system.data attribute's value,
/// entries) and stages the inode if it did, with the attribute's hash and
/// the inode's checksum.
fn edit_inline(
    fs: &Fs,
    overlay: &mut Overlay,
    dir: Ino,
    part: u64,
    f: impl FnOnce(&mut [u8]) -> bool,
) -> super::Result<bool> {
    let pos = fs
        .inode_offset(dir)
        .ok_or_else(|| format!("inode {dir} lies beyond the addressable range"))?;
    let isize = fs.geo.inode_len();
    let csum = fs.metadata_csum();
    let seed = fs.csum_seed;
    let mut done = false;
    let mut f = Some(f);
    crate::volume::edit::edit_bytes(fs, overlay, pos, isize, |raw| {
        let (range, hash_at, name) = match part {
            0 => (Some((I_BLOCK, I_BLOCK + I_BLOCK_LEN)), None, Vec::new()),
            1 => match crate::fs::xattr::inline_data(raw) {
                Some(d) => (
                    Some(d.value),
                    Some(d.hash_at),
                    raw[d.name.0..d.name.1].to_vec(),
                ),
                None => (None, None, Vec::new()),
            },
            _ => (None, None, Vec::new()),
        };
        if let Some((a, z)) = range.filter(|&(a, z)| a < z && z <= raw.len()) {
            if let Some(f) = f.take() {
                done = f(&mut raw[a..z]);
            }
            // The attribute's hash covers its value (0: not hashed).
            if let Some(h) = hash_at.filter(|&h| done && le32(raw, h) != 0) {
                let v = crate::fs::xattr::entry_hash(&name, &raw[a..z], false);
                put_le32(raw, h, v);
            }
        }
        if done && csum {
            crate::fs::inode::InodeMut(raw).set_checksum(seed, dir);
        }
    })?;
    Ok(done)
}

/// Reads directory block `pblk` through the overlay, lets `f` change it
/// (the whole block), recomputes the checksum of a block with a tail and
/// stages it.
fn edit(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    dir: Ino,
    pblk: u64,
    f: impl FnOnce(&mut [u8]) -> bool,
) -> super::Result<bool> {
    let seed = if fs.metadata_csum() {
        Some(dir_seed(fs, state, overlay, dir)?)
    } else {
        None
    };
    let mut b = crate::volume::edit::read_block(fs, overlay, pblk)?;
    let before = b.clone();
    if !f(&mut b) {
        return Ok(false);
    }
    if let Some(seed) = seed
        && crate::fs::dir_entry::has_tail(&b)
    {
        crate::fs::dir_entry::set_tail_checksum(seed, &mut b);
    }
    if b != before {
        overlay.stage(Blk(pblk), b)?;
    }
    Ok(true)
}

/// Adds a checksum tail to a block whose records run to its end: the last
/// record gives up the 12 bytes if it has them to spare. False when it
/// does not (the directory must be rebuilt).
fn insert_tail(b: &mut [u8]) -> bool {
    let bs = b.len();
    let top = bs - TAIL_LEN;
    let mut off = 0;
    let mut last = None;
    while off < top {
        let Some(rec) = readable(b, bs, off) else {
            return false;
        };
        last = Some((off, rec));
        off += rec;
    }
    let Some((lo, rec)) = last else {
        return false;
    };
    if off == top {
        // The records already stop where the tail goes.
        put_tail_header(b);
        return true;
    }
    // An empty record keeps the smallest valid length; a used one what
    // its name needs.
    let need = if inode_at(b, lo) == Ino::NONE {
        MIN_REC
    } else {
        rec_len_for(name_len_at(b, lo)).max(MIN_REC)
    };
    if off != bs || rec < need + TAIL_LEN {
        return false;
    }
    set_rec_len_at(b, lo, rec - TAIL_LEN, bs);
    b[top..].fill(0);
    put_tail_header(b);
    true
}

/// Removes the used entry at exactly `off`: merged into the record before
/// it, or emptied when first in the block.
fn remove_at(b: &mut [u8], bs: usize, off: usize) -> bool {
    let mut cur = 0;
    let mut prev = None;
    while cur < b.len() {
        let Some(rec) = readable(b, bs, cur) else {
            return false;
        };
        if cur == off {
            if inode_at(b, cur) == Ino::NONE {
                return false;
            }
            match prev {
                Some(p) => grow(b, bs, p, rec),
                None => set_inode_at(b, cur, Ino::NONE),
            }
            return true;
        }
        if cur > off {
            return false;
        }
        prev = Some(cur);
        cur += rec;
    }
    false
}

/// e2fsck's fix of an inline directory whose size (60 bytes of i_block
/// plus its system.data value) is not a multiple of 4 or leaves too
/// little past i_block for one entry: too little is cut to i_block alone;
/// otherwise the value grows to the next multiple of 4 (within its own
/// padding), or, when libext2fs's measure of the in-inode room says it
/// cannot grow, shrinks to the multiple below. i_size follows. False for
/// a value that is not in the inode: libext2fs stores system.data only
/// there, so e2fsck's store fails too (and it asks 0x02004f).
pub(super) fn fix_inline_size(fs: &Fs, overlay: &mut Overlay, p: &Problem) -> super::Result<bool> {
    use crate::fs::xattr::{inline_data, inline_grow_room, set_inline_data_len};
    const IBLOCK: usize = I_BLOCK_LEN;
    const MIN_ENTRY: usize = 12;
    let Some(dir) = p.args().ino else {
        return Ok(false);
    };
    let Some(raw) = crate::volume::edit::read_inode(fs, overlay, dir)? else {
        return Ok(false);
    };
    let Some((a, z)) = inline_data(&raw).map(|d| d.value) else {
        return Ok(false);
    };
    let len = z - a;
    let new = if len > 0 && len < MIN_ENTRY {
        0
    } else if !len.is_multiple_of(4) {
        let up = (len + 3) & !3;
        // Unsigned as libext2fs reckons it: no area is no room.
        let room = inline_grow_room(&raw).unwrap_or(0);
        if up - len > room { up - 4 } else { up }
    } else {
        return Ok(false);
    };
    let mut done = false;
    crate::volume::edit::edit_inode(fs, overlay, dir, |m| {
        done = set_inline_data_len(m.0, new);
        if done {
            m.set_size((IBLOCK + new) as u64);
        }
    })?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::bytes::le16;
    use crate::fs::dir_salvage::testing::{BS, block, chain};

    #[test]
    fn tail_inserted_from_slack() {
        let mut b = block(&[(12, b"a", 12), (13, b"b", 1012)]);
        assert!(insert_tail(&mut b));
        assert!(crate::fs::dir_entry::has_tail(&b));
        assert_eq!(le16(&b, 16), 1000);
        let mut full = block(&[(12, b"a", 12), (13, b"b", 992), (14, b"c", 20)]);
        assert!(!insert_tail(&mut full));
    }

    #[test]
    fn removal_by_offset() {
        let mut b = block(&[(12, b"a", 12), (13, b"", 12), (14, b"c", 1000)]);
        assert!(remove_at(&mut b, BS, 12));
        assert_eq!(chain(&b), vec![(0, 12, 24), (24, 14, 1000)]);
        assert!(!remove_at(&mut b, BS, 12));
    }
}
