//! One run split over worker processes (`--worker I/N`, `--start-at`), merged by `respbench
//! merge`, against a real redis-server: the merged totals are the single command's, the server
//! counts the same, sequential keys and `--preload` cover the keyspace once across the workers,
//! the series line up, and merge refuses a set that is not one whole run. Also the Kubernetes
//! manifest (read by PyYAML) and the Dockerfile (built where a container engine runs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use respbench_tests::{
    check_json_independently, json_path, kubernetes_validate, respbench, yaml_as_json, RedisServer, Tool,
};
use serde_json::Value;

const T: Duration = Duration::from_secs(60);
/// How far ahead `--start-at` is put: enough for four debug processes to start and connect on
/// a busy 2-core machine.
const LEAD: Duration = Duration::from_secs(3);

// The split is the command line's, the same whatever waits for the sockets: once, on mio.
respbench_tests::backend_tests!(every: [], mio: [four_workers_do_what_one_command_says]);

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Unix seconds `LEAD` from now, with a fraction: the `--start-at` of a test's workers.
fn start_at() -> (String, u64) {
    let at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + LEAD;
    let us = at.as_micros() as u64;
    (format!("{}.{:06}", us / 1_000_000, us % 1_000_000), us)
}

/// `--start-at` says on stderr how long it waits and for which instant (it waited silently), and
/// an instant more than a day ahead (a year mistyped: a century) is refused with both figures
/// before connecting, where it waited for it.
#[test]
fn start_at_says_its_wait_and_refuses_more_than_a_day_ahead() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let (at, at_us) = start_at();
    let out = respbench().run(&["-p", &port, "-t", "ping", "-n", "100", "-q", "--start-at", &at], T);
    assert!(out.status.success(), "{}", out.dump());
    let said = format!("--start-at {at}: waiting ");
    let line = out.stderr.lines().find(|l| l.starts_with(&said)).unwrap_or_else(|| panic!("{}", out.dump()));
    let waited: f64 = line[said.len()..].split(' ').next().unwrap().parse().unwrap();
    assert!(waited > 0.0 && waited <= LEAD.as_secs_f64(), "{line}");
    // Rounded to the millisecond as respbench rounds it (1796464050.405947 reads .406).
    let unix = format!("{:.3}", at_us as f64 / 1e6);
    assert!(line.ends_with(&format!("for the instant, Unix {unix}, to begin the measured window")), "{line}");
    let century =
        (SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 100 * 365 * 86_400).to_string();
    let pings = server.command_calls("ping");
    let out = respbench().run(&["-p", &port, "-t", "ping", "-n", "100", "-q", "--start-at", &century], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains(&format!("invalid value '{century}' for --start-at: it is 315359")),
        "{}",
        out.dump()
    );
    assert!(
        out.stderr.contains("more than the 86400 s (24 hours) --start-at waits at most"),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("ping"), pings, "{}", out.dump());
}

/// Runs `count` workers of `args` at once (each `--worker i/count --json FILE`), waits for all
/// and gives their documents' paths.
fn run_workers(tool: &Tool, args: &[&str], count: usize, tag: &str) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = (0..count).map(|i| json_path("workers", &format!("{tag}{i}"))).collect();
    let running: Vec<_> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let worker = format!("{i}/{count}");
            let mut a: Vec<&str> = args.to_vec();
            a.extend(["--worker", &worker, "--json", p.to_str().unwrap()]);
            tool.spawn(&a)
        })
        .collect();
    for r in running {
        let out = r.wait(T);
        assert!(out.status.success(), "{}", out.dump());
    }
    paths
}

/// `respbench merge FILES… --json OUT`: its output, and the merged document when it succeeded.
fn merge(files: &[PathBuf]) -> (respbench_tests::Output, Option<Value>) {
    let out_path = json_path("workers", "merged");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--json", out_path.to_str().unwrap()]);
    let out = respbench().run(&args, T);
    let doc = out.status.success().then(|| {
        check_json_independently(&out_path);
        let d = read(&out_path);
        let _ = std::fs::remove_file(&out_path);
        d
    });
    (out, doc)
}

