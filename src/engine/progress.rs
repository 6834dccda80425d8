//! Progress counters: which pass runs, how many work units it has and how
//! many are done. `par_map` counts units itself, so passes need no code for
//! it; a reporter thread (the CLI's) samples the counters.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

static PASS: AtomicU8 = AtomicU8::new(0);
static DONE: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);

/// Starts counting pass `pass` (1–5) from zero.
pub fn begin_pass(pass: u8) {
    DONE.store(0, Ordering::Relaxed);
    TOTAL.store(0, Ordering::Relaxed);
    PASS.store(pass, Ordering::Relaxed);
}

pub(crate) fn add_total(n: u64) {
    TOTAL.fetch_add(n, Ordering::Relaxed);
}

pub(crate) fn unit_done() {
    DONE.fetch_add(1, Ordering::Relaxed);
}

/// (pass, units done, units known) at this instant.
pub fn snapshot() -> (u8, u64, u64) {
    (
        PASS.load(Ordering::Relaxed),
        DONE.load(Ordering::Relaxed),
        TOTAL.load(Ordering::Relaxed),
    )
}
