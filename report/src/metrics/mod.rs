//! `--metrics`: the run's live figures over HTTP for Prometheus, on a thread of its own.
//!
//! The endpoint reads what the event loops already publish ([`respbench_session::Progress`]:
//! each loop's [`respbench_session::Figures`], copied by the loop without waiting) for the test
//! running, and the results of the tests that ended, added up by series so that every counter
//! only grows for the whole run. A scrape renders at most every [`RENDER_EVERY`] (scrapes in
//! between share the bytes), so a flood of requests costs the run nothing but the accepts; the
//! thread runs at a lower priority than the loops. [`Exporter::finish`] keeps it up after the
//! run until the final figures have been served once (`--metrics-linger`).

pub mod format;
pub mod http;
pub mod notify;

use std::collections::BTreeMap;
use std::io;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use respbench_session::metrics::Metrics;
use respbench_session::observer::LiveTest;
use respbench_session::result::TestResult;
use respbench_session::{Figures, Progress};

use format::{Buckets, Format, Series, SeriesKey, Snapshot, TestTotals};

pub use http::parse_request;

/// How often at most the figures are rendered; scrapes in between are served the same bytes.
pub const RENDER_EVERY: Duration = Duration::from_millis(250);

/// The test running, as the endpoint reads it.
struct Live {
    /// Its title, as its results name it.
    title: String,
    /// What its series are labelled by: its title without a custom command's arguments.
    label: String,
    /// The command label of each of its mix's commands (or its one command).
    commands: Vec<String>,
    nodes: Vec<String>,
    target_rps: Option<u64>,
    ramp: Option<respbench_core::RampKind>,
    progress: Arc<Progress>,
    /// A scenario's groups: each one's name, command label, target and figures.
    groups: Vec<(String, String, Option<u64>, Arc<Progress>)>,
}

/// What the endpoint knows: the tests that ended, added up, and the one running.
#[derive(Default)]
struct State {
    worker: u64,
    workers: u64,
    backend: String,
    test: String,
    done: BTreeMap<SeriesKey, Series>,
    done_tests: BTreeMap<String, TestTotals>,
    /// A scenario's groups' own figures, by test and group.
    done_groups: BTreeMap<(String, String), TestTotals>,
    live: Option<Live>,
    /// Bumped at every change of `done` or `live`: the mark of what a body holds.
    generation: u64,
    /// The generation of the final figures, once the run is over.
    last: Option<u64>,
    /// A response holding the final figures was written whole.
    served_last: bool,
    /// The server's last sample by node, of the last test that ended (#51).
    server: Vec<respbench_session::ServerGauges>,
    /// The last bodies rendered, by format: when and of which generation.
    cache: Vec<(Format, Instant, u64, Arc<Vec<u8>>)>,
}

/// The live metrics endpoint: bound when made, served by its own thread until
/// [`Exporter::finish`] (or drop).
pub struct Exporter {
    addr: std::net::SocketAddr,
    shared: Arc<(Mutex<State>, Condvar)>,
    stop: Arc<AtomicBool>,
    waker: Option<mio::Waker>,
    thread: Option<JoinHandle<()>>,
    linger: Duration,
}

/// The label of a command from its text: its first word, upper case (`SET`, `HGET`); a mix
/// that has the same command twice numbers the later ones (`SET#2`).
fn command_labels(commands: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, c) in commands.iter().enumerate() {
        // A request in RESP (`*3\r\n$3\r\nSET\r\n…`): its name is the first bulk string.
        let c = match c.strip_prefix('*') {
            Some(rest) => rest.split("\r\n").nth(2).unwrap_or(""),
            None => c.as_str(),
        };
        let word: String = c
            .split(|ch: char| ch.is_whitespace())
            .find(|w| !w.is_empty())
            .unwrap_or("")
            .chars()
            .filter(|ch| ch.is_ascii_graphic())
            .take(64)
            .collect::<String>()
            .to_ascii_uppercase();
        let label = if out.contains(&word) { format!("{word}#{}", i + 1) } else { word };
        out.push(label);
    }
    out
}

