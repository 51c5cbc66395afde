//! A test in which no request succeeded prints no rate, hit ratio or latency, in any format: it
//! says "no request succeeded" and the error counts, and the run exits 1 (issue #35: against
//! protected mode's `DENIED`, respbench printed `throughput 11828.65` and `hits: 100.0%` for 49
//! requests that were all errors).

use std::time::Duration;

use respbench_tests::fake::{Action, FakeServer};
use respbench_tests::{respbench, respbench_on, RedisServer};
use serde_json::Value;

const T: Duration = Duration::from_secs(30);
const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled\r\n";

#[test]
fn every_reply_an_error_prints_no_rate_in_any_format() {
    let server = FakeServer::replying(DENIED);
    let port = server.port().to_string();
    let base = ["-p", port.as_str(), "-t", "get", "-n", "49", "-c", "1"];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        respbench().run(&args, T)
    };
    let verbose = run(&[]);
    assert_eq!(verbose.status.code(), Some(1), "{}", verbose.dump());
    assert!(
        verbose.stdout.contains("no request succeeded: 49 replies in")
            && verbose.stdout.contains("every one an error reply"),
        "{}",
        verbose.dump()
    );
    for figure in ["throughput", "hits:", "requests per second", "Latency by percentile"] {
        assert!(!verbose.stdout.contains(figure), "{figure} printed:\n{}", verbose.dump());
    }
    assert!(verbose.stdout.contains("errors: 49 (DENIED: 49)"), "{}", verbose.dump());
    assert!(verbose.stderr.contains("Error from server: DENIED"), "{}", verbose.dump());

    let quiet = run(&["-q"]);
    assert_eq!(quiet.status.code(), Some(1), "{}", quiet.dump());
    assert!(quiet.stdout.contains("GET: no request succeeded: 49 replies"), "{}", quiet.dump());
    assert!(!quiet.stdout.contains("requests per second"), "{}", quiet.dump());
    assert!(quiet.stdout.contains("GET: errors: 49 (DENIED: 49)"), "{}", quiet.dump());

    let csv = run(&["--csv"]);
    assert_eq!(csv.status.code(), Some(1), "{}", csv.dump());
    let row =
        csv.stdout.lines().find(|l| l.starts_with("\"GET\"")).unwrap_or_else(|| panic!("{}", csv.dump()));
    assert!(row.starts_with("\"GET\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"49\""), "{row}");

    let json = run(&["-q", "--json", "-"]);
    assert_eq!(json.status.code(), Some(1), "{}", json.dump());
    let doc: Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", json.dump()));
    let t = &doc["tests"][0];
    assert_eq!(t["no_request_succeeded"], true, "{t}");
    assert!(t["rps"].is_null() && t["latency_ms"].is_null(), "{t}");
    assert_eq!(t["errors"]["DENIED"], 49, "{t}");
    assert_eq!(t["requests"], 49, "{t}");
}

/// A server that answers each connection's first command with an error and closes it: no
/// success, no rate (it printed `SET: 203.34 requests per second` for 0 successes).
#[test]
fn an_error_then_a_close_prints_no_rate() {
    let server = FakeServer::start(|_| Action::ReplyAndClose(b"-ERR going away\r\n".to_vec()));
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-t", "set", "-n", "100", "-c", "2", "-q"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stdout.contains("SET: no request succeeded"), "{}", out.dump());
    assert!(!out.stdout.contains("requests per second"), "{}", out.dump());
}

/// A `SELECT` the server refuses (`--dbnum` past its databases): no rate either.
#[test]
fn a_failing_select_prints_no_rate() {
    let server = RedisServer::start_with(&[("databases", "2")]);
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-t", "set", "-n", "100", "--dbnum", "5", "-q"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(!out.stdout.contains("requests per second"), "{}", out.dump());
    assert!(out.stderr.contains("DB index is out of range"), "{}", out.dump());
    assert!(out.stdout.contains("SET: no request succeeded: no reply"), "{}", out.dump());
}

/// A refused `SELECT` leaves nothing behind (#56 item 3): no request goes on a connection before
/// its handshake is answered, so `--dbnum 5` against a server of 2 databases wrote one key per
/// connection into database 0, sent behind the `SELECT` in the same write, before the refusal
/// was read. On every backend, and with `-k 0` (a new socket, and handshake, per batch).
#[test]
fn a_refused_select_writes_nothing_to_database_0() {
    let server = RedisServer::start_with(&[("databases", "2")]);
    let port = server.port().to_string();
    for backend in ["mio", "smol", "uring"] {
        for keepalive in ["1", "0"] {
            let args = ["-p", &port, "-t", "set", "-n", "100", "-c", "5", "-P", "4", "-k", keepalive];
            let out = respbench_on(backend).run(&[&args[..], &["--dbnum", "5", "-q"]].concat(), T);
            let what = format!("{backend} -k {keepalive}: {}", out.dump());
            assert_eq!(out.status.code(), Some(1), "{what}");
            assert!(out.stderr.contains("SELECT failed: ERR DB index is out of range"), "{what}");
            assert_eq!(server.dbsize(0), 0, "{what}");
            assert_eq!(server.command_calls("set"), 0, "{what}");
        }
    }
}
