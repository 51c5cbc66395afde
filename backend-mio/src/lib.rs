//! respbench-mio: drives respbench connections from single-threaded mio event loops.
//!
//! `--threads N` runs N loops that share nothing: connection `i` lives on loop `i % N` for the
//! whole test. Each socket is registered once, edge-triggered, for both directions, so the steady
//! state costs no `epoll_ctl` at all. A loop moves bytes and time between its sockets and their
//! [`Link`]s (respbench-driver) and holds no protocol logic: the drain rule is the driver's.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Token};
use respbench_core::{Outcome, RunError, TestRun, Time};
use respbench_driver::{
    on_threads, resolve_all, Link, Next, Tally, Target, Timers, Tls, Watch, PUBLISH_EVERY, READ_BUF,
};

mod timerfd;

use timerfd::TimerFd;

/// Runs one test on `run.loops()` event loops and merges what they recorded. `epoch` is the
/// run's time origin: every loop converts its clock readings against it.
pub fn run_test(run: &TestRun, tls: Option<&Tls>, epoch: Instant) -> Result<Outcome, RunError> {
    let targets = resolve_all(run)?;
    on_threads(run, epoch, |t, start| Loop::new(run, tls, &targets, t, epoch, start)?.run())
}

/// A connected or connecting socket.
enum Sock {
    /// TCP, with `TCP_NODELAY` once connected.
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    /// Starts a non-blocking connect.
    fn connect(target: &Target) -> io::Result<Sock> {
        Ok(match target {
            Target::Tcp(a) => Sock::Tcp(TcpStream::connect(*a)?),
            Target::Unix(p) => Sock::Unix(UnixStream::connect(p)?),
        })
    }

    fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Sock::Tcp(s) => s,
            Sock::Unix(s) => s,
        }
    }

    /// After readiness on a connecting socket: `Ok(true)` once connected.
    fn finish_connect(&mut self) -> io::Result<bool> {
        let (err, peer) = match self {
            Sock::Tcp(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
            Sock::Unix(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
        };
        if let Some(e) = err {
            return Err(e);
        }
        match peer {
            Ok(()) => {
                if let Sock::Tcp(s) = self {
                    s.set_nodelay(true)?;
                }
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One socket of a client: slot `c * nodes + n` is node `n` of the loop's client `c`.
struct Slot {
    sock: Option<Sock>,
    /// The connect has completed.
    connected: bool,
    /// A socket was opened for it (a connection kept for a node that has not appeared waits).
    started: bool,
}

struct Loop<'a> {
    /// Each node's address (one without several nodes).
    targets: &'a [Target],
    /// Slots to drain next: connections of a client that queued requests for them.
    wakes: Vec<usize>,
    poll: Poll,
    /// The loop's clients.
    links: Vec<Link>,
    /// Sockets per client.
    nodes: usize,
    slots: Vec<Slot>,
    tally: Tally,
    /// Connections not yet ended.
    open: usize,
    /// Connections' timeouts.
    timers: Timers,
    /// Sub-millisecond wake-ups (`None` if the kernel refused one: millisecond polls then).
    timerfd: Option<TimerFd>,
    watch: Watch,
}

impl<'a> Loop<'a> {
    fn new(
        run: &'a TestRun,
        tls: Option<&Tls>,
        targets: &'a [Target],
        t: usize,
        epoch: Instant,
        start: Time,
    ) -> Result<Self, RunError> {
        let poll = Poll::new().map_err(|e| RunError::Setup(e.to_string()))?;
        let tally = Tally::new(run, t, tls, epoch, start)?;
        let links: Vec<Link> = run.clients_of(t).into_iter().map(|c| Link::new(&tally, c)).collect();
        let nodes = run.plan.nodes();
        let slots: Vec<Slot> =
            (0..links.len() * nodes).map(|_| Slot { sock: None, connected: false, started: false }).collect();
        // Only schedules and deadlines need a timer; closed-loop runs without --timeout or
        // --duration have none.
        let plan = &run.plan;
        let timed =
            plan.conn.open_loop.is_some() || plan.conn.request_timeout.is_some() || plan.stop.at().is_some();
        let timerfd = if timed { TimerFd::new(&poll).ok() } else { None };
        Ok(Loop {
            targets,
            wakes: Vec::new(),
            poll,
            // Counted as they start.
            open: 0,
            timers: Timers::new(slots.len()),
            links,
            nodes,
            slots,
            tally,
            timerfd,
            watch: Watch::default(),
        })
    }

    fn run(mut self) -> Result<Outcome, RunError> {
        for i in 0..self.slots.len() {
            let (c, n) = self.at(i);
            if !self.links[c].is_dormant(n) {
                self.start(i);
            }
        }
        let mut events = Events::with_capacity(1024);
        let mut buf = vec![0u8; READ_BUF];
        let mut last_publish = Instant::now();
        while self.open > 0 {
            let timeout = self.next_timeout();
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(RunError::EventLoop(e.to_string()));
                }
            }
            for ev in events.iter() {
                let i = ev.token().0;
                if i < self.slots.len() {
                    // A peer's FIN (or an error) may come in the same edge as its last bytes.
                    let hangup = ev.is_read_closed() || ev.is_error();
                    self.on_ready(i, &mut buf, ev.is_readable(), hangup);
                }
            }
            let now = self.tally.now();
            if self.watch.changed(self.tally.plan(), now) {
                // A stop asked for, or the budget spent: timeouts taken earlier are out of date.
                for i in 0..self.slots.len() {
                    self.schedule(i);
                }
            }
            // Schedules and deadlines are due whether or not a socket woke us.
            self.fire_timers();
            if last_publish.elapsed() >= PUBLISH_EVERY {
                last_publish = Instant::now();
                self.tally.publish();
            }
        }
        Ok(self.tally.finish())
    }

    /// How long poll may sleep: until the earliest timer (which the timerfd then signals to the
    /// microsecond), and never so long that the stop goes unseen.
    fn next_timeout(&mut self) -> Duration {
        let Some(at) = self.timers.next() else { return PUBLISH_EVERY };
        let wait = at.saturating_since(self.tally.now());
        if wait.is_zero() || wait >= PUBLISH_EVERY {
            return wait.min(PUBLISH_EVERY);
        }
        let armed = self.timerfd.as_mut().is_some_and(|t| t.arm(at, wait));
        // Without a timerfd, millisecond polls (mio rounds up).
        if armed {
            PUBLISH_EVERY
        } else {
            wait
        }
    }

    /// The client and node of slot `i`.
    fn at(&self, i: usize) -> (usize, usize) {
        (i / self.nodes, i % self.nodes)
    }

    /// Wakes slot `i` at its connection's timeout.
    fn schedule(&mut self, i: usize) {
        let (c, n) = self.at(i);
        self.timers.schedule(i, self.links[c].timeout(n));
    }

    /// Calls `on_timeout` on every connection whose time has come.
    fn fire_timers(&mut self) {
        let now = self.tally.now();
        while let Some(i) = self.timers.pop_due(now) {
            let (c, n) = self.at(i);
            if self.links[c].timeout(n).is_some_and(|t| t <= now) {
                self.links[c].on_timeout(n, &mut self.tally);
                self.drain(i);
            } else {
                // Moved later since (a reply arrived, a request went out): wait for the new time.
                self.schedule(i);
            }
        }
    }

    /// Opens slot `i`'s first socket.
    fn start(&mut self, i: usize) {
        self.slots[i].started = true;
        self.open += 1;
        self.connect(i);
    }

    fn connect(&mut self, i: usize) {
        let (c, n) = self.at(i);
        let link = &mut self.links[c];
        let slot = &mut self.slots[i];
        slot.connected = false;
        link.connecting(n, &self.tally);
        let opened = link.target(n, self.targets).and_then(|t| Sock::connect(&t)).and_then(
            |mut sock| {
                self.poll.registry().register(
                    sock.source(),
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                )?;
                Ok(sock)
            },
        );
        match opened {
            Ok(sock) => slot.sock = Some(sock),
            Err(e) => link.connect_failed(n, &e),
        }
        self.drain(i);
    }

    /// Acts on readiness of slot `i`; `hangup` when the event also said the peer closed or the
    /// socket failed, so that reading must go on to the end of the stream.
    fn on_ready(&mut self, i: usize, buf: &mut [u8], readable: bool, hangup: bool) {
        let (c, n) = self.at(i);
        let link = &mut self.links[c];
        let slot = &mut self.slots[i];
        let Some(sock) = slot.sock.as_mut() else { return };
        if !slot.connected {
            match sock.finish_connect() {
                Ok(true) => {
                    slot.connected = true;
                    link.connected(n, &mut self.tally);
                    // The server may have spoken (or closed: Redis at maxclients) in the edge
                    // that completed the connect; no new edge would tell us.
                }
                Ok(false) => return,
                Err(e) => link.connect_failed(n, &e),
            }
        }
        if slot.connected && (readable || hangup) {
            link.read(n, sock, buf, hangup, &mut self.tally);
        }
        self.drain(i);
    }

    /// The drain rule on slot `i`, then on the slots of its client it woke.
    fn drain(&mut self, i: usize) {
        self.drain_one(i);
        while let Some(j) = self.wakes.pop() {
            self.drain_one(j);
        }
    }

    /// The drain rule, and what the loop does about its outcome.
    fn drain_one(&mut self, i: usize) {
        let (c, n) = self.at(i);
        if !self.slots[i].started {
            // Kept for a node that has not appeared: woken when it has.
            if !self.links[c].is_dormant(n) {
                self.start(i);
            }
            return;
        }
        let link = &mut self.links[c];
        let next = link.drain(n, self.slots[i].sock.as_mut(), &mut self.tally);
        while let Some(w) = link.poll_wake() {
            self.wakes.push(c * self.nodes + w);
        }
        match next {
            Next::Wait { .. } => self.schedule(i),
            Next::Reconnect => {
                self.close(i);
                self.connect(i); // drains the new socket
            }
            Next::Ended => {
                self.close(i);
                self.open -= 1;
            }
            // --reconnect: the socket goes; the timer brings the connection back.
            Next::Down => {
                self.close(i);
                self.schedule(i);
            }
        }
    }

    fn close(&mut self, i: usize) {
        let (c, n) = self.at(i);
        let slot = &mut self.slots[i];
        if let Some(mut sock) = slot.sock.take() {
            let _ = self.poll.registry().deregister(sock.source());
        }
        slot.connected = false;
        self.links[c].disconnected(n);
    }
}
