//! Pre-encoded request templates.
//!
//! A request is RESP-encoded once. Producing one on the hot path is a copy of those bytes
//! plus, for each `__rand_int__` placeholder, 12 zero-padded decimal digits written over it in
//! place. The placeholder and the digits are both 12 bytes wide, so no length prefix ever
//! changes. This is what redis-benchmark does, and respbench sends the same bytes.
//!
//! A template may also have value slots (`-d 16-1024`, `-d 16:3,1024:1`): arguments whose
//! size is drawn per request. The template bytes leave them out and record where they go;
//! writing one is `$len\r\n`, the first `len` bytes of one shared payload of the largest size,
//! and `\r\n`. Fixed sizes never use slots, so `-d 3` sends exactly redis-benchmark's bytes.
//!
//! An argument holding `__rand_num__` (memtier's `__key__`: the number in its own digits,
//! `memtier-1234`) changes length per request, so it is a slot too: its pieces are written,
//! then its `$len\r\n` computed from them. Only templates with slots take that path (and
//! `--dataset` templates, whose field arguments are written per request anyway).

use std::sync::Arc;

use crate::dataset::{Dataset, Piece};
use crate::dist::{SizeSampler, ValueSize};
#[cfg(any(test, feature = "testing"))]
use crate::rng::Rng;

// Key generation lives in `crate::keys`; re-exported so the `template::` paths still work.
pub use crate::keys::{KeyGen, KeySpace, SharedCounter};

/// Values at least this large are spliced in by reference instead of copied: at this size a
/// write or two more per request costs less than copying the value into every connection. A
/// connection's output ([`crate::wire::Wire`]) splices them; the templates decide what is spliced.
pub const SPLICE_FROM: usize = 64 * 1024;

/// The placeholder text redis-benchmark substitutes.
const PLACEHOLDER: &[u8; 12] = b"__rand_int__";

/// valkey-benchmark 9's shared placeholders: every occurrence of one of them in a request gets
/// the same value (each `__rand_int__` draws its own). Kind `k` (1 to 9) is `SHARED[k - 1]`.
const SHARED: [&[u8; 12]; 9] = [
    b"__rand_1st__",
    b"__rand_2nd__",
    b"__rand_3rd__",
    b"__rand_4th__",
    b"__rand_5th__",
    b"__rand_6th__",
    b"__rand_7th__",
    b"__rand_8th__",
    b"__rand_9th__",
];

/// respbench's unpadded placeholder: the key's number as memtier writes its `__key__`, in as
/// many digits as it has (`1234`, not `000000001234`). An argument holding one changes length
/// per request, so it is written through a slot ([`Template::write`]'s slower path), never
/// in place.
const UNPADDED: &[u8; 12] = b"__rand_num__";

/// A piece of an argument that holds [`UNPADDED`]: bytes, or a placeholder of a kind
/// (`placeholder_kind`'s, or `None` for [`UNPADDED`]).
#[derive(Clone, Debug, PartialEq, Eq)]
enum KeyPiece {
    Text(Vec<u8>),
    Key(Option<u8>),
}

/// The pieces of `arg` if it holds [`UNPADDED`] (placeholders taken left to right, not
/// overlapping, as `find_placeholders` takes them), else `None`.
fn key_pieces(arg: &[u8]) -> Option<Vec<KeyPiece>> {
    if !arg.windows(WIDTH).any(|w| w == UNPADDED) {
        return None;
    }
    let (mut pieces, mut text, mut i) = (Vec::new(), Vec::new(), 0);
    while i < arg.len() {
        let kind = match arg.get(i..i + WIDTH) {
            Some(w) if w == UNPADDED => Some(None),
            Some(_) => placeholder_kind(&arg[i..]).map(Some),
            None => None,
        };
        match kind {
            Some(kind) => {
                if !text.is_empty() {
                    pieces.push(KeyPiece::Text(std::mem::take(&mut text)));
                }
                pieces.push(KeyPiece::Key(kind));
                i += WIDTH;
            }
            None => {
                text.push(arg[i]);
                i += 1;
            }
        }
    }
    if !text.is_empty() {
        pieces.push(KeyPiece::Text(text));
    }
    Some(pieces)
}

/// The kind of the placeholder that starts `at`: 0 for `__rand_int__`, 1 to 9 for
/// `__rand_1st__` to `__rand_9th__`, `None` for none.
fn placeholder_kind(at: &[u8]) -> Option<u8> {
    let field = at.get(..WIDTH)?;
    if field == PLACEHOLDER {
        return Some(0);
    }
    SHARED.iter().position(|p| field == &p[..]).map(|k| k as u8 + 1)
}

/// Room for an expiry time's argument: `$20\r\n`, up to 20 digits and `\r\n`.
const EXPIRY_ROOM: usize = 32;

/// Width of the placeholder and of the digits that replace it.
const WIDTH: usize = 12;

/// Substituted values are reduced modulo 10^12 so they fit 12 digits.
const MODULUS: u64 = 1_000_000_000_000;

/// Appends `arg` as a RESP bulk string, recording where its placeholders start.
fn push_bulk(bytes: &mut Vec<u8>, arg: &[u8], placeholders: &mut Vec<usize>) {
    bytes.push(b'$');
    push_decimal(bytes, arg.len());
    bytes.extend_from_slice(b"\r\n");
    find_placeholders(arg, bytes.len(), placeholders);
    bytes.extend_from_slice(arg);
    bytes.extend_from_slice(b"\r\n");
}

/// A request pre-encoded once; producing it is a copy plus overwriting 12 digits per placeholder in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    bytes: Vec<u8>,
    /// Start offset in `bytes` of every placeholder, ascending, non-overlapping.
    placeholders: Vec<usize>,
    /// The kind of each placeholder (see `placeholder_kind`), empty when all are `__rand_int__`.
    kinds: Vec<u8>,
    /// Offsets in `bytes` where a value element is spliced in, ascending (empty for fixed sizes).
    slots: Vec<usize>,
    /// The sizes and the payload the slots draw from (`None` without slots).
    values: Option<Arc<Values>>,
    /// `--dataset`'s arguments, filled from a row per request (`None` without a dataset).
    rows: Option<Arc<Rows>>,
    /// `--expiry-range`: the time of the last argument (after `EX` or `PX`, which the bytes
    /// end with), drawn per request (`None` without).
    expiry: Option<Expiry>,
    /// Where a delivery stamp goes (`-t pubsub`, [`crate::delivery::Stamp`]): its offset in
    /// `bytes`, overwritten per request by the client.
    stamp: Option<usize>,
    /// `--channels M`: where the channel's 6 digits go and how many channels there are (the
    /// client writes `seq % M`).
    channel: Option<(usize, u64)>,
    /// The arguments holding [`UNPADDED`]: the index in `slots` of each, ascending, and its
    /// pieces (empty without: the other slots are values).
    keyed: Vec<(usize, Vec<KeyPiece>, Vec<u8>)>,
}

/// `--expiry-range`: a `SET` carries `EX` (seconds) or `PX` (milliseconds) with a time drawn
/// uniformly from `lo` to `hi`, both included, per request ([`Template::with_expiry`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expiry {
    /// The shortest time, at least 1.
    pub lo: u64,
    /// The longest time, at least `lo` and at most [`Expiry::MAX`].
    pub hi: u64,
    /// The times are milliseconds (`PX`), else seconds (`EX`).
    pub millis: bool,
}

impl Expiry {
    /// The longest time either unit takes: about 317 years in seconds, so that the server's
    /// milliseconds never overflow.
    pub const MAX: u64 = 10_000_000_000;

    /// The option word: `EX` for seconds, `PX` for milliseconds.
    pub fn word(&self) -> &'static str {
        if self.millis {
            "PX"
        } else {
            "EX"
        }
    }

    /// One time, uniform over `[lo, hi]`.
    pub fn draw(&self, rng: &mut crate::rng::Rng) -> u64 {
        let (lo, hi) = (self.lo.min(self.hi), self.hi.max(self.lo));
        lo + rng.below(hi - lo + 1)
    }
}

