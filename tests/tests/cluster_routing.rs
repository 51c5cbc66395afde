//! Requests over several nodes against real servers: a 3-primary cluster with
//! a replica each (routing by slot, a slot migrated mid-run, a failover, a primary killed, a
//! node added and given a slot mid-run, reads from replicas) and a standalone primary with two
//! replicas (the read/write split). Every count is checked against the servers' own
//! `INFO commandstats`. Routing is the core's and the command line's, so these run once, on mio;
//! a node that appears mid-run, whose connection each backend keeps dormant until a redirect
//! names it, runs on every backend.

use std::time::Duration;

use respbench_core::cluster::key_slot;
use respbench_tests::cluster::{Cluster, ReplicaSet};
use respbench_tests::{json_path, redis_benchmark, take_document, wait_until, Output, Tool};

/// The hard limit of a run that is expected to end on its own.
const T: Duration = Duration::from_secs(60);

fn run_at(tool: &Tool, port: u16, args: &[&str]) -> Output {
    let mut all = vec!["-h".to_string(), "127.0.0.1".to_string(), "-p".to_string(), port.to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    tool.run(&all, T)
}

fn ok(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
}

/// `calls` of `command` on each of `ports`.
fn calls(cluster: &Cluster, ports: &[u16], command: &str) -> Vec<u64> {
    ports.iter().map(|&p| cluster.node(p).command_calls(command)).collect()
}

/// What each of `ports` executed of `command` since `before` (its [`calls`] then): the checks
/// that share a cluster count their own run only.
fn calls_since(cluster: &Cluster, ports: &[u16], command: &str, before: &[u64]) -> Vec<u64> {
    calls(cluster, ports, command).iter().zip(before).map(|(now, then)| now - then).collect()
}

/// `rejected_calls` of `command` on each of `ports`.
fn rejections(cluster: &Cluster, ports: &[u16], command: &str) -> Vec<u64> {
    ports.iter().map(|&p| rejected(cluster, p, command)).collect()
}

/// `rejected_calls` of `command` at `port`: the requests it answered with a redirect.
fn rejected(cluster: &Cluster, port: u16, command: &str) -> u64 {
    cluster
        .node(port)
        .info_field("commandstats", &format!("cmdstat_{command}"))
        .and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix("rejected_calls=")?.parse().ok()))
        .unwrap_or(0)
}

/// The checks that only read the servers' counts share one cluster (3 primaries, a replica
/// each): starting one takes seconds, and nextest runs each test in a process of its own, so
/// they run in turn in one test, each counting the servers' calls of its own run (deltas).
/// Checks that change the topology start their own.
#[test]
fn read_only_checks_on_one_cluster() {
    let cluster = Cluster::start(3, 1);
    let tool = respbench_tests::respbench_on("mio");
    requests_go_to_the_primary_of_their_slot(&tool, &cluster);
    cluster_reads_from_replicas(&tool, &cluster);
    an_open_loop_rate_over_a_cluster(&tool, &cluster);
    redis_benchmark_side_by_side(&cluster);
    custom_commands_route_by_the_keys_the_server_names(&cluster);
    refused_before_the_run(&cluster);
}

