//! Key and value-size distributions: Zipf and Gaussian keys over `[0, n)` in O(1) memory, and
//! value sizes that are fixed, a uniform range or a weighted list.

use crate::rng::Rng;

/// Zipf(θ) over `[0, n)`: rank `r` (0-based) has probability ∝ `1 / (r + 1)^θ`, drawn in O(1)
/// time and memory for any `n` up to 2^53 (rejection-inversion, Hörmann and Derflinger 1996, as
/// in Apache Commons RNG's `RejectionInversionZipfSampler`).
///
/// Nothing is summed over `n`, so `n = 10^12` costs what `n = 10` does: about 1.1 tries per
/// draw, each a `ln` and an `exp`. [`Zipf::sample`] turns the rank into a key with a bijection of
/// `[0, n)` (`(r · a + b) mod n`, `a` coprime with `n` near `n / φ`, `b` near `n / φ²`), so the
/// hot keys are spread over the keyspace rather than being keys 0, 1, 2, …;
/// [`Zipf::sample_rank`] gives the rank itself.
///
/// [`Zipf::from_key`] is memtier_benchmark's `Z` key pattern instead: key `k` of
/// `[first, first + n)` has probability ∝ `1 / k^θ` (its own number, not a rank counted from
/// 1), and keys are not scattered: `first` is the hottest.
#[derive(Clone, Debug, PartialEq)]
pub struct Zipf {
    n: u64,
    theta: f64,
    /// The number whose weight is `1 / low^θ` that rank 0 stands for: 1, or memtier's first key.
    low: u64,
    /// The key of rank 0 before scrambling: 0, or memtier's first key.
    base: u64,
    /// `1 / low`.
    inv_low: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
    /// The rank-scrambling multiplier, coprime with `n` (1 when `n <= 1`).
    mult: u64,
    /// The rank-scrambling offset, below `n` (0 when `n <= 1`).
    offset: u64,
}

/// `log1p(x) / x`, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `expm1(x) / x`, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Zipf {
    /// Largest keyspace a Zipf sampler takes: ranks are computed in f64.
    pub const MAX_N: u64 = 1 << 53;

    /// A sampler over `[0, n)` with exponent `theta`; `None` unless `theta` is finite and > 0 and
    /// `n <= Zipf::MAX_N`. `n == 0` always gives 0, as `-r 0` does.
    pub fn new(n: u64, theta: f64) -> Option<Zipf> {
        Zipf::weighted(n, theta, 1, true)
    }

    /// memtier_benchmark's `Z` over the keys `[first, first + n)`: key `k` drawn with
    /// probability ∝ `1 / k^θ`, `first` the hottest, no scrambling (obj_gen.cpp's
    /// `zipf_distribution`, the same rejection-inversion over `[first, first + n − 1]`). `None`
    /// unless `theta` is finite and > 0, `first` is at least 1 and the last key at most
    /// [`Zipf::MAX_N`].
    pub fn from_key(first: u64, n: u64, theta: f64) -> Option<Zipf> {
        if first == 0 || first.checked_add(n)? > Zipf::MAX_N {
            return None;
        }
        Zipf::weighted(n, theta, first, false)
    }

    /// The sampler over ranks `[0, n)`, rank `r` weighing `1 / (low + r)^θ`: keys in `[0, n)`
    /// scrambled from the ranks (`scatter`), or the ranks' own numbers `low + r`.
    fn weighted(n: u64, theta: f64, low: u64, scatter: bool) -> Option<Zipf> {
        if !(theta.is_finite() && theta > 0.0) || n > Zipf::MAX_N {
            return None;
        }
        let mut z = Zipf {
            n,
            theta,
            low,
            base: if scatter { 0 } else { low },
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
            mult: 1,
            offset: 0,
            inv_low: 0.0,
        };
        z.inv_low = 1.0 / low as f64;
        let a = low as f64;
        z.h_integral_x1 = z.h_integral(a + 0.5) - z.h(a);
        z.h_integral_n = z.h_integral((low + n.max(1) - 1) as f64 + 0.5);
        z.s = a + 1.0 - z.h_integral_inv(z.h_integral(a + 1.5) - z.h(a + 1.0));
        if scatter && n > 1 {
            // n / φ, then up to the next value coprime with n (at most a few dozen steps).
            let mut a = ((n as f64) * 0.618_033_988_749_894_9) as u64;
            a = a.clamp(1, n - 1);
            while gcd(a, n) != 1 {
                a += 1;
            }
            z.mult = a;
            z.offset = ((n as f64) * 0.381_966_011_250_105_1) as u64 % n;
        }
        Some(z)
    }

    /// The keyspace length.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The first key: 0, or [`Zipf::from_key`]'s `first`.
    pub fn first(&self) -> u64 {
        self.base
    }

    /// The exponent θ.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// `H(x) = ∫ x^-θ`, the integral of [`Zipf::h`] shifted so it is continuous at θ = 1, with
    /// `x` counted in units of `low` (`H(x) = ((x / low)^(1-θ) - 1) / (1 - θ)`): 0 at the first
    /// key, so the head's differences keep their precision however large `low` is (at `low` =
    /// 1 this is Commons RNG's `hIntegral` exactly).
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = (x * self.inv_low).ln();
        helper2((1.0 - self.theta) * log_x) * log_x
    }

    /// `h(x) = x^-θ`, in the units of [`Zipf::h_integral`]: `(x / low)^-θ / low`.
    fn h(&self, x: f64) -> f64 {
        (-self.theta * (x * self.inv_low).ln()).exp() * self.inv_low
    }

    /// The inverse of [`Zipf::h_integral`].
    fn h_integral_inv(&self, x: f64) -> f64 {
        // Clamp at -1: rounding may push t just below, where log1p is undefined.
        let t = (x * (1.0 - self.theta)).max(-1.0);
        (helper1(t) * x).exp() * self.low as f64
    }

    /// A rank in `[0, n)`: 0 is the most frequent.
    #[inline]
    pub fn sample_rank(&self, rng: &mut Rng) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inv(u);
            // `as` saturates (NaN gives 0), and the clamp keeps k in [low, low + n - 1]
            // whatever rounding did.
            let k = ((x + 0.5) as u64).clamp(self.low, self.low + self.n - 1);
            let kf = k as f64;
            if kf - x <= self.s || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k - self.low;
            }
        }
    }

    /// The key of rank `rank` (< n): a bijection of `[0, n)` that spreads neighbouring ranks
    /// ([`Zipf::from_key`]'s: `first + rank`).
    #[inline]
    pub fn key_of_rank(&self, rank: u64) -> u64 {
        if self.n <= 1 {
            return self.base;
        }
        let r = (u128::from(rank) * u128::from(self.mult) + u128::from(self.offset)) % u128::from(self.n);
        self.base + r as u64
    }

    /// A key in `[0, n)` (0 when `n == 0`; [`Zipf::from_key`]'s in `[first, first + n)`): a
    /// Zipf rank, scrambled by [`Zipf::key_of_rank`].
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        self.key_of_rank(self.sample_rank(rng))
    }
}

