//! `--metrics`: the live figures served to Prometheus while the run goes, until the final ones
//! were scraped (or `--metrics-linger`).

use super::{Event, Output, RunEnd, Wants};
use crate::error::Error;
use crate::metrics::Exporter;

/// The endpoint, bound before the session connects.
pub struct Metrics {
    exporter: Option<Exporter>,
}

impl Metrics {
    /// Serves what `exporter` publishes.
    pub fn new(exporter: Exporter) -> Self {
        Metrics { exporter: Some(exporter) }
    }
}

impl Output for Metrics {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        match (ev, &self.exporter) {
            (Event::LiveTest(test), Some(m)) => m.live_test(test),
            (Event::Results(results), Some(m)) => m.results(results),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _end: &RunEnd<'_>) -> Result<(), Error> {
        if let Some(m) = self.exporter.take() {
            m.finish();
        }
        Ok(())
    }

    fn wants(&self) -> Wants {
        Wants { figures: true, ..Wants::default() }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::Duration;

    use super::*;
    use crate::sink::fixture::{feed, result};

    /// A finished test's requests are served, counted as the result says.
    #[test]
    fn a_finished_tests_requests_are_served() {
        let m = respbench_session::metrics::Metrics {
            addr: "127.0.0.1:0".parse().unwrap(),
            given: "--metrics 127.0.0.1:0".into(),
            linger: Duration::ZERO,
        };
        let exporter = Exporter::start(&m, (0, 1)).unwrap();
        let addr = exporter.local_addr();
        let mut sink = Metrics::new(exporter);
        let results = [result("GET")];
        sink.on(&Event::Results(&results)).unwrap();
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let requests: Vec<&str> =
            text.lines().filter(|l| l.starts_with("respbench_requests_total{")).collect();
        assert_eq!(
            requests,
            ["respbench_requests_total{test=\"GET\",command=\"GET\",worker=\"0\"} 100"],
            "{text}"
        );
        // --metrics-linger 0: the end does not wait for a scrape.
        feed(&mut sink, &["mio"], &[]).unwrap();
    }
}
