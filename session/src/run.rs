//! One test on a backend: its plan, the run on a second thread while this one samples the
//! client's CPU and tells the observer how it goes, and `-I`'s idle connections.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use respbench_core::suite::custom;
use respbench_core::template::KeySpace;
use respbench_core::{
    Budget, ConnConfig, ConnError, Handshake, OpenLoop, Outcome, Plan, Stop, Time, Workload,
};
use respbench_driver::{Progress, TestRun, Tls};

use crate::backend::run_backend;
use crate::case::Case;
use crate::config::{Backend, Config, OpenLoopConfig, Replicas};
use crate::cpu::ClientCpu;
use crate::error::Error;
use crate::groups::Part;
use crate::observer::{retitled, Goal, LiveGroup, LiveTest, Observer, StopHandle, Tick};
use crate::result::{EventResult, NodeInfo};
use crate::routing::Multi;
use crate::sampler::{Sampler, ServerSeries};
use crate::server;
use crate::timing::ClientPauses;

/// How often `-I` looks at its connections.
const IDLE_EVERY: Duration = Duration::from_millis(250);

/// What else ran on the client machine during a test: the share of all its CPUs that was busy,
/// and the share of the test respbench's loops waited for a CPU.
pub(crate) type Contention = (Option<f64>, Option<f64>);

/// How often the loops' run delay is read while a test runs: the last reading before the end
/// stands for the test (their threads end with it, and their counts with them).
const WAIT_READ_EVERY: Duration = Duration::from_millis(100);
/// How often the progress line's p99 so far is read (the loops' histograms merged).
const P99_READ_EVERY: Duration = Duration::from_millis(250);

/// What [`run_test`] gives: the outcome (the groups' together), the client's CPU, the
/// contention, the nodes as the test ended, its events, the client's pauses, and each group's
/// outcome when there are several.
pub(crate) struct Ran {
    pub outcome: Outcome,
    pub cpu: ClientCpu,
    pub contention: Contention,
    pub nodes: Vec<NodeInfo>,
    pub events: Vec<EventResult>,
    pub pauses: ClientPauses,
    /// Each group's outcome, in order (empty for one group: the outcome is its).
    pub groups: Vec<Outcome>,
    /// The server's side, second by second, when it was sampled.
    pub server_series: Option<ServerSeries>,
}

/// What a test runs against, made or found before the first: the TLS settings and, over
/// several nodes, the nodes and routes.
#[derive(Clone, Copy)]
pub(crate) struct Against<'a> {
    pub tls: Option<&'a Tls>,
    pub multi: Option<&'a Multi>,
    /// Where `--at`'s commands go.
    pub targets: &'a [crate::fire::Target],
}

pub(crate) fn handshake(cfg: &Config) -> Handshake {
    let mut h = Handshake::new(cfg.user.as_deref(), cfg.password.as_deref(), cfg.tracking, cfg.db, cfg.resp3);
    if cfg.sentinel.is_some() && !cfg.cluster {
        // The Sentinel's addresses are checked as production clients check them: a connection
        // to a server in another role (a primary demoted since, a replica promoted) goes down
        // and asks again, no request sent there.
        h.expect_role("master");
    }
    h
}

