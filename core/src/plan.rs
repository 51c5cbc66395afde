//! What the connections of one test share: the plan (handshake, pipeline, schedule, workload),
//! the request budget, and the run control that stops the test (end of `--duration`, Ctrl-C,
//! the drain grace). Made once per test, read by every connection of every thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use crate::ramp::{Ramp, RampKind};

use crate::handshake::Handshake;
use crate::rng::Rng;
use crate::stats::Stats;
use crate::template::{KeySpace, Template};
use crate::Time;

/// The request budget of one test, shared by every connection of every thread: exact, so
/// `-n 100 -P 16` sends exactly 100 requests. Stopping a test early is [`Stop`]'s job.
#[derive(Debug)]
pub struct Budget {
    remaining: AtomicU64,
    unlimited: bool,
}

impl Budget {
    /// A budget of exactly `n` requests.
    pub fn new(n: u64) -> Budget {
        Budget { remaining: AtomicU64::new(n), unlimited: false }
    }

    /// A budget that never runs out (idle mode, time-based runs: the [`Stop`] ends them).
    pub fn unlimited() -> Budget {
        Budget { remaining: AtomicU64::new(u64::MAX), unlimited: true }
    }

    /// Takes up to `want` requests; returns how many were granted (0 when exhausted).
    pub fn take(&self, want: u64) -> u64 {
        if self.unlimited {
            return want;
        }
        let mut granted = 0;
        // Only fails when another thread changed the count first; then it retries with the new one.
        let _ = self.remaining.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
            granted = r.min(want);
            Some(r - granted)
        });
        granted
    }

    /// Whether every request has been handed out.
    pub fn is_exhausted(&self) -> bool {
        !self.unlimited && self.remaining.load(Ordering::Relaxed) == 0
    }
}

/// When a test stops before its budget is spent: the end of `--duration`, known when the plan is
/// made, or a stop asked for while it runs (Ctrl-C), whichever is first. From that time on no
/// request is handed out and connections finish when their requests in flight are answered;
/// those still unanswered `grace` later are abandoned ([`crate::Event::Abandoned`]). In an open
/// loop, arrivals due before the stop that the window held back are still handed out in the
/// grace (they are part of the test); those never sent count as unsent
/// ([`crate::Client::settle`]).
///
/// Connections see the stop through [`crate::Client::poll_timeout`]: a backend that learns of
/// a stop asked for while it waits (see [`Stop::generation`]) asks every connection again.
#[derive(Debug)]
pub struct Stop {
    /// Nanoseconds of the stop time; `u64::MAX` while there is none.
    at: AtomicU64,
    grace: Duration,
    /// Bumped by every [`Stop::request`] that moved the stop time earlier.
    generation: AtomicU64,
}

impl Stop {
    /// A stop at `at` (none: run until the budget is spent or [`Stop::request`]), abandoning
    /// what is still in flight `grace` later.
    pub fn new(at: Option<Time>, grace: Duration) -> Stop {
        let at = at.map_or(u64::MAX, |t| t.as_nanos().min(u64::MAX - 1));
        Stop { at: AtomicU64::new(at), grace, generation: AtomicU64::new(0) }
    }

