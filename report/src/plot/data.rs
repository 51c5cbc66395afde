//! What `respbench plot` reads from `--json` documents: each test's summary figures, its
//! whole-test histogram, its step parameters and its per-second summaries.
//!
//! The documents are read as [`crate::doc::Document`]s, and only what the charts draw is kept: a
//! test's percentile curves (not its histograms) and its per-second summaries (never a second's
//! histogram).

use hdrhistogram::Histogram;

use crate::doc::{self, Document};
use crate::error::Error;
use crate::{codec, convert};

/// The options a step of a sweep may differ in, with their names in the JSON (`config` and, for
/// runs whose steps vary them, each test entry) and on the charts.
pub const PARAMS: [Param; 4] = [
    Param { key: "datasize", short: "d", option: "-d", title: "value size", bytes: true },
    Param { key: "clients", short: "c", option: "-c", title: "connections (-c)", bytes: false },
    Param { key: "pipeline", short: "P", option: "-P", title: "pipeline (-P)", bytes: false },
    Param {
        key: "threads",
        short: "threads",
        option: "--threads",
        title: "threads (--threads)",
        bytes: false,
    },
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
    /// Whether it is a size in bytes (its axis in binary units: `16 KiB`).
    pub bytes: bool,
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
    pub capacity: Vec<Curve>,
    /// `respbench compare --json`: the comparison.
    pub comparison: Option<doc::Comparison>,
    /// `--dataset-shape`: what was built, with its memory as it grew.
    pub dataset: Option<crate::dataset::Dataset>,
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
    /// A document of more than [`KEPT_TESTS`] tests: how many of them are drawn (evenly
    /// spaced), and how many it has.
    pub thinned: Option<(usize, usize)>,
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

/// An event of a test (`--at`), as the charts mark it. Seconds from the test's start, ms.
#[derive(Clone, Debug, PartialEq)]
pub struct EventMark {
    /// `5s CLIENT PAUSE 500 WRITE`.
    pub label: String,
    /// When it was sent.
    pub sent_s: f64,
    /// When it had recovered; `None`: not by the end.
    pub end_s: Option<f64>,
    /// Its 100 ms windows: start, p99 (ms), replies.
    pub windows: Vec<(f64, f64, u64)>,
}

/// One test (or step) of an input.
#[derive(Debug, Default)]
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
    /// `--at`: each event that was sent, with its window and the 100 ms windows around it.
    pub events: Vec<EventMark>,
    /// Open loop: the service time by percentile, as [`Test::curve`].
    pub service_curve: Option<Vec<(f64, f64)>>,
    /// Who limited the test (`bottleneck.side`: server, client, machine, network…), when judged.
    pub verdict: Option<String>,
    /// The client's CPU per request in microseconds, when measured.
    pub cpu_us: Option<f64>,
    /// The client's CPU as a share of a core per event loop, and its event loops (the text
    /// report's `45% of a core per event loop (2 loops)`), when measured.
    pub core_share: Option<(f64, u64)>,
    /// The repetition (`step.run`, `--repeat`), 0 without.
    pub run: u64,
    /// The server's own execution time (`server_time`: the merge over several nodes, else the
    /// one node's; its busiest command): at p50, p99, p99.9, (nines, bucket's lower ms, upper
    /// ms); empty when not known or not a histogram.
    pub server: Vec<(f64, f64, f64)>,
    /// `--ramp`: what rises (`clients` or `rps`) and each step's figures.
    pub ramp: Option<(String, Vec<RampPoint>)>,
    /// `-t expiry`'s lag or `-t tracking`'s invalidation latency by percentile, as
    /// [`Test::curve`], with its name (`expiry lag`, `invalidation latency`).
    pub notify: Option<(&'static str, Vec<(f64, f64)>)>,
    /// The server's side second by second (`server_series`), every node; empty without.
    pub server_series: Vec<doc::ServerSample>,
}

/// One step of a ramp, as the ramp chart draws it.
#[derive(Clone, Debug, PartialEq)]
pub struct RampPoint {
    /// The step's level: its clients, or its target rate.
    pub level: u64,
    /// Replies per second.
    pub rps: f64,
    /// Latency p50, p99 and p99.9, ms.
    pub p50: f64,
    /// p99.
    pub p99: f64,
    /// p99.9.
    pub p999: f64,
    /// Who limited the step, when judged.
    pub verdict: Option<String>,
}

impl Test {
    /// Whether the test is known to have been limited by something other than the server (the
    /// client, the machine): its figures say less about the server than they seem to.
    pub fn not_server_limited(&self) -> bool {
        self.verdict.as_deref().is_some_and(|v| v != "server")
    }

    /// `server-limited, client 3.1 µs/request, 45% of a core per event loop (2 loops)`: the
    /// verdict and client CPU, as the text report says it.
    pub fn verdict_line(&self) -> String {
        let mut parts = Vec::new();
        parts.push(match self.verdict.as_deref() {
            Some("server") => "server-limited".to_string(),
            Some(v) => format!("NOT server-limited ({v} was the limit)"),
            None => "limit not judged".to_string(),
        });
        if let Some(us) = self.cpu_us {
            let mut c = format!("client {us:.1} µs/request");
            if let Some((share, loops)) = self.core_share {
                let plural = if loops == 1 { "" } else { "s" };
                c.push_str(&format!(
                    ", {:.0}% of a core per event loop ({loops} loop{plural})",
                    share * 100.0
                ));
            }
            parts.push(c);
        }
        parts.join(", ")
    }
}

/// Reads the documents at `paths`; an error names the file and what is wrong with it. Each is
/// streamed from its file: a test is read, kept as the charts need it (its percentile curves,
/// not its histograms) or passed over, and dropped, so memory does not grow with the number of
/// tests (a long `-l` run's tens of thousands): past [`KEPT_TESTS`], every other test kept is
/// let go and the stride doubles, leaving tests evenly spaced through the document.
pub fn read(paths: &[String]) -> Result<Vec<Input>, Error> {
    let mut inputs = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let file =
            std::fs::File::open(path).map_err(|e| Error::Document(format!("cannot read {path}: {e}")))?;
        let reader = std::io::BufReader::with_capacity(1 << 16, file);
        inputs.push(input_from(path, i, &mut serde_json::Deserializer::from_reader(reader))?);
    }
    let names: Vec<String> = inputs.iter().map(|i| file_name(&i.path)).collect();
    for (k, input) in inputs.iter_mut().enumerate() {
        let unique = names.iter().filter(|n| **n == names[k]).count() == 1;
        input.label = if unique { names[k].clone() } else { input.path.clone() };
    }
    Ok(inputs)
}

