//! valkey-benchmark 9's `--dataset FILE`: rows of a CSV or TSV file whose header names the
//! fields (or the documents of an XML file), filling `__field:NAME__` placeholders of a custom
//! command, one row per request.
//!
//! The rows are parsed once into one byte buffer, shared by every connection of the test; a
//! request copies its row's cells into the encoded request ([`crate::template::Template::write`]),
//! so nothing is allocated per request, except a cell of at least [`crate::wire::SPLICE_FROM`]
//! bytes, which a connection's output takes by reference to the one buffer, as it does `-d`'s
//! large values: `-c 50` holds one copy of a 100 MB field, not fifty.
//! The rows are taken in turn by every client of the run together, cycling from the first
//! again after the last, so `-n 6` over three rows uses each twice.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// The start of a field placeholder: `__field:NAME__`.
pub const FIELD_PREFIX: &[u8] = b"__field:";
/// The end of a field placeholder.
pub const FIELD_SUFFIX: &[u8] = b"__";

/// The rows of a dataset file and the turn of the next request.
pub struct Dataset {
    /// The header's field names, in column order.
    names: Vec<String>,
    /// Every cell's bytes, row after row.
    data: Vec<u8>,
    /// The cells of each row (`names.len()` of them), row-major, as ranges of `data`.
    cells: Vec<Range<usize>>,
    /// The requests that took a row so far (the next takes row `next % rows`).
    next: AtomicU64,
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dataset({} fields, {} rows)", self.names.len(), self.rows())
    }
}

impl PartialEq for Dataset {
    fn eq(&self, other: &Dataset) -> bool {
        self.names == other.names && self.data == other.data && self.cells == other.cells
    }
}

impl Eq for Dataset {}

/// The field separator of a dataset file: a tab when the name says `.tsv`, else a comma (as
/// valkey-benchmark 9 decides).
pub fn delimiter_for(path: &str) -> u8 {
    if path.to_ascii_lowercase().contains(".tsv") {
        b'\t'
    } else {
        b','
    }
}

/// Splits one line into its fields. A field that starts with `"` is quoted: it ends at the next
/// lone `"`, a doubled `""` in it stands for one `"`, and the delimiter inside it is text.
fn split_line(line: &str, delimiter: u8, out: &mut Vec<Vec<u8>>) -> Result<(), String> {
    out.clear();
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        let mut field = Vec::new();
        if bytes.get(i) == Some(&b'"') {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err("a quoted field has no closing quote".into()),
                    Some(b'"') if bytes.get(i + 1) == Some(&b'"') => {
                        field.push(b'"');
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        field.push(c);
                        i += 1;
                    }
                }
            }
            match bytes.get(i) {
                None => {}
                Some(&c) if c == delimiter => {}
                Some(_) => return Err("text follows a quoted field's closing quote".into()),
            }
        } else {
            while let Some(&c) = bytes.get(i) {
                if c == delimiter {
                    break;
                }
                field.push(c);
                i += 1;
            }
        }
        out.push(field);
        if i >= bytes.len() {
            return Ok(());
        }
        i += 1; // the delimiter
    }
}

/// Where the start of a dataset file that holds its header and `max_rows` rows ends (of a CSV
/// or TSV: the line ending the last of them; of an XML file with `xml_root`: the last
/// document's closing tag), so that `--maxdocs` reads no further; `None` while `text` does not
/// hold them all yet, or when `max_rows` is 0 (all). Rows are counted as [`Dataset::parse`] and
/// [`Dataset::parse_xml`] read them.
pub fn rows_end(text: &[u8], xml_root: Option<&str>, max_rows: usize) -> Option<usize> {
    if max_rows == 0 {
        return None;
    }
    if let Some(root) = xml_root {
        let find = |needle: &[u8], from: usize| {
            text.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|i| i + from)
        };
        let (open, end_tag) = (format!("<{root}"), format!("</{root}>"));
        let mut at = 0;
        for _ in 0..max_rows {
            let start = find(open.as_bytes(), at)?;
            let gt = find(b">", start + 1)?;
            at = find(end_tag.as_bytes(), gt)? + end_tag.len();
        }
        return Some(at);
    }
    // The header is a line too; empty lines are not rows.
    let mut lines = 0usize;
    let mut from = 0;
    for (i, _) in text.iter().enumerate().filter(|(_, &b)| b == b'\n') {
        let line = &text[from..i];
        if !line.strip_suffix(b"\r").unwrap_or(line).is_empty() {
            lines += 1;
            if lines > max_rows {
                return Some(i + 1);
            }
        }
        from = i + 1;
    }
    None
}

