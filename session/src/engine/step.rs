//! One step of a case on each backend: the test run (its groups at the same time), the server's
//! readings around it, the run's first error and unfinished requests told, and the results
//! judged and reported.

use std::sync::Arc;

use super::{failure_words, findings, never_ran, refusal, FirstError, Session};
use crate::case::Case;
use crate::config::{Backend, Config};
use crate::error::Error;
use crate::groups::{GroupCase, Part};
use crate::observer::{retitled, BackendRun, Observer};
use crate::result::{EventResult, StepValues, TestResult, Warning, WarningKind};
use crate::run::{run_test, Against, Ran, Test};
use crate::timing::ServerTime;
use crate::verdict::ServerCpu;
use crate::{probe, verdict};

/// The requests of one of `case`'s sequences (1 without one): `-P` counts whole sequences.
fn seq_len(case: &Case) -> u64 {
    case.mix.as_ref().and_then(|(m, _)| m.sequence_len()).unwrap_or(1)
}

/// What a group keeps in flight: `-c` × `-P`.
fn in_flight(p: &Part<'_>) -> u64 {
    p.cfg.clients as u64 * u64::from(p.cfg.pipeline) * seq_len(p.case)
}

/// Which step of the run a test is: the case, its rate and backend, and its number.
#[derive(Clone, Copy)]
struct StepOf<'a> {
    case: &'a Case,
    rate: Option<u64>,
    backend: Backend,
    test_no: u64,
}

/// A step's test as it ran, before it is judged: what the run gave, a ramp's marks, the
/// commands' names as the server counts them, what the groups kept in flight, and each
/// group's results (none for one group).
struct Stepped {
    ran: Ran,
    marks: Vec<crate::ramp::Mark>,
    names: Vec<String>,
    in_flight: u64,
    groups: Vec<TestResult>,
}

/// What the whole of a step's test is judged on, beside its statistics: the client's CPU and
/// the contention, what it kept in flight, a ramp's marks, the client's pauses, and the
/// server's series, CPU and execution time.
struct Judged {
    cpu: crate::cpu::ClientCpu,
    contention: crate::run::Contention,
    in_flight: u64,
    marks: Vec<crate::ramp::Mark>,
    pauses: crate::timing::ClientPauses,
    server_series: Option<crate::sampler::ServerSeries>,
    server: (Option<ServerCpu>, ServerTime),
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
        // A search's steps (a scenario's searched group's included) are told apart by rate.
        if let Some(r) = rate.filter(|_| self.cfg.open.rates.len() > 1 || self.searching) {
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
        let at = StepOf { case, rate, backend, test_no };
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
        let stepped = self.run_parts(&cfg, &tag, at, obs)?;
        let server_cpu = self.probe.since(before);
        let ran = &stepped.ran;
        let server_time = self.server_time(&stepped.names, &times_before, &ran.outcome.stats, &ran.nodes);
        let on = if self.comparing { format!(" ({})", backend.name()) } else { String::new() };
        self.note_errors(&cfg, &tag, &ran.outcome);
        let abandoned = self.tell_unfinished(&cfg, (&case.spec.title, &on), &ran.outcome, &ran.events, obs);
        let run = self.results(&cfg, at, stepped, (server_cpu, server_time), abandoned);
        obs.results(&run.results);
        Ok(run)
    }

