//! The time a run works with.

/// Where a run's time comes from: the system clock, or a fixed time (like
/// e2fsck's `E2FSCK_TIME`, which the binary fills from `PFSCK_TIME`: tests
/// and reproducible repairs; the time stamps a repair writes are then the
/// same in every run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    #[default]
    System,
    /// Seconds since the epoch.
    Fixed(u64),
}

impl Clock {
    /// Seconds since the epoch, at least 1, since a zero dtime means "not
    /// deleted".
    pub fn now(self) -> u64 {
        match self {
            Clock::Fixed(t) => t,
            Clock::System => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs()),
        }
        .max(1)
    }

    /// `now` as an on-disk 32-bit time stamp (saturated).
    pub fn now_u32(self) -> u32 {
        u32::try_from(self.now()).unwrap_or(u32::MAX)
    }

    /// Is the system clock before 2010 (so plainly wrong)? e2fsck then
    /// judges no time stamp against it. A fixed time is never doubted,
    /// as e2fsck does not doubt `E2FSCK_TIME`.
    pub fn insane(self) -> bool {
        self == Clock::System && self.now() < SANE_TIME
    }
}

/// 2010-01-01, in seconds since the epoch: a system clock before it is
/// wrong.
pub const SANE_TIME: u64 = 1_262_322_000;

/// How far the superblock's time stamps are trusted against the clock:
/// e2fsck.conf's `[options]` `broken_system_clock` and
/// `accept_time_fudge` (read by the binary, never by the check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeTrust {
    /// The clock cannot be trusted: no time stamp is judged against it.
    pub broken_clock: bool,
    /// Seconds a time stamp may lie ahead of the clock and be taken for
    /// a clock set to local time rather than damage (a day by default).
    pub fudge: u64,
}

/// A day: e2fsck's fudge when `accept_time_fudge` is on (its default).
pub const TIME_FUDGE: u64 = 86_400;

impl Default for TimeTrust {
    fn default() -> TimeTrust {
        TimeTrust {
            broken_clock: false,
            fudge: TIME_FUDGE,
        }
    }
}
