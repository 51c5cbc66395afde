//! A delivery test's subscribers (`-t pubsub`, issue #42): connections beside the test's
//! clients that count toward no budget, on threads of their own that do nothing else (a
//! message is timed when it arrives, not when an event loop comes round), each a core
//! [`Subscriber`] fed what it reads with the run's clock. A thread serves up to [`GROUP`]
//! subscribers, waiting on their sockets with `poll(2)` and reading each ready one until it
//! would block; a list's or a stream's waiter (`-t blpop`, `xreadgroup`) is a thread of its own,
//! since its reads are blocking commands. They are subscribed before the publishers start, and
//! read after the test ends until every message published has come or the drain grace passes;
//! [`Subscribers::finish`] summarises them into a [`Delivery`].

use std::io::{ErrorKind, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use respbench_core::delivery::{Delivery, Received, Subscriber, Waits};
use respbench_core::plan::Backoff;
use respbench_core::{Stats, Time};

use crate::error::Error;
use crate::error::SubscriberError;
use crate::server::{Conn, Polled, Server};

/// How long a wait lasts before the thread looks whether it should stop.
const NAP: Duration = Duration::from_millis(20);

/// The most subscribers one thread serves.
pub const GROUP: usize = 128;

/// What one subscriber received, why it ended early, and (`--reconnect`) how many times it
/// came back and why it first ended before that.
type Got = (Received, Option<String>, u64, Option<String>);

/// What a thread gives back: its subscribers' [`Got`]s in order, and its CPU (user, system
/// seconds).
type Gave = (Vec<Got>, (f64, f64));

/// What a subscriber shares with the test while it runs.
struct Sub {
    /// Distinct messages received so far.
    distinct: Arc<AtomicU64>,
    /// Whether its connection ended.
    ended: Arc<AtomicBool>,
}

/// A test's subscribers, running.
pub(crate) struct Subscribers {
    subs: Vec<Sub>,
    /// The threads; their subscribers, in turn, are `subs`.
    threads: Vec<JoinHandle<Gave>>,
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
    /// to `channel`, waiting for the confirmation; then reads them, up to [`GROUP`] a thread,
    /// timing on the clock of `epoch` (a list's or a stream's waiters: a thread each). A refused
    /// subscription is the run's error. With `reconnect` (`--reconnect`'s backoff, as the test's
    /// connections have it), a connection that ends mid-run comes back after the backoff's wait,
    /// doubling while attempts fail, and subscribes or waits again; what was published meanwhile
    /// counts as missing.
    pub(crate) fn start(
        server: &Server,
        waiting: Waiting<'_>,
        n: usize,
        resp3: bool,
        sigfig: u8,
        epoch: Instant,
        reconnect: Option<Backoff>,
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
            make_group(server, channel, g).map_err(|e| fail(e.to_string()))?;
        }
        let shared = match kind {
            Waits::Messages => None,
            _ => Some(Arc::new(Mutex::new(Subscriber::new(kind, sigfig).map_err(fail)?))),
        };
        let mut threads = Vec::new();
        let sub = || Sub { distinct: Arc::new(AtomicU64::new(0)), ended: Arc::new(AtomicBool::new(false)) };
        if let Some(shared) = &shared {
            // Waiters: a thread each, its reads blocking commands.
            for i in 0..n {
                let one = sub();
                let ask = waiter_command(channel, group, i);
                let (d, e, st) = (Arc::clone(&one.distinct), Arc::clone(&one.ended), Arc::clone(&stop));
                let (server, shared, tx) = (server.clone(), Arc::clone(shared), tx.clone());
                let thread = std::thread::Builder::new()
                    .name(format!("waiter-{i}"))
                    .spawn(move || {
                        let got = wait_list(
                            &server, &ask, resp3, sigfig, epoch, &shared, &tx, &d, &e, &st, reconnect,
                        );
                        (vec![got], thread_cpu())
                    })
                    .map_err(|e| fail(e.to_string()))?;
                subs.push(one);
                threads.push(thread);
            }
        } else {
            // Subscribers: up to GROUP a thread, each subscribed in turn, then read together.
            for first in (0..n).step_by(GROUP) {
                let members: Vec<Sub> = (first..n.min(first + GROUP)).map(|_| sub()).collect();
                let shares: Vec<(Arc<AtomicU64>, Arc<AtomicBool>)> =
                    members.iter().map(|m| (Arc::clone(&m.distinct), Arc::clone(&m.ended))).collect();
                let (server, channel, tx, st) =
                    (server.clone(), channel.to_vec(), tx.clone(), Arc::clone(&stop));
                let thread = std::thread::Builder::new()
                    .name(format!("subscribers-{first}"))
                    .spawn(move || {
                        let mut group: Vec<Member> = shares
                            .into_iter()
                            .map(|(distinct, ended)| {
                                let subscribed = subscribe(&server, &channel, shard, many, resp3, sigfig);
                                let _ = tx.send(subscribed.as_ref().map(|_| ()).map_err(Clone::clone));
                                Member::new(subscribed, sigfig, distinct, ended)
                            })
                            .collect();
                        let again = |core: &mut Subscriber| {
                            subscribe_into(&server, &channel, shard, many, resp3, core)
                        };
                        read_group(&mut group, epoch, &st, reconnect.map(|b| (&again as Again<'_>, b)));
                        let got = group
                            .into_iter()
                            .map(|m| (m.core.received, m.failure, m.reconnects, m.dropped))
                            .collect();
                        (got, thread_cpu())
                    })
                    .map_err(|e| fail(e.to_string()))?;
                subs.extend(members);
                threads.push(thread);
            }
        }
        drop(tx);
        let subscribers = Subscribers { subs, threads, stop, sigfig, shared };
        for _ in 0..n {
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(why)) => {
                    subscribers.stop.store(true, Ordering::Relaxed);
                    return Err(fail(why.to_string()));
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
        for t in self.threads {
            let (g, (user, sys)) =
                t.join().map_err(|_| Error::Tests("a subscriber's thread panicked".into()))?;
            cpu = (cpu.0 + user, cpu.1 + sys);
            got.extend(g);
        }
        let d = match self.shared {
            Some(sh) => {
                let tracker = Arc::try_unwrap(sh)
                    .ok()
                    .and_then(|m| m.into_inner().ok())
                    .ok_or_else(|| Error::Tests("a waiter's tracker is still held".into()))?;
                let waiters: Vec<(u64, Option<String>)> =
                    got.iter().map(|(r, f, _, _)| (r.delivered, f.clone())).collect();
                Delivery::summarise_queue(tracker.received, &waiters, published)
            }
            None => {
                let receivers = u64::try_from(stats.integer_sum).unwrap_or(0);
                let subs: Vec<(Received, Option<String>)> =
                    got.iter().map(|(r, f, _, _)| (r.clone(), f.clone())).collect();
                Delivery::summarise(&subs, published, receivers, self.sigfig).map_err(Error::Tests)?
            }
        };
        let mut d = d;
        d.reconnects = got.iter().map(|g| g.2).sum();
        d.reconnected = got.iter().find_map(|g| g.3.clone());
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
) -> Result<(Polled, Subscriber), SubscriberError> {
    let mut core = Subscriber::new(Waits::Messages, sigfig).map_err(SubscriberError::Tracker)?;
    let polled = subscribe_into(server, channel, shard, many, resp3, &mut core)?;
    Ok((polled, core))
}

/// [`subscribe`] with the subscriber's `core` of before (`--reconnect`: its sequences go on).
fn subscribe_into(
    server: &Server,
    channel: &[u8],
    shard: bool,
    many: u64,
    resp3: bool,
    core: &mut Subscriber,
) -> Result<Polled, SubscriberError> {
    let mut c = Conn::authenticated(server).map_err(lost)?;
    if resp3 {
        let v = c.command(&[b"HELLO".as_slice(), b"3"]).map_err(lost)?;
        if let respbench_core::resp::Value::Error(e) = v {
            return Err(refused("HELLO 3", String::from_utf8_lossy(&e).into_owned()));
        }
    }
    let before = core.confirmed;
    let command: &[u8] = if shard { b"SSUBSCRIBE" } else { b"SUBSCRIBE" };
    // One channel, or each of `--channels`' names, confirmed one by one.
    let names: Vec<Vec<u8>> = match many {
        0 => vec![channel.to_vec()],
        m => (0..m).map(|i| respbench_core::template::Template::channel_name(channel, i)).collect(),
    };
    for (i, name) in names.iter().enumerate() {
        let v = c.command(&[command, name]).map_err(lost)?;
        let mut bytes = Vec::new();
        v.encode(&mut bytes);
        core.handle_input(&bytes, Time::ZERO).map_err(|e| refused("SUBSCRIBE", e.to_string()))?;
        if core.confirmed != before + i as u64 + 1 {
            return Err(refused("SUBSCRIBE", format!("not confirmed: {v:?}")));
        }
    }
    c.into_polled()
        .map_err(|e| SubscriberError::Connection(format!("making the connection non-blocking: {e}")))
}

/// A connection's failure, in its words.
fn lost(e: crate::error::StartupError) -> SubscriberError {
    SubscriberError::Connection(e.message)
}

/// The server's answer to `command` that is not what was asked.
fn refused(command: &'static str, reply: String) -> SubscriberError {
    SubscriberError::Refused { command, reply }
}

/// Makes the consumer group `group` of stream `key` (and the stream), or, when it exists,
/// moves it to the stream's end: its consumers read what is added from now on.
fn make_group(server: &Server, key: &[u8], group: &[u8]) -> Result<(), SubscriberError> {
    use respbench_core::resp::Value;
    let mut c = Conn::authenticated(server).map_err(lost)?;
    let created =
        c.command(&[b"XGROUP".as_slice(), b"CREATE", key, group, b"$", b"MKSTREAM"]).map_err(lost)?;
    let v = match created {
        Value::Error(e) if e.starts_with(b"BUSYGROUP") => {
            c.command(&[b"XGROUP".as_slice(), b"SETID", key, group, b"$"]).map_err(lost)?
        }
        v => v,
    };
    match v {
        Value::Error(e) => Err(refused("XGROUP", String::from_utf8_lossy(&e).into_owned())),
        _ => Ok(()),
    }
}

/// A list waiter's thread: `BLPOP key` in a loop, each reply to the list's one tracker, until
/// told to stop (never between a BLPOP and its reply: an element popped is always read). Gives
/// back, as its [`Received`], only how many elements it took (`delivered`). With `reconnect`, a
/// connection that fails comes back after a backoff and waits again.
#[allow(clippy::too_many_arguments)]
fn wait_list(
    server: &Server,
    ask: &[Vec<u8>],
    resp3: bool,
    sigfig: u8,
    epoch: Instant,
    shared: &Mutex<Subscriber>,
    tx: &std::sync::mpsc::Sender<Result<(), SubscriberError>>,
    distinct: &AtomicU64,
    ended: &AtomicBool,
    stop: &AtomicBool,
    reconnect: Option<Backoff>,
) -> Got {
    let mut mine = Received::new(sigfig).unwrap_or_else(|_| unreachable!());
    let mut c = match connect_waiter(server, resp3) {
        Ok(c) => {
            let _ = tx.send(Ok(()));
            c
        }
        Err(why) => {
            let _ = tx.send(Err(why.clone()));
            ended.store(true, Ordering::Relaxed);
            return (mine, Some(why.to_string()), 0, None);
        }
    };
    let (mut reconnects, mut dropped) = (0, None);
    let args: Vec<&[u8]> = ask.iter().map(Vec::as_slice).collect();
    let failure = 'waiting: loop {
        if stop.load(Ordering::Relaxed) {
            break None;
        }
        let v = match c.command(&args) {
            Ok(v) => v,
            Err(e) => {
                let Some(backoff) = reconnect else { break Some(e.message) };
                // Back after a backoff, doubling while attempts fail; still down at the stop:
                // it ended early.
                let mut wait = backoff.first;
                loop {
                    if !nap(stop, wait) {
                        break 'waiting Some(e.message);
                    }
                    match connect_waiter(server, resp3) {
                        Ok(again) => {
                            c = again;
                            reconnects += 1;
                            dropped.get_or_insert(e.message);
                            continue 'waiting;
                        }
                        Err(_) => wait = (wait * 2).min(backoff.max),
                    }
                }
            }
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
    (mine, failure, reconnects, dropped)
}

/// A waiter's connection: authenticated, `HELLO 3` with `resp3`, replies awaited 5 s at most.
fn connect_waiter(server: &Server, resp3: bool) -> Result<Conn, SubscriberError> {
    let mut c = Conn::authenticated(server).map_err(lost)?;
    if resp3 {
        if let respbench_core::resp::Value::Error(e) =
            c.command(&[b"HELLO".as_slice(), b"3"]).map_err(lost)?
        {
            return Err(refused("HELLO 3", String::from_utf8_lossy(&e).into_owned()));
        }
    }
    c.set_timeout(Duration::from_secs(5));
    Ok(c)
}

/// Sleeps `d` in naps of at most [`NAP`]; false when told to stop meanwhile.
fn nap(stop: &AtomicBool, d: Duration) -> bool {
    let until = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(NAP));
    }
}

/// The command a list's or a stream's waiter `i` sends again and again: `BLPOP key timeout`,
/// or with `group` `XREADGROUP GROUP group consumer-i … STREAMS key >`.
fn waiter_command(key: &[u8], group: Option<&[u8]>, i: usize) -> Vec<Vec<u8>> {
    match group {
        None => vec![b"BLPOP".to_vec(), key.to_vec(), BLPOP_TIMEOUT.to_vec()],
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
            key,
            b">",
        ]
        .iter()
        .map(|a| a.to_vec())
        .collect(),
    }
}

/// One subscriber of a thread's group: its connection while it lasts, its core, why it ended;
/// with `--reconnect`, when it tries again (and its wait), how many times it came back and why
/// it first ended before that.
struct Member {
    polled: Option<Polled>,
    core: Subscriber,
    failure: Option<String>,
    distinct: Arc<AtomicU64>,
    ended: Arc<AtomicBool>,
    retry: Option<(Instant, Duration)>,
    reconnects: u64,
    dropped: Option<String>,
}

impl Member {
    /// A subscriber from its subscription's outcome: a failed one has ended, having received
    /// nothing.
    fn new(
        subscribed: Result<(Polled, Subscriber), SubscriberError>,
        sigfig: u8,
        distinct: Arc<AtomicU64>,
        ended: Arc<AtomicBool>,
    ) -> Member {
        match subscribed {
            Ok((polled, core)) => Member {
                polled: Some(polled),
                core,
                failure: None,
                distinct,
                ended,
                retry: None,
                reconnects: 0,
                dropped: None,
            },
            Err(why) => {
                ended.store(true, Ordering::Relaxed);
                // The test's sigfig made a subscriber before; it cannot fail here.
                let core = Subscriber::new(Waits::Messages, sigfig).unwrap_or_else(|_| unreachable!());
                Member {
                    polled: None,
                    core,
                    failure: Some(why.to_string()),
                    distinct,
                    ended,
                    retry: None,
                    reconnects: 0,
                    dropped: None,
                }
            }
        }
    }

    /// Feeds what came with the subscription's confirmations, before the socket was handed over.
    fn feed_pending(&mut self, epoch: Instant) {
        if let Some(pending) = self.polled.as_mut().map(|p| std::mem::take(&mut p.pending)) {
            if !pending.is_empty() {
                self.feed(&pending, Time::since(epoch, Instant::now()));
            }
        }
    }

    /// Feeds what arrived at `now` to the core; false (and the member ended) on a protocol error.
    fn feed(&mut self, bytes: &[u8], now: Time) -> bool {
        if let Err(e) = self.core.handle_input(bytes, now) {
            return self.end(e.to_string());
        }
        self.distinct.store(self.core.received.distinct(), Ordering::Relaxed);
        true
    }

    /// Reads what the socket has until it would block, each read timed when it returns; false
    /// once the connection has ended.
    fn drain(&mut self, buf: &mut [u8], epoch: Instant) -> bool {
        loop {
            let Some(p) = self.polled.as_mut() else { return false };
            match p.read(buf) {
                Ok(0) => return self.end("the server closed the connection".to_string()),
                Ok(n) => {
                    let now = Time::since(epoch, Instant::now());
                    if !self.feed(&buf[..n], now) {
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.end(e.to_string()),
            }
        }
    }

    /// The connection ended, for `why`: closed, and the test told.
    fn end(&mut self, why: String) -> bool {
        self.failure.get_or_insert(why);
        self.polled = None;
        self.ended.store(true, Ordering::Relaxed);
        false
    }
}

/// How a group's thread subscribes a member again (`--reconnect`): its core's sequences go on.
type Again<'a> = &'a dyn Fn(&mut Subscriber) -> Result<Polled, SubscriberError>;

/// A group's thread after its subscriptions: waits on every live socket with `poll(2)` and
/// reads each ready one until it would block, until told to stop or every connection ended.
/// With `again` (`--reconnect`), a member whose connection ended subscribes again after its
/// backoff.
fn read_group(group: &mut [Member], epoch: Instant, stop: &AtomicBool, again: Option<(Again<'_>, Backoff)>) {
    let mut buf = vec![0u8; 64 * 1024];
    // What came with the confirmations, before the sockets were handed over.
    for m in group.iter_mut() {
        m.feed_pending(epoch);
    }
    // A negative descriptor is one poll(2) passes over: an ended member's.
    let mut fds: Vec<libc::pollfd> = group
        .iter()
        .map(|m| libc::pollfd {
            fd: m.polled.as_ref().map_or(-1, Polled::fd),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let nap = i32::try_from(NAP.as_millis()).unwrap_or(i32::MAX);
    let live = |fds: &[libc::pollfd], group: &[Member]| {
        fds.iter().any(|f| f.fd >= 0) || group.iter().any(|m| m.retry.is_some())
    };
    while !stop.load(Ordering::Relaxed) && live(&fds, group) {
        // SAFETY: `fds` is a live array of its length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, nap) };
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            for m in group.iter_mut() {
                m.end(format!("waiting on the subscribers' sockets: {e}"));
            }
            break;
        }
        for (f, m) in fds.iter_mut().zip(group.iter_mut()) {
            if f.fd >= 0 && f.revents != 0 && !m.drain(&mut buf, epoch) {
                f.fd = -1;
                if let Some((_, b)) = again {
                    m.retry = Some((Instant::now() + b.first, b.first));
                    m.ended.store(false, Ordering::Relaxed);
                }
            }
        }
        let Some((again, backoff)) = again else { continue };
        for (f, m) in fds.iter_mut().zip(group.iter_mut()) {
            let Some((_, wait)) = m.retry.filter(|r| Instant::now() >= r.0) else { continue };
            m.core.lost_connection();
            match again(&mut m.core) {
                Ok(polled) => {
                    f.fd = polled.fd();
                    m.polled = Some(polled);
                    m.retry = None;
                    m.reconnects += 1;
                    if let Some(why) = m.failure.take() {
                        m.dropped.get_or_insert(why);
                    }
                    m.feed_pending(epoch);
                }
                Err(_) => {
                    let wait = (wait * 2).min(backoff.max);
                    m.retry = Some((Instant::now() + wait, wait));
                }
            }
        }
    }
    for m in group.iter() {
        m.ended.store(true, Ordering::Relaxed);
    }
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