impl std::fmt::Display for Expiry {
    /// The `--expiry-range` syntax: `1-2` (seconds) or `500ms-1500ms`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.millis {
            write!(f, "{}ms-{}ms", self.lo, self.hi)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

/// The arguments of a template that take their bytes from a dataset row (`__field:NAME__`).
#[derive(Debug, PartialEq, Eq)]
struct Rows {
    dataset: Arc<Dataset>,
    /// Per argument: its offset in the template's bytes (where it is spliced in), its pieces,
    /// and the argument as given (for display).
    args: Vec<(usize, Vec<Piece>, Vec<u8>)>,
    /// The encoded length of the longest request's field arguments, all together.
    largest: usize,
    /// Of those, the bytes a connection's output copies: all but the cells it splices.
    copied: usize,
    /// The cells taken by reference (see [`spliceable`]), as indices into the dataset's cells
    /// (`row * fields + column`), ascending.
    spliced: Vec<usize>,
    /// The arguments holding [`UNPADDED`] (and no field), in order; empty for most templates.
    keyed: Vec<RowKey>,
}

/// An argument of a `--dataset` template holding [`UNPADDED`]: written as [`write_keyed`]
/// writes one, its number unpadded and its length computed per request.
#[derive(Debug, PartialEq, Eq)]
struct RowKey {
    /// Its place among the template's arguments written per request (fields and keys).
    index: usize,
    /// Its offset in the template's bytes.
    at: usize,
    pieces: Vec<KeyPiece>,
    /// The argument as given (for display).
    arg: Vec<u8>,
}

/// An argument of a `--dataset` template written per request: a field one or a keyed one.
#[derive(Clone, Copy)]
enum RowArg<'a> {
    Fields(&'a [Piece]),
    Key(&'a [KeyPiece]),
}

impl Rows {
    /// The arguments written per request, in order: each one's offset in the template's bytes,
    /// its pieces and its text.
    fn in_order(&self) -> impl Iterator<Item = (usize, RowArg<'_>, &[u8])> + '_ {
        let mut fields = self.args.iter();
        let mut keyed = self.keyed.iter().peekable();
        (0..self.args.len() + self.keyed.len()).filter_map(move |i| match keyed.next_if(|k| k.index == i) {
            Some(k) => Some((k.at, RowArg::Key(&k.pieces), &k.arg[..])),
            None => fields.next().map(|(at, p, arg)| (*at, RowArg::Fields(p), &arg[..])),
        })
    }

    /// Whether `column`'s cell in `row` goes by reference (see [`spliceable`]).
    #[inline]
    fn splices(&self, row: usize, column: usize) -> bool {
        let fields = self.dataset.names().len();
        !self.spliced.is_empty()
            && row
                .checked_mul(fields)
                .and_then(|i| i.checked_add(column))
                .is_some_and(|i| self.spliced.binary_search(&i).is_ok())
    }
}

/// Whether a `--dataset` cell is taken by reference to the dataset's one buffer instead of
/// copied into each request: it is at least [`SPLICE_FROM`] bytes (what `-d`
/// splices), and no placeholder can be in it or across its edges, since its bytes are sent as
/// they are. (A placeholder across an edge would start in the last 11 bytes or end in the first
/// 11; the placeholders around it, if any, are filled in the copied bytes.) The check runs once,
/// when the template is made.
fn spliceable(cell: &[u8]) -> bool {
    if cell.len() < SPLICE_FROM {
        return false;
    }
    let patterns = || std::iter::once(PLACEHOLDER).chain(SHARED.iter().copied());
    for k in 1..WIDTH {
        let (head, tail) = (&cell[..k], &cell[cell.len() - k..]);
        if patterns().any(|p| &p[WIDTH - k..] == head || &p[..k] == tail) {
            return false;
        }
    }
    !holds_placeholder(cell)
}

/// Whether a placeholder starts anywhere in `bytes`. Every one starts with `_`, so the bytes
/// are looked at eight at a time for one (a 100 MB field is checked in a blink, in a debug
/// build too), and only where there is one for a placeholder.
fn holds_placeholder(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let underscores = u64::from_ne_bytes([b'_'; 8]);
    let at = |i: usize| bytes.get(i..).and_then(placeholder_kind).is_some();
    let chunks = bytes.chunks_exact(8);
    let tail = bytes.len() - chunks.remainder().len();
    for (k, chunk) in chunks.enumerate() {
        // A zero byte of `w` is a `_` of the chunk (the exact test for one: no false negatives).
        let has = <[u8; 8]>::try_from(chunk).map_or(true, |c| {
            let w = u64::from_ne_bytes(c) ^ underscores;
            w.wrapping_sub(ONES) & !w & HIGH != 0
        });
        if has && (k * 8..k * 8 + 8).any(at) {
            return true;
        }
    }
    (tail..bytes.len()).any(at)
}

/// Value sizes and the one payload every variable-size value is a prefix of.
#[derive(PartialEq, Eq)]
pub struct Values {
    spec: ValueSize,
    sizes: SizeSampler,
    /// The one size when every value has it: a slot then draws nothing from the rng.
    fixed: Option<usize>,
    /// `-d lo-hi/key`: each value's size set by its request's key, not drawn.
    by_key: Option<(usize, usize)>,
    /// `payload(spec.max())`: its first `len` bytes are redis-benchmark's `-d len` value.
    payload: Vec<u8>,
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the payload: it may be a gigabyte.
        write!(f, "Values({})", self.spec)
    }
}

impl Values {
    /// The sizes of `spec` with a payload of its largest size, shared by every template using it.
    pub fn new(spec: &ValueSize) -> Arc<Values> {
        let sizes = spec.sampler();
        let fixed = spec.is_fixed().then(|| match sizes {
            SizeSampler::Fixed(n) => n,
            SizeSampler::Range { lo, .. } => lo,
            SizeSampler::Weighted { ref cumulative, .. } => cumulative.first().map_or(0, |&(_, s)| s),
        });
        let by_key = match *spec {
            ValueSize::ByKey { lo, hi } if lo != hi => Some((lo, hi)),
            _ => None,
        };
        Arc::new(Values { spec: spec.clone(), sizes, fixed, by_key, payload: payload(spec.max()) })
    }

    /// The size of the next value: the fixed one, one set by the last key drawn (memtier's
    /// `--data-size-pattern S`: `lo + (hi - lo) × place`, truncated), or one drawn.
    #[inline]
    fn next_size(&self, keys: &mut KeyGen) -> usize {
        if let Some((lo, hi)) = self.by_key {
            return lo + ((hi - lo) as f64 * keys.place()) as usize;
        }
        self.fixed.unwrap_or_else(|| self.sizes.sample(&mut keys.rng))
    }

    /// The size spec.
    pub fn spec(&self) -> &ValueSize {
        &self.spec
    }

    /// The largest value: `-d`'s bytes when the size is fixed.
    pub fn largest(&self) -> &[u8] {
        &self.payload
    }
}

/// One argument of [`Template::with_values`].
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// These bytes (placeholders in them are substituted).
    Bytes(&'a [u8]),
    /// A value whose size is drawn per request from the template's [`Values`].
    Value,
}

/// Where [`Template::write`] puts a request: a `Vec<u8>` (every byte copied), or a
/// connection's output ([`crate::wire::Wire`]), which takes a large value by reference.
pub trait Sink {
    /// The owned bytes, to append to (placeholders are filled in them in place).
    fn bytes(&mut self) -> &mut Vec<u8>;

    /// Appends a value: `$len\r\n`, the first `len` bytes of `values`' payload and `\r\n`.
    fn value(&mut self, values: &Arc<Values>, len: usize);

    /// Appends the bytes of `range` of `dataset`'s buffer (a cell, [`Dataset::cell_range`]),
    /// as they are: no header.
    fn cell(&mut self, dataset: &Arc<Dataset>, range: std::ops::Range<usize>);
}

impl Sink for Vec<u8> {
    #[inline]
    fn bytes(&mut self) -> &mut Vec<u8> {
        self
    }

    /// Copies the value, allocating nothing beyond the vector's growth.
    #[inline]
    fn value(&mut self, values: &Arc<Values>, len: usize) {
        let payload = values.largest();
        let len = len.min(payload.len());
        push_bulk_len(self, len);
        self.extend_from_slice(&payload[..len]);
        self.extend_from_slice(b"\r\n");
    }

    /// Copies the cell.
    #[inline]
    fn cell(&mut self, dataset: &Arc<Dataset>, range: std::ops::Range<usize>) {
        self.extend_from_slice(dataset.bytes(range));
    }
}

/// Appends a bulk string's header, `$len\r\n`, without allocating beyond `out`'s growth.
#[inline]
pub(crate) fn push_bulk_len(out: &mut Vec<u8>, len: usize) {
    let mut digits = [0u8; 20];
    out.push(b'$');
    out.extend_from_slice(decimal(len as u64, &mut digits));
    out.extend_from_slice(b"\r\n");
}

/// The decimal digits of `v`, written at the end of `digits`.
#[inline]
fn decimal(mut v: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &digits[i..]
}

/// Overwrites the 12 bytes at `at` in `out` with `key`'s digits (nothing when out of range:
/// offsets come from `find_placeholders` on the same bytes, so the field always exists, and
/// `get_mut` + `try_into` keeps that invariant from ever becoming a panic).
#[inline(always)]
fn fill(out: &mut [u8], at: usize, key: u64) {
    if let Some(field) = out.get_mut(at..at + WIDTH).and_then(|s| <&mut [u8; WIDTH]>::try_from(s).ok()) {
        write_digits(field, key);
    }
}

/// Appends the start of every non-overlapping placeholder (`__rand_int__`, `__rand_1st__` …
/// `__rand_9th__`) in `hay`, scanning left to right, plus `base`.
///
/// Non-overlapping and left to right matches redis-benchmark, which advances 12 bytes past
/// each `strstr` hit. Unlike `strstr`, a NUL byte does not end the search.
fn find_placeholders(hay: &[u8], base: usize, found: &mut Vec<usize>) {
    let mut i = 0;
    while i + WIDTH <= hay.len() {
        if placeholder_kind(&hay[i..]).is_some() {
            found.push(base + i);
            i += WIDTH;
        } else {
            i += 1;
        }
    }
}

/// The kind of each placeholder at `offsets` in `bytes`; empty when every one is `__rand_int__`
/// (the common case, whose requests then draw one key per placeholder as before).
fn kinds_of(bytes: &[u8], offsets: &[usize]) -> Vec<u8> {
    let kinds: Vec<u8> = offsets.iter().map(|&o| placeholder_kind(&bytes[o..]).unwrap_or(0)).collect();
    if kinds.iter().all(|&k| k == 0) {
        Vec::new()
    } else {
        kinds
    }
}

/// The value of the placeholder of kind `kind` in the request being written: a fresh key for
/// `__rand_int__`, else the one its kind drew first in this request.
#[inline]
fn draw(kind: u8, shared: &mut [Option<u64>; 10], keys: &mut KeyGen) -> u64 {
    if kind == 0 {
        return keys.next_key() % MODULUS;
    }
    *shared[usize::from(kind)].get_or_insert_with(|| keys.next_key() % MODULUS)
}

/// Appends the decimal form of `n` to `out`.
fn push_decimal(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(n.to_string().as_bytes());
}

/// The 8 ASCII digits of `n` (< 10^8, zero-padded), most significant first in memory order.
///
/// All eight digits are found at once in the lanes of one `u64`: the number is split into two
/// 4-digit halves (32-bit lanes), each half into two 2-digit quarters (16-bit lanes), each
/// quarter into two digits (8-bit lanes). Each split divides every lane at once by multiplying
/// with a fixed-point reciprocal, exact for the lane's range: 10486 / 2^20 for a quotient by 100
/// of a value below 10^4, and 103 / 2^10 for a quotient by 10 of a value below 100. No lane's
/// product carries into the next. The lowest lane is the first in memory, so the most
/// significant digit goes there.
#[inline(always)]
fn digits8(n: u32) -> [u8; 8] {
    let n = u64::from(n);
    let x = (n / 10_000) | ((n % 10_000) << 32);
    let q = ((x * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let x = q | ((x - q * 100) << 16);
    let q = ((x * 103) >> 10) & 0x000F_000F_000F_000F;
    let x = q | ((x - q * 10) << 8);
    (x | 0x3030_3030_3030_3030).to_le_bytes()
}

/// Writes `v` (< 10^12) as 12 zero-padded ASCII digits.
#[inline(always)]
fn write_digits(dst: &mut [u8; WIDTH], v: u64) {
    let (hi, lo) = ((v / 100_000_000) as u32, (v % 100_000_000) as u32);
    let (head, tail) = dst.split_at_mut(4);
    // Keyspaces up to 10^8 keys (nearly all) never need the top four digits' arithmetic.
    if hi == 0 {
        head.copy_from_slice(b"0000");
    } else {
        head.copy_from_slice(&digits8(hi)[4..]);
    }
    tail.copy_from_slice(&digits8(lo));
}

impl Template {
    /// A template of these bytes and placeholders, with no value slots, rows, expiry or stamp
    /// (the constructors set what they add).
    fn of(bytes: Vec<u8>, placeholders: Vec<usize>, kinds: Vec<u8>) -> Template {
        Template {
            bytes,
            placeholders,
            kinds,
            slots: Vec::new(),
            values: None,
            rows: None,
            expiry: None,
            stamp: None,
            channel: None,
            keyed: Vec::new(),
        }
    }

    /// RESP-encodes `args` as an array of bulk strings and records the offset of every `__rand_int__` in any argument.
    ///
    /// The encoding is `*N\r\n` then `$len\r\narg\r\n` per argument. An argument may hold
    /// several placeholders (`key:__rand_int__:__rand_int__`); each is filled independently.
    pub fn command(args: &[&[u8]]) -> Template {
        let args: Vec<Arg> = args.iter().map(|a| Arg::Bytes(a)).collect();
        Template::encode(&args, None)
    }

    /// The encoding of [`Template::command`], with a slot (filled per request from `values`)
    /// for each [`Arg::Value`].
    fn encode(args: &[Arg], values: Option<&Arc<Values>>) -> Template {
        let known: usize = args.iter().map(|a| if let Arg::Bytes(b) = a { b.len() + 16 } else { 0 }).sum();
        let mut bytes = Vec::with_capacity(16 + known);
        let mut placeholders = Vec::new();
        let mut slots = Vec::new();
        let mut keyed = Vec::new();
        bytes.push(b'*');
        push_decimal(&mut bytes, args.len());
        bytes.extend_from_slice(b"\r\n");
        for arg in args {
            match arg {
                Arg::Bytes(arg) => match key_pieces(arg) {
                    Some(pieces) => {
                        keyed.push((slots.len(), pieces, arg.to_vec()));
                        slots.push(bytes.len());
                    }
                    None => push_bulk(&mut bytes, arg, &mut placeholders),
                },
                Arg::Value => slots.push(bytes.len()),
            }
        }
        let values = if slots.len() == keyed.len() { None } else { values.map(Arc::clone) };
        let kinds = kinds_of(&bytes, &placeholders);
        Template { slots, values, keyed, ..Template::of(bytes, placeholders, kinds) }
    }

    /// [`Template::command`] for `--dataset`: an argument with `__field:NAME__` placeholders
    /// takes its bytes from a row of `dataset` per request, the rows taken in turn
    /// ([`Dataset::next_row`]). `__rand_int__` and the other placeholders are substituted
    /// everywhere, in a row's bytes too (valkey-benchmark 9 fills them after the fields).
    ///
    /// An argument holding `__rand_num__` and no field is written with its number unpadded, as
    /// [`Template::command`] writes one (a row's bytes are not searched for it).
    ///
    /// A placeholder naming no field of the dataset is an error that lists its fields, and so
    /// is an argument holding both a field and `__rand_num__`.
    pub fn with_dataset(args: &[&[u8]], dataset: &Arc<Dataset>) -> Result<Template, String> {
        let mut bytes = Vec::new();
        let mut placeholders = Vec::new();
        let mut fields = Vec::new();
        let mut keyed = Vec::new();
        bytes.push(b'*');
        push_decimal(&mut bytes, args.len());
        bytes.extend_from_slice(b"\r\n");
        for arg in args {
            match (crate::dataset::pieces(arg, dataset)?, key_pieces(arg)) {
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "--dataset: the argument {} holds both a __field:NAME__ and __rand_num__; give \
                         __rand_int__ (12 digits) there, or the key in an argument of its own",
                        String::from_utf8_lossy(arg)
                    ))
                }
                (Some(pieces), None) => fields.push((bytes.len(), pieces, arg.to_vec())),
                (None, Some(pieces)) => {
                    let index = fields.len() + keyed.len();
                    keyed.push(RowKey { index, at: bytes.len(), pieces, arg: arg.to_vec() });
                }
                (None, None) => push_bulk(&mut bytes, arg, &mut placeholders),
            }
        }
        let kinds = kinds_of(&bytes, &placeholders);
        if fields.is_empty() {
            return Ok(Template::command(args));
        }
        let columns: Vec<usize> = fields
            .iter()
            .flat_map(|(_, p, _)| p.iter())
            .filter_map(|p| if let Piece::Field(c) = p { Some(*c) } else { None })
            .collect();
        let mut spliced: Vec<usize> = (0..dataset.rows())
            .flat_map(|row| columns.iter().map(move |&c| (row, c)))
            .filter(|&(row, c)| spliceable(dataset.cell(row, c)))
            .filter_map(|(row, c)| row.checked_mul(dataset.names().len())?.checked_add(c))
            .collect();
        spliced.sort_unstable();
        spliced.dedup();
        let room: usize = keyed.iter().map(|k| key_room(&k.pieces)).sum();
        let mut rows =
            Rows { dataset: Arc::clone(dataset), args: fields, largest: room, copied: room, spliced, keyed };
        for row in 0..dataset.rows() {
            let (mut all, mut copied) = (room, room);
            for (_, pieces, _) in &rows.args {
                let len = field_len(dataset, row, pieces);
                let by_reference: usize = pieces
                    .iter()
                    .filter_map(|p| match p {
                        Piece::Field(c) if rows.splices(row, *c) => Some(dataset.cell(row, *c).len()),
                        _ => None,
                    })
                    .sum();
                all = all.saturating_add(len + 24);
                copied = copied.saturating_add(len.saturating_sub(by_reference) + 24);
            }
            rows.largest = rows.largest.max(all);
            rows.copied = rows.copied.max(copied);
        }
        // Shared placeholders may sit in a row's bytes, so kinds are always kept here.
        let kinds = if kinds.is_empty() { vec![0; placeholders.len()] } else { kinds };
        Ok(Template { rows: Some(Arc::new(rows)), ..Template::of(bytes, placeholders, kinds) })
    }

    /// Like [`Template::command`], with [`Arg::Value`] arguments sized from `values` per request.
    ///
    /// When every size is the same and smaller than [`SPLICE_FROM`] the value is
    /// encoded into the template like any argument (so `-d 3` gives [`Template::command`]'s
    /// bytes exactly); otherwise each value becomes a slot filled by [`Template::write`], whose
    /// bytes are the same, so a large value is kept once, in `values`, and a connection's
    /// output takes it by reference.
    pub fn with_values(args: &[Arg], values: &Arc<Values>) -> Template {
        if let Some(size) = values.fixed.filter(|&n| n < SPLICE_FROM) {
            let v = &values.payload[..size];
            let refs: Vec<&[u8]> = args
                .iter()
                .map(|a| match a {
                    Arg::Bytes(b) => *b,
                    Arg::Value => v,
                })
                .collect();
            return Template::command(&refs);
        }
        Template::encode(args, Some(values))
    }

    /// A command whose last argument is a delivery payload of `len` bytes (at least
    /// [`crate::delivery::STAMP_LEN`]) that starts with a stamp each request gets its own of
    /// ([`Template::stamp_at`]): `PUBLISH channel <payload>`.
    pub fn stamped(args: &[&[u8]], len: usize) -> Template {
        let payload = crate::delivery::Stamp::blank(len);
        let mut all: Vec<&[u8]> = args.to_vec();
        all.push(&payload);
        let mut t = Template::command(&all);
        t.stamp = Some(t.bytes.len() - 2 - payload.len());
        t
    }

    /// [`Template::stamped`] over `channels` channels: the argument after the command is
    /// `base` and 6 digits, which each request overwrites with its sequence number modulo
    /// `channels` ([`Template::channel_at`]): `PUBLISH respbench:channel:000003 <payload>`.
    pub fn stamped_channels(command: &[u8], base: &[u8], channels: u64, len: usize) -> Template {
        let channel = [base, b"000000"].concat();
        let mut t = Template::stamped(&[command, &channel], len);
        let header = format!("*3\r\n${}\r\n", command.len()).len() + command.len() + 2;
        let channel_header = format!("${}\r\n", channel.len()).len();
        t.channel = Some((header + channel_header + base.len(), channels.max(1)));
        t
    }

    /// Where a [`Template::stamped_channels`] request's channel digits go, and how many
    /// channels there are.
    pub fn channel_at(&self) -> Option<(usize, u64)> {
        self.channel
    }

    /// The name of channel `i` of [`Template::stamped_channels`]' `base`.
    pub fn channel_name(base: &[u8], i: u64) -> Vec<u8> {
        [base, format!("{:06}", i % 1_000_000).as_bytes()].concat()
    }

    /// Where in one request's bytes its delivery stamp goes, for a [`Template::stamped`] one.
    pub fn stamp_at(&self) -> Option<usize> {
        self.stamp
    }

    /// A raw inline command, sent as is, e.g. `b"PING\r\n"` (PING_INLINE); placeholders are located the same way.
    pub fn inline(raw: &[u8]) -> Template {
        let mut placeholders = Vec::new();
        find_placeholders(raw, 0, &mut placeholders);
        let kinds = kinds_of(raw, &placeholders);
        Template::of(raw.to_vec(), placeholders, kinds)
    }

    /// This `SET key value` with `EX` or `PX` and a time drawn per request from `expiry`
    /// (`--expiry-range`); `None` for any other template (another command, `SET` with options
    /// of its own, an inline or `--dataset` one), which a time cannot be added to.
    pub fn with_expiry(&self, expiry: Expiry) -> Option<Template> {
        let is_set = self.arg(0).is_some_and(|a| a.eq_ignore_ascii_case(b"SET"));
        if !is_set || self.rows.is_some() || self.expiry.is_some() || !self.bytes.starts_with(b"*3\r\n") {
            return None;
        }
        let mut t = self.clone();
        // `*3` becomes `*5`, the same width: no offset moves.
        t.bytes[1] = b'5';
        let word = expiry.word().as_bytes();
        push_bulk_len(&mut t.bytes, word.len());
        t.bytes.extend_from_slice(word);
        t.bytes.extend_from_slice(b"\r\n");
        t.expiry = Some(expiry);
        Some(t)
    }

    /// The expiry its requests carry, if any.
    pub fn expiry(&self) -> Option<Expiry> {
        self.expiry
    }

    /// Argument `i` (from 0, the command's name) as encoded, placeholders unfilled; `None` past
    /// the last, for a value drawn per request, a `--dataset` argument or an inline command.
    pub fn arg(&self, i: usize) -> Option<&[u8]> {
        let b = &self.bytes;
        let line_end = |from: usize| b.get(from..)?.windows(2).position(|w| w == b"\r\n").map(|p| from + p);
        if self.rows.is_some() || b.first() != Some(&b'*') {
            return None;
        }
        let mut at = line_end(0)? + 2;
        let mut slots = self.slots.iter().enumerate().peekable();
        for k in 0..=i {
            // A value: its bytes are not in the template; the next argument starts here too.
            if let Some((j, _)) = slots.next_if(|&(_, &s)| s == at) {
                if k == i {
                    // An argument holding `__rand_num__`: its text.
                    return self.keyed.iter().find(|(s, _, _)| *s == j).map(|(_, _, text)| &text[..]);
                }
                continue;
            }
            if b.get(at) != Some(&b'$') {
                return None;
            }
            let end = line_end(at)?;
            let len: usize = std::str::from_utf8(&b[at + 1..end]).ok()?.parse().ok()?;
            let start = end + 2;
            let arg = b.get(start..start.checked_add(len)?)?;
            if k == i {
                return Some(arg);
            }
            at = start + len + 2;
        }
        None
    }

    /// The encoded length in bytes of one request; with value slots, of one whose values are
    /// all of the largest size.
    #[inline]
    pub fn len(&self) -> usize {
        let largest = self.values.as_ref().map_or(0, |v| {
            let n = v.payload.len();
            n + n.to_string().len() + 5
        });
        self.bytes.len()
            + (self.slots.len() - self.keyed.len()) * largest
            + self.keyed_room()
            + self.rows.as_ref().map_or(0, |r| r.largest)
            + self.expiry.map_or(0, |_| EXPIRY_ROOM)
    }

    /// The most bytes the arguments holding [`UNPADDED`] take.
    fn keyed_room(&self) -> usize {
        self.keyed.iter().map(|(_, pieces, _)| key_room(pieces)).sum()
    }

    /// The bytes of one request (of the largest size) that a connection's output copies: all
    /// but its values of at least [`SPLICE_FROM`] bytes, which it takes by
    /// reference to the one payload.
    pub fn copied_len(&self) -> usize {
        let copied = self.values.as_ref().map_or(0, |v| {
            // The largest copied value: below the splice size, or none when all are above it.
            let n = v.payload.len().min(SPLICE_FROM - 1);
            let n = if v.fixed.is_some_and(|f| f >= SPLICE_FROM) { 0 } else { n };
            n + 25
        });
        self.bytes.len()
            + (self.slots.len() - self.keyed.len()) * copied
            + self.keyed_room()
            + self.rows.as_ref().map_or(0, |r| r.copied)
            + self.expiry.map_or(0, |_| EXPIRY_ROOM)
    }

    /// Whether one request is zero bytes long (only an empty inline template is).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.slots.is_empty()
    }

