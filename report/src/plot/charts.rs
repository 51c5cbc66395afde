//! The charts `respbench plot` draws from the tests it read: latency by percentile, open-loop
//! latency against the target rate, an open loop's corrected and service percentiles together,
//! per-second series, sweeps over a step parameter, repeats with their spread, and backends side
//! by side. Every chart carries, under it, what was measured around it: each input's command
//! line, server, date and backend, and each test's verdict and client CPU; points measured when
//! the server was not the limit are ringed in red.

use std::collections::BTreeSet;

use super::data::{Input, Test, PARAMS};
use super::svg::{extent, Axis, Band, Chart, Dash, Line, Mark, Note};

/// A kind of chart, as `--charts` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Latency against percentile on the "nines" axis, a line per test.
    Percentiles,
    /// Open loop: latency and achieved rate against the target rate (`--rps a,b,c`).
    Rate,
    /// Requests per second and p99 against time, a line per test with a `series`.
    Series,
    /// Requests per second and p99 against a parameter the runs differ in (`-d`, `-c`, `-P`,
    /// `--threads`).
    Sweep,
    /// Open loop: latency from the intended send (corrected) and service time from the actual
    /// send, by percentile, on one chart.
    Service,
    /// `--repeat`: each step's mean requests per second and p99 with the runs' min and max.
    Repeat,
    /// Several backends (`--backend mio,smol,uring`): requests per second and client CPU per
    /// request, bars side by side.
    Backends,
    /// Latency percentiles against the achieved rate: a `--slo` search (its objectives, answer
    /// and failed steps) or `--rps` steps (plot/capacity.rs).
    Capacity,
    /// `respbench compare`: B / A of each figure with its interval (plot/compare.rs).
    Compare,
    /// Client against server: the client's latency by percentile and the server's own execution
    /// time (`server_time`: the bucket holding p50, p99 and p99.9), on one chart.
    Server,
    /// `--ramp`: each step's latency percentiles and achieved rate against its level (clients
    /// or target rate), a line per test with a ramp.
    Ramp,
    /// `-t expiry`'s lag and `-t tracking`'s invalidation latency by percentile
    /// (plot/notify.rs).
    Notify,
    /// `--dataset-shape`: the server's memory and bytes per key against the keys written
    /// (plot/growth.rs).
    Dataset,
}

impl Kind {
    /// Every kind, in the order they are drawn.
    pub const ALL: [Kind; 13] = [
        Kind::Percentiles,
        Kind::Service,
        Kind::Rate,
        Kind::Series,
        Kind::Sweep,
        Kind::Repeat,
        Kind::Backends,
        Kind::Capacity,
        Kind::Compare,
        Kind::Server,
        Kind::Ramp,
        Kind::Notify,
        Kind::Dataset,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Percentiles => "percentiles",
            Kind::Rate => "rate",
            Kind::Series => "series",
            Kind::Sweep => "sweep",
            Kind::Service => "service",
            Kind::Repeat => "repeat",
            Kind::Backends => "backends",
            Kind::Capacity => "capacity",
            Kind::Compare => "compare",
            Kind::Server => "server",
            Kind::Ramp => "ramp",
            Kind::Notify => "notify",
            Kind::Dataset => "dataset",
        }
    }

    /// Why the results give no chart of this kind.
    pub fn missing(self) -> &'static str {
        match self {
            Kind::Percentiles => "no test completed a request",
            Kind::Rate => "no open-loop test ran at two target rates or more (--rps A,B)",
            Kind::Series => {
                "no test has a per-second series (runs with --duration, --rps, --series, --live or --hlog have one)"
            }
            Kind::Sweep => {
                "no test ran at two values of -d, -c, -P or --threads with everything else the same \
                 (give results of runs that differ in one of them; --rps steps are the rate chart)"
            }
            Kind::Service => "no open-loop test (--rps) has a service-time histogram",
            Kind::Repeat => "no test ran more than once (--repeat N)",
            Kind::Backends => "no test ran on two backends or more (--backend mio,smol,uring)",
            Kind::Capacity => "no --slo search and no open-loop test at two target rates or more (--rps A,B)",
            Kind::Compare => "no comparison (give the document respbench compare --json wrote)",
            Kind::Server => "no test has the server's own execution time from its LATENCY HISTOGRAM (server_time)",
            Kind::Ramp => "no test ran a ramp (--ramp 'clients 10..200 step 10 every 5s')",
            Kind::Notify => "no -t expiry or -t tracking test has a lag or latency histogram",
            Kind::Dataset => "no run built a dataset with memory samples (--dataset-shape)",
        }
    }
}

