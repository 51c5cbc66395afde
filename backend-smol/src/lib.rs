//! respbench-smol: drives respbench connections as smol tasks, on smol's own runtime.
//!
//! This is the strategy a smol user writes: one task per client (its one socket, or one per node)
//! on a multi-threaded
//! [`Executor`] (`--threads N`: N threads run it and steal each other's tasks), sockets in
//! [`Async`], which async-io's reactor wakes (one epoll set for the process, one-shot
//! registrations), and [`Timer`]s for open-loop arrivals, `--timeout` and the test's stop. The
//! mio backend's contrast is N shared-nothing loops with edge-triggered sockets registered once.
//!
//! A task never writes everything before reading: it writes what the socket takes, then waits
//! for the socket to become readable *or* writable (while bytes wait) *or* its timer, so deep
//! pipelines of large values cannot deadlock client and server. The drain rule is the driver's
//! ([`Link`]); each executor thread records into a [`Tally`] of its own, whichever task it runs.

use std::cell::RefCell;
use std::future::Future;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use respbench_core::{Outcome, RunError, Time};
use respbench_driver::{
    on_threads, resolve_all, Link, Next, Tally, Target, TestRun, Tls, Watch, PUBLISH_EVERY, READ_BUF,
};
use smol::{future, Async, Executor, Timer};

/// What each executor thread keeps: its tally and one read buffer for whichever task it runs
/// (the core's parser keeps no bytes).
struct Local {
    tally: Tally,
    buf: Vec<u8>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Runs `f` on this executor thread's [`Local`]. Never across an `.await`.
fn local<T>(f: impl FnOnce(&mut Local) -> T) -> T {
    LOCAL.with(|l| f(l.borrow_mut().as_mut().expect("a respbench executor thread")))
}

/// Runs one test on `run.loops()` executor threads and merges what they recorded. `epoch` is
/// the run's time origin.
pub fn run_test(run: &TestRun, tls: Option<&Tls>, epoch: Instant) -> Result<Outcome, RunError> {
    let targets = resolve_all(run)?;
    let nudges: Vec<Nudge> = (0..run.clients).map(|_| Nudge::default()).collect();
    // After what its tasks borrow, so that it is dropped first.
    let ex = Executor::new();
    // Every task holds a sender; the channel closes, waking every thread, when the last ends.
    let (alive, all_ended) = smol::channel::bounded::<()>(1);
    for (i, nudge) in nudges.iter().enumerate() {
        let (targets, alive) = (&targets, alive.clone());
        ex.spawn(async move {
            client(targets, i as u64, nudge, run.locate.as_ref().map(|l| &*l.moves)).await;
            drop(alive);
        })
        .detach();
    }
    drop(alive);
    let watch = Mutex::new(Watch::default());
    // `--sentinel`: the primary's moves the tasks were told of (a nudge each).
    let moves = |r: &TestRun| r.locate.as_ref().map_or(0, |l| l.moves.load(Ordering::Relaxed));
    let told = AtomicU64::new(moves(run));
    on_threads(run, epoch, |t, start| {
        let tally = Tally::new(run, t, tls, epoch, start)?;
        LOCAL.with(|l| *l.borrow_mut() = Some(Local { tally, buf: vec![0u8; READ_BUF] }));
        let publisher = async {
            loop {
                // Every 50 ms, and at the test's stop and abandon times: one timer for every
                // task, as a smol program ends its work at a deadline.
                let now = local(|l| l.tally.now());
                let tick = now + PUBLISH_EVERY;
                let at = Watch::next_event(&run.plan, now).map_or(tick, |t| t.min(tick));
                Timer::at(local(|l| l.tally.instant(at))).await;
                local(|l| l.tally.publish());
                // A stop asked for or come, the budget spent: tasks waiting must look again.
                // One thread sees the change and tells them all.
                let now = local(|l| l.tally.now());
                let m = moves(run);
                let moved = told.swap(m, Ordering::Relaxed) != m;
                if watch.lock().unwrap_or_else(|e| e.into_inner()).changed(&run.plan, now) || moved {
                    nudges.iter().for_each(Nudge::nudge);
                }
            }
        };
        let ended = async {
            let _ = all_ended.recv().await;
        };
        smol::block_on(ex.run(future::or(ended, publisher)));
        let local = LOCAL.with(|l| l.borrow_mut().take()).expect("set above");
        Ok(local.tally.finish())
    })
}

/// A connection's socket.
enum Sock {
    Tcp(Async<TcpStream>),
    Unix(Async<UnixStream>),
}

impl Sock {
    /// Makes closing the socket reset the connection (`SO_LINGER` 0): what it carried is
    /// dropped by both kernels instead of being retransmitted to a server that would run it
    /// later.
    fn reset_on_close(&self) {
        let Sock::Tcp(s) = self else { return };
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        // SAFETY: a valid socket and a linger struct of the size given; a failure leaves a
        // normal close.
        unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(s.get_ref()),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                size_of::<libc::linger>() as libc::socklen_t,
            )
        };
    }

    async fn connect(target: &Target) -> io::Result<Sock> {
        Ok(match target {
            Target::Tcp(a) => {
                let s = Async::<TcpStream>::connect(*a).await?;
                s.get_ref().set_nodelay(true)?;
                Sock::Tcp(s)
            }
            Target::Mptcp(a) => {
                // As Async::connect does for a TCP socket: wait until writable, then SO_ERROR.
                let s = Async::new(respbench_driver::connect_tcp(*a, true)?)?;
                s.writable().await?;
                if let Some(e) = s.get_ref().take_error()? {
                    return Err(e);
                }
                s.get_ref().set_nodelay(true).or_else(respbench_driver::nodelay_unsupported)?;
                Sock::Tcp(s)
            }
            Target::Unix(p) => Sock::Unix(Async::<UnixStream>::connect(p).await?),
        })
    }

    fn poll_readable(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Sock::Tcp(s) => s.poll_readable(cx),
            Sock::Unix(s) => s.poll_readable(cx),
        }
    }

    fn poll_writable(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Sock::Tcp(s) => s.poll_writable(cx),
            Sock::Unix(s) => s.poll_writable(cx),
        }
    }
}

