//! Read-ahead for metadata blocks a walk reads one after another: the
//! children of an extent index node, the indirect blocks a double or
//! triple indirect block lists.
//!
//! A walk that reads each child when it reaches it pays the device's full
//! latency per child, one at a time. `Prefetch` reads the next children
//! ahead, as few coalesced requests (and, on a slow device, all in flight
//! at once through `Device::read_many`), into a small per-worker buffer;
//! the walk then takes them from there. The window adapts: it doubles
//! while every block fetched ahead is used and halves when most are not
//! (a walk that stops early, children judged bad), so the memory and the
//! reads it spends follow what the file system rewards.
//!
//! On a fast device (the page cache) requests cost little more than the
//! copy, so only runs of adjacent blocks are fetched there: one request
//! instead of many, nothing speculative.

use super::Device;

/// Smallest and largest window, in blocks. The largest bounds the buffer
/// (128 KiB with 4 KiB blocks, like a pass-1 read) and the requests a
/// slow device gets from one walk at a time.
const MIN_WINDOW: usize = 2;
const MAX_WINDOW: usize = 32;
/// Adjacent blocks read with one request at most (128 KiB at 4 KiB).
const MAX_RUN: usize = 32;
/// On a cold cache, the children a walk will read next that are asked of
/// the kernel (`posix_fadvise(WILLNEED)`) at once, scattered or not: the
/// device then reads them while the walk checks, in as many requests as
/// it can take at a time, instead of one synchronous read per child
/// (a fast device is "fast" by its latency, which a cold virtio disk
/// still passes). Hints cost only page cache.
const HINT_AHEAD: usize = 256;

/// What a prefetcher did: how many blocks it fetched ahead and how many of
/// them the walk used (for `-t` and the tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefetchStats {
    pub fetched: u64,
    pub used: u64,
    pub requests: u64,
    /// Hints given on a cold cache (`posix_fadvise` calls).
    pub hints: u64,
}

/// Blocks read ahead for one level of a walk.
pub struct Prefetch {
    bs: usize,
    window: usize,
    /// Block numbers held, sorted, with their place in `buf` and whether
    /// the walk took them.
    held: Vec<(u64, usize, bool)>,
    buf: Vec<u8>,
    /// The last fetch stopped at the window with more blocks wanted.
    grow_wanted: bool,
    /// The blocks hinted last (sorted): a block among them is not
    /// probed or hinted again.
    hinted: Vec<u64>,
    stats: PrefetchStats,
}

impl Prefetch {
    /// Allocates nothing until the first fetch: most walks never descend.
    pub fn new(block_size: usize) -> Prefetch {
        Prefetch {
            bs: block_size,
            window: MIN_WINDOW * 2,
            held: Vec::new(),
            buf: Vec::new(),
            grow_wanted: false,
            hinted: Vec::new(),
            stats: PrefetchStats::default(),
        }
    }

    /// The block size of the device read next (a scratch space is made
    /// before it knows); what is held is dropped when it changes.
    pub fn set_block_size(&mut self, block_size: usize) {
        if self.bs != block_size {
            self.held.clear();
            self.hinted.clear();
            self.buf.clear();
            self.bs = block_size;
        }
    }

    pub fn window(&self) -> usize {
        self.window
    }

    pub fn stats(&self) -> PrefetchStats {
        self.stats
    }

    /// Forgets what is held, judging the window by it (a walk over a
    /// device whose contents may have changed must start afresh).
    pub fn reset(&mut self) {
        self.adapt();
    }

    /// Fills `out` with block `blk`. `next` lists the blocks the walk will
    /// read after this one, in its order (the following children): when
    /// `blk` is not held, it and a window of them are fetched first.
    /// Errors are those of reading `blk` itself; a failed read ahead only
    /// means the block is read again, alone, when its turn comes.
    pub fn read(
        &mut self,
        dev: &Device,
        blk: u64,
        next: impl Iterator<Item = u64>,
        out: &mut [u8],
    ) -> crate::error::Result<()> {
        if self.take(blk, out) {
            return Ok(());
        }
        self.fetch(dev, blk, next);
        if self.take(blk, out) {
            return Ok(());
        }
        dev.read_at(blk.saturating_mul(self.bs as u64), out)
    }

    fn take(&mut self, blk: u64, out: &mut [u8]) -> bool {
        let Ok(k) = self.held.binary_search_by_key(&blk, |h| h.0) else {
            return false;
        };
        let (_, at, used) = &mut self.held[k];
        let n = out.len().min(self.bs);
        out[..n].copy_from_slice(&self.buf[*at..*at + n]);
        if !*used {
            *used = true;
            self.stats.used += 1;
        }
        true
    }

