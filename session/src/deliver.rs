//! A delivery test's subscribers (`-t pubsub`, issue #42): connections beside the test's
//! clients that count toward no budget, each on a thread of its own (a blocking read, so a
//! message is timed when it arrives, not when a loop comes round), each a core
//! [`Subscriber`] fed what it reads with the run's clock. They are subscribed before the
//! publishers start, and read after the test ends until every message published has come or the
//! drain grace passes; [`Subscribers::finish`] summarises them into a [`Delivery`].

use std::io::{ErrorKind, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use respbench_core::delivery::{Delivery, Received, Subscriber, Waits};
use respbench_core::{Stats, Time};

use crate::server::{Conn, Server};
use crate::Error;

/// How long a read waits before the thread looks whether it should stop.
const NAP: Duration = Duration::from_millis(20);

/// What one subscriber received, and why it ended early.
type Got = (Received, Option<String>);

/// One subscriber's thread and what it shares.
struct Sub {
    /// What it received, why it ended early, and its thread's CPU (user, system seconds).
    thread: JoinHandle<(Got, (f64, f64))>,
    /// Distinct messages received so far.
    distinct: Arc<AtomicU64>,
    /// Whether its connection ended.
    ended: Arc<AtomicBool>,
}

/// A test's subscribers, running.
pub(crate) struct Subscribers {
    subs: Vec<Sub>,
    stop: Arc<AtomicBool>,
    sigfig: u8,
    /// A list's waiters (`-t blpop`): their one tracker, each element going to one of them.
    shared: Option<Arc<Mutex<Subscriber>>>,
}

/// What a delivery test's waiting connections wait on.
pub(crate) enum Waiting<'a> {
    /// `SUBSCRIBE channel`, or `SSUBSCRIBE channel` when sharded (`--cluster`: the server is
    /// the node that owns its slot).
    Channel(&'a [u8], bool),
    /// `--channels M`: `SUBSCRIBE` to each of `base` + 6 digits, 0 to M − 1.
    Channels(&'a [u8], u64),
    /// `BLPOP key` in a loop.
    List(&'a [u8]),
    /// `XREADGROUP GROUP group consumer-i … STREAMS key >` in a loop, the group made first.
    Stream(&'a [u8], &'a [u8]),
}

/// How long a waiter's `BLPOP` blocks before it asks again (and looks whether to stop).
const BLPOP_TIMEOUT: &[u8] = b"0.1";

impl Subscribers {
    /// Opens `n` connections to `server`, each `HELLO 3` first with `resp3`, and subscribes each
    /// to `channel`, waiting for the confirmation; then reads on a thread each, timing on the
    /// clock of `epoch`. A refused subscription is the run's error.
    pub(crate) fn start(
        server: &Server,
        waiting: Waiting<'_>,
        n: usize,
        resp3: bool,
        sigfig: u8,
        epoch: Instant,
    ) -> Result<Subscribers, Error> {
        let fail = |e: String| Error::Tests(format!("subscriber: {e}"));
        let stop = Arc::new(AtomicBool::new(false));
        let mut subs = Vec::with_capacity(n);
        let (tx, rx) = std::sync::mpsc::channel();
        let mut shard = false;
        let mut many = 0;
        let (channel, kind, group) = match waiting {
            Waiting::Channel(c, sharded) => {
                shard = sharded;
                (c, Waits::Messages, None)
            }
            Waiting::Channels(base, m) => {
                many = m;
                (base, Waits::Messages, None)
            }
            Waiting::List(k) => (k, Waits::List, None),
            Waiting::Stream(k, g) => (k, Waits::Stream, Some(g)),
        };
        if let Some(g) = group {
            make_group(server, channel, g).map_err(fail)?;
        }
        let shared = match kind {
            Waits::Messages => None,
            _ => Some(Arc::new(Mutex::new(Subscriber::new(kind, sigfig).map_err(fail)?))),
        };
        for i in 0..n {
            let shared = shared.clone();
            // What a waiter sends again and again.
            let ask: Vec<Vec<u8>> = match group {
                None => vec![b"BLPOP".to_vec(), channel.to_vec(), BLPOP_TIMEOUT.to_vec()],
                Some(g) => [
                    b"XREADGROUP".as_slice(),
                    b"GROUP",
                    g,
                    format!("consumer-{i}").as_bytes(),
                    b"COUNT",
                    b"100",
                    b"BLOCK",
                    b"100",
                    b"NOACK",
                    b"STREAMS",
                    channel,
                    b">",
                ]
                .iter()
                .map(|a| a.to_vec())
                .collect(),
            };
            let distinct = Arc::new(AtomicU64::new(0));
            let ended = Arc::new(AtomicBool::new(false));
            let (d, e, s) = (Arc::clone(&distinct), Arc::clone(&ended), Arc::clone(&stop));
            let (server, channel, tx) = (server.clone(), channel.to_vec(), tx.clone());
            let thread = std::thread::Builder::new()
                .name(format!("subscriber-{i}"))
                .spawn(move || {
                    let got = (|| {
                        if let Some(shared) = shared {
                            return wait_list(&server, &ask, resp3, sigfig, epoch, &shared, &tx, &d, &e, &s);
                        }
                        let subscribed = subscribe(&server, &channel, shard, many, resp3, sigfig);
                        let (reader, core) = match subscribed {
                            Ok(r) => {
                                let _ = tx.send(Ok(()));
                                r
                            }
                            Err(why) => {
                                let _ = tx.send(Err(why.clone()));
                                e.store(true, Ordering::Relaxed);
                                let received = Received::new(sigfig).unwrap_or_else(|_| unreachable!());
                                return (received, Some(why));
                            }
                        };
                        read(reader, core, epoch, &d, &e, &s)
                    })();
                    (got, thread_cpu())
                })
                .map_err(|e| fail(e.to_string()))?;
            subs.push(Sub { thread, distinct, ended });
        }
        drop(tx);
        let subscribers = Subscribers { subs, stop, sigfig, shared };
        for _ in 0..n {
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(why)) => {
                    subscribers.stop.store(true, Ordering::Relaxed);
                    return Err(fail(why));
                }
                Err(_) => return Err(fail("a subscriber's thread ended".into())),
            }
        }
        Ok(subscribers)
    }

    /// After the test: waits until every subscriber has `published` distinct messages, has
    /// ended, or `grace` has passed; stops and joins them and summarises into `stats`.
    /// Gives back the CPU (user, system seconds) the subscribers' threads used, set-up and
    /// drain included, to be left out of the client's figure.
    pub(crate) fn finish(self, stats: &mut Stats, grace: Duration) -> Result<(f64, f64), Error> {
        let published = stats.requests.saturating_sub(stats.errors.total().saturating_sub(stats.lost));
        let until = Instant::now() + grace;
        let waiting = |subs: &[Sub]| match &self.shared {
            // A list: until every element is taken, while a waiter is left.
            Some(sh) => {
                let taken = sh.lock().map_or(published, |t| t.received.distinct());
                taken < published && subs.iter().any(|s| !s.ended.load(Ordering::Relaxed))
            }
            None => subs
                .iter()
                .any(|s| !s.ended.load(Ordering::Relaxed) && s.distinct.load(Ordering::Relaxed) < published),
        };
        while Instant::now() < until && waiting(&self.subs) {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stop.store(true, Ordering::Relaxed);
        let mut got = Vec::with_capacity(self.subs.len());
        let mut cpu = (0.0, 0.0);
        for s in self.subs {
            let (g, (user, sys)) =
                s.thread.join().map_err(|_| Error::Tests("a subscriber's thread panicked".into()))?;
            cpu = (cpu.0 + user, cpu.1 + sys);
            got.push(g);
        }
        let d = match self.shared {
            Some(sh) => {
                let tracker = Arc::try_unwrap(sh)
                    .ok()
                    .and_then(|m| m.into_inner().ok())
                    .ok_or_else(|| Error::Tests("a waiter's tracker is still held".into()))?;
                let waiters: Vec<(u64, Option<String>)> =
                    got.into_iter().map(|(r, f)| (r.delivered, f)).collect();
                Delivery::summarise_queue(tracker.received, &waiters, published)
            }
            None => {
                let receivers = u64::try_from(stats.integer_sum).unwrap_or(0);
                Delivery::summarise(&got, published, receivers, self.sigfig).map_err(Error::Tests)?
            }
        };
        stats.delivery = Some(Box::new(d));
        Ok(cpu)
    }
}

/// Connects, says `HELLO 3` with `resp3`, subscribes to `channel` and waits for the
/// confirmation, which the core's parse must recognise (RESP2 array or RESP3 push).
fn subscribe(
    server: &Server,
    channel: &[u8],
    shard: bool,
    many: u64,
    resp3: bool,
    sigfig: u8,
) -> Result<(Box<dyn Read>, Subscriber), String> {
    let mut c = Conn::authenticated(server).map_err(|e| e.message)?;
    if resp3 {
        let v = c.command(&[b"HELLO".as_slice(), b"3"]).map_err(|e| e.message)?;
        if let respbench_core::resp::Value::Error(e) = v {
            return Err(format!("HELLO 3: {}", String::from_utf8_lossy(&e)));
        }
    }
    let mut core = Subscriber::new(Waits::Messages, sigfig)?;
    let command: &[u8] = if shard { b"SSUBSCRIBE" } else { b"SUBSCRIBE" };
    // One channel, or each of `--channels`' names, confirmed one by one.
    let names: Vec<Vec<u8>> = match many {
        0 => vec![channel.to_vec()],
        m => (0..m).map(|i| respbench_core::template::Template::channel_name(channel, i)).collect(),
    };
    for (i, name) in names.iter().enumerate() {
        let v = c.command(&[command, name]).map_err(|e| e.message)?;
        let mut bytes = Vec::new();
        v.encode(&mut bytes);
        core.handle_input(&bytes, Time::ZERO).map_err(|e| format!("SUBSCRIBE: {e}"))?;
        if core.confirmed != i as u64 + 1 {
            return Err(format!("SUBSCRIBE: not confirmed: {v:?}"));
        }
    }
    c.set_timeout(NAP);
    Ok((c.into_reader(), core))
}

/// Makes the consumer group `group` of stream `key` (and the stream), or, when it exists,
/// moves it to the stream's end: its consumers read what is added from now on.
fn make_group(server: &Server, key: &[u8], group: &[u8]) -> Result<(), String> {
    use respbench_core::resp::Value;
    let mut c = Conn::authenticated(server).map_err(|e| e.message)?;
    let created = c
        .command(&[b"XGROUP".as_slice(), b"CREATE", key, group, b"$", b"MKSTREAM"])
        .map_err(|e| e.message)?;
    let v = match created {
        Value::Error(e) if e.starts_with(b"BUSYGROUP") => {
            c.command(&[b"XGROUP".as_slice(), b"SETID", key, group, b"$"]).map_err(|e| e.message)?
        }
        v => v,
    };
    match v {
        Value::Error(e) => Err(format!("XGROUP: {}", String::from_utf8_lossy(&e))),
        _ => Ok(()),
    }
}

/// A list waiter's thread: `BLPOP key` in a loop, each reply to the list's one tracker, until
/// told to stop (never between a BLPOP and its reply: an element popped is always read). Gives
/// back, as its [`Received`], only how many elements it took (`delivered`).
#[allow(clippy::too_many_arguments)]
fn wait_list(
    server: &Server,
    ask: &[Vec<u8>],
    resp3: bool,
    sigfig: u8,
    epoch: Instant,
    shared: &Mutex<Subscriber>,
    tx: &std::sync::mpsc::Sender<Result<(), String>>,
    distinct: &AtomicU64,
    ended: &AtomicBool,
    stop: &AtomicBool,
) -> (Received, Option<String>) {
    let mut mine = Received::new(sigfig).unwrap_or_else(|_| unreachable!());
    let connected = Conn::authenticated(server).map_err(|e| e.message).and_then(|mut c| {
        if resp3 {
            if let respbench_core::resp::Value::Error(e) =
                c.command(&[b"HELLO".as_slice(), b"3"]).map_err(|e| e.message)?
            {
                return Err(format!("HELLO 3: {}", String::from_utf8_lossy(&e)));
            }
        }
        c.set_timeout(Duration::from_secs(5));
        Ok(c)
    });
    let mut c = match connected {
        Ok(c) => {
            let _ = tx.send(Ok(()));
            c
        }
        Err(why) => {
            let _ = tx.send(Err(why.clone()));
            ended.store(true, Ordering::Relaxed);
            return (mine, Some(why));
        }
    };
    let failure = loop {
        if stop.load(Ordering::Relaxed) {
            break None;
        }
        let args: Vec<&[u8]> = ask.iter().map(Vec::as_slice).collect();
        let v = match c.command(&args) {
            Ok(v) => v,
            Err(e) => break Some(e.message),
        };
        let now = Time::since(epoch, Instant::now());
        let Ok(mut t) = shared.lock() else { break Some("a waiter panicked".into()) };
        let before = t.received.delivered;
        if let Err(e) = t.on_value(v, now) {
            break Some(e.to_string());
        }
        mine.delivered += t.received.delivered - before;
        distinct.store(mine.delivered, Ordering::Relaxed);
    };
    ended.store(true, Ordering::Relaxed);
    (mine, failure)
}

/// A subscriber's thread: reads until told to stop or its connection ends.
fn read(
    mut reader: Box<dyn Read>,
    mut core: Subscriber,
    epoch: Instant,
    distinct: &AtomicU64,
    ended: &AtomicBool,
    stop: &AtomicBool,
) -> (Received, Option<String>) {
    let mut buf = vec![0u8; 64 * 1024];
    let failure = loop {
        if stop.load(Ordering::Relaxed) {
            break None;
        }
        match reader.read(&mut buf) {
            Ok(0) => break Some("the server closed the connection".to_string()),
            Ok(n) => {
                let now = Time::since(epoch, Instant::now());
                if let Err(e) = core.handle_input(&buf[..n], now) {
                    break Some(e.to_string());
                }
                distinct.store(core.received.distinct(), Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => break Some(e.to_string()),
        }
    };
    ended.store(true, Ordering::Relaxed);
    (core.received, failure)
}

/// The calling thread's CPU so far: user and system seconds (Linux; none elsewhere).
fn thread_cpu() -> (f64, f64) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getrusage writes into the zeroed struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0 {
            let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
            return (secs(ru.ru_utime), secs(ru.ru_stime));
        }
    }
    (0.0, 0.0)
}