/// A stable cluster: every request goes straight to its slot's primary, so the primaries
/// execute exactly `-n` of each command between them, in proportion to their slots, and
/// reject none (no redirect; MSET's and MGET's ten keys share a slot).
fn requests_go_to_the_primary_of_their_slot(tool: &Tool, cluster: &Cluster) {
    let primaries = cluster.primary_ports();
    let replicas = cluster.replica_ports();
    let commands = ["set", "get", "mset", "mget"];
    let before = commands.map(|cmd| (calls(cluster, &primaries, cmd), rejections(cluster, &primaries, cmd)));
    let replica_gets = calls(cluster, &replicas, "get");
    let out = run_at(
        tool,
        primaries[0],
        &["--cluster", "-t", "set,get,mset,mget", "-n", "30000", "-r", "100000", "-q"],
    );
    ok(&out);
    for (cmd, (calls_before, rejected_before)) in commands.iter().zip(&before) {
        let per_node = calls_since(cluster, &primaries, cmd, calls_before);
        assert_eq!(per_node.iter().sum::<u64>(), 30000, "{cmd}: {per_node:?}\n{}", out.dump());
        for (&port, &n) in primaries.iter().zip(&per_node) {
            let share = n as f64 / 30000.0;
            let slots = cluster.slots_of(port) as f64 / 16384.0;
            assert!(
                (share - slots).abs() < 0.05,
                "{cmd} at {port}: {share:.3} of the requests, {slots:.3} of the slots"
            );
        }
        assert_eq!(&rejections(cluster, &primaries, cmd), rejected_before, "{cmd} was redirected");
    }
    // The replicas ran what their primaries replicated, and were sent nothing themselves.
    assert_eq!(calls_since(cluster, &replicas, "get", &replica_gets), vec![0, 0, 0]);
}

/// A slot migrated while the run writes keys of that slot only: `ASK` while keys move, then
/// `MOVED`; every request completes once (the two primaries execute exactly `-n` SETs between
/// them), with the `ASKING`s the target saw.
fn a_slot_migrated_mid_run(tool: Tool) {
    let cluster = Cluster::start(3, 1);
    let primaries = cluster.primary_ports();
    let slot = key_slot(b"x");
    let from = cluster.owner_of(slot, primaries[0]);
    let to = *primaries.iter().find(|&&p| p != from).unwrap();
    let path = json_path("cluster-routing", "migration");
    let json = path.to_str().unwrap();
    let mover = std::thread::scope(|s| {
        let c = &cluster;
        let mover = s.spawn(move || {
            // Under way: the source has served some of the slot's keys.
            wait_until("the run's first SETs", T, || c.node(from).command_calls("set") >= 1000);
            c.begin_migration(slot, from, to);
            let mut moved = 0;
            for _ in 0..20 {
                moved += c.move_keys(slot, from, to);
                std::thread::sleep(Duration::from_millis(50));
            }
            c.finish_migration(slot, from, to);
            moved
        });
        let out = run_at(
            &tool,
            primaries[0],
            &[
                "--cluster",
                "-c",
                "10",
                "-n",
                "150000",
                "-r",
                "5000",
                "--json",
                json,
                "SET",
                "{x}:__rand_int__",
                "v",
            ],
        );
        ok(&out);
        (mover.join().unwrap(), out)
    });
    let (moved, out) = mover;
    assert!(moved > 0, "no key moved");
    let sets = calls(&cluster, &[from, to], "set");
    assert_eq!(sets.iter().sum::<u64>(), 150000, "{sets:?}\n{}", out.dump());
    assert!(sets[1] > 0, "the target executed nothing: {sets:?}");
    let asking = cluster.node(to).command_calls("asking");
    assert!(asking > 0, "no ASK was followed");
    // Each ASKING went before a SET that the source had answered with ASK; the source's other
    // rejections are MOVED.
    assert!(
        rejected(&cluster, from, "set") >= asking,
        "{} rejected, {asking} ASKING",
        rejected(&cluster, from, "set")
    );
    assert_eq!(cluster.owner_of(slot, to), to);
    // respbench's own counts: every request once, redirects apart, each counted at the node
    // that sent it, as the servers counted them.
    let doc: serde_json::Value = serde_json::from_str(&take_document(&path)).unwrap();
    let test = &doc["tests"][0];
    assert_eq!(test["requests"], 150000, "{test}");
    let redirects = &test["redirects"];
    let count = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap();
    assert_eq!(count(redirects, "ask"), asking, "{redirects}");
    assert!(count(redirects, "moved") > 0, "no MOVED after the migration: {redirects}");
    let node = |port: u16| {
        let address = format!("127.0.0.1:{port}");
        let nodes = test["nodes"].as_array().unwrap();
        nodes.iter().find(|n| n["address"] == address.as_str()).cloned().unwrap()
    };
    let source = &node(from)["redirects"];
    assert_eq!(count(source, "ask") + count(source, "moved"), rejected(&cluster, from, "set"), "{source}");
    assert_eq!(node(from)["requests"].as_u64().unwrap() + node(to)["requests"].as_u64().unwrap(), 150000);
    eprintln!("redirects during the migration: {redirects}");
}

