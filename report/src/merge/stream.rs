//! `respbench merge` in bounded memory, as `plot` reads: each document is streamed from its
//! file twice and no document is held whole. The first pass reads every test's entry and keeps
//! only what tells merged tests apart and what the checks of parts and repeats compare (names
//! and node addresses); the second merges one test at a time (its histograms read and checked
//! then: a test that cannot be read stops the merge there, with the lines of those before it),
//! pulling that test's entries from a reader thread per document, writes its `-q` line and its
//! entry of the merged document, and lets it go. Documents whose tests come in the same order
//! (the parts and repeats of one run) hold nothing more; an entry met before its turn waits in
//! its document's queue.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::sync::mpsc::{sync_channel, Receiver};

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use respbench_session::result::TestResult;

use super::{part_of, Key, Listed};
use crate::doc::{self, Document};
use crate::error::Error;
use crate::{codec, convert, json};

/// Where a document is in its file: from `start`, the whole rest of the file (`whole`), or one
/// JSON value followed by other lines (a pod's log).
#[derive(Clone, Copy)]
pub(super) struct At {
    start: u64,
    whole: bool,
}

/// Why a document was not read: not JSON there (another place may hold it), a JSON object
/// without a `schema` (likewise), or a document that is wrong (the message says how).
enum Failure {
    NotJson(String),
    NoSchema,
    Bad(String),
}

/// Streams the document at `at` in `path`, handing each test to `each` as it is read and
/// keeping none: the document's other fields come back, its `tests` empty.
fn stream(
    path: &str,
    at: At,
    each: &mut dyn FnMut(doc::Test) -> Result<(), Error>,
) -> Result<Document, Failure> {
    let mut file = File::open(path).map_err(|e| Failure::Bad(format!("cannot read {path}: {e}")))?;
    file.seek(SeekFrom::Start(at.start)).map_err(|e| Failure::Bad(format!("cannot read {path}: {e}")))?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 16, file));
    let saw_schema = Cell::new(false);
    let read = Whole { each, saw_schema: &saw_schema }.deserialize(&mut de);
    let read = read.and_then(|d| if at.whole { de.end().map(|()| d) } else { Ok(d) });
    read.map_err(|e| match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            Failure::NotJson(format!("{path} is not JSON: {e}"))
        }
        _ if !saw_schema.get() => Failure::NoSchema,
        _ => Failure::Bad(format!("{path}: {e}")),
    })
}

/// A document: its fields but `tests` kept as values (then read as a [`Document`]), its tests
/// handed one by one to `each`.
struct Whole<'a> {
    each: &'a mut dyn FnMut(doc::Test) -> Result<(), Error>,
    saw_schema: &'a Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Whole<'_> {
    type Value = Document;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Document, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Whole<'_> {
    type Value = Document;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a respbench --json document (an object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut rest = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "tests" {
                map.next_value_seed(Tests(&mut *self.each))?;
                continue;
            }
            let value: Value = map.next_value()?;
            if key == "schema" {
                // Refused as it is met, before a test of another schema is read.
                self.saw_schema.set(true);
                let s = value.as_str();
                if !s.is_some_and(|s| s == codec::SCHEMA || codec::READS_ALSO.contains(&s)) {
                    return Err(A::Error::custom(codec::schema_refused(s)));
                }
            }
            rest.insert(key, value);
        }
        if !self.saw_schema.get() {
            return Err(A::Error::custom(codec::schema_refused(None)));
        }
        rest.insert("tests".into(), Value::Array(Vec::new()));
        json::document_of(Value::Object(rest)).map_err(A::Error::custom)
    }
}

/// The `tests` array, each test handed on as it is read.
struct Tests<'a>(&'a mut dyn FnMut(doc::Test) -> Result<(), Error>);

impl<'de> DeserializeSeed<'de> for Tests<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Tests<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of tests")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(t) = seq.next_element::<doc::Test>()? {
            (self.0)(t).map_err(A::Error::custom)?;
        }
        Ok(())
    }
}

/// The offsets of the lines of `path` that hold only `{` (trailing blanks allowed), where a
/// document written by `--json -` begins in a pod's log; read in bounded memory.
fn brace_lines(path: &str) -> io::Result<Vec<u64>> {
    let mut r = BufReader::with_capacity(1 << 16, File::open(path)?);
    let (mut at, mut found) = (0u64, Vec::new());
    // The state of the current line: at its start, after its `{` (blanks only since), or other.
    let (mut start, mut candidate, mut other) = (0u64, false, false);
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        for (i, &b) in buf.iter().enumerate() {
            let pos = at + i as u64;
            if b == b'\n' {
                if candidate && !other {
                    found.push(start);
                }
                (start, candidate, other) = (pos + 1, false, false);
            } else if pos == start && b == b'{' {
                candidate = true;
            } else if !(candidate && b.is_ascii_whitespace()) {
                other = true;
            }
        }
        let n = buf.len();
        at += n as u64;
        r.consume(n);
    }
    if candidate && !other {
        found.push(start);
    }
    Ok(found)
}

