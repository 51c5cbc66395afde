//! The outputs of a run: the list of sinks ([`crate::sink`]) the options ask for, built once,
//! and the session's [`Observer`], which hands each event to every sink in the list. A sink
//! that fails leaves the list (the others go on) and is said at the end, with status 1.

use std::io::{self, IsTerminal};

use respbench_core::stats::{Interval, Second};
use respbench_core::Time;
use respbench_session::case::Case;
use respbench_session::config::{Config, Output as Format};
use respbench_session::observer::{LiveTest, StepDone, Tick};
use respbench_session::result::TestResult;
use respbench_session::routing::Multi;
use respbench_session::{Error, Observer, Session, StopHandle};

use crate::error::Error as OutputError;
use crate::sink::{self, Begin, Event, Output, RunEnd, Shape, Step, Wants};
use crate::{convert, files};

/// The width of the terminal on stderr (`TIOCGWINSZ`), when it says.
fn stderr_columns() -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes a winsize into the struct given, and nothing else.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col as usize)
}

/// Whether the files the run will write (`--json`, `--hgrm`, `--hlog`) can be written where
/// they are named, found out before connecting ([`files::probe_writable`]: a directory there is
/// refused; a temporary file is created and removed beside a new path or a regular file; a FIFO
/// is only `stat`ed). `--hlog` is opened when the run begins; a symlink at its path is refused
/// here ([`files::check_unfollowed`]).
pub fn check_outputs(cfg: &Config) -> Result<(), OutputError> {
    if let Some(path) = cfg.json.as_deref().filter(|p| *p != "-") {
        files::probe_writable(std::path::Path::new(path))
            .map_err(|e| OutputError::Output(format!("--json: cannot write {path}: {e}")))?;
    }
    if let Some(path) = &cfg.open.hlog {
        let target = std::path::Path::new(path);
        files::check_unfollowed(target)
            .and_then(|how| files::probe(target, how))
            .map_err(|e| OutputError::Output(format!("--hlog {path}: cannot create it: {e}")))?;
    }
    if let Some(path) = cfg.retry.as_ref().and_then(|r| r.failed_keys.as_deref()) {
        sink::failed_keys::check(path)?;
    }
    if let Some(m) = &cfg.memtier {
        crate::memtier::check_outputs(m)?;
    }
    sink::statsd::check(cfg)?;
    if let Some(prefix) = &cfg.open.hgrm {
        files::probe_writable(std::path::Path::new(&format!("{prefix}TEST.hgrm"))).map_err(|e| {
            OutputError::Output(format!("--hgrm: cannot write files named {prefix}TEST.hgrm: {e}"))
        })?;
    }
    Ok(())
}

