//! A request to the `--metrics` endpoint, hostile: the parser answers without panicking, and an
//! answer once given (a request, or a refusal) is not changed by whatever bytes follow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use respbench_report::metrics::http::{parse_request, Request};

fuzz_target!(|data: &[u8]| {
    let answer = parse_request(data);
    if answer != Request::Partial {
        let mut more = data.to_vec();
        more.extend_from_slice(b"\r\n\r\nGET / HTTP/1.1\r\n\r\n");
        assert_eq!(parse_request(&more), answer);
    }
});
