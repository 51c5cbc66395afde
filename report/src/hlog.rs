//! `--hlog PATH`: HdrHistogram's interval log, streamed while the run goes.
//!
//! The format of HdrHistogram's `HistogramLogWriter` (Java), which its `HistogramLogReader` and
//! `HistogramLogProcessor`, the Python `hdrh` reader, wrk2 and the HdrHistogram log analysers
//! read: a few `#[...]` header lines, a legend, then one line per interval,
//! `Tag=TAG,START,LENGTH,MAX,HISTOGRAM`: the start in seconds since `BaseTime`, the length in
//! seconds, the highest value in milliseconds, and the interval's histogram in the V2 deflate
//! encoding, base64. One interval per second of every test; each is written once every event
//! loop has moved past it, and then forgotten, so the log costs no memory over a long run.
//!
//! What the format's users expect, from its tools' defaults:
//! - Values are **nanoseconds**: `HistogramLogProcessor` divides by 10^6 to print milliseconds
//!   unless told otherwise (`-outputValueUnitRatio`). respbench records microseconds; each
//!   bucket is written at its highest equivalent value times 1000.
//! - `HistogramLogProcessor` without `-tag` reads only the lines without a tag (and fails on a
//!   log that has none), so the **first test's latency is written untagged too**; every line
//!   is also tagged.
//! - Tags: `TEST` (the test's title as in the report with `_` for each space and comma, which the
//!   Java reader takes as field separators: `GET_@_2000_rps` for an open-loop step, `GET_(mio)`
//!   when comparing backends) is the latency the report shows: in an open loop from the intended
//!   send time, corrected for coordinated omission. `TEST.service` (open loop only) is the
//!   service time, from the actual send.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use hdrhistogram::Histogram;
use respbench_core::stats::{Interval, HIGHEST_MICROS};
use respbench_core::Time;

use crate::error::Error;
use crate::shared::{tag_of, utc};

/// An open interval log.
pub struct IntervalLog {
    out: BufWriter<crate::files::Live>,
    path: String,
    /// The run's epoch in microseconds since the Unix epoch: the log's `BaseTime`.
    base_us: u64,
    /// The first test's tag, whose latency is also written untagged.
    first: Option<String>,
}

impl IntervalLog {
    /// Creates the file at `path` (mode 0600 until [`IntervalLog::finish`]; a symlink there is
    /// never followed: see [`crate::files::Live`]) and writes the header; `base_us` is the run's
    /// epoch in microseconds since the Unix epoch.
    pub fn create(path: &str, base_us: u64) -> Result<IntervalLog, Error> {
        let file = crate::files::Live::create(Path::new(path))
            .map_err(|source| Error::Io { what: format!("--hlog {path}: cannot create it"), source })?;
        let mut log = IntervalLog { out: BufWriter::new(file), path: path.to_string(), base_us, first: None };
        log.header().map_err(|e| log.failed(e))?;
        Ok(log)
    }

