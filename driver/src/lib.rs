//! respbench-driver: what every backend of respbench shares, written once.
//!
//! A backend owns its sockets and its way of waiting (mio's edge-triggered epoll set, smol's
//! reactor and executor). Everything between a socket and the core's [`Client`] is here:
//! - [`Link`]: one client and the byte layer of each of its sockets, driven by the core's drain rule (write what
//!   the socket takes, reading the clock before each write; read until the socket is empty, to the
//!   end of the stream after a hang-up; act on the connection's events);
//! - [`Tally`]: what one event loop records (stats, failures, abandoned requests, `--reconnect`'s
//!   outages), published to the run's live figures;
//! - [`on_threads`]: the thread frame (one scoped thread per event loop, outcomes merged);
//! - [`resolve`] and [`Target`]: the endpoint resolved once per test; [`connect_tcp`]: the
//!   sockets of `--mptcp` (module `sock`, the one place that makes sockets with libc);
//! - [`Watch`]: tells a loop when the test's stop or budget changed under connections that wait
//!   on timers taken earlier;
//! - [`Timers`]: the connections' timeouts of a loop that keeps them itself (mio, uring);
//! - [`Table`]: the loop skeleton of those two (slots, start, connect, drain, timers, close),
//!   over the backend's [`Sockets`].
//! - [`Clock`]: where a loop's `now` comes from: the real clock from the run's epoch, or a
//!   [`VirtualClock`] that a simulation moves (feature `sim`: module `sim`, the real `Link`s over
//!   in-memory sockets and scripted servers on virtual time).
//!
//! The byte layer ([`Link`]'s `Layer`) is the one place where bytes between the core and the
//! socket are transformed: plain, or TLS (feature `tls`: rustls' `ClientConnection`, itself
//! sans-io), for every backend at once.

use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use respbench_core::{
    Chunk, Client, ConnError, Endpoint, Event, IoFailure, IoOp, Outcome, Plan, RunError, SharedBytes, Stats,
    Time,
};

mod clock;
mod delivered;
mod discard;
mod run;
#[cfg(feature = "sim")]
pub mod sim;
mod sock;
mod table;
mod timers;
#[cfg(feature = "tls")]
mod tls;

pub use clock::{Clock, VirtualClock};
pub use delivered::Delivered;
pub use discard::{discard_fd, discard_refused, refuse_discard, Kind as SocketKind, Source};
pub use run::{
    fine_timer_slack, loops, watch_pauses, Figures, Locate, Pauses, Progress, Published, ServerGauges,
    TestRun, FIGURES_HISTOGRAMS_EVERY, PAUSE_INTERVAL, PROBE_PAUSE_INTERVAL,
};
pub use sock::{
    connect_tcp, connect_tcp_timeout, mptcp_check, mptcp_refusal, mptcp_refused, nodelay_unsupported,
    sockaddr, IPPROTO_MPTCP,
};
pub use table::{Sockets, Table};
pub use timers::Timers;
#[cfg(feature = "tls")]
pub use tls::Tls;
/// TLS settings: this build has none (it was built without the `tls` feature).
#[cfg(not(feature = "tls"))]
#[derive(Clone, Debug)]
pub enum Tls {}

