//! `respbench compare`'s memory (#50 item 3): the datasets two runs built (`--dataset-shape`),
//! shape by shape, side by side: bytes per key and per element, B / A, encodings and
//! fragmentation, in the text and the comparison's JSON (`comparison.memory`).

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::dataset::{Dataset, DatasetShape};
use crate::shared::thousands;

/// One shape of each side (the shapes are paired in the order given), its memory side by side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparedMemory {
    /// A's shape (`hash 10000 keys x 50 fields x 100B`).
    pub shape_a: String,
    /// B's shape.
    pub shape_b: String,
    /// A's `used_memory` growth per key.
    pub bytes_per_key_a: Option<f64>,
    /// B's.
    pub bytes_per_key_b: Option<f64>,
    /// B / A of the bytes per key.
    pub ratio: Option<f64>,
    /// A's bytes per element.
    pub bytes_per_element_a: Option<f64>,
    /// B's.
    pub bytes_per_element_b: Option<f64>,
    /// A's encodings as the text says them (`listpack 100%`).
    pub encodings_a: String,
    /// B's.
    pub encodings_b: String,
    /// A's `mem_fragmentation_ratio` after the build.
    pub fragmentation_a: Option<f64>,
    /// B's.
    pub fragmentation_b: Option<f64>,
}

fn encodings(s: &DatasetShape) -> String {
    let all: Vec<String> = s.encodings.iter().map(|e| format!("{} {:.0}%", e.encoding, e.percent)).collect();
    if all.is_empty() {
        "not read".into()
    } else {
        all.join(", ")
    }
}

/// The shapes both sides built, paired in order; empty when either side built none.
pub fn compare(a: Option<&Dataset>, b: Option<&Dataset>) -> Vec<ComparedMemory> {
    let (Some(a), Some(b)) = (a, b) else { return Vec::new() };
    a.shapes
        .iter()
        .zip(&b.shapes)
        .map(|(x, y)| ComparedMemory {
            shape_a: x.shape.clone(),
            shape_b: y.shape.clone(),
            bytes_per_key_a: x.bytes_per_key,
            bytes_per_key_b: y.bytes_per_key,
            ratio: x.bytes_per_key.zip(y.bytes_per_key).filter(|(a, _)| *a > 0.0).map(|(a, b)| b / a),
            bytes_per_element_a: x.bytes_per_element,
            bytes_per_element_b: y.bytes_per_element,
            encodings_a: encodings(x),
            encodings_b: encodings(y),
            fragmentation_a: x.fragmentation,
            fragmentation_b: y.fragmentation,
        })
        .collect()
}

/// The text: a line per shape, `hash 10000 keys x 50 fields x 100B: A 6,412 B a key (listpack
/// 100%), B 8,678 B a key (hashtable 100%): B/A 1.353`.
pub fn write_text(all: &[ComparedMemory], out: &mut impl Write) -> io::Result<()> {
    if all.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nMemory (--dataset-shape), shape by shape:")?;
    let side = |bpk: Option<f64>, bpe: Option<f64>, enc: &str, frag: Option<f64>| {
        let mut s = bpk.map_or("memory not read".into(), |b| {
            format!("{} B a key", thousands(b.max(0.0).round() as u64))
        });
        if let Some(e) = bpe.filter(|_| bpk.is_some()) {
            s += &format!(", {} B an element", thousands(e.max(0.0).round() as u64));
        }
        s += &format!(" ({enc}");
        if let Some(f) = frag {
            s += &format!("; fragmentation {f:.2}");
        }
        s + ")"
    };
    for m in all {
        let shape =
            if m.shape_a == m.shape_b { m.shape_a.clone() } else { format!("{} / {}", m.shape_a, m.shape_b) };
        let ratio = m.ratio.map(|r| format!(": B/A {r:.3}")).unwrap_or_default();
        writeln!(
            out,
            "  {shape}: A {}, B {}{ratio}",
            side(m.bytes_per_key_a, m.bytes_per_element_a, &m.encodings_a, m.fragmentation_a),
            side(m.bytes_per_key_b, m.bytes_per_element_b, &m.encodings_b, m.fragmentation_b),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Encoding;

    fn shape(bpk: f64, encoding: &str) -> Dataset {
        Dataset {
            bytes_per_key: Some(bpk),
            shapes: vec![DatasetShape {
                shape: "hash 1000 keys x 50 fields x 100B".into(),
                bytes_per_key: Some(bpk),
                bytes_per_element: Some(bpk / 50.0),
                fragmentation: Some(1.09),
                encodings: vec![Encoding { encoding: encoding.into(), keys: 100, percent: 100.0 }],
                ..DatasetShape::default()
            }],
        }
    }

    #[test]
    fn side_by_side() {
        let m = compare(Some(&shape(6412.0, "listpack")), Some(&shape(8678.0, "hashtable")));
        assert_eq!(m.len(), 1);
        assert!((m[0].ratio.unwrap() - 8678.0 / 6412.0).abs() < 1e-12);
        let mut text = Vec::new();
        write_text(&m, &mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "\nMemory (--dataset-shape), shape by shape:\n  hash 1000 keys x 50 fields x 100B: A 6,412 B a key, \
             128 B an element (listpack 100%; fragmentation 1.09), B 8,678 B a key, 174 B an element (hashtable \
             100%; fragmentation 1.09): B/A 1.353\n"
        );
        assert!(compare(None, Some(&shape(1.0, "x"))).is_empty());
    }
}