/// What the first pass keeps of a document.
pub(super) struct Scanned {
    /// Where it is in its file.
    pub at: At,
    /// Its fields but its tests (taken by the caller for the checks).
    pub doc: Document,
    /// Each test's key, in the document's order.
    pub keys: Vec<Key>,
    /// What the check of repeats compares of its tests.
    pub listed: Listed,
}

/// The first pass over the document in `path`: the whole file, or else the first document
/// among its lines (as [`super::read_document`] finds it).
pub(super) fn scan(path: &str) -> Result<Scanned, Error> {
    let first = scan_at(path, At { start: 0, whole: true });
    let whole = match first {
        Ok(s) => return Ok(s),
        Err(Failure::Bad(e)) => return Err(Error::Document(e)),
        Err(Failure::NoSchema) => format!("{path}: {}", codec::schema_refused(None)),
        Err(Failure::NotJson(e)) => e,
    };
    let lines = brace_lines(path).map_err(|e| Error::Document(format!("cannot read {path}: {e}")))?;
    for start in lines {
        match scan_at(path, At { start, whole: false }) {
            Ok(s) => return Ok(s),
            Err(Failure::Bad(e)) => return Err(Error::Document(e)),
            Err(Failure::NotJson(_) | Failure::NoSchema) => {}
        }
    }
    Err(Error::Document(whole))
}

fn scan_at(path: &str, at: At) -> Result<Scanned, Failure> {
    let (mut keys, mut listed) = (Vec::new(), Listed::default());
    let mut each = |t: doc::Test| {
        keys.push(convert::read_key(&t));
        listed.add(&t);
        Ok(())
    };
    let doc = stream(path, at, &mut each)?;
    Ok(Scanned { at, doc, keys, listed })
}

/// The merged tests' keys, in order of first appearance through the documents.
pub(super) fn order_of(scanned: &[Scanned]) -> Vec<Key> {
    let mut order: Vec<Key> = Vec::new();
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for k in scanned.iter().flat_map(|s| &s.keys) {
        let same = by_name.entry(k.0.as_str()).or_default();
        if !same.iter().any(|&i| order[i] == *k) {
            same.push(order.len());
            order.push(k.clone());
        }
    }
    order
}

/// Where a key is in `order`: by name first (a map), then among the few of that name.
fn places_of(order: &[Key]) -> impl Fn(&Key) -> Option<usize> + '_ {
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, k) in order.iter().enumerate() {
        by_name.entry(k.0.as_str()).or_default().push(i);
    }
    move |k| by_name.get(k.0.as_str())?.iter().copied().find(|&i| order[i] == *k)
}

/// The second pass's reader of one document: its tests in order, from a thread that streams
/// them, and those read before their turn.
struct Reader {
    tests: Receiver<Result<doc::Test, Error>>,
    /// Each test's place in the merged order, in the document's order, and how far it is read.
    order: Vec<usize>,
    next: usize,
    early: VecDeque<(usize, doc::Test)>,
}

impl Reader {
    /// The document's next test of merged place `want`.
    fn take(&mut self, want: usize) -> Result<doc::Test, Error> {
        if let Some(k) = self.early.iter().position(|(p, _)| *p == want) {
            return Ok(self.early.remove(k).map(|(_, t)| t).unwrap_or_default());
        }
        loop {
            let changed = || Error::Document("the document changed while it was merged".into());
            let t = self.tests.recv().map_err(|_| changed())??;
            let place = self.order.get(self.next).copied().ok_or_else(changed)?;
            self.next += 1;
            if place == want {
                return Ok(t);
            }
            self.early.push_back((place, t));
        }
    }
}

