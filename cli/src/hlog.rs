//! `--hlog PATH`: HdrHistogram's interval log, streamed while the run goes.
//!
//! The format of HdrHistogram's `HistogramLogWriter` (Java), which its `HistogramLogReader`,
//! the Python `hdrh` reader, wrk2 and the HdrHistogram log analysers read: a few `#[...]` header
//! lines, a legend, then one line per interval, `Tag=TEST,START,LENGTH,MAX,HISTOGRAM`: the start
//! in seconds since `BaseTime`, the length in seconds, the highest latency in milliseconds, and
//! the interval's histogram (microseconds) in the V2 deflate encoding, base64. One interval per
//! second of every test; each is written once every event loop has moved past it, and then
//! forgotten, so the log costs no memory over a long run.

use std::fs::File;
use std::io::{self, BufWriter, Write};

use respbench_core::stats::Interval;
use respbench_core::Time;

use crate::json::encode_histogram;

/// An open interval log.
pub struct IntervalLog {
    out: BufWriter<File>,
    path: String,
    /// The run's epoch in microseconds since the Unix epoch: the log's `BaseTime`.
    base_us: u64,
}

impl IntervalLog {
    /// Creates the file at `path` and writes the header; `base_us` is the run's epoch in
    /// microseconds since the Unix epoch.
    pub fn create(path: &str, base_us: u64) -> Result<IntervalLog, String> {
        let file = File::create(path).map_err(|e| format!("--hlog {path}: cannot create it: {e}"))?;
        let mut log = IntervalLog { out: BufWriter::new(file), path: path.to_string(), base_us };
        log.header().map_err(|e| log.failed(&e))?;
        Ok(log)
    }

    fn header(&mut self) -> io::Result<()> {
        let secs = self.base_us as f64 / 1e6;
        let out = &mut self.out;
        writeln!(
            out,
            "#[Logged with respbench {}: latencies in microseconds, one interval per second of each test, tagged with the test]",
            env!("CARGO_PKG_VERSION")
        )?;
        writeln!(out, "#[Histogram log format version 1.3]")?;
        writeln!(out, "#[StartTime: {secs:.3} (seconds since epoch), {}]", utc(self.base_us / 1_000_000))?;
        writeln!(out, "#[BaseTime: {secs:.3} (seconds since epoch)]")?;
        writeln!(
            out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        out.flush()
    }

    /// Writes one second of test `tag` that began at `start` (the run's clock); `end`, when the
    /// test is over, cuts its last second short.
    pub fn write(&mut self, tag: &str, start: Time, end: Option<Time>, s: &Interval) -> Result<(), String> {
        let data = encode_histogram(&s.latency)?;
        let length = match end {
            Some(end) if end > start => (end.nanos_since(start) as f64 / 1e9).min(1.0),
            _ => 1.0,
        };
        let max_ms = if s.latency.is_empty() { 0.0 } else { s.latency.max() as f64 / 1000.0 };
        let line = format!(
            "Tag={},{:.3},{length:.3},{max_ms:.3},{data}\n",
            tag_of(tag),
            start.nanos_since(Time::ZERO) as f64 / 1e9,
        );
        self.out.write_all(line.as_bytes()).map_err(|e| self.failed(&e))
    }

    /// Pushes what is buffered to the file (after each test, and at the end).
    pub fn flush(&mut self) -> Result<(), String> {
        self.out.flush().map_err(|e| self.failed(&e))
    }

    fn failed(&self, e: &io::Error) -> String {
        format!("--hlog {}: cannot write: {e}", self.path)
    }
}

/// A test's name as a tag: the format ends a tag at its first comma, and a line at a newline.
fn tag_of(name: &str) -> String {
    name.chars().map(|c| if c == ',' || c.is_control() { ' ' } else { c }).collect()
}

/// Seconds since the Unix epoch as an ISO 8601 UTC date and time (the header's readable date).
fn utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm), for dates from 1970 on.
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_083_199), "2026-11-30T23:59:59Z");
    }

    #[test]
    fn the_log_reads_back_with_hdrhistograms_reader() {
        let path = std::env::temp_dir().join(format!("respbench-hlog-unit-{}.hlog", std::process::id()));
        let path = path.to_str().unwrap();
        let mut log = IntervalLog::create(path, 1_796_083_199_500_000).unwrap();
        let mut s = Interval::new();
        for v in [100, 200, 300] {
            s.latency.record(v).unwrap();
        }
        log.write("SET, then GET", Time::from_micros(2_000_000), None, &s).unwrap();
        log.write("GET", Time::from_micros(3_000_000), Some(Time::from_micros(3_250_000)), &s).unwrap();
        log.flush().unwrap();
        let text = std::fs::read(path).unwrap();
        let _ = std::fs::remove_file(path);
        let mut intervals = Vec::new();
        for e in IntervalLogIterator::new(&text) {
            match e.unwrap() {
                LogEntry::StartTime(t) => assert!((t.as_secs_f64() - 1_796_083_199.5).abs() < 1e-3),
                LogEntry::BaseTime(t) => assert!((t.as_secs_f64() - 1_796_083_199.5).abs() < 1e-3),
                LogEntry::Interval(i) => intervals.push((
                    i.tag().map(|t| t.as_str().to_string()),
                    i.start_timestamp().as_millis(),
                    i.duration().as_millis(),
                    i.max(),
                    crate::json::decode_histogram(i.encoded_histogram()).unwrap().len(),
                )),
            }
        }
        assert_eq!(
            intervals,
            [
                (Some("SET  then GET".to_string()), 2000, 1000, 0.301, 3),
                (Some("GET".to_string()), 3000, 250, 0.301, 3)
            ]
        );
    }
}
