//! A scenario's client groups (`respbench run FILE.toml`) in the text outputs, after their test's
//! own report: a table (verbose), a line each (`-q`) or a row each (`--csv`), named
//! `TEST/GROUP` on the lines and rows so that redis-benchmark's parsers read them as tests.

use std::io::{self, Write};

use respbench_session::config::Output;
use respbench_session::result::TestResult;

use crate::hdr::{finite, mean, ms, value_at_percentile};
use crate::shared::none_succeeded;
use crate::text::{self, TestLine};

/// Writes `test`'s groups in the style of `output` (nothing for a test of one group).
/// `percentiles`: `--print-percentiles`.
pub fn write(output: Output, test: &TestResult, percentiles: &[f64], out: &mut impl Write) -> io::Result<()> {
    if test.groups.is_empty() {
        return Ok(());
    }
    if output == Output::Verbose {
        return write_table(test, out);
    }
    for g in &test.groups {
        let title = format!("{}/{}", test.name, g.name);
        let r = TestLine::of(g, &title, percentiles);
        match output {
            Output::Csv => text::write_csv_row(&r, None, g.step.as_ref(), out)?,
            _ => text::write_quiet(&r, out)?,
        }
    }
    if output != Output::Csv {
        for (g, verdict) in test.groups.iter().filter_map(|g| Some((g, slo_line(g)?))) {
            writeln!(out, "{}/{}: {verdict}", test.name, g.name)?;
        }
    }
    Ok(())
}

/// A group's objectives and their verdict: `objective p99<=2ms met (p99 1.20 ms <= 2ms)`.
pub fn slo_line(g: &TestResult) -> Option<String> {
    let j = g.slo.as_ref()?;
    let given: Vec<&str> = j.objectives.iter().map(|o| o.text.as_str()).collect();
    Some(format!("objective {} {}", given.join(","), j.text()))
}

/// The lines of the groups whose objectives `test` missed (`TEST/GROUP: objective … missed: …`).
pub fn missed(test: &TestResult) -> impl Iterator<Item = String> + '_ {
    let failed = test.groups.iter().filter(|g| g.slo.as_ref().is_some_and(|j| !j.met()));
    failed.filter_map(|g| Some(format!("{}/{}: {}", test.name, g.name, slo_line(g)?)))
}

/// The verbose report's table of groups: each one's requests, rate and latency.
fn write_table(test: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let width = test.groups.iter().map(|g| g.name.len()).max().unwrap_or(0).max(5);
    writeln!(out, "  groups (each its own connections; latency in msec):")?;
    writeln!(
        out,
        "    {:<width$} {:>10} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "group", "requests", "rps", "avg", "p50", "p99", "p99.9", "max"
    )?;
    for g in &test.groups {
        let s = &g.stats;
        let target = match (g.stats.ramp, g.target_rps) {
            (Some(r), Some(t)) => format!("  (open loop ramping {} to {}/s, {t}/s on average)", r.from, r.to),
            (None, Some(t)) => format!("  (open loop at {t}/s)"),
            _ => String::new(),
        };
        if none_succeeded(s) {
            writeln!(out, "    {:<width$} {:>10}  no request succeeded{target}", g.name, s.requests)?;
            continue;
        }
        let h = &s.latency;
        writeln!(
            out,
            "    {:<width$} {:>10} {:>12.2} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}{target}",
            g.name,
            s.requests,
            finite(s.rps()),
            finite(mean(h)) / 1000.0,
            ms(value_at_percentile(h, 50.0)),
            ms(value_at_percentile(h, 99.0)),
            ms(value_at_percentile(h, 99.9)),
            ms(h.max()),
        )?;
    }
    for (g, verdict) in test.groups.iter().filter_map(|g| Some((g, slo_line(g)?))) {
        writeln!(out, "    {}: {verdict}", g.name)?;
    }
    for g in &test.groups {
        if let Some(c) = &g.stats.cache {
            crate::cache::write(c, &format!(" '{}'", g.name), "  ", out)?;
        }
    }
    writeln!(out)
}
