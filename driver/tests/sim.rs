//! The real driver (`Link`'s drain and read rules, timeouts, `Next`, `--reconnect`) on virtual
//! time against the simulation's scripted server: the fake-server faults, `--timeout`, the stop
//! and its grace, `--reconnect`'s backoff and the open-loop schedule, each checked exactly (counts
//! and virtual times), with no sleeps. Each runs on mio's, smol's and uring's ways of waiting
//! (`Shape`), which must agree (`Opts::run`); the two places where they differ by design say so.
//! The e2e tests in tests/ run the same checks against real sockets on every backend, with
//! wall-clock bounds.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;

use respbench_core::dist::ValueSize;
use respbench_core::template::{Arg, KeySpace, Template, Values, SPLICE_FROM};
use respbench_core::{
    Backoff, Budget, ConnConfig, ConnError, Handshake, IoOp, OpenLoop, PipelineMode, Plan, Ramp, RampKind,
    Stop, Time, Workload,
};
use respbench_driver::sim::cluster::ClusterServer;
use respbench_driver::sim::{
    test_run, Action, Command, Happening, Server, Shape, Sim, SimResult, SocketConfig,
};
use respbench_driver::READ_BUF;

const GRACE: Duration = Duration::from_secs(2);
/// The command line's `--reconnect` backoff.
const BACKOFF: Backoff = Backoff::doubling(Duration::from_millis(10), Duration::from_secs(1));

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn at_us(n: u64) -> Time {
    Time::from_micros(n)
}

fn at_ms(n: u64) -> Time {
    Time::from_micros(n * 1_000)
}

/// The options of a test, as the command line would set them.
#[derive(Clone)]
struct Opts {
    /// `-n`; `None` with `--duration` or `-I`.
    n: Option<u64>,
    clients: usize,
    pipeline: u32,
    /// `--pipeline-mode`.
    mode: PipelineMode,
    keepalive: bool,
    handshake: Handshake,
    timeout: Option<Duration>,
    /// `--connect-timeout`.
    connect_timeout: Option<Duration>,
    /// `--reconnect-every`.
    reconnect_every: Option<u64>,
    reconnect: bool,
    /// `--reconnect`'s pacing.
    backoff: Backoff,
    rps: Option<f64>,
    /// `--arrival poisson`.
    poisson: bool,
    duration: Option<Duration>,
    series: bool,
    /// `-I`.
    idle: bool,
    /// `--warmup`: the test's figures start then, and `--duration` counts from it.
    warmup: Option<Duration>,
    /// `GET key:__rand_int__` over 1000 keys, not `PING`.
    get: bool,
    /// `SET key <value>` of this many bytes (`-t set -d N`), not `PING`.
    set: Option<usize>,
    /// A Ctrl-C then.
    interrupt: Option<Time>,
    /// The loop's read buffer.
    read_buf: usize,
    /// The open loop's wake-up grid ([`OpenLoop::slack`]); zero wakes at each intended time.
    slack: Duration,
    /// `--at`: events sent at these times (the scripted server does what they cause).
    events: Vec<Duration>,
    /// `--ramp`.
    ramp: Option<Ramp>,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            n: Some(5),
            clients: 1,
            pipeline: 1,
            mode: PipelineMode::Batch,
            keepalive: true,
            handshake: Handshake::default(),
            timeout: None,
            connect_timeout: None,
            reconnect_every: None,
            reconnect: false,
            backoff: BACKOFF,
            rps: None,
            poisson: false,
            duration: None,
            series: false,
            idle: false,
            warmup: None,
            get: false,
            set: None,
            interrupt: None,
            read_buf: READ_BUF,
            slack: Duration::ZERO,
            events: Vec::new(),
            ramp: None,
        }
    }
}

impl Opts {
    fn plan(&self) -> Arc<Plan> {
        Arc::new(Plan {
            connections: self.clients as u64,
            measure_from: Time::ZERO + self.warmup.unwrap_or_default(),
            series: self.series,
            fine: !self.events.is_empty(),
            ramp: self.ramp,
            ..Plan::new(
                ConnConfig {
                    handshake: self.handshake.clone(),
                    pipeline: self.pipeline,
                    pipeline_mode: self.mode,
                    keepalive: self.keepalive,
                    idle: self.idle,
                    open_loop: self.rps.map(|rate| OpenLoop {
                        rate,
                        poisson: self.poisson,
                        slack: self.slack,
                    }),
                    request_timeout: self.timeout,
                    connect_timeout: self.connect_timeout,
                    reconnect_every: self.reconnect_every,
                    reconnect: self.reconnect.then_some(self.backoff),
                },
                if let Some(d) = self.set {
                    let values = Values::new(&ValueSize::Fixed(d));
                    Workload {
                        template: Template::with_values(
                            &[Arg::Bytes(b"SET"), Arg::Bytes(b"key"), Arg::Value],
                            &values,
                        ),
                        keys: KeySpace::Literal,
                        mix: None,
                    }
                } else if self.get {
                    Workload {
                        template: Template::command(&[b"GET", b"key:__rand_int__"]),
                        keys: KeySpace::Random { n: 1000 },
                        mix: None,
                    }
                } else {
                    Workload { template: Template::command(&[b"PING"]), keys: KeySpace::Literal, mix: None }
                },
                self.n.map_or_else(Budget::unlimited, Budget::new),
                Stop::new(self.duration.map(|d| Time::ZERO + self.warmup.unwrap_or_default() + d), GRACE),
            )
        })
    }

    /// The test on `shape`'s way of waiting, checked for what every run must end with.
    fn run_on(&self, server: Server, shape: Shape) -> SimResult {
        let run = test_run(self.plan(), self.clients);
        if !self.events.is_empty() {
            let mut c = run.progress.collector();
            c.track(&self.events);
            for (i, &at) in self.events.iter().enumerate() {
                c.event_sent(i, at);
            }
        }
        let mut sim = Sim::new(run, server).shape(shape).read_buf(self.read_buf).record_writes();
        if let Some(t) = self.interrupt {
            sim = sim.interrupt_at(t);
        }
        let r = sim.run().expect("the simulated run");
        assert_eq!(r.stuck, 0, "{shape:?}: connections left waiting for what never comes: {r:?}");
        // Every connection that went live left; the live figures got every request.
        assert_eq!(r.progress.live.load(Ordering::Relaxed), 0, "{shape:?}");
        assert_eq!(r.progress.completed.load(Ordering::Relaxed), r.outcome.stats.requests, "{shape:?}");
        r
    }

    /// The test on mio's, smol's and uring's ways of waiting: the same connections, counts,
    /// times and outcome on each. Gives mio's.
    fn run(&self, server: Server) -> SimResult {
        let mio = self.run_on(server.clone(), Shape::Mio);
        for shape in [Shape::Smol, Shape::Uring] {
            let other = self.run_on(server.clone(), shape);
            assert_eq!(Summary::of(&mio), Summary::of(&other), "the mio and {shape:?} shapes differ");
        }
        mio
    }
}

/// What must not depend on how a backend waits.
#[derive(Debug, PartialEq)]
struct Summary {
    failures: String,
    drops: String,
    counts: [u64; 11],
    latency: (u64, u64, u64),
    end: Time,
    log: Vec<(Time, u64, Happening)>,
}

impl Summary {
    fn of(r: &SimResult) -> Summary {
        let s = &r.outcome.stats;
        // What happens to different connections at one instant may come in another order (a
        // backend drains them in the order their events came); each connection's own order
        // stays.
        let mut log = r.log.clone();
        log.sort_by_key(|(t, c, _)| (*t, *c));
        Summary {
            failures: format!("{:?}", r.outcome.failures),
            drops: format!("{:?}", r.outcome.drops),
            counts: [
                s.requests,
                s.abandoned,
                s.errors.total(),
                s.drops,
                s.lost,
                s.downtime_micros,
                r.commands,
                r.accepted,
                s.unsent,
                s.lower_bounds,
                s.failed_clients,
            ],
            latency: (s.latency.len(), s.latency.min(), s.latency.max()),
            end: r.end,
            log,
        }
    }
}

/// The one kind of failure of a run, and how many connections failed so.
fn only_failure(r: &SimResult) -> (&ConnError, u64) {
    match r.outcome.failures.as_slice() {
        [(e, n)] => (e, *n),
        other => panic!("expected one kind of failure, got {other:?}"),
    }
}

// ---- the fake server's faults (tests/tests/faults.rs: `-c 1 -n 5 ping`) ----

#[test]
fn garbage_reply_fails_the_connection() {
    let r = Opts::default().run(Server::replying(b"hello\r\n", us(10)));
    let (e, n) = only_failure(&r);
    assert_eq!(n, 1);
    assert_eq!(e.to_string(), "protocol error at byte 0: unknown reply type byte 0x68 ('h')");
    assert_eq!(r.outcome.stats.requests, 0);
    assert_eq!(r.end, at_us(10));
}

#[test]
fn a_truncated_reply_and_close_leaves_one_unanswered() {
    // The last bytes and the FIN arrive in one read edge: the read rule reads on to the end of
    // the stream (the edge says hang-up), whatever the buffer's size. Or the bytes come in
    // pieces 1 ms apart, the FIN with the last.
    for segments in [None, Some((3, Duration::from_millis(1)))] {
        for read_buf in [1, 3, 8, 64 * 1024] {
            let mut server = Server::new(us(10), |_| Action::ReplyAndClose(b"$10\r\nabc".to_vec()));
            server.segments = segments;
            let r = Opts { read_buf, ..Opts::default() }.run(server);
            let (e, _) = only_failure(&r);
            assert_eq!(*e, ConnError::Closed { in_flight: 1 }, "read_buf {read_buf}");
            assert_eq!(e.to_string(), "server closed the connection with 1 requests unanswered");
            let end = if segments.is_some() { at_us(2_010) } else { at_us(10) };
            assert_eq!(r.end, end);
        }
    }
}

#[test]
fn an_unsolicited_reply_is_a_protocol_error() {
    let r = Opts::default().run(Server::replying(b"+PONG\r\n+PONG\r\n", us(10)));
    let (e, _) = only_failure(&r);
    assert_eq!(e.to_string(), "protocol error at byte 14: a reply arrived with no request waiting for it");
    assert_eq!(r.outcome.stats.requests, 1);
}

#[test]
fn an_absurd_bulk_length_and_a_nesting_bomb_are_protocol_errors() {
    let r = Opts::default().run(Server::replying(b"$99999999999999999\r\n", us(10)));
    let (e, _) = only_failure(&r);
    assert!(
        e.to_string().starts_with("protocol error at byte 1: bulk length 99999999999999999 exceeds"),
        "{e}"
    );
    // The 65th header starts at byte 64 * 4.
    let r = Opts::default().run(Server::replying(&b"*1\r\n".repeat(100_000), us(10)));
    let (e, _) = only_failure(&r);
    assert_eq!(e.to_string(), "protocol error at byte 256: aggregates nested deeper than 64 levels");
}

#[test]
fn a_reply_stalled_at_byte_three_times_out_exactly() {
    // Three answers 10 µs apart, then half of one: --timeout 300ms counts from when the fourth
    // request was queued (30 µs), and it counts as unanswered.
    let server = Server::new(us(10), |c| {
        Action::Reply(if c.global < 3 { b"+PONG\r\n".to_vec() } else { b"$5\r\nPO".to_vec() })
    });
    let opts = Opts { n: Some(10), timeout: Some(Duration::from_millis(300)), ..Opts::default() };
    let r = opts.run(server);
    let (e, n) = only_failure(&r);
    assert_eq!((e, n), (&ConnError::Timeout { after: Duration::from_millis(300), handshake: false }, 1));
    assert_eq!(e.to_string(), "request timed out after 300ms (--timeout)");
    assert_eq!(r.outcome.stats.requests, 3);
    assert_eq!(r.end, at_us(300_030));
}

