//! Reading the device: positioned reads that many threads can issue at once.
//!
//! `Device` is opened read-only; the only write path (`store::commit`) lives
//! elsewhere and takes a different type, so `-n` cannot write by construction.

pub mod readahead;
pub mod writable;

use crate::error::{Error, Result};
use crate::narrow::to_usize;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Reads in flight at most when the device is slow (`read_many`, and the
/// extra I/O workers passes add): enough to cover a device's latency with
/// requests, as a queue of 16 does for a disk array or FUSE's default.
pub const IO_DEPTH: usize = 16;

/// A device whose requests take longer than this on average (µs) is
/// "slow": worth keeping many requests in flight. Page-cache hits take
/// 1–40 µs, a disk or a delayed device hundreds to thousands.
pub const SLOW_US: u64 = 150;

/// Read buffers start on this boundary (`aligned`). Reading into a buffer
/// 16 bytes past a page boundary (where malloc puts a large one) made the
/// kernel's copy from the page cache 3-4x slower (pass 2's 4 KiB reads on
/// dir50-s0.25: 0.34 s of CPU, 0.09 s aligned): each store aliases,
/// 4 KiB apart, the load just before it.
pub const READ_ALIGN: usize = 4096;

/// Where in `buf` `len` bytes start at a `READ_ALIGN` boundary; `buf`
/// grows as needed (up to `READ_ALIGN` - 1 bytes beyond `len`).
pub fn aligned(buf: &mut Vec<u8>, len: usize) -> std::ops::Range<usize> {
    let need = len.saturating_add(READ_ALIGN - 1);
    if buf.len() < need {
        buf.resize(need, 0);
    }
    let off = (READ_ALIGN - buf.as_ptr() as usize % READ_ALIGN) % READ_ALIGN;
    off..off + len
}

/// Where the bytes come from: a file or block device, or memory (fuzzing
/// and tests).
enum Backend {
    File(File),
    Memory(Vec<u8>),
}

/// Bytes laid over the device's own in every read. The check never
/// writes, so what it must see differently from the disk comes through
/// here: the blocks journal replay and orphan processing would write
/// (`-n` checks the file system as it will be after recovery), and in a
/// repair's re-check the blocks the fixes staged (`store::overlay`,
/// which keeps most of them in a file: hence the fallible `apply`).
///
/// `Any`: an overlay's owner finds its own kind again on a device (a
/// repair continues from the staging its re-check read through).
pub trait ReadOverlay: std::any::Any + Send + Sync {
    /// Replaces the bytes of `buf`, read from byte `offset`, that this
    /// overlay covers.
    fn apply(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

/// A read overlay of byte ranges held in memory (the replay view).
pub struct RangeOverlay {
    /// Byte offset → contents; ranges do not overlap.
    ranges: BTreeMap<u64, Vec<u8>>,
    /// Longest range, to find the ranges that start before a read.
    max_len: u64,
}

pub struct Device {
    backend: Backend,
    /// Read overlays, the lowest first: each one's bytes replace those
    /// of the device and of the overlays below it.
    overlays: Vec<Arc<dyn ReadOverlay>>,
    path: PathBuf,
    size: u64,
    bytes_read: AtomicU64,
    /// Times of the last `LAT_SAMPLES` read requests (µs), a ring.
    latency: [AtomicU64; LAT_SAMPLES],
    reads: AtomicU64,
    /// The file refused `RWF_NOWAIT` once (a file system or driver that
    /// cannot read without blocking, e.g. FUSE): whether data is cached
    /// cannot be asked of it.
    no_nowait: AtomicBool,
    /// Workers in `read_many` now, and the most seen at once: they share
    /// its `IO_DEPTH` readers.
    callers: AtomicUsize,
    most_callers: AtomicUsize,
}

/// Requests whose times decide `is_slow`.
const LAT_SAMPLES: usize = 4;

thread_local! {
    /// Bytes this thread read (with `read_many`'s helper threads), so
    /// overlapping passes can each count their own.
    static THREAD_BYTES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bytes the calling thread has read so far (any device).
pub fn thread_bytes() -> u64 {
    THREAD_BYTES.with(|b| b.get())
}

/// Sets the calling thread's count (to take nested work out of it).
pub fn set_thread_bytes(v: u64) {
    THREAD_BYTES.with(|b| b.set(v));
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
            overlays: Vec::new(),
            path: path.to_path_buf(),
            size,
            bytes_read: AtomicU64::new(0),
            latency: Default::default(),
            reads: AtomicU64::new(0),
            no_nowait: AtomicBool::new(false),
            callers: AtomicUsize::new(0),
            most_callers: AtomicUsize::new(0),
        })
    }

    /// A device whose contents are `bytes` (an image held in memory).
    pub fn from_bytes(bytes: Vec<u8>) -> Device {
        Device {
            size: bytes.len() as u64,
            backend: Backend::Memory(bytes),
            overlays: Vec::new(),
            path: PathBuf::from("<memory>"),
            bytes_read: AtomicU64::new(0),
            latency: Default::default(),
            reads: AtomicU64::new(0),
            no_nowait: AtomicBool::new(false),
            callers: AtomicUsize::new(0),
            most_callers: AtomicUsize::new(0),
        }
    }

    /// The same device read through `ranges` (byte offset → bytes) laid
    /// over what it read so far: reads see those bytes instead. Ranges
    /// must not overlap; a later one that would is dropped. Nothing is
    /// ever written.
    pub fn with_overlay(self, ranges: BTreeMap<u64, Vec<u8>>) -> Device {
        let mut kept: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let mut end_of_last = 0u64;
        for (off, data) in ranges {
            if data.is_empty() || (off < end_of_last && !kept.is_empty()) {
                continue;
            }
            let Some(end) = off.checked_add(data.len() as u64) else {
                continue;
            };
            end_of_last = end;
            kept.insert(off, data);
        }
        if kept.is_empty() {
            return self;
        }
        let max_len = kept.values().map(|d| d.len() as u64).max().unwrap_or(0);
        self.with_read_overlay(Arc::new(RangeOverlay {
            ranges: kept,
            max_len,
        }))
    }

    /// The same device read through `overlay`, laid over the overlays it
    /// has: shared, not copied (a repair's staged blocks).
    pub fn with_read_overlay(mut self, overlay: Arc<dyn ReadOverlay>) -> Device {
        self.overlays.push(overlay);
        self
    }

    /// The read overlays, the lowest first.
    pub fn read_overlays(&self) -> &[Arc<dyn ReadOverlay>] {
        &self.overlays
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

    /// Tells the kernel these bytes will be read soon, so it can fetch them
    /// in the background and merge neighbouring requests: the cheap form of
    /// readahead for scattered blocks (directory blocks in disk order).
    /// A hint only: failures are ignored.
    pub fn will_need(&self, offset: u64, len: u64) {
        if let Backend::File(f) = &self.backend {
            advise_willneed(f, offset, len);
        }
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
            Backend::File(f) => {
                let t = Instant::now();
                let r = f.read_exact_at(buf, offset);
                self.note_latency(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
                r.map_err(|e| Error::Io {
                    what: format!("read error at offset {offset} of {}", self.path.display()),
                    source: e,
                })?
            }
            Backend::Memory(m) => {
                // In range: checked against `size` above.
                buf.copy_from_slice(&m[to_usize(offset)..to_usize(offset) + buf.len()]);
            }
        }
        self.delivered(offset, buf)
    }
}

impl Device {
    /// What every read does with bytes it fetched: the overlays' bytes
    /// over them, and the byte counts (`-t`'s bytes read per pass).
    fn delivered(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        for o in &self.overlays {
            o.apply(offset, buf).map_err(|e| Error::Io {
                what: format!(
                    "read of the staged blocks at offset {offset} of {}",
                    self.path.display()
                ),
                source: e,
            })?;
        }
        self.bytes_read
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        THREAD_BYTES.with(|b| b.set(b.get() + buf.len() as u64));
        Ok(())
    }

    /// Can this device say whether data is in the page cache
    /// (`read_cached`, `is_cached`)? Memory always can; a file until it
    /// refuses `RWF_NOWAIT`.
    pub fn tells_cached(&self) -> bool {
        !self.no_nowait.load(Ordering::Relaxed)
    }

    /// Fills `buf` from byte `offset` only if the data is in the page
    /// cache already (`preadv2` with `RWF_NOWAIT`): `Filled` then;
    /// otherwise how much of its start the cache holds, or that the
    /// device cannot say (`tells_cached`), and the caller reads it
    /// normally. Whether data is cached when it is asked for tells a warm
    /// cache from a cold one, which read times cannot on a virtual disk
    /// whose host caches the image.
    pub fn read_cached(&self, offset: u64, buf: &mut [u8]) -> Result<FromCache> {
        let Some(end) = offset.checked_add(buf.len() as u64) else {
            return Ok(FromCache::Unknown);
        };
        if end > self.size {
            return Ok(FromCache::Unknown);
        }
        match &self.backend {
            Backend::File(f) => {
                if !self.tells_cached() {
                    return Ok(FromCache::Unknown);
                }
                let t = Instant::now();
                match self.nowait(f, offset, buf) {
                    Nowait::Filled => {}
                    Nowait::Missed(n) => return Ok(FromCache::Upto(n)),
                    Nowait::Unsupported => return Ok(FromCache::Unknown),
                }
                // A request served, at cache speed: `is_slow` sees it.
                self.note_latency(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
            }
            Backend::Memory(m) => {
                buf.copy_from_slice(&m[to_usize(offset)..to_usize(offset) + buf.len()]);
            }
        }
        self.delivered(offset, buf)?;
        Ok(FromCache::Filled)
    }

    /// Is the data at `offset` (as much as `scratch` holds) in the page
    /// cache? Reads it into `scratch` with `RWF_NOWAIT` to find out, and
    /// counts nothing as read. None: the device cannot say. Memory-backed
    /// devices hold everything.
    pub fn is_cached(&self, offset: u64, scratch: &mut [u8]) -> Option<bool> {
        let in_range = offset
            .checked_add(scratch.len() as u64)
            .is_some_and(|e| e <= self.size);
        match &self.backend {
            Backend::File(_) if !self.tells_cached() => None,
            Backend::File(f) => {
                Some(in_range && matches!(self.nowait(f, offset, scratch), Nowait::Filled))
            }
            Backend::Memory(_) => Some(in_range),
        }
    }

    /// `pread_nowait`, remembering a refusal.
    fn nowait(&self, f: &File, offset: u64, buf: &mut [u8]) -> Nowait {
        let r = pread_nowait(f, offset, buf);
        if matches!(r, Nowait::Unsupported) {
            self.no_nowait.store(true, Ordering::Relaxed);
        }
        r
    }

    /// Records one request's time.
    fn note_latency(&self, us: u64) {
        let k = to_usize(self.reads.fetch_add(1, Ordering::Relaxed) % LAT_SAMPLES as u64);
        self.latency[k].store(us, Ordering::Relaxed);
    }

    /// The shortest of the last few requests' times, in µs (0 until there
    /// were that many): a device's latency shows in every request, a
    /// thread preempted on a busy machine only in some.
    pub fn latency_us(&self) -> u64 {
        if self.reads.load(Ordering::Relaxed) < LAT_SAMPLES as u64 {
            return 0;
        }
        self.latency
            .iter()
            .map(|l| l.load(Ordering::Relaxed))
            .min()
            .unwrap_or(0)
    }

    /// Do requests take long enough that several should be in flight?
    pub fn is_slow(&self) -> bool {
        self.latency_us() >= SLOW_US
    }

    /// Fills every buffer from its offset. On a slow device up to
    /// `IO_DEPTH` requests are in flight at once (threads issuing them),
    /// otherwise they are read one after the other. One result per request.
    /// Workers calling at once share the `IO_DEPTH` readers: beyond the
    /// device's queue, more threads only cost memory (a stack each).
    pub fn read_many(&self, reqs: &mut [(u64, &mut [u8])]) -> Vec<Result<()>> {
        if reqs.len() < 2 || !self.is_slow() {
            return reqs.iter_mut().map(|(o, b)| self.read_at(*o, b)).collect();
        }
        let callers = self.callers.fetch_add(1, Ordering::Relaxed) + 1;
        // Split by the most callers seen, not those of this instant: the
        // first of several workers would otherwise take every reader.
        let callers = self
            .most_callers
            .fetch_max(callers, Ordering::Relaxed)
            .max(callers);
        // Readers besides the caller, who reads too.
        let helpers = (IO_DEPTH / callers).clamp(1, reqs.len()) - 1;
        let n = reqs.len();
        let next = std::sync::Mutex::new(reqs.iter_mut().enumerate());
        let results: Vec<std::sync::Mutex<Option<Result<()>>>> =
            (0..n).map(|_| std::sync::Mutex::new(None)).collect();
        let read_all = || {
            loop {
                let item = next.lock().unwrap_or_else(|e| e.into_inner()).next();
                let Some((i, (off, buf))) = item else {
                    break;
                };
                let r = self.read_at(*off, buf);
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            }
        };
        let before = thread_bytes();
        std::thread::scope(|s| {
            for _ in 0..helpers {
                s.spawn(read_all);
            }
            read_all();
        });
        let own = thread_bytes() - before;
        self.callers.fetch_sub(1, Ordering::Relaxed);
        let results: Vec<Result<()>> = results
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or(Ok(()))
            })
            .collect();
        // The helper threads' bytes are the caller's (who counted its own).
        let got: u64 = reqs
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.is_ok())
            .map(|((_, b), _)| b.len() as u64)
            .sum();
        THREAD_BYTES.with(|b| b.set(b.get() + got.saturating_sub(own)));
        results
    }
}

