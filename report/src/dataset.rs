//! What `--dataset-shape` built, in every format: the text's lines (`10,000 hashes of 50 x
//! 100 B: 6,412 B a key, 128 B a field; fragmentation 1.09`, `hash: listpack 100%`), the CSV's
//! block and the JSON document's `dataset` object (docs/json.md).

use std::io::{self, Write};

use respbench_session::dataset::{Built, Kind, MemoryPoint, ShapeBuilt};
use respbench_session::result::{TestResult, WarningKind};
use serde::{Deserialize, Serialize};

use crate::shared::thousands;

/// The JSON document's `dataset`: every shape built, and the bytes a key took over them all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Dataset {
    /// `used_memory`'s growth over every shape's keys, per key.
    pub bytes_per_key: Option<f64>,
    /// Each shape, in the order given.
    pub shapes: Vec<DatasetShape>,
}

/// One shape built.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DatasetShape {
    /// Its description (`hash 10000 keys x 50 fields x 100B`).
    pub shape: String,
    /// `string`, `hash`, `list`, `set`, `zset`, `stream`.
    pub kind: String,
    /// Its keys.
    pub keys: u64,
    /// Fields, members or entries per key (1 for a string).
    pub elements: u64,
    /// Its first key's name.
    pub first_key: String,
    /// Seconds the build took.
    pub seconds: f64,
    /// How much `DBSIZE` grew.
    pub dbsize_growth: Option<u64>,
    /// Writes the server refused.
    pub errors: u64,
    /// `OBJECT ENCODING` of a sample of keys.
    pub encodings: Vec<Encoding>,
    /// `used_memory`'s growth per key at the end.
    pub bytes_per_key: Option<f64>,
    /// The same per element.
    pub bytes_per_element: Option<f64>,
    /// `mem_fragmentation_ratio` at the end (one server).
    pub fragmentation: Option<f64>,
    /// The memory before the first key.
    pub before: Option<Point>,
    /// The memory as the keys were written.
    pub growth: Vec<Point>,
}

/// One encoding of a shape's sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Encoding {
    /// As `OBJECT ENCODING` says it (`listpack`).
    pub encoding: String,
    /// Keys of the sample that have it.
    pub keys: u64,
    /// Their share of the sample, in percent.
    pub percent: f64,
}

/// The server's memory after some keys.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Point {
    /// Keys written so far.
    pub keys: u64,
    /// `used_memory`.
    pub used_memory: u64,
    /// `used_memory_dataset`.
    pub used_memory_dataset: u64,
    /// `used_memory_rss`.
    pub rss: u64,
    /// `used_memory`'s growth so far per key written (none before the first).
    pub bytes_per_key: Option<f64>,
}

fn point(p: &MemoryPoint, before: Option<&MemoryPoint>) -> Point {
    Point {
        keys: p.keys,
        used_memory: p.used_memory,
        used_memory_dataset: p.used_memory_dataset,
        rss: p.rss,
        bytes_per_key: before
            .filter(|_| p.keys > 0)
            .map(|b| (p.used_memory as f64 - b.used_memory as f64) / p.keys as f64),
    }
}

/// The document's `dataset` of what was built.
pub fn to_json(built: &Built, key_prefix: &str) -> Dataset {
    let shapes: Vec<DatasetShape> = built
        .shapes
        .iter()
        .map(|s| DatasetShape {
            shape: s.shape.to_string(),
            kind: s.shape.kind.name().into(),
            keys: s.shape.keys,
            elements: s.shape.elements,
            first_key: format!("{key_prefix}key:{:012}", s.first),
            seconds: s.seconds,
            dbsize_growth: s.dbsize_growth,
            errors: s.errors.as_ref().map_or(0, |e| e.0),
            encodings: s
                .encoding_shares()
                .into_iter()
                .zip(&s.encodings)
                .map(|((e, pct), (_, n))| Encoding { encoding: e.into(), keys: *n, percent: pct })
                .collect(),
            bytes_per_key: s.bytes_per_key(),
            bytes_per_element: s.bytes_per_element(),
            fragmentation: s.fragmentation,
            before: s.before.as_ref().map(|b| point(b, None)),
            growth: s.growth.iter().map(|p| point(p, s.before.as_ref())).collect(),
        })
        .collect();
    let grown: Option<f64> =
        built.shapes.iter().map(|s| Some(s.bytes_per_key()? * s.shape.keys as f64)).sum();
    let keys: u64 = built.shapes.iter().map(|s| s.shape.keys).sum();
    Dataset { bytes_per_key: grown.map(|g| g / keys.max(1) as f64), shapes }
}