    /// The template for display: [`Template::as_bytes`] with each value slot shown as
    /// `$<sizes>\r\n<value>\r\n` (e.g. `$16-1024`), so reports can show its shape.
    pub fn display(&self) -> Vec<u8> {
        let mut out = self.display_base();
        if let Some(e) = self.expiry {
            let range = if e.millis { format!("{}-{}", e.lo, e.hi) } else { e.to_string() };
            push_bulk_len(&mut out, range.len());
            out.extend_from_slice(range.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    /// [`Template::display`] without the expiry time.
    fn display_base(&self) -> Vec<u8> {
        if let Some(rows) = &self.rows {
            let mut out = Vec::with_capacity(self.bytes.len() + rows.largest);
            let mut prev = 0;
            for (at, _, arg) in rows.in_order() {
                out.extend_from_slice(&self.bytes[prev..at]);
                push_bulk_len(&mut out, arg.len());
                out.extend_from_slice(arg);
                out.extend_from_slice(b"\r\n");
                prev = at;
            }
            out.extend_from_slice(&self.bytes[prev..]);
            return out;
        }
        if self.slots.is_empty() {
            return self.bytes.clone();
        }
        let mut out = Vec::with_capacity(self.bytes.len() + self.slots.len() * 24);
        let mut prev = 0;
        let mut keyed = self.keyed.iter().peekable();
        for (i, &at) in self.slots.iter().enumerate() {
            out.extend_from_slice(&self.bytes[prev..at]);
            if let Some((_, _, arg)) = keyed.next_if(|(k, _, _)| *k == i) {
                push_bulk_len(&mut out, arg.len());
                out.extend_from_slice(arg);
                out.extend_from_slice(b"\r\n");
            } else if let Some(values) = &self.values {
                out.extend_from_slice(format!("${}\r\n<value>\r\n", values.spec).as_bytes());
            }
            prev = at;
        }
        out.extend_from_slice(&self.bytes[prev..]);
        out
    }

    /// Whether value sizes are drawn per request.
    #[inline]
    pub fn has_value_slots(&self) -> bool {
        self.slots.len() > self.keyed.len()
    }

    /// The bytes with placeholders as they are (e.g. for display and tests); value slots are
    /// left out.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether the template has at least one placeholder.
    #[inline]
    pub fn has_placeholders(&self) -> bool {
        !self.placeholders.is_empty()
    }

    /// Appends one request to `out`, each placeholder overwritten with `keys.next_key() % 10^12` as 12 digits unless keys is Literal.
    ///
    /// Every `__rand_int__` draws its own key, as redis-benchmark does; every occurrence of one of
    /// `__rand_1st__` … `__rand_9th__` gets the key its first occurrence drew (valkey-benchmark 9). Allocates nothing when
    /// `out` has room for `self.len()` more bytes.
    #[inline(always)]
    pub fn write<S: Sink>(&self, sink: &mut S, keys: &mut KeyGen) {
        self.write_base(sink, keys);
        if let Some(e) = self.expiry {
            let ttl = e.draw(&mut keys.rng);
            let out = sink.bytes();
            let digits = ttl.to_string();
            push_bulk_len(out, digits.len());
            out.extend_from_slice(digits.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }

    /// [`Template::write`] without the expiry time.
    #[inline(always)]
    fn write_base<S: Sink>(&self, sink: &mut S, keys: &mut KeyGen) {
        if let Some(rows) = &self.rows {
            self.write_with_rows(sink, keys, rows);
            return;
        }
        if !self.slots.is_empty() {
            self.write_with_slots(sink, keys);
            return;
        }
        let out = sink.bytes();
        let start = out.len();
        out.extend_from_slice(&self.bytes);
        if self.placeholders.is_empty() || !keys.substitutes() {
            return;
        }
        let fresh = &mut out[start..];
        if self.kinds.is_empty() {
            // Only `__rand_int__`: a fresh key each (the common case, kept apart for its speed).
            for &off in &self.placeholders {
                fill(fresh, off, keys.next_key() % MODULUS);
            }
            return;
        }
        let mut shared = [None; 10];
        for (k, &off) in self.placeholders.iter().enumerate() {
            fill(fresh, off, draw(self.kinds.get(k).copied().unwrap_or(0), &mut shared, keys));
        }
    }

    /// [`Template::write`] for templates with value slots: the fixed pieces between slots are
    /// copied and their placeholders filled, and each slot gets a value of a freshly drawn size.
    fn write_with_slots<S: Sink>(&self, sink: &mut S, keys: &mut KeyGen) {
        let mut keyed = self.keyed.iter().peekable();
        let substitutes = keys.substitutes();
        let mut placeholders = self.placeholders.iter().copied().enumerate().peekable();
        let mut shared = [None; 10];
        let mut prev = 0;
        for (i, &at) in self.slots.iter().chain(std::iter::once(&self.bytes.len())).enumerate() {
            let out = sink.bytes();
            let start = out.len();
            out.extend_from_slice(&self.bytes[prev..at]);
            while let Some((k, off)) = placeholders.next_if(|&(_, off)| off < at) {
                if !substitutes {
                    continue;
                }
                let key = draw(self.kinds.get(k).copied().unwrap_or(0), &mut shared, keys);
                fill(out, start + off - prev, key);
            }
            if let Some((_, pieces, _)) = keyed.next_if(|(k, _, _)| *k == i) {
                write_keyed(out, pieces, substitutes, &mut shared, keys);
            } else if let (true, Some(values)) = (i < self.slots.len(), self.values.as_ref()) {
                let len = values.next_size(keys);
                sink.value(values, len);
            }
            prev = at;
        }
    }
}

impl Template {
    /// [`Template::write`] for `--dataset` templates: the fixed pieces are copied and their
    /// placeholders filled, and each field argument gets the next row's cells
    /// ([`write_fields`]); an argument holding [`UNPADDED`] is written by [`write_keyed`], in
    /// its place among them ([`Rows::in_order`]). A template without one takes the field
    /// arguments alone, so that it pays nothing for them.
    fn write_with_rows<S: Sink>(&self, sink: &mut S, keys: &mut KeyGen, rows: &Rows) {
        let row = rows.dataset.next_row();
        let substitutes = keys.substitutes();
        let mut placeholders = self.placeholders.iter().copied().enumerate().peekable();
        let mut shared = [None; 10];
        let mut prev = 0;
        if rows.keyed.is_empty() {
            let ends = rows.args.iter().map(|(at, _, _)| *at).chain(std::iter::once(self.bytes.len()));
            for (i, at) in ends.enumerate() {
                self.fixed(sink.bytes(), (keys, substitutes), &mut shared, &mut placeholders, prev..at);
                if let Some((_, pieces, _)) = rows.args.get(i) {
                    write_fields(sink, (keys, substitutes), rows, row, pieces, &mut shared);
                }
                prev = at;
            }
            return;
        }
        for (at, arg, _) in rows.in_order() {
            self.fixed(sink.bytes(), (keys, substitutes), &mut shared, &mut placeholders, prev..at);
            match arg {
                RowArg::Key(pieces) => write_keyed(sink.bytes(), pieces, substitutes, &mut shared, keys),
                RowArg::Fields(pieces) => {
                    write_fields(sink, (keys, substitutes), rows, row, pieces, &mut shared)
                }
            }
            prev = at;
        }
        self.fixed(sink.bytes(), (keys, substitutes), &mut shared, &mut placeholders, prev..self.bytes.len());
    }

    /// Appends the template's bytes in `range`, filling the placeholders among them (the next
    /// of `placeholders`, which are indexed and ascending).
    #[inline(always)]
    fn fixed(
        &self,
        out: &mut Vec<u8>,
        (keys, substitutes): (&mut KeyGen, bool),
        shared: &mut [Option<u64>; 10],
        placeholders: &mut std::iter::Peekable<impl Iterator<Item = (usize, usize)>>,
        range: std::ops::Range<usize>,
    ) {
        let start = out.len();
        out.extend_from_slice(&self.bytes[range.clone()]);
        while let Some((k, off)) = placeholders.next_if(|&(_, off)| off < range.end) {
            if substitutes {
                let key = draw(self.kinds.get(k).copied().unwrap_or(0), shared, keys);
                fill(out, start + off - range.start, key);
            }
        }
    }
}

/// Appends a `--dataset` field argument: `row`'s cells, its length prefix computed from them,
/// then its own placeholders filled. A large cell that can hold no placeholder
/// ([`spliceable`]) goes by reference ([`Sink::cell`]): the placeholders are filled in the
/// copied bytes on either side of it, which is the same as filling the whole argument since
/// none can be in it or across its edges.
#[inline(always)]
fn write_fields<S: Sink>(
    sink: &mut S,
    (keys, substitutes): (&mut KeyGen, bool),
    rows: &Rows,
    row: usize,
    pieces: &[Piece],
    shared: &mut [Option<u64>; 10],
) {
    let dataset = &rows.dataset;
    let out = sink.bytes();
    push_bulk_len(out, field_len(dataset, row, pieces));
    // The copied bytes since the last cell taken by reference.
    let mut from = out.len();
    for piece in pieces {
        let out = sink.bytes();
        match piece {
            Piece::Text(t) => out.extend_from_slice(t),
            Piece::Field(c) if rows.splices(row, *c) => {
                if substitutes {
                    fill_found(out, from, shared, keys);
                }
                sink.cell(dataset, dataset.cell_range(row, *c));
                from = sink.bytes().len();
            }
            Piece::Field(c) => out.extend_from_slice(dataset.cell(row, *c)),
            // Checked when the template was made: it decodes.
            Piece::Base64(c) => {
                let _ = crate::dataset::base64_decode(dataset.cell(row, *c), out);
            }
        }
    }
    let out = sink.bytes();
    if substitutes {
        fill_found(out, from, shared, keys);
    }
    out.extend_from_slice(b"\r\n");
}

/// The text of a piece as the template shows it (a placeholder as its name).
fn piece_text(piece: &KeyPiece) -> &[u8] {
    match piece {
        KeyPiece::Text(t) => t,
        KeyPiece::Key(None) => UNPADDED,
        KeyPiece::Key(Some(k)) => SHARED.get(usize::from(*k).wrapping_sub(1)).map_or(PLACEHOLDER, |p| &p[..]),
    }
}

/// The most bytes an argument of these pieces takes as a bulk string: a header and 20 digits
/// a key.
fn key_room(pieces: &[KeyPiece]) -> usize {
    25 + pieces.iter().map(|p| if let KeyPiece::Text(t) = p { t.len() } else { 20 }).sum::<usize>()
}

/// Appends an argument holding [`UNPADDED`] as a bulk string: its pieces, each unpadded key
/// in its own digits and each other placeholder in 12, then the header computed from their
/// length moved in front of them (no allocation beyond `out`'s growth). Without substitution
/// (no -r) the placeholders go as their text.
fn write_keyed(
    out: &mut Vec<u8>,
    pieces: &[KeyPiece],
    on: bool,
    shared: &mut [Option<u64>; 10],
    keys: &mut KeyGen,
) {
    let start = out.len();
    for piece in pieces {
        match piece {
            KeyPiece::Key(None) if on => {
                let mut digits = [0u8; 20];
                out.extend_from_slice(decimal(keys.next_key(), &mut digits));
            }
            KeyPiece::Key(Some(kind)) if on => {
                let at = out.len();
                out.extend_from_slice(PLACEHOLDER);
                fill(out, at, draw(*kind, shared, keys));
            }
            other => out.extend_from_slice(piece_text(other)),
        }
    }
    let len = out.len() - start;
    let mut digits = [0u8; 20];
    let digits = decimal(len as u64, &mut digits);
    let h = digits.len() + 3;
    let mut head = [0u8; 23];
    head[0] = b'$';
    head[1..h - 2].copy_from_slice(digits);
    head[h - 2..h].copy_from_slice(b"\r\n");
    out.extend_from_slice(&head[..h]);
    out.copy_within(start..start + len, start + h);
    out[start..start + h].copy_from_slice(&head[..h]);
    out.extend_from_slice(b"\r\n");
}

/// Fills the placeholders found in `out[from..]`, left to right, not overlapping (a row's
/// bytes, which the template could not locate in advance).
fn fill_found(out: &mut [u8], from: usize, shared: &mut [Option<u64>; 10], keys: &mut KeyGen) {
    let mut j = from;
    while j + WIDTH <= out.len() {
        match placeholder_kind(&out[j..]) {
            Some(kind) => {
                let key = draw(kind, shared, keys);
                fill(out, j, key);
                j += WIDTH;
            }
            None => j += 1,
        }
    }
}

/// The length of a field argument made of `pieces` with the cells of `row`.
fn field_len(dataset: &Dataset, row: usize, pieces: &[Piece]) -> usize {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Text(t) => t.len(),
            Piece::Field(c) => dataset.cell(row, *c).len(),
            Piece::Base64(c) => crate::dataset::base64_len(dataset.cell(row, *c)),
        })
        .sum()
}

/// redis-benchmark's `-d` payload: LCG from 1234, byte = '0' + ((state >> 16) & 63); byte-identical to redis-benchmark's.
///
/// redis-benchmark's `genBenchmarkRandomData` keeps the state in a `uint32_t`, hence the
/// wrapping u32 arithmetic (bits 16..21 depend only on the low 22 bits, so a 64-bit state
/// would give the same bytes, but u32 says what the C says). Its state is `static` but it
/// is called once per run, so every run starts from 1234.
pub fn payload(size: usize) -> Vec<u8> {
    let mut state: u32 = 1234;
    let mut out = Vec::with_capacity(size);
    for _ in 0..size {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        out.push(b'0' + ((state >> 16) & 63) as u8);
    }
    out
}

/// A reference RESP encoding built independently of `Template::command`, for checking it.
#[cfg(any(test, feature = "testing"))]
fn reference_encoding(args: &[&[u8]]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        v.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        v.extend_from_slice(arg);
        v.extend_from_slice(b"\r\n");
    }
    v
}

/// Fuzz helper: writes `count` requests from `Template::command(args)` with keys from `seed` over Random `n`, checking each.
///
/// Checks that the template bytes are the RESP encoding of `args`; that its placeholder
/// fields are exactly the non-overlapping `__rand_int__` and `__rand_1st__` … `__rand_9th__`
/// occurrences inside the arguments; and that every written request (appended after existing
/// bytes, which stay untouched) equals the template except in those fields, each being 12 ASCII
/// digits of a value < n (0 when n == 0), every occurrence of one shared kind with the same
/// value. Returns `Err(description)` on the first violation; never panics.
#[cfg(any(test, feature = "testing"))]
pub fn check_substitution(args: &[&[u8]], seed: u64, n: u64, count: usize) -> Result<(), String> {
    let template = Template::command(args);
    let expected = reference_encoding(args);
    if template.as_bytes() != expected.as_slice() {
        return Err(format!(
            "encoding differs: got {:?}, want {:?}",
            String::from_utf8_lossy(template.as_bytes()),
            String::from_utf8_lossy(&expected)
        ));
    }

    // Expected placeholder fields, found with a different search (windows) per argument, and
    // the shared kind of each (`None` for `__rand_int__`).
    let mut fields = Vec::new();
    let mut kinds: Vec<Option<usize>> = Vec::new();
    let mut pos = format!("*{}\r\n", args.len()).len();
    for arg in args {
        pos += format!("${}\r\n", arg.len()).len();
        let mut i = 0;
        // Any of the placeholders: `__rand_int__`, or valkey-benchmark 9's shared ones.
        let any = |w: &[u8]| w == PLACEHOLDER || SHARED.iter().any(|p| w == &p[..]);
        while let Some(hit) = arg.get(i..).and_then(|rest| rest.windows(WIDTH).position(any)) {
            fields.push(pos + i + hit);
            kinds.push(SHARED.iter().position(|p| arg[i + hit..i + hit + WIDTH] == p[..]));
            i += hit + WIDTH;
        }
        pos += arg.len() + 2;
    }
    if template.placeholders != fields {
        return Err(format!("placeholder offsets {:?}, want {:?}", template.placeholders, fields));
    }
    if template.has_placeholders() == fields.is_empty() {
        return Err("has_placeholders disagrees with the offsets".to_string());
    }

    let mut keys = KeyGen::new(KeySpace::Random { n }, Rng::new(seed));
    let prefix = b"earlier bytes";
    let mut out = Vec::new();
    for req in 0..count {
        out.clear();
        out.extend_from_slice(prefix);
        template.write(&mut out, &mut keys);
        if !out.starts_with(prefix) {
            return Err(format!("request {req}: bytes before the request changed"));
        }
        let got = &out[prefix.len()..];
        if got.len() != expected.len() {
            return Err(format!("request {req}: length {}, want {}", got.len(), expected.len()));
        }
        let mut next_field = fields.iter().zip(&kinds).peekable();
        // The value each shared kind took in this request: every occurrence must repeat it.
        let mut shared: [Option<u64>; 9] = [None; 9];
        let mut i = 0;
        while i < got.len() {
            if next_field.peek().is_some_and(|(f, _)| **f == i) {
                let kind = next_field.next().and_then(|(_, k)| *k);
                let digits = &got[i..i + WIDTH];
                if !digits.iter().all(u8::is_ascii_digit) {
                    return Err(format!(
                        "request {req}: field at {i} is {:?}, not 12 digits",
                        String::from_utf8_lossy(digits)
                    ));
                }
                let value = digits.iter().fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0'));
                let ok = if n == 0 { value == 0 } else { value < n };
                if !ok {
                    return Err(format!("request {req}: field at {i} has value {value}, keyspace {n}"));
                }
                if let Some(k) = kind {
                    match shared[k] {
                        Some(first) if first != value => {
                            return Err(format!(
                                "request {req}: {} at {i} is {value}, its first occurrence {first}",
                                String::from_utf8_lossy(SHARED[k])
                            ));
                        }
                        _ => shared[k] = Some(value),
                    }
                }
                i += WIDTH;
            } else {
                if got[i] != expected[i] {
                    return Err(format!(
                        "request {req}: byte {i} is {:#04x}, want {:#04x}",
                        got[i], expected[i]
                    ));
                }
                i += 1;
            }
        }
    }
    Ok(())
}

/// Fuzz helper: writes `count` requests from `Template::with_values(args, spec)` with keys from
/// `seed` over Random `n`, and checks that each parses as one RESP array of the arguments.
///
/// Each request must parse (with [`crate::resp::Value::parse`]) as exactly the bytes written;
/// a bytes argument must come back equal except for 12 digits in place of each placeholder; a
/// value must be a prefix of the largest payload with a size `spec` allows. Returns
/// `Err(description)` on the first violation; never panics.
#[cfg(any(test, feature = "testing"))]
pub fn check_values(args: &[Arg], spec: &ValueSize, seed: u64, n: u64, count: usize) -> Result<(), String> {
    use crate::resp::Value;
    let allowed = |len: usize| match spec {
        ValueSize::Fixed(s) => len == *s,
        ValueSize::Range { lo, hi } | ValueSize::ByKey { lo, hi } => (*lo..=*hi).contains(&len),
        ValueSize::Weighted(list) => list.iter().any(|&(s, w)| s == len && w > 0),
    };
    let values = Values::new(spec);
    let template = Template::with_values(args, &values);
    let mut keys = KeyGen::new(KeySpace::Random { n }, Rng::new(seed));
    let mut out = b"earlier bytes".to_vec();
    for req in 0..count {
        let start = out.len();
        template.write(&mut out, &mut keys);
        if !out.starts_with(b"earlier bytes") {
            return Err(format!("request {req}: bytes before the request changed"));
        }
        let written = &out[start..];
        let (value, used) = match Value::parse(written) {
            Ok(Some(v)) => v,
            Ok(None) => return Err(format!("request {req}: incomplete RESP")),
            Err(e) => return Err(format!("request {req}: {e:?}")),
        };
        if used != written.len() {
            return Err(format!("request {req}: parsed {used} of {} bytes", written.len()));
        }
        let Value::Array(items) = value else { return Err(format!("request {req}: not an array")) };
        if items.len() != args.len() {
            return Err(format!("request {req}: {} elements, want {}", items.len(), args.len()));
        }
        for (i, (item, arg)) in items.iter().zip(args).enumerate() {
            let Value::Bulk(got) = item else { return Err(format!("request {req}: element {i} not bulk")) };
            match arg {
                Arg::Value => {
                    if !allowed(got.len()) || !values.largest().starts_with(got) {
                        return Err(format!("request {req}: value {i} of {} bytes", got.len()));
                    }
                }
                Arg::Bytes(want) => {
                    let mut fields = Vec::new();
                    find_placeholders(want, 0, &mut fields);
                    let ok = got.len() == want.len()
                        && (0..want.len()).all(|j| {
                            match fields.iter().find(|&&f| (f..f + WIDTH).contains(&j)) {
                                Some(_) => got[j].is_ascii_digit(),
                                None => got[j] == want[j],
                            }
                        });
                    if !ok {
                        return Err(format!(
                            "request {req}: argument {i} is {:?}",
                            String::from_utf8_lossy(got)
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;

    fn keys(space: KeySpace) -> KeyGen {
        KeyGen::new(space, Rng::for_stream(1, 0))
    }

    fn one(t: &Template, k: &mut KeyGen) -> Vec<u8> {
        let mut out = Vec::new();
        t.write(&mut out, k);
        out
    }

    #[test]
    fn encodes_set_get_ping() {
        let set = Template::command(&[b"SET", b"key:__rand_int__", b"VXK"]);
        assert_eq!(set.as_bytes(), b"*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nVXK\r\n");
        assert_eq!(set.len(), 45);
        assert!(!set.is_empty());
        let get = Template::command(&[b"GET", b"key:__rand_int__"]);
        assert_eq!(get.as_bytes(), b"*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n");
        let ping = Template::command(&[b"PING"]);
        assert_eq!(ping.as_bytes(), b"*1\r\n$4\r\nPING\r\n");
        assert!(!ping.has_placeholders());
        let empty_arg = Template::command(&[b"SET", b"k", b""]);
        assert_eq!(empty_arg.as_bytes(), b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
        assert_eq!(Template::command(&[]).as_bytes(), b"*0\r\n");
    }

    #[test]
    fn encodes_mset_ten_keys() {
        let d = payload(3);
        let mut args: Vec<&[u8]> = vec![b"MSET"];
        for _ in 0..10 {
            args.push(b"key:__rand_int__");
            args.push(&d);
        }
        let t = Template::command(&args);
        let mut want = b"*21\r\n$4\r\nMSET\r\n".to_vec();
        for _ in 0..10 {
            want.extend_from_slice(b"$16\r\nkey:__rand_int__\r\n$3\r\nVXK\r\n");
        }
        assert_eq!(t.as_bytes(), want.as_slice());
        // "*21\r\n$4\r\nMSET\r\n" is 15 bytes, "$16\r\nkey:" 9 more; each key/value pair is
        // 23 + 9 = 32 bytes.
        let offsets: Vec<usize> = (0..10).map(|i| 15 + 9 + i * 32).collect();
        assert_eq!(t.placeholders, offsets);
        for &o in &offsets {
            assert_eq!(&want[o..o + 12], PLACEHOLDER);
        }
    }

    #[test]
    fn inline_ping() {
        let t = Template::inline(b"PING\r\n");
        assert_eq!(t.as_bytes(), b"PING\r\n");
        assert_eq!(t.len(), 6);
        assert!(!t.has_placeholders());
        let mut k = keys(KeySpace::Random { n: 100 });
        assert_eq!(one(&t, &mut k), b"PING\r\n");
        assert!(Template::inline(b"").is_empty());
    }

    #[test]
    fn inline_placeholders() {
        let t = Template::inline(b"GET __rand_int__\r\n");
        assert_eq!(t.placeholders, vec![4]);
        let mut k = keys(KeySpace::sequential(1000));
        assert_eq!(one(&t, &mut k), b"GET 000000000000\r\n");
        assert_eq!(one(&t, &mut k), b"GET 000000000001\r\n");
    }

    #[test]
    fn placeholders_in_every_argument_and_several_per_argument() {
        let t = Template::command(&[
            b"__rand_int__",
            b"k:__rand_int__:__rand_int__",
            b"__rand_int____rand_int__",
            b"___rand_int__",
            b"__rand_int_",
            b"x\0__rand_int__",
        ]);
        let b = t.as_bytes();
        let found: Vec<&[u8]> = t.placeholders.iter().map(|&o| &b[o..o + 12]).collect();
        assert!(found.iter().all(|f| *f == PLACEHOLDER));
        // 1 + 2 + 2 + 1 (after the extra underscore) + 0 (truncated) + 1 (after a NUL).
        assert_eq!(t.placeholders.len(), 7);
        let mut k = keys(KeySpace::sequential(100));
        assert_eq!(
            one(&t, &mut k),
            b"*6\r\n$12\r\n000000000000\r\n$27\r\nk:000000000001:000000000002\r\n\
              $24\r\n000000000003000000000004\r\n$13\r\n_000000000005\r\n\
              $11\r\n__rand_int_\r\n$14\r\nx\x00000000000006\r\n"
        );
    }

    #[test]
    fn shared_placeholders_repeat_their_first_draw_in_a_request() {
        // valkey-benchmark 9: `__rand_1st__` twice is one value; each `__rand_int__` its own.
        let t = Template::command(&[
            b"SET",
            b"k__rand_1st__:__rand_int__",
            b"__rand_1st____rand_2nd____rand_int__",
        ]);
        assert_eq!(t.placeholders.len(), 5);
        let mut k = keys(KeySpace::sequential(100));
        assert_eq!(
            one(&t, &mut k),
            b"*3\r\n$3\r\nSET\r\n$26\r\nk000000000000:000000000001\r\n\
              $36\r\n000000000000000000000002000000000003\r\n"
        );
        // The next request draws afresh.
        assert!(one(&t, &mut k).starts_with(b"*3\r\n$3\r\nSET\r\n$26\r\nk000000000004:000000000005"));
        // Unknown ordinals are text.
        assert!(Template::command(&[b"__rand_0th__", b"__rand_10th__"]).placeholders.is_empty());
    }

    #[test]
    fn dataset_rows_fill_field_arguments_in_turn() {
        let d = Arc::new(Dataset::parse("d.csv", b"id,name\n1,ab\n22,__rand_1st__\n", b',', 0).unwrap());
        let t = Template::with_dataset(&[b"SET", b"key:__field:id__:__rand_1st__", b"__field:name__"], &d)
            .unwrap();
        assert_eq!(
            t.display(),
            b"*3\r\n$3\r\nSET\r\n$29\r\nkey:__field:id__:__rand_1st__\r\n$14\r\n__field:name__\r\n"
        );
        let mut k = keys(KeySpace::sequential(100));
        let first = one(&t, &mut k);
        assert_eq!(first, b"*3\r\n$3\r\nSET\r\n$18\r\nkey:1:000000000000\r\n$2\r\nab\r\n");
        // A row's bytes get placeholders too; `__rand_1st__` is one value across the request.
        assert_eq!(
            one(&t, &mut k),
            b"*3\r\n$3\r\nSET\r\n$19\r\nkey:22:000000000001\r\n$12\r\n000000000001\r\n"
        );
        assert!(t.len() >= first.len());
        // Round the rows again.
        assert!(one(&t, &mut k).starts_with(b"*3\r\n$3\r\nSET\r\n$18\r\nkey:1:"));
        // Without field placeholders it is `Template::command`.
        assert_eq!(Template::with_dataset(&[b"GET", b"k"], &d).unwrap(), Template::command(&[b"GET", b"k"]));
        assert!(Template::with_dataset(&[b"GET", b"__field:x__"], &d).unwrap_err().contains("id, name"));
    }

    #[test]
    fn dataset_templates_write_unpadded_keys_with_their_length() {
        let d = Arc::new(Dataset::parse("d.csv", b"data\nab\nxyz\n", b',', 0).unwrap());
        // The key before the field, and after it with a shared placeholder: both at the same
        // offset of the template's bytes, written in their order.
        let args: [&[u8]; 4] = [b"MSET", b"k-__rand_num__", b"__field:data__", b"__rand_1st__/__rand_num__"];
        let t = Template::with_dataset(&args, &d).unwrap();
        assert_eq!(t.as_bytes(), b"*4\r\n$4\r\nMSET\r\n");
        assert_eq!(
            t.display(),
            b"*4\r\n$4\r\nMSET\r\n$14\r\nk-__rand_num__\r\n$14\r\n__field:data__\r\n\
              $25\r\n__rand_1st__/__rand_num__\r\n"
        );
        let mut k = keys(KeySpace::sequential_range(7, 1000));
        let sent: Vec<Vec<u8>> = (0..3).map(|_| one(&t, &mut k)).collect();
        assert_eq!(sent[0], b"*4\r\n$4\r\nMSET\r\n$3\r\nk-7\r\n$2\r\nab\r\n$14\r\n000000000008/9\r\n");
        assert_eq!(sent[1], b"*4\r\n$4\r\nMSET\r\n$4\r\nk-10\r\n$3\r\nxyz\r\n$15\r\n000000000011/12\r\n");
        assert_eq!(sent[2], b"*4\r\n$4\r\nMSET\r\n$4\r\nk-13\r\n$2\r\nab\r\n$15\r\n000000000014/15\r\n");
        // The length prefix of a 12-digit number and of a 20-digit one; the sizes bound both.
        for (first, want) in [(999_999_999_999u64, &b"$14\r\nk-999999999999\r\n"[..]), (u64::MAX, b"$22\r\n")]
        {
            let out = one(&t, &mut keys(KeySpace::sequential_range(first, 0)));
            let key = &out[b"*4\r\n$4\r\nMSET\r\n".len()..];
            assert!(key.starts_with(want), "{}", String::from_utf8_lossy(&out));
            assert!(out.len() <= t.len() && out.len() <= t.copied_len(), "{} {}", out.len(), t.len());
        }
        // Without -r the text as it is; with no field, `Template::command`'s keyed template.
        let out = one(&t, &mut keys(KeySpace::Literal));
        assert!(out.starts_with(b"*4\r\n$4\r\nMSET\r\n$14\r\nk-__rand_num__\r\n"));
        let get = Template::with_dataset(&[b"GET", b"k-__rand_num__"], &d).unwrap();
        assert_eq!(get, Template::command(&[b"GET", b"k-__rand_num__"]));
        assert_eq!(
            one(&get, &mut keys(KeySpace::sequential_range(5, 0))),
            b"*2\r\n$3\r\nGET\r\n$3\r\nk-5\r\n"
        );
        // A field and the unpadded key in one argument: refused when the template is made.
        let both = Template::with_dataset(&[b"SET", b"__field:data__:__rand_num__", b"v"], &d).unwrap_err();
        assert!(both.contains("__field:data__:__rand_num__") && both.contains("__rand_int__"), "{both}");
        // Around a cell taken by reference: the output sends the same bytes, copying no more
        // than `copied_len` of them.
        let big = vec![b'x'; crate::wire::SPLICE_FROM];
        let d = Arc::new(Dataset::parse("d.csv", &[&b"data\n"[..], &big, b"\n"].concat(), b',', 0).unwrap());
        let t = Template::with_dataset(&[b"SET", b"__rand_num__", b"__field:data__", b"k-__rand_num__"], &d)
            .unwrap();
        let space = KeySpace::sequential_range(u64::MAX - 1, 0);
        let want = one(&t, &mut keys(space.fresh()));
        assert!(want.ends_with(b"$22\r\nk-18446744073709551614\r\n") && want.len() <= t.len());
        let mut wire = crate::wire::Wire::default();
        t.write(&mut wire, &mut keys(space));
        assert!(
            wire.owned() <= t.copied_len() && t.copied_len() < 200,
            "{} {}",
            wire.owned(),
            t.copied_len()
        );
        let mut sent = Vec::new();
        while let Some(chunk) = wire.chunk() {
            sent.extend_from_slice(chunk);
            let len = chunk.len();
            assert_eq!(wire.advance(len), len);
        }
        assert!(sent == want, "the output sends the written bytes");
    }

    #[test]
    fn a_large_dataset_cell_is_spliced_unless_a_placeholder_may_touch_it() {
        use crate::wire::{Wire, SPLICE_FROM};
        let n = SPLICE_FROM + 7;
        let (a, half) = (vec![b'x'; n], vec![b'y'; n / 2]);
        // b holds a placeholder; c ends with one's start, which its argument's text completes.
        let b = [&half[..], b"__rand_int__", &half[..]].concat();
        let c = [&vec![b'z'; n][..], b"__ra"].concat();
        let csv = [&b"a,b,c\n"[..], &a, b",", &b, b",", &c, b"\n"].concat();
        let d = Arc::new(Dataset::parse("d.csv", &csv, b',', 0).unwrap());
        let args: [&[u8]; 6] = [
            b"SET",
            b"k:__rand_int__",
            b"__field:a__",
            b"__field:b__",
            b"__field:c__nd_int__",
            b"p__field:a__q",
        ];
        let t = Template::with_dataset(&args, &d).unwrap();
        let bulk = |body: &[u8]| [format!("${}\r\n", body.len()).as_bytes(), body, b"\r\n"].concat();
        let filled_b = [&half[..], b"000000000001", &half[..]].concat();
        let filled_c = [&vec![b'z'; n][..], b"000000000002"].concat();
        let want = [
            &b"*6\r\n"[..],
            &bulk(b"SET"),
            &bulk(b"k:000000000000"),
            &bulk(&a),
            &bulk(&filled_b),
            &bulk(&filled_c),
            &bulk(&[&b"p"[..], &a, b"q"].concat()),
        ]
        .concat();
        // (Compared without printing: the arguments are 64 KiB each.)
        let copied = one(&t, &mut keys(KeySpace::sequential(1000)));
        assert!(
            copied == want,
            "the copied request differs at byte {:?}",
            copied.iter().zip(&want).position(|(x, y)| x != y)
        );
        // Out of a connection's output: the same bytes, a's two cells not copied; b and c are.
        let mut wire = Wire::default();
        t.write(&mut wire, &mut keys(KeySpace::sequential(1000)));
        let owned = wire.owned();
        assert!(owned < want.len() - 2 * n + 200 && owned > 2 * n, "{owned} of {}", want.len());
        let mut sent = Vec::new();
        while let Some(chunk) = wire.chunk() {
            sent.extend_from_slice(chunk);
            let len = chunk.len();
            assert_eq!(wire.advance(len), len);
        }
        assert!(sent == want, "the output sends the copied bytes");
        assert!(t.len() >= want.len());
        assert_eq!(t.copied_len(), t.len() - 2 * n);
        // Without -r the placeholders stay as they are, in the copied cells too.
        let literal = one(&t, &mut keys(KeySpace::Literal));
        assert!(literal.windows(b.len()).any(|w| w == b), "b as it is");
    }

    #[test]
    fn spliceable_cells_are_large_and_touch_no_placeholder() {
        let n = crate::wire::SPLICE_FROM;
        let plain = vec![b'x'; n];
        assert!(spliceable(&plain));
        assert!(!spliceable(&plain[1..]), "smaller than a spliced value");
        let with = |head: &[u8], tail: &[u8]| [head, &plain[..], tail].concat();
        for edge in [&b"_"[..], b"__", b"__rand_", b"__rand_9t", b"__rand_int_"] {
            assert!(!spliceable(&with(b"", edge)), "ends with {:?}", String::from_utf8_lossy(edge));
        }
        for edge in [&b"_"[..], b"t__", b"nd_int__", b"_rand_2nd__"] {
            assert!(!spliceable(&with(edge, b"")), "starts with {:?}", String::from_utf8_lossy(edge));
        }
        assert!(!spliceable(&with(b"", b"__rand_5th__x")), "holds a placeholder");
        // Wherever it starts in a word of eight, and at the very end.
        for shift in 0..9 {
            let mut cell = plain.clone();
            cell[100 + shift..112 + shift].copy_from_slice(b"__rand_int__");
            assert!(!spliceable(&cell), "a placeholder at {}", 100 + shift);
            assert!(holds_placeholder(&[&vec![b'x'; shift][..], b"__rand_1st__"].concat()), "{shift}");
        }
        assert!(!holds_placeholder(b"__rand_int_"), "not a whole one");
        // Underscores that can start or end none: `__rand_int` then not `_`, `_` then not `_`.
        assert!(spliceable(&with(b"x_x", b"__rand_intx")));
        assert!(spliceable(&with(b"x_", b"")));
    }

    #[test]
    fn overlapping_occurrences_are_taken_left_to_right() {
        // "__rand_int__rand_int__": the second candidate overlaps the first; redis-benchmark
        // skips 12 bytes after a hit, so only one is substituted.
        let t = Template::inline(b"__rand_int__rand_int__");
        assert_eq!(t.placeholders, vec![0]);
    }

    #[test]
    fn literal_leaves_bytes_untouched() {
        let t = Template::command(&[b"SET", b"key:__rand_int__", b"__rand_int__"]);
        let mut k = keys(KeySpace::Literal);
        assert!(!k.substitutes());
        for _ in 0..3 {
            assert_eq!(one(&t, &mut k), t.as_bytes());
        }
    }

    #[test]
    fn keyspace_zero_gives_zeros() {
        let t = Template::command(&[b"GET", b"key:__rand_int__"]);
        for space in [KeySpace::Random { n: 0 }, KeySpace::sequential(0)] {
            let mut k = keys(space);
            assert!(k.substitutes());
            for _ in 0..5 {
                assert_eq!(one(&t, &mut k), b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000000\r\n");
            }
        }
    }

    #[test]
    fn random_full_width() {
        // n = 10^12 reaches all 12 digits (redis-benchmark 7.0.15 cannot: -r is an int).
        let t = Template::inline(b"__rand_int__");
        let mut k = keys(KeySpace::Random { n: 1_000_000_000_000 });
        let mut max = 0;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let out = one(&t, &mut k);
            assert!(out.iter().all(u8::is_ascii_digit));
            let v: u64 = std::str::from_utf8(&out).unwrap().parse().unwrap();
            max = max.max(v);
            seen.insert(v);
        }
        assert!(max > 100_000_000_000, "max {max}: the leading digit was never used");
        assert!(seen.len() > 990);
    }

    #[test]
    fn random_values_stay_below_n_and_vary_per_occurrence() {
        let t = Template::command(&[b"MSET", b"a:__rand_int__", b"b:__rand_int__"]);
        let mut k = keys(KeySpace::Random { n: 100 });
        let mut differ = false;
        for _ in 0..100 {
            let out = one(&t, &mut k);
            let (a, b) = (&out[t.placeholders[0]..][..12], &out[t.placeholders[1]..][..12]);
            assert_eq!(&a[..10], b"0000000000");
            assert_eq!(&b[..10], b"0000000000");
            differ |= a != b;
        }
        assert!(differ, "every occurrence must draw its own key");
    }

    #[test]
    fn digits_match_decimal_formatting() {
        let check = |v: u64| {
            let mut d = [0u8; 12];
            write_digits(&mut d, v);
            assert_eq!(std::str::from_utf8(&d).unwrap(), format!("{v:012}"), "{v}");
        };
        // Every value of the low lanes' ranges, every power of ten and its neighbours, and a
        // spread of the rest (a stride prime to every power of ten).
        (0..200_000).for_each(check);
        for p in 0..12 {
            let t = 10u64.pow(p);
            [t - 1, t, t + 1, 9 * t, 99 * t / 10].into_iter().filter(|&v| v < MODULUS).for_each(check);
        }
        (0..MODULUS).step_by(999_983_777).for_each(check);
        (0..100_000_000).step_by(9_973).for_each(check);
    }

    #[test]
    fn keys_above_twelve_digits_are_reduced() {
        // A keyspace beyond 10^12 still gives 12 digits: the key modulo 10^12.
        let mut d = [0u8; 12];
        write_digits(&mut d, 999_999_999_999);
        assert_eq!(&d, b"999999999999");
        write_digits(&mut d, 1_234_567_890);
        assert_eq!(&d, b"001234567890");
        assert!(check_substitution(&[b"__rand_int__"], 3, u64::MAX, 200).is_ok());
    }

    #[test]
    fn sequential_counts_and_wraps() {
        let t = Template::command(&[b"GET", b"__rand_int__"]);
        let mut k = keys(KeySpace::sequential(3));
        let got: Vec<Vec<u8>> = (0..7).map(|_| one(&t, &mut k)).collect();
        for (i, out) in got.iter().enumerate() {
            let want = format!("*2\r\n$3\r\nGET\r\n$12\r\n{:012}\r\n", i % 3);
            assert_eq!(out, want.as_bytes());
        }
        let mut k = keys(KeySpace::sequential(1));
        assert_eq!((0..3).map(|_| k.next_key()).collect::<Vec<_>>(), [0, 0, 0]);
        let mut k = keys(KeySpace::sequential(u64::MAX));
        assert_eq!((0..3).map(|_| k.next_key()).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn write_appends_without_reallocating() {
        let t = Template::command(&[b"SET", b"key:__rand_int__", &payload(100)]);
        let mut k = keys(KeySpace::Random { n: 1000 });
        let mut out = Vec::with_capacity(t.len() * 16);
        let (cap, ptr) = (out.capacity(), out.as_ptr());
        for i in 1..=16 {
            t.write(&mut out, &mut k);
            assert_eq!(out.len(), i * t.len());
        }
        assert_eq!(out.capacity(), cap);
        assert_eq!(out.as_ptr(), ptr);
        // Earlier requests are not touched by later writes.
        for chunk in out.chunks(t.len()) {
            assert_eq!(chunk[..20], t.as_bytes()[..20]);
        }
    }

    /// FNV-1a, to pin long observed payloads without embedding them whole.
    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes
            .iter()
            .fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
    }

    #[test]
    fn payload_matches_redis_benchmark() {
        // Observed with redis-benchmark 7.0.15 against redis-server 7.0.15:
        // `redis-benchmark -p P -t set -n 1 -c 1 -d SIZE`, then `redis-cli GET key:__rand_int__`.
        // (size, full value or first 64 bytes, last 64 bytes, FNV-1a of the whole value)
        let table: &[(usize, &[u8], &[u8], u64)] = &[
            (1, b"V", b"V", 0xaf64_0b4c_8602_3c69),
            (3, b"VXK", b"VXK", 0x7c32_0119_ea1c_b298),
            (
                50,
                b"VXKeHogKgJ=[5V9_X^b?48OKF2jGA<f:iR@50o7dS3JV4Q6L68",
                b"VXKeHogKgJ=[5V9_X^b?48OKF2jGA<f:iR@50o7dS3JV4Q6L68",
                0xb5e0_2a9f_6ab5_d268,
            ),
            (
                256,
                br"VXKeHogKgJ=[5V9_X^b?48OKF2jGA<f:iR@50o7dS3JV4Q6L68lC[GTA]0DaMg?_oSmcS2^N1J?ELSX@CfKQ7cM5aea\ngY8a3LGgNVa9eRA46XS8>7ABe1>Jl9O\Rm\7IS:g\U5b]=`ePo^LXhl4e:4P[DQNA3cgn<RH4UcdI6<V9S78NViC;^omK:<<Ldel:=iDmLB8B6m?K=8269Pj>VGVSSh^J6;;DOVS`3jV`6IY\e85iH9_G[UELFknTb;",
                br"<V9S78NViC;^omK:<<Ldel:=iDmLB8B6m?K=8269Pj>VGVSSh^J6;;DOVS`3jV`6IY\e85iH9_G[UELFknTb;",
                0xec21_366c_c8ea_6d64,
            ),
            (
                4096,
                b"VXKeHogKgJ=[5V9_X^b?48OKF2jGA<f:iR@50o7dS3JV4Q6L68lC[GTA]0DaMg?_",
                b"dcP71`Z^J]X=7;[2a8L80^h3f0<<8O`l0o3jD>Z53N70eFk1@MLHJ2eOA[06<4TK",
                0xb089_56d5_d92a_4447,
            ),
        ];
        for &(size, head, tail, hash) in table {
            let p = payload(size);
            assert_eq!(p.len(), size);
            assert!(p.starts_with(head), "size {size}: head");
            assert!(p.ends_with(tail), "size {size}: tail");
            assert_eq!(fnv1a(&p), hash, "size {size}: hash");
            if size <= 256 {
                assert_eq!(p.len(), head.len(), "size {size}: full value in table");
            }
        }
        assert!(payload(0).is_empty());
        // Every byte is in '0'..='o', so a payload can never contain `__rand_int__` ('r', 't').
        assert!(payload(100_000).iter().all(|b| (b'0'..=b'o').contains(b)));
    }

    #[test]
    fn check_substitution_accepts_typical_commands() {
        let d = payload(3);
        check_substitution(&[b"SET", b"key:__rand_int__", &d], 1, 100, 100).unwrap();
        check_substitution(&[b"PING"], 1, 100, 10).unwrap();
        check_substitution(&[], 1, 0, 10).unwrap();
        check_substitution(&[b"k:__rand_int__:__rand_int__"], 9, 0, 10).unwrap();
    }

    /// An argument made of random bytes, placeholders and near-miss fragments.
    fn arg_strategy() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..8),
            Just(PLACEHOLDER.to_vec()),
            Just(b"__rand_".to_vec()),
            Just(b"_int__".to_vec()),
            Just(b"_".to_vec()),
        ];
        proptest::collection::vec(piece, 0..6).prop_map(|ps| ps.concat())
    }

    #[test]
    fn unpadded_keys_are_written_in_their_own_digits_with_their_length() {
        let t = Template::command(&[b"SET", b"m-__rand_num__:__rand_int__", b"v"]);
        assert!(!t.has_value_slots() && !t.has_placeholders());
        assert_eq!(t.arg(1), Some(&b"m-__rand_num__:__rand_int__"[..]));
        assert_eq!(t.arg(2), Some(&b"v"[..]));
        assert_eq!(t.display(), b"*3\r\n$3\r\nSET\r\n$27\r\nm-__rand_num__:__rand_int__\r\n$1\r\nv\r\n");
        let mut k = keys(KeySpace::sequential_range(8, 4));
        let sent: Vec<Vec<u8>> = (0..5).map(|_| one(&t, &mut k)).collect();
        // Keys 8, 9, 10, 11, 8: the unpadded one first, then the padded one, in turn.
        assert_eq!(sent[0], b"*3\r\n$3\r\nSET\r\n$16\r\nm-8:000000000009\r\n$1\r\nv\r\n");
        assert_eq!(sent[1], b"*3\r\n$3\r\nSET\r\n$17\r\nm-10:000000000011\r\n$1\r\nv\r\n");
        assert!(sent.iter().all(|s| s.len() <= t.len()));
        // With values drawn per request: both slots, in their order.
        let values = Values::new(&ValueSize::Range { lo: 1, hi: 300 });
        let t =
            Template::with_values(&[Arg::Bytes(b"SET"), Arg::Bytes(b"__rand_num__"), Arg::Value], &values);
        assert!(t.has_value_slots());
        let out = one(&t, &mut keys(KeySpace::sequential_range(42, 0)));
        assert!(out.starts_with(b"*3\r\n$3\r\nSET\r\n$2\r\n42\r\n$"), "{}", String::from_utf8_lossy(&out));
        // Alone, without values; and with no -r the text as it is.
        let get = Template::command(&[b"GET", b"__rand_num__"]);
        let mut k = keys(KeySpace::sequential_range(1234, 0));
        assert_eq!(one(&get, &mut k), b"*2\r\n$3\r\nGET\r\n$4\r\n1234\r\n");
        assert_eq!(one(&get, &mut keys(KeySpace::Literal)), b"*2\r\n$3\r\nGET\r\n$12\r\n__rand_num__\r\n");
        let mut k = keys(KeySpace::Random { n: u64::MAX });
        let out = one(&get, &mut k);
        assert!(out.len() <= get.len(), "{} > {}", out.len(), get.len());
    }

    #[test]
    fn value_slots_draw_sizes_per_request() {
        let values = Values::new(&ValueSize::Range { lo: 1, hi: 300 });
        let t = Template::with_values(&[Arg::Bytes(b"SET"), Arg::Bytes(b"k"), Arg::Value], &values);
        assert!(t.has_value_slots());
        assert_eq!(t.as_bytes(), b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n");
        assert_eq!(t.display(), b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1-300\r\n<value>\r\n");
        let fixed = Template::command(&[b"GET", b"k"]);
        assert_eq!(fixed.display(), fixed.as_bytes());
        assert_eq!(t.len(), t.as_bytes().len() + "$300\r\n\r\n".len() + 300);
        let mut k = keys(KeySpace::Literal);
        let mut sizes = std::collections::HashSet::new();
        for _ in 0..200 {
            let out = one(&t, &mut k);
            let rest = out.strip_prefix(t.as_bytes()).unwrap();
            let (len, body) = std::str::from_utf8(&rest[1..]).unwrap().split_once("\r\n").unwrap();
            let len: usize = len.parse().unwrap();
            assert_eq!(body.len(), len + 2);
            assert_eq!(body.as_bytes()[..len], payload(len)[..]);
            sizes.insert(len);
        }
        assert!(sizes.len() > 100, "sizes vary: {}", sizes.len());
    }

    #[test]
    fn fixed_sizes_encode_like_command() {
        // -d 3, -d 5-5 and -d 7:1,9:0 all have one size: no slot, the same bytes as command().
        for (spec, size) in [
            (ValueSize::Fixed(3), 3),
            (ValueSize::Range { lo: 5, hi: 5 }, 5),
            (ValueSize::Weighted(vec![(7, 1), (9, 0)]), 7),
        ] {
            let t = Template::with_values(&[Arg::Bytes(b"SET"), Arg::Value], &Values::new(&spec));
            assert!(!t.has_value_slots());
            assert_eq!(t, Template::command(&[b"SET", &payload(size)]), "{spec}");
        }
    }

    #[test]
    fn a_large_fixed_value_is_kept_once_and_sends_the_same_bytes() {
        use crate::wire::{Wire, SPLICE_FROM};
        let size = SPLICE_FROM + 3;
        let values = Values::new(&ValueSize::Fixed(size));
        let args =
            [Arg::Bytes(b"MSET"), Arg::Bytes(b"k:__rand_int__"), Arg::Value, Arg::Bytes(b"j"), Arg::Value];
        let t = Template::with_values(&args, &values);
        assert!(t.as_bytes().len() < 100, "the template holds no copy of the value");
        let want = Template::command(&[b"MSET", b"k:__rand_int__", &payload(size), b"j", &payload(size)]);
        assert_eq!(t.len(), want.len());
        assert!(t.copied_len() < 200, "{}", t.copied_len());
        // The same bytes and the same keys as the template with the value inlined, into a
        // vector and out of a connection's output.
        let (mut a, mut b) = (keys(KeySpace::Random { n: 1000 }), keys(KeySpace::Random { n: 1000 }));
        let mut c = keys(KeySpace::Random { n: 1000 });
        for _ in 0..3 {
            let mut wire = Wire::default();
            t.write(&mut wire, &mut c);
            let mut sent = Vec::new();
            while let Some(chunk) = wire.chunk() {
                sent.extend_from_slice(chunk);
                let n = chunk.len();
                wire.advance(n);
            }
            let inlined = one(&want, &mut b);
            assert_eq!(one(&t, &mut a), inlined);
            assert!(sent == inlined, "the output sends the inlined bytes");
        }
    }

    #[test]
    fn value_slots_write_without_reallocating() {
        let values = Values::new(&ValueSize::Weighted(vec![(16, 3), (1024, 1)]));
        let args =
            [Arg::Bytes(b"MSET"), Arg::Bytes(b"key:__rand_int__"), Arg::Value, Arg::Bytes(b"x"), Arg::Value];
        let t = Template::with_values(&args, &values);
        let mut k = keys(KeySpace::Random { n: 1000 });
        let mut out = Vec::with_capacity(t.len() * 16);
        let (cap, ptr) = (out.capacity(), out.as_ptr());
        for _ in 0..16 {
            t.write(&mut out, &mut k);
        }
        assert_eq!((out.capacity(), out.as_ptr()), (cap, ptr));
        check_values(&args, values.spec(), 1, 1000, 50).unwrap();
    }
    /// A size spec with every shape, sizes up to 2000 bytes.
    fn size_strategy() -> impl Strategy<Value = ValueSize> {
        prop_oneof![
            (0..2000usize).prop_map(ValueSize::Fixed),
            (0..2000usize, 0..2000usize).prop_map(|(a, b)| ValueSize::Range { lo: a.min(b), hi: a.max(b) }),
            proptest::collection::vec((0..2000usize, 0..5u64), 1..5)
                .prop_filter("a positive weight", |l| l.iter().any(|&(_, w)| w > 0))
                .prop_map(ValueSize::Weighted),
        ]
    }

    proptest! {
        #[test]
        fn substitution_preserves_everything_but_the_digits(
            args in proptest::collection::vec(arg_strategy(), 0..8),
            seed in any::<u64>(),
            n in prop_oneof![0..4u64, 1..1_000_000_000_001u64, any::<u64>()],
            count in 1..16usize,
        ) {
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(check_substitution(&refs, seed, n, count), Ok(()));
        }

        #[test]
        fn every_request_with_values_is_valid_resp(
            args in proptest::collection::vec(prop_oneof![arg_strategy().prop_map(Some), Just(None)], 0..6),
            spec in size_strategy(),
            seed in any::<u64>(),
            count in 1..8usize,
        ) {
            let args: Vec<Arg> =
                args.iter().map(|a| a.as_deref().map_or(Arg::Value, Arg::Bytes)).collect();
            prop_assert_eq!(check_values(&args, &spec, seed, 1000, count), Ok(()));
        }

        #[test]
        fn inline_keeps_bytes_and_finds_what_command_finds(arg in arg_strategy()) {
            let inline = Template::inline(&arg);
            prop_assert_eq!(inline.as_bytes(), arg.as_slice());
            let cmd = Template::command(&[arg.as_slice()]);
            let shift = cmd.len() - arg.len() - 2;
            let shifted: Vec<usize> = inline.placeholders.iter().map(|o| o + shift).collect();
            prop_assert_eq!(shifted, cmd.placeholders);
        }
    }

    #[test]
    fn expiry_adds_a_time_drawn_per_request_to_set_only() {
        let e = Expiry { lo: 1, hi: 3, millis: false };
        let set = Template::command(&[b"SET", b"key:__rand_int__", b"VXK"]).with_expiry(e).unwrap();
        assert_eq!(set.arg(3), Some(&b"EX"[..]));
        let mut k = keys(KeySpace::Random { n: 10 });
        let mut seen = [0u32; 4];
        for _ in 0..3000 {
            let out = one(&set, &mut k);
            let head = b"*5\r\n$3\r\nSET\r\n$16\r\nkey:";
            assert!(out.starts_with(head), "{}", String::from_utf8_lossy(&out));
            let tail = &out[head.len() + 12..];
            assert_eq!(&tail[..23], b"\r\n$3\r\nVXK\r\n$2\r\nEX\r\n$1\r\n");
            let ttl = tail[23] - b'0';
            assert_eq!(&tail[24..], b"\r\n");
            seen[usize::from(ttl)] += 1;
            assert!(out.len() <= set.len());
        }
        // Uniform over 1..=3: each about 1000 of 3000.
        assert_eq!(seen[0], 0);
        assert!(seen[1..].iter().all(|&c| (850..1150).contains(&c)), "{seen:?}");
        // Milliseconds go as PX, many digits wide; variable value sizes keep their order.
        let values = Values::new(&ValueSize::Range { lo: 1, hi: 9 });
        let px = Expiry { lo: 500, hi: 1500, millis: true };
        let set = Template::with_values(&[Arg::Bytes(b"SET"), Arg::Bytes(b"k"), Arg::Value], &values)
            .with_expiry(px)
            .unwrap();
        assert_eq!(set.arg(1), Some(&b"k"[..]));
        assert_eq!(set.arg(2), None);
        assert_eq!(set.arg(3), Some(&b"PX"[..]));
        for _ in 0..100 {
            let out = one(&set, &mut k);
            let text = String::from_utf8_lossy(&out).into_owned();
            let words: Vec<&str> = text.split("\r\n").collect();
            assert_eq!((words[0], words[8], words[9]), ("*5", "PX", &*format!("${}", words[10].len())));
            let ms: u64 = words[10].parse().unwrap();
            assert!((500..=1500).contains(&ms), "{text}");
        }
        assert!(String::from_utf8_lossy(&set.display()).ends_with("$2\r\nPX\r\n$8\r\n500-1500\r\n"));
        // Not SET, SET with options of its own, an inline command: no expiry.
        assert!(Template::command(&[b"GET", b"k"]).with_expiry(e).is_none());
        assert!(Template::command(&[b"SET", b"k", b"v", b"NX"]).with_expiry(e).is_none());
        assert!(Template::inline(b"SET k v\r\n").with_expiry(e).is_none());
        assert_eq!(Template::command(&[b"GET", b"k"]).arg(2), None);
    }
}
