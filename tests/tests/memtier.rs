//! memtier_benchmark's command line and outputs (`respbench memtier ARGS…`, or respbench run as
//! `memtier_benchmark`) against a real redis-server: the counts are the server's (`INFO
//! commandstats`, `DBSIZE`), the table and `--json-out-file` have memtier's shapes (the names
//! and nesting from memtier's run_stats.cpp, not its numbers), refusals name their option.

use std::path::Path;
use std::time::Duration;

use respbench_tests::{files_in, json_path, respbench, Monitor, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

/// The fields of each row and of `Totals` in memtier's JSON, in its order (no cluster).
const ROW_FIELDS: [&str; 17] = [
    "Count",
    "Ops/sec",
    "Hits/sec",
    "Misses/sec",
    "Connection Errors/sec",
    "Connection Errors",
    "Latency",
    "Average Latency",
    "Accumulated Latency",
    "Min Latency",
    "Max Latency",
    "KB/sec",
    "KB/sec RX/TX",
    "KB/sec RX",
    "KB/sec TX",
    "Time-Serie",
    "Percentile Latencies",
];

/// memtier's `configuration` keys, from a run of memtier_benchmark 2.x without `--clients-start`.
const CONFIG_KEYS: [&str; 53] = [
    "server",
    "port",
    "uri",
    "unix socket",
    "address family",
    "protocol",
    "out_file",
    "tls",
    "cert",
    "key",
    "cacert",
    "tls_skip_verify",
    "sni",
    "client_stats",
    "run_count",
    "debug",
    "requests",
    "rate_limit",
    "clients",
    "threads",
    "test_time",
    "ratio",
    "pipeline",
    "data_size",
    "data_offset",
    "random_data",
    "data_size_range",
    "data_size_list",
    "data_size_pattern",
    "expiry_range",
    "data_import",
    "data_verify",
    "verify_only",
    "generate_keys",
    "key_prefix",
    "key_minimum",
    "key_maximum",
    "key_pattern",
    "key_stddev",
    "key_median",
    "key_zipf_exp",
    "reconnect_interval",
    "connection_timeout",
    "thread_conn_start_min_jitter_micros",
    "thread_conn_start_max_jitter_micros",
    "multi_key_get",
    "authenticate",
    "select-db",
    "no-expiry",
    "wait-ratio",
    "num-slaves",
    "wait-timeout",
    "print-all-runs",
];

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// An object's keys, in the document's order (serde_json sorts them: compared as sets).
fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> =
        v.as_object().unwrap_or_else(|| panic!("not an object: {v}")).keys().cloned().collect();
    k.sort();
    k
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut k: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    k.sort();
    k
}

fn memtier(tool: &Tool, args: &[&str]) -> respbench_tests::Output {
    let mut all = vec!["memtier"];
    all.extend_from_slice(args);
    tool.run(&all, T)
}

/// `--ratio 1:10 -t 2 -c 5 -n 100`: 2 × 5 clients of 100 requests each, exactly 1,000 SETs and
/// GETs as the server counts them, and the JSON's counts say so in memtier's shape.
#[test]
fn ratio_counts_are_the_servers_in_memtiers_json() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("memtier", "ratio");
    let out = memtier(
        &respbench(),
        &[
            "-p",
            &port,
            "--ratio",
            "1:10",
            "-t",
            "2",
            "-c",
            "5",
            "-n",
            "100",
            "--key-maximum",
            "1000",
            "--json-out-file",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", out.dump());
    let (sets, gets) = (server.command_calls("set"), server.command_calls("get"));
    assert_eq!(sets + gets, 2 * 5 * 100, "{}", out.dump());
    assert!(sets > 0 && gets > sets, "SET {sets} GET {gets}");
    let doc = read(&json);
    assert_eq!(keys(&doc), sorted(&["configuration", "run information", "ALL STATS", "respbench"]));
    assert_eq!(
        keys(&doc["run information"]),
        sorted(&["Threads", "Connections per thread", "Requests per client", "Format version"])
    );
    assert_eq!(doc["run information"]["Threads"], 2);
    assert_eq!(doc["run information"]["Connections per thread"], 5);
    assert_eq!(doc["run information"]["Requests per client"], 100);
    assert_eq!(doc["run information"]["Format version"], 2);
    let all = &doc["ALL STATS"];
    assert_eq!(
        keys(all),
        sorted(&["Runtime", "Sets", "Gets", "Waits", "Totals", "SET", "GET", "WAIT"]),
        "the rows, and the distributions without --hide-histogram"
    );
    assert_eq!(
        keys(&all["Runtime"]),
        sorted(&["Start time", "Finish time", "Total duration", "Time unit", "Interrupted"])
    );
    for row in ["Sets", "Gets", "Waits", "Totals"] {
        assert_eq!(keys(&all[row]), sorted(&ROW_FIELDS), "{row}");
        let pcts = &all[row]["Percentile Latencies"];
        assert_eq!(keys(pcts), sorted(&["p50.00", "p99.00", "p99.90", "Histogram log format"]), "{row}");
        // HdrHistogram's V2 deflate encoding in base64, as memtier's: its cookie reads HISTF.
        let hist = pcts["Histogram log format"]["Compressed Histogram"].as_str().unwrap_or_default();
        assert!(hist.starts_with("HISTFAAA"), "{row}: {hist}");
    }
    assert_eq!(all["Totals"]["Count"], 1000);
    assert_eq!(all["Sets"]["Count"], sets);
    assert_eq!(all["Gets"]["Count"], gets);
    assert_eq!(all["Waits"]["Count"], 0);
    // Nothing was written before the run: every GET missed, and the misses are the GETs'.
    let misses = all["Totals"]["Misses/sec"].as_f64().unwrap();
    assert!(misses > 0.0 && misses <= all["Gets"]["Ops/sec"].as_f64().unwrap() + 0.01, "{}", all["Totals"]);
    let step = &all["GET"][0];
    assert!(step["<=msec"].is_number() && step["percent"].is_number(), "{step}");
    assert_eq!(keys(&doc["configuration"]), sorted(&CONFIG_KEYS));
    assert_eq!(doc["configuration"]["out_file"], Value::Null);
    assert_eq!(doc["configuration"]["key_stddev"], 0.0);
    assert_eq!(doc["configuration"]["clients"], 5);
    assert_eq!(doc["configuration"]["ratio"], "1:10");
    // respbench's own figures under a key of its own: the run's exact count.
    assert_eq!(doc["respbench"]["ALL STATS"]["requests"], 1000);
}

/// `-n allkeys --key-pattern P:P --ratio 1:0` over keys 1 to 5000: each key written once.
#[test]
fn allkeys_with_parallel_keys_writes_each_key_once() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = memtier(
        &respbench(),
        &[
            "-p",
            &port,
            "-n",
            "allkeys",
            "--key-pattern",
            "P:P",
            "--ratio",
            "1:0",
            "--key-minimum",
            "1",
            "--key-maximum",
            "5000",
            "-c",
            "5",
            "-t",
            "2",
            "--hide-histogram",
            // As the suites' preloads give it: respbench's values are pseudo-random anyway.
            "-R",
        ],
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.dbsize(0), 5000, "{}", out.dump());
    assert_eq!(server.command_calls("set"), 5000);
    assert_eq!(server.command_calls("get"), 0);
}

/// The server's keys, sorted.
fn all_keys(server: &RedisServer) -> Vec<String> {
    let mut keys: Vec<String> = server.cli(&["KEYS", "*"]).lines().map(str::to_string).collect();
    keys.sort();
    keys
}

/// `prefix1` … `prefix{n}`, sorted as text.
fn sorted_names(prefix: &str, n: u64) -> Vec<String> {
    let mut names: Vec<String> = (1..=n).map(|i| format!("{prefix}{i}")).collect();
    names.sort();
    names
}

