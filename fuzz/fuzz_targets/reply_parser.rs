//! The reply parser on arbitrary bytes, fed in arbitrary chunks: byte 0 says how many chunk
//! sizes follow, the rest is the stream. Must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (sizes, input) = data.split_at(data.first().map_or(0, |&n| 1 + usize::from(n)).min(data.len()));
    let _ = respbench_core::resp::parse_chunked(input, sizes.get(1..).unwrap_or_default());
});
