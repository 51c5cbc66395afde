//! memtier_benchmark's `--show-config`: its configuration as `name = value` lines on stdout,
//! before the results, in memtier's order and words (`config_print` in memtier_benchmark.cpp:
//! flags `yes`/`no`, ranges `MIN-MAX`, a name not given `(null)`), from the same settings as
//! the JSON's `configuration` object.

use respbench_session::memtier::{ConfigValue, Memtier};

/// The keys `config_print` writes after the JSON's first six, in its order: the TLS block
/// comes before `out_file`, `key_zipf_exp` is left out and `json-out-file` comes last but one.
const ORDER: &[&str] = &[
    "server",
    "port",
    "uri",
    "unix socket",
    "address family",
    "protocol",
    "tls",
    "cert",
    "key",
    "cacert",
    "tls_skip_verify",
    "sni",
    "out_file",
    "client_stats",
    "run_count",
    "debug",
    "requests",
    "rate_limit",
    "clients",
    "threads",
    "test_time",
    "ratio",
    "pipeline",
    "data_size",
    "data_offset",
    "random_data",
    "data_size_range",
    "data_size_list",
    "data_size_pattern",
    "expiry_range",
    "data_import",
    "data_verify",
    "verify_only",
    "generate_keys",
    "key_prefix",
    "key_minimum",
    "key_maximum",
    "key_pattern",
    "key_stddev",
    "key_median",
    "reconnect_interval",
    "connection_timeout",
    "thread_conn_start_min_jitter_micros",
    "thread_conn_start_max_jitter_micros",
    "multi_key_get",
    "authenticate",
    "select-db",
    "no-expiry",
    "wait-ratio",
    "num-slaves",
    "wait-timeout",
    "json-out-file",
    "print-all-runs",
];

/// The flags, which `config_print` writes as `yes`/`no` where the JSON has `"true"`/`"false"`.
const FLAGS: &[&str] = &[
    "tls",
    "tls_skip_verify",
    "random_data",
    "data_verify",
    "verify_only",
    "generate_keys",
    "no-expiry",
    "print-all-runs",
];

/// The ranges, which `config_print` writes as `MIN-MAX` where the JSON has `MIN:MAX`.
const RANGES: &[&str] = &["data_size_range", "expiry_range", "num-slaves"];

/// memtier's `--show-config` text for `m`.
pub fn text(m: &Memtier) -> String {
    let mut out = String::new();
    for &key in ORDER {
        let value = match key {
            "json-out-file" => m.json_out_file.clone().unwrap_or_else(|| "(null)".into()),
            _ => match m.configuration.iter().find(|(k, _)| *k == key).map(|(_, v)| v) {
                Some(ConfigValue::Number(n)) => n.to_string(),
                Some(ConfigValue::Float(x)) => format!("{x:.6}"),
                Some(ConfigValue::Text(t)) if FLAGS.contains(&key) => {
                    (if t == "true" { "yes" } else { "no" }).into()
                }
                Some(ConfigValue::Text(t)) if RANGES.contains(&key) => t.replace(':', "-"),
                Some(ConfigValue::Text(t)) => t.clone(),
                Some(ConfigValue::Null) | None => "(null)".into(),
            },
        };
        out.push_str(&format!("{key} = {value}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_are_memtiers() {
        let args: Vec<String> = "-p 16399 -n 1 -c 1 -t 1 --show-config --data-size-range 8-64"
            .split(' ')
            .map(str::to_string)
            .collect();
        let m = respbench_session::memtier::translate(&args).unwrap().memtier;
        assert!(m.show_config);
        let t = text(&m);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), ORDER.len());
        // As memtier_benchmark 2.x prints them for this line.
        for want in [
            "server = localhost",
            "port = 16399",
            "unix socket = (null)",
            "tls = no",
            "out_file = (null)",
            "requests = 1",
            "data_size_range = 8-64",
            "data_size_pattern = R",
            "expiry_range = 0-0",
            "key_stddev = 0.000000",
            "num-slaves = 0-0",
            "wait-timeout = 0-0",
            "json-out-file = (null)",
            "print-all-runs = no",
        ] {
            assert!(lines.contains(&want), "{want}:\n{t}");
        }
        assert_eq!(lines[6], "tls = no");
        assert_eq!(lines[lines.len() - 1], "print-all-runs = no");
    }
}
