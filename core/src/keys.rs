//! Key generation: which number each `__rand_int__` placeholder gets. A [`KeySpace`] says how
//! keys are drawn (literal, uniform, sequential, zipf, gaussian); each connection clones it into
//! a [`KeyGen`] with its own [`Rng`] stream.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::dist::{gaussian, normal, KeyDist, Zipf};
use crate::rng::Rng;

/// A counter shared by every connection of one test (cloning shares it), for sequential keys.
#[derive(Clone, Debug, Default)]
pub struct SharedCounter(Arc<AtomicU64>);

impl SharedCounter {
    /// How many values have been taken from it so far (every connection's together).
    pub fn load(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for SharedCounter {
    /// Two counters are equal when they are the same counter.
    fn eq(&self, other: &SharedCounter) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How `__rand_int__` placeholders are filled.
#[derive(Clone, Debug, PartialEq)]
pub enum KeySpace {
    /// No -r: placeholders are not substituted; the literal text `__rand_int__` is sent (redis-benchmark does this).
    Literal,
    /// -r N: each occurrence an independent uniform value in [0, N); N may be up to 10^12 (no 2^31 cap); -r 0 gives 000000000000.
    Random {
        /// The keyspace length N.
        n: u64,
    },
    /// Uniform over [first, first + n): memtier's `R` pattern from `--key-minimum`
    /// (`uniform:FIRST`).
    RandomFrom {
        /// The first key.
        first: u64,
        /// How many keys, from `first`.
        n: u64,
    },
    /// Sequential: first, first + 1, ... wrapping after n keys, from one counter shared by every
    /// connection of the test (clones share it), so `-n N -r N` sends every key exactly once;
    /// n == 0 gives `first`. A worker of several (`--worker`) covers its own share of the
    /// keyspace: `first` is where it begins.
    Sequential {
        /// The first key.
        first: u64,
        /// How many keys, from `first`, before the counter wraps to `first`.
        n: u64,
        /// The next key, before reduction modulo n.
        next: SharedCounter,
    },
    /// Zipf over [0, n), or memtier's over [first, first + n): see [`Zipf`] (O(1) memory).
    Zipf(Zipf),
    /// Normal over [0, n), mean n/2 and standard deviation n/6: see [`gaussian`].
    Gaussian {
        /// The keyspace length N.
        n: u64,
    },
    /// Normal over [first, first + n) of a given mean and deviation: see [`normal`].
    Normal {
        /// The keyspace length N.
        n: u64,
        /// The mean, counted from `first`: in [0, n).
        mean: f64,
        /// The standard deviation, in keys.
        sd: f64,
        /// The first key.
        first: u64,
    },
}

impl KeySpace {
    /// Sequential keys over [0, n) from a fresh shared counter.
    pub fn sequential(n: u64) -> KeySpace {
        KeySpace::sequential_range(0, n)
    }

    /// Sequential keys over [first, first + n) from a fresh shared counter.
    pub fn sequential_range(first: u64, n: u64) -> KeySpace {
        KeySpace::Sequential { first, n, next: SharedCounter::default() }
    }

    /// The same space with a counter of its own: a sequential space starts again from its first
    /// key (each test of a run gets its own), the others are the same.
    pub fn fresh(&self) -> KeySpace {
        match self {
            KeySpace::Sequential { first, n, .. } => KeySpace::sequential_range(*first, *n),
            other => other.clone(),
        }
    }
}

/// Per-connection key source: owns its Rng (from `Rng::for_stream(seed, conn_index)`), which
/// also draws value sizes.
#[derive(Clone, Debug)]
pub struct KeyGen {
    space: KeySpace,
    /// Also draws value sizes (`Template::write`).
    pub(crate) rng: Rng,
    /// The last key drawn (0 before any): a one-key read's key, to tell whether its writer
    /// had written it ([`crate::Mix`]).
    pub(crate) last: u64,
}

impl KeyGen {
    /// A key source over `space`, drawing random keys from `rng`.
    pub fn new(space: KeySpace, rng: Rng) -> KeyGen {
        KeyGen { space, rng, last: 0 }
    }

    /// The next key in [0, n) as the space says (always 0 for Literal or n == 0).
    #[inline]
    pub fn next_key(&mut self) -> u64 {
        // `-r N`, the common case, is inlined into the request's encoding; the rest is not.
        let k =
            if let KeySpace::Random { n } = self.space { self.rng.below(n) } else { self.next_key_other() };
        self.last = k;
        k
    }

    /// Where the last key drawn lies in the keyspace: 0 at its first key, 1 at its last (0 for
    /// a space of one key or none): `-d lo-hi/key`'s place.
    pub(crate) fn place(&self) -> f64 {
        let (first, n) = match &self.space {
            KeySpace::Literal => (0, 0),
            KeySpace::Random { n } | KeySpace::Gaussian { n } => (0, *n),
            KeySpace::Sequential { first, n, .. }
            | KeySpace::RandomFrom { first, n }
            | KeySpace::Normal { first, n, .. } => (*first, *n),
            KeySpace::Zipf(z) => (z.first(), z.n()),
        };
        if n <= 1 {
            return 0.0;
        }
        (self.last.saturating_sub(first) as f64 / (n - 1) as f64).clamp(0.0, 1.0)
    }

    /// Pins every key drawn from here on to `key`: a cache-aside `SET` goes to the key that
    /// missed ([`crate::cache`]).
    pub(crate) fn pin(&mut self, key: u64) {
        match &mut self.space {
            KeySpace::Sequential { first, n: 0, .. } => *first = key,
            _ => self.space = KeySpace::sequential_range(key, 0),
        }
    }

    /// [`KeyGen::next_key`] of the spaces other than `Random`.
    #[inline(never)]
    fn next_key_other(&mut self) -> u64 {
        match self.space {
            KeySpace::Literal => 0,
            KeySpace::Random { n } => self.rng.below(n),
            KeySpace::RandomFrom { first, n } => first.saturating_add(self.rng.below(n)),
            KeySpace::Sequential { first, n, ref next } => {
                let k = next.0.fetch_add(1, Ordering::Relaxed);
                if n == 0 {
                    first
                } else {
                    first + k % n
                }
            }
            KeySpace::Zipf(ref z) => z.sample(&mut self.rng),
            KeySpace::Gaussian { n } => gaussian(n, &mut self.rng),
            KeySpace::Normal { n, mean, sd, first } => first + normal(n, mean, sd, &mut self.rng),
        }
    }

    /// Whether placeholders are overwritten with keys (false for `KeySpace::Literal`).
    #[inline]
    pub fn substitutes(&self) -> bool {
        !matches!(self.space, KeySpace::Literal)
    }
}

// The key space of a `--key-dist` choice is made here, with the key spaces, so that `dist` (the
// distributions themselves) needs nothing from this module.
impl KeyDist {
    /// The key space of this distribution over n keys (from 0, or from its first key), or why
    /// it takes no such space: Zipf's keys go up to [`Zipf::MAX_N`], a normal distribution's
    /// mean must be one of its keys.
    pub fn space(self, n: u64) -> Result<KeySpace, String> {
        let zipf = |z: Option<Zipf>| {
            z.map(KeySpace::Zipf).ok_or_else(|| {
                format!("zipf keys go up to key 2^53 ({}): {n} keys are too many", Zipf::MAX_N)
            })
        };
        Ok(match self {
            KeyDist::Uniform => KeySpace::Random { n },
            KeyDist::Sequential => KeySpace::sequential(n),
            KeyDist::SequentialFrom(first) => KeySpace::sequential_range(first, n),
            KeyDist::UniformFrom(first) => KeySpace::RandomFrom { first, n },
            KeyDist::Zipf(theta) => zipf(Zipf::new(n, theta))?,
            KeyDist::ZipfFrom { theta, first } => zipf(Zipf::from_key(first, n, theta))?,
            KeyDist::Gaussian => KeySpace::Gaussian { n },
            KeyDist::Normal { mean, sd, first } => {
                let mean = mean - first as f64;
                if !(0.0..n as f64).contains(&mean) {
                    let last = first.saturating_add(n).saturating_sub(1);
                    return Err(format!("the gaussian's mean must be a key of {first} to {last}"));
                }
                KeySpace::Normal { n, mean, sd, first }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_is_shared_and_covers_the_keyspace_exactly() {
        // Three connections (clones share the counter) taking turns unevenly over n = 1000:
        // every key exactly once per 1000 draws.
        let space = KeySpace::sequential(1000);
        let mut gens: Vec<KeyGen> =
            (0..3).map(|i| KeyGen::new(space.clone(), Rng::for_stream(1, i))).collect();
        let mut seen = vec![0u32; 1000];
        for i in 0..2000usize {
            seen[gens[i * i % 3].next_key() as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c == 2), "every key exactly twice in 2000 draws");
        // A fresh space is a fresh counter.
        assert_eq!(KeyGen::new(KeySpace::sequential(1000), Rng::new(1)).next_key(), 0);
        assert_ne!(space, KeySpace::sequential(1000));
    }

    #[test]
    fn sequential_ranges_cover_their_share_and_tile_the_keyspace() {
        // Four workers' shares of 1003 keys (251, 251, 251, 250): each key exactly once in all.
        let mut seen = vec![0u32; 1003];
        let mut first = 0;
        for len in [251, 251, 251, 250] {
            let mut k = KeyGen::new(KeySpace::sequential_range(first, len), Rng::new(1));
            for _ in 0..len {
                seen[k.next_key() as usize] += 1;
            }
            // It wraps to its own first key, not to 0.
            assert_eq!(k.next_key(), first);
            first += len;
        }
        assert!(seen.iter().all(|&c| c == 1));
    }

    #[test]
    fn uniform_keys_chi_square() {
        // KeySpace::Random { n: 1000 }: 200k keys in 20 buckets of 50 keys, 10k expected each.
        // Chi-square with 19 df exceeds 43.82 with probability 0.001 for a uniform source.
        for seed in [1u64, 2, 3] {
            let mut k = KeyGen::new(KeySpace::Random { n: 1000 }, Rng::new(seed));
            let mut counts = [0u64; 20];
            for _ in 0..200_000 {
                counts[(k.next_key() / 50) as usize] += 1;
            }
            let chi2: f64 = counts.iter().map(|&c| (c as f64 - 10_000.0).powi(2) / 10_000.0).sum();
            assert!(chi2 < 43.82, "seed {seed}: chi2 {chi2}, {counts:?}");
        }
    }

    #[test]
    fn zipf_and_gaussian_keys_stay_in_the_keyspace() {
        for space in
            [KeySpace::Zipf(crate::dist::Zipf::new(777, 0.99).unwrap()), KeySpace::Gaussian { n: 777 }]
        {
            let mut k = KeyGen::new(space, Rng::for_stream(1, 0));
            for _ in 0..1000 {
                assert!(k.next_key() < 777);
            }
        }
    }

    #[test]
    fn spaces_from_a_first_key_stay_in_their_keys() {
        // memtier's G and Z over --key-minimum 100 … --key-maximum 1099.
        let normal = KeyDist::Normal { mean: 600.0, sd: 50.0, first: 100 }.space(1000).unwrap();
        let zipf = KeyDist::ZipfFrom { theta: 1.0, first: 100 }.space(1000).unwrap();
        for (space, centre) in [(normal, 600.0), (zipf, 0.0)] {
            let mut k = KeyGen::new(space, Rng::for_stream(1, 0));
            let mut sum = 0.0;
            for _ in 0..10_000 {
                let key = k.next_key();
                assert!((100..1100).contains(&key), "{key}");
                assert!((0.0..=1.0).contains(&k.place()));
                sum += key as f64;
            }
            // The normal's keys centre on its mean (the sample mean's sd is 0.5 keys).
            if centre > 0.0 {
                assert!((sum / 10_000.0 - centre).abs() < 3.0, "mean {}", sum / 10_000.0);
            }
        }
        // The first key has place 0, the last place 1.
        let mut k =
            KeyGen::new(KeyDist::ZipfFrom { theta: 50.0, first: 100 }.space(1000).unwrap(), Rng::new(1));
        assert_eq!(k.next_key(), 100);
        assert_eq!(k.place(), 0.0);
    }
}
