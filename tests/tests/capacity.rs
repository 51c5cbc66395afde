//! `--slo`, the capacity search, against a real redis-server whose command has a fixed service
//! time (`DEBUG SLEEP 0.001`: about 1 ms of the server's one thread each, so it serves at most
//! about 1,000 per second): the JSON's `capacity`, the answer's step passed and the step above
//! it failed, an objective no rate meets exits 1 naming the lowest rate tried, and a split run's
//! ladder merges into the fleet's answer. No assertion on a rate or a duration: what is checked
//! is the search's own bookkeeping and the server's counts.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use respbench_tests::{check_json_independently, json_path, respbench, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(180);

// The search is the session's, the same whatever waits for the sockets: once, on mio.
respbench_tests::backend_tests!(
    every: [],
    mio: [
        a_search_brackets_the_answer,
        an_unreachable_objective_exits_1,
        workers_search_a_ladder_in_lockstep,
        plain_rate_steps_plot_against_the_achieved_rate,
    ],
);

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Whether the search was refused because this machine's own pauses, measured idle before it,
/// exceeded the objective (seen at a load average of 27: an idle thread's p99 pause of 365 ms
/// against p99<=250ms): that is the run's right answer on such a machine, checked here (exit 1,
/// the sentence with the figure, no step); the caller's checks of a search then do not apply.
fn refused_as_unmeasurable(out: &respbench_tests::Output, objective: &str) -> bool {
    let refused = out.stderr.contains(&format!("{objective} cannot be measured on this client: its own p"));
    if refused {
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(!out.stdout.contains("bracket"), "{}", out.dump());
        eprintln!("this machine's own pauses exceeded {objective}: the search was refused, as it must be");
    }
    refused
}

/// A failed step of search `c` whose rate the server could keep (at most its own capacity, 1 /
/// its mean execution time so far) and whose verdict names the machine: the machine, not the
/// server, then bounded the answer, which measures this machine.
fn machine_bounded<'a>(c: &'a Value, server: &RedisServer) -> Option<&'a Value> {
    let own = 1e6 / server.usec_per_call("debug")?;
    c["steps"].as_array()?.iter().find(|s| {
        s["passed"] == false
            && s["target_rps"].as_f64().is_some_and(|r| r <= own)
            && s["bottleneck"] == "machine"
    })
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn debug_server() -> RedisServer {
    RedisServer::start_with(&[("enable-debug-command", "yes")])
}

/// The short search's options: steps of 1 s after 100 ms, a loose objective (250 times the
/// service time: far above what a busy machine adds), a range whose top the server cannot serve.
const SEARCH: &[&str] = &[
    "-c",
    "8",
    "--slo",
    "p99<=250ms",
    "--rps",
    "100-4000",
    "--slo-steps",
    "7",
    "--duration",
    "1s",
    "--warmup",
    "100ms",
    "--drain-grace",
    "200ms",
];

