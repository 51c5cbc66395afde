//! A corrupting TCP relay, for `--verify`: it passes the client's bytes to the server as they
//! are, and the server's replies back whole, except that every `every`-th reply that is a value
//! `--verify` wrote (a bulk string starting `rb`) is changed: in turn, one byte of its padding
//! (a wrong value) or the last digit of the key in its header (another key's value). It counts
//! what it changed, so a test compares respbench's counts with the relay's own.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// What the relay changed, all connections together.
#[derive(Debug, Default)]
pub struct Corrupted {
    /// Values seen (bulk strings starting `rb`).
    pub values: AtomicU64,
    /// Values whose padding was changed.
    pub wrong: AtomicU64,
    /// Values whose key digit was changed.
    pub other_key: AtomicU64,
}

/// A running corrupting relay to `127.0.0.1:upstream`; it stops accepting when dropped.
pub struct CorruptRelay {
    port: u16,
    stop: Arc<AtomicBool>,
    /// What it changed so far.
    pub corrupted: Arc<Corrupted>,
}

impl CorruptRelay {
    /// Starts a relay to `127.0.0.1:upstream` that changes every `every`-th value reply.
    pub fn start(upstream: u16, every: u64) -> CorruptRelay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the relay");
        let port = listener.local_addr().expect("local_addr").port();
        listener.set_nonblocking(true).expect("nonblocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let corrupted = Arc::new(Corrupted::default());
        let (stop2, counts) = (Arc::clone(&stop), Arc::clone(&corrupted));
        thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { continue };
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else { continue };
                        thread::spawn(move || copy(c2, s2));
                        let counts = Arc::clone(&counts);
                        thread::spawn(move || replies(server, client, every, &counts));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        CorruptRelay { port, stop, corrupted }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for CorruptRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Client to server, as it comes.
fn copy(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Server to client, whole replies at a time, every `every`-th value changed.
fn replies(mut from: TcpStream, mut to: TcpStream, every: u64, counts: &Corrupted) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        let mut at = 0;
        while let Some(len) = reply_len(&pending[at..]) {
            let reply = &mut pending[at..at + len];
            if let Some(body) = value_of(reply) {
                let seen = counts.values.fetch_add(1, Ordering::Relaxed) + 1;
                if seen.is_multiple_of(every) {
                    let value = &mut reply[body..];
                    if (seen / every) % 2 == 1 && value.len() > 30 {
                        value[30] = value[30].to_ascii_uppercase();
                        counts.wrong.fetch_add(1, Ordering::Relaxed);
                    } else {
                        value[13] = b'0' + (value[13] - b'0' + 1) % 10;
                        counts.other_key.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            at += len;
        }
        if to.write_all(&pending[..at]).is_err() {
            break;
        }
        pending.drain(..at);
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Where the value of a bulk reply that `--verify` wrote starts (its body starts `rb` and a
/// digit, and is long enough for the header), if it is one.
fn value_of(reply: &[u8]) -> Option<usize> {
    if reply.first() != Some(&b'$') {
        return None;
    }
    let body = reply.windows(2).position(|w| w == b"\r\n")? + 2;
    let value = reply.get(body..reply.len().checked_sub(2)?)?;
    (value.len() >= 28 && value.starts_with(b"rb") && value[13].is_ascii_digit()).then_some(body)
}

/// The length of the whole RESP reply at the start of `b`, when all of it is there.
fn reply_len(b: &[u8]) -> Option<usize> {
    let line_end = b.windows(2).position(|w| w == b"\r\n")?;
    let head = std::str::from_utf8(&b[1..line_end]).ok()?;
    let after = line_end + 2;
    match b.first()? {
        b'$' | b'!' | b'=' => {
            let n: i64 = head.parse().ok()?;
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (b.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n: i64 = head.parse().ok()?;
            let n = if matches!(b[0], b'%' | b'|') { n * 2 } else { n };
            let mut at = after;
            for _ in 0..n.max(0) {
                at += reply_len(&b[at..])?;
            }
            if b[0] == b'|' {
                // An attribute precedes the reply it annotates.
                at += reply_len(&b[at..])?;
            }
            Some(at)
        }
        _ => Some(after),
    }
}
