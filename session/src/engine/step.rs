//! One step of a case on each backend: the test run (its groups at the same time), the server's
//! readings around it, the run's first error and unfinished requests told, and the results
//! judged and reported.

use std::sync::Arc;

use super::{failure_words, findings, never_ran, refusal, FirstError, Session};
use crate::case::Case;
use crate::config::{Backend, Config};
use crate::groups::{GroupCase, Part};
use crate::observer::{retitled, BackendRun, Observer};
use crate::result::{EventResult, StepValues, TestResult, Warning, WarningKind};
use crate::run::{run_test, Against, Ran, Test};
use crate::{probe, verdict, Error};

/// The requests of one of `case`'s sequences (1 without one): `-P` counts whole sequences.
fn seq_len(case: &Case) -> u64 {
    case.mix.as_ref().and_then(|(m, _)| m.sequence_len()).unwrap_or(1)
}

/// What a group keeps in flight: `-c` × `-P`.
fn in_flight(p: &Part<'_>) -> u64 {
    p.cfg.clients as u64 * u64::from(p.cfg.pipeline) * seq_len(p.case)
}

impl Session {
    /// Runs one step of a case on each backend in turn (stopping at the first that failed or
    /// was interrupted).
    pub(super) fn run_step(
        &mut self,
        test_no: u64,
        case: &Case,
        rate: Option<u64>,
        obs: &mut dyn Observer,
    ) -> Result<Vec<BackendRun>, Error> {
        let mut ran = Vec::new();
        for &backend in &Arc::clone(&self.cfg).backends {
            let run = self.run_on(backend, test_no, case, rate, obs)?;
            let stop = !run.failures.is_empty() || self.stop.requested();
            ran.push(run);
            if stop {
                break;
            }
        }
        Ok(ran)
    }

    /// The test's name, as in the JSON; what tells steps and backends apart, when there are
    /// several.
    fn tag(&self, case: &Case, rate: Option<u64>, backend: Backend) -> String {
        let mut tag = case.spec.title.clone();
        if let Some(r) = rate.filter(|_| self.cfg.open.rates.len() > 1 || self.cfg.capacity.is_some()) {
            tag += &format!(" @ {r} rps");
        }
        if self.comparing {
            tag += &format!(" ({})", backend.name());
        }
        tag
    }