/// What every connection of one test (one step) does.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    cfg: &Config,
    multi: Option<&Multi>,
    case: &Case,
    test_no: u64,
    idle: bool,
    rate: Option<u64>,
    measure_from: Time,
    stop_at: Option<Time>,
    ramp_start: Time,
) -> Arc<Plan> {
    let replay = case.replay.as_deref();
    let budget = if idle || cfg.open.duration.is_some() || replay.is_some() {
        Budget::unlimited()
    } else {
        Budget::new(cfg.requests)
    };
    Arc::new(Plan {
        conn: conn_config(cfg, case, idle, rate),
        workload: Workload {
            template: case.spec.template.clone(),
            keys: key_space(cfg),
            // Its commands' sequential keys start again at each test.
            mix: case.mix.as_ref().map(|(m, _)| m.fresh()),
        },
        budget,
        stop: Stop::new(stop_at, cfg.drain_grace),
        // Each test its own streams, all reproducible from --seed.
        seed: cfg.seed.wrapping_add(test_no.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        connections: replay.map_or(cfg.clients, |r| r.mine.len()) as u64,
        measure_from,
        series: !idle && cfg.open.keeps_series(),
        fine: !idle && !cfg.events.is_empty(),
        cluster: multi.and_then(|m| m.cluster(cfg, &case.templates(), &handshake(cfg))).map(|mut c| {
            // `--sentinel --rfr … --reconnect`: requests wait for their node as it moves.
            c.waits = follows_sentinel(cfg, true);
            c
        }),
        // Checked when the tests were made (`case::cases`).
        verify: crate::verify::for_test(cfg, &case.templates()).ok().flatten(),
        ramp: cfg.open.ramp.filter(|_| !idle).map(|r| respbench_core::Ramp { start: ramp_start, ..r }),
        retry: cfg.retry.as_ref().map(|r| r.retry.clone()),
        // Checked when the tests were made (`case::cases`).
        cache_aside: crate::cache_aside::for_test(
            cfg,
            &case.spec.title,
            &case.spec.template,
            case.mix.is_some(),
        )
        .ok()
        .flatten(),
        // `--sentinel --reconnect`, against the primary alone or its replicas too (`--rfr`):
        // requests in flight at a move go again (not with --cache-aside or --follow-cursor,
        // whose go straight into the connection).
        resend: follows_sentinel(cfg, multi.is_some())
            .then_some(())
            .filter(|()| !cfg.open.cache_aside && !cfg.open.follow_cursor)
            .and_then(|()| crate::sentinel::resend(&case.templates())),
    })
}

/// The keys a test's `__rand_int__` draws from: `-r` over `--key-dist`.
fn key_space(cfg: &Config) -> KeySpace {
    match cfg.keyspace {
        None => KeySpace::Literal,
        // A worker's sequential keys go over its own part of the keyspace.
        Some(_) if cfg.key_dist == respbench_core::dist::KeyDist::Sequential && cfg.split.is_some() => {
            let (first, n) = cfg.split.as_ref().and_then(|s| s.keys).unwrap_or_default();
            KeySpace::sequential_range(first, n)
        }
        // Options::check refused a keyspace the distribution cannot take.
        Some(n) => cfg.key_dist.space(n).unwrap_or(KeySpace::Random { n }),
    }
}

/// What each connection of a test does on the wire: its handshake, pipeline, schedule (`rate`
/// shared over the connections, or a replay's recorded instants), timeout and reconnection.
fn conn_config(cfg: &Config, case: &Case, idle: bool, rate: Option<u64>) -> ConnConfig {
    // The core shares the total rate evenly over the connections.
    let mut open_loop =
        rate.map(|r| OpenLoop { slack: cfg.open_slack(r), ..OpenLoop::new(r as f64, cfg.open.poisson) });
    let replay = case.replay.as_deref();
    if let Some(r) = replay {
        // The schedule is the recorded instants: each record says when it is due.
        open_loop =
            Some(OpenLoop { rate: r.recorded_rate().max(1.0), poisson: false, slack: Duration::ZERO });
    }
    ConnConfig {
        handshake: handshake(cfg),
        // The connect test: one request per connection.
        pipeline: match replay {
            Some(_) => cfg.pipeline.max(crate::replay::WINDOW),
            None if case.spec.connection_per_request => 1,
            None => cfg.pipeline,
        },
        // A replay sends what is due whatever is still unanswered, up to its window.
        pipeline_mode: if replay.is_some() {
            respbench_core::PipelineMode::Window
        } else {
            cfg.pipeline_mode
        },
        keepalive: cfg.keepalive && !case.spec.connection_per_request,
        reconnect_every: cfg.reconnect_every.filter(|&n| {
            n > 0 && replay.is_none() && !idle && rate.is_none() && !case.spec.connection_per_request
        }),
        idle,
        open_loop,
        request_timeout: cfg.timeout,
        connect_timeout: cfg.connect_timeout,
        reconnect: cfg.reconnect.then_some(cfg.reconnect_backoff),
    }
}

/// Where a delivery test's subscribers connect: the run's server, or, over a cluster, the
/// primary that owns the slot of `key` (a sharded channel, a list, a stream).
fn delivery_server(cfg: &Config, against: Against<'_>, key: Option<&[u8]>) -> server::Server {
    let s = server::Server::new(cfg, against.tls.cloned());
    let (Some(key), Some(m)) = (key, against.multi) else { return s };
    let slot = respbench_core::cluster::key_slot(key);
    let owner =
        m.topology.nodes.iter().find(|n| n.primary && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b));
    match owner {
        Some(n) => s.node(&n.endpoint),
        None => s,
    }
}

/// What one test runs: its groups (a command line's one), on which backend, and how it is told.
pub(crate) struct Test<'a> {
    /// The run's options (its phases, events and outputs).
    pub cfg: &'a Config,
    /// The groups, each its own connections and plan.
    pub parts: &'a [Part<'a>],
    pub backend: Backend,
    pub test_no: u64,
    /// The tag the seconds the loops close are told under, when the observer keeps them.
    pub hlog: Option<&'a str>,
}

