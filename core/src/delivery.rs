//! Delivery latency (issue #42): what a publisher's payload carries (its [`Stamp`]: publisher,
//! sequence number, intended and actual send time on the run's clock) and the [`Subscriber`], the
//! sans-io state machine of one subscribed connection: it parses what the server pushes (RESP2
//! `*3 message channel payload`, RESP3 `>3 …`), reads each payload's stamp, and records the
//! delivery latency (receive − intended: corrected; receive − sent: service) and the sequence's
//! gaps, duplicates and reorderings per publisher, in bounded memory. The session moves its
//! bytes and reads the clock; the per-test summary of all subscribers is a [`Delivery`].

use hdrhistogram::Histogram;

use crate::resp::Value;
use crate::shared::new_histogram;
use crate::time::Time;

/// What every stamp starts with.
pub const STAMP_MAGIC: &[u8; 5] = b"rbd1:";
/// The length of a stamp: magic, publisher (6 digits), sequence (12), intended and sent
/// nanoseconds (20 each), separated by `:`. A payload is at least this long.
pub const STAMP_LEN: usize = 5 + 6 + 1 + 12 + 1 + 20 + 1 + 20;
/// The most publishers a subscriber keeps a sequence for (ids above are counted as foreign).
pub const MAX_PUBLISHERS: usize = 100_000;
/// How many sequence numbers behind the highest seen a subscriber remembers, to tell a late
/// arrival (out of order, filling a gap) from a duplicate; older ones count as duplicates.
pub const WINDOW: u64 = 4096;
/// The most bytes a subscriber buffers of an incomplete message before failing.
pub const MAX_MESSAGE: usize = 4 << 20;

/// One payload's stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The publishing client's index.
    pub publisher: u32,
    /// Its sequence number, from 0, per publisher.
    pub seq: u64,
    /// When the open loop meant it to be sent (the send itself in a closed loop).
    pub intended: Time,
    /// When it was encoded for sending.
    pub sent: Time,
}

fn put_digits(dst: &mut [u8], mut v: u64) {
    for b in dst.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

fn digits(src: &[u8]) -> Option<u64> {
    src.iter().try_fold(0u64, |acc, &b| {
        b.is_ascii_digit().then_some(())?;
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

impl Stamp {
    /// Writes the stamp over the first [`STAMP_LEN`] bytes of `dst` (shorter: nothing).
    pub fn write(&self, dst: &mut [u8]) {
        let Some(dst) = dst.get_mut(..STAMP_LEN) else { return };
        dst[..5].copy_from_slice(STAMP_MAGIC);
        put_digits(&mut dst[5..11], u64::from(self.publisher) % 1_000_000);
        dst[11] = b':';
        put_digits(&mut dst[12..24], self.seq % 1_000_000_000_000);
        dst[24] = b':';
        put_digits(&mut dst[25..45], self.intended.as_nanos());
        dst[45] = b':';
        put_digits(&mut dst[46..66], self.sent.as_nanos());
    }

    /// The stamp a payload starts with; `None` for one that carries none (not ours).
    pub fn read(payload: &[u8]) -> Option<Stamp> {
        let p = payload.get(..STAMP_LEN)?;
        if &p[..5] != STAMP_MAGIC || p[11] != b':' || p[24] != b':' || p[45] != b':' {
            return None;
        }
        Some(Stamp {
            publisher: u32::try_from(digits(&p[5..11])?).ok()?,
            seq: digits(&p[12..24])?,
            intended: Time::from_nanos(digits(&p[25..45])?),
            sent: Time::from_nanos(digits(&p[46..66])?),
        })
    }

    /// A blank payload of `len` bytes (at least [`STAMP_LEN`]): a stamp of zeros, then `x`s.
    pub fn blank(len: usize) -> Vec<u8> {
        let mut v = vec![b'x'; len.max(STAMP_LEN)];
        Stamp { publisher: 0, seq: 0, intended: Time::ZERO, sent: Time::ZERO }.write(&mut v);
        v
    }
}

/// One publisher's sequence as one subscriber saw it.
#[derive(Clone, Debug, Default)]
struct Track {
    /// One past the highest sequence number seen; 0 before any.
    next: u64,
    /// Bit `s % WINDOW` set: `s` (within `WINDOW` below `next`) was seen.
    seen: Vec<u64>,
}

impl Track {
    fn bit(&mut self, s: u64) -> (usize, u64) {
        if self.seen.is_empty() {
            self.seen = vec![0; (WINDOW / 64) as usize];
        }
        let i = s % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }
}

/// What a subscriber (or all of a test's, merged) received.
#[derive(Clone, Debug)]
pub struct Received {
    /// Stamped messages received (duplicates included).
    pub delivered: u64,
    /// Of those, sequence numbers received again (or so late that no record of them is left).
    pub duplicated: u64,
    /// Received after a later one of the same publisher (a late arrival filling a gap).
    pub out_of_order: u64,
    /// Sequence numbers skipped over and not (yet) filled: holes below the highest seen.
    pub gaps: u64,
    /// Messages without a stamp of ours, or from a publisher id above [`MAX_PUBLISHERS`].
    pub foreign: u64,
    /// Delivery latency in microseconds: receive − intended send (corrected).
    pub latency: Histogram<u64>,
    /// Receive − actual send (service), in microseconds.
    pub service: Histogram<u64>,
}

impl Received {
    /// Nothing yet, histograms of `sigfig` significant figures.
    pub fn new(sigfig: u8) -> Result<Received, String> {
        Ok(Received {
            delivered: 0,
            duplicated: 0,
            out_of_order: 0,
            gaps: 0,
            foreign: 0,
            latency: new_histogram(sigfig)?,
            service: new_histogram(sigfig)?,
        })
    }

    /// Distinct messages received.
    pub fn distinct(&self) -> u64 {
        self.delivered.saturating_sub(self.duplicated)
    }
}

/// Why a subscriber's stream cannot go on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubscribeError {
    /// The bytes are not RESP.
    Protocol(String),
    /// A message longer than [`MAX_MESSAGE`].
    TooLong,
    /// The server answered with an error (the subscription refused).
    Refused(String),
}

impl std::fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubscribeError::Protocol(e) => write!(f, "protocol error: {e}"),
            SubscribeError::TooLong => write!(f, "a message longer than {MAX_MESSAGE} bytes"),
            SubscribeError::Refused(e) => write!(f, "the server refused: {e}"),
        }
    }
}

