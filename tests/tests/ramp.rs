//! `--ramp` against a real redis-server: a clients ramp opens each step's connections as the step
//! begins and keeps them, checked with the server's `CLIENT LIST` polled while the ramp runs and
//! its `total_connections_received` (no reconnection between steps); each step's figures add up
//! to the server's own command counts; a rate ramp's steps run at their rates; the text table,
//! the JSON (schema-checked) and `plot --charts ramp` carry the steps; bad ramps exit 1 before
//! connecting. Each backend opens a clients ramp's sockets at their steps (the table's timers,
//! smol's task sleeping to its step), so that test runs on every backend; the rest is the core's
//! and the session's, on mio (the simulation checks the three ways of waiting exactly:
//! driver/tests/sim.rs).

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use respbench_tests::{json_path, respbench, take_document, Output, RedisServer, Tool};

const T: Duration = Duration::from_secs(120);

respbench_tests::backend_tests!(
    every: [a_clients_ramp_opens_each_step_and_keeps_its_connections],
    mio: [],
);

fn ok(out: &Output) {
    assert!(!out.timed_out && out.status.success(), "{}", out.dump());
}

fn connections_received(server: &RedisServer) -> u64 {
    server.info_field("stats", "total_connections_received").and_then(|v| v.parse().ok()).expect("INFO stats")
}

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

/// One `CLIENT LIST` over a connection kept open for the polls: each client's last command
/// (`cmd=`), one per line.
fn client_list(conn: &mut BufReader<std::net::TcpStream>) -> Vec<String> {
    conn.get_mut().write_all(b"*2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n").unwrap();
    let mut header = String::new();
    conn.read_line(&mut header).unwrap();
    assert!(header.starts_with('$'), "CLIENT LIST replied {header:?}");
    let len: usize = header[1..].trim().parse().unwrap();
    let mut body = vec![0u8; len + 2];
    std::io::Read::read_exact(conn, &mut body).unwrap();
    String::from_utf8_lossy(&body[..len])
        .lines()
        .map(|l| l.split(' ').find_map(|f| f.strip_prefix("cmd=")).unwrap_or("?").to_string())
        .collect()
}