/// The charts of `kind` the inputs give (none when they lack the data).
pub fn build(kind: Kind, inputs: &[Input]) -> Vec<Chart> {
    let tests: Vec<&Test> = inputs.iter().flat_map(|i| &i.tests).collect();
    let labels = Labels::new(inputs, &tests);
    let mut charts = match kind {
        Kind::Percentiles => percentiles(&tests, &labels).into_iter().collect(),
        Kind::Rate => rate(&tests, &labels),
        Kind::Series => series(&tests, &labels),
        Kind::Sweep => sweeps(&tests, &labels),
        Kind::Service => service(&tests, &labels).into_iter().collect(),
        Kind::Repeat => repeats(&tests, &labels),
        Kind::Backends => backends(&tests, &labels),
        Kind::Capacity => super::capacity::charts(inputs, &rate_groups(&tests)),
        Kind::Compare => super::compare::charts(inputs),
        Kind::Server => server(&tests, &labels).into_iter().collect(),
        Kind::Ramp => ramp(&tests, &labels),
        Kind::Notify => super::notify::chart(&tests, &|t| labels.of(t)).into_iter().collect(),
        Kind::Dataset => super::growth::charts(inputs),
    };
    let notes = notes(inputs, &tests, &labels);
    for c in &mut charts {
        c.notes = notes.clone();
    }
    charts
}

/// Most tests a chart's notes list one by one (the HTML report's table has them all).
const NOTED_TESTS: usize = 24;

/// What every chart of `inputs` carries under it: per input, its command line, server, date and
/// backend (and a mixture's warning); per test, its verdict and client CPU, in red when the
/// server was not the limit.
pub fn notes(inputs: &[Input], tests: &[&Test], labels: &Labels) -> Vec<Note> {
    let mut notes = Vec::new();
    for input in inputs {
        let c = &input.context;
        let file = if inputs.len() > 1 { format!("{}: ", input.label) } else { String::new() };
        let mut facts = vec![c.command_line.clone().unwrap_or_else(|| "command line not recorded".into())];
        facts.push(format!("server {}", c.server.as_deref().unwrap_or("not identified")));
        if let Some(d) = &c.date {
            facts.push(d.clone());
        }
        if let Some(b) = &c.backend {
            facts.push(format!("backend {b}"));
        }
        notes.push(Note { text: format!("{file}{}", facts.join(" · ")), warn: false });
        if let Some((drawn, of)) = c.thinned {
            notes.push(Note {
                text: format!("{file}{drawn} of its {of} tests drawn, evenly spaced through the run"),
                warn: false,
            });
        }
        if c.mixture {
            notes.push(Note {
                text: format!(
                    "{file}a MIXTURE (respbench merge --force): its runs had different configurations"
                ),
                warn: true,
            });
        }
    }
    for t in tests.iter().take(NOTED_TESTS) {
        notes.push(Note {
            text: format!("{}: {}", labels.of(t), t.verdict_line()),
            warn: t.not_server_limited(),
        });
    }
    if tests.len() > NOTED_TESTS {
        let flagged = tests[NOTED_TESTS..].iter().filter(|t| t.not_server_limited()).count();
        notes.push(Note {
            text: format!(
                "… {} more tests, {flagged} of them not server-limited (respbench plot -o REPORT.html lists every one)",
                tests.len() - NOTED_TESTS
            ),
            warn: flagged > 0,
        });
    }
    notes
}

/// How lines name tests: `FILE: ` when there are several inputs, the title, the backend when
/// tests ran on several, the target rate, and the parameters that differ between tests of the
/// same title in the same input (the steps of a sweep).
#[derive(Clone)]
pub struct Labels {
    files: Vec<String>,
    several_backends: bool,
    /// For each input, the parameter indices that vary between its tests of one title.
    varying: Vec<Vec<usize>>,
    /// For each input, whether it repeated its tests (`--repeat`): labels then name the run.
    repeated: Vec<bool>,
}

impl Labels {
    fn new(inputs: &[Input], tests: &[&Test]) -> Labels {
        let backends: BTreeSet<Option<&str>> = tests.iter().map(|t| t.backend.as_deref()).collect();
        let varying = inputs
            .iter()
            .map(|input| {
                (0..PARAMS.len())
                    .filter(|&p| {
                        input.tests.iter().any(|a| {
                            input.tests.iter().any(|b| a.name == b.name && a.params[p] != b.params[p])
                        })
                    })
                    .collect()
            })
            .collect();
        let files =
            if inputs.len() > 1 { inputs.iter().map(|i| i.label.clone()).collect() } else { Vec::new() };
        let repeated = inputs.iter().map(|i| i.tests.iter().any(|t| t.run > 0)).collect();
        Labels { files, several_backends: backends.len() > 1, varying, repeated }
    }