/// One read buffer per event loop serves every connection: the core's parser keeps no bytes.
pub const READ_BUF: usize = 64 * 1024;
/// The least of a bulk body worth a discard ([`Source::discard`], one system call) rather
/// than reading it with what follows.
pub const DISCARD_FROM: u64 = 8 * 1024;
/// A socket whose replies end in discards reads this much at a time: a reply's header and the
/// start of its body, the rest dropped unread (a whole [`READ_BUF`] would copy most of it).
pub const DISCARDING_READ: usize = 4 * 1024;
/// How often a loop publishes its figures and looks at the test's stop.
pub const PUBLISH_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Where connections go: resolved once per test.
#[derive(Clone, Debug)]
pub enum Target {
    /// A resolved TCP address.
    Tcp(SocketAddr),
    /// A resolved TCP address that `--mptcp` connects to with an MPTCP socket ([`connect_tcp`]).
    Mptcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl Target {
    /// Its TCP address (`None` for a Unix socket).
    pub fn addr(&self) -> Option<SocketAddr> {
        match self {
            Target::Tcp(a) | Target::Mptcp(a) => Some(*a),
            Target::Unix(_) => None,
        }
    }
}

/// `--rfr` over a Sentinel: where replica node `node` goes, of the replicas the Sentinel
/// `listed` now: the k-th replica node the k-th listed (round the list when it is shorter);
/// `None` (its address kept) when no Sentinel answered; an error (the connection stays down and
/// asks again) when it lists none.
fn replica_of(
    cluster: Option<&respbench_core::cluster::Cluster>,
    node: usize,
    listed: Option<Vec<Endpoint>>,
) -> io::Result<Option<Endpoint>> {
    let Some(listed) = listed else { return Ok(None) };
    let k = cluster.map_or(0, |c| c.nodes.iter().take(node).filter(|n| !n.primary).count());
    match listed.len() {
        0 => Err(io::Error::other("the Sentinel lists no replica up")),
        n => Ok(listed.into_iter().nth(k % n)),
    }
}

/// Whether `endpoint` is a host name, which may resolve to another address later (not an IP
/// address, nor a Unix socket).
fn names_a_host(endpoint: &Endpoint) -> bool {
    matches!(endpoint, Endpoint::Tcp { host, .. } if host.parse::<std::net::IpAddr>().is_err())
}

/// Resolves the endpoint once, with redis-benchmark's message when it fails; a TCP one is a
/// [`Target::Mptcp`] with `mptcp` (`--mptcp`).
pub fn resolve(endpoint: &Endpoint, mptcp: bool) -> Result<Target, RunError> {
    let fail = |reason: String| RunError::Resolve { endpoint: endpoint.to_string(), reason };
    match endpoint {
        Endpoint::Unix(p) => Ok(Target::Unix(p.clone())),
        Endpoint::Tcp { host, port } => (host.as_str(), *port)
            .to_socket_addrs()
            .map_err(|e| fail(e.to_string()))?
            .next()
            .map(if mptcp { Target::Mptcp } else { Target::Tcp })
            .ok_or_else(|| fail("no address".into())),
    }
}

/// Every node's address resolved once (one, [`TestRun::endpoint`], without several nodes):
/// node `n`'s connections go to `targets[n]` ([`Link::target`]); nodes that appear during the
/// test are resolved when their connections open.
pub fn resolve_all(run: &TestRun) -> Result<Vec<Target>, RunError> {
    match &run.plan.cluster {
        Some(c) => c.nodes.iter().map(|n| resolve(&n.endpoint, run.mptcp)).collect(),
        None => Ok(vec![resolve(&run.endpoint, run.mptcp)?]),
    }
}

/// Runs `each` for every event loop of `run` on a thread of its own (`each(t, start)` for loop
/// `t`; `start` is the test's start on `clock`, the same for all) and merges what they recorded.
pub fn on_threads<F>(run: &TestRun, clock: impl Into<Clock>, each: F) -> Result<Outcome, RunError>
where
    F: Fn(usize, Time) -> Result<Outcome, RunError> + Sync,
{
    let clock = clock.into();
    let start = clock.now();
    run.progress.begin(run.loops());
    let each = &each;
    let done = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<Result<Outcome, RunError>> = std::thread::scope(|s| {
        // The client machine's own pauses, on the real clock (a simulation scripts its own).
        if let Clock::Real { .. } = clock {
            let (clock, done) = (&clock, &done);
            s.spawn(move || {
                run::fine_timer_slack();
                run::watch_pauses(&run.progress, clock, run::PAUSE_INTERVAL, done, std::thread::sleep)
            });
        }
        let handles: Vec<_> = (0..run.loops()).map(|t| s.spawn(move || each(t, start))).collect();
        let results = handles.into_iter().map(|h| h.join().unwrap_or(Err(RunError::Panicked))).collect();
        done.store(true, Ordering::Relaxed);
        results
    });
    let mut outcome = Outcome::merge_all(results)?;
    // The loops' seconds went to the collector as they ended (their own are empty).
    outcome.stats.series = std::mem::take(&mut run.progress.collector().seconds);
    Ok(outcome)
}

/// What one event loop records, and the run it belongs to.
pub struct Tally {
    run: TestRun,
    /// Which of the run's loops this is.
    part: usize,
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    tls: Option<Tls>,
    clock: Clock,
    /// The loop's counts and histograms.
    pub stats: Stats,
    failures: Vec<(ConnError, u64)>,
    drops: Vec<(ConnError, u64)>,
    published: Published,
    /// How late the loop woke against its deadlines since it last published, microseconds.
    woke_late: Vec<u64>,
}

impl Tally {
    /// An empty tally for loop `part` of `run` (over `tls` when given), timed on `clock` (the
    /// run's epoch as an `Instant` for the real clock), from `start`.
    pub fn new(
        run: &TestRun,
        part: usize,
        tls: Option<&Tls>,
        clock: impl Into<Clock>,
        start: Time,
    ) -> Result<Tally, RunError> {
        Ok(Tally {
            run: run.clone(),
            part,
            tls: tls.cloned(),
            clock: clock.into(),
            stats: run.plan.new_stats(start, run.sigfig).map_err(RunError::Setup)?,
            failures: Vec::new(),
            drops: Vec::new(),
            published: Published::default(),
            woke_late: Vec::new(),
        })
    }

    /// The clock, as the core counts time.
    pub fn now(&self) -> Time {
        self.clock.now()
    }

    /// `t` as an `Instant` (the run's epoch plus `t`), for a backend that sleeps until a
    /// [`Time`] on the real clock (see [`Clock::instant`]).
    pub fn instant(&self, t: Time) -> std::time::Instant {
        self.clock.instant(t)
    }

    /// The loop's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The test's plan.
    pub fn plan(&self) -> &Plan {
        &self.run.plan
    }

    /// Adds what this loop recorded since its last call to the run's live figures.
    pub fn publish(&mut self) {
        let now = self.now();
        self.run.progress.publish(self.part, &mut self.stats, Some(now), &mut self.published);
        self.publish_wakes();
    }

    /// Records that the loop woke `late` after the deadline it asked for (kept until it
    /// publishes: at most one a wake-up, a few thousand between publications).
    pub fn woke_late(&mut self, late: std::time::Duration) {
        if self.woke_late.len() < 1 << 16 {
            self.woke_late.push(late.as_micros().min(u64::MAX as u128) as u64);
        }
    }

    fn publish_wakes(&mut self) {
        if !self.woke_late.is_empty() {
            let mut p = self.run.progress.pause_figures();
            for &us in &self.woke_late {
                p.wake.saturating_record(us);
            }
            self.woke_late.clear();
        }
    }