/// One series' figures from a loop's.
fn series_of(f: &Figures) -> Series {
    let mut s = Series { requests: f.requests, ..Default::default() };
    for k in f.errors.kinds().iter().filter(|k| k.prefix != "connection") {
        *s.errors.entry(k.prefix.clone()).or_default() += k.count;
    }
    s.latency = f.latency.as_ref().map(Buckets::of).unwrap_or_default();
    s.service = f.service.as_ref().map(Buckets::of);
    s
}

fn totals_of(f: &Figures) -> TestTotals {
    TestTotals {
        lost: f.lost,
        abandoned: f.abandoned,
        unsent: f.unsent,
        lateness: f.lateness.as_ref().map(Buckets::of),
        ..TestTotals::default()
    }
}

/// Adds a test's figures (a loop's, or a whole result's) to `series` and `tests` under its
/// labels: by node over several nodes, else by command.
fn add_test(
    series: &mut BTreeMap<SeriesKey, Series>,
    tests: &mut BTreeMap<String, TestTotals>,
    title: &str,
    commands: &[String],
    total: &Figures,
    parts: &[Figures],
    nodes: &[(String, &Figures)],
) {
    let key = |command: &str, node: &str| SeriesKey {
        test: title.into(),
        command: command.into(),
        node: node.into(),
        group: String::new(),
    };
    let single = if commands.len() == 1 { commands[0].as_str() } else { "mix" };
    if !nodes.is_empty() {
        for (address, f) in nodes {
            series.entry(key(single, address)).or_default().add(&series_of(f));
        }
    } else if !parts.is_empty() {
        for (command, f) in commands.iter().zip(parts) {
            series.entry(key(command, "")).or_default().add(&series_of(f));
        }
    } else {
        series.entry(key(single, "")).or_default().add(&series_of(total));
    }
    tests.entry(title.into()).or_default().add(&totals_of(total));
}

/// The label of a group's commands: its one command's, or `mix`.
fn group_command(commands: &[String]) -> String {
    match command_labels(commands).as_slice() {
        [one] => one.clone(),
        _ => "mix".into(),
    }
}

/// Adds a group's figures (a loop's, or its whole result's) to `series`, as one series labelled
/// by its group and command.
fn add_group(series: &mut BTreeMap<SeriesKey, Series>, title: &str, group: &str, command: &str, f: &Figures) {
    let key =
        SeriesKey { test: title.into(), command: command.into(), node: String::new(), group: group.into() };
    series.entry(key).or_default().add(&series_of(f));
}

/// A loop's figures named: each node of `nodes` (and those that appeared) with its figures,
/// leaving out the room kept for nodes that never appeared.
fn named_nodes<'a>(known: &[String], f: &'a Figures) -> Vec<(String, &'a Figures)> {
    let names = known.iter().cloned().chain(f.appeared.iter().map(ToString::to_string));
    names.zip(&f.nodes).collect()
}

/// Figures of a finished test's result (its histograms whole), for [`add_test`].
fn figures_of(r: &TestResult) -> Figures {
    let s = &r.stats;
    Figures {
        requests: s.requests,
        errors: s.errors.clone(),
        lost: s.lost,
        abandoned: s.abandoned,
        unsent: s.unsent,
        latency: Some(s.latency.clone()),
        service: s.service.clone(),
        lateness: s.lateness.clone(),
        parts: Vec::new(),
        nodes: s
            .nodes
            .iter()
            .map(|n| figures_of(&TestResult::new(String::new(), String::new(), n.clone())))
            .collect(),
        appeared: Vec::new(),
    }
}

