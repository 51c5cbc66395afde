//! `respbench capture` and `--replay`: traffic that no respbench code made (redis-benchmark, the
//! Python `redis` client) captured from one server and replayed against a fresh one, checked
//! against the servers' own counts (`INFO commandstats`, `DBSIZE`, each key's `TYPE`) and a
//! MONITOR on the fresh server; the recorded gaps and `--speed`; bad input.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use respbench_tests::{redis_benchmark, respbench, Monitor, RedisServer};

const LONG: Duration = Duration::from_secs(120);

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("respbench-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The name `INFO commandstats` counts a command under: `get`, `client|setinfo`.
fn stat_name(args: &[Vec<u8>]) -> String {
    let name = String::from_utf8_lossy(&args[0]).to_lowercase();
    let containers =
        ["client", "config", "cluster", "command", "object", "memory", "script", "function", "xinfo"];
    match args.get(1) {
        Some(sub) if containers.contains(&name.as_str()) => {
            format!("{name}|{}", String::from_utf8_lossy(sub).to_lowercase())
        }
        _ => name,
    }
}

/// The commands of a capture file, read here without respbench's code: (client, db, args).
fn read_capture(path: &Path) -> Vec<(Vec<u8>, u32, Vec<Vec<u8>>)> {
    let bytes = std::fs::read(path).unwrap();
    let header = b"respbench capture v1\n";
    assert!(bytes.starts_with(header), "a capture file starts with its header");
    let mut at = header.len();
    let mut take = |n: usize| {
        let b = bytes[at..at + n].to_vec();
        at += n;
        b
    };
    let u32_of = |b: Vec<u8>| u32::from_le_bytes(b.try_into().unwrap());
    let mut out = Vec::new();
    let end = bytes.len();
    let mut left = end - header.len();
    while left > 0 {
        let len = u32_of(take(4)) as usize;
        left -= 4 + len;
        let _micros = take(8);
        let db = u32_of(take(4));
        let clen = u16::from_le_bytes(take(2).try_into().unwrap()) as usize;
        let client = take(clen);
        let argc = u32_of(take(4));
        let mut args = Vec::new();
        for _ in 0..argc {
            let n = u32_of(take(4)) as usize;
            args.push(take(n));
        }
        let used = 8 + 4 + 2 + clen + 4 + args.iter().map(|a| 4 + a.len()).sum::<usize>();
        assert_eq!(used, len, "a record's length is its fields'");
        out.push((client, db, args));
    }
    out
}

/// Every key of db `db` of `server` with its type.
fn key_types(server: &RedisServer, db: u32) -> BTreeMap<String, String> {
    let keys = server.cli(&["-n", &db.to_string(), "--scan"]);
    let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
    if keys.is_empty() {
        return BTreeMap::new();
    }
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string(), "-n", &db.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    {
        let mut stdin = child.stdin.take().unwrap();
        for k in &keys {
            // The keys here are plain: redis-cli reads one command a line.
            writeln!(stdin, "TYPE {k}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let types = String::from_utf8_lossy(&out.stdout).into_owned();
    let types: Vec<&str> = types.lines().collect();
    assert_eq!(types.len(), keys.len(), "a TYPE per key");
    keys.iter().zip(types).map(|(k, t)| (k.to_string(), t.to_string())).collect()
}

/// Starts `respbench capture` on `server` into `file`, waits until its MONITOR is on, runs
/// `workload`, then stops it (SIGINT) once a MONITOR of the harness has seen everything; the
/// capture's output.
fn capture_while(server: &RedisServer, file: &Path, workload: impl FnOnce()) -> String {
    let monitors = server.command_calls("monitor");
    let capture =
        respbench().spawn(&["capture", "-p", &server.port().to_string(), "-o", file.to_str().unwrap()]);
    server.wait_for_calls("monitor", monitors + 1);
    let watch = Monitor::start(server);
    workload();
    // The server has sent MONITOR everything before the sentinel: the capture drains it.
    let _ = watch.finish();
    capture.interrupt();
    let out = capture.wait(LONG);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stderr.is_empty(), "{}", out.dump());
    assert!(out.stdout.contains("WARNING: MONITOR costs the server throughput"), "{}", out.dump());
    out.stdout
}

/// The commands of `file` by their commandstats names, without `INFO`: the harness' own reads
/// of the original server are in the capture, and respbench reads the fresh one's counters
/// (as the original's, INFO's calls there go on after the capture).
fn counts(file: &Path) -> BTreeMap<String, u64> {
    let mut c = BTreeMap::new();
    for (_, _, args) in read_capture(file) {
        *c.entry(stat_name(&args)).or_default() += 1;
    }
    c.remove("info");
    c
}

/// The calls of each of `names` on `server`.
fn calls(server: &RedisServer, names: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    names.keys().map(|n| (n.clone(), server.command_calls(n))).collect()
}

/// Replays `file` against a fresh server and checks it against `original`: the fresh server's
/// calls of each command equal the capture's counts, and db 0 and db 2 hold the same keys with
/// the same types. The replay's stdout.
fn replay_matches(original: &RedisServer, file: &Path, extra: &[&str]) -> String {
    let want = counts(file);
    // The workload's own commands ran on the original exactly as often (the capture lost none;
    // the harness' sentinel ECHO ran there too).
    for (name, n) in &want {
        assert_eq!(original.command_calls(name), *n, "{name} on the original server");
    }
    let fresh = RedisServer::start();
    let port = fresh.port().to_string();
    let mut args = vec!["-p", &port, "--replay", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = respbench().run(&args, LONG);
    assert!(out.status.success(), "{}", out.dump());
    // Nothing on stderr but what the replay is about to play.
    let said = format!("--replay {}: ", file.display());
    assert!(
        out.stderr.lines().all(|l| l.starts_with(&said) && l.contains(" played over ")),
        "{}",
        out.dump()
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
    assert_eq!(calls(&fresh, &want), want, "commandstats of the fresh server against the capture");
    for db in [0, 2] {
        assert_eq!(fresh.dbsize(db), original.dbsize(db), "DBSIZE of db {db}");
        assert_eq!(key_types(&fresh, db), key_types(original, db), "keys and types of db {db}");
    }
    out.stdout
}

fn redis_benchmark_traffic_replays(pipeline: &str) {
    let original = RedisServer::start();
    let dir = temp(&format!("rb-p{pipeline}"));
    let file = dir.join("rb.capture");
    let port = original.port().to_string();
    let said = capture_while(&original, &file, || {
        let out = redis_benchmark().run(
            &[
                "-p",
                &port,
                "-t",
                "set,get,lpush,incr,hset",
                "-r",
                "10000",
                "-n",
                "3000",
                "-P",
                pipeline,
                "-q",
            ],
            LONG,
        );
        assert!(out.status.success(), "{}", out.dump());
    });
    let c = counts(&file);
    for t in ["set", "get", "lpush", "incr", "hset"] {
        assert_eq!(c.get(t), Some(&3000), "{t} in the capture");
    }
    let n = read_capture(&file).len();
    assert!(said.contains(&format!("captured {n} commands")), "{said}");
    let out = replay_matches(&original, &file, &["-q"]);
    assert!(out.contains("replay fidelity:"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn redis_benchmark_traffic_replays_to_the_same_counts_and_keys() {
    redis_benchmark_traffic_replays("1");
}

#[test]
fn pipelined_redis_benchmark_traffic_replays_to_the_same_counts_and_keys() {
    redis_benchmark_traffic_replays("8");
}

fn python() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    std::env::var_os("RESPBENCH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/pyenv/bin/python"))
}

#[test]
fn python_client_traffic_with_transactions_and_select_replays_to_the_same_counts_and_keys() {
    let original = RedisServer::start();
    let dir = temp("python");
    let file = dir.join("py.capture");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/replay_client.py");
    capture_while(&original, &file, || {
        let out = Command::new(python()).arg(&script).arg(original.port().to_string()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    });
    let c = counts(&file);
    assert_eq!((c.get("multi"), c.get("exec")), (Some(&40), Some(&40)));
    assert!(c.get("select").is_some_and(|&n| n >= 2), "{c:?}");
    // (redis-cli -n 2 sends a SELECT of its own: the original's counts are compared first.)
    let out = replay_matches(&original, &file, &[]);
    assert!(original.dbsize(2) > 0 && original.dbsize(0) > 0, "the workload wrote both dbs");
    // Each transaction went whole: no EXEC without its MULTI on the fresh server.
    assert!(!out.contains("EXECABORT") && !out.contains("without MULTI"), "{out}");
    assert!(out.contains("replay: "), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A MONITOR text file of `n` commands per client for `clients` clients, evenly over `span`.
fn synthetic_monitor(path: &Path, clients: u64, n: u64, span: Duration) {
    let mut text = String::from("OK\n");
    let start = 1_700_000_000_000_000u64;
    let total = clients * n;
    for i in 0..total {
        let us = start + i * span.as_micros() as u64 / (total - 1);
        let c = i % clients;
        text += &format!(
            "{}.{:06} [0 127.0.0.1:{}] \"SET\" \"k{i}\" \"v a\\x00\"\n",
            us / 1_000_000,
            us % 1_000_000,
            40000 + c
        );
    }
    std::fs::write(path, text).unwrap();
}

/// The recorded gaps: at --speed 2 the fresh server sees the first command to the last in half
/// the recorded span (±5%, its own MONITOR's clock), and the report says the gaps were kept
/// (send lateness p99 under 1 ms) or says they were not.
#[test]
fn speed_two_takes_half_the_recorded_time_and_the_report_says_whether_gaps_were_kept() {
    let dir = temp("speed");
    let file = dir.join("mon.txt");
    let span = Duration::from_secs(6);
    synthetic_monitor(&file, 4, 300, span);
    let fresh = RedisServer::start();
    let watch = Monitor::start(&fresh);
    let json = dir.join("out.json");
    let out = respbench().run(
        &[
            "-p",
            &fresh.port().to_string(),
            "--replay",
            file.to_str().unwrap(),
            "--speed",
            "2",
            "--json",
            json.to_str().unwrap(),
        ],
        LONG,
    );
    assert!(out.status.success(), "{}", out.dump());
    let seen = watch.finish();
    let sets: Vec<_> = seen.iter().filter(|e| e.name() == "SET").collect();
    assert_eq!(sets.len(), 1200);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let total = doc["tests"].as_array().unwrap().last().unwrap().clone();
    let replay = &total["replay"];
    assert_eq!(replay["sent"], 1200);
    assert_eq!(replay["clients"], 4);
    let p99 = total["lateness"]["ms"]["p99"].as_f64().unwrap();
    let warned = out.stdout.contains("the recorded gaps were not kept");
    assert_eq!(
        warned,
        p99 > 1.0,
        "a p99 lateness of {p99} ms: the report says so exactly when over 1 ms\n{}",
        out.stdout
    );
    // The fresh server's own clock (its MONITOR's timestamps), from its first SET to its last:
    // the recorded span halved.
    let times: Vec<f64> = seen.iter().filter(|e| e.name() == "SET").map(|e| e.time).collect();
    let took = times.last().unwrap() - times.first().unwrap();
    let want = span.as_secs_f64() / 2.0;
    assert!((took - want).abs() <= want * 0.05, "--speed 2: {took:.3} s, not {want:.3} s ± 5%");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A replay cut short by Ctrl-C says how far it got of the capture's own count (5,000
/// commands of 5 clients over 20 s), not of `-n`'s default 100,000; with `--worker 0/2` of
/// its share (3 of the 5 clients: 3,000).
#[test]
fn an_interrupted_replay_says_how_far_of_the_captures_commands() {
    let dir = temp("interrupted");
    let file = dir.join("mon.txt");
    synthetic_monitor(&file, 5, 1000, Duration::from_secs(20));
    for (split, all) in [(None, 5000), (Some("0/2"), 3000)] {
        let fresh = RedisServer::start();
        let port = fresh.port().to_string();
        let mut args = vec!["-p", &port, "-q", "--replay", file.to_str().unwrap()];
        if let Some(w) = split {
            args.extend(["--worker", w]);
        }
        let run = respbench().spawn(&args);
        fresh.wait_for_calls("set", 100);
        run.interrupt();
        let out = run.wait(LONG);
        let sent = fresh.command_calls("set");
        assert!(sent < all, "{sent} of {all}: the run was not cut short\n{}", out.dump());
        // The total's line (each command's own says how many it sent, of no count).
        let said = out.stdout.lines().find(|l| l.starts_with("REPLAY ") && l.contains("interrupted after"));
        let said = said.unwrap_or_else(|| panic!("no interrupted line\n{}", out.dump()));
        assert!(said.contains(&format!(" of {all} requests")), "{said}\n{}", out.dump());
        assert!(!out.stdout.contains("100000"), "{}", out.dump());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_lines_are_counted_with_their_numbers_and_strict_stops_at_the_first() {
    let dir = temp("malformed");
    let file = dir.join("mon.txt");
    std::fs::write(
        &file,
        "OK\n1.000001 [0 127.0.0.1:1] \"SET\" \"a\" \"1\"\nnot a line\n1.000002 [0 127.0.0.1:1] \"SET\" \"b\n\
         1.000003 [0 127.0.0.1:2] \"BLPOP\" \"q\" \"0\"\n1.000004 [0 127.0.0.1:2] \"SET\" \"c\" \"3\"\n",
    )
    .unwrap();
    let fresh = RedisServer::start();
    let port = fresh.port().to_string();
    let out = respbench().run(&["-p", &port, "--replay", file.to_str().unwrap()], LONG);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("malformed: 2 lines not replayed (line 3: "), "{}", out.stdout);
    assert!(out.stdout.contains("; line 4: "), "{}", out.stdout);
    assert!(out.stdout.contains("not replayed: 1 BLPOP (blocks its connection)"), "{}", out.stdout);
    assert_eq!((fresh.command_calls("set"), fresh.command_calls("blpop")), (2, 0));
    let strict = respbench().run(&["-p", &port, "--replay", file.to_str().unwrap(), "--strict"], LONG);
    assert_eq!(strict.status.code(), Some(1), "{}", strict.dump());
    assert!(strict.stderr.contains("line 3") && strict.stderr.contains("--strict"), "{}", strict.dump());
    assert_eq!(fresh.command_calls("set"), 2, "nothing replayed under --strict");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A capture with `CONFIG SET requirepass` and `FLUSHALL` in it (they were replayed: the
/// target's password changed and its keys went) replays without them, each counted by name in
/// the report and the JSON; `--replay-admin` sends them on purpose.
#[test]
fn administrative_commands_are_skipped_unless_replay_admin() {
    let dir = temp("admin");
    let file = dir.join("mon.txt");
    std::fs::write(
        &file,
        "OK\n1.000001 [0 127.0.0.1:1] \"SET\" \"a\" \"1\"\n\
         1.000002 [0 127.0.0.1:1] \"CONFIG\" \"SET\" \"requirepass\" \"s3cret\"\n\
         1.000003 [0 127.0.0.1:1] \"FLUSHALL\"\n1.000004 [0 127.0.0.1:1] \"SET\" \"b\" \"2\"\n",
    )
    .unwrap();
    let fresh = RedisServer::start();
    let port = fresh.port().to_string();
    fresh.cli(&["SET", "kept", "x"]);
    let json = dir.join("out.json");
    let out = respbench()
        .run(&["-p", &port, "--replay", file.to_str().unwrap(), "--json", json.to_str().unwrap()], LONG);
    assert!(out.status.success(), "{}", out.dump());
    let why = "changes the server's configuration, users or whole keyspace (--replay-admin sends it)";
    assert!(out.stdout.contains(&format!("not replayed: 1 CONFIG SET ({why})")), "{}", out.stdout);
    assert!(out.stdout.contains(&format!("not replayed: 1 FLUSHALL ({why})")), "{}", out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let skipped = &doc["tests"].as_array().unwrap().last().unwrap()["replay"]["skipped"];
    let names: Vec<&str> =
        skipped.as_array().unwrap().iter().map(|s| s["command"].as_str().unwrap()).collect();
    assert_eq!(names, ["CONFIG SET", "FLUSHALL"], "{skipped}");
    assert_eq!(fresh.cli(&["CONFIG", "GET", "requirepass"]), "requirepass", "the password is unchanged");
    assert_eq!(fresh.dbsize(0), 3, "nothing flushed: kept, a and b");
    assert_eq!((fresh.command_calls("config|set"), fresh.command_calls("flushall")), (0, 0));
    // On purpose: sent, in their place (FLUSHALL after a, before b).
    let out = respbench().run(&["-p", &port, "--replay", file.to_str().unwrap(), "--replay-admin"], LONG);
    assert!(out.status.success(), "{}", out.dump());
    assert!(!out.stdout.contains("not replayed"), "{}", out.stdout);
    let authed = Command::new("redis-cli")
        .args(["-p", &port, "--no-auth-warning", "-a", "s3cret", "KEYS", "*"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&authed.stdout), "b\n", "the password is set and only b is left");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `--replay` of a MONITOR file of `lines` (SETs of client 1 at the given Unix seconds),
/// with `extra`, against a fresh server: its output once every SET landed.
fn replay_of(name: &str, seconds: &[&str], extra: &[&str]) -> (respbench_tests::Output, PathBuf) {
    let dir = temp(name);
    let file = dir.join("mon.txt");
    let mut text = String::from("OK\n");
    for (i, t) in seconds.iter().enumerate() {
        text += &format!("{t} [0 127.0.0.1:1] \"SET\" \"k{i}\" \"v\"\n");
    }
    std::fs::write(&file, text).unwrap();
    let fresh = RedisServer::start();
    let port = fresh.port().to_string();
    let out =
        respbench().run(&[&["-p", &port, "--replay", file.to_str().unwrap()][..], extra].concat(), LONG);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(fresh.command_calls("set"), seconds.len() as u64, "{}", out.dump());
    (out, file)
}

/// Timestamps that go back an hour (a clock stepped back) are played with no gap: the replay
/// waited the hour from the earliest instant, sending nothing. Said once, with the span first.
#[test]
fn timestamps_that_go_backwards_replay_at_once_and_are_said() {
    let (out, file) =
        replay_of("backwards", &["5000.000000", "1400.000000", "1400.500000", "1400.250000"], &[]);
    let f = file.display();
    assert!(
        out.stderr.contains(&format!(
            "--replay {f}: 4 commands from 1 clients, recorded from Unix 5000.000000 to 1400.250000, played over \
             0.500 s (at --speed 1)"
        )),
        "{}",
        out.dump()
    );
    assert!(
        out.stderr.contains(&format!(
            "WARNING: --replay {f}: 2 commands were recorded before the one ahead of them (the first at line 3): \
             played with no gap before them"
        )),
        "{}",
        out.dump()
    );
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
}

/// A gap of a year between two commands is played as 10 s (here at --speed 10: 1 s), said with
/// its length; it was waited for, silently.
#[test]
fn a_long_gap_is_played_as_ten_seconds_and_said() {
    let (out, file) =
        replay_of("gap", &["1000.000000", "31537000.000000", "31537000.100000"], &["--speed", "10"]);
    let f = file.display();
    assert!(out.stderr.contains(&format!("--replay {f}: 3 commands from 1 clients, recorded from Unix 1000.000000 to 31537000.100000, played over 10.100 s")), "{}", out.dump());
    assert!(
        out.stderr.contains(&format!(
            "WARNING: --replay {f}: 1 gaps between commands were longer than 10 s (the longest 31536000.000 s, \
             before line 3): played as 10 s"
        )),
        "{}",
        out.dump()
    );
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
}

#[test]
fn a_file_that_is_not_a_capture_is_an_error_before_connecting() {
    let dir = temp("notcapture");
    let fresh = RedisServer::start();
    let port = fresh.port().to_string();
    for (name, bytes) in
        [("json", &b"{\"tests\": []}\n"[..]), ("empty", b""), ("binary", b"\x00\x01\x02respbench")]
    {
        let file = dir.join(name);
        std::fs::write(&file, bytes).unwrap();
        let before: u64 = fresh.info_field("stats", "total_connections_received").unwrap().parse().unwrap();
        let out = respbench().run(&["-p", &port, "--replay", file.to_str().unwrap()], LONG);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains("not a capture"), "{}", out.dump());
        assert!(out.stdout.is_empty(), "{}", out.dump());
        let after: u64 = fresh.info_field("stats", "total_connections_received").unwrap().parse().unwrap();
        assert_eq!(after, before + 1, "only the harness' own INFO connected");
    }
    // A replay has its own schedule and commands.
    let file = dir.join("ok.txt");
    std::fs::write(&file, "1.000001 [0 127.0.0.1:1] \"PING\"\n").unwrap();
    let out = respbench().run(&["-p", &port, "--replay", file.to_str().unwrap(), "--rps", "100"], LONG);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("not with --rps"), "{}", out.dump());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--worker I/N` splits by original client: two workers replay the whole capture between them
/// (every command once), and `respbench merge` gives the whole.
#[test]
fn workers_split_by_original_client_and_merge_gives_the_whole() {
    let dir = temp("workers");
    let file = dir.join("mon.txt");
    synthetic_monitor(&file, 5, 40, Duration::from_millis(400));
    let fresh = RedisServer::start();
    let port = fresh.port().to_string();
    let mut docs = Vec::new();
    for w in ["0/2", "1/2"] {
        let json = dir.join(format!("w{}.json", &w[..1]));
        let out = respbench().run(
            &[
                "-p",
                &port,
                "--replay",
                file.to_str().unwrap(),
                "--worker",
                w,
                "--json",
                json.to_str().unwrap(),
                "-q",
            ],
            LONG,
        );
        assert!(out.status.success(), "{}", out.dump());
        docs.push(json);
    }
    assert_eq!(fresh.command_calls("set"), 200, "every command once over the two workers");
    assert_eq!(fresh.dbsize(0), 200);
    let merged = dir.join("all.json");
    let mut args = vec!["merge".to_string(), "--json".into(), merged.to_str().unwrap().into()];
    args.extend(docs.iter().map(|d| d.to_str().unwrap().to_string()));
    let out = respbench().run(&args, LONG);
    assert!(out.status.success(), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let total = doc["tests"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(total["requests"], 200, "{total}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--replay` with `--cluster` over three primaries: a capture of 3 clients' SETs and GETs over
/// 300 keys, and a MULTI/EXEC of two SETs in one slot (`{t}`), goes each command to its key's
/// owner: the primaries' SET, GET and EXEC calls add up to the capture's, each primary holds
/// exactly the capture's keys whose slots it owns, and no command was redirected.
#[test]
fn a_replay_over_a_cluster_goes_to_each_keys_owner() {
    let dir = temp("cluster");
    let file = dir.join("mon.txt");
    let mut text = String::from("OK\n");
    let mut t = 1_700_000_000_000_000u64;
    let mut line = |client: u64, args: &str| {
        t += 1_000;
        text += &format!("{}.{:06} [0 127.0.0.1:{}] {args}\n", t / 1_000_000, t % 1_000_000, 40000 + client);
    };
    for i in 0..300u64 {
        line(i % 3, &format!("\"SET\" \"k{i}\" \"v{i}\""));
        line((i + 1) % 3, &format!("\"GET\" \"k{i}\""));
    }
    for args in ["\"MULTI\"", "\"SET\" \"{t}a\" \"1\"", "\"SET\" \"{t}b\" \"2\"", "\"EXEC\""] {
        line(0, args);
    }
    std::fs::write(&file, text).unwrap();
    let cluster = respbench_tests::cluster::Cluster::start(3, 0);
    let primaries = cluster.primary_ports();
    let json = dir.join("out.json");
    let out = respbench().run(
        &[
            "--cluster",
            "-p",
            &primaries[0].to_string(),
            "--replay",
            file.to_str().unwrap(),
            "--speed",
            "10",
            "--json",
            json.to_str().unwrap(),
        ],
        LONG,
    );
    assert!(out.status.success(), "{}", out.dump());
    let calls = |c: &str| primaries.iter().map(|&p| cluster.node(p).command_calls(c)).sum::<u64>();
    assert_eq!(
        (calls("set"), calls("get"), calls("exec"), calls("multi")),
        (302, 300, 1, 1),
        "{}",
        out.dump()
    );
    // Each primary holds the keys whose slots it owns, and only those.
    let mut want = BTreeMap::<u16, u64>::new();
    let keys: Vec<String> = (0..300).map(|i| format!("k{i}")).chain(["{t}a".into(), "{t}b".into()]).collect();
    for k in &keys {
        let slot: u16 = cluster.node(primaries[0]).cli(&["CLUSTER", "KEYSLOT", k]).trim().parse().unwrap();
        *want.entry(cluster.owner_of(slot, primaries[0])).or_default() += 1;
    }
    for &p in &primaries {
        assert_eq!(cluster.node(p).dbsize(0), want.get(&p).copied().unwrap_or(0), "primary {p}: {want:?}");
    }
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let total = doc["tests"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(total["replay"]["sent"], 604, "{}", total["replay"]);
    let moved =
        total["redirects"]["moved"].as_u64().unwrap_or(0) + total["redirects"]["ask"].as_u64().unwrap_or(0);
    assert_eq!(moved, 0, "{}", total["redirects"]);
    eprintln!("replay over a cluster: keys per primary {want:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