    /// Drops what is held (judging the window by it) and reads `blk` with
    /// the window's worth of `next`.
    fn fetch(&mut self, dev: &Device, blk: u64, next: impl Iterator<Item = u64>) {
        self.adapt();
        let slow = dev.is_slow();
        let next: Vec<u64> = next.take(HINT_AHEAD.max(self.window)).collect();
        if !slow {
            self.hint_if_cold(dev, blk, &next);
        }
        let mut want: Vec<u64> = Vec::with_capacity(self.window);
        want.push(blk);
        let mut limited = false;
        for b in next {
            if want.len() >= self.window {
                limited = true;
                break;
            }
            // Fast device: only the run of adjacent blocks, which one
            // request reads for the price of one.
            if !slow && b != want[want.len() - 1].wrapping_add(1) {
                break;
            }
            want.push(b);
        }
        if want.len() < 2 {
            // Nothing to gain over the walk's own read.
            return;
        }
        want.sort_unstable();
        want.dedup();
        // Runs of adjacent blocks, each one request.
        let mut runs: Vec<(u64, usize)> = Vec::new();
        for &b in &want {
            match runs.last_mut() {
                Some((start, len)) if *start + *len as u64 == b && *len < MAX_RUN => *len += 1,
                _ => runs.push((b, 1)),
            }
        }
        let total = want.len() * self.bs;
        if self.buf.len() < total {
            self.buf.resize(total, 0);
        }
        let mut reqs: Vec<(u64, &mut [u8])> = Vec::with_capacity(runs.len());
        let mut rest = &mut self.buf[..total];
        for &(start, len) in &runs {
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(len * self.bs);
            rest = tail;
            reqs.push((start.saturating_mul(self.bs as u64), chunk));
        }
        let results = dev.read_many(&mut reqs);
        self.stats.requests += runs.len() as u64;
        let mut at = 0;
        for (&(start, len), r) in runs.iter().zip(results) {
            if r.is_ok() {
                for i in 0..len {
                    self.held.push((start + i as u64, at + i * self.bs, false));
                }
                self.stats.fetched += len as u64;
            }
            at += len * self.bs;
        }
        // `held` was pushed run after run, in block order: sorted.
        self.grow_wanted = limited;
    }

    /// When `blk` was not hinted already and is not in the page cache,
    /// hints it and the next `HINT_AHEAD` children, adjacent ones in one
    /// request. (A slow device reads them with `read_many` instead.)
    fn hint_if_cold(&mut self, dev: &Device, blk: u64, next: &[u64]) {
        if next.is_empty() || self.hinted.binary_search(&blk).is_ok() {
            return;
        }
        let mut probe = [0u8; 512];
        let n = probe.len().min(self.bs);
        if dev.is_cached(blk.saturating_mul(self.bs as u64), &mut probe[..n]) != Some(false) {
            return;
        }
        self.hinted.clear();
        self.hinted.push(blk);
        self.hinted.extend(next.iter().take(HINT_AHEAD));
        self.hinted.sort_unstable();
        self.hinted.dedup();
        let bs = self.bs as u64;
        let mut run: Option<(u64, u64)> = None;
        for &b in &self.hinted {
            run = match run {
                Some((a, z)) if b == z => Some((a, z + 1)),
                other => {
                    if let Some((a, z)) = other {
                        dev.will_need(a.saturating_mul(bs), (z - a) * bs);
                        self.stats.hints += 1;
                    }
                    Some((b, b.saturating_add(1)))
                }
            };
        }
        if let Some((a, z)) = run {
            dev.will_need(a.saturating_mul(bs), (z - a) * bs);
            self.stats.hints += 1;
        }
    }