/// Which replies carry the payloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waits {
    /// `SUBSCRIBE`/`SSUBSCRIBE`: pushes `message channel payload` (`smessage` too).
    Messages,
    /// `BLPOP`'s replies: `[key, payload]`, or nil when it timed out. One tracker is shared
    /// by every waiter of a list, each element going to one of them.
    List,
    /// `XREADGROUP`'s replies: per stream `[key, [[id, [field, payload]], …]]` (a map in
    /// RESP3), or nil when it timed out. One tracker for the group's consumers.
    Stream,
}

/// One subscribed connection's protocol: feed it what the server sends, with the time it was
/// read; it counts what it recognises.
#[derive(Debug)]
pub struct Subscriber {
    buf: Vec<u8>,
    tracks: Vec<Track>,
    /// What was received.
    pub received: Received,
    /// Subscription confirmations seen (`subscribe`, `ssubscribe`).
    pub confirmed: u64,
    /// [`Waits::List`]: replies seen (nil ones too).
    pub replies: u64,
    waits: Waits,
}

impl Subscriber {
    /// A subscriber of `waits`' kind, histograms of `sigfig` figures.
    pub fn new(waits: Waits, sigfig: u8) -> Result<Subscriber, String> {
        Ok(Subscriber {
            buf: Vec::new(),
            tracks: Vec::new(),
            received: Received::new(sigfig)?,
            confirmed: 0,
            replies: 0,
            waits,
        })
    }

    /// The connection ended (`--reconnect` subscribes again on a new one): what it held of an
    /// unfinished message is dropped, and the sequences go on, so what was published meanwhile
    /// counts as gaps and missing.
    pub fn lost_connection(&mut self) {
        self.buf.clear();
    }

    /// Bytes the server sent, read at `now`.
    pub fn handle_input(&mut self, data: &[u8], now: Time) -> Result<(), SubscribeError> {
        self.buf.extend_from_slice(data);
        let mut at = 0;
        loop {
            match Value::parse(&self.buf[at..]) {
                Ok(Some((v, n))) => {
                    at += n;
                    self.on_value(v, now)?;
                }
                Ok(None) => break,
                Err(e) => return Err(SubscribeError::Protocol(e.to_string())),
            }
        }
        self.buf.drain(..at);
        if self.buf.len() > MAX_MESSAGE {
            return Err(SubscribeError::TooLong);
        }
        Ok(())
    }

