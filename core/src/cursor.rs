//! `--follow-cursor`: a SCAN-family command (`SCAN`, `HSCAN`, `SSCAN`, `ZSCAN`) sent as a client
//! walking a keyspace sends it: with cursor 0, then with the cursor each reply returns, until a
//! reply returns 0 (a full iteration), then from 0 again. Each client follows its own cursor on
//! its own connection, one call at a time.
//!
//! The first call of an iteration and its continuations are counted as two commands of the
//! test's mix ([`FIRST`], [`NEXT`]), so the report gives figures for each. A reply is read
//! from its first [`REPLY_PREFIX`] bytes, which hold the cursor and the count of elements: a
//! cursor that is not a number is a [`BadCursor`], counted as an error of the request, never a
//! panic, and the client starts again from 0.

/// The mix's command for the first call of an iteration (cursor 0).
pub const FIRST: u16 = 0;
/// The mix's command for a continuation (the cursor a reply returned).
pub const NEXT: u16 = 1;

/// The bytes of a reply read for its cursor and count: `*2\r\n$20\r\n` and 20 digits, then
/// `*` and up to 20 digits of the count, each line with its `\r\n`, fit in 64.
pub const REPLY_PREFIX: usize = 64;

/// The error word a reply without a good cursor is counted under.
pub const BAD_CURSOR: &[u8] = b"BADCURSOR the reply's cursor is not a number";

/// The most digits of a cursor or a count: a `u64` has 20.
const MAX_DIGITS: usize = 20;

/// A reply that is not `[cursor, [elements…]]` with a decimal cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadCursor;

/// What one reply said: the next cursor (0: the iteration is over) and how many elements it
/// returned (a hash's or a sorted set's fields and values both count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// The cursor to send next; 0 ends the iteration.
    pub cursor: u64,
    /// The length of the reply's array of elements.
    pub elements: u64,
}

/// A reply's cursor and count, from its first bytes (at least through the count's line).
pub fn parse(reply: &[u8]) -> Result<Page, BadCursor> {
    let rest = reply.strip_prefix(b"*2\r\n").ok_or(BadCursor)?;
    let rest = match rest.first() {
        // A bulk string (RESP2 and RESP3), its length then its digits.
        Some(b'$') => {
            let (len, rest) = number(&rest[1..])?;
            let len = usize::try_from(len).map_err(|_| BadCursor)?;
            if len == 0 || len > MAX_DIGITS || rest.len() < len {
                return Err(BadCursor);
            }
            let (digits, rest) = rest.split_at(len);
            (decimal(digits)?, rest.strip_prefix(b"\r\n").ok_or(BadCursor)?)
        }
        // A simple string, as some servers send it.
        Some(b'+') => number(&rest[1..])?,
        _ => return Err(BadCursor),
    };
    let (cursor, rest) = rest;
    let rest = rest.strip_prefix(b"*").ok_or(BadCursor)?;
    let (elements, _) = number(rest)?;
    Ok(Page { cursor, elements })
}

/// A decimal `u64` ended by `\r\n` at the start of `bytes`, and what follows.
fn number(bytes: &[u8]) -> Result<(u64, &[u8]), BadCursor> {
    let end = bytes.iter().take(MAX_DIGITS + 1).position(|&b| b == b'\r').ok_or(BadCursor)?;
    if bytes.get(end + 1) != Some(&b'\n') {
        return Err(BadCursor);
    }
    Ok((decimal(&bytes[..end])?, &bytes[end + 2..]))
}

/// `digits` as a `u64`: one digit at least, nothing else, no overflow.
fn decimal(digits: &[u8]) -> Result<u64, BadCursor> {
    if digits.is_empty() {
        return Err(BadCursor);
    }
    digits.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return Err(BadCursor);
        }
        n.checked_mul(10).and_then(|n| n.checked_add(u64::from(b - b'0'))).ok_or(BadCursor)
    })
}

