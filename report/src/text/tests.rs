//! The text reports' tests: literal results in, exact lines out.

use super::*;
use respbench_core::Time;

/// Stats over `values` (microseconds), one second long.
fn stats(values: impl IntoIterator<Item = u64>) -> Stats {
    let mut s = Stats::new(Time::ZERO, 3, false).unwrap();
    for v in values {
        s.record(v * 1000, 0, Time::from_micros(1_000_000));
    }
    s
}

#[test]
fn workload_lines_only_for_what_redis_benchmark_lacks() {
    use respbench_core::dist::{KeyDist, ValueSize};
    assert!(workload_lines(&ValueSize::Fixed(3), KeyDist::Uniform, Some(10), "").is_empty());
    assert_eq!(
        workload_lines(&ValueSize::Range { lo: 16, hi: 1024 }, KeyDist::Zipf(0.99), Some(1000), "b:"),
        ["value sizes: 16-1024 bytes", "keys: zipf:0.99 over 1000", "key prefix: b:"]
    );
    let s = stats([100]);
    let mut r = report("SET", &s);
    r.workload = vec!["value sizes: 16:3,1024:1 bytes".into()];
    let mut out = Vec::new();
    write_verbose(&r, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("  3 bytes payload\n  value sizes: 16:3,1024:1 bytes\n  keep alive: 1\n"),
        "{text}"
    );
}

fn report<'a>(title: &'a str, s: &'a Stats) -> TestReport<'a> {
    TestReport {
        title,
        stats: s,
        percentiles: &[],
        cpu: None,
        verdict: None,
        clients: 50,
        never_ran: (0, 0),
        payload_bytes: 3,
        workload: Vec::new(),
        keepalive: true,
        threads: 0,
        server_save: Some(""),
        server_appendonly: Some("no"),
        backend_note: None,
        nodes: &[],
    }
}

