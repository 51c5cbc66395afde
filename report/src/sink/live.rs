//! `--live`: a line on stderr for each second of a test, once every loop moved past it.

use std::io::Write;

use super::{Event, Output};
use crate::error::Error;

/// The seconds' lines. A failed write is let go, as stderr's.
pub struct Live<W: Write> {
    err: W,
}

impl<W: Write> Live<W> {
    /// The lines to `err`.
    pub fn new(err: W) -> Self {
        Live { err }
    }
}

impl<W: Write> Output for Live<W> {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        if let Event::Second { title, n, second } = ev {
            let _ = writeln!(self.err, "{}", crate::text::live_line(title, *n, second));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use respbench_core::stats::Second;

    /// A line per second.
    #[test]
    fn a_line_per_second() {
        let second = Second {
            requests: 1200,
            errors: 1,
            p50: 150,
            p90: 300,
            p99: 900,
            p999: 1500,
            max: 2100,
            bounds: false,
        };
        let mut err = Vec::new();
        let events = [Event::Second { title: "GET", n: 3, second: &second }];
        crate::sink::fixture::feed(&mut Live::new(&mut err), &["mio"], &events).unwrap();
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "GET: second 3: 1200 requests per second, p50=0.150 msec, p99=0.900 msec, errors 1\n"
        );
    }
}
