//! Reflink snapshots of a file system on a loop device whose backing file
//! lives on a file system that shares extents between files (XFS with
//! reflink, btrfs): freeze, clone the backing file's range into an unnamed
//! file beside it (FICLONERANGE into `O_TMPFILE`), thaw. The clone costs
//! metadata only (well under a millisecond), so the freeze lasts what the
//! kernel's own freeze takes (flushing and the journal); the unnamed file
//! disappears with the last descriptor, so nothing is ever left behind.
//! Later writes to the origin are copied on write by the backing file
//! system: the space they take is what the snapshot costs.

use super::target::LoopPart;
use super::watchdog::Guard;
use super::{Hold, Mechanism, OnlineError, Snapshot, Target, fault, sys};
use crate::fs::superblock::{SUPERBLOCK_OFFSET, Superblock};
use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The backing file of a loop device, checked to be the very file the
/// device reads (the path sysfs gives is resolved in this process's mount
/// namespace, where it may name another file).
fn backing_file(l: &LoopPart) -> Result<(PathBuf, File, u64), OnlineError> {
    let dev = Path::new("/dev").join(&l.loop_name);
    let status = File::open(&dev)
        .and_then(|f| sys::loop_status(&f))
        .map_err(|e| {
            OnlineError::Failed(format!(
                "cannot ask {} for its backing file: {e}",
                dev.display()
            ))
        })?;
    let named = fs::read_to_string(format!("/sys/block/{}/loop/backing_file", l.loop_name))
        .map_err(|e| {
            OnlineError::Failed(format!(
                "cannot read the backing file of {}: {e}",
                dev.display()
            ))
        })?;
    let path = PathBuf::from(named.trim_end_matches('\n'));
    let file = File::open(&path).ok().filter(|f| {
        f.metadata()
            .is_ok_and(|m| m.dev() == status.backing_dev && m.ino() == status.backing_ino)
    });
    let Some(file) = file else {
        return Err(OnlineError::Unsupported(format!(
            "the backing file of {} ({}) cannot be opened here (deleted, or in another mount namespace)",
            dev.display(),
            path.display()
        )));
    };
    Ok((path, file, status.offset))
}

/// A name for the backing file system's type, for messages.
fn fs_name(magic: i64) -> String {
    match magic {
        0x5846_5342 => "XFS".into(),
        0x9123_683E => "btrfs".into(),
        0xEF53 => "ext2/ext3/ext4".into(),
        0x0102_1994 => "tmpfs".into(),
        0x6969 => "NFS".into(),
        0x794C_7630 => "overlayfs".into(),
        m => format!("a file system of type {m:#x}"),
    }
}

/// The ext2/3/4 superblock at the start of `f` (a device or image).
fn superblock_of(f: &File) -> io::Result<Superblock> {
    let mut b = vec![0u8; 1024];
    f.read_exact_at(&mut b, SUPERBLOCK_OFFSET)?;
    Ok(Superblock::parse(&b))
}

