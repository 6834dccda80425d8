//! An adaptive readahead window over a queue of units: how many items
//! (blocks) ahead of the unit being taken should already have been asked
//! for. Like the kernel's on-demand readahead, the window grows while what
//! was fetched ahead is used — found ready when its unit runs, on a cache
//! that needs it — and shrinks when it is not: data ready without a hint
//! (a warm cache, where hints only cost system calls), or hinted data
//! still not ready, again and again (a device that ignores hints, or data
//! evicted before use).
//!
//! Whether the cache is cold is learnt from what the caller sees: a unit
//! run without a hint whose data was (not) ready, and a unit about to be
//! hinted whose data turns out to be cached already. Knows nothing of
//! what the items are.

/// The window, in items.
#[derive(Clone, Copy, Debug)]
pub struct Readahead {
    window: u64,
    min: u64,
    max: u64,
    /// The last sign said the data is not cached.
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

    /// A unit ran: was it hinted ahead of time, and were its reads found
    /// ready? None: it read nothing.
    pub fn feedback(&mut self, hinted: bool, ready: Option<bool>) {
        let Some(ready) = ready else {
            return;
        };
        match (hinted, ready) {
            // Fetched ahead and used, on a cache that needs it: further.
            (true, true) => {
                self.misses = 0;
                if self.cold {
                    self.grow();
                }
            }
            // Hinted, still not ready: too late once is normal; again and
            // again means the hints are not used.
            (true, false) => {
                self.misses += 1;
                if self.misses >= MISSES_BEFORE_SHRINK {
                    self.misses = 0;
                    self.shrink();
                }
            }
            // Not hinted and not ready: the cache is cold, open the window.
            (false, false) => {
                self.cold = true;
                self.grow();
            }
            // Ready without a hint: the data is cached anyway.
            (false, true) => self.warm(),
        }
    }

    /// A unit about to be hinted: was its data cached already?
    pub fn looked_ahead(&mut self, cached: bool) {
        if cached {
            self.warm();
        } else {
            self.cold = true;
        }
    }

    fn warm(&mut self) {
        self.cold = false;
        self.shrink();
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
        // Cold: unhinted data not ready opens the window.
        ra.feedback(false, Some(false));
        assert_eq!(ra.window(), 2);
        // Hinted units found ready on a cold cache: it doubles up to the
        // maximum.
        for _ in 0..20 {
            ra.feedback(true, Some(true));
        }
        assert_eq!(ra.window(), 1024);
        // A few misses after a hint are tolerated, more shrink it.
        for _ in 0..MISSES_BEFORE_SHRINK - 1 {
            ra.feedback(true, Some(false));
        }
        assert_eq!(ra.window(), 1024);
        ra.feedback(true, Some(false));
        assert_eq!(ra.window(), 512);
        // A unit about to be hinted is cached already: warm, so hinted
        // units being ready proves nothing, and the window closes.
        ra.looked_ahead(true);
        assert_eq!(ra.window(), 256);
        for _ in 0..20 {
            ra.feedback(true, Some(true));
        }
        assert_eq!(ra.window(), 256);
        for _ in 0..20 {
            ra.feedback(false, Some(true));
        }
        assert_eq!(ra.window(), 0);
        // Units that read nothing say nothing.
        ra.feedback(false, None);
        assert_eq!(ra.window(), 0);
        // The cache turns cold again: an unhinted miss reopens it, and
        // uncached data ahead keeps hinted hits growing it.
        ra.feedback(false, Some(false));
        assert_eq!(ra.window(), 2);
        ra.looked_ahead(false);
        ra.feedback(true, Some(true));
        assert_eq!(ra.window(), 4);
        assert!(ra.grows > 0 && ra.shrinks > 0);
    }
}
