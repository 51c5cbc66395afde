//! `respbench merge A.json B.json … [--json OUT]`: combines the `--json` documents of several runs
//! (one per client machine or process) test by test, exactly: histograms add bucket by bucket,
//! counts add, and the interval is the union of the runs' intervals.
//!
//! Only sums that mean something are made: the documents must be the parts of one split run
//! (`--worker I/N`: the same configuration and `--start-at`, each part once) or repeats of one
//! configuration (the same options but for the seed and `--start-at`, the same tests, the same
//! server). Anything else is refused with what differs, unless `--force`, which marks the result
//! as a mixture: `mixture` in the document and a `MIXTURE:` line in the text.

use std::io::{self, Write};

use serde_json::Value;

use crate::doc::{self, Document};
use crate::error::Error;
use crate::text::{self as report, TestLine};
use crate::{convert, json};

mod stream;
use respbench_session::result::{StepValues, TestResult};

/// What `respbench merge` was asked to do: its options as plain data (the binary parses them).
#[derive(Clone, Debug, Default)]
pub struct MergeArgs {
    /// `--json`: where the merged document goes (`-`: stdout, and the lines are not printed).
    pub json: Option<String>,
    /// `--force`: merge documents that are not parts or repeats of one run, marked a mixture.
    pub force: bool,
    /// The documents to merge.
    pub files: Vec<String>,
}

