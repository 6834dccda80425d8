//! The one write path: a device opened for writing.
//!
//! Only the repair commit (`store::commit`) constructs a `WritableDevice`,
//! after it has checked that the file system is not mounted; the constructor
//! is `pub(crate)` so nothing outside the crate can open a device for
//! writing, and `-n` runs never reach it. Block devices are opened with
//! `O_EXCL`, which the kernel turns into an exclusive claim: the open fails
//! with `EBUSY` while the device is mounted or held by another exclusive
//! opener (a second pfsck, mkfs, a device mapper). Image files get an
//! advisory exclusive lock instead, so two pfsck runs cannot commit to the
//! same image at once.
//!
//! A repair holds a [`DeviceLock`] (`flock`, on images and block devices
//! alike, as `fsck -l` does) from before its first read to after its
//! commit: a second repair that checked while the first was writing would
//! report fixes for a file system that no longer exists, and commit them.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// (st_dev, st_ino) of the devices this process holds a [`DeviceLock`]
/// on: its own `WritableDevice` does not lock them again (a second flock
/// from the same process conflicts with the first).
static HELD: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

fn held(id: (u64, u64)) -> bool {
    HELD.lock().map(|h| h.contains(&id)).unwrap_or(false)
}

/// An exclusive advisory lock on a device or image for the whole of a
/// repair; released when dropped.
pub struct DeviceLock {
    _file: File,
    id: (u64, u64),
}

impl DeviceLock {
    /// Locks `path`, waiting up to `wait` for another holder to finish.
    pub fn acquire(path: &Path, wait: std::time::Duration) -> Result<DeviceLock> {
        use std::os::unix::fs::MetadataExt;
        let file = OpenOptions::new()
            .read(true)
            .open(path)
            .map_err(io_err(format!("cannot open {}", path.display())))?;
        let meta = file
            .metadata()
            .map_err(io_err(format!("cannot stat {}", path.display())))?;
        let id = (meta.dev(), meta.ino());
        lock_waiting(
            &file,
            path,
            wait,
            "another program (a second pfsck?) is using it; nothing was checked or changed, \
             try again when it has finished",
        )?;
        if let Ok(mut h) = HELD.lock() {
            h.push(id);
        }
        Ok(DeviceLock { _file: file, id })
    }
}

impl Drop for DeviceLock {
    fn drop(&mut self) {
        if let Ok(mut h) = HELD.lock()
            && let Some(i) = h.iter().position(|x| *x == self.id)
        {
            h.swap_remove(i);
        }
    }
}

pub struct WritableDevice {
    file: File,
    path: PathBuf,
    size: u64,
}

/// Takes `file`'s flock, trying again every 50 ms for up to `wait`;
/// `busy` says why it failed when another holder kept it all along.
fn lock_waiting(file: &File, path: &Path, wait: std::time::Duration, busy: &str) -> Result<()> {
    let start = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < wait => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::Io {
                    what: format!("cannot lock {}: {busy}", path.display()),
                    source: std::io::Error::from(std::io::ErrorKind::WouldBlock),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::Io {
                    what: format!("cannot lock {}", path.display()),
                    source: e,
                });
            }
        }
    }
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

impl WritableDevice {
    /// Opens `path` for reading and writing. Callers must have checked that
    /// the file system is not mounted (see `store::mounted`).
    pub(crate) fn open(path: &Path) -> Result<WritableDevice> {
        Self::open_with(path, true)
    }

    /// Opens a device while it is mounted read-only (the root at boot, or
    /// `-f` on a read-only mount): not exclusively, which the mount would
    /// refuse.
    pub(crate) fn open_mounted(path: &Path) -> Result<WritableDevice> {
        Self::open_with(path, false)
    }

    fn open_with(path: &Path, exclusive: bool) -> Result<WritableDevice> {
        let meta =
            std::fs::metadata(path).map_err(io_err(format!("cannot stat {}", path.display())))?;
        let is_block = meta.file_type().is_block_device();
        if !is_block && !meta.is_file() {
            return Err(Error::Incompatible(format!(
                "{} is neither a block device nor a regular file",
                path.display()
            )));
        }
        let mut opts = OpenOptions::new();
        opts.read(true).write(true);
        if is_block && exclusive {
            // Linux gives O_EXCL without O_CREAT on a block device the
            // meaning "claim exclusively"; on regular files it is undefined,
            // hence only here.
            opts.custom_flags(libc::O_EXCL);
        }
        let file = opts.open(path).map_err(|e| {
            let what = if e.raw_os_error() == Some(libc::EBUSY) {
                format!(
                    "cannot open {} for writing: it is in use (mounted or held by another program)",
                    path.display()
                )
            } else {
                format!("cannot open {} for writing", path.display())
            };
            Error::Io { what, source: e }
        })?;
        let ours = {
            use std::os::unix::fs::MetadataExt;
            held((meta.dev(), meta.ino()))
        };
        if !is_block && !ours {
            // A lock held for an instant is not a second pfsck: a process
            // forked by another thread keeps our descriptions (and their
            // flock) until its exec closes them. Wait a little before
            // calling the image busy.
            lock_waiting(
                &file,
                path,
                std::time::Duration::from_secs(1),
                "another program (a second pfsck?) holds it",
            )?;
        }
        let size = if is_block {
            use std::io::{Seek, SeekFrom};
            let mut f = file
                .try_clone()
                .map_err(io_err(format!("cannot get size of {}", path.display())))?;
            f.seek(SeekFrom::End(0))
                .map_err(io_err(format!("cannot get size of {}", path.display())))?
        } else {
            meta.len()
        };
        Ok(WritableDevice {
            file,
            path: path.to_path_buf(),
            size,
        })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_range(&self, offset: u64, len: usize, verb: &str) -> Result<()> {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|e| e > self.size) {
            return Err(Error::Io {
                what: format!(
                    "{verb} of {len} bytes at offset {offset} beyond end of {} ({} bytes)",
                    self.path.display(),
                    self.size
                ),
                source: std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            });
        }
        Ok(())
    }

    /// Fills `buf` from byte `offset`; never a short read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.check_range(offset, buf.len(), "read")?;
        self.file.read_exact_at(buf, offset).map_err(io_err(format!(
            "read error at offset {offset} of {}",
            self.path.display()
        )))
    }

    /// Writes all of `data` at byte `offset`. Writing past the end is
    /// refused: a repair never grows an image.
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.check_range(offset, data.len(), "write")?;
        self.file.write_all_at(data, offset).map_err(io_err(format!(
            "write error at offset {offset} of {}",
            self.path.display()
        )))
    }

    /// Makes every write so far durable.
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(io_err(format!("cannot sync {}", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_stay_inside_the_device() {
        let path = std::env::temp_dir().join(format!("pfsck-wdev-{}", std::process::id()));
        std::fs::write(&path, [0u8; 100]).unwrap();
        let d = WritableDevice::open(&path).unwrap();
        d.write_at(90, &[1u8; 10]).unwrap();
        assert!(d.write_at(95, &[1u8; 10]).is_err());
        assert!(d.write_at(u64::MAX, &[1u8; 1]).is_err());
        d.sync().unwrap();
        let mut b = [0u8; 10];
        d.read_at(90, &mut b).unwrap();
        assert_eq!(b, [1u8; 10]);
        // The advisory lock keeps a second writer out.
        assert!(WritableDevice::open(&path).is_err());
        drop(d);
        assert!(WritableDevice::open(&path).is_ok());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 100);
        std::fs::remove_file(&path).unwrap();
    }
}
