//! Output files in a shared directory (issue #35): `--json` and `--hgrm` are written through a
//! temporary file with a random name, created exclusively and never through a symlink, then
//! renamed. The old names were predictable (`DIR/.NAME.PID.tmp`, and `PREFIX.PID.tmp` for
//! `--hgrm`'s check), so another user could plant a symlink there and have respbench truncate
//! and write a file of the victim's.
//!
//! And at paths that are not new or regular files (#56): a FIFO, a device or `/dev/stdout` is
//! written where it is, a directory is refused before the run, and `--hlog` follows no symlink.

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

/// The mtime a victim file is given: any write would move it.
#[allow(non_snake_case)]
fn past() -> std::time::SystemTime {
    std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000)
}

/// A file of someone else's in a scratch directory of its own (`name`): its directory and path.
/// It holds "the victim's own bytes" and was last written at [`past`].
fn victim(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let victim = dir.join("precious");
    std::fs::write(&victim, b"the victim's own bytes\n").unwrap();
    std::fs::File::options().write(true).open(&victim).unwrap().set_modified(past()).unwrap();
    (dir, victim)
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
    let (victim_dir, victim) = victim("victim");
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

    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory where `--json` or `--hlog` is named is refused before the run connects (#56
/// item 17): it failed only after the run, its results lost from the document. Nothing is
/// written, the directory is left as it was, and the server saw no request.
#[test]
fn a_directory_at_an_output_path_is_refused_before_the_run() {
    let server = RedisServer::start();
    let failing = scratch("left-failing");
    std::fs::create_dir(failing.join("out.json")).unwrap();
    std::fs::write(failing.join("out.json").join("keep"), b"x").unwrap();
    let (_, out) = run_into(&server, &failing);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let want = format!("--json: cannot write {}: it is a directory", failing.join("out.json").display());
    assert_eq!(out.stderr.trim_end(), want, "{}", out.dump());
    assert_eq!(out.stdout, "", "{}", out.dump());
    assert_eq!(names(&failing), BTreeSet::from(["out.json".to_string()]));
    assert_eq!(names(&failing.join("out.json")), BTreeSet::from(["keep".to_string()]));

    let port = server.port().to_string();
    let hlog = failing.join("out.json");
    let out =
        respbench().run(&["-p", &port, "-t", "get", "-n", "2000", "-q", "--hlog", hlog.to_str().unwrap()], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let want = format!("--hlog {}: cannot create it: it is a directory", hlog.display());
    assert_eq!(out.stderr.trim_end(), want, "{}", out.dump());
    assert_eq!(server.command_calls("get"), 0, "the runs connected and sent GETs");
    let _ = std::fs::remove_dir_all(&failing);
}

/// The JSON document of one GET test, from `text` that begins with the report's `-q` line.
fn document_after_report(text: &str) -> serde_json::Value {
    let at = text.find("\n{").unwrap_or_else(|| panic!("no document after the report: {text:?}"));
    let doc: serde_json::Value = serde_json::from_str(&text[at..]).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(doc["tests"][0]["requests"], 2000, "{doc}");
    doc
}

fn get_2000(server: &RedisServer, extra: &[&str]) -> respbench_tests::Output {
    let port = server.port().to_string();
    let mut args = vec!["-p", &port, "-t", "get", "-n", "2000", "-q"];
    args.extend(extra);
    respbench().run(&args, T)
}

/// `--json /dev/stdout` prints the document after the report (#56 item 1): it was written to a
/// temporary file renamed over `/dev/stdout` (the symlink itself, for the whole container when
/// root), and stdout got nothing, with exit 0.
#[test]
fn json_to_dev_stdout_prints_the_document() {
    let server = RedisServer::start();
    let out = get_2000(&server, &["--json", "/dev/stdout"]);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.starts_with("GET: "), "{}", out.dump());
    document_after_report(&out.stdout);
    let meta = std::fs::symlink_metadata("/dev/stdout").unwrap();
    assert!(meta.file_type().is_symlink(), "/dev/stdout is no longer a symlink");
}

/// What `args` (`FIFO` for the FIFO's path) wrote into a FIFO that a reader has open: the run
/// succeeded and the FIFO is still one. The reader waits for a writer in its own thread: a run
/// that never opens the FIFO fails the test on the timeout rather than hanging it.
fn through_fifo(fifo: &Path, args: &[&str]) -> String {
    use std::os::unix::fs::FileTypeExt;
    let (tx, rx) = std::sync::mpsc::channel();
    let reading = fifo.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read(&reading));
    });
    let args: Vec<&str> =
        args.iter().map(|a| if *a == "FIFO" { fifo.to_str().unwrap() } else { a }).collect();
    let out = respbench().run(&args, T);
    assert!(out.status.success(), "{args:?}: {}", out.dump());
    let got = rx.recv_timeout(T).unwrap_or_else(|_| panic!("{args:?}: the FIFO's reader got no end of file"));
    assert!(std::fs::symlink_metadata(fifo).unwrap().file_type().is_fifo(), "{args:?} replaced the FIFO");
    String::from_utf8_lossy(&got.unwrap()).into_owned()
}

