//! Simulation (feature `sim`): the real [`Link`]s of a test, with their drain rule, read rule,
//! timeouts and `--reconnect`, driven over in-memory sockets against a scripted server on a
//! [`VirtualClock`]. One thread, no sleeps: when nothing can run, the clock jumps to the next
//! thing that happens (a reply's arrival, a connection's timeout, an outage, an interrupt).
//!
//! The loop waits as a backend does ([`Shape`]): mio's by default (sockets edge-triggered: a read
//! edge when bytes, a FIN or a reset arrive, a write edge when the server has read what filled
//! the socket's buffer and the last drain said it was full; timeouts in [`Timers`], a [`Watch`]
//! for the stop and the budget), smol's or uring's, so what it checks is what the backends run.
//! Over several nodes, see [`crate::sim::cluster`]'s scripted server.
//!
//! The server is one queue, like Redis' one thread: a command read at `t` starts when the server
//! is free (and not in a stall window) and its answer leaves `service` later; a [`Script`]
//! decides each answer ([`Action`], as the e2e tests' fake TCP server does).

pub mod cluster;

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{Progress, TestRun};
use respbench_core::{Endpoint, Outcome, RunError, Time};

use crate::{on_threads, Link, Next, Tally, Timers, VirtualClock, Watch, PUBLISH_EVERY, READ_BUF};

/// What the server does with one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Answers these bytes (any bytes: valid RESP or not).
    Reply(Vec<u8>),
    /// Answers these bytes, then closes the connection (a FIN after them).
    ReplyAndClose(Vec<u8>),
    /// Answers these bytes, then resets the connection (the client's next read past them
    /// fails with `ECONNRESET`).
    ReplyAndReset(Vec<u8>),
    /// Closes the connection without answering.
    Close,
    /// Reads and answers nothing more on this connection, keeping it open.
    Stall,
}

/// One command as the server read it.
#[derive(Clone, Debug)]
pub struct Command<'a> {
    /// Which connection (socket) of the run, in the order they were accepted, from 0.
    pub conn: u64,
    /// Which command on that socket, from 0.
    pub index: u64,
    /// Which command of the whole run, from 0.
    pub global: u64,
    /// When the server read it.
    pub at: Time,
    /// Its arguments; `args[0]` is its name.
    pub args: &'a [Vec<u8>],
}

impl Command<'_> {
    /// The command name, upper-cased.
    pub fn name(&self) -> String {
        self.args.first().map(|a| String::from_utf8_lossy(a).to_uppercase()).unwrap_or_default()
    }

    /// Whether it is one of the handshake's commands (`AUTH`, `SELECT`, `HELLO`, `CLIENT`).
    pub fn is_handshake(&self) -> bool {
        matches!(self.name().as_str(), "AUTH" | "SELECT" | "HELLO" | "CLIENT")
    }
}

/// Decides what the server does with each command.
pub type Script = Arc<dyn Fn(&Command) -> Action + Send + Sync>;

/// A scripted server and the sockets to it.
#[derive(Clone)]
pub struct Server {
    /// What it answers.
    pub script: Script,
    /// Server time per command.
    pub service: Duration,
    /// Serve every command on its own: its answer leaves `service` after it was read, whatever
    /// else is queued (not how Redis behaves; it makes every latency exactly `service`).
    pub parallel: bool,
    /// Windows `[from, to)` in which the server serves nothing (a SIGSTOP): it still reads.
    pub stalls: Vec<(Time, Time)>,
    /// Windows `[from, to)` in which the server is down (a SIGKILL and a restart): at `from`
    /// every open socket is reset, and connects until `to` are refused.
    pub outages: Vec<(Time, Time)>,
    /// What the client's sockets take.
    pub socket: SocketConfig,
    /// How long a connect takes (refused or accepted as the server is at its end).
    pub connect_delay: Duration,
    /// Each answer arrives in pieces of this many bytes, this far apart (segments of a slow
    /// network): replies split over reads and read edges. `None`: each answer at once.
    pub segments: Option<(usize, Duration)>,
    /// What the server does when it accepts socket `conn` (numbered as [`Command::conn`]),
    /// before any command: Redis at `maxclients` answers an error and closes.
    pub on_accept: Option<Arc<dyn Fn(u64) -> Option<Action> + Send + Sync>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("service", &self.service)
            .field("parallel", &self.parallel)
            .field("stalls", &self.stalls)
            .field("outages", &self.outages)
            .field("socket", &self.socket)
            .field("connect_delay", &self.connect_delay)
            .field("segments", &self.segments)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server that does what `script` says with every command, after `service`.
    pub fn new(service: Duration, script: impl Fn(&Command) -> Action + Send + Sync + 'static) -> Server {
        Server {
            script: Arc::new(script),
            service,
            parallel: false,
            stalls: Vec::new(),
            outages: Vec::new(),
            socket: SocketConfig::default(),
            connect_delay: Duration::ZERO,
            segments: None,
            on_accept: None,
        }
    }

