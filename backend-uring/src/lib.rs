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
//! buffer cannot grow under it), from which the loop submits a send. A large value (one the core
//! spliced in by reference to the test's one payload or dataset) is not copied: the driver hands
//! it over as an owned handle ([`respbench_driver::WriteShared`]), kept in the connection's queue
//! of segments until the kernel has sent it, and a send of several segments is one
//! `IORING_OP_SENDMSG` over their iovecs. The drain rule stays the driver's, TLS included.
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
use std::collections::VecDeque;

use respbench_core::{Outcome, RunError, SharedBytes, Time};
use respbench_driver::{
    discard_refused, on_threads, refuse_discard, resolve_all, Delivered, Link, Next, SocketKind, Table,
    Tally, Target, TestRun, Tls, WriteShared, PUBLISH_EVERY, READ_BUF,
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

/// The most a connection's send buffer holds (the core encodes 64 KiB ahead at most): its own
/// bytes, not the shared values it sends by reference.
const SEND_BUF: usize = 64 * 1024;
/// The most segments (runs of owned bytes, shared values) a connection queues, and so the most
/// iovecs of one send.
const MAX_SEGS: usize = 64;
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

/// One run of what a connection sends, in stream order.
enum Seg {
    /// The next this many bytes of [`Out::buf`] (the owned segments' bytes are `buf[done..]`,
    /// in order).
    Owned(usize),
    /// A large value's shared bytes, what is left of them: sent by reference, not copied.
    Shared(SharedBytes),
}

/// A connection's bytes on their way to the kernel: owned bytes copied into `buf`, shared values
/// held by their handles, in order.
#[derive(Default)]
struct Out {
    buf: Vec<u8>,
    /// The kernel has taken `buf[..done]`.
    done: usize,
    /// What is left to send, in order.
    segs: VecDeque<Seg>,
    /// Bytes of a send in the ring, from the front of `segs` (0: none).
    in_flight: usize,
    /// The iovecs of a send of several segments in the ring (filled only when none is).
    iov: Vec<libc::iovec>,
    /// Its message header, which points to `iov`.
    msg: Option<Box<libc::msghdr>>,
}

impl Out {
    /// Bytes queued and not yet sent.
    #[cfg(test)]
    fn unsent(&self) -> usize {
        self.segs.iter().fold(0usize, |n, s| {
            n.saturating_add(match s {
                Seg::Owned(k) => *k,
                Seg::Shared(h) => h.len(),
            })
        })
    }

    /// The kernel took the first `n` bytes of what is queued.
    fn consume(&mut self, mut n: usize) {
        while n > 0 {
            match self.segs.front_mut() {
                Some(Seg::Owned(k)) => {
                    let took = n.min(*k);
                    *k -= took;
                    self.done += took;
                    n -= took;
                    if *k == 0 {
                        self.segs.pop_front();
                    }
                }
                Some(Seg::Shared(h)) => {
                    let took = n.min(h.len());
                    h.advance(took);
                    n -= took;
                    if h.is_empty() {
                        self.segs.pop_front();
                    }
                }
                None => break,
            }
        }
        if self.segs.is_empty() {
            self.buf.clear();
            self.done = 0;
        }
    }

    /// Queues `n` bytes just appended to `buf`.
    fn owned(&mut self, n: usize) {
        match self.segs.back_mut() {
            Some(Seg::Owned(k)) => *k += n,
            _ => self.segs.push_back(Seg::Owned(n)),
        }
    }
}

/// The connection's socket as the driver writes to it: bytes go into the send buffer, shared
/// values into the queue by their handles, which the loop submits after this round of
/// completions. While a send is in the ring it reads from the buffer, which may then take only
/// what fits without moving.
struct Outbox<'a> {
    out: &'a mut Out,
    queued: &'a mut bool,
    queue: &'a mut Vec<usize>,
    i: usize,
}

