//! Expiry lag (`-t expiry`, issue #52): keys written with deadlines (`SET … PXAT`), the
//! server's `expired` keyspace events, and for each key the time from its deadline to its
//! notification. Pure: the deadlines are the milliseconds since the Unix epoch the keys were
//! given, the arrivals the nanoseconds since it at which the session read each notification;
//! the session reads the clock.

use hdrhistogram::Histogram;

use crate::shared::new_histogram;

/// The title of `-t expiry`'s test.
pub const EXPIRY_TITLE: &str = "SET PXAT (expiry lag)";

/// The keys `-t expiry` times, after `--key-prefix`: this and the key's index in 12 digits.
pub const EXPIRY_KEY: &str = "respbench:expiry:";

/// The most keys one test times (8 bytes of deadline each are held).
pub const MAX_KEYS: u64 = 50_000_000;

/// The name of timed key `i` after `prefix`.
pub fn key(prefix: &str, i: u64) -> Vec<u8> {
    numbered(prefix, EXPIRY_KEY, i)
}

/// The index of a timed key's name (`prefix` + [`EXPIRY_KEY`] + 12 digits), or `None` for any
/// other key.
pub fn index(prefix: &[u8], name: &[u8]) -> Option<u64> {
    number(prefix, EXPIRY_KEY, name)
}

/// `prefix` + `base` + `i` in 12 digits: a key of a test that names its keys by number.
pub fn numbered(prefix: &str, base: &str, i: u64) -> Vec<u8> {
    format!("{prefix}{base}{i:012}").into_bytes()
}

/// The number of a [`numbered`] key's `name`, or `None` for any other key.
pub fn number(prefix: &[u8], base: &str, name: &[u8]) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?.strip_prefix(base.as_bytes())?;
    if digits.len() != 12 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The deadline (ms since the Unix epoch) planned for key `i` of `n`: its write's intended
/// time (`intended_ms`) plus `lead_ms`, plus its share `i / n` of `window_ms`, so that the
/// deadlines of a closed loop's keys (all intended at the start) spread evenly over the window.
pub fn deadline_ms(intended_ms: u64, lead_ms: u64, window_ms: u64, i: u64, n: u64) -> u64 {
    let share = (u128::from(window_ms) * u128::from(i) / u128::from(n.max(1))) as u64;
    intended_ms.saturating_add(lead_ms).saturating_add(share)
}

/// What one test's keys came to.
#[derive(Clone, Debug)]
pub struct Expiry {
    /// Timed keys written (their `SET` answered `OK`).
    pub written: u64,
    /// Of those, notified (once each).
    pub notified: u64,
    /// Written but not notified before the listener stopped, at least the grace after each
    /// key's deadline.
    pub never_notified: u64,
    /// Written and not notified when the listener was stopped early (a Ctrl-C) before the
    /// grace after their deadline was over: not waited for, so not counted as never notified.
    pub unwaited: u64,
    /// Notifications of a timed key already notified.
    pub duplicated: u64,
    /// Notifications read before the key's deadline (a clock step: 0 on one machine); their
    /// lag is recorded as 0.
    pub early: u64,
    /// Notifications of keys this test did not time (someone else's expiring keys).
    pub others: u64,
    /// Deadline to notification, in microseconds.
    pub lag: Histogram<u64>,
    /// The first and the last notification's arrival (ns since the Unix epoch).
    pub first_ns: u64,
    /// See `first_ns`.
    pub last_ns: u64,
    /// The grace after each deadline, ms.
    pub grace_ms: u64,
    /// The window the deadlines spread over, ms.
    pub window_ms: u64,
    /// The rise of the server's `expired_keys` (`INFO stats`) over the test, when read.
    pub server_expired: Option<u64>,
}

impl Expiry {
    /// Empty, with a lag histogram of `sigfig` significant figures.
    pub fn new(sigfig: u8) -> Result<Expiry, String> {
        Ok(Expiry {
            written: 0,
            notified: 0,
            never_notified: 0,
            unwaited: 0,
            duplicated: 0,
            early: 0,
            others: 0,
            lag: new_histogram(sigfig)?,
            first_ns: 0,
            last_ns: 0,
            grace_ms: 0,
            window_ms: 0,
            server_expired: None,
        })
    }

    /// Notifications per second: the distinct ones over the span from the first to the last.
    pub fn per_second(&self) -> Option<f64> {
        let span = self.last_ns.checked_sub(self.first_ns).filter(|&s| s > 0)?;
        Some(self.notified as f64 / (span as f64 / 1e9))
    }

    /// The share of the written keys never notified (0 when none were written).
    pub fn never_share(&self) -> f64 {
        if self.written == 0 {
            0.0
        } else {
            self.never_notified as f64 / self.written as f64
        }
    }

