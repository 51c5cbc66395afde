//! memtier_benchmark's `--json-out-file`: `configuration`, `run information` and a section per
//! `ALL STATS` (or `BEST RUN RESULTS`, `WORST RUN RESULTS`, `AGGREGATED AVERAGE RESULTS (N
//! runs)`), each with `Runtime`, an object per row and `Totals` in memtier's field names and
//! number formats, and the latency distributions unless `--hide-histogram`. respbench's own
//! figures for each run (its `--json` test object: exact counts, errors, the verdict) are under
//! `"respbench"`, a key memtier does not write.

use respbench_session::memtier::{ConfigValue, Memtier};

use super::{table, Figures, Run, Section};

/// A JSON value whose objects keep their keys' order, numbers kept as memtier formats them.
enum J {
    /// A number, already formatted (`12.50`).
    Num(String),
    /// A string.
    Str(String),
    /// An object, in order.
    Obj(Vec<(String, J)>),
    /// An array.
    Arr(Vec<J>),
    /// JSON text made elsewhere, inserted as it is.
    Raw(String),
}

impl J {
    /// The text, indented by `depth`.
    fn render(&self, depth: usize, out: &mut String) {
        let pad = |d: usize| "\t".repeat(d);
        match self {
            J::Num(n) => out.push_str(n),
            J::Str(s) => out.push_str(&serde_json::Value::String(s.clone()).to_string()),
            J::Raw(r) => out.push_str(r),
            J::Obj(fields) if fields.is_empty() => out.push_str("{}"),
            J::Obj(fields) => {
                out.push_str("{\n");
                for (k, (key, v)) in fields.iter().enumerate() {
                    out.push_str(&pad(depth + 1));
                    out.push_str(&serde_json::Value::String(key.clone()).to_string());
                    out.push_str(": ");
                    v.render(depth + 1, out);
                    out.push_str(if k + 1 < fields.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(depth));
                out.push('}');
            }
            J::Arr(items) if items.is_empty() => out.push_str("[]"),
            J::Arr(items) => {
                out.push_str("[\n");
                for (k, v) in items.iter().enumerate() {
                    out.push_str(&pad(depth + 1));
                    v.render(depth + 1, out);
                    out.push_str(if k + 1 < items.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(depth));
                out.push(']');
            }
        }
    }
}

/// A number with `decimals` decimals; a value that is not finite is 0, as JSON has no NaN.
fn num(v: f64, decimals: usize) -> J {
    J::Num(format!("{:.decimals$}", if v.is_finite() { v } else { 0.0 }))
}

/// A rate of KB, `null` where the row's bytes are not known ([`Figures::bytes_known`]).
fn kb(f: &Figures, v: f64) -> J {
    if f.bytes_known() {
        num(v, 2)
    } else {
        J::Num("null".into())
    }
}

/// A whole number.
fn int(v: u64) -> J {
    J::Num(v.to_string())
}

/// A field.
fn field(key: &str, v: J) -> (String, J) {
    (key.to_string(), v)
}

/// A percentile's key as memtier writes it: `p` and the percentile with `decimals` decimals,
/// cut to six characters (memtier's buffer): `p50.00`, `p99.90`, `p99.99`.
pub fn percentile_key(p: f64, decimals: usize) -> String {
    format!("p{p:.decimals$}").chars().take(6).collect()
}

/// One row's object (memtier's `result_print_to_json`).
fn row(m: &Memtier, f: &Figures, time_serie: J, moved_ask: Option<(f64, f64)>, connection_errors: u64) -> J {
    let mut o = vec![
        field("Count", int(f.count)),
        field("Ops/sec", num(f.ops_sec(), 2)),
        field("Hits/sec", num(f.hits_sec(), 2)),
        field("Misses/sec", num(f.misses_sec(), 2)),
    ];
    if let Some((moved, ask)) = moved_ask {
        o.push(field("MOVED/sec", num(moved, 2)));
        o.push(field("ASK/sec", num(ask, 2)));
    }
    o.extend([
        field("Connection Errors/sec", num(f.per_sec(connection_errors as f64), 2)),
        field("Connection Errors", int(connection_errors)),
        field("Latency", num(f.avg_ms(), 3)),
        field("Average Latency", num(f.avg_ms(), 3)),
        field("Accumulated Latency", int(f.accumulated_ms())),
        field("Min Latency", num(f.min_ms(), 3)),
        field("Max Latency", num(f.max_ms(), 3)),
        field("KB/sec", kb(f, f.kb_sec())),
        field("KB/sec RX/TX", kb(f, f.kb_sec())),
        field("KB/sec RX", kb(f, f.kb_sec_rx())),
        field("KB/sec TX", kb(f, f.kb_sec_tx())),
        field("Time-Serie", time_serie),
        field(
            "Percentile Latencies",
            J::Obj(
                m.percentiles
                    .iter()
                    .map(|&p| field(&percentile_key(p, 3), num(f.percentile_ms(p), 3)))
                    .chain([field(
                        "Histogram log format",
                        J::Obj(vec![field("Compressed Histogram", J::Str(compressed(f)))]),
                    )])
                    .collect(),
            ),
        ),
    ]);
    J::Obj(o)
}

/// The row's latencies as memtier's `Compressed Histogram`: HdrHistogram's V2 deflate encoding
/// in base64, in microseconds as memtier records them (empty if it cannot be encoded).
fn compressed(f: &Figures) -> String {
    crate::codec::encode_histogram(&f.latency).unwrap_or_default()
}

/// The run's seconds (kept for the total only): memtier's `Time-Serie`, keyed by the second.
fn time_serie(m: &Memtier, run: &Run<'_>) -> J {
    let s = &run.result.stats;
    J::Obj(
        s.series
            .iter()
            .enumerate()
            .map(|(i, sec)| {
                let mut o = vec![field("Count", int(sec.requests))];
                if sec.requests > 0 {
                    o.push(field("Max Latency", num(sec.max as f64 / 1000.0, 3)));
                    // The second's summary keeps p50, p99 and p99.9.
                    for &p in &m.percentiles {
                        let v = [(50.0, sec.p50), (99.0, sec.p99), (99.9, sec.p999)]
                            .iter()
                            .find(|(q, _)| *q == p)
                            .map(|(_, v)| *v);
                        if let Some(v) = v {
                            o.push(field(&percentile_key(p, 2), num(v as f64 / 1000.0, 3)));
                        }
                    }
                }
                field(&i.to_string(), J::Obj(o))
            })
            .collect(),
    )
}

/// One section's object: `Runtime`, the rows, `Totals`, and the distributions.
fn section(m: &Memtier, s: &Section<'_, '_>, interrupted: bool, epoch_us: u64) -> J {
    let run = s.run();
    let stats = &run.result.stats;
    let start_ms = epoch_us.saturating_add(stats.start.as_micros()) / 1000;
    let end_ms = epoch_us.saturating_add(stats.end.as_micros()) / 1000;
    let mut o = vec![field(
        "Runtime",
        J::Obj(vec![
            field("Start time", int(start_ms)),
            field("Finish time", int(end_ms)),
            field("Total duration", int(end_ms.saturating_sub(start_ms))),
            field("Time unit", J::Str("MILLISECONDS".into())),
            field("Interrupted", J::Str(if interrupted { "true" } else { "false" }.into())),
        ]),
    )];
    let cluster = m.cluster.then_some((0.0, 0.0));
    for (name, f) in &run.rows {
        o.push(field(name, row(m, f, J::Obj(Vec::new()), cluster, 0)));
    }
    let redirects = stats.redirects;
    let moved_ask = m
        .cluster
        .then(|| (run.totals.per_sec(redirects.moved as f64), run.totals.per_sec(redirects.ask as f64)));
    let failed = stats.failed_clients;
    o.push(field("Totals", row(m, &run.totals, time_serie(m, run), moved_ask, failed)));
    if !m.hide_histogram {
        for (name, f) in table::distribution_groups(run) {
            let steps = table::steps(f)
                .into_iter()
                .map(|(msec, percent)| {
                    J::Obj(vec![field("<=msec", num(msec, 3)), field("percent", num(percent, 3))])
                })
                .collect();
            o.push(field(&name, J::Arr(steps)));
        }
    }
    J::Obj(o)
}

/// memtier's `configuration` object.
fn configuration(m: &Memtier) -> J {
    J::Obj(
        m.configuration
            .iter()
            .map(|(k, v)| {
                field(
                    k,
                    match v {
                        ConfigValue::Number(n) => int(*n),
                        ConfigValue::Text(t) => J::Str(t.clone()),
                        ConfigValue::Float(x) => num(*x, 6),
                        ConfigValue::Null => J::Num("null".into()),
                    },
                )
            })
            .collect(),
    )
}

/// The whole document.
pub fn document(
    m: &Memtier,
    sections: &[(String, Section<'_, '_>)],
    interrupted: bool,
    epoch_us: u64,
) -> Result<String, crate::error::Error> {
    let (n, what) = match (m.requests, m.test_time) {
        (Some(r), _) => (r, "Requests per client"),
        (None, t) => (t.unwrap_or(0), "Seconds"),
    };
    let mut top = vec![
        field("configuration", configuration(m)),
        field(
            "run information",
            J::Obj(vec![
                field("Threads", int(m.threads)),
                field("Connections per thread", int(m.clients)),
                field(what, int(n)),
                field("Format version", int(2)),
            ]),
        ),
    ];
    for (title, s) in sections {
        top.push(field(title, section(m, s, interrupted, epoch_us)));
    }
    // respbench's own figures of each section's run, as its --json writes a test.
    let mut own = Vec::new();
    for (title, s) in sections {
        if let Section::Run(r) = s {
            let t = crate::convert::test(r.result, epoch_us)?;
            let text = serde_json::to_string(&t)
                .map_err(|e| crate::error::Error::Encode(format!("cannot encode the JSON: {e}")))?;
            own.push(field(title, J::Raw(text)));
        }
    }
    top.push(field("respbench", J::Obj(own)));
    let mut out = String::new();
    J::Obj(top).render(0, &mut out);
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_keys_are_cut_as_memtiers() {
        assert_eq!(percentile_key(50.0, 3), "p50.00");
        assert_eq!(percentile_key(99.9, 3), "p99.90");
        assert_eq!(percentile_key(99.99, 3), "p99.99");
        assert_eq!(percentile_key(100.0, 3), "p100.0");
        assert_eq!(percentile_key(50.0, 2), "p50.00");
    }

    #[test]
    fn the_compressed_histogram_is_memtiers_encoding() {
        // memtier_benchmark 2.x's `Compressed Histogram` of 800 requests (microseconds, 8 to
        // 263), read by the codec that writes respbench's.
        let theirs =
            "HISTFAAAADl4nJNpmSzMwMAgyQABTFCaC0QoH3ZjsP8AEWAUW8Z4jO0Esx8bEwcjCyMLCzMLJxMzEzcLAOE/Bq4=";
        let h = crate::codec::decode_histogram(theirs).unwrap();
        assert_eq!(h.len(), 800);
        assert_eq!((h.min(), h.max()), (8, 263));
        let mut f = super::super::Figures::empty(1.0).unwrap();
        f.latency.record_n(120, 3).unwrap();
        let ours = crate::codec::decode_histogram(&compressed(&f)).unwrap();
        assert!(compressed(&f).starts_with("HISTFAAA"));
        assert_eq!((ours.len(), ours.max()), (3, f.latency.max()));
    }
}
