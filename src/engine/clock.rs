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
}
