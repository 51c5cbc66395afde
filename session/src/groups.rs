//! Client groups (a scenario, `respbench run FILE.toml`): what runs at the same time in one test,
//! each group with its own connections, plan and figures. A command line is a scenario of one
//! group: the engine runs a list of [`Part`]s either way, and only a list of several reports
//! per group.

use respbench_core::{Outcome, RunError};

use crate::case::{cases, Case};
use crate::config::Config;
use crate::error::Error;
use crate::result::TestResult;
use crate::stop::StopHandle;

/// One group of a test as the engine runs it: its name (`None`: a command line's one group), its
/// configuration, its test and its open-loop rate.
#[derive(Clone, Copy)]
pub(crate) struct Part<'a> {
    pub name: Option<&'a str>,
    pub cfg: &'a Config,
    pub case: &'a Case,
    pub rate: Option<u64>,
    /// Its latency objectives (a scenario group's `slo`; empty: none).
    pub slo: &'a [crate::slo::Objective],
}

impl Part<'_> {
    /// The seed offset of group `k`'s streams: the first group's are a command line's, the
    /// others' their own.
    pub fn test_no(test_no: u64, k: usize) -> u64 {
        test_no.wrapping_add((k as u64) << 32)
    }
}

/// A scenario's group, made before connecting: its name, options and test.
pub(crate) struct GroupCase {
    pub name: String,
    pub cfg: Config,
    pub case: Case,
    pub slo: Vec<crate::slo::Objective>,
}

impl GroupCase {
    /// The group as a [`Part`].
    pub fn part(&self) -> Part<'_> {
        Part {
            name: Some(&self.name),
            cfg: &self.cfg,
            case: &self.case,
            rate: self.cfg.open.rates.first().copied(),
            slo: &self.slo,
        }
    }
}

/// The options a run of several groups does not take yet, each with why.
fn not_with_groups(cfg: &Config) -> Option<&'static str> {
    let o = &cfg.open;
    [
        (cfg.sweep.is_sweep(), "a list of -c, -d, -P or --threads (a sweep runs one workload per step)"),
        (o.rates.len() > 1, "a list of rates (each group has its own rate)"),
        (o.ramp.is_some_and(|r| r.kind != respbench_core::RampKind::Rps), "a ramp of clients"),
        (
            cfg.capacity.as_ref().is_some_and(|c| c.range.is_none()),
            "a search without a range (search = \"LOW-HIGH\")",
        ),
        (cfg.capacity.is_some() && cfg.split.is_some(), "a search over --worker"),
        (cfg.replay.is_some(), "--replay"),
        (cfg.ab.is_some(), "--ab"),
        (cfg.backends.len() > 1, "several backends"),
        (cfg.idle, "-I"),
        (cfg.memtier.is_some(), "memtier_benchmark's outputs"),
    ]
    .into_iter()
    .find_map(|(on, what)| on.then_some(what))
}

/// Each group's test, checked before connecting: one test each, a kind of test that can run beside
/// others, options that a run of groups takes.
pub(crate) fn group_cases(
    cfg: &Config,
    stop: &StopHandle,
    warn: &mut dyn FnMut(&str),
) -> Result<Vec<GroupCase>, Error> {
    let mut out = Vec::new();
    for g in &cfg.groups {
        let refuse = |why: String| Error::Tests(format!("{}: group '{}': {why}", g.at, g.name));
        if let Some(what) = not_with_groups(&g.cfg) {
            return Err(refuse(format!("{what} does not go with a scenario's groups")));
        }
        if g.cfg.open.ramp.is_some() && cfg.open.duration.is_none() {
            return Err(refuse("a group's ramp runs in the test's time: give the phases' duration".into()));
        }
        let mut found = cases(&g.cfg, stop, warn).map_err(|e| refuse(e.to_string()))?;
        if found.len() != 1 {
            return Err(refuse(format!("sends {} tests; a group sends one (a mix is one)", found.len())));
        }
        let case = found.remove(0);
        if case.spec.template.stamp_at().is_some() && !out.is_empty() {
            return Err(refuse(format!(
                "{}: a delivery test's group goes first (its subscribers are the test's)",
                case.spec.title
            )));
        }
        out.push(GroupCase { name: g.name.clone(), cfg: g.cfg.clone(), case, slo: g.slo.clone() });
    }
    Ok(out)
}

