//! Replay's readers on arbitrary bytes: as MONITOR lines and a capture record (each command
//! read must write back to itself), and as a whole capture file streamed. Must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    respbench_core::replay::check_untrusted(data);
    let _ = respbench_session::replay::read_untrusted(data);
});