/// The merge's second pass: each merged test (`order`, with each document's tests' places in
/// it) in turn, handed to `each` with its events (each marked with its part).
pub(super) fn merge_each(
    files: &[String],
    scanned: &[Scanned],
    docs: &[Document],
    order: &[Key],
    mut each: impl FnMut(TestResult, Vec<doc::EventEntry>) -> Result<(), Error>,
) -> Result<(), Error> {
    let place = places_of(order);
    let places: Vec<Vec<usize>> =
        scanned.iter().map(|s| s.keys.iter().map(|k| place(k).unwrap_or(usize::MAX)).collect()).collect();
    // How many tests each document has at each merged place.
    let mut counts = vec![Vec::new(); order.len()];
    for (d, p) in places.iter().enumerate() {
        for &place in p {
            match counts[place].last_mut() {
                Some((at, n)) if *at == d => *n += 1,
                _ => counts[place].push((d, 1usize)),
            }
        }
    }
    std::thread::scope(|scope| {
        let mut readers = Vec::new();
        for ((path, s), order) in files.iter().zip(scanned).zip(places) {
            let (tx, rx) = sync_channel(2);
            let at = s.at;
            scope.spawn(move || {
                let mut send =
                    |t: doc::Test| tx.send(Ok(t)).map_err(|_| Error::Refused("the merge stopped".into()));
                if let Err(Failure::Bad(e) | Failure::NotJson(e)) = stream(path, at, &mut send) {
                    let _ = tx.send(Err(Error::Document(e)));
                }
            });
            readers.push(Reader { tests: rx, order, next: 0, early: VecDeque::new() });
        }
        for (place, holders) in counts.iter().enumerate() {
            let mut merged: Option<TestResult> = None;
            let mut events = Vec::new();
            for &(d, n) in holders {
                let part = part_of(&docs[d]).map_or(d as u64, |(index, _)| index);
                for _ in 0..n {
                    let bad = |e: &dyn std::fmt::Display| Error::Document(format!("{}: {e}", files[d]));
                    let t = readers[d].take(place).map_err(|e| bad(&e))?;
                    let e = convert::read_test(&t).map_err(|e| bad(&e))?;
                    match &mut merged {
                        Some(acc) => acc.merge(e).map_err(|e| bad(&e))?,
                        None => merged = Some(e),
                    }
                    events.extend(
                        t.events.into_iter().flatten().map(|ev| doc::EventEntry { part: Some(part), ..ev }),
                    );
                }
            }
            if let Some(m) = merged {
                each(m, events)?;
            }
        }
        // Dropping the readers ends their threads (a send to nobody fails).
        drop(readers);
        Ok(())
    })
}

/// The merged document written as it comes: `head` is the document without tests, each test
/// is added with [`JsonOut::test`], and [`JsonOut::end`] closes it, byte for byte as
/// [`Document::to_text`] writes the whole.
pub(super) struct JsonOut {
    tail: String,
    written: usize,
    /// `--json`'s value, for its errors.
    path: String,
}

impl JsonOut {
    /// Writes `head`'s text up to its `tests`; `path` is `--json`'s value.
    pub fn begin(head: &Document, path: &str, out: &mut dyn Write) -> Result<JsonOut, Error> {
        let text = head.to_text()?;
        let mark = "\n  \"tests\": []";
        let at =
            text.find(mark).ok_or_else(|| Error::Encode("cannot encode the JSON: no tests field".into()))?;
        let j = JsonOut { tail: text[at + mark.len()..].to_string(), written: 0, path: path.to_string() };
        out.write_all(&text.as_bytes()[..at]).map_err(|e| j.failed(e))?;
        write!(out, "\n  \"tests\": [").map_err(|e| j.failed(e))?;
        Ok(j)
    }

    fn failed(&self, e: io::Error) -> Error {
        Error::json(&self.path, e)
    }

    /// Writes one test's entry.
    pub fn test(&mut self, t: &doc::Test, out: &mut dyn Write) -> Result<(), Error> {
        let encode = |e: serde_json::Error| Error::Encode(format!("cannot encode the JSON: {e}"));
        let text = serde_json::to_string_pretty(&serde_json::to_value(t).map_err(encode)?).map_err(encode)?;
        out.write_all(if self.written == 0 { b"\n" } else { b",\n" }).map_err(|e| self.failed(e))?;
        for (i, line) in text.lines().enumerate() {
            let sep = if i == 0 { "    " } else { "\n    " };
            write!(out, "{sep}{line}").map_err(|e| self.failed(e))?;
        }
        self.written += 1;
        Ok(())
    }

    /// Closes `tests` and writes the rest of the document.
    pub fn end(self, out: &mut dyn Write) -> Result<(), Error> {
        let close = if self.written == 0 { "]" } else { "\n  ]" };
        write!(out, "{close}{}", self.tail).and_then(|()| out.flush()).map_err(|e| self.failed(e))
    }
}