    /// Adds `other` (another node's, or another run's): counts and histograms add.
    pub fn merge(&mut self, other: &Expiry) -> Result<(), String> {
        let add = |a: &mut u64, b: u64, what: &str| {
            *a = a.checked_add(b).ok_or_else(|| format!("expiry.{what} overflows"))?;
            Ok::<(), String>(())
        };
        let had = self.notified > 0;
        add(&mut self.written, other.written, "written")?;
        add(&mut self.notified, other.notified, "notified")?;
        add(&mut self.never_notified, other.never_notified, "never_notified")?;
        add(&mut self.unwaited, other.unwaited, "unwaited")?;
        add(&mut self.duplicated, other.duplicated, "duplicated")?;
        add(&mut self.early, other.early, "early")?;
        add(&mut self.others, other.others, "others")?;
        self.lag.add(&other.lag).map_err(|e| format!("expiry.lag: {e:?}"))?;
        if other.notified > 0 {
            self.first_ns = if had { self.first_ns.min(other.first_ns) } else { other.first_ns };
            self.last_ns = self.last_ns.max(other.last_ns);
        }
        self.grace_ms = self.grace_ms.max(other.grace_ms);
        self.window_ms = self.window_ms.max(other.window_ms);
        self.server_expired = match (self.server_expired, other.server_expired) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        Ok(())
    }
}

/// One test's timed keys as they are written and notified.
#[derive(Debug)]
pub struct Watch {
    /// Each key's deadline (ms since the Unix epoch); 0: not written.
    deadlines: Vec<u64>,
    /// Whether each key was notified.
    seen: Vec<bool>,
    expiry: Expiry,
}

impl Watch {
    /// For `n` keys (at most [`MAX_KEYS`]), lags of `sigfig` significant figures.
    pub fn new(n: u64, sigfig: u8) -> Result<Watch, String> {
        if n > MAX_KEYS {
            return Err(format!("-t expiry times at most {MAX_KEYS} keys, not {n}"));
        }
        let n = n as usize;
        Ok(Watch { deadlines: vec![0; n], seen: vec![false; n], expiry: Expiry::new(sigfig)? })
    }

    /// Key `i` was written with `deadline_ms` (its `SET` answered `OK`).
    pub fn written(&mut self, i: u64, deadline_ms: u64) {
        if let Some(d) = self.deadlines.get_mut(i as usize) {
            if *d == 0 {
                self.expiry.written += 1;
            }
            *d = deadline_ms.max(1);
        }
    }

    /// A notification of key `i` (`None`: a key this test does not time) read at `at_ns`.
    pub fn notified(&mut self, i: Option<u64>, at_ns: u64) {
        let e = &mut self.expiry;
        let Some(i) = i.map(|i| i as usize).filter(|&i| i < self.deadlines.len()) else {
            e.others += 1;
            return;
        };
        let deadline = self.deadlines[i];
        if deadline == 0 {
            // Never written by this test: a key of the same name left from another run.
            e.others += 1;
            return;
        }
        if self.seen[i] {
            e.duplicated += 1;
            return;
        }
        self.seen[i] = true;
        let deadline_ns = deadline.saturating_mul(1_000_000);
        let lag_us = match at_ns.checked_sub(deadline_ns) {
            Some(ns) => ns / 1000,
            None => {
                e.early += 1;
                0
            }
        };
        // Saturates: the value is clamped into the histogram's range.
        e.lag.saturating_record(lag_us.max(1));
        if e.notified == 0 || at_ns < e.first_ns {
            e.first_ns = at_ns;
        }
        e.last_ns = e.last_ns.max(at_ns);
        e.notified += 1;
    }

    /// Distinct timed keys notified so far.
    pub fn notified_count(&self) -> u64 {
        self.expiry.notified
    }

    /// The latest deadline of a written key (ms), 0 when none was written.
    pub fn last_deadline(&self) -> u64 {
        self.deadlines.iter().copied().max().unwrap_or(0)
    }