    /// The whole label of a test.
    fn of(&self, t: &Test) -> String {
        let mut s = match self.files.get(t.input) {
            Some(f) => format!("{f}: {}", t.name),
            None => t.name.clone(),
        };
        s.push_str(&self.step(t, &self.varying[t.input], true));
        if self.repeated.get(t.input).copied().unwrap_or(false) {
            s.push_str(&format!(" run {}", t.run + 1));
        }
        s
    }

    /// The backend, the rate (when `rate`) and the parameters `params` of a test: ` [mio] @ 5000
    /// rps d=16`.
    fn step(&self, t: &Test, params: &[usize], rate: bool) -> String {
        let mut s = String::new();
        if let (true, Some(b)) = (self.several_backends, &t.backend) {
            s.push_str(&format!(" [{b}]"));
        }
        if let (true, Some(r)) = (rate, t.target_rps) {
            s.push_str(&format!(" @ {r} rps"));
        }
        for &p in params {
            if let Some(v) = t.params[p] {
                s.push_str(&format!(" {}={v}", PARAMS[p].short));
            }
        }
        s
    }
}

const LATENCY: &str = "latency (ms)";
const TIME: &str = "time from the test's start (s)";

/// Latency by percentile, a line per test: x is `log10(1 / (1 − p))`.
fn percentiles(tests: &[&Test], labels: &Labels) -> Option<Chart> {
    let mut lines = Vec::new();
    let mut nines: f64 = 0.0;
    let (mut lo, mut hi) = (f64::INFINITY, 0.0_f64);
    for t in tests.iter().filter(|t| !t.curve.is_empty()) {
        let points = t.curve.clone();
        for &(x, y) in &points {
            nines = nines.max(x);
            lo = lo.min(y);
            hi = hi.max(y);
        }
        lines.push(Line {
            label: labels.of(t),
            points,
            color: lines.len(),
            dash: dash_for(lines.len()),
            markers: false,
            ..Line::default()
        });
    }
    if lines.is_empty() {
        return None;
    }
    Some(Chart {
        title: "Latency by percentile".into(),
        x: Axis::nines("percentile", nines.ceil() as u32),
        y: Axis::log(LATENCY, lo, hi),
        lines,
        ..Chart::default()
    })
}

/// Past ten lines the colours repeat: the dash tells them apart.
fn dash_for(i: usize) -> Dash {
    match (i / 10) % 3 {
        0 => Dash::Solid,
        1 => Dash::Dashed,
        _ => Dash::Dotted,
    }
}

/// Open-loop tests that ran at several target rates, grouped into lines: by title, backend and
/// parameters; split by input when a rate repeats.
fn rate_groups<'a>(tests: &[&'a Test]) -> Vec<Vec<&'a Test>> {
    let open: Vec<&Test> = tests.iter().copied().filter(|t| t.target_rps.is_some()).collect();
    let mut groups = group(&open, |a, b| a.name == b.name && a.backend == b.backend && a.params == b.params);
    groups =
        groups.into_iter().flat_map(|g| split_repeats(g, |t| t.target_rps.unwrap_or(0) as f64)).collect();
    groups.retain(|g| distinct(g.iter().map(|t| t.target_rps.unwrap_or(0) as f64)) >= 2);
    for g in &mut groups {
        g.sort_by_key(|t| t.target_rps);
    }
    groups
}

