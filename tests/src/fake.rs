//! A small programmable RESP server for faults a real `redis-server` cannot produce: garbage
//! bytes, truncated replies, replies nobody asked for, absurd lengths, nesting bombs, stalls.
//!
//! It listens on a free loopback port and serves each connection on its own thread. Every
//! command it reads (RESP arrays of bulk strings) is handed to a [`Script`], which says what to
//! do: reply, close, or stall. `CONFIG GET` is answered like a real server unless the script
//! decides otherwise, so respbench's startup connection passes and the fault hits the benchmark
//! connections.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// What the fake server does with one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Writes these bytes (any bytes: valid RESP or not).
    Reply(Vec<u8>),
    /// Writes these bytes, then closes the connection.
    ReplyAndClose(Vec<u8>),
    /// Closes the connection without answering.
    Close,
    /// Reads and answers nothing more on this connection, keeping it open.
    Stall,
}

/// One command as the fake server saw it.
#[derive(Clone, Debug)]
pub struct Command<'a> {
    /// Which connection (0 is the first accepted: respbench's startup connection).
    pub conn: u64,
    /// Which command on that connection, from 0.
    pub index: u64,
    /// Which command across all benchmark connections (every command except `CONFIG`), from 0.
    pub global: u64,
    /// The command's arguments; `args[0]` is its name.
    pub args: &'a [Vec<u8>],
}

impl Command<'_> {
    /// The command name, upper-cased.
    pub fn name(&self) -> String {
        self.args.first().map(|a| String::from_utf8_lossy(a).to_uppercase()).unwrap_or_default()
    }
}

/// Decides what the fake server does with each command.
pub type Script = Arc<dyn Fn(&Command) -> Action + Send + Sync>;

/// A running fake server. Dropping it stops accepting and closes every connection.
pub struct FakeServer {
    port: u16,
    stop: Arc<AtomicBool>,
    commands: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
}

/// The reply of a real server to `CONFIG GET save` / `CONFIG GET appendonly`.
fn config_reply(args: &[Vec<u8>]) -> Vec<u8> {
    let name = args.get(2).cloned().unwrap_or_default();
    let value: &[u8] = if name.eq_ignore_ascii_case(b"appendonly") { b"no" } else { b"" };
    let mut out = format!("*2\r\n${}\r\n", name.len()).into_bytes();
    out.extend_from_slice(&name);
    out.extend_from_slice(format!("\r\n${}\r\n", value.len()).as_bytes());
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
    out
}

impl FakeServer {
    /// Starts a server that answers `CONFIG GET` like Redis and every other command with `script`.
    pub fn start(script: impl Fn(&Command) -> Action + Send + Sync + 'static) -> FakeServer {
        FakeServer::launch(Arc::new(script), true)
    }

    /// Starts a server that answers every command with `script`, `CONFIG` included (a server that
    /// does not know it, closes on it or never answers it). `CONFIG` still does not count in
    /// [`Command::global`] nor [`FakeServer::commands`].
    pub fn start_with_config(script: impl Fn(&Command) -> Action + Send + Sync + 'static) -> FakeServer {
        FakeServer::launch(Arc::new(script), false)
    }

