//! The server's side second by second (#51): a [`Sampler`] reads `INFO` on every node of a test
//! every `--server-interval` (1 s), on a connection of its own opened once the benchmark's
//! connections are up (a server at `maxclients` that refuses it gives missing samples, never a
//! failed test), on a thread of its own (the event loops never wait for it), plus a reading at
//! the test's start (before the loops connect: opened, read, closed) and at its end, so that the
//! samples' deltas add up to the server's counts over the test. On a server of this machine
//! (its `process_id` a local `redis-server` or `valkey-server`) each of its threads' CPU is read
//! from `/proc/PID/task`. [`align`] turns the readings into [`ServerSample`]s on the client's
//! seconds (the same origin as the client's series); what the sampling cost is in
//! [`SamplerCost`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use respbench_core::Time;
use respbench_driver::ServerGauges;

use crate::server::{info_sections, Conn, Server};

/// At most this many threads of a server are read (a server with more is named by its first).
const MAX_THREADS: usize = 256;
/// At most this many replicas of a primary are kept in a reading.
const MAX_REPLICAS: usize = 64;
/// How long a reading (and a connect) may wait for the server: a reading slower than the
/// interval leaves the ticks it passed missing. Long enough for a server on a busy machine (a
/// 2-core VM at a load of 28 left 500 ms without a reply).
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the sampling thread looks whether the test is over while it waits.
const POLL: Duration = Duration::from_millis(20);

/// One node's `INFO` figures at one instant, read defensively: a field absent or not a number is
/// `None`, and nothing read is kept beyond these numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InfoFigures {
    /// The counters so far.
    pub counters: Counters,
    /// `used_cpu_sys` + `used_cpu_user`, seconds.
    pub cpu_s: Option<f64>,
    /// `used_cpu_sys_main_thread` + `used_cpu_user_main_thread`, seconds.
    pub main_cpu_s: Option<f64>,
    /// `used_cpu_sys` alone, seconds (the kernel's share of `cpu_s`).
    pub sys_s: Option<f64>,
    /// The gauges as read.
    pub gauges: Gauges,
    /// Each replica's `lag` (`slaveN:...,lag=N`), seconds, at most [`MAX_REPLICAS`].
    pub replica_lags: Vec<u64>,
    /// `process_id`.
    pub process_id: Option<u32>,
}

/// The server's counters: so far in a reading, since the previous reading in a sample (each
/// `None` when absent, or in a sample when it went back: a reset).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// `total_commands_processed`.
    pub commands: Option<u64>,
    /// `keyspace_hits`.
    pub hits: Option<u64>,
    /// `keyspace_misses`.
    pub misses: Option<u64>,
    /// `evicted_keys`.
    pub evicted: Option<u64>,
    /// `expired_keys`.
    pub expired: Option<u64>,
    /// `rejected_connections`.
    pub rejected: Option<u64>,
    /// `total_forks`.
    pub forks: Option<u64>,
}

impl Counters {
    /// What each counter gained from `a` to `b`.
    fn between(a: &Counters, b: &Counters) -> Counters {
        let d = |x: Option<u64>, y: Option<u64>| y?.checked_sub(x?);
        Counters {
            commands: d(a.commands, b.commands),
            hits: d(a.hits, b.hits),
            misses: d(a.misses, b.misses),
            evicted: d(a.evicted, b.evicted),
            expired: d(a.expired, b.expired),
            rejected: d(a.rejected, b.rejected),
            forks: d(a.forks, b.forks),
        }
    }
}

/// What a reading says of the server's state at that moment (not what changed since).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gauges {
    /// `used_memory`, bytes.
    pub used_memory: Option<u64>,
    /// `used_memory_rss`, bytes.
    pub rss: Option<u64>,
    /// `mem_fragmentation_ratio`.
    pub fragmentation: Option<f64>,
    /// `connected_clients`.
    pub connected_clients: Option<u64>,
    /// `blocked_clients`.
    pub blocked_clients: Option<u64>,
    /// `latest_fork_usec`.
    pub latest_fork_usec: Option<u64>,
    /// `rdb_bgsave_in_progress:1`: a background save in progress.
    pub bgsave: bool,
    /// `aof_rewrite_in_progress:1`: an AOF rewrite in progress.
    pub aof_rewrite: bool,
    /// `master_repl_offset`.
    pub repl_offset: Option<u64>,
    /// The most lagging replica's `lag`, seconds.
    pub replica_lag_max: Option<u64>,
}

