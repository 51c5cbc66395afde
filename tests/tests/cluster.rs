//! The core's key slots (CRC16/XMODEM and the hash-tag rule) against a real
//! `redis-server --cluster-enabled yes`, which answers `CLUSTER KEYSLOT` before any slot is
//! assigned: the ground for routing requests to the node that owns their key.
//!
//! Then the topology fixtures (`respbench_tests::cluster`) checked against themselves, and
//! respbench's topology discovery end to end: the option errors and the discovery errors end
//! the run with exit 1 before it starts.

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use respbench_core::cluster::key_slot;
use respbench_tests::cluster::{Cluster, ClusterConfig, ReplicaSet};
use respbench_tests::{encode_command, free_port, respbench, Output, RedisServer};

#[test]
fn key_slots_agree_with_the_server() {
    let server = RedisServer::start_with(&[("cluster-enabled", "yes")]);
    // Suite keys, tagged keys, tag edge cases, and bytes of every value.
    let mut keys: Vec<Vec<u8>> = (0..1000u64).map(|i| format!("key:{i:012}").into_bytes()).collect();
    keys.extend((0..300u64).map(|i| format!("{{user{i}}}:cart:{}", i * 7).into_bytes()));
    for k in ["{}", "{", "}", "a{}b", "a{b", "a}b{c}", "{{x}}", "}{x}", "", "06S", "foo{{bar}}zap"] {
        keys.push(k.as_bytes().to_vec());
    }
    keys.extend((0..=255u8).map(|b| vec![b, b'{', b.wrapping_mul(31), b'}']));
    let mut conn = server.connect();
    let mut batch = Vec::new();
    for k in &keys {
        batch.extend(encode_command(&[b"CLUSTER", b"KEYSLOT", k]));
    }
    conn.write_all(&batch).unwrap();
    let mut replies = BufReader::new(conn);
    for k in &keys {
        let mut line = String::new();
        replies.read_line(&mut line).unwrap();
        let server_slot: u16 = line
            .trim_end()
            .strip_prefix(':')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("CLUSTER KEYSLOT replied {line:?}"));
        assert_eq!(key_slot(k), server_slot, "key {:?}", String::from_utf8_lossy(k));
    }
}

/// The hard limit of a run that is expected to end on its own.
const T: Duration = Duration::from_secs(20);

/// Runs respbench against 127.0.0.1:`port` with `args`.
fn run_at(port: u16, args: &[&str]) -> Output {
    let mut all = vec!["-h".to_string(), "127.0.0.1".to_string(), "-p".to_string(), port.to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    respbench().run(&all, T)
}

/// The run ended with exit 1 before it started, saying `message` on stderr.
fn refused(out: &Output, message: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains(message), "expected {message:?}\n{}", out.dump());
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    assert!(out.stdout.is_empty(), "a test ran:\n{}", out.dump());
}

#[test]
fn option_errors_exit_1_before_connecting() {
    // Port 1: nothing listens, so a message that is not the option's would be a connect error.
    for (args, message) in [
        (
            &["--rfr", "maybe", "--cluster"][..],
            "invalid value 'maybe' for --rfr: the choices are no, yes and all",
        ),
        (&["--replicas", "all"], "invalid value 'all' for --replicas: the only value is auto"),
        (&["--replica", "10.0.0.1"], "invalid value '10.0.0.1' for --replica: expected HOST:PORT"),
        (&["--replica", "h:0"], "invalid value 'h:0' for --replica: the port must be 1 to 65535"),
        (
            &["--replicas", "auto", "--replica", "h:1"],
            "--replicas auto and --replica conflict: name the replicas or let respbench find them",
        ),
        (
            &["--cluster", "--replicas", "auto"],
            "--replicas and --replica are for a standalone primary; in cluster mode the replicas come from \
             the cluster: use --rfr",
        ),
        (&["--cluster", "--replica", "h:1"], "in cluster mode the replicas come from the cluster: use --rfr"),
        (&["--cluster", "--dbnum", "1"], "SELECT is refused in cluster mode: drop --dbnum"),
        (&["--cluster", "-s", "/tmp/none.sock"], "--cluster needs a TCP address (-h/-p), not -s"),
        (
            &["--rfr", "yes"],
            "--rfr reads from replicas: add --cluster, --replicas auto or --replica HOST:PORT",
        ),
        (
            &["--rfr", "all"],
            "--rfr reads from replicas: add --cluster, --replicas auto or --replica HOST:PORT",
        ),
        (&["--rfr", "no", "--replica", "h:1"], "--rfr no sends no reads to the replicas you named"),
    ] {
        let out = run_at(1, args);
        refused(&out, message);
        assert!(out.stderr.contains("Run 'respbench --help' for the options."), "{}", out.dump());
    }
}