    /// A server that answers the handshake's commands `+OK` and every other with `reply`.
    pub fn replying(reply: &[u8], service: Duration) -> Server {
        let reply = reply.to_vec();
        Server::new(service, move |c| {
            Action::Reply(if c.is_handshake() { b"+OK\r\n".to_vec() } else { reply.clone() })
        })
    }
}

/// How much a client's socket takes: short writes and a full send buffer, scripted.
#[derive(Clone, Copy, Debug)]
pub struct SocketConfig {
    /// Most bytes one write takes (fewer: short writes).
    pub write_max: usize,
    /// Most bytes written and not yet read by the server; a write then would block.
    pub send_buffer: usize,
}

impl Default for SocketConfig {
    fn default() -> SocketConfig {
        SocketConfig { write_max: usize::MAX, send_buffer: 4 << 20 }
    }
}

/// The ECONNRESET a read or write of a reset socket fails with.
fn reset_error() -> io::Error {
    #[cfg(target_os = "linux")]
    return io::Error::from_raw_os_error(104);
    #[cfg(not(target_os = "linux"))]
    return io::Error::from(io::ErrorKind::ConnectionReset);
}

/// The client's end of an in-memory connection, a `Read + Write` for [`Link`]: writes go to
/// [`Socket::sent`] (up to [`SocketConfig`]'s limits, else `WouldBlock`), reads take what was
/// delivered, then `WouldBlock`, or after a FIN `Ok(0)`, or after a reset `ECONNRESET`.
#[derive(Debug, Default)]
pub struct Socket {
    config: SocketConfig,
    /// Written by the client and not yet read by the server.
    pub sent: Vec<u8>,
    received: VecDeque<u8>,
    fin: bool,
    reset: bool,
    /// How many writes and reads the client made, and how many of them would block.
    pub writes: u64,
    /// See [`Socket::writes`].
    pub reads: u64,
    /// See [`Socket::writes`].
    pub would_block: u64,
}

impl Socket {
    /// A connected socket taking what `config` says.
    pub fn new(config: SocketConfig) -> Socket {
        Socket { config, ..Socket::default() }
    }

    /// Bytes arrive from the server.
    pub fn deliver(&mut self, bytes: &[u8]) {
        self.received.extend(bytes);
    }

    /// The server closed its side: reads return `Ok(0)` once the bytes before it are read.
    pub fn deliver_fin(&mut self) {
        self.fin = true;
    }

    /// The server reset the connection: reads fail once the bytes before it are read, writes
    /// at once.
    pub fn deliver_reset(&mut self) {
        self.reset = true;
    }

    /// Whether the socket has a FIN or a reset (a hang-up comes with its read edge).
    pub fn hung_up(&self) -> bool {
        self.fin || self.reset
    }

    /// Bytes delivered and not read yet.
    pub fn unread(&self) -> usize {
        self.received.len()
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        if self.received.is_empty() {
            if self.reset {
                return Err(reset_error());
            }
            if self.fin || buf.is_empty() {
                return Ok(0);
            }
            self.would_block += 1;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.received.len());
        for (b, r) in buf.iter_mut().zip(self.received.drain(..n)) {
            *b = r;
        }
        Ok(n)
    }
}

