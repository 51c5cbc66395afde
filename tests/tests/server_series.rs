//! The server's side second by second (#51), against real servers: `tests[].server_series`' command
//! deltas held against what the server counted (`INFO commandstats`, read by the test), a local
//! server's I/O threads named with their CPU (held against `/proc`), a `BGSAVE` mid-run shown as
//! a fork in its second, and a stopped server (SIGSTOP) shown as missing samples, not zeros.

use std::time::Duration;

use respbench_tests::{check_json_independently, json_path, take_document, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

respbench_tests::backend_tests!(
    every: [a_five_second_get_adds_up_to_the_servers_count],
    mio: [
        a_bgsave_mid_run_is_a_fork_in_its_second,
        a_stopped_server_gives_missing_samples_not_zeros,
        an_event_window_names_the_servers_seconds,
        each_capacity_step_has_the_servers_seconds,
    ],
);

/// `calls` of `cmdstat_<command>`, read by the test itself.
fn calls(server: &RedisServer, command: &str) -> u64 {
    server.command_calls(command)
}

/// Runs `tool` against `server` with `args` and `--json`; gives the first test's entry, stdout
/// and stderr.
fn run(tool: &Tool, server: &RedisServer, args: &[&str]) -> (Value, String, String) {
    run_while(tool, server, args, || {})
}

/// [`run`], doing `meanwhile` while it runs.
fn run_while(
    tool: &Tool,
    server: &RedisServer,
    args: &[&str],
    meanwhile: impl FnOnce(),
) -> (Value, String, String) {
    let json = json_path("series51", "run");
    let port = server.port().to_string();
    let mut all = vec!["-p", &port, "--json", json.to_str().unwrap()];
    all.extend(args);
    let running = tool.spawn(&all);
    meanwhile();
    let out = running.wait(T);
    assert!(out.status.success(), "{}", out.dump());
    check_json_independently(&json);
    let doc: Value = serde_json::from_str(&take_document(&json)).unwrap();
    (doc["tests"][0].clone(), out.stdout, out.stderr)
}

fn samples(t: &Value) -> &Vec<Value> {
    t["server_series"].as_array().unwrap_or_else(|| panic!("no server_series: {t}"))
}

/// The sum of `field` over the samples.
fn sum(t: &Value, field: &str) -> u64 {
    samples(t).iter().filter_map(|s| s[field].as_u64()).sum()
}

/// A thread's CPU so far, nanoseconds (`/proc/PID/task/TID/schedstat`), by name.
fn thread_ns(pid: u32, name: &str) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            let s = std::fs::read_to_string(e.path().join("schedstat")).unwrap();
            total += s.split_whitespace().next().unwrap().parse::<u64>().unwrap();
        }
    }
    total
}

