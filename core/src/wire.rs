//! A connection's output: encoded bytes with large values spliced in by reference.
//!
//! A value of at least [`SPLICE_FROM`] bytes is not copied into a connection's output: the
//! output records where it goes and hands out the shared payload's bytes when the socket gets
//! there ([`Wire::chunk`]). So every connection of a test sends from the one payload of the
//! test's [`Values`], and `-c 50 -d 100000000` holds one 100 MB value, not fifty; a
//! `--dataset` cell that large is taken from the test's one [`Dataset`] likewise. Smaller
//! values are copied, so a batch of small requests still goes in one write.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use crate::dataset::Dataset;
use crate::template::{Sink, Values};

/// The size from which a value is spliced in, at its old path (the templates decide what is
/// spliced: [`crate::template::SPLICE_FROM`]).
pub use crate::template::SPLICE_FROM;

/// The shared bytes a splice takes its bytes from.
#[derive(Clone)]
enum Shared {
    /// `-d`'s payload ([`Values::largest`]).
    Payload(Arc<Values>),
    /// `--dataset`'s cells ([`Dataset::bytes`]).
    Cells(Arc<Dataset>),
}

impl Shared {
    /// The bytes of `range` (clamped to what there is).
    fn bytes(&self, range: Range<usize>) -> &[u8] {
        match self {
            Shared::Payload(v) => {
                let all = v.largest();
                let end = range.end.min(all.len());
                all.get(range.start.min(end)..end).unwrap_or(&[])
            }
            Shared::Cells(d) => d.bytes(range),
        }
    }
}

/// What is left of a splice, as an owned handle on the shared bytes it comes from: a clone of
/// the test's `Arc`'d payload or dataset and a range of it. A completion-based backend (io_uring)
/// keeps it until the kernel has sent the bytes, which then need no copy into a send buffer of
/// its own; it stays valid whatever the connection's output does after it was handed out
/// ([`Wire::clear`], a reconnect, the connection's end).
#[derive(Clone)]
pub struct SharedBytes {
    shared: Shared,
    start: usize,
    end: usize,
}

impl SharedBytes {
    /// The bytes (at most what the shared payload holds in its range).
    pub fn bytes(&self) -> &[u8] {
        self.shared.bytes(self.start..self.end)
    }

    /// How many bytes [`SharedBytes::bytes`] has.
    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the first `n` bytes (all of them when `n` is larger): what is left after a send
    /// that took `n`.
    pub fn advance(&mut self, n: usize) {
        self.start = self.start.saturating_add(n).min(self.end);
    }
}

impl std::fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let of = match self.shared {
            Shared::Payload(_) => "payload",
            Shared::Cells(_) => "dataset",
        };
        f.debug_struct("SharedBytes").field("of", &of).field("range", &(self.start..self.end)).finish()
    }
}

/// The next bytes a connection has to write ([`Wire::next_chunk`]): owned bytes to copy, or
/// shared bytes to send by reference.
#[derive(Debug)]
pub enum Chunk<'a> {
    /// Bytes of the connection's own buffer, valid until the next call into the connection.
    Bytes(&'a [u8]),
    /// A spliced value's bytes (what is left of them), held by an owned handle.
    Shared(SharedBytes),
}

impl Chunk<'_> {
    /// The chunk's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Bytes(b) => b,
            Chunk::Shared(s) => s.bytes(),
        }
    }

    /// How many bytes the chunk has.
    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    /// Whether the chunk has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Bytes spliced into the output: `len` bytes of `shared` from `start`, of which `done` are
/// written, going in before `buf[at]`.
struct Splice {
    at: usize,
    shared: Shared,
    start: usize,
    len: usize,
    done: usize,
}

impl Splice {
    /// What is left to write.
    fn rest(&self) -> &[u8] {
        self.shared.bytes(self.start + self.done..self.start + self.len)
    }
}

/// The bytes a connection has encoded and not yet written: owned bytes, with large values
/// spliced in by reference (see the module docs). Written in order, one contiguous chunk at a
/// time.
#[derive(Default)]
pub struct Wire {
    /// The owned bytes; `buf[pos..]` is not written yet.
    buf: Vec<u8>,
    pos: usize,
    /// The splices not fully written yet, in stream order (`at` ascending, at or after `pos`).
    splices: VecDeque<Splice>,
    /// The spliced bytes not written yet.
    spliced: usize,
    /// Bytes appended since the last [`Wire::clear`].
    appended: u64,
}

