//! Deterministic simulation: connections driven against a scripted fake server on a virtual
//! clock, with no sockets. Used by the tests and the fuzz targets; built only for tests or with
//! the `testing` feature.
//!
//! The fake server is a single queue, like Redis' one thread: a request that arrives at `t` starts
//! when the server is free (and not stalled) and its reply leaves `service` later.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::client::Client;
use crate::conn::{Event, Plan};
use crate::series::Collector;
use crate::stats::Stats;
use crate::Time;

/// A scripted server.
#[derive(Clone, Debug)]
pub struct FakeServer {
    /// The reply to every benchmark request.
    pub reply: Vec<u8>,
    /// The reply to every handshake command (`AUTH`, `SELECT`, `HELLO`, `CLIENT`).
    pub handshake_reply: Vec<u8>,
    /// Server time per request.
    pub service: Duration,
    /// Windows `[from, to)` in which the server does nothing (a SIGSTOP).
    pub stalls: Vec<(Time, Time)>,
    /// Serve every request independently: its reply leaves `service` after it arrived, whatever
    /// else is queued. Not how Redis behaves; it makes every latency exactly `service` for model
    /// tests.
    pub parallel: bool,
}

impl FakeServer {
    /// A server answering every request with `reply` after `service`.
    pub fn new(reply: &[u8], service: Duration) -> FakeServer {
        FakeServer {
            reply: reply.to_vec(),
            handshake_reply: b"+OK\r\n".to_vec(),
            service,
            stalls: Vec::new(),
            parallel: false,
        }
    }
}

/// What a simulated run produced.
#[derive(Debug)]
pub struct SimResult {
    /// The merged stats of the test.
    pub stats: Stats,
    /// Every event of every connection, in order, with its connection index.
    pub events: Vec<(usize, Event)>,
    /// Benchmark requests the server received (handshake commands excluded).
    pub requests_received: u64,
    /// The virtual time when the run ended.
    pub end: Time,
}

/// Server-side state of one connection.
#[derive(Default)]
struct Link {
    /// Received bytes not yet split into requests.
    inbox: Vec<u8>,
    /// Replies with the time they reach the client.
    outbox: VecDeque<(Time, Vec<u8>)>,
    open: bool,
}

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

/// Runs `plan` on `connections` connections against `server` until every connection has ended
/// (finished, failed or abandoned). The plan's [`crate::plan::Stop`] is the run control, as in a
/// real run; `limit` of virtual time is a Ctrl-C: [`crate::plan::Stop::request`] then, which
/// the connections learn of as a backend tells them (they are asked for their timeouts again).
/// Histograms get `sigfig` significant figures.
pub fn run(
    plan: Arc<Plan>,
    connections: usize,
    server: &FakeServer,
    sigfig: u8,
    limit: Duration,
) -> SimResult {
    match run_inner(plan, connections, server, sigfig, limit, false) {
        Ok(r) => r,
        // Unreachable: only the checks return `Err`, and they are off.
        Err(e) => panic!("{e}"),
    }
}

/// [`run`], checking after every step that requests are conserved: the server received as many
/// benchmark requests as the client completed plus holds in flight (every byte is written at once
/// here, so nothing is half sent), and no connection has more than `pipeline` in flight.
pub fn run_checked(
    plan: Arc<Plan>,
    connections: usize,
    server: &FakeServer,
    sigfig: u8,
    limit: Duration,
) -> Result<SimResult, String> {
    run_inner(plan, connections, server, sigfig, limit, true)
}

