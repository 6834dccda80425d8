//! The record every repairing run leaves in the superblock, as e2fsck
//! leaves it at the end of a check that may write: the state (valid when
//! the check ends clean), the mount count reset, the time of the check,
//! and the kernel's error record forgotten. Without it, a file system
//! whose mount count or check interval ran out, or that the kernel marked
//! with errors, would be checked in full at every boot.

use crate::check::Fs;
use crate::fs::journal;
use crate::fs::superblock::STATE_VALID;
use crate::store::overlay::Overlay;
use crate::volume::edit::{edit_bytes, edit_superblock};

/// A clock before this is wrong, and e2fsck then leaves the last-check
/// time as it was rather than write a time from the past.
use crate::engine::clock::SANE_TIME;

/// What the record changes that e2fsck reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// A file system not marked valid is now: e2fsck counts that as a
    /// correction (exit 1), though nothing else was fixed.
    pub became_valid: bool,
    /// The journal's error number was cleared: e2fsck then says the file
    /// system was modified, yet exits 0 for it.
    pub journal_errno_cleared: bool,
}

/// Stages the end-of-check record for a check that ended `clean` at
/// `now` (seconds since the epoch).
pub fn stage(fs: &Fs, overlay: &mut Overlay, clean: bool, now: u64) -> super::Result<Recorded> {
    // e2fsck turns an error recorded in the journal into the error state
    // and clears it from the journal; the check counted it already.
    let journal_errno_cleared = crate::check::journal::recorded_errno(fs) != 0;
    if journal_errno_cleared {
        let at = crate::check::journal::journal_inode(fs)
            .and_then(|i| crate::check::journal::first_block(fs, &i))?;
        let offset = at * u64::from(fs.geo.block_size);
        edit_bytes(fs, overlay, offset, journal::SUPERBLOCK_LEN, |j| {
            journal::set_errno(j, 0)
        })?;
    }
    let mut was_valid = true;
    edit_superblock(fs, overlay, |sb| {
        let state = sb.state();
        was_valid = state & STATE_VALID != 0;
        sb.set_state(if clean {
            STATE_VALID
        } else {
            state & !STATE_VALID
        });
        sb.set_mnt_count(0);
        if now >= SANE_TIME {
            sb.set_lastcheck(now);
        }
        sb.clear_error_record();
    })?;
    Ok(Recorded {
        became_valid: clean && !was_valid,
        journal_errno_cleared,
    })
}