/// Replaces argument `arg` of the request encoded in `buf[start..]` (a RESP array of bulk
/// strings) with `cursor` in decimal; `false` (and `buf` unchanged) when the request has no
/// such argument.
pub fn splice(buf: &mut Vec<u8>, start: usize, arg: usize, cursor: u64) -> bool {
    let Some(range) = buf.get(start..).and_then(|r| crate::cluster::resp_arg(r, arg)) else {
        return false;
    };
    // The argument's `$len\r\n` header goes too: it starts after the previous `\r\n`.
    let (from, to) = (start + range.start, start + range.end);
    let Some(head) = buf[start..from - 2].iter().rposition(|&b| b == b'$').map(|h| start + h) else {
        return false;
    };
    let digits = cursor.to_string();
    let header = format!("${}\r\n{digits}", digits.len());
    buf.splice(head..to, header.bytes());
    true
}

/// One client's place in its iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Follow {
    /// The argument that carries the cursor (1 for `SCAN`, 2 for the others).
    pub arg: usize,
    cursor: u64,
    /// Elements returned so far in the iteration under way.
    elements: u64,
    /// Continuations answered in the iteration under way.
    calls: u64,
    /// The most continuations of a walk before it starts again from 0 (0: no limit).
    limit: u64,
}

/// A full iteration that a reply ended: how many elements its calls returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Iteration {
    /// Elements returned by the iteration's calls, the first included.
    pub elements: u64,
}

impl Follow {
    /// A client following the cursor in argument `arg`, at the start of an iteration.
    pub fn new(arg: usize) -> Follow {
        Follow { arg, cursor: 0, elements: 0, calls: 0, limit: 0 }
    }

    /// The same, cutting each walk after `limit` continuations (its last reply's cursor left
    /// unsent: the next call is cursor 0 again), as memtier's
    /// `--scan-incremental-max-iterations`; 0 follows each cursor to 0. A walk cut short is not
    /// a full iteration.
    pub fn with_limit(mut self, limit: u64) -> Follow {
        self.limit = limit;
        self
    }

    /// The cursor the next call sends.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// The mix's command of the next call: [`FIRST`] at cursor 0, else [`NEXT`].
    pub fn part(&self) -> u16 {
        if self.cursor == 0 {
            FIRST
        } else {
            NEXT
        }
    }

    /// A reply to the last call, its first bytes: the next cursor taken, and the iteration
    /// it ended if it returned 0. A bad reply starts the next iteration afresh.
    pub fn answered(&mut self, reply: &[u8]) -> Result<Option<Iteration>, BadCursor> {
        let page = parse(reply).inspect_err(|_| self.restart())?;
        // The call answered was a continuation when the cursor it sent was not 0.
        self.calls += u64::from(self.cursor != 0);
        self.elements = self.elements.saturating_add(page.elements);
        self.cursor = page.cursor;
        if page.cursor != 0 {
            if self.limit > 0 && self.calls >= self.limit {
                self.restart();
            }
            return Ok(None);
        }
        let done = Iteration { elements: self.elements };
        self.elements = 0;
        self.calls = 0;
        Ok(Some(done))
    }

