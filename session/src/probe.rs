//! The server's side of the verdict, read: `INFO cpu` and `INFO commandstats` before and after
//! each test over the startup's connection ([`Probe`], 500 ms per reading, given up at the first
//! failure), and the main thread's run delay when the server is on this machine. What the
//! readings mean is [`crate::verdict`]'s ([`ServerCpu::between`]).
//!
//! A probe's connection occupies none of the server's client slots while a test's connections
//! are open ([`ProbeConn`]): it is closed after the reading at a test's start and opened again
//! for the reading at its end, so `-c` equal to the server's `maxclients` runs whole.

use std::time::Instant;

use crate::server::{info, info_sections, info_value, Conn, InfoError, Server, StartupError};
use crate::timing::{self, NodeReading, NodeTime, ServerTime};
use crate::verdict::{CpuReading, ServerCpu};

/// Why the server's counters are not read (for the verdict, which says so).
#[derive(Debug)]
#[non_exhaustive]
pub enum ProbeError {
    /// `--no-server-probe`.
    NotAsked,
    /// The run is over several servers, and one node's counters would not speak for them.
    SeveralServers,
    /// The startup connection failed before the run (closed, silent, garbled).
    Spent(StartupError),
    /// Its connection, closed while a test ran, could not be opened again.
    Reopen(StartupError),
    /// `INFO` cannot be read over it.
    Info(InfoError),
    /// `INFO cpu` has no CPU figures.
    NoCpuFigures,
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeError::NotAsked => f.write_str("--no-server-probe: the server's counters are not read"),
            ProbeError::SeveralServers => {
                f.write_str("the run is over several servers and their counters are not read")
            }
            ProbeError::Spent(e) => write!(f, "the startup connection was of no more use ({})", e.message),
            ProbeError::Reopen(e) => {
                write!(f, "the probe's connection could not be opened again after the test ({})", e.message)
            }
            ProbeError::Info(e) => e.fmt(f),
            ProbeError::NoCpuFigures => f.write_str("INFO cpu has no used_cpu_sys and used_cpu_user"),
        }
    }
}

impl std::error::Error for ProbeError {}

/// How long a reading of the server's counters may wait for each reply.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// A connection for readings around a test that holds none of the server's client slots while
/// the test's connections are open: [`ProbeConn::release`] closes it after a reading, and the
/// next [`ProbeConn::get`] opens a new one to the same server (the same `AUTH` and TLS).
pub(crate) struct ProbeConn {
    server: Server,
    /// The connection, while open.
    conn: Option<Conn>,
}

impl ProbeConn {
    /// `conn`, connected to `server`, which reads wait at most [`PROBE_TIMEOUT`] on.
    pub(crate) fn new(server: &Server, mut conn: Conn) -> ProbeConn {
        conn.set_timeout(PROBE_TIMEOUT);
        ProbeConn { server: server.clone(), conn: Some(conn) }
    }

    /// Closes the connection until the next reading.
    pub(crate) fn release(&mut self) {
        self.conn = None;
    }

    /// The connection, opened again if it was released.
    pub(crate) fn get(&mut self) -> Result<&mut Conn, StartupError> {
        let conn = match self.conn.take() {
            Some(c) => c,
            None => {
                let mut c = Conn::authenticated(&self.server)?;
                c.set_timeout(PROBE_TIMEOUT);
                c
            }
        };
        Ok(self.conn.insert(conn))
    }
}

/// Reads the server's CPU counters around each test, over the startup's connection, closed
/// while each test runs ([`Probe::release`]) and opened again for the next reading.
pub struct Probe {
    /// The startup's connection, while it serves.
    pub(crate) conn: Option<ProbeConn>,
    /// A server on this machine: its process id, for its main thread's run delay.
    local_pid: Option<String>,
    /// Why the server is taken as multi-threaded, from `INFO server`.
    threaded: Option<String>,
    /// Why there are no figures, once known.
    pub missing: Option<ProbeError>,
    /// Whether one `INFO cpu commandstats` reads both (Redis 7+), else one command each.
    combined: bool,
    /// The text of `INFO server` read at the start, for the server's name and version.
    pub server_text: Option<String>,
    /// The last reading's `INFO commandstats` text, for [`LatencyProbe::read`] to take instead
    /// of asking the server again.
    pub commandstats: Option<String>,
}