/// Runs one test on `backend` while this thread tells `obs` how it goes and watches for a stop;
/// measures the process's CPU meanwhile. valkey-benchmark's --warmup first: its requests are
/// extra, sent for that long before the measured -n (or --duration), and not recorded.
pub(crate) fn run_test(
    t: &Test<'_>,
    against: Against<'_>,
    epoch: Instant,
    obs: &mut dyn Observer,
    stop: &StopHandle,
    ramp: Option<&mut crate::ramp::Watch<'_>>,
    sampler: Option<Sampler>,
) -> Result<Ran, Error> {
    if t.cfg.open.warmup.is_zero() {
        return measure(t, against, epoch, obs, stop, ramp, sampler);
    }
    let length = t.cfg.open.warmup;
    let warm = |c: &Config| {
        let mut w = c.clone();
        w.open.warmup = Duration::ZERO;
        w.open.duration = Some(length);
        w.open.live = false;
        w.open.show_series = false;
        // The events come in the measured window.
        w.events = Default::default();
        w
    };
    let measured = |c: &Config| Config {
        open: OpenLoopConfig { warmup: Duration::ZERO, ..c.open.clone() },
        ..c.clone()
    };
    let phase = |of: &dyn Fn(&Config) -> Config| -> (Config, Vec<Config>) {
        (of(t.cfg), t.parts.iter().map(|p| of(p.cfg)).collect())
    };
    fn with<'a>(parts: &[Part<'a>], cfgs: &'a [Config]) -> Vec<Part<'a>> {
        parts.iter().zip(cfgs).map(|(p, cfg)| Part { cfg, ..*p }).collect()
    }
    let (warm_cfg, warm_parts) = phase(&warm);
    let parts = with(t.parts, &warm_parts);
    // Its progress line says it is the warm-up.
    let title = &t.parts[0].case.spec.title;
    let shown = format!("{title} (warmup)");
    let mut warming = retitled(&mut *obs, &shown, title);
    let test = Test { cfg: &warm_cfg, parts: &parts, hlog: None, ..*t };
    let warmed = measure(&test, against, epoch, &mut warming, stop, None, None)?;
    if !warmed.outcome.failures.is_empty() || stop.requested() {
        return Ok(warmed);
    }
    let (measured_cfg, measured_parts) = phase(&measured);
    let parts = with(t.parts, &measured_parts);
    measure(&Test { cfg: &measured_cfg, parts: &parts, ..*t }, against, epoch, obs, stop, ramp, sampler)
}

/// `-t expiry` and `-t tracking`: timed notifications, on connections of their own (not the
/// loops'); `None` for any other test.
fn notifications(
    t: &Test<'_>,
    against: Against<'_>,
    epoch: Instant,
    stop: &StopHandle,
) -> Result<Option<Ran>, Error> {
    let (cfg, title, rate) = (t.cfg, t.parts[0].case.spec.title.as_str(), t.parts[0].rate);
    let run: RunNotify = if title == respbench_core::expiry::EXPIRY_TITLE {
        crate::expiry::run
    } else if title == respbench_core::tracking::TRACKING_TITLE {
        crate::tracking::run
    } else {
        return Ok(None);
    };
    let (outcome, cpu) = run(cfg, against.tls, rate, epoch, stop, against.multi)?;
    let pauses = pauses(&Progress::default());
    let contention = (None, None);
    Ok(Some(Ran {
        outcome,
        cpu,
        contention,
        nodes: Vec::new(),
        events: Vec::new(),
        pauses,
        groups: Vec::new(),
        server_series: None,
    }))
}

/// What `-t expiry` and `-t tracking` run: the options, TLS, `--rps`, the epoch, the stop, the
/// nodes found at startup.
type RunNotify = fn(
    &Config,
    Option<&Tls>,
    Option<u64>,
    Instant,
    &StopHandle,
    Option<&Multi>,
) -> Result<(Outcome, ClientCpu), Error>;

/// A delivery test (`-t pubsub`): its subscribers, listening before the publishers start.
fn start_subscribers(
    cfg: &Config,
    against: Against<'_>,
    case: &Case,
    epoch: Instant,
) -> Result<Option<crate::deliver::Subscribers>, Error> {
    use crate::deliver::Waiting;
    use respbench_core::suite as rs;
    if case.spec.template.stamp_at().is_none() {
        return Ok(None);
    }
    let title = &case.spec.title;
    let (list, stream) = (title.starts_with(rs::BLPOP_TITLE), title.starts_with(rs::STREAM_TITLE));
    let waited = match (list, stream) {
        (true, _) => rs::BLPOP_KEY,
        (_, true) => rs::STREAM_KEY,
        _ => rs::PUBSUB_CHANNEL,
    };
    let waited = format!("{}{waited}", cfg.key_prefix);
    let channel_base = format!("{waited}:");
    let sharded = title.starts_with(rs::SHARDED_TITLE);
    let waiting = match (list, stream) {
        (true, _) => Waiting::List(waited.as_bytes()),
        (_, true) => Waiting::Stream(waited.as_bytes(), rs::STREAM_GROUP.as_bytes()),
        _ if cfg.open.channels > 1 => Waiting::Channels(channel_base.as_bytes(), cfg.open.channels),
        _ => Waiting::Channel(waited.as_bytes(), sharded),
    };
    Ok(Some(crate::deliver::Subscribers::start(
        &delivery_server(cfg, against, (sharded || cfg.cluster).then_some(waited.as_bytes())),
        waiting,
        case.listeners(cfg),
        cfg.resp3,
        cfg.precision,
        epoch,
        cfg.reconnect.then_some(cfg.reconnect_backoff),
    )?))
}

