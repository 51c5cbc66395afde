//! Template encoding and placeholder substitution: bytes 0..8 the seed, 8..16 the keyspace, 16
//! the request count, then arguments separated by 0xff. `check_substitution` says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let word = |r: std::ops::Range<usize>| {
        let mut b = [0u8; 8];
        let src = data.get(r.start.min(data.len())..r.end.min(data.len())).unwrap_or_default();
        b[..src.len()].copy_from_slice(src);
        u64::from_le_bytes(b)
    };
    let count = usize::from(data.get(16).copied().unwrap_or(1) % 8);
    let args: Vec<&[u8]> = data.get(17..).unwrap_or_default().split(|&b| b == 0xff).collect();
    if let Err(e) = respbench_core::template::check_substitution(&args, word(0..8), word(8..16), count) {
        panic!("{e}");
    }
});
