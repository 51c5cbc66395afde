//! memtier_benchmark's `--statsd-host`, `--statsd-port`, `--statsd-prefix`, `--statsd-run-label`
//! and `--graphite-port`, read into respbench's `--statsd` options (see `crate::statsd`).

/// memtier's StatsD options as they come, read into respbench's by [`FromMemtier::args`].
#[derive(Default)]
pub struct FromMemtier {
    host: Option<String>,
    port: Option<u16>,
    prefix: Option<String>,
    label: Option<String>,
    graphite_port: Option<u16>,
}

impl FromMemtier {
    /// Takes memtier's option `name` (`statsd-host`, …) with its value, a port checked as
    /// memtier checks it.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), super::MemtierError> {
        let port = || {
            value.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| super::MemtierError::BadValue {
                option: format!("--{name}"),
                value: value.to_string(),
                why: format!("{name} must be a valid port number"),
            })
        };
        match name {
            "statsd-host" => self.host = Some(value.to_string()),
            "statsd-port" => self.port = Some(port()?),
            "statsd-prefix" => self.prefix = Some(value.to_string()),
            "statsd-run-label" => self.label = Some(value.to_string()),
            _ => self.graphite_port = Some(port()?),
        }
        Ok(())
    }

    /// respbench's options for them, with memtier's defaults (port 8125, prefix `memtier`,
    /// label `default`, annotations to port 8080 of the StatsD host); none without
    /// `--statsd-host`, as memtier then sends nothing.
    pub fn args(&self) -> Vec<String> {
        let Some(host) = &self.host else { return Vec::new() };
        // An IPv6 address takes brackets before its port.
        let host = if host.contains(':') { format!("[{host}]") } else { host.clone() };
        let port = self.port.unwrap_or(8125);
        [
            ("--statsd", format!("{host}:{port}")),
            ("--statsd-prefix", self.prefix.clone().unwrap_or_else(|| "memtier".into())),
            ("--statsd-label", self.label.clone().unwrap_or_else(|| "default".into())),
            ("--graphite-port", self.graphite_port.unwrap_or(8080).to_string()),
        ]
        .into_iter()
        .flat_map(|(o, v)| [o.to_string(), v])
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memtier_options_with_memtier_defaults() {
        let mut m = FromMemtier::default();
        assert!(m.args().is_empty());
        m.set("statsd-host", "10.0.0.5").unwrap();
        assert_eq!(
            m.args(),
            [
                "--statsd",
                "10.0.0.5:8125",
                "--statsd-prefix",
                "memtier",
                "--statsd-label",
                "default",
                "--graphite-port",
                "8080"
            ]
        );
        m.set("statsd-port", "9125").unwrap();
        m.set("statsd-run-label", "nightly").unwrap();
        m.set("graphite-port", "80").unwrap();
        assert_eq!(m.args()[1], "10.0.0.5:9125");
        assert_eq!((m.args()[5].as_str(), m.args()[7].as_str()), ("nightly", "80"));
        let e = m.set("statsd-port", "0").unwrap_err().to_string();
        assert_eq!(e, "--statsd-port '0': statsd-port must be a valid port number");
        assert!(m.set("graphite-port", "http").is_err());
    }
}