#[test]
fn a_lone_error_then_close_is_a_refusal() {
    // maxclients 4: the server answers the fifth socket on and later with an error and closes it,
    // before any command (Redis writes it on accept). The error is taken as the reply to the
    // request that socket wrote at once, and the connection failed as refused.
    let mut server = Server::replying(b"+PONG\r\n", us(10));
    server.on_accept = Some(Arc::new(|conn| {
        (conn >= 4).then(|| Action::ReplyAndClose(b"-ERR max number of clients reached\r\n".to_vec()))
    }));
    let opts = Opts { n: Some(2000), clients: 10, ..Opts::default() };
    // The error and the FIN arrive together. mio's edge says hang-up, so the read goes on to the
    // FIN before the drain: the four served connections do the rest of the budget. smol reads
    // to the short read, and uring gets the bytes and the end as two completions: each drains
    // in between (a second request goes out, taken from the budget) and then reads the FIN:
    // that request is lost with the connection, six in all.
    for (shape, completed) in [(Shape::Mio, 2000), (Shape::Smol, 1994), (Shape::Uring, 1994)] {
        let r = opts.run_on(server.clone(), shape);
        let (e, n) = only_failure(&r);
        assert_eq!(n, 6);
        assert_eq!(e.to_string(), "the server refused the connection: ERR max number of clients reached");
        assert_eq!(r.count(Happening::Ended), 10);
        assert_eq!(r.times(9, Happening::Ended), [Time::ZERO]);
        assert_eq!(r.outcome.stats.requests, completed, "{shape:?}");
        assert_eq!(r.outcome.stats.errors.total(), 6, "{shape:?}");
    }
}

#[test]
fn a_reset_mid_reply_fails_with_the_os_words() {
    let server = Server::new(us(10), |c| {
        if c.global < 3 {
            Action::Reply(b"+PONG\r\n".to_vec())
        } else {
            Action::ReplyAndReset(b"$5\r\nPO".to_vec())
        }
    });
    let r = Opts::default().run(server);
    let (e, _) = only_failure(&r);
    let ConnError::Io(io) = e else { panic!("{e:?}") };
    assert_eq!(io.op, IoOp::Read);
    assert_eq!(io.kind, std::io::ErrorKind::ConnectionReset);
    assert!(e.to_string().starts_with("read from 127.0.0.1:6379: "), "{e}");
    assert_eq!(r.outcome.stats.requests, 3);
    assert_eq!(r.end, at_us(40));
}

#[test]
fn error_replies_are_counted_not_fatal() {
    // loading_counted, moved_counted: against one server, every reply an error, all counted.
    for (reply, prefix) in [
        (&b"-LOADING Redis is loading the dataset in memory\r\n"[..], "LOADING"),
        (b"-MOVED 3999 127.0.0.1:6381\r\n", "MOVED"),
    ] {
        let r = Opts { n: Some(300), ..Opts::default() }.run(Server::replying(reply, us(10)));
        assert!(r.outcome.failures.is_empty(), "{:?}", r.outcome.failures);
        assert_eq!(r.outcome.stats.requests, 300);
        assert_eq!(r.outcome.stats.errors.total(), 300);
        assert_eq!(r.outcome.stats.errors.kinds()[0].prefix, prefix);
    }
}

// ---- the drain rule over short writes and a full socket ----

#[test]
fn short_writes_and_a_full_socket_lose_nothing() {
    // -P 16 on 3 connections: every write takes at most 7 bytes and the socket holds 20 unread,
    // so every drain ends on a full socket and goes on at the server's read (the write edge).
    let mut server = Server::replying(b"+PONG\r\n", us(10));
    server.socket = SocketConfig { write_max: 7, send_buffer: 20 };
    let opts = Opts { n: Some(1000), clients: 3, pipeline: 16, ..Opts::default() };
    for read_buf in [1, 5, 64 * 1024] {
        let r = Opts { read_buf, ..opts.clone() }.run(server.clone());
        assert_eq!(r.stuck, 0);
        assert!(r.outcome.failures.is_empty());
        assert_eq!((r.outcome.stats.requests, r.commands), (1000, 1000));
        assert_eq!(r.outcome.stats.bytes_sent, 1000 * b"*1\r\n$4\r\nPING\r\n".len() as u64);
        assert_eq!(r.count(Happening::Ended), 3);
    }
}

#[test]
fn large_values_go_by_reference_and_byte_exact_over_any_short_write() {
    // SETs of values that are spliced in (the uring shape writes them by their shared handle),
    // over writes that end inside the header, the value and its CRLF, on a socket that fills:
    // the server checks every value it reads against `-d`'s payload.
    let d = SPLICE_FROM + 13;
    let want = respbench_core::template::payload(d);
    let request_len = format!("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n${d}\r\n").len() + d + 2;
    let mut server = Server::new(us(10), move |c: &Command| {
        if c.name() != "SET" || c.args.len() != 3 || c.args[2] != want {
            return Action::Reply(b"-ERR not the value\r\n".to_vec());
        }
        Action::Reply(b"+OK\r\n".to_vec())
    });
    for (write_max, send_buffer) in [(7, 20), (4093, 10_000), (usize::MAX, 3 * SPLICE_FROM)] {
        server.socket = SocketConfig { write_max, send_buffer };
        let opts = Opts { n: Some(40), clients: 2, pipeline: 3, set: Some(d), ..Opts::default() };
        let mio = opts.run(server.clone());
        let uring = opts.run_on(server.clone(), Shape::Uring);
        for r in [&mio, &uring] {
            assert!(r.outcome.failures.is_empty(), "{write_max}: {:?}", r.outcome.failures);
            assert_eq!(r.outcome.stats.errors.total(), 0, "{write_max}: a value arrived wrong");
            assert_eq!((r.outcome.stats.requests, r.commands), (40, 40), "{write_max}");
            assert_eq!(r.outcome.stats.bytes_sent, 40 * request_len as u64, "{write_max}");
        }
        assert_eq!(mio.shared_writes, 0, "mio writes bytes");
        assert!(uring.shared_writes >= 40, "{write_max}: {} shared writes", uring.shared_writes);
    }
    // A socket with room: a request's header, value and CRLF go in one (vectored) write on the
    // readiness shapes, not three.
    server.socket = SocketConfig { write_max: usize::MAX, send_buffer: usize::MAX };
    let opts = Opts { n: Some(10), set: Some(d), ..Opts::default() };
    for shape in [Shape::Mio, Shape::Smol] {
        let r = opts.run_on(server.clone(), shape);
        assert_eq!(r.outcome.stats.errors.total(), 0, "{shape:?}");
        assert_eq!(r.commands_per_write(), vec![1; 10], "{shape:?}: one write per SET");
    }
}

#[test]
fn no_keepalive_opens_a_socket_per_batch() {
    let opts = Opts { n: Some(20), pipeline: 4, keepalive: false, ..Opts::default() };
    let r = opts.run(Server::replying(b"+PONG\r\n", us(5)));
    assert_eq!(r.outcome.stats.requests, 20);
    assert_eq!((r.accepted, r.count(Happening::Reconnect)), (5, 4));
    assert_eq!(r.outcome.stats.connections_opened, 5);
}

/// `--reconnect-every 10` (memtier's `--reconnect-interval`): one client's 95 requests go on
/// sockets of 10 (the last of 5), each opened once the last one's requests are all answered,
/// whether the pipeline goes in batches (`-P 4`: 4, 4, 2 a socket) or as a window: 9
/// reconnections, 10 sockets; two clients sharing 80, 40 each: 2 sockets each.
#[test]
fn reconnect_every_opens_a_socket_per_n_requests() {
    for mode in [PipelineMode::Batch, PipelineMode::Window] {
        let opts = Opts { n: Some(95), pipeline: 4, mode, reconnect_every: Some(10), ..Opts::default() };
        let r = opts.run(Server::replying(b"+PONG\r\n", us(5)));
        assert_eq!(r.outcome.stats.requests, 95);
        assert_eq!((r.accepted, r.count(Happening::Reconnect)), (10, 9), "{mode:?}");
        assert_eq!(r.outcome.stats.connections_opened, 10);
    }
    let opts = Opts { n: Some(80), clients: 2, reconnect_every: Some(20), ..Opts::default() };
    let r = opts.run(Server::replying(b"+PONG\r\n", us(5)));
    assert_eq!(r.outcome.stats.requests, 80);
    assert_eq!((r.accepted, r.count(Happening::Reconnect)), (4, 2));
}

// ---- --timeout ----

#[test]
fn the_handshake_times_out_from_the_connect() {
    let server = Server::new(us(10), |c| {
        if c.is_handshake() {
            Action::Stall
        } else {
            Action::Reply(b"+OK\r\n".to_vec())
        }
    });
    let opts = Opts {
        handshake: Handshake::new(None, Some("pw"), false, 0, false),
        clients: 2,
        timeout: Some(Duration::from_millis(500)),
        ..Opts::default()
    };
    let r = opts.run(server);
    let (e, n) = only_failure(&r);
    assert_eq!(n, 2);
    assert_eq!(e.to_string(), "connection handshake timed out after 500ms (--timeout; 5s without it)");
    assert_eq!(r.end, at_ms(500));
}

#[test]
fn a_server_that_stops_reading_times_out_a_blocked_writer() {
    // The server reads once and then nothing (the socket's 64 bytes fill up): -P 16 with
    // --timeout 100ms, the requests queued behind a full socket still count from when they were
    // queued, and the connection fails at 100 ms.
    let mut server =
        Server::new(
            us(10),
            |c| if c.index == 0 { Action::Stall } else { Action::Reply(b"+OK\r\n".to_vec()) },
        );
    server.socket = SocketConfig { write_max: usize::MAX, send_buffer: 64 };
    let opts = Opts { n: None, pipeline: 16, timeout: Some(Duration::from_millis(100)), ..Opts::default() };
    let r = opts.run(server);
    let (e, _) = only_failure(&r);
    assert_eq!(*e, ConnError::Timeout { after: Duration::from_millis(100), handshake: false });
    assert_eq!(r.end, at_ms(100));
    assert_eq!(r.outcome.stats.requests, 0);
    // The server read the first 64 bytes (it stalled at their first command); the next 64
    // filled the socket, and nothing more went.
    assert_eq!(r.outcome.stats.bytes_sent, 128);
}

#[test]
fn a_stopped_server_trips_the_request_timeout_exactly() {
    // server_stopped_times_out: requests 10 µs apart; the server stops at 1 ms for a minute.
    // The request queued at 1 ms waits; --timeout 50ms fails the connection at 51 ms.
    let mut server = Server::replying(b"+PONG\r\n", us(10));
    server.stalls.push((at_ms(1), at_ms(60_000)));
    let opts = Opts { n: None, timeout: Some(Duration::from_millis(50)), ..Opts::default() };
    let r = opts.run(server);
    let (e, _) = only_failure(&r);
    assert_eq!(*e, ConnError::Timeout { after: Duration::from_millis(50), handshake: false });
    assert_eq!(r.outcome.stats.requests, 100);
    assert_eq!(r.end, at_ms(51));
    // -n with the path dead: the wait until the failure is in the test's length.
    assert_eq!(r.outcome.stats.end, at_ms(51));
}

// ---- the stop and its grace ----