fn test<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["tests"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name}"))
}

/// `-t set,get -n 10001 -c 10` over four workers that start together: the merged document has
/// exactly 10001 requests per test, as the server counted; each worker did its share (2501 or
/// 2500) on its share of the connections (3 or 2), began its measured window at `--start-at`,
/// and drew its own keys.
fn four_workers_do_what_one_command_says(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let (at, at_us) = start_at();
    let args = ["-p", &port, "-t", "set,get", "-n", "10001", "-c", "10", "-r", "100000", "--seed", "5"];
    let files = run_workers(&tool, &[&args[..], &["--start-at", &at]].concat(), 4, "closed");
    let docs: Vec<Value> = files.iter().map(|p| read(p)).collect();
    let mut shares = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let w = &d["config"]["worker"];
        assert_eq!((w["index"].as_u64(), w["count"].as_u64()), (Some(i as u64), Some(4)), "{w}");
        // The whole run's figures in config, the share under worker.
        assert_eq!(
            (d["config"]["requests"].as_u64(), d["config"]["clients"].as_u64()),
            (Some(10001), Some(10))
        );
        shares.push((w["requests"].as_u64().unwrap(), w["clients"][0].as_u64().unwrap()));
        assert_eq!(test(d, "SET")["requests"].as_u64(), w["requests"].as_u64());
        assert_eq!(test(d, "SET")["connections_opened"].as_u64(), w["clients"][0].as_u64());
        // The measured window begins at the instant (its test's start is the first request's
        // send, microseconds after), or, for a worker a loaded machine started late, when it
        // was ready, which it says.
        let late = d["late_by_s"].as_f64().unwrap_or_else(|| panic!("late_by_s: {}", d["late_by_s"]));
        assert!(late >= 0.0, "{late}");
        assert_eq!(d["config"]["start_at_us"].as_u64(), Some(at_us));
        let began = test(d, "SET")["start_us"].as_u64().unwrap();
        assert!(began >= at_us, "worker {i} began {began}, before {at_us}");
    }
    assert_eq!(shares, [(2501, 3), (2500, 3), (2500, 2), (2500, 2)]);
    let (out, merged) = merge(&files);
    assert!(out.status.success(), "{}", out.dump());
    let merged = merged.unwrap();
    assert_eq!(merged["config"]["workers"].as_u64(), Some(4));
    assert!(merged["config"].get("worker").is_none());
    for (name, command) in [("SET", "set"), ("GET", "get")] {
        let t = test(&merged, name);
        assert_eq!(t["requests"].as_u64(), Some(10001), "{name}");
        assert_eq!(t["connections_opened"].as_u64(), Some(10), "{name}");
        assert_eq!(server.command_calls(command), 10001, "{name} at the server");
    }
    // One --seed, four workers: four different key streams (uniform over 100000 keys, 10001
    // SETs: the same stream four times would write at most 2501 keys).
    assert!(server.dbsize(0) > 9000, "dbsize {}", server.dbsize(0));
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

