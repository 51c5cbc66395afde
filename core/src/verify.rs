//! `--verify`: values that say what they are, and replies checked against them (memtier's
//! `--data-verify`).
//!
//! Every value a verified write sends is [`HEADER`]: `rb`, the key's number in 12 digits, `:`,
//! the write's version in 12 digits, `:` (28 bytes), then padding up to `-d` bytes that depends
//! on the key and the version, so a changed byte anywhere is seen. Every verified read's reply
//! is checked against that encoding ([`Verify::check`]):
//!
//! - **wrong value**: not a value respbench wrote (the length, the header or the padding
//!   differ), or not a string at all;
//! - **another key's value**: a well-formed value whose header names another key;
//! - **stale**: the key's own value, older than the last write of it that was acknowledged
//!   before the read was sent (a version below it, a version this test never wrote: an earlier
//!   run's, or nil). Decidable only with one writer per key: each client of the test owns the
//!   keys whose number is its index modulo the clients ([`Verify::own`]), and counts the
//!   versions of its keys itself ([`Tracker`]). Without that (more clients than keys,
//!   `--verify-only`) only the first two are checked.
//!
//! Nothing of this runs without `--verify`: the connection keeps no reply bytes and the parser
//! may skip bodies as before. With it, the connection keeps each reply's bytes (at most
//! [`Verify::capture_limit`]) and skips nothing.

use std::collections::HashMap;

use crate::stats::{Mismatch, Shown, VerifyStats};

/// The bytes before the padding: `rb` + 12 key digits + `:` + 12 version digits + `:`.
pub const HEADER: usize = 28;

/// How many bytes of a value a shown mismatch keeps.
const SHOWN_BYTES: usize = 48;

/// How many keys the clients of a test track the versions of, all together (each its share,
/// at least [`TRACKED_EACH`]); keys beyond are checked without versions.
const TRACKED: usize = 1 << 22;
/// The least share of [`TRACKED`] of one client.
const TRACKED_EACH: usize = 1 << 10;

/// What a command of the workload does, for verification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// `SET key value`: writes a verified value.
    Write,
    /// `GET key`: its reply is checked.
    Read,
}

/// One command of the workload: its role and its key argument (with its `__rand_int__`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Part {
    role: Role,
    /// The key argument: its bytes before and after the 12 digits.
    before: Vec<u8>,
    after: Vec<u8>,
}

/// How one test verifies: the roles of its commands (by their index in the mix), the value
/// size and the ownership of keys. Shared by every client of the test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verify {
    parts: Vec<Part>,
    /// Every value's length (`-d`).
    size: usize,
    /// The test's clients and its keyspace (`-r`): client `i` owns the keys `k` with
    /// `k % clients == i` when `versions`.
    clients: u64,
    keyspace: u64,
    /// Whether the versions are checked (stale reads): one writer per key is known.
    versions: bool,
}

/// What a verified request carries from its draw to its reply: its key and, for a write, the
/// version it writes; for a read, the last version of the key acknowledged before it was drawn
/// (0: none known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tag {
    /// The key's number.
    pub key: u64,
    /// The version written, or the least version a read may return.
    pub version: u64,
}

/// Writes `v` (< 10^12) as 12 zero-padded digits.
fn digits(out: &mut Vec<u8>, v: u64) {
    let s = format!("{:012}", v % 1_000_000_000_000);
    out.extend_from_slice(s.as_bytes());
}

