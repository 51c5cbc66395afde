//! A ramp within one test (`--ramp`): its steps' levels and times, below the plan (which
//! carries it) and the stats (which keep each step's figures), so that neither imports the
//! other for it.

use std::time::Duration;

use crate::Time;

/// What a ramp (`--ramp`) raises step by step within one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
pub enum RampKind {
    /// The connections: client `i` opens its socket when the first step with more than `i`
    /// clients begins, and those open stay open (memtier_benchmark's `--clients-start`).
    Clients,
    /// The open loop's total rate (rpc-perf's rate ramp): the intended send times follow the
    /// rate of the step they fall in.
    Rps,
}

impl RampKind {
    /// The word the command line and the JSON use: `clients` or `rps`.
    pub fn name(self) -> &'static str {
        match self {
            RampKind::Clients => "clients",
            RampKind::Rps => "rps",
        }
    }
}

/// A ramp within one test (`--ramp 'clients 10..200 step 10 every 5s'`): step `k` begins at
/// `start + k * every` with the level `from + k * step` (the last step's level is `to`), and
/// the last step lasts until the test's stop. Times are the run's, as the rest of the plan's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ramp {
    /// Clients or requests per second.
    pub kind: RampKind,
    /// The first step's level, at least 1.
    pub from: u64,
    /// The last step's level, at least `from`.
    pub to: u64,
    /// How much each step adds, at least 1.
    pub step: u64,
    /// How long each step lasts, more than zero.
    pub every: Duration,
    /// When the first step begins.
    pub start: Time,
}

impl Ramp {
    /// How many steps: the levels `from`, `from + step`, … up to `to` (the last is `to` even
    /// when `step` does not divide the range).
    pub fn steps(&self) -> usize {
        let range = self.to.saturating_sub(self.from);
        (range.div_ceil(self.step.max(1)) + 1).min(usize::MAX as u64) as usize
    }

    /// The level of step `k` (the last one's for `k` past it).
    pub fn level(&self, k: usize) -> u64 {
        self.from.saturating_add((k as u64).saturating_mul(self.step)).min(self.to)
    }

    /// When step `k` begins.
    pub fn step_start(&self, k: usize) -> Time {
        let nanos = u64::try_from(self.every.as_nanos()).unwrap_or(u64::MAX);
        Time::from_nanos(self.start.as_nanos().saturating_add((k as u64).saturating_mul(nanos)))
    }

    /// When step `k` ends: the next one's start; `Time::MAX` for the last.
    pub fn step_end(&self, k: usize) -> Time {
        if k + 1 >= self.steps() {
            Time::MAX
        } else {
            self.step_start(k + 1)
        }
    }

    /// The step `t` falls in (the first before the ramp starts, the last after it ends).
    pub fn step_at(&self, t: Time) -> usize {
        let every = u64::try_from(self.every.as_nanos()).unwrap_or(u64::MAX).max(1);
        let k = t.nanos_since(self.start) / every;
        (k.min(self.steps() as u64 - 1)) as usize
    }

    /// A clients ramp: when client `index` opens its socket, the start of the first step with
    /// more than `index` clients; `None` for a client past the last step's level (it never
    /// opens one).
    pub fn client_start(&self, index: u64) -> Option<Time> {
        if index >= self.to {
            return None;
        }
        if index < self.from {
            return Some(self.start);
        }
        let k = (index - self.from) / self.step.max(1) + 1;
        Some(self.step_start(k as usize))
    }

    /// A rate ramp: the time at which `arrivals` arrivals of one of `connections` connections
    /// sharing the rate have passed since `from`, the rate being each step's level over the
    /// steps `from` crosses (an exact change of clock: the arrivals of a step are its level
    /// times its length). `Time::MAX` if it is beyond any representable time.
    pub fn advance(&self, from: Time, arrivals: f64, connections: u64) -> Time {
        let per = connections.max(1) as f64;
        let mut t = from;
        let mut left = arrivals.max(0.0);
        loop {
            let k = self.step_at(t);
            let rate = self.level(k).max(1) as f64 / per; // per second, this connection
            let need = left / rate * 1e9;
            let end = if t < self.start { self.start } else { self.step_end(k) };
            let room = end.as_nanos().saturating_sub(t.as_nanos()) as f64;
            if end == Time::MAX || need <= room {
                if !need.is_finite() || need >= (u64::MAX - t.as_nanos()) as f64 {
                    return Time::MAX;
                }
                return Time::from_nanos(t.as_nanos() + need.round() as u64);
            }
            left -= room / 1e9 * rate;
            t = end;
        }
    }
}
