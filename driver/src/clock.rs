//! The driver's clock: the one place a loop reads the time, so that a simulation can drive the
//! same [`crate::Link`]s and [`crate::Tally`] on virtual time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use respbench_core::Time;

/// Where a loop's `now` comes from: the machine's monotonic clock, counted from the run's epoch,
/// or a virtual clock that only moves when its owner moves it (a simulation).
///
/// Backends pass the run's epoch (an `Instant` converts into [`Clock::Real`]).
#[derive(Clone, Debug)]
pub enum Clock {
    /// `Instant::now()`, as nanoseconds since `epoch`.
    Real {
        /// The run's time origin.
        epoch: Instant,
    },
    /// A time set by the simulation that owns the [`VirtualClock`].
    Virtual(VirtualClock),
}

impl Clock {
    /// The time now, as the core counts it.
    pub fn now(&self) -> Time {
        match self {
            Clock::Real { epoch } => Time::since(*epoch, Instant::now()),
            Clock::Virtual(v) => v.now(),
        }
    }

    /// `t` as an `Instant`, for a backend that sleeps until a [`Time`]: the epoch plus `t` on the
    /// real clock. A virtual clock has no instant of its own; it gives the instant it was made at
    /// plus `t`, which nothing should sleep until (a simulation moves the clock instead).
    pub fn instant(&self, t: Time) -> Instant {
        match self {
            Clock::Real { epoch } => *epoch + t.as_duration(),
            Clock::Virtual(v) => v.made + t.as_duration(),
        }
    }
}

impl From<Instant> for Clock {
    fn from(epoch: Instant) -> Clock {
        Clock::Real { epoch }
    }
}

impl From<VirtualClock> for Clock {
    fn from(v: VirtualClock) -> Clock {
        Clock::Virtual(v)
    }
}

impl From<&VirtualClock> for Clock {
    fn from(v: &VirtualClock) -> Clock {
        Clock::Virtual(v.clone())
    }
}

/// A clock that stands still until it is moved; clones share the one time.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    nanos: Arc<AtomicU64>,
    /// For [`Clock::instant`] only.
    made: Instant,
}

impl VirtualClock {
    /// A clock at `Time::ZERO`.
    pub fn new() -> VirtualClock {
        VirtualClock { nanos: Arc::new(AtomicU64::new(0)), made: Instant::now() }
    }

    /// The time it shows.
    pub fn now(&self) -> Time {
        Time::from_nanos(self.nanos.load(Ordering::SeqCst))
    }

    /// Moves it to `t`; never backwards (an earlier `t` leaves it where it is).
    pub fn advance_to(&self, t: Time) {
        self.nanos.fetch_max(t.as_nanos(), Ordering::SeqCst);
    }
}

impl Default for VirtualClock {
    fn default() -> VirtualClock {
        VirtualClock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_virtual_clock_moves_only_forwards_and_clones_share_it() {
        let v = VirtualClock::new();
        let c = Clock::from(&v);
        assert_eq!(c.now(), Time::ZERO);
        v.advance_to(Time::from_micros(5));
        assert_eq!(c.now(), Time::from_micros(5));
        v.advance_to(Time::from_micros(3));
        assert_eq!(c.now(), Time::from_micros(5));
        assert_eq!(c.instant(Time::from_micros(5)), v.made + Duration::from_micros(5));
    }

    #[test]
    fn the_real_clock_counts_from_its_epoch() {
        let epoch = Instant::now() - Duration::from_secs(1);
        let c = Clock::from(epoch);
        assert!(c.now() >= Time::from_micros(1_000_000));
        assert_eq!(c.instant(Time::from_micros(2)), epoch + Duration::from_micros(2));
    }
}
