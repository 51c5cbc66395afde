//! Memory does not grow with `-c × -d` (issue #24): the connections share one copy of a value,
//! a test without one allocates none, and a value too large for memory is refused before the
//! benchmark connects, with the size it would need, instead of aborting mid-run.

use std::io::Write;
use std::time::Duration;

use respbench_tests::{respbench, RedisServer};

/// `--cluster -d 1073741824 -c 50`: over several nodes each connection holds a whole 1 GiB
/// request while it sends it (a redirect sends it again), about 51 GiB in all, more than a
/// test machine has. Refused with status 1 before connecting: the server saw no benchmark
/// connection. (Against one server the value is held once: see the last test.)
#[test]
fn a_value_too_large_for_memory_is_refused_before_connecting() {
    let server = RedisServer::start();
    let before: u64 = server.info_field("stats", "total_connections_received").unwrap().parse().unwrap();
    let port = server.port().to_string();
    let out = respbench().run(
        &["-p", &port, "--cluster", "-t", "set", "-d", "1073741824", "-c", "50", "-n", "10"],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("a request of 1.0 GiB (-d) on -c 50 connections needs about 51.0 GiB of memory"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("each connection holds a whole request"), "{}", out.dump());
    assert!(out.stderr.contains("lower -d or -c"), "{}", out.dump());
    let after: u64 = server.info_field("stats", "total_connections_received").unwrap().parse().unwrap();
    // The INFO reads of this test are connections too: one each, and the startup connection.
    assert!(after - before <= 2, "{before} → {after}: {}", out.dump());
}

extern "C" {
    fn getrusage(who: i32, usage: *mut [i64; 18]) -> i32;
}
const RUSAGE_CHILDREN: i32 = -1;

/// The peak resident size of the children this test process has waited for, in KiB.
fn children_peak_kib() -> i64 {
    let mut usage = [0i64; 18];
    // SAFETY: getrusage fills a struct rusage: two timevals then fourteen longs, ru_maxrss
    // the first of them.
    assert_eq!(unsafe { getrusage(RUSAGE_CHILDREN, &mut usage) }, 0);
    usage[4]
}

/// `-d 1073741824 -t get,ping`: no request carries a value, so none is made (it was 2.1 GB
/// resident, and built again after every test to ask whether `--preload` applied).
#[test]
fn tests_that_carry_no_value_allocate_none() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench().run(
        &["-p", &port, "-t", "get,ping", "-d", "1073741824", "-n", "1000", "-q"],
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(respbench_tests::parse_quiet(&out.stdout).len(), 3, "{}", out.dump());
    let peak = children_peak_kib();
    assert!(peak < 200_000, "respbench peaked at {peak} KiB for requests of a few bytes");
}

/// `-t set -d 100000000 -c 8 -n 8`: every connection sends from the one 100 MB value (it was
/// a copy in the template, one in the payload and one per connection sending: about 1 GB), and
/// the server stored eight such SETs.
#[test]
fn connections_share_one_copy_of_a_large_value() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench().run(
        &["-p", &port, "-t", "set", "-d", "100000000", "-c", "8", "-n", "8", "-q"],
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 8, "{}", out.dump());
    let stored: u64 = server.info_field("memory", "used_memory").unwrap().parse().unwrap();
    assert!(stored > 100_000_000, "the server holds the value: {stored}");
    let peak = children_peak_kib();
    assert!(peak < 250_000, "respbench peaked at {peak} KiB for one 100 MB value on 8 connections");
}

