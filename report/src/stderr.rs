//! Lines on stderr that cannot cost the run: `eprintln!` panics when stderr cannot be written
//! (`2>/dev/full`, or `2>&1 | head -1` once `head` has gone), ending the process with status 101
//! and "failed printing to stderr" in place of the run's status and its remaining output. Every
//! line the binary writes to stderr goes through [`line()`] (the [`say!`](crate::say) macro),
//! which drops what cannot be written: stdout and the exit status stay the run's. The crates
//! that write stderr deny `clippy::print_stderr`, so an `eprintln!` does not come back.

use std::fmt;
use std::io::{self, Write};

/// Writes `args` and a newline to stderr in one write (a line is not split between the
/// threads that write), ignoring a failure: see the module's docs.
pub fn line(args: fmt::Arguments<'_>) {
    let text = format!("{args}\n");
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// `eprintln!` that never panics: formats its arguments as `eprintln!` does and writes them with
/// [`line()`], dropping the line when stderr cannot be written.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::stderr::line(format_args!($($arg)*))
    };
}
