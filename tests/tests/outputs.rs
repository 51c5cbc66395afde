//! No result is lost to an output that fails (issue #24): `--hlog`, `--json` and the report are
//! independent. A file that cannot grow (a full disk, here `RLIMIT_FSIZE` with `SIGXFSZ`
//! ignored, which makes writes past the limit fail with `EFBIG` as a full disk makes them fail
//! with `ENOSPC`) is said at the end with its path and the OS error; the other outputs are
//! written; the status is 1; a JSON document is never left truncated or empty.

use std::path::PathBuf;
use std::time::Duration;

use respbench_tests::{files_in, respbench, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(30);

extern "C" {
    fn setrlimit(resource: i32, limit: *const [u64; 2]) -> i32;
    fn signal(signum: i32, handler: usize) -> usize;
    fn open(path: *const std::ffi::c_char, flags: i32, ...) -> i32;
    fn pipe(fds: *mut [i32; 2]) -> i32;
    fn dup2(old: i32, new: i32) -> i32;
    fn close(fd: i32) -> i32;
}
const O_WRONLY: i32 = 1;
const RLIMIT_FSIZE: i32 = 1;
const SIGXFSZ: i32 = 25;
const SIG_IGN: usize = 1;

/// Files the child writes cannot grow past `BYTES`.
fn limit_files<const BYTES: u64>() -> std::io::Result<()> {
    // SAFETY: plain system calls on this (child) process.
    unsafe {
        signal(SIGXFSZ, SIG_IGN);
        if setrlimit(RLIMIT_FSIZE, &[BYTES, BYTES]) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("respbench-outputs-{}-{name}", std::process::id()))
}

/// The header of an interval log fits in 1000 bytes, its first second does not: the log fails
/// after the first test. Both tests run, and the JSON (on stdout, which the limit does not
/// touch) holds both.
#[test]
fn a_failing_hlog_loses_no_result() {
    let server = RedisServer::start();
    let hlog = path("full.hlog");
    let tool = Tool { pre_exec: Some(limit_files::<1000>), ..respbench() };
    let port = server.port().to_string();
    let out = tool.run(
        &["-p", &port, "-t", "get,set", "-n", "2000", "--hlog", hlog.to_str().unwrap(), "--json", "-"],
        T,
    );
    let _ = std::fs::remove_file(&hlog);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.dump()));
    let names: Vec<&str> =
        doc["tests"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["SET", "GET"], "{}", out.dump());
    let want = format!("--hlog {}: cannot write: File too large", hlog.display());
    assert!(out.stderr.contains(&want), "wanted {want:?}\n{}", out.dump());
    assert_eq!(server.command_calls("get"), 2000);
}

