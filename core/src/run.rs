//! What a backend gives back for one test: shared by the backends and the command line, so that
//! they cannot drift apart (where the server is, [`crate::Endpoint`], is in [`crate::shared`]). (What a backend needs to run a test, with
//! the live figures its threads share, is the driver's `TestRun`.)

use std::fmt;

use crate::conn::ConnError;
use crate::stats::Stats;

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