impl Probe {
    /// A probe on `conn`, or one that knows why it has none. Each reading waits at most
    /// [`PROBE_TIMEOUT`]: between tests the server has nothing else to do, and one that does
    /// not answer in that time (stopped, or not Redis) is not asked again.
    /// `local`: the server runs on this machine (loopback or a Unix socket), so its process
    /// id from `INFO server` is one of this machine's. `server`: where `conn` goes, to open it
    /// again after [`Probe::release`].
    pub fn new(conn: Result<Conn, ProbeError>, server: &Server, local: bool) -> Probe {
        let mut p = match conn {
            Ok(c) => Probe {
                conn: Some(ProbeConn::new(server, c)),
                local_pid: None,
                threaded: None,
                missing: None,
                combined: true,
                server_text: None,
                commandstats: None,
            },
            Err(e) => Probe {
                conn: None,
                local_pid: None,
                threaded: None,
                missing: Some(e),
                combined: true,
                server_text: None,
                commandstats: None,
            },
        };
        if let Some(c) = p.conn.as_mut().and_then(|c| c.conn.as_mut()) {
            match info(c, b"server") {
                Ok(body) => {
                    p.threaded = threaded(&body);
                    p.local_pid = info_value::<f64>(&body, "process_id")
                        .filter(|_| local)
                        .map(|pid| (pid as u64).to_string());
                    p.server_text = Some(body);
                }
                Err(e) => {
                    p.conn = None;
                    p.missing = Some(ProbeError::Info(e));
                }
            }
        }
        p
    }

    /// Closes the connection while a test's connections are open (it holds none of the
    /// server's client slots then); the next reading opens a new one.
    pub fn release(&mut self) {
        if let Some(c) = &mut self.conn {
            c.release();
        }
    }

    /// Opens the connection again if it was released; `false` once it failed (the reason kept).
    fn reopen(&mut self) -> bool {
        let Some(c) = &mut self.conn else { return false };
        if let Err(e) = c.get() {
            self.conn = None;
            self.missing = Some(ProbeError::Reopen(e));
            return false;
        }
        true
    }

    /// The connection, opened again if it was released; `None` once it failed (the reason kept).
    pub(crate) fn connection(&mut self) -> Option<&mut Conn> {
        if !self.reopen() {
            return None;
        }
        self.conn.as_mut()?.conn.as_mut()
    }

    /// Reads the counters; after the first failure (INFO refused, renamed, silent) it gives up
    /// for the run and keeps the reason.
    pub fn read(&mut self) -> Option<CpuReading> {
        if !self.reopen() {
            return None;
        }
        let c = self.conn.as_mut()?.conn.as_mut()?;
        // One command per reading where the server takes several sections at once.
        let mut both = None;
        if self.combined {
            match info_sections(c, &[b"cpu", b"commandstats"]) {
                Ok(body) if body.contains("used_cpu_sys") => both = Some(body),
                _ => self.combined = false,
            }
        }
        let cpu = match &both {
            Some(body) => Ok(body.clone()),
            None => info(c, b"cpu").map_err(ProbeError::Info),
        };
        let reading = cpu.and_then(|body| {
            let f = |k: &str| info_value::<f64>(&body, k);
            let total = f("used_cpu_sys").zip(f("used_cpu_user")).map(|(s, u)| s + u);
            let main = f("used_cpu_sys_main_thread").zip(f("used_cpu_user_main_thread")).map(|(s, u)| s + u);
            total
                .map(|total_s| CpuReading {
                    at: Instant::now(),
                    total_s,
                    main_s: main,
                    commands_s: None,
                    wait_s: None,
                })
                .ok_or(ProbeError::NoCpuFigures)
        });
        // Optional: a server without commandstats still has its CPU figures.
        let pid = self.local_pid.as_deref();
        let reading = reading.map(|mut r| {
            let stats = match both {
                Some(body) => Some(body),
                None => info(c, b"commandstats").ok(),
            };
            r.commands_s = stats.as_deref().map(command_seconds);
            self.commandstats = stats;
            r.wait_s = pid.and_then(main_thread_delay).map(|ns| ns as f64 / 1e9);
            r
        });
        match reading {
            Ok(r) => Some(r),
            Err(e) => {
                self.conn = None;
                self.missing = Some(e);
                None
            }
        }
    }

    /// Why the server is taken as multi-threaded (`INFO server`), if it is.
    pub fn threaded(&self) -> Option<&str> {
        self.threaded.as_deref()
    }

    /// The server's CPU between `before` and now.
    pub fn since(&mut self, before: Option<CpuReading>) -> Option<ServerCpu> {
        let before = before?;
        let after = self.read()?;
        ServerCpu::between(&before, &after, self.threaded.as_deref())
    }
}

