//! The capacity chart (`--charts capacity`): latency percentiles (corrected p50, p99, p99.9 and
//! the service p99) against the *achieved* throughput, on a log latency axis, with the
//! objectives as lines, the answer marked and the steps that failed marked by their verdict.
//! It draws a `--slo` search's steps (the document's `capacity`) and, as well, the steps of a
//! plain `--rps a,b,c` run, where a step fails when it did not keep its schedule (achieved more
//! than 2% from the target). Several runs go on one chart, a colour each.

use super::data::{Curve, Input, Point, Test};
use super::svg::{Axis, Chart, Dash, Line};

/// How far the achieved rate may be from the target for a plain `--rps` step to have kept its
/// schedule: the search's own rule.
const KEPT: f64 = respbench_session::capacity::RATE_TOLERANCE;

/// The curve of one test's plain `--rps` steps (two target rates or more).
fn from_steps(steps: &[&Test]) -> Curve {
    let mut points: Vec<Point> = steps
        .iter()
        .map(|t| {
            let target = t.target_rps.unwrap_or(0) as f64;
            Point {
                achieved: t.rps,
                ms: [t.latency.p50, t.latency.p99, t.latency.p999, t.service.map_or(f64::NAN, |s| s.p99)],
                passed: (t.rps - target).abs() <= KEPT * target,
                bottleneck: None,
            }
        })
        .collect();
    points.sort_by(|a, b| a.achieved.total_cmp(&b.achieved));
    Curve { input: steps[0].input, test: steps[0].name.clone(), objectives: Vec::new(), answer: None, points }
}

