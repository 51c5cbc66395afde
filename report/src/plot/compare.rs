//! The comparison chart (`--charts compare`): for each figure of each test `respbench compare`
//! compared (its `--json` document's `comparison`), B / A with its 95% interval as a bar, and
//! a dashed line at 1 (no difference). A test compared only with `--force` is ringed in red.

use super::data::Input;
use super::svg::{Axis, Chart, Dash, Line};

/// One chart per input holding a comparison.
pub fn charts(inputs: &[Input]) -> Vec<Chart> {
    let mut out = Vec::new();
    for (k, input) in inputs.iter().enumerate() {
        let Some(c) = &input.comparison else { continue };
        let mut names = Vec::new();
        let mut line =
            Line { label: "B / A, bar: 95% interval".into(), markers: true, color: k, ..Line::default() };
        for t in &c.tests {
            for f in &t.figures {
                let finite = [f.ratio, f.ratio_low, f.ratio_high].iter().all(|v| v.is_finite() && *v > 0.0);
                if !finite {
                    continue;
                }
                line.points.push((names.len() as f64, f.ratio));
                line.bars.push(Some((f.ratio_low, f.ratio_high)));
                line.flags.push(t.forced.is_some());
                names.push(format!("{} {}", t.name, f.figure));
            }
        }
        if names.is_empty() {
            continue;
        }
        let lo = line.bars.iter().flatten().map(|b| b.0).fold(1.0, f64::min);
        let hi = line.bars.iter().flatten().map(|b| b.1).fold(1.0, f64::max);
        let one = Line {
            label: "no difference (B / A = 1)".into(),
            points: vec![(-0.5, 1.0), (names.len() as f64 - 0.5, 1.0)],
            dash: Dash::Dashed,
            color: 7,
            ..Line::default()
        };
        let side = |s: &crate::doc::ComparedSide| {
            let server = match (&s.server.name, &s.server.version) {
                (Some(n), Some(v)) => format!("{n} {v}"),
                _ => "server not identified".into(),
            };
            format!("{server}{}", s.address.as_ref().map(|a| format!(" at {a}")).unwrap_or_default())
        };
        out.push(Chart {
            title: format!("B ({}) against A ({}): B / A", side(&c.b), side(&c.a)),
            x: Axis::categories("figure", &names),
            y: Axis::linear("B / A (rps: higher is faster; latency: higher is slower)", lo * 0.98, hi * 1.02),
            lines: vec![one, line],
            ..Chart::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{ComparedFigure, ComparedTest, Comparison};

    #[test]
    fn each_figure_its_ratio_and_interval() {
        let fig = |name: &str, ratio: f64| ComparedFigure {
            figure: name.into(),
            ratio,
            ratio_low: ratio - 0.05,
            ratio_high: ratio + 0.05,
            ..ComparedFigure::default()
        };
        let comparison = Comparison {
            tests: vec![
                ComparedTest {
                    name: "GET".into(),
                    figures: vec![fig("rps", 0.9), fig("p50", 1.1)],
                    ..Default::default()
                },
                ComparedTest { name: "SET".into(), left_out: Some("x".into()), ..Default::default() },
                ComparedTest {
                    name: "LPUSH".into(),
                    forced: Some("machine".into()),
                    figures: vec![fig("rps", 1.0)],
                    ..Default::default()
                },
            ],
            ..Comparison::default()
        };
        let input = Input {
            path: "c.json".into(),
            label: "c.json".into(),
            tests: Vec::new(),
            context: Default::default(),
            capacity: Vec::new(),
            comparison: Some(comparison),
            dataset: None,
        };
        let drawn = charts(&[input]);
        assert_eq!(drawn.len(), 1);
        let c = &drawn[0];
        let labels: Vec<&str> = c.x.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["GET rps", "GET p50", "LPUSH rps"]);
        let l = &c.lines[1];
        assert_eq!(l.points, [(0.0, 0.9), (1.0, 1.1), (2.0, 1.0)]);
        assert_eq!(l.bars[1], Some((1.1 - 0.05, 1.1 + 0.05)));
        assert_eq!(l.flags, [false, false, true]);
        assert_eq!(c.lines[0].points, [(-0.5, 1.0), (2.5, 1.0)]);
        assert!(c.y.min <= 0.85 && c.y.max >= 1.15);
        assert!(charts(&[]).is_empty());
    }
}