fn verbose(r: &TestReport) -> String {
    let mut out = Vec::new();
    write_verbose(r, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The lines of the section that starts with `header`, up to the next blank line.
fn section<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    text.lines().skip_while(|l| *l != header).skip(1).take_while(|l| !l.is_empty()).collect()
}

/// (percentile, ms, cumulative count) of a distribution line.
fn parse(line: &str) -> (f64, f64, u64) {
    let (pct, rest) = line.split_once("% <= ").unwrap();
    let (ms, rest) = rest.split_once(" milliseconds (cumulative count ").unwrap();
    (pct.parse().unwrap(), ms.parse().unwrap(), rest.trim_end_matches(')').parse().unwrap())
}

// The expected texts below were checked byte for byte against libhdr_histogram's C
// iterators (redis deps/hdr_histogram) driven by redis-benchmark's printing loops, for a
// histogram with the same bounds and values.
#[test]
fn verbose_report_for_one_to_a_thousand() {
    let s = stats(1..=1000);
    let expected = "\
====== GET ======
  1000 requests completed in 1.00 seconds
  50 parallel clients
  3 bytes payload
  keep alive: 1
  host configuration \"save\": 
  host configuration \"appendonly\": no
  multi-thread: no

Latency by percentile distribution:
0.000% <= 0.001 milliseconds (cumulative count 1)
50.000% <= 0.500 milliseconds (cumulative count 500)
75.000% <= 0.750 milliseconds (cumulative count 750)
87.500% <= 0.875 milliseconds (cumulative count 875)
93.750% <= 0.938 milliseconds (cumulative count 938)
96.875% <= 0.969 milliseconds (cumulative count 969)
98.438% <= 0.985 milliseconds (cumulative count 985)
99.219% <= 0.993 milliseconds (cumulative count 993)
99.609% <= 0.997 milliseconds (cumulative count 997)
99.805% <= 0.999 milliseconds (cumulative count 999)
99.902% <= 1.000 milliseconds (cumulative count 1000)
100.000% <= 1.000 milliseconds (cumulative count 1000)

Cumulative distribution of latencies:
10.000% <= 0.100 milliseconds (cumulative count 100)
20.000% <= 0.200 milliseconds (cumulative count 200)
30.000% <= 0.300 milliseconds (cumulative count 300)
40.000% <= 0.400 milliseconds (cumulative count 400)
50.000% <= 0.500 milliseconds (cumulative count 500)
60.000% <= 0.600 milliseconds (cumulative count 600)
70.000% <= 0.700 milliseconds (cumulative count 700)
80.000% <= 0.800 milliseconds (cumulative count 800)
90.000% <= 0.900 milliseconds (cumulative count 900)
100.000% <= 1.000 milliseconds (cumulative count 1000)

Summary:
  throughput summary: 1000.00 requests per second
  latency summary (msec):
          avg       min       p50       p95       p99       max
        0.500     0.001     0.500     0.950     0.990     1.000
  hits: 100.0% (0 nil replies: keys that did not exist)
";
    assert_eq!(verbose(&report("GET", &s)), expected);
}

#[test]
fn distributions_are_monotonic_and_end_at_the_total() {
    // A skewed set: most values under a millisecond, a tail to 40 ms.
    let values = (0..5000u64).map(|i| 50 + (i * i * 7919) % 900).chain((0..60).map(|i| 1500 + i * 650));
    let s = stats(values);
    let total = s.requests;
    let text = verbose(&report("GET", &s));
    for header in ["Latency by percentile distribution:", "Cumulative distribution of latencies:"] {
        let lines: Vec<_> = section(&text, header).into_iter().map(parse).collect();
        assert!(lines.len() > 3, "{header}");
        for w in lines.windows(2) {
            assert!(w[0].0 <= w[1].0 && w[0].1 <= w[1].1 && w[0].2 <= w[1].2, "{header}: {w:?}");
        }
        let last = lines.last().unwrap();
        assert_eq!((last.0, last.2), (100.0, total), "{header}");
    }
    // After the first step above 2 ms and the one following it, levels are whole
    // milliseconds apart; the values shown are bucket ends, a few µs past the level.
    let cumulative: Vec<_> =
        section(&text, "Cumulative distribution of latencies:").into_iter().map(parse).collect();
    let first_above = cumulative.iter().position(|l| l.1 > 2.0).unwrap();
    for w in cumulative[first_above + 1..].windows(2) {
        let gap = ((w[1].1 - w[0].1) * 1000.0).round() as u64;
        assert!(gap >= 950 && (gap + 50) % 1000 < 100, "{w:?}");
    }
    // The sections are separated by single blank lines and the report ends with the summary.
    assert!(text.contains("  multi-thread: no\n\nLatency by percentile distribution:\n0.000% <= "));
    assert!(text.contains(" milliseconds (cumulative count 5060)\n\nCumulative distribution of latencies:\n"));
    assert!(text.contains(" milliseconds (cumulative count 5060)\n\nSummary:\n  throughput summary: "));
    assert!(text.ends_with("\n") && !text.ends_with("\n\n"));
    // The summary table's last row, then respbench's own lines (hits).
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[lines.len() - 2].len(), 4 + 6 * 9 + 5);
    assert_eq!(lines[lines.len() - 1], "  hits: 100.0% (0 nil replies: keys that did not exist)");
}

#[test]
fn header_variants() {
    let s = stats([1]);
    let mut r = report("PING_INLINE", &s);
    r.threads = 4;
    r.keepalive = false;
    r.server_save = None;
    let text = verbose(&r);
    assert!(text.starts_with(
            "====== PING_INLINE ======\n  1 requests completed in 1.00 seconds\n  50 parallel clients\n  3 bytes payload\n  keep alive: 0\n  multi-thread: yes\n  threads: 4\n\n"
        ));
    r.threads = 0;
    r.server_save = Some("3600 1 300 100 60 10000");
    r.server_appendonly = None;
    assert!(verbose(&r).contains(
            "  host configuration \"save\": 3600 1 300 100 60 10000\n  host configuration \"appendonly\": \n  multi-thread: no\n\n"
        ));
}

