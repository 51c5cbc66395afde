//! What a backend needs to run one test: the plan, where to connect, how many clients and loops,
//! and the live figures the loops share while it runs ([`Progress`]). Threads and locks live
//! here, in the driver, not in the core.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use respbench_core::collector::Collector;
use respbench_core::stats::ErrorCounts;
use respbench_core::{Endpoint, Plan, Stats, Time};

/// How often at most a loop copies its histograms into [`Progress::figures`] (its counts go at
/// every publication): a scraper reading them every second or so needs no fresher ones, and the
/// copy walks each histogram's buckets.
pub const FIGURES_HISTOGRAMS_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// Live figures the event loops publish while a test runs (for the progress line and `--live`).
/// Every field is updated a few times a second, not per request. Stopping a test is the plan's
/// [`respbench_core::Stop`].
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests completed so far, all loops together.
    pub completed: AtomicU64,
    /// Connections whose handshake has completed and that are still open.
    pub live: AtomicU64,
    /// Connections that failed so far (`-I` ends at the first, as the peers do).
    pub failed: AtomicU64,
    /// The test's per-second series, all loops together: each second summarised once every
    /// loop has moved past it (what `--live` prints while the test runs, and the test's
    /// [`Stats::series`] at its end).
    pub series: Mutex<Collector>,
    /// Whether the loops keep a copy of their latency histograms here when they publish (a
    /// progress line shows the p99 so far): set before they start; off, publishing costs
    /// nothing more.
    pub keep_latency: AtomicBool,
    /// Each loop's latency histogram as it last published it, by loop (the progress line's
    /// percentiles so far: [`Progress::latency_percentile`]).
    latency: Mutex<Vec<Option<Histogram<u64>>>>,
    /// Whether the loops keep [`Figures`] of what they recorded (`--metrics`): set before they
    /// start; off, publishing costs nothing more.
    pub keep_figures: AtomicBool,
    /// Each loop's figures as it last published them, by loop ([`Progress::figures`]).
    figures: Mutex<Vec<Option<Figures>>>,
    /// The client machine's own pauses so far: the idle thread's and the loops' wake-ups.
    pub pauses: Mutex<Pauses>,
    /// `--ramp`: the step running, from 1 (0: no ramp), as the session marks each step's start.
    pub ramp_step: AtomicU64,
    /// `--ramp`: that step's level (its clients, or its target rate).
    pub ramp_level: AtomicU64,
    /// The server sampler's latest figures, by node (`--metrics`' `respbench_server_*`): set
    /// once a second by the session's sampler, not by the loops.
    pub server: Mutex<Vec<ServerGauges>>,
}

/// The server sampler's latest figures of one node, for `--metrics`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerGauges {
    /// The node's address.
    pub node: String,
    /// Each gauge's family name and value (none but the missing mark when the last reading had
    /// no reply).
    pub values: Vec<(&'static str, f64)>,
    /// A server on this machine: each thread's name and cores over the last interval.
    pub threads: Vec<(String, f64)>,
}

/// What one event loop (or one command of a mix, or one node, within it) has recorded so far,
/// as it last published it: cumulative counts and copies of its histograms, for a reader on
/// another thread (`--metrics`).
#[derive(Clone, Debug, Default)]
pub struct Figures {
    /// Replies received ([`Stats::requests`]).
    pub requests: u64,
    /// Error replies by prefix, and the requests lost with their connection (`connection`).
    pub errors: ErrorCounts,
    /// [`Stats::lost`].
    pub lost: u64,
    /// [`Stats::abandoned`].
    pub abandoned: u64,
    /// [`Stats::unsent`].
    pub unsent: u64,
    /// The corrected latency ([`Stats::latency`]), copied at most every
    /// [`FIGURES_HISTOGRAMS_EVERY`] and at the loop's end.
    pub latency: Option<Histogram<u64>>,
    /// The service time ([`Stats::service`]), likewise.
    pub service: Option<Histogram<u64>>,
    /// The send lateness ([`Stats::lateness`]), likewise.
    pub lateness: Option<Histogram<u64>>,
    /// A mix's commands ([`Stats::parts`]).
    pub parts: Vec<Figures>,
    /// Several nodes' ([`Stats::nodes`]).
    pub nodes: Vec<Figures>,
    /// The nodes that appeared during the test ([`Stats::appeared`]): those of `nodes` past
    /// the ones found at the start.
    pub appeared: Vec<Endpoint>,
}

