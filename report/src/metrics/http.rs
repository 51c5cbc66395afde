//! The endpoint's HTTP/1.1: a request parser that never allocates (the fuzz target's
//! [`parse_request`]), and a server on its own thread: a `std::net::TcpListener` polled with mio
//! beside every connection, everything bounded (connections, request bytes, how long each
//! may take), one response per connection (`Connection: close`).
//!
//! Hand-written rather than a small HTTP crate: the endpoint reads one request line and one
//! header (`Accept`) and answers one path, and what the issue asks of it (a bounded head, a
//! bounded number of connections, timeouts, a slow reader that holds nothing up) is the part
//! that has to be written and tested with any crate; a crate would add dependencies for the
//! rest. mio, already under the mio backend, gives the readiness of every connection at once
//! on one thread.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener as MioListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use super::format::Format;

/// The most bytes a request's line and headers may take; past them the answer is 431.
pub const MAX_REQUEST: usize = 8 * 1024;
/// The most connections open at once; past them the oldest still sending its request goes.
pub const MAX_CONNECTIONS: usize = 128;
/// How long a connection may take to send its request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a response may take to be read, from its first byte.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a request's bytes so far are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// Not all of the head yet (within [`MAX_REQUEST`]).
    Partial,
    /// `GET /metrics` (or `HEAD`), in this format.
    Metrics {
        /// The format the `Accept` header asks for.
        format: Format,
        /// `HEAD`: the headers alone.
        head: bool,
    },
    /// Answered with this status and no figures: 400 (not HTTP), 404 (another path), 405
    /// (another method), 431 (a head longer than [`MAX_REQUEST`]), 505 (not HTTP/1).
    Refused(u16),
}

/// Reads a request's head from `bytes` (all the connection sent so far). Every prefix of a
/// valid head is [`Request::Partial`]; whatever the bytes, it returns without allocating or
/// panicking, in time linear in their length.
pub fn parse_request(bytes: &[u8]) -> Request {
    let within = &bytes[..bytes.len().min(MAX_REQUEST)];
    let Some(end) = head_end(within) else {
        // A request line that is already no HTTP is refused now, not after 8 KiB.
        if let Some(line) = within.split(|&b| b == b'\n').next().filter(|_| within.contains(&b'\n')) {
            if let Err(status) = request_line(trim_cr(line)) {
                return Request::Refused(status);
            }
        }
        return if bytes.len() >= MAX_REQUEST { Request::Refused(431) } else { Request::Partial };
    };
    let mut lines = within[..end].split(|&b| b == b'\n').map(trim_cr);
    let (method_head, path) = match request_line(lines.next().unwrap_or_default()) {
        Ok(r) => r,
        Err(status) => return Request::Refused(status),
    };
    let mut format = Format::Text;
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            if line.is_empty() {
                continue;
            }
            return Request::Refused(400);
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.eq_ignore_ascii_case(b"accept") && contains(value, b"application/openmetrics-text") {
            format = Format::OpenMetrics;
        }
    }
    let path = path.split(|&b| b == b'?').next().unwrap_or_default();
    if path != b"/metrics" {
        return Request::Refused(404);
    }
    Request::Metrics { format, head: method_head }
}

/// Where the head ends (the index of its blank line's end), if it has.
fn head_end(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(n) = bytes[i..].iter().position(|&b| b == b'\n') {
        let at = i + n;
        let rest = &bytes[at + 1..];
        if rest.first() == Some(&b'\n') {
            return Some(at + 2);
        }
        if rest.starts_with(b"\r\n") {
            return Some(at + 3);
        }
        i = at + 1;
    }
    None
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

/// `GET /metrics HTTP/1.1`: whether it is `HEAD`, and the target; else the status to answer.
fn request_line(line: &[u8]) -> Result<(bool, &[u8]), u16> {
    let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(400);
    };
    if !version.starts_with(b"HTTP/") {
        return Err(400);
    }
    if !version.starts_with(b"HTTP/1.") {
        return Err(505);
    }
    match method {
        b"GET" => Ok((false, target)),
        b"HEAD" => Ok((true, target)),
        m if m.iter().all(u8::is_ascii_uppercase) => Err(405),
        _ => Err(400),
    }
}

/// The reason phrase of the statuses the endpoint answers with.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        505 => "HTTP Version Not Supported",
        _ => "Bad Request",
    }
}

/// A whole response: headers, then `body` unless `head`.
pub fn response(status: u16, content_type: &str, body: &[u8], head: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    )
    .into_bytes();
    if !head {
        out.extend_from_slice(body);
    }
    out
}

