//! Fixes of single inode fields: link count (pass 4), dtime (cleared on
//! inodes in use, set on deleted ones), i_size, i_blocks, flags the inode
//! may not carry (encrypt without a context, casefold) and the checksum of
//! an otherwise valid inode (pass 1).
//!
//! Each fix rewrites the field with the value the check computed (carried
//! in the problem's `num2`), then the inode's checksum with metadata_csum:
//! a changed inode with its old checksum would be a new problem. The inode
//! is read through the overlay, so several fixes of one inode accumulate.

use super::edit_bytes;
use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::bytes::{le16, le32, put_le16, put_le32};
use crate::fs::inode::field::*;
use crate::fs::inode::{GOOD_OLD_INODE_SIZE, Inode, compute_checksum, flags};
use crate::fs::superblock::ro_compat;
use crate::repair::overlay::Overlay;
use crate::volume::Fs;

/// Files this large need the large_file feature.
const LARGE_FILE_SIZE: u64 = 0x8000_0000;

/// One field to rewrite.
enum Edit {
    /// Nothing but the checksum (the inode passed every other check).
    Checksum,
    Links(u16),
    ClearDtime,
    /// A deleted inode gets the deletion time it lacks.
    SetDtime(u32),
    Size(u64),
    /// i_blocks, and whether the high 16 bits exist (huge_file).
    Blocks(u64, bool),
    /// Flags to clear in i_flags.
    ClearFlags(u32),
}

impl Edit {
    fn apply(&self, b: &mut [u8]) {
        match *self {
            Edit::Checksum => {}
            Edit::Links(n) => put_le16(b, I_LINKS_COUNT, n),
            Edit::ClearDtime => put_le32(b, I_DTIME, 0),
            Edit::SetDtime(t) => put_le32(b, I_DTIME, t),
            Edit::ClearFlags(f) => {
                let v = crate::fs::bytes::le32(b, I_FLAGS) & !f;
                put_le32(b, I_FLAGS, v);
            }
            Edit::Size(n) => {
                put_le32(b, I_SIZE_LO, n as u32);
                put_le32(b, I_SIZE_HIGH, (n >> 32) as u32);
                // An inline inode left with no data is no longer inline.
                if n == 0 && le32(b, I_FLAGS) & flags::INLINE_DATA != 0 {
                    put_le32(b, I_FLAGS, le32(b, I_FLAGS) & !flags::INLINE_DATA);
                    b[I_BLOCK..I_BLOCK + 60].fill(0);
                }
            }
            Edit::Blocks(n, huge) => {
                put_le32(b, I_BLOCKS_LO, n as u32);
                if huge {
                    put_le16(b, I_BLOCKS_HIGH, (n >> 32) as u16);
                }
            }
        }
    }
}

/// Stages the fix of `p`, one of `super::INODE`'s codes. Returns false when
/// the problem lacks what the fix needs (then it is left as it is). Sets
/// `large_file` when the fix makes a regular file 2 GiB or larger (the
/// superblock then needs the feature).
pub(super) fn fix(
    fs: &Fs,
    overlay: &mut Overlay,
    p: &Problem,
    large_file: &mut bool,
) -> Result<bool, String> {
    let Some(ino) = p.args().ino else {
        return Ok(false);
    };
    if fs.inode_location(ino).is_none() {
        return Ok(false);
    }
    let huge = fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
    let change = match (p.code, p.args().num2) {
        (Code::InodeLinkCount, Some(n)) => match u16::try_from(n) {
            Ok(n) => Edit::Links(n),
            Err(_) => return Ok(false),
        },
        (Code::InodeDtimeSet, _) => Edit::ClearDtime,
        (Code::InodeZeroDtimeDeleted, _) => Edit::SetDtime(super::lostfound::now()),
        // A dtime that is an orphan-list link of a list no longer there:
        // e2fsck deletes the inode when it has no links, else keeps it.
        (Code::InodeOrphanInUse, _) => {
            let raw = read(fs, overlay, ino)?.ok_or("inode has no place on disk")?;
            if le16(&raw, I_LINKS_COUNT) == 0 {
                Edit::SetDtime(super::lostfound::now())
            } else {
                Edit::ClearDtime
            }
        }
        // e2fsck clears the flag the inode may not carry.
        (Code::InodeEncryptNoXattr, _) => Edit::ClearFlags(flags::ENCRYPT),
        (Code::InodeCasefold | Code::InodeCasefoldNonDir, _) => Edit::ClearFlags(flags::CASEFOLD),
        (Code::InodeChecksum, _) if fs.metadata_csum() => Edit::Checksum,
        (Code::InodeISize, Some(n)) => {
            if n >= LARGE_FILE_SIZE {
                // Regular files of that size need large_file, which the
                // caller sets; a directory that large is beyond what the
                // fixes handle yet.
                let raw = fs.read_inode_raw(ino).map_err(|e| e.to_string())?;
                if !Inode::parse(&raw).is_reg() {
                    return Ok(false);
                }
                *large_file = true;
            }
            Edit::Size(n)
        }
        // Without huge_file only the low 32 bits exist; a count that does
        // not fit is not a value we can write.
        (Code::InodeIBlocks, Some(n)) if n >> if huge { 48 } else { 32 } == 0 => {
            Edit::Blocks(n, huge)
        }
        _ => return Ok(false),
    };
    edit(fs, overlay, ino, |b| change.apply(b))
}