/// The document `bytes` (read from `path`, input number `i`) as plot keeps it; an error names
/// the path and what is wrong.
pub fn input_of(path: &str, i: usize, bytes: &[u8]) -> Result<Input, Error> {
    input_from(path, i, &mut serde_json::Deserializer::from_slice(bytes))
}

/// Most tests of one document the charts are drawn from (a chart of more shows nothing more).
pub const KEPT_TESTS: usize = 1000;

fn input_from<'de, R: serde_json::de::Read<'de>>(
    path: &str,
    i: usize,
    de: &mut serde_json::Deserializer<R>,
) -> Result<Input, Error> {
    use serde::de::DeserializeSeed;
    let read = Reading { input: i, kept: Vec::new(), total: 0, stride: 1 };
    let outcome = read.deserialize(&mut *de).and_then(|r| de.end().map(|()| r));
    let (doc, mut kept) = match outcome {
        Ok(r) => r,
        // A test that could not be read is named as such, not as a JSON error at its offset.
        Err(e) => {
            return Err(Error::Document(match e.classify() {
                serde_json::error::Category::Syntax
                | serde_json::error::Category::Eof
                | serde_json::error::Category::Io => format!("{path} is not JSON: {e}"),
                serde_json::error::Category::Data => format!("{path}: {e}"),
            }))
        }
    };
    // (A schema this respbench does not read was refused as it was met.)
    if doc.schema.is_empty() {
        return Err(Error::Document(format!("{path}: {}", codec::schema_refused(None))));
    }
    if kept.total == 0 && doc.comparison.is_none() && doc.dataset.is_none() {
        return Err(Error::Document(format!(
            "{path}: no tests in the document (the run ended before its first test)"
        )));
    }
    for t in &mut kept.tests {
        // What a step does not give (a value size that is a range) is the document's config's.
        for (p, v) in PARAMS.iter().zip(&mut t.params) {
            if v.is_none() {
                *v = match p.key {
                    "datasize" => Some(doc.config.datasize),
                    "clients" => Some(doc.config.clients),
                    "pipeline" => Some(doc.config.pipeline),
                    "threads" => Some(doc.config.threads),
                    _ => None,
                };
            }
        }
    }
    let mut context = context(&doc, &kept.tests);
    context.thinned = (kept.tests.len() < kept.drawable).then_some((kept.tests.len(), kept.drawable));
    let capacity = read_capacity(&doc, i);
    let comparison = doc.comparison;
    let dataset = doc.dataset;
    Ok(Input {
        path: path.to_string(),
        label: file_name(path),
        tests: kept.tests,
        context,
        capacity,
        comparison,
        dataset,
    })
}

