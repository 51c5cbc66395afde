//! The startup connection: checks that the server answers (over TLS with `--tls`) and
//! authenticates, and reads the `save` and `appendonly` settings for the report header, as
//! redis-benchmark does. Idle mode reads the server's INFO over the same kind of connection.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use respbench_core::conn::os_words;
use respbench_core::resp::{encode_command, Value};
use respbench_core::{Endpoint, Handshake};
use respbench_core::{IoFailure, IoOp};
use respbench_driver::Target;

use respbench_driver::Tls;

use crate::config::Config;
/// Why the startup connection failed: defined beside the session's [`crate::error::Error`], which wraps
/// it, and named here, where the connection that fails with it is.
pub use crate::error::StartupError;

/// Why the text of `INFO`, or a figure in it, cannot be had over a [`Conn`].
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InfoError {
    /// The connection failed (closed, silent, garbled).
    Connection(StartupError),
    /// The server refused `INFO` (refused or renamed, as managed services do): its words.
    Refused(String),
    /// A reply that is not `INFO`'s text.
    Reply(Value),
    /// A section without the field asked for.
    NoField {
        /// The section (`clients`).
        section: String,
        /// The field (`connected_clients`).
        field: String,
    },
}

impl std::fmt::Display for InfoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InfoError::Connection(e) => f.write_str(&e.message),
            InfoError::Refused(e) => write!(f, "INFO refused: {e}"),
            InfoError::Reply(v) => write!(f, "INFO replied {v:?}"),
            InfoError::NoField { section, field } => write!(f, "INFO {section} has no {field}"),
        }
    }
}

impl std::error::Error for InfoError {}

/// How long the startup connection waits for the server before giving up, without `--timeout`:
/// as long as a benchmark connection's handshake.
const STARTUP_TIMEOUT: Duration = respbench_core::SETUP_TIMEOUT;

/// What the report header shows about the server.
#[derive(Clone, Debug, Default)]
pub struct ServerInfo {
    /// `CONFIG GET save`, when the server allowed it.
    pub save: Option<String>,
    /// `CONFIG GET appendonly`, likewise.
    pub appendonly: Option<String>,
    /// The server's name from `INFO server` (`server_name`: valkey; `redis` for a server that
    /// has a `redis_version` only), when it answered.
    pub name: Option<String>,
    /// Its version (`valkey_version`, else `redis_version`).
    pub version: Option<String>,
    /// `redis_mode`/`server_mode`: standalone, cluster or sentinel.
    pub mode: Option<String>,
    /// Over TLS: whether the startup connection's handshake checked the server's name against
    /// its certificate (`None` without TLS).
    pub tls_name: Option<NameCheck>,
}

/// Whether a TLS handshake checked the server's name against its certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameCheck {
    /// The certificate is for the name, or the IP address, the server was given by.
    Checked,
    /// Not checked, and why: `--insecure`, a certificate with no IP address reached by IP, a Unix
    /// socket without `--sni`.
    Skipped(String),
}

impl ServerInfo {
    /// Reads the name, version and mode from the text of `INFO server`.
    pub fn identify(&mut self, body: &str) {
        let field = |k: &str| info_value::<String>(body, k).filter(|v| !v.is_empty());
        self.version = field("valkey_version").or_else(|| field("redis_version"));
        self.name = field("server_name").or_else(|| field("redis_version").map(|_| "redis".to_string()));
        self.mode = field("server_mode").or_else(|| field("redis_mode"));
    }

