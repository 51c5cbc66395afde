//! TLS end to end (issue #13): `--tls`, `--cacert`, `--cacertdir`, `--insecure`, `--cert`/`--key`,
//! `--sni` and `rediss://` against a real `redis-server` with a TLS port, certificates made by
//! `openssl` at test time (`respbench_tests::tls`).
//!
//! Each check is written once as `fn(Tool)`. `tls_tests!` instantiates the `both` list for
//! respbench on mio (`mio::NAME`) and for the reference `redis-benchmark`
//! (`redis_benchmark::NAME`): the same command line works with both, which is the compatibility
//! claim, and the reference run checks the check. The `every_backend` list, the TLS byte layer
//! under a backend's reads and writes (a handshake, then a deep pipeline of large values), runs
//! on the other backends too (`smol::NAME`, `uring::NAME`); the options, verification and its
//! errors are the command line's and rustls', the same on every backend. The `respbench_only` list
//! is the faults redis-benchmark cannot be run on: when verification fails in the handshake of
//! its benchmark connections it hangs (documented by `redis_benchmark_hangs_on_a_failed_handshake`).
//!
//! Like redis-benchmark, respbench verifies the certificate chain and sends a server name only
//! with `--sni`; unlike it (it checks no name), respbench checks the certificate for the name
//! the server was given by (`-h NAME`, `--sni NAME`) or its IP address, where the certificate
//! names any IP address (`names_*` below).

use std::path::{Path, PathBuf};
use std::time::Duration;

use respbench_tests::tls::{client_hello_sni, HelloCapture, ServerCert, TlsOptions};
use respbench_tests::{check_json_independently, parse_quiet, Output, RedisServer, Tool};

/// The hard limit of a run that is expected to end on its own.
// Generous: a 2-core CI machine runs two tests at once, and TLS handshakes are CPU.
const T: Duration = Duration::from_secs(60);

