//! Simulation (feature `sim`): the real [`Link`]s of a test, with their drain rule, read rule,
//! timeouts and `--reconnect`, driven over in-memory sockets against scripted servers on a
//! [`VirtualClock`]. One thread, no sleeps: when nothing can run, the clock jumps to the next
//! thing that happens (a reply's arrival, a connection's timeout, an outage, an interrupt).
//!
//! The loop waits as a backend does ([`Shape`]). mio's and uring's run on the backends' own loop
//! skeleton, [`Table`], with the in-memory sockets as its [`Sockets`] (the simulation adds only
//! what the kernel does: mio's edges, a read edge when bytes, a FIN or a reset arrive, a write
//! edge when the server has read what filled the socket's buffer and the last drain said it was
//! full, and a connect that completes later; uring's receive completions, each on its own).
//! smol's way (a task per connection with a timer of its own, a publisher that nudges) is the
//! simulation's own loop. So what it checks is what the backends run.
//!
//! A client has a socket per node over several nodes ([`Sim::nodes`]: a server per address,
//! [`cluster::ClusterServer`]'s nodes); a node that has not appeared gets a socket only when the
//! client names it, and the nodes the client wakes are drained after each drain, as the backends
//! do.
//!
//! Each server is one queue, like Redis' one thread: a command read at `t` starts when the
//! server is free (and not in a stall window) and its answer leaves `service` later; a
//! [`Script`] decides each answer ([`Action`], as the e2e tests' fake TCP server does).

pub mod cluster;

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{Progress, TestRun};
use respbench_core::{Endpoint, Outcome, RunError, SharedBytes, Time};

