//! The `--json` result document (schema `respbench/2`) as Rust types: what a run writes, what
//! `respbench merge` reads and writes, what `respbench plot` reads. docs/json.md describes each
//! field; docs/respbench.schema.json is checked against these types by the tests (every field
//! they write is in the schema, and documents the schema allows read back).
//!
//! The types only carry data: [`crate::json`] fills them from the session's results and reads
//! tests back into results, checking what a document cannot be trusted with (histogram lengths,
//! totals). Every optional field is `#[serde(default)]`, so documents written before a field
//! existed still read; unknown fields are ignored (a newer respbench's additions), except in
//! `config`, where they are kept ([`RunConfig::other`]) so a merge passes them on.
//!
//! A document is written through `serde_json::Value`, whose maps sort their keys: the order of
//! the fields here does not matter, and a document's bytes are those of the values alone.

use std::collections::BTreeMap;

use respbench_core::Endpoint;
use respbench_session::config::{Config, Replicas};
use respbench_session::server::ServerInfo;
use respbench_session::words;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod cache;
mod compare;
mod events;
mod figures;
mod groups;
mod notify;
mod search;
mod server_series;
#[cfg(test)]
mod tests;
mod timing;

pub use cache::CacheAside;
pub use compare::*;
pub use events::*;
pub use figures::*;
pub use groups::{GroupObjective, GroupSlo};
pub use notify::{Delivery, Expiry, Tracking};
pub use search::*;
pub use server_series::{ServerSample, ServerSampling, ServerThread, ServerThreads};
pub use timing::{ClientPauses, CommandTime, NodeTime, ServerTime, TimeSplit};

/// One run's document, or a merge of several.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Document {
    /// `respbench/2` (see [`crate::codec::SCHEMA`]).
    pub schema: String,
    /// The program that wrote it.
    pub tool: Tool,
    /// The command line, each password replaced by `***`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<Vec<String>>,
    /// Every option that shapes the load.
    pub config: RunConfig,
    /// What the startup connection read from the server.
    pub server: Server,
    /// The run was stopped before it completed (Ctrl-C, a failure).
    pub interrupted: bool,
    /// Each test, sweep step, rate step and backend, in order.
    pub tests: Vec<Test>,
    /// The session's notices (`--preload`'s line, a missing server CONFIG).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<Notice>>,
    /// `--start-at`: how late this process was ready, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_by_s: Option<f64>,
    /// `respbench run FILE.toml`: the scenario file it ran (`respbench run --from` runs it
    /// again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<ScenarioFile>,
    /// `--slo`: each test's capacity search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Vec<Search>>,
    /// `respbench merge`: the documents merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<Vec<String>>,
    /// `respbench merge --force`: what differed between the runs added up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixture: Option<Vec<String>>,
    /// `--ab`: what the startup connection read from the second target (B; `server` is A's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_b: Option<Server>,
    /// `respbench compare`: its findings (such a document has no tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// `--dataset-shape`: what was built before the tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<crate::dataset::Dataset>,
}

/// `tool`: the program and its version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tool {
    /// `respbench`.
    pub name: String,
    /// Its cargo version.
    pub version: String,
}

/// `server`: the server's settings and identity, null where it did not say.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Server {
    /// `CONFIG GET save`.
    #[serde(default)]
    pub save: Option<String>,
    /// `CONFIG GET appendonly`.
    #[serde(default)]
    pub appendonly: Option<String>,
    /// `redis`, `valkey`, …
    #[serde(default)]
    pub name: Option<String>,
    /// Its version.
    #[serde(default)]
    pub version: Option<String>,
    /// `standalone`, `cluster`, …
    #[serde(default)]
    pub mode: Option<String>,
    /// Over TLS: whether the certificate was checked for the server's name; null without TLS.
    #[serde(default)]
    pub tls_name_checked: Option<bool>,
}

/// A notice of the session: `{"kind": "notice", "text"}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    /// Always `notice`.
    pub kind: String,
    /// The line as stderr would show it.
    pub text: String,
}

