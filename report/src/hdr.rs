//! Replays C hdr_histogram's percentile and linear iteration rules, so respbench's latency
//! distributions and summary figures match redis-benchmark's output byte for byte.
//!
//! redis-benchmark 7 prints its distributions with libhdr_histogram's C iterators
//! (`hdr_iter_percentile_init(h, 1)` and `hdr_iter_linear_init(h, 100)`), bucket by bucket; the
//! Rust crate's `iter_quantiles` and `iter_linear` pick different steps and end differently, and
//! its `mean()` and `value_at_quantile` round differently from C's `hdr_mean` and
//! `hdr_value_at_percentile`. Given the same histogram, these give what the C gives.

use std::io::{self, Write};

use hdrhistogram::Histogram;

/// C's `hdr_mean`: each bucket counts at its median equivalent value, summed in integers.
/// The crate's `mean()` sums in floating point and can differ in the last digit.
pub fn mean(h: &Histogram<u64>) -> f64 {
    let total = h.len();
    if total == 0 {
        return 0.0;
    }
    let mut c = Cursor::new(h);
    let mut sum: u128 = 0;
    while c.cumulative < total && c.move_next() {
        sum += u128::from(c.count) * u128::from(h.median_equivalent(c.value));
    }
    sum as f64 / total as f64
}

/// C's `hdr_value_at_percentile`, in the core: the per-second summaries use it too.
pub use respbench_core::stats::value_at_percentile;

/// `x`, or 0 when it is NaN or infinite (an empty or instant test).
pub fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// Microseconds to milliseconds.
pub fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// One line of a distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// The percentile, 0 to 100.
    pub percentile: f64,
    /// The highest value equivalent to the bucket the step stopped at, in microseconds.
    pub value: u64,
    /// Values recorded up to and including that bucket.
    pub cumulative: u64,
}

/// Writes redis-benchmark's distribution lines: a step is shown when its cumulative count
/// differs from the previous step's, or when it is the total.
pub fn write_steps(steps: &[Step], total: u64, out: &mut impl Write) -> io::Result<()> {
    let mut previous = None;
    for s in steps {
        if previous != Some(s.cumulative) || s.cumulative == total {
            writeln!(
                out,
                "{:3.3}% <= {:.3} milliseconds (cumulative count {})",
                s.percentile,
                ms(s.value),
                s.cumulative
            )?;
        }
        previous = Some(s.cumulative);
    }
    Ok(())
}

/// `steps` as [`write_steps`] shows them (each count change, and the total), bounded: the first
/// `fine` rows as they are, then only a row whose value is at least twice the last row kept's,
/// or that counts 5% of the total more, and the last row (at most about `fine` + 20 + the
/// doublings). For distributions that span a wide range (open-loop latencies that queued for
/// seconds), where redis-benchmark's 1 ms steps would make thousands of lines; each row kept
/// is still exact. The value above which rows are coarser, when any were left out.
pub fn bounded(steps: &[Step], total: u64, fine: usize) -> (Vec<Step>, Option<u64>) {
    let mut shown: Vec<Step> = Vec::new();
    for s in steps {
        if shown.last().map(|p| p.cumulative) != Some(s.cumulative) || s.cumulative == total {
            shown.push(*s);
        }
    }
    if shown.len() <= fine {
        return (shown, None);
    }
    let from = shown[fine - 1].value;
    let last = shown[shown.len() - 1];
    let mut kept: Vec<Step> = shown[..fine].to_vec();
    for s in &shown[fine..shown.len() - 1] {
        let last_kept = kept[kept.len() - 1];
        if s.value >= last_kept.value.saturating_mul(2) || (s.cumulative - last_kept.cumulative) * 20 >= total
        {
            kept.push(*s);
        }
    }
    kept.push(last);
    (kept, Some(from))
}

/// The state of C's `struct hdr_iter`: a position among the histogram's buckets and the count
/// so far.
struct Cursor<'a> {
    h: &'a Histogram<u64>,
    /// The current bucket, -1 before the first.
    index: i64,
    /// How many buckets the histogram has.
    buckets: i64,
    /// The lowest value of the current bucket.
    value: u64,
    /// The highest value of the current bucket (0 before the first).
    hev: u64,
    /// The lowest value of the next bucket.
    next_value: u64,
    /// The current bucket's count.
    count: u64,
    /// Counts up to and including the current bucket.
    cumulative: u64,
    /// All values recorded.
    total: u64,
}