/// Each group's run: its plan (its own streams of the seed), connections and loops, all
/// stopping at `stop_at`.
fn test_runs(
    t: &Test<'_>,
    against: Against<'_>,
    origin: Option<Time>,
    stop_at: Option<Time>,
    ramp_start: Time,
) -> Vec<TestRun> {
    let cfg = t.cfg;
    let runs = t.parts.iter().enumerate().map(|(k, p)| {
        let mut plan = plan(
            p.cfg,
            against.multi,
            p.case,
            Part::test_no(t.test_no, k),
            false,
            p.rate,
            origin.unwrap_or(Time::ZERO),
            stop_at,
            ramp_start,
        );
        if k > 0 {
            // The events' disruption is read from the first group's windows.
            if let Some(plan) = Arc::get_mut(&mut plan) {
                plan.fine = false;
            }
        }
        TestRun {
            plan,
            endpoint: cfg.endpoint.clone(),
            clients: p.case.replay.as_ref().map_or(p.cfg.clients, |r| r.mine.len()),
            threads: p.cfg.threads.max(1),
            sigfig: cfg.precision,
            mptcp: cfg.mptcp,
            progress: Arc::new(Progress::default()),
            locate: cfg.sentinel.as_ref().map(|s| s.locate(cfg.replicas != Replicas::None && !cfg.cluster)),
        }
    });
    runs.collect()
}

/// Whether a run `--sentinel --reconnect` follows the Sentinel's moves: against the primary
/// alone, or (`multi`) its replicas too (`--rfr`; not `--cluster`'s nodes).
fn follows_sentinel(cfg: &Config, multi: bool) -> bool {
    cfg.sentinel.is_some() && cfg.reconnect && !(multi && cfg.cluster)
}

/// A measured test (it has a tag) is told to an output that reads its figures live.
fn announce(t: &Test<'_>, runs: &[TestRun], obs: &mut dyn Observer) {
    let (case, run) = (t.parts[0].case, &runs[0]);
    let commands =
        |case: &Case| case.templates().iter().map(|t| crate::result::command_text(&t.display())).collect();
    runs.iter().for_each(|r| r.progress.keep_figures.store(true, Ordering::Relaxed));
    // A scenario's groups: each its own figures, the test named after the scenario.
    let groups: Vec<LiveGroup<'_>> = match runs.len() {
        1 => Vec::new(),
        _ => t
            .parts
            .iter()
            .zip(runs)
            .map(|(p, r)| LiveGroup {
                name: p.name.unwrap_or_default(),
                commands: commands(p.case),
                target_rps: p.rate.filter(|_| p.cfg.open.ramp.is_none()),
                progress: &r.progress,
            })
            .collect(),
    };
    let scenario = (!groups.is_empty()).then(|| crate::groups::scenario_title(t.cfg));
    let title = scenario.as_deref().unwrap_or(&case.spec.title);
    let nodes = run.plan.cluster.as_ref().map(|c| c.nodes.iter().map(|n| n.endpoint.to_string()).collect());
    obs.live_test(&LiveTest {
        title,
        label: scenario.as_deref().unwrap_or(&case.label),
        commands: if groups.is_empty() { commands(case) } else { Vec::new() },
        backend: t.backend.name(),
        target_rps: t.parts[0].rate,
        ramp: run.plan.ramp.map(|r| r.kind),
        nodes: nodes.unwrap_or_default(),
        progress: &run.progress,
        groups,
    });
}

/// The process's and the machine's CPU, and the loops' waits for one, read around a test.
struct Readings {
    started: Instant,
    cpu_before: (f64, f64),
    machine_before: Option<(u64, u64)>,
    /// The loops' time waiting for a CPU: read while they run (a thread's count goes with it).
    wait_before: Option<u64>,
    wait_last: Option<u64>,
    wait_read: Instant,
}

impl Readings {
    fn start() -> Readings {
        let wait_before = crate::cpu::run_delay_ns("self");
        Readings {
            started: Instant::now(),
            cpu_before: crate::cpu::process_cpu(),
            machine_before: crate::cpu::machine_ticks(),
            wait_before,
            wait_last: wait_before,
            wait_read: Instant::now(),
        }
    }

    /// Reads the loops' run delay, every [`WAIT_READ_EVERY`].
    fn tick(&mut self) {
        if self.wait_read.elapsed() >= WAIT_READ_EVERY {
            self.wait_read = Instant::now();
            self.wait_last = crate::cpu::run_delay_ns("self").or(self.wait_last);
        }
    }

    /// The client's CPU over the test on `loops` event loops, and the contention.
    fn end(&self, loops: usize) -> (ClientCpu, Contention) {
        let cpu =
            ClientCpu::between(self.cpu_before, crate::cpu::process_cpu(), self.started.elapsed(), loops);
        let machine = crate::cpu::machine_busy(self.machine_before, crate::cpu::machine_ticks());
        let waited = self.wait_before.zip(self.wait_last).map(|(a, b)| {
            let capacity = cpu.wall_s * loops as f64;
            if capacity > 0.0 {
                b.saturating_sub(a) as f64 / 1e9 / capacity
            } else {
                0.0
            }
        });
        (cpu, (machine, waited))
    }
}

/// What the steps of one measured test share: the test, what it runs against, its clock and
/// each group's run.
struct Measured<'a> {
    t: &'a Test<'a>,
    against: Against<'a>,
    epoch: Instant,
    /// When the test began: its `--duration` and its events count from here.
    begin: Instant,
    runs: &'a [TestRun],
    /// The tag of the seconds told to an output that keeps them.
    hlog: Option<&'a str>,
}