/// `config`: every option that shapes the load (no password). The fields a run writes are
/// typed; any others (a newer respbench's) are kept in [`RunConfig::other`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunConfig {
    /// `-h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `-p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// `-s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    /// `--user`.
    #[serde(default)]
    pub user: Option<String>,
    /// `-c` (a split run's whole).
    #[serde(default)]
    pub clients: u64,
    /// `-n` (a split run's whole).
    #[serde(default)]
    pub requests: u64,
    /// `-d` in bytes.
    #[serde(default)]
    pub datasize: u64,
    /// `-d` as given (a range, a list).
    #[serde(default)]
    pub datasize_spec: String,
    /// `--key-dist`.
    #[serde(default)]
    pub key_dist: String,
    /// `--key-prefix`.
    #[serde(default)]
    pub key_prefix: String,
    /// `-P`.
    #[serde(default)]
    pub pipeline: u64,
    /// `--pipeline-mode` (absent before it existed: `window`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_mode: Option<String>,
    /// `-k`.
    #[serde(default)]
    pub keepalive: bool,
    /// `--threads`.
    #[serde(default)]
    pub threads: u64,
    /// `-r`.
    #[serde(default)]
    pub keyspace: Option<u64>,
    /// `--seed` (a split run's whole).
    #[serde(default)]
    pub seed: u64,
    /// `--dbnum`.
    #[serde(default)]
    pub dbnum: u64,
    /// `-3`.
    #[serde(default)]
    pub resp3: bool,
    /// `-C` / client tracking.
    #[serde(default)]
    pub tracking: bool,
    /// `--tls`.
    #[serde(default)]
    pub tls: bool,
    /// `--cluster`.
    #[serde(default)]
    pub cluster: bool,
    /// `--rfr`.
    #[serde(default)]
    pub rfr: String,
    /// `--replicas`: null, `"auto"` or the addresses listed.
    #[serde(default)]
    pub replicas: Value,
    /// `--backend`, comma separated.
    #[serde(default)]
    pub backend: String,
    /// `--precision`.
    #[serde(default)]
    pub precision: u64,
    /// `-l`.
    #[serde(default, rename = "loop")]
    pub repeat: bool,
    /// `-t`.
    #[serde(default)]
    pub tests: Option<String>,
    /// A custom command's arguments (lossy UTF-8).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// `--timeout` in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<f64>,
    /// `--rps` (a split run's whole).
    #[serde(default)]
    pub rps: Option<Vec<u64>>,
    /// `constant` or `poisson`.
    #[serde(default)]
    pub arrival: String,
    /// `--rps-slack` in microseconds, null for automatic.
    #[serde(default)]
    pub rps_slack_us: Option<u64>,
    /// `--duration` in seconds.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// `--warmup` in seconds.
    #[serde(default)]
    pub warmup_s: f64,
    /// `--mix`: each command and its weight.
    #[serde(default)]
    pub mix: Option<Vec<MixEntry>>,
    /// `--expiry-range` as given (`1-2`, `500ms-1500ms`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_range: Option<String>,
    /// `--slo`: what the search was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// `--start-at` in microseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_us: Option<u64>,
    /// `--mptcp` (only when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mptcp: Option<bool>,
    /// `--worker I/N`: this worker's part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<WorkerPart>,
    /// A merged split run: how many workers it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u64>,
    /// A sweep's lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepLists>,
    /// `--ab HOST:PORT`: the second target (B), run in turn with the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<String>,
    /// Fields this respbench does not know, kept as they were.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One command of `--mix` and its weight.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MixEntry {
    /// The command (a named test, or a custom command's words).
    pub command: String,
    /// Its weight.
    pub weight: u64,
    /// Its own keys (`zipf:0.99/10000`: distribution and keyspace); absent when it draws from
    /// `-r` and `--key-dist`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<String>,
}

/// `config.slo`: the capacity search's objectives and limits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Slo {
    /// Each objective as given (`p99<=1ms`).
    pub objectives: Vec<String>,
    /// `--resolution`.
    pub resolution: String,
    /// `--rps LOW-HIGH`.
    #[serde(default)]
    pub range_rps: Option<[u64; 2]>,
    /// `--max-steps`.
    pub max_steps: u64,
    /// A ladder of fixed steps (a split run's search).
    pub ladder: bool,
}

/// `config.worker`: one worker's part of a split run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerPart {
    /// `I` of `--worker I/N`.
    pub index: u64,
    /// `N`.
    pub count: u64,
    /// This worker's `-n`.
    pub requests: u64,
    /// This worker's `-c` at each sweep step.
    pub clients: Vec<u64>,
    /// This worker's `--rps`.
    #[serde(default)]
    pub rps: Option<Vec<u64>>,
    /// Its part of the keyspace for sequential keys.
    #[serde(default)]
    pub keys: Option<KeyRange>,
}