    /// Runs the step's test: its groups (a command line's one) under a progress line that
    /// names the step, a ramp's steps marked.
    fn run_parts(
        &mut self,
        cfg: &Config,
        tag: &str,
        at: StepOf<'_>,
        obs: &mut dyn Observer,
    ) -> Result<Stepped, Error> {
        let against =
            Against { tls: self.server.tls.as_ref(), multi: self.multi.as_deref(), targets: &self.targets };
        // The progress line names the step too: `GET (-d 128 -c 100) @ 2000 rps`.
        let title = &at.case.spec.title;
        let shown = match self.step.as_ref().map(|st| self.base.sweep.label(st)).filter(|l| !l.is_empty()) {
            Some(label) => format!("{title} ({label}){}", &tag[title.len()..]),
            None => tag.to_string(),
        };
        let mut titled = retitled(&mut *obs, &shown, title);
        let sampler = self.sampler();
        let mut watch = crate::ramp::Watch { probe: &mut self.probe, marks: Vec::new() };
        let parts: Vec<Part<'_>> = match self.groups.is_empty() {
            true => vec![Part { name: None, cfg, case: at.case, rate: at.rate, slo: &[] }],
            false => self.groups.iter().map(GroupCase::part).collect(),
        };
        let test = Test { cfg, parts: &parts, backend: at.backend, test_no: at.test_no, hlog: Some(tag) };
        let ramp = cfg.open.ramp.is_some().then_some(&mut watch);
        let mut ran = run_test(&test, against, self.epoch, &mut titled, &self.stop, ramp, sampler)?;
        let names: Vec<String> = parts
            .iter()
            .flat_map(|p| p.case.templates())
            .filter_map(|t| crate::timing::command_name(&t.display()))
            // A cache-aside group's SETs after its misses.
            .chain(parts.iter().any(|p| p.cfg.open.cache_aside).then(|| "set".to_string()))
            .collect();
        let in_flight: u64 = parts.iter().map(in_flight).sum();
        let outcomes = std::mem::take(&mut ran.groups);
        let groups = crate::groups::results(&parts, outcomes, (at.backend, ran.cpu), never_ran);
        Ok(Stepped { ran, marks: watch.marks, names, in_flight, groups })
    }

    /// The step's results (the case's entries, or each group's and the whole's), the step's
    /// values in each, the whole judged and its findings.
    fn results(
        &mut self,
        cfg: &Config,
        at: StepOf<'_>,
        stepped: Stepped,
        server: (Option<ServerCpu>, ServerTime),
        abandoned: Option<Warning>,
    ) -> BackendRun {
        let Stepped { ran, marks, in_flight, groups, .. } = stepped;
        let Ran { outcome, cpu, contention, nodes, events, pauses, server_series, .. } = ran;
        let (case, title) = (at.case, &at.case.spec.title);
        // A ramp's test as a whole was asked for its steps' mean rate (each step's own
        // target is in its figures).
        let target = cfg.ramp_target(at.rate);
        let mut results = match groups.is_empty() {
            true => case.entries(at.backend, cpu, target, at.rate.map(|r| cfg.open_slack(r)), outcome.stats),
            false => vec![TestResult {
                backend: Some(at.backend.name().to_string()),
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
        let judged = Judged { cpu, contention, in_flight, marks, pauses, server_series, server };
        self.judge(cfg, at, total, judged);
        total.warnings = findings(cfg, total, crate::case::preloadable(case));
        total.warnings.extend(abandoned);
        total.warnings.extend(crate::replay::finding(total));
        if self.step.is_some() {
            self.rows.push(total.clone());
        }
        BackendRun { results, failures: outcome.failures }
    }

    /// Judges the whole of a step's test: its verdict (where the time went, the client's pauses,
    /// the server's threads), a ramp's steps, and the server's CPU, time and series.
    fn judge(&self, cfg: &Config, at: StepOf<'_>, total: &mut TestResult, j: Judged) {
        let (machine, waited) = j.contention;
        let (server_cpu, server_time) = j.server;
        let missing = self.probe.missing.as_ref().map(ToString::to_string);
        let schedule = crate::result::Schedule::of(total).or_else(|| crate::replay::schedule(total));
        total.verdict = Some(verdict::verdict(
            Some(&j.cpu),
            server_cpu.as_ref(),
            missing.as_deref(),
            machine,
            waited,
            j.in_flight,
            schedule.as_ref(),
        ));
        total.ramp = crate::ramp::results(
            &total.stats,
            &j.marks,
            at.rate,
            cfg.clients as u64,
            u64::from(cfg.pipeline) * seq_len(at.case),
            j.cpu.threads,
            missing.as_deref(),
            self.probe.threaded(),
        );
        total.server_cpu = server_cpu;
        total.server_time = Some(server_time);
        if let Some(v) = &mut total.verdict {
            verdict::name_pauses(v, &total.stats.latency, &j.pauses);
        }
        total.pauses = Some(j.pauses);
        // The server's threads (#51): said where it was sampled.
        if let Some(series) = &j.server_series {
            let threads = crate::threads::ThreadVerdict::of(Some(series), None);
            if let Some(v) = &mut total.verdict {
                threads.apply(v);
            }
            total.server_threads = Some(threads);
        }
        total.server_series = j.server_series;
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
            // --reconnect: the test went on. A failover or restart ridden through (every
            // connection back, no request lost) is reported and exits 0; a loss exits 1.
            let lost = s.lost > 0 || s.still_down > 0;
            self.dropped |= lost;
            let mut resent = match s.resent {
                0 => String::new(),
                n => format!(", {n} sent again (in flight at a move)"),
            };
            if s.refused > 0 {
                resent +=
                    &format!(", {} refused by a replica (READONLY/MASTERDOWN) and sent again", s.refused);
            }
            let still = match s.still_down {
                0 => String::new(),
                n => format!(", {n} still down at the end"),
            };
            let line = format!(
                "{what}: connections went down {} times and reconnected (--reconnect): {} requests lost{}, {:.3} s \
                 down in all{still}",
                s.drops,
                s.lost,
                resent,
                s.downtime_micros as f64 / 1e6
            );
            let say = |obs: &mut dyn Observer, l: &str| if lost { obs.error(l) } else { obs.notice(l) };
            say(obs, &line);
            for (e, n) in &outcome.drops {
                say(obs, &format!("{what}:   {n} × {e}"));
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
            obs.error(&format!("{what}: {}", unfinished_line(s, cfg.clients as u64, &grace)));
        }
        self.tell_failed_events(&what, events, obs);
        (s.abandoned > 0).then(|| Warning {
            kind: WarningKind::Abandoned,
            text: format!(
                "{title}: {} requests were still unanswered {grace} after the stop and were abandoned",
                s.abandoned
            ),
            figures: vec![("abandoned_requests", s.abandoned as f64)],
        })
    }

    /// Tells `obs` each `--at` event that failed, or whose disruption lasted to the end: one
    /// line each, and the run exits 1. `what`: the test and backend.
    fn tell_failed_events(&mut self, what: &str, events: &[EventResult], obs: &mut dyn Observer) {
        for e in events {
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
            // A connection moved (a Sentinel's failover, a name resolved elsewhere): its
            // replies came from more than one server, none of whose counts is the test's own.
            if !stats.readdressed.is_empty() {
                return None;
            }
            if single {
                return Some(stats.requests);
            }
            let k = nodes.iter().position(|n| n.address == address)?;
            stats.nodes.get(k).map(|s| s.requests)
        };
        self.latency.since(before, names, &expected, &mut self.probe)
    }
}

/// The line that says what a test left unfinished (`clients`: its connections; `grace`: the
/// stop's): requests abandoned after the grace, or due and never sent and why, with how long
/// no reply came while the connections were up.
fn unfinished_line(s: &respbench_core::Stats, clients: u64, grace: &str) -> String {
    let failed = s.failed_at(clients).is_some();
    let silent = if failed {
        String::new()
    } else {
        format!(" (no reply for the last {:.1} s of {:.1} s)", s.silent_secs(), s.duration_secs())
    };
    let unsent = format!("{} requests due were never sent", s.unsent);
    let abandoned =
        format!("{} requests were still unanswered {grace} after the stop and were abandoned", s.abandoned);
    let line = match (s.abandoned, s.unsent) {
        (0, _) if failed => format!("{unsent} (all connections failed at {:.2} s)", s.duration_secs()),
        // Replies came to the end: nothing was blocked, the loop was behind.
        (0, _) if s.silent_secs() < 0.1 => format!(
            "{unsent} (the client was behind its schedule at the end: sends up to {:.1} ms late)",
            s.lateness.as_ref().map_or(0.0, |l| l.max() as f64 / 1e3)
        ),
        (0, _) => format!("{unsent} (the connection or the window was blocked to the end)"),
        (_, 0) => abandoned,
        (_, _) => format!("{abandoned}; {unsent}"),
    };
    format!("{line}{silent}")
}
