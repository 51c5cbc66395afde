//! SIGINT and SIGTERM as they come in practice: from GNU `timeout` (the process, then its
//! process group: often two signals microseconds apart), from `kill` to a process group, and as
//! two signals 10 ms apart. Each must stop the run and leave every output whole; a signal more
//! than the grace (1 s) after the first ends the process at once, keeping the report lines
//! already printed and saying what it cut.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use respbench_tests::{parse_quiet, respbench, send_signal, wait_until, RedisServer};

/// Runs of each kind, and how many go at once (started together, signalled together).
const RUNS: usize = 50;
const BATCH: usize = 25;
/// Connections per run: more sockets than the startup connection's one say the run is under way.
const CLIENTS: usize = 4;
const LIMIT: Duration = Duration::from_secs(60);

/// How a run is signalled.
#[derive(Clone, Copy, Debug)]
enum How {
    /// `timeout -s SIG 600 respbench …`, whose timer is run out by SIGALRM (as when its time is
    /// up): it signals respbench and then its process group.
    Timeout(&'static str),
    /// `kill -INT -PGID`: respbench leads its own process group.
    Group,
    /// `kill -SIG PID` twice, 10 ms apart.
    Twice(&'static str),
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("respbench-signals-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One run: the process spawned (`timeout` or respbench itself), and its files.
struct Run {
    child: Child,
    dir: PathBuf,
}

impl Run {
    fn start(how: How, server: &RedisServer, dir: PathBuf) -> Run {
        let bin = respbench().path;
        let json = dir.join("out.json");
        let args: Vec<String> = [
            "-p",
            &server.port().to_string(),
            "-c",
            &CLIENTS.to_string(),
            "-t",
            "get",
            "-n",
            "1000000000",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut cmd = match how {
            How::Timeout(sig) => {
                let mut c = Command::new("timeout");
                c.args(["-s", sig, "600"]).arg(&bin).args(&args);
                c
            }
            How::Group | How::Twice(_) => {
                let mut c = Command::new(&bin);
                c.args(&args);
                c
            }
        };
        // Its own process group: what `timeout` and `kill -PGID` signal is not the test's.
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
        let child = cmd.spawn().unwrap_or_else(|e| panic!("spawning {how:?}: {e}"));
        Run { child, dir }
    }

    /// respbench's process id: the child, or `timeout`'s child.
    fn respbench_pid(&self, how: How) -> Option<u32> {
        let me = self.child.id();
        match how {
            How::Timeout(_) => child_of(me),
            _ => Some(me),
        }
    }
}

/// The process whose parent is `parent`, if there is one.
fn child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // pid (comm) state ppid ...: comm may hold spaces, so read after its last ')'.
        let ppid: u32 = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == parent).then_some(pid)
    })
}

/// How many sockets process `pid` has open.
fn sockets(pid: u32) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return 0 };
    fds.flatten()
        .filter(|f| std::fs::read_link(f.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:")))
        .count()
}

/// Waits until `run`'s respbench has its test's connections: its signal handlers are in place
/// (they are before the first connection) and the test is running.
fn wait_started(run: &Run, how: How) -> u32 {
    let mut pid = None;
    wait_until("respbench's connections", LIMIT, || {
        pid = pid.or_else(|| run.respbench_pid(how));
        pid.is_some_and(|p| sockets(p) >= CLIENTS)
    });
    pid.unwrap()
}

fn signal(run: &Run, how: How, pid: u32) {
    match how {
        How::Timeout(_) => send_signal(run.child.id(), "ALRM"),
        How::Group => {
            let st = Command::new("kill").args(["-INT", "--", &format!("-{pid}")]).status().unwrap();
            assert!(st.success(), "kill -INT -{pid}");
        }
        How::Twice(sig) => {
            send_signal(pid, sig);
            thread::sleep(Duration::from_millis(10));
            send_signal(pid, sig);
        }
    }
}

/// What a run left wrong, if anything: its exit, its report line, its document.
fn judge(mut run: Run, how: How) -> Result<(), String> {
    let mut status = None;
    wait_until("the run to end", LIMIT, || {
        status = run.child.try_wait().unwrap();
        status.is_some()
    });
    let read = |n: &str| std::fs::read_to_string(run.dir.join(n)).unwrap_or_default();
    let (stdout, stderr) = (read("stdout"), read("stderr"));
    let what =
        format!("{how:?} in {}: {:?}\n--- stdout\n{stdout}--- stderr\n{stderr}", run.dir.display(), status);
    // timeout says 124 for a child it timed out, whatever the child's status; else 128 + the
    // signal, as a shell says of a process the signal ended.
    let expected = match how {
        How::Timeout(_) => 124,
        How::Twice("TERM") => 143,
        _ => 130,
    };
    if status.and_then(|s| s.code()) != Some(expected) {
        return Err(format!("status, expected {expected}: {what}"));
    }
    if parse_quiet(&stdout).iter().all(|l| l.title != "GET") || !stdout.contains("partial: interrupted") {
        return Err(format!("no GET line marked interrupted: {what}"));
    }
    let doc: serde_json::Value = serde_json::from_str(&read("out.json"))
        .map_err(|e| format!("out.json is not a whole document ({e}): {what}"))?;
    if doc["interrupted"] != true || doc["tests"].as_array().is_none_or(|t| t.is_empty()) {
        return Err(format!("the document is not an interrupted run's: {doc}\n{what}"));
    }
    if !stderr.is_empty() {
        return Err(format!("stderr: {what}"));
    }
    let names: Vec<_> = std::fs::read_dir(&run.dir).unwrap().flatten().map(|e| e.file_name()).collect();
    if names.len() != 3 {
        return Err(format!("files left: {names:?}: {what}"));
    }
    let _ = std::fs::remove_dir_all(&run.dir);
    Ok(())
}

/// `RUNS` runs signalled by `how`, `BATCH` at a time: every one leaves its report and its whole
/// document.
fn every_run_is_whole(how: How, name: &str) {
    let server = RedisServer::start();
    let root = scratch(name);
    let mut failures = Vec::new();
    for batch in 0..RUNS / BATCH {
        let runs: Vec<Run> = (0..BATCH)
            .map(|k| {
                let dir = root.join(format!("{}", batch * BATCH + k));
                std::fs::create_dir_all(&dir).unwrap();
                Run::start(how, &server, dir)
            })
            .collect();
        let pids: Vec<u32> = runs.iter().map(|r| wait_started(r, how)).collect();
        for (run, pid) in runs.iter().zip(&pids) {
            signal(run, how, *pid);
        }
        failures.extend(runs.into_iter().filter_map(|r| judge(r, how).err()));
    }
    assert!(failures.is_empty(), "{} of {RUNS} runs lost output:\n{}", failures.len(), failures.join("\n\n"));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn timeout_int_leaves_every_output() {
    every_run_is_whole(How::Timeout("INT"), "timeout-int");
}

#[test]
fn timeout_term_leaves_every_output() {
    every_run_is_whole(How::Timeout("TERM"), "timeout-term");
}

#[test]
fn kill_to_the_process_group_leaves_every_output() {
    every_run_is_whole(How::Group, "group");
}

#[test]
fn two_signals_10ms_apart_leave_every_output() {
    every_run_is_whole(How::Twice("INT"), "twice");
}

#[test]
fn two_sigterms_leave_every_output_and_exit_143() {
    every_run_is_whole(How::Twice("TERM"), "twice-term");
}

/// A signal more than the grace after the first ends the run at once, without waiting for its
/// drain (held here by a stopped server and a long --drain-grace): the report lines printed
/// before it are kept, stderr says what was cut, and no temporary file is left.
#[test]
fn a_late_signal_ends_at_once_and_keeps_what_was_printed() {
    let server = RedisServer::start();
    let dir = scratch("late");
    let json = dir.join("out.json");
    let mut run = respbench().spawn(&[
        "-p",
        &server.port().to_string(),
        "-c",
        "4",
        "-t",
        "set,get",
        "-n",
        "20000",
        // Looped, so that GET cannot end before the server is stopped below.
        "-l",
        "-q",
        "--drain-grace",
        "600",
        "--json",
        json.to_str().unwrap(),
    ]);
    run.wait_for_stdout("SET: ");
    server.wait_for_calls("get", 1);
    // GET's requests in flight now get no reply: the drain would wait for them.
    server.signal("STOP");
    run.interrupt();
    // Past the grace (a sleep is never shorter than asked).
    thread::sleep(Duration::from_millis(1200));
    assert!(!run.has_exited(), "the drain of a stopped server's requests ended early");
    run.interrupt();
    // Far less than the drain's 600 s: the process did not wait for it.
    let out = run.wait(LIMIT);
    server.signal("CONT");
    assert_eq!(out.status.code(), Some(130), "{}", out.dump());
    assert!(parse_quiet(&out.stdout).iter().any(|l| l.title == "SET"), "{}", out.dump());
    assert!(
        out.stderr
            .contains("signalled again more than 1 s after the first: exiting now, before the run drained")
            && out.stderr.contains(&format!("--json {} is not written", json.display())),
        "{}",
        out.dump()
    );
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