/// Reads each node's execution-time counters around a test ([`crate::timing`]): against a
/// single server over the CPU probe's connection (the startup's: no connection is added), over
/// several nodes one connection per node, opened at the start and, as the CPU probe's, closed
/// while each test runs ([`LatencyProbe::release`]); a node whose connection or commands failed
/// says why its figures are not known, and the run goes on.
pub struct LatencyProbe {
    /// Each node's address and its connection (`None`: the CPU probe's), or why it has none.
    nodes: Vec<(String, Result<Option<ProbeConn>, String>)>,
    /// Whether the node answers `LATENCY HISTOGRAM` (`false` once it refused: older servers).
    histogram: Vec<bool>,
}

/// One reading of every node, in the probe's order.
pub type LatencyReading = Vec<NodeReading>;

impl LatencyProbe {
    /// A probe of `servers` (address and how to connect), or one that knows none are read
    /// (`--no-server-probe`: `why_not`). A single server is read over the CPU probe's
    /// connection ([`Probe::conn`]), given to each reading.
    pub fn new(servers: &[(String, Server)], why_not: Option<&str>) -> LatencyProbe {
        let single = servers.len() == 1;
        let nodes: Vec<(String, Result<Option<ProbeConn>, String>)> = servers
            .iter()
            .map(|(address, server)| {
                let conn = match why_not {
                    Some(why) => Err(why.to_string()),
                    None if single => Ok(None),
                    None => Conn::authenticated(server)
                        .map_err(|e| e.message)
                        .map(|c| Some(ProbeConn::new(server, c))),
                };
                (address.clone(), conn)
            })
            .collect();
        let histogram = vec![true; nodes.len()];
        LatencyProbe { nodes, histogram }
    }

    /// Closes every node's own connection while a test's connections are open; the next
    /// reading opens new ones (the CPU probe's is [`Probe::release`]'s).
    pub fn release(&mut self) {
        for (_, conn) in &mut self.nodes {
            if let Ok(Some(c)) = conn {
                c.release();
            }
        }
    }

    /// Reads every node: `LATENCY HISTOGRAM`, `INFO latencystats` where it has none, and `INFO
    /// commandstats`. A single server is read over `probe`'s connection, with its reading of a
    /// moment before ([`Probe::commandstats`]) where the histogram is there, so the server is
    /// not asked twice. A connection that fails is not used again.
    pub fn read(&mut self, probe: &mut Probe) -> LatencyReading {
        let mut out = Vec::with_capacity(self.nodes.len());
        for (i, (_, conn)) in self.nodes.iter_mut().enumerate() {
            let mut r = NodeReading::default();
            let (c, given) = match conn {
                Ok(Some(c)) => match c.get() {
                    Ok(c) => (c, None),
                    Err(e) => {
                        r.refused = Some(e.message.clone());
                        *conn = Err(e.message);
                        out.push(r);
                        continue;
                    }
                },
                Ok(None) => {
                    let given = probe.commandstats.take();
                    match probe.connection() {
                        Some(c) => (c, given),
                        None => {
                            let why = probe.missing.as_ref().map(ToString::to_string);
                            r.refused =
                                Some(why.unwrap_or_else(|| "the startup connection is closed".into()));
                            out.push(r);
                            continue;
                        }
                    }
                }
                Err(why) => {
                    r.refused = Some(why.clone());
                    out.push(r);
                    continue;
                }
            };
            let failed = read_node(c, &mut self.histogram[i], given, &mut r);
            if let Some(why) = failed {
                // Closed or silent: not asked again.
                match conn {
                    Ok(Some(_)) => *conn = Err(why.clone()),
                    _ => probe.conn = None,
                }
                r.refused = Some(why);
            }
            out.push(r);
        }
        out
    }

    /// The test's calls of `names` at each node between `before` and now; `expected`: the
    /// test's replies by node address.
    pub fn since(
        &mut self,
        before: &LatencyReading,
        names: &[String],
        expected: &dyn Fn(&str) -> Option<u64>,
        probe: &mut Probe,
    ) -> ServerTime {
        let after = self.read(probe);
        let nodes = self
            .nodes
            .iter()
            .zip(before.iter().zip(&after))
            .map(|((address, _), (b, a))| {
                let (source, commands) = match timing::between(b, a, names) {
                    Ok((s, c)) => (Ok(s), c),
                    Err(why) => (Err(why), Vec::new()),
                };
                NodeTime { address: address.clone(), source, commands, expected_calls: expected(address) }
            })
            .collect();
        let mut t = ServerTime { nodes, merged: Vec::new() };
        if t.nodes.len() > 1 {
            t.merge_nodes();
        }
        t
    }
}

