//! A delaying TCP relay: a path with a one-way delay, for what loopback hides. Each chunk read
//! from one side is written to the other `delay` after it was read, as it was read (no
//! coalescing, no splitting), so the server sees the client's writes as the client made them,
//! and the client sees the server's as the server made them, a round trip of twice the delay
//! apart. It records what it carried from each client, chunk by chunk, so a test can count the
//! commands each segment held: what a server's `read` calls see.
//!
//! A rate ([`Relay::start_on`]) paces each direction of each connection like a link of that
//! speed: a chunk leaves when the link is free and arrives in pieces of [`PIECE`] bytes, each
//! `delay` after it was sent, so a large reply trickles in as it would over a real path.
//!
//! The `delay-relay` binary (src/bin/delay-relay.rs) runs one for `bench/pipeline`.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::fake::parse_command;

/// The most one read takes: a chunk is what one read returned.
const CHUNK: usize = 256 * 1024;
/// With a rate, a chunk is written in pieces of this many bytes, each when it is due.
pub const PIECE: usize = 16 * 1024;

/// What each connection's client sent, chunk by chunk, by connection in accept order.
type Sent = Arc<Mutex<Vec<Vec<Vec<u8>>>>>;

/// A running relay from a port of its own to `127.0.0.1:upstream`; it stops when dropped.
pub struct Relay {
    port: u16,
    stop: Arc<AtomicBool>,
    sent: Sent,
}

impl Relay {
    /// Starts a relay to `127.0.0.1:upstream` that holds each chunk `delay` each way.
    pub fn start(upstream: u16, delay: Duration) -> Relay {
        Relay::start_on(0, upstream, delay, 0, true)
    }

    /// [`Relay::start`] on `port` (0: a free one), each direction of each connection paced at
    /// `bytes_per_sec` (0: no limit); `record` keeps the client's chunks.
    pub fn start_on(port: u16, upstream: u16, delay: Duration, bytes_per_sec: u64, record: bool) -> Relay {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("binding the relay");
        let port = listener.local_addr().expect("local_addr").port();
        listener.set_nonblocking(true).expect("nonblocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let sent: Sent = Arc::default();
        let (stop2, sent2) = (Arc::clone(&stop), Arc::clone(&sent));
        thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                            continue;
                        };
                        let record = record.then(|| {
                            let mut all = sent2.lock().unwrap_or_else(|e| e.into_inner());
                            all.push(Vec::new());
                            (Arc::clone(&sent2), all.len() - 1)
                        });
                        let _ = splice(client, server, (delay, bytes_per_sec), record);
                    }
                    Err(_) => thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Relay { port, stop, sent }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// For each connection whose client sent any `command` (upper case, e.g. `GET`), how many
    /// of them each chunk carried that carried any (a command counts in the chunk with its last
    /// byte).
    pub fn per_chunk(&self, command: &str) -> Vec<Vec<u64>> {
        let sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for chunks in sent.iter() {
            let mut stream = Vec::new();
            let mut counts = Vec::new();
            for chunk in chunks {
                stream.extend_from_slice(chunk);
                let mut n = 0;
                while let Some((args, used)) = parse_command(&stream) {
                    stream.drain(..used);
                    if args.first().is_some_and(|a| a.eq_ignore_ascii_case(command.as_bytes())) {
                        n += 1;
                    }
                }
                if n > 0 {
                    counts.push(n);
                }
            }
            if !counts.is_empty() {
                out.push(counts);
            }
        }
        out
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A path's one-way delay and rate in bytes per second (0: no limit).
type Path = (Duration, u64);

/// Relays both ways between `client` and `server` over `path`.
fn splice(client: TcpStream, server: TcpStream, path: Path, record: Option<(Sent, usize)>) -> io::Result<()> {
    client.set_nonblocking(false)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    pump(client.try_clone()?, server.try_clone()?, path, record);
    pump(server, client, path, None);
    Ok(())
}

/// One direction: a reader that stamps each chunk with when it was read, and a writer that
/// sends it when it is due.
fn pump(mut from: TcpStream, mut to: TcpStream, (delay, rate): Path, record: Option<(Sent, usize)>) {
    let (tx, rx) = mpsc::channel::<(Instant, Option<Vec<u8>>)>();
    thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => 0,
                Ok(n) => n,
            };
            let read_at = Instant::now();
            if n == 0 {
                let _ = tx.send((read_at, None));
                return;
            }
            if let Some((sent, i)) = &record {
                sent.lock().unwrap_or_else(|e| e.into_inner())[*i].push(buf[..n].to_vec());
            }
            if tx.send((read_at, Some(buf[..n].to_vec()))).is_err() {
                return;
            }
        }
    });
    thread::spawn(move || {
        let sleep_until = |t: Instant| {
            let now = Instant::now();
            if t > now {
                thread::sleep(t - now);
            }
        };
        let on_wire =
            |bytes: usize| Duration::from_nanos((bytes as u128 * 1_000_000_000 / u128::from(rate)) as u64);
        // When the link is free to send the next byte.
        let mut free = Instant::now();
        while let Ok((read_at, chunk)) = rx.recv() {
            let Some(bytes) = chunk else {
                sleep_until(read_at.max(free) + delay);
                break;
            };
            if rate == 0 {
                sleep_until(read_at + delay);
                if to.write_all(&bytes).is_err() {
                    break;
                }
                continue;
            }
            // Absolute times: a late wake-up sends what is due at once, and the rate holds.
            let depart = read_at.max(free);
            let mut sent = 0;
            for piece in bytes.chunks(PIECE) {
                sent += piece.len();
                sleep_until(depart + on_wire(sent) + delay);
                if to.write_all(piece).is_err() {
                    let _ = to.shutdown(Shutdown::Write);
                    return;
                }
            }
            free = depart + on_wire(sent);
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
