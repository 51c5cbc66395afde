//! `--mptcp` (valkey-benchmark 9): every TCP connection is a Linux MPTCP socket. That the
//! sockets really are MPTCP is each backend's (each makes its own); the run, the fallback
//! against a server that speaks plain TCP, and the kernel's refusal are the session's: once,
//! on mio.

use std::time::Duration;

use respbench_tests::{json_path, take_document, RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

respbench_tests::backend_tests!(
    every: [the_connections_are_mptcp_sockets],
    mio: [a_run_falls_back_to_tcp_against_redis, a_kernel_that_refuses_mptcp_is_an_error_before_the_run],
);

/// The kernel's count of MPTCP SYNs sent (`MPTcpExt: … MPCapableSYNTX` of /proc/net/netstat):
/// `None` where the kernel has no MPTCP or it is off.
fn mptcp_syns_sent() -> Option<u64> {
    let enabled = std::fs::read_to_string("/proc/sys/net/mptcp/enabled").ok()?;
    if enabled.trim() == "0" {
        return None;
    }
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut lines = netstat.lines().filter(|l| l.starts_with("MPTcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let i = names.split_whitespace().position(|n| n == "MPCapableSYNTX")?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// Each of the run's connections sends an MPTCP SYN: the counter rises by at least the `-c`
/// connections and the startup connection (redis-server answers without MPTCP, so the kernel
/// falls back and the run completes).
fn the_connections_are_mptcp_sockets(tool: Tool) {
    let Some(before) = mptcp_syns_sent() else {
        eprintln!("skipped: this kernel has no MPTCP, or net.mptcp.enabled is 0");
        return;
    };
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = tool.run(&["-p", &port, "--mptcp", "-c", "4", "-n", "200", "-t", "set", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    let after = mptcp_syns_sent().expect("the counter");
    assert!(after - before >= 5, "{} MPTCP SYNs for 4 connections and the startup one", after - before);
    assert_eq!(server.command_calls("set"), 200, "{}", out.dump());
}

/// Against redis-server (plain TCP) the kernel falls back: the run is the same as without
/// `--mptcp`, every request answered, nothing on stderr (the JSON's config says `mptcp`); `-k 0`'s
/// reconnects and `-I`'s connections are MPTCP sockets too.
fn a_run_falls_back_to_tcp_against_redis(tool: Tool) {
    if mptcp_syns_sent().is_none() {
        eprintln!("skipped: this kernel has no MPTCP, or net.mptcp.enabled is 0");
        return;
    }
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("mptcp", "fallback");
    let args = [
        "-p",
        &port,
        "--mptcp",
        "-c",
        "10",
        "-n",
        "1000",
        "-t",
        "set,get",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ];
    let out = tool.run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    assert_eq!(doc["config"]["mptcp"], true, "{doc}");
    assert_eq!((server.command_calls("set"), server.command_calls("get")), (1000, 1000), "{}", out.dump());
    let before = mptcp_syns_sent().expect("the counter");
    let out = tool.run(&["-p", &port, "--mptcp", "-c", "2", "-n", "20", "-k", "0", "-t", "ping", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    // A new connection for each of PING_INLINE's and PING_MBULK's 20 requests.
    assert!(mptcp_syns_sent().expect("the counter") - before >= 40, "-k 0's connections are not MPTCP");
    // -I's idle connections: three, and the startup one.
    let before = mptcp_syns_sent().expect("the counter");
    let run = tool.spawn(&["-p", &port, "--mptcp", "-I", "-c", "3"]);
    // The footprint line, printed once the connections are up ("Creating 3 idle connections …"
    // comes before any of them).
    run.wait_for_stdout("3 idle connections: ");
    let idle = mptcp_syns_sent().expect("the counter") - before;
    run.interrupt();
    let out = run.wait(T);
    assert!(idle >= 4, "{idle} MPTCP SYNs for -I's 3 connections and the startup one\n{}", out.dump());
}

/// Installs a seccomp filter in the child that fails `socket(…, IPPROTO_MPTCP)` with
/// EPROTONOSUPPORT, as a kernel without MPTCP does.
fn deny_mptcp_sockets() -> std::io::Result<()> {
    use respbench_tests::seccomp::{fail, if_eq, install, load_arg, ALLOW, LOAD_NR};
    #[cfg(target_arch = "x86_64")]
    const SYS_SOCKET: u32 = 41;
    #[cfg(target_arch = "aarch64")]
    const SYS_SOCKET: u32 = 198;
    const EPROTONOSUPPORT: u32 = 93;
    install(&[
        LOAD_NR,
        // socket(2): look at its protocol; any other call is allowed.
        if_eq(SYS_SOCKET, 3),
        load_arg(2),
        // IPPROTO_MPTCP fails.
        if_eq(262, 1),
        fail(EPROTONOSUPPORT),
        ALLOW,
    ])
}

/// Where the kernel refuses MPTCP sockets, `--mptcp` is one clear error before the run, exit 1,
/// no panic; the same process without `--mptcp` runs.
fn a_kernel_that_refuses_mptcp_is_an_error_before_the_run(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let tool = Tool { pre_exec: Some(deny_mptcp_sockets), ..tool };
    let out = tool.run(&["-p", &port, "--mptcp", "-n", "100", "-t", "set", "-q"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let want =
        "--mptcp: the kernel refuses MPTCP sockets (Protocol not supported (os error 93)): net.mptcp.enabled";
    assert!(out.stderr.contains(want), "wanted {want:?}\n{}", out.dump());
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 0, "the run started");
    let out = tool.run(&["-p", &port, "-n", "100", "-t", "set", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 100, "{}", out.dump());
}
