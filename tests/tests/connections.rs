//! The cost of connecting, against a real redis-server: the connection set-up figures (verbose
//! block, JSON `connection_setup`) checked against the server's own count of connections
//! (`INFO stats` `total_connections_received`) and its command counts. Each backend opens the
//! sockets and says when a connect starts, so the timed set-up and a socket per batch (`-k 0`)
//! run on every backend; `-t connect` is the suite's, once on mio.

use std::path::Path;
use std::time::Duration;

use respbench_tests::{json_path, parse_verbose, take_document, Output, RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

respbench_tests::backend_tests!(
    every: [setup_is_timed_per_connection, no_keepalive_counts_every_reconnect],
    mio: [connect_test, clients_equal_to_maxclients_run_whole],
);

fn ok(out: &Output) {
    assert!(!out.timed_out && out.status.success(), "{}", out.dump());
}

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

fn connections_received(server: &RedisServer) -> u64 {
    server.info_field("stats", "total_connections_received").and_then(|v| v.parse().ok()).expect("INFO stats")
}

/// Runs `args` against `server` with `--json`; returns the output, the first test's JSON, and
/// how many connections the server received meanwhile, less three: respbench's startup connection
/// (one before the tests, to check AUTH and read `CONFIG GET save`, closed as the test starts),
/// the probe's for the test's end reading, and the `redis-cli` that reads the count afterwards
/// (counted in the figure it reads); and less the server sampler's, which the JSON counts.
fn run(tool: &Tool, server: &RedisServer, args: &[&str]) -> (Output, serde_json::Value, u64) {
    let json = json_path("conn", "run");
    let before = connections_received(server);
    let mut a: Vec<String> = vec!["-p".into(), server.port().to_string()];
    a.extend(args.iter().map(|s| s.to_string()));
    a.extend(["--json".to_string(), json.to_string_lossy().into_owned()]);
    let out = tool.run(&a, T);
    ok(&out);
    let doc = read(&json);
    // The server's sampler's connections are its own too (#51).
    let sampler = doc["tests"][0]["server_sampling"]["connections"].as_u64().unwrap();
    let received = connections_received(server) - before - 3 - sampler;
    (out, doc["tests"][0].clone(), received)
}

fn phase_ms(t: &serde_json::Value, phase: &str, p: &str) -> f64 {
    t["connection_setup"]["phases"][phase]["latency_ms"][p]
        .as_f64()
        .unwrap_or_else(|| panic!("no {phase}.{p} in {}", t["connection_setup"]))
}

/// Keep-alive connections with a `SELECT` handshake: one set-up per client, each phase timed
/// (the handshake is a round trip, so more than nothing), the total at least each phase, and the
/// verbose block printed after the summary with the same count.
fn setup_is_timed_per_connection(tool: Tool) {
    let server = RedisServer::start();
    let (out, t, received) = run(&tool, &server, &["-t", "get", "-n", "2000", "-c", "7", "--dbnum", "3"]);
    let setup = &t["connection_setup"];
    assert_eq!(setup["connections"], 7, "{setup}");
    assert_eq!(received, 7, "the server saw 7 benchmark connections");
    assert!(setup["phases"].get("tls").is_none(), "no TLS phase without TLS: {setup}");
    for phase in ["connect", "handshake", "total"] {
        assert!(phase_ms(&t, phase, "max") > 0.0, "{phase}: {setup}");
    }
    assert!(phase_ms(&t, "total", "max") >= phase_ms(&t, "handshake", "max"), "{setup}");
    assert!(phase_ms(&t, "total", "max") >= phase_ms(&t, "connect", "max"), "{setup}");
    let blocks = parse_verbose(&out.stdout);
    assert_eq!(blocks.len(), 1, "{}", out.dump());
    assert!(out.stdout.contains("  connection setup (msec), 7 connections:\n"), "{}", out.dump());
    for phase in ["connect", "handshake", "total"] {
        assert!(
            out.stdout.lines().any(|l| l.trim_start().starts_with(phase)),
            "no {phase} row\n{}",
            out.dump()
        );
    }
}

/// `-k 0 -P 4`: a connection per batch of four requests, each set up and timed: the JSON's count,
/// `connections_opened` and the server's own count agree, and the block gives the rate.
fn no_keepalive_counts_every_reconnect(tool: Tool) {
    let server = RedisServer::start();
    let (out, t, received) =
        run(&tool, &server, &["-t", "set", "-n", "2000", "-c", "10", "-P", "4", "-k", "0"]);
    assert_eq!(t["requests"], 2000);
    assert_eq!(received, 500, "2000 requests in batches of 4");
    assert_eq!(t["connections_opened"], 500);
    assert_eq!(t["connection_setup"]["connections"], 500, "{}", t["connection_setup"]);
    assert_eq!(server.command_calls("set"), 2000);
    let line = out.stdout.lines().find(|l| l.contains("connection setup (msec), 500 connections, "));
    let rate: f64 = line
        .and_then(|l| l.split(", ").nth(2))
        .and_then(|r| r.split(' ').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no rate in the setup line\n{}", out.dump()));
    let duration = t["duration_s"].as_f64().unwrap();
    assert!((rate - 500.0 / duration).abs() < 0.01 * rate + 0.01, "{rate} per second over {duration} s");
}

/// `-t connect`: every request on a connection of its own, whatever `-P` and `-k` say: the
/// server receives one connection and one PING per request, and the test's rate is its
/// connection rate.
fn connect_test(tool: Tool) {
    let server = RedisServer::start();
    // The harness PINGs a new server until it answers.
    let pings = server.command_calls("ping");
    let (out, t, received) = run(&tool, &server, &["-t", "connect", "-n", "1000", "-c", "5", "-P", "16"]);
    assert_eq!(t["name"], "CONNECT (open, PING, close)");
    assert_eq!(t["requests"], 1000);
    assert_eq!(received, 1000, "one connection per request");
    assert_eq!(server.command_calls("ping") - pings, 1000);
    assert_eq!(t["connection_setup"]["connections"], 1000);
    assert!(out.stdout.contains("  keep alive: 0\n"), "{}", out.dump());
    // Not in the default suite.
    let all = tool.run(&["-p", &server.port().to_string(), "-n", "10", "-q"], T);
    ok(&all);
    assert!(!all.stdout.contains("CONNECT"), "{}", all.dump());
}

/// `-c` equal to the server's `maxclients` (#56 item 10): respbench's startup connection, which
/// the server probe reads over, is closed while the test's connections are open and opened again
/// for the end reading, so all 20 connect and every request is done (it held a slot through the
/// test: one connection was refused and the run exited 1, where redis-benchmark passes). The
/// server's readings are still there (`server_cpu`).
fn clients_equal_to_maxclients_run_whole(tool: Tool) {
    let server = RedisServer::start_with(&[("maxclients", "20")]);
    assert_eq!(server.cli(&["CONFIG", "GET", "maxclients"]).lines().nth(1), Some("20"));
    let (out, t, received) = run(&tool, &server, &["-t", "set", "-n", "2000", "-c", "20"]);
    assert_eq!(t["requests"], 2000, "{t}");
    assert_eq!(server.command_calls("set"), 2000);
    assert_eq!(received, 20, "{}", out.dump());
    assert!(!out.stderr.contains("max number of clients"), "{}", out.dump());
    assert!(t["server_cpu"]["cores"].as_f64().is_some(), "the end reading is there: {t}");
}