/// A normal distribution over `[0, n)` centred on `n / 2` with standard deviation `n / 6`, as
/// memtier's `--key-pattern G` defaults to; draws outside the keyspace (0.27%) are redrawn.
#[inline]
pub fn gaussian(n: u64, rng: &mut Rng) -> u64 {
    normal(n, n as f64 / 2.0, n as f64 / 6.0, rng)
}

/// A normal distribution over `[0, n)` of this mean and standard deviation (memtier's
/// `--key-median` and `--key-stddev`); draws outside the keyspace are redrawn. The mean must
/// lie in `[0, n)` and the deviation be positive ([`KeyDist::parse`] holds them so), so that a
/// draw lands inside with a chance of at least 1 in 100 or so for any deviation of at least
/// half a key.
#[inline]
pub fn normal(n: u64, mean: f64, sd: f64, rng: &mut Rng) -> u64 {
    if n <= 1 {
        return 0;
    }
    loop {
        // Box-Muller; 1 - u is in (0, 1], so the log is finite.
        let u = 1.0 - rng.next_f64();
        let v = rng.next_f64();
        let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        let x = mean + sd * z;
        if x >= 0.0 && x < n as f64 {
            // Rounding can give exactly n for n above 2^53; the min keeps the key below n.
            return (x as u64).min(n - 1);
        }
    }
}

/// How keys are drawn from the `-r` keyspace (`--key-dist`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDist {
    /// Independent uniform draws (redis-benchmark's `-r`).
    Uniform,
    /// 0, 1, 2, … over the test's connections together, wrapping at the keyspace length.
    Sequential,
    /// FIRST, FIRST + 1, … over the test's connections together, n keys before wrapping to
    /// FIRST (`sequential:FIRST`: memtier's `S` and `P` patterns from `--key-minimum`).
    SequentialFrom(u64),
    /// Uniform over FIRST … FIRST + n − 1 (`uniform:FIRST`: memtier's `R` pattern from
    /// `--key-minimum`).
    UniformFrom(u64),
    /// Zipf with this exponent: see [`Zipf`].
    Zipf(f64),
    /// memtier's `Z` from key FIRST (`zipf:THETA:FIRST`, FIRST at least 1): key `k` of FIRST …
    /// FIRST + n − 1 drawn with probability ∝ `1 / k^THETA`, FIRST the hottest: see
    /// [`Zipf::from_key`].
    ZipfFrom {
        /// The exponent.
        theta: f64,
        /// The first key, the hottest.
        first: u64,
    },
    /// Normal, mean n/2 and standard deviation n/6: see [`gaussian`].
    Gaussian,
    /// Normal with this mean (a key number in `[first, first + n)`) and standard deviation (at
    /// least 0.5, so that a draw lands on a key in a few tries): see [`normal`].
    Normal {
        /// The mean, a key number.
        mean: f64,
        /// The standard deviation, in keys.
        sd: f64,
        /// The first key (0, or FIRST of `gaussian:MEAN:SD:FIRST`: memtier's `G` from
        /// `--key-minimum`).
        first: u64,
    },
}