/// memtier's key names, the prefix and the number in its own digits: `-n allkeys --key-pattern
/// P:P --ratio 1:0` from 1 to 100 writes exactly `memtier-1` … `memtier-100` (`KEYS *`).
#[test]
fn keys_are_named_as_memtier_names_them() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let line = "-t 2 -c 2 -n allkeys --ratio 1:0 --key-pattern P:P --key-minimum 1 --key-maximum 100 --hide-histogram";
    let mut args = vec!["-p", &port];
    args.extend(line.split_whitespace());
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(all_keys(&server), sorted_names("memtier-", 100));
    assert_eq!(server.command_calls("set"), 100);
}

/// The Redis project's bitmap suites: `SETBIT users __key__ 1 --key-prefix ""` sends the
/// number alone as the bit offset, which the server takes (a zero-padded one it refuses): every
/// SETBIT counted, none failed, and the bits set are offsets from the range.
#[test]
fn an_empty_key_prefix_sends_the_number_alone() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let line = "--key-prefix= --key-minimum 1 --key-maximum 1000 -n 200 -c 2 -t 1 --hide-histogram";
    let mut args = vec!["-p", &port, "--command", "SETBIT users __key__ 1"];
    args.extend(line.split_whitespace());
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("setbit"), 400, "{}", out.dump());
    let stats = server.cli(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_setbit:calls=400,") && stats.contains("failed_calls=0"), "{stats}");
    assert_eq!(server.info_field("errorstats", "errorstat_ERR"), None);
    let bits: u64 = server.cli(&["BITCOUNT", "users"]).trim().parse().unwrap();
    assert!((1..=400).contains(&bits), "{bits}");
    let bytes: u64 = server.cli(&["STRLEN", "users"]).trim().parse().unwrap();
    assert!(bytes <= 1001 / 8 + 1, "offsets beyond the key range: {bytes} bytes");
}

/// The Redis project's stream suites: their init commands create the groups of `stream:1` …
/// `stream:10`, and `XREADGROUP … STREAMS stream:__key__ >` with `--key-prefix ""` reads those
/// streams (no NOGROUP): every XREADGROUP counted and none failed.
#[test]
fn a_stream_line_reads_the_groups_made_for_memtiers_names() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let script =
        "for i=1,10 do redis.call('XGROUP','CREATE','stream:'..i,'g','0','MKSTREAM') end return 'OK'";
    assert_eq!(server.cli(&["EVAL", script, "0"]).trim(), "OK");
    let line = "--command-key-pattern R --key-minimum 1 --key-maximum 10 --key-prefix= -n 200 -c 1 -t 2 \
                --hide-histogram --command-ratio 1";
    let mut args = vec!["-p", &port, "--command", "XADD stream:__key__ * f __data__", "--command-ratio", "1"];
    args.extend(["--command", "XREADGROUP GROUP g c COUNT 10 STREAMS stream:__key__ >"]);
    args.extend(line.split_whitespace());
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    let stats = server.cli(&["INFO", "commandstats"]);
    let line = stats.lines().find(|l| l.starts_with("cmdstat_xreadgroup:")).unwrap_or_default();
    assert!(line.contains("failed_calls=0") && server.command_calls("xreadgroup") > 50, "{stats}");
    assert_eq!(server.command_calls("xadd") + server.command_calls("xreadgroup"), 400, "{stats}");
    assert_eq!(server.info_field("errorstats", "errorstat_NOGROUP"), None);
    assert_eq!(all_keys(&server), sorted_names("stream:", 10), "only the streams the groups were made for");
}

/// `--key-pattern G:G --key-median --key-stddev`: the keys the server holds are around the
/// median (a key number, as memtier's), none farther than 10 deviations, and the SETs are the
/// count asked.
#[test]
fn key_median_and_stddev_place_the_keys() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = [
        "-p",
        &port,
        "--ratio",
        "1:0",
        "-n",
        "300",
        "-c",
        "1",
        "-t",
        "1",
        "--key-pattern",
        "G:G",
        "--key-minimum",
        "100",
        "--key-maximum",
        "100099",
        "--key-median",
        "50100",
        "--key-stddev",
        "10",
        "--key-prefix",
        "k:",
        "--hide-histogram",
    ];
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 300);
    let keys = server.cli(&["--scan", "--pattern", "k:*"]);
    let numbers: Vec<u64> =
        keys.lines().map(|k| k.trim_start_matches("k:").parse().unwrap_or_else(|_| panic!("{k}"))).collect();
    assert!(numbers.len() > 20, "300 draws of sd 10 hit more than 20 keys: {}", numbers.len());
    assert!(numbers.iter().all(|n| (50_000..=50_200).contains(n)), "{numbers:?}");
    let mean = numbers.iter().sum::<u64>() as f64 / numbers.len() as f64;
    assert!((mean - 50_100.0).abs() < 5.0, "distinct keys' mean {mean}");
}

/// memtier's `Z`: key k of `--key-minimum` … `--key-maximum` weighs 1 / k^θ. With θ 2 from key
/// 1, key 1 takes 1 / ζ(2) of the draws (60.8%: 608 of 1000 INCRs, sd 15), key 2 a quarter of
/// that, and every key is one of the range. From `--key-minimum 1000` the reads find the keys a
/// `P:P` preload wrote (memtier's names: no miss).
#[test]
fn zipf_keys_weigh_memtiers_own_numbers() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let line = "--key-zipf-exp 2 --key-minimum 1 --key-maximum 1000 --key-prefix= -n 1000 \
                -c 1 -t 1 --hide-histogram";
    let mut args = vec!["-p", &port, "--command", "INCR __key__", "--command-key-pattern", "Z"];
    args.extend(line.split_whitespace());
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("incr"), 1000);
    let count = |k: &str| server.cli(&["GET", k]).trim().parse::<u64>().unwrap_or(0);
    let (one, two) = (count("1"), count("2"));
    assert!((540..=680).contains(&one), "key 1 drawn {one} times of 1000");
    assert!((100..=210).contains(&two), "key 2 drawn {two} times of 1000");
    let keys: Vec<u64> = all_keys(&server).iter().map(|k| k.parse().unwrap()).collect();
    assert!(keys.iter().all(|k| (1..=1000).contains(k)), "{keys:?}");
    assert_eq!(keys.iter().map(|k| count(&k.to_string())).sum::<u64>(), 1000);

    let server = RedisServer::start();
    let port = server.port().to_string();
    for line in [
        "-n allkeys --ratio 1:0 --key-pattern P:P --key-minimum 1000 --key-maximum 1999",
        "-n 500 --ratio 0:1 --key-pattern Z:Z --key-minimum 1000 --key-maximum 1999",
    ] {
        let mut args = vec!["-p", &port, "-c", "1", "-t", "1", "--hide-histogram"];
        args.extend(line.split_whitespace());
        let out = memtier(&respbench(), &args);
        assert!(out.status.success(), "{}", out.dump());
    }
    assert_eq!(server.command_calls("set"), 1000);
    assert_eq!(server.command_calls("get"), 500);
    assert_eq!(server.info_field("stats", "keyspace_misses").as_deref(), Some("0"));
    assert_eq!(server.info_field("stats", "keyspace_hits").as_deref(), Some("500"));
}

/// A suite's preload (redis-benchmarks-specification's stream-100Kentries-pel-xack, shrunk):
/// `XADD stream-key __key__-0` with `--command-key-pattern P` from `--key-minimum 1` makes the
/// IDs 1-0 to 1000-0 in order, as memtier's keys count from `--key-minimum` (an ID 0-0 is
/// refused by the server).
#[test]
fn sequential_keys_start_at_the_key_minimum() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = [
        "-p",
        &port,
        "--data-size",
        "10",
        "--command",
        "XADD stream-key __key__-0 field __data__",
        "--command-key-pattern=P",
        "--key-minimum=1",
        "--key-maximum=1000",
        "--key-prefix=",
        "-n",
        "1000",
        "-c",
        "1",
        "-t",
        "1",
        "--hide-histogram",
    ];
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("xadd"), 1000);
    assert_eq!(server.cli(&["xlen", "stream-key"]).trim(), "1000");
    let first = server.cli(&["xrange", "stream-key", "-", "+", "COUNT", "1"]);
    let last = server.cli(&["xrevrange", "stream-key", "+", "-", "COUNT", "1"]);
    assert_eq!(first.lines().next(), Some("1-0"), "{first}");
    assert_eq!(last.lines().next(), Some("1000-0"), "{last}");
}