    /// One step of a case on `backend`: run, judged, reported.
    fn run_on(
        &mut self,
        backend: Backend,
        test_no: u64,
        case: &Case,
        rate: Option<u64>,
        obs: &mut dyn Observer,
    ) -> Result<BackendRun, Error> {
        let cfg = Arc::clone(&self.cfg);
        let tag = self.tag(case, rate, backend);
        let before = self.probe.read();
        let times_before = self.latency.read(&mut self.probe);
        if cfg.open.ramp.is_none() {
            // No slot of the server's maxclients held while the test's connections are
            // open (-c equal to maxclients runs whole): opened again for the end's reading.
            // A ramp reads the server at each step, over the connection it opens then.
            self.probe.release();
            self.latency.release();
        }
        let against =
            Against { tls: self.server.tls.as_ref(), multi: self.multi.as_deref(), targets: &self.targets };
        // The progress line names the step too: `GET (-d 128 -c 100) @ 2000 rps`.
        let title = &case.spec.title;
        let shown = match self.step.as_ref().map(|st| self.base.sweep.label(st)).filter(|l| !l.is_empty()) {
            Some(label) => format!("{title} ({label}){}", &tag[title.len()..]),
            None => tag.clone(),
        };
        let mut titled = retitled(&mut *obs, &shown, title);
        let sampler = self.sampler();
        let mut watch = crate::ramp::Watch { probe: &mut self.probe, marks: Vec::new() };
        let parts: Vec<Part<'_>> = match self.groups.is_empty() {
            true => vec![Part { name: None, cfg: &cfg, case, rate }],
            false => self.groups.iter().map(GroupCase::part).collect(),
        };
        let test = Test { cfg: &cfg, parts: &parts, backend, test_no, hlog: Some(&tag) };
        let ramp = cfg.open.ramp.is_some().then_some(&mut watch);
        let Ran { outcome, cpu, contention, nodes, events, pauses, groups, server_series } =
            run_test(&test, against, self.epoch, &mut titled, &self.stop, ramp, sampler)?;
        let marks = watch.marks;
        let names: Vec<String> = parts
            .iter()
            .flat_map(|p| p.case.templates())
            .filter_map(|t| crate::timing::command_name(&t.display()))
            // A cache-aside group's SETs after its misses.
            .chain(parts.iter().any(|p| p.cfg.open.cache_aside).then(|| "set".to_string()))
            .collect();
        let in_flight: u64 = parts.iter().map(in_flight).sum();
        let groups = crate::groups::results(&parts, groups, (backend, cpu), never_ran);
        drop(parts);
        let server_cpu = self.probe.since(before);
        let server_time = self.server_time(&names, &times_before, &outcome.stats, &nodes);
        let on = if self.comparing { format!(" ({})", backend.name()) } else { String::new() };
        self.note_errors(&cfg, &tag, &outcome);
        let abandoned = self.tell_unfinished(&cfg, (title, &on), &outcome, &events, obs);
        // A ramp's test as a whole was asked for its steps' mean rate (each step's own
        // target is in its figures).
        let target = cfg.ramp_target(rate);
        let mut results = match groups.is_empty() {
            true => case.entries(backend, cpu, target, rate.map(|r| cfg.open_slack(r)), outcome.stats),
            false => vec![TestResult {
                backend: Some(backend.name().to_string()),
                cpu: Some(cpu),
                groups,
                ..TestResult::new(title.clone(), String::new(), outcome.stats)
            }],
        };
        for e in &mut results {
            e.step = self.step.as_ref().map(StepValues::of);
            if let (Some(step), Some(c)) = (&mut e.step, self.step_clients) {
                step.clients = c as u64;
            }
        }
        let total = results.last_mut().expect("a test has its total");
        total.nodes = nodes;
        total.events = events;
        total.never_ran = never_ran(&outcome.failures);
        let (machine, waited) = contention;
        let missing = self.probe.missing.as_ref().map(ToString::to_string);
        let schedule = crate::result::Schedule::of(total).or_else(|| crate::replay::schedule(total));
        total.verdict = Some(verdict::verdict(
            Some(&cpu),
            server_cpu.as_ref(),
            missing.as_deref(),
            machine,
            waited,
            in_flight,
            schedule.as_ref(),
        ));
        total.ramp = crate::ramp::results(
            &total.stats,
            &marks,
            rate,
            cfg.clients as u64,
            u64::from(cfg.pipeline) * seq_len(case),
            cpu.threads,
            missing.as_deref(),
            self.probe.threaded(),
        );
        total.server_cpu = server_cpu;
        total.server_time = Some(server_time);
        if let Some(v) = &mut total.verdict {
            verdict::name_pauses(v, &total.stats.latency, &pauses);
        }
        total.pauses = Some(pauses);
        // The server's threads (#51): said where it was sampled.
        if let Some(series) = &server_series {
            let threads = crate::threads::ThreadVerdict::of(Some(series), None);
            if let Some(v) = &mut total.verdict {
                threads.apply(v);
            }
            total.server_threads = Some(threads);
        }
        total.server_series = server_series;
        total.warnings = findings(&cfg, total, crate::case::preloadable(case));
        total.warnings.extend(abandoned);
        total.warnings.extend(crate::replay::finding(total));
        if self.step.is_some() {
            self.rows.push(total.clone());
        }
        obs.results(&results);
        Ok(BackendRun { results, failures: outcome.failures })
    }

    /// Keeps the run's first error reply or refusal, its first other connection failure, and
    /// the first test whose measured window completed nothing.
    fn note_errors(&mut self, cfg: &Config, tag: &str, outcome: &respbench_core::Outcome) {
        let s = &outcome.stats;
        if self.first_error.is_none() {
            // `connection` counts the requests --reconnect lost, not a reply: said apart.
            self.first_error = s
                .errors
                .kinds()
                .iter()
                .find(|k| k.prefix != "connection")
                .map(|k| FirstError { message: k.first_message.clone(), reply: true })
                .or_else(|| outcome.failures.iter().find_map(|(e, _)| refusal(e)));
        }
        if self.first_failure.is_none() {
            self.first_failure = outcome
                .failures
                .iter()
                .find(|(e, _)| refusal(e).is_none())
                .map(|(e, _)| failure_words(e, self.plain_to_tls));
        }
        // `-n 0` asked for none.
        let asked = cfg.open.duration.is_some() || cfg.requests > 0;
        if s.requests == 0 && asked && outcome.failures.is_empty() && !self.stop.requested() {
            self.empty_window.get_or_insert_with(|| tag.to_string());
        }
    }

    /// Tells `obs` (one line each, the run then exits 1) what the test left unfinished:
    /// reconnections, messages not delivered, requests abandoned or never sent, events that
    /// failed or whose disruption lasted. `(title, on)`: the test's title and backend. The
    /// warning about abandoned requests, for its results.
    fn tell_unfinished(
        &mut self,
        cfg: &Config,
        (title, on): (&str, &str),
        outcome: &respbench_core::Outcome,
        events: &[EventResult],
        obs: &mut dyn Observer,
    ) -> Option<Warning> {
        let s = &outcome.stats;
        let what = format!("{title}{on}");
        if !outcome.drops.is_empty() {
            // --reconnect: the test went on; the run's status will say it had errors.
            self.dropped = true;
            obs.error(&format!(
                "{what}: connections went down {} times and reconnected (--reconnect): {} requests lost, {:.3} s \
                 down in all",
                s.drops,
                s.lost,
                s.downtime_micros as f64 / 1e6
            ));
            for (e, n) in &outcome.drops {
                obs.error(&format!("{what}:   {n} × {e}"));
            }
        }
        let moved = crate::retry::moves(s);
        for line in crate::retry::summary(&s.retries).into_iter().chain(moved) {
            obs.notice(&format!("{what}: {line}"));
        }
        // A delivery test whose messages did not all arrive once: one line, exit 1.
        if let Some(why) = s.delivery.as_ref().and_then(|d| d.shortfall()).filter(|_| !self.searching) {
            self.unfinished = true;
            obs.error(&format!("{what}: {why}"));
        }
        let grace = respbench_core::conn::format_duration(cfg.drain_grace);
        // A search's step that could not keep its schedule fails as a step (its verdict and
        // warnings say why); the run goes on.
        if (s.abandoned > 0 || s.unsent > 0) && !self.searching {
            // Requests the test did not finish: the run says so in one line, and exits 1.
            self.unfinished = true;
            let failed = s.failed_at(cfg.clients as u64).is_some();
            let silent = if failed {
                String::new()
            } else {
                format!(" (no reply for the last {:.1} s of {:.1} s)", s.silent_secs(), s.duration_secs())
            };
            let unsent = format!("{} requests due were never sent", s.unsent);
            let abandoned = format!(
                "{} requests were still unanswered {grace} after the stop and were abandoned",
                s.abandoned
            );
            let line = match (s.abandoned, s.unsent) {
                (0, _) if failed => {
                    format!("{unsent} (all connections failed at {:.2} s)", s.duration_secs())
                }
                // Replies came to the end: nothing was blocked, the loop was behind.
                (0, _) if s.silent_secs() < 0.1 => format!(
                    "{unsent} (the client was behind its schedule at the end: sends up to {:.1} ms late)",
                    s.lateness.as_ref().map_or(0.0, |l| l.max() as f64 / 1e3)
                ),
                (0, _) => format!("{unsent} (the connection or the window was blocked to the end)"),
                (_, 0) => abandoned,
                (_, _) => format!("{abandoned}; {unsent}"),
            };
            obs.error(&format!("{what}: {line}{silent}"));
        }
        for e in events {
            // An event that failed, or whose disruption lasted to the end: one line, exit 1.
            let at = respbench_core::conn::format_duration(e.event.at);
            let event = format!("{what}: --at '{at} {}'", e.event.text);
            if e.fired.outcome.failed() {
                self.unfinished = true;
                obs.error(&format!("{event} failed: {}", e.fired.outcome.describe()));
            }
            if e.cost.as_ref().is_some_and(|c| c.recovered.is_none()) {
                self.unfinished = true;
                obs.error(&format!("{event}: not recovered by the end of the test"));
            }
        }
        (s.abandoned > 0).then(|| Warning {
            kind: WarningKind::Abandoned,
            text: format!(
                "{title}: {} requests were still unanswered {grace} after the stop and were abandoned",
                s.abandoned
            ),
            figures: vec![("abandoned_requests", s.abandoned as f64)],
        })
    }

    /// The server's execution time for the calls of the commands `names` since `before`, each
    /// node's count held against the replies the test had from it.
    fn server_time(
        &mut self,
        names: &[String],
        before: &probe::LatencyReading,
        stats: &respbench_core::Stats,
        nodes: &[crate::result::NodeInfo],
    ) -> crate::timing::ServerTime {
        let single = nodes.is_empty();
        let expected = |address: &str| -> Option<u64> {
            if single {
                return Some(stats.requests);
            }
            let k = nodes.iter().position(|n| n.address == address)?;
            stats.nodes.get(k).map(|s| s.requests)
        };
        self.latency.since(before, names, &expected, &mut self.probe)
    }
}
