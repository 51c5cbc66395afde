//! `respbench merge A.json B.json … [--json OUT]`: combines the `--json` documents of several runs
//! (one per client machine or process) test by test, exactly: histograms add bucket by bucket,
//! counts add, and the interval is the union of the runs' intervals.

use std::io::{self, Write};
use std::process::ExitCode;

use argh::FromArgs;
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
        for e in &merged.tests {
            let mut title = match &e.backend {
                Some(b) if merged.backends() > 1 => format!("{} [{b}]", e.name),
                _ => e.name.clone(),
            };
            if let Some(r) = e.target_rps {
                title.push_str(&format!(" @ {r} rps"));
            }
            let r = TestReport {
                title: &title,
                stats: &e.stats,
                cpu: e.cpu.as_ref(),
                verdict: e.verdict.as_ref(),
                clients: 0,
                payload_bytes: 0,
                workload: Vec::new(),
                keepalive: true,
                threads: 0,
                server_save: None,
                server_appendonly: None,
                backend_note: None,
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

/// What keeps merged tests apart: name, backend, target rate and a sweep's step (as JSON).
type Key = (String, Option<String>, Option<u64>, Option<String>);

/// Several documents combined.
pub struct Merged {
    /// The first document's `config` (the runs are expected to share it).
    pub config: Value,
    /// The first document's `server`.
    pub server: Value,
    /// Whether any run was interrupted.
    pub interrupted: bool,
    /// Each test (by name and backend) merged, in order of first appearance.
    pub tests: Vec<json::Entry>,
    /// What identifies each of `tests` in the inputs: name, backend and target rate as written
    /// (the merged target is the sum).
    keys: Vec<Key>,
}

impl Merged {
    /// The merged document, in the same schema as a run's.
    pub fn document(&self) -> Result<Value, String> {
        let tests = self
            .tests
            .iter()
            // The stats' times are already microseconds since the Unix epoch.
            .map(|e| json::test(e, 0))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(json::document(self.config.clone(), self.server.clone(), self.interrupted, tests))
    }

    /// How many different backends the tests ran on.
    fn backends(&self) -> usize {
        let mut seen: Vec<Option<&str>> = Vec::new();
        for e in &self.tests {
            if !seen.contains(&e.backend.as_deref()) {
                seen.push(e.backend.as_deref());
            }
        }
        seen.len()
    }
}

/// Merges documents; an error names the index of the document at fault.
pub fn merge(docs: &[Value]) -> Result<Merged, (usize, String)> {
    let mut merged: Option<Merged> = None;
    for (i, doc) in docs.iter().enumerate() {
        let schema = doc.get("schema").and_then(Value::as_str);
        if !schema.is_some_and(|s| s == json::SCHEMA || json::READS_ALSO.contains(&s)) {
            let found = schema.map_or_else(|| "missing".to_string(), |s| format!("'{s}'"));
            return Err((i, format!("schema is {found}; this respbench reads '{}'", json::SCHEMA)));
        }
        let tests = doc.get("tests").and_then(Value::as_array).ok_or((i, "no 'tests' array".to_string()))?;
        let m = merged.get_or_insert_with(|| Merged {
            config: doc.get("config").cloned().unwrap_or(Value::Null),
            server: doc.get("server").cloned().unwrap_or(Value::Null),
            interrupted: false,
            tests: Vec::new(),
            keys: Vec::new(),
        });
        m.interrupted |= doc.get("interrupted").and_then(Value::as_bool).unwrap_or(false);
        for t in tests {
            let e = json::read_test(t).map_err(|e| (i, e))?;
            // A run comparing backends has each test once per backend, a run with several rates
            // once per rate: those stay apart.
            // A sweep's steps stay apart, like backends and rates.
            let key =
                (e.name.clone(), e.backend.clone(), e.target_rps, e.step.as_ref().map(Value::to_string));
            match m.keys.iter().position(|k| *k == key) {
                Some(at) => {
                    let acc = &mut m.tests[at];
                    acc.stats.merge(&e.stats).map_err(|err| (i, format!("test '{}': {err}", e.name)))?;
                    // Two machines each aiming at R give 2R together.
                    acc.target_rps = acc.target_rps.zip(e.target_rps).map(|(a, b)| a + b);
                    acc.cpu = match (acc.cpu, e.cpu) {
                        (Some(mut a), Some(b)) => {
                            a.merge(&b);
                            Some(a)
                        }
                        // One run without the figure: the sum would be wrong.
                        _ => None,
                    };
                    // Runs against the same server at the same time see the same server: the
                    // busiest reading stands for it.
                    acc.server_cpu = match (acc.server_cpu.take(), e.server_cpu) {
                        (Some(a), Some(b)) => Some(if b.cores > a.cores { b } else { a }),
                        (a, b) => a.or(b),
                    };
                }
                None => {
                    m.keys.push(key);
                    m.tests.push(e);
                }
            }
        }
    }
    merged.ok_or((0, "no documents".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::ClientCpu;
    use proptest::prelude::*;
    use respbench_core::{Stats, Time};

    fn doc_of(tests: &[(&str, &Stats)]) -> Value {
        let tests = tests
            .iter()
            .map(|(n, s)| json::test(&entry(n, None, (*s).clone()), 1_000))
            .collect::<Result<Vec<_>, _>>();
        json::document(Value::Null, Value::Null, false, tests.unwrap())
    }

    fn entry(name: &str, backend: Option<&str>, stats: Stats) -> json::Entry {
        let cpu = ClientCpu { user_s: 0.5, sys_s: 0.25, wall_s: 1.0, threads: 1, share_override: None };
        json::Entry {
            name: name.into(),
            command: name.into(),
            backend: backend.map(Into::into),
            cpu: Some(cpu),
            target_rps: None,
            server_cpu: None,
            verdict: None,
            step: None,
            stats,
        }
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
            let got = &m.tests[0].stats;
            let cpu = m.tests[0].cpu.unwrap();
            prop_assert!((cpu.total_s() - 2.25).abs() < 1e-9);
            prop_assert_eq!(cpu.threads, 3);
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
        let names: Vec<String> = merge(&docs).unwrap().tests.into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["SET", "GET", "LPUSH"]);
        let mut bad = docs[1].clone();
        bad["schema"] = "respbench/3".into();
        let (i, e) = merge(&[docs[0].clone(), bad]).err().unwrap();
        assert_eq!(i, 1);
        assert!(e.contains("respbench/3") && e.contains("reads 'respbench/2'"), "{e}");
        // The version before, whose seconds carried histograms, still merges.
        let mut old = docs[1].clone();
        old["schema"] = "respbench/1".into();
        assert!(merge(&[docs[0].clone(), old]).is_ok());
        assert!(merge(&[serde_json::json!({"x": 1})]).is_err());
    }

    #[test]
    fn backends_stay_apart() {
        let a = Stats::new(Time::ZERO, 3, false).unwrap();
        let doc = |b: &[&str]| {
            let tests = b.iter().map(|b| json::test(&entry("GET", Some(b), a.clone()), 0).unwrap()).collect();
            json::document(Value::Null, Value::Null, false, tests)
        };
        let m = merge(&[doc(&["mio", "smol"]), doc(&["mio", "smol"])]).unwrap();
        let got: Vec<_> =
            m.tests.iter().map(|t| (t.backend.as_deref().unwrap(), t.cpu.unwrap().threads)).collect();
        assert_eq!(got, [("mio", 2), ("smol", 2)]);
        assert_eq!(m.backends(), 2);
    }
}
