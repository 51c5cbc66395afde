//! Value sizes from 16 bytes to a megabyte on every backend (issue #37): replies whose bulk
//! bodies nothing reads are dropped in the kernel (a `recv` with `MSG_TRUNC`; io_uring's receive
//! op with it), and what respbench counts must stay exact: the server's commandstats equal
//! respbench's requests, and the bytes respbench says it received equal the replies' sizes
//! worked out from the value size; large values SET arrive byte-exact (uring sends them from the
//! shared payload by reference).

use std::time::Duration;

use respbench_tests::{
    json_path, on_every_backend, respbench, respbench_on, take_document, RedisServer, Tool,
};

const T: Duration = Duration::from_secs(120);

/// Runs `args` with `--json` and gives the document's tests.
fn run_json(tool: &Tool, server: &RedisServer, args: &[&str]) -> Vec<serde_json::Value> {
    let path = json_path("values", "run");
    let port = server.port().to_string();
    let mut all: Vec<&str> = vec!["-p", &port, "-q", "--json", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = tool.run(&all, T);
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.stderr.is_empty(), "{}", out.dump());
    let doc: serde_json::Value = serde_json::from_str(&take_document(&path)).expect("a JSON document");
    doc["tests"].as_array().expect("tests").clone()
}

fn field(t: &serde_json::Value, name: &str) -> u64 {
    t[name].as_u64().unwrap_or_else(|| panic!("no {name} in {t}"))
}

/// SET then GET at every size: exact counts against the server's, and bytes against the values.
fn every_value_size_is_counted_exactly(tool: Tool) {
    let server = RedisServer::start();
    for (d, n) in [(16u64, 2000u64), (1024, 2000), (16 * 1024, 1000), (100 * 1024, 300), (1 << 20, 40)] {
        let (sets, gets) = (server.command_calls("set"), server.command_calls("get"));
        let keys = 20.to_string();
        let (ds, ns) = (d.to_string(), n.to_string());
        // Every key written first, so that every GET finds its value.
        let common = ["-r", &keys, "-d", &ds, "-c", "5"];
        let fill = run_json(
            &tool,
            &server,
            &[&common[..], &["-t", "set", "-n", "20", "--key-dist", "sequential"]].concat(),
        );
        assert_eq!(field(&fill[0], "requests"), 20);
        let tests =
            run_json(&tool, &server, &[&common[..], &["-t", "set,get", "-n", &ns, "-P", "3"]].concat());
        assert_eq!(tests.len(), 2);
        let (set, get) = (&tests[0], &tests[1]);
        assert_eq!(server.command_calls("set") - sets, 20 + n, "-d {d}");
        assert_eq!(server.command_calls("get") - gets, n, "-d {d}");
        assert_eq!((field(set, "requests"), field(get, "requests")), (n, n), "-d {d}");
        assert_eq!(field(set, "bytes_received"), n * b"+OK\r\n".len() as u64, "-d {d}");
        // `$<d>\r\n`, the value, `\r\n`: read or dropped, every byte counted once.
        let reply = format!("${d}\r\n").len() as u64 + d + 2;
        assert_eq!(field(get, "bytes_received"), n * reply, "-d {d}");
    }
}

/// LRANGE's elements are bulk strings too: large ones are dropped element by element.
fn lrange_of_large_elements_is_counted_exactly(tool: Tool) {
    let server = RedisServer::start();
    // lrange_100 pushes -n elements of -d bytes to one list first (LPUSH), then reads the first
    // 100 -n times.
    let tests = run_json(&tool, &server, &["-t", "lrange_100", "-n", "110", "-d", "10000", "-c", "3"]);
    let read = tests.last().expect("a test");
    assert_eq!(field(read, "requests"), 110);
    assert_eq!(server.command_calls("lrange"), 110);
    let len: u64 = server.cli(&["LLEN", "mylist"]).trim().parse().expect("a length");
    assert_eq!(len, 110);
    // `*100\r\n`, then 100 × `$10000\r\n`, the element, `\r\n`.
    let reply = 6 + 100 * (8 + 10_000 + 2);
    assert_eq!(field(read, "bytes_received"), 110 * reply, "{read}");
}