    /// Stops the test at `now`, unless it is already stopping earlier.
    pub fn request(&self, now: Time) {
        let now = now.as_nanos().min(u64::MAX - 1);
        if self.at.fetch_min(now, Ordering::SeqCst) > now {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The stop time, if there is one.
    pub fn at(&self) -> Option<Time> {
        match self.at.load(Ordering::Relaxed) {
            u64::MAX => None,
            n => Some(Time::from_nanos(n)),
        }
    }

    /// Whether the test has stopped by `now`.
    pub fn is_due(&self, now: Time) -> bool {
        self.at().is_some_and(|t| t <= now)
    }

    /// When requests still in flight are abandoned: the stop time plus the grace.
    pub fn abandon_at(&self) -> Option<Time> {
        self.at().map(|t| t + self.grace)
    }

    /// How long requests in flight may take after the stop.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Changes whenever a stop asked for while the test runs moved the stop time: a backend whose
    /// connections wait on timers they took earlier compares it to decide to ask them again.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

/// An open-loop arrival schedule: requests are due at intended times whatever the server does,
/// and latency counts from the intended time. The total rate is shared evenly by the test's
/// connections ([`Plan::connections`]).
///
/// A request is never sent before its intended time. A loop that woke for every arrival on its
/// own would pay a sleep, a wake-up and a timer per request (and the server a wake-up per
/// request as well), which at tens of thousands of requests a second costs more than the
/// requests themselves; so the schedule asks to be woken on a grid of `slack`
/// ([`OpenLoop::wake_at`]): every loop wakes at the same multiples of `slack` on the run's
/// clock and sends every request due by then, one write per connection. A request is thus sent
/// up to `slack` after its intended time when nothing else woke its loop earlier; that lateness
/// is recorded per request ([`crate::Stats::lateness`]) and is part of the latency, which
/// counts from the intended time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenLoop {
    /// Requests per second, all connections together (`--rps`).
    pub rate: f64,
    /// Exponential gaps (a Poisson process) instead of constant ones.
    pub poisson: bool,
    /// The grid the loops wake on for arrivals; zero wakes exactly at each intended time.
    pub slack: Duration,
}

impl OpenLoop {
    /// The slack of a schedule unless said otherwise: 250 µs. At 50,000 requests a second a
    /// wake-up sends about twelve requests (five at 20,000); a request waits 125 µs for its
    /// send on average, at most 250 µs when its loop was on time. Measured on two cores (GET,
    /// `-c 50`, mio): 0 µs costs 14.4 µs of client CPU per request at 50,000/s and 33.5 µs at
    /// 20,000/s, 100 µs 12.9 and 29.9, 250 µs 10.5 and 17.1 (the closed loop 6.4).
    pub const DEFAULT_SLACK: Duration = Duration::from_micros(250);

    /// Up to this many arrivals a second per event loop (one per [`OpenLoop::DEFAULT_SLACK`]),
    /// the grid would put hardly two requests on one wake-up, so it saves no wake-ups and only
    /// delays sends: the session's default slack there is zero. Measured on two cores (GET,
    /// `-c 50`, mio, two rounds): at 1,000–4,000 per second the grid made no consistent
    /// difference to the CPU per request (50–81 µs either way) and added 0.03–0.23 ms to the
    /// corrected p50 (0.12–0.15 ms without it); at 8,000 per second it saved a third of the CPU.
    pub const EXACT_UP_TO: u64 = 4_000;

    /// `rate` requests a second over all connections, with the default slack.
    pub fn new(rate: f64, poisson: bool) -> OpenLoop {
        OpenLoop { rate, poisson, slack: OpenLoop::DEFAULT_SLACK }
    }

    /// The schedule at which each of `connections` connections sends every `interval`, woken
    /// exactly at each intended time (no slack).
    pub fn per_connection(interval: Duration, connections: u64, poisson: bool) -> OpenLoop {
        OpenLoop { rate: connections.max(1) as f64 / interval.as_secs_f64(), poisson, slack: Duration::ZERO }
    }

    /// When a loop should wake for an arrival due at `due`: the first multiple of the slack at
    /// or after it (`due` itself without slack), so that the arrivals of every connection due
    /// within one slack are sent on one wake-up.
    pub fn wake_at(&self, due: Time) -> Time {
        let slack = u64::try_from(self.slack.as_nanos()).unwrap_or(u64::MAX);
        if slack <= 1 || due == Time::MAX {
            return due;
        }
        let t = due.as_nanos();
        match t.div_ceil(slack).checked_mul(slack) {
            Some(at) => Time::from_nanos(at),
            None => due,
        }
    }

    /// The mean time between two requests of one of `connections` connections sharing the rate.
    pub fn interval(&self, connections: u64) -> Duration {
        let secs = connections.max(1) as f64 / self.rate;
        if secs.is_finite() && secs > 0.0 {
            Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
        } else {
            Duration::MAX
        }
    }
}

/// How long a connection's handshake, and the startup connection's every step, may wait for
/// the server without `--timeout` ([`ConnConfig::request_timeout`]): a server that never answers
/// `AUTH` or `HELLO` fails the connection then, never hangs the run.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(5);

/// How the connections of one test behave.
#[derive(Clone, Debug)]
pub struct ConnConfig {
    /// Sent first on every new socket.
    pub handshake: Handshake,
    /// Most requests in flight for one client (`-P`), at least 1; over several nodes it spans
    /// the client's connections.
    pub pipeline: u32,
    /// How the `pipeline` requests are kept going: in batches (redis-benchmark's `-P`) or as a
    /// window refilled per reply (`--pipeline-mode`).
    pub pipeline_mode: PipelineMode,
    /// `false` (`-k 0`): a new socket for every batch of `pipeline` requests.
    pub keepalive: bool,
    /// `--reconnect-every N` (memtier's `--reconnect-interval`): each socket of a client carries
    /// N requests, its pipeline held so that none crosses the N-th, then, all answered, it
    /// closes and a new socket opens (the handshake again) for the next N; `None`: kept. Closed
    /// loop, one node.
    pub reconnect_every: Option<u64>,
    /// Idle mode (`-I`): handshake only, then wait.
    pub idle: bool,
    /// An arrival schedule; `None` is closed loop (send as soon as a reply frees a slot).
    pub open_loop: Option<OpenLoop>,
    /// `--reconnect`: a connection that fails mid-run (reset, closed, timed out, protocol error)
    /// comes back after a backoff instead of ending; `None` ends it.
    pub reconnect: Option<Backoff>,
    /// `--timeout`: how long a request (counted from when it was queued) or the handshake may
    /// wait for its reply before the connection fails with [`crate::ConnError::Timeout`]; `None`:
    /// a request waits forever, the handshake [`SETUP_TIMEOUT`].
    pub request_timeout: Option<Duration>,
    /// `--connect-timeout`: how long a socket's connect may take before the connection fails
    /// (the driver keeps it: the core sees only the failure); `None`: as long as the kernel
    /// tries.
    pub connect_timeout: Option<Duration>,
}

/// redis-benchmark's: no handshake, `-P 1` in batches, kept alive, closed loop, no `--timeout`
/// and no `--reconnect`.
impl Default for ConnConfig {
    fn default() -> ConnConfig {
        ConnConfig {
            handshake: Handshake::default(),
            pipeline: 1,
            pipeline_mode: PipelineMode::Batch,
            keepalive: true,
            reconnect_every: None,
            idle: false,
            open_loop: None,
            reconnect: None,
            request_timeout: None,
            connect_timeout: None,
        }
    }
}

/// How a client keeps its `-P N` requests going (`--pipeline-mode`).
///
/// - Closed loop: [`PipelineMode::Batch`] sends N requests, waits until all N are answered and
///   sends the next N (the last batch smaller, so `-n` stays exact); [`PipelineMode::Window`]
///   keeps N in flight and sends one more as each reply lands.
/// - Open loop (`--rps`): requests are drawn when they are due, at most N outstanding. In batch
///   mode nothing is drawn while any request of the last batch is unanswered: the arrivals that
///   came due meanwhile (up to N) go together in one write when it is, and their latency counts
///   from their intended times. When a reply comes back before the next arrival, both modes send
///   one request per write.
/// - `-k 0`: the same in both modes: a new socket for every batch of N.
/// - Several nodes: the N span the client's connections; a batch is answered when every node's
///   part (and any request redirected meanwhile) is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PipelineMode {
    /// redis-benchmark's and valkey-benchmark's `-P`: send N, wait for the N replies, send the
    /// next N. A client that pipelines in rounds (a batch job, a page that needs N keys).
    #[default]
    Batch,
    /// N requests in flight at all times, one sent as each reply lands: an async client that
    /// many independent callers share (a connection pool's multiplexed connection).
    Window,
}

impl PipelineMode {
    /// Both modes, in the order the help lists them.
    pub const ALL: [PipelineMode; 2] = [PipelineMode::Batch, PipelineMode::Window];

