//! The capacity search (`--slo`): the highest open-loop rate whose steps meet latency
//! objectives, as a state machine with no IO and no clock, in the core's style. A leaf of the
//! session: it takes plain [`Settings`] (which [`crate::config::Config`] holds) and what each
//! step measured, and knows nothing of the options, the results or the run.
//!
//! [`Search`] is told what each step measured ([`Search::handle_probe`],
//! [`Search::handle_step`]) and says what to run next ([`Search::poll`]): a closed-loop probe
//! for the ceiling (without `--rps LOW-HIGH`), then open-loop steps that bracket the answer,
//! bisect the bracket down to the resolution and run the answer once more to confirm it. A
//! confirmation that fails (a noisy step) widens the bracket downwards, by doubling widths, not
//! halving, so the steps that passed just below it are not thrown away, and the search goes on;
//! the step budget bounds it all. With `--worker I/N` the workers cannot agree on the next
//! rate without talking, so the search is a ladder instead: the same rates on every worker, in
//! order, and the answer is found from the steps' (merged) results ([`Search::ladder`],
//! [`evaluate_ladder`]). The session checks the options into [`Settings`] and keeps what it ran
//! ([`crate::capacity`]), runs the steps (session/src/engine/search.rs); the command line
//! presents the [`Capacity`] it ends with.

use std::fmt;
use std::time::Duration;

use respbench_core::stats::value_at_percentile;

/// How far the achieved rate may be from the target for a step to count: 2%.
pub const RATE_TOLERANCE: f64 = 0.02;

/// The most steps of a search unless `--slo-steps` says otherwise.
pub const DEFAULT_STEPS: u32 = 12;

/// The resolution unless `--slo-resolution` says otherwise: 2% of the answer.
pub const DEFAULT_RESOLUTION: Resolution = Resolution::Share(0.02);

/// Without a range, the lowest rate the search goes down to: the ceiling divided by this.
const FLOOR_DIVISOR: u64 = 64;

/// Why the capacity search's settings (`--slo`, `--slo-resolution`, `--slo-steps`, `--rps
/// LOW-HIGH`) are refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SloError {
    /// An objective of `--slo` that cannot be read.
    Objective {
        /// The whole of `--slo`.
        text: String,
        /// The objective at fault (`p99<1ms`).
        part: String,
        /// Why, and what an objective is.
        why: String,
    },
    /// A value `--slo-resolution`, `--slo-steps` or `--rps` (with `--slo`) does not take.
    Invalid {
        /// The option.
        option: &'static str,
        /// The value given.
        value: String,
        /// Why, and what the option takes.
        why: &'static str,
    },
    /// `--slo` with an option (or a kind of run) a search cannot run with.
    Conflict {
        /// What the search cannot run with (`-l`, `a sweep (…)`).
        with: &'static str,
        /// Why, or what to do instead.
        why: &'static str,
    },
    /// The bottom of `--rps LOW-HIGH` gives the workers less than one request per second each.
    FewerThanWorkers {
        /// `LOW`.
        low: u64,
        /// How many workers.
        workers: u64,
    },
}

impl fmt::Display for SloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SloError::Objective { text, part, why } => {
                write!(f, "invalid value '{text}' for --slo: '{part}': {why}")
            }
            SloError::Invalid { option, value, why } => {
                write!(f, "invalid value '{value}' for {option}: {why}")
            }
            SloError::Conflict { with, why } => write!(f, "--slo and {with} conflict: {why}"),
            SloError::FewerThanWorkers { low, workers } => {
                write!(f, "--slo --rps {low}-…: {workers} workers get less than one request per second each")
            }
        }
    }
}

impl std::error::Error for SloError {}

/// Which histogram an objective reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// The corrected latency: from the intended send time (the default).
    Corrected,
    /// The service time: from the actual send (`service:p99<=…`).
    Service,
}

/// One latency objective: a percentile of a histogram at or under a limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    /// Which histogram.
    pub metric: Metric,
    /// The percentile, 0 to 100 (`99.9`).
    pub percentile: f64,
    /// The limit, in microseconds.
    pub limit_us: f64,
    /// As the user wrote it (`p99<=1ms`), for the report.
    pub text: String,
}

impl Objective {
    /// The percentile's short name: `p99`, `p99.9`, `service p99`.
    pub fn label(&self) -> String {
        let p = format!("p{}", trim_number(self.percentile));
        match self.metric {
            Metric::Corrected => p,
            Metric::Service => format!("service {p}"),
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Parses `--slo`: comma-separated objectives such as `p99<=1ms,p99.9<=5ms,service:p50<=200us`.
pub fn parse_objectives(text: &str) -> Result<Vec<Objective>, SloError> {
    let bad =
        |part: &str, why: &str| SloError::Objective { text: text.into(), part: part.into(), why: why.into() };
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(bad(part, "expected objectives such as p99<=1ms,p99.9<=5ms"));
        }
        let (metric, rest) = match part.split_once(':') {
            Some(("service", r)) => (Metric::Service, r.trim()),
            Some(("latency", r)) => (Metric::Corrected, r.trim()),
            Some((m, _)) => return Err(bad(part, &format!("'{m}:' is not a histogram: service: or none"))),
            None => (Metric::Corrected, part),
        };
        let (p, limit) =
            rest.split_once("<=").ok_or_else(|| bad(part, "expected PERCENTILE<=LIMIT, such as p99<=1ms"))?;
        let p = p.trim().strip_prefix('p').ok_or_else(|| bad(part, "the percentile is p50, p99, p99.9 …"))?;
        let percentile: f64 = p.parse().map_err(|_| bad(part, "the percentile is p50, p99, p99.9 …"))?;
        if !(percentile > 0.0 && percentile <= 100.0) {
            return Err(bad(part, "the percentile must be above 0 and at most 100"));
        }
        let limit_us = parse_latency(limit.trim())
            .ok_or_else(|| bad(part, "the limit is a latency with its unit: 500us, 1ms, 1.5ms, 2s"))?;
        out.push(Objective { metric, percentile, limit_us, text: part.to_string() });
    }
    Ok(out)
}

/// `500us`, `1ms`, `1.5ms`, `2s`, `800ns` in microseconds; a unit is required.
fn parse_latency(t: &str) -> Option<f64> {
    let (num, scale) = [("ns", 1e-3), ("us", 1.0), ("µs", 1.0), ("ms", 1e3), ("s", 1e6)]
        .iter()
        .find_map(|(u, s)| t.strip_suffix(u).map(|n| (n, *s)))?;
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v * scale)
}