/// Copies `from` into `to`, in place once `to` holds a histogram of the same bounds.
fn copy_histogram(to: &mut Option<Histogram<u64>>, from: Option<&Histogram<u64>>) {
    match (to.as_mut(), from) {
        (Some(h), Some(f)) => {
            h.reset();
            if h.add(f).is_err() {
                *h = f.clone();
            }
        }
        (None, Some(f)) => *to = Some(f.clone()),
        (_, None) => *to = None,
    }
}

impl Figures {
    /// Takes `stats`' counts, and its histograms when `histograms`.
    fn update(&mut self, stats: &Stats, histograms: bool) {
        self.requests = stats.requests;
        self.errors.clone_from(&stats.errors);
        (self.lost, self.abandoned, self.unsent) = (stats.lost, stats.abandoned, stats.unsent);
        self.appeared.clone_from(&stats.appeared);
        if histograms {
            copy_histogram(&mut self.latency, Some(&stats.latency));
            copy_histogram(&mut self.service, stats.service.as_ref());
            copy_histogram(&mut self.lateness, stats.lateness.as_ref());
        }
        for (list, of) in [(&mut self.parts, &stats.parts), (&mut self.nodes, &stats.nodes)] {
            list.resize_with(of.len(), Figures::default);
            for (f, s) in list.iter_mut().zip(of) {
                f.update(s, histograms);
            }
        }
    }
}

/// How long the idle thread sleeps between wake-ups ([`watch_pauses`]) during a test. Each
/// wake-up costs the machine a timer and two context switches, and on the client's own core it
/// preempts an event loop: at 1 ms the thread took 8% of the CPU of a pinned `-P 1` run (9,400
/// context switches against 1,200 without it; issue #55). At 10 ms it samples the same
/// distribution (a wake-up lands in a pause as often as a random instant does, and sees what is
/// left of it) with a tenth of the wake-ups; pauses shorter than the interval are caught in
/// proportion to their length rather than every time.
pub const PAUSE_INTERVAL: Duration = Duration::from_millis(10);

/// The idle thread's interval when it runs alone ([`watch_pauses`] before a capacity search,
/// with no test to slow down): every pause of 1 ms or more is seen.
pub const PROBE_PAUSE_INTERVAL: Duration = Duration::from_millis(1);

/// The client machine's own pauses during a test (jHiccup's method), as they are recorded: in
/// [`Progress::pauses`], live, for whoever reads the figures while the test runs.
#[derive(Debug, Clone)]
pub struct Pauses {
    /// The idle thread's interval.
    pub interval: Duration,
    /// How late the idle thread woke, in microseconds (0 for a wake-up on time).
    pub idle: Histogram<u64>,
    /// How late the event loops woke against the deadlines they asked for, in microseconds
    /// (only wake-ups at or after their deadline: a loop woken early by a socket was not late).
    pub wake: Histogram<u64>,
    /// Per second of the test (from the idle thread's start), its longest pause, microseconds.
    pub seconds: Vec<u64>,
    /// Per second of the test, the 99th percentile of its pauses (corrected as `idle` is),
    /// microseconds: each second's as it closed ([`Pauses::seconds_p99`] adds the open one's).
    closed_p99: Vec<u64>,
    /// The second being recorded, and its pauses.
    this_second: (usize, Histogram<u64>),
    /// How many times the idle thread woke (the histogram holds more: the wake-ups a pause
    /// held back).
    pub wakeups: u64,
}

impl Default for Pauses {
    fn default() -> Pauses {
        Pauses {
            interval: PAUSE_INTERVAL,
            idle: pause_histogram(),
            wake: pause_histogram(),
            seconds: Vec::new(),
            closed_p99: Vec::new(),
            this_second: (0, pause_histogram()),
            wakeups: 0,
        }
    }
}

/// A histogram of pauses: 0 to an hour in microseconds, 2 significant figures.
fn pause_histogram() -> Histogram<u64> {
    // Valid bounds: cannot fail.
    Histogram::new_with_bounds(1, respbench_core::shared::HIGHEST_MICROS, 2).expect("valid bounds")
}

/// The most seconds a test's pause series keeps (a day); later seconds add to the last.
const PAUSE_SECONDS: usize = 86_400;

