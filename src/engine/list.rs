//! Lists that grow with the file system (a word or two per directory) and
//! are written once, then only read: with `--max-memory` they move to the
//! scratch file once built (`ScratchList::settle`), where `Spill::trim`
//! drops them from memory with the maps.
//!
//! A list is built in memory as a `Vec` and copied out whole: the lists
//! are filled by merging in order, sorted, or deduplicated, which a file
//! mapping of fixed size would not make simpler.

use super::spill::Spill;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A list of plain values in memory, or in `--max-memory`'s scratch file.
pub struct ScratchList<T: Copy> {
    at: At<T>,
}

enum At<T> {
    Heap(Vec<T>),
    /// `len` values at `ptr`, a mapping `Spill::map` made for `cap`.
    Scratch {
        ptr: std::ptr::NonNull<T>,
        len: usize,
        cap: usize,
        spill: Arc<Spill>,
    },
}

// SAFETY: the mapping is owned by the list alone, like a Vec's buffer.
#[allow(unsafe_code)]
unsafe impl<T: Copy + Send> Send for ScratchList<T> {}
#[allow(unsafe_code)]
unsafe impl<T: Copy + Sync> Sync for ScratchList<T> {}

impl<T: Copy> ScratchList<T> {
    pub const fn new() -> ScratchList<T> {
        ScratchList {
            at: At::Heap(Vec::new()),
        }
    }

    /// `v` in `spill`'s scratch file if there is one and `v` fills at
    /// least a page (a smaller list, or a file that cannot grow, stays
    /// in memory).
    pub fn settle(v: Vec<T>, spill: Option<&Arc<Spill>>) -> ScratchList<T> {
        match spill {
            Some(s) if std::mem::size_of_val(v.as_slice()) >= 4096 => {
                let Some(l) = Self::copy_to(&v, v.len(), s, false) else {
                    return ScratchList { at: At::Heap(v) };
                };
                // Lists are settled one after another, each made from
                // others read out of the file (the tree of paths: five,
                // a word a directory each but the names): a look after
                // each, not only once they are all made.
                drop(v);
                s.check();
                l
            }
            _ => ScratchList { at: At::Heap(v) },
        }
    }

    /// `v` in a new mapping of room for `cap` values; None if the file
    /// cannot grow. The copy's pages are dropped from memory as they are
    /// written (their data stays in the file), and with `v_mapped` (`v`
    /// is a mapping of `s`'s file: a list moving to a larger one) so are
    /// `v`'s as they are read: a move or a settle holds a piece at a time,
    /// not the whole list (dir50-1k at 10M inodes under a 160 MiB cap: a
    /// 50 MiB step of the resident size when the directory blocks moved).
    #[allow(unsafe_code)]
    fn copy_to(v: &[T], cap: usize, s: &Arc<Spill>, v_mapped: bool) -> Option<ScratchList<T>> {
        let ptr = s.map(cap * std::mem::size_of::<T>())?.cast::<T>();
        let size = std::mem::size_of::<T>().max(1);
        let piece = ((1 << 20) / size).max(1);
        let mut dropped = 0usize;
        for start in (0..v.len()).step_by(piece) {
            let n = piece.min(v.len() - start);
            // SAFETY: the mapping is page-aligned (so aligned for T), room
            // for `cap` >= `v.len()` values, fresh, and does not overlap `v`.
            unsafe {
                std::ptr::copy_nonoverlapping(v.as_ptr().add(start), ptr.as_ptr().add(start), n);
            }
            // Whole pages copied so far (both start a page-aligned mapping,
            // or `v` is in memory and only the copy's pages go).
            let done = (start + n) * size / s.page() * s.page();
            let copy = ptr.as_ptr().cast::<u8>().wrapping_add(dropped);
            s.drop_pages(copy, done - dropped);
            if v_mapped {
                s.drop_pages(
                    v.as_ptr().cast::<u8>().wrapping_add(dropped),
                    done - dropped,
                );
            }
            dropped = done;
        }
        Some(ScratchList {
            at: At::Scratch {
                ptr,
                len: v.len(),
                cap,
                spill: Arc::clone(s),
            },
        })
    }