impl State {
    fn snapshot(&self) -> Snapshot {
        let (mut series, mut tests) = (self.done.clone(), self.done_tests.clone());
        let (mut group_tests, mut group_targets) = (self.done_groups.clone(), Vec::new());
        let mut connections = 0;
        let mut server = self.server.clone();
        if let Some(live) = &self.live {
            // A scenario's connections are its groups'.
            connections = match live.groups.is_empty() {
                true => live.progress.live.load(Ordering::Relaxed),
                false => live.groups.iter().map(|(.., p)| p.live.load(Ordering::Relaxed)).sum(),
            };
            server = live.progress.server.lock().map(|g| g.clone()).unwrap_or_default();
            let whole = match live.groups.is_empty() {
                true => vec![Arc::clone(&live.progress)],
                false => live.groups.iter().map(|(.., p)| Arc::clone(p)).collect(),
            };
            for mut f in whole.iter().flat_map(|p| p.figures()) {
                if !live.groups.is_empty() {
                    // An open loop's service time and lateness are its group's, as in the
                    // scenario's results: the test's series would vanish at its end.
                    (f.service, f.lateness) = (None, None);
                }
                let nodes = named_nodes(&live.nodes, &f);
                let nodes = if live.nodes.is_empty() { Vec::new() } else { nodes };
                let parts = if live.groups.is_empty() { &f.parts[..] } else { &[] };
                add_test(&mut series, &mut tests, &live.label, &live.commands, &f, parts, &nodes);
            }
            for (name, command, target, p) in &live.groups {
                for f in p.figures() {
                    add_group(&mut series, &live.label, name, command, &f);
                    group_tests.entry((live.label.clone(), name.clone())).or_default().add(&totals_of(&f));
                }
                group_targets.extend(target.map(|t| (name.clone(), t)));
            }
            let pauses = live.progress.pause_figures();
            if pauses.wakeups > 0 {
                let t = tests.entry(live.label.clone()).or_default();
                t.idle_pauses = Some(Buckets::of(&pauses.idle));
                t.wake_pauses = (!pauses.wake.is_empty()).then(|| Buckets::of(&pauses.wake));
            }
        }
        // A ramp's step and level, once its first step has begun; a rate ramp's target is its
        // step's level.
        let ramp = self.live.as_ref().and_then(|l| {
            let step = l.progress.ramp_step.load(Ordering::Relaxed);
            let level = l.progress.ramp_level.load(Ordering::Relaxed);
            l.ramp.filter(|_| step > 0).map(|k| (k, step, level))
        });
        let target_rps = match ramp {
            Some((respbench_core::RampKind::Rps, _, level)) => Some(level),
            _ => self.live.as_ref().and_then(|l| l.target_rps),
        };
        let ramp = ramp.map(|(k, step, level)| (k.name(), step, level));
        let (user, system) = respbench_session::cpu::process_cpu();
        Snapshot {
            worker: self.worker,
            workers: self.workers,
            backend: self.backend.clone(),
            test: self.test.clone(),
            series,
            tests,
            group_tests,
            group_targets,
            target_rps,
            ramp,
            connections,
            cpu_seconds: user + system,
            server,
        }
    }
}

/// The server thread's view of the state.
struct Shared(Arc<(Mutex<State>, Condvar)>);

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl http::Responder for Shared {
    fn body(&mut self, format: Format) -> (Arc<Vec<u8>>, u64) {
        let mut st = lock(&self.0 .0);
        let generation = st.generation;
        let now = Instant::now();
        // A finished run's figures do not change: its body is rendered once.
        let fresh = |at: Instant, g: u64| {
            g == generation && (st.last == Some(g) || now.duration_since(at) < RENDER_EVERY)
        };
        if let Some((_, _, g, body)) = st.cache.iter().find(|(f, at, g, _)| *f == format && fresh(*at, *g)) {
            return (Arc::clone(body), *g);
        }
        let body = Arc::new(format::render(&st.snapshot(), format).into_bytes());
        st.cache.retain(|(f, ..)| *f != format);
        st.cache.push((format, now, generation, Arc::clone(&body)));
        (body, generation)
    }

    fn served(&mut self, mark: u64) {
        let mut st = lock(&self.0 .0);
        if st.last.is_some_and(|last| mark >= last) {
            st.served_last = true;
            self.0 .1.notify_all();
        }
    }
}

