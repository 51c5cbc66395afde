//! The machine's limits a run is checked against before it connects: open files (`-c 10000`
//! needs 10000 sockets, more than the usual soft limit of 1024) and memory (`-d` × `-c`).

use crate::Error;

/// File descriptors a run needs besides its connections and event loops: stdio, the startup
/// connection, smol's reactor, a `--json` file, and some left for whatever else is open.
const RESERVE: u64 = 64;

/// Raises the soft open-file limit to what `clients` connections on `loops` event loops (an
/// epoll instance each) need, up to the hard limit. When even the hard limit is too low, says
/// how many connections fit instead of failing with "Too many open files" mid-run.
pub fn ensure_fds(clients: usize, loops: usize) -> Result<(), Error> {
    let overhead = loops as u64 + RESERVE;
    let need = clients as u64 + overhead;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(()); // cannot tell: let the connects report it
    }
    let (soft, hard) = (lim.rlim_cur, lim.rlim_max);
    if lim.rlim_cur == libc::RLIM_INFINITY || soft >= need {
        return Ok(());
    }
    if lim.rlim_max == libc::RLIM_INFINITY || hard >= need {
        lim.rlim_cur = need;
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } == 0 {
            return Ok(());
        }
    }
    let fit = hard.saturating_sub(overhead);
    Err(Error::OpenFiles { clients, need, soft, hard, fit })
}

/// Requests below this size are not checked against the machine's memory.
const CHECKED_FROM: u64 = 1 << 20;

/// What a connection's output holds besides the request it is encoding: up to its soft cap
/// unwritten, and as much again written and not yet compacted.
const OUTPUT: u64 = 2 * respbench_core::conn::OUT_SOFT_CAP as u64;

/// Refuses, before connecting, a request of `request` bytes that `clients` connections cannot
/// hold in the memory the machine has. The test's values are held once, and each
/// connection's output holds the `copied` bytes of a request it encodes (large values are
/// taken by reference; over several nodes `copied` is the whole request) besides its buffer.
pub fn ensure_memory(request: u64, copied: u64, clients: usize) -> Result<(), Error> {
    if request < CHECKED_FROM {
        return Ok(());
    }
    let Some(available) = available_memory() else { return Ok(()) };
    let per_connection = copied.saturating_add(OUTPUT).min(request.saturating_add(OUTPUT));
    let need = request.saturating_add(per_connection.saturating_mul(clients as u64));
    if need > available {
        let whole = copied >= request;
        return Err(Error::Memory { request, clients, need, available, whole });
    }
    Ok(())
}

/// `MemAvailable` and `SwapFree` of `/proc/meminfo`, in bytes; `None` when it cannot be read.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = info.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    };
    Some(field("MemAvailable:")? + field("SwapFree:").unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::human_bytes;

    #[test]
    fn a_request_too_large_for_memory_is_refused_with_the_need() {
        assert!(ensure_memory(1000, 1000, 1_000_000).is_ok(), "small requests are not checked");
        let e = ensure_memory(1 << 40, 1 << 40, 50).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("a request of 1.0 TiB (-d) on -c 50 connections needs about 51.0 TiB"),
            "{text}"
        );
        assert!(text.contains("each connection holds a whole request"), "{text}");
        // A value taken by reference is held once: 1 TiB and 50 small buffers.
        let e = ensure_memory(1 << 40, 100, 50).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("needs about 1.0 TiB"), "{text}");
        assert!(text.contains("the value is held once"), "{text}");
        assert!(ensure_memory(1 << 20, 1 << 20, 1).is_ok());
        assert_eq!(human_bytes(900), "900 B");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
