//! A run of the suite: the checks before connecting, the startup connection and discovery, then
//! each test at each step of a sweep, each `--rps` rate and each backend, with `--preload` and
//! `--start-at` before the first measured test.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use respbench_core::template::Template;
use respbench_driver::Tls;

use crate::case::{cases, preload_case, Case, PRELOAD_PIPELINE};
use crate::config::StartAt;
use crate::config::{Config, OpenLoopConfig, Replicas, Rfr, Step};
use crate::error::Error;
use crate::groups::{GroupCase, Part};
use crate::observer::{Observer, StepDone, StopHandle};
use crate::result::{TestResult, Warning, WarningKind};
use crate::routing::Multi;
use crate::server::{self, Server, ServerInfo};
use crate::{backend, limits, probe, routing, verdict};

pub mod ab;
mod build;
mod search;
mod step;

/// How a run of the suite ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every test ran.
    Completed,
    /// A test's connections failed: what completed is reported.
    ConnectionsFailed,
    /// The run was stopped ([`StopHandle`]): what completed is reported.
    Interrupted,
}

/// What a finished run leaves for its report.
#[derive(Debug)]
pub struct Finished {
    /// How it ended; an error when a backend could not run a test at all.
    pub ended: Result<Ended, Error>,
    /// `--reconnect`: some connection went down and requests were lost with it, or it was still
    /// down at the end (the run then exits 1; one ridden through without loss exits 0).
    pub dropped: bool,
    /// Some test abandoned requests or never sent some that were due (the run then exits 1).
    pub unfinished: bool,
    /// `--start-at`: how late this process was ready for the instant, in seconds (0 on time).
    pub late_by_s: Option<f64>,
    /// The server's words for the first error the run met: an error reply, or a connection it
    /// refused (maxclients, `AUTH`). The run then exits 1, as the peers' do.
    pub first_error: Option<FirstError>,
    /// The first test whose measured window completed no request (the run then exits 1).
    pub empty_window: Option<String>,
    /// `--slo`: each test's capacity search.
    pub searches: Vec<crate::capacity::Found>,
    /// The first connection failure of the run that is not in the server's words (those are in
    /// `first_error`): a reset, a close, a TLS handshake that failed, a protocol error, a
    /// timeout, in respbench's words, with the hint `(it speaks TLS on this port: add --tls)`
    /// when the startup connection found a plain connection to a TLS port. The command line
    /// prints it as `Error: …`, as redis-benchmark prints its connections' failures.
    pub first_failure: Option<String>,
}

/// The first error of a run, in the server's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirstError {
    /// The server's message (`ERR max number of clients reached`).
    pub message: String,
    /// An error reply to a request (else a connection the server refused).
    pub reply: bool,
}

/// The TLS settings every connection of the run uses, made once from `cfg.tls` (`None` without
/// TLS).
pub fn tls_client(cfg: &Config) -> Result<Option<Tls>, Error> {
    match &cfg.tls {
        None => Ok(None),
        #[cfg(feature = "tls")]
        Some(o) => Ok(Some(crate::tls::client(o, &cfg.endpoint)?)),
        #[cfg(not(feature = "tls"))]
        Some(_) => Err(Error::NoTls),
    }
}

/// `--tls` to the Sentinels: [`crate::server::secure`]'s handshake with the run's settings, each
/// Sentinel checked for its own address or name (or `--sni`'s).
fn sentinel_tls(tls: Tls) -> crate::sentinel::Secure {
    #[cfg(not(feature = "tls"))]
    match tls {}
    #[cfg(feature = "tls")]
    crate::sentinel::Secure(Arc::new(move |tcp, at| {
        let named = Tls { config: tls.config.clone(), server_name: tls.name_for(at) };
        match crate::server::secure(tcp, Some(&named), at, std::time::Duration::from_secs(1)) {
            Ok((s, _)) => Ok(Box::new(s) as Box<dyn crate::sentinel::Stream>),
            Err(e) => Err(e.message),
        }
    }))
}

/// The checks that need no server: the open-file limit for `-c` (raised where it can be), and
/// io_uring where `--backend uring` asks for it.
pub fn check_machine(cfg: &Config) -> Result<(), Error> {
    limits::ensure_fds(cfg.clients, 0, respbench_driver::loops(cfg.threads, cfg.clients))?;
    backend::check_uring(cfg)
}

