//! memtier_benchmark's stdout: the run's shape (`4         Threads`), then for each section
//! (`ALL STATS`, or the best, worst and average runs) its table, a row per command and
//! `Totals`, in memtier's columns and widths, and the latency distribution unless
//! `--hide-histogram`.

use std::fmt::Write;

use respbench_session::memtier::Memtier;

use super::{Figures, Run};

/// memtier's percentile iteration: ticks per half distance of the latency distribution.
pub const GRANULARITY: u32 = 10;

/// The lines before the sections: threads, connections per thread, requests per client or
/// seconds.
pub fn header(m: &Memtier) -> String {
    let (n, what) = match (m.requests, m.test_time) {
        (Some(r), _) => (r, "Requests per client"),
        (None, t) => (t.unwrap_or(0), "Seconds"),
    };
    format!("{:<9} Threads\n{:<9} Connections per thread\n{n:<9} {what}\n", m.threads, m.clients)
}

/// A percentile's column title as memtier writes it: the fewest decimals (up to 3) that show
/// it, found in single precision as memtier does: `p50 Latency`, `p99.9 Latency`, and
/// `p99.990 Latency` for 99.99 (99.98999786 as a float; memtier issue #184 shows the same).
pub fn percentile_title(p: f64) -> String {
    let q = p as f32;
    let mut digits = 0;
    let mut frac = q.abs().fract();
    while frac.abs() > 0.001 && digits < 3 {
        frac *= 10.0;
        digits += 1;
        frac = frac.fract();
    }
    format!("p{q:.digits$} Latency")
}

/// One column: its width and its cells (title, rule, then a cell per row).
struct Column {
    cells: Vec<String>,
    width: usize,
}

impl Column {
    /// A right-aligned column of `width` with its title: cells are `%{width}s ` and the rule is
    /// `rule`.
    fn new(width: usize, title: &str, rule: &str) -> Column {
        Column { cells: vec![format!("{title:>width$} "), rule.to_string()], width }
    }

    /// A number with `decimals` (`%12.2f `).
    fn number(&mut self, v: f64, decimals: usize) {
        let w = self.width;
        self.cells.push(format!("{v:>w$.decimals$} "));
    }

    /// memtier's `---` for a figure that does not apply.
    fn none(&mut self) {
        let w = self.width;
        self.cells.push(format!("{:>w$} ", "---"));
    }
}

