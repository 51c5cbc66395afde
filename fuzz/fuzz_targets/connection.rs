//! One connection driven by an arbitrary script against its invariants (see `drive_arbitrary`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = respbench_core::sim::drive_arbitrary(data) {
        panic!("{e}");
    }
});
