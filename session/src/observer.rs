//! What a running session tells the command line: progress, the seconds that closed, warnings
//! and each step's results, through [`Observer`]; and how the command line stops it
//! ([`StopHandle`]).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use respbench_core::stats::{Interval, Second};
use respbench_core::{ConnError, Time};

use crate::case::Case;
use crate::config::{Config, Step};
use crate::error::Error;
use crate::result::TestResult;
use crate::routing::Multi;
pub use crate::stop::StopHandle;

/// The live figures of the test running, as often as the session looks (every 20 ms).
#[derive(Clone, Copy, Debug)]
pub struct Tick<'a> {
    /// The test's title.
    pub title: &'a str,
    /// When the test began (a new instant: a new test).
    pub started: Instant,
    /// Requests completed so far.
    pub completed: u64,
    /// Their p99 so far in microseconds (refreshed a few times a second), once any completed.
    pub p99_micros: Option<u64>,
    /// What the test runs to: `-n` (requests), or `--duration`.
    pub goal: Goal,
}

/// What a running test ends at, for its share done and time left.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Goal {
    /// This many requests (`-n`; `--preload`'s keys).
    Requests(u64),
    /// This long (`--duration`, `--warmup`).
    Duration(std::time::Duration),
}

/// A measured test that is starting, for an output that reads its figures while it runs
/// (`--metrics`): what names them, and where the loops publish them.
pub struct LiveTest<'a> {
    /// The test's title (`SET`, `GET`, a custom command's).
    pub title: &'a str,
    /// Its title with each custom command cut to its name ([`crate::case::Case::label`]): what
    /// an output that serves it to others names it by, never a command's arguments.
    pub label: &'a str,
    /// The text of each command of its mix, in the mix's order ([`crate::Figures::parts`]); the
    /// test's own command when it has no mix.
    pub commands: Vec<String>,
    /// The backend running it.
    pub backend: &'a str,
    /// Its open-loop target rate, if any (a rate ramp's: each step's, from
    /// [`crate::Progress::ramp_level`]).
    pub target_rps: Option<u64>,
    /// `--ramp`'s kind; its step and level are in [`crate::Progress::ramp_step`] and
    /// [`crate::Progress::ramp_level`].
    pub ramp: Option<respbench_core::RampKind>,
    /// Over several nodes: the address of each node found at the start, in the order of
    /// [`crate::Figures::nodes`] (the nodes that appear later follow, named by
    /// [`crate::Figures::appeared`]); empty against one server.
    pub nodes: Vec<String>,
    /// The figures its loops publish while it runs (they keep [`crate::Figures`] when the
    /// observer [`Observer::keeps_figures`]).
    pub progress: &'a Arc<crate::Progress>,
    /// A scenario's groups, each its own figures (empty for a command line's one group, whose
    /// figures are [`LiveTest::progress`]'s; a scenario's whole is their sum).
    pub groups: Vec<LiveGroup<'a>>,
}

/// One group of a scenario's test, as an output reads it live.
pub struct LiveGroup<'a> {
    /// Its name.
    pub name: &'a str,
    /// The text of each command it sends ([`LiveTest::commands`]' for its own).
    pub commands: Vec<String>,
    /// Its open-loop target rate, if it has a fixed one (not a ramping group's).
    pub target_rps: Option<u64>,
    /// Its loops' figures.
    pub progress: &'a Arc<crate::Progress>,
}

/// What one backend reported for one step: its results, and its connection failures.
#[derive(Debug)]
pub struct BackendRun {
    /// Each command of a mix, then the total.
    pub results: Vec<TestResult>,
    /// Connection failures, with how many connections failed that way.
    pub failures: Vec<(ConnError, u64)>,
}

/// A step of a test ran on each backend (up to the first that failed or was interrupted).
pub struct StepDone<'a> {
    /// The configuration of the step.
    pub cfg: &'a Config,
    /// The configuration of the run.
    pub base: &'a Config,
    /// The test.
    pub case: &'a Case,
    /// A sweep's step.
    pub step: Option<&'a Step>,
    /// Each backend's results.
    pub runs: &'a [BackendRun],
}

/// Hears what a session does. The session never prints: an implementation presents (the
/// command line's progress line, reports and warnings on stderr).
pub trait Observer {
    /// A line for the reader that the run goes on after (`WARNING: …`, `preloaded …`): not an
    /// error, so the command line shows it on a terminal's stderr and keeps it in the JSON.
    fn message(&mut self, line: &str);

    /// A line about an error the run went on after (connections that went down and
    /// reconnected): stderr's, always.
    fn error(&mut self, line: &str);

    /// A line saying what the run is about to do that the user must not wait on blindly
    /// (`--start-at`'s wait, a replay's span): stderr's, always, as [`Observer::error`]'s.
    fn notice(&mut self, line: &str) {
        self.error(line);
    }

    /// Over several nodes, before the first test: the nodes found and how commands route.
    fn nodes(&mut self, _multi: &Multi) {}

