//! TLS as the byte layer (feature `tls`): rustls' `ClientConnection`, which is sans-io, between
//! a connection's plaintext and its socket, for every backend at once.
//!
//! Two limits of rustls shape the loops: received plaintext is buffered up to 16 KiB, so
//! [`Session::read`] hands out what rustls holds before it reads more from the socket; and TLS
//! records wait in a send buffer (64 KiB), so [`Session::write`] flushes it before it encrypts
//! more, and reports the socket full only when the socket would block.

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
pub(crate) struct Session(Box<ClientConnection>);

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("handshaking", &self.0.is_handshaking()).finish()
    }
}

impl Session {
    pub(crate) fn new(tls: &Tls) -> io::Result<Session> {
        let conn =
            ClientConnection::new(tls.config.clone(), tls.server_name.clone()).map_err(io::Error::other)?;
        Ok(Session(Box::new(conn)))
    }

    pub(crate) fn is_handshaking(&self) -> bool {
        self.0.is_handshaking()
    }

    /// Plaintext the server sent: what rustls holds, reading and decrypting more from `sock` while
    /// it holds none. `Ok(0)` when the server closed (with or without `close_notify`);
    /// `WouldBlock` when the socket is empty.
    pub(crate) fn read(&mut self, sock: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.0.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            if self.0.read_tls(sock)? == 0 {
                return Ok(0);
            }
            if let Err(e) = self.0.process_new_packets() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        }
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
            match self.0.writer().write(&bytes[taken..])? {
                // Cannot happen with the record buffer just flushed; never spin on it.
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => taken += n,
            }
        }
    }

    /// Writes the TLS records that wait (handshake messages, alerts, encrypted requests).
    pub(crate) fn flush(&mut self, sock: &mut impl Write) -> io::Result<()> {
        while self.0.wants_write() {
            if self.0.write_tls(sock)? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }
}
