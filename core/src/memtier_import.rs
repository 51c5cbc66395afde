//! memtier_benchmark's `--data-import FILE`: its CSV of memcached items (README.import,
//! file_io.cpp), read as a [`Dataset`] of three fields, `key`, `data` and `exptime`, so that a
//! custom command `SET __field:key__ __field:data__` writes the file's items in turn.
//!
//! The file starts with the header `dumpflags, time, exptime, nbytes, nsuffix, it_flags, clsid,
//! nkey, key, data`; each record is eight unsigned numbers separated by `, `, the key (`nkey`
//! bytes) and the data (`nbytes` less 2 bytes: memtier counts its `\r\n`), each as it is or
//! quoted in `"` with a doubled `""` for one `"`, the data possibly binary with line breaks
//! inside its quotes. memtier warns and goes on where a length does not match; here a record
//! that does not read as its lengths say is an error naming its line, as the file is input.

use crate::dataset::Dataset;

/// The start of memtier's header line, which tells its files apart.
pub const HEADER: &[u8] = b"dumpflags, time, exptime";

/// Whether `text` starts as memtier's import file does.
pub fn is_memtier(text: &[u8]) -> bool {
    text.starts_with(HEADER)
}

/// A reader over the file's bytes that knows its line.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
    line: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.at += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn blanks(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.bump();
        }
    }

    /// An unsigned number (memtier's `%u`), blanks before it skipped.
    fn number(&mut self) -> Result<u64, String> {
        self.blanks();
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        std::str::from_utf8(&self.text[start..self.at])
            .ok()
            .and_then(|d| d.parse::<u32>().ok())
            .map(u64::from)
            .ok_or_else(|| "expected an unsigned number (dumpflags, time, exptime, nbytes, ...)".to_string())
    }

    /// A column of `len` bytes, quoted or not, into `out`.
    fn column(&mut self, name: &str, len: usize, out: &mut Vec<u8>) -> Result<(), String> {
        let start = out.len();
        if self.peek() == Some(b'"') {
            self.bump();
            loop {
                match self.bump() {
                    None => return Err(format!("the {name} column's quote does not close")),
                    Some(b'"') if self.peek() == Some(b'"') => {
                        self.bump();
                        out.push(b'"');
                    }
                    Some(b'"') => break,
                    Some(c) => out.push(c),
                }
                if out.len() - start > len {
                    return Err(format!("the {name} column is longer than its {len} bytes"));
                }
            }
        } else {
            while let Some(c) = self.peek().filter(|&c| c != b',' && c != b'\n' && c != b'\r') {
                self.bump();
                out.push(c);
            }
        }
        match out.len() - start {
            n if n == len => Ok(()),
            n => Err(format!("the {name} column is {n} bytes, its record says {len}")),
        }
    }
}