impl Pauses {
    /// Records the idle thread's wake-up at `woke` for one asked at `asked`, `second` seconds
    /// into the test.
    pub fn record_idle(&mut self, asked: Time, woke: Time, second: usize) {
        let late =
            (woke.saturating_since(asked).as_micros() as u64).min(respbench_core::shared::HIGHEST_MICROS);
        // jHiccup's correction: a pause of 300 ms held back the wake-ups every interval
        // meant to happen during it, so it counts as what they would have seen (299, 298 … ms),
        // and the percentiles say how late anything due at a random instant was.
        let interval = (self.interval.as_micros() as u64).max(1);
        let _ = self.idle.record_correct(late, interval);
        self.wakeups += 1;
        let at = second.min(PAUSE_SECONDS - 1);
        if at != self.this_second.0 {
            // The second closed: its p99 kept, its histogram emptied for the next (a second
            // with no wake-up at all, a pause longer than it, keeps 0 there: its max says it).
            let (was, h) = &mut self.this_second;
            if self.closed_p99.len() <= *was {
                self.closed_p99.resize(*was + 1, 0);
            }
            self.closed_p99[*was] = h.value_at_quantile(0.99);
            h.reset();
            *was = at;
        }
        let _ = self.this_second.1.record_correct(late, interval);
        if self.seconds.len() <= at {
            self.seconds.resize(at + 1, 0);
        }
        self.seconds[at] = self.seconds[at].max(late);
    }
}

impl Pauses {
    /// Per second of the test, the 99th percentile of the idle thread's pauses, microseconds:
    /// as long as [`Pauses::seconds`], the second still open included, and never above that
    /// second's longest pause.
    pub fn seconds_p99(&self) -> Vec<u64> {
        let mut v = self.closed_p99.clone();
        v.resize(self.seconds.len(), 0);
        let (at, h) = &self.this_second;
        if let Some(slot) = v.get_mut(*at).filter(|_| !h.is_empty()) {
            *slot = h.value_at_quantile(0.99);
        }
        // A histogram's value is its bucket's highest (2 significant figures: seen 1,279 µs
        // against a longest pause of 1,275): never more than the second's own longest.
        for (p99, &max) in v.iter_mut().zip(&self.seconds) {
            *p99 = (*p99).min(max);
        }
        v
    }
}

/// Asks the kernel to wake this thread's sleeps within 1 ns of their time (Linux's timer slack
/// is 50 µs by default), so that the idle thread measures the machine's pauses, not the slack.
pub fn fine_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer and changes only this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// The idle thread: sleeps `interval` at a time on `clock` with `sleep`, and records how late
/// it woke in `progress`'s [`Pauses`] until `done`. The real one sleeps with
/// `std::thread::sleep`; a simulation moves its clock by the interval and its scripted pause.
pub fn watch_pauses(
    progress: &Progress,
    clock: &crate::Clock,
    interval: Duration,
    done: &AtomicBool,
    mut sleep: impl FnMut(Duration),
) {
    let start = clock.now();
    progress.pause_figures().interval = interval;
    while !done.load(Ordering::Relaxed) {
        let asked = clock.now() + interval;
        sleep(interval);
        let woke = clock.now();
        let second = woke.saturating_since(start).as_secs() as usize;
        progress.pause_figures().record_idle(asked, woke, second);
    }
}

impl Progress {
    /// Readies [`Progress::series`] for a test of `loops` event loops; before they start.
    pub fn begin(&self, loops: usize) {
        self.collector().begin(loops);
    }

