//! Issue 23, scripts and harnesses written for redis-benchmark and valkey-benchmark run
//! respbench unchanged: stderr is for errors, the exit status and the words their callers
//! check. The behaviours are the command line's and the session's: once, on mio.

use std::time::Duration;

use respbench_tests::{json_path, parse_quiet, take_document, RedisServer, Tool};

const T: Duration = Duration::from_secs(60);

respbench_tests::backend_tests!(
    every: [],
    mio: [a_harness_that_fails_on_stderr_runs_the_default_suite],
);

fn read(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&take_document(path)).unwrap()
}

/// Tcl's `exec` fails on any stderr output: the default suite (whose SPOP pops the one member
/// its SADD wrote, as redis-benchmark's does) writes nothing there, in each format, and its
/// `-q` lines keep redis-benchmark's shape.
fn a_harness_that_fails_on_stderr_runs_the_default_suite(tool: Tool) {
    let server = RedisServer::start();
    let port = server.port().to_string();
    for format in [&["-q"][..], &["--csv"], &[]] {
        let json = json_path("dropin", "suite");
        let args =
            [&["-p", &port, "-c", "10", "-n", "100", "--json", json.to_str().unwrap()][..], format].concat();
        let out = tool.run(&args, T);
        assert!(out.status.success(), "{}", out.dump());
        assert_eq!(out.stderr, "", "{}", out.dump());
        let doc = read(&json);
        assert_eq!(doc["tests"].as_array().unwrap().len(), 21, "{doc}");
        // The suite's own pops are no finding anywhere.
        assert!(doc["tests"].as_array().unwrap().iter().all(|t| t.get("warnings").is_none()), "{doc}");
        if format == ["-q"] {
            let lines = parse_quiet(&out.stdout);
            assert_eq!(lines.len(), 21, "{}", out.dump());
            assert!(out.stdout.contains("SPOP: "), "{}", out.dump());
        }
    }
}
