//! respbench-mio: drives respbench-core connections from single-threaded mio event loops.
//!
//! One loop per thread; each socket is registered once, edge-triggered, for both directions, so
//! the steady state costs no `epoll_ctl` at all. The loop moves bytes and time between sockets and
//! [`Connection`]s and holds no protocol logic: it follows the core's drain rule.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use respbench_core::run::{connect_error, io_error, Published};
use respbench_core::{Connection, Event, Outcome, Stats, TestRun, Time};

pub mod net;

use net::{resolve, Sock, Target};

/// One read buffer per loop serves every connection: the core's parser keeps no bytes.
const READ_BUF: usize = 64 * 1024;
/// How often a loop publishes its figures and looks at the stop controls.
const PUBLISH_EVERY: Duration = Duration::from_millis(50);
/// The token of a loop's timerfd; connections are tokens `0..slots`.
const TIMER: Token = Token(usize::MAX);

/// A `timerfd` registered in the loop's poll: `epoll_wait` counts whole milliseconds, which would
/// send open-loop requests up to a millisecond late and count that as latency.
struct TimerFd {
    fd: OwnedFd,
    /// The time it is armed for (`Time::MAX`: not armed).
    armed: Time,
}

impl TimerFd {
    fn new(poll: &Poll) -> io::Result<TimerFd> {
        // SAFETY: plain syscall; the descriptor it returns is owned from here on.
        let fd =
            unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        poll.registry().register(&mut mio::unix::SourceFd(&fd.as_raw_fd()), TIMER, Interest::READABLE)?;
        Ok(TimerFd { fd, armed: Time::MAX })
    }

    /// Arms the timer to fire `after` from now, for the schedule time `at`. Re-arming also
    /// clears a past expiry, so the descriptor never needs a read.
    fn arm(&mut self, at: Time, after: Duration) -> bool {
        if self.armed == at {
            return true;
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                // A zero it_value disarms: at least one nanosecond.
                tv_nsec: after.subsec_nanos().max(u32::from(after.as_secs() == 0)) as libc::c_long,
            },
        };
        // SAFETY: a valid timerfd and a fully initialised itimerspec.
        let ok = unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } == 0;
        self.armed = if ok { at } else { Time::MAX };
        ok
    }
}

/// Runs one test on `run.threads` event loops and merges what they recorded. `epoch` is the
/// run's time origin: every loop converts its clock readings against it.
pub fn run_test(run: &TestRun, epoch: Instant) -> Result<Outcome, String> {
    on_threads(run, epoch, |target, indices, start| Loop::new(run, target, indices, epoch, start)?.run())
}

/// The frame both backends share: resolves the endpoint once, runs `each` for every event loop
/// on a thread of its own (loop `t` drives `run.connections_of(t)`; `start` is the test's
/// start, the same for all), and merges what the loops recorded.
pub fn on_threads<F>(run: &TestRun, epoch: Instant, each: F) -> Result<Outcome, String>
where
    F: Fn(Target, &[u64], Time) -> Result<Outcome, String> + Sync,
{
    let target = resolve(&run.endpoint)?;
    let start = Time::since(epoch, Instant::now());
    let results: Vec<Result<Outcome, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..run.loops())
            .map(|t| {
                let indices = run.connections_of(t);
                let target = target.clone();
                let each = &each;
                s.spawn(move || each(target, &indices, start))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("event loop panicked".into()))).collect()
    });
    Outcome::merge_all(results)
}

struct Slot {
    conn: Connection,
    sock: Option<Sock>,
    connected: bool,
    /// Counted in `Progress::live`.
    live: bool,
    /// The time of this slot's entry in the timer heap (`Time::MAX`: none).
    timer_at: Time,
}

struct Loop<'a> {
    run: &'a TestRun,
    target: Target,
    epoch: Instant,
    poll: Poll,
    slots: Vec<Slot>,
    stats: Stats,
    failures: Vec<(String, u64)>,
    open: usize,
    /// What `publish` has added to the run's `Progress`.
    published: Published,
    /// Connections' `poll_timeout`s, earliest first; an entry whose time is no longer its slot's
    /// `timer_at` is stale and skipped.
    timers: BinaryHeap<Reverse<(Time, usize)>>,
    /// Sub-millisecond wake-ups (`None` if the kernel refused one: millisecond polls then).
    timerfd: Option<TimerFd>,
    /// Whether every slot was rescheduled once the budget ran out.
    swept: bool,
}