#[test]
fn help_describes_the_topology_options() {
    let out = respbench().run(&["--help"], T);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    for option in ["--cluster", "--rfr", "--replicas", "--replica "] {
        assert!(out.stdout.contains(option), "{option} missing:\n{}", out.stdout);
    }
    assert!(!out.stdout.contains("not supported yet"), "{}", out.stdout);
}

#[test]
fn cluster_against_a_server_without_cluster_support() {
    let server = RedisServer::start();
    let out = run_at(server.port(), &["--cluster", "-t", "ping", "-n", "10", "-q"]);
    let at = format!("127.0.0.1:{}", server.port());
    refused(
        &out,
        &format!("--cluster: {at} has cluster support disabled (cluster-enabled no): drop --cluster"),
    );
}

#[test]
fn cluster_with_unassigned_slots() {
    // A cluster-enabled node that was never given slots: the cluster is down.
    let server = RedisServer::start_with(&[("cluster-enabled", "yes")]);
    let out = run_at(server.port(), &["--cluster", "-t", "ping", "-n", "10", "-q"]);
    refused(&out, "--cluster: 16384 of 16384 slots have no primary that is up in the cluster of 127.0.0.1:");
}

#[test]
fn rfr_yes_without_replicas() {
    let server = RedisServer::start();
    let at = format!("127.0.0.1:{}", server.port());
    let out = run_at(server.port(), &["--rfr", "yes", "--replicas", "auto", "-t", "ping", "-n", "10", "-q"]);
    refused(&out, &format!("--rfr yes: {at} has no replicas"));
    let out = run_at(server.port(), &["--rfr", "all", "--replicas", "auto", "-t", "ping", "-n", "10", "-q"]);
    refused(&out, &format!("--rfr all: {at} has no replicas"));
}

#[test]
fn a_named_replica_that_is_down() {
    let server = RedisServer::start();
    let down = free_port();
    let out =
        run_at(server.port(), &["--replica", &format!("127.0.0.1:{down}"), "-t", "ping", "-n", "10", "-q"]);
    refused(&out, &format!("replica 127.0.0.1:{down} (from --replica) cannot be reached: "));
    assert!(out.stderr.contains("Connection refused"), "{}", out.dump());
}

