//! `-q`: redis-benchmark's one line per test on stdout (or, for `--rps`, a table of rates), the
//! sweep and capacity tables.

use std::io::{self, Write};

use respbench_session::config::Output;

use super::{Event, Layout, Report};
use crate::text as report;

/// The quiet report.
pub struct Quiet<W: Write> {
    out: W,
    /// `--rps`' steps are summed up in a table, which stands for their lines.
    rate_table: bool,
    layout: Layout,
}

impl<W: Write> Quiet<W> {
    /// The report to `out`; `rate_table`: `--rps` (not `--rate`) sums up its steps in a table.
    pub fn new(out: W, rate_table: bool) -> Self {
        Quiet { out, rate_table, layout: Layout::default() }
    }
}

impl<W: Write> Report for Quiet<W> {
    fn write(&mut self, ev: &Event<'_>) -> io::Result<()> {
        let out = &mut self.out;
        match ev {
            Event::Begin(b) => self.layout.begin_text(b, out)?,
            Event::Step(s) if self.layout.comparing => s.write_side_by_side(false, self.layout.width, out)?,
            Event::Step(s) if self.rate_table => {
                for (entry, _) in s.shown(false) {
                    if s.shape.series {
                        // The rate table stands for the quiet lines; --series still asked for
                        // each step's seconds.
                        writeln!(out, "{} @ {} rps:", entry.name, entry.target_rps.unwrap_or(0))?;
                        report::write_series(&entry.stats, out)?;
                        crate::server_series::write_series(entry, out)?;
                    }
                    // And each event's line (the table has no room for them), and a ramp's steps.
                    crate::events::write_quiet(entry, out)?;
                    report::write_ramp(entry, false, out)?;
                    report::write_delivery_quiet(entry, out)?;
                    crate::notify::write_quiet(entry, out)?;
                    crate::cursor::write_quiet(entry, out)?;
                }
            }
            Event::Step(s) => {
                for (k, (entry, title)) in s.shown(false).into_iter().enumerate() {
                    let r = s.report(entry, &title, &self.layout.info);
                    let partial = s.partial.get(k).and_then(Option::as_deref);
                    report::write_quiet_marked(&r.line(), partial, out)?;
                    report::write_replay(entry, true, out)?;
                    report::write_errors(&r, true, out)?;
                    report::write_verify(&entry.stats.verify, Some(r.title), out)?;
                    crate::events::write_quiet(entry, out)?;
                    report::write_ramp(entry, false, out)?;
                    report::write_delivery_quiet(entry, out)?;
                    crate::notify::write_quiet(entry, out)?;
                    crate::cursor::write_quiet(entry, out)?;
                    crate::dataset::write_misses(s.shape.misses.as_deref(), entry, false, out)?;
                    if s.shape.series {
                        report::write_series(&entry.stats, out)?;
                        crate::server_series::write_series(entry, out)?;
                    }
                    crate::groups::write(Output::Quiet, entry, s.shape.percentiles, out)?;
                    out.flush()?;
                }
            }
            Event::Dataset(built) => crate::dataset::write_text(built, out)?,
            Event::Rates { steps, poisson } => {
                if self.rate_table {
                    report::write_rate_table(steps, *poisson, out)?;
                }
                // -q shows only the table (or, with --rate, each test's line): the steps that
                // did not keep their schedule say so.
                report::write_schedules_not_kept(steps, out)?;
            }
            _ => super::write_text_tables(ev, out)?,
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        if !self.layout.comparing && !self.rate_table {
            let _ = writeln!(self.out);
        }
        self.layout.end_text(&mut self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::fixture::{feed, result, run, step};

    /// A line per test, marked when a Ctrl-C cut it short, and the blank line at the end.
    #[test]
    fn a_line_per_test() {
        let runs = [run(vec![result("SET"), result("GET")])];
        let mut s = step(&runs);
        s.partial = vec![None, Some("interrupted after 100 of 200 requests".into())];
        let mut out = Vec::new();
        feed(&mut Quiet::new(&mut out, false), &["mio"], &[Event::Step(&s)]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            concat!(
                "SET: 90991.81 requests per second, p50=0.050 msec\n",
                "GET: 90991.81 requests per second, p50=0.050 msec, partial: interrupted after 100 of 200 requests\n",
                "\n"
            )
        );
    }

    /// `--rps`' table stands for the lines; the rows are the rates' totals.
    #[test]
    fn rates_in_a_table() {
        let mut steps = [result("GET"), result("GET")];
        steps[0].target_rps = Some(1000);
        steps[1].target_rps = Some(2000);
        let runs = [run(vec![steps[0].clone()])];
        let mut out = Vec::new();
        let events = [Event::Step(&step(&runs)), Event::Rates { steps: &steps, poisson: false }];
        feed(&mut Quiet::new(&mut out, true), &["mio"], &events).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            concat!(
                "GET: open loop, constant arrivals\n",
                "    target rps     achieved  p50 msec  p99 msec p99.9 msec service p50 service p99   errors bottleneck\n",
                "          1000     90991.81     0.050     0.099      0.100       0.000       0.000        0           \n",
                "          2000     90991.81     0.050     0.099      0.100       0.000       0.000        0           \n",
                "\n"
            )
        );
    }
}
