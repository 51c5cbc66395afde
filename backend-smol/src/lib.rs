//! respbench-smol: drives respbench-core connections as smol async tasks.
//!
//! One task per connection; `threads` executor threads, each a `LocalExecutor` running its share
//! of the connections and sharing one `Stats` and one read buffer (the parser keeps no bytes).
//! A task never writes everything before reading: it writes what the socket takes, then waits for
//! the socket to become readable *or* writable (while bytes are pending) *or* the connection's
//! timer, so deep pipelines of large values cannot deadlock client and server. No protocol logic
//! lives here: the task follows the core's drain rule, as the mio backend does.
//!
//! Readiness does not come from `Async<TcpStream>`: async-io registers sources one-shot, which
//! costs an `epoll_ctl` per wait, that is per request at `-P 1`, and its reactor is one for the
//! process, which executor threads take turns at (a futex hand-off per wake-up with `--threads`).
//! Each thread instead registers its sockets once, edge-triggered, in an epoll set of its own (a
//! `mio::Poll`), connects there without blocking, and runs its executor in [`block_on`] over that
//! set. Timers still go through async-io (`Timer`), whose reactor then runs on its helper thread.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use mio::{Interest, Token};
use smol::{future, LocalExecutor, Timer};

use respbench_core::run::{connect_error, io_error, Published};
use respbench_core::{Connection, Event, Outcome, Stats, TestRun, Time};
use respbench_mio::net::{Sock, Target};

/// One read buffer per thread serves every connection: the core's parser keeps no bytes.
const READ_BUF: usize = 64 * 1024;
/// How often a thread publishes its figures and looks at the stop controls.
const PUBLISH_EVERY: Duration = Duration::from_millis(50);

/// Connects without blocking, in the thread's edge-triggered set: the writable edge (or an
/// error) says the connect completed.
async fn connect(
    target: &Target,
    registry: &mio::Registry,
    token: Token,
    ready: &Readiness,
) -> io::Result<Sock> {
    let mut sock = Sock::connect(target)?;
    registry.register(sock.source(), token, Interest::READABLE | Interest::WRITABLE)?;
    loop {
        ready.wait(true).await;
        if sock.finish_connect()? {
            return Ok(sock); // readiness stays: the edge may have brought bytes too
        }
        ready.readable.set(false);
        ready.writable.set(false);
    }
}

/// A connection's socket readiness: set by the dispatcher from edge-triggered events, cleared by
/// the task when a read or a write shows the socket empty or full.
#[derive(Default)]
struct Readiness {
    readable: Cell<bool>,
    writable: Cell<bool>,
    /// The peer's FIN or a socket error came with an event: no edge follows the end of a stream,
    /// so reading goes on to 0 or `WouldBlock`, short reads notwithstanding.
    hangup: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Readiness {
    /// Resolves when the socket is readable, or writable while `pending`.
    fn wait(&self, pending: bool) -> impl Future<Output = ()> + '_ {
        future::poll_fn(move |cx| {
            if self.readable.get() || (pending && self.writable.get()) {
                return Poll::Ready(());
            }
            let waker = match self.waker.take() {
                Some(w) if w.will_wake(cx.waker()) => w,
                _ => cx.waker().clone(),
            };
            self.waker.set(Some(waker));
            Poll::Pending
        })
    }
}

/// The token of the loop's own waker in the epoll set; connections use their slot index.
const WAKE: Token = Token(usize::MAX);

/// The waker of a thread's top-level future: sets a flag, and pokes the epoll set only when the
/// thread sleeps in it, so wake-ups from the thread itself (the common case) cost no syscall.
struct LoopWaker {
    woken: AtomicBool,
    sleeping: AtomicBool,
    poke: mio::Waker,
}

impl Wake for LoopWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            let _ = self.poke.wake();
        }
    }
}

