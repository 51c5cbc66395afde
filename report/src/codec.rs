//! The document's encoding, a leaf below every format: the schema's name ([`SCHEMA`], the older
//! ones still read, why a document is refused) and the histogram codec (HdrHistogram V2 deflate
//! in base64), which the JSON document, `--hlog`'s lines and `plot`'s reader share.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use respbench_core::stats::HIGHEST_MICROS;

use crate::error::Error;

/// The document's `schema`; a change that breaks readers bumps the number.
pub const SCHEMA: &str = "respbench/2";
/// Older schemas `respbench merge` still reads (their series carried a histogram per second).
pub const READS_ALSO: &[&str] = &["respbench/1"];
/// The histogram's `encoding`.
pub const ENCODING: &str = "hdrhistogram-v2-deflate-base64";
/// Why a document of `schema` (`None`: it has none) is not read.
pub fn schema_refused(schema: Option<&str>) -> String {
    let found = schema.map_or_else(|| "missing".to_string(), |s| format!("'{s}'"));
    let mut known = vec![SCHEMA];
    known.extend(READS_ALSO);
    format!(
        "schema is {found}; this respbench reads documents written by respbench --json ('{}')",
        known.join("', '")
    )
}

/// Serializes a histogram as V2 deflate, in base64.
pub fn encode_histogram(h: &Histogram<u64>) -> Result<String, Error> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| Error::Encode(format!("cannot encode a histogram: {e:?}")))?;
    Ok(base64_encode(&bytes))
}

/// The V2 encoding's cookies (HdrHistogram's `V2EncodingCookieBase` with the word size, 0x10;
/// the compressed one wraps a zlib stream of the other).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The uncompressed V2 header: cookie, payload length, normalizing offset, significant digits,
/// lowest, highest, integer-to-double ratio.
const V2_HEADER: usize = 40;

/// Reads a histogram written by [`encode_histogram`]. The encoding is hostile until checked:
/// its declared lengths are checked against the bytes present, and its bounds against the
/// document's (at most [`HIGHEST_MICROS`], at most 5 significant figures), before anything is
/// allocated from them, so a small document cannot make respbench allocate gigabytes.
pub fn decode_histogram(data: &str) -> Result<Histogram<u64>, Error> {
    decode_histogram_within(data, HIGHEST_MICROS)
}

/// [`decode_histogram`] of a histogram whose highest trackable value may be up to `highest`
/// (an `--hlog` line's, in nanoseconds).
pub fn decode_histogram_within(data: &str, highest: u64) -> Result<Histogram<u64>, Error> {
    use std::io::Read;
    let bytes = base64_decode(data).ok_or_else(|| Error::Document("histogram data is not base64".into()))?;
    let not_v2 =
        |why: &str| Error::Document(format!("histogram data is not an HdrHistogram V2 encoding: {why}"));
    let word = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
    };
    let long = |b: &[u8], at: usize| -> Option<u64> {
        Some(u64::from_be_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
    };
    if word(&bytes, 0) != Some(V2_COMPRESSED_COOKIE) {
        return Err(not_v2("no V2 deflate cookie"));
    }
    let compressed = word(&bytes, 4).ok_or_else(|| not_v2("cut short"))? as usize;
    let stream =
        bytes.get(8..).filter(|rest| rest.len() >= compressed).map(|rest| &rest[..compressed]).ok_or_else(
            || not_v2(&format!("it says {compressed} compressed bytes, {} are there", bytes.len() - 8)),
        )?;
    // The header first, inflated alone: its payload length bounds what is inflated next.
    let mut inflate = flate2::read::ZlibDecoder::new(stream);
    let mut header = [0u8; V2_HEADER];
    inflate.read_exact(&mut header).map_err(|e| not_v2(&format!("its header: {e}")))?;
    if word(&header, 0) != Some(V2_COOKIE) {
        return Err(not_v2("no V2 cookie inside"));
    }
    let payload = word(&header, 4).unwrap_or(0) as usize;
    let digits = word(&header, 12).unwrap_or(u32::MAX);
    let (low, high) = (long(&header, 16).unwrap_or(0), long(&header, 24).unwrap_or(u64::MAX));
    if digits > 5 || low < 1 || high > highest || low > high {
        return Err(Error::Document(format!(
            "histogram bounds {low}..{high} with {digits} significant figures are not a respbench \
             histogram's (1..{highest}, at most 5)"
        )));
    }
    // Each count is at most 9 bytes of LEB128: a histogram of these bounds needs no more.
    let counts = Histogram::<u64>::new_with_bounds(low, high, digits as u8)
        .map_err(|e| Error::Document(format!("histogram bounds: {e:?}")))?
        .distinct_values();
    if payload > counts.saturating_mul(9) {
        return Err(not_v2(&format!("it says {payload} payload bytes for {counts} counts")));
    }
    // Inflated no further than the payload said (a zlib bomb stops there), into a buffer that
    // grows with what really arrives.
    let mut whole = header.to_vec();
    (&mut inflate).take(payload as u64).read_to_end(&mut whole).map_err(|e| not_v2(&e.to_string()))?;
    if whole.len() != V2_HEADER + payload {
        return Err(not_v2(&format!(
            "it says {payload} payload bytes, {} are there",
            whole.len() - V2_HEADER
        )));
    }
    Deserializer::new().deserialize(&mut whole.as_slice()).map_err(|e| not_v2(&format!("{e:?}")))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648 §4).
