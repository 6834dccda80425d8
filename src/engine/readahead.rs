//! An adaptive readahead window over a queue of units: how many items
//! (blocks) ahead of the unit being taken should already have been asked
//! for. Like the kernel's on-demand readahead, the window grows while what
//! was fetched ahead is used — found ready when its unit runs, on a device
//! that needs it — and shrinks when it is not: data ready without a hint
//! (a warm cache, where hints only cost system calls), or hinted data
//! still not ready, again and again (a device that ignores hints, or
//! data evicted before use).
//!
//! Whether the cache is cold is learnt from probes: every `PROBE_EVERY`th
//! unit is left unhinted, and its reads say whether unhinted data is
//! ready anyway. Knows nothing of what the items are; the caller says, per
//! unit run, whether its reads found their data ready.

/// One unit in this many is a probe (never hinted).
pub const PROBE_EVERY: usize = 8;

/// How a unit was treated before it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Asked for ahead of time (it was in the window).
    Hinted,
    /// Left unhinted on purpose, to see whether hints are needed.
    Probe,
    /// Not hinted (outside the window, or the window closed).
    Unhinted,
}

/// The window, in items.
#[derive(Clone, Copy, Debug)]
pub struct Readahead {
    window: u64,
    min: u64,
    max: u64,
    /// The last probe (or unhinted unit) found its data not ready.
    cold: bool,
    /// Hinted units whose reads missed in a row.
    misses: u32,
    pub grows: u64,
    pub shrinks: u64,
    pub largest: u64,
}

/// Hinted units that may miss in a row before the window shrinks: the
/// first units after a hint often run before the device has caught up.
const MISSES_BEFORE_SHRINK: u32 = 4;

impl Readahead {
    /// A window of `start` items, kept within [min, max].
    pub fn new(start: u64, min: u64, max: u64) -> Readahead {
        let window = start.clamp(min, max.max(min));
        Readahead {
            window,
            min,
            max: max.max(min),
            cold: true,
            misses: 0,
            grows: 0,
            shrinks: 0,
            largest: window,
        }
    }

    pub fn window(&self) -> u64 {
        self.window
    }

    /// Is unit number `id` (in queue order) a probe?
    pub fn is_probe(id: usize) -> bool {
        id % PROBE_EVERY == PROBE_EVERY - 1
    }

    /// A unit ran: how it was treated, and whether its reads found their
    /// data ready (served at cache speed). None: it read nothing.
    pub fn feedback(&mut self, kind: Kind, ready: Option<bool>) {
        let Some(ready) = ready else {
            return;
        };
        match (kind, ready) {
            // Fetched ahead and used, on a cache that needs it: further.
            (Kind::Hinted, true) => {
                self.misses = 0;
                if self.cold {
                    self.grow();
                }
            }
            // Hinted, still slow: too late once is normal; again and
            // again means the hints are not used.
            (Kind::Hinted, false) => {
                self.misses += 1;
                if self.misses >= MISSES_BEFORE_SHRINK {
                    self.misses = 0;
                    self.shrink();
                }
            }
            // Unhinted and slow: the cache is cold, open the window.
            (Kind::Probe | Kind::Unhinted, false) => {
                self.cold = true;
                self.grow();
            }
            // Ready without a hint: the data is cached anyway.
            (Kind::Probe | Kind::Unhinted, true) => {
                self.cold = false;
                self.shrink();
            }
        }
    }

    fn grow(&mut self) {
        let w = self.window.max(1).saturating_mul(2).min(self.max);
        if w > self.window {
            self.grows += 1;
        }
        self.window = w;
        self.largest = self.largest.max(w);
    }

    fn shrink(&mut self) {
        let w = (self.window / 2).max(self.min);
        if w < self.window {
            self.shrinks += 1;
        }
        self.window = w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_while_hints_are_used_and_shrinks_when_not() {
        let mut ra = Readahead::new(0, 0, 1024);
        // Cold: unhinted slow reads open the window.
        ra.feedback(Kind::Unhinted, Some(false));
        assert_eq!(ra.window(), 2);
        // Hinted units found ready on a cold cache: it doubles up to the
        // maximum.
        for _ in 0..20 {
            ra.feedback(Kind::Hinted, Some(true));
        }
        assert_eq!(ra.window(), 1024);
        // A few misses after a hint are tolerated, more shrink it.
        for _ in 0..MISSES_BEFORE_SHRINK - 1 {
            ra.feedback(Kind::Hinted, Some(false));
        }
        assert_eq!(ra.window(), 1024);
        ra.feedback(Kind::Hinted, Some(false));
        assert_eq!(ra.window(), 512);
        // A probe finds its data ready without a hint: warm, so hinted
        // units being ready proves nothing and the window closes.
        ra.feedback(Kind::Probe, Some(true));
        assert_eq!(ra.window(), 256);
        for _ in 0..20 {
            ra.feedback(Kind::Hinted, Some(true));
        }
        assert_eq!(ra.window(), 256);
        for _ in 0..20 {
            ra.feedback(Kind::Unhinted, Some(true));
        }
        assert_eq!(ra.window(), 0);
        // Units that read nothing say nothing.
        ra.feedback(Kind::Unhinted, None);
        assert_eq!(ra.window(), 0);
        // The cache turns cold again: a slow probe reopens it.
        ra.feedback(Kind::Probe, Some(false));
        assert_eq!(ra.window(), 2);
        assert!(ra.grows > 0 && ra.shrinks > 0);
        assert!(Readahead::is_probe(PROBE_EVERY - 1) && !Readahead::is_probe(0));
    }
}
