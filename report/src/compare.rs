//! `respbench compare A.json B.json` (or `--a a1.json a2.json --b b1.json b2.json`, or one
//! `--ab` document): is B faster than A? For each test both sides ran, the ratio B / A of its
//! requests per second and of its p50, p99 and p99.9, each with a 95% confidence interval, and a
//! verdict in words.
//!
//! **The method.** A test's runs on a side are its repeats (`--repeat`, several documents, or
//! `--ab`'s alternation); a side's figure is the mean of its runs' figures (each run's rps, and
//! each run's percentiles from its whole histogram). The interval is a two-level bootstrap with
//! a fixed seed: a resample draws a side's runs with replacement, and within each drawn run its
//! full seconds (the per-second series) with replacement. A document keeps each second's summary
//! (requests, p50, p99, p99.9), not its histogram, so a drawn run's figure is its own (exact)
//! figure scaled by the resampled seconds' mean over all its seconds' mean: the seconds carry
//! the run's spread within, the runs the spread between. A run without a series (a `-n` run)
//! is one unit. A resampled mean of n runs is widened by √(n/(n − 1)) about the side's mean, on
//! the logarithm (a
//! mean of n draws spreads (n − 1)/n as much as the mean it stands for), which brings the error
//! rate of five runs a side to the 5% it should be (a test measures it). The interval is the
//! 2.5th to 97.5th percentile of B / A over the resamples.
//!
//! **The verdicts.** "B is x% slower" when the whole interval is on the slower side (rps lower, a
//! percentile higher; x is of A's figure), "faster" likewise; "no difference found" when the
//! interval holds 0 and lies within the margin (`--fail-if-slower`'s threshold, else 5%); else
//! "inconclusive", with about how many more repeats would settle it (the interval narrows as
//! one over the square root of the runs).
//!
//! **What is refused.** Runs whose configurations differ in more than the target (with merge's
//! wording), a side's documents that are not repeats of one configuration, and, per test, a run
//! whose verdict was not `server` (the client or the machine set the number): flagged and left
//! out. `--force` compares them anyway, marked in the output.

use std::io::{self, Write};

use respbench_session::result::StepValues;
use serde_json::Value;

use crate::doc::{self, ComparedFigure, ComparedSide, ComparedTest, Comparison, Document};
use crate::error::Error;
use crate::{convert, json, merge};

mod stats;

use stats::means;
pub use stats::{bootstrap, judge, resamples_for, Interval, Judged, Run};

/// What `respbench compare` was asked to do: its options as plain data (the binary parses them).
#[derive(Clone, Debug, Default)]
pub struct CompareArgs {
    /// `--a`: side A's documents.
    pub a: Vec<String>,
    /// `--b`: side B's documents.
    pub b: Vec<String>,
    /// Positional: `A.json B.json`, or one `--ab` document.
    pub files: Vec<String>,
    /// `--force`: compare what differs in more than the target, and tests not limited by the
    /// server, marked.
    pub force: bool,
    /// `--json`: where the comparison's document goes (`-`: stdout, which then carries it only).
    pub json: Option<String>,
    /// `--fail-if-slower`, as given (`5%`).
    pub fail_if_slower: Option<String>,
    /// `--strict`: an undecided figure (its interval reaches past the threshold) fails too.
    pub strict: bool,
}

/// The resampling generator's seed: fixed, so that the same documents give the same intervals.
pub const SEED: u64 = 0x5EED_C0DE;
/// Resamples drawn (fewer for a huge input: see [`resamples_for`]).
pub const RESAMPLES: usize = 2000;
/// The intervals' confidence.
pub const CONFIDENCE: f64 = 0.95;
/// The margin without `--fail-if-slower`: a change smaller than 5% of A's figure is no difference.
pub const DEFAULT_MARGIN: f64 = 0.05;
/// What the bootstrap resamples, as the document says it.
pub const UNIT: &str = "runs, then the full seconds within each run (a run without a series is one unit)";

/// The figures compared: name, unit, and whether a higher value is slower.
pub const FIGURES: [(&str, &str, bool); 4] =
    [("rps", "rps", false), ("p50", "ms", true), ("p99", "ms", true), ("p99.9", "ms", true)];

/// The arguments after `compare` with `--a x y --b z` spelled as `--a x --a y --b z`, so that an
/// option parser that takes one value per option reads several files per side.
pub fn expand_sides(args: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut side: Option<&str> = None;
    for &a in args {
        if a == "--a" || a == "--b" {
            side = Some(a);
            continue;
        }
        if a.starts_with('-') && a != "-" {
            side = None;
        }
        match side {
            Some(s) => {
                out.push(s.to_string());
                out.push(a.to_string());
            }
            None => out.push(a.to_string()),
        }
    }
    // A trailing `--a` with no file is left for the parser to refuse.
    if let Some(s) = side.filter(|_| args.last().is_some_and(|l| *l == "--a" || *l == "--b")) {
        out.push(s.to_string());
    }
    out
}

/// One side's documents and the tests of it they hold.
struct Side {
    /// `A` or `B`.
    name: &'static str,
    files: Vec<String>,
    address: Option<String>,
    server: doc::Server,
    /// Each test of the side: which file, and the entry.
    tests: Vec<(usize, doc::Test)>,
    /// Each file's `--duration`.
    durations: Vec<Option<f64>>,
    /// Its first document's configuration.
    config: doc::RunConfig,
    /// Its first document's dataset (`--dataset-shape`).
    dataset: Option<crate::dataset::Dataset>,
}

