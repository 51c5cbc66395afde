//! Where the time went (issue #36), against real servers: the server's own execution time
//! (`LATENCY HISTOGRAM` read around each test) held against what the server says through
//! another door (`INFO commandstats`, read by the test), on one node and per node of a
//! three-primary cluster; its fallbacks and "not known" where the server refuses; and the client
//! machine's own pauses, with respbench stopped for 300 ms mid-run (SIGSTOP, SIGCONT).

use std::time::Duration;

use respbench_tests::cluster::Cluster;
use respbench_tests::{json_path, respbench, respbench_on, take_document, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

respbench_tests::backend_tests!(
    every: [a_client_stopped_for_300_ms_names_its_own_pauses],
    mio: [
        a_sleep_of_known_length_is_in_the_servers_median_bucket,
        a_lua_spin_of_measured_length_is_in_the_servers_median_bucket,
        a_server_that_refuses_gets_fallbacks_then_not_known,
    ],
);

/// `calls` and `usec` of `cmdstat_<command>`, read by the test itself.
fn commandstats(server: &RedisServer, command: &str) -> (u64, u64) {
    let Some(line) = server.info_field("commandstats", &format!("cmdstat_{command}")) else { return (0, 0) };
    let f = |k: &str| line.split(',').find_map(|kv| kv.strip_prefix(k)?.parse::<u64>().ok()).unwrap();
    (f("calls="), f("usec="))
}

/// Runs `tool` against `port` with `args` (the default verbose output) and `--json`; gives the
/// first test's entry and the stdout.
fn run(tool: &Tool, port: u16, args: &[&str]) -> (Value, String) {
    let json = json_path("time", "run");
    let port = port.to_string();
    let mut all = vec!["-p", &port, "--json", json.to_str().unwrap()];
    all.extend(args);
    let out = tool.run(&all, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    let doc: Value = serde_json::from_str(&take_document(&json)).unwrap();
    (doc["tests"][0].clone(), out.stdout)
}

/// The bounds of a `[lower, upper]` bucket.
fn bounds(v: &Value) -> (f64, f64) {
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

/// Holds a node's figures against the server's commandstats: the count, and the median bucket
/// against the mean of the test's calls (`known`, microseconds). Run times only grow by what
/// delays them (a machine that preempts the server), so their distribution leans right and the
/// mean is never below the median's bucket: its lower bound is below the mean (within 3%: the
/// bounds are rounded down to the microsecond). On a quiet machine the mean is inside it; on a
/// busy one (seen: load 13, DEBUG SLEEP 0.001's mean 2.8 ms with its median in 1.06-2.11 ms)
/// the tail pulls it above.
fn check_node(node: &Value, command: &str, calls: u64, known: f64) -> (f64, f64) {
    assert_eq!(node["source"], "latency_histogram", "{node}");
    assert_eq!(node["calls"], calls, "{node}");
    assert_eq!(node["mismatch"], Value::Null, "{node}");
    let c = node["commands"].as_array().unwrap().iter().find(|c| c["command"] == command).unwrap();
    assert_eq!(c["calls"], calls, "{c}");
    let (lo, hi) = bounds(&c["p50_us"]);
    assert!(
        lo < known * 1.03,
        "the server's median bucket ({lo}, {hi}] µs is above the mean of its calls, {known} µs: {c}"
    );
    // The buckets hold every call.
    let sum: u64 = c["buckets"].as_array().unwrap().iter().map(|b| b[1].as_u64().unwrap()).sum();
    assert_eq!(sum, calls, "{c}");
    (lo, hi)
}

/// `DEBUG SLEEP 0.001`: every call takes at least 1 ms; the server's p50 bucket holds the mean
/// commandstats gives for this test's calls, its count is commandstats' count, and the verbose
/// report shows the split.
fn a_sleep_of_known_length_is_in_the_servers_median_bucket(tool: Tool) {
    let server = RedisServer::start_with(&[("enable-debug-command", "yes")]);
    let before = commandstats(&server, "debug");
    let (t, stdout) = run(&tool, server.port(), &["-c", "2", "-n", "300", "DEBUG", "SLEEP", "0.001"]);
    let after = commandstats(&server, "debug");
    let calls = after.0 - before.0;
    assert_eq!(calls, 300);
    let known = (after.1 - before.1) as f64 / calls as f64;
    assert!(known >= 1000.0, "DEBUG SLEEP 0.001 took {known} µs");
    let st = &t["server_time"];
    assert_eq!(st["nodes"].as_array().unwrap().len(), 1, "{st}");
    let (_, hi) = check_node(&st["nodes"][0], "debug", calls, known);
    // No call sleeps less than 1 ms: the median's bucket reaches it.
    assert!(hi >= 1000.0, "{st}");
    assert_eq!(st["nodes"][0]["expected_calls"], 300, "{st}");
    // The split's server part is the same bucket, in ms.
    let split = &t["time_split"];
    let (lo, hi) = bounds(&split["server_ms"][0]);
    assert_eq!((lo * 1000.0, hi * 1000.0), bounds(&st["nodes"][0]["commands"][0]["p50_us"]), "{split}");
    assert!(stdout.contains("server's own execution time (LATENCY HISTOGRAM, this test's calls; command execution inside the server"), "{stdout}");
    assert!(stdout.contains("where the time went") && stdout.contains("= server execution"), "{stdout}");
    // The pauses' line says the document's figures.
    let p = &t["client_pauses"]["idle_ms"];
    let line = format!(
        "this client's own pauses: p99 {:.2} ms, p99.9 {:.2} ms",
        p["p99"].as_f64().unwrap(),
        p["p99_9"].as_f64().unwrap()
    );
    assert!(stdout.contains(&line), "{line}: {stdout}");
    // `respbench plot --charts server`: the client's curve and the server's buckets on one
    // chart, the p50 marker at the bucket's upper bound.
    let doc = json_path("time", "plot");
    std::fs::write(
        &doc,
        serde_json::json!({"schema": "respbench/2", "tool": {"name": "respbench", "version": "0"},
        "config": {}, "server": {}, "interrupted": false, "tests": [t]})
        .to_string(),
    )
    .unwrap();
    let svg = doc.with_extension("svg");
    let plot = ["plot", doc.to_str().unwrap(), "-o", svg.to_str().unwrap(), "--charts", "server"];
    let out = respbench().run(&plot, T);
    assert!(out.status.success(), "{}", out.dump());
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.contains("Client against server") && drawn.contains("server execution (bucket)"),
        "{drawn}"
    );
    let _ = std::fs::remove_file(&doc);
    let _ = std::fs::remove_file(&svg);
}

/// A Lua loop whose length is measured first (its `usec_per_call` from a calibration), sized to
/// sit in the middle of one of the server's buckets (about 1.4 × 264 µs), then run: the p50
/// bucket is not above the mean of the run's calls ([`check_node`]), and respbench's mean is
/// commandstats'.
fn a_lua_spin_of_measured_length_is_in_the_servers_median_bucket(tool: Tool) {
    let server = RedisServer::start();
    let spin = |n: u64| format!("local i=0 while i<{n} do i=i+1 end return i");
    // Calibrated in rounds at the size aimed at (a loop's cost per iteration is not the same at
    // every size, and the first call compiles it).
    let mut n = 20_000u64;
    for _ in 0..3 {
        let script = spin(n);
        server.cli(&["EVAL", &script, "0"]);
        let before = commandstats(&server, "eval");
        for _ in 0..20 {
            server.cli(&["EVAL", &script, "0"]);
        }
        let after = commandstats(&server, "eval");
        let per_call = (after.1 - before.1) as f64 / 20.0;
        n = ((n as f64) * (1.41 * 264.0) / per_call.max(1.0)).max(1.0) as u64;
    }
    let script = spin(n);
    let before = commandstats(&server, "eval");
    let (t, _) = run(&tool, server.port(), &["-c", "1", "-n", "500", "EVAL", &script, "0"]);
    let after = commandstats(&server, "eval");
    let calls = after.0 - before.0;
    assert_eq!(calls, 500);
    let known = (after.1 - before.1) as f64 / calls as f64;
    check_node(&t["server_time"]["nodes"][0], "eval", calls, known);
    let mean = t["server_time"]["nodes"][0]["commands"][0]["usec_per_call"].as_f64().unwrap();
    assert!((mean - known).abs() < 0.01 * known + 0.01, "{mean} against {known}");
}

/// The server refuses `LATENCY`: the figures come from `INFO latencystats` (Redis 7), named;
/// it refuses `INFO` too: "not known" with its words, and the run goes on.
fn a_server_that_refuses_gets_fallbacks_then_not_known(tool: Tool) {
    let server = RedisServer::start_with(&[("rename-command", "LATENCY \"\"")]);
    let (t, stdout) = run(&tool, server.port(), &["-t", "get", "-n", "2000", "-c", "2"]);
    let node = &t["server_time"]["nodes"][0];
    assert_eq!(node["source"], "latencystats", "{node}");
    assert_eq!(node["calls"], 2000, "{node}");
    assert!(node["commands"][0]["since_reset_us"].is_array(), "{node}");
    assert!(stdout.contains("INFO latencystats, since the server's statistics were reset"), "{stdout}");
    drop(server);
    // Renamed rather than removed: two commands cannot both be renamed to `""` on the command line.
    let server = RedisServer::start_with(&[
        ("rename-command", "LATENCY latency-x"),
        ("rename-command", "INFO info-x"),
    ]);
    let (t, stdout) = run(&tool, server.port(), &["-t", "get", "-n", "2000", "-c", "2"]);
    let node = &t["server_time"]["nodes"][0];
    assert_eq!(node["source"], Value::Null, "{node}");
    assert!(node["not_known"].as_str().unwrap().contains("unknown command"), "{node}");
    assert!(stdout.contains("server's own execution time: not known ("), "{stdout}");
}

/// respbench stopped for 300 ms (SIGSTOP, then SIGCONT) in the middle of an open-loop run: its
/// idle thread woke at least 300 ms late, and so did its event loop, and the verdict names the client machine's pauses
/// (the p99.9 latency lies within them) with both figures.
fn a_client_stopped_for_300_ms_names_its_own_pauses(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("time", "stop");
    let port = server.port().to_string();
    // A window of 128 a connection, half a second of arrivals over the 4: a full window asks
    // for no arrival's timer, and the loop stopped then woke on replies with nothing to be
    // late against (CI at -P 1: a latest wake-up 7.7 ms late; beside two CPU hogs at -P 8, 32
    // ms of arrivals a connection, which a starved server holds up: 12.5 ms on io_uring).
    let run = tool.spawn(&[
        "-p",
        &port,
        "--rps",
        "1000",
        "--duration",
        "3",
        "-c",
        "4",
        "-P",
        "128",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "PING",
    ]);
    server.wait_for_calls("ping", 500);
    run.signal("STOP");
    std::thread::sleep(Duration::from_millis(300));
    run.signal("CONT");
    let out = run.wait_lenient(T);
    assert!(out.status.code().is_some(), "{}", out.dump());
    let doc: Value = serde_json::from_str(&take_document(&json)).unwrap();
    let t = &doc["tests"][0];
    let p = &t["client_pauses"];
    // At least the stop, less the idle thread's 10 ms interval (it may have been mid-sleep).
    let max = p["idle_ms"]["max"].as_f64().unwrap();
    assert!(max >= 290.0, "the idle thread's longest pause was {max} ms: {p}");
    let series_max =
        p["series_max_ms"].as_array().unwrap().iter().filter_map(Value::as_f64).fold(0.0, f64::max);
    assert!(series_max >= 290.0, "{p}");
    // Each second's p99: the stop's wake-up and the ones it held back (jHiccup's correction)
    // land in the second it ended in, about 30 of that second's hundred; never above its max.
    let (p99s, maxes) = (p["series_p99_ms"].as_array().unwrap(), p["series_max_ms"].as_array().unwrap());
    assert_eq!(p99s.len(), maxes.len(), "{p}");
    assert!(p99s.iter().zip(maxes).all(|(a, b)| a.as_f64() <= b.as_f64()), "{p}");
    let second_p99 = p99s.iter().filter_map(Value::as_f64).fold(0.0, f64::max);
    assert!(second_p99 >= 200.0, "the stop's second has a pause p99 of {second_p99} ms: {p}");
    // The event loop slept through the stop too: it woke that late against the time it asked
    // for (the next arrival, a few ms after the STOP on a quiet machine; beside two CPU hogs,
    // two builds and the suite, load about 8, the loop had asked for a time 57 ms after it:
    // 242.7 ms late), on every backend.
    // A stop that catches the loop running rather than asleep (beside two CPU hogs the loop is
    // often runnable: its latest wake-up was then 7.4 ms late) is not a late wake-up: its
    // sends are late instead, by the stop (the open loop's lateness, from the intended time).
    let wake = p["wake_ms"]["max"].as_f64().unwrap_or_else(|| panic!("no loop wake-ups: {p}"));
    let late = t["lateness"]["ms"]["max"].as_f64().unwrap_or_else(|| panic!("no send lateness: {t}"));
    assert!(
        wake >= 200.0 || late >= 200.0,
        "the loop's latest wake-up was {wake} ms late and its latest send {late} ms: {p}"
    );
    // The rule, held to the document's own figures: p99.9 latency within 0.5-1.5 x the pause
    // p99.9.
    // The 300 ms stop is both; on a busy machine the loops can wait for a CPU on top of it
    // (seen: send lateness 535 ms), and then the tail is more than the pause and the verdict
    // must not say it is the client's.
    let latency = t["latency_ms"]["p99_9"].as_f64().unwrap();
    let pause = p["idle_ms"]["p99_9"].as_f64().unwrap();
    assert!(pause >= 250.0, "a 300 ms stop in 3 s sets the pause p99.9: {p}");
    let b = &t["bottleneck"];
    let text = b["text"].as_str().unwrap();
    let named = text.contains("the client machine's own pauses set the latency's");
    if (0.5 * pause..=1.5 * pause).contains(&latency) {
        assert!(["client", "machine"].contains(&b["side"].as_str().unwrap()), "{b}");
        assert!(named && text.contains("p99.9"), "latency p99.9 {latency} ms, pause p99.9 {pause} ms: {b}");
    } else {
        assert!(
            !text.contains("pauses set the latency's p99.9")
                && !text.contains("pauses set the latency's p99 and p99.9"),
            "latency p99.9 {latency} ms is outside 0.5-1.5 x the pause p99.9 {pause} ms: {b}"
        );
    }
}

/// The server's count per node of a three-primary cluster equals each node's commandstats,
/// and the test's replies from that node; the merge adds them.
#[test]
fn per_node_server_time_of_a_cluster() {
    let cluster = Cluster::start(3, 0);
    let nodes = &cluster.nodes;
    let before: Vec<(u64, u64)> = nodes.iter().map(|n| commandstats(n, "get")).collect();
    let (t, stdout) =
        run(&respbench_on("mio"), nodes[0].port(), &["--cluster", "-t", "get", "-n", "9000", "-r", "10000"]);
    let st = &t["server_time"];
    let entries = st["nodes"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{st}");
    let mut sum = 0;
    for (node, before) in nodes.iter().zip(&before) {
        let after = commandstats(node, "get");
        let calls = after.0 - before.0;
        let address = format!("127.0.0.1:{}", node.port());
        let e = entries
            .iter()
            .find(|e| e["address"] == address.as_str())
            .unwrap_or_else(|| panic!("{address}: {st}"));
        assert_eq!(e["source"], "latency_histogram", "{e}");
        assert_eq!(e["calls"], calls, "{address}: {e}");
        assert_eq!(e["expected_calls"], calls, "{address}: {e}");
        let replies =
            t["nodes"].as_array().unwrap().iter().find(|n| n["address"] == address.as_str()).unwrap()
                ["requests"]
                .as_u64()
                .unwrap();
        assert_eq!(replies, calls, "{address}");
        sum += calls;
    }
    assert_eq!(sum, 9000);
    assert_eq!(st["merged"][0]["calls"], 9000, "{st}");
    assert!(stdout.contains("all nodes: get: 9000 calls"), "{stdout}");
}