    /// `redis 7.0.15 standalone`, or what of it is known; `None` when nothing is.
    pub fn describe(&self) -> Option<String> {
        let parts: Vec<&str> =
            [&self.name, &self.version, &self.mode].into_iter().flatten().map(String::as_str).collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

/// What a plain connection's failure adds when the port answered a TLS hello: the hint the
/// command line's `Error:` line carries too.
pub(crate) const TLS_HINT: &str = " (it speaks TLS on this port: add --tls)";

/// The words every message of a plain connection to a TLS port ends with.
pub(crate) const ADD_TLS: &str = "on this port: add --tls";

/// The largest reply this connection reads: `CONFIG GET` and `INFO` replies are kilobytes.
const MAX_REPLY: usize = 1 << 20;

/// A connection's socket, a second handle on the same file.
enum Raw {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// A connection made non-blocking for a loop over many ([`Conn::into_polled`]).
pub(crate) struct Polled {
    /// What the server sent before, not yet read.
    pub(crate) pending: Vec<u8>,
    reader: Box<dyn Stream>,
    /// The socket under any TLS, kept open for its descriptor.
    raw: Raw,
}

impl Polled {
    /// The socket's descriptor, to wait on.
    pub(crate) fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match &self.raw {
            Raw::Tcp(s) => s.as_raw_fd(),
            Raw::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Polled {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reader.read(buf)
    }
}

/// A blocking connection's byte stream: a socket, or TLS over one.
pub(crate) trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// A server the blocking connection goes to: where it is, the TLS to speak, the `AUTH` to send
/// and how long to wait; what [`Conn`] needs of the configuration.
#[derive(Clone, Debug)]
pub struct Server {
    /// Where it is.
    pub endpoint: Endpoint,
    /// The TLS settings (`--tls`), made once for every connection.
    pub tls: Option<Tls>,
    /// `--user`.
    pub user: Option<String>,
    /// `-a`.
    pub password: Option<String>,
    /// `--timeout`; each step waits 5 s without it.
    pub timeout: Option<Duration>,
    /// `--connect-timeout`: the connect's own limit, else [`Server::timeout`]'s.
    pub connect_timeout: Option<Duration>,
    /// `--mptcp`: the startup connection is an MPTCP socket too, as every connection of
    /// valkey-benchmark's is; a kernel that refuses them is found here, before the run.
    pub mptcp: bool,
}

impl Server {
    /// The `-h/-p` (or `-s`) server of `cfg`, over `tls`.
    pub fn new(cfg: &Config, tls: Option<Tls>) -> Server {
        Server {
            endpoint: cfg.endpoint.clone(),
            tls,
            user: cfg.user.clone(),
            password: cfg.password.clone(),
            timeout: cfg.timeout,
            connect_timeout: cfg.connect_timeout,
            mptcp: cfg.mptcp,
        }
    }

    /// Another node at `endpoint`: the same AUTH and TLS settings, and, without `--sni`, the
    /// node's host as the name its certificate is checked against.
    pub fn node(&self, endpoint: &Endpoint) -> Server {
        let mut s = self.clone();
        s.endpoint = endpoint.clone();
        #[cfg(feature = "tls")]
        if let Some(tls) = &mut s.tls {
            tls.server_name = tls.name_for(endpoint);
        }
        s
    }
}

/// A blocking connection to the server for a few commands (the startup checks, idle mode's
/// INFO), over TLS with `--tls`; every connect, read and write waits at most its timeout.
pub struct Conn {
    s: Box<dyn Stream>,
    /// The socket under any TLS, to change its timeouts.
    raw: Raw,
    buf: Vec<u8>,
    endpoint: Endpoint,
    timeout: Duration,
    tls: bool,
    /// Whether the server sent anything yet.
    heard: bool,
    /// The server's TCP address (none over a Unix socket): a plain connection that the server
    /// closes without a word is probed there for TLS.
    addr: Option<std::net::SocketAddr>,
    /// Over TLS: whether the handshake checked the server's name.
    tls_name: Option<NameCheck>,
}

impl Conn {
    /// Connects (and makes the TLS handshake with `server.tls`), waiting at most `--timeout` or
    /// 5 s for each step.
    pub fn connect(server: &Server) -> Result<Conn, StartupError> {
        let endpoint = &server.endpoint;
        let timeout = server.timeout.unwrap_or(STARTUP_TIMEOUT);
        let fail = |e: io::Error| StartupError::new(IoFailure::new(IoOp::Connect, endpoint, &e).to_string());
        let target = respbench_driver::resolve(endpoint, server.mptcp)
            .map_err(|e| StartupError::new(e.to_string()))?;
        let mptcp = matches!(target, Target::Mptcp(_));
        let addr = match &target {
            Target::Tcp(a) | Target::Mptcp(a) => Some(*a),
            Target::Unix(_) => None,
        };
        let ((s, tls_name), raw): ((Box<dyn Stream>, Option<NameCheck>), Raw) = match target {
            Target::Tcp(addr) | Target::Mptcp(addr) => {
                let connect = server.connect_timeout.unwrap_or(timeout);
                let s = respbench_driver::connect_tcp_timeout(addr, mptcp, connect).map_err(|e| {
                    match respbench_driver::mptcp_refused(&e).filter(|_| mptcp) {
                        Some(m) => StartupError::new(m),
                        None if e.kind() == io::ErrorKind::TimedOut && server.connect_timeout.is_some() => {
                            fail(respbench_driver::connect_timed_out(connect))
                        }
                        None => fail(e),
                    }
                })?;
                s.set_read_timeout(Some(timeout)).map_err(fail)?;
                s.set_write_timeout(Some(timeout)).map_err(fail)?;
                let _ = s.set_nodelay(true);
                let raw = Raw::Tcp(s.try_clone().map_err(fail)?);
                (secure(s, server.tls.as_ref(), endpoint, timeout)?, raw)
            }
            Target::Unix(p) => {
                let s = UnixStream::connect(p).map_err(fail)?;
                s.set_read_timeout(Some(timeout)).map_err(fail)?;
                s.set_write_timeout(Some(timeout)).map_err(fail)?;
                let raw = Raw::Unix(s.try_clone().map_err(fail)?);
                (secure(s, server.tls.as_ref(), endpoint, timeout)?, raw)
            }
        };
        Ok(Conn {
            s,
            raw,
            buf: Vec::new(),
            endpoint: endpoint.clone(),
            timeout,
            tls: server.tls.is_some(),
            heard: false,
            addr,
            tls_name,
        })
    }

    /// [`Conn::connect`], then `AUTH` when `server` has a password.
    pub fn authenticated(server: &Server) -> Result<Conn, StartupError> {
        let mut c = Conn::connect(server)?;
        let hs = Handshake::new(server.user.as_deref(), server.password.as_deref(), false, 0, false);
        if !hs.is_empty() {
            c.send(hs.bytes())?;
            if let Value::Error(e) = c.read()? {
                return Err(StartupError::new(format!("AUTH failed: {}", text(&e))));
            }
        }
        Ok(c)
    }

    /// Waits at most `t` for each read and write from now on.
    pub fn set_timeout(&mut self, t: Duration) {
        let _ = match &self.raw {
            Raw::Tcp(s) => s.set_read_timeout(Some(t)).and_then(|()| s.set_write_timeout(Some(t))),
            Raw::Unix(s) => s.set_read_timeout(Some(t)).and_then(|()| s.set_write_timeout(Some(t))),
        };
        self.timeout = t;
    }

    /// The connection as a reader of what the server sends from now on, what it sent already
    /// first: `MONITOR`'s stream, for `respbench capture`.
    pub fn into_reader(self) -> Box<dyn Read> {
        Box::new(io::Cursor::new(self.buf).chain(self.s))
    }

    /// The connection as a non-blocking reader for a loop that waits on many with `poll(2)`:
    /// what the server sent already, a reader of the rest (over TLS, of its plaintext), and the
    /// socket, whose descriptor the loop waits on ([`Polled::fd`]).
    pub(crate) fn into_polled(self) -> io::Result<Polled> {
        match &self.raw {
            Raw::Tcp(s) => s.set_nonblocking(true)?,
            Raw::Unix(s) => s.set_nonblocking(true)?,
        }
        Ok(Polled { pending: self.buf, reader: self.s, raw: self.raw })
    }

    /// Sends one command and reads its reply (an error reply is a reply, not an `Err`).
    pub fn command(&mut self, args: &[&[u8]]) -> Result<Value, StartupError> {
        let mut req = Vec::new();
        encode_command(args, &mut req);
        self.send(&req)?;
        self.read()
    }

    /// Sends requests already encoded (a pipeline), whose replies [`Conn::reply`] reads.
    pub(crate) fn send_encoded(&mut self, req: &[u8]) -> Result<(), StartupError> {
        self.send(req)
    }

    /// Reads the next reply of a pipeline sent with [`Conn::send_encoded`].
    pub(crate) fn reply(&mut self) -> Result<Value, StartupError> {
        self.read()
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
                    return Err(StartupError::connection(format!(
                        "{}: the server speaks TLS {ADD_TLS}",
                        self.endpoint
                    )))
                }
                Err(e) => return Err(StartupError::connection(format!("{}: {e}", self.endpoint))),
            }
            match self.s.read(&mut chunk) {
                Ok(0) => {
                    // A TLS server closes on a plain client's first bytes, often without a word;
                    // so does a proxy with no server behind it: the hint only if it is TLS.
                    let hint = if self.speaks_tls() { TLS_HINT } else { "" };
                    return Err(StartupError::connection(format!(
                        "{}: the server closed the connection{hint}",
                        self.endpoint
                    )));
                }
                Ok(n) => {
                    self.heard = true;
                    self.buf.extend_from_slice(&chunk[..n]);
                    if self.buf.len() > MAX_REPLY {
                        // Not a reply to CONFIG GET or INFO: not worth holding in memory.
                        return Err(StartupError::connection(format!(
                            "{}: a reply of more than {} bytes to a command that never has one",
                            self.endpoint, MAX_REPLY
                        )));
                    }
                }
                // A signal (Ctrl-C, whose handler the caller's stop flag reflects) interrupted
                // the wait: read again.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.failure("no reply from", &e)),
            }
        }
    }

    /// Whether a plain connection that the server ended before it said anything was to a TLS
    /// port: a TLS client hello sent to the same address gets a TLS record back.
    fn speaks_tls(&self) -> bool {
        match self.addr {
            Some(addr) if !self.tls && !self.heard => tls_answers(addr, self.timeout.min(TLS_PROBE_WAIT)),
            _ => false,
        }
    }

    /// What went wrong reading or writing, in a user's words.
    fn failure(&self, doing: &str, e: &io::Error) -> StartupError {
        let endpoint = &self.endpoint;
        if let Some(m) = tls_failure(endpoint, e) {
            return StartupError::connection(m);
        }
        StartupError::connection(match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                let after = respbench_core::conn::format_duration(self.timeout);
                format!("{endpoint}: no reply from the server within {after}")
            }
            // rustls' word for a server that closed without close_notify.
            io::ErrorKind::UnexpectedEof => format!("{endpoint}: the server closed the connection"),
            // A TLS server resets a plain client that sent it RESP.
            io::ErrorKind::ConnectionReset if self.speaks_tls() => {
                format!("{endpoint}: {doing} the server: {}{TLS_HINT}", os_words(e))
            }
            _ => format!("{endpoint}: {doing} the server: {}", os_words(e)),
        })
    }
}

