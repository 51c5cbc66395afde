//! `--failed-keys FILE`: the keys of the requests that gave up retrying (`--retry-on`), one a
//! line, in the order the tests ran, written safely ([`crate::files`]) at the end of the run.

use std::io::Write;
use std::path::Path;

use respbench_session::result::TestResult;

/// Whether `path` can be written, found out before the run.
pub fn check(path: &str) -> Result<(), String> {
    crate::files::probe_writable(Path::new(path))
        .map_err(|e| format!("--failed-keys: cannot write {path}: {e}"))
}

/// Writes the keys of `results`' requests that gave up to `out`, one a line.
pub fn write_keys(out: &mut impl Write, results: &[TestResult]) -> std::io::Result<()> {
    for key in results.iter().flat_map(|r| &r.stats.retries.failed_keys) {
        out.write_all(key)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes the file (empty when no request gave up).
pub fn write(path: &str, results: &[TestResult]) -> Result<(), String> {
    let mut bytes = Vec::new();
    write_keys(&mut bytes, results).map_err(|e| e.to_string())?;
    crate::files::write_atomically(Path::new(path), &bytes)
        .map_err(|e| format!("--failed-keys: cannot write {path}: {e}"))
}