/// redis-cli's escapes in a quoted `--command` argument (a suite's JSON session value) reach the
/// server as the bytes they stand for.
#[test]
fn command_escapes_are_redis_clis() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = ["-p", &port, "--command", r#"SET esc "{\"a\":\"b\x41\"}""#, "-n", "5", "-c", "1", "-t", "1"];
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 5);
    assert_eq!(server.cli(&["get", "esc"]).trim(), r#"{"a":"bA"}"#);
}

/// The Redis project's RESTORE, EVAL and session suites: a `--command` word in quotes may hold
/// blanks and bytes outside text (`"\x86"`), sent as those bytes: a DUMP payload of this
/// server's, written as `\xHH` escapes, is restored under every key (the server counts every
/// RESTORE, none failed, and each key holds the value dumped); a quoted `"User __key__"` is one
/// field value with a key's number in it; an EVAL's script with blanks runs.
#[test]
fn quoted_words_keep_their_blanks_and_bytes() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let value = "caf\u{e9} \u{1f600} x";
    server.cli(&["SET", "src", value]);
    let payload = dump_bytes(&server.cli(&["--no-raw", "DUMP", "src"]));
    assert!(payload.iter().any(|b| *b >= 0x80), "{payload:?}");
    let escaped: String = payload.iter().map(|b| format!("\\x{b:02x}")).collect();
    let restore = format!("RESTORE __key__ 0 \"{escaped}\" REPLACE");
    let hset = r#"HSET session:__key__ name "User __key__" role "a b""#;
    let eval = r#"EVAL "return redis.call('set', KEYS[1], 'x y')" 1 __key__"#;
    let line = "--key-prefix= --key-minimum 1 --key-maximum 20 -n 30 -c 1 -t 1 --hide-histogram";
    for command in [restore.as_str(), hset, eval] {
        server.cli(&["FLUSHALL"]);
        let mut args = vec!["-p", &port, "--command", command, "--command-key-pattern", "P"];
        args.extend(line.split_whitespace());
        let out = memtier(&respbench(), &args);
        assert!(out.status.success(), "{command}: {}", out.dump());
    }
    assert_eq!(server.command_calls("restore"), 30);
    assert_eq!(server.command_calls("hset"), 30);
    assert_eq!(server.command_calls("eval"), 30);
    let stats = server.cli(&["INFO", "commandstats"]);
    assert!(!stats.lines().any(|l| l.contains("failed_calls=") && !l.contains("failed_calls=0")), "{stats}");
    // The last line's keys: EVAL's SETs of "x y" under 1 … 20.
    assert_eq!(server.cli(&["GET", "7"]).trim_end(), "x y");
    server.cli(&["FLUSHALL"]);
    let mut args = vec!["-p", &port, "--command", restore.as_str(), "--command-key-pattern", "P"];
    args.extend(line.split_whitespace());
    assert!(memtier(&respbench(), &args).status.success());
    assert_eq!(server.cli(&["GET", "13"]).trim_end(), value);
    server.cli(&["FLUSHALL"]);
    let mut args = vec!["-p", &port, "--command", hset, "--command-key-pattern", "P"];
    args.extend(line.split_whitespace());
    assert!(memtier(&respbench(), &args).status.success());
    // Each `__key__` takes the next key, as memtier's client draws one per argument: the
    // real memtier 2.4 left the same hashes (session:1, 3, … 19; session:13's name "User 14").
    assert_eq!(server.cli(&["HGET", "session:13", "name"]).trim_end(), "User 14");
    assert_eq!(server.cli(&["HGET", "session:13", "role"]).trim_end(), "a b");
    let odd: Vec<String> = (1..=19).step_by(2).map(|k| format!("session:{k}")).collect();
    assert_eq!(all_keys(&server), sorted(&odd.iter().map(String::as_str).collect::<Vec<_>>()));
}

/// The bytes of a DUMP reply as `redis-cli --no-raw` prints it: a quoted string of `\xHH`,
/// `\"`, `\\`, `\n`, … escapes.
fn dump_bytes(printed: &str) -> Vec<u8> {
    let inner = printed.trim().trim_start_matches('"').trim_end_matches('"');
    let (mut out, mut chars) = (Vec::new(), inner.bytes());
    while let Some(c) = chars.next() {
        if c != b'\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(b'x') => {
                let hex = [chars.next().unwrap(), chars.next().unwrap()];
                out.push(u8::from_str_radix(std::str::from_utf8(&hex).unwrap(), 16).unwrap());
            }
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b't') => out.push(b'\t'),
            Some(b'a') => out.push(7),
            Some(b'b') => out.push(8),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The stdout table: the run's shape, `ALL STATS` and its rule, memtier's column titles and
/// widths, a row per command and `Totals`; the distribution unless `--hide-histogram`;
/// `--print-percentiles` chooses the columns.
#[test]
fn the_table_has_memtiers_shape() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let args = ["-p", &port, "-t", "1", "-c", "2", "-n", "50", "--key-maximum", "100"];
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        &lines[..3],
        ["1         Threads", "2         Connections per thread", "50        Requests per client"]
    );
    let at = lines.iter().position(|l| *l == "ALL STATS").unwrap_or_else(|| panic!("{}", out.dump()));
    // Type 7+1, five columns of 12+1, four of 15+1: 8 + 4 x 13 + 4 x 16 = 124 '='.
    assert_eq!(lines[at + 1], "=".repeat(124));
    assert_eq!(
        lines[at + 2],
        "Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency     p99 Latency   p99.9 Latency       KB/sec "
    );
    assert_eq!(
        lines[at + 3],
        format!("{}{}{}", "-".repeat(8), "-------------".repeat(3), "----------------".repeat(4))
            + "-------------"
    );
    for (k, row) in ["Sets ", "Gets ", "Waits", "Totals"].iter().enumerate() {
        assert!(lines[at + 4 + k].starts_with(row), "{}", out.dump());
        assert_eq!(lines[at + 4 + k].len(), 124, "{}", lines[at + 4 + k]);
    }
    assert!(lines[at + 6].contains("  ---  "), "Waits has no figures: {}", lines[at + 6]);
    assert!(
        out.stdout.contains("\n\nRequest Latency Distribution\nType     <= msec         Percent\n"),
        "{}",
        out.dump()
    );
    assert!(lines.iter().any(|l| l.starts_with("SET ")) && lines.iter().any(|l| l.starts_with("GET ")));
    // No WAIT was sent: its distribution is C hdr_histogram's one step of an empty histogram,
    // the last line, after GET's `---`.
    assert_eq!(lines[lines.len() - 2..], ["---", "WAIT      0.000      100.000"], "{}", out.dump());
    let mut hidden = args.to_vec();
    hidden.extend(["--hide-histogram", "--print-percentiles", "50,99.99"]);
    let out = memtier(&respbench(), &hidden);
    assert!(out.status.success(), "{}", out.dump());
    assert!(!out.stdout.contains("Request Latency Distribution"), "{}", out.dump());
    // memtier's title for 99.99, worked out in single precision (its issue #184 shows it).
    assert!(out.stdout.contains("    p50 Latency p99.990 Latency       KB/sec "), "{}", out.dump());
    assert_eq!(server.command_calls("set") + server.command_calls("get"), 2 * 100);
}

