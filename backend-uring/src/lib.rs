//! respbench-uring: drives respbench connections through io_uring (Linux).
//!
//! `--threads N` runs N loops that share nothing, as the mio backend does: connection `i` lives
//! on loop `i % N`. Each loop has one ring. A connection's socket is connected by the ring
//! (`IORING_OP_CONNECT`), then one multishot receive stays armed on it for its whole life and
//! picks buffers from the loop's provided-buffer ring; sends are queued while the loop handles
//! completions and submitted together, with the loop's wait, in one `io_uring_enter` per
//! iteration. Timeouts are the wait's own (`IORING_ENTER_EXT_ARG`): no timerfd.
//!
//! The driver's [`Link`] reads from a `Read` and writes to a `Write`; here those are adapters:
//! a receive completion's bytes are a `Read` that then would block, and a write copies into the
//! connection's send buffer (would block when it is full, or when a send is in flight and the
//! buffer cannot grow under it), from which the loop submits a send. The drain rule stays the
//! driver's, TLS included.
//!
//! A kernel without multishot receive gets one receive armed after each completion (the
//! verbose report says so); a kernel without io_uring, or one that refuses it, gets a clear
//! message before the run ([`check`]).
//!
//! The crate is empty on other systems: the command line says io_uring is not there.
#![cfg(target_os = "linux")]

use std::fmt;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use io_uring::types::{Fd, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};
use respbench_core::{Outcome, RunError, Time};
use respbench_driver::{
    discard_refused, on_threads, refuse_discard, resolve_all, Delivered, Link, Next, SocketKind, Table,
    Tally, Target, TestRun, Tls, PUBLISH_EVERY, READ_BUF,
};

mod setup;
mod sock;

/// What the command line asks of the backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `--uring-sqpoll`: a kernel thread polls the submission queue.
    pub sqpoll: bool,
    /// Use single-shot receives even where the kernel has multishot ones (the fallback of older
    /// kernels, to test it on a new one).
    pub single_shot: bool,
}

/// io_uring as this kernel offers it, found by [`check`].
#[derive(Clone, Copy, Debug)]
pub struct Uring {
    opts: Options,
    /// One receive stays armed per socket.
    multishot: bool,
    taskrun: setup::Taskrun,
}

/// Why io_uring cannot be used here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "io_uring is not available here: {}; use --backend mio", self.0)
    }
}

impl std::error::Error for Unavailable {}

/// Whether io_uring works here with what the backend needs (a ring, timed waits, a provided-buffer
/// ring), and whether its receives can be multishot. Run once before the first test.
pub fn check(opts: &Options) -> Result<Uring, Unavailable> {
    // On a thread of its own: the ring's teardown may queue task work on the thread that made
    // it, which interrupts that thread's next blocking system call (a socket read with a timeout
    // then fails with EINTR: the command line's startup connection).
    let opts = *opts;
    std::thread::spawn(move || setup::check(&opts))
        .join()
        .unwrap_or_else(|_| Err(Unavailable("the check of the kernel's io_uring panicked".into())))
}

impl Uring {
    /// One line for the verbose report: how receives are made, and the SQPOLL thread.
    pub fn describe(&self) -> String {
        let mut s = if self.multishot {
            "io_uring: multishot receives into a provided-buffer ring".to_string()
        } else if self.opts.single_shot {
            "io_uring: single-shot receives into a provided-buffer ring (asked for)".to_string()
        } else {
            "io_uring: single-shot receives into a provided-buffer ring (this kernel has no multishot receive)"
                .to_string()
        };
        s.push_str(match self.taskrun {
            setup::Taskrun::Deferred => ", deferred task work",
            setup::Taskrun::Cooperative => ", cooperative task work",
            setup::Taskrun::Default => "",
        });
        if self.opts.sqpoll {
            s.push_str(", SQPOLL kernel thread (its CPU is in the client cpu figures)");
        }
        s
    }

    /// Whether receives stay armed across completions.
    pub fn multishot(&self) -> bool {
        self.multishot
    }
}

/// Runs one test on `run.loops()` rings and merges what they recorded. `epoch` is the run's time
/// origin.
pub fn run_test(
    run: &TestRun,
    tls: Option<&Tls>,
    uring: &Uring,
    epoch: Instant,
) -> Result<Outcome, RunError> {
    let targets = resolve_all(run)?;
    on_threads(run, epoch, |t, start| Loop::new(run, tls, &targets, uring, t, epoch, start)?.run())
}

