//! respbench: the command line. Parses redis-benchmark's options, runs each test on a backend and
//! renders the results in redis-benchmark's formats.

mod hdr;
mod hlog;
mod json;
mod merge;
mod opts;
#[cfg(feature = "plot")]
mod plot;
mod report;
mod workers;

use respbench_session::result::{command_text, NodeInfo, StepValues, TestResult};
use respbench_session::{cpu, limits, routing, server, topology, verdict};

use std::io::{self, IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

use respbench_core::suite::{custom, default_suite, Selection, TestSpec};
use respbench_core::template::{KeySpace, Template};
use respbench_core::{
    Backoff, Budget, ConnConfig, Handshake, Mix, OpenLoop, Outcome, Plan, Stats, Stop, Time, Workload,
};
use respbench_driver::{Progress, TestRun};

use opts::{Backend, Config, Opts, Output};
use report::TestReport;
use server::ServerInfo;

/// Exit status for an interrupted run (128 + SIGINT), after printing what completed.
const EXIT_INTERRUPTED: u8 = 130;
/// How often the progress line is redrawn, as in redis-benchmark.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// `--reconnect`'s backoff: the first wait, doubling up to the longest.
const RECONNECT_FIRST: Duration = Duration::from_millis(10);
const RECONNECT_MAX: Duration = Duration::from_secs(1);

/// SIGINT and SIGTERM received so far.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    // A second signal ends the process at once; the first lets the run stop and print.
    if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(EXIT_INTERRUPTED as libc::c_int) };
    }
}

fn install_signal_handlers() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches an atomic and calls _exit, both async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

fn interrupted() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let name = args.first().map(|s| s.as_str()).unwrap_or("respbench");
    let rest: Vec<&str> = args.iter().skip(1).map(|s| s.as_str()).collect();
    // `merge` is detected before argh: a subcommand does not fit the flat redis-benchmark
    // options, whose positional arguments are a command to benchmark.
    if rest.first() == Some(&"merge") {
        return merge::main(name, &rest[1..]);
    }
    if rest.first() == Some(&"plot") {
        return plot(name, &rest[1..]);
    }
    let opts: Opts = match opts::parse_args(&[name], &rest, "respbench --help") {
        Ok(o) => o,
        Err(code) => return code,
    };
    if opts.version {
        println!("respbench {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let cfg = match opts.check() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}\nRun 'respbench --help' for the options.");
            return ExitCode::from(1);
        }
    };
    install_signal_handlers();
    match run(&cfg) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// `respbench plot`.
#[cfg(feature = "plot")]
fn plot(name: &str, args: &[&str]) -> ExitCode {
    plot::main(name, args)
}

/// `respbench plot` in a build without the `plot` feature.
#[cfg(not(feature = "plot"))]
fn plot(_: &str, _: &[&str]) -> ExitCode {
    eprintln!(
        "respbench plot: this respbench was built without plotting (cargo feature `plot`, on by default): \
         rebuild without --no-default-features"
    );
    ExitCode::from(1)
}

fn handshake(cfg: &Config) -> Handshake {
    Handshake::new(cfg.user.as_deref(), cfg.password.as_deref(), cfg.tracking, cfg.db, cfg.resp3)
}

fn run(cfg: &Config) -> Result<ExitCode, String> {
    limits::ensure_fds(cfg.clients, cfg.threads.clamp(1, cfg.clients))?;
    check_uring(cfg)?;
    if cfg.idle {
        return idle(cfg);
    }
    if let Some(path) = cfg.json.as_deref().filter(|p| *p != "-") {
        // Find out now, not after a long run whose results would then be lost.
        std::fs::File::create(path).map_err(|e| format!("--json: cannot write {path}: {e}"))?;
    }
    // Bad test names and mixes are found before connecting.
    let cases = cases(cfg)?;
    if cfg.cluster || cfg.replicas != opts::Replicas::None {
        // A client over several nodes keeps its connections; one per request batch is not
        // built for it.
        if !cfg.keepalive {
            return Err(
                "-k 0 (a new connection per request batch) is not supported with --cluster or replicas"
                    .into(),
            );
        }
        if let Some(c) = cases.iter().find(|c| c.spec.connection_per_request) {
            return Err(format!(
                "the {} test (a new connection per request) is not supported with --cluster or replicas",
                c.spec.title
            ));
        }
    }
    let (info, counters) = server::startup(cfg).map_err(|e| e.0)?;
    let counters = counters.map_err(|why| eprintln!("WARNING: Could not fetch server CONFIG{why}")).ok();
    // Over several nodes: find them, and how each command is routed, before any test.
    let mut with_nodes;
    let cfg = if cfg.cluster || cfg.replicas != opts::Replicas::None {
        with_nodes = cfg.clone();
        let templates: Vec<&Template> = cases.iter().flat_map(Case::templates).collect();
        with_nodes.multi = routing::prepare(cfg, &templates)?;
        if let Some(m) = &with_nodes.multi {
            // Nodes that appear later are opened then (an error names the open-file limit).
            limits::ensure_fds(cfg.clients * m.topology.nodes.len(), cfg.threads.clamp(1, cfg.clients))?;
            if cfg.output == opts::Output::Verbose && cfg.json.as_deref() != Some("-") {
                // As redis-benchmark opens a cluster run: the nodes it found.
                println!("{}", topology::describe(&m.topology));
                println!("{}\n", m.describe_keys());
            }
        }
        &with_nodes
    } else {
        cfg
    };
    if !cfg.keepalive {
        eprintln!(
            "WARNING: Keepalive disabled. You probably need 'echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse' \
             for Linux in order to use a lot of clients/requests"
        );
    }
    let mut session = Session::new(cfg, &cases, info, counters)?;
    let ended = session.run_suite(&cases);
    session.finish(ended)
}

/// How a run of the suite ended.
enum Ended {
    /// Every test ran; or a test's connections failed (1) or the run was interrupted (130): what
    /// completed is reported.
    Code(ExitCode),
    /// A backend could not run a test at all.
    Failed(String),
}

