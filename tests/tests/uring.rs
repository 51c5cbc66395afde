//! What only the io_uring backend has (issue #17): the single-shot fallback of kernels without
//! multishot receive, `--uring-sqpoll`, and a clear refusal where io_uring is not allowed (a
//! seccomp filter on the respbench process only, as container runtimes install). The socket
//! checks every backend must pass run on uring with the other backends' (`backend_tests!`'s
//! `every` lists, `uring::NAME`).

use std::time::Duration;

use respbench_tests::{respbench, respbench_on, RedisServer, Tool};

const T: Duration = Duration::from_secs(30);

fn port(server: &RedisServer) -> String {
    server.port().to_string()
}

/// Exact request counts over pipelines and a unix socket, with the receives the report names.
fn exact_counts(tool: &Tool, receives: &str) {
    let server = RedisServer::start();
    let p = port(&server);
    let out = tool.run(&["-p", &p, "-t", "set,get", "-n", "5001", "-c", "7", "-P", "16", "-d", "1000"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 5001);
    assert_eq!(server.command_calls("get"), 5001);
    assert!(out.stdout.contains(receives), "{}", out.dump());
    let sock = server.socket_path();
    let out = tool.run(&["-s", sock.to_str().unwrap(), "-t", "incr", "-n", "3000", "-c", "5", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("incr"), 3000);
}

#[test]
fn multishot_receives() {
    exact_counts(&respbench_on("uring"), "io_uring: multishot receives into a provided-buffer ring");
}

#[test]
fn single_shot_fallback() {
    let tool =
        Tool { env: vec![("RESPBENCH_URING_SINGLE_SHOT".into(), "1".into())], ..respbench_on("uring") };
    exact_counts(&tool, "io_uring: single-shot receives into a provided-buffer ring (asked for)");
}

#[test]
fn sqpoll() {
    let tool =
        Tool { pre_args: vec!["--backend".into(), "uring".into(), "--uring-sqpoll".into()], ..respbench() };
    exact_counts(&tool, "SQPOLL kernel thread (its CPU is in the client cpu figures)");
}

/// Large values go by reference from the shared payload (several segments in one
/// `IORING_OP_SENDMSG` under a pipeline), over a unix socket and with the SQPOLL thread
/// submitting: each key's value is `-d`'s payload, byte for byte.
#[test]
fn large_values_by_reference_over_a_unix_socket_and_sqpoll() {
    let server = RedisServer::start();
    let sock = server.socket_path();
    let d = (1 << 20) + 3;
    let want = String::from_utf8(respbench_core::template::payload(d)).expect("an ASCII payload");
    let plain = respbench_on("uring");
    let sqpoll =
        Tool { pre_args: vec!["--backend".into(), "uring".into(), "--uring-sqpoll".into()], ..respbench() };
    for (run, tool) in [plain, sqpoll].iter().enumerate() {
        server.cli(&["FLUSHALL"]);
        let ds = d.to_string();
        let args = [
            "-s",
            sock.to_str().unwrap(),
            "-t",
            "set",
            "-d",
            &ds,
            "-n",
            "40",
            "-r",
            "8",
            "-c",
            "3",
            "-P",
            "4",
            "-q",
        ];
        let out = tool.run(&args, T);
        assert!(out.status.success(), "{}", out.dump());
        assert_eq!(server.command_calls("set"), 40 * (run as u64 + 1));
        let keys = server.cli(&["KEYS", "*"]);
        assert!(!keys.trim().is_empty(), "no keys written");
        for key in keys.lines().filter(|k| !k.is_empty()) {
            let got = server.cli(&["GET", key]);
            assert!(
                got.trim_end_matches('\n') == want,
                "{key}'s value differs from -d's payload (run {run})"
            );
        }
    }
}

#[test]
fn sqpoll_needs_the_uring_backend() {
    let out = respbench_on("mio").run(&["--uring-sqpoll", "-t", "get", "-n", "10"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--uring-sqpoll needs --backend uring"), "{}", out.dump());
}

/// Installs a seccomp filter in the child that fails `io_uring_setup` with `errno`.
fn deny_io_uring_setup(errno: u32) -> std::io::Result<()> {
    use respbench_tests::seccomp::{fail, if_eq, install, ALLOW, LOAD_NR};
    // io_uring_setup is 425 on every architecture (the numbers after 403 are shared).
    const IO_URING_SETUP: u32 = 425;
    install(&[LOAD_NR, if_eq(IO_URING_SETUP, 1), fail(errno), ALLOW])
}

/// A refusal ends the run before the first test, with status 1 and the reason.
fn refused(pre_exec: fn() -> std::io::Result<()>, reason: &str) {
    let server = RedisServer::start();
    let p = port(&server);
    let tool = Tool { pre_exec: Some(pre_exec), ..respbench_on("uring") };
    let out = tool.run(&["-p", &p, "-t", "get", "-n", "100000"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let want = format!("io_uring is not available here: io_uring_setup: {reason}");
    assert!(out.stderr.contains(&want), "wanted {want:?}\n{}", out.dump());
    assert!(out.stderr.trim_end().ends_with("; use --backend mio"), "{}", out.dump());
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    assert_eq!(server.command_calls("get"), 0, "the run started");
    // The same process restrictions leave the other backends alone.
    let tool = Tool { pre_exec: Some(pre_exec), ..respbench_on("mio") };
    let out = tool.run(&["-p", &p, "-t", "get", "-n", "100", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
}

#[test]
fn refused_by_seccomp_eperm() {
    refused(|| deny_io_uring_setup(1), "Operation not permitted: a seccomp filter");
}

#[test]
fn hidden_by_seccomp_enosys() {
    refused(|| deny_io_uring_setup(38), "Function not implemented: the kernel has no io_uring");
}