/// One run of the suite: its tests, the server it found, and what it has recorded.
pub struct Session {
    /// The options as given.
    base: Config,
    /// The `-h/-p` server, with the run's TLS settings.
    server: Server,
    /// Over several nodes: the nodes found at startup and the commands' routes.
    multi: Option<Arc<Multi>>,
    /// Where `--at`'s commands go.
    targets: Vec<crate::fire::Target>,
    /// The options of the step running (the base at one combination of a sweep).
    cfg: Arc<Config>,
    /// That step's parameters (a sweep only).
    step: Option<Step>,
    cases: Vec<Case>,
    /// A scenario's groups, which run at the same time in its one test (empty: the command
    /// line's one group runs each case).
    groups: Vec<GroupCase>,
    info: ServerInfo,
    /// Several backends side by side.
    comparing: bool,
    open_loop: bool,
    epoch: Instant,
    epoch_us: u64,
    /// `--reconnect`: some connection went down and came back.
    dropped: bool,
    /// Some test abandoned requests or never sent some that were due.
    unfinished: bool,
    /// Reads the server's CPU around each test.
    probe: probe::Probe,
    /// Reads each node's execution times around each test.
    latency: probe::LatencyProbe,
    /// The totals of the sweep's steps so far, for its table.
    rows: Vec<TestResult>,
    /// The test and value size `--preload` last wrote.
    preloaded: Option<(u64, respbench_core::dist::ValueSize)>,
    /// A worker's step: the whole run's `-c` at that step.
    step_clients: Option<usize>,
    /// `--start-at`, until the first measured test waits for it.
    start_at: Option<StartAt>,
    /// `--start-at`: how late this process was ready for the instant, in seconds (0 on time).
    late_by_s: Option<f64>,
    stop: StopHandle,
    /// See [`Finished::first_error`].
    first_error: Option<FirstError>,
    /// See [`Finished::empty_window`].
    empty_window: Option<String>,
    /// See [`Finished::first_failure`].
    first_failure: Option<String>,
    /// A plain connection to a TLS port: the startup connection's TLS probe said so.
    plain_to_tls: bool,
    /// `--slo`: the searches run so far.
    searches: Vec<crate::capacity::Found>,
    /// `--dataset-shape`: each shape's requests, pass by pass, until they are built.
    dataset: Vec<Vec<Case>>,
    /// A search's step is running: a step that could not keep its schedule fails the step, not
    /// the run.
    searching: bool,
}

