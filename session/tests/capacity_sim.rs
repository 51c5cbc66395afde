//! The capacity search over the driver's simulation, on virtual time: every step is a whole
//! open-loop test through the real driver against a server of known capacity (a fixed service
//! time per request, served one at a time), and the search's answer must lie where queueing
//! theory puts it.

use std::sync::Arc;
use std::time::Duration;

use respbench_core::template::{KeySpace, Template};
use respbench_core::{Budget, ConnConfig, Handshake, OpenLoop, PipelineMode, Plan, Stop, Time, Workload};
use respbench_driver::sim::{test_run, Server, Sim};
use respbench_session::capacity::{
    measure, parse_objectives, Conclusion, Next, Resolution, Role, Search, Settings,
};

/// 100 µs per request: the server's capacity is exactly 10,000 per second.
const SERVICE: Duration = Duration::from_micros(100);
const CAPACITY: f64 = 10_000.0;
const CLIENTS: usize = 20;
const WARMUP: Duration = Duration::from_millis(200);
const DURATION: Duration = Duration::from_secs(2);

fn plan(rate: Option<u64>, poisson: bool, seed: u64) -> Arc<Plan> {
    // The probe is closed loop for a number of requests; the steps are timed.
    let budget = if rate.is_some() { Budget::unlimited() } else { Budget::new(20_000) };
    Arc::new(Plan {
        seed,
        connections: CLIENTS as u64,
        measure_from: Time::ZERO + WARMUP,
        ..Plan::new(
            ConnConfig {
                handshake: Handshake::new(None, None, false, 0, false),
                pipeline: 1,
                pipeline_mode: PipelineMode::Batch,
                keepalive: true,
                idle: false,
                // With the wake-up grid a search for p99<=1ms runs on (Config::open_slack: 50 µs).
                open_loop: rate.map(|r| OpenLoop {
                    slack: Duration::from_micros(50),
                    ..OpenLoop::new(r as f64, poisson)
                }),
                request_timeout: None,
                connect_timeout: None,
                reconnect_every: None,
                reconnect: None,
            },
            Workload { template: Template::command(&[b"PING"]), keys: KeySpace::Literal, mix: None },
            budget,
            Stop::new(rate.map(|_| Time::ZERO + WARMUP + DURATION), Duration::from_secs(2)),
        )
    })
}

/// One step (or the probe) through the driver against the fixed-service server.
fn run(rate: Option<u64>, poisson: bool, seed: u64) -> respbench_core::Stats {
    let r =
        Sim::new(test_run(plan(rate, poisson, seed), CLIENTS), Server::fixed_service(b"+PONG\r\n", SERVICE))
            .run()
            .expect("the simulated step");
    assert!(r.outcome.failures.is_empty(), "{:?}", r.outcome.failures);
    r.outcome.stats
}

/// Runs a whole search; returns it and the stats of each step.
fn search(
    slo: &str,
    poisson: bool,
    range: Option<(u64, u64)>,
) -> (respbench_session::capacity::Capacity, usize) {
    let objectives = parse_objectives(slo).unwrap();
    let mut s = Search::new(Settings {
        objectives: objectives.clone(),
        resolution: Resolution::Share(0.02),
        range,
        max_steps: 12,
        probe: Duration::from_secs(1),
        ladder: false,
    });
    let mut seed = 1;
    loop {
        match s.poll() {
            Next::Probe => s.handle_probe(run(None, false, 0).rps()),
            Next::Step { rate, .. } => {
                seed += 1;
                let stats = run(Some(rate), poisson, seed);
                s.handle_step(measure(&objectives, &stats, poisson, 1.0));
            }
            Next::Done => {
                let n = s.steps().len();
                return (s.finish(), n);
            }
        }
    }
}

#[test]
fn the_answer_for_a_loose_objective_lies_below_a_known_capacity() {
    // Poisson arrivals queue (M/D/1): p99 <= 1 ms, ten times the service time, holds up to
    // roughly 80-90% of the capacity and not at it.
    let (c, n) = search("p99<=1ms", true, None);
    let ceiling = c.ceiling.expect("the probe ran");
    // The closed-loop probe finds the capacity (20 connections keep the one thread busy).
    assert!((ceiling - CAPACITY).abs() < CAPACITY * 0.01, "{ceiling}");
    let Conclusion::Met { rate, step, above, confirmed } = c.conclusion else { panic!("{:?}", c.conclusion) };
    assert!(confirmed && n <= 12);
    let share = rate as f64 / CAPACITY;
    assert!((0.7..1.0).contains(&share), "answer {rate} is {share:.2} of the capacity");
    assert!(c.steps[step].passed && c.steps[step].role == Role::Confirm);
    // The step above the answer violated the objective, close above it: within the resolution,
    // or twice it where a noisy confirmation (2 s Poisson steps vary) widened the bracket and
    // the budget ended the bisection.
    let above = &c.steps[above.expect("a step above failed")];
    assert!(!above.passed && above.rate > rate);
    let widened = c.steps.iter().any(|s| s.role == Role::Confirm && !s.passed);
    let width = Resolution::Share(0.02).width(rate) * if widened { 2 } else { 1 };
    assert!(above.rate - rate <= width, "{} vs {rate}", above.rate);
    // Queueing theory as a second measure: with Poisson arrivals and a fixed service time S
    // (M/D/1), the p99 of the time in the system reaches 10 S at a utilisation of about 0.78
    // (Lindley's recursion over 400,000 customers: 0.75 gives 8.9 S, 0.80 gives 11.1 S). The
    // search's answer is there, give or take what 2 s steps and 20 connections add.
    assert!((0.70..=0.85).contains(&share), "answer {rate} is {share:.2} of the capacity; M/D/1 says 0.78");
}

#[test]
fn constant_arrivals_meet_the_objective_up_to_the_capacity() {
    // Evenly spaced arrivals below the capacity never queue (D/D/1): every latency is the
    // service time, so the objective holds nearly to the capacity; above it the schedule
    // cannot be kept and the step fails on its rate or its latency.
    let (c, _) = search("p99<=1ms", false, Some((2_000, 12_000)));
    let Conclusion::Met { rate, above, .. } = c.conclusion else { panic!("{:?}", c.conclusion) };
    let share = rate as f64 / CAPACITY;
    assert!((0.95..=1.0).contains(&share), "{share}");
    assert!(!c.steps[above.unwrap()].passed);
    assert!(c.steps.iter().all(|s| (2_000..=12_000).contains(&s.rate)));
}

#[test]
fn an_objective_below_the_service_time_is_unreachable() {
    let (c, _) = search("p99<=50us", true, Some((500, 8_000)));
    let Conclusion::Unreachable { lowest } = c.conclusion else { panic!("{:?}", c.conclusion) };
    // The lowest rate tried is the range's floor, and its p99 is at least the service time.
    assert_eq!(c.steps[lowest].rate, 500);
    assert!(c.steps[lowest].measured.values_us[0] >= 100.0);
    assert!(c.steps.iter().all(|s| !s.passed));
}
