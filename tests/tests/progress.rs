//! The progress line (issue #28): on a terminal's stderr, per test, per sweep step and during
//! `--preload`, with the time elapsed, the share done (of `-n` or `--duration`), the time left,
//! the rate and the p99 so far; and nothing of it when stderr is not a terminal. The terminal is
//! a pseudo-terminal that util-linux's `script` (Debian's essential bsdutils) opens.

use std::process::Command;
use std::time::Duration;

use respbench_tests::{respbench, RedisServer};

const T: Duration = Duration::from_secs(60);

/// Runs respbench with `args` under a pseudo-terminal 250 columns wide (stdout and stderr both
/// on it): its exit status and what the terminal showed, each `\r`-redrawn line on a line of its
/// own.
fn on_a_terminal(args: &[&str]) -> (Option<i32>, Vec<String>) {
    // A terminal wide enough for every line (a narrower one cuts them to its width).
    let command = std::iter::once(format!("stty cols 250 rows 50; {}", respbench().path.display()))
        .chain(args.iter().map(|a| format!("'{a}'")))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("timeout")
        .args([&T.as_secs().to_string(), "script", "-qec", &command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines = text.split(['\r', '\n']).map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
    (out.status.code(), lines)
}

/// The progress lines of `title` (`[GET: 41%, ...`).
fn progress_of<'a>(lines: &'a [String], title: &str) -> Vec<&'a String> {
    lines.iter().filter(|l| l.starts_with(&format!("[{title}: "))).collect()
}

/// Checks one progress line's fields: share, elapsed, left, rps, now, p99, what it is of.
fn check_fields(line: &str, of: &str) {
    let (head, tail) = line.split_once("] ").unwrap_or_else(|| panic!("{line}"));
    let fields: Vec<&str> = head.rsplit_once(": ").unwrap().1.split(", ").collect();
    assert_eq!(fields.len(), 3, "{line}");
    let share: u32 = fields[0].strip_suffix('%').unwrap().parse().unwrap();
    assert!(share <= 100, "{line}");
    let elapsed: f64 = fields[1].strip_suffix(" s").unwrap().parse().unwrap();
    assert!(elapsed > 0.0, "{line}");
    assert!(fields[2].ends_with(" s left") || fields[2] == "draining", "{line}");
    let (rps, rest) = tail.split_once(" rps (now ").unwrap_or_else(|| panic!("{line}"));
    rps.parse::<f64>().unwrap();
    let (now, rest) = rest.split_once("), p99 ").unwrap_or_else(|| panic!("{line}"));
    now.parse::<f64>().unwrap();
    let (p99, rest) = rest.split_once(" msec, ").unwrap_or_else(|| panic!("{line}"));
    assert!(p99 == "-" || p99.parse::<f64>().is_ok(), "{line}");
    assert!(rest.ends_with(of), "{line}: not of {of}");
}

/// A sweep of two steps, each a second long: each step's line names it and counts to 1.0 s;
/// the result lines are whole, after the progress was cleared.
#[test]
fn a_terminal_shows_each_steps_progress() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let (code, lines) = on_a_terminal(&["-p", &port, "-t", "get", "-d", "16,64", "--duration", "1s", "-q"]);
    assert_eq!(code, Some(0), "{lines:#?}");
    for step in ["GET (-d 16)", "GET (-d 64)"] {
        let shown = progress_of(&lines, step);
        // A line every 250 ms of a test that lasts a second by construction.
        assert!(!shown.is_empty(), "no progress of {step}: {lines:#?}");
        for l in &shown {
            check_fields(l, "requests of 1.0 s");
        }
        assert!(lines
            .iter()
            .any(|l| l.starts_with(&format!("{step}: ")) && l.contains(" requests per second")));
    }
}

/// `--preload` while the server pauses writes (`CLIENT PAUSE … WRITE`), so that its SETs take
/// a second at least: its own line, counting keys of the `-n` it writes; then the test's.
#[test]
fn a_terminal_shows_the_preloads_progress() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    assert_eq!(server.cli(&["CLIENT", "PAUSE", "1000", "WRITE"]).trim(), "OK");
    let (code, lines) =
        on_a_terminal(&["-p", &port, "-t", "get", "-r", "2000", "-n", "5000", "--preload", "-q"]);
    assert_eq!(code, Some(0), "{lines:#?}");
    let shown = progress_of(&lines, "--preload SET key:__rand_int__");
    assert!(!shown.is_empty(), "no progress of --preload: {lines:#?}");
    for l in &shown {
        check_fields(l, " of 2000 requests");
    }
    assert!(lines.iter().any(|l| l.starts_with("preloaded 2000 keys")), "{lines:#?}");
    assert_eq!(server.command_calls("set"), 2000);
}

/// Not a terminal (the harness's pipes): stderr stays empty, stdout has the results only.
#[test]
fn no_progress_when_stderr_is_not_a_terminal() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-t", "get", "--duration", "1s", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
    assert!(!out.stdout.contains('[') && !out.stdout.contains('\r'), "{}", out.dump());
}

/// An 80-column terminal: every line fits in 79 columns (a wider one would wrap, and each redraw
/// would leave a row behind).
#[test]
fn a_narrow_terminal_gets_lines_that_fit() {
    let server = RedisServer::start();
    let port = server.port().to_string();
    let command = format!(
        "stty cols 80 rows 24; {} -p {port} -t get -d 16,64 --duration 1s -q",
        respbench().path.display()
    );
    let out = Command::new("timeout")
        .args([&T.as_secs().to_string(), "script", "-qec", &command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let shown: Vec<&str> = text.split(['\r', '\n']).filter(|l| l.starts_with("[GET (-d ")).collect();
    assert!(!shown.is_empty(), "{text}");
    assert!(shown.iter().all(|l| l.chars().count() <= 79 && l.ends_with('…')), "{shown:#?}");
}
