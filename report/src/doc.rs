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

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod server_series;
pub use server_series::{ServerSample, ServerSampling, ServerThread, ServerThreads};

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
    pub redirects: Option<Redirects>,
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
    pub step: Option<Step>,
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
    /// `--at`: each event, what came of it and what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventEntry>>,
    /// `--ramp`: the ramp and each of its steps' figures and verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Ramp>,
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

/// A ramp within one test (`--ramp`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ramp {
    /// What rises: `clients` or `rps`.
    pub kind: String,
    /// The first step's level.
    pub from: u64,
    /// The last step's level.
    pub to: u64,
    /// How much each step adds.
    pub step: u64,
    /// How long each step lasts, in seconds.
    pub every_s: f64,
    /// Each step that began, in order.
    pub steps: Vec<RampStep>,
}

/// One step of a ramp: its level and what it measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RampStep {
    /// The step's level (clients, or the target rate).
    pub level: u64,
    /// The clients open during the step.
    pub clients: u64,
    /// The step's target rate, in an open loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rps: Option<u64>,
    /// When it began, in seconds from the test's start.
    pub start_s: f64,
    /// How long it lasted, in seconds.
    pub duration_s: f64,
    /// Replies parsed during it.
    pub requests: u64,
    /// Error replies among them.
    pub errors: u64,
    /// Replies per second.
    pub rps: f64,
    /// Latency percentiles in milliseconds (corrected, from the intended send time, in an open
    /// loop).
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Who limited the step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// A replay's figures: the capture, what was sent and how close to its recorded instant, and
/// what was not replayed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Replay {
    /// The capture file.
    pub file: String,
    /// `monitor` or `capture`.
    pub format: String,
    /// `--speed`.
    pub speed: f64,
    /// `--replay-loop`.
    pub passes: u64,
    /// The connections: one per original client (this worker's share).
    pub clients: u64,
    /// The capture's span, first command to last, in seconds, as played at `--speed 1`: a step
    /// backwards in the recorded instants is no gap, a gap over 10 s is 10 s.
    pub recorded_s: f64,
    /// Commands sent.
    pub sent: u64,
    /// Of those, sent within 1 ms of their recorded instant.
    pub sent_on_time: u64,
    /// `sent_on_time / sent`.
    pub on_time_share: f64,
    /// SELECTs added before commands recorded in another db than their connection's.
    pub selects_added: u64,
    /// The commands not replayed, by name.
    pub skipped: Vec<SkippedCommand>,
    /// Malformed lines (or records).
    pub malformed: u64,
    /// The first malformed lines.
    pub malformed_lines: Vec<MalformedLine>,
}

/// Commands of one name that were not replayed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SkippedCommand {
    /// The command.
    pub command: String,
    /// Why.
    pub reason: String,
    /// How many.
    pub count: u64,
}

/// A line of the capture that could not be read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MalformedLine {
    /// Its number, from 1.
    pub line: u64,
    /// What is wrong with it.
    pub reason: String,
}

/// `server_time`: the server's execution time for the test's calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerTime {
    /// What the figures measure: command execution inside the server, not its reading,
    /// parsing or writing.
    pub measures: String,
    /// Each node the test used.
    pub nodes: Vec<NodeTime>,
    /// Over several nodes: every node's calls together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<Vec<CommandTime>>,
}

/// One node of `server_time`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeTime {
    /// `HOST:PORT`.
    pub address: String,
    /// `latency_histogram`, `latencystats` or `usec_per_call`; null when not known.
    pub source: Option<String>,
    /// Why the figures are not known (refused, renamed, a reset); null when known.
    pub not_known: Option<String>,
    /// The server's count of the test's calls.
    pub calls: u64,
    /// The test's replies from this node.
    pub expected_calls: Option<u64>,
    /// Where the two counts differ: the sentence that says so.
    pub mismatch: Option<String>,
    /// The test's commands at the node.
    pub commands: Vec<CommandTime>,
}

/// One command's execution time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommandTime {
    /// The server's name of the command (`get`).
    pub command: String,
    /// Calls during the test.
    pub calls: u64,
    /// The mean of the test's calls, microseconds (commandstats).
    pub usec_per_call: Option<f64>,
    /// The bucket holding the median: its bounds in microseconds (the histogram only).
    pub p50_us: Option<[u64; 2]>,
    /// The bucket holding the 99th percentile.
    pub p99_us: Option<[u64; 2]>,
    /// The bucket holding the 99.9th percentile.
    pub p99_9_us: Option<[u64; 2]>,
    /// `INFO latencystats` (no histogram): p50, p99, p99.9 in microseconds since the server's
    /// statistics were reset, not this test's alone.
    pub since_reset_us: Option<[f64; 3]>,
    /// The test's calls by bucket: `[upper bound µs, calls]`, the bucket below's bound its
    /// lower.
    pub buckets: Vec<[u64; 2]>,
}

