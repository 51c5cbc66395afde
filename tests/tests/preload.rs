//! `--preload` and hits against a real redis-server, on mio (the preload and the counts are the
//! command line's and the core's): the server's own
//! `keyspace_hits` and `keyspace_misses` agree with the nil replies respbench counted.

use std::path::Path;
use std::time::Duration;

use respbench_tests::{json_path, take_document, RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

respbench_tests::backend_tests!(
    every: [],
    mio: [preload_makes_every_get_hit, misses_are_counted_and_warned_about, one_key_is_one_key],
);

/// `-r 1 --preload`: "preloaded 1 key", and the verbose report of the GET says its hits; the
/// SET and PING reports say none (hits mean something for reads only).
fn one_key_is_one_key(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = tool.run(&["-p", &port, "-t", "get", "-r", "1", "-n", "100", "--preload"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("preloaded 1 key (SET key:__rand_int__, "), "{}", out.dump());
    assert!(out.stdout.contains("  hits: 100.0% (0 nil replies"), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 1);
    let out = tool.run(&["-p", &port, "-t", "set,ping_mbulk", "-n", "100"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("====== SET ======") && !out.stdout.contains("hits:"), "{}", out.dump());
}

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

fn stat(server: &RedisServer, field: &str) -> u64 {
    server
        .info_field("stats", field)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO stats {field}"))
}

/// `-r 5000 -d 100 --preload`: 5000 keys of 100 bytes written first, then every GET hits, at
/// the server and in respbench's count.
fn preload_makes_every_get_hit(tool: Tool) {
    let server = RedisServer::start();
    let json = json_path("pre", "hit");
    let port = server.port().to_string();
    let out = tool.run(
        &[
            "-p",
            &port,
            "-t",
            "get",
            "-r",
            "5000",
            "-d",
            "100",
            "-n",
            "20000",
            "--preload",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    // The verbose report carries the session's notice; stderr (not a terminal) nothing.
    assert!(out.stdout.contains("preloaded 5000 keys"), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    let doc = read(&json);
    assert!(!warnings(&doc).contains("were nil"), "{doc}");
    assert!(out.stdout.contains("hits: 100.0% (0 nil replies"), "{}", out.dump());
    let t = doc["tests"][0].clone();
    assert_eq!((t["requests"].as_u64(), t["nil_replies"].as_u64()), (Some(20000), Some(0)));
    assert_eq!(server.dbsize(0), 5000);
    assert_eq!(server.command_calls("set"), 5000, "each key written once");
    assert_eq!((stat(&server, "keyspace_hits"), stat(&server, "keyspace_misses")), (20000, 0));
    assert_eq!(server.cli(&["STRLEN", "key:000000004999"]).trim(), "100");
}

/// Without it, GETs of keys never written are nil: counted, equal to the server's misses, and
/// warned about.
fn misses_are_counted_and_warned_about(tool: Tool) {
    let server = RedisServer::start();
    server.cli(&["SET", "key:000000000007", "x"]);
    let json = json_path("pre", "miss");
    let port = server.port().to_string();
    let out = tool.run(
        &["-p", &port, "-t", "get", "-r", "10", "-n", "2000", "-q", "--json", json.to_str().unwrap()],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let doc = read(&json);
    let t = doc["tests"][0].clone();
    let nils = t["nil_replies"].as_u64().unwrap();
    assert_eq!(nils, stat(&server, "keyspace_misses"));
    assert_eq!(2000 - nils, stat(&server, "keyspace_hits"));
    // One key of ten exists: about 90% misses.
    assert!((1600..=1990).contains(&nils), "{nils}");
    let warned = warnings(&doc);
    assert!(warned.contains("of the replies were nil") && warned.contains("--preload"), "{warned}");
    assert_eq!(out.stderr, "", "{}", out.dump());
    // SPOP of redis-benchmark's suite empties its one-member set at once: the suite's design,
    // not a finding; nothing on stderr, nothing in the verbose block.
    let out = tool.run(&["-p", &port, "-t", "sadd,spop", "-n", "200"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert!(!out.stdout.contains("WARNING"), "{}", out.dump());
    // The same SPOP given as a command is: said so in its verbose block, with no --preload
    // advice, which writes only what a GET reads.
    let out = tool.run(&["-p", &port, "-n", "200", "spop", "myset"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("  WARNING: spop myset: 100.0% of the replies were nil"), "{}", out.dump());
    assert!(!out.stdout.contains("--preload"), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
}

/// A `--json` document's warnings, the session's and each test's, as JSON text.
fn warnings(doc: &serde_json::Value) -> String {
    let tests = doc["tests"].as_array().into_iter().flatten();
    tests.fold(doc["warnings"].to_string(), |all, t| all + &t["warnings"].to_string())
}