    /// Appends `xs`; with `spill`, a list of a page or more lives in
    /// its scratch file, moved to a mapping twice as large when full.
    #[allow(unsafe_code)]
    pub fn extend_from_slice(&mut self, xs: &[T], spill: Option<&Arc<Spill>>) {
        let len = self.len();
        let need = len + xs.len();
        let Some(s) = spill.filter(|_| need * std::mem::size_of::<T>() >= 4096) else {
            self.vec_mut().extend_from_slice(xs);
            return;
        };
        let room = match &self.at {
            At::Scratch { cap, .. } => *cap,
            At::Heap(_) => 0,
        };
        if need > room {
            let cap = need
                .max(room * 2)
                .max(4096 / std::mem::size_of::<T>().max(1));
            match Self::copy_to(self, cap, s, room > 0) {
                Some(moved) => {
                    // The old mapping goes (its stretch of the file a
                    // hole); the copy made the new one resident, up to
                    // the whole list: over the cap, dropped now.
                    *self = moved;
                    s.check();
                }
                None => {
                    self.vec_mut().extend_from_slice(xs);
                    return;
                }
            }
        }
        if let At::Scratch { ptr, len, .. } = &mut self.at {
            // SAFETY: `need` <= the mapping's room; the values past
            // `len` are the mapping's own and not yet read.
            unsafe {
                std::ptr::copy_nonoverlapping(xs.as_ptr(), ptr.as_ptr().add(*len), xs.len());
            }
            *len = need;
        }
    }

    /// The list as a `Vec` to change its length (one taken from the
    /// scratch file is copied back to memory first).
    pub fn vec_mut(&mut self) -> &mut Vec<T> {
        if let At::Scratch { .. } = self.at {
            // The mapping is dropped with the list it was (`Drop`).
            let v = self.to_vec();
            drop(std::mem::replace(self, ScratchList { at: At::Heap(v) }));
        }
        match &mut self.at {
            At::Heap(v) => v,
            At::Scratch { .. } => unreachable!("copied to memory above"),
        }
    }

    /// Gives back a list in memory's spare room (one in the scratch
    /// file keeps its mapping: its untouched pages cost nothing).
    pub fn shrink_to_fit(&mut self) {
        if let At::Heap(v) = &mut self.at {
            v.shrink_to_fit();
        }
    }

    pub fn push(&mut self, x: T) {
        self.vec_mut().push(x);
    }

    /// Bytes the list holds in memory or in the scratch file (`-t`'s
    /// census).
    pub fn bytes(&self) -> u64 {
        let n = match &self.at {
            At::Heap(v) => v.capacity(),
            At::Scratch { cap, .. } => *cap,
        };
        (n * std::mem::size_of::<T>()) as u64
    }

    /// Is it in the scratch file?
    pub fn in_scratch(&self) -> bool {
        matches!(self.at, At::Scratch { .. })
    }

