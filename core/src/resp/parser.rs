//! The streaming, allocation-free [`ReplyParser`]: recognises one top-level reply per call and
//! reports its [`Kind`], keeping no bytes between calls. The hot path of every connection.

use super::{
    check_big_number, check_boolean, check_double, err, parse_bulk_len, parse_count, parse_integer,
    ProtocolError, ProtocolErrorKind, ERROR_MESSAGE_CAPACITY, MAX_DEPTH, MAX_LINE_LEN, MAX_SIMPLE_LEN,
};

/// The type of a top-level reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// `+` simple string.
    SimpleString,
    /// `-` simple error.
    Error,
    /// `:` integer.
    Integer,
    /// `$` bulk string, including a streamed `$?` string.
    Bulk,
    /// `*` array, including a streamed `*?` array.
    Array,
    /// `_` null, or the RESP2 nulls `$-1` and `*-1`.
    Null,
    /// `#` boolean.
    Boolean,
    /// `,` double.
    Double,
    /// `(` big number.
    BigNumber,
    /// `!` bulk error.
    BulkError,
    /// `=` verbatim string.
    Verbatim,
    /// `%` map.
    Map,
    /// `~` set.
    Set,
    /// `>` push message (out-of-band; not a reply to a request).
    Push,
}

impl Kind {
    /// The kind in words, with its type byte, for a message that says what came back: `a
    /// simple string (+)`.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::SimpleString => "a simple string (+)",
            Kind::Error => "an error (-)",
            Kind::Integer => "an integer (:)",
            Kind::Bulk => "a bulk string ($)",
            Kind::Array => "an array (*)",
            Kind::Null => "a null",
            Kind::Boolean => "a boolean (#)",
            Kind::Double => "a double (,)",
            Kind::BigNumber => "a big number (()",
            Kind::BulkError => "a bulk error (!)",
            Kind::Verbatim => "a verbatim string (=)",
            Kind::Map => "a map (%)",
            Kind::Set => "a set (~)",
            Kind::Push => "a push message (>)",
        }
    }

    fn from_type(ty: u8) -> Kind {
        match ty {
            b'+' => Kind::SimpleString,
            b'-' => Kind::Error,
            b':' => Kind::Integer,
            b'$' => Kind::Bulk,
            b'*' => Kind::Array,
            b'#' => Kind::Boolean,
            b',' => Kind::Double,
            b'(' => Kind::BigNumber,
            b'!' => Kind::BulkError,
            b'=' => Kind::Verbatim,
            b'%' => Kind::Map,
            b'~' => Kind::Set,
            b'>' => Kind::Push,
            _ => Kind::Null,
        }
    }
}

/// What [`ReplyParser::parse`] recognised: the kind of one whole top-level reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The reply's type; for an attributed reply, the type of the value after the attribute.
    pub kind: Kind,
}

impl Reply {
    /// Whether the reply is an error (`-` simple error or `!` bulk error).
    pub fn is_error(&self) -> bool {
        matches!(self.kind, Kind::Error | Kind::BulkError)
    }

    /// Whether the reply is a `>` push message, which answers no request.
    pub fn is_push(&self) -> bool {
        self.kind == Kind::Push
    }
}

/// The outcome of one [`ReplyParser::parse`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// One whole top-level reply ended after `consumed` bytes of this input. Bytes after it are NOT consumed.
    Complete {
        /// Bytes of this call's input that belong to the reply.
        consumed: usize,
        /// The completed reply.
        reply: Reply,
    },
    /// All of `input` was consumed and the reply is not complete yet; state is kept; call again with more bytes.
    Partial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a type byte.
    Type,
    /// Reading the line after type byte `ty` (length, count or scalar), buffered if split.
    Line { ty: u8 },
    /// Saw the `\r` ending the line after `ty`; expecting `\n`.
    LineLf { ty: u8 },
    /// Streaming a simple string or simple error line, `len` bytes of it seen so far (at most
    /// [`MAX_SIMPLE_LEN`]).
    Simple { len: usize },
    /// Saw the `\r` ending a simple string or error; expecting `\n`.
    SimpleLf,
    /// Skipping a payload of `len` bytes (`ty` is `$`, `!`, `=` or `;` for a stream chunk).
    Payload { ty: u8, remaining: u64, len: u64 },
    /// Expecting the `\r` after a payload.
    PayloadCr { ty: u8 },
    /// Expecting the `\n` after a payload.
    PayloadLf { ty: u8 },
    /// Inside a streamed `$?` string, expecting the `;` of the next chunk.
    Chunk,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    /// `remaining` elements still expected (attributes count their 2n entries plus the value).
    Counted,
    /// Streamed aggregate ended by `.`; `remaining` holds the element count's parity.
    Streamed,
    /// Streamed map; like `Streamed` but must end after an even number of elements.
    StreamedMap,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    remaining: u32,
    kind: FrameKind,
}

const EMPTY_FRAME: Frame = Frame { remaining: 0, kind: FrameKind::Counted };

/// Whether the header just read completed a value or moved the parser to another state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Done,
    Continue,
}

/// Streaming, allocation-free RESP2/RESP3 reply recogniser: one top-level reply per [`parse`](Self::parse) call.
///
/// Attributes (`|`) are treated as a nesting level holding their entries and then the value they
/// annotate, so they count toward [`MAX_DEPTH`] like any aggregate. Errors are sticky: after one,
/// every call returns it again until [`reset`](Self::reset).
#[derive(Debug, Clone)]
pub struct ReplyParser {
    state: State,
    /// Bytes consumed by completed or partial calls before the current one.
    offset: u64,
    /// Stream offset of the type byte of the line being read (errors point into the line).
    type_at: u64,
    line: [u8; MAX_LINE_LEN],
    line_len: u8,
    frames: [Frame; MAX_DEPTH],
    depth: usize,
    /// Kind of the current top-level reply, once its value's type byte was seen.
    kind: Kind,
    kind_known: bool,
    /// Depth at which the top-level value's type byte is expected (past any attributes).
    kind_depth: usize,
    /// Whether the value being read is the top-level value (not an element or attribute entry).
    is_top: bool,
    /// Whether the payload or line being read is a top-level error message to capture.
    capture: bool,
    message: [u8; ERROR_MESSAGE_CAPACITY],
    message_len: u8,
    error: Option<ProtocolError>,
    /// The value of the last top-level `:` integer reply.
    integer: i64,
    /// The last top-level `*` array's length, and how many of its direct elements were nil
    /// (an `MGET`'s keys and its misses); meaningful only after an array reply.
    elements: u32,
    nil_elements: u32,
}

impl Default for ReplyParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplyParser {
    /// Creates a parser at the start of a stream.
    pub fn new() -> Self {
        ReplyParser {
            state: State::Type,
            offset: 0,
            type_at: 0,
            line: [0; MAX_LINE_LEN],
            line_len: 0,
            frames: [EMPTY_FRAME; MAX_DEPTH],
            depth: 0,
            kind: Kind::Null,
            kind_known: false,
            kind_depth: 0,
            is_top: false,
            capture: false,
            message: [0; ERROR_MESSAGE_CAPACITY],
            message_len: 0,
            error: None,
            integer: 0,
            elements: 0,
            nil_elements: 0,
        }
    }

    /// The value of the last top-level integer reply (a PUBLISH's receivers); 0 before any.
    pub fn integer(&self) -> i64 {
        self.integer
    }

    /// After a top-level `*` array reply: its length and how many of its direct elements were
    /// nil (`$-1`, `*-1`, RESP3 `_`): an `MGET`'s keys and the ones that did not exist.
    pub fn array_elements(&self) -> (u32, u32) {
        (self.elements, self.nil_elements)
    }