impl Dataset {
    /// Parses `text`, the contents of `path`: a header row naming the fields, then one row per
    /// line (empty lines are skipped, `\r\n` ends a line too). As in valkey-benchmark 9, a row
    /// with fewer fields than the header has the missing ones empty, and fields past the
    /// header's are ignored. At most `max_rows` rows are read when it is not 0 (`--maxdocs`);
    /// lines after those are not looked at. `delimiter` is `,` or a tab ([`delimiter_for`]).
    ///
    /// Errors name the file and line: a file that is not UTF-8, is empty, has no row after the
    /// header, or a quoted field that does not close.
    pub fn parse(path: &str, text: &[u8], delimiter: u8, max_rows: usize) -> Result<Dataset, String> {
        let mut names = Vec::new();
        let mut data = Vec::new();
        let mut cells = Vec::new();
        let mut fields = Vec::new();
        let mut rows = 0usize;
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            if max_rows != 0 && rows >= max_rows {
                break;
            }
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = std::str::from_utf8(line)
                .map_err(|_| format!("--dataset {path}: line {} is not UTF-8", n + 1))?;
            if line.is_empty() {
                continue;
            }
            split_line(line, delimiter, &mut fields)
                .map_err(|e| format!("--dataset {path}: line {}: {e}", n + 1))?;
            if names.is_empty() {
                names = fields.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect();
                continue;
            }
            // A ragged row: missing fields are empty, extra ones are dropped.
            fields.resize(names.len(), Vec::new());
            for f in &fields {
                cells.push(data.len()..data.len() + f.len());
                data.extend_from_slice(f);
            }
            rows += 1;
        }
        if names.is_empty() {
            return Err(format!(
                "--dataset {path}: the file is empty (it needs a header row naming the fields)"
            ));
        }
        if rows == 0 {
            return Err(format!("--dataset {path}: the file has a header but no rows"));
        }
        Ok(Dataset { names, data, cells, next: AtomicU64::new(0) })
    }

    /// Parses `text`, the contents of the XML file `path`, as valkey-benchmark 9 reads one with
    /// `--xml-root-element ROOT`: a document runs from each `<ROOT` to the next `</ROOT>`; the
    /// fields are the tags met in the first document (but `<ROOT>`, closing tags and `<!…>`),
    /// named up to a space, a tab or the `>`, each once, in order; a field's value in a
    /// document is the text between the first tag starting `<NAME` and the next `</NAME>`
    /// after it (empty when there is none, or when that tag ends `/>`), as it is, with no
    /// entity decoded. At most `max_rows` documents are read when it is not 0 (`--maxdocs`).
    pub fn parse_xml(path: &str, text: &[u8], root: &str, max_rows: usize) -> Result<Dataset, String> {
        let open = format!("<{root}");
        let (start_tag, end_tag) = (format!("<{root}>"), format!("</{root}>"));
        let find = |hay: &[u8], needle: &[u8], from: usize| {
            hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|i| i + from)
        };
        let mut docs = Vec::new();
        let mut at = 0;
        while max_rows == 0 || docs.len() < max_rows {
            let Some(start) = find(text, open.as_bytes(), at) else { break };
            let Some(gt) = find(text, b">", start + 1) else { break };
            let Some(end) = find(text, end_tag.as_bytes(), gt) else { break };
            let end = end + end_tag.len();
            docs.push(&text[start..end]);
            at = end;
        }
        let Some(first) = docs.first() else {
            return Err(format!("--dataset {path}: no <{root}> document in the file (--xml-root-element)"));
        };
        let mut names: Vec<String> = Vec::new();
        let mut i = 0;
        while let Some(lt) = find(first, b"<", i) {
            let tag = &first[lt..];
            if matches!(tag.get(1), Some(b'/' | b'!'))
                || tag.starts_with(start_tag.as_bytes())
                || tag.starts_with(end_tag.as_bytes())
            {
                i = lt + 1;
                continue;
            }
            let Some(gt) = find(first, b">", lt) else { break };
            let inner = &first[lt + 1..gt];
            let name = &inner[..inner.iter().position(|&c| c == b' ' || c == b'\t').unwrap_or(inner.len())];
            let name = String::from_utf8_lossy(name).into_owned();
            if !name.is_empty() && !names.contains(&name) {
                names.push(name);
            }
            i = gt + 1;
        }
        if names.is_empty() {
            return Err(format!("--dataset {path}: the first <{root}> document has no fields"));
        }
        let mut data = Vec::new();
        let mut cells = Vec::new();
        for doc in &docs {
            for name in &names {
                let value = (|| {
                    let start = find(doc, format!("<{name}").as_bytes(), 0)?;
                    let gt = find(doc, b">", start)?;
                    if doc[gt - 1] == b'/' {
                        return None;
                    }
                    let close = find(doc, format!("</{name}>").as_bytes(), gt + 1)?;
                    Some(&doc[gt + 1..close])
                })()
                .unwrap_or(b"");
                cells.push(data.len()..data.len() + value.len());
                data.extend_from_slice(value);
            }
        }
        Ok(Dataset { names, data, cells, next: AtomicU64::new(0) })
    }

    /// A dataset of these fields, whose cells (row after row, `names.len()` a row) are
    /// ranges of `data`: what another file format's reader gives
    /// ([`crate::memtier_import::parse`]).
    pub fn from_parts(names: Vec<String>, data: Vec<u8>, cells: Vec<Range<usize>>) -> Dataset {
        Dataset { names, data, cells, next: AtomicU64::new(0) }
    }

    /// The header's field names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// How many rows were read.
    pub fn rows(&self) -> usize {
        self.cells.len() / self.names.len().max(1)
    }

    /// The column of the field `name`, if the header has it.
    pub fn column(&self, name: &[u8]) -> Option<usize> {
        self.names.iter().position(|n| n.as_bytes() == name)
    }

    /// The row the next request takes, in turn over every request of the run.
    #[inline]
    pub fn next_row(&self) -> usize {
        (self.next.fetch_add(1, Ordering::Relaxed) % self.rows() as u64) as usize
    }

    /// The bytes of `column` in `row`.
    #[inline]
    pub fn cell(&self, row: usize, column: usize) -> &[u8] {
        self.bytes(self.cell_range(row, column))
    }

    /// Where the bytes of `column` in `row` are in the dataset's one buffer (empty when there
    /// is no such cell): what a connection's output takes by reference ([`crate::wire::Wire`]).
    #[inline]
    pub fn cell_range(&self, row: usize, column: usize) -> Range<usize> {
        row.checked_mul(self.names.len())
            .and_then(|i| i.checked_add(column))
            .and_then(|i| self.cells.get(i))
            .map_or(0..0, Range::clone)
    }

    /// The bytes of `range` of the dataset's one buffer ([`Dataset::cell_range`]); what of it
    /// lies past the buffer is left out.
    #[inline]
    pub fn bytes(&self, range: Range<usize>) -> &[u8] {
        let end = range.end.min(self.data.len());
        self.data.get(range.start.min(end)..end).unwrap_or(&[])
    }
}

