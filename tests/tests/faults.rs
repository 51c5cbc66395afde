//! Faults and bad input (issue #6): nothing hangs, nothing is lost, every error is clear.
//!
//! Each check is written once as `fn(Tool)`; `backend_tests!` runs the socket faults on every
//! backend (`mio::NAME`, `smol::NAME`, `uring::NAME`: a reset, a FIN mid-reply, a deadline, a
//! Ctrl-C reaching a loop that waits on a stopped server, descriptors running out) and the rest,
//! the command line's handling, once on mio. A real `redis-server` produces every fault it can (SIGKILL,
//! SIGSTOP, WRONGTYPE, OOM, maxclients, NOAUTH); the fake server in `respbench_tests::fake`
//! produces the rest (garbage, truncation, unsolicited replies, absurd lengths, nesting bombs,
//! LOADING, MOVED). Every run has a hard timeout, so a hang fails the test instead of CI.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use respbench_tests::fake::{Action, FakeServer};
use respbench_tests::{free_port, parse_quiet, Output, RedisServer, Tool};

/// The hard limit of a run that is expected to end on its own.
const T: Duration = Duration::from_secs(20);

respbench_tests::backend_tests!(
    every: [
        server_killed_mid_run,
        truncated_reply,
        stall_mid_reply,
        server_stopped_then_sigint,
        fds_run_out_mid_run,
    ],
    mio: [
        unresolvable_host,
        server_killed_mid_run_k0,
        server_stopped_before_the_run,
        config_renamed_away,
        closes_after_an_unknown_command,
        never_answers_config,
        server_stopped_times_out,
        server_stopped_at_the_end_of_a_timed_run,
        sigterm_prints_and_writes_json,
        sigint_prints_and_writes_json,
        idle_mode_signals,
        garbage_reply,
        unsolicited_reply,
        absurd_bulk_length,
        nesting_bomb,
        endless_simple_line,
        garbage_at_startup,
        huge_bulk_in_bounded_memory,
        hello_answered_with_ok,
        hello_never_answered,
        hello_answer_never_ends,
        wrongtype_counted,
        oom_counted,
        loading_counted,
        moved_counted,
        max_clients,
        max_clients_unix,
        noauth_stops_before_the_first_test,
        wrongpass_stops_before_the_first_test,
        many_clients,
        too_few_file_descriptors,
        subscribers_count_in_the_open_file_check,
        a_value_over_the_address_space_limit_is_refused,
    ],
);

fn port_of(p: u16) -> Vec<String> {
    vec!["-h".into(), "127.0.0.1".into(), "-p".into(), p.to_string()]
}

fn with(p: u16, extra: &[&str]) -> Vec<String> {
    let mut a = port_of(p);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// A fresh path for a `--json` document.
fn json_path(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("respbench-fault-{}-{tag}-{n}.json", std::process::id()))
}

fn read_json(path: &PathBuf, out: &Output) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no JSON at {}: {e}\n{}", path.display(), out.dump()));
    let _ = std::fs::remove_file(path);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON: {e}\n{text}"))
}

fn exit_code(out: &Output, code: i32) {
    assert!(!out.timed_out, "hung\n{}", out.dump());
    assert_eq!(out.status.code(), Some(code), "{}", out.dump());
}

fn no_panic(out: &Output) {
    assert!(!out.stderr.contains("panicked"), "panic\n{}", out.dump());
}

// ---- unreachable servers ----

fn unresolvable_host(tool: Tool) {
    let out = tool.run_lenient(&["-h", "no-such-host.invalid", "-n", "10", "-q"], T);
    exit_code(&out, 1);
    assert!(out.stderr.contains("Could not connect to Redis at no-such-host.invalid:6379"), "{}", out.dump());
    let out = tool.run_lenient(&["-s", "/nonexistent/redis.sock", "-n", "10", "-q"], T);
    exit_code(&out, 1);
    assert!(
        out.stderr
            .contains("Could not connect to Redis at /nonexistent/redis.sock: No such file or directory"),
        "{}",
        out.dump()
    );
}

/// A server that accepts but never answers (stopped before the run): the startup connection's
/// `CONFIG GET` is respbench's own question, so it only warns after `--timeout`; the benchmark's
/// connections then time out too, and that ends the run with status 1.
fn server_stopped_before_the_run(tool: Tool) {
    let server = RedisServer::start();
    server.signal("STOP");
    let out = tool.run_lenient(&with(server.port(), &["-n", "10", "--timeout", "500ms", "ping"]), T);
    server.signal("CONT");
    exit_code(&out, 1);
    let msg = format!(
        "WARNING: Could not fetch server CONFIG (127.0.0.1:{}: no reply from the server within 500ms)",
        server.port()
    );
    // Not an error: the verbose report has it, stderr (not a terminal) does not.
    assert!(out.stdout.contains(&msg), "{}", out.dump());
    assert!(!out.stderr.contains("WARNING"), "{}", out.dump());
    assert!(out.stderr.contains("request timed out after 500ms (--timeout)"), "{}", out.dump());
}

// ---- servers that are not redis-server ----

