//! What a server sees of `-P 16` over a path with a delay (a relay holding each chunk 1 ms each
//! way, `respbench_tests::relay`), against a real redis-server holding a 16 KB value: in batch
//! mode (the default, redis-benchmark's `-P`) every segment the server reads carries one whole
//! batch of 16 GETs, as redis-benchmark's do; in window mode the replies, arriving in pieces,
//! refill the window a few at a time, so segments carry fewer. Each backend writes its own
//! sockets, so the batch check runs on every backend. Counts, not times: the segments are the
//! relay's reads, the requests the server's `INFO commandstats`.

use std::time::Duration;

use respbench_tests::relay::Relay;
use respbench_tests::{redis_benchmark, RedisServer, Tool};

const T: Duration = Duration::from_secs(120);
const DELAY: Duration = Duration::from_millis(1);
/// `-n`: 100 batches of 16.
const N: u64 = 1600;

respbench_tests::backend_tests!(
    every: [batches_reach_the_server_whole, a_window_reaches_it_in_pieces],
    mio: [redis_benchmark_sends_the_same_batches],
);

/// Runs `tool` with `-P 16` GETs of a 16 KB value through a delaying relay, each direction of
/// each connection paced at `bytes_per_sec` (0: no limit); gives the GETs in each segment the
/// server was sent, by connection.
fn through_relay(tool: &Tool, extra: &[&str], bytes_per_sec: u64) -> Vec<Vec<u64>> {
    let server = RedisServer::start();
    server.cli(&["SET", "key:__rand_int__", &"v".repeat(16 * 1024)]);
    let relay = Relay::start_on(0, server.port(), DELAY, bytes_per_sec, true);
    let mut args = vec!["-p".to_string(), relay.port().to_string()];
    let n = N.to_string();
    let common = ["-t", "get", "-n", &n, "-c", "2", "-P", "16", "-q"];
    args.extend(common.iter().chain(extra).map(|s| s.to_string()));
    let out = tool.run(&args, T);
    assert!(!out.timed_out && out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("get"), N);
    let segments = relay.per_chunk("GET");
    assert_eq!(segments.iter().flatten().sum::<u64>(), N, "{segments:?}");
    segments
}

/// Batch mode: 100 segments of 16 GETs, as redis-benchmark sends them (0.0625 reads per
/// request).
fn batches_reach_the_server_whole(tool: Tool) {
    let segments = through_relay(&tool, &["--pipeline-mode", "batch"], 0);
    assert_eq!(segments.len(), 2, "two clients: {segments:?}");
    assert!(segments.iter().flatten().all(|&n| n == 16), "{segments:?}");
}

/// Window mode: the first segment of each connection is its 16, then the window refills as
/// replies land, a few at a time, so there are more segments than batches. The replies come
/// paced at 8 MB/s a connection (a 16 KB reply every 2 ms): unpaced, a client and relay beside
/// two CPU hogs read each window's 16 replies at once and refilled it whole, 100 segments of 16
/// (1 of 2 runs of the suite beside the hogs). The refill one reply at a time, whatever the
/// machine does, is checked on virtual time (driver/tests/sim.rs a_batch_is_one_write_and_the_next_waits_for_all_its_replies: a window of 8 writes 8, then 1 × 12).
fn a_window_reaches_it_in_pieces(tool: Tool) {
    let segments = through_relay(&tool, &["--pipeline-mode", "window"], 8_000_000);
    assert!(segments.iter().all(|s| s[0] == 16), "{segments:?}");
    let count: usize = segments.iter().map(Vec::len).sum();
    eprintln!("window: {count} segments for {N} GETs: {segments:?}");
    assert!(count > (N / 16) as usize, "{count} segments: {segments:?}");
}

/// redis-benchmark's `-P 16` is respbench's batch: every segment one whole batch.
fn redis_benchmark_sends_the_same_batches(_: Tool) {
    let segments = through_relay(&redis_benchmark(), &[], 0);
    assert!(segments.iter().flatten().all(|&n| n == 16), "{segments:?}");
}