/// A 5-second GET test against a server with two I/O threads: at least 4 seconds sampled, the
/// command deltas add up to the server's GET calls plus the sampler's own INFO calls (the last
/// one's counted after its reading) within 1%, the start and end edges are there, the server's
/// threads are named with CPU that `/proc` agrees with, and the verdict names the busiest.
fn a_five_second_get_adds_up_to_the_servers_count(tool: Tool) {
    let server = RedisServer::start_with(&[("io-threads", "2"), ("io-threads-do-reads", "yes")]);
    server.cli(&["SET", "k", "v"]);
    server.cli(&["CONFIG", "RESETSTAT"]);
    let io_before = thread_ns(server.pid(), "io_thd_1");
    let (t, _, stderr) = run(&tool, &server, &["-t", "get", "-r", "1", "--duration", "5", "-q"]);
    let io_after = thread_ns(server.pid(), "io_thd_1");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let gets = calls(&server, "get");
    assert_eq!(gets, t["requests"].as_u64().unwrap(), "{t}");
    let s = samples(&t);
    let node = format!("127.0.0.1:{}", server.port());
    assert!(s.iter().all(|x| x["node"] == node.as_str()), "{s:?}");
    assert_eq!(s.first().unwrap()["edge"], "start", "{s:?}");
    assert_eq!(s.last().unwrap()["edge"], "end", "{s:?}");
    let seconds: std::collections::BTreeSet<u64> = s
        .iter()
        .filter(|x| x["commands"].as_u64().is_some_and(|c| c > 0))
        .map(|x| x["second"].as_u64().unwrap())
        .collect();
    assert!(seconds.len() >= 4, "{seconds:?}: {s:?}");
    let sampling = &t["server_sampling"];
    let info = sampling["info_calls"].as_u64().unwrap();
    assert!(info >= 6, "{sampling}");
    assert!(sampling["bytes_read"].as_u64().unwrap() > 1000 * info, "{sampling}");
    assert!(sampling["cpu_s"].as_f64().unwrap() >= 0.0, "{sampling}");
    // The sampler's INFO calls are in the server's count: the end's comes after its reading.
    let commands = sum(&t, "commands");
    let expected = gets + info - 1;
    assert!(commands <= gets + info, "{commands} > {gets} GETs + {info} INFO");
    assert!((commands as f64 - expected as f64).abs() <= expected as f64 * 0.01, "{commands} vs {expected}");
    // Each second's rate is its commands over its span.
    for x in s.iter().filter(|x| x["span_s"].as_f64().unwrap() > 0.5) {
        let (c, span) = (x["commands"].as_f64().unwrap(), x["span_s"].as_f64().unwrap());
        assert!((x["ops_per_sec"].as_f64().unwrap() - c / span).abs() < 1e-6 * c.max(1.0), "{x}");
        assert!(x["connected_clients"].as_u64().unwrap() >= 1, "{x}");
    }
    // The threads: named, the I/O thread's CPU within what /proc says it used over the run.
    let names: Vec<&str> = s
        .iter()
        .flat_map(|x| x["threads"].as_array().into_iter().flatten())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"redis-server") && names.contains(&"io_thd_1"), "{names:?}");
    let io_sampled_ns: f64 = s
        .iter()
        .flat_map(|x| {
            let span = x["span_s"].as_f64().unwrap();
            x["threads"].as_array().into_iter().flatten().map(move |t| (t.clone(), span))
        })
        .filter(|(t, _)| t["name"] == "io_thd_1")
        .map(|(t, span)| t["cores"].as_f64().unwrap() * span * 1e9)
        .sum();
    // The verdict names the busiest thread with its cores over the test, as the series has them.
    let threads = &t["server_threads"];
    assert_eq!(threads["source"], "/proc", "{threads}");
    let busiest = threads["busiest"].as_str().unwrap();
    assert!(names.contains(&busiest), "{threads}");
    let cores = threads["busiest_cores"].as_f64().unwrap();
    let limit = threads["limit"].as_str().unwrap();
    let main = threads["main_thread_cores"].as_f64().unwrap();
    assert!(cores >= main, "{threads}");
    assert_eq!(limit == "main_thread", main >= 0.9, "{threads}");
    if limit == "io_threads" {
        assert!(busiest.starts_with("io_thd") && cores >= 0.9, "{threads}");
    }
    let text = threads["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("{busiest} {cores:.2}")) || text.contains(&format!("{busiest} at {cores:.2}")),
        "{text}"
    );
    assert!(t["bottleneck"]["text"].as_str().unwrap().ends_with(text), "{}", t["bottleneck"]);
    let io_proc = (io_after - io_before) as f64;
    assert!(io_sampled_ns <= io_proc + 1e6, "sampled {io_sampled_ns} ns > /proc's {io_proc} ns");
    assert!(io_sampled_ns >= io_proc * 0.5, "sampled {io_sampled_ns} ns of /proc's {io_proc} ns");
    assert!(io_proc > 0.0, "the I/O thread ran: {io_proc}");
}