/// Byte position of inode `ino` on the device.
fn position(fs: &Fs, ino: u32) -> Option<u64> {
    let (blk, off) = fs.inode_location(ino)?;
    blk.checked_mul(u64::from(fs.geo.block_size))?
        .checked_add(off as u64)
}

/// Inode `ino` as the fixes staged so far leave it; None when it lies
/// outside the inode tables.
pub(super) fn read(fs: &Fs, overlay: &Overlay, ino: u32) -> Result<Option<Vec<u8>>, String> {
    let Some(pos) = position(fs, ino) else {
        return Ok(None);
    };
    let mut b = vec![0u8; fs.geo.inode_size as usize];
    overlay
        .read_at(&fs.dev, pos, &mut b)
        .map_err(|e| format!("cannot read inode {ino}: {e}"))?;
    Ok(Some(b))
}

/// Lets `change` rewrite inode `ino` (read through the overlay), then
/// stores its checksum with metadata_csum and stages the block. False when
/// the inode lies outside the inode tables.
pub(super) fn edit(
    fs: &Fs,
    overlay: &mut Overlay,
    ino: u32,
    change: impl FnOnce(&mut [u8]),
) -> Result<bool, String> {
    let Some(pos) = position(fs, ino) else {
        return Ok(false);
    };
    let csum = fs.metadata_csum();
    let seed = fs.csum_seed;
    edit_bytes(fs, overlay, pos, fs.geo.inode_size as usize, |b| {
        change(b);
        if csum {
            set_checksum(seed, ino, b);
        }
    })?;
    Ok(true)
}

/// What releasing an inode also wipes.
#[derive(Clone, Copy, Default)]
pub(super) struct Release {
    /// i_flags to 0 (e2fsck's clear_inode).
    pub flags: bool,
    /// The block map of a reserved inode: those are judged whatever their
    /// link count, so the map must go or the next check finds it again.
    pub reserved_map: bool,
}

/// Frees inode `ino` as e2fsck does (no links, a deletion time, the
/// checksum redone) and takes it out of `state`'s in-use maps, which the
/// summary rebuilt last reads; the next round's check sees it unused and
/// its blocks free. False when the inode has no place on disk.
pub(super) fn release(
    fs: &Fs,
    state: &State,
    overlay: &mut Overlay,
    ino: u32,
    how: Release,
) -> Result<bool, String> {
    let t = super::lostfound::now();
    let wipe_map = how.reserved_map && ino < fs.geo.first_ino;
    if !edit(fs, overlay, ino, |b| {
        if how.flags {
            put_le32(b, I_FLAGS, 0);
        }
        put_le16(b, I_LINKS_COUNT, 0);
        put_le32(b, I_DTIME, t);
        if wipe_map {
            b[I_BLOCK..I_BLOCK + I_BLOCK_LEN].fill(0);
        }
    })? {
        return Ok(false);
    }
    for map in [&state.inode_used, &state.inode_dir] {
        map.clear(ino as u64);
    }
    Ok(true)
}

/// Stores the checksum inode `ino` should carry (the high half only where
/// the inode has room for it).
pub(super) fn set_checksum(seed: u32, ino: u32, b: &mut [u8]) {
    let c = compute_checksum(seed, ino, b);
    put_le16(b, I_CHECKSUM_LO, c as u16);
    if b.len() > GOOD_OLD_INODE_SIZE && le16(b, I_EXTRA_ISIZE) >= 4 {
        put_le16(b, I_CHECKSUM_HI, (c >> 16) as u16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_round_trips() {
        let mut b = vec![0u8; 256];
        put_le16(&mut b, I_EXTRA_ISIZE, 32);
        set_checksum(7, 12, &mut b);
        let c = compute_checksum(7, 12, &b);
        assert_eq!(u32::from(le16(&b, I_CHECKSUM_LO)), c & 0xFFFF);
        assert_eq!(u32::from(le16(&b, I_CHECKSUM_HI)), c >> 16);
    }
}
