//! The bottleneck verdict against real servers, in both directions, on mio (the verdict is the
//! command line's, from /proc and INFO, whatever the backend): a server
//! held up by its commands is named, a client held to one core against a server on another is
//! named (or, on a machine whose CPUs were all busy, that is what is said), and a server that
//! refuses INFO gets no claim.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use respbench_tests::{json_path, take_document, RedisServer, Tool};

const T: Duration = Duration::from_secs(120);

respbench_tests::backend_tests!(
    every: [],
    mio: [
        a_server_busy_with_its_commands_is_the_bottleneck,
        a_client_held_to_one_core_is_the_bottleneck,
        a_server_that_refuses_info_gets_no_claim,
    ],
);

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

/// Runs respbench with `args` and `--json`, and gives the first test's entry.
fn run(tool: &Tool, server: &RedisServer, args: &[&str]) -> serde_json::Value {
    let json = json_path("bn", "run");
    let port = server.port().to_string();
    let mut all = vec!["-p", &port, "--json", json.to_str().unwrap()];
    all.extend(args);
    let out = tool.run(&all, T);
    assert!(out.status.success(), "{}", out.dump());
    read(&json)["tests"][0].clone()
}

/// Pins the running server (every thread: redis-server starts its few threads before it
/// answers, and they live as long as it does) to `cpu`.
fn pin(pid: u32, cpu: &str) {
    let st =
        Command::new("taskset").args(["-a", "-p", "-c", cpu, &pid.to_string()]).output().expect("taskset");
    assert!(st.status.success(), "taskset: {}", String::from_utf8_lossy(&st.stderr));
}

/// `DEBUG SLEEP 0.01` on ten connections: nine requests always wait behind the one sleeping, so
/// the client has 90 ms to send each next one and its own delays (a busy machine's) leave no
/// gap: the server's one thread executes commands nearly all of the 3 s while using almost no
/// CPU, and the client waits: "server", seen through `INFO commandstats`. The verdict follows
/// the measured share (at least 90% is "server"); a machine too busy to read the counters on
/// time dilutes the share with its delays, so below that the verdict may say so instead.
fn a_server_busy_with_its_commands_is_the_bottleneck(tool: Tool) {
    let server = RedisServer::start_with(&[("enable-debug-command", "yes")]);
    let t = run(&tool, &server, &["-c", "10", "-n", "300", "DEBUG", "SLEEP", "0.01"]);
    assert_eq!(server.command_calls("debug"), 300);
    let b = &t["bottleneck"];
    let share = t["server_cpu"]["command_share"].as_f64().unwrap();
    // 3 s of sleeps in the window between the readings; only the readings' own delays are not.
    assert!(share >= 0.75, "the server executed commands only {share} of the time: {t}");
    if share >= 0.9 {
        assert_eq!(b["side"], "server", "{b}");
    } else {
        assert!(["server", "machine", "neither"].contains(&b["side"].as_str().unwrap()), "{b}");
    }
    if b["side"] == "server" {
        assert!(b["text"].as_str().unwrap().contains("executing commands"), "{b}");
    }
}

/// The client pinned to CPU 0 and the server to CPU 1, 50 connections of GET at -P 1: the debug
/// build of respbench spends several times the server's CPU per request, so its loop is the one
/// that is busy all the time: "client". When other work kept every CPU of the machine busy (the
/// tests run in parallel on 2 CPUs), respbench's loop waits for its CPU (its run delay in
/// /proc) and the verdict must say the machine instead; it must never blame the server or
/// round trips.
fn a_client_held_to_one_core_is_the_bottleneck(tool: Tool) {
    let server = RedisServer::start();
    pin(server.pid(), "1");
    let json = json_path("bn", "client");
    let port = server.port().to_string();
    let out = tool
        .pinned("0")
        .run(&["-p", &port, "-t", "get", "-c", "50", "-n", "60000", "--json", json.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.dump());
    let t = read(&json)["tests"][0].clone();
    let b = &t["bottleneck"];
    let client = t["client_cpu"]["core_share"].as_f64().unwrap();
    let machine = b["machine_cpu_busy"].as_f64().unwrap();
    match b["side"].as_str().unwrap() {
        "client" => {
            assert!(client >= 0.9, "{t}");
            assert!(t["server_cpu"]["main_thread_share"].as_f64().unwrap() < 0.9, "{t}");
            // A finding, not an error: in the JSON, and not on stderr (not a terminal here).
            assert!(warnings(&read(&json)).contains("the client limited the run"), "{t}");
            assert!(t["warnings"][0]["kind"] == "client_limited", "{t}");
            assert_eq!(out.stderr, "", "{}", out.dump());
        }
        "machine" => {
            let waited = |v: &serde_json::Value| v.as_f64().is_some_and(|w| w >= 0.2);
            let held =
                machine >= 0.9 || waited(&b["client_wait_share"]) || waited(&t["server_cpu"]["wait_share"]);
            assert!(held && client < 0.9, "{t}");
        }
        other => panic!("a client held to one core was called '{other}': {t}"),
    }
}

/// `rename-command INFO ""`: no server figures, and the verdict says it does not know rather
/// than naming the server or round trips.
fn a_server_that_refuses_info_gets_no_claim(tool: Tool) {
    let server = RedisServer::start_with(&[("rename-command", "INFO \"\"")]);
    let t = run(&tool, &server, &["-t", "get", "-c", "5", "-n", "5000", "-q"]);
    assert!(t.get("server_cpu").is_none(), "{t}");
    let b = &t["bottleneck"];
    let text = b["text"].as_str().unwrap();
    assert!(text.contains("the server's CPU is not known (INFO refused"), "{b}");
    assert!(["unknown", "client", "machine"].contains(&b["side"].as_str().unwrap()), "{b}");
}

/// A `--json` document's warnings, the session's and each test's, as JSON text.
fn warnings(doc: &serde_json::Value) -> String {
    let tests = doc["tests"].as_array().into_iter().flatten();
    tests.fold(doc["warnings"].to_string(), |all, t| all + &t["warnings"].to_string())
}
