//! The charts drawn from literal inputs: what each shows, its axes, lines and notes.

use super::super::data::percentile_points;
use super::super::data::{Latency, Second};
use super::*;
use crate::hdr;
use hdrhistogram::Histogram;

fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for v in values {
        h.record(v).unwrap();
    }
    h
}

/// A test of `input` with these parameters (d, c, P, threads) and figures.
fn test(input: usize, name: &str, params: [Option<u64>; 4], target: Option<u64>, rps: f64) -> Test {
    Test {
        input,
        name: name.into(),
        backend: Some("mio".into()),
        target_rps: target,
        params,
        requests: 100,
        errors: 0,
        duration_s: 2.0,
        rps,
        latency: Latency { avg: 0.5, p50: 0.4, p99: rps / 1e5, p999: 2.0, max: 3.0 },
        service: target.map(|_| Latency { avg: 0.3, p50: 0.2, p99: 0.9, p999: 1.0, max: 1.5 }),
        curve: percentile_points(&hist(1..=100)),
        server: Vec::new(),
        ramp: None,
        series: Vec::new(),
        events: Vec::new(),
        start_us: 0,
        service_curve: None,
        verdict: None,
        cpu_us: None,
        core_share: None,
        run: 0,
        notify: None,
        server_series: Vec::new(),
    }
}

/// A test's note says whose cores its share is of: a core per event loop, and how many
/// loops (it said `84% of its cores`, of no stated count).
#[test]
fn the_client_cpu_note_says_whose_cores() {
    let mut t = test(0, "GET", [Some(16), Some(5), Some(1), Some(2)], None, 1000.0);
    t.cpu_us = Some(5.9);
    t.core_share = Some((0.84, 2));
    t.verdict = Some("server".into());
    assert_eq!(
        t.verdict_line(),
        "server-limited, client 5.9 µs/request, 84% of a core per event loop (2 loops)"
    );
    t.core_share = Some((0.5, 1));
    assert!(t.verdict_line().ends_with(", 50% of a core per event loop (1 loop)"), "{}", t.verdict_line());
}

fn input(label: &str, tests: Vec<Test>) -> Input {
    Input {
        path: format!("/x/{label}"),
        label: label.into(),
        tests,
        context: Default::default(),
        capacity: Vec::new(),
        comparison: None,
        dataset: None,
    }
}

fn labels(c: &Chart) -> Vec<&str> {
    c.lines.iter().map(|l| l.label.as_str()).collect()
}

#[test]
fn percentile_curve_follows_the_text_reports_rule() {
    let h = hist((1..=10_000).map(|i| i * 3));
    let points = percentile_points(&h);
    // Runs of equal values are thinned to their ends, so the value at x is the last point's
    // at or before it.
    let at = |x: f64| points.iter().take_while(|p| p.0 <= x + 1e-9).last().map(|p| p.1);
    for (x, p) in [(0.0, 0.0), (1.0, 90.0), (2.0, 99.0), (3.0, 99.9)] {
        let want = hdr::value_at_percentile(&h, p).max(1) as f64 / 1000.0;
        let got = at(x).unwrap_or_else(|| panic!("no point at {x}"));
        // p = 0 is the lowest value's bucket; the C rule gives its lowest equivalent there,
        // the curve the highest: the same bucket.
        assert_eq!(h.highest_equivalent((got * 1000.0) as u64), h.highest_equivalent((want * 1000.0) as u64));
    }
    // It ends at 1 − 1/n: four nines for 10,000 values.
    assert!((points.last().unwrap().0 - 4.0).abs() < 1e-9);
    assert!(points.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    // One value: one point.
    assert_eq!(percentile_points(&hist([5])).len(), 1);
}

/// A run whose steps carry their own parameters (a -d list in one document) gives a sweep
/// over the value size, and its percentile lines are named by step.
#[test]
fn steps_of_one_run_sweep_by_their_own_parameters() {
    let d = |v| [Some(v), Some(50), Some(1), Some(0)];
    let tests = vec![
        test(0, "SET", d(16), None, 90_000.0),
        test(0, "GET", d(16), None, 100_000.0),
        test(0, "SET", d(1024), None, 80_000.0),
        test(0, "GET", d(1024), None, 95_000.0),
    ];
    let inputs = [input("run.json", tests)];
    let p = build(Kind::Percentiles, &inputs);
    assert_eq!(labels(&p[0]), ["SET d=16", "GET d=16", "SET d=1024", "GET d=1024"]);
    let s = build(Kind::Sweep, &inputs);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].title, "Requests per second against value size");
    assert_eq!(s[0].x.title, "value size");
    assert_eq!(labels(&s[0]), ["SET", "GET"]);
    assert_eq!(s[0].lines[1].points, [(16.0, 100_000.0), (1024.0, 95_000.0)]);
    let ticks: Vec<&str> = s[0].x.ticks.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(ticks, ["16 B", "1 KiB"]);
    assert_eq!(s[1].title, "p99 latency against value size");
    assert!(build(Kind::Rate, &inputs).is_empty());
    assert!(build(Kind::Series, &inputs).is_empty());
}