    /// One whole value the server sent, read at `now`.
    pub fn on_value(&mut self, v: Value, now: Time) -> Result<(), SubscribeError> {
        if self.waits == Waits::Stream {
            self.replies += 1;
            let streams: Vec<Value> = match v {
                Value::Array(s) => s
                    .into_iter()
                    .filter_map(|s| match s {
                        Value::Array(mut kv) if kv.len() == 2 => kv.pop(),
                        _ => None,
                    })
                    .collect(),
                Value::Map(m) => m.into_iter().map(|(_, entries)| entries).collect(),
                Value::Error(e) | Value::BulkError(e) => {
                    return Err(SubscribeError::Refused(String::from_utf8_lossy(&e).into_owned()))
                }
                _ => Vec::new(),
            };
            for entries in streams {
                let Value::Array(entries) = entries else { continue };
                for e in entries {
                    let Value::Array(e) = e else { continue };
                    if let [_, Value::Array(fields)] = e.as_slice() {
                        if let [_, Value::Bulk(payload)] = fields.as_slice() {
                            self.on_payload(payload, now);
                        }
                    }
                }
            }
            return Ok(());
        }
        if self.waits == Waits::List && v == Value::Null {
            // BLPOP timed out.
            self.replies += 1;
            return Ok(());
        }
        let items = match v {
            Value::Array(items) | Value::Push(items) => items,
            Value::Error(e) | Value::BulkError(e) => {
                return Err(SubscribeError::Refused(String::from_utf8_lossy(&e).into_owned()))
            }
            _ => return Ok(()),
        };
        if self.waits == Waits::List {
            self.replies += 1;
            if let [Value::Bulk(_), Value::Bulk(payload)] = items.as_slice() {
                self.on_payload(payload, now);
            }
            return Ok(());
        }
        let kind = match items.first() {
            Some(Value::Bulk(k)) | Some(Value::Simple(k)) => k.as_slice(),
            _ => return Ok(()),
        };
        match kind {
            b"message" | b"smessage" if items.len() == 3 => {
                if let Value::Bulk(payload) = &items[2] {
                    self.on_payload(payload, now);
                }
            }
            b"subscribe" | b"ssubscribe" => self.confirmed += 1,
            _ => {}
        }
        Ok(())
    }

    /// One payload received at `now`: its latency and its place in its publisher's sequence.
    pub fn on_payload(&mut self, payload: &[u8], now: Time) {
        let r = &mut self.received;
        let Some(s) = Stamp::read(payload).filter(|s| (s.publisher as usize) < MAX_PUBLISHERS) else {
            r.foreign += 1;
            return;
        };
        r.delivered += 1;
        let _ = r.latency.record(now.nanos_since(s.intended).div_ceil(1000).max(1));
        let _ = r.service.record(now.nanos_since(s.sent).div_ceil(1000).max(1));
        let p = s.publisher as usize;
        if self.tracks.len() <= p {
            self.tracks.resize_with(p + 1, Track::default);
        }
        let t = &mut self.tracks[p];
        if s.seq >= t.next {
            // Skipped over: holes, until (if ever) they come.
            r.gaps += s.seq - t.next;
            // Forget the window's bits that the move passes over.
            let forget = (s.seq + 1 - t.next).min(WINDOW);
            for k in 0..forget {
                let (w, b) = t.bit(t.next + k);
                t.seen[w] &= !b;
            }
            let (w, b) = t.bit(s.seq);
            t.seen[w] |= b;
            t.next = s.seq + 1;
        } else if t.next - s.seq > WINDOW {
            r.duplicated += 1;
        } else {
            let (w, b) = t.bit(s.seq);
            if t.seen[w] & b != 0 {
                r.duplicated += 1;
            } else {
                t.seen[w] |= b;
                r.out_of_order += 1;
                r.gaps = r.gaps.saturating_sub(1);
            }
        }
    }
}

