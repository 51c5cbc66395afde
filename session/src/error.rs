//! Why a session could not start or go on. The messages are the ones the command line prints.

use std::fmt;

use respbench_core::{ConnError, RunError};

/// Why the startup connection failed; the run must not start.
#[derive(Debug, PartialEq, Eq)]
pub struct StartupError {
    /// What went wrong, in a user's words.
    pub message: String,
    /// The connection itself failed once it was open (its TLS handshake, a reset, a close, a
    /// timeout, a reply that cannot be read), as opposed to what the server said or a connect
    /// that failed (`Could not connect to Redis at …`, redis-benchmark's own words): the command
    /// line prints it after `Error: `, as redis-benchmark prints its connections' failures.
    pub connection: bool,
}

impl StartupError {
    /// A failure that is not the connection's own (the server's words, an option, a topology).
    pub fn new(message: impl Into<String>) -> StartupError {
        StartupError { message: message.into(), connection: false }
    }

    /// The open connection failed (see [`StartupError::connection`]).
    pub fn connection(message: impl Into<String>) -> StartupError {
        StartupError { message: message.into(), connection: true }
    }
}
/// Why a subscriber or a waiter of a delivery test (`--subscribers`) could not start, or
/// stopped: the run's error when it is refused at the start, its `failure` when it ends mid-run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriberError {
    /// Its connection could not be opened, authenticated or made non-blocking (in its words).
    Connection(String),
    /// The server answered `command` with an error or without the confirmation asked for.
    Refused {
        /// The command (`HELLO 3`, `SUBSCRIBE`, `XGROUP`).
        command: &'static str,
        /// What the server said, or why it is not a confirmation.
        reply: String,
    },
    /// Its message tracker could not be made (the test's histogram bounds).
    Tracker(String),
}

impl fmt::Display for SubscriberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubscriberError::Connection(m) | SubscriberError::Tracker(m) => f.write_str(m),
            SubscriberError::Refused { command, reply } => write!(f, "{command}: {reply}"),
        }
    }
}

impl std::error::Error for SubscriberError {}

/// Why the commands of a run over several nodes cannot be routed: defined here, beside the
/// [`Error`] that wraps it, and named in `routing`, where the routes are found.
#[derive(Debug)]
#[non_exhaustive]
pub enum RoutingError {
    /// `--key-args` names an argument the command does not have.
    NoSuchArgument {
        /// The command's name.
        command: String,
        /// The argument named.
        argument: usize,
        /// How many arguments it has.
        has: usize,
    },
    /// Which of a command's arguments are keys cannot be told (`COMMAND INFO`, `COMMAND GETKEYS`).
    UnknownKeys {
        /// The command's name.
        command: String,
        /// Why not.
        why: String,
    },
    /// The connection that asks the server failed (in its words, without `Error: `).
    Connection(StartupError),
    /// A command's keys are drawn (`__rand_int__`) in several keys without a hash tag: they
    /// would span slots.
    DrawnKeysSpanSlots(String),
    /// A command's literal keys are in different slots.
    KeysInDifferentSlots(String),
}

impl fmt::Display for RoutingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RoutingError::NoSuchArgument { command, argument, has } => {
                write!(f, "--key-args: {command} has no argument {argument} (it has {has})")
            }
            RoutingError::UnknownKeys { command, why } => write!(
                f,
                "cannot tell which arguments of {command} are keys: {why}; name them with --key-args \
                 (1 is the first argument after the name)"
            ),
            RoutingError::Connection(e) => f.write_str(&e.message),
            RoutingError::DrawnKeysSpanSlots(command) => write!(
                f,
                "{command}: its keys span slots (__rand_int__ in several keys, no hash tag), which a cluster \
                 refuses (CROSSSLOT): put the keys under one tag, e.g. key:{{tag}}:__rand_int__ (respbench \
                 fills {{tag}} with the slot of the first key) or {{user1}}:a"
            ),
            RoutingError::KeysInDifferentSlots(command) => write!(
                f,
                "{command}: its keys are in different slots, which a cluster refuses (CROSSSLOT): put them \
                 under one hash tag, e.g. {{user1}}:a {{user1}}:b"
            ),
        }
    }
}

impl std::error::Error for RoutingError {}

