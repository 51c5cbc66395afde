//! The figures a test's entry is made of: latency summaries and histograms, connection
//! set-up, nodes, `--verify`, arrivals, reconnects, the per-second series, CPU, the sweep's step
//! and the bottleneck.

use hdrhistogram::Histogram;
use respbench_core::stats::{HIGHEST_MICROS, LOWEST_MICROS};
use serde::{Deserialize, Serialize};

use super::*;
use crate::codec::{encode_histogram, ENCODING};
use crate::hdr::{finite, mean, ms, value_at_percentile};

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

impl From<&Histogram<u64>> for Latency {
    /// The summary of a histogram of microseconds.
    fn from(h: &Histogram<u64>) -> Latency {
        Latency {
            avg: finite(mean(h) / 1000.0),
            min: ms(h.min()),
            p50: ms(value_at_percentile(h, 50.0)),
            p90: ms(value_at_percentile(h, 90.0)),
            p95: ms(value_at_percentile(h, 95.0)),
            p99: ms(value_at_percentile(h, 99.0)),
            p99_9: ms(value_at_percentile(h, 99.9)),
            p99_99: ms(value_at_percentile(h, 99.99)),
            max: ms(h.max()),
        }
    }
}

impl TryFrom<&Histogram<u64>> for HistogramData {
    type Error = crate::error::Error;

    /// The whole distribution of a histogram of microseconds, encoded.
    fn try_from(h: &Histogram<u64>) -> Result<HistogramData, Self::Error> {
        Ok(HistogramData {
            unit: "us".into(),
            lowest: LOWEST_MICROS,
            highest: HIGHEST_MICROS,
            sigfig: h.sigfig(),
            encoding: ENCODING.into(),
            data: encode_histogram(h)?,
        })
    }
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
    pub redirects: respbench_core::stats::Redirects,
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

impl From<&respbench_core::stats::VerifyStats> for Verify {
    /// The `verify` object.
    fn from(v: &respbench_core::stats::VerifyStats) -> Verify {
        Verify {
            versions: v.versions,
            checked: v.checked,
            wrong: v.wrong,
            other_key: v.other_key,
            stale: v.stale,
            shown: v
                .shown
                .iter()
                .map(|m| VerifyMismatch {
                    kind: m.kind.name().into(),
                    key: m.key.clone(),
                    expected: m.expected.clone(),
                    got: m.got.clone(),
                })
                .collect(),
        }
    }
}

impl From<&Verify> for respbench_core::stats::VerifyStats {
    /// Reads a `verify` object back (a kind not known is left out of those shown).
    fn from(v: &Verify) -> respbench_core::stats::VerifyStats {
        use respbench_core::stats::{Mismatch, Shown};
        respbench_core::stats::VerifyStats {
            on: true,
            versions: v.versions,
            checked: v.checked,
            wrong: v.wrong,
            other_key: v.other_key,
            stale: v.stale,
            shown: v
                .shown
                .iter()
                .take(respbench_core::stats::SHOWN)
                .filter_map(|m| {
                    Some(Shown {
                        kind: Mismatch::from_name(&m.kind)?,
                        key: m.key.clone(),
                        expected: m.expected.clone(),
                        got: m.got.clone(),
                    })
                })
                .collect(),
        }
    }
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
    /// Connections still down when the test ended.
    #[serde(default)]
    pub still_down: u64,
    /// `--sentinel`: requests in flight when their connection went down that were sent again
    /// once it was back, not lost.
    #[serde(default)]
    pub resent: u64,
    /// `--sentinel`: replies of a server that refused as a replica (`READONLY`, `MASTERDOWN`),
    /// after which the connection moved and the request went again.
    #[serde(default)]
    pub refused: u64,
}

/// One of `address_changes`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AddressChange {
    /// The name, as given (`host:port`).
    pub name: String,
    /// The address its connections had (`IP:PORT`).
    pub from: String,
    /// The address they came back to.
    pub to: String,
    /// When the first connection found it, in seconds from the test's start.
    pub at_s: f64,
    /// How many connections came back to the new address.
    pub connections: u64,
}

/// `retries`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Retries {
    /// Retries by the first word of the error reply that asked for each.
    #[serde(default)]
    pub by_error: BTreeMap<String, u64>,
    /// Requests that gave up after `--retry-limit` retries: their last error is their reply.
    #[serde(default)]
    pub gave_up: u64,
}

/// `cursor` (`--follow-cursor`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cursor {
    /// Full iterations: calls from cursor 0 until a reply returned 0.
    #[serde(default)]
    pub iterations: u64,
    /// The elements the full iterations' replies returned (a hash's fields and values both).
    #[serde(default)]
    pub elements: u64,
    /// Replies whose cursor was not a number (errors of kind `BADCURSOR` too).
    #[serde(default)]
    pub bad: u64,
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
