//! What a backend needs to run one test, and what it gives back: shared by both backends and the
//! command line, so that they cannot drift apart.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::conn::{ConnError, Plan};
use crate::series::Collector;
use crate::stats::Stats;
use crate::Time;

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

/// Live figures the event loops publish while a test runs (for the progress line and `--live`).
/// Every field is updated a few times a second, not per request. Stopping a test is the plan's
/// [`crate::plan::Stop`].
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests completed so far, all loops together.
    pub completed: AtomicU64,
    /// Sum of their latencies in microseconds.
    pub latency_sum_micros: AtomicU64,
    /// Connections whose handshake has completed and that are still open.
    pub live: AtomicU64,
    /// The test's per-second series, all loops together: each second summarised once every
    /// loop has moved past it (what `--live` prints while the test runs, and the test's
    /// [`Stats::series`] at its end).
    pub series: Mutex<Collector>,
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
        let sum = (stats.latency.mean() * stats.latency.len() as f64) as u64;
        self.completed.fetch_add(requests.saturating_sub(published.requests), Ordering::Relaxed);
        self.latency_sum_micros
            .fetch_add(sum.saturating_sub(published.latency_sum_micros), Ordering::Relaxed);
        published.requests = requests;
        published.latency_sum_micros = sum;
        if stats.keep_series {
            self.collector().publish(part, stats, now);
        }
    }
}

/// How much of its figures one event loop has added to [`Progress`] so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Published {
    /// Completed requests.
    pub requests: u64,
    /// Their latency sum in microseconds.
    pub latency_sum_micros: u64,
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
    /// Shared live figures and stop controls.
    pub progress: Arc<Progress>,
}

/// What a backend gives back for one test.
#[derive(Debug)]
pub struct Outcome {
    /// Everything the loops recorded, merged.
    pub stats: Stats,
    /// Connection failures, each with how many connections failed that way, first seen first.
    pub failures: Vec<(ConnError, u64)>,
    /// `--reconnect`: why connections went down and came back, each with how often
    /// ([`crate::Event::Down`]), first seen first.
    pub drops: Vec<(ConnError, u64)>,
}

impl TestRun {
    /// How many event loops the test runs on: `threads`, at least one, at most one per client.
    pub fn loops(&self) -> usize {
        self.threads.clamp(1, self.clients.max(1))
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

impl Outcome {
    /// Adds `count` connection failures of kind `e` to the tally.
    pub fn add_failure(failures: &mut Vec<(ConnError, u64)>, e: ConnError, count: u64) {
        match failures.iter_mut().find(|(m, _)| *m == e) {
            Some((_, n)) => *n += count,
            None => failures.push((e, count)),
        }
    }

    /// Merges the outcomes of a test's loops into one; the first loop error wins.
    pub fn merge_all(
        results: impl IntoIterator<Item = Result<Outcome, RunError>>,
    ) -> Result<Outcome, RunError> {
        let mut merged: Option<Outcome> = None;
        for r in results {
            let r = r?;
            match &mut merged {
                None => merged = Some(r),
                Some(m) => {
                    m.stats.merge(&r.stats).map_err(RunError::Setup)?;
                    for (e, n) in r.failures {
                        Outcome::add_failure(&mut m.failures, e, n);
                    }
                    for (e, n) in r.drops {
                        Outcome::add_failure(&mut m.drops, e, n);
                    }
                }
            }
        }
        merged.ok_or(RunError::NoLoop)
    }
}

/// Why a backend could not run a test at all (a connection's own failure is a [`ConnError`] in
/// [`Outcome::failures`], and the test goes on without it).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunError {
    /// The host name did not resolve: redis-benchmark's words, `Could not connect to Redis at
    /// host:port: reason`.
    Resolve {
        /// The endpoint as given.
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// An event loop could not be set up (its poll set, a histogram).
    Setup(String),
    /// An event loop's wait failed.
    EventLoop(String),
    /// An event loop panicked.
    Panicked,
    /// The test had no event loop to run on.
    NoLoop,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Resolve { endpoint, reason } => {
                write!(f, "Could not connect to Redis at {endpoint}: {reason}")
            }
            RunError::Setup(e) => write!(f, "cannot create an event loop: {e}"),
            RunError::EventLoop(e) => write!(f, "event loop failed: {e}"),
            RunError::Panicked => f.write_str("event loop panicked"),
            RunError::NoLoop => f.write_str("no event loop ran"),
        }
    }
}

impl std::error::Error for RunError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::{IoFailure, IoOp};

    #[test]
    fn io_errors_read_like_the_os_and_say_what_to_do() {
        let ep = Endpoint::Tcp { host: "127.0.0.1".into(), port: 6379 };
        let reset = std::io::Error::from_raw_os_error(104);
        assert_eq!(
            IoFailure::new(IoOp::Read, &ep, &reset).to_string(),
            "read from 127.0.0.1:6379: Connection reset by peer"
        );
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(
            IoFailure::new(IoOp::Connect, &ep, &refused).to_string(),
            "Could not connect to Redis at 127.0.0.1:6379: Connection refused"
        );
        let emfile = IoFailure::new(IoOp::Connect, &ep, &std::io::Error::from_raw_os_error(24));
        assert_eq!(emfile.os_code, Some(24));
        let emfile = emfile.to_string();
        assert!(
            emfile.starts_with("Could not connect to Redis at 127.0.0.1:6379: Too many open files ("),
            "{emfile}"
        );
        assert!(emfile.contains("ulimit -n"), "{emfile}");
    }
}