impl Session {
    /// Finds the tests (bad names and mixes before connecting), makes the startup connection,
    /// and over several nodes finds them and how each command is routed.
    /// `tls`: from [`tls_client`].
    pub fn new(
        cfg: &Config,
        tls: Option<Tls>,
        obs: &mut dyn Observer,
        stop: StopHandle,
    ) -> Result<Session, Error> {
        // `--sentinel`: the run starts on the primary a Sentinel names.
        let located;
        let cfg = match &cfg.sentinel {
            Some(s) => {
                // --tls: the Sentinels are spoken to over TLS too.
                let mut s = s.clone();
                s.tls = tls.clone().map(sentinel_tls);
                let replicas = match (&cfg.replicas, cfg.rfr) {
                    // --rfr: the replicas the Sentinel lists.
                    (Replicas::None, Rfr::Yes | Rfr::All) => {
                        Replicas::Listed(s.replicas().map_err(|e| Error::Sentinel(e.to_string()))?)
                    }
                    (r, _) => r.clone(),
                };
                let primary = s.primary().map_err(|e| Error::Sentinel(e.to_string()))?;
                if replicas != Replicas::None {
                    // Over several nodes a connection that finds the primary elsewhere moves them all.
                    s.heard(primary.clone());
                }
                located = Config { endpoint: primary, replicas, sentinel: Some(s), ..cfg.clone() };
                &located
            }
            None => cfg,
        };
        let server = Server::new(cfg, tls);
        let most_clients =
            cfg.sweep.clients.iter().copied().chain([cfg.clients]).max().unwrap_or(cfg.clients);
        let multi = cfg.cluster || cfg.replicas != Replicas::None;
        // A value too large for memory is refused before it is made: over several nodes a
        // client keeps each request's bytes whole for a redirect; against one server the
        // connections share the value.
        let value =
            cfg.sweep.datasizes.iter().chain([&cfg.values]).map(|v| v.max() as u64).max().unwrap_or(0);
        crate::limits::ensure_memory(value, if multi { value } else { 0 }, most_clients)?;
        let groups = crate::groups::group_cases(cfg, &stop, &mut |w| obs.message(w))?;
        let cases = match groups.first() {
            Some(g) => vec![crate::groups::scenario_case(cfg, &g.case)],
            None => cases(cfg, &stop, &mut |w| obs.message(w))?,
        };
        let all_clients: usize = groups.iter().map(|g| g.cfg.clients).sum::<usize>().max(most_clients);
        // A replay says what it is about to play, and the recorded instants it does not keep.
        for r in cases.iter().filter_map(|c| c.replay.as_ref()) {
            for line in r.scan.notices(&r.settings.file) {
                obs.notice(&line);
            }
        }
        // A delivery test's subscribers or waiters are sockets beside the connections, before any
        // connects (the limit was met after thousands had, seconds in).
        let listeners = cases.iter().map(|c| c.listeners(cfg)).max().unwrap_or(0);
        limits::ensure_fds(all_clients, listeners, respbench_driver::loops(cfg.threads, cfg.clients))?;
        // A replay has a client per original client of its capture (this worker's share).
        let replayed;
        let cfg = match cases.iter().find_map(|c| c.replay.as_ref()) {
            Some(r) => {
                replayed = Config { clients: r.mine.len().max(1), ..cfg.clone() };
                &replayed
            }
            // `-t expiry` and `-t tracking` (alone in their run) write on one connection.
            None if cases.iter().any(|c| {
                [respbench_core::expiry::EXPIRY_TITLE, respbench_core::tracking::TRACKING_TITLE]
                    .contains(&&*c.spec.title)
            }) =>
            {
                replayed = Config { clients: 1, threads: 1, ..cfg.clone() };
                &replayed
            }
            None => cfg,
        };
        // The requests as made (several values, a command around them), before connecting.
        let largest = cases.iter().flat_map(Case::templates).map(|t| t.len() as u64).max().unwrap_or(0);
        let copied = cases.iter().flat_map(Case::templates).map(|t| t.copied_len() as u64).max().unwrap_or(0);
        let copied = if multi { largest } else { copied };
        crate::limits::ensure_memory(largest, copied, most_clients)?;
        if multi {
            // A client over several nodes keeps its connections; one per request batch is not
            // built for it.
            if !cfg.keepalive {
                return Err(Error::NoKeepaliveOverNodes);
            }
            if let Some(c) = cases.iter().find(|c| c.spec.connection_per_request) {
                return Err(Error::ConnectionPerRequestOverNodes { test: c.spec.title.clone() });
            }
        }
        let (mut info, refused, counters) = server::startup(&server)?;
        let plain_to_tls =
            cfg.tls.is_none() && counters.as_ref().err().is_some_and(|e| e.message.contains(server::ADD_TLS));
        if cfg.tls.as_ref().is_some_and(|t| t.insecure) {
            info.tls_name = Some(server::NameCheck::Skipped("--insecure: nothing was checked".into()));
        } else if let Some(server::NameCheck::Skipped(why)) = &info.tls_name {
            // Not an error (the chain was checked, and nothing was there to match): a notice, in
            // the verbose report and the JSON.
            obs.message(&format!(
                "NOTE: TLS: the server's name was not checked against its certificate (the chain was): {why}"
            ));
        }
        if let Some(why) = refused {
            obs.message(&format!("WARNING: Could not fetch server CONFIG{why}"));
        }
        let mut nodes = None;
        let dataset = build::cases(cfg);
        if multi {
            let templates: Vec<&Template> = cases
                .iter()
                .chain(dataset.iter().flatten())
                .chain(groups.iter().map(|g| &g.case))
                .flat_map(Case::templates)
                .collect();
            nodes = routing::prepare(cfg, &server, &templates)?;
            if let Some(m) = &nodes {
                // Nodes that appear later are opened then (an error names the open-file limit).
                limits::ensure_fds(
                    cfg.clients * m.topology.nodes.len(),
                    listeners,
                    respbench_driver::loops(cfg.threads, cfg.clients),
                )?;
                obs.nodes(m);
            }
        }
        let targets = crate::fire::targets(&cfg.events, &server, nodes.as_deref())?;
        if !cfg.keepalive {
            obs.message(
                "WARNING: Keepalive disabled. You probably need 'echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse' \
                 for Linux in order to use a lot of clients/requests",
            );
        }
        let probe = probe::Probe::new(
            match counters {
                _ if cfg.no_server_probe => Err(probe::ProbeError::NotAsked),
                // One node's counters would speak for a cluster or replica set: they are
                // not read (the per-node table shows where the requests went).
                Ok(_) if nodes.is_some() => Err(probe::ProbeError::SeveralServers),
                Ok(c) => Ok(c),
                Err(e) => Err(probe::ProbeError::Spent(e)),
            },
            &server,
            is_local(&cfg.endpoint),
        );
        if let Some(body) = &probe.server_text {
            info.identify(body);
        }
        let latency = latency_probe(cfg, &server, nodes.as_deref());
        if info.mode.is_none() && nodes.is_some() {
            info.mode = Some(if cfg.cluster { "cluster" } else { "replicas" }.to_string());
        }
        Ok(Session {
            cfg: Arc::new(cfg.clone()),
            step: None,
            cases,
            groups,
            info,
            comparing: cfg.backends.len() > 1,
            open_loop: !cfg.open.rates.is_empty(),
            epoch: Instant::now(),
            epoch_us: unix_micros(SystemTime::now()),
            dropped: false,
            unfinished: false,
            probe,
            latency,
            rows: Vec::new(),
            preloaded: None,
            step_clients: None,
            start_at: cfg.start_at.clone(),
            late_by_s: None,
            stop,
            first_error: None,
            empty_window: None,
            first_failure: None,
            plain_to_tls,
            searches: Vec::new(),
            dataset,
            searching: false,
            base: cfg.clone(),
            server,
            multi: nodes,
            targets,
        })
    }