impl KeyDist {
    /// Parses `uniform`, `sequential`, `zipf:THETA` (`zipf` alone is 0.99), `gaussian` or
    /// `gaussian:MEAN:SD` (a key number and a deviation in keys, at least 0.5; the mean is
    /// checked against the keyspace where it is known, by [`KeyDist::space`]); and from key
    /// FIRST, below 10^12: `sequential:FIRST`, `uniform:FIRST`, `zipf:THETA:FIRST` (FIRST at
    /// least 1) and `gaussian:MEAN:SD:FIRST`.
    pub fn parse(text: &str) -> Result<KeyDist, String> {
        let lower = text.trim().to_ascii_lowercase();
        let first_key = |text: &str, form: &str| {
            text.parse::<u64>()
                .ok()
                .filter(|&f| f < 1_000_000_000_000)
                .ok_or_else(|| format!("{form} takes a key number below 10^12"))
        };
        // `sequential:FIRST` and `uniform:FIRST`: from key FIRST.
        for (name, from) in
            [("sequential", KeyDist::SequentialFrom as fn(u64) -> KeyDist), ("uniform", KeyDist::UniformFrom)]
        {
            if let Some(first) = lower.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
                return first_key(first, &format!("{name}:FIRST")).map(from);
            }
        }
        if let Some(params) = lower.strip_prefix("gaussian:") {
            let bad =
                || "gaussian:MEAN:SD takes a key number and a deviation of at least 0.5 keys".to_string();
            let (mean, rest) = params.split_once(':').ok_or_else(bad)?;
            let (sd, first) = match rest.split_once(':') {
                Some((sd, first)) => (sd, first_key(first, "gaussian:MEAN:SD:FIRST")?),
                None => (rest, 0),
            };
            let (mean, sd) = (mean.parse::<f64>().map_err(|_| bad())?, sd.parse::<f64>().map_err(|_| bad())?);
            if !(mean.is_finite() && mean >= 0.0 && sd.is_finite() && sd >= 0.5) {
                return Err(bad());
            }
            return Ok(KeyDist::Normal { mean, sd, first });
        }
        match lower.as_str() {
            "uniform" => Ok(KeyDist::Uniform),
            "sequential" => Ok(KeyDist::Sequential),
            "gaussian" => Ok(KeyDist::Gaussian),
            "zipf" => Ok(KeyDist::Zipf(0.99)),
            other => {
                let Some(params) = other.strip_prefix("zipf:") else {
                    return Err(
                        "the distributions are uniform, sequential, zipf:THETA and gaussian".to_string()
                    );
                };
                let (theta, first) = match params.split_once(':') {
                    Some((theta, first)) => (theta, Some(first_key(first, "zipf:THETA:FIRST")?)),
                    None => (params, None),
                };
                let theta = theta
                    .parse::<f64>()
                    .ok()
                    .filter(|t| t.is_finite() && *t > 0.0 && *t <= 100.0)
                    .ok_or("the zipf exponent must be a number above 0 and at most 100")?;
                match first {
                    Some(0) => Err("zipf:THETA:FIRST takes a first key of at least 1".to_string()),
                    Some(first) => Ok(KeyDist::ZipfFrom { theta, first }),
                    None => Ok(KeyDist::Zipf(theta)),
                }
            }
        }
    }
}

impl std::fmt::Display for KeyDist {
    /// The `--key-dist` syntax: `uniform`, `sequential`, `zipf:0.99`, `gaussian`, … as
    /// [`KeyDist::parse`] reads them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyDist::Uniform => f.write_str("uniform"),
            KeyDist::Sequential => f.write_str("sequential"),
            KeyDist::SequentialFrom(first) => write!(f, "sequential:{first}"),
            KeyDist::UniformFrom(first) => write!(f, "uniform:{first}"),
            KeyDist::Zipf(t) => write!(f, "zipf:{t}"),
            KeyDist::ZipfFrom { theta, first } => write!(f, "zipf:{theta}:{first}"),
            KeyDist::Gaussian => f.write_str("gaussian"),
            KeyDist::Normal { mean, sd, first: 0 } => write!(f, "gaussian:{mean}:{sd}"),
            KeyDist::Normal { mean, sd, first } => write!(f, "gaussian:{mean}:{sd}:{first}"),
        }
    }
}

