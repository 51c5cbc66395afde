//! `--slo` in the session: the search's settings checked from the options against the rest of
//! the run's configuration ([`settings`]), and what a search ran ([`Found`]: its steps'
//! results). The search itself, a state machine with no IO and no clock, is [`crate::slo`]; its
//! items are re-exported here, at the paths the outputs use.

pub use crate::slo::{
    evaluate_ladder, format_us, judge, measure, miss_text, parse_objectives, parse_resolution, step_slot,
    Capacity, Conclusion, Measured, Metric, Miss, Next, Objective, Resolution, Role, Search, Settings,
    SloError, StepRecord, DEFAULT_RESOLUTION, DEFAULT_STEPS, PROBE, RATE_TOLERANCE, STEP_OVERHEAD,
};

use crate::config::{Config, Worker};
use crate::result::TestResult;
use crate::verdict::{Side, Verdict};

/// The search's settings from the options (`--slo`, `--slo-resolution`, `--slo-steps`, `--rps
/// LOW-HIGH`), checked against the rest of the run's configuration: what a search cannot run
/// with is refused with the reason.
pub fn settings(
    slo: &str,
    resolution: Option<&str>,
    steps: Option<u32>,
    rps: Option<&str>,
    cfg: &Config,
) -> Result<Settings, SloError> {
    let objectives = parse_objectives(slo)?;
    let resolution = resolution.map(parse_resolution).transpose()?.unwrap_or(DEFAULT_RESOLUTION);
    let max_steps = steps.unwrap_or(DEFAULT_STEPS);
    if !(1..=100).contains(&max_steps) {
        let value = max_steps.to_string();
        return Err(SloError::Invalid { option: "--slo-steps", value, why: "must be 1 to 100 steps" });
    }
    let range = rps.map(parse_range).transpose()?;
    let refuse = |with, why| Err(SloError::Conflict { with, why });
    if cfg.repeat {
        return refuse("-l", "a search ends with its answer");
    }
    if cfg.idle {
        return refuse("-I", "idle connections measure no latency");
    }
    if cfg.backends.len() > 1 {
        return refuse("several --backend", "run one search per backend and plot them together");
    }
    if cfg.sweep.is_sweep() {
        return refuse(
            "a sweep (lists of -d, -c, -P, --threads, or --repeat)",
            "run one search per value and plot them together",
        );
    }
    let ladder = cfg.split.is_some();
    if ladder {
        // The workers cannot agree on the next rate of a bisection without talking: each runs
        // the same ladder of rates at the same instants, and merge judges the fleet.
        if range.is_none() {
            return refuse(
                "--worker without --rps LOW-HIGH",
                "each worker's probe would find its own ceiling; give the fleet's range",
            );
        }
        if cfg.start_at.is_none() {
            return refuse(
                "--worker without --start-at",
                "the workers' steps start together at instants derived from --start-at",
            );
        }
        if let (Some((lo, _)), Some(s)) = (range, &cfg.split) {
            if lo < s.worker.count {
                return Err(SloError::FewerThanWorkers { low: lo, workers: s.worker.count });
            }
        }
    }
    Ok(Settings { objectives, resolution, range, max_steps, probe: PROBE, ladder })
}

/// `--rps LOW-HIGH` with `--slo`.
fn parse_range(text: &str) -> Result<(u64, u64), SloError> {
    let bad = |why| SloError::Invalid { option: "--rps", value: text.into(), why };
    let (lo, hi) = text
        .split_once('-')
        .ok_or_else(|| bad("with --slo, --rps is the range to search, LOW-HIGH (10000-50000)"))?;
    let n = |s: &str| s.trim().parse::<u64>().map_err(|_| bad("expected LOW-HIGH in requests per second"));
    let (lo, hi) = (n(lo)?, n(hi)?);
    if lo == 0 || hi > 100_000_000 || lo >= hi {
        return Err(bad("LOW must be at least 1 and below HIGH, at most 100000000"));
    }
    Ok((lo, hi))
}

/// A search as the session ran it: the test, what the search found, and each step's result
/// (the total of the test, with its histograms), in the order of [`Capacity::steps`].
#[derive(Clone, Debug)]
pub struct Found {
    /// The test's title.
    pub test: String,
    /// The search's steps and answer.
    pub capacity: Capacity,
    /// Each step's result, in step order.
    pub results: Vec<TestResult>,
    /// The closed-loop probe's result, when there was one.
    pub probe: Option<TestResult>,
    /// `--worker`: this process's part of the fleet.
    pub worker: Option<Worker>,
}

impl Found {
    /// The verdict of the step above the answer (else of the lowest step), when the client or
    /// the machine, not the server, limited it: the ceiling the client set.
    pub fn client_ceiling(&self) -> Option<&Verdict> {
        let at = match self.capacity.conclusion {
            Conclusion::Met { above, .. } => above?,
            Conclusion::Unreachable { lowest } => lowest,
            Conclusion::NotRun => return None,
        };
        self.results.get(at)?.verdict.as_ref().filter(|v| matches!(v.side, Side::Client | Side::Machine))
    }
}

/// Each objective's value in `r`, in microseconds: corrected latency, or the service time (the
/// latency where no service time was kept, as in a closed loop).
pub fn objective_values(objectives: &[Objective], r: &TestResult) -> Vec<f64> {
    crate::slo::values_of(objectives, &r.stats)
}
