//! A `timerfd` in a loop's epoll set: wake-ups to the microsecond for open-loop schedules and
//! deadlines, since `epoll_wait` counts whole milliseconds.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use mio::{Interest, Poll, Token};
use respbench_core::Time;

/// The token of a loop's timerfd; connections are tokens `0..slots`.
pub const TIMER: Token = Token(usize::MAX);

/// A `timerfd` registered in the loop's poll: `epoll_wait` counts whole milliseconds, which would
/// send open-loop requests up to a millisecond late and count that as latency.
pub struct TimerFd {
    fd: OwnedFd,
    /// The time it is armed for (`Time::MAX`: not armed).
    armed: Time,
}

impl TimerFd {
    pub fn new(poll: &Poll) -> io::Result<TimerFd> {
        // SAFETY: plain syscall; the descriptor it returns is owned from here on.
        let fd =
            unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        poll.registry().register(&mut mio::unix::SourceFd(&fd.as_raw_fd()), TIMER, Interest::READABLE)?;
        Ok(TimerFd { fd, armed: Time::MAX })
    }

    /// Arms the timer to fire `after` from now, for the schedule time `at`. Re-arming also
    /// clears a past expiry, so the descriptor never needs a read.
    pub fn arm(&mut self, at: Time, after: Duration) -> bool {
        if self.armed == at {
            return true;
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                // A zero it_value disarms: at least one nanosecond.
                tv_nsec: after.subsec_nanos().max(u32::from(after.as_secs() == 0)) as libc::c_long,
            },
        };
        // SAFETY: a valid timerfd and a fully initialised itimerspec.
        let ok = unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } == 0;
        self.armed = if ok { at } else { Time::MAX };
        ok
    }
}