/// One run of the suite: where its output goes and what it has recorded for the JSON document.
struct Session<'a> {
    /// The options as given.
    base: &'a Config,
    /// The options of the step running (the base at one combination of a sweep).
    cfg: Arc<Config>,
    /// That step's parameters, for its entries' `step` (a sweep only).
    step: Option<opts::Step>,
    info: ServerInfo,
    out: Box<dyn Write>,
    /// Several backends side by side.
    comparing: bool,
    open_loop: bool,
    csv: bool,
    /// The width of the test-name column in side-by-side tables.
    width: usize,
    epoch: Instant,
    epoch_us: u64,
    /// The JSON entries of the tests run so far.
    done: Vec<serde_json::Value>,
    /// `--reconnect`: some connection went down and came back (the run then exits 1).
    dropped: bool,
    /// `--hlog`: the interval log.
    hlog: Option<hlog::IntervalLog>,
    /// Reads the server's CPU around each test.
    probe: verdict::Probe,
    /// The total entries of the sweep's steps so far, for its table.
    rows: Vec<TestResult>,
    /// The test and value size `--preload` last wrote.
    preloaded: Option<(u64, respbench_core::dist::ValueSize)>,
    /// A worker's step: the whole run's `-c` at that step.
    step_clients: Option<usize>,
    /// `--start-at`, until the first measured test waits for it.
    start_at: Option<respbench_session::workers::StartAt>,
    /// `--start-at`: how late this process was ready for the instant, in seconds (0 on time).
    late_by_s: Option<f64>,
}