/// `--rps 2000 --duration 3s` over four workers: each sends 500 per second, the merged target is
/// 2000 (the rate achieved is the schedule's at most), the server saw every request, and the
/// merged series is as long as the longest worker's, each of its seconds the sum of the
/// workers' same second. An event (`--at`) fires on worker 0 only, and the merge carries it,
/// marked as worker 0's, in its document and its text.
#[test]
fn open_loop_workers_merge_into_one_rate_and_one_series() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let (at, _) = start_at();
    let args = [
        "-p",
        &port,
        "-t",
        "get",
        "-c",
        "8",
        "--rps",
        "2000",
        "--duration",
        "3s",
        "--start-at",
        &at,
        "--at",
        "1500ms PING",
    ];
    let files = run_workers(&respbench(), &args, 4, "open");
    let docs: Vec<Value> = files.iter().map(|p| read(p)).collect();
    for d in &docs {
        assert_eq!(d["config"]["worker"]["rps"], serde_json::json!([500]));
        assert_eq!(d["tests"][0]["target_rps"].as_u64(), Some(500));
    }
    let fired: Vec<usize> =
        docs.iter().map(|d| d["tests"][0]["events"].as_array().map_or(0, |e| e.len())).collect();
    assert_eq!(fired, [1, 0, 0, 0], "--at goes to worker 0 only");
    let (out, merged) = merge(&files);
    assert!(out.status.success(), "{}", out.dump());
    let t = &merged.unwrap()["tests"][0];
    let mut event = docs[0]["tests"][0]["events"][0].clone();
    event["part"] = 0.into();
    assert_eq!(t["events"], serde_json::json!([event]), "the merge carries worker 0's event");
    assert_eq!(event["replies"][0]["reply"], "PONG", "{event}");
    let line = format!("GET: event '1.5s PING' sent at {:.3} s", event["sent_s"].as_f64().unwrap());
    assert!(
        out.stdout.contains(&line) && out.stdout.contains("(from input 0's load alone)"),
        "{}",
        out.dump()
    );
    assert_eq!(t["target_rps"].as_u64(), Some(2000));
    let rps = t["rps"].as_f64().unwrap();
    assert!(rps > 0.0 && rps <= 2000.0 * 1.05, "merged rps {rps}");
    assert_eq!(server.command_calls("get"), t["requests"].as_u64().unwrap());
    let series = t["series"].as_array().unwrap();
    let lens: Vec<usize> = docs.iter().map(|d| d["tests"][0]["series"].as_array().unwrap().len()).collect();
    assert_eq!(
        series.len(),
        *lens.iter().max().unwrap(),
        "merged {} seconds, workers {lens:?}",
        series.len()
    );
    assert!(series.len() >= 3, "{lens:?}");
    for (k, second) in series.iter().enumerate() {
        let sum: u64 = docs.iter().filter_map(|d| d["tests"][0]["series"][k]["requests"].as_u64()).sum();
        assert_eq!(second["requests"].as_u64(), Some(sum), "second {k}");
    }
    // The three whole seconds carry about 2000 requests each on a quiet machine; a loaded one
    // lags and catches up, so only that each has replies.
    assert!(series[..3].iter().all(|s| s["requests"].as_u64() > Some(0)), "{series:?}");
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

/// `--key-dist sequential -r 1000 -n 1000 -t set` over four workers writes each key once: 1000
/// keys, 1000 SETs; and `--preload` over four workers writes the keyspace once, so every GET
/// hits.
#[test]
fn sequential_keys_and_preload_cover_the_keyspace_once_across_workers() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = ["-p", &port, "-t", "set", "-r", "1000", "-n", "1000", "-c", "8", "--key-dist", "sequential"];
    let files = run_workers(&respbench(), &args, 4, "seq");
    assert_eq!(server.dbsize(0), 1000);
    assert_eq!(server.command_calls("set"), 1000);
    let firsts: Vec<u64> =
        files.iter().map(|f| read(f)["config"]["worker"]["keys"]["first"].as_u64().unwrap()).collect();
    assert_eq!(firsts, [0, 250, 500, 750]);
    server.cli(&["FLUSHALL"]);
    server.cli(&["CONFIG", "RESETSTAT"]);
    // The preloads run before --start-at, so every worker's GETs find the others' keys written.
    let (at, _) = start_at();
    let args =
        ["-p", &port, "-t", "get", "-r", "1000", "-n", "4000", "-c", "8", "--preload", "--start-at", &at];
    let files = run_workers(&respbench(), &args, 4, "pre");
    assert_eq!(server.dbsize(0), 1000);
    assert_eq!(server.command_calls("set"), 1000, "each key preloaded once across the workers");
    assert_eq!(server.info_field("stats", "keyspace_hits").as_deref(), Some("4000"));
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

