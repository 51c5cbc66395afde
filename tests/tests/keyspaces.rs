//! End-to-end checks of `--expiry-range` and of a mix's per-command keys (`--mix
//! 'set:1@seq/10000,get:1@zipf:0.99/10000'`) against a real redis-server. What respbench sent is
//! read from the server's side (MONITOR, `INFO stats`, `INFO commandstats`, `EXISTS`, `TTL`),
//! never from respbench's own report alone. Keys are the core's, the same on every backend: mio.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use respbench_tests::{json_path, respbench, take_document, Monitor, MonitorEntry, RedisServer};

const T: Duration = Duration::from_secs(60);

/// Runs respbench against `server` with `extra`; asserts it succeeded and returns its stdout.
fn run(server: &RedisServer, extra: &[&str]) -> String {
    let port = server.port().to_string();
    let mut args = vec!["-p", port.as_str(), "--seed", "7"];
    args.extend_from_slice(extra);
    let out = respbench().run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    out.stdout
}

/// The number in `key:000000001234`.
fn key_number(arg: &[u8]) -> u64 {
    let s = std::str::from_utf8(arg).unwrap();
    s.strip_prefix("key:").unwrap_or_else(|| panic!("{s}")).parse().unwrap()
}

/// The commands named `name` that MONITOR saw.
fn named<'a>(seen: &'a [MonitorEntry], name: &str) -> Vec<&'a MonitorEntry> {
    seen.iter().filter(|e| e.name() == name).collect()
}

/// `--expiry-range 5-9` on the suite's SET: every SET the server saw is `SET key value EX t`
/// with t uniform over 5..9 (chi-squared, 4 degrees of freedom, below 18.47: p = 0.001), and
/// every key has a TTL of 4 to 9 s by the server's clock; the suite's LPUSH, which cannot carry
/// a time, is sent as it was. `500ms-1500ms` sends PX, uniform over 10 bins of 100 ms (9
/// degrees of freedom, below 27.88).
#[test]
fn expiry_range_gives_each_set_a_uniform_time() {
    let server = RedisServer::start();
    let monitor = Monitor::start(&server);
    run(&server, &["-t", "set,lpush", "-n", "5000", "-r", "1000000", "-q", "--expiry-range", "5-9"]);
    let seen = monitor.finish();
    let sets = named(&seen, "SET");
    assert_eq!(sets.len(), 5000);
    let mut by_time = HashMap::new();
    for s in &sets {
        assert_eq!((s.args.len(), &s.args[3][..]), (5, &b"EX"[..]), "{:?}", s.args);
        let t: u64 = std::str::from_utf8(&s.args[4]).unwrap().parse().unwrap();
        *by_time.entry(t).or_insert(0u64) += 1;
    }
    let chi2: f64 =
        (5..=9).map(|t| (by_time.get(&t).copied().unwrap_or(0) as f64 - 1000.0).powi(2) / 1000.0).sum();
    assert!(by_time.keys().all(|t| (5..=9).contains(t)) && chi2 < 18.47, "{by_time:?}, chi2 {chi2}");
    let lpushes = named(&seen, "LPUSH");
    assert!(lpushes.len() == 5000 && lpushes.iter().all(|e| e.args.len() == 3), "LPUSH carries no time");
    // The server's own view of the times: TTL of every key (rounded to seconds).
    let script = "local h = {} for _, k in ipairs(redis.call('KEYS', 'key:*')) do \
                  local t = redis.call('TTL', k) h[t] = (h[t] or 0) + 1 end \
                  local r = {} for t, n in pairs(h) do r[#r+1] = t r[#r+1] = n end return r";
    let out = server.cli(&["EVAL", script, "0"]);
    let words: Vec<i64> = out.split_whitespace().map(|w| w.parse().unwrap()).collect();
    let ttls: Vec<(i64, i64)> = words.chunks(2).map(|c| (c[0], c[1])).collect();
    assert!(ttls.iter().all(|&(t, _)| (4..=9).contains(&t)), "TTLs {ttls:?}");
    assert_eq!(ttls.iter().map(|(_, n)| n).sum::<i64>() as u64, server.dbsize(0) - 1, "every key but mylist");

    // A custom SET and one in a command sequence carry it too.
    run(&server, &["-n", "100", "-r", "1000", "-q", "--expiry-range", "30", "SET", "c:__rand_int__", "v"]);
    run(
        &server,
        &[
            "-n",
            "100",
            "-r",
            "1000",
            "-q",
            "--expiry-range",
            "40",
            "SET",
            "s:__rand_int__",
            "v",
            ";",
            "GET",
            "x",
        ],
    );
    let ttls = "local r = {} for _, k in ipairs(redis.call('KEYS', ARGV[1])) do \
                r[#r+1] = redis.call('TTL', k) end return r";
    for (pattern, want) in [("c:*", 30), ("s:*", 40)] {
        let out = server.cli(&["EVAL", ttls, "0", pattern]);
        let left: Vec<i64> = out.split_whitespace().map(|w| w.parse().unwrap()).collect();
        // Seconds may pass on a busy machine between the run and the look.
        assert!(left.len() > 10 && left.iter().all(|t| (want - 5..=want).contains(t)), "{pattern}: {left:?}");
    }

    let monitor = Monitor::start(&server);
    run(&server, &["-t", "set", "-n", "5000", "-r", "1000000", "-q", "--expiry-range", "500ms-1500ms"]);
    let seen = monitor.finish();
    let mut bins = [0u64; 11];
    for s in named(&seen, "SET") {
        assert_eq!((s.args.len(), &s.args[3][..]), (5, &b"PX"[..]), "{:?}", s.args);
        let ms: u64 = std::str::from_utf8(&s.args[4]).unwrap().parse().unwrap();
        assert!((500..=1500).contains(&ms), "{ms}");
        bins[((ms - 500) / 100) as usize] += 1;
    }
    // 1001 values: 100 per bin of 100 ms, the last bin (1500) one value.
    let chi2: f64 = bins[..10].iter().map(|&c| (c as f64 - 499.5).powi(2) / 499.5).sum();
    assert!(bins.iter().sum::<u64>() == 5000 && chi2 < 27.88, "{bins:?}, chi2 {chi2}");
}