/// A worker's keys: `count` keys from `first`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyRange {
    /// The first key.
    pub first: u64,
    /// How many.
    pub count: u64,
}

/// `config.sweep`: the lists a sweep's steps combine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepLists {
    /// `-d` values as given.
    pub datasize: Vec<String>,
    /// `-c` values (a split run's whole).
    pub clients: Vec<u64>,
    /// `-P` values.
    pub pipeline: Vec<u64>,
    /// `--threads` values.
    pub threads: Vec<u64>,
    /// `--repeat`.
    pub repeat: u64,
}

/// The scenario file a run was read from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioFile {
    /// The file as named.
    pub file: String,
    /// Its text.
    pub text: String,
}

/// One entry of `tests`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Test {
    /// The title (`GET`).
    pub name: String,
    /// The request template (lossy UTF-8, cut at 4096 bytes).
    #[serde(default)]
    pub command: String,
    /// Replies received (error replies included).
    pub requests: u64,
    /// Nil replies among them.
    #[serde(default)]
    pub nil_replies: u64,
    /// Of the nil replies, those to `GET`s of keys the mix's sequential `SET` had written
    /// (expired, with `--expiry-range`, or evicted or deleted since); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_misses: Option<u64>,
    /// Array replies among the replies (`MGET`, `HMGET`, …); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_replies: Option<u64>,
    /// The reads in them: an `MGET`'s or `HMGET`'s keys or fields, one for any other array
    /// reply (`HGETALL`, `LRANGE`); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_elements: Option<u64>,
    /// Of those reads, the ones that missed (nil elements; empty replies of the others); absent
    /// when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nil_elements: Option<u64>,
    /// Error replies by first word.
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    /// From the measured start to the test's end, in seconds.
    pub duration_s: f64,
    /// Replies per second; null when no request succeeded.
    #[serde(default)]
    pub rps: Option<f64>,
    /// The latency summary in milliseconds; null when no request succeeded.
    #[serde(default)]
    pub latency_ms: Option<Latency>,
    /// Every reply an error reply, or none came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_request_succeeded: Option<bool>,
    /// The whole latency distribution.
    pub histogram: HistogramData,
    /// Bytes written to the server.
    #[serde(default)]
    pub bytes_sent: u64,
    /// Bytes read from it.
    #[serde(default)]
    pub bytes_received: u64,
    /// Connections opened.
    #[serde(default)]
    pub connections_opened: u64,
    /// The measured start, microseconds since the Unix epoch.
    #[serde(default)]
    pub start_us: u64,
    /// The test's end.
    #[serde(default)]
    pub end_us: u64,
    /// The last reply (absent before it existed: the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reply_us: Option<u64>,
    /// The backend that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// `--rps`: this step's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rps: Option<u64>,
    /// The open loop's wake-up grid, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps_slack_us: Option<u64>,
    /// Clients refused by the server or unreachable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients_never_ran: Option<NeverRan>,
    /// Clients whose every connection failed before the stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_clients: Option<u64>,
    /// Open loop: the service time's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_latency_ms: Option<Latency>,
    /// Open loop: the service time's distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_histogram: Option<HistogramData>,
    /// Open loop: how late requests were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness: Option<Distribution>,
    /// How long connections took to become usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_setup: Option<ConnectionSetup>,
    /// Over several nodes: each node's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<Node>>,
    /// Over several nodes: the redirects met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirects: Option<respbench_core::stats::Redirects>,
    /// `--verify`, `--verify-only`: the reads checked and the mismatches found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verify>,
    /// What the figures suggest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<Finding>>,
    /// Requests unanswered after the stop's grace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandoned_requests: Option<u64>,
    /// Open-loop arrivals never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsent_requests: Option<u64>,
    /// How many of the histogram's values are lower bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_lower_bounds: Option<u64>,
    /// Open loop: every arrival of the schedule, accounted for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Arrivals>,
    /// `--reconnect`: outages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconnects: Option<Reconnects>,
    /// `--retry-on`: the retries made and the requests that gave up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<Retries>,
    /// `--follow-cursor`: the full iterations and their elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// `--reconnect`: names that resolved to another address when connections came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_changes: Option<Vec<AddressChange>>,
    /// Per-second summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Vec<SecondEntry>>,
    /// The client's CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu: Option<ClientCpu>,
    /// The server's CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu: Option<ServerCpu>,
    /// A sweep's step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<respbench_session::result::StepValues>,
    /// Who limited the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<Bottleneck>,
    /// `--replay`: what was played and how faithfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
    /// `--ab`: the target that ran it, `a` or `b`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    /// The server's own execution time for the test's calls, per node and merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_time: Option<ServerTime>,
    /// The client machine's own pauses during the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_pauses: Option<ClientPauses>,
    /// Where the latency went: send lateness, service, the server's execution, the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_split: Option<TimeSplit>,
    /// `-t pubsub`: what the subscribers received, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// `-t expiry`: how late the keys' expired events came after their deadlines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry: Option<Expiry>,
    /// `-t tracking`: the invalidations the readers received, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracking: Option<Tracking>,
    /// `--cache-aside`: hits, misses, the `SET`s they caused, a miss's latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_aside: Option<CacheAside>,
    /// `--at`: each event, what came of it and what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventEntry>>,
    /// `--ramp`: the ramp and each of its steps' figures and verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<respbench_session::ramp::RampResult>,
    /// A scenario's client groups (`respbench run FILE.toml`), each shaped as a test entry and
    /// named by its group; the test's own figures are theirs together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<Test>>,
    /// A scenario group's latency objectives (its `slo`), judged on its figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<GroupSlo>,
    /// The server's side, second by second, every node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_series: Option<Vec<ServerSample>>,
    /// What sampling the server cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_sampling: Option<ServerSampling>,
    /// Which of the server's threads limited it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_threads: Option<ServerThreads>,
}

