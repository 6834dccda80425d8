//! How the C allocator hands memory back, tuned for a check's peak
//! resident size (issue 4: no more than e2fsck's).
//!
//! glibc serves requests below a threshold from its heap and larger ones
//! with their own mapping; by default the threshold rises to the size of
//! any mapped block freed, so after the first large buffer is dropped every
//! later bitmap and list comes from the heap. There `calloc` clears memory
//! it reuses (so a mostly empty bitmap becomes resident), and a list that
//! grows by doubling leaves each old copy behind as resident free space.
//! A fixed threshold keeps large allocations in mappings: zero pages stay
//! untouched until written, growth is `mremap` without copies or holes,
//! and freeing returns the pages at once. `release_free` gives back the
//! free pages left in the heap between passes. The tuning is
//! process-wide, so the binary makes it once (`tune_allocator` in
//! main.rs), not the library.

/// Returns free heap pages to the kernel (between passes: what one pass
/// freed does not stay resident under the next one's peak).
#[allow(unsafe_code)]
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}
