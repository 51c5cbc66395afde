//! Open loop (`--rps`), time-based runs (`--duration`, `--warmup`) and command mixes against a
//! real redis-server. The schedule's sends are woken by each backend's timers, so the rate
//! steps (exact counts) run on every backend; the rest is the core's and the command line's,
//! once on mio.

use std::path::Path;
use std::thread;
use std::time::Duration;

use respbench_tests::{check_json_independently, json_path, respbench, Output, RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

respbench_tests::backend_tests!(
    every: [rate_steps],
    mio: [
        stall_shows_in_corrected_latency_only,
        duration_and_warmup,
        mix_follows_the_weights,
        live_view,
        the_slack_is_reported_and_can_be_zero
    ],
);

fn args(server: &RedisServer, extra: &[&str], json: &Path) -> Vec<String> {
    let mut a: Vec<String> = vec!["-p".into(), server.port().to_string()];
    a.extend(extra.iter().map(|s| s.to_string()));
    a.push("--json".into());
    a.push(json.to_string_lossy().into_owned());
    a
}

fn ok(out: &Output) {
    assert!(!out.timed_out && out.status.success(), "{}", out.dump());
}

fn read(path: &Path) -> serde_json::Value {
    check_json_independently(path);
    let text = std::fs::read_to_string(path).unwrap();
    let _ = std::fs::remove_file(path);
    serde_json::from_str(&text).unwrap()
}

fn ms(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The server is stopped (SIGSTOP) for one second in the middle of an open-loop run of 20 000
/// requests at 5000 requests/s: a quarter of the requests were due during the stall, so the
/// corrected p99 shows it (hundreds of milliseconds); the service time, from the actual send,
/// does not (only the 20 requests in flight when it began waited through it: 0.1% of them).
fn stall_shows_in_corrected_latency_only(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("ol", "stall");
    let run = tool.spawn(&args(&server, &["-t", "get", "-c", "20", "--rps", "5000", "-n", "20000"], &json));
    server.wait_for_calls("get", 5000);
    server.signal("STOP");
    thread::sleep(Duration::from_secs(1));
    server.signal("CONT");
    let out = run.wait(T);
    ok(&out);
    let doc = read(&json);
    let t = &doc["tests"][0];
    assert_eq!(t["target_rps"], 5000);
    let corrected = ms(&t["latency_ms"]["p99"]);
    let service = ms(&t["service_latency_ms"]["p99"]);
    assert!(corrected >= 400.0, "corrected p99 {corrected} ms does not show a 1 s stall\n{}", out.dump());
    // Relative, so that a loaded machine's own delays, which both include, cannot fail it.
    assert!(service < corrected / 4.0, "service p99 {service} ms shows the stall\n{}", out.dump());
    assert!(ms(&t["service_latency_ms"]["max"]) >= 800.0, "the requests in flight waited through it");
    // The schedule kept going: every request was sent (on virtual time, at its time too:
    // driver/tests/sim.rs an_open_loop_stall_shows_in_corrected_latency_only).
    assert_eq!(t["requests"], 20000, "{t}");
    assert_eq!(server.command_calls("get"), 20000);
    // The time series shows the second of the stall: a second with far fewer replies or a high p99.
    let series = t["series"].as_array().unwrap();
    assert!(series.len() >= 4, "{series:?}");
    assert!(series.iter().any(|s| ms(&s["p99_ms"]) >= 400.0), "{series:?}");
}

/// `--duration 1s --warmup 1s`: the measured interval is one second, the warmup's requests reached
/// the server but are not in the results, and the series has one entry per second.
fn duration_and_warmup(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("ol", "duration");
    let started = std::time::Instant::now();
    let out = tool.run(
        &args(
            &server,
            &["-t", "get", "-c", "4", "--duration", "1s", "--warmup", "1s", "--drain-grace", "500ms", "-q"],
            &json,
        ),
        T,
    );
    ok(&out);
    assert!(started.elapsed() >= Duration::from_secs(2), "warmup and duration take two seconds");
    let doc = read(&json);
    assert_eq!(doc["config"]["duration_s"], 1.0);
    assert_eq!(doc["config"]["warmup_s"], 1.0);
    let t = &doc["tests"][0];
    // The stop itself is exact on virtual time
    // (driver/tests/sim.rs a_duration_stop_drains_what_is_in_flight).
    // Up to the stop and the drain after it, which the grace bounds (and a second for the loops
    // to notice).
    let d = ms(&t["duration_s"]);
    assert!((0.9..2.5).contains(&d), "measured {d} s");
    let recorded = t["requests"].as_u64().unwrap();
    let sent = server.command_calls("get");
    assert!(recorded > 0, "{recorded}");
    // Every reply is recorded but the warmup's (none is abandoned: the server answers).
    assert!(sent > recorded, "the warmup's requests were recorded: {sent} sent, {recorded} recorded");
    let series = t["series"].as_array().unwrap();
    assert!((1..=2).contains(&series.len()), "{series:?}");
    let in_series: u64 = series.iter().map(|s| s["requests"].as_u64().unwrap()).sum();
    assert_eq!(in_series, recorded);
}

/// `--mix set:1,get:3` over 20 000 requests: each command reported on its own and in total, and
/// the server saw them in the ratio of the weights (SET 5000 ± 300: 5 standard deviations).
fn mix_follows_the_weights(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("ol", "mix");
    let out =
        tool.run(&args(&server, &["--mix", "set:1,get:3", "-n", "20000", "-r", "1000", "-q"], &json), T);
    ok(&out);
    let (sets, gets) = (server.command_calls("set"), server.command_calls("get"));
    assert_eq!(sets + gets, 20_000);
    assert!(sets.abs_diff(5_000) <= 300, "{sets} SETs of 20000");
    let doc = read(&json);
    let tests = doc["tests"].as_array().unwrap();
    let names: Vec<&str> = tests.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["SET (mix 1/4)", "GET (mix 3/4)", "MIX (set:1,get:3)"]);
    let n = |i: usize| tests[i]["requests"].as_u64().unwrap();
    assert_eq!((n(0), n(1), n(2)), (sets, gets, 20_000));
    for name in names {
        assert!(out.stdout.contains(&format!("{name}: ")), "no line for {name}\n{}", out.dump());
    }
}

/// `--rps 1000,3000 -n 1500`: one step per rate, each sending no faster than its target, in a table
/// and in the JSON, every request at the server.
fn rate_steps(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("ol", "steps");
    let out = tool
        .run(&args(&server, &["-t", "set", "-c", "10", "--rps", "1000,3000", "-n", "1500", "-q"], &json), T);
    ok(&out);
    assert!(out.stdout.contains("SET: open loop, constant arrivals"), "{}", out.dump());
    // The table's rows: eight figures, then the step's verdict.
    let sides = ["server", "client", "neither", "machine", "unknown"];
    let rows: Vec<Vec<f64>> = out
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() == 9 && sides.contains(&w[8]))
        .filter_map(|w| w[..8].iter().map(|x| x.parse::<f64>()).collect::<Result<Vec<_>, _>>().ok())
        .collect();
    assert_eq!(rows.len(), 2, "{}", out.dump());
    for (row, target) in rows.iter().zip([1000.0, 3000.0]) {
        assert_eq!(row[0], target);
        // The shared rate is exact on virtual time (driver/tests/sim.rs
        // the_open_loop_sends_the_exact_count_over_a_duration); a loaded machine may fall
        // behind, but no schedule sends ahead.
        assert!(row[1] > 0.0 && row[1] <= target * 1.05, "achieved {} for {target}", row[1]);
        assert!(row[6] <= row[3].max(row[6]), "service p99 is at most the corrected p99: {row:?}");
    }
    let doc = read(&json);
    let targets: Vec<u64> =
        doc["tests"].as_array().unwrap().iter().map(|t| t["target_rps"].as_u64().unwrap()).collect();
    assert_eq!(targets, [1000, 3000]);
    // No --rps-slack: automatic, and at most 4,000 a second per loop wakes exactly on time.
    assert_eq!(doc["config"]["rps_slack_us"], serde_json::Value::Null);
    let slacks: Vec<u64> =
        doc["tests"].as_array().unwrap().iter().map(|t| t["rps_slack_us"].as_u64().unwrap()).collect();
    assert_eq!(slacks, [0, 0]);
    assert_eq!(server.command_calls("set"), 3000);
}

