//! `--ramp`: the figures and the verdict of each step of a ramp within one test.
//!
//! The core counts each reply in the step its parse time falls in ([`Stats::steps`]); while the
//! test runs, the session's run thread takes a [`Mark`] as each step begins (the process's CPU,
//! the machine's ticks, the loops' wait for a CPU, and the server's `INFO cpu` over the
//! startup's connection, so no connection is added), and one at the end. A step's verdict is
//! the test's verdict logic ([`crate::verdict::verdict`]) applied to the step's marks and
//! figures.

use std::time::Instant;

use respbench_core::stats::value_at_percentile;
use respbench_core::{Ramp, RampKind, Stats};

use crate::cpu::{machine_busy, ClientCpu};
use crate::verdict::{self, CpuReading, Schedule, ServerCpu, Verdict};

/// What the run thread reads at a step boundary.
#[derive(Clone, Debug)]
pub(crate) struct Mark {
    at: Instant,
    cpu: (f64, f64),
    machine: Option<(u64, u64)>,
    wait_ns: Option<u64>,
    server: Option<CpuReading>,
}

impl Mark {
    /// Reads the process's CPU, the machine's ticks, the loops' run delay and the server's CPU
    /// (`server`: the probe's reading, if any).
    pub(crate) fn take(server: &mut dyn FnMut() -> Option<CpuReading>) -> Mark {
        Mark {
            at: Instant::now(),
            cpu: crate::cpu::process_cpu(),
            machine: crate::cpu::machine_ticks(),
            wait_ns: crate::cpu::run_delay_ns("self"),
            server: server(),
        }
    }
}

/// The marks of a ramp's test, taken by the run thread as each step begins: what reads the
/// server (the startup's connection's probe) and what was read.
pub(crate) struct Watch<'p> {
    /// Reads the server's CPU.
    pub probe: &'p mut crate::probe::Probe,
    /// One as the test began and as each later step began, then one at its end.
    pub marks: Vec<Mark>,
}

impl Watch<'_> {
    /// Takes a mark now.
    pub(crate) fn mark(&mut self) {
        let probe = &mut *self.probe;
        self.marks.push(Mark::take(&mut || probe.read()));
    }
}

/// A ramp's result: the ramp as asked and what each step that ran measured; the result
/// document's `ramp` (with the feature `serde`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RampResult {
    /// Clients or requests per second.
    pub kind: RampKind,
    /// The first step's level.
    pub from: u64,
    /// The last step's level.
    pub to: u64,
    /// How much each step adds.
    pub step: u64,
    /// How long each step lasts, in seconds.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::doc_form::finite"))]
    pub every_s: f64,
    /// Each step that began, in order (a test stopped early has fewer).
    pub steps: Vec<StepResult>,
}

/// What one step of a ramp measured: an entry of the document's `ramp.steps` (with the feature
/// `serde`), its percentiles in milliseconds there.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(default))]
pub struct StepResult {
    /// The step's level: its clients, or its target rate.
    pub level: u64,
    /// The clients open during the step (all of the test's in a rate ramp).
    pub clients: u64,
    /// The step's target rate, in an open loop.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub target_rps: Option<u64>,
    /// When it began, in seconds from the test's start.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::doc_form::finite"))]
    pub start_s: f64,
    /// How long it lasted, in seconds (the last to the test's end).
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::doc_form::finite"))]
    pub duration_s: f64,
    /// Replies parsed during it.
    pub requests: u64,
    /// Error replies among them.
    pub errors: u64,
    /// Replies per second.
    #[cfg_attr(feature = "serde", serde(serialize_with = "crate::doc_form::finite"))]
    pub rps: f64,
    /// Latency percentiles in microseconds (from the intended send time in an open loop).
    #[cfg_attr(feature = "serde", serde(rename = "p50_ms", with = "crate::doc_form::ms"))]
    pub p50_us: u64,
    /// 99th percentile.
    #[cfg_attr(feature = "serde", serde(rename = "p99_ms", with = "crate::doc_form::ms"))]
    pub p99_us: u64,
    /// 99.9th percentile.
    #[cfg_attr(feature = "serde", serde(rename = "p999_ms", with = "crate::doc_form::ms"))]
    pub p999_us: u64,
    /// Who limited the step.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub verdict: Option<Verdict>,
}

