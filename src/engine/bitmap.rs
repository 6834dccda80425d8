//! Bitmaps and counters shared by all workers without locks.
//!
//! Claims are `fetch_or` on 64-bit words, so there is nothing to merge after
//! a parallel pass and the cost does not depend on fragmentation.
//!
//! Memory: large maps are fresh anonymous mappings, so a page of a map
//! costs resident memory only once a bit in it is set. A map that stays empty over most of its
//! range (duplicate blocks, special file types, flags) costs next to
//! nothing; sizes are still those of the file system.

use super::spill::Spill;
use crate::narrow::to_usize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Zeroed words whose pages cost memory only once written: large arrays
/// are their own anonymous mapping (the kernel's zero pages until a bit is
/// set); small ones come from the allocator. The C allocator cannot be
/// trusted with the large ones: it clears reused heap memory itself, which
/// makes every page of a mostly empty map resident.
pub(crate) struct ZeroedWords {
    ptr: std::ptr::NonNull<AtomicU64>,
    len: usize,
    backing: Backing,
}

/// Where a `ZeroedWords` lives.
enum Backing {
    Heap,
    Anonymous,
    /// A stretch of `--max-memory`'s scratch file.
    Scratch(Arc<Spill>),
}

// SAFETY: the words are atomics, shared as `&[AtomicU64]` only.
#[allow(unsafe_code)]
unsafe impl Send for ZeroedWords {}
#[allow(unsafe_code)]
unsafe impl Sync for ZeroedWords {}

/// Arrays of at least this many bytes get their own mapping.
const MAP_MIN_BYTES: usize = 16 * 1024;

impl ZeroedWords {
    /// `spill`: place the words in its scratch file (a page or more).
    #[allow(unsafe_code)]
    pub(crate) fn new(len: usize, spill: Option<&Arc<Spill>>) -> ZeroedWords {
        let bytes = len
            .checked_mul(std::mem::size_of::<AtomicU64>())
            .expect("map size fits in memory");
        if let Some(s) = spill
            && bytes >= 4096
            && let Some(p) = s.map(bytes)
        {
            return ZeroedWords {
                ptr: p.cast(),
                len,
                backing: Backing::Scratch(Arc::clone(s)),
            };
        }
        if bytes >= MAP_MIN_BYTES {
            // SAFETY: a fresh private anonymous mapping; the result is
            // checked before use and unmapped once, in Drop, with the
            // same length.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED
                && let Some(ptr) = std::ptr::NonNull::new(p as *mut AtomicU64)
            {
                return ZeroedWords {
                    ptr,
                    len,
                    backing: Backing::Anonymous,
                };
            }
        }
        let b: Box<[AtomicU64]> = (0..len).map(|_| AtomicU64::new(0)).collect();
        let ptr = std::ptr::NonNull::new(Box::into_raw(b) as *mut AtomicU64)
            .unwrap_or(std::ptr::NonNull::dangling());
        ZeroedWords {
            ptr,
            len,
            backing: Backing::Heap,
        }
    }
}

impl ZeroedWords {
    /// Bytes of the words in this process's memory now: the pages of a
    /// mapping written (a page only read maps the shared zero page, or a
    /// page of the scratch file's cache: neither is this process's), all
    /// of a heap array.
    pub(crate) fn resident_bytes(&self) -> u64 {
        let bytes = self.len * std::mem::size_of::<AtomicU64>();
        if matches!(self.backing, Backing::Heap) {
            return bytes as u64;
        }
        owned_pages(self.ptr.as_ptr() as usize, bytes).unwrap_or(bytes as u64)
    }
}

/// Bytes of the pages of [addr, addr + bytes) mapped into this process
/// and its own (`/proc/self/pagemap`: present, and mapped exclusively,
/// which the shared zero page never is).
pub(crate) fn owned_pages(addr: usize, bytes: usize) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    const PAGE: usize = 4096;
    const PRESENT: u64 = 1 << 63;
    const EXCLUSIVE: u64 = 1 << 56;
    let f = std::fs::File::open("/proc/self/pagemap").ok()?;
    let (first, n) = (addr / PAGE, bytes.div_ceil(PAGE));
    let mut buf = vec![0u8; 8 * 512];
    let mut owned = 0u64;
    let mut k = 0;
    while k < n {
        let m = (n - k).min(512);
        let b = &mut buf[..8 * m];
        f.read_exact_at(b, ((first + k) * 8) as u64).ok()?;
        owned += b
            .chunks_exact(8)
            .map(|e| u64::from_le_bytes(e.try_into().unwrap_or_default()))
            .filter(|&e| e & PRESENT != 0 && e & EXCLUSIVE != 0)
            .count() as u64;
        k += m;
    }
    Some(owned * PAGE as u64)
}