/// `HOST:PORT` or the socket a document's runs went to.
fn address(c: &doc::RunConfig) -> Option<String> {
    match (&c.socket, &c.host, c.port) {
        (Some(s), _, _) => Some(s.clone()),
        (None, Some(h), Some(p)) if h.contains(':') => Some(format!("[{h}]:{p}")),
        (None, Some(h), Some(p)) => Some(format!("{h}:{p}")),
        _ => None,
    }
}

/// Reads `paths`' documents.
fn read_all(paths: &[String]) -> Result<Vec<Document>, Error> {
    paths
        .iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(p).map_err(|e| Error::Document(format!("cannot read {p}: {e}")))?;
            merge::read_document(p, &text)
        })
        .collect()
}

/// Whether a document holds both sides of an `--ab` run.
fn is_ab(d: &Document) -> bool {
    d.config.ab.is_some() || d.tests.iter().any(|t| t.side.is_some())
}

/// The config fields that are the target, or free between runs: not compared.
const TARGET: &[&str] = &["host", "port", "socket", "ab", "seed", "start_at_us"];

/// The two sides the arguments name, and what `--force` let through (else the refusal).
fn sides(args: &CompareArgs) -> Result<(Side, Side, Vec<String>), Error> {
    let usage = "usage: respbench compare A.json B.json, or --a A1.json A2.json … --b B1.json …, or one --ab document";
    let force_hint = "\n(respbench compare --force compares them anyway, marked in the output)";
    let mut forced = Vec::new();
    let (a_files, b_files) = match (args.a.is_empty(), args.b.is_empty(), args.files.len()) {
        (true, true, 2) => (vec![args.files[0].clone()], vec![args.files[1].clone()]),
        (true, true, 1) => {
            let path = &args.files[0];
            let d = read_all(std::slice::from_ref(path))?.remove(0);
            if !is_ab(&d) {
                return Err(Error::Refused(format!(
                    "{path} holds one side only (it is not an --ab run); {usage}"
                )));
            }
            let pick = |side: &str| {
                d.tests.iter().filter(|t| t.side.as_deref() == Some(side)).map(|t| (0, t.clone())).collect()
            };
            let durations = vec![d.config.duration_s];
            let a = Side {
                name: "A",
                files: vec![path.clone()],
                address: address(&d.config),
                server: d.server.clone(),
                tests: pick("a"),
                durations: durations.clone(),
                config: d.config.clone(),
                dataset: None,
            };
            let b = Side {
                name: "B",
                files: vec![path.clone()],
                address: d.config.ab.clone(),
                server: d.server_b.clone().unwrap_or_default(),
                tests: pick("b"),
                durations,
                config: d.config.clone(),
                dataset: None,
            };
            return Ok((a, b, forced));
        }
        (false, false, 0) => (args.a.clone(), args.b.clone()),
        _ => return Err(Error::Refused(format!("compare needs two sides; {usage}"))),
    };
    let (da, db) = (read_all(&a_files)?, read_all(&b_files)?);
    if let Some(p) =
        a_files.iter().chain(&b_files).zip(da.iter().chain(&db)).find(|(_, d)| is_ab(d)).map(|(p, _)| p)
    {
        return Err(Error::Refused(format!(
            "{p} is an --ab run, which holds both sides: compare it alone ({usage})"
        )));
    }
    // A side's documents must be repeats of one configuration, as merge wants them.
    for (name, files, docs) in [("A", &a_files, &da), ("B", &b_files, &db)] {
        let listed: Vec<merge::Listed> = docs.iter().map(merge::Listed::of).collect();
        let differ = merge::check_repeats(files, docs, &listed);
        if !differ.is_empty() {
            let e = format!(
                "side {name}'s runs are not repeats of one configuration:\n  {}",
                differ.join("\n  ")
            );
            if !args.force {
                return Err(Error::Refused(format!("{e}{force_hint}")));
            }
            forced.push(e);
        }
    }
    // Between the sides only the target may differ.
    let comparable = |d: &Document| {
        let mut c = merge::config_value(d);
        if let Value::Object(m) = &mut c {
            for k in TARGET {
                m.remove(*k);
            }
        }
        c
    };
    let differ: Vec<String> = db
        .iter()
        .zip(&b_files)
        .map(|(d, f)| (f, merge::differences(&comparable(d), &comparable(&da[0]), &a_files[0])))
        .filter(|(_, d)| !d.is_empty())
        .map(|(f, d)| format!("{f}: {}", d.join(", ")))
        .collect();
    if !differ.is_empty() {
        let e = format!("these runs differ in more than the target:\n  {}", differ.join("\n  "));
        if !args.force {
            return Err(Error::Refused(format!("{e}{force_hint}")));
        }
        forced.push(e);
    }
    let side = |name, files: Vec<String>, docs: Vec<Document>| {
        let address = address(&docs[0].config);
        let server = docs[0].server.clone();
        let durations = docs.iter().map(|d| d.config.duration_s).collect();
        let config = docs[0].config.clone();
        let dataset = docs[0].dataset.clone();
        let tests = docs
            .into_iter()
            .enumerate()
            .flat_map(|(i, d)| d.tests.into_iter().flat_map(with_groups).map(move |t| (i, t)))
            .collect();
        Side { name, files, address, server, tests, durations, config, dataset }
    };
    Ok((side("A", a_files, da), side("B", b_files, db), forced))
}

