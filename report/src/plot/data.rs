//! What `respbench plot` reads from `--json` documents: each test's summary figures, its
//! whole-test histogram, its step parameters and its per-second summaries.
//!
//! The documents are read as `serde_json::Value` here rather than through `json::read_test`, so
//! that only the fields the charts use are required: a per-second entry is read through its
//! summary fields (`second`, `requests`, `errors`, `p50_ms`, `p90_ms`, `p99_ms`, `p999_ms`,
//! `max_ms`, the optional ones may be missing), never its histogram.

use serde_json::Value;

use crate::json;

/// The options a step of a sweep may differ in, with their names in the JSON (`config` and, for
/// runs whose steps vary them, each test entry) and on the charts.
pub const PARAMS: [Param; 4] = [
    Param { key: "datasize", short: "d", option: "-d", title: "value size (bytes)" },
    Param { key: "clients", short: "c", option: "-c", title: "connections (-c)" },
    Param { key: "pipeline", short: "P", option: "-P", title: "pipeline (-P)" },
    Param { key: "threads", short: "threads", option: "--threads", title: "threads (--threads)" },
];

/// A step parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param {
    /// Its field name in `config` and in a test entry.
    pub key: &'static str,
    /// How a label names it: `c=50`.
    pub short: &'static str,
    /// Its command-line option.
    pub option: &'static str,
    /// The title of an axis over it.
    pub title: &'static str,
}

/// One input document.
#[derive(Debug)]
pub struct Input {
    /// The path as given.
    pub path: String,
    /// How labels name it: the file name, or the whole path when two inputs share a name.
    pub label: String,
    /// Its tests, in order.
    pub tests: Vec<Test>,
    /// What was measured around the tests, for the captions.
    pub context: Context,
    /// `--slo`: its searches, as the capacity chart draws them.
    pub capacity: Vec<super::capacity::Curve>,
}

/// What a document says about the run around its tests: what pictures of it must carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// `respbench ARGS` as it ran (passwords hidden), when the document has `command_line`.
    pub command_line: Option<String>,
    /// `redis 7.0.15 standalone`, when the document names the server.
    pub server: Option<String>,
    /// The first test's start, in UTC (`2026-12-01T12:07:44Z`).
    pub date: Option<String>,
    /// `config.backend`: `mio`, or the list compared.
    pub backend: Option<String>,
    /// `respbench merge --force`: the inputs were not one configuration.
    pub mixture: bool,
}

/// Latency figures in milliseconds, as `latency_ms` has them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Latency {
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

/// One second of a test's series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Second {
    /// Seconds from the test's start (after the warmup).
    pub second: u64,
    /// Replies in that second.
    pub requests: u64,
    /// Error replies in that second.
    pub errors: u64,
    /// Median latency of that second, ms.
    pub p50: f64,
    /// 99th percentile of that second, ms.
    pub p99: f64,
}

/// One test (or step) of an input.
#[derive(Debug)]
pub struct Test {
    /// Index of its input.
    pub input: usize,
    /// The title (`GET`).
    pub name: String,
    /// When it began, microseconds since the Unix epoch (0 when the document lacks it).
    pub start_us: u64,
    /// The backend that ran it, when the document says.
    pub backend: Option<String>,
    /// The open-loop target rate.
    pub target_rps: Option<u64>,
    /// Values of [`PARAMS`], from the test entry or else the document's `config`.
    pub params: [Option<u64>; PARAMS.len()],
    /// Replies received.
    pub requests: u64,
    /// Error replies.
    pub errors: u64,
    /// Seconds the test ran.
    pub duration_s: f64,
    /// Replies per second.
    pub rps: f64,
    /// Latency summary.
    pub latency: Latency,
    /// Open loop: the service-time summary.
    pub service: Option<Latency>,
    /// The whole test's latency by percentile, as the charts draw it: (nines, ms) points from
    /// its histogram, which is not kept (a long `-l` run's tens of thousands of tests would
    /// otherwise hold a 190 KB histogram each); empty when nothing was recorded.
    pub curve: Vec<(f64, f64)>,
    /// Per-second summaries (empty when the test has no series).
    pub series: Vec<Second>,
    /// Open loop: the service time by percentile, as [`Test::curve`].
    pub service_curve: Option<Vec<(f64, f64)>>,
    /// Who limited the test (`bottleneck.side`: server, client, machine, network…), when judged.
    pub verdict: Option<String>,
    /// The client's CPU per request in microseconds, when measured.
    pub cpu_us: Option<f64>,
    /// The client's share of its cores, when measured.
    pub core_share: Option<f64>,
    /// The repetition (`step.run`, `--repeat`), 0 without.
    pub run: u64,
}