    /// The series collector. A poisoned lock only means a loop panicked mid-add; the figures
    /// are still counts.
    pub fn collector(&self) -> std::sync::MutexGuard<'_, Collector> {
        self.series.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds what event loop `part` recorded since its last call (`published` says how far it
    /// got) to the live figures: completed requests, their latency sum, and the seconds of its
    /// series that have ended by `now` (every second when `now` is `None`: the loop is done).
    /// Loops call it a few times a second, not per request.
    pub fn publish(&self, part: usize, stats: &mut Stats, now: Option<Time>, published: &mut Published) {
        let requests = stats.requests;
        self.completed.fetch_add(requests.saturating_sub(published.requests), Ordering::Relaxed);
        published.requests = requests;
        if self.keep_latency.load(Ordering::Relaxed) {
            let mut parts = self.latency.lock().unwrap_or_else(|e| e.into_inner());
            if parts.len() <= part {
                parts.resize(part + 1, None);
            }
            // A copy of the loop's histogram, kept in place (no allocation after the first).
            match &mut parts[part] {
                Some(h) => {
                    h.reset();
                    // Same bounds and precision: the add cannot fail.
                    let _ = h.add(&stats.latency);
                }
                slot => *slot = Some(stats.latency.clone()),
            }
        }
        if self.keep_figures.load(Ordering::Relaxed) {
            self.publish_figures(part, stats, now, published);
        }
        if stats.keep_series {
            self.collector().publish(part, stats, now);
        }
    }

    /// Copies loop `part`'s figures for [`Progress::figures`]. The loop never waits for a
    /// reader: while one holds the figures, a publication that is not the loop's last is
    /// skipped (the next comes [`crate::PUBLISH_EVERY`] later); the last waits for the reader's
    /// copy to be done.
    fn publish_figures(&self, part: usize, stats: &Stats, now: Option<Time>, published: &mut Published) {
        let mut all = match now {
            None => self.figures.lock().unwrap_or_else(|e| e.into_inner()),
            Some(_) => match self.figures.try_lock() {
                Ok(all) => all,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return,
            },
        };
        if all.len() <= part {
            all.resize(part + 1, None);
        }
        let histograms = match (now, published.figures_at) {
            (Some(now), Some(at)) => now.saturating_since(at) >= FIGURES_HISTOGRAMS_EVERY,
            _ => true,
        };
        if histograms {
            published.figures_at = now;
        }
        all[part].get_or_insert_with(Figures::default).update(stats, histograms);
    }

    /// Each loop's figures as it last published them (`keep_figures`), by loop: a copy, for a
    /// reader a few times a second at most.
    pub fn figures(&self) -> Vec<Figures> {
        self.figures.lock().unwrap_or_else(|e| e.into_inner()).iter().flatten().cloned().collect()
    }
}

impl Progress {
    /// The pauses so far (a poisoned lock only means a thread panicked mid-record).
    pub fn pause_figures(&self) -> std::sync::MutexGuard<'_, Pauses> {
        self.pauses.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The latency at `percentile` (0 to 100) of every request completed so far, all loops
    /// together, in microseconds; `None` before the first. Merges the loops' histograms: for a
    /// reader a few times a second, not per request.
    pub fn latency_percentile(&self, percentile: f64) -> Option<u64> {
        let parts = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        let mut all: Option<Histogram<u64>> = None;
        for h in parts.iter().flatten() {
            match &mut all {
                Some(a) => {
                    let _ = a.add(h);
                }
                None => all = Some(h.clone()),
            }
        }
        all.filter(|h| !h.is_empty()).map(|h| h.value_at_percentile(percentile))
    }
}

/// How much of its figures one event loop has added to [`Progress`] so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Published {
    /// Completed requests.
    pub requests: u64,
    /// When the loop last copied its histograms into [`Progress::figures`].
    pub figures_at: Option<Time>,
}

/// Where a connection that comes back after a failure goes: asked again each time (a
/// Sentinel's primary, `--sentinel`), instead of the test's endpoint resolved again.
#[derive(Clone)]
pub struct Locate {
    /// What is located, for the report (the master's name).
    pub name: String,
    /// Asks where it is now; `None` keeps the address the connection had.
    pub find: Arc<dyn Fn() -> Option<Endpoint> + Send + Sync>,
    /// Bumped each time it moved (a Sentinel's `+switch-master`): the loops then move every
    /// connection that is up (it goes down and comes back where `find` says).
    pub moves: Arc<std::sync::atomic::AtomicU64>,
    /// Of `moves`, those heard as `+switch-master` (the others a connection found: the primary
    /// elsewhere when it asked again, after `-READONLY` or a lost connection), for the words of
    /// the connections it moves.
    pub switches: Arc<std::sync::atomic::AtomicU64>,
    /// `--rfr` over a Sentinel's primary and replicas: the replicas listed now, for a replica
    /// node's connection that comes back (`None`: none answered, the address it had is kept;
    /// an empty list: it stays down and asks again at its next attempt). `None` against the
    /// primary alone.
    pub replicas: Option<Arc<dyn Fn() -> Option<Vec<Endpoint>> + Send + Sync>>,
}

impl std::fmt::Debug for Locate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Locate({})", self.name)
    }
}

/// One test as a backend runs it.
#[derive(Clone, Debug)]
pub struct TestRun {
    /// What every connection does.
    pub plan: Arc<Plan>,
    /// Where to connect.
    pub endpoint: Endpoint,
    /// How many connections (`-c`).
    pub clients: usize,
    /// How many event loops (threads); connection `i` runs on loop `i % threads`.
    pub threads: usize,
    /// Significant figures of the histograms.
    pub sigfig: u8,
    /// `--mptcp`: TCP connections are MPTCP sockets ([`crate::Target::Mptcp`]).
    pub mptcp: bool,
    /// Shared live figures and stop controls.
    pub progress: Arc<Progress>,
    /// `--sentinel`: where a connection that comes back after a failure goes.
    pub locate: Option<Locate>,
}