#[test]
fn a_duration_stop_drains_what_is_in_flight() {
    // --duration 1s, -c 3 -P 4 on one queue of 100 µs: one reply per 100 µs, the 10 000th at
    // 1 s exactly; then no request is handed out, and the 11 still in flight are answered by
    // 1.0011 s. Every connection finishes; nothing is abandoned.
    // (A window: each reply frees a slot the next request takes at once.)
    let opts = Opts {
        n: None,
        clients: 3,
        pipeline: 4,
        mode: PipelineMode::Window,
        duration: Some(Duration::from_secs(1)),
        ..Opts::default()
    };
    let r = opts.run(Server::replying(b"+PONG\r\n", us(100)));
    assert!(r.outcome.failures.is_empty());
    assert_eq!(r.count(Happening::Ended), 3);
    assert_eq!(r.outcome.stats.requests, 10_011);
    assert_eq!(r.commands, 10_011);
    assert_eq!(r.outcome.stats.abandoned, 0);
    assert_eq!(r.end, at_us(1_001_100));
    assert_eq!(r.outcome.stats.end, at_us(1_001_100));
}

#[test]
fn a_warmup_is_sent_but_not_recorded() {
    // duration_and_warmup: --duration 1s --warmup 1s, -c 4 on one queue of 100 µs: the server
    // answers 10 000 a second throughout; the first second's are not in the figures, the
    // second's are, in one second of the series, and the test's figures start at 1 s.
    let opts = Opts {
        n: None,
        clients: 4,
        duration: Some(Duration::from_secs(1)),
        warmup: Some(Duration::from_secs(1)),
        series: true,
        ..Opts::default()
    };
    let r = opts.run(Server::replying(b"+PONG\r\n", us(100)));
    let s = &r.outcome.stats;
    assert_eq!(s.start, at_ms(1_000));
    // Replies at 100 µs steps: from 1 s to 2 s (both counted), then the 3 still in flight.
    assert_eq!(s.requests, 10_001 + 3);
    assert_eq!(r.commands, 20_003);
    assert_eq!(s.series.iter().map(|x| x.requests).collect::<Vec<_>>(), [10_000, 4]);
}

#[test]
fn a_stop_asked_for_mid_run_abandons_exactly_after_the_grace() {
    // server_stopped_then_sigint: the server stops at 0.5 s for good, Ctrl-C at 1 s: nothing
    // drains; at 3 s (the grace) the 12 requests in flight (-P 4 on 3 connections) are abandoned.
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.stalls.push((at_ms(500), Time::MAX));
    let opts = Opts { n: None, clients: 3, pipeline: 4, ..Opts::default() };
    let r = Opts { interrupt: Some(at_ms(1_000)), ..opts.clone() }.run(server);
    assert_eq!(r.stuck, 0);
    assert!(r.outcome.failures.is_empty());
    assert_eq!(r.outcome.stats.abandoned, 12);
    assert_eq!(r.times(0, Happening::Ended), [at_ms(3_000)]);
    assert_eq!(r.end, at_ms(3_000));
    assert_eq!(r.commands, r.outcome.stats.requests + 12);
}

#[test]
fn a_stop_that_drains_in_the_grace_abandons_nothing() {
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.stalls.push((at_ms(500), at_ms(2_000)));
    let opts = Opts { n: None, clients: 2, pipeline: 2, ..Opts::default() };
    let r = Opts { interrupt: Some(at_ms(1_000)), ..opts.clone() }.run(server);
    assert_eq!(r.outcome.stats.abandoned, 0);
    assert_eq!(r.count(Happening::Ended), 2);
    // The 4 in flight are served one after another once the stall ends.
    assert_eq!(r.end, at_us(2_000_400));
    assert_eq!(r.commands, r.outcome.stats.requests);
}

#[test]
fn a_timed_run_whose_server_stops_abandons_at_stop_plus_grace() {
    // server_stopped_at_the_end_of_a_timed_run: -c 4 -P 2 --duration 2s, the server stops 1 s
    // in; closed and open loop (--rps 2000). At 4 s exactly, 8 requests are abandoned: the
    // window of each client is full when the server stops (a batch may be half answered).
    for rps in [None, Some(2000.0)] {
        let mut server = Server::replying(b"+PONG\r\n", us(100));
        server.stalls.push((at_ms(1_000), Time::MAX));
        let opts = Opts {
            n: None,
            clients: 4,
            pipeline: 2,
            mode: PipelineMode::Window,
            rps,
            duration: Some(Duration::from_secs(2)),
            ..Opts::default()
        };
        let r = opts.run(server);
        assert!(r.outcome.failures.is_empty(), "{rps:?}");
        assert_eq!(r.outcome.stats.abandoned, 8, "{rps:?}");
        assert_eq!(r.end, at_ms(4_000), "{rps:?}");
        // The test lasted to the end of the grace, not to its last reply (1 s): the stall is
        // in its length and its rate.
        let s = &r.outcome.stats;
        assert_eq!(s.end, at_ms(4_000), "{rps:?}");
        assert!(s.last_reply > at_ms(999) && s.last_reply < at_ms(1_001), "{rps:?}: {:?}", s.last_reply);
        assert_eq!(s.duration_secs(), 4.0, "{rps:?}");
        assert_eq!(s.rps(), s.requests as f64 / 4.0, "{rps:?}");
        // No reply for the last 3 s of 4 s; the 8 abandoned are in the latencies with their time
        // so far (sent by 1 s, abandoned at 4 s: 3 s at least), as lower bounds.
        assert!((s.silent_secs() - 3.0).abs() < 0.001, "{rps:?}: {}", s.silent_secs());
        assert_eq!(s.lower_bounds, 8 + s.unsent, "{rps:?}");
        assert!(s.latency.max() >= 2_999_000, "{rps:?}: {}", s.latency.max());
        assert_eq!(r.count(Happening::Ended), 4);
    }
}

// ---- --reconnect ----

/// The gaps between connection 0's connect attempts, in µs.
fn gaps(r: &SimResult) -> Vec<u64> {
    let t = r.times(0, Happening::Connect);
    t.windows(2).map(|w| w[1].nanos_since(w[0]) / 1_000).collect()
}

#[test]
fn reconnect_backs_off_doubling_capped_and_resets_after_a_handshake() {
    // Killed at 1 s, back at 4 s; killed again at 6 s, back at 6.5 s. Attempts 10 ms after the
    // drop (the socket error brings its time), then doubling to the 1 s cap; after a handshake
    // went through, from 10 ms again.
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.outages = vec![(at_ms(1_000), at_ms(4_000)), (at_ms(6_000), at_ms(6_500))];
    let opts = Opts { n: None, reconnect: true, duration: Some(Duration::from_secs(8)), ..Opts::default() };
    let r = opts.run(server);
    let ms = 1_000;
    let mut want = vec![1_010 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, 1_000 * ms];
    // Up at 4.27 s; down at 6 s, first try 10 ms on.
    want.extend([1_000 * ms, 1_740 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms]);
    assert_eq!(gaps(&r), want);
    assert_eq!(r.times(0, Happening::Down).len(), 2 + 13, "two drops and each refused attempt");
    assert_eq!(r.count(Happening::Refused), 8 + 5);
    let s = &r.outcome.stats;
    assert_eq!(s.drops, 2, "one per outage");
    // Down from 1 s to 4.27 s and from 6 s to 6.63 s.
    assert_eq!(s.downtime_micros, 3_270_000 + 630_000);
    assert!(r.outcome.failures.is_empty());
    assert_eq!(r.count(Happening::Ended), 1);
    assert!(r.outcome.drops.iter().any(|(e, _)| matches!(e, ConnError::Io(io) if io.op == IoOp::Connect)));
}

#[test]
fn the_backoff_counts_from_the_error() {
    // A server that answers three requests, says nothing for 30 s and is then killed (restarted
    // 1 ms later). The socket error brings its time: the first wait (10 ms) counts from it, not
    // from the connection's last input (the write at 30 µs), so the one attempt goes at 30.01 s,
    // when the server is back.
    let mut server =
        Server::new(
            us(10),
            |c| if c.global == 3 { Action::Stall } else { Action::Reply(b"+PONG\r\n".to_vec()) },
        );
    server.outages = vec![(at_ms(30_000), at_ms(30_001))];
    let opts =
        Opts { n: None, reconnect: true, duration: Some(Duration::from_millis(30_100)), ..Opts::default() };
    let r = opts.run(server);
    assert_eq!(r.times(0, Happening::Connect), [Time::ZERO, at_ms(30_010)]);
    assert!(r.times(0, Happening::Refused).is_empty());
    // Three before the silence, one every 10 µs from 30.01 s to the stop at 30.1 s.
    assert_eq!(r.outcome.stats.requests, 3 + 9_000);
}

#[test]
fn the_open_loop_schedule_runs_on_through_an_outage() {
    // --rps 1000 on one connection for 3 s, the server down from 1 s to 1.8 s: back at 2.27 s
    // (the backoff, from the reset at 1 s), the requests due meanwhile go then; none is
    // lost (none was in flight at 1 s), the whole schedule is sent, and latency counts from the
    // intended time.
    let mut server = Server::replying(b"+PONG\r\n", us(10));
    server.outages = vec![(at_ms(1_000), at_ms(1_800))];
    let opts = Opts {
        n: None,
        pipeline: 2000,
        reconnect: true,
        rps: Some(1000.0),
        duration: Some(Duration::from_secs(3)),
        ..Opts::default()
    };
    let r = opts.run(server);
    let s = &r.outcome.stats;
    assert_eq!(s.requests, 3000);
    assert_eq!(s.lost, 0);
    assert_eq!(r.times(0, Happening::Connect).last(), Some(&at_us(2_270_000)));
    // The request due at 1 s, sent at 2.27 s and served first.
    assert_eq!(s.latency.max(), s.latency.highest_equivalent(1_270_010));
    // Its service time is 10 µs; the backlog's last (1271 were due from 1 s to 2.27 s) is
    // served 12.71 ms after they all went.
    let service = s.service.as_ref().unwrap();
    assert_eq!(service.max(), service.highest_equivalent(1_271 * 10));
}

#[test]
fn a_closed_loop_rides_out_a_crash() {
    // closed_loop_rides_out_a_crash: -c 10 on one queue of 100 µs (10 000 replies a second),
    // killed at 1 s and back at 1.8 s, --duration 4s. Every connection drops once and loses the
    // request it had in flight (counted as a `connection` error); the second of the crash has no
    // replies (the connections are back at 2.27 s), the others the whole rate.
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.outages = vec![(at_ms(1_000), at_ms(1_800))];
    let opts = Opts {
        n: None,
        clients: 10,
        reconnect: true,
        duration: Some(Duration::from_secs(4)),
        series: true,
        ..Opts::default()
    };
    let r = opts.run(server);
    let s = &r.outcome.stats;
    assert_eq!((s.drops, s.lost), (10, 10));
    assert_eq!(s.errors.kinds()[0].prefix, "connection");
    assert_eq!(s.errors.total(), 10);
    assert!(r.outcome.failures.is_empty());
    let series: Vec<u64> = s.series.iter().map(|x| x.requests).collect();
    assert_eq!(series[1], 0, "{series:?}");
    assert_eq!(series[3], 10_000, "{series:?}");
    assert_eq!(r.count(Happening::Ended), 10);
}

#[test]
fn without_reconnect_a_crash_ends_the_run() {
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.outages = vec![(at_ms(1_000), at_ms(1_200))];
    let opts = Opts { n: None, clients: 10, duration: Some(Duration::from_secs(4)), ..Opts::default() };
    let r = opts.run(server);
    let (e, n) = only_failure(&r);
    assert_eq!(n, 10);
    assert!(e.to_string().starts_with("read from 127.0.0.1:6379: "), "{e}");
    assert_eq!(r.end, at_ms(1_000));
    assert!(r.outcome.drops.is_empty());
}