/// A test and, after it, a scenario's groups as tests of their own named `TEST/GROUP` (as the
/// `-q` lines name them), so that two runs of a scenario compare group by group.
fn with_groups(t: doc::Test) -> Vec<doc::Test> {
    let groups: Vec<doc::Test> = t.groups_as_tests().collect();
    std::iter::once(t).chain(groups).collect()
}

/// What keeps tests apart: name, backend, target rate and a sweep's step without its run.
type Key = (String, Option<String>, Option<u64>, Option<StepValues>);

fn key_of(t: &doc::Test) -> Key {
    let step = t.step.clone().map(|s| StepValues { run: 0, ..s });
    (t.name.clone(), t.backend.clone(), t.target_rps, step)
}

/// How the text names a test: `GET`, `GET [smol] @ 1000 rps (-c 50 -P 16)`.
fn title(k: &Key, several_backends: bool, several_steps: bool) -> String {
    let mut t = k.0.clone();
    if let Some(b) = k.1.as_ref().filter(|_| several_backends) {
        t.push_str(&format!(" [{b}]"));
    }
    if let Some(r) = k.2 {
        t.push_str(&format!(" @ {r} rps"));
    }
    if let Some(s) = k.3.as_ref().filter(|_| several_steps) {
        t.push_str(&format!(
            " (-d {} -c {} -P {} --threads {})",
            s.datasize, s.clients, s.pipeline, s.threads
        ));
    }
    t
}

/// A side's runs of one test, or why it is left out; and what `--force` let through.
struct Measured {
    runs: Vec<Run>,
    /// Runs not limited by the server: (run from 1, its verdict).
    not_server: Vec<(usize, String)>,
    /// Runs in which no request succeeded.
    empty: usize,
}

fn measure(side: &Side, key: &Key) -> Result<Measured, Error> {
    let mut m = Measured { runs: Vec::new(), not_server: Vec::new(), empty: 0 };
    for (k, (file, t)) in side.tests.iter().filter(|(_, t)| key_of(t) == *key).enumerate() {
        let e = convert::read_test(t).map_err(|e| Error::Document(format!("{}: {e}", side.files[*file])))?;
        if t.rps.is_none() || e.stats.requests == 0 || e.stats.latency.is_empty() {
            m.empty += 1;
            continue;
        }
        if let Some(b) = t.bottleneck.as_ref().filter(|b| b.side != "server") {
            m.not_server.push((k + 1, b.side.clone()));
        }
        m.runs.push(Run::of(&e.stats, side.durations.get(*file).copied().flatten()));
    }
    Ok(m)
}

/// What `respbench compare` concluded, for the binary to map to its exit status (`diff`'s
/// convention: 0, 1 for B slower, 2 for trouble, which is an `Err` of [`run`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No `--fail-if-slower` was asked, or B is within it.
    Passed,
    /// B is slower than `--fail-if-slower` allows (stderr was told which figures).
    Slower,
}

/// Runs `respbench compare`: the comparison's text to `out` (unless `--json -`, which then
/// carries the document alone), what the user should know to `err`. The error is the message
/// for stderr.
pub fn run(args: &CompareArgs, mut out: &mut dyn Write, err: &mut dyn Write) -> Result<Verdict, Error> {
    let limit = args
        .fail_if_slower
        .as_deref()
        .map(|v| respbench_session::syntax::percent("--fail-if-slower", v))
        .transpose()
        .map_err(|e| Error::Refused(e.to_string()))?;
    let (a, b, forced) = sides(args)?;
    let comparison = compare(&a, &b, forced, args.force, limit, args.strict)?;
    let to_stdout = args.json.as_deref() == Some("-");
    if !to_stdout {
        write_text(&comparison, &mut out)
            .and_then(|_| out.flush())
            .map_err(|source| Error::Write { output: "stdout".into(), source })?;
    }
    let told = |source: io::Error| Error::Write { output: "stderr".into(), source };
    if let Some(f) = comparison.forced.as_ref() {
        writeln!(err, "respbench compare: --force: {}", f.join("\n")).map_err(told)?;
    }
    if let Some(path) = &args.json {
        // The configuration compared (A's) and A's server, as a run's document has them.
        let mut d = json::document(a.config.clone(), a.server.clone(), false, Vec::new());
        d.comparison = Some(comparison.clone());
        json::write_json(path, &d)?;
    }
    if comparison.failed {
        let failed: Vec<String> = comparison
            .tests
            .iter()
            .flat_map(|t| {
                t.figures
                    .iter()
                    .filter(|f| gate_fails(f, args.strict))
                    .map(move |f| format!("{} {}", t.name, f.figure))
            })
            .collect();
        writeln!(
            err,
            "respbench compare: B is slower than --fail-if-slower {} allows: {}",
            percent_text(limit.unwrap_or(0.0)),
            failed.join(", ")
        )
        .map_err(told)?;
        return Ok(Verdict::Slower);
    }
    Ok(Verdict::Passed)
}

fn gate_fails(f: &ComparedFigure, strict: bool) -> bool {
    matches!(f.gate.as_deref(), Some("fail")) || (strict && matches!(f.gate.as_deref(), Some("undecided")))
}