/// Latency against the target rate, and the rate achieved against it.
/// `--ramp`: each step's latency (p50, p99, p99.9) and achieved rate against its level, a line
/// per statistic of each test with a ramp (the target for a rate ramp); a step not limited by
/// the server is flagged.
fn ramp(tests: &[&Test], labels: &Labels) -> Vec<Chart> {
    let with: Vec<(&Test, &str, &[super::data::RampPoint])> =
        tests.iter().filter_map(|t| t.ramp.as_ref().map(|(k, s)| (*t, k.as_str(), s.as_slice()))).collect();
    if with.is_empty() {
        return Vec::new();
    }
    let rate_ramp = with.iter().all(|(_, k, _)| *k == "rps");
    let levels: Vec<f64> = with.iter().flat_map(|(_, _, s)| s.iter().map(|p| p.level as f64)).collect();
    let title = if rate_ramp {
        "ramp step: target rate (requests per second)"
    } else if with.iter().all(|(_, k, _)| *k == "clients") {
        "ramp step: clients"
    } else {
        "ramp step: level (clients or target rate)"
    };
    let x = Axis::steps(title, &uniq(&levels));
    let several = with.len() > 1;
    type Stat = (&'static str, fn(&super::data::RampPoint) -> f64, Dash);
    let stats: [Stat; 3] = [
        ("p50", |p| p.p50, Dash::Dotted),
        ("p99", |p| p.p99, Dash::Solid),
        ("p99.9", |p| p.p999, Dash::Dashed),
    ];
    let mut lat = Vec::new();
    let mut got = Vec::new();
    for (i, (t, _, steps)) in with.iter().enumerate() {
        let name = labels.of(t);
        let flags: Vec<bool> =
            steps.iter().map(|p| p.verdict.as_deref().is_some_and(|v| v != "server")).collect();
        for (si, (stat, value, dash)) in stats.iter().enumerate() {
            let points = steps.iter().map(|p| (p.level as f64, value(p))).collect();
            let (color, dash) = if several { (i, *dash) } else { (si, Dash::Solid) };
            let label = format!("{name} {stat}");
            lat.push(Line {
                label,
                points,
                color,
                dash,
                markers: true,
                flags: flags.clone(),
                ..Line::default()
            });
        }
        let points = steps.iter().map(|p| (p.level as f64, p.rps)).collect();
        got.push(Line {
            label: name,
            points,
            color: i,
            dash: Dash::Solid,
            markers: true,
            flags,
            ..Line::default()
        });
    }
    if rate_ramp {
        let (tlo, thi) = (x.min.max(0.0), x.max);
        got.push(Line {
            label: "target".into(),
            points: vec![(tlo, tlo), (thi, thi)],
            color: 7,
            dash: Dash::Dashed,
            markers: false,
            ..Line::default()
        });
    }
    let (lo, hi) = extent(&lat);
    let latency = Chart {
        title: "Ramp: latency at each step".into(),
        x: x.clone(),
        y: Axis::log(LATENCY, lo, hi),
        lines: lat,
        ..Chart::default()
    };
    let (_, hi) = extent(&got);
    let achieved = Chart {
        title: "Ramp: requests per second at each step".into(),
        x,
        y: Axis::linear("achieved (requests per second)", 0.0, hi),
        lines: got,
        ..Chart::default()
    };
    vec![latency, achieved]
}

fn rate(tests: &[&Test], labels: &Labels) -> Vec<Chart> {
    let groups = rate_groups(tests);
    if groups.is_empty() {
        return Vec::new();
    }
    let targets: Vec<f64> = groups.iter().flatten().map(|t| t.target_rps.unwrap_or(0) as f64).collect();
    let x = Axis::steps("target rate (requests per second)", &uniq(&targets));
    let several = groups.len() > 1;
    let mut lat = Vec::new();
    type Stat = (&'static str, fn(&Test) -> Option<f64>, Dash);
    let stats: [Stat; 4] = [
        ("p50", |t| Some(t.latency.p50), Dash::Dotted),
        ("p99", |t| Some(t.latency.p99), Dash::Solid),
        ("p99.9", |t| Some(t.latency.p999), Dash::Dashed),
        ("service p99", |t| t.service.map(|s| s.p99), Dash::Dashed),
    ];
    let names = group_labels(&groups, labels, None, false);
    for (gi, (g, name)) in groups.iter().zip(&names).enumerate() {
        for (si, (stat, value, dash)) in stats.iter().enumerate() {
            // With several lines the service time would double the legend: the corrected
            // figures are what the chart is for.
            if several && si == 3 {
                continue;
            }
            let with: Vec<(&&Test, f64)> = g.iter().filter_map(|t| value(t).map(|v| (t, v))).collect();
            let points: Vec<(f64, f64)> =
                with.iter().map(|(t, v)| (t.target_rps.unwrap_or(0) as f64, *v)).collect();
            let flags: Vec<bool> = with.iter().map(|(t, _)| t.not_server_limited()).collect();
            if points.is_empty() {
                continue;
            }
            let (label, color, dash) = if several {
                (format!("{name} {stat}"), gi, *dash)
            } else {
                let dash = if si == 3 { Dash::Dashed } else { Dash::Solid };
                (format!("{name} {stat}"), si, dash)
            };
            lat.push(Line { label, points, color, dash, markers: true, flags, ..Line::default() });
        }
    }
    let (lo, hi) = extent(&lat);
    let latency = Chart {
        title: "Open loop: latency against target rate".into(),
        x: x.clone(),
        y: Axis::log(LATENCY, lo, hi),
        lines: lat,
        ..Chart::default()
    };
    let mut got = Vec::new();
    for (gi, (g, name)) in groups.iter().zip(names).enumerate() {
        let points = g.iter().map(|t| (t.target_rps.unwrap_or(0) as f64, t.rps)).collect();
        let flags = g.iter().map(|t| t.not_server_limited()).collect();
        got.push(Line {
            label: name,
            points,
            color: gi,
            dash: Dash::Solid,
            markers: true,
            flags,
            ..Line::default()
        });
    }
    let (tlo, thi) = (x.min.max(0.0), x.max);
    got.push(Line {
        label: "target".into(),
        points: vec![(tlo, tlo), (thi, thi)],
        color: 7,
        dash: Dash::Dashed,
        markers: false,
        ..Line::default()
    });
    let (_, hi) = extent(&got);
    let achieved = Chart {
        title: "Open loop: achieved rate against target rate".into(),
        x,
        y: Axis::linear("achieved (requests per second)", 0.0, hi),
        lines: got,
        ..Chart::default()
    };
    vec![latency, achieved]
}

/// Labels of lines that are groups of steps: the title, the backend when tests ran on several,
/// the rate (when `rate`) and the parameters, other than the one on the x axis (`x`), that differ
/// between groups; prefixed with the input's file when two groups would read the same.
fn group_labels(groups: &[Vec<&Test>], labels: &Labels, x: Option<usize>, rate: bool) -> Vec<String> {
    let others: Vec<usize> = (0..PARAMS.len())
        .filter(|&q| Some(q) != x && distinct(groups.iter().map(|g| g[0].params[q].unwrap_or(0) as f64)) > 1)
        .collect();
    let base: Vec<String> =
        groups.iter().map(|g| format!("{}{}", g[0].name, labels.step(g[0], &others, rate))).collect();
    base.iter()
        .zip(groups)
        .map(|(b, g)| {
            let file = labels.files.get(g[0].input).filter(|_| g.iter().all(|t| t.input == g[0].input));
            match file {
                Some(f) if base.iter().filter(|o| *o == b).count() > 1 => format!("{f}: {b}"),
                _ => b.clone(),
            }
        })
        .collect()
}

/// Requests per second and p99 per second against time, a line per test with a series.
fn series(tests: &[&Test], labels: &Labels) -> Vec<Chart> {
    let with: Vec<&Test> = tests.iter().copied().filter(|t| !t.series.is_empty()).collect();
    if with.is_empty() {
        return Vec::new();
    }
    let mut rps = Vec::new();
    let mut p99 = Vec::new();
    let mut last: f64 = 1.0;
    for (i, t) in with.iter().enumerate() {
        let label = labels.of(t);
        let mut r = Vec::new();
        let mut p = Vec::new();
        for s in &t.series {
            let at = s.second as f64 + 0.5;
            // The last second of a test is partial: its rate counts the part that ran, and a
            // sliver (under half a second: the replies still in flight at the end) is left out
            // rather than drawn as a collapse of the rate and a p99 of a few replies. A test
            // shorter than that keeps its one second, at the rate of the part that ran.
            let covered = (t.duration_s - s.second as f64).clamp(0.0, 1.0);
            if covered < 0.5 && s.second > 0 {
                continue;
            }
            let covered = if covered > 0.0 { covered } else { 1.0 };
            last = last.max(s.second as f64 + 1.0);
            r.push((at, s.requests as f64 / covered));
            p.push((at, if s.requests > 0 { s.p99 } else { f64::NAN }));
        }
        let dash = dash_for(i);
        rps.push(Line { label: label.clone(), points: r, color: i, dash, markers: false, ..Line::default() });
        p99.push(Line { label, points: p, color: i, dash, markers: false, ..Line::default() });
    }
    let (_, hi) = extent(&rps);
    let (lo, phi) = extent(&p99);
    let mut time = Axis::linear(TIME, 0.0, last);
    // Whole seconds only: the series has one point per second.
    time.ticks.retain(|t| t.at.fract() == 0.0);
    // Each event marked, its window shaded (to the end of its test when it did not recover).
    let bands: Vec<Band> =
        with.iter().flat_map(|t| t.events.iter().map(move |e| band(e, t.duration_s))).collect();
    let mut charts = vec![
        Chart {
            title: "Requests per second, second by second".into(),
            x: time.clone(),
            y: Axis::linear("requests per second", 0.0, hi),
            lines: rps,
            bands: bands.clone(),
            ..Chart::default()
        },
        Chart {
            title: "p99 latency, second by second".into(),
            x: time,
            y: Axis::log("p99 latency (ms)", lo, phi),
            lines: p99,
            bands,
            ..Chart::default()
        },
    ];
    // Under the client's seconds, the server's (`server_series`), on the same axis.
    let names: Vec<String> = with.iter().map(|t| labels.of(t)).collect();
    charts.extend(super::server_panel::charts(&with, &names, &charts[0].x));
    // Each event's 100 ms windows, from its baseline to after its recovery.
    for (i, t) in with.iter().enumerate() {
        for e in t.events.iter().filter(|e| !e.windows.is_empty()) {
            let points: Vec<(f64, f64)> = e
                .windows
                .iter()
                .map(|&(at, p99, n)| (at + 0.05, if n > 0 { p99 } else { f64::NAN }))
                .collect();
            let line = Line {
                label: labels.of(t),
                points,
                color: i,
                dash: dash_for(i),
                markers: false,
                ..Line::default()
            };
            let lines = vec![line];
            let (lo, hi) = extent(&lines);
            let first = e.windows.first().map_or(0.0, |w| w.0);
            let end = e.windows.last().map_or(e.sent_s, |w| w.0 + 0.1);
            charts.push(Chart {
                title: format!("p99 latency by 100 ms window around --at '{}'", e.label),
                x: Axis::linear(TIME, first, end),
                y: Axis::log("p99 latency (ms)", lo, hi),
                lines,
                bands: vec![band(e, end)],
                ..Chart::default()
            });
        }
    }
    charts
}

/// An event's band: from its send to its recovery, or to `end` when it did not recover.
fn band(e: &super::data::EventMark, end: f64) -> Band {
    let (to, how) = match e.end_s {
        Some(to) => (to, format!("{:.0} ms", (to - e.sent_s) * 1000.0)),
        None => (end, "not recovered".to_string()),
    };
    Band { from: e.sent_s, to, label: format!("{} ({how})", e.label) }
}

/// For each parameter the tests differ in (everything else equal): requests per second and p99
/// against it.
fn sweeps(tests: &[&Test], labels: &Labels) -> Vec<Chart> {
    let mut charts = Vec::new();
    for (p, param) in PARAMS.iter().enumerate() {
        let with: Vec<&Test> = tests.iter().copied().filter(|t| t.params[p].is_some()).collect();
        let same_but_p = |a: &Test, b: &Test| {
            a.name == b.name
                && a.backend == b.backend
                && a.target_rps == b.target_rps
                && (0..PARAMS.len()).all(|q| q == p || a.params[q] == b.params[q])
        };
        let value = |t: &Test| t.params[p].unwrap_or(0) as f64;
        let mut groups: Vec<Vec<&Test>> =
            group(&with, same_but_p).into_iter().flat_map(|g| split_repeats(g, value)).collect();
        groups.retain(|g| distinct(g.iter().map(|t| value(t))) >= 2);
        if groups.is_empty() {
            continue;
        }
        for g in &mut groups {
            g.sort_by_key(|t| t.params[p]);
        }
        let xs: Vec<f64> = groups.iter().flatten().map(|t| value(t)).collect();
        let x = if param.bytes {
            Axis::byte_steps(param.title, &uniq(&xs))
        } else {
            Axis::steps(param.title, &uniq(&xs))
        };
        let mut qps = Vec::new();
        let mut p99 = Vec::new();
        let names = group_labels(&groups, labels, Some(p), true);
        for (i, (g, label)) in groups.iter().zip(names).enumerate() {
            let dash = dash_for(i);
            qps.push(Line {
                label: label.clone(),
                points: g.iter().map(|t| (value(t), t.rps)).collect(),
                color: i,
                dash,
                markers: true,
                flags: g.iter().map(|t| t.not_server_limited()).collect(),
                ..Line::default()
            });
            p99.push(Line {
                label,
                points: g.iter().map(|t| (value(t), t.latency.p99)).collect(),
                color: i,
                dash,
                markers: true,
                flags: g.iter().map(|t| t.not_server_limited()).collect(),
                ..Line::default()
            });
        }
        let (_, hi) = extent(&qps);
        let (lo, phi) = extent(&p99);
        let what = param.title.split(" (").next().unwrap_or(param.title);
        charts.push(Chart {
            title: format!("Requests per second against {what}"),
            x: x.clone(),
            y: Axis::linear("requests per second", 0.0, hi),
            lines: qps,
            ..Chart::default()
        });
        charts.push(Chart {
            title: format!("p99 latency against {what}"),
            x,
            y: Axis::log("p99 latency (ms)", lo, phi),
            lines: p99,
            ..Chart::default()
        });
    }
    charts
}

/// Open loop: for each test with a service-time histogram, its corrected latency (from the
/// intended send, solid) and its service time (from the actual send, dashed, the same colour) by
/// percentile.
fn service(tests: &[&Test], labels: &Labels) -> Option<Chart> {
    let mut lines = Vec::new();
    let (mut nines, mut lo, mut hi) = (0.0_f64, f64::INFINITY, 0.0_f64);
    let with: Vec<&&Test> =
        tests.iter().filter(|t| t.service_curve.as_ref().is_some_and(|c| !c.is_empty())).collect();
    for (i, t) in with.iter().enumerate() {
        let label = labels.of(t);
        let service = t.service_curve.clone().unwrap_or_default();
        for (what, points, dash) in
            [("corrected", t.curve.clone(), Dash::Solid), ("service", service, Dash::Dashed)]
        {
            for &(x, y) in &points {
                nines = nines.max(x);
                lo = lo.min(y);
                hi = hi.max(y);
            }
            lines.push(Line { label: format!("{label} {what}"), points, color: i, dash, ..Line::default() });
        }
    }
    if lines.is_empty() {
        return None;
    }
    Some(Chart {
        title:
            "Open loop: corrected latency (from the intended send) and service time (from the actual send)"
                .into(),
        x: Axis::nines("percentile", nines.ceil() as u32),
        y: Axis::log(LATENCY, lo, hi),
        lines,
        ..Chart::default()
    })
}

/// Client against server: each test's latency by percentile (solid) and the server's own
/// execution time at p50, p99 and p99.9 (markers at the bucket's upper bound, a bar down to its
/// lower): the gap between them is the wire, the kernels, the queues and the client.
fn server(tests: &[&Test], labels: &Labels) -> Option<Chart> {
    let mut lines = Vec::new();
    let (mut nines, mut lo, mut hi) = (3.0_f64, f64::INFINITY, 0.0_f64);
    for (i, t) in tests.iter().filter(|t| !t.server.is_empty() && !t.curve.is_empty()).enumerate() {
        let label = labels.of(t);
        for &(x, y) in &t.curve {
            nines = nines.max(x);
            lo = lo.min(y);
            hi = hi.max(y);
        }
        for &(_, l, h) in &t.server {
            lo = lo.min(l);
            hi = hi.max(h);
        }
        lines.push(Line {
            label: format!("{label} client"),
            points: t.curve.clone(),
            color: i,
            ..Line::default()
        });
        lines.push(Line {
            label: format!("{label} server execution (bucket)"),
            points: t.server.iter().map(|&(x, _, h)| (x, h)).collect(),
            bars: t.server.iter().map(|&(_, l, h)| Some((l, h))).collect(),
            color: i,
            dash: Dash::Dashed,
            markers: true,
            ..Line::default()
        });
    }
    if lines.is_empty() {
        return None;
    }
    Some(Chart {
        title: "Client against server: the client's latency and the server's own execution time (LATENCY HISTOGRAM)"
            .into(),
        x: Axis::nines("percentile", nines.ceil() as u32),
        y: Axis::log(LATENCY, lo, hi),
        lines,
        ..Chart::default()
    })
}

/// `--repeat`: groups of runs of one step (same input, title, backend, rate and parameters,
/// different `step.run`): requests per second and p99, each step's mean with the runs' lowest
/// and highest as a bar.
fn repeats(tests: &[&Test], labels: &Labels) -> Vec<Chart> {
    let same = |a: &Test, b: &Test| {
        a.input == b.input
            && a.name == b.name
            && a.backend == b.backend
            && a.target_rps == b.target_rps
            && a.params == b.params
    };
    let mut groups = group(tests, same);
    groups.retain(|g| {
        let mut runs: Vec<u64> = g.iter().map(|t| t.run).collect();
        runs.sort_unstable();
        runs.dedup();
        runs.len() >= 2
    });
    if groups.is_empty() {
        return Vec::new();
    }
    let plain = Labels { repeated: Vec::new(), ..labels.clone() };
    let names: Vec<String> = groups.iter().map(|g| plain.of(g[0])).collect();
    let x = Axis::categories("step", &names);
    let spread = |f: fn(&Test) -> f64, title: &str, y_title: &str, log: bool| -> Chart {
        let mut line = Line {
            label: "mean of the runs, bar: lowest to highest".into(),
            markers: true,
            ..Line::default()
        };
        for (i, g) in groups.iter().enumerate() {
            let values: Vec<f64> = g.iter().map(|t| f(t)).collect();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let (lo, hi) =
                values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
            line.points.push((i as f64, mean));
            line.bars.push(Some((lo, hi)));
            line.flags.push(g.iter().any(|t| t.not_server_limited()));
        }
        let lo = line.bars.iter().flatten().map(|b| b.0).fold(f64::INFINITY, f64::min);
        let hi = line.bars.iter().flatten().map(|b| b.1).fold(0.0, f64::max);
        let runs = groups.iter().map(Vec::len).max().unwrap_or(0);
        Chart {
            title: format!("{title}: mean of {runs} runs with lowest and highest (--repeat)"),
            x: x.clone(),
            y: if log { Axis::log(y_title, lo, hi) } else { Axis::linear(y_title, 0.0, hi) },
            lines: vec![line],
            ..Chart::default()
        }
    };
    vec![
        spread(|t| t.rps, "Requests per second", "requests per second", false),
        spread(|t| t.latency.p99, "p99 latency", "p99 latency (ms)", true),
    ]
}

/// Several backends: for each test that ran on two or more (same input, title, rate, parameters
/// and run), bars side by side of requests per second and of the client's CPU per request.
fn backends(tests: &[&Test], labels: &Labels) -> Vec<Chart> {
    let same = |a: &Test, b: &Test| {
        a.input == b.input
            && a.name == b.name
            && a.target_rps == b.target_rps
            && a.params == b.params
            && a.run == b.run
    };
    let mut groups = group(tests, same);
    groups.retain(|g| {
        let b: BTreeSet<Option<&str>> = g.iter().map(|t| t.backend.as_deref()).collect();
        b.len() >= 2
    });
    if groups.is_empty() {
        return Vec::new();
    }
    let mut backends: Vec<String> = Vec::new();
    for t in groups.iter().flatten() {
        let b = t.backend.clone().unwrap_or_else(|| "?".into());
        if !backends.contains(&b) {
            backends.push(b);
        }
    }
    let plain = Labels { several_backends: false, repeated: Vec::new(), ..labels.clone() };
    let names: Vec<String> = groups.iter().map(|g| plain.of(g[0])).collect();
    let x = Axis::categories("test", &names);
    let bars = |f: &dyn Fn(&Test) -> Option<f64>| -> Vec<Line> {
        backends
            .iter()
            .enumerate()
            .map(|(k, b)| {
                let on: Vec<(f64, &Test)> = groups
                    .iter()
                    .enumerate()
                    .filter_map(|(i, g)| {
                        g.iter().find(|t| t.backend.as_deref() == Some(b)).map(|t| (i as f64, *t))
                    })
                    .collect();
                let mut line = Line { label: b.clone(), color: k, mark: Mark::Bars, ..Line::default() };
                for (i, t) in on {
                    if let Some(v) = f(t) {
                        line.points.push((i, v));
                        line.flags.push(t.not_server_limited());
                    }
                }
                line
            })
            .collect()
    };
    let mut charts = Vec::new();
    let rps = bars(&|t| Some(t.rps));
    let (_, hi) = extent(&rps);
    charts.push(Chart {
        title: "Requests per second by backend".into(),
        x: x.clone(),
        y: Axis::linear("requests per second", 0.0, hi),
        lines: rps,
        ..Chart::default()
    });
    let cpu = bars(&|t| t.cpu_us);
    if cpu.iter().any(|l| !l.points.is_empty()) {
        let (_, hi) = extent(&cpu);
        charts.push(Chart {
            title: "Client CPU per request by backend (lower is cheaper)".into(),
            x,
            y: Axis::linear("client CPU per request (µs)", 0.0, hi),
            lines: cpu,
            ..Chart::default()
        });
    }
    charts
}

/// Tests grouped by `same`, in order of first appearance.
fn group<'a>(tests: &[&'a Test], same: impl Fn(&Test, &Test) -> bool) -> Vec<Vec<&'a Test>> {
    let mut groups: Vec<Vec<&Test>> = Vec::new();
    for &t in tests {
        match groups.iter_mut().find(|g| same(g[0], t)) {
            Some(g) => g.push(t),
            None => groups.push(vec![t]),
        }
    }
    groups
}

/// A group whose x values repeat (the same step in two inputs) becomes one group per input.
fn split_repeats(g: Vec<&Test>, x: impl Fn(&Test) -> f64) -> Vec<Vec<&Test>> {
    let xs: Vec<f64> = g.iter().map(|t| x(t)).collect();
    if distinct(xs.iter().copied()) == xs.len() {
        return vec![g];
    }
    group(&g, |a, b| a.input == b.input)
}

fn distinct(values: impl Iterator<Item = f64>) -> usize {
    uniq(&values.collect::<Vec<_>>()).len()
}

fn uniq(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

#[cfg(test)]
mod tests;