impl<'a> Cursor<'a> {
    fn new(h: &'a Histogram<u64>) -> Cursor<'a> {
        Cursor {
            h,
            index: -1,
            buckets: i64::try_from(h.distinct_values()).unwrap_or(i64::MAX),
            value: 0,
            hev: 0,
            next_value: 0,
            count: 0,
            cumulative: 0,
            total: h.len(),
        }
    }

    /// C's `has_next`: values remain beyond the cumulative count.
    fn has_next(&self) -> bool {
        self.cumulative < self.total
    }

    /// C's `move_next`: steps to the next bucket; false (the state unchanged but the index) past
    /// the last.
    fn move_next(&mut self) -> bool {
        self.index += 1;
        if self.index >= self.buckets {
            return false;
        }
        self.value = self.next_value;
        self.hev = self.h.highest_equivalent(self.value);
        self.count = self.h.count_at(self.value);
        self.cumulative += self.count;
        self.next_value = self.hev.saturating_add(1);
        true
    }

    /// C's `basic_iter_next`.
    fn basic_next(&mut self) -> bool {
        if !self.has_next() || self.index >= self.buckets {
            return false;
        }
        self.move_next();
        true
    }
}

/// The steps of C's percentile iterator with `ticks` ticks per half distance: percentile levels
/// 0, 50, 75, 87.5, … each stopping at the first bucket that reaches it, then a last step at
/// 100% with the total.
pub fn percentile_steps(h: &Histogram<u64>, ticks: u32) -> Vec<Step> {
    let mut c = Cursor::new(h);
    let mut steps = Vec::new();
    let mut level = 0.0_f64;
    let mut percentile = 0.0_f64;
    let mut seen_last = false;
    loop {
        if !c.has_next() {
            if seen_last {
                break;
            }
            seen_last = true;
            steps.push(Step { percentile: 100.0, value: c.hev, cumulative: c.cumulative });
            continue;
        }
        if c.index == -1 && !c.basic_next() {
            break;
        }
        loop {
            let current = (100.0 * c.cumulative as f64) / c.total as f64;
            if c.count != 0 && level <= current {
                percentile = level;
                let temp = ((100.0 / (100.0 - level)).ln() / 2.0_f64.ln()) as i64 + 1;
                let reporting_ticks = f64::from(ticks) * 2.0_f64.powf(temp as f64);
                let next = level + 100.0 / reporting_ticks;
                // Past floating-point resolution the level stops rising; C would loop forever.
                level = if next > level { next } else { f64::INFINITY };
                break;
            }
            if !c.basic_next() {
                break;
            }
        }
        steps.push(Step { percentile, value: c.hev, cumulative: c.cumulative });
    }
    steps
}

/// The steps of C's linear iterator as redis-benchmark drives it: 100 µs apart, and 1000 µs apart
/// once a step's bucket ends above 2 ms. Each step stops at the first bucket starting at or above
/// the level, so its value is that bucket's highest equivalent value.
pub fn linear_steps(h: &Histogram<u64>) -> Vec<Step> {
    let mut c = Cursor::new(h);
    let mut steps = Vec::new();
    let mut units = 100_u64;
    let mut level = units;
    let mut level_lowest = h.lowest_equivalent(level);
    while c.has_next() || (c.index < c.buckets && c.next_value > level_lowest) {
        loop {
            if c.value >= level_lowest {
                level = level.saturating_add(units);
                level_lowest = h.lowest_equivalent(level);
                break;
            }
            if !c.move_next() {
                break;
            }
        }
        let percentile = (c.cumulative as f64 / c.total as f64) * 100.0;
        steps.push(Step { percentile, value: c.hev, cumulative: c.cumulative });
        // As redis-benchmark does, the wider step applies from the level after the next one.
        if c.hev > 2000 {
            units = 1000;
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use respbench_core::{Stats, Time};

    /// Stats over `values` (microseconds), one second long.
    fn stats(values: impl IntoIterator<Item = u64>) -> Stats {
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap();
        for v in values {
            s.record(v * 1000, 0, Time::from_micros(1_000_000));
        }
        s
    }

    /// The distribution lines of `steps`, as the verbose report prints them.
    fn lines(steps: &[Step], total: u64) -> Vec<String> {
        let mut out = Vec::new();
        write_steps(steps, total, &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(String::from).collect()
    }

    #[test]
    fn cumulative_steps_widen_to_a_millisecond_after_two() {
        // Checked against the C iterators: the level after the first bucket ending above 2 ms is
        // still 100 µs on (C has already advanced it), then levels are 1000 µs apart. Each line
        // shows the highest value of the bucket the level falls in (2 µs wide at 2–4 ms, 4 µs
        // at 4–8 ms, 8 µs at 8–16 ms).
        let s = stats([100, 2100, 2101, 2102, 2500, 3300, 9000]);
        let h = &s.latency;
        let cumulative = lines(&linear_steps(h), h.len());
        assert_eq!(
            cumulative,
            [
                "14.286% <= 0.100 milliseconds (cumulative count 1)",
                "42.857% <= 2.101 milliseconds (cumulative count 3)",
                "57.143% <= 2.201 milliseconds (cumulative count 4)",
                "71.429% <= 3.201 milliseconds (cumulative count 5)",
                "85.714% <= 4.203 milliseconds (cumulative count 6)",
                "100.000% <= 9.207 milliseconds (cumulative count 7)",
            ]
        );
        let percentile = lines(&percentile_steps(h, 1), h.len());
        assert_eq!(percentile.last().unwrap(), &"100.000% <= 9.007 milliseconds (cumulative count 7)");
    }
}