impl<'a> Measured<'a> {
    /// The first group's run: it carries what one test's outputs read live (groups refuse
    /// them).
    fn run(&self) -> &'a TestRun {
        &self.runs[0]
    }

    /// Tells the seconds every loop has moved past; `end` once the test is over, to cut its
    /// last second short.
    fn log_ended(&self, obs: &mut dyn Observer, end: Option<Time>) -> Result<(), Error> {
        match self.hlog {
            // A scenario's groups: each its own seconds, tagged `TEST.GROUP`.
            Some(tag) if self.runs.len() > 1 => self.runs.iter().zip(self.t.parts).try_for_each(|(r, p)| {
                let ended = r.progress.collector().take_ended();
                obs.intervals(&format!("{tag}.{}", p.name.unwrap_or_default()), &ended, end)
            }),
            Some(tag) => {
                let ended = self.run().progress.collector().take_ended();
                obs.intervals(tag, &ended, end)
            }
            None => Ok(()),
        }
    }
}

/// The measured test: the loops of every group on threads of their own while this one tells
/// `obs` how it goes, hears a stop and marks a ramp's steps.
fn measure(
    t: &Test<'_>,
    against: Against<'_>,
    epoch: Instant,
    obs: &mut dyn Observer,
    stop: &StopHandle,
    ramp: Option<&mut crate::ramp::Watch<'_>>,
    mut sampler: Option<Sampler>,
) -> Result<Ran, Error> {
    let (cfg, case) = (t.cfg, t.parts[0].case);
    if let Some(ran) = notifications(t, against, epoch, stop)? {
        return Ok(ran);
    }
    // The server's reading at the start, before any of the test's connections.
    if let Some(s) = &mut sampler {
        s.start(epoch);
    }
    // A scenario's delivery group goes first: its subscribers are the test's.
    let mut subscribers = start_subscribers(t.parts[0].cfg, against, case, epoch)?;
    let begin = Instant::now();
    // A time-based run stops handing out requests at its end; in-flight ones drain (the core's
    // run control).
    let stop_at = cfg.open.duration.map(|d| Time::since(epoch, begin + d));
    // A replay's first record is due once the connections are up; its figures count from then.
    let origin = case.replay.as_ref().map(|_| Time::since(epoch, begin + crate::replay::LEAD));
    let runs = test_runs(t, against, origin, stop_at, Time::since(epoch, begin));
    let hlog = t.hlog.filter(|_| obs.keeps_intervals());
    let m = Measured { t, against, epoch, begin, runs: &runs, hlog };
    keep_live_figures(&m, obs);
    let watch = Watch::start(&m, ramp);
    let reading = match (&case.replay, origin) {
        (Some(r), Some(at)) => Some(crate::replay::Reading::start(r, at)),
        _ => None,
    };
    let beside = Beside { subscribers: &mut subscribers, reading: reading.as_ref() };
    drive(&m, watch, beside, obs, stop, sampler)
}

/// What the loops publish while they run, for the outputs that read it: the p99 so far for a
/// progress line that shows it, the figures for one that reads them live (a measured test, with
/// a tag), the seconds they close, and the events' windows.
fn keep_live_figures(m: &Measured<'_>, obs: &mut dyn Observer) {
    let run = m.run();
    run.progress.keep_latency.store(obs.shows_progress(), Ordering::Relaxed);
    if m.t.hlog.is_some() && obs.keeps_figures() {
        announce(m.t, m.runs, obs);
    }
    if m.hlog.is_some() {
        m.runs.iter().for_each(|r| r.progress.collector().keep_ended());
    }
    if run.plan.fine {
        run.progress.collector().track(&m.t.cfg.events.planned());
    }
}

/// What ends with the test beside its loops, kept by [`measure`] until the loops have stopped:
/// a delivery test's subscribers and a replay's reader.
struct Beside<'b> {
    subscribers: &'b mut Option<crate::deliver::Subscribers>,
    reading: Option<&'b crate::replay::Reading>,
}

/// The threads that run beside the loops, to be joined once they are done: the server's
/// sampling (with its CPU) and `--at`'s events.
struct Helpers<'scope, 'env> {
    sampling: Option<std::thread::ScopedJoinHandle<'scope, (Sampler, (f64, f64))>>,
    /// Tells the sampling thread to stop.
    sampling_done: &'env AtomicBool,
    fired: Option<std::thread::ScopedJoinHandle<'scope, Vec<crate::event::Fired>>>,
}

