//! Creating the files a repair leaves on disk (undo logs, spill files).
//!
//! pfsck runs as root in directories others may write to (an image's own
//! directory, `/tmp`). A fixed name opened with create+truncate would follow
//! a planted symlink and truncate its target, or reuse a file someone else
//! made and can still read and rewrite. So every file is new: created with
//! `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600, under a name nobody can guess
//! (process id and a random suffix), and removed again if what it was made
//! for fails.

use super::{RepairError, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Names tried before giving up (each collision means someone guessed a
/// random 64-bit suffix, or the clock and pid repeat).
const ATTEMPTS: u32 = 64;

/// 64 bits nobody can predict: std's hash keys come from the kernel's
/// random pool (each `RandomState` a different key), mixed with the clock.
fn random_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(t);
    h.finish()
}

/// Opens a new file at `path` exactly: never an existing file, never
/// through a symlink; owner-only.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Creates a new file named `BASE.PID-RANDOM` (with `BASE` the whole of
/// `base`, directory included), as [`create_new`] does; `what` names it
/// in errors.
pub fn create_unique(base: &Path, what: &str) -> Result<(File, PathBuf)> {
    let mut last = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
    for _ in 0..ATTEMPTS {
        let mut s = base.as_os_str().to_os_string();
        s.push(format!(".{}-{:016x}", std::process::id(), random_suffix()));
        let path = PathBuf::from(s);
        match create_new(&path) {
            Ok(f) => return Ok((f, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
            Err(e) => {
                return Err(RepairError::Io {
                    what: format!("cannot create {what} {}", path.display()),
                    source: e,
                });
            }
        }
    }
    Err(RepairError::Io {
        what: format!("cannot create {what} beside {}", base.display()),
        source: last,
    })
}

/// Removes `path` when dropped, unless [`Self::keep`] was called: a file
/// made for a step that failed does not outlive it.
pub struct RemoveOnDrop {
    path: Option<PathBuf>,
}

impl RemoveOnDrop {
    pub fn new(path: &Path) -> RemoveOnDrop {
        RemoveOnDrop {
            path: Some(path.to_path_buf()),
        }
    }

    pub fn keep(&mut self) {
        self.path = None;
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn unique_files_are_new_private_and_never_followed() {
        let dir = std::env::temp_dir().join(format!("pfsck-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("log.tmp");
        let (_, a) = create_unique(&base, "test file").unwrap();
        let (_, b) = create_unique(&base, "test file").unwrap();
        assert_ne!(a, b);
        let mode = std::fs::metadata(&a).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        let target = dir.join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new(&link).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(dir.join("absent"), &link).unwrap();
        assert!(
            create_new(&link).is_err(),
            "a dangling symlink is not followed"
        );
        assert!(!dir.join("absent").exists());
        {
            let _g = RemoveOnDrop::new(&a);
        }
        assert!(!a.exists());
        let mut g = RemoveOnDrop::new(&b);
        g.keep();
        drop(g);
        assert!(b.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