    /// Sorts the list (equal values are indistinguishable, so the result
    /// is `sort_unstable`'s). One in the scratch file is sorted a piece at
    /// a time, the pieces then merged into a new mapping, with a look at
    /// the resident size after each piece and each batch merged: a sort
    /// of the whole mapping at once made every page of it resident between
    /// two looks (dir50-1k at 10M inodes under a 160 MiB cap: 80 MiB of
    /// directory blocks, the check's peak at 216 MiB).
    pub fn sort_unstable_capped(&mut self)
    where
        T: Ord,
    {
        let spill = match &mut self.at {
            At::Heap(v) => {
                v.sort_unstable();
                return;
            }
            At::Scratch { spill, .. } => Arc::clone(spill),
        };
        let piece = (SORT_PIECE_BYTES / std::mem::size_of::<T>().max(1)).max(1);
        for c in self.chunks_mut(piece) {
            c.sort_unstable();
            spill.check();
        }
        let sorted = self
            .chunks(piece)
            .zip(self.chunks(piece).skip(1))
            .all(|(a, b)| a.last() <= b.first());
        if sorted {
            return;
        }
        let Some(mut out) = Self::copy_to(&[], self.len(), &spill, false) else {
            // No room in the scratch file for the merge: sorted whole.
            self.sort_unstable();
            return;
        };
        let mut heads: std::collections::BinaryHeap<std::cmp::Reverse<(T, usize)>> = self
            .chunks(piece)
            .enumerate()
            .map(|(k, c)| std::cmp::Reverse((c[0], k)))
            .collect();
        let mut next: Vec<usize> = self.chunks(piece).map(|_| 1).collect();
        let mut batch = Vec::with_capacity(piece);
        while let Some(std::cmp::Reverse((x, k))) = heads.pop() {
            batch.push(x);
            let c = &self[k * piece..self.len().min((k + 1) * piece)];
            if let Some(&y) = c.get(next[k]) {
                next[k] += 1;
                heads.push(std::cmp::Reverse((y, k)));
            }
            if batch.len() == piece || heads.is_empty() {
                out.extend_from_slice(&batch, Some(&spill));
                batch.clear();
                spill.check();
            }
        }
        *self = out;
    }
}

/// Values `sort_unstable_capped` sorts at a time (and merges between two
/// looks at the resident size).
const SORT_PIECE_BYTES: usize = 4 << 20;

impl<T: Copy> Default for ScratchList<T> {
    fn default() -> Self {
        ScratchList::new()
    }
}

impl<T: Copy> From<Vec<T>> for ScratchList<T> {
    fn from(v: Vec<T>) -> Self {
        ScratchList { at: At::Heap(v) }
    }
}