/// The most a connection's send buffer holds (the core encodes 64 KiB ahead at most).
const SEND_BUF: usize = 64 * 1024;
/// Size of each provided receive buffer.
const RECV_BUF: usize = 8 * 1024;

/// What a completion is for, in the top byte of its user data; below it the socket's generation
/// (24 bits: a completion of a closed socket is recognised and dropped) and the slot (32 bits).
const CONNECT: u8 = 1;
const RECV: u8 = 2;
const SEND: u8 = 3;
/// A receive of `MSG_TRUNC` and no buffer: a bulk body that nothing reads, dropped in the kernel.
const DISCARD: u8 = 4;
/// The end of a socket's multishot receive, which goes single-shot to discard bodies.
const CANCEL: u8 = 5;
const GEN_MASK: u32 = 0xff_ffff;

fn user_data(op: u8, gen: u32, i: usize) -> u64 {
    (op as u64) << 56 | ((gen & GEN_MASK) as u64) << 32 | (i as u64 & 0xffff_ffff)
}

fn decode(ud: u64) -> (u8, u32, usize) {
    ((ud >> 56) as u8, (ud >> 32) as u32 & GEN_MASK, (ud & 0xffff_ffff) as usize)
}

/// A connection's bytes on their way to the kernel.
#[derive(Default)]
struct Out {
    buf: Vec<u8>,
    /// The kernel has taken `buf[..done]`.
    done: usize,
    /// Bytes of a send in the ring, from `done` (0: none).
    in_flight: usize,
}

/// The connection's socket as the driver writes to it: bytes go into the send buffer, which the
/// loop submits after this round of completions. While a send is in the ring it reads from the
/// buffer, which may then take only what fits without moving.
struct Outbox<'a> {
    out: &'a mut Out,
    queued: &'a mut bool,
    queue: &'a mut Vec<usize>,
    i: usize,
}

impl Write for Outbox<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let out = &mut *self.out;
        let room = if out.in_flight > 0 {
            out.buf.capacity() - out.buf.len()
        } else {
            if out.done > 0 {
                out.buf.drain(..out.done);
                out.done = 0;
            }
            SEND_BUF.saturating_sub(out.buf.len())
        };
        let n = room.min(bytes.len());
        if n == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        out.buf.extend_from_slice(&bytes[..n]);
        if !*self.queued {
            *self.queued = true;
            self.queue.push(self.i);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One socket of a client: slot `c * nodes + n` is node `n` of the loop's client `c`.
struct Slot {
    fd: Option<OwnedFd>,
    /// The ring's connect has completed.
    connected: bool,
    /// The socket's generation: bumped when it is closed, so its late completions are known.
    gen: u32,
    out: Out,
    /// In the loop's list of sends to submit.
    send_queued: bool,
    /// A receive is armed on the socket.
    receiving: bool,
    /// The driver had more to write than the send buffer took.
    write_blocked: bool,
    /// Its receives are single-shot (the kernel has no multishot ones, or its replies have
    /// bodies to discard: each receive is then chosen when it is queued, a discard or a read).
    single: bool,
    /// TCP or Unix, for the one-time detection of discards.
    kind: SocketKind,
}

/// The loop's ring, its buffers and the sockets' state in it.
struct Io<'a> {
    /// Declared before the buffers it reads into and writes from, so dropped first.
    ring: IoUring,
    bufs: setup::Bufs,
    uring: &'a Uring,
    /// Where each slot's socket connects (or why it cannot): kept while the ring may read it.
    addrs: Vec<Option<Result<sock::Addr, (io::ErrorKind, String)>>>,
    slots: Vec<Slot>,
    /// Operations in the ring whose last completion has not come yet.
    in_ring: usize,
    /// Slots with bytes to send.
    to_send: Vec<usize>,
    /// Sends pushed since the last wait: they complete during the submission, mostly.
    sends: usize,
    /// How many of them are of connections with more to write than their buffer took: those
    /// connections write again only once the send's completion is handled.
    blocked_sends: usize,
    /// Slots whose receive ended and must be armed again.
    to_arm: Vec<usize>,
    /// Send buffers of closed sockets whose send is still in the ring, by its user data.
    retired: Vec<(u64, Vec<u8>)>,
    cqes: Vec<(u64, i32, u32)>,
    buf: Vec<u8>,
}

