//! `--verify` and `--verify-only` against real servers, on mio (the values and the checks are
//! the core's; no backend does anything of its own for them): a correct server gives no
//! mismatch, and the reads checked are the server's own GET calls; a relay that changes 1 value
//! reply in 1,000 gives exactly the mismatches it made, each shown; a replica kept behind its
//! primary gives stale reads, each older than what the primary holds; `--verify-only` reads
//! back every key and finds what was changed behind its back.

use std::path::Path;
use std::time::Duration;

use respbench_tests::corrupt::CorruptRelay;
use respbench_tests::relay::Relay;
use respbench_tests::{json_path, take_document, wait_until, RedisServer, Tool};
use serde_json::Value;

const T: Duration = Duration::from_secs(120);

respbench_tests::backend_tests!(
    every: [],
    mio: [
        a_correct_server_gives_no_mismatch,
        a_corrupting_relay_gives_each_of_its_mismatches,
        a_lagging_replica_gives_stale_reads,
        a_replica_read_under_writes_reports_only_real_stale_reads,
        verify_only_reads_back_every_key,
        what_cannot_be_verified_is_refused_before_connecting,
    ],
);

/// The verify object of the last test of the document at `path` (a mix's total).
fn verify_of(path: &Path) -> Value {
    let doc: Value = serde_json::from_str(&take_document(path)).unwrap();
    let tests = doc["tests"].as_array().unwrap();
    tests.last().unwrap()["verify"].clone()
}

fn n(v: &Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or_else(|| panic!("verify.{field} in {v}"))
}

/// The version in a value's header (`rb` + 12 key digits + `:` + 12 version digits), 0 for nil.
fn version(value: &str) -> u64 {
    if value == "(nil)" {
        return 0;
    }
    value[15..27].parse().unwrap_or_else(|_| panic!("no version in {value}"))
}

