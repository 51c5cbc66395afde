//! `--follow-cursor` against a real redis-server: each client sends `SCAN 0 …`, then the cursor
//! each reply returns until one returns 0, then starts again. Every full iteration visits every
//! key (SCAN's guarantee for keys present throughout), so the elements of the full iterations
//! are at least the keys times the iterations; the first calls and the continuations are
//! reported apart and add up to the server's own count of the command (INFO commandstats).

use std::time::Duration;

use respbench_tests::{json_path, parse_csv, respbench, take_document, RedisServer};

const T: Duration = Duration::from_secs(120);

/// `n` keys (`key:1` …) written with one MSET, or `n` fields of hash `h` with one HSET.
fn fill(server: &RedisServer, command: &str, n: usize) {
    let mut args: Vec<String> = vec![command.into()];
    if command == "HSET" {
        args.push("h".into());
    }
    for i in 1..=n {
        args.push(format!("key:{i}"));
        args.push("v".into());
    }
    server.cli(&args);
}

/// Runs `respbench --follow-cursor COMMAND…` with a JSON document and returns it, with stdout.
fn follow(server: &RedisServer, extra: &[&str], command: &[&str]) -> (serde_json::Value, String) {
    let json = json_path("cursor", command[0]);
    let port = server.port().to_string();
    let mut args = vec!["-p", &port, "--json", json.to_str().unwrap(), "--follow-cursor"];
    args.extend_from_slice(extra);
    args.extend_from_slice(command);
    let out = respbench().run(&args, T);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    (serde_json::from_str(&take_document(&json)).unwrap(), out.stdout)
}

/// The requests of the test named `name` in the document.
fn requests(doc: &serde_json::Value, name: &str) -> u64 {
    let t = doc["tests"].as_array().unwrap().iter().find(|t| t["name"] == name);
    t.unwrap_or_else(|| panic!("no test {name}: {doc}"))["requests"].as_u64().unwrap()
}

#[test]
fn scan_iterations_visit_every_key() {
    let server = RedisServer::start();
    fill(&server, "MSET", 10_000);
    assert_eq!(server.dbsize(0), 10_000);
    let (doc, _) = follow(&server, &["-c", "4", "-n", "3000", "-q"], &["SCAN", "0", "COUNT", "100"]);
    let whole = doc["tests"].as_array().unwrap().last().unwrap();
    let c = &whole["cursor"];
    let (iterations, elements) = (c["iterations"].as_u64().unwrap(), c["elements"].as_u64().unwrap());
    // 750 calls a client, an iteration about 100 calls (COUNT 100 over 10,000 keys).
    assert!(iterations >= 4, "{c}");
    assert!(elements >= 10_000 * iterations, "{c}");
    assert_eq!(c["bad"].as_u64(), Some(0), "{c}");
    let first = requests(&doc, "SCAN 0 COUNT 100 (first call)");
    let next = requests(&doc, "SCAN 0 COUNT 100 (continuation)");
    assert_eq!(first + next, 3000, "{doc}");
    assert_eq!(whole["requests"].as_u64(), Some(3000));
    // Each iteration began with a first call; each client has at most one under way at the end.
    assert!(first >= iterations && first <= iterations + 4, "{first} first calls, {iterations} iterations");
    assert!(next >= iterations * 90, "{next} continuations for {iterations} iterations of ~100 calls");
    assert_eq!(server.command_calls("scan"), 3000);
}

#[test]
fn hscan_of_a_big_hash_in_every_output() {
    let server = RedisServer::start();
    fill(&server, "HSET", 5_000);
    assert_eq!(server.cli(&["HLEN", "h"]), "5000");
    let command = ["HSCAN", "h", "0", "COUNT", "50"];
    let (doc, quiet) = follow(&server, &["-c", "2", "-n", "1000", "-q"], &command);
    let c = &doc["tests"].as_array().unwrap().last().unwrap()["cursor"];
    let iterations = c["iterations"].as_u64().unwrap();
    assert!(iterations >= 2, "{c}");
    // A field and its value are two elements of a reply.
    assert!(c["elements"].as_u64().unwrap() >= 2 * 5_000 * iterations, "{c}");
    assert_eq!(server.command_calls("hscan"), 1000);
    let line =
        format!("HSCAN h 0 COUNT 50: cursor: {iterations} full iterations, {} elements", c["elements"]);
    assert!(quiet.contains(&line), "{quiet}");
    // The CSV row says the same.
    let port = server.port().to_string();
    let mut args = vec!["-p", &port, "-c", "2", "-n", "1000", "--csv", "--follow-cursor"];
    args.extend_from_slice(&command);
    let out = respbench().run(&args, T);
    let rows = parse_csv(&out.stdout);
    let row = rows.iter().find(|r| r[0] == "cursor").unwrap_or_else(|| panic!("{}", out.dump()));
    assert_eq!(row[1], "HSCAN h 0 COUNT 50");
    let (its, els): (u64, u64) = (row[2].parse().unwrap(), row[3].parse().unwrap());
    assert!(its >= 2 && els >= 2 * 5_000 * its, "{row:?}");
}

/// `--follow-cursor-limit 3` (memtier's `--scan-incremental-max-iterations`) over 10,000 keys,
/// which a full walk of `COUNT 100` takes about 100 calls to cover: every walk is cut after
/// its first call and 3 continuations, so one client's 400 calls are exactly 100 first calls
/// and 300 continuations, no full iteration, and the server ran the 400 SCANs.
#[test]
fn a_limited_walk_starts_again_from_zero() {
    let server = RedisServer::start();
    fill(&server, "MSET", 10_000);
    let extra = ["-c", "1", "-n", "400", "-q", "--follow-cursor-limit", "3"];
    let (doc, _) = follow(&server, &extra, &["SCAN", "0", "COUNT", "100"]);
    assert_eq!(requests(&doc, "SCAN 0 COUNT 100 (first call)"), 100, "{doc}");
    assert_eq!(requests(&doc, "SCAN 0 COUNT 100 (continuation)"), 300, "{doc}");
    let whole = doc["tests"].as_array().unwrap().last().unwrap();
    assert_eq!(whole["cursor"]["iterations"].as_u64(), Some(0), "{whole}");
    assert_eq!(server.command_calls("scan"), 400);
    // Without --follow-cursor the limit is refused, before anything is sent.
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-n", "10", "--follow-cursor-limit", "3", "SCAN", "0"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--follow-cursor-limit needs --follow-cursor"), "{}", out.dump());
    assert_eq!(server.command_calls("scan"), 400);
}

#[test]
fn what_cannot_follow_a_cursor_is_refused() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    for (args, words) in [
        (&["GET", "k"][..], "give a SCAN, HSCAN, SSCAN or ZSCAN command"),
        (&["SCAN", "7"], "must be 0"),
        (&["-P", "4", "SCAN", "0"], "-P above 1"),
    ] {
        let mut line = vec!["-p", &port, "-n", "10", "--follow-cursor"];
        line.extend_from_slice(args);
        let out = respbench().run(&line, T);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains(words), "{}", out.dump());
    }
    assert_eq!(server.command_calls("scan"), 0);
}
