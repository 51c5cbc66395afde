//! Expiry lag (`-t expiry`, issue #52) against a real redis-server: the keys notified are as
//! many as the server's `expired_keys` rose, each lag counts from the key's deadline (not its
//! write), a server whose active expiry is off leaves the keys unnotified and the report says
//! so, and `notify-keyspace-events` is checked, turned on with `--set-notify` and restored. The
//! deadline-to-lag logic is unit-tested on virtual time in core/src/expiry.rs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use respbench_tests::{json_path, parse_csv, take_document, Output, RedisServer};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

fn run(server: &RedisServer, extra: &[&str]) -> (Output, Value) {
    let json = json_path("expiry", "run");
    let mut a: Vec<String> = ["-h", "127.0.0.1", "-p", &server.port().to_string(), "-t", "expiry"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a.extend(["--json".to_string(), json.to_string_lossy().into_owned()]);
    let out = respbench_tests::respbench().run(&a, T);
    assert!(out.status.success(), "{}", out.dump());
    let doc: Value =
        serde_json::from_str(&take_document(&json)).unwrap_or_else(|e| panic!("{e}: {}", out.dump()));
    (out, doc["tests"][0].clone())
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn expired_keys(server: &RedisServer) -> u64 {
    server.info_field("stats", "expired_keys").and_then(|v| v.parse().ok()).expect("expired_keys")
}

#[test]
fn the_keys_notified_are_the_servers_expired_keys_and_the_setting_is_restored() {
    let server = RedisServer::start_with(&[("notify-keyspace-events", "Kg")]);
    let before = expired_keys(&server);
    let (out, t) = run(
        &server,
        &["-n", "3000", "-P", "16", "--set-notify", "--expiry-volatile", "500", "--expiry-persistent", "500"],
    );
    let e = &t["expiry"];
    let rise = expired_keys(&server) - before;
    assert_eq!(u(&e["written"]), 3000, "{e}");
    assert_eq!(u(&e["notified"]), 3000, "{e}");
    assert_eq!(u(&e["notified"]), rise, "the server's expired_keys rose by {rise}: {e}");
    assert_eq!(u(&e["server_expired"]), rise, "{e}");
    for k in ["never_notified", "duplicated", "early", "others"] {
        assert_eq!(u(&e[k]), 0, "{k}: {e}");
    }
    // The other keys are there still: 500 with a deadline, 500 without.
    assert_eq!(server.dbsize(0), 1000);
    assert!(server.info_field("keyspace", "db0").unwrap().contains("expires=500"), "{}", out.dump());
    // The setting as it was.
    assert_eq!(server.cli(&["CONFIG", "GET", "notify-keyspace-events"]).lines().nth(1), Some("gK"));
    // The SETs the server counted are the keys written and the others.
    assert_eq!(server.command_calls("set"), 4000);
    assert_eq!(u(&t["requests"]), 3000, "{t}");
    assert!(out.stdout.contains("the server's expired_keys rose by 3000"), "{}", out.dump());
}

#[test]
fn the_lag_counts_from_the_deadline_a_second_after_the_write() {
    let server = RedisServer::start_with(&[("notify-keyspace-events", "Ex")]);
    let started_ns = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
    // No window: every deadline is its write's time + 1 s.
    let (out, t) = run(&server, &["-n", "500", "--expiry-window", "0"]);
    let e = &t["expiry"];
    assert_eq!(u(&e["notified"]), 500, "{e}");
    // Notified after their deadlines, so at least a second after the run began ...
    assert_eq!(u(&e["early"]), 0, "{e}");
    assert!(u(&e["first_ns"]) >= started_ns + 1_000_000_000, "{e}");
    // ... and the lag is the time past the deadline, far below the second since the write.
    let p50 = e["lag_ms"]["p50"].as_f64().unwrap();
    assert!(p50 < 600.0, "lag p50 {p50} ms: {}", out.dump());
    assert!(e["lag_ms"]["max"].as_f64().unwrap() > 0.0, "{e}");
}

#[test]
fn without_active_expiry_the_keys_are_never_notified_and_the_report_says_so() {
    let server =
        RedisServer::start_with(&[("notify-keyspace-events", "Ex"), ("enable-debug-command", "yes")]);
    server.cli(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let before = expired_keys(&server);
    let (out, t) = run(&server, &["-n", "200", "--expiry-window", "0", "--expiry-grace", "1s"]);
    let e = &t["expiry"];
    assert_eq!(u(&e["written"]), 200, "{e}");
    assert_eq!(u(&e["never_notified"]), 200, "{e}");
    assert_eq!(u(&e["notified"]), 0, "{e}");
    assert_eq!(expired_keys(&server), before);
    assert!(out.stdout.contains("200 never notified within 1.000 s (100.00%)"), "{}", out.dump());
    assert!(out.stdout.contains("WARNING: 200 keys outlived their deadline"), "{}", out.dump());
    // Turned back on, the keys expire as soon as the server looks at them.
    server.cli(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    respbench_tests::wait_until("the keys expire", Duration::from_secs(30), || server.dbsize(0) == 0);
}

#[test]
fn a_server_without_expired_events_is_refused_with_how_to_enable_them() {
    let server = RedisServer::start();
    let out = respbench_tests::respbench()
        .run(&["-h", "127.0.0.1", "-p", &server.port().to_string(), "-t", "expiry", "-n", "10"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stdout.is_empty(), "{}", out.dump());
    assert!(out.stderr.contains("CONFIG SET notify-keyspace-events Ex"), "{}", out.dump());
    assert!(out.stderr.contains("--set-notify"), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 0);
}

#[test]
fn quiet_and_csv_carry_the_lag_over_an_open_loop() {
    let server = RedisServer::start_with(&[("notify-keyspace-events", "Ex")]);
    let port = server.port().to_string();
    let args = [
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "expiry",
        "-n",
        "400",
        "--rps",
        "1000",
        "--expiry-window",
        "500ms",
    ];
    let q = respbench_tests::respbench().run(&[&args[..], &["-q"]].concat(), T);
    assert!(q.status.success(), "{}", q.dump());
    assert!(
        q.stdout.contains("SET PXAT (expiry lag): expiry: 400 notified, 0 never notified, lag p50="),
        "{}",
        q.dump()
    );
    let c = respbench_tests::respbench().run(&[&args[..], &["--csv"]].concat(), T);
    assert!(c.status.success(), "{}", c.dump());
    let rows = parse_csv(&c.stdout);
    let row = rows.iter().find(|r| r[0] == "expiry").unwrap_or_else(|| panic!("{}", c.dump()));
    assert_eq!(&row[1..5], ["SET PXAT (expiry lag)", "400", "400", "0"], "{}", c.dump());
    assert_eq!(server.command_calls("set"), 800);
    assert_eq!(expired_keys(&server), 800);
}

#[test]
fn a_ctrl_c_mid_run_restores_the_setting() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args =
        ["-h", "127.0.0.1", "-p", &port, "-t", "expiry", "-n", "100000", "--rps", "2000", "--set-notify"];
    let run = respbench_tests::respbench().spawn(&args);
    let flags =
        || server.cli(&["CONFIG", "GET", "notify-keyspace-events"]).lines().nth(1).unwrap_or("").to_string();
    respbench_tests::wait_until("--set-notify's setting", Duration::from_secs(60), || flags().contains('x'));
    respbench_tests::wait_until("some keys written", Duration::from_secs(60), || {
        server.command_calls("set") > 0
    });
    run.interrupt();
    let out = run.wait(T);
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    assert_eq!(flags(), "", "{}", out.dump());
    // Stopped well before its 100,000 keys, and the keys it did not wait for are said so, not
    // counted as never notified.
    let written = server.command_calls("set");
    assert!(written < 100_000, "{}", out.dump());
    assert!(out.stdout.contains(&format!("{written} keys not waited for")), "{}", out.dump());
    assert!(out.stdout.contains(" 0 never notified"), "{}", out.dump());
}

#[test]
fn over_a_cluster_every_primary_is_listened_on_and_every_node_restored() {
    use respbench_tests::cluster::{Cluster, ClusterConfig};
    let config = ClusterConfig { extra: vec![("notify-keyspace-events", "Kg")], ..ClusterConfig::default() };
    let cluster = Cluster::start_with(3, 1, config);
    let nodes = &cluster.nodes;
    let expired = || nodes.iter().map(expired_keys).sum::<u64>();
    let before = expired();
    let (out, t) = run(&nodes[0], &["--cluster", "-n", "3000", "-P", "16", "--set-notify"]);
    let e = &t["expiry"];
    // The keys expire on their slots' primaries, which each published their own.
    let rise = expired() - before;
    assert_eq!(u(&e["written"]), 3000, "{e}");
    assert_eq!(u(&e["notified"]), 3000, "{e}");
    assert_eq!(rise, 3000, "the nodes' expired_keys rose by {rise}: {}", out.dump());
    assert_eq!(u(&e["server_expired"]), rise, "{e}");
    for k in ["never_notified", "duplicated", "others"] {
        assert_eq!(u(&e[k]), 0, "{k}: {e}");
    }
    let sets: Vec<u64> =
        cluster.primary_ports().iter().map(|&p| cluster.node(p).command_calls("set")).collect();
    assert_eq!(sets.iter().sum::<u64>(), 3000, "{sets:?}");
    assert!(sets.iter().all(|&s| s > 500), "each primary wrote its slots' keys: {sets:?}");
    // --set-notify turned the events on on every node, primaries and replicas, and back off.
    for n in nodes {
        assert_eq!(
            n.cli(&["CONFIG", "GET", "notify-keyspace-events"]).lines().nth(1),
            Some("gK"),
            "{}",
            n.port()
        );
    }
}
