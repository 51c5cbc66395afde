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
