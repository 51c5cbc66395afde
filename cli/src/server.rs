//! The startup connection: checks that the server answers and authenticates, and reads the
//! `save` and `appendonly` settings for the report header, as redis-benchmark does.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use respbench_core::resp::{encode_command, Value};
use respbench_core::{Endpoint, Handshake};
use respbench_core::{IoFailure, IoOp};

/// How long the startup connection waits for the server before giving up, without `--timeout`.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(5);

/// What the report header shows about the server.
#[derive(Clone, Debug, Default)]
pub struct ServerInfo {
    /// `CONFIG GET save`, when the server allowed it.
    pub save: Option<String>,
    /// `CONFIG GET appendonly`, likewise.
    pub appendonly: Option<String>,
}

/// Why the startup connection failed; the run must not start.
#[derive(Debug)]
pub struct StartupError(pub String);

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<Box<dyn Stream>, StartupError> {
    let fail = |e: std::io::Error| StartupError(IoFailure::new(IoOp::Connect, endpoint, &e).to_string());
    match endpoint {
        Endpoint::Tcp { host, port } => {
            let addr = (host.as_str(), *port).to_socket_addrs().map_err(fail)?.next().ok_or_else(|| {
                StartupError(format!("Could not connect to Redis at {endpoint}: no address"))
            })?;
            let s = TcpStream::connect_timeout(&addr, timeout).map_err(fail)?;
            s.set_read_timeout(Some(timeout)).map_err(fail)?;
            s.set_write_timeout(Some(timeout)).map_err(fail)?;
            let _ = s.set_nodelay(true);
            Ok(Box::new(s))
        }
        Endpoint::Unix(p) => {
            let s = UnixStream::connect(p).map_err(fail)?;
            s.set_read_timeout(Some(timeout)).map_err(fail)?;
            s.set_write_timeout(Some(timeout)).map_err(fail)?;
            Ok(Box::new(s))
        }
    }
}

/// Reads one whole reply, waiting at most `timeout` for each read.
fn read_value(
    s: &mut dyn Stream,
    buf: &mut Vec<u8>,
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<Value, StartupError> {
    let mut chunk = [0u8; 4096];
    loop {
        match Value::parse(buf) {
            Ok(Some((v, n))) => {
                buf.drain(..n);
                return Ok(v);
            }
            Ok(None) => {}
            Err(e) => return Err(StartupError(format!("{endpoint}: {e}"))),
        }
        match s.read(&mut chunk) {
            Ok(0) => return Err(StartupError(format!("{endpoint}: the server closed the connection"))),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                let after = respbench_core::conn::format_duration(timeout);
                return Err(StartupError(format!("{endpoint}: no reply from the server within {after}")));
            }
            Err(e) => return Err(StartupError(format!("{endpoint}: no reply from the server: {e}"))),
        }
    }
}

fn text(v: &[u8]) -> String {
    String::from_utf8_lossy(v).into_owned()
}

/// The value of a `CONFIG GET name` reply (an array or, in RESP3, a map).
fn config_value(v: &Value) -> Option<String> {
    match v {
        Value::Array(items) => match items.get(1) {
            Some(Value::Bulk(b)) | Some(Value::Simple(b)) => Some(text(b)),
            _ => None,
        },
        Value::Map(pairs) => match pairs.first() {
            Some((_, Value::Bulk(b))) | Some((_, Value::Simple(b))) => Some(text(b)),
            _ => None,
        },
        _ => None,
    }
}

/// Connects, authenticates with `AUTH` when a password is set, and reads the server's settings.
/// A refused connection or a refused `AUTH` is an error; a server that refuses `CONFIG GET`
/// (a hosted Redis, say) gives empty settings and a warning on stderr. Each step waits at most
/// `timeout` (`--timeout`), or 5 s.
pub fn startup(
    endpoint: &Endpoint,
    user: Option<&str>,
    password: Option<&str>,
    timeout: Option<Duration>,
) -> Result<ServerInfo, StartupError> {
    let timeout = timeout.unwrap_or(STARTUP_TIMEOUT);
    let mut s = connect(endpoint, timeout)?;
    let hs = Handshake::new(user, password, false, 0, false);
    let mut req = hs.bytes().to_vec();
    encode_command(&[b"CONFIG", b"GET", b"save"], &mut req);
    encode_command(&[b"CONFIG", b"GET", b"appendonly"], &mut req);
    s.write_all(&req).map_err(|e| StartupError(format!("{endpoint}: {e}")))?;
    let mut buf = Vec::new();
    if !hs.is_empty() {
        if let Value::Error(e) = read_value(&mut *s, &mut buf, endpoint, timeout)? {
            return Err(StartupError(format!("AUTH failed: {}", text(&e))));
        }
    }
    let save = read_value(&mut *s, &mut buf, endpoint, timeout)?;
    let appendonly = read_value(&mut *s, &mut buf, endpoint, timeout)?;
    for v in [&save, &appendonly] {
        if let Value::Error(e) = v {
            if e.starts_with(b"NOAUTH") {
                return Err(StartupError(format!("{} (use -a to give a password)", text(e))));
            }
        }
    }
    let info = ServerInfo { save: config_value(&save), appendonly: config_value(&appendonly) };
    if info.save.is_none() || info.appendonly.is_none() {
        eprintln!("WARNING: Could not fetch server CONFIG");
    }
    Ok(info)
}