/// A test's delivery figures: every subscriber's, summarised.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// How many subscribers (waiting connections) the test had.
    pub subscribers: u64,
    /// Of those, how many failed before the end (a dropped connection: the server's output
    /// buffer limit, a kill), with the first one's reason.
    pub failed: u64,
    /// The first failure's reason.
    pub failure: Option<String>,
    /// Stamped messages the publishers had answered (published).
    pub published: u64,
    /// What the server said it delivered: the sum of the PUBLISH replies (receivers).
    pub receivers: u64,
    /// Every subscriber's messages, added up.
    pub received: Received,
    /// Messages that some subscriber never got: Σ (published − distinct received).
    pub missing: u64,
    /// The fewest distinct messages one subscriber received.
    pub min_delivered: u64,
    /// The most.
    pub max_delivered: u64,
    /// Subscribers that missed at least one message (pub/sub only).
    pub subscribers_missing: u64,
    /// A list's waiters (`-t blpop`), each element for one of them: `missing` counts against
    /// the elements pushed, `min_delivered`/`max_delivered` are each waiter's share and
    /// `receivers` is not known (0). Otherwise each message is for every subscriber.
    pub queue: bool,
    /// `--reconnect`: how many times a waiting connection that ended came back (subscribed or
    /// waiting again), and the first such ending's reason.
    pub reconnects: u64,
    /// See `reconnects`.
    pub reconnected: Option<String>,
}

impl Delivery {
    /// The summary of `subs` (each subscriber's figures, and whether and why it failed), given
    /// what was `published` and the `receivers` the server counted.
    pub fn summarise(
        subs: &[(Received, Option<String>)],
        published: u64,
        receivers: u64,
        sigfig: u8,
    ) -> Result<Delivery, String> {
        let mut d = Delivery {
            subscribers: subs.len() as u64,
            failed: 0,
            failure: None,
            published,
            receivers,
            received: Received::new(sigfig)?,
            missing: 0,
            min_delivered: if subs.is_empty() { 0 } else { u64::MAX },
            max_delivered: 0,
            subscribers_missing: 0,
            queue: false,
            reconnects: 0,
            reconnected: None,
        };
        for (r, failure) in subs {
            if let Some(f) = failure {
                d.failed += 1;
                d.failure.get_or_insert_with(|| f.clone());
            }
            d.add(r)?;
            let distinct = r.distinct();
            d.min_delivered = d.min_delivered.min(distinct);
            d.max_delivered = d.max_delivered.max(distinct);
            let missed = published.saturating_sub(distinct);
            d.missing += missed;
            d.subscribers_missing += u64::from(missed > 0);
        }
        Ok(d)
    }

    /// The summary of a list's waiters: `received` is their one shared tracker (each element
    /// goes to one waiter), `waiters` each one's count and whether and why it failed; missing is
    /// `published` − distinct received.
    pub fn summarise_queue(
        received: Received,
        waiters: &[(u64, Option<String>)],
        published: u64,
    ) -> Delivery {
        let failed = waiters.iter().filter(|w| w.1.is_some()).count() as u64;
        Delivery {
            subscribers: waiters.len() as u64,
            failed,
            failure: waiters.iter().find_map(|w| w.1.clone()),
            published,
            receivers: 0,
            missing: published.saturating_sub(received.distinct()),
            min_delivered: waiters.iter().map(|w| w.0).min().unwrap_or(0),
            max_delivered: waiters.iter().map(|w| w.0).max().unwrap_or(0),
            subscribers_missing: 0,
            received,
            queue: true,
            reconnects: 0,
            reconnected: None,
        }
    }

    /// What went wrong with the delivery, in one clause, when something did: messages missing
    /// or duplicated, waiting connections that ended early, or that ended and came back under
    /// `--reconnect` (`None`: every message reached every subscriber once, or each element one
    /// waiter, on the connections of the start). The run fails on it, as `--verify` fails on a
    /// mismatch (and `--reconnect` on a connection that went down): the figures alone would
    /// pass for a success.
    pub fn shortfall(&self) -> Option<String> {
        let lost = self.missing > 0 || self.received.duplicated > 0 || self.failed > 0;
        if !lost && self.reconnects == 0 {
            return None;
        }
        let (who, due) = if self.queue {
            ("waiting connections", self.published)
        } else {
            ("subscribers", self.published.saturating_mul(self.subscribers))
        };
        let head = if lost {
            let first = self.failure.as_ref().map(|f| format!(" (first: {f})")).unwrap_or_default();
            format!(
                "not every message was delivered once: {} of {due} missing, {} duplicated; {} of {} {who} ended \
                 early{first}",
                self.missing, self.received.duplicated, self.failed, self.subscribers
            )
        } else {
            "every message was delivered once".to_string()
        };
        let back = match self.reconnects {
            0 => String::new(),
            n => format!(
                "; {who} came back {n} times (--reconnect; the first ended: {})",
                self.reconnected.as_deref().unwrap_or("not known")
            ),
        };
        Some(format!("{head}{back}"))
    }

