//! The store: staged block writes and their crash-safe commit, below the
//! write library that fills them and the repair session that runs the
//! rounds.
//!
//! Fixes turn problems into bytes against an [`overlay::Overlay`], which
//! holds every changed block (past a small budget in a spill file beside
//! the undo log) and lets later passes read the fixed state. Nothing
//! reaches the device until [`commit::commit`] runs the protocol:
//! before-images to an undo log (checksummed, fsynced), then the new
//! blocks, then the log marked complete. [`commit::rollback`] restores the
//! before-images, so an interrupted repair ends as either the original
//! image or a finished one.
//!
//! Files: `overlay.rs` (staged writes), `undo.rs` (the log's format, pure),
//! `commit.rs` (the protocol and rollback), `guard.rs` (the commit's refusal
//! of primary superblock and descriptor blocks staged by anything but their
//! encoders), `faults.rs` (the crash-injection
//! hook the protocol runs every write and fsync through), `files.rs`
//! (creating files safely in directories others may write), `mmp.rs`
//! (claiming a multi-mount protection block for a repair, as e2fsck
//! does: the one other write to the device), `mounted.rs` (refusing
//! mounted file systems); here, where the undo log goes.

pub mod commit;
pub mod faults;
pub mod files;
mod guard;
pub mod mmp;
pub mod mounted;
pub mod overlay;
pub mod undo;

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a repair step did not happen. Every variant leaves the device either
/// untouched or recoverable with a rollback; the message says which.
#[derive(Debug)]
pub enum StoreError {
    /// Reading or writing the device or the log failed.
    Io {
        what: String,
        source: std::io::Error,
    },
    /// The file system is mounted (or the device is held by someone else).
    Mounted(String),
    /// The undo log is missing, truncated, corrupt or not a pfsck log.
    BadLog(String),
    /// The protocol refuses: the device is not the one the log was made for,
    /// an interrupted repair must be rolled back first, and the like.
    Refused(String),
    /// A staged block is malformed (wrong size, beyond the device) or the
    /// overlay's size bound was reached.
    Invalid(String),
    /// Injected by a test's [`faults::Faults`]: the process "died" here.
    Crash,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { what, source } => write!(f, "{what}: {source}"),
            StoreError::Mounted(s)
            | StoreError::BadLog(s)
            | StoreError::Refused(s)
            | StoreError::Invalid(s) => write!(f, "{s}"),
            StoreError::Crash => write!(f, "injected crash"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<crate::error::Error> for StoreError {
    fn from(e: crate::error::Error) -> StoreError {
        match e {
            crate::error::Error::Io { what, source } => StoreError::Io { what, source },
            other => StoreError::Invalid(other.to_string()),
        }
    }
}

/// The write library's error: its staging goes through the store, which
/// sits below it, so the conversion lives here and `error` names nothing
/// above it.
impl From<StoreError> for crate::error::Error {
    fn from(e: StoreError) -> crate::error::Error {
        match e {
            StoreError::Io { what, source } => crate::error::Error::Io { what, source },
            other => crate::error::Error::Staging(other.to_string()),
        }
    }
}

impl From<faults::Crash> for StoreError {
    fn from(_: faults::Crash) -> StoreError {
        StoreError::Crash
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// Suffix of the default undo log of an image file.
pub const UNDO_SUFFIX: &str = ".pfsck-undo";

/// Directory of the default undo logs of block devices. The log must not
/// live on the device it protects; an image's own directory is on another
/// file system by construction, a block device's `/dev` directory is not
/// persistent, hence a fixed place.
pub const BLOCK_DEVICE_UNDO_DIR: &str = "/var/lib/pfsck";

/// The undo log used when `--undo` is not given: `IMAGE.pfsck-undo` next to
/// an image file, `/var/lib/pfsck/NAME.pfsck-undo` for a block device
/// (`NAME` being the device's file name, e.g. `sdb1`). `/var/lib/pfsck` is
/// created (owner-only) when missing: a first repair of `/dev/NAME` must
/// not fail for want of it. A failure to create it is left for the spill
/// file or the commit to report.
pub fn default_undo_path(device: &Path) -> PathBuf {
    use std::os::unix::fs::{DirBuilderExt, FileTypeExt};
    let is_block = std::fs::metadata(device)
        .map(|m| m.file_type().is_block_device())
        .unwrap_or(false);
    let name = device
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "device".to_string());
    if is_block {
        let dir = Path::new(BLOCK_DEVICE_UNDO_DIR);
        if !dir.exists() {
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        dir.join(format!("{name}{UNDO_SUFFIX}"))
    } else {
        let mut s = device.as_os_str().to_os_string();
        s.push(UNDO_SUFFIX);
        PathBuf::from(s)
    }
}

/// Where an undo log goes when its chosen directory cannot be written:
/// at boot `/var/lib` is read-only while the root file system is checked,
/// and `/run` is the one writable place (a tmpfs, lost at shutdown, but
/// present for a rollback until then).
pub const RUN_UNDO_DIR: &str = "/run/pfsck";

/// Environment variable that replaces [`RUN_UNDO_DIR`], for tests that
/// simulate a boot without touching the real `/run`.
pub const RUN_UNDO_DIR_ENV: &str = "PFSCK_RUN_DIR";

/// The undo log a repair will write, decided before the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoTarget {
    /// A log at `path`; `moved` names the location that could not be
    /// written and why, when `path` is the fallback.
    Log {
        path: PathBuf,
        moved: Option<(PathBuf, String)>,
    },
    /// No log: neither `wanted` nor the fallback could be written (`why`).
    /// The repair cannot be rolled back.
    Without { wanted: PathBuf, why: String },
}

impl UndoTarget {
    /// The log's path, or the one that was wanted when there is none.
    pub fn path(&self) -> &Path {
        match self {
            UndoTarget::Log { path, .. } => path,
            UndoTarget::Without { wanted, .. } => wanted,
        }
    }
}

/// Decides where the undo log `wanted` goes. When its directory cannot be
/// written: with `may_move`, to the run directory ([`run_undo_dir`]);
/// failing that, with `may_go_without`, nowhere. Otherwise `wanted` is
/// kept and the commit reports why it cannot be written.
pub fn resolve_undo(wanted: &Path, may_move: bool, may_go_without: bool) -> UndoTarget {
    let keep = UndoTarget::Log {
        path: wanted.to_path_buf(),
        moved: None,
    };
    let Err(why) = probe_dir(&parent_of(wanted)) else {
        return keep;
    };
    if !may_move {
        return keep;
    }
    let name = wanted
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| format!("device{UNDO_SUFFIX}").into());
    match run_undo_dir().and_then(|d| probe_dir(&d).map(|()| d)) {
        Ok(dir) => UndoTarget::Log {
            path: dir.join(name),
            moved: Some((wanted.to_path_buf(), why)),
        },
        Err(why2) if may_go_without => UndoTarget::Without {
            wanted: wanted.to_path_buf(),
            why: format!("{why}; {why2}"),
        },
        Err(_) => keep,
    }
}

fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether a new file can be made in `dir`: the only test that answers
/// for read-only mounts, permissions and full inode tables alike.
fn probe_dir(dir: &Path) -> std::result::Result<(), String> {
    match files::create_unique(&dir.join(".pfsck-probe"), "probe file") {
        Ok((_, path)) => {
            let _ = std::fs::remove_file(path);
            Ok(())
        }
        Err(StoreError::Io { source, .. }) => Err(format!("{}: {source}", dir.display())),
        Err(e) => Err(e.to_string()),
    }
}

/// The fallback directory (`$PFSCK_RUN_DIR` or `/run/pfsck`), created
/// owner-only when missing. An existing one is used only when it is a real
/// directory (not a symlink) owned by this user and closed to others: an
/// undo log holds the file system's blocks.
pub fn run_undo_dir() -> std::result::Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = std::env::var_os(RUN_UNDO_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(RUN_UNDO_DIR));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let m = std::fs::symlink_metadata(&dir)
        .map_err(|e| format!("cannot stat {}: {e}", dir.display()))?;
    // The owner of /proc/self is the process's effective user.
    let euid = std::fs::metadata("/proc/self")
        .map_err(|e| format!("cannot stat /proc/self: {e}"))?
        .uid();
    if !m.file_type().is_dir() || m.uid() != euid || m.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a directory owned by this user and closed to others",
            dir.display()
        ));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_or_attended_log_location_is_kept() {
        let dir = std::env::temp_dir();
        let log = dir.join("kept.pfsck-undo");
        let keep = UndoTarget::Log {
            path: log.clone(),
            moved: None,
        };
        assert_eq!(resolve_undo(&log, true, true), keep);
        let missing = Path::new("/no/such/dir/disk.undo");
        assert_eq!(resolve_undo(missing, false, false).path(), missing);
    }

    #[test]
    fn default_log_of_an_image_sits_next_to_it() {
        assert_eq!(
            default_undo_path(Path::new("/no/such/dir/disk.img")),
            PathBuf::from("/no/such/dir/disk.img.pfsck-undo")
        );
    }
}