/// One node's reading over `c` into `r`: `LATENCY HISTOGRAM` (while `histogram`: a server
/// that does not answer it is not asked again), then `INFO commandstats latencystats`, unless
/// the histogram came and `given` holds commandstats' text already. `Some(why)`: the
/// connection failed.
fn read_node(
    c: &mut Conn,
    histogram: &mut bool,
    given: Option<String>,
    r: &mut NodeReading,
) -> Option<String> {
    if *histogram {
        match c.command(&[b"LATENCY", b"HISTOGRAM"]) {
            Ok(v) => match timing::parse_histogram(&v) {
                Some(h) => r.histograms = Some(h),
                None => *histogram = false,
            },
            Err(e) => return Some(e.message),
        }
    }
    let mut words = None;
    match given.filter(|_| r.histograms.is_some()) {
        Some(body) => r.commandstats = timing::parse_commandstats(&body),
        None => match info_sections(c, &[b"commandstats", b"latencystats"])
            .or_else(|_| info(c, b"commandstats"))
        {
            Ok(body) => {
                r.commandstats = timing::parse_commandstats(&body);
                r.percentiles = timing::parse_latencystats(&body);
            }
            Err(InfoError::Connection(e)) => return Some(e.message),
            Err(e) => words = Some(e.to_string()),
        },
    }
    if r.histograms.is_none() && r.commandstats.is_none() {
        r.refused = Some(words.unwrap_or_else(|| "LATENCY HISTOGRAM and INFO commandstats refused".into()));
    }
    None
}

/// The run delay of process `pid`'s main thread, in nanoseconds (`/proc/PID/schedstat`).
fn main_thread_delay(pid: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?.split_whitespace().nth(1)?.parse().ok()
}

/// The sum of `usec=` over the `cmdstat_*` lines of `INFO commandstats`, in seconds.
fn command_seconds(body: &str) -> f64 {
    let usec: u64 = body
        .lines()
        .filter(|l| l.starts_with("cmdstat_"))
        .filter_map(|l| l.split(',').find_map(|kv| kv.strip_prefix("usec=")?.parse::<u64>().ok()))
        .sum();
    usec as f64 / 1e6
}

/// Why `INFO server` says the server runs commands on several threads.
fn threaded(body: &str) -> Option<String> {
    if body.lines().any(|l| l.starts_with("dragonfly_version:")) {
        return Some("Dragonfly".into());
    }
    match info_value::<f64>(body, "server_threads") {
        Some(n) if n > 1.0 => return Some(format!("server_threads:{n}")),
        _ => {}
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn readings_make_shares() {
        let t = Instant::now();
        let a =
            CpuReading { at: t, total_s: 10.0, main_s: Some(8.0), commands_s: Some(1.0), wait_s: Some(0.5) };
        let b = CpuReading {
            at: t + Duration::from_secs(2),
            total_s: 12.0,
            main_s: Some(9.8),
            commands_s: Some(3.0),
            wait_s: Some(1.3),
        };
        let s = ServerCpu::between(&a, &b, Some("server_threads:4")).unwrap();
        assert!((s.cores - 1.0).abs() < 1e-9 && (s.main_share.unwrap() - 0.9).abs() < 1e-9);
        assert!((s.wait_share.unwrap() - 0.4).abs() < 1e-9);
        // The main thread reported apart: the threads don't matter.
        assert_eq!(s.threaded, None);
        // Two seconds of commands in two: a server asleep in DEBUG SLEEP uses no CPU but serves nothing else.
        assert_eq!(s.serving_share(), Some(1.0));
        let body = "# Commandstats\r\ncmdstat_get:calls=10,usec=1500,usec_per_call=150.00\r\n\
                    cmdstat_debug:calls=2,usec=2000000,usec_per_call=1000000.00,rejected_calls=0\r\n";
        assert!((command_seconds(body) - 2.0015).abs() < 1e-9);
        assert_eq!(threaded("# Server\r\ndragonfly_version:df-v1.0\r\n").as_deref(), Some("Dragonfly"));
        assert_eq!(
            threaded("redis_version:7.0.15\r\nserver_threads:4\r\n").as_deref(),
            Some("server_threads:4")
        );
        assert_eq!(threaded("redis_version:7.0.15\r\n"), None);
    }
}
