//! TLS as the byte layer (feature `tls`): rustls' `ClientConnection`, which is sans-io, between
//! a connection's plaintext and its socket, for every backend at once.
//!
//! Two limits of rustls shape the loops: received plaintext is buffered up to 16 KiB, so
//! [`Session::read`] hands out what rustls holds before it reads more from the socket; and TLS
//! records wait in a send buffer (64 KiB), so [`Session::write`] flushes it before it encrypts
//! more, and reports the socket full only when the socket would block.
//!
//! Reads follow the plain socket's rule: a socket read shorter than rustls asked for emptied the
//! socket at that moment (the next byte raises a new edge), so once rustls has handed out all it
//! holds after such a read, [`Session::read`] says `WouldBlock` without asking the socket again
//! and [`Session::drained`] tells the caller not to read again; without it every reply cost a
//! second `recvfrom` that returned `EAGAIN`.

use std::io::{self, Read, Write};
use std::sync::Arc;

pub use rustls;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

/// What connections need to speak TLS, made once per run by the command line: the client
/// configuration (roots, verifier, client certificate, cipher suites, SNI) and the name to
/// present.
#[derive(Clone, Debug)]
pub struct Tls {
    /// The rustls client configuration.
    pub config: Arc<ClientConfig>,
    /// The server's name (`--sni`, else the host), checked as the configuration's verifier says.
    pub server_name: ServerName<'static>,
}

impl Tls {
    /// The name a connection to `endpoint` is checked against: [`Tls::server_name`] with `--sni`
    /// (SNI on), else the endpoint's own host, so that each node of a cluster is checked for its
    /// own address or name; [`Tls::server_name`] where the endpoint has no host that is one (a
    /// Unix socket).
    pub fn name_for(&self, endpoint: &respbench_core::Endpoint) -> ServerName<'static> {
        match endpoint {
            respbench_core::Endpoint::Tcp { host, .. } if !self.config.enable_sni => {
                ServerName::try_from(host.clone()).unwrap_or_else(|_| self.server_name.clone())
            }
            _ => self.server_name.clone(),
        }
    }
}

/// One connection's TLS session.
pub(crate) struct Session {
    conn: Box<ClientConnection>,
    /// The last socket read was shorter than rustls asked for: the socket was empty then.
    short: bool,
}

/// A socket that remembers whether its last read was short.
struct Short<'a, R> {
    sock: &'a mut R,
    short: bool,
}

impl<R: Read> Read for Short<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.sock.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("handshaking", &self.conn.is_handshaking()).finish()
    }
}

impl Session {
    /// A session with the server at `endpoint` (checked for its name: [`Tls::name_for`]).
    pub(crate) fn new(tls: &Tls, endpoint: &respbench_core::Endpoint) -> io::Result<Session> {
        let conn =
            ClientConnection::new(tls.config.clone(), tls.name_for(endpoint)).map_err(io::Error::other)?;
        Ok(Session { conn: Box::new(conn), short: false })
    }

    pub(crate) fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Plaintext the server sent: what rustls holds, reading and decrypting more from `sock` while
    /// it holds none. `Ok(0)` when the server closed (with or without `close_notify`);
    /// `WouldBlock` when the socket is empty, or, unless `to_end`, when rustls holds nothing to
    /// hand out and its last read from the socket was short (the socket was empty then).
    pub(crate) fn read(&mut self, sock: &mut impl Read, buf: &mut [u8], to_end: bool) -> io::Result<usize> {
        let mut fresh = false;
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            // Only after a read of this call: a short read of an earlier call says nothing of
            // what came since (the caller was woken for it).
            if fresh && self.short && !to_end {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let mut rd = Short { sock: &mut *sock, short: false };
            let n = self.conn.read_tls(&mut rd)?;
            self.short = rd.short;
            fresh = true;
            if n == 0 {
                return Ok(0);
            }
            if let Err(e) = self.conn.process_new_packets() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        }
    }

    /// Whether the socket is empty once the plaintext just handed out is consumed: the last
    /// socket read was short and rustls holds no more plaintext (the caller knows the latter
    /// when [`Session::read`] filled less than its buffer).
    pub(crate) fn drained(&self) -> bool {
        self.short
    }

