//! An invalidation test (`-t tracking`, issue #52): how fast a write invalidates the copies
//! that clients cache. `--subscribers N` readers, a connection and a thread each (on every
//! primary over `--cluster`), say `HELLO 3` (or, with `--tracking-redirect`, subscribe a
//! connection of their own to `__redis__:invalidate` and name it in `REDIRECT`) and
//! `CLIENT TRACKING ON` in `--tracking-mode`'s mode, and read (`GET`) their keys
//! ([`tracking::reads`]) so the server tracks them (none under `BCAST`, which tracks
//! prefixes); once all have read, one writer (a connection a primary) writes each key once
//! (`SET`), `-P` at a time or at `--rps`, noting when each write was sent and its reply read; each reader stamps each invalidation
//! push with the wall clock as its read returns. The core's [`Tracking::summarise`] matches them
//! after the test: expected, received, lost, duplicated, flushes, and the latency from each
//! write's send (its intended send at `--rps`) to the push, with how many pushes came before
//! the write's acknowledgement.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use respbench_core::resp::Value;
use respbench_core::run::Outcome;
use respbench_core::tracking::{self, Heard, Tracking, Written};

use crate::config::{Config, TrackingMode};
use crate::cpu::ClientCpu;
use crate::error::Error;
use crate::expiry::{read_values, selected, write_paced, Pace, NAP};
use crate::notify_nodes::Nodes;
use crate::routing::Multi;
use crate::server::{self, Conn, Server};
use crate::stop::StopHandle;

/// The most readers (a thread each).
pub const MAX_READERS: usize = 1000;

/// The most `GET`s a reader pipelines at once.
const READ_BATCH: u64 = 1000;

fn fail(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Tests(format!("-t tracking: {what}: {e}"))
}

/// What a reader heard, and why it ended early (`None`: told to stop).
type Got = (Vec<Heard>, Option<String>);

/// The channel of a redirect connection's invalidations (RESP2).
const CHANNEL: &[u8] = b"__redis__:invalidate";

/// The invalidations in a RESP3 push (`>2 invalidate [keys]`) or a redirect connection's RESP2
/// message (`*3 message __redis__:invalidate [keys]`), a null for a flush, read at `at`;
/// nothing for another push or message.
fn invalidations(v: Value, prefix: &[u8], at: u64, out: &mut Vec<Heard>) {
    let mut a = match v {
        Value::Push(a) if a.len() == 2 && a[0] == Value::Bulk(b"invalidate".to_vec()) => a,
        Value::Array(a)
            if a.len() == 3
                && a[0] == Value::Bulk(b"message".to_vec())
                && a[1] == Value::Bulk(CHANNEL.to_vec()) =>
        {
            a
        }
        _ => return,
    };
    match a.pop() {
        Some(Value::Null) => out.push(Heard::Flush(at)),
        Some(Value::Array(keys)) => out.extend(keys.into_iter().map(|k| match k {
            Value::Bulk(k) => Heard::Key(tracking::index(prefix, &k), at),
            _ => Heard::Key(None, at),
        })),
        _ => {}
    }
}

/// Sends `cmd` on `c`: an error reply is a failure.
fn checked(c: &mut Conn, cmd: &[&[u8]]) -> Result<Value, Error> {
    let what = String::from_utf8_lossy(&cmd.join(&b' ')).into_owned();
    match c.command(cmd).map_err(|e| fail(&what, e.message))? {
        Value::Error(e) | Value::BulkError(e) => Err(fail(&what, server::text(&e))),
        v => Ok(v),
    }
}

/// The `BCAST` prefixes: `--tracking-prefix`'s, or the test's keys'.
fn prefixes(cfg: &Config) -> Vec<Vec<u8>> {
    let t = &cfg.open.tracking_test;
    if t.prefixes.is_empty() {
        vec![[cfg.key_prefix.as_bytes(), tracking::TRACKING_KEY.as_bytes()].concat()]
    } else {
        t.prefixes.iter().map(|p| p.as_bytes().to_vec()).collect()
    }
}