    /// Judges the blocks fetched last time before dropping them.
    fn adapt(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let used = self.held.iter().filter(|h| h.2).count();
        if used == self.held.len() && self.grow_wanted {
            self.window = (self.window * 2).min(MAX_WINDOW);
        } else if used * 2 < self.held.len() {
            self.window = (self.window / 2).max(MIN_WINDOW);
        }
        self.grow_wanted = false;
        self.held.clear();
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data, small by construction
mod tests {
    use super::*;

    const BS: usize = 16;

    /// 64 blocks of 16 bytes, each filled with its block number.
    fn dev() -> Device {
        Device::from_bytes((0..64u8).flat_map(|b| [b; BS]).collect())
    }

    fn slow(d: &Device) {
        for _ in 0..8 {
            d.note_latency(10_000);
        }
    }

    #[test]
    fn returns_the_right_bytes_and_reads_each_block_once() {
        let d = dev();
        slow(&d);
        let mut p = Prefetch::new(BS);
        let kids = [3u64, 9, 10, 11, 40, 41, 7];
        let mut out = [0u8; BS];
        for (i, &k) in kids.iter().enumerate() {
            p.read(&d, k, kids[i + 1..].iter().copied(), &mut out)
                .unwrap();
            assert_eq!(out, [k as u8; BS]);
        }
        let s = p.stats();
        assert_eq!(s.used, s.fetched, "every block fetched ahead was used");
        assert!(s.requests < kids.len() as u64, "fewer requests than blocks");
        assert_eq!(d.bytes_read(), (kids.len() * BS) as u64);
    }

    #[test]
    fn fast_device_reads_only_adjacent_runs() {
        let d = dev();
        let mut p = Prefetch::new(BS);
        let mut out = [0u8; BS];
        // Scattered children: nothing is fetched ahead.
        p.read(&d, 5, [20u64, 30].into_iter(), &mut out).unwrap();
        assert_eq!(out, [5; BS]);
        assert_eq!(p.stats().fetched, 0);
        // Adjacent ones: one request for the run.
        p.read(&d, 20, [21u64, 22, 30].into_iter(), &mut out)
            .unwrap();
        assert_eq!(out, [20; BS]);
        assert_eq!(p.stats().fetched, 3);
        assert_eq!(p.stats().requests, 1);
    }

    #[test]
    fn window_grows_while_used_and_shrinks_when_not() {
        let d = dev();
        slow(&d);
        let mut p = Prefetch::new(BS);
        let mut out = [0u8; BS];
        let start = p.window();
        // A long walk that uses everything: the window grows to its cap.
        let kids: Vec<u64> = (0..64).collect();
        for (i, &k) in kids.iter().enumerate() {
            p.read(&d, k, kids[i + 1..].iter().copied(), &mut out)
                .unwrap();
            assert_eq!(out, [k as u8; BS]);
        }
        assert!(p.window() > start);
        let grown = p.window();
        // Walks that stop after their first child: the window shrinks.
        for _ in 0..4 {
            p.reset();
            p.read(&d, 0, 1..40u64, &mut out).unwrap();
        }
        p.reset();
        assert!(p.window() < grown);
        assert!(p.window() >= MIN_WINDOW);
    }

    #[test]
    fn a_failed_read_ahead_falls_back_to_the_block_alone() {
        let d = dev();
        slow(&d);
        let mut p = Prefetch::new(BS);
        let mut out = [0u8; BS];
        // Block 100 lies past the end: its request fails, the others hold.
        p.read(&d, 2, [100u64, 3].into_iter(), &mut out).unwrap();
        assert_eq!(out, [2; BS]);
        assert!(p.read(&d, 100, std::iter::empty(), &mut out).is_err());
        p.read(&d, 3, std::iter::empty(), &mut out).unwrap();
        assert_eq!(out, [3; BS]);
    }

    /// A file of `n` 4 KiB blocks, each filled with its number, dropped
    /// from the page cache where the file system lets it be.
    #[allow(unsafe_code)]
    fn cold_file(name: &str, n: u8) -> (std::path::PathBuf, Device) {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::FileExt;
        let path = std::env::temp_dir().join(format!("pfsck-ra-{name}-{}", std::process::id()));
        let f = std::fs::File::create(&path).unwrap();
        for b in 0..n {
            f.write_all_at(&[b; 4096], u64::from(b) * 4096).unwrap();
        }
        f.sync_all().unwrap();
        // SAFETY: an integer-only call on a valid fd.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        (path.clone(), Device::open_read_only(&path).unwrap())
    }

    #[test]
    fn a_cold_cache_hints_scattered_children_and_reads_them_as_before() {
        let (path, d) = cold_file("cold", 64);
        let mut probe = [0u8; 512];
        let cold = d.is_cached(5 * 4096, &mut probe) == Some(false);
        let mut p = Prefetch::new(4096);
        let mut out = vec![0u8; 4096];
        // Scattered children, one past the end of the device: hinted
        // (on a cold cache), never read ahead on a fast device.
        let kids = [5u64, 20, 33, 47, 1000, 60];
        for (i, &k) in kids.iter().enumerate() {
            let r = p.read(&d, k, kids[i + 1..].iter().copied(), &mut out);
            if k == 1000 {
                // A hint past the end changes nothing: the read fails
                // as it did without it.
                assert!(r.is_err());
                continue;
            }
            r.unwrap();
            assert!(out.iter().all(|&b| u64::from(b) == k), "block {k}");
        }
        let s = p.stats();
        assert_eq!(s.fetched, 0, "a fast device reads no scattered block ahead");
        if cold {
            // One hint per child: none adjacent. Asked once, at the first.
            assert_eq!(s.hints, kids.len() as u64, "{s:?}");
        }
        // A warm cache hints nothing.
        let mut warm = Prefetch::new(4096);
        for (i, &k) in kids.iter().enumerate().filter(|&(_, &k)| k != 1000) {
            warm.read(&d, k, kids[i + 1..].iter().copied(), &mut out)
                .unwrap();
        }
        assert_eq!(warm.stats().hints, 0);
        std::fs::remove_file(&path).unwrap();
    }
}
