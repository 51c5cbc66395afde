//! A result document, hostile: `respbench merge` and `respbench plot` read it (the document, its
//! tests back into results, a merge of it with itself, its searches, the charts), and must
//! answer with a document or an error, never a panic or an allocation out of proportion.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = respbench_report::read_untrusted(data);
});