/// A server whose `CONFIG` is renamed away (`rename-command CONFIG ""`, as managed services do):
/// a warning with the server's words, and the run goes on, every request made.
fn config_renamed_away(tool: Tool) {
    let server = RedisServer::start_with(&[("rename-command", "CONFIG \"\"")]);
    let json = json_path("renamed");
    let out = tool
        .run(&with(server.port(), &["-t", "get", "-n", "1000", "-q", "--json", json.to_str().unwrap()]), T);
    exit_code(&out, 0);
    let doc = read_json(&json, &out);
    assert!(
        warnings(&doc).contains("WARNING: Could not fetch server CONFIG (ERR unknown command 'CONFIG'"),
        "{doc}"
    );
    assert_eq!(doc["warnings"][0]["kind"], "notice", "{doc}");
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert_eq!(server.command_calls("get"), 1000);
    assert_eq!(parse_quiet(&out.stdout).len(), 1, "{}", out.dump());
}

/// A proxy that closes the connection on a command it does not support (here `CONFIG`) and
/// serves the rest: the startup warns, the benchmark runs.
fn closes_after_an_unknown_command(tool: Tool) {
    let server = FakeServer::start_with_config(|c| {
        if c.name() == "CONFIG" {
            Action::Close
        } else {
            Action::Reply(b"+PONG\r\n".to_vec())
        }
    });
    let json = json_path("closes");
    let out =
        tool.run(&with(server.port(), &["-n", "100", "-q", "--json", json.to_str().unwrap(), "ping"]), T);
    exit_code(&out, 0);
    let warned = warnings(&read_json(&json, &out));
    assert!(warned.contains("WARNING: Could not fetch server CONFIG ("), "{warned}");
    assert!(warned.contains("the server closed the connection"), "{warned}");
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert_eq!(server.commands(), 100);
    assert_eq!(parse_quiet(&out.stdout).len(), 1, "{}", out.dump());
}

/// A server that never answers `CONFIG` and serves the rest: the startup warns after
/// `--timeout` (else 5 s) and the benchmark runs.
fn never_answers_config(tool: Tool) {
    for (timeout, waits) in [(Some("1s"), Duration::from_secs(1)), (None, Duration::from_secs(5))] {
        let server = FakeServer::start_with_config(|c| {
            if c.name() == "CONFIG" {
                Action::Stall
            } else {
                Action::Reply(b"+PONG\r\n".to_vec())
            }
        });
        let mut args = vec!["-n", "100"];
        if let Some(t) = timeout {
            args.extend(["--timeout", t]);
        }
        args.push("ping");
        let started = Instant::now();
        let out = tool.run(&with(server.port(), &args), T);
        let took = started.elapsed();
        exit_code(&out, 0);
        assert!(took >= waits, "took {took:?}, should have waited {waits:?} for CONFIG");
        let after = timeout.unwrap_or("5s");
        // A notice, not an error: in the verbose report, not on stderr (not a terminal here).
        assert!(out.stdout.contains(&format!("no reply from the server within {after})")), "{}", out.dump());
        assert_eq!(out.stderr, "", "{}", out.dump());
        assert_eq!(server.commands(), 100);
    }
}

/// With `-k 0` the kill also refuses the reconnects: the run still ends at once.
fn server_killed_mid_run_k0(tool: Tool) {
    let server = RedisServer::start();
    let run = tool.spawn(&with(server.port(), &["-k", "0", "-t", "get", "-n", "1000000000", "-q"]));
    server.wait_for_calls("get", 1000);
    server.signal("KILL");
    // A billion requests: only the kill can end the run before the hard limit.
    let out = run.wait_lenient(T);
    exit_code(&out, 1);
    no_panic(&out);
    // Reset mid-request, closed between requests, or refused on reconnect: whichever came first.
    assert!(out.stderr.contains("connections failed: "), "{}", out.dump());
    assert!(!out.stderr.contains("os error"), "{}", out.dump());
    assert_eq!(parse_quiet(&out.stdout).len(), 1, "{}", out.dump());
}

fn server_killed_mid_run(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("killed");
    let run = tool.spawn(&with(
        server.port(),
        &["-t", "get", "-n", "1000000000", "-q", "--json", json.to_str().unwrap()],
    ));
    server.wait_for_calls("get", 1000);
    server.signal("KILL");
    let out = run.wait_lenient(T);
    exit_code(&out, 1);
    no_panic(&out);
    // The kill resets the sockets (or closes them, when no request was in flight).
    assert!(
        out.stderr.contains("connections failed: read from 127.0.0.1:")
            || out.stderr.contains("connections failed: server closed the connection with"),
        "{}",
        out.dump()
    );
    assert!(!out.stderr.contains("os error"), "{}", out.dump());
    // What completed is printed and written.
    let lines = parse_quiet(&out.stdout);
    assert_eq!(lines.len(), 1, "{}", out.dump());
    let doc = read_json(&json, &out);
    assert_eq!(doc["interrupted"], true);
    assert!(doc["tests"][0]["requests"].as_u64().unwrap() > 0, "{doc}");
}

// ---- stalls ----

fn server_stopped_times_out(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("stopped");
    let run = tool.spawn(&with(
        server.port(),
        &["-t", "get", "-n", "1000000000", "-q", "--timeout", "1s", "--json", json.to_str().unwrap()],
    ));
    server.wait_for_calls("get", 1000);
    server.signal("STOP");
    let out = run.wait_lenient(T);
    server.signal("CONT");
    // The timeout itself is exact on virtual time (driver/tests/sim.rs
    // a_stopped_server_trips_the_request_timeout_exactly); here that it ends the run.
    exit_code(&out, 1);
    assert!(out.stderr.contains("request timed out after 1s"), "{}", out.dump());
    assert_eq!(parse_quiet(&out.stdout).len(), 1, "{}", out.dump());
    let doc = read_json(&json, &out);
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["config"]["timeout_ms"], 1000.0);
}