/// `0.05` as `5%`.
fn percent_text(share: f64) -> String {
    let p = share * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

/// The comparison of the two sides, test by test.
fn compare(
    a: &Side,
    b: &Side,
    mut forced: Vec<String>,
    force: bool,
    limit: Option<f64>,
    strict: bool,
) -> Result<Comparison, Error> {
    let margin = limit.unwrap_or(DEFAULT_MARGIN);
    let mut keys: Vec<Key> = Vec::new();
    for (_, t) in &a.tests {
        let k = key_of(t);
        if !keys.contains(&k) && b.tests.iter().any(|(_, u)| key_of(u) == k) {
            keys.push(k);
        }
    }
    let memory = crate::dataset_compare::compare(a.dataset.as_ref(), b.dataset.as_ref());
    // Two --dataset-only runs compare their memory alone.
    if keys.is_empty() && memory.is_empty() {
        return Err(Error::Refused(format!(
            "no test is in both sides (A has {}; B has {})",
            names(&a.tests),
            names(&b.tests)
        )));
    }
    let units: usize =
        a.tests.iter().chain(&b.tests).map(|(_, t)| t.series.as_ref().map_or(1, Vec::len).max(1)).sum();
    let resamples = resamples_for(units);
    let several = keys.iter().any(|k| k.1 != keys[0].1);
    let steps = keys.iter().any(|k| k.3 != keys[0].3);
    let mut tests = Vec::new();
    for key in &keys {
        let (ma, mb) = (measure(a, key)?, measure(b, key)?);
        let name = title(key, several, steps);
        let mut t = ComparedTest {
            name: name.clone(),
            backend: key.1.clone(),
            target_rps: key.2,
            step: key.3.clone(),
            runs_a: ma.runs.len() as u64,
            runs_b: mb.runs.len() as u64,
            seconds_a: ma.runs.iter().map(|r| r.seconds.len() as u64).sum(),
            seconds_b: mb.runs.iter().map(|r| r.seconds.len() as u64).sum(),
            ..ComparedTest::default()
        };
        let mut flags = Vec::new();
        for (side, m) in [(a, &ma), (b, &mb)] {
            if !m.not_server.is_empty() {
                // By verdict: `machine: runs 1, 2; client: run 4`.
                let mut by: Vec<(&str, Vec<String>)> = Vec::new();
                for (run, v) in &m.not_server {
                    match by.iter_mut().find(|(w, _)| w == v) {
                        Some((_, runs)) => runs.push(run.to_string()),
                        None => by.push((v, vec![run.to_string()])),
                    }
                }
                let groups: Vec<String> = by
                    .iter()
                    .map(|(v, runs)| {
                        format!("{v}: run{} {}", if runs.len() > 1 { "s" } else { "" }, runs.join(", "))
                    })
                    .collect();
                flags.push(format!(
                    "not limited by the server in {} of {}'s {} runs ({})",
                    m.not_server.len(),
                    side.name,
                    m.runs.len(),
                    groups.join("; ")
                ));
            }
        }
        if ma.runs.is_empty() || mb.runs.is_empty() {
            let who = if ma.runs.is_empty() { "A" } else { "B" };
            let empty = if ma.runs.is_empty() { ma.empty } else { mb.empty };
            t.left_out = Some(format!("no request succeeded in any of {who}'s {empty} runs"));
        } else if !flags.is_empty() && !force {
            t.left_out = Some(format!(
                "{}: the client or the machine set the figures (--force compares it anyway)",
                flags.join("; ")
            ));
        } else {
            if !flags.is_empty() {
                let f = flags.join("; ");
                forced.push(format!("{name}: {f}"));
                t.forced = Some(f);
            }
            let intervals = bootstrap(&ma.runs, &mb.runs, resamples, SEED);
            let (fa, fb) = (means(&ma.runs), means(&mb.runs));
            let runs = ma.runs.len().min(mb.runs.len()) as u64;
            for (f, iv) in intervals.iter().enumerate() {
                let (fig, unit, higher_slower) = FIGURES[f];
                let slower = if higher_slower {
                    [iv.ratio - 1.0, iv.low - 1.0, iv.high - 1.0]
                } else {
                    [1.0 - iv.ratio, 1.0 - iv.high, 1.0 - iv.low]
                };
                let change = [iv.ratio - 1.0, iv.low - 1.0, iv.high - 1.0];
                let j = judge(slower, change, runs, margin, limit);
                t.figures.push(ComparedFigure {
                    figure: fig.into(),
                    unit: unit.into(),
                    a: fa[f],
                    b: fb[f],
                    ratio: iv.ratio,
                    ratio_low: iv.low,
                    ratio_high: iv.high,
                    slower: slower[0],
                    slower_low: slower[1],
                    slower_high: slower[2],
                    verdict: j.verdict.into(),
                    text: j.text,
                    more_repeats: j.more,
                    gate: j.gate.map(Into::into),
                });
            }
        }
        tests.push(t);
    }
    let failed = tests.iter().flat_map(|t| &t.figures).any(|f| gate_fails(f, strict));
    let side = |s: &Side| ComparedSide {
        files: s.files.clone(),
        address: s.address.clone(),
        server: s.server.clone(),
    };
    Ok(Comparison {
        a: side(a),
        b: side(b),
        method: doc::Method {
            name: "bootstrap".into(),
            unit: UNIT.into(),
            confidence: CONFIDENCE,
            resamples: resamples as u64,
            seed: SEED,
        },
        margin,
        fail_if_slower: limit,
        strict,
        forced: (!forced.is_empty()).then_some(forced),
        tests,
        memory,
        failed,
    })
}

/// A document compared with itself (its `--ab` sides, else its tests on both sides), forced, as
/// the fuzz target drives it ([`crate::read_untrusted`]): an answer or an error, never a panic,
/// in time bounded by the document's size ([`resamples_for`]).
pub fn compare_untrusted(d: &Document) -> Result<Comparison, Error> {
    let side = |name, tests: Vec<(usize, doc::Test)>| Side {
        name,
        files: vec!["input".into()],
        address: address(&d.config),
        server: d.server.clone(),
        tests,
        durations: vec![d.config.duration_s],
        config: d.config.clone(),
        dataset: d.dataset.clone(),
    };
    let all = |keep: &dyn Fn(&doc::Test) -> bool| {
        d.tests.iter().filter(|t| keep(t)).map(|t| (0, t.clone())).collect()
    };
    let (a, b) = if is_ab(d) {
        (
            side("A", all(&|t| t.side.as_deref() == Some("a"))),
            side("B", all(&|t| t.side.as_deref() == Some("b"))),
        )
    } else {
        (side("A", all(&|_| true)), side("B", all(&|_| true)))
    };
    compare(&a, &b, Vec::new(), true, Some(DEFAULT_MARGIN), false)
}

/// The distinct test names of a side, for an error.
fn names(tests: &[(usize, doc::Test)]) -> String {
    let mut n: Vec<&str> = tests.iter().map(|(_, t)| t.name.as_str()).collect();
    n.dedup();
    if n.is_empty() {
        "no tests".into()
    } else {
        n.join(", ")
    }
}

/// `redis 7.0.15`, or `server not identified`.
fn server_text(s: &doc::Server) -> String {
    match (&s.name, &s.version) {
        (Some(n), Some(v)) => format!("{n} {v}"),
        (Some(n), None) => n.clone(),
        _ => "server not identified".into(),
    }
}

/// A figure's value as the text shows it.
fn value_text(v: f64, unit: &str) -> String {
    if unit == "rps" {
        format!("{v:.0} rps")
    } else {
        format!("{v:.3} ms")
    }
}

/// The comparison as text: the sides, the method, then each test's figures and verdicts, and
/// `--fail-if-slower`'s result.
pub fn write_text(c: &Comparison, out: &mut impl Write) -> io::Result<()> {
    if c.forced.is_some() {
        writeln!(
            out,
            "FORCED: --force compared what is otherwise refused; see stderr and each test marked forced"
        )?;
    }
    for (name, s) in [("A", &c.a), ("B", &c.b)] {
        let at = s.address.as_ref().map(|a| format!(" at {a}")).unwrap_or_default();
        writeln!(out, "{name}: {} ({}{at})", s.files.join(" "), server_text(&s.server))?;
    }
    writeln!(
        out,
        "95% intervals by bootstrap over the runs and their seconds ({} resamples, seed {}); no difference: within ±{}",
        c.method.resamples,
        c.method.seed,
        percent_text(c.margin)
    )?;
    for t in &c.tests {
        writeln!(out)?;
        let seconds = if t.seconds_a + t.seconds_b > 0 {
            format!(", {} and {} seconds", t.seconds_a, t.seconds_b)
        } else {
            ", no per-second series".into()
        };
        writeln!(out, "{}: {} runs of A, {} of B{seconds}", t.name, t.runs_a, t.runs_b)?;
        if let Some(why) = &t.left_out {
            writeln!(out, "  left out: {why}")?;
            continue;
        }
        if let Some(f) = &t.forced {
            writeln!(out, "  FORCED: {f}")?;
        }
        for f in &t.figures {
            writeln!(
                out,
                "  {:<6} A {:>12}  B {:>12}  B/A {:.3} ({:.3}–{:.3})  {}",
                f.figure,
                value_text(f.a, &f.unit),
                value_text(f.b, &f.unit),
                f.ratio,
                f.ratio_low,
                f.ratio_high,
                f.text
            )?;
        }
    }
    crate::dataset_compare::write_text(&c.memory, out)?;
    if let Some(limit) = c.fail_if_slower {
        writeln!(out)?;
        let limit = percent_text(limit);
        let mut any = false;
        for t in &c.tests {
            for f in &t.figures {
                match f.gate.as_deref() {
                    Some("fail") => writeln!(out, "--fail-if-slower {limit}: {} {}: failed: {}", t.name, f.figure, f.text)?,
                    Some("undecided") => writeln!(
                        out,
                        "--fail-if-slower {limit}: {} {}: undecided, the interval reaches {:.1}% slower: {}{}",
                        t.name,
                        f.figure,
                        f.slower_high * 100.0,
                        f.text,
                        if c.strict { " (failed: --strict)" } else { " (not failed without --strict)" }
                    )?,
                    _ => continue,
                }
                any = true;
            }
        }
        if !any {
            writeln!(
                out,
                "--fail-if-slower {limit}: passed: no figure is slower by more, with 95% confidence"
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::stats::signed;
    use super::*;
    use respbench_core::rng::Rng;
    use respbench_core::shared::Second;
    use respbench_core::Stats;
    use respbench_core::Time;
    use respbench_session::result::TestResult;

    fn run(rps: f64, seconds: &[f64]) -> Run {
        Run { figures: [rps, 1.0, 2.0, 3.0], seconds: seconds.iter().map(|&r| [r, 1.0, 2.0, 3.0]).collect() }
    }

    /// A change is signed by its rounded tenths: a zero one (`-0.04` was `+-0.0%`) has `±`.
    #[test]
    fn changes_are_signed_as_they_round() {
        let cases = [
            (1.4, "+1.4%"),
            (-1.1, "\u{2212}1.1%"),
            (-0.04, "±0.0%"),
            (0.04, "±0.0%"),
            (0.0, "±0.0%"),
            (-0.0, "±0.0%"),
            (-0.06, "\u{2212}0.1%"),
            (0.05, "+0.1%"),
        ];
        for (pct, want) in cases {
            assert_eq!(signed(pct), want, "{pct}");
        }
        let j = judge([-0.0004, -0.0006, 0.0004], [0.0004, -0.0004, 0.0006], 5, 0.05, None);
        assert_eq!(j.text, "no difference found (±0.0% to +0.1%)");
    }

    /// Two runs of one unit each: B's mean resamples to 90, 100 or 110 with chances 1/4, 1/2,
    /// 1/4 over A's constant 100, widened by √(2/1) about 100 on the logarithm: 100 · 0.9^√2
    /// and 100 · 1.1^√2, so the 95% interval is exactly 0.9^√2 to 1.1^√2.
    #[test]
    fn two_runs_give_the_known_quantiles() {
        let a = [run(100.0, &[]), run(100.0, &[])];
        let b = [run(90.0, &[]), run(110.0, &[])];
        let iv = bootstrap(&a, &b, RESAMPLES, SEED);
        let w = 2f64.sqrt();
        let (lo, hi) = (0.9f64.powf(w), 1.1f64.powf(w));
        assert!((iv[0].low - lo).abs() < 1e-12 && (iv[0].high - hi).abs() < 1e-12, "{:?}", iv[0]);
    }

    /// One run a side of two seconds each: A's seconds 100 and 100, B's 80 and 120 around a run
    /// figure of 100. B's drawn seconds average 80, 100 or 120 (1/4, 1/2, 1/4), scaling its
    /// figure to 80, 100 or 120.
    #[test]
    fn seconds_scale_their_run() {
        let a = [run(100.0, &[100.0, 100.0])];
        let b = [run(100.0, &[80.0, 120.0])];
        let iv = bootstrap(&a, &b, RESAMPLES, SEED);
        assert_eq!(iv[0], Interval { ratio: 1.0, low: 0.8, high: 1.2 });
    }

    /// A test's stats: `runs`' worth of literal latencies (µs, each `n` times), a second per
    /// entry of `seconds` (requests, p50 µs).
    fn stats(latencies: &[(u64, u64)], seconds: &[(u64, u64)]) -> Stats {
        let mut s = Stats::new(Time::from_micros(1_000_000), 3, false).unwrap();
        for &(us, n) in latencies {
            for _ in 0..n {
                s.record(us * 1000, 0, Time::from_micros(1_500_000));
            }
        }
        s.keep_series = !seconds.is_empty();
        s.series = seconds
            .iter()
            .map(|&(requests, p50)| Second {
                requests,
                errors: 0,
                p50,
                p90: p50,
                p99: p50,
                p999: p50,
                max: p50,
                bounds: false,
            })
            .collect();
        s.end = Time::from_micros(1_000_000 + 1_000_000 * seconds.len().max(1) as u64);
        s
    }

    fn test_entry(s: Stats, bottleneck: &str, side: Option<&str>) -> doc::Test {
        let mut t = convert::test(&TestResult::new("GET".into(), "GET".into(), s), 0).unwrap();
        t.bottleneck = Some(doc::Bottleneck { side: bottleneck.into(), ..Default::default() });
        t.side = side.map(Into::into);
        t
    }

    fn side(name: &'static str, tests: Vec<doc::Test>) -> Side {
        Side {
            name,
            files: vec![format!("{name}.json")],
            address: None,
            server: doc::Server::default(),
            tests: tests.into_iter().map(|t| (0, t)).collect(),
            durations: vec![None],
            config: doc::RunConfig::default(),
            dataset: None,
        }
    }

    fn figure<'a>(c: &'a Comparison, name: &str) -> &'a ComparedFigure {
        c.tests[0].figures.iter().find(|f| f.figure == name).unwrap()
    }

    /// Literal histograms through the document: B's every latency 1.1 times A's (and each of
    /// its seconds' too), three runs a side: every resample's ratio is 1.1.
    #[test]
    fn literal_histograms_a_tenth_slower() {
        let runs = |us: u64| -> Vec<doc::Test> {
            (0..3)
                .map(|_| {
                    test_entry(
                        stats(&[(us, 900), (us * 3, 90), (us * 10, 10)], &[(500, us), (500, us)]),
                        "server",
                        None,
                    )
                })
                .collect()
        };
        let (a, b) = (side("A", runs(100)), side("B", runs(110)));
        let c = compare(&a, &b, Vec::new(), false, None, false).unwrap();
        let p50 = figure(&c, "p50");
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
        assert!(close(p50.a, 0.1) && close(p50.b, 0.11), "{p50:?}");
        assert!(
            (p50.ratio - 1.1).abs() < 1e-9
                && (p50.ratio_low - 1.1).abs() < 1e-9
                && (p50.ratio_high - 1.1).abs() < 1e-9
        );
        assert_eq!(p50.text, "B is 10.0% slower (95% CI 10.0–10.0%)");
        assert_eq!(p50.verdict, "slower");
        let p99 = figure(&c, "p99");
        assert!(close(p99.a, 0.3) && close(p99.b, 0.33), "{p99:?}");
        let p999 = figure(&c, "p99.9");
        assert!(close(p999.a, 1.0) && close(p999.b, 1.1), "{p999:?}");
        // The same requests in the same time: the same rate.
        let rps = figure(&c, "rps");
        assert_eq!(rps.ratio, 1.0);
        assert_eq!(rps.text, "no difference found (±0.0% to ±0.0%)");
        assert_eq!((c.tests[0].runs_a, c.tests[0].seconds_b), (3, 6));
        // And the other way round, B faster.
        let c = compare(&b, &a, Vec::new(), false, None, false).unwrap();
        assert_eq!(figure(&c, "p50").text, "B is 9.1% faster (95% CI 9.1–9.1%)");
    }

    #[test]
    fn verdicts_in_words() {
        let j = judge([0.082, 0.069, 0.095], [0.082, 0.069, 0.095], 5, 0.05, None);
        assert_eq!((j.verdict, j.text.as_str()), ("slower", "B is 8.2% slower (95% CI 6.9–9.5%)"));
        let j = judge([-0.001, -0.011, 0.014], [-0.001, -0.011, 0.014], 5, 0.05, None);
        assert_eq!((j.verdict, j.text.as_str()), ("no_difference", "no difference found (−1.1% to +1.4%)"));
        // rps: B's rate up 1.1% to down 1.4% is slower by −1.1% to +1.4%; shown as the rate's change.
        let j = judge([0.001, -0.011, 0.014], [-0.001, -0.014, 0.011], 5, 0.05, None);
        assert_eq!(j.text, "no difference found (−1.4% to +1.1%)");
        // −4% to +6% from 5 runs (on the log ratio, centre 0.0087, half-width 0.0495): within
        // the 5% margin (ln 1.05 = 0.0488) needs the half-width under 0.0401, 5 × (0.0495 /
        // 0.0401)² = 7.6 runs, so 3 more.
        let j = judge([0.01, -0.04, 0.06], [0.01, -0.04, 0.06], 5, 0.05, None);
        assert_eq!(j.verdict, "inconclusive");
        assert_eq!(j.more, Some(3));
        assert_eq!(
            j.text,
            "inconclusive: the runs disagree; about 3 more repeats would settle it (−4.0% to +6.0%)"
        );
        // −2% to +14% is ln 0.98 to ln 1.14, centre 0.0554, half-width 0.0756: excluding 0
        // needs 5 × (0.0756/0.0554)² = 9.3 runs, 5 more.
        let j = judge([0.06, -0.02, 0.14], [0.06, -0.02, 0.14], 5, 0.05, None);
        assert_eq!(j.more, Some(5));
    }

    #[test]
    fn the_gate_fails_only_with_confidence() {
        let gate = |lo: f64, hi: f64| judge([(lo + hi) / 2.0, lo, hi], [0.0; 3], 5, 0.05, Some(0.05)).gate;
        assert_eq!(gate(0.069, 0.095), Some("fail"));
        assert_eq!(gate(0.01, 0.04), Some("pass"));
        assert_eq!(gate(-0.02, 0.05), Some("pass"));
        assert_eq!(gate(0.03, 0.07), Some("undecided"));
        let f = |g: &str| ComparedFigure { gate: Some(g.into()), ..Default::default() };
        assert!(gate_fails(&f("fail"), false) && !gate_fails(&f("undecided"), false));
        assert!(gate_fails(&f("undecided"), true) && !gate_fails(&f("pass"), true));
    }

    /// The method's error rate, on sides drawn from one distribution (each run's level from
    /// N(100, 3²), its ten seconds from N(level, 5²)), five runs a side, 400 comparisons from a
    /// fixed seed: how often the interval misses a ratio of 1. A 95% interval should about 5%
    /// of the time: 19 of 400 here (28 of 400, 7%, before the resampled means were widened by
    /// √(n/(n − 1))).
    #[test]
    fn intervals_of_equal_sides_miss_one_rarely() {
        let mut rng = Rng::new(42);
        let mut normal = move || {
            // Box-Muller.
            let (u, v) = (rng.next_f64().max(1e-12), rng.next_f64());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let side = |normal: &mut dyn FnMut() -> f64| -> Vec<Run> {
            (0..5)
                .map(|_| {
                    let level = 100.0 + 3.0 * normal();
                    let seconds: Vec<f64> = (0..10).map(|_| level + 5.0 * normal()).collect();
                    let mean = seconds.iter().sum::<f64>() / 10.0;
                    run(mean, &seconds)
                })
                .collect()
        };
        let mut missed = 0;
        let trials = 400;
        for k in 0..trials {
            let (a, b) = (side(&mut normal), side(&mut normal));
            let iv = bootstrap(&a, &b, 500, SEED + k)[0];
            if iv.low > 1.0 || iv.high < 1.0 {
                missed += 1;
            }
        }
        let share = missed as f64 / trials as f64;
        eprintln!("{missed} of {trials} intervals missed 1");
        assert!((0.02..=0.08).contains(&share), "{missed} of {trials} intervals missed 1");
    }

    #[test]
    fn not_server_limited_runs_are_left_out_unless_forced() {
        let entry = |v: &str| test_entry(stats(&[(100, 1000)], &[(500, 100), (500, 100)]), v, None);
        let a = side("A", vec![entry("server"), entry("server")]);
        let b = side("B", vec![entry("server"), entry("client")]);
        let c = compare(&a, &b, Vec::new(), false, None, false).unwrap();
        assert!(c.tests[0].figures.is_empty());
        let why = c.tests[0].left_out.as_deref().unwrap();
        assert!(why.starts_with("not limited by the server in 1 of B's 2 runs (client: run 2)"), "{why}");
        assert!(c.forced.is_none());
        let forced = compare(&a, &b, Vec::new(), true, None, false).unwrap();
        assert_eq!(forced.tests[0].figures.len(), 4);
        assert!(forced.tests[0].forced.as_deref().unwrap().contains("(client: run 2)"));
        assert!(forced.forced.as_ref().unwrap()[0].starts_with("GET: not limited by the server"));
        let mut text = Vec::new();
        write_text(&forced, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("FORCED: "), "{text}");
        assert!(text.contains("  FORCED: not limited by the server in 1 of B's 2 runs"), "{text}");
    }

    /// Writes `doc` to a file of its own under the temporary directory.
    fn file(name: &str, doc: &Document) -> String {
        let dir = std::env::temp_dir().join(format!("respbench-compare-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, doc.to_text().unwrap()).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn document(clients: u64, port: u16, tests: Vec<doc::Test>) -> Document {
        let config = doc::RunConfig {
            host: Some("127.0.0.1".into()),
            port: Some(port),
            clients,
            ..Default::default()
        };
        json::document(config, doc::Server::default(), false, tests)
    }

    #[test]
    fn configurations_that_differ_in_more_than_the_target_are_refused() {
        let t = || vec![test_entry(stats(&[(100, 1000)], &[]), "server", None)];
        let a = file("a.json", &document(50, 6379, t()));
        let b = file("b.json", &document(50, 6380, t()));
        let other = file("c.json", &document(10, 6380, t()));
        let args = |files: &[&String]| CompareArgs {
            files: files.iter().map(|f| f.to_string()).collect(),
            ..Default::default()
        };
        // The port is the target: compared.
        let (sa, sb, forced) = sides(&args(&[&a, &b])).unwrap();
        assert!(forced.is_empty());
        assert_eq!(
            (sa.address.as_deref(), sb.address.as_deref()),
            (Some("127.0.0.1:6379"), Some("127.0.0.1:6380"))
        );
        let e = sides(&args(&[&a, &other])).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!(
                "these runs differ in more than the target:\n  {other}: -c 10 where {a} has -c 50\n\
                 (respbench compare --force compares them anyway, marked in the output)"
            )
        );
        let (_, _, forced) = sides(&CompareArgs { force: true, ..args(&[&a, &other]) }).unwrap();
        assert_eq!(forced.len(), 1);
        // A side's files must be repeats of one configuration.
        let e = sides(&CompareArgs {
            a: vec![a.clone(), other.clone()],
            b: vec![b.clone()],
            ..Default::default()
        })
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.starts_with(&format!("side A's runs are not repeats of one configuration:\n  {other}: -c 10")),
            "{e}"
        );
        // One document that is not an --ab run is one side.
        assert!(sides(&args(&[&a])).err().unwrap().to_string().contains("holds one side only"));
        // An --ab document: its sides by each test's side.
        let mut ab = document(50, 6379, vec![]);
        ab.config.ab = Some("127.0.0.1:6380".into());
        ab.tests = vec![
            test_entry(stats(&[(100, 1000)], &[]), "server", Some("a")),
            test_entry(stats(&[(120, 1000)], &[]), "server", Some("b")),
        ];
        let (sa, sb, _) = sides(&args(&[&file("ab.json", &ab)])).unwrap();
        assert_eq!((sa.tests.len(), sb.tests.len(), sb.address.as_deref()), (1, 1, Some("127.0.0.1:6380")));
        assert!(sides(&args(&[&file("ab.json", &ab), &b]))
            .err()
            .unwrap()
            .to_string()
            .contains("is an --ab run"));
    }

    #[test]
    fn several_files_a_side() {
        assert_eq!(
            expand_sides(&["--a", "a1", "a2", "--b", "b1", "--json", "-", "--fail-if-slower", "5%"]),
            ["--a", "a1", "--a", "a2", "--b", "b1", "--json", "-", "--fail-if-slower", "5%"]
        );
        assert_eq!(expand_sides(&["x.json", "y.json"]), ["x.json", "y.json"]);
        assert_eq!(expand_sides(&["--a"]), ["--a"]);
        assert_eq!(expand_sides(&["--a", "a1", "--b"]), ["--a", "a1", "--b"]);
        assert_eq!(resamples_for(10), RESAMPLES);
        assert_eq!(resamples_for(100_000_000), 200);
    }
}