/// A reader: the connection its invalidations come on, and under `--tracking-redirect` the
/// tracking one, held open (the server forgets a closed client's keys).
struct Reader {
    listen: Conn,
    _tracked: Option<Conn>,
}

/// Connects reader `r` of `readers` to primary `node` of `nodes`, turns tracking on in the
/// run's mode, reads its keys of `n` that the node serves (`owner[i]`, empty: one server;
/// `CLIENT CACHING yes` before each under `OPTIN`; none under `BCAST`), and turns tracking off
/// again if it is one of `--tracking-off`'s: the reader, ready to read invalidations.
fn start_reader(
    cfg: &Config,
    (nodes, owner): (&Nodes, &[u16]),
    node: usize,
    r: u64,
    readers: u64,
    n: u64,
) -> Result<Reader, Error> {
    let t = &cfg.open.tracking_test;
    let server = &nodes.primaries[node];
    let mut c = selected(server, cfg.db)?;
    let mut on: Vec<Vec<u8>> = vec![b"CLIENT".to_vec(), b"TRACKING".to_vec(), b"ON".to_vec()];
    let listen = if t.redirect {
        let mut l = selected(server, cfg.db)?;
        let id = match checked(&mut l, &[b"CLIENT", b"ID"])? {
            Value::Integer(id) => id.to_string(),
            v => return Err(fail("CLIENT ID", format!("{v:?}"))),
        };
        checked(&mut l, &[b"SUBSCRIBE", CHANNEL])?;
        on.extend([b"REDIRECT".to_vec(), id.into_bytes()]);
        Some(l)
    } else {
        checked(&mut c, &[b"HELLO", b"3"])?;
        None
    };
    match t.mode {
        TrackingMode::Default => {}
        TrackingMode::Optin => on.push(b"OPTIN".to_vec()),
        TrackingMode::Bcast => {
            on.push(b"BCAST".to_vec());
            for p in prefixes(cfg) {
                on.extend([b"PREFIX".to_vec(), p]);
            }
        }
    }
    checked(&mut c, &on.iter().map(Vec::as_slice).collect::<Vec<_>>())?;
    let mine: Vec<u64> = match t.mode {
        TrackingMode::Bcast => Vec::new(),
        _ => (0..n)
            .filter(|&i| {
                tracking::reads(r, readers, i)
                    && owner.get(i as usize).is_none_or(|&o| usize::from(o) == node)
            })
            .collect(),
    };
    let optin = t.mode == TrackingMode::Optin;
    for chunk in mine.chunks(READ_BATCH as usize) {
        let mut req = Vec::new();
        for &i in chunk {
            if optin {
                respbench_core::resp::encode_command(&[b"CLIENT", b"CACHING", b"yes"], &mut req);
            }
            respbench_core::resp::encode_command(&[b"GET", &tracking::key(&cfg.key_prefix, i)], &mut req);
        }
        c.send_encoded(&req).map_err(|e| fail("reading the keys", e.message))?;
        for _ in 0..chunk.len() * (1 + optin as usize) {
            if let Value::Error(e) = c.reply().map_err(|e| fail("reading the keys", e.message))? {
                return Err(fail("GET", server::text(&e)));
            }
        }
    }
    if r < t.off {
        checked(&mut c, &[b"CLIENT", b"TRACKING", b"off"])?;
    }
    Ok(match listen {
        Some(l) => Reader { listen: l, _tracked: Some(c) },
        None => Reader { listen: c, _tracked: None },
    })
}

/// Whether reader `r` of `readers` is to hear of key `i` once written: it read it (or it
/// broadcasts under `BCAST`: `under[i]`, the key is under a prefix) and kept tracking on.
fn expects(cfg: &Config, under: &[bool], readers: u64, r: u64, i: u64) -> bool {
    let t = &cfg.open.tracking_test;
    r >= t.off
        && match t.mode {
            TrackingMode::Bcast => under.get(i as usize).copied().unwrap_or(false),
            _ => tracking::reads(r, readers, i),
        }
}

