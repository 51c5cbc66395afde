//! `--hdr-file-prefix PREFIX`: memtier_benchmark's latency files. For each run N (from 1, one
//! per `--run-count`), `PREFIX_FULL_RUN_N.txt` and `PREFIX_FULL_RUN_N.hgrm` for every request
//! of the run, and `PREFIX_NAME_command_run_N.txt` and `.hgrm` for each command (`SET` and
//! `GET` with `--ratio`, `--multi-key-get`'s MGETs in `GET`'s, no file for WAIT; each
//! `--command`'s first word in capitals, a later command of the same name writing over an
//! earlier one, as memtier's do), only where the command has latencies.
//!
//! The `.txt` is C hdr_histogram's `hdr_percentiles_print` (CLASSIC, 10 ticks per half
//! distance, values in milliseconds) and the `.hgrm` C's `hdr_log_write` of the whole run: a
//! version 1.2 log of one interval (start and end in seconds since the epoch, the highest
//! value in microseconds, the histogram in microseconds, V2 deflate encoding, base64).
//! respbench's histograms keep 3 significant figures where memtier's keep 2, so the values
//! have one more decimal.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use respbench_session::memtier::Memtier;
use respbench_session::result::TestResult;

use super::Run;
use crate::error::Error;

/// memtier's ticks per half distance to 100% (`LATENCY_HDR_GRANULARITY`).
const TICKS: u32 = 10;

/// The path of run `run`'s first file (`PREFIX_FULL_RUN_1.txt`).
pub fn full_run(prefix: &str, run: usize) -> String {
    format!("{prefix}_FULL_RUN_{run}.txt")
}