    fn launch(script: Script, answer_config: bool) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the fake server");
        let port = listener.local_addr().expect("local_addr").port();
        listener.set_nonblocking(true).expect("nonblocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let commands = Arc::new(AtomicU64::new(0));
        let written = Arc::new(AtomicU64::new(0));
        let (stop2, commands2, written2) = (stop.clone(), commands.clone(), written.clone());
        thread::spawn(move || {
            let mut conn = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (script, stop) = (script.clone(), stop2.clone());
                        let (commands, written) = (commands2.clone(), written2.clone());
                        let n = conn;
                        conn += 1;
                        thread::spawn(move || {
                            let counts = Counts { commands: &commands, written: &written };
                            serve(s, n, &*script, answer_config, &stop, counts)
                        });
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeServer { port, stop, commands, written }
    }

    /// Starts a server that replies `reply` to every benchmark command.
    pub fn replying(reply: &[u8]) -> FakeServer {
        let reply = reply.to_vec();
        FakeServer::start(move |_| Action::Reply(reply.clone()))
    }

    /// TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Benchmark commands (not `CONFIG`, not `INFO`) received so far, on all connections.
    pub fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    /// Bytes of replies the kernel has taken so far, on all connections (a reply counts once
    /// all of it is written: the client has read all but what the socket buffers hold).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What a connection counts for the server: commands received, reply bytes written.
struct Counts<'a> {
    commands: &'a AtomicU64,
    written: &'a AtomicU64,
}

/// Serves one connection until the script closes it, the peer leaves, or the server stops.
fn serve(
    mut s: TcpStream,
    conn: u64,
    script: &dyn Fn(&Command) -> Action,
    answer_config: bool,
    stop: &AtomicBool,
    counts: Counts,
) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut index = 0u64;
    let mut stalled = false;
    while !stop.load(Ordering::Relaxed) {
        if stalled {
            thread::sleep(Duration::from_millis(20));
            continue;
        }
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        let mut out = Vec::new();
        let mut close = false;
        while let Some((args, used)) = parse_command(&buf) {
            buf.drain(..used);
            let config = args.first().is_some_and(|a| a.eq_ignore_ascii_case(b"CONFIG"));
            // respbench's own readings of the server (the per-second sampler's INFO): answered by
            // the script at the place they come, not counted as benchmark commands.
            let info = args.first().is_some_and(|a| a.eq_ignore_ascii_case(b"INFO"));
            let action = if config && answer_config {
                Action::Reply(config_reply(&args))
            } else if config {
                script(&Command { conn, index, global: u64::MAX, args: &args })
            } else if info {
                let global = counts.commands.load(Ordering::Relaxed);
                script(&Command { conn, index, global, args: &args })
            } else {
                let global = counts.commands.fetch_add(1, Ordering::Relaxed);
                script(&Command { conn, index, global, args: &args })
            };
            index += 1;
            match action {
                Action::Reply(b) => out.extend_from_slice(&b),
                Action::ReplyAndClose(b) => {
                    out.extend_from_slice(&b);
                    close = true;
                }
                Action::Close => close = true,
                Action::Stall => stalled = true,
            }
            if close || stalled {
                break;
            }
        }
        if !out.is_empty() {
            if s.write_all(&out).is_err() {
                return;
            }
            counts.written.fetch_add(out.len() as u64, Ordering::Relaxed);
        }
        if close {
            let _ = s.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// Parses one RESP command (an array of bulk strings) from the front of `buf`: its arguments and
/// how many bytes it took, or `None` when incomplete.
pub(crate) fn parse_command(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
        let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        Some((&buf[at..end], end + 2))
    }
    let (head, mut at) = line(buf, 0)?;
    let n: usize = std::str::from_utf8(head.strip_prefix(b"*")?).ok()?.parse().ok()?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        let (len, next) = line(buf, at)?;
        let len: usize = std::str::from_utf8(len.strip_prefix(b"$")?).ok()?.parse().ok()?;
        let end = next + len;
        if buf.len() < end + 2 {
            return None;
        }
        args.push(buf[next..end].to_vec());
        at = end + 2;
    }
    Some((args, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_waits_for_more() {
        let cmd = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
        assert_eq!(parse_command(cmd), Some((vec![b"GET".to_vec(), b"key".to_vec()], cmd.len())));
        for i in 0..cmd.len() {
            assert_eq!(parse_command(&cmd[..i]), None, "prefix {i}");
        }
    }

    #[test]
    fn answers_config_and_follows_the_script() {
        let server = FakeServer::replying(b"+PONG\r\n");
        let mut s = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        s.write_all(b"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n*1\r\n$4\r\nPING\r\n").unwrap();
        let want = b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n+PONG\r\n";
        let mut got = Vec::new();
        let mut chunk = [0u8; 64];
        while got.len() < want.len() {
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0, "closed after {got:?}");
            got.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(got, want);
        assert_eq!(server.commands(), 1);
    }
}