/// `--command` with `__key__` and `__data__`, `--command-ratio`, and `--run-count 3`: the best,
/// worst and average sections, a row per command name, and the server's counts.
#[test]
fn commands_and_run_count_give_memtiers_sections() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("memtier", "runs");
    let out = memtier(
        &respbench(),
        &[
            "-p",
            &port,
            "--command",
            "HSET h __key__ __data__",
            "--command-ratio",
            "3",
            "--command=GET __key__",
            "-n",
            "40",
            "-t",
            "1",
            "-c",
            "2",
            "-x",
            "3",
            "--hide-histogram",
            "--key-maximum",
            "9",
            "--json-out-file",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("hset") + server.command_calls("get"), 3 * 2 * 40);
    // Each HSET wrote a field memtier-N (N from 0 to 9) of h.
    assert!(server.cli(&["hlen", "h"]).trim().parse::<u64>().unwrap() <= 10);
    let average = "AGGREGATED AVERAGE RESULTS (3 runs)";
    for title in ["BEST RUN RESULTS", "WORST RUN RESULTS", average] {
        assert!(out.stdout.contains(&format!("\n\n{title}\n=")), "{title}: {}", out.dump());
    }
    assert!(!out.stdout.contains("ALL STATS"));
    assert!(out.stdout.contains("\nHsets   ") && out.stdout.contains("\nGets    "), "{}", out.dump());
    let doc = read(&json);
    assert_eq!(
        keys(&doc),
        sorted(&[
            "configuration",
            "run information",
            "BEST RUN RESULTS",
            "WORST RUN RESULTS",
            average,
            "respbench"
        ])
    );
    for section in ["BEST RUN RESULTS", "WORST RUN RESULTS", average] {
        assert_eq!(keys(&doc[section]), sorted(&["Runtime", "Hsets", "Gets", "Totals"]), "{section}");
        assert_eq!(keys(&doc[section]["Totals"]), sorted(&ROW_FIELDS));
        assert_eq!(doc[section]["Totals"]["Count"], 2 * 40, "{section}");
    }
}

/// An option respbench does not honour is refused naming itself, before anything is sent; so
/// are a memcache protocol and output files that cannot be written.
#[test]
fn a_refused_option_names_itself() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    for (args, named) in [
        (vec!["--monitor-input", "x.txt"], "--monitor-input"),
        (vec!["-P", "memcache_text"], "--protocol"),
        (vec!["--no-such-option"], "--no-such-option"),
        (vec!["-n", "ten"], "--requests"),
        // Found out before the run, not after it.
        (
            vec!["--json-out-file", "/nonexistent-dir/run.json"],
            "--json-out-file: cannot write /nonexistent-dir/run.json",
        ),
        (vec!["-o", "/nonexistent-dir/run.txt"], "--out-file: cannot write /nonexistent-dir/run.txt"),
    ] {
        let mut all = vec!["-p", port.as_str()];
        all.extend(args);
        let out = memtier(&respbench(), &all);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains(named), "{named}: {}", out.dump());
        assert!(out.stdout.is_empty(), "{}", out.dump());
    }
    assert_eq!(server.command_calls("set") + server.command_calls("get"), 0);
}

/// Run by the name `memtier_benchmark` (a link), respbench reads memtier's command line.
#[test]
fn the_name_memtier_benchmark_is_the_dialect() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let dir = std::env::temp_dir().join(format!("respbench-memtier-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("memtier_benchmark");
    let _ = std::fs::remove_file(&link);
    let tool = respbench();
    std::os::unix::fs::symlink(&tool.path, &link).unwrap();
    let out =
        Tool { path: link, ..tool }.run(&["-p", &port, "-t", "1", "-c", "3", "-n", "7", "--ratio", "0:1"], T);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stdout.contains("ALL STATS"), "{}", out.dump());
    assert_eq!(server.command_calls("get"), 21);
}