impl Write for Socket {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.writes += 1;
        if self.reset {
            return Err(reset_error());
        }
        let room = self.config.send_buffer.saturating_sub(self.sent.len());
        let n = bytes.len().min(room).min(self.config.write_max);
        if n == 0 && !bytes.is_empty() {
            self.would_block += 1;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.sent.extend_from_slice(&bytes[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The receive buffers of the uring backend (`Shape::Uring` splits what arrives into them).
const URING_RECV: usize = 8 * 1024;

/// One receive completion as a `Read`, as the uring backend hands it to its `Link`: the bytes,
/// then `WouldBlock`; the end of the stream; or the error, once.
#[derive(Debug)]
enum Delivered<'a> {
    Bytes(&'a [u8]),
    End,
    Failed,
    Spent,
}

impl Read for Delivered<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Delivered::Bytes(b) => {
                let n = b.len().min(buf.len());
                buf[..n].copy_from_slice(&b[..n]);
                *b = &b[n..];
                if b.is_empty() {
                    *self = Delivered::Spent;
                }
                Ok(n)
            }
            Delivered::End => Ok(0),
            Delivered::Failed => {
                *self = Delivered::Spent;
                Err(reset_error())
            }
            Delivered::Spent => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

/// Parses one command from the front of `buf`: a RESP array of bulk strings or an inline
/// command (`PING\r\n`); its arguments and how many bytes it took, or `None` when incomplete.
pub fn parse_command(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
        let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        Some((&buf[at..end], end + 2))
    }
    fn num(b: &[u8]) -> Option<usize> {
        std::str::from_utf8(b).ok()?.parse().ok()
    }
    let (head, mut at) = line(buf, 0)?;
    let Some(count) = head.strip_prefix(b"*") else {
        let args = head.split(|&b| b == b' ').filter(|a| !a.is_empty()).map(<[u8]>::to_vec).collect();
        return Some((args, at));
    };
    let n = num(count).unwrap_or(0);
    let mut args = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let (len, next) = line(buf, at)?;
        let end = next + num(len.strip_prefix(b"$").unwrap_or(len)).unwrap_or(0);
        if buf.len() < end + 2 {
            return None;
        }
        args.push(buf[next..end].to_vec());
        at = end + 2;
    }
    Some((args, at))
}

/// What the server sends down one socket, in order.
#[derive(Debug)]
enum Chunk {
    Bytes(Vec<u8>),
    Fin,
    Reset,
}

/// The server's side of one socket.
#[derive(Debug, Default)]
struct Peer {
    /// Which socket of the run.
    conn: u64,
    inbox: Vec<u8>,
    /// Answers with the time they reach the client.
    outbox: VecDeque<(Time, Chunk)>,
    /// Commands read on it.
    index: u64,
    /// No more reading or answering (a stall, or closed by the script).
    done: bool,
}

impl Peer {
    /// Queues what `action` sends, to arrive at `at`; `true` when the server is done with the
    /// socket.
    fn act(&mut self, action: Action, at: Time, segments: Option<(usize, Duration)>) -> bool {
        let (bytes, end) = match action {
            Action::Reply(b) => (b, None),
            Action::ReplyAndClose(b) => (b, Some(Chunk::Fin)),
            Action::ReplyAndReset(b) => (b, Some(Chunk::Reset)),
            Action::Close => (Vec::new(), Some(Chunk::Fin)),
            Action::Stall => {
                self.done = true;
                return true;
            }
        };
        let mut at = at.max(self.outbox.back().map_or(Time::ZERO, |(t, _)| *t));
        match segments {
            Some((size, gap)) if size > 0 => {
                for (k, piece) in bytes.chunks(size).enumerate() {
                    if k > 0 {
                        at += gap;
                    }
                    self.outbox.push_back((at, Chunk::Bytes(piece.to_vec())));
                }
            }
            _ if !bytes.is_empty() => self.outbox.push_back((at, Chunk::Bytes(bytes))),
            _ => {}
        }
        if let Some(end) = end {
            self.outbox.push_back((at, end));
            self.done = true;
        }
        self.done
    }
}

/// One connection of the simulated loop.
struct Slot {
    link: Link,
    sock: Option<(Socket, Peer)>,
    /// The last drain said the socket was full: the server reading from it is a write edge.
    write_blocked: bool,
    /// [`Next::Ended`]: nothing more happens to it.
    ended: bool,
    /// A connect under way, and when it completes.
    connecting: Option<Time>,
}

/// Which backend's way of waiting the loop follows: the same [`Link`]s should give the same test
/// under each (where they do not, the difference is the backend's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// mio's: edge-triggered readiness, a read edge when bytes, a FIN or a reset
    /// arrive (with the hang-up flag for the last two); every connection's [`Link::timeout`] in
    /// one [`Timers`] heap, asked again when the [`Watch`] changes.
    #[default]
    Mio,
    /// io_uring's: mio's timers, and receives as completions: each buffer, the end of the stream
    /// and an error handed to the connection on its own, with no hang-up flag, a drain after
    /// each.
    Uring,
    /// smol's: level-triggered readiness (readable while bytes or an end are unread; no hang-up
    /// flag), a timer per connection for [`Link::timer`] only; the test's stop and abandon times
    /// and the budget's end are seen by one publisher (every [`PUBLISH_EVERY`] and at those
    /// times) that nudges every connection ([`Link::on_timeout`]).
    Smol,
}

/// One thing that happened to a connection, for tests to check order and time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Happening {
    /// A connect started.
    Connect,
    /// The connect was refused (the server is down).
    Refused,
    /// The drain said to close the socket and open a new one (`-k 0`, or `--reconnect`'s
    /// backoff ended).
    Reconnect,
    /// The connection went down (`--reconnect`).
    Down,
    /// The connection ended.
    Ended,
}

