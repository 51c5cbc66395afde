//! StatsD's text and Graphite's event annotations as memtier_benchmark 2.4 sends them
//! (its statsd.cpp): each second's metrics as `NAME:VALUE|TYPE` lines, gauges (`g`) and timings
//! (`ms`) with memtier's names and number formats, and the HTTP/1.1 POST of an event to
//! Graphite's `/events/`. The `statsd` sink sends them.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// A datagram holds at most this many bytes (lines are not split): below an Ethernet frame's
/// payload, so no datagram is fragmented.
pub const MAX_DATAGRAM: usize = 1400;

/// How long an event's POST may take to connect and to be written (memtier's 2 s).
pub const POST_TIMEOUT: Duration = Duration::from_secs(2);

/// One second of a test as its metrics say it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecondMetrics {
    /// Replies in the second.
    pub requests: u64,
    /// Error replies among them, and requests lost with their connection.
    pub errors: u64,
    /// The second's rate: its replies over its length (the last second of a test is shorter).
    pub ops_sec: u64,
    /// The test's rate so far: its replies over its length so far.
    pub ops_sec_avg: u64,
    /// The mean latency of the second's replies, ms (`None`: no reply).
    pub latency_ms: Option<f64>,
    /// The mean latency of the test's replies so far, ms.
    pub latency_avg_ms: Option<f64>,
    /// The connections the test runs (`None` where they change within it).
    pub connections: Option<u64>,
    /// How far the test is, in percent of its `-n` or its `--duration` (`None`: unknown).
    pub progress_pct: Option<f64>,
    /// Each percentile asked for with its latency in the second, ms.
    pub percentiles: Vec<(f64, f64)>,
}

/// memtier's name of percentile `p`'s gauge: `latency_p50`, `latency_p99_9` (C's `%g`, its
/// dots as underscores).
pub fn percentile_name(p: f64) -> String {
    // `%g`: six significant figures, no trailing zeros.
    let digits = if p >= 100.0 {
        3
    } else if p >= 10.0 {
        4
    } else {
        5
    };
    let text = format!("{p:.digits$}");
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    format!("latency_p{}", text.replace('.', "_"))
}

/// Writes the lines of one second, each name after `start` (`memtier.default.`), as memtier
/// writes them: `ops_sec`, `ops_sec_avg` (gauges, whole numbers), `latency_ms`,
/// `latency_avg_ms` (timings, 3 decimals), `connections`, `progress_pct` (6 decimals), then
/// `latency_pNN` per percentile (gauges, ms, 6 decimals); and respbench's exact counts,
/// `requests` and `errors` (counters), which add up to the test's. memtier's `bytes_sec` and
/// `bytes_sec_avg` are not sent: respbench counts bytes per connection, not per second.
pub fn write_second(start: &str, m: &SecondMetrics, out: &mut Vec<String>) {
    let mut line = |name: &str, value: String, kind: &str| out.push(format!("{start}{name}:{value}|{kind}"));
    line("ops_sec", m.ops_sec.to_string(), "g");
    line("ops_sec_avg", m.ops_sec_avg.to_string(), "g");
    if let Some(ms) = m.latency_ms {
        line("latency_ms", format!("{ms:.3}"), "ms");
    }
    if let Some(ms) = m.latency_avg_ms {
        line("latency_avg_ms", format!("{ms:.3}"), "ms");
    }
    if let Some(c) = m.connections {
        line("connections", c.to_string(), "g");
    }
    if let Some(p) = m.progress_pct {
        line("progress_pct", format!("{p:.6}"), "g");
    }
    for (p, ms) in &m.percentiles {
        line(&percentile_name(*p), format!("{ms:.6}"), "g");
    }
    line("requests", m.requests.to_string(), "c");
    line("errors", m.errors.to_string(), "c");
}

/// The lines that end a test, as memtier's: the rates and the progress back to 0, so a graph
/// drops when the run is over.
pub fn write_end(start: &str, out: &mut Vec<String>) {
    for name in ["ops_sec", "ops_sec_avg", "progress_pct"] {
        out.push(format!("{start}{name}:0|g"));
    }
}

/// `lines` as datagrams: as many whole lines to each, `\n` between them, as
/// [`MAX_DATAGRAM`] allows (a longer line goes alone).
pub fn datagrams(lines: &[String]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for l in lines {
        match out.last_mut() {
            Some(d) if d.len() + 1 + l.len() <= MAX_DATAGRAM => {
                d.push(b'\n');
                d.extend_from_slice(l.as_bytes());
            }
            _ => out.push(l.as_bytes().to_vec()),
        }
    }
    out
}