pub(super) fn take<'a>(
    t: &Target,
    l: &LoopPart,
    guard: &dyn Guard,
    fault_at: Option<&str>,
) -> Result<Snapshot<'a>, OnlineError> {
    let (path, backing, loop_offset) = backing_file(l)?;
    let (magic, bsize) = sys::fs_type_and_block(&backing).map_err(|e| {
        OnlineError::Failed(format!(
            "cannot stat the file system of {}: {e}",
            path.display()
        ))
    })?;
    let on = fs_name(magic);
    let unsupported = |why: String| {
        OnlineError::Unsupported(format!(
            "{} is backed by {} on {on}, which {why}; pfsck --online snapshots loop devices backed by files on XFS (with reflink) or btrfs, and LVM logical volumes",
            t.device.display(),
            path.display()
        ))
    };
    let start = loop_offset + l.start;
    if bsize == 0 || !start.is_multiple_of(bsize) {
        return Err(unsupported(format!(
            "cannot clone from byte {start} (not a multiple of its block size, {bsize})"
        )));
    }
    let file_len = backing
        .metadata()
        .map_err(|e| OnlineError::Failed(format!("cannot stat {}: {e}", path.display())))?
        .len();
    // Clones are whole blocks; to the end of the file when the device
    // reaches it.
    let len = l.size.div_ceil(bsize) * bsize;
    let len = if start + len >= file_len { 0 } else { len };
    let dir = path.parent().unwrap_or(Path::new("/"));
    let snap = sys::tmpfile_in(dir).map_err(|e| {
        unsupported(format!(
            "cannot hold an unnamed file in {} ({e})",
            dir.display()
        ))
    })?;
    // Can it clone at all? Asked of one block now, so that a file system
    // that cannot is refused before anything is frozen.
    sys::clone_range(&snap, &backing, start, bsize)
        .and_then(|()| snap.set_len(0))
        .map_err(|e| unsupported(format!("cannot make reflink copies ({e})")))?;

    let mount = File::open(&t.mount_point).map_err(|e| {
        OnlineError::Failed(format!("cannot open {}: {e}", t.mount_point.display()))
    })?;
    // Most dirty data is written before the freeze, which then has little
    // left to flush: the origin's, then what the loop device wrote to the
    // backing file, which the clone would otherwise write inside the window.
    let _ = sys::syncfs(&mount);
    let _ = backing.sync_data();
    let frozen = freeze_and_clone(t, &mount, &snap, &backing, start, len, guard, fault_at)?;

    // The clone must hold the mounted file system, not some other image
    // of it: same UUID as the device reads now.
    let origin = File::open(&t.device).and_then(|f| superblock_of(&f));
    let copy = superblock_of(&snap);
    match (origin, copy) {
        (Ok(o), Ok(c)) if c.magic == 0xEF53 && c.uuid == o.uuid => {}
        (Err(e), _) | (_, Err(e)) => {
            return Err(OnlineError::Failed(format!(
                "cannot read back the snapshot's superblock: {e}"
            )));
        }
        _ => {
            return Err(OnlineError::Failed(format!(
                "the clone of {} does not hold the file system mounted on {}",
                path.display(),
                t.mount_point.display()
            )));
        }
    }
    Ok(Snapshot {
        mechanism: Mechanism::Reflink,
        path: PathBuf::from(format!("/proc/self/fd/{}", snap.as_raw_fd())),
        of: path.display().to_string(),
        frozen,
        frozen_is_upper_bound: false,
        hold: Hold::File(snap),
    })
}

/// The freeze window: nothing in it allocates much, prints, or waits on
/// anything but the clone. Returns how long the file system was frozen.
#[allow(clippy::too_many_arguments)]
fn freeze_and_clone(
    t: &Target,
    mount: &File,
    snap: &File,
    backing: &File,
    start: u64,
    len: u64,
    guard: &dyn Guard,
    fault_at: Option<&str>,
) -> Result<std::time::Duration, OnlineError> {
    let mp = t.mount_point.display();
    guard
        .arm_thaw(&t.mount_point)
        .map_err(|e| OnlineError::Failed(format!("cannot reach the watchdog: {e}")))?;
    let t0 = Instant::now();
    let frozen = match sys::Frozen::take(mount) {
        Ok(f) => f,
        Err(e) => {
            let _ = guard.disarm_thaw();
            return Err(match e.raw_os_error() {
                Some(libc::EBUSY) => OnlineError::Refused(format!(
                    "{mp} is already frozen (fsfreeze -f, or a backup tool): pfsck does not take or release someone else's freeze; try again once it is thawed"
                )),
                Some(libc::EPERM) | Some(libc::EACCES) => OnlineError::Refused(format!(
                    "freezing {mp} needs CAP_SYS_ADMIN (run as root): {e}"
                )),
                _ => OnlineError::Failed(format!("cannot freeze {mp}: {e}")),
            });
        }
    };
    fault(fault_at, "kill-frozen");
    let cloned = sys::clone_range(snap, backing, start, len);
    let thawed = frozen.thaw();
    let window = t0.elapsed();
    if let Err(e) = thawed {
        // Left armed: the watchdog tries again when pfsck exits.
        return Err(OnlineError::Failed(format!(
            "cannot thaw {mp}: {e}; run fsfreeze -u {mp}"
        )));
    }
    let _ = guard.disarm_thaw();
    cloned.map_err(|e| OnlineError::Failed(format!("cannot clone the backing file: {e}")))?;
    Ok(window)
}
