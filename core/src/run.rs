//! What a backend needs to run one test, and what it gives back: shared by both backends and the
//! command line, so that they cannot drift apart.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::conn::Plan;
use crate::stats::{Second, Stats};
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

/// Live figures the event loops publish while a test runs (for the progress line) and the
/// controls the command line uses to stop them. Every field is updated with relaxed atomics a
/// few times a second, not per request.
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests completed so far, all loops together.
    pub completed: AtomicU64,
    /// Sum of their latencies in microseconds.
    pub latency_sum_micros: AtomicU64,
    /// Connections whose handshake has completed and that are still open.
    pub live: AtomicU64,
    /// Set to make every loop return at once, dropping what is in flight (second Ctrl-C, or the
    /// drain after the first one took too long).
    pub abort: AtomicBool,
    /// The per-second series of every loop together, each second added once it has ended (see
    /// [`Progress::publish_seconds`]): what a live view prints while the test runs.
    pub seconds: Mutex<Vec<Second>>,
}

impl Progress {
    /// Adds what one event loop recorded since its last call (`published` says how far it got)
    /// to the live figures: completed requests, their latency sum, and the seconds of its series
    /// that have ended by `now`. Loops call it a few times a second, not per request.
    pub fn publish(&self, stats: &Stats, now: Time, published: &mut Published) {
        let requests = stats.requests;
        let sum = (stats.latency.mean() * stats.latency.len() as f64) as u64;
        self.completed.fetch_add(requests.saturating_sub(published.requests), Ordering::Relaxed);
        self.latency_sum_micros
            .fetch_add(sum.saturating_sub(published.latency_sum_micros), Ordering::Relaxed);
        published.requests = requests;
        published.latency_sum_micros = sum;
        self.publish_seconds(stats, now, &mut published.seconds);
    }

    /// Adds the seconds of `stats`' series that have ended by `now` and that this loop has not
    /// added yet (`*published` of them it has) to [`Progress::seconds`]; a second in which it
    /// recorded nothing adds nothing.
    fn publish_seconds(&self, stats: &Stats, now: Time, published: &mut usize) {
        if !stats.keep_series {
            return;
        }
        let ended = (now.nanos_since(stats.start) / 1_000_000_000) as usize;
        let upto = ended.min(stats.series.len());
        if upto <= *published {
            return;
        }
        // A poisoned lock only means another loop panicked mid-add; the figures are still counts.
        let mut live = self.seconds.lock().unwrap_or_else(|e| e.into_inner());
        if live.len() < upto {
            live.resize_with(upto, Second::new);
        }
        for (mine, all) in stats.series[*published..upto].iter().zip(&mut live[*published..upto]) {
            all.requests += mine.requests;
            all.errors += mine.errors;
            // Same bounds and precision on both sides: cannot fail.
            let _ = all.latency.add(&mine.latency);
        }
        *published = upto;
    }

    /// Whether the loops were told to return now.
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }
}

/// How much of its figures one event loop has added to [`Progress`] so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Published {
    /// Completed requests.
    pub requests: u64,
    /// Their latency sum in microseconds.
    pub latency_sum_micros: u64,
    /// Seconds of the series.
    pub seconds: usize,
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
    pub failures: Vec<(String, u64)>,
    /// Whether the loops were aborted before every connection finished.
    pub aborted: bool,
}

impl TestRun {
    /// How many event loops the test runs on: `threads`, at least one, at most one per client.
    pub fn loops(&self) -> usize {
        self.threads.clamp(1, self.clients.max(1))
    }

    /// The connections loop `t` drives: every index `i` with `i % loops() == t`.
    pub fn connections_of(&self, t: usize) -> Vec<u64> {
        (t..self.clients).step_by(self.loops()).map(|i| i as u64).collect()
    }
}

impl Outcome {
    /// Adds `count` connection failures with `message` to the tally.
    pub fn add_failure(failures: &mut Vec<(String, u64)>, message: String, count: u64) {
        match failures.iter_mut().find(|(m, _)| *m == message) {
            Some((_, n)) => *n += count,
            None => failures.push((message, count)),
        }
    }

    /// Merges the outcomes of a test's loops into one; the first loop error wins.
    pub fn merge_all(results: impl IntoIterator<Item = Result<Outcome, String>>) -> Result<Outcome, String> {
        let mut merged: Option<Outcome> = None;
        for r in results {
            let r = r?;
            match &mut merged {
                None => merged = Some(r),
                Some(m) => {
                    m.stats.merge(&r.stats)?;
                    for (msg, n) in r.failures {
                        Outcome::add_failure(&mut m.failures, msg, n);
                    }
                    m.aborted |= r.aborted;
                }
            }
        }
        merged.ok_or_else(|| "no event loop ran".to_string())
    }
}

/// A failed connect in redis-benchmark's words (`Could not connect to Redis at 127.0.0.1:6379:
/// Connection refused`), so scripts that look for them keep working.
pub fn connect_error(endpoint: &Endpoint, e: &std::io::Error) -> String {
    let reason = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "Connection refused".to_string(),
        std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
        _ => io_reason(e),
    };
    format!("Could not connect to Redis at {endpoint}: {reason}")
}

/// A socket error on an open connection: `read from 127.0.0.1:6379: Connection reset by peer`.
/// `what` is the operation (`read from`, `write to`).
pub fn io_error(what: &str, endpoint: &Endpoint, e: &std::io::Error) -> String {
    format!("{what} {endpoint}: {}", io_reason(e))
}

/// The OS' words without the `(os error N)` suffix, and what to do when file descriptors ran out.
fn io_reason(e: &std::io::Error) -> String {
    // EMFILE is 24 and ENFILE 23 on Linux, macOS and the BSDs.
    let hint = match e.raw_os_error() {
        Some(24) => " (the open-file limit is too low for this many connections: raise it with ulimit -n)",
        Some(23) => " (the system's open-file table is full)",
        _ => "",
    };
    // "Network is unreachable (os error 101)" -> "Network is unreachable"
    let s = e.to_string();
    format!("{}{hint}", s.split(" (os error").next().unwrap_or(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_like_the_os_and_say_what_to_do() {
        let ep = Endpoint::Tcp { host: "127.0.0.1".into(), port: 6379 };
        let reset = std::io::Error::from_raw_os_error(104);
        assert_eq!(io_error("read from", &ep, &reset), "read from 127.0.0.1:6379: Connection reset by peer");
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(
            connect_error(&ep, &refused),
            "Could not connect to Redis at 127.0.0.1:6379: Connection refused"
        );
        let emfile = connect_error(&ep, &std::io::Error::from_raw_os_error(24));
        assert!(
            emfile.starts_with("Could not connect to Redis at 127.0.0.1:6379: Too many open files ("),
            "{emfile}"
        );
        assert!(emfile.contains("ulimit -n"), "{emfile}");
    }
}
