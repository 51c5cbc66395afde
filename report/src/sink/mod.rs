//! The outputs of a run as sinks: each format is one type in a file of its own, behind
//! [`Output`], fed the session's [`Event`]s in order and writing to the `Write` it was given;
//! [`crate::outputs::Outputs`] holds the list the options ask for and is what the session
//! reports to. No sink imports another: what they share is here or in the leaves below them
//! (`text`, `events`, `capacity`, `hdr`, `shared`).

use std::io::{self, Write};
use std::time::Instant;

use respbench_core::stats::{Interval, Second};
use respbench_core::Time;
use respbench_session::capacity::{Found, StepRecord};
use respbench_session::observer::{BackendRun, LiveTest, Tick};
use respbench_session::result::TestResult;
use respbench_session::routing::Multi;
use respbench_session::server::ServerInfo;

use crate::error::Error;
use crate::text::TestReport;

pub mod csv;
pub mod failed_keys;
pub mod hgrm;
pub mod hlog;
pub mod idle;
pub mod json;
pub mod live;
pub mod memtier;
pub mod metrics;
pub mod progress;
pub mod quiet;
pub mod statsd;
pub mod verbose;
pub mod warnings;

/// What the session did, as each output hears it (the session's `Observer` calls, one enum).
pub enum Event<'a> {
    /// The run's sessions are set up: the servers and the tests are known.
    Begin(&'a Begin<'a>),
    /// A line for the reader that the run goes on after (`WARNING: …`).
    Message(&'a str),
    /// A line about an error the run went on after; stderr's, always.
    Error(&'a str),
    /// Over several nodes, before the first test: the nodes found.
    Nodes(&'a Multi),
    /// A test's live figures, while it runs.
    Progress(&'a Tick<'a>),
    /// A test's loops ended (the progress line goes).
    ProgressEnd,
    /// A measured test is starting (`--metrics`).
    LiveTest(&'a LiveTest<'a>),
    /// `--live`: second `n` of the test titled `title`.
    Second {
        /// The test's title.
        title: &'a str,
        /// The second's number.
        n: usize,
        /// Its figures.
        second: &'a Second,
    },
    /// The seconds every loop moved past, of the test tagged `tag`; `end` once it is over.
    Intervals {
        /// The test's tag.
        tag: &'a str,
        /// The closed seconds, each with its start.
        ended: &'a [(Time, Interval)],
        /// When the test ended, once it did.
        end: Option<Time>,
    },
    /// A step ran on one backend: its results (a mix's commands, then its total).
    Results(&'a [TestResult]),
    /// A step ran on every backend.
    Step(&'a Step<'a>),
    /// An open-loop test ran every `--rps` step: its totals, one per step.
    Rates {
        /// The totals.
        steps: &'a [TestResult],
        /// `--poisson`'s arrivals.
        poisson: bool,
    },
    /// A sweep ran every step of a test: its totals, one per step.
    Sweep(&'a [TestResult]),
    /// `--slo`: the search's closed-loop probe ran.
    CapacityProbe {
        /// The test.
        test: &'a str,
        /// The probe's result.
        probe: &'a TestResult,
    },
    /// `--slo`: step `n` (from 1) of at most `most` ran and was judged.
    CapacityStep {
        /// The test.
        test: &'a str,
        /// The step's number.
        n: usize,
        /// The most steps the search takes.
        most: u32,
        /// The step as judged.
        step: &'a StepRecord,
    },
    /// `--slo`: a test's search is over.
    CapacityDone(&'a Found),
    /// `--dataset-shape`: the data was built, before the first test.
    Dataset(&'a respbench_session::dataset::Built),
    /// `-I`: how many connections are up.
    IdleClients(u64),
    /// `-I`: every connection is up; what they cost the server.
    IdleFootprint(&'a str),
}

/// The run's start, as the outputs need it.
pub struct Begin<'a> {
    /// The backends, side by side when more than one.
    pub backends: Vec<&'a str>,
    /// The width of the test-name column in side-by-side tables.
    pub width: usize,
    /// The server's settings.
    pub info: &'a ServerInfo,
    /// `--ab`: the second target's server.
    pub server_b: Option<&'a ServerInfo>,
    /// The run's epoch in microseconds since 1970 (the interval log's base).
    pub epoch_us: u64,
}

/// What a step's report lines need of its configuration, taken once per step.
pub struct Shape<'a> {
    /// Parallel clients (`-c`).
    pub clients: usize,
    /// The payload's size in bytes.
    pub payload_bytes: usize,
    /// The workload's lines ([`crate::text::workload_lines`]).
    pub workload: Vec<String>,
    /// Whether connections are kept open.
    pub keepalive: bool,
    /// `--threads` as given.
    pub threads: usize,
    /// `--print-percentiles`.
    pub percentiles: &'a [f64],
    /// `--poisson`'s arrivals.
    pub poisson: bool,
    /// `--series`: each second's row.
    pub series: bool,
    /// An open loop (`--rps`, `--rate`).
    pub open_loop: bool,
    /// `--replay`.
    pub replay: bool,
    /// `-e`: each error reply's message on stderr.
    pub show_errors: bool,
    /// A read test whose replies mostly missed is flagged, with why it is likely (`None`:
    /// `--miss-ok`).
    pub misses: Option<String>,
}

/// A step ran on every backend: its results, and how to show them.
pub struct Step<'a> {
    /// Each backend's results.
    pub runs: &'a [BackendRun],
    /// A sweep's step (`-d 128 -c 100`).
    pub label: Option<String>,
    /// Per result of the first backend: why it is incomplete (a Ctrl-C came first).
    pub partial: Vec<Option<String>>,
    /// What its lines need of its configuration.
    pub shape: Shape<'a>,
}

impl Step<'_> {
    /// The first backend's results (the one shown when not side by side), with the connections
    /// that never ran and each result's title (a sweep's step after the name, unless `csv`).
    pub fn shown(&self, csv: bool) -> Vec<(&TestResult, String)> {
        let Some(run) = self.runs.first() else { return Vec::new() };
        run.results
            .iter()
            .map(|e| {
                let title = match self.label.as_deref().filter(|_| !csv) {
                    Some(l) => format!("{} ({l})", e.name),
                    None => e.name.clone(),
                };
                (e, title)
            })
            .collect()
    }

    /// The first backend's connections the server turned away and those that could not
    /// connect.
    pub fn never_ran(&self) -> (u64, u64) {
        self.runs.first().map_or((0, 0), |r| respbench_session::never_ran(&r.failures))
    }

    /// The report of `entry` titled `title` against the server `info`.
    pub fn report<'b>(
        &'b self,
        entry: &'b TestResult,
        title: &'b str,
        info: &'b ServerInfo,
    ) -> TestReport<'b> {
        TestReport {
            title,
            stats: &entry.stats,
            cpu: entry.cpu.as_ref(),
            verdict: entry.verdict.as_ref(),
            clients: self.shape.clients,
            never_ran: self.never_ran(),
            payload_bytes: self.shape.payload_bytes,
            workload: self.shape.workload.clone(),
            keepalive: self.shape.keepalive,
            threads: self.shape.threads,
            server_save: info.save.as_deref(),
            server_appendonly: info.appendonly.as_deref(),
            backend_note: respbench_session::backend_note(entry.backend.as_deref()),
            nodes: &entry.nodes,
            percentiles: self.shape.percentiles,
        }
    }

    /// Side by side: a row per result of every backend, then each backend's events (the table
    /// has no room for them), as CSV or text.
    pub fn write_side_by_side(&self, csv: bool, width: usize, out: &mut impl Write) -> io::Result<()> {
        let mut rows: Vec<Vec<&TestResult>> = Vec::new();
        for run in self.runs {
            for (k, e) in run.results.iter().enumerate() {
                if rows.len() <= k {
                    rows.push(Vec::new());
                }
                rows[k].push(e);
            }
        }
        for row in &rows {
            crate::text::write_compare_row(csv, row, width, out)?;
        }
        for e in rows.iter().flatten() {
            let title = format!("{} [{}]", e.name, e.backend.as_deref().unwrap_or("?"));
            if csv {
                crate::events::write_csv_as(&title, e, out)?;
            } else {
                crate::events::write_quiet_as(&title, e, out)?;
            }
        }
        Ok(())
    }
}

/// The run is over.
pub struct RunEnd<'a> {
    /// The run did not complete (a signal, failed connections).
    pub interrupted: bool,
    /// How late the run's scheduled start came, if it had one.
    pub late_by_s: Option<f64>,
    /// The run's epoch in microseconds since 1970.
    pub epoch_us: u64,
    /// The run's configuration, as the document keeps it.
    pub config: &'a crate::doc::RunConfig,
    /// `--slo`: the searches the session ran, as it kept them (kept once, there).
    pub searches: &'a [Found],
}

