//! Per-test results: request and byte counts, error replies by kind, latency histograms.
//!
//! One [`Stats`] is shared by all connections of one event loop for one test (a histogram per
//! connection would cost ~150 KB each, too much at `-c 10000`). Loops and processes combine
//! theirs with [`Stats::merge`], which is exact: histograms add bucket by bucket.

use hdrhistogram::Histogram;

use crate::resp::error_prefix;
use crate::shared::Endpoint;
/// The histogram helpers and per-second records, at their old paths (they live in
/// [`crate::shared`]).
pub use crate::shared::{
    new_histogram, value_at_percentile, Interval, Recording, Second, DEFAULT_SIGFIG, HIGHEST_MICROS,
    LOWEST_MICROS, SERIES_SIGFIG,
};
use crate::Time;

/// How many bytes of an error message are kept to show the user (`-e`).
const MESSAGE_KEEP: usize = 128;
/// Nanoseconds in a second: series are per second.
const SECOND_NANOS: u64 = 1_000_000_000;

/// Nanoseconds to whole microseconds (rounded to nearest), clamped to the histogram's range.
fn micros(nanos: u64) -> u64 {
    (nanos.saturating_add(500) / 1_000).min(HIGHEST_MICROS)
}

/// Error replies of one kind: its prefix (`ERR`, `WRONGTYPE`, `MOVED`, …), how many, and the
/// first full message seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorCount {
    /// The first word of the error message.
    pub prefix: String,
    /// How many error replies had this prefix.
    pub count: u64,
    /// The first message with this prefix, cut at 128 bytes.
    pub first_message: String,
}

/// Error replies counted by prefix, in order of first appearance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    kinds: Vec<ErrorCount>,
}

impl ErrorCounts {
    /// Counts one error reply whose message (without the leading `-`) is `message`.
    pub fn record(&mut self, message: &[u8]) {
        self.add(message, 1);
    }

    /// Counts `count` error replies whose message is `message` (e.g. when reading counts back from
    /// a report, where the prefix alone stands for the message).
    pub fn add(&mut self, message: &[u8], count: u64) {
        let prefix = error_prefix(message);
        // A handful of kinds at most: a linear scan, and allocation only for a new kind.
        if let Some(k) = self.kinds.iter_mut().find(|k| k.prefix.as_bytes() == prefix) {
            k.count += count;
            return;
        }
        let keep = &message[..message.len().min(MESSAGE_KEEP)];
        self.kinds.push(ErrorCount {
            prefix: String::from_utf8_lossy(prefix).into_owned(),
            count,
            first_message: String::from_utf8_lossy(keep).into_owned(),
        });
    }

    /// The kinds seen, in order of first appearance.
    pub fn kinds(&self) -> &[ErrorCount] {
        &self.kinds
    }

    /// All error replies of every kind.
    pub fn total(&self) -> u64 {
        self.kinds.iter().map(|k| k.count).sum()
    }

    /// Adds another set of counts to this one; an error names the kind whose sum overflows
    /// (counts read from a hostile document).
    pub fn merge(&mut self, other: &ErrorCounts) -> Result<(), String> {
        for k in &other.kinds {
            if let Some(mine) = self.kinds.iter_mut().find(|m| m.prefix == k.prefix) {
                add_count(&mut mine.count, k.count, &format!("errors.{}", k.prefix))?;
            } else {
                self.kinds.push(k.clone());
            }
        }
        Ok(())
    }
}

/// `*a += b`, or an error naming `what` when the sum does not fit in a `u64`: counts added
/// from documents (`respbench merge`) are checked, never wrapped.
pub fn add_count(a: &mut u64, b: u64, what: &str) -> Result<(), String> {
    *a = a.checked_add(b).ok_or_else(|| format!("{what}: the sum overflows (it exceeds 2^64 - 1)"))?;
    Ok(())
}

/// How many redirects and retries a test met, by kind. None of them is a completed request. The
/// result document's `redirects` object (with the feature `serde`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(default))]
pub struct Redirects {
    /// `MOVED`: the slot has a new owner; the slot map changed and the request went there.
    pub moved: u64,
    /// `ASK`: the slot is migrating; the request went to the target after `ASKING`.
    pub ask: u64,
    /// `TRYAGAIN`: a multi-key request during a migration; retried after a pause.
    pub tryagain: u64,
    /// `CLUSTERDOWN`: the cluster could not serve the slot; retried after a pause.
    pub clusterdown: u64,
}

impl Redirects {
    /// All kinds together.
    pub fn total(&self) -> u64 {
        self.moved + self.ask + self.tryagain + self.clusterdown
    }

    /// Adds `other`'s counts; an error names the kind whose sum overflows (counts read from a
    /// hostile document).
    pub fn merge(&mut self, other: &Redirects) -> Result<(), String> {
        add_count(&mut self.moved, other.moved, "redirects.moved")?;
        add_count(&mut self.ask, other.ask, "redirects.ask")?;
        add_count(&mut self.tryagain, other.tryagain, "redirects.tryagain")?;
        add_count(&mut self.clusterdown, other.clusterdown, "redirects.clusterdown")
    }

    /// The kinds by the names reports use, with their counts.
    pub fn kinds(&self) -> [(&'static str, u64); 4] {
        [
            ("moved", self.moved),
            ("ask", self.ask),
            ("tryagain", self.tryagain),
            ("clusterdown", self.clusterdown),
        ]
    }
}

/// How many keys of requests that gave up retrying a test keeps for `--failed-keys` (all are
/// counted): about 100,000 keys of tens of bytes is a few megabytes at most.
pub const FAILED_KEYS_KEEP: usize = 100_000;

/// `--follow-cursor`: the iterations the test's clients completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CursorStats {
    /// The test followed cursors (a reply to one of its calls came).
    pub followed: bool,
    /// Full iterations: calls from cursor 0 until a reply returned 0.
    pub iterations: u64,
    /// The elements the full iterations' replies returned.
    pub elements: u64,
    /// Replies whose cursor was not a number (counted as errors too).
    pub bad: u64,
}

impl CursorStats {
    /// Adds `other`'s counts; an error names the count whose sum overflows.
    pub fn merge(&mut self, other: &CursorStats) -> Result<(), String> {
        self.followed |= other.followed;
        add_count(&mut self.iterations, other.iterations, "cursor.iterations")?;
        add_count(&mut self.elements, other.elements, "cursor.elements")?;
        add_count(&mut self.bad, other.bad, "cursor.bad")
    }
}

/// `--retry-on`: the retries a test made, by the error reply that asked for each, and the
/// requests that gave up (their last reply still such an error after `--retry-limit` retries).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetryStats {
    /// Retries by the first word of the error that asked for them.
    pub by_error: ErrorCounts,
    /// Requests that gave up: completed as the error they got last, counted in `errors` too.
    pub gave_up: u64,
    /// The keys (first argument) of the first [`FAILED_KEYS_KEEP`] requests that gave up.
    pub failed_keys: Vec<Vec<u8>>,
}