    /// The summary: keys written and not notified are `never_notified` when the listener
    /// stopped at `stopped_ms` (ms since the Unix epoch) `grace_ms` or more after their
    /// deadline, `unwaited` when it stopped sooner; `window_ms` is the test's.
    pub fn finish(mut self, grace_ms: u64, window_ms: u64, stopped_ms: u64) -> Expiry {
        let e = &mut self.expiry;
        for (&d, &seen) in self.deadlines.iter().zip(&self.seen) {
            if d != 0 && !seen {
                match d.saturating_add(grace_ms) <= stopped_ms {
                    true => e.never_notified += 1,
                    false => e.unwaited += 1,
                }
            }
        }
        e.grace_ms = grace_ms;
        e.window_ms = window_ms;
        self.expiry
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::value_at_percentile;

    #[test]
    fn keys_name_their_index_and_nothing_else() {
        let k = key("p:", 42);
        assert_eq!(k, b"p:respbench:expiry:000000000042");
        assert_eq!(index(b"p:", &k), Some(42));
        assert_eq!(index(b"", &k), None);
        assert_eq!(index(b"p:", b"p:respbench:expiry:volatile:000000000042"), None);
        assert_eq!(index(b"p:", b"p:respbench:expiry:00000000004x"), None);
        assert_eq!(index(b"p:", b"p:respbench:expiry:42"), None);
    }

    #[test]
    fn deadlines_spread_over_the_window_after_the_lead() {
        assert_eq!(deadline_ms(1_000, 1_000, 2_000, 0, 4), 2_000);
        assert_eq!(deadline_ms(1_000, 1_000, 2_000, 1, 4), 2_500);
        assert_eq!(deadline_ms(1_000, 1_000, 2_000, 3, 4), 3_500);
        assert_eq!(deadline_ms(u64::MAX, 1, 1, 0, 1), u64::MAX);
        assert_eq!(deadline_ms(0, 0, u64::MAX, u64::MAX - 1, u64::MAX), u64::MAX - 1);
    }

    /// Virtual time: keys written at t = 0 with deadlines 1 s ahead and notified 5 ms after
    /// their deadlines lag 5 ms, not the second from their write.
    #[test]
    fn the_lag_counts_from_the_deadline_not_from_the_write() {
        let written_ms = 1_700_000_000_000u64;
        let mut w = Watch::new(100, 3).unwrap();
        for i in 0..100 {
            w.written(i, deadline_ms(written_ms, 1_000, 0, i, 100));
        }
        for i in 0..100 {
            w.notified(Some(i), (written_ms + 1_005) * 1_000_000);
        }
        let e = w.finish(5_000, 0, u64::MAX);
        assert_eq!((e.written, e.notified, e.never_notified, e.early), (100, 100, 0, 0));
        assert!(e.lag.equivalent(value_at_percentile(&e.lag, 50.0), 5_000));
        assert!(e.lag.equivalent(e.lag.max(), 5_000));
        assert_eq!(e.lag.len(), 100);
    }

    #[test]
    fn duplicates_strangers_early_and_missing_are_counted_apart() {
        let mut w = Watch::new(4, 3).unwrap();
        for i in 0..3 {
            w.written(i, 10_000 + i * 1_000);
        }
        w.notified(Some(0), 10_020_000_000);
        w.notified(Some(0), 10_030_000_000);
        w.notified(Some(1), 10_500_000_000);
        w.notified(Some(3), 20_000_000_000);
        w.notified(Some(99), 20_000_000_000);
        w.notified(None, 20_000_000_000);
        assert_eq!(w.notified_count(), 2);
        assert_eq!(w.last_deadline(), 12_000);
        let e = w.finish(5_000, 2_000, 17_000);
        assert_eq!((e.written, e.notified, e.never_notified, e.unwaited), (3, 2, 1, 0));
        assert_eq!((e.duplicated, e.early, e.others), (1, 1, 3));
        assert_eq!(e.lag.len(), 2);
        assert!(e.lag.equivalent(value_at_percentile(&e.lag, 100.0), 20_000));
        assert_eq!((e.first_ns, e.last_ns), (10_020_000_000, 10_500_000_000));
        let rate = e.per_second().unwrap();
        assert!((rate - 2.0 / 0.48).abs() < 1e-9, "{rate}");
        assert!((e.never_share() - 1.0 / 3.0).abs() < 1e-12);
    }

    /// Virtual time: a listener stopped before a key's grace was over did not wait for it.
    #[test]
    fn keys_not_waited_for_are_not_counted_as_never_notified() {
        let mut w = Watch::new(3, 3).unwrap();
        w.written(0, 1_000);
        w.written(1, 2_000);
        w.written(2, 9_000);
        let e = w.finish(5_000, 0, 6_500);
        assert_eq!((e.never_notified, e.unwaited), (1, 2));
    }

    #[test]
    fn merging_adds_counts_and_keeps_the_span() {
        let mut a = Watch::new(2, 3).unwrap();
        a.written(0, 1_000);
        a.notified(Some(0), 1_002_000_000);
        let mut b = Watch::new(2, 3).unwrap();
        b.written(1, 1_000);
        b.notified(Some(1), 1_001_000_000);
        let (mut a, b) = (a.finish(5_000, 2_000, u64::MAX), b.finish(5_000, 2_000, u64::MAX));
        a.server_expired = Some(1);
        a.merge(&b).unwrap();
        assert_eq!((a.written, a.notified, a.lag.len()), (2, 2, 2));
        assert_eq!((a.first_ns, a.last_ns), (1_001_000_000, 1_002_000_000));
        assert_eq!(a.server_expired, Some(1));
        assert!(Watch::new(MAX_KEYS + 1, 3).is_err());
    }
}