/// Non-blocking reads and writes on the socket (async-io made it non-blocking).
impl Read for &Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.get_ref().read(buf),
            Sock::Unix(s) => s.get_ref().read(buf),
        }
    }
}

/// Bulk bodies that nothing reads are dropped in the kernel (`MSG_TRUNC`).
impl respbench_driver::Source for &Sock {
    fn discard(&mut self, max: usize) -> io::Result<Option<usize>> {
        use respbench_driver::{discard_fd, SocketKind};
        use std::os::fd::AsRawFd;
        match self {
            Sock::Tcp(s) => discard_fd(s.as_raw_fd(), SocketKind::Tcp, max),
            Sock::Unix(s) => discard_fd(s.as_raw_fd(), SocketKind::Unix, max),
        }
    }
}

impl Write for &Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.get_ref().write(buf),
            Sock::Unix(s) => s.get_ref().write(buf),
        }
    }

    /// One `writev`: a request's header, its large value and the CRLF together.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.get_ref().write_vectored(bufs),
            Sock::Unix(s) => s.get_ref().write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One client's task: connect its sockets (one per node; one against a single server), then the
/// drain rule on each until every one has ended. It waits for any of its sockets to become
/// readable, or writable while bytes wait, for its earliest timer, or for a nudge (the test's
/// stop, or `--sentinel`'s move of the primary, whose count is `moved`), as a smol program
/// selects over its sockets.
async fn client(targets: &[Target], index: u64, nudge: &Nudge, moved: Option<&AtomicU64>) {
    let mut link = local(|l| Link::new(&l.tally, index));
    let nodes = link.nodes();
    let mut socks: Vec<Option<Sock>> = (0..nodes).map(|_| None).collect();
    let mut started = vec![false; nodes];
    let mut ended = vec![false; nodes];
    let mut blocked = vec![false; nodes];
    // A clients ramp: the client's sockets open when its step begins; the test's stop (a
    // nudge) may come first, and then it never opens them.
    while let Some(at) = link.waits_until() {
        if at == Time::MAX {
            return;
        }
        let mut t = Timer::at(local(|l| l.tally.instant(at)));
        wait(&[], &[], Some(&mut t), nudge).await;
        let stopped = local(|l| {
            (0..nodes).for_each(|n| link.on_timeout(n, &mut l.tally));
            l.tally.plan().stop.is_due(l.tally.now())
        });
        if stopped && link.waits_until().is_some() {
            return;
        }
    }
    // Nodes that need a new socket, and nodes to drain.
    let mut to_connect: Vec<usize> = (0..nodes).filter(|&n| !link.is_dormant(n)).collect();
    let mut dirty: Vec<usize> = Vec::new();
    // One timer for the task's life, moved only when its time changes: a wait after a reply
    // mostly keeps the same time (the next arrival, on the slack's grid), and a new timer per
    // wait would be registered with the reactor, and the reactor woken to see it, each time.
    let mut timer = Timer::never();
    let mut timer_at: Option<Instant> = None;
    // `--sentinel`: the primary's moves this task has followed.
    let moves = || moved.map_or(0, |m| m.load(Ordering::Relaxed));
    let mut moves_seen = moves();
    loop {
        while let Some(n) = to_connect.pop() {
            started[n] = true;
            local(|l| link.connecting(n, &l.tally));
            let after = local(|l| l.tally.plan().conn.connect_timeout.unwrap_or_default());
            let by = local(|l| link.connect_by(n).map(|t| l.tally.instant(t)));
            let connected = match (local(|l| link.target(n, targets, &mut l.tally)), by) {
                // --connect-timeout: the connect races its deadline.
                (Ok(t), Some(at)) => {
                    future::or(Sock::connect(&t), async move {
                        Timer::at(at).await;
                        Err(respbench_driver::connect_timed_out(after))
                    })
                    .await
                }
                (Ok(t), None) => Sock::connect(&t).await,
                (Err(e), _) => Err(e),
            };
            match connected {
                Ok(s) => {
                    local(|l| link.connected(n, &mut l.tally));
                    socks[n] = Some(s);
                }
                Err(e) => local(|l| link.connect_failed(n, &e, &l.tally)),
            }
            dirty.push(n);
        }
        while let Some(n) = dirty.pop() {
            if !started[n] {
                // Kept for a node that has not appeared: opened once it has.
                if !link.is_dormant(n) {
                    to_connect.push(n);
                }
                continue;
            }
            if ended[n] {
                continue;
            }
            let mut writer = socks[n].as_ref();
            let next = local(|l| link.drain(n, writer.as_mut(), &mut l.tally));
            while let Some(w) = link.poll_wake() {
                dirty.push(w);
            }
            if link.must_reset(n) && !matches!(next, Next::Wait { .. }) {
                if let Some(s) = &socks[n] {
                    s.reset_on_close();
                }
            }
            match next {
                Next::Wait { write_blocked } => blocked[n] = write_blocked,
                Next::Reconnect => {
                    socks[n] = None;
                    to_connect.push(n);
                }
                Next::Ended => {
                    socks[n] = None;
                    ended[n] = true;
                }
                // --reconnect: no socket until the connection asks for one again.
                Next::Down => {
                    socks[n] = None;
                    blocked[n] = false;
                }
            }
        }
        if !to_connect.is_empty() {
            continue;
        }
        if (0..nodes).all(|n| !started[n] || ended[n]) {
            return;
        }
        // The stop and abandon times come from the publisher's nudge, not a timer per wait.
        let (now, due, at) = local(|l| {
            let plan = l.tally.plan();
            let live = (0..nodes).filter(|&n| started[n] && !ended[n]);
            let due = live.clone().filter_map(|n| link.timeout(n)).min();
            let timer = live.filter_map(|n| link.timer(n, plan)).min();
            (l.tally.now(), due, timer.map(|t| (t, l.tally.instant(t))))
        });
        let (asked, at) = (at.map(|(t, _)| t), at.map(|(_, i)| i));
        if timer_at != at {
            match at {
                Some(t) => timer.set_at(t),
                None => timer = Timer::never(),
            }
            timer_at = at;
        }
        let waited = due.is_none_or(|t| t > now);
        let woke = if waited {
            wait(&socks, &blocked, timer_at.is_some().then_some(&mut timer), nudge).await
        } else {
            Woke::Timer
        };
        // How late the loop came back against the time it asked for, whatever woke it (a
        // reply that won the poll over a timer as late is still late; an earlier time is not
        // lateness), as the other backends' `after_wait` records it.
        if let Some(asked) = asked {
            local(|l| {
                let now = l.tally.now();
                if now >= asked {
                    l.tally.woke_late(now.saturating_since(asked));
                }
            });
        }
        match woke {
            Woke::Timer => {
                // A timer that fired is spent: set again next time, even for the same time.
                timer_at = None;
                // A time of one node, or a nudge (the test's stop, the primary's move) for them
                // all: each looks at its own times; with a move, the sockets up follow it.
                let moved = moves() != moves_seen;
                moves_seen = moves();
                for n in (0..nodes).filter(|&n| started[n] && !ended[n]) {
                    local(|l| {
                        if moved {
                            link.move_away(n, &mut l.tally);
                        }
                        link.on_timeout(n, &mut l.tally)
                    });
                    dirty.push(n);
                }
            }
            Woke::Readable(n) => {
                if let Some(sock) = &socks[n] {
                    local(|l| {
                        let Local { tally, buf } = l;
                        // Level-triggered readiness: a FIN left unread raises the next wait at
                        // once.
                        link.read(n, &mut &*sock, buf, false, tally);
                    });
                }
                dirty.push(n);
            }
            Woke::Writable(n) => dirty.push(n),
        }
    }
}

