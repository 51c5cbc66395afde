//! `--replay FILE` of plain commands (one a line, redis-cli's quoting) against a real
//! redis-server: played in order or at random, with `__rand_int__` filled, each command counted
//! as the server counts it (`INFO commandstats`); hostile files refused with their line numbers.

use std::time::Duration;

use respbench_tests::{json_path, respbench, RedisServer};

const T: Duration = Duration::from_secs(60);

const COMMANDS: &str = "SET k:__rand_int__ v\n# a comment\n\n\"GET\" 'k 1'\r\nINCR counter\n";

/// In order, `-n 300 -c 3`: each connection sends the three lines in turn, so the server runs
/// each command 100 times (the counter ends at 100), and the SETs' keys are `-r 50`'s.
#[test]
fn commands_play_in_order_with_placeholders() {
    let server = RedisServer::start();
    let file = json_path("commands", "in-order").with_extension("txt");
    std::fs::write(&file, COMMANDS).unwrap();
    let port = server.port().to_string();
    let out = respbench()
        .run(&["-p", &port, "--replay", file.to_str().unwrap(), "-n", "300", "-c", "3", "-r", "50", "-q"], T);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    for c in ["set", "get", "incr"] {
        assert_eq!(server.command_calls(c), 100, "{c}: {}", out.dump());
    }
    assert_eq!(server.cli(&["GET", "counter"]).trim(), "100");
    let keys = server.cli(&["KEYS", "k:*"]);
    assert!(keys.lines().count() <= 50 && keys.lines().all(|k| k.len() == "k:000000000000".len()), "{keys}");
}

/// At random (`--replay-order random`), `-n 3000`: every request is one of the lines, drawn
/// uniformly: the server's counts add up to 3000, each line drawn.
#[test]
fn commands_play_at_random() {
    let server = RedisServer::start();
    let file = json_path("commands", "random").with_extension("txt");
    std::fs::write(&file, COMMANDS).unwrap();
    let port = server.port().to_string();
    let out = respbench().run(
        &[
            "-p",
            &port,
            "--replay",
            file.to_str().unwrap(),
            "--replay-order",
            "random",
            "-n",
            "3000",
            "-c",
            "3",
            "-q",
        ],
        T,
    );
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    let counts: Vec<u64> = ["set", "get", "incr"].iter().map(|c| server.command_calls(c)).collect();
    assert_eq!(counts.iter().sum::<u64>(), 3000, "{counts:?}");
    // Each has probability 1/3: fewer than 800 of 3000 is over 7 standard deviations off.
    assert!(counts.iter().all(|&n| n > 800), "{counts:?}");
}

/// A badly quoted line, a huge line, bytes that are not text, a `;` argument and options that
/// are a capture's: refused before connecting, with the line's number, status 1.
#[test]
fn hostile_command_files_are_refused_with_line_numbers() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let mut huge = b"PING\nSET k ".to_vec();
    huge.extend(std::iter::repeat_n(b'x', 1 << 20));
    let cases: [(&[u8], &[&str], &str); 5] = [
        (b"PING\nGET \"a\n", &[], ":2: a quote is not closed"),
        (&huge, &[], ":2: a line of 1048582 bytes, longer than 65536"),
        (b"PING\n\n\xff\n", &[], ":3: not UTF-8 text"),
        (b"GET a ; GET b\n", &[], ":1: a ';' argument"),
        (b"PING\n", &["--speed", "2"], "without recorded times"),
    ];
    // The harness's own PING, which saw the server up.
    let pings = server.command_calls("ping");
    for (i, (text, extra, says)) in cases.iter().enumerate() {
        let file = json_path("commands", &format!("bad{i}")).with_extension("txt");
        std::fs::write(&file, text).unwrap();
        let mut args = vec!["-p", &port, "--replay", file.to_str().unwrap(), "-n", "10", "-q"];
        args.extend_from_slice(extra);
        let out = respbench().run(&args, T);
        assert_eq!(out.status.code(), Some(1), "{}", out.dump());
        assert!(out.stderr.contains(says), "{says}: {}", out.dump());
    }
    assert_eq!(server.command_calls("ping"), pings, "nothing was sent");
}