fn run_inner(
    plan: Arc<Plan>,
    connections: usize,
    server: &FakeServer,
    sigfig: u8,
    limit: Duration,
    check: bool,
) -> Result<SimResult, String> {
    let mut stats = plan.new_stats(Time::ZERO, sigfig).expect("valid precision");
    // One loop's series, handed to a collector as a backend's loop does.
    let mut series = Collector::new(1);
    let mut conns: Vec<Client> = (0..connections).map(|i| Client::new(plan.clone(), i as u64)).collect();
    let mut links: Vec<Link> = (0..connections).map(|_| Link::default()).collect();
    let mut events = Vec::new();
    let mut requests_received = 0;
    let mut server_free = Time::ZERO;
    let mut now = Time::ZERO;
    let deadline = Time::ZERO + limit;
    for (c, l) in conns.iter_mut().zip(&mut links) {
        c.handle_connected(0, now, &mut stats);
        l.open = true;
    }
    loop {
        if now >= deadline {
            plan.stop.request(deadline);
        }
        for c in &mut conns {
            if c.poll_timeout(0).is_some_and(|t| t <= now) {
                c.handle_timeout(0, now);
            }
        }
        // Drain every connection's outputs (the drain rule).
        for (i, (c, l)) in conns.iter_mut().zip(&mut links).enumerate() {
            loop {
                while let Some(bytes) = c.poll_transmit(0, now) {
                    let n = bytes.len();
                    l.inbox.extend_from_slice(bytes);
                    c.advance_transmit(0, n, now, &mut stats);
                }
                let Some(ev) = c.poll_event(0) else { break };
                match ev {
                    Event::Reconnect => {
                        *l = Link { open: true, ..Link::default() };
                        c.handle_connected(0, now, &mut stats);
                    }
                    Event::Finished | Event::Failed { .. } | Event::Abandoned { .. } => l.open = false,
                    _ => {}
                }
                events.push((i, ev));
            }
            // The server reads what arrived.
            while let Some((name, len)) = split_request(&l.inbox) {
                l.inbox.drain(..len);
                let handshake = matches!(name.as_slice(), b"AUTH" | b"SELECT" | b"HELLO" | b"CLIENT");
                let mut start = if server.parallel { now } else { now.max(server_free) };
                for &(from, to) in &server.stalls {
                    if start >= from && start < to {
                        start = to;
                    }
                }
                let done = start + server.service;
                if !server.parallel {
                    server_free = done;
                }
                let reply = if handshake { &server.handshake_reply } else { &server.reply };
                if !handshake {
                    requests_received += 1;
                }
                l.outbox.push_back((done, reply.clone()));
            }
        }
        if check {
            let in_flight: usize = conns.iter().map(|c| c.in_flight(0)).sum();
            if requests_received != stats.requests + in_flight as u64 {
                return Err(format!(
                    "at {now:?}: server received {requests_received}, client completed {} + {in_flight} in flight",
                    stats.requests
                ));
            }
            let window = plan.conn.pipeline.max(1) as usize;
            if let Some((i, c)) = conns.iter().enumerate().find(|(_, c)| c.in_flight(0) > window) {
                return Err(format!(
                    "at {now:?}: connection {i} has {} in flight, -P {window}",
                    c.in_flight(0)
                ));
            }
        }
        // The next moment anything happens.
        let next_reply = links.iter().filter(|l| l.open).filter_map(|l| l.outbox.front().map(|r| r.0)).min();
        let next_timer = conns.iter().filter_map(|c| c.poll_timeout(0)).min();
        // The limit is a moment too: the stop asked for then.
        let stops_later = match plan.stop.at() {
            Some(t) => t > deadline,
            None => true,
        };
        let next_stop = (stops_later && now < deadline).then_some(deadline);
        let Some(next) = [next_reply, next_timer, next_stop].into_iter().flatten().min() else {
            break; // every connection has ended, or waits for what never comes
        };
        if links.iter().all(|l| !l.open) {
            break;
        }
        now = now.max(next);
        series.publish(0, &mut stats, Some(now));
        for (c, l) in conns.iter_mut().zip(&mut links) {
            let mut bytes = Vec::new();
            while l.outbox.front().is_some_and(|r| r.0 <= now) {
                if let Some((_, r)) = l.outbox.pop_front() {
                    bytes.extend_from_slice(&r);
                }
            }
            if !bytes.is_empty() && l.open {
                c.handle_input(0, &bytes, now, &mut stats);
            }
        }
    }
    series.publish(0, &mut stats, None);
    stats.series = series.seconds;
    Ok(SimResult { stats, events, requests_received, end: now })
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
    let reconnect = (byte3 & 0x80 != 0).then_some(Backoff { first: interval, max: interval * 4 });
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
        conn: ConnConfig {
            handshake,
            pipeline,
            pipeline_mode,
            keepalive: flags & 1 != 0,
            idle: false,
            open_loop,
            request_timeout: (flags & 0x80 != 0).then_some(interval * 64),
            reconnect,
        },
        workload: Workload { template, keys: KeySpace::Random { n: 1000 }, mix: None },
        budget: Budget::new(budget),
        stop: Stop::new(None, Duration::from_secs(2)),
        seed: 1,
        connections: 1,
        measure_from: Time::ZERO,
        series: false,
        cluster: None,
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
    use crate::conn::{Budget, ConnConfig, ConnError, Handshake, OpenLoop, Stop, Workload};
    use crate::template::{KeySpace, Template};
    use proptest::prelude::*;

    fn plan(
        n: u64,
        pipeline: u32,
        keepalive: bool,
        handshake: Handshake,
        open_loop: Option<OpenLoop>,
    ) -> Arc<Plan> {
        Arc::new(Plan {
            conn: ConnConfig {
                handshake,
                pipeline,
                pipeline_mode: crate::plan::PipelineMode::Window,
                keepalive,
                idle: false,
                open_loop,
                request_timeout: None,
                reconnect: None,
            },
            workload: Workload {
                template: Template::command(&[b"GET", b"key:__rand_int__"]),
                keys: KeySpace::Random { n: 1000 },
                mix: None,
            },
            budget: if n == u64::MAX { Budget::unlimited() } else { Budget::new(n) },
            stop: Stop::new(None, Duration::from_secs(2)),
            seed: 7,
            connections: 4,
            measure_from: Time::ZERO,
            series: false,
            cluster: None,
        })
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn a_stalled_server_trips_the_request_timeout() {
        // The server stops at 1 ms for a minute; every connection gives up 50 ms after its
        // oldest request was queued, not a minute later.
        let mut server = FakeServer::new(b"+OK\r\n", us(10));
        server.stalls.push((Time::from_micros(1_000), Time::from_micros(60_000_000)));
        let mut p = plan(u64::MAX, 4, true, Handshake::default(), None);
        Arc::get_mut(&mut p).unwrap().conn.request_timeout = Some(Duration::from_millis(50));
        let r = run(p, 3, &server, 3, Duration::from_secs(120));
        let timeouts = r
            .events
            .iter()
            .filter(|e| {
                matches!(e.1, Event::Failed { error: ConnError::Timeout { handshake: false, .. }, .. })
            })
            .count();
        assert_eq!(timeouts, 3, "{:?}", r.events);
        assert!(r.end < Time::from_micros(52_000), "ended at {:?}", r.end);
        assert!(r.stats.requests > 0);
    }

    #[test]
    fn exact_budget_with_pipelining() {
        let server = FakeServer::new(b"$3\r\nVXK\r\n", us(10));
        let r = run(plan(100, 16, true, Handshake::default(), None), 3, &server, 3, Duration::from_secs(10));
        assert_eq!(r.stats.requests, 100);
        assert_eq!(r.requests_received, 100);
        assert_eq!(r.events.iter().filter(|e| e.1 == Event::Finished).count(), 3);
    }

    #[test]
    fn latency_is_per_request_not_per_batch() {
        // One connection, a batch of 4 served one after another: replies leave 10, 20, 30, 40 µs
        // after the batch was sent, and each request gets its own latency.
        let server = FakeServer::new(b"+OK\r\n", us(10));
        let r = run(plan(4, 4, true, Handshake::default(), None), 1, &server, 3, Duration::from_secs(1));
        assert_eq!(r.stats.requests, 4);
        assert_eq!(r.stats.latency.min(), 10);
        assert_eq!(r.stats.latency.max(), 40);
        assert_eq!(r.stats.latency.mean(), 25.0);
    }

    #[test]
    fn handshake_is_sent_and_checked() {
        let hs = Handshake::new(Some("bench"), Some("secret"), false, 2, true);
        assert_eq!(hs.len(), 3);
        let server = FakeServer::new(b"+OK\r\n", us(5));
        let r = run(plan(10, 1, true, hs.clone(), None), 1, &server, 3, Duration::from_secs(1));
        assert_eq!(r.stats.requests, 10);
        assert_eq!(r.events[0].1, Event::Ready);

        let mut bad = FakeServer::new(b"+OK\r\n", us(5));
        bad.handshake_reply = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n".to_vec();
        let r = run(plan(10, 1, true, hs, None), 1, &bad, 3, Duration::from_secs(1));
        assert_eq!(r.stats.requests, 0);
        match &r.events[0].1 {
            Event::Failed { error: ConnError::Handshake { command, message }, .. } => {
                assert_eq!(*command, "AUTH");
                assert!(message.starts_with("WRONGPASS"), "{message}");
            }
            other => panic!("expected a handshake failure, got {other:?}"),
        }
    }

    #[test]
    fn error_replies_are_counted_by_prefix() {
        let server =
            FakeServer::new(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", us(5));
        let r = run(plan(20, 2, true, Handshake::default(), None), 2, &server, 3, Duration::from_secs(1));
        assert_eq!(r.stats.requests, 20);
        assert_eq!(r.stats.errors.total(), 20);
        assert_eq!(r.stats.errors.kinds()[0].prefix, "WRONGTYPE");
    }

    #[test]
    fn no_keepalive_reconnects_after_each_batch() {
        let server = FakeServer::new(b"+OK\r\n", us(5));
        let hs = Handshake::new(None, None, false, 3, false);
        let r = run(plan(20, 4, false, hs, None), 1, &server, 3, Duration::from_secs(1));
        assert_eq!(r.stats.requests, 20);
        // 5 batches of 4: 5 sockets, so 4 reconnects, each re-sending SELECT.
        assert_eq!(r.stats.connections_opened, 5);
        assert_eq!(r.events.iter().filter(|e| e.1 == Event::Reconnect).count(), 4);
        assert_eq!(r.events.iter().filter(|e| e.1 == Event::Ready).count(), 5);
    }

    #[test]
    fn open_loop_stall_shows_in_corrected_latency_only() {
        // 1 connection, 10k requests/s for 2 s, 10 µs service, a 100 ms stall at t = 1 s.
        let ol = OpenLoop::per_connection(us(100), 4, false);
        let mut server = FakeServer::new(b"+OK\r\n", us(10));
        server.stalls.push((Time::from_micros(1_000_000), Time::from_micros(1_100_000)));
        let r = run(
            plan(20_000, 10_000, true, Handshake::default(), Some(ol)),
            1,
            &server,
            3,
            Duration::from_secs(3),
        );
        assert_eq!(r.stats.requests, 20_000);
        let service = r.stats.service.as_ref().unwrap();
        // The stall delays ~1000 requests by up to 100 ms: 5% of the run.
        assert!(r.stats.latency.value_at_quantile(0.99) > 50_000, "corrected p99 shows the stall");
        assert!(r.stats.latency.max() >= 99_000);
        // Their service time (from the actual send, which happened on time here: the window is
        // wide) still includes the stall, but the requests sent after the stall do not.
        assert!(service.value_at_quantile(0.50) <= 20);
    }

    #[test]
    fn open_loop_late_sends_keep_intended_time() {
        // The window (P = 1) is the bottleneck during the stall: requests are sent late. Service
        // time counts from the late send, corrected latency from the schedule.
        let ol = OpenLoop::per_connection(us(100), 4, false);
        let mut server = FakeServer::new(b"+OK\r\n", us(10));
        server.stalls.push((Time::from_micros(500_000), Time::from_micros(600_000)));
        let r =
            run(plan(10_000, 1, true, Handshake::default(), Some(ol)), 1, &server, 3, Duration::from_secs(3));
        assert_eq!(r.stats.requests, 10_000);
        let service = r.stats.service.as_ref().unwrap();
        assert!(r.stats.latency.value_at_quantile(0.99) > 20_000);
        // Only the one request in flight during the stall has a long service time.
        assert!(service.value_at_quantile(0.99) <= 20, "p99 service {}", service.value_at_quantile(0.99));
        assert!(service.max() >= 99_000);
    }

    #[test]
    fn poisson_schedule_has_the_requested_mean() {
        let ol = OpenLoop::per_connection(us(100), 4, true);
        let server = FakeServer::new(b"+OK\r\n", us(1));
        let r = run(
            plan(20_000, 64, true, Handshake::default(), Some(ol)),
            1,
            &server,
            3,
            Duration::from_secs(10),
        );
        assert_eq!(r.stats.requests, 20_000);
        // 20 000 gaps of mean 100 µs: 2 s, within a few percent.
        let secs = r.end.as_nanos() as f64 / 1e9;
        assert!((1.9..2.1).contains(&secs), "{secs}");
    }

    // ---- run control: the test's stop, the drain grace, the shared rate ----

    fn with_stop(p: Arc<Plan>, at: Option<Time>, grace: Duration) -> Arc<Plan> {
        let mut p = Arc::try_unwrap(p).expect("fresh plan");
        p.stop = Stop::new(at, grace);
        Arc::new(p)
    }

    fn ended(r: &SimResult) -> (usize, usize, usize) {
        let count = |f: fn(&Event) -> bool| r.events.iter().filter(|e| f(&e.1)).count();
        (
            count(|e| *e == Event::Finished),
            count(|e| matches!(e, Event::Abandoned { .. })),
            count(|e| matches!(e, Event::Failed { .. })),
        )
    }

    #[test]
    fn a_duration_stop_ends_a_closed_loop_test_at_its_time() {
        // --duration 1s, closed loop, P 4 on 3 connections, 100 µs per request at one server:
        // requests stop being handed out at 1 s, those in flight are answered, every connection
        // finishes, and the last reply comes within one queue's worth of the stop.
        let server = FakeServer::new(b"+OK\r\n", us(100));
        let p = with_stop(
            plan(u64::MAX, 4, true, Handshake::default(), None),
            Some(Time::from_micros(1_000_000)),
            Duration::from_secs(2),
        );
        let r = run_checked(p, 3, &server, 3, Duration::from_secs(60)).unwrap();
        assert_eq!(ended(&r), (3, 0, 0), "{:?}", r.events);
        assert!(r.stats.end >= Time::from_micros(1_000_000), "{:?}", r.stats.end);
        assert!(r.stats.end <= Time::from_micros(1_000_000 + 12 * 100), "{:?}", r.stats.end);
        // One server, 100 µs each: the whole second was served, nothing more.
        assert!((10_000..=10_012).contains(&r.stats.requests), "{}", r.stats.requests);
        assert_eq!(r.requests_received, r.stats.requests);
    }

    #[test]
    fn the_total_rate_is_shared_by_the_connections() {
        // --rps 1000 over 10 connections for 3 s: each sends every 10 ms, 3000 requests in all,
        // 1000 in each second of the series.
        let ol = OpenLoop { rate: 1000.0, poisson: false };
        let mut p = plan(u64::MAX, 1, true, Handshake::default(), Some(ol));
        Arc::get_mut(&mut p).unwrap().connections = 10;
        Arc::get_mut(&mut p).unwrap().series = true;
        let p = with_stop(p, Some(Time::from_micros(3_000_000)), Duration::from_secs(2));
        let server = FakeServer { parallel: true, ..FakeServer::new(b"+OK\r\n", us(50)) };
        let r = run_checked(p, 10, &server, 3, Duration::from_secs(60)).unwrap();
        assert_eq!(ended(&r), (10, 0, 0));
        assert_eq!(r.stats.requests, 3000);
        let per_second: Vec<u64> = r.stats.series.iter().map(|s| s.requests).collect();
        assert_eq!(per_second, [1000, 1000, 1000]);
        assert_eq!(r.stats.latency.max(), 50, "every request on time, 50 µs each");
    }

    #[test]
    fn a_stop_asked_for_abandons_what_is_unanswered_after_the_grace() {
        // The server stops at 0.5 s for good; Ctrl-C at 1 s (the limit). Nothing can drain: every
        // connection is abandoned exactly 2 s (the grace) later, its requests not counted.
        let mut server = FakeServer::new(b"+OK\r\n", us(10));
        server.stalls.push((Time::from_micros(500_000), Time::MAX));
        let r = run_checked(
            plan(u64::MAX, 4, true, Handshake::default(), None),
            3,
            &server,
            3,
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(ended(&r), (0, 3, 0), "{:?}", r.events);
        let abandoned: usize = r
            .events
            .iter()
            .map(|e| match e.1 {
                Event::Abandoned { in_flight } => in_flight,
                _ => 0,
            })
            .sum();
        assert_eq!(abandoned, 12, "P 4 on each of 3 connections");
        assert_eq!(r.end, Time::from_micros(3_000_000));
        assert_eq!(r.requests_received, r.stats.requests + 12);
    }

    #[test]
    fn a_stop_that_drains_in_the_grace_abandons_nothing() {
        // A 1.5 s stall from 0.5 s and Ctrl-C at 1 s: the requests in flight are answered at 2 s,
        // inside the grace; every connection finishes then.
        let mut server = FakeServer::new(b"+OK\r\n", us(10));
        server.stalls.push((Time::from_micros(500_000), Time::from_micros(2_000_000)));
        let r = run_checked(
            plan(u64::MAX, 2, true, Handshake::default(), None),
            2,
            &server,
            3,
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(ended(&r), (2, 0, 0), "{:?}", r.events);
        assert!(r.end < Time::from_micros(2_001_000), "{:?}", r.end);
        assert_eq!(r.requests_received, r.stats.requests);
    }

    #[test]
    fn a_stop_reaches_connections_waiting_for_their_next_arrival() {
        // One request per connection every 10 s; Ctrl-C at 1 s ends the test at 1 s, not at the
        // next arrival.
        let ol = OpenLoop::per_connection(Duration::from_secs(10), 4, false);
        let server = FakeServer::new(b"+OK\r\n", us(10));
        let r = run_checked(
            plan(u64::MAX, 1, true, Handshake::default(), Some(ol)),
            4,
            &server,
            3,
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(ended(&r), (4, 0, 0), "{:?}", r.events);
        assert_eq!(r.end, Time::from_micros(1_000_000));
        // First arrivals are spread over one interval (0, 2.5, 5, 7.5 s): only the first came.
        assert_eq!(r.stats.requests, 1);
    }

    #[test]
    fn idle_connections_wait_for_the_stop() {
        let mut p = plan(u64::MAX, 1, true, Handshake::new(None, Some("pw"), false, 0, false), None);
        Arc::get_mut(&mut p).unwrap().conn.idle = true;
        let server = FakeServer::new(b"+OK\r\n", us(10));
        let r = run_checked(p, 3, &server, 3, Duration::from_secs(5)).unwrap();
        assert_eq!(ended(&r), (3, 0, 0), "{:?}", r.events);
        assert_eq!(r.end, Time::from_micros(5_000_000));
        assert_eq!((r.stats.requests, r.requests_received), (0, 0));
    }

    // ---- drive_arbitrary ----

    /// Script builders for `drive_arbitrary`.
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
        // -P 2 -k 0, AUTH, 4 requests: two sockets, each AUTH + 2 requests.
        let mut s = config(2, 1 << 3, 4);
        for _ in 0..2 {
            transmit_all(&mut s);
            feed(&mut s, &b"+OK\r\n".repeat(3));
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
        let mut s = config(8, 1 | 2 | (3 << 3), 5);
        for _ in 0..3 {
            s.extend_from_slice(&[0xff, 0xff, 1, 0xff, 0xff]); // 65 µs later, transmit
        }
        feed(&mut s, &b"+OK\r\n".repeat(4));
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

        // ---- pipeline model ----

        /// sent = completed + in flight at every step; exactly `n` completed and received; with a
        /// server that never queues, every latency is exactly the service time.
        #[test]
        fn pipeline_model(
            n in 0u64..500,
            pipeline in 1u32..32,
            connections in 1usize..5,
            keepalive in any::<bool>(),
            service_us in 1u64..2000,
            parallel in any::<bool>(),
        ) {
            let mut server = FakeServer::new(b"$3\r\nVXK\r\n", us(service_us));
            server.parallel = parallel;
            let p = plan(n, pipeline, keepalive, Handshake::default(), None);
            let r = run_checked(p, connections, &server, 3, Duration::from_secs(3600))
                .map_err(TestCaseError::fail)?;
            prop_assert_eq!(r.stats.requests, n);
            prop_assert_eq!(r.requests_received, n);
            prop_assert_eq!(r.events.iter().filter(|e| e.1 == Event::Finished).count(), connections);
            if parallel && n > 0 {
                prop_assert_eq!(r.stats.latency.min(), service_us);
                prop_assert_eq!(r.stats.latency.max(), service_us);
            }
            if !parallel && n > 0 {
                // One queue: nothing is faster than one service time, nothing slower than all
                // requests that can be queued at once.
                prop_assert!(r.stats.latency.min() >= service_us);
                let queued = (pipeline as u64 * connections as u64).min(n);
                prop_assert!(r.stats.latency.max() <= r.stats.latency.highest_equivalent(service_us * queued));
            }
        }
    }
}
