//! A value too large for memory is refused before the benchmark connects (issue #24), with the
//! size it would need, instead of aborting mid-run when an allocation fails.

use std::time::Duration;

use respbench_tests::{respbench, RedisServer};

/// `-d 100000000 -c 5000`: each connection holds a whole 100 MB request while it sends it, about
/// 500 GB in all, more than a test machine has. Refused with status 1, and the server saw no
/// benchmark connection (the startup connection only).
#[test]
fn a_value_too_large_for_memory_is_refused_before_connecting() {
    let server = RedisServer::start();
    let before: u64 = server.info_field("stats", "total_connections_received").unwrap().parse().unwrap();
    let port = server.port().to_string();
    let out = respbench().run(
        &["-p", &port, "-t", "set", "-d", "100000000", "-c", "5000", "-n", "10"],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr
            .contains("a request of 95.4 MiB (-d) on -c 5000 connections needs about 465.8 GiB of memory"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("lower -d or -c"), "{}", out.dump());
    let after: u64 = server.info_field("stats", "total_connections_received").unwrap().parse().unwrap();
    // The INFO reads of this test are connections too: one each, and the startup connection.
    assert!(after - before <= 2, "{before} → {after}: {}", out.dump());
}

extern "C" {
    fn getrusage(who: i32, usage: *mut [i64; 18]) -> i32;
}
const RUSAGE_CHILDREN: i32 = -1;

/// The peak resident size of the children this test process has waited for, in KiB.
fn children_peak_kib() -> i64 {
    let mut usage = [0i64; 18];
    // SAFETY: getrusage fills a struct rusage: two timevals then fourteen longs, ru_maxrss
    // the first of them.
    assert_eq!(unsafe { getrusage(RUSAGE_CHILDREN, &mut usage) }, 0);
    usage[4]
}

/// `-d 1073741824 -t get,ping`: no request carries a value, so none is made (it was 2.1 GB
/// resident, and built again after every test to ask whether `--preload` applied).
#[test]
fn tests_that_carry_no_value_allocate_none() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench().run(
        &["-p", &port, "-t", "get,ping", "-d", "1073741824", "-n", "1000", "-q"],
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(respbench_tests::parse_quiet(&out.stdout).len(), 3, "{}", out.dump());
    let peak = children_peak_kib();
    assert!(peak < 200_000, "respbench peaked at {peak} KiB for requests of a few bytes");
}
