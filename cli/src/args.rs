//! The command line as bytes: redis-benchmark sends a non-UTF-8 argument of the command as it is,
//! while argh parses text. Each argument that is not UTF-8 is given to argh as a marker naming
//! it; the command's arguments get their bytes back, and a marker anywhere else (an option's
//! value, a file of `merge`) is an error that names it.

use std::os::unix::ffi::OsStringExt;
use std::sync::OnceLock;

use respbench_session::config::OptionError;

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
pub fn command_bytes(args: &[&str], command: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, OptionError> {
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
pub fn all_text(args: &[&str]) -> Result<(), OptionError> {
    match args.iter().position(|a| raw_of(a).is_some()) {
        Some(k) => Err(not_text(args, k)),
        None => Ok(()),
    }
}

/// The error for argument `k`, which is not UTF-8 where text is needed.
fn not_text(args: &[&str], k: usize) -> OptionError {
    let option = k.checked_sub(1).map(|p| args[p]).filter(|p| p.starts_with('-')).map(str::to_string);
    OptionError::NotText { option, value: shown(args[k]) }
}

/// The options of an argh parser, read from the help argh generates for it: which names take a
/// value (`-h`, `--host`, `--replica`), and every long name, for `--opt=value` and for
/// suggestions. Read from the help so that it cannot drift from the options themselves.
#[derive(Debug, Default)]
pub struct Options {
    /// Names (short and long) that take a value.
    pub values: Vec<String>,
    /// Every long name (`--host`), switches too.
    pub long: Vec<String>,
}

impl Options {
    /// The options of `T`, whose help is asked for by `--help` or `--help-all`.
    pub fn of<T: argh::FromArgs>(command: &[&str]) -> Options {
        let help = ["--help", "--help-all"]
            .iter()
            .find_map(|t| T::from_args(command, &[t]).err().filter(|e| e.status.is_ok()).map(|e| e.output));
        Options::from_help(&help.unwrap_or_default())
    }

    /// Reads argh's help text: the usage line's `[-h <host>]` groups say which take a value,
    /// the option list's `-h, --host` lines pair short names with long ones.
    fn from_help(help: &str) -> Options {
        let mut o = Options::default();
        let mut pairs = Vec::new();
        // An option's line is indented by two (its description's next lines by more):
        // `  -h, --host  server hostname` or `  --user  used to send ...`.
        for line in help.lines().filter(|l| l.starts_with("  -")) {
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or("");
            match first.strip_suffix(',') {
                Some(short) => {
                    if let Some(long) = words.next().filter(|l| l.starts_with("--")) {
                        o.long.push(long.to_string());
                        pairs.push((short.to_string(), long.to_string()));
                    }
                }
                None if first.starts_with("--") => o.long.push(first.to_string()),
                None => {}
            }
        }
        let usage = help.lines().find(|l| l.starts_with("Usage:")).unwrap_or("");
        for group in usage.split('[').skip(1) {
            let group = group.split(']').next().unwrap_or("");
            if let Some((name, _)) = group.split_once(" <").filter(|(n, _)| n.starts_with('-')) {
                o.values.push(name.to_string());
                if let Some((_, long)) = pairs.iter().find(|(s, _)| s == name) {
                    o.values.push(long.clone());
                }
            }
        }
        o
    }

    /// How many of `args` are options and their values: the rest (after a `--`, or from the
    /// first argument that is neither) is the command and its arguments.
    pub fn options_end(&self, args: &[String]) -> usize {
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "--" || !a.starts_with('-') || a == "-" {
                return i;
            }
            i += if self.values.iter().any(|v| v == a) { 2 } else { 1 };
        }
        args.len()
    }

    /// `args` with each `--opt=value` among the options split into `--opt value`, as
    /// memtier_benchmark and GNU tools take them (argh takes only the second form). Only a long
    /// option that takes a value is split, at its first `=`; a value (`-a p=w`), anything after a
    /// `--`, and the command's own arguments are left exactly as they are.
    pub fn split_equals(&self, args: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(args.len() + 2);
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "--" || !a.starts_with('-') || a == "-" {
                break;
            }
            match a
                .split_once('=')
                .filter(|(name, _)| name.starts_with("--") && self.values.iter().any(|v| v == name))
            {
                Some((name, value)) => {
                    out.push(name.to_string());
                    out.push(value.to_string());
                    i += 1;
                }
                None if self.values.iter().any(|v| v == a) => {
                    out.extend(args[i..(i + 2).min(args.len())].iter().cloned());
                    i += 2;
                }
                None => {
                    out.push(a.to_string());
                    i += 1;
                }
            }
        }
        out.extend(args[i.min(args.len())..].iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn opts() -> Options {
        Options::of::<crate::opts::Opts>(&["respbench"])
    }

    #[test]
    fn every_option_of_the_parser_is_known() {
        let o = opts();
        for v in [
            "-h",
            "--host",
            "-p",
            "--port",
            "-P",
            "--pipeline",
            "--replica",
            "--mix-command",
            "--rps",
            "--json",
        ] {
            assert!(o.values.iter().any(|x| x == v), "{v} takes a value: {o:?}");
        }
        for s in ["-q", "--quiet", "--csv", "--tls", "--cluster", "-3", "--preload"] {
            assert!(!o.values.iter().any(|x| x == s), "{s} is a switch");
        }
        assert!(o.long.iter().any(|l| l == "--csv") && o.long.iter().any(|l| l == "--pipeline"));
        assert!(o.long.len() > 60, "{}", o.long.len());
    }

    #[test]
    fn opt_equals_value_is_split_among_the_options_only() {
        let o = opts();
        let got = o.split_equals(&strings(&[
            "--pipeline=16",
            "-a",
            "--x=y",
            "--mix-command=2 HSET h f=v",
            "--csv",
            "--key-prefix=a=b",
            "set",
            "--pipeline=4",
            "k=v",
        ]));
        assert_eq!(
            got,
            strings(&[
                "--pipeline",
                "16",
                "-a",
                "--x=y",
                "--mix-command",
                "2 HSET h f=v",
                "--csv",
                "--key-prefix",
                "a=b",
                "set",
                "--pipeline=4",
                "k=v"
            ])
        );
        // After `--`, nothing is touched; a switch with `=` is left for argh to refuse.
        let got = o.split_equals(&strings(&["--rps=100", "--", "--rps=5", "x"]));
        assert_eq!(got, strings(&["--rps", "100", "--", "--rps=5", "x"]));
        assert_eq!(o.split_equals(&strings(&["--tls=yes"])), strings(&["--tls=yes"]));
        // Split twice is split once.
        let once = o.split_equals(&strings(&["--json=-", "-n", "5", "get", "a=b"]));
        assert_eq!(o.split_equals(&once), once);
        assert_eq!(o.options_end(&once), 4);
    }
}
