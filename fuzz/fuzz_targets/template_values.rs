//! Templates with value slots: byte 0 picks the `-d` text's length, then that many bytes of `-d`
//! text (parsed as the option is; unparsable specs are skipped), then bytes 8 of seed, 1 of
//! request count, then arguments separated by 0xff, where an empty argument is a value slot.
//! `check_values` says what must hold.
#![no_main]

use respbench_core::dist::ValueSize;
use respbench_core::template::{check_values, Arg};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else { return };
    let (spec, rest) = rest.split_at(usize::from(n % 24).min(rest.len()));
    let Ok(spec) = ValueSize::parse(&String::from_utf8_lossy(spec)) else { return };
    if spec.max() > 1 << 16 {
        return; // keep each run fast; sizes do not change the code paths
    }
    let mut seed = [0u8; 8];
    let take = rest.len().min(8);
    seed[..take].copy_from_slice(&rest[..take]);
    let rest = &rest[take..];
    let count = usize::from(rest.first().copied().unwrap_or(1) % 8);
    let args: Vec<Arg> = rest
        .get(1..)
        .unwrap_or_default()
        .split(|&b| b == 0xff)
        .map(|a| if a.is_empty() { Arg::Value } else { Arg::Bytes(a) })
        .collect();
    if let Err(e) = check_values(&args, &spec, u64::from_le_bytes(seed), 1000, count) {
        panic!("{e}");
    }
});
