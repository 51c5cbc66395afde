//! End-to-end checks, each written once as `fn(Tool)` and instantiated by `e2e_tests!`:
//! `respbench::NAME` runs the binary under test (on mio), `redis_benchmark::NAME` runs the
//! reference `/usr/bin/redis-benchmark` so the checks themselves are validated against known
//! behaviour. The `every_backend` list, the checks of how a backend moves bytes (a refused
//! connect, partial writes under a deep pipeline, a Ctrl-C waking the loop), also runs on the
//! other backends (`respbench_smol::NAME`, `respbench_uring::NAME`).
//! Select one side with a name filter: `cargo test -p respbench-tests redis_benchmark::`.
//!
//! Assertions marked `RESPBENCH-ONLY` check fixes of redis-benchmark defects; they are skipped
//! for the reference tool (and some assert the defect instead, as documentation).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use respbench_tests::{
    free_port, key_shape, parse_quiet, parse_verbose, redis_benchmark, split_command_line, Monitor,
    MonitorEntry, Output, RedisServer, Tool,
};

const T: Duration = Duration::from_secs(20);

macro_rules! e2e_tests {
    (every_backend: [$($every:ident),* $(,)?], once: [$($name:ident),* $(,)?] $(,)?) => {
        mod respbench {
            $(#[test] fn $every() { super::$every(respbench_tests::respbench_on("mio")); })*
            $(#[test] fn $name() { super::$name(respbench_tests::respbench_on("mio")); })*
        }
        mod respbench_smol {
            $(#[test] fn $every() { super::$every(respbench_tests::respbench_on("smol")); })*
        }
        mod respbench_uring {
            $(#[test] fn $every() { super::$every(respbench_tests::respbench_on("uring")); })*
        }
        mod redis_benchmark {
            $(#[test] fn $every() { super::$every(respbench_tests::redis_benchmark()); })*
            $(#[test] fn $name() { super::$name(respbench_tests::redis_benchmark()); })*
        }
    };
}

e2e_tests!(
    every_backend: [loop_sigint, connection_refused, deep_pipeline_large_values],
    once: [
    published_command_lines,
    monitor_matches_redis_benchmark,
    distinct_keys,
    unix_socket,
    acl_user,
    dbnum,
    resp3,
    keepalive_0,
    pipeline_exact,
    invalid_option,
    ],
);

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: non-zero exit\n{}", out.dump());
}

fn port_args(server: &RedisServer) -> Vec<String> {
    vec!["-h".into(), "127.0.0.1".into(), "-p".into(), server.port().to_string()]
}

fn args(server: &RedisServer, extra: &[&str]) -> Vec<String> {
    let mut a = port_args(server);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Lines copied from shared/reference/published-command-lines.md (shared/ is not in the repo).
const PUBLISHED: &[&str] = &[
    "redis-benchmark",
    "redis-benchmark -q -n 100000",
    "redis-benchmark -t set,lpush -n 100000 -q",
    "redis-benchmark -n 100000 -q script load \"redis.call('set','foo','bar')\"",
    "redis-benchmark -t set -r 100000 -n 1000000",
    "redis-benchmark -n 1000000 -t set,get -P 16 -q",
    "redis-benchmark -r 1000000 -n 2000000 -t get,set,lpush,lpop -P 16 -q",
    "redis-benchmark -r 1000000 -n 2000000 -t get,set,lpush,lpop -q",
    "redis-benchmark -q -n 100000 -s /tmp/redis.sock -d 256",
    "redis-benchmark -q -n 100000 -d 256",
    "redis-benchmark -t get -n 1000000 -c 500 -q",
    "redis-benchmark -h 127.0.0.1 -p 6379 -c 100 -n 200000 -d 5 -t set",
    "redis-benchmark -h HOST -p 6379 -a testaccount:Rp829dlwa -n 3000000 -r 10000000 -c 256 -t set -d 64 --threads 16",
    "redis-benchmark -h HOST -p 6379 -a testaccount:Rp829dlwa -t get -d 16 --threads 4 -c 100 -n 3000000 -r 30000000",
    "redis-benchmark -h HOST -p 6379 -a testaccount:Rp829dlwa -t set -d 16 --threads 2 -c 150 -n 3000000 -r 30000000",
    "redis-benchmark -h HOST -p 6379 -a testaccount:Rp829dlwa -t mset -d 16 --threads 2 -c 100 -n 3000000 -r 30000000",
    "redis-benchmark -h HOST -p 6379 -a testaccount:Rp829dlwa -t incr --threads 2 -c 150 -n 3000000 -r 30000000",
    "redis-benchmark -h HOST -p 6379 -a testaccount:Rp829dlwa -t lpush -d 16 --threads 2 -c 100 -n 3000000 -r 30000000",
    "redis-benchmark -h HOST -p 6379 -a testaccount:Rp829dlwa -t zadd --threads 2 -c 150 -n 3000000 -r 30000000",
    "redis-benchmark -h HOST -p 6379 -a testaccount:Rp829dlwa -t hset -d 16 --threads 2 -c 150 -n 3000000 -r 30000000",
];

/// Default suite: (-t name, title), in run order. The LRANGE prefill is selected by any lrange test.
const DEFAULT_SUITE: &[(&str, &str)] = &[
    ("ping_inline", "PING_INLINE"),
    ("ping_mbulk", "PING_MBULK"),
    ("set", "SET"),
    ("get", "GET"),
    ("incr", "INCR"),
    ("lpush", "LPUSH"),
    ("rpush", "RPUSH"),
    ("lpop", "LPOP"),
    ("rpop", "RPOP"),
    ("sadd", "SADD"),
    ("hset", "HSET"),
    ("spop", "SPOP"),
    ("zadd", "ZADD"),
    ("zpopmin", "ZPOPMIN"),
    ("lrange", "LPUSH (needed to benchmark LRANGE)"),
    ("lrange_100", "LRANGE_100 (first 100 elements)"),
    ("lrange_300", "LRANGE_300 (first 300 elements)"),
    ("lrange_500", "LRANGE_500 (first 500 elements)"),
    ("lrange_600", "LRANGE_600 (first 600 elements)"),
    ("mset", "MSET (10 keys)"),
    // Redis 7.2+ added XADD to the suite; Debian's redis-benchmark 7.0.15 predates it.
    ("xadd", "XADD"),
];

/// Titles `-t list` selects, in the suite's order (not the list's), for `tool`.
fn expected_titles(tool: &Tool, tests: Option<&str>) -> Vec<String> {
    let selected = |name: &str| match tests {
        None => true,
        Some(list) => list.split(',').any(|t| {
            t == name
                || (t == "ping" && name.starts_with("ping_"))
                || (name == "lrange" && t.starts_with("lrange"))
                || (t == "lrange" && name.starts_with("lrange_"))
        }),
    };
    DEFAULT_SUITE
        .iter()
        .filter(|(n, _)| selected(n) && (*n != "xadd" || tool.is_respbench()))
        .map(|(_, t)| t.to_string())
        .collect()
}

/// The published line rewritten for a test server: -n scaled down, host/port/socket pointed at `server`.
fn rewrite_published(words: &[String], server: &RedisServer) -> (Vec<String>, u64) {
    let mut out = Vec::new();
    let mut n = None;
    let mut has_port = false;
    let mut has_socket = false;
    let mut i = 1; // words[0] is the program name
    while i < words.len() {
        let w = words[i].as_str();
        let val = words.get(i + 1).cloned().unwrap_or_default();
        match w {
            "-n" => {
                let scaled = (val.parse::<u64>().expect("-n value") / 1000).max(100);
                n = Some(scaled);
                out.extend(["-n".to_string(), scaled.to_string()]);
                i += 2;
            }
            "-h" => {
                out.extend(["-h".to_string(), "127.0.0.1".to_string()]);
                i += 2;
            }
            "-p" => {
                has_port = true;
                out.extend(["-p".to_string(), server.port().to_string()]);
                i += 2;
            }
            "-s" => {
                has_socket = true;
                out.extend(["-s".to_string(), server.socket_path().display().to_string()]);
                i += 2;
            }
            _ => {
                out.push(w.to_string());
                i += 1;
            }
        }
    }
    // Options must precede a custom command, so additions go in front.
    let mut front = Vec::new();
    if n.is_none() {
        front.extend(["-n".to_string(), "100".to_string()]);
    }
    if !has_port && !has_socket {
        front.extend(["-p".to_string(), server.port().to_string()]);
    }
    front.extend(out);
    (front, n.unwrap_or(100))
}

fn published_command_lines(tool: Tool) {
    for line in PUBLISHED {
        let words = split_command_line(line);
        let needs_auth = words.iter().any(|w| w == "testaccount:Rp829dlwa");
        let server = if needs_auth {
            RedisServer::start_with(&[("requirepass", "testaccount:Rp829dlwa")])
        } else {
            RedisServer::start()
        };
        let (argv, n) = rewrite_published(&words, &server);
        let started = Instant::now();
        let out = tool.run(&argv, T);
        let what = format!("{} {}", tool.name(), argv.join(" "));
        ok(&out, &what);
        let opt = |name: &str| words.iter().position(|w| w == name).map(|p| words[p + 1].as_str());
        let custom = words.iter().position(|w| w == "script");
        let titles = match custom {
            Some(p) => vec![words[p..].join(" ")],
            None => expected_titles(&tool, opt("-t")),
        };
        if words.iter().any(|w| w == "-q") {
            let got: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|q| q.title).collect();
            assert_eq!(got, titles, "{what}: quiet titles\n{}", out.dump());
            for q in parse_quiet(&out.stdout) {
                assert!(q.rps > 0.0 && q.p50 >= 0.0, "{what}: {q:?}");
            }
        } else {
            let blocks = parse_verbose(&out.stdout);
            let got: Vec<&str> = blocks.iter().map(|b| b.title.as_str()).collect();
            assert_eq!(got, titles, "{what}: verbose titles\n{}", out.dump());
            for b in &blocks {
                if tool.is_respbench() {
                    // RESPBENCH-ONLY: exactly -n requests (redis-benchmark may overshoot).
                    assert_eq!(b.requests, n, "{what}: {b:?}");
                } else {
                    assert!(b.requests >= n, "{what}: {b:?}");
                }
                assert!(b.rps.is_some(), "{what}: block without throughput summary: {b:?}");
            }
        }
        eprintln!("{what}: ok in {:?}", started.elapsed());
    }
}

type Shape = (String, usize, Vec<Vec<u8>>);

/// Normalises a command to (name, arg count, key shapes): random 12-digit fields become `<12>`.
fn shape(e: &MonitorEntry) -> Shape {
    let args = e
        .args
        .iter()
        .map(|a| {
            // ZADD's score is a bare __rand_int__ with -r; key_shape only handles `prefix:` fields.
            if a.len() == 12 && a.iter().all(u8::is_ascii_digit) {
                b"<12>".to_vec()
            } else {
                key_shape(a)
            }
        })
        .collect();
    (e.name(), e.args.len(), args)
}

fn monitored_run(tool: &Tool, test: &str) -> BTreeMap<Shape, usize> {
    let server = RedisServer::start();
    let monitor = Monitor::start(&server);
    let out =
        tool.run(&args(&server, &["-t", test, "-n", "50", "-c", "2", "-r", "1000", "-d", "17", "-q"]), T);
    ok(&out, &format!("{} -t {test}", tool.name()));
    let mut counts = BTreeMap::new();
    for e in monitor.finish() {
        // The startup's CONFIG GET, and respbench's INFO readings around each test (verdict).
        if e.name() == "CONFIG" || e.name() == "INFO" {
            continue;
        }
        *counts.entry(shape(&e)).or_insert(0) += 1;
    }
    counts
}

fn render(m: &BTreeMap<Shape, usize>) -> String {
    m.iter()
        .map(|((_, _, args), c)| {
            let a: Vec<String> = args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            format!("{c} x {}\n", a.join(" "))
        })
        .collect()
}

fn monitor_matches_redis_benchmark(tool: Tool) {
    let reference = redis_benchmark();
    for test in [
        "ping_inline",
        "ping_mbulk",
        "set",
        "get",
        "incr",
        "lpush",
        "rpush",
        "lpop",
        "rpop",
        "sadd",
        "hset",
        "spop",
        "zadd",
        "zpopmin",
        "lrange_100",
        "mset",
    ] {
        let got = monitored_run(&tool, test);
        let want = monitored_run(&reference, test);
        let total: usize = want.values().sum();
        assert!(total >= 50, "redis-benchmark -t {test} sent only {total} commands:\n{}", render(&want));
        assert_eq!(
            got,
            want,
            "-t {test}: commands differ\n--- {} ---\n{}--- redis-benchmark ---\n{}",
            tool.name(),
            render(&got),
            render(&want)
        );
    }
}

fn distinct_keys(tool: Tool) {
    let run = |t: &Tool| {
        let server = RedisServer::start();
        let out = t.run(&args(&server, &["-t", "set", "-r", "100000", "-n", "20000", "-q"]), T);
        ok(&out, t.name());
        server.dbsize(0)
    };
    let got = run(&tool) as f64;
    let want = run(&redis_benchmark()) as f64;
    // Expected 100000 * (1 - e^-0.2) ≈ 18127 distinct keys; the spread is about ±50.
    assert!((got - want).abs() <= want * 0.01, "DBSIZE {} = {got}, redis-benchmark = {want}", tool.name());
}

fn unix_socket(tool: Tool) {
    let server = RedisServer::start();
    let monitor = Monitor::start(&server);
    let sock = server.socket_path().display().to_string();
    let out = tool.run(&["-s", sock.as_str(), "-t", "set,get", "-n", "200", "-q"], T);
    ok(&out, "unix socket");
    let titles: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|q| q.title).collect();
    assert_eq!(titles, ["SET", "GET"], "{}", out.dump());
    let entries = monitor.finish();
    let sets: Vec<&MonitorEntry> = entries.iter().filter(|e| e.name() == "SET").collect();
    assert_eq!(sets.len(), 200);
    assert!(
        sets.iter().all(|e| e.client.starts_with("unix:")),
        "SET not over the unix socket: {:?}",
        sets[0]
    );
    // Without -r the placeholder is sent literally.
    assert_eq!(server.dbsize(0), 1);
}

fn acl_user(tool: Tool) {
    // The default user needs another password, so only `AUTH bench pw` can succeed.
    let server = RedisServer::start_with(&[("requirepass", "adminpw")]);
    assert_eq!(server.cli(&["ACL", "SETUSER", "bench", "on", ">pw", "~*", "&*", "+@all"]), "OK");
    let out = tool.run(&args(&server, &["--user", "bench", "-a", "pw", "-t", "set", "-n", "200", "-q"]), T);
    ok(&out, "--user bench -a pw");
    assert_eq!(server.command_calls("set"), 200);

    let out = tool
        .run_lenient(&args(&server, &["--user", "bench", "-a", "wrong", "-t", "set", "-n", "200", "-q"]), T);
    assert!(!out.timed_out, "wrong password: tool hung\n{}", out.dump());
    assert!(!out.status.success(), "wrong password: exit 0\n{}", out.dump());
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(
        text.contains("WRONGPASS") || text.contains("NOAUTH"),
        "wrong password: no error message\n{}",
        out.dump()
    );
    if tool.is_respbench() {
        // RESPBENCH-ONLY: errors go to stderr.
        assert!(out.stderr.contains("WRONGPASS"), "{}", out.dump());
    }
}

fn dbnum(tool: Tool) {
    let server = RedisServer::start();
    let out = tool.run(&args(&server, &["--dbnum", "3", "-t", "set", "-n", "200", "-r", "1000", "-q"]), T);
    ok(&out, "--dbnum 3");
    assert!(server.dbsize(3) > 0, "no keys in db 3");
    assert_eq!(server.dbsize(0), 0, "keys leaked into db 0");
}

fn resp3(tool: Tool) {
    let server = RedisServer::start();
    server.cli(&["SET", "key:__rand_int__", "x"]);
    let out = tool.run(&args(&server, &["-3", "-t", "get", "-n", "200", "-q"]), T);
    ok(&out, "-3");
    let titles: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|q| q.title).collect();
    assert_eq!(titles, ["GET"], "{}", out.dump());
    assert_eq!(server.command_calls("hello"), 50, "one HELLO 3 per client");
    assert_eq!(server.command_calls("get"), 200);
}

fn keepalive_0(tool: Tool) {
    let server = RedisServer::start();
    let before: u64 = server.info_field("stats", "total_connections_received").unwrap().parse().unwrap();
    let out = tool.run(&args(&server, &["-k", "0", "-t", "ping_mbulk", "-n", "200", "-c", "5", "-q"]), T);
    ok(&out, "-k 0");
    let after: u64 = server.info_field("stats", "total_connections_received").unwrap().parse().unwrap();
    assert!(after - before >= 200, "-k 0 -n 200 -P 1 made only {} connections", after - before);
}

fn pipeline_exact(tool: Tool) {
    let server = RedisServer::start();
    let out = tool.run(&args(&server, &["-P", "16", "-n", "100", "-t", "incr", "-q"]), T);
    ok(&out, "-P 16");
    let calls = server.command_calls("incr");
    if tool.is_respbench() {
        // RESPBENCH-ONLY: -n is exact with pipelining.
        assert_eq!(calls, 100);
    } else {
        // Documents redis-benchmark's defect: 50 clients x whole batches of 16 overshoot -n.
        assert_eq!(calls, 112);
    }
}

/// 1000 requests of 100 KB in flight per connection: a client that wrote everything before
/// reading would deadlock against the server's full socket buffers.
fn deep_pipeline_large_values(tool: Tool) {
    let server = RedisServer::start();
    let out = tool.run(
        &args(&server, &["-t", "set,get", "-P", "1000", "-d", "100000", "-n", "3000", "-c", "2", "-q"]),
        T,
    );
    ok(&out, "-P 1000 -d 100000");
    let titles: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|q| q.title).collect();
    assert_eq!(titles, ["SET", "GET"], "{}", out.dump());
    if tool.is_respbench() {
        // RESPBENCH-ONLY: exactly -n requests per test.
        assert_eq!(server.command_calls("set"), 3000);
        assert_eq!(server.command_calls("get"), 3000);
    }
}

fn loop_sigint(tool: Tool) {
    let server = RedisServer::start();
    let run = tool.spawn(&args(&server, &["-l", "-t", "ping_mbulk", "-q"]));
    // -l runs forever: only the signal ends it before the hard limit; it comes in the first
    // round of 100000, so what is printed is what completed before it.
    server.wait_for_calls("ping", 1000);
    run.interrupt();
    let out = run.wait(T);
    if tool.is_respbench() {
        // RESPBENCH-ONLY: on SIGINT it prints what completed.
        assert!(!parse_quiet(&out.stdout).is_empty(), "no result line after SIGINT\n{}", out.dump());
        // The round it cut short says so, in a trailing field of its -q line.
        assert!(out.stdout.contains(", partial: interrupted after "), "{}", out.dump());
        assert!(out.stdout.contains(" of 100000 requests"), "{}", out.dump());
    }
}

fn connection_refused(tool: Tool) {
    let port = free_port().to_string();
    // redis-benchmark never ends after the message (below): 3 s are enough to print it.
    let limit = if tool.is_respbench() { T } else { Duration::from_secs(3) };
    let out = tool.run_lenient(&["-h", "127.0.0.1", "-p", port.as_str(), "-n", "10", "-q"], limit);
    let msg = format!("Could not connect to Redis at 127.0.0.1:{port}: Connection refused");
    assert!(out.stderr.contains(&msg), "expected {msg:?}\n{}", out.dump());
    if tool.is_respbench() {
        // RESPBENCH-ONLY: redis-benchmark 7.0.15 spins at 100% CPU forever after this message.
        assert!(!out.timed_out, "hung after connection refused\n{}", out.dump());
        assert!(!out.status.success(), "exit 0 after connection refused\n{}", out.dump());
    }
}

fn invalid_option(tool: Tool) {
    let out = tool.run(&["--bogus"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    if tool.is_respbench() {
        // RESPBENCH-ONLY: the error goes to stderr (redis-benchmark prints it and the usage to stdout).
        assert!(out.stderr.contains("--bogus"), "{}", out.dump());
    } else {
        assert!(out.stdout.contains("Invalid option \"--bogus\""), "{}", out.dump());
    }
}

/// respbench-only features (redis-benchmark has no counterpart to check against), on mio: the
/// document and the merge are the command line's.
mod respbench_only {
    #[test]
    fn unwritable_json_path_fails_before_the_run() {
        let server = respbench_tests::RedisServer::start();
        let tool = respbench_tests::respbench_on("mio");
        let port = server.port().to_string();
        let out = tool.run(
            &["-p", port.as_str(), "-n", "100000000", "-t", "get", "--json", "/nonexistent-dir/r.json"],
            super::T,
        );
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains("/nonexistent-dir/r.json"), "{}", out.dump());
        // A hundred million GETs would not end within the hard limit: the run did not start.
        assert_eq!(server.command_calls("get"), 0, "the run started anyway");
    }

    #[test]
    fn json_output_and_merge_mio() {
        super::json_output_and_merge(respbench_tests::respbench_on("mio"));
    }
}

fn read_json(text: &str, what: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON: {e}\n{text}"))
}

fn test_requests(doc: &serde_json::Value, name: &str) -> u64 {
    let tests = doc["tests"].as_array().expect("tests array");
    let t = tests.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no test {name} in {doc}"));
    t["requests"].as_u64().expect("requests")
}

/// Two runs of one configuration write `--json` (one to a file, one to stdout), and `respbench
/// merge` adds them up; a run of another configuration is refused, saying what differs, unless
/// `--force`, which marks the result as a mixture.
fn json_output_and_merge(tool: Tool) {
    let server = RedisServer::start();
    let dir = std::env::temp_dir().join(format!("respbench-json-{}-{}", std::process::id(), server.port()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b, m) = (dir.join("a.json"), dir.join("b.json"), dir.join("merged.json"));
    let a_str = a.to_str().unwrap();

    let out = tool.run(&args(&server, &["-t", "set,get", "-n", "1000", "-q", "--json", a_str]), T);
    ok(&out, "run A");
    assert_eq!(parse_quiet(&out.stdout).len(), 2, "{}", out.dump());
    let doc_a = read_json(&std::fs::read_to_string(&a).unwrap(), "A");
    assert_eq!(doc_a["schema"], "respbench/2");
    assert_eq!(doc_a["interrupted"], false);
    assert_eq!(doc_a["config"]["port"], server.port());
    assert_eq!(test_requests(&doc_a, "SET"), 1000);
    // What the pictures name: the server and the command line.
    assert_eq!(doc_a["server"]["name"], "redis", "{}", doc_a["server"]);
    assert_eq!(doc_a["server"]["mode"], "standalone", "{}", doc_a["server"]);
    assert!(doc_a["server"]["version"].as_str().is_some_and(|v| v.starts_with(char::is_numeric)));
    let line: Vec<&str> =
        doc_a["command_line"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(line.windows(2).any(|w| w == ["-n", "1000"]), "{line:?}");

    // With `--json -`, stdout is the document and nothing else.
    let out = tool.run(&args(&server, &["-t", "set,get", "-n", "1000", "--json", "-"]), T);
    ok(&out, "run B");
    let doc_b = read_json(&out.stdout, "B's stdout");
    assert_eq!(test_requests(&doc_b, "GET"), 1000);
    std::fs::write(&b, &out.stdout).unwrap();

    let merge = respbench_tests::respbench();
    let out = merge.run(&["merge", a_str, b.to_str().unwrap(), "--json", m.to_str().unwrap()], T);
    ok(&out, "merge");
    let lines = parse_quiet(&out.stdout);
    assert_eq!(lines.iter().map(|l| l.title.as_str()).collect::<Vec<_>>(), ["SET", "GET"], "{}", out.dump());
    assert!(lines.iter().all(|l| l.rps > 0.0), "{}", out.dump());
    let merged = read_json(&std::fs::read_to_string(&m).unwrap(), "merged");
    assert_eq!(merged["schema"], "respbench/2");
    assert!(merged.get("mixture").is_none(), "{merged}");
    for name in ["SET", "GET"] {
        assert_eq!(test_requests(&merged, name), 2000, "{name}");
    }

    // Another configuration, made one after the other: refused, with what differs.
    let c = dir.join("c.json");
    let out = tool.run(
        &args(&server, &["-t", "set,get", "-n", "500", "-c", "5", "-P", "4", "--json", c.to_str().unwrap()]),
        T,
    );
    ok(&out, "run C");
    let c_str = c.to_str().unwrap();
    let _ = std::fs::remove_file(&m);
    let out = merge.run(&["merge", a_str, c_str, "--json", m.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    for want in [
        "not repeats of one configuration",
        &format!("{c_str}: -c 5 where {a_str} has -c 50"),
        &format!("-n 500 where {a_str} has -n 1000"),
        "-P 4 where",
        "--force",
    ] {
        assert!(out.stderr.contains(want), "{want}: {}", out.dump());
    }
    assert!(!m.exists() && out.stdout.is_empty(), "{}", out.dump());
    // Different tests are named too.
    let d = dir.join("d.json");
    ok(
        &tool.run(&args(&server, &["-t", "get", "-n", "1000", "-q", "--json", d.to_str().unwrap()]), T),
        "run D",
    );
    let out = merge.run(&["merge", a_str, d.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains(&format!("tests GET where {a_str} has SET, GET")), "{}", out.dump());
    // Another server (another redis-server on another port) is another configuration.
    let other = RedisServer::start();
    let e = dir.join("e.json");
    ok(
        &tool.run(&args(&other, &["-t", "set,get", "-n", "1000", "-q", "--json", e.to_str().unwrap()]), T),
        "run E",
    );
    let out = merge.run(&["merge", a_str, e.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let says = format!("-p {} where {a_str} has -p {}", other.port(), server.port());
    assert!(out.stderr.contains(&says), "{says}: {}", out.dump());
    // --force adds them up and says so in every output.
    let out = merge.run(&["merge", "--force", a_str, c_str, "--json", m.to_str().unwrap()], T);
    ok(&out, "merge --force");
    assert!(out.stdout.starts_with("MIXTURE: "), "{}", out.dump());
    assert!(out.stderr.contains("-c 5 where"), "{}", out.dump());
    let mixed = read_json(&std::fs::read_to_string(&m).unwrap(), "mixture");
    let why = mixed["mixture"].as_array().unwrap_or_else(|| panic!("no mixture: {mixed}"));
    assert!(why[0].as_str().unwrap().contains("-c 5 where"), "{why:?}");
    assert_eq!(test_requests(&mixed, "GET"), 1500);
    respbench_tests::check_json_independently(&m);

    // A file that is not a respbench document is refused with a message and status 1.
    std::fs::write(&b, "{\"schema\": \"other/9\"}").unwrap();
    let out = merge.run(&["merge", a_str, b.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("other/9"), "{}", out.dump());
    let _ = std::fs::remove_dir_all(&dir);
}
