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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::fixture::{feed, result};

    /// memtier_benchmark's table, written at the end from the results kept: a row per command
    /// of the run, then the totals.
    #[test]
    fn the_table_at_the_end() {
        let path = std::env::temp_dir().join(format!("respbench-sink-memtier-{}.txt", std::process::id()));
        let settings = Settings {
            threads: 1,
            clients: 2,
            requests: Some(50),
            test_time: None,
            run_count: 1,
            percentiles: vec![50.0, 99.0],
            hide_histogram: true,
            out_file: Some(path.to_str().unwrap().to_string()),
            json_out_file: None,
            rows: vec!["Gets".into()],
            ratio_rows: false,
            cluster: false,
            configuration: Vec::new(),
            show_config: false,
            hdr_file_prefix: None,
            by_line: false,
            multi_key_get: false,
            one_command: false,
            verify: None,
        };
        let results = [result("GET"), result("GET")];
        feed(&mut Memtier::new(&settings), &["mio"], &[Event::Results(&results)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        // 100 requests in 1.099 ms, of 1 to 100 µs; no bytes counted.
        assert_eq!(
            text,
            concat!(
                "1         Threads\n",
                "2         Connections per thread\n",
                "50        Requests per client\n",
                "\n",
                "\n",
                "ALL STATS\n",
                "==================================================================================\n",
                "Type         Ops/sec    Avg. Latency     p50 Latency     p99 Latency       KB/sec \n",
                "----------------------------------------------------------------------------------\n",
                "Gets        90991.81         0.05050         0.05000         0.09900          --- \n",
                "Totals      90991.81         0.05050         0.05000         0.09900          --- \n",
            )
        );
    }
}