/// merge refuses three of four parts, a part of another run (another -d, another --key-dist)
/// and the same part twice, saying which; it reads a pod's log with stderr's lines around the
/// document; and JOB_COMPLETION_INDEX of RESPBENCH_WORKERS makes a worker as --worker does.
#[test]
fn merge_refuses_what_is_not_one_whole_run() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = ["-p", &port, "-t", "set", "-r", "400", "-n", "400", "-c", "4", "--key-dist", "sequential"];
    let files = run_workers(&respbench(), &args, 4, "parts");
    let name = |i: usize| files[i].to_str().unwrap().to_string();

    let (out, _) = merge(&files[..3]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("incomplete: 3 of the 4 parts of the run; missing worker 3"),
        "{}",
        out.dump()
    );

    // Worker 3 of a run with other values, or another key distribution.
    let other = json_path("workers", "other");
    for (option, value, field) in [("-d", "64", "datasize_spec"), ("--key-dist", "uniform", "key_dist")] {
        let mut a: Vec<&str> =
            args.iter().copied().filter(|a| *a != "sequential" && *a != "--key-dist").collect();
        if option == "-d" {
            a.extend(["--key-dist", "sequential"]);
        }
        a.extend([option, value, "--worker", "3/4", "--json", other.to_str().unwrap()]);
        let out = respbench().run(&a, T);
        assert!(out.status.success(), "{}", out.dump());
        let (out, _) = merge(&[files[0].clone(), files[1].clone(), files[2].clone(), other.clone()]);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        let says = format!("{} (worker 3/4) is not a part of the same run: ", other.display());
        assert!(out.stderr.contains(&says), "{says}\n{}", out.dump());
        let says = format!("{field} \"{value}\" where {} has ", name(0));
        assert!(out.stderr.contains(&says), "{says}\n{}", out.dump());
    }
    let _ = std::fs::remove_file(&other);

    let twice = [files[0].clone(), files[1].clone(), files[1].clone(), files[3].clone()];
    let (out, _) = merge(&twice);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stderr.contains(&format!("worker 1/4 appears twice: {} and {}", name(1), name(1))),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("missing worker 2"), "{}", out.dump());

    // A pod's log: stderr's lines before and after the document on stdout.
    let log = json_path("workers", "log");
    let text = std::fs::read_to_string(&files[2]).unwrap();
    std::fs::write(&log, format!("WARNING: a line on stderr\n{text}respbench: and one after\n")).unwrap();
    let (out, merged) = merge(&[files[0].clone(), files[1].clone(), log.clone(), files[3].clone()]);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(test(&merged.unwrap(), "SET")["requests"].as_u64(), Some(400));
    let _ = std::fs::remove_file(&log);

    // The environment of a Kubernetes Indexed Job: worker 2 of 4 without --worker.
    let env_doc = json_path("workers", "env");
    let out = Command::new(&respbench().path)
        .args(args)
        .args(["--json", env_doc.to_str().unwrap()])
        .env("JOB_COMPLETION_INDEX", "2")
        .env("RESPBENCH_WORKERS", "4")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let w = read(&env_doc)["config"]["worker"].clone();
    assert_eq!(
        (w["index"].as_u64(), w["count"].as_u64(), w["requests"].as_u64()),
        (Some(2), Some(4), Some(100))
    );
    let (out, _) = merge(&[files[0].clone(), files[1].clone(), env_doc.clone(), files[3].clone()]);
    assert!(out.status.success(), "{}", out.dump());
    let _ = std::fs::remove_file(&env_doc);
    // A count without an index is refused before anything runs.
    let out = Command::new(&respbench().path).args(args).env("RESPBENCH_WORKERS", "4").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JOB_COMPLETION_INDEX is not set"));
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