/// The tests kept of a document, and how many it had.
struct Kept {
    tests: Vec<Test>,
    /// Tests in the document.
    total: usize,
    /// Tests with figures to draw (those in which some request succeeded).
    drawable: usize,
}

/// The streaming read of one document: its fields but `tests` into a [`Document`], its tests one
/// by one into what is kept.
struct Reading {
    input: usize,
    kept: Vec<Test>,
    total: usize,
    stride: usize,
}

impl<'de> serde::de::DeserializeSeed<'de> for Reading {
    type Value = (Document, Kept);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Reading {
    type Value = (Document, Kept);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a respbench --json document (an object)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error as _;
        let mut doc = Document::default();
        let mut schema = None;
        let mut drawable = 0;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "schema" => {
                    let s: String = map.next_value()?;
                    if s != codec::SCHEMA && !codec::READS_ALSO.contains(&s.as_str()) {
                        return Err(A::Error::custom(codec::schema_refused(Some(&s))));
                    }
                    schema = Some(s);
                }
                "tests" => {
                    let seen = map.next_value_seed(TestsSeed(&mut self))?;
                    drawable = seen;
                }
                "config" => doc.config = map.next_value()?,
                "server" => doc.server = map.next_value()?,
                "command_line" => doc.command_line = map.next_value()?,
                "capacity" => doc.capacity = map.next_value()?,
                "mixture" => doc.mixture = map.next_value()?,
                "comparison" => doc.comparison = map.next_value()?,
                "dataset" => doc.dataset = map.next_value()?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        doc.schema = schema.unwrap_or_default();
        let kept = Kept { tests: self.kept, total: self.total, drawable };
        Ok((doc, kept))
    }
}

/// The `tests` array, read one test at a time into a [`Reading`]; its value is how many tests
/// have figures to draw.
struct TestsSeed<'a>(&'a mut Reading);

impl<'de> serde::de::DeserializeSeed<'de> for TestsSeed<'_> {
    type Value = usize;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for TestsSeed<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of tests")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        use serde::de::Error as _;
        let r = self.0;
        let mut drawable = 0;
        while let Some(t) = seq.next_element::<doc::Test>()? {
            r.total += 1;
            // A test in which no request succeeded has no figures to draw.
            if t.no_request_succeeded == Some(true) {
                continue;
            }
            drawable += 1;
            if (drawable - 1) % r.stride != 0 {
                continue;
            }
            match read_test(&t, r.input) {
                Ok(test) => r.kept.push(test),
                Err(e) => return Err(A::Error::custom(format!("test {}: {e}", r.total))),
            }
            // A scenario's groups: each drawn as a test of its own, `TEST/GROUP`.
            for g in t.groups_as_tests().filter(|g| g.no_request_succeeded != Some(true)) {
                let test =
                    read_test(&g, r.input).map_err(|e| A::Error::custom(format!("{}: {e}", g.name)))?;
                r.kept.push(test);
            }
            if r.kept.len() >= 2 * KEPT_TESTS {
                r.halve();
            }
        }
        if r.kept.len() > KEPT_TESTS {
            r.halve();
        }
        Ok(drawable)
    }
}