impl InfoFigures {
    /// The figures of an `INFO` reply's text.
    pub fn parse(body: &str) -> InfoFigures {
        let mut f = InfoFigures::default();
        let (mut sys, mut user, mut msys, mut muser) = (None, None, None, None);
        for line in body.lines() {
            let Some((key, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            let n = || value.parse::<u64>().ok();
            let x = || value.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
            match key {
                "total_commands_processed" => f.counters.commands = n(),
                "keyspace_hits" => f.counters.hits = n(),
                "keyspace_misses" => f.counters.misses = n(),
                "evicted_keys" => f.counters.evicted = n(),
                "expired_keys" => f.counters.expired = n(),
                "rejected_connections" => f.counters.rejected = n(),
                "total_forks" => f.counters.forks = n(),
                "used_cpu_sys" => sys = x(),
                "used_cpu_user" => user = x(),
                "used_cpu_sys_main_thread" => msys = x(),
                "used_cpu_user_main_thread" => muser = x(),
                "used_memory" => f.gauges.used_memory = n(),
                "used_memory_rss" => f.gauges.rss = n(),
                "mem_fragmentation_ratio" => f.gauges.fragmentation = x(),
                "connected_clients" => f.gauges.connected_clients = n(),
                "blocked_clients" => f.gauges.blocked_clients = n(),
                "latest_fork_usec" => f.gauges.latest_fork_usec = n(),
                "rdb_bgsave_in_progress" => f.gauges.bgsave = value == "1",
                "aof_rewrite_in_progress" => f.gauges.aof_rewrite = value == "1",
                "master_repl_offset" => f.gauges.repl_offset = n(),
                "process_id" => f.process_id = value.parse().ok(),
                k if k.starts_with("slave") && k[5..].bytes().all(|b| b.is_ascii_digit()) => {
                    let lag = value.split(',').find_map(|kv| kv.strip_prefix("lag=")?.parse().ok());
                    if let Some(lag) = lag.filter(|_| f.replica_lags.len() < MAX_REPLICAS) {
                        f.replica_lags.push(lag);
                    }
                }
                _ => {}
            }
        }
        f.cpu_s = sys.zip(user).map(|(s, u)| s + u);
        f.sys_s = sys;
        f.main_cpu_s = msys.zip(muser).map(|(s, u)| s + u);
        f.gauges.replica_lag_max = f.replica_lags.iter().copied().max();
        f
    }
}

/// One thread of a server on this machine: its id, name (`comm`) and CPU so far.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadTime {
    /// The thread's id.
    pub tid: u32,
    /// Its name (`/proc/PID/task/TID/comm`: `redis-server`, `io_thd_1`, `bio_lazy_free`).
    pub name: String,
    /// Its CPU so far, nanoseconds.
    pub cpu_ns: u64,
}

/// One reading of one node: when, and what it said (or why not).
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// When the reply came, on the test's clock (since the run's epoch).
    pub at: Time,
    /// The figures, or why there are none (silent, refused, not yet connected).
    pub info: Result<InfoFigures, String>,
    /// A local server's threads at that moment (empty when not local or unreadable).
    pub threads: Vec<ThreadTime>,
    /// The test's start or end (else a sample of the interval).
    pub edge: Option<Edge>,
}

/// A reading at the test's edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// Before the benchmark's connections.
    Start,
    /// After the test's last reply.
    End,
}

impl Edge {
    /// `start` or `end`, as the JSON says.
    pub fn name(self) -> &'static str {
        match self {
            Edge::Start => "start",
            Edge::End => "end",
        }
    }
}