/// However the test ends, the sampling thread stops with it.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs every group's loops, the server's sampling and `--at`'s events on threads of their own
/// while this one watches, until every group is done; then collects the test.
fn drive(
    m: &Measured<'_>,
    mut watch: Watch<'_, '_>,
    mut beside: Beside<'_>,
    obs: &mut dyn Observer,
    stop: &StopHandle,
    sampler: Option<Sampler>,
) -> Result<Ran, Error> {
    let loops_done = AtomicBool::new(false);
    // The groups whose loops are still running: the events' thread stops waiting at none.
    let left = AtomicUsize::new(m.runs.len());
    let sampling_done = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let sampling = sampler.map(|sampler| spawn_sampling(s, m, sampler, &sampling_done));
        let _done = Done(&sampling_done);
        let fired = spawn_events(s, m, &loops_done);
        let helpers = Helpers { sampling, sampling_done: &sampling_done, fired };
        let (loops_done, left) = (&loops_done, &left);
        for (k, r) in m.runs.iter().enumerate() {
            let (tx, t) = (tx.clone(), m.t);
            let (tls, epoch) = (m.against.tls, m.epoch);
            s.spawn(move || {
                let _ = tx.send((k, run_backend(t.backend, r, tls, epoch)));
                if left.fetch_sub(1, Ordering::Relaxed) == 1 {
                    loops_done.store(true, Ordering::Relaxed);
                }
            });
        }
        drop(tx);
        let mut outcomes: Vec<Option<Outcome>> = m.runs.iter().map(|_| None).collect();
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok((k, result)) => {
                    outcomes[k] = Some(result?);
                    if outcomes.iter().any(Option::is_none) {
                        continue;
                    }
                    let client = watch.end(m);
                    obs.progress_end();
                    let groups = outcomes.drain(..).flatten().collect();
                    return collect(m, groups, client, helpers, &mut beside, obs);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Error::LoopsStopped),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            watch.look(m, obs, stop)?;
        }
    })
}

/// The server's samples, on a thread of their own; its connection opened once the test's are
/// up (a clients ramp's first step's; or one failed, or each request connects anew), so that it
/// takes no slot of the server's maxclients they need. The first group's connections stand for
/// the test's.
fn spawn_sampling<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    m: &Measured<'scope>,
    mut sampler: Sampler,
    done: &'scope AtomicBool,
) -> std::thread::ScopedJoinHandle<'scope, (Sampler, (f64, f64))> {
    let (run, epoch, begin) = (m.run(), m.epoch, m.begin);
    let keepalive = m.t.cfg.keepalive && !m.t.parts[0].case.spec.connection_per_request;
    s.spawn(move || {
        // A ramp of clients: the step's.
        let clients_ramp = run.plan.ramp.is_some_and(|r| r.kind == respbench_core::ramp::RampKind::Clients);
        let ready = || {
            let want = match clients_ramp {
                true => run.progress.ramp_level.load(Ordering::Relaxed),
                false => run.clients as u64,
            };
            !keepalive
                || run.progress.live.load(Ordering::Relaxed) >= want
                || run.progress.failed.load(Ordering::Relaxed) > 0
        };
        let cpu = sampler.run(epoch, begin, done, &ready, &run.progress.server);
        (sampler, cpu)
    })
}

/// `--at`'s events, fired on a thread of their own when the plan tracks their windows.
fn spawn_events<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    m: &Measured<'scope>,
    loops_done: &'scope AtomicBool,
) -> Option<std::thread::ScopedJoinHandle<'scope, Vec<crate::event::Fired>>> {
    let (cfg, run) = (m.t.cfg, m.run());
    // A command may wait, a program run, to the test's end and its grace at least.
    let patience = cfg.open.duration.unwrap_or_default() + cfg.drain_grace + Duration::from_secs(5);
    let firing = crate::fire::Firing {
        events: &cfg.events,
        targets: m.against.targets,
        begin: m.begin,
        epoch: m.epoch,
        progress: &run.progress,
        done: loops_done,
        patience,
    };
    run.plan.fine.then(|| s.spawn(move || crate::fire::fire(&firing)))
}

/// Takes the helpers' CPU (`user`, `sys` seconds) out of the client's: theirs is not the loops'
/// (and so not the verdict's).
fn leave_out(cpu: &mut ClientCpu, (user, sys): (f64, f64)) {
    cpu.user_s = (cpu.user_s - user).max(0.0);
    cpu.sys_s = (cpu.sys_s - sys).max(0.0);
}

