fn main() {
    tune_allocator();
    std::process::exit(pfsck::cli::main());
}

/// Blocks of at least this many bytes get their own mapping.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 128 * 1024;

/// Fixes the allocator's mapping threshold (see `pfsck::engine::memory`),
/// and keeps every thread in one arena: a worker's own arena holds its
/// freed blocks resident apart from the others' (measured: about 400 KiB
/// more per extra thread), while workers allocate too rarely to contend.
/// Process-wide, so the binary does it once, not the library per check.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; any value is
    // accepted or refused with a return code, never undefined behaviour.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