impl<'a> Session<'a> {
    /// Opens the output and writes its header (CSV, side-by-side).
    /// `counters` is the startup's connection, when the server answered it: the verdict reads
    /// the server's counters over it.
    fn new(
        cfg: &'a Config,
        cases: &[Case],
        info: ServerInfo,
        counters: Option<server::Conn>,
    ) -> Result<Session<'a>, String> {
        // With `--json -` stdout carries the document only.
        let out: Box<dyn Write> =
            if json_on_stdout(cfg) { Box::new(io::sink()) } else { Box::new(io::stdout()) };
        let open_loop = !cfg.open.rates.is_empty();
        // Side by side, an open-loop row is titled `GET @ 20000 rps`.
        let rate_suffix = cfg.open.rates.iter().map(|r| format!(" @ {r} rps").len()).max().unwrap_or(0);
        let width = cases.iter().flat_map(Case::titles).map(|t| t.len() + rate_suffix).max().unwrap_or(0);
        let mut s = Session {
            base: cfg,
            cfg: Arc::new(cfg.clone()),
            step: None,
            info,
            out,
            comparing: cfg.backends.len() > 1,
            open_loop,
            csv: cfg.output == Output::Csv,
            width,
            epoch: Instant::now(),
            epoch_us: unix_micros(SystemTime::now()),
            done: Vec::new(),
            dropped: false,
            hlog: None,
            probe: verdict::Probe::new(
                match counters {
                    // One node's counters would speak for a cluster or replica set: they are
                    // not read (the per-node table shows where the requests went).
                    Some(_) if cfg.multi.is_some() => {
                        Err("the run is over several servers and their counters are not read".to_string())
                    }
                    Some(c) => Ok(c),
                    None => Err("the server did not answer CONFIG GET at startup".to_string()),
                },
                is_local(&cfg.endpoint),
            ),
            rows: Vec::new(),
            preloaded: None,
            step_clients: None,
            start_at: cfg.start_at.clone(),
            late_by_s: None,
        };
        if let Some(path) = &cfg.open.hlog {
            s.hlog = Some(hlog::IntervalLog::create(path, s.epoch_us)?);
        }
        if s.comparing {
            report::write_compare_header(s.csv, &backend_names(cfg), s.width, &mut s.out)
                .map_err(|e| e.to_string())?;
        } else if s.csv {
            let extra = if open_loop { report::CSV_OPEN_LOOP_COLUMNS } else { "" };
            let sweep = if cfg.sweep.is_sweep() { report::CSV_SWEEP_COLUMNS } else { "" };
            writeln!(s.out, "{}{extra}{sweep}", report::CSV_HEADER).map_err(|e| e.to_string())?;
        }
        Ok(s)
    }

    /// Runs every case (forever with `-l`) until one stops the run.
    fn run_suite(&mut self, cases: &[Case]) -> Ended {
        loop {
            for (i, case) in cases.iter().enumerate() {
                match self.run_case(i as u64, case) {
                    Ok(None) => {}
                    Ok(Some(code)) => return Ended::Code(code),
                    Err(e) => return Ended::Failed(e),
                }
            }
            if !self.cfg.repeat {
                return Ended::Code(ExitCode::SUCCESS);
            }
        }
    }

    /// Runs one case: each rate step on each backend, printing as it goes. `Some(code)` when the
    /// run must stop here (failed connections, Ctrl-C).
    fn run_case(&mut self, test_no: u64, case: &Case) -> Result<Option<ExitCode>, String> {
        let base = self.base;
        if !base.sweep.is_sweep() {
            return self.run_rates(test_no, case);
        }
        // A sweep: every combination in turn, then one table of them all.
        let mut rows = Vec::new();
        let mut stop = None;
        // Steps go -c value by -c value, each over every -P, --threads and run.
        let s = &base.sweep;
        let per_clients = s.pipelines.len() * s.threads.len() * s.repeat.max(1);
        for (k, step) in base.sweep.steps().into_iter().enumerate() {
            // A worker's entries name the whole run's -c, as its other workers' do, so they merge.
            self.step_clients = base.split.as_ref().map(|w| w.clients[k / per_clients % w.clients.len()]);
            let cfg = base.at(&step);
            // The default suite's values are in its templates: made again at each -d.
            let rebuilt;
            let case = if base.sweep.datasizes.len() > 1 && base.command.is_empty() {
                rebuilt = cases(&cfg)?.into_iter().nth(test_no as usize).ok_or("a sweep lost a test")?;
                &rebuilt
            } else {
                case
            };
            self.cfg = Arc::new(cfg);
            self.step = Some(step);
            let done_before = self.rows.len();
            stop = self.run_rates(test_no, case)?;
            rows.extend(self.rows.drain(done_before..));
            if stop.is_some() {
                break;
            }
        }
        if !self.csv && !self.comparing {
            report::write_sweep_table(&rows, &mut self.out).map_err(|e| e.to_string())?;
        }
        self.cfg = Arc::new(base.clone());
        self.step = None;
        Ok(stop)
    }

    /// Runs one case at the current step: each rate step on each backend, printing as it goes.
    fn run_rates(&mut self, test_no: u64, case: &Case) -> Result<Option<ExitCode>, String> {
        let steps: Vec<Option<u64>> =
            if self.open_loop { self.cfg.open.rates.iter().copied().map(Some).collect() } else { vec![None] };
        // One row per step for the throughput-latency table.
        let mut table: Vec<TestResult> = Vec::new();
        let mut stop = None;
        if self.cfg.preload {
            // Once per test and value size: a sweep's other parameters leave the keys as they are.
            let done = self.preloaded.as_ref().is_some_and(|(t, v)| *t == test_no && *v == self.cfg.values);
            if let Some(fill) = preload_case(&self.cfg, case).filter(|_| !done) {
                self.preload(test_no, &fill)?;
                self.preloaded = Some((test_no, self.cfg.values.clone()));
            }
        }
        if let Some(at) = self.start_at.take() {
            if let Some(code) = self.wait_for_start(&at) {
                return Ok(Some(code));
            }
        }
        for rate in steps {
            let ran = self.run_step(test_no, case, rate)?;
            self.print_step(case, &ran).map_err(|e| e.to_string())?;
            self.report_failures(&ran);
            let failed = ran.iter().any(|(_, f)| !f.is_empty());
            if !self.comparing {
                table.extend(ran.into_iter().flat_map(|(entries, _)| entries));
            }
            if failed {
                stop = Some(ExitCode::from(1));
            } else if interrupted() {
                stop = Some(ExitCode::from(EXIT_INTERRUPTED));
            }
            if stop.is_some() {
                break;
            }
        }
        if self.open_loop && !self.comparing && !self.csv {
            report::write_rate_table(&table, self.cfg.open.poisson, &mut self.out)
                .map_err(|e| e.to_string())?;
        }
        Ok(stop)
    }

    /// Runs one step of a case on each backend in turn (stopping at the first that failed or
    /// was interrupted): its entries and connection failures per backend.
    fn run_step(&mut self, test_no: u64, case: &Case, rate: Option<u64>) -> Result<Vec<Ran>, String> {
        let cfg = Arc::clone(&self.cfg);
        let mut ran = Vec::new();
        for &backend in &cfg.backends {
            // The test's name, as in the JSON; what tells steps and backends apart, when
            // there are several.
            let mut tag = case.spec.title.clone();
            if let Some(r) = rate.filter(|_| cfg.open.rates.len() > 1) {
                tag += &format!(" @ {r} rps");
            }
            if self.comparing {
                tag += &format!(" ({})", backend.name());
            }
            let hlog = self.hlog.as_mut().map(|l| (l, tag.as_str()));
            let before = self.probe.read();
            let (outcome, cpu, (machine, waited), nodes) =
                run_test(&cfg, backend, case, test_no, rate, self.epoch, hlog)?;
            let server_cpu = self.probe.since(before);
            if !outcome.drops.is_empty() {
                // --reconnect: the test went on; the run's status will say it had errors.
                self.dropped = true;
                let on = if self.comparing { format!(" ({})", backend.name()) } else { String::new() };
                let s = &outcome.stats;
                let title = &case.spec.title;
                eprintln!(
                    "{title}{on}: connections went down {} times and reconnected (--reconnect): {} requests \
                     lost, {:.3} s down in all",
                    s.drops,
                    s.lost,
                    s.downtime_micros as f64 / 1e6
                );
                for (e, n) in &outcome.drops {
                    eprintln!("{title}{on}:   {n} × {e}");
                }
            }
            if outcome.stats.abandoned > 0 {
                let on = if self.comparing { format!(" ({})", backend.name()) } else { String::new() };
                eprintln!(
                    "{}{on}: {} requests were still unanswered {} after the stop and were abandoned",
                    case.spec.title,
                    outcome.stats.abandoned,
                    respbench_core::conn::format_duration(cfg.drain_grace)
                );
            }
            let mut entries = case.entries(backend, cpu, rate, outcome.stats);
            for e in &mut entries {
                e.step = self.step.as_ref().map(StepValues::of);
                if let (Some(step), Some(c)) = (&mut e.step, self.step_clients) {
                    step.clients = c as u64;
                }
            }
            if let Some(total) = entries.last_mut() {
                total.nodes = nodes;
                let in_flight = cfg.clients as u64 * u64::from(cfg.pipeline);
                let missing = self.probe.missing.as_deref();
                total.verdict = Some(verdict::verdict(
                    Some(&cpu),
                    server_cpu.as_ref(),
                    missing,
                    machine,
                    waited,
                    in_flight,
                ));
                total.server_cpu = server_cpu;
            }
            let preloadable = preload_case(&cfg, case).is_some();
            report_cost_and_rate(&cfg, &entries[entries.len() - 1], backend, self.comparing, preloadable);
            if self.step.is_some() {
                self.rows.push(entries[entries.len() - 1].clone());
            }
            if cfg.json.is_some() {
                for e in &entries {
                    self.done.push(json::test(e, self.epoch_us)?);
                }
            }
            let stop = !outcome.failures.is_empty() || interrupted();
            ran.push((entries, outcome.failures));
            if stop {
                break;
            }
        }
        Ok(ran)
    }

    /// `--start-at`: sleeps until the instant less the warmup, so that the first measured window
    /// begins at it; says on stderr when that had passed already, and records by how much.
    /// `Some(code)` when Ctrl-C came first.
    fn wait_for_start(&mut self, at: &respbench_session::workers::StartAt) -> Option<ExitCode> {
        let target = at.time().checked_sub(self.cfg.open.warmup).unwrap_or(SystemTime::UNIX_EPOCH);
        let now = SystemTime::now();
        match now.duration_since(target) {
            Ok(late) => {
                self.late_by_s = Some(late.as_secs_f64());
                let before = if self.cfg.open.warmup.is_zero() { "" } else { " less the --warmup" };
                eprintln!(
                    "WARNING: --start-at {}: this process was ready {:.3} s after the instant{before} had \
                     passed, so its measured window begins late (late_by_s in the JSON)",
                    at.text,
                    late.as_secs_f64()
                );
            }
            Err(_) => {
                self.late_by_s = Some(0.0);
                // In short sleeps, so that Ctrl-C is heard.
                while let Ok(left) = target.duration_since(SystemTime::now()) {
                    if interrupted() {
                        return Some(ExitCode::from(EXIT_INTERRUPTED));
                    }
                    std::thread::sleep(left.min(Duration::from_millis(100)));
                }
            }
        }
        None
    }

    /// `--preload`: runs `fill` (SET over the whole keyspace, sequential keys, pipelined) on
    /// the first backend, unmeasured, and says on stderr what it wrote.
    fn preload(&mut self, test_no: u64, fill: &Case) -> Result<(), String> {
        let cfg = Arc::clone(&self.cfg);
        // A worker writes its own part of the keyspace.
        let keys = match cfg.split.as_ref().and_then(|s| s.keys) {
            Some((_, n)) => n,
            None => cfg.keyspace.unwrap_or(1),
        };
        let mut fill_cfg = (*cfg).clone();
        fill_cfg.requests = keys;
        fill_cfg.key_dist = respbench_core::dist::KeyDist::Sequential;
        fill_cfg.pipeline = cfg.pipeline.max(PRELOAD_PIPELINE);
        fill_cfg.open = opts::OpenLoopConfig::default();
        let began = Instant::now();
        let (outcome, _, _, _) = run_test(&fill_cfg, cfg.backends[0], fill, test_no, None, self.epoch, None)?;
        let s = &outcome.stats;
        if let Some((e, n)) = outcome.failures.first() {
            return Err(format!("--preload: {n} connection(s) failed: {e}"));
        }
        if s.errors.total() > 0 {
            let first = &s.errors.kinds()[0].first_message;
            eprintln!("WARNING: --preload: {} of {keys} writes failed: {first}", s.errors.total());
        }
        eprintln!(
            "preloaded {} keys ({}, {} in flight per connection) in {:.2} s, not measured",
            s.requests,
            fill.spec.title,
            fill_cfg.pipeline,
            began.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// Prints a step: side by side, or each entry in the chosen format.
    fn print_step(&mut self, case: &Case, ran: &[Ran]) -> io::Result<()> {
        if self.comparing {
            let mut rows: Vec<Vec<&TestResult>> = Vec::new();
            for (entries, _) in ran {
                for (k, e) in entries.iter().enumerate() {
                    if rows.len() <= k {
                        rows.push(Vec::new());
                    }
                    rows[k].push(e);
                }
            }
            for row in rows {
                report::write_compare_row(self.csv, &row, self.width, &mut self.out)?;
            }
        } else if let Some((entries, _)) = ran.first() {
            for e in entries {
                if !(self.open_loop && self.cfg.output == Output::Quiet) {
                    let label = self.step.as_ref().map(|s| self.base.sweep.label(s));
                    print_test(&self.cfg, case, &self.info, e, label.as_deref(), &mut self.out)?;
                } else if self.cfg.open.show_series {
                    // -q in open loop: the rate table stands for the quiet lines; --series still
                    // asked for each step's seconds.
                    writeln!(self.out, "{} @ {} rps:", e.name, e.target_rps.unwrap_or(0))?;
                    report::write_series(&e.stats, &mut self.out)?;
                }
            }
        }
        Ok(())
    }

    /// Says on stderr how many connections failed, and why.
    fn report_failures(&self, ran: &[Ran]) {
        for (entries, failures) in ran {
            let last = &entries[entries.len() - 1];
            for (e, n) in failures {
                let plural = if *n == 1 { "" } else { "s" };
                let on = if self.comparing {
                    format!(" ({})", last.backend.as_deref().unwrap_or(""))
                } else {
                    String::new()
                };
                eprintln!("{}{on}: {n} connection{plural} failed: {e}", last.name);
            }
        }
    }

    /// Closes the output and writes the JSON document.
    fn finish(mut self, ended: Ended) -> Result<ExitCode, String> {
        if self.comparing && !self.csv {
            let _ = report::write_compare_footer(&mut self.out);
        }
        if self.cfg.output == Output::Quiet && !self.comparing && !self.open_loop {
            let _ = writeln!(self.out);
        }
        let _ = self.out.flush();
        let interrupted = !matches!(&ended, Ended::Code(c) if *c == ExitCode::SUCCESS);
        if let Some(path) = &self.cfg.json {
            let mut doc =
                json::document(json::config(self.base), json::server(&self.info), interrupted, self.done);
            if let Some(late) = self.late_by_s {
                doc["late_by_s"] = late.into();
            }
            json::write_json(path, &doc)?;
        }
        match ended {
            Ended::Code(code) if code == ExitCode::SUCCESS && self.dropped => Ok(ExitCode::from(1)),
            Ended::Code(code) => Ok(code),
            Ended::Failed(e) => Err(e),
        }
    }
}

/// What one backend reported for one step: its entries, and its connection failures.
type Ran = (Vec<TestResult>, Vec<(respbench_core::ConnError, u64)>);

/// Warns on stderr when the client was saturated or an open-loop target was not reached.
/// `preloadable`: `--preload` would write what the test reads (a GET).
fn report_cost_and_rate(
    cfg: &Config,
    total: &TestResult,
    backend: Backend,
    comparing: bool,
    preloadable: bool,
) {
    let on = if comparing { format!(" ({})", backend.name()) } else { String::new() };
    // The verdict is in the verbose report and the JSON; stderr only hears when the figures
    // measure respbench.
    if let Some(v) = total.verdict.as_ref().filter(|v| v.side == verdict::Side::Client) {
        eprintln!("WARNING: {}{on}: {}", total.name, v.text);
    }
    let s = &total.stats;
    if s.requests > 0 && s.hit_share() < 0.5 {
        eprintln!(
            "WARNING: {}{on}: {:.1}% of the replies were nil: what it read did not exist, so this \
             measured misses{}",
            total.name,
            (1.0 - s.hit_share()) * 100.0,
            if preloadable && !cfg.preload { " (--preload writes the keys first)" } else { "" }
        );
    }
    if let Some(target) = total.target_rps {
        let achieved = total.stats.rps();
        if total.stats.requests > 0 && achieved < 0.95 * target as f64 {
            let window = cfg.clients as u64 * u64::from(cfg.pipeline);
            eprintln!(
                "WARNING: {}{on}: target {target} rps not met, achieved {achieved:.0} rps: at most {window} \
                 requests can be in flight (-c {} × -P {}); more connections or a deeper pipeline may help{}",
                total.name,
                cfg.clients,
                cfg.pipeline,
                if total.cpu.is_some_and(|c| c.saturated()) { ", and the client is saturated" } else { "" }
            );
        }
    }
}

fn json_on_stdout(cfg: &Config) -> bool {
    cfg.json.as_deref() == Some("-")
}

/// Microseconds since the Unix epoch (0 for a clock set before it).
fn unix_micros(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// One test of the run: a request (or a mix of them) and how it is titled.
struct Case {
    spec: TestSpec,
    /// A mix: its commands, their titles and the text of the mix.
    mix: Option<(Mix, Vec<String>)>,
}

impl Case {
    /// The templates its requests are made from: the test's, or each command of its mix.
    fn templates(&self) -> Vec<&Template> {
        match &self.mix {
            Some((m, _)) => m.templates().iter().collect(),
            None => vec![&self.spec.template],
        }
    }

    /// Every title this case reports under.
    fn titles(&self) -> Vec<&str> {
        let mut t: Vec<&str> =
            self.mix.iter().flat_map(|(_, titles)| titles.iter().map(String::as_str)).collect();
        t.push(&self.spec.title);
        t
    }

    /// The entries a run of this case reports: each command of a mix on its own, then the total.
    fn entries(
        &self,
        backend: Backend,
        cpu: cpu::ClientCpu,
        rate: Option<u64>,
        mut stats: Stats,
    ) -> Vec<TestResult> {
        let mut out = Vec::new();
        if let Some((mix, titles)) = &self.mix {
            for ((part, title), template) in stats.parts.drain(..).zip(titles).zip(mix.templates()) {
                out.push(TestResult {
                    name: title.clone(),
                    command: command_text(&template.display()),
                    backend: Some(backend.name().to_string()),
                    cpu: None,
                    target_rps: None,
                    server_cpu: None,
                    verdict: None,
                    step: None,
                    stats: part,
                    nodes: Vec::new(),
                });
            }
        }
        out.push(TestResult {
            name: self.spec.title.clone(),
            command: command_text(&self.spec.template.display()),
            backend: Some(backend.name().to_string()),
            cpu: Some(cpu),
            target_rps: rate,
            server_cpu: None,
            verdict: None,
            step: None,
            stats,
            nodes: Vec::new(),
        });
        out
    }
}

/// What else ran on the client machine during a test: the share of all its CPUs that was busy,
/// and the share of the test respbench's loops waited for a CPU.
type Contention = (Option<f64>, Option<f64>);

/// How often the loops' run delay is read while a test runs: the last reading before the end
/// stands for the test (their threads end with it, and their counts with them).
const WAIT_READ_EVERY: Duration = Duration::from_millis(100);

/// Whether the server runs on this machine: a Unix socket, or a loopback address.
fn is_local(endpoint: &respbench_core::Endpoint) -> bool {
    match endpoint {
        respbench_core::Endpoint::Unix(_) => true,
        respbench_core::Endpoint::Tcp { host, .. } => {
            host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
        }
    }
}

/// How many writes `--preload` keeps in flight per connection (more when `-P` says so).
const PRELOAD_PIPELINE: u32 = 64;

/// What `--preload` writes before `case`: SET of the key pattern a `GET` reads, with the `-d`
/// values, for the suite's GET, a custom `GET key`, or a mix holding one; `None` for a test
/// that reads no string key.
fn preload_case(cfg: &Config, case: &Case) -> Option<Case> {
    let spec = match &case.mix {
        Some((mix, _)) => mix.templates().iter().find_map(|t| respbench_core::suite::preload(t, &cfg.values)),
        None => respbench_core::suite::preload(&case.spec.template, &cfg.values),
    }?;
    Some(Case { spec, mix: None })
}

/// The tests to run: a mix, the custom command, or the default suite restricted by `-t`.
fn cases(cfg: &Config) -> Result<Vec<Case>, String> {
    if cfg.open.has_mix() {
        return Ok(vec![mix_case(cfg)?]);
    }
    Ok(tests(cfg)?.into_iter().map(|spec| Case { spec, mix: None }).collect())
}

/// `--mix set:1,get:10 --mix-command '2 HSET h f v'`: one case whose requests are drawn by weight.
fn mix_case(cfg: &Config) -> Result<Case, String> {
    let mut parts = Vec::new();
    let mut described = Vec::new();
    for (name, weight) in &cfg.open.mix {
        let selection = Selection::parse(name).map_err(|unknown| {
            format!(
                "invalid value for --mix: unknown test {}; the tests are: {}",
                unknown.join(", "),
                respbench_core::suite::TEST_NAMES.join(",")
            )
        })?;
        // A name that selects several tests (ping, lrange) stands for the last: the one it names.
        let spec = suite(cfg, &selection)
            .pop()
            .ok_or_else(|| format!("invalid value for --mix: {name} selects no test"))?;
        parts.push((spec, *weight));
        described.push(format!("{name}:{weight}"));
    }
    for (args, weight) in &cfg.open.mix_commands {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        let spec = custom(&args);
        described.push(format!("'{}':{weight}", spec.title));
        parts.push((spec, *weight));
    }
    let total: u64 = parts.iter().map(|(_, w)| w).sum();
    let titles = parts.iter().map(|(s, w)| format!("{} (mix {w}/{total})", s.title)).collect();
    let payload_bytes = parts.iter().map(|(s, _)| s.payload_bytes).max().unwrap_or(0);
    let first = parts[0].0.template.clone();
    let mix = Mix::new(parts.into_iter().map(|(s, w)| (s.template, w)).collect())?;
    let spec = TestSpec {
        title: format!("MIX ({})", described.join(",")),
        template: first,
        payload_bytes,
        connection_per_request: false,
    };
    Ok(Case { spec, mix: Some((mix, titles)) })
}

/// The tests to run: the custom command, or the default suite restricted by `-t`.
fn tests(cfg: &Config) -> Result<Vec<TestSpec>, String> {
    if !cfg.command.is_empty() {
        if cfg.tests.is_some() {
            eprintln!("WARNING: Option -t is ignored.");
        }
        let mut args: Vec<Vec<u8>> = cfg.command.iter().map(|a| a.as_bytes().to_vec()).collect();
        if cfg.stdin_arg {
            let mut last = Vec::new();
            io::stdin().read_to_end(&mut last).map_err(|e| format!("-x: cannot read standard input: {e}"))?;
            args.push(last);
        }
        return Ok(vec![custom(&args)]);
    }
    let selection = match &cfg.tests {
        Some(list) => Selection::parse(list).map_err(|unknown| {
            format!(
                "invalid value '{list}' for -t: unknown test {}; the tests are: {}",
                unknown.join(", "),
                respbench_core::suite::TEST_NAMES.join(",")
            )
        })?,
        None => Selection::all(),
    };
    Ok(suite(cfg, &selection))
}

/// The default suite restricted to `selection`; in cluster mode MSET's keys share a hash tag.
fn suite(cfg: &Config, selection: &Selection) -> Vec<TestSpec> {
    let mut specs = default_suite(selection, &cfg.values, cfg.keyspace.is_some(), &cfg.key_prefix);
    if cfg.cluster {
        for s in specs.iter_mut().filter(|s| s.title.starts_with("MSET")) {
            *s = respbench_core::suite::cluster_mset(&cfg.values, &cfg.key_prefix);
        }
    }
    specs
}

/// What every connection of one test (one step) does.
fn plan(
    cfg: &Config,
    case: &Case,
    test_no: u64,
    idle: bool,
    rate: Option<u64>,
    measure_from: Time,
    stop_at: Option<Time>,
) -> Arc<Plan> {
    let keys = match cfg.keyspace {
        None => KeySpace::Literal,
        // A worker's sequential keys go over its own part of the keyspace.
        Some(_) if cfg.key_dist == respbench_core::dist::KeyDist::Sequential && cfg.split.is_some() => {
            let (first, n) = cfg.split.as_ref().and_then(|s| s.keys).unwrap_or_default();
            KeySpace::sequential_range(first, n)
        }
        // Options::check refused a keyspace the distribution cannot take.
        Some(n) => cfg.key_dist.space(n).unwrap_or(KeySpace::Random { n }),
    };
    // The core shares the total rate evenly over the connections.
    let open_loop = rate.map(|r| OpenLoop { rate: r as f64, poisson: cfg.open.poisson });
    let budget =
        if idle || cfg.open.duration.is_some() { Budget::unlimited() } else { Budget::new(cfg.requests) };
    Arc::new(Plan {
        conn: ConnConfig {
            handshake: handshake(cfg),
            // The connect test: one request per connection.
            pipeline: if case.spec.connection_per_request { 1 } else { cfg.pipeline },
            keepalive: cfg.keepalive && !case.spec.connection_per_request,
            idle,
            open_loop,
            request_timeout: cfg.timeout,
            reconnect: cfg.reconnect.then_some(Backoff { first: RECONNECT_FIRST, max: RECONNECT_MAX }),
        },
        workload: Workload {
            template: case.spec.template.clone(),
            keys,
            mix: case.mix.as_ref().map(|(m, _)| m.clone()),
        },
        budget,
        stop: Stop::new(stop_at, cfg.drain_grace),
        // Each test its own streams, all reproducible from --seed.
        seed: cfg.seed.wrapping_add(test_no.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        connections: cfg.clients as u64,
        measure_from,
        series: !idle && cfg.open.keeps_series(),
        cluster: cfg.multi.as_ref().and_then(|m| m.cluster(cfg, &case.templates(), &handshake(cfg))),
    })
}

fn backend_names(cfg: &Config) -> Vec<&'static str> {
    cfg.backends.iter().map(|b| b.name()).collect()
}

/// Runs one test on `backend` while this thread draws the progress line and watches for
/// Ctrl-C; measures the process's CPU meanwhile.
fn run_test(
    cfg: &Config,
    backend: Backend,
    case: &Case,
    test_no: u64,
    rate: Option<u64>,
    epoch: Instant,
    mut hlog: Option<(&mut hlog::IntervalLog, &str)>,
) -> Result<(Outcome, cpu::ClientCpu, Contention, Vec<NodeInfo>), String> {
    let begin = Instant::now();
    let warmup = cfg.open.warmup;
    let measure_from = if warmup.is_zero() { Time::ZERO } else { Time::since(epoch, begin + warmup) };
    // A time-based run stops handing out requests at its end; in-flight ones drain (the core's
    // run control).
    let stop_at = cfg.open.duration.map(|d| Time::since(epoch, begin + warmup + d));
    let spec = &case.spec;
    let run = TestRun {
        plan: plan(cfg, case, test_no, false, rate, measure_from, stop_at),
        endpoint: cfg.endpoint.clone(),
        clients: cfg.clients,
        threads: cfg.threads.max(1),
        sigfig: cfg.precision,
        progress: Arc::new(Progress::default()),
    };
    if hlog.is_some() {
        run.progress.collector().keep_ended();
    }
    // Writes the seconds every loop has moved past to the interval log; `end` once the test is
    // over, to cut its last second short.
    let mut log_ended = |end: Option<Time>| -> Result<(), String> {
        if let Some((log, tag)) = &mut hlog {
            let ended = run.progress.collector().take_ended();
            for (start, s) in &ended {
                log.write(tag, *start, end, s)?;
            }
            if end.is_some() {
                log.flush()?;
            }
        }
        Ok(())
    };
    // The live view replaces the progress line.
    let show_progress =
        cfg.output != Output::Csv && !json_on_stdout(cfg) && io::stdout().is_terminal() && !cfg.open.live;
    let mut live_printed = 0usize;
    let started = Instant::now();
    // The client's cost counts from the end of the warmup, like the requests it is divided by.
    let mut cpu_before = cpu::process_cpu();
    let mut machine_before = cpu::machine_ticks();
    // The loops' time waiting for a CPU: read while they run (a thread's count goes with it).
    let mut wait_before = cpu::run_delay_ns("self");
    let mut wait_last = wait_before;
    let mut wait_read = Instant::now();
    let mut cpu_from = started;
    let mut warm = warmup.is_zero();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let run = &run;
        s.spawn(move || {
            let _ = tx.send(run_backend(backend, run, cfg.tls.as_ref(), epoch));
        });
        let mut last_draw = Instant::now();
        let (mut last_done, mut last_sum) = (0u64, 0u64);
        let mut stop_asked = false;
        let mut drawn = 0usize;
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(result) => {
                    let cpu = cpu::ClientCpu::between(
                        cpu_before,
                        cpu::process_cpu(),
                        cpu_from.elapsed(),
                        run.loops(),
                    );
                    if drawn > 0 {
                        print!("{}", report::clear_progress(drawn));
                    }
                    let machine = cpu::machine_busy(machine_before, cpu::machine_ticks());
                    let waited = wait_before.zip(wait_last).map(|(a, b)| {
                        let capacity = cpu.wall_s * run.loops() as f64;
                        if capacity > 0.0 {
                            b.saturating_sub(a) as f64 / 1e9 / capacity
                        } else {
                            0.0
                        }
                    });
                    let mut o = result?;
                    log_ended(Some(o.stats.end))?;
                    // Over several nodes: the nodes as the test ended, without the room kept
                    // for nodes that never appeared.
                    let nodes = match (&run.plan.cluster, cfg.multi.as_deref()) {
                        (Some(c), Some(m)) => {
                            o.stats.nodes.truncate(c.nodes.len() + o.stats.appeared.len());
                            NodeInfo::at_end(c, m, &o.stats)
                        }
                        _ => Vec::new(),
                    };
                    return Ok((o, cpu, (machine, waited), nodes));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err("the event loops stopped".into()),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            // A file that cannot be written ends the run like a failed test, keeping its results.
            log_ended(None)?;
            if wait_read.elapsed() >= WAIT_READ_EVERY {
                wait_read = Instant::now();
                wait_last = cpu::run_delay_ns("self").or(wait_last);
            }
            if !warm && Instant::now() >= begin + warmup {
                warm = true;
                cpu_before = cpu::process_cpu();
                machine_before = cpu::machine_ticks();
                wait_before = cpu::run_delay_ns("self");
                cpu_from = Instant::now();
            }
            if !stop_asked && interrupted() {
                // Ctrl-C: the core stops handing out requests and abandons what is still
                // unanswered after the grace.
                run.plan.stop.request(Time::since(epoch, Instant::now()));
                stop_asked = true;
            }
            if cfg.open.live {
                // A second is summarised once every loop has moved past it (they publish every
                // 50 ms); seconds count from the end of the warmup, like the series. Only whole
                // seconds: the one the test ends in closes with the loops and is partial.
                let whole = Instant::now().saturating_duration_since(begin + warmup).as_secs() as usize;
                let series = run.progress.collector();
                while let Some(s) = series.seconds.get(live_printed).filter(|_| live_printed < whole) {
                    eprintln!("{}", report::live_line(&spec.title, live_printed, s));
                    live_printed += 1;
                }
            }
            if show_progress && last_draw.elapsed() >= PROGRESS_EVERY {
                let dt = last_draw.elapsed().as_secs_f64();
                last_draw = Instant::now();
                let done = run.progress.completed.load(Ordering::Relaxed);
                let sum = run.progress.latency_sum_micros.load(Ordering::Relaxed);
                let avg = |s: u64, n: u64| if n == 0 { 0.0 } else { s as f64 / n as f64 / 1000.0 };
                let line = report::progress_line(
                    &spec.title,
                    (done - last_done) as f64 / dt,
                    done as f64 / started.elapsed().as_secs_f64(),
                    avg(sum - last_sum, done - last_done),
                    avg(sum, done),
                );
                print!("{}{line}", report::clear_progress(drawn));
                drawn = line.len();
                let _ = io::stdout().flush();
                (last_done, last_sum) = (done, sum);
            }
        }
    })
}