/// What the sampling cost the client: `INFO` calls sent, bytes read and the CPU of the threads
/// that read (the sampling thread and the edge readings), which the client's CPU figure leaves
/// out.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SamplerCost {
    /// `INFO` commands sent (each counts in the server's `total_commands_processed` once it ran).
    pub info_calls: u64,
    /// Bytes of `INFO` replies read.
    pub bytes_read: u64,
    /// Connections it opened (or tried to: each is in the server's
    /// `total_connections_received`).
    pub connections: u64,
    /// CPU of the sampling, user and system, seconds.
    pub user_s: f64,
    /// System CPU of the sampling, seconds.
    pub sys_s: f64,
}

/// The server's side of one test, second by second, every node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerSeries {
    /// `--server-interval`.
    pub interval: Duration,
    /// Every node's samples, by node, then in time.
    pub samples: Vec<ServerSample>,
    /// What sampling cost.
    pub cost: SamplerCost,
}

/// One sample of one node: what changed since its previous reading that answered (deltas) and
/// what it was then (gauges), on the client's seconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerSample {
    /// The node's address.
    pub node: String,
    /// The client's second the sample's last interval lies in (the client series' origin).
    pub second: u64,
    /// When it was read, seconds from the client series' origin (negative at the start).
    pub at_s: f64,
    /// Since the node's previous reading that answered, seconds (0 at the start).
    pub span_s: f64,
    /// The test's start or end.
    pub edge: Option<Edge>,
    /// Why the server did not answer at this tick: no figures, and the next sample's deltas
    /// cover its time.
    pub missing: Option<String>,
    /// What the counters gained since the previous reading (all `None` at the start and when
    /// missing).
    pub deltas: Counters,
    /// Commands per second over the span.
    pub ops_per_sec: Option<f64>,
    /// Cores the server used over the span (`used_cpu_*`).
    pub cpu_cores: Option<f64>,
    /// Cores its main thread used (`used_cpu_*_main_thread`).
    pub main_thread_cores: Option<f64>,
    /// Cores it used in the kernel (`used_cpu_sys`): `cpu_cores` less this is its user time.
    pub sys_cores: Option<f64>,
    /// The gauges as read (none when missing).
    pub gauges: Gauges,
    /// A local server's threads: name, id and cores over the span.
    pub threads: Vec<ThreadShare>,
}

/// One thread's CPU over a sample's span.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadShare {
    /// Its name.
    pub name: String,
    /// Its id.
    pub tid: u32,
    /// Cores it used over the span (1.0: a whole core).
    pub cores: f64,
}

impl ServerSeries {
    /// The nodes of the series, in order.
    pub fn nodes(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for x in &self.samples {
            if !out.contains(&x.node.as_str()) {
                out.push(&x.node);
            }
        }
        out
    }

    /// Node `node`'s threads by name, each with the cores it used over the samples that read
    /// threads (its CPU added up over their spans, over their length), busiest first.
    pub fn threads(&self, node: &str) -> Vec<(String, f64)> {
        let mut cpu: Vec<(String, f64)> = Vec::new();
        let mut length = 0.0;
        for x in self.samples.iter().filter(|x| x.node == node && !x.threads.is_empty()) {
            length += x.span_s;
            for t in &x.threads {
                match cpu.iter_mut().find(|(n, _)| *n == t.name) {
                    Some((_, c)) => *c += t.cores * x.span_s,
                    None => cpu.push((t.name.clone(), t.cores * x.span_s)),
                }
            }
        }
        if length <= 0.0 {
            return Vec::new();
        }
        for (_, c) in &mut cpu {
            *c /= length;
        }
        cpu.sort_by(|a, b| b.1.total_cmp(&a.1));
        cpu
    }

    /// Node `node`'s cores over the samples that have both figures: the whole server's
    /// (`used_cpu_*`) and its main thread's (`used_cpu_*_main_thread`), over their length.
    pub fn main_thread(&self, node: &str) -> Option<(f64, f64)> {
        let (mut total, mut main, mut length) = (0.0, 0.0, 0.0);
        for x in self.samples.iter().filter(|x| x.node == node) {
            if let (Some(t), Some(m)) = (x.cpu_cores, x.main_thread_cores) {
                total += t * x.span_s;
                main += m * x.span_s;
                length += x.span_s;
            }
        }
        (length > 0.0).then(|| (total / length, main / length))
    }
}