/// memtier's staircase (`--clients-start 1 --clients-step 1 --step-duration 1`, per thread) is
/// respbench's ramp of every thread's clients: two steps of 2 and 4 connections, their figures
/// under `"respbench"`.
#[test]
fn the_staircase_ramps_the_clients() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("memtier", "staircase");
    let out = memtier(
        &respbench(),
        &[
            "-p",
            &port,
            "-t",
            "2",
            "-c",
            "2",
            "--test-time",
            "2",
            "--clients-start",
            "1",
            "--clients-step",
            "1",
            "--step-duration",
            "1",
            "--hide-histogram",
            "--json-out-file",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", out.dump());
    let doc = read(&json);
    let steps = doc["respbench"]["ALL STATS"]["ramp"]["steps"].as_array().unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(steps.len(), 2, "{doc}");
    let count = doc["ALL STATS"]["Totals"]["Count"].as_u64().unwrap();
    assert_eq!(count, server.command_calls("set") + server.command_calls("get"));
}

/// `respbench memtier -p PORT -t 1 --key-maximum 100 --hide-histogram LINE… EXTRA…` against
/// `server`: LINE's words, then `extra` as they are (memtier keeps an option's last value).
fn small(server: &RedisServer, line: &str, extra: &[&str]) -> respbench_tests::Output {
    let port = server.port().to_string();
    let mut all = vec!["-p", &port, "-t", "1", "--key-maximum", "100", "--hide-histogram"];
    all.extend(line.split_whitespace());
    all.extend_from_slice(extra);
    memtier(&respbench(), &all)
}

/// A new empty directory for a test's files.
fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("respbench-memtier-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A latency file's shape: each line with its numbers as `N`, its blanks as one, the date after
/// `StartTime` and the encoded histogram as words; lines of one shape in a row once.
fn shape(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.split_once("epoch), ").map_or(line.to_string(), |(a, _)| format!("{a}epoch), DATE]"));
        let mut s = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                while chars.peek().is_some_and(|d| d.is_ascii_digit() || *d == '.') {
                    chars.next();
                }
                s.push('N');
            } else if c != ' ' || !s.ends_with(' ') {
                s.push(c);
            }
        }
        let s = s.find("HISTF").map_or(s.clone(), |i| format!("{}HIST", &s[..i]));
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

/// The `Total count` of a `.txt` latency file.
fn total_count(text: &str) -> u64 {
    let line = text.lines().find(|l| l.starts_with("#[Max")).unwrap_or_else(|| panic!("{text}"));
    line.rsplit('=').next().unwrap().trim_end_matches(']').trim().parse().unwrap()
}

/// `--hdr-file-prefix` with `--run-count 2`: memtier's files for each run (the whole run, SET,
/// GET), each in the shape of the real memtier_benchmark's (tests/golden/memtier-hdr, from
/// `memtier_benchmark -t 1 -c 2 -n 100 --ratio 1:2 -x 2 --hdr-file-prefix hdr`), their counts
/// the server's.
#[test]
fn hdr_files_have_memtiers_names_and_shapes() {
    let server = RedisServer::start();
    let dir = scratch("hdr");
    let prefix = dir.join("hdr");
    let out = small(&server, "-c 2 -n 100 --ratio 1:2 -x 2 --hdr-file-prefix", &[prefix.to_str().unwrap()]);
    assert!(out.status.success(), "{}", out.dump());
    let names = files_in(&dir);
    let mut expected: Vec<String> = Vec::new();
    for run in 1..=2 {
        for file in ["FULL_RUN", "GET_command_run", "SET_command_run"] {
            for ext in ["hgrm", "txt"] {
                expected.push(format!("hdr_{file}_{run}.{ext}"));
            }
        }
    }
    expected.sort();
    assert_eq!(names, expected);
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/memtier-hdr");
    let text = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let mut counts = 0;
    for file in ["FULL_RUN_1", "SET_command_run_1", "GET_command_run_1"] {
        for ext in ["txt", "hgrm"] {
            let name = format!("hdr_{file}.{ext}");
            let real = std::fs::read_to_string(golden.join(&name)).unwrap();
            assert_eq!(shape(&text(&name)), shape(&real), "{name}:\n{}", text(&name));
        }
    }
    for run in 1..=2 {
        let full = total_count(&text(&format!("hdr_FULL_RUN_{run}.txt")));
        let parts = total_count(&text(&format!("hdr_SET_command_run_{run}.txt")))
            + total_count(&text(&format!("hdr_GET_command_run_{run}.txt")));
        assert_eq!(full, parts, "run {run}");
        counts += full;
    }
    // Every request of both runs, as the server counted them.
    assert_eq!(counts, server.command_calls("set") + server.command_calls("get"));
    assert_eq!(counts, 2 * 2 * 100);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--command-stats-breakdown=line`: a row per `--command` line (two `Sets`), where `command`
/// (memtier's default) gives each name one row; the rows' counts are the server's.
#[test]
fn the_line_breakdown_gives_a_row_per_command_line() {
    let server = RedisServer::start();
    for (breakdown, rows) in [("line", vec!["Sets", "Sets", "Gets"]), ("command", vec!["Sets", "Gets"])] {
        let json = json_path("memtier", breakdown);
        let commands =
            ["--command", "SET __key__ a", "--command", "SET __key__ bb", "--command", "GET __key__"];
        let mut extra = commands.to_vec();
        let split = format!("--command-stats-breakdown={breakdown}");
        extra.extend([split.as_str(), "--json-out-file", json.to_str().unwrap()]);
        let out = small(&server, "-c 1 -n 60", &extra);
        assert!(out.status.success(), "{}", out.dump());
        let table: Vec<&str> = out
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("Type "))
            .skip(2)
            .map(|l| l.split_whitespace().next().unwrap_or_default())
            .collect();
        let mut with_totals = rows.clone();
        with_totals.push("Totals");
        assert_eq!(table, with_totals, "{}", out.dump());
        // memtier writes the rows' keys as they are, "Sets" twice with `line`.
        let text = std::fs::read_to_string(&json).unwrap();
        let doc = read(&json);
        assert_eq!(
            text.matches("\"Sets\":").count(),
            rows.iter().filter(|r| **r == "Sets").count(),
            "{text}"
        );
        assert_eq!(doc["ALL STATS"]["Totals"]["Count"], 60);
    }
    assert_eq!(server.command_calls("set") + server.command_calls("get"), 2 * 60);
}

/// `--wait-ratio 1:1` with `--ratio 1:1`: a WAIT (memtier's default `WAIT 0 0`, here given as
/// `--num-slaves 0-0 --wait-timeout 0`) for each SET, in memtier's `Waits` row, whose count is
/// the server's.
#[test]
fn waits_are_sent_and_counted_in_their_row() {
    let server = RedisServer::start();
    let json = json_path("memtier", "waits");
    let out = small(
        &server,
        "-c 2 -n 150 --ratio 1:1 --wait-ratio 1:1 --num-slaves 0-0 --wait-timeout 0 --json-out-file",
        &[json.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", out.dump());
    let (sets, gets, waits) =
        (server.command_calls("set"), server.command_calls("get"), server.command_calls("wait"));
    assert_eq!(sets + gets + waits, 2 * 150);
    assert!(waits > 0 && sets > 0 && gets > 0, "SET {sets} GET {gets} WAIT {waits}");
    let doc = read(&json);
    let all = &doc["ALL STATS"];
    assert_eq!((all["Sets"]["Count"].as_u64(), all["Waits"]["Count"].as_u64()), (Some(sets), Some(waits)));
    assert_eq!(all["Totals"]["Count"], 300);
    let row =
        out.stdout.lines().find(|l| l.starts_with("Waits ")).unwrap_or_else(|| panic!("{}", out.dump()));
    assert!(
        !row.contains("---") || row.matches("---").count() == 3,
        "figures, --- for hits, misses and KB: {row}"
    );
    assert!(row.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() > 0.0, "{row}");
}

/// `--ratio 1:10 --multi-key-get 4`: each round's ten GETs go as MGETs of 4, 4 and 2 keys (as
/// memtier's create_mget_request cuts them), one request each in the `Gets` row, whose count is
/// the server's; the keys are the server's reads (keyspace hits and misses), and `Hits/sec` and
/// `Misses/sec` count them key by key as memtier does, in the server's shares.
#[test]
fn multi_key_gets_are_mgets_of_four_and_two_keys() {
    let server = RedisServer::start();
    let json = json_path("memtier", "mget");
    let monitor = Monitor::start(&server);
    let out = small(
        &server,
        "-c 2 -n 100 --ratio 1:10 --multi-key-get 4 --json-out-file",
        &[json.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", out.dump());
    let entries = monitor.finish();
    let mgets: Vec<usize> = entries.iter().filter(|e| e.name() == "MGET").map(|e| e.args.len() - 1).collect();
    let (sets, calls) = (server.command_calls("set"), server.command_calls("mget"));
    assert_eq!(sets + calls, 2 * 100);
    assert_eq!((mgets.len() as u64, server.command_calls("get")), (calls, 0));
    assert!(mgets.iter().all(|k| *k == 4 || *k == 2), "{mgets:?}");
    assert!(mgets.contains(&4) && mgets.contains(&2), "{mgets:?}");
    let stat = |f: &str| server.info_field("stats", f).unwrap().parse::<u64>().unwrap();
    let (hits, misses) = (stat("keyspace_hits"), stat("keyspace_misses"));
    assert_eq!(hits + misses, mgets.iter().sum::<usize>() as u64);
    assert!(hits > 0 && misses > 0, "the SETs wrote some of the keys read: {hits} {misses}");
    let doc = read(&json);
    assert_eq!(doc["ALL STATS"]["Gets"]["Count"].as_u64(), Some(calls));
    assert_eq!(doc["ALL STATS"]["Totals"]["Count"], 200);
    // Hits and misses key by key, as memtier counts an MGET's: the server's share of each.
    let share = hits as f64 / (hits + misses) as f64;
    for row in ["Gets", "Totals"] {
        let r = &doc["ALL STATS"][row];
        let (h, m) = (r["Hits/sec"].as_f64().unwrap(), r["Misses/sec"].as_f64().unwrap());
        assert!((h / (h + m) - share).abs() < 0.001, "{row}: {r}, the server's {hits} and {misses}");
    }
    // The respbench key has the counts themselves.
    let totals = &doc["respbench"]["ALL STATS"];
    assert_eq!(totals["nil_elements"].as_u64(), Some(misses), "{totals}");
    let row = out.stdout.lines().find(|l| l.starts_with("Gets ")).unwrap_or_else(|| panic!("{}", out.dump()));
    let table_hits: f64 = row.split_whitespace().nth(2).and_then(|h| h.parse().ok()).unwrap_or(-1.0);
    assert_eq!(table_hits, doc["ALL STATS"]["Gets"]["Hits/sec"].as_f64().unwrap(), "{row}");
}

/// `--hdr-file-prefix` with MGETs and WAITs: GET's file has every MGET (memtier's GET
/// histogram), and WAIT has no file, as memtier writes none.
#[test]
fn hdr_files_put_mgets_in_gets_and_waits_nowhere() {
    let server = RedisServer::start();
    let dir = scratch("hdr-mget");
    let prefix = dir.join("m");
    let out = small(
        &server,
        "-c 2 -n 150 --ratio 1:10 --multi-key-get 4 --wait-ratio 1:1 --hdr-file-prefix",
        &[prefix.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", out.dump());
    let names = files_in(&dir);
    let expected = ["FULL_RUN_1", "GET_command_run_1", "SET_command_run_1"]
        .iter()
        .flat_map(|f| [format!("m_{f}.hgrm"), format!("m_{f}.txt")])
        .collect::<Vec<_>>();
    assert_eq!(names, expected);
    let count = |f: &str| total_count(&std::fs::read_to_string(dir.join(f)).unwrap());
    assert_eq!(count("m_GET_command_run_1.txt"), server.command_calls("mget"));
    assert_eq!(count("m_SET_command_run_1.txt"), server.command_calls("set"));
    assert_eq!(count("m_FULL_RUN_1.txt"), 2 * 150);
    assert!(server.command_calls("wait") > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--connection-timeout 1` (respbench's `--connect-timeout 1s`): a server whose accept queue is
/// full answers no SYN, and the connect fails after a second, naming the address and the limit,
/// where without it the kernel would try for two minutes.
#[test]
fn the_connection_timeout_bounds_a_connect_that_gets_no_answer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Fill the accept queue: the connect that gets no answer is the first that times out.
    let mut held = Vec::new();
    while held.len() < 10_000 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(s) => held.push(s),
            Err(_) => break,
        }
    }
    assert!(held.len() < 10_000, "the accept queue never filled");
    let port = addr.port().to_string();
    for args in [
        vec!["memtier", "-s", "127.0.0.1", "-p", &port, "--connection-timeout", "1", "-n", "5"],
        vec!["-h", "127.0.0.1", "-p", &port, "--connect-timeout", "1s", "-n", "5", "-t", "ping"],
    ] {
        let out = respbench().run(&args, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        let named = format!("127.0.0.1:{port}: no answer within 1s (--connect-timeout)");
        assert!(out.stderr.contains(&named), "{}", out.dump());
        assert!(out.stdout.is_empty(), "{}", out.dump());
    }
}

/// `memtier -t 1 -c 2 --ratio 0:1 --reconnect-on-error LINE…` against `server`, which is
/// killed once it has served 1,000 GETs and restarted `down` later; the run's output.
fn crashed_under(server: &mut RedisServer, line: &str, down: Duration) -> respbench_tests::Output {
    let port = server.port().to_string();
    let mut args = vec!["memtier", "-p", &port, "-t", "1", "-c", "2", "--ratio", "0:1", "--hide-histogram"];
    args.push("--reconnect-on-error");
    args.extend(line.split_whitespace());
    let run = respbench().spawn(&args);
    server.wait_for_calls("get", 1000);
    server.crash_and_restart(down);
    run.wait(T)
}

/// `--reconnect-on-error --reconnect-backoff-factor 2` through a crash: the server (SIGKILL) is
/// down 0.5 s, each connection waits memtier's first 2 s before its attempt and finds it back;
/// the run goes on to its end, every connection dropped once and came back, the lost requests
/// are the `connection` errors and decide the exit status, and the restarted server counted the
/// GETs after it.
#[test]
fn reconnects_wait_memtiers_backoff_through_a_crash() {
    let mut server = RedisServer::start();
    let json = json_path("memtier", "reconnect");
    let line = format!("--test-time 5 --reconnect-backoff-factor 2 --json-out-file {}", json.display());
    let out = crashed_under(&mut server, &line, Duration::from_millis(500));
    let doc = read(&json);
    let t = &doc["respbench"]["ALL STATS"];
    let rc = &t["reconnects"];
    assert_eq!(rc["drops"].as_u64(), Some(2), "{rc}\n{}", out.dump());
    assert_eq!(rc["still_down"].as_u64(), Some(0), "{rc}");
    let lost = rc["lost_requests"].as_u64().unwrap();
    assert_eq!(out.status.code(), Some(if lost > 0 { 1 } else { 0 }), "lost {lost}: {}", out.dump());
    assert_eq!(t["errors"]["connection"].as_u64().unwrap_or(0), lost, "{t}");
    // Each connection waited its 2 s before it came back (a lower bound: never shorter).
    let down = rc["downtime_s"].as_f64().unwrap();
    assert!(down >= 4.0, "2 connections down 2 s each at least: {down} s");
    // The restarted server's own count: every GET after the restart is one of the run's.
    let after = server.command_calls("get");
    assert!(after > 0, "GETs after the restart");
    assert!(t["requests"].as_u64().unwrap() >= 1000 + after, "{t}");
}

/// `--max-reconnect-attempts 2` (memtier waits 1 s before each): the server dies and stays down
/// for 6 s; each connection's two attempts are refused and it gives up: the run ends with
/// status 1 and the connect's error, and the restarted server gets no GET of the 120 s run.
#[test]
fn reconnect_attempts_give_up_after_memtiers_limit() {
    let mut server = RedisServer::start();
    let out =
        crashed_under(&mut server, "--test-time 120 --max-reconnect-attempts 2", Duration::from_secs(6));
    let port = server.port();
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains(&format!("Could not connect to Redis at localhost:{port}")),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("get"), 0, "{}", out.dump());
}

