//! The command line as bytes: redis-benchmark sends a non-UTF-8 argument of the command as it is,
//! while argh parses text. Each argument that is not UTF-8 is given to argh as a marker naming
//! it; the command's arguments get their bytes back, and a marker anywhere else (an option's
//! value, a file of `merge`) is an error that names it.

use std::os::unix::ffi::OsStringExt;
use std::sync::OnceLock;

/// Round the index of a non-UTF-8 argument: a noncharacter, which no argument typed as text
/// holds.
const MARK: char = '\u{FDD0}';

/// The arguments that were not UTF-8, by index.
static RAW: OnceLock<Vec<Vec<u8>>> = OnceLock::new();

/// The process's arguments as text, each one that is not UTF-8 replaced by its marker.
pub fn collect() -> Vec<String> {
    let mut raw = Vec::new();
    let text = std::env::args_os()
        .map(|a| {
            a.into_string().unwrap_or_else(|os| {
                raw.push(os.into_vec());
                format!("{MARK}{}{MARK}", raw.len() - 1)
            })
        })
        .collect();
    let _ = RAW.set(raw);
    text
}

/// The bytes of the argument a marker names, if `arg` is one.
fn raw_of(arg: &str) -> Option<&'static [u8]> {
    let i: usize = arg.strip_prefix(MARK)?.strip_suffix(MARK)?.parse().ok()?;
    RAW.get()?.get(i).map(Vec::as_slice)
}

/// `text` with each marker shown as its argument, lossily (for messages).
pub fn shown(text: &str) -> String {
    let Some(raw) = RAW.get().filter(|r| !r.is_empty()) else { return text.to_string() };
    let mut out = text.to_string();
    for (i, bytes) in raw.iter().enumerate() {
        out = out.replace(&format!("{MARK}{i}{MARK}"), &format!("{:?}", String::from_utf8_lossy(bytes)));
    }
    out
}

/// The command's arguments with their bytes back. The command is the last arguments (argh's
/// greedy positional); an argument before it that was not UTF-8 is the value of an option,
/// which takes text.
pub fn command_bytes(args: &[&str], command: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String> {
    let options = args.len().saturating_sub(command.len());
    if let Some(k) = args[..options].iter().position(|a| raw_of(a).is_some()) {
        return Err(not_text(args, k));
    }
    Ok(command
        .into_iter()
        .map(|a| match std::str::from_utf8(&a).ok().and_then(raw_of) {
            Some(bytes) => bytes.to_vec(),
            None => a,
        })
        .collect())
}

/// Every argument is text (`merge`, `plot`: file names and options).
pub fn all_text(args: &[&str]) -> Result<(), String> {
    match args.iter().position(|a| raw_of(a).is_some()) {
        Some(k) => Err(not_text(args, k)),
        None => Ok(()),
    }
}

/// The error for argument `k`, which is not UTF-8 where text is needed.
fn not_text(args: &[&str], k: usize) -> String {
    let value = shown(args[k]);
    match k.checked_sub(1).map(|p| args[p]).filter(|p| p.starts_with('-')) {
        Some(option) => format!("{option}: the value {value} is not UTF-8, and {option} takes text"),
        None => format!("the argument {value} is not UTF-8, and only a command's arguments may be bytes"),
    }
}