/// `client_pauses`: the client machine's own pauses during the test.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientPauses {
    /// The idle thread's sleep, microseconds.
    pub interval_us: u64,
    /// How late the idle thread woke (corrected for the wake-ups a pause held back), ms.
    pub idle_ms: Latency,
    /// Its distribution.
    pub idle_histogram: HistogramData,
    /// How late the event loops woke against their deadlines, ms; null when not known.
    pub wake_ms: Option<Latency>,
    /// Its distribution.
    pub wake_histogram: Option<HistogramData>,
    /// Per second of the test, the idle thread's longest pause, ms.
    pub series_max_ms: Vec<f64>,
    /// Per second of the test, the 99th percentile of the idle thread's pauses, ms.
    pub series_p99_ms: Vec<f64>,
}

/// `delivery`: a delivery test's subscribers (`-t pubsub`), all of them together; each message
/// published counts once per subscriber.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Delivery {
    /// Subscribers (connections of their own, not in `-c`).
    pub subscribers: u64,
    /// Of those, how many ended before the test did (the server dropped them, a kill).
    pub subscribers_failed: u64,
    /// The first one's reason.
    pub failure: Option<String>,
    /// Messages published: the publishers' answered PUBLISHes.
    pub published: u64,
    /// The receivers the server counted: the sum of the PUBLISH replies.
    pub receivers: u64,
    /// Messages received, every subscriber's added (duplicates included).
    pub delivered: u64,
    /// Σ over subscribers of (published − distinct received).
    pub missing: u64,
    /// Received again (or too late to tell).
    pub duplicated: u64,
    /// Received after a later one of the same publisher.
    pub out_of_order: u64,
    /// Holes in a publisher's sequence below the highest received (part of `missing`).
    pub gaps: u64,
    /// Messages without respbench's stamp (someone else's publishing).
    pub foreign: u64,
    /// The fewest distinct messages one subscriber received.
    pub min_delivered: u64,
    /// The most.
    pub max_delivered: u64,
    /// Subscribers that missed at least one message.
    pub subscribers_missing: u64,
    /// `-t blpop`: a list's waiters, each element for one of them (missing counts against the
    /// elements pushed; min/max_delivered are each waiter's share; receivers 0: not known).
    pub queue: bool,
    /// `--reconnect`: how many times a waiting connection that ended came back.
    pub reconnects: u64,
    /// The first such ending's reason.
    pub reconnected: Option<String>,
    /// Delivery latency, ms: receive − intended send (coordinated omission corrected).
    pub latency_ms: Option<Latency>,
    /// Its distribution.
    pub histogram: Option<HistogramData>,
    /// Receive − actual send, ms.
    pub service_ms: Option<Latency>,
    /// Its distribution.
    pub service_histogram: Option<HistogramData>,
}

/// `time_split`: each part of the latency at p50, p99 and p99.9, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimeSplit {
    /// The percentiles of the columns: 50, 99, 99.9.
    pub percentiles: Vec<f64>,
    /// From the intended send (open loop; else the send) to the reply.
    pub corrected_ms: Vec<f64>,
    /// Open loop: how late requests were sent; null in a closed loop.
    pub send_lateness_ms: Option<Vec<f64>>,
    /// From the send to the reply.
    pub service_ms: Vec<f64>,
    /// The server's execution: the bucket holding each percentile, `[lower, upper]`.
    pub server_ms: Option<Vec<[f64; 2]>>,
    /// The service time less the server's execution: wire, kernels, both processes' queues.
    pub rest_ms: Option<Vec<[f64; 2]>>,
    /// Where the server's figures came from.
    pub server_source: Option<String>,
}

/// One event of a test (`--at`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EventEntry {
    /// When it was due, seconds from the measured start.
    pub at_s: f64,
    /// `command` or `exec`.
    pub kind: String,
    /// What was given after TIME.
    pub command: String,
    /// When it was sent (a program started), seconds from the measured start; null when the
    /// test ended first.
    pub sent_s: Option<f64>,
    /// An error reply, no reply, a program that failed or could not start.
    pub failed: bool,
    /// A command's reply from each node it went to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replies: Option<Vec<EventReply>>,
    /// A program's exit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<ProgramExit>,
    /// Why a program did not start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_started: Option<String>,
    /// What it cost; null when it was never sent.
    pub disruption: Option<DisruptionEntry>,
    /// In a merged document: the input it came from (its `--worker` index, else its place
    /// among the inputs, from 0). Its cost is from that input's load alone: the windows of the
    /// others are not in the documents, so it is not made again from the sum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<u64>,
}

/// One node's reply to an event's command.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EventReply {
    /// `HOST:PORT`.
    pub node: String,
    /// The reply as text (an error reply starts with `-`), or why none came.
    pub reply: String,
    /// An error reply, or none.
    pub error: bool,
    /// From the send to the reply, ms.
    pub took_ms: f64,
}

/// A program's exit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProgramExit {
    /// Its exit code; null when a signal ended it.
    pub status: Option<i32>,
    /// The first line of its standard error.
    pub stderr: String,
    /// How long it ran, ms.
    pub took_ms: f64,
}

