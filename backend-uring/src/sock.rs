//! Sockets the ring connects: created with one system call, their address built once per loop
//! (the kernel copies it when the connect is submitted).

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use respbench_driver::Target;

/// A socket address in the kernel's layout, for `IORING_OP_CONNECT`.
pub struct Addr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
    domain: libc::c_int,
    /// `socket(2)`'s protocol: 0, or `IPPROTO_MPTCP` for a [`Target::Mptcp`].
    proto: libc::c_int,
}

impl Addr {
    /// The address of `target`; a Unix path that does not fit `sun_path` is the error `connect`
    /// would give.
    pub fn of(target: &Target) -> io::Result<Addr> {
        // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid (empty) address.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let proto = match target {
            Target::Mptcp(_) => respbench_driver::IPPROTO_MPTCP,
            Target::Tcp(_) | Target::Unix(_) => 0,
        };
        let (len, domain) = match target {
            Target::Tcp(a) | Target::Mptcp(a) => {
                let len;
                (storage, len) = respbench_driver::sockaddr(*a);
                (len as usize, if a.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 })
            }
            Target::Unix(path) => {
                // SAFETY: as above, for sockaddr_un.
                let sun = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_un) };
                sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
                let bytes = path.as_os_str().as_bytes();
                // One byte for the terminating NUL.
                if bytes.len() >= sun.sun_path.len() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("the socket path is longer than {} bytes", sun.sun_path.len() - 1),
                    ));
                }
                for (d, s) in sun.sun_path.iter_mut().zip(bytes) {
                    *d = *s as libc::c_char;
                }
                let path_offset = size_of::<libc::sa_family_t>();
                (path_offset + bytes.len() + 1, libc::AF_UNIX)
            }
        };
        Ok(Addr { storage, len: len as libc::socklen_t, domain, proto })
    }

    /// TCP (or MPTCP), or a Unix socket: for the discard of bodies nothing reads.
    pub fn kind(&self) -> respbench_driver::SocketKind {
        if self.domain == libc::AF_UNIX {
            respbench_driver::SocketKind::Unix
        } else {
            respbench_driver::SocketKind::Tcp
        }
    }

    pub fn ptr(&self) -> *const libc::sockaddr {
        &self.storage as *const _ as *const libc::sockaddr
    }

    pub fn len(&self) -> libc::socklen_t {
        self.len
    }

    /// A new stream socket of the address' family (blocking: the ring waits for it, not us),
    /// with `TCP_NODELAY` for TCP.
    pub fn socket(&self) -> io::Result<OwnedFd> {
        // SAFETY: plain system call; the descriptor it returns is owned from here on.
        let fd = unsafe { libc::socket(self.domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, self.proto) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        if self.domain != libc::AF_UNIX {
            let one: libc::c_int = 1;
            // SAFETY: a valid socket and a c_int option value of the size given.
            let r = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::IPPROTO_TCP,
                    libc::TCP_NODELAY,
                    &one as *const _ as *const libc::c_void,
                    size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r != 0 {
                respbench_driver::nodelay_unsupported(io::Error::last_os_error())?;
            }
        }
        Ok(fd)
    }
}

/// Shuts both directions of `fd` down, so that the receive and send still in the ring end
/// (they hold the socket open even once its descriptor is closed), and closes it.
pub fn close(fd: OwnedFd, reset: bool) {
    if reset {
        // A reset (SO_LINGER 0) rather than a FIN: what the socket carried is dropped by both
        // kernels instead of being retransmitted to a server that would run it later.
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        // SAFETY: a valid socket and a linger struct of the size given; a failure leaves a
        // normal close.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        drop(fd);
        return;
    }
    // SAFETY: a valid socket; an error (not connected yet) changes nothing.
    unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
    drop(fd);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_the_kernel_layout() {
        let a = Addr::of(&Target::Tcp("127.0.0.1:6379".parse().unwrap())).unwrap();
        assert_eq!(a.len() as usize, size_of::<libc::sockaddr_in>());
        // SAFETY: built as a sockaddr_in above.
        let sin = unsafe { &*(a.ptr() as *const libc::sockaddr_in) };
        assert_eq!(u16::from_be(sin.sin_port), 6379);
        assert_eq!(sin.sin_addr.s_addr.to_ne_bytes(), [127, 0, 0, 1]);
        let a = Addr::of(&Target::Tcp("[::1]:7000".parse().unwrap())).unwrap();
        assert_eq!(a.len() as usize, size_of::<libc::sockaddr_in6>());
        assert_eq!(a.proto, 0);
        let a = Addr::of(&Target::Mptcp("[::1]:7000".parse().unwrap())).unwrap();
        assert_eq!(
            (a.len() as usize, a.domain, a.proto),
            (size_of::<libc::sockaddr_in6>(), libc::AF_INET6, 262)
        );
        let a = Addr::of(&Target::Unix("/tmp/r.sock".into())).unwrap();
        assert_eq!(a.len() as usize, 2 + "/tmp/r.sock".len() + 1);
        let long = "/".repeat(200);
        let e = Addr::of(&Target::Unix(long.into())).err().expect("too long");
        assert!(e.to_string().contains("longer than 107 bytes"), "{e}");
    }
}