/// Runs `respbench merge`: reads, checks and merges the documents, writes a line per test to
/// `out` and `--json` (to `out` for `-`), and what the user should know to `err`. The error is
/// the message for stderr. Memory does not grow with the number of tests: see [`stream`].
pub fn run(opts: &MergeArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Error> {
    if opts.files.is_empty() {
        return Err(Error::Refused(
            "no files to merge; usage: respbench merge A.json B.json … [--json OUT]".into(),
        ));
    }
    // A document of another kind is refused as that, before its differences are listed.
    let mut scanned = opts.files.iter().map(|path| stream::scan(path)).collect::<Result<Vec<_>, _>>()?;
    let docs: Vec<Document> = scanned.iter_mut().map(|s| std::mem::take(&mut s.doc)).collect();
    let mut mixture = Vec::new();
    let force_hint = "\n(respbench merge --force adds them up anyway and marks the result as a mixture)";
    let workers = match check_parts(&opts.files, &docs) {
        Ok(w) => w,
        Err(e) if opts.force => {
            mixture.push(e.to_string());
            None
        }
        Err(e) => return Err(Error::Refused(format!("{e}{force_hint}"))),
    };
    if workers.is_none() && mixture.is_empty() {
        let listed: Vec<Listed> = scanned.iter_mut().map(|s| std::mem::take(&mut s.listed)).collect();
        let differ = check_repeats(&opts.files, &docs, &listed);
        if !differ.is_empty() {
            let e = format!(
                "these runs are not repeats of one configuration (nor the parts of one --worker run):\n  {}",
                differ.join("\n  ")
            );
            if !opts.force {
                return Err(Error::Refused(format!("{e}{force_hint}")));
            }
            mixture.push(e);
        }
    }
    let first_mode = docs.first().map_or("window", |d| pipeline_mode(d));
    for (path, doc) in opts.files.iter().zip(&docs) {
        let mode = pipeline_mode(doc);
        if mode != first_mode && mixture.is_empty() {
            return Err(Error::Refused(format!("{path}: {}", modes_differ(mode, first_mode))));
        }
    }
    if !mixture.is_empty() {
        writeln!(err, "respbench merge: --force: {}", mixture.join("\n"))?;
    }
    // A split run's capacity ladder: judged again on the merged steps.
    let searches = crate::capacity::merge(&docs)?;
    let first = &docs[0];
    let mut head = json::document(first.config.clone(), first.server.clone(), false, Vec::new());
    if let Some(count) = workers {
        // The merged document is the whole run: its config without one worker's part.
        head.config.worker = None;
        head.config.workers = Some(count);
    }
    for (path, doc) in opts.files.iter().zip(&docs) {
        head.interrupted |= doc.interrupted;
        if let Some(late) = doc.late_by_s.filter(|&l| l > 0.0) {
            let who = part_of(doc).map(|(i, n)| format!("worker {i}/{n} ({path})")).unwrap_or(path.clone());
            writeln!(err, "respbench merge: {who} began {late:.3} s after its --start-at")?;
        }
        head.late_by_s = match (head.late_by_s, doc.late_by_s) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    if !searches.is_empty() {
        head.capacity = Some(crate::capacity::to_json(&searches, 0)?);
    }
    head.merged_from = Some(opts.files.clone());
    head.command_line = first.command_line.clone().filter(|_| mixture.is_empty());
    head.mixture = (!mixture.is_empty()).then(|| mixture.clone());
    // The merged tests, in order of first appearance.
    let order = stream::order_of(&scanned);
    let mut backends: Vec<&Option<String>> = order.iter().map(|k| &k.1).collect();
    backends.dedup();
    backends.sort();
    backends.dedup();
    let lines = opts.json.as_deref() != Some("-");
    let mut file = match opts.json.as_deref() {
        Some(path) if path != "-" => Some(
            crate::files::Streamed::create(std::path::Path::new(path)).map_err(|e| Error::json(path, e))?,
        ),
        _ => None,
    };
    if lines && !mixture.is_empty() {
        writeln!(
            out,
            "MIXTURE: the sums below add up runs of different configurations (--force); see stderr for what differs"
        )
        ?;
    }
    let json_path = opts.json.as_deref().unwrap_or("-");
    let mut doc_out = match (&mut file, opts.json.is_some()) {
        (Some(f), _) => Some(stream::JsonOut::begin(&head, json_path, f)?),
        (None, true) => Some(stream::JsonOut::begin(&head, json_path, out)?),
        (None, false) => None,
    };
    let mut fired: Vec<(String, Vec<doc::EventEntry>)> = Vec::new();
    stream::merge_each(&opts.files, &scanned, &docs, &order, |e, events| {
        if lines {
            write_quiet_line(&e, backends.len() > 1, out)?;
        }
        if let Some(j) = &mut doc_out {
            // The stats' times are already microseconds since the Unix epoch.
            let mut t = convert::test(&e, 0)?;
            t.events = (!events.is_empty()).then(|| events.clone());
            let to: &mut dyn Write = match &mut file {
                Some(f) => f,
                None => &mut *out,
            };
            j.test(&t, to)?;
        }
        if !events.is_empty() {
            fired.push((e.name, events));
        }
        Ok(())
    })?;
    if lines {
        for (name, events) in &fired {
            for ev in events {
                writeln!(out, "{}", crate::events::merged_line(name, ev))?;
            }
        }
        for f in &searches {
            writeln!(out, "{}", crate::capacity::answer_line(f))?;
        }
        out.flush()?;
    }
    if let Some(j) = doc_out {
        match file {
            Some(mut f) => {
                j.end(&mut f)?;
                f.finish().map_err(|e| Error::json(json_path, e))?;
            }
            None => j.end(out)?,
        }
    }
    // As a whole run's search does: an objective the fleet met at no rate is a failure.
    if let Some(f) = searches
        .iter()
        .find(|f| !matches!(f.capacity.conclusion, respbench_session::capacity::Conclusion::Met { .. }))
    {
        return Err(Error::NotMet(crate::capacity::answer_line(f)));
    }
    Ok(())
}

/// A merged test's `-q` line: its title (with its backend when the tests ran on several, and its
/// target rate) and figures.
fn write_quiet_line(e: &TestResult, backends: bool, mut out: &mut dyn Write) -> io::Result<()> {
    let mut title = match &e.backend {
        Some(b) if backends => format!("{} [{b}]", e.name),
        _ => e.name.clone(),
    };
    if let Some(r) = e.target_rps {
        title.push_str(&format!(" @ {r} rps"));
    }
    report::write_quiet(&TestLine::of(e, &title, &[]), &mut out)
}

/// Why documents of pipeline modes `mode` and `first` do not merge.
fn modes_differ(mode: &str, first: &str) -> String {
    // A batch and a window put different loads on the server: their sums mean nothing.
    format!(
        "ran -P in {mode} mode and the first document in {first} mode (--pipeline-mode): \
         documents of different pipeline modes do not merge"
    )
}

/// Reads a document: the whole text, or else the one that starts at a line holding only `{`
/// among other lines (a pod's log from `kubectl logs`, which has stderr's lines around the
/// JSON `--json -` wrote on stdout).
pub(crate) fn read_document(path: &str, text: &str) -> Result<Document, Error> {
    let whole = match serde_json::from_str::<Value>(text) {
        Ok(value) => return json::document_of(value).map_err(|e| Error::Document(format!("{path}: {e}"))),
        Err(e) => format!("{path} is not JSON: {e}"),
    };
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "{" {
            let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
            if let Some(Ok(value)) = values.next() {
                if value.get("schema").is_some() {
                    return json::document_of(value).map_err(|e| Error::Document(format!("{path}: {e}")));
                }
            }
        }
        at += line.len();
    }
    Err(Error::Document(whole))
}

/// A split run's part: `config.worker`'s index and count.
fn part_of(doc: &Document) -> Option<(u64, u64)> {
    doc.config.worker.as_ref().map(|w| (w.index, w.count))
}

/// A document's `config` as JSON, for listing what differs field by field.
pub(crate) fn config_value(doc: &Document) -> Value {
    serde_json::to_value(&doc.config).unwrap_or(Value::Null)
}

/// When the documents are parts of a split run (`--worker`), checks that they are all the parts
/// of one run: each index from 0 to N-1 once, and the same `config` but for the worker's part
/// and the seed (each worker's clock seeds its own without `--seed`). The count of workers, or
/// `None` for whole runs.
fn check_parts(files: &[String], docs: &[Document]) -> Result<Option<u64>, Error> {
    let parts: Vec<Option<(u64, u64)>> = docs.iter().map(part_of).collect();
    let Some(first) = parts.iter().position(Option::is_some) else {
        return Ok(None);
    };
    let (_, count) = parts[first].unwrap_or_default();
    let name = |i: usize| match parts[i] {
        Some((w, n)) => format!("{} (worker {w}/{n})", files[i]),
        None => files[i].clone(),
    };
    let mut problems = Vec::new();
    if let Some(whole) = parts.iter().position(Option::is_none) {
        problems.push(format!(
            "{} is a whole run (no config.worker) but {} is one worker's part of a split run",
            files[whole],
            name(first)
        ));
    }
    let comparable = |doc: &Document| {
        let mut c = config_value(doc);
        if let Value::Object(m) = &mut c {
            m.remove("worker");
            m.remove("seed");
        }
        c
    };
    let reference = comparable(&docs[first]);
    let mut seen: Vec<Option<usize>> = vec![None; count as usize];
    for (i, part) in parts.iter().enumerate() {
        let Some((index, n)) = *part else { continue };
        if n != count {
            problems.push(format!("{} is one of {n} workers but {} one of {count}", name(i), name(first)));
            continue;
        }
        match seen.get_mut(index as usize) {
            Some(Some(before)) => problems
                .push(format!("worker {index}/{count} appears twice: {} and {}", files[*before], files[i])),
            Some(slot) => *slot = Some(i),
            None => problems.push(format!("{}: index {index} is not below the count {count}", files[i])),
        }
        let differ = differences(&comparable(&docs[i]), &reference, &files[first]);
        if !differ.is_empty() {
            problems.push(format!("{} is not a part of the same run: {}", name(i), differ.join(", ")));
        }
    }
    let missing: Vec<String> =
        seen.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(w, _)| w.to_string()).collect();
    if !missing.is_empty() {
        let have = count as usize - missing.len();
        let plural = if missing.len() == 1 { "worker" } else { "workers" };
        problems.push(format!(
            "incomplete: {have} of the {count} parts of the run; missing {plural} {} (of --worker I/{count}, \
             I from 0 to {})",
            missing.join(", "),
            count - 1
        ));
    }
    if problems.is_empty() {
        Ok(Some(count))
    } else {
        Err(Error::Refused(format!(
            "these are not the {count} parts of one split run:\n  {}",
            problems.join("\n  ")
        )))
    }
}

