//! The progress line on a terminal's stderr, redrawn in place as a test runs (as
//! redis-benchmark's), and taken off before any other line goes there.

use std::io::Write;
use std::time::{Duration, Instant};

use respbench_session::observer::Tick;

use super::{Clock, Event, Output, Wants};
use crate::error::Error;
use crate::text as report;

/// How often the line is redrawn, as in redis-benchmark.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The progress line. A failed write is let go, as stderr's.
pub struct Progress<W: Write> {
    err: W,
    /// The clock the rates are read on.
    now: Clock,
    /// The terminal's width, when it says.
    columns: fn() -> Option<usize>,
    /// The test it is of, when it was drawn, what it showed (requests done) and its width.
    drawn_for: Option<Instant>,
    last_draw: Instant,
    last_done: u64,
    drawn: usize,
}

impl<W: Write> Progress<W> {
    /// The line on `err`, at most `columns()` wide, its rates read on `now`.
    pub fn new(err: W, mut now: Clock, columns: fn() -> Option<usize>) -> Self {
        let last_draw = now();
        Progress { err, now, columns, drawn_for: None, last_draw, last_done: 0, drawn: 0 }
    }

    /// Takes the line off the terminal.
    fn clear(&mut self) {
        if self.drawn > 0 {
            let _ = write!(self.err, "{}", report::clear_progress(self.drawn));
            self.drawn = 0;
        }
    }

    /// Redraws the line for `t`, at most every [`PROGRESS_EVERY`].
    fn draw(&mut self, t: &Tick<'_>) {
        if self.drawn_for != Some(t.started) {
            self.drawn_for = Some(t.started);
            self.last_draw = t.started;
            self.last_done = 0;
        }
        let now = (self.now)();
        let since = now.saturating_duration_since(self.last_draw);
        if since < PROGRESS_EVERY {
            return;
        }
        let dt = since.as_secs_f64();
        self.last_draw = now;
        let done = t.completed;
        let elapsed_s = now.saturating_duration_since(t.started).as_secs_f64();
        let line = report::progress_line(&report::Progressed {
            title: t.title,
            elapsed_s,
            goal: t.goal,
            completed: done,
            rps_now: done.saturating_sub(self.last_done) as f64 / dt,
            rps_overall: done as f64 / elapsed_s,
            p99_ms: t.p99_micros.map(|v| v as f64 / 1000.0),
        });
        // A line wider than the terminal would wrap, and `\r` would redraw only its last row.
        let line = report::fit_progress(&line, (self.columns)());
        let _ =
            write!(self.err, "{}{line}", report::clear_progress(self.drawn)).and_then(|_| self.err.flush());
        self.drawn = line.chars().count();
        self.last_done = done;
    }
}

impl<W: Write> Output for Progress<W> {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        match ev {
            Event::Progress(t) => self.draw(t),
            Event::ProgressEnd => {
                self.clear();
                self.drawn_for = None;
            }
            // Before another line goes to the terminal.
            Event::Message(_) | Event::Error(_) | Event::Dataset(_) => self.clear(),
            _ => {}
        }
        Ok(())
    }

    fn wants(&self) -> Wants {
        Wants { progress: true, ..Wants::default() }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use respbench_session::observer::Goal;

    use super::*;

    /// Drawn once 250 ms passed on the clock, redrawn over itself, and taken off before a
    /// notice and at the test's end.
    #[test]
    fn drawn_in_place_and_cleared() {
        let start = Instant::now();
        let at = Rc::new(Cell::new(start));
        let clock = Rc::clone(&at);
        let mut err = Vec::new();
        let mut p = Progress::new(&mut err, Box::new(move || clock.get()), || Some(90));
        let tick = |completed| Tick {
            title: "GET",
            started: start,
            completed,
            p99_micros: Some(1500),
            goal: Goal::Requests(10_000),
        };
        let mut feed = |ms: u64, ev: &Event<'_>| {
            at.set(start + Duration::from_millis(ms));
            p.on(ev).unwrap();
        };
        feed(100, &Event::Progress(&tick(100)));
        feed(500, &Event::Progress(&tick(1000)));
        feed(1000, &Event::Progress(&tick(2500)));
        feed(1000, &Event::Message("WARNING: a notice"));
        feed(1000, &Event::ProgressEnd);
        drop(p);
        // The first tick came before 250 ms: no line. Each clear is spaces over the line drawn.
        let first =
            "[GET: 10%, 0.5 s, 4.5 s left] 2000 rps (now 2000), p99 1.500 msec, 1000 of 10000 requests";
        let second =
            "[GET: 25%, 1.0 s, 3.0 s left] 2500 rps (now 3000), p99 1.500 msec, 2500 of 10000 requests";
        // The line's `\r` counts in its width; the first clear is of nothing drawn.
        let clear = format!("{}\r", " ".repeat(first.len() + 1));
        assert_eq!(String::from_utf8(err).unwrap(), format!(" \r{first}\r{clear}{second}\r{clear}"));
    }
}