/// The summary line of a shape: `10,000 hashes of 50 x 100 B: 6,412 B a key, 128 B a field;
/// fragmentation 1.09`.
pub fn summary(s: &ShapeBuilt) -> String {
    let shape = &s.shape;
    let size = format!("{} B", shape.size);
    let mut line = format!("{} {}", thousands(shape.keys), shape.kind.plural());
    match shape.kind {
        Kind::String => line += &format!(" of {size}"),
        Kind::Stream => {
            line += &format!(" of {} entries of {} x {size}", thousands(shape.elements), shape.fields)
        }
        _ => line += &format!(" of {} x {size}", thousands(shape.elements)),
    }
    match s.bytes_per_key() {
        Some(b) => {
            line += &format!(": {} B a key", thousands(b.max(0.0).round() as u64));
            if shape.kind != Kind::String {
                let e = s.bytes_per_element().unwrap_or(0.0).max(0.0).round() as u64;
                line += &format!(
                    ", {} B a{} {}",
                    thousands(e),
                    if shape.kind == Kind::Stream { "n" } else { "" },
                    shape.kind.element()
                );
            }
        }
        None => line += ": memory not read",
    }
    if let Some(f) = s.fragmentation {
        line += &format!("; fragmentation {f:.2}");
    }
    line
}

/// The encodings of a shape's sample: `hash: listpack 100%`.
pub fn encodings(s: &ShapeBuilt) -> String {
    let shares: Vec<String> = s.encoding_shares().iter().map(|(e, p)| format!("{e} {p:.0}%")).collect();
    let said = if shares.is_empty() { "not read".to_string() } else { shares.join(", ") };
    format!("{}: {said}", s.shape.kind.name())
}

/// The text: for each shape, what was built, its memory and its encodings.
pub fn write_text(built: &Built, out: &mut impl Write) -> io::Result<()> {
    for s in &built.shapes {
        writeln!(out, "--dataset-shape '{}': built in {:.2} s", s.shape, s.seconds)?;
        writeln!(out, "  {}", summary(s))?;
        writeln!(out, "  {}", encodings(s))?;
        if let Some((n, first)) = &s.errors {
            writeln!(out, "  {n} writes refused: {first}")?;
        }
    }
    Ok(())
}

/// A read test whose replies were mostly nil, unless `--miss-ok`: `GET: 90% of reads missed:
/// -r 100000 reads a keyspace of which --dataset-shape wrote 10000`, a line of its own (`-q`), or
/// a `"misses"` row (`--csv`).
pub fn write_misses(why: Option<&str>, t: &TestResult, csv: bool, out: &mut impl Write) -> io::Result<()> {
    let flagged = t.warnings.iter().any(|w| w.kind == WarningKind::NilReplies);
    let Some(why) = why.filter(|_| flagged) else {
        return Ok(());
    };
    let missed = (1.0 - t.stats.hit_share()) * 100.0;
    if csv {
        writeln!(out, "\"misses\",\"{}\",\"{missed:.1}\",\"{why}\"", t.name.replace('"', "\"\""))
    } else {
        let why = if why.is_empty() { String::new() } else { format!(": {why}") };
        writeln!(out, "{}: {missed:.0}% of reads missed{why}", t.name)
    }
}

/// The CSV's header of the dataset block.
pub const CSV_HEADER: &str =
    "\"dataset\",\"keys\",\"elements\",\"bytes_per_key\",\"bytes_per_element\",\"fragmentation\",\"encodings\"";

/// The CSV: a header and a row per shape.
pub fn write_csv(built: &Built, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    let figure = |v: Option<f64>, places: usize| v.map_or(String::new(), |v| format!("{v:.places$}"));
    for s in &built.shapes {
        let enc = encodings(s);
        let enc = enc.split_once(": ").map_or("", |(_, e)| e);
        writeln!(
            out,
            "\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",\"{enc}\"",
            s.shape,
            s.shape.keys,
            s.shape.elements,
            figure(s.bytes_per_key(), 1),
            figure(s.bytes_per_element(), 1),
            figure(s.fragmentation, 2),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use respbench_session::dataset::Shape;

    fn built() -> ShapeBuilt {
        let mem = |keys, used_memory| MemoryPoint { keys, used_memory, used_memory_dataset: 0, rss: 0 };
        ShapeBuilt {
            shape: Shape::parse("hash 10000 keys x 50 fields x 100B").unwrap(),
            first: 0,
            seconds: 1.0,
            dbsize_growth: Some(10000),
            errors: None,
            encodings: vec![("listpack".into(), 100)],
            before: Some(mem(0, 1_000_000)),
            growth: vec![mem(5000, 33_060_000), mem(10000, 65_120_000)],
            fragmentation: Some(1.09),
        }
    }

    #[test]
    fn says_the_shape_in_words() {
        let s = built();
        assert_eq!(
            summary(&s),
            "10,000 hashes of 50 x 100 B: 6,412 B a key, 128 B a field; fragmentation 1.09"
        );
        assert_eq!(encodings(&s), "hash: listpack 100%");
        let doc = to_json(&Built { shapes: vec![s] }, "");
        assert_eq!(doc.bytes_per_key, Some(6412.0));
        assert_eq!(doc.shapes[0].growth[0].bytes_per_key, Some(6412.0));
        assert_eq!(doc.shapes[0].first_key, "key:000000000000");
    }
}