/// One section: its title, the `=` rule, the table, and the distribution unless hidden.
pub fn section(m: &Memtier, title: &str, run: &Run<'_>) -> String {
    let rows: Vec<(&str, &Figures)> =
        run.rows.iter().map(|(n, f)| (n.as_str(), f)).chain([("Totals", &run.totals)]).collect();
    // The type column: the longest command name (the row's name without its `s`), 6 at least.
    let name_len =
        if m.ratio_rows { 0 } else { run.rows.iter().map(|(n, _)| n.len() - 1).max().unwrap_or(0) };
    let type_width = name_len.max(6) + 1;
    let mut type_col = Column {
        cells: vec![format!("{:<type_width$} ", "Type"), "-".repeat(type_width + 1)],
        width: type_width,
    };
    for (name, _) in &rows {
        type_col.cells.push(format!("{name:<type_width$} "));
    }
    let is_wait = |name: &str| m.ratio_rows && name == "Waits";
    let sampled = |name: &str, f: &Figures| !(m.ratio_rows && name != "Totals" && f.latency.is_empty());
    let mut columns = vec![type_col];
    let mut ops = Column::new(12, "Ops/sec", "-------------");
    for (_, f) in &rows {
        ops.number(f.ops_sec(), 2);
    }
    columns.push(ops);
    if m.ratio_rows {
        let mut hits = Column::new(12, "Hits/sec", "-------------");
        let mut misses = Column::new(12, "Misses/sec", "-------------");
        for (_, f) in &rows {
            if f.hits_apply {
                hits.number(f.hits_sec(), 2);
                misses.number(f.misses_sec(), 2);
            } else {
                hits.none();
                misses.none();
            }
        }
        columns.push(hits);
        columns.push(misses);
    }
    if m.cluster {
        let redirects = run.result.stats.redirects;
        for (title, n) in [("MOVED/sec", redirects.moved), ("ASK/sec", redirects.ask)] {
            let mut c = Column::new(12, title, "-------------");
            for (name, f) in &rows {
                // respbench counts redirects for the whole run, not per command.
                if *name == "Totals" {
                    c.number(f.per_sec(n as f64), 2);
                } else {
                    c.none();
                }
            }
            columns.push(c);
        }
    }
    let mut avg = Column::new(15, "Avg. Latency", "----------------");
    for (name, f) in &rows {
        if sampled(name, f) {
            avg.number(f.avg_ms(), 5);
        } else {
            avg.none();
        }
    }
    columns.push(avg);
    for &p in &m.percentiles {
        let mut c = Column::new(15, &percentile_title(p), "----------------");
        for (name, f) in &rows {
            if sampled(name, f) {
                c.number(f.percentile_ms(p), 5);
            } else {
                c.none();
            }
        }
        columns.push(c);
    }
    let mut kb = Column::new(12, "KB/sec", "-------------");
    for (name, f) in &rows {
        if is_wait(name) || !f.bytes_known() {
            kb.none();
        } else {
            kb.number(f.kb_sec(), 2);
        }
    }
    columns.push(kb);
    let mut out = String::new();
    let _ = write!(out, "\n\n{title}\n");
    for c in &columns {
        out.push_str(&"=".repeat(c.width + 1));
    }
    out.push('\n');
    for i in 0..columns[0].cells.len() {
        for c in &columns {
            out.push_str(&c.cells[i]);
        }
        out.push('\n');
    }
    if !m.hide_histogram {
        out.push_str(&distribution(m, run));
    }
    out
}

/// The latency distribution of each command: memtier's `Request Latency Distribution`.
fn distribution(m: &Memtier, run: &Run<'_>) -> String {
    let mut out = format!(
        "\n\nRequest Latency Distribution\n{:<6} {:>12} {:>12}\n{}\n",
        "Type",
        "<= msec   ",
        "Percent",
        "-".repeat(72)
    );
    let groups = distribution_groups(run);
    let last = groups.len().saturating_sub(1);
    for (k, (name, f)) in groups.iter().enumerate() {
        for (msec, percent) in steps(f) {
            let _ = writeln!(out, "{name:<6} {msec:>8.3} {percent:>12.3}");
        }
        // memtier closes each command's list with `---`, but the last of --ratio's (WAIT).
        if !(m.ratio_rows && k == last) {
            out.push_str("---\n");
        }
    }
    out
}

/// The distributions memtier lists: `SET`, `GET`, `WAIT` for `--ratio`, else each command's
/// name in capitals.
pub fn distribution_groups<'r>(run: &'r Run<'_>) -> Vec<(String, &'r Figures)> {
    run.rows.iter().map(|(n, f)| (n.strip_suffix('s').unwrap_or(n).to_ascii_uppercase(), f)).collect()
}

/// The distribution's steps: (latency at most, in ms; the percentage of requests at or
/// below), by memtier's percentile iteration.
pub fn steps(f: &Figures) -> Vec<(f64, f64)> {
    // C hdr_histogram's percentile iteration of an empty histogram gives one step: 0 at 100%.
    if f.latency.is_empty() {
        return vec![(0.0, 100.0)];
    }
    f.latency
        .iter_quantiles(GRANULARITY)
        .map(|v| {
            (
                f.latency.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0,
                v.quantile_iterated_to() * 100.0,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_titles_are_memtiers() {
        assert_eq!(percentile_title(50.0), "p50 Latency");
        assert_eq!(percentile_title(99.9), "p99.9 Latency");
        assert_eq!(percentile_title(99.99), "p99.990 Latency");
        assert_eq!(percentile_title(99.5), "p99.5 Latency");
    }
}
