//! `-t expiry` and `-t tracking` (#52) as the document's `expiry` and `tracking` objects, and
//! back.

use super::{histogram, latency_ms};
use crate::codec::decode_histogram;
use crate::doc;
use crate::error::Error;
use crate::hdr::finite;

/// The `expiry` object.
pub(super) fn expiry(e: &respbench_core::expiry::Expiry) -> Result<doc::Expiry, Error> {
    let lag = (!e.lag.is_empty()).then_some(&e.lag);
    Ok(doc::Expiry {
        written: e.written,
        notified: e.notified,
        never_notified: e.never_notified,
        unwaited: e.unwaited,
        duplicated: e.duplicated,
        early: e.early,
        others: e.others,
        per_second: e.per_second().map(finite),
        first_ns: e.first_ns,
        last_ns: e.last_ns,
        window_ms: e.window_ms,
        grace_ms: e.grace_ms,
        server_expired: e.server_expired,
        lag_ms: lag.map(latency_ms),
        histogram: lag.map(histogram).transpose()?,
    })
}

/// The `tracking` object.
pub(super) fn tracking(t: &respbench_core::tracking::Tracking) -> Result<doc::Tracking, Error> {
    let lat = (!t.latency.is_empty()).then_some(&t.latency);
    Ok(doc::Tracking {
        readers: t.readers,
        expected: t.expected,
        received: t.received,
        lost: t.lost,
        duplicated: t.duplicated,
        flushes: t.flushes,
        flushed: t.flushed,
        others: t.others,
        before_ack: t.before_ack,
        tracking_total_keys: t.server_keys,
        tracking_total_items: t.server_items,
        latency_ms: lat.map(latency_ms),
        histogram: lat.map(histogram).transpose()?,
    })
}

/// Reads a `tracking` object back.
pub(super) fn read_tracking(
    d: &doc::Tracking,
    sigfig: u8,
) -> Result<respbench_core::tracking::Tracking, Error> {
    let mut t = respbench_core::tracking::Tracking::summarise(&[], &[], |_, _| false, sigfig)
        .map_err(Error::Document)?;
    if let Some(h) = &d.histogram {
        t.latency = decode_histogram(&h.data)?;
    }
    t.readers = d.readers;
    t.expected = d.expected;
    t.received = d.received;
    t.lost = d.lost;
    t.duplicated = d.duplicated;
    t.flushes = d.flushes;
    t.flushed = d.flushed;
    t.others = d.others;
    t.before_ack = d.before_ack;
    t.server_keys = d.tracking_total_keys;
    t.server_items = d.tracking_total_items;
    Ok(t)
}

/// Reads an `expiry` object back.
pub(super) fn read_expiry(d: &doc::Expiry, sigfig: u8) -> Result<respbench_core::expiry::Expiry, Error> {
    let mut e = respbench_core::expiry::Expiry::new(sigfig).map_err(Error::Document)?;
    if let Some(h) = &d.histogram {
        e.lag = decode_histogram(&h.data)?;
    }
    e.written = d.written;
    e.notified = d.notified;
    e.never_notified = d.never_notified;
    e.unwaited = d.unwaited;
    e.duplicated = d.duplicated;
    e.early = d.early;
    e.others = d.others;
    e.first_ns = d.first_ns;
    e.last_ns = d.last_ns;
    e.window_ms = d.window_ms;
    e.grace_ms = d.grace_ms;
    e.server_expired = d.server_expired;
    Ok(e)
}
