//! An expiry test (`-t expiry`, issue #52): how late the server expires keys. A listener
//! subscribed to `__keyevent@DB__:expired` on a connection of its own reads each expired
//! event on a thread that does nothing else, stamping it with the wall clock as the read
//! returns; a writer gives `-n` keys deadlines (`SET key value PXAT ms`) spread over
//! `--expiry-window` after a lead of [`LEAD`], pipelined `-P` at a time, or at `--rps` in an
//! open loop. The lag of each key is its notification's arrival less its deadline (the core's
//! [`Watch`]); the listener stops once every key is notified or `--expiry-grace` has passed
//! after the last deadline. The server's `notify-keyspace-events` is checked first (and with
//! `--set-notify` turned on and restored after the test, whatever ended it).

use std::io::{ErrorKind, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use respbench_core::expiry::{self, Watch};
use respbench_core::resp::Value;
use respbench_core::run::Outcome;
use respbench_core::tracking::Written;
use respbench_core::{Stats, Time};

use crate::config::Config;
use crate::cpu::ClientCpu;
use crate::error::Error;
use crate::notify_nodes::Nodes;
use crate::routing::Multi;
use crate::server::{self, Conn, Server};
use crate::stop::StopHandle;

/// How far ahead of its write's intended time a key's window of deadlines starts.
pub const LEAD: Duration = Duration::from_secs(1);

/// A key whose deadline would come sooner than this after its write is given one [`LEAD`]
/// after its write instead (a writer behind its plan).
const MIN_AHEAD_MS: u64 = 20;

/// How far ahead the other volatile keys' deadlines are (a day: none expires in a test).
const FAR_MS: u64 = 86_400_000;

/// The most of the other keys written in one pipeline, and of an open loop's due writes.
const BATCH: u64 = 1000;

/// The most bytes of notifications held unparsed (one is under 100 bytes).
const MAX_PENDING: usize = 1 << 20;

/// How long the listener's read waits before it looks whether to stop.
pub(crate) const NAP: Duration = Duration::from_millis(20);

/// Now, in nanoseconds since the Unix epoch (the clock `PXAT` deadlines are on).
pub(crate) fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn fail(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Tests(format!("-t expiry: {what}: {e}"))
}

/// Whether `flags` (`notify-keyspace-events`) publish expired events on the keyevent channel.
pub fn publishes_expired(flags: &str) -> bool {
    flags.contains('E') && (flags.contains('x') || flags.contains('A'))
}

/// The server's `notify-keyspace-events`.
fn notify_flags(c: &mut Conn) -> Result<String, Error> {
    match c
        .command(&[b"CONFIG".as_slice(), b"GET", b"notify-keyspace-events"])
        .map_err(|e| fail("CONFIG GET", e.message))?
    {
        Value::Array(a) if a.len() == 2 => match &a[1] {
            Value::Bulk(b) => Ok(server::text(b)),
            v => Err(fail("CONFIG GET notify-keyspace-events", format!("unexpected reply {v:?}"))),
        },
        Value::Map(m) if m.len() == 1 => match &m[0].1 {
            Value::Bulk(b) => Ok(server::text(b)),
            v => Err(fail("CONFIG GET notify-keyspace-events", format!("unexpected reply {v:?}"))),
        },
        Value::Error(e) => Err(fail("CONFIG GET notify-keyspace-events", server::text(&e))),
        v => Err(fail("CONFIG GET notify-keyspace-events", format!("unexpected reply {v:?}"))),
    }
}

fn set_flags(c: &mut Conn, flags: &str) -> Result<(), Error> {
    match c
        .command(&[b"CONFIG".as_slice(), b"SET", b"notify-keyspace-events", flags.as_bytes()])
        .map_err(|e| fail("CONFIG SET", e.message))?
    {
        Value::Error(e) => Err(fail(&format!("CONFIG SET notify-keyspace-events {flags}"), server::text(&e))),
        _ => Ok(()),
    }
}

/// `--set-notify`'s setting, restored when dropped (a failed test's error, a Ctrl-C).
struct Restore {
    server: Server,
    old: Option<String>,
}

impl Restore {
    fn restore(&mut self) -> Result<(), Error> {
        let Some(old) = self.old.take() else { return Ok(()) };
        let mut c = Conn::authenticated(&self.server)
            .map_err(|e| fail("restoring notify-keyspace-events", e.message))?;
        set_flags(&mut c, &old)
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// Checks (with `--set-notify`, turns on) the expired events on `server`: the setting to
/// restore, if it was changed.
fn check_notify(server: &Server, c: &mut Conn, set: bool) -> Result<Restore, Error> {
    let flags = notify_flags(c)?;
    if publishes_expired(&flags) {
        return Ok(Restore { server: server.clone(), old: None });
    }
    if !set {
        return Err(Error::Tests(format!(
            "-t expiry: the server at {} publishes no expired events (notify-keyspace-events is '{flags}'): \
             run `CONFIG SET notify-keyspace-events Ex` (or add Ex to notify-keyspace-events in its configuration), \
             or give --set-notify, which turns them on for the test and restores '{flags}' after it",
            server.endpoint
        )));
    }
    set_flags(c, &format!("{flags}Ex"))?;
    Ok(Restore { server: server.clone(), old: Some(flags) })
}

/// The server's `expired_keys` (`INFO stats`).
fn expired_keys(c: &mut Conn) -> Result<u64, Error> {
    let body = server::info(c, b"stats").map_err(|e| fail("INFO stats", e))?;
    server::info_value(&body, "expired_keys").ok_or_else(|| fail("INFO stats", "no expired_keys"))
}

/// A connection with `SELECT db` said, when `db` is not 0.
pub(crate) fn selected(server: &Server, db: u32) -> Result<Conn, Error> {
    let mut c = Conn::authenticated(server).map_err(|e| fail("connecting", e.message))?;
    if db != 0 {
        if let Value::Error(e) = c
            .command(&[b"SELECT".as_slice(), db.to_string().as_bytes()])
            .map_err(|e| fail("SELECT", e.message))?
        {
            return Err(fail("SELECT", server::text(&e)));
        }
    }
    Ok(c)
}

/// Reads the values `reader` (a connection with a short read timeout) sends until `stop`,
/// each handed to `each` with when the read that completed it returned (ns since the Unix
/// epoch); `None` when told to stop, else why `who`'s connection ended.
pub(crate) fn read_values(
    reader: &mut dyn Read,
    stop: &AtomicBool,
    who: &str,
    mut each: impl FnMut(Value, u64),
) -> Option<String> {
    let (mut pending, mut chunk) = (Vec::new(), vec![0u8; 64 * 1024]);
    while !stop.load(Ordering::Relaxed) {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Some(format!("the server closed {who}'s connection")),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => return Some(format!("{who}'s connection: {e}")),
        };
        let at = unix_ns();
        pending.extend_from_slice(&chunk[..n]);
        let mut used = 0;
        loop {
            match Value::parse(&pending[used..]) {
                Ok(Some((v, k))) => {
                    used += k;
                    each(v, at);
                }
                Ok(None) => break,
                Err(e) => return Some(format!("{who} read a broken reply: {e}")),
            }
        }
        pending.drain(..used);
        if pending.len() > MAX_PENDING {
            return Some(format!("{who} read a reply of more than {MAX_PENDING} bytes"));
        }
    }
    None
}

/// What the listener read: each timed key's index (`None`: another key) and when it came.
type Heard = (Vec<(Option<u64>, u64)>, Option<String>);

/// Subscribes to the expired events of `db` and reads them on a thread of its own until
/// `stop`; `distinct` counts the timed keys' notifications (duplicates included) as they come.
fn listen(
    server: &Server,
    db: u32,
    prefix: Vec<u8>,
    keys: u64,
    stop: Arc<AtomicBool>,
    heard: Arc<AtomicU64>,
) -> Result<std::thread::JoinHandle<Heard>, Error> {
    let channel = format!("__keyevent@{db}__:expired");
    // At most twice the keys and some: a server that repeats itself is not held without bound.
    let room = usize::try_from(keys.saturating_mul(2).saturating_add(1024)).unwrap_or(usize::MAX);
    let (tx, rx) = std::sync::mpsc::channel();
    let server = server.clone();
    let thread = std::thread::Builder::new()
        .name("expiry-listener".into())
        .spawn(move || {
            let subscribed = (|| {
                let mut c =
                    Conn::authenticated(&server).map_err(|e| fail("the listener's connection", e.message))?;
                match c
                    .command(&[b"SUBSCRIBE".as_slice(), channel.as_bytes()])
                    .map_err(|e| fail("SUBSCRIBE", e.message))?
                {
                    Value::Array(a) if a.first() == Some(&Value::Bulk(b"subscribe".to_vec())) => {}
                    v => return Err(fail("SUBSCRIBE", format!("not confirmed: {v:?}"))),
                }
                c.set_timeout(NAP);
                Ok(c.into_reader())
            })();
            let mut reader = match subscribed {
                Ok(r) => {
                    let _ = tx.send(Ok(()));
                    r
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return (Vec::new(), None);
                }
            };
            let mut got = Vec::new();
            let ended = read_values(&mut *reader, &stop, "the listener", |v, at| {
                let key = match v {
                    Value::Array(a) | Value::Push(a) if a.len() == 3 => match &a[2] {
                        Value::Bulk(k) => expiry::index(&prefix, k),
                        _ => None,
                    },
                    _ => None,
                };
                if key.is_some() {
                    heard.fetch_add(1, Ordering::Relaxed);
                }
                if got.len() < room {
                    got.push((key, at));
                }
            });
            (got, ended)
        })
        .map_err(|e| fail("starting the listener", e))?;
    match rx.recv() {
        Ok(Ok(())) => Ok(thread),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Error::Tests("-t expiry: the listener's thread ended".into())),
    }
}

/// `SET key value PXAT deadline`, encoded.
fn set_pxat(key: &[u8], value: &[u8], deadline_ms: Option<u64>, out: &mut Vec<u8>) {
    let at = deadline_ms.map(|d| d.to_string());
    let mut args: Vec<&[u8]> = vec![b"SET", key, value];
    if let Some(at) = &at {
        args.extend_from_slice(&[b"PXAT", at.as_bytes()]);
    }
    respbench_core::resp::encode_command(&args, out);
}

/// Writes the other keys (`--expiry-volatile`, `--expiry-persistent`), untimed, each on its
/// node's connection of `w`.
fn populate(
    w: &mut [Conn],
    nodes: &Nodes,
    cfg: &Config,
    value: &[u8],
    stop: &StopHandle,
) -> Result<(), Error> {
    let e = &cfg.open.expiry_test;
    let far = unix_ns() / 1_000_000 + FAR_MS;
    for (kind, n, deadline) in [("volatile", e.volatile, Some(far)), ("persistent", e.persistent, None)] {
        let mut i = 0;
        while i < n && !stop.requested() {
            let batch = BATCH.min(n - i);
            let (mut reqs, mut sent) = (vec![Vec::new(); w.len()], vec![0u64; w.len()]);
            for j in i..i + batch {
                let key = format!("{}{}{kind}:{j:012}", cfg.key_prefix, expiry::EXPIRY_KEY);
                let k = nodes.of(key.as_bytes()).min(w.len().saturating_sub(1));
                set_pxat(key.as_bytes(), value, deadline, &mut reqs[k]);
                sent[k] += 1;
            }
            for ((c, req), &m) in w.iter_mut().zip(&reqs).zip(&sent).filter(|(_, &m)| m > 0) {
                c.send_encoded(req).map_err(|e| fail("writing the other keys", e.message))?;
                for _ in 0..m {
                    if let Value::Error(m) =
                        c.reply().map_err(|e| fail("writing the other keys", e.message))?
                    {
                        return Err(fail("writing the other keys", server::text(&m)));
                    }
                }
            }
            i += batch;
        }
    }
    Ok(())
}

/// The sum of `expired_keys` over the primaries' connections `ctl`.
fn expired_sum(ctl: &mut [Conn]) -> Result<u64, Error> {
    ctl.iter_mut().try_fold(0u64, |sum, c| Ok(sum.saturating_add(expired_keys(c)?)))
}

/// How a test's writes go: `n` of them, at `rate` in an open loop or `batch` (`-P`) at a time,
/// recorded on the clock of `epoch` with `sigfig` significant figures.
pub(crate) struct Pace {
    /// The requests.
    pub n: u64,
    /// `--rps`: an open loop.
    pub rate: Option<u64>,
    /// `-P`: a closed loop's pipeline.
    pub batch: u64,
    /// The run's clock.
    pub epoch: Instant,
    /// The histograms' significant figures.
    pub sigfig: u8,
}

/// Sends `pace.n` requests on `w`, pipelined: each on connection `node(j)`, encoded by
/// `encode(j, out)`, which gives back a tag; each reply told to `acked(j, tag, ok, written)` (`written`: its intended send and
/// its reply's read, ns since the Unix epoch). At a rate, the writes due by now go together (at most [`BATCH`]), each timed from its
/// intended send. Gives back the requests' `Stats` and how many were sent (fewer after a stop).
pub(crate) fn write_paced(
    w: &mut [Conn],
    pace: &Pace,
    stop: &StopHandle,
    node: impl Fn(u64) -> usize,
    mut encode: impl FnMut(u64, &mut Vec<u8>) -> u64,
    mut acked: impl FnMut(u64, u64, bool, Written),
) -> Result<(Stats, u64), Error> {
    let (n, rate, epoch) = (pace.n, pace.rate, pace.epoch);
    let begin = Instant::now();
    let mut stats =
        Stats::new(Time::since(epoch, begin), pace.sigfig, rate.is_some()).map_err(Error::Tests)?;
    stats.connections_opened = w.len() as u64;
    let batch = if rate.is_some() { BATCH } else { pace.batch.max(1) };
    let (mut i, mut reqs, mut tags) = (0, vec![Vec::new(); w.len()], Vec::new());
    while i < n && !stop.requested() {
        // The next batch: -P requests, or at --rps the ones due by now (waiting for the first).
        let due = |k: u64| rate.map(|r| begin + Duration::from_secs_f64(k as f64 / r as f64));
        let count = match due(i) {
            None => batch.min(n - i),
            Some(first) => {
                let now = Instant::now();
                if first > now {
                    std::thread::sleep(first - now);
                }
                let now = Instant::now();
                let mut k = i + 1;
                while k < n && k - i < batch && due(k).is_some_and(|d| d <= now) {
                    k += 1;
                }
                k - i
            }
        };
        reqs.iter_mut().for_each(Vec::clear);
        tags.clear();
        tags.extend((i..i + count).map(|j| {
            let k = node(j).min(w.len().saturating_sub(1));
            (k, encode(j, &mut reqs[k]))
        }));
        let sent_at = Instant::now();
        for (c, req) in w.iter_mut().zip(&reqs).filter(|(_, r)| !r.is_empty()) {
            c.send_encoded(req).map_err(|e| Error::Tests(format!("writing the keys: {}", e.message)))?;
            stats.bytes_sent += req.len() as u64;
        }
        for (j, &(k, tag)) in (i..i + count).zip(&tags) {
            // Each timed from its own intended send in an open loop.
            let intended = due(j).unwrap_or(sent_at);
            if rate.is_some() {
                stats.record_lateness(sent_at.saturating_duration_since(intended).as_nanos() as u64);
            }
            let reply = w[k].reply().map_err(|e| Error::Tests(format!("writing the keys: {}", e.message)))?;
            let (at, at_ns) = (Instant::now(), unix_ns());
            let latency = at.saturating_duration_since(intended).as_nanos() as u64;
            let service = at.saturating_duration_since(sent_at).as_nanos() as u64;
            let error = match &reply {
                Value::Error(m) => Some(m.as_slice()),
                _ => None,
            };
            // The intended send on the wall clock: the acknowledgement's less the time between.
            let sent = at_ns.saturating_sub(latency);
            acked(j, tag, error.is_none(), Written { sent, acked: at_ns });
            stats.record_request(0, latency, service, error, Time::since(epoch, at));
        }
        i += count;
    }
    Ok((stats, i))
}

/// Runs `-t expiry` against the run's server over `tls` (`rate`: `--rps`'s step): the test's
/// outcome, its `Stats` carrying the `SET`s' latency and the
/// [`respbench_core::expiry::Expiry`], and the client's CPU.
pub(crate) fn run(
    cfg: &Config,
    tls: Option<&respbench_driver::Tls>,
    rate: Option<u64>,
    epoch: Instant,
    stop: &StopHandle,
    multi: Option<&Multi>,
) -> Result<(Outcome, ClientCpu), Error> {
    let server = Server::new(cfg, tls.cloned());
    let nodes = Nodes::new(&server, multi, cfg.cluster, "-t expiry")?;
    let e = &cfg.open.expiry_test;
    let n = cfg.requests;
    let mut watch = Watch::new(n, cfg.precision).map_err(Error::Tests)?;
    // Each primary publishes its own keys' events: each is checked (or set) and listened on.
    let mut ctl = Vec::new();
    let mut restores = Vec::new();
    for s in &nodes.primaries {
        let mut c = Conn::authenticated(s).map_err(|e| fail("connecting", e.message))?;
        restores.push(check_notify(s, &mut c, e.set_notify)?);
        ctl.push(c);
    }
    for s in nodes.replicas.iter().filter(|_| e.set_notify) {
        let mut c = Conn::authenticated(s).map_err(|e| fail("connecting to a replica", e.message))?;
        restores.push(check_notify(s, &mut c, true)?);
    }
    let cpu_before = crate::cpu::process_cpu();
    let started = Instant::now();
    let (stop_listening, heard) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let stop_listener = || stop_listening.store(true, Ordering::Relaxed);
    let mut listeners = Vec::new();
    for s in &nodes.primaries {
        let (stop, heard) = (Arc::clone(&stop_listening), Arc::clone(&heard));
        match listen(s, cfg.db, cfg.key_prefix.as_bytes().to_vec(), n, stop, heard) {
            Ok(l) => listeners.push(l),
            Err(e) => {
                stop_listener();
                listeners.into_iter().for_each(|l| drop(l.join()));
                return Err(e);
            }
        }
    }
    let result = (|| -> Result<(Stats, u64, u64), Error> {
        let mut w = nodes.primaries.iter().map(|s| selected(s, cfg.db)).collect::<Result<Vec<_>, _>>()?;
        let value = vec![b'x'; cfg.datasize];
        populate(&mut w, &nodes, cfg, &value, stop)?;
        let expired_before = expired_sum(&mut ctl)?;
        let begin_ns = unix_ns();
        let (window_ms, lead_ms) = (e.window.as_millis() as u64, LEAD.as_millis() as u64);
        let pace = Pace { n, rate, batch: cfg.pipeline.max(1) as u64, epoch, sigfig: cfg.precision };
        let (stats, i) = write_paced(
            &mut w,
            &pace,
            stop,
            |j| nodes.of(&expiry::key(&cfg.key_prefix, j)),
            |j, req| {
                let intended_ms = match rate {
                    Some(r) => begin_ns / 1_000_000 + (j as f64 * 1000.0 / r as f64) as u64,
                    None => begin_ns / 1_000_000,
                };
                let now_ms = unix_ns() / 1_000_000;
                let mut deadline = expiry::deadline_ms(intended_ms, lead_ms, window_ms, j, n);
                if deadline < now_ms + MIN_AHEAD_MS {
                    deadline = now_ms + lead_ms;
                }
                set_pxat(&expiry::key(&cfg.key_prefix, j), &value, Some(deadline), req);
                deadline
            },
            |j, deadline, ok, _| {
                if ok {
                    watch.written(j, deadline);
                }
            },
        )?;
        // Every key notified, or the grace after the last deadline over.
        let until_ns =
            watch.last_deadline().saturating_mul(1_000_000).saturating_add(e.grace.as_nanos() as u64);
        let written = i;
        while heard.load(Ordering::Relaxed) < written && unix_ns() < until_ns && !stop.requested() {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop_listener();
        let stopped_ms = unix_ns() / 1_000_000;
        let expired_after = expired_sum(&mut ctl)?;
        Ok((stats, expired_after.saturating_sub(expired_before), stopped_ms))
    })();
    stop_listener();
    let mut heard = Vec::new();
    for l in listeners {
        heard.push(l.join().map_err(|_| Error::Tests("the expiry listener panicked".into()))?);
    }
    for r in &mut restores {
        r.restore()?;
    }
    let (mut stats, rise, stopped_ms) = result?;
    for (got, failure) in heard {
        if let Some(why) = failure {
            return Err(fail("listening", why));
        }
        for (key, at) in got {
            watch.notified(key, at);
        }
    }
    let mut summary = watch.finish(e.grace.as_millis() as u64, e.window.as_millis() as u64, stopped_ms);
    summary.server_expired = Some(rise);
    stats.expiry = Some(Box::new(summary));
    let cpu = ClientCpu::between(cpu_before, crate::cpu::process_cpu(), started.elapsed(), 1);
    Ok((Outcome { stats, failures: Vec::new(), drops: Vec::new() }, cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_events_need_e_and_x_or_a() {
        assert!(publishes_expired("xE"));
        assert!(publishes_expired("AKE"));
        assert!(!publishes_expired(""));
        assert!(!publishes_expired("Kx"));
        assert!(!publishes_expired("E$"));
    }
}