/// What the server asks of the exporter for each request for the figures.
pub trait Responder: Send {
    /// The body in `format`, and an opaque mark of what it holds.
    fn body(&mut self, format: Format) -> (Arc<Vec<u8>>, u64);
    /// A response whose body holds `mark` was written whole to its connection.
    fn served(&mut self, mark: u64);
}

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX);

/// One connection: what it sent, and once answered, what is left to write.
struct Conn {
    stream: TcpStream,
    request: Vec<u8>,
    /// The response and how much of it was written; `None` while the request comes.
    out: Option<(Vec<u8>, usize, Option<u64>)>,
    deadline: Instant,
    opened: Instant,
}

/// The server's loop: accepts, reads, answers and closes until `waker` is woken with `stop`
/// set. Runs on a thread of its own.
pub struct Server {
    poll: Poll,
    listener: MioListener,
    conns: Vec<Option<Conn>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// Connections may still wait to be accepted (a round takes [`ACCEPT_PER_ROUND`]).
    backlog: bool,
}

/// The most connections taken in one round of the loop: a burst of connections cannot push
/// out one accepted just before whose request is about to be read.
const ACCEPT_PER_ROUND: usize = 32;

impl Server {
    /// A server on `listener` (already bound, so that a port in use is an error before the
    /// run), and the waker that ends its loop once `stop` is set.
    pub fn new(
        listener: TcpListener,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> io::Result<(Server, Waker)> {
        listener.set_nonblocking(true)?;
        let poll = Poll::new()?;
        let mut listener = MioListener::from_std(listener);
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        let conns = (0..MAX_CONNECTIONS).map(|_| None).collect();
        Ok((Server { poll, listener, conns, stop, backlog: false }, waker))
    }

    /// Serves until stopped.
    pub fn run(mut self, responder: &mut dyn Responder) {
        let mut events = Events::with_capacity(256);
        let mut ready: VecDeque<usize> = VecDeque::new();
        while !self.stop.load(std::sync::atomic::Ordering::Acquire) {
            // A backlog left from the last round is taken now, with the reads that came.
            let wait = if self.backlog { Duration::ZERO } else { Duration::from_millis(100) };
            if self.backlog {
                self.accept();
            }
            if self.poll.poll(&mut events, Some(wait)).is_err() {
                // EINTR and the like: look at the stop, then poll again.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            for e in events.iter() {
                match e.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    Token(i) => ready.push_back(i),
                }
            }
            while let Some(i) = ready.pop_front() {
                self.drive(i, responder);
            }
            let now = Instant::now();
            for slot in &mut self.conns {
                if slot.as_ref().is_some_and(|c| c.deadline <= now) {
                    close(&self.poll, slot);
                }
            }
        }
    }