#[test]
fn replica_set_discovery() {
    let set = ReplicaSet::start(2);
    assert_eq!(set.online_replicas(), 2);
    let primary = set.primary.port();
    // Found (ROLE) and reachable: the run goes on, and PING needs no routing.
    let out = run_at(primary, &["--replicas", "auto", "-t", "ping", "-n", "10", "-c", "1", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    // -h/-p must be the primary.
    let replica = set.replicas[0].port();
    let out = run_at(replica, &["--replicas", "auto", "-t", "ping", "-n", "10", "-q"]);
    refused(
        &out,
        &format!("-h/-p must be the primary: 127.0.0.1:{replica} is a replica of 127.0.0.1:{primary}"),
    );
    let out =
        run_at(replica, &["--replica", &format!("127.0.0.1:{primary}"), "-t", "ping", "-n", "10", "-q"]);
    refused(&out, "-h/-p must be the primary");
}

#[test]
fn replica_set_discovery_without_role() {
    // Managed services rename ROLE away: INFO replication says the same.
    let set = ReplicaSet::start_with(1, &[("rename-command", "ROLE \"\"")]);
    let primary = set.primary.port();
    let out = run_at(primary, &["--replicas", "auto", "-t", "ping", "-n", "10", "-c", "1", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    // The replica, renamed too, is found out by INFO as well.
    let replica = RedisServer::start_with(&[
        ("rename-command", "ROLE \"\""),
        ("replicaof", &format!("127.0.0.1 {primary}")),
    ]);
    let out = run_at(replica.port(), &["--replicas", "auto", "-t", "ping", "-n", "10", "-q"]);
    refused(&out, &format!("is a replica of 127.0.0.1:{primary}"));
}

#[test]
fn cluster_fixture_and_discovery() {
    let started = Instant::now();
    let cluster = Cluster::start(3, 1);
    eprintln!("a 3+3 cluster settled in {:?}", started.elapsed());
    let primaries = cluster.primary_ports();
    let replicas = cluster.replica_ports();
    assert_eq!((primaries.len(), replicas.len()), (3, 3));
    assert_eq!(primaries.iter().map(|&p| cluster.slots_of(p)).sum::<usize>(), 16384);
    assert!(replicas.iter().all(|&p| cluster.slots_of(p) == 0));
    assert_eq!(cluster.owner_of(0, replicas[0]), primaries[0]);
    assert_eq!(cluster.node_id(primaries[0]).len(), 40);
    // From a primary or a replica, discovery passes (PING needs no routing); with --rfr too.
    for (port, rfr) in [(primaries[1], "no"), (replicas[2], "yes"), (primaries[0], "all")] {
        let out = run_at(port, &["--cluster", "--rfr", rfr, "-t", "ping", "-n", "10", "-c", "1", "-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    }
}

#[test]
fn cluster_node_down_is_named() {
    // A long node timeout: the killed replica is not marked failed while respbench looks.
    let config = ClusterConfig { node_timeout: Duration::from_secs(60), ..ClusterConfig::default() };
    let mut cluster = Cluster::start_with(3, 1, config);
    let replica = cluster.replica_ports()[1];
    cluster.kill(replica);
    let seed = cluster.primary_ports()[0];
    let out = run_at(seed, &["--cluster", "-t", "ping", "-n", "10", "-q"]);
    refused(&out, &format!("replica 127.0.0.1:{replica} (from CLUSTER SHARDS) cannot be reached: "));
}

#[test]
fn cluster_fixture_changes() {
    let mut cluster = Cluster::start(3, 1);
    let primaries = cluster.primary_ports();
    let (from, to) = (primaries[0], primaries[1]);
    // Slot 0's key "06S", and a hash-tagged one.
    let slot = 0;
    let a = cluster.node(from);
    a.cli(&["SET", "06S", "v"]);
    a.cli(&["SET", "{06S}:x", "w"]);
    cluster.begin_migration(slot, from, to);
    assert_eq!(cluster.move_keys(slot, from, to), 2);
    // Half-way: the old owner sends the client on with ASK.
    let reply = cluster.node(from).cli(&["GET", "06S"]);
    assert!(reply.starts_with("ASK 0 127.0.0.1:"), "{reply}");
    cluster.finish_migration(slot, from, to);
    let reply = cluster.node(from).cli(&["GET", "06S"]);
    assert_eq!(reply, format!("MOVED 0 127.0.0.1:{to}"));
    assert_eq!(cluster.slots_of(from) + 1, 5461);
    // A new primary owns nothing until given a slot.
    let new = cluster.add_primary();
    assert_eq!(cluster.slots_of(new), 0);
    cluster.migrate_slot(slot, to, new);
    assert_eq!((cluster.slots_of(new), cluster.owner_of(slot, from)), (1, new));
    // A failover makes the replica of `to` a primary.
    let replica = cluster
        .replica_ports()
        .into_iter()
        .find(|&r| cluster.node(r).cli(&["INFO", "replication"]).contains(&format!("master_port:{to}")))
        .expect("a replica of the second primary");
    cluster.failover(replica);
    assert!(cluster.primary_ports().contains(&replica));
    assert!(cluster.replica_ports().contains(&to));
    // A killed primary's replica takes over once the others mark it failed.
    let third = primaries[2];
    let heir = cluster
        .replica_ports()
        .into_iter()
        .find(|&r| cluster.node(r).cli(&["INFO", "replication"]).contains(&format!("master_port:{third}")))
        .expect("a replica of the third primary");
    cluster.kill(third);
    cluster.wait_settled();
    assert!(cluster.primary_ports().contains(&heir));
    assert_eq!(cluster.primary_ports().iter().map(|&p| cluster.slots_of(p)).sum::<usize>(), 16384);
}

#[test]
fn tls_cluster_discovery() {
    let started = Instant::now();
    let config =
        ClusterConfig { node_timeout: Duration::from_secs(60), tls: true, ..ClusterConfig::default() };
    let mut cluster = Cluster::start_with(3, 1, config);
    eprintln!("a 3+3 TLS cluster settled in {:?}", started.elapsed());
    let ca = cluster.certs().unwrap().ca.to_str().unwrap().to_string();
    let primaries = cluster.primary_ports();
    assert_eq!(primaries.iter().map(|&p| cluster.slots_of(p)).sum::<usize>(), 16384);
    let seed = cluster.tls_port(primaries[0]);
    // Every node reached over TLS, each checked against its own address.
    let args = ["--tls", "--cacert", &ca, "--cluster", "-t", "ping", "-n", "10", "-c", "1", "-q"];
    let out = run_at(seed, &args);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    // Discovery names the TLS port a TLS client is told.
    let replica = cluster.replica_ports()[0];
    let replica_tls = cluster.tls_port(replica);
    cluster.kill(replica);
    let out = run_at(seed, &args);
    refused(&out, &format!("replica 127.0.0.1:{replica_tls} (from CLUSTER SHARDS) cannot be reached: "));
}
