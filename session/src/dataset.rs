//! `--dataset-shape`: typed data described in plain words (`hash 10000 keys x 50 fields x
//! 100B`), built before the tests over the keys the tests read (`key:` and the number padded to
//! 12 digits, after `--key-prefix`), and what was built: its encodings and its memory as it grew
//! ([`Built`]). The description ([`Shape`]) is plain data, for a scenario file as for the
//! command line; the engine builds it (session/src/engine/build.rs).

use std::fmt;
use std::sync::Arc;

use respbench_core::dist::ValueSize;
use respbench_core::suite::TestSpec;
use respbench_core::template::{Arg, Template, Values};

/// The kinds of data a shape builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `SET key value`.
    String,
    /// `HSET key field:0 value field:1 value …`.
    Hash,
    /// `RPUSH key value value …`.
    List,
    /// `SADD key member:0 member:1 …`.
    Set,
    /// `ZADD key 0 member:0 1 member:1 …`.
    Zset,
    /// `XADD key * field:0 value …`, once per entry.
    Stream,
}

impl Kind {
    /// Its name in a description, as `TYPE` says it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::Zset => "zset",
            Kind::Stream => "stream",
        }
    }

    /// Its name for many keys (`hashes`).
    pub fn plural(self) -> &'static str {
        match self {
            Kind::String => "strings",
            Kind::Hash => "hashes",
            Kind::List => "lists",
            Kind::Set => "sets",
            Kind::Zset => "sorted sets",
            Kind::Stream => "streams",
        }
    }

    /// What one of its elements is called (`field`).
    pub fn element(self) -> &'static str {
        match self {
            Kind::String => "value",
            Kind::Hash => "field",
            Kind::List | Kind::Set | Kind::Zset => "member",
            Kind::Stream => "entry",
        }
    }

    /// The command that counts a key's elements (`HLEN`), none for a string.
    pub fn length_command(self) -> Option<&'static str> {
        match self {
            Kind::String => None,
            Kind::Hash => Some("HLEN"),
            Kind::List => Some("LLEN"),
            Kind::Set => Some("SCARD"),
            Kind::Zset => Some("ZCARD"),
            Kind::Stream => Some("XLEN"),
        }
    }

    fn parse(word: &str) -> Option<Kind> {
        Some(match word.to_ascii_lowercase().as_str() {
            "string" | "strings" => Kind::String,
            "hash" | "hashes" => Kind::Hash,
            "list" | "lists" => Kind::List,
            "set" | "sets" => Kind::Set,
            "zset" | "zsets" => Kind::Zset,
            "stream" | "streams" => Kind::Stream,
            _ => return None,
        })
    }

    /// The words that name its elements in a description.
    fn element_words(self) -> &'static [&'static str] {
        match self {
            Kind::String => &[],
            Kind::Hash => &["fields", "field"],
            Kind::List | Kind::Set | Kind::Zset => &["members", "member", "elements", "element"],
            Kind::Stream => &["entries", "entry"],
        }
    }
}

/// One `--dataset-shape`: `keys` keys of one kind, each of `elements` fields, members or
/// entries (1 for a string) of values of `size` bytes. Plain data: a scenario file can give it
/// field by field.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// The kind of data.
    pub kind: Kind,
    /// How many keys.
    pub keys: u64,
    /// Fields of a hash, members of a list, set or sorted set, entries of a stream (1 for a
    /// string).
    pub elements: u64,
    /// Fields of each stream entry (1 for the other kinds).
    pub fields: u64,
    /// Each value's size: a string's, a hash field's, a list member's, a stream field's; the
    /// length a set's or sorted set's member is padded to.
    pub size: ValueSize,
}

/// The most keys of all shapes together: the 12 digits of a key.
pub const MAX_KEYS: u64 = 1_000_000_000_000;
/// The most elements of one key.
pub const MAX_ELEMENTS: u64 = 100_000_000;
/// The most fields of a stream entry.
pub const MAX_FIELDS: u64 = 1_000;
/// The most bytes of values a run's shapes may write together: 1 TiB.
pub const MAX_BYTES: u64 = 1 << 40;
/// The most bytes one request carries: a shape with more per key writes it in several passes.
const REQUEST_BYTES: u64 = 4 << 20;
/// The most elements one request carries.
const REQUEST_ELEMENTS: u64 = 10_000;
/// The size when a description gives none: redis-benchmark's `-d`.
const DEFAULT_SIZE: usize = 3;

