//! Time as the core sees it: a number the driver passes in, never a clock read.

use std::ops::{Add, AddAssign};
use std::time::Duration;

/// A point in time: nanoseconds since an epoch the driver chooses (usually the start of the run).
///
/// The core never reads a clock. Backends convert `std::time::Instant` readings to `Time` with
/// [`Time::since`]; simulations and fuzz targets make them from plain integers.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(u64);

impl Time {
    /// The epoch.
    pub const ZERO: Time = Time(0);
    /// A time later than every time a run can reach; used as "never".
    pub const MAX: Time = Time(u64::MAX);

    /// The time `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Time {
        Time(nanos)
    }

    /// The time `micros` microseconds after the epoch.
    pub const fn from_micros(micros: u64) -> Time {
        Time(micros.saturating_mul(1_000))
    }

    /// The time `d` after `epoch`, for a backend that reads `std::time::Instant`.
    pub fn since(epoch: std::time::Instant, now: std::time::Instant) -> Time {
        Time(u64::try_from(now.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX))
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Microseconds since the epoch, rounded down.
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }

    /// The duration from `earlier` to `self`, zero when `earlier` is later.
    pub const fn saturating_since(self, earlier: Time) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// Nanoseconds from `earlier` to `self`, zero when `earlier` is later.
    pub const fn nanos_since(self, earlier: Time) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// The duration from the epoch to `self`, for a backend turning it back into an `Instant`.
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
    }
}

impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Time::from_micros(5);
        assert_eq!(t.as_nanos(), 5_000);
        assert_eq!(Time::ZERO.nanos_since(t), 0);
        assert_eq!(t.nanos_since(Time::ZERO), 5_000);
        assert_eq!(Time::MAX + Duration::from_secs(1), Time::MAX);
        assert_eq!(t + Duration::from_nanos(1), Time::from_nanos(5_001));
    }
}
