//! The terminal side of a run: the session's [`Observer`], which draws the progress line, prints
//! each step's results in the chosen format and the session's warnings on stderr, writes the
//! `--hlog` log and, at the end, the `--json` document.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use respbench_core::stats::{Interval, Second};
use respbench_core::Time;
use respbench_session::case::Case;
use respbench_session::config::{Config, Output};
use respbench_session::observer::{StepDone, Tick};
use respbench_session::result::TestResult;
use respbench_session::routing::Multi;
use respbench_session::server::ServerInfo;
use respbench_session::{topology, Error, Observer, Session, StopHandle};

use crate::text::{self as report, TestReport};
use crate::{capacity, convert, files, hlog, json};

/// How often the progress line is redrawn, as in redis-benchmark.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// Where a run's output goes, and what the progress line last showed.
pub struct Presenter {
    out: Box<dyn Write>,
    /// stderr: errors, warnings, the progress line and `--live`; a failed write is let go (the
    /// run's status stays the run's).
    err: Box<dyn Write>,
    /// Several backends side by side.
    comparing: bool,
    open_loop: bool,
    /// An open loop's tests are summed up in a table of rates (`--rps`; not `--rate`, which
    /// keeps redis-benchmark's shape): `-q` prints no line of its own for each.
    rate_table: bool,
    csv: bool,
    /// The width of the test-name column in side-by-side tables.
    width: usize,
    /// Nodes' descriptions and the progress line are for a reader of stdout.
    verbose_stdout: bool,
    show_progress: bool,
    /// The server's settings, for the report's header.
    info: ServerInfo,
    /// `--hlog`: the interval log (dropped once it failed).
    hlog: Option<hlog::IntervalLog>,
    /// Outputs that failed (the report on stdout, `--hlog`), with their path and error: the
    /// others go on, and the run ends with them listed and status 1.
    failed: Vec<String>,
    /// The progress line (stderr): the test it is of, when it was drawn, what it showed and its
    /// width.
    drawn_for: Option<Instant>,
    last_draw: Instant,
    last: (u64, u64),
    drawn: usize,
    /// Whether stderr is a terminal: only then does it show what the run noticed.
    stderr_tty: bool,
    /// Some test had no request succeed (the run then exits 1).
    none_succeeded: bool,
    /// `--verify`'s mismatches in every test so far.
    mismatches: u64,
    /// Every result of the run, kept for the outputs written at the end (`--json`, `--hgrm`)
    /// when one is asked for.
    kept: Option<Vec<TestResult>>,
    /// The session's notices (`Observer::message`), for the JSON document.
    notices: Vec<String>,
    /// `--slo`: each test's search, for the JSON document.
    searches: Vec<respbench_session::capacity::Found>,
    /// `--slo`: the objectives, for the progress lines.
    searching: Option<respbench_session::capacity::Capacity>,
    /// The run's Ctrl-C: a test that ended with it pulled and fewer requests than asked is
    /// marked partial in `-q`.
    stop: Option<StopHandle>,
    /// `--ab`: the second target's server, for the JSON document.
    server_b: Option<ServerInfo>,
    /// `--metrics`: the live endpoint, once [`Presenter::serve_metrics`] bound it.
    metrics: Option<crate::metrics::Exporter>,
    /// The JSON document's `command_line` (passwords hidden: [`json::command_line`]).
    command_line: Vec<String>,
}

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
pub fn check_outputs(cfg: &Config) -> Result<(), String> {
    if let Some(path) = cfg.json.as_deref().filter(|p| *p != "-") {
        files::probe_writable(std::path::Path::new(path))
            .map_err(|e| format!("--json: cannot write {path}: {e}"))?;
    }
    if let Some(path) = &cfg.open.hlog {
        let target = std::path::Path::new(path);
        files::check_unfollowed(target)
            .and_then(|how| files::probe(target, how))
            .map_err(|e| format!("--hlog {path}: cannot create it: {e}"))?;
    }
    if let Some(m) = &cfg.memtier {
        crate::memtier::check_outputs(m)?;
    }
    if let Some(prefix) = &cfg.open.hgrm {
        files::probe_writable(std::path::Path::new(&format!("{prefix}TEST.hgrm")))
            .map_err(|e| format!("--hgrm: cannot write files named {prefix}TEST.hgrm: {e}"))?;
    }
    Ok(())
}

