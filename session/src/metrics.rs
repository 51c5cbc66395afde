//! `--metrics HOST:PORT`, memtier_benchmark's `--prometheus-port PORT` and `--metrics-linger`:
//! where the live metrics endpoint listens and how long it waits for a last scrape, checked
//! once from the options (the endpoint itself is an output: respbench-report's `metrics`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

pub use crate::config::Metrics;
use crate::config::OptionError;

/// How long the endpoint stays up after the run by default, for one scrape of the final
/// figures (`--metrics-linger`).
pub const DEFAULT_LINGER: Duration = Duration::from_secs(15);

/// The most `--metrics-linger` takes: a scraper that never comes must not hold a finished run
/// for long.
pub const MAX_LINGER: Duration = Duration::from_secs(3600);

/// The endpoint the options ask for: `--metrics HOST:PORT` (`:PORT` for 127.0.0.1, as
/// memtier_benchmark's `--prometheus-port` binds: the endpoint has no authentication, so
/// `0.0.0.0:PORT` must be asked for to serve other machines; `[::1]:PORT` for IPv6), or `--prometheus-port PORT` on 127.0.0.1; `linger` is
/// `--metrics-linger` when given (`15s`, `500ms`, `0`); refused with `-I` (`idle`). `None`
/// when neither option is.
pub fn parse(
    metrics: Option<&str>,
    prometheus_port: Option<u16>,
    linger: Option<&str>,
    idle: bool,
) -> Result<Option<Metrics>, OptionError> {
    if idle && (metrics.is_some() || prometheus_port.is_some()) {
        let option = if metrics.is_some() { "--metrics" } else { "--prometheus-port" };
        return Err(OptionError::Conflict(option, "-I", "idle mode measures nothing to serve"));
    }
    let linger = linger.map(|l| crate::syntax::duration("--metrics-linger", l)).transpose()?;
    let bad = |option: &'static str, value: &str, why: &str| OptionError::Invalid {
        option,
        value: value.to_string(),
        why: why.to_string(),
    };
    let (addr, given) = match (metrics, prometheus_port) {
        (Some(_), Some(_)) => {
            return Err(OptionError::Conflict(
                "--metrics",
                "--prometheus-port",
                "give one (--metrics HOST:PORT names the host too)",
            ))
        }
        (None, None) => {
            return match linger {
                Some(_) => {
                    Err(OptionError::Refused("--metrics-linger needs --metrics or --prometheus-port".into()))
                }
                None => Ok(None),
            }
        }
        (None, Some(0)) => return Err(bad("--prometheus-port", "0", "a port from 1 to 65535")),
        (None, Some(port)) => {
            (SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port), format!("--prometheus-port {port}"))
        }
        (Some(text), None) => {
            (address(text).map_err(|why| bad("--metrics", text, why))?, format!("--metrics {text}"))
        }
    };
    let linger = linger.unwrap_or(DEFAULT_LINGER);
    if linger > MAX_LINGER {
        return Err(OptionError::Refused(format!(
            "--metrics-linger must be at most {} s",
            MAX_LINGER.as_secs()
        )));
    }
    Ok(Some(Metrics { addr, given, linger }))
}

/// `HOST:PORT`, `:PORT` (127.0.0.1) or `[IPV6]:PORT` as one address to bind; a host
/// name is resolved once (its first address).
fn address(text: &str) -> Result<SocketAddr, &'static str> {
    const WHY: &str = "expected HOST:PORT (127.0.0.1:9100 or :9100 for this machine only, 0.0.0.0:9100 for every interface, [::1]:9100)";
    let (host, port) = text.rsplit_once(':').ok_or(WHY)?;
    let port: u16 = port.parse().map_err(|_| WHY)?;
    if port == 0 {
        return Err("the port must be 1 to 65535");
    }
    if host.is_empty() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    if let Ok(ip) = bare.unwrap_or(host).parse::<IpAddr>() {
        // An IPv6 address needs its brackets, or the port would be ambiguous.
        if ip.is_ipv6() && bare.is_none() {
            return Err(WHY);
        }
        return Ok(SocketAddr::new(ip, port));
    }
    if bare.is_some() || host.contains(|c: char| c.is_whitespace() || c == '/') {
        return Err(WHY);
    }
    (host, port).to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or("the host name does not resolve")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> Result<SocketAddr, String> {
        parse(Some(text), None, None, false).map(|m| m.unwrap().addr).map_err(|e| e.to_string())
    }

    #[test]
    fn addresses_of_every_form() {
        assert_eq!(addr("127.0.0.1:9100").unwrap(), "127.0.0.1:9100".parse().unwrap());
        // A bare port is this machine only: the endpoint has no authentication.
        assert_eq!(addr(":9100").unwrap(), "127.0.0.1:9100".parse().unwrap());
        assert_eq!(addr("0.0.0.0:9100").unwrap(), "0.0.0.0:9100".parse().unwrap());
        assert_eq!(addr("[::1]:9100").unwrap(), "[::1]:9100".parse().unwrap());
        assert_eq!(addr("localhost:9100").unwrap().port(), 9100);
        for bad in
            ["9100", "::1:9100", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:x", "[nope]:1", "a b:1", ""]
        {
            let e = addr(bad).unwrap_err();
            assert!(e.contains("--metrics"), "{bad}: {e}");
        }
    }

    #[test]
    fn prometheus_port_is_on_loopback_and_linger_defaults() {
        let m = parse(None, Some(9200), None, false).unwrap().unwrap();
        assert_eq!(m.addr, "127.0.0.1:9200".parse().unwrap());
        assert_eq!(m.linger, DEFAULT_LINGER);
        assert_eq!(parse(None, Some(9200), Some("0"), false).unwrap().unwrap().linger, Duration::ZERO);
        assert_eq!(parse(None, None, None, false).unwrap(), None);
    }

    #[test]
    fn conflicts_and_refusals_say_why() {
        let e = parse(Some(":1"), Some(2), None, false).unwrap_err().to_string();
        assert!(e.contains("--metrics and --prometheus-port conflict"), "{e}");
        let e = parse(None, None, Some("15s"), false).unwrap_err().to_string();
        assert!(e.contains("--metrics-linger needs --metrics"), "{e}");
        let e = parse(None, Some(0), None, false).unwrap_err().to_string();
        assert!(e.contains("--prometheus-port"), "{e}");
        let e = parse(None, Some(1), Some("3601s"), false).unwrap_err().to_string();
        assert!(e.contains("at most 3600 s"), "{e}");
        let e = parse(None, Some(1), Some("soon"), false).unwrap_err().to_string();
        assert!(e.contains("--metrics-linger"), "{e}");
        let e = parse(None, Some(1), None, true).unwrap_err().to_string();
        assert!(e.contains("--prometheus-port and -I conflict"), "{e}");
        let e = parse(None, Some(1), Some("soon"), false).unwrap_err().to_string();
        assert!(e.contains("--metrics-linger"), "{e}");
        let e = parse(None, Some(1), None, true).unwrap_err().to_string();
        assert!(e.contains("--prometheus-port and -I conflict"), "{e}");
    }
}