/// The size of the values (`-d`): fixed, uniform over a range, or a weighted list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueSize {
    /// Every value `n` bytes (redis-benchmark's `-d n`).
    Fixed(usize),
    /// Uniform over `[lo, hi]`, both included (`-d lo-hi`).
    Range {
        /// The smallest size.
        lo: usize,
        /// The largest size.
        hi: usize,
    },
    /// `(size, weight)` pairs: a size is drawn with probability weight / total (`-d s:w,s:w`).
    Weighted(Vec<(usize, u64)>),
    /// Set by the request's key, not drawn (`-d lo-hi/key`, memtier's `--data-size-pattern S`):
    /// `lo` for the keyspace's first key, `hi` for its last, in proportion between.
    ByKey {
        /// The first key's size.
        lo: usize,
        /// The last key's size.
        hi: usize,
    },
}

impl ValueSize {
    /// The largest value size, as redis-benchmark clamps `-d`: 1 GiB.
    pub const MAX: usize = 1 << 30;

    /// Parses `-d`: `N` (redis-benchmark's fixed size, clamped into [1, 1 GiB] as it does),
    /// `LO-HI` (uniform, both included) or `SIZE:WEIGHT,…` (a weight left out is 1). Sizes in
    /// ranges and lists must be 1 to 1 GiB. The error says what is wrong, without the option.
    pub fn parse(text: &str) -> Result<ValueSize, String> {
        let text = text.trim();
        if let Ok(n) = text.parse::<i64>() {
            return Ok(ValueSize::Fixed(n.clamp(1, ValueSize::MAX as i64) as usize));
        }
        let size = |t: &str| -> Result<usize, String> {
            match t.trim().parse::<usize>() {
                Ok(n) if (1..=ValueSize::MAX).contains(&n) => Ok(n),
                _ => Err(format!("'{t}' is not a size from 1 to {} bytes", ValueSize::MAX)),
            }
        };
        if text.contains([',', ':']) {
            let mut list = Vec::new();
            for item in text.split(',') {
                let (s, w) = match item.split_once(':') {
                    Some((s, w)) => {
                        let w = w
                            .trim()
                            .parse::<u64>()
                            .map_err(|_| format!("'{w}' is not a weight (0 or more)"))?;
                        (s, w)
                    }
                    None => (item, 1),
                };
                list.push((size(s)?, w));
            }
            if list.iter().all(|&(_, w)| w == 0) {
                return Err("at least one weight must be above 0".to_string());
            }
            if list.iter().try_fold(0u64, |t, &(_, w)| t.checked_add(w)).is_none() {
                return Err("the weights add up to more than 2^64".to_string());
            }
            return Ok(ValueSize::Weighted(list));
        }
        let (range, by_key) = text.strip_suffix("/key").map_or((text, false), |r| (r, true));
        if let Some((lo, hi)) = range.split_once('-') {
            let (lo, hi) = (size(lo)?, size(hi)?);
            if lo > hi {
                return Err(format!("the range {lo}-{hi} is empty (the smaller size comes first)"));
            }
            return Ok(if by_key { ValueSize::ByKey { lo, hi } } else { ValueSize::Range { lo, hi } });
        }
        Err("expected a size (3), a range (16-1024, 16-1024/key: by the key's place in the keyspace) or a \
             weighted list (16:3,1024:1)"
            .to_string())
    }

    /// The largest size a value can have.
    pub fn max(&self) -> usize {
        match self {
            ValueSize::Fixed(n) => *n,
            ValueSize::Range { hi, .. } | ValueSize::ByKey { hi, .. } => *hi,
            ValueSize::Weighted(list) => list.iter().map(|&(s, _)| s).max().unwrap_or(0),
        }
    }

    /// Whether every value has the same size.
    pub fn is_fixed(&self) -> bool {
        match self {
            ValueSize::Fixed(_) => true,
            ValueSize::Range { lo, hi } | ValueSize::ByKey { lo, hi } => lo == hi,
            ValueSize::Weighted(list) => {
                let mut sizes = list.iter().filter(|&&(_, w)| w > 0).map(|&(s, _)| s);
                let first = sizes.next();
                sizes.all(|s| Some(s) == first)
            }
        }
    }

    /// The sampler for this spec, with weights made cumulative once.
    pub fn sampler(&self) -> SizeSampler {
        match self {
            ValueSize::Fixed(n) => SizeSampler::Fixed(*n),
            // By the key: the template sizes each value from its key, not from this.
            ValueSize::Range { lo, hi } | ValueSize::ByKey { lo, hi } => {
                SizeSampler::Range { lo: *lo, span: (*hi - *lo) as u64 + 1 }
            }
            ValueSize::Weighted(list) => {
                let mut total = 0u64;
                let cumulative = list
                    .iter()
                    .filter(|&&(_, w)| w > 0)
                    .map(|&(s, w)| {
                        total = total.saturating_add(w);
                        (total, s)
                    })
                    .collect();
                SizeSampler::Weighted { cumulative, total }
            }
        }
    }
}