/// `--verify --mix set:1,get:1` against redis-server itself: every GET checked (as many as the
/// server's `cmdstat_get` calls), none mismatched, versions checked, exit 0; the text report
/// says the same; and the same with values of 100 kB.
fn a_correct_server_gives_no_mismatch(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let json = json_path("verify", "ok");
    let args = [
        "-p",
        &port,
        "--verify",
        "--mix",
        "set:1,get:1",
        "-r",
        "500",
        "-d",
        "64",
        "-n",
        "20000",
        "-c",
        "8",
        "-P",
        "4",
    ];
    let out = tool.run(&[&args[..], &["--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let v = verify_of(&json);
    let gets = server.command_calls("get");
    assert!(gets > 9000, "{gets} GETs");
    assert_eq!(n(&v, "checked"), gets, "{v}");
    assert_eq!((n(&v, "wrong"), n(&v, "other_key"), n(&v, "stale")), (0, 0, 0), "{v}");
    assert_eq!(v["versions"], true);
    assert_eq!(server.command_calls("set") + gets, 20000);
    assert!(out.stdout.contains(&format!("  verify: {gets} reads checked, 0 mismatches")), "{}", out.dump());
    // Every value the server holds is the encoding of its own key, at -d's size.
    let value = server.cli(&["GET", "key:000000000007"]);
    assert!(value.trim_end().starts_with("rb000000000007:") && value.trim_end().len() == 64, "{value}");
    // `-t set,get`: the GET test reads what the SET test wrote, each value checked for its key
    // and encoding; it wrote nothing itself, so it knows no versions.
    let json = json_path("verify", "suite");
    let before = server.command_calls("get");
    let suite = ["-p", &port, "--verify", "-t", "set,get", "-r", "500", "-d", "64", "-n", "5000", "-q"];
    let out = tool.run(&[&suite[..], &["--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let v = verify_of(&json);
    assert_eq!(n(&v, "checked"), server.command_calls("get") - before, "{v}");
    assert_eq!((n(&v, "checked"), n(&v, "wrong") + n(&v, "other_key") + n(&v, "stale")), (5000, 0), "{v}");
    assert_eq!(v["versions"], false, "{v}");
    // -q says it too, in a line of its own after the test's.
    let said = out.stdout.lines().find(|l| l.starts_with("GET: verify: "));
    assert_eq!(
        said,
        Some("GET: verify: 5000 reads checked, 0 mismatches (0 wrong values, 0 other keys' values, 0 stale; versions not checked)"),
        "{}",
        out.dump()
    );
    // Values of 100 kB: above the size whose bodies the backends drop unread (they are read
    // here, or every one would be wrong) and the size a SET takes by reference.
    // (The keys start empty: a key this test has not written yet may hold an earlier run's
    // value, which is checked at this -d's size.)
    server.cli(&["FLUSHALL"]);
    let before = server.command_calls("get");
    let json = json_path("verify", "large");
    let large = [
        "-p",
        &port,
        "--verify",
        "--mix",
        "set:1,get:1",
        "-r",
        "50",
        "-d",
        "100000",
        "-n",
        "1000",
        "-c",
        "4",
    ];
    let out = tool.run(&[&large[..], &["--json", json.to_str().unwrap()]].concat(), T);
    assert!(out.status.success(), "{}", out.dump());
    let v = verify_of(&json);
    let large_gets = server.command_calls("get") - before;
    assert!(large_gets > 300, "{large_gets} GETs");
    assert_eq!(
        (n(&v, "checked"), n(&v, "wrong") + n(&v, "other_key") + n(&v, "stale")),
        (large_gets, 0),
        "{v}"
    );
    assert_eq!(server.cli(&["STRLEN", "key:000000000007"]).trim(), "100000");
}

/// A relay that changes every 1000th value reply (in turn a padding byte, and the key's last
/// digit): respbench counts exactly the relay's changes (a wrong value for each padding byte,
/// another key's value for each digit), shows each with its key, and exits 1.
fn a_corrupting_relay_gives_each_of_its_mismatches(tool: Tool) {
    let server = RedisServer::start();
    // Every key written first and directly (one client, so each key is its own; sequential
    // keys, covering all), so every GET through the relay reads a value.
    let out = tool.run(
        &[
            "-p",
            &server.port().to_string(),
            "--verify",
            "-t",
            "set",
            "-c",
            "1",
            "--key-dist",
            "sequential",
            "-r",
            "1000",
            "-d",
            "48",
            "-n",
            "1000",
            "-q",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    let relay = CorruptRelay::start(server.port(), 1000);
    let json = json_path("verify", "corrupt");
    let port = relay.port().to_string();
    let out = tool.run(
        &[
            "-p",
            &port,
            "--verify",
            "--mix",
            "set:1,get:3",
            "-r",
            "1000",
            "-d",
            "48",
            "-n",
            "20000",
            "-c",
            "4",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let c = &relay.corrupted;
    let (values, wrong, other) = (load(&c.values), load(&c.wrong), load(&c.other_key));
    let v = verify_of(&json);
    let gets = server.command_calls("get");
    assert_eq!(n(&v, "checked"), gets, "{v}");
    assert_eq!(values, gets, "the relay saw every GET's value");
    assert!((13..=17).contains(&(wrong + other)), "1 in 1000 of {values}: {wrong} + {other}");
    assert_eq!((n(&v, "wrong"), n(&v, "other_key"), n(&v, "stale")), (wrong, other, 0), "{v}");
    eprintln!("corrupting relay: {values} values, changed {wrong} padding + {other} key; respbench: {v}");
    let shown = v["shown"].as_array().unwrap();
    assert_eq!(shown.len() as u64, wrong + other, "each one shown: {v}");
    for m in shown {
        let (key, got) = (m["key"].as_str().unwrap(), m["got"].as_str().unwrap());
        let digits = &key[4..];
        match m["kind"].as_str().unwrap() {
            // The key's own header, its padding changed at byte 30 (upper case).
            "wrong" => assert!(
                got.starts_with(&format!("rb{digits}:")) && got.as_bytes()[30].is_ascii_uppercase(),
                "{m}"
            ),
            "other_key" => {
                let last = (digits.as_bytes()[11] - b'0' + 1) % 10;
                assert_eq!(&got[2..13], &digits[..11], "{m}");
                assert_eq!(got.as_bytes()[13], b'0' + last, "{m}");
            }
            k => panic!("kind {k}: {m}"),
        }
    }
    assert!(
        out.stderr.contains(&format!("--verify: {} replies did not match", wrong + other)),
        "{}",
        out.dump()
    );
    assert!(
        out.stdout.contains(&format!(
            "{} mismatches ({wrong} wrong values, {other} other keys' values, 0 stale",
            wrong + other
        )),
        "{}",
        out.dump()
    );
}

fn load(a: &std::sync::atomic::AtomicU64) -> u64 {
    a.load(std::sync::atomic::Ordering::Relaxed)
}

/// A replica whose replication link runs through a relay that holds each chunk 100 ms: it is
/// always that far behind its primary, so GETs there (`--rfr yes`) under SETs at the primary
/// read values older than writes already acknowledged. respbench must find some, and each one
/// shown must be older than what was acknowledged (its version below the one expected) and than
/// what the primary holds now.
fn a_lagging_replica_gives_stale_reads(tool: Tool) {
    let primary = RedisServer::start_with(&[("repl-diskless-sync-delay", "0")]);
    let link = Relay::start_on(0, primary.port(), Duration::from_millis(100), 0, false);
    let of = format!("127.0.0.1 {}", link.port());
    let replica = RedisServer::start_with(&[("replicaof", of.as_str())]);
    wait_until("the replica online", Duration::from_secs(30), || {
        primary.cli(&["INFO", "replication"]).contains("state=online")
    });
    let json = json_path("verify", "lag");
    let out = tool.run(
        &[
            "-p",
            &primary.port().to_string(),
            "--replica",
            &format!("127.0.0.1:{}", replica.port()),
            "--rfr",
            "yes",
            "--verify",
            "--mix",
            "set:1,get:1",
            "-r",
            "50",
            "-d",
            "40",
            "-n",
            "20000",
            "-c",
            "5",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let v = verify_of(&json);
    assert_eq!(n(&v, "checked"), replica.command_calls("get"), "{v}");
    assert_eq!(primary.command_calls("get"), 0);
    assert_eq!((n(&v, "wrong"), n(&v, "other_key")), (0, 0), "{v}");
    assert!(n(&v, "stale") > 0, "a replica 100 ms behind read no stale value: {v}");
    eprintln!("replica 100 ms behind: {} stale of {} checked", n(&v, "stale"), n(&v, "checked"));
    check_stale_shown(&v, &primary);
}

/// Each stale read shown: the key's own value (or nil), its version below the least one
/// expected, which the primary's value of the key has reached.
fn check_stale_shown(v: &Value, primary: &RedisServer) {
    let shown = v["shown"].as_array().unwrap();
    assert_eq!(shown.len() as u64, n(v, "stale").min(20), "{v}");
    for m in shown {
        assert_eq!(m["kind"], "stale", "{m}");
        let (key, got, expected) =
            (m["key"].as_str().unwrap(), m["got"].as_str().unwrap(), m["expected"].as_str().unwrap());
        let want = version(expected);
        assert!(got == "(nil)" || got.starts_with(&format!("rb{}:", &key[4..])), "{m}");
        assert!(version(got) < want, "not older than expected: {m}");
        let held = primary.cli(&["GET", key]);
        assert!(version(held.trim_end()) >= want, "the primary holds {held} for {m}");
    }
}

/// The same on a replica linked straight to its primary: on loopback it lags only a little, so
/// stale reads may or may not occur; whatever respbench reports must be real (each shown one
/// older than what was acknowledged and what the primary holds), and nothing else mismatches.
fn a_replica_read_under_writes_reports_only_real_stale_reads(tool: Tool) {
    let set = respbench_tests::cluster::ReplicaSet::start(1);
    let json = json_path("verify", "replica");
    let out = tool.run(
        &[
            "-p",
            &set.primary.port().to_string(),
            "--replicas",
            "auto",
            "--rfr",
            "yes",
            "--verify",
            "--mix",
            "set:1,get:1",
            "-r",
            "50",
            "-d",
            "40",
            "-n",
            "20000",
            "-c",
            "5",
            "--json",
            json.to_str().unwrap(),
        ],
        T,
    );
    let v = verify_of(&json);
    let stale = n(&v, "stale");
    assert_eq!(out.status.code(), Some(if stale > 0 { 1 } else { 0 }), "{}", out.dump());
    assert_eq!(n(&v, "checked"), set.replicas[0].command_calls("get"), "{v}");
    assert_eq!((n(&v, "wrong"), n(&v, "other_key")), (0, 0), "{v}");
    eprintln!("stale reads on a loopback replica: {stale} of {}: {:?}", n(&v, "checked"), v["shown"].get(0));
    check_stale_shown(&v, &set.primary);
}

/// `--verify-only -r 2000` after a `--verify` run wrote every key (one client, sequential): 2000 GETs (the server's own
/// count), no mismatch, versions not checked. Then one key is given another key's value and
/// one a changed byte behind respbench's back: the next read-back finds exactly those two, and
/// exits 1.
fn verify_only_reads_back_every_key(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = tool.run(
        &[
            "-p",
            &port,
            "--verify",
            "-t",
            "set",
            "-c",
            "1",
            "--key-dist",
            "sequential",
            "-r",
            "2000",
            "-d",
            "32",
            "-n",
            "2000",
            "-q",
        ],
        T,
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.dbsize(0), 2000);
    let json = json_path("verify", "only");
    let read = |json: &Path| {
        tool.run(
            &["-p", &port, "--verify-only", "-r", "2000", "-d", "32", "--json", json.to_str().unwrap()],
            T,
        )
    };
    let out = read(&json);
    assert!(out.status.success(), "{}", out.dump());
    let v = verify_of(&json);
    assert_eq!(server.command_calls("get"), 2000);
    assert_eq!((n(&v, "checked"), n(&v, "wrong") + n(&v, "other_key") + n(&v, "stale")), (2000, 0), "{v}");
    assert_eq!(v["versions"], false);
    let other = server.cli(&["GET", "key:000000000008"]);
    server.cli(&["SET", "key:000000000009", other.trim_end()]);
    let mut changed = server.cli(&["GET", "key:000000000010"]).trim_end().to_string();
    changed.replace_range(31..32, "#");
    server.cli(&["SET", "key:000000000010", &changed]);
    let json = json_path("verify", "only-changed");
    let out = read(&json);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let v = verify_of(&json);
    assert_eq!((n(&v, "checked"), n(&v, "wrong"), n(&v, "other_key")), (2000, 1, 1), "{v}");
    let shown: Vec<(&str, &str)> = v["shown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["kind"].as_str().unwrap(), m["key"].as_str().unwrap()))
        .collect();
    assert!(
        shown.contains(&("other_key", "key:000000000009")) && shown.contains(&("wrong", "key:000000000010")),
        "{v}"
    );
}

/// What `--verify` cannot check is refused before connecting, with exit 1 and the option named.
fn what_cannot_be_verified_is_refused_before_connecting(tool: Tool) {
    // A port nothing listens on: a refusal must come before any connection.
    let port = respbench_tests::free_port().to_string();
    for (args, says) in [
        (vec!["--verify", "-t", "set,get"], "--verify needs -r"),
        (vec!["--verify", "-t", "set,get", "-r", "10"], "-d of at least 28"),
        (vec!["--verify", "-t", "set,get", "-r", "10", "-d", "16-64"], "one value size"),
        (vec!["--verify", "-t", "lpush", "-r", "10", "-d", "32"], "not LPUSH"),
        (vec!["--verify", "--preload", "-t", "get", "-r", "10", "-d", "32"], "--preload"),
        (vec!["--verify", "--verify-only", "-r", "10", "-d", "32"], "give one"),
        (vec!["--verify", "-t", "set", "-r", "10", "-d", "32", "--expiry-range", "1-2"], "--expiry-range"),
        (vec!["--verify-only", "-t", "get", "-r", "10", "-d", "32"], "takes no -t"),
    ] {
        let out = tool.run(&[&["-p", port.as_str()][..], &args].concat(), T);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains(says), "{args:?}: {}", out.dump());
        assert!(
            !out.stderr.contains("Connection refused") && !out.stderr.contains("Could not connect"),
            "{args:?}: {}",
            out.dump()
        );
    }
}