impl Test {
    /// Whether the test is known to have been limited by something other than the server (the
    /// client, the machine): its figures say less about the server than they seem to.
    pub fn not_server_limited(&self) -> bool {
        self.verdict.as_deref().is_some_and(|v| v != "server")
    }

    /// `server-limited, client 3.1 µs/request, 45% of its cores`: the verdict and client CPU.
    pub fn verdict_line(&self) -> String {
        let mut parts = Vec::new();
        parts.push(match self.verdict.as_deref() {
            Some("server") => "server-limited".to_string(),
            Some(v) => format!("NOT server-limited ({v} was the limit)"),
            None => "limit not judged".to_string(),
        });
        if let Some(us) = self.cpu_us {
            let mut c = format!("client {us:.1} µs/request");
            if let Some(share) = self.core_share {
                c.push_str(&format!(", {:.0}% of its cores", share * 100.0));
            }
            parts.push(c);
        }
        parts.join(", ")
    }
}

/// Reads the documents at `paths`; an error names the file and what is wrong with it.
pub fn read(paths: &[String]) -> Result<Vec<Input>, String> {
    let mut inputs = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let doc: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{path} is not JSON: {e}"))?;
        let tests = read_doc(&doc, i).map_err(|e| format!("{path}: {e}"))?;
        let context = context(&doc, &tests);
        let capacity = super::capacity::read(&doc, i).map_err(|e| format!("{path}: {e}"))?;
        inputs.push(Input { path: path.clone(), label: String::new(), tests, context, capacity });
    }
    let names: Vec<String> = inputs.iter().map(|i| file_name(&i.path)).collect();
    for (k, input) in inputs.iter_mut().enumerate() {
        let unique = names.iter().filter(|n| **n == names[k]).count() == 1;
        input.label = if unique { names[k].clone() } else { input.path.clone() };
    }
    Ok(inputs)
}

/// The document's context: its command line, server, first test's date and backend.
fn context(doc: &Value, tests: &[Test]) -> Context {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let command_line = doc.get("command_line").and_then(Value::as_array).map(|args| {
        let args: Vec<String> =
            args.iter()
                .filter_map(Value::as_str)
                .map(|a| {
                    if a.is_empty() || a.contains([' ', '"', '\'']) {
                        format!("'{a}'")
                    } else {
                        a.to_string()
                    }
                })
                .collect();
        format!("respbench {}", args.join(" "))
    });
    let server = doc.get("server").and_then(|s| {
        let parts: Vec<String> = ["name", "version", "mode"].iter().filter_map(|k| text(s.get(*k))).collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    });
    let date =
        tests.first().map(|t| t.start_us).filter(|&us| us > 0).map(|us| crate::hlog::utc(us / 1_000_000));
    Context {
        command_line,
        server,
        date,
        backend: text(doc.pointer("/config/backend")),
        mixture: doc.get("mixture").is_some(),
    }
}

fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

/// The tests of one document.
fn read_doc(doc: &Value, input: usize) -> Result<Vec<Test>, String> {
    let schema = doc.get("schema").and_then(Value::as_str);
    // Every schema reads alike here: version 1 differs only in its seconds' histograms, which
    // plot never reads.
    if !schema.is_some_and(|s| s == json::SCHEMA || json::READS_ALSO.contains(&s)) {
        let found = schema.map_or_else(|| "missing".to_string(), |s| format!("'{s}'"));
        let mut known = vec![json::SCHEMA];
        known.extend(json::READS_ALSO);
        return Err(format!(
            "schema is {found}; respbench plot reads documents written by respbench --json ('{}')",
            known.join("', '")
        ));
    }
    let tests = doc.get("tests").and_then(Value::as_array).ok_or("no 'tests' array")?;
    if tests.is_empty() {
        return Err("no tests in the document (the run ended before its first test)".into());
    }
    let config = doc.get("config").unwrap_or(&Value::Null);
    // A test in which no request succeeded has no figures to draw.
    tests
        .iter()
        .enumerate()
        .filter(|(_, t)| t.get("no_request_succeeded").and_then(Value::as_bool) != Some(true))
        .map(|(k, t)| read_test(t, config, input).map_err(|e| format!("test {}: {e}", k + 1)))
        .collect()
}

