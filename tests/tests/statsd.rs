//! `--statsd` and memtier_benchmark's `--statsd-host` against a real redis-server: the test
//! binds the UDP port StatsD would (StatsD answers nothing, so the receiver only records the
//! datagrams) and, for `--graphite-port`, a TCP listener that records the event POSTs. The
//! names, types, prefix and label are memtier's (its statsd.cpp); the per-second counts add up
//! to the server's `INFO commandstats`.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::sync::mpsc;
use std::time::Duration;

use respbench_tests::{json_path, respbench, RedisServer};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

/// A StatsD stand-in: a UDP socket on a free loopback port.
fn receiver() -> (UdpSocket, String) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let at = socket.local_addr().unwrap().to_string();
    (socket, at)
}

/// Every datagram that came, once the run is over (a short wait for the last).
fn datagrams(socket: &UdpSocket) -> Vec<String> {
    socket.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut buf = vec![0u8; 65536];
    let mut out = Vec::new();
    while let Ok(n) = socket.recv(&mut buf) {
        out.push(String::from_utf8(buf[..n].to_vec()).unwrap());
    }
    out
}

/// The value of `name` in a datagram's lines (`name:VALUE|type`), with its type.
fn metric<'a>(datagram: &'a str, name: &str) -> Option<(&'a str, &'a str)> {
    datagram.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.split_once('|'))
}

/// The datagrams of the seconds (those with a `requests` counter), in order.
fn seconds<'a>(all: &'a [String], start: &str) -> Vec<&'a String> {
    all.iter().filter(|d| metric(d, &format!("{start}requests")).is_some()).collect()
}