    /// The tests the run goes through.
    pub fn cases(&self) -> &[Case] {
        &self.cases
    }

    /// What the startup connection read from the server.
    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// The run's configuration.
    pub fn config(&self) -> &Config {
        &self.base
    }

    /// The run's epoch in microseconds since the Unix epoch: results' times count from it.
    pub fn epoch_us(&self) -> u64 {
        self.epoch_us
    }

    /// Runs every case (forever with `-l`) until one stops the run.
    pub fn run(mut self, obs: &mut dyn Observer) -> Finished {
        let ended = self.run_suite(obs);
        Finished {
            ended,
            dropped: self.dropped,
            unfinished: self.unfinished,
            late_by_s: self.late_by_s,
            first_error: self.first_error,
            empty_window: self.empty_window,
            searches: self.searches,
            first_failure: self.first_failure,
        }
    }

    fn run_suite(&mut self, obs: &mut dyn Observer) -> Result<Ended, Error> {
        if !self.dataset.is_empty() {
            if let Some(end) = self.build_datasets(obs)? {
                return Ok(end);
            }
        }
        if self.base.dataset_only {
            return Ok(Ended::Completed);
        }
        let cases = std::mem::take(&mut self.cases);
        let ended = (|| loop {
            for (i, case) in cases.iter().enumerate() {
                if let Some(end) = self.run_case(i as u64, case, obs)? {
                    return Ok(end);
                }
            }
            if !self.cfg.repeat {
                return Ok(Ended::Completed);
            }
        })();
        self.cases = cases;
        ended
    }

