//! One client of a test as a state machine: its connections (one per node: one against a single
//! server), its request source and its router.
//!
//! A [`Client`] owns everything one client of the benchmark has, and shares nothing mutable with
//! other clients (the test's [`crate::Budget`] and [`crate::Stop`] are atomics in the plan). Its
//! parts talk by calls inside one state machine: the request source draws the client's requests
//! (budget, open-loop schedule, mix, keys, gaps: written once, here), the router says which node
//! each goes to and takes back the ones a cluster redirects, and each [`Connection`] speaks the
//! protocol of one socket. The backend talks to the client by node: inputs are `handle_*(node,
//! …)`, outputs are `poll_transmit(node)`, `poll_event(node)`, `poll_timeout(node)` and
//! [`Client::poll_wake`], which names the nodes whose connections must be drained because the
//! client queued requests for them or is done. One server is the one-node case of the same path.

use std::sync::Arc;
use std::time::Duration;

use crate::cluster::{Redirect, Request, Router, SLOTS};
use crate::conn::{
    earliest, Answered, Connection, Event, IoFailure, IoOp, Pending, ASKING_REQ, CACHE_GET, CACHE_SET, DIRECT,
};
use crate::plan::{OpenLoop, PipelineMode, Plan, RampKind, Workload};
use crate::replay::Player;
use crate::rng::Rng;
use crate::shared::Endpoint;
use crate::stats::Stats;
use crate::template::{KeyGen, Template};
use crate::wire::Chunk;
use crate::Time;

/// `ASKING`, sent before a request that an `ASK` redirect sent to a slot's importing node.
const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// Where one client's requests come from: the budget it draws from, its open-loop schedule,
/// the mix, the keys and the arrival gaps, each from its own stream of the run's seed.
#[derive(Debug)]
pub(crate) struct Source {
    stream: u64,
    keys: KeyGen,
    /// The keys of the mix's commands that have their own (`--mix get@zipf`), by command;
    /// empty when none has.
    part_keys: Vec<Option<KeyGen>>,
    /// Draws the command of each request in a mix.
    mix_rng: Rng,
    /// Its own stream for arrival gaps, so the keys drawn do not depend on the schedule.
    schedule_rng: Rng,
    /// Open loop: the intended time of the next request (`Time::MAX` before the schedule
    /// starts), and the mean gap.
    next_due: Time,
    interval: Duration,
    /// A sequence's length (1 without one). In an open loop a sequence arrives whole, its
    /// `seq_len` commands at one intended time, and the next a sequence's gap later
    /// (`interval` is that gap: the rate still counts commands); `seq_arrived` of the current
    /// one have arrived.
    seq_len: u64,
    seq_arrived: u64,
    /// A sequence (or a mix sent in turn per client): the commands this client has drawn, and
    /// those of the sequence it started that the budget gave it and it has not yet been
    /// granted ([`Source::take`]).
    seq_drawn: u64,
    seq_left: u64,
    /// `-k 0` in an open loop: requests taken from the budget before the new socket they will
    /// go on was asked for ([`Source::reserve`]), granted first by the next [`Source::take`].
    reserved: u64,
    /// A replay: the records of the original client this one plays, instead of the budget,
    /// the schedule and the mix.
    player: Option<Player>,
}

impl Source {
    /// The source of client `stream` of `plan`.
    pub(crate) fn new(plan: &Plan, stream: u64) -> Source {
        let seq_len = plan.workload.mix.as_ref().and_then(crate::Mix::sequence_len).unwrap_or(1).max(1);
        let per_command = plan.conn.open_loop.map_or(Duration::MAX, |ol| ol.interval(plan.connections));
        Source {
            stream,
            keys: KeyGen::new(plan.workload.keys.clone(), Rng::for_stream(plan.seed, stream)),
            part_keys: plan.workload.mix.as_ref().map_or_else(Vec::new, |m| {
                (0..m.len())
                    .map(|i| {
                        // Each command's keys from a stream of their own.
                        let seed = plan.seed ^ 0x6b65_7973_0000_0000 ^ (i as u64).wrapping_mul(0x9e37_79b9);
                        m.keys(i).map(|k| KeyGen::new(k.clone(), Rng::for_stream(seed, stream)))
                    })
                    .collect()
            }),
            mix_rng: Rng::for_stream(plan.seed ^ 0x0000_0000_3a1c_e5ed, stream),
            schedule_rng: Rng::for_stream(plan.seed ^ 0x5eed_5c4e_d01e_0000, stream),
            next_due: Time::MAX,
            interval: per_command
                .checked_mul(u32::try_from(seq_len).unwrap_or(u32::MAX))
                .unwrap_or(Duration::MAX),
            seq_len,
            seq_arrived: 0,
            seq_drawn: 0,
            seq_left: 0,
            reserved: 0,
            player: plan.workload.mix.as_ref().and_then(|m| m.feed.clone()).map(|f| Player::new(f, stream)),
        }
    }

    /// Takes up to `want` requests from `plan`'s budget. In a sequence a client takes a whole
    /// sequence from the budget when it starts one, and its commands are granted from that, so
    /// no sequence is cut: the budget's last grant, smaller than a sequence, still gives one.
    fn take(&mut self, plan: &Plan, want: u64) -> u64 {
        let early = self.reserved.min(want);
        self.reserved -= early;
        early + self.take_budget(plan, want - early)
    }

    /// Takes one request from the budget now, for the next [`Source::take`]: whether there was
    /// one (`-k 0` asks for a new socket only for a request it has).
    fn reserve(&mut self, plan: &Plan) -> bool {
        let got = self.take_budget(plan, 1);
        self.reserved += got;
        got > 0
    }

    /// [`Source::take`] from the budget alone.
    fn take_budget(&mut self, plan: &Plan, want: u64) -> u64 {
        if want == 0 {
            return 0;
        }
        let len = self.seq_len;
        if len == 1 {
            // No sequence (or one of a single command, which is the same).
            return plan.budget.take(want);
        }
        let mut got = 0;
        while got < want {
            if self.seq_left == 0 {
                if plan.budget.take(len) == 0 {
                    break;
                }
                self.seq_left = len;
            }
            let k = self.seq_left.min(want - got);
            self.seq_left -= k;
            got += k;
        }
        got
    }

    /// Whether every request has been handed out: the budget is exhausted, and so is the
    /// sequence this client started.
    fn spent(&self, plan: &Plan) -> bool {
        if let Some(p) = &self.player {
            return p.spent();
        }
        plan.budget.is_exhausted() && self.seq_left == 0 && self.reserved == 0
    }

    /// Starts the open-loop schedule at `now`, once: the clients' first arrivals spread over one
    /// interval.
    fn start(&mut self, plan: &Plan, now: Time) {
        if plan.conn.open_loop.is_some() && self.next_due == Time::MAX {
            let n = plan.connections.max(1);
            if let Some(r) = plan.ramp.filter(|r| r.kind == RampKind::Rps) {
                // A rate ramp's schedule starts with the ramp, whenever the socket came up:
                // the first arrivals spread over one gap of the first step.
                let share = (self.stream % n) as f64 / n as f64 * self.seq_len as f64;
                self.next_due = r.advance(r.start, share, plan.connections);
                return;
            }
            let interval = u64::try_from(self.interval.as_nanos()).unwrap_or(u64::MAX);
            self.next_due = now + Duration::from_nanos(interval / n * (self.stream % n));
        }
    }

    /// The arrivals of the schedule still to come before `until`, each taken from `plan`'s
    /// budget: their intended times, in order.
    fn remaining<'a>(&'a mut self, plan: &'a Plan, until: Time) -> impl Iterator<Item = Time> + 'a {
        let mut replayed = self.player.as_mut().map(|p| p.remaining(until).into_iter());
        std::iter::from_fn(move || {
            if let Some(r) = replayed.as_mut() {
                return r.next();
            }
            let ol = plan.conn.open_loop?;
            if self.next_due >= until || self.take(plan, 1) == 0 {
                return None;
            }
            Some(self.arrive(ol, plan))
        })
    }

    /// The intended time of the next arrival.
    fn due(&self) -> Time {
        self.player.as_ref().map_or(self.next_due, Player::due)
    }

    /// Takes the arrival that is due: its intended time; the next one follows a gap later (in a
    /// sequence, after its last command).
    fn arrive(&mut self, ol: OpenLoop, plan: &Plan) -> Time {
        let intended = self.next_due;
        self.seq_arrived += 1;
        if self.seq_arrived >= self.seq_len {
            self.seq_arrived = 0;
            self.next_due = match plan.ramp.filter(|r| r.kind == RampKind::Rps) {
                // A rate ramp: the gap is counted in arrivals (one, or an exponential draw of
                // mean one) and laid over the steps' rates.
                Some(r) => {
                    let units = if ol.poisson { -(1.0 - self.schedule_rng.next_f64()).ln() } else { 1.0 };
                    r.advance(intended, units * self.seq_len as f64, plan.connections)
                }
                None => intended + self.gap(ol),
            };
        }
        intended
    }

    fn gap(&mut self, ol: OpenLoop) -> Duration {
        if !ol.poisson {
            return self.interval;
        }
        // Inverse transform of an exponential with the given mean; 1 - u is in (0, 1].
        let u = self.schedule_rng.next_f64();
        let nanos = -(1.0 - u).ln() * self.interval.as_nanos() as f64;
        Duration::from_nanos(nanos.min(u64::MAX as f64 / 2.0) as u64)
    }