fn server_stopped_then_sigint(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("stopint");
    let run = tool.spawn(&with(
        server.port(),
        &["-t", "get", "-n", "1000000000", "-q", "--drain-grace", "200ms", "--json", json.to_str().unwrap()],
    ));
    server.wait_for_calls("get", 1000);
    server.signal("STOP");
    // Once the server is stopped its count stands still; the loops wait for replies that do
    // not come, and only the stop (the signal, then the grace) can wake them. On a busy machine
    // the client may not have sent its next requests yet (then nothing is in flight, and the
    // stop finds nothing to abandon): it is interrupted once the kernel holds requests unread
    // at the stopped server.
    respbench_tests::wait_until("requests queued at the stopped server", T, || server.queued_bytes() > 0);
    let sent = Instant::now();
    run.interrupt();
    let out = run.wait_lenient(T);
    server.signal("CONT");
    // Nothing can drain from a stopped server: the run waits out the grace and abandons what is
    // in flight (exact on virtual time: driver/tests/sim.rs
    // a_stop_asked_for_mid_run_abandons_exactly_after_the_grace); here, not before the grace.
    assert!(sent.elapsed() >= Duration::from_millis(200), "ended {:?} after SIGINT", sent.elapsed());
    exit_code(&out, 130);
    assert_eq!(parse_quiet(&out.stdout).len(), 1, "{}", out.dump());
    let doc = read_json(&json, &out);
    assert!(
        warnings(&doc).contains("requests were still unanswered 200ms after the stop and were abandoned"),
        "{doc}"
    );
    assert_eq!(doc["interrupted"], true);
}

/// `--duration 2s`, closed and open loop, and the server stops once the run is under way: the
/// test's stop comes at 2 s, nothing can drain, and `--drain-grace` (200ms) later the requests
/// in flight are abandoned: the
/// run ends by itself, says how many, and reports what completed (exact on virtual time:
/// driver/tests/sim.rs a_timed_run_whose_server_stops_abandons_at_stop_plus_grace).
fn server_stopped_at_the_end_of_a_timed_run(tool: Tool) {
    for open_loop in [false, true] {
        let server = RedisServer::start();
        let json = json_path("abandoned");
        let mut args = vec![
            "-t",
            "get",
            "-c",
            "4",
            "-P",
            "2",
            // A window is full when the server stops, so exactly -c × -P are abandoned (a batch
            // may be half answered then).
            "--pipeline-mode",
            "window",
            "--duration",
            "2s",
            "--drain-grace",
            "200ms",
            "-q",
            "--json",
        ];
        args.push(json.to_str().unwrap());
        if open_loop {
            args.extend(["--rps", "2000"]);
        }
        let started = Instant::now();
        let run = tool.spawn(&with(server.port(), &args));
        // Every connection has sent (the open loop sends 2000 a second over 4 connections).
        server.wait_for_calls("get", 100);
        server.signal("STOP");
        let out = run.wait_lenient(T);
        server.signal("CONT");
        // Not before the duration and the grace.
        assert!(started.elapsed() >= Duration::from_millis(2200), "took {:?}", started.elapsed());
        // Requests the test did not finish: it says so (below) and exits 1.
        exit_code(&out, 1);
        assert!(
            out.stderr
                .contains("GET: 8 requests were still unanswered 200ms after the stop and were abandoned"),
            "{}",
            out.dump()
        );
        assert!(out.stdout.contains("GET"), "{}", out.dump());
        // The JSON says so: the slowest requests are not silently missing from it.
        respbench_tests::check_json_independently(&json);
        let doc = read_json(&json, &out);
        let warnings = doc["tests"][0]["warnings"].as_array().unwrap();
        let w = warnings.iter().find(|w| w["kind"] == "abandoned").unwrap();
        assert_eq!(w["figures"]["abandoned_requests"], 8.0, "{doc}");
        assert!(
            w["text"]
                .as_str()
                .unwrap()
                .contains("GET: 8 requests were still unanswered 200ms after the stop and were abandoned"),
            "{doc}"
        );
        // The abandoned requests make the run an error (exit 1), so its one line is on stderr
        // (above), and the finding is in the document too.
        assert_eq!(doc["tests"][0]["abandoned_requests"], 8, "{doc}");
        // The test lasted to the end of the grace, not to its last reply before the stall: no
        // reply came in the grace, so its end is at least that long after the last one.
        let t = &doc["tests"][0];
        let (end, last) = (t["end_us"].as_u64().unwrap(), t["last_reply_us"].as_u64().unwrap());
        assert!(end >= last + 200_000, "{doc}");
        let duration = t["duration_s"].as_f64().unwrap();
        assert!(duration > 2.0, "{doc}");
        let rps = t["requests"].as_f64().unwrap() / duration;
        assert!((t["rps"].as_f64().unwrap() - rps).abs() < 0.01, "{doc}");
        let completed = t["requests"].as_u64().unwrap();
        if open_loop {
            // Every arrival accounted for: those due while the server was stopped were never
            // sent (the window of 2 per connection was full); 2 s at 2000/s is 4000 at most.
            let a = &t["arrivals"];
            let (due, unsent) = (a["due"].as_u64().unwrap(), a["unsent"].as_u64().unwrap());
            assert_eq!(due, completed + a["lost"].as_u64().unwrap() + 8 + unsent, "{doc}");
            assert!(due <= 4000 && unsent > 0, "{doc}");
            assert_eq!(t["unsent_requests"], unsent, "{doc}");
            assert!(
                out.stderr.contains(&format!("; {unsent} requests due were never sent")),
                "{}",
                out.dump()
            );
            // In the latencies as lower bounds: the stall to the end shows in the maximum.
            assert_eq!(t["latency_lower_bounds"], 8 + unsent, "{doc}");
            assert!(t["latency_ms"]["max"].as_f64().unwrap() >= 200.0, "{doc}");
        }
        // When replies stopped: some time before the stop, so well over the grace of the 2.2 s.
        let silent =
            out.stderr.split("(no reply for the last ").nth(1).and_then(|r| r.split(" s of ").next());
        let silent: f64 = silent.and_then(|x| x.parse().ok()).unwrap_or_else(|| panic!("{}", out.dump()));
        assert!(silent >= 0.2, "{}", out.dump());
        // The server's own count, once it runs again: what was answered, and the 8 abandoned
        // in its socket buffers; nothing counted as never sent reached it.
        server.wait_for_calls("get", completed + 8);
        assert_eq!(server.command_calls("get"), completed + 8, "{doc}");
    }
}