/// `--print-percentiles`: the -q line and the summary's columns show the chosen ones, named
/// as memtier names them, with the values of the C rule the rest of the report uses.
#[test]
fn chosen_percentiles() {
    let names: Vec<String> =
        [50.0, 99.0, 99.9, 99.99, 99.999, 0.5].iter().map(|p| percentile_name(*p)).collect();
    assert_eq!(names, ["p50", "p99", "p99.9", "p99.99", "p99.999", "p0.5"]);
    let s = stats((1..=10_000).map(|v| v * 10));
    let mut r = report("GET", &s);
    let chosen = [50.0, 99.9, 99.99];
    r.percentiles = &chosen;
    let mut out = Vec::new();
    write_quiet(&r.line(), &mut out).unwrap();
    let at = |p: f64| ms(value_at_percentile(&s.latency, p));
    let want = format!(
        "GET: {:.2} requests per second, p50={:.3} msec, p99.9={:.3} msec, p99.99={:.3} msec\n",
        s.rps(),
        at(50.0),
        at(99.9),
        at(99.99)
    );
    assert_eq!(String::from_utf8(out).unwrap(), want);
    assert!(at(99.99) > at(99.9) && at(99.9) > at(50.0));
    let text = verbose(&r);
    let head =
        format!("    {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "avg", "min", "p50", "p99.9", "p99.99", "max");
    assert!(text.contains(&head), "{text}");
    assert!(text.contains(&format!(" {:9.3} {:9.3} ", at(99.9), at(99.99))), "{text}");
}

#[test]
fn quiet_and_csv_rows() {
    let s = stats(1..=1000);
    let r = report("GET", &s);
    let mut out = Vec::new();
    write_quiet(&r.line(), &mut out).unwrap();
    assert_eq!(out, b"GET: 1000.00 requests per second, p50=0.500 msec\n");
    let mut out = Vec::new();
    write_csv_row(&report("MSET (10 keys) \"x\"", &s).line(), None, None, &mut out).unwrap();
    assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"MSET (10 keys) \"\"x\"\"\",\"1000.00\",\"0.500\",\"0.001\",\"0.500\",\"0.950\",\"0.990\",\"1.000\",\"0\",\"0\",\"0\",\"\"\n"
        );
    assert_eq!(CSV_HEADER.split(',').count(), 8);
}

fn verdict(side: Side) -> Verdict {
    Verdict { side, text: String::new(), machine: None, client_wait: None }
}

#[test]
fn quiet_and_csv_carry_a_verdict_that_is_not_the_server() {
    let s = stats(1..=1000);
    let line = |side: Option<Side>, partial: Option<&str>| {
        let v = side.map(verdict);
        let mut r = report("GET", &s);
        r.verdict = v.as_ref();
        let mut out = Vec::new();
        write_quiet_marked(&r.line(), partial, &mut out).unwrap();
        let mut csv = Vec::new();
        write_csv_row(&r.line(), None, None, &mut csv).unwrap();
        (String::from_utf8(out).unwrap(), String::from_utf8(csv).unwrap())
    };
    // The server limited it: redis-benchmark's line exactly; CSV names it.
    let (q, c) = line(Some(Side::Server), None);
    assert_eq!(q, "GET: 1000.00 requests per second, p50=0.500 msec\n");
    assert!(c.ends_with(",\"0\",\"0\",\"0\",\"server\"\n"), "{c}");
    let (q, c) = line(Some(Side::Machine), None);
    assert_eq!(q, "GET: 1000.00 requests per second, p50=0.500 msec, bottleneck: machine\n");
    assert!(c.ends_with(",\"machine\"\n"), "{c}");
    let (q, _) = line(Some(Side::Client), Some("interrupted after 1000 of 100000 requests"));
    assert_eq!(
        q,
        "GET: 1000.00 requests per second, p50=0.500 msec, bottleneck: client, partial: interrupted after \
             1000 of 100000 requests\n"
    );
    assert_eq!(CSV_ACCOUNT_COLUMNS, ",\"errors\",\"abandoned\",\"unsent\",\"bottleneck\"");
}

