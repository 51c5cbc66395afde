//! One client driven by an arbitrary script against its invariants, on a virtual clock with no
//! sockets: the fuzz target's entry ([`drive_arbitrary`]). Built only for tests or with the
//! `testing` feature. Whole tests on virtual time, through the real driver and its loops, are
//! respbench-driver's simulation (its `sim` module).

use std::sync::Arc;
use std::time::Duration;

use crate::client::Client;
use crate::conn::{Event, Plan};
use crate::stats::Stats;
use crate::Time;

/// Splits one request off the front of `buf`: `Some((command name, length))`, or `None` when
/// incomplete. Requests are either inline (`PING\r\n`) or arrays of bulk strings.
fn split_request(buf: &[u8]) -> Option<(Vec<u8>, usize)> {
    fn line(buf: &[u8], from: usize) -> Option<(&[u8], usize)> {
        let rel = buf.get(from..)?.windows(2).position(|w| w == b"\r\n")?;
        Some((&buf[from..from + rel], from + rel + 2))
    }
    fn num(b: &[u8]) -> usize {
        std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
    }
    let (first, mut pos) = line(buf, 0)?;
    if first.first() != Some(&b'*') {
        let name = first.split(|&b| b == b' ').next().unwrap_or_default().to_ascii_uppercase();
        return Some((name, pos));
    }
    let mut name = Vec::new();
    for i in 0..num(&first[1..]) {
        let (len, p) = line(buf, pos)?;
        let end = p + num(len.get(1..)?);
        if buf.len() < end + 2 {
            return None;
        }
        if i == 0 {
            name = buf[p..end].to_ascii_uppercase();
        }
        pos = end + 2;
    }
    Some((name, pos))
}

/// Reads fuzz input front to back; past the end every read is 0, so any input is a valid script.
struct Script<'a>(&'a [u8]);

impl<'a> Script<'a> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// Up to `n` bytes (fewer at the end of the input).
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }
}

/// Fuzz entry: drives one [`Client`] through a script decoded from `data` and checks its
/// invariants; `Err` describes the first violation. Never panics unless the connection does.
///
/// Layout: byte 0 picks `-P` (1..=64: its low 6 bits) and, in bit 6, batch mode (else the
/// window); byte 1 is flags (bit 0 keepalive, bit 1 open loop,
/// bit 2 Poisson gaps, bits 3-4 handshake: none, `AUTH`, `AUTH`+`SELECT`, `AUTH`+`CLIENT
/// TRACKING`+`SELECT`+`HELLO`; bits 5-6 request: `GET key`, `SET key val`, inline `PING`;
/// bit 7 a `--timeout` of 64 open-loop intervals, with `handle_timeout` called whenever
/// `poll_timeout` has come);
/// byte 2 the budget (0..=200); byte 3 the open-loop interval (µs, 1..=128: its low 7 bits) and,
/// in its top bit, `--reconnect` (a failed connection comes back after 1 to 4 intervals). Then steps, each a
/// little-endian u16 time advance in ns and an op byte whose low 2 bits choose:
/// 0. feed the next `1 + (op >> 2)` bytes of the script to `handle_input`;
/// 1. `poll_transmit`, then `advance_transmit` of `min(u16, len)` of it (next two bytes);
/// 2. `handle_closed`;
/// 3. `handle_connected`, if a `Reconnect` is pending (else nothing).
///
/// After every step the events are drained. Checked: at most `pipeline` requests in flight;
/// completed ≤ encoded ≤ budget; `bytes_sent` is the sum of the `advance_transmit` amounts; the
/// unwritten bytes `poll_transmit` offers never change; after `Failed` or `Finished` no event
/// follows, nothing is offered for sending and nothing more completes.
///
/// After `Reconnect`, nothing may be offered before `handle_connected`.
pub fn drive_arbitrary(data: &[u8]) -> Result<(), String> {
    drive(data).map(|_| ())
}