/// Whether the JSON document goes to stdout, which then carries it only.
fn json_on_stdout(cfg: &Config) -> bool {
    cfg.json.as_deref() == Some("-")
}

impl Presenter {
    /// Before the session: warnings and the nodes found go out as they come. `command_line` is
    /// what the JSON document says ran ([`json::command_line`] of the process's arguments).
    pub fn new(cfg: &Config, command_line: Vec<String>) -> Presenter {
        // With `--json -` stdout carries the document only; as memtier_benchmark, its table.
        let out: Box<dyn Write> = if json_on_stdout(cfg) || cfg.memtier.is_some() {
            Box::new(io::sink())
        } else {
            Box::new(io::stdout())
        };
        Presenter {
            out,
            err: Box::new(io::stderr()),
            comparing: cfg.backends.len() > 1,
            open_loop: !cfg.open.rates.is_empty(),
            rate_table: !cfg.open.rates.is_empty() && !cfg.open.as_rate,
            csv: cfg.output == Output::Csv,
            width: 0,
            verbose_stdout: cfg.output == Output::Verbose && !json_on_stdout(cfg),
            // On a terminal's stderr only (stdout carries the results, whatever reads them);
            // the live view replaces it.
            show_progress: io::stderr().is_terminal() && !cfg.open.live,
            info: ServerInfo::default(),
            hlog: None,
            failed: Vec::new(),
            drawn_for: None,
            last_draw: Instant::now(),
            last: (0, 0),
            drawn: 0,
            stderr_tty: io::stderr().is_terminal(),
            none_succeeded: false,
            mismatches: 0,
            kept: (cfg.json.is_some() || cfg.open.hgrm.is_some() || cfg.memtier.is_some()).then(Vec::new),
            notices: Vec::new(),
            searches: Vec::new(),
            searching: cfg.capacity.as_ref().map(|s| respbench_session::capacity::Capacity {
                objectives: s.objectives.clone(),
                resolution: s.resolution,
                ceiling: None,
                bounds: (0, 0),
                steps: Vec::new(),
                conclusion: respbench_session::capacity::Conclusion::NotRun,
                out_of_steps: false,
            }),
            stop: None,
            server_b: None,
            metrics: None,
            command_line,
        }
    }

