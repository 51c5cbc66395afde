//! The dataset's growth (#50): what `--dataset-shape` built, drawn from the document's
//! `dataset.shapes[].growth` samples. Two charts: the server's memory (`used_memory`,
//! `used_memory_dataset`, RSS) against the keys written, and `used_memory`'s growth per key as
//! the keys were written (where the per-key cost settles, and where an encoding or a rehash
//! changes it).

use super::data::Input;
use super::svg::{extent, Axis, Chart, Dash, Line};

/// A figure of a growth sample.
type Figure = fn(&crate::dataset::Point) -> u64;

/// A mebibyte: memory is drawn in MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// The growth charts of the inputs that built a dataset (none when no input has growth samples).
pub fn charts(inputs: &[Input]) -> Vec<Chart> {
    let mut memory = Vec::new();
    let mut per_key = Vec::new();
    let several = inputs.len() > 1;
    for input in inputs {
        let Some(d) = &input.dataset else { continue };
        for s in d.shapes.iter().filter(|s| !s.growth.is_empty()) {
            let label = if several { format!("{}: {}", input.label, s.shape) } else { s.shape.clone() };
            let color = per_key.len();
            // The first point is the memory before the first key, where there is one.
            let points = |f: Figure| -> Vec<(f64, f64)> {
                s.before.iter().chain(&s.growth).map(|p| (p.keys as f64, f(p) as f64 / MIB)).collect()
            };
            let figures: [(&str, Figure, Dash); 3] = [
                ("used_memory", |p| p.used_memory, Dash::Solid),
                ("used_memory_dataset", |p| p.used_memory_dataset, Dash::Dashed),
                ("RSS", |p| p.rss, Dash::Dotted),
            ];
            for (name, f, dash) in figures {
                memory.push(Line {
                    label: format!("{label} {name}"),
                    points: points(f),
                    color,
                    dash,
                    ..Line::default()
                });
            }
            let bpk: Vec<(f64, f64)> =
                s.growth.iter().filter_map(|p| Some((p.keys as f64, p.bytes_per_key?))).collect();
            per_key.push(Line { label, points: bpk, color, markers: true, ..Line::default() });
        }
    }
    if memory.is_empty() {
        return Vec::new();
    }
    let most_keys = memory.iter().flat_map(|l| l.points.iter().map(|p| p.0)).fold(1.0, f64::max);
    let keys = Axis::linear("keys written", 0.0, most_keys);
    let (_, mem_hi) = extent(&memory);
    let (_, bpk_hi) = extent(&per_key);
    vec![
        Chart {
            title: "Dataset: the server memory as the keys were written".into(),
            x: keys.clone(),
            y: Axis::linear("memory (MiB)", 0.0, mem_hi),
            lines: memory,
            ..Chart::default()
        },
        Chart {
            title: "Dataset: bytes per key (the growth of used_memory over the keys written)".into(),
            x: keys,
            y: Axis::linear("bytes per key", 0.0, bpk_hi),
            lines: per_key,
            ..Chart::default()
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Dataset, DatasetShape, Point};

    #[test]
    fn memory_and_bytes_per_key_against_keys() {
        let p = |keys, used_memory| Point {
            keys,
            used_memory,
            used_memory_dataset: used_memory / 2,
            rss: 2 * used_memory,
            bytes_per_key: (keys > 0).then(|| (used_memory - MIB as u64) as f64 / keys as f64),
        };
        let shape = DatasetShape {
            shape: "hash 2000 keys x 50 fields x 100B".into(),
            before: Some(p(0, MIB as u64)),
            growth: vec![p(1000, 9 * MIB as u64), p(2000, 17 * MIB as u64)],
            ..DatasetShape::default()
        };
        let input = Input {
            path: "d.json".into(),
            label: "d.json".into(),
            tests: Vec::new(),
            context: Default::default(),
            capacity: Vec::new(),
            comparison: None,
            dataset: Some(Dataset { bytes_per_key: None, shapes: vec![shape] }),
        };
        let c = charts(&[input]);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].lines.len(), 3);
        assert_eq!(c[0].lines[0].points, [(0.0, 1.0), (1000.0, 9.0), (2000.0, 17.0)]);
        assert_eq!(c[0].lines[2].points[2], (2000.0, 34.0));
        let expected = 8.0 * MIB / 1000.0;
        assert_eq!(c[1].lines[0].points, [(1000.0, expected), (2000.0, expected)]);
        assert_eq!(c[1].lines[0].label, "hash 2000 keys x 50 fields x 100B");
        assert!(c[1].y.max >= expected);
        assert!(charts(&[]).is_empty());
    }
}