/// `--dataset` with a 100 MB field, `SET key:__field:id__ __field:blob__` at `-c 1` then at
/// `-c 10`, one request per connection: every connection sends from the dataset's one copy of
/// the field, as `-d` does (it was a copy per connection sending: 297 MB at `-c 1`, 2.55 GB at
/// `-c 50`). The peak of both runs is within 1.2 times the first's (the children's peak is the
/// largest child's, so the second run can only raise it above its own).
#[test]
fn connections_share_one_copy_of_a_large_dataset_field() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let path = std::env::temp_dir().join(format!("respbench-memory-{}-big.csv", std::process::id()));
    let mut csv = b"id,blob\n1,".to_vec();
    csv.resize(csv.len() + 100_000_000, b'a');
    csv.push(b'\n');
    std::fs::write(&path, &csv).unwrap();
    drop(csv);
    let run = |clients: &str| {
        let args = ["-p", &port, "-c", clients, "-n", clients, "-q", "--dataset", path.to_str().unwrap()];
        let command = ["--", "SET", "key:__field:id__", "__field:blob__"];
        let out = respbench().run(&[&args[..], &command[..]].concat(), Duration::from_secs(300));
        assert!(out.status.success(), "{}", out.dump());
        children_peak_kib()
    };
    let one = run("1");
    let ten = run("10");
    let _ = std::fs::remove_file(&path);
    assert_eq!(server.command_calls("set"), 11);
    assert_eq!(server.cli(&["STRLEN", "key:1"]), "100000000", "the whole field was stored");
    assert!(one > 100_000, "the field is in memory once at least: {one} KiB");
    assert!(ten * 10 <= one * 12, "-c 1 peaked at {one} KiB, -c 10 at {ten} KiB");
}

/// A file `name` in the temp directory: the line `head`, then `line(i)` for `i` below `count`,
/// written as they are made (a child forked from a test process that held the file would start
/// with its pages in its resident size).
fn streamed_file(name: &str, head: &str, count: u64, line: impl Fn(u64) -> String) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("respbench-{}-{name}", std::process::id()));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(w, "{head}").unwrap();
    for i in 0..count {
        writeln!(w, "{}", line(i)).unwrap();
    }
    w.flush().unwrap();
    path
}

/// `--maxdocs 10` of a 98 MB dataset reads its first rows, not the file: the whole file was
/// read first (over 98 MB resident), now the peak stays under 50 MB (12.6 MB measured).
#[test]
fn maxdocs_reads_no_further_than_its_rows() {
    let server = RedisServer::start();
    let row = "v".repeat(90);
    let path = streamed_file("maxdocs.csv", "id,name", 1_000_000, |i| format!("{i},{row}"));
    let port = server.port().to_string();
    let args = ["-p", &port, "-n", "20", "-q", "--maxdocs", "10", "--dataset", path.to_str().unwrap()];
    let out = respbench().run(
        &[&args[..], &["--", "SET", "key:__field:id__", "__field:name__"]].concat(),
        Duration::from_secs(120),
    );
    let peak = children_peak_kib();
    std::fs::remove_file(&path).unwrap();
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.dbsize(0), 10);
    assert!(peak < 50 * 1024, "peak RSS {peak} KiB reading 10 rows of a 98 MB file");
}

/// A capture of 1,000,000 commands of distinct names (a hostile one: MONITOR shows whatever a
/// client sent) kept a count per name: 193 MB. The names past the first 1,024 are counted
/// together, and the peak stays under 100 MB (53 MB measured, most of it the 16 MiB of
/// commands read ahead and the connection's buffers).
#[test]
fn a_replay_of_a_million_command_names_keeps_its_memory() {
    let server = RedisServer::start();
    let path = streamed_file("names.txt", "OK", 1_000_000, |i| {
        format!("1700000000.{i:06} [0 127.0.0.1:1] \"C{i}\"")
    });
    let port = server.port().to_string();
    let out =
        respbench().run(&["-p", &port, "-q", "--replay", path.to_str().unwrap()], Duration::from_secs(300));
    let peak = children_peak_kib();
    std::fs::remove_file(&path).unwrap();
    // Every command was sent, and answered with an error (the server knows none of them).
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stdout.contains("(other commands): no request succeeded"), "{}", out.dump());
    assert!(out.stderr.contains("1000000 commands from 1 clients"), "{}", out.dump());
    assert_eq!(server.info_field("stats", "total_error_replies").as_deref(), Some("1000000"));
    assert!(peak < 100 * 1024, "peak RSS {peak} KiB replaying a million command names");
}
