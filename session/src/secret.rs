//! The password for `--askpass`, read as redis-cli reads it: from the terminal without echo, or
//! one line of stdin when it is not a terminal. The command line gives where the prompt goes.

use std::io::{BufRead, IsTerminal, Write};

/// `--askpass`: the password typed at the terminal without echo, after redis-cli's prompt
/// (written to `prompt`: the caller's stderr), or the first line of stdin when it is not a
/// terminal.
pub fn read_password(prompt: &mut dyn Write) -> Result<String, String> {
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
        Err(e) => Err(format!("--askpass: cannot read the password: {e}")),
        Ok(0) => Err("--askpass: no password: stdin ended before a line".to_string()),
        Ok(_) => {
            let end = line.trim_end_matches(['\n', '\r']).len();
            line.truncate(end);
            Ok(line)
        }
    }
}
