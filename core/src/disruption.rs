//! What an event during a test cost (`--at`): the test's 100 ms windows ([`Window`]), each loop's
//! open ones ([`Fine`]), and the [`Tracker`] that the collector feeds each window as it closes,
//! in order, and that makes one [`Disruption`] per event. Pure: the event instants and the
//! windows come in, the report goes out.
//!
//! The rules, for an event sent at `t`:
//! - the **baseline** is the p50 and p99 of the [`BASELINE_WINDOWS`] windows before the event's
//!   window, their histograms merged;
//! - the **threshold** is [`TOLERANCE`] × the highest p99 of those windows one by one, so a
//!   disruption must stand above the test's own variation before the event (a busy machine's
//!   windows vary from under 1 ms to tens of ms with nothing happening); with fewer than
//!   [`MIN_BASELINE_WINDOWS`] of them with replies the latency is not judged (the threshold is
//!   `u64::MAX`): only errors, losses and redirects are bad;
//! - a window after the event's is **healthy** when it has replies (or is empty where some
//!   baseline window was empty too: a low rate), its p99 is within the threshold, and it had no
//!   error, lost request or redirect; it is **bad** otherwise;
//! - the disruption ends at the first healthy window after the first bad moment; if no bad
//!   moment came within [`SETTLE`] of the event, or before the test ended, the event disrupted
//!   nothing; it is **not recovered** only when a bad moment came and every window from it to
//!   the end was bad by the same threshold;
//! - the **recovery instant** is the latest bad moment before that healthy window: the latest
//!   reply slower than the threshold (each window keeps, per power-of-two latency bucket, the
//!   time of its latest reply: finer than the window), error, loss or redirect, or the end of a
//!   window with no reply at all. The window's length is the recovery instant − `t`.
//!
//! Memory stays bounded however long the test: the last [`BASELINE_WINDOWS`] windows, one
//! accumulator per unresolved event, and each event's summaries from its baseline to
//! [`AFTER_WINDOWS`] past its recovery (at most [`SERIES_MAX`]).

use std::collections::VecDeque;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::resp::error_prefix;
use crate::shared::{new_histogram, value_at_percentile, SERIES_SIGFIG};
use crate::Time;

/// A window's length: 100 ms.
pub const WINDOW: Duration = Duration::from_millis(100);
const WINDOW_NANOS: u64 = 100_000_000;
/// How many windows before the event make its baseline (5 s).
pub const BASELINE_WINDOWS: usize = 50;
/// A healthy window's p99 is at most this many times the highest p99 of the baseline's windows.
pub const TOLERANCE: f64 = 1.2;
/// The fewest baseline windows with replies that judge a window's latency (1 s).
pub const MIN_BASELINE_WINDOWS: usize = 10;
/// How long after the event a first bad moment may come; none by then: no disruption.
pub const SETTLE: Duration = Duration::from_secs(1);
/// How many windows after the recovery an event's series keeps (2 s).
pub const AFTER_WINDOWS: usize = 20;
/// The most windows an event's series keeps from its baseline on (65 s).
pub const SERIES_MAX: usize = 650;
/// Power-of-two latency buckets a window times its latest reply in (1 µs to over an hour).
pub const BUCKETS: usize = 32;
/// The redirect kinds a window counts, in [`crate::stats::Redirects::kinds`]' order.
pub const REDIRECT_KINDS: [&str; 4] = ["moved", "ask", "tryagain", "clusterdown"];

/// The power-of-two bucket of a latency of `micros` µs: `floor(log2)`, 0 for 0 and 1.
fn bucket(micros: u64) -> usize {
    (63 - micros.max(1).leading_zeros() as usize).min(BUCKETS - 1)
}

