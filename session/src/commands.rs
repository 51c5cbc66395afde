//! `--replay FILE` of plain commands: one command a line, in redis-cli's quoting, with no
//! recorded times (memtier #359's ask). Such a file is not a capture: it is the run's workload,
//! played in order (each connection sends the lines in turn, as valkey-benchmark's command
//! sequences, [`respbench_core::Mix::sequence`]) or at random (`--replay-order random`: each
//! request one line drawn uniformly, as a `--mix`), as fast as it goes or at `--rps`, with
//! `__rand_int__` and the other placeholders filled as in any custom command.
//!
//! The file is hostile input: read whole up to [`MAX_BYTES`], each line at most [`MAX_LINE`]
//! bytes, at most [`MAX_COMMANDS`] commands; a line too long, not UTF-8 or badly quoted is
//! refused with its number.

use std::io::Read;

use crate::config::{Config, OptionError};

/// The largest command file read.
pub const MAX_BYTES: u64 = 16 << 20;
/// The longest line.
pub const MAX_LINE: usize = 64 << 10;
/// The most commands.
pub const MAX_COMMANDS: usize = 100_000;

/// Whether `head`, the start of a `--replay` file, is a capture (respbench capture's header,
/// or a line of `redis-cli monitor`'s: `1700000000.123456 [0 127.0.0.1:5000] "GET" "k"`).
fn is_capture(head: &[u8]) -> bool {
    if head.starts_with(respbench_core::replay::CAPTURE_HEADER) {
        return true;
    }
    let first = head.split(|&b| b == b'\n').find(|l| !l.iter().all(u8::is_ascii_whitespace));
    first.is_some_and(|l| respbench_core::replay::parse_monitor_line(l).is_ok() || l.starts_with(b"OK"))
}

/// Whether `head` starts as a file of commands: its first line that is not blank nor a `#`
/// comment is text whose first word is a command's name (letters first, then letters, digits,
/// `_`, `-`, `.`, `|`).
fn looks_plain(head: &[u8]) -> bool {
    let Some(line) = head
        .split(|&b| b == b'\n')
        .take(1000)
        .find(|l| !l.iter().all(u8::is_ascii_whitespace) && !l.trim_ascii_start().starts_with(b"#"))
    else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(&line[..line.len().min(MAX_LINE)]) else { return false };
    let Ok(words) = crate::syntax::words(text.trim()) else { return true };
    words.first().is_some_and(|w| {
        w.starts_with(|c: char| c.is_ascii_alphabetic())
            && w.chars().all(|c| c.is_ascii_alphanumeric() || "_-.|".contains(c))
    })
}