impl Outbox<'_> {
    /// Puts the slot in the loop's list of sends to submit.
    fn enqueue(&mut self) {
        if !*self.queued {
            *self.queued = true;
            self.queue.push(self.i);
        }
    }
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
        let new_seg = !matches!(out.segs.back(), Some(Seg::Owned(_)));
        let n = if new_seg && out.segs.len() >= MAX_SEGS { 0 } else { room.min(bytes.len()) };
        if n == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        out.buf.extend_from_slice(&bytes[..n]);
        out.owned(n);
        self.enqueue();
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl WriteShared for Outbox<'_> {
    /// Keeps the handle until the kernel has sent its bytes: no copy.
    fn write_shared(&mut self, bytes: SharedBytes) -> io::Result<usize> {
        let n = bytes.len();
        if self.out.segs.len() >= MAX_SEGS {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        if n > 0 {
            self.out.segs.push_back(Seg::Shared(bytes));
            self.enqueue();
        }
        Ok(n)
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
    /// What closed sockets were sending while their send is still in the ring (the buffer, the
    /// shared values, the iovecs), by its user data.
    retired: Vec<(u64, Out)>,
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
                    self.io.arm(i, 0, self.io.bufs.size());
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
                    out.consume(res as usize);
                    if !out.segs.is_empty() {
                        // A partial send, or what was queued while it was in the ring: the rest
                        // goes next.
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
            // buffers, their iovecs and message header do not move while a send is in the ring,
            // nor do the shared values' bytes, whose handles stay in the queue (all kept after
            // their socket closes until the send completes), receive buffers are the registered
            // ring's, and the kernel copies the connect address when it takes the entry.
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
                let len = link.read_size(n, self.bufs.size());
                self.arm(i, discard, len);
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

    /// Submits slot `i`'s unsent bytes, unless a send is in the ring already: one segment as a
    /// send of its bytes, several as one `IORING_OP_SENDMSG` over their iovecs (the shared
    /// values' bytes where they are).
    fn send(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        let Some(fd) = slot.fd.as_ref().filter(|_| slot.connected) else { return };
        let out = &mut slot.out;
        if out.in_flight > 0 || out.segs.is_empty() {
            return;
        }
        let fd = Fd(fd.as_raw_fd());
        let ud = user_data(SEND, slot.gen, i);
        let e = if out.segs.len() == 1 {
            let bytes = match &out.segs[0] {
                Seg::Owned(k) => &out.buf[out.done..out.done + k],
                Seg::Shared(h) => h.bytes(),
            };
            let len = bytes.len().min(u32::MAX as usize);
            out.in_flight = len;
            opcode::Send::new(fd, bytes.as_ptr(), len as u32).flags(libc::MSG_NOSIGNAL).build()
        } else {
            out.iov.clear();
            let (mut at, mut total) = (out.done, 0usize);
            for seg in out.segs.iter().take(MAX_SEGS) {
                let bytes = match seg {
                    Seg::Owned(k) => {
                        let b = &out.buf[at..at + k];
                        at += k;
                        b
                    }
                    Seg::Shared(h) => h.bytes(),
                };
                // What one sendmsg can count (the kernel sends at most about 2 GiB anyway).
                let Some(t) = total.checked_add(bytes.len()).filter(|&t| t <= isize::MAX as usize) else {
                    break;
                };
                total = t;
                out.iov.push(libc::iovec {
                    iov_base: bytes.as_ptr() as *mut libc::c_void,
                    iov_len: bytes.len(),
                });
            }
            out.in_flight = total;
            // SAFETY: msghdr is plain data; zeroed is its empty value (no name, no control).
            let msg = out.msg.get_or_insert_with(|| Box::new(unsafe { std::mem::zeroed() }));
            msg.msg_iov = out.iov.as_mut_ptr();
            msg.msg_iovlen = out.iov.len() as _;
            opcode::SendMsg::new(fd, &**msg).flags(libc::MSG_NOSIGNAL as u32).build()
        };
        self.sends += 1;
        if slot.write_blocked {
            self.blocked_sends += 1;
        }
        self.push(e.user_data(ud));
    }

    /// Arms slot `i`'s receive: one for the socket's life where the kernel has multishot and
    /// the socket is not single-shot; with `discard` > 0, a receive that drops that many bytes
    /// in the kernel (`MSG_TRUNC`, no buffer); a single-shot receive asks for `len` bytes of a
    /// ring buffer ([`Link::read_size`]: less than a whole one while replies end in discards).
    fn arm(&mut self, i: usize, discard: usize, len: usize) {
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
            opcode::Recv::new(fd, std::ptr::null_mut(), len.min(self.bufs.size()) as u32)
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
                std::mem::forget(std::mem::take(&mut s.out));
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
            link.drain_shared(node, Some(&mut outbox), tally)
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
            // The ring still reads from it (and the iovecs).
            let out = std::mem::take(&mut slot.out);
            self.retired.push((user_data(SEND, slot.gen, i), out));
        }
        slot.out.buf.clear();
        slot.out.segs.clear();
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
        let all = ob.out.unsent();
        ob.out.consume(all);
        assert!(ob.out.segs.is_empty());
        assert_eq!(ob.write(b"next").unwrap(), 4);
        assert_eq!((ob.out.done, ob.out.buf.as_slice()), (0, &b"next"[..]));
        assert_eq!(queue, [7], "queued once");
    }

    /// `SET key <value>` of `d` bytes as the core writes it: header, the value by reference,
    /// CRLF; and the bytes the server must get.
    fn set_request(d: usize) -> (Vec<u8>, respbench_core::SharedBytes, Vec<u8>) {
        use respbench_core::dist::ValueSize;
        use respbench_core::rng::Rng;
        use respbench_core::template::{Arg, KeyGen, KeySpace, Template, Values};
        use respbench_core::wire::Wire;
        use respbench_core::Chunk;
        let values = Values::new(&ValueSize::Fixed(d));
        let t = Template::with_values(&[Arg::Bytes(b"SET"), Arg::Bytes(b"k"), Arg::Value], &values);
        let mut want = Vec::new();
        let mut keys = KeyGen::new(KeySpace::Literal, Rng::new(1));
        t.write(&mut want, &mut keys);
        let mut w = Wire::default();
        t.write(&mut w, &mut keys);
        let mut head = Vec::new();
        while let Some(Chunk::Bytes(b)) = w.next_chunk() {
            head.extend_from_slice(b);
            let n = b.len();
            w.advance(n);
        }
        let Some(Chunk::Shared(h)) = w.next_chunk() else { panic!("the value is shared") };
        (head, h, want)
    }

    /// What the queue's segments hold from the front, as a send would read them.
    fn queued_bytes(out: &Out) -> Vec<u8> {
        let (mut v, mut at) = (Vec::new(), out.done);
        for s in &out.segs {
            match s {
                Seg::Owned(k) => {
                    v.extend_from_slice(&out.buf[at..at + k]);
                    at += k;
                }
                Seg::Shared(h) => v.extend_from_slice(h.bytes()),
            }
        }
        v
    }

    #[test]
    fn a_shared_value_is_queued_by_reference_and_partial_sends_resume_at_the_right_byte() {
        let d = 200_000;
        let (head, h, want) = set_request(d);
        let (mut out, mut queued, mut queue) = (Out::default(), false, Vec::new());
        let mut ob = Outbox { out: &mut out, queued: &mut queued, queue: &mut queue, i: 3 };
        assert_eq!(ob.write(&head).unwrap(), head.len());
        let ptr = h.bytes().as_ptr();
        assert_eq!(ob.write_shared(h).unwrap(), d);
        assert_eq!(ob.write(b"\r\n").unwrap(), 2);
        assert_eq!(ob.out.buf.len(), head.len() + 2, "the value is not copied");
        assert_eq!(ob.out.segs.len(), 3);
        assert!(matches!(&ob.out.segs[1], Seg::Shared(s) if s.bytes().as_ptr() == ptr));
        assert_eq!(queued_bytes(ob.out), want);
        // Sends that end inside the header, the value and the CRLF.
        let mut sent = Vec::new();
        for n in [3, head.len() - 3 + 10, d - 11, 2, 1] {
            let q = queued_bytes(ob.out);
            sent.extend_from_slice(&q[..n]);
            ob.out.consume(n);
        }
        assert_eq!(sent, want);
        assert!(ob.out.segs.is_empty());
        assert_eq!((ob.out.buf.len(), ob.out.done, ob.out.unsent()), (0, 0, 0));
    }

    #[test]
    fn the_queue_holds_at_most_max_segs() {
        let (_, h, _) = set_request(100_000);
        let (mut out, mut queued, mut queue) = (Out::default(), false, Vec::new());
        let mut ob = Outbox { out: &mut out, queued: &mut queued, queue: &mut queue, i: 0 };
        for _ in 0..MAX_SEGS / 2 {
            assert_eq!(ob.write(b"x").unwrap(), 1);
            assert_eq!(ob.write_shared(h.clone()).unwrap(), 100_000);
        }
        assert_eq!(ob.write_shared(h.clone()).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert_eq!(ob.write(b"y").unwrap_err().kind(), io::ErrorKind::WouldBlock);
        ob.out.consume(1);
        assert_eq!(ob.write(b"y").unwrap(), 1);
        // Owned bytes after owned bytes join their segment.
        ob.out.consume(100_000);
        assert_eq!(ob.write(b"z").unwrap(), 1);
        assert_eq!(ob.out.segs.len(), MAX_SEGS - 1);
    }
}
