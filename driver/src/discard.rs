//! Bytes that nothing reads, dropped in the kernel: a reply's bulk body that the core's parser
//! says it may skip ([`respbench_core::Client::skippable`]) is discarded with a `recv` of
//! `MSG_TRUNC` and no buffer, which a TCP socket on Linux drops without copying it to user
//! space. Where a socket cannot (a Unix socket, another system), the first attempt says so and
//! the bytes are read as before from then on (one flag per kind of socket, for the process).

use std::io::{self, Read};
use std::sync::atomic::{AtomicU8, Ordering};

/// A socket the byte layer reads from ([`crate::Link::read`]): a `Read`, and maybe a discard of
/// bytes without reading them.
pub trait Source: Read {
    /// Drops up to `max` of the next bytes without copying them: `Ok(Some(n))` for the `n`
    /// dropped (fewer than `max`: the socket is empty now; 0: the end of the stream, or nothing
    /// to drop), `Ok(None)` when this socket cannot (its bytes are to be read), `WouldBlock`
    /// when nothing has arrived. The default cannot.
    fn discard(&mut self, max: usize) -> io::Result<Option<usize>> {
        let _ = max;
        Ok(None)
    }
}

impl Source for crate::Delivered<'_> {}

/// What kind of socket a descriptor is, for [`discard_fd`]'s one-time detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// TCP or MPTCP.
    Tcp,
    /// A Unix stream socket.
    Unix,
}

/// Per [`Kind`]: 0 not tried yet, 1 the kernel discards, 2 it does not.
static SUPPORT: [AtomicU8; 2] = [AtomicU8::new(0), AtomicU8::new(0)];

/// Whether discarding is known not to work on sockets of `kind` (tried once and refused).
pub fn discard_refused(kind: Kind) -> bool {
    SUPPORT[kind as usize].load(Ordering::Relaxed) == 2
}

/// A discard on a socket of `kind` was refused (by a backend that discards its own way:
/// io_uring's receive with `MSG_TRUNC`, failing with `EFAULT`): no more are tried.
pub fn refuse_discard(kind: Kind) {
    SUPPORT[kind as usize].store(2, Ordering::Relaxed);
}

/// [`Source::discard`] on a non-blocking stream socket: `recv(fd, NULL, max, MSG_TRUNC |
/// MSG_DONTWAIT)`. A kernel that does not drop bytes this way tries to copy them to the null
/// buffer and fails with `EFAULT` before taking any (Linux's Unix sockets do): then `Ok(None)`,
/// for this call and every later one on a socket of the same `kind`.
#[cfg(target_os = "linux")]
pub fn discard_fd(fd: std::os::fd::RawFd, kind: Kind, max: usize) -> io::Result<Option<usize>> {
    let support = &SUPPORT[kind as usize];
    if support.load(Ordering::Relaxed) == 2 || max == 0 {
        return Ok(None);
    }
    // SAFETY: a null buffer is what MSG_TRUNC on a stream socket asks for; the kernel writes
    // nothing (or fails with EFAULT, writing nothing).
    let n = unsafe { libc::recv(fd, std::ptr::null_mut(), max, libc::MSG_TRUNC | libc::MSG_DONTWAIT) };
    if n >= 0 {
        support.store(1, Ordering::Relaxed);
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EFAULT | libc::EINVAL | libc::EOPNOTSUPP) if support.load(Ordering::Relaxed) != 1 => {
            support.store(2, Ordering::Relaxed);
            Ok(None)
        }
        _ => Err(e),
    }
}

/// Other systems: nothing is discarded.
#[cfg(not(target_os = "linux"))]
pub fn discard_fd(_fd: i32, _kind: Kind, _max: usize) -> io::Result<Option<usize>> {
    Ok(None)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn tcp_drops_bytes_in_order_and_unix_is_refused_once_taking_nothing() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut b, _) = l.accept().unwrap();
        b.set_nonblocking(true).unwrap();
        assert_eq!(discard_fd(b.as_raw_fd(), Kind::Tcp, 10).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        let bytes: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        a.write_all(&bytes).unwrap();
        let mut got = 0;
        while got < 60_000 {
            match discard_fd(b.as_raw_fd(), Kind::Tcp, 60_000 - got) {
                Ok(Some(n)) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                other => panic!("{other:?}"),
            }
        }
        assert!(!discard_refused(Kind::Tcp));
        // What follows the dropped bytes is read as it was sent.
        b.set_nonblocking(false).unwrap();
        let mut rest = vec![0u8; 40_000];
        b.read_exact(&mut rest).unwrap();
        assert_eq!(rest, bytes[60_000..]);

        let (mut u, mut v) = UnixStream::pair().unwrap();
        v.set_nonblocking(true).unwrap();
        u.write_all(b"hello").unwrap();
        // Linux 6.18 refuses (EFAULT); a kernel that drops them must drop all five.
        match discard_fd(v.as_raw_fd(), Kind::Unix, 5).unwrap() {
            None => {
                assert!(discard_refused(Kind::Unix));
                assert_eq!(discard_fd(v.as_raw_fd(), Kind::Unix, 5).unwrap(), None, "not tried again");
                let mut five = [0u8; 5];
                v.read_exact(&mut five).unwrap();
                assert_eq!(&five, b"hello", "the refused attempt took nothing");
            }
            Some(n) => assert_eq!(n, 5),
        }
    }
}