/// The `config` fields whose values differ between `a` and `b`, which file `b_name` holds:
/// `key_dist "uniform" where b.json has "sequential"`.
pub(crate) fn differences(a: &Value, b: &Value, b_name: &str) -> Vec<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return if a == b { Vec::new() } else { vec![format!("config differs from {b_name}'s")] };
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let shown = |v: Option<&Value>| match v {
        None => "absent".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| match option_of(k) {
            Some(o) => {
                // As it was given: `--rps-slack 250us`, or `no --rps-slack` where it was not.
                let unit = if k.ends_with("_us") {
                    "us"
                } else if k.ends_with("_s") {
                    "s"
                } else {
                    ""
                };
                let given = |v: Option<&Value>| match v {
                    None | Some(Value::Null) => format!("no {o}"),
                    v => format!("{o} {}{unit}", shown(v)),
                };
                format!("{} where {b_name} has {}", given(a.get(k)), given(b.get(k)))
            }
            None => {
                let json = |v: Option<&Value>| v.map_or_else(|| "absent".to_string(), Value::to_string);
                format!("{k} {} where {b_name} has {}", json(a.get(k)), json(b.get(k)))
            }
        })
        .collect()
}

/// The config fields that may differ between repeats of one configuration: the seed (each run
/// draws its own without `--seed`) and when it began.
const REPEAT_FREE: &[&str] = &["seed", "start_at_us"];

/// What [`check_repeats`] compares of a document's tests, kept as they are read (a streamed
/// merge keeps no test): each test's name, backend and the rest of its title (target rate,
/// sweep step), and the cluster nodes they ran on, each address once.
#[derive(Default)]
pub(crate) struct Listed {
    tests: Vec<(String, Option<String>, String)>,
    nodes: Vec<String>,
}

impl Listed {
    /// Adds a test.
    pub(crate) fn add(&mut self, t: &doc::Test) {
        let mut rest = String::new();
        if let Some(r) = t.target_rps {
            rest.push_str(&format!(" @ {r} rps"));
        }
        if let Some(s) = &t.step {
            rest.push_str(&format!(" {}", serde_json::to_value(s).unwrap_or(Value::Null)));
        }
        let test = (t.name.clone(), t.backend.clone(), rest);
        if self.tests.last() != Some(&test) {
            self.tests.push(test);
        }
        for n in t.nodes.iter().flatten() {
            if !self.nodes.contains(&n.address) {
                self.nodes.push(n.address.clone());
            }
        }
    }

    /// A whole document's tests.
    pub(crate) fn of(doc: &Document) -> Listed {
        let mut l = Listed::default();
        doc.tests.iter().for_each(|t| l.add(t));
        l
    }

    /// The tests' titles, `GET [mio] @ 2000 rps`, with the backend where `doc` ran on several.
    fn titles(&self, doc: &Document) -> Vec<String> {
        let several = doc.config.backend.contains(',');
        let mut names: Vec<String> = self
            .tests
            .iter()
            .map(|(name, backend, rest)| match backend.as_ref().filter(|_| several) {
                Some(b) => format!("{name} [{b}]{rest}"),
                None => format!("{name}{rest}"),
            })
            .collect();
        names.dedup();
        names
    }
}