struct Loop<'a> {
    table: Table<'a>,
    io: Io<'a>,
}

impl<'a> Loop<'a> {
    fn new(
        run: &'a TestRun,
        tls: Option<&Tls>,
        targets: &'a [Target],
        uring: &'a Uring,
        t: usize,
        epoch: Instant,
        start: Time,
    ) -> Result<Self, RunError> {
        let tally = Tally::new(run, t, tls, epoch, start)?;
        let table = Table::new(run, t, tally, targets);
        let n = table.slots();
        let slots: Vec<Slot> = (0..n)
            .map(|_| Slot {
                fd: None,
                connected: false,
                gen: 0,
                out: Out::default(),
                send_queued: false,
                receiving: false,
                write_blocked: false,
                single: false,
                kind: SocketKind::Tcp,
            })
            .collect();
        let entries = (2 * n + 8).clamp(64, 4096).next_power_of_two() as u32;
        let (ring, _) =
            setup::ring(&uring.opts, entries).map_err(|e| RunError::Setup(format!("io_uring_setup: {e}")))?;
        let mut bufs = setup::Bufs::new(n.clamp(64, 2048).next_power_of_two() as u16, RECV_BUF);
        bufs.register(&ring).map_err(|e| RunError::Setup(setup::buf_ring_reason(&e)))?;
        let io = Io {
            ring,
            bufs,
            uring,
            addrs: (0..n).map(|_| None).collect(),
            slots,
            in_ring: 0,
            to_send: Vec::new(),
            sends: 0,
            blocked_sends: 0,
            to_arm: Vec::new(),
            retired: Vec::new(),
            cqes: Vec::new(),
            buf: vec![0u8; READ_BUF],
        };
        Ok(Loop { table, io })
    }

    fn run(mut self) -> Result<Outcome, RunError> {
        self.table.start(&mut self.io);
        let result = loop {
            if !self.table.is_open() {
                break Ok(());
            }
            self.io.flush(&mut self.table);
            let wait = self.next_wait();
            if let Err(e) = self.io.enter(wait) {
                break Err(e);
            }
            self.complete();
            self.table.after_wait(&mut self.io);
        };
        let outcome = self.table.finish(&mut self.io);
        self.io.settle();
        result.map(|()| outcome)
    }

    /// How long the wait may last: until the earliest timer, and never so long that the stop
    /// goes unseen.
    fn next_wait(&self) -> Duration {
        match self.table.next_timer() {
            Some(at) => at.saturating_since(self.table.tally.now()).min(PUBLISH_EVERY),
            None => PUBLISH_EVERY,
        }
    }