/// One piece of an argument with field placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// These bytes, as they are.
    Text(Vec<u8>),
    /// The cell of this column in the request's row.
    Field(usize),
    /// The cell of this column in the request's row, decoded from base64
    /// (`__field:NAME:base64__`).
    Base64(usize),
}

/// The suffix of a field placeholder's name that decodes the field from base64.
const BASE64_SUFFIX: &[u8] = b":base64";

/// The value of a base64 digit (the standard alphabet), `None` for any other byte.
fn digit(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Appends `input` decoded from base64 to `out`, as valkey-benchmark 9 decodes a
/// `__field:NAME:base64__`: a length that is a multiple of 4, `=` padding only at the end
/// (one or two), no other byte outside the standard alphabet, and canonical padding bits; an
/// empty input is empty. On an error `out` is as it was.
pub fn base64_decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    if !input.len().is_multiple_of(4) {
        return Err(format!("its length {} is not a multiple of 4", input.len()));
    }
    let start = out.len();
    let padding = input.iter().rev().take(2).take_while(|&&c| c == b'=').count();
    let chunks = input.len() / 4;
    for (i, quad) in input.chunks_exact(4).enumerate() {
        let last = i + 1 == chunks;
        let mut v = 0u32;
        for (k, &c) in quad.iter().enumerate() {
            let d = if c == b'=' && last && k >= 4 - padding {
                0
            } else if let Some(d) = digit(c) {
                d
            } else {
                out.truncate(start);
                return Err(if c == b'=' {
                    "a misplaced '=' padding".into()
                } else {
                    format!("the byte {c:#04x}")
                });
            };
            v = v << 6 | d;
        }
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        let keep = if last { 3 - padding } else { 3 };
        if last && padding > 0 && (v & ((1 << (8 * padding)) - 1)) != 0 {
            out.truncate(start);
            return Err("non-canonical padding bits".into());
        }
        out.extend_from_slice(&bytes[..keep]);
    }
    Ok(())
}