impl Shape {
    /// Parses a description: `KIND N keys [x M fields|members|entries [x F fields]] [x SIZE]`,
    /// SIZE as `-d` takes it with an optional `B` (`100B`, `16-1024B`, `64:3,1024:1`). An error
    /// names the option, the description, the word and what was expected there.
    pub fn parse(text: &str) -> Result<Shape, ShapeError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let err = |at: usize, expected: &str| ShapeError::Expected {
            text: text.to_string(),
            word: words.get(at).map(|w| (at + 1, w.to_string())),
            expected: expected.to_string(),
        };
        let kind = words
            .first()
            .and_then(|w| Kind::parse(w))
            .ok_or_else(|| err(0, "a kind: string, hash, list, set, zset or stream"))?;
        let count = |at: usize, most: u64, what: &str| -> Result<u64, ShapeError> {
            let n = words.get(at).and_then(|w| w.replace('_', "").parse::<u64>().ok());
            n.filter(|n| (1..=most).contains(n)).ok_or_else(|| err(at, &format!("{what}, 1 to {most}")))
        };
        let keys = count(1, MAX_KEYS, "the number of keys")?;
        if !matches!(words.get(2).map(|w| w.to_ascii_lowercase()).as_deref(), Some("keys" | "key")) {
            return Err(err(2, "\"keys\""));
        }
        let mut shape = Shape { kind, keys, elements: 1, fields: 1, size: ValueSize::Fixed(DEFAULT_SIZE) };
        let mut at = 3;
        let (mut counted, mut sized, mut fielded) = (false, false, false);
        while at < words.len() {
            if !matches!(words[at], "x" | "X" | "×" | "*") {
                return Err(err(at, "\"x\" before the next part"));
            }
            at += 1;
            let unit = words.get(at + 1).map(|w| w.to_ascii_lowercase());
            let names_elements = unit.as_deref().is_some_and(|u| kind.element_words().contains(&u));
            let names_fields =
                kind == Kind::Stream && counted && matches!(unit.as_deref(), Some("fields" | "field"));
            if names_elements && !counted && !sized {
                shape.elements =
                    count(at, MAX_ELEMENTS, &format!("the number of {}", kind.element_words()[0]))?;
                counted = true;
                at += 2;
            } else if names_fields && !fielded && !sized {
                shape.fields = count(at, MAX_FIELDS, "the number of fields of an entry")?;
                fielded = true;
                at += 2;
            } else if !sized {
                let w = words.get(at).copied().unwrap_or_default();
                let bare = w.strip_suffix(['B', 'b']).unwrap_or(w);
                let expected = match kind {
                    Kind::String => "a size in bytes (100B, 16-1024B)".to_string(),
                    _ if counted => "a size in bytes (100B, 16-1024B)".to_string(),
                    _ => format!("a number of {} or a size in bytes (100B)", kind.element_words()[0]),
                };
                if bare.is_empty() || !bare.starts_with(|c: char| c.is_ascii_digit()) {
                    return Err(err(at, &expected));
                }
                // `x 50 fieldz`: a count with a misspelt unit, not a size.
                let next = words.get(at + 1).filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic()));
                if kind != Kind::String && !counted && next.is_some() {
                    return Err(err(at + 1, &format!("{:?}", kind.element_words()[0])));
                }
                shape.size = ValueSize::parse(bare).map_err(|why| err(at, &format!("{expected}: {why}")))?;
                sized = true;
                at += 1;
            } else {
                return Err(err(at, "nothing more: the size is the last part"));
            }
        }
        if kind != Kind::String && !counted {
            return Err(err(words.len(), &format!("\"x N {}\"", kind.element_words()[0])));
        }
        shape.bytes().ok_or_else(|| ShapeError::TooLarge { text: text.to_string() })?;
        Ok(shape)
    }

    /// The bytes of values the shape writes (at the largest size), when at most [`MAX_BYTES`].
    pub fn bytes(&self) -> Option<u64> {
        let each = (self.size.max() as u64).checked_add(8)?;
        let total = self.keys.checked_mul(self.elements)?.checked_mul(self.fields)?.checked_mul(each)?;
        (total <= MAX_BYTES).then_some(total)
    }

    /// The elements one request writes (a stream: one entry).
    fn per_request(&self) -> u64 {
        if self.kind == Kind::Stream {
            return 1;
        }
        let each = (self.size.max() as u64 + 24).saturating_mul(self.fields).max(1);
        (REQUEST_BYTES / each).clamp(1, REQUEST_ELEMENTS).min(self.elements)
    }

    /// The requests each key takes in one pass (a stream's entries; 1 otherwise).
    pub fn requests_per_key(&self) -> u64 {
        if self.kind == Kind::Stream {
            self.elements
        } else {
            1
        }
    }

    /// The passes over the keys: the elements each writes, in order.
    pub fn passes(&self) -> Vec<std::ops::Range<u64>> {
        if self.kind == Kind::Stream {
            return std::iter::once(0..1).collect();
        }
        let step = self.per_request();
        (0..self.elements.div_ceil(step)).map(|p| p * step..((p + 1) * step).min(self.elements)).collect()
    }

    /// What a pass sends to each key (`key_prefix`: `--key-prefix`): its elements `range`
    /// (see [`Shape::passes`]).
    pub fn request(&self, key_prefix: &str, range: std::ops::Range<u64>, values: &Arc<Values>) -> TestSpec {
        let key = format!("{key_prefix}key:__rand_int__");
        let mut owned: Vec<Vec<u8>> = Vec::new();
        let command: &[u8] = match self.kind {
            Kind::String => b"SET",
            Kind::Hash => b"HSET",
            Kind::List => b"RPUSH",
            Kind::Set => b"SADD",
            Kind::Zset => b"ZADD",
            Kind::Stream => b"XADD",
        };
        let pad = self.size.max();
        let member = |i: u64| {
            let mut m = format!("member:{i}").into_bytes();
            if m.len() < pad {
                m.push(b':');
                m.resize(pad, b'x');
            }
            m
        };
        // Owned arguments first, then borrowed in order (`None`: a value).
        let mut shape: Vec<Option<usize>> = Vec::new();
        let mut push = |bytes: Vec<u8>, shape: &mut Vec<Option<usize>>| {
            owned.push(bytes);
            shape.push(Some(owned.len() - 1));
        };
        push(command.to_vec(), &mut shape);
        push(key.into_bytes(), &mut shape);
        match self.kind {
            Kind::String => shape.push(None),
            Kind::Hash => range.for_each(|i| {
                push(format!("field:{i}").into_bytes(), &mut shape);
                shape.push(None);
            }),
            Kind::List => range.for_each(|_| shape.push(None)),
            Kind::Set => range.for_each(|i| push(member(i), &mut shape)),
            Kind::Zset => range.for_each(|i| {
                push(i.to_string().into_bytes(), &mut shape);
                push(member(i), &mut shape);
            }),
            Kind::Stream => {
                push(b"*".to_vec(), &mut shape);
                for f in 0..self.fields {
                    push(format!("field:{f}").into_bytes(), &mut shape);
                    shape.push(None);
                }
            }
        }
        let args: Vec<Arg> = shape.iter().map(|s| s.map_or(Arg::Value, |k| Arg::Bytes(&owned[k]))).collect();
        let template = Template::with_values(&args, values);
        TestSpec {
            title: format!("--dataset-shape '{self}'"),
            payload_bytes: template.len(),
            template,
            connection_per_request: false,
        }
    }
}