macro_rules! tls_tests {
    (
        every_backend: [$($every:ident),* $(,)?],
        both: [$($both:ident),* $(,)?],
        respbench_only: [$($own:ident),* $(,)?] $(,)?
    ) => {
        mod mio {
            $(#[test] fn $every() { super::$every(respbench_tests::respbench_on("mio")); })*
            $(#[test] fn $both() { super::$both(respbench_tests::respbench_on("mio")); })*
            $(#[test] fn $own() { super::$own(respbench_tests::respbench_on("mio")); })*
        }
        mod smol {
            $(#[test] fn $every() { super::$every(respbench_tests::respbench_on("smol")); })*
        }
        mod uring {
            $(#[test] fn $every() { super::$every(respbench_tests::respbench_on("uring")); })*
        }
        mod redis_benchmark {
            $(#[test] fn $every() { super::$every(respbench_tests::redis_benchmark()); })*
            $(#[test] fn $both() { super::$both(respbench_tests::redis_benchmark()); })*
        }
    };
}

tls_tests!(
    every_backend: [deep_pipeline_large_values],
    both: [
        cacert,
        client_certificate,
        insecure,
        cacertdir,
        sni,
        sni_sent_only_when_asked,
        certificate_without_the_address,
        keepalive_0,
        rediss_uri,
        plain_client_on_the_tls_port,
        unreadable_key,
        ciphersuites,
        openssl_cipher_lists,
    ],
    respbench_only: [
        ciphers_restrict_and_keywords_are_refused,
        tls_groups,
        wrong_ca,
        expired_certificate,
        client_certificate_missing,
        tls_on_a_plain_port,
        no_ca_without_insecure,
        maxclients_over_tls,
        names_match_or_are_refused,
        ip_addresses_match_or_are_refused,
        no_ip_address_to_match_is_noted,
        insecure_checks_no_name,
        pubsub_subscribers_over_tls,
    ],
);

fn tls_server(cert: ServerCert, auth_clients: bool) -> RedisServer {
    RedisServer::start_tls(TlsOptions { cert, auth_clients })
}

fn s(p: &Path) -> String {
    p.to_str().expect("a UTF-8 path").to_string()
}

/// `-h 127.0.0.1 -p TLS_PORT --tls` and `extra`.
fn tls_args(server: &RedisServer, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = ["-h", "127.0.0.1", "-p", &server.tls_port().to_string(), "--tls"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: non-zero exit\n{}", out.dump());
}

fn titles(out: &Output) -> Vec<String> {
    parse_quiet(&out.stdout).into_iter().map(|q| q.title).collect()
}

/// `-t set,get -n 2000 -q` succeeded: both result lines, and the server ran exactly 2000 of
/// each (with `-P 1` redis-benchmark's counts are exact too).
fn set_get_2000(server: &RedisServer, out: &Output, what: &str) {
    ok(out, what);
    assert_eq!(titles(out), ["SET", "GET"], "{what}\n{}", out.dump());
    assert_eq!(server.command_calls("set"), 2000, "{what}: SET calls\n{}", out.dump());
    assert_eq!(server.command_calls("get"), 2000, "{what}: GET calls\n{}", out.dump());
}

const SET_GET_2000: [&str; 5] = ["-t", "set,get", "-n", "2000", "-q"];

fn no_panic(out: &Output) {
    assert!(!out.stderr.contains("panicked"), "panic\n{}", out.dump());
}

/// A fault found in the handshake: exit status 1, no panic, not killed on timeout, and not
/// only noticed by a timeout (the startup connection's, 5 s by default, or `--timeout`).
fn failed(out: &Output) {
    ended_with_1(out);
    for timeout in ["no reply from the server within", "timed out"] {
        assert!(!out.stderr.contains(timeout), "only a timeout noticed it\n{}", out.dump());
    }
}

/// Exit status 1, no panic, not killed on timeout.
fn ended_with_1(out: &Output) {
    assert!(!out.timed_out, "hung\n{}", out.dump());
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    no_panic(out);
}

/// Runs `tool` with a hard limit of `T`.
fn fault_run(tool: &Tool, args: &[String]) -> Output {
    tool.run_lenient(args, T)
}

fn stderr_has(out: &Output, fragment: &str) {
    assert!(
        out.stderr.to_lowercase().contains(&fragment.to_lowercase()),
        "stderr does not say {fragment:?}\n{}",
        out.dump()
    );
}

// ---- connections that work ----

/// Server-only TLS (`--tls-auth-clients no`), the chain checked against `--cacert`.
fn cacert(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().ca);
    let out = tool.run(&tls_args(&server, &[&["--cacert", &ca][..], &SET_GET_2000].concat()), T);
    set_get_2000(&server, &out, "--cacert");
}

/// `-t pubsub`'s subscribers over TLS: each group's thread reads its sockets non-blocking,
/// the records decrypted as they come (two groups of them here), and every message arrives.
fn pubsub_subscribers_over_tls(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().ca);
    // The drain grace ends as soon as every message has come; a loaded machine may need it.
    let extra = [
        "--cacert",
        &ca,
        "-t",
        "pubsub",
        "-c",
        "1",
        "--subscribers",
        "200",
        "-n",
        "500",
        "--drain-grace",
        "60s",
        "-q",
    ];
    let out = tool.run(&tls_args(&server, &extra), T);
    ok(&out, "pubsub over TLS");
    assert_eq!(server.command_calls("publish"), 500);
    assert!(
        out.stdout.contains("delivery to 200 subscribers: 500 published, 100000 delivered, 0 missing"),
        "{}",
        out.dump()
    );
}

/// `--tls-auth-clients yes`: the client presents `--cert`/`--key`.
fn client_certificate(tool: Tool) {
    let server = tls_server(ServerCert::Good, true);
    let c = server.certs();
    let (ca, cert, key) = (s(&c.ca), s(&c.client.cert), s(&c.client.key));
    let out = tool.run(
        &tls_args(&server, &[&["--cacert", &ca, "--cert", &cert, "--key", &key][..], &SET_GET_2000].concat()),
        T,
    );
    set_get_2000(&server, &out, "--cert/--key");
}

/// `--insecure` with no CA: nothing is verified, so even the expired certificate (whose CA
/// the client was not given either) is taken.
fn insecure(tool: Tool) {
    let server = tls_server(ServerCert::Expired, false);
    let out = tool.run(&tls_args(&server, &[&["--insecure"][..], &SET_GET_2000].concat()), T);
    set_get_2000(&server, &out, "--insecure");
}

/// `--cacertdir`: the CA found through the directory's hash link.
fn cacertdir(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let dir = s(&server.certs().ca_dir);
    let out = tool.run(&tls_args(&server, &[&["--cacertdir", &dir][..], &SET_GET_2000].concat()), T);
    set_get_2000(&server, &out, "--cacertdir");
}

/// A server that takes only TLS 1.3 with ChaCha20-Poly1305: `--tls-ciphersuites` naming that
/// suite works with both tools (OpenSSL's and rustls' names are the same for TLS 1.3).
fn ciphersuites(tool: Tool) {
    let server = chacha_only_server();
    let ca = s(&server.certs().ca);
    let suite = ["--cacert", &ca, "--tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"];
    let out = tool.run(&tls_args(&server, &[&suite[..], &SET_GET_2000].concat()), T);
    set_get_2000(&server, &out, "--tls-ciphersuites TLS_CHACHA20_POLY1305_SHA256");
}

fn chacha_only_server() -> RedisServer {
    RedisServer::start_tls_with(
        TlsOptions { cert: ServerCert::Good, auth_clients: false },
        &[("tls-protocols", "TLSv1.3"), ("tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256")],
    )
}

/// `--tls-ciphers` takes OpenSSL's cipher-list strings, as peers' TLS tests and guides give
/// them (`DEFAULT:-AES128-SHA256`), with both tools; a harness that fails on stderr passes.
fn openssl_cipher_lists(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().ca);
    for list in ["DEFAULT:-AES128-SHA256", "HIGH:!aNULL:!MD5", "ECDHE+AESGCM"] {
        server.cli(&["CONFIG", "RESETSTAT"]);
        let out = tool.run(
            &tls_args(&server, &[&["--cacert", &ca, "--tls-ciphers", list][..], &SET_GET_2000].concat()),
            T,
        );
        set_get_2000(&server, &out, list);
        assert_eq!(out.stderr, "", "{list}\n{}", out.dump());
    }
}

/// RESPBENCH-ONLY (redis-benchmark 7 has no such option): `--tls-groups` in OpenSSL's names, `?` skipping one rustls
/// lacks; a list that names a group rustls lacks is refused before the run, naming those it has.
fn tls_groups(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().ca);
    let out = tool.run(
        &tls_args(&server, &[&["--cacert", &ca, "--tls-groups", "P-384:?X448"][..], &SET_GET_2000].concat()),
        T,
    );
    set_get_2000(&server, &out, "--tls-groups P-384:?X448");
    assert_eq!(out.stderr, "", "{}", out.dump());
    let out =
        fault_run(&tool, &tls_args(&server, &["--cacert", &ca, "--tls-groups", "X448", "-n", "10", "-q"]));
    failed(&out);
    stderr_has(&out, "'X448' is not a group rustls has");
    stderr_has(&out, "X25519/x25519, P-256/secp256r1/prime256v1, P-384/secp384r1");
    assert!(out.stdout.trim().is_empty(), "refused before any test\n{}", out.dump());
}

/// RESPBENCH-ONLY: the cipher options restrict what is offered: a suite the server does not take
/// fails the handshake, in one line, status 1; a cipher list that leaves no suite is refused with
/// what each rule matched and the names that are taken.
fn ciphers_restrict_and_keywords_are_refused(tool: Tool) {
    let server = chacha_only_server();
    let ca = s(&server.certs().ca);
    let out = fault_run(
        &tool,
        &tls_args(
            &server,
            &["--cacert", &ca, "--tls-ciphersuites", "TLS_AES_128_GCM_SHA256", "-n", "10", "-q"],
        ),
    );
    failed(&out);
    stderr_has(&out, "HandshakeFailure");
    let out = fault_run(
        &tool,
        &tls_args(&server, &["--cacert", &ca, "--tls-ciphers", "MEDIUM:!aNULL", "-n", "10", "-q"]),
    );
    failed(&out);
    stderr_has(&out, "MEDIUM matched 0, !aNULL matched 0");
    stderr_has(&out, "ECDHE-RSA-AES128-GCM-SHA256");
    assert!(out.stdout.trim().is_empty(), "refused before any test\n{}", out.dump());
}

/// `--sni localhost` with a certificate for localhost.
fn sni(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().ca);
    let out = tool
        .run(&tls_args(&server, &[&["--cacert", &ca, "--sni", "localhost"][..], &SET_GET_2000].concat()), T);
    set_get_2000(&server, &out, "--sni localhost");
}

/// The server name a client sends, as read from its ClientHello by a listener that then hangs
/// up (so the run fails: only the ClientHello matters). The tool is killed once it has been
/// read: redis-benchmark would hang on its benchmark connections.
fn sent_server_name(tool: &Tool, host: &str, extra: &[&str]) -> Option<String> {
    let capture = HelloCapture::start();
    let mut args: Vec<String> =
        ["-h", host, "-p", &capture.port().to_string(), "--tls", "--insecure", "-n", "1", "-t", "ping_mbulk"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut run = tool.spawn(&args);
    let hello = loop {
        if let Some(hello) = capture.client_hello(Duration::from_millis(50)) {
            break hello;
        }
        if run.has_exited() || run.elapsed() > Duration::from_secs(10) {
            break Err(format!("no ClientHello within {:?}", run.elapsed()));
        }
    };
    let out = run.wait_lenient(Duration::ZERO);
    let hello = hello.unwrap_or_else(|e| panic!("{e}\n{}", out.dump()));
    no_panic(&out);
    client_hello_sni(&hello).unwrap_or_else(|e| panic!("{e}: {hello:02x?}"))
}

/// The server name goes out only with `--sni`, and is `--sni`'s, whatever `-h` is: a client
/// that named `-h localhost` by default would break servers that route on SNI.
fn sni_sent_only_when_asked(tool: Tool) {
    assert_eq!(
        sent_server_name(&tool, "127.0.0.1", &["--sni", "redis.example"]).as_deref(),
        Some("redis.example")
    );
    assert_eq!(
        sent_server_name(&tool, "localhost", &["--sni", "redis.example"]).as_deref(),
        Some("redis.example")
    );
    assert_eq!(sent_server_name(&tool, "localhost", &[]), None);
}

/// A certificate that names neither 127.0.0.1 nor localhost, reached by IP address: it names no
/// IP address, so there is nothing to match and only the chain is checked (redis-benchmark checks
/// no name at all). What respbench says about it: `no_ip_address_to_match_is_noted`.
fn certificate_without_the_address(tool: Tool) {
    let server = tls_server(ServerCert::OtherName, false);
    let ca = s(&server.certs().ca);
    let out = tool.run(&tls_args(&server, &[&["--cacert", &ca][..], &SET_GET_2000].concat()), T);
    set_get_2000(&server, &out, "certificate for redis.example only");
}

/// Large values in deep pipelines: TLS records and socket buffers full in both directions at
/// once must not deadlock the byte layer.
fn deep_pipeline_large_values(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().ca);
    let out = tool.run(
        &tls_args(
            &server,
            &["--cacert", &ca, "-t", "set,get", "-P", "1000", "-d", "100000", "-n", "3000", "-c", "2", "-q"],
        ),
        T,
    );
    ok(&out, "-P 1000 -d 100000 over TLS");
    assert_eq!(titles(&out), ["SET", "GET"], "{}", out.dump());
    if tool.is_respbench() {
        // RESPBENCH-ONLY: exactly -n requests per test (redis-benchmark sends whole batches).
        assert_eq!(server.command_calls("set"), 3000);
        assert_eq!(server.command_calls("get"), 3000);
    } else {
        assert!(server.command_calls("get") >= 3000);
    }
}

fn connections_received(server: &RedisServer) -> u64 {
    let v = server.info_field("stats", "total_connections_received").expect("total_connections_received");
    v.parse().unwrap_or_else(|_| panic!("total_connections_received: {v:?}"))
}

/// A fresh path for a `--json` document.
fn json_path(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("respbench-tls-{}-{tag}-{n}.json", std::process::id()))
}

/// `-k 0`: a new connection, with a full TLS handshake, for every request (`-P 1`).
///
/// `total_connections_received` counts every connection the server accepted. Between the two
/// readings it grows by: the tool's startup connection (1: cli/src/server.rs checks the server
/// and reads `CONFIG GET save/appendonly` on one connection of its own; redis-benchmark does
/// the same), respbench's probe's connection for the test's end reading, the benchmark's
/// connections, and the `redis-cli` of the second reading (a
/// reading's own connection is counted before its `INFO` answers, so the first one's is already
/// in `before`).
fn keepalive_0(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().ca);
    let json = json_path("k0");
    let mut args =
        tls_args(&server, &["--cacert", &ca, "-k", "0", "-t", "set", "-n", "1000", "-c", "10", "-q"]);
    if tool.is_respbench() {
        args.extend(["--json".to_string(), s(&json)]);
    }
    let before = connections_received(&server);
    let out = tool.run(&args, T);
    let after = connections_received(&server);
    ok(&out, "-k 0 over TLS");
    assert_eq!(server.command_calls("set"), 1000, "{}", out.dump());
    const STARTUP: u64 = 1;
    const SECOND_READING: u64 = 1;
    // respbench's probe reads the server at the test's end over a new connection (the startup
    // connection is closed while the test runs), and its per-second sampler over its own: one
    // for its reading at the test's start (closed before the test's connections open), one from
    // when they are up.
    let probe_end = 3 * u64::from(tool.is_respbench());
    let benchmark = (after - before)
        .checked_sub(STARTUP + SECOND_READING + probe_end)
        .expect("fewer connections than the harness's own");
    assert!(
        benchmark >= 1000,
        "-k 0 -n 1000 -P 1 made only {benchmark} benchmark connections\n{}",
        out.dump()
    );
    if !tool.is_respbench() {
        return;
    }
    // RESPBENCH-ONLY: --json says how many connections were set up, and how long each phase took;
    // the document passes the schema, and its histograms decode to what it reports.
    let text =
        std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("no JSON at {}: {e}", json.display()));
    check_json_independently(&json);
    let _ = std::fs::remove_file(&json);
    let doc: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON: {e}\n{text}"));
    assert_eq!(doc["config"]["tls"], true, "config.tls");
    let setup = &doc["tests"][0]["connection_setup"];
    assert_eq!(
        setup["connections"].as_u64(),
        Some(benchmark),
        "connection_setup.connections is not the server's count ({benchmark} besides the startup connection)\n{setup:#}"
    );
    for phase in ["connect", "tls", "handshake", "total"] {
        let p = &setup["phases"][phase];
        for q in ["p50", "p99", "max"] {
            assert!(p["latency_ms"][q].is_number(), "phases.{phase}.latency_ms.{q}\n{setup:#}");
        }
        assert!(p["histogram"]["data"].is_string(), "phases.{phase}.histogram\n{setup:#}");
    }
    let tls_p50 = setup["phases"]["tls"]["latency_ms"]["p50"].as_f64().unwrap();
    assert!(tls_p50 > 0.0, "a TLS handshake took no time: {setup:#}");
    let total_p50 = setup["phases"]["total"]["latency_ms"]["p50"].as_f64().unwrap();
    assert!(total_p50 >= tls_p50, "the whole set-up took less than its TLS handshake: {setup:#}");
}