    /// The keys command `part` of the mix draws from: its own, or the workload's.
    #[inline]
    fn keys_for(&mut self, part: u16) -> &mut KeyGen {
        match self.part_keys.get_mut(usize::from(part)) {
            Some(Some(k)) => k,
            _ => &mut self.keys,
        }
    }

    /// Whether the request of command `part` just drawn reads a key the mix's writer had
    /// written ([`crate::Mix::written`]).
    fn read_written(&mut self, plan: &Plan, part: u16) -> bool {
        let Some(m) = plan.workload.mix.as_ref().filter(|m| m.tracks(usize::from(part))) else {
            return false;
        };
        // The requests that may be in flight: every connection's window.
        let margin = plan.connections.saturating_mul(u64::from(plan.conn.pipeline.max(1)));
        let key = self.keys_for(part).last;
        m.written(key, margin)
    }

    /// The command of the next request: the template and its index in the mix (0 without).
    #[inline(always)]
    fn pick<'w>(&mut self, workload: &'w Workload) -> (&'w Template, u16) {
        match &workload.mix {
            None => (&workload.template, 0),
            Some(m) if m.sequence_len().is_some() => {
                // The client's own place in the sequence: its commands go in turn on its connection.
                let i = (self.seq_drawn % m.templates.len() as u64) as usize;
                self.seq_drawn += 1;
                (&m.templates[i], i.min(usize::from(u16::MAX)) as u16)
            }
            Some(m) if m.is_in_turn() => {
                // `--mix-in-turn`: the test's next place in the round, a request at a time (or
                // the client's own, per client; a mix in turn is no sequence).
                let i = m.turn(&mut self.seq_drawn);
                (&m.templates[i], i.min(usize::from(u16::MAX)) as u16)
            }
            Some(m) => {
                let i = m.pick(&mut self.mix_rng);
                // Mixes are checked to a few commands by the command line; u16 holds any real one.
                (&m.templates[i], i.min(usize::from(u16::MAX)) as u16)
            }
        }
    }
}

/// When client `index` of a test with `ramp` may open its sockets: `None` (at once) without a
/// clients ramp or in its first step.
fn plan_start(ramp: &Option<crate::plan::Ramp>, index: u64) -> Option<Time> {
    let r = ramp.filter(|r| r.kind == RampKind::Clients)?;
    match r.client_start(index) {
        Some(t) if t <= r.start => None,
        Some(t) => Some(t),
        None => Some(Time::MAX),
    }
}

/// One client of a test, without its sockets: its connection to each node, its request source
/// and its router.
///
/// Inputs are `handle_*`, outputs `poll_*`, each for one node's connection (node 0 against one
/// server); see the crate docs for the order to call them in. After the outputs of a node,
/// drain [`Client::poll_wake`]: the other nodes whose connections have something to do.
#[derive(Debug)]
pub struct Client {
    plan: Arc<Plan>,
    conns: Vec<Connection>,
    source: Source,
    router: Router,
    /// Requests drawn and not finished: on the wire, queued, or waiting to retry. The window
    /// or batch (`-P`) spans the client's nodes.
    outstanding: usize,
    /// Closed loop: requests granted by the budget and not yet drawn (the output buffer was
    /// full). In batch mode, what is left of the batch being drawn.
    credits: u64,
    /// `-k 0`: this socket's batch has been taken (in an open loop: drawn); no more requests on
    /// it.
    batch_taken: bool,
    /// `--reconnect-every`: the requests granted to the current socket.
    on_socket: u64,
    /// The nodes whose connections must be drained, once each.
    wake: Vec<usize>,
    woken: Vec<bool>,
    /// The test's stop has been passed on (what was queued dropped, every node woken).
    stop_told: bool,
    /// Open loop: the intended times of the measured requests that were drawn and queued for a
    /// node but never sent when the test stopped; [`Client::settle`] counts them as unsent.
    queued_at_stop: Vec<Time>,
    /// `--retry-on`: when the requests that were waiting to be sent again at the test's stop
    /// started (their intended or first send); [`Client::settle`] counts them as abandoned.
    retrying_at_stop: Vec<Time>,
    /// The client's end has been accounted for ([`Client::settle`]): its unsent arrivals, and
    /// whether its connections all failed.
    settled: bool,
    /// The client's index in its test (a delivery stamp's publisher).
    index: u64,
    /// Delivery stamps written: the next one's sequence number.
    stamped: u64,
    /// `--verify`: the versions of the client's own keys.
    tracker: crate::verify::Tracker,
    /// `--follow-cursor`: the cursor this client follows.
    follow: Option<crate::cursor::Follow>,
    /// A clients ramp (`--ramp clients …`): the client opens no socket before this time, the
    /// start of its step (`Time::MAX`: it is past the ramp's last level and never does);
    /// `None` once it may.
    waits_until: Option<Time>,
    /// Whether every request goes the plain way, decided once (issue #55): one server, not
    /// routed (no `--retry-on`), no `--verify`, no delivery stamp, no mix that tracks what its
    /// writer wrote. [`Client::draw_one`] then writes the template and nothing else.
    plain: bool,
    /// [`Client::routed`], decided once.
    routed: bool,
    /// `--cache-aside`: the keys of the `SET`s after misses (pinned to each key that missed),
    /// and the misses of the input being read, each its key and its `GET`'s start; `None`
    /// without it.
    cache: Option<(KeyGen, Vec<(u64, Time)>)>,
}

impl Client {
    /// Client `index` (0-based, unique within the test) following `plan`: one connection per
    /// node of the plan (one against a single server).
    pub fn new(plan: Arc<Plan>, index: u64) -> Client {
        let plan_ramp = plan.ramp;
        let nodes = plan.nodes();
        let conns = (0..nodes)
            .map(|n| {
                let handshake = match &plan.cluster {
                    Some(c) => c.handshake(n, &plan.conn.handshake),
                    None => plan.conn.handshake.clone(),
                };
                Connection::new(Arc::clone(&plan), handshake, nodes > 1)
            })
            .collect();
        let follow = plan.workload.mix.as_ref().and_then(|m| {
            m.cursor_arg().map(|arg| crate::cursor::Follow::new(arg).with_limit(m.cursor_limit()))
        });
        let plain = follow.is_none()
            && plan.cache_aside.is_none()
            && plan.cluster.is_none()
            && plan.retry.is_none()
            && plan.resend.is_none()
            && plan.verify.is_none()
            && plan.workload.template.stamp_at().is_none()
            && plan.workload.mix.as_ref().is_none_or(|m| {
                m.templates.iter().all(|t| t.stamp_at().is_none())
                    && (0..m.templates.len()).all(|i| !m.tracks(i))
            });
        let cache = plan.cache_aside.as_ref().map(|_| {
            let rng = Rng::for_stream(plan.seed ^ 0x00ca_c4e0_0000_0000, index);
            (KeyGen::new(crate::keys::KeySpace::sequential_range(0, 0), rng), Vec::new())
        });
        Client {
            plain,
            routed: plan.cluster.is_some() || plan.retry.is_some() || plan.resend.is_some(),
            source: Source::new(&plan, index),
            router: Router::new(index, nodes),
            plan,
            conns,
            outstanding: 0,
            credits: 0,
            batch_taken: false,
            on_socket: 0,
            wake: Vec::new(),
            woken: vec![false; nodes],
            stop_told: false,
            queued_at_stop: Vec::new(),
            retrying_at_stop: Vec::new(),
            settled: false,
            index,
            stamped: 0,
            tracker: crate::verify::Tracker::default(),
            follow,
            waits_until: plan_start(&plan_ramp, index),
            cache,
        }
    }

    // ---- getters ----

    /// How many connections the client has: one per node, and room for nodes that may appear.
    pub fn nodes(&self) -> usize {
        self.conns.len()
    }

    /// Where node `node`'s connection goes over several nodes; `None` against one server (the
    /// test's endpoint) and for room kept for a node that has not appeared.
    pub fn endpoint(&self, node: usize) -> Option<Endpoint> {
        self.router.endpoint(self.plan.cluster.as_ref(), node)
    }

    /// Whether node `node` is room kept for a node that has not appeared: the backend opens no
    /// socket for it until it has ([`Client::poll_wake`] names it then).
    pub fn is_dormant(&self, node: usize) -> bool {
        self.waits_until.is_some() || (self.plan.cluster.is_some() && self.endpoint(node).is_none())
    }

    /// A clients ramp: the time before which the client opens no socket (it is dormant, see
    /// [`Client::is_dormant`]; [`Client::poll_timeout`] gives this time, and
    /// [`Client::handle_timeout`] at it wakes the client); `None` once it may open them.
    /// `Time::MAX` for a client past the ramp's last level.
    pub fn waits_until(&self) -> Option<Time> {
        self.waits_until
    }

    /// Requests sent or being sent on node `node`'s connection and not yet answered.
    pub fn in_flight(&self, node: usize) -> usize {
        self.conns.get(node).map_or(0, Connection::in_flight)
    }

    /// When node `node`'s current socket's handshake completed (its [`Event::Ready`]).
    pub fn ready_at(&self, node: usize) -> Option<Time> {
        self.conns.get(node)?.ready_at()
    }

    /// Whether node `node`'s connection has finished or failed: the backend can drop it.
    pub fn is_closed(&self, node: usize) -> bool {
        self.conns.get(node).is_none_or(Connection::is_closed)
    }

    /// Node `node`'s connection, for tests.
    #[cfg(test)]
    pub(crate) fn connection(&self, node: usize) -> &Connection {
        &self.conns[node]
    }