/// What an output asks the session to keep for it, which costs the run when asked only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wants {
    /// Progress ticks (and the p99 so far they show).
    pub progress: bool,
    /// The seconds the loops closed ([`Event::Intervals`]).
    pub intervals: bool,
    /// The loops' live figures ([`Event::LiveTest`]).
    pub figures: bool,
}

/// One output format: hears every event of the run, then its end. An error takes the output out
/// of the run (the others go on) and is said at the end, with status 1.
pub trait Output {
    /// What happened.
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error>;
    /// The run is over: what is written at the end is written.
    fn finish(&mut self, _end: &RunEnd<'_>) -> Result<(), Error> {
        Ok(())
    }
    /// What the output needs the session to keep.
    fn wants(&self) -> Wants {
        Wants::default()
    }
}

/// What the sinks that show tests learn as the run begins: the server, and whether (and how
/// wide) backends go side by side.
#[derive(Default)]
pub struct Layout {
    /// The server's settings, for each report's header.
    pub info: ServerInfo,
    /// Several backends side by side.
    pub comparing: bool,
    /// The width of the test-name column in side-by-side tables.
    pub width: usize,
}

impl Layout {
    /// Learns `b`'s.
    pub fn begin(&mut self, b: &Begin<'_>) {
        *self = Layout { info: b.info.clone(), comparing: b.backends.len() > 1, width: b.width };
    }