/// `-u rediss://HOST:PORT` is `--tls` (the TLS port speaks nothing else).
fn rediss_uri(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let uri = format!("rediss://127.0.0.1:{}", server.tls_port());
    let ca = s(&server.certs().ca);
    let out = tool.run(&[&["-u", &uri, "--cacert", &ca][..], &SET_GET_2000].concat(), T);
    set_get_2000(&server, &out, "rediss://");
}

// ---- faults ----

/// A plain client on the TLS port: the server drops it at its first bytes, which are no TLS
/// record. It must end at once, not wait for a reply.
fn plain_client_on_the_tls_port(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let port = server.tls_port().to_string();
    let mut args =
        ["-h", "127.0.0.1", "-p", &port, "-t", "set", "-n", "200", "-q"].map(String::from).to_vec();
    if tool.is_respbench() {
        // redis-benchmark has no --timeout.
        args.extend(["--timeout".to_string(), "2s".to_string()]);
    }
    let out = fault_run(&tool, &args);
    failed(&out);
    assert_eq!(server.command_calls("set"), 0, "{}", out.dump());
    if tool.is_respbench() {
        stderr_has(&out, &format!("127.0.0.1:{port}"));
        // Under -q too, the line that says what failed says what to do (as the verbose
        // report's notes did alone before).
        let error = out.stderr.lines().find(|l| l.starts_with("Error: ")).unwrap_or_default();
        assert!(error.ends_with("(it speaks TLS on this port: add --tls)"), "{}", out.dump());
    }
}

