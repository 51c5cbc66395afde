//! Long runs against a real redis-server, on mio (the series and the log are the core's and the
//! command line's, the same on every backend): the process's memory stays flat
//! while a test runs on (the per-second series is summarised as the seconds end), the `--hlog`
//! interval log holds every request of the JSON, read back by HdrHistogram's own Python reader,
//! and Ctrl-C deep into a long run still writes both.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use respbench_tests::{
    java_hgrm_of, json_path, read_hlog_independently, read_hlog_with_java, take_document, RedisServer, Tool,
};

respbench_tests::backend_tests!(
    every: [],
    mio: [
        memory_stays_flat_over_half_a_minute,
        the_interval_log_adds_up_to_the_json,
        hgrm_files_and_chosen_percentiles,
        ctrl_c_in_a_long_run_writes_the_series_and_the_log,
        quiet_open_loop_prints_the_series_asked_for,
    ],
);

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

/// The resident set of process `pid` in KiB, from /proc.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Sums a test's series.
fn series_requests(t: &serde_json::Value) -> u64 {
    t["series"].as_array().unwrap().iter().map(|s| s["requests"].as_u64().unwrap()).sum()
}

/// A 30 s open-loop run on 3 event loops: between the 8th second and the last, the RSS grows by
/// less than 1 MiB. Before the series was summarised as it went, each second kept a histogram per
/// loop and one for the live view, 26 KB each: 2 MB over those 20 seconds. (The bound over a
/// simulated day is the core's: core/tests/long_run.rs.)
fn memory_stays_flat_over_half_a_minute(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("long", "flat");
    let port = server.port().to_string();
    let run = tool.spawn(&[
        "-p",
        &port,
        "-t",
        "get",
        "-c",
        "6",
        "--threads",
        "3",
        "--rps",
        "3000",
        "--duration",
        "30s",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let started = Instant::now();
    let mut samples: Vec<(u64, u64)> = Vec::new();
    while started.elapsed() < Duration::from_secs(28) {
        thread::sleep(Duration::from_secs(1));
        if let Some(kib) = rss_kib(run.pid()) {
            samples.push((started.elapsed().as_secs(), kib));
        }
    }
    let out = run.wait(Duration::from_secs(60));
    assert!(out.status.success(), "{}", out.dump());
    let at = |s: u64| samples.iter().find(|x| x.0 >= s).unwrap_or_else(|| panic!("{samples:?}")).1;
    let (early, late) = (at(8), samples.last().unwrap().1);
    eprintln!(
        "{}: RSS {early} KiB at 8 s, {late} KiB at {} s: {samples:?}",
        tool.name(),
        samples.last().unwrap().0
    );
    assert!(late < early + 1024, "RSS grew from {early} to {late} KiB: {samples:?}");
    let doc = read(&json);
    let t = &doc["tests"][0];
    let seconds = t["series"].as_array().unwrap().len();
    assert!((30..=31).contains(&seconds), "{seconds} seconds in the series");
    assert_eq!(series_requests(t), t["requests"].as_u64().unwrap());
}

/// Two tests of 4000 requests at 2000 a second with `--hlog`: HdrHistogram's Python
/// `HistogramLogReader` reads one interval per second of each, tagged with the test's name, and
/// its service time tagged `NAME.service`, whose counts add up to the JSON's requests; the first
/// test's latency is also untagged. HdrHistogram's Java `HistogramLogProcessor` reads the log
/// with its defaults (the untagged lines) and prints the JSON's latencies in milliseconds, within
/// the per-second histograms' two significant figures; with `-tag` each test and service time.
fn the_interval_log_adds_up_to_the_json(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("long", "hlog");
    let hlog = json.with_extension("hlog");
    let port = server.port().to_string();
    let out = tool.run(
        &[
            "-p",
            &port,
            "-t",
            "set,get",
            "-c",
            "4",
            "--rps",
            "2000",
            "-n",
            "4000",
            "-q",
            "--json",
            json.to_str().unwrap(),
            "--hlog",
            hlog.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", out.dump());
    let doc = read(&json);
    let logged = read_hlog_independently(&hlog);
    let mut want: Vec<(String, u64, u64)> = Vec::new();
    for t in doc["tests"].as_array().unwrap() {
        let seconds = t["series"].as_array().unwrap().len() as u64;
        let (name, requests) = (t["name"].as_str().unwrap().to_string(), t["requests"].as_u64().unwrap());
        if want.is_empty() {
            want.push(("None".into(), requests, seconds));
        }
        want.push((name.clone(), requests, seconds));
        want.push((format!("{name}.service"), requests, seconds));
    }
    assert_eq!(logged, want);
    assert!(want.iter().all(|w| w.1 == 4000 && w.2 >= 2), "{want:?}");
    assert_eq!(server.command_calls("get"), want[3].1);
    // The Java tool, as its users run it.
    let close = |got: f64, want: f64| (got - want).abs() <= 0.02 * want + 0.011;
    let tests = doc["tests"].as_array().unwrap();
    for (tag, t, field) in [
        (None, &tests[0], "latency_ms"),
        (Some("SET"), &tests[0], "latency_ms"),
        (Some("GET"), &tests[1], "latency_ms"),
        (Some("GET.service"), &tests[1], "service_latency_ms"),
    ] {
        let java = read_hlog_with_java(&hlog, tag);
        assert_eq!(java.count, 4000, "{tag:?}: {}", java.output);
        let (p50, max) = (t[field]["p50"].as_f64().unwrap(), t[field]["max"].as_f64().unwrap());
        assert!(
            close(java.p50_ms, p50),
            "{tag:?}: p50 {} ms, the JSON says {p50}\n{}",
            java.p50_ms,
            java.output
        );
        assert!(
            close(java.max_ms, max),
            "{tag:?}: max {} ms, the JSON says {max}\n{}",
            java.max_ms,
            java.output
        );
    }
    let _ = std::fs::remove_file(&hlog);
}

/// `--hgrm PREFIX` in an open loop of two tests: a file per test and per service time, byte for
/// byte what HdrHistogram's Java `HistogramLogProcessor` writes for the JSON's histogram (so its
/// plotter reads them), whose last line counts the requests. `--print-percentiles
/// 50,99.9,99.99`: the `-q` lines show the chosen percentiles, the JSON's.
fn hgrm_files_and_chosen_percentiles(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("long", "hgrm");
    let prefix = format!("{}-", json.with_extension("").display());
    let port = server.port().to_string();
    let run = |extra: &[&str]| {
        let mut a = vec!["-p", &port, "-t", "set,get", "-c", "4", "-n", "3000", "-q", "--json"];
        a.push(json.to_str().unwrap());
        a.extend(extra);
        let out = tool.run(&a, Duration::from_secs(60));
        assert!(out.status.success(), "{}", out.dump());
        out
    };
    // A prefix in a directory that is not there is refused before the run.
    let out = tool.run(
        &["-p", &port, "-t", "get", "-n", "100000000", "--hgrm", "/nonexistent-dir/r-"],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("--hgrm: cannot write files named /nonexistent-dir/r-TEST.hgrm"),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("get"), 0, "the run started anyway");
    run(&["--rps", "2000", "--hgrm", &prefix]);
    let doc = read(&json);
    for t in doc["tests"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        for (file, field) in [
            (format!("{prefix}{name}.hgrm"), "histogram"),
            (format!("{prefix}{name}.service.hgrm"), "service_histogram"),
        ] {
            let ours = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
            let _ = std::fs::remove_file(&file);
            let java = java_hgrm_of(t[field]["data"].as_str().unwrap(), &json.with_extension(field));
            assert_eq!(ours, java, "{file} is not what the Java tool writes");
            // The plotter's rule: lines of four numbers; the 100% line has three, the count.
            let last: Vec<&str> =
                ours.lines().rev().find(|l| !l.starts_with('#')).unwrap().split_whitespace().collect();
            assert_eq!(last[1..], ["1.000000000000", "3000"], "{ours}");
            let rows =
                ours.lines().filter(|l| !l.starts_with('#') && l.split_whitespace().count() == 4).count();
            assert!(rows > 20, "{ours}");
        }
    }
    let out = run(&["--print-percentiles", "50,99.9,99.99"]);
    let doc = read(&json);
    let quiet = out.stdout.lines().filter(|l| l.contains("requests per second")).count();
    assert_eq!(quiet, 2, "{}", out.dump());
    for (line, t) in
        out.stdout.lines().filter(|l| l.contains("requests per second")).zip(doc["tests"].as_array().unwrap())
    {
        let l = &t["latency_ms"];
        // The verdict trails the line when the server was not the limit.
        let side = t["bottleneck"]["side"].as_str().unwrap();
        let trailer = if side == "server" { String::new() } else { format!(", bottleneck: {side}") };
        let want = format!(
            "{}: {:.2} requests per second, p50={:.3} msec, p99.9={:.3} msec, p99.99={:.3} msec{trailer}",
            t["name"].as_str().unwrap(),
            t["rps"].as_f64().unwrap(),
            l["p50"].as_f64().unwrap(),
            l["p99_9"].as_f64().unwrap(),
            l["p99_99"].as_f64().unwrap()
        );
        assert_eq!(line, want, "{}", out.dump());
    }
    let _ = std::fs::remove_file(&json);
}

/// Ctrl-C a few seconds into a one-hour run (once the server has answered 2500 requests at 1000
/// a second): exit 130, the JSON is written and marked interrupted, its series holds every
/// request recorded, and the interval log was flushed with the same count.
fn ctrl_c_in_a_long_run_writes_the_series_and_the_log(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("long", "ctrlc");
    let hlog = json.with_extension("hlog");
    let port = server.port().to_string();
    let run = tool.spawn(&[
        "-p",
        &port,
        "-t",
        "get",
        "-c",
        "4",
        "--rps",
        "1000",
        "--duration",
        "1h",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--hlog",
        hlog.to_str().unwrap(),
    ]);
    server.wait_for_calls("get", 2500);
    run.interrupt();
    let out = run.wait(Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(130), "{}", out.dump());
    let doc = read(&json);
    assert_eq!(doc["interrupted"], true);
    let t = &doc["tests"][0];
    let requests = t["requests"].as_u64().unwrap();
    // What the server answered before the signal, and the drain after it.
    assert!(requests >= 2500, "{t}");
    assert_eq!(series_requests(t), requests);
    let logged = read_hlog_independently(&hlog);
    let _ = std::fs::remove_file(&hlog);
    // The test untagged, tagged, and its service time.
    assert_eq!(logged.len(), 3, "{logged:?}");
    let counts: Vec<(&str, u64)> = logged.iter().map(|l| (l.0.as_str(), l.1)).collect();
    assert_eq!(counts, [("None", requests), ("GET", requests), ("GET.service", requests)]);
}

/// `-q --rps --series`: the rate table replaces the quiet lines, and each step's seconds are
/// still printed, one line per second, whose requests add up to the JSON's.
fn quiet_open_loop_prints_the_series_asked_for(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("long", "series");
    let port = server.port().to_string();
    let out = tool.run(
        &[
            "-p",
            &port,
            "-t",
            "get",
            "-c",
            "4",
            "--rps",
            "1000",
            "--duration",
            "2s",
            "--series",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", out.dump());
    let t = read(&json)["tests"][0].clone();
    assert!(out.stdout.contains("GET @ 1000 rps:\n  second   requests"), "{}", out.dump());
    let printed: u64 = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("  second"))
        .skip(1)
        .map_while(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    assert_eq!(printed, t["requests"].as_u64().unwrap(), "{}", out.dump());
}