/// How long [`tls_answers`] waits for a TLS server's first record.
const TLS_PROBE_WAIT: Duration = Duration::from_secs(2);

/// Whether the server at `addr` answers a TLS client hello with a TLS record (a server hello
/// or an alert), within `wait` for the connect and for the answer.
fn tls_answers(addr: std::net::SocketAddr, wait: Duration) -> bool {
    #[cfg(feature = "tls")]
    {
        use rustls::pki_types::ServerName;
        use rustls::{ClientConfig, ClientConnection, RootCertStore};
        let Ok(mut sock) = TcpStream::connect_timeout(&addr, wait) else { return false };
        let _ = sock.set_read_timeout(Some(wait));
        let _ = sock.set_write_timeout(Some(wait));
        // Nothing is verified: the hello is all that is sent, and the first record back all
        // that is read.
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let Ok(builder) = ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions()
        else {
            return false;
        };
        let config = builder.with_root_certificates(RootCertStore::empty()).with_no_client_auth();
        let name = ServerName::IpAddress(addr.ip().into());
        let Ok(mut conn) = ClientConnection::new(std::sync::Arc::new(config), name) else { return false };
        while conn.wants_write() {
            if conn.write_tls(&mut sock).is_err() {
                return false;
            }
        }
        let mut head = [0u8; 2];
        // A handshake record (22) or an alert (21), of TLS's major version 3.
        sock.read_exact(&mut head).is_ok() && matches!(head, [22 | 21, 3])
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = (addr, wait);
        false
    }
}