/// The length of `input` decoded from base64 (it must decode: see [`base64_decode`]).
pub fn base64_len(input: &[u8]) -> usize {
    let padding = input.iter().rev().take(2).take_while(|&&c| c == b'=').count();
    (input.len() / 4 * 3).saturating_sub(padding)
}

/// Splits `arg` at its `__field:NAME__` placeholders; `None` when it has none. A placeholder
/// naming no field of `dataset` is an error that lists the fields.
pub fn pieces(arg: &[u8], dataset: &Dataset) -> Result<Option<Vec<Piece>>, String> {
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(at) = find(rest, FIELD_PREFIX) {
        let after = &rest[at + FIELD_PREFIX.len()..];
        let Some(end) = find(after, FIELD_SUFFIX) else { break };
        let name = &after[..end];
        // `__field:NAME:base64__` decodes the field, as valkey-benchmark 9 does.
        let (name, base64) = match name.strip_suffix(BASE64_SUFFIX) {
            Some(n) if !n.is_empty() => (n, true),
            _ => (name, false),
        };
        let column = dataset.column(name).ok_or_else(|| {
            format!(
                "--dataset: the placeholder __field:{}__ names no field of the dataset (its fields: {})",
                String::from_utf8_lossy(name),
                dataset.names().join(", ")
            )
        })?;
        if at > 0 {
            out.push(Piece::Text(rest[..at].to_vec()));
        }
        if base64 {
            // Checked once here, not per request: valkey-benchmark warns on each request and
            // sends the field empty.
            let mut scratch = Vec::new();
            for row in 0..dataset.rows() {
                scratch.clear();
                base64_decode(dataset.cell(row, column), &mut scratch).map_err(|why| {
                    format!(
                        "--dataset: row {} of field {} is not base64 for __field:{}:base64__ ({why})",
                        row + 1,
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(name)
                    )
                })?;
            }
            out.push(Piece::Base64(column));
        } else {
            out.push(Piece::Field(column));
        }
        rest = &after[end + FIELD_SUFFIX.len()..];
    }
    if out.is_empty() {
        return Ok(None);
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_vec()));
    }
    Ok(Some(out))
}

