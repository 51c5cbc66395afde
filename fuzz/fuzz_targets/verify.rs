//! `--verify`'s check of a GET reply on arbitrary bytes: byte 0 picks the value size (28 to 283
//! bytes), bytes 1-2 the key, byte 3 the version drawn and byte 4 the versions sent; the rest
//! is the reply (a server's, hostile). Must never panic, and counts at most one mismatch a
//! reply. And the value that was written, as its reply, is never a mismatch.
#![no_main]

use respbench_core::stats::VerifyStats;
use respbench_core::verify::{encode_value, Tag, Verify};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((head, reply)) = data.split_first_chunk::<5>() else { return };
    let size = 28 + usize::from(head[0]);
    let templates: [&[u8]; 2] = [
        b"*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n",
        b"*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n",
    ];
    let Ok(v) = Verify::new(&templates, size, 1, 100_000, true) else { return };
    let tag = Tag { key: u64::from(u16::from_le_bytes([head[1], head[2]])), version: u64::from(head[3]) };
    let sent = u64::from(head[4]).max(tag.version);
    let mut stats = VerifyStats::default();
    v.check(1, tag, sent, reply, &mut stats);
    assert!(stats.mismatches() <= 1 && stats.checked <= 1, "{stats:?}");
    // The value written at the version the read expects is fine.
    let mut value = Vec::new();
    encode_value(&mut value, tag.key, tag.version.max(1), size);
    let mut good = format!("${}\r\n", value.len()).into_bytes();
    good.extend_from_slice(&value);
    good.extend_from_slice(b"\r\n");
    let mut stats = VerifyStats::default();
    v.check(1, Tag { version: tag.version.max(1), ..tag }, sent.max(1), &good, &mut stats);
    assert_eq!((stats.checked, stats.mismatches()), (1, 0), "{stats:?}");
});
