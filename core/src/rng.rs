//! Small seeded PRNG and key generators.
//!
//! The generator is xoshiro256** (Blackman and Vigna), seeded through SplitMix64 as its
//! authors recommend. Why this one rather than wyrand or a bare SplitMix64: it is as fast
//! (a few shifts, rotates and one multiply per draw), it passes BigCrush and PractRand, and
//! its 2^256 period makes overlap between the per-connection streams derived from one run
//! seed negligible, where a 64-bit-state generator gives each stream only a 2^64 cycle
//! shared with all the others. It is not cryptographic, and need not be.

/// Small, fast, seeded PRNG (xoshiro256**); the same seed always gives the same sequence.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

/// The SplitMix64 increment (the golden ratio in 64-bit fixed point).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// Salt separating stream indices from plain seeds, so `for_stream(s, 0)` is not `new(s)`.
const STREAM_SALT: u64 = 0xD1B5_4A32_D192_ED03;

/// The SplitMix64 output function: a bijection on u64 with good avalanche.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator seeded with `seed`; every seed, including 0, gives a usable state.
    pub fn new(seed: u64) -> Rng {
        // Four consecutive SplitMix64 outputs: distinct (mix64 is a bijection of distinct
        // inputs), so the xoshiro state is never all zero.
        let mut sm = seed;
        let mut next = || {
            sm = sm.wrapping_add(GOLDEN);
            mix64(sm)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    /// An independent stream for stream index `stream` (e.g. connection number) derived from one run seed, so `--seed` reproduces a whole run.
    pub fn for_stream(seed: u64, stream: u64) -> Rng {
        // For a fixed run seed, `stream -> seed ^ mix64(stream ^ SALT)` is injective, so
        // distinct connections start from distinct SplitMix64 states and hence distinct
        // xoshiro states; the 2^256 period makes their sequences overlap with negligible
        // probability.
        Rng::new(seed ^ mix64(stream ^ STREAM_SALT))
    }

    /// The next 64 uniformly distributed bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, n) without modulo bias (Lemire's multiply-shift with rejection); n == 0 returns 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        let mut low = m as u64;
        if low < n {
            // Reject the 2^64 mod n low products that would over-represent some results.
            // The division runs only on this rare path (probability n / 2^64).
            let threshold = n.wrapping_neg() % n;
            while low < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// Uniform f64 in [0, 1), with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut a = Rng::for_stream(7, 3);
        let mut b = Rng::for_stream(7, 3);
        for _ in 0..1000 {
            assert_eq!(a.below(1000), b.below(1000));
        }
    }

    #[test]
    fn different_seeds_differ() {
        let a: Vec<u64> = {
            let mut r = Rng::new(1);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(2);
            (0..8).map(|_| r.next_u64()).collect()
        };
        assert_ne!(a, b);
    }

    #[test]
    fn streams_differ() {
        // 256 streams of one seed, plus the plain seed: all first-8-draw prefixes distinct.
        let mut seen = std::collections::HashSet::new();
        let prefix = |mut r: Rng| (0..8).map(|_| r.next_u64()).collect::<Vec<_>>();
        assert!(seen.insert(prefix(Rng::new(99))));
        for i in 0..256 {
            assert!(seen.insert(prefix(Rng::for_stream(99, i))), "stream {i}");
        }
        // The same stream index under another run seed differs too.
        assert_ne!(prefix(Rng::for_stream(1, 0)), prefix(Rng::for_stream(2, 0)));
    }

    #[test]
    fn seed_zero_is_usable() {
        let mut r = Rng::new(0);
        let draws: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert!(draws.iter().any(|&d| d != 0));
    }

    #[test]
    fn below_in_range() {
        let mut r = Rng::new(5);
        // (1 << 63) + 1 rejects about half of all draws, exercising the retry loop.
        for &n in &[1u64, 2, 3, 10, 1_000_000_000_000, (1 << 63) + 1, u64::MAX] {
            for _ in 0..10_000 {
                assert!(r.below(n) < n, "n = {n}");
            }
        }
        for _ in 0..100 {
            assert_eq!(r.below(1), 0);
        }
    }

    #[test]
    fn below_zero_is_zero() {
        let mut r = Rng::new(5);
        for _ in 0..100 {
            assert_eq!(r.below(0), 0);
        }
    }

    #[test]
    fn below_reaches_both_ends() {
        let mut r = Rng::new(11);
        let draws: Vec<u64> = (0..1000).map(|_| r.below(3)).collect();
        for v in 0..3 {
            assert!(draws.contains(&v));
        }
    }

    #[test]
    fn below_ten_chi_square() {
        // 100k draws of below(10): expected 10k per bucket. With 9 degrees of freedom the
        // chi-square statistic exceeds 27.88 with probability 0.001 for a uniform source.
        // The seeds are fixed, so the test is deterministic; several seeds guard against a
        // lucky one.
        for seed in [0u64, 1, 2, 0xDEAD_BEEF] {
            let mut r = Rng::new(seed);
            let mut counts = [0u64; 10];
            let draws = 100_000u64;
            for _ in 0..draws {
                counts[r.below(10) as usize] += 1;
            }
            let expected = draws as f64 / 10.0;
            let chi2: f64 = counts
                .iter()
                .map(|&c| {
                    let d = c as f64 - expected;
                    d * d / expected
                })
                .sum();
            assert!(chi2 < 27.88, "seed {seed}: chi2 = {chi2}, counts {counts:?}");
        }
    }

    #[test]
    fn next_f64_in_unit_interval() {
        let mut r = Rng::new(3);
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        let mean = sum / 100_000.0;
        // Standard error of the mean is 1/sqrt(12 * 1e5) ~ 0.0009; 0.005 is > 5 sigma.
        assert!((mean - 0.5).abs() < 0.005, "mean {mean}");
    }

    #[test]
    fn known_answer() {
        // Pins the algorithm so a refactor cannot silently change what `--seed` reproduces.
        // Values from an independent Python transcription of SplitMix64 + xoshiro256**.
        assert_eq!(mix64(GOLDEN), 0xE220_A839_7B1D_CDAF); // SplitMix64(0)'s first output
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0x99EC_5F36_CB75_F2B4);
        assert_eq!(r.next_u64(), 0xBF6E_1F78_4956_452A);
        assert_eq!(r.next_u64(), 0x1A5F_849D_4933_E6E0);
        let mut r = Rng::new(12345);
        assert_eq!(r.next_u64(), 0xBE6A_3637_4160_D49B);
        assert_eq!(r.next_u64(), 0x214A_AA06_37A6_88C6);
        assert_eq!(r.next_u64(), 0xF69D_16DE_9954_D388);
    }
}