    /// The name the command line and the JSON use: `batch` or `window`.
    pub fn name(self) -> &'static str {
        match self {
            PipelineMode::Batch => "batch",
            PipelineMode::Window => "window",
        }
    }
}

impl std::fmt::Display for PipelineMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PipelineMode {
    type Err = String;

    fn from_str(s: &str) -> Result<PipelineMode, String> {
        PipelineMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown pipeline mode '{s}': expected batch or window"))
    }
}

/// How a failed connection comes back (`--reconnect`): it waits `first` before its first attempt,
/// `factor` times as long after each attempt that fails, at most `max`, and gives up after
/// `attempts` attempts in a row; a connection that got through its handshake starts from `first`
/// again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// The first wait.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
    /// How much longer each wait is than the one before (`--reconnect-factor`; 2: doubling).
    pub factor: f64,
    /// `--reconnect-attempts`: how many attempts in a row a connection makes before it fails for
    /// good; `None`: no limit. (A retried request's limit is [`Retry::limit`].)
    pub attempts: Option<u32>,
}

impl Backoff {
    /// Waits from `first` doubling up to `max`, with no limit on attempts.
    pub const fn doubling(first: Duration, max: Duration) -> Backoff {
        Backoff { first, max, factor: 2.0, attempts: None }
    }

    /// The wait after one of `previous` (zero: the first wait).
    pub fn next(&self, previous: Duration) -> Duration {
        if previous.is_zero() {
            return self.first.min(self.max);
        }
        Duration::try_from_secs_f64(previous.as_secs_f64() * self.factor).unwrap_or(self.max).min(self.max)
    }
}

