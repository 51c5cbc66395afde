//! `--slo`: runs a case's capacity search ([`crate::slo::Search`]) step by step, each step
//! a whole open-loop test of `--duration` after `--warmup`, and tells the observer each step
//! and the answer.

use std::sync::Arc;
use std::time::Duration;

use super::{Ended, Session};
use crate::capacity::Found;
use crate::case::Case;
use crate::config::StartAt;
use crate::error::Error;
use crate::observer::{Observer, StepDone};
use crate::result::TestResult;
use crate::slo::{measure, step_slot, Next, Search};

impl Session {
    /// Runs the capacity search of one case (or of a scenario's searched group, the other
    /// groups at their own rates in every step). `Some(end)` when the run must stop here.
    pub(super) fn run_search(
        &mut self,
        test_no: u64,
        case: &Case,
        obs: &mut dyn Observer,
    ) -> Result<Option<Ended>, Error> {
        let group = crate::groups::searched(&self.groups);
        let searched = group.map_or(&self.base, |k| &self.groups[k].cfg);
        let settings = searched.capacity.clone().expect("a search has settings");
        let poisson = searched.open.poisson;
        let duration = self.base.open.duration.unwrap_or(Duration::from_secs(5));
        let slot = step_slot(self.base.open.warmup, duration, self.base.drain_grace);
        let mut search = Search::new(settings.clone());
        let (most, longest) = search.bound(slot);
        let title = &match group {
            Some(k) => format!("{}/{}", case.spec.title, self.groups[k].name),
            None => case.spec.title.clone(),
        };
        let objectives: Vec<String> = settings.objectives.iter().map(|o| o.text.clone()).collect();
        let probe = match settings.range {
            Some((lo, hi)) if settings.ladder => {
                format!("a ladder of {most} rates from {lo} to {hi} rps, each step at its instant after --start-at")
            }
            Some((lo, hi)) => format!("between {lo} and {hi} rps"),
            None => format!(
                "a {} closed-loop probe for the ceiling, then below it",
                respbench_core::conn::format_duration(settings.probe)
            ),
        };
        obs.message(&format!(
            "{title}: capacity search for {} ({probe}): at most {most} steps of {} warmup + {} each, \
             {} at most; resolution {}",
            objectives.join(","),
            respbench_core::conn::format_duration(self.base.open.warmup),
            respbench_core::conn::format_duration(duration),
            format_long(longest),
            settings.resolution,
        ));
        // What this machine can measure: its own pauses, idle, first; an objective tighter than
        // them is refused with the figure, and nothing is searched.
        let idle = crate::run::idle_pauses(IDLE_MEASURE);
        obs.message(&format!(
            "{title}: before the search, idle for {}: {}",
            respbench_core::conn::format_duration(IDLE_MEASURE),
            idle.describe()
        ));
        if let Some(why) = crate::slo::unmeasurable(&settings.objectives, |p| idle.at(p) as f64) {
            return Err(Error::Unmeasurable(why));
        }
        self.prepare(test_no, case, obs)?;
        let start_at = self.start_at.take();
        if let Some(at) = start_at.as_ref().filter(|_| !settings.ladder) {
            if let Some(end) = self.wait_for_start(at, obs) {
                return Ok(Some(end));
            }
        }
        let mut results: Vec<TestResult> = Vec::new();
        let mut probe_result = None;
        let mut stop = None;
        let workers = self.base.split.as_ref().map(|s| s.worker);
        self.searching = true;
        loop {
            let next = search.poll();
            let (rate, run_rate) = match next {
                Next::Done => break,
                Next::Probe => (None, None),
                // A worker sends its share of the fleet's rate.
                Next::Step { rate, .. } => {
                    (Some(rate), Some(workers.map_or(rate, |w| w.share(rate).1.max(1))))
                }
            };
            let mut cfg = self.base.clone();
            cfg.open.duration = Some(duration);
            match run_rate {
                None => {
                    cfg.open.rates = Vec::new();
                    cfg.open.duration = Some(settings.probe);
                    cfg.open.warmup = cfg.open.warmup.min(Duration::from_secs(1));
                }
                // A scenario's searched group runs at the step's rate, the others at theirs.
                Some(r) => match group {
                    Some(k) => self.groups[k].cfg.open.rates = vec![r],
                    None => cfg.open.rates = vec![r],
                },
            }
            if let (Some(at), true) = (&start_at, settings.ladder) {
                // Lockstep: step k's measured window begins at --start-at + k slots on every
                // worker.
                let k = search.steps().len() as u64;
                let shifted = StartAt {
                    unix_us: at.unix_us + k * slot.as_micros() as u64,
                    text: format!("{} + step {k}", at.text),
                };
                if let Some(end) = self.wait_for_start(&shifted, obs) {
                    stop = Some(end);
                    break;
                }
            }
            self.cfg = Arc::new(cfg);
            let ran = self.run_step(test_no, case, run_rate, obs)?;
            let failed = ran.iter().any(|r| !r.failures.is_empty());
            if failed {
                // Said as any step's failures are; the search ends.
                obs.step_done(&StepDone { cfg: &self.cfg, base: &self.base, case, step: None, runs: &ran })?;
                stop = Some(Ended::ConnectionsFailed);
                break;
            }
            let Some(mut total) = ran.into_iter().next().and_then(|r| r.results.into_iter().last()) else {
                break;
            };
            if let Some(k) = group {
                // The searched group's figures are judged; the client's pauses are the machine's.
                let pauses = total.pauses.take();
                let Some(g) = total.groups.get(k) else { break };
                total = TestResult { pauses, ..g.clone() };
            }
            if self.stop.requested() {
                stop = Some(Ended::Interrupted);
                break;
            }
            match (rate, run_rate) {
                (Some(rate), Some(run_rate)) => {
                    // A worker's achieved rate stands for the fleet's in its own judgement; merge
                    // judges the fleet's from the merged histograms.
                    let scale = rate as f64 / run_rate as f64;
                    // The client's own pauses during the step, at each objective's percentile.
                    let paused: Vec<f64> = settings
                        .objectives
                        .iter()
                        .map(|o| total.pauses.as_ref().map_or(0.0, |p| p.at(o.percentile) as f64))
                        .collect();
                    let before = search.steps().len();
                    search.handle_step_paused(
                        measure(&settings.objectives, &total.stats, poisson, scale),
                        &paused,
                    );
                    if search.steps().len() == before {
                        // Run again: its own pauses exceeded the objective it failed.
                        continue;
                    }
                    let record = search.steps().last().expect("the step just judged");
                    obs.capacity_step(title, search.steps().len(), most, record, &total);
                    results.push(total);
                }
                _ => {
                    let achieved = total.stats.rps();
                    search.handle_probe(achieved * workers.map_or(1.0, |w| w.count as f64));
                    obs.capacity_probe(title, &total);
                    probe_result = Some(total);
                }
            }
        }
        self.searching = false;
        self.cfg = Arc::new(self.base.clone());
        let found = Found {
            test: title.clone(),
            capacity: search.finish(),
            results,
            probe: probe_result,
            worker: workers,
        };
        obs.capacity_done(&found)?;
        self.searches.push(found);
        Ok(stop)
    }
}

/// How long the client's own pauses are measured, idle, before a search.
const IDLE_MEASURE: Duration = Duration::from_secs(3);

/// `1 min 26 s`, `45 s`.
fn format_long(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}
