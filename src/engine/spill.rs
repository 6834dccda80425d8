//! `--max-memory`: the maps that grow with the file system (inode and
//! block bitmaps, link counters) live in a scratch file instead of
//! anonymous memory, and are dropped from memory whenever the process's
//! resident size passes the cap.
//!
//! Each map is a shared mapping of its own page-aligned stretch of one
//! unlinked file. A hole reads as zeros, so an untouched page costs
//! nothing, as with the anonymous maps. Past the cap, `trim` unmaps every
//! map's pages (`MADV_DONTNEED`: on a shared file mapping the data stays
//! in the page cache, dirty) and starts their writeback; clean page-cache
//! pages are what the kernel may reclaim under a memory limit (a cgroup's
//! `memory.max`), which anonymous memory without swap never is. A page
//! touched again comes back from the page cache, or from the file once
//! reclaimed: the kernel's LRU decides which pages stay, page by page,
//! and a check whose maps fit never pays more than a minor fault per page
//! after each trim. (e2fsck's scratch_files keep a tdb database of
//! counts on disk instead, and go to it on every lookup.)

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Ticks between two looks at the resident size (`tick`).
const TICKS_PER_LOOK: u64 = 32;
/// Small steps (`tick_often`) per tick: a look every 32 × 128 blocks or
/// words of blocks claimed, a few hundred looks for a 64 GiB file.
const SMALL_PER_TICK: u32 = 128;

/// What a run of `--max-memory` did, for `-t` and the JSON report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpillStats {
    /// The cap, in bytes.
    pub cap: u64,
    /// Bytes of maps placed in the scratch file.
    pub mapped_bytes: u64,
    /// Times the resident size was found over the cap and the maps dropped.
    pub trims: u64,
    /// Resident bytes of maps dropped from memory, summed over the trims.
    pub spilled_bytes: u64,
}

/// The scratch file and the maps placed in it.
pub struct Spill {
    file: File,
    cap: u64,
    page: usize,
    /// (address, bytes, offset in the file) of every live map.
    regions: Mutex<Vec<(usize, usize, u64)>>,
    /// Bytes of the file handed out so far (a map's stretch is never
    /// handed out again: once unmapped it is a hole).
    end: Mutex<u64>,
    ticks: AtomicU64,
    mapped: AtomicU64,
    trims: AtomicU64,
    spilled: AtomicU64,
    /// One trim at a time; a worker that finds it taken goes on.
    trimming: Mutex<()>,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spill({:?})", self.stats())
    }
}

/// Where the scratch file goes: `$TMPDIR`, else /var/tmp (not /tmp, often
/// a tmpfs, whose pages are memory again).
pub fn scratch_dir() -> PathBuf {
    std::env::var_os("TMPDIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/var/tmp"), PathBuf::from)
}

impl Spill {
    /// A scratch file in `dir` for maps, to be dropped from memory past
    /// `cap` bytes resident.
    pub fn new(cap: u64, dir: &Path) -> std::io::Result<Spill> {
        let file = crate::newfile::unlinked(dir, ".pfsck-scratch")?;
        #[allow(unsafe_code)]
        // SAFETY: sysconf only reads a configuration value.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&p| p > 0)
            .unwrap_or(4096);
        Ok(Spill {
            file,
            cap,
            page,
            regions: Mutex::new(Vec::new()),
            end: Mutex::new(0),
            ticks: AtomicU64::new(0),
            mapped: AtomicU64::new(0),
            trims: AtomicU64::new(0),
            spilled: AtomicU64::new(0),
            trimming: Mutex::new(()),
        })
    }

    pub fn stats(&self) -> SpillStats {
        SpillStats {
            cap: self.cap,
            mapped_bytes: self.mapped.load(Ordering::Relaxed),
            trims: self.trims.load(Ordering::Relaxed),
            spilled_bytes: self.spilled.load(Ordering::Relaxed),
        }
    }

    /// Maps `bytes` zeroed bytes of the file; None if the file cannot grow
    /// or be mapped (the caller then uses memory).
    #[allow(unsafe_code)]
    pub(crate) fn map(&self, bytes: usize) -> Option<std::ptr::NonNull<u8>> {
        let len = bytes.div_ceil(self.page) * self.page;
        let mut end = self.end.lock().unwrap_or_else(|e| e.into_inner());
        let off = *end;
        let new_end = off.checked_add(len as u64)?;
        self.file.set_len(new_end).ok()?;
        // SAFETY: a fresh shared mapping of [off, off + len) of our own
        // file, which has that length now; checked before use and unmapped
        // once (`unmap`) with the same length.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.file.as_raw_fd(),
                off as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let ptr = std::ptr::NonNull::new(p as *mut u8)?;
        *end = new_end;
        drop(end);
        self.regions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((p as usize, len, off));
        self.mapped.fetch_add(len as u64, Ordering::Relaxed);
        Some(ptr)
    }