/// A FIFO named by `--json` receives the document, and stays a FIFO (#56 item 1): the
/// temporary file was renamed over it, its reader waited forever and got nothing, and the run
/// exited 0. Likewise `merge --json`, `compare --json` and `capture -o`.
#[test]
fn a_fifo_with_a_reader_receives_the_document() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let dir = scratch("fifo");
    let fifo = dir.join("doc.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());
    let json = |text: &str| -> serde_json::Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text:?}"))
    };
    let got = through_fifo(&fifo, &["-p", &port, "-t", "get", "-n", "2000", "-q", "--json", "FIFO"]);
    assert_eq!(json(&got)["tests"][0]["requests"], 2000, "{got}");

    let saved = dir.join("run.json");
    std::fs::write(&saved, &got).unwrap();
    let merged = through_fifo(&fifo, &["merge", saved.to_str().unwrap(), "--json", "FIFO"]);
    assert_eq!(json(&merged)["tests"][0]["requests"], 2000, "{merged}");
    let compared = through_fifo(
        &fifo,
        &["compare", "--force", "--json", "FIFO", saved.to_str().unwrap(), saved.to_str().unwrap()],
    );
    assert!(json(&compared)["comparison"].is_object(), "{compared}");
    let captured = through_fifo(&fifo, &["capture", "-p", &port, "--duration", "1s", "-o", "FIFO"]);
    assert!(captured.starts_with("respbench capture v1"), "{captured:?}");
    assert_eq!(names(&dir), BTreeSet::from(["doc.fifo".to_string(), "run.json".to_string()]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether a thread of process `pid` waits in a FIFO's open for the other end (the kernel's
/// `wait_for_partner`).
fn waits_for_a_fifo_partner(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    tasks
        .flatten()
        .any(|t| std::fs::read_to_string(t.path().join("wchan")).is_ok_and(|w| w == "wait_for_partner"))
}

/// A FIFO that nobody reads yet: the run says on stderr that it waits for a reader, then writes
/// the document once one comes (the open waits as a shell's `>` does; saying so, the run does
/// not seem to hang).
#[test]
fn a_fifo_without_a_reader_is_waited_for_and_said() {
    let server = RedisServer::start();
    let dir = scratch("fifo-wait");
    let fifo = dir.join("doc.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let port = server.port().to_string();
    let run =
        respbench().spawn(&["-p", &port, "-t", "get", "-n", "2000", "-q", "--json", fifo.to_str().unwrap()]);
    respbench_tests::wait_until("the run waiting in the FIFO's open", T, || {
        waits_for_a_fifo_partner(run.pid())
    });
    let got = std::fs::read_to_string(&fifo).unwrap();
    let out = run.wait(T);
    assert!(out.status.success(), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&got).unwrap_or_else(|e| panic!("{e}: {got:?}"));
    assert_eq!(doc["tests"][0]["requests"], 2000, "{doc}");
    let said = format!("{}: a FIFO that no process reads: waiting for a reader\n", fifo.display());
    assert_eq!(out.stderr, said, "{}", out.dump());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--json /dev/null` writes into the device and leaves it one (#56 item 1): run as root, the
/// rename made `/dev/null` a regular file holding the document, for every process on the
/// machine. /dev/null is safe to write to; the test checks it is still the character device
/// 1,3 after a run and a merge.
#[test]
fn dev_null_stays_a_character_device() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let server = RedisServer::start();
    let dir = scratch("null");
    let saved = dir.join("run.json");
    let out = get_2000(&server, &["--json", saved.to_str().unwrap()]);
    assert!(out.status.success(), "{}", out.dump());
    let before = std::fs::metadata("/dev/null").unwrap();
    let out = get_2000(&server, &["--json", "/dev/null"]);
    assert!(out.status.success(), "{}", out.dump());
    let merged = respbench().run(&["merge", saved.to_str().unwrap(), "--json", "/dev/null"], T);
    assert!(merged.status.success(), "{}", merged.dump());
    let after = std::fs::metadata("/dev/null").unwrap();
    assert!(after.file_type().is_char_device(), "/dev/null is no longer a device: {after:?}");
    assert_eq!((after.rdev(), after.ino()), (before.rdev(), before.ino()), "/dev/null was replaced");
    assert_eq!(std::fs::read("/dev/null").unwrap(), b"", "/dev/null holds something");
    assert_eq!(names(&dir), BTreeSet::from(["run.json".to_string()]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A symlink at `--hlog`'s path (to a file of someone else's, planted in a shared directory) is
/// refused before the run, saying so, and the file it points to is untouched (#56 item 2): it
/// was opened with `O_CREAT | O_TRUNC`, following the link, and truncated and overwritten.
#[test]
fn a_symlink_at_the_hlog_path_is_refused_before_the_run() {
    let server = RedisServer::start();
    let dir = scratch("hlog-link");
    let (victim_dir, victim) = victim("hlog-victim");
    let hlog = dir.join("run.hlog");
    symlink(&victim, &hlog).unwrap();
    let out = get_2000(&server, &["--hlog", hlog.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let want = format!(
        "--hlog {}: cannot create it: it is a symbolic link (to {}), which respbench does not follow there: \
         name the file itself",
        hlog.display(),
        victim.display()
    );
    assert_eq!(out.stderr.trim_end(), want, "{}", out.dump());
    assert_eq!(server.command_calls("get"), 0, "the run went ahead");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the victim's own bytes\n");
    assert_eq!(std::fs::metadata(&victim).unwrap().modified().unwrap(), past(), "the victim was written");
    assert!(std::fs::symlink_metadata(&hlog).unwrap().file_type().is_symlink());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&victim_dir);
}

/// The process's umask, from `/proc/self/status` (respbench inherits it).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:")).expect("Umask in /proc/self/status");
    u32::from_str_radix(line.trim(), 8).unwrap()
}

/// `--hlog`'s file is 0600 while the run writes it, and gets the usual mode (0666 less the
/// umask) when the run ends, here by Ctrl-C (#56 item 2): it was created 0666 less the umask
/// from the start.
#[test]
fn the_hlog_is_private_while_the_run_goes() {
    use std::os::unix::fs::PermissionsExt;
    let server = RedisServer::start();
    let dir = scratch("hlog-mode");
    let hlog = dir.join("run.hlog");
    let port = server.port().to_string();
    let mut run = respbench().spawn(&[
        "-p",
        &port,
        "-t",
        "get",
        "--rps",
        "100",
        "--duration",
        "60s",
        "-q",
        "--hlog",
        hlog.to_str().unwrap(),
    ]);
    respbench_tests::wait_until("the hlog's first interval", T, || {
        std::fs::read_to_string(&hlog).is_ok_and(|t| t.contains("Tag=GET,"))
    });
    let mode = std::fs::metadata(&hlog).unwrap().permissions().mode() & 0o777;
    // Read while the run went on: it had not exited after.
    assert!(!run.has_exited(), "the run ended before its log's mode was read");
    assert_eq!(mode, 0o600, "the log's mode while the run goes: {mode:o}");
    run.interrupt();
    let out = run.wait(T);
    assert_eq!(out.status.code(), Some(130), "{}", out.dump());
    let mode = std::fs::metadata(&hlog).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666 & !umask(), "the log's mode once the run ended: {mode:o}");
    assert_eq!(names(&dir), BTreeSet::from(["run.hlog".to_string()]));
    let _ = std::fs::remove_dir_all(&dir);
}
