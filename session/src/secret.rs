//! The password for `--askpass`, read as redis-cli reads it: from the terminal without echo, or
//! one line of stdin when it is not a terminal. The command line gives where the prompt goes.

use std::fmt;
use std::io::{BufRead, IsTerminal, Write};

/// Why `--askpass` has no password.
#[derive(Debug)]
#[non_exhaustive]
pub enum PasswordError {
    /// The terminal, or stdin, could not be read.
    Read(std::io::Error),
    /// Stdin ended before a line.
    NoLine,
}

impl fmt::Display for PasswordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PasswordError::Read(e) => write!(f, "--askpass: cannot read the password: {e}"),
            PasswordError::NoLine => f.write_str("--askpass: no password: stdin ended before a line"),
        }
    }
}

impl std::error::Error for PasswordError {}

/// `--askpass`: the password typed at the terminal without echo, after redis-cli's prompt
/// (written to `prompt`: the caller's stderr), or the first line of stdin when it is not a
/// terminal.
pub fn read_password(prompt: &mut dyn Write) -> Result<String, PasswordError> {
    let stdin = std::io::stdin();
    let mut line = String::new();
    let read = if stdin.is_terminal() {
        let _ = write!(prompt, "Please input password: ").and_then(|()| prompt.flush());
        // SAFETY: tcgetattr and tcsetattr read and write the termios given, of stdin.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        let got = unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } == 0;
        if got {
            let mut quiet = saved;
            quiet.c_lflag &= !libc::ECHO;
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSAFLUSH, &quiet) };
        }
        let read = stdin.lock().read_line(&mut line);
        if got {
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSAFLUSH, &saved) };
        }
        let _ = writeln!(prompt);
        read
    } else {
        stdin.lock().read_line(&mut line)
    };
    match read {
        Err(e) => Err(PasswordError::Read(e)),
        Ok(0) => Err(PasswordError::NoLine),
        Ok(_) => {
            let end = line.trim_end_matches(['\n', '\r']).len();
            line.truncate(end);
            Ok(line)
        }
    }
}
