//! One test on a backend: its plan, the run on a second thread while this one samples the
//! client's CPU and tells the observer how it goes, and `-I`'s idle connections.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use respbench_core::suite::custom;
use respbench_core::template::KeySpace;
use respbench_core::{
    Backoff, Budget, ConnConfig, ConnError, Handshake, OpenLoop, Outcome, Plan, Stop, Time, Workload,
};
use respbench_driver::{Progress, TestRun, Tls};

use crate::backend::run_backend;
use crate::case::Case;
use crate::config::{Backend, Config};
use crate::cpu::ClientCpu;
use crate::observer::{retitled, Goal, LiveTest, Observer, StopHandle, Tick};
use crate::result::{EventResult, NodeInfo};
use crate::routing::Multi;
use crate::sampler::{Sampler, ServerSeries};
use crate::timing::ClientPauses;
use crate::{server, Error};

/// How often `-I` looks at its connections.
const IDLE_EVERY: Duration = Duration::from_millis(250);

/// `--reconnect`'s backoff: the first wait, doubling up to the longest.
const RECONNECT_FIRST: Duration = Duration::from_millis(10);
const RECONNECT_MAX: Duration = Duration::from_secs(1);

/// What else ran on the client machine during a test: the share of all its CPUs that was busy,
/// and the share of the test respbench's loops waited for a CPU.
pub(crate) type Contention = (Option<f64>, Option<f64>);

/// How often the loops' run delay is read while a test runs: the last reading before the end
/// stands for the test (their threads end with it, and their counts with them).
const WAIT_READ_EVERY: Duration = Duration::from_millis(100);
/// How often the progress line's p99 so far is read (the loops' histograms merged).
const P99_READ_EVERY: Duration = Duration::from_millis(250);