impl std::fmt::Display for ValueSize {
    /// The `-d` syntax that parses back to this spec: `3`, `16-1024`, `16:3,1024:1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueSize::Fixed(n) => write!(f, "{n}"),
            ValueSize::Range { lo, hi } => write!(f, "{lo}-{hi}"),
            ValueSize::ByKey { lo, hi } => write!(f, "{lo}-{hi}/key"),
            ValueSize::Weighted(list) => {
                for (i, (s, w)) in list.iter().enumerate() {
                    write!(f, "{}{s}:{w}", if i == 0 { "" } else { "," })?;
                }
                Ok(())
            }
        }
    }
}

/// Draws value sizes; built once per template from a [`ValueSize`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeSampler {
    /// Always this size.
    Fixed(usize),
    /// `lo + below(span)`.
    Range {
        /// The smallest size.
        lo: usize,
        /// How many sizes there are (`hi - lo + 1`).
        span: u64,
    },
    /// `(running total of weights, size)`, ascending; a draw below `total` picks the first
    /// entry whose running total exceeds it.
    Weighted {
        /// Running totals and sizes.
        cumulative: Vec<(u64, usize)>,
        /// The sum of the weights.
        total: u64,
    },
}

impl SizeSampler {
    /// The next size.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> usize {
        match self {
            SizeSampler::Fixed(n) => *n,
            SizeSampler::Range { lo, span } => lo + rng.below(*span) as usize,
            SizeSampler::Weighted { cumulative, total } => {
                let x = rng.below(*total);
                cumulative.iter().find(|&&(c, _)| x < c).or(cumulative.last()).map_or(0, |&(_, s)| s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chi-square statistic of observed counts against expected counts.
    fn chi2(observed: &[u64], expected: &[f64]) -> f64 {
        observed
            .iter()
            .zip(expected)
            .map(|(&o, &e)| {
                let d = o as f64 - e;
                d * d / e
            })
            .sum()
    }

    /// Draws `draws` ranks from `z` and checks their counts against `weights` (rank `i`'s
    /// unnormalised probability) with a chi-square test at p = 0.001: ranks are grouped in
    /// order until each bucket expects at least 40 draws, so the approximation holds. The
    /// seed is fixed, so the check is deterministic.
    fn assert_ranks_follow(z: &Zipf, weights: &[f64], what: &str) -> Vec<u64> {
        let norm: f64 = weights.iter().sum();
        let draws = 1_000_000u64;
        let mut counts = vec![0u64; weights.len()];
        let mut rng = Rng::new(7);
        for _ in 0..draws {
            counts[z.sample_rank(&mut rng) as usize] += 1;
        }
        let (mut obs, mut exp) = (Vec::new(), Vec::new());
        let (mut o, mut e) = (0u64, 0.0f64);
        for (c, w) in counts.iter().zip(weights) {
            o += c;
            e += w / norm * draws as f64;
            if e >= 40.0 {
                obs.push(o);
                exp.push(e);
                (o, e) = (0, 0.0);
            }
        }
        if e > 0.0 {
            *obs.last_mut().unwrap() += o;
            *exp.last_mut().unwrap() += e;
        }
        let df = (obs.len() - 1) as f64;
        // Wilson-Hilferty approximation of the p = 0.001 quantile (z = 3.09).
        let crit = df * (1.0 - 2.0 / (9.0 * df) + 3.09 * (2.0 / (9.0 * df)).sqrt()).powi(3);
        let stat = chi2(&obs, &exp);
        assert!(stat < crit, "{what}: chi2 {stat} over {df} df, critical {crit}");
        counts
    }

    #[test]
    fn zipf_matches_the_exact_pmf() {
        // n = 1000: rank r weighs 1 / (r + 1)^θ.
        for theta in [0.5, 0.99, 1.0, 1.5] {
            let n = 1000u64;
            let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-theta)).collect();
            let counts = assert_ranks_follow(&Zipf::new(n, theta).unwrap(), &weights, &format!("θ {theta}"));
            assert!(counts[0] > counts[1] && counts[1] > counts[9], "θ {theta}: rank 0 is the hottest");
        }
    }

    #[test]
    fn zipf_from_a_key_is_memtiers_over_its_own_numbers() {
        // memtier's Z over keys 1000 … 1999: key k weighs 1 / k^θ (much flatter than ranks
        // from 1), the first key the hottest, keys in order (no scrambling).
        for (first, theta) in [(1000u64, 1.0), (1000, 2.5), (1, 0.99), (7, 1.5)] {
            let n = 1000u64;
            let z = Zipf::from_key(first, n, theta).unwrap();
            let weights: Vec<f64> = (first..first + n).map(|k| (k as f64).powf(-theta)).collect();
            let counts = assert_ranks_follow(&z, &weights, &format!("first {first} θ {theta}"));
            // Flatter from 1000: key 1999 still weighs half of key 1000 at θ 1.
            assert!(counts[0] > counts[999] * 3 / 2, "first {first} θ {theta}: {counts:?}");
            assert_eq!((z.key_of_rank(0), z.key_of_rank(n - 1), z.first()), (first, first + n - 1, first));
            let mut rng = Rng::new(3);
            assert!((0..10_000).map(|_| z.sample(&mut rng)).all(|k| (first..first + n).contains(&k)));
        }
        // From 1 it is the rank sampler's pmf, shifted by one.
        let mut rng = (Rng::new(5), Rng::new(5));
        let (a, b) = (Zipf::new(50, 1.2).unwrap(), Zipf::from_key(1, 50, 1.2).unwrap());
        for _ in 0..1000 {
            assert_eq!(a.sample_rank(&mut rng.0), b.sample_rank(&mut rng.1));
        }
        assert!(Zipf::from_key(0, 10, 1.0).is_none());
        assert!(Zipf::from_key(Zipf::MAX_N - 10, 11, 1.0).is_none());
        assert!(Zipf::from_key(Zipf::MAX_N - 10, 10, 1.0).is_some());
        let one = Zipf::from_key(42, 1, 1.0).unwrap();
        assert_eq!(one.sample(&mut rng.0), 42);
    }

    #[test]
    fn zipf_huge_keyspace_in_constant_memory() {
        // 10^12 keys: no table, values below n, and the head is as heavy as the pmf says:
        // P(rank 0) = 1 / H(n, 0.99) = 1 / 32.40 (H by Euler-Maclaurin, ζ(0.99) + n^0.01 / 0.01,
        // computed offline with mpmath). With 200k draws the count's sd is ~77; allow ±500.
        let n = 1_000_000_000_000u64;
        let z = Zipf::new(n, 0.99).unwrap();
        assert!(std::mem::size_of_val(&z) <= 80);
        let mut rng = Rng::new(3);
        let mut rank0 = 0u64;
        let mut max = 0u64;
        for _ in 0..200_000 {
            let r = z.sample_rank(&mut rng);
            assert!(r < n);
            rank0 += u64::from(r == 0);
            max = max.max(r);
            assert!(z.key_of_rank(r) < n);
        }
        let want = 200_000.0 / 32.40;
        assert!((rank0 as f64 - want).abs() < 500.0, "rank 0 drawn {rank0} times, want ~{want}");
        // The tail is reached: P(rank >= 10^9) = 1 - H(10^9)/H(10^12) ≈ 0.27.
        assert!(max > 1_000_000_000, "max rank {max}");
        assert!(Zipf::new(Zipf::MAX_N, 0.99).is_some());
        assert!(Zipf::new(Zipf::MAX_N + 1, 0.99).is_none());
    }

    #[test]
    fn zipf_rejects_bad_exponents_and_handles_tiny_keyspaces() {
        for theta in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Zipf::new(10, theta).is_none(), "θ {theta}");
        }
        let mut rng = Rng::new(1);
        for n in [0u64, 1] {
            let z = Zipf::new(n, 0.99).unwrap();
            assert!((0..100).all(|_| z.sample(&mut rng) == 0));
        }
        let z = Zipf::new(2, 0.99).unwrap();
        let ones = (0..10_000).filter(|_| z.sample_rank(&mut rng) == 1).count();
        // P(rank 1) = 2^-0.99 / (1 + 2^-0.99) ≈ 0.3348; sd over 10^4 draws ≈ 47.
        assert!((ones as i64 - 3348).abs() < 300, "{ones}");
    }

    #[test]
    fn zipf_extreme_exponents_terminate_and_stay_in_range() {
        // The accepted range of --key-dist zipf:THETA is (0, 100]: every draw ends, is below n,
        // and a steep exponent puts nearly everything on rank 0 (P = 1/ζ(100) ≈ 1 - 2^-100).
        let mut rng = Rng::new(9);
        for n in [2u64, 1000, 1_000_000_000_000, Zipf::MAX_N] {
            for theta in [1e-6, 0.01, 0.5, 1.0, 1.000_001, 2.0, 10.0, 100.0] {
                let z = Zipf::new(n, theta).unwrap();
                for _ in 0..2000 {
                    assert!(z.sample_rank(&mut rng) < n, "n {n} θ {theta}");
                }
            }
            let steep = Zipf::new(n, 100.0).unwrap();
            assert!((0..1000).all(|_| steep.sample_rank(&mut rng) == 0), "n {n}");
        }
    }

    #[test]
    fn zipf_scrambling_is_a_bijection() {
        for n in [2u64, 3, 10, 97, 1000, 1024, 3600] {
            let z = Zipf::new(n, 0.99).unwrap();
            let mut seen = vec![false; n as usize];
            for r in 0..n {
                let k = z.key_of_rank(r);
                assert!(!seen[k as usize], "n {n}: key {k} twice");
                seen[k as usize] = true;
            }
            // The hottest key is not key 0, and the two hottest are not neighbours.
            if n > 10 {
                assert_ne!(z.key_of_rank(0), 0, "n {n}");
                assert!(z.key_of_rank(1).abs_diff(z.key_of_rank(0)) > 1, "n {n}");
            }
        }
    }

    #[test]
    fn normal_has_its_mean_and_deviation() {
        // memtier's --key-median 500 --key-stddev 25 over 1000 keys: the sample's mean and
        // deviation within 1% of the asked ones, every key in the space; a mean near the edge
        // redraws what falls outside.
        let mut rng = Rng::new(7);
        let draws: Vec<f64> = (0..100_000).map(|_| normal(1000, 500.0, 25.0, &mut rng) as f64).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let sd = (draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / draws.len() as f64).sqrt();
        // Keys are the draws rounded down: the mean half a key below.
        assert!((mean - 499.5).abs() < 5.0 && (sd - 25.0).abs() < 0.5, "mean {mean} sd {sd}");
        assert!((0..10_000).all(|_| normal(1000, 1.0, 300.0, &mut rng) < 1000));
        assert_eq!(normal(1, 0.0, 5.0, &mut rng), 0);
    }

    #[test]
    fn gaussian_matches_the_normal_cdf() {
        // n = 600: mean 300, sd 100. 12 buckets of 50 keys (half a sd each); expected counts
        // from the normal cdf truncated to [0, 600). Chi-square with 11 df: p = 0.001 at 31.26.
        let n = 600u64;
        let cdf = |x: f64| 0.5 * (1.0 + erf((x - 300.0) / (100.0 * std::f64::consts::SQRT_2)));
        let mass = cdf(600.0) - cdf(0.0);
        let draws = 200_000u64;
        for seed in [1u64, 2, 3] {
            let mut rng = Rng::new(seed);
            let mut counts = [0u64; 12];
            for _ in 0..draws {
                let k = gaussian(n, &mut rng);
                assert!(k < n);
                counts[(k / 50) as usize] += 1;
            }
            let expected: Vec<f64> = (0..12)
                .map(|i| (cdf((i * 50 + 50) as f64) - cdf((i * 50) as f64)) / mass * draws as f64)
                .collect();
            let stat = chi2(&counts, &expected);
            assert!(stat < 31.26, "seed {seed}: chi2 {stat}, counts {counts:?}");
        }
        let mut rng = Rng::new(1);
        assert!((0..100).all(|_| gaussian(0, &mut rng) == 0 && gaussian(1, &mut rng) == 0));
        assert!((0..10_000).all(|_| gaussian(1_000_000_000_000, &mut rng) < 1_000_000_000_000));
    }

    /// erf by Abramowitz and Stegun 7.1.26 (absolute error < 1.5e-7), enough for expected counts.
    fn erf(x: f64) -> f64 {
        let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
        let y = 1.0
            - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
                + 0.254_829_592)
                * t
                * (-x * x).exp();
        if x < 0.0 {
            -y
        } else {
            y
        }
    }

    #[test]
    fn range_sizes_stay_in_bounds_and_are_uniform() {
        // 16..=25: 10 sizes, 100k draws; chi-square with 9 df, p = 0.001 at 27.88.
        let s = ValueSize::Range { lo: 16, hi: 25 }.sampler();
        let mut rng = Rng::new(4);
        let mut counts = [0u64; 10];
        for _ in 0..100_000 {
            let n = s.sample(&mut rng);
            assert!((16..=25).contains(&n));
            counts[n - 16] += 1;
        }
        assert!(chi2(&counts, &[10_000.0; 10]) < 27.88, "{counts:?}");
        let s = ValueSize::Range { lo: 16, hi: 1024 }.sampler();
        let draws: Vec<usize> = (0..10_000).map(|_| s.sample(&mut rng)).collect();
        assert!(draws.iter().all(|n| (16..=1024).contains(n)));
        assert!(draws.contains(&16) && draws.contains(&1024), "both ends are reached");
    }

    #[test]
    fn weighted_sizes_follow_their_weights() {
        // 16:3,1024:1,100:0 → 75% / 25% / never. 100k draws: sd of the 16 count is 137;
        // allow ±700 (5 sd).
        let spec = ValueSize::Weighted(vec![(16, 3), (1024, 1), (100, 0)]);
        assert_eq!(spec.max(), 1024);
        assert!(!spec.is_fixed());
        assert!(ValueSize::Weighted(vec![(5, 1), (9, 0)]).is_fixed());
        let s = spec.sampler();
        let mut rng = Rng::new(5);
        let mut small = 0i64;
        for _ in 0..100_000 {
            match s.sample(&mut rng) {
                16 => small += 1,
                1024 => {}
                other => panic!("size {other} drawn"),
            }
        }
        assert!((small - 75_000).abs() < 700, "{small}");
    }

    #[test]
    fn parses_the_d_syntax() {
        assert_eq!(ValueSize::parse("3"), Ok(ValueSize::Fixed(3)));
        assert_eq!(ValueSize::parse("0"), Ok(ValueSize::Fixed(1)), "clamped like redis-benchmark");
        assert_eq!(ValueSize::parse("-5"), Ok(ValueSize::Fixed(1)));
        assert_eq!(ValueSize::parse("99999999999"), Ok(ValueSize::Fixed(1 << 30)));
        assert_eq!(ValueSize::parse("16-1024"), Ok(ValueSize::Range { lo: 16, hi: 1024 }));
        let by_key = ValueSize::parse("16-1024/key");
        assert_eq!(by_key, Ok(ValueSize::ByKey { lo: 16, hi: 1024 }));
        assert_eq!(by_key.map(|s| s.to_string()), Ok("16-1024/key".to_string()));
        assert!(ValueSize::parse("16/key").is_err() && ValueSize::parse("9-2/key").is_err());
        assert_eq!(ValueSize::parse("16:3,1024:1"), Ok(ValueSize::Weighted(vec![(16, 3), (1024, 1)])));
        assert_eq!(ValueSize::parse("16,32"), Ok(ValueSize::Weighted(vec![(16, 1), (32, 1)])));
        for bad in ["1024-16", "0-5", "5-", "x", "16:x", "16:0", "0:1", "1-2000000000", "", "16:1,,"] {
            assert!(ValueSize::parse(bad).is_err(), "{bad}");
        }
        assert!(ValueSize::parse(&format!("1:{},2:1", u64::MAX)).is_err());
        for spec in ["3", "16-1024", "16:3,1024:1"] {
            assert_eq!(ValueSize::parse(spec).unwrap().to_string(), spec);
        }
    }

    #[test]
    fn parses_key_dist() {
        assert_eq!(KeyDist::parse("uniform"), Ok(KeyDist::Uniform));
        assert_eq!(KeyDist::parse("Sequential"), Ok(KeyDist::Sequential));
        assert_eq!(KeyDist::parse("zipf:0.99"), Ok(KeyDist::Zipf(0.99)));
        assert_eq!(KeyDist::parse("zipf"), Ok(KeyDist::Zipf(0.99)));
        assert_eq!(KeyDist::parse("gaussian"), Ok(KeyDist::Gaussian));
        assert_eq!(
            KeyDist::parse("gaussian:500:12.5"),
            Ok(KeyDist::Normal { mean: 500.0, sd: 12.5, first: 0 })
        );
        let from = KeyDist::Normal { mean: 600.0, sd: 25.0, first: 100 };
        assert_eq!(KeyDist::parse("gaussian:600:25:100"), Ok(from));
        assert_eq!(from.to_string(), "gaussian:600:25:100");
        // The mean must be one of the keys 100 … 100 + n − 1: 600 is with 501 keys, not 500.
        assert!(from.space(501).is_ok());
        assert_eq!(from.space(500).unwrap_err(), "the gaussian's mean must be a key of 100 to 599");
        let below = KeyDist::Normal { mean: 99.0, sd: 25.0, first: 100 };
        assert_eq!(below.space(1000).unwrap_err(), "the gaussian's mean must be a key of 100 to 1099");
        assert_eq!(KeyDist::parse("zipf:1.2:5"), Ok(KeyDist::ZipfFrom { theta: 1.2, first: 5 }));
        assert_eq!(KeyDist::ZipfFrom { theta: 1.0, first: 5 }.to_string(), "zipf:1:5");
        for bad in ["zipf:1:0", "zipf:1:x", "zipf:0:5", "zipf:1:1000000000000", "gaussian:5:1:x"] {
            assert!(KeyDist::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(KeyDist::parse("sequential:7"), Ok(KeyDist::SequentialFrom(7)));
        assert_eq!(KeyDist::parse("uniform:7"), Ok(KeyDist::UniformFrom(7)));
        assert!(KeyDist::parse("uniform:x").is_err() && KeyDist::parse("uniform:1000000000000").is_err());
        assert_eq!(KeyDist::SequentialFrom(7).to_string(), "sequential:7");
        assert!(
            KeyDist::parse("sequential:x").is_err() && KeyDist::parse("sequential:1000000000000").is_err()
        );
        assert_eq!(KeyDist::Normal { mean: 500.0, sd: 12.5, first: 0 }.to_string(), "gaussian:500:12.5");
        for bad in ["gaussian:500", "gaussian:-1:5", "gaussian:5:0.1", "gaussian:x:1", "gaussian:5:inf"] {
            assert!(KeyDist::parse(bad).is_err(), "{bad}");
        }
        for bad in ["zipf:0", "zipf:-1", "zipf:nan", "zipf:inf", "zipf:", "normal", ""] {
            assert!(KeyDist::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(KeyDist::Zipf(1.2).to_string(), "zipf:1.2");
        assert!(KeyDist::Zipf(0.99).space(Zipf::MAX_N + 1).is_err());
    }

    #[test]
    fn display_round_trips_the_syntax() {
        assert_eq!(ValueSize::Fixed(3).to_string(), "3");
        assert_eq!(ValueSize::Range { lo: 16, hi: 1024 }.to_string(), "16-1024");
        assert_eq!(ValueSize::Weighted(vec![(16, 3), (1024, 1)]).to_string(), "16:3,1024:1");
    }
}
