//! Deterministic simulation: connections driven against a scripted fake server on a virtual
//! clock, with no sockets. Used by the tests, the fuzz targets and the micro-benchmark.
//!
//! The fake server is a single queue, like Redis' one thread: a request that arrives at `t` starts
//! when the server is free (and not stalled) and its reply leaves `service` later.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::conn::{Connection, Event, Plan};
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
}

impl FakeServer {
    /// A server answering every request with `reply` after `service`.
    pub fn new(reply: &[u8], service: Duration) -> FakeServer {
        FakeServer {
            reply: reply.to_vec(),
            handshake_reply: b"+OK\r\n".to_vec(),
            service,
            stalls: Vec::new(),
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

/// Runs `plan` on `connections` connections against `server` until every connection finishes or
/// fails, or `limit` of virtual time passes (then the budget is stopped and in-flight requests
/// drain). Histograms get `sigfig` significant figures.
pub fn run(
    plan: Arc<Plan>,
    connections: usize,
    server: &FakeServer,
    sigfig: u8,
    limit: Duration,
) -> SimResult {
    let open_loop = plan.conn.open_loop.is_some();
    let mut stats = Stats::new(Time::ZERO, sigfig, open_loop).expect("valid precision");
    let mut conns: Vec<Connection> =
        (0..connections).map(|i| Connection::new(plan.clone(), i as u64)).collect();
    let mut links: Vec<Link> = (0..connections).map(|_| Link::default()).collect();
    let mut events = Vec::new();
    let mut requests_received = 0;
    let mut server_free = Time::ZERO;
    let mut now = Time::ZERO;
    let deadline = Time::ZERO + limit;
    for (c, l) in conns.iter_mut().zip(&mut links) {
        c.handle_connected(now, &mut stats);
        l.open = true;
    }
    loop {
        if now >= deadline {
            plan.budget.stop();
        }
        // Drain every connection's outputs (the drain rule).
        for (i, (c, l)) in conns.iter_mut().zip(&mut links).enumerate() {
            loop {
                while let Some(bytes) = c.poll_transmit(now) {
                    let n = bytes.len();
                    l.inbox.extend_from_slice(bytes);
                    c.advance_transmit(n, now, &mut stats);
                }
                let Some(ev) = c.poll_event() else { break };
                match ev {
                    Event::Reconnect => {
                        *l = Link { open: true, ..Link::default() };
                        c.handle_connected(now, &mut stats);
                    }
                    Event::Finished | Event::Failed(_) => l.open = false,
                    _ => {}
                }
                events.push((i, ev));
            }
            // The server reads what arrived.
            while let Some((name, len)) = split_request(&l.inbox) {
                l.inbox.drain(..len);
                let handshake = matches!(name.as_slice(), b"AUTH" | b"SELECT" | b"HELLO" | b"CLIENT");
                let mut start = now.max(server_free);
                for &(from, to) in &server.stalls {
                    if start >= from && start < to {
                        start = to;
                    }
                }
                server_free = start + server.service;
                let reply = if handshake { &server.handshake_reply } else { &server.reply };
                if !handshake {
                    requests_received += 1;
                }
                l.outbox.push_back((server_free, reply.clone()));
            }
        }
        // The next moment anything happens.
        let next_reply = links.iter().filter(|l| l.open).filter_map(|l| l.outbox.front().map(|r| r.0)).min();
        let next_timer = conns.iter().filter_map(|c| c.poll_timeout()).min();
        let next = match (next_reply, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
        now = now.max(next);
        if now >= deadline && next_reply.is_none() && plan.budget.is_exhausted() {
            break;
        }
        for (c, l) in conns.iter_mut().zip(&mut links) {
            let mut bytes = Vec::new();
            while l.outbox.front().is_some_and(|r| r.0 <= now) {
                if let Some((_, r)) = l.outbox.pop_front() {
                    bytes.extend_from_slice(&r);
                }
            }
            if !bytes.is_empty() && l.open {
                c.handle_input(&bytes, now, &mut stats);
            }
        }
    }
    SimResult { stats, events, requests_received, end: now }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::{Budget, ConnConfig, ConnError, Handshake, OpenLoop, Workload};
    use crate::template::{KeySpace, Template};

    fn plan(
        n: u64,
        pipeline: u32,
        keepalive: bool,
        handshake: Handshake,
        open_loop: Option<OpenLoop>,
    ) -> Arc<Plan> {
        Arc::new(Plan {
            conn: ConnConfig { handshake, pipeline, keepalive, idle: false, open_loop },
            workload: Workload {
                template: Template::command(&[b"GET", b"key:__rand_int__"]),
                keys: KeySpace::Random { n: 1000 },
            },
            budget: if n == u64::MAX { Budget::unlimited() } else { Budget::new(n) },
            seed: 7,
            connections: 4,
        })
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
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
            Event::Failed(ConnError::Handshake { command, message }) => {
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
        let ol = OpenLoop { interval: us(100), poisson: false };
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
        let ol = OpenLoop { interval: us(100), poisson: false };
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
        let ol = OpenLoop { interval: us(100), poisson: true };
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
}