/// An event annotation: what happened, its details and its tags (`memtier,start`), to which
/// memtier adds `run:LABEL`.
pub struct Annotation {
    /// `Benchmark Started`, `Benchmark Completed`.
    pub what: &'static str,
    /// `threads=4 connections=50 run=1`.
    pub data: String,
    /// `memtier,start`.
    pub tags: &'static str,
}

/// memtier's HTTP/1.1 request posting `a` to Graphite at `host:port`, labelled `label`.
pub fn event_request(host: &str, port: u16, label: &str, a: &Annotation) -> String {
    let body =
        format!("{{\"what\":\"{}\",\"tags\":\"{},run:{label}\",\"data\":\"{}\"}}", a.what, a.tags, a.data);
    let mut req = String::new();
    let _ = write!(
        req,
        "POST /events/ HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    req
}

/// Sends `request` to `host:port` over TCP, within [`POST_TIMEOUT`] to connect and to write,
/// and closes without waiting for the reply, as memtier does.
pub fn post(host: &str, port: u16, request: &[u8]) -> io::Result<()> {
    let addr: SocketAddr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the host has no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, POST_TIMEOUT)?;
    s.set_write_timeout(Some(POST_TIMEOUT))?;
    s.write_all(request)?;
    s.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_names_as_memtier_prints_them() {
        let names: Vec<String> = [50.0, 99.0, 99.9, 99.99, 100.0, 0.5].map(percentile_name).to_vec();
        assert_eq!(
            names,
            ["latency_p50", "latency_p99", "latency_p99_9", "latency_p99_99", "latency_p100", "latency_p0_5"]
        );
    }

    #[test]
    fn a_second_in_memtiers_formats() {
        let m = SecondMetrics {
            requests: 1500,
            errors: 2,
            ops_sec: 3000,
            ops_sec_avg: 2900,
            latency_ms: Some(0.41234),
            latency_avg_ms: Some(0.4),
            connections: Some(50),
            progress_pct: Some(12.5),
            percentiles: vec![(50.0, 0.399), (99.9, 1.5)],
        };
        let mut lines = Vec::new();
        write_second("memtier.default.", &m, &mut lines);
        write_end("memtier.default.", &mut lines);
        assert_eq!(
            lines,
            [
                "memtier.default.ops_sec:3000|g",
                "memtier.default.ops_sec_avg:2900|g",
                "memtier.default.latency_ms:0.412|ms",
                "memtier.default.latency_avg_ms:0.400|ms",
                "memtier.default.connections:50|g",
                "memtier.default.progress_pct:12.500000|g",
                "memtier.default.latency_p50:0.399000|g",
                "memtier.default.latency_p99_9:1.500000|g",
                "memtier.default.requests:1500|c",
                "memtier.default.errors:2|c",
                "memtier.default.ops_sec:0|g",
                "memtier.default.ops_sec_avg:0|g",
                "memtier.default.progress_pct:0|g",
            ]
        );
        let one = datagrams(&lines);
        assert_eq!(one.len(), 1);
        assert_eq!(String::from_utf8(one[0].clone()).unwrap(), lines.join("\n"));
    }

    #[test]
    fn long_batches_split_at_lines() {
        let lines: Vec<String> = (0..30).map(|i| format!("{}{i}:1|g", "x".repeat(100))).collect();
        let d = datagrams(&lines);
        assert!(d.len() > 1 && d.iter().all(|d| d.len() <= MAX_DATAGRAM));
        let back: Vec<String> = d
            .iter()
            .flat_map(|d| String::from_utf8(d.clone()).unwrap().lines().map(String::from).collect::<Vec<_>>())
            .collect();
        assert_eq!(back, lines);
    }

    #[test]
    fn the_event_request_is_memtiers() {
        let a = Annotation {
            what: "Benchmark Started",
            data: "threads=4 connections=50 run=1".into(),
            tags: "memtier,start",
        };
        let body = r#"{"what":"Benchmark Started","tags":"memtier,start,run:nightly","data":"threads=4 connections=50 run=1"}"#;
        assert_eq!(
            event_request("stats", 8080, "nightly", &a),
            format!("POST /events/ HTTP/1.1\r\nHost: stats:8080\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
        );
    }
}
