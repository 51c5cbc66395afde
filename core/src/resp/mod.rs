//! RESP2/RESP3 reply parsing and encoding.
//!
//! [`ReplyParser`] is the hot path: a streaming, allocation-free state machine that recognises
//! one top-level reply at a time and reports only its [`Kind`]. It never asks the caller to keep
//! unconsumed bytes: on [`Parsed::Partial`] the whole input was consumed and the parser holds
//! whatever it needs (a few header bytes, a count of payload bytes still to skip, the element
//! counts still expected at each nesting level). Bulk payloads are skipped by arithmetic.
//!
//! [`Value`] is the allocating counterpart for the few places that need reply contents
//! (handshake checks, `CONFIG GET`, tests). Both apply the same limits and report the same
//! [`ProtocolError`] for the same malformed input.
//!
//! The parser is in `parser.rs`, the [`Value`] codec and [`encode_command`] in `value.rs`. This
//! module holds what both share: the limits, [`ProtocolError`] and the line checks.

use std::fmt;

mod parser;
mod value;

#[cfg(any(test, feature = "testing"))]
pub use parser::{parse_chunked, parse_chunked_skipping};
pub use parser::{Kind, Parsed, Reply, ReplyParser};
pub use value::{encode_command, Value};

/// Deepest aggregate nesting accepted; an aggregate (or attribute) header below 64 others is an error.
pub const MAX_DEPTH: usize = 64;
/// Largest bulk, verbatim or bulk error payload accepted (Redis' default `proto-max-bulk-len`).
pub const MAX_BULK_LEN: u64 = 512 * 1024 * 1024;
/// Longest header, integer, double, big number or boolean line accepted, excluding type byte and CRLF.
pub const MAX_LINE_LEN: usize = 64;
/// Longest `+` simple string or `-` simple error line accepted, excluding type byte and CRLF:
/// 1 MiB. These lines carry no length, so without a limit a server that sends a line that
/// never ends is waited on for as long as it keeps sending, or forever once it stops (without
/// `--timeout`). The parser streams them and keeps no bytes, so the limit is not about memory:
/// it is about noticing. 1 MiB is 16 times Redis' own limits on a line it reads
/// (`PROTO_INLINE_MAX_SIZE`, 64 KiB, for inline requests and multibulk headers) and far above
/// any status or error Redis makes (tens to hundreds of bytes), so that only a broken server,
/// or a script's deliberately huge `error_reply`, reaches it; a bulk string's 512 MiB
/// ([`MAX_BULK_LEN`]) would let a runaway line run for half a gigabyte before it was noticed.
pub const MAX_SIMPLE_LEN: usize = 1024 * 1024;
/// How many leading bytes of a top-level error message [`ReplyParser::error_message`] keeps.
pub const ERROR_MESSAGE_CAPACITY: usize = 128;
/// How many bytes [`error_prefix`] returns at most.
pub const ERROR_PREFIX_MAX: usize = 32;

/// A protocol violation: the byte stream is not valid RESP, so the connection cannot continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// Stream offset (bytes since the parser was created or reset) of the offending byte.
    pub offset: u64,
    /// What was wrong.
    pub kind: ProtocolErrorKind,
}

/// The kind of a [`ProtocolError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolErrorKind {
    /// A reply started with a byte that is not a RESP type byte.
    UnknownType(u8),
    /// A length or count was empty, negative (other than an allowed `-1`) or not decimal digits.
    InvalidLength,
    /// A bulk, verbatim or bulk error length exceeded [`MAX_BULK_LEN`].
    BulkTooLarge(u64),
    /// An aggregate element count exceeded `i32::MAX`.
    AggregateTooLarge(u64),
    /// Aggregates were nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// An `:` integer was not a signed 64-bit decimal.
    InvalidInteger,
    /// A `#` boolean was not `t` or `f`.
    InvalidBoolean,
    /// A `,` double had characters other than digits, sign, `.`, `e`/`E`, or was not `inf`/`-inf`/`nan`.
    InvalidDouble,
    /// A `(` big number was not an optionally signed run of digits.
    InvalidBigNumber,
    /// A `=` verbatim string did not start with a 3-byte format and `:`.
    InvalidVerbatim,
    /// A line or payload was not followed by CRLF.
    ExpectedCrlf,
    /// A header or scalar line was longer than [`MAX_LINE_LEN`] bytes.
    LineTooLong,
    /// A `+` simple string or `-` simple error ran past [`MAX_SIMPLE_LEN`] bytes without its CRLF.
    SimpleTooLong,
    /// A `.` end marker appeared outside a streamed aggregate.
    UnexpectedStreamEnd,
    /// A streamed string continued with a byte other than `;`.
    ExpectedStreamChunk(u8),
    /// A streamed `%?` map ended after a key with no value.
    UnpairedMapEntry,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "protocol error at byte {}: ", self.offset)?;
        match self.kind {
            ProtocolErrorKind::UnknownType(b) => {
                write!(f, "unknown reply type byte {}", ByteName(b))
            }
            ProtocolErrorKind::InvalidLength => {
                f.write_str("invalid length or count (expected decimal digits, or -1 for a RESP2 null)")
            }
            ProtocolErrorKind::BulkTooLarge(n) => {
                write!(f, "bulk length {n} exceeds the {MAX_BULK_LEN}-byte limit (Redis proto-max-bulk-len)")
            }
            ProtocolErrorKind::AggregateTooLarge(n) => {
                write!(f, "aggregate element count {n} exceeds {}", i32::MAX)
            }
            ProtocolErrorKind::TooDeep => {
                write!(f, "aggregates nested deeper than {MAX_DEPTH} levels")
            }
            ProtocolErrorKind::InvalidInteger => {
                f.write_str("invalid integer (expected a signed 64-bit decimal)")
            }
            ProtocolErrorKind::InvalidBoolean => f.write_str("invalid boolean (expected 't' or 'f')"),
            ProtocolErrorKind::InvalidDouble => {
                f.write_str("invalid double (expected digits, sign, '.', 'e', or inf/-inf/nan)")
            }
            ProtocolErrorKind::InvalidBigNumber => {
                f.write_str("invalid big number (expected an optional sign and digits)")
            }
            ProtocolErrorKind::InvalidVerbatim => {
                f.write_str("invalid verbatim string (payload must start with a 3-byte format and ':')")
            }
            ProtocolErrorKind::ExpectedCrlf => f.write_str("expected CRLF"),
            ProtocolErrorKind::LineTooLong => {
                write!(f, "header line longer than {MAX_LINE_LEN} bytes")
            }
            ProtocolErrorKind::SimpleTooLong => write!(
                f,
                "a simple string or error reply ran past {MAX_SIMPLE_LEN} bytes without ending \
                 (no CRLF): the server sent a line that does not end, and respbench closed the \
                 connection"
            ),
            ProtocolErrorKind::UnexpectedStreamEnd => {
                f.write_str("'.' end marker outside a streamed aggregate")
            }
            ProtocolErrorKind::ExpectedStreamChunk(b) => {
                write!(f, "expected a ';' chunk in a streamed string, found {}", ByteName(b))
            }
            ProtocolErrorKind::UnpairedMapEntry => {
                f.write_str("streamed map ended with a key that has no value")
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

/// Formats a byte as hex, plus the character when printable.
struct ByteName(u8);

impl fmt::Display for ByteName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b.is_ascii_graphic() || b == b' ' {
            write!(f, "0x{b:02x} ('{}')", b as char)
        } else {
            write!(f, "0x{b:02x}")
        }
    }
}