    /// Hands every completion that came to its connection.
    fn complete(&mut self) {
        let mut cqes = std::mem::take(&mut self.io.cqes);
        cqes.extend(self.io.ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        for &(ud, res, flags) in &cqes {
            self.on_completion(ud, res, flags);
        }
        cqes.clear();
        self.io.cqes = cqes;
    }

    fn on_completion(&mut self, ud: u64, res: i32, flags: u32) {
        let (op, gen, i) = decode(ud);
        let more = cqueue::more(flags);
        if !more {
            self.io.in_ring = self.io.in_ring.saturating_sub(1);
        }
        let bid = cqueue::buffer_select(flags);
        let current = self.io.slots.get(i).is_some_and(|s| s.gen == gen && s.fd.is_some());
        if !current {
            // A socket closed since: give its buffers back.
            if let Some(bid) = bid {
                self.io.bufs.recycle(bid);
            }
            if op == SEND {
                self.io.retired.retain(|(u, _)| *u != ud);
            }
            return;
        }
        let (link, n, tally) = self.table.link(i);
        match op {
            CONNECT => {
                let slot = &mut self.io.slots[i];
                if res < 0 {
                    link.connect_failed(n, &io::Error::from_raw_os_error(-res), tally);
                } else {
                    slot.connected = true;
                    link.connected(n, tally);
                    self.io.arm(i, 0);
                }
            }
            RECV => {
                let slot = &mut self.io.slots[i];
                if !more {
                    slot.receiving = false;
                }
                let buf = &mut self.io.buf[..];
                match bid {
                    Some(bid) if res > 0 => {
                        let bytes = self.io.bufs.get(bid, res as usize);
                        link.received(n, bytes, &mut Delivered::Spent, buf, tally);
                        self.io.bufs.recycle(bid);
                        if more && !slot.single && link.discardable(n) > 0 && !discard_refused(slot.kind) {
                            // A body to drop: the multishot receive would copy it into the
                            // ring's buffers as it arrives. End it; the socket's receives are
                            // single-shot from here, each chosen when it is queued.
                            slot.single = true;
                            let e = opcode::AsyncCancel::new(user_data(RECV, slot.gen, i))
                                .build()
                                .user_data(user_data(CANCEL, slot.gen, i));
                            self.io.push(e);
                        }
                    }
                    _ if res == 0 => link.read(n, &mut Delivered::End, buf, false, tally),
                    // No buffer was free: armed again once this round gave them back. Or the
                    // end of a multishot receive, for single-shot ones.
                    _ if res == -libc::ENOBUFS || res == -libc::ECANCELED => {}
                    _ if res < 0 => link.read(n, &mut Delivered::Failed(-res), buf, false, tally),
                    _ => {}
                }
                if !more && (res > 0 || res == -libc::ENOBUFS || res == -libc::ECANCELED) {
                    self.io.to_arm.push(i);
                }
            }
            DISCARD => {
                let slot = &mut self.io.slots[i];
                slot.receiving = false;
                let buf = &mut self.io.buf[..];
                match res {
                    1.. => {
                        link.discarded(n, res as usize, tally);
                        self.io.to_arm.push(i);
                    }
                    0 => link.read(n, &mut Delivered::End, buf, false, tally),
                    _ if matches!(-res, libc::EFAULT | libc::EINVAL | libc::EOPNOTSUPP) => {
                        // This kernel copies (to the null buffer, failing before it took any):
                        // read bodies from now on.
                        refuse_discard(slot.kind);
                        self.io.to_arm.push(i);
                    }
                    _ => link.read(n, &mut Delivered::Failed(-res), buf, false, tally),
                }
            }
            SEND => {
                let slot = &mut self.io.slots[i];
                let out = &mut slot.out;
                out.in_flight = 0;
                if res < 0 {
                    link.write_failed(n, &io::Error::from_raw_os_error(-res), tally);
                } else {
                    out.done += res as usize;
                    if out.done == out.buf.len() {
                        out.buf.clear();
                        out.done = 0;
                    } else {
                        // A partial send: the rest goes next.
                        self.io.send(i);
                    }
                    if !self.io.slots[i].write_blocked {
                        return;
                    }
                }
            }
            _ => return,
        }
        self.table.drain(i, &mut self.io);
    }
}

impl Io<'_> {
    /// Submits what this round queued and waits, up to `wait`, for a completion: the loop's one
    /// system call (none with SQPOLL while completions are waiting and the thread is awake).
    fn enter(&mut self, wait: Duration) -> Result<(), RunError> {
        if self.uring.opts.sqpoll && !self.ring.completion().is_empty() {
            if self.ring.submission().need_wakeup() {
                self.ring.submit().map_err(|e| RunError::EventLoop(format!("io_uring_enter: {e}")))?;
            }
            return Ok(());
        }
        let ts = Timespec::from(wait);
        // The sends of this round complete during the submission, mostly: wait for one more,
        // unless a connection waits for its send to write the rest (a request larger than the
        // send buffer): the reply that would be the one more needs that rest first.
        let sends = std::mem::take(&mut self.sends);
        let want = if std::mem::take(&mut self.blocked_sends) > 0 { sends } else { 1 + sends };
        let args = SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => Ok(()),
            // The wait timed out, a signal came, or completions wait in the kernel for room.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(RunError::EventLoop(format!("io_uring_enter: {e}"))),
        }
    }

    /// Pushes a submission, submitting what is queued first when the queue is full.
    fn push(&mut self, e: squeue::Entry) {
        self.in_ring += 1;
        loop {
            // SAFETY: every buffer and address an entry points to outlives its operation: send
            // buffers do not move while a send is in the ring (and are kept after their socket
            // closes until it completes), receive buffers are the registered ring's, and the
            // kernel copies the connect address when it takes the entry.
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                return;
            }
            if let Err(e) = self.ring.submit() {
                if e.raw_os_error() == Some(libc::EBUSY) && self.uring.opts.sqpoll {
                    let _ = self.ring.submitter().squeue_wait();
                }
            }
        }
    }

    /// Queues what the round left to do: receives to arm again (a discard where the socket's
    /// connection says a body follows that nothing reads), sends of what connections wrote.
    fn flush(&mut self, table: &mut Table) {
        let mut arm = std::mem::take(&mut self.to_arm);
        for &i in &arm {
            let slot = &self.slots[i];
            if slot.connected && !slot.receiving {
                let (link, n, _) = table.link(i);
                let discard = if slot.single || !self.uring.multishot { link.discardable(n) } else { 0 };
                self.arm(i, discard);
            }
        }
        arm.clear();
        self.to_arm = arm;
        let mut sends = std::mem::take(&mut self.to_send);
        for &i in &sends {
            self.slots[i].send_queued = false;
            self.send(i);
        }
        sends.clear();
        self.to_send = sends;
    }

    /// Submits slot `i`'s unsent bytes, unless a send is in the ring already.
    fn send(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        let Some(fd) = slot.fd.as_ref().filter(|_| slot.connected) else { return };
        let out = &mut slot.out;
        if out.in_flight > 0 || out.done == out.buf.len() {
            return;
        }
        let len = (out.buf.len() - out.done).min(u32::MAX as usize);
        out.in_flight = len;
        let e = opcode::Send::new(Fd(fd.as_raw_fd()), out.buf[out.done..].as_ptr(), len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data(SEND, slot.gen, i));
        self.sends += 1;
        if slot.write_blocked {
            self.blocked_sends += 1;
        }
        self.push(e);
    }

    /// Arms slot `i`'s receive: one for the socket's life where the kernel has multishot and
    /// the socket is not single-shot; with `discard` > 0, a receive that drops that many bytes
    /// in the kernel (`MSG_TRUNC`, no buffer).
    fn arm(&mut self, i: usize, discard: usize) {
        let slot = &mut self.slots[i];
        let Some(fd) = slot.fd.as_ref() else { return };
        slot.receiving = true;
        let fd = Fd(fd.as_raw_fd());
        if discard > 0 && !discard_refused(slot.kind) {
            let len = discard.min(u32::MAX as usize) as u32;
            let e = opcode::Recv::new(fd, std::ptr::null_mut(), len)
                .flags(libc::MSG_TRUNC)
                .build()
                .user_data(user_data(DISCARD, slot.gen, i));
            return self.push(e);
        }
        let e = if self.uring.multishot && !slot.single {
            opcode::RecvMulti::new(fd, setup::BGID).build()
        } else {
            opcode::Recv::new(fd, std::ptr::null_mut(), self.bufs.size() as u32)
                .buf_group(setup::BGID)
                .build()
                .flags(squeue::Flags::BUFFER_SELECT)
        };
        let e = e.user_data(user_data(RECV, slot.gen, i));
        self.push(e);
    }

    /// The completions of sockets already closed: their receive buffers go back to the ring and
    /// their send buffers are let go.
    fn drop_completions(&mut self) {
        let cqes: Vec<(u64, u32)> = self.ring.completion().map(|c| (c.user_data(), c.flags())).collect();
        for (ud, flags) in cqes {
            if !cqueue::more(flags) {
                self.in_ring = self.in_ring.saturating_sub(1);
            }
            if let Some(bid) = cqueue::buffer_select(flags) {
                self.bufs.recycle(bid);
            }
            if decode(ud).0 == SEND {
                self.retired.retain(|(u, _)| *u != ud);
            }
        }
    }

    /// After the test: waits for what is still in the ring (every socket is shut down, so it
    /// ends at once) before its buffers go.
    fn settle(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.in_ring > 0 && Instant::now() < deadline {
            if self.enter(Duration::from_millis(100)).is_err() {
                break;
            }
            self.drop_completions();
        }
        self.bufs.unregister(&self.ring);
        if self.in_ring > 0 {
            // Never seen: the kernel may still write to these; leak them rather than free them.
            self.bufs.leak();
            std::mem::forget(std::mem::take(&mut self.retired));
            for s in &mut self.slots {
                std::mem::forget(std::mem::take(&mut s.out.buf));
            }
        }
    }
}

