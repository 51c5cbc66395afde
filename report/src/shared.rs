//! Small pieces the formats share, a leaf below them all (no format imports another): CSV
//! quoting, a test's title as an `--hlog`/`--hgrm` tag, UTC dates, and whether a test has any
//! success to report; an event's latency kind and its unfinished requests.

use respbench_core::disruption::Disruption;
use respbench_core::Stats;
use respbench_session::result::TestResult;

/// A CSV field: `s` in quotes, a `"` in it doubled.
pub fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Whether no request of the test succeeded: every reply was an error reply, or none came while
/// requests were made (a server that refused or closed every connection, a `SELECT` that
/// failed). Its rate, hit
/// ratio and latencies would be those of the errors, or of nothing, so no format prints them.
pub fn none_succeeded(s: &Stats) -> bool {
    // A test that asked for nothing (`-n 0`) failed at nothing: it has no failure to report.
    let attempted = s.requests > 0 || s.lost > 0 || s.abandoned > 0 || s.unsent > 0 || s.failed_clients > 0;
    attempted && s.requests <= s.error_replies()
}

/// A test's title as a tag: HdrHistogram's Java reader splits a line at spaces and commas (its
/// scanner's delimiters), and a line ends at a newline, so each of those becomes `_`:
/// `GET_@_2000_rps`.
pub fn tag_of(name: &str) -> String {
    name.chars().map(|c| if c == ',' || c.is_whitespace() || c.is_control() { '_' } else { c }).collect()
}

/// Seconds since the Unix epoch as an ISO 8601 UTC date and time (the header's readable date).
pub fn utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm), for dates from 1970 on.
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Which latency a test's event figures are: `corrected` in an open loop, else `service`.
pub fn latency_kind(t: &TestResult) -> &'static str {
    if t.target_rps.is_some() {
        "corrected"
    } else {
        "service"
    }
}

/// Abandoned and unsent requests count in an event's window only when it lasted to the end of
/// the test: that is when they happen.
pub fn unfinished(t: &TestResult, d: &Disruption) -> (u64, u64) {
    if d.recovered.is_none() {
        (t.stats.abandoned, t.stats.unsent)
    } else {
        (0, 0)
    }
}

/// `87300` as `87,300`.
pub fn thousands(n: u64) -> String {
    let digits: Vec<char> = n.to_string().chars().collect();
    let groups: Vec<String> = digits.rchunks(3).rev().map(|g| g.iter().collect()).collect();
    groups.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_083_199), "2026-11-30T23:59:59Z");
    }
}