impl ServerSample {
    /// What was unusual in this sample, in words: a fork, evictions, rejected connections, a
    /// missing sample (empty when nothing was).
    pub fn unusual(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(why) = &self.missing {
            out.push(format!("no sample ({why})"));
        }
        if self.deltas.forks.is_some_and(|n| n > 0) || self.gauges.bgsave || self.gauges.aof_rewrite {
            let what = if self.gauges.aof_rewrite { "an AOF rewrite" } else { "a fork" };
            match self.gauges.latest_fork_usec.filter(|&u| u > 0) {
                Some(us) => out.push(format!("{what} (latest fork {:.1} ms)", us as f64 / 1e3)),
                None => out.push(what.to_string()),
            }
        }
        if let Some(n) = self.deltas.evicted.filter(|&n| n > 0) {
            out.push(format!("{n} keys evicted"));
        }
        if let Some(n) = self.deltas.rejected.filter(|&n| n > 0) {
            out.push(format!("{n} connections rejected"));
        }
        if let Some(n) = self.gauges.blocked_clients.filter(|&n| n > 0) {
            out.push(format!("{n} clients blocked"));
        }
        out
    }
}

/// Turns each node's readings into samples on the client's seconds: `origin` is the client
/// series' (the test's measured start, [`respbench_core::Stats::start`]), `interval` the
/// sampling's. A sample's deltas run from the node's previous reading that answered, so that
/// they add up over the test (start edge to end edge) whatever was missing between; its second
/// is the one its last interval's middle lies in.
pub fn align(origin: Time, interval: Duration, nodes: &[(String, Vec<Reading>)]) -> Vec<ServerSample> {
    let mut out = Vec::new();
    let secs = |t: Time| -> f64 { (t.as_nanos() as f64 - origin.as_nanos() as f64) / 1e9 };
    for (node, readings) in nodes {
        let mut prev: Option<&Reading> = None;
        for r in readings {
            let at_s = secs(r.at);
            let span_s = prev.map_or(0.0, |p| secs(r.at) - secs(p.at)).max(0.0);
            let middle = at_s - span_s.min(interval.as_secs_f64()) / 2.0;
            let mut s = ServerSample {
                node: node.clone(),
                second: middle.max(0.0) as u64,
                at_s,
                span_s,
                edge: r.edge,
                ..ServerSample::default()
            };
            match &r.info {
                Err(why) => {
                    s.span_s = 0.0;
                    s.missing = Some(why.clone());
                }
                Ok(now) => {
                    s.gauges = now.gauges.clone();
                    if let Some(p) = prev {
                        if let Ok(before) = &p.info {
                            deltas(&mut s, before, now, span_s);
                            s.threads = thread_shares(&p.threads, &r.threads, span_s);
                        }
                    }
                    prev = Some(r);
                }
            }
            out.push(s);
        }
    }
    out
}

fn deltas(s: &mut ServerSample, a: &InfoFigures, b: &InfoFigures, span_s: f64) {
    s.deltas = Counters::between(&a.counters, &b.counters);
    let per_s = |x: f64| (span_s > 0.0).then(|| x / span_s);
    s.ops_per_sec = s.deltas.commands.and_then(|n| per_s(n as f64));
    let cores = |x: Option<f64>, y: Option<f64>| per_s(y? - x?).filter(|c| *c >= 0.0);
    s.cpu_cores = cores(a.cpu_s, b.cpu_s);
    s.main_thread_cores = cores(a.main_cpu_s, b.main_cpu_s);
    s.sys_cores = cores(a.sys_s, b.sys_s);
}