    /// The plan the client follows.
    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }

    // ---- inputs ----

    /// A new socket of node `node` is connected (the first one, or one opened for
    /// [`Event::Reconnect`]): queues the handshake and counts the connection.
    pub fn handle_connected(&mut self, node: usize, now: Time, stats: &mut Stats) {
        self.conns[node].handle_connected(now, stats);
        if self.conns[node].is_open() {
            self.batch_taken = false;
            self.router.down[node] = false;
        }
        if self.conns[node].is_ready() {
            // No handshake: requests may go at once.
            self.source.start(&self.plan, now);
        }
        self.sync(node, now);
    }

    /// Bytes read from node `node`'s socket at `now`. Completed replies are matched to requests
    /// in order and recorded in `stats`; redirected ones go to the node the reply names.
    pub fn handle_input(&mut self, node: usize, data: &[u8], now: Time, stats: &mut Stats) {
        let lead = self.lead();
        let plain = self.plain;
        let Client { plan, conns, router, outstanding, wake, woken, tracker, follow, cache, .. } = self;
        let multi = conns.len() > 1;
        let misses = cache.as_mut().map(|c| &mut c.1);
        let run = Run::default();
        let (refused, refusal) = (Vec::new(), None);
        let mut books = Books {
            plan,
            router,
            outstanding,
            wake,
            woken,
            node,
            lead,
            multi,
            run,
            tracker,
            follow,
            misses,
            refused,
            refusal,
        };
        let stopped = conns[node].stop_seen();
        let was_ready = conns[node].is_ready();
        if plain {
            conns[node].handle_input(data, now, stats, &mut Plain(&mut books));
        } else {
            let mut answered = |a: Answered<'_>, stats: &mut Stats| books.answered(a, stopped, stats);
            conns[node].handle_input(data, now, stats, &mut answered);
        }
        books.flush(stats);
        let (refused, refusal) = (books.refused, books.refusal);
        if let Some(words) = refusal {
            self.move_on(node, refused, words, now);
        }
        if self.cache.is_some() {
            self.fill_misses(node, now);
        }
        if !was_ready && self.conns[node].is_ready() {
            // The handshake's last reply: the open-loop schedule starts now (once), and the
            // drain that follows this input sends the first requests.
            self.source.start(&self.plan, now);
        }
        self.sync(node, now);
        if !self.conns[node].busy() {
            // Nothing more will come on it: perhaps nothing is left to do.
            self.check_done(node, now);
        }
    }

    /// `--sentinel`: node `node`'s server refused requests as a replica does (`READONLY` to a
    /// write, `MASTERDOWN`): the primary moved. The connection goes down as at a
    /// `+switch-master` (its requests in flight go again, or are lost, as there), comes back
    /// where the Sentinel now says, and sends first the `refused` requests, which the server did
    /// not run, each timed from its first send.
    fn move_on(&mut self, node: usize, refused: Vec<Request>, words: String, now: Time) {
        let failure = IoFailure {
            op: IoOp::Read,
            kind: std::io::ErrorKind::Other,
            os_code: None,
            message: format!("the server refused: {words} (the Sentinel asked again)"),
        };
        self.conns[node].leave(failure, now);
        self.sync(node, now);
        for r in refused.into_iter().rev() {
            self.router.requeue(node, r);
        }
    }

    /// How many of the next bytes of node `node`'s stream nothing will read: the rest of a
    /// bulk string's body (a GET's value, an LRANGE reply's element). The backend may discard
    /// them unread (a `recv` with `MSG_TRUNC`, which the kernel does not copy) and say so with
    /// [`Client::handle_skipped`]; or read them as any bytes, which is the same to the client.
    /// The core decides what may go; the backend moves the bytes.
    pub fn skippable(&self, node: usize) -> u64 {
        self.conns[node].skippable()
    }

    /// `n` bytes of node `node`'s stream, at most [`Client::skippable`], were discarded unread
    /// at `now`. No reply ends in them, so there is nothing to drain after it.
    pub fn handle_skipped(&mut self, node: usize, n: u64, now: Time, stats: &mut Stats) {
        self.conns[node].handle_skipped(n, now, stats);
    }

    /// `written` bytes of what [`Client::poll_transmit`] returned for node `node` were accepted
    /// by a write that began at `now` (read the clock before the write, not after it): requests
    /// whose last byte is among them count as sent at `now`.
    pub fn advance_transmit(&mut self, node: usize, written: usize, now: Time, stats: &mut Stats) {
        self.conns[node].advance_transmit(written, now, stats);
    }

    /// The server closed node `node`'s connection (a read returned 0).
    pub fn handle_closed(&mut self, node: usize, now: Time) {
        self.conns[node].handle_closed(now);
        self.sync(node, now);
    }

    /// A socket error on node `node` (connect, read or write), seen at `now`.
    pub fn handle_io_error(&mut self, node: usize, failure: IoFailure, now: Time) {
        self.conns[node].handle_io_error(failure, now);
        self.sync(node, now);
    }

    /// The time from [`Client::poll_timeout`] of node `node` has come: fails its connection
    /// when a request or the handshake has waited longer than
    /// [`crate::ConnConfig::request_timeout`]; at the test's [`crate::Stop`], finishes a
    /// connection with nothing in flight, and abandons one whose requests are still unanswered
    /// when the grace has passed. (A due open-loop request needs nothing here: the drain's
    /// [`Client::poll_transmit`] sends it.)
    pub fn handle_timeout(&mut self, node: usize, now: Time) {
        if let Some(at) = self.waits_until {
            // A clients ramp: its step has begun (unless the test has stopped first, when it
            // stays dormant: it never opens a socket).
            if now >= at && !self.plan.stop.is_due(now) {
                self.waits_until = None;
            }
            return;
        }
        // A connection down with requests to send again comes back for them.
        let resending = self.plan.resend.is_some() && self.outstanding > 0;
        let spent = self.source.spent(&self.plan) && !resending;
        self.conns[node].handle_timeout(now, spent);
        self.sync(node, now);
        // An open-loop connection whose budget others spent finishes here (see poll_timeout).
        self.check_done(node, now);
    }

    /// Node `node`'s connection ended at `now` ([`Event::Finished`], [`Event::Abandoned`] or
    /// [`Event::Failed`]): what it leaves unanswered is accounted for in `stats` (against one
    /// server, the requests of a failed connection count as lost). Call it when
    /// such an event comes, before the next. The requests it abandoned count with their time so
    /// far (from their intended time in an open loop, else from their send) as lower bounds in
    /// the latency histogram; once the client has no connection left, the open-loop arrivals
    /// due before the test's stop that it never sent (its window or its connection was blocked)
    /// count as unsent, each with the time from when it was due to `now` (to the stop for those
    /// due after `now`), likewise a lower bound. A client whose last connection failed before
    /// the stop counts in [`Stats::failed_clients`], and only the time to its failure is
    /// measured: its arrivals due from `now` on count as unsent without a latency (nothing was
    /// waiting for the server then: there was no connection to send them on).
    pub fn settle(&mut self, node: usize, abandoned: bool, now: Time, stats: &mut Stats) {
        if abandoned {
            for since in self.conns[node].unanswered() {
                stats.record_unfinished(now.nanos_since(since));
            }
        }
        for since in std::mem::take(&mut self.retrying_at_stop) {
            stats.abandoned += 1;
            stats.record_unfinished(now.nanos_since(since));
        }
        // Lost with their connection: no reply will come for them.
        stats.lost += self.conns[node].lost_uncounted() as u64;
        // Once no connection is live (closed, or a node's that never opened), once.
        if self.settled || self.conns.iter().any(Connection::is_live) {
            return;
        }
        self.settled = true;
        let stop = self.plan.stop.at();
        // The last connection failed before the stop (before any stop came, in a run without
        // one): the client's test ended then.
        let failed = self.conns[node].is_failed() && stop.is_none_or(|s| now < s);
        if failed {
            stats.failed_clients = stats.failed_clients.saturating_add(1);
        }
        if self.plan.conn.open_loop.is_none() {
            return;
        }
        let Some(stop) = stop else { return };
        let plan = Arc::clone(&self.plan);
        // A stall to the end (a live connection the server never answered, a window held back)
        // waited to the stop at least; a client with no connection left measured only to then.
        let end = if failed { now } else { now.max(stop) };
        let from = plan.measure_from;
        // Drawn for a node and queued behind its connection when the test stopped: never sent.
        for due in std::mem::take(&mut self.queued_at_stop) {
            stats.unsent += 1;
            stats.record_unfinished(end.nanos_since(due));
        }
        for due in self.source.remaining(&plan, stop) {
            if due >= from {
                stats.unsent += 1;
                // Due after a failure: not a wait for the server, so no latency of it.
                if due < end {
                    stats.record_unfinished(end.nanos_since(due));
                }
            }
        }
    }

    // ---- outputs ----

    /// Bytes to write on node `node`'s socket now, if any. Call [`Client::advance_transmit`]
    /// with how many the socket took, then call this again until it returns `None` or the
    /// socket would block.
    #[must_use]
    pub fn poll_transmit(&mut self, node: usize, now: Time) -> Option<&[u8]> {
        if !self.transmit_due(node, now) {
            return None;
        }
        self.conns[node].poll_transmit()
    }

    /// [`Client::poll_transmit`], with a large value's bytes (one spliced by reference to the
    /// test's shared payload or dataset) as an owned handle, [`Chunk::Shared`], that keeps them
    /// alive until the backend's send of them completes; owned bytes as [`Chunk::Bytes`]. Call
    /// [`Client::advance_transmit`] with how many bytes of the chunk were taken, as after
    /// `poll_transmit`.
    #[must_use]
    pub fn poll_transmit_chunk(&mut self, node: usize, now: Time) -> Option<Chunk<'_>> {
        if !self.transmit_due(node, now) {
            return None;
        }
        self.conns[node].poll_transmit_chunk()
    }

    /// [`Client::poll_transmit`] of up to `out.len()` chunks at once, in order (owned bytes and a
    /// large value's shared bytes in turn: a request's header, its value, the CRLF and the next
    /// header), for one vectored write; how many it put in `out` (0: nothing to write). Call
    /// [`Client::advance_transmit`] with how many bytes the write took, across the chunks.
    #[must_use]
    pub fn poll_transmit_chunks<'a>(&'a mut self, node: usize, now: Time, out: &mut [&'a [u8]]) -> usize {
        if !self.transmit_due(node, now) {
            return 0;
        }
        self.conns[node].poll_transmit_chunks(out)
    }

    /// Draws and queues what node `node` may send at `now`; whether it has bytes to write.
    #[inline]
    fn transmit_due(&mut self, node: usize, now: Time) -> bool {
        if !self.conns[node].is_open() {
            return false;
        }
        // Nothing of the benchmark goes before the handshake's replies have all come back
        // successful: only the handshake's bytes are written until then.
        if !self.plan.conn.idle && self.conns[node].is_ready() {
            if self.conns[node].see_stop(now) {
                // Granted and not yet drawn, or drawn and not sent: the test is over.
                self.credits = 0;
                self.stop();
                // Open loop: arrivals due before the stop are part of the test; those its window
                // held back go in the grace.
                self.draw_owed(now);
                self.fill(node, now);
            } else {
                self.draw(now);
                self.fill(node, now);
            }
        }
        if self.conns[node].unwritten() == 0 {
            // Nothing to send: perhaps nothing left to do (an empty budget, or one others spent).
            self.check_done(node, now);
            return false;
        }
        true
    }

    /// What node `node`'s connection asks of the backend next.
    #[must_use]
    pub fn poll_event(&mut self, node: usize) -> Option<Event> {
        self.conns[node].poll_event()
    }

    /// When node `node`'s connection next wants [`Client::handle_timeout`] called though no
    /// bytes arrived, whichever is first: the next intended send time of the client's open-loop
    /// schedule (kept by its first open node); a queued retry's pause; the `--timeout` deadline
    /// of the oldest unanswered request or of the handshake; the test's [`crate::Stop`], and
    /// once it has come, the time its unanswered requests are abandoned.
    ///
    /// A stop asked for while the connection waits ([`crate::Stop::request`]) changes this: a
    /// backend that keeps these times asks again when [`crate::Stop::generation`] changes.
    #[must_use]
    pub fn poll_timeout(&self, node: usize) -> Option<Time> {
        if let Some(at) = self.waits_until {
            // Dormant until its ramp step (or, never starting, until the stop).
            return if at == Time::MAX { None } else { Some(at) };
        }
        let c = &self.conns[node];
        let mut next = c.poll_timeout();
        if !c.is_ready() || self.plan.conn.idle || c.stop_seen() {
            // Closed, or its handshake unanswered (nothing may be sent before: its deadline
            // is the connection's), or nothing to send.
            return next;
        }
        if let Some(ol) = self.plan.conn.open_loop {
            let exhausted = self.source.spent(&self.plan);
            if exhausted && self.outstanding == 0 && !c.busy() {
                // Spent by other clients while this one waited for its next arrival: it is
                // done, and must be called now to say so.
                return Some(Time::ZERO);
            }
            if self.lead() == Some(node) && self.may_draw() && !exhausted {
                // On the slack's grid: the loop sends what is due then, for every client.
                next = earliest(next, Some(ol.wake_at(self.source.due())));
            }
        }
        earliest(next, self.router.queued_at(node))
    }

    /// A node whose connection must be drained now (the client queued requests for it, a
    /// node appeared, or the client is done), once each; `None` when there is none.
    #[must_use]
    pub fn poll_wake(&mut self) -> Option<usize> {
        let n = self.wake.pop()?;
        self.woken[n] = false;
        Some(n)
    }

    // ---- internals ----

    /// `-P`: requests per batch or in the window; in a sequence, whole sequences (valkey-benchmark's
    /// `-P 5` of a 4-command sequence sends 20 commands at once, and `-P 1` a whole sequence).
    fn window(&self) -> usize {
        self.plan.conn.pipeline.max(1) as usize * self.source.seq_len as usize
    }

    /// Whether the pipeline lets the client draw another request now: in window mode while
    /// fewer than `-P` are outstanding, in batch mode once the last batch is all answered.
    fn may_draw(&self) -> bool {
        match self.plan.conn.pipeline_mode {
            PipelineMode::Window => self.outstanding < self.window(),
            PipelineMode::Batch => self.outstanding == 0,
        }
    }

    /// The node that keeps the client's open-loop schedule: the first that is open and past its
    /// handshake.
    fn lead(&self) -> Option<usize> {
        self.conns.iter().position(Connection::is_ready)
    }

    /// Draws new requests while the pipeline (`-P`: a batch once the last is answered, or a
    /// window topped up; see [`crate::PipelineMode`]), the budget or the schedule, and room in
    /// the output allow.
    fn draw(&mut self, now: Time) {
        let plan = Arc::clone(&self.plan);
        let window = self.window();
        if let Some(ol) = plan.conn.open_loop {
            let Some(lead) = self.lead() else { return };
            // `-k 0`: a socket carries one batch; the next arrivals wait for a new one.
            if !self.may_draw() || (!plan.conn.keepalive && self.batch_taken) {
                return;
            }
            if self.source.player.is_some() {
                return self.draw_replayed(now, lead);
            }
            // Batch mode: what is due now, up to `window`, goes as one batch; the next waits
            // until all of it is answered (`may_draw` above).
            while self.outstanding < window && self.source.due() <= now && self.has_room() {
                if self.source.take(&plan, 1) == 0 {
                    break;
                }
                let intended = self.source.arrive(ol, &plan);
                self.draw_one(&plan, intended, now, Some(lead));
                self.batch_taken = !plan.conn.keepalive;
            }
            return;
        }
        if let Some(n) = plan.conn.reconnect_every {
            // `--reconnect-every N`: the pipeline as below, up to the socket's N requests (as
            // memtier holds its pipeline); check_done opens the next socket.
            let want = match plan.conn.pipeline_mode {
                PipelineMode::Batch if self.outstanding == 0 && self.credits == 0 => window as u64,
                PipelineMode::Batch => 0,
                PipelineMode::Window => window.saturating_sub(self.outstanding) as u64,
            };
            let want = want.saturating_sub(self.credits).min(n.saturating_sub(self.on_socket));
            if want > 0 {
                let got = self.source.take(&plan, want);
                self.credits += got;
                self.on_socket += got;
            }
        } else if !plan.conn.keepalive {
            if !self.batch_taken {
                self.batch_taken = true;
                if self.credits == 0 {
                    self.credits = self.source.take(&plan, window as u64);
                }
            }
        } else if plan.conn.pipeline_mode == PipelineMode::Batch {
            // The next batch once the last is answered and drawn; the budget's last grant is
            // smaller, so `-n` stays exact.
            if self.outstanding == 0 && self.credits == 0 {
                self.credits = self.source.take(&plan, window as u64);
            }
        } else {
            let want = window.saturating_sub(self.outstanding) as u64;
            if self.credits < want {
                self.credits += self.source.take(&plan, want - self.credits);
            }
        }
        let lead = self.lead();
        while self.credits > 0 && self.has_room() {
            self.credits -= 1;
            self.draw_one(&plan, Time::MAX, now, lead);
        }
    }

    /// Open loop, after the stop: draws the arrivals due before it that the window held back,
    /// while the window has room again.
    fn draw_owed(&mut self, now: Time) {
        let plan = Arc::clone(&self.plan);
        let (Some(ol), Some(lead)) = (plan.conn.open_loop, self.lead()) else { return };
        if self.source.player.is_some() {
            return self.draw_replayed(now, lead);
        }
        while self.owed() && self.source.due() <= now && self.has_room() {
            if self.source.take(&plan, 1) == 0 {
                break;
            }
            let intended = self.source.arrive(ol, &plan);
            self.draw_one(&plan, intended, now, Some(lead));
        }
    }

    /// Open loop: whether an arrival due before the test's stop is still to be drawn and the
    /// window has room for it.
    fn owed(&self) -> bool {
        self.plan.conn.open_loop.is_some()
            && self.outstanding < self.window()
            && self.plan.stop.at().is_some_and(|stop| self.source.due() < stop)
            && !self.source.spent(&self.plan)
    }

    /// Whether a request drawn now has somewhere to go: over a cluster its node's queue, else
    /// the connection's output buffer while it is below its cap.
    fn has_room(&self) -> bool {
        self.routed() || self.conns[0].has_room()
    }

    /// Whether requests go through the router, their bytes kept until their reply: over
    /// several nodes (a redirect sends them again) and with `--retry-on` (a retry does).
    fn routed(&self) -> bool {
        self.routed
    }

    /// Draws one request and puts it on its way: against one server straight into the
    /// connection's output; over several nodes into the queue of the node it goes to, its bytes
    /// kept until its reply (a redirect sends them again).
    fn draw_one(&mut self, plan: &Plan, intended: Time, now: Time, lead: Option<usize>) {
        // The common case first, with nothing built for features the run did not ask for
        // (issue #55): see `plain`.
        if self.plain {
            let (template, part) = self.source.pick(&plan.workload);
            self.outstanding += 1;
            let keys = self.source.keys_for(part);
            self.conns[0].push(Pending::new(intended, part, now, DIRECT), |out| template.write(out, keys));
            return;
        }
        if let (Some(f), Some(mix)) = (&self.follow, &plan.workload.mix) {
            // `--follow-cursor` (one server, one call at a time): the cursor of the last reply.
            let (part, arg, cursor) = (f.part(), f.arg, f.cursor());
            let template = &mix.templates[usize::from(part)];
            let keys = self.source.keys_for(part);
            self.outstanding += 1;
            self.conns[0].push(Pending::new(intended, part, now, DIRECT), |out| {
                let start = crate::template::Sink::bytes(out).len();
                template.write(out, keys);
                if part == crate::cursor::NEXT {
                    crate::cursor::splice(crate::template::Sink::bytes(out), start, arg, cursor);
                }
            });
            return;
        }
        let (template, part) = self.source.pick(&plan.workload);
        self.outstanding += 1;
        // A delivery test's payload carries who sent it, its number and when (issue #42).
        let stamp = template.stamp_at().map(|at| {
            let seq = self.stamped;
            self.stamped += 1;
            let due = if intended == Time::MAX { now } else { intended };
            let s = crate::delivery::Stamp { publisher: self.index as u32, seq, intended: due, sent: now };
            (at, s, template.len())
        });
        let channel = template.channel_at();
        let stamp_into = |bytes: &mut Vec<u8>| {
            if let Some((at, s, len)) = stamp {
                let start = bytes.len() - len;
                s.write(&mut bytes[start + at..]);
                if let Some((c, n)) = channel {
                    let digits = format!("{:06}", (s.seq % n) % 1_000_000);
                    bytes[start + c..start + c + 6].copy_from_slice(digits.as_bytes());
                }
            }
        };
        // `--verify`: the request's key (one the client owns) and version.
        let verify = plan.verify.as_deref().and_then(|v| Some((v, v.role(part)?)));
        let tag = verify.map(|(v, role)| {
            let key = v.own(self.source.keys_for(part).next_key() % 1_000_000_000_000, self.source.stream);
            self.tracker.draw(role, key, v.tracked())
        });
        if !self.routed() {
            let keys = self.source.keys_for(part);
            let pending = Pending::new(intended, part, now, DIRECT);
            match (verify, tag) {
                (Some((v, _)), Some(tag)) => {
                    self.conns[0].push_tagged(pending, tag, |out| {
                        v.write_request(part, tag, crate::template::Sink::bytes(out))
                    });
                }
                _ => self.conns[0].push(pending, |out| {
                    template.write(out, keys);
                    stamp_into(crate::template::Sink::bytes(out));
                }),
            }
            if self.source.read_written(plan, part) {
                self.conns[0].mark_written();
            }
            if self.cache.is_some() {
                // Cache-aside: the GET's key, for the SET after a miss.
                let key = self.source.keys_for(part).last;
                self.conns[0].tag_last(CACHE_GET, crate::verify::Tag { key, version: 0 });
            }
            return;
        };
        let mut bytes = self.router.buffer();
        match (verify, tag) {
            (Some((v, _)), Some(tag)) => v.write_request(part, tag, &mut bytes),
            _ => {
                template.write(&mut bytes, self.source.keys_for(part));
                stamp_into(&mut bytes);
            }
        }
        let written = self.source.read_written(plan, part);
        let (slot, write, to) = match &plan.cluster {
            Some(cluster) => {
                let (slot, write) = if cluster.redirects {
                    self.router.slot_of(cluster, usize::from(part), &mut bytes)
                } else {
                    let route = cluster.routes.get(usize::from(part)).or(cluster.routes.first());
                    (SLOTS, route.is_none_or(|r| r.write))
                };
                (slot, write, self.router.node_for(cluster, slot, write, lead))
            }
            // One server, routed for `--retry-on`.
            None => (SLOTS, true, 0),
        };
        let mut request = Request::new(bytes, intended, part, slot, write, now);
        request.tag = tag.unwrap_or_default();
        request.written = written;
        self.router.queue(to, request);
        self.wake_node(to);
    }

    /// A replay: sends the records that are due while the window and the output have room,
    /// each timed from its recorded instant, routed by its key's slot over several nodes.
    fn draw_replayed(&mut self, now: Time, lead: usize) {
        while self.outstanding < self.window() && self.has_room() {
            let Some(r) = self.source.player.as_mut().and_then(|p| p.take_due(now)) else { break };
            self.outstanding += 1;
            if !self.routed() {
                self.conns[0]
                    .push(Pending::new(r.due, r.part, now, DIRECT), |out| out.extend_from_slice(&r.bytes));
                continue;
            }
            let to = match &self.plan.cluster {
                Some(cluster) => self.router.node_for(cluster, r.slot, true, Some(lead)),
                None => 0,
            };
            self.router.queue(to, Request::new(r.bytes, r.due, r.part, r.slot, true, now));
            self.wake_node(to);
        }
    }

    /// Moves node `node`'s queued requests into its connection while it has room. Only routed
    /// requests are queued ([`Client::routed`]): otherwise, nothing to do.
    #[inline]
    fn fill(&mut self, node: usize, now: Time) {
        if !self.routed() {
            return;
        }
        self.fill_queued(node, now);
    }

    fn fill_queued(&mut self, node: usize, now: Time) {
        while self.conns[node].has_room() {
            let Some(r) = self.router.take(node, now) else { break };
            let conn = &mut self.conns[node];
            if r.asking {
                conn.push(Pending::new(Time::MAX, 0, now, ASKING_REQ), |out| out.extend_from_slice(ASKING));
            }
            let (intended, part, queued, tag, written) = (r.intended, r.part, r.queued, r.tag, r.written);
            let resent = r.first_sent != Time::MAX;
            let id = self.router.hold(r);
            let bytes = self.router.bytes(id);
            let mut pending = Pending::new(intended, part, queued, id);
            pending.resent = resent;
            pending.written = written;
            conn.push_tagged(pending, tag, |out| out.extend_from_slice(bytes));
        }
    }

    /// Cache-aside: sends the `SET` of each key that missed in the input just read on node
    /// `node`'s connection, in the order of the misses, the `GET`'s start in its tag.
    fn fill_misses(&mut self, node: usize, now: Time) {
        let (Some(ca), Some((keys, misses))) = (&self.plan.cache_aside, &mut self.cache) else { return };
        for (key, start) in misses.drain(..) {
            keys.pin(key);
            let pending = Pending::new(Time::MAX, 0, now, CACHE_SET);
            let tag = crate::verify::Tag { key, version: start.as_nanos() };
            self.conns[node].push_tagged(pending, tag, |out| ca.set.write(out, keys));
            self.outstanding += 1;
        }
    }

    /// The test stopped: drops what was drawn and not sent, and wakes every connection of the
    /// client, once (a connection still waiting for replies comes back here on each drain).
    fn stop(&mut self) {
        if self.stop_told {
            return;
        }
        self.stop_told = true;
        let open_loop = self.plan.conn.open_loop.is_some();
        let from = self.plan.measure_from;
        for r in self.router.drain_queues() {
            if r.retries > 0 || (self.plan.resend.is_some() && r.first_sent != Time::MAX) {
                // `--retry-on`, or in flight at a move (`--sentinel`): sent and waiting to be
                // sent again: unanswered at the stop.
                let since = if r.intended == Time::MAX { r.first_sent } else { r.intended.min(r.first_sent) };
                self.retrying_at_stop.push(since);
            } else if open_loop && r.intended != Time::MAX && r.intended >= from {
                self.queued_at_stop.push(r.intended);
            }
            self.outstanding -= 1;
            self.router.recycle(r);
        }
        self.wake_all();
    }

    /// Acts on what changed in node `node`'s connection: a connection that went down takes its
    /// requests with it, and what was queued for it goes elsewhere.
    fn sync(&mut self, node: usize, now: Time) {
        let conn = &mut self.conns[node];
        if !std::mem::take(&mut conn.went_down) {
            return;
        }
        self.outstanding -= std::mem::take(&mut conn.dropped);
        for id in std::mem::take(&mut conn.orphans) {
            if let Some(r) = self.router.release(id) {
                self.router.recycle(r);
            }
        }
        // `--sentinel`: those safe to repeat go first once it is back, in their order, each
        // timed from its first send.
        for (id, sent) in std::mem::take(&mut conn.resend).into_iter().rev() {
            if let Some(mut r) = self.router.release(id) {
                r.first_sent = r.first_sent.min(sent);
                self.router.requeue(node, r);
            }
        }
        self.router.down[node] = true;
        let plan = Arc::clone(&self.plan);
        let Some(cluster) = &plan.cluster else { return };
        let lead = self.lead();
        for r in self.router.drain_queue(node) {
            let to = self.router.node_for(cluster, r.slot, r.write, lead);
            self.router.queue(to, r);
            self.wake_node(to);
        }
        let known = cluster.nodes.len() + self.router.appeared.len();
        // (`Cluster::waits`: the nodes come back, and the requests wait for them.)
        if !cluster.waits && (0..known).all(|i| self.router.down[i]) {
            // Nobody left to send them: they are lost with the client.
            for r in self.router.drain_queues() {
                self.outstanding -= 1;
                self.router.recycle(r);
            }
        }
        self.wake_all();
        let _ = now;
    }

    /// Finishes node `node`'s connection (or, `-k 0`, asks for its next socket) when it has
    /// nothing left to do.
    fn check_done(&mut self, node: usize, now: Time) {
        let plan = Arc::clone(&self.plan);
        let conn = &mut self.conns[node];
        if !conn.is_open() || conn.busy() || self.credits > 0 {
            return;
        }
        let stopped = conn.see_stop(now);
        if plan.conn.idle {
            // Idle connections only wait for the stop.
            if stopped {
                conn.finish();
            }
            return;
        }
        if !plan.conn.keepalive && self.batch_taken && !stopped {
            if plan.conn.open_loop.is_some() {
                // The batch is answered: the next arrival, taken from the budget now so that
                // no socket opens for nothing, goes on a new socket when it is due.
                if self.outstanding == 0 && self.source.reserve(&plan) {
                    self.conns[node].reconnect();
                    return;
                }
            } else {
                // Reserve the next batch before asking for a new socket, so no socket opens
                // for nothing.
                self.credits = self.source.take(&plan, self.window() as u64);
                if self.credits > 0 {
                    self.conns[node].reconnect();
                    return;
                }
            }
        }
        if let (Some(n), false) = (plan.conn.reconnect_every, stopped) {
            // `--reconnect-every N`: the socket's N requests are answered; the next ones, taken
            // first so that no socket opens for nothing, go on a new socket.
            if self.on_socket >= n && self.outstanding == 0 {
                self.on_socket = self.source.take(&plan, (self.window() as u64).min(n));
                if self.on_socket > 0 {
                    self.credits = self.on_socket;
                    self.conns[node].reconnect();
                    return;
                }
            }
        }
        if stopped && self.owed() && self.lead() == Some(node) {
            // Arrivals due before the stop are still to go (poll_transmit sends them).
            self.wake_node(node);
            return;
        }
        if stopped || (self.source.spent(&plan) && self.outstanding == 0) {
            self.conns[node].finish();
            // A request of another node may be redirected here no more: the client's other
            // connections finish too.
            self.wake_all();
        }
    }

    fn wake_node(&mut self, node: usize) {
        if self.conns.len() > 1 && !self.woken[node] {
            self.woken[node] = true;
            self.wake.push(node);
        }
    }

    fn wake_all(&mut self) {
        for n in 0..self.conns.len() {
            self.wake_node(n);
        }
    }
}