/// Two parameters varied together: a line per value of the other one.
#[test]
fn a_grid_of_steps_gives_a_line_per_other_value() {
    let mut tests = Vec::new();
    for c in [10, 100] {
        for d in [16, 256, 4096] {
            tests.push(test(0, "GET", [Some(d), Some(c), Some(1), Some(0)], None, (c * 1000 + d) as f64));
        }
    }
    let s = build(Kind::Sweep, &[input("grid.json", tests)]);
    let titles: Vec<&str> = s.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Requests per second against value size",
            "p99 latency against value size",
            "Requests per second against connections",
            "p99 latency against connections",
        ]
    );
    assert_eq!(labels(&s[0]), ["GET c=10", "GET c=100"]);
    assert_eq!(labels(&s[2]), ["GET d=16", "GET d=256", "GET d=4096"]);
}

/// Rates: lines per test; the same rates in two inputs stay two lines, named by file; the
/// achieved chart has the target line.
#[test]
fn rate_steps_from_two_inputs() {
    let p = [Some(3), Some(20), Some(1), Some(0)];
    let run = |i| {
        vec![
            test(i, "GET", p, Some(1000), 999.0),
            test(i, "GET", p, Some(5000), 4990.0),
            test(i, "GET", p, Some(9000), 7000.0),
        ]
    };
    let inputs = [input("a.json", run(0)), input("b.json", run(1))];
    let charts = build(Kind::Rate, &inputs);
    assert_eq!(charts.len(), 2);
    assert_eq!(
        labels(&charts[0]),
        [
            "a.json: GET p50",
            "a.json: GET p99",
            "a.json: GET p99.9",
            "b.json: GET p50",
            "b.json: GET p99",
            "b.json: GET p99.9"
        ]
    );
    assert_eq!(labels(&charts[1]), ["a.json: GET", "b.json: GET", "target"]);
    assert_eq!(charts[1].lines[0].points[2], (9000.0, 7000.0));
    // One input alone: the service time joins, each statistic in its own colour.
    let one = build(Kind::Rate, &inputs[..1]);
    assert_eq!(labels(&one[0]), ["GET p50", "GET p99", "GET p99.9", "GET service p99"]);
    let colors: Vec<usize> = one[0].lines.iter().map(|l| l.color).collect();
    assert_eq!(colors, [0, 1, 2, 3]);
    // Several inputs of the same rates are not a sweep over anything else.
    assert!(build(Kind::Sweep, &inputs).is_empty());
    let perc = build(Kind::Percentiles, &inputs);
    assert_eq!(perc[0].lines[0].label, "a.json: GET @ 1000 rps");
}