impl RangeOverlay {
    /// The ranges (offset, bytes) in offset order.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.ranges.iter().map(|(&k, v)| (k, &v[..]))
    }
}

impl ReadOverlay for RangeOverlay {
    fn apply(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let end = offset.saturating_add(buf.len() as u64);
        let from = offset.saturating_sub(self.max_len.saturating_sub(1));
        for (&start, data) in self.ranges.range(from..end) {
            let stop = start.saturating_add(data.len() as u64);
            let lo = start.max(offset);
            let hi = stop.min(end);
            if lo >= hi {
                continue;
            }
            // lo/hi lie inside both ranges, so these casts fit in usize.
            let dst = &mut buf[to_usize(lo - offset)..to_usize(hi - offset)];
            dst.copy_from_slice(&data[to_usize(lo - start)..to_usize(hi - start)]);
        }
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

/// What a read from the page cache alone found (`Device::read_cached`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FromCache {
    /// All of it: the buffer is filled, as by `read_at`.
    Filled,
    /// The cache holds only this many bytes of its start (0: not even
    /// its first page). Nothing is delivered.
    Upto(usize),
    /// The device cannot say (it refuses `RWF_NOWAIT`, or the range
    /// passes its end).
    Unknown,
}

/// What a read that must not block did.
enum Nowait {
    /// All of the buffer came from the page cache.
    Filled,
    /// Only this many bytes of its start are cached (or the read
    /// failed: 0): read it normally.
    Missed(usize),
    /// The file cannot be read without blocking at all.
    Unsupported,
}

/// One `preadv2(RWF_NOWAIT)` of all of `buf`.
#[allow(unsafe_code)]
fn pread_nowait(f: &File, offset: u64, buf: &mut [u8]) -> Nowait {
    use std::os::fd::AsRawFd;
    let Ok(off) = i64::try_from(offset) else {
        return Nowait::Missed(0);
    };
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: one iovec describing `buf`, which is valid and writable for
    // its length while the call runs; the fd is valid for `f`'s lifetime.
    let n = unsafe { libc::preadv2(f.as_raw_fd(), &iov, 1, off, libc::RWF_NOWAIT) };
    match usize::try_from(n) {
        // A short read means part of it was not cached: read it all again.
        Ok(n) if n == buf.len() => Nowait::Filled,
        Ok(n) => Nowait::Missed(n),
        Err(_) => match std::io::Error::last_os_error().raw_os_error() {
            // Kernels before 4.14 (EINVAL) and files without non-blocking
            // reads (EOPNOTSUPP).
            Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS) => Nowait::Unsupported,
            _ => Nowait::Missed(0),
        },
    }
}

