//! `--failed-keys FILE`: the keys of the requests that gave up retrying (`--retry-on`), one a
//! line, in the order the tests ran, written safely ([`crate::files`]) at the end of the run
//! (empty when none gave up).

use std::path::Path;

use super::{Event, Output, RunEnd};
use crate::error::Error;

/// The file of keys.
pub struct FailedKeys {
    path: String,
    /// What the file will hold: each key, then a newline.
    bytes: Vec<u8>,
}

impl FailedKeys {
    /// The file at `path`.
    pub fn new(path: &str) -> Self {
        FailedKeys { path: path.to_string(), bytes: Vec::new() }
    }
}

/// Whether `path` can be written, found out before the run.
pub fn check(path: &str) -> Result<(), Error> {
    crate::files::probe_writable(Path::new(path))
        .map_err(|e| Error::Output(format!("--failed-keys: cannot write {path}: {e}")))
}

impl Output for FailedKeys {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        if let Event::Results(results) = ev {
            for key in results.iter().flat_map(|r| &r.stats.retries.failed_keys) {
                self.bytes.extend_from_slice(key);
                self.bytes.push(b'\n');
            }
        }
        Ok(())
    }

    fn finish(&mut self, _end: &RunEnd<'_>) -> Result<(), Error> {
        crate::files::write_atomically(Path::new(&self.path), &self.bytes)
            .map_err(|e| Error::Output(format!("--failed-keys: cannot write {}: {e}", self.path)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::fixture::{feed, result};

    /// The keys of every result kept, a line each, in order.
    #[test]
    fn a_line_per_key_that_gave_up() {
        let path = std::env::temp_dir().join(format!("respbench-sink-failed-keys-{}", std::process::id()));
        let mut first = result("SET");
        first.stats.retries.failed_keys = vec![b"key:1".to_vec(), b"key:2".to_vec()];
        let mut second = result("SET");
        second.stats.retries.failed_keys = vec![b"key:3".to_vec()];
        let (one, two) = ([first], [second]);
        let events = [Event::Results(&one), Event::Results(&two)];
        feed(&mut FailedKeys::new(path.to_str().unwrap()), &["mio"], &events).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text, "key:1\nkey:2\nkey:3\n");
    }
}
