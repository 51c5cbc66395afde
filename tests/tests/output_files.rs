//! Output files in a shared directory (issue #35): `--json` and `--hgrm` are written through a
//! temporary file with a random name, created exclusively and never through a symlink, then
//! renamed. The old names were predictable (`DIR/.NAME.PID.tmp`, and `PREFIX.PID.tmp` for
//! `--hgrm`'s check), so another user could plant a symlink there and have respbench truncate
//! and write a file of the victim's.

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use respbench_tests::{respbench, RedisServer};

const T: Duration = Duration::from_secs(30);
/// PIDs planted above the last one given out: the run's PID is among them.
const PIDS: u32 = 3000;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("respbench-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
}

fn read_pid_file(p: &str) -> u32 {
    let s = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {p}: {e}"));
    s.trim().parse().unwrap_or_else(|_| panic!("{p}: {s:?}"))
}

/// The run's outputs, whole: a document of one test, and GET's percentile distribution.
fn check_outputs(dir: &Path) {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("out.json")).unwrap())
        .unwrap_or_else(|e| panic!("out.json: {e}"));
    assert_eq!(doc["tests"].as_array().map(Vec::len), Some(1), "{doc}");
    assert_eq!(doc["tests"][0]["requests"], 2000, "{doc}");
    let hgrm = std::fs::read_to_string(dir.join("runGET.hgrm")).unwrap();
    assert!(hgrm.contains("Value     Percentile TotalCount 1/(1-Percentile)"), "{hgrm}");
    assert!(hgrm.contains("#[Max     =") && hgrm.ends_with('\n'), "{hgrm}");
}

fn run_into(server: &RedisServer, dir: &Path) -> (u32, respbench_tests::Output) {
    let json = dir.join("out.json");
    let prefix = dir.join("run");
    let run = respbench().spawn(&[
        "-p",
        &server.port().to_string(),
        "-t",
        "get",
        "-n",
        "2000",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--hgrm",
        prefix.to_str().unwrap(),
    ]);
    let pid = run.pid();
    (pid, run.wait(T))
}

/// A symlink at every name the old scheme would have used for the next few thousand PIDs, to a
/// victim file elsewhere: the victim keeps its content and mtime, nothing is created but the
/// outputs, and they are whole.
#[test]
fn planted_symlinks_at_the_old_temporary_names_are_never_followed() {
    let server = RedisServer::start();
    let dir = scratch("planted");
    let victim_dir = scratch("victim");
    let victim = victim_dir.join("precious");
    std::fs::write(&victim, b"the victim's own bytes\n").unwrap();
    // An mtime in the past, so that any write would move it.
    let past = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options().write(true).open(&victim).unwrap().set_modified(past).unwrap();
    let before = std::fs::metadata(&victim).unwrap();

    let last = read_pid_file("/proc/sys/kernel/ns_last_pid");
    let max = read_pid_file("/proc/sys/kernel/pid_max");
    let pids: Vec<u32> = (1..=PIDS).map(|k| (last + k) % max).collect();
    for pid in &pids {
        // --json DIR/out.json wrote DIR/.out.json.PID.tmp; --hgrm DIR/run checked with
        // DIR/run.PID.tmp and wrote each file as DIR/.runGET.hgrm.PID.tmp.
        for name in
            [format!(".out.json.{pid}.tmp"), format!("run.{pid}.tmp"), format!(".runGET.hgrm.{pid}.tmp")]
        {
            symlink(&victim, dir.join(name)).unwrap();
        }
    }
    let planted = names(&dir);

    let (pid, out) = run_into(&server, &dir);
    assert!(out.status.success(), "{}", out.dump());
    // Else the planted names were not the run's: the test would prove nothing.
    assert!(pids.contains(&pid), "respbench ran as PID {pid}, outside the {PIDS} planted above {last}");

    let after = std::fs::metadata(&victim).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the victim's own bytes\n");
    assert_eq!(after.modified().unwrap(), before.modified().unwrap(), "the victim was written");
    assert_eq!(after.len(), before.len());
    assert_eq!(names(&victim_dir), BTreeSet::from(["precious".to_string()]));
    let created: Vec<String> = names(&dir).difference(&planted).cloned().collect();
    assert_eq!(created, ["out.json", "runGET.hgrm"], "files created beside the planted names");
    for name in &planted {
        let meta = std::fs::symlink_metadata(dir.join(name)).unwrap();
        assert!(meta.file_type().is_symlink(), "{name} was replaced");
    }
    check_outputs(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&victim_dir);
}

/// The directory a run leaves holds its outputs and nothing else: the writability checks before
/// the run and the writes after it leave no temporary file, and neither does a write that fails
/// (a document whose name is taken by a directory: the rename fails, and its temporary is
/// removed).
#[test]
fn no_temporary_file_is_left() {
    let server = RedisServer::start();
    let dir = scratch("left");
    let (_, out) = run_into(&server, &dir);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(names(&dir), BTreeSet::from(["out.json".to_string(), "runGET.hgrm".to_string()]));
    check_outputs(&dir);

    let failing = scratch("left-failing");
    std::fs::create_dir(failing.join("out.json")).unwrap();
    std::fs::write(failing.join("out.json").join("keep"), b"x").unwrap();
    let (_, out) = run_into(&server, &failing);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--json: cannot write"), "{}", out.dump());
    assert_eq!(names(&failing), BTreeSet::from(["out.json".to_string(), "runGET.hgrm".to_string()]));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&failing);
}