#[test]
fn without_reconnect_k0_refused_reconnects_end_the_run() {
    // server_killed_mid_run_k0: -k 0 -P 1 on 2 connections; the server dies at 1 ms for good.
    // Each connection fails then: reset mid-request, or refused on its next socket.
    let mut server = Server::replying(b"+PONG\r\n", us(10));
    server.outages = vec![(at_ms(1), Time::MAX)];
    let opts = Opts {
        n: None,
        clients: 2,
        keepalive: false,
        duration: Some(Duration::from_secs(10)),
        ..Opts::default()
    };
    let r = opts.run(server);
    let failed: u64 = r.outcome.failures.iter().map(|(_, n)| n).sum();
    assert_eq!(failed, 2, "{:?}", r.outcome.failures);
    assert_eq!(r.end, at_ms(1));
    for (e, _) in &r.outcome.failures {
        let s = e.to_string();
        assert!(
            s == "Could not connect to Redis at 127.0.0.1:6379: Connection refused"
                || s.starts_with("read from 127.0.0.1:6379: "),
            "{s}"
        );
    }
}

// ---- the open-loop schedule ----

#[test]
fn the_open_loop_sends_the_exact_count_over_a_duration() {
    // --rps 1000 over 10 connections for 3 s: each sends every 10 ms; 1000 in each second.
    let opts = Opts {
        n: None,
        clients: 10,
        rps: Some(1000.0),
        duration: Some(Duration::from_secs(3)),
        series: true,
        ..Opts::default()
    };
    let mut server = Server::replying(b"+PONG\r\n", us(50));
    server.parallel = true;
    let r = opts.run(server);
    let s = &r.outcome.stats;
    assert_eq!(s.requests, 3000);
    assert_eq!(s.series.iter().map(|x| x.requests).collect::<Vec<_>>(), [1000, 1000, 1000]);
    assert_eq!(s.latency.max(), 50, "every request on time, 50 µs each");
}

#[test]
fn an_open_loop_without_keepalive_sends_each_batch_on_a_new_socket() {
    // -k 0 -c 4 -n 8 --rps 16 (redis-benchmark 8's `--rate 16`): each client's arrivals are
    // 250 ms apart, the clients' first ones 62.5 ms apart; each arrival goes on a socket of its
    // own, opened once the last one's batch is answered, and is sent when it is due.
    for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
        let opts = Opts { n: Some(8), clients: 4, rps: Some(16.0), keepalive: false, ..Opts::default() };
        let (server, reads) = noting_server(us(10));
        let r = opts.run_on(server, shape);
        let s = &r.outcome.stats;
        assert_eq!((s.requests, s.connections_opened), (8, 8), "{shape:?}");
        let mut sent: Vec<(u64, u64, u64)> =
            reads.lock().unwrap().iter().map(|&(conn, i, t)| (t.as_micros(), conn, i)).collect();
        sent.sort();
        let times: Vec<u64> = sent.iter().map(|s| s.0).collect();
        assert_eq!(times, [0, 62_500, 125_000, 187_500, 250_000, 312_500, 375_000, 437_500], "{shape:?}");
        assert!(sent.iter().all(|&(_, _, i)| i == 0), "one request a socket: {sent:?}");
        assert_eq!(s.latency.max(), 10, "{shape:?}: every request on time");
    }
}

#[test]
fn first_arrivals_are_spread_over_one_interval() {
    for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
        first_arrivals_on(shape);
    }
}

fn first_arrivals_on(shape: Shape) {
    // --rps 4 over 4 connections: each sends once a second, the first ones 250 ms apart.
    let firsts = Arc::new(Mutex::new(Vec::new()));
    let seen = firsts.clone();
    let server = Server::new(us(10), move |c| {
        if c.index == 0 {
            seen.lock().unwrap().push((c.conn, c.at));
        }
        Action::Reply(b"+PONG\r\n".to_vec())
    });
    let opts = Opts {
        n: None,
        clients: 4,
        rps: Some(4.0),
        duration: Some(Duration::from_secs(2)),
        ..Opts::default()
    };
    let r = opts.run_on(server, shape);
    assert_eq!(r.outcome.stats.requests, 8);
    let firsts = firsts.lock().unwrap().clone();
    assert_eq!(firsts, [(0, at_ms(0)), (1, at_ms(250)), (2, at_ms(500)), (3, at_ms(750))]);
}

// ---- the slack: sends wait for the wake-up grid, and their lateness is recorded ----

/// The commands a server read: (socket, index on it, time).
type Reads = Arc<Mutex<Vec<(u64, u64, Time)>>>;

/// A server that answers `+PONG` after `service` (each on its own) and notes when it read each
/// command.
fn noting_server(service: Duration) -> (Server, Reads) {
    let reads = Arc::new(Mutex::new(Vec::new()));
    let seen = reads.clone();
    let mut server = Server::new(service, move |c| {
        seen.lock().unwrap().push((c.conn, c.index, c.at));
        Action::Reply(b"+PONG\r\n".to_vec())
    });
    server.parallel = true;
    (server, reads)
}

/// The intended time of request `k` of client `c` of `opts` (constant arrivals, connected at
/// zero), as the core spaces them.
fn intended(opts: &Opts, c: u64, k: u64) -> Time {
    let ol = OpenLoop::new(opts.rps.unwrap(), false);
    let interval = ol.interval(opts.clients as u64).as_nanos() as u64;
    let n = opts.clients as u64;
    Time::from_nanos(interval / n * c + k * interval)
}

#[test]
fn a_loop_on_the_slack_sends_late_by_its_grid_and_records_it() {
    // One request every 400 µs on a 250 µs grid: due at 0, 400, 800, 1200, 1600 µs, sent at 0,
    // 500, 1000, 1250, 1750 µs: 0, 100, 200, 50, 150 µs late, then the same from 2000 µs.
    for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
        let opts = Opts { n: Some(20), rps: Some(2500.0), slack: us(250), ..Opts::default() };
        let (server, reads) = noting_server(us(10));
        let r = opts.run_on(server, shape);
        let sent: Vec<u64> = reads.lock().unwrap().iter().map(|&(_, _, t)| t.as_micros()).collect();
        assert_eq!(&sent[..6], [0, 500, 1000, 1250, 1750, 2000], "{shape:?}");
        let s = &r.outcome.stats;
        let late = s.lateness.as_ref().unwrap();
        assert_eq!((late.len(), late.min(), late.max(), late.mean()), (20, 0, 200, 100.0), "{shape:?}");
        // The latency counts from the intended time: the lateness and the 10 µs of service.
        assert_eq!((s.latency.min(), s.latency.max()), (10, 210), "{shape:?}");
        assert_eq!(s.service.as_ref().unwrap().max(), 10, "{shape:?}");
    }
}

#[test]
fn every_client_due_within_one_slack_goes_on_one_wake_up() {
    // 10 clients at 20,000/s: each every 500 µs, their first arrivals 50 µs apart; on a 250 µs
    // grid, whatever came due in a slack is written at its end, each client's in one write.
    for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
        let opts = Opts {
            n: None,
            clients: 10,
            rps: Some(20_000.0),
            duration: Some(Duration::from_millis(20)),
            slack: us(250),
            ..Opts::default()
        };
        let (server, reads) = noting_server(us(10));
        let r = opts.run_on(server, shape);
        let reads = reads.lock().unwrap().clone();
        assert_eq!(reads.len() as u64, r.outcome.stats.requests);
        assert_eq!(r.outcome.stats.requests, 400, "{shape:?}");
        for &(c, k, at) in &reads {
            assert_eq!(at.as_nanos() % 250_000, 0, "{shape:?}: client {c} sent request {k} off the grid");
            let due = intended(&opts, c, k);
            assert!(at >= due && at.nanos_since(due) < 250_000, "{shape:?}: {c}/{k} due {due:?} sent {at:?}");
        }
        // One write a request, on 81 wake-ups: client 0's first at 0, then five clients on each
        // grid point to the stop at 20 ms (arrivals due before it still go).
        assert_eq!(r.writes.len(), 400, "{shape:?}");
        let mut instants: Vec<Time> = r.writes.iter().map(|w| w.at).collect();
        instants.dedup();
        assert_eq!(instants.len(), 81, "{shape:?}");
        assert_eq!(*instants.last().unwrap(), at_ms(20), "{shape:?}");
        assert_eq!(r.outcome.stats.lateness.as_ref().unwrap().max(), 200, "{shape:?}");
    }
}

#[test]
fn a_rate_ramp_sends_on_each_steps_schedule_exactly() {
    // `--ramp 'rps 1000..3000 step 1000 every 100ms'` over 2 clients for 300 ms: each client's
    // gap is 2 ms in step 1, 1 ms in step 2, 2/3 ms in step 3. An arrival whose gap crosses a
    // boundary spends the rest of its gap at the next step's rate: client 1, due at 99 ms with
    // half its 2 ms gap left at 100 ms, is next due 0.5 ms later (100.5 ms), and from 199.5 ms
    // 0.5 ms at 1 ms then half of 2/3 ms (200.333 ms).
    let ramp = Ramp {
        kind: RampKind::Rps,
        from: 1000,
        to: 3000,
        step: 1000,
        every: Duration::from_millis(100),
        start: Time::ZERO,
    };
    for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
        let opts = Opts {
            n: None,
            clients: 2,
            rps: Some(3000.0),
            duration: Some(Duration::from_micros(299_900)),
            ramp: Some(ramp),
            series: true,
            ..Opts::default()
        };
        let (server, reads) = noting_server(us(10));
        let r = opts.run_on(server, shape);
        let reads = reads.lock().unwrap().clone();
        let of = |c: u64| -> Vec<u64> { reads.iter().filter(|x| x.0 == c).map(|x| x.2.as_nanos()).collect() };
        let (c0, c1) = (of(0), of(1));
        // Step 1: every 2 ms, client 1 a gap's half later.
        assert_eq!(&c0[..3], [0, 2_000_000, 4_000_000], "{shape:?}");
        assert_eq!(&c1[..2], [1_000_000, 3_000_000], "{shape:?}");
        // Step 2: client 0 lands on the boundary; client 1 crosses it halfway through its gap.
        let first_from = |v: &[u64], t: u64| *v.iter().find(|&&x| x >= t).unwrap();
        assert_eq!(first_from(&c0, 100_000_000), 100_000_000, "{shape:?}");
        assert_eq!(first_from(&c1, 100_000_000), 100_500_000, "{shape:?}");
        assert_eq!(first_from(&c1, 100_500_001), 101_500_000, "{shape:?}");
        // Step 3: every 2/3 ms (to the nanosecond's rounding).
        assert_eq!(first_from(&c0, 200_000_000), 200_000_000, "{shape:?}");
        assert!(first_from(&c1, 200_000_000).abs_diff(200_333_333) <= 1, "{shape:?}");
        let near = |a: u64, b: u64| a.abs_diff(b) <= 2;
        assert!(near(first_from(&c0, 200_000_001), 200_666_667), "{shape:?}");
        // Each step's arrivals are its rate times its length: 100, 200, 300 (the last to the
        // stop at 299.9 ms: 299.333 and 299.667 ms are due before it, 300 is not).
        let sent_in = |k: u64| reads.iter().filter(|x| x.2.as_nanos() / 100_000_000 == k).count();
        assert_eq!([sent_in(0), sent_in(1), sent_in(2)], [100, 200, 300], "{shape:?}");
        // Each request was sent at its intended time (no slack, a server of 10 µs): no lateness.
        let s = &r.outcome.stats;
        assert_eq!(s.lateness.as_ref().unwrap().max(), 0, "{shape:?}");
        // The core counted each reply in its step; the series' seconds name theirs.
        let counted: Vec<u64> = s.steps.iter().map(|st| st.requests).collect();
        assert_eq!(counted, [100, 200, 300], "{shape:?}");
        assert_eq!(s.requests, 600, "{shape:?}");
        assert!(s.steps.iter().all(|st| st.latency.max() == 10 && !st.lateness.as_ref().unwrap().is_empty()));
    }
}