/// A manual failover (`CLUSTER FAILOVER` on a replica) mid-run: the old primary answers
/// `MOVED` to its replica, which every client is already connected to; nothing is lost. The run
/// goes on until the new primary has served a thousand SETs, then Ctrl-C ends it (status 130,
/// and no connection failed).
fn a_manual_failover_mid_run(tool: Tool) {
    let cluster = Cluster::start(3, 1);
    let primaries = cluster.primary_ports();
    let replica = cluster.replica_ports()[0];
    let all: Vec<String> = ["-h", "127.0.0.1", "-p", &primaries[0].to_string()]
        .into_iter()
        .chain(["--cluster", "-c", "10", "--duration", "10m", "-r", "10000", "-t", "set"])
        .map(String::from)
        .collect();
    let run = tool.spawn(&all);
    let sets = |port: u16| cluster.node(port).command_calls("set");
    wait_until("the run's first SETs", T, || primaries.iter().map(|&p| sets(p)).sum::<u64>() >= 1000);
    cluster.failover(replica);
    // The replica's own count went on from the replication stream it executed.
    let before = sets(replica);
    wait_until("SETs at the new primary", T, || sets(replica) >= before + 1000);
    run.interrupt();
    let out = run.wait(T);
    assert_eq!(out.status.code(), Some(130), "{}", out.dump());
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    assert!(!out.stderr.contains("failed"), "{}", out.dump());
}

/// A primary killed mid-run (`--reconnect`): its requests in flight are lost and counted, the
/// others wait for its replica to take over, and the run goes on to its end.
fn a_killed_primary_mid_run(tool: Tool) {
    let mut cluster = Cluster::start(3, 1);
    let primaries = cluster.primary_ports();
    let victim = primaries[2];
    let running = {
        let mut all: Vec<String> = ["-h", "127.0.0.1", "-p"].iter().map(|s| s.to_string()).collect();
        all.push(primaries[0].to_string());
        for a in [
            "--cluster",
            "--reconnect",
            "-c",
            "10",
            "--duration",
            "12s",
            "-r",
            "10000",
            "-t",
            "set",
            "--series",
        ] {
            all.push(a.to_string());
        }
        tool.spawn(&all)
    };
    let sets = |c: &Cluster| primaries.iter().map(|&p| c.node(p).command_calls("set")).sum::<u64>();
    wait_until("the run's first SETs", T, || sets(&cluster) >= 1000);
    cluster.kill(victim);
    cluster.wait_settled();
    // The replica has taken over: requests of its slots flow again, to it, while the run goes
    // on (12 s leave a loaded machine time for a failover that takes 2 to 4 s).
    let promoted =
        cluster.primary_ports().into_iter().find(|p| !primaries.contains(p)).expect("a replica took over");
    let at_takeover = cluster.node(promoted).command_calls("set");
    let out = running.wait(T);
    // Connections to the dead node went down and did not come back: exit 1, said so.
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stdout.contains("second"), "{}", out.dump());
    let served = cluster.node(promoted).command_calls("set") - at_takeover;
    assert!(served > 100, "{served} SETs at the new primary after the takeover\n{}", out.dump());
}