/// Each thread's cores between two readings (threads in both, by id).
fn thread_shares(before: &[ThreadTime], after: &[ThreadTime], span_s: f64) -> Vec<ThreadShare> {
    if span_s <= 0.0 {
        return Vec::new();
    }
    after
        .iter()
        .filter_map(|t| {
            let b = before.iter().find(|b| b.tid == t.tid)?;
            let ns = t.cpu_ns.checked_sub(b.cpu_ns)?;
            Some(ThreadShare { name: t.name.clone(), tid: t.tid, cores: ns as f64 / 1e9 / span_s })
        })
        .collect()
}

/// A sample's figures as `--metrics` gauges (`respbench_server_*`).
pub fn gauges_of(s: &ServerSample) -> ServerGauges {
    let mut values = vec![("respbench_server_sample_missing", if s.missing.is_some() { 1.0 } else { 0.0 })];
    let n = |v: Option<u64>| v.map(|n| n as f64);
    let g = &s.gauges;
    let figures = [
        ("respbench_server_ops_per_second", s.ops_per_sec),
        ("respbench_server_cpu_cores", s.cpu_cores),
        ("respbench_server_main_thread_cores", s.main_thread_cores),
        ("respbench_server_used_memory_bytes", n(g.used_memory)),
        ("respbench_server_rss_bytes", n(g.rss)),
        ("respbench_server_fragmentation_ratio", g.fragmentation),
        ("respbench_server_connected_clients", n(g.connected_clients)),
        ("respbench_server_blocked_clients", n(g.blocked_clients)),
        ("respbench_server_evicted_keys", n(s.deltas.evicted)),
        ("respbench_server_forks", n(s.deltas.forks)),
        ("respbench_server_replica_lag_seconds", n(g.replica_lag_max)),
    ];
    values.extend(figures.into_iter().filter_map(|(k, v)| Some((k, v?))));
    // Threads of one name (jemalloc's background threads) are one series.
    let mut threads: Vec<(String, f64)> = Vec::new();
    for t in &s.threads {
        match threads.iter_mut().find(|(n, _)| *n == t.name) {
            Some((_, c)) => *c += t.cores,
            None => threads.push((t.name.clone(), t.cores)),
        }
    }
    ServerGauges { node: s.node.clone(), values, threads }
}

/// A local server's threads: `/proc/PID/task/*`'s names and CPU (`schedstat`'s time on a CPU,
/// else `stat`'s user and system ticks). Empty when unreadable.
pub fn threads_of(pid: u32) -> Vec<ThreadTime> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in dir.flatten().take(MAX_THREADS) {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let base = entry.path();
        let name = std::fs::read_to_string(base.join("comm")).map(|s| s.trim_end().to_string());
        let Ok(name) = name else { continue };
        let ns = std::fs::read_to_string(base.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .or_else(|| stat_ticks_ns(&std::fs::read_to_string(base.join("stat")).ok()?));
        if let Some(cpu_ns) = ns {
            out.push(ThreadTime { tid, name, cpu_ns });
        }
    }
    out.sort_by_key(|t| t.tid);
    out
}

/// utime + stime of a `/proc/.../stat` line, in nanoseconds.
fn stat_ticks_ns(stat: &str) -> Option<u64> {
    // The name is in parentheses and may hold spaces or ')': the fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3; utime and stime are fields 14 and 15.
    let ticks = f.get(11)?.parse::<u64>().ok()?.checked_add(f.get(12)?.parse().ok()?)?;
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0)?;
    ticks.checked_mul(1_000_000_000 / hz)
}

/// Whether `pid` is a local `redis-server` or `valkey-server` (its main thread's name).
fn is_server_process(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|c| matches!(c.trim_end(), "redis-server" | "valkey-server"))
}

/// This thread's CPU so far, user and system seconds (`getrusage(RUSAGE_THREAD)`).
fn thread_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_THREAD is valid on Linux.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// One node the sampler reads.
struct Node {
    address: String,
    server: Server,
    /// The server runs on this machine (loopback or a Unix socket).
    local: bool,
    conn: Option<Conn>,
    /// Its process, once a reading named one that is a local server.
    pid: Option<u32>,
    readings: Vec<Reading>,
}