    /// Takes the waiting connections, up to [`ACCEPT_PER_ROUND`]; with no room left, the
    /// oldest one that has sent nothing goes, else the oldest still sending its request (a
    /// scraper sends its request at once: idle connections cannot keep it out), or the new one
    /// when every one is being answered.
    fn accept(&mut self) {
        self.backlog = false;
        for _ in 0..ACCEPT_PER_ROUND {
            let (mut stream, _) = match self.listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // Out of descriptors, a connection reset before it was taken: try again at the
                // next readiness.
                Err(_) => return,
            };
            let free = self.conns.iter().position(Option::is_none).or_else(|| {
                let oldest = self
                    .conns
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| c.as_ref().filter(|c| c.out.is_none()).map(|c| (i, c)))
                    .min_by_key(|(_, c)| (!c.request.is_empty(), c.opened))
                    .map(|(i, _)| i)?;
                close(&self.poll, &mut self.conns[oldest]);
                Some(oldest)
            });
            let Some(i) = free else {
                continue;
            };
            if self
                .poll
                .registry()
                .register(&mut stream, Token(i), Interest::READABLE | Interest::WRITABLE)
                .is_err()
            {
                continue;
            }
            let now = Instant::now();
            self.conns[i] = Some(Conn {
                stream,
                request: Vec::new(),
                out: None,
                deadline: now + REQUEST_TIMEOUT,
                opened: now,
            });
        }
        self.backlog = true;
    }

    /// Reads what connection `i` sent, answers once its request is whole, and writes what is
    /// left of the answer; closes it when done or broken.
    fn drive(&mut self, i: usize, responder: &mut dyn Responder) {
        let Some(slot) = self.conns.get_mut(i) else { return };
        let Some(c) = slot.as_mut() else { return };
        if c.out.is_none() {
            let mut chunk = [0u8; 2048];
            loop {
                match c.stream.read(&mut chunk) {
                    Ok(0) => {
                        close(&self.poll, slot);
                        return;
                    }
                    Ok(n) => {
                        // Never more than the head's limit (and a byte over, to know it is).
                        let room = (MAX_REQUEST + 1).saturating_sub(c.request.len());
                        c.request.extend_from_slice(&chunk[..n.min(room)]);
                        if c.request.len() > MAX_REQUEST {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        close(&self.poll, slot);
                        return;
                    }
                }
            }
            let answer = match parse_request(&c.request) {
                Request::Partial => return,
                Request::Metrics { format, head } => {
                    let (body, mark) = responder.body(format);
                    (response(200, format.content_type(), &body, head), Some(mark))
                }
                Request::Refused(status) => (
                    response(status, "text/plain; charset=utf-8", b"respbench serves GET /metrics\n", false),
                    None,
                ),
            };
            c.request = Vec::new();
            c.out = Some((answer.0, 0, answer.1));
            c.deadline = Instant::now() + RESPONSE_TIMEOUT;
        }
        let Some((bytes, written, mark)) = c.out.as_mut() else { return };
        while *written < bytes.len() {
            match c.stream.write(&bytes[*written..]) {
                Ok(0) => break,
                Ok(n) => *written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        if *written == bytes.len() {
            if let Some(mark) = *mark {
                responder.served(mark);
            }
        }
        close(&self.poll, slot);
    }
}

/// Closes the connection in `slot`: the rest of what it sent is dropped unread.
fn close(poll: &Poll, slot: &mut Option<Conn>) {
    if let Some(mut c) = slot.take() {
        let _ = poll.registry().deregister(&mut c.stream);
        let _ = c.stream.shutdown(std::net::Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMETHEUS: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9100\r\nUser-Agent: Prometheus/2.42.0\r\n\
        Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
        text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";

    #[test]
    fn prometheus_request_asks_for_openmetrics_and_every_prefix_is_partial() {
        assert_eq!(parse_request(PROMETHEUS), Request::Metrics { format: Format::OpenMetrics, head: false });
        for n in 0..PROMETHEUS.len() {
            assert_eq!(parse_request(&PROMETHEUS[..n]), Request::Partial, "prefix of {n} bytes");
        }
        // Bytes after the head (a body, a pipelined request) change nothing.
        let mut padded = PROMETHEUS.to_vec();
        padded.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(parse_request(&padded), Request::Metrics { format: Format::OpenMetrics, head: false });
    }

    #[test]
    fn requests_and_their_answers() {
        let text = Request::Metrics { format: Format::Text, head: false };
        assert_eq!(parse_request(b"GET /metrics HTTP/1.0\r\n\r\n"), text);
        assert_eq!(parse_request(b"GET /metrics?x=1 HTTP/1.1\n\n"), text);
        assert_eq!(
            parse_request(b"HEAD /metrics HTTP/1.1\r\n\r\n"),
            Request::Metrics { format: Format::Text, head: true }
        );
        assert_eq!(parse_request(b"GET / HTTP/1.1\r\n\r\n"), Request::Refused(404));
        assert_eq!(parse_request(b"POST /metrics HTTP/1.1\r\n\r\n"), Request::Refused(405));
        assert_eq!(parse_request(b"GET /metrics HTTP/2.0\r\n\r\n"), Request::Refused(505));
        assert_eq!(parse_request(b"\x16\x03\x01\x02\x00\x01\x00\n"), Request::Refused(400));
        assert_eq!(parse_request(b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n"), Request::Refused(400));
        assert_eq!(parse_request(b"GET /metrics\r\n"), Request::Refused(400));
        // A 10 MB request line is refused at 8 KiB, whatever follows.
        let long = vec![b'A'; 10 << 20];
        assert_eq!(parse_request(&long), Request::Refused(431));
        assert_eq!(parse_request(&long[..MAX_REQUEST - 1]), Request::Partial);
        let r = response(200, "text/plain", b"abc", false);
        assert!(r.starts_with(b"HTTP/1.1 200 OK\r\n"));
        assert!(r.ends_with(b"Content-Length: 3\r\nConnection: close\r\n\r\nabc"));
        assert!(response(200, "text/plain", b"abc", true).ends_with(b"\r\n\r\n"));
    }
}
