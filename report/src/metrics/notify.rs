//! Timed notifications (issue #52) for Prometheus: `-t expiry`'s lag from each deadline to its
//! expired event and its keys by outcome, `-t tracking`'s invalidation latency (from each
//! write's send) and its invalidations by outcome. Set when the test's result comes (the
//! notification tests run on threads of their own, not the event loops that publish live
//! figures). Pure: no IO, no clock.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use respbench_core::Stats;

/// Writes a histogram family's samples of some histograms together: the family, its labels.
pub type WriteHistogram<'a> = &'a dyn Fn(&mut String, &str, &[(&str, &str)], &[Histogram<u64>]);

/// Writes a family's `HELP` and `TYPE`.
pub type WriteHeader<'a> = &'a dyn Fn(&mut String, &str);

/// A sample's labels written out.
pub type Labels<'a> = &'a dyn Fn(&[(&str, &str)]) -> String;

/// The figures of one test's notifications.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Notify {
    /// `-t expiry`: deadline to notification, each test's (a label's tests add up).
    pub expiry_lag: Vec<Histogram<u64>>,
    /// `-t expiry`'s timed keys by outcome (written, notified, never_notified, unwaited,
    /// duplicated, others).
    pub expiry_keys: BTreeMap<&'static str, u64>,
    /// `-t tracking`: a write's send to its invalidation on a reader, each test's.
    pub invalidation: Vec<Histogram<u64>>,
    /// `-t tracking`'s invalidations by outcome (expected, received, lost, duplicated,
    /// flushed, others, before_ack).
    pub invalidations: BTreeMap<&'static str, u64>,
}

/// The families: name, whether a histogram (else a counter, by `outcome`), help.
pub const FAMILIES: [(&str, bool, &str); 4] = [
    ("respbench_expiry_lag_seconds", true, "-t expiry: the time from a key's deadline to its expired event."),
    ("respbench_expiry_keys", false, "-t expiry: the timed keys, by outcome."),
    (
        "respbench_invalidation_latency_seconds",
        true,
        "-t tracking: the time from a write's send (intended send at --rps) to its invalidation on a reader.",
    ),
    ("respbench_invalidations", false, "-t tracking: the invalidations, by outcome (expected is for each reader the keys it tracked that were written)."),
];

impl Notify {
    /// A test's notifications (`None` for another test).
    pub fn of(s: &Stats) -> Option<Notify> {
        let mut n = Notify::default();
        if let Some(e) = &s.expiry {
            n.expiry_lag = vec![e.lag.clone()];
            n.expiry_keys = BTreeMap::from([
                ("written", e.written),
                ("notified", e.notified),
                ("never_notified", e.never_notified),
                ("unwaited", e.unwaited),
                ("duplicated", e.duplicated),
                ("others", e.others),
            ]);
        }
        if let Some(t) = &s.tracking {
            n.invalidation = vec![t.latency.clone()];
            n.invalidations = BTreeMap::from([
                ("expected", t.expected),
                ("received", t.received),
                ("lost", t.lost),
                ("duplicated", t.duplicated),
                ("flushed", t.flushed),
                ("others", t.others),
                ("before_ack", t.before_ack),
            ]);
        }
        (s.expiry.is_some() || s.tracking.is_some()).then_some(n)
    }

    /// Adds `other`'s figures.
    pub fn add(&mut self, other: &Notify) {
        self.expiry_lag.extend(other.expiry_lag.iter().cloned());
        self.invalidation.extend(other.invalidation.iter().cloned());
        for (to, from) in
            [(&mut self.expiry_keys, &other.expiry_keys), (&mut self.invalidations, &other.invalidations)]
        {
            for (k, v) in from {
                let e = to.entry(k).or_default();
                *e = e.saturating_add(*v);
            }
        }
    }
}

/// Writes each family's samples of `tests` (each test's [`Notify`], labelled with its title
/// and `worker`) to `out`, in the format's ways: `header` writes a family's HELP and TYPE,
/// `histogram` a histogram's samples, `labels` a sample's labels.
pub fn render<'a>(
    out: &mut String,
    tests: impl Iterator<Item = (&'a String, &'a Notify)> + Clone,
    worker: &str,
    (header, histogram, labels): (WriteHeader<'_>, WriteHistogram<'_>, Labels<'_>),
) {
    for (family, is_histogram, _) in FAMILIES {
        header(out, family);
        for (test, n) in tests.clone() {
            let l = [("test", test.as_str()), ("worker", worker)];
            let (buckets, counts) = match family {
                "respbench_expiry_lag_seconds" | "respbench_expiry_keys" => (&n.expiry_lag, &n.expiry_keys),
                _ => (&n.invalidation, &n.invalidations),
            };
            match (is_histogram, buckets.is_empty()) {
                (true, false) => histogram(out, family, &l, buckets),
                (true, true) => {}
                (false, _) => {
                    for (outcome, v) in counts {
                        let l = labels(&[("test", test), ("outcome", outcome), ("worker", worker)]);
                        let _ = writeln!(out, "{family}_total{l} {v}");
                    }
                }
            }
        }
    }
}
