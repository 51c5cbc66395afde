//! `--hlog PATH`: the interval log, each test's latencies second by second, written as the
//! seconds close and flushed each time (a process ended at once by a late signal leaves every
//! interval already closed in the file).

use super::{Event, Output, RunEnd, Wants};
use crate::error::Error;
use crate::hlog::IntervalLog;

/// The interval log, opened when the run begins.
pub struct Hlog {
    path: String,
    log: Option<IntervalLog>,
}

impl Hlog {
    /// The log to be created at `path`.
    pub fn new(path: &str) -> Self {
        Hlog { path: path.to_string(), log: None }
    }
}

/// An error of the log (its message names the file).
fn failed(e: impl std::fmt::Display) -> Error {
    Error::Output(e.to_string())
}

impl Output for Hlog {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        match ev {
            Event::Begin(b) => self.log = Some(IntervalLog::create(&self.path, b.epoch_us).map_err(failed)?),
            Event::Intervals { tag, ended, end } => {
                if let Some(log) = &mut self.log {
                    for (start, s) in *ended {
                        log.write(tag, *start, *end, s).map_err(failed)?;
                    }
                    if !ended.is_empty() || end.is_some() {
                        log.flush().map_err(failed)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _end: &RunEnd<'_>) -> Result<(), Error> {
        match &mut self.log {
            Some(log) => log.finish().map_err(failed),
            None => Ok(()),
        }
    }

    fn wants(&self) -> Wants {
        Wants { intervals: true, ..Wants::default() }
    }
}

#[cfg(test)]
mod tests {
    use respbench_core::stats::Interval;
    use respbench_core::Time;

    use super::*;
    use crate::sink::fixture::feed;

    /// The header when the run begins, an interval line per second closed, the first test's
    /// untagged too.
    #[test]
    fn the_header_then_each_second() {
        let path = std::env::temp_dir().join(format!("respbench-sink-hlog-{}.hlog", std::process::id()));
        let mut s = Interval::new();
        s.latency.record(100).unwrap();
        let ended = [(Time::from_micros(2_000_000), s)];
        let events = [Event::Intervals { tag: "GET", ended: &ended, end: None }];
        feed(&mut Hlog::new(path.to_str().unwrap()), &["mio"], &events).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        // The version is the crate's; 100 µs is 100,000 ns, of max 0.100 ms.
        let expected = [
            "#[Logged with respbench {}: latencies in nanoseconds, one interval per second of each test; Tag=TEST the latency (open loop: from the intended send), Tag=TEST.service the open loop's service time; the first test's latency also untagged]\n",
            "#[Histogram log format version 1.3]\n",
            "#[StartTime: 1796083199.500 (seconds since epoch), 2026-11-30T23:59:59Z]\n",
            "#[BaseTime: 1796083199.500 (seconds since epoch)]\n",
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
            "2.000,1.000,0.100,HISTFAAAACZ4nJNpmSzMwMDAzAABTBCK+QUDA1tPYqEDg/0HiEgrMxMAbfwFlA==\n",
            "Tag=GET,2.000,1.000,0.100,HISTFAAAACZ4nJNpmSzMwMDAzAABTBCK+QUDA1tPYqEDg/0HiEgrMxMAbfwFlA==\n",
        ]
        .concat()
        .replace("{}", env!("CARGO_PKG_VERSION"));
        assert_eq!(text, expected);
    }
}