/// What a simulated test gave.
#[derive(Debug)]
pub struct SimResult {
    /// The test's outcome, as a backend gives it.
    pub outcome: Outcome,
    /// The virtual time when the last connection ended (or the loop found nothing more could
    /// happen).
    pub end: Time,
    /// What happened to each connection (by index), in order, with when.
    pub log: Vec<(Time, u64, Happening)>,
    /// Commands the server read, handshakes included.
    pub commands: u64,
    /// Sockets the server accepted.
    pub accepted: u64,
    /// Connections still open when nothing more could happen (a stuck loop: a bug).
    pub stuck: usize,
    /// The run's live figures at the end ([`Progress::live`] is 0 when every connection that
    /// went live left).
    pub progress: Arc<Progress>,
}

impl SimResult {
    /// The times of `what` for connection `conn`.
    pub fn times(&self, conn: u64, what: Happening) -> Vec<Time> {
        self.log.iter().filter(|(_, c, h)| *c == conn && *h == what).map(|(t, _, _)| *t).collect()
    }

    /// How many times `what` happened, to any connection.
    pub fn count(&self, what: Happening) -> usize {
        self.log.iter().filter(|(_, _, h)| *h == what).count()
    }
}

/// A simulated test: `run`'s connections against `server`.
#[derive(Debug)]
pub struct Sim {
    /// The clock every [`Tally`] of the test reads.
    pub clock: VirtualClock,
    run: TestRun,
    server: Server,
    interrupt_at: Option<Time>,
    read_buf: usize,
    give_up_at: Time,
    shape: Shape,
}

impl Sim {
    /// `run` (one event loop: `threads` 1; one node) against `server`, from virtual time zero.
    pub fn new(run: TestRun, server: Server) -> Sim {
        Sim {
            clock: VirtualClock::new(),
            run,
            server,
            interrupt_at: None,
            read_buf: READ_BUF,
            give_up_at: Time::MAX,
            shape: Shape::Mio,
        }
    }

    /// Follows `shape`'s way of waiting (mio's by default).
    pub fn shape(mut self, shape: Shape) -> Sim {
        self.shape = shape;
        self
    }

    /// A stop asked for at `t` (a Ctrl-C: [`respbench_core::Stop::request`]).
    pub fn interrupt_at(mut self, t: Time) -> Sim {
        self.interrupt_at = Some(t);
        self
    }