impl Exporter {
    /// Binds `m.addr` (an error names it: a port in use fails here, before any connection to
    /// the server) and starts serving; `worker` is this process's index and the workers' count.
    pub fn start(m: &Metrics, worker: (u64, u64)) -> io::Result<Exporter> {
        let listener = TcpListener::bind(m.addr).map_err(|e| {
            io::Error::new(e.kind(), format!("{}: cannot listen on {}: {e}", m.given, m.addr))
        })?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (server, waker) = http::Server::new(listener, Arc::clone(&stop))?;
        let state = State { worker: worker.0, workers: worker.1, ..Default::default() };
        let shared = Arc::new((Mutex::new(state), Condvar::new()));
        let mut responder = Shared(Arc::clone(&shared));
        // At the loops' priority: niced, it answered past Prometheus' 1 s timeout for seconds
        // on a machine whose CPUs were taken (5 scrapes in a row lost in tests/metrics); what
        // it costs is bounded by the rendering's cache and the connection limits instead.
        let thread = std::thread::Builder::new()
            .name("respbench-metrics".into())
            .spawn(move || server.run(&mut responder))?;
        Ok(Exporter { addr, shared, stop, waker: Some(waker), thread: Some(thread), linger: m.linger })
    }

    /// Where it listens (the port chosen, for port 0).
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.0)
    }

    /// A measured test starts: its figures are read from its loops' from now on.
    pub fn live_test(&self, t: &LiveTest<'_>) {
        let mut st = self.state();
        st.backend = t.backend.to_string();
        st.test = t.label.to_string();
        st.live = Some(Live {
            title: t.title.to_string(),
            label: t.label.to_string(),
            // A scenario's whole has no command of its own.
            commands: match t.groups.is_empty() {
                true => command_labels(&t.commands),
                false => vec![String::new()],
            },
            nodes: t.nodes.clone(),
            target_rps: t.target_rps,
            ramp: t.ramp,
            progress: Arc::clone(t.progress),
            groups: t
                .groups
                .iter()
                .map(|g| {
                    (g.name.to_string(), group_command(&g.commands), g.target_rps, Arc::clone(g.progress))
                })
                .collect(),
        });
        st.generation += 1;
    }

    /// A step's results (a mix's commands, then its total): they replace the running test's
    /// live figures, and add to the run's.
    pub fn results(&self, results: &[TestResult]) {
        let Some((total, parts)) = results.split_last() else { return };
        let mut st = self.state();
        let commands: Vec<String> = if parts.is_empty() {
            vec![total.command.clone()]
        } else {
            parts.iter().map(|p| p.command.clone()).collect()
        };
        let commands = command_labels(&commands);
        // Labelled as it was live: a custom command's arguments are not for whoever scrapes.
        let label = match &st.live {
            Some(live) if live.title == total.name => live.label.clone(),
            _ => total.name.split_whitespace().next().unwrap_or_default().to_string(),
        };
        let parts: Vec<Figures> = parts.iter().map(figures_of).collect();
        let whole = figures_of(total);
        let names: Vec<String> = total.nodes.iter().map(|n| n.address.clone()).collect();
        let nodes: Vec<(String, &Figures)> = names.into_iter().zip(&whole.nodes).collect();
        // A scenario's groups, labelled as they were live.
        let groups: Vec<(String, String, Figures)> = total
            .groups
            .iter()
            .map(|g| {
                let live = st.live.as_ref().and_then(|l| l.groups.iter().find(|(name, ..)| *name == g.name));
                let command = live
                    .map_or_else(|| group_command(std::slice::from_ref(&g.command)), |(_, c, ..)| c.clone());
                (g.name.clone(), command, figures_of(g))
            })
            .collect();
        let State { done, done_tests, done_groups, .. } = &mut *st;
        add_test(done, done_tests, &label, &commands, &whole, &parts, &nodes);
        for (name, command, f) in &groups {
            add_group(done, &label, name, command, f);
            done_groups.entry((label.clone(), name.clone())).or_default().add(&totals_of(f));
        }
        let notify = notify::Notify::of(&total.stats);
        done_tests.entry(label.clone()).or_default().add(&TestTotals { notify, ..TestTotals::default() });
        if let Some(p) = &total.pauses {
            let pauses = TestTotals {
                idle_pauses: Some(Buckets::of(&p.idle)),
                wake_pauses: p.wake.as_ref().filter(|w| !w.is_empty()).map(Buckets::of),
                ..TestTotals::default()
            };
            done_tests.entry(label).or_default().add(&pauses);
        }
        if let Some(live) = &st.live {
            st.server = live.progress.server.lock().map(|g| g.clone()).unwrap_or_default();
        }
        st.live = None;
        st.generation += 1;
    }

    /// The run is over: waits until a scrape has been served the final figures, or
    /// `--metrics-linger` has passed, then stops serving.
    pub fn finish(mut self) {
        let deadline = Instant::now() + self.linger;
        let shared = Arc::clone(&self.shared);
        let mut st = lock(&shared.0);
        st.last = Some(st.generation);
        while !st.served_last {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = shared.1.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        drop(st);
        self.shut();
    }

    fn shut(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(w) = self.waker.take() {
            let _ = w.wake();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.shut();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(addr: std::net::SocketAddr) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    fn exporter(linger: Duration) -> Exporter {
        let m =
            Metrics { addr: "127.0.0.1:0".parse().unwrap(), given: "--metrics 127.0.0.1:0".into(), linger };
        Exporter::start(&m, (1, 3)).unwrap()
    }

    /// Ends `e` on a thread: whether `finish` returned within `within`.
    fn finishes(e: Exporter, within: Duration) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            e.finish();
            let _ = tx.send(());
        });
        rx.recv_timeout(within).is_ok()
    }

    #[test]
    fn finish_waits_for_a_scrape_of_the_final_figures_and_no_longer() {
        // Lingering an hour: finish returns once a scrape after the run's end was served.
        let e = exporter(Duration::from_secs(3600));
        let addr = e.local_addr();
        let before = scrape(addr);
        assert!(before.starts_with("HTTP/1.1 200 OK\r\n"), "{before}");
        assert!(before.contains("respbench_run_info{worker=\"1\",workers=\"3\""), "{before}");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            e.finish();
            let _ = tx.send(());
        });
        // A scrape served before the end does not count; one after it does.
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "finish returned before a final scrape"
        );
        let last = scrape(addr);
        assert!(last.contains("respbench_client_cpu_seconds_total"), "{last}");
        assert!(
            rx.recv_timeout(Duration::from_secs(30)).is_ok(),
            "finish did not return after the final scrape"
        );
        // Then the port is closed.
        assert!(std::net::TcpStream::connect(addr).is_err());
        // --metrics-linger 0: at once, scraped or not.
        assert!(finishes(exporter(Duration::ZERO), Duration::from_secs(30)));
    }

    #[test]
    fn command_labels_are_first_words_and_unique() {
        let c = |v: &[&str]| command_labels(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(c(&["set key:__rand_int__ xxx"]), ["SET"]);
        assert_eq!(c(&["*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n"]), ["SET"]);
        assert_eq!(c(&["PING\r\n"]), ["PING"]);
        assert_eq!(c(&["SET a b", "get a", "SET c d"]), ["SET", "GET", "SET#3"]);
        assert_eq!(c(&["  \"quoted\" x"]), ["\"QUOTED\""]);
    }
}