// ---- signals ----

fn signal_prints_and_writes_json(tool: Tool, signal: &str) {
    let server = RedisServer::start();
    let json = json_path(signal);
    let run = tool.spawn(&with(
        server.port(),
        &["-l", "-t", "set,get", "-n", "2000", "-q", "--json", json.to_str().unwrap()],
    ));
    // -l runs forever: the signal ends it (a hang fails at the hard limit).
    server.wait_for_calls("get", 2000);
    run.signal(signal);
    let out = run.wait_lenient(T);
    exit_code(&out, interrupted(signal));
    assert!(!parse_quiet(&out.stdout).is_empty(), "{}", out.dump());
    let doc = read_json(&json, &out);
    assert_eq!(doc["interrupted"], true);
    assert!(!doc["tests"].as_array().unwrap().is_empty(), "{doc}");
}

/// The status of a run that `signal` interrupted: 128 + its number, as a shell says of a
/// process that signal ended.
fn interrupted(signal: &str) -> i32 {
    match signal {
        "TERM" => 143,
        _ => 130,
    }
}

/// `-I` waits for a signal; SIGINT and SIGTERM end it with status 130 and 143 like every other
/// run.
fn idle_mode_signals(tool: Tool) {
    let server = RedisServer::start();
    for signal in ["INT", "TERM"] {
        let run = tool.spawn(&with(server.port(), &["-I", "-c", "5"]));
        run.wait_for_stdout("clients: 5");
        run.signal(signal);
        let out = run.wait_lenient(T);
        exit_code(&out, interrupted(signal));
        assert!(out.stdout.contains("clients: 5"), "SIG{signal}\n{}", out.dump());
    }
    // A server that goes away ends idle mode too, with the reason and status 1.
    let run = tool.spawn(&with(server.port(), &["-I", "-c", "5"]));
    run.wait_for_stdout("clients: 5");
    server.signal("KILL");
    let out = run.wait_lenient(T);
    exit_code(&out, 1);
    assert!(out.stderr.contains("5 connections failed: server closed the connection"), "{}", out.dump());
}

fn sigterm_prints_and_writes_json(tool: Tool) {
    signal_prints_and_writes_json(tool, "TERM");
}

fn sigint_prints_and_writes_json(tool: Tool) {
    signal_prints_and_writes_json(tool, "INT");
}

// ---- protocol faults ----

/// Runs `-c 1 -n 5 PING` against `server` and expects a protocol failure naming `message`.
fn expect_conn_failure(tool: &Tool, server: &FakeServer, message: &str) -> Output {
    let out = tool.run_lenient(&with(server.port(), &["-c", "1", "-n", "5", "-q", "ping"]), T);
    exit_code(&out, 1);
    no_panic(&out);
    assert!(out.stderr.contains(message), "expected {message:?}\n{}", out.dump());
    out
}

fn garbage_reply(tool: Tool) {
    let server = FakeServer::replying(b"hello\r\n");
    expect_conn_failure(&tool, &server, "protocol error at byte 0: unknown reply type byte 0x68 ('h')");
}

fn truncated_reply(tool: Tool) {
    // The last bytes and the FIN usually arrive in one epoll edge: mio once read the bytes,
    // saw a short read and waited forever for an edge that never came. Several runs, since the
    // timing decides whether they share an edge.
    let server = FakeServer::start(|_| Action::ReplyAndClose(b"$10\r\nabc".to_vec()));
    for _ in 0..5 {
        expect_conn_failure(&tool, &server, "server closed the connection with 1 requests unanswered");
    }
}

fn unsolicited_reply(tool: Tool) {
    let server = FakeServer::replying(b"+PONG\r\n+PONG\r\n");
    expect_conn_failure(&tool, &server, "protocol error at byte 14: a reply arrived with no request waiting");
}

