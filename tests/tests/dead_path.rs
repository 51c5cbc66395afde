//! A network path that goes dead and comes back after the test (issue #24): respbench runs in a
//! network namespace that this test creates and removes, joined to the machine's by a veth
//! pair, and the path from respbench to the server drops everything (a blackhole route in the
//! namespace) from the moment the test is under way. The requests respbench counts
//! as abandoned or never sent must never reach the server: their sockets are reset (SO_LINGER
//! 0), so no kernel retransmits them once the path is back, and the server's own
//! `INFO commandstats` equal respbench's completed count.
//!
//! Needs root (`ip netns`); `RESPBENCH_NO_NETNS=1` skips it, saying so.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use respbench_tests::{respbench, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(30);

/// Runs `ip ARGS…` (in namespace `ns` when given) and panics when it fails.
fn ip(ns: Option<&str>, args: &[&str]) {
    run_in(ns, "ip", args);
}

fn run_in(ns: Option<&str>, program: &str, args: &[&str]) {
    let mut cmd = Command::new("ip");
    match ns {
        Some(ns) => cmd.args(["netns", "exec", ns, program]).args(args),
        None if program == "ip" => cmd.args(args),
        None => Command::new(program).args(args),
    };
    let out = cmd.output().unwrap_or_else(|e| panic!("{program} {args:?}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A namespace and a veth pair into it, removed on drop.
struct Namespace {
    name: String,
    host_if: String,
    /// The machine's address on the pair, where the server listens.
    host_addr: String,
    /// The namespace's end of the pair.
    inner_if: String,
}

impl Namespace {
    fn create() -> Namespace {
        let id = std::process::id() % 250;
        let name = format!("rbdead{}", std::process::id());
        let (host_if, inner_if) = (format!("rbd{id}h"), format!("rbd{id}n"));
        let (host_addr, inner_addr) = (format!("10.213.{id}.1"), format!("10.213.{id}.2"));
        ip(None, &["netns", "add", &name]);
        let ns = Namespace { name, host_if, host_addr, inner_if };
        ip(None, &["link", "add", &ns.host_if, "type", "veth", "peer", "name", &ns.inner_if]);
        ip(None, &["link", "set", &ns.inner_if, "netns", &ns.name]);
        ip(None, &["addr", "add", &format!("{}/24", ns.host_addr), "dev", &ns.host_if]);
        ip(None, &["link", "set", &ns.host_if, "up"]);
        let inner = Some(ns.name.as_str());
        ip(inner, &["addr", "add", &format!("{inner_addr}/24"), "dev", &ns.inner_if]);
        ip(inner, &["link", "set", &ns.inner_if, "up"]);
        ip(inner, &["link", "set", "lo", "up"]);
        ns
    }

    /// The path from the namespace to the server drops everything (`dead`: a blackhole route
    /// to the server's address, more specific than the pair's), or nothing. Replies still come
    /// back: what the server ran before, respbench gets.
    fn path_dead(&self, dead: bool) {
        let route = format!("{}/32", self.host_addr);
        ip(Some(&self.name), &["route", if dead { "add" } else { "del" }, "blackhole", &route]);
    }

    /// respbench on `backend`, run inside the namespace.
    fn respbench(&self, backend: &str) -> Tool {
        let mut tool = respbench();
        let binary = tool.path.to_string_lossy().into_owned();
        tool.pre_args =
            ["netns", "exec", &self.name, &binary, "--backend", backend].map(String::from).to_vec();
        tool.path = PathBuf::from("ip");
        tool
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.host_if]).output();
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// `--rps 2000 --duration 2s -c 4 -P 2`, the path dead from the 100th reply to after the test:
/// respbench counts every arrival (completed, abandoned, unsent), exits 1, and once the path is
/// back the server has run exactly the requests respbench counted as completed.
#[test]
fn what_a_dead_path_held_never_reaches_the_server_later() {
    if std::env::var_os("RESPBENCH_NO_NETNS").is_some() {
        eprintln!("skipped: RESPBENCH_NO_NETNS is set (this test needs ip netns)");
        return;
    }
    let backends: &[&str] =
        if cfg!(target_os = "linux") { &["mio", "smol", "uring"] } else { &["mio", "smol"] };
    for &backend in backends {
        let ns = Namespace::create();
        let bind = format!("127.0.0.1 {}", ns.host_addr);
        let server = RedisServer::start_with(&[("bind", &bind), ("protected-mode", "no")]);
        let json =
            std::env::temp_dir().join(format!("respbench-dead-path-{}-{backend}.json", std::process::id()));
        let port = server.port().to_string();
        let args = [
            "-h",
            &ns.host_addr,
            "-p",
            &port,
            "-t",
            "get",
            "-c",
            "4",
            "-P",
            "2",
            "--rps",
            "2000",
            "--duration",
            "2s",
            "--drain-grace",
            "200ms",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        let run = ns.respbench(backend).spawn(&args);
        server.wait_for_calls("get", 100);
        ns.path_dead(true);
        let out = run.wait_lenient(T);
        assert_eq!(out.status.code(), Some(1), "{backend}: {}", out.dump());
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let _ = std::fs::remove_file(&json);
        let t = &doc["tests"][0];
        let completed = t["requests"].as_u64().unwrap();
        let a = &t["arrivals"];
        let (abandoned, unsent) = (a["abandoned"].as_u64().unwrap(), a["unsent"].as_u64().unwrap());
        assert!(abandoned + unsent > 0, "{backend}: {doc}");
        assert_eq!(a["due"], completed + a["lost"].as_u64().unwrap() + abandoned + unsent, "{doc}");
        // The path comes back. A socket closed normally would still hold the abandoned requests
        // and its kernel would retransmit them (after its backoff, within seconds); a reset one
        // holds nothing.
        ns.path_dead(false);
        std::thread::sleep(Duration::from_secs(5));
        let calls = server.command_calls("get");
        eprintln!(
            "{backend}: respbench completed {completed}, abandoned {abandoned}, unsent {unsent}; the server ran {calls}"
        );
        assert_eq!(calls, completed, "{backend}: {doc}");
    }
}