impl<T: Copy> Deref for ScratchList<T> {
    type Target = [T];
    #[allow(unsafe_code)]
    fn deref(&self) -> &[T] {
        match &self.at {
            At::Heap(v) => v,
            // SAFETY: `len` values copied in by `settle`, mapped until
            // Drop; shared borrows of the list only read them.
            At::Scratch { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Copy> DerefMut for ScratchList<T> {
    #[allow(unsafe_code)]
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.at {
            At::Heap(v) => v,
            // SAFETY: as in deref; `&mut self` makes the borrow unique.
            At::Scratch { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Copy> Clone for ScratchList<T> {
    fn clone(&self) -> Self {
        match &self.at {
            At::Heap(v) => ScratchList {
                at: At::Heap(v.clone()),
            },
            At::Scratch { spill, .. } => ScratchList::settle(self.to_vec(), Some(spill)),
        }
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for ScratchList<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Copy> Drop for ScratchList<T> {
    fn drop(&mut self) {
        if let At::Scratch {
            ptr, cap, spill, ..
        } = &self.at
        {
            spill.unmap(ptr.cast(), *cap * std::mem::size_of::<T>());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_lists_read_back_across_trims() {
        let s = Arc::new(Spill::new(0, &std::env::temp_dir()).expect("scratch file"));
        let v: Vec<(u32, u16)> = (0..5000u32).map(|i| (i * 3, i as u16)).collect();
        let mut l = ScratchList::settle(v.clone(), Some(&s));
        assert!(l.in_scratch());
        assert!(s.stats().mapped_bytes >= 5000 * 8);
        s.check();
        assert_eq!(&l[..], &v[..]);
        assert_eq!(l.binary_search_by_key(&300, |p| p.0), Ok(100));
        let c = l.clone();
        assert!(c.in_scratch() && c[..] == v[..]);
        l.push((1, 1));
        assert!(!l.in_scratch());
        assert_eq!(l.len(), 5001);
        let mut g = ScratchList::new();
        for k in 0..3000u32 {
            g.extend_from_slice(&[k, k + 1], Some(&s));
            if k % 500 == 0 {
                s.check();
            }
        }
        assert!(g.in_scratch());
        assert!(
            g.chunks(2)
                .enumerate()
                .all(|(k, p)| p == [k as u32, k as u32 + 1])
        );
        // Small lists, or no scratch file: memory.
        assert!(!ScratchList::settle(vec![1u32; 10], Some(&s)).in_scratch());
        assert!(!ScratchList::settle(v, None).in_scratch());
    }

    /// Bytes of `l`'s mapping resident in this process (None: in memory,
    /// or /proc/self/pagemap cannot say).
    fn resident<T: Copy>(l: &ScratchList<T>) -> Option<u64> {
        match &l.at {
            At::Scratch { ptr, cap, .. } => super::super::bitmap::owned_pages(
                ptr.as_ptr() as usize,
                cap * std::mem::size_of::<T>(),
            ),
            At::Heap(_) => None,
        }
    }

    #[test]
    fn lists_copied_to_the_file_leave_memory_as_they_go() {
        // A cap no look ever trims at: only the copy itself keeps the
        // resident size down.
        let s = Arc::new(Spill::new(u64::MAX, &std::env::temp_dir()).expect("scratch file"));
        let v: Vec<u64> = (0..1u64 << 20).collect();
        let l = ScratchList::settle(v, Some(&s));
        assert!(l.in_scratch());
        let Some(held) = resident(&l) else {
            eprintln!("notice: no /proc/self/pagemap; skipping");
            return;
        };
        assert!(held <= 4096, "{held} bytes of an 8 MiB list resident");
        assert!(l.iter().enumerate().all(|(k, &x)| x == k as u64));
        // Grown by moves to mappings twice as large, the last one made by
        // the last value: right after it, neither copy is resident (what
        // is appended later is, until a look trims it).
        let mut g = ScratchList::new();
        for k in 0..=1u64 << 19 {
            g.extend_from_slice(&[k], Some(&s));
        }
        assert_eq!(g.bytes(), 8 << 20);
        let held = resident(&g).unwrap_or(0);
        assert!(held <= 4096, "{held} bytes of a grown list resident");
        assert!(g.iter().enumerate().all(|(k, &x)| x == k as u64));
    }

    #[test]
    fn a_capped_sort_sorts_across_pieces() {
        let s = Arc::new(Spill::new(0, &std::env::temp_dir()).expect("scratch file"));
        let n = 3 * SORT_PIECE_BYTES / 8 + 1234;
        // A scramble with repeats, over more than three pieces.
        let v: Vec<u64> = (0..n as u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % (n as u64 / 2))
            .collect();
        let mut want = v.clone();
        want.sort_unstable();
        let mut l = ScratchList::settle(v, Some(&s));
        assert!(l.in_scratch());
        l.sort_unstable_capped();
        assert!(l.in_scratch());
        assert!(l[..] == want[..]);
        // Sorted already: pieces only, no merge.
        l.sort_unstable_capped();
        assert!(l[..] == want[..]);
        let mut h = ScratchList::from(vec![3u8, 1, 2]);
        h.sort_unstable_capped();
        assert_eq!(&h[..], &[1, 2, 3]);
    }

    #[test]
    fn a_grown_list_is_in_the_file_once() {
        // Each move to a larger mapping leaves a hole where the list was
        // (and the list pushed to memory leaves one too): the file holds
        // the live list, not every copy of it.
        let s = Arc::new(Spill::new(0, &std::env::temp_dir()).expect("scratch file"));
        let mut g = ScratchList::new();
        for k in 0..(1u64 << 19) {
            g.extend_from_slice(&[k], Some(&s));
        }
        let live = g.bytes();
        assert_eq!(live, 4 << 20);
        let held = s.allocated_bytes();
        assert!(
            held <= live + live / 8,
            "{held} bytes allocated for a list of {live}"
        );
        g.push(1);
        assert!(!g.in_scratch());
        assert!(
            s.allocated_bytes() <= live / 8,
            "{} bytes allocated for no list",
            s.allocated_bytes()
        );
    }
}