#[test]
fn side_by_side_csv_keeps_the_peers_columns_and_ends_with_verdict_and_backend() {
    let e = TestResult {
        backend: Some("smol".into()),
        verdict: Some(verdict(Side::Neither)),
        ..TestResult::new("GET".into(), String::new(), stats(1..=1000))
    };
    let mut out = Vec::new();
    write_compare_header(true, &["smol"], 3, &mut out).unwrap();
    write_compare_row(true, &[&e], 3, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(CSV_HEADER), "{text}");
    assert!(lines[0].ends_with(",\"cpu_us_per_request\",\"cpu_core_share\",\"bottleneck\",\"backend\""));
    assert!(lines[1].starts_with("\"GET\",\"1000.00\",\"0.500\","), "{text}");
    assert!(lines[1].ends_with(",\"neither\",\"smol\""), "{text}");
    assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
}

#[test]
fn hits_are_said_for_reads_only() {
    let s = stats(1..=10);
    for (title, shown) in
        [("GET", true), ("LRANGE_100 (first 100 elements)", true), ("SET", false), ("PING_MBULK", false)]
    {
        assert_eq!(verbose(&report(title, &s)).contains("  hits: "), shown, "{title}");
    }
    assert!(reads("hget h f") && reads("GET (-d 16)") && !reads("script load x") && !reads("MSET (10 keys)"));
    // A write that replied nil (SET NX on a key that exists) is said.
    let mut s = stats(1..=10);
    s.nils = 4;
    assert!(verbose(&report("SET", &s)).contains("  hits: 60.0% (4 nil replies"));
}

#[test]
fn an_open_loop_distribution_stays_a_few_dozen_lines() {
    // Corrected latencies from 100 µs to 3 s (a backlog): 1 ms rows would be thousands.
    let mut s = Stats::new(Time::ZERO, 3, true).unwrap();
    for i in 0..30_000u64 {
        s.record((100 + i * 100) * 1000, 100_000, Time::from_micros(1_000_000));
    }
    let text = verbose(&report("GET", &s));
    let header = text.lines().find(|l| l.starts_with("Cumulative distribution of latencies")).unwrap();
    assert!(header.contains("a row where the latency has doubled or 5% more"), "{header}");
    let rows: Vec<_> = section(&text, header).into_iter().map(parse).collect();
    assert!(rows.len() <= OPEN_LOOP_FINE_ROWS + 20 + 12, "{} rows", rows.len());
    assert_eq!(rows.last().map(|r| (r.0, r.2)), Some((100.0, 30_000)));
    for w in rows.windows(2) {
        assert!(w[0].1 < w[1].1 && w[0].2 < w[1].2, "{w:?}");
    }
    for w in rows[OPEN_LOOP_FINE_ROWS..rows.len() - 1].windows(2) {
        assert!(w[1].1 >= 2.0 * w[0].1 * 0.999 || w[1].2 - w[0].2 >= 30_000 / 20, "{w:?}");
    }
    // A closed loop keeps redis-benchmark's rows, however many.
    let mut c = stats([]);
    for i in 0..3000u64 {
        c.record((100 + i * 1000) * 1000, 0, Time::from_micros(1_000_000));
    }
    let text = verbose(&report("GET", &c));
    assert!(section(&text, "Cumulative distribution of latencies:").len() > 1000);
}

