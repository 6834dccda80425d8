//! Runs independent work units on N threads and returns their results in
//! unit order, so the caller's merge is deterministic.

use super::progress::Progress;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What one run shares with whoever drives it: a cancellation flag (set,
/// e.g. by the binary's signal handler, to stop handing out work; the
/// caller sees missing results and reports the cancellation) and the
/// progress counters. Clones share both; a new `Control` starts afresh,
/// so a library user runs one check after a cancelled one with a new
/// one.
#[derive(Clone, Debug, Default)]
pub struct Control {
    cancel: Arc<AtomicBool>,
    progress: Arc<Progress>,
}

impl Control {
    /// Stops the run at its next unit (async-signal-safe: one store).
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    pub fn progress(&self) -> &Progress {
        &self.progress
    }
}

/// How many worker threads a pass may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threads(pub usize);

impl Threads {
    /// The CPUs this process may run on (affinity and cgroup quota).
    pub fn auto() -> Threads {
        Threads(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

/// Calls `work(state, unit)` for every unit in 0..n on up to `threads`
/// threads, each with its own `state` built by `init`. Units are handed out
/// dynamically (small atomic counter), results are returned indexed by unit.
/// After a cancellation, units not yet started are skipped, so the result
/// may be shorter than `n`: callers check `ctl.cancelled()`.
pub fn par_map<S, R, I, W>(n: usize, threads: Threads, ctl: &Control, init: I, work: W) -> Vec<R>
where
    R: Send,
    I: Fn() -> S + Sync,
    W: Fn(&mut S, usize) -> R + Sync,
{
    let t = threads.0.clamp(1, n.max(1));
    ctl.progress.add_total(n as u64);
    if t == 1 {
        let mut s = init();
        return (0..n)
            .take_while(|_| !ctl.cancelled())
            .map(|u| {
                let r = work(&mut s, u);
                ctl.progress.unit_done();
                r
            })
            .collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|sc| {
        for _ in 0..t {
            sc.spawn(|| {
                let mut s = init();
                loop {
                    let u = next.fetch_add(1, Ordering::Relaxed);
                    if u >= n || ctl.cancelled() {
                        break;
                    }
                    let r = work(&mut s, u);
                    ctl.progress.unit_done();
                    *slots[u].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// Like `par_map`, but each result goes to `merge` in unit order as soon
/// as it and every unit before it are done, instead of all being kept to
/// the end: the memory held is that of the units finished out of order
/// (about one per thread, since units are handed out in order), not of the
/// whole pass. `merge` runs on whichever thread completes the next unit in
/// order, one call at a time. After a cancellation the merge stops at the
/// first unit not done.
pub fn par_fold<S, R, I, W, M>(
    n: usize,
    threads: Threads,
    ctl: &Control,
    init: I,
    work: W,
    merge: M,
) where
    R: Send,
    I: Fn() -> S + Sync,
    W: Fn(&mut S, usize) -> R + Sync,
    M: FnMut(usize, R) + Send,
{
    par_fold_io(n, threads, ctl, 0, &|| false, init, work, merge)
}

/// `par_fold` with up to `extra` more workers for while `io_bound()` says
/// the units wait on the device more than they compute (a slow or cold
/// device): each extra worker takes units only while it holds, and stops
/// at the first unit it finds it does not, so a fast device costs them
/// nothing but a thread start (their `init` runs on their first unit).
/// More threads than CPUs then keep more reads in flight; the results
/// are the same, merged in unit order.
#[allow(clippy::too_many_arguments)]
pub fn par_fold_io<S, R, I, W, M>(
    n: usize,
    threads: Threads,
    ctl: &Control,
    extra: usize,
    io_bound: &(dyn Fn() -> bool + Sync),
    init: I,
    work: W,
    merge: M,
) where
    R: Send,
    I: Fn() -> S + Sync,
    W: Fn(&mut S, usize) -> R + Sync,
    M: FnMut(usize, R) + Send,
{
    let t = threads.0.clamp(1, n.max(1));
    let extra = if extra > 0 && io_bound() {
        extra.min(n.saturating_sub(t))
    } else {
        0
    };
    ctl.progress.add_total(n as u64);
    if t == 1 && extra == 0 {
        let mut s = init();
        let mut merge = merge;
        for u in (0..n).take_while(|_| !ctl.cancelled()) {
            let r = work(&mut s, u);
            ctl.progress.unit_done();
            merge(u, r);
        }
        return;
    }
    struct Order<R, M> {
        /// First unit not merged yet.
        next: usize,
        /// Finished units waiting for an earlier one.
        waiting: std::collections::BTreeMap<usize, R>,
        merge: M,
    }
    let order = Mutex::new(Order {
        next: 0,
        waiting: std::collections::BTreeMap::new(),
        merge,
    });
    let next_unit = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for k in 0..t + extra {
            let (init, work, order, next_unit) = (&init, &work, &order, &next_unit);
            sc.spawn(move || {
                let mut s = None;
                loop {
                    if k >= t && !io_bound() {
                        break;
                    }
                    let u = next_unit.fetch_add(1, Ordering::Relaxed);
                    if u >= n || ctl.cancelled() {
                        break;
                    }
                    let r = work(s.get_or_insert_with(init), u);
                    ctl.progress.unit_done();
                    let mut o = order.lock().unwrap_or_else(|e| e.into_inner());
                    let o = &mut *o;
                    if u != o.next {
                        o.waiting.insert(u, r);
                        continue;
                    }
                    (o.merge)(u, r);
                    o.next += 1;
                    while let Some(r) = o.waiting.remove(&o.next) {
                        (o.merge)(o.next, r);
                        o.next += 1;
                    }
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_results_any_thread_count() {
        for t in [1, 2, 4, 8] {
            let r = par_map(
                100,
                Threads(t),
                &Control::default(),
                || 0usize,
                |s, u| {
                    *s += 1;
                    u * 2
                },
            );
            assert_eq!(r, (0..100).map(|u| u * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn fold_merges_in_unit_order() {
        for t in [1, 2, 4, 8] {
            let mut got = Vec::new();
            par_fold(
                1000,
                Threads(t),
                &Control::default(),
                || (),
                |_, u| {
                    if u % 7 == 0 {
                        std::thread::yield_now();
                    }
                    u * 3
                },
                |u, r| got.push((u, r)),
            );
            assert_eq!(got, (0..1000).map(|u| (u, u * 3)).collect::<Vec<_>>());
        }
        // Extra I/O workers, on for the first half only: same result.
        let busy = AtomicUsize::new(0);
        let mut got = Vec::new();
        par_fold_io(
            500,
            Threads(2),
            &Control::default(),
            6,
            &|| busy.load(Ordering::Relaxed) < 250,
            || (),
            |_, u| {
                busy.fetch_add(1, Ordering::Relaxed);
                u + 1
            },
            |u, r| got.push((u, r)),
        );
        assert_eq!(got, (0..500).map(|u| (u, u + 1)).collect::<Vec<_>>());
    }
}