    /// The call got no cursor (an error reply, a lost connection): the next starts from 0.
    pub fn restart(&mut self) {
        self.cursor = 0;
        self.elements = 0;
        self.calls = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_for_their_cursor_and_count() {
        assert_eq!(parse(b"*2\r\n$4\r\n1234\r\n*10\r\n$1\r\na\r\n"), Ok(Page { cursor: 1234, elements: 10 }));
        assert_eq!(parse(b"*2\r\n$1\r\n0\r\n*0\r\n"), Ok(Page { cursor: 0, elements: 0 }));
        assert_eq!(parse(b"*2\r\n+7\r\n*3\r\n"), Ok(Page { cursor: 7, elements: 3 }));
        let max = b"*2\r\n$20\r\n18446744073709551615\r\n*18446744073709551615\r\n";
        assert!(max.len() <= REPLY_PREFIX);
        assert_eq!(parse(max), Ok(Page { cursor: u64::MAX, elements: u64::MAX }));
    }

    #[test]
    fn hostile_replies_are_bad_cursors() {
        for bad in [
            &b"-ERR no"[..],
            b"*2\r\n$3\r\nabc\r\n*0\r\n",
            b"*2\r\n$2\r\n-1\r\n*0\r\n",
            b"*2\r\n$20\r\n18446744073709551616\r\n*0\r\n",
            b"*2\r\n$21\r\n123456789012345678901\r\n*0\r\n",
            b"*2\r\n$0\r\n\r\n*0\r\n",
            b"*2\r\n$3\r\n12\r\n*0\r\n",
            b"*2\r\n$9999999999999999999999\r\n1\r\n",
            b"*2\r\n$1\r\n1\r\n*-1\r\n",
            b"*2\r\n$1\r\n1\r\n$5\r\n",
            b"*3\r\n$1\r\n1\r\n*0\r\n",
            b"*2\r\n:5\r\n*0\r\n",
            b"*2\r\n$1\r\n1",
            b"",
        ] {
            assert_eq!(parse(bad), Err(BadCursor), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_client_follows_until_zero_then_starts_again() {
        let mut f = Follow::new(1);
        assert_eq!((f.part(), f.cursor()), (FIRST, 0));
        assert_eq!(f.answered(b"*2\r\n$2\r\n17\r\n*10\r\n"), Ok(None));
        assert_eq!((f.part(), f.cursor()), (NEXT, 17));
        assert_eq!(f.answered(b"*2\r\n$1\r\n0\r\n*5\r\n"), Ok(Some(Iteration { elements: 15 })));
        assert_eq!(f.part(), FIRST);
        // A bad reply mid-iteration: counted as bad, the next call starts from 0 afresh.
        assert_eq!(f.answered(b"*2\r\n$1\r\n9\r\n*4\r\n"), Ok(None));
        assert_eq!(f.answered(b"*2\r\n$1\r\nx\r\n*4\r\n"), Err(BadCursor));
        assert_eq!(f.part(), FIRST);
        assert_eq!(f.answered(b"*2\r\n$1\r\n0\r\n*2\r\n"), Ok(Some(Iteration { elements: 2 })));
    }

    #[test]
    fn a_limited_walk_starts_again_after_its_continuations() {
        let mut f = Follow::new(1).with_limit(2);
        let page = |c: u64| format!("*2\r\n${}\r\n{c}\r\n*1\r\n", c.to_string().len()).into_bytes();
        // The first call, then two continuations: the second's cursor is not sent.
        assert_eq!(f.answered(&page(5)), Ok(None));
        assert_eq!((f.part(), f.cursor()), (NEXT, 5));
        assert_eq!(f.answered(&page(6)), Ok(None));
        assert_eq!((f.part(), f.cursor()), (NEXT, 6));
        assert_eq!(f.answered(&page(7)), Ok(None));
        assert_eq!((f.part(), f.cursor()), (FIRST, 0));
        // A walk that ends within the limit is a full iteration, and the count starts again.
        assert_eq!(f.answered(&page(8)), Ok(None));
        assert_eq!(f.answered(&page(0)), Ok(Some(Iteration { elements: 2 })));
        assert_eq!(f.answered(&page(9)), Ok(None));
        assert_eq!(f.answered(&page(10)), Ok(None));
        assert_eq!(f.part(), NEXT);
    }

    #[test]
    fn the_cursor_is_spliced_into_the_request() {
        let mut buf = b"xx".to_vec();
        crate::resp::encode_command(&[b"HSCAN", b"h", b"0", b"COUNT", b"100"], &mut buf);
        assert!(splice(&mut buf, 2, 2, 123_456));
        let mut want = b"xx".to_vec();
        crate::resp::encode_command(&[b"HSCAN", b"h", b"123456", b"COUNT", b"100"], &mut want);
        assert_eq!(buf, want);
        assert!(!splice(&mut buf, 2, 9, 1));
        assert_eq!(buf, want);
    }
}