    fn add(&mut self, r: &Received) -> Result<(), String> {
        let m = &mut self.received;
        m.delivered += r.delivered;
        m.duplicated += r.duplicated;
        m.out_of_order += r.out_of_order;
        m.gaps += r.gaps;
        m.foreign += r.foreign;
        m.latency.add(&r.latency).map_err(|e| format!("{e:?}"))?;
        m.service.add(&r.service).map_err(|e| format!("{e:?}"))
    }

    /// Adds another run's figures (`respbench merge`): counts add, extremes widen.
    pub fn merge(&mut self, o: &Delivery) -> Result<(), String> {
        self.subscribers += o.subscribers;
        self.failed += o.failed;
        if self.failure.is_none() {
            self.failure.clone_from(&o.failure);
        }
        self.published += o.published;
        self.receivers += o.receivers;
        self.add(&o.received)?;
        self.missing += o.missing;
        self.min_delivered = self.min_delivered.min(o.min_delivered);
        self.max_delivered = self.max_delivered.max(o.max_delivered);
        self.subscribers_missing += o.subscribers_missing;
        self.reconnects += o.reconnects;
        if self.reconnected.is_none() {
            self.reconnected.clone_from(&o.reconnected);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(resp3: bool, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(if resp3 { b">3\r\n" } else { b"*3\r\n" });
        v.extend_from_slice(b"$7\r\nmessage\r\n$2\r\nch\r\n");
        v.extend_from_slice(format!("${}\r\n", payload.len()).as_bytes());
        v.extend_from_slice(payload);
        v.extend_from_slice(b"\r\n");
        v
    }

    fn stamped(publisher: u32, seq: u64, intended: u64, sent: u64) -> Vec<u8> {
        let mut p = Stamp::blank(80);
        Stamp { publisher, seq, intended: Time::from_micros(intended), sent: Time::from_micros(sent) }
            .write(&mut p);
        p
    }

    #[test]
    fn a_stamp_round_trips_and_a_foreign_payload_has_none() {
        let s = Stamp {
            publisher: 7,
            seq: 123_456,
            intended: Time::from_nanos(99),
            sent: Time::from_nanos(1234),
        };
        let mut p = Stamp::blank(3);
        assert_eq!(p.len(), STAMP_LEN);
        s.write(&mut p);
        assert_eq!(Stamp::read(&p), Some(s));
        assert_eq!(Stamp::read(b"xxx"), None);
        p[30] = b'a';
        assert_eq!(Stamp::read(&p), None);
    }

    #[test]
    fn latency_gaps_duplicates_and_reorderings_in_resp2_and_resp3() {
        for resp3 in [false, true] {
            let mut s = Subscriber::new(Waits::Messages, 3).unwrap();
            let mut bytes = b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n".to_vec();
            for seq in [0, 1, 3, 2, 2, 5] {
                bytes.extend(msg(resp3, &stamped(0, seq, 1000, 1500)));
            }
            bytes.extend(msg(resp3, b"hello"));
            // Byte by byte: a message split anywhere.
            for b in bytes.chunks(1) {
                s.handle_input(b, Time::from_micros(3000)).unwrap();
            }
            let r = &s.received;
            assert_eq!(s.confirmed, 1);
            assert_eq!((r.delivered, r.duplicated, r.out_of_order, r.gaps, r.foreign), (6, 1, 1, 1, 1));
            assert_eq!(r.distinct(), 5);
            assert_eq!(r.latency.max(), r.latency.highest_equivalent(2000));
            assert_eq!(r.service.max(), r.service.highest_equivalent(1500));
        }
    }

    #[test]
    fn the_summary_counts_missing_against_published() {
        let mut a = Subscriber::new(Waits::Messages, 3).unwrap();
        let mut b = Subscriber::new(Waits::Messages, 3).unwrap();
        for seq in 0..10 {
            a.on_payload(&stamped(0, seq, 1, 1), Time::from_micros(5));
            if seq % 2 == 0 {
                b.on_payload(&stamped(0, seq, 1, 1), Time::from_micros(5));
            }
        }
        let subs = [(a.received, None), (b.received, Some("closed".to_string()))];
        let d = Delivery::summarise(&subs, 10, 15, 3).unwrap();
        assert_eq!((d.missing, d.min_delivered, d.max_delivered, d.subscribers_missing), (5, 5, 10, 1));
        assert_eq!((d.failed, d.failure.as_deref(), d.received.delivered), (1, Some("closed"), 15));
        assert_eq!(
            d.shortfall().as_deref(),
            Some(
                "not every message was delivered once: 5 of 20 missing, 0 duplicated; 1 of 2 subscribers ended \
                 early (first: closed)"
            )
        );
        let whole = [(Subscriber::new(Waits::Messages, 3).unwrap().received, None)];
        assert_eq!(Delivery::summarise(&whole, 0, 0, 3).unwrap().shortfall(), None);
    }

    #[test]
    fn a_lists_waiters_share_one_tracker() {
        let mut s = Subscriber::new(Waits::List, 3).unwrap();
        let reply = |seq| Value::Array(vec![Value::Bulk(b"q".to_vec()), Value::Bulk(stamped(0, seq, 1, 1))]);
        for seq in [0, 1, 1, 3] {
            s.on_value(reply(seq), Time::from_micros(10)).unwrap();
        }
        s.on_value(Value::Null, Time::from_micros(10)).unwrap();
        assert_eq!(s.replies, 5, "a nil reply is a reply too");
        let d = Delivery::summarise_queue(s.received, &[(3, None), (1, None)], 5);
        assert_eq!((d.received.delivered, d.received.duplicated, d.missing), (4, 1, 2));
        assert_eq!((d.min_delivered, d.max_delivered, d.queue), (1, 3, true));
        assert_eq!(
            d.shortfall().as_deref(),
            Some("not every message was delivered once: 2 of 5 missing, 1 duplicated; 0 of 2 waiting connections ended early")
        );
        // --reconnect: the waiters came back and nothing was lost; said all the same.
        let mut whole = Delivery::summarise_queue(Received::new(3).unwrap(), &[(0, None)], 0);
        (whole.reconnects, whole.reconnected) = (2, Some("closed".into()));
        assert_eq!(
            whole.shortfall().as_deref(),
            Some(
                "every message was delivered once; waiting connections came back 2 times (--reconnect; the first \
                 ended: closed)"
            )
        );
    }

    #[test]
    fn xreadgroup_replies_in_resp2_and_resp3() {
        let entry = |seq| {
            Value::Array(vec![
                Value::Bulk(b"1-0".to_vec()),
                Value::Array(vec![Value::Bulk(b"payload".to_vec()), Value::Bulk(stamped(0, seq, 1, 1))]),
            ])
        };
        let mut s = Subscriber::new(Waits::Stream, 3).unwrap();
        let resp2 = Value::Array(vec![Value::Array(vec![
            Value::Bulk(b"s".to_vec()),
            Value::Array(vec![entry(0), entry(1)]),
        ])]);
        let resp3 = Value::Map(vec![(Value::Bulk(b"s".to_vec()), Value::Array(vec![entry(2)]))]);
        s.on_value(resp2, Time::from_micros(5)).unwrap();
        s.on_value(resp3, Time::from_micros(5)).unwrap();
        s.on_value(Value::Null, Time::from_micros(5)).unwrap();
        assert_eq!((s.replies, s.received.delivered, s.received.distinct()), (3, 3, 3));
        assert!(s.on_value(Value::Error(b"NOGROUP x".to_vec()), Time::ZERO).is_err());
    }

    #[test]
    fn hostile_input_fails_cleanly() {
        let mut s = Subscriber::new(Waits::Messages, 3).unwrap();
        assert!(matches!(s.handle_input(b"?what\r\n", Time::ZERO), Err(SubscribeError::Protocol(_))));
        let mut s = Subscriber::new(Waits::Messages, 3).unwrap();
        assert!(matches!(s.handle_input(b"-NOPERM no\r\n", Time::ZERO), Err(SubscribeError::Refused(_))));
        // A publisher id past the bound is foreign, not an allocation.
        let mut s = Subscriber::new(Waits::Messages, 3).unwrap();
        s.on_payload(&stamped(999_999, 1, 0, 0), Time::ZERO);
        assert_eq!(s.received.foreign, 1);
    }
}
