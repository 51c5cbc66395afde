//! respbench-smol: drives respbench connections as smol tasks, on smol's own runtime.
//!
//! This is the strategy a smol user writes: one task per connection on a multi-threaded
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
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::task::{Poll, Waker};
use std::time::Instant;

use respbench_core::{Outcome, RunError, TestRun};
use respbench_driver::{
    on_threads, resolve_all, Link, Next, Tally, Target, Tls, Watch, PUBLISH_EVERY, READ_BUF,
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
    let nudges: Vec<Nudge> = (0..run.connections()).map(|_| Nudge::default()).collect();
    // After what its tasks borrow, so that it is dropped first.
    let ex = Executor::new();
    // Every task holds a sender; the channel closes, waking every thread, when the last ends.
    let (alive, all_ended) = smol::channel::bounded::<()>(1);
    for i in 0..nudges.len() {
        ex.spawn(connection(&targets, i as u64, &nudges, alive.clone())).detach();
    }
    drop(alive);
    let watch = Mutex::new(Watch::default());
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
                if watch.lock().unwrap_or_else(|e| e.into_inner()).changed(&run.plan, now) {
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
    async fn connect(target: &Target) -> io::Result<Sock> {
        Ok(match target {
            Target::Tcp(a) => {
                let s = Async::<TcpStream>::connect(*a).await?;
                s.get_ref().set_nodelay(true)?;
                Sock::Tcp(s)
            }
            Target::Unix(p) => Sock::Unix(Async::<UnixStream>::connect(p).await?),
        })
    }

    async fn readable(&self) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.readable().await,
            Sock::Unix(s) => s.readable().await,
        }
    }

    async fn writable(&self) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.writable().await,
            Sock::Unix(s) => s.writable().await,
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

impl Write for &Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.get_ref().write(buf),
            Sock::Unix(s) => s.get_ref().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What ended a task's wait.
enum Woke {
    Readable,
    /// Writable: drain again.
    Writable,
    /// A time has come: the task's own timer, or a nudge (the test's stop).
    Timer,
}

/// One connection's task: connect, then the drain rule until the connection ends.
/// Over several nodes, a client is one task per node; `nudges` wake the tasks of the client's
/// other nodes when its router queued requests for them.
async fn connection(targets: &[Target], index: u64, nudges: &[Nudge], alive: smol::channel::Sender<()>) {
    let nudge = &nudges[index as usize];
    let mut link = local(|l| Link::new(&l.tally, index));
    let mut _alive = Some(alive);
    if local(|l| link.is_dormant(&l.tally)) {
        // Kept for a node that has not appeared: it does not hold the test open meanwhile.
        let weak = _alive.take().map(|a| a.downgrade());
        loop {
            nudge.wait().await;
            if !local(|l| link.is_dormant(&l.tally)) {
                break;
            }
        }
        // The connection that named the node is alive, so the test is.
        match weak.and_then(|w| w.upgrade()) {
            Some(a) => _alive = Some(a),
            None => return,
        }
    }
    'socket: loop {
        local(|l| link.connecting(&l.tally));
        let target = local(|l| link.target(targets, &l.tally));
        let connected = match target {
            Ok(t) => Sock::connect(&t).await,
            Err(e) => Err(e),
        };
        let mut sock = match connected {
            Ok(s) => {
                local(|l| link.connected(&mut l.tally));
                Some(s)
            }
            Err(e) => {
                link.connect_failed(&e);
                None
            }
        };
        loop {
            let mut writer = sock.as_ref();
            let next = local(|l| link.drain(writer.as_mut(), &mut l.tally));
            for w in link.take_wakes() {
                if let Some(n) = nudges.get(w as usize) {
                    n.nudge();
                }
            }
            let write_blocked = match next {
                Next::Wait { write_blocked } => write_blocked,
                Next::Reconnect => continue 'socket,
                Next::Ended => break 'socket,
                // --reconnect: no socket until the connection asks for one again.
                Next::Down => {
                    sock = None;
                    false
                }
            };
            // The stop and abandon times come from the publisher's nudge, not a timer per wait.
            let (now, due, timer) = local(|l| (l.tally.now(), link.timeout(), link.timer(l.tally.plan())));
            let timer = async {
                match timer {
                    Some(t) => Timer::at(local(|l| l.tally.instant(t))).await,
                    None => future::pending().await,
                };
                Woke::Timer
            };
            let woke = match &sock {
                _ if due.is_some_and(|t| t <= now) => Woke::Timer,
                Some(sock) => future::or(wait(sock, write_blocked, nudge), timer).await,
                None => {
                    let nudged = async {
                        nudge.wait().await;
                        Woke::Timer
                    };
                    future::or(nudged, timer).await
                }
            };
            match (woke, &sock) {
                (Woke::Timer, _) => local(|l| link.on_timeout(&mut l.tally)),
                (Woke::Readable, Some(sock)) => local(|l| {
                    let Local { tally, buf } = l;
                    // Level-triggered readiness: a FIN left unread raises the next wait at once.
                    link.read(&mut &*sock, buf, false, tally);
                }),
                _ => {}
            }
        }
    }
}

/// Waits until the socket is readable, or writable while bytes wait, or the task is nudged.
async fn wait(sock: &Sock, write_blocked: bool, nudge: &Nudge) -> Woke {
    let readable = async {
        // An error shows in the read that follows.
        let _ = sock.readable().await;
        Woke::Readable
    };
    let writable = async {
        if write_blocked {
            let _ = sock.writable().await;
            Woke::Writable
        } else {
            future::pending().await
        }
    };
    let nudged = async {
        nudge.wait().await;
        Woke::Timer
    };
    future::or(readable, future::or(writable, nudged)).await
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

    /// Resolves once after each [`Nudge::nudge`].
    fn wait(&self) -> impl std::future::Future<Output = ()> + '_ {
        future::poll_fn(move |cx| {
            {
                let mut w = self.waker.lock().unwrap_or_else(|e| e.into_inner());
                if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *w = Some(cx.waker().clone());
                }
            }
            // Looked at after the waker is left, so a nudge in between is not lost.
            if self.set.swap(false, Ordering::SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}
