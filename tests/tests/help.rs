//! The command line as a person meets it (issue #28): a one-screen `--help` with the options
//! in groups, examples and the subcommands; argh's every-option list behind `--help-all`;
//! `--opt=value` for every long option, never inside a command's own arguments; and errors for
//! the commonest mistakes that say the fix.

use std::time::Duration;

use respbench_tests::{free_port, respbench, RedisServer};

const T: Duration = Duration::from_secs(30);

#[test]
fn help_is_one_screen_of_groups_examples_and_subcommands() {
    let out = respbench().run(&["--help"], T);
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines.len() <= 50, "{} lines:\n{}", lines.len(), out.stdout);
    for group in
        ["Connection", "Workload", "Load shape", "Output", "Cluster / TLS", "Multi-machine", "Examples"]
    {
        assert!(lines.iter().any(|l| l.starts_with(group)), "{group} missing:\n{}", out.stdout);
    }
    let subcommands = ["respbench plot ", "respbench merge ", "respbench compare ", "respbench capture "];
    for shown in subcommands.into_iter().chain(["--rps", "--slo", "-d 16,128,1024", "--help-all"]) {
        assert!(out.stdout.contains(shown), "{shown} missing:\n{}", out.stdout);
    }
    assert_eq!(out.stderr, "", "{}", out.dump());
    // Every option, with its meaning, is argh's list.
    let all = respbench().run(&["--help-all"], T);
    assert_eq!(all.status.code(), Some(0), "{}", all.dump());
    for option in ["--tls-ciphersuites", "--num-keys-in-fcall", "--uring-sqpoll", "--drain-grace"] {
        assert!(all.stdout.contains(option), "{option} missing:\n{}", all.stdout);
    }
    // The options before --help are still checked.
    let out = respbench().run(&["-n", "5", "--bogus", "--help"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--bogus"), "{}", out.dump());
}

/// `--pipeline=16 --requests=2000` is `--pipeline 16 --requests 2000` (memtier's form); a `=` in
/// a value, and a custom command's arguments, are left as they are.
#[test]
fn opt_equals_value_is_an_option_and_a_commands_arguments_are_untouched() {
    let server = RedisServer::start();
    let port = format!("--port={}", server.port());
    let out = respbench().run(&[&port, "--pipeline=16", "--requests=2000", "-t", "set", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.command_calls("set"), 2000, "{}", out.dump());
    // The key prefix is `a=b:` (split at the first `=` only).
    let out = respbench().run(&[&port, "-n", "10", "--key-prefix=a=b:", "-t", "set", "-q"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.cli(&["EXISTS", "a=b:key:__rand_int__"]).trim(), "1", "{}", out.dump());
    // The command's own arguments stay whole, also those that look like options.
    let out = respbench().run(&[&port, "-n", "3", "-q", "set", "k=v", "--pipeline=4"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.cli(&["GET", "k=v"]).trim(), "--pipeline=4", "{}", out.dump());
    let out = respbench().run(&[&port, "-n", "3", "-q", "--", "set", "--rps=1", "x"], T);
    assert!(out.status.success(), "{}", out.dump());
    assert_eq!(server.cli(&["GET", "--rps=1"]).trim(), "x", "{}", out.dump());
    // A switch takes no value: argh says so.
    let out = respbench().run(&["--tls=yes"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("--tls=yes"), "{}", out.dump());
}

/// The three mistakes redis-benchmark users make first: another tool's option spelling (or a
/// typo), a `-t` name that is no test, and no server where respbench looks.
#[test]
fn the_commonest_mistakes_say_the_fix() {
    for (args, says) in [
        (&["--server", "10.0.0.5"][..], "respbench spells --server as -h HOST"),
        (&["--test-time=30"], "--duration"),
        (&["--ratio", "1:10"], "--mix set:1,get:10 (memtier's --ratio 1:10 is SET:GET); or run the memtier_benchmark line unchanged: respbench memtier ARGS..."),
        (&["--pipline", "16"], "did you mean --pipeline?"),
    ] {
        let out = respbench().run(args, T);
        assert_eq!(out.status.code(), Some(1), "{args:?}\n{}", out.dump());
        assert!(out.stderr.contains(says), "{args:?} should say {says}\n{}", out.dump());
        assert!(out.stderr.contains("Run 'respbench --help' for the options."), "{}", out.dump());
    }
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-n", "10", "-t", "gte,lrange100,hget"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("did you mean get for gte, lrange_100 for lrange100?"), "{}", out.dump());
    assert!(out.stderr.contains("hget is not a test of the suite"), "{}", out.dump());
    assert!(out.stderr.contains("respbench -n 100000 HGET key:__rand_int__"), "{}", out.dump());
    assert_eq!(server.command_calls("set") + server.command_calls("get"), 0);
    // Nothing listens: where it looked, and how to point it elsewhere.
    let port = free_port().to_string();
    let out = respbench().run(&["-p", &port, "-n", "10", "-q"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    let at = format!("127.0.0.1:{port}");
    assert!(
        out.stderr.contains(&format!("Could not connect to Redis at {at}: Connection refused")),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains(&format!("Nothing accepts connections at {at}")), "{}", out.dump());
    assert!(out.stderr.contains("-h HOST -p PORT"), "{}", out.dump());
}