    /// Runs one case: each rate step on each backend. `Some(end)` when the run must stop here
    /// (failed connections, a stop).
    fn run_case(
        &mut self,
        test_no: u64,
        case: &Case,
        obs: &mut dyn Observer,
    ) -> Result<Option<Ended>, Error> {
        if self.base.capacity.is_some() || crate::groups::searched(&self.groups).is_some() {
            return self.run_search(test_no, case, obs);
        }
        if !self.base.sweep.is_sweep() {
            return self.run_rates(test_no, case, obs);
        }
        // A sweep: every combination in turn, then one table of them all.
        let mut rows = Vec::new();
        let mut stop = None;
        // Steps go -c value by -c value, each over every -P, --threads and run.
        let s = &self.base.sweep;
        let per_clients = s.pipelines.len() * s.threads.len() * s.repeat.max(1);
        for (k, step) in self.base.sweep.steps().into_iter().enumerate() {
            // A worker's results name the whole run's -c, as its other workers' do, so they merge.
            self.step_clients =
                self.base.split.as_ref().map(|w| w.clients[k / per_clients % w.clients.len()]);
            let cfg = self.base.at(&step);
            // The default suite's values are in its templates: made again at each -d.
            let rebuilt;
            let case = if self.base.sweep.datasizes.len() > 1 && self.base.command.is_empty() {
                rebuilt = cases(&cfg, &self.stop, &mut |w| obs.message(w))?
                    .into_iter()
                    .nth(test_no as usize)
                    .ok_or(Error::Tests("a sweep lost a test".into()))?;
                &rebuilt
            } else {
                case
            };
            self.cfg = Arc::new(cfg);
            self.step = Some(step);
            let done_before = self.rows.len();
            stop = self.run_rates(test_no, case, obs)?;
            rows.extend(self.rows.drain(done_before..));
            if stop.is_some() {
                break;
            }
        }
        if !self.comparing {
            obs.sweep_done(&rows)?;
        }
        self.cfg = Arc::new(self.base.clone());
        self.step = None;
        Ok(stop)
    }

    /// Runs one case at the current step: each rate step on each backend.
    fn run_rates(
        &mut self,
        test_no: u64,
        case: &Case,
        obs: &mut dyn Observer,
    ) -> Result<Option<Ended>, Error> {
        let steps: Vec<Option<u64>> =
            if self.open_loop { self.cfg.open.rates.iter().copied().map(Some).collect() } else { vec![None] };
        // One row per step for the throughput-latency table.
        let mut table: Vec<TestResult> = Vec::new();
        let mut stop = None;
        self.prepare(test_no, case, obs)?;
        if let Some(at) = self.start_at.take() {
            if let Some(end) = self.wait_for_start(&at, obs) {
                return Ok(Some(end));
            }
        }
        for rate in steps {
            let ran = self.run_step(test_no, case, rate, obs)?;
            obs.step_done(&StepDone {
                cfg: &self.cfg,
                base: &self.base,
                case,
                step: self.step.as_ref(),
                runs: &ran,
            })?;
            let failed = ran.iter().any(|r| !r.failures.is_empty());
            if !self.comparing {
                table.extend(ran.into_iter().flat_map(|r| r.results));
            }
            if failed {
                stop = Some(Ended::ConnectionsFailed);
            } else if self.stop.requested() {
                stop = Some(Ended::Interrupted);
            }
            if stop.is_some() {
                break;
            }
        }
        if self.open_loop && !self.comparing {
            obs.rates_done(&self.cfg, &table)?;
        }
        Ok(stop)
    }

    /// What a case needs before its first step: `--preload`'s writes, the library `fcall` calls.
    fn prepare(&mut self, test_no: u64, case: &Case, obs: &mut dyn Observer) -> Result<(), Error> {
        let groups = std::mem::take(&mut self.groups);
        let prepared = match groups.is_empty() {
            true => self.prepare_part(test_no, &Arc::clone(&self.cfg), case, obs),
            // A scenario: each group's own keys, before the groups start.
            false => groups.iter().enumerate().try_for_each(|(k, g)| {
                self.prepare_part(Part::test_no(test_no, k), &Arc::new(g.cfg.clone()), &g.case, obs)
            }),
        };
        self.groups = groups;
        prepared
    }