#[test]
fn a_clients_ramp_opens_each_connection_at_its_step_and_keeps_it() {
    // `-c 5 --ramp 'clients 2..5 step 2 every 10ms'` for 30 ms: clients 0 and 1 connect at
    // once, 2 and 3 at 10 ms, 4 at 20 ms (the last step's level is 5), each once.
    let ramp = Ramp {
        kind: RampKind::Clients,
        from: 2,
        to: 5,
        step: 2,
        every: Duration::from_millis(10),
        start: Time::ZERO,
    };
    let opts = Opts {
        n: None,
        clients: 5,
        duration: Some(Duration::from_millis(30)),
        ramp: Some(ramp),
        ..Opts::default()
    };
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.parallel = true;
    let r = opts.run(server);
    let mut connects: Vec<(u64, Time)> =
        r.log.iter().filter(|(_, _, h)| *h == Happening::Connect).map(|&(t, c, _)| (c, t)).collect();
    connects.sort();
    assert_eq!(connects, [(0, at_ms(0)), (1, at_ms(0)), (2, at_ms(10)), (3, at_ms(10)), (4, at_ms(20))]);
    assert_eq!(r.accepted, 5);
    assert_eq!(r.count(Happening::Reconnect), 0);
    let s = &r.outcome.stats;
    assert_eq!(s.connections_opened, 5);
    // A reply each 100 µs per connection, counted in the step it arrives in: in step 1 clients
    // 0 and 1 at 0.1 … 9.9 ms (the one at 10 ms is step 2's); in step 2 they at 10 … 19.9 ms and
    // clients 2 and 3 from 10.1 ms.
    let counted: Vec<u64> = s.steps.iter().map(|st| st.requests).collect();
    assert_eq!(counted[..2], [2 * 99, 2 * 100 + 2 * 99]);
    assert!(counted[2].abs_diff(4 * 100 + 99) <= 5, "{counted:?}");
    assert_eq!(counted.iter().sum::<u64>(), s.requests);
}

#[test]
fn a_stop_before_a_clients_step_leaves_its_clients_unopened() {
    // Ctrl-C at 15 ms of `--ramp 'clients 1..3 step 1 every 10ms'`: clients 0 and 1 ran, client
    // 2 (due at 20 ms) never opens a socket, and the run ends with the grace, nothing stuck.
    let ramp = Ramp {
        kind: RampKind::Clients,
        from: 1,
        to: 3,
        step: 1,
        every: Duration::from_millis(10),
        start: Time::ZERO,
    };
    let opts = Opts {
        n: None,
        clients: 3,
        duration: Some(Duration::from_millis(100)),
        ramp: Some(ramp),
        interrupt: Some(at_ms(15)),
        ..Opts::default()
    };
    let r = opts.run(Server::replying(b"+PONG\r\n", us(100)));
    let connects: Vec<u64> =
        r.log.iter().filter(|(_, _, h)| *h == Happening::Connect).map(|&(_, c, _)| c).collect();
    assert_eq!(connects, [0, 1]);
    assert_eq!((r.accepted, r.count(Happening::Ended)), (2, 2));
    assert!(r.end < at_ms(20), "{:?}", r.end);
    assert_eq!(r.outcome.stats.steps.iter().map(|s| s.requests > 0).collect::<Vec<_>>(), [true, true, false]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the rate, the clients, the slack, the window and the server's speed, on every
    /// backend's way of waiting no request reaches the server before its intended time, and
    /// every request sent records its lateness: the counts add up.
    #[test]
    fn no_request_is_sent_before_its_intended_time(
        clients in 1usize..6,
        rps in 200.0f64..200_000.0,
        slack_us in 0u64..600,
        pipeline in 1u32..4,
        window in any::<bool>(),
        service_us in 0u64..400,
        parallel in any::<bool>(),
    ) {
        for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
            let opts = Opts {
                n: Some(60),
                clients,
                pipeline,
                mode: if window { PipelineMode::Window } else { PipelineMode::Batch },
                rps: Some(rps),
                slack: us(slack_us),
                ..Opts::default()
            };
            let (mut server, reads) = noting_server(us(service_us));
            server.parallel = parallel;
            let r = opts.run_on(server, shape);
            let s = &r.outcome.stats;
            prop_assert_eq!(s.requests, 60);
            prop_assert_eq!(s.lateness.as_ref().unwrap().len(), 60);
            for &(c, k, at) in reads.lock().unwrap().iter() {
                let due = intended(&opts, c, k);
                prop_assert!(at >= due, "{:?}: client {} request {} due {:?} read {:?}", shape, c, k, due, at);
            }
        }
    }
}

// ---- the connection-level scenarios of core's simulation, through the driver ----

#[test]
fn exact_budget_with_pipelining() {
    let opts = Opts { n: Some(100), clients: 3, pipeline: 16, ..Opts::default() };
    let r = opts.run(Server::replying(b"$3\r\nVXK\r\n", us(10)));
    assert_eq!((r.outcome.stats.requests, r.commands), (100, 100));
    assert_eq!(r.count(Happening::Ended), 3);
    assert!(r.outcome.failures.is_empty());
}

// ---- -P: batches (redis-benchmark's) and the window ----

/// How many commands each write carried, the same on mio's, smol's and uring's shapes.
fn per_write(opts: &Opts, server: &Server) -> (SimResult, Vec<u64>) {
    let mio = opts.run(server.clone());
    let writes = mio.commands_per_write();
    for shape in [Shape::Smol, Shape::Uring] {
        let other = opts.run_on(server.clone(), shape);
        assert_eq!(other.commands_per_write(), writes, "{shape:?} writes otherwise than mio");
    }
    (mio, writes)
}

#[test]
fn a_batch_is_one_write_and_the_next_waits_for_all_its_replies() {
    // -n 20 -P 8 on one queue of 10 µs: the replies come one by one, 10 µs apart. A batch
    // waits for all 8, then sends the next 8 in one write; the last is the 4 left. The window
    // sends one request per reply after its first 8.
    let server = Server::replying(b"+PONG\r\n", us(10));
    let batch = Opts { n: Some(20), pipeline: 8, ..Opts::default() };
    let (r, writes) = per_write(&batch, &server);
    assert_eq!(writes, [8, 8, 4]);
    assert_eq!((r.outcome.stats.requests, r.commands), (20, 20));
    // Each batch is answered 80 µs after it was written (the last one 40). With no delay on
    // the path the queue is never idle in either mode, so both end at 200 µs.
    assert_eq!(r.end, at_us(80 + 80 + 40));
    let window = Opts { mode: PipelineMode::Window, ..batch };
    let (r, writes) = per_write(&window, &server);
    assert_eq!(writes, [8].into_iter().chain([1; 12]).collect::<Vec<_>>());
    assert_eq!(r.outcome.stats.requests, 20);
    assert_eq!(r.end, at_us(200));
}

#[test]
fn batches_keep_the_budget_exact_over_clients() {
    // -c 3 -n 100 -P 16: the budget hands out batches of 16 to whichever client asks, and the
    // last one the 4 left: every write is one whole batch.
    let server = Server::replying(b"$3\r\nVXK\r\n", us(10));
    let opts = Opts { n: Some(100), clients: 3, pipeline: 16, ..Opts::default() };
    let (r, mut writes) = per_write(&opts, &server);
    assert_eq!((r.outcome.stats.requests, r.commands), (100, 100));
    writes.sort_unstable();
    assert_eq!(writes, [4, 16, 16, 16, 16, 16, 16]);
}

#[test]
fn latency_in_a_batch_is_per_request_from_its_write() {
    // Two batches of 4 served one after another: each request is timed from the write that
    // carried it, 10, 20, 30, 40 µs; the second batch's write starts when the first's last
    // reply lands.
    let opts = Opts { n: Some(8), pipeline: 4, ..Opts::default() };
    let (r, writes) = per_write(&opts, &Server::replying(b"+PONG\r\n", us(10)));
    assert_eq!(writes, [4, 4]);
    let l = &r.outcome.stats.latency;
    assert_eq!((l.len(), l.min(), l.max(), l.mean()), (8, 10, 40, 25.0));
}

#[test]
fn no_keepalive_sends_a_batch_per_socket_in_either_mode() {
    // -k 0 -P 4 -n 18: a new socket for every batch of 4 (the last of 2), whatever the mode.
    for mode in [PipelineMode::Batch, PipelineMode::Window] {
        let opts = Opts { n: Some(18), pipeline: 4, keepalive: false, mode, ..Opts::default() };
        let (r, writes) = per_write(&opts, &Server::replying(b"+PONG\r\n", us(5)));
        assert_eq!(writes, [4, 4, 4, 4, 2], "{mode:?}");
        let sockets: Vec<u64> = r.writes.iter().map(|w| w.conn).collect();
        assert_eq!(sockets, [0, 1, 2, 3, 4], "{mode:?}");
    }
}

#[test]
fn an_open_loop_batch_takes_what_came_due_while_the_last_was_out() {
    // --rps 10000 (one every 100 µs) -P 8 -n 40 on a queue of 250 µs: the first request goes
    // alone at 0; its reply at 250 µs finds the arrivals of 100 and 200 µs due, which go as
    // one batch; its last reply (750 µs) finds 300..700 due, five; and so on, up to 8 a batch.
    // The window sends each arrival on its own write as long as fewer than 8 are out.
    let server = Server::replying(b"+PONG\r\n", us(250));
    let batch = Opts { n: Some(40), pipeline: 8, rps: Some(10_000.0), ..Opts::default() };
    let (r, writes) = per_write(&batch, &server);
    assert_eq!(&writes[..3], [1, 2, 5]);
    assert!(writes.iter().all(|&n| n <= 8), "{writes:?}");
    assert_eq!((r.outcome.stats.requests, writes.iter().sum::<u64>()), (40, 40));
    // Latency counts from the intended times: the arrival of 100 µs, sent at 250 and answered
    // at 500, waited 400 µs.
    assert!(r.outcome.stats.latency.max() > r.outcome.stats.service.as_ref().unwrap().max());
    let window = Opts { mode: PipelineMode::Window, ..batch };
    let (r, writes) = per_write(&window, &server);
    assert_eq!(&writes[..3], [1, 1, 1]);
    assert_eq!(r.outcome.stats.requests, 40);
}

#[test]
fn latency_is_per_request_not_per_batch() {
    // A batch of 4 served one after another: answers 10, 20, 30, 40 µs after it was written.
    let opts = Opts { n: Some(4), pipeline: 4, ..Opts::default() };
    let r = opts.run(Server::replying(b"+PONG\r\n", us(10)));
    let l = &r.outcome.stats.latency;
    assert_eq!((l.len(), l.min(), l.max(), l.mean()), (4, 10, 40, 25.0));
}