fn base64_encode(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Decodes [`base64_encode`]'s output; `None` for anything else.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    // (`len % 4` trips clippy's `is_multiple_of`, which is newer than the MSRV.)
    if !s.chunks_exact(4).remainder().is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (ci, chunk) in s.chunks(4).enumerate() {
        let last = ci == s.len() / 4 - 1;
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            let v = B64.iter().position(|&b| b == c)? as u32;
            n = n << 6 | v;
        }
        n <<= 6 * pad as u32;
        out.extend_from_slice(&n.to_be_bytes()[1..4 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use respbench_core::stats::LOWEST_MICROS;

    #[test]
    fn base64_round_trips() {
        for len in 0..40usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8).collect();
            let enc = base64_encode(&bytes);
            assert_eq!(base64_decode(&enc).unwrap(), bytes);
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert!(base64_decode("Zm9").is_none());
        assert!(base64_decode("Z===").is_none());
        assert!(base64_decode("Zm8=Zm8=").is_none());
        assert!(base64_decode("Zm!=").is_none());
    }

    /// A histogram whose encoding declares more than it holds is refused before anything is
    /// allocated from its lengths (issue #35: an 8.5 KB document whose payload length said
    /// 2^31 - 1 allocated 2.1 GB).
    #[test]
    fn hostile_histogram_lengths_are_refused() {
        use std::io::{Read, Write};
        let mut h = Histogram::<u64>::new_with_bounds(LOWEST_MICROS, HIGHEST_MICROS, 3).unwrap();
        h.record_n(250, 7).unwrap();
        let good = base64_decode(&encode_histogram(&h).unwrap()).unwrap();
        let mut inner = Vec::new();
        flate2::read::ZlibDecoder::new(&good[8..]).read_to_end(&mut inner).unwrap();
        let wrap = |inner: &[u8]| {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(inner).unwrap();
            let z = z.finish().unwrap();
            let mut out = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
            out.extend_from_slice(&(z.len() as u32).to_be_bytes());
            out.extend_from_slice(&z);
            base64_encode(&out)
        };
        assert_eq!(decode_histogram(&wrap(&inner)).unwrap(), h, "the rewrapped encoding reads");
        let mut long = inner.clone();
        long[4..8].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
        let e = decode_histogram(&wrap(&long)).unwrap_err().to_string();
        assert!(e.contains("it says 2147483647 payload bytes for"), "{e}");
        let mut short = inner.clone();
        short[4..8].copy_from_slice(&(inner.len() as u32 - 40 + 5).to_be_bytes());
        let e = decode_histogram(&wrap(&short)).unwrap_err().to_string();
        assert!(e.contains("payload bytes,") && e.contains("are there"), "{e}");
        let mut wide = inner.clone();
        wide[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(decode_histogram(&wrap(&wide))
            .unwrap_err()
            .to_string()
            .contains("not a respbench histogram's"));
        let mut cut = good.clone();
        cut[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_histogram(&base64_encode(&cut)).unwrap_err().to_string().contains("compressed bytes"));
        assert!(decode_histogram(&base64_encode(&good[..6])).is_err());
    }
}
