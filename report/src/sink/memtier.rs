//! memtier_benchmark's outputs (its table on stdout, `--json-out-file`, `--hdr-file-prefix`),
//! written at the end from the results this output kept.

use respbench_session::memtier::Memtier as Settings;
use respbench_session::result::TestResult;

use super::{Event, Output, RunEnd};
use crate::error::Error;

/// memtier_benchmark's outputs.
pub struct Memtier {
    settings: Settings,
    kept: Vec<TestResult>,
}

impl Memtier {
    /// The outputs `settings` ask for.
    pub fn new(settings: &Settings) -> Self {
        Memtier { settings: settings.clone(), kept: Vec::new() }
    }
}

impl Output for Memtier {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        if let Event::Results(results) = ev {
            self.kept.extend(results.iter().cloned());
        }
        Ok(())
    }

    fn finish(&mut self, end: &RunEnd<'_>) -> Result<(), Error> {
        crate::memtier::write(&self.settings, &self.kept, end.interrupted, end.epoch_us)
            .map_err(|e| Error::Output(e.to_string()))
    }
}
