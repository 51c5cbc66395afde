//! respbench-floor: the least a GET or SET client can cost on this kernel, the floor column of
//! `bench/values`.
//!
//! It does what any client must and nothing else: one thread, edge-triggered epoll (mio, as
//! respbench's mio backend), `-c` connections each with one request outstanding. A GET's reply
//! is read 64 bytes at a time until its `$<len>` header ends, and its body and CRLF are dropped in
//! the kernel (`recv` with `MSG_TRUNC`, no buffer) without being checked. A SET's value is one
//! buffer that every connection sends with `writev` beside its own header. No latencies, no
//! histograms, no clock per request: the one clock read is the run's start and end.
//!
//! It is a yardstick, not a benchmark tool: it trusts the server's framing (a header it cannot
//! read, an error reply, or bytes past a reply end the run with a message and exit status 1),
//! and it prints only requests per second, as CSV in redis-benchmark's shape, on stdout.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream as StdStream};
use std::os::fd::AsRawFd;
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

const USAGE: &str = "\
usage: respbench-floor [-p PORT] [-c CLIENTS] [-n REQUESTS] [-t get|set] [-d SIZE] [-r KEYSPACE]

  -p PORT      redis-server's port on 127.0.0.1 (default 6379)
  -c CLIENTS   connections, each with one request outstanding (default 50)
  -n REQUESTS  requests in all (default 100000)
  -t TEST      get or set (default get)
  -d SIZE      a SET's value size in bytes (default 3)
  -r KEYSPACE  keys key:000000000000 to key:<KEYSPACE - 1>, in turn (default 10000)";

/// The longest reply header read before the reply is known (`$<len>\r\n` or `+OK\r\n`).
const LINE: usize = 64;

struct Opts {
    port: u16,
    clients: usize,
    requests: u64,
    set: bool,
    size: usize,
    keys: u64,
}

fn opts() -> Result<Opts, String> {
    let mut o = Opts { port: 6379, clients: 50, requests: 100_000, set: false, size: 3, keys: 10_000 };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "-h" || a == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let v = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        let bad = |_| format!("{a}: not a number: {v:?}");
        match a.as_str() {
            "-p" => o.port = v.parse().map_err(bad)?,
            "-c" => o.clients = v.parse().map_err(bad)?,
            "-n" => o.requests = v.parse().map_err(bad)?,
            "-d" => o.size = v.parse().map_err(bad)?,
            "-r" => o.keys = v.parse().map_err(bad)?,
            "-t" => {
                o.set = match v.to_ascii_lowercase().as_str() {
                    "get" => false,
                    "set" => true,
                    _ => return Err(format!("-t: get or set, not {v:?}")),
                }
            }
            _ => return Err(format!("unknown option {a} (try --help)")),
        }
    }
    if o.clients == 0 || o.keys == 0 {
        return Err("-c and -r must be at least 1".into());
    }
    Ok(o)
}

/// One connection: its request's header (a GET's whole request), how much of the request is
/// written, and where in its reply the reading is.
struct Conn {
    sock: TcpStream,
    head: Vec<u8>,
    sent: usize,
    busy: bool,
    line: [u8; LINE],
    line_len: usize,
    /// Bytes of the reply's body and CRLF still to drop; 0 while a header is read.
    body: u64,
}

fn other(msg: String) -> io::Error {
    io::Error::other(msg)
}

impl Conn {
    /// Starts request `key` (the key's number): its header, nothing of it written yet.
    fn start(&mut self, key: u64, set: Option<usize>) {
        self.head.clear();
        let name = format!("key:{key:012}");
        match set {
            None => self
                .head
                .extend_from_slice(format!("*2\r\n$3\r\nGET\r\n${}\r\n{name}\r\n", name.len()).as_bytes()),
            Some(d) => self.head.extend_from_slice(
                format!("*3\r\n$3\r\nSET\r\n${}\r\n{name}\r\n${d}\r\n", name.len()).as_bytes(),
            ),
        }
        self.sent = 0;
        self.busy = true;
    }