/// What the reply handling of one node's input touches: the client's books, apart from its
/// connections (one of which is parsing).
struct Books<'a> {
    plan: &'a Plan,
    router: &'a mut Router,
    outstanding: &'a mut usize,
    wake: &'a mut Vec<usize>,
    woken: &'a mut Vec<bool>,
    node: usize,
    lead: Option<usize>,
    multi: bool,
    /// Replies answered and not yet recorded: see [`Run`].
    run: Run,
    /// `--verify`: the versions of the client's own keys.
    tracker: &'a mut crate::verify::Tracker,
    /// `--follow-cursor`: the cursor the client follows.
    follow: &'a mut Option<crate::cursor::Follow>,
    /// `--cache-aside`: the misses of this input, for [`Client::fill_misses`].
    misses: Option<&'a mut Vec<(u64, Time)>>,
    /// `--sentinel`: the requests of this input a replica refused (`READONLY`, `MASTERDOWN`),
    /// in their order, to go again where the Sentinel now says, and the first refusal's words.
    refused: Vec<Request>,
    refusal: Option<String>,
}

/// [`Books`] of a [`Client`] whose requests are all plain: [`Books::answered_plain`], inlined
/// into the connection's reply loop.
struct Plain<'b, 'a>(&'b mut Books<'a>);