/// `--rps 100-4000` against a server of at most ~1,000 per second: the answer passed, the step
/// above it failed, every step is in the JSON with its test and histogram, and the answer line
/// says the rate.
fn a_search_brackets_the_answer(tool: Tool) {
    let server = debug_server();
    let port = server.port().to_string();
    let json = json_path("capacity", "search");
    let mut args = vec!["-p", &port, "--json", json.to_str().unwrap()];
    args.extend(SEARCH);
    args.extend(["DEBUG", "SLEEP", "0.001"]);
    // A search whose every passing step had a failing one at or below it, where the machine
    // (not the server) limited the lowest, says so and exits 1: it measured this machine. CI saw
    // it once under the full suite (500 passed, then its confirm got 476 of 500, the loops
    // waiting 22% of the time for a CPU). A search whose answer the machine held down is
    // searched again too: beside two CPU hogs at a load of 16 a step the server could keep
    // failed as the machine's (the loops waiting 57% for a CPU), and the answer was 375 rps, 51%
    // of the server's own 740/s. Searched up to three times, then it must find its answer, and
    // the server's share below is held unless a machine-limited step still bounds it.
    let machine = "the lowest step was limited by the machine, not the server";
    let mut searches = 0;
    let out = loop {
        searches += 1;
        let _ = std::fs::remove_file(&json);
        let out = tool.run(&args, T);
        let again = searches < 3;
        if again && out.status.code() == Some(1) && out.stdout.contains(machine) {
            eprintln!("search {searches} was limited by this machine, searching again: {}", out.stdout);
            continue;
        }
        if again && out.status.success() {
            if let Some(s) = machine_bounded(&read(&json)["capacity"][0], &server) {
                eprintln!("search {searches}'s answer was held down by this machine, searching again: {s}");
                continue;
            }
        }
        break out;
    };
    if refused_as_unmeasurable(&out, "p99<=250ms") {
        return;
    }
    assert!(out.status.success(), "{}", out.dump());
    // A successful run leaves stderr empty when it is not a terminal.
    assert_eq!(out.stderr, "", "{}", out.dump());
    check_json_independently(&json);
    let doc = read(&json);
    let c = &doc["capacity"][0];
    assert_eq!(c["test"], "DEBUG SLEEP 0.001");
    assert_eq!(c["objectives"][0]["text"], "p99<=250ms");
    assert_eq!(c["objectives"][0]["metric"], "latency");
    assert_eq!(c["objectives"][0]["limit_us"].as_f64(), Some(250_000.0));
    assert_eq!(doc["config"]["slo"]["range_rps"], serde_json::json!([100, 4000]));
    let steps = c["steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.len() <= 7, "{c}");
    assert_eq!(c["ceiling_rps"], Value::Null, "a range needs no probe");
    for s in steps {
        let rate = s["target_rps"].as_u64().unwrap();
        assert!((100..=4000).contains(&rate), "{s}");
        assert!(s["test"]["histogram"]["data"].is_string(), "{s}");
        assert!(s["test"]["service_histogram"]["data"].is_string(), "{s}");
        assert_eq!(s["test"]["target_rps"].as_u64(), Some(rate));
        assert!(s["passed"].is_boolean() && s["latency_us"]["p99"].is_u64() && s["service_p99_us"].is_u64());
        assert_eq!(s["passed"].as_bool(), Some(s["miss"].is_null()), "{s}");
    }
    // The top, 4000 per second of 1 ms sleeps on one thread, cannot be kept.
    assert_eq!(steps[0]["target_rps"], 4000);
    assert_eq!(steps[0]["passed"], false);
    let answer = &c["answer"];
    let at = answer["step"].as_u64().unwrap() as usize;
    assert_eq!(steps[at]["passed"], true, "{c}");
    assert_eq!(steps[at]["target_rps"], answer["rps"]);
    let above = answer["above_step"].as_u64().unwrap() as usize;
    assert_eq!(steps[above]["passed"], false, "{c}");
    assert!(steps[above]["target_rps"].as_u64() > answer["rps"].as_u64());
    // Every step's requests reached the server (the warmups' too).
    let measured: u64 = steps.iter().map(|s| s["test"]["requests"].as_u64().unwrap()).sum();
    assert!(server.command_calls("debug") >= measured);
    // The answer's achieved rate lies within 70-105% of the server's own capacity, 1 / its
    // mean execution time over the search (the sleep as this machine's scheduler gave it: not
    // 1 ms; a step's own seconds may be quicker than the mean, see below). Its target may lie
    // above it by as much.
    // (Measured: 875 rps, 96% of 910-916/s, 3 of 3 at a load average of 3-4.)
    // When the answer's confirmation failed (beside two hogs and the suite: 750 passed at 745/s,
    // then its confirm got 705 of 750 from the server, and the answer fell back to 500, "not
    // confirmed"), the capacity the search measured is its highest passing step, which the
    // answer is not above.
    let usec = server.usec_per_call("debug").unwrap();
    let own = 1e6 / usec;
    let best = steps.iter().filter(|s| s["passed"] == true).max_by_key(|s| s["target_rps"].as_u64()).unwrap();
    let share = f(&best["achieved_rps"]) / own;
    let target = f(&best["target_rps"]) / own;
    eprintln!(
        "answer {} rps (confirmed {}), the best passing step achieved {:.0}% of the server's own capacity, {own:.0}/s (usec_per_call {usec})",
        answer["rps"],
        answer["confirmed"],
        share * 100.0
    );
    if let Some(s) = machine_bounded(c, &server) {
        // Three searches held down by this machine: its answer is this machine's, which the
        // server's share does not measure; it still cannot exceed the server's capacity.
        eprintln!("after {searches} searches the machine still limited a step the server could keep: {s}");
        assert!(share <= 1.05 && target <= 1.05, "{:.0}% of {own:.0}/s: {c}", share * 100.0);
    } else {
        // The capacity is the mean over the whole search, a step's over its own seconds: on a
        // loaded machine a step in a quieter moment achieved 101% of the search's 860/s
        // (beside two CPU hogs, two builds and the suite).
        assert!((0.7..=1.05).contains(&share) && target <= 1.05, "{:.0}% of {own:.0}/s: {c}", share * 100.0);
    }
    assert!(answer["rps"].as_u64() <= best["target_rps"].as_u64(), "{c}");
    if answer["confirmed"] == true {
        assert_eq!(best["target_rps"], answer["rps"], "{c}");
    } else {
        assert!(c["line"].as_str().unwrap().contains("not confirmed"), "{c}");
    }
    // The JSON's tests are the steps, each tagged with its rate.
    assert_eq!(doc["tests"].as_array().unwrap().len(), steps.len());
    let rps = answer["rps"].as_u64().unwrap();
    let line = c["line"].as_str().unwrap();
    assert!(
        line.starts_with(&format!(
            "DEBUG SLEEP 0.001: {} requests per second meet p99<=250ms",
            thousands(rps)
        )),
        "{line}"
    );
    assert!(out.stdout.contains(line), "{}", out.stdout);
    assert!(out.stdout.contains("  step     role  target rps"), "{}", out.stdout);
    // The curve: latency against the achieved rate, the objective, the answer, the failures.
    let svg = plot(&json, &[]);
    for want in [
        ">Capacity: latency against achieved throughput<",
        ">achieved throughput (requests per second)<",
        ">objective p99&lt;=250ms<",
        &format!(">answer {rps} rps<"),
        ">failed steps",
        ">DEBUG SLEEP 0.001 service p99<",
    ] {
        assert!(svg.contains(want), "{want} is missing from\n{svg}");
    }
}

/// `respbench plot FILE --charts capacity` (and `extra`): the SVG, checked to render.
fn plot(json: &Path, extra: &[&str]) -> String {
    let svg = json.with_extension("svg");
    let mut args = vec!["plot", json.to_str().unwrap(), "--charts", "capacity", "-o", svg.to_str().unwrap()];
    args.extend(extra);
    let out = respbench().run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    let png = json.with_extension("png");
    let rendered = std::process::Command::new("rsvg-convert")
        .args([svg.as_os_str(), "-o".as_ref(), png.as_os_str()])
        .status()
        .expect("rsvg-convert (librsvg2-bin) renders the chart");
    assert!(rendered.success());
    assert!(std::fs::metadata(&png).unwrap().len() > 0);
    std::fs::read_to_string(&svg).unwrap()
}

/// A plain `--rps a,b,c` run draws on the same chart, against the achieved rate.
fn plain_rate_steps_plot_against_the_achieved_rate(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("capacity", "steps");
    let out = tool.run(
        &[
            "-p",
            &port,
            "-t",
            "get",
            "-c",
            "4",
            "--rps",
            "200,400,800",
            "--duration",
            "300ms",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let svg = plot(&json, &[]);
    assert!(svg.contains(">Open loop: latency against achieved throughput<"), "{svg}");
    assert!(svg.contains(">GET p99<") && svg.contains(">GET service p99<"), "{svg}");
    assert!(!svg.contains("objective"), "{svg}");
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let digits: Vec<char> = s.chars().collect();
    digits.rchunks(3).rev().map(|g| g.iter().collect::<String>()).collect::<Vec<_>>().join(",")
}

/// `DEBUG SLEEP 0.3` against p99 <= 250 ms (above what any client's own pauses reach, so the
/// search runs): every step fails, down to the range's low end, and the run exits 1 naming it
/// and its p99. p99 <= 1 µs, below this machine's own pauses, is refused before any step, with
/// the figure.
fn an_unreachable_objective_exits_1(tool: Tool) {
    let server = RedisServer::start_with(&[("enable-debug-command", "yes")]);
    let port = server.port().to_string();
    let json = json_path("capacity", "unreachable");
    let out = tool.run(
        &[
            "-p",
            &port,
            "-c",
            "2",
            "--slo",
            "p99<=250ms",
            "--rps",
            "200-800",
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
            "--json",
            json.to_str().unwrap(),
            "DEBUG",
            "SLEEP",
            "0.3",
        ],
        T,
    );
    if refused_as_unmeasurable(&out, "p99<=250ms") {
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("DEBUG SLEEP 0.3: no rate tried meets p99<=250ms: the lowest, 200 rps, had p99 "),
        "{}",
        out.dump()
    );
    let doc = read(&json);
    let c = &doc["capacity"][0];
    assert_eq!(c["answer"], Value::Null);
    let lowest = c["unreachable"]["lowest_step"].as_u64().unwrap() as usize;
    assert_eq!(c["steps"][lowest]["target_rps"], 200);
    let rates: Vec<u64> =
        c["steps"].as_array().unwrap().iter().map(|s| s["target_rps"].as_u64().unwrap()).collect();
    assert_eq!(rates, [800, 400, 200]);
    // --csv: the header and one row per step, the same steps.
    let csv = tool.run(
        &[
            "-p",
            &port,
            "-c",
            "2",
            "--slo",
            "p99<=250ms",
            "--rps",
            "200-800",
            "--duration",
            "300ms",
            "--warmup",
            "0",
            "--csv",
            "DEBUG",
            "SLEEP",
            "0.3",
        ],
        T,
    );
    assert_eq!(csv.status.code(), Some(1), "{}", csv.dump());
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert!(
        lines[0].starts_with("\"test\",\"step\",\"role\",\"target_rps\",\"achieved_rps\""),
        "{}",
        csv.stdout
    );
    assert_eq!(lines.len(), 4, "{}", csv.stdout);
    assert!(lines[1].starts_with("\"DEBUG SLEEP 0.3\",\"1\",\"bracket\",\"800\","), "{}", csv.stdout);
    assert!(lines[3].ends_with(",\"false\",\"false\""), "{}", csv.stdout);
    // Tighter than this machine can measure: refused, exit 1, no step.
    let refused =
        tool.run(&["-p", &port, "--slo", "p99<=1us", "--rps", "200-800", "--duration", "300ms", "PING"], T);
    assert_eq!(refused.status.code(), Some(1), "{}", refused.dump());
    assert!(
        refused.stderr.contains("p99<=1us cannot be measured on this client: its own p99 pause is "),
        "{}",
        refused.dump()
    );
    assert!(!refused.stdout.contains("bracket"), "{}", refused.dump());
}

/// Unix seconds `lead` from now, with a fraction.
fn start_at(lead: Duration) -> String {
    let us = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + lead).as_micros() as u64;
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// Two workers search `--rps 200-3000` as a ladder of 4 rates, each step at the same instant
/// on both; `respbench merge` judges each step again on the merged histograms, at the fleet's
/// rate. A worker without --start-at or a range is refused with the reason.
fn workers_search_a_ladder_in_lockstep(tool: Tool) {
    let server = debug_server();
    let port = server.port().to_string();
    // The lead leaves room for the 3 s each search first measures its client's own pauses in.
    let at = start_at(Duration::from_secs(8));
    let base = [
        "-p",
        &port,
        "-c",
        "8",
        "--slo",
        "p99<=250ms",
        "--rps",
        "200-3000",
        "--slo-steps",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "100ms",
        "--drain-grace",
        "200ms",
    ];
    let paths: Vec<PathBuf> = (0..2).map(|i| json_path("capacity", &format!("worker{i}"))).collect();
    let running: Vec<_> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let worker = format!("{i}/2");
            let mut a: Vec<&str> = base.to_vec();
            a.extend([
                "--start-at",
                &at,
                "--worker",
                &worker,
                "--json",
                p.to_str().unwrap(),
                "DEBUG",
                "SLEEP",
                "0.001",
            ]);
            tool.spawn(&a)
        })
        .collect();
    let mut refused = false;
    for r in running {
        let out = r.wait(T);
        if refused_as_unmeasurable(&out, "p99<=250ms") {
            refused = true;
            continue;
        }
        assert!(out.status.success(), "{}", out.dump());
    }
    if refused {
        return;
    }
    let docs: Vec<Value> = paths.iter().map(|p| read(p)).collect();
    let start_of = |d: &Value, k: usize| d["capacity"][0]["steps"][k]["test"]["start_us"].as_u64().unwrap();
    for d in &docs {
        let steps = d["capacity"][0]["steps"].as_array().unwrap();
        let rates: Vec<u64> = steps.iter().map(|s| s["target_rps"].as_u64().unwrap()).collect();
        // The fleet's rates, the same ladder on each; each worker sent half.
        assert_eq!(rates, [200, 1133, 2066, 3000]);
        assert!(steps.iter().all(|s| s["role"] == "ladder"));
        assert_eq!(steps[0]["test"]["target_rps"], 100);
    }
    // Lockstep: each step began at the same instant on both workers (within the 100 ms a
    // busy machine may take to connect both), one slot after the other.
    for k in 0..4 {
        let (a, b) = (start_of(&docs[0], k), start_of(&docs[1], k));
        assert!(a.abs_diff(b) < 500_000, "step {k}: {a} vs {b}");
    }
    let merged_path = json_path("capacity", "merged");
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--json", merged_path.to_str().unwrap()]);
    let out = respbench().run(&args, T);
    check_json_independently(&merged_path);
    let merged = read(&merged_path);
    let c = &merged["capacity"][0];
    let steps = c["steps"].as_array().unwrap();
    for (k, s) in steps.iter().enumerate() {
        // Each merged step holds both workers' requests.
        let sum: u64 =
            docs.iter().map(|d| d["capacity"][0]["steps"][k]["test"]["requests"].as_u64().unwrap()).sum();
        assert_eq!(s["test"]["requests"].as_u64(), Some(sum));
        assert_eq!(s["test"]["target_rps"].as_u64(), s["target_rps"].as_u64());
    }
    // Each merged step judged again: its pass is its own figures against the objective and the
    // 2% rule at the fleet's rate (what a busy machine does to a rung is its verdict's).
    for s in steps {
        let target = s["target_rps"].as_f64().unwrap();
        let kept = (s["achieved_rps"].as_f64().unwrap() - target).abs() <= 0.02 * target;
        let met = s["values_us"][0].as_f64().unwrap() <= 250_000.0;
        assert_eq!(s["passed"].as_bool(), Some(kept && met), "{s}");
        assert_eq!(s["latency_us"]["p99"].as_f64(), s["values_us"][0].as_f64());
    }
    // The top rung, 3000 per second of 1 ms sleeps on one thread, cannot be kept.
    assert_eq!(steps[3]["passed"], false, "{c}");
    // The answer, when the fleet met the objective, is the highest pass below the first failure.
    if c["answer"].is_object() {
        let answer = c["answer"]["step"].as_u64().unwrap() as usize;
        let above = c["answer"]["above_step"].as_u64().unwrap() as usize;
        assert!(steps[..=answer].iter().all(|s| s["passed"] == true), "{c}");
        assert_eq!((above, &steps[above]["passed"]), (answer + 1, &Value::Bool(false)), "{c}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert_eq!(steps[0]["passed"], false, "{c}");
    }
    assert!(out.stdout.contains(c["line"].as_str().unwrap()), "{}", out.stdout);
    // What a lockstep cannot be made from is refused before connecting.
    let no_range = tool.run(&["-p", &port, "--slo", "p99<=1ms", "--worker", "0/2", "--start-at", &at], T);
    assert_eq!(no_range.status.code(), Some(1));
    assert!(no_range.stderr.contains("--worker without --rps LOW-HIGH"), "{}", no_range.dump());
    let no_start = tool.run(&["-p", &port, "--slo", "p99<=1ms", "--rps", "200-3000", "--worker", "0/2"], T);
    assert!(no_start.stderr.contains("--worker without --start-at"), "{}", no_start.dump());
}
