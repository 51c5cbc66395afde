//! Fires a test's events (`--at`) at their times on a thread of its own: a command on a control
//! connection of its own to each node `--at-node` names (the startup connection's code: AUTH
//! and TLS as configured), or a local program without a shell. Records when each was sent, and
//! tells the series' collector, whose tracker measures what it cost.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use respbench_core::Time;
use respbench_driver::Progress;

use crate::error::Error;
use crate::event::{Action, AtNode, Events, Fired, NodeReply, Outcome};
use crate::result::EventResult;
use crate::routing::Multi;
use crate::server::{self, Conn, Server};

/// How long the thread sleeps at most before it looks whether the test ended.
const NAP: Duration = Duration::from_millis(20);
/// How much of a program's standard error is kept (its first line is reported; the rest is
/// read and dropped).
const STDERR_KEEP: usize = 4096;

/// A node an event's command goes to.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// As reports name it.
    pub name: String,
    /// How to reach it.
    pub server: Server,
}

/// The nodes `--at-node` names among the run's: refused when it names none.
pub(crate) fn targets(events: &Events, server: &Server, multi: Option<&Multi>) -> Result<Vec<Target>, Error> {
    if !events.list.iter().any(|e| matches!(e.action, Action::Command(_))) {
        return Ok(Vec::new());
    }
    // (endpoint, primary) of each node of the run; a standalone server is its own primary.
    let nodes: Vec<(respbench_core::Endpoint, bool)> = match multi {
        Some(m) => m.topology.nodes.iter().map(|n| (n.endpoint.clone(), n.primary)).collect(),
        None => vec![(server.endpoint.clone(), true)],
    };
    let picked: Vec<_> = match &events.node {
        AtNode::Primaries => nodes.iter().filter(|n| n.1).collect(),
        AtNode::Replicas => nodes.iter().filter(|n| !n.1).collect(),
        AtNode::All => nodes.iter().collect(),
        AtNode::Node(e) => nodes.iter().filter(|n| same(&n.0, e)).collect(),
    };
    if picked.is_empty() {
        let known = nodes.iter().map(|n| n.0.to_string()).collect::<Vec<_>>().join(", ");
        return Err(Error::Events(match &events.node {
            AtNode::Node(e) => format!("--at-node {e}: not a node of this run (its nodes: {known})"),
            AtNode::Replicas => format!(
                "--at-node replica: this run has no replica (its nodes: {known}; --cluster or --replicas finds them)"
            ),
            _ => format!("--at-node: no node to send to (the run's nodes: {known})"),
        }));
    }
    Ok(picked.into_iter().map(|n| Target { name: n.0.to_string(), server: server.node(&n.0) }).collect())
}

/// The same node: the same port, and the same host or both loopback names.
fn same(a: &respbench_core::Endpoint, b: &respbench_core::Endpoint) -> bool {
    use respbench_core::Endpoint::Tcp;
    let local = |h: &str| matches!(h, "localhost" | "127.0.0.1" | "::1");
    match (a, b) {
        (Tcp { host: h1, port: p1 }, Tcp { host: h2, port: p2 }) => {
            p1 == p2 && (h1 == h2 || local(h1) && local(h2))
        }
        _ => a == b,
    }
}

/// What the event thread needs of its test.
pub(crate) struct Firing<'a> {
    pub events: &'a Events,
    pub targets: &'a [Target],
    /// The instant the test's times count from (its `--duration` stop is `begin + duration`).
    pub begin: Instant,
    /// The driver's clock's epoch.
    pub epoch: Instant,
    pub progress: &'a Progress,
    /// Set once the test's loops have ended.
    pub done: &'a AtomicBool,
    /// How long a command may wait for its reply, a program may run.
    pub patience: Duration,
}

/// Fires each event at its time, in order; those the test ended before are not sent.
pub(crate) fn fire(f: &Firing<'_>) -> Vec<Fired> {
    let mut fired = Vec::new();
    for (i, e) in f.events.list.iter().enumerate() {
        let done = match &e.action {
            Action::Command(args) => command(f, i, e.at, args),
            Action::Exec { program, args } => wait(f, e.at).then(|| exec(f, i, program, args)),
        };
        fired.push(match done {
            Some((sent, outcome)) => Fired { index: i, sent: Some(sent), outcome },
            None => Fired { index: i, sent: None, outcome: Outcome::NotSent },
        });
    }
    fired
}

/// Sleeps until `at` after the measured start (once the loops have said when it was); false
/// when the test ended first.
fn wait(f: &Firing<'_>, at: Duration) -> bool {
    loop {
        if f.done.load(Ordering::Relaxed) {
            return false;
        }
        let start = f.progress.collector().start();
        let due = start.map_or(f.begin, |s| f.epoch + s.as_duration()) + at;
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(NAP));
    }
}

