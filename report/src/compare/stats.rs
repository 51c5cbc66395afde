//! The statistics of `respbench compare` (see the method in [`super`]): a run's figures and
//! seconds, the two-level bootstrap of B / A, and the verdict in words.

use respbench_core::rng::Rng;
use respbench_core::shared::value_at_percentile;
use respbench_core::Stats;

use super::{CONFIDENCE, RESAMPLES};

/// One run of a test as the bootstrap sees it: its figures ([`FIGURES`] order: rps, then p50,
/// p99, p99.9 in ms) and each full second's (requests, then the second's percentiles; NaN
/// percentiles in a second without a reply).
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The run's own figures.
    pub figures: [f64; 4],
    /// Its full seconds' figures.
    pub seconds: Vec<[f64; 4]>,
}

impl Run {
    /// A run from its stats: the whole test's rps and percentiles, and its full seconds (a last
    /// second cut short by the end is left out, one within 50 ms of its end is full, and none
    /// past `asked_s`, the run's `--duration`).
    pub fn of(s: &Stats, asked_s: Option<f64>) -> Run {
        let at = |p: f64| value_at_percentile(&s.latency, p) as f64 / 1000.0;
        // The stop lands a few milliseconds either side of the last second's end; the seconds
        // after `--duration` (`asked_s`) hold only the drain of the requests in flight.
        let length = asked_s.map_or(s.duration_secs(), |d| d.min(s.duration_secs()));
        let full = (length + 0.05).floor().max(0.0) as usize;
        let seconds = s
            .series
            .iter()
            .take(full)
            .map(|x| {
                let ms = |v: u64| if x.requests == 0 { f64::NAN } else { v as f64 / 1000.0 };
                [x.requests as f64, ms(x.p50), ms(x.p99), ms(x.p999)]
            })
            .collect();
        Run { figures: [s.rps(), at(50.0), at(99.0), at(99.9)], seconds }
    }

    /// The mean of each figure over the seconds that have it (NaN where none has).
    fn second_means(&self) -> [f64; 4] {
        let mut sum = [0.0; 4];
        let mut n = [0usize; 4];
        for s in &self.seconds {
            for f in 0..4 {
                if s[f].is_finite() {
                    sum[f] += s[f];
                    n[f] += 1;
                }
            }
        }
        std::array::from_fn(|f| if n[f] > 0 { sum[f] / n[f] as f64 } else { f64::NAN })
    }
}

/// B / A of one figure, with its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// The sides' means' ratio.
    pub ratio: f64,
    /// The interval's low end.
    pub low: f64,
    /// Its high end.
    pub high: f64,
}

/// The mean of each figure over `runs`.
pub(super) fn means(runs: &[Run]) -> [f64; 4] {
    let mut sum = [0.0; 4];
    for r in runs {
        for (s, x) in sum.iter_mut().zip(r.figures) {
            *s += x;
        }
    }
    sum.map(|s| s / runs.len().max(1) as f64)
}

/// One resample of a side: its runs drawn with replacement, each drawn run's seconds drawn with
/// replacement, each run's figure scaled by its drawn seconds' mean over all its seconds' mean.
pub(super) fn resample(runs: &[Run], inner: &[[f64; 4]], rng: &mut Rng) -> [f64; 4] {
    let mut sum = [0.0; 4];
    for _ in 0..runs.len() {
        let k = rng.below(runs.len() as u64) as usize;
        let (r, mean) = (&runs[k], &inner[k]);
        let mut scale = [1.0; 4];
        let n = r.seconds.len();
        if n >= 2 {
            let mut drawn = [0.0; 4];
            let mut count = [0usize; 4];
            for _ in 0..n {
                let s = &r.seconds[rng.below(n as u64) as usize];
                for f in 0..4 {
                    if s[f].is_finite() {
                        drawn[f] += s[f];
                        count[f] += 1;
                    }
                }
            }
            for f in 0..4 {
                if count[f] > 0 && mean[f] > 0.0 {
                    scale[f] = drawn[f] / count[f] as f64 / mean[f];
                }
            }
        }
        for f in 0..4 {
            sum[f] += r.figures[f] * scale[f];
        }
    }
    // A mean of n values drawn from n spreads (n − 1)/n times as much as the means it stands
    // for: widened back about the sample's mean, so that five runs do not give too narrow an
    // interval; on the logarithm, so that a widened figure stays positive (a starved run's rate
    // near 0 widened linearly went below it).
    let n = runs.len() as f64;
    let widen = if runs.len() > 1 { (n / (n - 1.0)).sqrt() } else { 1.0 };
    let centre = means(runs);
    std::array::from_fn(|f| {
        let (c, x) = (centre[f], sum[f] / n);
        if c > 0.0 && x > 0.0 {
            c * (x / c).powf(widen)
        } else {
            x
        }
    })
}

/// How many resamples to draw for sides of `units` seconds (and runs) in all: [`RESAMPLES`],
/// fewer (at least 200) when the draws would pass 2·10⁸, so a day-long series stays quick.
pub fn resamples_for(units: usize) -> usize {
    (200_000_000 / units.max(1)).clamp(200, RESAMPLES)
}