    /// Publishes a last time, every second of the series included, and gives the loop's
    /// outcome.
    pub fn finish(mut self) -> Outcome {
        self.stats.spread_end();
        self.run.progress.publish(self.part, &mut self.stats, None, &mut self.published);
        self.publish_wakes();
        Outcome { stats: self.stats, failures: self.failures, drops: self.drops }
    }
}

/// Tells a loop when every connection must be asked for its timeout again: a stop asked for
/// while the test runs ([`respbench_core::Stop::generation`]), the budget running out (an
/// open-loop connection waiting for its next arrival then has nothing left to do), and the
/// test's stop and abandon times passing (for a backend that waits on [`Link::timer`], which
/// leaves those to one timer for all).
#[derive(Debug, Default)]
pub struct Watch {
    generation: u64,
    exhausted: bool,
    /// How many of the stop and abandon times have passed.
    passed: u8,
}

impl Watch {
    /// Whether anything changed since the last call, at `now`.
    pub fn changed(&mut self, plan: &Plan, now: Time) -> bool {
        let (generation, exhausted) = (plan.stop.generation(), plan.budget.is_exhausted());
        let passed =
            [plan.stop.at(), plan.stop.abandon_at()].iter().filter(|t| t.is_some_and(|t| t <= now)).count()
                as u8;
        let changed = generation != self.generation || exhausted != self.exhausted || passed != self.passed;
        (self.generation, self.exhausted, self.passed) = (generation, exhausted, passed);
        changed
    }

    /// The next of the test's stop and abandon times still to come after `now`: when a loop
    /// that leaves them to [`Watch::changed`] should look next.
    pub fn next_event(plan: &Plan, now: Time) -> Option<Time> {
        [plan.stop.at(), plan.stop.abandon_at()].into_iter().flatten().find(|&t| t > now)
    }
}

/// A socket as [`Link::drain_shared`] writes to it: a `Write` that may also take a large value's
/// bytes by reference, as an owned [`SharedBytes`] handle it keeps until its send completes (a
/// completion-based backend, io_uring, whose kernel reads the bytes after the call returns and
/// so would otherwise copy them into a buffer of its own). The default writes the bytes as
/// [`Write::write`] does: the readiness backends, whose writes copy into the kernel, need
/// nothing more ([`Link::drain`] takes any `Write`).
pub trait WriteShared: Write {
    /// Takes what it can of `bytes` (all, part, or none: `WouldBlock`), as [`Write::write`];
    /// how many it took.
    fn write_shared(&mut self, bytes: SharedBytes) -> io::Result<usize> {
        self.write(bytes.bytes())
    }

    /// Whether the driver hands it several chunks at once ([`Write::write_vectored`]: a
    /// request's header, its large value and the CRLF in one system call) rather than shared
    /// chunks by their handles: a readiness socket's. Not by default. (The `Write` of
    /// [`Link::drain`] gathers: its `write_vectored` must be a socket's, short only when the
    /// socket is full, as `writev` is; std's default, which writes the first slice only, would
    /// make the drain wait for room it has.)
    fn gathers(&self) -> bool {
        false
    }
}

/// The most chunks one vectored write takes: a few requests' headers, large values and CRLFs.
const GATHER: usize = 8;

/// A plain `Write` for [`Link::drain_shared`]: shared bytes are written as bytes.
struct BytesOnly<'a, S>(&'a mut S);

impl<S: Write> Write for BytesOnly<'_, S> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes)
    }

    #[inline]
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.0.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<S: Write> WriteShared for BytesOnly<'_, S> {
    fn gathers(&self) -> bool {
        true
    }
}

/// What a backend does after [`Link::drain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Wait until the socket is readable, or writable when `write_blocked` (bytes wait for room),
    /// or the time of [`Link::timeout`].
    Wait {
        /// The socket took less than was offered.
        write_blocked: bool,
    },
    /// Close this socket, open a new one and call [`Link::connected`] (`-k 0`).
    Reconnect,
    /// Close the socket: the connection has ended (finished, failed or abandoned).
    Ended,
    /// `--reconnect`: close the socket and wait for [`Link::timeout`], then call
    /// [`Link::on_timeout`] and drain: the connection asks for a new socket when its backoff is
    /// over.
    Down,
}

/// The bytes between the core and the socket: plain, or a TLS session.
#[derive(Debug, Default)]
enum Layer {
    #[default]
    Plain,
    #[cfg(feature = "tls")]
    Tls(tls::Session),
}

impl Layer {
    /// Reads bytes the server sent; `to_end` (after a hang-up) reads on to the end of the stream
    /// where a short read would otherwise end the drain.
    fn read(
        &mut self,
        sock: &mut impl Read,
        buf: &mut [u8],
        #[allow(unused_variables)] to_end: bool,
    ) -> io::Result<usize> {
        match self {
            Layer::Plain => sock.read(buf),
            #[cfg(feature = "tls")]
            Layer::Tls(t) => t.read(sock, buf, to_end),
        }
    }

    /// Takes a chunk to send; takes fewer bytes, or would block, only when the socket is full. A
    /// shared chunk goes by its handle on a plain socket (TLS encrypts its bytes into records of
    /// its own).
    #[inline]
    fn write_chunk(&mut self, sock: &mut impl WriteShared, chunk: Chunk<'_>) -> io::Result<usize> {
        match (self, chunk) {
            (Layer::Plain, Chunk::Bytes(b)) => sock.write(b),
            (Layer::Plain, Chunk::Shared(h)) => sock.write_shared(h),
            #[cfg(feature = "tls")]
            (Layer::Tls(t), chunk) => t.write(sock, chunk.bytes()),
        }
    }

