//! One socket's protocol as a state machine: handshake, pipelined requests, reply matching.
//!
//! A [`Connection`] owns no socket and draws no requests: its [`crate::Client`] queues them and
//! records the replies. The backend moves bytes and time in and out through the client, following
//! the drain rule in the crate docs.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use crate::handshake::Handshake;
pub use crate::plan::{Backoff, Budget, ConnConfig, Mix, OpenLoop, Plan, Stop, Workload, SETUP_TIMEOUT};
use crate::resp::{Kind, ProtocolError, Reply, ReplyParser};
use crate::shared::Endpoint;
use crate::stats::Stats;
use crate::wire::{Chunk, Wire};
use crate::Time;

/// Past this many unwritten bytes a connection encodes no more requests until the socket takes
/// some: deep pipelines of large values (`-P 1000 -d 100000`) stay bounded in memory.
pub const OUT_SOFT_CAP: usize = 64 * 1024;

/// What makes a connection give up. Error replies (`-ERR …`) are not here: they are counted
/// outcomes in [`Stats`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnError {
    /// The server sent bytes that are not RESP.
    Protocol(ProtocolError),
    /// A handshake command was refused; `message` is the server's error.
    Handshake {
        /// The command: `AUTH`, `SELECT`, `HELLO`, `CLIENT TRACKING`.
        command: &'static str,
        /// The server's error message.
        message: String,
    },
    /// A handshake command was answered with a reply of the wrong shape: `HELLO 3` with
    /// anything but a map (RESP3) or an array of field/value pairs, such as `+OK` from a
    /// server that does not speak RESP3.
    HandshakeReply {
        /// The command: `HELLO`.
        command: &'static str,
        /// What came back ([`crate::resp::Kind::describe`]).
        got: &'static str,
    },
    /// `--sentinel`: the handshake's `ROLE` named another role than the connection's (a
    /// replica where the primary was looked for, a primary serving replicas where a replica
    /// was): an address the Sentinel gave before a move, or none asked for. The connection comes back where the Sentinel says now (`--reconnect`).
    WrongRole {
        /// The role the connection needs: `master` or `slave`.
        want: &'static str,
        /// The role the server named (`?` when its reply named none).
        got: String,
    },
    /// A reply arrived when no request was waiting for one.
    UnexpectedReply {
        /// The stream offset where the reply ended.
        offset: u64,
    },
    /// The server closed the connection with requests in flight or before the test ended.
    Closed {
        /// Requests sent and not answered.
        in_flight: usize,
    },
    /// A socket error the backend reported.
    Io(IoFailure),
    /// A request or the handshake got no reply within [`ConnConfig::request_timeout`].
    Timeout {
        /// The timeout that expired.
        after: Duration,
        /// Whether the handshake (not a request) was waiting.
        handshake: bool,
    },
    /// The server sent an error nobody asked for, or its only reply on the socket was an error
    /// and then it closed or reset the socket: what Redis does at `maxclients` ("ERR max number
    /// of clients reached").
    Refused {
        /// The server's error message.
        message: String,
    },
    /// The server's only reply on the socket was an error to a request, and then it closed
    /// the socket: it rejected that request (Redis closes after `ERR Protocol error: invalid
    /// bulk length`), not the connection.
    Rejected {
        /// The server's error message.
        message: String,
    },
}

/// `1s`, `1.5s`, `500ms`, `250us`: a timeout as a user would write it.
pub fn format_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_secs() > 0 {
        format!("{}s", d.as_secs_f64())
    } else if d.subsec_millis() * 1_000_000 == d.subsec_nanos() {
        format!("{}ms", d.subsec_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::Protocol(e) => e.fmt(f),
            ConnError::Handshake { command, message } => write!(f, "{command} failed: {message}"),
            ConnError::HandshakeReply { command, got } => write!(
                f,
                "{command} was answered with {got}, not a map (RESP3) or an array of field/value pairs: \
                 no switch to RESP3 (-3)"
            ),
            ConnError::WrongRole { want, got } => {
                write!(f, "the server's ROLE is {got}, not {want}: the Sentinel's address was out of date")
            }
            ConnError::UnexpectedReply { offset } => {
                write!(f, "protocol error at byte {offset}: a reply arrived with no request waiting for it")
            }
            ConnError::Closed { in_flight } => {
                write!(f, "server closed the connection with {in_flight} requests unanswered")
            }
            ConnError::Io(e) => e.fmt(f),
            ConnError::Timeout { after, handshake: false } => {
                write!(f, "request timed out after {} (--timeout)", format_duration(*after))
            }
            ConnError::Timeout { after, handshake: true } => write!(
                f,
                "connection handshake timed out after {} (--timeout; {} without it)",
                format_duration(*after),
                format_duration(SETUP_TIMEOUT)
            ),
            ConnError::Refused { message } => write!(f, "the server refused the connection: {message}"),
            ConnError::Rejected { message } => {
                write!(f, "the server rejected a request and closed the connection: {message}")
            }
        }
    }
}

impl std::error::Error for ConnError {}

/// Which socket operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoOp {
    /// Opening the connection (resolving, connecting, registering the socket).
    Connect,
    /// Reading a reply.
    Read,
    /// Writing a request.
    Write,
    /// The TLS handshake, or a TLS record the server sent.
    Tls,
}

/// A socket error, typed for callers that act on it (the kind, the OS code) and worded for people:
/// a failed connect in redis-benchmark's words (`Could not connect to Redis at 127.0.0.1:6379:
/// Connection refused`, which scripts look for), else `read from 127.0.0.1:6379: Connection reset
/// by peer`, with what to do when file descriptors ran out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoFailure {
    /// What was being done.
    pub op: IoOp,
    /// The error's kind.
    pub kind: std::io::ErrorKind,
    /// The OS error code, when there is one.
    pub os_code: Option<i32>,
    /// The whole message, as printed.
    pub message: String,
}

impl IoFailure {
    /// The failure of `op` on the connection to `endpoint`.
    pub fn new(op: IoOp, endpoint: &Endpoint, e: &std::io::Error) -> IoFailure {
        let message = match op {
            IoOp::Connect => {
                let reason = match e.kind() {
                    std::io::ErrorKind::ConnectionRefused => "Connection refused".to_string(),
                    std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
                    _ => io_reason(e),
                };
                format!("Could not connect to Redis at {endpoint}: {reason}")
            }
            IoOp::Read => format!("read from {endpoint}: {}", io_reason(e)),
            IoOp::Write => format!("write to {endpoint}: {}", io_reason(e)),
            IoOp::Tls => format!("TLS with {endpoint}: {}", io_reason(e)),
        };
        IoFailure { op, kind: e.kind(), os_code: e.raw_os_error(), message }
    }
}

impl fmt::Display for IoFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The OS' words without the `(os error N)` suffix: "Network is unreachable (os error 101)" ->
/// "Network is unreachable".
pub fn os_words(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

/// [`os_words`], and what to do when file descriptors ran out.
fn io_reason(e: &std::io::Error) -> String {
    // EMFILE is 24 and ENFILE 23 on Linux, macOS and the BSDs.
    let hint = match e.raw_os_error() {
        Some(24) => " (the open-file limit is too low for this many connections: raise it with ulimit -n)",
        Some(23) => " (the system's open-file table is full)",
        _ => "",
    };
    format!("{}{hint}", os_words(e))
}

/// What a connection asks of its backend, through [`crate::Client::poll_event`].
///
/// Not `#[non_exhaustive]`: the driver matches every event without a catch-all arm, so a new
/// one fails its build instead of being dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Event {
    /// Every handshake reply arrived and none was an error.
    Ready,
    /// `-k 0`: close this socket, open a new one, then call [`crate::Client::handle_connected`].
    Reconnect,
    /// The budget is spent (or the test stopped) and nothing is in flight: close the socket.
    Finished,
    /// The test stopped ([`Stop`]) and its grace passed with requests (or the handshake) still
    /// unanswered: close the socket; those requests are not counted. Nothing more will happen.
    Abandoned {
        /// Requests sent and not answered.
        in_flight: usize,
    },
    /// The connection failed; close the socket. Nothing more will happen on it. Over several
    /// nodes, the requests it had in flight are lost (`lost`; the client goes on with its other
    /// nodes); against one server the failure itself is what is counted, and `lost` is 0.
    Failed {
        /// Why.
        error: ConnError,
        /// Requests in flight that went with it, to be counted as lost.
        lost: usize,
    },
    /// `--reconnect`: the connection failed and comes back: close the socket and wait for
    /// [`crate::Client::poll_timeout`]; [`crate::Client::handle_timeout`] then asks for a new
    /// socket ([`Event::Reconnect`]). The requests it had in flight are lost.
    Down {
        /// Why.
        error: ConnError,
        /// Requests sent and not answered, now lost.
        lost: usize,
        /// Requests sent and not answered that go again once it is back
        /// ([`crate::Plan::resend`]), not lost (those not yet written go then too, uncounted).
        resent: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for `handle_connected`.
    Disconnected,
    Open,
    /// Waiting for the backend to act on `Reconnect`.
    Reconnecting,
    /// `--reconnect`: failed, waiting until `down_until` to ask for a new socket.
    Down,
    Finished,
    Failed,
}

/// No request of the client's router: the request was encoded straight into the connection.
pub(crate) const DIRECT: u32 = u32::MAX;
/// An `ASKING` the connection sent before a redirected request.
pub(crate) const ASKING_REQ: u32 = u32::MAX - 1;
/// A cache-aside `GET` ([`crate::cache`]), encoded straight into the connection as a
/// [`DIRECT`] one; its tag holds its key.
pub(crate) const CACHE_GET: u32 = u32::MAX - 2;
/// The `SET` after a cache-aside `GET` that missed, likewise; its tag holds its key and the
/// `GET`'s start.
pub(crate) const CACHE_SET: u32 = u32::MAX - 3;

/// A request written into the output buffer and not answered yet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    /// Stream offset just past its last byte.
    end: u64,
    /// When the write that took its last byte began; `Time::MAX` until then.
    sent: Time,
    /// Its intended send time (open loop); `Time::MAX` in closed loop.
    pub(crate) intended: Time,
    /// Which command of the mix it is (0 without a mix).
    pub(crate) part: u16,
    /// When it was drawn: its `--timeout` deadline counts from here.
    queued: Time,
    /// The client's request it carries ([`DIRECT`] when none, [`ASKING_REQ`] for an `ASKING`).
    pub(crate) req: u32,
    /// Sent before (a redirected request): its lateness was recorded at its first send.
    pub(crate) resent: bool,
    /// A read of a key the mix's writer had written ([`crate::Mix::written`]): a nil reply
    /// to it is counted in [`crate::Stats::expired`].
    pub(crate) written: bool,
}

