//! respbench-mio: drives respbench connections from single-threaded mio event loops.
//!
//! `--threads N` runs N loops that share nothing: connection `i` lives on loop `i % N` for the
//! whole test. Each socket is registered once, edge-triggered, for both directions, so the steady
//! state costs no `epoll_ctl` at all. A loop moves bytes and time between its sockets and their
//! [`Link`]s (respbench-driver) and holds no protocol logic: the drain rule is the driver's.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Token};
use respbench_core::{Outcome, RunError, Time};
use respbench_driver::{
    on_threads, resolve_all, Link, Next, Table, Tally, Target, TestRun, Tls, PUBLISH_EVERY, READ_BUF,
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
            Target::Mptcp(a) => Sock::Tcp(TcpStream::from_std(respbench_driver::connect_tcp(*a, true)?)),
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
                    s.set_nodelay(true).or_else(respbench_driver::nodelay_unsupported)?;
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

/// Bulk bodies that nothing reads are dropped in the kernel (`MSG_TRUNC`).
impl respbench_driver::Source for Sock {
    fn discard(&mut self, max: usize) -> io::Result<Option<usize>> {
        use respbench_driver::{discard_fd, SocketKind};
        match self {
            Sock::Tcp(s) => discard_fd(s.as_raw_fd(), SocketKind::Tcp, max),
            Sock::Unix(s) => discard_fd(s.as_raw_fd(), SocketKind::Unix, max),
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

    /// One `writev`: a request's header, its large value and the CRLF together.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write_vectored(bufs),
            Sock::Unix(s) => s.write_vectored(bufs),
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
}

/// The loop's sockets, registered once with its poll.
struct Sockets {
    poll: Poll,
    slots: Vec<Slot>,
}

impl respbench_driver::Sockets for Sockets {
    fn open(&mut self, i: usize, target: io::Result<Target>) -> io::Result<()> {
        let slot = &mut self.slots[i];
        slot.connected = false;
        let mut sock = Sock::connect(&target?)?;
        self.poll.registry().register(sock.source(), Token(i), Interest::READABLE | Interest::WRITABLE)?;
        slot.sock = Some(sock);
        Ok(())
    }

    fn drain(&mut self, i: usize, link: &mut Link, node: usize, tally: &mut Tally) -> Next {
        link.drain(node, self.slots[i].sock.as_mut(), tally)
    }

    fn close(&mut self, i: usize, reset: bool) {
        let slot = &mut self.slots[i];
        if let Some(mut sock) = slot.sock.take() {
            let _ = self.poll.registry().deregister(sock.source());
            if let (true, Sock::Tcp(s)) = (reset, &sock) {
                linger_zero(s.as_raw_fd());
            }
        }
        slot.connected = false;
    }
}

struct Loop<'a> {
    table: Table<'a>,
    io: Sockets,
    /// Sub-millisecond wake-ups (`None` if the kernel refused one: millisecond polls then).
    timerfd: Option<TimerFd>,
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
        let table = Table::new(run, t, tally, targets);
        let slots = (0..table.slots()).map(|_| Slot { sock: None, connected: false }).collect();
        // Only schedules and deadlines need a timer; closed-loop runs without --timeout,
        // --connect-timeout or --duration have none.
        let plan = &run.plan;
        let timed = plan.conn.open_loop.is_some()
            || plan.conn.request_timeout.is_some()
            || plan.stop.at().is_some()
            || plan.conn.connect_timeout.is_some();
        let timerfd = if timed { TimerFd::new(&poll).ok() } else { None };
        Ok(Loop { table, io: Sockets { poll, slots }, timerfd })
    }

    fn run(mut self) -> Result<Outcome, RunError> {
        self.table.start(&mut self.io);
        let mut events = Events::with_capacity(1024);
        let mut buf = vec![0u8; READ_BUF];
        while self.table.is_open() {
            let timeout = self.next_timeout();
            if let Err(e) = self.io.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(RunError::EventLoop(e.to_string()));
                }
            }
            for ev in events.iter() {
                let i = ev.token().0;
                if i < self.io.slots.len() {
                    // A peer's FIN (or an error) may come in the same edge as its last bytes.
                    let hangup = ev.is_read_closed() || ev.is_error();
                    self.on_ready(i, &mut buf, ev.is_readable(), hangup);
                }
            }
            self.table.after_wait(&mut self.io);
        }
        Ok(self.table.finish(&mut self.io))
    }

    /// How long poll may sleep: until the earliest timer (which the timerfd then signals to the
    /// microsecond), and never so long that the stop goes unseen.
    fn next_timeout(&mut self) -> Duration {
        let Some(at) = self.table.next_timer() else { return PUBLISH_EVERY };
        let wait = at.saturating_since(self.table.tally.now());
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

    /// Acts on readiness of slot `i`; `hangup` when the event also said the peer closed or the
    /// socket failed, so that reading must go on to the end of the stream.
    fn on_ready(&mut self, i: usize, buf: &mut [u8], readable: bool, hangup: bool) {
        let (link, n, tally) = self.table.link(i);
        let slot = &mut self.io.slots[i];
        let Some(sock) = slot.sock.as_mut() else { return };
        if !slot.connected {
            match sock.finish_connect() {
                Ok(true) => {
                    slot.connected = true;
                    link.connected(n, tally);
                    // The server may have spoken (or closed: Redis at maxclients) in the edge
                    // that completed the connect; no new edge would tell us.
                }
                Ok(false) => return,
                Err(e) => link.connect_failed(n, &e, tally),
            }
        }
        if slot.connected && (readable || hangup) {
            link.read(n, sock, buf, hangup, tally);
        }
        self.table.drain(i, &mut self.io);
    }
}

/// Makes closing `fd` reset the connection (`SO_LINGER` 0): what it carried is dropped by both
/// kernels instead of being retransmitted to a server that would run it later.
fn linger_zero(fd: std::os::fd::RawFd) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: a valid socket and a linger struct of the size given; a failure leaves a normal
    // close.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}