/// When `--replay` names a plain command file, makes its commands the run's (`order`:
/// `--replay-order`, `in-order` by default, or `random`) and leaves the replay out; a capture
/// is left to the replay. `order` without a command file is refused.
pub fn plain(cfg: &mut Config, order: Option<&str>) -> Result<(), OptionError> {
    let random = match order {
        None | Some("in-order") => false,
        Some("random") => true,
        Some(o) => return Err(crate::syntax::bad("--replay-order", o, "expected in-order or random")),
    };
    let Some(settings) = cfg.replay.as_ref() else {
        return match order {
            Some(_) => {
                Err(OptionError::Refused("--replay-order is for --replay FILE of plain commands".into()))
            }
            None => Ok(()),
        };
    };
    let path = settings.file.clone();
    let shown = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| OptionError::Refused(format!("--replay {shown}: {e}")))?;
    if is_capture(&bytes) || !looks_plain(&bytes) {
        // A capture, or nothing like commands (empty, binary, a document): the replay's to say.
        return match order {
            Some(_) => Err(OptionError::Refused(format!("--replay {shown} is a capture, played in its own order: --replay-order is for a file of plain commands"))),
            None => Ok(()),
        };
    }
    if bytes.len() as u64 > MAX_BYTES {
        return Err(OptionError::Refused(format!(
            "--replay {shown}: a command file larger than {MAX_BYTES} bytes"
        )));
    }
    if settings.speed != 1.0 || settings.passes != 1 {
        return Err(OptionError::Refused(format!(
            "--replay {shown} is a file of plain commands, without recorded times: --speed and --replay-loop are a capture's (give --rps for a rate, -n or --duration for how much)"
        )));
    }
    if !cfg.command.is_empty() || cfg.open.has_mix() {
        return Err(OptionError::Refused(format!(
            "--replay {shown}: its commands are the run's: not with a command or --mix"
        )));
    }
    let commands = read(&bytes)
        .map_err(|(line, why)| OptionError::Refused(format!("--replay {shown}:{line}: {why}")))?;
    if commands.is_empty() {
        return Err(OptionError::Refused(format!("--replay {shown}: no command in the file")));
    }
    if random {
        cfg.open.mix_command_keys = vec![None; commands.len()];
        cfg.open.mix_commands =
            commands.into_iter().map(|c| (c.into_iter().map(String::into_bytes).collect(), 1)).collect();
    } else {
        let separated =
            commands.into_iter().map(|c| c.into_iter().map(String::into_bytes).collect::<Vec<_>>());
        let mut all: Vec<Vec<u8>> = Vec::new();
        for c in separated {
            if !all.is_empty() {
                all.push(b";".to_vec());
            }
            all.extend(c);
        }
        // One command is a custom command (a sequence of one).
        cfg.command = all;
    }
    cfg.replay = None;
    Ok(())
}

/// The commands of a file: its lines split as redis-cli splits its command line, blank lines
/// and `#` comments left out; the error gives the line's number (from 1) and why.
pub fn read(bytes: &[u8]) -> Result<Vec<Vec<String>>, (usize, String)> {
    let mut commands = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        if line.len() > MAX_LINE {
            return Err((n, format!("a line of {} bytes, longer than {MAX_LINE}", line.len())));
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = std::str::from_utf8(line).map_err(|_| (n, "not UTF-8 text".to_string()))?;
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let words = crate::syntax::words(trimmed).map_err(|why| (n, why.to_string()))?;
        if words.iter().any(|w| w == ";") {
            return Err((n, "a ';' argument (it separates the commands of a sequence)".into()));
        }
        if commands.len() >= MAX_COMMANDS {
            return Err((n, format!("more than {MAX_COMMANDS} commands")));
        }
        commands.push(words);
    }
    Ok(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_quoting_and_refusals() {
        let ok = read(b"SET k:__rand_int__ v\n\n# a comment\r\n\"GET\" 'k 1'\r\nINCR c").unwrap();
        assert_eq!(ok, [vec!["SET", "k:__rand_int__", "v"], vec!["GET", "k 1"], vec!["INCR", "c"]]);
        assert_eq!(read(b"GET a\nGET \"b\n").unwrap_err().0, 2);
        assert_eq!(read(b"GET a\nGET a ; GET b\n").unwrap_err().0, 2);
        assert_eq!(read(b"PING\n\xff\xfe\n").unwrap_err().0, 2);
        let mut huge = b"PING\nPING\nSET k ".to_vec();
        huge.extend(std::iter::repeat_n(b'x', MAX_LINE));
        let e = read(&huge).unwrap_err();
        assert_eq!(e.0, 3);
        assert!(e.1.contains("longer than"), "{}", e.1);
        assert!(is_capture(b"1700000000.123456 [0 127.0.0.1:5000] \"GET\" \"k\"\n"));
        assert!(is_capture(respbench_core::replay::CAPTURE_HEADER));
        assert!(!is_capture(b"GET k\n"));
        assert!(looks_plain(b"# c\n\nGET k\n") && looks_plain(b"\"GET\" k\n") && looks_plain(b"GET \"k\n"));
        assert!(
            !looks_plain(b"{\"tests\": []}\n") && !looks_plain(b"") && !looks_plain(b"\x00\x01respbench")
        );
    }
}