/// The `Error: …` line after the results: `Error: ` and the reason a test's connections
/// failed, as its `N connections failed: REASON` line gives it.
/// The connections of a test can fail in more than one way (a reset, a close): the line names
/// the run's first failure, one of those said.
fn error_line_names_the_failure(out: &Output) -> String {
    let reasons: Vec<&str> = out
        .stderr
        .lines()
        .filter_map(|l| {
            l.split_once(" failed: ").filter(|(n, _)| n.ends_with("connection") || n.ends_with("connections"))
        })
        .map(|(_, r)| r)
        .collect();
    assert!(!reasons.is_empty(), "no failed connections\n{}", out.dump());
    let said = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("Error: "))
        .unwrap_or_else(|| panic!("no Error line\n{}", out.dump()));
    assert!(reasons.contains(&said), "the Error line names none of the failures\n{}", out.dump());
    said.to_string()
}

/// Holds `n` plain connections to `server` open (each answered a PING, so the server counts it).
fn hold(server: &RedisServer, n: usize) -> Vec<std::net::TcpStream> {
    use std::io::{Read, Write};
    (0..n)
        .map(|_| {
            let mut c = server.connect();
            c.write_all(b"PING\r\n").expect("PING");
            let mut reply = [0u8; 7];
            c.read_exact(&mut reply).expect("PONG");
            assert_eq!(&reply, b"+PONG\r\n", "held connection {n} refused");
            c
        })
        .collect()
}