impl Reading {
    /// Every other test kept goes, and the stride doubles: those left are every (2 × stride)th.
    fn halve(&mut self) {
        let mut k = 0;
        self.kept.retain(|_| {
            k += 1;
            k % 2 == 1
        });
        self.stride *= 2;
    }
}

/// The document's context: its command line, server, first test's date and backend.
fn context(doc: &Document, tests: &[Test]) -> Context {
    let command_line = doc.command_line.as_ref().map(|args| {
        let args: Vec<String> = args
            .iter()
            .map(|a| if a.is_empty() || a.contains([' ', '"', '\'']) { format!("'{a}'") } else { a.clone() })
            .collect();
        format!("respbench {}", args.join(" "))
    });
    let s = &doc.server;
    let parts: Vec<String> = [&s.name, &s.version, &s.mode].into_iter().flatten().cloned().collect();
    let server = (!parts.is_empty()).then(|| parts.join(" "));
    let date =
        tests.first().map(|t| t.start_us).filter(|&us| us > 0).map(|us| crate::shared::utc(us / 1_000_000));
    Context {
        command_line,
        server,
        date,
        backend: Some(doc.config.backend.clone()).filter(|b| !b.is_empty()),
        mixture: doc.mixture.is_some(),
        thinned: None,
    }
}

fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn read_test(t: &doc::Test, input: usize) -> Result<Test, Error> {
    let name = t.name.clone();
    let at = |e: String| Error::Document(format!("'{name}': {e}"));
    let requests = t.requests;
    let errors = t.errors.values().fold(0u64, |a, &n| a.saturating_add(n));
    let latency = latency_of(t.latency_ms.as_ref()).map_err(|e| at(format!("latency_ms: {e}")))?;
    let service = t
        .service_latency_ms
        .as_ref()
        .map(|l| latency_of(Some(l)))
        .transpose()
        .map_err(|e| at(format!("service_latency_ms: {e}")))?;
    let histogram = codec::decode_histogram(&t.histogram.data).map_err(|e| at(format!("histogram: {e}")))?;
    let service_histogram = t
        .service_histogram
        .as_ref()
        .map(|d| codec::decode_histogram(&d.data).map_err(|e| at(format!("service_histogram: {e}"))))
        .transpose()?;
    // As `respbench merge` checks them: the histograms hold what the counts say.
    let lower_bounds = t.latency_lower_bounds.unwrap_or(0);
    convert::check_counts(
        histogram.len(),
        service_histogram.as_ref().map(Histogram::len),
        requests,
        lower_bounds,
    )
    .map_err(|e| at(e.to_string()))?;
    let series = match &t.series {
        None => Vec::new(),
        Some(list) => list.iter().map(second).collect::<Result<_, _>>().map_err(|e| at(e.to_string()))?,
    };
    // A step's own parameters come first: a sweep writes each step's in its entry's `step`
    // (`datasize` as -d gives it, so "16" is 16 and a range is not a number); the document's
    // config holds what all steps share.
    let from_step = |k: &str| -> Option<u64> {
        let s = t.step.as_ref()?;
        match k {
            "datasize" => s.datasize.parse().ok(),
            "clients" => Some(s.clients),
            "pipeline" => Some(s.pipeline),
            "threads" => Some(s.threads),
            _ => None,
        }
    };
    // What the step does not give is the document's config's, filled in once it is read.
    let params = PARAMS.map(|p| from_step(p.key));
    let service_curve = service_histogram.as_ref().map(percentile_points);
    let notify = [
        ("expiry lag", t.expiry.as_ref().and_then(|e| e.histogram.as_ref())),
        ("invalidation latency", t.tracking.as_ref().and_then(|k| k.histogram.as_ref())),
    ]
    .into_iter()
    .find_map(|(what, h)| Some((what, h?)))
    .map(|(what, h)| {
        let h = codec::decode_histogram(&h.data).map_err(|e| at(format!("{what} histogram: {e}")))?;
        Ok::<_, Error>((what, percentile_points(&h)))
    })
    .transpose()?;
    Ok(Test {
        notify,
        input,
        start_us: t.start_us,
        service_curve,
        verdict: t.bottleneck.as_ref().map(|b| b.side.clone()),
        cpu_us: t.client_cpu.map(|c| c.us_per_request),
        core_share: t.client_cpu.map(|c| (c.core_share, c.threads)),
        run: t.step.as_ref().map_or(0, |s| s.run),
        backend: t.backend.clone(),
        target_rps: t.target_rps,
        params,
        requests,
        errors,
        duration_s: t.duration_s,
        rps: t.rps.ok_or_else(|| at("no 'rps' number".into()))?,
        latency,
        service,
        curve: percentile_points(&histogram),
        series,
        events: t.events.iter().flatten().filter_map(event_mark).collect(),
        name,
        server: t.server_time.as_ref().map(server_points).unwrap_or_default(),
        ramp: t.ramp.as_ref().map(|r| {
            let steps = r
                .steps
                .iter()
                .map(|s| RampPoint {
                    level: s.level,
                    rps: s.rps,
                    p50: crate::hdr::ms(s.p50_us),
                    p99: crate::hdr::ms(s.p99_us),
                    p999: crate::hdr::ms(s.p999_us),
                    verdict: s.verdict.as_ref().map(|v| v.side.name().to_string()),
                })
                .collect();
            (r.kind.name().to_string(), steps)
        }),
        server_series: t.server_series.clone().unwrap_or_default(),
    })
}

/// The server's buckets at p50, p99 and p99.9 as points of the percentile axis: (nines, lower
/// ms, upper ms), the lower bound kept off 0 (1 µs, the latency histograms' floor) for a log
/// axis.
fn server_points(st: &crate::doc::ServerTime) -> Vec<(f64, f64, f64)> {
    let commands = match (&st.merged, st.nodes.as_slice()) {
        (Some(m), _) => m,
        (None, [one]) => &one.commands,
        _ => return Vec::new(),
    };
    let Some(c) = commands.iter().max_by_key(|c| c.calls) else { return Vec::new() };
    [(2.0_f64.log10(), c.p50_us), (2.0, c.p99_us), (3.0, c.p99_9_us)]
        .into_iter()
        .filter_map(|(x, b)| b.map(|[lo, hi]| (x, (lo.max(1)) as f64 / 1000.0, hi.max(1) as f64 / 1000.0)))
        .collect()
}

/// An event that was sent, as the charts mark it.
fn event_mark(e: &doc::EventEntry) -> Option<EventMark> {
    let sent_s = e.sent_s.filter(|s| s.is_finite())?;
    let d = e.disruption.as_ref();
    Some(EventMark {
        label: format!("{}s {}", super::svg::number(e.at_s), e.command),
        sent_s,
        end_s: d.and_then(|d| d.window_ms).map(|w| sent_s + w / 1000.0),
        windows: d
            .map(|d| d.windows.iter().map(|w| (w.at_s, w.p99_ms, w.requests)).collect())
            .unwrap_or_default(),
    })
}

fn latency_of(v: Option<&doc::Latency>) -> Result<Latency, Error> {
    let v = v.ok_or_else(|| Error::Document("missing".into()))?;
    Ok(Latency { avg: v.avg, p50: v.p50, p99: v.p99, p999: v.p99_9, max: v.max })
}