impl RetryStats {
    /// Retries of every kind.
    pub fn total(&self) -> u64 {
        self.by_error.total()
    }

    /// A request whose key is `key` (`None`: a command without arguments) gave up.
    pub fn give_up(&mut self, key: Option<&[u8]>) {
        self.gave_up = self.gave_up.saturating_add(1);
        if let Some(k) = key.filter(|_| self.failed_keys.len() < FAILED_KEYS_KEEP) {
            self.failed_keys.push(k.to_vec());
        }
    }

    /// Adds `other`'s counts and keeps its keys while there is room; an error names the count
    /// whose sum overflows.
    pub fn merge(&mut self, other: &RetryStats) -> Result<(), String> {
        self.by_error.merge(&other.by_error)?;
        add_count(&mut self.gave_up, other.gave_up, "retries.gave_up")?;
        let room = FAILED_KEYS_KEEP.saturating_sub(self.failed_keys.len());
        self.failed_keys.extend(other.failed_keys.iter().take(room).cloned());
        Ok(())
    }
}

/// How many distinct address changes a test keeps ([`Stats::readdressed`]).
pub const READDRESSES_KEEP: usize = 16;

/// A host name that resolved to another address when a connection came back (`--reconnect`):
/// a name that moved (a DNS failover, a Kubernetes Service), or a primary that moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readdress {
    /// When the first connection found it.
    pub at: Time,
    /// The name, as given.
    pub name: String,
    /// The address the connection had, and the one it has now (`IP:PORT`).
    pub from: String,
    /// See `from`.
    pub to: String,
    /// How many connections came back to the new address.
    pub connections: u64,
}

/// How many mismatches of `--verify` a test keeps to show (the first ones; all are counted).
pub const SHOWN: usize = 20;

/// The kinds of mismatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mismatch {
    /// Not the value written: its length, header or padding differ, or no string came.
    Wrong,
    /// A well-formed value of another key.
    OtherKey,
    /// The key's value, older than its last acknowledged write.
    Stale,
}

impl Mismatch {
    /// The name the reports and the JSON use: `wrong`, `other_key`, `stale`.
    pub fn name(self) -> &'static str {
        match self {
            Mismatch::Wrong => "wrong",
            Mismatch::OtherKey => "other_key",
            Mismatch::Stale => "stale",
        }
    }

    /// The kind of `name` ([`Mismatch::name`]).
    pub fn from_name(name: &str) -> Option<Mismatch> {
        [Mismatch::Wrong, Mismatch::OtherKey, Mismatch::Stale].into_iter().find(|m| m.name() == name)
    }
}

/// One mismatch shown: the key, what was expected and what came (both cut to a few bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// Its kind.
    pub kind: Mismatch,
    /// The key as sent.
    pub key: String,
    /// The value expected: the least version when one is known, else the key's header.
    pub expected: String,
    /// What came, escaped (`(nil)` for a nil reply).
    pub got: String,
}

/// What `--verify` found in one test (see `crate::verify`): the reads checked, the mismatches
/// of each kind and the first [`SHOWN`] of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyStats {
    /// Whether the test verified (`--verify`, `--verify-only`).
    pub on: bool,
    /// Whether versions were checked (one writer per key).
    pub versions: bool,
    /// Replies to reads checked (error replies are not).
    pub checked: u64,
    /// Not a value respbench wrote.
    pub wrong: u64,
    /// Another key's value.
    pub other_key: u64,
    /// Older than the key's last acknowledged write.
    pub stale: u64,
    /// The first mismatches.
    pub shown: Vec<Shown>,
}

impl VerifyStats {
    /// Mismatches of every kind.
    pub fn mismatches(&self) -> u64 {
        self.wrong.saturating_add(self.other_key).saturating_add(self.stale)
    }

    /// Adds `other`: counts add, the first [`SHOWN`] mismatches of both are kept.
    pub fn merge(&mut self, other: &VerifyStats) -> Result<(), String> {
        self.on |= other.on;
        self.versions |= other.versions;
        add_count(&mut self.checked, other.checked, "verify.checked")?;
        add_count(&mut self.wrong, other.wrong, "verify.wrong")?;
        add_count(&mut self.other_key, other.other_key, "verify.other_key")?;
        add_count(&mut self.stale, other.stale, "verify.stale")?;
        let room = SHOWN.saturating_sub(self.shown.len());
        self.shown.extend(other.shown.iter().take(room).cloned());
        Ok(())
    }
}

