//! Scenario files (`respbench run FILE.toml`): client groups at the same time against a real
//! redis-server, each group's counts held against the server's `INFO commandstats`; files that
//! are wrong refused before connecting, naming the line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use respbench_tests::{
    check_json_independently, free_port, json_path, read_hlog_independently, respbench, take_document,
    RedisServer,
};

const T: Duration = Duration::from_secs(120);

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name)
}

/// A scenario file of `text` in the temp directory, unique per test.
fn scenario(tag: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("respbench-scenario-{}-{tag}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

fn connections(server: &RedisServer) -> u64 {
    server.info_field("stats", "total_connections_received").and_then(|v| v.parse().ok()).expect("INFO stats")
}

/// The Done-when of the issue: `examples/readers-writers.toml` reports both groups, their counts
/// are the server's GET and SET calls, the writers held 500/s within 2% (the server's SET calls
/// over the duration the document gives), and the test's counts are the groups' added up.
#[test]
fn readers_and_writers_run_at_once() {
    let server = RedisServer::start();
    let json = json_path("scenario", "rw");
    let port = server.port().to_string();
    let file = example("readers-writers.toml");
    let out =
        respbench().run(&["run", file.to_str().unwrap(), "-p", &port, "--json", json.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("====== readers-writers ======"), "{}", out.dump());
    assert!(out.stdout.contains("  25 parallel clients"), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let test = &doc["tests"][0];
    let groups = test["groups"].as_array().expect("groups");
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["readers", "writers"]);
    let (readers, writers) = (&groups[0], &groups[1]);
    let count = |v: &serde_json::Value| v["requests"].as_u64().unwrap();
    assert_eq!(count(readers), server.command_calls("get"), "{}", out.dump());
    assert_eq!(count(writers), server.command_calls("set"), "{}", out.dump());
    assert_eq!(count(test), count(readers) + count(writers));
    assert!(count(readers) > 0, "{}", out.dump());
    // The writers' open loop at 500/s over their measured span: the server counted their SETs.
    assert_eq!(writers["target_rps"], 500);
    assert!(readers.get("target_rps").is_none(), "a closed loop has no target: {readers}");
    let rate = server.command_calls("set") as f64 / writers["duration_s"].as_f64().unwrap();
    assert!((rate - 500.0).abs() <= 10.0, "writers at {rate:.1}/s, not 500/s within 2%\n{}", out.dump());
    let arrivals = &writers["arrivals"];
    assert_eq!(arrivals["due"], arrivals["completed"], "every SET due went: {writers}");
    // Each group its own histogram; the test's is theirs together.
    let max = |v: &serde_json::Value| v["latency_ms"]["max"].as_f64().unwrap();
    assert_eq!(max(test), max(readers).max(max(writers)));
}

/// `-q` and `--csv` have a line (a row) per group after the test's, named `TEST/GROUP`, whose
/// counts the server agrees with.
#[test]
fn quiet_and_csv_have_a_line_per_group() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = scenario(
        "quiet",
        "[phases]\nrequests = 2000\n\n[[groups]]\nname = \"pushes\"\nclients = 4\ntest = \"lpush\"\n\n\
         [[groups]]\nname = \"incrs\"\nclients = 2\ncommand = [\"INCR\", \"counter\"]\n",
    );
    let out = respbench().run(&["run", file.to_str().unwrap(), "-p", &port, "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().filter(|l| l.contains("requests per second")).collect();
    assert_eq!(lines.len(), 3, "{}", out.dump());
    assert!(
        lines[1].starts_with(&format!("respbench-scenario-{}-quiet/pushes: ", std::process::id())),
        "{}",
        out.dump()
    );
    assert!(lines[2].contains("-quiet/incrs: "), "{}", out.dump());
    // -n is each group's: every group sends its own 2000.
    assert_eq!(server.command_calls("lpush"), 2000);
    assert_eq!(server.command_calls("incr"), 2000);
    assert_eq!(server.cli(&["GET", "counter"]).trim(), "2000");
    let out = respbench().run(&["run", file.to_str().unwrap(), "-p", &port, "--csv"], T);
    assert!(out.status.success(), "{}", out.dump());
    let rows: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(rows.len(), 4, "a header, the test and two groups\n{}", out.dump());
    assert!(
        rows[2].contains("-quiet/pushes\",\"") && rows[3].contains("-quiet/incrs\",\""),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("incr"), 4000);
    let _ = std::fs::remove_file(file);
}

/// An unknown key, a wrong type, a group sending two things or an option a group cannot take:
/// refused before connecting, with the file, line and column.
#[test]
fn a_wrong_file_is_refused_naming_its_line() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let before = connections(&server);
    let cases = [
        (
            "unknown",
            "[[groups]]\nname = \"a\"\ntest = \"get\"\nrate = 5\n",
            ":4:1: unknown field `rate`, expected one of",
        ),
        (
            "type",
            "[[groups]]\nname = \"a\"\nclients = \"x\"\ntest = \"get\"\n",
            ":3:11: invalid type: string \"x\", expected u64",
        ),
        (
            "two",
            "[phases]\n\n[[groups]]\nname = \"a\"\ntest = \"get\"\nmix = \"get:1\"\n",
            ":3:1: group 'a': give exactly one of",
        ),
        ("option", "[[groups]]\nname = \"a\"\nmix = \"nosuch:1\"\n", ":1:1: group 'a': "),
        (
            "phase",
            "[phases]\nlength = \"5s\"\n[[groups]]\nname = \"a\"\ntest = \"get\"\n",
            ":2:1: unknown field `length`",
        ),
        (
            "slo",
            "[[groups]]\nname = \"a\"\ntest = \"get\"\nslo = \"p99<2\"\n",
            ":1:1: group 'a': invalid value 'p99<2' for --slo: 'p99<2': expected PERCENTILE<=LIMIT",
        ),
        (
            "search",
            "[[groups]]\nname = \"a\"\ntest = \"get\"\nsearch = \"1000-2000\"\nrps = 5\n",
            ":1:1: group 'a': search is the range its rate is searched in for its slo: give slo, and not rps",
        ),
        (
            "ramp-length",
            "[[groups]]\nname = \"a\"\ntest = \"get\"\nramp = \"rps 100..300 step 100 every 1s\"\n",
            ":1:1: group 'a': a group's ramp runs in the test's time: give the phases' duration",
        ),
        (
            "ramp-clients",
            "[phases]\nduration = \"2s\"\n[[groups]]\nname = \"a\"\ntest = \"get\"\n\
             ramp = \"clients 1..3 step 1 every 1s\"\n",
            ":3:1: group 'a': a ramp of clients does not go with a scenario's groups",
        ),
    ];
    for (tag, text, said) in cases {
        let file = scenario(tag, text);
        let out = respbench().run(&["run", file.to_str().unwrap(), "-p", &port], T);
        assert_eq!(out.status.code(), Some(1), "{tag}: {}", out.dump());
        assert!(out.stderr.contains(&format!("{}{said}", file.display())), "{tag}: {}", out.dump());
        assert!(out.stdout.is_empty(), "{tag}: {}", out.dump());
        let _ = std::fs::remove_file(file);
    }
    // The one connection since is the reading's own (redis-cli's INFO).
    assert_eq!(connections(&server), before + 1, "a refused file connects to nothing");
    let out = respbench().run(&["run", "/nonexistent/rw.toml"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("/nonexistent/rw.toml: cannot open"), "{}", out.dump());
}

/// `--print-scenario` prints the file a command line stands for (the outputs and the password
/// left to the command line), and `respbench run` of it sends what the command line would; its
/// `--json` records the file, and `run --from` the document runs it again under the same name.
#[test]
fn a_command_line_becomes_a_file_and_a_result_runs_again() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = ["-p", &port, "-c", "3", "-t", "incr", "-n", "300", "-q", "--print-scenario"];
    let out = respbench().run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(
        out.stdout.starts_with("# Not in the file: give them on the command line: -q\n"),
        "{}",
        out.dump()
    );
    assert!(
        out.stdout.contains("[[groups]]\nname = \"incr\"\nclients = 3\ntest = \"incr\"\n"),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("incr"), 0, "printing runs nothing");
    let file = scenario("printed", &out.stdout);
    let json = json_path("scenario", "from");
    let out = respbench().run(&["run", file.to_str().unwrap(), "-q", "--json", json.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("incr"), 300);
    check_json_independently(&json);
    let _ = std::fs::remove_file(&file);
    let out = respbench().run(&["run", "--from", json.to_str().unwrap(), "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("incr"), 600);
    let name = format!("respbench-scenario-{}-printed: ", std::process::id());
    assert!(out.stdout.starts_with(&name), "the same test name: {}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    assert_eq!(doc["scenario"]["file"], file.to_str().unwrap());
    let out = respbench().run(&["run", "--from", "/nonexistent/out.json"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("cannot read /nonexistent/out.json"), "{}", out.dump());
}

/// The command line's connection options override the file's: a file naming a port where
/// nothing listens runs against the `-p` given.
#[test]
fn the_command_line_overrides_the_file() {
    let server = RedisServer::start();
    let file = scenario(
        "override",
        &format!(
            "[connection]\nhost = \"127.0.0.1\"\nport = {}\n\n[phases]\nrequests = 500\n\n[[groups]]\nname = \"a\"\nclients = 2\ntest = \"incr\"\n",
            free_port()
        ),
    );
    let port = server.port().to_string();
    let out = respbench().run(&["run", file.to_str().unwrap(), "-p", &port, "-q", "--backend", "smol"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("incr"), 500);
    let _ = std::fs::remove_file(file);
}

/// `examples/cache-aside.toml` on an empty server: each miss was followed by a SET of its key,
/// so the SETs are the misses, as the server's SET calls and keyspace_misses say; the GETs are
/// its hits and misses, the requests both; the keys carry the file's TTL.
#[test]
fn cache_aside_sets_each_key_that_missed() {
    let server = RedisServer::start();
    let json = json_path("scenario", "cache");
    let port = server.port().to_string();
    let file = example("cache-aside.toml");
    let args =
        ["run", file.to_str().unwrap(), "-p", &port, "--duration", "2s", "--json", json.to_str().unwrap()];
    let out = respbench().run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("  cache-aside: "), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let test = &doc["tests"][0];
    let cache = &test["cache_aside"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("{v}"));
    let (hits, misses, sets) = (n(&cache["hits"]), n(&cache["misses"]), n(&cache["sets"]));
    assert_eq!(sets, misses, "{cache}");
    assert_eq!(sets, server.command_calls("set"), "{}", out.dump());
    let server_misses: u64 = server.info_field("stats", "keyspace_misses").unwrap().parse().unwrap();
    assert_eq!(misses, server_misses, "{}", out.dump());
    assert_eq!(hits + misses, server.command_calls("get"), "{}", out.dump());
    assert_eq!(n(&test["requests"]), hits + misses + sets);
    assert_eq!(n(&test["nil_replies"]), misses);
    // Every key of the 1,000 was missed once at least, and none twice once set (a miss of a key
    // another connection was filling at that moment aside).
    assert!((1000..1100).contains(&misses), "{cache}");
    assert!(hits > misses, "{cache}");
    let p50 = cache["miss_latency_ms"]["p50"].as_f64().unwrap();
    assert!(p50 > 0.0, "{cache}");
    let ttl: i64 = server.cli(&["TTL", "key:000000000007"]).trim().parse().unwrap();
    assert!((1..=60).contains(&ttl), "TTL {ttl}");
}

/// Every file under examples/ runs (1 s each, `--duration` overriding the file's, no warm-up)
/// against a server of its own, and its groups' requests add up to the server's calls of their
/// commands (a cache-aside group's SETs among them; a search's steps together). A searched
/// group's objective is loosened to `p99<=2s` and its range lowered to 200-400 a second in a
/// copy of its file: on a busy machine a tight objective is refused as tighter than the client's
/// own pauses (47 ms at p99 seen here), and the example's 1,000-100,000 was beyond what a loaded
/// debug build achieves in every step (36,000 to 100,000 asked, 28,429 to 46,155 achieved, no
/// rate held: exit 1 beside two CPU hogs); the search is to run whole.
#[test]
fn every_example_runs_and_the_server_agrees() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    let scratch = respbench_tests::Scratch::new("respbench-examples");
    for file in files {
        let server = RedisServer::start();
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let json = json_path("example", &name);
        let text = std::fs::read_to_string(&file).unwrap();
        let file = match text.contains("\nsearch = ") {
            false => file,
            true => {
                let loose: Vec<String> = text
                    .lines()
                    .map(|l| match l {
                        l if l.starts_with("slo = ") => "slo = \"p99<=2s\"".into(),
                        l if l.starts_with("search = ") => "search = \"200-400\"".into(),
                        l => l.to_string(),
                    })
                    .collect();
                // Under its own name: the test is named after the file.
                let copy = scratch.join(format!("{name}.toml"));
                std::fs::write(&copy, loose.join("\n")).unwrap();
                copy
            }
        };
        let port = server.port().to_string();
        let args = [
            "run",
            file.to_str().unwrap(),
            "-p",
            &port,
            "--duration",
            "1s",
            "--warmup",
            "0",
            "--json",
            json.to_str().unwrap(),
        ];
        let out = respbench().run(&args, T);
        assert!(out.status.success(), "{name}: {}", out.dump());
        let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
        if let Some(search) = doc["capacity"].as_array() {
            // The readers' rate found, the writers beside them.
            assert_eq!(search[0]["test"], format!("{name}/readers"), "{name}: {}", out.dump());
            assert!(search[0]["answer"]["rps"].as_u64().is_some_and(|r| r >= 200), "{}", search[0]);
        }
        let mut requests: std::collections::BTreeMap<String, u64> = Default::default();
        for test in doc["tests"].as_array().unwrap() {
            let groups = match test["groups"].as_array() {
                Some(g) => g.clone(),
                None => vec![test.clone()],
            };
            let mut names: Vec<String> = Vec::new();
            for g in &groups {
                let command = g["command"].as_str().unwrap();
                names.push(command.split("\r\n").nth(2).unwrap().to_lowercase());
                if g.get("cache_aside").is_some() {
                    names.push("set".into());
                }
                assert!(g["requests"].as_u64().unwrap() > 0, "{name}: {g}");
            }
            names.sort();
            names.dedup();
            *requests.entry(names.join(",")).or_default() += test["requests"].as_u64().unwrap();
        }
        for (names, requests) in requests {
            let calls: u64 = names.split(',').map(|n| server.command_calls(n)).sum();
            assert_eq!(requests, calls, "{name} {names}: {}", out.dump());
        }
    }
}

/// A capacity search for one group (#49 item 3): the readers' rate is searched between 200 and
/// 400 GETs a second under an objective any machine meets (p99 within 2 s) while the writers
/// hold 200 SETs a second in every step. The answer, in `capacity[].test` `TEST/readers`, is a
/// rate of the range that a step passed at (the top unless a busy machine kept a 1 s step below
/// 98% of its rate: 381 of 400 seen once); each step's readers were asked for the step's rate
/// and the writers for theirs; the steps' counts add up to the server's calls.
#[test]
fn a_search_finds_one_groups_rate_while_the_others_hold_theirs() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = scenario(
        "search",
        "[phases]\nduration = \"2s\"\n\n[[groups]]\nname = \"readers\"\nclients = 4\ntest = \"get\"\n\
         slo = \"p99<=2s\"\nsearch = \"200-400\"\n\n[[groups]]\nname = \"writers\"\nclients = 2\n\
         test = \"set\"\nrps = 200\n",
    );
    let json = json_path("scenario", "search");
    let out = respbench()
        .run(&["run", file.to_str().unwrap(), "-p", &port, "-q", "--json", json.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.dump());
    let title = file.file_stem().unwrap().to_str().unwrap();
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let search = &doc["capacity"][0];
    assert_eq!(search["test"], format!("{title}/readers"), "{search}");
    let answer = search["answer"]["rps"].as_u64().unwrap_or_else(|| panic!("no answer: {search}"));
    assert!((200..=400).contains(&answer), "{search}");
    let line = format!("{title}/readers: {answer} requests per second meet p99<=2s");
    assert!(out.stdout.contains(&line), "{}", out.dump());
    assert_eq!(doc["config"]["slo"]["range_rps"], serde_json::json!([200, 400]));
    let tests = doc["tests"].as_array().unwrap();
    let steps = search["steps"].as_array().unwrap();
    assert!(tests.len() >= steps.len() && !steps.is_empty(), "{search}");
    let (mut gets, mut sets) = (0, 0);
    for t in tests {
        let (readers, writers) = (&t["groups"][0], &t["groups"][1]);
        assert_eq!(writers["target_rps"], 200, "{writers}");
        gets += readers["requests"].as_u64().unwrap();
        sets += writers["requests"].as_u64().unwrap();
    }
    for s in steps {
        assert!(tests.iter().any(|t| t["groups"][0]["target_rps"] == s["target_rps"]), "{s}");
    }
    assert!(steps.iter().any(|s| s["target_rps"] == answer && s["passed"] == true), "{search}");
    assert_eq!(gets, server.command_calls("get"), "{}", out.dump());
    assert_eq!(sets, server.command_calls("set"), "{}", out.dump());
    let _ = std::fs::remove_file(file);
}

/// `--hgrm PREFIX` writes each group's distribution beside the test's, `PREFIX` + the test's tag
/// + `.GROUP.hgrm`: each file's total count is the server's calls of its group's command.
#[test]
fn hgrm_has_a_file_per_group() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let dir = std::env::temp_dir().join(format!("respbench-scenario-hgrm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = format!("{}/", dir.display());
    let file = example("readers-writers.toml");
    let args = ["run", file.to_str().unwrap(), "-p", &port, "--duration", "1s", "-q", "--hgrm", &prefix];
    let out = respbench().run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    let total = |name: &str| -> u64 {
        let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let line = text.lines().find(|l| l.contains("Total count")).unwrap();
        line.rsplit('=').next().unwrap().trim().trim_end_matches(']').trim().parse().unwrap()
    };
    let (get, set) = (server.command_calls("get"), server.command_calls("set"));
    assert_eq!(total("readers-writers.readers.hgrm"), get, "{}", out.dump());
    assert_eq!(total("readers-writers.writers.hgrm"), set, "{}", out.dump());
    assert_eq!(total("readers-writers.hgrm"), get + set);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `respbench compare` of two runs of a scenario compares group by group: each group is a test
/// named `TEST/GROUP`, its rate that group's in each document.
#[test]
fn compare_goes_group_by_group() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = example("readers-writers.toml");
    let docs: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|side| {
            let json = json_path("scenario-compare", side);
            let args = ["run", file.to_str().unwrap(), "-p", &port, "--duration", "1s", "-q", "--json"];
            let out = respbench().run(&[&args[..], &[json.to_str().unwrap()]].concat(), T);
            assert!(out.status.success(), "{}", out.dump());
            json
        })
        .collect();
    let out = respbench().run(&["compare", docs[0].to_str().unwrap(), docs[1].to_str().unwrap()], T);
    assert!(out.stdout.contains("\nreaders-writers/readers: 1 runs of A, 1 of B"), "{}", out.dump());
    assert!(out.stdout.contains("\nreaders-writers/writers @ 500 rps: 1 runs of A"), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&take_document(&docs[0])).unwrap();
    let _ = std::fs::remove_file(&docs[1]);
    let readers = doc["tests"][0]["groups"][0]["rps"].as_f64().unwrap();
    let section = out.stdout.split("readers-writers/readers:").nth(1).unwrap();
    let rps_line = section.lines().find(|l| l.trim_start().starts_with("rps")).unwrap();
    let a: f64 = rps_line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(a, readers.round(), "{rps_line}");
}

/// `respbench plot` of a scenario's document draws a series per group (named `TEST/GROUP`) beside
/// the test's.
#[test]
fn plot_draws_a_series_per_group() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("scenario-plot", "rw");
    let file = example("readers-writers.toml");
    let args = ["run", file.to_str().unwrap(), "-p", &port, "--duration", "2s", "-q", "--json"];
    let out = respbench().run(&[&args[..], &[json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let out = respbench().run(&["plot", "--charts", "series", "-o", "-", json.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.dump());
    for label in [">readers-writers<", ">readers-writers/readers<", ">readers-writers/writers @ 500 rps<"] {
        assert!(out.stdout.contains(label), "{label}: {}", &out.stdout[..out.stdout.len().min(2000)]);
    }
    let _ = take_document(&json);
}

/// `--hlog` with a scenario: each group's seconds tagged `TEST.GROUP`, read by HdrHistogram's
/// Python reader: each tag's count is the server's calls of its group's command.
#[test]
fn hlog_tags_each_group() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let log = std::env::temp_dir().join(format!("respbench-scenario-{}.hlog", std::process::id()));
    let file = example("readers-writers.toml");
    let args = ["run", file.to_str().unwrap(), "-p", &port, "--duration", "2s", "-q", "--hlog"];
    let out = respbench().run(&[&args[..], &[log.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let tags = read_hlog_independently(&log);
    let _ = std::fs::remove_file(&log);
    let count = |tag: &str| tags.iter().find(|t| t.0 == tag).unwrap_or_else(|| panic!("{tag}: {tags:?}")).1;
    assert_eq!(count("readers-writers.readers"), server.command_calls("get"), "{tags:?}");
    assert_eq!(count("readers-writers.writers"), server.command_calls("set"), "{tags:?}");
}

/// A group's latency objective (`slo`, #49 item 2): each group judged on its own figures, the
/// verdict in -q, the verbose table and the JSON, and the run exits 1 when one is missed. The
/// readers' loose objective holds, the writers' (a median of 1 µs, below any round trip) is
/// missed; each group's count is the server's.
#[test]
fn each_group_is_judged_on_its_own_objective() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = scenario(
        "slo",
        "[phases]\nrequests = 3000\n\n[[groups]]\nname = \"readers\"\nclients = 4\ntest = \"get\"\n\
         slo = \"p99.9<=10s\"\n\n[[groups]]\nname = \"writers\"\nclients = 2\ntest = \"set\"\n\
         slo = \"p50<=1us,p99<=10s\"\n",
    );
    let json = json_path("scenario", "slo");
    let out = respbench()
        .run(&["run", file.to_str().unwrap(), "-p", &port, "-q", "--json", json.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let title = file.file_stem().unwrap().to_str().unwrap();
    let met = format!("{title}/readers: objective p99.9<=10s met (p99.9 ");
    assert!(out.stdout.lines().any(|l| l.starts_with(&met)), "{}", out.dump());
    let missed = format!("{title}/writers: objective p50<=1us,p99<=10s missed: p50 ");
    assert!(out.stdout.lines().any(|l| l.starts_with(&missed) && l.ends_with(" > 1us")), "{}", out.dump());
    // On stderr, only the objective missed.
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
    assert!(out.stderr.starts_with(&missed), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let groups = doc["tests"][0]["groups"].as_array().expect("groups");
    let (readers, writers) = (&groups[0], &groups[1]);
    assert_eq!(readers["requests"].as_u64(), Some(server.command_calls("get")));
    assert_eq!(writers["requests"].as_u64(), Some(server.command_calls("set")));
    assert_eq!(readers["slo"]["met"], true, "{readers}");
    assert_eq!(writers["slo"]["met"], false, "{writers}");
    let o = &writers["slo"]["objectives"];
    assert_eq!((o[0]["held"].as_bool(), o[1]["held"].as_bool()), (Some(false), Some(true)), "{o}");
    // The value judged is the group's own median, as its latency_ms says it.
    let p50_us = writers["latency_ms"]["p50"].as_f64().unwrap() * 1000.0;
    assert!((o[0]["value_us"].as_f64().unwrap() - p50_us).abs() <= 1.0, "{o} against p50 {p50_us} us");
    assert!(p50_us > 1.0, "{writers}");
    let _ = std::fs::remove_file(file);
}

/// A group's rate ramp (`ramp`, `--ramp rps`'s syntax, #49 item 2): the writers go 100, 200,
/// then 300 SETs a second while the readers hold 1,000 GETs a second; each group's count is the
/// server's, the writers' arrivals are the ramp's (100 + 200 + 300), each of its seconds is its
/// step's level, the readers' each 1,000, and the test has no ramp of its own.
#[test]
fn a_group_ramps_its_rate_while_the_others_hold_theirs() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = scenario(
        "ramp",
        "[phases]\nduration = \"3s\"\n\n[[groups]]\nname = \"readers\"\nclients = 4\ntest = \"get\"\nrps = 1000\n\n\
         [[groups]]\nname = \"writers\"\nclients = 2\ntest = \"set\"\n\
         ramp = \"rps 100..300 step 100 every 1s\"\n",
    );
    let json = json_path("scenario", "ramp");
    let out = respbench()
        .run(&["run", file.to_str().unwrap(), "-p", &port, "-q", "--json", json.to_str().unwrap()], T);
    assert!(out.status.success(), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let test = &doc["tests"][0];
    assert!(test.get("ramp").is_none(), "the test has no ramp of its own: {}", test["ramp"]);
    let groups = test["groups"].as_array().expect("groups");
    let (readers, writers) = (&groups[0], &groups[1]);
    assert_eq!(readers["requests"].as_u64(), Some(server.command_calls("get")));
    assert_eq!(writers["requests"].as_u64(), Some(server.command_calls("set")));
    // The writers were asked for the steps' mean rate, and their arrivals are the steps'.
    assert_eq!(writers["target_rps"], 200, "{writers}");
    let due = writers["arrivals"]["due"].as_u64().unwrap();
    assert!(due.abs_diff(600) <= 6, "writers' arrivals {due}, not 100 + 200 + 300 within 1%");
    assert_eq!(writers["arrivals"]["completed"].as_u64(), Some(due), "{writers}");
    let seconds = |g: &serde_json::Value| -> Vec<u64> {
        g["series"].as_array().unwrap().iter().map(|s| s["requests"].as_u64().unwrap()).collect()
    };
    let near = |got: u64, want: u64| got.abs_diff(want) as f64 <= want as f64 * 0.15 + 10.0;
    let (w, r) = (seconds(writers), seconds(readers));
    assert!(w.len() >= 3 && r.len() >= 3, "{w:?} {r:?}");
    for (k, want) in [100, 200, 300].into_iter().enumerate() {
        assert!(near(w[k], want), "writers' second {k}: {} of {want}\n{w:?}", w[k]);
        assert!(near(r[k], 1000), "readers' second {k}: {} of 1000\n{r:?}", r[k]);
    }
    let _ = std::fs::remove_file(file);
}
