//! A day-long run of the real driver on virtual time keeps bounded memory: the per-second series
//! is summarised as the seconds end (core/src/series.rs), so what grows is 64 bytes a second,
//! not a histogram.
//!
//! Measured with a counting allocator over the whole process: the simulation's loop runs on a
//! thread of its own, and this file holds one test, so nothing else allocates meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use respbench_core::template::{KeySpace, Template};
use respbench_core::{Budget, ConnConfig, OpenLoop, Plan, Stop, Time, Workload};
use respbench_driver::sim::{test_run, Server, Sim, SimResult};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn add(n: isize) {
    let v = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(v, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Live bytes now; the most since then is [`peak`].
fn reset_peak() -> isize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

fn peak() -> isize {
    PEAK.load(Ordering::Relaxed)
}

/// An open-loop `GET` at `rate` per second over 2 connections for `length`, with a series.
fn run(rate: f64, length: Duration) -> (SimResult, isize) {
    let plan = Arc::new(Plan {
        seed: 7,
        connections: 2,
        series: true,
        ..Plan::new(
            ConnConfig {
                open_loop: Some(OpenLoop { rate, poisson: false, slack: Duration::ZERO }),
                ..ConnConfig::default()
            },
            Workload {
                template: Template::command(&[b"GET", b"key:__rand_int__"]),
                keys: KeySpace::Random { n: 1000 },
                mix: None,
            },
            Budget::unlimited(),
            Stop::new(Some(Time::ZERO + length), Duration::from_secs(2)),
        )
    });
    let mut server = Server::replying(b"$-1\r\n", Duration::from_micros(100));
    server.parallel = true;
    let before = reset_peak();
    let r =
        Sim::new(test_run(plan, 2), server).give_up_at(Time::ZERO + length + Duration::from_secs(60)).run();
    let r = r.expect("the simulated run");
    (r, peak() - before)
}

#[test]
fn a_simulated_day_stays_under_its_memory_bound() {
    const DAY: u64 = 86_400;
    let (r, day_peak) = run(4.0, Duration::from_secs(DAY));
    assert_eq!(r.outcome.stats.requests, 4 * DAY);
    assert_eq!(r.outcome.stats.series.len() as u64, DAY);
    assert!(
        r.outcome.stats.series.iter().all(|s| s.requests == 4 && s.p50 == 100),
        "every second: 4 requests of 100 µs"
    );
    assert!(r.outcome.stats.recording.is_empty(), "every second was handed to the collector");
    // What a day keeps: its summaries (64 bytes a second: 5.5 MB, in a vector that may have
    // doubled past them), one latency histogram of the test at 3 significant figures, and the
    // few seconds still open. The series of before (a 2-figure histogram each second) would
    // have held 26 KB a second: 2.2 GB.
    let summaries = std::mem::size_of::<respbench_core::stats::Second>() as isize * DAY as isize;
    assert_eq!(summaries, 5_529_600);
    const BOUND: isize = 12 << 20;
    eprintln!("a simulated day at 4 requests per second: peak {day_peak} bytes, bound {BOUND}");
    assert!(day_peak < BOUND, "peak {day_peak} bytes over a simulated day");

    // Ten times the rate for an hour: the memory per second does not follow the rate.
    let (r, hour_peak) = run(40.0, Duration::from_secs(3600));
    assert_eq!(r.outcome.stats.series.len(), 3600);
    eprintln!("a simulated hour at 40 requests per second: peak {hour_peak} bytes");
    assert!(hour_peak < 2 << 20, "peak {hour_peak} bytes over a simulated hour");
}
