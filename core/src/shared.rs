//! The leaf types the rest of the core stands on: where the server is ([`Endpoint`]), the latency
//! histograms' bounds and helpers ([`new_histogram`], [`value_at_percentile`]), and the
//! per-second records a loop's stats keep ([`Recording`] of [`Interval`]s) and a test's series is
//! made of ([`Second`]). This module imports nothing from the crate, so every other module may
//! use it, as quinn-proto's `shared.rs`.

use std::collections::VecDeque;
use std::path::PathBuf;

use hdrhistogram::Histogram;

/// Where the server is. Host names are resolved by the backend (resolution is IO).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP host name or address and port.
    Tcp {
        /// Host name or IP address.
        host: String,
        /// TCP port.
        port: u16,
    },
    /// A Unix domain socket path (`-s`).
    Unix(PathBuf),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp { host, port } => write!(f, "{host}:{port}"),
            Endpoint::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The lowest latency a histogram tells apart, in microseconds.
pub const LOWEST_MICROS: u64 = 1;
/// The highest latency a histogram records, in microseconds (one hour); longer ones are clamped to it.
pub const HIGHEST_MICROS: u64 = 3_600_000_000;
/// The default number of significant figures of the latency histograms (redis-benchmark's `--precision`).
pub const DEFAULT_SIGFIG: u8 = 3;
/// Makes an empty latency histogram in microseconds, 1 µs to one hour, with `sigfig` significant
/// figures (1 to 5).
pub fn new_histogram(sigfig: u8) -> Result<Histogram<u64>, String> {
    if !(1..=5).contains(&sigfig) {
        return Err(format!("precision must be 1 to 5 significant figures, not {sigfig}"));
    }
    Histogram::new_with_bounds(LOWEST_MICROS, HIGHEST_MICROS, sigfig).map_err(|e| format!("{e:?}"))
}

/// The value at `percentile` (0 to 100) by C hdr_histogram's `hdr_value_at_percentile`, which
/// redis-benchmark's figures use: the wanted count is rounded to nearest (the crate's
/// `value_at_quantile` rounds up, which differs for some totals), and the answer is the highest
/// value equivalent to the bucket that reaches it (its lowest at percentile 0); 0 when empty.
pub fn value_at_percentile(h: &Histogram<u64>, percentile: f64) -> u64 {
    let p = percentile.min(100.0);
    let wanted = ((((p / 100.0) * h.len() as f64) + 0.5) as u64).max(1);
    let mut cumulative = 0;
    for v in h.iter_recorded() {
        cumulative += v.count_at_value();
        if cumulative >= wanted {
            let at = v.value_iterated_to();
            return if percentile == 0.0 { h.lowest_equivalent(at) } else { h.highest_equivalent(at) };
        }
    }
    0
}

/// The significant figures of the per-second histograms: 1% is plenty for a time series and
/// keeps each open second's histogram small.
pub const SERIES_SIGFIG: u8 = 2;

/// One ended second of a series, summarised: what a test keeps of it. Latencies in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Second {
    /// Replies parsed during this second.
    pub requests: u64,
    /// Error replies among them, and requests lost with their connection (`--reconnect`).
    pub errors: u64,
    /// Median latency.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// The highest latency.
    pub max: u64,
    /// The percentiles are upper bounds, not values: this second adds up several runs' summaries
    /// ([`Second::merge`]). `max` stays exact.
    pub bounds: bool,
}

impl Second {
    /// The summary of a second's histogram and counts.
    pub fn of(s: &Interval) -> Second {
        // redis-benchmark's (C hdr_histogram's) rule, as the test's own percentiles.
        let at = |p: f64| value_at_percentile(&s.latency, p);
        Second {
            requests: s.requests,
            errors: s.errors,
            p50: at(50.0),
            p90: at(90.0),
            p99: at(99.0),
            p999: at(99.9),
            max: if s.latency.is_empty() { 0 } else { s.latency.max() },
            bounds: false,
        }
    }