    /// While a test runs: its live figures.
    fn progress(&mut self, _tick: &Tick<'_>) {}

    /// Whether [`Observer::progress`] shows the ticks (a terminal): only then do the loops keep
    /// what the p99 so far needs.
    fn shows_progress(&self) -> bool {
        false
    }

    /// The test's loops have ended (the progress line goes).
    fn progress_end(&mut self) {}

    /// Whether the loops of the measured tests keep [`crate::Figures`] for
    /// [`Observer::live_test`] (`--metrics`).
    fn keeps_figures(&self) -> bool {
        false
    }

    /// A measured test (not a warm-up or `--preload`) is starting; its results follow in
    /// [`Observer::results`].
    fn live_test(&mut self, _test: &LiveTest<'_>) {}

    /// `--live`: second `n` of the test titled `title`, once every loop has moved past it.
    fn second(&mut self, _title: &str, _n: usize, _second: &Second) {}

    /// Whether the seconds the loops have closed are wanted ([`Observer::intervals`]).
    fn keeps_intervals(&self) -> bool {
        false
    }

    /// The seconds every loop has moved past, of the test tagged `tag`; `end` once the test is
    /// over, to cut its last second short. An error ends the run like a failed test.
    fn intervals(
        &mut self,
        _tag: &str,
        _ended: &[(Time, Interval)],
        _end: Option<Time>,
    ) -> Result<(), Error> {
        Ok(())
    }

    /// A step ran on one backend: its results (a mix's commands, then its total), in the order
    /// the run makes them, for every step (a capacity search's and its probe too), before the
    /// step's [`Observer::step_done`]. What the outputs that keep the whole run (`--json`,
    /// `--hgrm`) record; the session keeps nothing for them.
    fn results(&mut self, _results: &[TestResult]) {}

    /// A step ran on every backend. An error ends the run.
    fn step_done(&mut self, _s: &StepDone<'_>) -> Result<(), Error> {
        Ok(())
    }

    /// An open-loop test ran every `--rps` step: its totals, one per step.
    fn rates_done(&mut self, _cfg: &Config, _steps: &[TestResult]) -> Result<(), Error> {
        Ok(())
    }

    /// A sweep ran every step of a test: its totals, one per step (and rate).
    fn sweep_done(&mut self, _rows: &[TestResult]) -> Result<(), Error> {
        Ok(())
    }

    /// `--slo`: the search's closed-loop probe ran (its achieved rate is the ceiling).
    fn capacity_probe(&mut self, _test: &str, _probe: &TestResult) {}

    /// `--slo`: step `n` (from 1) of at most `most` of the search ran and was judged.
    fn capacity_step(
        &mut self,
        _test: &str,
        _n: usize,
        _most: u32,
        _step: &crate::slo::StepRecord,
        _result: &TestResult,
    ) {
    }

    /// `--slo`: a test's search is over (its answer, steps and their results). An error ends
    /// the run.
    fn capacity_done(&mut self, _found: &crate::capacity::Found) -> Result<(), Error> {
        Ok(())
    }

    /// `--dataset-shape`: the data was built, before the first test. An error ends the run.
    fn dataset(&mut self, _built: &crate::dataset::Built) -> Result<(), Error> {
        Ok(())
    }

    /// `-I`: how many connections are up.
    fn idle_clients(&mut self, _live: u64) {}

    /// `-I`: every connection is up; what they cost the server.
    fn idle_footprint(&mut self, _text: &str) {}
}

/// What an observer in front of another changes on the way ([`Forward`]): each hook gives what
/// it was handed by default, so an implementation names only what it renames.
pub(crate) trait Rename {
    /// A line for [`Observer::message`] and [`Observer::error`].
    fn line<'a>(&self, line: &'a str) -> Cow<'a, str> {
        line.into()
    }
    /// A progress tick's title.
    fn progress_title<'a>(&self, title: &'a str) -> Cow<'a, str> {
        title.into()
    }
    /// The title of a closed second ([`Observer::second`]) and the tag of the intervals
    /// ([`Observer::intervals`]).
    fn series_title<'a>(&self, title: &'a str) -> Cow<'a, str> {
        title.into()
    }
    /// Results as the document keeps them ([`Observer::results`]).
    fn kept<'a>(&self, results: &'a [TestResult]) -> Cow<'a, [TestResult]> {
        results.into()
    }
    /// Results as the text shows them (a step's, a rate list's, a sweep's).
    fn shown<'a>(&self, results: &'a [TestResult]) -> Cow<'a, [TestResult]> {
        results.into()
    }
}

/// An observer in front of `obs`: every [`Observer`] method goes on to it, through `how`'s
/// [`Rename`]. The one forwarder ([`Retitled`], `--ab`'s sides): a new method of [`Observer`]
/// is added here once.
pub(crate) struct Forward<'a, R> {
    /// Where everything goes.
    pub obs: &'a mut dyn Observer,
    /// What changes on the way.
    pub how: R,
}