    /// Counts a nil value: a direct element of the top-level array is one of its misses.
    #[inline]
    fn nil_value(&mut self) {
        if self.is_top {
            self.kind = Kind::Null;
        } else if self.depth == 1 && self.kind_depth == 0 && self.kind == Kind::Array {
            self.nil_elements = self.nil_elements.saturating_add(1);
        }
    }

    /// Total bytes consumed since creation (stream offset), used in error messages.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The first up-to-128 bytes of the message of the most recent top-level error reply, without `-`/`!` header or CRLF.
    pub fn error_message(&self) -> &[u8] {
        &self.message[..usize::from(self.message_len)]
    }

    /// How many of the next bytes of the stream are a body that nothing reads: the rest of a
    /// bulk string's payload (`$`, a streamed `$?` string's chunk, a verbatim string's past its
    /// format, a bulk error's past the captured message), at any depth (an `LRANGE` reply's
    /// elements too). The caller may discard that many bytes without passing them to
    /// [`ReplyParser::parse`] and tell the parser with [`ReplyParser::skip`] (a socket read with
    /// `MSG_TRUNC`, which the kernel does not copy). The payload's CRLF is never skippable, so
    /// a skip never completes a reply: replies are still counted and ordered by `parse`.
    pub fn skippable(&self) -> u64 {
        match self.state {
            State::Payload { ty, remaining, len } if self.error.is_none() => {
                let captured = !self.capture || usize::from(self.message_len) == ERROR_MESSAGE_CAPACITY;
                // A verbatim string's byte 3 is checked (the `:` after its format).
                let checked = ty != b'=' || len - remaining > 3;
                if captured && checked {
                    remaining
                } else {
                    0
                }
            }
            _ => 0,
        }
    }

    /// `n` bytes of the stream were discarded unread; at most [`ReplyParser::skippable`] count
    /// (more is the caller's error: the excess is not taken, and the next bytes parsed are read
    /// as what follows the body). Returns how many counted.
    pub fn skip(&mut self, n: u64) -> u64 {
        let n = n.min(self.skippable());
        if let State::Payload { ty, remaining, len } = self.state {
            self.state = State::Payload { ty, remaining: remaining - n, len };
            self.offset += n;
        }
        n
    }

    /// Resets to the start-of-reply state (used when a connection reconnects). Offset resets too.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Parses at most one top-level reply from `input`, resuming where the previous call stopped.
    #[inline(always)]
    pub fn parse(&mut self, input: &[u8]) -> Result<Parsed, ProtocolError> {
        // The common case, a whole simple reply or bulk string at the start of `input`, is
        // inlined into the caller's loop; the rest is not.
        if self.error.is_none() && self.state == State::Type && self.depth == 0 && !self.kind_known {
            if let Some((consumed, kind)) = whole_simple_reply(input) {
                // What the state machine would leave after the same reply.
                self.type_at = self.offset;
                self.offset += consumed as u64;
                self.kind = kind;
                self.is_top = true;
                self.capture = false;
                self.line_len = 0;
                return Ok(Parsed::Complete { consumed, reply: Reply { kind } });
            }
        }
        self.parse_slow(input)
    }

