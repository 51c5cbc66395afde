//! `--mptcp`: TCP sockets made with libc, so that their protocol can be `IPPROTO_MPTCP` (the
//! standard library and mio only make `IPPROTO_TCP` ones). Every backend's connections and the
//! session's startup connection come from here.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{FromRawFd, OwnedFd};

/// Linux's `IPPROTO_MPTCP` (5.6 and later); the libc crate does not name it on every target.
pub const IPPROTO_MPTCP: libc::c_int = 262;

/// Starts a non-blocking connect of a new stream socket to `addr`: MPTCP with `mptcp` (the
/// kernel falls back to plain TCP when the server does not speak MPTCP), else TCP. The connect
/// completes when the socket is writable; its outcome is then `SO_ERROR` (`take_error`).
pub fn connect_tcp(addr: SocketAddr, mptcp: bool) -> io::Result<TcpStream> {
    let fd = socket(addr, mptcp, libc::SOCK_NONBLOCK)?;
    let (storage, len) = sockaddr(addr);
    // SAFETY: a valid socket, and an address of `len` bytes in the kernel's layout.
    let r = unsafe { libc::connect(raw(&fd), &storage as *const _ as *const libc::sockaddr, len) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(TcpStream::from(fd))
}

/// A blocking connect of a new stream socket to `addr` (MPTCP with `mptcp`), waiting at most
/// `timeout`: [`TcpStream::connect_timeout`] for a socket of either protocol.
pub fn connect_tcp_timeout(
    addr: SocketAddr,
    mptcp: bool,
    timeout: std::time::Duration,
) -> io::Result<TcpStream> {
    if !mptcp {
        return TcpStream::connect_timeout(&addr, timeout);
    }
    let s = connect_tcp(addr, true)?;
    let mut pfd = libc::pollfd { fd: raw_of(&s), events: libc::POLLOUT, revents: 0 };
    let ms = timeout.as_millis().clamp(1, libc::c_int::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n == 0 {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "connection timed out"));
    }
    if let Some(e) = s.take_error()? {
        return Err(e);
    }
    s.set_nonblocking(false)?;
    Ok(s)
}

/// Whether this kernel makes MPTCP sockets: `Err` with `--mptcp`'s message where it refuses
/// them, else the failure as it is.
pub fn mptcp_check() -> Result<(), String> {
    match socket("127.0.0.1:0".parse().expect("an address"), true, 0) {
        Ok(_) => Ok(()),
        Err(e) => {
            Err(mptcp_refused(&e)
                .unwrap_or_else(|| format!("--mptcp: an MPTCP socket could not be made: {e}")))
        }
    }
}

/// [`mptcp_refusal`] with `net.mptcp.enabled` read from `/proc/sys`.
pub fn mptcp_refused(e: &io::Error) -> Option<String> {
    let enabled = std::fs::read_to_string("/proc/sys/net/mptcp/enabled").ok();
    mptcp_refusal(e, enabled.as_deref())
}

/// `--mptcp`'s message for a `socket(2)` failure that means the kernel refuses MPTCP sockets
/// (`EPROTONOSUPPORT`, `ENOPROTOOPT`, `EINVAL`), given `net.mptcp.enabled` as read (`None`: the
/// kernel has no such setting); `None` for any other failure.
pub fn mptcp_refusal(e: &io::Error, enabled: Option<&str>) -> Option<String> {
    match e.raw_os_error()? {
        libc::EPROTONOSUPPORT | libc::ENOPROTOOPT | libc::EINVAL => {}
        _ => return None,
    }
    let why = match enabled.map(str::trim) {
        None => {
            "net.mptcp.enabled does not exist: the kernel was built without MPTCP (Linux 5.6+, CONFIG_MPTCP)"
                .to_string()
        }
        Some("0") => "net.mptcp.enabled is 0 (sysctl -w net.mptcp.enabled=1 turns it on)".to_string(),
        Some(v) => format!("net.mptcp.enabled is {v}, but a filter or policy refuses the protocol"),
    };
    Some(format!("--mptcp: the kernel refuses MPTCP sockets ({e}): {why}"))
}

/// For `set_nodelay(true).or_else(nodelay_unsupported)`: MPTCP sockets before Linux 5.17 refuse
/// `TCP_NODELAY` with `EOPNOTSUPP` (a TCP socket never does); such a socket runs without it
/// rather than failing its connection.
pub fn nodelay_unsupported(e: io::Error) -> io::Result<()> {
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(()),
        _ => Err(e),
    }
}

/// A new stream socket of `addr`'s family, close-on-exec, with `flags` (`SOCK_NONBLOCK`).
fn socket(addr: SocketAddr, mptcp: bool, flags: libc::c_int) -> io::Result<OwnedFd> {
    let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    let proto = if mptcp { IPPROTO_MPTCP } else { 0 };
    // SAFETY: plain system call; the descriptor it returns is owned from here on.
    let fd = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | flags, proto) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn raw(fd: &OwnedFd) -> libc::c_int {
    std::os::fd::AsRawFd::as_raw_fd(fd)
}

fn raw_of(s: &TcpStream) -> libc::c_int {
    std::os::fd::AsRawFd::as_raw_fd(s)
}

/// `addr` in the kernel's layout, and its length: what `connect(2)` takes (the uring backend's
/// ring connect too).
pub fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid (empty) address.
    let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            let sin = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr = libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_addr = libc::in6_addr { s6_addr: a.ip().octets() };
            sin6.sin6_scope_id = a.scope_id();
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_setting() {
        let e = io::Error::from_raw_os_error(libc::EPROTONOSUPPORT);
        let m = mptcp_refusal(&e, Some("0\n")).expect("a refusal");
        assert!(m.starts_with("--mptcp: the kernel refuses MPTCP sockets ("), "{m}");
        assert!(m.contains("net.mptcp.enabled is 0"), "{m}");
        let m = mptcp_refusal(&io::Error::from_raw_os_error(libc::ENOPROTOOPT), None).expect("a refusal");
        assert!(m.contains("net.mptcp.enabled does not exist"), "{m}");
        let m = mptcp_refusal(&io::Error::from_raw_os_error(libc::EINVAL), Some("1")).expect("a refusal");
        assert!(m.contains("net.mptcp.enabled is 1"), "{m}");
    }

    #[test]
    fn other_failures_are_not_refusals() {
        assert_eq!(mptcp_refusal(&io::Error::from_raw_os_error(libc::EMFILE), Some("0")), None);
        assert_eq!(mptcp_refusal(&io::Error::other("x"), Some("0")), None);
    }

    #[test]
    fn only_eopnotsupp_of_nodelay_is_ignored() {
        assert!(nodelay_unsupported(io::Error::from_raw_os_error(libc::EOPNOTSUPP)).is_ok());
        assert!(nodelay_unsupported(io::Error::from_raw_os_error(libc::EBADF)).is_err());
    }

    #[test]
    fn an_mptcp_connect_falls_back_against_a_tcp_listener() {
        if mptcp_check().is_err() {
            eprintln!("skipped: this kernel refuses MPTCP sockets");
            return;
        }
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s =
            connect_tcp_timeout(l.local_addr().unwrap(), true, std::time::Duration::from_secs(5)).unwrap();
        let (a, _) = l.accept().unwrap();
        assert_eq!(a.peer_addr().unwrap(), s.local_addr().unwrap());
    }
}