impl respbench_driver::Sockets for Io<'_> {
    fn open(&mut self, i: usize, target: io::Result<Target>) -> io::Result<()> {
        let slot = &mut self.slots[i];
        slot.connected = false;
        if self.addrs[i].is_none() {
            self.addrs[i] =
                Some(target.and_then(|t| sock::Addr::of(&t)).map_err(|e| (e.kind(), e.to_string())));
        }
        let (fd, addr, len) = match self.addrs[i].as_ref().expect("set above") {
            Ok(addr) => addr.socket().map(|fd| (fd, addr.ptr(), addr.len()))?,
            Err((kind, msg)) => return Err(io::Error::new(*kind, msg.clone())),
        };
        let kind = self.addrs[i].as_ref().and_then(|a| a.as_ref().ok()).map(|a| a.kind());
        slot.kind = kind.unwrap_or(SocketKind::Tcp);
        let e = opcode::Connect::new(Fd(fd.as_raw_fd()), addr, len)
            .build()
            .user_data(user_data(CONNECT, slot.gen, i));
        slot.fd = Some(fd);
        self.push(e);
        Ok(())
    }

    fn drain(&mut self, i: usize, link: &mut Link, node: usize, tally: &mut Tally) -> Next {
        let slot = &mut self.slots[i];
        let next = if slot.connected {
            let mut outbox =
                Outbox { out: &mut slot.out, queued: &mut slot.send_queued, queue: &mut self.to_send, i };
            link.drain(node, Some(&mut outbox), tally)
        } else {
            link.drain(node, None::<&mut Outbox>, tally)
        };
        if let Next::Wait { write_blocked } = next {
            self.slots[i].write_blocked = write_blocked;
        }
        next
    }

    /// Closes slot `i`'s socket; what the ring still does on it ends, and its completions are
    /// dropped when they come (a new generation).
    fn close(&mut self, i: usize, reset: bool) {
        let slot = &mut self.slots[i];
        let Some(fd) = slot.fd.take() else { return };
        sock::close(fd, reset);
        if slot.out.in_flight > 0 {
            // The ring still reads from it.
            let buf = std::mem::take(&mut slot.out.buf);
            self.retired.push((user_data(SEND, slot.gen, i), buf));
        }
        slot.out.buf.clear();
        slot.out.done = 0;
        slot.out.in_flight = 0;
        slot.gen = (slot.gen + 1) & GEN_MASK;
        slot.connected = false;
        slot.receiving = false;
        slot.write_blocked = false;
        slot.single = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_round_trips() {
        for (op, gen, i) in [(CONNECT, 0, 0), (RECV, GEN_MASK, 123_456), (SEND, 77, u32::MAX as usize)] {
            assert_eq!(decode(user_data(op, gen, i)), (op, gen, i));
        }
        // The generation wraps within its bits.
        assert_eq!(decode(user_data(SEND, GEN_MASK + 1, 5)), (SEND, 0, 5));
    }

    #[test]
    fn outbox_takes_what_fits_and_never_moves_a_buffer_in_flight() {
        let (mut out, mut queued, mut queue) = (Out::default(), false, Vec::new());
        let mut ob = Outbox { out: &mut out, queued: &mut queued, queue: &mut queue, i: 7 };
        assert_eq!(ob.write(&[1; 100]).unwrap(), 100);
        assert_eq!(ob.write(&[2; SEND_BUF]).unwrap(), SEND_BUF - 100);
        assert_eq!(ob.write(&[3; 10]).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert_eq!((*ob.queued, ob.queue.as_slice()), (true, &[7][..]));
        // A send in the ring: only what fits in the capacity, never a reallocation.
        ob.out.in_flight = 50;
        let (ptr, cap) = (ob.out.buf.as_ptr(), ob.out.buf.capacity());
        let took = ob.write(&[4; 2 * SEND_BUF]).unwrap_or(0);
        assert_eq!(took, cap - SEND_BUF);
        assert_eq!(ob.out.buf.as_ptr(), ptr);
        // Sent: the rest moves to the front for the next write.
        ob.out.in_flight = 0;
        ob.out.done = ob.out.buf.len();
        assert_eq!(ob.write(b"next").unwrap(), 4);
        assert_eq!((ob.out.done, ob.out.buf.as_slice()), (0, &b"next"[..]));
        assert_eq!(queue, [7], "queued once");
    }
}