fn run_backend(
    backend: Backend,
    run: &TestRun,
    tls: Option<&respbench_driver::Tls>,
    epoch: Instant,
) -> Result<Outcome, String> {
    match backend {
        Backend::Mio => respbench_mio::run_test(run, tls, epoch),
        Backend::Smol => respbench_smol::run_test(run, tls, epoch),
        #[cfg(all(feature = "uring", target_os = "linux"))]
        Backend::Uring => match URING.get() {
            Some(uring) => respbench_uring::run_test(run, tls, uring, epoch),
            None => return Err("io_uring was not checked before the run".into()),
        },
        #[cfg(not(all(feature = "uring", target_os = "linux")))]
        Backend::Uring => return Err(no_uring()),
    }
    .map_err(|e| e.to_string())
}

/// The io_uring backend as this kernel offers it, found once before the first test.
#[cfg(all(feature = "uring", target_os = "linux"))]
static URING: std::sync::OnceLock<respbench_uring::Uring> = std::sync::OnceLock::new();

/// With `--backend uring`: whether io_uring works here, checked before the run, so that a kernel
/// or a container that refuses it ends the run with a message and status 1.
fn check_uring(cfg: &Config) -> Result<(), String> {
    if !cfg.backends.contains(&Backend::Uring) {
        return Ok(());
    }
    #[cfg(all(feature = "uring", target_os = "linux"))]
    {
        let opts = respbench_uring::Options {
            sqpoll: cfg.uring_sqpoll,
            // The fallback of kernels without multishot receive, testable on one that has it.
            single_shot: std::env::var_os("RESPBENCH_URING_SINGLE_SHOT").is_some_and(|v| v == "1"),
        };
        let uring = respbench_uring::check(&opts).map_err(|e| e.to_string())?;
        let _ = URING.set(uring);
        Ok(())
    }
    #[cfg(not(all(feature = "uring", target_os = "linux")))]
    Err(no_uring())
}

