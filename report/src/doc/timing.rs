//! Where a test's time went, in the document: the server's own execution time (`server_time`),
//! the client machine's pauses (`client_pauses`) and the latency split into its parts
//! (`time_split`), each made from the session's figures.

use respbench_session::timing;
use serde::{Deserialize, Serialize};

use super::{HistogramData, Latency};
use crate::error::Error;
use crate::hdr::{finite, ms};

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

impl From<&timing::ServerTime> for ServerTime {
    /// The `server_time` object.
    fn from(st: &timing::ServerTime) -> ServerTime {
        ServerTime {
            measures: timing::MEASURES.into(),
            nodes: st
                .nodes
                .iter()
                .map(|n| NodeTime {
                    address: n.address.clone(),
                    source: n.source.as_ref().ok().map(|s| s.name().to_string()),
                    not_known: n.source.as_ref().err().cloned(),
                    calls: n.calls(),
                    expected_calls: n.expected_calls,
                    mismatch: n.mismatch(),
                    commands: n.commands.iter().map(CommandTime::from).collect(),
                })
                .collect(),
            merged: (st.nodes.len() > 1).then(|| st.merged.iter().map(CommandTime::from).collect()),
        }
    }
}

impl From<&timing::CommandTime> for CommandTime {
    /// One command's entry: its calls, mean, the buckets holding p50, p99 and p99.9.
    fn from(c: &timing::CommandTime) -> CommandTime {
        let at = |p: f64| c.bucket_at(p).map(|(lo, hi)| [lo, hi]);
        CommandTime {
            command: c.command.clone(),
            calls: c.calls,
            usec_per_call: c.usec_per_call.map(finite),
            p50_us: at(50.0),
            p99_us: at(99.0),
            p99_9_us: at(99.9),
            since_reset_us: c.since_reset.map(|p| p.map(finite)),
            buckets: c.buckets.iter().map(|b| [b.upper_us, b.count]).collect(),
        }
    }
}

impl TryFrom<&timing::ClientPauses> for ClientPauses {
    type Error = Error;

    /// The `client_pauses` object.
    fn try_from(p: &timing::ClientPauses) -> Result<ClientPauses, Error> {
        Ok(ClientPauses {
            interval_us: p.interval_us,
            idle_ms: Latency::from(&p.idle),
            idle_histogram: HistogramData::try_from(&p.idle)?,
            wake_ms: p.wake.as_ref().map(Latency::from),
            wake_histogram: p.wake.as_ref().map(HistogramData::try_from).transpose()?,
            series_max_ms: p.seconds.iter().map(|&us| ms(us)).collect(),
            series_p99_ms: p.seconds_p99.iter().map(|&us| ms(us)).collect(),
        })
    }
}

impl From<&timing::Split> for TimeSplit {
    /// The `time_split` object.
    fn from(s: &timing::Split) -> TimeSplit {
        let row = |v: [u64; 3]| v.iter().map(|&us| ms(us)).collect::<Vec<f64>>();
        let bounds =
            |v: [(u64, u64); 3]| v.iter().map(|&(lo, hi)| [ms(lo), ms(hi)]).collect::<Vec<[f64; 2]>>();
        TimeSplit {
            percentiles: timing::PERCENTILES.to_vec(),
            corrected_ms: row(s.corrected),
            send_lateness_ms: s.lateness.map(row),
            service_ms: row(s.service),
            server_ms: s.server.map(bounds),
            rest_ms: s.rest.map(bounds),
            server_source: s.source.map(|x| x.name().to_string()),
        }
    }
}