impl Pending {
    /// A request to be encoded at `now`.
    pub(crate) fn new(intended: Time, part: u16, queued: Time, req: u32) -> Pending {
        Pending { end: 0, sent: Time::MAX, intended, part, queued, req, resent: false, written: false }
    }
}

/// What a connection hands each answered request to ([`Connection::handle_input`]): any
/// `FnMut(Answered, &mut Stats)`, or a type whose method is inlined into the reply loop (a
/// closure's call is not, and one call per reply cost more than the plain bookkeeping itself:
/// issue #55).
pub(crate) trait OnAnswer {
    /// Request `a` was answered.
    fn answered(&mut self, a: Answered<'_>, stats: &mut Stats);
}

impl<F: FnMut(Answered<'_>, &mut Stats)> OnAnswer for F {
    #[inline]
    fn answered(&mut self, a: Answered<'_>, stats: &mut Stats) {
        self(a, stats)
    }
}

/// A request answered: what the client records or routes again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Answered<'a> {
    /// The request as it was queued.
    pub(crate) pending: Pending,
    /// When the write that carried it began (or the reply's time, for a reply that came first).
    pub(crate) sent: Time,
    /// The error message, for an error reply.
    pub(crate) error: Option<&'a [u8]>,
    /// A nil reply.
    pub(crate) nil: bool,
    /// When the reply was parsed.
    pub(crate) now: Time,
    /// `--verify`'s and `--follow-cursor`'s part: the reply's bytes and the request's tag;
    /// `None` without either (a pointer, so that runs without them build no more than they use).
    pub(crate) verified: Option<&'a Verified<'a>>,
}

impl Answered<'_> {
    /// The request's tag ([`Connection::push_tagged`]); the default when none was kept.
    pub(crate) fn tag(&self) -> crate::verify::Tag {
        self.verified.map(|v| v.tag).unwrap_or_default()
    }

    /// The reply's bytes when they were kept; empty otherwise.
    pub(crate) fn body(&self) -> &[u8] {
        self.verified.map_or(&[][..], |v| v.body)
    }
}

/// What `--verify` checks of a reply: its bytes (at most
/// [`crate::verify::Verify::capture_limit`]) and the key and version of its request
/// ([`Connection::push_tagged`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Verified<'a> {
    pub(crate) body: &'a [u8],
    pub(crate) tag: crate::verify::Tag,
}

/// Per part of `w` (its template without a mix): whether the command reads keys or fields one
/// element each (`MGET`, `HMGET`).
fn elementwise(w: &crate::plan::Workload) -> Vec<bool> {
    let of = |t: &crate::template::Template| {
        let b = t.as_bytes();
        crate::cluster::resp_arg(b, 0).is_some_and(|r| {
            b[r.clone()].eq_ignore_ascii_case(b"MGET") || b[r].eq_ignore_ascii_case(b"HMGET")
        })
    };
    match &w.mix {
        Some(m) => m.templates.iter().map(of).collect(),
        None => vec![of(&w.template)],
    }
}

/// One socket's protocol: the handshake, the output buffer, the requests in flight and the
/// replies matched to them. A [`crate::Client`] owns one per node and decides what goes in;
/// the connection owns no socket and draws no requests.
pub struct Connection {
    plan: Arc<Plan>,
    state: State,
    parser: ReplyParser,
    /// What this socket sends before its first request.
    handshake: Handshake,
    /// Encoded bytes not written yet (large values by reference).
    out: Wire,
    /// Bytes appended to / accepted from `out` since the socket opened.
    encoded: u64,
    written: u64,
    in_flight: VecDeque<Pending>,
    /// `in_flight[..sent]` have been accepted by the kernel.
    sent: usize,
    /// Handshake replies still expected.
    handshake_left: usize,
    /// When this socket connected: the handshake's `--timeout` deadline counts from here.
    connected_at: Time,
    /// When this socket's handshake completed ([`Event::Ready`]); `Time::MAX` before.
    ready_at: Time,
    /// Replies on this socket so far, and whether every one of them was an error.
    replies: u64,
    only_errors: bool,
    events: VecDeque<Event>,
    /// The test's stop has come (seen by an input at or after it): `poll_timeout` now waits
    /// for the abandon time, not for the stop.
    stop_seen: bool,
    /// `--reconnect`: when a connection that is down asks for a new socket, and the wait that
    /// led there (zero: none yet since the last handshake).
    down_until: Time,
    backoff: Duration,
    /// `--reconnect-attempts`: the attempts made since the last handshake went through.
    attempts: u32,
    /// The latest time an input brought (for the inputs that bring none).
    last_now: Time,
    /// Count the requests in flight as lost when the connection fails for good (a client over
    /// several nodes, which goes on without it).
    count_lost: bool,
    /// The socket failed: the client must take its requests back ([`Connection::orphans`],
    /// [`Connection::dropped`]).
    pub(crate) went_down: bool,
    /// The router's requests that were in flight when it failed, for the client to take back.
    pub(crate) orphans: Vec<u32>,
    /// How many requests were in flight when it failed (those to be sent again aside).
    pub(crate) dropped: usize,
    /// [`Plan::resend`](crate::Plan::resend): the router's requests in flight when it went down
    /// that are sent again, oldest first, each with when it was sent (`Time::MAX`: not yet).
    pub(crate) resend: Vec<(u32, Time)>,
    /// `--verify`: the bytes of the reply being parsed that earlier inputs brought (at most
    /// `capture_limit`); `None` without `--verify`, which keeps no reply bytes.
    capture: Option<Vec<u8>>,
    capture_limit: usize,
    /// `--verify`: the tags of the requests in flight, in their order (kept beside them, not in
    /// [`Pending`], so that runs without `--verify` copy 16 bytes less per request); empty
    /// without.
    tags: VecDeque<crate::verify::Tag>,
    /// `--verify`, `--cache-aside`: whether `tags` is kept.
    tagged: bool,
    /// Per command of the workload (its part): whether its array replies are read key by key
    /// (`MGET`, `HMGET`: an element per key or field, nil when missing); any other array reply
    /// (`HGETALL`, `LRANGE`, …) is one read, a miss when empty.
    elementwise: Vec<bool>,
    /// Whether replies' bytes are kept (`--verify`, `--follow-cursor`): [`Answered::verified`]
    /// carries them.
    captured: bool,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("state", &self.state)
            .field("in_flight", &self.in_flight.len())
            .field("unwritten", &self.out.unwritten())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection following `plan` that opens each socket with `handshake`; `count_lost`
    /// when its client goes on without it if it fails (over several nodes).
    pub(crate) fn new(plan: Arc<Plan>, handshake: Handshake, count_lost: bool) -> Connection {
        let cap = plan.conn.pipeline as usize;
        // `--follow-cursor` reads each reply's cursor from its first bytes.
        let cursor = plan.workload.mix.as_ref().and_then(crate::Mix::cursor_arg).is_some();
        let capture_limit = plan.verify.as_ref().map_or(0, |v| v.capture_limit());
        let capture_limit =
            if cursor { capture_limit.max(crate::cursor::REPLY_PREFIX) } else { capture_limit };
        // `--sentinel`: the handshake's `ROLE` reply is read from its first bytes.
        let capture_limit = match handshake.role {
            Some(_) => capture_limit.max(crate::handshake::ROLE_PREFIX),
            None => capture_limit,
        };
        Connection {
            capture: (plan.verify.is_some() || cursor).then(Vec::new),
            capture_limit,
            tags: VecDeque::new(),
            tagged: plan.verify.is_some() || plan.cache_aside.is_some(),
            captured: plan.verify.is_some() || cursor,
            elementwise: elementwise(&plan.workload),
            plan,
            state: State::Disconnected,
            parser: ReplyParser::new(),
            handshake,
            out: Wire::default(),
            encoded: 0,
            written: 0,
            in_flight: VecDeque::with_capacity(cap.min(4096)),
            sent: 0,
            handshake_left: 0,
            connected_at: Time::ZERO,
            ready_at: Time::MAX,
            replies: 0,
            only_errors: true,
            events: VecDeque::new(),
            stop_seen: false,
            down_until: Time::MAX,
            backoff: Duration::ZERO,
            attempts: 0,
            last_now: Time::ZERO,
            count_lost,
            went_down: false,
            orphans: Vec::new(),
            dropped: 0,
            resend: Vec::new(),
        }
    }

    /// The handshake went through at `now`.
    fn ready(&mut self, now: Time) {
        self.ready_at = now;
        self.backoff = Duration::ZERO;
        self.attempts = 0;
        self.events.push_back(Event::Ready);
    }