    /// [`Session::prepare`] for one group.
    fn prepare_part(
        &mut self,
        test_no: u64,
        cfg: &Arc<Config>,
        case: &Case,
        obs: &mut dyn Observer,
    ) -> Result<(), Error> {
        if cfg.preload {
            // Once per test and value size: a sweep's other parameters leave the keys as they are.
            let done = self.preloaded.as_ref().is_some_and(|(t, v)| *t == test_no && *v == cfg.values);
            if let Some(fill) = preload_case(cfg, case).filter(|_| !done) {
                self.preload(cfg, test_no, &fill, obs)?;
                self.preloaded = Some((test_no, cfg.values.clone()));
            }
        }
        if case.spec.title == respbench_core::suite::FCALL_TITLE && cfg.command.is_empty() {
            // valkey-benchmark's fcall test calls foo1 of a library it loads first.
            server::load_library(&self.server, &respbench_core::suite::function_library(1, true))?;
        }
        Ok(())
    }

    /// The server's sampler for a test: every node of the run, each `--server-interval`
    /// (`--no-server-probe`: none).
    fn sampler(&self) -> Option<crate::sampler::Sampler> {
        if self.cfg.no_server_probe {
            return None;
        }
        let nodes = run_nodes(&self.cfg, &self.server, self.multi.as_deref())
            .into_iter()
            .map(|(address, server)| {
                let local = is_local(&server.endpoint);
                (address, server, local)
            })
            .collect();
        Some(crate::sampler::Sampler::new(nodes, self.cfg.server_interval))
    }

    /// `--start-at`: sleeps until the instant less the warmup, so that the first measured window
    /// begins at it; warns when that had passed already, and records by how much.
    /// `Some(Interrupted)` when a stop came first.
    fn wait_for_start(&mut self, at: &StartAt, obs: &mut dyn Observer) -> Option<Ended> {
        let target = at.time().checked_sub(self.cfg.open.warmup).unwrap_or(SystemTime::UNIX_EPOCH);
        let now = SystemTime::now();
        match now.duration_since(target) {
            Ok(late) => {
                self.late_by_s = Some(self.late_by_s.unwrap_or(0.0).max(late.as_secs_f64()));
                let before = if self.cfg.open.warmup.is_zero() { "" } else { " less the --warmup" };
                obs.message(&format!(
                    "WARNING: --start-at {}: this process was ready {:.3} s after the instant{before} had \
                     passed, so its measured window begins late (late_by_s in the JSON)",
                    at.text,
                    late.as_secs_f64()
                ));
            }
            Err(e) => {
                self.late_by_s = Some(self.late_by_s.unwrap_or(0.0));
                let before = if self.cfg.open.warmup.is_zero() { "" } else { " (less the --warmup)" };
                obs.notice(&format!(
                    "--start-at {}: waiting {:.1} s for the instant{before}, Unix {:.3}, to begin the \
                     measured window",
                    at.text,
                    e.duration().as_secs_f64(),
                    at.unix_us as f64 / 1e6
                ));
                // In short sleeps, so that a stop is heard.
                while let Ok(left) = target.duration_since(SystemTime::now()) {
                    if self.stop.requested() {
                        return Some(Ended::Interrupted);
                    }
                    std::thread::sleep(left.min(Duration::from_millis(100)));
                }
            }
        }
        None
    }

    /// `--preload`: runs `fill` (SET over the whole keyspace, sequential keys, pipelined) on
    /// the first backend, unmeasured, and says what it wrote.
    fn preload(
        &mut self,
        cfg: &Config,
        test_no: u64,
        fill: &Case,
        obs: &mut dyn Observer,
    ) -> Result<(), Error> {
        // A worker writes its own part of the keyspace.
        let keys = match cfg.split.as_ref().and_then(|s| s.keys) {
            Some((_, n)) => n,
            None => cfg.keyspace.unwrap_or(1),
        };
        let mut fill_cfg = cfg.clone();
        fill_cfg.requests = keys;
        fill_cfg.key_dist = respbench_core::dist::KeyDist::Sequential;
        fill_cfg.pipeline = cfg.pipeline.max(PRELOAD_PIPELINE);
        fill_cfg.open = OpenLoopConfig::default();
        fill_cfg.events = Default::default();
        fill_cfg.open.ramp = None;
        let began = Instant::now();
        let shown = format!("--preload {}", fill.spec.title);
        let outcome = self.unmeasured(&fill_cfg, fill, test_no, &shown, obs)?;
        let s = &outcome.stats;
        if let Some((e, n)) = outcome.failures.first() {
            return Err(Error::Preload { failed: *n, error: e.clone() });
        }
        if s.errors.total() > 0 {
            let first = &s.errors.kinds()[0].first_message;
            obs.message(&format!(
                "WARNING: --preload: {} of {keys} writes failed: {first}",
                s.errors.total()
            ));
        }
        obs.message(&format!(
            "preloaded {} key{} ({}, {} in flight per connection) in {:.2} s, not measured",
            s.requests,
            if s.requests == 1 { "" } else { "s" },
            fill.spec.title,
            fill_cfg.pipeline,
            began.elapsed().as_secs_f64()
        ));
        Ok(())
    }
}