/// The figures of each step of `stats`' ramp that began (`marks`: one as each began and one at
/// the end), with verdicts. `rate`: the test's `--rps` (a clients ramp's rate is shared by all
/// its clients); `pipeline_in_flight`: `-P` times a sequence's length; `loops`: the event loops.
#[allow(clippy::too_many_arguments)]
pub(crate) fn results(
    stats: &Stats,
    marks: &[Mark],
    rate: Option<u64>,
    connections: u64,
    pipeline_in_flight: u64,
    loops: usize,
    missing: Option<&str>,
    threaded: Option<&str>,
) -> Option<RampResult> {
    let ramp: Ramp = stats.ramp?;
    let ran = marks.len().saturating_sub(1).min(stats.steps.len());
    let end = stats.end.max(ramp.start);
    let steps = (0..ran)
        .map(|k| {
            let st = &stats.steps[k];
            let from = ramp.step_start(k);
            let to = ramp.step_end(k).min(end).max(from);
            let secs = to.nanos_since(from) as f64 / 1e9;
            let rps = if secs > 0.0 { st.requests as f64 / secs } else { 0.0 };
            let (clients, target) = match ramp.kind {
                RampKind::Clients => {
                    let c = ramp.level(k);
                    (c, rate.map(|r| (r as u128 * c as u128 / connections.max(1) as u128) as u64))
                }
                RampKind::Rps => (connections, Some(ramp.level(k))),
            };
            let (a, b) = (&marks[k], &marks[k + 1]);
            let wall = b.at.saturating_duration_since(a.at);
            let cpu = ClientCpu::between(a.cpu, b.cpu, wall, loops);
            let server = a.server.zip(b.server).and_then(|(x, y)| ServerCpu::between(&x, &y, threaded));
            let machine = machine_busy(a.machine, b.machine);
            let capacity = wall.as_secs_f64() * loops as f64;
            let waited = a
                .wait_ns
                .zip(b.wait_ns)
                .filter(|_| capacity > 0.0)
                .map(|(x, y)| y.saturating_sub(x) as f64 / 1e9 / capacity);
            let schedule = match (target, &st.lateness, &st.service) {
                (Some(t), Some(late), Some(service)) if !late.is_empty() => Some(Schedule {
                    target_rps: t as f64,
                    achieved_rps: rps,
                    lateness_p50_us: value_at_percentile(late, 50.0),
                    lateness_p99_us: value_at_percentile(late, 99.0),
                    lateness_max_us: late.max(),
                    latency_p99_us: value_at_percentile(&st.latency, 99.0),
                    service_p99_us: value_at_percentile(service, 99.0),
                }),
                _ => None,
            };
            let v = verdict::verdict(
                Some(&cpu),
                server.as_ref(),
                missing,
                machine,
                waited,
                clients * pipeline_in_flight,
                schedule.as_ref(),
            );
            StepResult {
                level: ramp.level(k),
                clients,
                target_rps: target,
                start_s: from.nanos_since(ramp.start) as f64 / 1e9,
                duration_s: secs,
                requests: st.requests,
                errors: st.errors,
                rps,
                p50_us: value_at_percentile(&st.latency, 50.0),
                p99_us: value_at_percentile(&st.latency, 99.0),
                p999_us: value_at_percentile(&st.latency, 99.9),
                verdict: Some(v),
            }
        })
        .collect();
    Some(RampResult {
        kind: ramp.kind,
        from: ramp.from,
        to: ramp.to,
        step: ramp.step,
        every_s: ramp.every.as_secs_f64(),
        steps,
    })
}
