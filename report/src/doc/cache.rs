//! `tests[].cache_aside`: a cache-aside test's (`--cache-aside`, a scenario's
//! `kind = "cache-aside"` group) hits, misses, the `SET`s they caused and a miss's latency.

use serde::{Deserialize, Serialize};

use super::{HistogramData, Latency};

/// `cache_aside`: each `GET` that missed was followed on its connection by a `SET` of its key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheAside {
    /// `GET`s answered with a value.
    pub hits: u64,
    /// `GET`s answered nil.
    pub misses: u64,
    /// `SET`s answered after a miss (error replies among them).
    pub sets: u64,
    /// Of the `SET`s, error replies.
    pub set_errors: u64,
    /// Misses answered after the test's stop, which sent no `SET`.
    pub unfilled: u64,
    /// A miss's latency, its `GET`'s start to its `SET`'s reply, ms; null with no miss.
    pub miss_latency_ms: Option<Latency>,
    /// Its distribution.
    pub miss_histogram: Option<HistogramData>,
}