impl crate::conn::OnAnswer for Plain<'_, '_> {
    #[inline(always)]
    fn answered(&mut self, a: Answered<'_>, stats: &mut Stats) {
        self.0.answered_plain(a, stats);
    }
}

/// Error-free replies alike in all that the stats keep of them (command, latency, service time,
/// arrival) and answered one after the other: counted until one differs or the input ends, then
/// recorded at once ([`Stats::record_requests`]). The replies of a pipeline read together
/// usually are alike (sent by one write, parsed from one read), so `-P 128` of them cost one
/// histogram entry.
#[derive(Clone, Copy, Default)]
struct Run {
    part: usize,
    latency: u64,
    service: u64,
    now: Time,
    n: u64,
}

impl Books<'_> {
    /// Records the replies of [`Books::run`]; the input is over, or the next reply differs.
    /// One error-free reply, `one` (its `n` 1): added to the [`Run`] when alike, else the run is
    /// recorded and this one starts the next.
    #[inline(always)]
    fn count_alike(&mut self, one: Run, stats: &mut Stats) {
        let r = &self.run;
        if r.n > 0 && (r.part, r.latency, r.service, r.now) == (one.part, one.latency, one.service, one.now) {
            self.run.n += 1;
        } else {
            self.flush(stats);
            self.run = one;
        }
    }

    fn flush(&mut self, stats: &mut Stats) {
        let r = std::mem::take(&mut self.run);
        stats.record_requests(r.part, r.latency, r.service, r.now, r.n);
    }

    /// [`Books::answered`] for a [`Client`]'s plain requests (issue #55): one server, every
    /// request `DIRECT`, nothing to follow, verify, retry or fill; what is left is the count and
    /// the figures.
    #[inline(always)]
    fn answered_plain(&mut self, a: Answered<'_>, stats: &mut Stats) {
        let p = a.pending;
        debug_assert!(p.req == DIRECT && !self.multi && self.follow.is_none() && self.misses.is_none());
        *self.outstanding -= 1;
        if a.now < self.plan.measure_from {
            return;
        }
        let first = a.sent;
        let start = if p.intended == Time::MAX { first } else { p.intended.min(first) };
        let (latency, service) = (a.now.nanos_since(start), a.now.nanos_since(first));
        let part = usize::from(p.part);
        match a.error {
            None => self.count_alike(Run { part, latency, service, now: a.now, n: 1 }, stats),
            error => stats.record_request(part, latency, service, error, a.now),
        }
        if a.nil {
            stats.record_nil(part);
            if p.written {
                stats.record_expired(part);
            }
        }
    }

    /// A request answered on this node: a redirect sends it on; anything else completes it,
    /// timed from its first send (or, open loop, from its intended time).
    fn answered(&mut self, a: Answered<'_>, stopped: bool, stats: &mut Stats) {
        let p = a.pending;
        if p.req == ASKING_REQ {
            return; // ASKING's +OK
        }
        let mut first = a.sent;
        let mut error = a.error;
        let node = self.node_index(stats);
        let measured = a.now >= self.plan.measure_from;
        if let Some(f) = self.follow.as_mut() {
            stats.cursor.followed = true;
            match (error, f.answered(a.body())) {
                (Some(_), _) => f.restart(),
                (None, Ok(Some(done))) if measured => {
                    stats.cursor.iterations += 1;
                    stats.cursor.elements = stats.cursor.elements.saturating_add(done.elements);
                }
                (None, Ok(_)) => {}
                (None, Err(_)) => {
                    stats.cursor.bad += u64::from(measured);
                    error = Some(crate::cursor::BAD_CURSOR);
                }
            }
        }
        if p.req != DIRECT {
            if let (CACHE_GET | CACHE_SET, Some(misses)) = (p.req, self.misses.as_deref_mut()) {
                // A cache-aside request: encoded straight into the connection, as a DIRECT one
                // (the branch a run without it never takes).
                let start = if p.intended == Time::MAX { first } else { p.intended.min(first) };
                cache_aside(misses, &a, start, stopped, self.plan.measure_from, stats);
            } else {
                let Some(mut r) = self.router.release(p.req) else { return };
                r.first_sent = r.first_sent.min(a.sent);
                first = r.first_sent;
                if let (Some(m), Some(_), false) = (a.error, &self.plan.resend, stopped) {
                    // `--sentinel`: a replica's refusal; the request did not run: it goes again
                    // once the connection has moved (`Client::move_on`).
                    if matches!(crate::resp::error_prefix(m), b"READONLY" | b"MASTERDOWN") {
                        stats.refused += 1;
                        self.refusal.get_or_insert_with(|| String::from_utf8_lossy(m).into_owned());
                        self.refused.push(r);
                        return;
                    }
                }
                if let (Some(m), Some(retry)) = (a.error, &self.plan.retry) {
                    // A cluster's own redirects and retries are the router's (below).
                    let redirect = self.plan.cluster.is_some() && Redirect::of(m).is_some();
                    if !redirect && retry.retries(m) {
                        if stopped {
                            stats.abandoned += 1;
                            *self.outstanding -= 1;
                            self.router.recycle(r);
                            return;
                        }
                        match self.router.retry(r, self.node, retry.limit, |k| a.now + retry.pause(k)) {
                            Ok(()) => {
                                stats.retries.by_error.record(m);
                                self.wake(self.node);
                                return;
                            }
                            Err(back) => {
                                stats.retries.give_up(
                                    crate::cluster::resp_arg(&back.bytes, 1).map(|k| &back.bytes[k]),
                                );
                                r = back;
                            }
                        }
                    }
                }
                if let (Some(m), Some(cluster)) = (a.error, &self.plan.cluster) {
                    if let Some(kind) = Redirect::of(m) {
                        kind.count(&mut stats.redirects);
                        stats.record_redirect_at(kind.index(), a.now);
                        if let Some(n) = node.and_then(|n| stats.nodes.get_mut(n)) {
                            kind.count(&mut n.redirects);
                        }
                        if stopped {
                            // The test is over: not sent again, and not answered.
                            stats.abandoned += 1;
                            *self.outstanding -= 1;
                            self.router.recycle(r);
                            return;
                        }
                        match self.router.redirect(cluster, r, kind, m, a.now, self.lead) {
                            Ok((to, moved)) => {
                                if let Some((slot, owner)) = moved {
                                    if let Some(e) = self.router.endpoint(Some(cluster), owner) {
                                        stats.moved.insert(slot, (a.now, e));
                                    }
                                }
                                self.wake(to);
                                return;
                            }
                            Err(back) => r = back,
                        }
                    }
                }
                self.router.recycle(r);
            }
        }
        *self.outstanding -= 1;
        let room = match self.plan.conn.pipeline_mode {
            PipelineMode::Window => true,
            PipelineMode::Batch => *self.outstanding == 0,
        };
        if self.multi && self.plan.conn.open_loop.is_some() && room {
            if let Some(lead) = self.lead {
                // The window has room again (a batch is all answered): the lead must look at
                // the schedule (its timer was not set while it was full).
                self.wake(lead);
            }
        }
        if a.now < self.plan.measure_from {
            // Warmup: the request happened, its figures are discarded.
            return;
        }
        if let Some(v) = &self.plan.verify {
            match v.role(p.part) {
                Some(crate::verify::Role::Write) if error.is_none() => self.tracker.acked(a.tag()),
                Some(crate::verify::Role::Read) => {
                    let tag = a.tag();
                    v.check(p.part, tag, self.tracker.sent(tag.key), a.body(), &mut stats.verify)
                }
                _ => {}
            }
        }
        let start = if p.intended == Time::MAX { first } else { p.intended.min(first) };
        let (latency, service) = (a.now.nanos_since(start), a.now.nanos_since(first));
        let part = usize::from(p.part);
        if node.is_none() && error.is_none() {
            self.count_alike(Run { part, latency, service, now: a.now, n: 1 }, stats);
        } else {
            stats.record_request(part, latency, service, error, a.now);
        }
        if a.nil {
            stats.record_nil(part);
            if p.written {
                stats.record_expired(part);
            }
        }
        if let Some(n) = node {
            stats.record_node(n, latency, service, error, a.now);
            if a.nil {
                if let Some(s) = stats.nodes.get_mut(n) {
                    s.nils += 1;
                }
            }
        }
    }

    /// Where this node's figures go in `stats.nodes`: found nodes by index, nodes that appeared
    /// by address; `None` against one server.
    fn node_index(&self, stats: &mut Stats) -> Option<usize> {
        let cluster = self.plan.cluster.as_ref()?;
        let found = cluster.nodes.len();
        if self.node < found {
            return Some(self.node);
        }
        let endpoint = self.router.endpoint(Some(cluster), self.node)?;
        stats.appeared_index(found, &endpoint)
    }

    fn wake(&mut self, node: usize) {
        if self.multi && !self.woken[node] {
            self.woken[node] = true;
            self.wake.push(node);
        }
    }
}