use crate::{
    on_threads, resolve_all, Delivered, Link, Next, Sockets, Source, Table, Tally, Target, Timers,
    VirtualClock, Watch, WriteShared, PUBLISH_EVERY, READ_BUF,
};

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

    /// A server of known capacity: every command takes `service` of its one thread, served one
    /// at a time in the order read, so it serves exactly `1 / service` commands per second;
    /// each is answered `reply` (the handshake's `+OK`).
    pub fn fixed_service(reply: &[u8], service: Duration) -> Server {
        Server::replying(reply, service)
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

/// `ECONNRESET`'s number, as a completion reports it.
const RESET: i32 = if cfg!(target_os = "linux") { 104 } else { 54 };

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
    /// Bytes the client dropped unread ([`Source::discard`], as Linux's TCP `MSG_TRUNC` does).
    pub discarded: u64,
    /// Writes of shared bytes by their handle ([`WriteShared::write_shared`]: the uring shape).
    pub shared_writes: u64,
    /// Where each write that took bytes ended, in bytes since the socket opened.
    ends: VecDeque<u64>,
    /// Bytes written since the socket opened.
    total: u64,
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

/// Drops bytes as a TCP socket's `recv` with `MSG_TRUNC` does: what has arrived, up to `max`.
impl Source for Socket {
    fn discard(&mut self, max: usize) -> io::Result<Option<usize>> {
        if self.received.is_empty() {
            if self.reset {
                return Err(reset_error());
            }
            if self.fin {
                return Ok(Some(0));
            }
            self.would_block += 1;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = max.min(self.received.len());
        self.received.drain(..n);
        self.discarded += n as u64;
        Ok(Some(n))
    }
}

/// Takes shared bytes as io_uring's backend does, by their handle, within the same limits as
/// [`Write::write`] (the kernel's copy is the only one here).
impl WriteShared for Socket {
    fn write_shared(&mut self, bytes: SharedBytes) -> io::Result<usize> {
        self.shared_writes += 1;
        self.write(bytes.bytes())
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
        if n > 0 {
            self.total += n as u64;
            self.ends.push_back(self.total);
        }
        Ok(n)
    }

    /// One write of the slices in order, as a socket's `writev`: what fits, and short only when
    /// the socket is full.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.writes += 1;
        if self.reset {
            return Err(reset_error());
        }
        let want = bufs.iter().fold(0usize, |n, b| n.saturating_add(b.len()));
        let mut left =
            want.min(self.config.send_buffer.saturating_sub(self.sent.len())).min(self.config.write_max);
        if left == 0 && want > 0 {
            self.would_block += 1;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let mut n = 0;
        for b in bufs {
            let take = b.len().min(left);
            self.sent.extend_from_slice(&b[..take]);
            (n, left) = (n + take, left - take);
        }
        if n > 0 {
            self.total += n as u64;
            self.ends.push_back(self.total);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The receive buffers of the uring backend (`Shape::Uring` splits what arrives into them).
const URING_RECV: usize = 8 * 1024;

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
    /// Bytes of the stream parsed into commands.
    parsed: u64,
    /// The client's writes not yet wholly parsed: where each ends in the stream, and how many
    /// commands ended in it so far.
    writes: VecDeque<(u64, u64)>,
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
    /// Commands each server read, handshakes included, in the order the servers were given.
    pub per_server: Vec<u64>,
    /// With [`Sim::record_writes`], each write of the client that a server read, in order.
    pub writes: Vec<Written>,
    /// Bytes of replies the client dropped unread (bulk bodies: [`Source::discard`]).
    pub discarded: u64,
    /// Writes of a large value's shared bytes by their handle ([`Link::drain_shared`], which the
    /// uring shape drains with, as the backend does).
    pub shared_writes: u64,
}

/// One write of the client, as the server read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// When the server read it (the simulated server reads at the instant of the write).
    pub at: Time,
    /// Which server, as in [`SimResult::per_server`].
    pub server: usize,
    /// Which socket, numbered as [`Command::conn`].
    pub conn: u64,
    /// How many commands ended in it (a command split over short writes counts in the write
    /// with its last byte).
    pub commands: u64,
}

impl SimResult {
    /// How many commands each write carried, in order, over all sockets and servers.
    pub fn commands_per_write(&self) -> Vec<u64> {
        self.writes.iter().map(|w| w.commands).collect()
    }

    /// The times of `what` for connection `conn`.
    pub fn times(&self, conn: u64, what: Happening) -> Vec<Time> {
        self.log.iter().filter(|(_, c, h)| *c == conn && *h == what).map(|(t, _, _)| *t).collect()
    }

    /// How many times `what` happened, to any connection.
    pub fn count(&self, what: Happening) -> usize {
        self.log.iter().filter(|(_, _, h)| *h == what).count()
    }
}

/// A simulated test: `run`'s clients against one server, or against a server per node.
#[derive(Debug)]
pub struct Sim {
    /// The clock every [`Tally`] of the test reads.
    pub clock: VirtualClock,
    run: TestRun,
    /// The servers, by the address a connect goes to (`None`: any address, the one server).
    servers: Vec<(Option<String>, Server)>,
    interrupt_at: Option<Time>,
    read_buf: usize,
    give_up_at: Time,
    shape: Shape,
    record_writes: bool,
}

impl Sim {
    /// `run` (one event loop: `threads` 1; one node) against `server`, from virtual time zero.
    pub fn new(run: TestRun, server: Server) -> Sim {
        Sim::with_servers(run, vec![(None, server)])
    }

    /// `run` over several nodes (its plan's [`respbench_core::cluster::Cluster`]) against a
    /// server per address (`host:port`, as the nodes' endpoints and the redirects name them):
    /// a connect to an address none has is refused.
    pub fn nodes(run: TestRun, servers: Vec<(String, Server)>) -> Sim {
        Sim::with_servers(run, servers.into_iter().map(|(a, s)| (Some(a), s)).collect())
    }

    fn with_servers(run: TestRun, servers: Vec<(Option<String>, Server)>) -> Sim {
        Sim {
            clock: VirtualClock::new(),
            run,
            servers,
            interrupt_at: None,
            read_buf: READ_BUF,
            give_up_at: Time::MAX,
            shape: Shape::Mio,
            record_writes: false,
        }
    }

    /// Follows `shape`'s way of waiting (mio's by default).
    pub fn shape(mut self, shape: Shape) -> Sim {
        self.shape = shape;
        self
    }

    /// Records every write the servers read in [`SimResult::writes`] (a list that grows with
    /// the run: not for long ones).
    pub fn record_writes(mut self) -> Sim {
        self.record_writes = true;
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

    /// The server a connect to `target` reaches.
    fn server_at(&self, target: &Target) -> Option<usize> {
        let addr = match target {
            Target::Tcp(a) | Target::Mptcp(a) => a.to_string(),
            Target::Unix(p) => p.display().to_string(),
        };
        self.servers.iter().position(|(a, _)| a.as_ref().is_none_or(|a| *a == addr))
    }

    /// Runs the test to its end.
    pub fn run(self) -> Result<SimResult, RunError> {
        assert_eq!(self.run.loops(), 1, "the simulation runs one event loop");
        let targets = resolve_all(&self.run)?;
        let extra = Mutex::new(None);
        let outcome = on_threads(&self.run, &self.clock, |t, start| {
            let tally = Tally::new(&self.run, t, None, &self.clock, start)?;
            let (net, outcome) = match self.shape {
                Shape::Mio | Shape::Uring => {
                    let mut l =
                        TableLoop { table: Table::new(&self.run, t, tally, &targets), net: Net::new(&self) };
                    run_loop(&mut l);
                    let TableLoop { table, mut net } = l;
                    let outcome = table.finish(&mut net);
                    (net, outcome)
                }
                Shape::Smol => {
                    let mut l = SmolLoop::new(&self, tally, &targets);
                    run_loop(&mut l);
                    let SmolLoop { tally, net, .. } = l;
                    (net, tally.finish())
                }
            };
            let stuck = net.slots.iter().filter(|s| s.started && !s.ended).count();
            *extra.lock().unwrap_or_else(|e| e.into_inner()) = Some((
                net.log,
                net.commands,
                net.accepted,
                stuck,
                net.per_server,
                net.writes,
                net.discarded,
                net.shared_writes,
            ));
            Ok(outcome)
        })?;
        let (log, commands, accepted, stuck, per_server, writes, discarded, shared_writes) =
            extra.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or_default();
        let progress = Arc::clone(&self.run.progress);
        let end = self.clock.now();
        Ok(SimResult {
            outcome,
            end,
            log,
            commands,
            accepted,
            stuck,
            progress,
            per_server,
            writes,
            discarded,
            shared_writes,
        })
    }
}

/// A socket the server accepted, and which server.
struct Conn {
    sock: Socket,
    peer: Peer,
    server: usize,
}

/// One slot of the loop: node `n` of the loop's client `c` is slot `c * nodes + n`.
#[derive(Default)]
struct Slot {
    conn: Option<Conn>,
    /// A connect under way: when it completes, and to which server (`None`: refused then).
    connecting: Option<(Time, Option<usize>)>,
    /// The last drain said the socket was full: the server reading from it is a write edge.
    write_blocked: bool,
    /// A socket was opened for it (a node that has not appeared waits).
    started: bool,
    /// [`Next::Ended`]: nothing more happens to it.
    ended: bool,
}

/// The network and the servers' side of a simulated loop: the in-memory sockets of every
/// slot and what each server does with them. As the loop's [`Sockets`], what [`Table`] opens,
/// drains and closes.
struct Net<'a> {
    sim: &'a Sim,
    slots: Vec<Slot>,
    /// Each slot's connection number for the log: client `c`'s node `n` is `c * nodes + n`.
    indices: Vec<u64>,
    buf: Vec<u8>,
    log: Vec<(Time, u64, Happening)>,
    commands: u64,
    accepted: u64,
    per_server: Vec<u64>,
    /// See [`SimResult::writes`].
    writes: Vec<Written>,
    /// See [`SimResult::discarded`].
    discarded: u64,
    /// See [`SimResult::shared_writes`].
    shared_writes: u64,
    /// When each server is free again (one queue each).
    server_free: Vec<Time>,
    /// Each server's outages whose start has been acted on.
    outages_begun: Vec<usize>,
    interrupted: bool,
}

impl<'a> Net<'a> {
    fn new(sim: &'a Sim) -> Net<'a> {
        let nodes = sim.run.plan.nodes() as u64;
        let indices: Vec<u64> =
            sim.run.clients_of(0).iter().flat_map(|&c| (0..nodes).map(move |n| c * nodes + n)).collect();
        let servers = sim.servers.len();
        Net {
            sim,
            slots: indices.iter().map(|_| Slot::default()).collect(),
            indices,
            buf: vec![0; sim.read_buf],
            log: Vec::new(),
            commands: 0,
            accepted: 0,
            per_server: vec![0; servers],
            writes: Vec::new(),
            discarded: 0,
            shared_writes: 0,
            server_free: vec![Time::ZERO; servers],
            outages_begun: vec![0; servers],
            interrupted: false,
        }
    }

    fn now(&self) -> Time {
        self.sim.clock.now()
    }

    fn note(&mut self, i: usize, what: Happening) {
        let now = self.now();
        self.log.push((now, self.indices[i], what));
    }

    /// The interrupt and the servers' outages due by now; `true` if any was.
    fn events(&mut self, now: Time) -> bool {
        let mut any = false;
        if let Some(t) = self.sim.interrupt_at.filter(|&t| t <= now && !self.interrupted) {
            self.interrupted = true;
            self.sim.run.plan.stop.request(t);
            any = true;
        }
        for (s, (_, server)) in self.sim.servers.iter().enumerate() {
            while self.outages_begun[s] < server.outages.len()
                && server.outages[self.outages_begun[s]].0 <= now
            {
                self.outages_begun[s] += 1;
                // Killed: every open socket is reset; what it had not sent is gone.
                for c in self.slots.iter_mut().filter_map(|s| s.conn.as_mut()).filter(|c| c.server == s) {
                    c.peer.done = true;
                    c.peer.outbox.clear();
                    c.peer.outbox.push_back((now, Chunk::Reset));
                }
                any = true;
            }
        }
        any
    }

    /// Whether slot `i`'s connect completes by `now`.
    fn connect_due(&self, i: usize, now: Time) -> bool {
        self.slots[i].connecting.is_some_and(|(t, _)| t <= now)
    }

    /// Slot `i`'s connect completes now: refused while its server is down (or when no server
    /// has its address), else accepted.
    fn finish_connect(&mut self, i: usize) -> io::Result<()> {
        let now = self.now();
        let Some((_, to)) = self.slots[i].connecting.take() else { return Ok(()) };
        let server = to.map(|s| (s, &self.sim.servers[s].1));
        let up = server.filter(|(_, srv)| !srv.outages.iter().any(|&(from, to)| from <= now && now < to));
        let Some((s, srv)) = up else {
            self.note(i, Happening::Refused);
            return Err(io::ErrorKind::ConnectionRefused.into());
        };
        let mut peer = Peer { conn: self.accepted, ..Peer::default() };
        if let Some(greet) = srv.on_accept.as_ref().and_then(|f| f(self.accepted)) {
            peer.act(greet, now, None);
        }
        self.accepted += 1;
        self.slots[i].conn = Some(Conn { sock: Socket::new(srv.socket), peer, server: s });
        Ok(())
    }

    /// [`Shape::Mio`], [`Shape::Smol`]: what arrived on slot `i` by `now` reaches its socket,
    /// and the connection reads it if the shape's readiness says so; `true` if it did.
    fn read_ready(&mut self, i: usize, now: Time, link: &mut Link, node: usize, tally: &mut Tally) -> bool {
        let Some(c) = &mut self.slots[i].conn else { return false };
        let mut arrived = false;
        while c.peer.outbox.front().is_some_and(|(t, _)| *t <= now) {
            let Some((_, chunk)) = c.peer.outbox.pop_front() else { break };
            match chunk {
                Chunk::Bytes(b) => c.sock.deliver(&b),
                Chunk::Fin => c.sock.deliver_fin(),
                Chunk::Reset => c.sock.deliver_reset(),
            }
            arrived = true;
        }
        let (read, hangup) = match self.sim.shape {
            Shape::Smol => (c.sock.unread() > 0 || c.sock.hung_up(), false),
            _ => (arrived, c.sock.hung_up()),
        };
        if read {
            let before = c.sock.discarded;
            link.read(node, &mut c.sock, &mut self.buf, hangup, tally);
            self.discarded += c.sock.discarded - before;
        }
        read
    }

    /// [`Shape::Uring`]: what arrived on slot `i` by `now`, as receive completions (a buffer of
    /// at most [`URING_RECV`] bytes, the end of the stream, an error), with the socket's number.
    fn completions(&mut self, i: usize, now: Time) -> (u64, Vec<Chunk>) {
        let Some(c) = &mut self.slots[i].conn else { return (0, Vec::new()) };
        let mut due = Vec::new();
        while c.peer.outbox.front().is_some_and(|(t, _)| *t <= now) {
            due.extend(c.peer.outbox.pop_front().map(|(_, c)| c));
        }
        (c.peer.conn, due)
    }

    /// Hands one receive completion of socket `conn` to slot `i`'s connection; `false` when
    /// the socket was closed meanwhile (its late completions only give their buffers back).
    fn complete(
        &mut self,
        i: usize,
        conn: u64,
        d: &mut Delivered,
        link: &mut Link,
        node: usize,
        tally: &mut Tally,
    ) -> bool {
        let Some(c) = self.slots[i].conn.as_mut().filter(|c| c.peer.conn == conn) else { return false };
        if matches!(d, Delivered::Failed(_)) {
            c.sock.deliver_reset();
        }
        link.read(node, d, &mut self.buf, false, tally);
        true
    }

    /// The next time anything on the network happens: a reply's arrival, a connect's end, an
    /// outage, the interrupt.
    fn next_time(&self) -> Option<Time> {
        let replies = self.slots.iter().filter_map(|s| s.conn.as_ref()?.peer.outbox.front().map(|(t, _)| *t));
        let connects = self.slots.iter().filter_map(|s| s.connecting.map(|(t, _)| t));
        let outages = self
            .sim
            .servers
            .iter()
            .zip(&self.outages_begun)
            .filter_map(|((_, s), &k)| s.outages.get(k).map(|o| o.0));
        let interrupt = self.sim.interrupt_at.filter(|_| !self.interrupted);
        replies.chain(connects).chain(outages).chain(interrupt).min()
    }

    /// Slot `i`'s server reads its socket's bytes and queues its answers; `true` if it read any.
    fn serve(&mut self, i: usize) -> bool {
        let now = self.now();
        let Some(c) = &mut self.slots[i].conn else { return false };
        let server = &self.sim.servers[c.server].1;
        let (sock, peer) = (&mut c.sock, &mut c.peer);
        if peer.done || sock.sent.is_empty() {
            return false;
        }
        peer.inbox.append(&mut sock.sent);
        peer.writes.extend(sock.ends.drain(..).map(|end| (end, 0)));
        while let Some((args, used)) = parse_command(&peer.inbox) {
            peer.inbox.drain(..used);
            peer.parsed += used as u64;
            let parsed = peer.parsed;
            if let Some(w) = peer.writes.iter_mut().find(|(end, _)| *end >= parsed) {
                w.1 += 1;
            }
            while peer.writes.front().is_some_and(|(end, _)| *end <= parsed) {
                let Some((_, n)) = peer.writes.pop_front() else { break };
                if self.sim.record_writes {
                    self.writes.push(Written { at: now, server: c.server, conn: peer.conn, commands: n });
                }
            }
            let cmd =
                Command { conn: peer.conn, index: peer.index, global: self.commands, at: now, args: &args };
            let action = (server.script)(&cmd);
            peer.index += 1;
            self.commands += 1;
            self.per_server[c.server] += 1;
            let free = &mut self.server_free[c.server];
            let mut start = if server.parallel { now } else { now.max(*free) };
            for &(from, to) in &server.stalls {
                if start >= from && start < to {
                    start = to;
                }
            }
            let done = start + server.service;
            if !server.parallel {
                *free = done;
            }
            if peer.act(action, done, server.segments) {
                break;
            }
        }
        true
    }

    /// What the loop learns from a drain of slot `i`.
    fn drained(&mut self, i: usize, next: Next) {
        match next {
            Next::Wait { write_blocked } => self.slots[i].write_blocked = write_blocked,
            Next::Reconnect => self.note(i, Happening::Reconnect),
            Next::Ended => {
                self.slots[i].ended = true;
                self.note(i, Happening::Ended);
            }
            Next::Down => self.note(i, Happening::Down),
        }
    }
}

impl Sockets for Net<'_> {
    /// Starts a connect of slot `i`: it completes [`Server::connect_delay`] later (at once:
    /// in the loop's next pass at this instant).
    fn open(&mut self, i: usize, target: io::Result<Target>) -> io::Result<()> {
        self.note(i, Happening::Connect);
        self.slots[i].started = true;
        let server = self.sim.server_at(&target?);
        let delay = server.map_or(Duration::ZERO, |s| self.sim.servers[s].1.connect_delay);
        let now = self.now();
        let slot = &mut self.slots[i];
        slot.write_blocked = false;
        slot.connecting = Some((now + delay, server));
        Ok(())
    }

    fn drain(&mut self, i: usize, link: &mut Link, node: usize, tally: &mut Tally) -> Next {
        let next = match self.slots[i].conn.as_mut() {
            // As the backend: a large value's bytes by their handle.
            Some(c) if self.sim.shape == Shape::Uring => {
                let before = c.sock.shared_writes;
                let next = link.drain_shared(node, Some(&mut c.sock), tally);
                self.shared_writes += c.sock.shared_writes - before;
                next
            }
            c => link.drain(node, c.map(|c| &mut c.sock), tally),
        };
        self.drained(i, next);
        next
    }

    fn close(&mut self, i: usize, _reset: bool) {
        let slot = &mut self.slots[i];
        slot.conn = None;
        slot.write_blocked = false;
        slot.connecting = None;
    }
}

/// What the shared parts of a simulated loop need of the loop that waits as a backend does.
trait Waits<'a> {
    /// The network and the servers.
    fn net(&mut self) -> &mut Net<'a>;
    /// The network, slot `i`'s client and node, and the tally.
    fn parts(&mut self, i: usize) -> (&mut Net<'a>, &mut Link, usize, &mut Tally);
    /// The drain rule on slot `i` and what the loop does about its outcome, then on the slots
    /// of its client it woke.
    fn drain(&mut self, i: usize);
    /// The backend's own part of one pass at `now` (timers, the stop); `true` if anything
    /// happened.
    fn wake(&mut self, now: Time) -> bool;
    /// The earliest of the loop's own times (timers, the watch).
    fn next_own(&self, now: Time) -> Option<Time>;
    /// Starts the loop: opens the sockets of the known nodes.
    fn start(&mut self);
    /// Whether a slot has not ended yet.
    fn is_open(&self) -> bool;
}

/// Runs a loop until every connection ended or nothing more can happen.
fn run_loop<'a>(l: &mut impl Waits<'a>) {
    l.start();
    while l.is_open() {
        // Everything that can happen at this instant, until nothing more does; a loop that
        // never runs out of work at one instant is a busy loop on a real backend too.
        let mut passes = 0u32;
        while step(l) {
            passes += 1;
            assert!(passes < 1_000_000, "busy loop at {:?}", l.net().now());
        }
        if !l.is_open() {
            break;
        }
        let now = l.net().now();
        let Some(next) = l.net().next_time().into_iter().chain(l.next_own(now)).map(|t| t.max(now)).min()
        else {
            break;
        };
        if next >= l.net().sim.give_up_at {
            break;
        }
        l.net().sim.clock.advance_to(next);
    }
}

/// One pass over what is due now; `true` if anything happened.
fn step<'a>(l: &mut impl Waits<'a>) -> bool {
    let now = l.net().now();
    let mut any = l.net().events(now);
    let slots = l.net().slots.len();
    for i in 0..slots {
        if l.net().connect_due(i, now) {
            any = true;
            let done = l.net().finish_connect(i);
            let (_, link, n, tally) = l.parts(i);
            match done {
                Ok(()) => link.connected(n, tally),
                Err(e) => link.connect_failed(n, &e, tally),
            }
            l.drain(i);
        }
    }
    // Read edges (or completions): what arrived by now.
    let uring = l.net().sim.shape == Shape::Uring;
    for i in 0..slots {
        if uring {
            let (conn, due) = l.net().completions(i, now);
            any |= !due.is_empty();
            'socket: for chunk in &due {
                let pieces: Vec<Delivered> = match chunk {
                    Chunk::Bytes(b) => b.chunks(URING_RECV).map(Delivered::Bytes).collect(),
                    Chunk::Fin => vec![Delivered::End],
                    Chunk::Reset => vec![Delivered::Failed(RESET)],
                };
                for mut d in pieces {
                    let (net, link, n, tally) = l.parts(i);
                    if !net.complete(i, conn, &mut d, link, n, tally) {
                        break 'socket;
                    }
                    l.drain(i);
                }
            }
            continue;
        }
        let (net, link, n, tally) = l.parts(i);
        if net.read_ready(i, now, link, n, tally) {
            any = true;
            l.drain(i);
        }
    }
    // The servers read what was written; a socket that was full gets its write edge.
    for i in 0..slots {
        if l.net().serve(i) {
            any = true;
            if l.net().slots[i].write_blocked {
                l.drain(i);
            }
        }
    }
    l.wake(now) | any
}