/// Whether `arg` has a `__field:` placeholder.
pub fn has_fields(arg: &[u8]) -> bool {
    arg.windows(FIELD_PREFIX.len()).any(|w| w == FIELD_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(d: &Dataset) -> Vec<Vec<String>> {
        (0..d.rows())
            .map(|r| {
                (0..d.names().len()).map(|c| String::from_utf8_lossy(d.cell(r, c)).into_owned()).collect()
            })
            .collect()
    }

    #[test]
    fn csv_rows_with_quotes_and_crlf() {
        let d = Dataset::parse("x.csv", b"id,name\r\n1,\"a, \"\"b\"\"\"\r\n\r\n2,c\n", b',', 0).unwrap();
        assert_eq!(d.names(), ["id", "name"]);
        assert_eq!(rows(&d), [vec!["1", "a, \"b\""], vec!["2", "c"]]);
        assert_eq!((d.next_row(), d.next_row(), d.next_row()), (0, 1, 0));
    }

    #[test]
    fn rows_end_where_maxdocs_stops_reading() {
        let csv = b"a,b\n\n1,2\r\n3,4\n5,6\n";
        assert_eq!(rows_end(csv, None, 0), None, "0 reads all");
        assert_eq!(rows_end(csv, None, 1), Some(10));
        assert_eq!(rows_end(csv, None, 2), Some(14));
        assert_eq!(rows_end(csv, None, 3), Some(18));
        assert_eq!(rows_end(csv, None, 4), None, "not there yet");
        assert_eq!(rows_end(b"a,b\n1,2", None, 1), None, "a row is whole at its line's end");
        let whole = Dataset::parse("f", csv, b',', 2).unwrap();
        assert_eq!(Dataset::parse("f", &csv[..14], b',', 2).unwrap(), whole);
        let xml = b"<r><a>1</a></r>\n<r><a>2</a></r><r><a>3";
        assert_eq!(rows_end(xml, Some("r"), 2), Some(31));
        assert_eq!(rows_end(xml, Some("r"), 3), None);
        let whole = Dataset::parse_xml("f", xml, "r", 2).unwrap();
        assert_eq!(Dataset::parse_xml("f", &xml[..31], "r", 2).unwrap(), whole);
    }

    #[test]
    fn tsv_and_maxdocs() {
        assert_eq!(delimiter_for("data.TSV"), b'\t');
        assert_eq!(delimiter_for("data.txt"), b',');
        let d = Dataset::parse("x.tsv", b"a\tb\n1\t2\n3\t4\n5\n", b'\t', 2).unwrap();
        assert_eq!(rows(&d), [vec!["1", "2"], vec!["3", "4"]]);
    }

    #[test]
    fn ragged_rows_are_filled_and_cut_as_valkey_does() {
        let d = Dataset::parse("f.csv", b"a,b,c\n1,2,3\n4\n5,6,7,8\n,9\n", b',', 0).unwrap();
        assert_eq!(
            rows(&d),
            [vec!["1", "2", "3"], vec!["4", "", ""], vec!["5", "6", "7"], vec!["", "9", ""]]
        );
    }

    #[test]
    fn xml_documents_as_valkey_reads_them() {
        let xml = b"<?xml version=\"1.0\"?>\n<dataset>\n<doc><id>1</id><title>A &amp; B</title><tags/></doc>\n\
                    <doc><title>only</title></doc>\n<doc><id>3</id><title>c</title><tags>x</tags></doc>\n</dataset>\n";
        let d = Dataset::parse_xml("f.xml", xml, "doc", 0).unwrap();
        assert_eq!(d.names(), ["id", "title", "tags/"]);
        assert_eq!(rows(&d), [vec!["1", "A &amp; B", ""], vec!["", "only", ""], vec!["3", "c", ""]]);
        assert_eq!(Dataset::parse_xml("f.xml", xml, "doc", 2).unwrap().rows(), 2);
        let e = Dataset::parse_xml("f.xml", xml, "item", 0).unwrap_err();
        assert!(e.contains("no <item> document"), "{e}");
    }

    #[test]
    fn base64_decodes_as_valkey_does() {
        let d = |s: &[u8]| {
            let mut out = b"x".to_vec();
            base64_decode(s, &mut out).map(|()| out[1..].to_vec())
        };
        assert_eq!(d(b"").unwrap(), b"");
        assert_eq!(d(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(d(b"aGk=").unwrap(), b"hi");
        assert_eq!(d(b"aA==").unwrap(), b"h");
        assert_eq!(d(b"AP8A").unwrap(), [0, 255, 0]);
        assert_eq!(base64_len(b"aGVsbG8="), 5);
        assert!(d(b"aGk").unwrap_err().contains("multiple of 4"));
        assert!(d(b"a=Gk").unwrap_err().contains("'='"));
        assert!(d(b"aG-k").unwrap_err().contains("0x2d"));
        assert!(d(b"aGl=").unwrap_err().contains("non-canonical"));
        let ds = Dataset::parse("f.csv", b"id,blob\n1,aGk=\n2,no!e\n", b',', 0).unwrap();
        assert_eq!(
            pieces(b"__field:blob:base64__", &ds).unwrap_err(),
            "--dataset: row 2 of field blob is not base64 for __field:blob:base64__ (the byte 0x21)"
        );
        let ds = Dataset::parse("f.csv", b"id,blob\n1,aGk=\n", b',', 0).unwrap();
        assert_eq!(pieces(b"v:__field:blob:base64__", &ds).unwrap().unwrap()[1], Piece::Base64(1));
    }

    #[test]
    fn errors_name_the_line() {
        let e = |t: &[u8]| Dataset::parse("f.csv", t, b',', 0).unwrap_err();
        assert!(e(b"").contains("empty"), "{}", e(b""));
        assert!(e(b"a,b\n").contains("no rows"));
        assert!(e(b"a\n\xff\n").contains("line 2 is not UTF-8"));
        assert!(e(b"a\n\"x\n").contains("no closing quote"));
    }

    #[test]
    fn pieces_split_at_placeholders() {
        let d = Dataset::parse("f.csv", b"id,name\n1,x\n", b',', 0).unwrap();
        assert_eq!(pieces(b"plain", &d).unwrap(), None);
        assert_eq!(
            pieces(b"k:__field:id__:__field:name__", &d).unwrap().unwrap(),
            [Piece::Text(b"k:".to_vec()), Piece::Field(0), Piece::Text(b":".to_vec()), Piece::Field(1)]
        );
        let e = pieces(b"__field:nope__", &d).unwrap_err();
        assert!(e.contains("__field:nope__") && e.contains("id, name"), "{e}");
    }
}
