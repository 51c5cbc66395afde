//! The open-file limit: `-c 10000` needs 10000 sockets, more than the usual soft limit of 1024.

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