/// One 100 ms window of a test: counts, latency histogram ([`SERIES_SIGFIG`] figures, µs), and
/// when within it its latest reply of each latency bucket, error and redirect came.
#[derive(Clone, Debug)]
pub struct Window {
    /// Replies parsed in it.
    pub requests: u64,
    /// Error replies among them (redirects not included: they are not replies).
    pub errors: u64,
    /// Requests lost with their connection.
    pub lost: u64,
    /// Redirects, by [`REDIRECT_KINDS`].
    pub redirects: [u64; 4],
    /// Error replies by prefix.
    pub error_kinds: Vec<(String, u64)>,
    /// The replies' latencies (corrected in an open loop).
    pub latency: Histogram<u64>,
    /// Per latency bucket ([`bucket`]): the latest reply's offset in the window in µs, plus 1
    /// (0: none).
    pub latest: [u32; BUCKETS],
    /// The latest error, loss or redirect's offset in µs, plus 1 (0: none).
    pub latest_bad: u32,
}

impl Window {
    /// An empty window.
    pub fn new() -> Window {
        Window {
            requests: 0,
            errors: 0,
            lost: 0,
            redirects: [0; 4],
            error_kinds: Vec::new(),
            // Cannot fail: SERIES_SIGFIG is in range.
            latency: new_histogram(SERIES_SIGFIG).unwrap_or_else(|_| Histogram::new(2).expect("sigfig 2")),
            latest: [0; BUCKETS],
            latest_bad: 0,
        }
    }

    /// Adds another loop's same window.
    pub fn add(&mut self, o: &Window) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.lost += o.lost;
        for (a, b) in self.redirects.iter_mut().zip(o.redirects) {
            *a += b;
        }
        for (k, n) in &o.error_kinds {
            self.add_error_kind(k.as_bytes(), *n);
        }
        // Same bounds and precision on both sides: cannot fail.
        let _ = self.latency.add(&o.latency);
        for (a, b) in self.latest.iter_mut().zip(o.latest) {
            *a = (*a).max(b);
        }
        self.latest_bad = self.latest_bad.max(o.latest_bad);
    }

    fn add_error_kind(&mut self, prefix: &[u8], n: u64) {
        match self.error_kinds.iter_mut().find(|(k, _)| k.as_bytes() == prefix) {
            Some(k) => k.1 += n,
            None => self.error_kinds.push((String::from_utf8_lossy(prefix).into_owned(), n)),
        }
    }

    fn redirect_total(&self) -> u64 {
        self.redirects.iter().sum()
    }

    /// The latest moment in µs from the window's start, plus 1, of a reply in bucket `from` or
    /// above, or of an error, loss or redirect (0: none).
    fn latest_from(&self, from: usize) -> u32 {
        self.latest[from.min(BUCKETS)..].iter().copied().max().unwrap_or(0).max(self.latest_bad)
    }
}

impl Default for Window {
    fn default() -> Window {
        Window::new()
    }
}

/// The windows one event loop is still recording, from the test's `start` on.
#[derive(Clone, Debug)]
pub struct Fine {
    start: Time,
    first: usize,
    open: VecDeque<Window>,
}

impl Fine {
    /// Windows from `start` on.
    pub fn new(start: Time) -> Fine {
        Fine { start, first: 0, open: VecDeque::new() }
    }

    /// The window `now` falls in and the offset in it in µs, plus 1. A moment before the test's
    /// start, or in a window already handed out, counts at the start of the oldest one open.
    fn at(&mut self, now: Time) -> (&mut Window, u32) {
        let since = now.nanos_since(self.start);
        let mut k = (since / WINDOW_NANOS) as usize;
        let mut offset = ((since % WINDOW_NANOS) / 1000) as u32 + 1;
        if k < self.first {
            (k, offset) = (self.first, 1);
        }
        let i = k - self.first;
        if self.open.len() <= i {
            self.open.resize_with(i + 1, Window::new);
        }
        (&mut self.open[i], offset)
    }

    /// Records `n` replies of `micros` µs at `now`.
    pub fn reply(&mut self, micros: u64, n: u64, now: Time) {
        let (w, at) = self.at(now);
        w.requests += n;
        let _ = w.latency.record_n(micros, n);
        let b = &mut w.latest[bucket(micros)];
        *b = (*b).max(at);
    }

    /// Records an error reply (already recorded as a reply) with message `message` at `now`.
    pub fn error(&mut self, message: &[u8], now: Time) {
        let (w, at) = self.at(now);
        w.errors += 1;
        w.add_error_kind(error_prefix(message), 1);
        w.latest_bad = w.latest_bad.max(at);
    }

