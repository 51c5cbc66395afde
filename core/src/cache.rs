//! Cache-aside (`--cache-aside`, a scenario's `kind = "cache-aside"` group): each `GET` that
//! misses (a nil reply) is followed, on the same connection, by a `SET` of that key, as a cache
//! in front of a database fills itself. The client sends the `SET` once the `GET`'s reply is
//! read; the group counts its hits, its misses and the writes they caused, and times a miss
//! from the `GET`'s start to the `SET`'s reply.

use hdrhistogram::Histogram;

use crate::shared::{new_histogram, HIGHEST_MICROS};
use crate::template::Template;

/// What a cache-aside client sends after a miss.
#[derive(Clone, Debug)]
pub struct CacheAside {
    /// `SET key value` of the `GET`'s key pattern (with `EX`/`PX` for a TTL): its one
    /// placeholder is filled with the key that missed.
    pub set: Template,
}

/// A cache-aside test's own figures: hits and misses of its `GET`s, the `SET`s the misses
/// caused, and how long a miss took, from its `GET`'s start to its `SET`'s reply.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheStats {
    /// `GET`s answered with a value.
    pub hits: u64,
    /// `GET`s answered nil.
    pub misses: u64,
    /// `SET`s answered (after a miss), error replies among them.
    pub sets: u64,
    /// Of the `SET`s, those answered with an error.
    pub set_errors: u64,
    /// Misses that sent no `SET`: the test had stopped.
    pub unfilled: u64,
    /// A miss's latency in microseconds: its `GET`'s start to its `SET`'s reply.
    pub miss_latency: Histogram<u64>,
}

impl CacheStats {
    /// Empty figures with a histogram of `sigfig` significant figures.
    pub fn new(sigfig: u8) -> Result<CacheStats, String> {
        Ok(CacheStats {
            hits: 0,
            misses: 0,
            sets: 0,
            set_errors: 0,
            unfilled: 0,
            miss_latency: new_histogram(sigfig)?,
        })
    }

    /// A miss answered by its `SET` `nanos` after its `GET` started.
    pub(crate) fn filled(&mut self, nanos: u64) {
        let micros = (nanos.saturating_add(500) / 1_000).clamp(1, HIGHEST_MICROS);
        self.miss_latency.saturating_record(micros);
    }

    /// Adds `other`'s figures; an error names the count whose sum overflows.
    pub fn merge(&mut self, other: &CacheStats) -> Result<(), String> {
        let add = |a: &mut u64, b: u64, what: &str| {
            *a = a.checked_add(b).ok_or_else(|| format!("cache_aside.{what}: the sum overflows"))?;
            Ok::<(), String>(())
        };
        add(&mut self.hits, other.hits, "hits")?;
        add(&mut self.misses, other.misses, "misses")?;
        add(&mut self.sets, other.sets, "sets")?;
        add(&mut self.set_errors, other.set_errors, "set_errors")?;
        add(&mut self.unfilled, other.unfilled, "unfilled")?;
        self.miss_latency.add(&other.miss_latency).map_err(|e| format!("histograms differ: {e:?}"))
    }
}