/// The Kubernetes manifest, read by PyYAML: an Indexed Job whose completions and parallelism
/// are the worker count given to respbench, pods that are not restarted, a `--start-at`,
/// `--preload`, and no `--worker` (the index comes from JOB_COMPLETION_INDEX). Its results go to
/// a file on a volume (a claim the collecting pod mounts too), not to the logs. Every pod passes
/// Pod Security "restricted". And kubernetes-validate, offline and strict, accepts every object.
#[test]
fn kubernetes_manifest_is_an_indexed_job_of_workers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let manifest = root.join("deploy/kubernetes/respbench-job.yaml");
    let said = kubernetes_validate(&manifest);
    assert!(!said.contains("ERROR") && !said.contains("WARN"), "{said}");
    let docs: Value = serde_json::from_str(&yaml_as_json(&manifest)).unwrap();
    let docs = docs.as_array().unwrap();
    let job = docs.iter().find(|d| d["kind"] == "Job").expect("a Job");
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().expect("completions");
    assert_eq!(spec["parallelism"].as_u64(), Some(n));
    assert_eq!(spec["backoffLimit"].as_u64(), Some(0));
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let c = &pod["containers"][0];
    let env = c["env"].as_array().unwrap();
    let workers = env.iter().find(|e| e["name"] == "RESPBENCH_WORKERS").expect("RESPBENCH_WORKERS");
    assert_eq!(workers["value"].as_str(), Some(n.to_string().as_str()));
    let index = env.iter().find(|e| e["name"] == "JOB_COMPLETION_INDEX").expect("JOB_COMPLETION_INDEX");
    assert_eq!(
        index["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    let args: Vec<&str> = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(args.contains(&"--start-at"), "{args:?}");
    assert!(args.contains(&"--preload") && args.contains(&"-r"), "a GET of hits: {args:?}");
    assert!(!args.contains(&"--worker"), "{args:?}");
    // The document goes to a file per worker on the volume, not to stdout (the log rotates).
    let json = args[args.iter().position(|a| *a == "--json").expect("--json") + 1];
    assert_eq!(json, "/results/respbench-$(JOB_COMPLETION_INDEX).json");
    let claim = docs.iter().find(|d| d["kind"] == "PersistentVolumeClaim").expect("a claim");
    let claim_name = claim["metadata"]["name"].as_str().unwrap();
    let mounts_claim = |pod: &Value, container: &Value| {
        let mount =
            container["volumeMounts"].as_array().unwrap().iter().find(|m| m["mountPath"] == "/results");
        let volume = mount.and_then(|m| pod["volumes"].as_array()?.iter().find(|v| v["name"] == m["name"]));
        volume.is_some_and(|v| v["persistentVolumeClaim"]["claimName"] == claim_name)
    };
    assert!(mounts_claim(pod, c), "{pod}");
    let collector = docs.iter().find(|d| d["kind"] == "Pod").expect("the collecting pod");
    let collecting = &collector["spec"];
    assert!(mounts_claim(collecting, &collecting["containers"][0]), "{collector}");
    // Pod Security "restricted", on every pod and container.
    for pod in [pod, collecting] {
        let sc = &pod["securityContext"];
        assert_eq!(sc["runAsNonRoot"], true, "{pod}");
        // A number: the kubelet cannot check runAsNonRoot against the image's user name.
        assert!(sc["runAsUser"].as_u64().is_some_and(|u| u > 0), "{pod}");
        assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{pod}");
        for c in pod["containers"].as_array().unwrap() {
            let sc = &c["securityContext"];
            assert_eq!(sc["allowPrivilegeEscalation"], false, "{c}");
            assert_eq!(sc["readOnlyRootFilesystem"], true, "{c}");
            assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]), "{c}");
            assert!(sc["capabilities"].get("add").is_none() && sc.get("privileged").is_none(), "{c}");
        }
        assert!(pod.get("hostNetwork").is_none() && pod.get("hostPID").is_none(), "{pod}");
        let volumes = pod["volumes"].as_array().unwrap();
        assert!(volumes.iter().all(|v| v.get("hostPath").is_none()), "{pod}");
    }
    // The arguments are respbench's options (argh knows each; --help stops before values are
    // checked against a server that is not here).
    let at = args.iter().position(|a| *a == "--start-at").unwrap() + 1;
    let mut checked: Vec<&str> = args.clone();
    checked[at] = "2026-12-01T10:00:00Z";
    let out = Command::new(&respbench().path).args(&checked).arg("--help").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The Dockerfile builds an image whose respbench runs, where a container engine is available