    /// Records `n` requests lost with their connection at `now`.
    pub fn lost(&mut self, n: u64, now: Time) {
        let (w, at) = self.at(now);
        w.lost += n;
        w.latest_bad = w.latest_bad.max(at);
    }

    /// Records a redirect of kind `kind` ([`REDIRECT_KINDS`]' index) at `now`.
    pub fn redirect(&mut self, kind: usize, now: Time) {
        let (w, at) = self.at(now);
        if let Some(r) = w.redirects.get_mut(kind) {
            *r += 1;
        }
        w.latest_bad = w.latest_bad.max(at);
    }

    /// Takes the windows before `upto`: the index of the first, and the windows.
    fn take_before(&mut self, upto: usize) -> (usize, Vec<Window>) {
        let first = self.first;
        let n = upto.saturating_sub(first).min(self.open.len());
        let taken = self.open.drain(..n).collect();
        self.first = upto.max(first);
        (first, taken)
    }

    /// How many windows are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

/// One window summarised, as an event's series keeps it. Latencies in µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowSummary {
    /// The window's start, from the test's start.
    pub at: Duration,
    /// Replies.
    pub requests: u64,
    /// Error replies and lost requests.
    pub errors: u64,
    /// Redirects.
    pub redirects: u64,
    /// Median latency.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// The highest.
    pub max: u64,
}

impl WindowSummary {
    fn of(k: usize, w: &Window) -> WindowSummary {
        WindowSummary {
            at: WINDOW * k as u32,
            requests: w.requests,
            errors: w.errors + w.lost,
            redirects: w.redirect_total(),
            p50: value_at_percentile(&w.latency, 50.0),
            p99: value_at_percentile(&w.latency, 99.0),
            max: if w.latency.is_empty() { 0 } else { w.latency.max() },
        }
    }
}

/// What one event cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Disruption {
    /// When the event was due, from the test's start.
    pub planned: Duration,
    /// When it was sent (or its program started), from the test's start; `None` when the
    /// test ended first (it was never sent, and the rest measures nothing of it).
    pub sent: Option<Duration>,
    /// The baseline's median and 99th percentile (µs), over how many replies and windows.
    pub baseline_p50: u64,
    /// See `baseline_p50`.
    pub baseline_p99: u64,
    /// See `baseline_p50`.
    pub baseline_requests: u64,
    /// See `baseline_p50`.
    pub baseline_windows: u64,
    /// A healthy window's p99 is at most this (µs): [`TOLERANCE`] × the highest p99 of the
    /// baseline's windows; `u64::MAX` when fewer than [`MIN_BASELINE_WINDOWS`] had replies.
    pub threshold: u64,
    /// Whether a bad moment came within [`SETTLE`] of the event.
    pub disrupted: bool,
    /// The window's length: from the event to the recovery instant; `None`: not recovered by
    /// the end of the test.
    pub recovered: Option<Duration>,
    /// The measured span: from the event's window's start, so many windows.
    pub from: Duration,
    /// See `from`.
    pub windows: u64,
    /// In the span: replies, error replies, lost requests, redirects by kind, error replies by
    /// prefix, the highest latency and the p99 (µs).
    pub requests: u64,
    /// See `requests`.
    pub errors: u64,
    /// See `requests`.
    pub lost: u64,
    /// See `requests`.
    pub redirects: [u64; 4],
    /// See `requests`.
    pub error_kinds: Vec<(String, u64)>,
    /// See `requests`.
    pub max: u64,
    /// See `requests`.
    pub p99: u64,
    /// The windows from the baseline's start to [`AFTER_WINDOWS`] past the recovery.
    pub series: Vec<WindowSummary>,
}

impl Disruption {
    /// Replies per second in the span.
    pub fn rate(&self) -> f64 {
        let secs = (WINDOW * self.windows.max(1) as u32).as_secs_f64();
        self.requests as f64 / secs
    }
}