/// `--slo-resolution`: how close the bracket must be before the answer is confirmed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Resolution {
    /// A share of the answer (`2%`).
    Share(f64),
    /// Requests per second (`500`).
    Rps(u64),
}

impl Resolution {
    /// The width in requests per second near `rate` (at least 1).
    pub fn width(self, rate: u64) -> u64 {
        match self {
            Resolution::Share(s) => ((rate as f64 * s).ceil() as u64).max(1),
            Resolution::Rps(r) => r.max(1),
        }
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resolution::Share(s) => write!(f, "{}% of the answer", trim_number(s * 100.0)),
            Resolution::Rps(r) => write!(f, "{r} rps"),
        }
    }
}

/// Parses `--slo-resolution`: `2%` of the answer, or requests per second (`500`).
pub fn parse_resolution(text: &str) -> Result<Resolution, SloError> {
    let invalid = |why| SloError::Invalid { option: "--slo-resolution", value: text.into(), why };
    let bad = || invalid("expected a share such as 2% or a rate such as 500");
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p.trim().parse().map_err(|_| bad())?;
        if !(v > 0.0 && v <= 50.0) {
            return Err(invalid("a share must be above 0% and at most 50%"));
        }
        return Ok(Resolution::Share(v / 100.0));
    }
    match t.parse::<u64>() {
        Ok(r) if r > 0 => Ok(Resolution::Rps(r)),
        _ => Err(bad()),
    }
}

/// What the search is asked: the objectives, where to look and how far it may go.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Every one must hold for a step to pass.
    pub objectives: Vec<Objective>,
    /// `--slo-resolution`.
    pub resolution: Resolution,
    /// `--rps LOW-HIGH`: the search stays inside it; without, a closed-loop probe finds the top.
    pub range: Option<(u64, u64)>,
    /// `--slo-steps`: the most open-loop steps (the probe not counted).
    pub max_steps: u32,
    /// The closed-loop probe's length.
    pub probe: Duration,
    /// `--worker I/N`: a ladder of `max_steps` rates over the range, the same on every worker.
    pub ladder: bool,
}

/// What a step is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Finding a rate that passes and one that fails.
    Bracket,
    /// Halving the bracket.
    Bisect,
    /// The answer once more.
    Confirm,
    /// One rung of a ladder (`--worker`).
    Ladder,
}

impl Role {
    /// The name JSON and the table use.
    pub fn name(self) -> &'static str {
        match self {
            Role::Bracket => "bracket",
            Role::Bisect => "bisect",
            Role::Confirm => "confirm",
            Role::Ladder => "ladder",
        }
    }
}

/// What to run next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Next {
    /// A closed-loop probe: its achieved rate is the ceiling ([`Search::handle_probe`]).
    Probe,
    /// An open-loop step at `rate` ([`Search::handle_step`]).
    Step {
        /// Requests per second (the whole run's).
        rate: u64,
        /// Why.
        role: Role,
    },
    /// The search is over: [`Search::finish`].
    Done,
}

/// What a step measured: the input of [`Search::handle_step`].
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The achieved rate.
    pub achieved: f64,
    /// Poisson arrivals: the rate the schedule offered in this step (its arrivals over the same
    /// interval as `achieved`), which the achieved rate is held to instead of the target: a
    /// Poisson schedule offers the target only on average (3 s at 100 per second is 300 ± 17
    /// arrivals). `None`: constant arrivals, which offer the target exactly.
    pub offered: Option<f64>,
    /// Each objective's percentile, in microseconds, in the order of [`Settings::objectives`].
    pub values_us: Vec<f64>,
}

/// One step of a search, as it was judged.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRecord {
    /// The target rate.
    pub rate: u64,
    /// Why it ran.
    pub role: Role,
    /// What it measured.
    pub measured: Measured,
    /// Every objective held and the achieved rate was within 2% of the target.
    pub passed: bool,
    /// Why it failed: the first objective missed, or the rate not kept.
    pub miss: Option<Miss>,
    /// The step ran twice: its first run failed an objective while the client machine's own
    /// pauses during it (at that objective's percentile, microseconds: this figure) exceeded
    /// the objective; this is the second run's record.
    pub rerun_after_pause_us: Option<f64>,
}