/// `--retry-on`: the error replies that mean "wait" (`LOADING`, `BUSY`, `TRYAGAIN`, …). A
/// request answered with one is sent again on the same connection after a pause (`backoff.first`,
/// doubling with each retry of it, at most `backoff.max`), up to `limit` times; the reply after
/// the last retry is its answer, counted in [`crate::Stats::gave_up`].
#[derive(Clone, Debug, PartialEq)]
pub struct Retry {
    /// The first words of the error replies retried, as the server sends them.
    pub on: Vec<String>,
    /// The pause before a request's first retry, and the longest.
    pub backoff: Backoff,
    /// How many times one request is retried at most.
    pub limit: u32,
}

impl Retry {
    /// Whether an error reply whose message (without its `-`) is `message` is retried.
    pub fn retries(&self, message: &[u8]) -> bool {
        let word = crate::resp::error_prefix(message);
        self.on.iter().any(|w| w.as_bytes() == word)
    }

    /// The pause before retry number `attempt` (from 1) of one request.
    pub fn pause(&self, attempt: u32) -> Duration {
        let doubled = self.backoff.first.saturating_mul(1u32 << attempt.saturating_sub(1).min(30));
        doubled.min(self.backoff.max)
    }
}

/// What one test sends: the request template and how its placeholders are filled.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The request (without a mix).
    pub template: Template,
    /// How `__rand_int__` placeholders are filled.
    pub keys: KeySpace,
    /// Several commands with weights (`--mix`); when set, `template` is not used.
    pub mix: Option<Mix>,
}

/// Several commands in one test: each request is one of them, drawn by weight, or, for a
/// sequence, the next one in turn.
#[derive(Clone, Debug)]
pub struct Mix {
    pub(crate) templates: Vec<Template>,
    /// A replay ([`Mix::replay`]): the records each client sends; the templates only name the
    /// commands its stats are kept for.
    pub(crate) feed: Option<std::sync::Arc<dyn crate::replay::Feed>>,
    /// Running sums of the weights; the last is the total.
    cumulative: Vec<u64>,
    /// A sequence (valkey-benchmark 9's `cmd ; 3 cmd`): each client sends the commands in
    /// turn, whole sequences on its connection (see [`Mix::sequence`]).
    sequence: bool,
    /// Each command's own keys (`--mix get:10@zipf:0.99`); `None` (or an empty list) draws
    /// from the workload's keys.
    keys: Vec<Option<KeySpace>>,
    /// The `SET` with sequential keys of its own whose keys the mix's `GET`s of the same key
    /// pattern are checked against ([`Mix::tracks`]), and those `GET`s.
    writer: Option<usize>,
    tracked: Vec<bool>,
    /// `--follow-cursor`: the argument that carries the cursor of the mix's one command, sent
    /// as [`crate::cursor::FIRST`] and [`crate::cursor::NEXT`] (see [`Mix::cursor`]).
    cursor: Option<usize>,
    /// `--follow-cursor-limit`: the most continuations of one walk (0: until the cursor is 0).
    cursor_limit: u64,
    /// `--mix-in-turn` (see [`Mix::in_turn`]) or `--mix-in-turn-per-client` (see
    /// [`Mix::in_turn_per_client`]): whose count of requests drawn takes the commands in turn.
    in_turn: Option<Turn>,
}

/// Whose count of requests drawn takes a mix's commands in turn.
#[derive(Clone, Debug)]
enum Turn {
    /// The requests drawn so far by every client of the test.
    Shared(std::sync::Arc<std::sync::atomic::AtomicU64>),
    /// Each client's own requests drawn so far.
    PerClient,
}

impl Mix {
    /// A mix of `(template, weight)`: at least one command, every weight at least 1, and a total
    /// that fits in 64 bits.
    pub fn new(parts: Vec<(Template, u64)>) -> Result<Mix, String> {
        if parts.is_empty() {
            return Err("a mix needs at least one command".into());
        }
        let mut total = 0u64;
        let mut templates = Vec::with_capacity(parts.len());
        let mut cumulative = Vec::with_capacity(parts.len());
        for (t, w) in parts {
            if w == 0 {
                return Err("a mix weight must be at least 1".into());
            }
            total = total.checked_add(w).ok_or("the mix weights add up to more than 2^64")?;
            templates.push(t);
            cumulative.push(total);
        }
        Ok(Mix {
            templates,
            cumulative,
            sequence: false,
            feed: None,
            keys: Vec::new(),
            writer: None,
            tracked: Vec::new(),
            cursor: None,
            cursor_limit: 0,
            in_turn: None,
        })
    }

