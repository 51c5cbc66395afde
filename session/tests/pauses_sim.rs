//! The client machine's own pauses on virtual time (issue #36): the idle thread's recording
//! with scripted pauses, the verdict that names them where a test's tail lies within them, and
//! the capacity search's rules (refusing an objective the machine cannot measure, running a step
//! again whose failure lay within its own pauses). The tests run through the driver's simulation
//! against a server of known service time, with no real clock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use respbench_core::template::{KeySpace, Template};
use respbench_core::{Budget, ConnConfig, Handshake, OpenLoop, Plan, Stop, Time, Workload};
use respbench_driver::sim::{test_run, Server, Sim};
use respbench_driver::{watch_pauses, Clock, Progress, VirtualClock, PAUSE_INTERVAL, PROBE_PAUSE_INTERVAL};
use respbench_session::capacity::{measure, parse_objectives, Next, Resolution, Search, Settings};
use respbench_session::slo::unmeasurable;
use respbench_session::timing::ClientPauses;
use respbench_session::verdict::{name_pauses, verdict, Side};

/// The idle thread alone (its 1 ms interval) on virtual time for `wakes` wake-ups: each sleep
/// moves the clock by the interval, and by `pause(k)` more on the k-th.
fn idle_thread(wakes: u64, pause: impl Fn(u64) -> Duration) -> ClientPauses {
    idle_thread_every(PROBE_PAUSE_INTERVAL, wakes, pause)
}

/// [`idle_thread`] sleeping `interval` at a time.
fn idle_thread_every(interval: Duration, wakes: u64, pause: impl Fn(u64) -> Duration) -> ClientPauses {
    let clock = VirtualClock::new();
    let progress = Progress::default();
    let done = AtomicBool::new(false);
    let mut k = 0;
    watch_pauses(&progress, &Clock::from(&clock), interval, &done, |d| {
        clock.advance_to(clock.now() + d + pause(k));
        k += 1;
        if k == wakes {
            done.store(true, Ordering::Relaxed);
        }
    });
    let p = ClientPauses::from(&*progress.pause_figures());
    p
}

/// During a test the idle thread sleeps 10 ms at a time (issue #55: a wake-up a millisecond cost
/// a pinned run 8% of its CPU): the same pause is recorded at that resolution, held-back wake-ups
/// and all.
#[test]
fn a_test_samples_the_same_pause_at_its_coarser_interval() {
    assert_eq!(PAUSE_INTERVAL, Duration::from_millis(10));
    // 300 wake-ups (3 s), one of them 300 ms late (1.5 s in).
    let p = idle_thread_every(PAUSE_INTERVAL, 300, |k| {
        if k == 150 {
            Duration::from_millis(300)
        } else {
            Duration::ZERO
        }
    });
    assert_eq!(p.wakeups, 300);
    assert_eq!(p.idle.max(), p.idle.highest_equivalent(300_000));
    // 29 held back (290, 280 … 10 ms): 30 of 329 values above 0, as 300 of 3,299 are at 1 ms.
    assert_eq!(p.idle.len(), 300 + 29);
    assert!(p.at(99.0) >= 260_000, "{}", p.at(99.0));
    assert_eq!(p.at(50.0), 0);
    assert_eq!(p.seconds.iter().position(|&s| s == 300_000), Some(1));
    assert!(p.describe().contains("10.0 ms"), "{}", p.describe());
}

#[test]
fn a_scripted_pause_is_recorded_as_jhiccup_records_it() {
    // 3,000 wake-ups, one of them 300 ms late (wake 1,500: 1.5 s in).
    let p = idle_thread(3_000, |k| if k == 1_500 { Duration::from_millis(300) } else { Duration::ZERO });
    assert_eq!(p.wakeups, 3_000);
    assert_eq!(p.idle.max(), p.idle.highest_equivalent(300_000));
    // The 299 wake-ups the pause held back count as what they would have seen: 299, 298 … ms,
    // so 300 of 3,299 values are above 0 and the p99.9 is near 300 ms.
    assert_eq!(p.idle.len(), 3_000 + 299);
    assert!(p.at(99.9) >= 290_000, "{}", p.at(99.9));
    assert_eq!(p.at(50.0), 0);
    // The per-second series holds it in the second it ended in.
    assert_eq!(p.seconds.iter().copied().max(), Some(300_000));
    assert_eq!(p.seconds.iter().position(|&s| s == 300_000), Some(1));
    // And that second's p99: about 700 wake-ups on time and the 300 of the pause (1 to 300 ms),
    // so its tenth-highest, near 290 ms; the seconds without a pause have a p99 of 0.
    assert_eq!(p.seconds_p99.len(), p.seconds.len());
    assert!((285_000..=300_000).contains(&p.seconds_p99[1]), "{:?}", p.seconds_p99);
    assert!(p.seconds_p99.iter().enumerate().all(|(k, &v)| k == 1 || v == 0), "{:?}", p.seconds_p99);
    let max = format!("max {:.1} ms", p.idle.max() as f64 / 1000.0);
    assert!(max.starts_with("max 30") && p.describe().contains(&max), "{}", p.describe());
}

