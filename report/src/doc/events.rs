//! A test's `events` (`--at`): what each event sent, what came back, and the disruption
//! windows around it.

use respbench_session::event::{Action, Outcome};
use respbench_session::result::{EventResult, TestResult};
use serde::{Deserialize, Serialize};

use crate::hdr::ms;

use super::*;

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
    /// The server seconds that overlap its window, every node (#51 item 4).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<crate::server_window::ServerOver>,
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
    pub redirects: respbench_core::stats::Redirects,
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

impl EventEntry {
    /// The entry of the event `e` of the test `t`.
    pub fn of(t: &TestResult, e: &EventResult) -> EventEntry {
        let mut x = EventEntry {
            at_s: e.event.at.as_secs_f64(),
            kind: match e.event.action {
                Action::Command(_) => "command",
                Action::Exec { .. } => "exec",
            }
            .into(),
            command: e.event.text.clone(),
            sent_s: e.fired.sent.map(|d| d.as_secs_f64()),
            failed: e.fired.outcome.failed(),
            ..EventEntry::default()
        };
        match &e.fired.outcome {
            Outcome::Replies(r) => {
                x.replies = Some(
                    r.iter()
                        .map(|r| EventReply {
                            node: r.node.clone(),
                            reply: r.reply.clone(),
                            error: r.error,
                            took_ms: r.took.as_secs_f64() * 1e3,
                        })
                        .collect(),
                )
            }
            Outcome::Exited { status, stderr, took } => {
                x.exit = Some(ProgramExit {
                    status: *status,
                    stderr: stderr.clone(),
                    took_ms: took.as_secs_f64() * 1e3,
                })
            }
            Outcome::NotStarted(why) => x.not_started = Some(why.clone()),
            Outcome::NotSent => {}
        }
        x.server = e.cost.as_ref().map(|d| crate::server_window::over_event(t, d)).unwrap_or_default();
        x.disruption = e.cost.as_ref().map(|d| {
            let (abandoned, unsent) = crate::shared::unfinished(t, d);
            DisruptionEntry {
                latency: crate::shared::latency_kind(t).into(),
                baseline_p50_ms: ms(d.baseline_p50),
                baseline_p99_ms: ms(d.baseline_p99),
                baseline_requests: d.baseline_requests,
                threshold_ms: ms(d.threshold),
                disrupted: d.disrupted,
                window_ms: d.recovered.map(|w| w.as_secs_f64() * 1e3),
                span_from_s: d.from.as_secs_f64(),
                span_windows: d.windows,
                requests: d.requests,
                errors: d.error_kinds.iter().cloned().collect(),
                lost: d.lost,
                abandoned,
                unsent,
                redirects: respbench_core::stats::Redirects {
                    moved: d.redirects[0],
                    ask: d.redirects[1],
                    tryagain: d.redirects[2],
                    clusterdown: d.redirects[3],
                },
                moved_to: e.moved_to.clone(),
                max_ms: ms(d.max),
                p99_ms: ms(d.p99),
                rate_rps: d.rate(),
                windows: d
                    .series
                    .iter()
                    .map(|w| WindowEntry {
                        at_s: w.at.as_secs_f64(),
                        requests: w.requests,
                        errors: w.errors,
                        redirects: w.redirects,
                        p50_ms: ms(w.p50),
                        p99_ms: ms(w.p99),
                        max_ms: ms(w.max),
                    })
                    .collect(),
            }
        });
        x
    }
}