    /// `--follow-cursor`: `template` (a SCAN-family command with cursor 0 in argument `arg`)
    /// sent with the cursor each client's last reply returned ([`crate::cursor`]); its first
    /// calls and its continuations are the mix's two commands.
    pub fn cursor(template: Template, arg: usize) -> Mix {
        Mix {
            templates: vec![template.clone(), template],
            cumulative: vec![1, 2],
            sequence: false,
            feed: None,
            keys: Vec::new(),
            writer: None,
            tracked: Vec::new(),
            cursor: Some(arg),
            cursor_limit: 0,
            in_turn: None,
        }
    }

    /// The cursor mix with at most `limit` continuations in a walk, then cursor 0 again
    /// (memtier's `--scan-incremental-max-iterations`); 0 follows each cursor to 0.
    pub fn with_cursor_limit(mut self, limit: u64) -> Mix {
        self.cursor_limit = limit;
        self
    }

    /// The mix sent in turn (`--mix-in-turn`, memtier's `__monitor_line@__` with
    /// `--monitor-pattern S`): the test's requests, whichever client sends them, are command 0
    /// its weight's times, then command 1, and so on, from the first again after the last (one
    /// count shared by every client and thread, as memtier's); unlike a sequence, each request
    /// counts alone (`-n` and `-P` are requests, not whole rounds). Over a whole number of
    /// rounds, each command is sent exactly its weight's times a round.
    pub fn in_turn(mut self) -> Mix {
        self.in_turn = Some(Turn::Shared(Default::default()));
        self
    }

    /// The mix sent in turn by each client on its own (`--mix-in-turn-per-client`, memtier's
    /// order of its `--command`s): a client's requests are command 0 its weight's times, then
    /// command 1, and so on, whatever the other clients send, so that commands that belong
    /// together (`MULTI`, a write, `EXEC`) go in their order on the client's connection.
    pub fn in_turn_per_client(mut self) -> Mix {
        self.in_turn = Some(Turn::PerClient);
        self
    }

    /// Whether the mix is sent in turn ([`Mix::in_turn`]).
    pub fn is_in_turn(&self) -> bool {
        self.in_turn.is_some()
    }

    /// The command of the next request of a mix sent in turn (the first without); `own` is the
    /// client's count of requests drawn, which a mix sent in turn per client takes and bumps.
    pub(crate) fn turn(&self, own: &mut u64) -> usize {
        let drawn = match &self.in_turn {
            Some(Turn::Shared(n)) => n.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            Some(Turn::PerClient) => {
                let d = *own;
                *own = own.wrapping_add(1);
                d
            }
            None => 0,
        };
        let total = *self.cumulative.last().unwrap_or(&1);
        self.cumulative.partition_point(|&c| c <= drawn % total)
    }

    /// The most continuations of one walk, 0 for no limit ([`Mix::with_cursor_limit`]).
    pub fn cursor_limit(&self) -> u64 {
        self.cursor_limit
    }

    /// The argument that carries the cursor, when the mix follows one ([`Mix::cursor`]).
    pub fn cursor_arg(&self) -> Option<usize> {
        self.cursor
    }

    /// The mix with keys of their own for some commands (`--mix set:1@sequential,get:10@zipf`):
    /// one entry per command, `None` for one that draws from the workload's keys.
    ///
    /// The first `SET` with sequential keys of its own becomes the mix's writer: a nil reply
    /// to a `GET` of the same key pattern, of a key the writer had handed out well before the
    /// `GET` was drawn, counts as a miss of a written key ([`crate::Stats::expired`]; see
    /// [`Mix::written`]).
    pub fn with_keys(mut self, keys: Vec<Option<KeySpace>>) -> Result<Mix, String> {
        if keys.len() != self.templates.len() {
            return Err(format!("{} key spaces for a mix of {} commands", keys.len(), self.templates.len()));
        }
        let command = |t: &Template, name: &[u8]| t.arg(0).is_some_and(|a| a.eq_ignore_ascii_case(name));
        self.writer = self.templates.iter().zip(&keys).position(|(t, k)| {
            command(t, b"SET") && matches!(k, Some(KeySpace::Sequential { .. })) && t.arg(1).is_some()
        });
        self.tracked = match self.writer {
            Some(w) => {
                let pattern = self.templates[w].arg(1);
                self.templates.iter().map(|t| command(t, b"GET") && t.arg(1) == pattern).collect()
            }
            None => Vec::new(),
        };
        self.keys = keys;
        Ok(self)
    }