/// What an event cost, from the test's 100 ms windows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DisruptionEntry {
    /// Which latency the figures are: `corrected` (open loop, from the intended send) or
    /// `service` (closed loop).
    pub latency: String,
    /// The baseline: the windows' median and 99th percentile over the 5 s before, ms.
    pub baseline_p50_ms: f64,
    /// See `baseline_p50_ms`.
    pub baseline_p99_ms: f64,
    /// Replies in the baseline.
    pub baseline_requests: u64,
    /// A healthy window's p99 is at most this, ms (1.2 × the highest p99 of the baseline's windows;
    /// 1.8e16, u64::MAX µs, when fewer than 10 of them had replies: latency not judged).
    pub threshold_ms: f64,
    /// Whether anything went wrong within 1 s of the event.
    pub disrupted: bool,
    /// From the event to its recovery, ms; null: not recovered by the end of the test.
    pub window_ms: Option<f64>,
    /// The span the counts are over: from this window's start (seconds from the measured start)
    /// to the first healthy window, so many 100 ms windows.
    pub span_from_s: f64,
    /// See `span_from_s`.
    pub span_windows: u64,
    /// Replies in the span.
    pub requests: u64,
    /// Error replies in it, by first word.
    pub errors: BTreeMap<String, u64>,
    /// Requests lost with their connection.
    pub lost: u64,
    /// Unanswered after the grace (only when not recovered: that happens at the end).
    pub abandoned: u64,
    /// Open loop: never sent (likewise).
    pub unsent: u64,
    /// Redirects by kind.
    pub redirects: Redirects,
    /// Over a cluster: the nodes `MOVED` named as owners in the window.
    pub moved_to: Vec<String>,
    /// The highest latency in the span, ms.
    pub max_ms: f64,
    /// Its 99th percentile, ms.
    pub p99_ms: f64,
    /// Replies per second in the span.
    pub rate_rps: f64,
    /// The 100 ms windows from the baseline's start to 2 s after the recovery.
    pub windows: Vec<WindowEntry>,
}

/// One 100 ms window around an event.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowEntry {
    /// Its start, seconds from the measured start.
    pub at_s: f64,
    /// Replies.
    pub requests: u64,
    /// Error replies and lost requests.
    pub errors: u64,
    /// Redirects.
    pub redirects: u64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
}

/// A latency summary in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Latency {
    /// Mean.
    pub avg: f64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// 99.99th percentile.
    pub p99_99: f64,
    /// Largest.
    pub max: f64,
}

/// An encoded histogram: HdrHistogram V2 deflate in base64, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistogramData {
    /// `us`.
    #[serde(default)]
    pub unit: String,
    /// The lowest discernible value.
    #[serde(default)]
    pub lowest: u64,
    /// The highest trackable value.
    #[serde(default)]
    pub highest: u64,
    /// Significant figures.
    #[serde(default)]
    pub sigfig: u8,
    /// `hdrhistogram-v2-deflate-base64`.
    #[serde(default)]
    pub encoding: String,
    /// The encoding.
    pub data: String,
}

/// A summary and its histogram (`lateness`, a setup phase).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// The summary in milliseconds.
    pub ms: Latency,
    /// The histogram.
    pub histogram: HistogramData,
}

/// `clients_never_ran`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NeverRan {
    /// Refused by the server.
    #[serde(default)]
    pub refused: u64,
    /// Could not connect.
    #[serde(default)]
    pub unreachable: u64,
}

/// `connection_setup`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectionSetup {
    /// How many connections were set up.
    pub connections: u64,
    /// `connect`, `tls`, `handshake`, `total`.
    pub phases: BTreeMap<String, Phase>,
}

/// A setup phase: its summary and histogram.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Phase {
    /// The summary in milliseconds.
    pub latency_ms: Latency,
    /// The histogram.
    pub histogram: HistogramData,
}

/// One node of a test over several nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Node {
    /// `HOST:PORT`.
    pub address: String,
    /// `primary` or `replica`.
    #[serde(default)]
    pub role: String,
    /// Slots it served at the start.
    #[serde(default)]
    pub slots: u64,
    /// Replies it sent.
    pub requests: u64,
    /// Over the test's duration.
    #[serde(default)]
    pub rps: f64,
    /// Error replies by first word.
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    /// Nil replies.
    #[serde(default)]
    pub nil_replies: u64,
    /// Redirects it answered with.
    #[serde(default)]
    pub redirects: Redirects,
    /// Its latency summary.
    #[serde(default)]
    pub latency_ms: Latency,
    /// Its latency distribution.
    pub histogram: HistogramData,
    /// Open loop: its service time's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_latency_ms: Option<Latency>,
    /// Open loop: its service time's distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_histogram: Option<HistogramData>,
}

/// What `--verify` found in a test.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Verify {
    /// Whether versions were checked (stale reads: one writer per key).
    pub versions: bool,
    /// Replies to reads checked.
    pub checked: u64,
    /// Not a value respbench wrote (length, header or padding), or not a string.
    pub wrong: u64,
    /// A value of another key.
    pub other_key: u64,
    /// Older than the key's last acknowledged write.
    pub stale: u64,
    /// The first mismatches.
    pub shown: Vec<VerifyMismatch>,
}

/// One mismatch shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VerifyMismatch {
    /// `wrong`, `other_key` or `stale`.
    pub kind: String,
    /// The key.
    pub key: String,
    /// The value expected (cut).
    pub expected: String,
    /// What came (cut, escaped).
    pub got: String,
}

/// Redirects by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Redirects {
    /// `MOVED`.
    #[serde(default)]
    pub moved: u64,
    /// `ASK`.
    #[serde(default)]
    pub ask: u64,
    /// `TRYAGAIN`.
    #[serde(default)]
    pub tryagain: u64,
    /// `CLUSTERDOWN`.
    #[serde(default)]
    pub clusterdown: u64,
}

