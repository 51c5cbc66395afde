//! Micro-benchmark of the core's hot path: requests through one `Client` (one node) against an
//! in-memory reply stream, no sockets and no simulated clock.
//!
//! Each round encodes a window of `-P` requests (`poll_transmit` + `advance_transmit`), then feeds
//! exactly their replies in one `handle_input`. Time is a counter that goes up by 1 ns per call.
//! Prints the best of 3 runs in ns per request.
//!
//! Run: `cargo run --release -p respbench-core --example micro`

use std::hint::black_box;
use std::sync::Arc;

use respbench_core::dist::{ValueSize, Zipf};
use respbench_core::template::{Arg, KeySpace, Template, Values};
use respbench_core::{Budget, Client, ConnConfig, Plan, Stats, Stop, Time, Workload};

fn plan(args: &[&[u8]], pipeline: u32) -> Arc<Plan> {
    // `-r 100000`: every request pays for its key substitution.
    with(Template::command(args), KeySpace::Random { n: 100_000 }, pipeline)
}

fn with(template: Template, keys: KeySpace, pipeline: u32) -> Arc<Plan> {
    Arc::new(Plan {
        ..Plan::new(
            ConnConfig {
                pipeline,
                pipeline_mode: respbench_core::PipelineMode::Window,
                ..ConnConfig::default()
            },
            Workload { template, keys, mix: None },
            Budget::unlimited(),
            Stop::new(None, std::time::Duration::ZERO),
        )
    })
}

/// Pushes at least `requests` requests through a fresh connection; returns how many it did.
fn push(plan: &Arc<Plan>, reply: &[u8], requests: u64) -> u64 {
    let pipeline = plan.conn.pipeline as usize;
    let replies = reply.repeat(pipeline);
    let mut stats = Stats::new(Time::ZERO, 3, false).expect("valid precision");
    let mut conn = Client::new(Arc::clone(plan), 0);
    let mut now = 0u64;
    conn.handle_connected(0, Time::from_nanos(now), &mut stats);
    while conn.poll_event(0).is_some() {}
    while stats.requests < requests {
        now += 1;
        while let Some(bytes) = conn.poll_transmit(0, Time::from_nanos(now)) {
            let n = black_box(bytes).len();
            conn.advance_transmit(0, n, Time::from_nanos(now), &mut stats);
        }
        now += 1;
        conn.handle_input(0, &replies, Time::from_nanos(now), &mut stats);
    }
    assert_eq!(conn.in_flight(0), 0, "the reply buffer must answer exactly one window");
    stats.requests
}

/// Best of 3 runs, in ns per request.
// The benchmark itself reads the clock; the core never does.
#[allow(clippy::disallowed_methods)]
fn time(plan: &Arc<Plan>, reply: &[u8], requests: u64) -> f64 {
    (0..3)
        .map(|_| {
            let start = std::time::Instant::now();
            let done = push(plan, reply, requests);
            start.elapsed().as_nanos() as f64 / done as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// A benchmark case: name, command, the reply to one request, `-P`, how many requests.
type Case<'a> = (&'a str, &'a [&'a [u8]], &'a [u8], u32, u64);

fn main() {
    let get: &[&[u8]] = &[b"GET", b"key:__rand_int__"];
    let set: &[&[u8]] = &[b"SET", b"key:__rand_int__", b"xxx"];
    let lrange: &[&[u8]] = &[b"LRANGE", b"mylist", b"0", b"599"];
    let mut lrange_reply = b"*600\r\n".to_vec();
    for _ in 0..600 {
        lrange_reply.extend_from_slice(b"$3\r\nxxx\r\n");
    }
    let cases: [Case; 6] = [
        ("GET", get, b"$3\r\nxxx\r\n", 1, 2_000_000),
        ("GET", get, b"$3\r\nxxx\r\n", 16, 4_000_000),
        ("GET", get, b"$3\r\nxxx\r\n", 128, 8_000_000),
        ("SET", set, b"+OK\r\n", 1, 2_000_000),
        ("SET", set, b"+OK\r\n", 16, 4_000_000),
        ("LRANGE_600", lrange, &lrange_reply, 1, 20_000),
    ];
    // MICRO=NAME runs only the cases whose label starts with NAME (for a profile of one).
    let only = std::env::var("MICRO").unwrap_or_default();
    for (name, args, reply, pipeline, requests) in cases {
        if !format!("{name} -P {pipeline}").starts_with(&only) {
            continue;
        }
        let ns = time(&plan(args, pipeline), reply, requests);
        println!("{name:<14} -P {pipeline:<3} {ns:>9.1} ns/request");
    }
    // respbench's own keys and values: SET with `-d 16-1024`, GET with `--key-dist zipf:0.99`.
    let values = Values::new(&ValueSize::Range { lo: 16, hi: 1024 });
    let set_range =
        Template::with_values(&[Arg::Bytes(b"SET"), Arg::Bytes(b"key:__rand_int__"), Arg::Value], &values);
    let zipf = KeySpace::Zipf(Zipf::new(100_000, 0.99).expect("valid exponent"));
    let extra: [(&str, Template, KeySpace, &[u8]); 2] = [
        ("SET -d 16-1024", set_range, KeySpace::Random { n: 100_000 }, b"+OK\r\n"),
        ("GET zipf:0.99", Template::command(get), zipf, b"$3\r\nxxx\r\n"),
    ];
    for (name, template, keys, reply) in extra {
        for pipeline in [1, 16] {
            if !format!("{name} -P {pipeline}").starts_with(&only) {
                continue;
            }
            let ns = time(&with(template.clone(), keys.clone(), pipeline), reply, 2_000_000);
            println!("{name:<14} -P {pipeline:<3} {ns:>9.1} ns/request");
        }
    }
}
