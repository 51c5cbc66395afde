//! `capacity`: each test's capacity search (`--slo`), its steps and its answer.

use serde::{Deserialize, Serialize};

use super::*;

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
    pub client_ceiling: Option<respbench_session::verdict::Verdict>,
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

impl Objective {
    /// The document's form of an objective.
    pub fn of(o: &respbench_session::slo::Objective) -> Objective {
        let metric = match o.metric {
            respbench_session::slo::Metric::Corrected => "latency",
            respbench_session::slo::Metric::Service => "service",
        };
        Objective {
            text: o.text.clone(),
            metric: metric.into(),
            percentile: o.percentile,
            limit_us: o.limit_us,
        }
    }
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
    /// The server's seconds over the step, every node, with its p99 command time (#51 item 4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<crate::server_window::ServerOver>,
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