#[test]
fn sweep_table_units_and_no_threads_zero() {
    let mut rows = Vec::new();
    for run in 0..2 {
        rows.push(TestResult {
            step: Some(StepValues { datasize: "3".into(), clients: 50, pipeline: 1, threads: 0, run }),
            ..TestResult::new("GET".into(), String::new(), stats(1..=100))
        });
    }
    let mut out = Vec::new();
    write_sweep_table(&rows, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(" p99 msec p99.9 msec "), "{text}");
    assert!(text.contains("mean of 2 runs at -d 3 -c 50 -P 1: "), "{text}");
    assert!(!text.contains("threads 0"), "{text}");
    let row = text.lines().nth(2).unwrap();
    assert_eq!(row.split_whitespace().nth(3), Some("-"), "{text}");
}

#[test]
fn summary_uses_bucket_equivalents_like_c() {
    // 2049 µs falls in a two-wide bucket [2048, 2049]: min is its lowest equivalent, max and
    // percentiles its highest, the mean its median (checked against hdr_mean and friends).
    let s = stats([2049, 2049, 5001]);
    let mut out = Vec::new();
    write_csv_row(&report("X", &s).line(), None, None, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "\"X\",\"3.00\",\"3.033\",\"2.048\",\"2.049\",\"5.003\",\"5.003\",\"5.003\",\"0\",\"0\",\"0\",\"\"\n"
    );
}

/// A test in which nothing succeeded prints no rate, hit ratio or latency in any format
/// (issue #35), and no NaN: golden lines for a test with no reply and one of error replies.
#[test]
fn no_success_prints_no_figures() {
    let mut s = Stats::new(Time::ZERO, 3, false).unwrap();
    // A test that asked for nothing (`-n 0`) failed at nothing: its zeros stay.
    assert!(!none_succeeded(&s));
    s.failed_clients = 1;
    let r = report("GET", &s);
    let text = verbose(&r);
    assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    assert!(
        text.starts_with("====== GET ======\n  no request succeeded: no reply in 0.00 seconds\n"),
        "{text}"
    );
    for figure in ["throughput", "Latency by percentile", "hits:", "latency summary"] {
        assert!(!text.contains(figure), "{figure}: {text}");
    }
    let mut out = Vec::new();
    write_quiet(&r.line(), &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "GET: no request succeeded: no reply in 0.00 seconds\n");
    let mut out = Vec::new();
    write_csv_row(&r.line(), None, None, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "\"GET\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"0\",\"0\",\"0\",\"\"\n"
    );
    let mut s = stats([100, 200]);
    s.errors.add(b"DENIED protected mode", 2);
    s.lost = 3;
    let r = report("GET", &s);
    let mut out = Vec::new();
    write_quiet(&r.line(), &mut out).unwrap();
    write_errors(&r, true, &mut out).unwrap();
    // The rate table's row says it too.
    let mut e = TestResult::new("GET".into(), "GET".into(), s.clone());
    e.target_rps = Some(500);
    let mut table = Vec::new();
    write_rate_table(&[e], false, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(table.contains("           500 no request succeeded (2 errors)"), "{table}");
    assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET: no request succeeded: 2 replies in 1.00 seconds, every one an error reply, 3 requests lost with \
             their connections\nGET: errors: 2 (DENIED: 2)\n"
        );
}