/// `--reconnect-interval 10` (memtier's: a client's connection closes and opens again after
/// every 10 requests, all answered, but not after its last): one client of 100 requests at
/// `--pipeline 4` uses 10 connections, 9 more than without, as the server's
/// `total_connections_received` counts them and respbench's JSON says (`connections_opened`),
/// with the 100 requests counted exactly; with 3 clients the JSON's connections are the
/// server's again, at least 30.
#[test]
fn reconnect_interval_opens_a_connection_per_n_requests() {
    let server = RedisServer::start();
    let json = json_path("memtier", "reconnect-interval");
    let received =
        || -> u64 { server.info_field("stats", "total_connections_received").unwrap().parse().unwrap() };
    let run = |line: &str| -> (u64, u64) {
        let before = received();
        let out = small(&server, line, &["--json-out-file", json.to_str().unwrap()]);
        assert!(out.status.success(), "{}", out.dump());
        let doc = read(&json);
        let opened = doc["respbench"]["ALL STATS"]["connections_opened"].as_u64();
        (received() - before, opened.unwrap_or_else(|| panic!("{doc}")))
    };
    let (plain, one) = run("-c 1 -n 100 --pipeline 4 --ratio 1:1");
    assert_eq!(one, 1);
    let calls = || server.command_calls("set") + server.command_calls("get");
    assert_eq!(calls(), 100);
    let (reconnecting, ten) = run("-c 1 -n 100 --pipeline 4 --ratio 1:1 --reconnect-interval 10");
    assert_eq!((ten, reconnecting - plain), (10, 9));
    assert_eq!(calls(), 200);
    // respbench's own connections (its probes) are the same in every run.
    let own = plain - one;
    let (received3, opened3) = run("-c 3 -n 100 --ratio 1:1 --reconnect-interval 10");
    assert_eq!(received3 - own, opened3);
    assert!(opened3 >= 30, "{opened3}");
    assert_eq!(calls(), 500);
}

/// `--command "SCAN 0 COUNT 100" --scan-incremental-iteration` over 1,000 keys: each client
/// follows the cursor to 0 and starts again, in memtier's two rows (`Scan 0s` the first calls,
/// `Scan <cursor>s` the continuations), whose counts add up to the SCANs the server ran.
#[test]
fn scan_iteration_follows_the_cursor_in_memtiers_rows() {
    let server = RedisServer::start();
    let fill: Vec<String> = (0..1000).map(|i| format!("k{i}")).collect();
    let mut mset = vec!["MSET".to_string()];
    mset.extend(fill.iter().flat_map(|k| [k.clone(), "v".to_string()]));
    assert_eq!(server.cli(&mset).trim(), "OK");
    let json = json_path("memtier", "scan");
    let run = |line: &str| {
        let line = format!("{line} --scan-incremental-iteration --json-out-file");
        let out = small(&server, &line, &[json.to_str().unwrap(), "--command", "SCAN 0 COUNT 100"]);
        assert!(out.status.success(), "{}", out.dump());
        (out, read(&json))
    };
    let (out, doc) = run("-c 2 -n 50");
    let all = &doc["ALL STATS"];
    assert_eq!(keys(all), sorted(&["Runtime", "Scan 0s", "Scan <cursor>s", "Totals"]), "{all}");
    let count = |row: &str| all[row]["Count"].as_u64().unwrap_or_else(|| panic!("{row}: {all}"));
    let (first, next) = (count("Scan 0s"), count("Scan <cursor>s"));
    assert_eq!(first + next, 100);
    assert_eq!(server.command_calls("scan"), 100);
    // About ten calls walk 1,000 keys 100 at a time: more continuations than first calls.
    assert!(first >= 2 && next > first, "{first} first calls, {next} continuations");
    for row in ["Scan 0s", "Scan <cursor>s", "Totals"] {
        assert!(out.stdout.lines().any(|l| l.starts_with(row)), "{row}: {}", out.dump());
    }
    // memtier's --scan-incremental-max-iterations 2: a walk is its first call and at most two
    // continuations, so one client's 30 calls are 10 walks of three (each shorter than a full
    // one), as the server counts.
    let (_, doc) = run("-c 1 -n 30 --scan-incremental-max-iterations 2");
    let all = &doc["ALL STATS"];
    assert_eq!(
        (all["Scan 0s"]["Count"].as_u64(), all["Scan <cursor>s"]["Count"].as_u64()),
        (Some(10), Some(20))
    );
    assert_eq!(server.command_calls("scan"), 130);
}

