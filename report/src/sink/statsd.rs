//! `--statsd` (memtier_benchmark's `--statsd-host`): each second of a test, once every loop
//! has moved past it, as StatsD datagrams over UDP with memtier's metric names (see
//! [`crate::statsd`]); with `--graphite-port`, each test's start and end POSTed to Graphite as
//! memtier's event annotations, each on a thread of its own so a slow Graphite never holds the
//! run. A datagram or a POST that fails is counted and said once on stderr at the end; the run
//! goes on.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use respbench_core::stats::Interval;
use respbench_core::Time;
use respbench_session::config::Config;
use respbench_session::observer::Goal;
use respbench_session::statsd::Statsd as Target;

use super::{Event, Output, RunEnd, Wants};
use crate::error::Error;
use crate::statsd::{self as text, Annotation, SecondMetrics};

/// A whole second.
const SECOND: Duration = Duration::from_secs(1);

/// What the output needs of the run's options.
pub struct Settings {
    /// Where to and under which names.
    pub target: Target,
    /// The percentiles sent each second (memtier's `--print-percentiles`; 50, 99, 99.9 unless
    /// asked).
    pub percentiles: Vec<f64>,
    /// The connections a test runs, when they stay the same through it.
    pub connections: Option<u64>,
    /// The start annotation's details before `run=N` (memtier's `threads=4 connections=50`).
    pub started: String,
    /// A scenario's groups: each group's metrics go under its name.
    pub groups: Vec<String>,
    /// memtier's dialect: its line on stderr as the run begins; a host that does not resolve
    /// is a warning and the run goes on without metrics, as memtier does (respbench's own `--statsd` refuses it before
    /// connecting: [`check`]).
    pub memtier: bool,
}

/// The settings `cfg` asks for, `None` without `--statsd`.
pub fn settings(cfg: &Config) -> Option<Settings> {
    let target = cfg.open.statsd.clone()?;
    let percentiles = match (&cfg.memtier, cfg.open.percentiles.is_empty()) {
        (Some(m), _) => m.percentiles.clone(),
        (None, false) => cfg.open.percentiles.clone(),
        (None, true) => vec![50.0, 99.0, 99.9],
    };
    let steady = !cfg.sweep.is_sweep() && cfg.open.ramp.is_none() && cfg.groups.is_empty();
    let started = match &cfg.memtier {
        Some(m) => format!("threads={} connections={}", m.threads, m.clients),
        None => format!("threads={} connections={}", cfg.threads.max(1), cfg.clients),
    };
    Some(Settings {
        target,
        percentiles,
        connections: steady.then_some(cfg.clients as u64),
        started,
        groups: cfg.groups.iter().map(|g| g.name.clone()).collect(),
        memtier: cfg.memtier.is_some(),
    })
}