/// A test's finding: `{"kind", "text", "figures"}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Finding {
    /// `client_limited`, `schedule_not_kept`, …
    pub kind: String,
    /// The line the report prints.
    pub text: String,
    /// Its figures by name.
    #[serde(default)]
    pub figures: BTreeMap<String, f64>,
}

/// `arrivals`: the schedule's arrivals, accounted for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Arrivals {
    /// Due before the stop.
    pub due: u64,
    /// Completed without an error reply.
    pub completed: u64,
    /// Answered with an error.
    pub error_replies: u64,
    /// Lost with their connection.
    pub lost: u64,
    /// Unanswered after the grace.
    pub abandoned: u64,
    /// Never sent.
    pub unsent: u64,
}

/// `reconnects`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reconnects {
    /// Outages.
    #[serde(default)]
    pub drops: u64,
    /// Requests lost with the connections.
    #[serde(default)]
    pub lost_requests: u64,
    /// Time down in all, seconds.
    #[serde(default)]
    pub downtime_s: f64,
}

/// One second of a `series`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondEntry {
    /// Seconds from the test's start.
    pub second: u64,
    /// `--ramp`: the step the second's middle falls in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_step: Option<u64>,
    /// Replies in it.
    pub requests: u64,
    /// Error replies in it.
    #[serde(default)]
    pub errors: u64,
    /// Median, ms (absent in `respbench/1`, which carried [`SecondEntry::histogram`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    /// 90th percentile, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_ms: Option<f64>,
    /// 99th percentile, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    /// 99.9th percentile, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_ms: Option<f64>,
    /// Largest, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<f64>,
    /// Merged seconds: the percentiles are upper bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_bounds: Option<bool>,
    /// `respbench/1` only: the second's histogram, encoded (a string, or `{"data"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Value>,
}

/// `client_cpu`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientCpu {
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Wall seconds.
    pub wall_s: f64,
    /// Event loops.
    #[serde(default = "one")]
    pub threads: u64,
    /// CPU microseconds per request.
    #[serde(default)]
    pub us_per_request: f64,
    /// The share of its cores used.
    pub core_share: f64,
    /// Whether a loop was saturated.
    #[serde(default)]
    pub saturated: bool,
}

fn one() -> u64 {
    1
}

/// `server_cpu`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerCpu {
    /// Cores the server used.
    #[serde(default)]
    pub cores: f64,
    /// Its main thread's share of a core.
    #[serde(default)]
    pub main_thread_share: Option<f64>,
    /// The commands' share of its CPU.
    #[serde(default)]
    pub command_share: Option<f64>,
    /// Its main thread's share waiting to run.
    #[serde(default)]
    pub wait_share: Option<f64>,
    /// io-threads, when threaded.
    #[serde(default)]
    pub threaded: Option<String>,
}

/// A sweep step's values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// `-d` as given.
    pub datasize: String,
    /// `-c`.
    pub clients: u64,
    /// `-P`.
    pub pipeline: u64,
    /// `--threads`.
    pub threads: u64,
    /// `--repeat`'s run.
    pub run: u64,
}

/// `bottleneck`: who limited the test.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Bottleneck {
    /// `server`, `client`, `machine`, `neither`, `unknown`.
    pub side: String,
    /// The report's line.
    pub text: String,
    /// The machine's CPUs' busy share.
    #[serde(default)]
    pub machine_cpu_busy: Option<f64>,
    /// The client's share of waiting to run.
    #[serde(default)]
    pub client_wait_share: Option<f64>,
}

/// One entry of `capacity`: a test's search.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Search {
    /// The test searched.
    pub test: String,
    /// The objectives.
    pub objectives: Vec<Objective>,
    /// `--resolution`.
    pub resolution: String,
    /// The closed-loop probe's rate.
    #[serde(default)]
    pub ceiling_rps: Option<f64>,
    /// The search's bounds.
    #[serde(default)]
    pub bounds_rps: [u64; 2],
    /// A ladder of fixed steps.
    #[serde(default)]
    pub ladder: bool,
    /// `--max-steps` ran out.
    #[serde(default)]
    pub out_of_steps: bool,
    /// The rate found.
    #[serde(default)]
    pub answer: Option<Answer>,
    /// No rate met the objectives.
    #[serde(default)]
    pub unreachable: Option<Unreachable>,
    /// When the client, not the server, limited the steps.
    #[serde(default)]
    pub client_ceiling: Option<Verdict>,
    /// The answer line.
    #[serde(default)]
    pub line: String,
    /// Each step.
    pub steps: Vec<SearchStep>,
    /// The closed-loop probe's test.
    #[serde(default)]
    pub probe: Option<Test>,
}

/// A latency objective of `--slo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Objective {
    /// As given.
    pub text: String,
    /// `latency` (corrected) or `service`.
    pub metric: String,
    /// The percentile.
    pub percentile: f64,
    /// The limit in microseconds.
    pub limit_us: f64,
}