#[test]
fn unfinished_requests_are_counted_in_every_form() {
    // An open loop whose server stopped answering: 500 answered, 8 abandoned, 1492 never sent.
    let mut s = Stats::new(Time::ZERO, 3, true).unwrap();
    for i in 0..500u64 {
        s.record(1_000_000, 1_000_000, Time::from_micros(i * 1_000));
    }
    s.end_at(Time::from_micros(4_000_000));
    s.abandoned = 8;
    s.unsent = 1492;
    for _ in 0..1500 {
        s.record_unfinished(2_000_000_000);
    }
    let r = report("PING", &s);
    let text = verbose(&r);
    assert!(text.contains("  500 requests completed in 4.00 seconds\n"), "{text}");
    assert!(text.contains("  throughput summary: 125.00 requests per second\n"), "{text}");
    assert!(
        text.contains(
            "  arrivals: 2000 due = 500 completed + 0 error replies + 0 lost + 8 abandoned + 1492 unsent\n"
        ),
        "{text}"
    );
    assert!(text.contains("  the latencies include 1500 lower bounds"), "{text}");
    assert!(text.contains("  no reply for the last 3.5 s of 4.0 s\n"), "{text}");
    let mut out = Vec::new();
    write_quiet(&r.line(), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "PING: 125.00 requests per second, p50=2000.895 msec\n\
             PING: 2000 due = 500 completed + 0 error replies + 0 lost + 8 abandoned + 1492 unsent; \
             no reply for the last 3.5 s of 4.0 s\n"
    );
    let mut out = Vec::new();
    write_csv_row(&r.line(), None, None, &mut out).unwrap();
    assert!(String::from_utf8(out).unwrap().ends_with(",\"0\",\"8\",\"1492\",\"\"\n"));
}

/// Three nodes, a replica among them that served nothing: one second long.
fn cluster_stats() -> (Stats, Vec<NodeInfo>) {
    let mut s = Stats::new(Time::ZERO, 3, false).unwrap().with_nodes(3, 0).unwrap();
    let at = Time::from_micros(1_000_000);
    // 300 requests at node 0 (100 µs each), 100 at node 2 (2 ms each, one an error).
    for (node, count, micros) in [(0, 300, 100), (2, 100, 2000)] {
        for k in 0..count {
            let error: Option<&[u8]> = (node == 2 && k == 0).then_some(b"ERR x");
            s.record_request(0, micros * 1000, 0, error, at);
            s.record_node(node, micros * 1000, 0, error, at);
        }
    }
    s.redirects.moved = 12;
    s.redirects.ask = 3;
    s.nodes[0].redirects.moved = 12;
    s.nodes[2].redirects.ask = 3;
    let node = |a: &str, primary, slots| NodeInfo { address: a.into(), primary, slots };
    let nodes = vec![
        node("127.0.0.1:7000", true, 8192),
        node("127.0.0.1:7001", false, 8192),
        node("10.0.0.12:7002", true, 8192),
    ];
    (s, nodes)
}

#[test]
fn nodes_table_after_the_summary() {
    let (s, nodes) = cluster_stats();
    let mut r = report("GET", &s);
    r.nodes = &nodes;
    let text = verbose(&r);
    let expected = "\
  nodes (requests by the node that answered them):
    address        role    slots   requests          rps  p50 msec  p99 msec   errors redirects
    127.0.0.1:7000 primary  8192        300       300.00     0.100     0.100        0        12
    127.0.0.1:7001 replica  8192          0         0.00     0.000     0.000        0         0
    10.0.0.12:7002 primary  8192        100       100.00     2.000     2.000        1         3
  redirects: 12 moved, 3 ask, 0 tryagain, 0 clusterdown (not counted as requests)
";
    assert!(text.ends_with(expected), "{text}");
    assert!(text.contains("  hits: 100.0% "), "the table comes after the summary: {text}");
    // Quiet and CSV lines are redis-benchmark's, nodes or not.
    let mut plain = stats(std::iter::repeat_n(100, 300).chain(std::iter::repeat_n(2000, 100)));
    plain.errors = s.errors.clone();
    let lines = |r: &TestReport| {
        let (mut quiet, mut csv) = (Vec::new(), Vec::new());
        write_quiet(&r.line(), &mut quiet).unwrap();
        write_csv_row(&r.line(), None, None, &mut csv).unwrap();
        (quiet, csv)
    };
    assert_eq!(lines(&r), lines(&report("GET", &plain)));
    // Without nodes, nothing.
    assert!(!verbose(&report("GET", &plain)).contains("nodes"));
}

