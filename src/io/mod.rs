//! Reading the device: positioned reads that many threads can issue at once.
//!
//! `Device` is opened read-only; the only write path (repair) lives elsewhere
//! and takes a different type, so `-n` cannot write by construction.

pub mod writable;

use crate::error::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the bytes come from: a file or block device, or memory (fuzzing
/// and tests).
enum Backend {
    File(File),
    Memory(Vec<u8>),
}

pub struct Device {
    backend: Backend,
    path: PathBuf,
    size: u64,
    bytes_read: AtomicU64,
}

impl Device {
    pub fn open_read_only(path: &Path) -> Result<Device> {
        let file = File::open(path).map_err(|e| Error::Io {
            what: format!("cannot open {}", path.display()),
            source: e,
        })?;
        let size = device_size(&file).map_err(|e| Error::Io {
            what: format!("cannot get size of {}", path.display()),
            source: e,
        })?;
        Ok(Device {
            backend: Backend::File(file),
            path: path.to_path_buf(),
            size,
            bytes_read: AtomicU64::new(0),
        })
    }

    /// A device whose contents are `bytes` (an image held in memory).
    pub fn from_bytes(bytes: Vec<u8>) -> Device {
        Device {
            size: bytes.len() as u64,
            backend: Backend::Memory(bytes),
            path: PathBuf::from("<memory>"),
            bytes_read: AtomicU64::new(0),
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// Fills `buf` from byte `offset`. Reading past the end of the device is
    /// an error (a truncated image), never a short silent read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.size) {
            return Err(Error::Io {
                what: format!(
                    "read of {} bytes at offset {} beyond end of {} ({} bytes)",
                    buf.len(),
                    offset,
                    self.path.display(),
                    self.size
                ),
                source: std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            });
        }
        match &self.backend {
            Backend::File(f) => f.read_exact_at(buf, offset).map_err(|e| Error::Io {
                what: format!("read error at offset {offset} of {}", self.path.display()),
                source: e,
            })?,
            Backend::Memory(m) => {
                // In range: checked against `size` above.
                buf.copy_from_slice(&m[offset as usize..offset as usize + buf.len()]);
            }
        }
        self.bytes_read
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

/// Size of a regular file or a block device (whose metadata length is 0).
fn device_size(file: &File) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let meta = file.metadata()?;
    if meta.is_file() {
        return Ok(meta.len());
    }
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::End(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_past_end_fails() {
        let dir = std::env::temp_dir().join(format!("pfsck-io-{}", std::process::id()));
        std::fs::write(&dir, [7u8; 100]).unwrap();
        let d = Device::open_read_only(&dir).unwrap();
        let mut b = [0u8; 10];
        d.read_at(90, &mut b).unwrap();
        assert_eq!(b, [7u8; 10]);
        assert!(d.read_at(95, &mut b).is_err());
        assert!(d.read_at(u64::MAX, &mut b).is_err());
        std::fs::remove_file(&dir).unwrap();
    }
}