fn absurd_bulk_length(tool: Tool) {
    let server = FakeServer::replying(b"$99999999999999999\r\n");
    expect_conn_failure(&tool, &server, "protocol error at byte 1: bulk length 99999999999999999 exceeds");
}

fn nesting_bomb(tool: Tool) {
    let server = FakeServer::replying(&b"*1\r\n".repeat(100_000));
    // The 65th header starts at byte 64 * 4.
    expect_conn_failure(
        &tool,
        &server,
        "protocol error at byte 256: aggregates nested deeper than 64 levels",
    );
}

/// A simple string, then an error, one byte longer than respbench's limit and never ended (no
/// CRLF; the server then keeps the connection open and says nothing more): without `--timeout`
/// the connection fails at the byte past the limit, with the peers' `Error:` line, rather than
/// waiting forever. The fixture sends exactly limit + 1 bytes of the line, so a client without
/// the limit waits for the rest until the harness's hard timeout fails the test.
fn endless_simple_line(tool: Tool) {
    use respbench_core::resp::MAX_SIMPLE_LEN;
    for ty in [b'+', b'-'] {
        let mut line = vec![ty];
        line.resize(1 + MAX_SIMPLE_LEN + 1, b'x');
        let server = FakeServer::replying(&line);
        let at = 1 + MAX_SIMPLE_LEN;
        let why = format!(
            "protocol error at byte {at}: a simple string or error reply ran past {MAX_SIMPLE_LEN} bytes \
             without ending (no CRLF): the server sent a line that does not end, and respbench closed the \
             connection"
        );
        let out = expect_conn_failure(&tool, &server, &format!("ping: 1 connection failed: {why}"));
        assert!(out.stderr.contains(&format!("\nError: {why}")), "{}", out.dump());
    }
}

/// A reply stalled halfway: `--timeout` ends the run; the request that got half a reply counts
/// as unanswered.
fn stall_mid_reply(tool: Tool) {
    let server = FakeServer::start(|c| {
        if c.global < 3 {
            Action::Reply(b"+PONG\r\n".to_vec())
        } else {
            Action::Reply(b"$5\r\nPO".to_vec())
        }
    });
    let out = tool
        .run_lenient(&with(server.port(), &["-c", "1", "-n", "10", "-q", "--timeout", "300ms", "ping"]), T);
    exit_code(&out, 1);
    assert!(
        out.stderr.contains("ping: 1 connection failed: request timed out after 300ms (--timeout)"),
        "{}",
        out.dump()
    );
}