/// The sinks `cfg` asks for, in the order they hear each event (the progress line first: it
/// leaves the terminal before another line goes there). `command_line` is what the JSON
/// document says ran. Adding a format is a line here.
pub fn sinks(cfg: &Config, command_line: Vec<String>) -> Vec<Box<dyn Output>> {
    let tty = io::stderr().is_terminal();
    let json_on_stdout = cfg.json.as_deref() == Some("-");
    let rate_table = !cfg.open.rates.is_empty() && !cfg.open.as_rate;
    let mut list: Vec<Box<dyn Output>> = Vec::new();
    // On a terminal's stderr only (stdout carries the results); the live view replaces it.
    if tty && !cfg.open.live {
        list.push(Box::new(sink::progress::Progress::new(
            io::stderr(),
            Box::new(std::time::Instant::now),
            stderr_columns,
        )));
    }
    let searching = cfg.searched().map(|s| respbench_session::capacity::Capacity {
        objectives: s.objectives.clone(),
        resolution: s.resolution,
        ceiling: None,
        bounds: (0, 0),
        steps: Vec::new(),
        conclusion: respbench_session::capacity::Conclusion::NotRun,
        out_of_steps: false,
    });
    let (csv, quiet_table) = (cfg.output == Format::Csv, rate_table && cfg.output == Format::Quiet);
    list.push(Box::new(sink::warnings::Warnings::new(io::stderr(), tty, csv, quiet_table, searching)));
    if cfg.open.live {
        list.push(Box::new(sink::live::Live::new(io::stderr())));
    }
    if cfg.idle {
        list.push(Box::new(sink::idle::Idle::new(io::stdout())));
    }
    // With `--json -` stdout carries the document only; as memtier_benchmark, its table.
    if !json_on_stdout && cfg.memtier.is_none() {
        list.push(match cfg.output {
            Format::Verbose => Box::new(sink::verbose::Verbose::new(io::stdout(), tty, rate_table)),
            Format::Quiet => Box::new(sink::quiet::Quiet::new(io::stdout(), rate_table)),
            Format::Csv => {
                let columns = sink::csv::Columns {
                    open_loop: !cfg.open.rates.is_empty(),
                    sweep: cfg.sweep.is_sweep(),
                    replay: cfg.replay.is_some(),
                    capacity: cfg.searched().is_some(),
                    dataset_only: cfg.dataset_only,
                };
                Box::new(sink::csv::Csv::new(io::stdout(), columns))
            }
        });
    }
    if let Some(path) = &cfg.open.hlog {
        list.push(Box::new(sink::hlog::Hlog::new(path)));
    }
    if let Some(prefix) = &cfg.open.hgrm {
        list.push(Box::new(sink::hgrm::Hgrm::new(prefix)));
    }
    if let Some(m) = &cfg.memtier {
        list.push(Box::new(sink::memtier::Memtier::new(m)));
    }
    if let Some(s) = sink::statsd::settings(cfg) {
        list.push(Box::new(sink::statsd::Statsd::new(s, io::stderr())));
    }
    if let Some(path) = cfg.retry.as_ref().and_then(|r| r.failed_keys.as_deref()) {
        list.push(Box::new(sink::failed_keys::FailedKeys::new(path)));
    }
    if let Some(path) = &cfg.json {
        list.push(Box::new(
            sink::json::Json::new(
                path,
                Box::new(io::stdout()),
                command_line,
                cfg.searched().is_some(),
                cfg.key_prefix.clone(),
            )
            .with_scenario(convert::scenario(cfg)),
        ));
    }
    list
}

/// The run's outputs, and what the run's status needs of its results.
pub struct Outputs {
    sinks: Vec<Box<dyn Output>>,
    /// The outputs that failed, each said: the others went on, and the run ends with status 1.
    failed: Vec<String>,
    /// The run's Ctrl-C: a test that ended with it pulled and fewer requests than asked is
    /// marked partial.
    stop: Option<StopHandle>,
    /// Some test had no request succeed (the run then exits 1).
    none_succeeded: bool,
    /// `--verify`'s mismatches in every test so far.
    mismatches: u64,
    /// The scenario groups whose objectives were missed, a line each (the run then exits 1).
    slo_missed: Vec<String>,
}

impl Outputs {
    /// Before the session: warnings and the nodes found go out as they come. `command_line` is
    /// what the JSON document says ran ([`crate::json::command_line`] of the process's arguments).
    pub fn new(cfg: &Config, command_line: Vec<String>) -> Outputs {
        Outputs {
            sinks: sinks(cfg, command_line),
            failed: Vec::new(),
            stop: None,
            none_succeeded: false,
            mismatches: 0,
            slo_missed: Vec::new(),
        }
    }

    /// `--metrics`: binds the endpoint and starts serving, before the session connects (a
    /// port in use is an error then); nothing without the option.
    pub fn serve_metrics(&mut self, cfg: &Config) -> Result<(), OutputError> {
        if let Some(m) = &cfg.metrics {
            let worker = cfg.split.as_ref().map_or((0, 1), |s| (s.worker.index, s.worker.count));
            let exporter =
                crate::metrics::Exporter::start(m, worker).map_err(|e| OutputError::Output(e.to_string()))?;
            self.sinks.push(Box::new(sink::metrics::Metrics::new(exporter)));
        }
        Ok(())
    }

    /// Whether some test the run reported had no request succeed: every reply an error, or none
    /// (the run exits 1).
    pub fn none_succeeded(&self) -> bool {
        self.none_succeeded
    }

    /// `--verify`'s mismatches in every test reported (each test's total, not its mix's parts).
    pub fn mismatches(&self) -> u64 {
        self.mismatches
    }

    /// The scenario groups whose latency objectives (`slo`) were missed, a line each: the run
    /// exits 1.
    pub fn slo_missed(&self) -> &[String] {
        &self.slo_missed
    }