    fn header(&mut self) -> io::Result<()> {
        let secs = self.base_us as f64 / 1e6;
        let out = &mut self.out;
        writeln!(
            out,
            "#[Logged with respbench {}: latencies in nanoseconds, one interval per second of each test; Tag=TEST the \
             latency (open loop: from the intended send), Tag=TEST.service the open loop's service time; the first \
             test's latency also untagged]",
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
    pub fn write(&mut self, tag: &str, start: Time, end: Option<Time>, s: &Interval) -> Result<(), Error> {
        let length = match end {
            Some(end) if end > start => (end.nanos_since(start) as f64 / 1e9).min(1.0),
            _ => 1.0,
        };
        let at = start.nanos_since(Time::ZERO) as f64 / 1e9;
        let first = self.first.get_or_insert_with(|| tag.to_string()) == tag;
        let latency = interval_line(&s.latency, at, length)?;
        let mut text = String::new();
        if first {
            text.push_str(&latency);
        }
        text.push_str(&format!("Tag={},{latency}", tag_of(tag)));
        if let Some(service) = &s.service {
            text.push_str(&format!("Tag={}.service,{}", tag_of(tag), interval_line(service, at, length)?));
        }
        self.out.write_all(text.as_bytes()).map_err(|e| self.failed(e))
    }

    /// Pushes what is buffered to the file (after each test, and at the end).
    pub fn flush(&mut self) -> Result<(), Error> {
        self.out.flush().map_err(|e| self.failed(e))
    }

    /// The run is over: pushes what is buffered and gives the file its usual mode.
    pub fn finish(&mut self) -> Result<(), Error> {
        self.flush()?;
        self.out.get_ref().publish().map_err(|e| self.failed(e))
    }

    fn failed(&self, source: io::Error) -> Error {
        Error::Io { what: format!("--hlog {}: cannot write", self.path), source }
    }
}

/// `START,LENGTH,MAX,HISTOGRAM\n` of a histogram in microseconds, written in nanoseconds.
fn interval_line(us: &Histogram<u64>, start_s: f64, length_s: f64) -> Result<String, Error> {
    let data = crate::codec::encode_histogram(&in_nanos(us)?)?;
    let max_ms = if us.is_empty() { 0.0 } else { us.max() as f64 / 1000.0 };
    Ok(format!("{start_s:.3},{length_s:.3},{max_ms:.3},{data}\n"))
}

/// A histogram of microseconds as one of nanoseconds, the unit HdrHistogram's log tools assume:
/// each bucket's count at its highest equivalent value times 1000 (the value the reports use).
fn in_nanos(us: &Histogram<u64>) -> Result<Histogram<u64>, Error> {
    let mut ns = Histogram::<u64>::new_with_bounds(1000, HIGHEST_MICROS * 2000, us.sigfig())
        .map_err(|e| Error::Encode(format!("--hlog: {e:?}")))?;
    for v in us.iter_recorded() {
        ns.record_n(v.value_iterated_to().saturating_mul(1000), v.count_at_value())
            .map_err(|e| Error::Encode(format!("--hlog: {e:?}")))?;
    }
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

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
        s.record_service(50, 1);
        log.write("GET", Time::from_micros(3_000_000), Some(Time::from_micros(3_250_000)), &s).unwrap();
        log.write("SET, then GET", Time::from_micros(4_000_000), None, &s).unwrap();
        log.flush().unwrap();
        let text = std::fs::read(path).unwrap();
        let _ = std::fs::remove_file(path);
        let mut intervals = Vec::new();
        for e in IntervalLogIterator::new(&text) {
            match e.unwrap() {
                LogEntry::StartTime(t) => assert!((t.as_secs_f64() - 1_796_083_199.5).abs() < 1e-3),
                LogEntry::BaseTime(t) => assert!((t.as_secs_f64() - 1_796_083_199.5).abs() < 1e-3),
                LogEntry::Interval(i) => {
                    let h =
                        crate::codec::decode_histogram_within(i.encoded_histogram(), u64::MAX / 2).unwrap();
                    intervals.push((
                        i.tag().map(|t| t.as_str().to_string()),
                        i.start_timestamp().as_millis(),
                        i.duration().as_millis(),
                        i.max(),
                        h.len(),
                        // Nanoseconds: 301 µs (the highest equivalent of 300 at 2 figures), times 1000.
                        h.max(),
                    ))
                }
            }
        }
        let set = Some("SET__then_GET".to_string());
        let (get, service) = (Some("GET".to_string()), Some("GET.service".to_string()));
        assert_eq!(
            intervals,
            [
                // The first test's latency, untagged and tagged.
                (None, 2000, 1000, 0.301, 3, 301_055),
                (set.clone(), 2000, 1000, 0.301, 3, 301_055),
                (get, 3000, 250, 0.301, 3, 301_055),
                (service.clone(), 3000, 250, 0.05, 1, 50_175),
                (None, 4000, 1000, 0.301, 3, 301_055),
                (set, 4000, 1000, 0.301, 3, 301_055),
                (Some("SET__then_GET.service".to_string()), 4000, 1000, 0.05, 1, 50_175),
            ]
        );
    }
}