impl std::ops::Deref for ZeroedWords {
    type Target = [AtomicU64];
    #[allow(unsafe_code)]
    fn deref(&self) -> &[AtomicU64] {
        // SAFETY: ptr points at `len` initialised words (zero pages or a
        // boxed slice) owned by self for its whole life.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ZeroedWords {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: exactly what `new` made: the mapping of len words, or
        // the boxed slice of len words.
        let bytes = self.len * std::mem::size_of::<AtomicU64>();
        unsafe {
            match &self.backing {
                Backing::Anonymous => {
                    libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, bytes);
                }
                Backing::Scratch(s) => s.unmap(self.ptr.cast(), bytes),
                Backing::Heap => drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.ptr.as_ptr(),
                    self.len,
                ))),
            }
        }
    }
}

fn zeroed_words(n: usize, spill: Option<&Arc<Spill>>) -> ZeroedWords {
    ZeroedWords::new(n, spill)
}

pub struct AtomicBitmap {
    words: ZeroedWords,
    len: u64,
}

impl AtomicBitmap {
    pub fn new(len: u64) -> AtomicBitmap {
        AtomicBitmap::new_in(len, None)
    }

    /// A map in `spill`'s scratch file (`--max-memory`), or in memory.
    pub fn new_in(len: u64, spill: Option<&Arc<Spill>>) -> AtomicBitmap {
        let n = usize::try_from(len.div_ceil(64)).expect("bitmap size fits in memory");
        AtomicBitmap {
            words: zeroed_words(n, spill),
            len,
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    /// Bytes of the map in memory now (`-t`'s census).
    pub fn resident_bytes(&self) -> u64 {
        self.words.resident_bytes()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets bit `i`; returns whether it was already set. Out of range: true
    /// (treated as taken, so callers never double-count it as fresh).
    pub fn set(&self, i: u64) -> bool {
        if i >= self.len {
            return true;
        }
        let bit = 1u64 << (i % 64);
        self.words[(i / 64) as usize].fetch_or(bit, Ordering::Relaxed) & bit != 0
    }

    /// Sets the bits of `mask` in word `w` (bits 64w..64w+63); returns
    /// those of them that were already set. Bits past the end count as
    /// set and are not written, as with `set`.
    pub fn set_word(&self, w: u64, mask: u64) -> u64 {
        let first = w.saturating_mul(64);
        if first >= self.len {
            return mask;
        }
        let left = self.len - first;
        let valid = if left < 64 {
            (1u64 << left) - 1
        } else {
            u64::MAX
        };
        let (word, bits) = (&self.words[to_usize(w)], mask & valid);
        // A clear word is set by one compare-and-swap, whose first access
        // writes. fetch_or of a mask is a load before its swap: on a page
        // never touched the load maps the shared zero page, and the write
        // that follows copies it, which flushes the page from every
        // CPU's TLB, an interrupt to each other core the process runs on
        // (-m2 on a fragmented file: one per page of the block map).
        let old = match word.compare_exchange(0, bits, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => 0,
            Err(_) => word.fetch_or(bits, Ordering::Relaxed),
        };
        (old | !valid) & mask
    }

    /// Clears bit `i` (a bit already clear is not written: its page may
    /// never have been touched).
    pub fn clear(&self, i: u64) {
        if self.get(i) {
            let bit = 1u64 << (i % 64);
            self.words[(i / 64) as usize].fetch_and(!bit, Ordering::Relaxed);
        }
    }

    pub fn get(&self, i: u64) -> bool {
        if i >= self.len {
            return false;
        }
        self.words[(i / 64) as usize].load(Ordering::Relaxed) & (1u64 << (i % 64)) != 0
    }

    /// Bits [start, start + 64) as one word (bit k is index start + k);
    /// bits past the end read as 0. For comparing whole runs at a time.
    pub fn word_at(&self, start: u64) -> u64 {
        if start >= self.len {
            return 0;
        }
        let w = (start / 64) as usize;
        let sh = start % 64;
        let lo = self.words[w].load(Ordering::Relaxed) >> sh;
        let hi = if sh == 0 {
            0
        } else {
            self.words
                .get(w + 1)
                .map_or(0, |x| x.load(Ordering::Relaxed) << (64 - sh))
        };
        let v = lo | hi;
        let left = self.len - start;
        if left < 64 {
            v & ((1u64 << left) - 1)
        } else {
            v
        }
    }

    /// Number of set bits in [start, end).
    pub fn count_range(&self, start: u64, end: u64) -> u64 {
        let end = end.min(self.len);
        let mut n = 0;
        let mut i = start;
        while i < end {
            if i.is_multiple_of(64) && i + 64 <= end {
                n += u64::from(
                    self.words[(i / 64) as usize]
                        .load(Ordering::Relaxed)
                        .count_ones(),
                );
                i += 64;
            } else {
                n += u64::from(self.get(i));
                i += 1;
            }
        }
        n
    }

    /// Indices of set bits in [start, end), in increasing order.
    pub fn iter_set(&self, start: u64, end: u64) -> impl Iterator<Item = u64> + '_ {
        let end = end.min(self.len);
        // A word at a time: empty stretches cost one load per 64 bits.
        let mut next = start;
        let (mut word, mut base) = (0u64, 0u64);
        std::iter::from_fn(move || {
            loop {
                if word != 0 {
                    let i = base + u64::from(word.trailing_zeros());
                    word &= word - 1;
                    return (i < end).then_some(i);
                }
                if next >= end {
                    return None;
                }
                base = next & !63;
                word = self.words[(base / 64) as usize].load(Ordering::Relaxed)
                    & (!0u64 << (next % 64));
                next = base + 64;
            }
        })
    }
}

/// Shards of the exact counts of inodes seen three times or more.
const SHARDS: usize = 16;

/// Per-inode counter of directory entries seen, 2 bits per inode: 0, 1, 2,
/// or 3 = "more, see the exact table". Nearly every inode is named once or
/// twice (files, leaf directories), so the dense part is all most inodes
/// cost; the few counted higher (directories with subdirectories, hard
/// links) keep their excess over 2 in small locked hash maps, sharded by
/// inode so workers rarely meet on a lock. Counts read back saturated at
/// u16::MAX (directories with dir_nlink need only "> 65000").
pub struct LinkCounts {
    bits: ZeroedWords,
    len: usize,
    excess: Vec<Mutex<Excess>>,
}

/// One shard of the exact counts, by inode number.
type Excess = HashMap<u32, u32, std::hash::BuildHasherDefault<MixHasher>>;

/// Hashes the excess tables' inode numbers with splitmix64's finalizer,
/// which moves every bit of the hash (bucket and tag) with every bit of
/// the key, so the shards' keys (all equal modulo `SHARDS`) spread. A
/// tree of directories sends every '..' entry here: SipHash under a
/// random key was ~90 instructions of each (issue 17), this ~10. Its keys
/// being known changes nothing that fixed SipHash keys (the extent walk's
/// node sets) would not.
#[derive(Default, Clone, Copy)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = self.0.rotate_left(32) ^ u64::from(n);
    }
}

