//! A seccomp filter a test installs in respbench's process before it runs (`Tool::pre_exec`):
//! a system call the kernel here allows made to fail as a kernel that lacks it would.

/// One classic-BPF instruction (`struct sock_filter`).
#[repr(C)]
pub struct SockFilter {
    /// The operation.
    pub code: u16,
    /// Where to jump when true.
    pub jt: u8,
    /// Where to jump when false.
    pub jf: u8,
    /// The operand.
    pub k: u32,
}

/// `A = seccomp_data.nr`: the system call's number.
pub const LOAD_NR: SockFilter = SockFilter { code: 0x20, jt: 0, jf: 0, k: 0 };
/// `return SECCOMP_RET_ALLOW`.
pub const ALLOW: SockFilter = SockFilter { code: 0x06, jt: 0, jf: 0, k: 0x7fff_0000 };

/// `A = ` the low half of argument `i` of the call (little-endian).
pub const fn load_arg(i: u32) -> SockFilter {
    SockFilter { code: 0x20, jt: 0, jf: 0, k: 16 + 8 * i }
}

/// `if A == k`, go on, else skip `skip` instructions.
pub const fn if_eq(k: u32, skip: u8) -> SockFilter {
    SockFilter { code: 0x15, jt: 0, jf: skip, k }
}

/// `return SECCOMP_RET_ERRNO | errno`: the call fails with `errno`.
pub const fn fail(errno: u32) -> SockFilter {
    SockFilter { code: 0x06, jt: 0, jf: 0, k: 0x0005_0000 | errno }
}

/// Installs `filter` on this process (no new privileges first, as an unprivileged filter
/// needs).
pub fn install(filter: &[SockFilter]) -> std::io::Result<()> {
    #[repr(C)]
    struct SockFprog {
        len: u16,
        filter: *const SockFilter,
    }
    extern "C" {
        fn prctl(option: i32, ...) -> i32;
    }
    const PR_SET_NO_NEW_PRIVS: i32 = 38;
    const PR_SET_SECCOMP: i32 = 22;
    const SECCOMP_MODE_FILTER: u64 = 2;
    let prog = SockFprog { len: filter.len() as u16, filter: filter.as_ptr() };
    // SAFETY: plain system calls on this (child) process; `prog` and `filter` outlive them.
    unsafe {
        if prctl(PR_SET_NO_NEW_PRIVS, 1u64, 0u64, 0u64, 0u64) != 0
            || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog as *const SockFprog) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