    // ---- getters ----

    /// Requests sent or being sent and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// When the current socket's handshake completed (the time of its [`Event::Ready`]).
    pub fn ready_at(&self) -> Option<Time> {
        (self.ready_at != Time::MAX).then_some(self.ready_at)
    }

    /// The requests still unanswered, by when each started to wait: its intended time in an
    /// open loop, else when it was sent (or queued, if never sent). For the requests a stop
    /// abandoned: their latency so far.
    pub(crate) fn unanswered(&self) -> impl Iterator<Item = Time> + '_ {
        self.in_flight.iter().filter(|p| p.req != ASKING_REQ).map(|p| {
            let since = if p.sent == Time::MAX { p.queued } else { p.sent };
            if p.intended == Time::MAX {
                since
            } else {
                p.intended.min(since)
            }
        })
    }

    /// Against one server, the requests a failed connection had in flight (its
    /// [`Event::Failed`] counts the failure, not them); 0 otherwise.
    pub(crate) fn lost_uncounted(&self) -> usize {
        if self.state == State::Failed && !self.count_lost {
            self.unanswered().count()
        } else {
            0
        }
    }

    /// Whether the connection has finished or failed: the backend can drop it.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Finished | State::Failed)
    }

    /// Whether the connection failed for good (no `--reconnect`, or a refused handshake).
    pub(crate) fn is_failed(&self) -> bool {
        self.state == State::Failed
    }

    /// Whether the connection is up, or will come back (`--reconnect`): it is neither closed nor
    /// waiting for a socket the backend may never open (a node no request went to).
    pub(crate) fn is_live(&self) -> bool {
        matches!(self.state, State::Open | State::Reconnecting | State::Down)
    }

    /// Whether the socket is up and past its handshake's start: requests may be queued on it.
    pub(crate) fn is_open(&self) -> bool {
        self.state == State::Open
    }

    /// Bytes encoded and not yet written.
    pub(crate) fn unwritten(&self) -> usize {
        self.out.unwritten()
    }

    /// Whether the socket is up and its handshake has been answered with success: the
    /// client's requests may go on it (none is sent before: a refused `SELECT` must not leave
    /// a request of the benchmark in database 0).
    #[inline]
    pub(crate) fn is_ready(&self) -> bool {
        self.state == State::Open && self.handshake_left == 0
    }

    /// Whether it may take more requests now: open, and the output buffer below its cap.
    pub(crate) fn has_room(&self) -> bool {
        self.state == State::Open && self.unwritten() < OUT_SOFT_CAP
    }

    /// Whether requests or handshake replies are still awaited.
    pub(crate) fn busy(&self) -> bool {
        !self.in_flight.is_empty() || self.handshake_left > 0
    }

    /// Whether the test's stop has come by `now`; remembers it when it has.
    pub(crate) fn see_stop(&mut self, now: Time) -> bool {
        if !self.stop_seen && self.plan.stop.is_due(now) {
            self.stop_seen = true;
        }
        self.stop_seen
    }

    /// Whether the test's stop has been seen.
    pub(crate) fn stop_seen(&self) -> bool {
        self.stop_seen
    }

    // ---- inputs ----

    /// A new socket is connected (the first one, or one opened for [`Event::Reconnect`]):
    /// queues the handshake and counts the connection.
    pub(crate) fn handle_connected(&mut self, now: Time, stats: &mut Stats) {
        if self.is_closed() {
            return;
        }
        stats.connections_opened += 1;
        self.last_now = self.last_now.max(now);
        self.state = State::Open;
        self.parser.reset();
        if let Some(c) = &mut self.capture {
            c.clear();
        }
        if self.handshake.role.is_some() {
            // `--sentinel`: the handshake's replies are read (`ROLE`'s), and no reply after it
            // unless `captured`.
            self.capture.get_or_insert_with(Vec::new);
        }
        self.out.clear();
        self.written = 0;
        self.in_flight.clear();
        self.tags.clear();
        self.sent = 0;
        self.connected_at = now;
        self.replies = 0;
        self.only_errors = true;
        self.out.extend_from_slice(self.handshake.bytes());
        self.encoded = self.handshake.bytes().len() as u64;
        self.handshake_left = self.handshake.len();
        self.ready_at = Time::MAX;
        if self.handshake_left == 0 {
            self.ready(now);
        }
    }

    /// Bytes read from the socket at `now`. Completed replies are matched to requests in order;
    /// each answered request goes to `answered`, which records it.
    pub(crate) fn handle_input(
        &mut self,
        mut data: &[u8],
        now: Time,
        stats: &mut Stats,
        answered: &mut impl OnAnswer,
    ) {
        if self.state != State::Open {
            return;
        }
        self.last_now = self.last_now.max(now);
        stats.bytes_received += data.len() as u64;
        if self.capture.is_some() {
            return self.handle_input_captured(data, now, stats, answered);
        }
        // The common case (no `--verify`): no reply's bytes are kept.
        while !data.is_empty() && self.state == State::Open {
            match self.parser.parse(data) {
                Ok(crate::resp::Parsed::Partial) => break,
                Ok(crate::resp::Parsed::Complete { consumed, reply }) => {
                    data = &data[consumed..];
                    self.on_reply(reply, &[], now, stats, answered);
                }
                Err(e) => self.fail(ConnError::Protocol(e)),
            }
        }
    }

    /// [`Connection::handle_input`] under `--verify`: each reply's bytes go to the check, copied
    /// only when earlier inputs brought some of them.
    #[cold]
    fn handle_input_captured(
        &mut self,
        mut data: &[u8],
        now: Time,
        stats: &mut Stats,
        answered: &mut impl OnAnswer,
    ) {
        while !data.is_empty() && self.state == State::Open {
            match self.parser.parse(data) {
                Ok(crate::resp::Parsed::Partial) => {
                    if let Some(c) = &mut self.capture {
                        let room = self.capture_limit.saturating_sub(c.len());
                        c.extend_from_slice(&data[..data.len().min(room)]);
                    }
                    break;
                }
                Ok(crate::resp::Parsed::Complete { consumed, reply }) => {
                    let (this, rest) = data.split_at(consumed);
                    data = rest;
                    match self.capture.take() {
                        Some(mut c) => {
                            let body = if c.is_empty() {
                                &this[..this.len().min(self.capture_limit)]
                            } else {
                                let room = self.capture_limit.saturating_sub(c.len());
                                c.extend_from_slice(&this[..this.len().min(room)]);
                                &c[..]
                            };
                            self.on_reply(reply, body, now, stats, answered);
                            c.clear();
                            // A `ROLE`'s alone: kept until the handshake is through.
                            if self.captured || self.ready_at == Time::MAX {
                                self.capture = Some(c);
                            }
                        }
                        None => self.on_reply(reply, &[], now, stats, answered),
                    }
                }
                Err(e) => self.fail(ConnError::Protocol(e)),
            }
        }
    }

    /// How many of the next bytes of the stream nothing will read (a bulk string's body):
    /// the backend may discard them unread ([`crate::resp::ReplyParser::skippable`]).
    pub(crate) fn skippable(&self) -> u64 {
        // `--verify` reads every body it checks.
        if self.state == State::Open && self.capture.is_none() {
            self.parser.skippable()
        } else {
            0
        }
    }

    /// `n` bytes of the stream, at most [`Connection::skippable`], were discarded unread at
    /// `now`: counted as received, and the parser moves past them. No reply ends in them.
    pub(crate) fn handle_skipped(&mut self, n: u64, now: Time, stats: &mut Stats) {
        if self.state != State::Open {
            return;
        }
        self.last_now = self.last_now.max(now);
        stats.bytes_received += self.parser.skip(n);
    }

    /// `written` bytes of what [`Connection::poll_transmit`] returned (or of the chunks of
    /// [`Connection::poll_transmit_chunks`], in order) were accepted by a write
    /// that began at `now` (read the clock before the write, not after it): requests whose last
    /// byte is among them count as sent at `now`.
    pub(crate) fn advance_transmit(&mut self, written: usize, now: Time, stats: &mut Stats) {
        let written = self.out.advance_all(written);
        self.written += written as u64;
        stats.bytes_sent += written as u64;
        while let Some(p) = self.in_flight.get_mut(self.sent) {
            if p.end > self.written {
                break;
            }
            p.sent = now;
            self.sent += 1;
            let p = *p;
            self.record_lateness(&p, now, stats);
        }
    }

    /// The server closed the connection (a read returned 0).
    pub(crate) fn handle_closed(&mut self, now: Time) {
        self.last_now = self.last_now.max(now);
        match self.state {
            State::Finished | State::Failed | State::Reconnecting | State::Down => {}
            _ => {
                let in_flight = self.in_flight.len();
                let e = self.refused().unwrap_or(ConnError::Closed { in_flight });
                self.fail(e);
            }
        }
    }

    /// A socket error (connect, read or write), seen at `now`: a `--reconnect` backoff counts
    /// from here.
    pub(crate) fn handle_io_error(&mut self, failure: IoFailure, now: Time) {
        self.last_now = self.last_now.max(now);
        if !self.is_closed() && self.state != State::Down {
            let e = self.refused().unwrap_or(ConnError::Io(failure));
            self.fail(e);
        }
    }

    /// `--sentinel`: the server refused as a replica does, the primary moved: the connection
    /// leaves it as at a socket error `failure` (even when that refusal was its first reply,
    /// which is no refusal of the connection itself).
    pub(crate) fn leave(&mut self, failure: IoFailure, now: Time) {
        self.last_now = self.last_now.max(now);
        if !self.is_closed() && self.state != State::Down {
            self.fail(ConnError::Io(failure));
        }
    }

    /// The time from [`Connection::poll_timeout`] has come: fails the connection when a request
    /// or the handshake has waited longer than [`ConnConfig::request_timeout`]; at the test's
    /// [`Stop`], abandons a connection whose requests are still unanswered when the grace has
    /// passed; a connection that is down asks for a new socket when its backoff is over, or
    /// finishes when nothing is left to come back for (`spent`).
    pub(crate) fn handle_timeout(&mut self, now: Time, spent: bool) {
        self.last_now = self.last_now.max(now);
        if self.state == State::Down {
            if self.see_stop(now) || spent {
                self.finish();
            } else if now >= self.down_until {
                self.state = State::Reconnecting;
                self.events.push_back(Event::Reconnect);
            }
            return;
        }
        if self.state != State::Open {
            return;
        }
        if let (Some(deadline), Some(after)) = (self.deadline(), self.wait_limit()) {
            if now >= deadline {
                self.fail(ConnError::Timeout { after, handshake: self.handshake_left > 0 });
                return;
            }
        }
        if self.see_stop(now) && self.busy() && self.plan.stop.abandon_at().is_some_and(|t| t <= now) {
            self.state = State::Finished;
            self.events.push_back(Event::Abandoned { in_flight: self.in_flight.len() });
        }
    }

    /// Nothing more for it to do: it finishes.
    pub(crate) fn finish(&mut self) {
        self.state = State::Finished;
        self.events.push_back(Event::Finished);
    }

    /// `-k 0`: its batch is answered and another is reserved: a new socket.
    pub(crate) fn reconnect(&mut self) {
        self.state = State::Reconnecting;
        self.events.push_back(Event::Reconnect);
    }

    /// Queues a request: `write` appends its bytes to the output buffer.
    #[inline]
    pub(crate) fn push(&mut self, mut pending: Pending, write: impl FnOnce(&mut Wire)) {
        // The written part goes before more is encoded: the buffer does not grow behind a slow
        // socket.
        self.out.compact(OUT_SOFT_CAP);
        let before = self.out.appended();
        write(&mut self.out);
        self.encoded += self.out.appended() - before;
        pending.end = self.encoded;
        self.in_flight.push_back(pending);
        if self.tagged {
            // `--verify`: every request has a tag, so that the tags stay in step.
            self.tags.push_back(crate::verify::Tag::default());
        }
    }

    /// [`Connection::push`] with `--verify`'s tag: the reply's [`Answered`] carries it.
    pub(crate) fn push_tagged(
        &mut self,
        pending: Pending,
        tag: crate::verify::Tag,
        write: impl FnOnce(&mut Wire),
    ) {
        self.push(pending, write);
        if let Some(t) = self.tags.back_mut() {
            *t = tag;
        }
    }

    /// Marks the request just pushed as a read of a key the mix's writer had written.
    pub(crate) fn mark_written(&mut self) {
        if let Some(p) = self.in_flight.back_mut() {
            p.written = true;
        }
    }

    /// Marks the request just pushed as a cache-aside `GET` (`req`), its key in `tag`.
    pub(crate) fn tag_last(&mut self, req: u32, tag: crate::verify::Tag) {
        if let Some(p) = self.in_flight.back_mut() {
            p.req = req;
        }
        if let Some(t) = self.tags.back_mut() {
            *t = tag;
        }
    }

    // ---- outputs ----

    /// Bytes to write now, if any. Call [`Connection::advance_transmit`] with how many the socket
    /// took, then call this again until it returns `None` or the socket would block.
    pub(crate) fn poll_transmit(&mut self) -> Option<&[u8]> {
        if self.state != State::Open {
            // Ended, failed or waiting for a new socket: what was unwritten is moot.
            return None;
        }
        self.out.chunk()
    }

    /// The next chunks to write, up to `out.len()`, for one vectored write ([`Wire::chunks`]);
    /// how many. [`Connection::advance_transmit`] with what the write took, across them.
    pub(crate) fn poll_transmit_chunks<'a>(&'a mut self, out: &mut [&'a [u8]]) -> usize {
        if self.state != State::Open {
            return 0;
        }
        self.out.chunks(out)
    }

    /// [`Connection::poll_transmit`], with a spliced value's bytes as an owned handle
    /// ([`Chunk::Shared`]); [`Connection::advance_transmit`] after it the same way.
    pub(crate) fn poll_transmit_chunk(&mut self) -> Option<Chunk<'_>> {
        if self.state != State::Open {
            return None;
        }
        self.out.next_chunk()
    }

    /// When the connection next wants [`Connection::handle_timeout`] called though no bytes
    /// arrived, for its own sake: the `--timeout` deadline of the oldest unanswered request or
    /// of the handshake; the test's [`Stop`], and once it has come, the time its unanswered
    /// requests are abandoned; a connection that is down, the end of its backoff.
    pub(crate) fn poll_timeout(&self) -> Option<Time> {
        if self.state == State::Down {
            let stop = if self.stop_seen { None } else { self.plan.stop.at() };
            return Some(stop.map_or(self.down_until, |t| t.min(self.down_until)));
        }
        if self.state != State::Open {
            return None;
        }
        let stop = &self.plan.stop;
        let at = if !self.stop_seen {
            stop.at()
        } else if self.busy() {
            stop.abandon_at()
        } else {
            None
        };
        earliest(self.deadline(), at)
    }

    /// The next thing the backend must act on.
    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ---- internals ----

    /// How long what is awaited may wait: the handshake `--timeout` or [`SETUP_TIMEOUT`]
    /// while it is unanswered (never forever), else a request `--timeout`.
    fn wait_limit(&self) -> Option<Duration> {
        match self.plan.conn.request_timeout {
            None if self.handshake_left > 0 => Some(SETUP_TIMEOUT),
            t => t,
        }
    }

    /// The deadline of [`Connection::wait_limit`]: of the handshake while it is unanswered,
    /// counted from the connect, else of the oldest request in flight.
    fn deadline(&self) -> Option<Time> {
        let after = self.wait_limit()?;
        let since = if self.handshake_left > 0 { self.connected_at } else { self.in_flight.front()?.queued };
        Some(since + after)
    }

    /// A socket whose only reply was an error and that then closed: the error says why. The
    /// error came where the first request's reply was due, so its words tell a server turning
    /// the connection away (Redis at `maxclients` or in protected mode, which says so as it
    /// accepts, before it reads anything) from one rejecting the request (a protocol error).
    fn refused(&self) -> Option<ConnError> {
        if self.replies != 1 || !self.only_errors {
            return None;
        }
        let message = String::from_utf8_lossy(self.parser.error_message()).into_owned();
        Some(if turns_away(&message) {
            ConnError::Refused { message }
        } else {
            ConnError::Rejected { message }
        })
    }

    #[inline(always)]
    fn on_reply(
        &mut self,
        reply: Reply,
        body: &[u8],
        now: Time,
        stats: &mut Stats,
        answered: &mut impl OnAnswer,
    ) {
        if reply.is_push() {
            stats.push_messages += 1;
            return;
        }
        self.replies += 1;
        self.only_errors &= reply.is_error();
        if self.handshake_left > 0 {
            let command = self.handshake.commands[self.handshake.len() - self.handshake_left];
            self.handshake_left -= 1;
            if reply.is_error() {
                let message = String::from_utf8_lossy(self.parser.error_message()).into_owned();
                self.fail(ConnError::Handshake { command, message });
            } else if command == "HELLO" && !matches!(reply.kind, Kind::Map | Kind::Array) {
                // HELLO's reply is the server's properties: anything else is not a server that
                // switched to RESP3.
                self.fail(ConnError::HandshakeReply { command, got: reply.kind.describe() });
            } else if let (Some(want), "ROLE") = (self.handshake.role, command) {
                // `--sentinel`: a server in another role fails the attempt (it comes back where
                // the Sentinel says then).
                match crate::handshake::check_role(body, want) {
                    Ok(()) if self.handshake_left == 0 => self.ready(now),
                    Ok(()) => {}
                    Err(got) => self.fail(ConnError::WrongRole { want, got }),
                }
            } else if self.handshake_left == 0 {
                self.ready(now);
            }
            return;
        }
        let Some(p) = self.in_flight.pop_front() else {
            let e = if reply.is_error() {
                // An error before any request, or one too many: the server is turning us away.
                let message = String::from_utf8_lossy(self.parser.error_message()).into_owned();
                ConnError::Refused { message }
            } else {
                ConnError::UnexpectedReply { offset: self.parser.offset() }
            };
            self.fail(e);
            return;
        };
        // A reply to a request the kernel has not fully taken yet (a server answering early):
        // count it as sent now rather than inventing a time.
        let sent = if self.sent > 0 {
            self.sent -= 1;
            p.sent
        } else {
            self.record_lateness(&p, now, stats);
            now
        };
        if reply.kind == Kind::Integer && now >= self.plan.measure_from {
            stats.integer_sum = stats.integer_sum.saturating_add(self.parser.integer());
        } else if reply.kind == Kind::Array && now >= self.plan.measure_from {
            // A multi-key read's hits and misses, key by key; another read's, an empty array.
            let (elements, nils) = self.parser.array_elements();
            let part = usize::from(p.part);
            match self.elementwise.get(part) {
                Some(true) => stats.record_array(part, elements, nils),
                _ => stats.record_array(part, 1, u32::from(elements == 0)),
            }
        }
        let error = reply.is_error().then(|| self.parser.error_message());
        let nil = reply.kind == Kind::Null;
        let kept;
        let verified = if self.captured || self.tagged {
            let tag =
                if self.tagged { self.tags.pop_front().unwrap_or_default() } else { Default::default() };
            kept = Verified { body, tag };
            Some(&kept)
        } else {
            None
        };
        answered.answered(Answered { pending: p, sent, error, nil, now, verified }, stats);
    }

    /// An open-loop request `p` counts as sent at `now`: how late, once (at its first send).
    fn record_lateness(&self, p: &Pending, now: Time, stats: &mut Stats) {
        if p.intended != Time::MAX && !p.resent && now >= self.plan.measure_from {
            // Never negative: the client draws a request only once it is due.
            stats.record_lateness_at(now.nanos_since(p.intended), now);
        }
    }

    fn fail(&mut self, e: ConnError) {
        // A refused handshake is the user's (a wrong password, -3 to a RESP2 server): it stays
        // fatal.
        let recoverable = !matches!(e, ConnError::Handshake { .. } | ConnError::HandshakeReply { .. });
        let comes_back = self.plan.conn.reconnect.is_some() && recoverable;
        // The router's own (not DIRECT, CACHE_GET or CACHE_SET) that are safe to send again,
        // once the connection is back (`--sentinel`).
        let again = |p: &Pending| comes_back && p.req < CACHE_SET && self.plan.resends(p.part);
        let resend: Vec<(u32, Time)> =
            self.in_flight.iter().filter(|p| again(p)).map(|p| (p.req, p.sent)).collect();
        let requests = self.in_flight.iter().filter(|p| p.req != ASKING_REQ && !again(p));
        self.orphans.extend(requests.clone().map(|p| p.req).filter(|&r| r < CACHE_SET));
        let lost = requests.count();
        // Those not yet written go for the first time.
        let resent = resend.iter().filter(|(_, sent)| *sent != Time::MAX).count();
        self.resend.extend(resend);
        self.went_down = true;
        self.dropped += lost;
        let reconnect = self.plan.conn.reconnect.filter(|b| b.attempts.is_none_or(|n| self.attempts < n));
        if let (Some(b), true) = (reconnect, recoverable) {
            self.in_flight.clear();
            self.tags.clear();
            self.sent = 0;
            self.out.clear();
            self.handshake_left = 0;
            self.backoff = b.next(self.backoff);
            self.attempts += 1;
            self.down_until = self.last_now + self.backoff;
            self.state = State::Down;
            self.events.push_back(Event::Down { error: e, lost, resent });
            return;
        }
        self.state = State::Failed;
        let lost = if self.count_lost { lost } else { 0 };
        self.events.push_back(Event::Failed { error: e, lost });
    }
}

