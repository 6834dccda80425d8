//! Creating the files a repair leaves on disk (undo logs, probes), with
//! the repair's errors; `crate::newfile` says why each is new and private,
//! and removed again if what it was made for fails.

use super::{Result, StoreError};
use std::path::{Path, PathBuf};

pub use crate::newfile::create_new;

/// Creates a new file named `BASE.PID-RANDOM` (see
/// `crate::newfile::create_unique`); `what` names it in errors.
pub fn create_unique(base: &Path, what: &str) -> Result<(std::fs::File, PathBuf)> {
    crate::newfile::create_unique(base).map_err(|(source, path)| StoreError::Io {
        what: match path {
            Some(p) => format!("cannot create {what} {}", p.display()),
            None => format!("cannot create {what} beside {}", base.display()),
        },
        source,
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