/// What tests/where_time_went ran on the wall clock before (two `yes` hogs pinned to the client's
/// CPU, the pause p99 compared with runs alone: a comparison of wall-clock timings, now in
/// `bench/pauses`), on virtual time: a CPU shared with two busy threads gives the woken idle
/// thread the CPU only when a hog's slice ends, so wake-ups are late by up to a slice (here 0
/// to 5.9 ms, spread evenly). Alone the same thread records no pause; beside them the p99 is in
/// the last slice's tenth, and the report's line says the figures the percentiles give.
#[test]
fn wake_ups_held_back_by_busy_threads_lengthen_the_pause_p99() {
    let alone = idle_thread(3_000, |_| Duration::ZERO);
    assert_eq!((alone.at(99.0), alone.at(99.9)), (0, 0));
    let slice = |k: u64| Duration::from_micros((k * 7_919) % 6_000);
    let beside = idle_thread(3_000, slice);
    let p99 = beside.at(99.0);
    assert!((5_000..=6_000).contains(&p99), "p99 {p99} µs");
    assert!(beside.at(50.0) >= 2_000 && beside.at(50.0) <= 4_000, "p50 {} µs", beside.at(50.0));
    let line = format!(
        "this client's own pauses: p99 {:.2} ms, p99.9 {:.2} ms",
        p99 as f64 / 1000.0,
        beside.at(99.9) as f64 / 1000.0
    );
    assert!(beside.describe().starts_with(&line), "{line}: {}", beside.describe());
}

/// 100 µs per request, one at a time; `stall` (from, to) in which it answers nothing.
fn server(stall: Option<(Duration, Duration)>) -> Server {
    let mut s = Server::fixed_service(b"+PONG\r\n", Duration::from_micros(100));
    if let Some((from, to)) = stall {
        s.stalls.push((Time::ZERO + from, Time::ZERO + to));
    }
    s
}

/// An open-loop step of 1,000 rps for 3 s over 4 clients against `server`.
fn step(rate: u64, server: Server) -> respbench_core::Stats {
    let plan = Arc::new(Plan {
        seed: 7,
        connections: 4,
        ..Plan::new(
            ConnConfig {
                handshake: Handshake::new(None, None, false, 0, false),
                open_loop: Some(OpenLoop::new(rate as f64, false)),
                ..ConnConfig::default()
            },
            Workload { template: Template::command(&[b"PING"]), keys: KeySpace::Literal, mix: None },
            Budget::unlimited(),
            Stop::new(Some(Time::ZERO + Duration::from_secs(3)), Duration::from_secs(2)),
        )
    });
    let r = Sim::new(test_run(plan, 4), server).run().expect("the simulated step");
    assert!(r.outcome.failures.is_empty(), "{:?}", r.outcome.failures);
    r.outcome.stats
}

#[test]
fn the_verdict_names_the_client_where_the_tail_lies_within_its_pauses() {
    // 300 ms in which nothing was answered, 1.5 s in: the tail of the latency.
    let stats = step(1_000, server(Some((Duration::from_millis(1_500), Duration::from_millis(1_800)))));
    let neither = || verdict(None, None, Some("not read"), None, None, 4, None);
    // The client's idle thread stopped for the same 300 ms: the tail lies within its own
    // pauses, and the verdict says so with both figures.
    let paused = idle_thread(3_000, |k| if k == 1_500 { Duration::from_millis(300) } else { Duration::ZERO });
    let mut v = neither();
    name_pauses(&mut v, &stats.latency, &paused);
    assert_eq!(v.side, Side::Client, "{}", v.text);
    assert!(
        v.text.starts_with("the client machine's own pauses set the latency's p99 and p99.9: latency p99 "),
        "{}",
        v.text
    );
    assert!(v.text.contains("against its own p99.9 pause of 29"), "{}", v.text);
    // A quiet client (its thread 20 µs late at most): the same tail is not its own.
    let quiet = idle_thread(3_000, |k| Duration::from_micros(k % 20));
    let mut v = neither();
    name_pauses(&mut v, &stats.latency, &quiet);
    assert_eq!(v.side, Side::Unknown, "{}", v.text);
    assert!(!v.text.contains("pauses"), "{}", v.text);
    // No stall, and pauses far above the latency: the pauses did not reach the requests, so
    // they did not set the tail; they leave it uncertain, and the side stands.
    let calm = step(1_000, server(None));
    let mut v = neither();
    name_pauses(&mut v, &calm.latency, &paused);
    assert_eq!(v.side, Side::Unknown, "{}", v.text);
    assert!(
        v.text.starts_with("the client machine's own pauses did not set the latency's p99"),
        "{}",
        v.text
    );
}

