//! Invalidation latency (`-t tracking`, issue #52) against a real redis-server: readers with
//! `CLIENT TRACKING ON` (RESP3) each receive exactly the invalidations of the keys they read,
//! as many as the server tracked (`INFO stats` tracking_total_items), none lost, over an open
//! loop. The matching (expected, lost, duplicated, flushes) is unit-tested in
//! core/src/tracking.rs.

use std::time::Duration;

use respbench_tests::{json_path, parse_csv, take_document, RedisServer};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn ten_readers_receive_every_invalidation_of_the_keys_they_read() {
    let server = RedisServer::start();
    let json = json_path("tracking", "run");
    let port = server.port().to_string();
    let args = ["-h", "127.0.0.1", "-p", &port, "-t", "tracking", "--subscribers", "10", "--rps", "1000"];
    let out = respbench_tests::respbench()
        .run(&[&args[..], &["--duration", "3s", "--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let doc: Value =
        serde_json::from_str(&take_document(&json)).unwrap_or_else(|e| panic!("{e}: {}", out.dump()));
    let t = &doc["tests"][0]["tracking"];
    // 3,000 keys, each written once: reader r read the keys i % 10 == r and every fourth.
    let expected: u64 =
        (0..10u64).map(|r| (0..3000u64).filter(|i| i % 10 == r || i % 4 == 0).count() as u64).sum();
    assert_eq!(server.command_calls("set"), 3000);
    assert_eq!(u(&t["readers"]), 10, "{t}");
    assert_eq!(u(&t["expected"]), expected, "{t}");
    assert_eq!(u(&t["received"]), expected, "{t}");
    // The server tracked each reader's keys: as many pairs as invalidations expected.
    assert_eq!(u(&t["tracking_total_items"]), expected, "{t}");
    assert_eq!(u(&t["tracking_total_keys"]), 3000, "{t}");
    for k in ["lost", "duplicated", "flushes", "flushed", "others"] {
        assert_eq!(u(&t[k]), 0, "{k}: {t}");
    }
    assert!(t["latency_ms"]["max"].as_f64().unwrap() > 0.0, "{t}");
    // Every invalidation was sent: the server tracks nothing now.
    assert_eq!(server.info_field("stats", "tracking_total_items").as_deref(), Some("0"));
    assert!(
        out.stdout.contains(&format!("{expected} invalidations expected, {expected} received, 0 lost")),
        "{}",
        out.dump()
    );
}

#[test]
fn quiet_and_csv_carry_the_invalidations() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = ["-h", "127.0.0.1", "-p", &port, "-t", "tracking", "--subscribers", "2", "-n", "400"];
    let q = respbench_tests::respbench().run(&[&args[..], &["-q"]].concat(), T);
    assert!(q.status.success(), "{}", q.dump());
    // Reader 0: the even keys (200); reader 1: the odd ones and every fourth (300).
    assert!(q.stdout.contains("tracking: 500 expected, 500 received, 0 lost, latency p50="), "{}", q.dump());
    let c = respbench_tests::respbench().run(&[&args[..], &["--csv"]].concat(), T);
    assert!(c.status.success(), "{}", c.dump());
    let rows = parse_csv(&c.stdout);
    let row = rows.iter().find(|r| r[0] == "tracking").unwrap_or_else(|| panic!("{}", c.dump()));
    assert_eq!(&row[2..7], ["2", "500", "500", "0", "0"], "{}", c.dump());
}

#[test]
fn tracking_needs_a_rate_for_a_duration_and_runs_alone() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench_tests::respbench()
        .run(&["-h", "127.0.0.1", "-p", &port, "-t", "tracking", "--duration", "1s"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("give --rps too"), "{}", out.dump());
    let out = respbench_tests::respbench().run(&["-h", "127.0.0.1", "-p", &port, "-t", "tracking,get"], T);
    assert_ne!(out.status.code(), Some(0), "{}", out.dump());
    assert!(out.stderr.contains("-t tracking runs alone"), "{}", out.dump());
    assert_eq!(server.command_calls("set") + server.command_calls("get"), 0);
}

#[test]
fn a_flush_invalidates_every_key_once_and_loses_none() {
    let server = RedisServer::start();
    let json = json_path("tracking", "flush");
    let port = server.port().to_string();
    let run = respbench_tests::respbench().spawn(&[
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "tracking",
        "--subscribers",
        "4",
        "-n",
        "4000",
        "--rps",
        "500",
        "--json",
        json.to_str().unwrap(),
    ]);
    // Once every reader has read (the server tracks all their keys), a FLUSHALL mid-run: the
    // writer starts only then, so its first SET says so (one reader's keys tracked did not: the
    // other three had not read yet, and heard no flush).
    let writing = || server.command_calls("set") > 0;
    respbench_tests::wait_until("the writer's first SET", Duration::from_secs(60), writing);
    server.cli(&["FLUSHALL"]);
    let out = run.wait(T);
    assert!(out.status.success(), "{}", out.dump());
    let doc: Value =
        serde_json::from_str(&take_document(&json)).unwrap_or_else(|e| panic!("{e}: {}", out.dump()));
    let t = &doc["tests"][0]["tracking"];
    // Each reader heard the flush once; what it did not hear of its keys was flushed, not lost.
    assert_eq!(u(&t["flushes"]), 4, "{t}");
    assert_eq!(u(&t["lost"]), 0, "{t}");
    assert!(u(&t["flushed"]) > 0, "{t}");
    assert_eq!(u(&t["received"]) + u(&t["flushed"]), u(&t["expected"]), "{t}");
    assert_eq!(server.command_calls("set"), 4000);
}

/// Runs `-t tracking` on `server` with `extra` options: the JSON's `tracking` object.
fn tracking_run(server: &RedisServer, extra: &[&str]) -> Value {
    let json = json_path("tracking", "mode");
    let port = server.port().to_string();
    let args = ["-h", "127.0.0.1", "-p", &port, "-t", "tracking", "--json", json.to_str().unwrap()];
    let out = respbench_tests::respbench().run(&[&args[..], extra].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let doc: Value =
        serde_json::from_str(&take_document(&json)).unwrap_or_else(|e| panic!("{e}: {}", out.dump()));
    let t = doc["tests"][0]["tracking"].clone();
    for k in ["lost", "duplicated", "flushes", "flushed", "others"] {
        assert_eq!(u(&t[k]), 0, "{k}: {t}");
    }
    assert_eq!(u(&t["received"]), u(&t["expected"]), "{t}");
    assert!(u(&t["before_ack"]) <= u(&t["received"]), "{t}");
    t
}

#[test]
fn bcast_readers_hear_every_write_under_their_prefixes_without_reading() {
    let server = RedisServer::start();
    // Keys 0-9 and 100-199 of 400: 110 a reader, whatever it read (BCAST readers read nothing).
    let p = [
        "--tracking-prefix",
        "respbench:tracking:00000000000",
        "--tracking-prefix",
        "respbench:tracking:0000000001",
    ];
    let t = tracking_run(
        &server,
        &[&["--tracking-mode", "bcast", "--subscribers", "3", "-n", "400"][..], &p].concat(),
    );
    assert_eq!((u(&t["readers"]), u(&t["expected"])), (3, 330), "{t}");
    assert_eq!(server.command_calls("get"), 0);
    assert_eq!(server.command_calls("set"), 400);
    // BCAST tracks prefixes, not keys.
    assert_eq!(u(&t["tracking_total_keys"]), 0, "{t}");
}

#[test]
fn optin_readers_hear_the_keys_they_cached() {
    let server = RedisServer::start();
    let t = tracking_run(&server, &["--tracking-mode", "optin", "--subscribers", "2", "-n", "400"]);
    // Reader 0: the even keys (200); reader 1: the odd ones and every fourth (300), each read
    // after a CLIENT CACHING yes.
    assert_eq!(u(&t["expected"]), 500, "{t}");
    assert_eq!(u(&t["tracking_total_items"]), 500, "{t}");
    assert_eq!(server.command_calls("client|caching"), 500);
    assert_eq!(server.command_calls("get"), 500);
}

#[test]
fn resp2_readers_hear_on_their_redirect_connections() {
    let server = RedisServer::start();
    let t = tracking_run(&server, &["--tracking-redirect", "--subscribers", "2", "-n", "400"]);
    assert_eq!(u(&t["expected"]), 500, "{t}");
    assert_eq!(u(&t["tracking_total_items"]), 500, "{t}");
    // No reader said HELLO 3: each subscribed a connection of its own.
    assert_eq!(server.command_calls("hello"), 0);
    assert_eq!(server.command_calls("subscribe"), 2);
}

#[test]
fn readers_that_turn_tracking_off_expect_nothing_and_lose_nothing() {
    let server = RedisServer::start();
    let t = tracking_run(&server, &["--subscribers", "4", "--tracking-off", "2", "-n", "400"]);
    // Readers 0 and 1 read 100 and 200 keys then turned tracking off; readers 2 and 3 read
    // 200 each and hear them. The server keeps the first two's keys in its table (it drops a
    // client's keys lazily), so it tracked 700 pairs.
    assert_eq!(u(&t["expected"]), 400, "{t}");
    assert_eq!(u(&t["tracking_total_items"]), 700, "{t}");
    assert_eq!(server.command_calls("client|tracking"), 6);
}

#[test]
fn over_a_cluster_readers_track_their_keys_on_each_slots_primary() {
    let cluster = respbench_tests::cluster::Cluster::start(3, 0);
    let nodes = &cluster.nodes;
    let t = tracking_run(&nodes[0], &["--cluster", "--subscribers", "2", "-n", "400"]);
    // Reader 0: the even keys (200); reader 1: the odd ones and every fourth (300), each read
    // on the primary serving its slot, which tracked it there.
    assert_eq!(u(&t["expected"]), 500, "{t}");
    assert_eq!(u(&t["tracking_total_items"]), 500, "{t}");
    assert_eq!(u(&t["tracking_total_keys"]), 400, "{t}");
    let calls = |c: &str| nodes.iter().map(|n| n.command_calls(c)).collect::<Vec<_>>();
    let (gets, sets) = (calls("get"), calls("set"));
    assert_eq!((gets.iter().sum::<u64>(), sets.iter().sum::<u64>()), (500, 400), "{gets:?} {sets:?}");
    assert!(sets.iter().all(|&s| s > 50), "{sets:?}");
    for n in nodes {
        assert_eq!(n.info_field("stats", "tracking_total_items").as_deref(), Some("0"), "{}", n.port());
    }
}

#[test]
fn over_a_cluster_a_flush_of_one_primary_reaches_its_readers_once() {
    let cluster = respbench_tests::cluster::Cluster::start(3, 0);
    let port = cluster.nodes[0].port().to_string();
    let json = json_path("tracking", "cluster-flush");
    let run = respbench_tests::respbench().spawn(&[
        "-p",
        &port,
        "--cluster",
        "-t",
        "tracking",
        "--subscribers",
        "2",
        "-n",
        "3000",
        "--rps",
        "500",
        "--json",
        json.to_str().unwrap(),
    ]);
    let sets = || cluster.nodes.iter().map(|n| n.command_calls("set")).sum::<u64>();
    respbench_tests::wait_until("the writer's first SET", Duration::from_secs(60), || sets() > 0);
    let flushed = cluster.primary_ports()[0];
    cluster.node(flushed).cli(&["FLUSHALL"]);
    let out = run.wait(T);
    assert!(out.status.success(), "{}", out.dump());
    let doc: Value =
        serde_json::from_str(&take_document(&json)).unwrap_or_else(|e| panic!("{e}: {}", out.dump()));
    let t = &doc["tests"][0]["tracking"];
    // Each reader's connection on the flushed primary heard it once, those on the others not;
    // what the flushed node's readers did not hear was flushed, the other nodes' keys came.
    assert_eq!(u(&t["flushes"]), 2, "{t}");
    assert_eq!(u(&t["readers"]), 2, "{t}");
    assert_eq!(u(&t["lost"]), 0, "{t}");
    assert!(u(&t["flushed"]) > 0, "{t}");
    assert_eq!(u(&t["received"]) + u(&t["flushed"]), u(&t["expected"]), "{t}");
    assert_eq!(u(&t["expected"]), 3750, "{t}");
    assert_eq!(sets(), 3000);
}