/// One per-second entry, through its summary fields.
fn second(s: &doc::SecondEntry) -> Result<Second, Error> {
    let f =
        |v: Option<f64>, k: &str| v.ok_or_else(|| Error::Document(format!("a series entry has no '{k}'")));
    Ok(Second {
        second: s.second,
        requests: s.requests,
        errors: s.errors,
        p50: f(s.p50_ms, "p50_ms")?,
        p99: f(s.p99_ms, "p99_ms")?,
    })
}

/// One step drawn: its achieved rate, its percentiles in ms, and whether it passed.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Replies per second achieved.
    pub achieved: f64,
    /// Corrected p50, p99, p99.9 and the service p99, in ms (`NaN` where unknown).
    pub ms: [f64; 4],
    /// Whether the step passed (a search's verdict, or a schedule kept).
    pub passed: bool,
    /// Who limited it (`server`, `client`, …), when the document says.
    pub bottleneck: Option<String>,
}

/// One run's curve: a search of one test, or one test's `--rps` steps.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// Index of its input.
    pub input: usize,
    /// The test's title.
    pub test: String,
    /// The objectives: their text and limit in ms (a search only).
    pub objectives: Vec<(String, f64)>,
    /// The answer: the achieved rate of its step and its target (a search that met it).
    pub answer: Option<(f64, u64)>,
    /// The steps, by achieved rate.
    pub points: Vec<Point>,
}

/// The curves of a document's `capacity` (none without a search).
pub fn read_capacity(doc: &Document, input: usize) -> Vec<Curve> {
    let mut out = Vec::new();
    for c in doc.capacity.iter().flatten() {
        let objectives = c.objectives.iter().map(|o| (o.text.clone(), o.limit_us / 1000.0)).collect();
        let mut points: Vec<Point> = c
            .steps
            .iter()
            .map(|s| Point {
                achieved: s.achieved_rps,
                ms: [s.latency_us.p50, s.latency_us.p99, s.latency_us.p99_9, s.service_p99_us]
                    .map(|us| us as f64 / 1000.0),
                passed: s.passed,
                bottleneck: s.bottleneck.clone(),
            })
            .collect();
        let answer = c.answer.and_then(|a| Some((points.get(a.step as usize)?.achieved, a.rps)));
        points.sort_by(|a, b| a.achieved.total_cmp(&b.achieved));
        out.push(Curve { input, test: c.test.clone(), objectives, answer, points });
    }
    out
}