impl<'a> Loop<'a> {
    fn new(
        run: &'a TestRun,
        target: Target,
        indices: &[u64],
        epoch: Instant,
        start: Time,
    ) -> Result<Self, String> {
        let poll = Poll::new().map_err(|e| format!("cannot create an event loop: {e}"))?;
        let stats = run.plan.new_stats(start, run.sigfig)?;
        let slots = indices
            .iter()
            .map(|&i| Slot {
                conn: Connection::new(run.plan.clone(), i),
                sock: None,
                connected: false,
                live: false,
                timer_at: Time::MAX,
            })
            .collect();
        // Only schedules and deadlines need a timer; closed-loop runs without --timeout have none.
        let conn = &run.plan.conn;
        let timerfd = if conn.open_loop.is_some() || conn.request_timeout.is_some() {
            TimerFd::new(&poll).ok()
        } else {
            None
        };
        Ok(Loop {
            run,
            target,
            epoch,
            poll,
            slots,
            stats,
            failures: Vec::new(),
            open: 0,
            published: Published::default(),
            timers: BinaryHeap::new(),
            timerfd,
            swept: false,
        })
    }

    fn now(&self) -> Time {
        Time::since(self.epoch, Instant::now())
    }

    fn run(mut self) -> Result<Outcome, String> {
        for i in 0..self.slots.len() {
            self.open += 1;
            self.connect(i);
        }
        let mut events = Events::with_capacity(1024);
        let mut buf = vec![0u8; READ_BUF];
        let mut last_publish = Instant::now();
        let mut aborted = false;
        while self.open > 0 {
            if self.run.progress.aborted() {
                aborted = true;
                break;
            }
            let timeout = self.next_timeout();
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(format!("event loop failed: {e}"));
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
            if !self.swept && self.run.plan.budget.is_exhausted() {
                // Connections waiting for their next arrival have nothing left to send: their
                // poll_timeout is now "at once".
                self.swept = true;
                for i in 0..self.slots.len() {
                    self.schedule(i);
                }
            }
            // Schedules and deadlines are due whether or not a socket woke us.
            self.fire_timers();
            if last_publish.elapsed() >= PUBLISH_EVERY {
                last_publish = Instant::now();
                self.publish();
            }
        }
        self.publish();
        for s in &mut self.slots {
            if s.live {
                s.live = false;
                self.run.progress.live.fetch_sub(1, Ordering::Relaxed);
            }
        }
        Ok(Outcome { stats: self.stats, failures: self.failures, aborted })
    }