impl LinkCounts {
    pub fn new(n: usize) -> LinkCounts {
        LinkCounts::new_in(n, None)
    }

    /// Counters in `spill`'s scratch file (`--max-memory`), or in memory.
    pub fn new_in(n: usize, spill: Option<&Arc<Spill>>) -> LinkCounts {
        LinkCounts {
            bits: zeroed_words(n.div_ceil(32), spill),
            len: n,
            excess: (0..SHARDS).map(|_| Mutex::new(Excess::default())).collect(),
        }
    }

    fn shard(&self, i: usize) -> std::sync::MutexGuard<'_, Excess> {
        self.excess[i % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes in memory now: the dense counters' resident pages and the
    /// excess tables' entries (`-t`'s census).
    pub fn resident_bytes(&self) -> u64 {
        let excess: usize = (0..SHARDS).map(|k| self.shard(k).capacity()).sum();
        self.bits.resident_bytes() + (excess * 16) as u64
    }

    /// Adds one reference to `i`.
    pub fn incr(&self, i: usize) {
        if i >= self.len {
            return;
        }
        let w = &self.bits[i / 32];
        let sh = (i % 32) * 2;
        // 0 -> 1 -> 2 -> 3 in the dense part; from 3 on, the excess table.
        // Which thread moves 2 -> 3 does not matter: every increment past
        // 2 adds exactly one to the excess, so the sum is the same.
        let prev = w
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                let c = (v >> sh) & 3;
                (c < 3).then(|| v + (1u64 << sh))
            })
            .unwrap_or_else(|v| v);
        if (prev >> sh) & 3 >= 2 {
            let mut m = self.shard(i);
            let e = m.entry(key(i)).or_insert(0);
            *e = e.saturating_add(1);
        }
    }

    /// Removes one reference from `i` (not concurrently with `incr` of the
    /// same inode: repairs adjust counts after the passes).
    pub fn decr(&self, i: usize) {
        if i >= self.len {
            return;
        }
        let w = &self.bits[i / 32];
        let sh = (i % 32) * 2;
        if (w.load(Ordering::Relaxed) >> sh) & 3 == 3 {
            let mut m = self.shard(i);
            if let Some(e) = m.get_mut(&key(i)) {
                *e -= 1;
                if *e > 0 {
                    return;
                }
                m.remove(&key(i));
            }
        }
        let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
            let c = (v >> sh) & 3;
            (c > 0).then(|| v - (1u64 << sh))
        });
    }

    pub fn get(&self, i: usize) -> u16 {
        if i >= self.len {
            return 0;
        }
        let c = (self.bits[i / 32].load(Ordering::Relaxed) >> ((i % 32) * 2)) & 3;
        if c < 3 {
            return c as u16;
        }
        let e = self.shard(i).get(&key(i)).copied().unwrap_or(1);
        u16::try_from(2 + u64::from(e)).unwrap_or(u16::MAX)
    }
}