/// A replay's figures: the capture, what was sent and how close to its recorded instant, and
/// what was not replayed, as the session keeps them (docs/json.md names each field).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Replay {
    /// The session's figures, their fields at this level.
    #[serde(flatten)]
    pub figures: respbench_session::replay::Figures,
    /// `sent_on_time / sent`.
    pub on_time_share: f64,
}

impl From<&Config> for RunConfig {
    /// The `config` object: every option that shapes the load (no password).
    fn from(cfg: &Config) -> RunConfig {
        let (host, port, socket) = match &cfg.endpoint {
            Endpoint::Tcp { host, port } => (Some(host.clone()), Some(*port), None),
            Endpoint::Unix(path) => (None, None, Some(path.to_string_lossy().into_owned())),
        };
        let rates = |r: &[u64]| (!r.is_empty()).then(|| r.to_vec());
        let mut c = RunConfig {
            host,
            port,
            socket,
            user: cfg.user.clone(),
            clients: cfg.clients as u64,
            requests: cfg.requests,
            datasize: cfg.datasize as u64,
            datasize_spec: cfg.values.to_string(),
            key_dist: cfg.key_dist.to_string(),
            key_prefix: cfg.key_prefix.clone(),
            pipeline: u64::from(cfg.pipeline),
            pipeline_mode: Some(cfg.pipeline_mode.name().into()),
            keepalive: cfg.keepalive,
            threads: cfg.threads as u64,
            keyspace: cfg.keyspace,
            seed: cfg.seed,
            dbnum: u64::from(cfg.db),
            resp3: cfg.resp3,
            tracking: cfg.tracking,
            tls: cfg.tls.is_some(),
            cluster: cfg.cluster,
            rfr: cfg.rfr.name().into(),
            replicas: match &cfg.replicas {
                Replicas::None => Value::Null,
                Replicas::Auto => Value::from("auto"),
                Replicas::Listed(l) => Value::from(l.iter().map(|e| e.to_string()).collect::<Vec<_>>()),
            },
            backend: cfg.backends.iter().map(|b| b.name()).collect::<Vec<_>>().join(","),
            precision: u64::from(cfg.precision),
            repeat: cfg.repeat,
            tests: cfg.tests.clone(),
            // Lossy: JSON strings are UTF-8 (the template in each test is lossy too).
            command: (!cfg.command.is_empty())
                .then(|| cfg.command.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()),
            timeout_ms: cfg.timeout.map(|t| t.as_secs_f64() * 1e3),
            rps: rates(&cfg.open.rates),
            arrival: if cfg.open.poisson { "poisson" } else { "constant" }.into(),
            // Set, or automatic (null): each open-loop test has its own `rps_slack_us`.
            rps_slack_us: cfg.open.slack.map(|s| s.as_micros() as u64),
            duration_s: cfg.open.duration.map(|d| d.as_secs_f64()),
            warmup_s: cfg.open.warmup.as_secs_f64(),
            mix: cfg.open.has_mix().then(|| {
                let keys = |list: &[Option<respbench_session::config::PartKeys>], i: usize| {
                    list.get(i).copied().flatten().map(|k| match k.n {
                        Some(n) => format!("{}/{n}", k.dist),
                        None => k.dist.to_string(),
                    })
                };
                let named = cfg.open.mix.iter().enumerate().map(|(i, (n, w))| MixEntry {
                    command: n.clone(),
                    weight: *w,
                    keys: keys(&cfg.open.mix_keys, i),
                });
                let custom = cfg.open.mix_commands.iter().enumerate().map(|(i, (a, w))| MixEntry {
                    command: a.iter().map(|w| words::quote_arg(w)).collect::<Vec<_>>().join(" "),
                    weight: *w,
                    keys: keys(&cfg.open.mix_command_keys, i),
                });
                named.chain(custom).collect()
            }),
            expiry_range: cfg.open.expiry.map(|e| e.to_string()),
            // --slo: what the search was asked (every worker of a split run the same).
            slo: cfg.searched().map(|s| Slo {
                objectives: s.objectives.iter().map(|o| o.text.clone()).collect(),
                resolution: s.resolution.to_string(),
                range_rps: s.range.map(|(lo, hi)| [lo, hi]),
                max_steps: u64::from(s.max_steps),
                ladder: s.ladder,
            }),
            start_at_us: cfg.start_at.as_ref().map(|at| at.unix_us),
            mptcp: cfg.mptcp.then_some(true),
            ..RunConfig::default()
        };
        if let Some(split) = &cfg.split {
            // The whole run's figures, the same on every worker; this worker's shares apart.
            c.requests = split.requests;
            c.clients = split.clients[0] as u64;
            c.seed = split.seed;
            if !split.rates.is_empty() {
                c.rps = Some(split.rates.clone());
            }
            c.worker = Some(WorkerPart {
                index: split.worker.index,
                count: split.worker.count,
                requests: cfg.requests,
                clients: cfg.sweep.clients.iter().map(|&n| n as u64).collect(),
                rps: rates(&cfg.open.rates),
                keys: split.keys.map(|(first, count)| KeyRange { first, count }),
            });
        }
        if cfg.sweep.is_sweep() {
            let s = &cfg.sweep;
            c.sweep = Some(SweepLists {
                datasize: s.datasizes.iter().map(ToString::to_string).collect(),
                clients: cfg
                    .split
                    .as_ref()
                    .map_or(&s.clients, |w| &w.clients)
                    .iter()
                    .map(|&n| n as u64)
                    .collect(),
                pipeline: s.pipelines.iter().map(|&p| u64::from(p)).collect(),
                threads: s.threads.iter().map(|&t| t as u64).collect(),
                repeat: s.repeat as u64,
            });
        }
        c.ab = cfg.ab.as_ref().map(ToString::to_string);
        c
    }
}

impl From<&ServerInfo> for Server {
    /// The `server` object: what the startup connection read from `CONFIG GET` (null when
    /// refused).
    fn from(info: &ServerInfo) -> Server {
        Server {
            save: info.save.clone(),
            appendonly: info.appendonly.clone(),
            name: info.name.clone(),
            version: info.version.clone(),
            mode: info.mode.clone(),
            // Over TLS: whether the certificate was checked for the server's name (null without TLS);
            // the document's warnings say why not.
            tls_name_checked: info
                .tls_name
                .as_ref()
                .map(|c| *c == respbench_session::server::NameCheck::Checked),
        }
    }
}

impl Document {
    /// The document as JSON text, pretty-printed with its keys sorted, as every respbench since
    /// `respbench/1` has written it.
    pub fn to_text(&self) -> Result<String, crate::error::Error> {
        let encode =
            |e: serde_json::Error| crate::error::Error::Encode(format!("cannot encode the JSON: {e}"));
        let value = serde_json::to_value(self).map_err(encode)?;
        let mut text = serde_json::to_string_pretty(&value).map_err(encode)?;
        text.push('\n');
        Ok(text)
    }
}