/// Repeats: a step's runs give its mean and its lowest and highest; backends: a bar line
/// per backend over the tests; service: two lines per open-loop test; and the notes carry
/// each test's verdict, in red when the server was not the limit.
#[test]
fn repeats_backends_service_and_notes() {
    let p = [Some(3), Some(50), Some(1), Some(0)];
    let mut tests = Vec::new();
    for (run, rps) in [(0, 900.0), (1, 1000.0), (2, 1400.0)] {
        let mut t = test(0, "GET", p, None, rps);
        t.run = run;
        t.verdict = Some(if run == 2 { "client" } else { "server" }.into());
        tests.push(t);
    }
    let inputs = [input("rep.json", tests)];
    let r = build(Kind::Repeat, &inputs);
    assert_eq!(r.len(), 2);
    let line = &r[0].lines[0];
    assert_eq!(line.points, [(0.0, 1100.0)]);
    assert_eq!(line.bars, [Some((900.0, 1400.0))]);
    assert_eq!(line.flags, [true]);
    assert_eq!(r[0].x.ticks[0].label, "GET");
    // The notes: the context, then a line per test naming its run.
    let notes: Vec<(&str, bool)> = r[0].notes.iter().map(|n| (n.text.as_str(), n.warn)).collect();
    assert_eq!(notes[0], ("command line not recorded · server not identified", false));
    assert_eq!(notes[1], ("GET run 1: server-limited", false));
    assert_eq!(notes[3], ("GET run 3: NOT server-limited (client was the limit)", true));
    assert!(build(Kind::Backends, &inputs).is_empty());

    let mut tests = Vec::new();
    for (b, rps, cpu) in [("mio", 1000.0, 5.0), ("smol", 800.0, 9.0)] {
        for name in ["SET", "GET"] {
            let mut t = test(0, name, p, None, rps);
            t.backend = Some(b.into());
            t.cpu_us = Some(cpu);
            tests.push(t);
        }
    }
    let b = build(Kind::Backends, &[input("be.json", tests)]);
    assert_eq!(b.len(), 2);
    assert_eq!(labels(&b[0]), ["mio", "smol"]);
    assert!(b[0].lines.iter().all(|l| l.mark == Mark::Bars));
    assert_eq!(b[0].lines[1].points, [(0.0, 800.0), (1.0, 800.0)]);
    assert_eq!(b[1].lines[0].points, [(0.0, 5.0), (1.0, 5.0)]);
    let ticks: Vec<&str> = b[0].x.ticks.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(ticks, ["SET", "GET"]);

    let mut t = test(0, "GET", p, Some(2000), 2000.0);
    t.service_curve = Some(percentile_points(&hist(1..=50)));
    let s = build(Kind::Service, &[input("ol.json", vec![t, test(0, "SET", p, None, 1.0)])]);
    assert_eq!(labels(&s[0]), ["GET @ 2000 rps corrected", "GET @ 2000 rps service"]);
    assert_eq!(s[0].lines[1].dash, Dash::Dashed);
}

/// Series: the rate of the last, partial second counts the part that ran; a sliver is left
/// out; a second without replies is a gap in p99; several backends are named.
#[test]
fn ramp_lines_are_each_steps_figures_against_its_level() {
    use super::super::data::RampPoint;
    let point = |level, rps, p99, verdict: &str| RampPoint {
        level,
        rps,
        p50: p99 / 4.0,
        p99,
        p999: p99 * 2.0,
        verdict: Some(verdict.into()),
    };
    let mut t = test(0, "SET", [None; 4], Some(2000), 1.0);
    t.ramp = Some((
        "rps".into(),
        vec![
            point(1000, 999.0, 0.2, "server"),
            point(2000, 1990.0, 0.3, "server"),
            point(3000, 2500.0, 9.0, "client"),
        ],
    ));
    let plain = test(0, "GET", [None; 4], None, 1.0);
    let charts = build(Kind::Ramp, &[input("r.json", vec![t, plain])]);
    assert_eq!(charts.len(), 2);
    assert_eq!(labels(&charts[0]), ["SET @ 2000 rps p50", "SET @ 2000 rps p99", "SET @ 2000 rps p99.9"]);
    assert_eq!(charts[0].lines[1].points, [(1000.0, 0.2), (2000.0, 0.3), (3000.0, 9.0)]);
    assert_eq!(charts[0].lines[1].flags, [false, false, true]);
    assert_eq!(charts[0].x.title, "ramp step: target rate (requests per second)");
    assert_eq!(labels(&charts[1]), ["SET @ 2000 rps", "target"]);
    assert_eq!(charts[1].lines[0].points[2], (3000.0, 2500.0));
    // No test with a ramp: no chart.
    assert!(build(Kind::Ramp, &[input("p.json", vec![test(0, "GET", [None; 4], None, 1.0)])]).is_empty());
}