#[cfg(not(all(feature = "uring", target_os = "linux")))]
fn no_uring() -> String {
    let why = if cfg!(target_os = "linux") {
        "this respbench was built without the `uring` feature"
    } else {
        "io_uring is Linux's, and this is not Linux"
    };
    format!("io_uring is not available here: {why}; use --backend mio")
}

/// The verbose report's line about how the backend works, where it has one to say.
fn backend_note(entry: &TestResult) -> Option<String> {
    #[cfg(all(feature = "uring", target_os = "linux"))]
    if entry.backend.as_deref() == Some("uring") {
        return URING.get().map(|u| u.describe());
    }
    let _ = entry;
    None
}

/// Prints one entry in the chosen format; `label` names a sweep's step (`-d 128 -c 100`).
fn print_test(
    cfg: &Config,
    case: &Case,
    info: &ServerInfo,
    entry: &TestResult,
    label: Option<&str>,
    out: &mut impl Write,
) -> io::Result<()> {
    let spec = &case.spec;
    // CSV has the step in columns of its own.
    let title = match label.filter(|_| cfg.output != Output::Csv) {
        Some(l) => format!("{} ({l})", entry.name),
        None => entry.name.clone(),
    };
    let r = TestReport {
        title: &title,
        stats: &entry.stats,
        cpu: entry.cpu.as_ref(),
        verdict: entry.verdict.as_ref(),
        clients: cfg.clients,
        payload_bytes: spec.payload_bytes,
        workload: report::workload_lines(&cfg.values, cfg.key_dist, cfg.keyspace, &cfg.key_prefix),
        keepalive: cfg.keepalive && !spec.connection_per_request,
        threads: cfg.threads,
        server_save: info.save.as_deref(),
        server_appendonly: info.appendonly.as_deref(),
        backend_note: backend_note(entry),
        nodes: &entry.nodes,
    };
    match cfg.output {
        Output::Verbose => {
            report::write_verbose(&r, out)?;
            report::write_open_loop(entry, cfg.open.poisson, out)?;
            report::write_errors(&r, false, out)?;
            if cfg.open.show_series {
                report::write_series(&entry.stats, out)?;
            }
            writeln!(out)?;
        }
        Output::Quiet => {
            report::write_quiet(&r, out)?;
            report::write_errors(&r, true, out)?;
            if cfg.open.show_series {
                report::write_series(&entry.stats, out)?;
            }
        }
        Output::Csv => {
            // Every row of an open-loop run has the extra columns, a mix's commands too.
            report::write_csv_row(
                &r,
                (!cfg.open.rates.is_empty()).then_some(entry),
                entry.step.as_ref(),
                out,
            )?;
            // stdout carries CSV only.
            report::write_errors(&r, true, &mut io::stderr())?;
        }
    }
    if cfg.show_errors {
        for k in entry.stats.errors.kinds() {
            eprintln!("Error from server: {}", k.first_message);
        }
    }
    out.flush()
}

