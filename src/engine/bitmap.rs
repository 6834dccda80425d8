//! Bitmaps and counters shared by all workers without locks.
//!
//! Claims are `fetch_or` on 64-bit words, so there is nothing to merge after
//! a parallel pass and the cost does not depend on fragmentation.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

pub struct AtomicBitmap {
    words: Vec<AtomicU64>,
    len: u64,
}

impl AtomicBitmap {
    pub fn new(len: u64) -> AtomicBitmap {
        let n = len.div_ceil(64) as usize;
        let mut words = Vec::with_capacity(n);
        words.resize_with(n, || AtomicU64::new(0));
        AtomicBitmap { words, len }
    }

    pub fn len(&self) -> u64 {
        self.len
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

    pub fn clear(&self, i: u64) {
        if i < self.len {
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
                n += self.words[(i / 64) as usize]
                    .load(Ordering::Relaxed)
                    .count_ones() as u64;
                i += 64;
            } else {
                n += self.get(i) as u64;
                i += 1;
            }
        }
        n
    }

    /// Indices of set bits in [start, end), in increasing order.
    pub fn iter_set(&self, start: u64, end: u64) -> impl Iterator<Item = u64> + '_ {
        let end = end.min(self.len);
        (start..end).filter(move |&i| self.get(i))
    }
}

/// Per-inode counter of directory entries seen. 16 bits saturate at
/// u16::MAX; the rare inode with more references is counted in a side
/// table by the caller (directories with dir_nlink need only "> 65000").
pub struct LinkCounts {
    counts: Vec<AtomicU16>,
}

impl LinkCounts {
    pub fn new(n: usize) -> LinkCounts {
        let mut counts = Vec::with_capacity(n);
        counts.resize_with(n, || AtomicU16::new(0));
        LinkCounts { counts }
    }

    /// Adds one reference to `i`, saturating.
    pub fn incr(&self, i: usize) {
        if let Some(c) = self.counts.get(i) {
            let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_add(1));
        }
    }

    pub fn decr(&self, i: usize) {
        if let Some(c) = self.counts.get(i) {
            let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
        }
    }

    pub fn get(&self, i: usize) -> u16 {
        self.counts.get(i).map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
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
    }
}