/// What one test did, as seen by one event loop (or, merged, by a whole run).
#[derive(Clone, Debug)]
pub struct Stats {
    /// Requests whose reply arrived (error replies included).
    pub requests: u64,
    /// Replies among them that were nil (`$-1`, `*-1`, RESP3 `_`): a read of a key that does
    /// not exist.
    pub nils: u64,
    /// Array replies among them (`MGET`, `HMGET`, …), their direct elements, and the elements
    /// that were nil: per-element hits and misses of multi-key reads.
    pub arrays: u64,
    /// See [`Stats::arrays`].
    pub array_elements: u64,
    /// See [`Stats::arrays`].
    pub nil_elements: u64,
    /// Nil replies among them to `GET`s of keys the mix's sequential `SET` had written (see
    /// [`crate::Mix::with_keys`]): keys that expired (`--expiry-range`), or were evicted or
    /// deleted, since.
    pub expired: u64,
    /// Error replies by kind.
    pub errors: ErrorCounts,
    /// Bytes the kernel accepted for sending, handshakes included.
    pub bytes_sent: u64,
    /// Bytes received, handshake replies included.
    pub bytes_received: u64,
    /// TCP or Unix connections opened (more than the client count with `-k 0`).
    pub connections_opened: u64,
    /// RESP3 push messages received (not replies to requests; e.g. tracking invalidations).
    pub push_messages: u64,
    /// The sum of the integer replies to requests (a PUBLISH's is its receivers), saturating.
    pub integer_sum: i64,
    /// A delivery test (`-t pubsub`, issue #42): what its subscribers received; `None` otherwise.
    pub delivery: Option<Box<crate::delivery::Delivery>>,
    /// An expiry test (`-t expiry`, issue #52): its keys' lag from deadline to notification.
    pub expiry: Option<Box<crate::expiry::Expiry>>,
    /// An invalidation test (`-t tracking`, issue #52): what its readers received.
    pub tracking: Option<Box<crate::tracking::Tracking>>,
    /// A cache-aside test (`--cache-aside`): its hits, misses, the `SET`s they caused and a
    /// miss's latency; `None` otherwise.
    pub cache: Option<Box<crate::cache::CacheStats>>,
    /// When the test started (the driver's clock), the earliest of the merged ones.
    pub start: Time,
    /// When the test ended, the latest of the merged ones: its `-n` budget spent and answered,
    /// its `--duration` stop, a Ctrl-C, or the end of the drain grace; in short, when the last
    /// connection ended (see [`Stats::end_at`]). Never earlier than the last reply.
    pub end: Time,
    /// When the last reply arrived, the latest of the merged ones; `start` when none did.
    pub last_reply: Time,
    /// Latency per request in microseconds: reply parsed − request sent, or − intended send time
    /// in an open-loop run (coordinated omission corrected).
    pub latency: Histogram<u64>,
    /// Service time per request in microseconds (reply − actual send), kept in open-loop runs only,
    /// where it differs from `latency`.
    pub service: Option<Histogram<u64>>,
    /// Open loop: how late each request was sent, in microseconds: the time the write that
    /// took its last byte began minus its intended time (never negative: a request is never
    /// sent early), once per request (a redirected request at its first send). Kept in
    /// open-loop runs only; the test's figure (a mix's commands and a cluster's nodes keep
    /// none of their own).
    pub lateness: Option<Histogram<u64>>,
    /// A time series, one summary per second since `start` (time-based and open-loop runs,
    /// `--hlog`): filled once the seconds have ended, by the run's [`crate::collector::Collector`] from every
    /// loop's [`Stats::recording`]; empty when not kept.
    pub series: Vec<Second>,
    /// Whether `series` is kept.
    pub keep_series: bool,
    /// The seconds this loop is still recording, each a small histogram until a [`crate::collector::Collector`]
    /// takes it: what keeps a long run's memory flat.
    pub recording: Recording,
    /// A test with events (`--at`): the 100 ms windows this loop is still recording, until the
    /// collector's [`crate::disruption::FineCollector`] takes them; `None` otherwise.
    pub fine: Option<crate::disruption::Fine>,
    /// In a command mix, the stats of each command, in the mix's order (themselves without parts);
    /// empty otherwise.
    pub parts: Vec<Stats>,
    /// How long each connection took to set up, by phase.
    pub setup: Setup,
    /// `--reconnect`: times a connection that was up failed (an outage; attempts to come back
    /// that fail are not counted again).
    pub drops: u64,
    /// Requests lost with their connection: counted as errors of kind `connection` too.
    pub lost: u64,
    /// Requests in flight when their connection went down that were sent again once it was
    /// back (`--sentinel`'s [`crate::Plan::resend`]), not lost: each is answered once, or
    /// counted at the stop as unanswered.
    pub resent: u64,
    /// `--sentinel`: replies of a server that refused as a replica (`READONLY`, `MASTERDOWN`),
    /// after which the connection moved and the request went again: not errors.
    pub refused: u64,
    /// Time connections spent down, from the failure to ready again, in microseconds.
    pub downtime_micros: u64,
    /// `--reconnect`: connections still down when the test ended (their outage runs to then).
    pub still_down: u64,
    /// Requests still unanswered when the test's stop and its grace had passed: abandoned, so
    /// not in the latencies (which would otherwise hide the slowest requests).
    pub abandoned: u64,
    /// Open loop: arrivals of the schedule that were due before the test's stop and never sent,
    /// because the client's window (`-P`) was full or its connection was down or blocked until
    /// the end, or its connections had all failed ([`Stats::failed_clients`]). With `requests` (error replies among them), `lost` and `abandoned` they add up
    /// to the schedule's arrivals.
    pub unsent: u64,
    /// How many of the latencies in `latency` are lower bounds: requests abandoned or never
    /// sent, each recorded with the time from when it was due (or sent) to the test's end (for
    /// a client whose connections all failed, to the failure; see [`Stats::failed_clients`]).
    pub lower_bounds: u64,
    /// Clients whose every connection had failed before the test's stop (none came back: no
    /// `--reconnect`, or a refused handshake). Such a client measures nothing after its
    /// failure: in an open loop its arrivals due from then on count as `unsent` without a
    /// latency. When it is every client of the test, the test failed at [`Stats::end`] and its
    /// figures are what it measured before that.
    pub failed_clients: u64,
    /// Over several nodes (`--cluster`, replicas): the stats of each node, in the order of
    /// [`crate::cluster::Cluster::nodes`] (themselves without nodes or parts); empty otherwise.
    /// A request counts at the node that answered it. Past the nodes found at the start come
    /// the nodes that appeared during the test, in the order of [`Stats::appeared`].
    pub nodes: Vec<Stats>,
    /// The nodes that appeared during the test (a redirect named them), by address: their
    /// stats follow the found nodes' in [`Stats::nodes`].
    pub appeared: Vec<Endpoint>,
    /// Slots whose owner changed during the test, as `MOVED` said: the latest owner each
    /// client met, with when.
    pub moved: std::collections::BTreeMap<u16, (Time, Endpoint)>,
    /// How many of [`Stats::nodes`] are nodes found at the start.
    pub found: usize,
    /// Redirects and retries (`MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`), counted at the node
    /// that sent them; not completed requests.
    pub redirects: Redirects,
    /// `--retry-on`: the retries made and the requests that gave up.
    pub retries: RetryStats,
    /// `--follow-cursor`: the full iterations and their elements.
    pub cursor: CursorStats,
    /// `--reconnect`: names that resolved to another address when their connections came back,
    /// the first [`READDRESSES_KEEP`] changes.
    pub readdressed: Vec<Readdress>,
    /// `--verify`: the reads checked and the mismatches found.
    pub verify: VerifyStats,
    /// A ramp (`--ramp`): the figures of each of its steps, by the time each reply was parsed
    /// (see [`Stats::with_steps`]); empty otherwise.
    pub steps: Vec<StepStats>,
    /// The ramp the steps follow.
    pub ramp: Option<crate::ramp::Ramp>,
}

/// What one step of a ramp measured: the replies parsed while it lasted, and their latencies
/// (from the intended send time in an open loop, as the test's), in microseconds.
#[derive(Clone, Debug)]
pub struct StepStats {
    /// Replies parsed during the step (error replies included).
    pub requests: u64,
    /// Error replies among them.
    pub errors: u64,
    /// Their latencies, with the test's significant figures.
    pub latency: Histogram<u64>,
    /// Open loop: their service times (from the actual send).
    pub service: Option<Histogram<u64>>,
    /// Open loop: how late the requests sent during the step were sent.
    pub lateness: Option<Histogram<u64>>,
}

