//! The allocating [`Value`] codec and [`encode_command`]: whole RESP values with their contents,
//! used at startup (the handshake's commands, `CONFIG GET`) and in tests, never per reply.

use super::{
    check_big_number, check_boolean, check_double, err, parse_bulk_len, parse_count, parse_integer,
    ProtocolError, ProtocolErrorKind, MAX_DEPTH, MAX_LINE_LEN, MAX_SIMPLE_LEN,
};

/// A whole RESP value with its contents, for handshake checks, `CONFIG GET` and tests (allocates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `+` simple string.
    Simple(Vec<u8>),
    /// `-` simple error, without the `-`.
    Error(Vec<u8>),
    /// `:` integer.
    Integer(i64),
    /// `$` bulk string (a streamed `$?` string parses as its concatenated chunks).
    Bulk(Vec<u8>),
    /// `*` array.
    Array(Vec<Value>),
    /// `_` null; `$-1` and `*-1` parse as this too.
    Null,
    /// `#` boolean.
    Boolean(bool),
    /// `,` double, kept as its text so round trips are exact.
    Double(Vec<u8>),
    /// `(` big number, as its text.
    BigNumber(Vec<u8>),
    /// `!` bulk error.
    BulkError(Vec<u8>),
    /// `=` verbatim string: a 3-byte format such as `txt` and the text after the `:`.
    Verbatim {
        /// The format, such as `txt` or `mkd`.
        format: [u8; 3],
        /// The text after `format:`.
        text: Vec<u8>,
    },
    /// `%` map, in wire order.
    Map(Vec<(Value, Value)>),
    /// `~` set, in wire order.
    Set(Vec<Value>),
    /// `>` push message.
    Push(Vec<Value>),
    /// `|` attribute entries followed by the value they annotate.
    Attribute {
        /// The attribute's key/value entries.
        attrs: Vec<(Value, Value)>,
        /// The annotated value.
        value: Box<Value>,
    },
}

fn push_decimal(out: &mut Vec<u8>, n: i64) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    let mut m = n.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[pos..]);
}

fn push_header(out: &mut Vec<u8>, ty: u8, n: usize) {
    out.push(ty);
    push_decimal(out, n as i64);
    out.extend_from_slice(b"\r\n");
}

fn push_line(out: &mut Vec<u8>, ty: u8, line: &[u8]) {
    out.push(ty);
    out.extend_from_slice(line);
    out.extend_from_slice(b"\r\n");
}

fn push_bulk(out: &mut Vec<u8>, ty: u8, payload: &[u8]) {
    push_header(out, ty, payload.len());
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
}

/// RESP-encodes a command as an array of bulk strings: `*N\r\n$len\r\narg\r\n...`.
pub fn encode_command(args: &[&[u8]], out: &mut Vec<u8>) {
    push_header(out, b'*', args.len());
    for arg in args {
        push_bulk(out, b'$', arg);
    }
}

impl Value {
    /// Encodes as RESP3; `Null` encodes as `_\r\n`, the other RESP2 types in their RESP2 form.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Simple(s) => push_line(out, b'+', s),
            Value::Error(s) => push_line(out, b'-', s),
            Value::Integer(n) => {
                out.push(b':');
                push_decimal(out, *n);
                out.extend_from_slice(b"\r\n");
            }
            Value::Bulk(b) => push_bulk(out, b'$', b),
            Value::Null => out.extend_from_slice(b"_\r\n"),
            Value::Boolean(b) => push_line(out, b'#', if *b { b"t" } else { b"f" }),
            Value::Double(s) => push_line(out, b',', s),
            Value::BigNumber(s) => push_line(out, b'(', s),
            Value::BulkError(b) => push_bulk(out, b'!', b),
            Value::Verbatim { format, text } => {
                push_header(out, b'=', text.len() + 4);
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Value::Array(items) | Value::Set(items) | Value::Push(items) => {
                let ty = match self {
                    Value::Array(_) => b'*',
                    Value::Set(_) => b'~',
                    _ => b'>',
                };
                push_header(out, ty, items.len());
                for item in items {
                    item.encode(out);
                }
            }
            Value::Map(entries) => {
                push_header(out, b'%', entries.len());
                encode_pairs(entries, out);
            }
            Value::Attribute { attrs, value } => {
                push_header(out, b'|', attrs.len());
                encode_pairs(attrs, out);
                value.encode(out);
            }
        }
    }

    /// Parses one whole value from the start of `input`: `Ok(Some((value, consumed)))`, `Ok(None)` if incomplete.
    ///
    /// Applies the same limits and reports the same errors (offsets relative to `input`) as
    /// [`ReplyParser`](super::ReplyParser). Streamed strings and aggregates are supported; a
    /// streamed string becomes a [`Value::Bulk`] and a streamed aggregate its ordinary counterpart.
    pub fn parse(input: &[u8]) -> Result<Option<(Value, usize)>, ProtocolError> {
        let mut cursor = Cursor { input, pos: 0 };
        Ok(cursor.value(0)?.map(|v| (v, cursor.pos)))
    }
}