/// Reads `c`'s pushes until `stop`, counting the invalidated keys in `heard`.
fn read_pushes(mut c: Conn, prefix: &[u8], stop: &AtomicBool, heard: &AtomicU64) -> Got {
    c.set_timeout(NAP);
    let mut reader = c.into_reader();
    let mut got = Vec::new();
    let ended = read_values(&mut *reader, stop, "a reader", |v, at| {
        let before = got.len();
        invalidations(v, prefix, at, &mut got);
        heard.fetch_add((got.len() - before) as u64, Ordering::Relaxed);
    });
    (got, ended)
}

/// `tracking_total_keys` and `tracking_total_items` of `INFO stats`, summed over the
/// primaries' connections `ctl` (`None` if one did not say).
fn server_tracking(ctl: &mut [Conn]) -> (Option<u64>, Option<u64>) {
    let mut sum = (Some(0u64), Some(0u64));
    for c in ctl {
        let body = server::info(c, b"stats").ok();
        let field = |f| body.as_deref().and_then(|b| server::info_value(b, f));
        sum.0 = sum.0.zip(field("tracking_total_keys")).map(|(a, b)| a.saturating_add(b));
        sum.1 = sum.1.zip(field("tracking_total_items")).map(|(a, b)| a.saturating_add(b));
    }
    sum
}

