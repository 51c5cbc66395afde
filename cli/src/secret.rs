//! The password kept off `ps`: `REDISCLI_AUTH` (opts.rs) and `--askpass`
//! (`respbench_session::secret`) give it without an argument, and a password given with `-a`
//! (or inside `-u`'s URI) is overwritten in the process's argument memory once read, so that
//! `ps` and `/proc/PID/cmdline` no longer show it.
//!
//! How the argument memory is reached: on Linux with glibc, the functions of `.init_array`
//! are called with `argc, argv, envp`, the pointers into the strings the kernel placed on the
//! stack, which `/proc/PID/cmdline` reads (std captures them the same way). Writing through
//! them is a plain store into our own memory. The other way, `/proc/self/stat`'s arg_start and
//! arg_end written through `/proc/self/mem`, needs `/proc` mounted and is refused by kernels
//! that forbid writing `/proc/PID/mem` (`proc_mem.force_override=never`), and gains nothing.
//! Elsewhere (musl, which passes no arguments to `.init_array`) nothing is scrubbed.

use respbench_report::say;
use std::io::IsTerminal;
use std::ops::Range;

/// redis-cli's warning, word for word, on a terminal's stderr only.
const WARNING: &str =
    "Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.";

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod argv {
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    static ARGC: AtomicUsize = AtomicUsize::new(0);
    static ARGV: AtomicPtr<*mut libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

    /// glibc calls this before `main` with the process's own `argc` and `argv`.
    #[used]
    #[link_section = ".init_array"]
    static CAPTURE: extern "C" fn(libc::c_int, *mut *mut libc::c_char, *mut *mut libc::c_char) = capture;

    extern "C" fn capture(argc: libc::c_int, argv: *mut *mut libc::c_char, _: *mut *mut libc::c_char) {
        ARGC.store(argc.max(0) as usize, Ordering::SeqCst);
        ARGV.store(argv, Ordering::SeqCst);
    }

    /// Overwrites `range` of argument `i` with `*`, if the argument there is `expected`.
    pub fn overwrite(i: usize, expected: &str, range: std::ops::Range<usize>) -> bool {
        let argv = ARGV.load(Ordering::SeqCst);
        if argv.is_null() || i >= ARGC.load(Ordering::SeqCst) {
            return false;
        }
        // SAFETY: argv holds ARGC pointers to NUL-terminated strings the kernel placed in this
        // process's memory, writable, and alive for the whole process; only this thread writes.
        unsafe {
            let arg = *argv.add(i);
            if arg.is_null() {
                return false;
            }
            let len = libc::strlen(arg);
            let bytes = std::slice::from_raw_parts_mut(arg.cast::<u8>(), len);
            if bytes != expected.as_bytes() || range.end > len {
                return false;
            }
            bytes[range].fill(b'*');
        }
        true
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod argv {
    pub fn overwrite(_: usize, _: &str, _: std::ops::Range<usize>) -> bool {
        false
    }
}

/// The byte range of the password in `redis://user:password@host` (or `redis://password@host`),
/// as `-u` reads it.
fn uri_password(uri: &str) -> Option<Range<usize>> {
    let start = uri.find("://")? + 3;
    let (userinfo, _) = uri[start..].rsplit_once('@')?;
    Some(match userinfo.find(':') {
        Some(colon) => start + colon + 1..start + userinfo.len(),
        None => start..start + userinfo.len(),
    })
}

/// Where passwords are among the options of `args` (the whole command line, the program's name
/// first): each as the argument's index and the bytes of it that are the password. `values`:
/// the options that take a value.
fn secrets(args: &[String], values: &[String]) -> Vec<(usize, Range<usize>)> {
    let mut found = Vec::new();
    let mut note = |option: &str, i: usize, at: usize, value: &str| match option {
        "-a" | "--password" | "--sentinel-password" => found.push((i, at..at + value.len())),
        "-u" | "--uri" => found.extend(uri_password(value).map(|r| (i, at + r.start..at + r.end))),
        _ => {}
    };
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" || !a.starts_with('-') || a == "-" {
            break;
        }
        match a.split_once('=').filter(|(n, _)| n.starts_with("--") && values.iter().any(|v| v == n)) {
            Some((name, value)) => {
                note(name, i, name.len() + 1, value);
                i += 1;
            }
            None if values.iter().any(|v| v == a) => {
                if let Some(value) = args.get(i + 1) {
                    note(a, i + 1, 0, value);
                }
                i += 2;
            }
            None => i += 1,
        }
    }
    found
}

/// Overwrites each password given on the command line `args` (`-a`, `-u`'s) with `*` in the
/// process's argument memory, and warns on a terminal's stderr that it was visible. `shift`:
/// how many arguments after the program's name `args` left out (`capture`).
pub fn scrub(args: &[String], values: &[String], shift: usize) {
    let found = secrets(args, values);
    for (i, range) in &found {
        argv::overwrite(*i + shift, &args[*i], range.clone());
    }
    if !found.is_empty() && std::io::stderr().is_terminal() {
        say!("{WARNING}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn passwords_are_found_among_the_options_only() {
        let values = crate::args::Options::of::<crate::opts::Opts>(&["respbench"]).values;
        let args = strings(&[
            "respbench",
            "-a",
            "s3cret",
            "--password=pw",
            "-u",
            "redis://bench:p%40ss@h:1",
            "--uri=redis://alone@h",
            "--key-prefix",
            "-a",
            "-u",
            "redis://h:1",
            "set",
            "-a",
            "x",
        ]);
        let found = secrets(&args, &values);
        let shown: Vec<(usize, &str)> = found.iter().map(|(i, r)| (*i, &args[*i][r.clone()])).collect();
        assert_eq!(shown, [(2, "s3cret"), (3, "pw"), (5, "p%40ss"), (6, "alone")]);
        assert_eq!(uri_password("redis://h:6379/0"), None);
        assert_eq!(uri_password("redis://u:@h"), Some(10..10));
    }
}