/// SETs of large values (sent from the one shared payload: by reference on uring, in several
/// segments of one send under a pipeline) arrive byte-exact: every key's value is `-d`'s payload,
/// and the server's calls are respbench's requests.
fn large_set_values_arrive_byte_exact(tool: Tool) {
    let server = RedisServer::start();
    for d in [100 * 1024 + 7, 1 << 20, 3 << 20] {
        server.cli(&["FLUSHALL"]);
        let sets = server.command_calls("set");
        let ds = d.to_string();
        let tests = run_json(
            &tool,
            &server,
            &[
                "-t",
                "set",
                "-d",
                &ds,
                "-n",
                "60",
                "-r",
                "20",
                "--key-dist",
                "sequential",
                "-c",
                "5",
                "-P",
                "3",
            ],
        );
        assert_eq!(field(&tests[0], "requests"), 60, "-d {d}");
        assert_eq!(server.command_calls("set") - sets, 60, "-d {d}");
        let want = String::from_utf8(respbench_core::template::payload(d)).expect("an ASCII payload");
        let keys = server.cli(&["KEYS", "*"]);
        let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
        assert_eq!(keys.len(), 20, "-d {d}: {keys:?}");
        for key in keys {
            assert_eq!(server.cli(&["STRLEN", key]).trim(), ds, "-d {d}: {key}");
            let got = server.cli(&["GET", key]);
            assert!(got.trim_end_matches('\n') == want, "-d {d}: {key}'s value differs from -d's payload");
        }
    }
}

on_every_backend!(
    every_value_size_is_counted_exactly,
    lrange_of_large_elements_is_counted_exactly,
    large_set_values_arrive_byte_exact
);

/// The single-shot receives of kernels without multishot ones: each receive chosen when it is
/// queued, a discard or a read.
#[test]
fn uring_single_shot_counts_every_size_exactly() {
    let tool =
        Tool { env: vec![("RESPBENCH_URING_SINGLE_SHOT".into(), "1".into())], ..respbench_on("uring") };
    every_value_size_is_counted_exactly(tool);
}

/// bench/values' floor client (`bench/floor`, the least a client that moves the bytes can cost)
/// does the work it is measured for: the server runs exactly the requests it was asked for, its
/// SETs store values of the size asked, and its GETs, whose bodies it drops unread, all end.
#[test]
fn the_floor_client_moves_exactly_its_requests() {
    let floor = respbench().path.with_file_name("respbench-floor");
    assert!(
        floor.is_file(),
        "{} does not exist: build it first: cargo build --workspace --bins",
        floor.display()
    );
    let floor = Tool { path: floor, ..respbench() };
    let server = RedisServer::start();
    let port = server.port().to_string();
    for (d, n) in [(16u64, 3000u64), (100 * 1024 + 7, 300), (1 << 20, 30)] {
        for test in ["set", "get"] {
            let before = server.command_calls(test);
            let (ds, ns) = (d.to_string(), n.to_string());
            let out = floor.run(&["-p", &port, "-c", "5", "-r", "10", "-t", test, "-d", &ds, "-n", &ns], T);
            assert!(out.status.success() && out.stderr.is_empty(), "{}", out.dump());
            let rps = &out.stdout;
            assert!(
                rps.starts_with("\"test\",\"rps\"\n")
                    && rps.contains(&format!("\"{}\",", test.to_uppercase())),
                "{rps}"
            );
            assert_eq!(server.command_calls(test) - before, n, "{test} -d {d}");
        }
        for k in 0..10 {
            assert_eq!(server.cli(&["STRLEN", &format!("key:{k:012}")]), d.to_string(), "-d {d}");
        }
    }
    // An error reply ends the run with a message, not a hang.
    server.cli(&["DEL", "key:000000000000"]);
    server.cli(&["LPUSH", "key:000000000000", "x"]);
    let out = floor.run(&["-p", &port, "-c", "1", "-r", "1", "-t", "get", "-n", "10"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("WRONGTYPE"), "{}", out.dump());
}
