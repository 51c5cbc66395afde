//! `--reconnect` against a real redis-server that crashes (SIGKILL) and comes back on the same
//! port mid-run: the run goes on to its end, the outage shows in the errors, the per-second
//! series and the downtime, and the exit status says errors happened. A new socket for a
//! connection that went down is each backend's, so the closed-loop crash runs on every backend;
//! the open loop and the run without `--reconnect` once, on mio.

use std::path::Path;
use std::time::Duration;

use respbench_tests::{json_path, take_document, RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

respbench_tests::backend_tests!(
    every: [closed_loop_rides_out_a_crash],
    mio: [open_loop_keeps_its_schedule_through_a_crash, without_reconnect_a_crash_ends_the_run],
);

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

/// Runs `extra` for 4 s against `server` with `--reconnect --json`, crashing the server for
/// `down` once it has served 1000 GETs; returns the exit code, stderr and the first test's JSON.
fn crash_run(
    tool: &Tool,
    server: &mut RedisServer,
    extra: &[&str],
    down: Duration,
) -> (i32, String, serde_json::Value) {
    let json = json_path("rc", "crash");
    let mut args: Vec<String> = vec!["-p".into(), server.port().to_string()];
    args.extend(["-t", "get", "-c", "10", "--duration", "4s", "--reconnect", "-q"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(["--json".to_string(), json.to_string_lossy().into_owned()]);
    let run = tool.spawn(&args);
    server.wait_for_calls("get", 1000);
    server.crash_and_restart(down);
    let out = run.wait(T);
    let doc = read(&json);
    (out.status.code().unwrap_or(-1), format!("{}{}", out.stderr, out.dump()), doc["tests"][0].clone())
}

/// Closed loop: every connection goes down with the server and comes back; the run lasts its
/// 4 s, exits 1, and the JSON counts the outage: a drop per connection, the lost requests as
/// `connection` errors, seconds of downtime (10 connections × about the 0.8 s gap), and a second
/// of the series with fewer replies than the seconds around it.
fn closed_loop_rides_out_a_crash(tool: Tool) {
    let mut server = RedisServer::start();
    let (code, stderr, t) = crash_run(&tool, &mut server, &[], Duration::from_millis(800));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("reconnected (--reconnect)"), "{stderr}");
    let rc = &t["reconnects"];
    assert!(rc["drops"].as_u64().unwrap() >= 10, "every connection dropped once at least: {rc}");
    let lost = rc["lost_requests"].as_u64().unwrap();
    assert_eq!(t["errors"]["connection"].as_u64().unwrap_or(0), lost, "{t}");
    // Each down for the 0.8 s gap at least, and the restart.
    let down = rc["downtime_s"].as_f64().unwrap();
    assert!(down >= 6.0, "10 connections down about 0.8 s each: {down} s");
    let d = t["duration_s"].as_f64().unwrap();
    assert!(d >= 3.5, "the run went on to its end: {d} s");
    // After the restart the server served the rest: its own count since then is a good share.
    assert!(server.command_calls("get") > 100, "requests after the restart");
    // The 0.8 s gap falls in one second or across two: either way a second lacks at least 0.4 s
    // of replies, and later seconds have load again.
    let series: Vec<u64> =
        t["series"].as_array().unwrap().iter().map(|s| s["requests"].as_u64().unwrap()).collect();
    let whole = &series[..series.len().min(4)];
    let (min, max) = (*whole.iter().min().unwrap(), *whole.iter().max().unwrap());
    assert!((min as f64) < 0.7 * max as f64, "a second of the crash has fewer replies: {series:?}");
    // The load came back: the restarted server's own count above.
}

/// Open loop (`--rps 2000`): the schedule goes on through the outage, so the requests due during
/// it wait and the corrected p99 covers the gap, while the service time does not.
fn open_loop_keeps_its_schedule_through_a_crash(tool: Tool) {
    let mut server = RedisServer::start();
    let (code, stderr, t) = crash_run(&tool, &mut server, &["--rps", "2000"], Duration::from_millis(800));
    assert_eq!(code, 1, "{stderr}");
    let p99 = t["latency_ms"]["p99"].as_f64().unwrap();
    let service_p99 = t["service_latency_ms"]["p99"].as_f64().unwrap();
    assert!(p99 >= 400.0, "the corrected p99 covers the 0.8 s gap: {p99} ms\n{stderr}");
    assert!(service_p99 < p99 / 4.0, "service p99 {service_p99} ms, corrected {p99} ms");
    // The schedule went on after the outage: the restarted server was sent its share.
    assert!(server.command_calls("get") > 100, "requests after the restart");
}

/// Without `--reconnect` the same crash ends the run, as before: status 1, the connections'
/// failures named.
fn without_reconnect_a_crash_ends_the_run(tool: Tool) {
    let mut server = RedisServer::start();
    let args: Vec<String> =
        ["-p", &server.port().to_string(), "-t", "get", "-c", "10", "--duration", "4s", "-q"]
            .map(String::from)
            .to_vec();
    let run = tool.spawn(&args);
    server.wait_for_calls("get", 1000);
    server.crash_and_restart(Duration::from_millis(200));
    let out = run.wait(T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("connections failed: "), "{}", out.dump());
    assert!(!out.stderr.contains("--reconnect"), "{}", out.dump());
}