/// The overflow map's key for inode `i`: LinkCounts is sized by an inode
/// count (a u32) and `i` is below it, so the number fits.
#[allow(clippy::cast_possible_truncation)]
fn key(i: usize) -> u32 {
    i as u32
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data, small by construction
mod tests {
    use super::*;

    #[test]
    fn bitmap_claims() {
        let b = AtomicBitmap::new(130);
        assert!(!b.set(3));
        assert!(b.set(3));
        assert!(b.set(500));
        assert!(!b.set(129));
        assert_eq!(b.count_range(0, 130), 2);
        assert_eq!(b.iter_set(0, 200).collect::<Vec<_>>(), vec![3, 129]);
        assert_eq!(b.iter_set(4, 129).count(), 0);
        assert_eq!(b.iter_set(3, 4).collect::<Vec<_>>(), vec![3]);
        assert_eq!(b.iter_set(64, 130).collect::<Vec<_>>(), vec![129]);
        let c = AtomicBitmap::new(1000);
        let want: Vec<u64> = (0..1000).filter(|i| i % 7 == 0 || i % 64 == 63).collect();
        for &i in &want {
            c.set(i);
        }
        for (a, z) in [(0, 1000), (1, 999), (63, 65), (100, 100), (640, 2000)] {
            let got: Vec<u64> = c.iter_set(a, z).collect();
            let exp: Vec<u64> = want.iter().copied().filter(|&i| i >= a && i < z).collect();
            assert_eq!(got, exp, "range {a}..{z}");
        }
        assert_eq!(b.word_at(0), 1 << 3);
        assert_eq!(b.word_at(3), 1);
        assert_eq!(b.word_at(100), 1 << 29);
        assert_eq!(b.word_at(129), 1);
        assert_eq!(b.word_at(130), 0);
        b.clear(3);
        assert!(!b.get(3));
    }

    #[test]
    fn link_counts_saturate() {
        let l = LinkCounts::new(2);
        for _ in 0..70000 {
            l.incr(1);
        }
        assert_eq!(l.get(1), u16::MAX);
        l.incr(99);
        assert_eq!(l.get(99), 0);
        assert_eq!(l.get(0), 0);
    }

    #[test]
    fn link_counts_exact_from_threads() {
        let l = LinkCounts::new(100);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..100 {
                        for _ in 0..(i % 7) {
                            l.incr(i);
                        }
                    }
                });
            }
        });
        for i in 0..100 {
            assert_eq!(l.get(i), (4 * (i % 7)) as u16, "inode {i}");
        }
        for _ in 0..5 {
            l.decr(13);
        }
        assert_eq!(l.get(13), 19);
        for _ in 0..30 {
            l.decr(13);
        }
        assert_eq!(l.get(13), 0);
        l.incr(13);
        l.incr(13);
        l.incr(13);
        assert_eq!(l.get(13), 3);
    }
}