fn encode_pairs(pairs: &[(Value, Value)], out: &mut Vec<u8>) {
    for (k, v) in pairs {
        k.encode(out);
        v.encode(out);
    }
}

/// Recursive-descent state for [`Value::parse`]; `Ok(None)` everywhere means "need more input".
struct Cursor<'a> {
    input: &'a [u8],
    pos: usize,
}

/// Unwraps `Ok(Some(x))`, returning `Ok(None)` from the caller when input ran out.
macro_rules! ready {
    ($e:expr) => {
        match $e? {
            Some(x) => x,
            None => return Ok(None),
        }
    };
}

type Step<T> = Result<Option<T>, ProtocolError>;

impl<'a> Cursor<'a> {
    fn at(&self, pos: usize) -> u64 {
        pos as u64
    }

    /// Checks for CRLF at `pos`, byte by byte like the streaming parser.
    fn crlf(&self, pos: usize) -> Step<()> {
        for (k, want) in [b'\r', b'\n'].into_iter().enumerate() {
            match self.input.get(pos + k) {
                None => return Ok(None),
                Some(&b) if b != want => return Err(err(self.at(pos + k), ProtocolErrorKind::ExpectedCrlf)),
                Some(_) => {}
            }
        }
        Ok(Some(()))
    }

    /// Reads a line ending in CRLF; `bounded` lines (headers and scalars) may hold at most
    /// [`MAX_LINE_LEN`] bytes, the others (simple strings and errors) [`MAX_SIMPLE_LEN`].
    fn line(&mut self, bounded: bool) -> Step<&'a [u8]> {
        let input: &'a [u8] = self.input;
        let rest = &input[self.pos..];
        let (limit, too_long) = if bounded {
            (MAX_LINE_LEN, ProtocolErrorKind::LineTooLong)
        } else {
            (MAX_SIMPLE_LEN, ProtocolErrorKind::SimpleTooLong)
        };
        let window = &rest[..rest.len().min(limit + 1)];
        match window.iter().position(|&b| b == b'\r') {
            Some(p) => {
                ready!(self.crlf(self.pos + p));
                let line = &rest[..p];
                self.pos += p + 2;
                Ok(Some(line))
            }
            None if window.len() > limit => Err(err(self.at(self.pos + limit), too_long)),
            None => Ok(None),
        }
    }

    /// Reads a `len`-byte payload and its CRLF; `verbatim` checks the `:` at byte 3 as soon as it is there.
    fn payload(&mut self, len: u64, verbatim: bool) -> Step<&'a [u8]> {
        let input: &'a [u8] = self.input;
        let start = self.pos;
        if verbatim {
            match input.get(start + 3) {
                Some(b':') => {}
                Some(_) => return Err(err(self.at(start + 3), ProtocolErrorKind::InvalidVerbatim)),
                None => return Ok(None),
            }
        }
        // len <= MAX_BULK_LEN, so this fits in usize on 32- and 64-bit targets.
        let end = start + len as usize;
        if end > input.len() {
            return Ok(None);
        }
        ready!(self.crlf(end));
        self.pos = end + 2;
        Ok(Some(&input[start..end]))
    }

    fn value(&mut self, depth: usize) -> Step<Value> {
        let type_at = self.pos;
        let Some(&ty) = self.input.get(type_at) else {
            return Ok(None);
        };
        self.pos += 1;
        let line_at = self.at(self.pos);
        let value = match ty {
            b'+' => Value::Simple(ready!(self.line(false)).to_vec()),
            b'-' => Value::Error(ready!(self.line(false)).to_vec()),
            b':' => Value::Integer(parse_integer(ready!(self.line(true)), line_at)?),
            b'#' => Value::Boolean(check_boolean(ready!(self.line(true)), line_at)?),
            b',' => {
                let line = ready!(self.line(true));
                check_double(line, line_at)?;
                Value::Double(line.to_vec())
            }
            b'(' => {
                let line = ready!(self.line(true));
                check_big_number(line, line_at)?;
                Value::BigNumber(line.to_vec())
            }
            b'_' => {
                if !ready!(self.line(true)).is_empty() {
                    return Err(err(line_at, ProtocolErrorKind::ExpectedCrlf));
                }
                Value::Null
            }
            b'$' | b'!' | b'=' => {
                let line = ready!(self.line(true));
                if ty == b'$' && line == b"-1" {
                    return Ok(Some(Value::Null));
                }
                if ty == b'$' && line == b"?" {
                    return self.streamed_string();
                }
                let len = parse_bulk_len(line, line_at)?;
                if ty == b'=' && len < 4 {
                    return Err(err(line_at, ProtocolErrorKind::InvalidVerbatim));
                }
                let payload = ready!(self.payload(len, ty == b'='));
                match ty {
                    b'$' => Value::Bulk(payload.to_vec()),
                    b'!' => Value::BulkError(payload.to_vec()),
                    _ => Value::Verbatim {
                        format: [payload[0], payload[1], payload[2]],
                        text: payload[4..].to_vec(),
                    },
                }
            }
            b'*' | b'%' | b'~' | b'>' | b'|' => {
                let line = ready!(self.line(true));
                if ty == b'*' && line == b"-1" {
                    return Ok(Some(Value::Null));
                }
                let count = if line == b"?" && ty != b'|' { None } else { Some(parse_count(line, line_at)?) };
                if depth == MAX_DEPTH {
                    return Err(err(self.at(type_at), ProtocolErrorKind::TooDeep));
                }
                let items = match count {
                    Some(n) => {
                        let n = match ty {
                            b'%' | b'|' => 2 * n as usize,
                            _ => n as usize,
                        };
                        // Cap the up-front reservation: the count is untrusted input.
                        let mut items = Vec::with_capacity(n.min(1024));
                        for _ in 0..n {
                            items.push(ready!(self.value(depth + 1)));
                        }
                        items
                    }
                    None => ready!(self.streamed_items(ty, depth)),
                };
                match ty {
                    b'*' => Value::Array(items),
                    b'~' => Value::Set(items),
                    b'>' => Value::Push(items),
                    b'%' => Value::Map(pairs(items)),
                    _ => {
                        let value = Box::new(ready!(self.value(depth + 1)));
                        Value::Attribute { attrs: pairs(items), value }
                    }
                }
            }
            b'.' => return Err(err(self.at(type_at), ProtocolErrorKind::UnexpectedStreamEnd)),
            _ => return Err(err(self.at(type_at), ProtocolErrorKind::UnknownType(ty))),
        };
        Ok(Some(value))
    }

    fn streamed_string(&mut self) -> Step<Value> {
        let mut data = Vec::new();
        loop {
            match self.input.get(self.pos) {
                None => return Ok(None),
                Some(b';') => {}
                Some(&b) => return Err(err(self.at(self.pos), ProtocolErrorKind::ExpectedStreamChunk(b))),
            }
            self.pos += 1;
            let line_at = self.at(self.pos);
            let len = parse_bulk_len(ready!(self.line(true)), line_at)?;
            if len == 0 {
                return Ok(Some(Value::Bulk(data)));
            }
            data.extend_from_slice(ready!(self.payload(len, false)));
        }
    }

    fn streamed_items(&mut self, ty: u8, depth: usize) -> Step<Vec<Value>> {
        let mut items = Vec::new();
        loop {
            let end_at = self.pos;
            match self.input.get(end_at) {
                None => return Ok(None),
                Some(b'.') => {
                    self.pos += 1;
                    let line_at = self.at(self.pos);
                    if !ready!(self.line(true)).is_empty() {
                        return Err(err(line_at, ProtocolErrorKind::ExpectedCrlf));
                    }
                    if ty == b'%' && items.len() % 2 != 0 {
                        return Err(err(self.at(end_at), ProtocolErrorKind::UnpairedMapEntry));
                    }
                    return Ok(Some(items));
                }
                Some(_) => items.push(ready!(self.value(depth + 1))),
            }
        }
    }
}