/// Tells the collector event `i` was sent at `at`; gives when, from the measured start.
fn sent(f: &Firing<'_>, i: usize, at: Instant) -> Duration {
    let mut c = f.progress.collector();
    let start = c.start().unwrap_or_else(|| Time::since(f.epoch, f.begin));
    let since = Time::since(f.epoch, at).saturating_since(start);
    c.event_sent(i, since);
    since
}

/// Sends a command to every target at once at its time: each target's connection is made
/// ahead on a thread of its own (so the event is the send, not a connect), which sends when
/// told to go. `None` when the test ended first.
fn command(f: &Firing<'_>, i: usize, at: Duration, args: &[String]) -> Option<(Duration, Outcome)> {
    std::thread::scope(|s| {
        let mut go = Vec::new();
        let mut handles = Vec::new();
        for t in f.targets {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            go.push(tx);
            handles.push(s.spawn(move || {
                let conn = Conn::authenticated(&t.server).map(|mut c| {
                    c.set_timeout(f.patience);
                    c
                });
                rx.recv().ok()?;
                let words: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
                let started = Instant::now();
                let answer = conn.and_then(|mut c| c.command(&words));
                let took = started.elapsed();
                let (reply, error) = match answer {
                    Ok(v) => {
                        let error = matches!(
                            v,
                            respbench_core::resp::Value::Error(_) | respbench_core::resp::Value::BulkError(_)
                        );
                        (describe(&v), error)
                    }
                    Err(e) => (e.message, true),
                };
                Some(NodeReply { node: t.name.clone(), reply, error, took })
            }));
        }
        if !wait(f, at) {
            drop(go);
            for h in handles {
                let _ = h.join();
            }
            return None;
        }
        let since = sent(f, i, Instant::now());
        for tx in &go {
            let _ = tx.send(());
        }
        let replies = handles
            .into_iter()
            .zip(f.targets)
            .map(|(h, t)| {
                h.join().ok().flatten().unwrap_or_else(|| NodeReply {
                    node: t.name.clone(),
                    reply: "the event's thread ended without a reply".into(),
                    error: true,
                    took: Duration::ZERO,
                })
            })
            .collect();
        Some((since, Outcome::Replies(replies)))
    })
}

/// How much of a reply [`describe`] shows, in bytes (then `…`).
const REPLY_SHOWN: usize = 120;

/// A reply on one line as `redis-cli` prints it (`--no-raw`): `OK`, `"value"` (quoted as
/// `sdscatrepr` does), `(integer) 1`, `(nil)`, `(error) ERR …`, `(double) 1.5`, `(true)`, an
/// array's elements `1) "a" 2) "b"`, a map's `1# "key" => "value"`, a set's `1~ "a"`, a nested
/// one in brackets, `(empty array)`; cut at [`REPLY_SHOWN`] bytes, whatever the reply's size.
fn describe(v: &respbench_core::resp::Value) -> String {
    let mut out = Vec::new();
    redis_cli(&mut out, v, false);
    if out.len() > REPLY_SHOWN {
        let mut cut = REPLY_SHOWN;
        // On a character's boundary: the quoting leaves only ASCII, but a status may be UTF-8.
        while cut > 0 && (out[cut] & 0xc0) == 0x80 {
            cut -= 1;
        }
        out.truncate(cut);
        out.extend_from_slice("…".as_bytes());
    }
    server::text(&out)
}