/// Reads every node of a test: at its start ([`Sampler::start`]), every interval on a thread of
/// its own ([`Sampler::run`]) and at its end ([`Sampler::finish`]).
pub struct Sampler {
    nodes: Vec<Node>,
    interval: Duration,
    timeout: Duration,
    calls: AtomicU64,
    bytes: AtomicU64,
    connects: u64,
    cpu: (f64, f64),
}

impl Sampler {
    /// A sampler of `servers` (address, how to connect, whether on this machine) every
    /// `interval`.
    pub fn new(servers: Vec<(String, Server, bool)>, interval: Duration) -> Sampler {
        let timeout = READ_TIMEOUT;
        let nodes = servers
            .into_iter()
            .map(|(address, mut server, local)| Node {
                address,
                // Connecting waits no longer than a reading: the thread ends with the test.
                server: {
                    server.timeout = Some(timeout);
                    server
                },
                local,
                conn: None,
                pid: None,
                readings: Vec::new(),
            })
            .collect();
        Sampler {
            nodes,
            interval,
            timeout,
            calls: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            connects: 0,
            cpu: (0.0, 0.0),
        }
    }

    /// The reading at the test's start, before its connections open: each node's connection
    /// is closed after it, so that it holds no slot of the server's `maxclients`.
    pub fn start(&mut self, epoch: Instant) {
        self.measured(|s| {
            s.read_all(epoch, Some(Edge::Start));
            for n in &mut s.nodes {
                n.conn = None;
            }
        });
    }

    /// Reads every interval from `begin` until `done`; connects once `ready` says the
    /// benchmark's connections are up. The CPU it used, user and system seconds.
    /// Each reading's figures go to `live` (`--metrics`).
    pub fn run(
        &mut self,
        epoch: Instant,
        begin: Instant,
        done: &AtomicBool,
        ready: &dyn Fn() -> bool,
        live: &Mutex<Vec<ServerGauges>>,
    ) -> (f64, f64) {
        let before = self.cpu;
        self.measured(|s| {
            let mut k = 1u32;
            let mut connected = false;
            let interval = s.interval;
            let due = |k: u32| interval.checked_mul(k).and_then(|d| begin.checked_add(d));
            loop {
                let Some(at) = due(k) else { return };
                while Instant::now() < at {
                    if done.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(POLL.min(at.saturating_duration_since(Instant::now())));
                }
                if done.load(Ordering::Relaxed) {
                    return;
                }
                connected = connected || ready();
                if connected {
                    s.read_all(epoch, None);
                    s.publish(live);
                } else {
                    s.missing(Time::since(epoch, at), "the benchmark's connections were not all up yet");
                }
                // Ticks a slow reading passed by more than half an interval are missing samples.
                k += 1;
                while let Some(at) = due(k).filter(|&at| at + interval / 2 < Instant::now()) {
                    s.missing(Time::since(epoch, at), "the reading before was still waiting for its reply");
                    k += 1;
                }
            }
        });
        (self.cpu.0 - before.0, self.cpu.1 - before.1)
    }

    /// The reading at the test's end; closes the connections and aligns every node's readings
    /// on `origin`, the client series' start.
    pub fn finish(mut self, epoch: Instant, origin: Time) -> ServerSeries {
        self.measured(|s| {
            s.read_all(epoch, Some(Edge::End));
            for n in &mut s.nodes {
                n.conn = None;
            }
        });
        let nodes: Vec<(String, Vec<Reading>)> =
            self.nodes.into_iter().map(|n| (n.address, n.readings)).collect();
        ServerSeries {
            interval: self.interval,
            samples: align(origin, self.interval, &nodes),
            cost: SamplerCost {
                info_calls: self.calls.into_inner(),
                bytes_read: self.bytes.into_inner(),
                connections: self.connects,
                user_s: self.cpu.0,
                sys_s: self.cpu.1,
            },
        }
    }

    /// Runs `f`, adding the CPU this thread spent in it to the sampling's cost.
    fn measured(&mut self, f: impl FnOnce(&mut Sampler)) {
        let (u0, s0) = thread_cpu();
        f(self);
        let (u1, s1) = thread_cpu();
        self.cpu.0 += (u1 - u0).max(0.0);
        self.cpu.1 += (s1 - s0).max(0.0);
    }