/// `capacity[].answer`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Answer {
    /// The rate.
    pub rps: u64,
    /// Its step.
    pub step: u64,
    /// The step above it that failed.
    #[serde(default)]
    pub above_step: Option<u64>,
    /// That step's rate.
    #[serde(default)]
    pub above_rps: Option<u64>,
    /// Confirmed by a repeat.
    #[serde(default)]
    pub confirmed: bool,
}

/// `capacity[].unreachable`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Unreachable {
    /// The lowest step tried.
    pub lowest_step: u64,
    /// Its rate.
    pub lowest_rps: u64,
}

/// A verdict: side and text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Verdict {
    /// Who limited.
    pub side: String,
    /// The line.
    pub text: String,
}

/// One step of a search.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchStep {
    /// Its target rate.
    pub target_rps: u64,
    /// `ladder`, `bracket`, `bisect`, `confirm`.
    #[serde(default)]
    pub role: String,
    /// The rate achieved.
    pub achieved_rps: f64,
    /// Whether it met every objective.
    pub passed: bool,
    /// What it missed.
    #[serde(default)]
    pub miss: Option<String>,
    /// Each objective's measured value, µs.
    #[serde(default)]
    pub values_us: Vec<f64>,
    /// Its latency percentiles, µs.
    #[serde(default)]
    pub latency_us: StepLatency,
    /// Its service time's p99 (the latency's in a closed loop), µs.
    #[serde(default)]
    pub service_p99_us: u64,
    /// Who limited it.
    #[serde(default)]
    pub bottleneck: Option<String>,
    /// The step ran twice: its first run failed while the client's own pauses (this, ms, at
    /// the missed objective's percentile) exceeded the objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_after_pause_ms: Option<f64>,
    /// Its test.
    pub test: Test,
}

/// A search step's latency percentiles in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepLatency {
    /// Median.
    pub p50: u64,
    /// 99th.
    pub p99: u64,
    /// 99.9th.
    pub p99_9: u64,
}

/// `comparison`: `respbench compare`'s answer for each test both sides ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Comparison {
    /// The baseline.
    pub a: ComparedSide,
    /// What is compared with it.
    pub b: ComparedSide,
    /// How the intervals were made.
    pub method: Method,
    /// The smallest change that counts, as a share (0.05): an interval within ± this that
    /// holds 0 is "no difference found".
    pub margin: f64,
    /// `--fail-if-slower`, as a share.
    #[serde(default)]
    pub fail_if_slower: Option<f64>,
    /// `--strict`: an interval that reaches past `fail_if_slower` fails too.
    pub strict: bool,
    /// What `--force` let through (configurations that differ, tests not limited by the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced: Option<Vec<String>>,
    /// Each test both sides ran.
    pub tests: Vec<ComparedTest>,
    /// `--fail-if-slower`: some figure failed it (the command exits 1).
    pub failed: bool,
}

/// One side of a comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparedSide {
    /// Its documents.
    pub files: Vec<String>,
    /// `HOST:PORT` (or the socket) its runs went to.
    #[serde(default)]
    pub address: Option<String>,
    /// Its server, as its first document names it.
    pub server: Server,
}

/// `comparison.method`: the bootstrap.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Method {
    /// `bootstrap`.
    pub name: String,
    /// What is resampled: `runs, then seconds within each run`.
    pub unit: String,
    /// The interval's confidence (0.95).
    pub confidence: f64,
    /// Resamples drawn.
    pub resamples: u64,
    /// The resampling generator's seed (fixed: the same documents give the same intervals).
    pub seed: u64,
}

/// One test of a comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparedTest {
    /// The title (`GET`).
    pub name: String,
    /// The backend, when the documents compare several.
    #[serde(default)]
    pub backend: Option<String>,
    /// `--rps`: the step's target.
    #[serde(default)]
    pub target_rps: Option<u64>,
    /// A sweep's step (its `run` is 0: the runs are the repeats compared).
    #[serde(default)]
    pub step: Option<Step>,
    /// A's runs of it.
    pub runs_a: u64,
    /// B's runs of it.
    pub runs_b: u64,
    /// A's full seconds, over its runs (0 without a per-second series).
    pub seconds_a: u64,
    /// B's full seconds.
    pub seconds_b: u64,
    /// Why it was not compared (a side not limited by the server, no request succeeded).
    #[serde(default)]
    pub left_out: Option<String>,
    /// What `--force` let through for it.
    #[serde(default)]
    pub forced: Option<String>,
    /// rps, p50, p99, p99.9 (empty when left out).
    pub figures: Vec<ComparedFigure>,
}

/// One figure of a compared test: B against A with its interval and verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparedFigure {
    /// `rps`, `p50`, `p99`, `p99.9`.
    pub figure: String,
    /// `rps` or `ms`.
    pub unit: String,
    /// A's figure: the mean of its runs'.
    pub a: f64,
    /// B's.
    pub b: f64,
    /// B / A.
    pub ratio: f64,
    /// The interval's low end of B / A.
    pub ratio_low: f64,
    /// Its high end.
    pub ratio_high: f64,
    /// How much slower B is, as a share of A's figure (rps lower, latency higher; negative:
    /// faster).
    pub slower: f64,
    /// The interval's low end of `slower`.
    pub slower_low: f64,
    /// Its high end.
    pub slower_high: f64,
    /// `slower`, `faster`, `no_difference` or `inconclusive`.
    pub verdict: String,
    /// The verdict's sentence.
    pub text: String,
    /// Inconclusive: about how many more repeats would settle it.
    #[serde(default)]
    pub more_repeats: Option<u64>,
    /// `--fail-if-slower`: `fail`, `pass` or `undecided` (the interval reaches past it).
    #[serde(default)]
    pub gate: Option<String>,
}

