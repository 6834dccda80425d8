//! Progress counters: which pass runs, how many work units it has and how
//! many are done. `par_map` and the pipeline count units themselves, so
//! passes need no code for it; a reporter thread (the CLI's) samples the
//! counters. Each run has its own (`Control`), so two checks in one
//! process do not mix their figures.
//!
//! Two passes may overlap (the pipeline): each has its own counters, and
//! the one shown is the earlier pass until it is finished, then the later
//! one, so a reader sees pass numbers that only grow, as from e2fsck.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// Passes a reader may follow (1–5; index 0 unused).
const PASSES: usize = 6;

#[derive(Debug, Default)]
pub struct Progress {
    /// Per pass, how many steps a reader following e2fsck's progress
    /// lines shows (0: not known yet); the units above are the engine's.
    steps: [AtomicU64; PASSES],
    /// The highest pass the check finished.
    completed: AtomicU8,
    /// What a reader names the run by (e2fsck: the file system's label).
    name: Mutex<Option<String>>,
    /// Pass number of each stage (0: none).
    pass: [AtomicU8; 2],
    done: [AtomicU64; 2],
    total: [AtomicU64; 2],
    /// The stage shown (and counted by `add_total`/`unit_done`).
    shown: AtomicUsize,
}

impl Progress {
    pub const fn new() -> Progress {
        Progress {
            steps: [const { AtomicU64::new(0) }; PASSES],
            completed: AtomicU8::new(0),
            name: Mutex::new(None),
            pass: [AtomicU8::new(0), AtomicU8::new(0)],
            done: [AtomicU64::new(0), AtomicU64::new(0)],
            total: [AtomicU64::new(0), AtomicU64::new(0)],
            shown: AtomicUsize::new(0),
        }
    }

    /// Starts counting pass `pass` (1–5) from zero.
    pub fn begin_pass(&self, pass: u8) {
        self.reset(pass, 0);
    }

    /// Starts counting two overlapping passes: `first` is shown until
    /// `stage_finished(0)`, then `second`.
    pub fn begin_overlap(&self, first: u8, second: u8) {
        self.reset(first, second);
    }

    fn reset(&self, first: u8, second: u8) {
        for i in 0..2 {
            self.done[i].store(0, Ordering::Relaxed);
            self.total[i].store(0, Ordering::Relaxed);
        }
        self.pass[1].store(second, Ordering::Relaxed);
        self.shown.store(0, Ordering::Relaxed);
        self.pass[0].store(first, Ordering::Relaxed);
    }

    /// Pass `pass` shows `n` steps to a reader of e2fsck's progress lines.
    pub fn set_steps(&self, pass: u8, n: u64) {
        if let Some(s) = self.steps.get(usize::from(pass)) {
            s.store(n, Ordering::Relaxed);
        }
    }

    pub fn steps(&self, pass: u8) -> u64 {
        self.steps
            .get(usize::from(pass))
            .map_or(0, |s| s.load(Ordering::Relaxed))
    }

    /// Pass `pass` is over (a later round of a repair starts again at 1).
    pub fn pass_complete(&self, pass: u8) {
        self.completed.store(pass, Ordering::Relaxed);
    }

    pub fn completed(&self) -> u8 {
        self.completed.load(Ordering::Relaxed)
    }

    pub fn set_name(&self, name: Option<String>) {
        if let Ok(mut n) = self.name.lock() {
            *n = name;
        }
    }

    pub fn name(&self) -> Option<String> {
        self.name.lock().ok().and_then(|n| n.clone())
    }

    fn shown(&self) -> usize {
        self.shown.load(Ordering::Relaxed).min(1)
    }

    pub(crate) fn add_total(&self, n: u64) {
        self.add_total_at(self.shown(), n);
    }

    pub(crate) fn unit_done(&self) {
        self.unit_done_at(self.shown());
    }

    pub(crate) fn add_total_at(&self, stage: usize, n: u64) {
        self.total[stage.min(1)].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn unit_done_at(&self, stage: usize) {
        self.done[stage.min(1)].fetch_add(1, Ordering::Relaxed);
    }

    /// Stage `stage` has no more units: show the next one (if it is a pass).
    pub(crate) fn stage_finished(&self, stage: usize) {
        if stage == 0 && self.pass[1].load(Ordering::Relaxed) != 0 {
            self.shown.store(1, Ordering::Relaxed);
        }
    }

    /// (pass, units done, units known) at this instant.
    pub fn snapshot(&self) -> (u8, u64, u64) {
        let i = self.shown();
        (
            self.pass[i].load(Ordering::Relaxed),
            self.done[i].load(Ordering::Relaxed),
            self.total[i].load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_passes_show_in_order() {
        let c = Progress::new();
        c.reset(1, 2);
        c.add_total_at(0, 10);
        c.add_total_at(1, 4);
        c.unit_done_at(1);
        c.unit_done_at(0);
        assert_eq!(c.snapshot(), (1, 1, 10));
        c.stage_finished(0);
        assert_eq!(c.snapshot(), (2, 1, 4));
        c.reset(3, 0);
        assert_eq!(c.snapshot(), (3, 0, 0));
        c.stage_finished(0);
        assert_eq!(c.snapshot(), (3, 0, 0));
    }
}