/// Why a step failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Miss {
    /// Objective `index` was not met.
    Objective {
        /// Its index in [`Settings::objectives`].
        index: usize,
    },
    /// The achieved rate was more than 2% from the target: the schedule was not kept.
    Rate,
}

/// Judges one step: every objective holds and the achieved rate is within 2% of the target (of
/// what a Poisson schedule offered, [`Measured::offered`]).
pub fn judge(objectives: &[Objective], rate: u64, m: &Measured) -> Option<Miss> {
    if let Some(index) = objectives.iter().zip(&m.values_us).position(|(o, v)| *v > o.limit_us) {
        return Some(Miss::Objective { index });
    }
    let target = m.offered.unwrap_or(rate as f64);
    if (m.achieved - target).abs() > RATE_TOLERANCE * target {
        return Some(Miss::Rate);
    }
    None
}

/// How a search ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Conclusion {
    /// `rate` met the objectives (step `step`, the last that ran at it); `above`, when known,
    /// the step of the lowest rate above it that did not.
    Met {
        /// Requests per second.
        rate: u64,
        /// Its step (the confirmation, when there was one).
        step: usize,
        /// The lowest failed step above it.
        above: Option<usize>,
        /// The answer ran twice and passed both times (else the budget ran out first).
        confirmed: bool,
    },
    /// No rate tried met the objectives, down to the lowest the search may try: `lowest` is that
    /// step.
    Unreachable {
        /// The step of the lowest rate tried.
        lowest: usize,
    },
    /// Nothing ran (a stop, or no probe result).
    NotRun,
}

/// What a search found: the input it was given, every step and its conclusion.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// The objectives.
    pub objectives: Vec<Objective>,
    /// The resolution.
    pub resolution: Resolution,
    /// The closed-loop probe's achieved rate, when there was a probe.
    pub ceiling: Option<f64>,
    /// The rates the search kept inside: the range, or from the floor to the probe's ceiling.
    pub bounds: (u64, u64),
    /// Every step, in order.
    pub steps: Vec<StepRecord>,
    /// The answer.
    pub conclusion: Conclusion,
    /// The step budget ran out before the search had a confirmed answer.
    pub out_of_steps: bool,
}

/// Where the search is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Waiting for the probe.
    Probe,
    /// Going down from the top until a step passes.
    Bracket,
    /// Halving the bracket.
    Bisect,
    /// The answer once more.
    Confirm,
    /// `--worker`'s ladder: rung `k` next.
    Ladder(u32),
    Done,
}

/// The capacity search. Inputs: [`Search::handle_probe`], [`Search::handle_step`]. Output:
/// [`Search::poll`], asked after every input until it says [`Next::Done`]; then
/// [`Search::finish`].
#[derive(Clone, Debug)]
pub struct Search {
    settings: Settings,
    phase: Phase,
    ceiling: Option<f64>,
    /// The lowest and highest rates the search may try.
    floor: u64,
    top: u64,
    /// The highest rate that passed since the bracket was last widened, and its step.
    pass: Option<(u64, usize)>,
    /// The lowest rate that failed above `pass`, and its step.
    fail: Option<(u64, usize)>,
    steps: Vec<StepRecord>,
    /// The step poll handed out and not yet reported.
    pending: Option<(u64, Role)>,
    /// After a failed confirmation: the widened bracket's lower end, tried next.
    widen_to: Option<u64>,
    /// While the widened bracket has no rate that passed: how far below the last failure the
    /// next step goes, doubled at each failure (0: not widening). Halving instead would throw
    /// away the steps that passed just below the noisy one.
    widen_by: u64,
    confirmed: bool,
    out_of_steps: bool,
    /// The pending step is a re-run: the first run's pause at the missed objective.
    rerun_pause: Option<f64>,
}

impl Search {
    /// A search for `settings`; with a range it starts with a step, else with a probe.
    pub fn new(settings: Settings) -> Search {
        let (floor, top, phase) = match settings.range {
            Some((lo, hi)) if settings.ladder => (lo, hi, Phase::Ladder(0)),
            Some((lo, hi)) => (lo, hi, Phase::Bracket),
            None => (1, 1, Phase::Probe),
        };
        Search {
            settings,
            phase,
            ceiling: None,
            floor,
            top,
            pass: None,
            fail: None,
            steps: Vec::new(),
            pending: None,
            widen_to: None,
            widen_by: 0,
            confirmed: false,
            out_of_steps: false,
            rerun_pause: None,
        }
    }

    // Getters.

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The steps so far.
    pub fn steps(&self) -> &[StepRecord] {
        &self.steps
    }

    /// The rates of a ladder of `n` rungs from `lo` to `hi`, evenly spaced, lowest first.
    pub fn ladder(lo: u64, hi: u64, n: u32) -> Vec<u64> {
        let n = u64::from(n.max(2));
        let mut out: Vec<u64> = (0..n).map(|k| lo + (hi - lo) * k / (n - 1)).collect();
        out.dedup();
        out
    }

    // Inputs.

    /// The probe's closed-loop achieved rate: the ceiling, the top of the search; its floor is
    /// the ceiling / 64.
    pub fn handle_probe(&mut self, achieved: f64) {
        if self.phase != Phase::Probe {
            return;
        }
        self.ceiling = Some(achieved);
        if achieved < 1.0 {
            self.phase = Phase::Done;
            return;
        }
        self.top = achieved.floor() as u64;
        self.floor = (self.top / FLOOR_DIVISOR).max(1);
        self.phase = Phase::Bracket;
    }