/// What [`run_test`] gives: the outcome, the client's CPU, the contention, the nodes as the
/// test ended and its events.
pub(crate) type Ran =
    (Outcome, ClientCpu, Contention, Vec<NodeInfo>, Vec<EventResult>, ClientPauses, Option<ServerSeries>);

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
    Handshake::new(cfg.user.as_deref(), cfg.password.as_deref(), cfg.tracking, cfg.db, cfg.resp3)
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
    let keys = match cfg.keyspace {
        None => KeySpace::Literal,
        // A worker's sequential keys go over its own part of the keyspace.
        Some(_) if cfg.key_dist == respbench_core::dist::KeyDist::Sequential && cfg.split.is_some() => {
            let (first, n) = cfg.split.as_ref().and_then(|s| s.keys).unwrap_or_default();
            KeySpace::sequential_range(first, n)
        }
        // Options::check refused a keyspace the distribution cannot take.
        Some(n) => cfg.key_dist.space(n).unwrap_or(KeySpace::Random { n }),
    };
    // The core shares the total rate evenly over the connections.
    let mut open_loop =
        rate.map(|r| OpenLoop { slack: cfg.open_slack(r), ..OpenLoop::new(r as f64, cfg.open.poisson) });
    let replay = case.replay.as_deref();
    if let Some(r) = replay {
        // The schedule is the recorded instants: each record says when it is due.
        open_loop =
            Some(OpenLoop { rate: r.recorded_rate().max(1.0), poisson: false, slack: Duration::ZERO });
    }
    let budget = if idle || cfg.open.duration.is_some() || replay.is_some() {
        Budget::unlimited()
    } else {
        Budget::new(cfg.requests)
    };
    Arc::new(Plan {
        conn: ConnConfig {
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
            idle,
            open_loop,
            request_timeout: cfg.timeout,
            reconnect: cfg.reconnect.then_some(Backoff { first: RECONNECT_FIRST, max: RECONNECT_MAX }),
        },
        workload: Workload {
            template: case.spec.template.clone(),
            keys,
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
        cluster: multi.and_then(|m| m.cluster(cfg, &case.templates(), &handshake(cfg))),
        // Checked when the tests were made (`case::cases`).
        verify: crate::verify::for_test(cfg, &case.templates()).ok().flatten(),
        ramp: cfg.open.ramp.filter(|_| !idle).map(|r| respbench_core::Ramp { start: ramp_start, ..r }),
    })
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

/// Runs one test on `backend` while this thread tells `obs` how it goes and watches for a stop;
/// measures the process's CPU meanwhile. `hlog`: the tag the seconds the loops close are told
/// under, when the observer keeps them. `sampler`: reads the server through the measured test
/// (its CPU left out of the client's).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_test(
    cfg: &Config,
    against: Against<'_>,
    backend: Backend,
    case: &Case,
    test_no: u64,
    rate: Option<u64>,
    epoch: Instant,
    hlog: Option<&str>,
    obs: &mut dyn Observer,
    stop: &StopHandle,
    mut ramp: Option<&mut crate::ramp::Watch<'_>>,
    mut sampler: Option<Sampler>,
) -> Result<Ran, Error> {
    if !cfg.open.warmup.is_zero() {
        // valkey-benchmark's --warmup: its requests are extra, sent for that long before the
        // measured -n (or --duration), and not recorded.
        let mut warm = cfg.clone();
        warm.open.warmup = Duration::ZERO;
        warm.open.duration = Some(cfg.open.warmup);
        warm.open.live = false;
        warm.open.show_series = false;
        // The events come in the measured window.
        warm.events = Default::default();
        // Its progress line says it is the warm-up.
        let title = format!("{} (warmup)", case.spec.title);
        let mut warming = retitled(&mut *obs, &title, &case.spec.title);
        let warmed = run_test(
            &warm,
            against,
            backend,
            case,
            test_no,
            rate,
            epoch,
            None,
            &mut warming,
            stop,
            None,
            None,
        )?;
        if !warmed.0.failures.is_empty() || stop.requested() {
            return Ok(warmed);
        }
        let mut measured = cfg.clone();
        measured.open.warmup = Duration::ZERO;
        return run_test(
            &measured, against, backend, case, test_no, rate, epoch, hlog, obs, stop, ramp, sampler,
        );
    }
    // The server's reading at the start, before any of the test's connections.
    if let Some(s) = &mut sampler {
        s.start(epoch);
    }
    // A delivery test (`-t pubsub`): its subscribers are listening before the publishers start.
    use respbench_core::suite as rs;
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
    let mut subscribers = match case.spec.template.stamp_at() {
        Some(_) => Some(crate::deliver::Subscribers::start(
            &delivery_server(cfg, against, (sharded || cfg.cluster).then_some(waited.as_bytes())),
            match (list, stream) {
                (true, _) => crate::deliver::Waiting::List(waited.as_bytes()),
                (_, true) => crate::deliver::Waiting::Stream(waited.as_bytes(), rs::STREAM_GROUP.as_bytes()),
                _ if cfg.open.channels > 1 => {
                    crate::deliver::Waiting::Channels(channel_base.as_bytes(), cfg.open.channels)
                }
                _ => crate::deliver::Waiting::Channel(waited.as_bytes(), sharded),
            },
            case.listeners(cfg),
            cfg.resp3,
            cfg.precision,
            epoch,
            cfg.reconnect.then_some(Backoff { first: RECONNECT_FIRST, max: RECONNECT_MAX }),
        )?),
        None => None,
    };
    let begin = Instant::now();
    // A time-based run stops handing out requests at its end; in-flight ones drain (the core's
    // run control).
    let stop_at = cfg.open.duration.map(|d| Time::since(epoch, begin + d));
    let spec = &case.spec;
    // A replay's first record is due once the connections are up; its figures count from then.
    let origin = case.replay.as_ref().map(|_| Time::since(epoch, begin + crate::replay::LEAD));
    let run = TestRun {
        plan: plan(
            cfg,
            against.multi,
            case,
            test_no,
            false,
            rate,
            origin.unwrap_or(Time::ZERO),
            stop_at,
            Time::since(epoch, begin),
        ),
        endpoint: cfg.endpoint.clone(),
        clients: case.replay.as_ref().map_or(cfg.clients, |r| r.mine.len()),
        threads: cfg.threads.max(1),
        sigfig: cfg.precision,
        mptcp: cfg.mptcp,
        progress: Arc::new(Progress::default()),
    };
    // The p99 so far, for a progress line that shows it.
    run.progress.keep_latency.store(obs.shows_progress(), Ordering::Relaxed);
    // A measured test (it has a tag) is told to an output that reads its figures live.
    if hlog.is_some() && obs.keeps_figures() {
        run.progress.keep_figures.store(true, Ordering::Relaxed);
        let commands = case.templates().iter().map(|t| crate::result::command_text(&t.display())).collect();
        let nodes =
            run.plan.cluster.as_ref().map(|c| c.nodes.iter().map(|n| n.endpoint.to_string()).collect());
        obs.live_test(&LiveTest {
            title: &spec.title,
            label: &case.label,
            commands,
            backend: backend.name(),
            target_rps: rate,
            ramp: run.plan.ramp.map(|r| r.kind),
            nodes: nodes.unwrap_or_default(),
            progress: &run.progress,
        });
    }
    let hlog = hlog.filter(|_| obs.keeps_intervals());
    if hlog.is_some() {
        run.progress.collector().keep_ended();
    }
    if run.plan.fine {
        run.progress.collector().track(&cfg.events.planned());
    }
    let loops_done = std::sync::atomic::AtomicBool::new(false);
    // A command may wait, a program run, to the test's end and its grace at least.
    let patience = cfg.open.duration.unwrap_or_default() + cfg.drain_grace + Duration::from_secs(5);
    // Tells the seconds every loop has moved past; `end` once the test is over, to cut its
    // last second short.
    let log_ended = |obs: &mut dyn Observer, end: Option<Time>| -> Result<(), Error> {
        match hlog {
            Some(tag) => {
                let ended = run.progress.collector().take_ended();
                obs.intervals(tag, &ended, end)
            }
            None => Ok(()),
        }
    };
    let mut live_told = 0usize;
    let started = Instant::now();
    let goal = match cfg.open.duration {
        Some(d) => Goal::Duration(d),
        None => Goal::Requests(cfg.requests),
    };
    let (mut p99, mut p99_read) = (None, started);
    let cpu_before = crate::cpu::process_cpu();
    let machine_before = crate::cpu::machine_ticks();
    // The loops' time waiting for a CPU: read while they run (a thread's count goes with it).
    let wait_before = crate::cpu::run_delay_ns("self");
    let mut wait_last = wait_before;
    let mut wait_read = Instant::now();
    let cpu_from = started;
    // A ramp: a mark as the test begins, as each later step begins, and at its end.
    let ramp_plan = run.plan.ramp.filter(|_| ramp.is_some());
    if let Some(w) = ramp.as_deref_mut() {
        w.marks.clear();
        w.mark();
    }
    // What --metrics shows of the ramp: the step running and its level.
    let ramp_live = |k: usize| {
        if let Some(r) = ramp_plan {
            run.progress.ramp_step.store(k as u64 + 1, Ordering::Relaxed);
            run.progress.ramp_level.store(r.level(k), Ordering::Relaxed);
        }
    };
    ramp_live(0);
    let mut next_step = 1usize;
    let (tx, rx) = mpsc::channel();
    let _reading = match (&case.replay, origin) {
        (Some(r), Some(at)) => Some(crate::replay::Reading::start(r, at)),
        _ => None,
    };
    let sampling_done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let run = &run;
        // The server's samples, on a thread of their own; its connection opened once the test's
        // are up (a clients ramp's first step's; or one failed, or each request connects anew),
        // so that it takes no slot of the server's maxclients they need.
        let sampling = sampler.take().map(|mut sampler| {
            let (done, keepalive) = (&sampling_done, cfg.keepalive && !spec.connection_per_request);
            s.spawn(move || {
                // A ramp of clients: the step's.
                let clients_ramp =
                    run.plan.ramp.is_some_and(|r| r.kind == respbench_core::ramp::RampKind::Clients);
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
        });
        let mut sampling = sampling;
        // However this scope ends, the sampling thread stops with it.
        struct Done<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _done = Done(&sampling_done);
        let firing = crate::fire::Firing {
            events: &cfg.events,
            targets: against.targets,
            begin,
            epoch,
            progress: &run.progress,
            done: &loops_done,
            patience,
        };
        let fired = run.plan.fine.then(|| s.spawn(move || crate::fire::fire(&firing)));
        let loops_done = &loops_done;
        s.spawn(move || {
            let _ = tx.send(run_backend(backend, run, against.tls, epoch));
            loops_done.store(true, Ordering::Relaxed);
        });
        let mut fired = fired;
        let mut stop_asked = false;
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(result) => {
                    if let Some(w) = ramp.as_deref_mut() {
                        w.mark();
                    }
                    let mut cpu = ClientCpu::between(
                        cpu_before,
                        crate::cpu::process_cpu(),
                        cpu_from.elapsed(),
                        run.loops(),
                    );
                    obs.progress_end();
                    let machine = crate::cpu::machine_busy(machine_before, crate::cpu::machine_ticks());
                    let waited = wait_before.zip(wait_last).map(|(a, b)| {
                        let capacity = cpu.wall_s * run.loops() as f64;
                        if capacity > 0.0 {
                            b.saturating_sub(a) as f64 / 1e9 / capacity
                        } else {
                            0.0
                        }
                    });
                    let mut o = result?;
                    sampling_done.store(true, Ordering::Relaxed);
                    let series = match sampling.take().map(|h| h.join()) {
                        Some(Ok((sampler, (user, sys)))) => {
                            // The sampling thread's CPU is not the loops'.
                            cpu.user_s = (cpu.user_s - user).max(0.0);
                            cpu.sys_s = (cpu.sys_s - sys).max(0.0);
                            Some(sampler.finish(epoch, o.stats.start))
                        }
                        _ => None,
                    };
                    if let Some(subs) = subscribers.take() {
                        // The subscribers' threads are not the event loops: their CPU is left
                        // out of the client's figure (and so of the verdict).
                        let (user, sys) = subs.finish(&mut o.stats, cfg.drain_grace)?;
                        cpu.user_s = (cpu.user_s - user).max(0.0);
                        cpu.sys_s = (cpu.sys_s - sys).max(0.0);
                    }
                    if let Some(e) = _reading.as_ref().and_then(crate::replay::Reading::stop) {
                        return Err(Error::Tests(e));
                    }
                    log_ended(obs, Some(o.stats.end))?;
                    // Over several nodes: the nodes as the test ended, without the room kept
                    // for nodes that never appeared.
                    let nodes = match (&run.plan.cluster, against.multi) {
                        (Some(c), Some(m)) => {
                            o.stats.nodes.truncate(c.nodes.len() + o.stats.appeared.len());
                            m.nodes_at_end(c, &o.stats)
                        }
                        _ => Vec::new(),
                    };
                    // Joined first: an event sent tells the collector before the tracker is done.
                    let events = match fired.take().map(|h| h.join().unwrap_or_default()) {
                        Some(f) => {
                            let costs = run.progress.collector().disruptions();
                            crate::fire::results(&cfg.events, f, costs, &o.stats)
                        }
                        None => Vec::new(),
                    };
                    return Ok((o, cpu, (machine, waited), nodes, events, pauses(&run.progress), series));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Error::LoopsStopped),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            // A file that cannot be written ends the run like a failed test, keeping its results.
            log_ended(obs, None)?;
            if let (Some(r), Some(w)) = (ramp_plan, ramp.as_deref_mut()) {
                let now = Time::since(epoch, Instant::now());
                while next_step < r.steps() && r.step_start(next_step) <= now && !run.plan.stop.is_due(now) {
                    w.mark();
                    ramp_live(next_step);
                    next_step += 1;
                }
            }
            if wait_read.elapsed() >= WAIT_READ_EVERY {
                wait_read = Instant::now();
                wait_last = crate::cpu::run_delay_ns("self").or(wait_last);
            }
            if !stop_asked && stop.requested() {
                // Ctrl-C: the core stops handing out requests and abandons what is still
                // unanswered after the grace.
                run.plan.stop.request(Time::since(epoch, Instant::now()));
                stop_asked = true;
            }
            if cfg.open.live {
                // A second is summarised once every loop has moved past it (they publish every
                // 50 ms). Only whole seconds: the one the test ends in closes with the loops and
                // is partial.
                let whole = begin.elapsed().as_secs() as usize;
                let series = run.progress.collector();
                while let Some(s) = series.seconds.get(live_told).filter(|_| live_told < whole) {
                    obs.second(&spec.title, live_told, s);
                    live_told += 1;
                }
            }
            if p99_read.elapsed() >= P99_READ_EVERY {
                p99_read = Instant::now();
                p99 = run.progress.latency_percentile(99.0);
            }
            obs.progress(&Tick {
                title: &spec.title,
                started,
                completed: run.progress.completed.load(Ordering::Relaxed),
                latency_sum_micros: run.progress.latency_sum_micros.load(Ordering::Relaxed),
                p99_micros: p99,
                goal,
            });
        }
    })
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
                respbench_driver::PAUSE_INTERVAL,
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