/// How long connections took to become usable, by phase, in microseconds: one value per
/// connection that got there (every reconnect counts with `-k 0`). Apart from request latency:
/// redis-benchmark leaves connection set-up out of every figure.
#[derive(Clone, Debug)]
pub struct Setup {
    /// From the start of the connect to the socket connected (TCP or Unix).
    pub connect: Histogram<u64>,
    /// The TLS handshake, from the socket connected to the session established; empty without
    /// TLS.
    pub tls: Histogram<u64>,
    /// The handshake commands (`AUTH`, `CLIENT TRACKING`, `SELECT`, `HELLO`), from the byte
    /// stream being up to the last of their replies; 0 when there are none.
    pub commands: Histogram<u64>,
    /// All of it: from the start of the connect to the connection being ready for requests.
    pub total: Histogram<u64>,
}

impl Setup {
    /// Empty histograms of `sigfig` significant figures. They start at their smallest size
    /// and grow with the values recorded (up to [`HIGHEST_MICROS`]): setting up takes
    /// microseconds to milliseconds, a test's parts (each command of a mix) and nodes never
    /// record one, and a histogram of the full bounds is 188 KB at 3 figures, written through
    /// when made. Four of them in each part's stats were 4.4 of a 6.3 MB heap peak on
    /// `memtier -t 2 -c 25 --ratio 1:10`.
    pub fn new(sigfig: u8) -> Result<Setup, String> {
        // Stats::new checks `sigfig` with its latency histogram first.
        let phase = || Histogram::new(sigfig).map_err(|e| format!("{e:?}"));
        Ok(Setup { connect: phase()?, tls: phase()?, commands: phase()?, total: phase()? })
    }

    /// Records one connection's phases, in nanoseconds; `tls` only over TLS.
    pub fn record(&mut self, connect: u64, tls: Option<u64>, commands: u64, total: u64) {
        // Cannot fail: values are clamped into the histograms' range.
        let _ = self.connect.record(micros(connect));
        if let Some(t) = tls {
            let _ = self.tls.record(micros(t));
        }
        let _ = self.commands.record(micros(commands));
        let _ = self.total.record(micros(total));
    }

