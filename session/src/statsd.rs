//! `--statsd HOST[:PORT]` with `--statsd-prefix`, `--statsd-label` and `--graphite-port`, and
//! memtier_benchmark's `--statsd-host`, `--statsd-port`, `--statsd-prefix`, `--statsd-run-label`
//! and `--graphite-port` read into them: where each second's figures go as StatsD datagrams and
//! the Graphite event annotations as HTTP POSTs (the output itself is respbench-report's
//! `sink::statsd`). The host is resolved when the outputs are checked, before connecting.

use crate::config::OptionError;
pub use crate::config::Statsd;

/// StatsD's port when none is given (memtier's default too).
pub const DEFAULT_PORT: u16 = 8125;

/// The metric names' first part when `--statsd-prefix` is not given.
pub const DEFAULT_PREFIX: &str = "respbench";

/// The run's label when `--statsd-label` is not given (memtier's default).
pub const DEFAULT_LABEL: &str = "default";

/// memtier's sanitizing: at most `most` bytes, each character that is not an ASCII letter or
/// digit, `_`, `-` (or one of `also`) replaced by `_`.
fn sanitize(text: &str, also: &[char], most: usize) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' || also.contains(&c) { c } else { '_' })
        .take(most)
        .collect()
}

/// A name's part (a scenario group's) sanitized as memtier sanitizes the label.
pub fn sanitize_label(text: &str) -> String {
    sanitize(text, &[], 127)
}

/// The options as given: `--statsd HOST[:PORT]` (`[IPV6]:PORT` with brackets), the prefix
/// (default `respbench`; empty for none), the label (default `default`) and
/// `--graphite-port`; `None` without `--statsd`, and the other three refused then.
pub fn parse(
    statsd: Option<&str>,
    prefix: Option<&str>,
    label: Option<&str>,
    graphite_port: Option<u16>,
) -> Result<Option<Statsd>, OptionError> {
    let Some(text) = statsd else {
        let given = [("--statsd-prefix", prefix.is_some()), ("--statsd-label", label.is_some())]
            .into_iter()
            .chain([("--graphite-port", graphite_port.is_some())])
            .find(|(_, given)| *given);
        return match given {
            Some((option, _)) => Err(OptionError::Refused(format!("{option} needs --statsd HOST[:PORT]"))),
            None => Ok(None),
        };
    };
    let bad = |why: &str| OptionError::Invalid { option: "--statsd", value: text.into(), why: why.into() };
    const WHY: &str = "expected HOST or HOST:PORT (port 1 to 65535; [::1]:8125 for IPv6)";
    let (host, port) = match text.rsplit_once(':') {
        // A host with a port, read as every HOST:PORT option reads it.
        Some((h, _)) if !h.contains(':') || h.ends_with(']') => match crate::syntax::host_port(text) {
            Ok(respbench_core::Endpoint::Tcp { host, port }) => (host, port),
            _ => return Err(bad(WHY)),
        },
        // No port (an IPv6 address without brackets has colons of its own).
        _ => (
            text.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(text).to_string(),
            DEFAULT_PORT,
        ),
    };
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '/') {
        return Err(bad(WHY));
    }
    if graphite_port == Some(0) {
        return Err(OptionError::Invalid {
            option: "--graphite-port",
            value: "0".into(),
            why: "a port from 1 to 65535".into(),
        });
    }
    Ok(Some(Statsd {
        host,
        port,
        // memtier keeps 255 bytes of `PREFIX.LABEL.` and 127 of the label.
        prefix: sanitize(prefix.unwrap_or(DEFAULT_PREFIX), &['.'], 120),
        label: sanitize_label(label.unwrap_or(DEFAULT_LABEL)),
        graphite_port,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Result<Statsd, String> {
        parse(Some(text), None, None, None).map(Option::unwrap).map_err(|e| e.to_string())
    }

    #[test]
    fn hosts_and_ports_of_every_form() {
        let s = one("stats.example:9125").unwrap();
        assert_eq!((s.host.as_str(), s.port), ("stats.example", 9125));
        assert_eq!(one("127.0.0.1").unwrap().port, DEFAULT_PORT);
        let v6 = one("[::1]:9000").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 9000));
        assert_eq!(one("::1").unwrap().host, "::1");
        for bad in ["", "host:0", "host:x", ":8125", "a b:1", "host:70000"] {
            let e = one(bad).unwrap_err();
            assert!(e.starts_with(&format!("invalid value '{bad}' for --statsd")), "{bad}: {e}");
        }
    }

    #[test]
    fn names_are_sanitized_as_memtier_does() {
        let s = parse(Some("h"), Some("team.redis/x"), Some("run 7!"), Some(8080)).unwrap().unwrap();
        assert_eq!(s.name_start(), "team.redis_x.run_7_.");
        assert_eq!(s.graphite_port, Some(8080));
        assert_eq!(one("h").unwrap().name_start(), "respbench.default.");
        assert_eq!(parse(Some("h"), Some(""), None, None).unwrap().unwrap().name_start(), "default.");
        let long = "x".repeat(300);
        assert_eq!(parse(Some("h"), None, Some(&long), None).unwrap().unwrap().label.len(), 127);
    }

    #[test]
    fn the_others_need_statsd() {
        assert_eq!(parse(None, None, None, None).unwrap(), None);
        let e = parse(None, None, Some("x"), None).unwrap_err().to_string();
        assert_eq!(e, "--statsd-label needs --statsd HOST[:PORT]");
        let e = parse(None, None, None, Some(80)).unwrap_err().to_string();
        assert_eq!(e, "--graphite-port needs --statsd HOST[:PORT]");
        assert!(parse(Some("h"), None, None, Some(0)).is_err());
    }
}