impl<R: Rename> Observer for Forward<'_, R> {
    fn message(&mut self, line: &str) {
        self.obs.message(&self.how.line(line));
    }
    fn error(&mut self, line: &str) {
        self.obs.error(&self.how.line(line));
    }
    fn nodes(&mut self, multi: &Multi) {
        self.obs.nodes(multi);
    }
    fn progress(&mut self, tick: &Tick<'_>) {
        let title = self.how.progress_title(tick.title);
        self.obs.progress(&Tick { title: &title, ..*tick });
    }
    fn shows_progress(&self) -> bool {
        self.obs.shows_progress()
    }
    fn progress_end(&mut self) {
        self.obs.progress_end();
    }
    fn keeps_figures(&self) -> bool {
        self.obs.keeps_figures()
    }
    fn live_test(&mut self, test: &LiveTest<'_>) {
        self.obs.live_test(test);
    }
    fn second(&mut self, title: &str, n: usize, second: &Second) {
        self.obs.second(&self.how.series_title(title), n, second);
    }
    fn keeps_intervals(&self) -> bool {
        self.obs.keeps_intervals()
    }
    fn intervals(&mut self, tag: &str, ended: &[(Time, Interval)], end: Option<Time>) -> Result<(), Error> {
        self.obs.intervals(&self.how.series_title(tag), ended, end)
    }
    fn results(&mut self, results: &[TestResult]) {
        self.obs.results(&self.how.kept(results));
    }
    fn step_done(&mut self, s: &StepDone<'_>) -> Result<(), Error> {
        let shown: Vec<Cow<'_, [TestResult]>> = s.runs.iter().map(|r| self.how.shown(&r.results)).collect();
        if shown.iter().all(|c| matches!(c, Cow::Borrowed(_))) {
            return self.obs.step_done(s);
        }
        let runs: Vec<BackendRun> = s
            .runs
            .iter()
            .zip(shown)
            .map(|(r, results)| BackendRun { results: results.into_owned(), failures: r.failures.clone() })
            .collect();
        self.obs.step_done(&StepDone { runs: &runs, ..*s })
    }
    fn rates_done(&mut self, cfg: &Config, steps: &[TestResult]) -> Result<(), Error> {
        self.obs.rates_done(cfg, &self.how.shown(steps))
    }
    fn sweep_done(&mut self, rows: &[TestResult]) -> Result<(), Error> {
        self.obs.sweep_done(&self.how.shown(rows))
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
    fn dataset(&mut self, built: &crate::dataset::Built) -> Result<(), Error> {
        self.obs.dataset(built)
    }
    fn idle_clients(&mut self, live: u64) {
        self.obs.idle_clients(live);
    }
    fn idle_footprint(&mut self, text: &str) {
        self.obs.idle_footprint(text);
    }
}

/// Progress lines with another title (a sweep's step, a rate, a backend, `--preload`, the
/// warm-up): `title` in place of `base`, what a tick's title says after `base` (` (warmup)`,
/// from an inner one) kept after it. Everything else goes on as it is.
pub(crate) struct Retitle<'a> {
    /// The progress line's title, in place of `base`.
    pub title: &'a str,
    /// The test's own title.
    pub base: &'a str,
}

impl Rename for Retitle<'_> {
    fn progress_title<'a>(&self, title: &'a str) -> Cow<'a, str> {
        match title.strip_prefix(self.base) {
            Some(rest) if !rest.is_empty() => format!("{}{rest}", self.title).into(),
            _ => self.title.to_string().into(),
        }
    }
}

/// An observer whose progress lines carry another title ([`Retitle`]).
pub(crate) type Retitled<'a> = Forward<'a, Retitle<'a>>;

/// `obs` with its progress lines titled `title` in place of `base` ([`Retitle`]).
pub(crate) fn retitled<'a>(obs: &'a mut dyn Observer, title: &'a str, base: &'a str) -> Retitled<'a> {
    Forward { obs, how: Retitle { title, base } }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps the progress titles it hears.
    #[derive(Default)]
    struct Titles(Vec<String>);

    impl Observer for Titles {
        fn message(&mut self, _: &str) {}
        fn error(&mut self, _: &str) {}
        fn progress(&mut self, tick: &Tick<'_>) {
            self.0.push(tick.title.to_string());
        }
    }

    #[test]
    fn retitled_observers_nest() {
        let tick = Tick {
            title: "GET",
            started: Instant::now(),
            completed: 0,
            p99_micros: None,
            goal: Goal::Requests(10),
        };
        let mut seen = Titles::default();
        {
            // A step's title around the warm-up's: both said.
            let mut step = retitled(&mut seen, "GET (-d 16) @ 500 rps", "GET");
            step.progress(&tick);
            let mut warm = retitled(&mut step, "GET (warmup)", "GET");
            warm.progress(&tick);
        }
        assert_eq!(seen.0, ["GET (-d 16) @ 500 rps", "GET (-d 16) @ 500 rps (warmup)"]);
    }
}