/// At `maxclients` a TLS connection gets no `-ERR max number of clients reached` (Redis refuses
/// it before its handshake, so the words cannot go out): it is closed or reset in the handshake.
/// respbench says so with the peers' `Error:` and its reason, for the benchmark's connections
/// (`-c 10` where 2 fit) and for the startup connection (every slot held already).
fn maxclients_over_tls(tool: Tool) {
    let server = RedisServer::start_tls_with(TlsOptions::default(), &[("maxclients", "3")]);
    let ca = s(&server.certs().ca);
    let port = server.tls_port();
    let out =
        fault_run(&tool, &tls_args(&server, &["--cacert", &ca, "-c", "10", "-t", "get", "-n", "2000", "-q"]));
    ended_with_1(&out);
    let reason = error_line_names_the_failure(&out);
    assert!(reason.starts_with(&format!("TLS with 127.0.0.1:{port}: ")), "{}", out.dump());
    let _held = hold(&server, 3);
    let out = fault_run(&tool, &tls_args(&server, &["--cacert", &ca, "-t", "get", "-n", "200", "-q"]));
    ended_with_1(&out);
    assert!(
        out.stderr
            .starts_with(&format!("Error: TLS with 127.0.0.1:{port}: the server closed the connection"))
            || out.stderr.starts_with(&format!("Error: TLS with 127.0.0.1:{port}: Connection reset by peer")),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("get"), 0, "{}", out.dump());
}