/// Writes the files of `runs` (made from `results`, `m.results_per_run()` results a run) under
/// `prefix`; `epoch_us` is the run's start in microseconds since the Unix epoch. The paths
/// written.
pub fn write_all(
    m: &Memtier,
    prefix: &str,
    results: &[TestResult],
    runs: &[Run<'_>],
    epoch_us: u64,
) -> Result<Vec<String>, Error> {
    let mut written = Vec::new();
    let per_run = m.results_per_run();
    for (k, (run, chunk)) in runs.iter().zip(results.chunks(per_run)).enumerate() {
        let n = k + 1;
        let stats = &run.result.stats;
        let start = epoch_us.saturating_add(stats.start.as_micros());
        let end = epoch_us.saturating_add(stats.end.as_micros());
        let mut files: Vec<(String, &Histogram<u64>)> = vec![("Full Run".into(), &run.totals.latency)];
        if m.ratio_rows {
            // memtier's SET and GET histograms (MGETs in GET's); none for WAIT.
            for (row, f) in &run.rows {
                match row.as_str() {
                    "Sets" => files.push(("SET".into(), &f.latency)),
                    "Gets" => files.push(("GET".into(), &f.latency)),
                    _ => {}
                }
            }
        }
        for (row, part) in m.rows.iter().zip(chunk).filter(|_| !m.ratio_rows) {
            // A row is the command's name, `HSET` → `Hsets`.
            let name = row.strip_suffix('s').unwrap_or(row).to_ascii_uppercase();
            if part.stats.latency.is_empty() {
                continue;
            }
            match files.iter_mut().skip(1).find(|(f, _)| *f == name) {
                Some(file) => file.1 = &part.stats.latency,
                None => files.push((name, &part.stats.latency)),
            }
        }
        for (name, h) in files.into_iter().filter(|(_, h)| !h.is_empty()) {
            let base = match name.as_str() {
                "Full Run" => format!("{prefix}_FULL_RUN_{n}"),
                _ => format!("{prefix}_{name}_command_run_{n}"),
            };
            let title = format!("{name} command HDR latency histogram results");
            for (path, text) in [
                (format!("{base}.txt"), percentiles(h)),
                (format!("{base}.hgrm"), log(&title, start, end, h)?),
            ] {
                crate::files::write_atomically(std::path::Path::new(&path), text.as_bytes())
                    .map_err(|source| Error::Write { output: format!("--hdr-file-prefix {path}"), source })?;
                written.push(path);
            }
        }
    }
    Ok(written)
}

/// C's `hdr_percentiles_print(h, f, 10, 1000.0, CLASSIC)` of `h` (microseconds): the legend,
/// a line per percentile step (value in milliseconds with as many decimals as `h` has
/// significant figures, percentile as a fraction, count up to it, `1/(1-percentile)`, `inf`
/// at 100%), then the mean, deviation, max, count and buckets.
pub fn percentiles(h: &Histogram<u64>) -> String {
    let sig = usize::from(h.sigfig());
    let mut out =
        format!("{:>12} {:>12} {:>12} {:>12}\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    for s in crate::hdr::percentile_steps(h, TICKS) {
        let q = s.percentile / 100.0;
        let inverted = 1.0 / (1.0 - q);
        let inverted =
            if inverted.is_finite() { format!("{inverted:12.2}") } else { format!("{:>12}", "inf") };
        let _ = writeln!(out, "{:12.sig$} {q:12.6} {:12} {inverted}", s.value as f64 / 1000.0, s.cumulative);
    }
    let mean = crate::hdr::mean(h);
    let total = h.len();
    // C's hdr_stddev: each bucket at its median equivalent value.
    let squares: f64 = h
        .iter_recorded()
        .map(|v| {
            let d = h.median_equivalent(v.value_iterated_to()) as f64 - mean;
            d * d * v.count_at_value() as f64
        })
        .sum();
    let sd = if total == 0 { 0.0 } else { (squares / total as f64).sqrt() };
    let max = if h.is_empty() { 0 } else { h.max() };
    // C's sub-bucket count: the power of two that holds 2 × 10^sigfig.
    let sub_buckets = 1u64 << (2.0 * 10f64.powi(sig as i32)).log2().ceil() as u32;
    let _ = writeln!(out, "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]", mean / 1000.0, sd / 1000.0);
    let _ = writeln!(out, "#[Max     = {:12.3}, Total count    = {total:12}]", max as f64 / 1000.0);
    let _ = writeln!(out, "#[Buckets = {:12}, SubBuckets     = {sub_buckets:12}]", h.buckets());
    out
}

/// C's `hdr_log_write_header` (titled `title`) and one `hdr_log_write` of `h` from `start_us`
/// to `end_us` (microseconds since the Unix epoch).
pub fn log(title: &str, start_us: u64, end_us: u64, h: &Histogram<u64>) -> Result<String, Error> {
    let start = start_us as f64 / 1e6;
    let mut out = format!("#[{title}]\n#[Histogram log format version 1.2]\n");
    let _ = writeln!(out, "#[StartTime: {start:.3} (seconds since epoch), {}]", c_date(start_us / 1_000_000));
    out.push_str("\"StartTimestamp\",\"EndTimestamp\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
    let max = if h.is_empty() { 0 } else { h.max() };
    let encoded = crate::codec::encode_histogram(h)?;
    let _ = writeln!(out, "{start:.3},{:.3},{max}.0,{encoded}", end_us as f64 / 1e6);
    Ok(out)
}

/// `secs` as C's `strftime("%a %b %X %Z %Y")` of `gmtime` writes it: `Sat Dec 14:30:18 GMT 2026`.
fn c_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    // `YYYY-MM-DDTHH:MM:SSZ`.
    let iso = crate::shared::utc(secs);
    let month = iso.get(5..7).and_then(|m| m.parse::<usize>().ok()).unwrap_or(1);
    let day = DAYS[(secs / 86_400 % 7) as usize];
    format!(
        "{day} {} {} GMT {}",
        MONTHS[(month - 1) % 12],
        iso.get(11..19).unwrap_or(""),
        iso.get(0..4).unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use respbench_core::shared::{new_histogram, DEFAULT_SIGFIG};

    #[test]
    fn the_files_are_c_hdr_histograms() {
        let mut h = new_histogram(DEFAULT_SIGFIG).unwrap();
        for v in 1..=400u64 {
            h.record(v * 10).unwrap();
        }
        let text = percentiles(&h);
        let lines: Vec<&str> = text.lines().collect();
        // memtier's legend and first line, word for word (its values have one decimal less).
        assert_eq!(lines[0], "       Value   Percentile   TotalCount 1/(1-Percentile)");
        assert_eq!(lines[1], "");
        assert_eq!(lines[2], "       0.010     0.000000            1         1.00");
        assert_eq!(lines[3], "       0.200     0.050000           20         1.05");
        let last = lines.iter().rev().find(|l| !l.starts_with('#')).unwrap();
        assert_eq!(*last, "       4.001     1.000000          400          inf");
        assert_eq!(lines[lines.len() - 2], "#[Max     =        4.001, Total count    =          400]");
        assert!(lines[lines.len() - 3].starts_with("#[Mean    =        2.00"), "{text}");
        let log = log(
            "GET command HDR latency histogram results",
            1_796_481_018_281_000,
            1_796_481_018_289_500,
            &h,
        )
        .unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines[0], "#[GET command HDR latency histogram results]");
        assert_eq!(lines[1], "#[Histogram log format version 1.2]");
        assert_eq!(lines[2], "#[StartTime: 1796481018.281 (seconds since epoch), Sat Dec 14:30:18 GMT 2026]");
        assert_eq!(
            lines[3],
            r#""StartTimestamp","EndTimestamp","Interval_Max","Interval_Compressed_Histogram""#
        );
        let (head, encoded) = lines[4].rsplit_once(',').unwrap();
        assert_eq!(head, "1796481018.281,1796481018.289,4001.0");
        let back = crate::codec::decode_histogram_within(encoded, u64::MAX / 2).unwrap();
        assert_eq!((back.len(), back.max()), (400, 4001));
        assert_eq!(c_date(0), "Thu Jan 00:00:00 GMT 1970");
    }
}