/// `-t get --duration 3s --json`: a datagram a second with memtier's names and types under
/// `--statsd-prefix` and `--statsd-label` (sanitized as memtier does), each second's count the
/// JSON series' second's, and all of them the server's count of GETs.
#[test]
fn each_second_is_one_datagram_with_memtiers_names_and_the_servers_count() {
    let server = RedisServer::start();
    let (socket, at) = receiver();
    let json = json_path("statsd", "seconds");
    let port = server.port().to_string();
    let out = respbench().run(
        &[
            "-p",
            &port,
            "-t",
            "get",
            "-c",
            "4",
            "--duration",
            "3s",
            "-q",
            "--statsd",
            &at,
            "--statsd-prefix",
            "team.redis",
            "--statsd-label",
            "night run",
            "--print-percentiles",
            "50,99.9",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let all = datagrams(&socket);
    let start = "team.redis.night_run.";
    for d in &all {
        for l in d.lines() {
            assert!(l.starts_with(start), "{l}");
        }
    }
    let secs = seconds(&all, start);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let series = doc["tests"][0]["series"].as_array().unwrap();
    assert_eq!(secs.len(), series.len(), "a datagram per second of the series: {all:#?}");
    assert!(secs.len() >= 3, "{all:#?}");
    let mut sum = 0u64;
    for (d, s) in secs.iter().zip(series) {
        let (n, kind) = metric(d, &format!("{start}requests")).unwrap();
        assert_eq!(kind, "c");
        assert_eq!(n.parse::<u64>().unwrap(), s["requests"].as_u64().unwrap(), "{d}");
        sum += n.parse::<u64>().unwrap();
        for (name, kind) in [
            ("ops_sec", "g"),
            ("ops_sec_avg", "g"),
            ("latency_ms", "ms"),
            ("latency_avg_ms", "ms"),
            ("connections", "g"),
            ("progress_pct", "g"),
            ("latency_p50", "g"),
            ("latency_p99_9", "g"),
            ("errors", "c"),
        ] {
            let (value, k) = metric(d, &format!("{start}{name}")).unwrap_or_else(|| panic!("{name}: {d}"));
            assert_eq!(k, kind, "{name}: {d}");
            assert!(value.parse::<f64>().is_ok_and(f64::is_finite), "{name}: {d}");
        }
        assert_eq!(metric(d, &format!("{start}connections")), Some(("4", "g")));
        assert_eq!(metric(d, &format!("{start}errors")), Some(("0", "c")));
    }
    assert_eq!(sum, server.command_calls("get"), "{all:#?}");
    assert_eq!(sum, doc["tests"][0]["requests"].as_u64().unwrap());
    // A whole second's rate is its count; the last second's average rate is the test's (its
    // seconds span the test, the last one cut short where the test ended).
    assert_eq!(metric(secs[0], &format!("{start}ops_sec")).unwrap().0, series[0]["requests"].to_string());
    let avg: f64 = metric(secs[secs.len() - 1], &format!("{start}ops_sec_avg")).unwrap().0.parse().unwrap();
    let rps = doc["tests"][0]["rps"].as_f64().unwrap();
    assert!((avg - rps).abs() <= 1.0 + rps * 1e-3, "ops_sec_avg {avg}, the test's rps {rps}");
    // The test's end, as memtier's: the rates and the progress back to 0.
    let last = all.last().unwrap();
    assert_eq!(metric(last, &format!("{start}ops_sec")), Some(("0", "g")), "{last}");
    assert_eq!(metric(last, &format!("{start}progress_pct")), Some(("0", "g")), "{last}");
}

/// memtier's own line with `--statsd-*` and `--graphite-port`: the prefix `memtier`, the run
/// label, memtier's two event annotations POSTed with its JSON bodies, and the seconds' counts
/// adding up to the SETs and GETs the server ran.
#[test]
fn memtiers_options_send_its_metrics_and_annotations() {
    let server = RedisServer::start();
    let (socket, at) = receiver();
    let statsd_port = at.rsplit_once(':').unwrap().1.to_string();
    let graphite = TcpListener::bind("127.0.0.1:0").unwrap();
    let graphite_port = graphite.local_addr().unwrap().port().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in graphite.incoming().take(2) {
            let mut text = String::new();
            let mut s = s.unwrap();
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            s.read_to_string(&mut text).unwrap();
            tx.send(text).unwrap();
        }
    });
    let port = server.port().to_string();
    let out = respbench().run(
        &[
            "memtier",
            "-p",
            &port,
            "-t",
            "1",
            "-c",
            "2",
            "--test-time",
            "2",
            "--ratio",
            "1:3",
            "--hide-histogram",
            "--statsd-host",
            "127.0.0.1",
            "--statsd-port",
            &statsd_port,
            "--statsd-run-label",
            "nightly",
            "--graphite-port",
            &graphite_port,
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert!(
        out.stderr.contains(&format!(
            "statsd: initialized, sending metrics to 127.0.0.1:{statsd_port} with prefix 'memtier' run_label 'nightly'"
        )),
        "{}",
        out.dump()
    );
    let all = datagrams(&socket);
    let secs = seconds(&all, "memtier.nightly.");
    assert!(secs.len() >= 2, "{all:#?}");
    let sum: u64 =
        secs.iter().map(|d| metric(d, "memtier.nightly.requests").unwrap().0.parse::<u64>().unwrap()).sum();
    assert_eq!(sum, server.command_calls("set") + server.command_calls("get"), "{all:#?}");
    assert!(metric(secs[0], "memtier.nightly.latency_p99").is_some(), "memtier's default percentiles");
    let posts: Vec<String> = rx.iter().take(2).collect();
    let bodies = [
        r#"{"what":"Benchmark Started","tags":"memtier,start,run:nightly","data":"threads=1 connections=2 run=1"}"#,
        r#"{"what":"Benchmark Completed","tags":"memtier,end,run:nightly","data":"run=1"}"#,
    ];
    for (post, body) in posts.iter().zip(bodies) {
        let (head, got) = post.split_once("\r\n\r\n").unwrap();
        assert_eq!(got, body);
        assert!(head.starts_with("POST /events/ HTTP/1.1\r\n"), "{head}");
        assert!(head.contains(&format!("\r\nHost: 127.0.0.1:{graphite_port}\r\n")), "{head}");
        assert!(head.contains(&format!("\r\nContent-Length: {}\r\n", body.len())), "{head}");
        assert!(head.contains("\r\nContent-Type: application/json\r\n"), "{head}");
    }
}

/// A `--statsd` host that does not resolve stops the run before it connects; as
/// memtier_benchmark, memtier's line warns as memtier does and runs without metrics. Options
/// that need `--statsd`, and memtier's bad ports, are refused naming themselves.
#[test]
fn a_bad_host_or_option_is_said() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let bad = "no-such-host.invalid";
    let out = respbench()
        .run(&["-p", &port, "-t", "get", "-n", "100", "--statsd", &format!("{bad}:8125"), "-q"], T);
    assert!(!out.status.success(), "{}", out.dump());
    assert!(out.stderr.contains(&format!("--statsd: cannot resolve host '{bad}'")), "{}", out.dump());
    assert_eq!(server.command_calls("get"), 0, "no request before the refusal");
    let out = respbench().run(
        &["memtier", "-p", &port, "-t", "1", "-c", "1", "-n", "50", "--ratio", "0:1", "--statsd-host", bad],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stderr.contains(&format!("statsd: failed to resolve host '{bad}'")), "{}", out.dump());
    assert!(
        out.stderr.contains("warning: failed to initialize StatsD client, metrics will not be sent"),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("get"), 50);
    for (args, says) in [
        (&["-t", "get", "--statsd-label", "x"][..], "--statsd-label needs --statsd HOST[:PORT]"),
        (&["-t", "get", "--statsd", "127.0.0.1:0"][..], "invalid value '127.0.0.1:0' for --statsd"),
        (
            &["memtier", "--statsd-host", "h", "--statsd-port", "0"][..],
            "statsd-port must be a valid port number",
        ),
        (
            &["memtier", "--statsd-host", "h", "--graphite-port", "x"][..],
            "graphite-port must be a valid port number",
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["-p", &port]);
        let out = respbench().run(&all, T);
        assert!(!out.status.success(), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains(says), "{args:?}: {}", out.dump());
    }
}

/// Datagrams the kernel refuses (to the broadcast address, without `SO_BROADCAST`) and POSTs
/// that cannot connect never fail or hold the run: each kind is counted and said once at the
/// end, and the run's figures are the server's as always.
#[test]
fn sends_that_fail_are_counted_and_said_once() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench().run(
        &[
            "-p",
            &port,
            "-t",
            "get",
            "-n",
            "20000",
            "-c",
            "2",
            "-q",
            "--statsd",
            "255.255.255.255:8125",
            "--graphite-port",
            "9",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("get"), 20000);
    let said: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("statsd: ")).collect();
    assert_eq!(said.len(), 1, "{}", out.dump());
    let (counts, why) = said[0]
        .strip_prefix("statsd: ")
        .and_then(|l| l.split_once(" datagrams could not be sent to 255.255.255.255:8125: "))
        .unwrap_or_else(|| panic!("{}", out.dump()));
    let (failed, of) = counts.split_once(" of ").unwrap();
    assert_eq!(failed, of, "every datagram failed: {}", out.dump());
    assert!(failed.parse::<u64>().unwrap() >= 2, "a second and the test's end: {}", out.dump());
    assert!(why.contains("Permission denied"), "{why}");
    let posts: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("graphite: ")).collect();
    assert_eq!(posts.len(), 1, "{}", out.dump());
    assert!(
        posts[0].starts_with("graphite: 2 of 2 event annotations could not be posted: 255.255.255.255:9: ")
    );
}