    /// Writes what is left of the request (a SET's: header, `value`, CRLF in one `writev`)
    /// until it is all written or the socket is full.
    fn send(&mut self, value: Option<&[u8]>) -> io::Result<()> {
        let parts: [&[u8]; 3] = match value {
            Some(v) => [&self.head, v, b"\r\n"],
            None => [&self.head, &[], &[]],
        };
        let total: usize = parts.iter().map(|p| p.len()).sum();
        while self.sent < total {
            let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; 3];
            let (mut k, mut skip) = (0, self.sent);
            for p in parts {
                if skip >= p.len() {
                    skip -= p.len();
                    continue;
                }
                iov[k] = libc::iovec {
                    iov_base: p[skip..].as_ptr() as *mut libc::c_void,
                    iov_len: p.len() - skip,
                };
                skip = 0;
                k += 1;
            }
            // SAFETY: the iovecs point into `parts`, which outlive the call; k <= 3.
            let n = unsafe { libc::writev(self.sock.as_raw_fd(), iov.as_ptr(), k as libc::c_int) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => return Ok(()),
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(e),
                }
            }
            self.sent += n as usize;
        }
        Ok(())
    }

    /// Reads and drops what the socket has, until it would block or a short read showed it
    /// empty (the next byte raises a new edge). Returns the replies that ended.
    fn read(&mut self) -> io::Result<u64> {
        let fd = self.sock.as_raw_fd();
        let mut done = 0;
        loop {
            let (n, asked) = if self.body > 0 {
                let want = usize::try_from(self.body).unwrap_or(usize::MAX).min(isize::MAX as usize);
                // SAFETY: with MSG_TRUNC and no buffer, TCP drops up to `want` bytes unread.
                let n = unsafe {
                    libc::recv(fd, std::ptr::null_mut(), want, libc::MSG_TRUNC | libc::MSG_DONTWAIT)
                };
                (n, want)
            } else {
                if !self.busy {
                    return Ok(done);
                }
                let free = &mut self.line[self.line_len..];
                // SAFETY: `free` is writable for its length.
                let n = unsafe { libc::recv(fd, free.as_mut_ptr().cast(), free.len(), libc::MSG_DONTWAIT) };
                (n, free.len())
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => return Ok(done),
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(e),
                }
            }
            if n == 0 {
                return Err(other("the server closed the connection".into()));
            }
            let n = n as usize;
            if self.body > 0 {
                self.body -= n as u64;
                if self.body == 0 {
                    done += 1;
                    self.busy = false;
                }
            } else {
                self.line_len += n;
                if self.header()? {
                    done += 1;
                    self.busy = false;
                }
            }
            if n < asked {
                return Ok(done);
            }
        }
    }

    /// Takes the header from the bytes read so far, if it is whole: `Ok(true)` when the reply
    /// ended with them.
    fn header(&mut self) -> io::Result<bool> {
        let got = &self.line[..self.line_len];
        let end = got.windows(2).position(|w| w == b"\r\n");
        if got[0] == b'-' && (end.is_some() || self.line_len == LINE) {
            let message = String::from_utf8_lossy(&got[1..end.unwrap_or(LINE)]).into_owned();
            return Err(other(format!("the server answered an error: {message}")));
        }
        let Some(end) = end else {
            if self.line_len == LINE {
                return Err(other(format!("a reply header longer than {LINE} bytes")));
            }
            return Ok(false);
        };
        let text = String::from_utf8_lossy(&got[..end]);
        let body = match got[0] {
            b'+' => 0,
            b'$' if &got[1..end] == b"-1" => 0,
            b'$' => {
                text[1..]
                    .parse::<u64>()
                    .map_err(|_| other(format!("a bulk length that is not a number: {text:?}")))?
                    + 2
            }
            _ => return Err(other(format!("an unexpected reply: {text:?}"))),
        };
        let extra = (self.line_len - end - 2) as u64;
        if extra > body {
            return Err(other("bytes past the reply (one request is outstanding)".into()));
        }
        self.line_len = 0;
        self.body = body - extra;
        Ok(self.body == 0)
    }
}

fn run(o: &Opts) -> io::Result<f64> {
    let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, o.port));
    let mut poll = Poll::new()?;
    let mut conns = Vec::with_capacity(o.clients);
    for i in 0..o.clients {
        let s = StdStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        let mut sock = TcpStream::from_std(s);
        poll.registry().register(&mut sock, Token(i), Interest::READABLE | Interest::WRITABLE)?;
        conns.push(Conn {
            sock,
            head: Vec::new(),
            sent: 0,
            busy: false,
            line: [0; LINE],
            line_len: 0,
            body: 0,
        });
    }
    let value = o.set.then(|| vec![b'x'; o.size]);
    let value = value.as_deref();
    let set = o.set.then_some(o.size);
    let (mut issued, mut done) = (0u64, 0u64);
    let start = Instant::now();
    for c in &mut conns {
        if issued < o.requests {
            c.start(issued % o.keys, set);
            issued += 1;
            c.send(value)?;
        }
    }
    let mut events = Events::with_capacity(1024);
    while done < o.requests {
        match poll.poll(&mut events, None) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => r?,
        }
        for ev in &events {
            let c = &mut conns[ev.token().0];
            if c.busy {
                c.send(value)?;
            }
            let ended = c.read()?;
            done += ended;
            if ended > 0 && issued < o.requests {
                c.start(issued % o.keys, set);
                issued += 1;
                c.send(value)?;
            }
        }
    }
    Ok(done as f64 / start.elapsed().as_secs_f64())
}

fn main() {
    // A server that closes mid-write is an error to report, not a signal that kills.
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("respbench-floor: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    match run(&o) {
        Ok(rps) => {
            println!("\"test\",\"rps\"");
            println!("\"{}\",\"{rps:.2}\"", if o.set { "SET" } else { "GET" });
        }
        Err(e) => {
            eprintln!("respbench-floor: {e}");
            std::process::exit(1);
        }
    }
}