/// With `tls`, makes the TLS handshake over `sock` and gives the encrypted stream and whether
/// the server's name was checked; else `sock`.
pub(crate) fn secure<S: Read + Write + Send + 'static>(
    sock: S,
    tls: Option<&respbench_driver::Tls>,
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<(Box<dyn Stream>, Option<NameCheck>), StartupError> {
    let Some(tls) = tls else { return Ok((Box::new(sock), None)) };
    #[cfg(feature = "tls")]
    {
        use rustls::{ClientConnection, StreamOwned};
        let mut sock = sock;
        let mut conn = ClientConnection::new(tls.config.clone(), tls.server_name.clone())
            .map_err(|e| StartupError::new(format!("TLS with {endpoint}: {e}")))?;
        while conn.is_handshaking() {
            if let Err(e) = conn.complete_io(&mut sock) {
                return Err(StartupError::connection(tls_failure(endpoint, &e).unwrap_or_else(|| match e.kind() {
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
        // The verifier accepted the certificate; the same rule says whether it checked the name.
        let unnamed = matches!(endpoint, Endpoint::Unix(_)) && !tls.config.enable_sni;
        let unchecked = conn
            .peer_certificates()
            .and_then(|c| c.first())
            .and_then(|cert| crate::tls::name_unchecked(cert, &tls.server_name, unnamed));
        let check = unchecked.map_or(NameCheck::Checked, NameCheck::Skipped);
        Ok((Box::new(StreamOwned::new(conn, sock)), Some(check)))
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = (sock, endpoint, timeout);
        match *tls {}
    }
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
            Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => {
                " (the certificate is not for the name or address the server was given by, -h or \
                 --sni: give a name it was issued for with --sni NAME, or --insecure to skip the checks)"
            }
            Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                " (no CA of --cacert, --cacertdir or the system's roots signed the server's certificate; \
                 --insecure skips the check)"
            }
            // rustls wraps webpki's error opaquely: its name is all there is to match.
            Error::InvalidCertificate(CertificateError::Other(o)) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
                " (the server presents a CA certificate, basicConstraints CA:TRUE, as its own, and it is not one \
                 of those given to --cacert or --cacertdir: give that very certificate, make the server a \
                 certificate signed by the CA, or use --insecure)"
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

pub(crate) fn text(v: &[u8]) -> String {
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

/// The startup connection's readings: the server's settings, why `CONFIG GET` gave none (a
/// managed service refuses it), and the connection, kept for the counters read around each
/// test unless it is of no more use (closed, silent, garbled: how it failed).
pub type Startup = (ServerInfo, Option<String>, Result<Conn, StartupError>);

/// Connects, authenticates with `AUTH` when a password is set, and reads the server's settings.
///
/// The connection (TCP, TLS) and the `AUTH` the user asked for are the benchmark's own: when
/// they fail the run must not start. `CONFIG GET` is respbench asking for its report only:
/// a server that refuses it, does not know it (a hosted Redis, a proxy, another server), closes
/// the connection on it or never answers gives empty settings and why, for a warning, and the
/// run goes on, as redis-benchmark's does ("Could not fetch server CONFIG"). One
/// exception: `NOAUTH` means the benchmark's connections would be refused too. Each step waits
/// at most `--timeout`, or 5 s.
///
/// The connection comes back unless it is of no more use (closed, silent, garbled: then why),
/// a server that refused `CONFIG` included: it may still answer `INFO`.
pub fn startup(server: &Server) -> Result<Startup, StartupError> {
    let mut c = Conn::authenticated(server)?;
    let mut info = ServerInfo { tls_name: c.tls_name.clone(), ..ServerInfo::default() };
    let mut why = None;
    for name in ["save", "appendonly"] {
        match c.command(&[b"CONFIG", b"GET", name.as_bytes()]) {
            Ok(Value::Error(e)) if e.starts_with(b"NOAUTH") => {
                return Err(StartupError::new(format!("{} (use -a to give a password)", text(&e))));
            }
            Ok(v) => {
                let value = config_value(&v);
                if value.is_none() && why.is_none() {
                    why = Some(match &v {
                        Value::Error(e) => text(e),
                        _ => format!("CONFIG GET {name}: an unexpected reply"),
                    });
                }
                match name {
                    "save" => info.save = value,
                    _ => info.appendonly = value,
                }
            }
            // Closed, silent or garbled: the connection is of no more use.
            Err(e) => return Ok((info, Some(format!(" ({})", e.message)), Err(e))),
        }
    }
    let refused = (info.save.is_none() || info.appendonly.is_none())
        .then(|| why.map(|w| format!(" ({w})")).unwrap_or_default());
    // The connection stays for the counters read around each test (verdict.rs): a server that
    // refuses CONFIG (managed services do) may still answer INFO.
    Ok((info, refused, Ok(c)))
}

/// `FUNCTION LOAD REPLACE lib` on a connection of its own (`-t fcall`'s library).
pub fn load_library(server: &Server, lib: &[u8]) -> Result<(), crate::error::Error> {
    let refused = |why: String| {
        crate::error::Error::Tests(format!("-t fcall: FUNCTION LOAD of its library failed: {why}"))
    };
    let mut c = Conn::authenticated(server).map_err(|e| refused(e.message))?;
    match c.command(&[b"FUNCTION", b"LOAD", b"REPLACE", lib]).map_err(|e| refused(e.message))? {
        Value::Error(e) | Value::BulkError(e) => Err(refused(text(&e))),
        _ => Ok(()),
    }
}

/// What the server spends on its clients, from `INFO clients` and `INFO memory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// `connected_clients`.
    pub clients: i64,
    /// `used_memory`, in bytes.
    pub memory: i64,
}

impl Footprint {
    /// Reads the server's figures over `c`; `Err` says why they are missing (INFO refused or
    /// renamed, as managed services do).
    pub fn read(c: &mut Conn) -> Result<Footprint, InfoError> {
        let clients = info_field(c, b"clients", "connected_clients")?;
        let memory = info_field(c, b"memory", "used_memory")?;
        Ok(Footprint { clients, memory })
    }
}

/// What idle connections cost the server since `before`, read over a new connection (as
/// `before` was, so that each reading counts one in the same state): "500 idle connections:
/// server connected_clients +500, used_memory +10245120 bytes (20490 bytes per connection)".
/// The server may count the last connections a moment after they are up, so its figures are read
/// again while they fall short, for up to a second.
pub fn idle_footprint(server: &Server, clients: usize, before: Footprint) -> String {
    let plural = if clients == 1 { "" } else { "s" };
    let read = || {
        let mut c = Conn::authenticated(server).map_err(InfoError::Connection)?;
        let mut now = Footprint::read(&mut c);
        for _ in 0..10 {
            match &now {
                Ok(f) if f.clients - before.clients < clients as i64 => {
                    std::thread::sleep(Duration::from_millis(100));
                    now = Footprint::read(&mut c);
                }
                _ => break,
            }
        }
        now
    };
    match read() {
        Ok(f) => {
            let memory = f.memory - before.memory;
            format!(
                "{clients} idle connection{plural}: server connected_clients {:+}, used_memory {memory:+} bytes \
                 ({} bytes per connection)",
                f.clients - before.clients,
                memory / clients.max(1) as i64
            )
        }
        Err(e) => format!("{clients} idle connection{plural}: could not read the server's INFO again ({e})"),
    }
}

/// One numeric field of `INFO section`.
fn info_field(c: &mut Conn, section: &[u8], field: &str) -> Result<i64, InfoError> {
    let body = info(c, section)?;
    info_value(&body, field).ok_or_else(|| InfoError::NoField { section: text(section), field: field.into() })
}

/// The text of `INFO section`; `Err` says why there is none (refused, renamed, not a string).
pub(crate) fn info(c: &mut Conn, section: &[u8]) -> Result<String, InfoError> {
    info_sections(c, &[section])
}

/// The text of `INFO` for several sections at once (Redis 7 and later; an older server refuses
/// it, and the caller asks section by section).
pub(crate) fn info_sections(c: &mut Conn, sections: &[&[u8]]) -> Result<String, InfoError> {
    let mut args: Vec<&[u8]> = vec![b"INFO"];
    args.extend_from_slice(sections);
    match c.command(&args).map_err(InfoError::Connection)? {
        Value::Bulk(b) | Value::Verbatim { text: b, .. } => Ok(text(&b)),
        Value::Error(e) | Value::BulkError(e) => Err(InfoError::Refused(text(&e))),
        other => Err(InfoError::Reply(other)),
    }
}

/// The value after `field:` on a line of an INFO reply, parsed.
pub(crate) fn info_value<T: std::str::FromStr>(body: &str, field: &str) -> Option<T> {
    body.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':')?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_named_from_info() {
        let mut i = ServerInfo::default();
        i.identify("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nprocess_id:1\r\n");
        assert_eq!(i.describe().as_deref(), Some("redis 7.0.15 standalone"));
        let mut v = ServerInfo::default();
        v.identify(
            "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\nredis_mode:cluster\r\n",
        );
        assert_eq!(v.describe().as_deref(), Some("valkey 8.0.1 cluster"));
        assert_eq!(ServerInfo::default().describe(), None);
    }

    #[cfg(feature = "tls")]
    #[test]
    fn each_node_is_checked_against_its_own_name() {
        use crate::config::TlsOptions;
        use rustls::pki_types::ServerName;
        let tcp = |host: &str, port: u16| Endpoint::Tcp { host: host.into(), port };
        let server = |sni: Option<&str>| {
            let o = TlsOptions { insecure: true, sni: sni.map(str::to_string), ..TlsOptions::default() };
            let at = tcp("10.0.0.1", 6379);
            let tls = crate::tls::client(&o, &at).unwrap();
            Server {
                endpoint: at,
                tls: Some(tls),
                user: None,
                password: None,
                timeout: None,
                connect_timeout: None,
                mptcp: false,
            }
        };
        let name = |s: &Server| s.tls.as_ref().unwrap().server_name.clone();
        let n = server(None).node(&tcp("10.0.0.2", 7001));
        assert_eq!(
            (n.endpoint.clone(), name(&n)),
            (tcp("10.0.0.2", 7001), ServerName::try_from("10.0.0.2").unwrap())
        );
        let n = server(None).node(&tcp("redis-2.example", 7001));
        assert_eq!(name(&n), ServerName::try_from("redis-2.example").unwrap());
        // --sni names every node alike.
        let n = server(Some("cache.example")).node(&tcp("10.0.0.2", 7001));
        assert_eq!(name(&n), ServerName::try_from("cache.example").unwrap());
    }

    #[test]
    fn config_values_in_resp2_and_resp3() {
        let v = Value::Array(vec![Value::Bulk(b"save".to_vec()), Value::Bulk(b"3600 1".to_vec())]);
        assert_eq!(config_value(&v).as_deref(), Some("3600 1"));
        let v = Value::Map(vec![(Value::Bulk(b"appendonly".to_vec()), Value::Simple(b"no".to_vec()))]);
        assert_eq!(config_value(&v).as_deref(), Some("no"));
        assert_eq!(config_value(&Value::Error(b"ERR unknown command".to_vec())), None);
    }

    #[test]
    fn info_numbers_by_exact_field() {
        let body = "# Memory\r\nused_memory_human:1.2M\r\nused_memory:1234567\r\nused_memory_rss:999\r\n";
        assert_eq!(info_value::<i64>(body, "used_memory"), Some(1_234_567));
        assert_eq!(
            info_value::<i64>("# Clients\r\nconnected_clients:501\r\n", "connected_clients"),
            Some(501)
        );
        assert_eq!(info_value::<i64>(body, "connected_clients"), None);
    }
}
