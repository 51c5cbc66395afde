//! [`Error`]: what the outputs library's commands (`merge`, `compare`, `plot`) and writers give
//! back instead of printing; the binary prints it and picks the exit status.

use std::fmt;
use std::io;

/// Why a command of the outputs library or one of its writers did not do what was asked. Each
/// says what the user can act on: the file, the test, the option.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An output could not be written: which (`--json out.json`, a path, `the JSON` on stdout),
    /// and why.
    Write {
        /// The output, as the user named it.
        output: String,
        /// Why.
        source: io::Error,
    },
    /// A result document that cannot be read or trusted; the message names the file and test.
    Document(String),
    /// What was asked cannot be done as asked (documents that are not parts or repeats of one
    /// run, an option's value); the message says why and what would do.
    Refused(String),
    /// A result that could not be encoded as JSON (the message says so).
    Encode(String),
    /// A file or stream could not be created or written: `what` says which and what was being
    /// done (`--hlog out.hlog: cannot write`), as the user reads it before the reason.
    Io {
        /// The output and the action, in the user's words.
        what: String,
        /// Why.
        source: io::Error,
    },
    /// The merged run met a capacity objective at no rate: its answer line.
    NotMet(String),
    /// An output of a run failed (the message names it and why); the others went on.
    Output(String),
    /// The scenario file of `respbench run FILE.toml` (or the one a document recorded) is refused.
    Scenario(respbench_session::scenario::ScenarioError),
}

impl Error {
    /// `--json PATH` (or stdout, for `-`) could not be written.
    pub fn json(path: &str, source: io::Error) -> Error {
        let output = if path == "-" { "the JSON".to_string() } else { format!("--json {path}") };
        Error::Write { output, source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Write { output, source } => {
                match output.strip_prefix("--").and_then(|o| o.split_once(' ')) {
                    Some((option, path)) => write!(f, "--{option}: cannot write {path}: {source}"),
                    None => write!(f, "cannot write {output}: {source}"),
                }
            }
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            Error::Document(m)
            | Error::Refused(m)
            | Error::Encode(m)
            | Error::NotMet(m)
            | Error::Output(m) => f.write_str(m),
            Error::Scenario(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Write { source, .. } | Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    /// A write to the output the binary handed in (its stdout or stderr) failed.
    fn from(source: io::Error) -> Error {
        Error::Write { output: "output".into(), source }
    }
}

impl From<Error> for String {
    /// The message, for a caller that still says its failures as text (the presenter's setup).
    fn from(e: Error) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages are those the strings said before: the option, the path, the reason.
    #[test]
    fn messages_name_what_failed() {
        let full = || io::Error::from_raw_os_error(28);
        let e = Error::json("out.json", full());
        assert_eq!(e.to_string(), format!("--json: cannot write out.json: {}", full()));
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(Error::json("-", full()).to_string(), format!("cannot write the JSON: {}", full()));
        assert_eq!(Error::from(full()).to_string(), format!("cannot write output: {}", full()));
        assert_eq!(Error::Refused("no files to merge".into()).to_string(), "no files to merge");
    }
}