    /// Command `i`'s own keys, if it has them.
    pub fn keys(&self, i: usize) -> Option<&KeySpace> {
        self.keys.get(i).and_then(Option::as_ref)
    }

    /// The mix with fresh counters for its sequential keys (a new test starts from the first).
    pub fn fresh(&self) -> Mix {
        let mut m = self.clone();
        m.keys = self.keys.iter().map(|k| k.as_ref().map(KeySpace::fresh)).collect();
        m
    }

    /// Whether a nil reply to command `i` is checked against the writer's keys.
    pub fn tracks(&self, i: usize) -> bool {
        self.tracked.get(i).copied().unwrap_or(false)
    }

    /// Whether `key` had been written by the mix's writer when a request of it was drawn:
    /// the writer's shared counter had handed it out at least `margin` draws before (the
    /// requests that may still be in flight, so that its `SET` had been sent, and in all but a
    /// stalled connection answered, before the `GET` was). The counter is the one every
    /// connection draws from, so this needs no state of its own.
    pub(crate) fn written(&self, key: u64, margin: u64) -> bool {
        let Some(KeySpace::Sequential { first, n, next }) = self.writer.and_then(|w| self.keys(w)) else {
            return false;
        };
        let Some(index) = key.checked_sub(*first).filter(|&i| i < (*n).max(1)) else { return false };
        index.saturating_add(margin) < next.load()
    }

    /// A sequence (a command repeated N times is there N times): as valkey-benchmark sends
    /// one, each client sends the commands in turn on its connection, whole sequences only:
    /// a client takes a sequence's commands from the budget when it starts one, so `-n` counts
    /// commands and is rounded up to whole sequences (`MULTI ; SET k v ; EXEC` is never cut).
    pub fn sequence(templates: Vec<Template>) -> Result<Mix, String> {
        let mut m = Mix::new(templates.into_iter().map(|t| (t, 1)).collect())?;
        m.sequence = true;
        Ok(m)
    }

    /// A replay: each client sends the records `feed` gives it (see [`crate::replay`]), counted
    /// under the command of `names` its record says ([`crate::replay::Record::part`]).
    pub fn replay(
        names: Vec<Template>,
        feed: std::sync::Arc<dyn crate::replay::Feed>,
    ) -> Result<Mix, String> {
        let mut m = Mix::new(names.into_iter().map(|t| (t, 1)).collect())?;
        m.feed = Some(feed);
        Ok(m)
    }

    /// Whether it is a replay's.
    pub fn is_replay(&self) -> bool {
        self.feed.is_some()
    }

    /// The length of a sequence; `None` for a mix drawn by weight.
    pub fn sequence_len(&self) -> Option<u64> {
        self.sequence.then_some(self.templates.len() as u64)
    }

    /// The commands, in the order given.
    pub fn templates(&self) -> &[Template] {
        &self.templates
    }

    /// The weight of command `i`.
    pub fn weight(&self, i: usize) -> u64 {
        let before = if i == 0 { 0 } else { self.cumulative[i - 1] };
        self.cumulative[i] - before
    }

    /// How many commands.
    pub fn len(&self) -> usize {
        self.templates.len()
    }

    /// Whether the mix is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.templates.is_empty()
    }

    /// Draws a command index with probability weight / total.
    pub(crate) fn pick(&self, rng: &mut Rng) -> usize {
        let total = *self.cumulative.last().unwrap_or(&1);
        let x = rng.below(total);
        self.cumulative.partition_point(|&c| c <= x)
    }
}