/// `-t get --ramp 'clients 2..8 step 2 every 2s'`: while it runs, every `CLIENT LIST` shows the
/// step's clients (a poll at a boundary may see either neighbour, or the next step's
/// connections coming up), besides the poll's own connection and respbench's startup
/// connection (whose last command is the step marks' `INFO`) and the server sampler's (#51),
/// also last an `INFO`; the server received exactly 8
/// connections for the test; each step's requests add up to the server's GET calls.
fn a_clients_ramp_opens_each_step_and_keeps_its_connections(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("ramp", "clients");
    // The poll's connection, opened before the count is read.
    let mut poll = BufReader::new(server.connect());
    // Read first: its redis-cli connection is then not in the count.
    let gets_before = server.command_calls("get");
    let before = connections_received(&server);
    let run = tool.spawn(&[
        "-p",
        &server.port().to_string(),
        "-t",
        "get",
        "--ramp",
        "clients 2..8 step 2 every 2s",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let mut polls = Vec::new();
    let mut run = run;
    while !run.has_exited() {
        let t0 = unix_us();
        let cmds = client_list(&mut poll);
        let t1 = unix_us();
        polls.push((t0, t1, cmds));
        std::thread::sleep(Duration::from_millis(150));
    }
    let out = run.wait(T);
    ok(&out);
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let t = &doc["tests"][0];
    // The redis-cli that reads the count is in it, respbench's startup connection, and the
    // server sampler's (#51).
    let sampler = t["server_sampling"]["connections"].as_u64().unwrap();
    let received = connections_received(&server) - before - 1 - 1 - sampler;
    let gets = server.command_calls("get") - gets_before;
    assert_eq!(received, 8, "the server received 8 benchmark connections, no reconnection\n{}", out.dump());
    assert_eq!(t["connections_opened"], 8, "{t}");
    let ramp = &t["ramp"];
    assert_eq!(ramp["kind"], "clients");
    let steps = ramp["steps"].as_array().unwrap();
    let clients: Vec<u64> = steps.iter().map(|s| s["clients"].as_u64().unwrap()).collect();
    assert_eq!(clients, [2, 4, 6, 8], "{ramp}");
    let per_step: Vec<u64> = steps.iter().map(|s| s["requests"].as_u64().unwrap()).collect();
    assert_eq!(per_step.iter().sum::<u64>(), t["requests"].as_u64().unwrap(), "{ramp}");
    assert_eq!(gets, t["requests"].as_u64().unwrap(), "the server's GET calls are the steps' requests");
    for s in steps {
        assert!(s["requests"].as_u64().unwrap() > 0 && s["rps"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["p50_ms"].as_f64().unwrap() <= s["p99_ms"].as_f64().unwrap(), "{s}");
        assert!(s["p99_ms"].as_f64().unwrap() <= s["p999_ms"].as_f64().unwrap(), "{s}");
        assert!(s["verdict"]["side"].is_string(), "{s}");
    }
    // The polls: the step's clients, by when the test's measured time began.
    let start = t["start_us"].as_u64().unwrap();
    let level = |at: i64| -> u64 {
        let k = (at.max(0) as u64 / 2_000_000).min(3);
        2 + 2 * k
    };
    let slack = 300_000i64;
    let mut seen = std::collections::BTreeSet::new();
    for (t0, t1, cmds) in &polls {
        let own = cmds.iter().filter(|c| c.as_str() == "client|list").count();
        let info = cmds.iter().filter(|c| c.as_str() == "info").count();
        let bench = cmds.len() - own - info;
        assert_eq!(own, 1, "{cmds:?}");
        assert!(info <= 2, "the startup's and the server sampler's connections at most: {cmds:?}");
        let (a, b) = (*t0 as i64 - start as i64, *t1 as i64 - start as i64);
        if b < 0 || b + slack > 8_000_000 {
            // Before the test's start, or near its end, when its connections close (a poll
            // 7.999-8.000 s in saw none on a loaded machine).
            continue;
        }
        let (lo, hi) = (level(a - slack), level(b + slack));
        assert!(
            (lo..=hi).contains(&(bench as u64)),
            "a poll {:.3}-{:.3} s into the test saw {bench} clients, not {lo}..={hi}: {cmds:?}",
            a as f64 / 1e6,
            b as f64 / 1e6
        );
        if lo == hi {
            seen.insert(bench);
        }
    }
    eprintln!(
        "{} polls, benchmark clients seen: {:?}; connections received {received}; GET calls {gets}; steps {per_step:?}",
        polls.len(),
        polls.iter().map(|(_, _, c)| c.iter().filter(|x| *x != "info" && *x != "client|list").count()).collect::<Vec<_>>()
    );
    // Every step was seen away from its boundaries.
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [2, 4, 6, 8], "{polls:?}");
    // The text report's table: a row per step.
    assert!(out.stdout.contains("GET: ramp clients 2..8 step 2 every 2s, 4 steps"), "{}", out.dump());
    for (k, c) in clients.iter().enumerate() {
        let row = out.stdout.lines().find(|l| l.split_whitespace().next() == Some(&(k + 1).to_string()));
        let row = row.unwrap_or_else(|| panic!("no row of step {}\n{}", k + 1, out.dump()));
        assert_eq!(row.split_whitespace().nth(1), Some(c.to_string().as_str()), "{row}");
        assert_eq!(row.split_whitespace().nth(4), Some(per_step[k].to_string().as_str()), "{row}");
    }
}

/// `-t set --ramp 'rps 500..1500 step 500 every 2s'`: each step runs at its rate (its replies
/// within a few percent of the rate times the step), the steps add up to the server's SET calls,
/// the 50 connections are opened once, and the series names each second's step.
#[test]
fn a_rate_ramp_runs_each_step_at_its_rate_on_the_same_connections() {
    let server = RedisServer::start();
    let json = json_path("ramp", "rps");
    let sets_before = server.command_calls("set");
    let before = connections_received(&server);
    let out = respbench().run(
        &[
            "-p",
            &server.port().to_string(),
            "-t",
            "set",
            "--ramp",
            "rps 500..1500 step 500 every 2s",
            "--csv",
            "--series",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    ok(&out);
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let t = &doc["tests"][0];
    let sampler = t["server_sampling"]["connections"].as_u64().unwrap();
    let received = connections_received(&server) - before - 1 - 1 - sampler;
    let sets = server.command_calls("set") - sets_before;
    assert_eq!(received, 50, "{}", out.dump());
    let steps = t["ramp"]["steps"].as_array().unwrap();
    let per_step: Vec<u64> = steps.iter().map(|s| s["requests"].as_u64().unwrap()).collect();
    assert_eq!(per_step.iter().sum::<u64>(), sets, "the server's SET calls are the steps' requests");
    assert_eq!(t["requests"].as_u64().unwrap(), sets);
    for (s, target) in steps.iter().zip([500u64, 1000, 1500]) {
        assert_eq!(s["target_rps"], target, "{s}");
        assert_eq!(s["level"], target, "{s}");
        assert_eq!(s["clients"], 50, "{s}");
        let n = s["requests"].as_u64().unwrap() as f64;
        // A pause of the machine at a boundary moves replies into the next step.
        assert!((n - 2.0 * target as f64).abs() <= 0.05 * 2.0 * target as f64 + 50.0, "{s}");
    }
    eprintln!("connections received {received}; SET calls {sets}; steps {per_step:?}");
    // The series: seconds 0-1 are step 0, 2-3 step 1, 4-5 step 2.
    let series = t["series"].as_array().unwrap();
    let named: Vec<u64> = series.iter().take(6).map(|s| s["ramp_step"].as_u64().unwrap()).collect();
    assert_eq!(named, [0, 0, 1, 1, 2, 2], "{series:?}");
    // CSV: the test's row, then a "ramp" row per step with the JSON's figures.
    let rows = respbench_tests::parse_csv(&out.stdout);
    assert_eq!(rows[1][0], "SET", "{}", out.dump());
    let ramp: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == "ramp").collect();
    assert_eq!(ramp.len(), 3, "{}", out.dump());
    for (k, (row, s)) in ramp.iter().zip(steps).enumerate() {
        assert_eq!(row.len(), 14, "{row:?}");
        assert_eq!(row[1], "SET");
        assert_eq!(row[2], (k + 1).to_string());
        assert_eq!(row[3], "50");
        assert_eq!(row[4], s["target_rps"].to_string());
        assert_eq!(row[7], s["requests"].to_string(), "{row:?} against {s}");
        let p99: f64 = row[11].parse().unwrap();
        assert!((p99 - s["p99_ms"].as_f64().unwrap()).abs() < 0.001, "{row:?} against {s}");
    }
}

/// `plot --charts ramp` draws each step's latency and rate against its level.
#[test]
fn plot_draws_the_ramp_chart() {
    let server = RedisServer::start();
    let json = json_path("ramp", "plot");
    let svg = json.with_extension("svg");
    ok(&respbench().run(
        &[
            "-p",
            &server.port().to_string(),
            "-t",
            "ping_mbulk",
            "--ramp",
            "clients 1..3 step 1 every 1s",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    ));
    let out = respbench()
        .run(&["plot", json.to_str().unwrap(), "--charts", "ramp", "-o", svg.to_str().unwrap()], T);
    ok(&out);
    let text = std::fs::read_to_string(&svg).unwrap();
    for label in [
        "Ramp: latency at each step",
        "Ramp: requests per second at each step",
        "ramp step: clients",
        "PING_MBULK p99.9",
    ] {
        assert!(text.contains(label), "no '{label}' in the SVG");
    }
    let _ = std::fs::remove_file(&svg);
    // A document without a ramp: the chart is refused, saying why.
    ok(&respbench().run(
        &[
            "-p",
            &server.port().to_string(),
            "-t",
            "ping_mbulk",
            "-n",
            "100",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    ));
    let out = respbench()
        .run(&["plot", json.to_str().unwrap(), "--charts", "ramp", "-o", svg.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("cannot draw the ramp chart: no test ran a ramp"), "{}", out.dump());
    let _ = std::fs::remove_file(&json);
}

/// A bad ramp exits 1 before connecting, naming --ramp.
#[test]
fn a_bad_ramp_exits_before_connecting() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let before = connections_received(&server);
    for (args, says) in [
        (vec!["--ramp", "clients 10..200"], "invalid value 'clients 10..200' for --ramp"),
        (vec!["--ramp", "clients 10..5 step 1 every 1s"], "FROM must be at most TO"),
        (vec!["--ramp", "rps 100..200 step 10 every 5ms"], "at least 100ms"),
        (vec!["--ramp", "threads 1..2 step 1 every 1s"], "'clients' or 'rps'"),
        (vec!["--ramp", "clients 1..4 step 1 every 1s", "-c", "1,2"], "--ramp and a list"),
        (vec!["--ramp", "rps 100..200 step 10 every 1s", "--rps", "100"], "--ramp rps and --rps conflict"),
        (vec!["--ramp", "clients 1..4 step 1 every 1s", "-k", "0"], "--ramp and -k 0 conflict"),
        (vec!["--ramp", "clients 1..4 step 1 every 1s", "--warmup", "1s"], "--ramp and --warmup conflict"),
        (vec!["--ramp", "clients 1..4 step 1 every 1s", "-n", "1000"], "--ramp and -n conflict"),
        (vec!["--ramp", "clients 1..4 step 1 every 1s", "--worker", "0/2"], "--ramp and --worker conflict"),
        (vec!["--ramp", "clients 1..4 step 1 every 1s", "-I"], "--ramp and -I conflict"),
        (vec!["--ramp", "clients 1..4 step 1 every 1s", "--arrival", "poisson"], "--ramp rps)"),
    ] {
        let mut a = vec!["-p", port.as_str(), "-t", "get"];
        a.extend(args);
        let out = respbench().run(&a, T);
        assert_eq!(out.status.code(), Some(1), "{a:?}: {}", out.dump());
        assert!(out.stderr.contains(says), "{a:?}: {}", out.dump());
        assert!(out.stderr.contains("--ramp"), "{a:?}: {}", out.dump());
    }
    // Only the redis-cli that reads the count connected.
    assert_eq!(connections_received(&server) - before, 1);
}

/// `--cluster --ramp 'clients 1..3 step 1 every 1500ms'` over three primaries: each primary
/// received exactly the connections a plain `-c 3` run opens there (each client's connection to
/// each primary once, and respbench's own per-node readings, whose connection a plain run opens
/// again for the end reading), so no client connected twice
/// between steps; and the steps' requests add up to the primaries' SET calls.
#[test]
fn a_clients_ramp_over_a_cluster_opens_each_clients_nodes_once() {
    let cluster = respbench_tests::cluster::Cluster::start(3, 0);
    let primaries = cluster.primary_ports();
    let sets = || primaries.iter().map(|&p| cluster.node(p).command_calls("set")).sum::<u64>();
    // Connections each primary received, less the reading's own redis-cli.
    let received = || primaries.iter().map(|&p| connections_received(cluster.node(p))).collect::<Vec<u64>>();
    let opened = |run: &[&str]| {
        let before = received();
        let json = json_path("ramp", "cluster");
        let port = primaries[0].to_string();
        let mut args = vec!["--cluster", "-p", &port, "-t", "set", "-r", "1000", "-q"];
        args.extend(run);
        args.extend(["--json", json.to_str().unwrap()]);
        let out = respbench().run(&args, T);
        ok(&out);
        let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
        let n: Vec<u64> = received().iter().zip(&before).map(|(a, b)| a - b - 1).collect();
        (n, doc["tests"][0].clone())
    };
    let (plain, _) = opened(&["-c", "3", "-n", "3000"]);
    let sets_before = sets();
    let (ramped, t) = opened(&["--ramp", "clients 1..3 step 1 every 1500ms"]);
    // A plain run's per-node readings reopen their connection for the test's end (closed
    // while the test runs: #56 item 10); a ramp's stay open, as it reads at every step.
    let plain_less_reopen: Vec<u64> = plain.iter().map(|n| n - 1).collect();
    assert_eq!(ramped, plain_less_reopen, "connections each primary received: the ramp's against -c 3's");
    let steps = t["ramp"]["steps"].as_array().unwrap();
    let clients: Vec<u64> = steps.iter().map(|s| s["clients"].as_u64().unwrap()).collect();
    assert_eq!(clients, [1, 2, 3], "{}", t["ramp"]);
    let per_step: Vec<u64> = steps.iter().map(|s| s["requests"].as_u64().unwrap()).collect();
    assert!(per_step.iter().all(|&n| n > 0), "{per_step:?}");
    assert_eq!(per_step.iter().sum::<u64>(), sets() - sets_before, "the primaries' SET calls");
    assert_eq!(per_step.iter().sum::<u64>(), t["requests"].as_u64().unwrap());
    eprintln!(
        "cluster ramp: steps {per_step:?}, connections opened per primary {ramped:?} (-c 3: {plain:?})"
    );
}
