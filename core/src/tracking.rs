//! Invalidation latency (`-t tracking`, issue #52): readers with `CLIENT TRACKING` on read keys
//! so the server tracks them, a writer writes each key once, and each reader's invalidation
//! push is timed from the write's send (its intended send in an open loop): the server sends
//! the invalidations while it executes the write, so most come before the writer reads its
//! acknowledgement, and a latency from the acknowledgement would be about 0. Those are counted
//! (`before_ack`). Pure: the session reads the clock and hands in the writes and what each
//! reader heard, in nanoseconds since the Unix epoch.

use hdrhistogram::Histogram;

use crate::shared::new_histogram;

/// The title of `-t tracking`'s test.
pub const TRACKING_TITLE: &str = "SET (invalidation latency, CLIENT TRACKING)";

/// The keys `-t tracking` writes, after `--key-prefix`: this and the key's index in 12 digits.
pub const TRACKING_KEY: &str = "respbench:tracking:";

/// The most keys one test writes.
pub const MAX_KEYS: u64 = 10_000_000;

/// The name of key `i` after `prefix`.
pub fn key(prefix: &str, i: u64) -> Vec<u8> {
    crate::expiry::numbered(prefix, TRACKING_KEY, i)
}

/// The index of a key's name, or `None` for another key.
pub fn index(prefix: &[u8], name: &[u8]) -> Option<u64> {
    crate::expiry::number(prefix, TRACKING_KEY, name)
}

/// Whether reader `r` of `readers` reads key `i`: its own share (`i % readers == r`) and every
/// fourth key, which all of them read.
pub fn reads(r: u64, readers: u64, i: u64) -> bool {
    i % readers.max(1) == r || i.is_multiple_of(4)
}

/// What one reader heard: a key invalidated (`None`: not one of the test's), or a flush (a
/// null invalidation: every key), each with when it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
    /// An invalidated key's index, and when.
    Key(Option<u64>, u64),
    /// Every key (`FLUSHALL`, `FLUSHDB`), and when.
    Flush(u64),
}

/// One key's write, in nanoseconds since the Unix epoch: when it was sent (intended to be, in an
/// open loop) and when its acknowledgement was read; `acked` 0: not written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// The write's send (intended send in an open loop).
    pub sent: u64,
    /// Its acknowledgement read by the writer (0: not written).
    pub acked: u64,
}

/// What the readers received, all together.
#[derive(Clone, Debug)]
pub struct Tracking {
    /// Reader connections.
    pub readers: u64,
    /// Invalidations expected: for each reader, the keys it read that were written.
    pub expected: u64,
    /// Of those, received (once each).
    pub received: u64,
    /// Expected and neither received nor covered by a flush.
    pub lost: u64,
    /// Received again.
    pub duplicated: u64,
    /// Flushes (null invalidations) received, every reader's added.
    pub flushes: u64,
    /// Expected keys a flush invalidated instead (not lost).
    pub flushed: u64,
    /// Invalidations of keys the reader did not read or that were not written.
    pub others: u64,
    /// Invalidations read before the writer read its acknowledgement (the server sends them
    /// while it executes the write, before its reply).
    pub before_ack: u64,
    /// The write's send (intended send in an open loop) to the push on the reader, in
    /// microseconds.
    pub latency: Histogram<u64>,
    /// The server's `tracking_total_keys` once the readers had read (`INFO stats`).
    pub server_keys: Option<u64>,
    /// Its `tracking_total_items`: keys times the readers tracking each.
    pub server_items: Option<u64>,
}

impl Tracking {
    /// Adds `other`: counts and histograms add; the server's figures add too (other nodes).
    pub fn merge(&mut self, other: &Tracking) -> Result<(), String> {
        for (a, b) in [
            (&mut self.readers, other.readers),
            (&mut self.expected, other.expected),
            (&mut self.received, other.received),
            (&mut self.lost, other.lost),
            (&mut self.duplicated, other.duplicated),
            (&mut self.flushes, other.flushes),
            (&mut self.flushed, other.flushed),
            (&mut self.others, other.others),
            (&mut self.before_ack, other.before_ack),
        ] {
            *a = a.checked_add(b).ok_or("tracking: a count overflows")?;
        }
        self.latency.add(&other.latency).map_err(|e| format!("tracking.latency: {e:?}"))?;
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        self.server_keys = add(self.server_keys, other.server_keys);
        self.server_items = add(self.server_items, other.server_items);
        Ok(())
    }

