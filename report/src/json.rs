//! The `--json` document (schema `respbench/2`, described in docs/json.md): building it from a
//! run's results ([`crate::convert`] makes its parts), writing it, and reading one back.
//!
//! Histograms travel as HdrHistogram V2 deflate encodings in base64 ([`crate::codec`]), so a
//! merge adds them exactly.

use std::io::{self, Write};

use serde_json::Value;

use crate::codec::{schema_refused, READS_ALSO, SCHEMA};
use crate::doc::{self, Document};
use crate::error::Error;

/// The document's `command_line`: the process's arguments (after the program's name), as the
/// binary hands them to [`crate::outputs::Outputs::new`], with the values of `-a`/`--password`
/// and the password of a `-u`/`--uri` URI replaced by `***`.
pub fn command_line(args: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut next: Option<&str> = None;
    for &a in args {
        if let Some(option) = next.take() {
            out.push(if option == "-u" || option == "--uri" { redact_uri(a) } else { "***".into() });
            continue;
        }
        match a.split_once('=') {
            Some((o @ ("-a" | "--password"), _)) => out.push(format!("{o}=***")),
            Some((o @ ("-u" | "--uri"), uri)) => out.push(format!("{o}={}", redact_uri(uri))),
            _ => {
                if matches!(a, "-a" | "--password" | "-u" | "--uri") {
                    next = Some(a);
                }
                out.push(a.to_string());
            }
        }
    }
    out
}

/// `redis://user:secret@host` as `redis://user:***@host`; a URI without a password as it is.
fn redact_uri(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once("://") else { return uri.to_string() };
    let Some((userinfo, host)) = rest.rsplit_once('@') else { return uri.to_string() };
    let hidden = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        // redis://secret@host: a password alone.
        None => "***".to_string(),
    };
    format!("{scheme}://{hidden}@{host}")
}

/// The whole document of a run (or of a merge), without a `command_line` (its writer adds the
/// one it was given).
pub fn document(
    config: doc::RunConfig,
    server: doc::Server,
    interrupted: bool,
    tests: Vec<doc::Test>,
) -> Document {
    Document {
        schema: SCHEMA.into(),
        tool: doc::Tool { name: "respbench".into(), version: env!("CARGO_PKG_VERSION").into() },
        config,
        server,
        interrupted,
        tests,
        ..Document::default()
    }
}

/// Writes a document, pretty-printed, to `path` or to stdout for `-`.
pub fn write_json(path: &str, doc: &Document) -> Result<(), Error> {
    let text = doc.to_text()?;
    if path == "-" {
        let mut o = io::stdout().lock();
        o.write_all(text.as_bytes()).and_then(|_| o.flush()).map_err(|e| Error::json(path, e))
    } else {
        // Whole or not at all: see `files`.
        crate::files::write_atomically(std::path::Path::new(path), text.as_bytes())
            .map_err(|e| Error::json(path, e))
    }
}

/// A parsed JSON value as a document, its `schema` checked first.
pub fn document_of(value: Value) -> Result<Document, Error> {
    let schema = value.get("schema").and_then(Value::as_str);
    if !schema.is_some_and(|s| s == SCHEMA || READS_ALSO.contains(&s)) {
        return Err(Error::Document(schema_refused(schema)));
    }
    serde_json::from_value(value).map_err(|e| Error::Document(format!("not a respbench document: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_stay_out_of_the_command_line() {
        let got = command_line(&[
            "-a",
            "s3cret",
            "--password=x",
            "-u",
            "redis://bench:pw@h:1",
            "--uri=redis://pw@h",
            "-c",
            "5",
        ]);
        assert_eq!(
            got,
            ["-a", "***", "--password=***", "-u", "redis://bench:***@h:1", "--uri=redis://***@h", "-c", "5"]
        );
        assert_eq!(redact_uri("redis://h:6379/0"), "redis://h:6379/0");
    }
}