/// Runs `-t tracking` against the run's server over `tls` (`rate`: `--rps`'s step): the
/// test's outcome, its `Stats` carrying the `SET`s' latency and the [`Tracking`], and the
/// client's CPU.
pub(crate) fn run(
    cfg: &Config,
    tls: Option<&respbench_driver::Tls>,
    rate: Option<u64>,
    epoch: Instant,
    stop: &StopHandle,
    multi: Option<&Multi>,
) -> Result<(Outcome, ClientCpu), Error> {
    let server = Server::new(cfg, tls.cloned());
    let nodes = Nodes::new(&server, multi, cfg.cluster, "-t tracking")?;
    let readers = cfg.open.subscribers.first().copied().unwrap_or(1).clamp(1, MAX_READERS) as u64;
    // The keys are the writes planned: -n, or --duration at --rps.
    let n = match (cfg.open.duration, rate) {
        (Some(d), Some(r)) => (d.as_secs_f64() * r as f64).ceil() as u64,
        (Some(_), None) => {
            return Err(fail(
                "--duration",
                "give --rps too: each key is written once, and the keys are read first",
            ))
        }
        (None, _) => cfg.requests,
    };
    if n > tracking::MAX_KEYS {
        return Err(fail("keys", format!("at most {} writes, not {n}", tracking::MAX_KEYS)));
    }
    let cpu_before = crate::cpu::process_cpu();
    let started = Instant::now();
    let mut ctl = (nodes.primaries.iter())
        .map(|s| Conn::authenticated(s).map_err(|e| fail("connecting", e.message)))
        .collect::<Result<Vec<_>, _>>()?;
    let prefix = cfg.key_prefix.as_bytes();
    let (stop_readers, counts) =
        (AtomicBool::new(false), (0..readers).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
    let mut writes = vec![Written::default(); n as usize];
    if cfg.open.tracking_test.off > readers {
        let off = cfg.open.tracking_test.off;
        return Err(fail("--tracking-off", format!("{off} readers of {readers} (--subscribers)")));
    }
    // Under BCAST, which keys are under a prefix.
    let under: Vec<bool> = match cfg.open.tracking_test.mode {
        TrackingMode::Bcast => {
            let ps = prefixes(cfg);
            (0..n).map(|i| ps.iter().any(|p| tracking::key(&cfg.key_prefix, i).starts_with(p))).collect()
        }
        _ => Vec::new(),
    };
    let expects = |r, i| expects(cfg, &under, readers, r, i);
    // Over a cluster, each key's primary; a reader's connection on a primary is a reader of its
    // own for the summary (a FLUSHALL on one node flushes that node's keys, not all).
    let owner: Vec<u16> = match nodes.clustered() {
        true => (0..n).map(|i| nodes.of(&tracking::key(&cfg.key_prefix, i)) as u16).collect(),
        false => Vec::new(),
    };
    let nk = nodes.primaries.len() as u64;
    let on_node = |p: u64, i: u64| owner.get(i as usize).is_none_or(|&o| u64::from(o) == p % nk);
    let pair_expects = |p: u64, i: u64| expects(p / nk, i) && on_node(p, i);
    std::thread::scope(|s| -> Result<(Outcome, ClientCpu), Error> {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut threads = Vec::new();
        // Over a cluster, each reader has a connection (and a thread) on every primary.
        let pairs = (0..readers).flat_map(|r| (0..nodes.primaries.len()).map(move |k| (r, k)));
        for (r, k) in pairs {
            let (tx, nodes, stop_readers, heard) = (tx.clone(), &nodes, &stop_readers, &counts[r as usize]);
            let owner = &owner;
            threads.push((
                r * nk + k as u64,
                s.spawn(move || match start_reader(cfg, (nodes, owner), k, r, readers, n) {
                    Ok(Reader { listen, _tracked }) => {
                        let _ = tx.send(Ok(()));
                        read_pushes(listen, prefix, stop_readers, heard)
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        (Vec::new(), None)
                    }
                }),
            ));
        }
        drop(tx);
        let ready =
            threads.iter().try_for_each(|_| rx.recv().unwrap_or(Err(fail("a reader", "its thread ended"))));
        let run = ready.and_then(|()| {
            let (keys, items) = server_tracking(&mut ctl);
            let mut w = nodes.primaries.iter().map(|s| selected(s, cfg.db)).collect::<Result<Vec<_>, _>>()?;
            let value = vec![b'x'; cfg.datasize];
            let pace = Pace { n, rate, batch: cfg.pipeline.max(1) as u64, epoch, sigfig: cfg.precision };
            let (stats, _) = write_paced(
                &mut w,
                &pace,
                stop,
                |j| owner.get(j as usize).map_or(0, |&o| usize::from(o)),
                |j, req| {
                    respbench_core::resp::encode_command(
                        &[b"SET", &tracking::key(&cfg.key_prefix, j), &value],
                        req,
                    );
                    0
                },
                |j, _, ok, w| {
                    if ok {
                        writes[j as usize] = Written { sent: w.sent, acked: w.acked.max(1) };
                    }
                },
            )?;
            // Each reader's invalidations, or the drain grace over.
            let expected: Vec<u64> = (0..readers)
                .map(|r| (0..n).filter(|&i| writes[i as usize].acked != 0 && expects(r, i)).count() as u64)
                .collect();
            let until = Instant::now() + cfg.drain_grace;
            let short = || expected.iter().zip(&counts).any(|(&e, c)| c.load(Ordering::Relaxed) < e);
            while short() && Instant::now() < until && !stop.requested() {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok((stats, keys, items))
        });
        stop_readers.store(true, Ordering::Relaxed);
        let mut heard = vec![Vec::new(); threads.len()];
        for (p, t) in threads {
            let (got, failure) = t.join().map_err(|_| Error::Tests("a tracking reader panicked".into()))?;
            if let Some(why) = failure {
                return Err(fail("reading", why));
            }
            heard[p as usize] = got;
        }
        let (mut stats, keys, items) = run?;
        let mut t =
            Tracking::summarise(&writes, &heard, pair_expects, cfg.precision).map_err(Error::Tests)?;
        (t.readers, t.server_keys, t.server_items) = (readers, keys, items);
        stats.tracking = Some(Box::new(t));
        let cpu = ClientCpu::between(cpu_before, crate::cpu::process_cpu(), started.elapsed(), 1);
        Ok((Outcome { stats, failures: Vec::new(), drops: Vec::new() }, cpu))
    })
}
