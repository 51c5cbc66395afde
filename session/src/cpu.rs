//! The load generator's own cost: CPU time (user + sys, from `getrusage`) spent during a test,
//! per request and as a share of a core per event-loop thread. A client that keeps its threads
//! busy all the time is measuring itself, not the server, and the report says so.

use std::time::Duration;

/// The share of a core per event-loop thread from which the client counts as saturated: its loops
/// were almost never waiting for the server.
pub const SATURATED: f64 = 0.9;

/// CPU the whole process used, user and system, in seconds (`getrusage(RUSAGE_SELF)`).
pub fn process_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is always valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// The whole machine's CPU time in clock ticks, busy and in all, from the first line of
/// `/proc/stat` (`None` where there is none).
pub fn machine_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest times are inside user and nice).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

/// Nanoseconds the threads of process `pid` (`"self"` for this one) have spent runnable but
/// waiting for a CPU, summed over its threads alive now (the second field of
/// `/proc/PID/task/TID/schedstat`); `None` where the kernel keeps none.
pub fn run_delay_ns(pid: &str) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = None;
    for t in tasks.flatten() {
        let stat = std::fs::read_to_string(t.path().join("schedstat")).ok();
        if let Some(delay) = stat.as_deref().and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok()) {
            total = Some(total.unwrap_or(0) + delay);
        }
    }
    total
}

/// The share of all the machine's CPUs that was busy between two [`machine_ticks`] readings.
pub fn machine_busy(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((b0, t0), (b1, t1)) = (before?, after?);
    let total = t1.checked_sub(t0).filter(|&t| t > 0)?;
    Some(b1.saturating_sub(b0) as f64 / total as f64)
}

/// The client's CPU during one test.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClientCpu {
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Wall-clock seconds the test's event loops ran, connecting included.
    pub wall_s: f64,
    /// Event-loop threads.
    pub threads: usize,
    /// The largest share of a core per thread among merged runs; `None` computes it from the
    /// fields (one run).
    pub share_override: Option<f64>,
}

impl ClientCpu {
    /// The difference between two [`process_cpu`] readings taken `wall` apart, on `threads` loops.
    pub fn between(before: (f64, f64), after: (f64, f64), wall: Duration, threads: usize) -> ClientCpu {
        ClientCpu {
            user_s: (after.0 - before.0).max(0.0),
            sys_s: (after.1 - before.1).max(0.0),
            wall_s: wall.as_secs_f64(),
            threads,
            share_override: None,
        }
    }

    /// User plus system seconds.
    pub fn total_s(&self) -> f64 {
        self.user_s + self.sys_s
    }

    /// Microseconds of CPU per completed request (0 when none completed).
    pub fn per_request_us(&self, requests: u64) -> f64 {
        if requests == 0 {
            0.0
        } else {
            self.total_s() * 1e6 / requests as f64
        }
    }

    /// CPU time over wall time per thread: 1.0 is one core kept busy by each event loop.
    pub fn core_share(&self) -> f64 {
        if let Some(s) = self.share_override {
            return s;
        }
        let capacity = self.wall_s * self.threads.max(1) as f64;
        if capacity > 0.0 {
            self.total_s() / capacity
        } else {
            0.0
        }
    }

    /// Whether the event loops were busy nearly all the time: the figures then measure the client.
    pub fn saturated(&self) -> bool {
        self.core_share() >= SATURATED
    }

    /// Adds another process's cost (another machine's share of a merged test): CPU adds up,
    /// threads add up, and the share is the larger of the two, because one saturated client is
    /// enough to make the merged figures measure the clients.
    pub fn merge(&mut self, other: &ClientCpu) {
        let share = self.core_share().max(other.core_share());
        self.user_s += other.user_s;
        self.sys_s += other.sys_s;
        self.wall_s = self.wall_s.max(other.wall_s);
        self.threads += other.threads;
        self.share_override = Some(share);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_request_and_share() {
        let c = ClientCpu::between((1.0, 0.5), (1.6, 0.9), Duration::from_secs(2), 1);
        assert!((c.total_s() - 1.0).abs() < 1e-9);
        assert!((c.per_request_us(200_000) - 5.0).abs() < 1e-9);
        assert!((c.core_share() - 0.5).abs() < 1e-9);
        assert!(!c.saturated());
        assert_eq!(c.per_request_us(0), 0.0);
        let busy = ClientCpu::between((0.0, 0.0), (3.0, 0.8), Duration::from_secs(2), 2);
        assert!((busy.core_share() - 0.95).abs() < 1e-9);
        assert!(busy.saturated());
        // Nothing ran: no division by zero.
        assert_eq!(ClientCpu::default().core_share(), 0.0);
    }

    #[test]
    fn merge_adds_cpu_and_keeps_the_busiest_share() {
        let mut a = ClientCpu::between((0.0, 0.0), (0.5, 0.5), Duration::from_secs(2), 1);
        let b = ClientCpu::between((0.0, 0.0), (1.5, 0.4), Duration::from_secs(2), 1);
        a.merge(&b);
        assert!((a.total_s() - 2.9).abs() < 1e-9);
        assert_eq!(a.threads, 2);
        assert!((a.core_share() - 0.95).abs() < 1e-9);
        assert!(a.saturated());
    }

    #[test]
    fn the_machine_is_busier_while_this_thread_spins() {
        let before = machine_ticks();
        assert!(before.is_some_and(|(busy, total)| busy <= total && total > 0), "{before:?}");
        let until = std::time::Instant::now() + Duration::from_millis(300);
        let mut x = 0u64;
        while std::time::Instant::now() < until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let busy = machine_busy(before, machine_ticks()).unwrap();
        // One spinning thread of however many CPUs, at the least.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(busy > 0.5 / cpus && busy <= 1.0, "{busy}");
        assert_eq!(machine_busy(Some((5, 10)), Some((5, 10))), None);
    }

    #[test]
    fn run_delays_are_read_per_live_thread() {
        // Readable for this process while a second thread lives, and more than one thread's
        // worth of entries is summed (the sum is over threads alive now: it may drop when one
        // ends, which is why the command line samples it while the loops run).
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let _ = rx.recv();
        });
        let tasks = std::fs::read_dir("/proc/self/task").unwrap().count();
        assert!(tasks >= 2, "{tasks} threads");
        assert!(run_delay_ns("self").is_some());
        drop(tx);
        t.join().unwrap();
        assert_eq!(run_delay_ns("no-such-process"), None);
    }

    #[test]
    fn the_process_clock_moves() {
        let before = process_cpu();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let after = process_cpu();
        assert!(after.0 + after.1 > before.0 + before.1, "{before:?} -> {after:?}");
    }
}
