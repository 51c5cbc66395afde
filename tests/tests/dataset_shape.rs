//! `--dataset-shape` against a real redis-server: each shape built exactly (DBSIZE's growth,
//! each command's calls in INFO commandstats, TYPE and HLEN/LLEN/SCARD/ZCARD/XLEN on a
//! sample), the encodings as OBJECT ENCODING says them on both sides of a
//! `hash-max-listpack-entries` threshold, the bytes per key against the test's own reading of
//! `used_memory`, descriptions refused before connecting, and a cluster build.

use std::path::Path;
use std::time::Duration;

use respbench_tests::cluster::Cluster;
use respbench_tests::{json_path, take_document, RedisServer, Tool};

const T: Duration = Duration::from_secs(120);

respbench_tests::backend_tests!(
    every: [strings_and_hashes_are_built_exactly],
    mio: [
        lists_sets_zsets_and_streams_are_built_exactly,
        encodings_on_both_sides_of_the_threshold,
        bytes_per_key_is_used_memory_growth,
        bad_descriptions_are_refused_before_connecting,
        tests_run_on_the_built_keys,
        reads_that_miss_are_flagged,
        multi_key_reads_miss_key_by_key,
        empty_collections_are_misses,
    ],
);

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

fn key(n: u64) -> String {
    format!("key:{n:012}")
}

fn cli(server: &RedisServer, args: &[&str]) -> String {
    server.cli(args).trim().to_string()
}

/// Every key of `range` (checked on `samples` of them spread over it) is of `kind` and holds
/// `len` elements (`len_cmd`: HLEN, LLEN, …).
fn check_sample(
    server: &RedisServer,
    range: std::ops::Range<u64>,
    kind: &str,
    len_cmd: Option<&str>,
    len: u64,
) {
    let step = ((range.end - range.start) / 25).max(1);
    for n in (range.start..range.end).step_by(step as usize).chain([range.end - 1]) {
        let k = key(n);
        assert_eq!(cli(server, &["TYPE", &k]), kind, "{k}");
        if let Some(c) = len_cmd {
            assert_eq!(cli(server, &[c, &k]), len.to_string(), "{c} {k}");
        }
    }
}