/// Whether an error is a server's refusal of the connection itself: Redis's and Valkey's
/// words at `maxclients` (`ERR max number of clients reached`) and in protected mode
/// (`DENIED …`), which they send on accepting, before reading a request.
fn turns_away(message: &str) -> bool {
    message.starts_with("DENIED") || message.contains("max number of clients reached")
}

/// The earlier of two optional times.
pub(crate) fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Client;
    use crate::template::{KeySpace, Template};

    /// A client against one server, driven as its only connection.
    struct C(Client);

    impl C {
        fn new(plan: Arc<Plan>, index: u64) -> C {
            C(Client::new(plan, index))
        }
        fn pending(&self) -> &VecDeque<Pending> {
            &self.0.connection(0).in_flight
        }
        fn in_flight(&self) -> usize {
            self.0.in_flight(0)
        }
        fn is_closed(&self) -> bool {
            self.0.is_closed(0)
        }
        fn handle_connected(&mut self, now: Time, st: &mut Stats) {
            self.0.handle_connected(0, now, st)
        }
        fn handle_input(&mut self, b: &[u8], now: Time, st: &mut Stats) {
            self.0.handle_input(0, b, now, st)
        }
        fn handle_closed(&mut self, now: Time) {
            self.0.handle_closed(0, now)
        }
        fn handle_io_error(&mut self, f: IoFailure, now: Time) {
            self.0.handle_io_error(0, f, now)
        }
        fn handle_timeout(&mut self, now: Time) {
            self.0.handle_timeout(0, now)
        }
        fn poll_timeout(&self) -> Option<Time> {
            self.0.poll_timeout(0)
        }
        fn poll_event(&mut self) -> Option<Event> {
            self.0.poll_event(0)
        }
        fn poll_transmit(&mut self, now: Time) -> Option<&[u8]> {
            self.0.poll_transmit(0, now)
        }
        fn advance_transmit(&mut self, n: usize, now: Time, st: &mut Stats) {
            self.0.advance_transmit(0, n, now, st)
        }
    }

    fn conn(timeout: Option<Duration>, handshake: Handshake, pipeline: u32) -> C {
        conn_with(timeout, handshake, pipeline, None)
    }

    fn conn_with(
        timeout: Option<Duration>,
        handshake: Handshake,
        pipeline: u32,
        reconnect: Option<Backoff>,
    ) -> C {
        let plan = Plan {
            ..Plan::new(
                ConnConfig {
                    handshake,
                    pipeline,
                    pipeline_mode: crate::plan::PipelineMode::Window,
                    request_timeout: timeout,
                    reconnect,
                    ..ConnConfig::default()
                },
                Workload { template: Template::command(&[b"PING"]), keys: KeySpace::Literal, mix: None },
                Budget::new(10),
                Stop::new(None, Duration::from_secs(2)),
            )
        };
        C::new(Arc::new(plan), 0)
    }

    fn stats() -> Stats {
        Stats::new(Time::ZERO, 3, false).unwrap()
    }

    fn open_plan(ol: OpenLoop, n: u64, pipeline: u32, mix: Option<Mix>) -> Arc<Plan> {
        Arc::new(Plan {
            seed: 42,
            ..Plan::new(
                ConnConfig {
                    pipeline,
                    pipeline_mode: crate::plan::PipelineMode::Window,
                    open_loop: Some(ol),
                    ..ConnConfig::default()
                },
                Workload { template: Template::command(&[b"PING"]), keys: KeySpace::Literal, mix },
                Budget::new(n),
                Stop::new(None, Duration::from_secs(2)),
            )
        })
    }

    /// The intended send times of `n` requests on one connection whose window never fills: the
    /// backend calls in at each `poll_timeout`, as a real one would.
    fn schedule(ol: OpenLoop, n: u64) -> Vec<Time> {
        let mut c = C::new(open_plan(ol, n, n as u32, None), 0);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        while let Some(t) = c.poll_timeout() {
            c.handle_timeout(t);
            flush(&mut c, t, &mut st);
        }
        c.pending().iter().map(|p| p.intended).collect()
    }

    #[test]
    fn constant_arrivals_are_exactly_spaced() {
        let ol = OpenLoop::per_connection(Duration::from_micros(250), 1, false);
        let times = schedule(ol, 1000);
        assert_eq!(times.len(), 1000);
        for (k, t) in times.iter().enumerate() {
            assert_eq!(t.as_nanos(), k as u64 * 250_000, "request {k}");
        }
    }

    #[test]
    fn a_slack_wakes_on_its_grid_and_records_the_lateness() {
        // One request every 300 µs, woken on a 250 µs grid: due at 0, 300, 600, 900, 1200 µs,
        // sent at 0, 500, 750, 1000, 1250 µs: 0, 200, 150, 100 and 50 µs late, then again from
        // 1500 µs.
        let ol = OpenLoop {
            slack: Duration::from_micros(250),
            ..OpenLoop::per_connection(Duration::from_micros(300), 1, false)
        };
        assert_eq!(ol.wake_at(Time::from_micros(300)), Time::from_micros(500));
        assert_eq!(ol.wake_at(Time::from_micros(1500)), Time::from_micros(1500));
        assert_eq!(ol.wake_at(Time::MAX), Time::MAX);
        let mut c = C::new(open_plan(ol, 10, 10, None), 0);
        let mut st = Stats::new(Time::ZERO, 3, true).unwrap();
        c.handle_connected(Time::ZERO, &mut st);
        let mut wakes = Vec::new();
        while let Some(t) = c.poll_timeout() {
            wakes.push(t.as_micros());
            c.handle_timeout(t);
            flush(&mut c, t, &mut st);
        }
        assert_eq!(&wakes[..10], &[0, 500, 750, 1000, 1250, 1500, 2000, 2250, 2500, 2750]);
        for (k, p) in c.pending().iter().enumerate() {
            assert_eq!(p.intended.as_micros(), k as u64 * 300);
            assert_eq!(p.sent.as_micros(), wakes[k]);
        }
        let late = st.lateness.as_ref().unwrap();
        assert_eq!((late.len(), late.min(), late.max()), (10, 0, 200));
        assert!((late.mean() - 100.0).abs() < 1.0, "mean {}", late.mean());
    }

    proptest::proptest! {
        /// Whatever the schedule (rate, constant or Poisson gaps, slack, window) and however the
        /// backend wakes (on time, late, or early because a reply came), no request is sent
        /// before its intended time, and each sent request records its lateness once.
        #[test]
        fn no_request_is_sent_before_its_intended_time(
            interval_us in 1u64..2_000,
            slack_us in 0u64..1_000,
            poisson in proptest::bool::ANY,
            window in 1u32..8,
            wakes in proptest::collection::vec((0u8..3, 0u64..3_000), 1..300),
        ) {
            let ol = OpenLoop {
                slack: Duration::from_micros(slack_us),
                ..OpenLoop::per_connection(Duration::from_micros(interval_us), 1, poisson)
            };
            let mut c = C::new(open_plan(ol, 200, window, None), 0);
            let mut st = Stats::new(Time::ZERO, 3, true).unwrap();
            let mut now = Time::from_micros(7);
            c.handle_connected(now, &mut st);
            let mut sent = 0u64;
            for (how, us) in wakes {
                let wake = match (how, c.poll_timeout()) {
                    // On time, or late by up to 3 ms.
                    (0, Some(t)) => t,
                    (1, Some(t)) => t + Duration::from_micros(us),
                    // Early: a reply (or anything else) woke the loop.
                    _ => now + Duration::from_micros(us / 10),
                };
                now = now.max(wake);
                c.handle_timeout(now);
                flush(&mut c, now, &mut st);
                for p in c.pending() {
                    proptest::prop_assert!(p.sent >= p.intended, "sent {:?} before {:?}", p.sent, p.intended);
                }
                // The server answers everything at once, now or not yet.
                if us % 2 == 0 {
                    let n = c.in_flight();
                    sent += n as u64;
                    c.handle_input(&b"+PONG\r\n".repeat(n), now, &mut st);
                }
            }
            sent += c.in_flight() as u64;
            let late = st.lateness.as_ref().unwrap();
            proptest::prop_assert_eq!(late.len(), sent);
            proptest::prop_assert_eq!(st.requests + c.in_flight() as u64, sent);
        }
    }

    #[test]
    fn poisson_gaps_have_the_mean_and_variance_of_an_exponential() {
        // 20 000 exponential gaps of mean 100 µs: the sample mean is within 3% (4 standard
        // errors of 0.7%), the coefficient of variation within 5% of 1 (an exponential's), and
        // the share of gaps longer than the mean within 0.02 of e^-1.
        let ol = OpenLoop::per_connection(Duration::from_micros(100), 1, true);
        let times = schedule(ol, 20_001);
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1].as_nanos() - w[0].as_nanos()) as f64).collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert!((mean / 100_000.0 - 1.0).abs() < 0.03, "mean gap {mean} ns");
        let cv = var.sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.05, "coefficient of variation {cv}");
        let longer = gaps.iter().filter(|&&g| g > 100_000.0).count() as f64 / n;
        assert!((longer - (-1.0f64).exp()).abs() < 0.02, "share longer than the mean {longer}");
    }

    #[test]
    fn a_client_behind_schedule_keeps_the_intended_times() {
        // Window 1, 100 µs interval, and a server that answers each request 1 ms after it is
        // sent: the client falls further behind with every request, yet each request keeps its
        // slot in the schedule (k × 100 µs), its latency counts from there, and nothing is
        // skipped or bunched to catch up beyond the window.
        let ol = OpenLoop::per_connection(Duration::from_micros(100), 1, false);
        let mut c = C::new(open_plan(ol, 50, 1, None), 0);
        let mut st = Stats::new(Time::ZERO, 3, true).unwrap();
        c.handle_connected(Time::ZERO, &mut st);
        let mut now = Time::ZERO;
        for k in 0..50u64 {
            if let Some(t) = c.poll_timeout() {
                now = now.max(t);
            }
            flush(&mut c, now, &mut st);
            assert_eq!(c.pending().len(), 1);
            assert_eq!(c.pending()[0].intended.as_nanos(), k * 100_000, "request {k} lost its slot");
            now += Duration::from_millis(1);
            c.handle_input(b"+PONG\r\n", now, &mut st);
        }
        assert_eq!(st.requests, 50);
        // The last request was due at 4.9 ms and answered at 50 ms.
        assert!(st.latency.max() >= 45_000, "corrected max {}", st.latency.max());
        let service = st.service.as_ref().unwrap();
        assert!(service.max() <= 1_001, "service max {}", service.max());
    }

    #[test]
    fn a_mix_draws_commands_by_weight() {
        // Weights 1:3 over 40 000 requests: the share of the first is 0.25 ± 0.01 (4.6 standard
        // deviations of a binomial).
        let set = Template::command(&[b"SET", b"k", b"v"]);
        let get = Template::command(&[b"GET", b"k"]);
        let mix = Mix::new(vec![(set, 1), (get, 3)]).unwrap();
        assert_eq!((mix.weight(0), mix.weight(1), mix.len()), (1, 3, 2));
        let ol = OpenLoop::per_connection(Duration::from_micros(1), 1, false);
        let mut c = C::new(open_plan(ol, 40_000, 40_000, Some(mix)), 0);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        while let Some(t) = c.poll_timeout() {
            c.handle_timeout(t);
            flush(&mut c, t, &mut st);
        }
        let firsts = c.pending().iter().filter(|p| p.part == 0).count() as f64;
        let share = firsts / c.pending().len() as f64;
        assert!((share - 0.25).abs() < 0.01, "share {share}");
        assert!(Mix::new(vec![]).is_err());
        assert!(Mix::new(vec![(Template::command(&[b"GET"]), 0)]).is_err());
        assert!(
            Mix::new(vec![(Template::command(&[b"A"]), u64::MAX), (Template::command(&[b"B"]), 1)]).is_err()
        );
    }

    #[test]
    fn warmup_replies_are_not_recorded() {
        let ol = OpenLoop::per_connection(Duration::from_micros(100), 1, false);
        let plan = open_plan(ol, 10, 10, None);
        let mut plan = Arc::try_unwrap(plan).unwrap();
        plan.measure_from = Time::from_micros(550);
        let plan = Arc::new(plan);
        let mut st = plan.new_stats(Time::ZERO, 3).unwrap();
        assert_eq!(st.start, Time::from_micros(550), "the measured interval starts after the warmup");
        let mut c = C::new(plan, 0);
        c.handle_connected(Time::ZERO, &mut st);
        for k in 0..10u64 {
            let t = Time::from_micros(k * 100);
            flush(&mut c, t, &mut st);
            c.handle_input(b"+PONG\r\n", t + Duration::from_micros(10), &mut st);
        }
        // Replies at 10, 110, …, 910 µs: those from 610 µs on count.
        assert_eq!(st.requests, 4);
    }

    /// Sends everything the connection has at `now`.
    fn flush(c: &mut C, now: Time, st: &mut Stats) {
        while let Some(b) = c.poll_transmit(now) {
            let n = b.len();
            c.advance_transmit(n, now, st);
        }
    }

    fn failure(c: &mut C) -> Option<ConnError> {
        std::iter::from_fn(|| c.poll_event()).find_map(|e| match e {
            Event::Failed { error, .. } => Some(error),
            _ => None,
        })
    }

    /// `--reconnect`: a connection that fails comes back after a backoff that doubles while its
    /// attempts fail and starts again once it is through; its lost requests are reported with
    /// the failure; a refused handshake stays fatal; the test's stop ends a connection that is
    /// down.
    #[test]
    fn reconnect_backs_off_and_comes_back() {
        let ms = |n: u64| Time::from_micros(n * 1000);
        let backoff = Backoff::doubling(Duration::from_millis(10), Duration::from_millis(25));
        let mut c = conn_with(None, Handshake::default(), 4, Some(backoff));
        let mut st = stats();
        c.handle_connected(ms(0), &mut st);
        flush(&mut c, ms(0), &mut st);
        assert_eq!(c.in_flight(), 4);
        c.handle_closed(ms(5));
        let evs: Vec<Event> = std::iter::from_fn(|| c.poll_event()).collect();
        assert!(
            matches!(
                evs.last(),
                Some(Event::Down { lost: 4, error: ConnError::Closed { in_flight: 4 }, resent: 0 })
            ),
            "{evs:?}"
        );
        assert!(!c.is_closed());
        assert_eq!(c.poll_timeout(), Some(ms(15)), "down for the first backoff");
        assert!(c.poll_transmit(ms(6)).is_none(), "nothing is sent while down");
        c.handle_timeout(ms(15));
        assert_eq!(c.poll_event(), Some(Event::Reconnect));
        // The new connect fails: twice the wait; again: the longest.
        let ep = Endpoint::Tcp { host: "x".into(), port: 1 };
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        c.handle_io_error(IoFailure::new(IoOp::Connect, &ep, &refused), ms(15));
        assert!(matches!(c.poll_event(), Some(Event::Down { lost: 0, .. })));
        assert_eq!(c.poll_timeout(), Some(ms(35)));
        c.handle_timeout(ms(35));
        assert_eq!(c.poll_event(), Some(Event::Reconnect));
        c.handle_io_error(IoFailure::new(IoOp::Connect, &ep, &refused), ms(35));
        assert!(matches!(c.poll_event(), Some(Event::Down { .. })));
        assert_eq!(c.poll_timeout(), Some(ms(60)), "at most 25 ms");
        c.handle_timeout(ms(60));
        assert_eq!(c.poll_event(), Some(Event::Reconnect));
        // Through: requests flow again, and the next failure waits the first backoff again.
        c.handle_connected(ms(61), &mut st);
        assert_eq!(c.poll_event(), Some(Event::Ready));
        flush(&mut c, ms(61), &mut st);
        c.handle_input(b"+PONG\r\n", ms(62), &mut st);
        assert_eq!(st.requests, 1);
        c.handle_closed(ms(70));
        assert!(matches!(c.poll_event(), Some(Event::Down { .. })));
        assert_eq!(c.poll_timeout(), Some(ms(80)));
        // The test stops while it is down: it finishes instead of coming back.
        c.0.plan().stop.request(ms(75));
        assert_eq!(c.poll_timeout(), Some(ms(75)));
        c.handle_timeout(ms(75));
        assert_eq!(c.poll_event(), Some(Event::Finished));
        assert!(c.is_closed());

        // A refused AUTH is the user's: fatal, --reconnect or not.
        let mut c = conn_with(None, Handshake::new(None, Some("pw"), false, 0, false), 4, Some(backoff));
        c.handle_connected(ms(0), &mut st);
        flush(&mut c, ms(0), &mut st);
        c.handle_input(b"-WRONGPASS invalid\r\n", ms(1), &mut st);
        assert!(matches!(failure(&mut c), Some(ConnError::Handshake { .. })));
        assert!(c.is_closed());
    }

    #[test]
    fn a_request_unanswered_past_the_timeout_fails_the_connection() {
        let ms = Duration::from_millis;
        let mut c = conn(Some(ms(500)), Handshake::default(), 2);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        flush(&mut c, Time::ZERO, &mut st);
        assert_eq!(c.poll_timeout(), Some(Time::ZERO + ms(500)));
        // A reply at 300 ms answers the first request; the window refills at 300 ms, so the
        // oldest request is now the second one, queued at 0.
        let t300 = Time::ZERO + ms(300);
        c.handle_input(b"+PONG\r\n", t300, &mut st);
        flush(&mut c, t300, &mut st);
        assert_eq!(c.poll_timeout(), Some(Time::ZERO + ms(500)));
        c.handle_input(b"+PONG\r\n", Time::ZERO + ms(400), &mut st);
        assert_eq!(c.poll_timeout(), Some(t300 + ms(500)));
        // Early calls do nothing; the deadline fails it.
        c.handle_timeout(t300 + ms(499));
        assert_eq!(failure(&mut c), None);
        c.handle_timeout(t300 + ms(500));
        let e = failure(&mut c).expect("a timeout");
        assert_eq!(e, ConnError::Timeout { after: ms(500), handshake: false });
        assert_eq!(e.to_string(), "request timed out after 500ms (--timeout)");
        assert!(c.is_closed() && c.poll_timeout().is_none());
    }

    /// Everything [`C::poll_transmit`] hands out at `now`, written whole.
    fn written(c: &mut C, now: Time, st: &mut Stats) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(b) = c.poll_transmit(now) {
            out.extend_from_slice(b);
            let n = b.len();
            c.advance_transmit(n, now, st);
        }
        out
    }

    /// `--sentinel`'s resend: the requests in flight when a connection goes down, of a command
    /// safe to repeat, are not lost but sent again first once it is back, in their order, each
    /// timed from its first send; a command not safe to repeat is lost as before.
    #[test]
    fn requests_in_flight_at_a_move_are_sent_again() {
        let ms = |n: u64| Time::from_micros(n * 1000);
        let backoff = Backoff::doubling(Duration::from_millis(10), Duration::from_millis(10));
        for (repeatable, lost, resent) in [(true, 0, 4), (false, 4, 0)] {
            let plan = Plan::new(
                ConnConfig {
                    pipeline: 4,
                    pipeline_mode: crate::plan::PipelineMode::Window,
                    reconnect: Some(backoff),
                    ..ConnConfig::default()
                },
                Workload { template: Template::command(&[b"PING"]), keys: KeySpace::Literal, mix: None },
                Budget::new(4),
                Stop::new(None, Duration::from_secs(2)),
            );
            let mut c = C::new(Arc::new(Plan { resend: Some(Arc::from(vec![repeatable])), ..plan }), 0);
            let mut st = stats();
            c.handle_connected(ms(0), &mut st);
            assert_eq!(written(&mut c, ms(0), &mut st), b"*1\r\n$4\r\nPING\r\n".repeat(4));
            c.handle_closed(ms(5));
            let down = std::iter::from_fn(|| c.poll_event()).last();
            assert!(
                matches!(down, Some(Event::Down { lost: l, resent: r, .. }) if (l, r) == (lost, resent)),
                "{down:?}"
            );
            c.handle_timeout(ms(15));
            if !repeatable {
                // Nothing left to come back for: the budget is spent and nothing is owed.
                assert!(c.is_closed(), "{:?}", c.poll_event());
                continue;
            }
            assert_eq!(c.poll_event(), Some(Event::Reconnect));
            c.handle_connected(ms(15), &mut st);
            assert_eq!(written(&mut c, ms(15), &mut st), b"*1\r\n$4\r\nPING\r\n".repeat(4), "sent again");
            c.handle_input(&b"+PONG\r\n".repeat(4), ms(16), &mut st);
            assert_eq!(st.requests, 4);
            assert!(st.latency.min() >= 16_000, "timed from the first send: {}", st.latency.min());
        }
    }

    /// `--sentinel`: a `-READONLY` (or `-MASTERDOWN`) reply is no answer: the request did not
    /// run; the connection leaves the server (the Sentinel is asked again) and sends it again
    /// once back, whatever its command; counted as refused, not as an error.
    #[test]
    fn a_replica_refusal_moves_the_connection_and_sends_again() {
        let ms = |n: u64| Time::from_micros(n * 1000);
        let backoff = Backoff::doubling(Duration::from_millis(10), Duration::from_millis(10));
        let plan = Plan::new(
            ConnConfig { pipeline: 1, reconnect: Some(backoff), ..ConnConfig::default() },
            Workload { template: Template::command(&[b"INCR", b"k"]), keys: KeySpace::Literal, mix: None },
            Budget::new(1),
            Stop::new(None, Duration::from_secs(2)),
        );
        let mut c = C::new(Arc::new(Plan { resend: Some(Arc::from(vec![false])), ..plan }), 0);
        let mut st = stats();
        let incr = b"*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n";
        for (reply, word) in [
            (&b"-READONLY You can't write against a read only replica.\r\n"[..], "READONLY"),
            (b"-MASTERDOWN Link with MASTER is down\r\n", "MASTERDOWN"),
        ] {
            let at = st.refused * 20;
            c.handle_connected(ms(at), &mut st);
            assert_eq!(written(&mut c, ms(at), &mut st), incr);
            c.handle_input(reply, ms(at + 1), &mut st);
            let down = std::iter::from_fn(|| c.poll_event()).last();
            let Some(Event::Down { error, lost: 0, resent: 0 }) = down else { panic!("{down:?}") };
            assert!(error.to_string().contains(&format!("the server refused: {word}")), "{error}");
            c.handle_timeout(ms(at + 11));
            assert_eq!(c.poll_event(), Some(Event::Reconnect));
        }
        c.handle_connected(ms(40), &mut st);
        assert_eq!(written(&mut c, ms(40), &mut st), incr, "sent again");
        c.handle_input(b":1\r\n", ms(41), &mut st);
        assert_eq!((st.requests, st.refused, st.errors.total()), (1, 2, 0));
        assert!(st.latency.min() >= 40_900, "timed from the first send: {}", st.latency.min());
    }

    /// `--sentinel`: the primary's connection ends its handshake with `ROLE`; a server that
    /// names another role (a replica, its reply split over two reads) fails the attempt, no
    /// request sent; the next socket, at a primary, goes on.
    #[test]
    fn a_server_in_another_role_is_a_failed_attempt() {
        let ms = |n: u64| Time::from_micros(n * 1000);
        let mut hs = Handshake::new(None, None, false, 0, false);
        hs.expect_role("master");
        let backoff = Backoff::doubling(Duration::from_millis(10), Duration::from_millis(10));
        let mut c = conn_with(None, hs.clone(), 1, Some(backoff));
        let mut st = stats();
        c.handle_connected(ms(0), &mut st);
        assert_eq!(written(&mut c, ms(0), &mut st), b"*1\r\n$4\r\nROLE\r\n");
        c.handle_input(b"*5\r\n$5\r\nsla", ms(1), &mut st);
        c.handle_input(b"ve\r\n$9\r\n127.0.0.1\r\n:6379\r\n$9\r\nconnected\r\n:14\r\n", ms(1), &mut st);
        let down = std::iter::from_fn(|| c.poll_event()).last();
        let Some(Event::Down { error, lost: 0, resent: 0 }) = down else { panic!("{down:?}") };
        assert_eq!(error, ConnError::WrongRole { want: "master", got: "slave".into() });
        assert_eq!(written(&mut c, ms(2), &mut st), b"", "no request sent there");
        c.handle_timeout(ms(11));
        assert_eq!(c.poll_event(), Some(Event::Reconnect));
        c.handle_connected(ms(11), &mut st);
        assert_eq!(written(&mut c, ms(11), &mut st), hs.bytes());
        c.handle_input(b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n", ms(12), &mut st);
        assert_eq!(c.poll_event(), Some(Event::Ready));
        assert!(c.0.connection(0).capture.is_none(), "no reply read past the handshake");
        assert_eq!(written(&mut c, ms(12), &mut st), b"*1\r\n$4\r\nPING\r\n");
    }

    #[test]
    fn no_request_goes_before_the_handshake_is_answered() {
        // `--dbnum 5 -P 4`: the socket writes AUTH and SELECT alone, and the requests only once
        // both replies came back successful; on every new socket (`--reconnect`) alike.
        let ms = |n: u64| Time::from_micros(n * 1000);
        let hs = Handshake::new(None, Some("pw"), false, 5, false);
        let backoff = Backoff::doubling(Duration::from_millis(10), Duration::from_millis(10));
        let mut c = conn_with(None, hs.clone(), 4, Some(backoff));
        let mut st = stats();
        c.handle_connected(ms(0), &mut st);
        assert_eq!(written(&mut c, ms(0), &mut st), hs.bytes(), "the handshake alone");
        assert_eq!(c.in_flight(), 0);
        assert_eq!(written(&mut c, ms(1), &mut st), b"", "nothing more while it is unanswered");
        c.handle_input(b"+OK\r\n", ms(1), &mut st);
        assert_eq!(written(&mut c, ms(1), &mut st), b"", "SELECT is still unanswered");
        assert_eq!(c.poll_event(), None);
        c.handle_input(b"+OK\r\n", ms(2), &mut st);
        assert_eq!(c.poll_event(), Some(Event::Ready));
        assert_eq!(written(&mut c, ms(2), &mut st), b"*1\r\n$4\r\nPING\r\n".repeat(4));
        c.handle_closed(ms(3));
        assert!(matches!(c.poll_event(), Some(Event::Down { lost: 4, .. })));
        c.handle_timeout(ms(13));
        assert_eq!(c.poll_event(), Some(Event::Reconnect));
        c.handle_connected(ms(13), &mut st);
        assert_eq!(written(&mut c, ms(13), &mut st), hs.bytes(), "the handshake alone, again");
        c.handle_input(b"+OK\r\n+OK\r\n", ms(14), &mut st);
        assert_eq!(written(&mut c, ms(14), &mut st), b"*1\r\n$4\r\nPING\r\n".repeat(4));
        assert_eq!(st.bytes_sent, 2 * hs.bytes().len() as u64 + 8 * 14);
    }

    #[test]
    fn a_refused_select_sends_no_request() {
        // The server has 2 databases: SELECT 5 is refused, and not one request was written.
        let hs = Handshake::new(None, None, false, 5, false);
        let mut c = conn(None, hs.clone(), 16);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        assert_eq!(written(&mut c, Time::ZERO, &mut st), hs.bytes());
        c.handle_input(b"-ERR DB index is out of range\r\n", Time::ZERO, &mut st);
        let e = failure(&mut c).expect("a failure");
        assert_eq!(e.to_string(), "SELECT failed: ERR DB index is out of range");
        assert_eq!(written(&mut c, Time::ZERO, &mut st), b"");
        assert_eq!(st.bytes_sent, hs.bytes().len() as u64, "no byte of a request");
        assert!(c.is_closed());
    }

    #[test]
    fn the_handshake_has_the_same_timeout() {
        let s = Duration::from_secs;
        let mut c = conn(Some(s(1)), Handshake::new(None, Some("pw"), false, 0, false), 1);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        flush(&mut c, Time::ZERO, &mut st);
        assert_eq!(c.poll_timeout(), Some(Time::ZERO + s(1)));
        c.handle_timeout(Time::ZERO + s(1));
        let e = failure(&mut c).expect("a timeout");
        assert_eq!(e.to_string(), "connection handshake timed out after 1s (--timeout; 5s without it)");
    }

    #[test]
    fn a_handshake_without_timeout_still_ends() {
        // No --timeout: an unanswered HELLO fails the connection after SETUP_TIMEOUT, 5 s from
        // the connect, where it waited forever; a request without --timeout still may.
        let s = Duration::from_secs;
        let mut c = conn(None, Handshake::new(None, None, false, 0, true), 1);
        let mut st = stats();
        c.handle_connected(Time::ZERO + s(1), &mut st);
        flush(&mut c, Time::ZERO + s(1), &mut st);
        assert_eq!(c.poll_timeout(), Some(Time::ZERO + s(6)));
        c.handle_timeout(Time::ZERO + (s(6) - Duration::from_nanos(1)));
        assert_eq!(failure(&mut c), None);
        c.handle_timeout(Time::ZERO + s(6));
        let e = failure(&mut c).expect("a timeout");
        assert_eq!(e, ConnError::Timeout { after: SETUP_TIMEOUT, handshake: true });
        assert_eq!(e.to_string(), "connection handshake timed out after 5s (--timeout; 5s without it)");
        // Answered: no deadline left.
        let mut c = conn(None, Handshake::new(None, None, false, 0, true), 1);
        c.handle_connected(Time::ZERO, &mut st);
        flush(&mut c, Time::ZERO, &mut st);
        c.handle_input(b"%1\r\n+proto\r\n:3\r\n", Time::ZERO, &mut st);
        assert_eq!(c.poll_event(), Some(Event::Ready));
        flush(&mut c, Time::ZERO, &mut st);
        assert_eq!(c.in_flight(), 1);
        assert_eq!(c.poll_timeout(), None);
    }

    #[test]
    fn hello_must_be_answered_with_the_servers_properties() {
        // A map (RESP3) or an array of field/value pairs (a RESP2 rendering) goes through;
        // anything else fails the connection for good, saying what came back; an endless
        // answer is bounded in memory by the streaming parser and in time by the deadline.
        for (reply, ok) in [
            (&b"%1\r\n+proto\r\n:3\r\n"[..], Ok(())),
            (b"*2\r\n$5\r\nproto\r\n:3\r\n", Ok(())),
            (b"+OK\r\n", Err("a simple string (+)")),
            (b":3\r\n", Err("an integer (:)")),
            (b"$-1\r\n", Err("a null")),
            (b"~1\r\n:3\r\n", Err("a set (~)")),
        ] {
            let backoff = Backoff::doubling(Duration::from_millis(10), Duration::from_millis(10));
            let mut c = conn_with(None, Handshake::new(None, None, false, 3, true), 1, Some(backoff));
            let mut st = stats();
            c.handle_connected(Time::ZERO, &mut st);
            flush(&mut c, Time::ZERO, &mut st);
            c.handle_input(b"+OK\r\n", Time::ZERO, &mut st);
            c.handle_input(reply, Time::ZERO, &mut st);
            match ok {
                Ok(()) => assert_eq!(c.poll_event(), Some(Event::Ready)),
                Err(got) => {
                    let e = failure(&mut c).expect("a failure, not --reconnect's Down");
                    assert_eq!(e, ConnError::HandshakeReply { command: "HELLO", got });
                    assert_eq!(
                        e.to_string(),
                        format!(
                            "HELLO was answered with {got}, not a map (RESP3) or an array of field/value \
                             pairs: no switch to RESP3 (-3)"
                        )
                    );
                    assert_eq!(written(&mut c, Time::ZERO, &mut st), b"");
                    assert!(c.is_closed());
                }
            }
        }
        let mut c = conn(None, Handshake::new(None, None, false, 0, true), 1);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        flush(&mut c, Time::ZERO, &mut st);
        c.handle_input(b"*1000000000\r\n", Time::ZERO, &mut st);
        let element = b":1\r\n".repeat(10_000);
        for k in 1..=100u64 {
            c.handle_input(&element, Time::from_micros(k * 10_000), &mut st);
        }
        assert_eq!(c.poll_event(), None, "still reading the answer");
        c.handle_timeout(Time::ZERO + SETUP_TIMEOUT);
        assert_eq!(failure(&mut c), Some(ConnError::Timeout { after: SETUP_TIMEOUT, handshake: true }));
    }

    #[test]
    fn no_timeout_means_no_deadline() {
        let mut c = conn(None, Handshake::default(), 1);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        flush(&mut c, Time::ZERO, &mut st);
        assert_eq!(c.poll_timeout(), None);
        c.handle_timeout(Time::MAX);
        assert_eq!(failure(&mut c), None);
    }

    #[test]
    fn a_refusal_then_close_reports_the_servers_error() {
        // Redis at maxclients: one error reply to whatever was sent, then the socket closes.
        for close in [true, false] {
            let mut c = conn(None, Handshake::default(), 4);
            let mut st = stats();
            c.handle_connected(Time::ZERO, &mut st);
            flush(&mut c, Time::ZERO, &mut st);
            c.handle_input(b"-ERR max number of clients reached\r\n", Time::ZERO, &mut st);
            if close {
                c.handle_closed(Time::ZERO);
            } else {
                let ep = Endpoint::Tcp { host: "x".into(), port: 1 };
                c.handle_io_error(
                    IoFailure::new(IoOp::Write, &ep, &std::io::Error::from_raw_os_error(32)),
                    Time::ZERO,
                );
            }
            let e = failure(&mut c).expect("a failure");
            assert_eq!(e.to_string(), "the server refused the connection: ERR max number of clients reached");
            assert_eq!(st.errors.total(), 1);
        }
        // Redis may say it before any request was sent.
        let mut c = conn(None, Handshake::default(), 4);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        c.handle_input(b"-ERR max number of clients reached\r\n", Time::ZERO, &mut st);
        let e = failure(&mut c).expect("a failure");
        assert_eq!(e.to_string(), "the server refused the connection: ERR max number of clients reached");
        // After a good reply, a close is just a close.
        let mut c = conn(None, Handshake::default(), 4);
        let mut st = stats();
        c.handle_connected(Time::ZERO, &mut st);
        flush(&mut c, Time::ZERO, &mut st);
        c.handle_input(b"+PONG\r\n-ERR x\r\n", Time::ZERO, &mut st);
        c.handle_closed(Time::ZERO);
        assert_eq!(failure(&mut c), Some(ConnError::Closed { in_flight: 2 }));
    }

    #[test]
    fn a_request_rejected_before_a_close_is_not_a_refused_connection() {
        for (reply, want) in [
            (
                &b"-ERR Protocol error: invalid bulk length\r\n"[..],
                "the server rejected a request and closed the connection: ERR Protocol error: invalid bulk length",
            ),
            (
                b"-DENIED Redis is running in protected mode\r\n",
                "the server refused the connection: DENIED Redis is running in protected mode",
            ),
        ] {
            let mut c = conn(None, Handshake::default(), 4);
            let mut st = stats();
            c.handle_connected(Time::ZERO, &mut st);
            flush(&mut c, Time::ZERO, &mut st);
            c.handle_input(reply, Time::ZERO, &mut st);
            c.handle_closed(Time::ZERO);
            let e = failure(&mut c).expect("a failure");
            assert_eq!(e.to_string(), want);
            assert_eq!(st.errors.total(), 1, "the error reply is counted once");
        }
    }

    #[test]
    fn durations_read_as_written() {
        assert_eq!(format_duration(Duration::from_secs(5)), "5s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_micros(1500)), "1500us");
    }

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
