//! Per-second time series in bounded memory.
//!
//! Each event loop records the seconds it is in ([`Recording`]: a small histogram per second
//! still open). A [`Collector`] adds up the seconds of every loop of a test and, once every loop
//! has moved past a second, summarises it ([`Second`]: counts and a few percentiles, 64 bytes) and
//! lets its histogram go. A test keeps one summary per second of its length plus the few seconds
//! still open, whatever its rate and its number of loops: a day is 5.5 MB. The full histograms of
//! ended seconds are handed out once, when asked for ([`Collector::take_ended`]), for an
//! interval log that streams them to a file.

use std::collections::VecDeque;

use hdrhistogram::Histogram;

use crate::stats::{new_histogram, value_at_percentile, Stats};
use crate::Time;

/// The significant figures of the per-second histograms: 1% is plenty for a time series and
/// keeps each open second's histogram small.
pub const SERIES_SIGFIG: u8 = 2;

const SECOND: u64 = 1_000_000_000;

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
/// [`Interval`] each. [`Collector::publish`] takes those that have ended.
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
    fn take_before(&mut self, upto: usize) -> (usize, Vec<Interval>) {
        let first = self.first;
        let n = upto.saturating_sub(first).min(self.open.len());
        let taken: Vec<Interval> = self.open.drain(..n).collect();
        self.first = upto.max(first);
        (first, taken)
    }
}

/// Adds up the seconds the loops of one test record and summarises each second once every loop
/// has moved past it.
#[derive(Debug, Default)]
pub struct Collector {
    /// The ended seconds, summarised, from the test's start on.
    pub seconds: Vec<Second>,
    /// Seconds some loop has not moved past yet, from `seconds.len()` on.
    pending: VecDeque<Interval>,
    /// For each loop: every second before this one has been added.
    marks: Vec<usize>,
    /// When the test's seconds start (the loops' `Stats::start`).
    start: Option<Time>,
    /// Keep the ended seconds' histograms for [`Collector::take_ended`].
    keep_ended: bool,
    ended: VecDeque<(Time, Interval)>,
}

impl Collector {
    /// A collector for a test of `loops` event loops.
    pub fn new(loops: usize) -> Collector {
        Collector { marks: vec![0; loops], ..Collector::default() }
    }

    /// Starts over for a test of `loops` event loops, keeping [`Collector::keep_ended`].
    pub fn begin(&mut self, loops: usize) {
        let keep = self.keep_ended;
        *self = Collector::new(loops);
        self.keep_ended = keep;
    }

    /// Keeps each ended second's full histogram until [`Collector::take_ended`] takes it.
    pub fn keep_ended(&mut self) {
        self.keep_ended = true;
    }

    /// Adds what loop `part` recorded in the seconds that have ended by `now` (all of them when
    /// `now` is `None`: the loop is done) and summarises every second all loops have passed.
    pub fn publish(&mut self, part: usize, stats: &mut Stats, now: Option<Time>) {
        if !stats.keep_series {
            return;
        }
        self.start.get_or_insert(stats.start);
        let upto = match now {
            Some(now) if now >= stats.start => (now.nanos_since(stats.start) / SECOND) as usize,
            Some(_) => 0,
            None => usize::MAX,
        };
        let (first, taken) = stats.recording.take_before(upto);
        let done = self.seconds.len();
        for (i, s) in taken.iter().enumerate() {
            let at = first + i;
            if at < done {
                // Can't happen with one clock: every loop has moved past `at` already.
                continue;
            }
            let j = at - done;
            if self.pending.len() <= j {
                self.pending.resize_with(j + 1, Interval::new);
            }
            self.pending[j].add(s);
        }
        if let Some(m) = self.marks.get_mut(part) {
            *m = (*m).max(upto);
        }
        self.close();
    }

    /// Summarises the pending seconds that every loop has passed.
    fn close(&mut self) {
        let passed = self.marks.iter().copied().min().unwrap_or(usize::MAX);
        while self.seconds.len() < passed {
            let Some(s) = self.pending.pop_front() else { break };
            self.seconds.push(Second::of(&s));
            if self.keep_ended {
                let start = self.start.unwrap_or(Time::ZERO);
                let at = start + std::time::Duration::from_secs((self.seconds.len() - 1) as u64);
                self.ended.push_back((at, s));
            }
        }
    }

    /// The full histograms of the seconds ended since the last call, with when each began (only
    /// with [`Collector::keep_ended`]).
    pub fn take_ended(&mut self) -> Vec<(Time, Interval)> {
        self.ended.drain(..).collect()
    }

    /// Seconds not yet summarised: what the collector holds beyond the summaries.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Time {
        Time::from_micros(ms * 1000)
    }

    fn stats() -> Stats {
        Stats::new(t(1000), 3, false).unwrap().with_series()
    }

    #[test]
    fn a_second_closes_once_every_loop_has_passed_it() {
        let (mut a, mut b) = (stats(), stats());
        let mut c = Collector::new(2);
        a.record_request(0, 100_000, 0, None, t(1100));
        b.record_request(0, 300_000, 0, Some(b"ERR x"), t(1200));
        a.record_request(0, 200_000, 0, None, t(2100));
        c.publish(0, &mut a, Some(t(2500)));
        // Loop b has not published: second 0 stays open.
        assert_eq!(c.seconds.len(), 0);
        assert_eq!(a.recording.len(), 1);
        c.publish(1, &mut b, Some(t(2500)));
        assert_eq!(c.seconds.len(), 1);
        let s = c.seconds[0];
        assert_eq!((s.requests, s.errors), (2, 1));
        assert!((300..=303).contains(&s.max), "{s:?}");
        assert!(s.p50 >= 99 && s.p50 <= 101, "{s:?}");
        c.publish(0, &mut a, None);
        c.publish(1, &mut b, None);
        assert_eq!(c.seconds.len(), 2);
        assert_eq!(c.seconds[1].requests, 1);
        assert_eq!(c.pending(), 0);
        assert!(a.recording.is_empty() && b.recording.is_empty());
    }

    #[test]
    fn ended_histograms_are_handed_out_once_with_their_start() {
        let mut a = stats();
        let mut c = Collector::new(1);
        c.keep_ended();
        a.record_request(0, 1_000_000, 0, None, t(1500));
        a.record_request(0, 2_000_000, 0, None, t(3500));
        c.publish(0, &mut a, Some(t(3600)));
        let ended = c.take_ended();
        // Seconds 0 and 1 (empty) ended; second 2 is open.
        assert_eq!(
            ended.iter().map(|e| (e.0, e.1.requests)).collect::<Vec<_>>(),
            [(t(1000), 1), (t(2000), 0)]
        );
        assert!(c.take_ended().is_empty());
        c.publish(0, &mut a, None);
        assert_eq!(c.take_ended().iter().map(|e| e.0).collect::<Vec<_>>(), [t(3000)]);
    }

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
