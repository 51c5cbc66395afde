//! Making a loop's ring, its provided-buffer ring, and finding out what the kernel can do (or why
//! it cannot do io_uring at all).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use io_uring::types::{BufRingEntry, Fd, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, IoUring};

use crate::{Options, Unavailable, Uring};

/// The buffer group of every loop's provided-buffer ring.
pub const BGID: u16 = 0;

/// How the kernel runs a ring's completions (its task work).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taskrun {
    /// `DEFER_TASKRUN` (Linux 6.1): only when the loop waits, never interrupting it.
    Deferred,
    /// `COOP_TASKRUN` (5.19): at the loop's next system call, without an interrupt.
    Cooperative,
    /// The kernel's default: an interrupt of the loop's thread.
    Default,
}

/// A ring for one loop with `entries` submission slots: the cheapest way the kernel offers to
/// deliver completions to a single thread, falling back on older kernels.
pub fn ring(opts: &Options, entries: u32) -> io::Result<(IoUring, Taskrun)> {
    let cq = entries.saturating_mul(4);
    if opts.sqpoll {
        // The kernel thread submits and runs the task work: no deferred task work with it.
        let ring = IoUring::builder().setup_sqpoll(SQPOLL_IDLE_MS).setup_cqsize(cq).build(entries)?;
        return Ok((ring, Taskrun::Default));
    }
    for how in [Taskrun::Deferred, Taskrun::Cooperative] {
        let mut b = IoUring::builder();
        b.setup_cqsize(cq);
        match how {
            Taskrun::Deferred => b.setup_single_issuer().setup_defer_taskrun(),
            _ => b.setup_coop_taskrun(),
        };
        match b.build(entries) {
            Ok(ring) => return Ok((ring, how)),
            // An older kernel that does not know the flag.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(e) => return Err(e),
        }
    }
    let ring = IoUring::builder().setup_cqsize(cq).build(entries)?;
    Ok((ring, Taskrun::Default))
}

/// How long the SQPOLL thread keeps polling after the last submission before it sleeps (and
/// the next submission costs a wake-up system call).
pub const SQPOLL_IDLE_MS: u32 = 50;

/// Whether io_uring works here with what the backend needs, and what the kernel offers beyond it.
pub fn check(opts: &Options) -> Result<Uring, Unavailable> {
    let disabled = || std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").ok();
    let (mut ring, taskrun) =
        ring(opts, 8).map_err(|e| Unavailable(setup_reason(&e, disabled().as_deref())))?;
    if !ring.params().is_feature_ext_arg() {
        return Err(Unavailable(
            "this kernel's io_uring cannot wait with a timeout (IORING_FEAT_EXT_ARG, Linux 5.11 or later)"
                .into(),
        ));
    }
    let mut bufs = Bufs::new(8, 64);
    bufs.register(&ring).map_err(|e| Unavailable(buf_ring_reason(&e)))?;
    let multishot = !opts.single_shot
        && probe_multishot(&mut ring, &mut bufs)
            .map_err(|e| Unavailable(format!("a test receive failed: {e}")))?;
    bufs.unregister(&ring);
    Ok(Uring { opts: *opts, multishot, taskrun })
}

/// Why the ring could not be made, in the user's terms. `disabled` is the content of
/// `/proc/sys/kernel/io_uring_disabled`, when readable.
pub fn setup_reason(e: &io::Error, disabled: Option<&str>) -> String {
    let words = respbench_core::conn::os_words(e);
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => match disabled.map(str::trim) {
            Some("2") => format!("io_uring_setup: {words}: kernel.io_uring_disabled = 2 turns io_uring off"),
            Some("1") => format!(
                "io_uring_setup: {words}: kernel.io_uring_disabled = 1 keeps io_uring to root and the \
                 kernel.io_uring_group"
            ),
            _ => format!("io_uring_setup: {words}: a seccomp filter (as container runtimes install) or a security module refuses it"),
        },
        Some(libc::ENOSYS) => format!(
            "io_uring_setup: {words}: the kernel has no io_uring (before Linux 5.1, or built without it), or \
             a seccomp filter hides it"
        ),
        Some(libc::ENOMEM) => {
            format!("io_uring_setup: {words}: the locked-memory limit (ulimit -l) is too low for a ring on this kernel")
        }
        Some(libc::EINVAL) => format!("io_uring_setup: {words}: the kernel is too old for this backend"),
        _ => format!("io_uring_setup: {words}"),
    }
}