/// [`Shape::Mio`] and [`Shape::Uring`]: the backends' own loop skeleton, [`Table`], over the
/// in-memory sockets.
struct TableLoop<'a> {
    table: Table<'a>,
    net: Net<'a>,
}

impl<'a> Waits<'a> for TableLoop<'a> {
    fn net(&mut self) -> &mut Net<'a> {
        &mut self.net
    }

    fn parts(&mut self, i: usize) -> (&mut Net<'a>, &mut Link, usize, &mut Tally) {
        let (link, n, tally) = self.table.link(i);
        (&mut self.net, link, n, tally)
    }

    fn drain(&mut self, i: usize) {
        self.table.drain(i, &mut self.net);
    }

    fn wake(&mut self, now: Time) -> bool {
        let due = self.table.next_timer().is_some_and(|t| t <= now);
        self.table.after_wait(&mut self.net);
        due
    }

    fn next_own(&self, now: Time) -> Option<Time> {
        self.table.next_timer().into_iter().chain(Watch::next_event(self.table.tally.plan(), now)).min()
    }

    fn start(&mut self) {
        self.table.start(&mut self.net);
    }

    fn is_open(&self) -> bool {
        self.table.is_open()
    }
}

/// [`Shape::Smol`]: a task per client that waits on one timer of its own for the earliest
/// [`Link::timer`] of its nodes (and then has every node look at its times), and a publisher
/// that nudges them all.
struct SmolLoop<'a> {
    net: Net<'a>,
    links: Vec<Link>,
    nodes: usize,
    targets: &'a [Target],
    tally: Tally,
    timers: Timers,
    watch: Watch,
    /// Slots to drain next: nodes of a client that queued requests for them.
    wakes: Vec<usize>,
    /// Slots not yet ended.
    open: usize,
    /// When the publisher looks next.
    next_publish: Time,
}

