//! A notification test's figures in the document: `-t pubsub`'s `delivery`, `-t expiry`'s
//! `expiry` and `-t tracking`'s `tracking` (#52), each made from the core's summary and read
//! back into it (with the histograms' precision the test's latency has).

use hdrhistogram::Histogram;
use respbench_core::delivery::{self, Received};
use serde::{Deserialize, Serialize};

use super::{HistogramData, Latency};
use crate::codec::decode_histogram;
use crate::error::Error;
use crate::hdr::finite;

/// `expiry`: an expiry test's keys (`-t expiry`), each given a deadline and timed from it to
/// its expired event.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Expiry {
    /// Timed keys written (their `SET … PXAT` answered `OK`).
    pub written: u64,
    /// Of those, notified.
    pub notified: u64,
    /// Written and not notified within the grace after the last deadline.
    pub never_notified: u64,
    /// Written and not notified when a stop ended the wait before their grace was over.
    pub unwaited: u64,
    /// Notifications of a key already notified.
    pub duplicated: u64,
    /// Notifications read before the key's deadline (their lag counts as 0).
    pub early: u64,
    /// Notifications of keys the test did not time.
    pub others: u64,
    /// Distinct notifications per second, from the first to the last; null with fewer than two
    /// instants.
    pub per_second: Option<f64>,
    /// The first notification's arrival, ns since the Unix epoch (0: none).
    pub first_ns: u64,
    /// The last one's.
    pub last_ns: u64,
    /// The window the deadlines spread over, ms.
    pub window_ms: u64,
    /// The grace after the deadlines, ms.
    pub grace_ms: u64,
    /// The rise of the server's `expired_keys` over the test, when read.
    pub server_expired: Option<u64>,
    /// Deadline to notification, ms.
    pub lag_ms: Option<Latency>,
    /// Its distribution.
    pub histogram: Option<HistogramData>,
}

/// `tracking`: an invalidation test's readers (`-t tracking`), all together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tracking {
    /// Reader connections (`--subscribers`).
    pub readers: u64,
    /// Invalidations expected: each reader's keys read and written.
    pub expected: u64,
    /// Received, once each.
    pub received: u64,
    /// Expected, neither received nor covered by a flush.
    pub lost: u64,
    /// Received again.
    pub duplicated: u64,
    /// Flushes (null invalidations) received.
    pub flushes: u64,
    /// Expected keys a flush invalidated instead.
    pub flushed: u64,
    /// Invalidations of keys a reader did not read or that were not written.
    pub others: u64,
    /// Invalidations read before the write's acknowledgement (sent while the server executed it).
    pub before_ack: u64,
    /// The server's `tracking_total_keys` once the readers had read.
    pub tracking_total_keys: Option<u64>,
    /// Its `tracking_total_items`.
    pub tracking_total_items: Option<u64>,
    /// The write's send (intended send at `--rps`) to the push, ms.
    pub latency_ms: Option<Latency>,
    /// Its distribution.
    pub histogram: Option<HistogramData>,
}

/// `delivery`: a delivery test's subscribers (`-t pubsub`), all of them together; each message
/// published counts once per subscriber.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Delivery {
    /// Subscribers (connections of their own, not in `-c`).
    pub subscribers: u64,
    /// Of those, how many ended before the test did (the server dropped them, a kill).
    pub subscribers_failed: u64,
    /// The first one's reason.
    pub failure: Option<String>,
    /// Messages published: the publishers' answered PUBLISHes.
    pub published: u64,
    /// The receivers the server counted: the sum of the PUBLISH replies.
    pub receivers: u64,
    /// Messages received, every subscriber's added (duplicates included).
    pub delivered: u64,
    /// Σ over subscribers of (published − distinct received).
    pub missing: u64,
    /// Received again (or too late to tell).
    pub duplicated: u64,
    /// Received after a later one of the same publisher.
    pub out_of_order: u64,
    /// Holes in a publisher's sequence below the highest received (part of `missing`).
    pub gaps: u64,
    /// Messages without respbench's stamp (someone else's publishing).
    pub foreign: u64,
    /// The fewest distinct messages one subscriber received.
    pub min_delivered: u64,
    /// The most.
    pub max_delivered: u64,
    /// Subscribers that missed at least one message.
    pub subscribers_missing: u64,
    /// `-t blpop`: a list's waiters, each element for one of them (missing counts against the
    /// elements pushed; min/max_delivered are each waiter's share; receivers 0: not known).
    pub queue: bool,
    /// `--reconnect`: how many times a waiting connection that ended came back.
    pub reconnects: u64,
    /// The first such ending's reason.
    pub reconnected: Option<String>,
    /// Delivery latency, ms: receive − intended send (coordinated omission corrected).
    pub latency_ms: Option<Latency>,
    /// Its distribution.
    pub histogram: Option<HistogramData>,
    /// Receive − actual send, ms.
    pub service_ms: Option<Latency>,
    /// Its distribution.
    pub service_histogram: Option<HistogramData>,
}

impl TryFrom<&respbench_core::expiry::Expiry> for Expiry {
    type Error = Error;

