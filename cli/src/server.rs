//! The startup connection: checks that the server answers (over TLS with `--tls`) and
//! authenticates, and reads the `save` and `appendonly` settings for the report header, as
//! redis-benchmark does.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use respbench_core::resp::{encode_command, Value};
use respbench_core::{Endpoint, Handshake};
use respbench_core::{IoFailure, IoOp};

use crate::opts::Config;

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

/// A blocking connection to the server for a few commands (the startup checks), over TLS with
/// `--tls`; every connect, read and write waits at most its timeout.
pub struct Conn {
    s: Box<dyn Stream>,
    buf: Vec<u8>,
    endpoint: Endpoint,
    timeout: Duration,
    tls: bool,
    /// Whether the server sent anything yet.
    heard: bool,
}

impl Conn {
    /// Connects (and makes the TLS handshake with `cfg.tls`), waiting at most `--timeout` or
    /// 5 s for each step.
    pub fn connect(cfg: &Config) -> Result<Conn, StartupError> {
        let endpoint = &cfg.endpoint;
        let timeout = cfg.timeout.unwrap_or(STARTUP_TIMEOUT);
        let fail = |e: io::Error| StartupError(IoFailure::new(IoOp::Connect, endpoint, &e).to_string());
        let s: Box<dyn Stream> = match endpoint {
            Endpoint::Tcp { host, port } => {
                let addr =
                    (host.as_str(), *port).to_socket_addrs().map_err(fail)?.next().ok_or_else(|| {
                        StartupError(format!("Could not connect to Redis at {endpoint}: no address"))
                    })?;
                let s = TcpStream::connect_timeout(&addr, timeout).map_err(fail)?;
                s.set_read_timeout(Some(timeout)).map_err(fail)?;
                s.set_write_timeout(Some(timeout)).map_err(fail)?;
                let _ = s.set_nodelay(true);
                secure(s, cfg.tls.as_ref(), endpoint, timeout)?
            }
            Endpoint::Unix(p) => {
                let s = UnixStream::connect(p).map_err(fail)?;
                s.set_read_timeout(Some(timeout)).map_err(fail)?;
                s.set_write_timeout(Some(timeout)).map_err(fail)?;
                secure(s, cfg.tls.as_ref(), endpoint, timeout)?
            }
        };
        Ok(Conn {
            s,
            buf: Vec::new(),
            endpoint: endpoint.clone(),
            timeout,
            tls: cfg.tls.is_some(),
            heard: false,
        })
    }

    fn send(&mut self, req: &[u8]) -> Result<(), StartupError> {
        self.s.write_all(req).and_then(|()| self.s.flush()).map_err(|e| self.failure("write to", &e))
    }

    /// Reads one whole reply.
    fn read(&mut self) -> Result<Value, StartupError> {
        let mut chunk = [0u8; 4096];
        loop {
            match Value::parse(&self.buf) {
                Ok(Some((v, n))) => {
                    self.buf.drain(..n);
                    return Ok(v);
                }
                Ok(None) => {}
                // A TLS alert record: the server wanted a handshake.
                Err(_) if !self.tls && self.buf.starts_with(&[0x15, 0x03]) => {
                    return Err(StartupError(format!(
                        "{}: the server speaks TLS on this port: add --tls",
                        self.endpoint
                    )))
                }
                Err(e) => return Err(StartupError(format!("{}: {e}", self.endpoint))),
            }
            match self.s.read(&mut chunk) {
                Ok(0) => {
                    // A TLS server closes on a plain client's first bytes, often without a word.
                    let hint = if self.tls || self.heard {
                        ""
                    } else {
                        " (if it speaks TLS on this port, add --tls)"
                    };
                    return Err(StartupError(format!(
                        "{}: the server closed the connection{hint}",
                        self.endpoint
                    )));
                }
                Ok(n) => {
                    self.heard = true;
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(e) => return Err(self.failure("no reply from", &e)),
            }
        }
    }

    /// What went wrong reading or writing, in a user's words.
    fn failure(&self, doing: &str, e: &io::Error) -> StartupError {
        let endpoint = &self.endpoint;
        if let Some(m) = tls_failure(endpoint, e) {
            return StartupError(m);
        }
        StartupError(match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                let after = respbench_core::conn::format_duration(self.timeout);
                format!("{endpoint}: no reply from the server within {after}")
            }
            // rustls' word for a server that closed without close_notify.
            io::ErrorKind::UnexpectedEof => format!("{endpoint}: the server closed the connection"),
            // A TLS server resets a plain client that sent it RESP.
            io::ErrorKind::ConnectionReset if !self.tls && !self.heard => {
                format!(
                    "{endpoint}: {doing} the server: {} (if it speaks TLS on this port, add --tls)",
                    io_reason(e)
                )
            }
            _ => format!("{endpoint}: {doing} the server: {}", io_reason(e)),
        })
    }
}

