//! `--hgrm PREFIX`: each test's percentile distribution in a file of its own, written at the end
//! from the results this output kept.

use respbench_session::result::TestResult;

use super::{Event, Output, RunEnd};
use crate::error::Error;

/// The `.hgrm` files.
pub struct Hgrm {
    prefix: String,
    comparing: bool,
    kept: Vec<TestResult>,
}

impl Hgrm {
    /// The files named `PREFIX` + each test's tag + `.hgrm`.
    pub fn new(prefix: &str) -> Self {
        Hgrm { prefix: prefix.to_string(), comparing: false, kept: Vec::new() }
    }
}

impl Output for Hgrm {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        match ev {
            Event::Begin(b) => self.comparing = b.backends.len() > 1,
            Event::Results(results) => self.kept.extend(results.iter().cloned()),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _end: &RunEnd<'_>) -> Result<(), Error> {
        crate::hgrm::write_all(&self.prefix, &self.kept, self.comparing)
            .map(drop)
            .map_err(|e| Error::Output(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::fixture::{feed, result};

    /// A scenario's groups: a file each beside their test's, named by group.
    #[test]
    fn a_file_per_group() {
        let dir = std::env::temp_dir().join(format!("respbench-sink-hgrm-groups-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = format!("{}/run-", dir.display());
        let mut test = result("rw");
        test.groups = vec![result("readers"), result("writers")];
        test.groups[1].stats.latency.record(7).unwrap();
        feed(&mut Hgrm::new(&prefix), &["mio"], &[Event::Results(&[test.clone()])]).unwrap();
        let mut names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        let writers = std::fs::read_to_string(dir.join("run-rw.writers.hgrm")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(names, ["run-rw.hgrm", "run-rw.readers.hgrm", "run-rw.writers.hgrm"]);
        assert_eq!(writers, crate::hgrm::distribution(&test.groups[1].stats.latency));
    }

    /// A file per test kept, each its distribution; a title that comes again numbered.
    #[test]
    fn a_file_per_test() {
        let dir = std::env::temp_dir().join(format!("respbench-sink-hgrm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = format!("{}/run-", dir.display());
        let results = [result("GET"), result("GET")];
        feed(&mut Hgrm::new(&prefix), &["mio"], &[Event::Results(&results)]).unwrap();
        let mut names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        let text = std::fs::read_to_string(dir.join("run-GET.hgrm")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(names, ["run-GET.2.hgrm", "run-GET.hgrm"]);
        assert_eq!(text, crate::hgrm::distribution(&results[0].stats.latency));
        assert!(text.ends_with("#[Mean    =        0.051, StdDeviation   =        0.029]\n#[Max     =        0.100, Total count    =          100]\n#[Buckets =           22, SubBuckets     =         2048]\n"), "{text}");
    }
}