/// How many event loops a test of `clients` clients on `threads` threads runs on: `threads`, at
/// least one, at most one per client.
pub fn loops(threads: usize, clients: usize) -> usize {
    threads.clamp(1, clients.max(1))
}

impl TestRun {
    /// How many event loops the test runs on ([`loops`]).
    pub fn loops(&self) -> usize {
        loops(self.threads, self.clients)
    }

    /// The clients loop `t` drives: every index `c` with `c % loops() == t`. A client's
    /// connections (one per node) share its loop.
    pub fn clients_of(&self, t: usize) -> Vec<u64> {
        (t..self.clients).step_by(self.loops()).map(|c| c as u64).collect()
    }

    /// How many connections the test opens: one per client and node.
    pub fn connections(&self) -> usize {
        self.clients * self.plan.nodes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stats of `count` requests of `micros` each.
    fn stats(count: u64, micros: u64) -> Stats {
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap();
        for _ in 0..count {
            s.record(micros * 1000, 0, Time::from_micros(1000));
        }
        s
    }

    #[test]
    fn the_p99_so_far_merges_every_loops_latest_histogram() {
        let p = Progress::default();
        let (mut a, mut b) = (stats(98, 100), stats(2, 5000));
        let (mut pa, mut pb) = (Published::default(), Published::default());
        // Not kept unless a progress line shows it.
        p.publish(0, &mut a, None, &mut pa);
        assert_eq!(p.latency_percentile(99.0), None);
        p.keep_latency.store(true, Ordering::Relaxed);
        p.publish(0, &mut a, None, &mut pa);
        assert_eq!(p.latency_percentile(99.0), Some(100));
        // Loop 1's two slow requests are the top 2%: the p99 is theirs.
        p.publish(1, &mut b, None, &mut pb);
        assert_eq!(p.latency_percentile(99.0), Some(b.latency.highest_equivalent(5000)));
        // A loop's later publication replaces its earlier one (its histogram is cumulative).
        for _ in 0..9900 {
            a.record(100_000, 0, Time::from_micros(2000));
        }
        p.publish(0, &mut a, None, &mut pa);
        assert_eq!(p.latency_percentile(99.0), Some(100));
        assert_eq!(p.completed.load(Ordering::Relaxed), 10_000);
    }

    #[test]
    fn figures_are_kept_only_when_asked_and_a_reader_never_holds_a_loop_up() {
        let p = Progress::default();
        let mut a = stats(10, 100);
        let mut pa = Published::default();
        p.publish(0, &mut a, Some(Time::from_micros(1_000)), &mut pa);
        assert!(p.figures().is_empty());
        p.keep_figures.store(true, Ordering::Relaxed);
        p.publish(0, &mut a, Some(Time::from_micros(2_000)), &mut pa);
        let f = p.figures();
        assert_eq!((f.len(), f[0].requests), (1, 10));
        assert_eq!(f[0].latency.as_ref().map(|h| h.len()), Some(10));
        // Counts go at every publication, histograms at most every 200 ms.
        for _ in 0..5 {
            a.record(100_000, 0, Time::from_micros(3_000));
        }
        p.publish(0, &mut a, Some(Time::from_micros(3_000)), &mut pa);
        let f = p.figures();
        assert_eq!((f[0].requests, f[0].latency.as_ref().map(|h| h.len())), (15, Some(10)));
        p.publish(0, &mut a, Some(Time::from_micros(202_000)), &mut pa);
        assert_eq!(p.figures()[0].latency.as_ref().map(|h| h.len()), Some(15));
        // While a reader holds the figures, a loop's publication is skipped, not waited for.
        a.record(100_000, 0, Time::from_micros(300_000));
        {
            let _reader = p.figures.lock().unwrap();
            p.publish(0, &mut a, Some(Time::from_micros(300_000)), &mut pa);
        }
        assert_eq!(p.figures()[0].requests, 15);
        assert_eq!(p.completed.load(Ordering::Relaxed), 16, "the other live figures go on");
        // The loop's last publication waits, and takes everything.
        p.publish(0, &mut a, None, &mut pa);
        let f = p.figures();
        assert_eq!((f[0].requests, f[0].latency.as_ref().map(|h| h.len())), (16, Some(16)));
    }
}