/// [`drive_arbitrary`], returning the stats so tests can see what a script did.
fn drive(data: &[u8]) -> Result<Stats, String> {
    use crate::conn::{Backoff, Budget, ConnConfig, Handshake, OpenLoop, Stop, Workload};
    use crate::plan::PipelineMode;
    use crate::template::{KeySpace, Template};

    let mut script = Script(data);
    let byte0 = script.byte();
    let pipeline = u32::from(byte0 % 64) + 1;
    let pipeline_mode = if byte0 & 0x40 != 0 { PipelineMode::Batch } else { PipelineMode::Window };
    let flags = script.byte();
    let budget = u64::from(script.byte()) % 201;
    let byte3 = script.byte();
    let interval = Duration::from_micros(u64::from(byte3 & 0x7f) + 1);
    // A failed connection comes back (--reconnect) after 1 to 4 intervals.
    let reconnect = (byte3 & 0x80 != 0).then_some(Backoff::doubling(interval, interval * 4));
    let handshake = match (flags >> 3) & 3 {
        0 => Handshake::default(),
        1 => Handshake::new(None, Some("secret"), false, 0, false),
        2 => Handshake::new(Some("bench"), Some("secret"), false, 3, false),
        _ => Handshake::new(Some("bench"), Some("secret"), true, 9, true),
    };
    let template = match (flags >> 5) & 3 {
        0 => Template::command(&[b"GET", b"key:__rand_int__"]),
        1 => Template::command(&[b"SET", b"key:__rand_int__", b"xxx"]),
        _ => Template::inline(b"PING\r\n"),
    };
    let open_loop = (flags & 2 != 0).then_some(OpenLoop::per_connection(interval, 1, flags & 4 != 0));
    let plan = Arc::new(Plan {
        ..Plan::new(
            ConnConfig {
                handshake,
                pipeline,
                pipeline_mode,
                keepalive: flags & 1 != 0,
                open_loop,
                request_timeout: (flags & 0x80 != 0).then_some(interval * 64),
                reconnect,
                ..ConnConfig::default()
            },
            Workload { template, keys: KeySpace::Random { n: 1000 }, mix: None },
            Budget::new(budget),
            Stop::new(None, Duration::from_secs(2)),
        )
    });
    // One significant figure: latencies are not checked here, and small histograms keep the
    // fuzzer fast (a 3-figure one is ~360 KB to allocate and zero per input).
    let mut stats = Stats::new(Time::ZERO, 1, open_loop.is_some()).map_err(|e| format!("stats: {e}"))?;
    let mut conn = Client::new(plan, 0);
    let mut now = Time::ZERO;

    // What this socket's connection offered for sending, in order (`written` of it is written).
    let mut stream: Vec<u8> = Vec::new();
    let mut written = 0usize;
    // Requests in `stream[..counted]`, plus those of earlier sockets.
    let mut counted = 0usize;
    let mut encoded = 0u64;
    let mut advanced = 0u64;
    let mut reconnect_pending = false;
    let mut ended: Option<(Event, u64)> = None;

    conn.handle_connected(0, now, &mut stats);
    for step in 0usize.. {
        if script.0.is_empty() {
            break;
        }
        now += Duration::from_nanos(u64::from(script.u16()));
        if conn.poll_timeout(0).is_some_and(|t| t <= now) {
            conn.handle_timeout(0, now);
        }
        let op = script.byte();
        let what = match op & 3 {
            0 => {
                let input = script.take(1 + usize::from(op >> 2));
                conn.handle_input(0, input, now, &mut stats);
                "handle_input"
            }
            1 => {
                let amount = usize::from(script.u16());
                if let Some(bytes) = conn.poll_transmit(0, now) {
                    if let Some((ev, _)) = &ended {
                        return Err(format!(
                            "step {step}: poll_transmit offered {} bytes after {ev:?}",
                            bytes.len()
                        ));
                    }
                    if reconnect_pending {
                        return Err(format!(
                            "step {step}: poll_transmit offered {} bytes after Reconnect, before handle_connected",
                            bytes.len()
                        ));
                    }
                    let unwritten = &stream[written..];
                    if !bytes.starts_with(unwritten) {
                        return Err(format!(
                            "step {step}: poll_transmit changed unwritten bytes: had {:?}, now offers {:?}",
                            String::from_utf8_lossy(unwritten),
                            String::from_utf8_lossy(bytes)
                        ));
                    }
                    let fresh = bytes[unwritten.len()..].to_vec();
                    let n = amount.min(bytes.len());
                    stream.extend_from_slice(&fresh);
                    written += n;
                    advanced += n as u64;
                    conn.advance_transmit(0, n, now, &mut stats);
                }
                "poll_transmit"
            }
            2 => {
                conn.handle_closed(0, now);
                "handle_closed"
            }
            _ => {
                if reconnect_pending {
                    reconnect_pending = false;
                    stream.clear();
                    written = 0;
                    counted = 0;
                    conn.handle_connected(0, now, &mut stats);
                }
                "handle_connected"
            }
        };
        while let Some(ev) = conn.poll_event(0) {
            if let Some((end, _)) = &ended {
                return Err(format!("step {step} ({what}): event {ev:?} after {end:?}"));
            }
            match ev {
                Event::Reconnect => reconnect_pending = true,
                Event::Finished | Event::Failed { .. } => ended = Some((ev, stats.requests)),
                Event::Ready => {}
                // Future events: nothing to check.
                #[allow(unreachable_patterns)]
                _ => {}
            }
        }

        // Counted incrementally: rescanning the whole stream each step is quadratic.
        while let Some((name, len)) = split_request(&stream[counted..]) {
            if len == 0 {
                break;
            }
            counted += len;
            if !matches!(name.as_slice(), b"AUTH" | b"SELECT" | b"HELLO" | b"CLIENT") {
                encoded += 1;
            }
        }
        let context = || format!("step {step} ({what}) at {now:?}");
        if conn.in_flight(0) > pipeline as usize {
            return Err(format!("{}: {} in flight, -P {pipeline}", context(), conn.in_flight(0)));
        }
        // Requests are encoded only inside `poll_transmit`, which offers them at once: `stream`
        // holds every one.
        if stats.requests > encoded {
            return Err(format!("{}: {} requests completed, {encoded} encoded", context(), stats.requests));
        }
        if encoded > budget {
            return Err(format!("{}: {encoded} requests encoded, budget {budget}", context()));
        }
        if stats.bytes_sent != advanced {
            return Err(format!(
                "{}: bytes_sent {}, advance_transmit total {advanced}",
                context(),
                stats.bytes_sent
            ));
        }
        if let Some((end, requests)) = &ended {
            if stats.requests != *requests {
                return Err(format!(
                    "{}: requests went from {requests} to {} after {end:?}",
                    context(),
                    stats.requests
                ));
            }
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    fn config(pipeline: u8, flags: u8, budget: u8) -> Vec<u8> {
        vec![pipeline - 1, flags, budget, 0]
    }
    fn transmit_all(s: &mut Vec<u8>) {
        s.extend_from_slice(&[0, 0, 1, 0xff, 0xff]);
    }
    fn feed(s: &mut Vec<u8>, bytes: &[u8]) {
        for chunk in bytes.chunks(64) {
            s.extend_from_slice(&[10, 0, ((chunk.len() as u8 - 1) << 2)]);
            s.extend_from_slice(chunk);
        }
    }

    #[test]
    fn drive_arbitrary_empty_and_tiny_inputs() {
        drive_arbitrary(&[]).unwrap();
        for b in 0..=255 {
            drive_arbitrary(&[b]).unwrap();
            drive_arbitrary(&[b; 5]).unwrap();
            drive_arbitrary(&[b; 64]).unwrap();
        }
    }

    #[test]
    fn drive_arbitrary_valid_replies_complete_the_budget() {
        // -P 4, keepalive, no handshake, closed loop, 8 requests.
        let mut s = config(4, 1, 8);
        for _ in 0..2 {
            transmit_all(&mut s);
            feed(&mut s, &b"+OK\r\n".repeat(4));
        }
        transmit_all(&mut s);
        let stats = drive(&s).unwrap();
        assert_eq!(stats.requests, 8);
        assert_eq!(stats.connections_opened, 1);
    }

    #[test]
    fn drive_arbitrary_reconnects_with_handshake() {
        // -P 2 -k 0, AUTH, 4 requests: two sockets, each AUTH, then (once it is answered) 2
        // requests.
        let mut s = config(2, 1 << 3, 4);
        for _ in 0..2 {
            transmit_all(&mut s);
            feed(&mut s, b"+OK\r\n");
            transmit_all(&mut s);
            feed(&mut s, &b"+OK\r\n".repeat(2));
            s.extend_from_slice(&[0, 0, 3]); // handle_connected after Reconnect
        }
        transmit_all(&mut s);
        let stats = drive(&s).unwrap();
        assert_eq!(stats.requests, 4);
        assert_eq!(stats.connections_opened, 2);
    }

    #[test]
    fn drive_arbitrary_garbage_fails_cleanly() {
        let mut s = config(16, 1, 100);
        transmit_all(&mut s);
        feed(&mut s, b"\x00not resp at all\r\n");
        transmit_all(&mut s);
        feed(&mut s, b"+OK\r\n");
        s.extend_from_slice(&[0, 0, 2]); // handle_closed
        let stats = drive(&s).unwrap();
        assert_eq!(stats.requests, 0);
    }

    #[test]
    fn drive_arbitrary_open_loop_with_full_handshake() {
        // -P 8, keepalive, open loop every 1 µs, AUTH + CLIENT TRACKING + SELECT + HELLO, 5 requests.
        // The requests go once the handshake is answered; the schedule starts then.
        let mut s = config(8, 1 | 2 | (3 << 3), 5);
        transmit_all(&mut s);
        feed(&mut s, &b"+OK\r\n".repeat(3));
        feed(&mut s, b"%1\r\n+proto\r\n:3\r\n"); // HELLO's answer: the server's properties
        for _ in 0..3 {
            s.extend_from_slice(&[0xff, 0xff, 1, 0xff, 0xff]); // 65 µs later, transmit
        }
        feed(&mut s, &b"$3\r\nabc\r\n".repeat(5));
        transmit_all(&mut s);
        let stats = drive(&s).unwrap();
        assert_eq!(stats.requests, 5);
        assert!(stats.service.is_some());
    }

    /// Found by the proptests below: an ended connection offered its unwritten bytes (a server
    /// that answered or closed before the request was fully written).
    #[test]
    fn no_stale_transmit_after_end() {
        // -P 1 -k 0, AUTH, budget 0: the AUTH reply arrives before AUTH is written -> Finished.
        let mut s = config(1, 1 << 3, 0);
        feed(&mut s, b"+OK\r\n");
        transmit_all(&mut s);
        drive(&s).unwrap();
        // The server closes before AUTH is written -> Failed(Closed).
        let mut s = config(1, 1 << 3, 0);
        s.extend_from_slice(&[0, 0, 2]);
        transmit_all(&mut s);
        drive(&s).unwrap();
        // -P 1 -k 0, 2 requests: the reply arrives before the request is written -> Reconnect.
        let mut s = config(1, 0, 2);
        s.extend_from_slice(&[0, 0, 1, 0, 0]); // poll_transmit, write nothing
        feed(&mut s, b"+OK\r\n");
        transmit_all(&mut s);
        drive(&s).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn drive_arbitrary_holds_on_any_bytes(data in proptest::collection::vec(any::<u8>(), 0..1024)) {
            if let Err(e) = drive_arbitrary(&data) {
                return Err(TestCaseError::fail(e));
            }
        }

        /// Mostly well-formed replies, so scripts get past the handshake and complete requests.
        #[test]
        fn drive_arbitrary_holds_on_reply_like_scripts(
            head in proptest::collection::vec(any::<u8>(), 4),
            steps in proptest::collection::vec((any::<u16>(), 0u8..4, any::<u16>(), 0usize..4), 0..200),
        ) {
            let replies: [&[u8]; 4] = [b"+OK\r\n", b"$3\r\nabc\r\n", b"-ERR no\r\n", b":1\r\n"];
            let mut s = head;
            for (dt, op, amount, reply) in steps {
                s.extend_from_slice(&dt.to_le_bytes());
                match op {
                    0 => {
                        let r = replies[reply];
                        s.push(((r.len() as u8) - 1) << 2);
                        s.extend_from_slice(r);
                    }
                    1 => {
                        s.push(1);
                        s.extend_from_slice(&amount.to_le_bytes());
                    }
                    // handle_closed rarely: it ends the script's interesting part.
                    2 if amount % 16 == 0 => s.push(2),
                    _ => s.push(3),
                }
            }
            if let Err(e) = drive_arbitrary(&s) {
                return Err(TestCaseError::fail(e));
            }
        }

    }
}
