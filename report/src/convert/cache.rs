//! A cache-aside test's figures as the document's `cache_aside` object, and back.

use respbench_core::cache::CacheStats;

use crate::codec::decode_histogram;
use crate::doc;
use crate::error::Error;

/// The `cache_aside` object.
pub(super) fn cache_aside(c: &CacheStats) -> Result<doc::CacheAside, Error> {
    let lat = (!c.miss_latency.is_empty()).then_some(&c.miss_latency);
    Ok(doc::CacheAside {
        hits: c.hits,
        misses: c.misses,
        sets: c.sets,
        set_errors: c.set_errors,
        unfilled: c.unfilled,
        miss_latency_ms: lat.map(doc::Latency::from),
        miss_histogram: lat.map(doc::HistogramData::try_from).transpose()?,
    })
}

/// Reads a `cache_aside` object back, its histogram of `sigfig` figures when it has none.
pub(super) fn read_cache_aside(d: &doc::CacheAside, sigfig: u8) -> Result<CacheStats, Error> {
    let mut c = CacheStats::new(sigfig).map_err(Error::Document)?;
    if let Some(h) = &d.miss_histogram {
        c.miss_latency = decode_histogram(&h.data)?;
    }
    (c.hits, c.misses, c.sets, c.set_errors, c.unfilled) =
        (d.hits, d.misses, d.sets, d.set_errors, d.unfilled);
    Ok(c)
}
