//! respbench-null: a null RESP server, the fixture of `bench/ceiling`. It answers every request
//! with one precomputed reply as fast as the kernel lets it, so that a client's own cost is what
//! a benchmark against it measures.
//!
//! Edge-triggered epoll (mio), one thread by default (`--threads N`: N loops, each with its own
//! `SO_REUSEPORT` listener on the same port). It counts requests exactly (RESP arrays and inline
//! commands, in any split across reads, pipelined or not) and keeps no bytes: a read is parsed in
//! place and answered by copies of the reply taken from a buffer that repeats it. On SIGUSR1 it
//! writes its report (requests answered, connections, its own CPU from `getrusage`, CPU per
//! request); on SIGTERM or SIGINT it writes it and exits.
//!
//! With `--spin` a loop never sleeps: it polls without a timeout and counts the time of the polls
//! that found nothing as idle. A sleeping server makes its clients pay for waking it (on a send,
//! the kernel wakes the server's thread in the client's system call, which in a VM is an exit):
//! that cost is the server's, not the client's, so `bench/ceiling` spins. The report then also
//! gives the idle time, and the CPU per request leaves it out.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

mod count;

use count::Counter;

const USAGE: &str = "\
usage: respbench-null [--bind ADDR] [--port PORT] [--threads N] [--bulk N] [--spin] [--report FILE]

  --bind ADDR    IPv4 address to listen on (default 127.0.0.1)
  --port PORT    port (default 6379; 0: a free one); the first line on stdout names it
  --threads N    event loops, each on its own SO_REUSEPORT listener (default 1)
  --bulk N       answer with a bulk string of N bytes (as GET does) instead of +OK
  --spin         never sleep: poll without waiting, and report the time of empty polls as idle
  --report FILE  where SIGUSR1, SIGTERM and SIGINT write the report (default: stderr)";

struct Opts {
    bind: Ipv4Addr,
    port: u16,
    threads: usize,
    bulk: Option<usize>,
    spin: bool,
    report: Option<String>,
}

fn opts() -> Result<Opts, String> {
    let mut o =
        Opts { bind: Ipv4Addr::LOCALHOST, port: 6379, threads: 1, bulk: None, spin: false, report: None };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "-h" || a == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        if a == "--spin" {
            o.spin = true;
            continue;
        }
        let v = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{a} {v}: {e}");
        match a.as_str() {
            "--bind" => o.bind = v.parse().map_err(|e| bad(&e))?,
            "--port" => o.port = v.parse().map_err(|e| bad(&e))?,
            "--threads" => o.threads = v.parse().map_err(|e| bad(&e))?,
            "--bulk" => o.bulk = Some(v.parse().map_err(|e| bad(&e))?),
            "--report" => o.report = Some(v),
            _ => return Err(format!("unknown option {a}\n{USAGE}")),
        }
    }
    if o.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    Ok(o)
}

/// What every loop adds to.
#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    connections: AtomicU64,
    /// Nanoseconds spent in polls that found nothing (with `--spin`).
    idle_nanos: AtomicU64,
    stop: AtomicBool,
}

/// The last signal caught (0: none since it was taken).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

fn main() {
    let o = opts().unwrap_or_else(|e| {
        eprintln!("respbench-null: {e}");
        std::process::exit(2);
    });
    let reply: Vec<u8> = match o.bulk {
        None => b"+OK\r\n".to_vec(),
        Some(n) => {
            let mut r = format!("${n}\r\n").into_bytes();
            r.resize(r.len() + n, b'x');
            r.extend_from_slice(b"\r\n");
            r
        }
    };
    // Copies of the reply filling at least 64 KiB: a write takes as many replies as are due.
    let repeats = (64 * 1024 / reply.len()).max(2);
    let replies: Arc<[u8]> = reply.repeat(repeats).into();

    let mut port = o.port;
    let mut listeners = Vec::new();
    for _ in 0..o.threads {
        let l = listen(o.bind, port).unwrap_or_else(|e| {
            eprintln!("respbench-null: listening on {}:{port}: {e}", o.bind);
            std::process::exit(1);
        });
        port = l.local_addr().map(|a| a.port()).unwrap_or(port);
        listeners.push(l);
    }
    println!("listening on {}:{port}", o.bind);
    let _ = io::stdout().flush();

    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGUSR1] {
        // SAFETY: the handler only stores into an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t) };
    }

    let counts = Arc::new(Counts::default());
    let loops: Vec<_> = listeners
        .into_iter()
        .map(|l| {
            let (counts, replies) = (counts.clone(), replies.clone());
            let (len, spin) = (reply.len(), o.spin);
            std::thread::spawn(move || {
                if let Err(e) = serve(l, &replies, len, spin, &counts) {
                    eprintln!("respbench-null: {e}");
                    std::process::exit(1);
                }
            })
        })
        .collect();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        match SIGNAL.swap(0, Ordering::SeqCst) {
            0 => {}
            libc::SIGUSR1 => report(&o, &counts),
            _ => break,
        }
    }
    counts.stop.store(true, Ordering::SeqCst);
    for l in loops {
        let _ = l.join();
    }
    report(&o, &counts);
}

