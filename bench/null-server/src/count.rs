//! Counting RESP requests in a byte stream that arrives in pieces.

/// Why a byte stream is not RESP requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub &'static str);

/// Where the counter is inside the stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Between requests.
    #[default]
    Start,
    /// An inline command (`PING\r\n`); `blank` while it has only spaces so far (an empty line
    /// is no request, as in Redis).
    Inline { blank: bool },
    /// The digits after `*`.
    ArrayLen { n: u64, neg: bool },
    /// `left` arguments to come; the next byte is `$`.
    ArgHead { left: u64 },
    /// The digits after `$`.
    ArgLen { left: u64, len: u64 },
    /// `rem` bytes of an argument and its CRLF to skip.
    ArgBody { left: u64, rem: u64 },
}

/// Counts complete requests (RESP arrays of bulk strings, or inline commands) fed in any split:
/// [`Counter::feed`] returns those that a piece completed. It keeps no bytes, only a state.
#[derive(Clone, Debug, Default)]
pub struct Counter {
    state: State,
}

/// Requests larger than this are refused (Redis' `proto-max-bulk-len` is 512 MB).
const MAX_LEN: u64 = 1 << 32;

impl Counter {
    /// Feeds the next bytes of the stream; returns how many requests they completed.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<u64, ProtocolError> {
        let mut done = 0;
        while let Some((&b, rest)) = bytes.split_first() {
            match &mut self.state {
                State::Start => {
                    self.state = match b {
                        b'*' => State::ArrayLen { n: 0, neg: false },
                        b'\r' | b'\n' | b' ' | b'\t' => State::Start,
                        _ => State::Inline { blank: false },
                    }
                }
                State::Inline { blank } => match b {
                    b'\n' => {
                        if !*blank {
                            done += 1;
                        }
                        self.state = State::Start;
                    }
                    b' ' | b'\t' | b'\r' => {}
                    _ => *blank = false,
                },
                State::ArrayLen { n, neg } => match b {
                    b'0'..=b'9' => {
                        *n = *n * 10 + u64::from(b - b'0');
                        if *n > MAX_LEN {
                            return Err(ProtocolError("array length too large"));
                        }
                    }
                    b'-' if *n == 0 && !*neg => *neg = true,
                    b'\r' => {}
                    b'\n' => {
                        // `*0` and `*-1` are no request (Redis answers neither).
                        self.state = if *neg || *n == 0 { State::Start } else { State::ArgHead { left: *n } };
                    }
                    _ => return Err(ProtocolError("expected the array length")),
                },
                State::ArgHead { left } => match b {
                    b'$' => self.state = State::ArgLen { left: *left, len: 0 },
                    _ => return Err(ProtocolError("expected '$'")),
                },
                State::ArgLen { left, len } => match b {
                    b'0'..=b'9' => {
                        *len = *len * 10 + u64::from(b - b'0');
                        if *len > MAX_LEN {
                            return Err(ProtocolError("bulk length too large"));
                        }
                    }
                    b'\r' => {}
                    b'\n' => self.state = State::ArgBody { left: *left, rem: *len + 2 },
                    _ => return Err(ProtocolError("expected the bulk length")),
                },
                State::ArgBody { left, rem } => {
                    // Skip the body at once: a large value costs no per-byte work.
                    let take = (*rem).min(bytes.len() as u64);
                    *rem -= take;
                    bytes = &bytes[take as usize..];
                    if *rem == 0 {
                        *left -= 1;
                        if *left == 0 {
                            done += 1;
                            self.state = State::Start;
                        } else {
                            self.state = State::ArgHead { left: *left };
                        }
                    }
                    continue;
                }
            }
            bytes = rest;
        }
        Ok(done)
    }

    /// Whether the stream stands between requests (no request is partly read).
    #[cfg(test)]
    pub fn at_boundary(&self) -> bool {
        self.state == State::Start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut v = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            v.extend_from_slice(a);
            v.extend_from_slice(b"\r\n");
        }
        v
    }

    /// A pipeline of mixed requests: RESP arrays (one with a value containing CRLF and `*`)
    /// and inline commands, with the number of requests in it.
    fn pipeline() -> (Vec<u8>, u64) {
        let mut v = Vec::new();
        v.extend(encode(&[b"GET", b"key:000000000042"]));
        v.extend(encode(&[b"SET", b"k", b"a\r\n*3\r\n$1\r\nx"]));
        v.extend_from_slice(b"PING\r\n");
        v.extend_from_slice(b"\r\n"); // an empty line: no request
        v.extend_from_slice(b"*0\r\n"); // no request either
        v.extend(encode(&[b"LRANGE", b"mylist", b"0", b"599"]));
        v.extend_from_slice(b"INFO server\n");
        v.extend(encode(&[b""]));
        (v, 6)
    }

    #[test]
    fn counts_a_pipeline_fed_whole() {
        let (v, n) = pipeline();
        let mut c = Counter::default();
        assert_eq!(c.feed(&v), Ok(n));
        assert!(c.at_boundary());
    }

    #[test]
    fn every_split_in_two_counts_the_same() {
        let (v, n) = pipeline();
        for at in 0..=v.len() {
            let mut c = Counter::default();
            let a = c.feed(&v[..at]).unwrap();
            let b = c.feed(&v[at..]).unwrap();
            assert_eq!(a + b, n, "split at {at}");
            assert!(c.at_boundary());
        }
    }

    #[test]
    fn byte_by_byte_counts_each_request_on_its_last_byte() {
        let (v, n) = pipeline();
        let mut c = Counter::default();
        let mut total = 0;
        for (i, b) in v.iter().enumerate() {
            let k = c.feed(std::slice::from_ref(b)).unwrap();
            // A request completes on a '\n': the end of its last CRLF or of an inline line.
            if k > 0 {
                assert_eq!(*b, b'\n', "at byte {i}");
            }
            total += k;
        }
        assert_eq!(total, n);
    }

    #[test]
    fn every_prefix_of_one_request_is_incomplete() {
        let req = encode(&[b"SET", b"key:000000000001", b"xxx"]);
        for end in 0..req.len() {
            let mut c = Counter::default();
            assert_eq!(c.feed(&req[..end]), Ok(0), "prefix of {end} bytes");
            assert_eq!(end == 0, c.at_boundary());
        }
    }

    #[test]
    fn a_large_pipeline_in_odd_reads() {
        let one = encode(&[b"GET", b"key:__rand_int__"]);
        let stream: Vec<u8> = one.iter().copied().cycle().take(one.len() * 1000).collect();
        for read in [1, 7, 33, 4096] {
            let mut c = Counter::default();
            let total: u64 = stream.chunks(read).map(|ch| c.feed(ch).unwrap()).sum();
            assert_eq!(total, 1000, "reads of {read} bytes");
        }
    }

    #[test]
    fn protocol_errors() {
        assert!(Counter::default().feed(b"*2\r\nGET\r\n").is_err());
        assert!(Counter::default().feed(b"*x\r\n").is_err());
        assert!(Counter::default().feed(b"*1\r\n$y\r\n").is_err());
        assert!(Counter::default().feed(b"*1\r\n$99999999999\r\n").is_err());
    }
}