/// Everything the connections of one test share, across threads.
#[derive(Debug)]
pub struct Plan {
    /// Connection behaviour.
    pub conn: ConnConfig,
    /// What to send.
    pub workload: Workload,
    /// How many requests, in total.
    pub budget: Budget,
    /// When the test stops before the budget is spent, and the grace after that.
    pub stop: Stop,
    /// The run's seed: connection `i` draws keys from stream `i` of it.
    pub seed: u64,
    /// How many connections the test opens in all, to spread open-loop start times evenly.
    pub connections: u64,
    /// Replies parsed before this time are not recorded (`--warmup`); `Time::ZERO` records all.
    pub measure_from: Time,
    /// Keep a per-second time series (see [`Stats::series`]).
    pub series: bool,
    /// Keep 100 ms windows too (a test with events, `--at`: see [`crate::disruption`]).
    pub fine: bool,
    /// Several nodes (`--cluster`, replicas): connection `i` is client `i / nodes` on node
    /// `i % nodes`, and the client's router sends each request to its node.
    pub cluster: Option<crate::cluster::Cluster>,
    /// `--verify`: values that encode their key and version, and reads checked against them
    /// (see [`crate::verify`]); `None` sends the templates' bytes and checks nothing.
    pub verify: Option<std::sync::Arc<crate::verify::Verify>>,
    /// A ramp within the test (`--ramp`); `None` keeps one level throughout.
    pub ramp: Option<Ramp>,
    /// `--retry-on`: error replies after which a request is sent again; `None` completes every
    /// request with the reply it gets (a cluster's redirects aside).
    pub retry: Option<Retry>,
    /// `--cache-aside`: a `GET` that misses is followed by a `SET` of its key on the same
    /// connection (see [`crate::cache`]); `None` sends nothing after a miss.
    pub cache_aside: Option<std::sync::Arc<crate::cache::CacheAside>>,
    /// `--sentinel` with `--reconnect`: for each command of the test (the template, or each of
    /// the mix's), whether a request in flight when its connection goes down is sent again once
    /// it is back ([`crate::cluster::Route::repeatable`]) instead of counted lost; `None` resends
    /// nothing (and keeps no request's bytes for it).
    pub resend: Option<std::sync::Arc<[bool]>>,
}

impl Plan {
    /// A plan of one connection with seed 1, measured from the start, with no series, no
    /// events, no cluster, no verification and no ramp: the fields a test or an example sets
    /// after it (`Plan { seed: 7, ..Plan::new(conn, workload, budget, stop) }`).
    pub fn new(conn: ConnConfig, workload: Workload, budget: Budget, stop: Stop) -> Plan {
        Plan {
            conn,
            workload,
            budget,
            stop,
            seed: 1,
            connections: 1,
            measure_from: Time::ZERO,
            series: false,
            fine: false,
            cluster: None,
            verify: None,
            ramp: None,
            retry: None,
            cache_aside: None,
            resend: None,
        }
    }

    /// Whether a request of command `part` in flight when its connection goes down is sent
    /// again ([`Plan::resend`]).
    pub fn resends(&self, part: u16) -> bool {
        self.resend.as_ref().is_some_and(|r| r.get(usize::from(part)).copied().unwrap_or(false))
    }

    /// Empty stats for one event loop of this plan, starting at `start` (or at the end of the
    /// warmup, if later): with a service-time histogram in open loop, a time series if asked, and
    /// one part per command of a mix.
    pub fn new_stats(&self, start: Time, sigfig: u8) -> Result<Stats, String> {
        let mut stats = Stats::new(start.max(self.measure_from), sigfig, self.conn.open_loop.is_some())?;
        if self.series {
            stats = stats.with_series();
        }
        if self.fine {
            stats = stats.with_fine();
        }
        if let Some(r) = &self.ramp {
            stats = stats.with_steps(*r)?;
        }
        if let Some(m) = &self.workload.mix {
            stats = stats.with_parts(m.len())?;
        }
        if let Some(c) = &self.cluster {
            stats = stats.with_nodes(c.nodes.len(), c.len() - c.nodes.len())?;
        }
        if self.cache_aside.is_some() {
            stats.cache = Some(Box::new(crate::cache::CacheStats::new(sigfig)?));
        }
        if let Some(v) = &self.verify {
            stats.verify.on = true;
            stats.verify.versions = v.versions();
        }
        Ok(stats)
    }

    /// How many connections each client opens: one per node, or one.
    pub fn nodes(&self) -> usize {
        self.cluster.as_ref().map_or(1, |c| c.len())
    }
}

#[cfg(test)]
mod ramp_tests {
    use super::*;

    fn ramp(kind: RampKind, from: u64, to: u64, step: u64, every_ms: u64) -> Ramp {
        Ramp { kind, from, to, step, every: Duration::from_millis(every_ms), start: Time::from_micros(500) }
    }