impl fmt::Display for Shape {
    /// The description, in the words [`Shape::parse`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} keys", self.kind.name(), self.keys)?;
        if self.kind != Kind::String {
            write!(f, " x {} {}", self.elements, self.kind.element_words()[0])?;
        }
        if self.kind == Kind::Stream && self.fields != 1 {
            write!(f, " x {} fields", self.fields)?;
        }
        write!(f, " x {}B", self.size)
    }
}

/// Why `--dataset-shape` is refused: a description (naming the option, the description, the
/// word and what was expected there), or the shapes of a run together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// A word, or the end, where something else was expected.
    Expected {
        /// The description as given.
        text: String,
        /// The word's place (from 1) and the word; `None` at the end.
        word: Option<(usize, String)>,
        /// What was expected there.
        expected: String,
    },
    /// The shape would write more than [`MAX_BYTES`] of values.
    TooLarge {
        /// The description as given.
        text: String,
    },
    /// The shapes together have more than [`MAX_KEYS`] keys.
    KeysInAll,
    /// The shapes together would write more than [`MAX_BYTES`] of values.
    BytesInAll,
    /// `--dataset-only` without a shape to build.
    NothingToBuild,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::Expected { text, word: Some((n, w)), expected } => {
                write!(f, "--dataset-shape {text:?}: at word {n} ({w:?}): expected {expected}")
            }
            ShapeError::Expected { text, word: None, expected } => {
                write!(f, "--dataset-shape {text:?}: at the end: expected {expected}")
            }
            ShapeError::TooLarge { text } => {
                write!(f, "--dataset-shape {text:?}: would write more than {} GiB of values", MAX_BYTES >> 30)
            }
            ShapeError::KeysInAll => write!(f, "--dataset-shape: more than {MAX_KEYS} keys in all"),
            ShapeError::BytesInAll => {
                write!(f, "--dataset-shape: more than {} GiB of values in all", MAX_BYTES >> 30)
            }
            ShapeError::NothingToBuild => f.write_str("--dataset-only needs a --dataset-shape to build"),
        }
    }
}