/// Runs `fut` to completion on this thread, the thread's epoll set serving as its reactor.
///
/// The loop polls the future (the executor runs the woken tasks), then asks the set for events,
/// waiting only when nothing was woken, marks the connections' readiness and wakes their tasks.
/// async-io's own reactor, which still serves the timers, runs on its helper thread
/// ("async-io") and reaches this thread through the waker.
fn block_on<T>(fut: impl Future<Output = T>, mut poll: mio::Poll, slots: &[Rc<Readiness>]) -> io::Result<T> {
    let lw = Arc::new(LoopWaker {
        woken: AtomicBool::new(false),
        sleeping: AtomicBool::new(false),
        poke: mio::Waker::new(poll.registry(), WAKE)?,
    });
    let waker = Waker::from(lw.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    let mut events = mio::Events::with_capacity(1024);
    loop {
        lw.woken.store(false, Ordering::SeqCst);
        if let Poll::Ready(t) = fut.as_mut().poll(&mut cx) {
            return Ok(t);
        }
        lw.sleeping.store(true, Ordering::SeqCst);
        // A wake-up after this store pokes the set; one before it is seen here.
        let timeout = if lw.woken.load(Ordering::SeqCst) { Duration::ZERO } else { PUBLISH_EVERY };
        let polled = poll.poll(&mut events, Some(timeout));
        lw.sleeping.store(false, Ordering::SeqCst);
        match polled {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in events.iter() {
            let Some(r) = slots.get(ev.token().0) else { continue };
            if ev.is_read_closed() || ev.is_error() {
                r.hangup.set(true);
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                r.readable.set(true);
            }
            if ev.is_writable() || ev.is_write_closed() || ev.is_error() {
                r.writable.set(true);
            }
            if let Some(w) = r.waker.take() {
                w.wake();
            }
        }
    }
}

/// Runs one test on `run.threads` executor threads and merges what they recorded. `epoch` is
/// the run's time origin.
pub fn run_test(run: &TestRun, epoch: Instant) -> Result<Outcome, String> {
    respbench_mio::on_threads(run, epoch, |target, indices, start| {
        run_thread(run, target, indices, epoch, start)
    })
}

/// What the tasks of one thread share.
struct Shared {
    stats: Stats,
    failures: Vec<(String, u64)>,
}

/// What a connection task needs from its thread.
struct Local<'a> {
    run: &'a TestRun,
    target: Target,
    epoch: Instant,
    shared: RefCell<Shared>,
    registry: mio::Registry,
    buf: RefCell<Vec<u8>>,
}

fn run_thread(
    run: &TestRun,
    target: Target,
    indices: &[u64],
    epoch: Instant,
    start: Time,
) -> Result<Outcome, String> {
    let poll = mio::Poll::new().map_err(|e| format!("cannot create an event loop: {e}"))?;
    let registry = poll.registry().try_clone().map_err(|e| format!("cannot create an event loop: {e}"))?;
    let local = Local {
        run,
        target,
        epoch,
        shared: RefCell::new(Shared { stats: run.plan.new_stats(start, run.sigfig)?, failures: Vec::new() }),
        registry,
        buf: RefCell::new(vec![0u8; READ_BUF]),
    };
    let slots: Vec<Rc<Readiness>> = indices.iter().map(|_| Rc::default()).collect();
    let ex = LocalExecutor::new();
    let tasks: Vec<_> = indices
        .iter()
        .enumerate()
        .map(|(slot, &i)| {
            let conn = Connection::new(run.plan.clone(), i);
            ex.spawn(drive(&local, conn, Token(slot), slots[slot].clone()))
        })
        .collect();
    let all_done = async {
        for t in tasks {
            t.await;
        }
        false
    };
    let published = Cell::new(Published::default());
    let now = || Time::since(epoch, Instant::now());
    let publish_now = || {
        let mut p = published.get();
        run.progress.publish(&local.shared.borrow().stats, now(), &mut p);
        published.set(p);
    };
    let watcher = async {
        loop {
            Timer::after(PUBLISH_EVERY).await;
            publish_now();
            if run.progress.aborted() {
                return true;
            }
        }
    };
    let aborted = block_on(ex.run(future::or(all_done, watcher)), poll, &slots)
        .map_err(|e| format!("event loop failed: {e}"))?;
    publish_now();
    drop(ex); // cancels tasks still running after an abort, releasing their borrows of `local`
    let shared = local.shared.into_inner();
    Ok(Outcome { stats: shared.stats, failures: shared.failures, aborted })
}

/// One connection's task: connect, then loop on the drain rule until it finishes or fails.
async fn drive(local: &Local<'_>, mut conn: Connection, token: Token, ready: Rc<Readiness>) {
    let run = local.run;
    let now = || Time::since(local.epoch, Instant::now());
    let mut live = false;
    'socket: loop {
        ready.readable.set(false);
        ready.writable.set(false);
        ready.hangup.set(false);
        let mut sock = match connect(&local.target, &local.registry, token, &ready).await {
            Ok(s) => {
                conn.handle_connected(now(), &mut local.shared.borrow_mut().stats);
                Some(s)
            }
            Err(e) => {
                conn.handle_io_error(connect_error(&run.endpoint, &e));
                None
            }
        };
        loop {
            // Drain: write what the socket takes, then act on events.
            let mut pending = false;
            if let Some(sock) = &mut sock {
                loop {
                    // The clock is read before the write (see the mio backend: the reply can
                    // arrive before the send syscall returns).
                    let t = now();
                    let Some(bytes) = conn.poll_transmit(t) else { break };
                    let len = bytes.len();
                    match sock.write(bytes) {
                        Ok(n) => {
                            conn.advance_transmit(n, t, &mut local.shared.borrow_mut().stats);
                            if n < len {
                                // The socket is full: the next edge says when it has room.
                                ready.writable.set(false);
                                pending = true;
                                break;
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            ready.writable.set(false);
                            pending = true;
                            break;
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            conn.handle_io_error(io_error("write to", &run.endpoint, &e));
                            break;
                        }
                    }
                }
            }
            while let Some(ev) = conn.poll_event() {
                match ev {
                    Event::Ready if !live => {
                        live = true;
                        run.progress.live.fetch_add(1, Ordering::Relaxed);
                    }
                    Event::Reconnect => {
                        if let Some(mut s) = sock.take() {
                            let _ = local.registry.deregister(s.source());
                        }
                        continue 'socket;
                    }
                    Event::Finished => break 'socket,
                    Event::Failed(e) => {
                        Outcome::add_failure(&mut local.shared.borrow_mut().failures, e.to_string(), 1);
                        break 'socket;
                    }
                    _ => {}
                }
            }
            let Some(sock) = &mut sock else { break 'socket };
            // Wait for the socket to be readable, writable (while bytes wait), or the timer.
            if !ready.readable.get() {
                let timed_out = match conn.poll_timeout() {
                    None => {
                        ready.wait(pending).await;
                        false
                    }
                    Some(t) => {
                        let woken = async {
                            ready.wait(pending).await;
                            false
                        };
                        let timer = async {
                            Timer::at(local.epoch + t.as_duration()).await;
                            true
                        };
                        future::or(woken, timer).await
                    }
                };
                if timed_out {
                    conn.handle_timeout(now());
                    continue;
                }
                if !ready.readable.get() {
                    continue; // writable
                }
            }
            let mut buf = local.buf.borrow_mut();
            loop {
                match sock.read(&mut buf) {
                    Ok(0) => {
                        conn.handle_closed(now());
                        break;
                    }
                    Ok(n) => {
                        conn.handle_input(&buf[..n], now(), &mut local.shared.borrow_mut().stats);
                        // A short read emptied the socket: the next byte to arrive raises a new
                        // edge, so asking again would only cost a syscall returning EAGAIN. Not
                        // after a hangup: a FIN that came with the last bytes raises no edge.
                        if n < buf.len() && !ready.hangup.get() {
                            ready.readable.set(false);
                            break;
                        }
                        if conn.is_closed() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        ready.readable.set(false);
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        conn.handle_io_error(io_error("read from", &run.endpoint, &e));
                        break;
                    }
                }
            }
        }
    }
    if live {
        run.progress.live.fetch_sub(1, Ordering::Relaxed);
    }
}