/// The test's result once every group's loops are done: their outcomes merged, the server's
/// series, the subscribers' deliveries, the last seconds told, the nodes, the events' costs
/// and the client's pauses.
fn collect(
    m: &Measured<'_>,
    mut groups: Vec<Outcome>,
    (mut cpu, contention): (ClientCpu, Contention),
    mut helpers: Helpers<'_, '_>,
    beside: &mut Beside<'_>,
    obs: &mut dyn Observer,
) -> Result<Ran, Error> {
    let (cfg, run) = (m.t.cfg, m.run());
    let mut o = match groups.len() {
        1 => groups.remove(0),
        _ => crate::groups::merge(&groups)?,
    };
    helpers.sampling_done.store(true, Ordering::Relaxed);
    let server_series = match helpers.sampling.take().map(|h| h.join()) {
        Some(Ok((sampler, used))) => {
            leave_out(&mut cpu, used);
            Some(sampler.finish(m.epoch, o.stats.start))
        }
        _ => None,
    };
    if let Some(subs) = beside.subscribers.take() {
        // Its group's published messages are the first group's requests.
        let used = match groups.first_mut() {
            Some(g) => {
                let used = subs.finish(&mut g.stats, cfg.drain_grace)?;
                o.stats.delivery.clone_from(&g.stats.delivery);
                used
            }
            None => subs.finish(&mut o.stats, cfg.drain_grace)?,
        };
        leave_out(&mut cpu, used);
    }
    if let Some(e) = beside.reading.and_then(crate::replay::Reading::stop) {
        return Err(Error::Tests(e));
    }
    m.log_ended(obs, Some(o.stats.end))?;
    // Over several nodes: the nodes as the test ended, without the room kept for nodes that
    // never appeared.
    let nodes = match (&run.plan.cluster, m.against.multi) {
        (Some(c), Some(multi)) => {
            o.stats.nodes.truncate(c.nodes.len() + o.stats.appeared.len());
            multi.nodes_at_end(c, &o.stats)
        }
        _ => Vec::new(),
    };
    // Joined first: an event sent tells the collector before the tracker is done.
    let events = match helpers.fired.take().map(|h| h.join().unwrap_or_default()) {
        Some(f) => crate::fire::results(&cfg.events, f, run.progress.collector().disruptions(), &o.stats),
        None => Vec::new(),
    };
    let pauses = pauses(&run.progress);
    Ok(Ran { outcome: o, cpu, contention, nodes, events, pauses, groups, server_series })
}

/// What this thread keeps between its looks while the loops run: the CPU readings, a ramp's
/// marks and the step it is at, the live seconds told, the p99 last read and whether a stop
/// was passed on.
struct Watch<'r, 'w> {
    readings: Readings,
    ramp: Option<&'r mut crate::ramp::Watch<'w>>,
    /// The plan's ramp, when its steps are marked.
    ramp_plan: Option<respbench_core::Ramp>,
    next_step: usize,
    /// Each group's seconds told.
    live_told: Vec<usize>,
    p99: Option<u64>,
    p99_read: Instant,
    stop_asked: bool,
    goal: Goal,
}

impl<'r, 'w> Watch<'r, 'w> {
    /// Starts the readings and a ramp's marks: one as the test begins.
    fn start(m: &Measured<'_>, mut ramp: Option<&'r mut crate::ramp::Watch<'w>>) -> Watch<'r, 'w> {
        let t = m.t;
        let goal = match t.cfg.open.duration {
            Some(d) => Goal::Duration(d),
            None => Goal::Requests(t.parts.iter().map(|p| p.cfg.requests).fold(0, u64::saturating_add)),
        };
        let readings = Readings::start();
        // A ramp: a mark as the test begins, as each later step begins, and at its end.
        let ramp_plan = m.run().plan.ramp.filter(|_| ramp.is_some());
        if let Some(w) = ramp.as_deref_mut() {
            w.marks.clear();
            w.mark();
        }
        let watch = Watch {
            readings,
            ramp,
            ramp_plan,
            next_step: 1,
            live_told: Vec::new(),
            p99: None,
            p99_read: Instant::now(),
            stop_asked: false,
            goal,
        };
        watch.ramp_live(m, 0);
        watch
    }

    /// What `--metrics` shows of the ramp: the step `k` running and its level.
    fn ramp_live(&self, m: &Measured<'_>, k: usize) {
        if let Some(r) = self.ramp_plan {
            m.run().progress.ramp_step.store(k as u64 + 1, Ordering::Relaxed);
            m.run().progress.ramp_level.store(r.level(k), Ordering::Relaxed);
        }
    }

    /// Every group is done: a ramp's last mark, and the client's CPU and contention.
    fn end(&mut self, m: &Measured<'_>) -> (ClientCpu, Contention) {
        if let Some(w) = self.ramp.as_deref_mut() {
            w.mark();
        }
        self.readings.end(m.runs.iter().map(TestRun::loops).sum())
    }

    /// One look while the loops run: the seconds they closed, a ramp's steps begun, the run
    /// delay, a stop asked for, the live seconds and the progress line.
    fn look(&mut self, m: &Measured<'_>, obs: &mut dyn Observer, stop: &StopHandle) -> Result<(), Error> {
        // A file that cannot be written ends the run like a failed test, keeping its results.
        m.log_ended(obs, None)?;
        let run = m.run();
        if let (Some(r), Some(_)) = (self.ramp_plan, self.ramp.as_ref()) {
            let now = Time::since(m.epoch, Instant::now());
            while self.next_step < r.steps()
                && r.step_start(self.next_step) <= now
                && !run.plan.stop.is_due(now)
            {
                if let Some(w) = self.ramp.as_deref_mut() {
                    w.mark();
                }
                self.ramp_live(m, self.next_step);
                self.next_step += 1;
            }
        }
        self.readings.tick();
        if !self.stop_asked && stop.requested() {
            // Ctrl-C: the core stops handing out requests and abandons what is still
            // unanswered after the grace.
            let now = Time::since(m.epoch, Instant::now());
            m.runs.iter().for_each(|r| r.plan.stop.request(now));
            self.stop_asked = true;
        }
        if m.t.cfg.open.live {
            self.tell_seconds(m, obs);
        }
        self.tell_progress(m, obs);
        Ok(())
    }