/// Points of the percentile curve every 0.01 nines, up to `1 − 1/n` (the last percentile `n`
/// values resolve), in milliseconds; runs of equal values keep only their ends. Values follow
/// C hdr_histogram's `hdr_value_at_percentile` (the count rounded to nearest, the highest value
/// equivalent to the bucket reaching it), as the text report's percentiles do.
pub fn percentile_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    const STEP: f64 = 0.01;
    if h.is_empty() {
        return Vec::new();
    }
    let n = h.len();
    let top = (n as f64).log10();
    let xs: Vec<f64> = (0..=(top / STEP).ceil() as usize).map(|i| (i as f64 * STEP).min(top)).collect();
    let mut points = Vec::with_capacity(xs.len());
    let mut iter = h.iter_recorded();
    let mut cumulative = 0_u64;
    let mut value = 0_u64;
    for &x in &xs {
        let p = 1.0 - 10f64.powf(-x);
        let wanted = ((p * n as f64) + 0.5) as u64;
        let wanted = wanted.clamp(1, n);
        while cumulative < wanted {
            match iter.next() {
                Some(v) => {
                    cumulative += v.count_since_last_iteration();
                    value = h.highest_equivalent(v.value_iterated_to());
                }
                None => break,
            }
        }
        // 1 µs is the histogram's floor: a log axis cannot show 0.
        points.push((x, (value.max(1)) as f64 / 1000.0));
    }
    let keep = |i: usize| {
        i == 0 || i + 1 == points.len() || points[i - 1].1 != points[i].1 || points[i + 1].1 != points[i].1
    };
    (0..points.len()).filter(|&i| keep(i)).map(|i| points[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// A document written as JSON, read as plot reads it.
    fn read_doc(v: &Value, input: usize) -> Result<Vec<Test>, String> {
        input_of("doc.json", input, v.to_string().as_bytes()).map(|i| i.tests).map_err(|e| e.to_string())
    }

    fn hist_data() -> String {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        h.record(250).unwrap();
        codec::encode_histogram(&h).unwrap()
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
        t["step"] = json!({"datasize": "16-64", "clients": 7, "pipeline": 1, "threads": 0, "run": 0});
        let doc = json!({"schema": codec::SCHEMA, "config": {"clients": 50, "pipeline": 16, "datasize": 128}, "tests": [t]});
        let tests = read_doc(&doc, 0).unwrap();
        let t = &tests[0];
        assert_eq!(t.errors, 2);
        assert_eq!(t.curve, [(0.0, 0.25)]);
        assert_eq!(t.series.len(), 1);
        assert_eq!(t.series[0].p99, 0.25);
        // The step's own values win over the config's; a value size that is not a number (a
        // range) comes from the config.
        assert_eq!(t.params, [Some(128), Some(7), Some(1), Some(0)]);
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
        let e = read_doc(&json!({"schema": codec::SCHEMA, "tests": []}), 0).unwrap_err();
        assert!(e.contains("no tests"), "{e}");
        let mut t = test_entry();
        t["histogram"]["data"] = json!("!!!");
        let e = read_doc(&json!({"schema": codec::SCHEMA, "tests": [t]}), 0).unwrap_err();
        assert!(e.contains("test 1: 'GET': histogram"), "{e}");
        let mut t = test_entry();
        t["series"][0].as_object_mut().unwrap().remove("p99_ms");
        let e = read_doc(&json!({"schema": codec::SCHEMA, "tests": [t]}), 0).unwrap_err();
        assert!(e.contains("no 'p99_ms'"), "{e}");
        // Counts that the histogram does not hold (an edited document) are refused.
        let mut t = test_entry();
        t["requests"] = json!(2);
        let e = read_doc(&json!({"schema": codec::SCHEMA, "tests": [t.clone()]}), 0).unwrap_err();
        assert!(
            e.contains("'GET': its histogram holds 1 values where requests + latency_lower_bounds say 2"),
            "{e}"
        );
        t["latency_lower_bounds"] = json!(u64::MAX);
        let e = read_doc(&json!({"schema": codec::SCHEMA, "tests": [t]}), 0).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
    }

    /// A document of more tests than are kept: tests evenly spaced through it, at most
    /// KEPT_TESTS of them, and the context says how many of how many.
    #[test]
    fn long_documents_are_thinned_evenly() {
        for n in [KEPT_TESTS, KEPT_TESTS + 1, 2 * KEPT_TESTS, 5 * KEPT_TESTS + 3] {
            let tests: Vec<Value> = (0..n)
                .map(|k| {
                    let mut t = test_entry();
                    t["name"] = json!(format!("T{k}"));
                    t
                })
                .collect();
            let doc = json!({"schema": codec::SCHEMA, "tests": tests});
            let input = input_of("doc.json", 0, doc.to_string().as_bytes()).unwrap();
            let names: Vec<usize> = input.tests.iter().map(|t| t.name[1..].parse().unwrap()).collect();
            assert!(
                names.len() <= KEPT_TESTS && names.len() * 2 > KEPT_TESTS.min(n),
                "{n}: {} kept",
                names.len()
            );
            let stride = names.get(1).map_or(1, |b| b - names[0]);
            assert!(names.iter().enumerate().all(|(k, &v)| v == k * stride), "{n}: not evenly spaced");
            let want = (names.len() < n).then_some((names.len(), n));
            assert_eq!(input.context.thinned, want, "{n}");
        }
    }
}