    /// Adds the same second of another run, known only by its summary. Counts add and the
    /// maximum is exact; a percentile of the whole is at most the higher of the two (at that
    /// latency, each part has at least that share of its requests below it), so each percentile
    /// becomes the higher one, marked as a bound. An empty side changes nothing.
    pub fn merge(&mut self, other: &Second) {
        if other.requests == 0 {
            self.errors += other.errors;
            return;
        }
        if self.requests == 0 {
            let errors = self.errors;
            *self = *other;
            self.errors += errors;
            return;
        }
        self.requests += other.requests;
        self.errors += other.errors;
        self.p50 = self.p50.max(other.p50);
        self.p90 = self.p90.max(other.p90);
        self.p99 = self.p99.max(other.p99);
        self.p999 = self.p999.max(other.p999);
        self.max = self.max.max(other.max);
        self.bounds = true;
    }
}

/// A second being recorded: its counts and the latency histogram of its requests
/// ([`SERIES_SIGFIG`] significant figures, microseconds).
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    /// Replies parsed during this second.
    pub requests: u64,
    /// Error replies among them, and requests lost with their connection.
    pub errors: u64,
    /// Their latencies.
    pub latency: Histogram<u64>,
    /// Open loop: their service times (from the actual send), once one was recorded.
    pub service: Option<Histogram<u64>>,
}

impl Interval {
    /// An empty second.
    pub fn new() -> Interval {
        Interval {
            requests: 0,
            errors: 0,
            // Cannot fail: SERIES_SIGFIG is in range.
            latency: series_histogram(),
            service: None,
        }
    }

    /// Adds another loop's same second.
    pub fn add(&mut self, other: &Interval) {
        self.requests += other.requests;
        self.errors += other.errors;
        // Same bounds and precision on both sides: cannot fail.
        let _ = self.latency.add(&other.latency);
        if let Some(o) = &other.service {
            let _ = self.service.get_or_insert_with(series_histogram).add(o);
        }
    }

    /// Records `n` service times of `micros` microseconds (open loop).
    pub fn record_service(&mut self, micros: u64, n: u64) {
        let _ = self.service.get_or_insert_with(series_histogram).record_n(micros, n);
    }
}

/// An empty histogram of a second ([`SERIES_SIGFIG`], the test's bounds).
fn series_histogram() -> Histogram<u64> {
    // Cannot fail: SERIES_SIGFIG is in range.
    new_histogram(SERIES_SIGFIG).unwrap_or_else(|_| Histogram::new(2).expect("sigfig 2"))
}

impl Default for Interval {
    fn default() -> Interval {
        Interval::new()
    }
}

/// The seconds one event loop is still recording: from second `first` of the test on, one
/// [`Interval`] each. [`crate::collector::Collector::publish`] takes those that have ended.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    first: usize,
    open: VecDeque<Interval>,
}

impl Recording {
    /// The interval of second `second`. A second already handed out (a clock reading taken
    /// before the hand-out, used after it) counts into the oldest one still open.
    pub fn at(&mut self, second: usize) -> &mut Interval {
        let i = second.saturating_sub(self.first);
        if self.open.len() <= i {
            // One allocation per second of the test, not per request.
            self.open.resize_with(i + 1, Interval::new);
        }
        &mut self.open[i]
    }

    /// How many seconds are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether no second is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Takes the seconds before `upto`: the index of the first, and their intervals.
    pub(crate) fn take_before(&mut self, upto: usize) -> (usize, Vec<Interval>) {
        let first = self.first;
        let n = upto.saturating_sub(first).min(self.open.len());
        let taken: Vec<Interval> = self.open.drain(..n).collect();
        self.first = upto.max(first);
        (first, taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_merge_into_bounds() {
        let mut i = Interval::new();
        for v in 1..=100 {
            i.latency.record(v).unwrap();
            i.requests += 1;
        }
        let a = Second::of(&i);
        assert_eq!((a.p50, a.p99, a.max, a.bounds), (50, 99, 100, false));
        let mut m = a;
        m.merge(&Second {
            requests: 10,
            errors: 1,
            p50: 70,
            p90: 80,
            p99: 90,
            p999: 95,
            max: 95,
            bounds: false,
        });
        assert_eq!((m.requests, m.errors, m.p50, m.p99, m.max, m.bounds), (110, 1, 70, 99, 100, true));
        let mut e = Second { errors: 3, ..Second::default() };
        e.merge(&a);
        assert_eq!((e.requests, e.errors, e.p50, e.bounds), (100, 3, 50, false));
    }
}