impl Wire {
    /// Drops everything, written or not.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.pos = 0;
        self.splices.clear();
        self.spliced = 0;
        self.appended = 0;
    }

    /// Bytes appended and not yet written.
    pub fn unwritten(&self) -> usize {
        self.buf.len() - self.pos + self.spliced
    }

    /// Bytes appended since the output was cleared.
    pub fn appended(&self) -> u64 {
        self.appended + self.buf.len() as u64
    }

    /// Appends `bytes` (copied).
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Drops the written part of the owned bytes once it passes `cap`, before more is
    /// appended: the buffer does not grow behind a slow socket.
    #[inline]
    pub fn compact(&mut self, cap: usize) {
        if self.pos > cap {
            self.drop_written();
        }
    }

    /// Drops the written part of the owned bytes (rare: a socket that took less than was due).
    #[cold]
    #[inline(never)]
    fn drop_written(&mut self) {
        self.buf.drain(..self.pos);
        self.appended += self.pos as u64;
        for s in &mut self.splices {
            s.at -= self.pos;
        }
        self.pos = 0;
    }

    /// The next bytes to write, if any: owned bytes up to the next splice, or what is left of
    /// the splice the output has reached.
    pub fn chunk(&self) -> Option<&[u8]> {
        match self.splices.front() {
            Some(s) if s.at == self.pos => Some(s.rest()),
            Some(s) => Some(&self.buf[self.pos..s.at]),
            None if self.pos < self.buf.len() => Some(&self.buf[self.pos..]),
            None => None,
        }
    }

    /// [`Wire::chunk`], with a splice's bytes as an owned handle ([`Chunk::Shared`]) for a
    /// backend that sends them after the call returns; the same bytes, and [`Wire::advance`]
    /// after it the same way.
    pub fn next_chunk(&self) -> Option<Chunk<'_>> {
        match self.splices.front() {
            Some(s) if s.at == self.pos => Some(Chunk::Shared(SharedBytes {
                shared: s.shared.clone(),
                start: s.start + s.done,
                end: s.start + s.len,
            })),
            _ => self.chunk().map(Chunk::Bytes),
        }
    }

    /// The next chunks, up to `out.len()` of them, in order: what [`Wire::chunk`] and
    /// [`Wire::advance`] would hand out one at a time (owned bytes and splices in turn), for one
    /// vectored write; how many it put in `out`. [`Wire::advance_all`] after it.
    pub fn chunks<'a>(&'a self, out: &mut [&'a [u8]]) -> usize {
        let (mut k, mut pos) = (0, self.pos);
        let mut splices = self.splices.iter().peekable();
        while k < out.len() {
            match splices.peek() {
                Some(s) if s.at == pos => {
                    out[k] = s.rest();
                    splices.next();
                }
                Some(s) => {
                    out[k] = &self.buf[pos..s.at];
                    pos = s.at;
                }
                None if pos < self.buf.len() => {
                    out[k] = &self.buf[pos..];
                    pos = self.buf.len();
                }
                None => break,
            }
            k += 1;
        }
        k
    }

    /// `n` bytes of the output were written, across as many chunks as they cover; returns how
    /// many counted (at most what was unwritten).
    pub fn advance_all(&mut self, mut n: usize) -> usize {
        let mut total = 0;
        while n > 0 {
            let taken = self.advance(n);
            if taken == 0 {
                break;
            }
            total += taken;
            n -= taken;
        }
        total
    }

    /// `n` bytes of the last [`Wire::chunk`] were written; returns how many of them counted
    /// (at most the chunk's length).
    pub fn advance(&mut self, n: usize) -> usize {
        let taken = match self.splices.front_mut() {
            Some(s) if s.at == self.pos => {
                let taken = n.min(s.len - s.done);
                s.done += taken;
                self.spliced -= taken;
                if s.done == s.len {
                    self.splices.pop_front();
                }
                taken
            }
            Some(s) => {
                let taken = n.min(s.at - self.pos);
                self.pos += taken;
                taken
            }
            None => {
                let taken = n.min(self.buf.len() - self.pos);
                self.pos += taken;
                taken
            }
        };
        if self.pos == self.buf.len() && self.splices.is_empty() {
            self.appended += self.buf.len() as u64;
            self.buf.clear();
            self.pos = 0;
        }
        taken
    }
}

impl Sink for Wire {
    #[inline]
    fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    fn value(&mut self, values: &Arc<Values>, len: usize) {
        let len = len.min(values.largest().len());
        if len < SPLICE_FROM {
            self.buf.value(values, len);
            return;
        }
        crate::template::push_bulk_len(&mut self.buf, len);
        self.splice(Shared::Payload(Arc::clone(values)), 0..len);
        self.buf.extend_from_slice(b"\r\n");
    }

    fn cell(&mut self, dataset: &Arc<Dataset>, range: Range<usize>) {
        let len = dataset.bytes(range.clone()).len();
        if len < SPLICE_FROM {
            self.buf.cell(dataset, range);
            return;
        }
        self.splice(Shared::Cells(Arc::clone(dataset)), range.start..range.start + len);
    }
}