/// A primary added to the cluster and given a slot mid-run: no client knew it at the start;
/// the redirects name it and the clients connect to it.
fn a_node_added_mid_run(tool: Tool) {
    let mut cluster = Cluster::start(3, 0);
    let primaries = cluster.primary_ports();
    let slot = key_slot(b"x");
    let from = cluster.owner_of(slot, primaries[0]);
    let added = cluster.add_primary();
    let out = std::thread::scope(|s| {
        let c = &cluster;
        s.spawn(move || {
            wait_until("the run's first SETs", T, || c.node(from).command_calls("set") >= 1000);
            c.migrate_slot(slot, from, added);
        });
        run_at(
            &tool,
            primaries[0],
            &["--cluster", "-c", "10", "-n", "100000", "-r", "5000", "SET", "{x}:__rand_int__", "v"],
        )
    });
    ok(&out);
    let sets = calls(&cluster, &[from, added], "set");
    assert_eq!(sets.iter().sum::<u64>(), 100000, "{sets:?}\n{}", out.dump());
    assert!(sets[1] > 0, "nothing reached the new node: {sets:?}\n{}", out.dump());
}

/// `--rfr yes` in a cluster: every GET at a replica of its slot's primary (`READONLY`), every
/// SET at the primary.
fn cluster_reads_from_replicas(tool: &Tool, cluster: &Cluster) {
    let primaries = cluster.primary_ports();
    let replicas = cluster.replica_ports();
    let before = |ports: &[u16], cmd: &str| calls(cluster, ports, cmd);
    let (primary_gets, replica_gets) = (before(&primaries, "get"), before(&replicas, "get"));
    let (sets, readonly) = (before(&primaries, "set"), before(&replicas, "readonly"));
    let out = run_at(
        tool,
        primaries[0],
        &["--cluster", "--rfr", "yes", "-t", "set,get", "-n", "20000", "-r", "10000", "-q"],
    );
    ok(&out);
    assert_eq!(calls_since(cluster, &primaries, "get", &primary_gets), vec![0, 0, 0]);
    let gets = calls_since(cluster, &replicas, "get", &replica_gets);
    assert_eq!(gets.iter().sum::<u64>(), 20000, "{gets:?}");
    assert!(gets.iter().all(|&g| g > 4000), "{gets:?}");
    assert_eq!(calls_since(cluster, &primaries, "set", &sets).iter().sum::<u64>(), 20000);
    assert!(calls_since(cluster, &replicas, "readonly", &readonly).iter().all(|&n| n > 0));
}

/// The guide's experiment: a primary and two replicas, SET at the primary, GET over both
/// replicas (`--replicas auto`), counted at each server.
fn the_read_write_split(tool: Tool) {
    let set = ReplicaSet::start(2);
    let out = run_at(
        &tool,
        set.primary.port(),
        &["--replicas", "auto", "-t", "set,get", "-n", "20000", "-r", "10000", "-q"],
    );
    ok(&out);
    assert_eq!(set.primary.command_calls("set"), 20000);
    assert_eq!(set.primary.command_calls("get"), 0, "a read went to the primary");
    let gets: Vec<u64> = set.replicas.iter().map(|r| r.command_calls("get")).collect();
    assert_eq!(gets.iter().sum::<u64>(), 20000, "{gets:?}");
    assert!(gets.iter().all(|&g| g > 6000), "reads not spread: {gets:?}");
    // Standalone replicas refuse READONLY: it is not sent.
    assert!(set.replicas.iter().all(|r| r.command_calls("readonly") == 0));
}

respbench_tests::backend_tests!(
    every: [a_node_added_mid_run],
    mio: [
        a_slot_migrated_mid_run,
        a_manual_failover_mid_run,
        a_killed_primary_mid_run,
        the_read_write_split,
    ],
);

/// redis-benchmark `--cluster` on the same cluster, the same command line: both send exactly
/// `-n` SETs, and respbench's land on the primaries without a redirect.
fn redis_benchmark_side_by_side(cluster: &Cluster) {
    let primaries = cluster.primary_ports();
    let total = || calls(cluster, &primaries, "set").iter().sum::<u64>();
    let rejected_before = rejections(cluster, &primaries, "set");
    let args = ["--cluster", "-t", "set", "-n", "30000", "-r", "10000", "-q"];
    let before = total();
    let theirs = run_at(&redis_benchmark(), primaries[0], &args);
    assert_eq!(theirs.status.code(), Some(0), "{}", theirs.dump());
    let after_theirs = total();
    assert_eq!(after_theirs - before, 30000, "redis-benchmark");
    let rejected_theirs = rejections(cluster, &primaries, "set");
    let ours = run_at(&respbench_tests::respbench(), primaries[0], &args);
    ok(&ours);
    assert_eq!(total() - after_theirs, 30000);
    // Neither was redirected.
    assert_eq!(rejected_theirs, rejected_before);
    assert_eq!(rejections(cluster, &primaries, "set"), rejected_before);
    assert!(
        ours.stdout.contains("SET: ") && theirs.stdout.contains("SET: "),
        "{}\n{}",
        ours.dump(),
        theirs.dump()
    );
}