/// Why a session could not start, or a run had to end before its tests did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A request is so large (`-d`) that the connections' copies of it would not fit in the
    /// machine's memory.
    Memory {
        /// Bytes of the largest request.
        request: u64,
        /// The connections asked for.
        clients: usize,
        /// Bytes the run would need.
        need: u64,
        /// Bytes the process may still allocate, under `limit`.
        available: u64,
        /// The tightest limit met ([`crate::limits::memory_bound`]): `MemAvailable and free
        /// swap`, a cgroup's, or `RLIMIT_AS`.
        limit: String,
        /// Each connection holds a whole request (over several nodes), not a reference to
        /// the one value.
        whole: bool,
    },
    /// `-c` needs more open files than the hard limit allows.
    OpenFiles {
        /// The connections asked for.
        clients: usize,
        /// A delivery test's subscribers or waiters (`--subscribers`), a socket each.
        listeners: usize,
        /// The open files they need with the run's own.
        need: u64,
        /// The soft limit.
        soft: u64,
        /// The hard limit.
        hard: u64,
        /// How many connections (and subscribers) fit under the hard limit.
        fit: u64,
    },
    /// `--backend uring`, but io_uring cannot be used here (the reason).
    Uring(String),
    /// The tests asked for do not exist (`-t`, `--mix`), or `-x` could not read standard input.
    Tests(String),
    /// `-k 0` (a new connection per request batch) over several nodes.
    NoKeepaliveOverNodes,
    /// A test that opens a connection per request, over several nodes.
    ConnectionPerRequestOverNodes {
        /// The test's title.
        test: String,
    },
    /// The startup connection, or one that discovery made, failed (connect, TLS, `AUTH`, a
    /// topology that cannot be read): the run must not start.
    Startup(StartupError),
    /// Over several nodes: a command's keys cannot be found or routed.
    Routing(RoutingError),
    /// A backend could not run a test at all.
    Backend(RunError),
    /// A backend's event loops ended without a result.
    LoopsStopped,
    /// `--preload`'s connections failed.
    Preload {
        /// How many connections failed that way.
        failed: u64,
        /// The first failure.
        error: ConnError,
    },
    /// `--dataset-shape`: the build failed (its connections, the server's replies).
    Dataset(String),
    /// The TLS settings cannot be made (a certificate or key that cannot be read or used, an
    /// unknown cipher suite).
    #[cfg(feature = "tls")]
    Tls(crate::tls::TlsConfigError),
    /// `--slo`: an objective tighter than this client machine can measure (its own pauses,
    /// measured idle before the search): the sentence with the figure.
    Unmeasurable(String),
    /// TLS was asked for, but this build has none (cargo feature `tls`).
    NoTls,
    /// The observer could not present a result (a write failed).
    Output(String),
    /// `--at-node` names no node of the run, or none of the kind asked for.
    Events(String),
    /// `--sentinel`: no Sentinel named the primary.
    Sentinel(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Memory { request, clients, need, available, limit, whole } => write!(
                f,
                "a request of {} (-d) on -c {clients} connections needs about {} of memory ({}), \
                 more than the {} available ({limit}): lower -d{}",
                human_bytes(*request),
                human_bytes(*need),
                if *whole {
                    "each connection holds a whole request while it sends it"
                } else {
                    "the value is held once, and each connection's output beside it"
                },
                human_bytes(*available),
                if *whole { " or -c" } else { "" }
            ),
            Error::OpenFiles { clients, listeners: 0, need, soft, hard, fit } => write!(
                f,
                "-c {clients} needs about {need} open files, but the limit is {soft} (hard limit {hard}), \
                 enough for {fit} connections: lower -c, or raise the limit (ulimit -n {need})"
            ),
            Error::OpenFiles { clients, listeners, need, soft, hard, fit } => write!(
                f,
                "-c {clients} and --subscribers {listeners} (a socket each) need about {need} open files, \
                 but the limit is {soft} (hard limit {hard}), enough for {fit} connections and subscribers \
                 together: lower -c or --subscribers, or raise the limit (ulimit -n {need})"
            ),
            Error::NoKeepaliveOverNodes => f.write_str(
                "-k 0 (a new connection per request batch) is not supported with --cluster or replicas",
            ),
            Error::ConnectionPerRequestOverNodes { test } => write!(
                f,
                "the {test} test (a new connection per request) is not supported with --cluster or replicas"
            ),
            // The peers' word for a connection that failed, with respbench's reason after it.
            Error::Startup(e) if e.connection => write!(f, "Error: {}", e.message),
            Error::Startup(e) => f.write_str(&e.message),
            Error::Backend(e) => e.fmt(f),
            Error::LoopsStopped => f.write_str("the event loops stopped"),
            Error::Preload { failed, error } => {
                write!(f, "--preload: {failed} connection(s) failed: {error}")
            }
            #[cfg(feature = "tls")]
            Error::Tls(e) => e.fmt(f),
            Error::NoTls => f.write_str("this respbench was built without TLS (cargo feature `tls`)"),
            Error::Routing(e) => e.fmt(f),
            Error::Uring(s)
            | Error::Tests(s)
            | Error::Dataset(s)
            | Error::Output(s)
            | Error::Unmeasurable(s)
            | Error::Events(s)
            | Error::Sentinel(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for Error {}

impl From<StartupError> for Error {
    fn from(e: StartupError) -> Error {
        Error::Startup(e)
    }
}

#[cfg(feature = "tls")]
impl From<crate::tls::TlsConfigError> for Error {
    fn from(e: crate::tls::TlsConfigError) -> Error {
        Error::Tls(e)
    }
}

impl From<RoutingError> for Error {
    fn from(e: RoutingError) -> Error {
        Error::Routing(e)
    }
}

impl From<RunError> for Error {
    fn from(e: RunError) -> Error {
        Error::Backend(e)
    }
}

/// Bytes for a reader: `52.0 GiB`, `1.5 MiB`, `900 B`.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}
