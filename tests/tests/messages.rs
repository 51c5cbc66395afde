//! Issue 24, messages say what happened: the report counts the clients that ran beside the
//! ones the server refused, a rejected request is not a refused connection, and a TLS hint
//! comes only when the server does speak TLS. Once, on mio: the wording is the session's.

use std::time::Duration;

use respbench_tests::fake::{Action, FakeServer};
use respbench_tests::tls::{ServerCert, TlsOptions};
use respbench_tests::{json_path, respbench, RedisServer};

const T: Duration = Duration::from_secs(60);

fn rejected(server: &RedisServer) -> u64 {
    server.info_field("stats", "rejected_connections").unwrap().parse().unwrap()
}

/// `-c 10` against `maxclients 4`: the report says how many clients ran and how many the
/// server refused, and the refused count is the server's own `rejected_connections`; the JSON
/// has the same count.
#[test]
fn the_report_counts_the_clients_that_ran_beside_the_refused() {
    let server = RedisServer::start_with(&[("maxclients", "4")]);
    let before = rejected(&server);
    let port = server.port().to_string();
    let json = json_path("messages", "refused");
    let json_arg = json.to_str().unwrap();
    let out = respbench().run(&["-p", &port, "-c", "10", "-t", "get", "-n", "2000", "--json", json_arg], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let refused = rejected(&server) - before;
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("parallel clients"))
        .unwrap_or_else(|| panic!("{}", out.dump()));
    let ran = 10 - refused;
    assert!(refused >= 6, "the startup connection and three clients fit: {refused}\n{}", out.dump());
    assert_eq!(line, format!("  {ran} parallel clients (of -c 10: {refused} refused by the server)"));
    assert!(!out.stdout.contains("10 parallel clients"), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let never = &doc["tests"][0]["clients_never_ran"];
    assert_eq!(
        (never["refused"].as_u64(), never["unreachable"].as_u64()),
        (Some(refused), Some(0)),
        "{never}"
    );
}

/// Every client connected: the line is redis-benchmark's.
#[test]
fn the_report_keeps_the_peers_line_when_every_client_ran() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-c", "7", "-t", "get", "-n", "100"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("\n  7 parallel clients\n"), "{}", out.dump());
}

/// A server that answers a request with an error and closes (Redis does after a protocol
/// error): the request was rejected, the connection was not refused.
#[test]
fn a_rejected_request_is_not_a_refused_connection() {
    let server = FakeServer::start(|_| {
        Action::ReplyAndClose(b"-ERR Protocol error: invalid bulk length\r\n".to_vec())
    });
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-c", "2", "-n", "20", "-t", "get", "-q"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains(
            "connections failed: the server rejected a request and closed the connection: ERR Protocol error: invalid bulk length"
        ),
        "{}",
        out.dump()
    );
    assert!(!out.stderr.contains("refused the connection"), "{}", out.dump());
    assert!(
        out.stderr.contains("Error from server: ERR Protocol error: invalid bulk length"),
        "{}",
        out.dump()
    );
}

/// A proxy with no server behind it closes each plain connection without a word: no TLS hint,
/// since a TLS hello gets no TLS answer there either.
#[test]
fn a_closed_plain_connection_gets_no_tls_hint() {
    let server = FakeServer::start_with_config(|_| Action::Close);
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-n", "10", "-t", "get"], T);
    assert!(out.stdout.contains("the server closed the connection"), "{}", out.dump());
    assert!(!out.stdout.contains("TLS") && !out.stderr.contains("TLS"), "{}", out.dump());
}

/// A TLS port spoken to in plain RESP: the hint says so, because the port answered a TLS hello.
#[test]
fn a_tls_port_spoken_to_in_plain_gets_the_hint() {
    let server = RedisServer::start_tls(TlsOptions { cert: ServerCert::Good, auth_clients: false });
    let port = server.tls_port().to_string();
    let out = respbench().run(&["-h", "127.0.0.1", "-p", &port, "-n", "10", "-t", "get"], T);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("TLS on this port: add --tls"), "{}", out.dump());
}

/// What the outputs library says on stderr is written, not printed with a macro that panics: with
/// stderr on a full device, `-e`'s `Error from server` lines fail quietly and the run keeps its
/// own status (1: no request succeeded), where it died with status 101, "failed printing to
/// stderr" (#47 item 4: no eprintln! in report/src; #56 item 11).
#[test]
fn a_full_stderr_leaves_the_status_the_runs() {
    let server = RedisServer::start();
    let bin = respbench().path.to_string_lossy().into_owned();
    let full = respbench_tests::Tool {
        path: "/bin/sh".into(),
        pre_args: vec!["-c".into(), "exec \"$0\" \"$@\" 2>/dev/full".into(), bin],
        ..respbench()
    };
    let out =
        full.run_lenient(&["-p", &server.port().to_string(), "-n", "100", "-c", "1", "-q", "-e", "FOO"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stdout.contains("FOO: errors: 100 (ERR: 100)"), "{}", out.dump());
}
