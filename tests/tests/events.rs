//! Events during a run (`--at`) against real servers: a known pause (`CLIENT PAUSE`), a fork
//! (`BGSAVE` of about 1 GB, against `INFO stats` `latest_fork_usec`), a stopped and continued
//! server (`exec kill -STOP/-CONT`), a failover on a real cluster (`CLUSTER FAILOVER` on one
//! replica, `--at-node`), every output's shape, every backend, and the bad input refused before
//! connecting. The window rules themselves are tested on virtual time (driver/tests/sim.rs) and
//! in core/src/disruption.rs.

use std::time::Duration;

use respbench_tests::cluster::Cluster;
use respbench_tests::{json_path, parse_csv, take_document, Output, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(90);

respbench_tests::backend_tests!(
    every: [an_event_on_every_backend],
    mio: [
        a_known_pause_is_measured_to_its_last_slow_reply,
        a_fork_costs_what_the_server_says_it_took,
        a_stopped_server_is_a_window_of_its_stop,
        a_failover_on_a_cluster_is_followed_and_counted,
        every_output_has_the_events,
        an_events_reply_reads_as_redis_cli_prints_it,
        backends_side_by_side_each_say_their_event,
        bad_events_are_refused_before_connecting,
        a_ping_in_an_open_loop_disrupts_nothing,
        a_program_and_its_children_end_with_the_event,
    ],
);

fn args(port: u16, extra: &[&str]) -> Vec<String> {
    let mut a = vec!["-h".to_string(), "127.0.0.1".to_string(), "-p".to_string(), port.to_string()];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Runs with `--json` and gives the output and the first test's entry.
fn run_json(tool: &Tool, port: u16, extra: &[&str]) -> (Output, Value) {
    let json = json_path("ev", "run");
    let mut a = args(port, extra);
    a.extend(["--json".to_string(), json.to_string_lossy().into_owned()]);
    let out = tool.run(&a, T);
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    let doc: Value =
        serde_json::from_str(&take_document(&json)).unwrap_or_else(|e| panic!("{e}: {}", out.dump()));
    (out, doc["tests"][0].clone())
}

fn ok(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    assert!(out.stderr.is_empty(), "{}", out.dump());
}

/// A clean run, or one that this busy machine ended with exit 1 and lines each of which says
/// one of `allowed`, and nothing else: for the checks of the outputs, not of what the lines are
/// about.
fn ok_or(out: &Output, allowed: &[&str]) {
    if out.stderr.is_empty() {
        return ok(out);
    }
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines.len() <= allowed.len() && lines.iter().all(|l| allowed.iter().any(|a| l.contains(a))),
        "{}",
        out.dump()
    );
    eprintln!("(allowed on a busy machine: {})", lines.join(" / "));
}

/// An event may not have recovered by the end on this busy machine (a window's p99 above 1.2 x
/// the highest of the baseline's windows' is enough to keep it open).
const UNRECOVERED: &str = ": not recovered by the end of the test";

/// An open loop may fall behind its schedule at the end on this busy machine (seen at load 17:
/// sends up to 217 ms late, 155 requests due never sent); the unsent are in the arrivals' sum.
const BEHIND: &str = " requests due were never sent (the client was behind its schedule at the end: ";

fn ok_or_unrecovered(out: &Output) {
    ok_or(out, &[UNRECOVERED]);
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Completed + error replies + lost + abandoned + unsent = the arrivals due.
fn accounted(t: &Value) {
    let a = &t["arrivals"];
    let sum: u64 = ["completed", "error_replies", "lost", "abandoned", "unsent"]
        .iter()
        .map(|k| a[k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, a["due"].as_u64().unwrap(), "{a}");
}

/// Checks a disruption against what made it: no reply in the 100 ms windows wholly inside
/// `[from + 0.1 s, to]` (the server was not answering), and past `to` every window until the
/// recovery bad by the rule (no reply, an error or a redirect, or a p99 above the threshold), the
/// recovery's window healthy. Gives the window (ms) when it recovered, with the recovery's
/// instant (s), else `None` (every window past `to` was bad).
fn stopped_then_recovered(d: &Value, from: f64, to: f64) -> Option<(f64, f64)> {
    let threshold = f(&d["threshold_ms"]);
    let windows = d["windows"].as_array().unwrap();
    let bad = |w: &Value| {
        w["requests"] == 0 || f(&w["p99_ms"]) > threshold || w["errors"] != 0 || w["redirects"] != 0
    };
    let inside: Vec<&Value> =
        windows.iter().filter(|w| f(&w["at_s"]) >= from + 0.1 && f(&w["at_s"]) + 0.1 <= to).collect();
    assert!(inside.len() as f64 >= ((to - from) * 10.0).floor() - 2.0, "{d}");
    for w in inside {
        assert_eq!(w["requests"], 0, "a reply from a server that was not answering: {w}");
    }
    let window = d["window_ms"].as_f64();
    // The first healthy window's start; none when it did not recover.
    let healthy_at = window.map(|_| f(&d["span_from_s"]) + 0.1 * f(&d["span_windows"]));
    for w in windows {
        let at = f(&w["at_s"]);
        if at + 0.1 > to && healthy_at.is_none_or(|h| at < h - 1e-6) {
            assert!(bad(w), "a healthy window {w} before the recovery at {healthy_at:?} s: {d}");
        } else if healthy_at.is_some_and(|h| (at - h).abs() < 1e-6) {
            assert!(!bad(w), "the recovery's window {w} is not healthy: {d}");
        }
    }
    let window = window?;
    let healthy_at = healthy_at.unwrap();
    assert!(from + window / 1000.0 <= healthy_at + 1e-6, "{d}");
    Some((window, healthy_at))
}

/// `CLIENT PAUSE 500 WRITE` at 5 s of a 10 s SET open loop at 2,000/s. The server runs at
/// `hz 100`: at its default 10 it lifts a pause at its next cron, up to 100 ms late. Each client
/// has a window of 64 (`-P 64`), so the requests due during the pause are sent when due and
/// answered at once after it, not one by one behind a window of one. What the pause itself
/// makes is checked against it: no reply in the windows wholly inside it, a window at least its
/// 500 ms, and a highest corrected latency of at least the pause. Where the window ends past the
/// pause is the machine's (idle: 500-520 ms; CI beside other work: 588-679 ms), so past the pause
/// every window to the recovery must be one the rule calls bad, the one after them healthy,
/// and the window within 1 s of the pause's end.
fn a_known_pause_is_measured_to_its_last_slow_reply(tool: Tool) {
    let server = RedisServer::start_with(&[("hz", "100")]);
    let (out, t) = run_json(
        &tool,
        server.port(),
        &[
            "-t",
            "set",
            "-c",
            "20",
            "-P",
            "64",
            "--rps",
            "2000",
            "--duration",
            "10s",
            "-q",
            "--at",
            "5s CLIENT PAUSE 500 WRITE",
        ],
    );
    ok_or(&out, &[UNRECOVERED, BEHIND]);
    accounted(&t);
    let e = &t["events"][0];
    assert_eq!(e["replies"][0]["reply"], "OK", "{e}");
    let sent = f(&e["sent_s"]);
    assert!((5.0..5.1).contains(&sent), "{e}");
    let d = &e["disruption"];
    assert_eq!(d["latency"], "corrected");
    let max = f(&d["max_ms"]);
    eprintln!(
        "window {:?} ms, max corrected latency {max:.1} ms, baseline p99 {:.3} ms, sent at {sent:.4} s",
        d["window_ms"],
        f(&d["baseline_p99_ms"])
    );
    assert!(max >= 495.0, "a 500 ms pause and a highest latency of {max} ms: {d}");
    if let Some((window, _)) = stopped_then_recovered(d, sent, sent + 0.5) {
        assert!((500.0..=1500.0).contains(&window), "window {window} ms for a 500 ms pause: {d}");
    }
}

/// `BGSAVE` of about 1 GB (`DEBUG POPULATE`, 1,000,000 values of 1,000 bytes) during a GET run:
/// the fork stops the server for `latest_fork_usec`, and the latency peak in the event's window
/// is that stop, to within one 100 ms window.
fn a_fork_costs_what_the_server_says_it_took(tool: Tool) {
    let server = RedisServer::start_with(&[("enable-debug-command", "yes"), ("save", "")]);
    server.cli(&["DEBUG", "POPULATE", "1000000", "key", "1000"]);
    let used: u64 = server.info_field("memory", "used_memory").unwrap().parse().unwrap();
    assert!(used > 1_000_000_000, "{used}");
    let (out, t) = run_json(
        &tool,
        server.port(),
        &[
            "-t",
            "get",
            "-c",
            "20",
            "-r",
            "1000000",
            "--rps",
            "2000",
            "--duration",
            "6s",
            "-q",
            "--at",
            "3s BGSAVE",
        ],
    );
    // CI saw the windows after a 30 ms fork stay above 1.2 x the baseline's p99 to the end
    // (the machine's own pauses: send lateness max 25 ms): the peak is measured either way.
    ok_or(&out, &[UNRECOVERED, BEHIND]);
    accounted(&t);
    let e = &t["events"][0];
    assert_eq!(e["replies"][0]["reply"], "Background saving started", "{e}");
    let fork_ms: f64 =
        server.info_field("stats", "latest_fork_usec").unwrap().parse::<f64>().unwrap() / 1000.0;
    let d = &e["disruption"];
    // The peak of the windows from the BGSAVE's to 300 ms after it: the fork stops the server
    // in the call itself, and what it held is answered as soon as it returns.
    let sent = f(&e["sent_s"]);
    let peak = d["windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| f(&w["at_s"]) + 0.1 > sent && f(&w["at_s"]) < sent + 0.3)
        .map(|w| f(&w["max_ms"]))
        .fold(0.0, f64::max);
    eprintln!(
        "BGSAVE of {used} bytes: latest_fork_usec {fork_ms:.1} ms, latency peak within 300 ms of it {peak:.1} ms, window {:?} ms",
        d["window_ms"]
    );
    // The disruption's max is its span's (from the event's window, so many 100 ms windows),
    // which a test against its own variation may end before the 300 ms above do (CI at a load
    // of 16: a span of one window, max 49.4 ms, and a later window's higher).
    let (from, n) = (f(&d["span_from_s"]), f(&d["span_windows"]));
    let span_peak = d["windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| f(&w["at_s"]) + 1e-6 >= from && f(&w["at_s"]) < from + 0.1 * n - 1e-6)
        .map(|w| f(&w["max_ms"]))
        .fold(0.0, f64::max);
    assert!(f(&d["max_ms"]) >= span_peak, "{d}");
    assert!((peak - fork_ms).abs() <= 100.0, "peak {peak} ms against a fork of {fork_ms} ms: {d}");
    // Let the child finish before the server goes.
    respbench_tests::wait_until("the BGSAVE's end", T, || {
        server.info_field("persistence", "rdb_bgsave_in_progress").as_deref() == Some("0")
    });
}

/// `--at '4s exec kill -STOP PID'` and `--at '5s exec kill -CONT PID'` of the server: the first
/// event's window is the stop, and each program's exit is reported. What the stop itself makes
/// is checked against the signals: no reply at all in the 100 ms windows wholly inside it, and a
/// window at least as long as it. Where the window ends past the CONT is the machine's: the
/// backlog drains, and on this busy machine (two CPU hogs: 1,086-1,297 ms seen) windows after
/// it stay slower than 1.2 x the baseline's p99 for a while; so every window from the CONT's to
/// the recovery must be one the rule calls bad, the one after them healthy, and the window
/// within 1 s of the CONT (idle: within 150 ms).
fn a_stopped_server_is_a_window_of_its_stop(tool: Tool) {
    let server = RedisServer::start();
    let stop = format!("4s exec kill -STOP {}", server.pid());
    let cont = format!("5s exec kill -CONT {}", server.pid());
    let (out, t) = run_json(
        &tool,
        server.port(),
        &[
            "-t",
            "get",
            "-c",
            "10",
            "-P",
            "64",
            "--rps",
            "1000",
            "--duration",
            "8s",
            "-q",
            "--at",
            &stop,
            "--at",
            &cont,
        ],
    );
    // Beside other work the windows past the CONT may stay slow to the end (see above): each
    // event's may.
    ok_or(&out, &[UNRECOVERED, UNRECOVERED, BEHIND]);
    accounted(&t);
    let events = t["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    for e in events {
        assert_eq!(e["kind"], "exec");
        assert_eq!(e["exit"]["status"], 0, "{e}");
        assert_eq!(e["exit"]["stderr"], "", "{e}");
    }
    let (sent0, sent1) = (f(&events[0]["sent_s"]), f(&events[1]["sent_s"]));
    // The server runs again once the CONT's kill has signalled it, at the latest when it exits:
    // a busy machine can take a while to start a program (seen: no reply until 1.4 s after the
    // CONT was started, the window 2,529 ms).
    let cont = sent1 + f(&events[1]["exit"]["took_ms"]) / 1000.0;
    let d = &events[0]["disruption"];
    let stopped = (cont - sent0) * 1000.0;
    eprintln!(
        "kill -STOP at {sent0:.4} s, -CONT at {sent1:.4} s, its kill done at {cont:.4} s: window {:?} ms; the client's own pauses per second (max, ms) {}",
        d["window_ms"],
        t["client_pauses"]["series_max_ms"]
    );
    let recovered = stopped_then_recovered(d, sent0, sent1);
    if let Some((window, _)) = recovered {
        let least = (sent1 - sent0) * 1000.0;
        assert!(
            window >= least && window <= stopped + 1000.0,
            "window {window} ms, stopped {least}-{stopped} ms: {d}"
        );
    }
    // plot marks both events on the series and draws each one's 100 ms windows.
    let json = json_path("ev", "plot");
    let doc = serde_json::json!({"schema": "respbench/2", "tool": {"name": "respbench", "version": "0"}, "config": {}, "server": {}, "tests": [t]});
    std::fs::write(&json, doc.to_string()).unwrap();
    let svg = json.with_extension("svg");
    let out = respbench_tests::respbench()
        .run(&["plot".as_ref(), json.as_os_str(), "-o".as_ref(), svg.as_os_str()], T);
    ok(&out);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    let _ = (std::fs::remove_file(&json), std::fs::remove_file(&svg));
    // Two events on each of the two series charts, and one on each event's own chart.
    assert_eq!(drawn.matches(r#"class="band""#).count(), 6, "{drawn}");
    let how = recovered.map_or("not recovered".to_string(), |(w, _)| format!("{w:.0} ms"));
    assert!(drawn.contains(&format!("kill -STOP {} ({how})", server.pid())), "{drawn}");
    assert!(drawn.contains("p99 latency by 100 ms window around --at &#39;4s exec kill -STOP"), "{drawn}");
}

/// `CLUSTER FAILOVER` sent to one replica of a 3-primary cluster (`--at-node HOST:PORT`) in a SET
/// open loop: the old primary's `MOVED`s are the window, the replica is where the slots moved,
/// the primaries left alone served exactly what respbench counted at them, the redirects are
/// the old primary's rejected calls, and every arrival is accounted for.
fn a_failover_on_a_cluster_is_followed_and_counted(tool: Tool) {
    // `-r 100`: about 33 keys on the old primary's slots, each client learning their new owner
    // at its first request there after the failover.
    let cluster = Cluster::start(3, 1);
    let primaries = cluster.primary_ports();
    let replica = cluster.replica_ports()[0];
    // The primary the replica serves.
    let master = primary_of(&cluster, replica);
    let old = *primaries.iter().find(|&&p| cluster.node_id(p) == master).unwrap();
    let node = format!("127.0.0.1:{replica}");
    let (out, t) = run_json(
        &tool,
        primaries[0],
        &[
            "--cluster",
            "-t",
            "set",
            "-c",
            "10",
            "-r",
            "100",
            "--rps",
            "2000",
            "--duration",
            "8s",
            "-q",
            "--at",
            "3s CLUSTER FAILOVER",
            "--at-node",
            &node,
        ],
    );
    // At a load of 18 the window stayed open to the end (340 MOVEDs in it, its p99 never back
    // within 1.2 x the baseline's): the counts below hold either way.
    ok_or(&out, &[BEHIND, UNRECOVERED]);
    accounted(&t);
    let e = &t["events"][0];
    assert_eq!(e["replies"][0]["node"], node.as_str(), "{e}");
    assert_eq!(e["replies"][0]["reply"], "OK", "{e}");
    let d = &e["disruption"];
    let moved = d["redirects"]["moved"].as_u64().unwrap();
    // Null: not recovered by the end (said on stderr, allowed above).
    let window = d["window_ms"].as_f64().unwrap_or(f64::INFINITY);
    eprintln!(
        "failover: window {window:.1} ms, {moved} MOVED, max corrected latency {:.1} ms, p99 {:.1} ms, moved to {}",
        f(&d["max_ms"]),
        f(&d["p99_ms"]),
        d["moved_to"]
    );
    assert!(moved > 0, "{d}");
    assert_eq!(d["moved_to"][0], node.as_str(), "{d}");
    assert!(window > 0.0 && (window < 5000.0 || out.stderr.contains(UNRECOVERED)), "{d}");
    let nodes = t["nodes"].as_array().unwrap();
    let at = |port: u16| nodes.iter().find(|n| n["address"] == format!("127.0.0.1:{port}")).unwrap();
    for &p in primaries.iter().filter(|&&p| p != old) {
        let n = at(p);
        assert_eq!(n["requests"].as_u64().unwrap(), cluster.node(p).command_calls("set"), "{n}");
    }
    // The redirects respbench met in all are the old primary's rejected SETs (MOVED after it
    // lost its slots), and those of the window.
    let redirects = t["redirects"]["moved"].as_u64().unwrap();
    let rejected = rejected_sets(&cluster, old);
    assert_eq!(redirects, rejected, "respbench's MOVEDs against the old primary's rejected_calls");
    // A client learns each slot's owner from the MOVED it meets there, so a client that first
    // touches a slot after the window's healthy one meets its MOVED later (seen: 312 of 320 in
    // the window): outside the window, but counted in the test's.
    eprintln!("MOVED in the window {moved} of {redirects}; old primary's rejected SETs {rejected}");
    assert!(moved <= redirects, "{moved} > {redirects}");
}

fn primary_of(cluster: &Cluster, replica: u16) -> String {
    let role = cluster.node(replica).cli(&["CLUSTER", "NODES"]);
    let me = role.lines().find(|l| l.contains("myself")).unwrap();
    me.split_whitespace().nth(3).unwrap().to_string()
}

fn rejected_sets(cluster: &Cluster, port: u16) -> u64 {
    let info = cluster.node(port).cli(&["INFO", "commandstats"]);
    let line = info.lines().find(|l| l.starts_with("cmdstat_set:")).unwrap_or("");
    line.split(',').find_map(|kv| kv.strip_prefix("rejected_calls=")).map_or(0, |v| v.trim().parse().unwrap())
}

/// A 3 s closed loop with a `CONFIG SET` at 1.5 s, and a 6 s one with a program that fails at 2 s: the verbose
/// report's section, `-q`'s line and CSV's row per event, and the failed program's one line on
/// stderr with exit 1.
fn every_output_has_the_events(tool: Tool) {
    let server = RedisServer::start();
    let common =
        ["-t", "get", "-c", "4", "--duration", "3s", "--at", "1500ms CONFIG SET maxmemory-samples 7"];
    let out = tool.run(&args(server.port(), &common), T);
    ok_or_unrecovered(&out);
    assert!(out.stdout.contains("  Event --at '1.5s CONFIG SET maxmemory-samples 7':"), "{}", out.dump());
    assert!(out.stdout.contains("service latency"), "{}", out.dump());
    assert_eq!(server.cli(&["CONFIG", "GET", "maxmemory-samples"]).lines().nth(1), Some("7"));
    let mut quiet = common.to_vec();
    quiet.push("-q");
    let out = tool.run(&args(server.port(), &quiet), T);
    ok_or_unrecovered(&out);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("event '1.5s CONFIG SET"))
        .unwrap_or_else(|| panic!("{}", out.dump()));
    assert!(line.starts_with("GET: event '1.5s CONFIG SET maxmemory-samples 7' OK ("), "{line}");
    let mut csv = common.to_vec();
    csv.push("--csv");
    let out = tool.run(&args(server.port(), &csv), T);
    ok_or_unrecovered(&out);
    let rows = parse_csv(&out.stdout);
    let events: Vec<_> = rows.iter().filter(|r| r[0] == "event").collect();
    assert_eq!(events.len(), 1, "{}", out.dump());
    assert_eq!(events[0][1], "GET");
    assert_eq!(events[0][2], "1.5s CONFIG SET maxmemory-samples 7");
    assert!(events[0][4].starts_with("OK ("), "{:?}", events[0]);
    // 4 s after the event for a healthy window to come on this busy machine (with 1 s, a stall
    // once kept it open to the end, which says so in a line of its own).
    let failing = ["-t", "get", "-c", "4", "--duration", "6s", "-q", "--at", "2s exec ls /no/such/dir"];
    let out = tool.run(&args(server.port(), &failing), T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    // (A stall of this machine may keep its window open to the end: a line of its own.)
    let err: Vec<&str> =
        out.stderr.lines().filter(|l| !l.ends_with(": not recovered by the end of the test")).collect();
    assert_eq!(err.len(), 1, "{}", out.dump());
    assert!(err[0].starts_with("GET: --at '2s exec ls /no/such/dir' failed: exit 2 ("), "{}", out.dump());
    assert!(
        err[0].ends_with("): ls: cannot access '/no/such/dir': No such file or directory"),
        "{}",
        out.dump()
    );
}

/// An event's reply is said as `redis-cli` prints it, on one line, in the text and the JSON:
/// `HELLO 3`'s map as `1# "server" => "redis" 2# …`, `CONFIG GET`'s array as `1) "maxmemory-samples"
/// 2) "5"`, an error as `(error) ERR …`; never Rust's `Map([(Bulk([115, …`.
fn an_events_reply_reads_as_redis_cli_prints_it(tool: Tool) {
    let server = RedisServer::start();
    let events = ["1500ms HELLO 3", "2s CONFIG GET maxmemory-samples", "2500ms NOSUCHCOMMAND x"];
    let mut args = vec!["-t", "get", "-c", "2", "--duration", "5s", "-q"];
    args.extend(events.iter().flat_map(|e| ["--at", e]));
    let (out, t) = run_json(&tool, server.port(), &args);
    let hello = r#"1# "server" => "redis" 2# "version" => "7.0.15" 3# "proto" => (integer) 3"#;
    let config = r#"1) "maxmemory-samples" 2) "5""#;
    let error = "(error) ERR unknown command 'NOSUCHCOMMAND'";
    let replies: Vec<&str> =
        (0..3).map(|i| t["events"][i]["replies"][0]["reply"].as_str().unwrap()).collect();
    assert!(replies[0].starts_with(hello) && replies[0].ends_with('…'), "{replies:?}");
    assert_eq!(replies[1], config, "{replies:?}");
    assert!(replies[2].starts_with(error), "{replies:?}");
    let said = |what: &str, reply: &str| {
        let line = out.stdout.lines().chain(out.stderr.lines()).find(|l| l.contains(what));
        assert!(line.is_some_and(|l| l.contains(reply)), "{what}: {reply}\n{}", out.dump());
    };
    said("event '1.5s HELLO 3'", hello);
    said("event '2s CONFIG GET maxmemory-samples'", config);
    said("--at '2.5s NOSUCHCOMMAND x' failed", error);
    assert!(!out.stdout.contains("Bulk(") && !out.stderr.contains("Bulk("), "{}", out.dump());
}

/// `--backend mio,smol`: the side-by-side table, then each backend's event as its own line (`-q`)
/// or row (`--csv`), titled `NAME [BACKEND]`; each backend's run sent its own PING (the server's
/// commandstats count both). A quoted argument keeps its space.
fn backends_side_by_side_each_say_their_event(_tool: Tool) {
    let server = RedisServer::start();
    for (format, lines) in [
        ("-q", ["GET [mio]: event '1s PING' PONG (", "GET [smol]: event '1s PING' PONG ("]),
        ("--csv", ["\"event\",\"GET [mio]\",\"1s PING\",", "\"event\",\"GET [smol]\",\"1s PING\","]),
    ] {
        let before = server.command_calls("ping");
        let a = args(
            server.port(),
            &["-t", "get", "-c", "4", "--duration", "2s", "--backend", "mio,smol", format],
        );
        let out = respbench_tests::respbench().run(&[&a[..], &["--at".into(), "1s PING".into()]].concat(), T);
        // Each backend's event may not recover on a busy machine (CI: both did not).
        ok_or(&out, &[UNRECOVERED, UNRECOVERED]);
        for line in lines {
            assert_eq!(
                out.stdout.lines().filter(|l| l.starts_with(line)).count(),
                1,
                "{line}: {}",
                out.dump()
            );
        }
        assert_eq!(server.command_calls("ping") - before, 2, "{}", out.dump());
    }
    let a = args(
        server.port(),
        &["-t", "get", "-c", "1", "--duration", "2s", "-q", "--at", "1s SET greeting \"hello world\""],
    );
    ok_or_unrecovered(&respbench_tests::respbench().run(&a, T));
    assert_eq!(server.cli(&["GET", "greeting"]).trim(), "hello world");
}

/// One event on each backend: a `CONFIG SET` at 1.5 s of a 3 s open loop, sent, answered,
/// measured.
fn an_event_on_every_backend(tool: Tool) {
    let server = RedisServer::start();
    let (out, t) = run_json(
        &tool,
        server.port(),
        &[
            "-t",
            "get",
            "-c",
            "4",
            "--rps",
            "1000",
            "--threads",
            "2",
            "--duration",
            "3s",
            "-q",
            "--at",
            "1500ms CONFIG SET hz 20",
        ],
    );
    ok_or_unrecovered(&out);
    accounted(&t);
    // -q in an open loop: the event's line before the rate table.
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("event '1.5s CONFIG SET hz 20'"))
        .unwrap_or_else(|| panic!("{}", out.dump()));
    assert!(line.starts_with("GET: event '1.5s CONFIG SET hz 20' OK ("), "{line}");
    assert!(line.contains("(corrected)"), "{line}");
    let e = &t["events"][0];
    assert_eq!(e["replies"][0]["reply"], "OK", "{e}");
    let d = &e["disruption"];
    assert!(d["baseline_requests"].as_u64().unwrap() >= 1000, "{d}");
    // A number, or null with the run's line saying it did not recover.
    assert!(d["window_ms"].is_number() || out.stderr.contains("not recovered"), "{d}");
    assert_eq!(server.cli(&["CONFIG", "GET", "hz"]).lines().nth(1), Some("20"));
}

/// `--at '1s PING'` in a 3 s open loop: a no-op, so nothing above the test's own variation
/// before it may be claimed, and the run exits 0 (a busy machine's 1.2 x the merged baseline's
/// p99 called its noise a window of 36-878 ms, and "not recovered by the end" in 1 run of 4).
/// Run three times; only the open loop's falling behind at its end may be said on stderr.
fn a_ping_in_an_open_loop_disrupts_nothing(tool: Tool) {
    let server = RedisServer::start();
    for _ in 0..3 {
        let (out, t) = run_json(
            &tool,
            server.port(),
            &["-t", "get", "-c", "4", "--rps", "1000", "--duration", "3s", "-q", "--at", "1s PING"],
        );
        ok_or(&out, &[BEHIND]);
        let e = &t["events"][0];
        assert_eq!(e["replies"][0]["reply"], "PONG", "{e}");
        let d = &e["disruption"];
        assert!(d["window_ms"].is_number(), "{d}");
        // The threshold is 1.2 x the highest of the baseline's windows' p99.
        let highest = d["windows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| f(&w["at_s"]) < f(&d["span_from_s"]) && w["requests"] != 0)
            .map(|w| f(&w["p99_ms"]))
            .fold(0.0, f64::max);
        assert!(f(&d["threshold_ms"]) >= highest * 1.2 - 0.01, "{d}");
    }
}

/// Whether a process of group `pgid` is still running (a zombie is not), from /proc.
fn group_running(pgid: u32) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |r| r.1).split_whitespace().collect();
        fields.len() > 2 && fields[2] == pgid.to_string() && !["Z", "X"].contains(&fields[0])
    })
}

/// `--at 'Ns exec …'` is the program, in a group of its own: a program that leaves a child in
/// the background and exits (`sh -c 'sleep 30 & …'`: a 3 s run took 32 s, its pipe held open by
/// the sleep) ends on time with its group ended, exit 0; one that writes to standard error
/// forever from a child (`sh -c 'yes >&2; true'`: respbench read it forever) and `yes` itself are
/// killed at the test's end, said on stderr, exit 1. The bound is generous for a busy machine.
fn a_program_and_its_children_end_with_the_event(tool: Tool) {
    let server = RedisServer::start();
    let pid_file = json_path("events", "group").with_extension("pid");
    let background = format!("1s exec sh -c \"echo $$ > {}; sleep 30 & echo hi\"", pid_file.display());
    let started = std::time::Instant::now();
    let out = tool.run(
        &args(server.port(), &["-t", "get", "-c", "2", "--duration", "3s", "-q", "--at", &background]),
        T,
    );
    let took = started.elapsed();
    ok(&out);
    assert!(took < Duration::from_secs(20), "{took:?}: {}", out.dump());
    assert!(out.stdout.contains("event '1s exec sh -c "), "{}", out.dump());
    let pgid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let _ = std::fs::remove_file(&pid_file);
    assert!(!group_running(pgid), "the event's sleep 30 outlived it (group {pgid})");
    for (program, line) in [
        (
            "1s exec sh -c \"yes >&2; true\"",
            "GET: --at '1s exec sh -c \"yes >&2; true\"' failed: killed by a signal (",
        ),
        ("1s exec yes", "GET: --at '1s exec yes' failed: killed by a signal ("),
    ] {
        let started = std::time::Instant::now();
        let out = tool.run(
            &args(server.port(), &["-t", "get", "-c", "2", "--duration", "3s", "-q", "--at", program]),
            T,
        );
        let took = started.elapsed();
        assert!(took < Duration::from_secs(20), "{took:?}: {}", out.dump());
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        // One line says the program was killed; a `yes` competes with the client for the CPU
        // to the test's end, so a second may say its disruption was not recovered (seen at a
        // load of 16), and nothing else.
        let (killed, rest): (Vec<&str>, Vec<&str>) = out.stderr.lines().partition(|l| l.starts_with(line));
        assert_eq!(killed.len(), 1, "{}", out.dump());
        assert!(killed[0].ends_with("): still running at the test's end: killed"), "{}", out.dump());
        assert!(rest.iter().all(|l| *l == format!("GET: --at '{program}'{UNRECOVERED}")), "{}", out.dump());
    }
}

/// Each bad event is a clear error, exit 1, before any connection: a malformed TIME, one after
/// the end, one too early for a baseline, a test of `-n` only, a program that does not exist
/// (no server listens on the port), and a node not of the run (checked once the startup
/// connection found the nodes, before the test's connections).
fn bad_events_are_refused_before_connecting(tool: Tool) {
    let nobody = respbench_tests::free_port();
    let refused = |extra: &[&str], says: &str| {
        let out = tool.run(&args(nobody, extra), T);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains(says), "{says}: {}", out.dump());
        assert!(!out.stderr.contains("connect"), "{}", out.dump());
        assert!(out.stdout.is_empty(), "{}", out.dump());
    };
    let ten = ["-t", "get", "--duration", "10s"];
    fn with<'a>(ten: &[&'a str], at: &'a str) -> Vec<&'a str> {
        [ten, &["--at", at]].concat()
    }
    let with = |at: &'static str| with(&ten, at);
    refused(&with("5x PING"), "TIME is like 30s, 1m30s or 500ms");
    refused(&with("1m30 PING"), "TIME is like 30s, 1m30s or 500ms");
    refused(&with("5s"), "expected a command after TIME");
    refused(&with("5s SET k 'v"), "invalid value '5s SET k 'v' for --at: a quote is not closed");
    refused(&with("10s PING"), "--at '10s PING': 10s is not within --duration 10s");
    refused(&with("500ms PING"), "an event must come 1 s into the test at least");
    refused(
        &["-t", "get", "-n", "1000", "--at", "2s PING"],
        "give --duration (a -n test has no fixed window)",
    );
    refused(&with("2s exec no-such-program-here x"), "no program 'no-such-program-here'");
    refused(
        &[&with("2s PING")[..], &["--at-node", "leader"]].concat(),
        "expected primary, replica, all or HOST:PORT",
    );
    let server = RedisServer::start();
    let out =
        tool.run(&args(server.port(), &[&with("2s PING")[..], &["--at-node", "127.0.0.1:1"]].concat()), T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains(&format!(
            "--at-node 127.0.0.1:1: not a node of this run (its nodes: 127.0.0.1:{})",
            server.port()
        )),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("get"), 0);
    let out = tool.run(&args(server.port(), &[&with("2s PING")[..], &["--at-node", "replica"]].concat()), T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--at-node replica: this run has no replica"), "{}", out.dump());
}