    /// The text reports' start: learns `b`'s and, side by side, writes the table's header.
    pub fn begin_text(&mut self, b: &Begin<'_>, out: &mut impl Write) -> io::Result<()> {
        self.begin(b);
        if self.comparing {
            crate::text::write_compare_header(false, &b.backends, b.width, out)?;
        }
        Ok(())
    }

    /// The text reports' end: side by side, the table's legend (a failed write is let go, as
    /// the report's last words); then `out` flushed.
    pub fn end_text(&self, out: &mut impl Write) -> io::Result<()> {
        if self.comparing {
            let _ = crate::text::write_compare_footer(out);
        }
        out.flush()
    }
}

/// The text reports' tables that close a sweep (its steps) and a capacity search (its steps, its
/// answer and what capped it); nothing for another event.
pub fn write_text_tables(ev: &Event<'_>, out: &mut impl Write) -> io::Result<()> {
    match ev {
        Event::Sweep(rows) => crate::text::write_sweep_table(rows, out),
        Event::CapacityDone(found) => crate::capacity::write_report(found, out),
        _ => Ok(()),
    }
}

/// A report on stdout (verbose, `-q`, CSV): what it writes of each event and at the end. Its
/// first failed write takes it out of the run, said as the report's ([`report_failed`]).
pub trait Report {
    /// Writes what `ev` shows.
    fn write(&mut self, ev: &Event<'_>) -> io::Result<()>;
    /// Writes what comes after the last test, and flushes.
    fn end(&mut self) -> io::Result<()>;
}

impl<T: Report> Output for T {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        self.write(ev).map_err(report_failed)
    }

    fn finish(&mut self, _end: &RunEnd<'_>) -> Result<(), Error> {
        self.end().map_err(report_failed)
    }
}

/// A clock for the outputs that read one (the progress line): the wall clock, or a test's.
pub type Clock = Box<dyn FnMut() -> Instant>;

/// The report on stdout could not be written: said at the end, and the rest of it goes nowhere
/// (the other outputs go on).
pub fn report_failed(e: io::Error) -> Error {
    Error::Output(format!("the report (stdout): cannot write: {e}"))
}

/// What the sinks' tests feed them: literal results, steps and a run's start.
#[cfg(test)]
pub(crate) mod fixture {
    use std::cell::RefCell;
    use std::io::{self, Write};
    use std::rc::Rc;

    use respbench_core::{Stats, Time};
    use respbench_session::observer::BackendRun;
    use respbench_session::result::TestResult;
    use respbench_session::server::ServerInfo;

    use super::{Begin, Event, Output, RunEnd, Shape, Step};

    /// `name`'s result: 100 requests of 1 to 100 µs, one a microsecond from 1 ms on.
    pub fn result(name: &str) -> TestResult {
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap();
        for i in 0..100u64 {
            s.record(1_000 * (i + 1), 0, Time::from_micros(1_000 + i));
        }
        TestResult::new(name.into(), name.into(), s)
    }

    /// One backend's run of `results`.
    pub fn run(results: Vec<TestResult>) -> BackendRun {
        BackendRun { results, failures: Vec::new() }
    }

    /// A step of `runs` with 50 clients, 3-byte payloads, kept-alive connections.
    pub fn step(runs: &[BackendRun]) -> Step<'_> {
        Step {
            runs,
            label: None,
            partial: Vec::new(),
            shape: Shape {
                clients: 50,
                payload_bytes: 3,
                workload: Vec::new(),
                keepalive: true,
                threads: 0,
                percentiles: &[],
                poisson: false,
                series: false,
                open_loop: false,
                replay: false,
                show_errors: false,
                misses: None,
            },
        }
    }

    /// Feeds `events` to `sink` between the start of a run on `backends` and its end.
    pub fn feed(
        sink: &mut dyn Output,
        backends: &[&'static str],
        events: &[Event<'_>],
    ) -> Result<(), crate::error::Error> {
        let info = ServerInfo::default();
        let begin = Begin {
            backends: backends.to_vec(),
            width: 3,
            info: &info,
            server_b: None,
            epoch_us: 1_796_083_199_500_000,
        };
        sink.on(&Event::Begin(&begin))?;
        for ev in events {
            sink.on(ev)?;
        }
        let config = crate::doc::RunConfig::default();
        sink.finish(&RunEnd {
            interrupted: false,
            late_by_s: None,
            epoch_us: 1_796_083_199_500_000,
            config: &config,
            searches: &[],
        })
    }

    /// A buffer that a sink owns a handle of and a test reads after.
    #[derive(Clone, Default)]
    pub struct Shared(pub Rc<RefCell<Vec<u8>>>);

    impl Shared {
        /// What was written, as text.
        pub fn text(&self) -> String {
            String::from_utf8(self.0.borrow().clone()).unwrap()
        }
    }

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}