    /// [`ReplyParser::parse`] by the state machine.
    #[inline(never)]
    fn parse_slow(&mut self, input: &[u8]) -> Result<Parsed, ProtocolError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        match self.run(input) {
            Ok(Some(consumed)) => {
                self.offset += consumed as u64;
                let reply = Reply { kind: self.kind };
                self.kind_known = false;
                self.kind_depth = 0;
                Ok(Parsed::Complete { consumed, reply })
            }
            Ok(None) => {
                self.offset += input.len() as u64;
                Ok(Parsed::Partial)
            }
            Err(e) => {
                self.error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Runs the state machine; `Some(consumed)` when a top-level reply completed.
    fn run(&mut self, input: &[u8]) -> Result<Option<usize>, ProtocolError> {
        let base = self.offset;
        let mut i = 0;
        loop {
            match self.state {
                State::Type => {
                    let Some(&ty) = input.get(i) else {
                        return Ok(None);
                    };
                    self.type_at = base + i as u64;
                    i += 1;
                    self.start_value(ty)?;
                }
                State::Simple { len } => {
                    let rest = &input[i..];
                    // The line may hold `room` more bytes: a CR among the next `room + 1` ends
                    // it in time, and `room + 1` bytes without one are too many.
                    let room = MAX_SIMPLE_LEN.saturating_sub(len);
                    let window = &rest[..rest.len().min(room.saturating_add(1))];
                    match window.iter().position(|&b| b == b'\r') {
                        Some(p) => {
                            self.capture_message(&rest[..p]);
                            i += p + 1;
                            match input.get(i) {
                                Some(b'\n') => {
                                    i += 1;
                                    if self.value_done() {
                                        return Ok(Some(i));
                                    }
                                }
                                Some(_) => return Err(err(base + i as u64, ProtocolErrorKind::ExpectedCrlf)),
                                None => {
                                    self.state = State::SimpleLf;
                                    return Ok(None);
                                }
                            }
                        }
                        None if window.len() > room => {
                            return Err(err(base + (i + room) as u64, ProtocolErrorKind::SimpleTooLong))
                        }
                        None => {
                            self.capture_message(rest);
                            // rest.len() <= room, so this stays at most MAX_SIMPLE_LEN.
                            self.state = State::Simple { len: len + rest.len() };
                            return Ok(None);
                        }
                    }
                }
                State::SimpleLf => {
                    let Some(&b) = input.get(i) else {
                        return Ok(None);
                    };
                    if b != b'\n' {
                        return Err(err(base + i as u64, ProtocolErrorKind::ExpectedCrlf));
                    }
                    i += 1;
                    if self.value_done() {
                        return Ok(Some(i));
                    }
                }
                State::Line { ty } => {
                    let rest = &input[i..];
                    let have = usize::from(self.line_len);
                    let room = MAX_LINE_LEN - have;
                    let window = &rest[..rest.len().min(room + 1)];
                    match window.iter().position(|&b| b == b'\r') {
                        Some(p) => match rest.get(p + 1) {
                            Some(b'\n') => {
                                let line_at = self.type_at + 1;
                                let next = if have == 0 {
                                    self.header(ty, &rest[..p], line_at)?
                                } else {
                                    let mut buf = self.line;
                                    buf[have..have + p].copy_from_slice(&rest[..p]);
                                    self.header(ty, &buf[..have + p], line_at)?
                                };
                                i += p + 2;
                                if next == Next::Done && self.value_done() {
                                    return Ok(Some(i));
                                }
                            }
                            Some(_) => {
                                return Err(err(base + (i + p + 1) as u64, ProtocolErrorKind::ExpectedCrlf))
                            }
                            None => {
                                self.buffer_line(&rest[..p]);
                                self.state = State::LineLf { ty };
                                return Ok(None);
                            }
                        },
                        None if window.len() > room => {
                            return Err(err(base + (i + room) as u64, ProtocolErrorKind::LineTooLong))
                        }
                        None => {
                            self.buffer_line(rest);
                            return Ok(None);
                        }
                    }
                }
                State::LineLf { ty } => {
                    let Some(&b) = input.get(i) else {
                        return Ok(None);
                    };
                    if b != b'\n' {
                        return Err(err(base + i as u64, ProtocolErrorKind::ExpectedCrlf));
                    }
                    i += 1;
                    let buf = self.line;
                    let next = self.header(ty, &buf[..usize::from(self.line_len)], self.type_at + 1)?;
                    if next == Next::Done && self.value_done() {
                        return Ok(Some(i));
                    }
                }
                State::Payload { ty, remaining, len } => {
                    let avail = (input.len() - i) as u64;
                    let take = remaining.min(avail) as usize;
                    let chunk = &input[i..i + take];
                    if ty == b'=' {
                        // The format separator is payload byte 3; `done` bytes were skipped before.
                        let done = len - remaining;
                        if done <= 3 && done + take as u64 > 3 {
                            let at = (3 - done) as usize;
                            if chunk.get(at) != Some(&b':') {
                                return Err(err(base + (i + at) as u64, ProtocolErrorKind::InvalidVerbatim));
                            }
                        }
                    }
                    self.capture_message(chunk);
                    i += take;
                    let remaining = remaining - take as u64;
                    if remaining > 0 {
                        self.state = State::Payload { ty, remaining, len };
                        return Ok(None);
                    }
                    // Fast path: the CRLF is usually in the same input.
                    if input.get(i..i + 2) == Some(b"\r\n") {
                        i += 2;
                        if self.payload_done(ty) {
                            return Ok(Some(i));
                        }
                    } else {
                        self.state = State::PayloadCr { ty };
                    }
                }
                State::PayloadCr { ty } => {
                    let Some(&b) = input.get(i) else {
                        return Ok(None);
                    };
                    if b != b'\r' {
                        return Err(err(base + i as u64, ProtocolErrorKind::ExpectedCrlf));
                    }
                    i += 1;
                    self.state = State::PayloadLf { ty };
                }
                State::PayloadLf { ty } => {
                    let Some(&b) = input.get(i) else {
                        return Ok(None);
                    };
                    if b != b'\n' {
                        return Err(err(base + i as u64, ProtocolErrorKind::ExpectedCrlf));
                    }
                    i += 1;
                    if self.payload_done(ty) {
                        return Ok(Some(i));
                    }
                }
                State::Chunk => {
                    let Some(&b) = input.get(i) else {
                        return Ok(None);
                    };
                    if b != b';' {
                        return Err(err(base + i as u64, ProtocolErrorKind::ExpectedStreamChunk(b)));
                    }
                    self.type_at = base + i as u64;
                    i += 1;
                    self.line_len = 0;
                    self.state = State::Line { ty: b';' };
                }
            }
        }
    }

    /// Handles a type byte at `self.type_at`.
    fn start_value(&mut self, ty: u8) -> Result<(), ProtocolError> {
        self.is_top = !self.kind_known
            && self.depth == self.kind_depth
            && (self.depth == 0 || self.frames[self.depth - 1].remaining == 1);
        match ty {
            b'+' | b'-' => {
                self.begin_capture(ty == b'-');
                self.state = State::Simple { len: 0 };
            }
            b'$' | b'!' | b'=' | b'*' | b'%' | b'~' | b'>' | b':' | b'#' | b',' | b'(' | b'_' => {
                self.line_len = 0;
                self.state = State::Line { ty };
            }
            b'|' => {
                self.line_len = 0;
                self.state = State::Line { ty };
                return Ok(());
            }
            b'.' => {
                let streamed = self.depth > 0 && self.frames[self.depth - 1].kind != FrameKind::Counted;
                if !streamed {
                    return Err(err(self.type_at, ProtocolErrorKind::UnexpectedStreamEnd));
                }
                self.line_len = 0;
                self.state = State::Line { ty };
                return Ok(());
            }
            _ => return Err(err(self.type_at, ProtocolErrorKind::UnknownType(ty))),
        }
        if self.is_top {
            self.kind = Kind::from_type(ty);
            self.kind_known = true;
        }
        Ok(())
    }

    fn begin_capture(&mut self, is_error: bool) {
        self.capture = is_error && self.is_top;
        if self.capture {
            self.message_len = 0;
        }
    }

    fn capture_message(&mut self, bytes: &[u8]) {
        if self.capture {
            let have = usize::from(self.message_len);
            let take = bytes.len().min(ERROR_MESSAGE_CAPACITY - have);
            self.message[have..have + take].copy_from_slice(&bytes[..take]);
            self.message_len = (have + take) as u8;
        }
    }

    fn buffer_line(&mut self, bytes: &[u8]) {
        // Callers only pass bytes that fit: the search window is bounded by the room left.
        let have = usize::from(self.line_len);
        let take = bytes.len().min(MAX_LINE_LEN - have);
        self.line[have..have + take].copy_from_slice(&bytes[..take]);
        self.line_len = (have + take) as u8;
    }

    /// Acts on a complete line after type byte `ty`; `at` is the stream offset of `line[0]`.
    fn header(&mut self, ty: u8, line: &[u8], at: u64) -> Result<Next, ProtocolError> {
        match ty {
            b'$' | b'!' | b'=' | b';' => {
                if ty == b'$' && line == b"-1" {
                    self.nil_value();
                    return Ok(Next::Done);
                }
                if ty == b'$' && line == b"?" {
                    self.state = State::Chunk;
                    return Ok(Next::Continue);
                }
                let len = parse_bulk_len(line, at)?;
                if ty == b'=' && len < 4 {
                    return Err(err(at, ProtocolErrorKind::InvalidVerbatim));
                }
                if ty == b';' && len == 0 {
                    return Ok(Next::Done);
                }
                if ty != b';' {
                    self.begin_capture(ty == b'!');
                }
                self.state = State::Payload { ty, remaining: len, len };
                Ok(Next::Continue)
            }
            b'*' | b'%' | b'~' | b'>' | b'|' => {
                if ty == b'*' && line == b"-1" {
                    self.nil_value();
                    return Ok(Next::Done);
                }
                let frame = if line == b"?" && ty != b'|' {
                    let kind = if ty == b'%' { FrameKind::StreamedMap } else { FrameKind::Streamed };
                    Frame { remaining: 0, kind }
                } else {
                    let n = parse_count(line, at)?;
                    if ty == b'*' && self.is_top {
                        (self.elements, self.nil_elements) = (n, 0);
                    }
                    // n <= i32::MAX, so 2n + 1 fits in u32.
                    let remaining = match ty {
                        b'%' => 2 * n,
                        b'|' => 2 * n + 1,
                        _ => n,
                    };
                    Frame { remaining, kind: FrameKind::Counted }
                };
                if self.depth == MAX_DEPTH {
                    return Err(err(self.type_at, ProtocolErrorKind::TooDeep));
                }
                if frame.kind == FrameKind::Counted && frame.remaining == 0 {
                    return Ok(Next::Done);
                }
                if ty == b'|' && self.is_top {
                    self.kind_depth += 1;
                }
                self.frames[self.depth] = frame;
                self.depth += 1;
                self.state = State::Type;
                Ok(Next::Continue)
            }
            b':' => parse_integer(line, at).map(|v| {
                if self.is_top {
                    self.integer = v;
                }
                Next::Done
            }),
            b'#' => check_boolean(line, at).map(|_| Next::Done),
            b',' => check_double(line, at).map(|_| Next::Done),
            b'(' => check_big_number(line, at).map(|_| Next::Done),
            b'_' | b'.' => {
                if !line.is_empty() {
                    return Err(err(at, ProtocolErrorKind::ExpectedCrlf));
                }
                if ty == b'_' {
                    self.nil_value();
                }
                if ty == b'.' {
                    // start_value checked that the innermost frame is streamed.
                    self.depth -= 1;
                    let frame = self.frames[self.depth];
                    if frame.kind == FrameKind::StreamedMap && frame.remaining != 0 {
                        return Err(err(self.type_at, ProtocolErrorKind::UnpairedMapEntry));
                    }
                }
                Ok(Next::Done)
            }
            _ => Err(err(self.type_at, ProtocolErrorKind::UnknownType(ty))),
        }
    }

    /// After a payload's CRLF: continue a streamed string, or complete the value.
    fn payload_done(&mut self, ty: u8) -> bool {
        if ty == b';' {
            self.state = State::Chunk;
            false
        } else {
            self.value_done()
        }
    }

    /// Records that a value ended; returns whether it completed the top-level reply.
    fn value_done(&mut self) -> bool {
        self.state = State::Type;
        self.capture = false;
        while let Some(top) = self.depth.checked_sub(1) {
            let frame = &mut self.frames[top];
            if frame.kind != FrameKind::Counted {
                frame.remaining ^= 1;
                return false;
            }
            frame.remaining = frame.remaining.saturating_sub(1);
            if frame.remaining > 0 {
                return false;
            }
            self.depth = top;
        }
        true
    }
}

/// The replies of a pipelined GET or SET when one is whole at the start of `input`: a bulk string
/// with a length of 1 to 6 digits (no leading zero) and its CRLF, or `+OK`. Returns its length
/// and kind; `None` sends the input through the state machine, which accepts all this does with
/// the same result (a pipeline's replies mostly arrive whole: this skips the machine's states).
#[inline(always)]
fn whole_simple_reply(input: &[u8]) -> Option<(usize, Kind)> {
    match *input.first()? {
        b'+' => (input.get(..5)? == b"+OK\r\n").then_some((5, Kind::SimpleString)),
        b'$' => {
            let mut len = 0usize;
            let mut i = 1;
            while let Some(&b) = input.get(i).filter(|b| b.is_ascii_digit()) {
                if i > 6 || (i == 2 && len == 0) {
                    return None;
                }
                len = len * 10 + usize::from(b - b'0');
                i += 1;
            }
            if i == 1 || input.get(i..i + 2)? != b"\r\n" {
                return None;
            }
            let end = i + 2 + len;
            (input.get(end..end + 2)? == b"\r\n").then_some((end + 2, Kind::Bulk))
        }
        _ => None,
    }
}

/// Feeds `input` to a fresh [`ReplyParser`] in chunks of the given sizes (cycling; a 0 size means 1; no sizes means one chunk), collecting the completed replies; stops at the first error. Never panics.
#[cfg(any(test, feature = "testing"))]
pub fn parse_chunked(input: &[u8], chunk_sizes: &[u8]) -> (Vec<Reply>, Option<ProtocolError>) {
    let (replies, error, _) = parse_chunked_skipping(input, chunk_sizes, &[0]);
    (replies, error)
}

/// [`parse_chunked`] with every skippable body discarded as a socket read with `MSG_TRUNC`
/// would: after each call, up to `skip_max` bytes (cycling; 0 means none) of what
/// [`ReplyParser::skippable`] allows are taken from the chunk by [`ReplyParser::skip`] instead of
/// being parsed. Returns the replies, the first error, and the bytes skipped. Never panics.
#[cfg(any(test, feature = "testing"))]
pub fn parse_chunked_skipping(
    input: &[u8],
    chunk_sizes: &[u8],
    skip_max: &[u32],
) -> (Vec<Reply>, Option<ProtocolError>, u64) {
    let mut parser = ReplyParser::new();
    let mut replies = Vec::new();
    let mut skipped = 0u64;
    let mut pos = 0;
    let mut sizes = chunk_sizes.iter().cycle();
    let mut skips = skip_max.iter().cycle();
    while pos < input.len() {
        // A discard happens before a read, as the byte layer does it: at most what the parser
        // allows and what the socket holds.
        let allowed = parser.skippable().min((input.len() - pos) as u64);
        let want = skips.next().map_or(allowed, |&m| allowed.min(u64::from(m)));
        if want > 0 {
            let took = parser.skip(want);
            skipped += took;
            pos += took as usize;
            continue;
        }
        let size = sizes.next().map_or(input.len() - pos, |&s| usize::from(s.max(1)));
        let end = input.len().min(pos + size);
        let mut chunk = &input[pos..end];
        pos = end;
        while !chunk.is_empty() {
            match parser.parse(chunk) {
                Ok(Parsed::Complete { consumed, reply }) => {
                    replies.push(reply);
                    chunk = chunk.get(consumed..).unwrap_or_default();
                }
                Ok(Parsed::Partial) => break,
                Err(e) => return (replies, Some(e), skipped),
            }
        }
    }
    (replies, None, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A top-level array's length and its nil direct elements (an `MGET`'s misses), whatever
    /// the null's spelling; nils deeper down are not its elements'.
    #[test]
    fn array_elements_count_the_nil_keys() {
        for (input, want) in [
            (&b"*3\r\n$1\r\na\r\n$-1\r\n_\r\n"[..], (3, 2)),
            (b"*2\r\n*2\r\n$-1\r\n$-1\r\n$-1\r\n", (2, 1)),
            (b"*2\r\n*-1\r\n$1\r\nb\r\n", (2, 1)),
            (b"*0\r\n", (0, 0)),
        ] {
            let mut p = ReplyParser::new();
            // The previous array's figures do not leak into the next.
            assert!(matches!(p.parse(b"*1\r\n$-1\r\n"), Ok(Parsed::Complete { .. })));
            for chunk in input.chunks(3) {
                p.parse(chunk).unwrap();
            }
            assert_eq!(p.array_elements(), want, "{}", String::from_utf8_lossy(input));
        }
    }
    use crate::resp::{error_prefix, Value, ERROR_PREFIX_MAX};
    use proptest::prelude::*;
    use ProtocolErrorKind as E;

    /// One valid reply per type and variant, with its expected kind.
    const VALID: &[(&[u8], Kind)] = &[
        (b"+OK\r\n", Kind::SimpleString),
        (b"+\r\n", Kind::SimpleString),
        (b"-ERR unknown command\r\n", Kind::Error),
        (b":0\r\n", Kind::Integer),
        (b":-9223372036854775808\r\n", Kind::Integer),
        (b":+9223372036854775807\r\n", Kind::Integer),
        (b"$3\r\nVXK\r\n", Kind::Bulk),
        (b"$0\r\n\r\n", Kind::Bulk),
        (b"$4\r\na\r\nb\r\n", Kind::Bulk),
        (b"$-1\r\n", Kind::Null),
        (b"*-1\r\n", Kind::Null),
        (b"*0\r\n", Kind::Array),
        (b"*2\r\n$1\r\na\r\n:1\r\n", Kind::Array),
        (b"*2\r\n*1\r\n-ERR x\r\n*0\r\n", Kind::Array),
        (b"_\r\n", Kind::Null),
        (b"#t\r\n", Kind::Boolean),
        (b"#f\r\n", Kind::Boolean),
        (b",3.14\r\n", Kind::Double),
        (b",-1.5e-10\r\n", Kind::Double),
        (b",inf\r\n", Kind::Double),
        (b",-inf\r\n", Kind::Double),
        (b",nan\r\n", Kind::Double),
        (b"(3492890328409238509324850943850943825024385\r\n", Kind::BigNumber),
        (b"(-1\r\n", Kind::BigNumber),
        (b"!21\r\nSYNTAX invalid syntax\r\n", Kind::BulkError),
        (b"=15\r\ntxt:Some string\r\n", Kind::Verbatim),
        (b"=4\r\nmkd:\r\n", Kind::Verbatim),
        (b"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", Kind::Map),
        (b"%0\r\n", Kind::Map),
        (b"~3\r\n+a\r\n+b\r\n#t\r\n", Kind::Set),
        (b">3\r\n+message\r\n+chan\r\n$5\r\nhello\r\n", Kind::Push),
        (b"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n", Kind::Array),
        (b"|0\r\n+OK\r\n", Kind::SimpleString),
        (b"|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n-ERR attributed\r\n", Kind::Error),
        (b"*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n", Kind::Array),
        (b"*1\r\n>2\r\n+a\r\n+b\r\n", Kind::Array),
        (b"$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n", Kind::Bulk),
        (b"$?\r\n;0\r\n", Kind::Bulk),
        (b"*?\r\n:1\r\n:2\r\n:3\r\n.\r\n", Kind::Array),
        (b"*?\r\n.\r\n", Kind::Array),
        (b"%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n", Kind::Map),
        (b"~?\r\n*?\r\n.\r\n$?\r\n;1\r\nx\r\n;0\r\n.\r\n", Kind::Set),
        (b">?\r\n+pubsub\r\n.\r\n", Kind::Push),
        (b"*3\r\n*?\r\n:1\r\n.\r\n|1\r\n+k\r\n+v\r\n*?\r\n.\r\n_\r\n", Kind::Array),
    ];

    fn parse_whole(input: &[u8]) -> Result<Parsed, ProtocolError> {
        ReplyParser::new().parse(input)
    }

    /// The state machine alone on `input`: its first byte goes in by itself, so the whole-reply
    /// shortcut never applies; then the rest, reply by reply.
    fn machine_only(input: &[u8]) -> (Vec<Result<Parsed, ProtocolError>>, u64) {
        let mut p = ReplyParser::new();
        let mut out = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let r = match p.parse(&rest[..1]) {
                Ok(Parsed::Partial) => p.run(&rest[1..]).map(|done| match done {
                    Some(n) => {
                        p.offset += n as u64;
                        let reply = Reply { kind: p.kind };
                        p.kind_known = false;
                        p.kind_depth = 0;
                        Parsed::Complete { consumed: n + 1, reply }
                    }
                    None => {
                        p.offset += (rest.len() - 1) as u64;
                        Parsed::Partial
                    }
                }),
                other => other,
            };
            let go = match &r {
                Ok(Parsed::Complete { consumed, .. }) => *consumed,
                _ => rest.len(),
            };
            out.push(r);
            rest = &rest[go..];
            if out.last().is_some_and(|r| r.is_err()) {
                break;
            }
        }
        (out, p.offset)
    }

    #[test]
    fn the_whole_reply_shortcut_agrees_with_the_state_machine() {
        let big = [b"$999999\r\n".as_slice(), &[b'v'; 999_999], b"\r\n"].concat();
        let cases: &[&[u8]] = &[
            b"$3\r\nxxx\r\n",
            b"$0\r\n\r\n",
            b"$03\r\nxxx\r\n",
            b"$00\r\n\r\n",
            b"$4\r\na\r\nb\r\n",
            b"$3\r\nxxxx\r\n",
            b"$3\r\nxx",
            b"$-1\r\n",
            b"$1000000\r\n",
            b"$\r\n",
            b"+OK\r\n",
            b"+OKAY\r\n",
            b"+OK\rx",
            b"-ERR x\r\n",
            &big,
        ];
        for &case in cases {
            // Each case twice, then a bulk and an +OK: the state after each must be the same.
            let input = [case, case, b"$1\r\nz\r\n+OK\r\n"].concat();
            let mut p = ReplyParser::new();
            let mut fast = Vec::new();
            let mut rest = &input[..];
            while !rest.is_empty() {
                let r = p.parse(rest);
                let go = match &r {
                    Ok(Parsed::Complete { consumed, .. }) => *consumed,
                    _ => rest.len(),
                };
                fast.push(r);
                rest = &rest[go..];
                if fast.last().is_some_and(|r| r.is_err()) {
                    break;
                }
            }
            let name = String::from_utf8_lossy(&case[..case.len().min(20)]);
            let (slow, offset) = machine_only(&input);
            // After an error the offset says how the input was split, not what was consumed.
            if slow.iter().all(|r| r.is_ok()) {
                assert_eq!(p.offset, offset, "{name}");
            }
            assert_eq!(fast, slow, "{name}");
        }
    }

    #[test]
    fn valid_replies_complete_with_kind_and_length() {
        for &(input, kind) in VALID {
            let name = String::from_utf8_lossy(input);
            let want = Parsed::Complete { consumed: input.len(), reply: Reply { kind } };
            assert_eq!(parse_whole(input), Ok(want), "{name}");
            for end in 0..input.len() {
                assert_eq!(parse_whole(&input[..end]), Ok(Parsed::Partial), "{name} prefix {end}");
            }
            for pad in [&b"+OK\r\n"[..], b"garbage", b"\r\n", b"*1\r\n"] {
                let padded = [input, pad].concat();
                assert_eq!(parse_whole(&padded), Ok(want), "{name} padded");
            }
            // Value::parse accepts the same inputs and consumes the same bytes.
            let (_, consumed) = Value::parse(input).unwrap().expect("complete");
            assert_eq!(consumed, input.len(), "{name}");
            for end in 0..input.len() {
                assert_eq!(Value::parse(&input[..end]), Ok(None), "{name} prefix {end}");
            }
        }
    }

    #[test]
    fn valid_replies_byte_at_a_time() {
        let all: Vec<u8> = VALID.iter().flat_map(|(input, _)| input.iter().copied()).collect();
        let want: Vec<Reply> = VALID.iter().map(|&(_, kind)| Reply { kind }).collect();
        assert_eq!(parse_chunked(&all, &[]), (want.clone(), None));
        assert_eq!(parse_chunked(&all, &[1]), (want.clone(), None));
        assert_eq!(parse_chunked(&all, &[0, 2, 3, 7, 64]), (want, None));
    }

    #[test]
    fn multiple_replies_in_one_buffer() {
        let input = b"+OK\r\n$3\r\nVXK\r\n:42\r\n-ERR x\r\n";
        let mut parser = ReplyParser::new();
        let mut rest = &input[..];
        let mut kinds = Vec::new();
        while let Parsed::Complete { consumed, reply } = parser.parse(rest).unwrap() {
            kinds.push(reply.kind);
            rest = &rest[consumed..];
        }
        assert!(rest.is_empty());
        assert_eq!(kinds, [Kind::SimpleString, Kind::Bulk, Kind::Integer, Kind::Error]);
        assert_eq!(parser.offset(), input.len() as u64);
        assert_eq!(parser.error_message(), b"ERR x");
    }

    /// Malformed inputs with the expected error kind and stream offset.
    const MALFORMED: &[(&[u8], ProtocolErrorKind, u64)] = &[
        (b"A", E::UnknownType(b'A'), 0),
        (b"+OK\r\nX", E::UnknownType(b'X'), 5),
        (b"*1\r\n\x00", E::UnknownType(0), 4),
        (b"+OK\rX", E::ExpectedCrlf, 4),
        (b"$3\rX", E::ExpectedCrlf, 3),
        (b"$3\r\nabcX", E::ExpectedCrlf, 7),
        (b"$3\r\nabc\rX", E::ExpectedCrlf, 8),
        (b"_x\r\n", E::ExpectedCrlf, 1),
        (b"$\r\n", E::InvalidLength, 1),
        (b"$1x\r\n", E::InvalidLength, 2),
        (b"$-2\r\n", E::InvalidLength, 1),
        (b"!-1\r\n", E::InvalidLength, 1),
        (b"*-2\r\n", E::InvalidLength, 1),
        (b"%-1\r\n", E::InvalidLength, 1),
        (b"|?\r\n", E::InvalidLength, 1),
        (b"*\r\n", E::InvalidLength, 1),
        (b"$536870913\r\n", E::BulkTooLarge(536_870_913), 1),
        (b"!99999999999999999999999\r\n", E::BulkTooLarge(u64::MAX), 1),
        (b"*2147483648\r\n", E::AggregateTooLarge(2_147_483_648), 1),
        (b":\r\n", E::InvalidInteger, 1),
        (b":-\r\n", E::InvalidInteger, 1),
        (b":12a\r\n", E::InvalidInteger, 3),
        (b":9223372036854775808\r\n", E::InvalidInteger, 1),
        (b"#x\r\n", E::InvalidBoolean, 1),
        (b"#tt\r\n", E::InvalidBoolean, 1),
        (b",1.5x\r\n", E::InvalidDouble, 1),
        (b",\r\n", E::InvalidDouble, 1),
        (b",-\r\n", E::InvalidDouble, 1),
        (b"(12.5\r\n", E::InvalidBigNumber, 1),
        (b"(-\r\n", E::InvalidBigNumber, 1),
        (b"=3\r\ntxt\r\n", E::InvalidVerbatim, 1),
        (b"=5\r\ntxt!x\r\n", E::InvalidVerbatim, 7),
        (b".\r\n", E::UnexpectedStreamEnd, 0),
        (b"*1\r\n.\r\n", E::UnexpectedStreamEnd, 4),
        (b"*?\r\n|0\r\n.\r\n", E::UnexpectedStreamEnd, 8),
        (b"$?\r\n+x\r\n", E::ExpectedStreamChunk(b'+'), 4),
        (b"$?\r\n;2\r\nab\r\n:1\r\n", E::ExpectedStreamChunk(b':'), 12),
        (b"$?\r\n;x\r\n", E::InvalidLength, 5),
        (b"%?\r\n+a\r\n.\r\n", E::UnpairedMapEntry, 8),
        (b"*?\r\n.x\r\n", E::ExpectedCrlf, 5),
    ];

    fn first_error(input: &[u8]) -> Option<ProtocolError> {
        parse_chunked(input, &[]).1
    }

    #[test]
    fn malformed_inputs_report_kind_and_offset() {
        for (input, kind, offset) in MALFORMED {
            let name = String::from_utf8_lossy(input);
            let want = ProtocolError { offset: *offset, kind: kind.clone() };
            assert_eq!(first_error(input), Some(want.clone()), "{name}");
            // Split feeding and Value::parse find the same error at the same place.
            assert_eq!(parse_chunked(input, &[1]).1, Some(want.clone()), "{name} bytewise");
            if parse_chunked(input, &[]).0.is_empty() {
                assert_eq!(Value::parse(input), Err(want), "{name} Value::parse");
            }
        }
    }

    #[test]
    fn long_lines() {
        let at_limit = [&b":"[..], &[b'1'; MAX_LINE_LEN - 1], b"\r\n"].concat();
        assert!(parse_chunked(&at_limit, &[]).0.is_empty()); // 63 digits overflow i64
        let big = [&b"("[..], &[b'1'; MAX_LINE_LEN], b"\r\n"].concat();
        assert_eq!(parse_chunked(&big, &[]), (vec![Reply { kind: Kind::BigNumber }], None));
        let too_long = [&b"("[..], &[b'1'; MAX_LINE_LEN + 1], b"\r\n"].concat();
        let want = ProtocolError { offset: 1 + MAX_LINE_LEN as u64, kind: E::LineTooLong };
        for sizes in [&[][..], &[1], &[5, 3]] {
            assert_eq!(parse_chunked(&too_long, sizes).1, Some(want.clone()));
        }
        assert_eq!(Value::parse(&too_long), Err(want));
        // An endless length line fails without buffering it.
        let endless = [&b"$"[..], &[b'7'; 100_000]].concat();
        assert_eq!(first_error(&endless).map(|e| e.kind), Some(E::LineTooLong));
        // Long simple strings and errors stream through, their message captured in part.
        let long = [&b"-"[..], &[b'x'; 100_000], b"\r\n"].concat();
        let mut parser = ReplyParser::new();
        let reply = Reply { kind: Kind::Error };
        assert_eq!(parser.parse(&long), Ok(Parsed::Complete { consumed: long.len(), reply }));
        assert_eq!(parser.error_message(), &[b'x'; ERROR_MESSAGE_CAPACITY][..]);
    }

    /// A simple string or error of exactly [`MAX_SIMPLE_LEN`] bytes is a reply, fed whole or in
    /// pieces; one byte more without a CR is an error at that byte, whole, bytewise or split,
    /// and so in `Value::parse`.
    #[test]
    fn simple_lines_at_and_over_the_limit() {
        for (ty, kind) in [(b'+', Kind::SimpleString), (b'-', Kind::Error)] {
            let at_limit = [&[ty][..], &vec![b'x'; MAX_SIMPLE_LEN], b"\r\n"].concat();
            for sizes in [&[][..], &[7], &[255, 1]] {
                assert_eq!(parse_chunked(&at_limit, sizes), (vec![Reply { kind }], None), "{sizes:?}");
            }
            assert!(matches!(Value::parse(&at_limit), Ok(Some((_, n))) if n == at_limit.len()));
            let over = [&[ty][..], &vec![b'x'; MAX_SIMPLE_LEN + 1]].concat();
            let want = ProtocolError { offset: 1 + MAX_SIMPLE_LEN as u64, kind: E::SimpleTooLong };
            for sizes in [&[][..], &[7], &[255, 1]] {
                assert_eq!(parse_chunked(&over, sizes), (vec![], Some(want.clone())), "{sizes:?}");
            }
            assert_eq!(Value::parse(&over), Err(want.clone()));
            // The CR itself just past the limit is too late as well.
            let late_cr = [&over[..], b"\r\n"].concat();
            assert_eq!(parse_chunked(&late_cr, &[]).1, Some(want.clone()));
        }
        let e = ProtocolError { offset: 1_048_577, kind: E::SimpleTooLong };
        assert_eq!(
            e.to_string(),
            "protocol error at byte 1048577: a simple string or error reply ran past 1048576 bytes \
             without ending (no CRLF): the server sent a line that does not end, and respbench closed \
             the connection"
        );
    }

    /// Every prefix of a line up to the limit is `Partial` (fed a byte at a time, and each length
    /// at the edges fed whole to a new parser); the byte past the limit is the error.
    #[test]
    fn every_prefix_below_the_simple_limit_is_partial() {
        let mut parser = ReplyParser::new();
        assert_eq!(parser.parse(b"+"), Ok(Parsed::Partial));
        for n in 1..=MAX_SIMPLE_LEN {
            assert_eq!(parser.parse(b"x"), Ok(Parsed::Partial), "after {n} bytes");
        }
        let want = ProtocolError { offset: 1 + MAX_SIMPLE_LEN as u64, kind: E::SimpleTooLong };
        assert_eq!(parser.parse(b"x"), Err(want.clone()));
        let line = [&b"-"[..], &vec![b'x'; MAX_SIMPLE_LEN + 1]].concat();
        for n in (0..=16).chain(MAX_SIMPLE_LEN - 16..=MAX_SIMPLE_LEN) {
            let mut parser = ReplyParser::new();
            assert_eq!(parser.parse(&line[..1 + n]), Ok(Parsed::Partial), "{n} bytes whole");
            assert_eq!(Value::parse(&line[..1 + n]), Ok(None), "{n} bytes, Value::parse");
        }
        assert_eq!(ReplyParser::new().parse(&line), Err(want));
    }

    #[test]
    fn errors_are_sticky_and_reset_clears_them() {
        let mut parser = ReplyParser::new();
        let e = parser.parse(b"+OK\r\n").map(|_| ()).and_then(|_| parser.parse(b"?")).unwrap_err();
        assert_eq!(e, ProtocolError { offset: 5, kind: E::UnknownType(b'?') });
        assert_eq!(parser.parse(b"+OK\r\n"), Err(e.clone()));
        assert_eq!(e.to_string(), "protocol error at byte 5: unknown reply type byte 0x3f ('?')");
        parser.reset();
        assert_eq!(parser.offset(), 0);
        let reply = Reply { kind: Kind::SimpleString };
        assert_eq!(parser.parse(b"+OK\r\n"), Ok(Parsed::Complete { consumed: 5, reply }));
    }

    fn nested(levels: usize, leaf: &[u8]) -> Vec<u8> {
        let mut out = b"*1\r\n".repeat(levels);
        out.extend_from_slice(leaf);
        out
    }

    #[test]
    fn nesting_limit() {
        let ok = nested(MAX_DEPTH, b":1\r\n");
        let reply = Reply { kind: Kind::Array };
        assert_eq!(parse_chunked(&ok, &[]), (vec![reply], None));
        assert_eq!(parse_chunked(&ok, &[1]), (vec![reply], None));
        assert!(matches!(Value::parse(&ok), Ok(Some((_, n))) if n == ok.len()));
        // A null at the limit is not an aggregate.
        assert_eq!(parse_chunked(&nested(MAX_DEPTH, b"*-1\r\n"), &[]).1, None);

        let too_deep = nested(MAX_DEPTH + 1, b":1\r\n");
        let want = ProtocolError { offset: 4 * MAX_DEPTH as u64, kind: E::TooDeep };
        assert_eq!(first_error(&too_deep), Some(want.clone()));
        assert_eq!(Value::parse(&too_deep), Err(want.clone()));
        assert_eq!(first_error(&nested(MAX_DEPTH, b"*0\r\n")), Some(want.clone()));

        // Attributes are a nesting level too, so a chain of them cannot recurse without bound.
        let attrs = b"|0\r\n".repeat(MAX_DEPTH + 1);
        assert_eq!(first_error(&attrs), Some(want.clone()));
        assert_eq!(Value::parse(&attrs), Err(want.clone()));

        let bomb = nested(1_000_000, b":1\r\n");
        assert_eq!(first_error(&bomb), Some(want.clone()));
        assert_eq!(Value::parse(&bomb), Err(want));
    }

    #[test]
    fn lrange_600_reply_in_chunks() {
        let mut input = Vec::new();
        let values: Vec<Value> = (0..600).map(|_| Value::Bulk(b"VXK".to_vec())).collect();
        Value::Array(values.clone()).encode(&mut input);
        input.extend_from_slice(b"+OK\r\n");
        let want = vec![Reply { kind: Kind::Array }, Reply { kind: Kind::SimpleString }];
        for sizes in [&[][..], &[1], &[7], &[255, 13]] {
            assert_eq!(parse_chunked(&input, sizes), (want.clone(), None));
        }
        let (value, consumed) = Value::parse(&input).unwrap().unwrap();
        assert_eq!((value, consumed), (Value::Array(values), input.len() - 5));
    }

    #[test]
    fn one_mib_bulk_in_4k_chunks() {
        let payload = vec![b'\r'; 1 << 20];
        let mut input = Vec::new();
        Value::Bulk(payload).encode(&mut input);
        let mut parser = ReplyParser::new();
        let mut chunks = input.chunks(4096).peekable();
        while let Some(chunk) = chunks.next() {
            let got = parser.parse(chunk).unwrap();
            if chunks.peek().is_some() {
                assert_eq!(got, Parsed::Partial);
            } else {
                let reply = Reply { kind: Kind::Bulk };
                assert_eq!(got, Parsed::Complete { consumed: chunk.len(), reply });
            }
        }
        assert_eq!(parser.offset(), input.len() as u64);
    }

    #[test]
    fn a_bulk_body_is_skippable_but_never_its_crlf() {
        let mut input = Vec::new();
        Value::Bulk(vec![b'x'; 100_000]).encode(&mut input);
        input.extend_from_slice(b"+OK\r\n");
        let mut p = ReplyParser::new();
        assert_eq!(p.skippable(), 0, "nothing before a header");
        // The header and 10 body bytes.
        assert_eq!(p.parse(&input[..19]), Ok(Parsed::Partial));
        assert_eq!(p.skippable(), 99_990);
        // More than allowed counts as what is allowed.
        assert_eq!(p.skip(200_000), 99_990);
        assert_eq!((p.skippable(), p.offset()), (0, 100_009));
        let reply = Reply { kind: Kind::Bulk };
        assert_eq!(p.parse(&input[100_009..]), Ok(Parsed::Complete { consumed: 2, reply }));
        assert_eq!(p.skippable(), 0);
        let ok = Reply { kind: Kind::SimpleString };
        assert_eq!(p.parse(&input[100_011..]), Ok(Parsed::Complete { consumed: 5, reply: ok }));
        assert_eq!(p.offset(), input.len() as u64);
    }

    #[test]
    fn what_is_read_is_never_skippable() {
        let skippable_after = |prefix: &[u8]| {
            let mut p = ReplyParser::new();
            let _ = p.parse(prefix);
            p.skippable()
        };
        // A top-level bulk error's message is captured: skippable past it only.
        assert_eq!(skippable_after(b"!200\r\nSYNTAX"), 0);
        let mut long = b"!200\r\n".to_vec();
        long.extend_from_slice(&[b'e'; ERROR_MESSAGE_CAPACITY]);
        assert_eq!(skippable_after(&long), 200 - ERROR_MESSAGE_CAPACITY as u64);
        // A nested one is not captured.
        assert_eq!(skippable_after(b"*1\r\n!200\r\nSYN"), 197);
        // A verbatim string's format is checked.
        assert_eq!(skippable_after(b"=100\r\ntx"), 0);
        assert_eq!(skippable_after(b"=100\r\ntxt:"), 96);
        // Lines, simple strings and errors are read.
        for prefix in [&b"+OK"[..], b"-ERR", b":12", b"$10", b"*3\r\n", b"$?\r\n"] {
            assert_eq!(skippable_after(prefix), 0, "{:?}", String::from_utf8_lossy(prefix));
        }
        // A streamed string's chunk and an LRANGE reply's element.
        assert_eq!(skippable_after(b"$?\r\n;5\r\nab"), 3);
        assert_eq!(skippable_after(b"*600\r\n$3\r\nVXK\r\n$3\r\nV"), 2);
        // After an error, nothing.
        assert_eq!(skippable_after(b"?$5\r\nabc"), 0);
    }

    /// Replies, as encoded, with bodies of every size up to `max` (and some larger), and an
    /// LRANGE-like array of them.
    fn bodies_of_every_size(max: usize) -> Vec<u8> {
        let mut input = Vec::new();
        let mut lrange = Vec::new();
        for len in (0..=max).chain([4095, 4096, 65_537]) {
            let body: Vec<u8> = (0..len).map(|i| b"\r\n$*x"[i % 5]).collect();
            Value::Bulk(body.clone()).encode(&mut input);
            lrange.push(Value::Bulk(body));
        }
        Value::Array(lrange).encode(&mut input);
        Value::Verbatim { format: *b"txt", text: vec![b'v'; 300] }.encode(&mut input);
        input.extend_from_slice(b"$?\r\n;4\r\nabcd\r\n;300\r\n");
        input.extend_from_slice(&[b'c'; 300]);
        input.extend_from_slice(b"\r\n;0\r\n");
        input
    }

    #[test]
    fn skipping_bodies_fed_in_segments_of_every_size_is_exact() {
        let input = bodies_of_every_size(70);
        let (want, none) = parse_chunked(&input, &[]);
        assert_eq!((want.len(), none), (70 + 1 + 3 + 3, None));
        // Every body byte, the verbatim string's after its format (`txt:`).
        let bodies: u64 = (0..=70u64).chain([4095, 4096, 65_537]).sum::<u64>() * 2 + 300 + 4 + 300;
        for segment in 1..=40u8 {
            for cap in [1, 3, 4096, u32::MAX] {
                let (replies, error, skipped) = parse_chunked_skipping(&input, &[segment], &[cap]);
                assert_eq!((&replies, error), (&want, None), "segments of {segment}, skips of {cap}");
                assert!(skipped > 0 && skipped <= bodies, "{skipped} of {bodies}");
            }
        }
        // Read a byte at a time, skipping all that is allowed: every body byte is skipped,
        // and nothing else.
        let (replies, _, skipped) = parse_chunked_skipping(&input, &[1], &[]);
        assert_eq!((replies, skipped), (want, bodies));
    }

    #[test]
    fn error_messages_and_prefixes() {
        let mut parser = ReplyParser::new();
        let input = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        assert!(matches!(parser.parse(input), Ok(Parsed::Complete { reply, .. }) if reply.is_error()));
        assert_eq!(parser.error_message(), &input[1..input.len() - 2]);
        assert_eq!(error_prefix(parser.error_message()), b"WRONGTYPE");

        // Split across calls, and bulk errors too.
        assert_eq!(parse_chunked(b"-ERR\r\n", &[1]).0[0].kind, Kind::Error);
        for part in [&b"!10\r\nMOVED "[..], b"3999", b"\r\n"] {
            let _ = parser.parse(part).unwrap();
        }
        assert_eq!(parser.error_message(), b"MOVED 3999");
        assert_eq!(error_prefix(parser.error_message()), b"MOVED");

        assert_eq!(error_prefix(b"ERR"), b"ERR");
        assert_eq!(error_prefix(b""), b"");
        assert_eq!(error_prefix(&[b'E'; 40]), &[b'E'; ERROR_PREFIX_MAX][..]);

        // Errors nested in a reply are elements, not the reply's message.
        let mut parser = ReplyParser::new();
        let _ = parser.parse(b"-ERR top\r\n").unwrap();
        let got = parser.parse(b"*1\r\n-ERR nested\r\n").unwrap();
        assert!(matches!(got, Parsed::Complete { reply, .. } if !reply.is_error()));
        assert_eq!(parser.error_message(), b"ERR top");
    }

    #[test]
    fn push_is_flagged() {
        let (replies, _) = parse_chunked(b">2\r\n+message\r\n+x\r\n:1\r\n", &[]);
        assert!(replies[0].is_push() && !replies[1].is_push());
    }

    fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(any::<u8>(), 0..max)
    }