impl std::error::Error for ShapeError {}

/// Checks the shapes of a run together: their keys fit in the 12 digits, their bytes in
/// [`MAX_BYTES`]; `--dataset-only` (`only`) has shapes to build.
pub fn check(shapes: &[Shape], only: bool) -> Result<(), ShapeError> {
    if only && shapes.is_empty() {
        return Err(ShapeError::NothingToBuild);
    }
    let keys = shapes.iter().try_fold(0u64, |a, s| a.checked_add(s.keys)).filter(|&k| k <= MAX_KEYS);
    if keys.is_none() {
        return Err(ShapeError::KeysInAll);
    }
    let bytes = shapes.iter().try_fold(0u64, |a, s| a.checked_add(s.bytes()?)).filter(|&b| b <= MAX_BYTES);
    if bytes.is_none() {
        return Err(ShapeError::BytesInAll);
    }
    Ok(())
}

/// Why a read test likely missed: `-r` (`keyspace`) reads a keyspace larger than the
/// `--dataset-shape` keys (`shapes`); `None` when nothing says (no `-r`, no shape, or shapes
/// covering it).
pub fn miss_why(keyspace: Option<u64>, shapes: &[Shape]) -> Option<String> {
    let r = keyspace?;
    let wrote: u64 = shapes.iter().map(|s| s.keys).sum();
    (wrote > 0 && wrote < r)
        .then(|| format!("-r {r} reads a keyspace of which --dataset-shape wrote {wrote}"))
}

/// One reading of the server's memory while a shape was built.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPoint {
    /// Keys of the shape written so far.
    pub keys: u64,
    /// `used_memory` (summed over a cluster's primaries).
    pub used_memory: u64,
    /// `used_memory_dataset`.
    pub used_memory_dataset: u64,
    /// `used_memory_rss`.
    pub rss: u64,
}

/// What building one shape did.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeBuilt {
    /// The shape.
    pub shape: Shape,
    /// The first key's number.
    pub first: u64,
    /// Seconds the build took.
    pub seconds: f64,
    /// How much `DBSIZE` grew (summed over a cluster's primaries), when read.
    pub dbsize_growth: Option<u64>,
    /// Writes the server refused, and the first refusal.
    pub errors: Option<(u64, String)>,
    /// `OBJECT ENCODING` of a sample of keys: each encoding and how many said it.
    pub encodings: Vec<(String, u64)>,
    /// The memory before the first key, when read.
    pub before: Option<MemoryPoint>,
    /// The memory as the keys were written, the last after every key.
    pub growth: Vec<MemoryPoint>,
    /// `mem_fragmentation_ratio` at the end (one server).
    pub fragmentation: Option<f64>,
}

impl ShapeBuilt {
    /// `used_memory`'s growth over the keys written, per key, at the end.
    pub fn bytes_per_key(&self) -> Option<f64> {
        let (before, last) = (self.before.as_ref()?, self.growth.last()?);
        Some((last.used_memory as f64 - before.used_memory as f64) / last.keys.max(1) as f64)
    }

    /// [`ShapeBuilt::bytes_per_key`] per element (field, member, entry).
    pub fn bytes_per_element(&self) -> Option<f64> {
        Some(self.bytes_per_key()? / self.shape.elements.max(1) as f64)
    }