    #[test]
    fn steps_levels_and_their_times() {
        let r = ramp(RampKind::Clients, 10, 200, 10, 5_000);
        assert_eq!(r.steps(), 20);
        assert_eq!((r.level(0), r.level(19), r.level(25)), (10, 200, 200));
        let s = Time::from_micros(500);
        assert_eq!(r.step_at(Time::ZERO), 0);
        assert_eq!(r.step_at(s + Duration::from_millis(4_999)), 0);
        assert_eq!(r.step_at(s + Duration::from_millis(5_000)), 1);
        assert_eq!(r.step_at(s + Duration::from_secs(1_000)), 19);
        assert_eq!(r.step_end(19), Time::MAX);
        // Clients 0-9 at the start, 10-19 in step 1 …, none past 200.
        assert_eq!(r.client_start(9), Some(s));
        assert_eq!(r.client_start(10), Some(s + Duration::from_secs(5)));
        assert_eq!(r.client_start(199), Some(s + Duration::from_secs(95)));
        assert_eq!(r.client_start(200), None);
        // A step that does not divide the range: its last level is `to`.
        let r = ramp(RampKind::Clients, 2, 9, 3, 1_000);
        assert_eq!(r.steps(), 4);
        assert_eq!(r.client_start(8), Some(s + Duration::from_secs(3)));
        let one = ramp(RampKind::Rps, 5, 5, 1, 1_000);
        assert_eq!(one.steps(), 1);
    }

    #[test]
    fn the_rate_schedule_changes_its_clock_at_each_boundary() {
        // 1000/s then 2000/s over one connection: 1 ms gaps, then 0.5 ms.
        let r = Ramp { start: Time::ZERO, ..ramp(RampKind::Rps, 1000, 2000, 1000, 10) };
        let ms = |x: f64| Time::from_nanos((x * 1e6) as u64);
        assert_eq!(r.advance(ms(0.0), 1.0, 1), ms(1.0));
        assert_eq!(r.advance(ms(9.0), 1.0, 1), ms(10.0));
        // Half a gap before the boundary, half after at the doubled rate.
        assert_eq!(r.advance(ms(9.5), 1.0, 1), ms(10.25));
        assert_eq!(r.advance(ms(10.0), 1.0, 1), ms(10.5));
        // Ten arrivals over two connections from 5 ms: 5 ms at 500/s (2.5 arrivals), then
        // 7.5 at 1000/s.
        assert_eq!(r.advance(ms(5.0), 10.0, 2), ms(17.5));
        // The arrivals of a step are its level times its length, whatever the gaps crossed.
        let mut t = Time::ZERO;
        let mut count = [0u64; 2];
        while t < ms(20.0) {
            count[r.step_at(t)] += 1;
            t = r.advance(t, 1.0, 1);
        }
        assert_eq!(count, [10, 20]);
        // Before the ramp starts, the first step's rate.
        let late = Ramp { start: ms(5.0), ..r };
        assert_eq!(late.advance(ms(4.0), 2.0, 1), ms(6.0));
    }
}

#[cfg(test)]
mod in_turn_tests {
    use super::*;

    /// A mix sent in turn: each command its weight's times in a row, then the next, round
    /// after round.
    #[test]
    fn a_mix_in_turn_goes_round_by_weight() {
        let t = |name: &[u8]| Template::command(&[name]);
        let m = Mix::new(vec![(t(b"A"), 2), (t(b"B"), 1), (t(b"C"), 3)]).unwrap().in_turn();
        assert!(m.is_in_turn());
        let mut own = 0;
        let turns: Vec<usize> = (0..12).map(|_| m.turn(&mut own)).collect();
        assert_eq!(turns, [0, 0, 1, 2, 2, 2, 0, 0, 1, 2, 2, 2]);
        assert_eq!((m.sequence_len(), own), (None, 0));
        // Clones (each thread's plan) share the count.
        let other = m.clone();
        assert_eq!((other.turn(&mut own), m.turn(&mut own), other.turn(&mut own)), (0, 0, 1));
    }

    /// A mix sent in turn per client: each client's own count goes round by weight, whatever
    /// the others drew.
    #[test]
    fn a_mix_in_turn_per_client_goes_round_for_each_client() {
        let t = |name: &[u8]| Template::command(&[name]);
        let m =
            Mix::new(vec![(t(b"MULTI"), 1), (t(b"HSET"), 2), (t(b"EXEC"), 1)]).unwrap().in_turn_per_client();
        assert!(m.is_in_turn());
        let (mut a, mut b) = (0, 0);
        let mut turns = Vec::new();
        for _ in 0..4 {
            turns.push(m.turn(&mut a));
            turns.push(m.turn(&mut a));
            turns.push(m.turn(&mut b));
        }
        // Client a: 0 1 1 2 0 1 1 2; client b: 0 1 1 2.
        assert_eq!(turns, [0, 1, 0, 1, 2, 1, 0, 1, 1, 1, 2, 2]);
        assert_eq!((a, b), (8, 4));
        let other = m.clone();
        let mut c = 0;
        assert_eq!(other.turn(&mut c), 0, "a clone has no count of its own to share");
    }
}