#[test]
fn the_handshake_is_sent_and_checked() {
    let hs = Handshake::new(Some("bench"), Some("secret"), false, 2, true);
    let opts = Opts { n: Some(10), handshake: hs, ..Opts::default() };
    // HELLO's answer is the server's properties.
    let answering = |auth: &'static [u8], hello: &'static [u8]| {
        Server::new(us(5), move |c| {
            Action::Reply(match c.name().as_str() {
                "AUTH" => auth.to_vec(),
                "HELLO" => hello.to_vec(),
                _ => b"+OK\r\n".to_vec(),
            })
        })
    };
    let r = opts.run(answering(b"+OK\r\n", b"%1\r\n+proto\r\n:3\r\n"));
    assert_eq!(r.outcome.stats.requests, 10);
    assert_eq!(r.commands, 13, "AUTH, SELECT, HELLO and 10 requests");
    assert_eq!(r.outcome.stats.setup.count(), 1);
    let r = opts.run(answering(
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
        b"%1\r\n+proto\r\n:3\r\n",
    ));
    let (e, _) = only_failure(&r);
    assert!(matches!(e, ConnError::Handshake { command: "AUTH", .. }), "{e:?}");
    assert_eq!(r.outcome.stats.requests, 0);
    // HELLO 3 answered +OK: not a server that switched to RESP3; no request goes.
    let r = opts.run(answering(b"+OK\r\n", b"+OK\r\n"));
    let (e, _) = only_failure(&r);
    assert_eq!(*e, ConnError::HandshakeReply { command: "HELLO", got: "a simple string (+)" });
    assert_eq!((r.commands, r.outcome.stats.requests), (3, 0));
}

#[test]
fn an_unanswered_handshake_fails_after_5s_without_timeout() {
    // No --timeout: a HELLO never answered fails each connection 5 s after its connect (it
    // waited forever), and the run ends then.
    let server = Server::new(us(10), |c| {
        if c.name() == "HELLO" {
            Action::Stall
        } else {
            Action::Reply(b"+OK\r\n".to_vec())
        }
    });
    let opts = Opts { handshake: Handshake::new(None, None, false, 0, true), clients: 2, ..Opts::default() };
    let r = opts.run(server);
    let (e, n) = only_failure(&r);
    assert_eq!((e, n), (&ConnError::Timeout { after: Duration::from_secs(5), handshake: true }, 2));
    assert_eq!(r.end, at_ms(5_000));
    assert_eq!(r.commands, 2, "HELLO alone on each socket");
}

#[test]
fn no_request_is_written_before_the_handshake_is_answered() {
    // AUTH and SELECT 5 answered 50 µs each on one queue: replies at 50 and 100 µs. The first
    // write carries the two alone, and the first request is written when SELECT's reply has
    // come (100 µs), not with them; on -k 0's every new socket alike.
    let hs = Handshake::new(None, Some("pw"), false, 5, false);
    for keepalive in [true, false] {
        let opts = Opts { n: Some(8), pipeline: 4, keepalive, handshake: hs.clone(), ..Opts::default() };
        let r = opts.run(Server::replying(b"+OK\r\n", us(50)));
        assert_eq!(r.outcome.stats.requests, 8);
        let sockets = if keepalive { 1 } else { 2 };
        assert_eq!(r.commands, 8 + 2 * sockets);
        for conn in 0..sockets {
            let w: Vec<_> = r.writes.iter().filter(|w| w.conn == conn).collect();
            assert_eq!(w[0].commands, 2, "the handshake alone: {w:?}");
            assert_eq!(w[1].commands, 4, "{w:?}");
            assert_eq!(w[1].at.nanos_since(w[0].at), 100_000, "written when SELECT's reply came: {w:?}");
        }
    }
    // A refused SELECT (a server with 2 databases): the connection fails, and the server read
    // no request.
    let refusing = Server::new(us(50), |c| {
        Action::Reply(if c.name() == "SELECT" {
            b"-ERR DB index is out of range\r\n".to_vec()
        } else {
            b"+OK\r\n".to_vec()
        })
    });
    let opts = Opts { n: Some(8), clients: 3, pipeline: 4, handshake: hs, ..Opts::default() };
    let r = opts.run(refusing);
    let (e, n) = only_failure(&r);
    assert_eq!((e.to_string().as_str(), n), ("SELECT failed: ERR DB index is out of range", 3));
    assert_eq!(r.commands, 3 * 2, "AUTH and SELECT on each socket, no request");
    assert_eq!(r.outcome.stats.requests, 0);
}

#[test]
fn an_open_loop_stall_shows_in_corrected_latency_only() {
    // 10 000 requests/s for 2 s on one connection, 10 µs each, the server stalled 100 ms at 1 s.
    let mut server = Server::replying(b"+OK\r\n", us(10));
    server.stalls.push((at_ms(1_000), at_ms(1_100)));
    let opts =
        Opts { n: Some(20_000), pipeline: 10_000, rps: Some(10_000.0), series: true, ..Opts::default() };
    let r = opts.run(server);
    let s = &r.outcome.stats;
    assert_eq!(s.requests, 20_000);
    // The schedule went on: 10 000 replies in each second; the stall shows in the second second.
    assert_eq!(s.series.iter().map(|x| x.requests).collect::<Vec<_>>(), [10_000, 10_000]);
    assert!(s.series[0].max < 100, "{:?}", s.series[0]);
    let second = respbench_core::stats::new_histogram(respbench_core::stats::SERIES_SIGFIG).unwrap();
    assert_eq!(s.series[1].max, second.highest_equivalent(100_010));
    // The request due at 1 s waits the whole stall; those due during it wait less.
    assert_eq!(s.latency.max(), s.latency.highest_equivalent(100_010));
    assert!(s.latency.value_at_quantile(0.99) > 50_000);
    let service = s.service.as_ref().unwrap();
    // Sent on time (the window is wide): their service time includes the stall as well…
    assert_eq!(service.max(), service.highest_equivalent(100_010));
    // …but those sent after it do not.
    assert!(service.value_at_quantile(0.50) <= 20);
}

#[test]
fn open_loop_late_sends_keep_intended_time() {
    // -P 1 at 10 000 requests/s, the server stalled 100 ms at 0.5 s: the window is the
    // bottleneck, requests go late. Service time counts from the late send (only the request in
    // flight at the stall waited it out), latency from the schedule.
    let mut server = Server::replying(b"+OK\r\n", us(10));
    server.stalls.push((at_ms(500), at_ms(600)));
    let opts = Opts { n: Some(10_000), rps: Some(10_000.0), ..Opts::default() };
    let r = opts.run(server);
    let s = &r.outcome.stats;
    assert_eq!(s.requests, 10_000);
    let service = s.service.as_ref().unwrap();
    assert_eq!(service.max(), service.highest_equivalent(100_010));
    assert!(service.value_at_quantile(0.99) <= 20, "{}", service.value_at_quantile(0.99));
    assert!(s.latency.value_at_quantile(0.99) > 20_000);
    assert_eq!(s.latency.max(), s.latency.highest_equivalent(100_010));
}

#[test]
fn a_poisson_schedule_has_the_requested_mean() {
    // 20 000 exponential gaps of mean 100 µs: about 2 s (the seed fixes the draw).
    let opts = Opts { n: Some(20_000), pipeline: 64, rps: Some(10_000.0), poisson: true, ..Opts::default() };
    let r = opts.run(Server::replying(b"+OK\r\n", us(1)));
    assert_eq!(r.outcome.stats.requests, 20_000);
    let secs = r.end.as_nanos() as f64 / 1e9;
    assert!((1.9..2.1).contains(&secs), "{secs}");
}

#[test]
fn a_stop_reaches_connections_waiting_for_their_next_arrival() {
    // One request per connection every 10 s; Ctrl-C at 1 s ends the test then, not at the next
    // arrival; first arrivals at 0, 2.5, 5, 7.5 s: only the first came.
    let opts = Opts { n: None, clients: 4, rps: Some(0.4), ..Opts::default() };
    let r = Opts { interrupt: Some(at_ms(1_000)), ..opts.clone() }.run(Server::replying(b"+OK\r\n", us(10)));
    assert_eq!(r.count(Happening::Ended), 4);
    assert_eq!(r.end, at_ms(1_000));
    assert_eq!(r.outcome.stats.requests, 1);
    // The test ended at the Ctrl-C, not at its one reply.
    assert_eq!(r.outcome.stats.end, at_ms(1_000));
    assert_eq!(r.outcome.stats.last_reply, at_us(10));
}

#[test]
fn idle_connections_wait_for_the_stop() {
    let opts = Opts {
        n: None,
        clients: 3,
        idle: true,
        handshake: Handshake::new(None, Some("pw"), false, 0, false),
        ..Opts::default()
    };
    let r = Opts { interrupt: Some(at_ms(5_000)), ..opts.clone() }.run(Server::replying(b"+OK\r\n", us(10)));
    assert_eq!(r.times(2, Happening::Ended), [at_ms(5_000)]);
    assert_eq!(r.count(Happening::Ended), 3);
    assert_eq!((r.outcome.stats.requests, r.commands), (0, 3));
}

// ---- the scripted cluster as one node's server ----

#[test]
fn one_node_of_a_cluster_serves_its_slots_and_redirects_the_rest() {
    for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
        one_node_of_a_cluster_on(shape);
    }
}

fn one_node_of_a_cluster_on(shape: Shape) {
    // A client of node 0 only (no --cluster): keys of node 0's slots served, the others
    // answered MOVED, each counted as an error reply; then node 0 dies and resets the socket.
    let cluster = Arc::new(Mutex::new(ClusterServer::new(&["127.0.0.1:6379", "127.0.0.1:6380"])));
    let script = ClusterServer::script(&cluster, 0);
    let server = Server::new(us(10), move |c| script(c));
    let opts = Opts { n: Some(1000), pipeline: 8, get: true, ..Opts::default() };
    let r = opts.run_on(server.clone(), shape);
    let node = cluster.lock().unwrap().nodes()[0].clone();
    let s = &r.outcome.stats;
    assert_eq!((s.requests, node.calls), (1000, 1000));
    assert_eq!(s.errors.total(), node.moved);
    assert!(node.moved > 300 && node.moved < 700, "about half: {}", node.moved);
    assert_eq!(s.errors.kinds()[0].prefix, "MOVED");

    cluster.lock().unwrap().kill(0);
    let r = opts.run_on(server, shape);
    let (e, _) = only_failure(&r);
    assert!(e.to_string().starts_with("read from 127.0.0.1:6379: "), "{e}");
    assert_eq!(r.outcome.stats.requests, 0);
}

// ---- the drain and read rules over any socket limits ----

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the socket takes per write, holds unread and the loop reads at once, every
    /// request of the budget is sent once and answered, with the keep-alive or without, over one
    /// queue or none.
    #[test]
    fn every_request_goes_and_comes_back_over_any_socket(
        n in 0u64..300,
        pipeline in 1u32..20,
        clients in 1usize..4,
        keepalive in any::<bool>(),
        write_max in 1usize..64,
        send_buffer in 1usize..128,
        read_buf in 1usize..32,
        service_us in 0u64..50,
        parallel in any::<bool>(),
        segments in proptest::option::of((1usize..16, 0u64..20)),
    ) {
        let mut server = Server::replying(b"$3\r\nVXK\r\n", us(service_us));
        server.parallel = parallel;
        server.socket = SocketConfig { write_max, send_buffer };
        server.segments = segments.map(|(size, gap)| (size, us(gap)));
        let opts = Opts { n: Some(n), clients, pipeline, keepalive, ..Opts::default() };
        let r = Opts { read_buf, ..opts }.run(server);
        prop_assert_eq!(r.stuck, 0);
        prop_assert!(r.outcome.failures.is_empty(), "{:?}", r.outcome.failures);
        prop_assert_eq!((r.outcome.stats.requests, r.commands), (n, n));
        prop_assert_eq!(r.outcome.stats.bytes_sent, n * b"*1\r\n$4\r\nPING\r\n".len() as u64);
        prop_assert_eq!(r.count(Happening::Ended), clients);
        if parallel && n > 0 && service_us > 0 && segments.is_none() {
            prop_assert_eq!(r.outcome.stats.latency.max(), service_us);
        }
    }
}

