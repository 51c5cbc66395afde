//! The connections' timeouts of one event loop, for a backend that keeps them itself (mio's and
//! uring's loops; smol gives each task a timer of its own).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use respbench_core::Time;

/// A min-heap of (time, connection) with one live entry per connection at most.
///
/// Moving a connection's time earlier pushes a new entry and leaves the old one, stale, to be
/// skipped when it comes up; moving it later keeps the earlier entry, which finds the new time
/// when it fires ([`Timers::pop_due`] then hands the connection back to be scheduled again).
/// Some superseded entries are far off (open loop at `-P 1` supersedes the test's stop, its
/// timeout while a request is in flight, with the next arrival once per request), so the stale
/// ones are dropped whenever the heap holds more than two entries per connection plus 64: after
/// at least `connections + 64` pushes since the last time, O(1) amortised.
#[derive(Debug, Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(Time, usize)>>,
    /// Each connection's live entry (`Time::MAX`: none).
    at: Vec<Time>,
}

impl Timers {
    /// Timers for `connections` connections, indexed from 0.
    pub fn new(connections: usize) -> Timers {
        Timers { heap: BinaryHeap::new(), at: vec![Time::MAX; connections] }
    }

    /// Wakes connection `i` at `t` (its [`crate::Link::timeout`]), unless it wakes at that time
    /// or earlier already.
    pub fn schedule(&mut self, i: usize, t: Option<Time>) {
        let Some(t) = t else { return };
        if t >= self.at[i] {
            return;
        }
        self.at[i] = t;
        self.heap.push(Reverse((t, i)));
        if self.heap.len() > 2 * self.at.len() + 64 {
            let at = &self.at;
            self.heap.retain(|Reverse((t, i))| at[*i] == *t);
        }
    }

    /// The earliest time a connection wakes.
    pub fn next(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// A connection whose time has come by `now`, taken out: the backend calls its
    /// `on_timeout` if its timeout has indeed come, else schedules it again.
    pub fn pop_due(&mut self, now: Time) -> Option<usize> {
        while let Some(&Reverse((t, i))) = self.heap.peek() {
            if t > now {
                return None;
            }
            self.heap.pop();
            if self.at[i] == t {
                self.at[i] = Time::MAX;
                return Some(i);
            }
            // Superseded by an earlier entry, already handled.
        }
        None
    }

    /// How many entries the heap holds, stale ones included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Time {
        Time::from_micros(us)
    }

    #[test]
    fn earliest_first_and_superseded_entries_skipped() {
        let mut ts = Timers::new(2);
        ts.schedule(0, Some(t(50)));
        ts.schedule(1, Some(t(30)));
        // Earlier: a new entry; later: ignored.
        ts.schedule(0, Some(t(20)));
        ts.schedule(1, Some(t(40)));
        assert_eq!(ts.next(), Some(t(20)));
        assert_eq!(ts.pop_due(t(25)), Some(0));
        assert_eq!(ts.pop_due(t(25)), None);
        assert_eq!(ts.pop_due(t(100)), Some(1));
        // Connection 0's stale entry at 50 is skipped.
        assert_eq!(ts.pop_due(t(100)), None);
        assert!(ts.is_empty());
        ts.schedule(0, None);
        assert_eq!(ts.next(), None);
    }

    #[test]
    fn far_superseded_entries_do_not_pile_up() {
        // Open loop at -P 1: each request's in-flight timeout is the stop (far off), then the
        // reply's next arrival supersedes it.
        let mut ts = Timers::new(10);
        let stop = t(3_600_000_000);
        for k in 0..100_000u64 {
            let i = (k % 10) as usize;
            ts.schedule(i, Some(stop));
            ts.schedule(i, Some(t(k)));
            while ts.pop_due(t(k)).is_some() {}
        }
        assert!(ts.len() <= 2 * 10 + 64 + 1, "{} entries", ts.len());
    }
}