/// Pairs up a flat list of alternating keys and values (the list has even length).
fn pairs(items: Vec<Value>) -> Vec<(Value, Value)> {
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_command_is_an_array_of_bulks() {
        let mut out = Vec::new();
        encode_command(&[b"SET", b"key:1", b""], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$0\r\n\r\n");
        let parsed = Value::parse(&out).unwrap().unwrap().0;
        let want = [&b"SET"[..], b"key:1", b""].map(|a| Value::Bulk(a.to_vec()));
        assert_eq!(parsed, Value::Array(want.to_vec()));
    }

    #[test]
    fn value_parses_resp2_nulls_and_streams() {
        assert_eq!(Value::parse(b"$-1\r\n"), Ok(Some((Value::Null, 5))));
        assert_eq!(Value::parse(b"*-1\r\n"), Ok(Some((Value::Null, 5))));
        let streamed = b"$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n";
        assert_eq!(Value::parse(streamed), Ok(Some((Value::Bulk(b"abc".to_vec()), streamed.len()))));
        let map = b"%?\r\n+a\r\n:1\r\n.\r\n";
        let want = Value::Map(vec![(Value::Simple(b"a".to_vec()), Value::Integer(1))]);
        assert_eq!(Value::parse(map), Ok(Some((want, map.len()))));
    }
}
