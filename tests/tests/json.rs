//! The `--json` document checked by independent implementations (JSON Schema, Python's
//! HdrHistogram), the client-CPU figures, an interrupted run's document, and `--backend mio,smol,uring`.
//! The document is the command line's: its checks run on mio, and the side-by-side run has a
//! document of every backend's figures.

use std::path::PathBuf;
use std::time::Duration;

use respbench_tests::{check_json_independently, respbench, respbench_on, RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

fn scratch(server: &RedisServer, name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("respbench-jsontest-{}-{}", std::process::id(), server.port()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn read(path: &PathBuf) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", path.display()))
}

fn port(server: &RedisServer) -> String {
    server.port().to_string()
}

/// Several tests, with errors and pipelining: the document is schema-valid, its histograms decode
/// in Python to the percentiles it states, and every test carries the client's CPU.
fn schema_and_independent_decode(tool: Tool, backend: &str) {
    let server = RedisServer::start();
    let path = scratch(&server, &format!("{backend}.json"));
    let p = port(&server);
    let out = tool.run(
        &["-p", &p, "-t", "set,get,lpush,lrange_100", "-n", "3000", "-r", "100", "-P", "3", "-q", "--json"]
            .iter()
            .map(|s| s.to_string())
            .chain([path.to_string_lossy().into_owned()])
            .collect::<Vec<_>>(),
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let checked = check_json_independently(&path);
    assert_eq!(checked.lines().filter(|l| l.ends_with("agree")).count(), 5, "{checked}");
    let doc = read(&path);
    for t in doc["tests"].as_array().unwrap() {
        assert_eq!(t["backend"], backend);
        assert_eq!(t["requests"], 3000);
        let cpu = &t["client_cpu"];
        assert!(cpu["us_per_request"].as_f64().unwrap() > 0.0, "{cpu}");
        assert!(cpu["user_s"].as_f64().unwrap() + cpu["sys_s"].as_f64().unwrap() > 0.0, "{cpu}");
        assert_eq!(cpu["threads"], 1);
        let share = cpu["core_share"].as_f64().unwrap();
        assert!(share > 0.0 && share < 1.5, "{cpu}");
    }
    let _ = std::fs::remove_file(&path);
}

/// Ctrl-C in the middle of `-l`: exit 130, and the document is valid, marked interrupted, and
/// holds what completed, the partial last test included.
fn interrupted_run_writes_a_valid_document(tool: Tool, backend: &str) {
    let server = RedisServer::start();
    let path = scratch(&server, &format!("int-{backend}.json"));
    let p = port(&server);
    let run = tool.spawn(&["-p", &p, "-l", "-t", "get", "-q", "--json", path.to_str().unwrap()]);
    // -l runs forever: only the signal ends it before the hard limit.
    server.wait_for_calls("get", 1000);
    run.interrupt();
    let out = run.wait(T);
    assert_eq!(out.status.code(), Some(130), "{}", out.dump());
    check_json_independently(&path);
    let doc = read(&path);
    assert_eq!(doc["interrupted"], true);
    let tests = doc["tests"].as_array().unwrap();
    assert!(!tests.is_empty(), "{doc}");
    let total: u64 = tests.iter().map(|t| t["requests"].as_u64().unwrap()).sum();
    assert!(total > 0, "{doc}");
    // Every request GET sent and had answered is in the document; at most the last one's reply
    // can be lost in the abort.
    assert!(server.command_calls("get") >= total, "{} calls < {total} recorded", server.command_calls("get"));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn schema_and_independent_decode_mio() {
    schema_and_independent_decode(respbench_on("mio"), "mio");
}

#[test]
fn interrupted_run_writes_a_valid_document_mio() {
    interrupted_run_writes_a_valid_document(respbench_on("mio"), "mio");
}

/// `--backend mio,smol,uring` runs every test on each backend in turn and prints one row per test with
/// a column group per backend; CSV gets one row per backend; JSON one entry per backend.
#[test]
fn backends_side_by_side() {
    let server = RedisServer::start();
    let path = scratch(&server, "both.json");
    let p = port(&server);
    let tool = respbench();
    let out = tool.run(
        &[
            "-p",
            &p,
            "-t",
            "set,get",
            "-n",
            "2000",
            "--backend",
            "mio,smol,uring",
            "-q",
            "--json",
            path.to_str().unwrap(),
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].contains(" mio ") && lines[0].contains(" smol ") && lines[0].contains(" uring "),
        "{}",
        out.dump()
    );
    assert!(lines[1].starts_with("test") && lines[1].matches("cpu us/req").count() == 3, "{}", out.dump());
    for (row, name) in lines[2..4].iter().zip(["SET", "GET"]) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[0], name, "{}", out.dump());
        // name, then per backend: rps, p50, p99, cpu us/req, core%.
        assert_eq!(cells.len(), 16, "{row}");
        for backend in 0..3 {
            let rps: f64 = cells[1 + backend * 5].parse().unwrap();
            let cpu: f64 = cells[4 + backend * 5].parse().unwrap();
            assert!(rps > 0.0 && cpu > 0.0, "{row}");
        }
    }
    // Each backend sent exactly its -n of each command.
    assert_eq!(server.command_calls("set"), 6000);
    assert_eq!(server.command_calls("get"), 6000);
    check_json_independently(&path);
    let doc = read(&path);
    assert_eq!(doc["config"]["backend"], "mio,smol,uring");
    let got: Vec<(String, String, u64)> = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().into(),
                t["backend"].as_str().unwrap().into(),
                t["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("SET", "mio"),
        ("SET", "smol"),
        ("SET", "uring"),
        ("GET", "mio"),
        ("GET", "smol"),
        ("GET", "uring"),
    ];
    assert_eq!(got, want.map(|(n, b)| (n.to_string(), b.to_string(), 2000)));

    let out = tool.run(&["-p", &p, "-t", "get", "-n", "500", "--backend", "smol,mio", "--csv"], T);
    assert!(out.status.success(), "{}", out.dump());
    let rows: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(rows.len(), 3, "{}", out.dump());
    // The peers' columns keep their places; the verdict and the backend come last.
    assert!(rows[0].starts_with("\"test\",\"rps\",\"avg_latency_ms\""), "{}", out.dump());
    assert!(rows[0].ends_with(",\"bottleneck\",\"backend\""), "{}", out.dump());
    let rows = respbench_tests::parse_csv(&out.stdout);
    assert!(rows[1][0] == "GET" && rows[1][11] == "smol" && rows[2][11] == "mio", "{}", out.dump());
    let sides = ["server", "client", "neither", "machine", "unknown"];
    assert!(rows[1..].iter().all(|r| sides.contains(&r[10].as_str())), "{}", out.dump());
    let _ = std::fs::remove_file(&path);
}

/// `-d` ranges, `--key-dist` and `--key-prefix` are recorded in `config` (schema-valid), `datasize`
/// is the largest size, and `command` shows the value slot.
#[test]
fn keys_and_values_in_config() {
    let server = RedisServer::start();
    let path = scratch(&server, "keys.json");
    let p = port(&server);
    let args = ["-p", &p, "-t", "set", "-n", "500", "-r", "1000", "-d", "16-1024", "--key-dist", "zipf:0.99"];
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.extend(["--key-prefix", "b:", "-q", "--json"].map(String::from));
    args.push(path.to_string_lossy().into_owned());
    let out = respbench_tests::respbench_on("mio").run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    check_json_independently(&path);
    let doc = read(&path);
    let c = &doc["config"];
    assert_eq!((&c["datasize"], &c["datasize_spec"]), (&1024.into(), &"16-1024".into()), "{c}");
    assert_eq!((&c["key_dist"], &c["key_prefix"]), (&"zipf:0.99".into(), &"b:".into()), "{c}");
    let command = doc["tests"][0]["command"].as_str().unwrap();
    assert!(command.contains("b:key:__rand_int__\r\n$16-1024\r\n<value>\r\n"), "{command}");
    let _ = std::fs::remove_file(&path);
}