/// A fake server whose `HELLO` does `hello` and that answers everything else `+OK`, and a run
/// of `-3` against it.
fn run_hello(tool: &Tool, hello: Action, extra: &[&str]) -> Output {
    let sets = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = std::sync::Arc::clone(&sets);
    let server = FakeServer::start(move |c| match c.name().as_str() {
        "HELLO" => hello.clone(),
        name => {
            if name == "SET" {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Action::Reply(b"+OK\r\n".to_vec())
        }
    });
    let args = with(server.port(), &[&["-3", "-c", "2", "-n", "100", "-t", "set", "-q"][..], extra].concat());
    let out = tool.run_lenient(&args, T);
    let sets = sets.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(sets, 0, "no request before the handshake's answer\n{}", out.dump());
    no_panic(&out);
    exit_code(&out, 1);
    out
}

/// `HELLO 3` answered `+OK` (a server or proxy that does not switch to RESP3) is a failed
/// handshake naming what came back, not a run in RESP3 (#56 item 16).
fn hello_answered_with_ok(tool: Tool) {
    let out = run_hello(&tool, Action::Reply(b"+OK\r\n".to_vec()), &[]);
    let want =
        "SET: 2 connections failed: HELLO was answered with a simple string (+), not a map (RESP3) or an \
                array of field/value pairs: no switch to RESP3 (-3)";
    assert!(out.stderr.contains(want), "{}", out.dump());
}

/// `HELLO 3` never answered, without `--timeout`: each connection fails 5 s after its connect
/// (it waited until killed).
fn hello_never_answered(tool: Tool) {
    let out = run_hello(&tool, Action::Stall, &[]);
    let want =
        "SET: 2 connections failed: connection handshake timed out after 5s (--timeout; 5s without it)";
    assert!(out.stderr.contains(want), "{}", out.dump());
}

/// `HELLO 3` answered with an array of a billion elements that keeps coming (64 MB of it, then
/// a stall): read as it streams, and ended by `--timeout`.
fn hello_answer_never_ends(tool: Tool) {
    let mut answer = b"*1000000000\r\n".to_vec();
    answer.extend_from_slice(&b":1\r\n".repeat(16 * 1024 * 1024));
    let out = run_hello(&tool, Action::Reply(answer), &["--timeout", "2s"]);
    let want =
        "SET: 2 connections failed: connection handshake timed out after 2s (--timeout; 5s without it)";
    assert!(out.stderr.contains(want), "{}", out.dump());
}

/// A legal but huge bulk reply (400 MB announced, 64 MB sent, then a stall) is skipped as it
/// streams: the client's memory stays small. Its peak is read once the server has written the
/// 64 MB; Ctrl-C then ends the wait for the rest, abandoning the request after the grace.
fn huge_bulk_in_bounded_memory(tool: Tool) {
    let mut reply = b"$400000000\r\n".to_vec();
    reply.resize(reply.len() + 64 * 1024 * 1024, b'x');
    let size = reply.len() as u64;
    let server = FakeServer::start(move |_| Action::Reply(reply.clone()));
    let run = tool.spawn(&with(server.port(), &["-c", "1", "-n", "1", "--drain-grace", "100ms", "ping"]));
    respbench_tests::wait_until("the 64 MB written", T, || server.written() >= size);
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", run.pid())).expect("reading /proc/PID/status");
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in\n{status}"));
    run.interrupt();
    let out = run.wait_lenient(T);
    exit_code(&out, 130);
    // In the test's verbose block (stderr is not a terminal here).
    assert!(
        out.stdout.contains("  WARNING: ping: 1 requests were still unanswered 100ms after the stop"),
        "{}",
        out.dump()
    );
    assert!(peak_kb < 32 * 1024, "peak RSS {peak_kb} kB while skipping a 64 MB payload");
}

fn garbage_at_startup(tool: Tool) {
    // Garbage to the startup connection's CONFIG GET is reported before any test runs.
    let server = FakeServer::start(|_| Action::Reply(b"?".to_vec()));
    let out = tool.run_lenient(&with(server.port(), &["-a", "pw", "-n", "5", "-q", "ping"]), T);
    exit_code(&out, 1);
    no_panic(&out);
    assert!(out.stderr.contains("protocol error at byte 0"), "{}", out.dump());
    assert!(parse_quiet(&out.stdout).is_empty(), "{}", out.dump());
}

// ---- error replies ----

/// The `errors: N (KIND: N)` summary of the one `-q` test in `out`.
fn error_summary(out: &Output) -> String {
    out.stdout
        .lines()
        .find_map(|l| l.rsplit('\r').next().filter(|l| l.contains("errors: ")))
        .unwrap_or_else(|| panic!("no error summary\n{}", out.dump()))
        .to_string()
}

fn wrongtype_counted(tool: Tool) {
    let server = RedisServer::start();
    server.cli(&["SET", "mylist", "string"]);
    let out = tool.run(&with(server.port(), &["-t", "lpush", "-n", "500", "-q", "-e"]), T);
    // Counted, every result printed, and then the peers' status and words (once: -e said it).
    exit_code(&out, 1);
    assert!(error_summary(&out).ends_with("LPUSH: errors: 500 (WRONGTYPE: 500)"), "{}", out.dump());
    assert!(
        out.stderr.contains("Error from server: WRONGTYPE Operation against a key holding the wrong kind"),
        "{}",
        out.dump()
    );
    assert_eq!(out.stderr.matches("Error from server").count(), 1, "{}", out.dump());
}

fn oom_counted(tool: Tool) {
    let server = RedisServer::start_with(&[("maxmemory", "1"), ("maxmemory-policy", "noeviction")]);
    let out = tool.run(&with(server.port(), &["-t", "set", "-n", "500", "-q"]), T);
    exit_code(&out, 1);
    assert!(error_summary(&out).ends_with("SET: errors: 500 (OOM: 500)"), "{}", out.dump());
    assert!(out.stderr.starts_with("Error from server: OOM command not allowed"), "{}", out.dump());
}

fn loading_counted(tool: Tool) {
    let server = FakeServer::replying(b"-LOADING Redis is loading the dataset in memory\r\n");
    let out = tool.run(&with(server.port(), &["-n", "300", "-q", "ping"]), T);
    exit_code(&out, 1);
    assert!(error_summary(&out).ends_with("errors: 300 (LOADING: 300)"), "{}", out.dump());
    assert!(out.stderr.contains("Error from server: LOADING Redis is loading"), "{}", out.dump());
}

fn moved_counted(tool: Tool) {
    let server = FakeServer::replying(b"-MOVED 3999 127.0.0.1:6381\r\n");
    let out = tool.run(&with(server.port(), &["-n", "300", "-q", "ping"]), T);
    exit_code(&out, 1);
    assert!(error_summary(&out).ends_with("errors: 300 (MOVED: 300)"), "{}", out.dump());
    assert!(out.stderr.contains("Error from server: MOVED 3999 127.0.0.1:6381"), "{}", out.dump());
}

fn max_clients(tool: Tool) {
    let server = RedisServer::start_with(&[("maxclients", "4")]);
    let out = tool.run_lenient(&with(server.port(), &["-c", "10", "-t", "get", "-n", "2000", "-q"]), T);
    exit_code(&out, 1);
    no_panic(&out);
    assert!(
        out.stderr.contains(
            "connections failed: the server refused the connection: ERR max number of clients reached"
        ),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("\nError from server: ERR max number of clients reached"), "{}", out.dump());
}

/// The same over the server's Unix socket: the refusal in the server's words, after `Error`.
fn max_clients_unix(tool: Tool) {
    let server = RedisServer::start_with(&[("maxclients", "4")]);
    let socket = server.socket_path().to_str().expect("a UTF-8 path").to_string();
    let out = tool.run_lenient(&["-s", &socket, "-c", "10", "-t", "get", "-n", "2000", "-q"], T);
    exit_code(&out, 1);
    no_panic(&out);
    // Over a Unix socket a write after the server's close fails at once (EPIPE), where TCP's
    // first write still goes: on a busy machine a refused connection can meet its close in a
    // write before its refusal is read, and then says so (`write to …: Broken pipe`), the
    // refusal's words unread. Either way each failure is said, and so is an `Error` line.
    let refused = "connections failed: the server refused the connection: ERR max number of clients reached";
    let cut = "connections failed: write to ";
    assert!(out.stderr.contains(refused) || out.stderr.contains(cut), "{}", out.dump());
    let words = "\nError from server: ERR max number of clients reached";
    assert!(out.stderr.contains(words) || out.stderr.contains("\nError: write to "), "{}", out.dump());
}

fn noauth_stops_before_the_first_test(tool: Tool) {
    let server = RedisServer::start_with(&[("requirepass", "secret")]);
    let out = tool.run(&with(server.port(), &["-t", "get", "-n", "100", "-q"]), T);
    exit_code(&out, 1);
    assert!(out.stderr.contains("NOAUTH"), "{}", out.dump());
    assert!(parse_quiet(&out.stdout).is_empty(), "{}", out.dump());
}

fn wrongpass_stops_before_the_first_test(tool: Tool) {
    let server = RedisServer::start_with(&[("requirepass", "secret")]);
    let out = tool.run(&with(server.port(), &["-a", "wrong", "-t", "get", "-n", "100", "-q"]), T);
    exit_code(&out, 1);
    assert!(out.stderr.contains("AUTH failed: WRONGPASS"), "{}", out.dump());
    assert!(parse_quiet(&out.stdout).is_empty(), "{}", out.dump());
    assert_eq!(server.command_calls("get"), 0);
}

// ---- resource limits ----

/// Runs the tool under `bash -c 'ulimit -n LIMIT; exec …'`.
fn run_with_fd_limit(tool: &Tool, soft: u32, hard: Option<u32>, args: &[String]) -> Output {
    run_in_shell(tool, &fd_limit(soft, hard), args)
}

/// `ulimit -n` sets both limits; `-Sn` only the soft one.
fn fd_limit(soft: u32, hard: Option<u32>) -> String {
    match hard {
        Some(h) => format!("ulimit -n {h} && ulimit -Sn {soft}"),
        None => format!("ulimit -Sn {soft}"),
    }
}

/// Runs the tool under `bash -c 'PRELUDE && exec TOOL ARGS'`.
fn run_in_shell(tool: &Tool, prelude: &str, args: &[String]) -> Output {
    let script = format!("{prelude} && exec \"$0\" \"$@\"");
    let sh = Tool {
        kind: tool.kind,
        path: PathBuf::from("/bin/bash"),
        pre_args: ["-c".to_string(), script, tool.path.display().to_string()]
            .into_iter()
            .chain(tool.pre_args.iter().cloned())
            .collect(),
        env: tool.env.clone(),
        pre_exec: tool.pre_exec,
    };
    sh.run_lenient(args, T)
}

fn many_clients(tool: Tool) {
    // A soft limit below what -c needs is raised up to the hard limit.
    let server = RedisServer::start_with(&[("maxclients", "3000")]);
    let out = run_with_fd_limit(
        &tool,
        256,
        None,
        &with(server.port(), &["-c", "2000", "-t", "ping_mbulk", "-n", "20000", "-q"]),
    );
    exit_code(&out, 0);
    assert_eq!(parse_quiet(&out.stdout).len(), 1, "{}", out.dump());
}

fn fds_run_out_mid_run(tool: Tool) {
    // The limit fits -c 200 with the usual reserve, but 150 descriptors inherited from the shell
    // eat the reserve: the last connects of the test fail with EMFILE.
    let server = RedisServer::start();
    let prelude = format!(
        "{} && for i in $(seq 10 159); do eval \"exec $i</dev/null\"; done",
        fd_limit(300, Some(300))
    );
    let out =
        run_in_shell(&tool, &prelude, &with(server.port(), &["-c", "200", "-n", "20000", "-t", "get", "-q"]));
    exit_code(&out, 1);
    no_panic(&out);
    assert!(
        out.stderr.contains("Too many open files (the open-file limit is too low for this many connections: raise it with ulimit -n)"),
        "{}",
        out.dump()
    );
    // What completed is printed.
    assert_eq!(parse_quiet(&out.stdout).len(), 1, "{}", out.dump());
}

fn too_few_file_descriptors(tool: Tool) {
    let port = free_port();
    let out = run_with_fd_limit(&tool, 256, Some(256), &with(port, &["-c", "1000", "-n", "10", "-q"]));
    exit_code(&out, 1);
    assert!(
        out.stderr.contains("-c 1000 needs about 1065 open files, but the limit is 256 (hard limit 256)"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("enough for 191 connections"), "{}", out.dump());
    // Event loops hold a descriptor each, and count.
    let out = run_with_fd_limit(
        &tool,
        256,
        Some(256),
        &with(port, &["-c", "150", "--threads", "50", "-n", "10", "-q"]),
    );
    exit_code(&out, 1);
    assert!(out.stderr.contains("-c 150 needs about 264 open files"), "{}", out.dump());
}

/// `-t pubsub --subscribers 2000` under `ulimit -n 1024`: the subscribers' sockets were left out
/// of the check, so the run connected until the limit, seconds in (7.8 s at 2.2 GB). Refused
/// before connecting, counting them.
fn subscribers_count_in_the_open_file_check(tool: Tool) {
    let server = RedisServer::start();
    let connections =
        || -> u64 { server.info_field("stats", "total_connections_received").unwrap().parse().unwrap() };
    let before = connections();
    let out = run_with_fd_limit(
        &tool,
        1024,
        Some(1024),
        &with(server.port(), &["-t", "pubsub", "--subscribers", "2000", "-c", "1", "-n", "10", "-q"]),
    );
    exit_code(&out, 1);
    assert!(
        out.stderr.contains(
            "-c 1 and --subscribers 2000 (a socket each) need about 2066 open files, but the limit is 1024 \
             (hard limit 1024), enough for 959 connections and subscribers together"
        ),
        "{}",
        out.dump()
    );
    // The INFO read above is one connection.
    assert!(connections() - before <= 1, "{}", out.dump());
}

/// Under `ulimit -v` (`RLIMIT_AS`) of 200 MiB, `-t set -d 300000000` cannot make its value: the
/// check read only `MemAvailable`, so the run went on and aborted on the failed allocation
/// (status 134, "memory allocation of 300000000 bytes failed"). Refused with status 1, naming
/// the limit met, before connecting.
fn a_value_over_the_address_space_limit_is_refused(tool: Tool) {
    let server = RedisServer::start();
    let args = with(server.port(), &["-t", "set", "-d", "300000000", "-c", "1", "-n", "1"]);
    let out = run_in_shell(&tool, "ulimit -v 204800", &args);
    exit_code(&out, 1);
    assert!(out.stderr.contains("needs about 286.2 MiB of memory"), "{}", out.dump());
    assert!(out.stderr.contains("(RLIMIT_AS (ulimit -v) of 200.0 MiB less the"), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 0, "{}", out.dump());
}

// ---- bad options ----

/// Every numeric option with 0, negative, huge and non-numeric values: exit 1 with a message
/// naming the option, or (where redis-benchmark accepts the value) a run; never a panic.
#[test]
fn bad_numeric_options() {
    let tool = respbench_tests::respbench_on("mio");
    let port = free_port().to_string();
    // (option, value): each must be refused with status 1 and the option named.
    let refused: &[(&str, &str)] = &[
        ("-c", "0"),
        ("-c", "-1"),
        ("-c", "99999999999999999999"),
        ("-c", "x"),
        ("-n", "-1"),
        ("-n", "99999999999999999999"),
        ("-n", "x"),
        ("-d", "99999999999999999999"),
        ("-d", "x"),
        ("-p", "-1"),
        ("-p", "65536"),
        ("-p", "x"),
        ("--dbnum", "-1"),
        ("--dbnum", "99999999999"),
        ("--dbnum", "x"),
        ("--threads", "-1"),
        ("--threads", "501"),
        ("--threads", "x"),
        ("-k", "-1"),
        ("-k", "2"),
        ("-k", "x"),
        ("-r", "-1"),
        ("-r", "x"),
        ("-P", "x"),
        ("-P", "99999999999999999999"),
        ("--precision", "0"),
        ("--precision", "6"),
        ("--precision", "-1"),
        ("--precision", "x"),
        ("--seed", "-1"),
        ("--seed", "x"),
        ("--timeout", "0"),
        ("--timeout", "-1"),
        ("--timeout", "x"),
        ("--timeout", "5h"),
        ("--timeout", "99999999999999999999"),
    ];
    for (opt, val) in refused {
        let out = tool.run(&["-p", port.as_str(), opt, val, "-n", "1", "-q"], T);
        assert_eq!(out.status.code(), Some(1), "{opt} {val}\n{}", out.dump());
        assert!(
            out.stderr.contains(opt),
            "{opt} {val}: the message does not name the option\n{}",
            out.dump()
        );
        no_panic(&out);
    }
    // Unknown options, missing values, conflicting options.
    for a in [&["--bogus"][..], &["-c"], &["--timeout"], &["-Z", "1"], &["-I", "--json", "idle.json"]] {
        let out = tool.run(a, T);
        assert_eq!(out.status.code(), Some(1), "{a:?}\n{}", out.dump());
        assert!(out.stderr.contains(a[0]), "{a:?}: the message does not name the option\n{}", out.dump());
        no_panic(&out);
    }
    assert!(!std::path::Path::new("idle.json").exists());
}

/// Values redis-benchmark accepts (and clamps) run: `-d 0`/`-d -5` (1 byte), `-P 0`/`-P -1`
/// (no pipeline), `-n 0` (nothing sent), `-r 0`.
#[test]
fn clamped_numeric_options_run() {
    let server = RedisServer::start();
    let tool = respbench_tests::respbench_on("mio");
    for extra in [["-d", "0"], ["-d", "-5"], ["-P", "0"], ["-P", "-1"], ["-n", "0"], ["-r", "0"]] {
        let n: &[&str] = if extra[0] == "-n" { &[] } else { &["-n", "100"] };
        let mut a = with(server.port(), &["-t", "set", "-q"]);
        a.extend(extra.iter().chain(n.iter()).map(|s| s.to_string()));
        let out = tool.run(&a, T);
        assert_eq!(out.status.code(), Some(0), "{extra:?}\n{}", out.dump());
    }
}

/// A `--json` document's warnings, the session's and each test's, as JSON text.
fn warnings(doc: &serde_json::Value) -> String {
    let tests = doc["tests"].as_array().into_iter().flatten();
    tests.fold(doc["warnings"].to_string(), |all, t| all + &t["warnings"].to_string())
}