impl Wire {
    /// The owned bytes held, written or not (what is not spliced), for tests.
    #[cfg(test)]
    pub(crate) fn owned(&self) -> usize {
        self.buf.len()
    }

    /// Appends `range` of `shared` by reference (its bytes must be there: the callers clamp it).
    fn splice(&mut self, shared: Shared, range: Range<usize>) {
        let len = range.len();
        self.splices.push_back(Splice { at: self.buf.len(), shared, start: range.start, len, done: 0 });
        self.spliced += len;
        self.appended += len as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::ValueSize;

    /// Writes everything out of `w` in chunks of at most `step` bytes.
    fn drain(w: &mut Wire, step: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(c) = w.chunk() {
            let n = c.len().min(step);
            out.extend_from_slice(&c[..n]);
            assert_eq!(w.advance(n), n);
        }
        out
    }

    #[test]
    fn a_large_value_is_spliced_and_written_in_place() {
        let values = Values::new(&ValueSize::Fixed(SPLICE_FROM + 5));
        let mut w = Wire::default();
        w.extend_from_slice(b"head");
        w.value(&values, SPLICE_FROM + 5);
        w.extend_from_slice(b"tail");
        let mut want = b"head".to_vec();
        want.value(&values, SPLICE_FROM + 5);
        want.extend_from_slice(b"tail");
        assert_eq!(w.unwritten(), want.len());
        assert_eq!(w.appended(), want.len() as u64);
        assert!(w.buf.len() < 64, "the value is not copied: {} bytes owned", w.buf.len());
        assert_eq!(drain(&mut w, 7000), want);
        assert_eq!(w.unwritten(), 0);
        assert_eq!(w.appended(), want.len() as u64);
    }

    #[test]
    fn a_small_value_is_copied() {
        let values = Values::new(&ValueSize::Fixed(100));
        let mut w = Wire::default();
        w.value(&values, 100);
        assert!(w.splices.is_empty());
        let mut want = Vec::new();
        want.value(&values, 100);
        assert_eq!(drain(&mut w, usize::MAX), want);
    }

    #[test]
    fn compacting_keeps_the_splices_in_place() {
        let values = Values::new(&ValueSize::Fixed(SPLICE_FROM));
        let mut w = Wire::default();
        let mut want = Vec::new();
        w.extend_from_slice(&[b'x'; 100]);
        want.extend_from_slice(&[b'x'; 100]);
        let first = w.chunk().map(<[u8]>::len);
        assert_eq!(first, Some(100));
        w.advance(60);
        w.value(&values, SPLICE_FROM);
        w.compact(10);
        w.value(&values, SPLICE_FROM);
        want.value(&values, SPLICE_FROM);
        want.value(&values, SPLICE_FROM);
        assert_eq!(w.appended(), want.len() as u64);
        assert_eq!(drain(&mut w, 1000), want[60..]);
        assert_eq!(w.appended(), want.len() as u64);
    }

    /// Writes everything out of `w` through [`Wire::next_chunk`], taking `steps` bytes in turn
    /// (cycled) of each chunk, as a backend that keeps the shared handles would: each handle's
    /// bytes are read only after the output moved on.
    fn drain_shared(w: &mut Wire, steps: &[usize]) -> (Vec<u8>, usize) {
        let (mut out, mut handles, mut k) = (Vec::new(), 0, 0);
        loop {
            let step = steps[k % steps.len()];
            k += 1;
            let n = match w.next_chunk() {
                None => break,
                Some(Chunk::Bytes(b)) => {
                    let n = b.len().min(step);
                    out.extend_from_slice(&b[..n]);
                    n
                }
                Some(Chunk::Shared(mut h)) => {
                    handles += 1;
                    let n = h.len().min(step);
                    let whole = h.len();
                    assert_eq!(w.advance(n), n);
                    // Read after the output advanced (and perhaps dropped its splice).
                    let taken = h.bytes()[..n].to_vec();
                    h.advance(n);
                    assert_eq!(h.len(), whole - n);
                    out.extend_from_slice(&taken);
                    continue;
                }
            };
            assert_eq!(w.advance(n), n);
        }
        (out, handles)
    }

    #[test]
    fn shared_chunks_advance_partly_across_header_splice_and_crlf() {
        let values = Values::new(&ValueSize::Fixed(SPLICE_FROM + 3));
        let mut want = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n".to_vec();
        want.value(&values, SPLICE_FROM + 3);
        want.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        // Steps that end inside the header, at the splice's first and last bytes, inside the
        // CRLF, and one byte at a time over the edges.
        for steps in [&[1][..], &[2, 7, 1], &[5, SPLICE_FROM - 1, 1, 1], &[usize::MAX], &[3, 4096, 1]] {
            let mut w = Wire::default();
            w.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n");
            w.value(&values, SPLICE_FROM + 3);
            w.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
            let total = w.unwritten();
            let (out, handles) = drain_shared(&mut w, steps);
            assert_eq!(out.len(), total, "{steps:?}");
            assert!(out == want, "the bytes differ with steps {steps:?}");
            assert!(handles >= 1, "{steps:?}");
            assert_eq!((w.unwritten(), w.next_chunk().is_none()), (0, true));
        }
    }

    #[test]
    fn next_chunk_hands_owned_bytes_as_bytes_and_the_same_bytes_as_chunk() {
        let values = Values::new(&ValueSize::Fixed(SPLICE_FROM));
        let mut w = Wire::default();
        w.extend_from_slice(b"head");
        w.value(&values, SPLICE_FROM);
        let head = format!("head${SPLICE_FROM}\r\n");
        assert!(matches!(w.next_chunk(), Some(Chunk::Bytes(b)) if b == head.as_bytes()));
        w.advance(4);
        let header = w.chunk().map(<[u8]>::to_vec);
        assert_eq!(w.next_chunk().map(|c| c.bytes().to_vec()), header);
        w.advance(head.len() - 4);
        let Some(Chunk::Shared(h)) = w.next_chunk() else { panic!("the value is shared") };
        assert_eq!(Some(h.bytes()), w.chunk());
        assert_eq!(h.len(), SPLICE_FROM);
    }

    #[test]
    fn a_shared_handle_outlives_the_wire_and_its_clear() {
        let values = Values::new(&ValueSize::Fixed(SPLICE_FROM + 10));
        let mut want = Vec::new();
        want.value(&values, SPLICE_FROM + 10);
        let mut w = Wire::default();
        w.value(&values, SPLICE_FROM + 10);
        let header = w.chunk().map_or(0, <[u8]>::len);
        w.advance(header);
        w.advance(10);
        let Some(Chunk::Shared(mut h)) = w.next_chunk() else { panic!("the value is shared") };
        w.clear();
        assert!(w.next_chunk().is_none());
        drop(w);
        drop(values);
        assert_eq!(h.bytes(), &want[header + 10..header + SPLICE_FROM + 10]);
        h.advance(usize::MAX);
        assert!(h.is_empty());
        assert_eq!(h.bytes(), b"");
    }

    #[test]
    fn a_dataset_cell_is_shared_too() {
        let cell = vec![b'z'; SPLICE_FROM + 1];
        let mut text = b"v\n".to_vec();
        text.extend_from_slice(&cell);
        let dataset = Arc::new(Dataset::parse("t.csv", &text, b',', 0).unwrap());
        let mut w = Wire::default();
        w.cell(&dataset, dataset.cell_range(0, 0));
        let Some(Chunk::Shared(h)) = w.next_chunk() else { panic!("the cell is shared") };
        assert_eq!(h.bytes(), &cell[..]);
        assert!(format!("{h:?}").contains("dataset"));
    }

    #[test]
    fn chunks_gather_what_chunk_hands_out_and_advance_all_crosses_them() {
        let values = Values::new(&ValueSize::Fixed(SPLICE_FROM + 1));
        let mut want = Vec::new();
        let mut w = Wire::default();
        for _ in 0..3 {
            w.extend_from_slice(b"*2\r\n$3\r\nSET\r\n");
            w.value(&values, SPLICE_FROM + 1);
            want.extend_from_slice(b"*2\r\n$3\r\nSET\r\n");
            want.value(&values, SPLICE_FROM + 1);
        }
        let mut sent = Vec::new();
        // Writes of 4 chunks at most that take all but the last 5 bytes offered, or 1 byte.
        for round in 0.. {
            let mut parts: [&[u8]; 4] = [&[]; 4];
            let k = w.chunks(&mut parts);
            if k == 0 {
                break;
            }
            let offered: Vec<u8> = parts[..k].concat();
            let n = if round % 2 == 0 { offered.len().saturating_sub(5).max(1) } else { 1 };
            sent.extend_from_slice(&offered[..n]);
            assert_eq!(w.advance_all(n), n);
        }
        assert!(sent == want, "the gathered bytes differ");
        assert_eq!(w.unwritten(), 0);
        assert_eq!(w.advance_all(10), 0);
    }

    #[test]
    fn advance_counts_no_more_than_the_chunk() {
        let mut w = Wire::default();
        w.extend_from_slice(b"abc");
        assert_eq!(w.advance(10), 3);
        assert_eq!(w.chunk(), None);
        assert_eq!(w.unwritten(), 0);
    }
}