/// `-I`: open the connections, show how many are up and what they cost the server, wait for
/// Ctrl-C.
fn idle(cfg: &Config) -> Result<ExitCode, String> {
    println!("Creating {} idle connections and waiting forever (Ctrl+C when done)", cfg.clients);
    let mut before = server::Footprint::read(&mut server::Conn::authenticated(cfg).map_err(|e| e.0)?)
        .map_err(|e| eprintln!("WARNING: Could not read the server's INFO ({e}): no figures per connection"))
        .ok();
    let case = Case { spec: custom(&[b"PING".to_vec()]), mix: None };
    let run = TestRun {
        plan: plan(cfg, &case, 0, true, None, Time::ZERO, None),
        endpoint: cfg.endpoint.clone(),
        clients: cfg.clients,
        threads: cfg.threads.max(1),
        sigfig: cfg.precision,
        progress: Arc::new(Progress::default()),
    };
    let (tx, rx) = mpsc::channel();
    let epoch = Instant::now();
    let result = std::thread::scope(|s| {
        let run = &run;
        s.spawn(move || {
            let _ = tx.send(run_backend(cfg.backends[0], run, cfg.tls.as_ref(), epoch));
        });
        loop {
            match rx.recv_timeout(PROGRESS_EVERY) {
                Ok(r) => return r,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err("the event loops stopped".into()),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let live = run.progress.live.load(Ordering::Relaxed);
            print!("clients: {live}\r");
            let _ = io::stdout().flush();
            if live == cfg.clients as u64 {
                if let Some(before) = before.take() {
                    println!();
                    println!("{}", server::idle_footprint(cfg, before));
                }
            }
            if interrupted() {
                run.plan.stop.request(Time::since(epoch, Instant::now()));
            }
        }
    });
    println!();
    let outcome = result?;
    for (msg, n) in &outcome.failures {
        let plural = if *n == 1 { "" } else { "s" };
        eprintln!("{n} connection{plural} failed: {msg}");
    }
    Ok(if !outcome.failures.is_empty() {
        ExitCode::from(1)
    } else if interrupted() {
        ExitCode::from(EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}
