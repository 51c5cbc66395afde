//! The password off the command line (issue #35), against a server with `requirepass`:
//! `REDISCLI_AUTH` and `--askpass` (one line of stdin when it is not a terminal) give it, `-a`
//! wins over `REDISCLI_AUTH` as in redis-cli, and a password given with `-a` or inside `-u` is
//! gone from `/proc/PID/cmdline` while the run goes, and from the JSON document; redis-cli's
//! warning goes to a terminal's stderr only, so stderr here stays empty.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use respbench_tests::{parse_quiet, respbench, RedisServer, Tool};

const T: Duration = Duration::from_secs(30);
const PASSWORD: &str = "s3cret-Pa55word";

fn server() -> RedisServer {
    RedisServer::start_with(&[("requirepass", PASSWORD)])
}

fn with_env(key: &str, value: &str) -> Tool {
    let mut tool = respbench();
    tool.env.push((key.to_string(), value.to_string()));
    tool
}

fn short_run(server: &RedisServer) -> Vec<String> {
    ["-p", &server.port().to_string(), "-t", "get", "-n", "2000", "-q"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn rediscli_auth_gives_the_password_and_a_wins_over_it() {
    let server = server();
    let out = with_env("REDISCLI_AUTH", PASSWORD).run(&short_run(&server), T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(parse_quiet(&out.stdout).len(), 1, "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    // Without it the server refuses: the variable is what authenticated.
    let out = respbench().run(&short_run(&server), T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    // -a wins when both are given, as in redis-cli.
    let mut args = short_run(&server);
    args.extend(["-a".to_string(), PASSWORD.to_string()]);
    let out = with_env("REDISCLI_AUTH", "wrong").run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
}

/// Runs respbench with `args` and `stdin` written to its standard input.
fn run_with_stdin(args: &[String], stdin: &str) -> std::process::Output {
    let mut child = Command::new(respbench().path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning respbench");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn askpass_reads_one_line_of_stdin() {
    let server = server();
    let mut args = short_run(&server);
    args.push("--askpass".to_string());
    let out = run_with_stdin(&args, &format!("{PASSWORD}\nnot read\n"));
    let said = format!("{out:?}");
    assert!(out.status.success(), "{said}");
    assert_eq!(parse_quiet(&String::from_utf8_lossy(&out.stdout)).len(), 1, "{said}");
    assert!(out.stderr.is_empty(), "{said}");
    // --askpass wins over -a and REDISCLI_AUTH, as in redis-cli.
    let mut wrong = args.clone();
    wrong.extend(["-a".to_string(), "wrong".to_string()]);
    assert!(run_with_stdin(&wrong, &format!("{PASSWORD}\r\n")).status.success());
    // Nothing on stdin: an error, before connecting.
    let out = run_with_stdin(&args, "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("--askpass: no password"), "{out:?}");
}

/// `/proc/PID/cmdline` of a running respbench given the password as `how(port)` says (`-a PW`,
/// `-u URI`, `--password=PW`): the password is not there, the option is, as `shown`.
fn password_is_gone_from_cmdline(name: &str, how: fn(u16) -> Vec<String>, shown: fn(u16) -> String) {
    let server = server();
    let port = server.port();
    let json = std::env::temp_dir().join(format!("respbench-secrets-{}-{name}.json", std::process::id()));
    let mut args: Vec<String> = ["-p", &port.to_string(), "-c", "2", "-t", "get", "-n", "1000000000", "-q"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(how(port));
    args.extend(["--json".to_string(), json.to_str().unwrap().to_string()]);
    let run = respbench().spawn(&args);
    // Authenticated and under way: the options were read long before.
    server.wait_for_calls("get", 100);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", run.pid())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    run.interrupt();
    let out = run.wait(T);
    assert_eq!(out.status.code(), Some(130), "{}", out.dump());
    assert!(!cmdline.contains(PASSWORD), "{cmdline}");
    assert!(cmdline.contains(&shown(port)), "{cmdline}");
    // Not a terminal: no warning, nothing on stderr.
    assert_eq!(out.stderr, "", "{}", out.dump());
    let doc = std::fs::read_to_string(&json).unwrap();
    let _ = std::fs::remove_file(&json);
    let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert!(parsed["command_line"].is_array(), "{doc}");
    assert!(!doc.contains(PASSWORD), "{doc}");
}

fn stars() -> String {
    "*".repeat(PASSWORD.len())
}

#[test]
fn a_password_given_with_a_is_gone_from_cmdline() {
    password_is_gone_from_cmdline(
        "a",
        |_| vec!["-a".to_string(), PASSWORD.to_string()],
        |_| format!(" -a {} ", stars()),
    );
}

#[test]
fn a_password_given_with_password_equals_is_gone_from_cmdline() {
    password_is_gone_from_cmdline(
        "equals",
        |_| vec![format!("--password={PASSWORD}")],
        |_| format!(" --password={} ", stars()),
    );
}

#[test]
fn a_password_inside_u_is_gone_from_cmdline() {
    password_is_gone_from_cmdline(
        "uri",
        |port| vec!["-u".to_string(), format!("redis://default:{PASSWORD}@127.0.0.1:{port}")],
        |port| format!(" -u redis://default:{}@127.0.0.1:{port} ", stars()),
    );
}