/// Runs `-t get -n 200 -q` with `--cacert` and `extra` against `server`, writing `--json` to
/// `json`.
fn name_run(tool: &Tool, server: &RedisServer, extra: &[&str], json: &Path) -> Output {
    let ca = s(&server.certs().ca);
    let json = s(json);
    let args = [&["--cacert", &ca, "-t", "get", "-n", "200", "--json", &json][..], extra].concat();
    fault_run(tool, &tls_args(server, &args))
}

/// The document's `server.tls_name_checked` and its notices.
fn name_checked(json: &Path) -> (serde_json::Value, String) {
    let text = std::fs::read_to_string(json).unwrap_or_else(|e| panic!("no JSON at {}: {e}", json.display()));
    let _ = std::fs::remove_file(json);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON: {e}"));
    (doc["server"]["tls_name_checked"].clone(), doc["warnings"].to_string())
}

/// Runs [`name_run`] and expects `name` refused: before the first test, status 1, in one line
/// after `Error:` that says what the certificate is for and what to do.
fn refused_for_the_name(tool: &Tool, server: &RedisServer, extra: &[&str], name: &str) {
    let before = server.command_calls("get");
    let out = name_run(tool, server, extra, &json_path("refused"));
    failed(&out);
    let port = server.tls_port();
    let words = format!(
        "Error: TLS with 127.0.0.1:{port}: invalid peer certificate: certificate not valid for name \"{name}\""
    );
    assert!(out.stderr.starts_with(&words), "{}", out.dump());
    stderr_has(&out, "(the certificate is not for the name or address the server was given by, -h or --sni");
    assert_eq!(server.command_calls("get"), before, "{}", out.dump());
}

