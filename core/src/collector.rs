//! A test's per-second series, from every event loop: the [`Collector`] in the driver's live
//! figures adds up the seconds each loop's [`Stats::recording`] has ended and, once every loop has
//! moved past a second, summarises it ([`Second`]: counts and a few percentiles, 64 bytes) and
//! lets its histogram go. A test keeps one summary per second of its length plus the few seconds
//! still open, whatever its rate and its number of loops: a day is 5.5 MB. The full histograms of
//! ended seconds are handed out once, when asked for ([`Collector::take_ended`]), for an
//! interval log that streams them to a file. (The records themselves, [`crate::shared::Recording`]
//! and [`Interval`], are the stats'.)

use std::collections::VecDeque;

use crate::disruption::{Disruption, FineCollector};
use crate::shared::{Interval, Second};
use crate::stats::Stats;
use crate::Time;

const SECOND: u64 = 1_000_000_000;

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
    /// A test with events: when they are due, from the test's start (kept by
    /// [`Collector::begin`]), and the 100 ms windows' collector.
    events: Vec<std::time::Duration>,
    /// Send times told before [`Collector::begin`] (a simulation's scripted events).
    sent_early: Vec<(usize, std::time::Duration)>,
    fine: Option<FineCollector>,
}

impl Collector {
    /// A collector for a test of `loops` event loops.
    pub fn new(loops: usize) -> Collector {
        Collector { marks: vec![0; loops], ..Collector::default() }
    }

    /// Starts over for a test of `loops` event loops, keeping [`Collector::keep_ended`].
    pub fn begin(&mut self, loops: usize) {
        let keep = self.keep_ended;
        let events = std::mem::take(&mut self.events);
        let early = std::mem::take(&mut self.sent_early);
        *self = Collector::new(loops);
        self.keep_ended = keep;
        if !events.is_empty() {
            let mut fine = FineCollector::new(loops, &events);
            for (i, at) in early {
                fine.tracker.sent(i, at);
            }
            self.fine = Some(fine);
        }
        self.events = events;
    }

    /// Tracks what events due at `planned` (from the test's start) cost, from the loops' 100 ms
    /// windows ([`crate::disruption`]); before [`Collector::begin`].
    pub fn track(&mut self, planned: &[std::time::Duration]) {
        self.events = planned.to_vec();
    }

    /// Event `i` was sent `at` after the test's start (before [`Collector::begin`] too: kept
    /// for the test it begins).
    pub fn event_sent(&mut self, i: usize, at: std::time::Duration) {
        match &mut self.fine {
            Some(f) => f.tracker.sent(i, at),
            None => self.sent_early.push((i, at)),
        }
    }

    /// When the test started (the loops' `Stats::start`), once a loop has published.
    pub fn start(&self) -> Option<Time> {
        self.start
    }

    /// What each event cost, once every loop has published its last (empty without events).
    pub fn disruptions(&mut self) -> Vec<Disruption> {
        self.fine.take().map(|f| f.tracker.finish()).unwrap_or_default()
    }

    /// Keeps each ended second's full histogram until [`Collector::take_ended`] takes it.
    pub fn keep_ended(&mut self) {
        self.keep_ended = true;
    }

    /// Adds what loop `part` recorded in the seconds that have ended by `now` (all of them when
    /// `now` is `None`: the loop is done) and summarises every second all loops have passed.
    pub fn publish(&mut self, part: usize, stats: &mut Stats, now: Option<Time>) {
        if let (Some(c), Some(f)) = (&mut self.fine, &mut stats.fine) {
            c.publish(part, f, now);
        }
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
}