/// `--data-size-range 10-1000 --data-size-pattern S` writing keys 1 to 100 once (`-n allkeys
/// --key-pattern P:P --ratio 1:0`): key i's value is memtier's `10 + 990 × (i − 1) / 99` bytes,
/// truncated (obj_gen.cpp's get_value), as the server's STRLEN says for every key; the real
/// memtier gives the same 100 sizes.
#[test]
fn the_size_pattern_s_sizes_each_value_by_its_key() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let line = "-t 1 -c 1 -n allkeys --ratio 1:0 --key-pattern P:P --data-size-range 10-1000 \
                --data-size-pattern S --key-minimum 1 --key-maximum 100 --hide-histogram";
    let mut args = vec!["-p", &port];
    args.extend(line.split_whitespace());
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.dbsize(0), 100);
    for i in 1..=100u64 {
        let len: u64 = server.cli(&["STRLEN", &format!("memtier-{i}")]).trim().parse().unwrap();
        assert_eq!(len, 10 + 990 * (i - 1) / 99, "key {i}");
    }
}

/// `--monitor-input FILE --command=__monitor_line2__`: the command of the file's second line
/// that has one (a `redis-cli monitor` capture, its `OK` line skipped, as memtier reads it) is
/// the one sent, 2 × 10 times as the server counts; a line the file does not have, and
/// `__monitor_line@__` in turn beside another `--command`, are refused before anything is sent.
#[test]
fn monitor_input_lines_are_commands() {
    let server = RedisServer::start();
    let dir = scratch("monitor");
    let file = dir.join("monitor.txt");
    let capture = "OK\n1700000000.000001 [0 127.0.0.1:5000] \"SET\" \"mk1\" \"hello\"\n\
                   1700000000.000002 [0 127.0.0.1:5000] \"HSET\" \"mh\" \"f\" \"v\"\n";
    std::fs::write(&file, capture).unwrap();
    let input = file.to_str().unwrap();
    let out = small(&server, "-c 2 -n 10 --command=__monitor_line2__ --monitor-input", &[input]);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!((server.command_calls("hset"), server.command_calls("set")), (20, 0));
    assert_eq!(server.cli(&["HGET", "mh", "f"]).trim(), "v");
    assert!(out.stdout.lines().any(|l| l.starts_with("Hsets ")), "{}", out.dump());
    for (command, named) in [
        ("--command=__monitor_line3__", "__monitor_line2__"),
        ("--command=PING --command=__monitor_line@__", "the only --command"),
    ] {
        let out = small(&server, &format!("-n 1 {command} --monitor-input"), &[input]);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains(named), "{named}: {}", out.dump());
    }
    assert_eq!(server.command_calls("hset"), 20);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--command=__monitor_line@__` over a capture of 4 commands (SET, GET, GET, HSET): with
/// memtier's default `--monitor-pattern S` every request takes the file's next line, one walk
/// shared by all clients, so `-t 2 -c 3 -n 8` (12 passes) makes the server count exactly 12
/// SETs, 24 GETs and 12 HSETs, in memtier's rows `Sets`, `Gets`, `Hsets` (the real memtier 2.4
/// gives the same counts); with `R` each request draws a line: 600 requests in the file's
/// proportions (GET half of them) and the rows agree with the server command by command.
#[test]
fn a_monitor_line_for_each_request() {
    let server = RedisServer::start();
    let dir = scratch("monitor-at");
    let file = dir.join("monitor.txt");
    let capture = "OK\n1700000000.000001 [0 127.0.0.1:5000] \"SET\" \"a\" \"1\"\n\
                   1700000000.000002 [0 127.0.0.1:5000] \"GET\" \"a\"\n\
                   1700000000.000003 [0 127.0.0.1:5000] \"GET\" \"b\"\n\
                   1700000000.000004 [0 127.0.0.1:5000] \"HSET\" \"h\" \"f\" \"v\"\n";
    std::fs::write(&file, capture).unwrap();
    let json = json_path("memtier", "monitor-at");
    let port = server.port().to_string();
    let run = |extra: &str| {
        let line = format!("-p {port} -t 2 -c 3 --hide-histogram --command=__monitor_line@__ {extra}");
        let mut args: Vec<&str> = line.split_whitespace().collect();
        args.extend(["--monitor-input", file.to_str().unwrap(), "--json-out-file", json.to_str().unwrap()]);
        let out = memtier(&respbench(), &args);
        assert!(out.status.success(), "{}", out.dump());
        let doc = read(&json);
        let all = doc["ALL STATS"].clone();
        assert_eq!(keys(&all), sorted(&["Gets", "Hsets", "Runtime", "Sets", "Totals"]), "{all}");
        let count = |row: &str| all[row]["Count"].as_u64().unwrap_or_else(|| panic!("{row}: {all}"));
        (count("Sets"), count("Gets"), count("Hsets"))
    };
    let calls = |s: &RedisServer| (s.command_calls("set"), s.command_calls("get"), s.command_calls("hset"));
    assert_eq!(run("-n 8"), (12, 24, 12));
    assert_eq!(calls(&server), (12, 24, 12));
    server.cli(&["CONFIG", "RESETSTAT"]);
    let (sets, gets, hsets) = run("-n 100 --monitor-pattern R");
    assert_eq!(calls(&server), (sets, gets, hsets));
    assert_eq!(sets + gets + hsets, 600);
    // Binomial: GET's 300 ± 12 (one deviation), SET's and HSET's 150 ± 11; six deviations off.
    assert!((228..=372).contains(&gets) && (84..=216).contains(&sets) && (84..=216).contains(&hsets));
    let _ = std::fs::remove_dir_all(&dir);
}

/// tests/golden/memtier-import/items.csv: three items in memtier's `--data-import` format (one
/// with a doubled quote in its key, and a quote, a comma and a line break in its data), each
/// with an expiry of 1000 s; the real memtier_benchmark 2.4 reads it and verifies all three.
fn import_file() -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/memtier-import/items.csv");
    file.to_str().unwrap().to_string()
}

/// The file's items: key and value, as the server must hold them.
const ITEMS: [(&str, &str); 3] = [("key1", "xxxxxxxxxx"), ("say\"hi", "a\",b\nc"), ("key3", "aaaaaaaaaaaa")];

/// `--data-import FILE --ratio 1:0`: memtier's SETEX of each item with its expiry, in turn
/// (2 clients x 3 requests: each item twice), the values the file's; with `--no-expiry` SET
/// and no TTL; with `--generate-keys` the keys drawn from the range, the values the file's.
#[test]
fn data_import_writes_the_files_items() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = import_file();
    let base = ["-p", &port, "--data-import", &file, "--ratio", "1:0", "-t", "1", "-c", "2", "-n", "3"];
    let out = memtier(&respbench(), &[&base[..], &["--hide-histogram"]].concat());
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("setex"), 6, "{}", out.dump());
    assert_eq!(server.command_calls("set"), 0);
    assert!(out.stdout.lines().any(|l| l.starts_with("Sets ")), "{}", out.dump());
    assert_eq!(server.dbsize(0), 3);
    for (key, value) in ITEMS {
        assert_eq!(server.cli(&["GET", key]), value, "{key}");
        let ttl: i64 = server.cli(&["TTL", key]).parse().unwrap();
        assert!(ttl > 900 && ttl <= 1000, "{key}: TTL {ttl}");
    }
    server.cli(&["FLUSHALL"]);
    let out = memtier(&respbench(), &[&base[..], &["--no-expiry"]].concat());
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 6, "{}", out.dump());
    for (key, value) in ITEMS {
        assert_eq!(server.cli(&["GET", key]), value, "{key}");
        assert_eq!(server.cli(&["TTL", key]), "-1", "{key}");
    }
    server.cli(&["FLUSHALL"]);
    let generated = ["--generate-keys", "--key-prefix", "g:", "--key-maximum", "4", "--key-pattern", "S:S"];
    let out = memtier(&respbench(), &[&base[..], &generated].concat());
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("setex"), 12, "{}", out.dump());
    let keys = server.cli(&["KEYS", "*"]);
    assert!(keys.lines().all(|k| k.starts_with("g:")), "{keys}");
    let values: Vec<String> = keys.lines().map(|k| server.cli(&["GET", k])).collect();
    assert!(!values.is_empty() && values.iter().all(|v| ITEMS.iter().any(|(_, i)| v == i)), "{values:?}");
}

/// `--generate-keys` names the keys as memtier does, the prefix and the number unpadded from
/// `--key-minimum`: one client writing each key of 1 to 20 once (`P:P`) writes exactly `k-1` …
/// `k-20`, key `k-i` the file's item `(i - 1) % 3`, and the server's SET count is the JSON's.
#[test]
fn generated_import_keys_are_named_as_memtier_names_them() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = import_file();
    let json = json_path("memtier", "import-keys");
    let line = "--generate-keys --key-prefix k- --key-minimum 1 --key-maximum 20 --key-pattern P:P \
                -n allkeys --ratio 1:0 --no-expiry -t 1 -c 1 --hide-histogram";
    let mut args = vec!["-p", &port, "--data-import", &file, "--json-out-file", json.to_str().unwrap()];
    args.extend(line.split_whitespace());
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(all_keys(&server), sorted_names("k-", 20));
    for i in 1..=20 {
        assert_eq!(server.cli(&["GET", &format!("k-{i}")]), ITEMS[(i - 1) % 3].1, "k-{i}");
    }
    assert_eq!(server.command_calls("set"), 20, "{}", out.dump());
    assert_eq!(read(&json)["ALL STATS"]["Sets"]["Count"], 20);
}

/// A bad record is an error naming the file's line before anything is sent; memtier's own
/// checks on the options that go with an import are its messages.
#[test]
fn a_bad_import_record_names_its_line() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let dir = scratch("import");
    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        "dumpflags, time, exptime\n0, 0, 0, 6, 0, 0, 0, 1, a, abcd\n0, 0, 0, 12, 0, 0, 0, 1, b, xx\n",
    )
    .unwrap();
    let out = memtier(&respbench(), &["-p", &port, "--data-import", bad.to_str().unwrap(), "--ratio", "1:0"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("line 3: the data column is 2 bytes, its record says 10"), "{}", out.dump());
    let file = import_file();
    for (extra, said) in [
        (&["--ratio", "1:0", "-d", "10"][..], "data size cannot be specified when importing."),
        (
            &["--ratio", "1:0", "--key-prefix", "x"][..],
            "use key-minimum, key-maximum and key-prefix only with generate-keys.",
        ),
        (&["--ratio", "1:10"][..], "give --ratio 1:0"),
    ] {
        let out = memtier(&respbench(), &[&["-p", &port, "--data-import", &file][..], extra].concat());
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains(said), "{said}: {}", out.dump());
    }
    let out = memtier(&respbench(), &["-p", &port, "--no-expiry"]);
    assert!(out.stderr.contains("use no-expiry only with data-import"), "{}", out.dump());
    assert_eq!(server.command_calls("set") + server.command_calls("setex"), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--data-verify` reads each item back after the import and prints memtier's lines with the