    /// What the step [`Search::poll`] handed out measured. A step that was not asked for is
    /// ignored.
    pub fn handle_step(&mut self, measured: Measured) {
        let Some((rate, role)) = self.pending.take() else { return };
        let miss = judge(&self.settings.objectives, rate, &measured);
        let passed = miss.is_none();
        let index = self.steps.len();
        let rerun_after_pause_us = self.rerun_pause.take();
        self.steps.push(StepRecord { rate, role, measured, passed, miss, rerun_after_pause_us });
        match self.phase {
            Phase::Bracket | Phase::Bisect => {
                if passed {
                    self.pass = Some((rate, index));
                    self.widen_by = 0;
                } else {
                    self.fail = Some((rate, index));
                    if self.widen_by > 0 {
                        // Still no pass below the noisy step: go down twice as far again.
                        self.widen_by = self.widen_by.saturating_mul(2);
                        self.widen_to = Some(rate.saturating_sub(self.widen_by).max(self.floor));
                    }
                }
                if passed && self.fail.is_none() {
                    // The top itself passed: nothing above it may be tried.
                    self.confirmed = false;
                    self.phase = Phase::Confirm;
                } else if self.pass.is_some() {
                    self.phase = Phase::Bisect;
                } else if rate <= self.floor {
                    self.phase = Phase::Done;
                }
            }
            Phase::Confirm => {
                if passed {
                    self.pass = Some((rate, index));
                    self.confirmed = true;
                    self.phase = Phase::Done;
                } else {
                    // A noisy step: the rate that passed once did not again. It is the new
                    // upper end, and the lower end moves down by twice the bracket's width,
                    // then by twice as far at each failure until a rate passes.
                    let old_fail = self.fail.map_or(rate, |(f, _)| f);
                    let width = old_fail.saturating_sub(rate).max(self.resolution_at(rate));
                    self.fail = Some((rate, index));
                    self.pass = None;
                    self.phase = if rate <= self.floor { Phase::Done } else { Phase::Bracket };
                    self.widen_by = 2 * width;
                    self.widen_to = Some(rate.saturating_sub(self.widen_by).max(self.floor));
                }
            }
            Phase::Ladder(k) => self.phase = Phase::Ladder(k + 1),
            Phase::Probe | Phase::Done => {}
        }
    }

    /// What the step [`Search::poll`] handed out measured, with the client machine's own
    /// pauses during it (`pauses_us`: the idle thread's pause at each objective's percentile,
    /// in the order of [`Settings::objectives`]). A step that failed an objective its own
    /// pauses exceeded measured the client, not the server: it is run once more (poll hands it
    /// out again), and its record says so ([`StepRecord::rerun_after_pause_us`]). A re-run
    /// is judged as any step is.
    pub fn handle_step_paused(&mut self, measured: Measured, pauses_us: &[f64]) {
        if let (Some((rate, _)), None) = (self.pending, self.rerun_pause) {
            if let Some(Miss::Objective { index }) = judge(&self.settings.objectives, rate, &measured) {
                let limit = self.settings.objectives[index].limit_us;
                if let Some(&pause) = pauses_us.get(index).filter(|&&p| p > limit) {
                    self.rerun_pause = Some(pause);
                    return;
                }
            }
        }
        self.handle_step(measured);
    }

    // Outputs.

    /// What to run next. Asking again before the step's result is in gives the same step.
    pub fn poll(&mut self) -> Next {
        if let Some((rate, role)) = self.pending {
            return Next::Step { rate, role };
        }
        let used = self.steps.len() as u32;
        let left = self.settings.max_steps.saturating_sub(used);
        let next = match self.phase {
            Phase::Probe => return Next::Probe,
            Phase::Done => None,
            _ if left == 0 => {
                self.out_of_steps = !self.confirmed && self.phase != Phase::Done;
                self.phase = Phase::Done;
                None
            }
            Phase::Ladder(k) => {
                let rungs = Search::ladder(self.floor, self.top, self.settings.max_steps);
                match rungs.get(k as usize) {
                    Some(&r) => Some((r, Role::Ladder)),
                    None => {
                        self.phase = Phase::Done;
                        None
                    }
                }
            }
            Phase::Bracket => Some((self.bracket_rate(), Role::Bracket)),
            Phase::Bisect => {
                let (p, _) = self.pass.expect("bisecting with a rate that passed");
                match self.fail {
                    // The bracket is narrow enough, or one step is left: confirm.
                    Some((f, _)) if f - p > self.resolution_at(p) && left > 1 => {
                        Some((p + (f - p) / 2, Role::Bisect))
                    }
                    _ => {
                        self.phase = Phase::Confirm;
                        Some((p, Role::Confirm))
                    }
                }
            }
            Phase::Confirm => {
                let (p, _) = self.pass.expect("confirming a rate that passed");
                Some((p, Role::Confirm))
            }
        };
        match next {
            Some((rate, role)) => {
                self.pending = Some((rate, role));
                Next::Step { rate, role }
            }
            None => Next::Done,
        }
    }

    /// The most steps and the longest the search may take, for its announcement: `per_step` is
    /// one step's length (warmup, duration and what a step costs besides).
    pub fn bound(&self, per_step: Duration) -> (u32, Duration) {
        let n = self.settings.max_steps;
        let probe = if self.settings.range.is_none() { self.settings.probe } else { Duration::ZERO };
        (n, per_step * n + probe)
    }