/// An open-loop rate over a cluster: the client's schedule is kept whatever node its requests
/// go to, and the primaries execute exactly what respbench counted. How many that is depends on
/// how much of the schedule a loaded machine kept (at the stop, what is not sent is not sent);
/// the schedule bounds it: 20 connections, each sending every 4 ms for 2 s, at most 501 each.
/// (`-n` would make it exact, but `--cluster --rps R -n N` with `-c 3` or more does not end on
/// mio and uring, as of this writing: a bug of its own.)
fn an_open_loop_rate_over_a_cluster(tool: &Tool, cluster: &Cluster) {
    let primaries = cluster.primary_ports();
    let gets = calls(cluster, &primaries, "get");
    let path = json_path("cluster-routing", "open-loop");
    let out = run_at(
        tool,
        primaries[0],
        &[
            "--cluster",
            "-t",
            "get",
            "-r",
            "10000",
            "-c",
            "20",
            "--rps",
            "5000",
            "-n",
            "6000",
            "--json",
            path.to_str().unwrap(),
        ],
    );
    ok(&out);
    let doc: serde_json::Value = serde_json::from_str(&take_document(&path)).unwrap();
    let test = &doc["tests"][0];
    assert_eq!(test["target_rps"], 5000, "{test}");
    // The schedule's budget is exact over the clients and nodes, and each GET ran once.
    assert_eq!(test["requests"].as_u64(), Some(6000), "{}", out.dump());
    assert_eq!(calls_since(cluster, &primaries, "get", &gets).iter().sum::<u64>(), 6000);
}

/// Over TLS: discovery gives the nodes' TLS ports, and every connection to every node speaks
/// TLS; the counts are exact.
#[test]
fn a_cluster_over_tls() {
    let config = respbench_tests::cluster::ClusterConfig { tls: true, ..Default::default() };
    let cluster = Cluster::start_with(3, 1, config);
    let ca = cluster.certs().unwrap().ca.to_str().unwrap().to_string();
    let primaries = cluster.primary_ports();
    let seed = cluster.tls_port(primaries[0]);
    let out = run_at(
        &respbench_tests::respbench(),
        seed,
        &["--tls", "--cacert", &ca, "--cluster", "-t", "set,get", "-n", "20000", "-r", "10000", "-q"],
    );
    ok(&out);
    for cmd in ["set", "get"] {
        assert_eq!(calls(&cluster, &primaries, cmd).iter().sum::<u64>(), 20000, "{cmd}");
    }
}