    /// How long poll may sleep: until the earliest timer (which the timerfd then signals to the
    /// microsecond), and never so long that the stop controls go unread.
    fn next_timeout(&mut self) -> Duration {
        let Some(&Reverse((at, _))) = self.timers.peek() else { return PUBLISH_EVERY };
        let wait = at.saturating_since(self.now());
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

    /// Puts slot `i`'s `poll_timeout` in the heap, unless an entry at that time or earlier is
    /// there already (a later one is found stale when it comes up, and rescheduled then).
    fn schedule(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if let Some(t) = slot.conn.poll_timeout() {
            if t < slot.timer_at {
                slot.timer_at = t;
                self.timers.push(Reverse((t, i)));
            }
        }
    }

    /// Calls `handle_timeout` on every connection whose time has come.
    fn fire_timers(&mut self) {
        let now = self.now();
        while let Some(&Reverse((at, i))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            if self.slots[i].timer_at != at {
                continue; // superseded by an earlier entry, already handled
            }
            self.slots[i].timer_at = Time::MAX;
            if self.slots[i].conn.poll_timeout().is_some_and(|t| t <= now) {
                self.slots[i].conn.handle_timeout(now);
                self.drain(i);
            } else {
                // Moved later since (a reply arrived, a request went out): wait for the new time.
                self.schedule(i);
            }
        }
    }

    fn publish(&mut self) {
        let now = self.now();
        self.run.progress.publish(&self.stats, now, &mut self.published);
    }

    fn connect(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        slot.connected = false;
        match Sock::connect(&self.target) {
            Ok(mut sock) => {
                let interest = Interest::READABLE | Interest::WRITABLE;
                match self.poll.registry().register(sock.source(), Token(i), interest) {
                    Ok(()) => slot.sock = Some(sock),
                    Err(e) => slot.conn.handle_io_error(format!("cannot register a socket: {e}")),
                }
            }
            Err(e) => slot.conn.handle_io_error(connect_error(&self.run.endpoint, &e)),
        }
        self.drain(i);
    }

    /// Acts on readiness of slot `i`; `hangup` when the event also said the peer closed or the
    /// socket failed, so that reading must go on to the end of the stream.
    fn on_ready(&mut self, i: usize, buf: &mut [u8], readable: bool, hangup: bool) {
        let slot = &mut self.slots[i];
        let Some(sock) = slot.sock.as_mut() else { return };
        if !slot.connected {
            match sock.finish_connect() {
                Ok(true) => {
                    slot.connected = true;
                    let now = Time::since(self.epoch, Instant::now());
                    slot.conn.handle_connected(now, &mut self.stats);
                    if !readable && !hangup {
                        self.drain(i);
                        return;
                    }
                    // The server spoke (or closed: Redis at maxclients) in the edge that
                    // completed the connect; no new edge would tell us.
                }
                Ok(false) => return,
                Err(e) => {
                    slot.conn.handle_io_error(connect_error(&self.run.endpoint, &e));
                    self.drain(i);
                    return;
                }
            }
        }
        {
            loop {
                match sock.read(buf) {
                    Ok(0) => {
                        slot.conn.handle_closed(Time::since(self.epoch, Instant::now()));
                        break;
                    }
                    Ok(n) => {
                        let now = Time::since(self.epoch, Instant::now());
                        slot.conn.handle_input(&buf[..n], now, &mut self.stats);
                        // A short read emptied the socket: the next byte to arrive raises a new
                        // edge, so asking again would only cost a syscall returning EAGAIN. Not
                        // after a hangup, though: no edge follows the end of the stream, and a
                        // FIN that came with the last bytes would never be read (a hang).
                        if (n < buf.len() && !hangup) || slot.conn.is_closed() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        slot.conn.handle_io_error(io_error("read from", &self.run.endpoint, &e));
                        break;
                    }
                }
            }
        }
        self.drain(i);
    }

    /// The drain rule: write what the connection has, then act on its events.
    fn drain(&mut self, i: usize) {
        loop {
            let slot = &mut self.slots[i];
            if slot.connected {
                if let Some(sock) = slot.sock.as_mut() {
                    loop {
                        // The clock is read before the write: on loopback the server can answer
                        // while the send syscall is still returning, and a reading after it
                        // would leave that part of the round trip out of the latency.
                        let now = Time::since(self.epoch, Instant::now());
                        let Some(bytes) = slot.conn.poll_transmit(now) else { break };
                        let len = bytes.len();
                        match sock.write(bytes) {
                            Ok(n) => {
                                slot.conn.advance_transmit(n, now, &mut self.stats);
                                if n < len {
                                    break; // the socket is full: WRITABLE will fire
                                }
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => {
                                slot.conn.handle_io_error(io_error("write to", &self.run.endpoint, &e));
                                break;
                            }
                        }
                    }
                }
            }
            let Some(ev) = self.slots[i].conn.poll_event() else { break };
            match ev {
                Event::Ready => {
                    let slot = &mut self.slots[i];
                    if !slot.live {
                        slot.live = true;
                        self.run.progress.live.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Event::Reconnect => {
                    self.close(i);
                    self.connect(i);
                    return; // connect() drained the new socket
                }
                Event::Finished => {
                    self.close(i);
                    self.finish(i);
                }
                Event::Failed(e) => {
                    Outcome::add_failure(&mut self.failures, e.to_string(), 1);
                    self.close(i);
                    self.finish(i);
                }
                _ => {}
            }
        }
        self.schedule(i);
    }

    fn close(&mut self, i: usize) {
        if let Some(mut sock) = self.slots[i].sock.take() {
            let _ = self.poll.registry().deregister(sock.source());
        }
        self.slots[i].connected = false;
    }

    fn finish(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if slot.live {
            slot.live = false;
            self.run.progress.live.fetch_sub(1, Ordering::Relaxed);
        }
        self.open -= 1;
    }
}