    /// The `expiry` object.
    fn try_from(e: &respbench_core::expiry::Expiry) -> Result<Expiry, Error> {
        let lag = (!e.lag.is_empty()).then_some(&e.lag);
        Ok(Expiry {
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
            lag_ms: lag.map(Latency::from),
            histogram: lag.map(HistogramData::try_from).transpose()?,
        })
    }
}

impl Expiry {
    /// Reads an `expiry` object back, its lag histogram of `sigfig` figures when it has none.
    pub fn read(&self, sigfig: u8) -> Result<respbench_core::expiry::Expiry, Error> {
        let mut e = respbench_core::expiry::Expiry::new(sigfig).map_err(Error::Document)?;
        if let Some(h) = &self.histogram {
            e.lag = decode_histogram(&h.data)?;
        }
        e.written = self.written;
        e.notified = self.notified;
        e.never_notified = self.never_notified;
        e.unwaited = self.unwaited;
        e.duplicated = self.duplicated;
        e.early = self.early;
        e.others = self.others;
        e.first_ns = self.first_ns;
        e.last_ns = self.last_ns;
        e.window_ms = self.window_ms;
        e.grace_ms = self.grace_ms;
        e.server_expired = self.server_expired;
        Ok(e)
    }
}

impl TryFrom<&respbench_core::tracking::Tracking> for Tracking {
    type Error = Error;

    /// The `tracking` object.
    fn try_from(t: &respbench_core::tracking::Tracking) -> Result<Tracking, Error> {
        let lat = (!t.latency.is_empty()).then_some(&t.latency);
        Ok(Tracking {
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
            latency_ms: lat.map(Latency::from),
            histogram: lat.map(HistogramData::try_from).transpose()?,
        })
    }
}

impl Tracking {
    /// Reads a `tracking` object back, its latency histogram of `sigfig` figures when it has
    /// none.
    pub fn read(&self, sigfig: u8) -> Result<respbench_core::tracking::Tracking, Error> {
        let mut t = respbench_core::tracking::Tracking::summarise(&[], &[], |_, _| false, sigfig)
            .map_err(Error::Document)?;
        if let Some(h) = &self.histogram {
            t.latency = decode_histogram(&h.data)?;
        }
        t.readers = self.readers;
        t.expected = self.expected;
        t.received = self.received;
        t.lost = self.lost;
        t.duplicated = self.duplicated;
        t.flushes = self.flushes;
        t.flushed = self.flushed;
        t.others = self.others;
        t.before_ack = self.before_ack;
        t.server_keys = self.tracking_total_keys;
        t.server_items = self.tracking_total_items;
        Ok(t)
    }
}

impl TryFrom<&delivery::Delivery> for Delivery {
    type Error = Error;

    /// The `delivery` object.
    fn try_from(d: &delivery::Delivery) -> Result<Delivery, Error> {
        let r = &d.received;
        fn some(h: &Histogram<u64>) -> Option<&Histogram<u64>> {
            (!h.is_empty()).then_some(h)
        }
        Ok(Delivery {
            subscribers: d.subscribers,
            subscribers_failed: d.failed,
            failure: d.failure.clone(),
            published: d.published,
            receivers: d.receivers,
            delivered: r.delivered,
            missing: d.missing,
            duplicated: r.duplicated,
            out_of_order: r.out_of_order,
            gaps: r.gaps,
            foreign: r.foreign,
            min_delivered: d.min_delivered,
            max_delivered: d.max_delivered,
            subscribers_missing: d.subscribers_missing,
            queue: d.queue,
            reconnects: d.reconnects,
            reconnected: d.reconnected.clone(),
            latency_ms: some(&r.latency).map(Latency::from),
            histogram: some(&r.latency).map(HistogramData::try_from).transpose()?,
            service_ms: some(&r.service).map(Latency::from),
            service_histogram: some(&r.service).map(HistogramData::try_from).transpose()?,
        })
    }
}

impl Delivery {
    /// Reads a `delivery` object back, its histograms of `sigfig` figures when it has none.
    pub fn read(&self, sigfig: u8) -> Result<delivery::Delivery, Error> {
        let mut received = Received::new(sigfig).map_err(Error::Document)?;
        received.delivered = self.delivered;
        received.duplicated = self.duplicated;
        received.out_of_order = self.out_of_order;
        received.gaps = self.gaps;
        received.foreign = self.foreign;
        if let Some(h) = &self.histogram {
            received.latency = decode_histogram(&h.data)?;
        }
        if let Some(h) = &self.service_histogram {
            received.service = decode_histogram(&h.data)?;
        }
        Ok(delivery::Delivery {
            subscribers: self.subscribers,
            failed: self.subscribers_failed,
            failure: self.failure.clone(),
            published: self.published,
            receivers: self.receivers,
            received,
            missing: self.missing,
            min_delivered: self.min_delivered,
            max_delivered: self.max_delivered,
            subscribers_missing: self.subscribers_missing,
            queue: self.queue,
            reconnects: self.reconnects,
            reconnected: self.reconnected.clone(),
        })
    }
}