/// The first word of an error message ("ERR", "WRONGTYPE", "MOVED"), at most 32 bytes.
pub fn error_prefix(message: &[u8]) -> &[u8] {
    let word = message.iter().position(|&b| b == b' ').unwrap_or(message.len());
    &message[..word.min(ERROR_PREFIX_MAX)]
}

// ---------------------------------------------------------------------------------------------
// Line validation shared by ReplyParser and Value::parse, so both report the same errors.
// `at` is the stream offset of line[0].

fn err(offset: u64, kind: ProtocolErrorKind) -> ProtocolError {
    ProtocolError { offset, kind }
}

/// Parses unsigned decimal digits, saturating; returns the offset of a bad byte on failure.
fn parse_digits(line: &[u8], at: u64) -> Result<u64, ProtocolError> {
    if line.is_empty() {
        return Err(err(at, ProtocolErrorKind::InvalidLength));
    }
    let mut n: u64 = 0;
    for (i, &b) in line.iter().enumerate() {
        if !b.is_ascii_digit() {
            return Err(err(at + i as u64, ProtocolErrorKind::InvalidLength));
        }
        n = n.saturating_mul(10).saturating_add(u64::from(b - b'0'));
    }
    Ok(n)
}

/// Parses a bulk, verbatim, bulk error or chunk length.
fn parse_bulk_len(line: &[u8], at: u64) -> Result<u64, ProtocolError> {
    let n = parse_digits(line, at)?;
    if n > MAX_BULK_LEN {
        return Err(err(at, ProtocolErrorKind::BulkTooLarge(n)));
    }
    Ok(n)
}

/// Parses an aggregate element count.
fn parse_count(line: &[u8], at: u64) -> Result<u32, ProtocolError> {
    let n = parse_digits(line, at)?;
    match u32::try_from(n) {
        Ok(n) if n <= i32::MAX as u32 => Ok(n),
        _ => Err(err(at, ProtocolErrorKind::AggregateTooLarge(n))),
    }
}

fn parse_integer(line: &[u8], at: u64) -> Result<i64, ProtocolError> {
    let invalid = |off: u64| err(off, ProtocolErrorKind::InvalidInteger);
    let (negative, digits, skip) = match line.first() {
        Some(b'-') => (true, &line[1..], 1),
        Some(b'+') => (false, &line[1..], 1),
        _ => (false, line, 0),
    };
    if digits.is_empty() {
        return Err(invalid(at));
    }
    let mut n: i64 = 0;
    for (i, &b) in digits.iter().enumerate() {
        if !b.is_ascii_digit() {
            return Err(invalid(at + (skip + i) as u64));
        }
        let d = i64::from(b - b'0');
        n = n
            .checked_mul(10)
            .and_then(|n| if negative { n.checked_sub(d) } else { n.checked_add(d) })
            .ok_or_else(|| invalid(at))?;
    }
    Ok(n)
}

fn check_boolean(line: &[u8], at: u64) -> Result<bool, ProtocolError> {
    match line {
        b"t" => Ok(true),
        b"f" => Ok(false),
        _ => Err(err(at, ProtocolErrorKind::InvalidBoolean)),
    }
}

fn check_double(line: &[u8], at: u64) -> Result<(), ProtocolError> {
    let special = matches!(line, b"inf" | b"-inf" | b"+inf" | b"nan");
    let numeric = line.iter().any(u8::is_ascii_digit)
        && line.iter().all(|&b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'));
    if special || numeric {
        Ok(())
    } else {
        Err(err(at, ProtocolErrorKind::InvalidDouble))
    }
}

fn check_big_number(line: &[u8], at: u64) -> Result<(), ProtocolError> {
    let digits = match line.first() {
        Some(b'-' | b'+') => &line[1..],
        _ => line,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(err(at, ProtocolErrorKind::InvalidBigNumber));
    }
    Ok(())
}