    /// Encrypts `bytes` and writes the records to `sock`, flushing what waits first; `Ok(n)` with
    /// `n < bytes.len()`, or `WouldBlock`, only when the socket is full.
    pub(crate) fn write(&mut self, sock: &mut impl Write, bytes: &[u8]) -> io::Result<usize> {
        let mut taken = 0;
        loop {
            match self.flush(sock) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && taken > 0 => return Ok(taken),
                Err(e) => return Err(e),
            }
            if taken == bytes.len() {
                return Ok(taken);
            }
            match self.conn.writer().write(&bytes[taken..])? {
                // Cannot happen with the record buffer just flushed; never spin on it.
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => taken += n,
            }
        }
    }

    /// Writes the TLS records that wait (handshake messages, alerts, encrypted requests).
    pub(crate) fn flush(&mut self, sock: &mut impl Write) -> io::Result<()> {
        while self.conn.wants_write() {
            if self.conn.write_tls(sock)? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The read rule against a rustls server over an in-memory wire: certificates from the
    //! `openssl` command line (Debian's openssl package, which CI installs).
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use rustls::{RootCertStore, ServerConfig, ServerConnection};
    use std::path::Path;
    use std::process::Command;

    /// One direction of a connection: bytes written, of which the first `deliverable` can be
    /// read; reads past them would block. Counts reads and those that would block.
    #[derive(Default)]
    struct Wire {
        bytes: Vec<u8>,
        at: usize,
        /// Bytes held back (a record split across arrivals): `None` delivers everything.
        held: Option<usize>,
        reads: u32,
        would_block: u32,
    }

    impl Read for Wire {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            let end = self.bytes.len() - self.held.unwrap_or(0);
            if self.at >= end {
                self.would_block += 1;
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = (end - self.at).min(buf.len());
            buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    impl Write for Wire {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.bytes.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn openssl(dir: &Path, args: &[&str]) {
        let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A client session and a rustls server with the handshake done, their wires empty.
    fn pair() -> (Session, ServerConnection, Wire, Wire) {
        let dir = std::env::temp_dir().join(format!(
            "respbench-tls-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
        openssl(
            &dir,
            &[
                &["req", "-x509"],
                &ec[..],
                &["-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=ca"],
            ]
            .concat(),
        );
        openssl(
            &dir,
            &[&["req"], &ec[..], &["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]]
                .concat(),
        );
        std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost\n").unwrap();
        openssl(
            &dir,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.crt",
                "-days",
                "2",
                "-extfile",
                "san.ext",
            ],
        );
        let mut roots = RootCertStore::empty();
        roots.add(CertificateDer::from_pem_file(dir.join("ca.crt")).unwrap()).unwrap();
        let client = ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
        let chain = vec![CertificateDer::from_pem_file(dir.join("server.crt")).unwrap()];
        let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
        let server = ServerConfig::builder().with_no_client_auth().with_single_cert(chain, key).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let tls = Tls { config: Arc::new(client), server_name: ServerName::try_from("localhost").unwrap() };
        let mut session = Session::new(&tls, &respbench_core::Endpoint::Unix("/none".into())).unwrap();
        let mut server = ServerConnection::new(Arc::new(server)).unwrap();
        let (mut up, mut down) = (Wire::default(), Wire::default());
        let mut buf = [0u8; 1024];
        for _ in 0..10 {
            session.flush(&mut up).unwrap();
            while server.read_tls(&mut up).is_ok() {
                server.process_new_packets().unwrap();
            }
            while server.wants_write() {
                server.write_tls(&mut down).unwrap();
            }
            while down.at < down.bytes.len() {
                match session.read(&mut down, &mut buf, true) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    other => panic!("during the handshake: {other:?}"),
                }
            }
            if !session.is_handshaking() && !server.is_handshaking() && !session.conn.wants_write() {
                break;
            }
        }
        assert!(!session.is_handshaking());
        (session, server, up, Wire::default())
    }

    /// The server sends `plaintext`; the wire to the client holds its records.
    fn send(server: &mut ServerConnection, down: &mut Wire, plaintext: &[u8]) {
        server.writer().write_all(plaintext).unwrap();
        while server.wants_write() {
            server.write_tls(down).unwrap();
        }
    }

    /// Reads as `Link::read` does: until a read shorter than the buffer finds the session
    /// drained, or the socket would block. Returns the plaintext.
    fn drain(session: &mut Session, down: &mut Wire) -> Vec<u8> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = Vec::new();
        loop {
            match session.read(down, &mut buf, false) {
                Ok(0) => panic!("closed"),
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    if n < buf.len() && session.drained() {
                        return got;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return got,
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn a_reply_costs_one_socket_read() {
        let (mut session, mut server, _up, mut down) = pair();
        send(&mut server, &mut down, b"+OK\r\n+OK\r\n");
        assert_eq!(drain(&mut session, &mut down), b"+OK\r\n+OK\r\n");
        assert_eq!((down.reads, down.would_block), (1, 0));
    }

    #[test]
    fn a_record_split_across_arrivals_reads_each_part_once() {
        let (mut session, mut server, _up, mut down) = pair();
        send(&mut server, &mut down, b"$3\r\nxxx\r\n");
        down.held = Some(10);
        assert_eq!(drain(&mut session, &mut down), b"");
        assert_eq!((down.reads, down.would_block), (1, 0), "the short read showed the socket empty");
        down.held = None;
        assert_eq!(drain(&mut session, &mut down), b"$3\r\nxxx\r\n");
        assert_eq!((down.reads, down.would_block), (2, 0));
    }

    #[test]
    fn records_larger_than_a_read_are_read_to_the_end() {
        let (mut session, mut server, _up, mut down) = pair();
        // Three records, each more than rustls asks the socket for at once.
        let big: Vec<u8> = (0..40_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        send(&mut server, &mut down, &big);
        assert_eq!(drain(&mut session, &mut down), big);
        assert_eq!(down.at, down.bytes.len());
        assert_eq!(down.would_block, 0);
    }

    #[test]
    fn to_the_end_reads_until_the_socket_would_block() {
        let (mut session, mut server, _up, mut down) = pair();
        send(&mut server, &mut down, b"+OK\r\n");
        let mut buf = [0u8; 1024];
        assert_eq!(session.read(&mut down, &mut buf, true).unwrap(), 5);
        assert_eq!(session.read(&mut down, &mut buf, true).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert_eq!((down.reads, down.would_block), (2, 1));
    }
}