/// A `BGSAVE` sent by the test mid-run: the sample that covers the fork counts it (`total_forks`
/// moved by one over the test, as the server says) and names it with the server's
/// `latest_fork_usec`, in the second the test sent it (or the one before: the sample that sees it
/// is the one that ends after it, labelled by its middle); the verbose report names it there.
fn a_bgsave_mid_run_is_a_fork_in_its_second(tool: Tool) {
    let server = RedisServer::start();
    let forks_before: u64 = server.info_field("stats", "total_forks").unwrap().parse().unwrap();
    let mut sent_us = 0;
    let (t, stdout, _) =
        run_while(&tool, &server, &["-t", "set", "-r", "1000", "--duration", "5", "-c", "4"], || {
            server.wait_for_calls("set", 2000);
            std::thread::sleep(Duration::from_millis(1500));
            sent_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros()
                as u64;
            server.cli(&["BGSAVE"]);
        });
    let t = &t;
    let forks_after: u64 = server.info_field("stats", "total_forks").unwrap().parse().unwrap();
    assert_eq!(forks_after - forks_before, 1);
    assert_eq!(sum(t, "forks"), 1, "{t}");
    let fork = samples(t).iter().find(|x| x["forks"] == 1).unwrap();
    let second = fork["second"].as_u64().unwrap();
    let expected = (sent_us - t["start_us"].as_u64().unwrap()) / 1_000_000;
    assert!(second + 1 >= expected && second <= expected + 1, "sent in second {expected}: {fork}");
    let words: Vec<&str> = fork["unusual"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(words.iter().any(|w| w.starts_with("a fork")), "{fork}");
    let us: u64 = server.info_field("stats", "latest_fork_usec").unwrap().parse().unwrap();
    assert_eq!(fork["latest_fork_usec"], us, "{fork}");
    assert!(stdout.contains(&format!("server second {second}: a fork")), "{stdout}");
}

/// The server stopped (SIGSTOP) for 2.5 s of a 7 s test: the samples due meanwhile are
/// missing, with why, not zeros; the samples after carry the whole span, so the deltas still add
/// up to the server's count.
fn a_stopped_server_gives_missing_samples_not_zeros(tool: Tool) {
    let server = RedisServer::start();
    server.cli(&["CONFIG", "RESETSTAT"]);
    let before = server.info_field("stats", "total_commands_processed").unwrap().parse::<u64>().unwrap();
    let (t, _, _) = run_while(&tool, &server, &["-t", "get", "--duration", "7", "-c", "4", "-q"], || {
        server.wait_for_calls("get", 1000);
        std::thread::sleep(Duration::from_millis(1000));
        server.signal("STOP");
        std::thread::sleep(Duration::from_millis(2500));
        server.signal("CONT");
    });
    let s = samples(&t);
    let missing: Vec<&Value> = s.iter().filter(|x| !x["missing"].is_null()).collect();
    assert!(!missing.is_empty(), "{s:?}");
    for m in &missing {
        assert!(
            m["commands"].is_null() && m["ops_per_sec"].is_null(),
            "a missing sample has no figures: {m}"
        );
        assert!(m["second"].as_u64().unwrap() <= 6, "{m}");
    }
    // No sample of the stop reads as zero commands: the server did not answer, it did not idle.
    assert!(s.iter().filter(|x| x["edge"].is_null()).all(|x| x["commands"] != 0), "{s:?}");
    // The sample after the stop covers it.
    let after = s.iter().find(|x| x["span_s"].as_f64().unwrap() > 1.5).unwrap_or_else(|| panic!("{s:?}"));
    assert!(after["commands"].as_u64().is_some(), "{after}");
    let gets = calls(&server, "get");
    let processed = |s: &RedisServer| -> u64 {
        s.info_field("stats", "total_commands_processed").unwrap().parse().unwrap()
    };
    let commands = sum(&t, "commands");
    // Every GET ran between the edges, and nothing counts twice: at most what the server
    // processed over the run (the test's own polls of INFO among them).
    assert!(gets <= commands && commands <= processed(&server) - before, "{commands} {gets}");
}

/// `--at '2s BGSAVE'` (#51 item 4): the event's window is laid against the server seconds that
/// overlap it, in the JSON (`events[].server`) and the verbose report: the fork the event caused
/// (the server's `total_forks` moved by one) is named there, and the commands of those seconds are
/// the series' own.
fn an_event_window_names_the_servers_seconds(tool: Tool) {
    let server = RedisServer::start();
    let forks_before: u64 = server.info_field("stats", "total_forks").unwrap().parse().unwrap();
    let (t, stdout, _) =
        run(&tool, &server, &["-t", "set", "-r", "1000", "--duration", "5", "-c", "4", "--at", "2s BGSAVE"]);
    let forks_after: u64 = server.info_field("stats", "total_forks").unwrap().parse().unwrap();
    assert_eq!(forks_after - forks_before, 1);
    let event = &t["events"][0];
    let w = &event["server"][0];
    assert_eq!(w["node"], format!("127.0.0.1:{}", server.port()), "{event}");
    assert!(w["samples"].as_u64() >= Some(1), "{event}");
    let unusual: Vec<&str> = w["unusual"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(unusual.iter().any(|u| u.contains(": a fork")), "{event}");
    // The window's commands are those of the samples it covers, no more than the series' total.
    let (from, to) = (w["from_s"].as_f64().unwrap(), w["to_s"].as_f64().unwrap());
    let covered: u64 = samples(&t)
        .iter()
        .filter(|s| s["missing"].is_null() && s["span_s"].as_f64() > Some(0.0))
        .filter(|s| {
            s["at_s"].as_f64().unwrap() <= to + 1e-9
                && s["at_s"].as_f64().unwrap() - s["span_s"].as_f64().unwrap() >= from - 1e-9
        })
        .filter_map(|s| s["commands"].as_u64())
        .sum();
    assert_eq!(w["commands"].as_u64(), Some(covered), "{event}");
    assert!(covered <= sum(&t, "commands"));
    assert!(stdout.contains("    server over ") && stdout.contains(": a fork"), "{stdout}");
}

/// A capacity search (#51 item 4): every step carries the server's seconds over it, with the
/// bucket of its command's p99 (the step's `LATENCY HISTOGRAM`), in the JSON and under the
/// steps table; the steps' commands hold every reply the server counted for them and no more
/// than the server processed over the search (`INFO stats`).
fn each_capacity_step_has_the_servers_seconds(tool: Tool) {
    let server = RedisServer::start();
    let processed =
        || -> u64 { server.info_field("stats", "total_commands_processed").unwrap().parse().unwrap() };
    let before = processed();
    let json = json_path("series51", "search");
    let port = server.port().to_string();
    let args = [
        "-p",
        &port,
        "-t",
        "get",
        "-c",
        "4",
        "--slo",
        "p99<=250ms",
        "--rps",
        "100-400",
        "--slo-steps",
        "3",
        "--duration",
        "1s",
        "--warmup",
        "100ms",
        "--json",
        json.to_str().unwrap(),
    ];
    let out = tool.run(&args, T);
    let after = processed();
    assert!(out.stdout.contains("  step 1: server over "), "{}", out.dump());
    let doc: Value = serde_json::from_str(&take_document(&json)).unwrap();
    let steps = doc["capacity"][0]["steps"].as_array().unwrap_or_else(|| panic!("{doc}"));
    assert!(!steps.is_empty());
    let (mut commands, mut replies) = (0, 0);
    for step in steps {
        let w = &step["server"][0];
        assert!(w["samples"].as_u64() >= Some(1), "{step}");
        assert!(w["cpu_cores"].as_f64().is_some(), "{step}");
        // The step's p99 command bucket is its test's server_time's.
        let st = &step["test"]["server_time"]["nodes"][0]["commands"];
        let busiest = st.as_array().unwrap().iter().max_by_key(|c| c["calls"].as_u64()).unwrap();
        assert_eq!(w["p99_command_us"], busiest["p99_us"], "{step}");
        assert_eq!(w["command"], busiest["command"], "{step}");
        commands += w["commands"].as_u64().unwrap();
        replies += step["test"]["requests"].as_u64().unwrap();
    }
    assert!(commands >= replies, "the steps' server commands {commands} < their replies {replies}");
    assert!(commands <= after - before, "the steps' server commands {commands} > INFO's {}", after - before);
}