#[allow(unsafe_code)]
fn advise_willneed(f: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(off), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: posix_fadvise only reads its integer arguments; the fd is
    // valid for the lifetime of `f`.
    unsafe {
        libc::posix_fadvise(f.as_raw_fd(), off, len, libc::POSIX_FADV_WILLNEED);
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data, small by construction
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

    #[test]
    fn aligned_ranges_start_on_a_page() {
        let mut buf = Vec::new();
        for len in [0, 1, 4096, 131072] {
            let r = aligned(&mut buf, len);
            assert_eq!(r.len(), len);
            assert_eq!(buf[r.clone()].as_ptr() as usize % READ_ALIGN, 0);
            assert!(buf.len() >= r.end);
        }
    }

    #[test]
    fn cached_reads_come_from_the_page_cache_only() {
        let path = std::env::temp_dir().join(format!("pfsck-io-cached-{}", std::process::id()));
        let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let d = Device::open_read_only(&path).unwrap();
        // Just written: in the page cache.
        let mut b = [0u8; 4096];
        assert!(d.tells_cached());
        assert_eq!(d.is_cached(4096, &mut b), Some(true));
        assert_eq!(d.bytes_read(), 0, "asking reads nothing");
        b.fill(0);
        assert_eq!(d.read_cached(4096, &mut b).unwrap(), FromCache::Filled);
        assert_eq!(&b[..], &data[4096..]);
        assert_eq!(d.bytes_read(), 4096);
        // Past the end: never served, never cached.
        assert_eq!(d.read_cached(8000, &mut b).unwrap(), FromCache::Unknown);
        assert_eq!(d.is_cached(8000, &mut b), Some(false));
        std::fs::remove_file(&path).unwrap();
        // Memory holds everything; the overlay applies.
        let mut ov = BTreeMap::new();
        ov.insert(1, vec![0xAA]);
        let m = Device::from_bytes(vec![1, 2, 3]).with_overlay(ov);
        let mut c = [0u8; 3];
        assert_eq!(m.read_cached(0, &mut c).unwrap(), FromCache::Filled);
        assert_eq!(c, [1, 0xAA, 3]);
        assert_eq!(m.is_cached(0, &mut c), Some(true));
    }

    #[test]
    #[allow(unsafe_code)]
    fn a_partly_cached_read_says_how_much_is_cached() {
        use std::os::fd::AsRawFd;
        let path = std::env::temp_dir().join(format!("pfsck-io-partly-{}", std::process::id()));
        let data = vec![5u8; 3 * 4096];
        let f = File::create(&path).unwrap();
        f.write_all_at(&data, 0).unwrap();
        f.sync_all().unwrap();
        // SAFETY: an integer-only call on a valid fd.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 4096, 4096, libc::POSIX_FADV_DONTNEED) };
        let d = Device::open_read_only(&path).unwrap();
        let mut b = vec![0u8; 3 * 4096];
        // Some file systems (tmpfs) keep the page: all of it is cached.
        match d.read_cached(0, &mut b).unwrap() {
            FromCache::Upto(n) => {
                assert_eq!(n, 4096);
                assert_eq!(d.bytes_read(), 0, "a partial read delivers nothing");
            }
            other => assert_eq!(other, FromCache::Filled),
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn overlay_replaces_overlapping_bytes() {
        let d = Device::from_bytes((0..=255u8).collect());
        let mut ov = BTreeMap::new();
        ov.insert(10, vec![0xAA; 4]);
        ov.insert(20, vec![0xBB; 4]);
        ov.insert(22, vec![0xCC; 4]); // overlaps the previous: dropped
        let d = d.with_overlay(ov);
        let mut b = [0u8; 16];
        d.read_at(8, &mut b).unwrap();
        assert_eq!(&b[..2], &[8, 9]);
        assert_eq!(&b[2..6], &[0xAA; 4]);
        assert_eq!(&b[6..12], &[14, 15, 16, 17, 18, 19]);
        assert_eq!(&b[12..16], &[0xBB; 4]);
        let mut c = [0u8; 2];
        d.read_at(11, &mut c).unwrap();
        assert_eq!(c, [0xAA, 0xAA]);
        d.read_at(24, &mut c).unwrap();
        assert_eq!(c, [24, 25]);
        // A second overlay lies over the first.
        let mut top = BTreeMap::new();
        top.insert(11, vec![0xDD; 2]);
        let d = d.with_overlay(top);
        let mut e = [0u8; 6];
        d.read_at(9, &mut e).unwrap();
        assert_eq!(e, [9, 0xAA, 0xDD, 0xDD, 0xAA, 14]);
        assert_eq!(d.read_overlays().len(), 2);
    }

    #[test]
    fn read_many_fills_every_buffer() {
        let d = Device::from_bytes((0..=255u8).collect());
        // Slow or not, the same bytes land in the same buffers.
        for slow in [false, true] {
            for _ in 0..LAT_SAMPLES {
                d.note_latency(if slow { 10_000 } else { 0 });
            }
            assert_eq!(d.is_slow(), slow);
            let mut bufs = [[0u8; 4]; 40];
            let mut reqs: Vec<(u64, &mut [u8])> = bufs
                .iter_mut()
                .enumerate()
                .map(|(i, b)| ((i * 6) as u64, &mut b[..]))
                .collect();
            let r = d.read_many(&mut reqs);
            assert!(r[..40].iter().take(40).all(|r| r.is_ok()));
            for (i, b) in bufs.iter().enumerate() {
                let o = (i * 6) as u8;
                assert_eq!(b, &[o, o + 1, o + 2, o + 3]);
            }
        }
        let mut b = [0u8; 4];
        let mut reqs: Vec<(u64, &mut [u8])> = vec![(254, &mut b[..])];
        assert!(d.read_many(&mut reqs)[0].is_err());
    }
}