/// A non-blocking listener with `SO_REUSEPORT`, so that several loops can listen on one port and
/// the kernel spreads connections over them.
fn listen(ip: Ipv4Addr, port: u16) -> io::Result<TcpListener> {
    let check = |r: libc::c_int| if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) };
    // SAFETY: plain socket calls on a descriptor owned here; `addr` outlives the bind.
    unsafe {
        let fd = check(libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        ))?;
        let listener = std::net::TcpListener::from_raw_fd(fd);
        let one: libc::c_int = 1;
        for opt in [libc::SO_REUSEADDR, libc::SO_REUSEPORT] {
            check(libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ))?;
        }
        let a = SocketAddrV4::new(ip, port);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: a.port().to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
            sin_zero: [0; 8],
        };
        check(libc::bind(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ))?;
        check(libc::listen(fd, 4096))?;
        Ok(TcpListener::from_std(listener))
    }
}

/// One client connection: its request count so far and the reply bytes it is owed.
struct Conn {
    sock: TcpStream,
    counter: Counter,
    /// Reply bytes due and not yet written.
    owed: u64,
    /// Where in the reply the next byte to write is.
    at: usize,
}

const LISTENER: Token = Token(usize::MAX);

/// One event loop: accepts on `listener`, answers each request with a reply (`replies` holds
/// copies of it, each `len` bytes), until `counts.stop`; with `spin` it never waits in a poll.
fn serve(
    mut listener: TcpListener,
    replies: &[u8],
    len: usize,
    spin: bool,
    counts: &Counts,
) -> io::Result<()> {
    let mut poll = Poll::new()?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(1024);
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let timeout = Duration::from_millis(if spin { 0 } else { 100 });
    // Idle time is added to `counts` now and then, not on every empty poll.
    let (mut idle, mut empty_polls) = (0u64, 0u32);
    while !counts.stop.load(Ordering::Relaxed) {
        let started = spin.then(Instant::now);
        match poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if let Some(t) = started {
            if events.is_empty() {
                idle += u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
                empty_polls += 1;
            }
            if empty_polls >= 1024 || !events.is_empty() && idle > 0 {
                counts.idle_nanos.fetch_add(std::mem::take(&mut idle), Ordering::Relaxed);
                empty_polls = 0;
            }
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((mut sock, _)) => {
                            let _ = sock.set_nodelay(true);
                            let i = free.pop().unwrap_or_else(|| {
                                conns.push(None);
                                conns.len() - 1
                            });
                            poll.registry().register(
                                &mut sock,
                                Token(i),
                                Interest::READABLE | Interest::WRITABLE,
                            )?;
                            conns[i] = Some(Conn { sock, counter: Counter::default(), owed: 0, at: 0 });
                            counts.connections.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        // Out of descriptors and the like: the backlog keeps the connection.
                        Err(_) => break,
                    }
                }
                continue;
            }
            let i = ev.token().0;
            let Some(c) = conns[i].as_mut() else { continue };
            if !answer(c, &mut buf, replies, len, counts) {
                let mut c = conns[i].take().expect("the connection is open");
                let _ = poll.registry().deregister(&mut c.sock);
                free.push(i);
            }
        }
    }
    Ok(())
}

/// Reads what the socket has, then writes the replies owed; `false` when the connection ended
/// (closed by the client, a protocol error, an IO error).
fn answer(c: &mut Conn, buf: &mut [u8], replies: &[u8], len: usize, counts: &Counts) -> bool {
    let mut answered = 0;
    let open = loop {
        match c.sock.read(buf) {
            Ok(0) => break false,
            Ok(n) => match c.counter.feed(&buf[..n]) {
                Ok(k) => {
                    answered += k;
                    // Edge-triggered: a short read emptied the socket; the next byte raises an edge.
                    if n < buf.len() {
                        break true;
                    }
                }
                Err(_) => break false,
            },
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break false,
        }
    };
    if answered > 0 {
        counts.requests.fetch_add(answered, Ordering::Relaxed);
        c.owed += answered * len as u64;
    }
    if !open {
        return false;
    }
    while c.owed > 0 {
        let end = replies.len().min(c.at + usize::try_from(c.owed).unwrap_or(usize::MAX));
        match c.sock.write(&replies[c.at..end]) {
            Ok(n) => {
                c.owed -= n as u64;
                c.at = (c.at + n) % len;
            }
            // Full: the WRITABLE edge calls again.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// Writes the report: requests answered, connections accepted, the process's CPU (`getrusage`),
/// the time of empty polls (`--spin`) and the CPU per request without it.
fn report(o: &Opts, counts: &Counts) {
    // SAFETY: getrusage fills the struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let (user, sys) = (secs(ru.ru_utime), secs(ru.ru_stime));
    let requests = counts.requests.load(Ordering::Relaxed);
    let idle = counts.idle_nanos.load(Ordering::Relaxed) as f64 / 1e9;
    // The busy part of the CPU: with --spin, the empty polls are the wait a sleeping server does.
    let busy = (user + sys - idle).max(0.0);
    let per = if requests > 0 { busy * 1e9 / requests as f64 } else { 0.0 };
    let text = format!(
        "requests {requests}\nconnections {}\ncpu_user_s {user:.3}\ncpu_sys_s {sys:.3}\nidle_s {idle:.3}\ncpu_ns_per_request {per:.1}\n",
        counts.connections.load(Ordering::Relaxed)
    );
    match &o.report {
        Some(path) => {
            // Written aside and renamed: a reader waiting for the file never sees half of it.
            let tmp = format!("{path}.tmp");
            if let Err(e) = std::fs::write(&tmp, &text).and_then(|()| std::fs::rename(&tmp, path)) {
                eprintln!("respbench-null: writing {path}: {e}");
            }
        }
        None => eprint!("{text}"),
    }
}