#[test]
fn series_lines() {
    let mut t = test(0, "GET", [None; 4], None, 1.0);
    t.duration_s = 3.25;
    let s = |second, requests, p99| Second { second, requests, errors: 0, p50: 0.1, p99 };
    t.series = vec![s(0, 1000, 0.5), s(1, 0, 0.0), s(2, 1000, 0.7), s(3, 10, 0.9)];
    let mut u = test(0, "GET", [None; 4], None, 1.0);
    u.backend = Some("smol".into());
    u.duration_s = 1.8;
    u.series = vec![s(0, 500, 0.4), s(1, 400, 0.6)];
    let mut short = test(0, "SET", [None; 4], None, 1.0);
    short.duration_s = 0.25;
    short.series = vec![s(0, 100, 0.3)];
    let charts = build(Kind::Series, &[input("s.json", vec![t, u, short])]);
    // A test of a quarter second keeps its second, at its rate.
    assert_eq!(charts[0].lines[2].points, [(0.5, 400.0)]);
    assert_eq!(labels(&charts[0]), ["GET [mio]", "GET [smol]", "SET [mio]"]);
    // A quarter of second 3 ran: it is left out.
    assert_eq!(charts[0].lines[0].points, [(0.5, 1000.0), (1.5, 0.0), (2.5, 1000.0)]);
    assert_eq!(charts[0].lines[1].points[1], (1.5, 500.0));
    let p99 = &charts[1].lines[0].points;
    assert!(p99.len() == 3 && p99[1].1.is_nan() && p99[2].1 == 0.7, "{p99:?}");
    let ticks: Vec<&str> = charts[0].x.ticks.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(ticks, ["0", "1", "2", "3"]);
}

#[test]
fn events_are_marked_and_their_windows_shaded() {
    let mut t = test(0, "SET", [None; 4], Some(2000), 1.0);
    t.duration_s = 10.0;
    t.series = (0..10).map(|k| Second { second: k, requests: 2000, errors: 0, p50: 0.1, p99: 0.5 }).collect();
    let windows = (0..70).map(|k| (k as f64 / 10.0, if k == 55 { 500.0 } else { 0.2 }, 200)).collect();
    t.events = vec![
        super::super::data::EventMark {
            label: "5s CLIENT PAUSE 500 WRITE".into(),
            sent_s: 5.0,
            end_s: Some(5.51),
            windows,
        },
        super::super::data::EventMark {
            label: "8s DEBUG SLEEP 9".into(),
            sent_s: 8.0,
            end_s: None,
            windows: vec![],
        },
    ];
    let charts = build(Kind::Series, &[input("e.json", vec![t])]);
    // The two series charts and the first event's windows.
    assert_eq!(charts.len(), 3);
    let b = &charts[0].bands;
    assert_eq!(b.len(), 2);
    assert_eq!((b[0].from, b[0].to, b[0].label.as_str()), (5.0, 5.51, "5s CLIENT PAUSE 500 WRITE (510 ms)"));
    assert_eq!((b[1].from, b[1].to, b[1].label.as_str()), (8.0, 10.0, "8s DEBUG SLEEP 9 (not recovered)"));
    assert_eq!(charts[1].bands, charts[0].bands);
    let fine = &charts[2];
    assert_eq!(fine.title, "p99 latency by 100 ms window around --at '5s CLIENT PAUSE 500 WRITE'");
    assert_eq!(fine.lines[0].points[55], (5.55, 500.0));
    let mut svg = String::new();
    fine.write(&mut svg, "c", 0.0, 0.0, true);
    assert_eq!(svg.matches(r#"class="band""#).count(), 1);
    assert_eq!(svg.matches(r#"class="event""#).count(), 1);
    assert!(svg.contains("5s CLIENT PAUSE 500 WRITE (510 ms)"), "{svg}");
}