#[derive(Debug)]
enum State {
    Waiting,
    Open { acc: Box<Window>, seen_bad: bool, last_bad: u64 },
    Done,
}

#[derive(Debug)]
struct Tracked {
    planned: u64,
    sent: Option<u64>,
    /// Whether the test ended before it was sent.
    never: bool,
    state: State,
    d: Disruption,
    /// Windows still to append to the series once done.
    after: usize,
    /// Whether a baseline window had no reply and nothing bad: then an empty window is not.
    quiet_ok: bool,
}

impl Tracked {
    /// The event's instant in ns from the test's start: when it was sent, else when it was due.
    fn at(&self) -> u64 {
        self.sent.unwrap_or(self.planned)
    }
}

/// Makes one [`Disruption`] per event from the test's windows, fed in order as they close.
#[derive(Debug, Default)]
pub struct Tracker {
    events: Vec<Tracked>,
    ring: VecDeque<(Window, WindowSummary)>,
    /// The next window to process.
    next: usize,
    /// Windows that closed while an event due in them had not said when it was sent.
    held: VecDeque<Window>,
}

impl Tracker {
    /// A tracker of events due at `planned`, from the test's start.
    pub fn new(planned: &[Duration]) -> Tracker {
        let events = planned
            .iter()
            .map(|&p| Tracked {
                planned: p.as_nanos().min(u128::from(u64::MAX)) as u64,
                sent: None,
                never: false,
                state: State::Waiting,
                d: Disruption {
                    planned: p,
                    sent: None,
                    baseline_p50: 0,
                    baseline_p99: 0,
                    baseline_requests: 0,
                    baseline_windows: 0,
                    threshold: 0,
                    disrupted: false,
                    recovered: None,
                    from: Duration::ZERO,
                    windows: 0,
                    requests: 0,
                    errors: 0,
                    lost: 0,
                    redirects: [0; 4],
                    error_kinds: Vec::new(),
                    max: 0,
                    p99: 0,
                    series: Vec::new(),
                },
                after: AFTER_WINDOWS,
                quiet_ok: false,
            })
            .collect();
        Tracker { events, ..Tracker::default() }
    }

    /// Event `i` was sent `at` after the test's start.
    pub fn sent(&mut self, i: usize, at: Duration) {
        if let Some(e) = self.events.get_mut(i) {
            e.sent = Some(at.as_nanos().min(u128::from(u64::MAX)) as u64);
            e.d.sent = Some(at);
        }
        self.release();
    }

    /// Whether some event due by the end of window `k` has not said when it was sent.
    fn waits(&self, k: usize) -> bool {
        let end = (k as u64 + 1) * WINDOW_NANOS;
        self.events.iter().any(|e| e.sent.is_none() && !e.never && e.planned < end)
    }

    /// The next window of the test has closed (every loop has passed it).
    pub fn window(&mut self, w: Window) {
        self.held.push_back(w);
        self.release();
    }

    fn release(&mut self) {
        while !self.held.is_empty() && !self.waits(self.next) {
            if let Some(w) = self.held.pop_front() {
                self.process(w);
            }
        }
    }

