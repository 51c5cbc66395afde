//! The two sides of `--ab`: what it cannot go with, and the observer that tags each result with
//! its side and run, so that one document holds both sides (`crate::Pair` runs them).

use respbench_core::stats::{Interval, Second};
use respbench_core::Time;

use crate::config::{Config, OptionError, Replicas};
use crate::observer::{BackendRun, Observer, StepDone, Tick};
use crate::result::{Side, StepValues, TestResult};
use crate::routing::Multi;
use crate::Error;

/// `--ab HOST:PORT` (`target`) into `cfg`, checked against what it cannot go with: a run with
/// no end (`-l`), several nodes, a split run, a capacity search, idle connections.
pub fn apply(cfg: &mut Config, target: Option<&str>) -> Result<(), OptionError> {
    if let Some(t) = target {
        cfg.ab = Some(crate::syntax::host_port(t).map_err(|why| crate::syntax::bad("--ab", t, why))?);
    }
    if cfg.ab.is_none() {
        return Ok(());
    }
    let why = "--ab compares two single servers test by test";
    let conflict = if cfg.repeat {
        Some(("-l", "--ab alternates a fixed number of runs: give --repeat N"))
    } else if cfg.cluster {
        Some(("--cluster", why))
    } else if cfg.replicas != Replicas::None {
        Some(("--replicas", why))
    } else if cfg.split.is_some() {
        Some(("--worker", "run one --ab process, or compare the merged documents of two split runs"))
    } else if cfg.capacity.is_some() {
        Some(("--slo", "compare the documents of two searches' steps instead"))
    } else if cfg.idle {
        Some(("-I", "idle mode measures nothing to compare"))
    } else {
        None
    };
    match conflict {
        Some((other, why)) => Err(OptionError::Conflict("--ab", other, why)),
        None => Ok(()),
    }
}

/// An observer of one side's pass: results carry the side and the run (`--repeat`'s, from 0,
/// also outside a sweep, so the runs of a side stay apart in the document), and what the text
/// shows names the side (`GET [B]`); everything else goes to `obs` (every method forwarded: a
/// new one of [`Observer`] must be added here too).
pub(crate) struct Sided<'a> {
    /// Where everything goes.
    pub obs: &'a mut dyn Observer,
    /// The side this pass runs.
    pub side: Side,
    /// The run (from 0).
    pub run: u64,
    /// The step values a result outside a sweep is given.
    pub plain: StepValues,
}

impl<'a> Sided<'a> {
    /// A side's observer for what comes before its passes (its startup's notices).
    pub fn plain(obs: &'a mut dyn Observer, side: Side) -> Sided<'a> {
        let plain = StepValues { datasize: String::new(), clients: 0, pipeline: 0, threads: 0, run: 0 };
        Sided { obs, side, run: 0, plain }
    }

    fn label(&self) -> &'static str {
        match self.side {
            Side::A => " [A]",
            Side::B => " [B]",
        }
    }

    /// `results` as the document keeps them: with the side and the run.
    fn tagged(&self, results: &[TestResult]) -> Vec<TestResult> {
        results
            .iter()
            .map(|e| {
                let mut e = e.clone();
                e.side = Some(self.side);
                let mut step = e.step.take().unwrap_or_else(|| self.plain.clone());
                step.run = self.run;
                e.step = Some(step);
                e
            })
            .collect()
    }

    /// `results` as the text shows them: titled with the side.
    fn titled(&self, results: &[TestResult]) -> Vec<TestResult> {
        results
            .iter()
            .map(|e| TestResult { name: format!("{}{}", e.name, self.label()), ..e.clone() })
            .collect()
    }
}

impl Observer for Sided<'_> {
    fn message(&mut self, line: &str) {
        self.obs.message(&format!("{} {line}", self.label().trim_start()));
    }
    fn error(&mut self, line: &str) {
        self.obs.error(&format!("{} {line}", self.label().trim_start()));
    }
    fn nodes(&mut self, multi: &Multi) {
        self.obs.nodes(multi);
    }
    fn progress(&mut self, tick: &Tick<'_>) {
        let title = format!("{}{}", tick.title, self.label());
        self.obs.progress(&Tick { title: &title, ..*tick });
    }
    fn shows_progress(&self) -> bool {
        self.obs.shows_progress()
    }
    fn progress_end(&mut self) {
        self.obs.progress_end();
    }
    fn second(&mut self, title: &str, n: usize, second: &Second) {
        self.obs.second(&format!("{title}{}", self.label()), n, second);
    }
    fn keeps_intervals(&self) -> bool {
        self.obs.keeps_intervals()
    }
    fn intervals(&mut self, tag: &str, ended: &[(Time, Interval)], end: Option<Time>) -> Result<(), Error> {
        self.obs.intervals(&format!("{tag}{}", self.label()), ended, end)
    }
    fn results(&mut self, results: &[TestResult]) {
        let tagged = self.tagged(results);
        self.obs.results(&tagged);
    }
    fn step_done(&mut self, s: &StepDone<'_>) -> Result<(), Error> {
        let runs: Vec<BackendRun> = s
            .runs
            .iter()
            .map(|r| BackendRun { results: self.titled(&r.results), failures: r.failures.clone() })
            .collect();
        self.obs.step_done(&StepDone { runs: &runs, ..*s })
    }
    fn rates_done(&mut self, cfg: &Config, steps: &[TestResult]) -> Result<(), Error> {
        self.obs.rates_done(cfg, &self.titled(steps))
    }
    fn sweep_done(&mut self, rows: &[TestResult]) -> Result<(), Error> {
        self.obs.sweep_done(&self.titled(rows))
    }
    fn capacity_probe(&mut self, test: &str, probe: &TestResult) {
        self.obs.capacity_probe(test, probe);
    }
    fn capacity_step(
        &mut self,
        test: &str,
        n: usize,
        most: u32,
        step: &crate::slo::StepRecord,
        result: &TestResult,
    ) {
        self.obs.capacity_step(test, n, most, step, result);
    }
    fn capacity_done(&mut self, found: &crate::capacity::Found) -> Result<(), Error> {
        self.obs.capacity_done(found)
    }
    fn idle_clients(&mut self, live: u64) {
        self.obs.idle_clients(live);
    }
    fn idle_footprint(&mut self, text: &str) {
        self.obs.idle_footprint(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps the results and titles it hears.
    #[derive(Default)]
    struct Kept(Vec<TestResult>, Vec<String>);

    impl Observer for Kept {
        fn message(&mut self, line: &str) {
            self.1.push(line.to_string());
        }
        fn error(&mut self, _: &str) {}
        fn results(&mut self, results: &[TestResult]) {
            self.0.extend(results.iter().cloned());
        }
    }

    #[test]
    fn a_side_tags_its_results() {
        let stats = respbench_core::Stats::new(Time::ZERO, 3, false).unwrap();
        let e = TestResult::new("GET".into(), "GET".into(), stats);
        let plain = StepValues { datasize: "3".into(), clients: 50, pipeline: 1, threads: 0, run: 0 };
        let mut kept = Kept::default();
        let mut sided = Sided { obs: &mut kept, side: Side::B, run: 3, plain };
        sided.results(std::slice::from_ref(&e));
        sided.message("WARNING: x");
        assert_eq!(kept.0[0].side, Some(Side::B));
        assert_eq!(kept.0[0].step.as_ref().map(|s| (s.clients, s.run)), Some((50, 3)));
        assert_eq!(kept.0[0].name, "GET");
        assert_eq!(kept.1, ["[B] WARNING: x"]);
    }
}
