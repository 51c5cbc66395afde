//! stderr's lines: errors the run went on after, always; what it noticed, each test's warnings
//! and `--slo`'s steps on a terminal only (a run to a file or pipe keeps stderr for errors);
//! connections that failed; with `--csv` each test's error replies (stdout carries CSV only);
//! `-e`'s error messages.

use std::io::Write;

use respbench_session::capacity::Capacity;

use super::{Event, Layout, Output};
use crate::error::Error;

/// The lines on stderr. A failed write is let go: the run's status stays the run's.
pub struct Warnings<W: Write> {
    err: W,
    /// Whether stderr is a terminal: only then does it show what the run noticed.
    tty: bool,
    /// `--csv`: each test's error replies are said here.
    csv: bool,
    /// `-q --rps`: the rate table stands for the tests' lines (and their error replies).
    quiet_table: bool,
    /// `--slo`: the objectives, for the search's steps.
    searching: Option<Capacity>,
    /// Side by side, each warning names its backend.
    layout: Layout,
}

impl<W: Write> Warnings<W> {
    /// stderr's lines to `err`; `tty`: it is a terminal; `csv`: stdout carries CSV; `quiet_table`:
    /// `-q --rps`; `searching`: `--slo`'s objectives.
    pub fn new(err: W, tty: bool, csv: bool, quiet_table: bool, searching: Option<Capacity>) -> Self {
        Warnings { err, tty, csv, quiet_table, searching, layout: Layout::default() }
    }
}

impl<W: Write> Output for Warnings<W> {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        let err = &mut self.err;
        match ev {
            Event::Begin(b) => self.layout.begin(b),
            Event::Message(line) if self.tty => {
                let _ = writeln!(err, "{line}");
            }
            Event::Error(line) => {
                let _ = writeln!(err, "{line}");
            }
            Event::Step(s) => {
                if !self.layout.comparing && !self.quiet_table {
                    for (entry, title) in s.shown(self.csv) {
                        if self.csv {
                            let _ = crate::text::write_errors(
                                &s.report(entry, &title, &self.layout.info),
                                true,
                                err,
                            );
                        }
                        if s.shape.show_errors {
                            for k in entry.stats.errors.kinds() {
                                let _ = writeln!(err, "Error from server: {}", k.first_message);
                            }
                        }
                    }
                }
                for e in s.runs.iter().flat_map(|r| &r.results).filter(|_| self.tty) {
                    let on = match (&e.backend, self.layout.comparing) {
                        (Some(b), true) => format!(" ({b})"),
                        _ => String::new(),
                    };
                    for w in &e.warnings {
                        let _ = writeln!(err, "WARNING: {}{on}", w.text);
                    }
                }
                // How many connections failed, and why.
                for run in s.runs {
                    let last = &run.results[run.results.len() - 1];
                    for (e, n) in &run.failures {
                        let plural = if *n == 1 { "" } else { "s" };
                        let on = if self.layout.comparing {
                            format!(" ({})", last.backend.as_deref().unwrap_or(""))
                        } else {
                            String::new()
                        };
                        let _ = writeln!(err, "{}{on}: {n} connection{plural} failed: {e}", last.name);
                    }
                }
            }
            Event::CapacityProbe { test, probe } if self.tty => {
                let rps = probe.stats.rps();
                let _ = writeln!(err, "{test}: closed-loop probe: {rps:.0} rps, the top of the search");
            }
            Event::CapacityStep { test, n, most, step } if self.tty => {
                if let Some(c) = &self.searching {
                    let _ = writeln!(err, "{}", crate::capacity::step_line(test, *n, *most, c, step));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::fixture::{feed, result, run, step};
    use respbench_core::ConnError;

    /// Errors always; notices and each test's warnings on a terminal only; failed connections.
    #[test]
    fn errors_always_notices_on_a_terminal() {
        let mut warned = result("GET");
        warned.warnings.push(respbench_session::result::Warning {
            kind: respbench_session::result::WarningKind::NilReplies,
            text: "GET: 99.0% of the replies were nil".into(),
            figures: Vec::new(),
        });
        let mut runs = [run(vec![warned])];
        runs[0].failures.push((ConnError::Closed { in_flight: 1 }, 2));
        let events =
            [Event::Message("preloaded 10 keys"), Event::Error("reconnected"), Event::Step(&step(&runs))];
        let failed = "GET: 2 connections failed: server closed the connection with 1 requests unanswered\n";
        let on_tty =
            ["preloaded 10 keys\n", "reconnected\n", "WARNING: GET: 99.0% of the replies were nil\n", failed];
        for (tty, expected) in [(true, on_tty.concat()), (false, ["reconnected\n", failed].concat())] {
            let mut err = Vec::new();
            feed(&mut Warnings::new(&mut err, tty, false, false, None), &["mio"], &events).unwrap();
            assert_eq!(String::from_utf8(err).unwrap(), expected);
        }
    }
}