#[test]
fn an_open_loop_budget_spent_by_others_ends_the_waiting_connections() {
    // -n 10 --rps 100 on 4 connections: one every 40 ms each, first ones at 0, 10, 20, 30 ms;
    // the tenth request goes at 90 ms (connection 1), answered 10 µs later. The three others wait
    // for arrivals that will not come. mio's and uring's loops see the budget's end (the Watch)
    // at once and end them at 90 ms; smol's publisher sees it at its next look (100 ms) and nudges them
    // (connection 2's own timer is due then too). The figures are the same: the last reply.
    let opts = Opts { n: Some(10), clients: 4, rps: Some(100.0), ..Opts::default() };
    let server = || Server::replying(b"+PONG\r\n", us(10));
    for (shape, waiting_end) in
        [(Shape::Mio, at_ms(90)), (Shape::Uring, at_ms(90)), (Shape::Smol, at_ms(100))]
    {
        let r = opts.run_on(server(), shape);
        assert_eq!(r.outcome.stats.requests, 10);
        assert_eq!(r.outcome.stats.end, at_us(90_010), "{shape:?}");
        assert_eq!(r.times(1, Happening::Ended), [at_us(90_010)], "{shape:?}");
        for c in [0, 2, 3] {
            assert_eq!(r.times(c, Happening::Ended), [waiting_end], "{shape:?} connection {c}");
        }
    }
}

// ---- connection set-up ----

#[test]
fn connection_setup_is_timed_by_phase() {
    // tests/tests/connections.rs on virtual time: connects take 200 µs; AUTH and SELECT on one
    // queue of 10 µs, no request written before its connection's handshake is answered, so
    // connection 0's handshake replies come at 210 and 220 µs, connection 1's at 230 and 240
    // µs. With -k 0 every socket counts.
    let hs = Handshake::new(None, Some("pw"), false, 3, false);
    for (keepalive, sockets) in [(true, 2), (false, 10)] {
        let mut server = Server::replying(b"+OK\r\n", us(10));
        server.connect_delay = us(200);
        let opts = Opts { n: Some(10), clients: 2, keepalive, handshake: hs.clone(), ..Opts::default() };
        let r = opts.run(server);
        let setup = &r.outcome.stats.setup;
        assert_eq!(setup.count(), sockets);
        assert_eq!(r.outcome.stats.connections_opened, sockets);
        assert_eq!((setup.connect.min(), setup.connect.max()), (200, 200));
        assert_eq!(setup.tls.len(), 0);
        if keepalive {
            assert_eq!((setup.commands.min(), setup.commands.max()), (20, 40));
            assert_eq!((setup.total.min(), setup.total.max()), (220, 240));
        }
        assert_eq!(r.times(1, Happening::Connect)[0], Time::ZERO);
    }
}

#[test]
fn a_refused_connect_is_known_when_it_completes() {
    // The server is down for good from 1 s; connects take 5 ms: with --reconnect the attempts
    // are refused 5 ms after each starts, and each wait (20, 40, 80 ms) counts from the
    // refusal: attempts start 25, 45, 85 ms apart.
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.connect_delay = Duration::from_millis(5);
    server.outages = vec![(at_ms(1_000), Time::MAX)];
    let opts =
        Opts { n: None, reconnect: true, duration: Some(Duration::from_millis(1_200)), ..Opts::default() };
    let r = opts.run(server);
    let starts = r.times(0, Happening::Connect);
    let refused = r.times(0, Happening::Refused);
    assert_eq!(starts.len(), refused.len() + 1);
    for (s, f) in starts[1..].iter().zip(&refused) {
        assert_eq!(f.nanos_since(*s), 5_000_000);
    }
    let gaps: Vec<u64> = starts[1..].windows(2).map(|w| w[1].nanos_since(w[0]) / 1_000_000).collect();
    assert_eq!(gaps, [25, 45, 85]);
    assert_eq!(r.times(0, Happening::Ended), [at_ms(1_200)]);
}

#[test]
fn a_connect_slower_than_the_connect_timeout_fails_then() {
    // Connects take 3 s; --connect-timeout 1s fails the connection at 1 s, naming the address
    // and the limit; with --reconnect each attempt is cut at 1 s and the backoff (10, 20, 40
    // ms) counts from there; the attempt under way at the stop (3 s) ends at its limit. A
    // connect of 999 ms is through.
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.connect_delay = Duration::from_secs(3);
    let opts = Opts { connect_timeout: Some(Duration::from_secs(1)), ..Opts::default() };
    let r = opts.run(server.clone());
    assert_eq!(r.times(0, Happening::Ended), [at_ms(1_000)]);
    assert_eq!(r.outcome.stats.requests, 0);
    let failure = r.outcome.failures.first().map(|(e, _)| e.to_string()).unwrap_or_default();
    assert!(failure.contains("no answer within 1s (--connect-timeout)"), "{failure}");
    assert!(failure.contains("Could not connect to Redis at"), "{failure}");

    let reconnecting =
        Opts { n: None, reconnect: true, duration: Some(Duration::from_millis(3_000)), ..opts.clone() };
    let r = reconnecting.run(server.clone());
    let starts = r.times(0, Happening::Connect);
    assert_eq!(starts, [at_ms(0), at_ms(1_010), at_ms(2_030)]);
    assert_eq!(r.times(0, Happening::Ended), [at_ms(3_030)]);
    assert_eq!(r.outcome.stats.requests, 0);

    server.connect_delay = Duration::from_millis(999);
    let r = opts.run(server);
    assert_eq!(r.outcome.stats.requests, 5);
    assert!(r.outcome.failures.is_empty(), "{:?}", r.outcome.failures);
}

#[test]
fn reconnect_attempts_are_paced_by_the_factor_and_limited() {
    // memtier's --reconnect-on-error --reconnect-backoff-factor 2 --max-reconnect-attempts 3:
    // the server dies at 100 ms for good and refuses connects 5 ms after each starts. Waits of
    // 2, 4 and 8 s from each failure; the third refusal ends the connection (a failure, long
    // before the 60 s test would end).
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    server.connect_delay = Duration::from_millis(5);
    server.outages = vec![(at_ms(100), Time::MAX)];
    let backoff = Backoff {
        first: Duration::from_secs(2),
        max: Duration::from_secs(3600),
        factor: 2.0,
        attempts: Some(3),
    };
    let opts = Opts {
        n: None,
        reconnect: true,
        backoff,
        duration: Some(Duration::from_secs(60)),
        ..Opts::default()
    };
    let r = opts.run(server.clone());
    assert_eq!(r.times(0, Happening::Connect), [at_ms(0), at_ms(2_100), at_ms(6_105), at_ms(14_110)]);
    assert_eq!(r.times(0, Happening::Refused).len(), 3);
    assert_eq!(r.times(0, Happening::Ended), [at_ms(14_115)]);
    let (e, n) = only_failure(&r);
    assert_eq!(n, 1);
    assert!(e.to_string().contains("Could not connect to Redis at"), "{e}");
    // memtier's default pacing: 1 s before every attempt, no limit: the test's stop ends it.
    let every_second = Backoff { first: Duration::from_secs(1), factor: 1.0, attempts: None, ..backoff };
    let opts = Opts { backoff: every_second, duration: Some(Duration::from_secs(4)), ..opts };
    let r = opts.run(server);
    assert_eq!(r.times(0, Happening::Connect), [at_ms(0), at_ms(1_100), at_ms(2_105), at_ms(3_110)]);
    assert!(r.outcome.failures.is_empty(), "{:?}", r.outcome.failures);
    assert_eq!(r.times(0, Happening::Ended), [at_ms(4_000)]);
}

// ---- every arrival accounted for (issue #24) ----

/// `--rps 1000 --duration 2s -c 2 -P 4`: 2000 arrivals, the server's path dead from 0.5 s
/// for good, by `fault`. Checks that every arrival is completed, lost, abandoned or unsent,
/// exactly, and gives the result.
fn dead_path_from_half_a_second(fault: &str) -> SimResult {
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    match fault {
        "stall" => server.stalls.push((at_ms(500), Time::MAX)),
        _ => server.outages.push((at_ms(500), Time::MAX)),
    }
    let opts = Opts {
        n: None,
        clients: 2,
        pipeline: 4,
        rps: Some(1000.0),
        duration: Some(Duration::from_secs(2)),
        reconnect: fault == "outage, --reconnect",
        ..Opts::default()
    };
    let r = opts.run(server);
    let s = &r.outcome.stats;
    assert_eq!(s.arrivals(), 2000, "{fault}: {s:?}");
    assert_eq!(s.requests + s.lost + s.abandoned + s.unsent, 2000, "{fault}");
    // The histogram holds the completed and the lower bounds.
    assert_eq!(s.latency.len(), s.requests + s.lower_bounds, "{fault}");
    assert!(s.lower_bounds <= s.abandoned + s.unsent, "{fault}");
    // What went before the fault was answered: one every millisecond.
    assert!((499..=501).contains(&s.requests), "{fault}: {}", s.requests);
    r
}

#[test]
fn a_stall_to_the_end_leaves_no_arrival_unaccounted() {
    let r = dead_path_from_half_a_second("stall");
    let s = &r.outcome.stats;
    // The window's 8 are abandoned at the end of the grace (4 s); the rest were never sent.
    assert_eq!((s.abandoned, s.lost, s.failed_clients), (8, 0, 0));
    // Every unanswered one is in the histogram, a lower bound.
    assert_eq!(s.lower_bounds, s.abandoned + s.unsent);
    assert_eq!(s.unsent, 2000 - s.requests - 8);
    assert_eq!(s.end, at_ms(4_000));
    // The stall shows in the corrected latencies as a stall in the middle would: the request
    // due at 0.5 s waited at least to the end (3.5 s); most waited 2 s or more.
    assert!(s.latency.max() >= 3_499_000, "{}", s.latency.max());
    assert!(s.latency.value_at_quantile(0.5) >= 2_000_000, "{}", s.latency.value_at_quantile(0.5));
    // The service times are of completed requests only.
    assert_eq!(s.service.as_ref().unwrap().len(), s.requests);
}

#[test]
fn an_outage_to_the_end_leaves_no_arrival_unaccounted() {
    // The sockets are reset at 0.5 s: without --reconnect each connection fails, its 0 or 1
    // in flight lost and its later arrivals unsent; with it, it stays down to the end.
    for fault in ["outage", "outage, --reconnect"] {
        let r = dead_path_from_half_a_second(fault);
        let s = &r.outcome.stats;
        assert_eq!(s.abandoned, 0, "{fault}");
        assert!(s.lost <= 2, "{fault}: {}", s.lost);
        assert!(s.unsent >= 1490, "{fault}: {}", s.unsent);
    }
    // Failed for good, the clients measured to 0.5 s: nothing was waiting for the server
    // after it, so the arrivals due then are unsent without a latency (issue #35).
    let s = dead_path_from_half_a_second("outage").outcome.stats;
    assert_eq!((s.failed_clients, s.lower_bounds, s.end), (2, 0, at_ms(500)));
    // --reconnect waits for the server to come back: the outage is in the latencies to the end.
    let s = dead_path_from_half_a_second("outage, --reconnect").outcome.stats;
    assert_eq!((s.failed_clients, s.lower_bounds), (0, s.unsent));
    assert_eq!(s.end, at_ms(2_000));
    assert!(s.latency.max() >= 1_499_000, "{}", s.latency.max());
}