    /// Each node's last reading against its previous that answered, for `--metrics`.
    fn publish(&self, live: &Mutex<Vec<ServerGauges>>) {
        let gauges = self.nodes.iter().filter_map(|n| {
            let (last, before) = n.readings.split_last()?;
            let prev = before.iter().rev().find(|r| r.info.is_ok());
            let pair: Vec<Reading> = prev.into_iter().chain([last]).cloned().collect();
            let s = align(last.at, self.interval, &[(n.address.clone(), pair)]).pop()?;
            Some(gauges_of(&s))
        });
        let gauges: Vec<ServerGauges> = gauges.collect();
        if let Ok(mut g) = live.lock() {
            *g = gauges;
        }
    }

    /// A tick `at` with no reading of any node, for `why`.
    fn missing(&mut self, at: Time, why: &str) {
        for n in &mut self.nodes {
            n.readings.push(Reading { at, info: Err(why.into()), threads: Vec::new(), edge: None });
        }
    }

    fn read_all(&mut self, epoch: Instant, edge: Option<Edge>) {
        for i in 0..self.nodes.len() {
            let r = self.read(i, epoch, edge);
            self.nodes[i].readings.push(r);
        }
    }

    /// One reading of node `i`; a connection that failed is closed and opened again next time.
    fn read(&mut self, i: usize, epoch: Instant, edge: Option<Edge>) -> Reading {
        let timeout = self.timeout;
        let n = &mut self.nodes[i];
        let sent = Time::since(epoch, Instant::now());
        let info = match n.conn.take() {
            Some(c) => Ok(c),
            None => {
                self.connects += 1;
                Conn::authenticated(&n.server).map(|mut c| {
                    c.set_timeout(timeout);
                    c
                })
            }
        };
        let body = match info {
            Ok(mut c) => {
                self.calls.fetch_add(1, Ordering::Relaxed);
                match info_sections(&mut c, &[]) {
                    Ok(body) => {
                        n.conn = Some(c);
                        Ok(body)
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            Err(e) => Err(e.message),
        };
        // A reply's reading is when it came; a failure's, when it was asked (its tick).
        let at = if body.is_ok() { Time::since(epoch, Instant::now()) } else { sent };
        let info = body.map(|b| {
            self.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
            InfoFigures::parse(&b)
        });
        if let (Ok(f), None, true) = (&info, n.pid, n.local) {
            n.pid = f.process_id.filter(|&p| is_server_process(p));
        }
        let threads = match (&info, n.pid) {
            (Ok(_), Some(pid)) => threads_of(pid),
            _ => Vec::new(),
        };
        Reading { at, info, threads, edge }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Time {
        Time::from_micros(ms * 1000)
    }

    fn reading(ms: u64, commands: u64, edge: Option<Edge>) -> Reading {
        let info = InfoFigures {
            counters: Counters { commands: Some(commands), ..Counters::default() },
            cpu_s: Some(commands as f64 / 1000.0),
            ..Default::default()
        };
        Reading {
            at: t(ms),
            info: Ok(info),
            threads: vec![ThreadTime { tid: 7, name: "io_thd_1".into(), cpu_ns: commands * 1_000_000 }],
            edge,
        }
    }

    #[test]
    fn info_is_read_defensively() {
        let body = "# Stats\r\ntotal_commands_processed:120\r\nkeyspace_hits:x\r\nevicted_keys:-3\r\n\
                    used_cpu_sys:1.5\r\nused_cpu_user:0.5\r\nused_cpu_sys_main_thread:1.0\r\n\
                    mem_fragmentation_ratio:inf\r\nrdb_bgsave_in_progress:1\r\nprocess_id:42\r\n\
                    slave0:ip=127.0.0.1,port=7001,state=online,offset=10,lag=3\r\nslave1:ip=x,lag=1\r\n\
                    slavex:lag=99\r\nno colon here\r\n:\r\n";
        let f = InfoFigures::parse(body);
        assert_eq!(f.counters.commands, Some(120));
        assert_eq!((f.counters.hits, f.counters.evicted, f.gauges.fragmentation), (None, None, None));
        assert_eq!(f.cpu_s, Some(2.0));
        // Half a pair is no figure.
        assert_eq!(f.main_cpu_s, None);
        assert!(f.gauges.bgsave && !f.gauges.aof_rewrite);
        assert_eq!((f.process_id, f.replica_lags, f.gauges.replica_lag_max), (Some(42), vec![3, 1], Some(3)));
        let many: String = (0..1000).map(|i| format!("slave{i}:lag=1\r\n")).collect();
        assert_eq!(InfoFigures::parse(&many).replica_lags.len(), MAX_REPLICAS);
        assert_eq!(stat_ticks_ns("9 (a) b) S 1 1 1 0 -1 0 0 0 0 0 3 2 0 0"), {
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
            Some(5 * (1_000_000_000 / hz))
        });
    }

    /// The series starts 20 ms after the start edge; readings at each second and 30 ms after the
    /// last; one in the middle is missing. On virtual time: the seconds are the client's.
    #[test]
    fn samples_fall_in_the_clients_seconds_and_add_up() {
        let origin = t(1020);
        let missing = Reading { at: t(3021), info: Err("no reply".into()), threads: Vec::new(), edge: None };
        let readings = vec![
            reading(1000, 100, Some(Edge::Start)),
            reading(2025, 1100, None),
            missing,
            reading(4022, 3100, None),
            reading(5021, 4100, None),
            reading(5051, 4130, Some(Edge::End)),
        ];
        let s = align(origin, Duration::from_secs(1), &[("n1".into(), readings)]);
        let seconds: Vec<u64> = s.iter().map(|s| s.second).collect();
        assert_eq!(seconds, [0, 0, 1, 2, 3, 4]);
        assert_eq!(s[0].deltas.commands, None);
        assert!((s[0].at_s + 0.020).abs() < 1e-9);
        assert_eq!(s[2].deltas.commands, None);
        assert_eq!(s[2].missing.as_deref(), Some("no reply"));
        // After the missing one: two seconds' worth, over its span.
        assert_eq!(s[3].deltas.commands, Some(2000));
        assert!((s[3].span_s - 1.997).abs() < 1e-9, "{}", s[3].span_s);
        assert!((s[3].ops_per_sec.unwrap() - 2000.0 / 1.997).abs() < 1e-6);
        let sum: u64 = s.iter().filter_map(|s| s.deltas.commands).sum();
        assert_eq!(sum, 4130 - 100);
        assert_eq!(s[5].edge, Some(Edge::End));
        // The thread's CPU: 1 ms of CPU per command.
        let th = &s[1].threads[0];
        assert_eq!(th.name, "io_thd_1");
        assert!((th.cores - 1.0 / 1.025).abs() < 1e-9);
        // A counter that went back (CONFIG RESETSTAT) is no delta.
        let back = align(
            origin,
            Duration::from_secs(1),
            &[("n".into(), vec![reading(0, 50, None), reading(1000, 10, None)])],
        );
        assert_eq!(back[1].deltas.commands, None);
        assert_eq!(back[1].unusual(), Vec::<String>::new());
    }

    #[test]
    fn unusual_seconds_are_named() {
        let s = ServerSample {
            deltas: Counters { forks: Some(1), evicted: Some(3), ..Counters::default() },
            gauges: Gauges { latest_fork_usec: Some(1500), ..Gauges::default() },
            missing: None,
            ..Default::default()
        };
        assert_eq!(s.unusual(), ["a fork (latest fork 1.5 ms)", "3 keys evicted"]);
        let m = ServerSample { missing: Some("no reply".into()), ..Default::default() };
        assert_eq!(m.unusual(), ["no sample (no reply)"]);
    }

    #[test]
    fn this_process_threads_are_read() {
        let me = threads_of(std::process::id());
        assert!(!me.is_empty());
        assert!(me.iter().any(|t| t.tid == std::process::id()));
    }
}