    /// `--live`: a second is summarised once every loop has moved past it (they publish every
    /// 50 ms). Only whole seconds: the one the test ends in closes with the loops and is partial.
    /// A scenario's groups: a line each, titled `TEST/GROUP`.
    fn tell_seconds(&mut self, m: &Measured<'_>, obs: &mut dyn Observer) {
        let whole = m.begin.elapsed().as_secs() as usize;
        self.live_told.resize(m.runs.len(), 0);
        let scenario = (m.runs.len() > 1).then(|| crate::groups::scenario_title(m.t.cfg));
        for ((run, part), told) in m.runs.iter().zip(m.t.parts).zip(&mut self.live_told) {
            let series = run.progress.collector();
            while let Some(s) = series.seconds.get(*told).filter(|_| *told < whole) {
                let title: std::borrow::Cow<'_, str> = match &scenario {
                    Some(test) => format!("{test}/{}", part.name.unwrap_or_default()).into(),
                    None => part.case.spec.title.as_str().into(),
                };
                obs.second(&title, *told, s);
                *told += 1;
            }
        }
    }

    /// The progress line: the groups' requests so far, and the p99 so far (one group's).
    fn tell_progress(&mut self, m: &Measured<'_>, obs: &mut dyn Observer) {
        if self.p99_read.elapsed() >= P99_READ_EVERY {
            self.p99_read = Instant::now();
            self.p99 = m.run().progress.latency_percentile(99.0).filter(|_| m.runs.len() == 1);
        }
        let sum =
            |f: &dyn Fn(&Progress) -> u64| m.runs.iter().map(|r| f(&r.progress)).fold(0, u64::saturating_add);
        obs.progress(&Tick {
            title: &m.t.parts[0].case.spec.title,
            started: self.readings.started,
            completed: sum(&|p| p.completed.load(Ordering::Relaxed)),
            p99_micros: self.p99,
            goal: self.goal,
        });
    }
}

/// The client machine's pauses the test's idle thread and loops recorded.
fn pauses(progress: &Progress) -> ClientPauses {
    ClientPauses::from(&*progress.pause_figures())
}

/// The client machine's own pauses while respbench does nothing else: the idle thread alone
/// for `length` (the capacity search's floor of what this machine can measure).
pub(crate) fn idle_pauses(length: Duration) -> ClientPauses {
    let progress = Progress::default();
    let done = std::sync::atomic::AtomicBool::new(false);
    let clock = respbench_driver::Clock::Real { epoch: Instant::now() };
    std::thread::scope(|s| {
        s.spawn(|| {
            respbench_driver::fine_timer_slack();
            respbench_driver::watch_pauses(
                &progress,
                &clock,
                respbench_driver::PROBE_PAUSE_INTERVAL,
                &done,
                std::thread::sleep,
            )
        });
        std::thread::sleep(length);
        done.store(true, Ordering::Relaxed);
    });
    pauses(&progress)
}

/// `-I`: opens the connections, tells how many are up and what they cost the server, and waits
/// for a stop. The connections that failed, with how many failed that way.
pub fn idle(
    cfg: &Config,
    tls: Option<Tls>,
    obs: &mut dyn Observer,
    stop: &StopHandle,
) -> Result<Vec<(ConnError, u64)>, Error> {
    let server = server::Server::new(cfg, tls);
    let mut before = server::Footprint::read(&mut server::Conn::authenticated(&server)?)
        .map_err(|e| {
            obs.message(&format!(
                "WARNING: Could not read the server's INFO ({e}): no figures per connection"
            ))
        })
        .ok();
    let spec = custom(&[b"PING".to_vec()]);
    let case = Case { label: spec.title.clone(), spec, mix: None, replay: None, subscribers: None };
    let run = TestRun {
        plan: plan(cfg, None, &case, 0, true, None, Time::ZERO, None, Time::ZERO),
        endpoint: cfg.endpoint.clone(),
        clients: cfg.clients,
        threads: cfg.threads.max(1),
        sigfig: cfg.precision,
        mptcp: cfg.mptcp,
        progress: Arc::new(Progress::default()),
        locate: None,
    };
    let (tx, rx) = mpsc::channel();
    let epoch = Instant::now();
    let result = std::thread::scope(|s| {
        let (run, tls) = (&run, server.tls.as_ref());
        s.spawn(move || {
            let _ = tx.send(run_backend(cfg.backends[0], run, tls, epoch));
        });
        loop {
            match rx.recv_timeout(IDLE_EVERY) {
                Ok(r) => return r,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Error::LoopsStopped),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let live = run.progress.live.load(Ordering::Relaxed);
            obs.idle_clients(live);
            if live == cfg.clients as u64 {
                if let Some(before) = before.take() {
                    obs.idle_footprint(&server::idle_footprint(&server, cfg.clients, before));
                }
            }
            // A connection the server refused (maxclients, AUTH) ends `-I` at once, as the
            // peers' does, instead of waiting on the connections it got.
            if stop.requested() || run.progress.failed.load(Ordering::Relaxed) > 0 {
                run.plan.stop.request(Time::since(epoch, Instant::now()));
            }
        }
    });
    Ok(result?.failures)
}