    /// The search's result, once [`Search::poll`] said [`Next::Done`] (or when it was stopped).
    pub fn finish(self) -> Capacity {
        let conclusion = if self.settings.ladder {
            evaluate_ladder(&self.steps)
        } else {
            match self.pass {
                Some((rate, step)) => Conclusion::Met {
                    rate,
                    step,
                    above: self.lowest_failed_above(rate),
                    confirmed: self.confirmed,
                },
                // No rate passes since the bracket last widened (a confirmation failed and the
                // budget ran out): the highest rate that passed below every failure, unconfirmed.
                None => match evaluate_ladder(&self.steps) {
                    Conclusion::Met { rate, step, .. } => Conclusion::Met {
                        rate,
                        step,
                        above: self.lowest_failed_above(rate),
                        confirmed: false,
                    },
                    other => other,
                },
            }
        };
        Capacity {
            objectives: self.settings.objectives,
            resolution: self.settings.resolution,
            ceiling: self.ceiling,
            bounds: (self.floor, self.top),
            steps: self.steps,
            conclusion,
            out_of_steps: self.out_of_steps,
        }
    }

    // Internals.

    fn resolution_at(&self, rate: u64) -> u64 {
        self.settings.resolution.width(rate)
    }

    /// The next rate of the bracket: the top first, then halving down to the floor (after a
    /// failed confirmation, the widened lower end, going down by doubling widths).
    fn bracket_rate(&mut self) -> u64 {
        if let Some(r) = self.widen_to.take() {
            return r;
        }
        match self.fail {
            None => self.top,
            Some((f, _)) => (f / 2).max(self.floor),
        }
    }

    fn lowest_failed_above(&self, rate: u64) -> Option<usize> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.passed && s.rate > rate)
            .min_by_key(|(i, s)| (s.rate, usize::MAX - i))
            .map(|(i, _)| i)
    }
}

/// The step of the lowest rate tried (the latest among equals).
fn lowest_step(steps: &[StepRecord]) -> Option<usize> {
    steps.iter().enumerate().min_by_key(|(i, s)| (s.rate, usize::MAX - i)).map(|(i, _)| i)
}

/// A ladder's answer from its steps (each worker's, or the merged fleet's, judged again): the
/// highest rate that passed below the lowest that failed.
pub fn evaluate_ladder(steps: &[StepRecord]) -> Conclusion {
    let first_fail =
        steps.iter().enumerate().filter(|(_, s)| !s.passed).min_by_key(|(_, s)| s.rate).map(|(i, _)| i);
    let limit = first_fail.map_or(u64::MAX, |i| steps[i].rate);
    let best = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.passed && s.rate < limit)
        .max_by_key(|(_, s)| s.rate)
        .map(|(i, _)| i);
    match best {
        Some(step) => Conclusion::Met { rate: steps[step].rate, step, above: first_fail, confirmed: false },
        None => match lowest_step(steps) {
            Some(lowest) => Conclusion::Unreachable { lowest },
            None => Conclusion::NotRun,
        },
    }
}

/// The first objective tighter than this client can measure: its limit is below the client
/// machine's own pause at the objective's percentile (`pause_us(percentile)`, measured idle
/// before the search). The sentence says it with the figure: `p99<=0.9ms cannot be measured
/// on this client: its own p99 pause is 1.4 ms`.
pub fn unmeasurable(objectives: &[Objective], pause_us: impl Fn(f64) -> f64) -> Option<String> {
    objectives.iter().find_map(|o| {
        let pause = pause_us(o.percentile);
        (pause > o.limit_us).then(|| {
            format!(
                "{} cannot be measured on this client: its own p{} pause is {:.2} ms (an idle thread measured \
                 before the search); a looser objective, or a quieter client machine, can be",
                o.text,
                trim_number(o.percentile),
                pause / 1000.0
            )
        })
    })
}