    /// The read buffer's size (the backends' is [`READ_BUF`]): a smaller one makes the read
    /// rule go round more often.
    pub fn read_buf(mut self, n: usize) -> Sim {
        self.read_buf = n.max(1);
        self
    }

    /// Stops looking at `t` even if connections are still open (they count in
    /// [`SimResult::stuck`]): a bound for tests of runs that would go on for good.
    pub fn give_up_at(mut self, t: Time) -> Sim {
        self.give_up_at = t;
        self
    }

    /// Runs the test to its end.
    pub fn run(self) -> Result<SimResult, RunError> {
        assert_eq!(self.run.loops(), 1, "the simulation runs one event loop");
        assert!(self.run.plan.cluster.is_none(), "the simulation runs one node");
        let extra = Mutex::new(None);
        let outcome = on_threads(&self.run, &self.clock, |t, start| {
            let tally = Tally::new(&self.run, t, None, &self.clock, start)?;
            let mut l = Loop::new(&self, tally);
            l.run();
            let Loop { tally, log, commands, accepted, open, .. } = l;
            *extra.lock().unwrap_or_else(|e| e.into_inner()) = Some((log, commands, accepted, open));
            Ok(tally.finish())
        })?;
        let (log, commands, accepted, stuck) =
            extra.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or_default();
        let progress = Arc::clone(&self.run.progress);
        Ok(SimResult { outcome, end: self.clock.now(), log, commands, accepted, stuck, progress })
    }
}

struct Loop<'a> {
    sim: &'a Sim,
    tally: Tally,
    slots: Vec<Slot>,
    indices: Vec<u64>,
    timers: Timers,
    watch: Watch,
    /// Connections not yet ended.
    open: usize,
    buf: Vec<u8>,
    log: Vec<(Time, u64, Happening)>,
    commands: u64,
    accepted: u64,
    /// When the server is free again (one queue).
    server_free: Time,
    /// Outages whose start has been acted on.
    outages_begun: usize,
    interrupted: bool,
    /// [`Shape::Smol`]: when the publisher looks next.
    next_publish: Time,
}

