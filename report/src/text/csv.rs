//! redis-benchmark's CSV (`--csv`): the header and its columns, a test's row, and the rows a
//! delivery test and a ramp add after it.

use super::*;

/// The header of CSV output, printed once before the rows.
pub const CSV_HEADER: &str = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"";

/// CSV: a delivery test's row after its own: `"delivery"`, the test, subscribers (or waiting
/// connections), published (pushed), delivered (taken), missing, duplicated, out of order, and
/// the delivery latency's p50, p99, p99.9 and max (ms; empty when nothing arrived). Nothing for
/// another test.
pub fn write_delivery_csv(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(d) = &t.stats.delivery else { return Ok(()) };
    let r = &d.received;
    let latency = if r.latency.is_empty() {
        "\"\",\"\",\"\",\"\"".to_string()
    } else {
        let at = |p: f64| ms(value_at_percentile(&r.latency, p));
        format!("\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"", at(50.0), at(99.0), at(99.9), ms(r.latency.max()))
    };
    writeln!(
        out,
        "\"delivery\",{},\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",{latency}",
        quoted(&t.name),
        d.subscribers,
        d.published,
        r.delivered,
        d.missing,
        r.duplicated,
        r.out_of_order
    )
}

/// The columns `--rps` adds to [`CSV_HEADER`].
pub const CSV_OPEN_LOOP_COLUMNS: &str =
    ",\"target_rps\",\"service_p50_latency_ms\",\"service_p99_latency_ms\"";

/// The columns a sweep (`-d`, `-c`, `-P` or `--threads` lists) adds, after the open loop's.
pub const CSV_SWEEP_COLUMNS: &str = ",\"datasize\",\"clients\",\"pipeline\",\"threads\"";

/// The columns every row ends with, after any others (so redis-benchmark's and the others keep
/// their places): failed requests (error replies and requests lost with a connection),
/// requests abandoned at the end, open-loop arrivals never sent, and the verdict (`server`,
/// `client`, `neither`, `machine`, `unknown`; empty on a mix's command rows, judged in total).
pub const CSV_ACCOUNT_COLUMNS: &str = ",\"errors\",\"abandoned\",\"unsent\",\"bottleneck\"";

/// Writes a test's CSV row (after [`CSV_HEADER`]); a `"` in the title is doubled, so the row stays
/// valid CSV (redis-benchmark leaves it as is). An open-loop step adds the
/// [`CSV_OPEN_LOOP_COLUMNS`].
pub fn write_csv_row(
    r: &TestLine,
    open_loop: Option<&TestResult>,
    step: Option<&StepValues>,
    out: &mut impl Write,
) -> io::Result<()> {
    write!(out, "{}", csv_figures(r.title, r.stats))?;
    if let Some(e) = open_loop {
        let (p50, p99) = service(&e.stats);
        // A mix's commands share the total's target, shown on its row only.
        let target = e.target_rps.map(|t| t.to_string()).unwrap_or_default();
        write!(out, ",\"{target}\",\"{p50:.3}\",\"{p99:.3}\"")?;
    }
    if let Some(step) = step {
        for k in ["datasize", "clients", "pipeline", "threads"] {
            write!(out, ",\"{}\"", step.get(k).unwrap_or_default())?;
        }
    }
    let s = r.stats;
    let side = r.verdict.map_or("", |v| v.side.name());
    writeln!(out, ",\"{}\",\"{}\",\"{}\",\"{side}\"", s.error_replies() + s.lost, s.abandoned, s.unsent)
}

/// A test's first eight CSV columns, redis-benchmark's: its title (quoted, a `"` doubled), its
/// rate and latency summary; empty figures when no request succeeded (the errors column says
/// why).
pub(super) fn csv_figures(title: &str, s: &Stats) -> String {
    let title = quoted(title);
    if none_succeeded(s) {
        return format!("{title},\"\",\"\",\"\",\"\",\"\",\"\",\"\"");
    }
    let sum = Summary::of(&s.latency);
    format!(
        "{title},\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"",
        finite(s.rps()),
        sum.avg,
        sum.min,
        sum.p50,
        sum.p95,
        sum.p99,
        sum.max
    )
}

/// The columns `--replay` adds to a CSV row: its fidelity, on the total's row (empty on its
/// commands' rows).
pub const CSV_REPLAY_COLUMNS: &str = ",\"sent_on_time_share\",\"lateness_p99_ms\"";

/// [`CSV_REPLAY_COLUMNS`]' values for `e`.
pub fn csv_replay_columns(e: &TestResult) -> String {
    match (&e.replay, &e.stats.lateness) {
        (Some(f), Some(late)) => {
            format!(",\"{:.4}\",\"{:.3}\"", f.on_time_share(), ms(value_at_percentile(late, 99.0)))
        }
        _ => ",\"\",\"\"".to_string(),
    }
}

/// CSV: one row per `--ramp` step, after its test's (and its events'): `"ramp"`, the test, the
/// step's number, its clients, its target rate (empty in a closed loop), when it began and how
/// long it lasted (s), replies, error replies, replies per second, p50, p99 and p99.9 (ms), and
/// its bottleneck. Nothing without a ramp.
pub fn write_ramp_csv(e: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(r) = &e.ramp else { return Ok(()) };
    let title = quoted(&e.name);
    for (k, s) in r.steps.iter().enumerate() {
        let target = s.target_rps.map(|t| t.to_string()).unwrap_or_default();
        let side = s.verdict.as_ref().map_or("unknown", |v| v.side.name());
        writeln!(
            out,
            "\"ramp\",{title},\"{}\",\"{}\",\"{target}\",\"{:.3}\",\"{:.3}\",\"{}\",\"{}\",\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{side}\"",
            k + 1,
            s.clients,
            s.start_s,
            s.duration_s,
            s.requests,
            s.errors,
            finite(s.rps),
            ms(s.p50_us),
            ms(s.p99_us),
            ms(s.p999_us)
        )?;
    }
    Ok(())
}