/// The test a scenario's groups make together: named after the scenario file (`readers-writers`
/// of `examples/readers-writers.toml`), the first group's request standing for its template.
pub(crate) fn scenario_case(cfg: &Config, first: &Case) -> Case {
    let title = scenario_title(cfg);
    let spec = respbench_core::suite::TestSpec { title: title.clone(), ..first.spec.clone() };
    Case { spec, mix: None, replay: None, subscribers: None, label: title }
}

/// The group whose rate a capacity search finds (its `search`), if any.
pub(crate) fn searched(groups: &[GroupCase]) -> Option<usize> {
    groups.iter().position(|g| g.cfg.capacity.is_some())
}

/// The title of a scenario's test: its file's name without the extension (`scenario` when it
/// has none).
pub(crate) fn scenario_title(cfg: &Config) -> String {
    cfg.scenario
        .as_ref()
        .and_then(|(file, _)| std::path::Path::new(file).file_stem())
        .map_or("scenario".to_string(), |s| s.to_string_lossy().into_owned())
}

/// The groups' outcomes as one: counts and histograms add up, failures and drops each listed
/// once with their counts.
pub(crate) fn merge(outcomes: &[Outcome]) -> Result<Outcome, Error> {
    let mut total = Outcome::merge_all(outcomes.iter().map(|o| {
        let mut o = Outcome { stats: o.stats.clone(), failures: Vec::new(), drops: Vec::new() };
        // A group's mix parts are its own: the total has none.
        o.stats.parts.clear();
        Ok::<_, RunError>(o)
    }))
    .map_err(|e| Error::Tests(format!("the groups' figures do not add up: {e}")))?;
    // An open loop's service time, lateness and arrivals are its group's: beside a closed loop
    // they would pass for the whole test's.
    total.stats.service = None;
    total.stats.lateness = None;
    // So is a cache-aside group's cache, and a ramping group's ramp and steps.
    total.stats.cache = None;
    total.stats.ramp = None;
    total.stats.steps.clear();
    for o in outcomes {
        for (e, n) in &o.failures {
            Outcome::add_failure(&mut total.failures, e.clone(), *n);
        }
        for (e, n) in &o.drops {
            Outcome::add_failure(&mut total.drops, e.clone(), *n);
        }
    }
    Ok(total)
}

/// The clients of a group that never ran, from its connections' failures (the engine's count).
pub(crate) type NeverRan = fn(&[(respbench_core::ConnError, u64)]) -> (u64, u64);

/// Each group's entry under the test's total: shaped as a test entry, named by its group.
pub(crate) fn results(
    parts: &[Part<'_>],
    outcomes: Vec<Outcome>,
    (backend, cpu): (crate::config::Backend, crate::cpu::ClientCpu),
    never_ran: NeverRan,
) -> Vec<TestResult> {
    let mut out = Vec::new();
    for (part, o) in parts.iter().zip(outcomes) {
        let slack = part.rate.map(|r| part.cfg.open_slack(r));
        // A ramping group was asked for its steps' mean rate.
        let target = part.cfg.ramp_target(part.rate);
        let mut entries = part.case.entries(backend, cpu, target, slack, o.stats);
        if let Some(mut e) = entries.pop() {
            e.name = part.name.unwrap_or_default().to_string();
            e.cpu = None;
            e.never_ran = never_ran(&o.failures);
            e.slo = (!part.slo.is_empty()).then(|| crate::objective::Judged::of(part.slo, &e.stats));
            out.push(e);
        }
    }
    out
}