    /// Unmaps what `map` returned for `bytes`, and punches a hole where
    /// it was in the file: its pages leave the page cache and its blocks
    /// the disk (a list moved to a larger mapping would otherwise leave
    /// its old copy behind, the file twice its live data).
    #[allow(unsafe_code)]
    pub(crate) fn unmap(&self, ptr: std::ptr::NonNull<u8>, bytes: usize) {
        let len = bytes.div_ceil(self.page) * self.page;
        let addr = ptr.as_ptr() as usize;
        let mut regions = self.regions.lock().unwrap_or_else(|e| e.into_inner());
        let off = regions.iter().find(|r| r.0 == addr).map(|r| r.2);
        regions.retain(|&(a, _, _)| a != addr);
        drop(regions);
        // SAFETY: exactly a mapping `map` made, of `len` bytes, no longer
        // referenced (its owner is being dropped); then a hole punched in
        // the file where it was, our own, which no other map covers.
        unsafe {
            libc::munmap(ptr.as_ptr() as *mut libc::c_void, len);
            if let Some(off) = off {
                // A file system without hole punching keeps the blocks:
                // the scratch file is only larger, never wrong.
                libc::fallocate(
                    self.file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    off as libc::off_t,
                    len as libc::off_t,
                );
            }
        }
    }

    /// The page size mappings are rounded to.
    pub(crate) fn page(&self) -> usize {
        self.page
    }

    /// Drops `len` bytes from `addr` (whole pages of a map of this file)
    /// from memory; their data stays in the file.
    #[allow(unsafe_code)]
    pub(crate) fn drop_pages(&self, addr: *const u8, len: usize) {
        if len == 0 {
            return;
        }
        // SAFETY: the caller passes whole pages of a live shared mapping
        // of our file; madvise(DONTNEED) on it keeps the data in the page
        // cache and the file, and a later access faults it back.
        unsafe {
            libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED);
        }
    }

    /// Bytes of the scratch file in use on its file system (its
    /// allocated blocks; holes cost none).
    pub fn allocated_bytes(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map_or(0, |m| m.blocks() * 512)
    }

    /// Counts one step of work (a unit merged, a unit checked): every
    /// `TICKS_PER_LOOK` steps the resident size is read and the maps
    /// trimmed if it is over the cap.
    pub fn tick(&self) {
        if self
            .ticks
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(TICKS_PER_LOOK)
        {
            self.check();
        }
    }

    /// `tick` for steps too small and too many to count on a shared
    /// counter (a block claimed): counted per thread, a tick every
    /// `SMALL_PER_TICK` of them.
    pub fn tick_often(&self) {
        thread_local! {
            static SMALL: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
        }
        let due = SMALL.with(|c| {
            let n = c.get().wrapping_add(1);
            c.set(n);
            n.is_multiple_of(SMALL_PER_TICK)
        });
        if due {
            self.tick();
        }
    }

    /// Trims the maps now if the resident size is over the cap.
    pub fn check(&self) {
        let Some((rss_kib, _)) = super::budget::memory_kib() else {
            return;
        };
        if rss_kib.saturating_mul(1024) > self.cap {
            self.trim();
        }
    }

    /// Drops every map's pages from this process's memory and starts
    /// writing them to the file, so the page cache may let them go.
    #[allow(unsafe_code)]
    pub fn trim(&self) {
        let Ok(_one) = self.trimming.try_lock() else {
            return;
        };
        let before = super::budget::memory_kib().map_or(0, |m| m.0);
        let regions = self
            .regions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (addr, len, _) in regions {
            // SAFETY: [addr, addr + len) is a live mapping of ours (the
            // region list is updated before a map is unmapped, and maps
            // are only unmapped when their owner, which outlives every
            // user, is dropped); madvise(DONTNEED) on a shared file
            // mapping keeps the data in the page cache.
            unsafe {
                libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED);
            }
        }
        // SAFETY: a plain system call on our own file descriptor.
        unsafe {
            libc::sync_file_range(self.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
        let after = super::budget::memory_kib().map_or(before, |m| m.0);
        self.trims.fetch_add(1, Ordering::Relaxed);
        self.spilled
            .fetch_add(before.saturating_sub(after) * 1024, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::AtomicBitmap;
    use std::sync::Arc;

    #[test]
    fn maps_keep_their_bits_across_trims() {
        let dir = std::env::temp_dir();
        let s = Arc::new(Spill::new(0, &dir).expect("scratch file"));
        let a = AtomicBitmap::new_in(1 << 20, Some(&s));
        let b = AtomicBitmap::new_in(1 << 18, Some(&s));
        for i in (0..1u64 << 20).step_by(4099) {
            a.set(i);
        }
        b.set(77);
        assert!(a.resident_bytes() >= 4096);
        s.check();
        assert_eq!(a.resident_bytes(), 0, "trimmed pages stay mapped");
        let st = s.stats();
        assert_eq!(st.trims, 1);
        assert!(st.mapped_bytes >= (1 << 17) + (1 << 15));
        for i in 0..1u64 << 20 {
            assert_eq!(a.get(i), i % 4099 == 0, "bit {i}");
        }
        assert!(b.get(77) && !b.get(78));
        drop(a);
        assert_eq!(s.regions.lock().unwrap().len(), 1);
    }

    #[test]
    fn an_unmapped_map_leaves_a_hole() {
        let s = Arc::new(Spill::new(0, &std::env::temp_dir()).expect("scratch file"));
        let a = AtomicBitmap::new_in(1 << 23, Some(&s));
        for i in (0..1u64 << 23).step_by(512) {
            a.set(i);
        }
        let full = s.allocated_bytes();
        assert!(full >= 1 << 20, "{full} bytes allocated for 1 MiB of map");
        drop(a);
        assert!(
            s.allocated_bytes() < full / 8,
            "{} bytes still allocated of {full}",
            s.allocated_bytes()
        );
    }
}
