//! The crash-injection hook of the commit protocol.
//!
//! Every write, fsync and rename that `commit` and `rollback` perform goes
//! through a [`Faults`] value, told before and after. Production passes
//! [`NoFaults`]; tests pass a [`FailAfter`] (or their own implementation) to
//! make the protocol stop dead right after its N-th operation, which is what
//! SIGKILL at that moment looks like to the files. A test that also wants
//! power loss records what each write overwrote in `before` and undoes the
//! writes that no fsync covered. The hook is always compiled in so that the
//! code tested is the code shipped.

use std::path::Path;

/// One durable-state operation of the protocol.
#[derive(Clone, Copy, Debug)]
pub enum Op<'a> {
    /// `len` bytes written at `offset` of `file`.
    Write {
        file: &'a Path,
        offset: u64,
        len: usize,
    },
    /// `fsync` of `file`.
    Sync { file: &'a Path },
    /// `from` renamed over `to`.
    Rename { from: &'a Path, to: &'a Path },
    /// `fsync` of the directory `dir`, making creations and renames in it
    /// durable.
    SyncDir { dir: &'a Path },
}

/// The process died at this point (injected).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crash;

pub trait Faults {
    /// Called just before `op` is performed.
    fn before(&mut self, _op: &Op<'_>) {}
    /// Called just after `op` was performed; `Err` stops the protocol there,
    /// leaving the files exactly as they are.
    fn after(&mut self, op: &Op<'_>) -> Result<(), Crash>;
}

/// The production hook: never fails.
pub struct NoFaults;

impl Faults for NoFaults {
    fn after(&mut self, _op: &Op<'_>) -> Result<(), Crash> {
        Ok(())
    }
}

/// Crashes right after the `n`-th operation (counting from 1); counts
/// operations either way, so `FailAfter::never()` measures how many
/// crash points a run has.
#[derive(Clone, Debug)]
pub struct FailAfter {
    pub n: u64,
    pub performed: u64,
}

impl FailAfter {
    pub fn new(n: u64) -> FailAfter {
        FailAfter { n, performed: 0 }
    }

    pub fn never() -> FailAfter {
        FailAfter::new(u64::MAX)
    }
}

impl Faults for FailAfter {
    fn after(&mut self, _op: &Op<'_>) -> Result<(), Crash> {
        self.performed = self.performed.saturating_add(1);
        if self.performed == self.n {
            Err(Crash)
        } else {
            Ok(())
        }
    }
}
