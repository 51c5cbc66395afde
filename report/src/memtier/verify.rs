//! memtier_benchmark's report of `--data-verify`: its lines after the table (stdout, or
//! appended to `--out-file`), and its `client verifications results` object appended to the
//! `--json-out-file` document.

use respbench_session::memtier::Memtier;
use respbench_session::memtier_verify::Verified;

use crate::error::Error;

/// memtier's lines, as memtier_benchmark.cpp prints them (its spelling kept).
pub fn text(v: &Verified) -> String {
    format!(
        "\n\nPerforming data verification...\nData verification completed:\n{:<10} keys verified successfuly.\n{:<10} keys failed.\n",
        v.verified, v.failed
    )
}

/// The document `doc` (a JSON object) with memtier's `client verifications results` last.
pub fn with_results(doc: &str, v: &Verified) -> Option<String> {
    let body = doc.trim_end().strip_suffix('}')?;
    Some(format!(
        "{body},\"client verifications results\":{{\"keys verified successfuly\":{},\"keys failed\":{}}}}}\n",
        v.verified, v.failed
    ))
}

/// Writes `v` where memtier does: its lines to stdout or `--out-file` (after the table when
/// `after_run`), the counts into the `--json-out-file` document the run wrote (when
/// `after_run`: with `--verify-only` there is none, and a file already there is left as it is).
pub fn write(m: &Memtier, v: &Verified, after_run: bool) -> Result<(), Error> {
    let text = text(v);
    match &m.out_file {
        Some(path) if path != "-" => {
            let before =
                if after_run { std::fs::read_to_string(path).unwrap_or_default() } else { String::new() };
            crate::files::write_atomically(std::path::Path::new(path), format!("{before}{text}").as_bytes())
                .map_err(|source| Error::Write { output: format!("--out-file {path}"), source })?
        }
        _ => {
            use std::io::Write;
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes()).and_then(|_| o.flush()).map_err(|source| Error::Io {
                what: "the verification (stdout): cannot write".into(),
                source,
            })?;
        }
    }
    let Some(path) = m.json_out_file.as_ref().filter(|_| after_run) else { return Ok(()) };
    let Some(doc) = std::fs::read_to_string(path).ok().and_then(|d| with_results(&d, v)) else {
        return Ok(());
    };
    crate::files::write_atomically(std::path::Path::new(path), doc.as_bytes())
        .map_err(|source| Error::Write { output: format!("--json-out-file {path}"), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memtiers_lines_and_json_object() {
        let v = Verified { verified: 2, failed: 1, lines: Vec::new() };
        assert_eq!(
            text(&v),
            "\n\nPerforming data verification...\nData verification completed:\n2          keys verified successfuly.\n1          keys failed.\n"
        );
        let doc = with_results("{\"a\": 1}\n", &v).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(parsed["client verifications results"]["keys failed"], 1);
        assert_eq!(parsed["client verifications results"]["keys verified successfuly"], 2);
        assert_eq!(parsed["a"], 1);
        assert!(with_results("[1]", &v).is_none());
    }
}