/// What ended a task's wait.
enum Woke {
    /// Node `n`'s socket is readable.
    Readable(usize),
    /// Node `n`'s socket is writable: drain it again.
    Writable(usize),
    /// A time has come: the task's own timer, or a nudge (the test's stop).
    Timer,
}

/// Waits until a socket is readable, or writable while bytes wait for it, or `timer` fires, or
/// the task is nudged.
async fn wait(
    socks: &[Option<Sock>],
    blocked: &[bool],
    mut timer: Option<&mut Timer>,
    nudge: &Nudge,
) -> Woke {
    future::poll_fn(move |cx| {
        for (n, sock) in socks.iter().enumerate() {
            let Some(sock) = sock else { continue };
            // An error shows in the read that follows.
            if sock.poll_readable(cx).is_ready() {
                return Poll::Ready(Woke::Readable(n));
            }
            if blocked[n] && sock.poll_writable(cx).is_ready() {
                return Poll::Ready(Woke::Writable(n));
            }
        }
        if nudge.poll(cx) {
            return Poll::Ready(Woke::Timer);
        }
        if let Some(t) = timer.as_deref_mut() {
            if Pin::new(t).poll(cx).is_ready() {
                return Poll::Ready(Woke::Timer);
            }
        }
        Poll::Pending
    })
    .await
}

/// Wakes a waiting task from another thread: set, then wake the waker the task left.
#[derive(Default)]
struct Nudge {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Nudge {
    fn nudge(&self) {
        self.set.store(true, Ordering::SeqCst);
        if let Some(w) = self.waker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            w.wake();
        }
    }

    /// Whether the task was nudged since it last looked (and forgets it); else leaves the
    /// task's waker to be woken by the next nudge.
    fn poll(&self, cx: &mut Context<'_>) -> bool {
        {
            let mut w = self.waker.lock().unwrap_or_else(|e| e.into_inner());
            if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *w = Some(cx.waker().clone());
            }
        }
        // Looked at after the waker is left, so a nudge in between is not lost.
        self.take()
    }

    /// Whether the task was nudged since it last looked; forgets it.
    fn take(&self) -> bool {
        self.set.swap(false, Ordering::SeqCst)
    }
}