fn read_test(t: &Value, config: &Value, input: usize) -> Result<Test, String> {
    let name = t.get("name").and_then(Value::as_str).ok_or("no 'name'")?.to_string();
    let at = |e: String| format!("'{name}': {e}");
    let u = |k: &str| t.get(k).and_then(Value::as_u64).ok_or_else(|| at(format!("no '{k}' count")));
    let f = |k: &str| t.get(k).and_then(Value::as_f64).ok_or_else(|| at(format!("no '{k}' number")));
    let requests = u("requests")?;
    let errors = match t.get("errors") {
        Some(Value::Object(m)) => m.values().filter_map(Value::as_u64).sum(),
        None => 0,
        Some(_) => return Err(at("'errors' is not an object".into())),
    };
    let latency = latency(t.get("latency_ms")).map_err(|e| at(format!("latency_ms: {e}")))?;
    let service = match t.get("service_latency_ms") {
        Some(v) => Some(latency_of(v).map_err(|e| at(format!("service_latency_ms: {e}")))?),
        None => None,
    };
    let data = t
        .pointer("/histogram/data")
        .and_then(Value::as_str)
        .ok_or_else(|| at("no 'histogram' with 'data'".into()))?;
    let histogram = json::decode_histogram(data).map_err(|e| at(format!("histogram: {e}")))?;
    // As `respbench merge` checks them: the histograms hold what the counts say.
    let lower_bounds = t.get("latency_lower_bounds").and_then(Value::as_u64).unwrap_or(0);
    let want = requests
        .checked_add(lower_bounds)
        .ok_or_else(|| at("requests + latency_lower_bounds overflows".into()))?;
    if histogram.len() != want {
        return Err(at(format!(
            "its histogram holds {} values where requests + latency_lower_bounds say {want}",
            histogram.len()
        )));
    }
    let series = match t.get("series") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.iter().map(second).collect::<Result<_, _>>().map_err(at)?,
        Some(_) => return Err(at("'series' is not an array".into())),
    };
    // A step's own parameters come first: a sweep writes each step's in its entry's `step`
    // (`datasize` as -d gives it, so "16" is 16 and a range is not a number); the document's
    // config holds what all steps share.
    let num = |v: &Value| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok()));
    let params = PARAMS.map(|p| {
        t.get("step")
            .and_then(|s| s.get(p.key))
            .and_then(num)
            .or_else(|| t.get(p.key).and_then(num))
            .or_else(|| config.get(p.key).and_then(Value::as_u64))
    });
    let service_curve = match t.pointer("/service_histogram/data").and_then(Value::as_str) {
        Some(d) => {
            let h = json::decode_histogram(d).map_err(|e| at(format!("service_histogram: {e}")))?;
            if h.len() != requests {
                return Err(at(format!(
                    "its service_histogram holds {} values where requests say {requests}",
                    h.len()
                )));
            }
            Some(super::charts::percentile_points(&h))
        }
        None => None,
    };
    Ok(Test {
        input,
        start_us: t.get("start_us").and_then(Value::as_u64).unwrap_or(0),
        service_curve,
        verdict: t.pointer("/bottleneck/side").and_then(Value::as_str).map(str::to_string),
        cpu_us: t.pointer("/client_cpu/us_per_request").and_then(Value::as_f64),
        core_share: t.pointer("/client_cpu/core_share").and_then(Value::as_f64),
        run: t.pointer("/step/run").and_then(Value::as_u64).unwrap_or(0),
        backend: t.get("backend").and_then(Value::as_str).map(str::to_string),
        target_rps: t.get("target_rps").and_then(Value::as_u64),
        params,
        requests,
        errors,
        duration_s: f("duration_s")?,
        rps: f("rps")?,
        latency,
        service,
        curve: super::charts::percentile_points(&histogram),
        series,
        name,
    })
}

fn latency(v: Option<&Value>) -> Result<Latency, String> {
    latency_of(v.ok_or("missing")?)
}

fn latency_of(v: &Value) -> Result<Latency, String> {
    let g = |k: &str| v.get(k).and_then(Value::as_f64).ok_or_else(|| format!("no '{k}'"));
    Ok(Latency { avg: g("avg")?, p50: g("p50")?, p99: g("p99")?, p999: g("p99_9")?, max: g("max")? })
}