/// What makes whole runs other than repeats of one configuration: each document's differences
/// from the first in its options (as `-c 10 where a.json has -c 50`), its tests and its server.
/// Empty when they are repeats.
pub(crate) fn check_repeats(files: &[String], docs: &[Document], listed: &[Listed]) -> Vec<String> {
    let cluster = |doc: &Document| doc.config.cluster;
    let comparable = |doc: &Document, drop_address: bool| {
        let mut c = config_value(doc);
        if let Value::Object(m) = &mut c {
            for k in REPEAT_FREE {
                m.remove(*k);
            }
            if drop_address {
                // A cluster is found from any of its nodes: the seed node may differ.
                m.remove("host");
                m.remove("port");
            }
        }
        c
    };
    let mut problems = Vec::new();
    let Some(first) = docs.first() else { return problems };
    for (i, doc) in docs.iter().enumerate().skip(1) {
        let (this, first_listed) = (&listed[i], &listed[0]);
        let both_cluster = cluster(doc) && cluster(first);
        let mut differ =
            differences(&comparable(doc, both_cluster), &comparable(first, both_cluster), &files[0]);
        if both_cluster {
            let (a, b) = (&this.nodes, &first_listed.nodes);
            if !a.is_empty() && !b.is_empty() && !a.iter().any(|n| b.contains(n)) {
                differ.push(format!(
                    "a cluster of nodes {} where {} has {}",
                    a.join(" "),
                    files[0],
                    b.join(" ")
                ));
            }
        }
        let (a, b) = (this.titles(doc), first_listed.titles(first));
        if a != b {
            differ.push(format!("tests {} where {} has {}", a.join(", "), files[0], b.join(", ")));
        }
        if doc.server != first.server {
            let shown =
                |s: &doc::Server| serde_json::to_value(s).map_or_else(|_| "none".into(), |v| v.to_string());
            differ.push(format!(
                "server {} where {} has {}",
                shown(&doc.server),
                files[0],
                shown(&first.server)
            ));
        }
        if !differ.is_empty() {
            problems.push(format!("{}: {}", files[i], differ.join("; ")));
        }
    }
    problems
}

/// How a message names a `config` field: its option where it has one (`-c`), else its name.
fn option_of(key: &str) -> Option<&'static str> {
    Some(match key {
        "host" => "-h",
        "port" => "-p",
        "socket" => "-s",
        "clients" => "-c",
        "requests" => "-n",
        "datasize" => "-d",
        "pipeline" => "-P",
        "keyspace" => "-r",
        "threads" => "--threads",
        "tests" => "-t",
        "rps" => "--rps",
        "duration_s" => "--duration",
        "rps_slack_us" => "--rps-slack",
        "backend" => "--backend",
        "dbnum" => "--dbnum",
        "loop" => "-l",
        _ => return None,
    })
}

/// What keeps merged tests apart: name, backend, target rate, a sweep's step and `--ab`'s side.
type Key = (String, Option<String>, Option<u64>, Option<StepValues>, Option<respbench_session::result::Side>);

/// Several documents combined.
pub struct Merged {
    /// The first document's `config` (the runs are expected to share it).
    pub config: doc::RunConfig,
    /// The first document's `server`.
    pub server: doc::Server,
    /// Whether any run was interrupted.
    pub interrupted: bool,
    /// `--start-at`: the latest any run began after it, in seconds.
    pub late_by_s: Option<f64>,
    /// Each test (by name and backend) merged, in order of first appearance.
    pub tests: Vec<TestResult>,
    /// What identifies each of `tests` in the inputs: name, backend and target rate as written
    /// (the merged target is the sum).
    keys: Vec<Key>,
    /// Each of `tests`' events (`--at`), as the input that fired them reported them, each
    /// marked with its input ([`doc::EventEntry::part`]).
    pub events: Vec<Vec<doc::EventEntry>>,
}

