//! Journal replay as a repair: the blocks recovery writes home, staged.
//!
//! The check already ran on the file system as it will be after replay
//! (`check::recovery::after_replay` overlays the device with the replayed
//! blocks, the superblock with needs_recovery cleared and the journal
//! superblock reset). A repair writes exactly those bytes: they are taken
//! from the checked view's read overlay, so what is committed is what was
//! checked, and the fixes staged on top of them read the same bytes the
//! passes read. Everything then goes through the one crash-safe commit, so
//! the undo log covers the replay and `--rollback` restores the
//! pre-replay image.
//!
//! The fast-commit replay (`check::fast_commit`) is a second layer of the
//! same view and is staged with it. Left as e2fsck does it but not done
//! here: external journals (not replayed; a
//! repair refuses while needs_recovery stays set). The orphan processing
//! (`check::orphan`) is part of the same view and is staged with it.

use crate::check::Report;
use crate::check::problem::Code;
use crate::fs::num::Blk;
use crate::fs::superblock::{STATE_VALID, incompat};
use crate::io::RangeOverlay;
use crate::store::overlay::{Overlay, Staging};
use crate::volume::Fs;
use std::any::Any;
use std::sync::Arc;

/// The replay the check read through, staged as whole blocks; an empty
/// overlay when the check ran on the disk as it is.
///
/// `fs` must come from a check of the plain device (`check::check_device`
/// on a device without an overlay): then the only read overlay it can
/// carry is the journal replay. Or from a repair's re-check, whose device
/// reads through the earlier rounds' staging: that overlay is returned
/// itself (shared, not copied), with whatever the re-check laid over it.
pub fn staged(fs: &Fs, staging: &Staging) -> super::Result<Arc<Overlay>> {
    let bs = fs.geo.block_size;
    let layers = fs.dev.read_overlays();
    if layers.is_empty() {
        let o = Overlay::with_staging(bs, fs.dev.size(), staging)?;
        return Ok(Arc::new(o));
    }
    // Only a repair puts its staging on a device, lowest; what a re-check
    // lays over it (orphans) is copied on top.
    let mut rest = layers;
    let mut below: Option<Arc<Overlay>> = None;
    if let Some(first) = layers.first() {
        let any: Arc<dyn Any + Send + Sync> = first.clone();
        if let Ok(o) = any.downcast::<Overlay>() {
            below = Some(o);
            rest = &layers[1..];
        }
    }
    if rest.is_empty()
        && let Some(b) = below
    {
        return Ok(b);
    }
    let mut overlay = match below {
        Some(b) => Overlay::over(b),
        None => Overlay::with_staging(bs, fs.dev.size(), staging)?,
    };
    for layer in rest {
        let Some(ranges) = (&**layer as &dyn Any).downcast_ref::<RangeOverlay>() else {
            return Err("the checked view has a read overlay of an unknown kind".into());
        };
        for (off, data) in ranges.ranges() {
            // The recovery view is built from whole blocks; anything else
            // would mean the view did not come from the replay planner.
            if off % u64::from(bs) != 0 || data.len() != bs as usize {
                return Err(format!(
                    "journal replay view has a partial block at byte {off}; not writing it"
                )
                .into());
            }
            // The journal logs superblock and descriptor blocks whole, as
            // the kernel encoded them: the replay writes them as they are.
            overlay
                .stage_encoded(Blk(off / u64::from(bs)), data.to_vec())
                .map_err(|e| format!("staging the journal replay: {e}"))?;
        }
    }
    Ok(Arc::new(overlay))
}

/// What e2fsck writes before it decides anything else, for the runs that
/// stage no fix (clean and not forced, a preen stop that can stage no
/// fix): the replay and the
/// orphans ([`staged`]), and a journal inode it made from the
/// superblock's backup (it looks at the journal first and writes that
/// inode back whenever it may write).
pub fn staged_before_passes(fs: &Fs, staging: &Staging) -> super::Result<Overlay> {
    let mut overlay = Overlay::over(staged(fs, staging)?);
    if crate::check::journal::check(fs, true)
        .iter()
        .any(|p| p.code == Code::JournalInodeFromBackup)
    {
        super::journal_inode::restore_from_backup(fs, &mut overlay)?;
    }
    Ok(overlay)
}

/// Why a repair must not run: the journal needs recovery and is external,
/// so the check ran on the disk as it is, and fixes over it could destroy
/// what the journal would restore. (A damaged internal journal is judged by
/// the journal checks and repaired or reported like any other problem.)
pub fn unrecovered(fs: &Fs) -> Option<String> {
    // Only a journal UUID names an external journal (a device number alone
    // does not: e2fsck then finds the journal inode invalid, and clears it
    // and recovery with it). Found, it was replayed into the view.
    (fs.sb.has_incompat(incompat::RECOVER) && crate::check::journal::external(fs)).then(|| {
        "the journal needs recovery and is external; replaying an external journal is not \
         implemented yet (run e2fsck)"
            .into()
    })
}

/// Did the check read through a journal replay (rather than only through
/// orphan processing, which shares the staged view)?
pub fn journal_replayed(report: &Report) -> bool {
    report
        .problems
        .iter()
        .any(|p| p.code == Code::JournalAfterReplay)
}

/// Does the replay count as a correction for the exit code? e2fsck exits 0
/// after a replay alone, but when recovery reports an error it marks the
/// file system as having errors and then clears that mark after the full
/// check, which it reports as a change (exit 1: e2fsck 1.47.0 -fy on
/// j_corrupt_descr_csum and j_corrupt_revoke_rcount).
pub fn replay_is_correction(report: &Report) -> bool {
    report
        .problems
        .iter()
        .any(|p| p.code == Code::JournalRecoveryFails)
}

/// After a recovery that reported an error, the replayed superblock is
/// marked not cleanly unmounted (see `check::recovery`); e2fsck marks it
/// valid again at the end of the full check it then runs, which this
/// stages over the replay (the state field, checksum redone).
pub fn mark_valid(fs: &Fs, overlay: &mut Overlay) -> super::Result<()> {
    Ok(crate::volume::edit::edit_superblock(fs, overlay, |sb| {
        sb.set_state(sb.state() | STATE_VALID);
    })?)
}
