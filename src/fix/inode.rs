//! Fixes of single inode fields: link count (pass 4), dtime (cleared on
//! inodes in use, set on deleted ones), i_size, i_blocks, flags the inode
//! may not carry (encrypt without a context, casefold) and the checksum of
//! an otherwise valid inode (pass 1).
//!
//! Each fix rewrites the field with the value the check computed (carried
//! in the problem's `num2`), then the inode's checksum with metadata_csum:
//! a changed inode with its old checksum would be a new problem. The inode
//! is read through the overlay, so several fixes of one inode accumulate.

use crate::check::problem::{Code, Problem};
use crate::check::state::State;
use crate::fs::inode::{Inode, InodeMut, flags};
use crate::fs::num::Ino;
use crate::fs::superblock::ro_compat;
use crate::store::overlay::Overlay;
use crate::volume::{Fs, edit as vol};

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
    fn apply(&self, m: &mut InodeMut) {
        match *self {
            Edit::Checksum => {}
            Edit::Links(n) => m.set_links(n),
            Edit::ClearDtime => m.set_dtime(0),
            Edit::SetDtime(t) => m.set_dtime(t),
            Edit::ClearFlags(f) => m.set_flags(m.flags() & !f),
            Edit::Size(n) => {
                m.set_size(n);
                // An inline inode left with no data is no longer inline.
                if n == 0 && m.flags() & flags::INLINE_DATA != 0 {
                    m.set_flags(m.flags() & !flags::INLINE_DATA);
                    m.i_block_mut().fill(0);
                }
            }
            Edit::Blocks(n, huge) => m.set_blocks(n, huge),
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
) -> super::Result<bool> {
    let Some(Ino(ino)) = p.args().ino else {
        return Ok(false);
    };
    if fs.inode_location(Ino(ino)).is_none() {
        return Ok(false);
    }
    let huge = fs.sb.has_ro_compat(ro_compat::HUGE_FILE);
    let change = match (p.code, p.args().num2) {
        (Code::InodeLinkCount | Code::DirLinkOverflowExact, Some(n)) => match u16::try_from(n) {
            Ok(n) => Edit::Links(n),
            Err(_) => return Ok(false),
        },
        (Code::InodeDtimeSet, _) => Edit::ClearDtime,
        (Code::InodeZeroDtimeDeleted, _) => Edit::SetDtime(super::lostfound::now(fs)),
        // A dtime that is an orphan-list link of a list no longer there:
        // e2fsck deletes the inode when it has no links, else keeps it.
        (Code::InodeOrphanInUse, _) => {
            let raw =
                vol::read_inode(fs, overlay, Ino(ino))?.ok_or("inode has no place on disk")?;
            if Inode::parse(&raw).links_count == 0 {
                Edit::SetDtime(super::lostfound::now(fs))
            } else {
                Edit::ClearDtime
            }
        }
        // e2fsck clears the flag the inode may not carry.
        (Code::InodeEncryptNoXattr, _) => Edit::ClearFlags(flags::ENCRYPT),
        (Code::InodeCasefold | Code::InodeCasefoldNonDir, _) => Edit::ClearFlags(flags::CASEFOLD),
        (Code::InodeEaInodeNonReg | Code::InodeEaInodeSpurious, _) => {
            Edit::ClearFlags(flags::EA_INODE)
        }
        (Code::InodeChecksum, _) if fs.metadata_csum() => Edit::Checksum,
        (Code::InodeISize, Some(n)) => {
            if n >= LARGE_FILE_SIZE {
                // Regular files of that size need large_file, which the
                // caller sets; a directory that large is beyond what the
                // fixes handle yet.
                let raw = fs.read_inode_raw(Ino(ino))?;
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
    Ok(vol::edit_inode(fs, overlay, Ino(ino), |m| change.apply(m))?)
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
) -> super::Result<bool> {
    let t = super::lostfound::now(fs);
    let wipe_map = how.reserved_map && ino < fs.geo.first_ino;
    if !vol::edit_inode(fs, overlay, Ino(ino), |m| {
        if how.flags {
            m.set_flags(0);
        }
        m.set_links(0);
        m.set_dtime(t);
        if wipe_map {
            m.i_block_mut().fill(0);
        }
    })? {
        return Ok(false);
    }
    for map in [&state.inode_used, &state.inode_dir] {
        map.clear(Ino(ino));
    }
    Ok(true)
}