/// `--rps-slack`: the wake-up grid is in the JSON's config and the verbose report's lateness
/// line; each test's lateness is there (its count and figures are checked by check_json.py).
fn the_slack_is_reported_and_can_be_zero(tool: Tool) {
    let server = RedisServer::start();
    for (slack, us, grid) in
        [("0", 0, "on a 0.000 msec wake-up grid"), ("2ms", 2000, "on a 2.000 msec wake-up grid")]
    {
        let json = json_path("ol", "slack");
        let out = tool.run(
            &args(
                &server,
                &["-t", "set", "-c", "4", "--rps", "2000", "-n", "400", "--rps-slack", slack],
                &json,
            ),
            T,
        );
        ok(&out);
        assert!(
            out.stdout.contains(&format!("send lateness (msec, actual send - intended, {grid})")),
            "{}",
            out.dump()
        );
        let doc = read(&json);
        assert_eq!(doc["config"]["rps_slack_us"], us);
        assert_eq!(doc["tests"][0]["rps_slack_us"], us);
        let late = &doc["tests"][0]["lateness"]["ms"];
        assert!(ms(&late["min"]) >= 0.0 && ms(&late["max"]) >= ms(&late["p50"]), "{late}");
    }
    assert_eq!(server.command_calls("set"), 800);
}