    /// Watches `stop` to mark what a Ctrl-C cut short.
    pub fn watch_stop(&mut self, stop: &StopHandle) {
        self.stop = Some(stop.clone());
    }

    /// Hands `ev` to every sink; one that fails leaves the list.
    fn each(&mut self, ev: &Event<'_>) {
        let failed = &mut self.failed;
        self.sinks.retain_mut(|s| match s.on(ev) {
            Ok(()) => true,
            Err(e) => {
                failed.push(e.to_string());
                false
            }
        });
    }

    /// Whether some sink wants what `pick` picks.
    fn wants(&self, pick: fn(Wants) -> bool) -> bool {
        self.sinks.iter().any(|s| pick(s.wants()))
    }

    /// Opens the interval log and writes the headers (CSV, side-by-side) for `session`'s tests.
    pub fn begin(
        &mut self,
        session: &Session,
        server_b: Option<&respbench_session::server::ServerInfo>,
    ) -> Result<(), OutputError> {
        let cfg = session.config();
        // Side by side, an open-loop row is titled `GET @ 20000 rps`.
        let rate_suffix = cfg.open.rates.iter().map(|r| format!(" @ {r} rps").len()).max().unwrap_or(0);
        let width =
            session.cases().iter().flat_map(Case::titles).map(|t| t.len() + rate_suffix).max().unwrap_or(0);
        let begin = Begin {
            backends: cfg.backends.iter().map(|b| b.name()).collect(),
            width,
            info: session.server_info(),
            server_b,
            epoch_us: session.epoch_us(),
        };
        for s in &mut self.sinks {
            s.on(&Event::Begin(&begin))?;
        }
        Ok(())
    }

    /// [`Outputs::begin`] for the run's first session, and with `--ab` the second target's
    /// server for the document.
    pub fn begin_pair(&mut self, pair: &respbench_session::Pair) -> Result<(), OutputError> {
        self.begin(pair.first(), pair.second().map(|b| b.server_info()))
    }

    /// Ends every output (the files written at the end are written then, each whatever happened
    /// to the others). `interrupted`: the run did not complete.
    pub fn finish(
        &mut self,
        cfg: &Config,
        interrupted: bool,
        late_by_s: Option<f64>,
        epoch_us: u64,
        searches: &[respbench_session::capacity::Found],
    ) -> Result<(), OutputError> {
        let config = crate::doc::RunConfig::from(cfg);
        let end = RunEnd { interrupted, late_by_s, epoch_us, config: &config, searches };
        for mut s in std::mem::take(&mut self.sinks) {
            if let Err(e) = s.finish(&end) {
                self.failed.push(e.to_string());
            }
        }
        if self.failed.is_empty() {
            Ok(())
        } else {
            Err(OutputError::Output(self.failed.join("\n")))
        }
    }

    /// Why `entry`, of a test run under `cfg`, is incomplete: a Ctrl-C came before its `-n`,
    /// `--duration` or `--replay`'s commands were done.
    fn partial(&self, cfg: &Config, case: &Case, entry: &TestResult) -> Option<String> {
        if !self.stop.as_ref().is_some_and(StopHandle::requested) {
            return None;
        }
        let s = &entry.stats;
        if let Some(replay) = &case.replay {
            // The capture's commands, not -n; each command's entry of the replay has no count of
            // its own to be short of.
            let all = replay.commands();
            return match entry.replay {
                Some(_) if s.requests < all => {
                    Some(format!("interrupted after {} of {all} requests", s.requests))
                }
                Some(_) => None,
                None => Some(format!("interrupted after {} requests", s.requests)),
            };
        }
        match cfg.open.duration {
            Some(d) if s.duration_secs() < d.as_secs_f64() => {
                Some(format!("interrupted after {:.1} s of {:.1} s", s.duration_secs(), d.as_secs_f64()))
            }
            Some(_) => None,
            None if s.requests < cfg.requests => {
                Some(format!("interrupted after {} of {} requests", s.requests, cfg.requests))
            }
            None => None,
        }
    }
}

impl Observer for Outputs {
    fn message(&mut self, line: &str) {
        self.each(&Event::Message(line));
    }