    /// Sends what the layer itself has to say (TLS handshake messages); `true` when bytes still
    /// wait for room in the socket.
    fn flush(&mut self, #[allow(unused_variables)] sock: &mut impl Write) -> io::Result<bool> {
        match self {
            Layer::Plain => Ok(false),
            #[cfg(feature = "tls")]
            Layer::Tls(t) => match t.flush(sock) {
                Ok(()) => Ok(false),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(true),
                Err(e) => Err(e),
            },
        }
    }

    /// Whether the layer is still setting itself up (a TLS handshake): the core's byte stream
    /// is not up yet.
    fn is_handshaking(&self) -> bool {
        match self {
            Layer::Plain => false,
            #[cfg(feature = "tls")]
            Layer::Tls(t) => t.is_handshaking(),
        }
    }

    /// Whether a read shorter than the buffer shows the socket empty: always on a plain socket;
    /// over TLS, which may have read more from the socket than it hands out at once, when its
    /// last socket read was short too (the plaintext it handed out was all it held).
    fn short_read_empties(&self) -> bool {
        match self {
            Layer::Plain => true,
            #[cfg(feature = "tls")]
            Layer::Tls(t) => t.drained(),
        }
    }
}

/// What [`Link::discard`] did.
enum Discarded {
    /// Nothing to drop, or the socket cannot: read.
    Nothing,
    /// Dropped bytes; there may be more.
    More,
    /// The socket is empty (or failed): the drain's reading is over.
    Empty,
}

/// The error of a connect that took longer than `--connect-timeout` (`after`).
pub fn connect_timed_out(after: std::time::Duration) -> io::Error {
    let after = respbench_core::conn::format_duration(after);
    io::Error::new(io::ErrorKind::TimedOut, format!("no answer within {after} (--connect-timeout)"))
}

/// When a connection's setup phases ended (the driver's clock).
#[derive(Clone, Copy, Debug, Default)]
struct Phases {
    started: Time,
    /// The socket connected.
    socket: Time,
    /// `--reconnect`: when the connection went down (`Time::MAX`: it is not down).
    down: Time,
    /// The byte stream is up (the TLS handshake done, or the socket connected).
    up: Time,
}

/// One socket of a [`Link`]: the byte layer to it and its setup timing.
#[derive(Debug)]
struct Socket {
    /// Where the socket goes, for error messages.
    endpoint: Endpoint,
    layer: Layer,
    /// Counted in the run's `Progress::live`.
    live: bool,
    /// Requests went unanswered with this socket (abandoned, failed, lost): close it with a
    /// reset, so that the kernel does not deliver them later.
    reset: bool,
    /// The byte stream is up: the core was told [`Client::handle_connected`].
    up: bool,
    /// Replies of this socket were large enough to discard their bodies: reads are
    /// [`DISCARDING_READ`] long.
    discarding: bool,
    phases: Phases,
    /// The address its last socket went to, when resolved again after a failure.
    addr: Option<Target>,
    /// `--sentinel`: the primary's moves ([`Locate::moves`]) heard before its socket last asked
    /// where the primary is: a socket that asked after a move is there already.
    located: u64,
    /// `--connect-timeout`: when the connect under way fails if it has not completed
    /// (`Time::MAX`: no connect under way, or no such timeout).
    connect_by: Time,
}

/// One client of a backend: the core's [`Client`] and the byte layer to each of its sockets
/// (one per node; one against a single server). The backend owns the sockets and passes them
/// in by node; a `Link` holds no protocol logic of its own, it follows the core's drain rule.
#[derive(Debug)]
pub struct Link {
    client: Client,
    sockets: Vec<Socket>,
}

impl Link {
    /// Client `index` of the test in `tally`.
    pub fn new(tally: &Tally, index: u64) -> Link {
        let client = Client::new(tally.run.plan.clone(), index);
        let sockets = (0..client.nodes())
            .map(|n| Socket {
                // A node that has not appeared yet: named when it does (Link::target).
                endpoint: match &tally.run.plan.cluster {
                    None => tally.run.endpoint.clone(),
                    Some(_) => {
                        client.endpoint(n).unwrap_or_else(|| Endpoint::Unix("(a node not seen yet)".into()))
                    }
                },
                layer: Layer::default(),
                live: false,
                reset: false,
                up: false,
                discarding: false,
                phases: Phases { down: Time::MAX, ..Phases::default() },
                addr: None,
                located: 0,
                connect_by: Time::MAX,
            })
            .collect();
        Link { client, sockets }
    }

    /// How many sockets the client has: one per node (one against a single server).
    pub fn nodes(&self) -> usize {
        self.sockets.len()
    }

    /// A node whose socket must be drained now: the client queued requests for it, a node
    /// appeared (see [`Link::is_dormant`]), or the client is done; `None` when there is none.
    #[must_use]
    pub fn poll_wake(&mut self) -> Option<usize> {
        self.client.poll_wake()
    }

    /// Over several nodes, a socket kept for a node that has not appeared: the backend opens
    /// none for it until it has (when a redirect names the node, the client queues requests for
    /// it and [`Link::poll_wake`] names it).
    pub fn is_dormant(&self, node: usize) -> bool {
        self.client.is_dormant(node)
    }