/// `--mix-in-turn`: the mix's commands in turn, each its weight's times in a row, one round
/// shared by every client and thread, so 60 requests over 2 threads of 3 clients are exactly 10
/// rounds of 1 SET, 2 GETs and 3 INCRs as the server counts them; without a mix it is refused.
#[test]
fn a_mix_in_turn_sends_whole_rounds() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let line = ["-p", &port, "-n", "60", "-c", "6", "--threads", "2", "-q", "--mix-in-turn"];
    let mix = ["--mix-command", "1 SET a 1", "--mix-command", "2 GET a", "--mix-command", "3 INCR n"];
    let out = respbench().run(&[&line[..], &mix].concat(), T);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    let calls = (server.command_calls("set"), server.command_calls("get"), server.command_calls("incr"));
    assert_eq!(calls, (10, 20, 30));
    let out = respbench().run(&["-p", &port, "-n", "6", "--mix-in-turn", "HGET", "h", "f"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--mix-in-turn needs --mix or --mix-command"), "{}", out.dump());
    assert_eq!(server.command_calls("hget"), 0);
}

#[test]
fn conflicting_and_bad_rate_options_exit_1() {
    let tool = respbench();
    for (bad, says) in [
        (&["-n", "10", "--duration", "1s"][..], "-n and --duration"),
        (&["--rps", "0"][..], "--rps"),
        (&["--rps", "fast"][..], "--rps"),
        (&["--arrival", "poisson"][..], "--rps"),
        (&["--rps", "10", "--arrival", "bursty"][..], "--arrival"),
        (&["--rps", "10", "--rps-slack", "soon"][..], "--rps-slack"),
        (&["--rps", "10", "--rps-slack", "1s"][..], "at most 100ms"),
        (&["--rps-slack", "1ms"][..], "needs a target rate (--rps) or a capacity search (--slo)"),
        (&["--duration", "soon"][..], "--duration"),
        (&["--duration", "0"][..], "--duration"),
        (&["--warmup", "-1s"][..], "--warmup"),
        (&["--mix", "set:0"][..], "--mix"),
        (&["--mix", "bogus:1"][..], "bogus"),
        (&["--mix", "set:1", "-t", "get"][..], "-t and --mix"),
        (&["--mix-command", "x GET k"][..], "--mix-command"),
        (&["--mix", "get:1", "GET", "k"][..], "--mix"),
        (&["-l", "--duration", "1s"][..], "-l and --duration"),
    ] {
        let out = tool.run(&[&["-p", "1"][..], bad].concat(), Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(1), "{bad:?}\n{}", out.dump());
        assert!(out.stderr.contains(says), "{bad:?} should mention {says}\n{}", out.dump());
        assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    }
}

/// One connection at -P 1 cannot carry a million requests/s (a loopback round trip takes at
/// least a few microseconds; on this machine 15 000 to 95 000 requests/s): respbench says so and gives the rate achieved;
/// the corrected latencies grow with the backlog while the service times stay small.
#[test]
fn an_unreachable_target_is_reported() {
    let server = RedisServer::start();
    let json = json_path("ol", "unmet");
    let out = respbench()
        .run(&args(&server, &["-t", "get", "-c", "1", "--rps", "1000000", "-n", "5000", "-q"], &json), T);
    ok(&out);
    let doc = read(&json);
    let warned = warnings(&doc);
    assert!(warned.contains("target 1000000 rps not met, achieved"), "{warned}");
    assert!(warned.contains("-c 1 × -P 1"), "{warned}");
    // The cause named is the one the verdict measured (on a busy machine not always the window).
    let side = doc["tests"][0]["bottleneck"]["side"].as_str().unwrap().to_string();
    if side != "unknown" {
        assert!(warned.contains(&format!("(bottleneck: {side})")), "{side}: {warned}");
    }
    let kinds = doc["tests"][0]["warnings"].as_array().unwrap().iter().map(|w| w["kind"].clone());
    assert!(kinds.collect::<Vec<_>>().contains(&"rate_not_met".into()), "{doc}");
    assert_eq!(out.stderr, "", "{}", out.dump());
    let t = &doc["tests"][0];
    // The warning's threshold is 95% of the target; the JSON carries the same rate.
    assert!(ms(&t["rps"]) < 950_000.0, "{t}");
    assert!(ms(&t["latency_ms"]["p99"]) > 10.0 * ms(&t["service_latency_ms"]["p99"]), "{t}");
}

/// `--live` prints each second on stderr while the test runs: in a 3 s run at 2000 requests/s,
/// seconds 0 and 1 at least (the last may end with the test), each with its replies, and stdout
/// keeps only the report.
fn live_view(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("ol", "live");
    let out = tool.run(
        &args(&server, &["-t", "get", "-c", "5", "--rps", "2000", "--duration", "3s", "--live", "-q"], &json),
        T,
    );
    ok(&out);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("GET: second ")).collect();
    assert!(lines.len() >= 2, "{}", out.dump());
    for (k, line) in lines.iter().enumerate() {
        assert!(line.starts_with(&format!("GET: second {k}: ")), "{line}");
        let rps: f64 = line.split(": ").nth(2).unwrap().split(' ').next().unwrap().parse().unwrap();
        // Exact per second on virtual time (the_total_rate_is_shared_by_the_connections); on a
        // loaded machine a second can lag and the next catch up, so only that each has replies.
        assert!(rps > 0.0, "{line}");
    }
    assert!(!out.stdout.contains("second 0"), "{}", out.dump());
    // The live seconds are the document's.
    let doc = read(&json);
    let series = doc["tests"][0]["series"].as_array().unwrap();
    for (k, line) in lines.iter().enumerate() {
        let n = series[k]["requests"].as_u64().unwrap();
        assert!(line.contains(&format!(": {n} requests per second")), "{line} vs {}", series[k]);
    }
}