/// One per-second entry, through its summary fields.
fn second(s: &Value) -> Result<Second, String> {
    let u = |k: &str| s.get(k).and_then(Value::as_u64).ok_or_else(|| format!("a series entry has no '{k}'"));
    let f = |k: &str| s.get(k).and_then(Value::as_f64).ok_or_else(|| format!("a series entry has no '{k}'"));
    Ok(Second {
        second: u("second")?,
        requests: u("requests")?,
        errors: s.get("errors").and_then(Value::as_u64).unwrap_or(0),
        p50: f("p50_ms")?,
        p99: f("p99_ms")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::Histogram;
    use serde_json::json;

    fn hist_data() -> String {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        h.record(250).unwrap();
        json::encode_histogram(&h).unwrap()
    }

    fn test_entry() -> Value {
        json!({
            "name": "GET", "requests": 1, "errors": {"ERR": 2}, "duration_s": 1.0, "rps": 1.0,
            "latency_ms": {"avg": 0.25, "min": 0.25, "p50": 0.25, "p90": 0.25, "p95": 0.25, "p99": 0.25,
                           "p99_9": 0.25, "p99_99": 0.25, "max": 0.25},
            "histogram": {"data": hist_data()},
            "series": [{"second": 0, "requests": 1, "errors": 0, "p50_ms": 0.25, "p99_ms": 0.25, "max_ms": 0.25}],
        })
    }

    #[test]
    fn reads_summaries_and_step_parameters() {
        let mut t = test_entry();
        t["step"] = json!({"datasize": "128", "clients": 7, "pipeline": 1, "threads": 0, "run": 0});
        t["step"].as_object_mut().unwrap().remove("pipeline");
        let doc = json!({"schema": json::SCHEMA, "config": {"clients": 50, "pipeline": 16}, "tests": [t]});
        let tests = read_doc(&doc, 0).unwrap();
        let t = &tests[0];
        assert_eq!(t.errors, 2);
        assert_eq!(t.curve, [(0.0, 0.25)]);
        assert_eq!(t.series.len(), 1);
        assert_eq!(t.series[0].p99, 0.25);
        // The step's own values win over the config's; the pipeline comes from the config.
        assert_eq!(t.params, [Some(128), Some(7), Some(16), Some(0)]);
    }

    /// Version 1 documents, whose seconds carried a histogram, read alike.
    #[test]
    fn reads_version_1() {
        let mut t = test_entry();
        t["series"][0]["histogram"] = json!({"data": hist_data()});
        let doc = json!({"schema": "respbench/1", "tests": [t]});
        assert_eq!(read_doc(&doc, 0).unwrap()[0].series[0].requests, 1);
    }

    #[test]
    fn bad_documents_are_named() {
        let e = read_doc(&json!({"x": 1}), 0).unwrap_err();
        assert!(e.contains("schema is missing"), "{e}");
        let e = read_doc(&json!({"schema": "respbench/9", "tests": []}), 0).unwrap_err();
        assert!(e.contains("'respbench/9'"), "{e}");
        let e = read_doc(&json!({"schema": json::SCHEMA, "tests": []}), 0).unwrap_err();
        assert!(e.contains("no tests"), "{e}");
        let mut t = test_entry();
        t["histogram"]["data"] = json!("!!!");
        let e = read_doc(&json!({"schema": json::SCHEMA, "tests": [t]}), 0).unwrap_err();
        assert!(e.contains("test 1: 'GET': histogram"), "{e}");
        let mut t = test_entry();
        t["series"][0].as_object_mut().unwrap().remove("p99_ms");
        let e = read_doc(&json!({"schema": json::SCHEMA, "tests": [t]}), 0).unwrap_err();
        assert!(e.contains("no 'p99_ms'"), "{e}");
        // Counts that the histogram does not hold (an edited document) are refused.
        let mut t = test_entry();
        t["requests"] = json!(2);
        let e = read_doc(&json!({"schema": json::SCHEMA, "tests": [t.clone()]}), 0).unwrap_err();
        assert!(
            e.contains("'GET': its histogram holds 1 values where requests + latency_lower_bounds say 2"),
            "{e}"
        );
        t["latency_lower_bounds"] = json!(u64::MAX);
        let e = read_doc(&json!({"schema": json::SCHEMA, "tests": [t]}), 0).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
    }
}