/// counts (and its JSON object); a mismatch planted with redis-cli fails `--verify-only`, which
/// sends only the GETs (one per item), naming the key, with exit 1.
#[test]
fn data_verify_reads_the_items_back() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let file = import_file();
    let json = json_path("memtier", "verify");
    let line = ["-p", &port, "--data-import", &file, "--ratio", "1:0", "-t", "1", "-c", "1", "-n", "3"];
    let out = memtier(
        &respbench(),
        &[&line[..], &["--data-verify", "--json-out-file", json.to_str().unwrap()]].concat(),
    );
    assert!(out.status.success(), "{}", out.dump());
    assert!(
        out.stdout.ends_with(
            "\n\nPerforming data verification...\nData verification completed:\n3          keys verified successfuly.\n0          keys failed.\n"
        ),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("get"), 3, "one GET per item");
    let doc = read(&json);
    assert_eq!(doc["client verifications results"]["keys verified successfuly"], 3);
    assert_eq!(doc["client verifications results"]["keys failed"], 0);
    assert_eq!(doc["ALL STATS"]["Sets"]["Count"], 3);
    server.cli(&["SET", "key3", "planted"]);
    let out = memtier(&respbench(), &["-p", &port, "--data-import", &file, "--verify-only"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("error: key [key3]: expected [aaaaaaaaaaaa], got [planted]"),
        "{}",
        out.dump()
    );
    assert!(
        out.stdout.contains("2          keys verified successfuly.\n1          keys failed.\n"),
        "{}",
        out.dump()
    );
    assert_eq!(server.command_calls("get"), 6, "--verify-only sends the GETs alone");
    assert_eq!(server.command_calls("setex"), 3, "{}", out.dump());
    server.cli(&["DEL", "key1"]);
    let out = memtier(&respbench(), &["-p", &port, "--data-import", &file, "--verify-only"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("error: key [key1]: expected [xxxxxxxxxx], got []"), "{}", out.dump());
    assert!(
        out.stdout.contains("1          keys verified successfuly.\n2          keys failed.\n"),
        "{}",
        out.dump()
    );
    let out = memtier(&respbench(), &["-p", &port, "--data-verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("use data-verify only with data-import"), "{}", out.dump());
}

/// memtier's client sends its `--command`s in turn, each `--command-ratio` times in a row, so a
/// transaction written as `--command=MULTI --command="SET …" --command=EXEC` runs: respbench's
/// clients each keep their own turn (`--mix-in-turn-per-client`). Drawn at random, 90 requests
/// would meet `EXEC without MULTI` (and `MULTI calls can not be nested`) almost surely.
#[test]
fn commands_go_in_turn_on_each_connection() {
    let server = RedisServer::start();
    let json = json_path("memtier", "in-turn");
    let port = server.port().to_string();
    let args = [
        "-p",
        &port,
        "-t",
        "1",
        "-c",
        "3",
        "-n",
        "30",
        "--hide-histogram",
        "--command=MULTI",
        "--command=SET __key__ __data__",
        "--command-ratio=2",
        "--command=EXEC",
        "--json-out-file",
        json.to_str().unwrap(),
    ];
    let out = memtier(&respbench(), &args);
    assert!(out.status.success(), "{}", out.dump());
    let stats = server.cli(&["INFO", "stats"]);
    assert!(stats.contains("total_error_replies:0"), "{stats}");
    let (multi, set, exec) =
        (server.command_calls("multi"), server.command_calls("set"), server.command_calls("exec"));
    // 90 requests in rounds of four (MULTI, SET, SET, EXEC) on each of three connections: every
    // EXEC ran its two SETs; a client that stopped inside a round left its MULTI open.
    assert!(exec >= 20 && set == 2 * exec && (exec..=exec + 3).contains(&multi), "{multi} {set} {exec}");
    let doc = read(&json);
    let count = |row: &str| doc["ALL STATS"][row]["Count"].as_u64().unwrap_or_else(|| panic!("{row}: {doc}"));
    assert_eq!(count("Totals"), 90);
    assert_eq!((count("Multis"), count("Execs")), (multi, exec));
}