/// Cache-aside: a `GET` answered nil (`a`, which started at `start`) asks for the `SET` of its
/// key unless the test has `stopped`; a `SET`'s reply completes its miss. Counted from
/// `measure_from`.
fn cache_aside(
    misses: &mut Vec<(u64, Time)>,
    a: &Answered<'_>,
    start: Time,
    stopped: bool,
    measure_from: Time,
    stats: &mut Stats,
) {
    let p = &a.pending;
    // The request's key, and for a SET its GET's start (Connection::tag_last, push_tagged).
    let tag = a.tag();
    let measured = a.now >= measure_from;
    if p.req == CACHE_SET {
        if let Some(c) = stats.cache.as_deref_mut().filter(|_| measured) {
            c.sets += 1;
            c.set_errors += u64::from(a.error.is_some());
            c.filled(a.now.nanos_since(Time::from_nanos(tag.version)));
        }
        return;
    }
    if a.nil && !stopped {
        misses.push((tag.key, start));
    }
    if let Some(c) = stats.cache.as_deref_mut().filter(|_| measured && a.error.is_none()) {
        match (a.nil, stopped) {
            (false, _) => c.hits += 1,
            (true, false) => c.misses += 1,
            (true, true) => {
                c.misses += 1;
                c.unfilled += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Budget, ConnConfig, Mix, Stop};
    use crate::template::KeySpace;

    /// Two clients of the sequence `A ; B ; B` (3 commands), `-P 1`, with this budget and
    /// schedule.
    fn sequence_plan(budget: Budget, open_loop: Option<crate::OpenLoop>) -> Plan {
        let seq = Mix::sequence(vec![
            Template::command(&[b"A"]),
            Template::command(&[b"B"]),
            Template::command(&[b"B"]),
        ])
        .unwrap();
        Plan {
            connections: 2,
            ..Plan::new(
                ConnConfig { open_loop, ..ConnConfig::default() },
                Workload { template: Template::command(&[b"A"]), keys: KeySpace::Literal, mix: Some(seq) },
                budget,
                Stop::new(None, Duration::from_secs(2)),
            )
        }
    }

    /// `--mix 'set:1@sequential/100,get:1@sequential/50'`: each command draws from its own
    /// keys (the SETs' counter is not the GETs'), and a GET is of a written key once the
    /// SETs' counter is past it by the margin (2 connections × `-P 1`).
    #[test]
    fn mix_commands_draw_their_own_keys_and_reads_know_what_was_written() {
        let set = Template::command(&[b"SET", b"key:__rand_int__", b"v"]);
        let get = Template::command(&[b"GET", b"key:__rand_int__"]);
        let other = Template::command(&[b"GET", b"other:__rand_int__"]);
        let mix = Mix::new(vec![(set.clone(), 1), (get, 1), (other, 1)])
            .unwrap()
            .with_keys(vec![
                Some(KeySpace::sequential(100)),
                Some(KeySpace::sequential(50)),
                Some(KeySpace::sequential(50)),
            ])
            .unwrap();
        assert!(!mix.tracks(0) && mix.tracks(1) && !mix.tracks(2), "GETs of the SET's key pattern only");
        let mut plan = sequence_plan(Budget::unlimited(), None);
        plan.workload.mix = Some(mix.clone());
        let mut s = Source::new(&plan, 0);
        let key_of = |bytes: &[u8]| -> u64 {
            let at = bytes.windows(4).position(|w| w == b"key:").unwrap() + 4;
            std::str::from_utf8(&bytes[at..at + 12]).unwrap().parse().unwrap()
        };
        let draw = |s: &mut Source, part: u16, t: &Template| {
            let mut out = Vec::new();
            t.write(&mut out, s.keys_for(part));
            (key_of(&out), s.read_written(&plan, part))
        };
        // Three SETs: keys 0, 1, 2; the counter is at 3, so key 0 (0 + margin 2 < 3) is written.
        for k in 0..3 {
            assert_eq!(draw(&mut s, 0, &set).0, k);
        }
        let get = plan.workload.mix.as_ref().unwrap().templates()[1].clone();
        assert_eq!(draw(&mut s, 1, &get), (0, true));
        assert_eq!(draw(&mut s, 1, &get), (1, false), "key 1 may still be in flight");
        // A fresh mix starts its counters again.
        let fresh = mix.fresh();
        assert!(!fresh.written(0, 0));
        assert!(mix.written(0, 0) && !mix.written(100, 0), "beyond the writer's keys");
    }

    /// Two clients of a sequence `A ; B ; B` (3 commands) under `-n 7`: each takes whole
    /// sequences, in order, from the one budget, and the last is not cut: 9 commands in all.
    #[test]
    fn a_sequence_goes_whole_and_in_order_on_each_client() {
        let plan = Arc::new(sequence_plan(Budget::new(7), None));
        let mut sources = [Source::new(&plan, 0), Source::new(&plan, 1)];
        let mut sent: [Vec<u16>; 2] = [Vec::new(), Vec::new()];
        // The clients take turns, one command at a time, as two connections would.
        loop {
            let mut any = false;
            for (s, out) in sources.iter_mut().zip(&mut sent) {
                if s.take(&plan, 1) == 1 {
                    out.push(s.pick(&plan.workload).1);
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        assert_eq!(sent[0], [0, 1, 2, 0, 1, 2], "client 0 took two whole sequences");
        assert_eq!(sent[1], [0, 1, 2], "client 1 took the third, the budget's last 1 rounded up");
        assert!(sources.iter().all(|s| s.spent(&plan)));
    }

    /// Open loop over a sequence `A ; B ; B` at 1,000 commands a second on two clients: each
    /// sequence arrives whole (its three commands at one intended time, in order), the next a
    /// sequence's gap later (6 ms: the rate counts commands), and the clients' first arrivals
    /// spread over that gap.
    #[test]
    fn an_open_loop_sequence_arrives_whole_and_the_rate_counts_its_commands() {
        let ol = crate::OpenLoop { rate: 1000.0, poisson: false, slack: Duration::ZERO };
        let plan = sequence_plan(Budget::unlimited(), Some(ol));
        let ms = |t: Time| t.as_micros() as f64 / 1000.0;
        for (client, first) in [(0u64, 0.0), (1, 3.0)] {
            let mut s = Source::new(&plan, client);
            s.start(&plan, Time::ZERO);
            let drawn: Vec<(f64, u16)> = (0..9)
                .map(|_| {
                    assert_eq!(s.take(&plan, 1), 1);
                    let at = ms(s.arrive(ol, &plan));
                    (at, s.pick(&plan.workload).1)
                })
                .collect();
            let want: Vec<(f64, u16)> =
                (0..3).flat_map(|k| (0..3).map(move |c| (first + 6.0 * k as f64, c as u16))).collect();
            assert_eq!(drawn, want, "client {client}");
        }
    }

    /// `--verify`: a GET's reply split over three inputs is checked whole (the connection keeps
    /// its bytes, and says none of its body may be skipped), a SET's value encodes its key and
    /// version, and a read drawn after an acknowledged write that returns nil is stale.
    #[test]
    fn a_verified_reply_split_over_inputs_is_checked_whole() {
        let mut plan = sequence_plan(Budget::new(4), None);
        let set = Template::command(&[b"SET", b"key:__rand_int__", b"xxx"]);
        let get = Template::command(&[b"GET", b"key:__rand_int__"]);
        let verify = crate::verify::Verify::new(&[set.as_bytes(), get.as_bytes()], 40, 1, 1, true).unwrap();
        plan.workload = Workload {
            template: set.clone(),
            keys: KeySpace::Random { n: 1 },
            mix: Some(Mix::sequence(vec![set, get]).unwrap()),
        };
        plan.verify = Some(Arc::new(verify));
        plan.connections = 1;
        let mut stats = Stats::new(Time::ZERO, 3, false).unwrap();
        let mut c = Client::new(Arc::new(plan), 0);
        let at = Time::from_nanos;
        c.handle_connected(0, at(0), &mut stats);
        while c.poll_event(0).is_some() {}
        let mut value = Vec::new();
        crate::verify::encode_value(&mut value, 0, 1, 40);
        // A sequence goes whole: the SET and the GET in one write.
        let sent = c.poll_transmit(0, at(1)).unwrap().to_vec();
        let set_bytes = [&b"$40\r\n"[..], &value[..], b"\r\n*2\r\n$3\r\nGET\r\n"].concat();
        assert!(sent.windows(set_bytes.len()).any(|w| w == set_bytes), "{}", String::from_utf8_lossy(&sent));
        c.advance_transmit(0, sent.len(), at(1), &mut stats);
        c.handle_input(0, b"+OK\r\n", at(2), &mut stats);
        let mut reply = b"$40\r\n".to_vec();
        reply.extend_from_slice(&value);
        reply.extend_from_slice(b"\r\n");
        c.handle_input(0, &reply[..10], at(4), &mut stats);
        assert_eq!(c.skippable(0), 0, "a verified body is read");
        c.handle_input(0, &reply[10..30], at(5), &mut stats);
        c.handle_input(0, &reply[30..], at(6), &mut stats);
        assert_eq!((stats.verify.checked, stats.verify.mismatches()), (1, 0), "{:?}", stats.verify);
        // The second sequence: its GET drawn after the first SET's acknowledgement (version 1),
        // answered nil: stale.
        let sent = c.poll_transmit(0, at(7)).unwrap().len();
        c.advance_transmit(0, sent, at(7), &mut stats);
        c.handle_input(0, b"+OK\r\n$-1\r\n", at(8), &mut stats);
        assert_eq!((stats.verify.checked, stats.verify.stale), (2, 1), "{:?}", stats.verify);
        let shown = &stats.verify.shown[0];
        assert_eq!((shown.key.as_str(), shown.got.as_str()), ("key:000000000000", "(nil)"));
        assert!(shown.expected.starts_with("rb000000000000:000000000001:"), "{shown:?}");
    }

    /// Replies read together are recorded as one histogram entry per run of alike ones (see
    /// [`Run`]): the stats must be those of recording each. Three requests, the first written
    /// alone at 1 µs and the other two at 5 µs, answered in one read at 11 µs (a value, a nil,
    /// an error): latencies 10, 6 and 6 µs; then three written and answered together.
    #[test]
    fn replies_read_together_are_recorded_as_each_would_be() {
        let mut plan = sequence_plan(Budget::new(6), None);
        plan.workload =
            Workload { template: Template::command(&[b"GET", b"k"]), keys: KeySpace::Literal, mix: None };
        plan.conn.pipeline = 3;
        plan.connections = 1;
        let mut stats = Stats::new(Time::ZERO, 3, false).unwrap();
        let mut c = Client::new(Arc::new(plan), 0);
        let at = Time::from_nanos;
        c.handle_connected(0, at(0), &mut stats);
        while c.poll_event(0).is_some() {}
        let one = c.poll_transmit(0, at(1_000)).unwrap().len() / 3;
        c.advance_transmit(0, one, at(1_000), &mut stats);
        let rest = c.poll_transmit(0, at(5_000)).unwrap().len();
        c.advance_transmit(0, rest, at(5_000), &mut stats);
        c.handle_input(0, b"$1\r\nx\r\n$-1\r\n-ERR no\r\n", at(11_000), &mut stats);
        assert_eq!((stats.requests, stats.nils, stats.error_replies()), (3, 1, 1));
        assert_eq!((stats.latency.count_at(10), stats.latency.count_at(6)), (1, 2));
        let all = c.poll_transmit(0, at(20_000)).unwrap().len();
        assert_eq!(all, 3 * one, "the next three requests");
        c.advance_transmit(0, all, at(20_000), &mut stats);
        c.handle_input(0, b"$1\r\nx\r\n$1\r\nx", at(22_000), &mut stats);
        c.handle_input(0, b"\r\n$1\r\nx\r\n", at(23_000), &mut stats);
        assert_eq!(stats.requests, 6);
        assert_eq!((stats.latency.count_at(2), stats.latency.count_at(3)), (1, 2));
        assert_eq!(stats.latency.len(), 6, "one histogram entry per request");
        assert_eq!(stats.last_reply, at(23_000));
    }

    /// Cache-aside: a GET answered nil is followed on its connection by the SET of its key,
    /// before the next GET (`-P 1`); a miss is timed from its GET's send to its SET's reply,
    /// and a hit sends nothing more.
    #[test]
    fn a_miss_is_followed_by_the_set_of_its_key() {
        let mut plan = sequence_plan(Budget::new(2), None);
        let get = Template::command(&[b"GET", b"key:__rand_int__"]);
        let set = crate::suite::preload(&get, &crate::dist::ValueSize::Fixed(3)).unwrap().template;
        plan.workload = Workload { template: get, keys: KeySpace::Random { n: 1_000_000 }, mix: None };
        plan.connections = 1;
        plan.cache_aside = Some(Arc::new(crate::cache::CacheAside { set }));
        let mut stats = plan.new_stats(Time::ZERO, 3).unwrap();
        let mut c = Client::new(Arc::new(plan), 0);
        let at = Time::from_nanos;
        c.handle_connected(0, at(0), &mut stats);
        while c.poll_event(0).is_some() {}
        let sent = |c: &mut Client, now: u64, stats: &mut Stats| {
            let bytes = c.poll_transmit(0, at(now)).unwrap().to_vec();
            c.advance_transmit(0, bytes.len(), at(now), stats);
            String::from_utf8(bytes).unwrap()
        };
        let get = sent(&mut c, 1_000, &mut stats);
        let key = get.split("\r\n").nth(4).unwrap().to_string();
        assert!(key.starts_with("key:") && key.len() == 16, "{get:?}");
        c.handle_input(0, b"$-1\r\n", at(3_000), &mut stats);
        let set = sent(&mut c, 4_000, &mut stats);
        assert_eq!(set, format!("*3\r\n$3\r\nSET\r\n$16\r\n{key}\r\n$3\r\nVXK\r\n"));
        c.handle_input(0, b"+OK\r\n", at(9_000), &mut stats);
        let next = sent(&mut c, 10_000, &mut stats);
        assert!(next.starts_with("*2\r\n$3\r\nGET\r\n"), "{next:?}");
        c.handle_input(0, b"$1\r\nx\r\n", at(12_000), &mut stats);
        assert!(c.poll_transmit(0, at(13_000)).is_none(), "a hit sends nothing more");
        let cache = stats.cache.as_deref().unwrap();
        assert_eq!((cache.hits, cache.misses, cache.sets, cache.unfilled), (1, 1, 1, 0));
        assert_eq!(cache.miss_latency.len(), 1);
        assert_eq!(cache.miss_latency.max(), 8, "the GET's send at 1 us to the SET's reply at 9 us");
        assert_eq!((stats.requests, stats.nils), (3, 1), "the GETs and the SET");
    }

    /// A stamped template (`-t pubsub`): each request's payload carries the client's index, its
    /// own sequence from 0 and, in a closed loop, its send as the intended time too; the integer
    /// replies (a PUBLISH's receivers) are summed.
    #[test]
    fn a_stamped_request_carries_the_client_its_sequence_and_its_times() {
        use crate::delivery::{Stamp, STAMP_LEN};
        let mut plan = sequence_plan(Budget::new(3), None);
        plan.workload = Workload {
            template: Template::stamped(&[b"PUBLISH", b"ch"], 80),
            keys: KeySpace::Literal,
            mix: None,
        };
        plan.conn.pipeline = 3;
        let mut stats = Stats::new(Time::ZERO, 3, false).unwrap();
        let mut c = Client::new(Arc::new(plan), 7);
        c.handle_connected(0, Time::ZERO, &mut stats);
        while c.poll_event(0).is_some() {}
        let now = Time::from_micros(42);
        let bytes = c.poll_transmit(0, now).unwrap().to_vec();
        let mut stamps = Vec::new();
        let mut at = 0;
        while let Some(i) = bytes[at..].windows(5).position(|w| w == crate::delivery::STAMP_MAGIC) {
            stamps.push(Stamp::read(&bytes[at + i..at + i + STAMP_LEN]).unwrap());
            at += i + STAMP_LEN;
        }
        let want: Vec<Stamp> =
            (0..3).map(|seq| Stamp { publisher: 7, seq, intended: now, sent: now }).collect();
        assert_eq!(stamps, want);
        c.advance_transmit(0, bytes.len(), now, &mut stats);
        c.handle_input(0, b":10\r\n:10\r\n:9\r\n", Time::from_micros(50), &mut stats);
        assert_eq!((stats.requests, stats.integer_sum), (3, 29));
    }
}
