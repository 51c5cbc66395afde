//! `respbench merge A.json B.json … [--json OUT]`: combines the `--json` documents of several runs
//! (one per client machine or process) test by test, exactly: histograms add bucket by bucket,
//! counts add, and the interval is the union of the runs' intervals.

use std::io::{self, Write};
use std::process::ExitCode;

use argh::FromArgs;
use respbench_core::Stats;
use serde_json::Value;

use crate::json;
use crate::report::{self, TestReport};

/// respbench merge: combines the JSON documents of several runs test by test (tests with the
/// same name add up) and prints one quiet line per test.
#[derive(FromArgs, Debug)]
#[argh(help_triggers("--help"))]
struct MergeOpts {
    /// write the merged document to this file, or to stdout with '-' (the lines are then not
    /// printed)
    #[argh(option)]
    json: Option<String>,
    /// the documents to merge, written by respbench --json
    #[argh(positional)]
    files: Vec<String>,
}

/// Runs `respbench merge` with the arguments after `merge`.
pub fn main(name: &str, args: &[&str]) -> ExitCode {
    let opts: MergeOpts = match crate::parse_args(&[name, "merge"], args, "respbench merge --help") {
        Ok(o) => o,
        Err(code) => return code,
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("respbench merge: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(opts: &MergeOpts) -> Result<(), String> {
    if opts.files.is_empty() {
        return Err("no files to merge; usage: respbench merge A.json B.json … [--json OUT]".into());
    }
    let mut docs = Vec::new();
    for path in &opts.files {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{path} is not JSON: {e}"))?;
        docs.push(doc);
    }
    let merged = merge(&docs).map_err(|(i, e)| format!("{}: {e}", opts.files[i]))?;
    if opts.json.as_deref() != Some("-") {
        let mut out = io::stdout().lock();
        for (name, _, stats) in &merged.tests {
            let r = TestReport {
                title: name,
                stats,
                clients: 0,
                payload_bytes: 0,
                keepalive: true,
                threads: 0,
                server_save: None,
                server_appendonly: None,
            };
            report::write_quiet(&r, &mut out).map_err(|e| e.to_string())?;
        }
        out.flush().map_err(|e| e.to_string())?;
    }
    if let Some(path) = &opts.json {
        let mut doc = merged.document()?;
        doc["merged_from"] = serde_json::json!(opts.files);
        crate::write_json(path, &doc)?;
    }
    Ok(())
}

/// Several documents combined.
pub struct Merged {
    /// The first document's `config` (the runs are expected to share it).
    pub config: Value,
    /// The first document's `server`.
    pub server: Value,
    /// Whether any run was interrupted.
    pub interrupted: bool,
    /// Name, command and merged stats of each test, in order of first appearance.
    pub tests: Vec<(String, String, Stats)>,
}

impl Merged {
    /// The merged document, in the same schema as a run's.
    pub fn document(&self) -> Result<Value, String> {
        let tests = self
            .tests
            .iter()
            // The stats' times are already microseconds since the Unix epoch.
            .map(|(name, command, stats)| json::test(name, command.as_bytes(), stats, 0))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(json::document(self.config.clone(), self.server.clone(), self.interrupted, tests))
    }
}

/// Merges documents; an error names the index of the document at fault.
pub fn merge(docs: &[Value]) -> Result<Merged, (usize, String)> {
    let mut merged: Option<Merged> = None;
    for (i, doc) in docs.iter().enumerate() {
        let schema = doc.get("schema").and_then(Value::as_str);
        if schema != Some(json::SCHEMA) {
            let found = schema.map_or_else(|| "missing".to_string(), |s| format!("'{s}'"));
            return Err((i, format!("schema is {found}; this respbench reads '{}'", json::SCHEMA)));
        }
        let tests = doc.get("tests").and_then(Value::as_array).ok_or((i, "no 'tests' array".to_string()))?;
        let m = merged.get_or_insert_with(|| Merged {
            config: doc.get("config").cloned().unwrap_or(Value::Null),
            server: doc.get("server").cloned().unwrap_or(Value::Null),
            interrupted: false,
            tests: Vec::new(),
        });
        m.interrupted |= doc.get("interrupted").and_then(Value::as_bool).unwrap_or(false);
        for t in tests {
            let (name, command, stats) = json::read_test(t).map_err(|e| (i, e))?;
            match m.tests.iter_mut().find(|(n, _, _)| *n == name) {
                Some((_, _, acc)) => acc.merge(&stats).map_err(|e| (i, format!("test '{name}': {e}")))?,
                None => m.tests.push((name, command, stats)),
            }
        }
    }
    merged.ok_or((0, "no documents".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use respbench_core::Time;

    fn doc_of(tests: &[(&str, &Stats)]) -> Value {
        let tests =
            tests.iter().map(|(n, s)| json::test(n, n.as_bytes(), s, 1_000)).collect::<Result<Vec<_>, _>>();
        json::document(Value::Null, Value::Null, false, tests.unwrap())
    }

    proptest! {
        /// Values split over three runs, encoded and merged, equal one run that saw them all.
        #[test]
        fn merge_equals_one_run(
            values in prop::collection::vec((0u64..5_000_000_000, 0usize..3, any::<bool>()), 0..300),
            starts in [0u64..1_000, 0u64..1_000, 0u64..1_000],
        ) {
            let part = |i: usize| Stats::new(Time::from_micros(starts[i]), 3, false).unwrap();
            let mut parts = [part(0), part(1), part(2)];
            let mut whole = Stats::new(Time::from_micros(*starts.iter().min().unwrap()), 3, false).unwrap();
            for (k, &(nanos, which, err)) in values.iter().enumerate() {
                let now = Time::from_micros(2_000 + k as u64 * 3);
                parts[which].record(nanos, 0, now);
                whole.record(nanos, 0, now);
                parts[which].bytes_sent += 7;
                whole.bytes_sent += 7;
                if err {
                    parts[which].errors.record(b"ERR x");
                    whole.errors.record(b"ERR x");
                }
            }
            let docs: Vec<Value> = parts.iter().map(|p| doc_of(&[("GET", p)])).collect();
            let m = merge(&docs).unwrap();
            prop_assert_eq!(m.tests.len(), 1);
            let got = &m.tests[0].2;
            prop_assert_eq!(got.requests, whole.requests);
            prop_assert_eq!(&got.latency, &whole.latency);
            prop_assert_eq!(got.errors.total(), whole.errors.total());
            prop_assert_eq!(got.bytes_sent, whole.bytes_sent);
            prop_assert_eq!(got.start.as_micros(), 1_000 + whole.start.as_micros());
            // A run that completed nothing still spans [start, start]: the union includes it.
            let end = parts.iter().map(|p| p.end).max().unwrap();
            prop_assert_eq!(got.end.as_micros(), 1_000 + end.as_micros());
            let d = m.document().unwrap();
            prop_assert_eq!(&d["tests"][0]["requests"], &serde_json::json!(whole.requests));
        }
    }

    #[test]
    fn tests_by_name_and_schema_checked() {
        let a = Stats::new(Time::ZERO, 3, false).unwrap();
        let docs = [doc_of(&[("SET", &a), ("GET", &a)]), doc_of(&[("GET", &a), ("LPUSH", &a)])];
        let names: Vec<String> = merge(&docs).unwrap().tests.into_iter().map(|t| t.0).collect();
        assert_eq!(names, ["SET", "GET", "LPUSH"]);
        let mut bad = docs[1].clone();
        bad["schema"] = "respbench/2".into();
        let (i, e) = merge(&[docs[0].clone(), bad]).err().unwrap();
        assert_eq!(i, 1);
        assert!(e.contains("respbench/2"), "{e}");
        assert!(merge(&[serde_json::json!({"x": 1})]).is_err());
    }
}