    fn error(&mut self, line: &str) {
        self.each(&Event::Error(line));
    }

    fn nodes(&mut self, m: &Multi) {
        self.each(&Event::Nodes(m));
    }

    fn progress(&mut self, t: &Tick<'_>) {
        self.each(&Event::Progress(t));
    }

    fn shows_progress(&self) -> bool {
        self.wants(|w| w.progress)
    }

    fn progress_end(&mut self) {
        self.each(&Event::ProgressEnd);
    }

    fn second(&mut self, title: &str, n: usize, second: &Second) {
        self.each(&Event::Second { title, n, second });
    }

    fn keeps_intervals(&self) -> bool {
        self.wants(|w| w.intervals)
    }

    fn intervals(&mut self, tag: &str, ended: &[(Time, Interval)], end: Option<Time>) -> Result<(), Error> {
        self.each(&Event::Intervals { tag, ended, end });
        Ok(())
    }

    fn keeps_figures(&self) -> bool {
        self.wants(|w| w.figures)
    }

    fn live_test(&mut self, test: &LiveTest<'_>) {
        self.each(&Event::LiveTest(test));
    }

    fn results(&mut self, results: &[TestResult]) {
        self.each(&Event::Results(results));
    }

    fn step_done(&mut self, s: &StepDone<'_>) -> Result<(), Error> {
        let all = || s.runs.iter().flat_map(|r| &r.results);
        self.none_succeeded |= all().any(|e| crate::shared::none_succeeded(&e.stats));
        self.slo_missed.extend(all().flat_map(crate::groups::missed));
        self.mismatches =
            all().map(|e| e.stats.verify.mismatches()).fold(self.mismatches, u64::saturating_add);
        let cfg = s.cfg;
        let first = s.runs.first().map_or(&[][..], |r| &r.results[..]);
        let step = Step {
            runs: s.runs,
            label: s.step.map(|st| s.base.sweep.label(st)),
            partial: first.iter().map(|e| self.partial(cfg, s.case, e)).collect(),
            shape: Shape {
                clients: cfg.clients,
                payload_bytes: s.case.spec.payload_bytes,
                workload: crate::text::workload_lines(
                    &cfg.values,
                    cfg.key_dist,
                    cfg.keyspace,
                    &cfg.key_prefix,
                ),
                keepalive: cfg.keepalive && !s.case.spec.connection_per_request,
                threads: cfg.threads,
                percentiles: &cfg.open.percentiles,
                poisson: cfg.open.poisson,
                series: cfg.open.show_series,
                open_loop: !cfg.open.rates.is_empty(),
                replay: cfg.replay.is_some(),
                show_errors: cfg.show_errors,
                misses: (!cfg.miss_ok).then(|| {
                    respbench_session::dataset::miss_why(cfg.keyspace, &cfg.dataset_shapes)
                        .unwrap_or_default()
                }),
            },
        };
        self.each(&Event::Step(&step));
        Ok(())
    }

    fn rates_done(&mut self, cfg: &Config, steps: &[TestResult]) -> Result<(), Error> {
        self.each(&Event::Rates { steps, poisson: cfg.open.poisson });
        Ok(())
    }

    fn sweep_done(&mut self, rows: &[TestResult]) -> Result<(), Error> {
        self.each(&Event::Sweep(rows));
        Ok(())
    }

    fn capacity_probe(&mut self, test: &str, probe: &TestResult) {
        self.each(&Event::CapacityProbe { test, probe });
    }

    fn capacity_step(
        &mut self,
        test: &str,
        n: usize,
        most: u32,
        step: &respbench_session::capacity::StepRecord,
        _result: &TestResult,
    ) {
        self.each(&Event::CapacityStep { test, n, most, step });
    }

    fn capacity_done(&mut self, found: &respbench_session::capacity::Found) -> Result<(), Error> {
        self.each(&Event::CapacityDone(found));
        Ok(())
    }

    fn dataset(&mut self, built: &respbench_session::dataset::Built) -> Result<(), Error> {
        self.each(&Event::Dataset(built));
        Ok(())
    }

    fn idle_clients(&mut self, live: u64) {
        self.each(&Event::IdleClients(live));
    }

    fn idle_footprint(&mut self, text: &str) {
        self.each(&Event::IdleFootprint(text));
    }
}