/// Why the provided-buffer ring could not be registered.
pub fn buf_ring_reason(e: &io::Error) -> String {
    let words = respbench_core::conn::os_words(e);
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            format!("registering a provided-buffer ring: {words}: the kernel has none (Linux 5.19 or later)")
        }
        _ => format!("registering a provided-buffer ring: {words}"),
    }
}

/// Whether this kernel keeps a receive armed across completions (multishot, Linux 6.0): one
/// receive on a socket pair, one byte sent, and a look at its completion.
fn probe_multishot(ring: &mut IoUring, bufs: &mut Bufs) -> io::Result<bool> {
    let mut fds = [0; 2];
    // SAFETY: plain system call filling the array we own.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) }
        != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors nobody else owns.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let recv = opcode::RecvMulti::new(Fd(a.as_raw_fd()), BGID).build().user_data(1);
    // SAFETY: the buffers the receive may use are registered and outlive the ring's use of them
    // (the receive is ended below, before `bufs` can go).
    unsafe { ring.submission().push(&recv).map_err(|_| io::Error::other("the submission queue is full"))? };
    // SAFETY: a one-byte write from a buffer we own.
    if unsafe { libc::write(b.as_raw_fd(), b"x".as_ptr().cast(), 1) } != 1 {
        return Err(io::Error::last_os_error());
    }
    let first = wait_one(ring)?;
    let multishot = match first {
        Some((res, flags)) => {
            if let Some(bid) = cqueue::buffer_select(flags) {
                bufs.recycle(bid);
            }
            res == 1 && cqueue::more(flags)
        }
        None => false,
    };
    // End the receive (a multishot one stays armed): the peer's close completes it.
    drop(b);
    if multishot {
        while let Some((_, flags)) = wait_one(ring)? {
            if let Some(bid) = cqueue::buffer_select(flags) {
                bufs.recycle(bid);
            }
            if !cqueue::more(flags) {
                break;
            }
        }
    }
    drop(a);
    Ok(multishot)
}

/// The next completion, waiting up to a second for it.
fn wait_one(ring: &mut IoUring) -> io::Result<Option<(i32, u32)>> {
    let ts = Timespec::from(Duration::from_secs(1));
    match ring.submitter().submit_with_args(1, &SubmitArgs::new().timespec(&ts)) {
        Ok(_) => {}
        Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
        Err(e) => return Err(e),
    }
    Ok(ring.completion().next().map(|c| (c.result(), c.flags())))
}

/// A provided-buffer ring: `count` buffers of `size` bytes the kernel picks from for each
/// receive, given back as soon as their bytes went to the connection.
pub struct Bufs {
    /// The ring of buffer descriptors, page-aligned as the kernel requires.
    entries: *mut BufRingEntry,
    layout: Layout,
    mem: Vec<u8>,
    size: usize,
    /// `count - 1` (count is a power of two).
    mask: u16,
    /// Our copy of the ring's tail.
    tail: u16,
    registered: bool,
}

impl Bufs {
    /// `count` (a power of two, at most 32768) buffers of `size` bytes, all handed to the kernel.
    pub fn new(count: u16, size: usize) -> Bufs {
        assert!(count.is_power_of_two() && count <= 32768);
        let layout = Layout::from_size_align(count as usize * std::mem::size_of::<BufRingEntry>(), 4096)
            .expect("a valid layout");
        // SAFETY: a non-zero size; the zeroed memory is a valid array of BufRingEntry.
        let entries = unsafe { alloc_zeroed(layout) } as *mut BufRingEntry;
        if entries.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut bufs = Bufs {
            entries,
            layout,
            mem: vec![0; count as usize * size],
            size,
            mask: count - 1,
            tail: 0,
            registered: false,
        };
        for bid in 0..count {
            bufs.recycle(bid);
        }
        bufs
    }