impl Merged {
    /// The merged document, in the same schema as a run's.
    pub fn document(&self) -> Result<Document, Error> {
        let tests = self
            .tests
            .iter()
            // The stats' times are already microseconds since the Unix epoch.
            .zip(&self.events)
            .map(|(e, events)| {
                let mut t = convert::test(e, 0)?;
                t.events = (!events.is_empty()).then(|| events.clone());
                Ok(t)
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(json::document(self.config.clone(), self.server.clone(), self.interrupted, tests))
    }
}

/// The `config.pipeline_mode` a document ran with: `window` in documents written before the
/// option existed, which is how they pipelined.
fn pipeline_mode(doc: &Document) -> &str {
    doc.config.pipeline_mode.as_deref().unwrap_or("window")
}

/// Merges documents; an error names the index of the document at fault. `mixed` (`--force`):
/// documents of different pipeline modes are added too.
pub fn merge(docs: &[Document], mixed: bool) -> Result<Merged, (usize, Error)> {
    let mut merged: Option<Merged> = None;
    for (i, doc) in docs.iter().enumerate() {
        let tests = &doc.tests;
        let (mode, first) = (pipeline_mode(doc), docs.first().map_or("window", pipeline_mode));
        if mode != first && !mixed {
            return Err((i, Error::Refused(modes_differ(mode, first))));
        }
        let m = merged.get_or_insert_with(|| Merged {
            config: doc.config.clone(),
            server: doc.server.clone(),
            interrupted: false,
            late_by_s: None,
            tests: Vec::new(),
            keys: Vec::new(),
            events: Vec::new(),
        });
        let part = part_of(doc).map_or(i as u64, |(index, _)| index);
        m.interrupted |= doc.interrupted;
        for t in tests {
            let e = convert::read_test(t).map_err(|e| (i, e))?;
            // A run comparing backends has each test once per backend, a run with several rates
            // once per rate: those stay apart.
            // A sweep's steps stay apart, like backends and rates.
            // And `--ab`'s two targets.
            let key = (e.name.clone(), e.backend.clone(), e.target_rps, e.step.clone(), e.side);
            let at = match m.keys.iter().position(|k| *k == key) {
                Some(at) => {
                    let acc = &mut m.tests[at];
                    acc.merge(e).map_err(|err| (i, Error::Document(err.to_string())))?;
                    at
                }
                None => {
                    m.keys.push(key);
                    m.tests.push(e);
                    m.events.push(Vec::new());
                    m.tests.len() - 1
                }
            };
            let fired =
                t.events.iter().flatten().map(|ev| doc::EventEntry { part: Some(part), ..ev.clone() });
            m.events[at].extend(fired);
        }
    }
    merged.ok_or((0, Error::Refused("no documents".into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use respbench_core::{Stats, Time};
    use respbench_session::cpu::ClientCpu;

    /// The tests build documents as JSON values (to edit them freely) and read them as a
    /// merge does.
    fn typed(docs: &[Value]) -> Result<Vec<Document>, (usize, Error)> {
        docs.iter().enumerate().map(|(i, d)| json::document_of(d.clone()).map_err(|e| (i, e))).collect()
    }

    fn merge_values(docs: &[Value], mixed: bool) -> Result<Merged, (usize, Error)> {
        merge(&typed(docs)?, mixed)
    }

    fn merge_all(docs: &[Value]) -> Result<Merged, (usize, Error)> {
        merge_values(docs, false)
    }

    fn check_parts_v(files: &[String], docs: &[Value]) -> Result<Option<u64>, String> {
        check_parts(files, &typed(docs).unwrap()).map_err(|e| e.to_string())
    }

    fn check_repeats_v(files: &[String], docs: &[Value]) -> Vec<String> {
        let docs = typed(docs).unwrap();
        check_repeats(files, &docs, &docs.iter().map(Listed::of).collect::<Vec<_>>())
    }

    fn empty_doc(tests: Vec<doc::Test>) -> Value {
        as_value(&json::document(doc::RunConfig::default(), doc::Server::default(), false, tests))
    }

    fn as_value(d: &Document) -> Value {
        serde_json::to_value(d).unwrap()
    }

    fn doc_of(tests: &[(&str, &Stats)]) -> Value {
        let tests = tests
            .iter()
            .map(|(n, s)| convert::test(&entry(n, None, (*s).clone()), 1_000))
            .collect::<Result<Vec<_>, _>>();
        as_value(&json::document(doc::RunConfig::default(), doc::Server::default(), false, tests.unwrap()))
    }

    fn entry(name: &str, backend: Option<&str>, stats: Stats) -> TestResult {
        let cpu = ClientCpu { user_s: 0.5, sys_s: 0.25, wall_s: 1.0, threads: 1, share_override: None };
        TestResult {
            backend: backend.map(Into::into),
            cpu: Some(cpu),
            ..TestResult::new(name.into(), name.into(), stats)
        }
    }

    /// Counts that do not add up, or whose histograms do not hold them, are refused with the
    /// file and test named, never wrapped into a small sum (issue #35: requests of 2^64 - 1 and
    /// 20,000 merged into 19,999; histogram counts of 2^62 merged into p50 0.001 ms, rc 0).
    #[test]
    fn hostile_counts_are_refused() {
        let mut huge = Stats::new(Time::ZERO, 3, false).unwrap();
        // The most a V2 encoding holds in one count (2^63 - 1): two of them and 20,000 more
        // do not fit in a u64.
        huge.latency.record_n(100, i64::MAX as u64).unwrap();
        huge.requests = i64::MAX as u64;
        let mut small = Stats::new(Time::ZERO, 3, false).unwrap();
        for _ in 0..20_000 {
            small.record(100_000, 0, Time::from_micros(10));
        }
        let docs = [doc_of(&[("GET", &huge)]), doc_of(&[("GET", &huge)]), doc_of(&[("GET", &small)])];
        let Err(e) = merge_all(&docs) else { panic!("merged") };
        assert_eq!(e.0, 2);
        let e1 = e.1.to_string();
        assert!(e1.contains("test 'GET'") && e1.contains("requests: the sum overflows"), "{e:?}");
        // A histogram of 2^62 values where the test says 20,000 requests.
        let mut t = doc_of(&[("GET", &small)]);
        let mut lie = Stats::new(Time::ZERO, 3, false).unwrap();
        lie.latency.record_n(1, 1 << 62).unwrap();
        t["tests"][0]["histogram"]["data"] = crate::codec::encode_histogram(&lie.latency).unwrap().into();
        let Err(e) = merge_all(&[doc_of(&[("GET", &small)]), t]) else { panic!("merged") };
        assert_eq!(e.0, 1);
        assert!(
            e.1.to_string().contains("test 'GET': its histogram holds 4611686018427387904 values where"),
            "{e:?}"
        );
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
            let m = merge_values(&docs, false).unwrap();
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
            let d = as_value(&m.document().unwrap());
            prop_assert_eq!(&d["tests"][0]["requests"], &serde_json::json!(whole.requests));
        }
    }

    /// A cluster run's document: `GET` over `nodes` (address, requests at 1 ms, moved redirects).
    fn cluster_doc(nodes: &[(&str, u64, u64)]) -> Value {
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap().with_nodes(nodes.len(), 0).unwrap();
        for (i, &(_, requests, moved)) in nodes.iter().enumerate() {
            for _ in 0..requests {
                s.record_request(0, 1_000_000, 0, None, Time::from_micros(1_000_000));
                s.record_node(i, 1_000_000, 0, None, Time::from_micros(1_000_000));
            }
            s.nodes[i].redirects.moved = moved;
            s.redirects.moved += moved;
        }
        let mut e = entry("GET", None, s);
        e.nodes = nodes
            .iter()
            .map(|&(a, _, _)| respbench_session::result::NodeInfo {
                address: a.into(),
                primary: true,
                slots: 5461,
            })
            .collect();
        as_value(&json::document(
            doc::RunConfig::default(),
            doc::Server::default(),
            false,
            vec![convert::test(&e, 0).unwrap()],
        ))
    }

    #[test]
    fn nodes_are_matched_by_address() {
        // Two load machines found the nodes in different orders; the second did not see node c.
        let a = cluster_doc(&[("a:1", 10, 1), ("b:2", 20, 0), ("c:3", 30, 2)]);
        let b = cluster_doc(&[("b:2", 200, 4), ("a:1", 100, 0), ("d:4", 5, 0)]);
        let m = merge_all(&[a, b]).unwrap();
        let t = &m.tests[0];
        let got: Vec<(&str, u64, u64)> = t
            .nodes
            .iter()
            .zip(&t.stats.nodes)
            .map(|(n, s)| (n.address.as_str(), s.requests, s.redirects.moved))
            .collect();
        assert_eq!(got, [("a:1", 110, 1), ("b:2", 220, 4), ("c:3", 30, 2), ("d:4", 5, 0)]);
        assert_eq!(t.stats.requests, 365);
        assert_eq!(t.stats.redirects.moved, 7);
        assert_eq!(t.stats.nodes.iter().map(|n| n.latency.len()).sum::<u64>(), 365);
        // Written again, read again: the same.
        let d = as_value(&m.document().unwrap());
        assert_eq!(d["tests"][0]["nodes"][1]["address"], "b:2");
        assert_eq!(d["tests"][0]["nodes"][1]["requests"], 220);
        assert_eq!(d["tests"][0]["redirects"]["moved"], 7);
        // Merging a document with nodes and one without keeps the nodes.
        let plain = doc_of(&[("GET", &Stats::new(Time::ZERO, 3, false).unwrap())]);
        let m = merge_all(&[plain, cluster_doc(&[("a:1", 10, 1)])]).unwrap();
        assert_eq!(m.tests[0].nodes.len(), 1);
        assert_eq!(m.tests[0].stats.nodes[0].requests, 10);
    }

    #[test]
    fn tests_by_name_and_schema_checked() {
        let a = Stats::new(Time::ZERO, 3, false).unwrap();
        let docs = [doc_of(&[("SET", &a), ("GET", &a)]), doc_of(&[("GET", &a), ("LPUSH", &a)])];
        let names: Vec<String> =
            merge_values(&docs, false).unwrap().tests.into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["SET", "GET", "LPUSH"]);
        let mut bad = docs[1].clone();
        bad["schema"] = "respbench/3".into();
        let (i, e) = merge_all(&[docs[0].clone(), bad]).err().unwrap();
        let e = e.to_string();
        assert_eq!(i, 1);
        assert!(
            e.contains("respbench/3")
                && e.contains("reads documents written by respbench --json ('respbench/2'"),
            "{e}"
        );
        // The version before, whose seconds carried histograms, still merges.
        let mut old = docs[1].clone();
        old["schema"] = "respbench/1".into();
        assert!(merge_all(&[docs[0].clone(), old]).is_ok());
        assert!(merge_all(&[serde_json::json!({"x": 1})]).is_err());
    }

    #[test]
    fn pipeline_modes_do_not_mix() {
        let a = Stats::new(Time::ZERO, 3, false).unwrap();
        let with = |mode: Option<&str>| {
            let mut d = doc_of(&[("GET", &a)]);
            d["config"] = match mode {
                Some(m) => serde_json::json!({"pipeline": 16, "pipeline_mode": m}),
                None => serde_json::json!({"pipeline": 16}),
            };
            d
        };
        let (batch, window, before) = (with(Some("batch")), with(Some("window")), with(None));
        assert_eq!(
            merge_all(&[batch.clone(), batch.clone()]).unwrap().config.pipeline_mode.as_deref(),
            Some("batch")
        );
        let (i, e) = merge_all(&[batch.clone(), window.clone()]).err().unwrap();
        let e = e.to_string();
        assert_eq!(i, 1);
        assert!(e.contains("window mode and the first document in batch mode"), "{e}");
        // A document from before the option pipelined as a window.
        assert!(merge_all(&[window.clone(), before.clone()]).is_ok());
        assert_eq!(merge_all(&[before, batch]).err().unwrap().0, 1);
    }

    /// A worker's document: `config` with `worker` and the given `key_dist`.
    fn part(index: u64, count: u64, key_dist: &str) -> Value {
        let mut d =
            as_value(&json::document(doc::RunConfig::default(), doc::Server::default(), false, Vec::new()));
        d["config"] = serde_json::json!({
            "requests": 1000, "key_dist": key_dist, "seed": index * 77,
            "worker": {"index": index, "count": count, "requests": 250},
        });
        d
    }

    #[test]
    fn split_runs_merge_only_whole() {
        let files: Vec<String> = (0..5).map(|i| format!("w{i}.json")).collect();
        let all: Vec<Value> = (0..4).map(|i| part(i, 4, "sequential")).collect();
        // In any order; seeds differ.
        let shuffled = [all[2].clone(), all[0].clone(), all[3].clone(), all[1].clone()];
        assert_eq!(check_parts_v(&files[..4], &shuffled), Ok(Some(4)));
        let e = check_parts_v(&files[..3], &all[..3]).unwrap_err();
        assert!(e.contains("incomplete: 3 of the 4 parts of the run; missing worker 3"), "{e}");
        let e = check_parts_v(&files[..2], &[all[1].clone(), all[3].clone()]).unwrap_err();
        assert!(e.contains("missing workers 0, 2"), "{e}");
        let odd = [all[0].clone(), all[1].clone(), part(2, 4, "uniform"), all[3].clone()];
        let e = check_parts_v(&files[..4], &odd).unwrap_err();
        let says = "w2.json (worker 2/4) is not a part of the same run: key_dist \"uniform\" where w0.json has \"sequential\"";
        assert!(e.contains(says), "{e}");
        let twice = [all[0].clone(), all[1].clone(), all[1].clone(), all[3].clone()];
        let e = check_parts_v(&files[..4], &twice).unwrap_err();
        assert!(
            e.contains("worker 1/4 appears twice: w1.json and w2.json") && e.contains("missing worker 2"),
            "{e}"
        );
        let counts = [all[0].clone(), part(1, 3, "sequential")];
        assert!(check_parts_v(&files[..2], &counts).unwrap_err().contains("one of 3 workers"));
        let whole = empty_doc(Vec::new());
        let e = check_parts_v(&files[..2], &[all[0].clone(), whole.clone()]).unwrap_err();
        assert!(e.contains("w1.json is a whole run"), "{e}");
        // Whole runs merge as before.
        assert_eq!(check_parts_v(&files[..2], &[whole.clone(), whole]), Ok(None));
    }

    #[test]
    fn a_pod_log_is_read_around_stderr_lines() {
        let doc = serde_json::to_string_pretty(&part(0, 2, "uniform")).unwrap();
        let log = format!("WARNING: something\n{doc}\nrespbench: a last line {{\n");
        assert_eq!(
            read_document("pod.log", &log).map_err(|e| e.to_string()),
            typed(&[part(0, 2, "uniform")]).map(|d| d[0].clone()).map_err(|e| format!("pod.log: {}", e.1))
        );
        let e = read_document("pod.log", "WARNING: only this\n{\n").unwrap_err().to_string();
        assert!(e.starts_with("pod.log is not JSON"), "{e}");
    }

    /// The streamed merge (`run`, what `respbench merge` does) writes what merging the whole
    /// documents does, byte for byte: the lines and the document of a split run's two parts,
    /// the second's tests in another order (read ahead and queued) and inside a pod's log.
    #[test]
    fn the_streamed_merge_equals_the_whole_merge() {
        let stats = |n: u64| {
            let mut s = Stats::new(Time::from_micros(1_000_000), 3, false).unwrap();
            for i in 0..n {
                s.record(1_000 * (i % 97 + 1), 0, Time::from_micros(1_000_000 + 10 * i));
            }
            s
        };
        let (a, b, c) = (stats(100), stats(250), stats(7));
        let mut one = doc_of(&[("SET", &a), ("GET", &b), ("INCR", &c)]);
        one["command_line"] = serde_json::json!(["-t", "set,get,incr", "--json", "a.json"]);
        one["late_by_s"] = serde_json::json!(0.25);
        let mut two = doc_of(&[("INCR", &a), ("SET", &b), ("GET", &c), ("LPUSH", &a)]);
        // The two parts of a split run, whose tests may differ.
        for (i, d) in [&mut one, &mut two].into_iter().enumerate() {
            d["config"]["worker"] = serde_json::json!({"index": i, "count": 2, "requests": 500});
        }
        let dir = std::env::temp_dir().join(format!("respbench-merge-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let name = |f: &str| dir.join(f).to_str().unwrap().to_string();
        std::fs::write(name("a.json"), serde_json::to_string_pretty(&one).unwrap()).unwrap();
        let log = format!("starting\n{}\nrespbench: done\n", serde_json::to_string_pretty(&two).unwrap());
        std::fs::write(name("b.log"), log).unwrap();
        let files = vec![name("a.json"), name("b.log")];
        let opts = MergeArgs { json: Some(name("out.json")), force: false, files: files.clone() };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        run(&opts, &mut out, &mut err).unwrap();
        let streamed = std::fs::read_to_string(name("out.json")).unwrap();

        let docs = typed(&[one, two]).unwrap();
        let whole = merge(&docs, false).unwrap();
        let mut want = whole.document().unwrap();
        want.late_by_s = Some(0.25);
        want.merged_from = Some(files);
        want.command_line = docs[0].command_line.clone();
        want.config.worker = None;
        want.config.workers = Some(2);
        assert_eq!(streamed, want.to_text().unwrap());
        let mut lines = Vec::new();
        for e in &whole.tests {
            write_quiet_line(e, false, &mut lines).unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(lines).unwrap());
        assert!(String::from_utf8(err).unwrap().contains("began 0.250 s after its --start-at"));
        let got: Vec<(&str, u64)> = whole.tests.iter().map(|t| (t.name.as_str(), t.stats.requests)).collect();
        assert_eq!(got, [("SET", 350), ("GET", 257), ("INCR", 107), ("LPUSH", 100)]);

        // `--json -`: the document alone on stdout, the same bytes.
        let opts = MergeArgs { json: Some("-".into()), ..opts };
        let mut out = Vec::new();
        run(&opts, &mut out, &mut Vec::new()).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), streamed);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn backends_stay_apart() {
        let a = Stats::new(Time::ZERO, 3, false).unwrap();
        let doc = |b: &[&str]| {
            let tests =
                b.iter().map(|b| convert::test(&entry("GET", Some(b), a.clone()), 0).unwrap()).collect();
            empty_doc(tests)
        };
        let m = merge_all(&[doc(&["mio", "smol"]), doc(&["mio", "smol"])]).unwrap();
        let got: Vec<_> =
            m.tests.iter().map(|t| (t.backend.as_deref().unwrap(), t.cpu.unwrap().threads)).collect();
        assert_eq!(got, [("mio", 2), ("smol", 2)]);
    }

    /// A whole run's document: `config` with these fields over a base, tests by name.
    fn run_doc(config: Value, tests: &[&str], server: Value) -> Value {
        let a = Stats::new(Time::ZERO, 3, false).unwrap();
        let mut d = doc_of(&tests.iter().map(|t| (*t, &a)).collect::<Vec<_>>());
        let mut c = serde_json::json!({"host": "127.0.0.1", "port": 6379, "clients": 50, "requests": 1000,
            "pipeline": 1, "seed": 1, "tests": "set,get", "cluster": false});
        for (k, v) in config.as_object().unwrap() {
            c[k] = v.clone();
        }
        d["config"] = c;
        d["server"] = server;
        d
    }

    #[test]
    fn repeats_of_one_configuration_and_what_differs() {
        let files: Vec<String> = ["a.json", "b.json", "c.json"].iter().map(|s| s.to_string()).collect();
        let server = serde_json::json!({"name": "redis", "version": "7.0.15", "mode": "standalone"});
        let base = run_doc(serde_json::json!({}), &["SET", "GET"], server.clone());
        // Seeds and start times may differ between repeats.
        let again =
            run_doc(serde_json::json!({"seed": 99, "start_at_us": 5}), &["SET", "GET"], server.clone());
        assert!(check_repeats_v(&files, &[base.clone(), again.clone(), base.clone()]).is_empty());
        let fewer = run_doc(serde_json::json!({"clients": 10}), &["SET", "GET"], server.clone());
        let got = check_repeats_v(&files, &[base.clone(), fewer]);
        assert_eq!(got, ["b.json: -c 10 where a.json has -c 50"]);
        // An option given in one run and not in the other, in the units it was given in.
        let slack = run_doc(serde_json::json!({"rps_slack_us": 250}), &["SET", "GET"], server.clone());
        let auto = run_doc(serde_json::json!({"rps_slack_us": null}), &["SET", "GET"], server.clone());
        let got = check_repeats_v(&files, &[auto, slack]);
        assert_eq!(got, ["b.json: --rps-slack 250us where a.json has no --rps-slack"]);
        let other = run_doc(serde_json::json!({"tests": "get"}), &["GET"], server.clone());
        let got = check_repeats_v(&files, &[base.clone(), again, other]);
        assert_eq!(got, ["c.json: -t get where a.json has -t set,get; tests GET where a.json has SET, GET"]);
        let valkey = serde_json::json!({"name": "valkey", "version": "8.0.1", "mode": "standalone"});
        let elsewhere = run_doc(serde_json::json!({"port": 6380}), &["SET", "GET"], valkey);
        let got = check_repeats_v(&files, &[base.clone(), elsewhere]);
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with("b.json: -p 6380 where a.json has -p 6379; server {"), "{got:?}");
        assert!(got[0].contains(r#""name":"valkey""#) && got[0].contains(r#""version":"7.0.15""#), "{got:?}");
        // A cluster found from two of its nodes is one server.
        let seeded =
            |port: u64| run_doc(serde_json::json!({"cluster": true, "port": port}), &["SET"], server.clone());
        assert!(check_repeats_v(&files, &[seeded(7000), seeded(7002)]).is_empty());
    }

    #[test]
    fn a_forced_mixture_adds_other_pipeline_modes() {
        let a = Stats::new(Time::ZERO, 3, false).unwrap();
        let mut batch = doc_of(&[("GET", &a)]);
        batch["config"] = serde_json::json!({"pipeline_mode": "batch"});
        let mut window = doc_of(&[("GET", &a)]);
        window["config"] = serde_json::json!({"pipeline_mode": "window"});
        assert!(merge_values(&[batch.clone(), window.clone()], false).is_err());
        assert!(merge_values(&[batch, window], true).is_ok());
    }
}