/// A hash shape and a string shape with a size range: their keys follow one another, DBSIZE
/// grew by both, each key was written by one command, and each holds what was described.
fn strings_and_hashes_are_built_exactly(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("shape", "exact");
    let out = tool.run(
        &[
            "-p",
            &port,
            "--dataset-shape",
            "hash 2000 keys x 50 fields x 40B",
            "--dataset-shape",
            "string 3000 keys x 10-20B",
            "--dataset-only",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.dbsize(0), 5000);
    assert_eq!(server.command_calls("hset"), 2000);
    assert_eq!(server.command_calls("set"), 3000);
    check_sample(&server, 0..2000, "hash", Some("HLEN"), 50);
    check_sample(&server, 2000..5000, "string", None, 0);
    for n in (2000..5000).step_by(97) {
        let len: usize = cli(&server, &["STRLEN", &key(n)]).parse().unwrap();
        assert!((10..=20).contains(&len), "{len}");
    }
    assert_eq!(cli(&server, &["HSTRLEN", &key(1999), "field:49"]), "40");
    assert!(out.stdout.contains("2,000 hashes of 50 x 40 B: "), "{}", out.dump());
    assert!(out.stdout.contains("3,000 strings of 10-20 B: "), "{}", out.dump());
    let doc = read(&json);
    let shapes = &doc["dataset"]["shapes"];
    assert_eq!(shapes[0]["dbsize_growth"], 2000, "{doc}");
    assert_eq!(shapes[1]["dbsize_growth"], 3000, "{doc}");
    assert_eq!(shapes[1]["first_key"], "key:000000002000", "{doc}");
    assert_eq!(doc["tests"].as_array().map(Vec::len), Some(0), "--dataset-only runs no test");
}

/// Lists, sets, sorted sets and streams: their lengths as described; a list too long for one
/// request goes in several passes, still exact.
fn lists_sets_zsets_and_streams_are_built_exactly(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = tool.run(
        &[
            "-p",
            &port,
            "--dataset-shape",
            "list 100 keys x 300 members x 8B",
            "--dataset-shape",
            "set 100 keys x 20 members",
            "--dataset-shape",
            "zset 100 keys x 200 members x 16B",
            "--dataset-shape",
            "stream 50 keys x 30 entries x 2 fields x 10B",
            "--dataset-shape",
            "list 3 keys x 25000 members x 1B",
            "--dataset-only",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.dbsize(0), 353);
    check_sample(&server, 0..100, "list", Some("LLEN"), 300);
    check_sample(&server, 100..200, "set", Some("SCARD"), 20);
    check_sample(&server, 200..300, "zset", Some("ZCARD"), 200);
    check_sample(&server, 300..350, "stream", Some("XLEN"), 30);
    check_sample(&server, 350..353, "list", Some("LLEN"), 25000);
    assert_eq!(server.command_calls("xadd"), 50 * 30);
    assert_eq!(cli(&server, &["SISMEMBER", &key(150), "member:19"]), "1");
    assert_eq!(cli(&server, &["ZSCORE", &key(250), "member:7:xxxxxxx"]), "7");
    assert_eq!(cli(&server, &["ZRANGE", &key(299), "199", "199"]), "member:199:xxxxx");
    assert_eq!(cli(&server, &["LINDEX", &key(0), "299"]).len(), 8);
}

/// `hash-max-listpack-entries 20`: hashes of 10 fields are listpacks, of 30 hashtables, as
/// OBJECT ENCODING says, in the text, the CSV and the JSON.
fn encodings_on_both_sides_of_the_threshold(tool: Tool) {
    let server = RedisServer::start();
    cli(&server, &["CONFIG", "SET", "hash-max-listpack-entries", "20"]);
    let port = server.port().to_string();
    let json = json_path("shape", "enc");
    let args = [
        "-p",
        &port,
        "--dataset-shape",
        "hash 200 keys x 10 fields x 10B",
        "--dataset-shape",
        "hash 200 keys x 30 fields x 10B",
        "--dataset-only",
    ];
    let out = tool.run(&[&args[..], &["-q", "--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(cli(&server, &["OBJECT", "ENCODING", &key(0)]), "listpack");
    assert_eq!(cli(&server, &["OBJECT", "ENCODING", &key(399)]), "hashtable");
    let said: Vec<&str> = out.stdout.lines().filter(|l| l.trim_start().starts_with("hash: ")).collect();
    assert_eq!(said, ["  hash: listpack 100%", "  hash: hashtable 100%"], "{}", out.dump());
    let doc = read(&json);
    let enc = |i: usize| doc["dataset"]["shapes"][i]["encodings"][0].clone();
    assert_eq!((enc(0)["encoding"].as_str(), enc(0)["percent"].as_f64()), (Some("listpack"), Some(100.0)));
    assert_eq!((enc(1)["encoding"].as_str(), enc(1)["keys"].as_u64()), (Some("hashtable"), Some(100)));
    cli(&server, &["FLUSHALL"]);
    let out = tool.run(&[&args[..], &["--csv"]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.starts_with("\"dataset\",\"keys\",\"elements\",\"bytes_per_key\""), "{}", out.dump());
    let rows = respbench_tests::parse_csv(&out.stdout);
    assert_eq!(rows[1][0], "hash 200 keys x 10 fields x 10B", "{}", out.dump());
    assert_eq!(rows[1].last().map(String::as_str), Some("listpack 100%"));
    assert_eq!(rows[2].last().map(String::as_str), Some("hashtable 100%"));
}

fn used_memory(server: &RedisServer) -> f64 {
    server.info_field("memory", "used_memory").and_then(|v| v.parse().ok()).expect("used_memory")
}

/// The bytes a key took, as respbench says it, within 2% of the growth of `used_memory` the
/// test reads itself around the run, over the keys; the growth series ends at every key.
fn bytes_per_key_is_used_memory_growth(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("shape", "mem");
    let before = used_memory(&server);
    let out = tool.run(
        &[
            "-p",
            &port,
            "--dataset-shape",
            "hash 10000 keys x 50 fields x 60B",
            "--dataset-only",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let after = used_memory(&server);
    let truth = (after - before) / 10000.0;
    let doc = read(&json);
    let said = doc["dataset"]["bytes_per_key"].as_f64().unwrap();
    assert!((said - truth).abs() <= truth * 0.02, "said {said}, used_memory grew {truth} a key");
    let shape = &doc["dataset"]["shapes"][0];
    assert_eq!(shape["bytes_per_key"].as_f64(), Some(said));
    let growth = shape["growth"].as_array().unwrap();
    assert_eq!(growth.len(), 10);
    assert_eq!(growth.last().unwrap()["keys"], 10000);
    assert!(
        growth.windows(2).all(|w| w[0]["used_memory"].as_u64() < w[1]["used_memory"].as_u64()),
        "{shape}"
    );
    let line = out.stdout.lines().find(|l| l.contains("10,000 hashes of 50 x 60 B: ")).unwrap_or_default();
    let per_key = format!("{} B a key", group(said.round() as u64));
    assert!(line.contains(&per_key) && line.contains("fragmentation "), "{line} / {per_key}");
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Descriptions that cannot be built are refused with the option, the word and what was
/// expected, before any connection (the port has no server), exit 1.
fn bad_descriptions_are_refused_before_connecting(tool: Tool) {
    let port = respbench_tests::free_port().to_string();
    for (shape, says) in [
        ("hash 10000 keys x 50 fieldz x 100B", "word 6 (\"fieldz\")"),
        ("hash 100 keys", "x N fields"),
        ("string 0 keys x 1B", "the number of keys, 1 to"),
        ("list 1000000000 keys x 100000000 members x 100B", "more than 1024 GiB"),
        ("tree 1 keys", "a kind: string, hash"),
    ] {
        let out = tool.run(&["-p", &port, "--dataset-shape", shape, "--dataset-only"], T);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(
            out.stderr.contains("--dataset-shape") && out.stderr.contains(says),
            "{shape}: {}",
            out.dump()
        );
        assert!(!out.stderr.contains("connect"), "{}", out.dump());
    }
    let out = tool.run(&["-p", &port, "--dataset-only"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--dataset-only needs a --dataset-shape"), "{}", out.dump());
}

/// Without --dataset-only the tests run after the build, over its keys: every GET of `-r 1000`
/// hits, and every HGET of a field the guide names (docs/scenarios-and-datasets.md).
fn tests_run_on_the_built_keys(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = tool.run(
        &["-p", &port, "--dataset-shape", "string 1000 keys x 10B", "-t", "get", "-r", "1000", "-n", "3000"],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("hits: 100.0% (0 nil replies"), "{}", out.dump());
    let misses: u64 = server.info_field("stats", "keyspace_misses").and_then(|v| v.parse().ok()).unwrap();
    assert_eq!(misses, 0);
    cli(&server, &["FLUSHALL"]);
    let out = tool.run(
        &[
            "-p",
            &port,
            "--dataset-shape",
            "hash 1000 keys x 8 fields x 10B",
            "-r",
            "1000",
            "-n",
            "3000",
            "HGET",
            "key:__rand_int__",
            "field:7",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("hits: 100.0% (0 nil replies"), "{}", out.dump());
}

/// Over a cluster each key goes to the primary that owns its slot: DBSIZE summed over the
/// primaries is the keys, each node holds only keys of its slots, and the encodings are read
/// from the owners.
#[test]
fn a_cluster_build_goes_to_each_owner() {
    let cluster = Cluster::start(3, 0);
    let primaries = cluster.primary_ports();
    let out = respbench_tests::respbench().run(
        &[
            "-p",
            &primaries[0].to_string(),
            "--cluster",
            "--dataset-shape",
            "hash 3000 keys x 5 fields x 10B",
            "--dataset-only",
            "-q",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let sizes: Vec<u64> = primaries.iter().map(|&p| cluster.node(p).dbsize(0)).collect();
    assert_eq!(sizes.iter().sum::<u64>(), 3000, "{sizes:?}");
    assert!(sizes.iter().all(|&n| n > 500), "{sizes:?}");
    assert_eq!(cluster.node(primaries[0]).command_calls("hset"), sizes[0]);
    assert!(out.stdout.contains("hash: listpack 100%"), "{}", out.dump());
    assert!(out.stdout.contains("3,000 hashes of 5 x 10 B: "), "{}", out.dump());
}

fn stat(server: &RedisServer, field: &str) -> u64 {
    server.info_field("stats", field).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{field}"))
}

/// GET over ten times the keys written: about 90% of its reads missed, as the server's
/// keyspace_misses count them, said on stdout in -q and CSV with why, in the JSON's warnings,
/// exit 0; --miss-ok silences it.
fn reads_that_miss_are_flagged(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("shape", "miss");
    let shape = ["--dataset-shape", "string 1000 keys x 10B"];
    let get = ["-p", &port, "-t", "get", "-r", "10000", "-n", "5000"];
    let out = tool.run(&[&get[..], &shape, &["-q", "--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    // The build's OBJECT ENCODING of 100 keys that exist are hits; every miss is a GET's.
    let (hits, misses) = (stat(&server, "keyspace_hits"), stat(&server, "keyspace_misses"));
    assert_eq!(hits + misses, 5000 + 100);
    let doc = read(&json);
    assert_eq!(doc["tests"][0]["nil_replies"].as_u64(), Some(misses), "{doc}");
    let share = misses as f64 * 100.0 / 5000.0;
    assert!((85.0..=95.0).contains(&share), "{share}");
    // The share as a whole percent: the server's misses rounded either way (at 90.5 the
    // report's float may fall on either side).
    let why = "% of reads missed: -r 10000 reads a keyspace of which --dataset-shape wrote 1000";
    let said =
        out.stdout.lines().find_map(|l| l.strip_prefix("GET: ")?.strip_suffix(why)?.parse::<f64>().ok());
    let said = said.unwrap_or_else(|| panic!("no 'GET: N{why}' line\n{}", out.dump()));
    assert!((said - share).abs() <= 0.5 + 1e-9, "said {said}%, the server's misses are {share}%");
    assert!(doc["tests"][0]["warnings"].to_string().contains("of the replies were nil"), "{doc}");
    assert_eq!(out.stderr, "", "{}", out.dump());
    let out = tool.run(&[&get[..], &["--csv"]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let rows = respbench_tests::parse_csv(&out.stdout);
    let row = rows.iter().find(|r| r[0] == "misses").unwrap_or_else(|| panic!("{}", out.dump()));
    assert_eq!(row[1], "GET");
    let said: f64 = row[2].parse().unwrap();
    assert!((85.0..=95.0).contains(&said), "{said}");
    let out = tool.run(&[&get[..], &["-q", "--miss-ok"]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("GET: ") && !out.stdout.contains("missed"), "{}", out.dump());
}

/// MGET of ten keys over ten times the keys written (#50 item 4): its replies are never nil, its
/// keys mostly are; the misses are counted key by key, as the server's keyspace_misses count
/// them, and said as about 90% of the keys read.
fn multi_key_reads_miss_key_by_key(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("shape", "mget-miss");
    let shape = ["--dataset-shape", "string 1000 keys x 10B"];
    let mget = ["-p", &port, "-t", "mget", "-r", "10000", "-n", "500"];
    let out = tool.run(&[&mget[..], &shape, &["-q", "--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    // The build's OBJECT ENCODING of 100 keys that exist are hits; the rest are MGET's keys.
    let (hits, misses) = (stat(&server, "keyspace_hits"), stat(&server, "keyspace_misses"));
    assert_eq!(hits + misses, 500 * 10 + 100);
    let doc = read(&json);
    let t = &doc["tests"][0];
    assert_eq!(t["nil_replies"].as_u64(), Some(0), "{t}");
    assert_eq!(t["array_replies"].as_u64(), Some(500), "{t}");
    assert_eq!(t["array_elements"].as_u64(), Some(5000), "{t}");
    assert_eq!(t["nil_elements"].as_u64(), Some(misses), "{t}");
    let share = misses as f64 * 100.0 / 5000.0;
    assert!((85.0..=95.0).contains(&share), "{share}");
    let why = "% of reads missed: -r 10000 reads a keyspace of which --dataset-shape wrote 1000";
    let said = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("MGET (10 keys): ")?.strip_suffix(why)?.parse::<f64>().ok());
    let said = said.unwrap_or_else(|| panic!("no 'MGET (10 keys): N{why}' line\n{}", out.dump()));
    assert!((said - share).abs() <= 0.5 + 1e-9, "said {said}%, the server's misses are {share}%");
    assert!(t["warnings"].to_string().contains("of the keys it read were missing"), "{t}");
}

/// HGETALL of hashes that do not exist answers an empty array: a read that missed, as the
/// server's keyspace_misses counts it; beside hashes that exist, the share is theirs.
fn empty_collections_are_misses(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("shape", "hgetall-miss");
    let shape = ["--dataset-shape", "hash 100 keys x 3 fields x 10B"];
    let args = ["-p", &port, "-r", "1000", "-n", "2000", "-q", "--json", json.to_str().unwrap()];
    let out = tool.run(&[&args[..], &shape, &["hgetall", "key:__rand_int__"]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    // The build's OBJECT ENCODING of 100 keys that exist are hits.
    let (hits, misses) = (stat(&server, "keyspace_hits"), stat(&server, "keyspace_misses"));
    assert_eq!(hits + misses, 2000 + 100);
    let t = &read(&json)["tests"][0];
    assert_eq!(t["nil_elements"].as_u64(), Some(misses), "{t}");
    assert_eq!(t["array_replies"].as_u64(), Some(2000), "{t}");
    let share = misses as f64 * 100.0 / 2000.0;
    assert!((85.0..=95.0).contains(&share), "{share}");
    let said = out.stdout.lines().find_map(|l| {
        l.strip_prefix("hgetall key:__rand_int__: ")?.split_once("% of reads missed")?.0.parse::<f64>().ok()
    });
    let said = said.unwrap_or_else(|| panic!("no miss line\n{}", out.dump()));
    assert!((said - share).abs() <= 0.5 + 1e-9, "said {said}%, the server's misses are {share}%");
}