    fn process(&mut self, w: Window) {
        let k = self.next;
        self.next += 1;
        let start = k as u64 * WINDOW_NANOS;
        let end = start + WINDOW_NANOS;
        let summary = WindowSummary::of(k, &w);
        for e in &mut self.events {
            if e.never {
                continue;
            }
            let t = e.at();
            if matches!(e.state, State::Waiting) && t < end {
                let mut base = Window::new();
                for (b, s) in &self.ring {
                    base.add(b);
                    e.d.series.push(*s);
                }
                e.d.baseline_p50 = value_at_percentile(&base.latency, 50.0);
                e.d.baseline_p99 = value_at_percentile(&base.latency, 99.0);
                e.d.baseline_requests = base.requests;
                e.d.baseline_windows = self.ring.len() as u64;
                let answered: Vec<u64> =
                    self.ring.iter().filter(|(_, s)| s.requests > 0).map(|(_, s)| s.p99).collect();
                e.d.threshold = match answered.iter().max() {
                    Some(&top) if answered.len() >= MIN_BASELINE_WINDOWS => {
                        (top as f64 * TOLERANCE).ceil() as u64
                    }
                    _ => u64::MAX,
                };
                e.quiet_ok =
                    self.ring.iter().any(|(_, s)| s.requests == 0 && s.errors == 0 && s.redirects == 0);
                e.d.from = WINDOW * k as u32;
                e.state = State::Open { acc: Box::new(Window::new()), seen_bad: false, last_bad: t };
            }
            let mut closed = None;
            match &mut e.state {
                State::Waiting => {}
                State::Done => {
                    if e.after > 0 && e.d.series.len() < SERIES_MAX {
                        e.d.series.push(summary);
                        e.after -= 1;
                    }
                }
                State::Open { acc, seen_bad, last_bad } => {
                    if e.d.series.len() < SERIES_MAX {
                        e.d.series.push(summary);
                    }
                    let threshold = e.d.threshold;
                    let p99 = summary.p99;
                    let trouble = w.errors + w.lost + w.redirect_total() > 0;
                    let quiet = w.requests == 0 && !trouble;
                    let healthy = (w.requests > 0 || e.quiet_ok) && p99 <= threshold && !trouble;
                    let first_window = e.d.from.as_nanos() as u64 == start;
                    if *seen_bad && healthy && !first_window {
                        e.d.recovered = Some(Duration::from_nanos(last_bad.saturating_sub(t)));
                        Self::close(&mut e.d, acc, k);
                        closed = Some(());
                    } else {
                        acc.add(&w);
                    }
                    // The bad moments in this window after the event: replies slower than the
                    // threshold (in the buckets whose values all are; in a window whose p99 is
                    // over with none there, the threshold's own bucket), errors, losses,
                    // redirects; an empty window is bad to its end.
                    let above = bucket(threshold) + 1;
                    let mut latest = w.latest_from(above);
                    if latest == 0 && p99 > threshold {
                        latest = w.latest_from(above - 1);
                    }
                    let moment = if quiet && !e.quiet_ok {
                        Some(end)
                    } else if latest > 0 {
                        Some(start + (u64::from(latest) - 1) * 1000)
                    } else {
                        None
                    };
                    if let Some(m) = moment.filter(|&m| m >= t && closed.is_none()) {
                        *seen_bad = true;
                        *last_bad = (*last_bad).max(m);
                    }
                    if closed.is_none() && !*seen_bad && start >= t + SETTLE.as_nanos() as u64 {
                        // Nothing went wrong: recovered at the event.
                        e.d.recovered = Some(Duration::ZERO);
                        Self::close(&mut e.d, acc, k + 1);
                        closed = Some(());
                    }
                }
            }
            if closed.is_some() {
                e.state = State::Done;
            }
        }
        self.ring.push_back((w, summary));
        if self.ring.len() > BASELINE_WINDOWS {
            self.ring.pop_front();
        }
    }

    /// Writes the accumulated span (windows up to `upto`, excluded) into `d`.
    fn close(d: &mut Disruption, acc: &Window, upto: usize) {
        d.disrupted = d.recovered != Some(Duration::ZERO) || acc.errors + acc.lost + acc.redirect_total() > 0;
        d.windows = (upto as u64).saturating_sub(d.from.as_nanos() as u64 / WINDOW_NANOS);
        d.requests = acc.requests;
        d.errors = acc.errors;
        d.lost = acc.lost;
        d.redirects = acc.redirects;
        d.error_kinds = acc.error_kinds.clone();
        d.max = if acc.latency.is_empty() { 0 } else { acc.latency.max() };
        d.p99 = value_at_percentile(&acc.latency, 99.0);
    }

    /// The test is over: every window has been fed. Events still open did not recover; events
    /// never sent are marked so.
    pub fn finish(mut self) -> Vec<Disruption> {
        for e in &mut self.events {
            if e.sent.is_none() {
                e.never = true;
            }
        }
        self.release();
        let next = self.next;
        self.events
            .into_iter()
            .map(|mut e| {
                if let State::Open { acc, seen_bad, .. } = &e.state {
                    // Open with no bad moment: the test ended within the settling time, and
                    // nothing went wrong in it; recovered at the event.
                    e.d.recovered = (!seen_bad).then_some(Duration::ZERO);
                    Self::close(&mut e.d, acc, next);
                    e.d.disrupted |= *seen_bad;
                }
                e.d
            })
            .collect()
    }
}