    /// A clients ramp: the time before which the client opens no socket (see
    /// [`respbench_core::Client::waits_until`]); its [`Link::timeout`] is that time, and
    /// [`Link::on_timeout`] at it lets the backend open its sockets (it is no longer dormant).
    pub fn waits_until(&self) -> Option<Time> {
        self.client.waits_until()
    }

    /// Where node `node`'s socket goes: its node's of `targets` (resolved once per test,
    /// [`resolve_all`]), or, for a node that appeared during the test, resolved now (an MPTCP
    /// target when the test's first one is). A connection that comes back after a failure
    /// (`--reconnect`) to a host name resolves it again, as production clients do, so a name
    /// that moved is followed; a change is kept in the stats ([`Stats::readdressed`]).
    pub fn target(&mut self, node: usize, targets: &[Target], tally: &mut Tally) -> io::Result<Target> {
        let mptcp = matches!(targets.first(), Some(Target::Mptcp(_)));
        if let Some(t) = targets.get(node) {
            let s = &mut self.sockets[node];
            let cluster = tally.run.plan.cluster.as_ref();
            // Against the primary alone, or its replicas too (`--rfr`): the nodes are the
            // Sentinel's.
            let locate = tally.run.locate.as_ref().filter(|l| cluster.is_none() || l.replicas.is_some());
            if s.phases.down == Time::MAX || (locate.is_none() && !names_a_host(&s.endpoint)) {
                // Not after a failure (the first connect, `-k 0`'s next): where it went last, the
                // test's address until it has moved (a replica's connection that came back to
                // the old primary must not go back to the replica the Sentinel promoted).
                return Ok(s.addr.clone().unwrap_or_else(|| t.clone()));
            }
            let now = tally.now();
            let mut name = s.endpoint.to_string();
            if let Some(l) = locate {
                // A Sentinel's primary (or replica): asked again, the address it had kept when
                // none answers.
                s.located = l.moves.load(Ordering::Relaxed);
                let replica = cluster.and_then(|c| c.nodes.get(node)).is_some_and(|n| !n.primary);
                match (replica, &l.replicas) {
                    (true, Some(list)) => {
                        if let Some(e) = replica_of(cluster, node, (list)())? {
                            s.endpoint = e;
                        }
                        name = format!("{} replica", l.name);
                    }
                    _ => {
                        if let Some(e) = (l.find)() {
                            s.endpoint = e;
                        }
                        name.clone_from(&l.name);
                    }
                }
            }
            let new = resolve(&s.endpoint, mptcp)
                .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e.to_string()))?;
            let old = s.addr.clone().unwrap_or_else(|| t.clone());
            if let (Some(from), Some(to)) = (old.addr(), new.addr()) {
                if from == to {
                    s.addr = Some(new.clone());
                    return Ok(new);
                }
                let r = respbench_core::stats::Readdress {
                    at: now,
                    name,
                    from: from.to_string(),
                    to: to.to_string(),
                    connections: 1,
                };
                tally.stats.readdress(r);
            }
            s.addr = Some(new.clone());
            return Ok(new);
        }
        let endpoint = self
            .client
            .endpoint(node)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the node has not appeared"))?;
        self.sockets[node].endpoint = endpoint;
        resolve(&self.sockets[node].endpoint, mptcp)
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e.to_string()))
    }

    /// `--sentinel`: what node `node`'s socket went to moved (`+switch-master`): a socket that is
    /// up fails now (its requests in flight are lost) and, with `--reconnect`, comes back where
    /// the Sentinel says; whether it did (drain it then).
    pub fn move_away(&mut self, node: usize, tally: &mut Tally) -> bool {
        let s = &self.sockets[node];
        let locate = tally.run.locate.as_ref();
        let moves = locate.map_or(0, |l| l.moves.load(Ordering::Relaxed));
        // A socket that came back, asking the Sentinel, since this move (the old primary
        // killed it or refused first) is at the new primary already.
        if !s.up || (s.located > 0 && s.located >= moves) {
            return false;
        }
        let heard = locate.is_some_and(|l| l.switches.load(Ordering::Relaxed) == moves);
        let e = io::Error::other(if heard {
            "the primary moved (+switch-master)"
        } else {
            "the primary moved (found by a connection that asked the Sentinel again; no +switch-master)"
        });
        self.client.handle_io_error(node, IoFailure::new(IoOp::Read, &s.endpoint, &e), tally.now());
        true
    }

    /// A connect of node `node` is about to start (its setup time counts from here).
    pub fn connecting(&mut self, node: usize, tally: &Tally) {
        let now = tally.now();
        let s = &mut self.sockets[node];
        s.phases.started = now;
        s.reset = false;
        s.connect_by = tally.run.plan.conn.connect_timeout.map_or(Time::MAX, |t| now + t);
    }

    /// `--connect-timeout`: when node `node`'s connect under way fails if it has not completed
    /// (a backend that awaits the connect races it against this time).
    pub fn connect_by(&self, node: usize) -> Option<Time> {
        Some(self.sockets[node].connect_by).filter(|&t| t != Time::MAX)
    }

    /// Node `node`'s socket connected: the byte stream is up, or the TLS handshake begins.
    pub fn connected(&mut self, node: usize, tally: &mut Tally) {
        let now = tally.now();
        let s = &mut self.sockets[node];
        s.phases.socket = now;
        s.connect_by = Time::MAX;
        s.layer = Layer::Plain;
        #[cfg(feature = "tls")]
        if let Some(t) = &tally.tls {
            match tls::Session::new(t, &s.endpoint) {
                Ok(session) => s.layer = Layer::Tls(session),
                Err(e) => self.client.handle_io_error(node, IoFailure::new(IoOp::Tls, &s.endpoint, &e), now),
            }
            return;
        }
        self.byte_stream_up(node, now, tally);
    }

    fn byte_stream_up(&mut self, node: usize, now: Time, tally: &mut Tally) {
        let s = &mut self.sockets[node];
        s.up = true;
        s.phases.up = now;
        self.client.handle_connected(node, now, &mut tally.stats);
    }

    /// Opening node `node`'s socket failed (resolving, connecting, registering it).
    pub fn connect_failed(&mut self, node: usize, e: &io::Error, tally: &Tally) {
        let s = &mut self.sockets[node];
        s.up = false;
        s.connect_by = Time::MAX;
        self.client.handle_io_error(node, IoFailure::new(IoOp::Connect, &s.endpoint, e), tally.now());
    }

    /// A send that node `node`'s socket had taken failed later: a completion-based backend
    /// accepts bytes into its own buffer and learns the outcome of the send when it completes.
    pub fn write_failed(&mut self, node: usize, e: &io::Error, tally: &Tally) {
        let s = &self.sockets[node];
        self.client.handle_io_error(node, IoFailure::new(IoOp::Write, &s.endpoint, e), tally.now());
    }

    /// Whether node `node`'s socket must be closed with a reset (`SO_LINGER` 0) rather than a
    /// FIN: requests it carried were counted as abandoned or lost, and a normal close would
    /// leave the kernel retransmitting them to a server that may yet run them.
    pub fn must_reset(&self, node: usize) -> bool {
        self.sockets[node].reset
    }

    /// Node `node`'s socket is gone (closed for a reconnect).
    pub fn disconnected(&mut self, node: usize) {
        let s = &mut self.sockets[node];
        s.up = false;
        s.connect_by = Time::MAX;
        s.layer = Layer::Plain;
    }

    /// Reads what node `node`'s socket has: until it would block, until a short read showed
    /// it empty (the next byte raises a new edge or readiness), or, after a `hangup` (the peer's
    /// FIN or a socket error came with the event), to the end of the stream, since no edge
    /// follows it.
    ///
    /// A bulk body that nothing reads ([`Client::skippable`], [`DISCARD_FROM`] bytes or more) is
    /// dropped with [`Source::discard`] where the socket can, not read; never over TLS, whose
    /// records must be decrypted.
    pub fn read(
        &mut self,
        node: usize,
        sock: &mut impl Source,
        buf: &mut [u8],
        hangup: bool,
        tally: &mut Tally,
    ) {
        loop {
            match self.discard(node, sock, hangup, tally) {
                Discarded::Nothing => {}
                Discarded::More => continue,
                Discarded::Empty => return,
            }
            let len = self.read_size(node, buf.len());
            let s = &mut self.sockets[node];
            let buf = &mut buf[..len];
            let result = s.layer.read(sock, buf, hangup);
            if !s.up && !s.layer.is_handshaking() && !self.client.is_closed(node) {
                self.byte_stream_up(node, tally.now(), tally);
            }
            let s = &self.sockets[node];
            match result {
                Ok(0) => {
                    if s.up {
                        self.client.handle_closed(node, tally.now());
                    } else {
                        let e =
                            io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection");
                        self.client.handle_io_error(
                            node,
                            IoFailure::new(IoOp::Tls, &s.endpoint, &e),
                            tally.now(),
                        );
                    }
                    return;
                }
                Ok(n) => {
                    let empty = n < buf.len() && !hangup && s.layer.short_read_empties();
                    let now = tally.now();
                    self.client.handle_input(node, &buf[..n], now, &mut tally.stats);
                    if n == buf.len() && self.client.skippable(node) < DISCARD_FROM {
                        // A full read that ended in no large body: small replies again.
                        self.sockets[node].discarding = false;
                    }
                    if empty || self.client.is_closed(node) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // The TLS handshake's, while the byte stream is not up yet.
                    let op = if s.up { IoOp::Read } else { IoOp::Tls };
                    self.client.handle_io_error(node, IoFailure::new(op, &s.endpoint, &e), tally.now());
                    return;
                }
            }
        }
    }

    /// The bytes of one receive completion of node `node` (a completion-based backend's:
    /// io_uring), handed to the client as they are, without a copy; then, as [`Link::read`]
    /// does, a large body that follows is dropped with `sock`'s [`Source::discard`] (a socket
    /// whose receives are all in the ring cannot: its default). Over TLS, [`Link::read`] of
    /// the bytes.
    pub fn received(
        &mut self,
        node: usize,
        bytes: &[u8],
        sock: &mut impl Source,
        buf: &mut [u8],
        tally: &mut Tally,
    ) {
        let s = &self.sockets[node];
        if !s.up || !matches!(s.layer, Layer::Plain) {
            return self.read(node, &mut Delivered::Bytes(bytes), buf, false, tally);
        }
        self.client.handle_input(node, bytes, tally.now(), &mut tally.stats);
        while let Discarded::More = self.discard(node, sock, false, tally) {}
    }

    /// How much of a `max`-byte buffer node `node`'s next read should ask for: all of it, but
    /// [`DISCARDING_READ`] while its replies end in discards (a reply's header and the start of
    /// its body, not most of a body that is then dropped). A completion-based backend asks it
    /// when it queues a receive into a buffer of its own.
    pub fn read_size(&self, node: usize, max: usize) -> usize {
        if self.sockets[node].discarding {
            DISCARDING_READ.min(max)
        } else {
            max
        }
    }

    /// How many of node `node`'s next bytes the backend may drop unread: a bulk body that
    /// nothing reads ([`Client::skippable`]), when it is [`DISCARD_FROM`] bytes or more and the
    /// byte stream is plain (TLS records must be decrypted); else 0. A completion-based backend
    /// asks it before it queues the socket's next receive (io_uring: a receive of `MSG_TRUNC`
    /// and no buffer), and reports what it dropped with [`Link::discarded`].
    pub fn discardable(&self, node: usize) -> usize {
        let s = &self.sockets[node];
        if !s.up || !matches!(s.layer, Layer::Plain) {
            return 0;
        }
        let want = self.client.skippable(node);
        if want < DISCARD_FROM {
            return 0;
        }
        usize::try_from(want).unwrap_or(usize::MAX)
    }

    /// `n` bytes of node `node`'s stream, at most [`Link::discardable`], were dropped unread.
    pub fn discarded(&mut self, node: usize, n: usize, tally: &mut Tally) {
        self.sockets[node].discarding = true;
        let now = tally.now();
        self.client.handle_skipped(node, n as u64, now, &mut tally.stats);
    }

    /// Drops what node `node`'s client says nothing reads, if it is worth a system call and
    /// `sock` can ([`Source::discard`]).
    fn discard(&mut self, node: usize, sock: &mut impl Source, hangup: bool, tally: &mut Tally) -> Discarded {
        let want = self.discardable(node);
        if want == 0 {
            return Discarded::Nothing;
        }
        match sock.discard(want) {
            // Unsupported, or the end of the stream (which the read then finds).
            Ok(None | Some(0)) => Discarded::Nothing,
            Ok(Some(n)) => {
                self.discarded(node, n, tally);
                if n < want && !hangup {
                    Discarded::Empty
                } else {
                    Discarded::More
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Discarded::Empty,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Discarded::More,
            Err(e) => {
                let s = &self.sockets[node];
                self.client.handle_io_error(node, IoFailure::new(IoOp::Read, &s.endpoint, &e), tally.now());
                Discarded::Empty
            }
        }
    }

    /// The drain rule on node `node`: writes what the layer and the client have to `sock`
    /// until the socket is full (nothing while the socket is not connected), then acts on the
    /// connection's events and says what the backend does next. Drain the nodes
    /// [`Link::poll_wake`] names after it. A large value goes with its request's header and
    /// CRLF in one [`Write::write_vectored`], which must write as a socket's `writev` does
    /// (short only when the socket is full).
    pub fn drain<S: Write>(&mut self, node: usize, sock: Option<&mut S>, tally: &mut Tally) -> Next {
        let mut sock = sock.map(BytesOnly);
        self.drain_shared(node, sock.as_mut(), tally)
    }

    /// [`Link::drain`] over a socket that takes a large value's bytes by reference
    /// ([`WriteShared`]): what the core spliced in from the test's shared payload or dataset
    /// goes to [`WriteShared::write_shared`] as an owned handle, not as a slice to copy (over
    /// TLS, as bytes: its records are encrypted copies anyway).
    pub fn drain_shared<S: WriteShared>(
        &mut self,
        node: usize,
        sock: Option<&mut S>,
        tally: &mut Tally,
    ) -> Next {
        let mut write_blocked = false;
        if let Some(sock) = sock {
            write_blocked = self.write(node, sock, tally);
        }
        while let Some(ev) = self.client.poll_event(node) {
            match ev {
                Event::Ready => {
                    let s = &mut self.sockets[node];
                    if !s.live {
                        s.live = true;
                        tally.run.progress.live.fetch_add(1, Ordering::Relaxed);
                    }
                    self.record_setup(node, tally);
                }
                Event::Reconnect => {
                    self.sockets[node].up = false;
                    return Next::Reconnect;
                }
                Event::Finished => {
                    // After the stop, the test lasted to the stop at least (its last replies,
                    // if later, are its end); otherwise the budget ended it, at its last reply.
                    let now = tally.now();
                    if let Some(stop) = tally.run.plan.stop.at().filter(|&t| t <= now) {
                        tally.stats.end_at(stop);
                    }
                    self.client.settle(node, false, now, &mut tally.stats);
                    return self.ended(node, tally);
                }
                Event::Abandoned { in_flight } => {
                    tally.stats.abandoned += in_flight as u64;
                    self.sockets[node].reset = in_flight > 0;
                    // The end of the grace.
                    let now = tally.now();
                    tally.stats.end_at(now);
                    self.client.settle(node, true, now, &mut tally.stats);
                    return self.ended(node, tally);
                }
                Event::Failed { error, lost } => {
                    // A failure ends the test no earlier than it happened: the wait for a reply
                    // that never came is part of it.
                    let now = tally.now();
                    tally.stats.end_at(now);
                    self.sockets[node].reset = lost > 0 || self.client.in_flight(node) > 0;
                    self.client.settle(node, false, now, &mut tally.stats);
                    Outcome::add_failure(&mut tally.failures, error, 1);
                    tally.run.progress.failed.fetch_add(1, Ordering::Relaxed);
                    if lost > 0 {
                        let now = tally.now();
                        tally.stats.record_drop(false, lost as u64, now);
                    }
                    return self.ended(node, tally);
                }
                Event::Down { error, lost, resent } => {
                    let now = tally.now();
                    let s = &mut self.sockets[node];
                    let first = s.phases.down == Time::MAX;
                    s.reset = lost + resent > 0;
                    tally.stats.record_drop(first, lost as u64, now);
                    tally.stats.resent += resent as u64;
                    Outcome::add_failure(&mut tally.drops, error, 1);
                    if first {
                        s.phases.down = now;
                    }
                    s.up = false;
                    self.leave_live(node, tally);
                    return Next::Down;
                }
            }
        }
        Next::Wait { write_blocked }
    }

    /// Node `node`'s connection is ready for requests: its setup phases go into the stats.
    fn record_setup(&mut self, node: usize, tally: &mut Tally) {
        let now = self.client.ready_at(node).unwrap_or_else(|| tally.now());
        let s = &mut self.sockets[node];
        if s.phases.down != Time::MAX {
            // Back after --reconnect: the time it was down.
            tally.stats.downtime_micros += now.nanos_since(s.phases.down) / 1_000;
            s.phases.down = Time::MAX;
        }
        let p = s.phases;
        let tls = (!matches!(s.layer, Layer::Plain)).then(|| p.up.nanos_since(p.socket));
        tally.stats.setup.record(
            p.socket.nanos_since(p.started),
            tls,
            now.nanos_since(p.up),
            now.nanos_since(p.started),
        );
    }

    /// Writes until the layer and the client have nothing for node `node` or the socket is
    /// full; `true` when full.
    fn write(&mut self, node: usize, sock: &mut impl WriteShared, tally: &mut Tally) -> bool {
        let s = &mut self.sockets[node];
        match s.layer.flush(sock) {
            Ok(true) => return true,
            Ok(false) => {}
            Err(e) => {
                self.client.handle_io_error(node, IoFailure::new(IoOp::Write, &s.endpoint, &e), tally.now());
                return false;
            }
        }
        if !s.up {
            return false;
        }
        loop {
            // The clock is read before the write: on loopback the server can answer while the
            // send syscall is still returning, and a reading after it would leave that part of
            // the round trip out of the latency.
            let now = tally.now();
            let (len, result) = if sock.gathers() && matches!(self.sockets[node].layer, Layer::Plain) {
                // A readiness socket: the next few chunks in one write (one chunk unless large
                // values are spliced in).
                let mut parts: [&[u8]; GATHER] = [&[]; GATHER];
                let k = self.client.poll_transmit_chunks(node, now, &mut parts);
                match k {
                    0 => return false,
                    1 => (parts[0].len(), sock.write(parts[0])),
                    _ => {
                        let len = parts[..k].iter().fold(0usize, |n, p| n.saturating_add(p.len()));
                        let slices = parts.map(IoSlice::new);
                        (len, sock.write_vectored(&slices[..k]))
                    }
                }
            } else {
                let Some(chunk) = self.client.poll_transmit_chunk(node, now) else { return false };
                let len = chunk.len();
                (len, self.sockets[node].layer.write_chunk(sock, chunk))
            };
            let s = &mut self.sockets[node];
            match result {
                Ok(n) => {
                    self.client.advance_transmit(node, n, now, &mut tally.stats);
                    if n < len {
                        return true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.client.handle_io_error(
                        node,
                        IoFailure::new(IoOp::Write, &s.endpoint, &e),
                        tally.now(),
                    );
                    return false;
                }
            }
        }
    }

    fn ended(&mut self, node: usize, tally: &mut Tally) -> Next {
        let s = &mut self.sockets[node];
        if s.phases.down != Time::MAX {
            // Down to the end (--reconnect): an outage that never closed.
            tally.stats.still_down += 1;
            tally.stats.downtime_micros += tally.now().nanos_since(s.phases.down) / 1_000;
            s.phases.down = Time::MAX;
        }
        self.leave_live(node, tally);
        self.sockets[node].up = false;
        Next::Ended
    }

    fn leave_live(&mut self, node: usize, tally: &mut Tally) {
        let s = &mut self.sockets[node];
        if s.live {
            s.live = false;
            tally.run.progress.live.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// When to call [`Link::on_timeout`] for node `node` if nothing else happens: the client's
    /// `poll_timeout` (open-loop arrivals, `--timeout` deadlines, the test's stop), or the
    /// `--connect-timeout` of a connect under way if earlier.
    pub fn timeout(&self, node: usize) -> Option<Time> {
        let t = self.client.poll_timeout(node);
        match self.connect_by(node) {
            Some(by) => Some(t.map_or(by, |t| t.min(by))),
            None => t,
        }
    }

    /// [`Link::timeout`] unless it is the test's stop or abandon time, which a backend may
    /// signal to every connection at once (with [`Watch`]) rather than give each wait a timer of
    /// its own: what a task waits for with a timer of its own (open-loop arrivals, `--timeout`).
    pub fn timer(&self, node: usize, plan: &Plan) -> Option<Time> {
        self.timeout(node).filter(|&t| Some(t) != plan.stop.at() && Some(t) != plan.stop.abandon_at())
    }

    /// The time from [`Link::timeout`] of node `node` has come; drain next.
    pub fn on_timeout(&mut self, node: usize, tally: &mut Tally) {
        let now = tally.now();
        if self.connect_by(node).is_some_and(|t| t <= now) {
            let e = connect_timed_out(tally.run.plan.conn.connect_timeout.unwrap_or_default());
            // Its failure is drained first: the core's own times are asked again after it.
            return self.connect_failed(node, &e, tally);
        }
        self.client.handle_timeout(node, now);
    }
}