/// B / A of each figure ([`FIGURES`] order) with its [`CONFIDENCE`] interval: the two-level
/// bootstrap of the module's docs, `resamples` times from `seed`. Both sides need a run.
pub fn bootstrap(a: &[Run], b: &[Run], resamples: usize, seed: u64) -> [Interval; 4] {
    let (ma, mb) = (means(a), means(b));
    let (ia, ib): (Vec<_>, Vec<_>) =
        (a.iter().map(Run::second_means).collect(), b.iter().map(Run::second_means).collect());
    let mut rng = Rng::new(seed);
    let mut ratios: [Vec<f64>; 4] = Default::default();
    for _ in 0..resamples.max(1) {
        let ra = resample(a, &ia, &mut rng);
        let rb = resample(b, &ib, &mut rng);
        for f in 0..4 {
            ratios[f].push(rb[f] / ra[f]);
        }
    }
    std::array::from_fn(|f| {
        let r = &mut ratios[f];
        r.sort_by(f64::total_cmp);
        let n = r.len();
        let tail = (1.0 - CONFIDENCE) / 2.0;
        let lo = ((n as f64 * tail).floor() as usize).min(n - 1);
        let hi = (((n as f64 * (1.0 - tail)).ceil() as usize).max(1) - 1).min(n - 1);
        Interval { ratio: mb[f] / ma[f], low: r[lo], high: r[hi] }
    })
}

/// A figure's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    /// `slower`, `faster`, `no_difference`, `inconclusive`.
    pub verdict: &'static str,
    /// The sentence.
    pub text: String,
    /// Inconclusive: about how many more repeats would settle it.
    pub more: Option<u64>,
    /// `--fail-if-slower`: `fail`, `pass`, `undecided`.
    pub gate: Option<&'static str>,
}

/// `1.4` as `+1.4%`, `-1.1` as `−1.1%` (a minus sign), what rounds to zero (`-0.04`, `0`) as
/// `±0.0%`.
pub(super) fn signed(pct: f64) -> String {
    let tenths = (pct * 10.0).round();
    if tenths == 0.0 || tenths.is_nan() {
        "\u{b1}0.0%".to_string()
    } else if tenths < 0.0 {
        format!("\u{2212}{:.1}%", -tenths / 10.0)
    } else {
        format!("+{:.1}%", tenths / 10.0)
    }
}

/// The verdict on one figure whose B is `slower` (a share of A's figure: rps lower, latency
/// higher) within `low`..`high`, from `runs` runs a side (the fewer side's); `margin`: the
/// smallest change that counts; `gate`: `--fail-if-slower`. `change` is B / A − 1 with its
/// interval, as "no difference found" shows it.
pub fn judge(slower: [f64; 3], change: [f64; 3], runs: u64, margin: f64, gate: Option<f64>) -> Judged {
    let [s, lo, hi] = slower;
    let pct = |v: f64| v * 100.0;
    let gate = gate.map(|t| {
        if lo > t {
            "fail"
        } else if hi <= t {
            "pass"
        } else {
            "undecided"
        }
    });
    if lo > 0.0 {
        let text = format!("B is {:.1}% slower (95% CI {:.1}–{:.1}%)", pct(s), pct(lo), pct(hi));
        return Judged { verdict: "slower", text, more: None, gate };
    }
    if hi < 0.0 {
        let text = format!("B is {:.1}% faster (95% CI {:.1}–{:.1}%)", pct(-s), pct(-hi), pct(-lo));
        return Judged { verdict: "faster", text, more: None, gate };
    }
    let interval = format!("{} to {}", signed(pct(change[1])), signed(pct(change[2])));
    if lo >= -margin && hi <= margin {
        return Judged {
            verdict: "no_difference",
            text: format!("no difference found ({interval})"),
            more: None,
            gate,
        };
    }
    // The interval narrows as 1/√n: the runs that would bring its half-width below the centre's
    // distance from 0 (a difference) or from the margin (no difference), the nearer; on the
    // ratio's logarithm, where a skewed interval (−73% to +302%) is about symmetric.
    let ln = |c: f64| (1.0 + c).max(1e-9).ln();
    let (l, h) = (ln(change[1]), ln(change[2]));
    let (centre, half) = ((l + h) / 2.0, (h - l) / 2.0);
    let margin_ln = ln(margin).min(-ln(-margin.min(0.5)));
    let n = runs.max(1) as f64;
    let needed = [centre.abs(), margin_ln - centre.abs()]
        .into_iter()
        .filter(|t| *t > 0.0)
        .map(|t| n * (half / t).powi(2))
        .fold(f64::INFINITY, f64::min);
    let more = if needed.is_finite() { (needed.ceil() - n).clamp(1.0, 1e9) as u64 } else { 0 };
    let text = if more > 0 {
        format!("inconclusive: the runs disagree; about {more} more repeats would settle it ({interval})")
    } else {
        format!("inconclusive: the runs disagree ({interval})")
    };
    Judged { verdict: "inconclusive", text, more: (more > 0).then_some(more), gate }
}