/// (`docker info` answers). Without one the check cannot run and says so on stderr; with
/// RESPBENCH_REQUIRE_DOCKER=1 (for a CI that has one) that is a failure.
#[test]
fn dockerfile_builds_where_docker_runs() {
    let docker_up = Command::new("docker").arg("info").output().is_ok_and(|o| o.status.success());
    if !docker_up {
        let required = std::env::var("RESPBENCH_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
        assert!(!required, "RESPBENCH_REQUIRE_DOCKER=1 but `docker info` fails: no container engine");
        eprintln!(
            "NOT CHECKED: the Dockerfile was not built: `docker info` fails (no container engine here)"
        );
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tag = format!("respbench-test:{}", std::process::id());
    let built = Command::new("docker").args(["build", "-q", "-t", &tag]).arg(root).output().unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let ran = Command::new("docker").args(["run", "--rm", &tag, "--version"]).output().unwrap();
    let _ = Command::new("docker").args(["rmi", "-f", &tag]).output();
    assert!(String::from_utf8_lossy(&ran.stdout).starts_with("respbench "), "{ran:?}");
}

/// A worker whose `--start-at` has passed runs at once, says so (in the JSON) and records by how
/// much; merge names it.
#[test]
fn a_late_worker_says_so_and_records_by_how_much() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let past = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - 5;
    let json = json_path("workers", "late");
    let args = ["-p", &port, "-t", "ping_mbulk", "-n", "100", "-c", "2", "--start-at", &past.to_string()];
    let out =
        respbench().run(&[&args[..], &["--worker", "0/1", "--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let warned = warnings(&read(&json));
    assert!(warned.contains(&format!("WARNING: --start-at {past}: this process was ready ")), "{warned}");
    let late = read(&json)["late_by_s"].as_f64().unwrap();
    assert!((4.0..60.0).contains(&late), "late_by_s {late}");
    let (out, merged) = merge(std::slice::from_ref(&json));
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stderr.contains("worker 0/1 ("), "{}", out.dump());
    assert!(out.stderr.contains("s after its --start-at"), "{}", out.dump());
    assert_eq!(merged.unwrap()["late_by_s"].as_f64(), Some(late));
    let _ = std::fs::remove_file(&json);
}

/// A `--json` document's warnings, the session's and each test's, as JSON text.
fn warnings(doc: &serde_json::Value) -> String {
    let tests = doc["tests"].as_array().into_iter().flatten();
    tests.fold(doc["warnings"].to_string(), |all, t| all + &t["warnings"].to_string())
}

/// `respbench run FILE --worker I/2`: each worker runs its share of every group of the scenario
/// (`examples/readers-writers.toml`, 2 s), and `merge` adds the workers' groups by name: each
/// merged group's count is the server's calls of its command, the writers' target the file's
/// 500/s again.
#[test]
fn two_workers_split_every_group_and_merge_adds_them_by_name() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/readers-writers.toml");
    let (at, _) = start_at();
    let args = ["run", file.to_str().unwrap(), "-p", &port, "--duration", "2s", "-q", "--start-at", &at];
    let paths = run_workers(&respbench(), &args, 2, "groups");
    for p in &paths {
        let groups = read(p)["tests"][0]["groups"].clone();
        assert_eq!(groups[1]["target_rps"], 250, "each worker its half of the writers' rate: {groups}");
    }
    let (out, doc) = merge(&paths);
    let doc = doc.unwrap_or_else(|| panic!("{}", out.dump()));
    let test = &doc["tests"][0];
    let groups = test["groups"].as_array().expect("groups");
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["readers", "writers"]);
    assert_eq!(groups[0]["requests"], server.command_calls("get"), "{}", out.dump());
    assert_eq!(groups[1]["requests"], server.command_calls("set"), "{}", out.dump());
    assert_eq!(groups[1]["target_rps"], 500);
    assert_eq!(test["requests"], server.command_calls("get") + server.command_calls("set"));
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}