/// Adds up the windows every loop records and feeds each to a [`Tracker`] once every loop has
/// passed it: what [`crate::collector::Collector`] holds for a test with events.
#[derive(Debug, Default)]
pub struct FineCollector {
    pending: VecDeque<Window>,
    marks: Vec<usize>,
    done: usize,
    /// The tracker fed.
    pub tracker: Tracker,
}

impl FineCollector {
    /// A collector for `loops` loops of a test with events due at `planned`.
    pub fn new(loops: usize, planned: &[Duration]) -> FineCollector {
        FineCollector { marks: vec![0; loops], tracker: Tracker::new(planned), ..FineCollector::default() }
    }

    /// Adds what loop `part` recorded in the windows that ended by `now` (all when `None`).
    pub fn publish(&mut self, part: usize, fine: &mut Fine, now: Option<Time>) {
        let upto = match now {
            Some(now) if now >= fine.start => (now.nanos_since(fine.start) / WINDOW_NANOS) as usize,
            Some(_) => 0,
            None => usize::MAX,
        };
        let (first, taken) = fine.take_before(upto);
        for (i, w) in taken.iter().enumerate() {
            let at = first + i;
            if at < self.done {
                continue;
            }
            let j = at - self.done;
            if self.pending.len() <= j {
                self.pending.resize_with(j + 1, Window::new);
            }
            self.pending[j].add(w);
        }
        if let Some(m) = self.marks.get_mut(part) {
            *m = (*m).max(upto);
        }
        let passed = self.marks.iter().copied().min().unwrap_or(usize::MAX);
        while self.done < passed {
            let Some(w) = self.pending.pop_front() else { break };
            self.done += 1;
            self.tracker.window(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(ms: u64) -> Time {
        Time::from_nanos(ms * MS)
    }

    /// A closed loop of one reply every `every` ms from `from` to `to` ms, latency from `lat`.
    fn run(f: &mut Fine, from: u64, to: u64, every: u64, lat: impl Fn(u64) -> u64) {
        let mut t = from;
        while t < to {
            f.reply(lat(t), 1, at(t));
            t += every;
        }
    }

    fn track(f: &mut Fine, planned: &[Duration], sent: &[Duration]) -> Vec<Disruption> {
        let mut c = FineCollector::new(1, planned);
        for (i, s) in sent.iter().enumerate() {
            c.tracker.sent(i, *s);
        }
        c.publish(0, f, None);
        c.tracker.finish()
    }

    #[test]
    fn a_pause_ends_at_its_last_slow_reply_not_at_its_window() {
        let mut f = Fine::new(Time::ZERO);
        // 100 µs replies every ms; the server pauses from 5,000 ms to 5,500 ms: the replies due
        // meanwhile come at 5,500-5,505 ms, late by up to 500 ms.
        run(&mut f, 0, 5000, 1, |_| 100);
        for i in 0..500 {
            f.reply((500 - i) * 1000, 1, at(5500 + i / 100));
        }
        run(&mut f, 5506, 8000, 1, |_| 100);
        let d = &track(&mut f, &[Duration::from_secs(5)], &[Duration::from_millis(5000)])[0];
        assert_eq!((d.baseline_p99, d.threshold, d.baseline_windows), (100, 120, 50));
        let w = d.recovered.unwrap();
        // The last reply slower than 120 µs came at 5,504 ms (±1 ms of the offsets' grain).
        assert!((503..=505).contains(&w.as_millis()), "{w:?}");
        assert!(d.disrupted);
        assert!(d.max >= 495_000 && d.max <= 505_000, "{}", d.max);
        // The span: the event's window to the first healthy one after it (5,600 ms).
        assert_eq!((d.from, d.windows), (Duration::from_secs(5), 6));
        // The baseline, the span, the healthy window and the windows after it.
        assert_eq!(d.series.len(), 50 + 6 + 1 + AFTER_WINDOWS);
    }

    #[test]
    fn errors_and_redirects_keep_the_window_open_until_they_stop() {
        let mut f = Fine::new(Time::ZERO);
        run(&mut f, 0, 3000, 1, |_| 200);
        // A failover: redirects from 3,120 to 3,340 ms, errors to 3,410 ms, fast replies all along.
        run(&mut f, 3000, 4000, 1, |_| 200);
        for t in (3120..3340).step_by(5) {
            f.redirect(0, at(t));
        }
        for t in (3340..=3410).step_by(10) {
            f.reply(200, 1, at(t));
            f.error(b"CLUSTERDOWN The cluster is down", at(t));
        }
        f.lost(3, at(3200));
        let d = &track(&mut f, &[Duration::from_secs(3)], &[Duration::from_millis(3001)])[0];
        assert_eq!(d.recovered, Some(Duration::from_millis(409)));
        assert_eq!(d.redirects, [44, 0, 0, 0]);
        assert_eq!((d.errors, d.lost), (8, 3));
        assert_eq!(d.error_kinds, [("CLUSTERDOWN".to_string(), 8)]);
        assert_eq!(d.windows, 5);
    }

    #[test]
    fn an_event_that_changes_nothing_recovers_at_once() {
        let mut f = Fine::new(Time::ZERO);
        run(&mut f, 0, 6000, 1, |t| 100 + t % 7);
        let d = &track(&mut f, &[Duration::from_secs(2)], &[Duration::from_millis(2003)])[0];
        assert_eq!(d.recovered, Some(Duration::ZERO));
        assert!(!d.disrupted);
        assert_eq!(d.baseline_windows, 20);
    }

    #[test]
    fn a_slowdown_to_the_end_is_not_recovered_and_unsent_events_say_so() {
        let mut f = Fine::new(Time::ZERO);
        run(&mut f, 0, 2000, 1, |_| 100);
        run(&mut f, 2000, 4000, 1, |_| 5000);
        let planned = [Duration::from_secs(2), Duration::from_secs(9)];
        let mut c = FineCollector::new(1, &planned);
        c.tracker.sent(0, Duration::from_secs(2));
        c.publish(0, &mut f, None);
        let d = c.tracker.finish();
        assert_eq!(d[0].recovered, None);
        assert!(d[0].disrupted && d[0].max >= 4900);
        assert_eq!(d[0].windows, 20);
        assert_eq!(d[1].sent, None);
    }

    #[test]
    fn windows_wait_for_the_send_time_and_loops_add_up() {
        let (mut a, mut b) = (Fine::new(Time::ZERO), Fine::new(Time::ZERO));
        run(&mut a, 0, 3000, 2, |_| 100);
        run(&mut b, 1, 3000, 2, |t| if (2100..2300).contains(&t) { 9000 } else { 100 });
        let mut c = FineCollector::new(2, &[Duration::from_millis(2050)]);
        c.publish(0, &mut a, Some(at(2500)));
        c.publish(1, &mut b, Some(at(2500)));
        // Windows to 2,000 ms were processed; those after wait for the send time.
        assert_eq!(c.tracker.next, 20);
        c.tracker.sent(0, Duration::from_millis(2060));
        assert_eq!(c.tracker.next, 25);
        c.publish(0, &mut a, None);
        c.publish(1, &mut b, None);
        let d = c.tracker.finish();
        assert_eq!(d[0].recovered, Some(Duration::from_millis(2299 - 2060)));
        assert_eq!(d[0].baseline_requests, 2000);
    }

    /// A busy machine's closed loop: a 200 µs reply every ms, and in the windows `spiky` picks
    /// three replies `spike` ms slow (a scheduler's stall), from `from` to `to` ms.
    fn noisy(f: &mut Fine, from: u64, to: u64, spike: impl Fn(u64) -> Option<u64>) {
        for t in from..to {
            let slow = spike(t / 100).filter(|_| t % 100 < 3);
            f.reply(slow.map_or(200, |ms| ms * 1000), 1, at(t));
        }
    }

    /// A spike of 1 to 30 ms in about half of the windows (the 20th's is 30 ms), drawn by a
    /// fixed xorshift.
    fn spike(k: u64) -> Option<u64> {
        let mut x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match k {
            20 => Some(30),
            _ if x.is_multiple_of(2) => Some(1 + (x >> 8) % 30),
            _ => None,
        }
    }

    #[test]
    fn a_no_op_within_the_tests_own_variation_disrupts_nothing() {
        // Spikes up to 30 ms before a no-op at 5 s, and after it in every window, never above
        // 30 ms: within the baseline's own windows, so no disruption is claimed (1.2 x the
        // merged baseline's p99 of 9 ms called the first spike above 11 ms a disruption, and
        // the spikes to the end "not recovered").
        let mut f = Fine::new(Time::ZERO);
        noisy(&mut f, 0, 5000, spike);
        noisy(&mut f, 5000, 8000, |k| Some(1 + k % 30));
        let d = &track(&mut f, &[Duration::from_secs(5)], &[Duration::from_millis(5001)])[0];
        assert!((8_000..10_000).contains(&d.baseline_p99), "{}", d.baseline_p99);
        assert!((36_000..36_200).contains(&d.threshold), "{}", d.threshold);
        assert_eq!((d.recovered, d.disrupted), (Some(Duration::ZERO), false));
        // The test ends 300 ms after the event, within the settling time, with nothing wrong:
        // no disruption, not "not recovered".
        let mut f = Fine::new(Time::ZERO);
        noisy(&mut f, 0, 5300, spike);
        let d = &track(&mut f, &[Duration::from_secs(5)], &[Duration::from_millis(5001)])[0];
        assert_eq!((d.recovered, d.disrupted), (Some(Duration::ZERO), false));
        // A low rate, a reply every 250 ms: the empty windows are the test's own, not bad.
        let mut f = Fine::new(Time::ZERO);
        run(&mut f, 0, 8000, 250, |_| 300);
        let d = &track(&mut f, &[Duration::from_secs(5)], &[Duration::from_millis(5010)])[0];
        assert_eq!((d.recovered, d.disrupted, d.threshold), (Some(Duration::ZERO), false, 362));
        // Fewer than 10 windows with replies before the event: its latency is not judged.
        let mut f = Fine::new(Time::ZERO);
        run(&mut f, 0, 8000, 600, |t| if t > 1000 { 90_000 } else { 300 });
        let d = &track(&mut f, &[Duration::from_secs(1)], &[Duration::from_millis(1010)])[0];
        assert_eq!((d.recovered, d.disrupted, d.threshold), (Some(Duration::ZERO), false, u64::MAX));
    }

    #[test]
    fn a_stall_above_the_tests_own_variation_is_claimed_and_recovers() {
        // The same noisy baseline, then the server stalls 300 ms at 5 s: the replies due
        // meanwhile come at 5,300-5,302 ms, up to 300 ms late; spikes up to 30 ms after it.
        let mut f = Fine::new(Time::ZERO);
        noisy(&mut f, 0, 5000, spike);
        for i in 0..300 {
            f.reply((300 - i) * 1000, 1, at(5300 + i / 100));
        }
        noisy(&mut f, 5303, 8000, |k| Some(1 + k % 30));
        let d = &track(&mut f, &[Duration::from_secs(5)], &[Duration::from_millis(5000)])[0];
        assert!(d.disrupted);
        let w = d.recovered.expect("recovered");
        assert!((300..=303).contains(&w.as_millis()), "{w:?}");
        assert!(d.max >= 295_000, "{}", d.max);
        // Stalled again at 7 s to the end: not recovered, on evidence of the same strength.
        let mut f = Fine::new(Time::ZERO);
        noisy(&mut f, 0, 5000, spike);
        run(&mut f, 5000, 8000, 1, |_| 60_000);
        let d = &track(&mut f, &[Duration::from_secs(5)], &[Duration::from_millis(5000)])[0];
        assert_eq!((d.recovered, d.disrupted), (None, true));
    }
}