/// Issue #35: `--rps 1000 --duration 10s -c 2 -P 4` against a server that, by `fault`, is
/// killed at 3 s (`kill`: every socket reset, the clients' connections failed for good), stops
/// answering at 2.5 s and is killed at 3 s (`stall, kill`), or stops answering at 3 s with its
/// sockets up to the end (`stall`). Every arrival is accounted for either way.
fn dead_from_three_seconds_of_ten(fault: &str) -> respbench_core::Stats {
    let mut server = Server::replying(b"+PONG\r\n", us(100));
    match fault {
        "kill" => server.outages.push((at_ms(3_000), Time::MAX)),
        "stall, kill" => {
            server.stalls.push((at_ms(2_500), Time::MAX));
            server.outages.push((at_ms(3_000), Time::MAX));
        }
        _ => server.stalls.push((at_ms(3_000), Time::MAX)),
    }
    let opts = Opts {
        n: None,
        clients: 2,
        pipeline: 4,
        rps: Some(1000.0),
        duration: Some(Duration::from_secs(10)),
        ..Opts::default()
    };
    let s = opts.run(server).outcome.stats;
    assert_eq!(s.arrivals(), 10_000, "{fault}: {s:?}");
    assert_eq!(s.latency.len(), s.requests + s.lower_bounds, "{fault}");
    s
}

#[test]
fn a_server_killed_mid_open_loop_is_measured_to_its_failure() {
    // Before the failure every arrival was sent and answered in 100 µs; in flight at 3 s, 0 or 1
    // each, lost; the 7000 arrivals due after it were never sent, and waited for nothing: they
    // count as unsent, not as latencies up to the planned end (7 s for the first).
    let s = dead_from_three_seconds_of_ten("kill");
    assert_eq!(s.failed_clients, 2);
    assert_eq!(s.end, at_ms(3_000));
    assert!((2_999..=3_001).contains(&s.requests), "{}", s.requests);
    assert!(s.lost <= 2, "{}", s.lost);
    assert_eq!(s.abandoned, 0);
    assert_eq!(s.unsent, 10_000 - s.requests - s.lost);
    assert_eq!(s.lower_bounds, 0);
    assert!(s.latency.max() < 1_000, "{} us", s.latency.max());
}

#[test]
fn arrivals_held_back_before_a_failure_wait_to_it() {
    // Silent from 2.5 s, killed at 3 s: the one request each client had sent at 2.5 s is lost
    // at 3 s; the 498 other arrivals due in between, held back behind it (-P 4 in batch mode
    // sends the next batch once the last is answered), never went, and waited for the server
    // from when they were due to the failure (up to 0.5 s); those due after it count only as
    // unsent.
    let s = dead_from_three_seconds_of_ten("stall, kill");
    assert_eq!((s.failed_clients, s.requests, s.lost, s.abandoned), (2, 2_500, 2, 0));
    assert_eq!(s.end, at_ms(3_000));
    assert_eq!(s.unsent, 10_000 - 2_500 - 2);
    assert_eq!(s.lower_bounds, 500 - 2);
    // The longest wait is bounded by the failure, 0.5 s after the stall began.
    let max = s.latency.max();
    assert!((495_000..=500_000).contains(&max), "{max} us");
}

#[test]
fn a_server_silent_to_the_end_still_stalls_the_open_loop_to_its_end() {
    // The sockets stay up and the server reads but never answers: the clients wait to the stop
    // (10 s) and its grace (12 s), and the stall counts to the end as before: the arrival due at
    // 3 s waited 9 s at least, and the arrivals never sent are lower bounds up to the stop.
    let s = dead_from_three_seconds_of_ten("stall");
    assert_eq!((s.failed_clients, s.lost, s.abandoned), (0, 0, 8));
    assert_eq!(s.end, at_ms(12_000));
    assert_eq!(s.unsent, 10_000 - s.requests - 8);
    assert_eq!(s.lower_bounds, s.abandoned + s.unsent);
    assert!(s.latency.max() >= 8_999_000, "{} us", s.latency.max());
    assert!(s.latency.value_at_quantile(0.5) >= 2_000_000, "{}", s.latency.value_at_quantile(0.5));
}

#[test]
fn an_open_loop_that_keeps_up_has_nothing_unsent() {
    let opts = Opts {
        n: None,
        clients: 2,
        rps: Some(1000.0),
        duration: Some(Duration::from_secs(1)),
        ..Opts::default()
    };
    let r = opts.run(Server::replying(b"+PONG\r\n", us(100)));
    let s = &r.outcome.stats;
    assert_eq!((s.requests, s.abandoned, s.unsent, s.lower_bounds), (1000, 0, 0, 0));
    assert_eq!(s.arrivals(), 1000);
}

#[test]
fn arrivals_due_before_the_stop_go_in_the_grace() {
    // -P 1 at 10 000/s on a server that takes 150 µs a request: the window is full when each
    // arrival comes due, and a third of them are still waiting for it at the 1 s stop; they are
    // part of the test and go in the grace (0.5 s of them), answered: nothing is unsent or
    // abandoned.
    let opts =
        Opts { n: None, rps: Some(10_000.0), duration: Some(Duration::from_secs(1)), ..Opts::default() };
    let r = opts.run(Server::replying(b"+PONG\r\n", us(150)));
    let s = &r.outcome.stats;
    assert_eq!((s.abandoned, s.unsent, s.lost), (0, 0, 0));
    assert_eq!((s.requests, s.arrivals()), (10_000, 10_000));
    assert_eq!(s.end, s.last_reply);
    assert!(s.end > at_ms(1_400), "{:?}", s.end);
}

// ---- events (--at): the disruption's window on virtual time ----

#[test]
fn an_event_that_stalls_then_errors_is_a_window_to_its_last_error() {
    // At 5 s the server stops serving for 300 ms, then answers errors for 200 ms, then recovers:
    // the window is from the event to the last error reply (5.5 s, less a service time), the
    // backlog's latency shows the stall, and the errors are counted in the window by kind.
    let mut server = Server::new(us(50), |c| {
        if (at_ms(5300)..at_ms(5500)).contains(&c.at) {
            Action::Reply(b"-ERR busy\r\n".to_vec())
        } else {
            Action::Reply(b"+PONG\r\n".to_vec())
        }
    });
    server.stalls = vec![(at_ms(5000), at_ms(5300))];
    let opts = Opts {
        n: None,
        clients: 4,
        pipeline: 16,
        mode: PipelineMode::Window,
        rps: Some(2000.0),
        duration: Some(Duration::from_secs(8)),
        series: true,
        events: vec![Duration::from_secs(5)],
        ..Opts::default()
    };
    let r = opts.run_on(server, Shape::Mio);
    let d = r.progress.collector().disruptions();
    assert_eq!(d.len(), 1);
    let d = &d[0];
    let window = d.recovered.expect("recovered").as_micros();
    assert!((499_000..=500_000).contains(&window), "{window} µs: {d:?}");
    assert!(d.disrupted);
    // The baseline: 50 µs of service, 5 s of windows.
    assert_eq!((d.baseline_windows, d.baseline_p99), (50, 50));
    // Every error of the test is in the window: the 2,000/s of [5.3 s, 5.5 s) and the stall's
    // backlog the script answered then.
    assert_eq!(d.error_kinds, [("ERR".to_string(), d.errors)]);
    assert!(d.errors >= 400, "{d:?}");
    assert_eq!(d.errors, r.outcome.stats.errors.total());
    // The backlog of the stall waited up to 300 ms (the windows' histograms keep 2 figures).
    assert!((299_000..=303_000).contains(&d.max), "{}", d.max);
    // The span: the event's window to the first healthy one (5.5 s), 5 windows.
    assert_eq!((d.from, d.windows), (Duration::from_secs(5), 5));
    assert_eq!(d.requests, (0..5).map(|k| d.series[50 + k].requests).sum::<u64>());
}

#[test]
fn a_slowdown_to_the_end_is_not_recovered() {
    // From 3 s to the end every reply takes 5 ms: the window never closes.
    let mut server = Server::replying(b"+PONG\r\n", us(50));
    server.stalls = (0..400).map(|k| (at_ms(3000 + 5 * k), at_ms(3000 + 5 * k + 4))).collect();
    let opts = Opts {
        n: None,
        clients: 2,
        pipeline: 4,
        mode: PipelineMode::Window,
        rps: Some(500.0),
        duration: Some(Duration::from_secs(5)),
        series: true,
        events: vec![Duration::from_secs(3)],
        ..Opts::default()
    };
    let r = opts.run_on(server, Shape::Mio);
    let d = &r.progress.collector().disruptions()[0];
    assert_eq!(d.recovered, None, "{d:?}");
    assert!(d.disrupted && d.max >= 3000, "{d:?}");
}

// ---- bulk bodies dropped unread (issue #37) ----

/// A reply of bulk strings of these lengths: one bulk for one length, else an array of them
/// (an LRANGE reply's elements).
fn bulk_reply(lens: &[usize]) -> Vec<u8> {
    let bulk = |len: usize| {
        let mut b = format!("${len}\r\n").into_bytes();
        b.extend((0..len).map(|i| b"$\r\n*x"[i % 5]));
        b.extend_from_slice(b"\r\n");
        b
    };
    match lens {
        [one] => bulk(*one),
        _ => {
            let mut r = format!("*{}\r\n", lens.len()).into_bytes();
            lens.iter().for_each(|&l| r.extend(bulk(l)));
            r
        }
    }
}

#[test]
fn bodies_in_segments_of_every_size_are_skipped_exactly() {
    // Below, at and above the least worth a discard, and an LRANGE-like array of them.
    let from = respbench_driver::DISCARD_FROM as usize;
    let replies: Vec<Vec<usize>> = vec![
        vec![0],
        vec![from - 1],
        vec![from],
        vec![from + 1],
        vec![100_000],
        vec![3, from * 2, 5, 40_000, 0],
    ];
    for lens in &replies {
        let reply = bulk_reply(lens);
        for segment in [None, Some(1), Some(7), Some(4096), Some(from - 3), Some(from + 5), Some(65_536)] {
            // At most ~5,000 pieces a test.
            let pieces = segment.map_or(1, |s| reply.len().div_ceil(s));
            let n = (5_000 / pieces as u64).clamp(2, 20);
            let mut server = Server::replying(&reply, us(10));
            server.segments = segment.map(|s| (s, us(3)));
            for (pipeline, read_buf) in [(1, READ_BUF), (4, READ_BUF), (3, 5)] {
                let opts = Opts { n: Some(n), clients: 2, pipeline, read_buf, ..Opts::default() };
                let case = format!("{lens:?} in segments of {segment:?}, -P {pipeline}, reads of {read_buf}");
                let r = opts.run(server.clone());
                let s = &r.outcome.stats;
                assert!(r.outcome.failures.is_empty(), "{case}: {:?}", r.outcome.failures);
                assert_eq!((s.requests, s.errors.total()), (n, 0), "{case}");
                // Every byte counted once, read or dropped.
                assert_eq!(s.bytes_received, n * reply.len() as u64, "{case}");
                let bodies: usize = lens.iter().filter(|&&l| l >= from).sum();
                assert!(r.discarded <= n * bodies as u64, "{case}: {} dropped", r.discarded);
                // A body of DISCARD_FROM or more after what a read took (4 KiB at most here)
                // is dropped.
                let sure = lens.iter().any(|&l| l >= from + 4096);
                if sure && (read_buf < from || segment.is_some_and(|s| s <= 4096)) {
                    assert!(r.discarded > 0, "{case}: nothing dropped");
                }
                if bodies == 0 {
                    assert_eq!(r.discarded, 0, "{case}");
                }
            }
        }
    }
}