/// Commands outside respbench's table: keys from `COMMAND INFO` (HINCRBYFLOAT) or, for keys
/// that move with the arguments, `COMMAND GETKEYS` (EVAL … numkeys key); the header says which,
/// and no request is redirected.
fn custom_commands_route_by_the_keys_the_server_names(cluster: &Cluster) {
    let primaries = cluster.primary_ports();
    let tool = respbench_tests::respbench();
    let before = |cmd: &str| (calls(cluster, &primaries, cmd), rejections(cluster, &primaries, cmd));
    let (evals, eval_rejected) = before("eval");
    let (hincrs, hincr_rejected) = before("hincrbyfloat");
    let script = "return redis.call('SET', KEYS[1], ARGV[1])";
    let out = run_at(
        &tool,
        primaries[0],
        &["--cluster", "-n", "9000", "-r", "10000", "EVAL", script, "1", "k:__rand_int__", "v"],
    );
    ok(&out);
    assert!(
        out.stdout.contains("Routing: EVAL: key at argument 3, a write (COMMAND GETKEYS)"),
        "{}",
        out.dump()
    );
    assert_eq!(calls_since(cluster, &primaries, "eval", &evals).iter().sum::<u64>(), 9000);
    assert_eq!(rejections(cluster, &primaries, "eval"), eval_rejected);
    let out = run_at(
        &tool,
        primaries[0],
        &["--cluster", "-n", "9000", "-r", "10000", "HINCRBYFLOAT", "h:__rand_int__", "f", "1.5"],
    );
    ok(&out);
    assert!(
        out.stdout.contains("Routing: HINCRBYFLOAT: key at argument 1, a write (COMMAND INFO)"),
        "{}",
        out.dump()
    );
    assert_eq!(calls_since(cluster, &primaries, "hincrbyfloat", &hincrs).iter().sum::<u64>(), 9000);
    assert_eq!(rejections(cluster, &primaries, "hincrbyfloat"), hincr_rejected);
}

/// What a cluster cannot run is refused before the run, with exit 1 and a reason.
fn refused_before_the_run(cluster: &Cluster) {
    let port = cluster.primary_ports()[0];
    let msets = calls(cluster, &cluster.primary_ports(), "mset");
    let tool = respbench_tests::respbench();
    for (args, message) in [
        (&["--cluster", "-k", "0", "-t", "get"][..], "-k 0"),
        (&["--cluster", "-t", "connect"][..], "CONNECT"),
        (&["--cluster", "MSET", "a:__rand_int__", "v", "b:__rand_int__", "v"][..], "CROSSSLOT"),
        (&["--cluster", "MSET", "a", "v", "b", "v"][..], "different slots"),
        (&["--cluster", "NOSUCHCOMMAND", "x"][..], "cannot tell which arguments of NOSUCHCOMMAND are keys"),
    ] {
        let out = run_at(&tool, port, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}\n{}", out.dump());
        assert!(out.stderr.contains(message), "{args:?}: expected {message:?}\n{}", out.dump());
        assert!(!out.stdout.contains("requests completed"), "{args:?} ran\n{}", out.dump());
    }
    assert_eq!(calls_since(cluster, &cluster.primary_ports(), "mset", &msets), vec![0, 0, 0]);
}

/// A cluster whose `COMMAND` is renamed away, as managed services do: a custom command's keys
/// cannot be asked for, the run says to name them, and `--key-args` does.
#[test]
fn key_arguments_named_where_command_is_refused() {
    let config = respbench_tests::cluster::ClusterConfig {
        extra: vec![("rename-command", "COMMAND \"\"")],
        ..Default::default()
    };
    let cluster = Cluster::start_with(3, 0, config);
    let primaries = cluster.primary_ports();
    let tool = respbench_tests::respbench();
    let command = ["HINCRBYFLOAT", "h:__rand_int__", "f", "1.5"];
    let mut args = vec!["--cluster", "-n", "9000", "-r", "10000"];
    args.extend(command);
    let out = run_at(&tool, primaries[0], &args);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("name them with --key-args"), "{}", out.dump());
    let mut args = vec!["--cluster", "--key-args", "1", "-n", "9000", "-r", "10000"];
    args.extend(command);
    let out = run_at(&tool, primaries[0], &args);
    ok(&out);
    assert!(
        out.stdout.contains("Routing: HINCRBYFLOAT: key at argument 1, a write (--key-args)"),
        "{}",
        out.dump()
    );
    assert_eq!(calls(&cluster, &primaries, "hincrbyfloat").iter().sum::<u64>(), 9000);
    assert!(primaries.iter().all(|&p| rejected(&cluster, p, "hincrbyfloat") == 0));
    // A position the command does not have.
    let mut args = vec!["--cluster", "--key-args", "4", "-n", "10"];
    args.extend(command);
    let out = run_at(&tool, primaries[0], &args);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--key-args: HINCRBYFLOAT has no argument 4 (it has 3)"), "{}", out.dump());
}