/// Parses `text`, memtier's import file `path`, into a dataset of the fields `key`, `data` and
/// `exptime` (the number as text), a row per record; at most `max_rows` of them when not 0.
/// Errors say `label` (the option and file), the line of the record and what is wrong.
pub fn parse(label: &str, text: &[u8], max_rows: usize) -> Result<Dataset, String> {
    let mut cur = Cursor { text, at: 0, line: 1 };
    if !is_memtier(text) {
        return Err(format!("{label}: line 1: expected memtier's header 'dumpflags, time, exptime, ...'"));
    }
    while cur.peek().is_some_and(|c| c != b'\n') {
        cur.bump();
    }
    cur.bump();
    let names = vec!["key".to_string(), "data".to_string(), "exptime".to_string()];
    let (mut data, mut cells) = (Vec::new(), Vec::new());
    let mut rows = 0usize;
    loop {
        cur.blanks();
        if cur.peek().is_none() || (max_rows != 0 && rows >= max_rows) {
            break;
        }
        let line = cur.line;
        let bad = |why: String| format!("{label}: line {line}: {why}");
        let mut numbers = [0u64; 8];
        for n in numbers.iter_mut() {
            *n = cur.number().map_err(bad)?;
            cur.blanks();
            if cur.bump() != Some(b',') {
                return Err(bad("expected ',' after a number".into()));
            }
        }
        // memtier's `%u, ` skips the blanks before the key.
        while cur.peek() == Some(b' ') {
            cur.bump();
        }
        let [_, _, exptime, nbytes, _, _, _, nkey] = numbers;
        // memtier's nbytes counts the value's closing \r\n.
        let size = nbytes.checked_sub(2).ok_or_else(|| {
            bad(format!("nbytes is {nbytes}: it counts the data's closing \\r\\n, so at least 2"))
        })?;
        if nkey == 0 {
            return Err(bad("nkey is 0: a key has at least one byte".into()));
        }
        let key_start = data.len();
        cur.column("key", nkey as usize, &mut data).map_err(bad)?;
        cells.push(key_start..data.len());
        cur.blanks();
        if cur.bump() != Some(b',') {
            return Err(bad("expected ',' after the key column".into()));
        }
        // memtier skips the one byte after the comma.
        if cur.peek() == Some(b' ') {
            cur.bump();
        }
        let data_start = data.len();
        cur.column("data", size as usize, &mut data).map_err(bad)?;
        cells.push(data_start..data.len());
        let exp_start = data.len();
        data.extend_from_slice(exptime.to_string().as_bytes());
        cells.push(exp_start..data.len());
        if cur.peek() == Some(b'\r') {
            cur.bump();
        }
        match cur.bump() {
            None | Some(b'\n') => {}
            Some(_) => return Err(bad("the record goes on after its data column".into())),
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(format!("{label}: the file has a header but no records"));
    }
    Ok(Dataset::from_parts(names, data, cells))
}

/// Whether any record of `dataset` (as [`parse`] gives it) has an expiry, and whether all do.
pub fn expiries(dataset: &Dataset) -> (bool, bool) {
    let column = dataset.column(b"exptime").unwrap_or(2);
    let has = |row: usize| dataset.cell(row, column) != b"0";
    ((0..dataset.rows()).any(has), (0..dataset.rows()).all(has))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &[u8] = b"dumpflags, time, exptime, nbytes, nsuffix, it_flags, clsid, nkey, key, data\n\
        0, 0, 0, 12, 0, 0, 0, 4, key1, xxxxxxxxxx\n\
        0, 0, 10, 7, 0, 0, 0, 3, \"k\"\"2\", \"a\"\"\r\nb\"\n";

    #[test]
    fn reads_memtier_records_plain_and_quoted() {
        let d = parse("--data-import f", FILE, 0).unwrap();
        assert_eq!(d.rows(), 2);
        assert_eq!(d.cell(0, 0), b"key1");
        assert_eq!(d.cell(0, 1), b"xxxxxxxxxx");
        assert_eq!(d.cell(0, 2), b"0");
        assert_eq!(d.cell(1, 0), b"k\"2");
        assert_eq!(d.cell(1, 1), b"a\"\r\nb");
        assert_eq!(d.cell(1, 2), b"10");
        assert_eq!(expiries(&d), (true, false));
        assert_eq!(parse("f", FILE, 1).unwrap().rows(), 1);
    }

    #[test]
    fn a_bad_record_names_its_line() {
        let short = b"dumpflags, time, exptime\n0, 0, 0, 12, 0, 0, 0, 4, key1, xxxxxxxxxx\n0, 0, 0, 12, 0, 0, 0, 4, key2, xx\n";
        assert_eq!(
            parse("--data-import f", short, 0).unwrap_err(),
            "--data-import f: line 3: the data column is 2 bytes, its record says 10"
        );
        let cases: [(&[u8], &str); 5] = [
            (b"key, data\n", "line 1: expected memtier's header"),
            (b"dumpflags, time, exptime\n", "no records"),
            (b"dumpflags, time, exptime\n0, 0, x\n", "line 2: expected an unsigned number"),
            (b"dumpflags, time, exptime\n0, 0, 0, 1, 0, 0, 0, 1, k, v\n", "line 2: nbytes is 1"),
            (b"dumpflags, time, exptime\n0, 0, 0, 4, 0, 0, 0, 1, k, \"v", "quote does not close"),
        ];
        for (text, want) in cases {
            let e = parse("f", text, 0).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        // A length past u32 (memtier's %u) is refused, not wrapped.
        assert!(parse("f", b"dumpflags, time, exptime\n0, 0, 0, 99999999999, 0, 0, 0, 1, k, v\n", 0).is_err());
    }
}