impl Document {
    /// The document as JSON text, pretty-printed with its keys sorted, as every respbench since
    /// `respbench/1` has written it.
    pub fn to_text(&self) -> Result<String, String> {
        let value = serde_json::to_value(self).map_err(|e| format!("cannot encode the JSON: {e}"))?;
        let mut text =
            serde_json::to_string_pretty(&value).map_err(|e| format!("cannot encode the JSON: {e}"))?;
        text.push('\n');
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    //! docs/respbench.schema.json against the types, both ways: every field the types write is
    //! in the schema (and every field the schema describes is one the types write), and a
    //! document made of what the schema requires reads back.

    use super::*;

    fn schema() -> Value {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/respbench.schema.json"))
                .expect("docs/respbench.schema.json");
        serde_json::from_str(&text).expect("the schema is JSON")
    }

    /// `s` with its `$ref` followed (within the schema document).
    fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                resolve(root, root.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("{r}")))
            }
            None => s,
        }
    }

    /// The schemas `s` stands for: itself, or each of its `oneOf`/`anyOf` alternatives.
    fn alternatives<'a>(root: &'a Value, s: &'a Value) -> Vec<&'a Value> {
        let s = resolve(root, s);
        let mut out: Vec<&Value> = ["oneOf", "anyOf"]
            .iter()
            .filter_map(|k| s.get(*k).and_then(Value::as_array))
            .flatten()
            .map(|a| resolve(root, a))
            .collect();
        if out.is_empty() || s.get("properties").is_some() {
            out.push(s);
        }
        out
    }

    /// Walks the value `v` the types wrote beside the schema `s`: each object key must be a
    /// property the schema names (or fall under a schema of `additionalProperties`), and each
    /// property the schema names must be in `v` (`v` is a document with every field filled).
    fn walk(
        root: &Value,
        s: &Value,
        v: &Value,
        path: &str,
        missing: &mut Vec<String>,
        unknown: &mut Vec<String>,
    ) {
        let alts = alternatives(root, s);
        match v {
            Value::Object(m) => {
                let objects: Vec<&Value> = alts
                    .iter()
                    .copied()
                    .filter(|a| a.get("properties").is_some() || a.get("additionalProperties").is_some())
                    .collect();
                if objects.is_empty() {
                    return;
                }
                for (k, x) in m {
                    let at = format!("{path}/{k}");
                    let prop = objects.iter().find_map(|a| a.get("properties").and_then(|p| p.get(k)));
                    let extra =
                        objects.iter().find_map(|a| a.get("additionalProperties").filter(|x| x.is_object()));
                    match prop.or(extra) {
                        Some(ps) => walk(root, ps, x, &at, missing, unknown),
                        None => unknown.push(at),
                    }
                }
                for a in &objects {
                    for k in a.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys())
                    {
                        if !m.contains_key(k) {
                            missing.push(format!("{path}/{k}"));
                        }
                    }
                }
            }
            Value::Array(list) => {
                if let Some(items) = alts.iter().find_map(|a| a.get("items")) {
                    for (i, x) in list.iter().enumerate() {
                        walk(root, items, x, &format!("{path}[{i}]"), missing, unknown);
                    }
                }
            }
            _ => {}
        }
    }

    /// A value of what the schema `s` requires, and nothing more.
    fn required(root: &Value, s: &Value) -> Value {
        let s = alternatives(root, s)[0];
        if let Some(c) = s.get("const") {
            return c.clone();
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array) {
            return e[0].clone();
        }
        let ty = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => {
                ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null")
            }
            _ if s.get("properties").is_some() => "object",
            _ => "null",
        };
        match ty {
            "object" => {
                let props = s.get("properties");
                let mut m = Map::new();
                for k in s
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    let p = props.and_then(|p| p.get(k)).cloned().unwrap_or(Value::Null);
                    m.insert(k.to_string(), required(root, &p));
                }
                Value::Object(m)
            }
            "array" => Value::Array(Vec::new()),
            "string" => Value::from("x"),
            "integer" => Value::from(1),
            "number" => Value::from(1.5),
            "boolean" => Value::from(false),
            _ => Value::Null,
        }
    }

    fn hist() -> HistogramData {
        HistogramData {
            unit: "us".into(),
            lowest: 1,
            highest: 2,
            sigfig: 3,
            encoding: "e".into(),
            data: "d".into(),
        }
    }

    /// A test entry with every field there is.
    fn full_test() -> Test {
        let lat = Latency::default();
        let figures: BTreeMap<String, f64> = [("x".to_string(), 1.0)].into();
        Test {
            name: "GET".into(),
            command: "GET k".into(),
            requests: 1,
            nil_replies: 0,
            expired_misses: Some(0),
            errors: [("ERR".to_string(), 1)].into(),
            duration_s: 1.0,
            rps: Some(1.0),
            latency_ms: Some(lat),
            no_request_succeeded: Some(true),
            histogram: hist(),
            bytes_sent: 1,
            bytes_received: 1,
            connections_opened: 1,
            start_us: 1,
            end_us: 2,
            last_reply_us: Some(2),
            backend: Some("mio".into()),
            target_rps: Some(1),
            rps_slack_us: Some(250),
            clients_never_ran: Some(NeverRan::default()),
            failed_clients: Some(1),
            service_latency_ms: Some(lat),
            service_histogram: Some(hist()),
            lateness: Some(Distribution { ms: lat, histogram: hist() }),
            connection_setup: Some(ConnectionSetup {
                connections: 1,
                phases: ["connect", "tls", "handshake", "total"]
                    .map(|p| (p.to_string(), Phase { latency_ms: lat, histogram: hist() }))
                    .into(),
            }),
            nodes: Some(vec![Node {
                address: "a:1".into(),
                role: "primary".into(),
                service_latency_ms: Some(lat),
                service_histogram: Some(hist()),
                histogram: hist(),
                errors: [("ERR".to_string(), 1)].into(),
                ..Node::default()
            }]),
            redirects: Some(Redirects::default()),
            verify: Some(Verify { shown: vec![VerifyMismatch::default()], ..Verify::default() }),
            warnings: Some(vec![Finding { kind: "client_limited".into(), text: "t".into(), figures }]),
            abandoned_requests: Some(1),
            unsent_requests: Some(1),
            latency_lower_bounds: Some(1),
            arrivals: Some(Arrivals::default()),
            reconnects: Some(Reconnects::default()),
            replay: Some(Replay {
                skipped: vec![SkippedCommand::default()],
                malformed_lines: vec![MalformedLine::default()],
                ..Replay::default()
            }),
            series: Some(vec![SecondEntry {
                ramp_step: Some(0),
                p50_ms: Some(1.0),
                p90_ms: Some(1.0),
                p99_ms: Some(1.0),
                p999_ms: Some(1.0),
                max_ms: Some(1.0),
                upper_bounds: Some(true),
                // respbench/1's second histograms are read, never written.
                histogram: None,
                ..SecondEntry::default()
            }]),
            client_cpu: Some(ClientCpu::default()),
            server_cpu: Some(ServerCpu {
                main_thread_share: Some(0.5),
                command_share: Some(0.5),
                wait_share: Some(0.1),
                threaded: Some("4".into()),
                ..ServerCpu::default()
            }),
            step: Some(Step::default()),
            bottleneck: Some(Bottleneck {
                machine_cpu_busy: Some(0.5),
                client_wait_share: Some(0.1),
                ..Bottleneck::default()
            }),
            side: Some("a".into()),
            server_time: Some(ServerTime {
                measures: "m".into(),
                nodes: vec![NodeTime {
                    source: Some("latency_histogram".into()),
                    not_known: Some("n".into()),
                    expected_calls: Some(1),
                    mismatch: Some("m".into()),
                    commands: vec![full_command()],
                    ..NodeTime::default()
                }],
                merged: Some(vec![full_command()]),
            }),
            client_pauses: Some(ClientPauses {
                wake_ms: Some(lat),
                wake_histogram: Some(hist()),
                idle_histogram: hist(),
                series_max_ms: vec![1.0],
                series_p99_ms: vec![1.0],
                ..ClientPauses::default()
            }),
            delivery: Some(Delivery {
                failure: Some("closed".into()),
                latency_ms: Some(lat),
                histogram: Some(hist()),
                service_ms: Some(lat),
                service_histogram: Some(hist()),
                ..Delivery::default()
            }),
            time_split: Some(TimeSplit {
                percentiles: vec![50.0],
                corrected_ms: vec![1.0],
                send_lateness_ms: Some(vec![1.0]),
                service_ms: vec![1.0],
                server_ms: Some(vec![[0.5, 1.0]]),
                rest_ms: Some(vec![[0.0, 0.5]]),
                server_source: Some("latency_histogram".into()),
            }),
            events: Some(vec![EventEntry {
                sent_s: Some(5.0),
                replies: Some(vec![EventReply::default()]),
                exit: Some(ProgramExit { status: Some(0), ..ProgramExit::default() }),
                not_started: Some("x".into()),
                part: Some(0),
                disruption: Some(DisruptionEntry {
                    window_ms: Some(1.0),
                    errors: [("ERR".to_string(), 1)].into(),
                    moved_to: vec!["a:1".into()],
                    windows: vec![WindowEntry::default()],
                    ..DisruptionEntry::default()
                }),
                ..EventEntry::default()
            }]),
            ramp: Some(Ramp {
                kind: "clients".into(),
                from: 1,
                to: 1,
                step: 1,
                every_s: 1.0,
                steps: vec![RampStep {
                    level: 1,
                    clients: 1,
                    target_rps: Some(1),
                    verdict: Some(Verdict { side: "server".into(), text: "t".into() }),
                    ..RampStep::default()
                }],
            }),
            server_series: Some(vec![server_series::full_sample()]),
            server_sampling: Some(ServerSampling::default()),
            server_threads: Some(ServerThreads {
                node: Some("a:1".into()),
                busiest: Some("io_thd_1".into()),
                busiest_cores: Some(1.0),
                main_thread_cores: Some(1.0),
                other_cores: Some(1.0),
                source: Some("/proc".into()),
                ..ServerThreads::default()
            }),
        }
    }

    fn full_command() -> CommandTime {
        CommandTime {
            usec_per_call: Some(1.0),
            p50_us: Some([1, 2]),
            p99_us: Some([1, 2]),
            p99_9_us: Some([1, 2]),
            since_reset_us: Some([1.0, 2.0, 3.0]),
            buckets: vec![[2, 1]],
            ..CommandTime::default()
        }
    }

    /// A document with every field there is.
    fn full_document() -> Document {
        let step = SearchStep {
            miss: Some("m".into()),
            bottleneck: Some("server".into()),
            rerun_after_pause_ms: Some(1.0),
            test: full_test(),
            ..SearchStep::default()
        };
        Document {
            schema: "respbench/2".into(),
            tool: Tool { name: "respbench".into(), version: "0".into() },
            command_line: Some(vec!["-q".into()]),
            config: RunConfig {
                host: Some("h".into()),
                port: Some(1),
                socket: Some("/s".into()),
                user: Some("u".into()),
                pipeline_mode: Some("window".into()),
                keyspace: Some(1),
                replicas: Value::from("auto"),
                tests: Some("get".into()),
                command: Some(vec!["GET".into()]),
                timeout_ms: Some(1.0),
                rps: Some(vec![1]),
                rps_slack_us: Some(1),
                duration_s: Some(1.0),
                mix: Some(vec![MixEntry {
                    command: "get".into(),
                    weight: 1,
                    keys: Some("zipf:0.99/10".into()),
                }]),
                expiry_range: Some("1-2".into()),
                slo: Some(Slo { range_rps: Some([1, 2]), ..Slo::default() }),
                start_at_us: Some(1),
                mptcp: Some(true),
                worker: Some(WorkerPart {
                    rps: Some(vec![1]),
                    keys: Some(KeyRange::default()),
                    ..WorkerPart::default()
                }),
                workers: Some(2),
                sweep: Some(SweepLists::default()),
                ab: Some("h:2".into()),
                ..RunConfig::default()
            },
            server: Server {
                save: Some("".into()),
                appendonly: Some("no".into()),
                name: Some("redis".into()),
                version: Some("7".into()),
                mode: Some("standalone".into()),
                tls_name_checked: Some(true),
            },
            interrupted: false,
            tests: vec![full_test()],
            warnings: Some(vec![Notice { kind: "notice".into(), text: "t".into() }]),
            late_by_s: Some(0.0),
            capacity: Some(vec![Search {
                objectives: vec![Objective::default()],
                ceiling_rps: Some(1.0),
                answer: Some(Answer { above_step: Some(1), above_rps: Some(2), ..Answer::default() }),
                unreachable: Some(Unreachable::default()),
                client_ceiling: Some(Verdict::default()),
                steps: vec![step],
                probe: Some(full_test()),
                ..Search::default()
            }]),
            merged_from: Some(vec!["a.json".into()]),
            mixture: Some(vec!["m".into()]),
            server_b: Some(Server::default()),
            comparison: Some(Comparison {
                a: ComparedSide { address: Some("h:1".into()), ..ComparedSide::default() },
                fail_if_slower: Some(0.05),
                forced: Some(vec!["f".into()]),
                tests: vec![ComparedTest {
                    backend: Some("mio".into()),
                    target_rps: Some(1),
                    step: Some(Step::default()),
                    left_out: Some("l".into()),
                    forced: Some("f".into()),
                    figures: vec![ComparedFigure {
                        more_repeats: Some(3),
                        gate: Some("pass".into()),
                        ..ComparedFigure::default()
                    }],
                    ..ComparedTest::default()
                }],
                ..Comparison::default()
            }),
        }
    }

    #[test]
    fn the_schema_and_the_types_name_the_same_fields() {
        let root = schema();
        let v = serde_json::to_value(full_document()).unwrap();
        let (mut missing, mut unknown) = (Vec::new(), Vec::new());
        walk(&root, &root, &v, "", &mut missing, &mut unknown);
        assert!(unknown.is_empty(), "fields the types write that the schema does not describe: {unknown:?}");
        assert!(missing.is_empty(), "fields the schema describes that the types never write: {missing:?}");
    }

    #[test]
    fn a_document_of_what_the_schema_requires_reads_back() {
        let root = schema();
        let minimal = required(&root, &root);
        let doc: Document = serde_json::from_value(minimal.clone())
            .unwrap_or_else(|e| panic!("{e}: a document the schema allows does not read: {minimal:#}"));
        assert_eq!(doc.schema, minimal["schema"].as_str().unwrap());
        // With a test of what the schema requires of one.
        let mut with_test = minimal.clone();
        with_test["tests"] = Value::Array(vec![required(&root, &root["$defs"]["test"])]);
        let doc: Document = serde_json::from_value(with_test.clone())
            .unwrap_or_else(|e| panic!("{e}: a test the schema allows does not read: {with_test:#}"));
        assert_eq!(doc.tests.len(), 1);
        // And the full document reads back as it was written.
        let full = full_document();
        let back: Document = serde_json::from_value(serde_json::to_value(&full).unwrap()).unwrap();
        assert_eq!(back, full);
    }
}