/// With `tls`, makes the TLS handshake over `sock` and gives the encrypted stream; else `sock`.
fn secure<S: Read + Write + 'static>(
    sock: S,
    tls: Option<&respbench_driver::Tls>,
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<Box<dyn Stream>, StartupError> {
    let Some(tls) = tls else { return Ok(Box::new(sock)) };
    #[cfg(feature = "tls")]
    {
        use rustls::{ClientConnection, StreamOwned};
        let mut sock = sock;
        let mut conn = ClientConnection::new(tls.config.clone(), tls.server_name.clone())
            .map_err(|e| StartupError(format!("TLS with {endpoint}: {e}")))?;
        while conn.is_handshaking() {
            if let Err(e) = conn.complete_io(&mut sock) {
                return Err(StartupError(tls_failure(endpoint, &e).unwrap_or_else(|| match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => format!(
                        "TLS with {endpoint}: no handshake reply within {} (is the server speaking TLS on this port?)",
                        respbench_core::conn::format_duration(timeout)
                    ),
                    io::ErrorKind::UnexpectedEof => {
                        format!("TLS with {endpoint}: the server closed the connection during the handshake")
                    }
                    _ => format!("TLS with {endpoint}: {e}"),
                })));
            }
        }
        Ok(Box::new(StreamOwned::new(conn, sock)))
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = (sock, endpoint, timeout);
        match *tls {}
    }
}

/// The OS' words without the `(os error N)` suffix.
fn io_reason(e: &io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

/// A TLS failure (rustls' error inside `e`) in one line, with what to do about the usual ones.
fn tls_failure(endpoint: &Endpoint, e: &io::Error) -> Option<String> {
    #[cfg(feature = "tls")]
    {
        use rustls::{AlertDescription, CertificateError, Error, InvalidMessage};
        let err = e.get_ref()?.downcast_ref::<Error>()?;
        let hint = match err {
            // The first bytes back were not a TLS record: a server answering in RESP, say.
            Error::InvalidMessage(
                InvalidMessage::InvalidContentType | InvalidMessage::UnknownProtocolVersion,
            ) => {
                return Some(format!(
                    "TLS with {endpoint}: the server is not speaking TLS (is this its plain port?)"
                ));
            }
            Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                " (no CA of --cacert, --cacertdir or the system's roots signed the server's certificate; \
                 --insecure skips the check)"
            }
            // rustls wraps webpki's error opaquely: its name is all there is to match.
            Error::InvalidCertificate(CertificateError::Other(o)) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
                " (the server presents a CA certificate, basicConstraints CA:TRUE, as its own, which rustls refuses \
                 even when that certificate is given to --cacert: make the server a certificate signed by the CA, \
                 or use --insecure)"
            }
            Error::AlertReceived(AlertDescription::CertificateRequired) => {
                " (the server wants a client certificate: give --cert and --key)"
            }
            Error::AlertReceived(
                AlertDescription::UnknownCA
                | AlertDescription::BadCertificate
                | AlertDescription::CertificateUnknown,
            ) => " (the server refused the client certificate)",
            // TLS 1.2 servers say this for a missing client certificate too.
            Error::AlertReceived(AlertDescription::HandshakeFailure) => {
                " (the server accepts none of the cipher suites offered, see --tls-ciphers and \
                 --tls-ciphersuites, or wants a client certificate, see --cert and --key)"
            }
            _ => "",
        };
        Some(format!("TLS with {endpoint}: {err}{hint}"))
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = (endpoint, e);
        None
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
/// A refused connection, a failed TLS handshake or a refused `AUTH` is an error; a server that
/// refuses `CONFIG GET` (a hosted Redis, say) gives empty settings and a warning on stderr. Each
/// step waits at most `--timeout`, or 5 s.
pub fn startup(cfg: &Config) -> Result<ServerInfo, StartupError> {
    let mut c = Conn::connect(cfg)?;
    let hs = Handshake::new(cfg.user.as_deref(), cfg.password.as_deref(), false, 0, false);
    let mut req = hs.bytes().to_vec();
    encode_command(&[b"CONFIG", b"GET", b"save"], &mut req);
    encode_command(&[b"CONFIG", b"GET", b"appendonly"], &mut req);
    c.send(&req)?;
    if !hs.is_empty() {
        if let Value::Error(e) = c.read()? {
            return Err(StartupError(format!("AUTH failed: {}", text(&e))));
        }
    }
    let save = c.read()?;
    let appendonly = c.read()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values_in_resp2_and_resp3() {
        let v = Value::Array(vec![Value::Bulk(b"save".to_vec()), Value::Bulk(b"3600 1".to_vec())]);
        assert_eq!(config_value(&v).as_deref(), Some("3600 1"));
        let v = Value::Map(vec![(Value::Bulk(b"appendonly".to_vec()), Value::Simple(b"no".to_vec()))]);
        assert_eq!(config_value(&v).as_deref(), Some("no"));
        assert_eq!(config_value(&Value::Error(b"ERR unknown command".to_vec())), None);
    }
}