/// The JSON document does not fit in 4000 bytes: the report is printed whole, the failure is
/// said with the path, and no partial document is left (nor its temporary file).
#[test]
fn a_failing_json_leaves_no_partial_file_and_keeps_the_report() {
    let server = RedisServer::start();
    let json = path("full.json");
    let tool = Tool { pre_exec: Some(limit_files::<4000>), ..respbench() };
    let port = server.port().to_string();
    let out =
        tool.run(&["-p", &port, "-t", "get,set", "-n", "2000", "-q", "--json", json.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let quiet = respbench_tests::parse_quiet(&out.stdout);
    assert_eq!(quiet.iter().map(|q| q.title.as_str()).collect::<Vec<_>>(), ["SET", "GET"], "{}", out.dump());
    let want = format!("--json: cannot write {}: File too large", json.display());
    assert!(out.stderr.contains(&want), "wanted {want:?}\n{}", out.dump());
    assert!(!json.exists(), "a partial document was left at {}", json.display());
    let dir = json.parent().unwrap();
    let prefix = format!(".{}", json.file_name().unwrap().to_string_lossy());
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// Each output works alone and beside any other (issue #34): `--hgrm` without `--json` writes
/// its files (it wrote none before, as the session kept results only for `--json`), and each
/// of `-q`, `--csv`, `--json`, `--hgrm`, `--hlog`, `--series` and `--print-percentiles` writes
/// the same things alone as together.
#[test]
fn each_output_alone_and_together() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let dir = path("alone");
    let _ = std::fs::remove_dir_all(&dir);
    let run = |name: &str, extra: &[&str]| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let owned: Vec<String> = extra.iter().map(|a| a.replace("DIR", d.to_str().unwrap())).collect();
        let mut args = vec!["-p", &port, "-t", "get,set", "-n", "2000", "--seed", "1"];
        args.extend(owned.iter().map(String::as_str));
        let out = respbench().run(&args, T);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", out.dump());
        assert_eq!(out.stderr, "", "{name}: a successful run leaves stderr empty\n{}", out.dump());
        (files_in(&d), out.stdout)
    };
    let (files, stdout) = run("hgrm", &["-q", "--hgrm", "DIR/r-"]);
    assert_eq!(files, ["r-GET.hgrm", "r-SET.hgrm"], "{stdout}");
    let (files, _) = run("json", &["-q", "--json", "DIR/r.json"]);
    assert_eq!(files, ["r.json"]);
    let (files, _) = run("hlog", &["-q", "--hlog", "DIR/r.hlog"]);
    assert_eq!(files, ["r.hlog"]);
    let (files, quiet) = run("quiet", &["-q"]);
    assert!(files.is_empty());
    let titles =
        |text: &str| respbench_tests::parse_quiet(text).into_iter().map(|q| q.title).collect::<Vec<_>>();
    assert_eq!(titles(&quiet), ["SET", "GET"], "{quiet}");
    let (_, csv) = run("csv", &["--csv"]);
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("\"SET\"") || l.starts_with("\"GET\"")).count(),
        2,
        "{csv}"
    );
    let (files, together) =
        run("all", &["-q", "--json", "DIR/r.json", "--hgrm", "DIR/r-", "--hlog", "DIR/r.hlog"]);
    assert_eq!(files, ["r-GET.hgrm", "r-SET.hgrm", "r.hlog", "r.json"]);
    assert_eq!(titles(&together), ["SET", "GET"], "{together}");
    let (files, csv_too) = run("csv-json", &["--csv", "--json", "DIR/r.json", "--hgrm", "DIR/r-"]);
    assert_eq!(files, ["r-GET.hgrm", "r-SET.hgrm", "r.json"]);
    assert_eq!(csv_too.lines().next(), csv.lines().next(), "the CSV header");
    // The hgrm of a run alone and of one with every output are of the same tests, each whole.
    for name in ["hgrm", "all"] {
        for test in ["GET", "SET"] {
            let text = std::fs::read_to_string(dir.join(name).join(format!("r-{test}.hgrm"))).unwrap();
            assert!(text.contains("#[Buckets"), "{name}/{test}: {text}");
            assert!(text.contains("1.000000000000") && text.contains("2000"), "{name}/{test}: {text}");
        }
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("all/r.json")).unwrap()).unwrap();
    assert_eq!(doc["tests"].as_array().unwrap().len(), 2);
    // --print-percentiles alone names its percentiles on each -q line; with --json and --series
    // beside it, the same lines, the seconds after each, and the document.
    let (_, chosen) = run("pct", &["-q", "--print-percentiles", "50,99.9"]);
    let lines: Vec<&str> = chosen.lines().filter(|l| l.contains("requests per second")).collect();
    assert_eq!(lines.len(), 2, "{chosen}");
    assert!(lines.iter().all(|l| l.contains("p50=") && l.contains("p99.9=")), "{chosen}");
    let (files, series) =
        run("pct-series-json", &["-q", "--print-percentiles", "50,99.9", "--series", "--json", "DIR/r.json"]);
    assert_eq!(files, ["r.json"]);
    let with: Vec<&str> = series.lines().filter(|l| l.contains("requests per second")).collect();
    assert_eq!(with.len(), 2, "{series}");
    assert!(with.iter().all(|l| l.contains("p50=") && l.contains("p99.9=")), "{series}");
    // Each test's table of seconds, whose rows add up to its requests, alone and with the others.
    let (_, series_alone) = run("series", &["-q", "--series"]);
    for text in [&series, &series_alone] {
        let headers = text.lines().filter(|l| l.trim_start().starts_with("second")).count();
        assert_eq!(headers, 2, "a table per test:\n{text}");
        let rows: u64 = text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 6 && f[0].parse::<u64>().is_ok()).then(|| f[1].parse::<u64>().unwrap())
            })
            .sum();
        assert_eq!(rows, 4000, "the seconds hold every request:\n{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The child's stderr is `/dev/full`: every write to it fails with `ENOSPC`.
fn stderr_full() -> std::io::Result<()> {
    // SAFETY: plain system calls on this (child) process.
    unsafe {
        let fd = open(c"/dev/full".as_ptr(), O_WRONLY);
        if fd < 0 || dup2(fd, 2) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        close(fd);
    }
    Ok(())
}

/// The child's stderr is a pipe whose reader is gone (`2>&1 | head -1` once `head` has
/// exited): every write to it fails with `EPIPE` (SIGPIPE is ignored by Rust programs).
fn stderr_closed_pipe() -> std::io::Result<()> {
    let mut fds = [0i32; 2];
    // SAFETY: plain system calls on this (child) process.
    unsafe {
        if pipe(&mut fds) < 0 || close(fds[0]) < 0 || dup2(fds[1], 2) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        close(fds[1]);
    }
    Ok(())
}

/// A stderr that cannot be written costs nothing but its lines (#56 item 11): the run's status
/// and stdout are what they would be. `eprintln!` panicked there ("failed printing to stderr",
/// status 101): a run whose every reply is an error (status 1, `Error from server` and `-e`'s
/// lines on stderr) and a successful one with a warning (`--cacert` without `--tls`, status 0,
/// which exited 101 before it ran), each with stderr `/dev/full` and a closed pipe.
#[test]
fn an_unwritable_stderr_keeps_the_status_and_stdout() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    for (how, hook) in
        [("/dev/full", stderr_full as fn() -> std::io::Result<()>), ("a closed pipe", stderr_closed_pipe)]
    {
        let tool = Tool { pre_exec: Some(hook), ..respbench() };
        let out = tool.run(&["-p", &port, "-n", "1000", "-q", "-e", "INCRBY", "k", "notanumber"], T);
        assert_eq!(out.status.code(), Some(1), "stderr {how}: {}", out.dump());
        let want = "INCRBY k notanumber: no request succeeded: 1000 replies in ";
        assert!(out.stdout.starts_with(want), "stderr {how}: {}", out.dump());
        assert!(
            out.stdout.contains("\nINCRBY k notanumber: errors: 1000 (ERR: 1000)\n"),
            "stderr {how}: {}",
            out.dump()
        );
        assert_eq!(out.stderr, "", "stderr {how}: the harness's pipe was replaced");

        let out = tool.run(&["-p", &port, "-t", "get", "-n", "1000", "-q", "--cacert", "/nonexistent"], T);
        assert_eq!(out.status.code(), Some(0), "stderr {how}: {}", out.dump());
        let quiet = respbench_tests::parse_quiet(&out.stdout);
        assert_eq!(
            quiet.iter().map(|q| q.title.as_str()).collect::<Vec<_>>(),
            ["GET"],
            "stderr {how}: {}",
            out.dump()
        );
    }
    assert_eq!(server.command_calls("get"), 2000);
}
