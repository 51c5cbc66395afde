//! A subscriber's reading of what a server sends (`-t pubsub`, `blpop`, `xreadgroup`) on
//! arbitrary bytes: byte 0 picks what it waits for, byte 1 how many chunk sizes follow, the rest
//! is the stream, fed in those chunks. Must never panic; an error ends the feed, as it ends the
//! subscriber.
#![no_main]

use respbench_core::delivery::{Subscriber, Waits};
use respbench_core::Time;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    let waits = match kind % 3 {
        0 => Waits::Messages,
        1 => Waits::List,
        _ => Waits::Stream,
    };
    let n = rest.first().map_or(0, |&n| 1 + usize::from(n)).min(rest.len());
    let (sizes, input) = rest.split_at(n);
    let sizes = sizes.get(1..).unwrap_or_default();
    let Ok(mut s) = Subscriber::new(waits, 3) else { return };
    let mut pos = 0;
    let mut k = 0;
    while pos < input.len() {
        let size = sizes.get(k % sizes.len().max(1)).map_or(input.len() - pos, |&s| usize::from(s.max(1)));
        k += 1;
        let end = input.len().min(pos + size);
        if s.handle_input(&input[pos..end], Time::from_micros(pos as u64)).is_err() {
            return;
        }
        pos = end;
    }
});