impl<'a> SmolLoop<'a> {
    fn new(sim: &'a Sim, tally: Tally, targets: &'a [Target]) -> SmolLoop<'a> {
        let links: Vec<Link> = sim.run.clients_of(0).into_iter().map(|c| Link::new(&tally, c)).collect();
        let nodes = sim.run.plan.nodes();
        let net = Net::new(sim);
        SmolLoop {
            timers: Timers::new(links.len()),
            net,
            links,
            nodes,
            targets,
            tally,
            watch: Watch::default(),
            wakes: Vec::new(),
            open: 0,
            next_publish: Time::ZERO,
        }
    }

    /// When the publisher wakes next, from now: in [`PUBLISH_EVERY`], or at the test's stop
    /// or abandon time if sooner.
    fn publisher_wakes(&self) -> Time {
        let now = self.tally.now();
        let tick = now + PUBLISH_EVERY;
        Watch::next_event(self.tally.plan(), now).map_or(tick, |t| t.min(tick))
    }

    /// The nodes of client `c` with a socket that has not ended.
    fn live(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes).filter(move |&n| {
            let s = &self.net.slots[c * self.nodes + n];
            s.started && !s.ended
        })
    }

    /// A task looks at its nodes' timeouts after each drain; it sleeps on a timer only for
    /// what `timer` keeps (the stop comes with the publisher's nudge).
    fn schedule(&mut self, i: usize) {
        let c = i / self.nodes;
        let (link, now) = (&self.links[c], self.tally.now());
        let due = self.live(c).filter_map(|n| link.timeout(n)).min();
        let at = if due.is_some_and(|t| t <= now) {
            Some(now)
        } else {
            self.live(c).filter_map(|n| link.timer(n, self.tally.plan())).min()
        };
        self.timers.schedule(c, at);
    }

    /// Client `c`'s timer fired or it was nudged: each of its nodes looks at its own times,
    /// then each is drained (the last first, as the task's stack of nodes to drain has it).
    fn on_timer(&mut self, c: usize) {
        let live: Vec<usize> = self.live(c).collect();
        for &n in &live {
            self.links[c].on_timeout(n, &mut self.tally);
        }
        for &n in live.iter().rev() {
            self.drain(c * self.nodes + n);
        }
    }

    fn start_one(&mut self, i: usize) {
        self.open += 1;
        self.connect(i);
    }

    fn connect(&mut self, i: usize) {
        let (link, n) = (&mut self.links[i / self.nodes], i % self.nodes);
        link.connecting(n, &self.tally);
        let target = link.target(n, self.targets, &mut self.tally);
        if let Err(e) = self.net.open(i, target) {
            link.connect_failed(n, &e, &self.tally);
        }
        // The drain a backend makes after starting a connect: nothing to write yet.
        self.drain_one(i);
    }

    fn drain_one(&mut self, i: usize) {
        let (c, n) = (i / self.nodes, i % self.nodes);
        if !self.net.slots[i].started {
            // Kept for a node that has not appeared: opened once it has.
            if !self.links[c].is_dormant(n) {
                self.start_one(i);
            }
            return;
        }
        let link = &mut self.links[c];
        let next = self.net.drain(i, link, n, &mut self.tally);
        while let Some(w) = link.poll_wake() {
            self.wakes.push(c * self.nodes + w);
        }
        match next {
            Next::Wait { .. } => self.schedule(i),
            Next::Reconnect => {
                self.close(i);
                self.connect(i);
            }
            Next::Ended => {
                self.close(i);
                self.open -= 1;
            }
            Next::Down => {
                self.close(i);
                self.schedule(i);
            }
        }
    }

    fn close(&mut self, i: usize) {
        let reset = self.links[i / self.nodes].must_reset(i % self.nodes);
        self.net.close(i, reset);
        self.links[i / self.nodes].disconnected(i % self.nodes);
    }
}

