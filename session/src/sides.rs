//! The two sides of `--ab`: what it cannot go with, and the observer that tags each result with
//! its side and run, so that one document holds both sides (`crate::Pair` runs them).

use std::borrow::Cow;

use crate::config::{Config, OptionError, Replicas};
use crate::observer::{Forward, Observer, Rename};
use crate::result::{Side, StepValues, TestResult};

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

/// One side's pass (`--ab`), as its results go on: they carry the side and the run
/// (`--repeat`'s, from 0, also outside a sweep, so the runs of a side stay apart in the
/// document), and what the text shows names the side (`GET [B]`, `[B] WARNING: …`).
pub(crate) struct SideTag {
    /// The side this pass runs.
    pub side: Side,
    /// The run (from 0).
    pub run: u64,
    /// The step values a result outside a sweep is given.
    pub plain: StepValues,
}

/// An observer of one side's pass ([`SideTag`]); everything else goes to its `obs`.
pub(crate) type Sided<'a> = Forward<'a, SideTag>;

impl SideTag {
    fn label(&self) -> &'static str {
        match self.side {
            Side::A => " [A]",
            Side::B => " [B]",
        }
    }
}

/// An observer of `side`'s run `run`.
pub(crate) fn sided(obs: &mut dyn Observer, side: Side, run: u64, plain: StepValues) -> Sided<'_> {
    Forward { obs, how: SideTag { side, run, plain } }
}

/// A side's observer for what comes before its passes (its startup's notices).
pub(crate) fn plain(obs: &mut dyn Observer, side: Side) -> Sided<'_> {
    let plain = StepValues { datasize: String::new(), clients: 0, pipeline: 0, threads: 0, run: 0 };
    sided(obs, side, 0, plain)
}

impl Rename for SideTag {
    fn line<'a>(&self, line: &'a str) -> Cow<'a, str> {
        format!("{} {line}", self.label().trim_start()).into()
    }
    fn progress_title<'a>(&self, title: &'a str) -> Cow<'a, str> {
        format!("{title}{}", self.label()).into()
    }
    fn series_title<'a>(&self, title: &'a str) -> Cow<'a, str> {
        format!("{title}{}", self.label()).into()
    }
    fn kept<'a>(&self, results: &'a [TestResult]) -> Cow<'a, [TestResult]> {
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
            .collect::<Vec<_>>()
            .into()
    }
    fn shown<'a>(&self, results: &'a [TestResult]) -> Cow<'a, [TestResult]> {
        results
            .iter()
            .map(|e| TestResult { name: format!("{}{}", e.name, self.label()), ..e.clone() })
            .collect::<Vec<_>>()
            .into()
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
        let stats = respbench_core::Stats::new(respbench_core::Time::ZERO, 3, false).unwrap();
        let e = TestResult::new("GET".into(), "GET".into(), stats);
        let plain = StepValues { datasize: "3".into(), clients: 50, pipeline: 1, threads: 0, run: 0 };
        let mut kept = Kept::default();
        let mut sided = sided(&mut kept, Side::B, 3, plain);
        sided.results(std::slice::from_ref(&e));
        sided.message("WARNING: x");
        assert_eq!(kept.0[0].side, Some(Side::B));
        assert_eq!(kept.0[0].step.as_ref().map(|s| (s.clients, s.run)), Some((50, 3)));
        assert_eq!(kept.0[0].name, "GET");
        assert_eq!(kept.1, ["[B] WARNING: x"]);
    }
}