/// Bad values exit 1 before connecting, naming the option.
#[test]
fn bad_expiry_ranges_and_mix_keys_are_refused() {
    for bad in [
        &["--expiry-range", "0-2"][..],
        &["--expiry-range", "2-1"],
        &["--expiry-range", "1-500ms"],
        &["--mix", "set@zipf:0"],
        &["--mix", "get:1@nope/10"],
        &["--mix", "get@seq/x"],
    ] {
        // Port 1: nothing listens; an option error comes first.
        let mut args = vec!["-p", "1", "-n", "10"];
        args.extend_from_slice(bad);
        let out = respbench().run(&args, T);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {}", out.dump());
        assert!(out.stderr.contains(bad[0]), "{bad:?}: {}", out.dump());
    }
    // An expiry no test can carry is said (on stdout in the verbose report: stderr is for
    // errors).
    let server = RedisServer::start();
    let port = server.port().to_string();
    let out = respbench().run(&["-p", &port, "-n", "10", "-t", "get,lpush", "--expiry-range", "1-2"], T);
    assert!(out.status.success() && out.stdout.contains("nothing carries an expiry"), "{}", out.dump());
    // A command with keys of its own needs a keyspace: /N or -r.
    let out = respbench().run(&["-p", "1", "-n", "10", "--mix", "set:1@seq,get"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(out.stderr.contains("give -r or @DIST/N"), "{}", out.dump());
}

/// `--mix 'set:1@seq/10000,get:1@zipf:0.99/10000'`, 40 000 requests on 10 connections: the
/// SETs went over keys 0 to 9,999 in turn (MONITOR: each key written ⌊S/10000⌋ or ⌈S/10000⌉
/// times, so all 10,000 exist, which EXISTS confirms), and the GETs' keys the server saw follow
/// Zipf(0.99) over 10,000 keys by rank: the share of the k most read keys against
/// H(k, 0.99) / H(10000, 0.99), and a chi-squared over rank bins. A uniform reader would give
/// the top key 0.01% of the reads, not 9.7%.
#[test]
fn mix_commands_draw_their_own_keys() {
    let server = RedisServer::start();
    let monitor = Monitor::start(&server);
    let json = json_path("keyspaces", "zipf");
    let json_s = json.to_str().unwrap();
    run(
        &server,
        &[
            "--mix",
            "set:1@seq/10000,get:1@zipf:0.99/10000",
            "-n",
            "40000",
            "-c",
            "10",
            "-q",
            "--json",
            json_s,
        ],
    );
    let seen = monitor.finish();
    let (sets, gets) = (named(&seen, "SET"), named(&seen, "GET"));
    assert_eq!(sets.len() + gets.len(), 40_000);
    assert!(sets.len() >= 19_000 && gets.len() >= 19_000, "{} SETs, {} GETs", sets.len(), gets.len());
    let mut written = vec![0u64; 10_000];
    for s in &sets {
        written[key_number(&s.args[1]) as usize] += 1;
    }
    let (lo, hi) = (sets.len() as u64 / 10_000, sets.len().div_ceil(10_000) as u64);
    assert!(written.iter().all(|&c| c == lo || c == hi), "sequential: each key {lo} or {hi} times");
    let script = "local n = 0 for i = 0, 9999 do \
                  n = n + redis.call('EXISTS', string.format('key:%012d', i)) end return n";
    assert_eq!(server.cli(&["EVAL", script, "0"]).trim(), "10000", "every key 0 to 9,999 exists");
    assert_eq!(server.dbsize(0), 10_000);

    let mut read: HashMap<u64, u64> = HashMap::new();
    for g in &gets {
        *read.entry(key_number(&g.args[1])).or_insert(0) += 1;
    }
    assert!(read.keys().all(|&k| k < 10_000));
    let mut counts: Vec<u64> = read.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let n = gets.len() as f64;
    let weight = |r: usize| 1.0 / ((r + 1) as f64).powf(0.99);
    let h: f64 = (0..10_000).map(weight).sum();
    // The share of the k most read keys: within 2.5 points of Zipf's (the top key's share has
    // a standard deviation of 0.2 points over 20,000 reads).
    // (Not beyond: ranks read a few times each are no longer ordered by their counts, and
    // sorting them makes the top 1,000 look 2 points hotter than Zipf.)
    for k in [1usize, 10, 100] {
        let want = (0..k).map(weight).sum::<f64>() / h;
        let got = counts.iter().take(k).sum::<u64>() as f64 / n;
        assert!((got - want).abs() < 0.025, "top {k} keys: {got:.4} of the reads, Zipf {want:.4}");
        eprintln!("top {k} keys: {got:.4} of the reads, Zipf {want:.4}");
    }
    // Chi-squared over rank bins 1, 2, 3-4, …, 65-128 (8 bins, 7 degrees of freedom: 24.32 at
    // p = 0.001), where every rank is read often enough that sorting by count keeps the ranks.
    let mut chi2 = 0.0;
    for b in 0..8 {
        let (from, to) = (if b == 0 { 0 } else { 1 << (b - 1) }, 1usize << b);
        let want = n * (from..to).map(weight).sum::<f64>() / h;
        let got = counts[from..to].iter().sum::<u64>() as f64;
        chi2 += (got - want).powi(2) / want;
    }
    assert!(chi2 < 24.32, "chi2 {chi2} over the top 128 ranks");
    eprintln!(
        "chi2 {chi2:.2} over the top 128 ranks; {} SETs, {} GETs over {} keys",
        sets.len(),
        gets.len(),
        read.len()
    );

    // The report names each command's keys; nothing was nil (every key was written... or not
    // yet: the GETs' nil replies are the server's keyspace misses, exactly).
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let tests = doc["tests"].as_array().unwrap();
    let names: Vec<&str> = tests.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["SET (mix 1/2)", "GET (mix 1/2)", "MIX (set:1@sequential/10000,get:1@zipf:0.99/10000)"]
    );
    let mix = &doc["config"]["mix"];
    assert_eq!(
        (mix[0]["keys"].as_str(), mix[1]["keys"].as_str()),
        (Some("sequential/10000"), Some("zipf:0.99/10000"))
    );
    let misses: u64 = server.info_field("stats", "keyspace_misses").unwrap().parse().unwrap();
    assert_eq!(tests[1]["nil_replies"].as_u64(), Some(misses), "{:?}", tests[1]);
}

/// The number in `INFO stats`'s `field`.
fn stat(server: &RedisServer, field: &str) -> u64 {
    server.info_field("stats", field).unwrap().parse().unwrap()
}

/// `--expiry-range 1-2` over a 10 s run: `--mix 'set:2@seq/10000,get:1@seq/10000' --rps 1500`
/// writes about 1,000 keys a second, each once, and reads key i at about twice the time it was
/// written, so reads after 2 s find some keys expired and after 4 s all. The test samples the
/// server's `cmdstat_set` calls every 50 ms; after the run one EVAL touches every key (lazy
/// expiry), and `expired_keys` is then at least the SETs more than 2 s before that EVAL and at
/// most those more than 1 s before. The report's nil replies are the server's keyspace misses
/// exactly; its expired misses are those but the few GETs drawn right after their key's SET,
/// and at most `expired_keys` (each read its own key, which had expired).
#[test]
fn expired_reads_over_a_ten_second_run() {
    let server = RedisServer::start();
    let json = json_path("keyspaces", "expiry");
    let port = server.port().to_string();
    let args = [
        "-p",
        port.as_str(),
        "--mix",
        "set:2@seq/10000,get:1@seq/10000",
        "--rps",
        "1500",
        "--duration",
        "10",
        "--warmup",
        "0",
        "-c",
        "10",
        "--expiry-range",
        "1-2",
        "--json",
        json.to_str().unwrap(),
    ];
    let expired_before = stat(&server, "expired_keys");
    let running = respbench().spawn(&args);
    let mut samples: Vec<(Instant, u64)> = Vec::new();
    let mut running = Some(running);
    let mut output = None;
    while output.is_none() {
        samples.push((Instant::now(), server.command_calls("set")));
        let r = running.as_mut().unwrap();
        if r.has_exited() {
            output = Some(running.take().unwrap().wait(T));
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let out = output.unwrap();
    assert!(out.status.success(), "{}", out.dump());
    // Before the sweep: its EXISTS of expired keys are misses too.
    let misses = stat(&server, "keyspace_misses");
    let sweep = Instant::now();
    let script = "local n = 0 for i = 0, 9999 do \
                  n = n + redis.call('EXISTS', string.format('key:%012d', i)) end return n";
    let live: u64 = server.cli(&["EVAL", script, "0"]).trim().parse().unwrap();
    let expired = stat(&server, "expired_keys") - expired_before;
    let calls_at = |t: Instant| samples.iter().rev().find(|(at, _)| *at <= t).map_or(0, |s| s.1);
    let sets = server.command_calls("set");
    let (before_2s, before_1s) =
        (calls_at(sweep - Duration::from_secs(2)), calls_at(sweep - Duration::from_secs(1)));
    // Sampling lags up to 50 ms and a redis-cli call: 100 SETs' slack each way.
    assert!(
        expired + 100 >= before_2s && expired <= before_1s + 100,
        "expired_keys rose by {expired}: want from {before_2s} (SETs more than 2 s before) to {before_1s} \
         (more than 1 s); {sets} SETs, {live} keys live\n{}",
        out.dump()
    );
    assert!(before_2s >= 3000, "the run wrote too little to judge: {before_2s} SETs more than 2 s before");

    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let tests = doc["tests"].as_array().unwrap();
    assert_eq!(doc["config"]["expiry_range"].as_str(), Some("1-2"));
    let get = &tests[1];
    assert_eq!(get["name"].as_str(), Some("GET (mix 1/3)"));
    let nil = get["nil_replies"].as_u64().unwrap();
    let expired_reads = get["expired_misses"].as_u64().unwrap_or(0);
    let reads = get["requests"].as_u64().unwrap();
    assert_eq!(nil, misses, "the report's nil replies are the server's keyspace misses");
    // Every GET but the first few read a key the SETs had written: a GET drawn within 10
    // draws (-c 10 × -P 1) of its key's SET is not counted, and at the start such a GET can
    // overtake the SET and miss a key not yet written. The mix draws at random, 2 SETs to a
    // GET, so the SETs' lead passes 10 after some 30 draws, with a few GETs more or fewer than
    // 10 among them (CI, over a cluster of 6 clients: 7 where 6 in flight): 3 × 10 at most.
    assert!(
        expired_reads <= nil && nil - expired_reads <= 30,
        "{expired_reads} expired of {nil} nil replies"
    );
    assert_eq!(tests[2]["expired_misses"].as_u64(), Some(expired_reads), "the mix's total");
    assert!(expired_reads <= expired, "{expired_reads} expired reads, {expired} keys expired");
    // Reads of keys at least 2 s old (after 4 s, 60% of the reads) all miss, a half of those
    // 1 to 2 s old: about 70% of the reads; a busy machine shifts it a little.
    let share = expired_reads as f64 / reads as f64;
    assert!((0.45..0.9).contains(&share), "{expired_reads} of {reads} reads expired");
    assert!(out.stdout.contains("expired: "), "{}", out.dump());
    eprintln!(
        "SETs {sets} (more than 2 s before the sweep {before_2s}, more than 1 s {before_1s}); expired_keys +{expired}; \
         GETs {reads}, nil {nil} = keyspace_misses {misses}, expired misses {expired_reads}; live keys {live}"
    );
}

/// Over a cluster (requests routed by slot, the written flag carried by the router's request):
/// `--expiry-range 1`, `set:2@seq/1000,get:1@seq/1000` at 300 requests a second for 6 s, so
/// GETs after 2 s read keys older than their 1 s (GET number k at k/100 s reads the key SET at
/// k/200 s). The rate is a third of what three primaries and the client can serve on a busy
/// machine: at 900/s beside two CPU hogs 29 requests were never sent (#56 item 18). The nil replies are the primaries' keyspace
/// misses together, and the expired misses all of them but the few GETs drawn right after
/// their key's SET (6 clients × `-P 1` in flight, at the start of the run).
#[test]
fn expired_reads_over_a_cluster() {
    let cluster = respbench_tests::cluster::Cluster::start(3, 0);
    let primaries = cluster.primary_ports();
    let json = json_path("keyspaces", "cluster");
    let port = primaries[0].to_string();
    let args = [
        "-p",
        port.as_str(),
        "--cluster",
        "--mix",
        "set:2@seq/1000,get:1@seq/1000",
        "--rps",
        "300",
        "--duration",
        "6",
        "--warmup",
        "0",
        "-c",
        "6",
        "--expiry-range",
        "1",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ];
    let out = respbench().run(&args, T);
    assert!(out.status.success(), "{}", out.dump());
    let misses: u64 = primaries.iter().map(|&p| stat(cluster.node(p), "keyspace_misses")).sum();
    let doc: serde_json::Value = serde_json::from_str(&take_document(&json)).unwrap();
    let get = &doc["tests"].as_array().unwrap()[1];
    let nil = get["nil_replies"].as_u64().unwrap();
    let expired_reads = get["expired_misses"].as_u64().unwrap_or(0);
    let reads = get["requests"].as_u64().unwrap();
    assert_eq!(nil, misses, "the report's nil replies are the primaries' keyspace misses");
    // As on one server (above): 3 × the 6 requests in flight at most (CI: 7).
    assert!(
        expired_reads <= nil && nil - expired_reads <= 18,
        "{expired_reads} expired of {nil} nil replies"
    );
    // After 2 s every read is of a key more than 1 s old: about 2/3 of the reads.
    assert!(expired_reads as f64 > 0.4 * reads as f64, "{expired_reads} of {reads} reads expired");
    eprintln!("cluster: GETs {reads}, nil {nil} = keyspace_misses {misses}, expired misses {expired_reads}");
}