/// The chart, when some input has a search or a test with several `--rps` steps.
/// `rate_groups`: the plain open-loop steps grouped into lines, as the rate chart groups them.
pub fn charts(inputs: &[Input], rate_groups: &[Vec<&Test>]) -> Vec<Chart> {
    let mut curves: Vec<Curve> = inputs.iter().flat_map(|i| i.capacity.iter().cloned()).collect();
    // An input's plain steps, unless the input is a search (whose steps are its tests too).
    for g in rate_groups {
        if inputs.get(g[0].input).is_some_and(|i| i.capacity.is_empty()) {
            curves.push(from_steps(g));
        }
    }
    curves.retain(|c| !c.points.is_empty());
    if curves.is_empty() {
        return Vec::new();
    }
    let several = curves.len() > 1;
    let prefix = |c: &Curve| match inputs.get(c.input) {
        Some(i) if inputs.len() > 1 => format!("{}: {}", i.label, c.test),
        _ => c.test.clone(),
    };
    const STATS: [(&str, Dash); 4] =
        [("p50", Dash::Dotted), ("p99", Dash::Solid), ("p99.9", Dash::Dashed), ("service p99", Dash::Dashed)];
    let mut lines = Vec::new();
    for (ci, c) in curves.iter().enumerate() {
        let name = prefix(c);
        for (si, (stat, dash)) in STATS.iter().enumerate() {
            // Past three runs the service time would crowd the legend: the corrected figures
            // are what the chart compares.
            if curves.len() > 3 && si == 3 {
                continue;
            }
            let points: Vec<(f64, f64)> = c.points.iter().map(|p| (p.achieved, p.ms[si])).collect();
            if points.iter().all(|p| !p.1.is_finite()) {
                continue;
            }
            let (color, dash) =
                if several { (ci, *dash) } else { (si, if si == 3 { Dash::Dashed } else { Dash::Solid }) };
            lines.push(Line {
                label: format!("{name} {stat}"),
                points,
                color,
                dash,
                markers: true,
                ..Line::default()
            });
        }
    }
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).filter(|y| y.is_finite() && *y > 0.0);
    let (mut lo, mut hi) = ys.fold((f64::INFINITY, 0.0_f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let xmax = curves.iter().flat_map(|c| c.points.iter().map(|p| p.achieved)).fold(0.0, f64::max);
    let mut objectives: Vec<(String, f64)> =
        curves.iter().flat_map(|c| c.objectives.iter().cloned()).collect();
    objectives.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    objectives.dedup();
    for (_, limit) in &objectives {
        lo = lo.min(*limit);
        hi = hi.max(*limit);
    }
    let x = Axis::linear("achieved throughput (requests per second)", 0.0, xmax * 1.05);
    let y = Axis::log("latency (ms)", lo, hi);
    for (text, limit) in &objectives {
        lines.push(Line {
            label: format!("objective {text}"),
            points: vec![(x.min, *limit), (x.max, *limit)],
            color: 7,
            dash: Dash::Dashed,
            markers: false,
            ..Line::default()
        });
    }
    for (ci, c) in curves.iter().enumerate() {
        if let Some((achieved, rate)) = c.answer {
            let who = if several { format!("{}: ", prefix(c)) } else { String::new() };
            lines.push(Line {
                label: format!("{who}answer {rate} rps"),
                points: vec![(achieved, y.min), (achieved, y.max)],
                color: if several { ci } else { 4 },
                dash: Dash::Dotted,
                markers: false,
                ..Line::default()
            });
        }
    }
    // The failed steps, at their p99, one marker each (points apart by gaps), by verdict.
    let mut sides: Vec<Option<String>> = Vec::new();
    for c in &curves {
        for p in c.points.iter().filter(|p| !p.passed) {
            if !sides.contains(&p.bottleneck) {
                sides.push(p.bottleneck.clone());
            }
        }
    }
    for (k, side) in sides.iter().enumerate() {
        let mut points = Vec::new();
        for c in &curves {
            for p in c.points.iter().filter(|p| !p.passed && p.bottleneck == *side) {
                points.push((p.achieved, p.ms[1]));
                points.push((f64::NAN, f64::NAN));
            }
        }
        let why = match side {
            Some(s) => format!("failed steps (bottleneck: {s})"),
            None => "failed steps".to_string(),
        };
        lines.push(Line {
            label: why,
            points,
            color: [3, 6, 8, 9][k % 4],
            dash: Dash::Solid,
            markers: true,
            ..Line::default()
        });
    }
    let title = if curves.iter().any(|c| !c.objectives.is_empty()) {
        "Capacity: latency against achieved throughput"
    } else {
        "Open loop: latency against achieved throughput"
    };
    vec![Chart { title: title.into(), x, y, lines, notes: Vec::new(), bands: Vec::new() }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Document;
    use crate::plot::data::read_capacity as read;

    #[test]
    fn a_search_reads_into_a_curve_with_its_answer_and_failures() {
        use crate::doc::{Answer, Objective, Search, SearchStep, StepLatency};
        let step =
            |achieved_rps, passed, side: &str, [p50, p99, p99_9, service_p99_us]: [u64; 4]| SearchStep {
                achieved_rps,
                passed,
                bottleneck: Some(side.into()),
                latency_us: StepLatency { p50, p99, p99_9 },
                service_p99_us,
                ..SearchStep::default()
            };
        let search = Search {
            test: "GET".into(),
            objectives: vec![Objective { text: "p99<=1ms".into(), limit_us: 1000.0, ..Objective::default() }],
            answer: Some(Answer { rps: 5000, step: 1, ..Answer::default() }),
            steps: vec![
                step(9000.0, false, "server", [900, 5000, 8000, 300]),
                step(5001.0, true, "neither", [100, 800, 950, 200]),
            ],
            ..Search::default()
        };
        let doc = Document { capacity: Some(vec![search]), ..Document::default() };
        let c = read(&doc, 0);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].answer, Some((5001.0, 5000)));
        assert_eq!(c[0].objectives, [("p99<=1ms".to_string(), 1.0)]);
        // Sorted by achieved rate.
        assert_eq!(c[0].points[0].ms, [0.1, 0.8, 0.95, 0.2]);
        assert!(!c[0].points[1].passed);
        let input = Input {
            path: "a.json".into(),
            label: "a.json".into(),
            tests: Vec::new(),
            context: Default::default(),
            capacity: c,
            comparison: None,
            dataset: None,
        };
        let charts = charts(&[input], &[]);
        assert_eq!(charts.len(), 1);
        let labels: Vec<&str> = charts[0].lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "GET p50",
                "GET p99",
                "GET p99.9",
                "GET service p99",
                "objective p99<=1ms",
                "answer 5000 rps",
                "failed steps (bottleneck: server)"
            ]
        );
        // The x axis is the achieved rate, the answer a vertical at its step's achieved rate.
        assert_eq!(charts[0].lines[1].points, [(5001.0, 0.8), (9000.0, 5.0)]);
        assert_eq!(charts[0].lines[5].points[0].0, 5001.0);
        assert_eq!(charts[0].lines[6].points[0], (9000.0, 5.0));
    }
}
