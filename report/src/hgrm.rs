//! `--hgrm PREFIX`: each test's latency distribution as an HdrHistogram percentile-distribution
//! file (`.hgrm`), the text of Java HdrHistogram's `outputPercentileDistribution` that wrk2
//! prints and `HistogramLogProcessor` writes, and that HdrHistogram's plotter
//! (`plotFiles.html`) reads: a legend, one line per percentile step (value in milliseconds,
//! percentile as a fraction, count up to it, `1/(1-percentile)`), the last at 100% without the
//! last column, then `#[Mean …]`, `#[Max …]` and `#[Buckets …]`.
//!
//! One file per test: `PREFIX`, the test's tag as `--hlog` writes it (`GET`, `GET_@_2000_rps`
//! for a step of several `--rps` rates), then `.hgrm`; an open loop's service time goes to
//! `… .service.hgrm`. A title that comes again (`-l`, a sweep's steps) is numbered:
//! `GET.2.hgrm`. A scenario's groups have theirs beside the test's: `… .GROUP.hgrm`.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use respbench_session::result::TestResult;

/// Ticks per half distance to 100%: HistogramLogProcessor's and wrk2's default.
const TICKS_PER_HALF: u32 = 5;

/// Writes the files of `results` under `prefix`; `comparing`: several backends ran each test,
/// whose name joins the tag. The paths written, or what could not be written.
pub fn write_all(
    prefix: &str,
    results: &[TestResult],
    comparing: bool,
) -> Result<Vec<String>, crate::error::Error> {
    // As `--hlog` tags them: the rate only when the run has several.
    let mut rates: Vec<u64> = results.iter().filter_map(|e| e.target_rps).collect();
    rates.sort_unstable();
    rates.dedup();
    let mut used: Vec<String> = Vec::new();
    let mut written = Vec::new();
    for e in results {
        let mut tag = e.name.clone();
        if let Some(r) = e.target_rps.filter(|_| rates.len() > 1) {
            tag += &format!(" @ {r} rps");
        }
        if let (Some(b), true) = (&e.backend, comparing) {
            tag += &format!(" ({b})");
        }
        let mut base = crate::shared::tag_of(&tag);
        let seen = used.iter().filter(|u| **u == base).count();
        used.push(base.clone());
        if seen > 0 {
            base = format!("{base}.{}", seen + 1);
        }
        let mut files = vec![(format!("{prefix}{base}.hgrm"), &e.stats.latency)];
        if let Some(s) = &e.stats.service {
            files.push((format!("{prefix}{base}.service.hgrm"), s));
        }
        // A scenario's groups (names of letters, digits, `-`, `_`, `.`), each its own files.
        for g in &e.groups {
            files.push((format!("{prefix}{base}.{}.hgrm", g.name), &g.stats.latency));
            if let Some(s) = &g.stats.service {
                files.push((format!("{prefix}{base}.{}.service.hgrm", g.name), s));
            }
        }
        for (path, h) in files {
            crate::files::write_atomically(std::path::Path::new(&path), distribution(h).as_bytes())
                .map_err(|source| crate::error::Error::Write { output: format!("--hgrm {path}"), source })?;
            written.push(path);
        }
    }
    Ok(written)
}

/// The percentile distribution of `h` (microseconds) in milliseconds, as Java HdrHistogram's
/// `outputPercentileDistribution(out, 5, 1000.0)` prints it.
pub fn distribution(h: &Histogram<u64>) -> String {
    let sig = usize::from(h.sigfig());
    let mut out = String::new();
    let _ = write!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    for (value, level, count) in percentile_steps(h) {
        let value = value as f64 / 1000.0;
        let q = level / 100.0;
        if level != 100.0 {
            let _ = writeln!(out, "{value:12.sig$} {q:2.12} {count:10} {:14.2}", 1.0 / (1.0 - q));
        } else {
            let _ = writeln!(out, "{value:12.sig$} {q:2.12} {count:10}");
        }
    }
    let (mean, sd) = (h.mean() / 1000.0, h.stdev() / 1000.0);
    let max = if h.is_empty() { 0.0 } else { h.max() as f64 / 1000.0 };
    let _ = writeln!(out, "#[Mean    = {mean:12.sig$}, StdDeviation   = {sd:12.sig$}]");
    let _ = writeln!(out, "#[Max     = {max:12.sig$}, Total count    = {:12}]", h.len());
    // Java's sub-bucket count: the power of two that holds 2 × 10^sigfig.
    let sub_buckets = 1u64 << (2.0 * 10f64.powi(sig as i32)).log2().ceil() as u32;
    let _ = writeln!(out, "#[Buckets = {:12}, SubBuckets     = {sub_buckets:12}]", h.buckets());
    out
}

/// The steps of Java HdrHistogram's `PercentileIterator` with [`TICKS_PER_HALF`]: (value, the
/// percentile level reached, the count up to the value). Written out rather than taken from the
/// hdrhistogram crate's `iter_quantiles`, which steps one bucket further wherever a level falls
/// exactly on a bucket's count, so its files differ from the Java tool's.
fn percentile_steps(h: &Histogram<u64>) -> Vec<(u64, f64, u64)> {
    let total = h.len();
    let mut steps = Vec::new();
    if total == 0 {
        return steps;
    }
    let (mut level, mut count) = (0.0_f64, 0u64);
    let mut last = 0;
    for v in h.iter_recorded() {
        count += v.count_at_value();
        last = v.value_iterated_to();
        while 100.0 * count as f64 / total as f64 >= level {
            steps.push((last, level, count));
            // Java's incrementIterationLevel: ticks double with each halving of the distance
            // to 100%.
            let halvings = ((100.0 / (100.0 - level)).ln() / 2f64.ln()) as i64;
            let ticks = i64::from(TICKS_PER_HALF) * 2f64.powi(halvings as i32 + 1) as i64;
            level += 100.0 / ticks as f64;
            // The last value counted: one step here, then the last one at 100%.
            if count == total {
                break;
            }
        }
    }
    steps.push((last, 100.0, total));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_distribution_has_javas_lines() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 10).unwrap();
        }
        let text = distribution(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "       Value     Percentile TotalCount 1/(1-Percentile)");
        assert_eq!(lines[1], "");
        assert_eq!(lines[2], "       0.010 0.000000000000          1           1.00");
        assert!(lines.contains(&"       5.003 0.500000000000        500           2.00"), "{text}");
        // The plotter's rule: four fields on a line that does not start with '#', whose first
        // and last are numbers (the legend's are not).
        let number = |f: Option<&str>| f.is_some_and(|f| f.parse::<f64>().is_ok());
        let data: Vec<&&str> = lines
            .iter()
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                !l.starts_with('#') && f.len() == 4 && number(f.first().copied()) && number(f.last().copied())
            })
            .collect();
        assert!(data.len() > 20, "{text}");
        let last = lines.iter().rev().find(|l| !l.starts_with('#')).unwrap();
        assert_eq!(*last, "      10.007 1.000000000000       1000");
        assert_eq!(lines[lines.len() - 2], "#[Max     =       10.007, Total count    =         1000]");
        assert!(lines[lines.len() - 1].ends_with("SubBuckets     =         2048]"), "{text}");
        // Counts never go down, percentiles rise.
        let q: Vec<(f64, u64)> = data
            .iter()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[1].parse().unwrap(), f[2].parse().unwrap())
            })
            .collect();
        assert!(q.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{q:?}");
        // Empty: the legend and the footer.
        let empty = distribution(&Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap());
        assert_eq!(empty.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).count(), 1, "{empty}");
    }
}
