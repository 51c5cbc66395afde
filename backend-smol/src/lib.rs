//! respbench-smol: drives respbench-core connections as smol async tasks.
//!
//! One task per connection; `threads` executor threads, each a `LocalExecutor` running its share
//! of the connections and sharing one `Stats`. A task never writes everything before reading: it
//! writes what the socket takes, then waits for the socket to become readable *or* writable
//! (while bytes are pending) *or* the connection's timer, so deep pipelines of large values cannot
//! deadlock client and server. No protocol logic lives here: the task follows the core's drain
//! rule, as the mio backend does.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use smol::{future, Async, LocalExecutor, Timer};

use respbench_core::run::{connect_error, io_error};
use respbench_core::{Connection, Endpoint, Event, Outcome, Stats, TestRun, Time};

/// Per-task read buffer: small, since there is one per connection (the parser keeps no bytes).
const READ_BUF: usize = 16 * 1024;
/// How often a thread publishes its figures and looks at the stop controls.
const PUBLISH_EVERY: Duration = Duration::from_millis(50);

#[derive(Clone, Debug)]
enum Target {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

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

    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.get_ref().read(buf),
            Sock::Unix(s) => s.get_ref().read(buf),
        }
    }

    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.get_ref().write(buf),
            Sock::Unix(s) => s.get_ref().write(buf),
        }
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

fn resolve(endpoint: &Endpoint) -> Result<Target, String> {
    match endpoint {
        Endpoint::Unix(p) => Ok(Target::Unix(p.clone())),
        Endpoint::Tcp { host, port } => (host.as_str(), *port)
            .to_socket_addrs()
            .map_err(|e| format!("Could not connect to Redis at {endpoint}: {e}"))?
            .next()
            .map(Target::Tcp)
            .ok_or_else(|| format!("Could not connect to Redis at {endpoint}: no address")),
    }
}

/// Runs one test on `run.threads` executor threads and merges what they recorded. `epoch` is
/// the run's time origin.
pub fn run_test(run: &TestRun, epoch: Instant) -> Result<Outcome, String> {
    let target = resolve(&run.endpoint)?;
    let start = Time::since(epoch, Instant::now());
    let results: Vec<Result<Outcome, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..run.loops())
            .map(|t| {
                let indices = run.connections_of(t);
                let target = target.clone();
                s.spawn(move || run_thread(run, target, &indices, epoch, start))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("executor thread panicked".into())))
            .collect()
    });
    Outcome::merge_all(results)
}

/// What the tasks of one thread share.
struct Shared {
    stats: Stats,
    failures: Vec<(String, u64)>,
}

fn run_thread(
    run: &TestRun,
    target: Target,
    indices: &[u64],
    epoch: Instant,
    start: Time,
) -> Result<Outcome, String> {
    let shared =
        Rc::new(RefCell::new(Shared { stats: run.plan.new_stats(start, run.sigfig)?, failures: Vec::new() }));
    let ex = LocalExecutor::new();
    let tasks: Vec<_> = indices
        .iter()
        .map(|&i| {
            let conn = Connection::new(run.plan.clone(), i);
            ex.spawn(drive(run, conn, target.clone(), epoch, shared.clone()))
        })
        .collect();
    let all_done = async {
        for t in tasks {
            t.await;
        }
        false
    };
    let watcher = async {
        let mut published = (0u64, 0u64);
        loop {
            Timer::after(PUBLISH_EVERY).await;
            publish(run, &shared.borrow().stats, &mut published);
            if run.progress.aborted() {
                return true;
            }
        }
    };
    // async_io::block_on (smol::block_on) drives the reactor on this thread; futures-lite's would
    // park it and leave the reactor to the global async-io thread, a futex wake-up per event.
    let aborted = smol::block_on(ex.run(future::or(all_done, watcher)));
    let mut published = (0, 0);
    publish(run, &shared.borrow().stats, &mut published);
    drop(ex); // cancels tasks still running after an abort, releasing their handles on `shared`
    let shared =
        Rc::try_unwrap(shared).map_err(|_| "tasks outlived their executor".to_string())?.into_inner();
    Ok(Outcome { stats: shared.stats, failures: shared.failures, aborted })
}

fn publish(run: &TestRun, stats: &Stats, published: &mut (u64, u64)) {
    let p = &run.progress;
    let req = stats.requests;
    let sum = (stats.latency.mean() * stats.latency.len() as f64) as u64;
    p.completed.fetch_add(req.saturating_sub(published.0), Ordering::Relaxed);
    p.latency_sum_micros.fetch_add(sum.saturating_sub(published.1), Ordering::Relaxed);
    *published = (req, sum);
}

/// What woke a connection's task.
enum Wake {
    Readable,
    Writable,
    /// The time from `poll_timeout` came.
    Timer,
}

/// One connection's task: connect, then loop on the drain rule until it finishes or fails.
async fn drive(
    run: &TestRun,
    mut conn: Connection,
    target: Target,
    epoch: Instant,
    shared: Rc<RefCell<Shared>>,
) {
    let now = || Time::since(epoch, Instant::now());
    let mut buf = vec![0u8; READ_BUF];
    let mut live = false;
    'socket: loop {
        let sock = match Sock::connect(&target).await {
            Ok(s) => {
                conn.handle_connected(now(), &mut shared.borrow_mut().stats);
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
            if let Some(sock) = &sock {
                let t = now();
                while let Some(bytes) = conn.poll_transmit(t) {
                    let len = bytes.len();
                    match sock.write(bytes) {
                        Ok(n) => {
                            conn.advance_transmit(n, now(), &mut shared.borrow_mut().stats);
                            if n < len {
                                pending = true;
                                break;
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
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
                    Event::Reconnect => continue 'socket,
                    Event::Finished => break 'socket,
                    Event::Failed(e) => {
                        Outcome::add_failure(&mut shared.borrow_mut().failures, e.to_string(), 1);
                        break 'socket;
                    }
                    _ => {}
                }
            }
            let Some(sock) = &sock else { break 'socket };
            // Wait for the socket to be readable, writable (while bytes wait), or the timer.
            let timer = conn.poll_timeout().map(|t| epoch + t.as_duration());
            let readable = async { sock.readable().await.map(|_| Wake::Readable) };
            let writable = async {
                if pending {
                    sock.writable().await.map(|_| Wake::Writable)
                } else {
                    future::pending().await
                }
            };
            let timeout = async {
                match timer {
                    Some(at) => {
                        Timer::at(at).await;
                    }
                    None => future::pending::<()>().await,
                }
                Ok(Wake::Timer)
            };
            match future::or(readable, future::or(writable, timeout)).await {
                Ok(Wake::Readable) => {}
                Ok(Wake::Writable) => continue,
                Ok(Wake::Timer) => {
                    conn.handle_timeout(now());
                    continue;
                }
                Err(e) => {
                    conn.handle_io_error(io_error("read from", &run.endpoint, &e));
                    continue;
                }
            }
            loop {
                match sock.read(&mut buf) {
                    Ok(0) => {
                        conn.handle_closed(now());
                        break;
                    }
                    Ok(n) => {
                        conn.handle_input(&buf[..n], now(), &mut shared.borrow_mut().stats);
                        if n < buf.len() || conn.is_closed() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
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