/// With `--rps` and `--csv`, every row (a mix's commands too) has the three open-loop columns,
/// then the four every row ends with (the verdict last, on the total's row).
#[test]
fn open_loop_csv_rows_have_every_column() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out =
        respbench().run(&["-p", &port, "--mix", "set:1,get:1", "--rps", "2000", "-n", "1000", "--csv"], T);
    ok(&out);
    let rows = respbench_tests::parse_csv(&out.stdout);
    assert_eq!(rows.len(), 4, "{}", out.dump());
    assert_eq!(rows[0][8..11], ["target_rps", "service_p50_latency_ms", "service_p99_latency_ms"]);
    // Every row ends with where its requests went: none failed, none was left.
    assert_eq!(rows[0][11..], ["errors", "abandoned", "unsent", "bottleneck"]);
    assert!(rows.iter().all(|r| r.len() == 15), "{}", out.dump());
    assert!(rows[1..].iter().all(|r| r[11..14] == ["0", "0", "0"]), "{}", out.dump());
    // A mix is judged as a whole: its commands' rows leave the verdict empty.
    assert!(rows[1..3].iter().all(|r| r[14].is_empty()) && !rows[3][14].is_empty(), "{}", out.dump());
    assert_eq!(rows[3][0], "MIX (set:1,get:1)");
    assert_eq!(rows[3][8], "2000");
}

/// A `--json` document's warnings, the session's and each test's, as JSON text.
fn warnings(doc: &serde_json::Value) -> String {
    let tests = doc["tests"].as_array().into_iter().flatten();
    tests.fold(doc["warnings"].to_string(), |all, t| all + &t["warnings"].to_string())
}