#[test]
fn progress_line_format() {
    use respbench_session::observer::Goal;
    let mut p = Progressed {
        title: "SET (-d 128)",
        elapsed_s: 1.25,
        goal: Goal::Requests(100_000),
        completed: 41_000,
        rps_now: 35_010.4,
        rps_overall: 32_800.0,
        p99_ms: Some(1.2345),
    };
    // 59000 requests left at 32800 rps: 1.8 s.
    assert_eq!(
        progress_line(&p),
        "[SET (-d 128): 41%, 1.2 s, 1.8 s left] 32800 rps (now 35010), p99 1.234 msec, 41000 of 100000 \
             requests\r"
    );
    p.goal = Goal::Duration(std::time::Duration::from_secs(10));
    p.p99_ms = None;
    p.rps_overall = f64::NAN;
    assert_eq!(
        progress_line(&p),
        "[SET (-d 128): 12%, 1.2 s, 8.8 s left] 0 rps (now 35010), p99 - msec, 41000 requests of 10.0 s\r"
    );
    p.elapsed_s = 10.4;
    assert!(progress_line(&p).starts_with("[SET (-d 128): 100%, 10.4 s, draining] "));
    assert_eq!(clear_progress(3), "   \r");
    // Cut to a terminal's width, one column free.
    assert_eq!(fit_progress("[GET: 5%] 10 rps\r", Some(10)), "[GET: 5%…\r");
    assert_eq!(fit_progress("[GET: 5%] 10 rps\r", Some(80)), "[GET: 5%] 10 rps\r");
    assert_eq!(fit_progress("[GET: 5%] 10 rps\r", None), "[GET: 5%] 10 rps\r");
}

#[test]
fn errors_line_only_when_there_are_errors() {
    let mut s = stats(1..=10);
    let mut out = Vec::new();
    write_errors(&report("GET", &s), false, &mut out).unwrap();
    assert!(out.is_empty());
    for _ in 0..990 {
        s.errors.record(b"ERR unknown command");
    }
    for _ in 0..10 {
        s.errors.record(b"WRONGTYPE Operation against a key");
    }
    let r = report("GET", &s);
    let mut out = Vec::new();
    write_errors(&r, false, &mut out).unwrap();
    assert_eq!(out, b"  errors: 1000 (ERR: 990, WRONGTYPE: 10)\n");
    let mut out = Vec::new();
    write_errors(&r, true, &mut out).unwrap();
    assert_eq!(out, b"GET: errors: 1000 (ERR: 990, WRONGTYPE: 10)\n");
}

/// `--verify`'s lines: the counts, each mismatch shown, and how many more were not.
#[test]
fn verify_lines_say_the_counts_and_the_mismatches() {
    use respbench_core::stats::{Mismatch, Shown, VerifyStats};
    let mut out = Vec::new();
    write_verify(&VerifyStats::default(), None, &mut out).unwrap();
    write_verify(&VerifyStats::default(), Some("SET"), &mut out).unwrap();
    assert!(out.is_empty(), "nothing without --verify");
    let shown =
        Shown { kind: Mismatch::Stale, key: "key:7".into(), expected: "rb7 v2".into(), got: "(nil)".into() };
    let v = VerifyStats {
        on: true,
        versions: true,
        checked: 10,
        wrong: 1,
        other_key: 0,
        stale: 1,
        shown: vec![shown],
    };
    write_verify(&v, None, &mut out).unwrap();
    assert_eq!(
            String::from_utf8(out).unwrap(),
            "  verify: 10 reads checked, 2 mismatches (1 wrong values, 0 other keys' values, 1 stale; versions checked)\n    stale     key:7: expected rb7 v2, got (nil)\n    (1 more not shown)\n"
        );
    // After a -q line, one line of its own.
    let mut out = Vec::new();
    write_verify(&v, Some("GET"), &mut out).unwrap();
    assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET: verify: 10 reads checked, 2 mismatches (1 wrong values, 0 other keys' values, 1 stale; versions checked); the first: stale key:7: expected rb7 v2, got (nil)\n"
        );
}