/// The StatsD host's address: its first (`--statsd`'s host must resolve before the run).
fn resolve(t: &Target) -> Result<SocketAddr, String> {
    match (t.host.as_str(), t.port).to_socket_addrs() {
        Ok(mut a) => a.next().ok_or_else(|| "it has no address".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Before connecting: `--statsd`'s host resolves (memtier's dialect warns instead, as memtier).
pub fn check(cfg: &Config) -> Result<(), Error> {
    match cfg.open.statsd.as_ref().filter(|_| cfg.memtier.is_none()) {
        Some(t) => resolve(t)
            .map(drop)
            .map_err(|e| Error::Output(format!("--statsd: cannot resolve host '{}': {e}", t.host))),
        None => Ok(()),
    }
}

/// One group's test so far (the whole test's without groups).
#[derive(Default)]
struct SoFar {
    tag: String,
    requests: u64,
    nanos: u64,
    /// The sum of the replies' latencies, µs.
    latency_us: f64,
}

/// The output. A failed send is counted, never an error: the run goes on.
pub struct Statsd<E: Write> {
    s: Settings,
    start: String,
    socket: Option<(UdpSocket, SocketAddr)>,
    /// Why the host did not resolve, said once as the run begins (memtier's dialect).
    unresolved: Option<String>,
    err: E,
    /// In a test: which one (from 1), when it began, what it runs to, and each group so far.
    run: u32,
    began: Option<Instant>,
    in_test: bool,
    goal: Option<Goal>,
    so_far: Vec<SoFar>,
    /// The last seconds of tests, until their end is known (tag, start, figures).
    held: Vec<(String, Time, Interval)>,
    /// The run's epoch, µs since 1970: the seconds' origin.
    epoch_us: u64,
    /// Datagrams sent and failed, with the first failure.
    sent: u64,
    failed: u64,
    first_failure: Option<String>,
    posts: Vec<JoinHandle<Result<(), String>>>,
}

impl<E: Write> Statsd<E> {
    /// Sends as `s` says; warnings and the count of failures go to `err`.
    pub fn new(s: Settings, err: E) -> Self {
        let (socket, unresolved) = match resolve(&s.target) {
            Ok(addr) => {
                let local: SocketAddr = match addr {
                    SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
                    SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
                };
                match UdpSocket::bind(local).and_then(|u| u.set_nonblocking(true).map(|()| u)) {
                    Ok(u) => (Some((u, addr)), None),
                    Err(e) => (None, Some(format!("statsd: failed to create UDP socket: {e}"))),
                }
            }
            Err(_) => (None, Some(format!("statsd: failed to resolve host '{}'", s.target.host))),
        };
        Statsd {
            start: s.target.name_start(),
            s,
            socket,
            unresolved,
            err,
            run: 0,
            began: None,
            in_test: false,
            goal: None,
            so_far: Vec::new(),
            held: Vec::new(),
            epoch_us: 0,
            sent: 0,
            failed: 0,
            first_failure: None,
            posts: Vec::new(),
        }
    }

    /// Sends `lines`, as few datagrams as hold them.
    fn send(&mut self, lines: &[String]) {
        let Some((socket, to)) = &self.socket else { return };
        for d in text::datagrams(lines) {
            match socket.send_to(&d, to) {
                Ok(_) => self.sent += 1,
                Err(e) => {
                    self.failed += 1;
                    self.first_failure.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }

    /// POSTs `a` to Graphite on a thread of its own, with `--graphite-port`.
    fn annotate(&mut self, a: Annotation) {
        let (Some(port), Some(_)) = (self.s.target.graphite_port, &self.socket) else { return };
        let host = self.s.target.host.clone();
        let request = text::event_request(&host, port, &self.s.target.label, &a);
        self.posts.push(std::thread::spawn(move || {
            text::post(&host, port, request.as_bytes()).map_err(|e| format!("{host}:{port}: {e}"))
        }));
    }

    /// A test began: memtier's start annotation.
    fn begin_test(&mut self) {
        if !self.in_test {
            self.in_test = true;
            self.run += 1;
            self.so_far.clear();
            let data = format!("{} run={}", self.s.started, self.run);
            self.annotate(Annotation { what: "Benchmark Started", data, tags: "memtier,start" });
        }
    }

    /// The run's clock now, on the seconds' origin (the run's epoch).
    fn now(&self) -> Time {
        let since_1970 =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let micros = u64::try_from(since_1970.as_micros()).unwrap_or(u64::MAX);
        Time::from_micros(micros.saturating_sub(self.epoch_us))
    }

    /// The seconds of `tag` every loop moved past; `end`: the test ended then. A second whose
    /// end has not come yet is the test's last, cut short: it waits for the test's end to be
    /// known, so that its rate is over its length.
    fn seconds(&mut self, tag: &str, ended: &[(Time, Interval)], end: Option<Time>) {
        self.begin_test();
        let now = self.now();
        if let Some(e) = end {
            for (t, at, iv) in std::mem::take(&mut self.held) {
                self.second(&t, &iv, e.nanos_since(at));
            }
        }
        for (at, iv) in ended {
            match end {
                Some(e) => self.second(tag, iv, e.nanos_since(*at)),
                None if *at + SECOND > now => self.held.push((tag.to_string(), *at, iv.clone())),
                None => self.second(tag, iv, SECOND.as_nanos() as u64),
            }
        }
    }

    /// The seconds held back, as long as they lasted until now (the test's end never came).
    fn release_held(&mut self) {
        let now = self.now();
        for (t, at, iv) in std::mem::take(&mut self.held) {
            self.second(&t, &iv, now.nanos_since(at));
        }
    }

    /// One second of `tag`, `nanos` long (at most a second), in a datagram of its own.
    fn second(&mut self, tag: &str, iv: &Interval, nanos: u64) {
        let nanos = nanos.clamp(1, SECOND.as_nanos() as u64);
        let group = self.s.groups.iter().find(|g| tag.ends_with(&format!(".{g}"))).cloned();
        let start = match &group {
            Some(g) => format!("{}{}.", self.start, respbench_session::statsd::sanitize_label(g)),
            None => self.start.clone(),
        };
        let k = match self.so_far.iter().position(|s| s.tag == tag) {
            Some(k) => k,
            None => {
                self.so_far.push(SoFar { tag: tag.to_string(), ..SoFar::default() });
                self.so_far.len() - 1
            }
        };
        let so_far = &mut self.so_far[k];
        so_far.requests = so_far.requests.saturating_add(iv.requests);
        so_far.nanos = so_far.nanos.saturating_add(nanos);
        let mean = (iv.requests > 0).then(|| iv.latency.mean());
        so_far.latency_us += mean.unwrap_or(0.0) * iv.requests as f64;
        let rate = |n: u64, ns: u64| (u128::from(n) * 1_000_000_000 / u128::from(ns.max(1))) as u64;
        let progress = match (&group, self.goal) {
            (None, Some(Goal::Requests(n))) if n > 0 => Some(100.0 * so_far.requests as f64 / n as f64),
            (None, Some(Goal::Duration(d))) if !d.is_zero() => {
                Some(100.0 * so_far.nanos as f64 / d.as_nanos() as f64)
            }
            _ => None,
        };
        let m = SecondMetrics {
            requests: iv.requests,
            errors: iv.errors,
            ops_sec: rate(iv.requests, nanos),
            ops_sec_avg: rate(so_far.requests, so_far.nanos),
            latency_ms: mean.map(|us| us / 1000.0),
            latency_avg_ms: (so_far.requests > 0)
                .then(|| so_far.latency_us / so_far.requests as f64 / 1000.0),
            connections: self.s.connections.filter(|_| group.is_none()),
            progress_pct: progress,
            percentiles: match iv.requests {
                0 => Vec::new(),
                _ => self
                    .s
                    .percentiles
                    .iter()
                    .map(|&p| {
                        (p, respbench_core::shared::value_at_percentile(&iv.latency, p) as f64 / 1000.0)
                    })
                    .collect(),
            },
        };
        let mut lines = Vec::new();
        text::write_second(&start, &m, &mut lines);
        self.send(&lines);
    }

    /// A test ended: memtier's end annotation, and the rates back to 0.
    fn end_test(&mut self) {
        self.release_held();
        if !self.in_test {
            return;
        }
        self.in_test = false;
        self.annotate(Annotation {
            what: "Benchmark Completed",
            data: format!("run={}", self.run),
            tags: "memtier,end",
        });
        let mut lines = Vec::new();
        text::write_end(&self.start, &mut lines);
        self.send(&lines);
    }
}

impl<E: Write> Output for Statsd<E> {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        match ev {
            Event::Begin(b) => {
                self.epoch_us = b.epoch_us;
                let t = &self.s.target;
                if self.s.memtier && self.socket.is_some() {
                    let _ = writeln!(
                        self.err,
                        "statsd: initialized, sending metrics to {}:{} with prefix '{}' run_label '{}'",
                        t.host, t.port, t.prefix, t.label
                    );
                }
                if let Some(why) = self.unresolved.take() {
                    let _ = writeln!(self.err, "{why}");
                    let _ = writeln!(
                        self.err,
                        "warning: failed to initialize StatsD client, metrics will not be sent"
                    );
                }
            }
            Event::Progress(t) => {
                self.goal = Some(t.goal);
                if self.began != Some(t.started) {
                    self.began = Some(t.started);
                    self.begin_test();
                }
            }
            Event::Intervals { tag, ended, end } => self.seconds(tag, ended, *end),
            Event::Results(_) => self.end_test(),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _end: &RunEnd<'_>) -> Result<(), Error> {
        self.end_test();
        let posts = std::mem::take(&mut self.posts);
        let total = posts.len();
        let failed: Vec<String> = posts
            .into_iter()
            .filter_map(|p| p.join().unwrap_or_else(|_| Err("the thread failed".into())).err())
            .collect();
        if let Some(first) = failed.first() {
            let _ = writeln!(
                self.err,
                "graphite: {} of {total} event annotations could not be posted: {first}",
                failed.len()
            );
        }
        if let Some(why) = &self.first_failure {
            let (t, n) = (&self.s.target, self.failed + self.sent);
            let _ = writeln!(
                self.err,
                "statsd: {} of {n} datagrams could not be sent to {}:{}: {why}",
                self.failed, t.host, t.port
            );
        }
        Ok(())
    }

    fn wants(&self) -> Wants {
        Wants { intervals: self.socket.is_some(), ..Wants::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::Begin;
    use respbench_session::server::ServerInfo;

    /// `n` replies of 100 µs, in a second that began at `at_ms`.
    fn second(at_ms: u64, n: u64) -> (Time, Interval) {
        let mut iv = Interval::new();
        iv.requests = n;
        iv.latency.record_n(100, n).unwrap();
        (Time::from_micros(at_ms * 1000), iv)
    }

    fn lines(socket: &UdpSocket) -> Vec<String> {
        let mut buf = [0u8; 2048];
        let n = socket.recv(&mut buf).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap().lines().map(String::from).collect()
    }

    /// A whole second goes at once; the last, cut short, waits for the test's end and its rate
    /// is over its length; the test's end sets the rates back to 0. Nothing is said on stderr.
    #[test]
    fn the_last_second_waits_for_the_tests_end() {
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        receiver.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let target = respbench_session::statsd::parse(
            Some(&receiver.local_addr().unwrap().to_string()),
            Some("p"),
            Some("l"),
            None,
        )
        .unwrap()
        .unwrap();
        let s = Settings {
            target,
            percentiles: vec![50.0],
            connections: Some(4),
            started: String::new(),
            groups: Vec::new(),
            memtier: false,
        };
        let mut err = Vec::new();
        let mut sink = Statsd::new(s, &mut err);
        // The run began 100 s ago: its clock reads 100 s (give or take a busy machine's delays).
        let now_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros();
        let info = ServerInfo::default();
        let begin = Begin {
            backends: vec!["mio"],
            width: 3,
            info: &info,
            server_b: None,
            epoch_us: now_us as u64 - 100_000_000,
        };
        sink.on(&Event::Begin(&begin)).unwrap();
        sink.on(&Event::Intervals { tag: "GET", ended: &[second(50_000, 1000)], end: None }).unwrap();
        let first = lines(&receiver);
        assert_eq!(first[0], "p.l.ops_sec:1000|g");
        assert!(first.contains(&"p.l.requests:1000|c".to_string()), "{first:?}");
        assert!(first.contains(&"p.l.latency_p50:0.100000|g".to_string()), "{first:?}");
        // A second whose end (131 s) is later than the clock: the test's last, held.
        sink.on(&Event::Intervals { tag: "GET", ended: &[second(130_000, 500)], end: None }).unwrap();
        receiver.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        assert!(receiver.recv(&mut buf).is_err(), "nothing sent before the test's end");
        receiver.set_nonblocking(false).unwrap();
        sink.on(&Event::Intervals { tag: "GET", ended: &[], end: Some(Time::from_micros(130_250_000)) })
            .unwrap();
        let last = lines(&receiver);
        assert_eq!(
            &last[..2],
            ["p.l.ops_sec:2000|g", "p.l.ops_sec_avg:1200|g"],
            "500 in 0.25 s, 1500 in 1.25 s"
        );
        assert!(last.contains(&"p.l.requests:500|c".to_string()), "{last:?}");
        sink.on(&Event::Results(&[])).unwrap();
        assert_eq!(lines(&receiver), ["p.l.ops_sec:0|g", "p.l.ops_sec_avg:0|g", "p.l.progress_pct:0|g"]);
        let config = crate::doc::RunConfig::default();
        sink.finish(&RunEnd {
            interrupted: false,
            late_by_s: None,
            epoch_us: 0,
            config: &config,
            searches: &[],
        })
        .unwrap();
        drop(sink);
        assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
    }
}
