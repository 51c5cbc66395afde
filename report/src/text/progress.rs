//! The lines of a running test on a terminal's stderr: the progress line (drawn, fitted, cleared)
//! and `--live`'s second lines.

use super::*;

/// One second of a running test, for `--live` (stderr).
pub fn live_line(title: &str, second: usize, s: &respbench_core::stats::Second) -> String {
    format!(
        "{title}: second {second}: {} requests per second, p50={:.3} msec, p99={:.3} msec, errors {}",
        s.requests,
        ms(s.p50),
        ms(s.p99),
        s.errors
    )
}

/// What the progress line shows of a running test.
#[derive(Clone, Copy, Debug)]
pub struct Progressed<'a> {
    /// The test (and step) running.
    pub title: &'a str,
    /// Seconds since it began.
    pub elapsed_s: f64,
    /// What it runs to.
    pub goal: respbench_session::observer::Goal,
    /// Requests completed so far.
    pub completed: u64,
    /// Requests per second since the line was last drawn, and since the test began.
    pub rps_now: f64,
    /// Requests per second since the test began.
    pub rps_overall: f64,
    /// The p99 of every request so far, in milliseconds.
    pub p99_ms: Option<f64>,
}

/// The progress line (a terminal's stderr only), ending in `\r` so the next one overwrites it,
/// as memtier_benchmark's `[RUN #1 9%, 1 secs]`: `[GET: 41%, 1.2 s, 1.7 s left] 34123 rps (now
/// 35010), p99 1.234 msec, 41000 of 100000 requests` (the share done, the time elapsed and left). The share is of `-n` or of
/// `--duration`; the time left is the duration's rest, or, for `-n`, the rest at the rate so
/// far (after the duration's end, the requests still in flight drain).
pub fn progress_line(p: &Progressed) -> String {
    use respbench_session::observer::Goal;
    let (share, left, of) = match p.goal {
        Goal::Requests(n) => {
            let share = if n == 0 { 1.0 } else { (p.completed as f64 / n as f64).min(1.0) };
            let left = (p.rps_overall > 0.0).then(|| n.saturating_sub(p.completed) as f64 / p.rps_overall);
            (share, left, format!("{} of {n} requests", p.completed))
        }
        Goal::Duration(d) => {
            let d = d.as_secs_f64();
            let share = if d > 0.0 { (p.elapsed_s / d).min(1.0) } else { 1.0 };
            (share, Some((d - p.elapsed_s).max(0.0)), format!("{} requests of {d:.1} s", p.completed))
        }
    };
    let left = match left {
        Some(l) if share >= 1.0 && matches!(p.goal, Goal::Duration(_)) && l == 0.0 => "draining".to_string(),
        Some(l) => format!("{:.1} s left", finite(l)),
        None => "? s left".to_string(),
    };
    let p99 = p.p99_ms.map_or("-".to_string(), |v| format!("{:.3}", finite(v)));
    format!(
        "[{}: {:.0}%, {:.1} s, {left}] {:.0} rps (now {:.0}), p99 {p99} msec, {of}\r",
        p.title,
        finite(share * 100.0).floor(),
        finite(p.elapsed_s),
        finite(p.rps_overall),
        finite(p.rps_now),
    )
}

/// `line` (a progress line ending in `\r`) cut to fit `columns` (a terminal's width; one column
/// is kept free, where a terminal would wrap), `…` marking the cut.
pub fn fit_progress(line: &str, columns: Option<usize>) -> String {
    let text = line.strip_suffix('\r').unwrap_or(line);
    match columns {
        Some(c) if c > 1 && text.chars().count() > c - 1 => {
            let kept: String = text.chars().take(c.saturating_sub(2)).collect();
            format!("{kept}…\r")
        }
        _ => line.to_string(),
    }
}

/// Spaces over the last `width` bytes of progress, then `\r`: what redis-benchmark prints before
/// a report on a terminal (`"%*s\r"`).
pub fn clear_progress(width: usize) -> String {
    format!("{:width$}\r", " ")
}