/// Appends `v` in redis-cli's words to `out`, stopping once it holds more than
/// [`REPLY_SHOWN`] bytes; `nested` puts an aggregate in brackets.
fn redis_cli(out: &mut Vec<u8>, v: &respbench_core::resp::Value, nested: bool) {
    use respbench_core::resp::Value;
    let tagged = |out: &mut Vec<u8>, tag: &str, text: &[u8]| {
        out.extend_from_slice(tag.as_bytes());
        out.extend_from_slice(text);
    };
    let aggregate =
        |out: &mut Vec<u8>, items: &mut dyn Iterator<Item = (&Value, Option<&Value>)>, mark: &str| {
            if nested {
                out.push(b'[');
            }
            for (i, (item, value)) in items.enumerate() {
                if out.len() > REPLY_SHOWN {
                    break;
                }
                if i > 0 {
                    out.push(b' ');
                }
                out.extend_from_slice(format!("{}{mark} ", i + 1).as_bytes());
                redis_cli(out, item, true);
                if let Some(value) = value {
                    out.extend_from_slice(b" => ");
                    redis_cli(out, value, true);
                }
            }
            if nested {
                out.push(b']');
            }
        };
    match v {
        Value::Simple(s) => out.extend_from_slice(s),
        Value::Error(e) | Value::BulkError(e) => tagged(out, "(error) ", e),
        Value::Integer(n) => tagged(out, "(integer) ", n.to_string().as_bytes()),
        Value::Bulk(b) => respbench_core::replay::quote_into(out, &b[..b.len().min(REPLY_SHOWN + 1)]),
        Value::Verbatim { text, .. } => out.extend_from_slice(&text[..text.len().min(REPLY_SHOWN + 1)]),
        Value::Null => out.extend_from_slice(b"(nil)"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"(true)" } else { b"(false)" }),
        Value::Double(d) => tagged(out, "(double) ", d),
        Value::BigNumber(n) => tagged(out, "(big number) ", n),
        Value::Attribute { value, .. } => redis_cli(out, value, nested),
        Value::Array(items) | Value::Set(items) | Value::Push(items) if items.is_empty() => {
            let what = match v {
                Value::Array(_) => "array",
                Value::Set(_) => "set",
                _ => "push",
            };
            out.extend_from_slice(format!("(empty {what})").as_bytes());
        }
        Value::Map(pairs) if pairs.is_empty() => out.extend_from_slice(b"(empty hash)"),
        Value::Array(items) | Value::Push(items) => aggregate(out, &mut items.iter().map(|i| (i, None)), ")"),
        Value::Set(items) => aggregate(out, &mut items.iter().map(|i| (i, None)), "~"),
        Value::Map(pairs) => aggregate(out, &mut pairs.iter().map(|(k, v)| (k, Some(v))), "#"),
    }
}