/// Named by `--sni` or `-h`, the server's certificate must be for that name, as every TLS
/// client has it: `localhost` passes the certificate for 127.0.0.1 and localhost, `redis.example`
/// does not; the certificate for redis.example only passes `--sni redis.example`, not localhost.
fn names_match_or_are_refused(tool: Tool) {
    let good = tls_server(ServerCert::Good, false);
    let json = json_path("name-match");
    let out = name_run(&tool, &good, &["-q", "--sni", "localhost"], &json);
    ok(&out, "--sni localhost");
    assert_eq!(name_checked(&json).0, true, "{}", out.dump());
    let port = good.tls_port().to_string();
    let by_host = [
        "-h",
        "localhost",
        "-p",
        &port,
        "--tls",
        "--cacert",
        &s(&good.certs().ca),
        "-t",
        "get",
        "-n",
        "200",
        "-q",
    ];
    ok(&tool.run(&by_host, T), "-h localhost");
    refused_for_the_name(&tool, &good, &["-q", "--sni", "redis.example"], "redis.example");
    let other = tls_server(ServerCert::OtherName, false);
    let out = name_run(&tool, &other, &["-q", "--sni", "redis.example"], &json_path("other-match"));
    ok(&out, "--sni redis.example");
    refused_for_the_name(&tool, &other, &["-q", "--sni", "localhost"], "localhost");
}

/// Reached by IP address, a certificate that names IP addresses must name that one: the one for
/// 127.0.0.1 passes, the one for 192.0.2.1 (and localhost) does not, unless named `localhost`.
fn ip_addresses_match_or_are_refused(tool: Tool) {
    let good = tls_server(ServerCert::Good, false);
    let json = json_path("ip-match");
    let out = name_run(&tool, &good, &["-q"], &json);
    ok(&out, "IP:127.0.0.1 by 127.0.0.1");
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert_eq!(name_checked(&json).0, true, "{}", out.dump());
    let other = tls_server(ServerCert::OtherIp, false);
    refused_for_the_name(&tool, &other, &["-q"], "127.0.0.1");
    let out = name_run(&tool, &other, &["-q", "--sni", "localhost"], &json_path("ip-by-name"));
    ok(&out, "IP:192.0.2.1,DNS:localhost by --sni localhost");
}

/// Reached by IP address, a certificate that names no IP address (DNS:redis.example only) has
/// nothing to match: it passes on its chain, and the verbose report and the JSON say that its
/// name was not checked; stderr stays empty (it is not an error), under -q too.
fn no_ip_address_to_match_is_noted(tool: Tool) {
    let other = tls_server(ServerCert::OtherName, false);
    let json = json_path("no-ip");
    let out = name_run(&tool, &other, &[], &json);
    ok(&out, "DNS:redis.example by 127.0.0.1");
    assert_eq!(out.stderr, "", "{}", out.dump());
    let note = "NOTE: TLS: the server's name was not checked against its certificate (the chain was): the \
                server's certificate names no IP address (subjectAltName) and the server was reached by IP \
                address (127.0.0.1): give -h NAME or --sni NAME, a name in the certificate, to check one";
    assert!(out.stdout.lines().any(|l| l == note), "{}", out.dump());
    let (checked, notices) = name_checked(&json);
    assert_eq!(checked, false, "{}", out.dump());
    assert!(notices.contains("names no IP address (subjectAltName)"), "{notices}");
    let out = name_run(&tool, &other, &["-q"], &json_path("no-ip-q"));
    ok(&out, "-q");
    assert_eq!(out.stderr, "", "{}", out.dump());
}

/// `--insecure` checks nothing: neither a name nor an address that the certificate is not for.
fn insecure_checks_no_name(tool: Tool) {
    let other = tls_server(ServerCert::OtherIp, false);
    let json = json_path("insecure-ip");
    let out = name_run(&tool, &other, &["-q", "--insecure"], &json);
    ok(&out, "--insecure, IP:192.0.2.1 by 127.0.0.1");
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert_eq!(name_checked(&json).0, false, "{}", out.dump());
    let out =
        name_run(&tool, &other, &["-q", "--insecure", "--sni", "wrong.example"], &json_path("insecure-name"));
    ok(&out, "--insecure --sni wrong.example");
}

