//! The sockets of both backends: resolving the endpoint, non-blocking connects, reads and writes
//! on mio's TCP and Unix streams. DNS and sockets are IO, so this lives here and not in the core;
//! the smol backend uses it too.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};

use mio::net::{TcpStream, UnixStream};
use respbench_core::Endpoint;

/// Where a loop connects: resolved once per test.
#[derive(Clone, Debug)]
pub enum Target {
    /// A resolved TCP address.
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(std::path::PathBuf),
}

/// A connected or connecting socket.
pub enum Sock {
    /// TCP, with `TCP_NODELAY` once connected.
    Tcp(TcpStream),
    /// A Unix stream socket.
    Unix(UnixStream),
}

impl Sock {
    /// Starts a non-blocking connect.
    pub fn connect(target: &Target) -> io::Result<Sock> {
        Ok(match target {
            Target::Tcp(a) => Sock::Tcp(TcpStream::connect(*a)?),
            Target::Unix(p) => Sock::Unix(UnixStream::connect(p)?),
        })
    }

    /// The mio source, to register.
    pub fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Sock::Tcp(s) => s,
            Sock::Unix(s) => s,
        }
    }

    /// After a non-blocking connect reported readiness: `Ok(true)` when connected, `Ok(false)`
    /// when still in progress.
    pub fn finish_connect(&mut self) -> io::Result<bool> {
        let (err, peer) = match self {
            Sock::Tcp(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
            Sock::Unix(s) => (s.take_error()?, s.peer_addr().map(|_| ())),
        };
        if let Some(e) = err {
            return Err(e);
        }
        match peer {
            Ok(()) => {
                if let Sock::Tcp(s) = self {
                    s.set_nodelay(true)?;
                }
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads what the socket has.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }

    /// Writes what the socket takes.
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }
}

/// Resolves the endpoint once, with redis-benchmark's message when it fails.
pub fn resolve(endpoint: &Endpoint) -> Result<Target, String> {
    match endpoint {
        Endpoint::Unix(p) => Ok(Target::Unix(p.clone())),
        Endpoint::Tcp { host, port } => (host.as_str(), *port)
            .to_socket_addrs()
            .map_err(|e| format!("Could not connect to Redis at {endpoint}: {e}"))?
            .next()
            .map(Target::Tcp)
            .ok_or_else(|| format!("Could not connect to Redis at {endpoint}: no address")),
    }
}
