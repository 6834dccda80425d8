//! The files pfsck makes beside data it does not own: undo logs, the
//! repair's spill file, `--max-memory`'s scratch file.
//!
//! pfsck runs as root in directories others may write to (an image's own
//! directory, `/tmp`, `/var/tmp`). A fixed name opened with create+truncate
//! would follow a planted symlink and truncate its target, or reuse a file
//! someone else made and can still read and rewrite. So every file is new:
//! created with `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600, under a name nobody
//! can guess (process id and a random suffix). Only std and libc are used
//! here, so every layer may.

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
/// `base`, directory included), as [`create_new`] does. The error names
/// the path that failed, or none when every name was taken.
pub fn create_unique(base: &Path) -> Result<(File, PathBuf), (std::io::Error, Option<PathBuf>)> {
    let mut last = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
    for _ in 0..ATTEMPTS {
        let mut s = base.as_os_str().to_os_string();
        s.push(format!(".{}-{:016x}", std::process::id(), random_suffix()));
        let path = PathBuf::from(s);
        match create_new(&path) {
            Ok(f) => return Ok((f, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err((e, Some(path))),
        }
    }
    Err((last, None))
}

/// A file in `dir` that no name reaches, gone with the process however it
/// ends: `O_TMPFILE`, or where the file system lacks it a new file from
/// [`create_unique`] (named `dir/STEM.PID-RANDOM`) removed at once.
pub fn unlinked(dir: &Path, stem: &str) -> std::io::Result<File> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)
    {
        Ok(f) => return Ok(f),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) => {}
        Err(e) => return Err(e),
    }
    let (f, path) = create_unique(&dir.join(stem)).map_err(|(e, _)| e)?;
    std::fs::remove_file(&path)?;
    Ok(f)
}