/// Reads 12 digits.
fn read_digits(b: &[u8]) -> Option<u64> {
    if b.len() != 12 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    b.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

/// The padding byte at `i` of the value of `key` at `version`.
#[inline]
fn pad(key: u64, version: u64, i: usize) -> u8 {
    let x = key.wrapping_mul(31).wrapping_add(version.wrapping_mul(7)).wrapping_add(i as u64);
    b'a' + (x % 26) as u8
}

/// Appends the value of `key` at `version`, `size` bytes (at least [`HEADER`]).
pub fn encode_value(out: &mut Vec<u8>, key: u64, version: u64, size: usize) {
    let start = out.len();
    out.extend_from_slice(b"rb");
    digits(out, key);
    out.push(b':');
    digits(out, version);
    out.push(b':');
    out.extend((HEADER..size).map(|i| pad(key, version, i)));
    out.truncate(start + size.max(HEADER));
}

/// The key and version a value's header says, when it is well formed.
pub fn decode_header(value: &[u8]) -> Option<(u64, u64)> {
    let h = value.get(..HEADER)?;
    if &h[..2] != b"rb" || h[14] != b':' || h[27] != b':' {
        return None;
    }
    Some((read_digits(&h[2..14])?, read_digits(&h[15..27])?))
}

/// `bytes` for a report: printable ASCII as it is, the rest `\xNN`, cut to [`SHOWN_BYTES`].
fn escape(bytes: &[u8]) -> String {
    let mut s = String::new();
    for &b in bytes.iter().take(SHOWN_BYTES) {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    if bytes.len() > SHOWN_BYTES {
        s.push_str("...");
    }
    s
}

/// The parts of a RESP array of bulk strings (a template's bytes): the count and the first
/// `want` arguments.
fn arguments(bytes: &[u8], want: usize) -> Option<(usize, Vec<&[u8]>)> {
    let line = |at: usize| -> Option<(usize, usize)> {
        let end = at + bytes.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&bytes[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    };
    if bytes.first() != Some(&b'*') {
        return None;
    }
    let (count, mut at) = line(0)?;
    let mut args = Vec::new();
    while args.len() < want.min(count) {
        if bytes.get(at) != Some(&b'$') {
            break;
        }
        let (len, body) = line(at)?;
        args.push(bytes.get(body..body + len)?);
        at = body + len + 2;
    }
    Some((count, args))
}

impl Verify {
    /// The verification of a test made of `templates` (its mix's commands in order, or its one
    /// command), each a template's bytes: `SET key value` writes and `GET key` reads, with one
    /// `__rand_int__` in the key. `size` is `-d` (one size), `clients` the test's clients,
    /// `keyspace` `-r`; `versions` false checks no versions (`--verify-only`). An error names
    /// what cannot be verified.
    pub fn new(
        templates: &[&[u8]],
        size: usize,
        clients: u64,
        keyspace: u64,
        versions: bool,
    ) -> Result<Verify, String> {
        if size < HEADER {
            return Err(format!(
                "--verify needs -d of at least {HEADER} bytes (each value holds its key and version), got -d {size}"
            ));
        }
        let mut parts = Vec::new();
        for t in templates {
            let Some((count, args)) = arguments(t, 2) else {
                return Err(
                    "--verify checks SET and GET of a key: choose them with -t set,get or --mix set:1,get:1"
                        .into(),
                );
            };
            let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
            let role = match (name.as_slice(), count) {
                (b"SET", 3) => Role::Write,
                (b"GET", 2) => Role::Read,
                _ => {
                    return Err(format!(
                        "--verify checks SET and GET of a key, not {}: choose them with -t set,get or --mix set:1,get:1",
                        String::from_utf8_lossy(&name)
                    ))
                }
            };
            let key = args.get(1).copied().unwrap_or_default();
            let at = key.windows(12).position(|w| w == b"__rand_int__");
            let Some(at) = at.filter(|&a| !key[a + 12..].windows(12).any(|w| w == b"__rand_int__")) else {
                return Err(format!(
                    "--verify needs one __rand_int__ in each key (and -r), got {}",
                    String::from_utf8_lossy(key)
                ));
            };
            parts.push(Part { role, before: key[..at].to_vec(), after: key[at + 12..].to_vec() });
        }
        // A test that only reads knows no versions: it wrote none.
        let writes = parts.iter().any(|p| p.role == Role::Write);
        let versions = versions && writes && clients >= 1 && clients <= keyspace;
        Ok(Verify { parts, size, clients: clients.max(1), keyspace, versions })
    }

    /// How many keys one client tracks the versions of.
    pub fn tracked(&self) -> usize {
        (TRACKED / usize::try_from(self.clients).unwrap_or(usize::MAX)).max(TRACKED_EACH)
    }

    /// Whether versions are checked (one writer per key).
    pub fn versions(&self) -> bool {
        self.versions
    }

    /// The role of command `part`, when it is verified.
    pub fn role(&self, part: u16) -> Option<&Role> {
        self.parts.get(usize::from(part)).map(|p| &p.role)
    }

    /// The most bytes of one reply a connection keeps: a whole value with its header and CRLF,
    /// and no more (a longer reply is wrong whatever its tail).
    pub fn capture_limit(&self) -> usize {
        self.size + 32
    }

    /// The key client `client` uses for a key `raw` drawn from the keyspace: with versions, the
    /// nearest key at or below it that the client owns (`k % clients == client`).
    pub fn own(&self, raw: u64, client: u64) -> u64 {
        if !self.versions {
            return raw;
        }
        let c = self.clients;
        let i = client % c;
        let k = raw - raw % c + i;
        if k >= self.keyspace {
            k.saturating_sub(c)
        } else {
            k
        }
    }

    /// Appends command `part`'s request for `tag`: `SET key value` or `GET key`.
    pub fn write_request(&self, part: u16, tag: Tag, out: &mut Vec<u8>) {
        let Some(p) = self.parts.get(usize::from(part)) else { return };
        let key_len = p.before.len() + 12 + p.after.len();
        let head: &[u8] = match p.role {
            Role::Write => b"*3\r\n$3\r\nSET\r\n",
            Role::Read => b"*2\r\n$3\r\nGET\r\n",
        };
        out.extend_from_slice(head);
        crate::template::push_bulk_len(out, key_len);
        out.extend_from_slice(&p.before);
        digits(out, tag.key);
        out.extend_from_slice(&p.after);
        out.extend_from_slice(b"\r\n");
        if p.role == Role::Write {
            crate::template::push_bulk_len(out, self.size);
            encode_value(out, tag.key, tag.version, self.size);
            out.extend_from_slice(b"\r\n");
        }
    }

    /// The key's text as sent.
    fn key_text(&self, part: u16, key: u64) -> String {
        let Some(p) = self.parts.get(usize::from(part)) else { return String::new() };
        let mut k = p.before.clone();
        digits(&mut k, key);
        k.extend_from_slice(&p.after);
        escape(&k)
    }

    /// Checks the reply `reply` (its whole bytes, or the first [`Verify::capture_limit`]) to a
    /// read of `tag` drawn with `sent` versions of its key written so far by its client (its
    /// writes sent: a version above them is not this test's); counts it in `stats`. An error
    /// reply is not checked (it is counted as an error).
    pub fn check(&self, part: u16, tag: Tag, sent: u64, reply: &[u8], stats: &mut VerifyStats) {
        let Some(kind) = reply.first() else { return };
        if matches!(kind, b'-' | b'!') {
            return;
        }
        stats.checked += 1;
        let versions = self.versions && tag.version > 0;
        let nil = reply.starts_with(b"$-1\r\n") || reply.starts_with(b"_\r\n");
        let body = if *kind == b'$' && !nil {
            let end = reply.windows(2).position(|w| w == b"\r\n");
            let len = end.and_then(|e| std::str::from_utf8(&reply[1..e]).ok()?.parse::<usize>().ok());
            match (end, len) {
                (Some(e), Some(len)) => Some((reply.get(e + 2..).unwrap_or_default(), len)),
                _ => None,
            }
        } else {
            None
        };
        let found = match body {
            _ if nil => versions.then_some(Mismatch::Stale),
            None => Some(Mismatch::Wrong),
            Some((value, len)) => {
                let value = &value[..value.len().min(len)];
                match decode_header(value) {
                    _ if len != self.size || value.len() != len => Some(Mismatch::Wrong),
                    None => Some(Mismatch::Wrong),
                    Some((key, _)) if key != tag.key => Some(Mismatch::OtherKey),
                    Some((key, v))
                        if value[HEADER..].iter().enumerate().any(|(i, &b)| b != pad(key, v, HEADER + i)) =>
                    {
                        Some(Mismatch::Wrong)
                    }
                    Some((_, v)) if versions && (v < tag.version || v > sent) => Some(Mismatch::Stale),
                    Some(_) => None,
                }
            }
        };
        let Some(found) = found else { return };
        match found {
            Mismatch::Wrong => stats.wrong += 1,
            Mismatch::OtherKey => stats.other_key += 1,
            Mismatch::Stale => stats.stale += 1,
        }
        if stats.shown.len() < crate::stats::SHOWN {
            let mut expected = Vec::new();
            encode_value(&mut expected, tag.key, tag.version, self.size);
            let expected = if versions {
                escape(&expected)
            } else {
                format!("{}<any version>...", escape(&expected[..15]))
            };
            let got = match body {
                _ if nil => "(nil)".to_string(),
                Some((value, len)) => escape(&value[..value.len().min(len)]),
                None => escape(reply),
            };
            stats.shown.push(Shown { kind: found, key: self.key_text(part, tag.key), expected, got });
        }
    }
}

/// One client's books of its own keys: how many versions of each it has sent, and the last
/// acknowledged. Bounded: [`Verify::tracked`] keys; keys beyond are read without a version check.
#[derive(Debug, Default)]
pub struct Tracker {
    keys: HashMap<u64, (u64, u64)>,
}

impl Tracker {
    /// The tag of a request of `role` on `key`: a write's next version, a read's least; at most
    /// `tracked` keys are tracked.
    pub fn draw(&mut self, role: &Role, key: u64, tracked: usize) -> Tag {
        match role {
            Role::Write => {
                let full = self.keys.len() >= tracked;
                let version = match self.keys.get_mut(&key) {
                    Some(k) => {
                        k.0 += 1;
                        k.0
                    }
                    None if full => 1,
                    None => {
                        self.keys.insert(key, (1, 0));
                        1
                    }
                };
                Tag { key, version }
            }
            Role::Read => Tag { key, version: self.keys.get(&key).map_or(0, |k| k.1) },
        }
    }

    /// A write of `tag` was acknowledged.
    pub fn acked(&mut self, tag: Tag) {
        if let Some(k) = self.keys.get_mut(&tag.key) {
            k.1 = k.1.max(tag.version);
        }
    }

    /// How many versions of `key` were sent (0 for a key not tracked).
    pub fn sent(&self, key: u64) -> u64 {
        self.keys.get(&key).map_or(0, |k| k.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verify(versions: bool) -> Verify {
        let set = crate::template::Template::command(&[b"SET", b"key:__rand_int__", b"xxx"]);
        let get = crate::template::Template::command(&[b"GET", b"key:__rand_int__"]);
        Verify::new(&[set.as_bytes(), get.as_bytes()], 40, 4, 1000, versions).unwrap()
    }

    fn reply(value: &[u8]) -> Vec<u8> {
        let mut r = format!("${}\r\n", value.len()).into_bytes();
        r.extend_from_slice(value);
        r.extend_from_slice(b"\r\n");
        r
    }

    #[test]
    fn values_encode_their_key_and_version_at_the_size_asked() {
        let mut v = Vec::new();
        encode_value(&mut v, 42, 7, 40);
        assert_eq!(v.len(), 40);
        assert_eq!(&v[..HEADER], b"rb000000000042:000000000007:");
        assert_eq!(decode_header(&v), Some((42, 7)));
        let mut out = Vec::new();
        verify(true).write_request(0, Tag { key: 42, version: 7 }, &mut out);
        let mut want = b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$40\r\n".to_vec();
        want.extend_from_slice(&v);
        want.extend_from_slice(b"\r\n");
        assert_eq!(out, want);
        out.clear();
        verify(true).write_request(1, Tag { key: 42, version: 7 }, &mut out);
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000042\r\n");
    }

    #[test]
    fn refusals_name_what_cannot_be_verified() {
        let set = crate::template::Template::command(&[b"SET", b"key:__rand_int__", b"xxx"]);
        assert!(Verify::new(&[set.as_bytes()], 3, 1, 10, true).unwrap_err().contains("-d 3"));
        let lpush = crate::template::Template::command(&[b"LPUSH", b"mylist", b"xxx"]);
        assert!(Verify::new(&[lpush.as_bytes()], 40, 1, 10, true).unwrap_err().contains("LPUSH"));
        let fixed = crate::template::Template::command(&[b"GET", b"foo"]);
        assert!(Verify::new(&[fixed.as_bytes()], 40, 1, 10, true).unwrap_err().contains("__rand_int__"));
    }

    #[test]
    fn each_client_owns_its_keys() {
        let v = verify(true);
        for raw in [0, 1, 2, 3, 500, 997, 998, 999] {
            for c in 0..4 {
                let k = v.own(raw, c);
                assert!(k < 1000 && k % 4 == c, "{raw} {c} {k}");
            }
        }
    }

    #[test]
    fn mismatches_are_told_apart() {
        let v = verify(true);
        let mut s = VerifyStats::default();
        let mut good = Vec::new();
        encode_value(&mut good, 42, 7, 40);
        let tag = Tag { key: 42, version: 7 };
        v.check(1, tag, 8, &reply(&good), &mut s);
        v.check(1, Tag { key: 42, version: 0 }, 0, b"$-1\r\n", &mut s);
        v.check(1, tag, 8, b"-ERR x\r\n", &mut s);
        assert_eq!((s.checked, s.mismatches()), (2, 0));
        let mut bad = good.clone();
        bad[30] ^= 1;
        v.check(1, tag, 8, &reply(&bad), &mut s);
        v.check(1, tag, 8, &reply(&good[..39]), &mut s);
        v.check(1, tag, 8, b":1\r\n", &mut s);
        assert_eq!(s.wrong, 3);
        let mut other = Vec::new();
        encode_value(&mut other, 46, 7, 40);
        v.check(1, tag, 8, &reply(&other), &mut s);
        assert_eq!(s.other_key, 1);
        let mut old = Vec::new();
        encode_value(&mut old, 42, 6, 40);
        v.check(1, tag, 8, &reply(&old), &mut s);
        v.check(1, tag, 8, b"$-1\r\n", &mut s);
        let mut later = Vec::new();
        encode_value(&mut later, 42, 9, 40);
        v.check(1, tag, 8, &reply(&later), &mut s);
        assert_eq!(s.stale, 3);
        assert_eq!(s.shown.len(), 7);
        assert_eq!(s.shown[4].kind, Mismatch::Stale);
        assert_eq!(s.shown[4].key, "key:000000000042");
        assert!(s.shown[4].expected.starts_with("rb000000000042:000000000007:"));
        assert!(s.shown[4].got.starts_with("rb000000000042:000000000006:"));
        // A test that only reads checks no versions.
        let get = crate::template::Template::command(&[b"GET", b"key:__rand_int__"]);
        assert!(!Verify::new(&[get.as_bytes()], 40, 4, 1000, true).unwrap().versions());
        // Without versions, an old value is fine.
        let mut s = VerifyStats::default();
        verify(false).check(1, tag, 8, &reply(&old), &mut s);
        assert_eq!(s.mismatches(), 0);
    }

    #[test]
    fn a_tracker_counts_versions_and_acknowledgements() {
        let mut t = Tracker::default();
        let w1 = t.draw(&Role::Write, 5, 10);
        let w2 = t.draw(&Role::Write, 5, 10);
        assert_eq!((w1.version, w2.version), (1, 2));
        assert_eq!(t.draw(&Role::Read, 5, 10).version, 0);
        t.acked(w2);
        t.acked(w1);
        assert_eq!(t.draw(&Role::Read, 5, 10).version, 2);
        assert_eq!(t.sent(5), 2);
        // Past its bound a key is written at version 1 and read without a version.
        let mut t = Tracker::default();
        t.draw(&Role::Write, 1, 1);
        assert_eq!((t.draw(&Role::Write, 2, 1).version, t.draw(&Role::Read, 2, 1).version), (1, 0));
        assert_eq!(t.draw(&Role::Write, 1, 1).version, 2);
    }
}