fn settings(slo: &str) -> Settings {
    Settings {
        objectives: parse_objectives(slo).unwrap(),
        resolution: Resolution::Share(0.05),
        range: Some((500, 4_000)),
        max_steps: 8,
        probe: Duration::from_secs(1),
        ladder: false,
    }
}

#[test]
fn an_objective_below_the_machines_own_pauses_is_refused() {
    // A machine whose idle thread oversleeps by 1.4 ms one wake-up in fifty.
    let noisy =
        idle_thread(5_000, |k| if k % 50 == 0 { Duration::from_micros(1_400) } else { Duration::ZERO });
    let p99 = noisy.at(99.0) as f64;
    assert!((1_000.0..=1_500.0).contains(&p99), "{p99}");
    let why = unmeasurable(&settings("p99<=0.9ms").objectives, |p| noisy.at(p) as f64).unwrap();
    assert!(
        why.starts_with("p99<=0.9ms cannot be measured on this client: its own p99 pause is 1.4"),
        "{why}"
    );
    // Above the floor, and at a percentile the pauses do not reach: searched.
    assert_eq!(unmeasurable(&settings("p99<=5ms").objectives, |p| noisy.at(p) as f64), None);
    assert_eq!(unmeasurable(&settings("p50<=0.5ms").objectives, |p| noisy.at(p) as f64), None);
}

#[test]
fn a_step_that_failed_within_its_own_pauses_runs_again() {
    let mut search = Search::new(settings("p99<=1ms"));
    let stall = Some((Duration::from_millis(1_500), Duration::from_millis(1_560)));
    let paused = idle_thread(3_000, |k| if k == 1_500 { Duration::from_millis(60) } else { Duration::ZERO });
    let quiet = idle_thread(3_000, |_| Duration::ZERO);
    let objectives = settings("p99<=1ms").objectives;
    let pauses = |p: &ClientPauses| vec![p.at(99.0) as f64];
    // Step 1 at the top: a 60 ms stall while the client paused as long: run again.
    let Next::Step { rate, .. } = search.poll() else { panic!("a step") };
    assert_eq!(rate, 4_000);
    let first = step(rate, server(stall));
    let m = measure(&objectives, &first, false, 1.0);
    assert!(m.values_us[0] > 1_000.0, "{m:?}");
    search.handle_step_paused(m, &pauses(&paused));
    assert!(search.steps().is_empty());
    assert_eq!(search.poll(), Next::Step { rate: 4_000, role: respbench_session::capacity::Role::Bracket });
    // The second run, undisturbed, passes; its record says it ran twice and why.
    search.handle_step_paused(measure(&objectives, &step(rate, server(None)), false, 1.0), &pauses(&quiet));
    let s = &search.steps()[0];
    assert!(s.passed);
    assert_eq!(s.rerun_after_pause_us, Some(pauses(&paused)[0]));
    // A failure with quiet pauses is the server's: judged at once, not run again.
    let mut search = Search::new(settings("p99<=1ms"));
    let Next::Step { rate, .. } = search.poll() else { panic!("a step") };
    search.handle_step_paused(measure(&objectives, &step(rate, server(stall)), false, 1.0), &pauses(&quiet));
    assert_eq!(search.steps().len(), 1);
    assert!(!search.steps()[0].passed && search.steps()[0].rerun_after_pause_us.is_none());
    // Run again once only: a second failure within the pauses is judged.
    let mut search = Search::new(settings("p99<=1ms"));
    let Next::Step { rate, .. } = search.poll() else { panic!("a step") };
    for _ in 0..2 {
        search.handle_step_paused(
            measure(&objectives, &step(rate, server(stall)), false, 1.0),
            &pauses(&paused),
        );
    }
    assert_eq!(search.steps().len(), 1);
    assert!(!search.steps()[0].passed && search.steps()[0].rerun_after_pause_us.is_some());
}
