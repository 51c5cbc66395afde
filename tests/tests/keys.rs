//! End-to-end checks of `--key-dist`, `--key-prefix` and variable `-d` against a real
//! redis-server (respbench only: redis-benchmark has none of them). Each bound is stated with the
//! figure it comes from; the seeds are fixed, so the runs are reproducible.

use std::time::Duration;

use respbench_tests::{respbench_on, RedisServer};

const T: Duration = Duration::from_secs(30);

/// Runs respbench on `backend` against `server` with `extra` options; asserts it succeeded.
fn run(server: &RedisServer, backend: &str, extra: &[&str]) {
    let port = server.port().to_string();
    let mut args = vec!["-p", port.as_str(), "-q", "--seed", "7"];
    args.extend_from_slice(extra);
    let out = respbench_on(backend).run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
}

/// For every key matching `pattern`, `STRLEN` (`len`) or the integer value (`int`), via one EVAL.
fn per_key(server: &RedisServer, pattern: &str, what: &str) -> Vec<(String, u64)> {
    let value = if what == "len" { "redis.call('STRLEN', k)" } else { "tonumber(redis.call('GET', k))" };
    let script = format!(
        "local r = {{}} for _, k in ipairs(redis.call('KEYS', ARGV[1])) do r[#r+1] = k r[#r+1] = {value} end return r"
    );
    let out = server.cli(&["EVAL", script.as_str(), "0", pattern]);
    let lines: Vec<&str> = out.lines().collect();
    lines
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| (c[0].to_string(), c[1].trim().parse().unwrap_or_else(|_| panic!("{:?}", c[1]))))
        .collect()
}

#[test]
fn zipf_keys_concentrate() {
    {
        // Keys and values are the core's, the same whatever backend: mio.
        let backend = "mio";
        let server = RedisServer::start();
        // 20000 INCRs over 1000 counters. Zipf(0.99): the hottest takes 1 / H(1000, 0.99) = 1/7.73
        // of them, 2588 (sd ~49); uniform draws would give every counter ~20 (max ~35).
        run(&server, backend, &["-t", "incr", "-n", "20000", "-r", "1000", "--key-dist", "zipf:0.99"]);
        let counts = per_key(&server, "counter:*", "int");
        assert_eq!(counts.iter().map(|(_, c)| c).sum::<u64>(), 20_000, "{backend}: every INCR landed");
        let max = counts.iter().map(|(_, c)| *c).max().unwrap();
        assert!((2200..=3000).contains(&max), "{backend}: hottest counter {max}, want ~2588");
        // Scrambled ranks: the hottest key is not key 0.
        let hottest = counts.iter().find(|(_, c)| *c == max).unwrap();
        assert_ne!(hottest.0, "counter:000000000000", "{backend}");

        // 20000 SETs over 100000 keys: zipf touches ~7737 distinct keys, uniform ~18127.
        run(&server, backend, &["-t", "set", "-n", "20000", "-r", "100000", "--key-dist", "zipf:0.99"]);
        let keys = server.cli(&["EVAL", "return #redis.call('KEYS', 'key:*')", "0"]);
        let keys: u64 = keys.trim().parse().unwrap();
        assert!((6500..=9000).contains(&keys), "{backend}: {keys} distinct keys, want ~7737");
    }
}

#[test]
fn sequential_keys_cover_the_keyspace_exactly() {
    let server = RedisServer::start();
    // 7 connections, 1000 INCRs over 500 counters: each exactly twice, whatever the interleaving.
    run(&server, "mio", &["-t", "incr", "-n", "1000", "-c", "7", "-r", "500", "--key-dist", "sequential"]);
    let counts = per_key(&server, "counter:*", "int");
    assert_eq!(counts.len(), 500);
    assert!(counts.iter().all(|(_, c)| *c == 2), "{counts:?}");
}

#[test]
fn gaussian_keys_centre_on_the_middle() {
    let server = RedisServer::start();
    // 20000 INCRs over 600 counters, mean 300, sd 100: 68.3% within [200, 400) (the truncation
    // to [0, 600) makes it 68.5%); sd of that share over 20000 draws is 0.33%.
    run(&server, "mio", &["-t", "incr", "-n", "20000", "-r", "600", "--key-dist", "gaussian"]);
    let counts = per_key(&server, "counter:*", "int");
    let mid: u64 = counts
        .iter()
        .filter(|(k, _)| (200..400).contains(&k["counter:".len()..].parse::<u64>().unwrap()))
        .map(|(_, c)| c)
        .sum();
    assert!((13_300..=14_100).contains(&mid), "{mid} of 20000 within one sd");
}

#[test]
fn value_size_range_and_key_prefix() {
    {
        // Keys and values are the core's, the same whatever backend: mio.
        let backend = "mio";
        let server = RedisServer::start();
        run(
            &server,
            backend,
            &["-t", "set", "-n", "3000", "-r", "1000000", "-d", "16-1024", "--key-prefix", "vt:"],
        );
        let lens = per_key(&server, "*", "len");
        // 3000 draws over 10^6 keys: a handful of collisions at most.
        assert!(lens.len() > 2950, "{backend}: {} keys", lens.len());
        assert!(lens.iter().all(|(k, _)| k.starts_with("vt:key:")), "{backend}: every key has the prefix");
        let sizes: Vec<u64> = lens.iter().map(|(_, l)| *l).collect();
        assert!(sizes.iter().all(|l| (16..=1024).contains(l)), "{backend}: sizes in [16, 1024]");
        // Uniform over 1009 sizes: ~5% of 3000 below 66 and above 974 (150, sd ~12).
        let low = sizes.iter().filter(|&&l| l < 66).count();
        let high = sizes.iter().filter(|&&l| l > 974).count();
        assert!((90..=210).contains(&low) && (90..=210).contains(&high), "{backend}: low {low}, high {high}");
        let distinct: std::collections::HashSet<_> = sizes.iter().collect();
        assert!(distinct.len() > 800, "{backend}: {} distinct sizes", distinct.len());
    }
}

#[test]
fn weighted_value_sizes() {
    let server = RedisServer::start();
    run(&server, "mio", &["-t", "set", "-n", "4000", "-r", "1000000", "-d", "16:3,1024:1"]);
    let lens = per_key(&server, "key:*", "len");
    assert!(lens.iter().all(|(_, l)| *l == 16 || *l == 1024), "only the listed sizes");
    // 75% of 16 bytes; sd of the share over ~4000 keys is 0.7%.
    let small = lens.iter().filter(|(_, l)| *l == 16).count() as f64 / lens.len() as f64;
    assert!((0.72..=0.78).contains(&small), "share of 16-byte values {small}");
    // A value is redis-benchmark's -d payload cut to its size.
    let key = &lens.iter().find(|(_, l)| *l == 16).unwrap().0;
    assert_eq!(server.cli(&["GET", key]), "VXKeHogKgJ=[5V9_");
}

#[test]
fn bad_key_and_size_options_exit_1() {
    for (args, needle) in [
        (&["--key-dist", "zipf:0.99"][..], "needs -r"),
        (&["--key-dist", "pareto", "-r", "10"], "--key-dist"),
        (&["-d", "1024-16"], "-d"),
        (&["-d", "16:0"], "-d"),
    ] {
        let out = respbench_on("mio").run(args, T);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.dump());
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.dump());
    }
}
