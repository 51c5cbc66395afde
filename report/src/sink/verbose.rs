//! redis-benchmark's verbose report on stdout: each test's header, distribution and summary,
//! the nodes found, what the run noticed when stderr is not a terminal, and the sweep, rate and
//! capacity tables.

use std::io::{self, Write};

use respbench_session::config::Output;

use respbench_session::topology;

use super::{Event, Layout, Report};
use crate::text as report;

/// The verbose report.
pub struct Verbose<W: Write> {
    out: W,
    /// Whether stderr is a terminal (which then shows what the run noticed).
    stderr_tty: bool,
    /// `--rps`' steps are summed up in a table.
    rate_table: bool,
    layout: Layout,
}

impl<W: Write> Verbose<W> {
    /// The report to `out`; `stderr_tty`: stderr shows what the run noticed (else `out` does);
    /// `rate_table`: `--rps` (not `--rate`) sums up its steps in a table.
    pub fn new(out: W, stderr_tty: bool, rate_table: bool) -> Self {
        Verbose { out, stderr_tty, rate_table, layout: Layout::default() }
    }
}

impl<W: Write> Report for Verbose<W> {
    fn write(&mut self, ev: &Event<'_>) -> io::Result<()> {
        let out = &mut self.out;
        match ev {
            Event::Begin(b) => self.layout.begin_text(b, out)?,
            // As redis-benchmark prints its own warnings, on stdout.
            Event::Message(line) if !self.stderr_tty => writeln!(out, "{line}")?,
            Event::Nodes(m) => {
                // As redis-benchmark opens a cluster run: the nodes it found.
                writeln!(out, "{}", topology::describe(&m.topology))?;
                writeln!(out, "{}\n", m.describe_keys())?;
            }
            Event::Dataset(built) => crate::dataset::write_text(built, out)?,
            Event::Step(s) if self.layout.comparing => s.write_side_by_side(false, self.layout.width, out)?,
            Event::Step(s) => {
                for (entry, title) in s.shown(false) {
                    let r = s.report(entry, &title, &self.layout.info);
                    report::write_verbose(&r, out)?;
                    report::write_open_loop(entry, s.shape.poisson, out)?;
                    report::write_replay(entry, false, out)?;
                    report::write_time(entry, out)?;
                    crate::server_series::write_verbose(entry, out)?;
                    report::write_errors(&r, false, out)?;
                    for w in &entry.warnings {
                        writeln!(out, "  WARNING: {}", w.text)?;
                    }
                    crate::events::write_verbose(entry, out)?;
                    crate::notify::write_verbose(entry, out)?;
                    crate::cursor::write_verbose(entry, out)?;
                    report::write_ramp(entry, true, out)?;
                    if s.shape.series {
                        report::write_series(&entry.stats, out)?;
                        crate::server_series::write_series(entry, out)?;
                    }
                    writeln!(out)?;
                    crate::groups::write(Output::Verbose, entry, s.shape.percentiles, out)?;
                    out.flush()?;
                }
            }
            Event::Rates { steps, poisson } if self.rate_table => {
                report::write_rate_table(steps, *poisson, out)?
            }
            _ => super::write_text_tables(ev, out)?,
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        self.layout.end_text(&mut self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::fixture::{feed, result, run, step};

    /// What the run noticed goes to stdout when stderr is no terminal; then each test's report.
    #[test]
    fn notices_then_the_report() {
        let runs = [run(vec![result("GET")])];
        let mut out = Vec::new();
        let events = [Event::Message("WARNING: a notice"), Event::Step(&step(&runs))];
        feed(&mut Verbose::new(&mut out, false, false), &["mio"], &events).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            concat!(
                "WARNING: a notice\n",
                "====== GET ======\n",
                "  100 requests completed in 0.00 seconds\n",
                "  50 parallel clients\n",
                "  3 bytes payload\n",
                "  keep alive: 1\n",
                "  multi-thread: no\n",
                "\n",
                "Latency by percentile distribution:\n",
                "0.000% <= 0.001 milliseconds (cumulative count 1)\n",
                "50.000% <= 0.050 milliseconds (cumulative count 50)\n",
                "75.000% <= 0.075 milliseconds (cumulative count 75)\n",
                "87.500% <= 0.088 milliseconds (cumulative count 88)\n",
                "93.750% <= 0.094 milliseconds (cumulative count 94)\n",
                "96.875% <= 0.097 milliseconds (cumulative count 97)\n",
                "98.438% <= 0.099 milliseconds (cumulative count 99)\n",
                "99.219% <= 0.100 milliseconds (cumulative count 100)\n",
                "100.000% <= 0.100 milliseconds (cumulative count 100)\n",
                "\n",
                "Cumulative distribution of latencies:\n",
                "100.000% <= 0.100 milliseconds (cumulative count 100)\n",
                "\n",
                "Summary:\n",
                "  throughput summary: 90991.81 requests per second\n",
                "  latency summary (msec):\n",
                "          avg       min       p50       p95       p99       max\n",
                "        0.051     0.001     0.050     0.095     0.099     0.100\n",
                "  hits: 100.0% (0 nil replies: keys that did not exist)\n",
                "  where the time went (msec; each part's own percentile: the parts of a request add up, their percentiles need not):\n",
                "                                                   p50           p99         p99.9\n",
                "    corrected latency                            0.050         0.099         0.100\n",
                "    = service time (closed loop)                 0.050         0.099         0.100\n",
                "\n",
            )
        );
    }

    /// On a terminal's stderr, the notice is stderr's: stdout has the report only.
    #[test]
    fn notices_stay_off_stdout_on_a_terminal() {
        let mut out = Vec::new();
        feed(&mut Verbose::new(&mut out, true, false), &["mio"], &[Event::Message("WARNING: a notice")])
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "");
    }
}