    /// Each encoding's share of the sample, in percent.
    pub fn encoding_shares(&self) -> Vec<(&str, f64)> {
        let total: u64 = self.encodings.iter().map(|(_, n)| n).sum();
        self.encodings.iter().map(|(e, n)| (e.as_str(), *n as f64 * 100.0 / total.max(1) as f64)).collect()
    }
}

/// What `--dataset-shape` built, shape by shape.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Built {
    /// Each shape in the order given.
    pub shapes: Vec<ShapeBuilt>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_descriptions() {
        let h = Shape::parse("hash 10000 keys x 50 fields x 100B").unwrap();
        assert_eq!(
            (h.kind, h.keys, h.elements, h.fields, h.size.clone()),
            (Kind::Hash, 10000, 50, 1, ValueSize::Fixed(100))
        );
        let s = Shape::parse("string 10000 keys x 16-1024B").unwrap();
        assert_eq!(s.size, ValueSize::Range { lo: 16, hi: 1024 });
        assert_eq!(s.elements, 1);
        let x = Shape::parse("stream 10 keys x 100 entries x 3 fields x 8B").unwrap();
        assert_eq!((x.elements, x.fields), (100, 3));
        let z = Shape::parse("zset 5 keys × 200 members").unwrap();
        assert_eq!((z.elements, z.size.max()), (200, DEFAULT_SIZE));
        assert_eq!(Shape::parse(&h.to_string()).unwrap(), h);
    }

    #[test]
    fn shapes_are_bounded_together() {
        let s = Shape::parse("string 100000000000 keys x 1B").unwrap();
        assert_eq!(check(std::slice::from_ref(&s), true), Ok(()));
        let e = check(&[s.clone(), s.clone()], false).unwrap_err();
        assert_eq!(e.to_string(), "--dataset-shape: more than 1024 GiB of values in all");
        let e = check(&vec![s; 11], false).unwrap_err();
        assert_eq!(e.to_string(), "--dataset-shape: more than 1000000000000 keys in all");
        let e = check(&[], true).unwrap_err();
        assert_eq!(e.to_string(), "--dataset-only needs a --dataset-shape to build");
        assert_eq!(check(&[], false), Ok(()));
    }

    #[test]
    fn errors_name_the_word_and_what_was_expected() {
        let e = Shape::parse("hash 10000 kez x 50 fields").unwrap_err().to_string();
        assert!(
            e.contains("--dataset-shape") && e.contains("word 3 (\"kez\")") && e.contains("\"keys\""),
            "{e}"
        );
        let e = Shape::parse("hash 10000 keys").unwrap_err().to_string();
        assert!(e.contains("at the end") && e.contains("x N fields"), "{e}");
        let e = Shape::parse("tree 1 keys").unwrap_err().to_string();
        assert!(e.contains("word 1") && e.contains("a kind"), "{e}");
        let e = Shape::parse("string 0 keys").unwrap_err().to_string();
        assert!(e.contains("1 to"), "{e}");
        let e = Shape::parse("hash 1000000000 keys x 100000 fields x 1000B").unwrap_err().to_string();
        assert!(e.contains("more than 1024 GiB"), "{e}");
        let e = Shape::parse("string 10 keys x 10B x 5").unwrap_err().to_string();
        assert!(e.contains("nothing more"), "{e}");
    }

    #[test]
    fn requests_carry_the_elements_in_passes() {
        let h = Shape::parse("hash 2 keys x 3 fields x 2B").unwrap();
        let values = Values::new(&h.size);
        let spec = h.request("", 0..3, &values);
        let text = String::from_utf8_lossy(&spec.template.display()).into_owned();
        assert!(text.starts_with("*8\r\n$4\r\nHSET\r\n$16\r\nkey:__rand_int__\r\n$7\r\nfield:0"), "{text}");
        assert_eq!(h.passes(), vec![0..3]);
        let big = Shape::parse("list 1 keys x 25000 members x 1B").unwrap();
        assert_eq!(big.passes(), vec![0..10000, 10000..20000, 20000..25000]);
        let x = Shape::parse("stream 4 keys x 7 entries").unwrap();
        assert_eq!((x.passes(), x.requests_per_key()), (std::iter::once(0..1).collect::<Vec<_>>(), 7));
    }
}