    /// Bytes valid inside a simple string or error: anything but CR and LF.
    fn line_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'), 0..20)
    }

    /// Random bytes drawn mostly from RESP's own alphabet, so they reach deep parser states.
    fn resp_like_bytes() -> impl Strategy<Value = Vec<u8>> {
        const ALPHABET: &[u8] = b"*$+-:_#,(!=%~>|.;?\r\n\r\n\r\n0123456789-tfx";
        prop::collection::vec(prop::sample::select(ALPHABET), 0..200)
    }

    fn text(regex: &'static str) -> impl Strategy<Value = Vec<u8>> {
        proptest::string::string_regex(regex).expect("valid regex").prop_map(String::into_bytes)
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            line_bytes().prop_map(Value::Simple),
            line_bytes().prop_map(Value::Error),
            any::<i64>().prop_map(Value::Integer),
            bytes(40).prop_map(Value::Bulk),
            Just(Value::Null),
            any::<bool>().prop_map(Value::Boolean),
            text("inf|-inf|nan|-?[0-9]{1,10}(\\.[0-9]{1,10})?([eE][-+]?[0-9]{1,3})?").prop_map(Value::Double),
            text("-?[0-9]{1,60}").prop_map(Value::BigNumber),
            bytes(40).prop_map(Value::BulkError),
            (any::<[u8; 3]>(), bytes(20)).prop_map(|(format, text)| Value::Verbatim { format, text }),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            let items = prop::collection::vec(inner.clone(), 0..6);
            let entries = prop::collection::vec((inner.clone(), inner.clone()), 0..4);
            prop_oneof![
                items.clone().prop_map(Value::Array),
                items.clone().prop_map(Value::Set),
                items.prop_map(Value::Push),
                entries.clone().prop_map(Value::Map),
                (entries, inner)
                    .prop_map(|(attrs, value)| Value::Attribute { attrs, value: Box::new(value) }),
            ]
        })
    }

    /// The kind a ReplyParser reports for a value: attributes take the annotated value's kind.
    fn kind_of(value: &Value) -> Kind {
        match value {
            Value::Simple(_) => Kind::SimpleString,
            Value::Error(_) => Kind::Error,
            Value::Integer(_) => Kind::Integer,
            Value::Bulk(_) => Kind::Bulk,
            Value::Array(_) => Kind::Array,
            Value::Null => Kind::Null,
            Value::Boolean(_) => Kind::Boolean,
            Value::Double(_) => Kind::Double,
            Value::BigNumber(_) => Kind::BigNumber,
            Value::BulkError(_) => Kind::BulkError,
            Value::Verbatim { .. } => Kind::Verbatim,
            Value::Map(_) => Kind::Map,
            Value::Set(_) => Kind::Set,
            Value::Push(_) => Kind::Push,
            Value::Attribute { value, .. } => kind_of(value),
        }
    }

    proptest! {
        #[test]
        fn encode_then_parse_round_trips(value in arb_value()) {
            let mut encoded = Vec::new();
            value.encode(&mut encoded);
            prop_assert_eq!(Value::parse(&encoded), Ok(Some((value.clone(), encoded.len()))));
            let reply = Reply { kind: kind_of(&value) };
            prop_assert_eq!(
                ReplyParser::new().parse(&encoded),
                Ok(Parsed::Complete { consumed: encoded.len(), reply })
            );
        }

        #[test]
        fn any_split_gives_the_same_replies(
            values in prop::collection::vec(arb_value(), 1..5),
            sizes in prop::collection::vec(any::<u8>(), 1..8),
        ) {
            let mut encoded = Vec::new();
            for value in &values {
                value.encode(&mut encoded);
            }
            let want: Vec<Reply> = values.iter().map(|v| Reply { kind: kind_of(v) }).collect();
            prop_assert_eq!(parse_chunked(&encoded, &[]), (want.clone(), None));
            prop_assert_eq!(parse_chunked(&encoded, &sizes), (want, None));
        }

        #[test]
        fn skipping_what_is_skippable_changes_nothing(
            values in prop::collection::vec(arb_value(), 1..5),
            sizes in prop::collection::vec(any::<u8>(), 1..8),
            skips in prop::collection::vec(0..300u32, 1..8),
        ) {
            let mut encoded = Vec::new();
            for value in &values {
                value.encode(&mut encoded);
            }
            let (replies, error, _) = parse_chunked_skipping(&encoded, &sizes, &skips);
            prop_assert_eq!((replies, error), parse_chunked(&encoded, &sizes));
        }

        #[test]
        fn skipping_in_arbitrary_bytes_finds_the_same_replies_and_errors(
            input in prop_oneof![bytes(200), resp_like_bytes()],
            sizes in prop::collection::vec(any::<u8>(), 1..8),
            skips in prop::collection::vec(0..50u32, 1..8),
        ) {
            let (replies, error, _) = parse_chunked_skipping(&input, &sizes, &skips);
            prop_assert_eq!((replies, error), parse_chunked(&input, &[]));
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_splits_agree(
            input in prop_oneof![bytes(200), resp_like_bytes()],
            sizes in prop::collection::vec(any::<u8>(), 1..8),
        ) {
            let whole = parse_chunked(&input, &[]);
            prop_assert_eq!(parse_chunked(&input, &sizes), whole.clone());
            // Value::parse agrees with the streaming parser on the first reply.
            match (Value::parse(&input), whole) {
                (Err(e), (replies, Some(first))) if replies.is_empty() => prop_assert_eq!(e, first),
                (Ok(Some((value, _))), (replies, _)) => {
                    prop_assert_eq!(replies.first().map(|r| r.kind), Some(kind_of(&value)));
                }
                (Ok(None), (replies, None)) => prop_assert!(replies.is_empty()),
                (v, w) => prop_assert!(false, "Value::parse {:?} vs ReplyParser {:?}", v, w),
            }
        }
    }
}
