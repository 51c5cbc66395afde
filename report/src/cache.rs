//! A cache-aside test's (`--cache-aside`, a scenario's `kind = "cache-aside"` group) lines in the
//! verbose report: its hits and misses, the `SET`s the misses caused, and a miss's latency.

use std::io::{self, Write};

use respbench_core::cache::CacheStats;

use crate::hdr::{finite, ms, value_at_percentile};

/// Writes `c`'s lines, indented by `indent`, under the name `who` (`""` for a test's own).
pub fn write(c: &CacheStats, who: &str, indent: &str, out: &mut impl Write) -> io::Result<()> {
    let reads = c.hits.saturating_add(c.misses);
    let share = if reads == 0 { 0.0 } else { c.hits as f64 * 100.0 / reads as f64 };
    let unfilled = match c.unfilled {
        0 => String::new(),
        n => format!(", {n} after the stop sent none"),
    };
    writeln!(
        out,
        "{indent}cache-aside{who}: {} hits, {} misses of {reads} GETs ({:.1}% hits); {} SETs after the misses \
         ({} errors{unfilled})",
        c.hits,
        c.misses,
        finite(share),
        c.sets,
        c.set_errors,
    )?;
    let h = &c.miss_latency;
    if !h.is_empty() {
        writeln!(
            out,
            "{indent}  a miss, its GET's start to its SET's reply (msec): p50 {:.3}, p99 {:.3}, p99.9 {:.3}, max {:.3}",
            ms(value_at_percentile(h, 50.0)),
            ms(value_at_percentile(h, 99.0)),
            ms(value_at_percentile(h, 99.9)),
            ms(h.max()),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_says_its_hits_misses_and_sets() {
        let mut c = CacheStats::new(3).unwrap();
        (c.hits, c.misses, c.sets) = (3, 1, 1);
        c.miss_latency.record(1500).unwrap();
        let mut out = Vec::new();
        write(&c, " 'cache'", "  ", &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "  cache-aside 'cache': 3 hits, 1 misses of 4 GETs (75.0% hits); 1 SETs after the misses (0 errors)\n\
             \x20   a miss, its GET's start to its SET's reply (msec): p50 1.500, p99 1.500, p99.9 1.500, max 1.500\n"
        );
    }
}
