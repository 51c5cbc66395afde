//! `--csv`: redis-benchmark's CSV on stdout, which then carries CSV only: a header, a row per
//! test (with an open loop's, a sweep's and a replay's columns), its events, a ramp's steps and
//! a delivery's figures; side by side, a row per test of every backend; `--slo`'s search.

use std::io::{self, Write};

use respbench_session::config::Output;

use super::{Event, Layout, Report};
use crate::text as report;

/// The columns a run's CSV has besides redis-benchmark's.
#[derive(Clone, Copy, Debug, Default)]
pub struct Columns {
    /// An open loop's (`--rps`, `--rate`).
    pub open_loop: bool,
    /// A sweep's.
    pub sweep: bool,
    /// `--replay`'s.
    pub replay: bool,
    /// `--slo`: the search's table instead of the tests' rows.
    pub capacity: bool,
    /// `--dataset-only`: no test runs, so no tests' header.
    pub dataset_only: bool,
}

/// The CSV report.
pub struct Csv<W: Write> {
    out: W,
    columns: Columns,
    layout: Layout,
}

impl<W: Write> Csv<W> {
    /// The report to `out`, with `columns`.
    pub fn new(out: W, columns: Columns) -> Self {
        Csv { out, columns, layout: Layout::default() }
    }
}

impl<W: Write> Report for Csv<W> {
    fn write(&mut self, ev: &Event<'_>) -> io::Result<()> {
        let out = &mut self.out;
        match ev {
            Event::Begin(b) => {
                self.layout.begin(b);
                let c = self.columns;
                if self.layout.comparing {
                    report::write_compare_header(true, &b.backends, b.width, out)?;
                } else if c.capacity {
                    writeln!(out, "{}", crate::capacity::CSV_HEADER)?;
                } else if !c.dataset_only {
                    let extra = if c.open_loop { report::CSV_OPEN_LOOP_COLUMNS } else { "" };
                    let sweep = if c.sweep { report::CSV_SWEEP_COLUMNS } else { "" };
                    let replay = if c.replay { report::CSV_REPLAY_COLUMNS } else { "" };
                    writeln!(
                        out,
                        "{}{extra}{sweep}{}{replay}",
                        report::CSV_HEADER,
                        report::CSV_ACCOUNT_COLUMNS
                    )?;
                }
            }
            Event::Step(s) if self.layout.comparing => s.write_side_by_side(true, self.layout.width, out)?,
            Event::Step(s) => {
                for (entry, title) in s.shown(true) {
                    let r = s.report(entry, &title, &self.layout.info);
                    // Every row of an open-loop run has the extra columns, a mix's commands too.
                    let mut row = Vec::new();
                    let open = s.shape.open_loop.then_some(entry);
                    report::write_csv_row(&r.line(), open, entry.step.as_ref(), &mut row)?;
                    if s.shape.replay {
                        row.pop();
                        row.extend_from_slice(report::csv_replay_columns(entry).as_bytes());
                        row.push(b'\n');
                    }
                    out.write_all(&row)?;
                    crate::events::write_csv(entry, out)?;
                    report::write_ramp_csv(entry, out)?;
                    report::write_delivery_csv(entry, out)?;
                    crate::notify::write_csv(entry, out)?;
                    crate::cursor::write_csv(entry, out)?;
                    crate::dataset::write_misses(s.shape.misses.as_deref(), entry, true, out)?;
                    crate::groups::write(Output::Csv, entry, s.shape.percentiles, out)?;
                    out.flush()?;
                }
            }
            Event::CapacityDone(found) => crate::capacity::write_csv(found, out)?,
            Event::Dataset(built) => crate::dataset::write_csv(built, out)?,
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::fixture::{feed, result, run, step};

    /// The header, then a row per result of a mix (its command, then its total).
    #[test]
    fn a_row_per_result_under_the_header() {
        let runs = [run(vec![result("GET"), result("TOTAL")])];
        let mut out = Vec::new();
        feed(&mut Csv::new(&mut out, Columns::default()), &["mio"], &[Event::Step(&step(&runs))]).unwrap();
        let rows = [
            concat!(
                "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",",
                "\"p99_latency_ms\",\"max_latency_ms\",\"errors\",\"abandoned\",\"unsent\",\"bottleneck\"\n"
            ),
            // 100 requests in 1.099 ms; 1 to 100 µs.
            "\"GET\",\"90991.81\",\"0.051\",\"0.001\",\"0.050\",\"0.095\",\"0.099\",\"0.100\",\"0\",\"0\",\"0\",\"\"\n",
            "\"TOTAL\",\"90991.81\",\"0.051\",\"0.001\",\"0.050\",\"0.095\",\"0.099\",\"0.100\",\"0\",\"0\",\"0\",\"\"\n",
        ];
        assert_eq!(String::from_utf8(out).unwrap(), rows.concat());
    }

    /// Side by side: each backend's rps and p50 in a row per test.
    #[test]
    fn backends_side_by_side() {
        let runs = [run(vec![result("GET")]), run(vec![result("GET")])];
        let mut out = Vec::new();
        feed(&mut Csv::new(&mut out, Columns::default()), &["mio", "smol"], &[Event::Step(&step(&runs))])
            .unwrap();
        let rows = [
            concat!(
                "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",",
                "\"p99_latency_ms\",\"max_latency_ms\",\"cpu_us_per_request\",\"cpu_core_share\",\"bottleneck\",\"backend\"\n"
            ),
            "\"GET\",\"90991.81\",\"0.051\",\"0.001\",\"0.050\",\"0.095\",\"0.099\",\"0.100\",\"0.00\",\"0.000\",\"\",\"\"\n",
        ];
        assert_eq!(String::from_utf8(out).unwrap(), [rows[0], rows[1], rows[1]].concat());
    }
}