/// The run's nodes, by address: the `-h/-p` server, or every node found.
fn run_nodes(cfg: &Config, server: &Server, multi: Option<&Multi>) -> Vec<(String, Server)> {
    match multi {
        Some(m) => {
            m.topology.nodes.iter().map(|n| (n.endpoint.to_string(), server.node(&n.endpoint))).collect()
        }
        None => vec![(cfg.endpoint.to_string(), server.clone())],
    }
}

/// The execution-time probe of the run's nodes: the `-h/-p` server, or every node found.
fn latency_probe(cfg: &Config, server: &Server, multi: Option<&Multi>) -> probe::LatencyProbe {
    let servers = run_nodes(cfg, server, multi);
    let why_not = cfg.no_server_probe.then_some("--no-server-probe: the server's counters are not read");
    probe::LatencyProbe::new(&servers, why_not)
}

/// What the figures of `total` suggest: the client was saturated, most replies were nil, an
/// open-loop target was not reached. `preloadable`: `--preload` would write what the test reads
/// (a GET).
fn findings(cfg: &Config, total: &TestResult, preloadable: bool) -> Vec<Warning> {
    let mut out = Vec::new();
    let name = &total.name;
    // The verdict is in the verbose report and the JSON; a finding only when the figures
    // measure respbench.
    // A client named for its late sends, not its CPU, is the schedule's finding below.
    let saturated = total.cpu.is_some_and(|c| c.saturated());
    if let Some(v) = total.verdict.as_ref().filter(|v| v.side == verdict::Side::Client && saturated) {
        let mut figures = Vec::new();
        if let Some(c) = &total.cpu {
            figures.push(("client_core_share", c.core_share()));
        }
        out.push(Warning { kind: WarningKind::ClientLimited, text: format!("{name}: {}", v.text), figures });
    }
    let s = &total.stats;
    // The default suite pops what its own pushes filled, as redis-benchmark's does: by design,
    // not a finding.
    let suite_pop = cfg.command.is_empty() && matches!(name.as_str(), "SPOP" | "LPOP" | "RPOP" | "ZPOPMIN");
    if s.requests > 0 && s.hit_share() < 0.5 && !suite_pop && !cfg.miss_ok {
        let nil_share = 1.0 - s.hit_share();
        let why = match crate::dataset::miss_why(cfg.keyspace, &cfg.dataset_shapes) {
            Some(why) => format!(" ({why})"),
            None if preloadable && !cfg.preload => " (--preload writes the keys first)".into(),
            None => String::new(),
        };
        out.push(Warning {
            kind: WarningKind::NilReplies,
            text: format!(
                "{name}: {:.1}% of {}: what it read did not exist, so this measured misses{why}",
                nil_share * 100.0,
                if s.arrays > 0 { "the keys it read were missing" } else { "the replies were nil" },
            ),
            figures: vec![("nil_share", nil_share)],
        });
    }
    if let Some(target) = total.target_rps {
        let achieved = total.stats.rps();
        if total.stats.requests > 0 && achieved < 0.95 * target as f64 {
            let window = cfg.clients as u64 * u64::from(cfg.pipeline);
            let in_flight =
                format!("at most {window} requests in flight (-c {} × -P {})", cfg.clients, cfg.pipeline);
            // The cause the verdict measured: more in flight helps only when neither side was
            // saturated.
            let cause = match total.verdict.as_ref().map(|v| v.side) {
                Some(verdict::Side::Server) => format!(
                    "the server was saturated (bottleneck: server), so more connections would not help ({in_flight})"
                ),
                Some(verdict::Side::Client) => format!(
                    "the client was saturated (bottleneck: client): more --threads, or another client machine, \
                     may help ({in_flight})"
                ),
                Some(verdict::Side::Machine) => format!(
                    "the processes on this machine competed for its CPUs (bottleneck: machine): a client on \
                     another machine may help, more connections would not ({in_flight})"
                ),
                Some(verdict::Side::Neither) => format!(
                    "neither side was saturated (bottleneck: neither), so the window limited it: {in_flight}; \
                     more connections or a deeper pipeline may help"
                ),
                Some(verdict::Side::Unknown) | None => format!(
                    "{in_flight}; more connections or a deeper pipeline may help{}",
                    if total.cpu.is_some_and(|c| c.saturated()) { ", and the client is saturated" } else { "" }
                ),
            };
            out.push(Warning {
                kind: WarningKind::RateNotMet,
                text: format!("{name}: target {target} rps not met, achieved {achieved:.0} rps: {cause}"),
                figures: vec![
                    ("target_rps", target as f64),
                    ("achieved_rps", achieved),
                    ("in_flight", window as f64),
                ],
            });
        }
    }
    if let Some(sch) = crate::result::Schedule::of(total).filter(|s| !s.kept()) {
        let why = if sch.late() {
            format!("sent late ({} above {:.3} msec)", sch.describe(), sch.threshold_us() as f64 / 1000.0)
        } else {
            format!("achieved below 99% of the target ({})", sch.describe())
        };
        out.push(Warning {
            kind: WarningKind::ScheduleNotKept,
            text: format!(
                "{name}: the schedule of {} rps was not kept: {why}, achieved {:.0} rps; the corrected latency \
                 counts from the intended times",
                sch.target_rps, sch.achieved_rps
            ),
            figures: vec![
                ("target_rps", sch.target_rps),
                ("achieved_rps", sch.achieved_rps),
                ("lateness_p50_ms", sch.lateness_p50_us as f64 / 1000.0),
                ("lateness_p99_ms", sch.lateness_p99_us as f64 / 1000.0),
                ("lateness_max_ms", sch.lateness_max_us as f64 / 1000.0),
                ("threshold_ms", sch.threshold_us() as f64 / 1000.0),
            ],
        });
    }
    out
}