    /// Sums up: `writes[i]` is key `i`'s write, `heard[r]` what reader `r` heard, in order, and
    /// `expects(r, i)` whether reader `r` is to hear of key `i` once written (it read it, or it
    /// broadcasts its prefix, and kept tracking on).
    pub fn summarise(
        writes: &[Written],
        heard: &[Vec<Heard>],
        expects: impl Fn(u64, u64) -> bool,
        sigfig: u8,
    ) -> Result<Tracking, String> {
        let readers = heard.len() as u64;
        let mut t = Tracking {
            readers,
            expected: 0,
            received: 0,
            lost: 0,
            duplicated: 0,
            flushes: 0,
            flushed: 0,
            others: 0,
            before_ack: 0,
            latency: new_histogram(sigfig)?,
            server_keys: None,
            server_items: None,
        };
        let mut got = vec![false; writes.len()];
        for (r, list) in heard.iter().enumerate() {
            let r = r as u64;
            got.iter_mut().for_each(|g| *g = false);
            let mut flushed = false;
            for h in list {
                match *h {
                    Heard::Flush(_) => {
                        t.flushes += 1;
                        flushed = true;
                    }
                    Heard::Key(Some(i), at) if (i as usize) < writes.len() && expects(r, i) => {
                        let w = writes[i as usize];
                        if w.acked == 0 {
                            t.others += 1;
                        } else if got[i as usize] {
                            t.duplicated += 1;
                        } else {
                            got[i as usize] = true;
                            t.received += 1;
                            if at < w.acked {
                                t.before_ack += 1;
                            }
                            t.latency.saturating_record((at.saturating_sub(w.sent) / 1000).max(1));
                        }
                    }
                    Heard::Key(..) => t.others += 1,
                }
            }
            for (i, w) in writes.iter().enumerate() {
                if w.acked != 0 && expects(r, i as u64) {
                    t.expected += 1;
                    if !got[i] {
                        if flushed {
                            t.flushed += 1;
                        } else {
                            t.lost += 1;
                        }
                    }
                }
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_index() {
        let k = key("p:", 7);
        assert_eq!(index(b"p:", &k), Some(7));
        assert_eq!(index(b"", &k), None);
        assert_eq!(index(b"p:", b"p:respbench:tracking:x00000000007"), None);
    }

    #[test]
    fn each_reader_expects_the_written_keys_it_read() {
        // 2 readers, 8 keys: reader 0 reads 0,2,4,6 (and 0,4), reader 1 reads 1,3,5,7 and 0,4.
        assert!(reads(0, 2, 4) && reads(1, 2, 4) && !reads(0, 2, 3) && reads(1, 2, 3));
        // Sent at 0.5 ms, acknowledged at 1 ms (key 6 not written).
        let mut writes = vec![Written { sent: 500_000, acked: 1_000_000 }; 8];
        writes[6] = Written::default();
        let heard = vec![
            vec![
                Heard::Key(Some(0), 3_000_000),
                Heard::Key(Some(2), 800_000),
                Heard::Key(Some(2), 3_000_000),
                Heard::Key(Some(3), 3_000_000),
                Heard::Key(None, 3_000_000),
            ],
            vec![Heard::Key(Some(1), 1_250_000), Heard::Flush(4_000_000)],
        ];
        let t = Tracking::summarise(&writes, &heard, |r, i| reads(r, 2, i), 3).unwrap();
        // Reader 0: 0, 2, 4 written (6 not): 3 expected, 2 received, 4 lost.
        // Reader 1: 0, 1, 3, 4, 5, 7: 6 expected, 1 received, 5 flushed.
        assert_eq!((t.readers, t.expected, t.received), (2, 9, 3));
        assert_eq!((t.lost, t.flushed, t.flushes), (1, 5, 1));
        assert_eq!((t.duplicated, t.others, t.before_ack), (1, 2, 1));
        // Timed from the send, not the acknowledgement: key 2 heard at 0.8 ms (before its
        // acknowledgement: 300 us, not 0), key 1 at 1.25 ms 750 us, key 0 at 3 ms 2.5 ms.
        assert_eq!(t.latency.len(), 3);
        assert!(t.latency.equivalent(t.latency.max(), 2_500));
        assert!(t.latency.equivalent(t.latency.min(), 300));
        assert!(t.latency.equivalent(t.latency.value_at_quantile(0.5), 750));
        let mut m = t.clone();
        m.server_items = Some(4);
        m.merge(&t).unwrap();
        assert_eq!((m.expected, m.received, m.latency.len(), m.server_items), (18, 6, 6, Some(4)));
    }
}
