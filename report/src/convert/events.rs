//! A test's events (`--at`) as the document's `events` entries.

use respbench_session::event::{Action, Outcome};
use respbench_session::result::{EventResult, TestResult};

use crate::doc;
use crate::hdr::ms;

/// The JSON's `events` of a test; `None` without.
pub fn entries(t: &TestResult) -> Option<Vec<doc::EventEntry>> {
    if t.events.is_empty() {
        return None;
    }
    Some(t.events.iter().map(|e| entry(t, e)).collect())
}

fn entry(t: &TestResult, e: &EventResult) -> doc::EventEntry {
    let mut x = doc::EventEntry {
        at_s: e.event.at.as_secs_f64(),
        kind: match e.event.action {
            Action::Command(_) => "command",
            Action::Exec { .. } => "exec",
        }
        .into(),
        command: e.event.text.clone(),
        sent_s: e.fired.sent.map(|d| d.as_secs_f64()),
        failed: e.fired.outcome.failed(),
        ..doc::EventEntry::default()
    };
    match &e.fired.outcome {
        Outcome::Replies(r) => {
            x.replies = Some(
                r.iter()
                    .map(|r| doc::EventReply {
                        node: r.node.clone(),
                        reply: r.reply.clone(),
                        error: r.error,
                        took_ms: r.took.as_secs_f64() * 1e3,
                    })
                    .collect(),
            )
        }
        Outcome::Exited { status, stderr, took } => {
            x.exit = Some(doc::ProgramExit {
                status: *status,
                stderr: stderr.clone(),
                took_ms: took.as_secs_f64() * 1e3,
            })
        }
        Outcome::NotStarted(why) => x.not_started = Some(why.clone()),
        Outcome::NotSent => {}
    }
    x.disruption = e.cost.as_ref().map(|d| {
        let (abandoned, unsent) = crate::shared::unfinished(t, d);
        doc::DisruptionEntry {
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
                .map(|w| doc::WindowEntry {
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