/// Runs event `i`'s program: the event is the program, so it runs in a process group of its
/// own, bounded by the test (killed when the test's loops end, or after the patience), and
/// when it exits or is killed its whole group is ended (SIGTERM, then SIGKILL after
/// [`GROUP_GRACE`]): a child it left in the background holds neither the test nor its pipe.
/// Its standard error is read without blocking while it runs, the first [`STDERR_KEEP`] bytes
/// kept and the rest dropped; reading stops when it exits.
fn exec(f: &Firing<'_>, i: usize, program: &str, args: &[String]) -> (Duration, Outcome) {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let at = Instant::now();
    let since = sent(f, i, at);
    let child = Command::new(program)
        .args(args)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return (since, Outcome::NotStarted(format!("{program}: {e}"))),
    };
    // The group's id is the program's pid (process_group(0)); the program is left unreaped
    // until its group is ended, so that no other group can take the id meanwhile.
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take();
    if let Some(s) = &stderr {
        // SAFETY: F_SETFL on a descriptor this process owns.
        unsafe {
            let flags = libc::fcntl(s.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(s.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
    let mut kept = Vec::new();
    let deadline = at + f.patience;
    let bound = loop {
        read_some(&mut stderr, &mut kept);
        if exited(pid) {
            break None;
        }
        if f.done.load(Ordering::Relaxed) {
            break Some("still running at the test's end: killed".to_string());
        }
        if Instant::now() >= deadline {
            break Some(format!("still running after {:.1} s: killed", f.patience.as_secs_f64()));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    read_some(&mut stderr, &mut kept);
    drop(stderr);
    end_group(pid);
    let status = child.wait();
    let took = at.elapsed();
    let first = String::from_utf8_lossy(&kept).lines().next().unwrap_or("").trim_end().to_string();
    let outcome = match (bound, status) {
        (None, Ok(s)) => {
            use std::os::unix::process::ExitStatusExt;
            let stderr = match s.signal() {
                Some(sig) if first.is_empty() => format!("killed by signal {sig}"),
                _ => first,
            };
            Outcome::Exited { status: s.code(), stderr, took }
        }
        (Some(why), _) => Outcome::Exited { status: None, stderr: why, took },
        (None, Err(e)) => {
            Outcome::Exited { status: None, stderr: format!("its status is not known: {e}"), took }
        }
    };
    (since, outcome)
}

/// How long a program's group has between SIGTERM and SIGKILL.
const GROUP_GRACE: Duration = Duration::from_millis(500);

/// Reads what `pipe` has now, up to 64 KiB, without blocking: the first [`STDERR_KEEP`] bytes
/// into `kept`, the rest dropped; at its end (or an error) the pipe is closed.
fn read_some(pipe: &mut Option<std::process::ChildStderr>, kept: &mut Vec<u8>) {
    let Some(p) = pipe else { return };
    let mut buf = [0u8; 4096];
    for _ in 0..16 {
        match p.read(&mut buf) {
            Ok(0) => {
                *pipe = None;
                return;
            }
            Ok(n) => {
                let room = STDERR_KEEP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(_) => {
                *pipe = None;
                return;
            }
        }
    }
}

/// Whether child `pid` has exited, without reaping it.
fn exited(pid: libc::pid_t) -> bool {
    // SAFETY: waitid with WNOWAIT only reads the child's state into `info`, zeroed first.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r != 0 || info.si_pid() != 0
    }
}

/// Ends process group `pgid`: SIGTERM, then SIGKILL to what is still running after
/// [`GROUP_GRACE`]. Its leader, this process's child, is left for the caller to reap.
fn end_group(pgid: libc::pid_t) {
    // SAFETY: kill(2) of a process group this process made.
    let signal = |sig| unsafe { libc::kill(-pgid, sig) };
    if !running(pgid) {
        return;
    }
    signal(libc::SIGTERM);
    let until = Instant::now() + GROUP_GRACE;
    while Instant::now() < until {
        if !running(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(libc::SIGKILL);
}

/// Whether some process of group `pgid` is still running (not a zombie), from /proc.
fn running(pgid: libc::pid_t) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else { return false };
    dir.filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses.
            let rest = stat.rsplit_once(')').map_or("", |r| r.1);
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("Z");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<libc::pid_t>().ok());
            pgrp == Some(pgid) && !matches!(state, "Z" | "X")
        })
}

/// Each event with what it did and what it cost; `stats`' `MOVED`s name the nodes that took
/// slots in its window.
pub(crate) fn results(
    events: &Events,
    fired: Vec<Fired>,
    costs: Vec<respbench_core::disruption::Disruption>,
    stats: &respbench_core::Stats,
) -> Vec<EventResult> {
    let mut costs = costs.into_iter();
    events
        .list
        .iter()
        .zip(fired)
        .map(|(e, fired)| {
            let cost = costs.next().filter(|c| c.sent.is_some());
            let mut moved_to = Vec::new();
            if let (Some(c), Some(sent)) = (&cost, fired.sent) {
                let from = stats.start + sent;
                let to = c.recovered.map_or(Time::MAX, |w| from + w);
                for (at, node) in stats.moved.values() {
                    let name = node.to_string();
                    if *at >= from && *at <= to && !moved_to.contains(&name) {
                        moved_to.push(name);
                    }
                }
                moved_to.sort();
            }
            EventResult { event: e.clone(), fired, cost, moved_to }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use respbench_core::resp::Value;

    fn bulk(s: &str) -> Value {
        Value::Bulk(s.as_bytes().to_vec())
    }

    #[test]
    fn replies_read_as_redis_cli_prints_them() {
        let cases = [
            (Value::Simple(b"OK".to_vec()), "OK"),
            (bulk("a \"b\"\n\u{1}"), r#""a \"b\"\n\x01""#),
            (Value::Integer(-3), "(integer) -3"),
            (Value::Null, "(nil)"),
            (Value::Error(b"ERR unknown command 'X'".to_vec()), "(error) ERR unknown command 'X'"),
            (Value::BulkError(b"SYNTAX bad".to_vec()), "(error) SYNTAX bad"),
            (Value::Double(b"1.5".to_vec()), "(double) 1.5"),
            (Value::Boolean(true), "(true)"),
            (Value::BigNumber(b"12345678901234567890".to_vec()), "(big number) 12345678901234567890"),
            (Value::Array(vec![bulk("maxmemory-samples"), bulk("5")]), r#"1) "maxmemory-samples" 2) "5""#),
            (Value::Map(vec![(bulk("key"), bulk("value"))]), r#"1# "key" => "value""#),
            (Value::Set(vec![bulk("a"), Value::Integer(1)]), r#"1~ "a" 2~ (integer) 1"#),
            (
                Value::Array(vec![Value::Array(vec![bulk("a"), Value::Null]), bulk("b")]),
                r#"1) [1) "a" 2) (nil)] 2) "b""#,
            ),
            (Value::Array(Vec::new()), "(empty array)"),
            (Value::Map(Vec::new()), "(empty hash)"),
        ];
        for (v, want) in cases {
            assert_eq!(describe(&v), want, "{v:?}");
        }
    }

    #[test]
    fn a_large_reply_is_cut_and_read_no_further() {
        let big = Value::Array((0..1_000_000).map(|i| bulk(&format!("member:{i}"))).collect());
        let shown = describe(&big);
        assert!(shown.starts_with(r#"1) "member:0" 2) "member:1""#), "{shown}");
        assert!(shown.ends_with('…') && shown.len() <= REPLY_SHOWN + 3, "{shown}");
        let long = describe(&bulk(&"x".repeat(10_000)));
        assert_eq!(long, format!("\"{}…", "x".repeat(REPLY_SHOWN - 1)));
    }
}
