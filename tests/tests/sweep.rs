//! Sweeps (`-d`, `-c`, `-P`, `--threads` lists) and `--repeat` against a real redis-server, on
//! mio (the steps are the command line's, the same on every backend): each step is a whole test
//! of its own, checked against the server's counts and against a separate single run's shape.

use std::path::Path;
use std::time::Duration;

use respbench_tests::{json_path, take_document, RedisServer, Tool};

const T: Duration = Duration::from_secs(120);

respbench_tests::backend_tests!(
    every: [],
    mio: [each_step_is_a_test_of_its_own, a_white_paper_table_in_one_command, repeats_report_their_spread],
);

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

fn run(tool: &Tool, server: &RedisServer, args: &[&str]) -> (serde_json::Value, String) {
    let json = json_path("sweep", "run");
    let port = server.port().to_string();
    let mut all = vec!["-p", &port, "--json", json.to_str().unwrap()];
    all.extend(args);
    let out = tool.run(&all, T);
    assert!(out.status.success(), "{}", out.dump());
    (read(&json), out.stdout)
}

/// `-c 2,5 -P 1,4 -n 3000`: four GET steps, in order, each with its parameters, exactly 3000
/// requests each at the server, and the same fields as a single run's entry.
fn each_step_is_a_test_of_its_own(tool: Tool) {
    let server = RedisServer::start();
    let (doc, stdout) = run(&tool, &server, &["-t", "get", "-c", "2,5", "-P", "1,4", "-n", "3000", "-q"]);
    let tests = doc["tests"].as_array().unwrap();
    let steps: Vec<(u64, u64)> = tests
        .iter()
        .map(|t| (t["step"]["clients"].as_u64().unwrap(), t["step"]["pipeline"].as_u64().unwrap()))
        .collect();
    assert_eq!(steps, [(2, 1), (2, 4), (5, 1), (5, 4)]);
    assert!(tests.iter().all(|t| t["requests"] == 3000 && t["name"] == "GET"), "{doc}");
    assert_eq!(server.command_calls("get"), 4 * 3000);
    assert_eq!(doc["config"]["sweep"]["clients"], serde_json::json!([2, 5]));
    // A step's entry has every field of a single run's entry, and only `step` more.
    let (single, _) = run(&tool, &server, &["-t", "get", "-c", "2", "-n", "3000", "-q"]);
    let keys = |t: &serde_json::Value| {
        let mut k: Vec<String> = t.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let mut want = keys(&single["tests"][0]);
    want.push("step".into());
    want.sort();
    assert_eq!(keys(&tests[0]), want);
    // The quiet lines name their step, and the table has a row per step.
    assert!(stdout.contains("GET (-c 5 -P 4): "), "{stdout}");
    assert!(stdout.contains("GET: sweep of 4 steps"), "{stdout}");
}

/// The value-size table of the cloud white papers, small: `-t get,set -d 16,1024 --preload`
/// with CSV, a row per test and size whose columns carry the step, and GETs that all hit.
fn a_white_paper_table_in_one_command(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = tool.run(
        &[
            "-p",
            &port,
            "-t",
            "set,get",
            "-d",
            "16,1024",
            "--threads",
            "2",
            "-c",
            "4",
            "-n",
            "2000",
            "-r",
            "500",
            "--preload",
            "--csv",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].ends_with(
            ",\"datasize\",\"clients\",\"pipeline\",\"threads\",\"errors\",\"abandoned\",\"unsent\",\"bottleneck\""
        ),
        "{}",
        lines[0]
    );
    let rows: Vec<(String, String)> = lines[1..]
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split("\",\"").collect();
            assert_eq!(f.len(), 16, "{l}");
            (f[0].trim_matches('"').to_string(), f[8].to_string())
        })
        .collect();
    let want: Vec<(String, String)> = [("SET", "16"), ("SET", "1024"), ("GET", "16"), ("GET", "1024")]
        .iter()
        .map(|(t, d)| (t.to_string(), d.to_string()))
        .collect();
    assert_eq!(rows, want);
    assert_eq!(server.info_field("stats", "keyspace_misses").as_deref(), Some("0"));
    assert_eq!(server.cli(&["STRLEN", "key:000000000499"]).trim(), "1024");
}

/// `--repeat 3`: three entries, runs 0 to 2, and the mean and spread line.
fn repeats_report_their_spread(tool: Tool) {
    let server = RedisServer::start();
    // The harness pings the server it starts.
    let before = server.command_calls("ping");
    let (doc, stdout) =
        run(&tool, &server, &["-t", "ping_mbulk", "-c", "4", "-n", "2000", "--repeat", "3", "-q"]);
    let runs: Vec<u64> =
        doc["tests"].as_array().unwrap().iter().map(|t| t["step"]["run"].as_u64().unwrap()).collect();
    assert_eq!(runs, [0, 1, 2]);
    assert!(stdout.contains("mean of 3 runs at -d 3 -c 4 -P 1: "), "{stdout}");
    assert!(stdout.contains("PING_MBULK (run 2/3): "), "{stdout}");
    assert_eq!(server.command_calls("ping") - before, 6000);
}