/// `--key` that cannot be read: refused before the run (redis-benchmark: "Invalid private key").
fn unreadable_key(tool: Tool) {
    let server = tls_server(ServerCert::Good, true);
    let c = server.certs();
    let (ca, cert) = (s(&c.ca), s(&c.client.cert));
    let out = fault_run(
        &tool,
        &tls_args(
            &server,
            &["--cacert", &ca, "--cert", &cert, "--key", "/nonexistent", "-t", "set", "-n", "200", "-q"],
        ),
    );
    failed(&out);
    assert_eq!(server.command_calls("set"), 0, "{}", out.dump());
    if tool.is_respbench() {
        stderr_has(&out, "/nonexistent");
    } else {
        stderr_has(&out, "Invalid private key");
    }
}

/// A server certificate from another CA.
fn wrong_ca(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().wrong_ca);
    let out = fault_run(&tool, &tls_args(&server, &["--cacert", &ca, "-t", "set", "-n", "200", "-q"]));
    failed(&out);
    stderr_has(&out, "certificate");
    assert_eq!(server.command_calls("set"), 0, "{}", out.dump());
}

fn expired_certificate(tool: Tool) {
    let server = tls_server(ServerCert::Expired, false);
    let ca = s(&server.certs().ca);
    let out = fault_run(&tool, &tls_args(&server, &["--cacert", &ca, "-t", "set", "-n", "200", "-q"]));
    failed(&out);
    stderr_has(&out, "expired");
    assert_eq!(server.command_calls("set"), 0, "{}", out.dump());
}

/// `--tls-auth-clients yes` and no `--cert`: in TLS 1.3 the client's handshake completes and the
/// server's refusal (a `certificate_required` alert) comes with the first read.
fn client_certificate_missing(tool: Tool) {
    let server = tls_server(ServerCert::Good, true);
    let ca = s(&server.certs().ca);
    let out = fault_run(&tool, &tls_args(&server, &["--cacert", &ca, "-t", "set", "-n", "200", "-q"]));
    failed(&out);
    stderr_has(&out, "certificate");
    assert_eq!(server.command_calls("set"), 0, "{}", out.dump());
}

/// `--tls` on the plain port: redis-server takes the ClientHello for the start of an inline
/// command and waits for its end of line, so only the startup timeout ends it.
fn tls_on_a_plain_port(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().ca);
    let port = server.port().to_string();
    let out = fault_run(
        &tool,
        &[
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "--tls",
            "--cacert",
            &ca,
            "-t",
            "set",
            "-n",
            "200",
            "-q",
            "--timeout",
            "2s",
        ]
        .map(String::from),
    );
    ended_with_1(&out);
    stderr_has(&out, "TLS");
    stderr_has(&out, &format!("127.0.0.1:{port}"));
    assert_eq!(server.command_calls("set"), 0, "{}", out.dump());
}

/// No `--cacert`, `--cacertdir` or `--insecure`: the system's roots, which do not hold the test
/// CA, so the run is refused (this is what makes `insecure` a test of `--insecure`).
fn no_ca_without_insecure(tool: Tool) {
    let server = tls_server(ServerCert::Good, false);
    let out = fault_run(&tool, &tls_args(&server, &["-t", "set", "-n", "200", "-q"]));
    failed(&out);
    stderr_has(&out, "certificate");
    assert_eq!(server.command_calls("set"), 0, "{}", out.dump());
}

/// Documents why the handshake faults above are respbench-only: Debian's redis-benchmark
/// 7.0.15 warns that it could not fetch the server's CONFIG, then waits forever on benchmark
/// connections whose handshake failed. If this fails, redis-benchmark was fixed: move the
/// faults to `both`.
#[test]
fn redis_benchmark_hangs_on_a_failed_handshake() {
    let server = tls_server(ServerCert::Good, false);
    let ca = s(&server.certs().wrong_ca);
    let out = respbench_tests::redis_benchmark().run_lenient(
        &tls_args(&server, &["--cacert", &ca, "-t", "set", "-n", "200", "-q"]),
        Duration::from_secs(2),
    );
    assert!(out.timed_out, "redis-benchmark ended on a failed handshake\n{}", out.dump());
    assert!(out.stderr.contains("Could not fetch server CONFIG"), "{}", out.dump());
}