    /// Registers the ring with `ring`'s kernel side, as buffer group [`BGID`].
    pub fn register(&mut self, ring: &IoUring) -> io::Result<()> {
        // SAFETY: the entries and the memory they point to live until `self` is dropped, which
        // unregisters them first (and loops drop their ring before their buffers).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(self.entries as u64, self.mask + 1, BGID, 0)?
        };
        self.registered = true;
        Ok(())
    }

    /// Forgets the registration (the ring that had it is gone or is going).
    pub fn unregister(&mut self, ring: &IoUring) {
        if self.registered {
            let _ = ring.submitter().unregister_buf_ring(BGID);
            self.registered = false;
        }
    }

    /// Never frees the memory (the kernel may still write to it).
    pub fn leak(&mut self) {
        std::mem::forget(std::mem::take(&mut self.mem));
        self.layout = Layout::new::<()>();
        self.entries = std::ptr::null_mut();
    }

    /// Size of each buffer.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The first `len` bytes of buffer `bid`.
    pub fn get(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * self.size;
        &self.mem[start..start + len.min(self.size)]
    }

    /// Gives buffer `bid` back to the kernel.
    pub fn recycle(&mut self, bid: u16) {
        let start = bid as usize * self.size;
        // SAFETY: `tail & mask` indexes the entries array; the kernel only reads entries between
        // its head and the published tail, and this one is past the tail until the store below.
        unsafe {
            let e = &mut *self.entries.add((self.tail & self.mask) as usize);
            e.set_addr(self.mem.as_ptr().add(start) as u64);
            e.set_len(self.size as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail field overlays the first entry's reserved field; the kernel reads it
        // with acquire ordering.
        unsafe {
            let tail = BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for Bufs {
    fn drop(&mut self) {
        if !self.entries.is_null() {
            // SAFETY: allocated in `new` with this layout.
            unsafe { dealloc(self.entries as *mut u8, self.layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_say_why() {
        let eperm = io::Error::from_raw_os_error(libc::EPERM);
        assert!(setup_reason(&eperm, Some("2\n")).contains("kernel.io_uring_disabled = 2"));
        assert!(setup_reason(&eperm, Some("1\n")).contains("kernel.io_uring_disabled = 1"));
        let seccomp = setup_reason(&eperm, Some("0\n"));
        assert!(seccomp.contains("seccomp"), "{seccomp}");
        assert!(seccomp.starts_with("io_uring_setup: Operation not permitted"), "{seccomp}");
        assert!(setup_reason(&eperm, None).contains("seccomp"));
        let enosys = setup_reason(&io::Error::from_raw_os_error(libc::ENOSYS), None);
        assert!(enosys.contains("no io_uring") && enosys.contains("Function not implemented"), "{enosys}");
        let enomem = setup_reason(&io::Error::from_raw_os_error(libc::ENOMEM), None);
        assert!(enomem.contains("ulimit -l"), "{enomem}");
        let einval = buf_ring_reason(&io::Error::from_raw_os_error(libc::EINVAL));
        assert!(einval.contains("Linux 5.19"), "{einval}");
    }

    #[test]
    fn this_kernel_has_what_the_backend_needs() {
        // The machines respbench is developed and tested on run Linux 6.x with io_uring on.
        let u = check(&Options::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(u.multishot, "{}", u.describe());
        let single = check(&Options { single_shot: true, ..Options::default() }).unwrap();
        assert!(!single.multishot);
        assert!(single.describe().contains("single-shot"), "{}", single.describe());
    }

    #[test]
    fn buffers_go_round() {
        let mut b = Bufs::new(4, 16);
        assert_eq!(b.tail, 4);
        b.recycle(2);
        assert_eq!(b.tail, 5);
        assert_eq!(b.get(3, 100).len(), 16);
        assert_eq!(b.get(3, 5).len(), 5);
    }
}
