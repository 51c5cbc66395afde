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
    pub(crate) fn new(tls: &Tls) -> io::Result<Session> {
        let conn =
            ClientConnection::new(tls.config.clone(), tls.server_name.clone()).map_err(io::Error::other)?;
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
