//! The machine's limits a run is checked against before it connects: open files (`-c 10000`
//! needs 10000 sockets, more than the usual soft limit of 1024) and memory (`-d` × `-c`).

use crate::error::Error;

/// File descriptors a run needs besides its connections and event loops: stdio, the startup
/// connection, smol's reactor, a `--json` file, and some left for whatever else is open.
const RESERVE: u64 = 64;

/// Raises the soft open-file limit to what `clients` connections on `loops` event loops (an
/// epoll instance each) and a delivery test's `listeners` (its subscribers or waiters, a socket
/// each) need, up to the hard limit. When even the hard limit is too low, says how many
/// connections fit instead of failing with "Too many open files" mid-run.
pub fn ensure_fds(clients: usize, listeners: usize, loops: usize) -> Result<(), Error> {
    let overhead = loops as u64 + RESERVE;
    let need = (clients as u64).saturating_add(listeners as u64).saturating_add(overhead);
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
    Err(Error::OpenFiles { clients, listeners, need, soft, hard, fit })
}

/// Requests below this size are not checked against the machine's memory.
const CHECKED_FROM: u64 = 1 << 20;

/// What a connection's output holds besides the request it is encoding: up to its soft cap
/// unwritten, and as much again written and not yet compacted.
const OUTPUT: u64 = 2 * respbench_core::conn::OUT_SOFT_CAP as u64;

/// Refuses, before connecting, a request of `request` bytes that `clients` connections cannot
/// hold in the memory the process may use ([`memory_bound`]). The test's values are held once,
/// and each connection's output holds the `copied` bytes of a request it encodes (large values
/// are taken by reference; over several nodes `copied` is the whole request) besides its buffer.
pub fn ensure_memory(request: u64, copied: u64, clients: usize) -> Result<(), Error> {
    if request < CHECKED_FROM {
        return Ok(());
    }
    let Some((available, limit)) = memory_bound() else { return Ok(()) };
    let per_connection = copied.saturating_add(OUTPUT).min(request.saturating_add(OUTPUT));
    let need = request.saturating_add(per_connection.saturating_mul(clients as u64));
    if need > available {
        let whole = copied >= request;
        return Err(Error::Memory { request, clients, need, available, limit, whole });
    }
    Ok(())
}

/// The most memory this process may still allocate, and the limit that says so: the tightest
/// of the machine's (`MemAvailable` and free swap), its memory cgroup's (cgroup v2's
/// `memory.max` less `memory.current`, v1's `memory.limit_in_bytes` less
/// `memory.usage_in_bytes`, of its own cgroup and each above it) and `RLIMIT_AS` (`ulimit -v`)
/// less the address space in use. `None` when none can be read.
pub fn memory_bound() -> Option<(u64, String)> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut bounds = Vec::new();
    if let Some(info) = read("/proc/meminfo") {
        bounds.extend(machine_available(&info).map(|b| (b, "MemAvailable and free swap".to_string())));
    }
    if let Some(groups) = read("/proc/self/cgroup") {
        let (v2, v1) = cgroup_paths(&groups);
        let dirs = v2
            .into_iter()
            .flat_map(|p| [("/sys/fs/cgroup", p, 2), ("/sys/fs/cgroup/unified", p, 2)])
            .chain(v1.map(|p| ("/sys/fs/cgroup/memory", p, 1)));
        for (mount, path, v) in dirs {
            let (max, current) = if v == 2 {
                ("memory.max", "memory.current")
            } else {
                ("memory.limit_in_bytes", "memory.usage_in_bytes")
            };
            for dir in ancestors(path) {
                let at = |f: &str| read(&format!("{mount}{dir}/{f}"));
                if let (Some(m), Some(c)) = (at(max), at(current)) {
                    bounds.extend(
                        headroom(&m, &c).map(|b| (b, format!("cgroup {dir}: its {max} less {current}"))),
                    );
                }
            }
        }
    }
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0 && lim.rlim_cur != libc::RLIM_INFINITY {
        let used = read("/proc/self/status").and_then(|s| vm_size(&s)).unwrap_or(0);
        bounds.push((
            lim.rlim_cur.saturating_sub(used),
            format!(
                "RLIMIT_AS (ulimit -v) of {} less the {} of address space in use",
                crate::error::human_bytes(lim.rlim_cur),
                crate::error::human_bytes(used)
            ),
        ));
    }
    bounds.into_iter().min_by_key(|(b, _)| *b)
}

/// `MemAvailable` and `SwapFree` of `/proc/meminfo`'s text, in bytes.
fn machine_available(info: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        let line = info.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb.saturating_mul(1024))
    };
    Some(field("MemAvailable:")?.saturating_add(field("SwapFree:").unwrap_or(0)))
}

/// The process's cgroup v2 path (the `0::` line) and its v1 memory controller's path, from
/// `/proc/self/cgroup`'s text.
fn cgroup_paths(text: &str) -> (Option<&str>, Option<&str>) {
    let (mut v2, mut v1) = (None, None);
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            v2 = Some(path);
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = Some(path);
        }
    }
    (v2, v1)
}

/// A cgroup's path and those above it, itself first: `/a/b`, `/a`, `` (the root).
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let path = path.trim_end_matches('/');
    std::iter::successors(Some(path), |p| p.rfind('/').map(|i| &p[..i]))
}

/// A cgroup's limit less its usage (`memory.max` and `memory.current`'s text); `None` when
/// it has no limit (`max`) or the text is not a number.
fn headroom(max: &str, current: &str) -> Option<u64> {
    let max: u64 = max.trim().parse().ok()?;
    let current: u64 = current.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// `VmSize` of `/proc/self/status`'s text, in bytes: the address space in use, which
/// `RLIMIT_AS` bounds.
fn vm_size(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kb: u64 = line["VmSize:".len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb.saturating_mul(1024))
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

    #[test]
    fn the_memory_cgroup_and_address_space_limits_are_read() {
        let v1 = "9:name=systemd:/\n4:cpu,memory:/jobs/42\n0::/\n";
        assert_eq!(cgroup_paths(v1), (Some("/"), Some("/jobs/42")));
        let v2 = "0::/system.slice/bench.service\n";
        assert_eq!(cgroup_paths(v2), (Some("/system.slice/bench.service"), None));
        assert_eq!(ancestors("/a/b").collect::<Vec<_>>(), ["/a/b", "/a", ""]);
        assert_eq!(ancestors("/").collect::<Vec<_>>(), [""]);
        assert_eq!(headroom("536870912\n", "104857600\n"), Some(432013312));
        assert_eq!(headroom("max\n", "104857600\n"), None);
        assert_eq!(headroom("100\n", "200\n"), Some(0));
        assert_eq!(vm_size("Name:\trespbench\nVmPeak:\t  9000 kB\nVmSize:\t    2048 kB\n"), Some(2 << 20));
        let info = "MemTotal: 100 kB\nMemAvailable:   1024 kB\nSwapFree:  1 kB\n";
        assert_eq!(machine_available(info), Some(1025 * 1024));
    }
}
