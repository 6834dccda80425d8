//! `pfsck --rollback LOG DEVICE`: put back the before-images of a repair.
//!
//! Asking for a rollback by name is the explicit request that lets a
//! completed repair be undone too; the checks that matter (the log is
//! intact, it belongs to this device, the device is not mounted) are the
//! repair layer's.

use super::{EXIT_OK, EXIT_OPERATIONAL};
use crate::store::commit::{RollbackOutcome, RollbackScope, rollback_with};
use crate::store::faults::NoFaults;
use std::path::Path;

/// `force`: restore blocks changed since the repair too.
pub fn run(log: &Path, device: &Path, force: bool) -> i32 {
    let _lock = match crate::io::writable::DeviceLock::acquire(device, super::repair::LOCK_WAIT) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("pfsck: rollback of {}: {e}", device.display());
            return EXIT_OPERATIONAL;
        }
    };
    let scope = RollbackScope::IncludingComplete;
    match rollback_with(log, device, scope, force, &mut NoFaults) {
        Ok(RollbackOutcome::DeviceUntouched) => {
            outln!(
                "{}: the repair logged in {} never wrote to the device; nothing to restore",
                device.display(),
                log.display()
            );
            EXIT_OK
        }
        Ok(RollbackOutcome::Restored {
            blocks,
            was,
            overwritten,
            unverified,
        }) => {
            if unverified {
                outln!(
                    "{}: {} is an old-format undo log, without the repaired contents: blocks \
                     changed since the repair could not be detected",
                    device.display(),
                    log.display()
                );
            }
            if overwritten > 0 {
                outln!(
                    "{}: --force: {overwritten} blocks changed since the repair were restored too",
                    device.display()
                );
            }
            outln!(
                "{}: restored {blocks} blocks from {} (the repair was {was})",
                device.display(),
                log.display()
            );
            EXIT_OK
        }
        Err(e) => {
            eprintln!("pfsck: rollback of {}: {e}", device.display());
            EXIT_OPERATIONAL
        }
    }
}