impl<'a> Waits<'a> for SmolLoop<'a> {
    fn net(&mut self) -> &mut Net<'a> {
        &mut self.net
    }

    fn parts(&mut self, i: usize) -> (&mut Net<'a>, &mut Link, usize, &mut Tally) {
        (&mut self.net, &mut self.links[i / self.nodes], i % self.nodes, &mut self.tally)
    }

    fn drain(&mut self, i: usize) {
        self.drain_one(i);
        while let Some(j) = self.wakes.pop() {
            self.drain_one(j);
        }
    }

    fn wake(&mut self, now: Time) -> bool {
        let mut any = false;
        if now >= self.next_publish {
            self.tally.publish();
            if self.watch.changed(self.tally.plan(), now) {
                any = true;
                // The nudge: every waiting task looks again.
                for c in 0..self.links.len() {
                    self.on_timer(c);
                }
            }
            self.next_publish = self.publisher_wakes();
        }
        while let Some(c) = self.timers.pop_due(now) {
            any = true;
            if let Some(at) = self.links[c].waits_until() {
                // A clients ramp: the task slept to its step (smol's backend, before its loop).
                if at <= now {
                    for n in 0..self.nodes {
                        self.links[c].on_timeout(n, &mut self.tally);
                    }
                }
                match self.links[c].waits_until() {
                    None => {
                        let open: Vec<usize> =
                            (0..self.nodes).filter(|&n| !self.links[c].is_dormant(n)).collect();
                        for n in open {
                            self.start_one(c * self.nodes + n);
                        }
                    }
                    Some(at) if at != Time::MAX && !self.tally.plan().stop.is_due(now) => {
                        self.timers.schedule(c, Some(at))
                    }
                    Some(_) => {}
                }
                continue;
            }
            let link = &self.links[c];
            if self.live(c).any(|n| link.timeout(n).is_some_and(|t| t <= now)) {
                self.on_timer(c);
            } else {
                // Moved later since: wait for the new time.
                self.schedule(c * self.nodes);
            }
        }
        any
    }

    fn next_own(&self, _now: Time) -> Option<Time> {
        self.timers.next().into_iter().chain(Some(self.next_publish)).min()
    }

    fn start(&mut self) {
        for i in 0..self.net.slots.len() {
            let link = &self.links[i / self.nodes];
            if !link.is_dormant(i % self.nodes) {
                self.start_one(i);
            } else if let Some(at) = link.waits_until().filter(|&t| t != Time::MAX) {
                // A clients ramp: the client's task sleeps until its step.
                self.timers.schedule(i / self.nodes, Some(at));
            }
        }
        self.next_publish = self.publisher_wakes();
    }

    fn is_open(&self) -> bool {
        self.open > 0
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
        mptcp: false,
        progress: Arc::new(Progress::default()),
        locate: None,
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