    /// The phases by the names reports use: `connect`, `tls`, `handshake` (the commands), `total`.
    pub fn phases(&self) -> [(&'static str, &Histogram<u64>); 4] {
        [
            ("connect", &self.connect),
            ("tls", &self.tls),
            ("handshake", &self.commands),
            ("total", &self.total),
        ]
    }

    /// [`Setup::phases`], to fill them.
    pub fn phases_mut(&mut self) -> [(&'static str, &mut Histogram<u64>); 4] {
        [
            ("connect", &mut self.connect),
            ("tls", &mut self.tls),
            ("handshake", &mut self.commands),
            ("total", &mut self.total),
        ]
    }

    /// How many connections were set up.
    pub fn count(&self) -> u64 {
        self.total.len()
    }

    /// Adds `other`'s connections.
    pub fn merge(&mut self, other: &Setup) -> Result<(), String> {
        // A histogram read from a document has its encoded bounds: it grows to take the other's.
        let add = |a: &mut Histogram<u64>, b: &Histogram<u64>| {
            a.auto(true);
            a.add(b).map_err(|e| format!("histograms differ: {e:?}"))
        };
        add(&mut self.connect, &other.connect)?;
        add(&mut self.tls, &other.tls)?;
        add(&mut self.commands, &other.commands)?;
        add(&mut self.total, &other.total)
    }
}

impl Stats {
    /// Empty stats for a test starting at `start`, with histograms of `sigfig` significant figures;
    /// `open_loop` keeps the service-time histogram too.
    pub fn new(start: Time, sigfig: u8, open_loop: bool) -> Result<Stats, String> {
        Ok(Stats {
            requests: 0,
            nils: 0,
            arrays: 0,
            array_elements: 0,
            nil_elements: 0,
            expired: 0,
            errors: ErrorCounts::default(),
            bytes_sent: 0,
            bytes_received: 0,
            connections_opened: 0,
            push_messages: 0,
            integer_sum: 0,
            delivery: None,
            expiry: None,
            tracking: None,
            cache: None,
            start,
            end: start,
            last_reply: start,
            latency: new_histogram(sigfig)?,
            service: if open_loop { Some(new_histogram(sigfig)?) } else { None },
            lateness: if open_loop { Some(new_histogram(sigfig)?) } else { None },
            series: Vec::new(),
            keep_series: false,
            recording: Recording::default(),
            fine: None,
            parts: Vec::new(),
            setup: Setup::new(sigfig)?,
            drops: 0,
            lost: 0,
            resent: 0,
            refused: 0,
            downtime_micros: 0,
            still_down: 0,
            abandoned: 0,
            unsent: 0,
            lower_bounds: 0,
            failed_clients: 0,
            nodes: Vec::new(),
            appeared: Vec::new(),
            moved: std::collections::BTreeMap::new(),
            found: 0,
            redirects: Redirects::default(),
            retries: RetryStats::default(),
            cursor: CursorStats::default(),
            readdressed: Vec::new(),
            verify: VerifyStats::default(),
            steps: Vec::new(),
            ramp: None,
        })
    }

    /// A connection (or `r.connections` of them) came back to another address for its name:
    /// the same change is kept once, at its earliest, with its connections added.
    pub fn readdress(&mut self, r: Readdress) {
        if let Some(mine) =
            self.readdressed.iter_mut().find(|m| (&m.name, &m.from, &m.to) == (&r.name, &r.from, &r.to))
        {
            mine.at = mine.at.min(r.at);
            mine.connections = mine.connections.saturating_add(r.connections);
        } else if self.readdressed.len() < READDRESSES_KEEP {
            self.readdressed.push(r);
        }
    }

    /// Keeps the figures of each step of `ramp` ([`Stats::steps`]).
    pub fn with_steps(mut self, ramp: crate::ramp::Ramp) -> Result<Stats, String> {
        let sigfig = self.latency.sigfig();
        self.steps = (0..ramp.steps())
            .map(|_| {
                Ok(StepStats {
                    requests: 0,
                    errors: 0,
                    latency: new_histogram(sigfig)?,
                    service: self.service.as_ref().map(|_| new_histogram(sigfig)).transpose()?,
                    lateness: self.lateness.as_ref().map(|_| new_histogram(sigfig)).transpose()?,
                })
            })
            .collect::<Result<_, String>>()?;
        self.ramp = Some(ramp);
        Ok(self)
    }

    /// A ramp: the step second `i` of [`Stats::series`] belongs to (the one its middle falls
    /// in); `None` without a ramp.
    pub fn step_of_second(&self, i: usize) -> Option<usize> {
        let middle = (i as u64).saturating_mul(SECOND_NANOS).saturating_add(SECOND_NANOS / 2);
        Some(self.ramp?.step_at(Time::from_nanos(self.start.as_nanos().saturating_add(middle))))
    }

    /// The step of the ramp a reply parsed at `now` counts in.
    fn step_mut(&mut self, now: Time) -> Option<&mut StepStats> {
        let k = self.ramp?.step_at(now);
        self.steps.get_mut(k)
    }

    /// Keeps separate stats for each of `found` nodes and room for `room` that may appear (each
    /// request also counted in the total).
    pub fn with_nodes(mut self, found: usize, room: usize) -> Result<Stats, String> {
        let sigfig = self.latency.sigfig();
        let open_loop = self.service.is_some();
        self.nodes =
            (0..found + room).map(|_| Stats::new(self.start, sigfig, open_loop)).collect::<Result<_, _>>()?;
        self.found = found;
        Ok(self)
    }

    /// Records a request of node `node` in its own stats (see [`Stats::record_request`]; the
    /// total is recorded apart).
    pub fn record_node(
        &mut self,
        node: usize,
        latency_nanos: u64,
        service_nanos: u64,
        error: Option<&[u8]>,
        now: Time,
    ) {
        if let Some(n) = self.nodes.get_mut(node) {
            n.record(latency_nanos, service_nanos, now);
            if let Some(message) = error {
                n.errors.record(message);
            }
        }
    }

    /// The index in [`Stats::nodes`] of a node that appeared during the test at `endpoint`, made
    /// when it is new and room is left (`found` nodes were found at the start).
    pub fn appeared_index(&mut self, found: usize, endpoint: &Endpoint) -> Option<usize> {
        let k = match self.appeared.iter().position(|e| e == endpoint) {
            Some(k) => k,
            None if found + self.appeared.len() < self.nodes.len() => {
                self.appeared.push(endpoint.clone());
                self.appeared.len() - 1
            }
            None => return None,
        };
        Some(found + k)
    }

    /// Keeps 100 ms windows from `start` on, for a test with events.
    pub fn with_fine(mut self) -> Stats {
        self.fine = Some(crate::disruption::Fine::new(self.start));
        self
    }

    /// Counts a redirect of kind `kind` ([`crate::disruption::REDIRECT_KINDS`]' index) at `now`
    /// in the 100 ms windows (the totals count it apart).
    pub fn record_redirect_at(&mut self, kind: usize, now: Time) {
        if let Some(f) = &mut self.fine {
            f.redirect(kind, now);
        }
    }

    /// Keeps a per-second time series from `start` on.
    pub fn with_series(mut self) -> Stats {
        self.keep_series = true;
        self
    }

    /// Keeps separate stats for each of `n` commands of a mix (each also counted in the total).
    pub fn with_parts(mut self, n: usize) -> Result<Stats, String> {
        let sigfig = self.latency.sigfig();
        let open_loop = self.service.is_some();
        self.parts = (0..n).map(|_| Stats::new(self.start, sigfig, open_loop)).collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// Records one completed request of command `part` of a mix (0 without a mix): latency and
    /// service time in nanoseconds, its error reply if it was one, `now` when it was parsed.
    pub fn record_request(
        &mut self,
        part: usize,
        latency_nanos: u64,
        service_nanos: u64,
        error: Option<&[u8]>,
        now: Time,
    ) {
        self.record_requests(part, latency_nanos, service_nanos, now, 1);
        if let Some(message) = error {
            self.errors.record(message);
            if let Some(st) = self.step_mut(now) {
                st.errors += 1;
            }
            if self.keep_series {
                self.recording.at(self.second_of(now)).errors += 1;
            }
            if let Some(f) = &mut self.fine {
                f.error(message, now);
            }
            if let Some(p) = self.parts.get_mut(part) {
                p.errors.record(message);
            }
        }
    }

    /// Records `n` completed requests of command `part` that were not errors and are alike in
    /// all that is kept of them: the same latency and service time (to the microsecond: the
    /// nanoseconds given are those of any one of them) and the same `now`. The same as `n` calls
    /// of [`Stats::record_request`]; a pipeline's replies read together are recorded at once.
    pub fn record_requests(
        &mut self,
        part: usize,
        latency_nanos: u64,
        service_nanos: u64,
        now: Time,
        n: u64,
    ) {
        if n == 0 {
            return;
        }
        let (latency, service) = (micros(latency_nanos), micros(service_nanos));
        self.record_n(latency, service, now, n);
        if let Some(st) = self.step_mut(now) {
            st.requests += n;
            let _ = st.latency.record_n(latency, n);
            if let Some(h) = &mut st.service {
                let _ = h.record_n(service, n);
            }
        }
        if self.keep_series {
            let s = self.recording.at(self.second_of(now));
            s.requests += n;
            let _ = s.latency.record_n(latency, n);
            if self.service.is_some() {
                s.record_service(service, n);
            }
        }
        if let Some(f) = &mut self.fine {
            f.reply(latency, n, now);
        }
        if let Some(p) = self.parts.get_mut(part) {
            p.record_n(latency, service, now, n);
        }
    }

    /// Counts the reply just recorded for command `part` of a mix as nil.
    pub fn record_nil(&mut self, part: usize) {
        self.nils += 1;
        if let Some(p) = self.parts.get_mut(part) {
            p.nils += 1;
        }
    }

    /// Counts the nil reply just recorded for command `part` as a miss of a written key.
    pub fn record_expired(&mut self, part: usize) {
        self.expired += 1;
        if let Some(p) = self.parts.get_mut(part) {
            p.expired += 1;
        }
    }

    /// The share of replies that were not nil (1 when there were none).
    /// A multi-key read counts each of its keys: an `MGET` of 4 keys with one missing is 3 hits
    /// and a miss, not a hit.
    pub fn hit_share(&self) -> f64 {
        let reads = (self.requests - self.arrays.min(self.requests)).saturating_add(self.array_elements);
        if reads == 0 {
            1.0
        } else {
            1.0 - (self.nils.saturating_add(self.nil_elements)) as f64 / reads as f64
        }
    }

    /// Counts an array reply of `elements` reads of which `nils` missed: an `MGET`'s keys, or
    /// one read for a reply that is one (`HGETALL`, `LRANGE` …: a miss when empty), for
    /// command `part` of a mix too.
    pub fn record_array(&mut self, part: usize, elements: u32, nils: u32) {
        self.arrays += 1;
        self.array_elements = self.array_elements.saturating_add(u64::from(elements));
        self.nil_elements = self.nil_elements.saturating_add(u64::from(nils));
        if let Some(p) = self.parts.get_mut(part) {
            p.record_array(usize::MAX, elements, nils);
        }
    }

    /// Records one completed request: its latency and, in open loop, its service time, both in
    /// nanoseconds; `now` is when its reply was parsed.
    pub fn record(&mut self, latency_nanos: u64, service_nanos: u64, now: Time) {
        self.record_n(micros(latency_nanos), micros(service_nanos), now, 1);
    }

    /// [`Stats::record`] of `n` requests alike, their times already in microseconds.
    fn record_n(&mut self, latency_micros: u64, service_micros: u64, now: Time, n: u64) {
        self.requests += n;
        // Cannot fail: the value is clamped into the histogram's range.
        let _ = self.latency.record_n(latency_micros, n);
        if let Some(s) = &mut self.service {
            let _ = s.record_n(service_micros, n);
        }
        if now > self.last_reply {
            self.last_reply = now;
        }
        self.end_at(now);
    }

    /// [`Stats::record_lateness`] of a request sent at `now`: counted in the ramp's step too.
    pub fn record_lateness_at(&mut self, nanos: u64, now: Time) {
        self.record_lateness(nanos);
        if let Some(h) = self.step_mut(now).and_then(|st| st.lateness.as_mut()) {
            let _ = h.record(micros(nanos));
        }
    }

    /// Records how late an open-loop request was sent: `nanos` after its intended time.
    pub fn record_lateness(&mut self, nanos: u64) {
        if let Some(h) = &mut self.lateness {
            let _ = h.record(micros(nanos));
        }
    }

    /// Records the latency so far of a request that was never answered (abandoned at the end, or
    /// never sent): a lower bound, in the latency histogram so that a stall to the end of the
    /// test shows in its percentiles as a stall in the middle does; not a completed request.
    pub fn record_unfinished(&mut self, latency_nanos: u64) {
        let _ = self.latency.record(micros(latency_nanos));
        self.lower_bounds += 1;
    }

    /// Error replies among `requests` (the errors of kind `connection` are requests lost with
    /// their connection, not replies).
    pub fn error_replies(&self) -> u64 {
        self.errors.kinds().iter().filter(|k| k.prefix != "connection").map(|k| k.count).sum()
    }

    /// When the test failed: every one of its `clients` had lost all its connections before
    /// the stop ([`Stats::failed_clients`]), the last of them at the test's end, which is
    /// returned. `None` while a client was left.
    pub fn failed_at(&self, clients: u64) -> Option<Time> {
        (self.failed_clients > 0 && self.failed_clients >= clients).then_some(self.end)
    }

    /// Open loop: arrivals of the schedule accounted for: completed (error replies among them),
    /// lost with a connection, abandoned at the end, or never sent.
    pub fn arrivals(&self) -> u64 {
        self.requests + self.lost + self.abandoned + self.unsent
    }

    /// The test has lasted until `now` at least (a connection ended then, or a reply came): the
    /// test's [`Stats::end`] moves there, in every command's and node's stats too.
    pub fn end_at(&mut self, now: Time) {
        if now > self.end {
            self.end = now;
        }
    }

    /// Gives every command's and node's stats the test's end: their rates are over the test's
    /// length, not from the first to their own last reply.
    pub fn spread_end(&mut self) {
        let end = self.end;
        for s in self.parts.iter_mut().chain(self.nodes.iter_mut()) {
            s.end = s.end.max(end);
        }
    }

    /// A connection failed at `now` with `lost` requests in flight and will come back
    /// (`--reconnect`): the requests count as errors of kind `connection`, in the series too.
    /// `first` when it was up (the start of an outage), not a failed attempt to come back.
    pub fn record_drop(&mut self, first: bool, lost: u64, now: Time) {
        self.drops += u64::from(first);
        self.lost += lost;
        if lost == 0 {
            return;
        }
        self.errors.add(b"connection", lost);
        if let Some(f) = &mut self.fine {
            f.lost(lost, now);
        }
        if self.keep_series && now >= self.start {
            let second = self.second_of(now);
            self.recording.at(second).errors += lost;
        }
    }

    /// The second of the test `now` falls in, counted from `start`.
    fn second_of(&self, now: Time) -> usize {
        (now.nanos_since(self.start) / 1_000_000_000) as usize
    }

    /// The test's length in seconds, from its measured `start` to its [`Stats::end`] (not to
    /// the last reply: a stall that lasts to the end of the test is part of it).
    pub fn duration_secs(&self) -> f64 {
        self.end.nanos_since(self.start) as f64 / 1e9
    }

    /// How long the test went on with no reply, in seconds: from its last reply (its start
    /// when none came) to its end. A stall that lasts to the end shows here.
    pub fn silent_secs(&self) -> f64 {
        self.end.nanos_since(self.last_reply.max(self.start)) as f64 / 1e9
    }

    /// Requests per second over the test's length; 0 when nothing completed.
    pub fn rps(&self) -> f64 {
        let d = self.duration_secs();
        if self.requests == 0 || d <= 0.0 {
            0.0
        } else {
            self.requests as f64 / d
        }
    }

    /// Adds `other` to `self`: counts and histograms add, the interval becomes the union.
    /// Every count is added with an overflow check: an error names the field.
    pub fn merge(&mut self, other: &Stats) -> Result<(), String> {
        add_count(&mut self.requests, other.requests, "requests")?;
        add_count(&mut self.nils, other.nils, "nil_replies")?;
        add_count(&mut self.arrays, other.arrays, "array_replies")?;
        add_count(&mut self.array_elements, other.array_elements, "array_elements")?;
        add_count(&mut self.nil_elements, other.nil_elements, "nil_elements")?;
        add_count(&mut self.expired, other.expired, "expired_misses")?;
        self.errors.merge(&other.errors)?;
        add_count(&mut self.bytes_sent, other.bytes_sent, "bytes_sent")?;
        add_count(&mut self.bytes_received, other.bytes_received, "bytes_received")?;
        add_count(&mut self.connections_opened, other.connections_opened, "connections_opened")?;
        add_count(&mut self.push_messages, other.push_messages, "push_messages")?;
        self.integer_sum = self.integer_sum.saturating_add(other.integer_sum);
        match (&mut self.delivery, &other.delivery) {
            (Some(d), Some(o)) => d.merge(o)?,
            (None, Some(o)) => self.delivery = Some(o.clone()),
            _ => {}
        }
        match (&mut self.expiry, &other.expiry) {
            (Some(d), Some(o)) => d.merge(o)?,
            (None, Some(o)) => self.expiry = Some(o.clone()),
            _ => {}
        }
        match (&mut self.tracking, &other.tracking) {
            (Some(d), Some(o)) => d.merge(o)?,
            (None, Some(o)) => self.tracking = Some(o.clone()),
            _ => {}
        }
        match (&mut self.cache, &other.cache) {
            (Some(d), Some(o)) => d.merge(o)?,
            (None, Some(o)) => self.cache = Some(o.clone()),
            _ => {}
        }
        add_count(&mut self.drops, other.drops, "reconnects.drops")?;
        add_count(&mut self.lost, other.lost, "reconnects.lost_requests")?;
        add_count(&mut self.resent, other.resent, "reconnects.resent")?;
        add_count(&mut self.refused, other.refused, "reconnects.refused")?;
        add_count(&mut self.downtime_micros, other.downtime_micros, "reconnects.downtime_s")?;
        add_count(&mut self.still_down, other.still_down, "reconnects.still_down")?;
        add_count(&mut self.abandoned, other.abandoned, "abandoned_requests")?;
        add_count(&mut self.unsent, other.unsent, "unsent_requests")?;
        add_count(&mut self.lower_bounds, other.lower_bounds, "latency_lower_bounds")?;
        add_count(&mut self.failed_clients, other.failed_clients, "failed_clients")?;
        let start = self.start.min(other.start);
        // Seconds line up by the clock: second k of a run is the k-th second from its own start,
        // so each side's series moves by the whole seconds its start lies after the union's
        // (rounded to the nearest: runs started together within half a second share second 0).
        let shift = |s: Time| ((s.nanos_since(start) + SECOND_NANOS / 2) / SECOND_NANOS) as usize;
        let (mine, theirs) = (shift(self.start), shift(other.start));
        if mine > 0 && !self.series.is_empty() {
            self.series.splice(0..0, (0..mine).map(|_| Second::default()));
        }
        self.start = start;
        self.end = self.end.max(other.end);
        self.last_reply = self.last_reply.max(other.last_reply);
        self.latency.add(&other.latency).map_err(|e| format!("histograms differ: {e:?}"))?;
        self.setup.merge(&other.setup)?;
        match (&mut self.service, &other.service) {
            (Some(a), Some(b)) => a.add(b).map_err(|e| format!("histograms differ: {e:?}"))?,
            (None, Some(b)) => self.service = Some(b.clone()),
            _ => {}
        }
        match (&mut self.lateness, &other.lateness) {
            (Some(a), Some(b)) => a.add(b).map_err(|e| format!("histograms differ: {e:?}"))?,
            (None, Some(b)) => self.lateness = Some(b.clone()),
            _ => {}
        }
        // The loops of one run leave their series to the run's Collector (theirs are empty
        // here); runs merged from their JSON add up summaries, whose percentiles then become
        // bounds.
        self.keep_series |= other.keep_series;
        if !other.series.is_empty() {
            let len = theirs + other.series.len();
            if self.series.len() < len {
                self.series.resize_with(len, Second::default);
            }
            for (a, b) in self.series[theirs..].iter_mut().zip(&other.series) {
                a.merge(b);
            }
        }
        self.redirects.merge(&other.redirects)?;
        self.retries.merge(&other.retries)?;
        self.cursor.merge(&other.cursor)?;
        for r in &other.readdressed {
            self.readdress(r.clone());
        }
        self.verify.merge(&other.verify)?;
        for (&slot, (t, to)) in &other.moved {
            if self.moved.get(&slot).is_none_or(|(mine, _)| mine < t) {
                self.moved.insert(slot, (*t, to.clone()));
            }
        }
        if self.nodes.is_empty() {
            self.nodes = other.nodes.clone();
            self.appeared = other.appeared.clone();
        } else if !other.nodes.is_empty() {
            if self.nodes.len() != other.nodes.len() {
                return Err(format!(
                    "node lists differ: {} nodes and {}",
                    self.nodes.len(),
                    other.nodes.len()
                ));
            }
            // The found nodes line up; nodes that appeared line up by address.
            let found = self.found.max(other.found);
            for (i, b) in other.nodes.iter().enumerate() {
                let to = match i.checked_sub(found) {
                    None => Some(i),
                    Some(k) => other.appeared.get(k).and_then(|e| self.appeared_index(found, e)),
                };
                if let Some(a) = to.and_then(|t| self.nodes.get_mut(t)) {
                    a.merge(b)?;
                }
            }
        }
        if self.parts.is_empty() {
            self.parts = other.parts.clone();
        } else if !other.parts.is_empty() {
            if self.parts.len() != other.parts.len() {
                return Err(format!("mixes differ: {} commands and {}", self.parts.len(), other.parts.len()));
            }
            for (a, b) in self.parts.iter_mut().zip(&other.parts) {
                a.merge(b)?;
            }
        }
        if self.steps.is_empty() {
            self.steps = other.steps.clone();
            self.ramp = self.ramp.or(other.ramp);
        } else if !other.steps.is_empty() {
            if self.steps.len() != other.steps.len() {
                return Err(format!("ramps differ: {} steps and {}", self.steps.len(), other.steps.len()));
            }
            for (a, b) in self.steps.iter_mut().zip(&other.steps) {
                add_count(&mut a.requests, b.requests, "ramp.steps.requests")?;
                add_count(&mut a.errors, b.errors, "ramp.steps.errors")?;
                a.latency.add(&b.latency).map_err(|e| format!("histograms differ: {e:?}"))?;
                for (x, y) in [(&mut a.service, &b.service), (&mut a.lateness, &b.lateness)] {
                    match (x, y) {
                        (Some(x), Some(y)) => x.add(y).map_err(|e| format!("histograms differ: {e:?}"))?,
                        (x @ None, Some(y)) => *x = Some(y.clone()),
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::Collector;

    #[test]
    fn an_array_replys_reads_count_for_its_command_too() {
        let mut a = Stats::new(Time::ZERO, 3, false).unwrap().with_parts(2).unwrap();
        a.record_array(1, 4, 1);
        a.record_array(1, 2, 2);
        a.record_array(7, 3, 0);
        assert_eq!((a.arrays, a.array_elements, a.nil_elements), (3, 9, 3));
        let p = &a.parts[1];
        assert_eq!((p.arrays, p.array_elements, p.nil_elements), (2, 6, 3));
        assert_eq!(a.parts[0].arrays, 0);
    }

    #[test]
    fn series_counts_per_second_and_merges_runs_into_bounds() {
        let s = |t: u64| Time::from_micros(t);
        let mut a = Stats::new(s(1_000_000), 3, false).unwrap().with_series().with_parts(2).unwrap();
        // Seconds since start: 0, 0, 1, 3 (second 2 has nothing).
        a.record_request(0, 100_000, 0, None, s(1_100_000));
        a.record_request(1, 200_000, 0, Some(b"ERR x"), s(1_900_000));
        a.record_request(1, 300_000, 0, None, s(2_000_001));
        a.record_request(0, 400_000, 0, None, s(4_500_000));
        let mut c = Collector::new(1);
        c.publish(0, &mut a, None);
        a.series = std::mem::take(&mut c.seconds);
        let counts: Vec<(u64, u64)> = a.series.iter().map(|x| (x.requests, x.errors)).collect();
        assert_eq!(counts, [(2, 1), (1, 0), (0, 0), (1, 0)]);
        assert!((300..=303).contains(&a.series[1].max));
        assert_eq!((a.parts[0].requests, a.parts[1].requests), (2, 2));
        assert_eq!(a.parts[1].errors.total(), 1);
        assert_eq!(a.errors.total(), 1);
        // Two runs' JSON merged: counts add, percentiles become bounds.
        let mut b = a.clone();
        b.merge(&a).unwrap();
        let counts: Vec<u64> = b.series.iter().map(|x| x.requests).collect();
        assert_eq!(counts, [4, 2, 0, 2]);
        assert!(b.series[0].bounds && !b.series[2].bounds);
        assert_eq!(b.series[3].p50, a.series[3].p50);
        assert_eq!(b.parts[0].requests, 4);
        let other = Stats::new(s(0), 3, false).unwrap().with_parts(3).unwrap();
        assert!(b.merge(&other).is_err(), "mixes of different sizes do not merge");
    }

    #[test]
    fn merged_series_line_up_by_the_clock() {
        let s = |t: u64| Time::from_micros(t);
        let run = |start: u64, counts: &[u64]| {
            let mut r = Stats::new(s(start), 3, false).unwrap().with_series();
            r.series = counts.iter().map(|&n| Second { requests: n, ..Second::default() }).collect();
            r
        };
        // Started 2.2 s after the first: its second 0 is the first's second 2. One started 0.3 s
        // before the first shares its second 0.
        let mut a = run(10_000_000, &[1, 2, 3]);
        a.merge(&run(12_200_000, &[10, 20])).unwrap();
        let counts: Vec<u64> = a.series.iter().map(|x| x.requests).collect();
        assert_eq!(counts, [1, 2, 13, 20]);
        a.merge(&run(9_700_000, &[100])).unwrap();
        assert_eq!(a.start, s(9_700_000));
        let counts: Vec<u64> = a.series.iter().map(|x| x.requests).collect();
        assert_eq!(counts, [101, 2, 13, 20]);
        // An earlier run by more than half a second moves the others later.
        let mut b = run(5_000_000, &[1]);
        b.merge(&run(3_000_000, &[7, 7, 7])).unwrap();
        let counts: Vec<u64> = b.series.iter().map(|x| x.requests).collect();
        assert_eq!(counts, [7, 7, 8]);
    }

    #[test]
    fn precision_is_checked() {
        assert!(new_histogram(0).is_err());
        assert!(new_histogram(6).is_err());
        for s in 1..=5 {
            assert!(new_histogram(s).is_ok());
        }
    }

    #[test]
    fn records_round_to_micros_and_clamp() {
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap();
        s.record(1_499, 0, Time::from_micros(10));
        s.record(u64::MAX, 0, Time::from_micros(5));
        assert_eq!(s.requests, 2);
        assert_eq!(s.latency.min(), 1);
        assert!(s.latency.max() >= HIGHEST_MICROS);
        assert_eq!(s.end, Time::from_micros(10));
        assert_eq!(s.last_reply, Time::from_micros(10));
    }

    #[test]
    fn the_length_runs_to_the_end_not_to_the_last_reply() {
        // Replies for 1 s of a 4 s test, then nothing: the rate is over 4 s.
        let mut s = Stats::new(Time::ZERO, 3, true).unwrap().with_parts(1).unwrap();
        for i in 1..=100u64 {
            s.record_request(0, 1_000, 1_000, None, Time::from_micros(i * 10_000));
        }
        s.end_at(Time::from_micros(4_000_000));
        s.spread_end();
        assert_eq!(s.last_reply, Time::from_micros(1_000_000));
        assert_eq!(s.duration_secs(), 4.0);
        assert_eq!(s.rps(), 25.0);
        assert_eq!(s.parts[0].rps(), 25.0);
        // A connection that ended earlier does not move the end back.
        s.end_at(Time::from_micros(2_000_000));
        assert_eq!(s.duration_secs(), 4.0);
    }

    #[test]
    fn merged_counts_that_overflow_are_an_error_naming_the_field() {
        let mut a = Stats::new(Time::from_micros(0), 3, false).unwrap();
        let mut b = a.clone();
        a.requests = u64::MAX;
        b.requests = 20_000;
        assert_eq!(a.merge(&b).unwrap_err(), "requests: the sum overflows (it exceeds 2^64 - 1)");
        let (mut a, mut b) = (Stats::new(Time::from_micros(0), 3, false).unwrap(), a.clone());
        b.requests = 0;
        a.errors.add(b"ERR x", u64::MAX);
        b.errors.add(b"ERR y", 1);
        assert!(a.merge(&b).unwrap_err().starts_with("errors.ERR: "));
        let mut r = Redirects { moved: u64::MAX, ..Redirects::default() };
        assert!(r
            .merge(&Redirects { moved: 1, ..Redirects::default() })
            .unwrap_err()
            .starts_with("redirects.moved"));
        let mut n = 5;
        add_count(&mut n, 7, "x").unwrap();
        assert_eq!(n, 12);
    }

    #[test]
    fn errors_group_by_prefix() {
        let mut e = ErrorCounts::default();
        e.record(b"ERR unknown command");
        e.record(b"WRONGTYPE Operation against a key");
        e.record(b"ERR other");
        assert_eq!(e.total(), 3);
        assert_eq!(e.kinds()[0].prefix, "ERR");
        assert_eq!(e.kinds()[0].count, 2);
        assert_eq!(e.kinds()[0].first_message, "ERR unknown command");
        let mut f = ErrorCounts::default();
        f.record(b"MOVED 3999 127.0.0.1:6381");
        f.record(b"ERR x");
        e.merge(&f).unwrap();
        assert_eq!(e.total(), 5);
        assert_eq!(e.kinds().len(), 3);
    }

    #[test]
    fn merge_is_exact() {
        let mut a = Stats::new(Time::from_micros(10), 3, false).unwrap();
        let mut b = Stats::new(Time::from_micros(5), 3, false).unwrap();
        let mut whole = Stats::new(Time::from_micros(5), 3, false).unwrap();
        for i in 0..1000u64 {
            let v = (i * 7919) % 5000 * 1000;
            if i % 3 == 0 {
                a.record(v, 0, Time::from_micros(20 + i))
            } else {
                b.record(v, 0, Time::from_micros(20 + i))
            }
            whole.record(v, 0, Time::from_micros(20 + i));
        }
        a.merge(&b).unwrap();
        assert_eq!(a.requests, whole.requests);
        assert_eq!(a.latency, whole.latency);
        assert_eq!(a.start, Time::from_micros(5));
        assert_eq!(a.end, whole.end);
    }
}
