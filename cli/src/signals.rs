//! SIGINT and SIGTERM: the first stops the run, which drains and writes every output; one more
//! within [`GRACE_NS`] of the first is the same request again and is ignored; one after it ends the
//! process at once.
//!
//! Why a grace: GNU `timeout` (and a shell's Ctrl-C, and `kill -INT -PGID`) signals the process
//! and then its process group, so one request often arrives as two signals microseconds apart;
//! taking the second as "exit now" lost the run's results.
//!
//! Why a watchdog thread: the handler may run on any thread at any instruction, so it does only
//! what is async-signal-safe: atomics, `clock_gettime` and a `write(2)` of one byte to a pipe.
//! The decision that needs more (saying on stderr what was cut, removing a half-written output's
//! temporary file, exiting) runs on an ordinary thread that reads that pipe, where it is safe.
//! It ends with `_exit`, which runs no destructors, and needs none: the report's lines are on
//! stdout already (`io::stdout` is line-buffered and each test's report is flushed), `--hlog` is
//! flushed every second, and the only file an exit can leave half-written, an output's
//! temporary, is removed first.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use respbench_session::StopHandle;

/// The first signal's number (0 before one came): an interrupted run exits with 128 + it.
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Exit status for an interrupted run: 128 + the first signal, as a shell reports a process
/// the signal ended (130 for SIGINT, 143 for SIGTERM).
pub fn exit_interrupted() -> u8 {
    match FIRST_SIGNAL.load(Ordering::SeqCst) {
        libc::SIGTERM => 128 + libc::SIGTERM as u8,
        _ => 128 + libc::SIGINT as u8,
    }
}
/// How long after the first signal another is taken as the same request.
const GRACE_NS: u64 = 1_000_000_000;

/// Signals received so far.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// When the first came (`CLOCK_MONOTONIC`, ns; 0 while its handler has not stored it yet).
static FIRST_NS: AtomicU64 = AtomicU64::new(0);
/// A signal came after the grace: the watchdog ends the process.
static LATE: AtomicBool = AtomicBool::new(false);
/// The outputs are being written (the run is over): said in the exit's message.
static WRITING: AtomicBool = AtomicBool::new(false);
/// The write end of the watchdog's pipe (-1 before it starts).
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// What the first signal pulls: the session stops handing out requests and drains.
static STOP: OnceLock<StopHandle> = OnceLock::new();

fn monotonic_ns() -> u64 {
    // SAFETY: clock_gettime is async-signal-safe and writes only the timespec given.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64).max(1)
}

extern "C" fn on_signal(signal: libc::c_int) {
    // SAFETY: errno is the interrupted code's: kept across the write below.
    let errno = unsafe { *libc::__errno_location() };
    let now = monotonic_ns();
    if COUNT.fetch_add(1, Ordering::SeqCst) == 0 {
        FIRST_SIGNAL.store(signal, Ordering::SeqCst);
        FIRST_NS.store(now, Ordering::SeqCst);
        if let Some(stop) = STOP.get() {
            stop.request();
        }
    } else {
        // A first whose time is not stored yet is running at this instant on another thread.
        let first = FIRST_NS.load(Ordering::SeqCst);
        if first != 0 && now.saturating_sub(first) >= GRACE_NS {
            LATE.store(true, Ordering::SeqCst);
        }
    }
    let fd = WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; a full pipe (EAGAIN) already wakes the watchdog.
        unsafe { libc::write(fd, b"!".as_ptr().cast(), 1) };
    }
    unsafe { *libc::__errno_location() = errno };
}

/// Marks the run over and its outputs being written, for the message of a late signal.
pub fn writing_outputs() {
    WRITING.store(true, Ordering::SeqCst);
}

/// Installs the handlers and starts the watchdog; `outputs` names the files written at the end
/// (`--json out.json`), for the message that says what a late signal cut.
pub fn install(outputs: String) -> std::io::Result<StopHandle> {
    let stop = STOP.get_or_init(StopHandle::new).clone();
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(e.kind(), format!("cannot make the signal pipe: {e}")));
    }
    // The read end blocks: the watchdog sleeps in read(2).
    // SAFETY: fcntl on a descriptor just made.
    unsafe { libc::fcntl(fds[0], libc::F_SETFL, 0) };
    let read_end = fds[0];
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || watch(read_end, &outputs))
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start the signal thread: {e}")))?;
    WAKE.store(fds[1], Ordering::SeqCst);
    // SAFETY: the handler is async-signal-safe (above); sigaction reads the struct given.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // Restarted system calls: no EINTR anywhere in the run. Both blocked while either runs.
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaddset(&mut sa.sa_mask, libc::SIGINT);
        libc::sigaddset(&mut sa.sa_mask, libc::SIGTERM);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
    Ok(stop)
}

/// The watchdog: woken by each signal, ends the process once one comes after the grace.
fn watch(fd: libc::c_int, outputs: &str) {
    let mut buf = [0u8; 16];
    loop {
        // SAFETY: read into the buffer given, at most its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n == 0 || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted) {
            return;
        }
        if LATE.load(Ordering::SeqCst) {
            exit_now(outputs);
        }
    }
}

/// Says what is cut, removes a half-written output, and exits without waiting for the run.
fn exit_now(outputs: &str) -> ! {
    let cut = match (WRITING.load(Ordering::SeqCst), outputs.is_empty()) {
        (true, true) => "while the outputs were written".to_string(),
        (true, false) => format!("while the outputs were written: {outputs} may be missing"),
        (false, true) => "before the run drained: the test in progress has no report".to_string(),
        (false, false) => {
            format!(
                "before the run drained: the test in progress has no report, and {outputs} is not written"
            )
        }
    };
    // Off a progress line first, on a terminal.
    // SAFETY: isatty reads the descriptor's state only.
    let tty = unsafe { libc::isatty(libc::STDERR_FILENO) } == 1;
    let line = format!(
        "{}respbench: signalled again more than 1 s after the first: exiting now, {cut}\n",
        if tty { "\r\x1b[K" } else { "" }
    );
    // SAFETY: write(2) of a buffer we own; nothing else holds a lock on the raw descriptor.
    unsafe { libc::write(libc::STDERR_FILENO, line.as_ptr().cast(), line.len()) };
    respbench_report::files::remove_unfinished();
    // SAFETY: _exit ends the process without destructors or atexit handlers (see the module's
    // docs for why none is needed).
    unsafe { libc::_exit(exit_interrupted() as libc::c_int) }
}
