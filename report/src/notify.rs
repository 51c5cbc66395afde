//! Timed notifications (issue #52) in the text outputs: `-t expiry`'s keys, the lag from each
//! deadline to its expired event, and `-t tracking`'s invalidations, the latency from each
//! write's send to the push, in the verbose report's section, `-q`'s line and CSV's
//! row (the JSON's `expiry` and `tracking` objects are convert.rs's).

use std::io::{self, Write};

use respbench_core::expiry::Expiry;
use respbench_core::shared::value_at_percentile;
use respbench_session::result::TestResult;

use crate::hdr::ms;
use crate::shared::quoted;

/// The percentiles the lag is shown at.
const SHOWN: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

fn lag_at(e: &Expiry, p: f64) -> f64 {
    ms(value_at_percentile(&e.lag, p))
}

/// A histogram's [`SHOWN`] percentiles as a table of two lines (ms).
fn write_percentiles(h: &hdrhistogram::Histogram<u64>, out: &mut impl Write) -> io::Result<()> {
    let heads: Vec<String> = SHOWN
        .iter()
        .map(|&p| format!("{:>9}", if p < 100.0 { format!("p{p}") } else { "max".into() }))
        .collect();
    writeln!(out, "  {}", heads.join(" "))?;
    let cells: Vec<String> =
        SHOWN.iter().map(|&p| format!("{:>9.3}", ms(value_at_percentile(h, p)))).collect();
    writeln!(out, "  {}", cells.join(" "))
}

/// CSV cells of `h`'s p50, p99, p99.9 and max (ms), each empty when `h` is.
fn csv_cells(h: &hdrhistogram::Histogram<u64>) -> String {
    let cells: Vec<String> =
        [50.0, 99.0, 99.9, 100.0]
            .iter()
            .map(|&p| {
                if h.is_empty() {
                    "\"\"".into()
                } else {
                    format!("\"{:.3}\"", ms(value_at_percentile(h, p)))
                }
            })
            .collect();
    cells.join(",")
}

/// What `e` counted, in words: `20000 keys with deadlines over 2.000 s: 20000 notified, 0 never
/// notified within 5.000 s (0.00%)`.
fn counts(e: &Expiry) -> String {
    format!(
        "{} keys with deadlines over {:.3} s: {} notified, {} never notified within {:.3} s ({:.2}%)",
        e.written,
        e.window_ms as f64 / 1000.0,
        e.notified,
        e.never_notified,
        e.grace_ms as f64 / 1000.0,
        e.never_share() * 100.0
    )
}

/// The verbose report's section of an expiry or a tracking test; nothing for another test.
pub fn write_verbose(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    if let Some(k) = &t.stats.tracking {
        writeln!(
            out,
            "  tracking: {} readers: {} invalidations expected, {} received, {} lost, {} duplicated; {} flushes ({} keys flushed), {} of other keys",
            k.readers, k.expected, k.received, k.lost, k.duplicated, k.flushes, k.flushed, k.others
        )?;
        if let (Some(keys), Some(items)) = (k.server_keys, k.server_items) {
            writeln!(
                out,
                "    the server tracked {keys} keys, {items} key-reader pairs (tracking_total_keys, _items)"
            )?;
        }
        if !k.latency.is_empty() {
            writeln!(
                out,
                "  invalidation latency (msec, the write's send to the push; {} of them came before the write's acknowledgement):",
                k.before_ack
            )?;
            write_percentiles(&k.latency, out)?;
        }
    }
    let Some(e) = &t.stats.expiry else { return Ok(()) };
    writeln!(out, "  expiry: {}", counts(e))?;
    if let Some(rise) = e.server_expired {
        writeln!(out, "    the server's expired_keys rose by {rise}")?;
    }
    if let Some(rate) = e.per_second() {
        writeln!(out, "    {rate:.0} notifications per second")?;
    }
    if e.unwaited > 0 {
        writeln!(
            out,
            "    {} keys not waited for: the test was stopped before their grace was over",
            e.unwaited
        )?;
    }
    if e.duplicated + e.early + e.others > 0 {
        writeln!(
            out,
            "    {} duplicated, {} before their deadline, {} of other keys",
            e.duplicated, e.early, e.others
        )?;
    }
    if e.never_notified > 0 {
        writeln!(
            out,
            "    WARNING: {} keys outlived their deadline by more than the grace without an expired event \
             (is active expiry on? DEBUG SET-ACTIVE-EXPIRE, hz)",
            e.never_notified
        )?;
    }
    if !e.lag.is_empty() {
        writeln!(out, "  expiry lag (msec, each key's deadline to its expired event):")?;
        let heads: Vec<String> = SHOWN
            .iter()
            .map(|&p| format!("{:>9}", if p < 100.0 { format!("p{p}") } else { "max".into() }))
            .collect();
        writeln!(out, "  {}", heads.join(" "))?;
        let cells: Vec<String> = SHOWN.iter().map(|&p| format!("{:>9.3}", lag_at(e, p))).collect();
        writeln!(out, "  {}", cells.join(" "))?;
    }
    Ok(())
}

/// `-q`: an expiry test's line after its own: `NAME: expiry: 20000 notified, 0 never notified,
/// lag p50=12.287 p99=96.063 max=101.311 msec`; nothing for another test.
pub fn write_quiet(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    if let Some(k) = &t.stats.tracking {
        write!(
            out,
            "{}: tracking: {} expected, {} received, {} lost",
            t.name, k.expected, k.received, k.lost
        )?;
        let at = |p: f64| ms(value_at_percentile(&k.latency, p));
        match k.latency.is_empty() {
            true => writeln!(out)?,
            false => {
                writeln!(out, ", latency p50={:.3} p99={:.3} max={:.3} msec", at(50.0), at(99.0), at(100.0))?
            }
        }
    }
    let Some(e) = &t.stats.expiry else { return Ok(()) };
    write!(out, "{}: expiry: {} notified, {} never notified", t.name, e.notified, e.never_notified)?;
    if e.lag.is_empty() {
        return writeln!(out);
    }
    writeln!(
        out,
        ", lag p50={:.3} p99={:.3} max={:.3} msec",
        lag_at(e, 50.0),
        lag_at(e, 99.0),
        lag_at(e, 100.0)
    )
}

/// CSV: an expiry test's row after its own: `"expiry"`, the test, keys written, notified, never
/// notified, notifications per second, and the lag's p50, p99, p99.9 and max (ms; empty when
/// nothing was notified); nothing for another test.
pub fn write_csv(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    if let Some(k) = &t.stats.tracking {
        // `"tracking"`, the test, readers, expected, received, lost, duplicated, latency p50,
        // p99, p99.9, max (ms; empty when nothing came).
        let lat = csv_cells(&k.latency);
        writeln!(
            out,
            "\"tracking\",{},\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",{lat}",
            quoted(&t.name),
            k.readers,
            k.expected,
            k.received,
            k.lost,
            k.duplicated
        )?;
    }
    let Some(e) = &t.stats.expiry else { return Ok(()) };
    let lag = csv_cells(&e.lag);
    writeln!(
        out,
        "\"expiry\",{},\"{}\",\"{}\",\"{}\",\"{}\",{lag}",
        quoted(&t.name),
        e.written,
        e.notified,
        e.never_notified,
        e.per_second().map(|r| format!("{r:.0}")).unwrap_or_default()
    )
}
