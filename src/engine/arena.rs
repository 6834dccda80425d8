//! Many small read-only slices (pass 2's per-unit results: a few
//! thousand bytes a unit, one unit per 32 directory blocks) that are kept
//! to the end of a pass: with `--max-memory` they are copied into 1 MiB
//! chunks of the scratch file (`ScratchArena`), where `Spill::trim` drops
//! them from memory with the maps. A chunk is unmapped, its stretch of the
//! file a hole, once the last slice in it is dropped.

use super::spill::Spill;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// Bytes of the scratch file mapped at a time.
const CHUNK: usize = 1 << 20;

/// One mapping of the scratch file, shared by the slices in it.
struct Chunk {
    ptr: NonNull<u8>,
    spill: Arc<Spill>,
}

// SAFETY: the mapping is written once per slice, before the slice is
// handed out, then only read; it lives until the last `Arc` goes.
#[allow(unsafe_code)]
unsafe impl Send for Chunk {}
#[allow(unsafe_code)]
unsafe impl Sync for Chunk {}

impl Drop for Chunk {
    fn drop(&mut self) {
        self.spill.unmap(self.ptr, CHUNK);
    }
}

/// Where slices are copied to: the chunk being filled and its bytes used.
pub struct ScratchArena {
    spill: Arc<Spill>,
    cur: Mutex<Option<(Arc<Chunk>, usize)>>,
}

impl ScratchArena {
    pub fn new(spill: &Arc<Spill>) -> ScratchArena {
        ScratchArena {
            spill: Arc::clone(spill),
            cur: Mutex::new(None),
        }
    }

    /// `xs` copied into the scratch file; None if it is larger than a
    /// chunk or the file cannot grow (the caller keeps its copy).
    #[allow(unsafe_code)]
    fn copy<T: Copy>(&self, xs: &[T]) -> Option<ScratchSlice<T>> {
        let size = std::mem::size_of_val(xs);
        let align = std::mem::align_of::<T>();
        if size > CHUNK || align > 4096 {
            return None;
        }
        let mut cur = self.cur.lock().unwrap_or_else(|e| e.into_inner());
        let at = cur.as_ref().map(|(_, used)| used.next_multiple_of(align));
        let (chunk, at) = match (cur.as_mut(), at) {
            (Some((c, used)), Some(at)) if at + size <= CHUNK => {
                *used = at + size;
                (Arc::clone(c), at)
            }
            _ => {
                let c = Arc::new(Chunk {
                    ptr: self.spill.map(CHUNK)?,
                    spill: Arc::clone(&self.spill),
                });
                *cur = Some((Arc::clone(&c), size));
                (c, 0)
            }
        };
        drop(cur);
        // SAFETY: [at, at + size) lies in the chunk's mapping (checked
        // above), is aligned for T (the mapping is page-aligned, `at` a
        // multiple of T's alignment), and is handed out once, under the
        // lock, so nothing else writes or reads it yet.
        let ptr = unsafe {
            let p = chunk.ptr.as_ptr().add(at).cast::<T>();
            std::ptr::copy_nonoverlapping(xs.as_ptr(), p, xs.len());
            NonNull::new_unchecked(p)
        };
        Some(ScratchSlice {
            at: Place::Scratch {
                ptr,
                len: xs.len(),
                _chunk: chunk,
            },
        })
    }
}

/// A boxed slice in memory, or in `ScratchArena`'s scratch file.
pub struct ScratchSlice<T: Copy> {
    at: Place<T>,
}

enum Place<T> {
    Heap(Box<[T]>),
    /// `len` values at `ptr`, in `_chunk`, which holds the mapping.
    Scratch {
        ptr: NonNull<T>,
        len: usize,
        _chunk: Arc<Chunk>,
    },
}

// SAFETY: the values are only read once the slice exists, like a Box's.
#[allow(unsafe_code)]
unsafe impl<T: Copy + Send> Send for ScratchSlice<T> {}
#[allow(unsafe_code)]
unsafe impl<T: Copy + Sync> Sync for ScratchSlice<T> {}

impl<T: Copy> ScratchSlice<T> {
    /// Moves the values to `arena`'s scratch file if there is one (a
    /// slice that does not fit stays where it is).
    pub fn settle(&mut self, arena: Option<&ScratchArena>) {
        let Some(a) = arena else {
            return;
        };
        if let Place::Heap(b) = &self.at
            && !b.is_empty()
            && let Some(moved) = a.copy(b)
        {
            *self = moved;
        }
    }

    /// Is it in the scratch file?
    pub fn in_scratch(&self) -> bool {
        matches!(self.at, Place::Scratch { .. })
    }
}

impl<T: Copy> From<Vec<T>> for ScratchSlice<T> {
    fn from(v: Vec<T>) -> Self {
        ScratchSlice {
            at: Place::Heap(v.into_boxed_slice()),
        }
    }
}

impl<T: Copy> From<Box<[T]>> for ScratchSlice<T> {
    fn from(b: Box<[T]>) -> Self {
        ScratchSlice { at: Place::Heap(b) }
    }
}

impl<T: Copy> Deref for ScratchSlice<T> {
    type Target = [T];
    #[allow(unsafe_code)]
    fn deref(&self) -> &[T] {
        match &self.at {
            Place::Heap(b) => b,
            // SAFETY: `len` values written by `ScratchArena::copy` before
            // the slice was made, mapped while `_chunk` lives.
            Place::Scratch { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_slices_read_back_across_trims_and_free_their_chunks() {
        let s = Arc::new(Spill::new(0, &std::env::temp_dir()).expect("scratch file"));
        let arena = ScratchArena::new(&s);
        type Pair = (ScratchSlice<(u64, u64)>, ScratchSlice<u8>);
        let mut all: Vec<Pair> = Vec::new();
        for k in 0..3000u64 {
            let mut a = ScratchSlice::from(vec![(k, k * 7); 40]);
            let mut b = ScratchSlice::from(vec![k as u8; (k % 13) as usize]);
            a.settle(Some(&arena));
            b.settle(Some(&arena));
            assert!(a.in_scratch() && b.in_scratch() == (k % 13 != 0));
            all.push((a, b));
        }
        assert!(s.stats().mapped_bytes >= 3000 * 640);
        s.check();
        for (k, (a, b)) in all.iter().enumerate() {
            let k = k as u64;
            assert!(a.iter().all(|&p| p == (k, k * 7)), "slice {k}");
            assert_eq!(b.len(), (k % 13) as usize);
            assert!(b.iter().all(|&x| x == k as u8));
        }
        let held = s.allocated_bytes();
        assert!(held >= 3000 * 640, "{held}");
        drop(all);
        drop(arena);
        assert!(s.allocated_bytes() < held / 8, "chunks left in the file");
        // No arena: memory.
        let mut m = ScratchSlice::from(vec![1u32; 100]);
        m.settle(None);
        assert!(!m.in_scratch());
    }
}