/// Of a test's connection failures, how many connections never ran a request: those the server
/// turned away (maxclients, protected mode, a refused handshake) and those that could not
/// connect at all.
pub fn never_ran(failures: &[(respbench_core::ConnError, u64)]) -> (u64, u64) {
    use respbench_core::{ConnError, IoOp};
    let mut turned_away = 0;
    let mut unreachable = 0;
    for (e, n) in failures {
        match e {
            ConnError::Refused { .. } | ConnError::Handshake { .. } => turned_away += n,
            ConnError::Io(f) if f.op == IoOp::Connect => unreachable += n,
            _ => {}
        }
    }
    (turned_away, unreachable)
}

/// A connection failure in the server's words: what it refused (maxclients, a handshake).
pub fn refusal(e: &respbench_core::ConnError) -> Option<FirstError> {
    match e {
        respbench_core::ConnError::Refused { message }
        | respbench_core::ConnError::Handshake { message, .. } => {
            Some(FirstError { message: message.clone(), reply: false })
        }
        _ => None,
    }
}

/// A connection failure in respbench's words, for the `Error:` line: with `plain_to_tls` (a
/// plain connection to a port that answered a TLS hello), a reset or close says to add `--tls`.
pub fn failure_words(e: &respbench_core::ConnError, plain_to_tls: bool) -> String {
    use respbench_core::ConnError;
    let hint = plain_to_tls && matches!(e, ConnError::Io(_) | ConnError::Closed { .. });
    format!("{e}{}", if hint { server::TLS_HINT } else { "" })
}

/// Microseconds since the Unix epoch (0 for a clock set before it).
fn unix_micros(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// Whether the server runs on this machine: a Unix socket, or a loopback address.
fn is_local(endpoint: &respbench_core::Endpoint) -> bool {
    match endpoint {
        respbench_core::Endpoint::Unix(_) => true,
        respbench_core::Endpoint::Tcp { host, .. } => {
            host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
        }
    }
}