impl<'a> Loop<'a> {
    fn new(sim: &'a Sim, tally: Tally) -> Loop<'a> {
        let indices = sim.run.clients_of(0);
        let slots: Vec<Slot> = indices
            .iter()
            .map(|&i| Slot {
                link: Link::new(&tally, i),
                sock: None,
                write_blocked: false,
                ended: false,
                connecting: None,
            })
            .collect();
        Loop {
            sim,
            tally,
            timers: Timers::new(slots.len()),
            slots,
            indices,
            watch: Watch::default(),
            open: 0,
            buf: vec![0; sim.read_buf],
            log: Vec::new(),
            commands: 0,
            accepted: 0,
            server_free: Time::ZERO,
            outages_begun: 0,
            interrupted: false,
            next_publish: Time::ZERO,
        }
    }

    fn now(&self) -> Time {
        self.sim.clock.now()
    }

    fn note(&mut self, i: usize, what: Happening) {
        let now = self.now();
        self.log.push((now, self.indices[i], what));
    }

    fn run(&mut self) {
        for i in 0..self.slots.len() {
            self.open += 1;
            self.connect(i);
        }
        let mut last_publish = self.now();
        self.next_publish = self.publisher_wakes();
        while self.open > 0 {
            // Everything that can happen at this instant, until nothing more does; a loop that
            // never runs out of work at one instant is a busy loop on a real backend too.
            let mut passes = 0u32;
            while self.step() {
                passes += 1;
                assert!(passes < 1_000_000, "busy loop at {:?}", self.now());
            }
            if self.open == 0 {
                break;
            }
            let Some(next) = self.next_time() else { break };
            if next >= self.sim.give_up_at {
                break;
            }
            self.sim.clock.advance_to(next);
            if self.sim.shape != Shape::Smol
                && self.now().nanos_since(last_publish) >= PUBLISH_EVERY.as_nanos() as u64
            {
                last_publish = self.now();
                self.tally.publish();
            }
        }
    }

    /// One pass over what is due now; `true` if anything happened.
    fn step(&mut self) -> bool {
        let now = self.now();
        let mut any = false;
        if let Some(t) = self.sim.interrupt_at.filter(|&t| t <= now && !self.interrupted) {
            self.interrupted = true;
            self.tally.plan().stop.request(t);
            any = true;
        }
        let outages = &self.sim.server.outages;
        while self.outages_begun < outages.len() && outages[self.outages_begun].0 <= now {
            self.outages_begun += 1;
            // Killed: every open socket is reset; what it had not sent is gone.
            for s in &mut self.slots {
                if let Some((_, peer)) = &mut s.sock {
                    peer.done = true;
                    peer.outbox.clear();
                    peer.outbox.push_back((now, Chunk::Reset));
                }
            }
            any = true;
        }
        for i in 0..self.slots.len() {
            if self.slots[i].connecting.is_some_and(|t| t <= now) {
                any = true;
                self.connect_done(i);
            }
        }
        // Read edges: what arrived by now.
        for i in 0..self.slots.len() {
            if self.sim.shape == Shape::Uring {
                any |= self.complete(i, now);
                continue;
            }
            let slot = &mut self.slots[i];
            let Some((sock, peer)) = &mut slot.sock else { continue };
            let mut arrived = false;
            while peer.outbox.front().is_some_and(|(t, _)| *t <= now) {
                let Some((_, chunk)) = peer.outbox.pop_front() else { break };
                match chunk {
                    Chunk::Bytes(b) => sock.deliver(&b),
                    Chunk::Fin => sock.deliver_fin(),
                    Chunk::Reset => sock.deliver_reset(),
                }
                arrived = true;
            }
            let (read, hangup) = match self.sim.shape {
                Shape::Smol => (sock.unread() > 0 || sock.hung_up(), false),
                _ => (arrived, sock.hung_up()),
            };
            if read {
                any = true;
                slot.link.read(0, sock, &mut self.buf, hangup, &mut self.tally);
                self.drain(i);
            }
        }
        // The server reads what was written; a socket that was full gets its write edge.
        for i in 0..self.slots.len() {
            if self.serve(i) {
                any = true;
                if self.slots[i].write_blocked {
                    self.drain(i);
                }
            }
        }
        match self.sim.shape {
            Shape::Mio | Shape::Uring => {
                if self.watch.changed(self.tally.plan(), now) {
                    // A stop asked for, or the budget spent: timeouts taken earlier are out of date.
                    for i in 0..self.slots.len() {
                        self.schedule(i);
                    }
                }
            }
            Shape::Smol if now >= self.next_publish => {
                self.tally.publish();
                if self.watch.changed(self.tally.plan(), now) {
                    any = true;
                    // The nudge: every waiting connection looks again.
                    for i in 0..self.slots.len() {
                        if !self.slots[i].ended {
                            self.slots[i].link.on_timeout(0, &mut self.tally);
                            self.drain(i);
                        }
                    }
                }
                self.next_publish = self.publisher_wakes();
            }
            Shape::Smol => {}
        }
        while let Some(i) = self.timers.pop_due(now) {
            any = true;
            if self.slots[i].link.timeout(0).is_some_and(|t| t <= now) {
                self.slots[i].link.on_timeout(0, &mut self.tally);
                self.drain(i);
            } else {
                self.schedule(i);
            }
        }
        any
    }

    /// [`Shape::Uring`]: what arrived on slot `i` by `now`, as receive completions, each
    /// handed to the connection on its own (a buffer of at most [`URING_RECV`] bytes, the end
    /// of the stream, an error) and drained after; `true` if any came.
    fn complete(&mut self, i: usize, now: Time) -> bool {
        let Some((_, peer)) = &mut self.slots[i].sock else { return false };
        let conn = peer.conn;
        let mut due = Vec::new();
        while peer.outbox.front().is_some_and(|(t, _)| *t <= now) {
            due.extend(peer.outbox.pop_front().map(|(_, c)| c));
        }
        let any = !due.is_empty();
        for chunk in due {
            let pieces: Vec<Delivered> = match &chunk {
                Chunk::Bytes(b) => b.chunks(URING_RECV).map(Delivered::Bytes).collect(),
                Chunk::Fin => vec![Delivered::End],
                Chunk::Reset => vec![Delivered::Failed],
            };
            for mut d in pieces {
                let slot = &mut self.slots[i];
                // Completions of a socket closed meanwhile only give their buffers back.
                let Some((sock, peer)) = &mut slot.sock else { return any };
                if peer.conn != conn {
                    return any;
                }
                if matches!(d, Delivered::Failed) {
                    sock.deliver_reset();
                }
                slot.link.read(0, &mut d, &mut self.buf, false, &mut self.tally);
                self.drain(i);
            }
        }
        any
    }

    /// The next time anything happens.
    fn next_time(&self) -> Option<Time> {
        let now = self.now();
        let replies = self.slots.iter().filter_map(|s| s.sock.as_ref()?.1.outbox.front().map(|(t, _)| *t));
        let connects = self.slots.iter().filter_map(|s| s.connecting);
        let outage = self.sim.server.outages.get(self.outages_begun).map(|o| o.0);
        let interrupt = self.sim.interrupt_at.filter(|_| !self.interrupted);
        let watch = match self.sim.shape {
            Shape::Mio | Shape::Uring => Watch::next_event(self.tally.plan(), now),
            Shape::Smol => Some(self.next_publish),
        };
        replies
            .chain(connects)
            .chain(self.timers.next())
            .chain(outage)
            .chain(interrupt)
            .chain(watch)
            .map(|t| t.max(now))
            .min()
    }

    /// [`Shape::Smol`]: when the publisher wakes next, from now: in [`PUBLISH_EVERY`], or at
    /// the test's stop or abandon time if sooner.
    fn publisher_wakes(&self) -> Time {
        let now = self.now();
        let tick = now + PUBLISH_EVERY;
        Watch::next_event(self.tally.plan(), now).map_or(tick, |t| t.min(tick))
    }

    /// The server reads socket `i`'s bytes and queues its answers; `true` if it read any.
    fn serve(&mut self, i: usize) -> bool {
        let now = self.now();
        let server = &self.sim.server;
        let Some((sock, peer)) = &mut self.slots[i].sock else { return false };
        if peer.done || sock.sent.is_empty() {
            return false;
        }
        peer.inbox.append(&mut sock.sent);
        while let Some((args, used)) = parse_command(&peer.inbox) {
            peer.inbox.drain(..used);
            let cmd =
                Command { conn: peer.conn, index: peer.index, global: self.commands, at: now, args: &args };
            let action = (server.script)(&cmd);
            peer.index += 1;
            self.commands += 1;
            let mut start = if server.parallel { now } else { now.max(self.server_free) };
            for &(from, to) in &server.stalls {
                if start >= from && start < to {
                    start = to;
                }
            }
            let done = start + server.service;
            if !server.parallel {
                self.server_free = done;
            }
            if peer.act(action, done, server.segments) {
                break;
            }
        }
        true
    }

    fn schedule(&mut self, i: usize) {
        let link = &self.slots[i].link;
        let at = match self.sim.shape {
            Shape::Mio | Shape::Uring => link.timeout(0),
            // A task looks at its timeout after each drain; it sleeps on a timer only for
            // what `timer` keeps (the stop comes with the publisher's nudge).
            Shape::Smol => {
                let now = self.now();
                if link.timeout(0).is_some_and(|t| t <= now) {
                    Some(now)
                } else {
                    link.timer(0, self.tally.plan())
                }
            }
        };
        self.timers.schedule(i, at);
    }

    /// Starts a connect of slot `i`: it completes [`Server::connect_delay`] later.
    fn connect(&mut self, i: usize) {
        let now = self.now();
        self.note(i, Happening::Connect);
        let slot = &mut self.slots[i];
        slot.write_blocked = false;
        slot.link.connecting(0, &self.tally);
        let delay = self.sim.server.connect_delay;
        if delay.is_zero() {
            self.connect_done(i);
        } else {
            slot.connecting = Some(now + delay);
            // The drain a backend makes after starting a connect: nothing to write yet.
            self.drain(i);
        }
    }

    /// Slot `i`'s connect completes now: refused while the server is down, else connected.
    fn connect_done(&mut self, i: usize) {
        let now = self.now();
        self.slots[i].connecting = None;
        let refused = self.sim.server.outages.iter().any(|&(from, to)| from <= now && now < to);
        if refused {
            self.note(i, Happening::Refused);
        }
        let slot = &mut self.slots[i];
        if refused {
            slot.link.connect_failed(0, &io::ErrorKind::ConnectionRefused.into(), &self.tally);
        } else {
            let mut peer = Peer { conn: self.accepted, ..Peer::default() };
            if let Some(greet) = self.sim.server.on_accept.as_ref().and_then(|f| f(self.accepted)) {
                peer.act(greet, now, None);
            }
            self.accepted += 1;
            slot.sock = Some((Socket::new(self.sim.server.socket), peer));
            slot.link.connected(0, &mut self.tally);
        }
        self.drain(i);
    }

    /// The drain rule, and what the loop does about its outcome.
    fn drain(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        let next = slot.link.drain(0, slot.sock.as_mut().map(|(s, _)| s), &mut self.tally);
        match next {
            Next::Wait { write_blocked } => {
                self.slots[i].write_blocked = write_blocked;
                self.schedule(i);
            }
            Next::Reconnect => {
                self.note(i, Happening::Reconnect);
                self.close(i);
                self.connect(i);
            }
            Next::Ended => {
                self.slots[i].ended = true;
                self.note(i, Happening::Ended);
                self.close(i);
                self.open -= 1;
            }
            Next::Down => {
                self.note(i, Happening::Down);
                self.close(i);
                self.schedule(i);
            }
        }
    }

    fn close(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        slot.sock = None;
        slot.write_blocked = false;
        slot.connecting = None;
        slot.link.disconnected(0);
    }
}

/// A [`TestRun`] of `plan` on `clients` connections to `127.0.0.1:6379`, one loop, `sigfig` 3.
pub fn test_run(plan: Arc<respbench_core::Plan>, clients: usize) -> TestRun {
    TestRun {
        plan,
        endpoint: Endpoint::Tcp { host: "127.0.0.1".into(), port: 6379 },
        clients,
        threads: 1,
        sigfig: 3,
        progress: Arc::new(Progress::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_array_and_inline_commands_and_waits_for_more() {
        let cmd = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
        assert_eq!(parse_command(cmd), Some((vec![b"GET".to_vec(), b"key".to_vec()], cmd.len())));
        for i in 0..cmd.len() {
            assert_eq!(parse_command(&cmd[..i]), None, "prefix {i}");
        }
        assert_eq!(parse_command(b"PING\r\nx"), Some((vec![b"PING".to_vec()], 6)));
    }

    #[test]
    fn the_socket_reads_data_then_its_end_and_writes_what_fits() {
        let mut s = Socket::new(SocketConfig { write_max: 3, send_buffer: 5 });
        let mut buf = [0u8; 4];
        assert_eq!(s.read(&mut buf).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        s.deliver(b"abcdef");
        s.deliver_fin();
        assert_eq!(s.read(&mut buf).unwrap(), 4);
        assert_eq!(s.read(&mut buf).unwrap(), 2);
        assert_eq!(&buf[..2], b"ef");
        assert_eq!(s.read(&mut buf).unwrap(), 0);
        assert_eq!(s.write(b"12345").unwrap(), 3);
        assert_eq!(s.write(b"45").unwrap(), 2);
        assert_eq!(s.write(b"6").unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert_eq!(s.sent, b"12345");
        s.deliver(b"x");
        s.deliver_reset();
        assert_eq!(s.read(&mut buf).unwrap(), 1);
        assert_eq!(s.read(&mut buf).unwrap_err().kind(), io::ErrorKind::ConnectionReset);
        assert_eq!(s.write(b"7").unwrap_err().kind(), io::ErrorKind::ConnectionReset);
    }
}
