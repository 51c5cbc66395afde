//! Issue 23, scripts and harnesses written for redis-benchmark and valkey-benchmark run
//! respbench unchanged: stderr is for errors, the exit status and the words their callers
//! check. The behaviours are the command line's and the session's: once, on mio.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::time::Duration;

use respbench_tests::fake::{Action, FakeServer};
use respbench_tests::{json_path, parse_quiet, redis_benchmark, take_document, RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

respbench_tests::backend_tests!(
    every: [],
    mio: [
        a_harness_that_fails_on_stderr_runs_the_default_suite,
        error_replies_exit_1_in_the_peers_words,
        a_server_that_refuses_every_request_fails_the_run,
        a_window_with_no_completed_request_fails_the_run,
        idle_at_maxclients_exits_1_at_once,
        idle_with_a_closed_stdout_does_not_panic,
        a_closed_stdout_never_panics,
        a_binary_argument_is_sent_as_its_bytes,
        a_binary_option_value_is_a_clear_error,
        the_warmup_is_extra_and_every_test_has_one,
        valkeys_sequential_cases_leave_its_keyspace,
        data_placeholder_is_a_value_of_d_bytes,
        shared_placeholders_repeat_in_a_command,
        what_reaches_the_server_is_what_was_asked,
        function_load_and_fcall,
        valkeys_own_cases,
        command_sequences_with_repeats,
        a_sequence_goes_whole_on_one_connection,
        named_valkey_benchmark_the_default_suite_is_valkeys,
        redis_benchmark_8s_rate_cases,
        valkeys_mget_reads_ten_keys_of_the_keyspace,
    ],
);

fn read(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

/// Tcl's `exec` fails on any stderr output: the default suite (whose SPOP pops the one member
/// its SADD wrote, as redis-benchmark's does) writes nothing there, in each format, and its
/// `-q` lines keep redis-benchmark's shape.
fn a_harness_that_fails_on_stderr_runs_the_default_suite(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    for format in [&["-q"][..], &["--csv"], &[]] {
        let json = json_path("dropin", "suite");
        let args =
            [&["-p", &port, "-c", "10", "-n", "100", "--json", json.to_str().unwrap()][..], format].concat();
        let out = tool.run(&args, T);
        assert!(out.status.success(), "{}", out.dump());
        assert_eq!(out.stderr, "", "{}", out.dump());
        let doc = read(&json);
        assert_eq!(doc["tests"].as_array().unwrap().len(), 21, "{doc}");
        // The suite's own pops are no finding anywhere (a busy machine may still find the client
        // limited a test: in the JSON, not on stderr).
        for t in doc["tests"].as_array().unwrap() {
            let nil = t["warnings"].as_array().into_iter().flatten().any(|w| w["kind"] == "nil_replies");
            assert!(!nil, "{}: {}", t["name"], t["warnings"]);
        }
        if format == ["-q"] {
            let lines = parse_quiet(&out.stdout);
            assert_eq!(lines.len(), 21, "{}", out.dump());
            assert!(out.stdout.contains("SPOP: "), "{}", out.dump());
        }
    }
}

/// `-n 12 -c 2 incr foo x y`: every request is refused; every result is printed, then the exit
/// status and stderr line of redis-benchmark, which its callers check.
fn error_replies_exit_1_in_the_peers_words(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = ["-p", &port, "-n", "12", "-c", "2", "incr", "foo", "x", "y"];
    let words = "Error from server: ERR wrong number of arguments for 'incr' command";
    let out = tool.run(&args, T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stdout.contains("errors: 12 (ERR: 12)"), "{}", out.dump());
    assert_eq!(out.stderr.trim_end(), words, "{}", out.dump());
    // redis-benchmark says the same and exits the same.
    let theirs = redis_benchmark().run(&args, T);
    assert_eq!(theirs.status.code(), Some(1), "{}", theirs.dump());
    assert!(theirs.stderr.contains(words) || theirs.stdout.contains(words), "{}", theirs.dump());
    // -q too: no rate for a test in which every reply was an error (redis-benchmark prints one;
    // issue #35), and the words come after it on stderr.
    let out = tool.run(&["-p", &port, "-n", "12", "-q", "incr", "foo", "x", "y"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(parse_quiet(&out.stdout).is_empty(), "{}", out.dump());
    assert!(out.stdout.contains("incr foo x y: no request succeeded: 12 replies"), "{}", out.dump());
    assert_eq!(out.stderr.trim_end(), words, "{}", out.dump());
}

/// A server in protected mode refuses every request with an error: no rate line passes for a
/// success.
fn a_server_that_refuses_every_request_fails_the_run(tool: Tool) {
    let denied = b"-DENIED Redis is running in protected mode\r\n".to_vec();
    let server = FakeServer::start_with_config(move |_| Action::Reply(denied.clone()));
    let port = server.port().to_string();
    let out = tool.run(&["-p", &port, "-t", "get", "-n", "100", "-q"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("Error from server: DENIED Redis is running in protected mode"),
        "{}",
        out.dump()
    );
}

/// A test whose measured window completed no request (a server that never answers GET, a
/// short `--duration`): the run fails, saying which test.
fn a_window_with_no_completed_request_fails_the_run(tool: Tool) {
    let server = FakeServer::start_with_config(|c| {
        if c.name() == "GET" {
            Action::Stall
        } else {
            Action::Reply(b"+OK\r\n".to_vec())
        }
    });
    let port = server.port().to_string();
    let out = tool.run(&["-p", &port, "-t", "get", "--duration", "300ms", "--drain-grace", "100ms", "-q"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("GET: no request completed in the measured window"), "{}", out.dump());
}

/// `-I` against a server at `maxclients`: exit 1 at once, in redis-benchmark's words, instead of
/// waiting on the connections it got.
fn idle_at_maxclients_exits_1_at_once(tool: Tool) {
    let server = RedisServer::start_with(&[("maxclients", "4")]);
    let port = server.port().to_string();
    let out = tool.run_lenient(&["-p", &port, "-I", "-c", "10"], T);
    assert!(!out.timed_out, "-I waited\n{}", out.dump());
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("Error from server: ERR max number of clients reached"), "{}", out.dump());
}

/// `-I` whose reader went away: its lines go nowhere, its connections stay, Ctrl-C ends it as
/// usual; no panic.
fn idle_with_a_closed_stdout_does_not_panic(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let mut child = std::process::Command::new(&tool.path)
        .args(&tool.pre_args)
        .args(["-p", &port, "-I", "-c", "3"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    // The startup connection's INFO, then the three idle ones.
    respbench_tests::wait_until("three idle connections", T, || {
        server.info_field("clients", "connected_clients").and_then(|v| v.parse::<u64>().ok()) >= Some(4)
    });
    respbench_tests::send_signal(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(130), "{stderr}");
}

/// Runs `tool` with `args` and a stdout whose reader is gone: its status and stderr.
fn with_closed_stdout(tool: &Tool, args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    // A subcommand comes first, before any --backend.
    let sub = matches!(args.first(), Some(&"merge" | &"plot"));
    let pre: &[String] = if sub { &[] } else { &tool.pre_args };
    let out = std::process::Command::new(&tool.path)
        .args(pre)
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `--json -`, `merge`, `plot -o -` and `--help` with a closed stdout: an error that says so, or
/// nothing; never a panic (status 101).
fn a_closed_stdout_never_panics(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("dropin", "closed");
    let path = json.to_str().unwrap();
    let out = tool.run(&["-p", &port, "-t", "get", "-n", "100", "-q", "--json", path], T);
    assert!(out.status.success(), "{}", out.dump());
    let runs: [&[&str]; 5] = [
        &["-p", &port, "-t", "get", "-n", "100", "--json", "-"],
        &["-p", &port, "-t", "get", "-n", "100"],
        &["merge", path, path],
        &["plot", "-o", "-", path],
        &["--help"],
    ];
    for args in runs {
        let (code, stderr) = with_closed_stdout(&tool, args);
        assert!(!stderr.contains("panicked") && code != Some(101), "{args:?}: {code:?} {stderr}");
        // What it could not write is said (--help has nothing to say but its text).
        if args != ["--help"] {
            assert!(stderr.contains("Broken pipe"), "{args:?}: {code:?} {stderr}");
        }
        assert!(code.is_some(), "{args:?}: killed by a signal: {stderr}");
    }
    let _ = std::fs::remove_file(&json);
}

/// The value stored at `key`, as bytes (redis-cli would quote them).
fn get_bytes(server: &RedisServer, key: &[u8]) -> Vec<u8> {
    let mut c = server.connect();
    c.write_all(&respbench_tests::encode_command(&[b"GET", key])).unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 256];
    // `$N\r\n` + N bytes + `\r\n`, or `$-1\r\n`.
    while !(reply.ends_with(b"\r\n") && reply.iter().filter(|&&b| b == b'\n').count() >= 2
        || reply == b"$-1\r\n")
    {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {reply:?}");
        reply.extend_from_slice(&buf[..n]);
    }
    let head = reply.iter().position(|&b| b == b'\n').unwrap() + 1;
    reply[head..reply.len() - 2].to_vec()
}

/// `SET k $'\xff\xfe'`: redis-benchmark sends binary values; respbench stores the same bytes.
fn a_binary_argument_is_sent_as_its_bytes(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let value = OsString::from_vec(vec![0xff, 0xfe, b'x', 0x80]);
    let args: Vec<OsString> = vec![
        "-p".into(),
        port.into(),
        "-n".into(),
        "10".into(),
        "-q".into(),
        "SET".into(),
        "k".into(),
        value,
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert_eq!(get_bytes(&server, b"k"), [0xff, 0xfe, b'x', 0x80]);
    assert_eq!(server.command_calls("set"), 10);
    // redis-benchmark stores the same.
    server.cli(&["DEL", "k"]);
    let out = redis_benchmark().run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(get_bytes(&server, b"k"), [0xff, 0xfe, b'x', 0x80]);
}

/// An option's value that is not UTF-8: an error naming the option, status 1, no panic.
fn a_binary_option_value_is_a_clear_error(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let pings = server.command_calls("ping");
    let args: Vec<OsString> =
        vec!["-p".into(), port.into(), "--key-prefix".into(), OsString::from_vec(vec![0xff]), "ping".into()];
    let out = tool.run(&args, T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.starts_with("--key-prefix: the value \"\u{fffd}\" is not UTF-8"), "{}", out.dump());
    assert_eq!(server.command_calls("ping"), pings, "nothing sent");
    // `merge` comes first, before any --backend.
    let out =
        respbench_tests::respbench().run(&[OsString::from("merge"), OsString::from_vec(vec![b'a', 0xff])], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("is not UTF-8"), "{}", out.dump());
}

/// `-r 5 --warmup 0.3 -n 100 -t set,get`: as valkey-benchmark's, the warm-up's requests come
/// before the measured 100 of each test, not out of them (it left `0 requests completed` once).
fn the_warmup_is_extra_and_every_test_has_one(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("dropin", "warmup");
    let args = ["-p", &port, "-r", "5", "--warmup", "0.3", "-n", "100", "-t", "set,get", "-q"];
    let out = tool.run(&[&args[..], &["--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    let doc = read(&json);
    for (t, name) in doc["tests"].as_array().unwrap().iter().zip(["SET", "GET"]) {
        assert_eq!(t["name"], name);
        assert_eq!(t["requests"], 100, "{name}: {}", t["requests"]);
        // Each test warmed up: the server saw its 100 and more.
        let calls = server.command_calls(&name.to_lowercase());
        assert!(calls > 100, "{name}: {calls} calls: no warm-up");
    }
}

/// valkey-benchmark 9's own `--sequential` cases (tests/integration/valkey-benchmark.tcl), with
/// the keyspace each leaves; `--key-dist sequential` is the same.
fn valkeys_sequential_cases_leave_its_keyspace(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let run = |args: &[&str]| {
        server.cli(&["FLUSHALL"]);
        let out = tool.run(&[&["-p", &port, "-q"][..], args].concat(), T);
        assert!(out.status.success(), "{args:?}\n{}", out.dump());
        assert_eq!(out.stderr, "", "{args:?}\n{}", out.dump());
    };
    for spelling in [&["--sequential"][..], &["--key-dist", "sequential"]] {
        run(&[&["-r", "50", "-n", "50", "-t", "zadd"][..], spelling].concat());
        assert_eq!(server.cli(&["ZCARD", "myzset"]).trim(), "50", "{spelling:?}");
    }
    // Each command takes two consecutive values: 50 keys.
    run(&["-r", "100", "-n", "100", "--sequential", "--", "set", "rain__rand_int__", "rain__rand_int__"]);
    assert_eq!(server.dbsize(0), 50);
    assert_eq!(server.cli(&["GET", "rain000000000000"]).trim(), "rain000000000001");
    // One value per command, pipelined: 100 keys, each equal to its value.
    run(&[
        "-r",
        "100",
        "-n",
        "100",
        "-P",
        "5",
        "--sequential",
        "--",
        "set",
        "rain__rand_1st__",
        "rain__rand_1st__",
    ]);
    assert_eq!(server.dbsize(0), 100);
    for k in [0, 42, 99] {
        let key = format!("rain{k:012}");
        assert_eq!(server.cli(&["GET", &key]).trim(), key);
    }
    // It needs a keyspace, and one spelling.
    let out = tool.run(&["-p", &port, "-n", "1", "--sequential", "ping"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--sequential needs -r"), "{}", out.dump());
    let out = tool.run(&["-p", &port, "-r", "5", "--sequential", "--key-dist", "zipf:0.9", "ping"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
}

/// `__data__` is a value of `-d` bytes, the suite's own (`-d 4` gives `VXKe`); inside an
/// argument too.
fn data_placeholder_is_a_value_of_d_bytes(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = tool.run(&["-p", &port, "-n", "10", "-d", "7", "-q", "--", "set", "k", "__data__"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.cli(&["GET", "k"]).trim(), "VXKeHog");
    let out = tool.run(&["-p", &port, "-n", "10", "-d", "4", "-q", "--", "set", "k2", "<__data__>"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.cli(&["GET", "k2"]).trim(), "<VXKe>");
    // A size range draws each value's size, as -d does for the suite.
    let out = tool.run(
        &[
            "-p",
            &port,
            "-n",
            "200",
            "-d",
            "10-20",
            "-r",
            "1000",
            "-q",
            "--",
            "set",
            "v:__rand_int__",
            "__data__",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let keys = server.cli(&["KEYS", "v:*"]);
    let sizes: Vec<u64> =
        keys.lines().take(50).map(|k| server.cli(&["STRLEN", k.trim()]).trim().parse().unwrap()).collect();
    assert!(sizes.iter().all(|s| (10..=20).contains(s)), "{sizes:?}");
    assert!(sizes.iter().any(|&s| s != sizes[0]), "one size: {sizes:?}");
}

/// `__rand_1st__` … `__rand_9th__`: every occurrence of one in a command shares a value; each
/// `__rand_int__` is drawn on its own.
fn shared_placeholders_repeat_in_a_command(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = [
        "-p",
        &port,
        "-n",
        "300",
        "-r",
        "1000000",
        "-q",
        "--",
        "hset",
        "h:__rand_1st__",
        "a",
        "__rand_1st__",
        "b",
        "__rand_9th__",
        "c",
        "__rand_9th__",
        "d",
        "__rand_int__",
        "e",
        "__rand_int__",
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    let keys = server.cli(&["KEYS", "h:*"]);
    let keys: Vec<&str> = keys.lines().map(str::trim).collect();
    assert!(keys.len() > 250, "{} keys", keys.len());
    let (mut same_int, mut same_1st_9th) = (0, 0);
    for k in keys.iter().take(60) {
        let fields = server.cli(&["HMGET", k, "a", "b", "c", "d", "e"]);
        let [a, b, c, d, e] = fields.lines().map(str::trim).collect::<Vec<_>>()[..] else {
            panic!("{fields}")
        };
        assert_eq!(format!("h:{a}"), *k);
        assert_eq!(b, c, "{k}");
        same_int += usize::from(d == e);
        same_1st_9th += usize::from(a == b);
    }
    // Independent draws from a million agree about never.
    assert!(same_int <= 2 && same_1st_9th <= 2, "{same_int} {same_1st_9th}");
}

/// The INFO calls a server has counted since `CONFIG RESETSTAT` (this reading's own is counted
/// after it).
fn info_calls(server: &RedisServer) -> u64 {
    server.command_calls("info")
}

/// The verdict reads the server once at each test's start and end (`INFO cpu commandstats`),
/// plus `INFO server` once, and the server's sampler the `INFO` calls its JSON counts (#51: at
/// each test's edges and each second between); `--no-server-probe` sends none; a server that
/// refuses `CONFIG` (managed services) is still read.
fn what_reaches_the_server_is_what_was_asked(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    server.cli(&["CONFIG", "RESETSTAT"]);
    let json = json_path("dropin", "reaches");
    let out = tool.run(&["-p", &port, "-c", "10", "-n", "100", "-q", "--json", json.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.dump());
    let doc = read(&json);
    let tests = doc["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 21);
    let sampled: u64 = tests.iter().map(|t| t["server_sampling"]["info_calls"].as_u64().unwrap()).sum();
    // At least each test's two edges.
    assert!(sampled >= 2 * 21, "{sampled}");
    // 21 tests, two readings each, and INFO server: it was 85 (two commands a reading).
    assert_eq!(info_calls(&server), 1 + 2 * 21 + sampled);
    server.cli(&["CONFIG", "RESETSTAT"]);
    let out = tool.run(&["-p", &port, "-c", "10", "-n", "100", "-q", "--no-server-probe"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(info_calls(&server), 0);
    // What redis-benchmark sends at startup, and the benchmark: nothing else.
    let config_get = server.info_field("commandstats", "cmdstat_config|get").unwrap_or_default();
    assert!(config_get.starts_with("calls=2,"), "{config_get}");

    let renamed = RedisServer::start_with(&[("rename-command", "CONFIG \"\"")]);
    let json = json_path("dropin", "renamed");
    let rport = renamed.port().to_string();
    let out = tool.run(&["-p", &rport, "-t", "get", "-n", "1000", "-q", "--json", json.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.dump());
    let doc = read(&json);
    let t = &doc["tests"][0];
    assert!(
        t["server_cpu"]["cores"].as_f64().is_some(),
        "INFO read where CONFIG is refused: {}",
        t["bottleneck"]
    );
}

/// valkey-benchmark 9's `-t function_load,fcall` with `--num-functions` and
/// `--num-keys-in-fcall`: the loads and calls reach the server, and fcall's library (one
/// function, loaded first) is what remains.
fn function_load_and_fcall(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = [
        "-p",
        &port,
        "-t",
        "function_load,fcall",
        "-n",
        "100",
        "--num-functions",
        "5",
        "--num-keys-in-fcall",
        "2",
        "-q",
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    let titles: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|l| l.title).collect();
    assert_eq!(titles, ["FUNCTION LOAD", "FCALL"], "{}", out.dump());
    let calls = |c: &str| server.info_field("commandstats", c).unwrap_or_default();
    // 100 measured loads and fcall's own.
    assert!(calls("cmdstat_function|load").starts_with("calls=101,"), "{}", calls("cmdstat_function|load"));
    assert!(calls("cmdstat_fcall").starts_with("calls=100,"), "{}", calls("cmdstat_fcall"));
    assert!(calls("cmdstat_fcall").contains("failed_calls=0"), "{}", calls("cmdstat_fcall"));
    let list = server.cli(&["FUNCTION", "LIST"]);
    assert!(list.contains("benchlib") && list.contains("foo1") && !list.contains("foo2"), "{list}");
}

/// The cases of valkey's own `tests/integration/valkey-benchmark.tcl` (8.0's, without TLS: the
/// cipher cases are in tls.rs), run with respbench in valkey-benchmark's place: each command's
/// calls and the keys left, from `INFO commandstats` and `INFO keyspace`.
fn valkeys_own_cases(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let calls = |c: &str| server.command_calls(c);
    let keys = || server.dbsize(0);
    let run = |args: &str| {
        server.cli(&["FLUSHALL"]);
        server.cli(&["CONFIG", "RESETSTAT"]);
        let mut a = vec!["-p", port.as_str(), "-q"];
        a.extend(args.split(' '));
        let out = tool.run(&a, T);
        assert!(out.status.success(), "{args}\n{}", out.dump());
        assert_eq!(out.stderr, "", "{args}\n{}", out.dump());
    };
    run("-c 5 -n 10 -t set,get");
    assert_eq!((calls("set"), calls("get"), calls("lrange")), (10, 10, 0));
    run("-c 10 -n 100");
    let full = [
        ("ping", 200),
        ("set", 100),
        ("get", 100),
        ("incr", 100),
        ("lpush", 200),
        ("rpush", 100),
        ("lpop", 100),
        ("rpop", 100),
        ("sadd", 100),
        ("hset", 100),
        ("spop", 100),
        ("zadd", 100),
        ("zpopmin", 100),
        ("lrange", 400),
        ("mset", 100),
        ("rpoplpush", 0),
    ];
    for (c, n) in full {
        assert_eq!(calls(c), n, "{c}");
    }
    run("--threads 10 -c 5 -n 10 -t set,get");
    assert_eq!((calls("set"), calls("get"), keys()), (10, 10, 1));
    run("-P 5 -c 10 -n 10010 -t set,get");
    assert_eq!((calls("set"), calls("get"), calls("lrange"), keys()), (10010, 10010, 0, 1));
    run("-c 5 -n 150 INCRBYFLOAT mykey 10.0");
    assert_eq!((calls("incrbyfloat"), calls("get"), keys()), (150, 0, 1));
    run("-r 50 -t set -n 1000");
    assert_eq!((calls("set"), calls("get"), keys()), (1000, 0, 50));
    // Idle mode at maxclients: an error, at once.
    server.cli(&["CONFIG", "SET", "maxclients", "5"]);
    let out = tool.run_lenient(&["-p", &port, "-c", "10", "-I"], T);
    server.cli(&["CONFIG", "SET", "maxclients", "10000"]);
    assert!(!out.timed_out && out.status.code() == Some(1), "{}", out.dump());
    assert!(out.stderr.contains("Error"), "{}", out.dump());
    // -x: the last argument from stdin.
    server.cli(&["FLUSHALL"]);
    let mut child = std::process::Command::new(&tool.path)
        .args(&tool.pre_args)
        .args(["-p", &port, "-q", "-x", "-n", "10", "set", "key"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"arg").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(server.cli(&["GET", "key"]).trim(), "arg");
}

/// valkey-benchmark 9's `;` sequences with `N cmd` repeats: `-n 12 -- incr foo ; 3 incr bar`
/// is three sequences of four commands (not one command with `;` among its arguments): one
/// line, 12 requests, foo 3 and bar 9.
fn command_sequences_with_repeats(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("dropin", "sequence");
    let out = tool.run(
        &[
            "-p",
            &port,
            "-n",
            "12",
            "-c",
            "2",
            "-q",
            "--json",
            json.to_str().unwrap(),
            "--",
            "incr",
            "foo",
            ";",
            "3",
            "incr",
            "bar",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    let lines = parse_quiet(&out.stdout);
    assert_eq!(lines.len(), 1, "{}", out.dump());
    assert_eq!(lines[0].title, "incr foo ; 3 incr bar");
    assert_eq!((server.cli(&["GET", "foo"]).trim(), server.cli(&["GET", "bar"]).trim()), ("3", "9"));
    assert_eq!(server.command_calls("incr"), 12);
    let doc = read(&json);
    assert_eq!(doc["tests"].as_array().unwrap().len(), 1);
    assert_eq!(doc["tests"][0]["requests"], 12);
    // An empty command in a sequence is an error.
    let out = tool.run(&["-p", &port, "-n", "10", "--", "get", "a", ";"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("empty command"), "{}", out.dump());
}

/// valkey-benchmark sends a whole sequence on one connection, so `MULTI ; SET ; EXEC` is a
/// transaction on each (taken in turn across connections, EXEC came without its MULTI); and
/// `-n` rounds up to whole sequences: `-n 10` of a 4-command sequence sends 3 of them.
fn a_sequence_goes_whole_on_one_connection(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = [
        "-p",
        &port,
        "-c",
        "10",
        "-n",
        "300",
        "-r",
        "1000",
        "-q",
        "--",
        "multi",
        ";",
        "set",
        "k__rand_int__",
        "v",
        ";",
        "exec",
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert_eq!((server.command_calls("multi"), server.command_calls("exec")), (100, 100), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 100, "{}", out.dump());
    let stats = server.cli(&["INFO", "errorstats"]);
    assert!(!stats.contains("errorstat_"), "the server answered errors: {stats}");
    // An open loop runs whole transactions too (each sequence arrives whole: core/src/client.rs
    // an_open_loop_sequence_arrives_whole_and_the_rate_counts_its_commands); the rate and -n
    // count commands, 60 of them are 20 transactions.
    server.cli(&["CONFIG", "RESETSTAT"]);
    let mut open = args.to_vec();
    open.splice(2..6, ["-c", "2", "-n", "60", "--rps", "600"]);
    let out = tool.run(&open, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!((server.command_calls("multi"), server.command_calls("exec")), (20, 20), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 20, "{}", out.dump());
    let stats = server.cli(&["INFO", "errorstats"]);
    assert!(!stats.contains("errorstat_"), "the server answered errors: {stats}");

    server.cli(&["FLUSHALL"]);
    server.cli(&["CONFIG", "RESETSTAT"]);
    let json = json_path("dropin", "sequence-round");
    let args = [
        "-p",
        &port,
        "-c",
        "3",
        "-n",
        "10",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--",
        "incr",
        "foo",
        ";",
        "3",
        "incr",
        "bar",
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!((server.cli(&["GET", "foo"]).trim(), server.cli(&["GET", "bar"]).trim()), ("3", "9"));
    assert_eq!(server.command_calls("incr"), 12);
    assert_eq!(read(&json)["tests"][0]["requests"], 12);
}

/// `tool` under another name: a link called `name` in a directory of its own (the caller
/// removes it), as a drop-in is installed.
fn named(tool: &Tool, name: &str) -> (Tool, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("respbench-dropin-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join(name);
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&tool.path, &link).unwrap();
    (Tool { path: link, ..tool.clone() }, dir)
}

/// Run under the name `valkey-benchmark` (a link, as a drop-in is installed), the default suite
/// is valkey-benchmark 9's: redis-benchmark 7's with MGET after MSET, then FUNCTION LOAD and
/// FCALL. Under any other name it stays redis-benchmark 7's.
fn named_valkey_benchmark_the_default_suite_is_valkeys(tool: Tool) {
    if !tool.is_respbench() {
        return;
    }
    let server = RedisServer::start();
    let port = server.port().to_string();
    let (valkey, dir) = named(&tool, "valkey-benchmark");
    let out = valkey.run(&["-p", &port, "-c", "2", "-n", "20", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    let titles: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|l| l.title).collect();
    assert_eq!(titles.len(), 24, "{}", out.dump());
    assert_eq!(
        titles[19..],
        ["MSET (10 keys)", "MGET (10 keys)", "XADD", "FUNCTION LOAD", "FCALL"],
        "{}",
        out.dump()
    );
    assert_eq!((server.command_calls("fcall"), server.command_calls("mget")), (20, 20));
    let out = tool.run(&["-p", &port, "-c", "2", "-n", "20", "-q"], T);
    let titles: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|l| l.title).collect();
    assert_eq!(titles.len(), 21, "{}", out.dump());
    assert_eq!(server.command_calls("fcall"), 20, "no FCALL under respbench's own name");
    assert_eq!(server.command_calls("mget"), 20, "no MGET under respbench's own name");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `--rate` cases of redis's own tests/integration/redis-benchmark.tcl (redis-benchmark 8),
/// with respbench in redis-benchmark's place (a link of that name), and two of a longer test and
/// of `--rps` beside it: one total rate shared by the clients and threads, each pipelined command
/// counting one, started afresh for each test (`-t ping` is two tests of `-n` each); `-n` stays
/// exact, and the server counts exactly the benchmark's PINGs (respbench sends none of its own).
/// Each test lasts at least its schedule, `(n-1)/rate` to its last arrival, on its own clock
/// (only that bound: a busy machine makes a test longer, never shorter); `-q` prints
/// redis-benchmark's line for each test. Tcl's `exec` fails on
/// any stderr but where the case reads it (`2>@1`: `-k 0`). A bad value, a missing one and idle
/// mode are refused with exit 1 and a line naming the rate.
fn redis_benchmark_8s_rate_cases(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let (rb, dir) = named(&tool, "redis-benchmark");
    for args in [
        "-c 8 -n 32 --rate 32 PING",
        "--threads 4 -c 8 -n 32 --rate 32 PING",
        "-c 8 -P 4 -n 32 --rate 32 PING",
        "-c 8 -n 4 --rate 8 PING",
        "-k 0 -c 4 -n 8 --rate 16 PING",
        "-c 8 -n 4 --rate 8 -t ping",
        "-n 400 --rate 200 -t ping_mbulk",
        "-q -n 32 --rate 32 --rps 32 -t ping",
    ] {
        let value =
            |opt: &str| -> u64 { args.split(' ').skip_while(|a| *a != opt).nth(1).unwrap().parse().unwrap() };
        let (n, rate) = (value("-n"), value("--rate"));
        server.cli(&["CONFIG", "RESETSTAT"]);
        let json = json_path("dropin", "rate");
        let mut a = vec!["-p", port.as_str(), "--json", json.to_str().unwrap()];
        a.extend(args.split(' '));
        let out = rb.run(&a, T);
        assert!(out.status.success(), "{args}\n{}", out.dump());
        if !args.starts_with("-k 0") {
            assert_eq!(out.stderr, "", "{args}\n{}", out.dump());
        }
        let doc = read(&json);
        let tests = doc["tests"].as_array().unwrap();
        assert_eq!(tests.len(), if args.ends_with("-t ping") { 2 } else { 1 }, "{args}: {doc}");
        assert_eq!(server.command_calls("ping"), n * tests.len() as u64, "{args}\n{}", out.dump());
        for t in tests {
            assert_eq!((&t["requests"], &t["target_rps"]), (&n.into(), &rate.into()), "{args}: {t}");
            let (took, least) = (t["duration_s"].as_f64().unwrap(), (n - 1) as f64 / rate as f64);
            assert!(took >= least * 0.99, "{args}: {} took {took} s, its schedule {least} s", t["name"]);
        }
        if args.starts_with("-q") {
            // redis-benchmark's -q lines, one a test (--rps alone gives a table of rates).
            let titles: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|l| l.title).collect();
            assert_eq!(titles, ["PING_INLINE", "PING_MBULK"], "{}", out.dump());
        }
        if args.starts_with("-k 0") {
            // A socket for each request: each batch of what came due goes on a new one.
            assert_eq!(tests[0]["connections_opened"], 8, "{doc}");
        }
    }
    let refused = |args: &[&str], says: &str| {
        let out = rb.run(&[&["-p", &port][..], args].concat(), T);
        assert_eq!(out.status.code(), Some(1), "{args:?}\n{}", out.dump());
        assert_eq!(out.stderr.lines().next(), Some(says), "{args:?}\n{}", out.dump());
        assert_eq!(out.stdout, "", "{args:?}\n{}", out.dump());
    };
    for bad in ["0", "-1", "abc"] {
        let says = format!(
            "invalid value '{bad}' for --rate: the rate is requests per second, a whole number from 1 to 100000000"
        );
        refused(&["-n", "1", "--rate", bad, "PING"], &says);
    }
    refused(&["-I", "--rate", "1"], "--rate cannot be used with idle mode (-I).");
    refused(
        &["-n", "1", "--rate", "32", "--rps", "64", "PING"],
        "--rate and --rps conflict: both set the target rate: give one, or the same rate",
    );
    refused(&["--rate"], "No value provided for option '--rate'.");
    assert_eq!(server.command_calls("ping"), 64, "a refused run sends nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

/// valkey-benchmark 9's `-t mget`: `MGET` of ten keys, `key:__rand_int__` each drawn apart from
/// `-r`'s keyspace after `--key-prefix`, titled `MGET (10 keys)`; `-n` of them reach the server.
fn valkeys_mget_reads_ten_keys_of_the_keyspace(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = tool.run(&["-p", &port, "-t", "mget", "-n", "100", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    let titles: Vec<String> = parse_quiet(&out.stdout).into_iter().map(|l| l.title).collect();
    assert_eq!(titles, ["MGET (10 keys)"], "{}", out.dump());
    assert_eq!(server.command_calls("mget"), 100);
    // MSET writes the five keys of -r 5; each of MGET's ten keys is one of them: every read hits.
    server.cli(&["FLUSHALL"]);
    server.cli(&["CONFIG", "RESETSTAT"]);
    let out =
        tool.run(&["-p", &port, "-t", "mset,mget", "-r", "5", "--key-prefix", "p:", "-n", "100", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("mget"), 100);
    let stat = |f: &str| server.info_field("stats", f).unwrap_or_default();
    assert_eq!((stat("keyspace_hits"), stat("keyspace_misses")), ("1000".into(), "0".into()));
    let keys = server.cli(&["KEYS", "*"]);
    let mut keys: Vec<&str> = keys.lines().collect();
    keys.sort();
    let want: Vec<String> = (0..5).map(|i| format!("p:key:{i:012}")).collect();
    assert_eq!(keys, want, "the keys of -r 5 after the prefix");
}