/// `99.9` as `99.9`, `99.0` as `99`.
fn trim_number(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The closed-loop probe's length.
pub const PROBE: Duration = Duration::from_secs(2);

/// What a step costs besides its warmup and duration: connecting, the drain, the server's CPU
/// readings around it (500 ms each at most). A ladder's steps start this far apart at least.
pub const STEP_OVERHEAD: Duration = Duration::from_secs(3);

/// What a step's stats measured against `objectives`. `poisson`: the schedule's arrivals were
/// Poisson, so the achieved rate is held to what it offered. `scale`: a worker's share stands
/// for the fleet's (the fleet's rate over the worker's; 1 otherwise).
pub fn measure(
    objectives: &[Objective],
    stats: &respbench_core::Stats,
    poisson: bool,
    scale: f64,
) -> Measured {
    let secs = stats.duration_secs();
    let offered = (poisson && secs > 0.0).then(|| stats.arrivals() as f64 / secs * scale);
    Measured { achieved: stats.rps() * scale, offered, values_us: values_of(objectives, stats) }
}

/// Each objective's value in `stats`, in microseconds.
pub(crate) fn values_of(objectives: &[Objective], stats: &respbench_core::Stats) -> Vec<f64> {
    objectives
        .iter()
        .map(|o| {
            let h = match o.metric {
                Metric::Service => stats.service.as_ref().unwrap_or(&stats.latency),
                Metric::Corrected => &stats.latency,
            };
            value_at_percentile(h, o.percentile) as f64
        })
        .collect()
}

/// One step's length, warmup and duration with what it costs besides: how far apart a
/// ladder's steps start.
pub fn step_slot(warmup: Duration, duration: Duration, drain_grace: Duration) -> Duration {
    warmup + duration + drain_grace + STEP_OVERHEAD
}

/// What a step record's miss says in a line: `p99 1.8 ms > 1ms`, `achieved 4100 of 5000 rps`.
pub fn miss_text(objectives: &[Objective], s: &StepRecord) -> String {
    match &s.miss {
        None => "met".to_string(),
        Some(Miss::Objective { index }) => {
            let o = &objectives[*index];
            format!(
                "{} {} > {}",
                o.label(),
                format_us(s.measured.values_us[*index]),
                o.text.rsplit("<=").next().unwrap_or("")
            )
        }
        Some(Miss::Rate) => match s.measured.offered {
            Some(o) => format!("achieved {:.0} of {o:.0} rps offered", s.measured.achieved),
            None => format!("achieved {:.0} of {} rps", s.measured.achieved, s.rate),
        },
    }
}

/// Microseconds for a reader: `940 us`, `1.80 ms`, `2.5 s`.
pub fn format_us(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0} us")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(slo: &str, range: Option<(u64, u64)>, max_steps: u32) -> Settings {
        Settings {
            objectives: parse_objectives(slo).unwrap(),
            resolution: DEFAULT_RESOLUTION,
            range,
            max_steps,
            probe: Duration::from_secs(2),
            ladder: false,
        }
    }

    /// A server whose p99 is 100 µs up to `knee` rps and 10 ms above it, and that achieves
    /// every rate up to `ceiling`.
    fn knee(knee: u64, ceiling: f64) -> impl FnMut(u64, Role) -> Measured {
        move |rate, _| Measured {
            achieved: (rate as f64).min(ceiling),
            offered: None,
            values_us: vec![if rate <= knee { 100.0 } else { 10_000.0 }],
        }
    }

    /// Runs `search` to the end against `server`; the probe achieves `ceiling`.
    fn drive(mut search: Search, ceiling: f64, mut server: impl FnMut(u64, Role) -> Measured) -> Capacity {
        let mut guard = 0;
        loop {
            guard += 1;
            assert!(guard < 1000, "the search does not end");
            match search.poll() {
                Next::Probe => search.handle_probe(ceiling),
                Next::Step { rate, role } => {
                    // Asking again before the result gives the same step.
                    assert_eq!(search.poll(), Next::Step { rate, role });
                    let m = server(rate, role);
                    search.handle_step(m);
                }
                Next::Done => return search.finish(),
            }
        }
    }

    fn met(c: &Capacity) -> (u64, Option<usize>, bool) {
        match c.conclusion {
            Conclusion::Met { rate, above, confirmed, .. } => (rate, above, confirmed),
            ref other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn brackets_bisects_to_the_resolution_and_confirms() {
        let c = drive(Search::new(settings("p99<=1ms", None, 12)), 10_000.0, knee(7_300, 10_000.0));
        let (rate, above, confirmed) = met(&c);
        assert!(confirmed);
        assert_eq!(c.ceiling, Some(10_000.0));
        assert_eq!(c.bounds, (10_000 / 64, 10_000));
        // The answer is at or under the knee, within 2% of it, and the step above failed.
        assert!(rate <= 7_300 && rate as f64 >= 7_300.0 * 0.98, "{rate}");
        let above = &c.steps[above.expect("a failed step above")];
        assert!(!above.passed && above.rate > 7_300);
        assert!(above.rate - rate <= DEFAULT_RESOLUTION.width(rate));
        // Top first, then halving, then bisection, then the confirmation.
        let roles: Vec<Role> = c.steps.iter().map(|s| s.role).collect();
        assert_eq!(&roles[..2], &[Role::Bracket, Role::Bracket]);
        assert_eq!(c.steps[0].rate, 10_000);
        assert_eq!(c.steps[1].rate, 5_000);
        assert!(roles[2..roles.len() - 1].iter().all(|r| *r == Role::Bisect));
        assert_eq!(*roles.last().unwrap(), Role::Confirm);
        assert_eq!(c.steps.last().unwrap().rate, rate);
        assert!(c.steps.len() <= 12 && !c.out_of_steps);
    }

    #[test]
    fn a_range_is_searched_inside_without_a_probe() {
        let mut s = Search::new(settings("p99<=1ms", Some((1_000, 4_000)), 12));
        assert_eq!(s.poll(), Next::Step { rate: 4_000, role: Role::Bracket });
        let c = drive(s, 0.0, knee(2_500, 1e9));
        let (rate, _, confirmed) = met(&c);
        assert!(confirmed && (2_450..=2_500).contains(&rate), "{rate}");
        assert_eq!(c.ceiling, None);
        assert!(c.steps.iter().all(|s| (1_000..=4_000).contains(&s.rate)));
    }

    #[test]
    fn a_top_that_passes_is_the_answer_once_confirmed() {
        let c = drive(Search::new(settings("p99<=1ms", Some((100, 2_000)), 12)), 0.0, knee(u64::MAX, 1e9));
        assert_eq!(met(&c), (2_000, None, true));
        assert_eq!(c.steps.len(), 2);
        assert_eq!(c.steps[1].role, Role::Confirm);
    }

    #[test]
    fn a_schedule_not_kept_fails_the_step_whatever_the_latency() {
        // Latency is always fine, but only 6000 rps can be sent: above 6000 / 0.98 the rate
        // misses.
        let c = drive(Search::new(settings("p99<=1ms", None, 12)), 10_000.0, knee(u64::MAX, 6_000.0));
        let (rate, above, _) = met(&c);
        assert!(rate as f64 <= 6_000.0 / 0.98 && rate >= 5_900, "{rate}");
        assert_eq!(c.steps[above.unwrap()].miss, Some(Miss::Rate));
        assert_eq!(c.steps[0].miss, Some(Miss::Rate));
    }

    #[test]
    fn a_failed_confirmation_widens_the_bracket_downwards() {
        // The first time the answer is confirmed it fails (a noisy step); after that the
        // server is steady.
        let mut noisy_once = true;
        let mut steady = knee(7_300, 1e9);
        let c = drive(Search::new(settings("p99<=1ms", None, 20)), 10_000.0, |rate, role| {
            if role == Role::Confirm && noisy_once {
                noisy_once = false;
                return Measured { achieved: rate as f64, offered: None, values_us: vec![5_000.0] };
            }
            steady(rate, role)
        });
        let (rate, _, confirmed) = met(&c);
        assert!(confirmed);
        let first_confirm = c.steps.iter().position(|s| s.role == Role::Confirm).unwrap();
        let failed = &c.steps[first_confirm];
        assert!(!failed.passed);
        // The next step is below it, by at least twice the resolution: the bracket widened.
        let next = &c.steps[first_confirm + 1];
        assert_eq!(next.role, Role::Bracket);
        assert!(next.rate + 2 * DEFAULT_RESOLUTION.width(next.rate) <= failed.rate + 2, "{next:?}");
        // The answer is below the rate whose confirmation failed, and was itself confirmed.
        assert!(rate < failed.rate && rate as f64 >= failed.rate as f64 * 0.9, "{rate}");
        assert_eq!(c.steps.last().unwrap().role, Role::Confirm);
        assert!(c.steps.last().unwrap().passed);
        // The budget ends at the failed confirmation: the answer is the highest rate that passed
        // below it, unconfirmed, not "no rate met".
        let mut noisy_once = true;
        let mut steady = knee(7_300, 1e9);
        let budget = first_confirm as u32 + 1;
        let c = drive(Search::new(settings("p99<=1ms", None, budget)), 10_000.0, |rate, role| {
            if role == Role::Confirm && noisy_once {
                noisy_once = false;
                return Measured { achieved: rate as f64, offered: None, values_us: vec![5_000.0] };
            }
            steady(rate, role)
        });
        assert!(c.out_of_steps);
        let (rate, above, confirmed) = met(&c);
        assert!(!confirmed);
        assert_eq!(c.steps[above.unwrap()].role, Role::Confirm);
        let best_below =
            c.steps.iter().filter(|s| s.passed && s.rate < failed.rate).map(|s| s.rate).max().unwrap();
        assert_eq!(rate, best_below);
    }

    #[test]
    fn a_widened_bracket_that_fails_again_steps_down_by_doubling_widths_not_halving() {
        // The confirmation fails, and so does the first step of the widened bracket, as on a VM
        // whose pauses fail a step now and then; after that the server is steady.
        let mut noise = 2;
        let mut steady = knee(7_300, 1e9);
        let c = drive(Search::new(settings("p99<=1ms", None, 20)), 10_000.0, |rate, role| {
            let noisy = noise > 0 && (role == Role::Confirm || noise == 1);
            if noisy {
                noise -= 1;
                return Measured { achieved: rate as f64, offered: None, values_us: vec![5_000.0] };
            }
            steady(rate, role)
        });
        let first_confirm = c.steps.iter().position(|s| s.role == Role::Confirm).unwrap();
        let [confirm, widened, next] = [0, 1, 2].map(|k| &c.steps[first_confirm + k]);
        assert!(!confirm.passed && !widened.passed, "{:?}", &c.steps[first_confirm..]);
        let first_drop = confirm.rate - widened.rate;
        // Twice as far below the widened step as it was below the confirmation, not half of it.
        assert_eq!(widened.rate - next.rate, 2 * first_drop, "{:?}", &c.steps[first_confirm..]);
        let (rate, _, confirmed) = met(&c);
        assert!(confirmed && rate <= 7_300 && rate as f64 >= 7_300.0 * 0.9, "{rate}");
    }

    #[test]
    fn an_objective_no_rate_meets_ends_at_the_floor() {
        let c = drive(Search::new(settings("p99<=10us", None, 12)), 6_400.0, knee(0, 1e9));
        let Conclusion::Unreachable { lowest } = c.conclusion else { panic!("{:?}", c.conclusion) };
        assert_eq!(c.steps[lowest].rate, 100);
        let rates: Vec<u64> = c.steps.iter().map(|s| s.rate).collect();
        assert_eq!(rates, [6_400, 3_200, 1_600, 800, 400, 200, 100]);
        assert!(!c.out_of_steps);
        // In a range, the floor is its low end.
        let c = drive(Search::new(settings("p99<=10us", Some((300, 1_000)), 12)), 0.0, knee(0, 1e9));
        let Conclusion::Unreachable { lowest } = c.conclusion else { panic!() };
        assert_eq!(c.steps[lowest].rate, 300);
        assert_eq!(c.steps.iter().map(|s| s.rate).collect::<Vec<_>>(), [1_000, 500, 300]);
    }

    #[test]
    fn the_step_budget_bounds_the_search_and_keeps_a_step_to_confirm() {
        for max in 1..8 {
            let c = drive(Search::new(settings("p99<=1ms", None, max)), 10_000.0, knee(7_300, 1e9));
            assert!(c.steps.len() <= max as usize, "{max}: {}", c.steps.len());
            if max >= 3 {
                // Top, half, then the last step confirms what passed.
                let (rate, _, confirmed) = met(&c);
                assert!(confirmed && rate <= 7_300, "{max}: {rate}");
                // The last step kept for it confirmed the answer.
                assert_eq!(c.steps.last().unwrap().role, Role::Confirm, "{max}");
                assert!(!c.out_of_steps);
            }
        }
        let c = drive(Search::new(settings("p99<=1ms", None, 2)), 10_000.0, knee(7_300, 1e9));
        assert_eq!(met(&c), (5_000, Some(0), false));
        assert!(c.out_of_steps);
        let s = Search::new(settings("p99<=1ms", None, 12));
        assert_eq!(s.bound(Duration::from_secs(7)), (12, Duration::from_secs(86)));
    }

    #[test]
    fn every_objective_must_hold() {
        let objectives = parse_objectives("p99<=1ms, p99.9<=5ms, service:p50<=200us").unwrap();
        let m = |v: [f64; 3]| Measured { achieved: 1000.0, offered: None, values_us: v.to_vec() };
        assert_eq!(judge(&objectives, 1000, &m([900.0, 4_000.0, 150.0])), None);
        assert_eq!(judge(&objectives, 1000, &m([900.0, 5_001.0, 150.0])), Some(Miss::Objective { index: 1 }));
        assert_eq!(judge(&objectives, 1000, &m([900.0, 4_000.0, 201.0])), Some(Miss::Objective { index: 2 }));
        assert_eq!(judge(&objectives, 1030, &m([900.0, 4_000.0, 150.0])), Some(Miss::Rate));
        assert_eq!(judge(&objectives, 1015, &m([900.0, 4_000.0, 150.0])), None);
        // Poisson arrivals: the achieved rate is held to what the schedule offered, not to
        // the target it offers on average.
        let poisson = |achieved: f64, offered: f64| Measured {
            achieved,
            offered: Some(offered),
            values_us: vec![900.0, 4_000.0, 150.0],
        };
        assert_eq!(judge(&objectives, 1000, &poisson(1_060.0, 1_065.0)), None);
        assert_eq!(judge(&objectives, 1000, &poisson(1_000.0, 1_065.0)), Some(Miss::Rate));
    }

    #[test]
    fn objectives_parse_with_their_units() {
        let o = parse_objectives("p99<=1ms,p99.9<=5ms,p50<=200us,service:p99<=1.5ms,p100<=2s").unwrap();
        assert_eq!(o.len(), 5);
        assert_eq!((o[0].metric, o[0].percentile, o[0].limit_us), (Metric::Corrected, 99.0, 1_000.0));
        assert_eq!((o[1].percentile, o[1].limit_us), (99.9, 5_000.0));
        assert_eq!(o[2].limit_us, 200.0);
        assert_eq!((o[3].metric, o[3].limit_us), (Metric::Service, 1_500.0));
        assert_eq!(o[4].limit_us, 2e6);
        assert_eq!(o[1].label(), "p99.9");
        assert_eq!(o[3].label(), "service p99");
        assert_eq!(o[0].to_string(), "p99<=1ms");
        for bad in
            ["", "p99", "p99<=1", "99<=1ms", "p0<=1ms", "p101<=1ms", "x:p99<=1ms", "p99<=-1ms", "p99<1ms,"]
        {
            assert!(parse_objectives(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_resolution("2%").unwrap(), Resolution::Share(0.02));
        assert_eq!(parse_resolution("500").unwrap(), Resolution::Rps(500));
        assert!(parse_resolution("0").is_err() && parse_resolution("60%").is_err());
        assert_eq!(Resolution::Share(0.02).width(87_300), 1_746);
    }

    #[test]
    fn a_ladder_runs_every_rung_and_takes_the_highest_pass_below_the_first_failure() {
        let mut s = settings("p99<=1ms", Some((1_000, 10_000)), 10);
        s.ladder = true;
        let c = drive(Search::new(s), 0.0, knee(7_300, 1e9));
        let rates: Vec<u64> = c.steps.iter().map(|s| s.rate).collect();
        assert_eq!(rates, Search::ladder(1_000, 10_000, 10));
        assert_eq!(rates, [1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000, 10_000]);
        assert!(c.steps.iter().all(|s| s.role == Role::Ladder));
        assert_eq!(met(&c), (7_000, Some(7), false));
        // A pass above a failure does not count: the answer is below the lowest failure.
        let mut steps = c.steps.clone();
        steps[3].passed = false;
        let Conclusion::Met { rate, above, .. } = evaluate_ladder(&steps) else { panic!() };
        assert_eq!((rate, above), (3_000, Some(3)));
        steps[0].passed = false;
        assert_eq!(evaluate_ladder(&steps), Conclusion::Unreachable { lowest: 0 });
    }
}