    /// `--metrics`: binds the endpoint and starts serving, before the session connects (a
    /// port in use is an error then); nothing without the option.
    pub fn serve_metrics(&mut self, cfg: &Config) -> Result<(), String> {
        if let Some(m) = &cfg.metrics {
            let worker = cfg.split.as_ref().map_or((0, 1), |s| (s.worker.index, s.worker.count));
            self.metrics = Some(crate::metrics::Exporter::start(m, worker).map_err(|e| e.to_string())?);
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

    /// Takes the progress line off the terminal, before anything else is written there.
    fn clear_progress(&mut self) {
        if self.drawn > 0 {
            let _ = write!(self.err, "{}", report::clear_progress(self.drawn));
            self.drawn = 0;
        }
    }

    /// Watches `stop` to mark what a Ctrl-C cut short.
    pub fn watch_stop(&mut self, stop: &StopHandle) {
        self.stop = Some(stop.clone());
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

    /// Opens the interval log and writes the header (CSV, side-by-side) for `session`'s tests.
    pub fn begin(&mut self, session: &Session) -> Result<(), String> {
        let cfg = session.config();
        self.info = session.server_info().clone();
        // Side by side, an open-loop row is titled `GET @ 20000 rps`.
        let rate_suffix = cfg.open.rates.iter().map(|r| format!(" @ {r} rps").len()).max().unwrap_or(0);
        self.width =
            session.cases().iter().flat_map(Case::titles).map(|t| t.len() + rate_suffix).max().unwrap_or(0);
        if let Some(path) = &cfg.open.hlog {
            self.hlog = Some(hlog::IntervalLog::create(path, session.epoch_us())?);
        }
        if self.comparing {
            let names: Vec<&str> = cfg.backends.iter().map(|b| b.name()).collect();
            report::write_compare_header(self.csv, &names, self.width, &mut self.out)
                .map_err(|e| e.to_string())?;
        } else if self.csv && cfg.capacity.is_some() {
            writeln!(self.out, "{}", capacity::CSV_HEADER).map_err(|e| e.to_string())?;
        } else if self.csv {
            let extra = if self.open_loop { report::CSV_OPEN_LOOP_COLUMNS } else { "" };
            let sweep = if cfg.sweep.is_sweep() { report::CSV_SWEEP_COLUMNS } else { "" };
            let replay = if cfg.replay.is_some() { report::CSV_REPLAY_COLUMNS } else { "" };
            writeln!(self.out, "{}{extra}{sweep}{}{replay}", report::CSV_HEADER, report::CSV_ACCOUNT_COLUMNS)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// [`Presenter::begin`] for the run's first session, and with `--ab` keeps the second
    /// target's server for the document.
    pub fn begin_pair(&mut self, pair: &respbench_session::Pair) -> Result<(), String> {
        self.server_b = pair.second().map(|b| b.server_info().clone());
        self.begin(pair.first())
    }

    /// Closes the output and writes the JSON document. `interrupted`: the run did not complete.
    pub fn finish(
        &mut self,
        cfg: &Config,
        interrupted: bool,
        late_by_s: Option<f64>,
        epoch_us: u64,
    ) -> Result<(), String> {
        let results = self.kept.take().unwrap_or_default();
        let results = results.as_slice();
        if self.comparing && !self.csv {
            let _ = report::write_compare_footer(&mut self.out);
        }
        if cfg.output == Output::Quiet && !self.comparing && !self.rate_table {
            let _ = writeln!(self.out);
        }
        if let Err(e) = self.out.flush() {
            self.report_failed(&e);
        }
        if let Some(log) = &mut self.hlog {
            if let Err(e) = log.finish() {
                self.failed.push(e);
            }
        }
        if let Some(prefix) = &cfg.open.hgrm {
            if let Err(e) = crate::hgrm::write_all(prefix, results, self.comparing) {
                self.failed.push(e);
            }
        }
        if let Some(m) = &cfg.memtier {
            if let Err(e) = crate::memtier::write(m, results, interrupted, epoch_us) {
                self.failed.push(e);
            }
        }
        if let Some(path) = &cfg.json {
            // Written whatever happened to the other outputs: each is independent.
            let written = results
                .iter()
                .map(|e| convert::test(e, epoch_us))
                .collect::<Result<Vec<_>, _>>()
                .and_then(|tests| {
                    let mut doc =
                        json::document(convert::config(cfg), convert::server(&self.info), interrupted, tests);
                    doc.command_line = Some(self.command_line.clone());
                    doc.warnings = (!self.notices.is_empty()).then(|| convert::notices(&self.notices));
                    doc.late_by_s = late_by_s;
                    doc.server_b = self.server_b.as_ref().map(convert::server);
                    if cfg.capacity.is_some() {
                        doc.capacity = Some(capacity::to_json(&self.searches, epoch_us)?);
                    }
                    json::write_json(path, &doc).map_err(|e| e.to_string())
                });
            if let Err(e) = written {
                self.failed.push(e);
            }
        }
        // The endpoint stays up until the final figures were scraped (or --metrics-linger).
        if let Some(m) = self.metrics.take() {
            m.finish();
        }
        if self.failed.is_empty() {
            Ok(())
        } else {
            Err(self.failed.join("\n"))
        }
    }

    /// The report could not be written to stdout: said at the end, and the rest of it goes
    /// nowhere (the other outputs go on).
    fn report_failed(&mut self, e: &io::Error) {
        self.failed.push(format!("the report (stdout): cannot write: {e}"));
        self.out = Box::new(io::sink());
    }

    /// Prints a step: side by side, or each result in the chosen format.
    fn print_step(&mut self, s: &StepDone<'_>) -> io::Result<()> {
        if self.comparing {
            let mut rows: Vec<Vec<&TestResult>> = Vec::new();
            for run in s.runs {
                for (k, e) in run.results.iter().enumerate() {
                    if rows.len() <= k {
                        rows.push(Vec::new());
                    }
                    rows[k].push(e);
                }
            }
            for row in &rows {
                report::write_compare_row(self.csv, row, self.width, &mut self.out)?;
            }
            // Each backend's events after the table (it has no room for them).
            for e in rows.iter().flatten() {
                let title = format!("{} [{}]", e.name, e.backend.as_deref().unwrap_or("?"));
                if self.csv {
                    crate::events::write_csv_as(&title, e, &mut self.out)?;
                } else {
                    crate::events::write_quiet_as(&title, e, &mut self.out)?;
                }
            }
        } else if let Some(run) = s.runs.first() {
            for e in &run.results {
                if !(self.rate_table && s.cfg.output == Output::Quiet) {
                    let label = s.step.map(|st| s.base.sweep.label(st));
                    let partial = self.partial(s.cfg, s.case, e);
                    let never_ran = respbench_session::never_ran(&run.failures);
                    print_test(
                        s.cfg,
                        s.case,
                        &self.info,
                        e,
                        never_ran,
                        label.as_deref(),
                        partial.as_deref(),
                        &mut self.out,
                        &mut self.err,
                    )?;
                } else {
                    if s.cfg.open.show_series {
                        // -q in open loop: the rate table stands for the quiet lines; --series
                        // still asked for each step's seconds.
                        writeln!(self.out, "{} @ {} rps:", e.name, e.target_rps.unwrap_or(0))?;
                        report::write_series(&e.stats, &mut self.out)?;
                        crate::server_series::write_series(e, &mut self.out)?;
                    }
                    // And each event's line (the table has no room for them), and a ramp's steps.
                    crate::events::write_quiet(e, &mut self.out)?;
                    report::write_ramp(e, false, &mut self.out)?;
                    report::write_delivery_quiet(e, &mut self.out)?;
                }
            }
        }
        Ok(())
    }
}

impl Observer for Presenter {
    fn message(&mut self, line: &str) {
        self.clear_progress();
        // stderr is for errors: what was noticed shows on a terminal, else in the verbose
        // report (as redis-benchmark prints its own warnings, on stdout) and the JSON.
        if self.stderr_tty {
            let _ = writeln!(self.err, "{line}");
        } else if self.verbose_stdout {
            let _ = writeln!(self.out, "{line}");
        }
        self.notices.push(line.to_string());
    }

    fn error(&mut self, line: &str) {
        self.clear_progress();
        let _ = writeln!(self.err, "{line}");
    }

    fn nodes(&mut self, m: &Multi) {
        if self.verbose_stdout {
            // As redis-benchmark opens a cluster run: the nodes it found.
            let _ = writeln!(self.out, "{}", topology::describe(&m.topology));
            let _ = writeln!(self.out, "{}\n", m.describe_keys());
        }
    }

    fn progress(&mut self, t: &Tick<'_>) {
        if !self.show_progress {
            return;
        }
        if self.drawn_for != Some(t.started) {
            self.drawn_for = Some(t.started);
            self.last_draw = t.started;
            self.last = (0, 0);
        }
        if self.last_draw.elapsed() < PROGRESS_EVERY {
            return;
        }
        let dt = self.last_draw.elapsed().as_secs_f64();
        self.last_draw = Instant::now();
        let done = t.completed;
        let (last_done, _) = self.last;
        let elapsed_s = t.started.elapsed().as_secs_f64();
        let line = report::progress_line(&report::Progressed {
            title: t.title,
            elapsed_s,
            goal: t.goal,
            completed: done,
            rps_now: done.saturating_sub(last_done) as f64 / dt,
            rps_overall: done as f64 / elapsed_s,
            p99_ms: t.p99_micros.map(|v| v as f64 / 1000.0),
        });
        // A line wider than the terminal would wrap, and `\r` would redraw only its last row.
        let line = report::fit_progress(&line, stderr_columns());
        let _ =
            write!(self.err, "{}{line}", report::clear_progress(self.drawn)).and_then(|_| self.err.flush());
        self.drawn = line.chars().count();
        self.last = (done, t.latency_sum_micros);
    }

    fn shows_progress(&self) -> bool {
        self.show_progress
    }

    fn progress_end(&mut self) {
        self.clear_progress();
        self.drawn_for = None;
    }

    fn second(&mut self, title: &str, n: usize, s: &Second) {
        let _ = writeln!(self.err, "{}", report::live_line(title, n, s));
    }

    fn keeps_intervals(&self) -> bool {
        self.hlog.is_some()
    }

    fn intervals(&mut self, tag: &str, ended: &[(Time, Interval)], end: Option<Time>) -> Result<(), Error> {
        if let Some(log) = &mut self.hlog {
            // Flushed each time (about once a second): a process ended at once by a late signal
            // leaves every interval already closed in the file.
            let written = ended.iter().try_for_each(|(start, s)| log.write(tag, *start, end, s));
            if let Err(e) =
                written.and_then(|()| if ended.is_empty() && end.is_none() { Ok(()) } else { log.flush() })
            {
                // The results are kept for the other outputs; the log is said at the end.
                self.failed.push(e);
                self.hlog = None;
            }
        }
        Ok(())
    }

    fn keeps_figures(&self) -> bool {
        self.metrics.is_some()
    }

    fn live_test(&mut self, test: &respbench_session::observer::LiveTest<'_>) {
        if let Some(m) = &self.metrics {
            m.live_test(test);
        }
    }

    fn results(&mut self, results: &[TestResult]) {
        if let Some(m) = &self.metrics {
            m.results(results);
        }
        if let Some(kept) = &mut self.kept {
            kept.extend(results.iter().cloned());
        }
    }

    fn step_done(&mut self, s: &StepDone<'_>) -> Result<(), Error> {
        self.none_succeeded |=
            s.runs.iter().flat_map(|r| &r.results).any(|e| crate::shared::none_succeeded(&e.stats));
        let verified = s.runs.iter().flat_map(|r| &r.results).map(|e| e.stats.verify.mismatches());
        self.mismatches = verified.fold(self.mismatches, u64::saturating_add);
        if let Err(e) = self.print_step(s) {
            self.report_failed(&e);
        }
        if self.stderr_tty {
            for run in s.runs {
                for e in &run.results {
                    let on = match (&e.backend, self.comparing) {
                        (Some(b), true) => format!(" ({b})"),
                        _ => String::new(),
                    };
                    for w in &e.warnings {
                        let _ = writeln!(self.err, "WARNING: {}{on}", w.text);
                    }
                }
            }
        }
        // How many connections failed, and why.
        for run in s.runs {
            let last = &run.results[run.results.len() - 1];
            for (e, n) in &run.failures {
                let plural = if *n == 1 { "" } else { "s" };
                let on = if self.comparing {
                    format!(" ({})", last.backend.as_deref().unwrap_or(""))
                } else {
                    String::new()
                };
                let _ = writeln!(self.err, "{}{on}: {n} connection{plural} failed: {e}", last.name);
            }
        }
        Ok(())
    }

    fn rates_done(&mut self, cfg: &Config, steps: &[TestResult]) -> Result<(), Error> {
        if self.csv {
            return Ok(());
        }
        let mut written = if self.rate_table {
            report::write_rate_table(steps, cfg.open.poisson, &mut self.out)
        } else {
            Ok(())
        };
        if cfg.output == Output::Quiet {
            // -q shows only the table (or, with --rate, each test's line): the steps that did not
            // keep their schedule say so.
            written = written.and_then(|()| report::write_schedules_not_kept(steps, &mut self.out));
        }
        if let Err(e) = written {
            self.report_failed(&e);
        }
        Ok(())
    }

    fn sweep_done(&mut self, rows: &[TestResult]) -> Result<(), Error> {
        if self.csv {
            return Ok(());
        }
        if let Err(e) = report::write_sweep_table(rows, &mut self.out) {
            self.report_failed(&e);
        }
        Ok(())
    }

    fn capacity_probe(&mut self, test: &str, probe: &TestResult) {
        if self.stderr_tty {
            let _ = writeln!(
                self.err,
                "{test}: closed-loop probe: {:.0} rps, the top of the search",
                probe.stats.rps()
            );
        }
    }

    fn capacity_step(
        &mut self,
        test: &str,
        n: usize,
        most: u32,
        step: &respbench_session::capacity::StepRecord,
        _result: &TestResult,
    ) {
        // As the progress line: for a reader at a terminal; a run to a file or pipe keeps
        // stderr for errors (the steps are in the table and the JSON).
        if let (true, Some(c)) = (self.stderr_tty, &self.searching) {
            let _ = writeln!(self.err, "{}", capacity::step_line(test, n, most, c, step));
        }
    }

    fn capacity_done(&mut self, found: &respbench_session::capacity::Found) -> Result<(), Error> {
        let written = if self.csv {
            capacity::write_csv(found, &mut self.out)
        } else {
            (|| {
                capacity::write_table(found, &mut self.out)?;
                writeln!(self.out, "{}", capacity::answer_line(found))?;
                if let Some(line) = capacity::ceiling_line(found) {
                    writeln!(self.out, "{line}")?;
                }
                self.out.flush()
            })()
        };
        if let Err(e) = written {
            self.report_failed(&e);
        }
        self.searches.push(found.clone());
        Ok(())
    }

    fn idle_clients(&mut self, live: u64) {
        // A closed stdout (a reader gone) must not end -I's connections, nor panic.
        let mut o = io::stdout();
        let _ = write!(o, "clients: {live}\r").and_then(|_| o.flush());
    }

    fn idle_footprint(&mut self, text: &str) {
        let _ = writeln!(io::stdout(), "\n{text}");
    }
}

/// Prints one result in the chosen format; `never_ran` the connections the server turned away
/// and those that could not connect; `label` names a sweep's step (`-d 128 -c 100`); `partial`
/// why the test is incomplete.
#[allow(clippy::too_many_arguments)] // each is one piece of what one report line needs
fn print_test(
    cfg: &Config,
    case: &Case,
    info: &ServerInfo,
    entry: &TestResult,
    never_ran: (u64, u64),
    label: Option<&str>,
    partial: Option<&str>,
    out: &mut impl Write,
    err: &mut impl Write,
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
        never_ran,
        payload_bytes: spec.payload_bytes,
        workload: report::workload_lines(&cfg.values, cfg.key_dist, cfg.keyspace, &cfg.key_prefix),
        keepalive: cfg.keepalive && !spec.connection_per_request,
        threads: cfg.threads,
        server_save: info.save.as_deref(),
        server_appendonly: info.appendonly.as_deref(),
        backend_note: respbench_session::backend_note(entry.backend.as_deref()),
        nodes: &entry.nodes,
        percentiles: &cfg.open.percentiles,
    };
    match cfg.output {
        Output::Verbose => {
            report::write_verbose(&r, out)?;
            report::write_open_loop(entry, cfg.open.poisson, out)?;
            report::write_replay(entry, false, out)?;
            report::write_time(entry, out)?;
            crate::server_series::write_verbose(entry, out)?;
            report::write_errors(&r, false, out)?;
            for w in &entry.warnings {
                writeln!(out, "  WARNING: {}", w.text)?;
            }
            crate::events::write_verbose(entry, out)?;
            report::write_ramp(entry, true, out)?;
            if cfg.open.show_series {
                report::write_series(&entry.stats, out)?;
                crate::server_series::write_series(entry, out)?;
            }
            writeln!(out)?;
        }
        Output::Quiet => {
            report::write_quiet_marked(&r, partial, out)?;
            report::write_replay(entry, true, out)?;
            report::write_errors(&r, true, out)?;
            report::write_verify(&entry.stats.verify, Some(r.title), out)?;
            crate::events::write_quiet(entry, out)?;
            report::write_ramp(entry, false, out)?;
            report::write_delivery_quiet(entry, out)?;
            if cfg.open.show_series {
                report::write_series(&entry.stats, out)?;
                crate::server_series::write_series(entry, out)?;
            }
        }
        Output::Csv => {
            // Every row of an open-loop run has the extra columns, a mix's commands too.
            let mut row = Vec::new();
            report::write_csv_row(
                &r,
                (!cfg.open.rates.is_empty()).then_some(entry),
                entry.step.as_ref(),
                &mut row,
            )?;
            if cfg.replay.is_some() {
                row.pop();
                row.extend_from_slice(report::csv_replay_columns(entry).as_bytes());
                row.push(b'\n');
            }
            out.write_all(&row)?;
            crate::events::write_csv(entry, out)?;
            report::write_ramp_csv(entry, out)?;
            report::write_delivery_csv(entry, out)?;
            // stdout carries CSV only.
            report::write_errors(&r, true, err)?;
        }
    }
    if cfg.show_errors {
        for k in entry.stats.errors.kinds() {
            let _ = writeln!(err, "Error from server: {}", k.first_message);
        }
    }
    out.flush()
}
