//! Requests over several nodes: Redis Cluster (`--cluster`) and a primary with replicas
//! (`--replicas`, `--replica`).
//!
//! - Key slots: which of the 16384 slots a key belongs to, by CRC16/XMODEM of the key or of its
//!   hash tag, under Redis's rule (`keyHashSlot`): the part between the first `{` and the first
//!   `}` after it, when that part is not empty.
//! - [`Cluster`]: what a test over several nodes shares: the nodes, the slot map (changed by
//!   `MOVED`), how each command is routed ([`Route`]: its key arguments, read or write), where
//!   reads go ([`Reads`]).
//! - The router (one per client): a client is one [`crate::Connection`] per node; the router
//!   draws the client's requests from the workload, sends each to the node that owns its key's
//!   slot (a write to the slot's primary, a read to a replica when asked), and takes back the
//!   ones the cluster redirects (`MOVED`, `ASK`) or asks to retry (`TRYAGAIN`, `CLUSTERDOWN`).
//!   A retried request keeps the time of its first send; redirects are counted
//!   ([`Redirects`]), never as completed requests.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use crate::plan::{Handshake, Plan};
use crate::rng::Rng;
use crate::run::Endpoint;
use crate::template::KeyGen;
use crate::Time;

/// How many slots a cluster has.
pub const SLOTS: u16 = 16384;

/// CRC16/XMODEM (polynomial 0x1021, initial value 0, no reflection, no final xor), the checksum
/// Redis Cluster hashes keys with.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// The part of `key` that is hashed: its hash tag, or the whole key when it has none (no `{`,
/// no `}` after the first `{`, or nothing between them).
pub fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else { return key };
    match key[open + 1..].iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => &key[open + 1..open + 1 + len],
        _ => key,
    }
}

/// The slot of `key`, 0 to 16383.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & (SLOTS - 1)
}

/// The shortest hash tag (letters and digits, at most 3) of every slot: what `{tag}` in a
/// command becomes, as redis-benchmark's `crc16_slottable.h` has it. Made once, on first use.
fn slot_tags() -> &'static [[u8; 3]] {
    static TAGS: OnceLock<Vec<[u8; 3]>> = OnceLock::new();
    TAGS.get_or_init(|| {
        const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        // Padded with `}`: `{ab}}` hashes `ab`, the part up to the first `}`.
        let mut tags = vec![[0u8; 3]; usize::from(SLOTS)];
        let mut left = usize::from(SLOTS);
        for len in 1..=3 {
            let mut idx = [0usize; 3];
            loop {
                let mut tag = [b'}'; 3];
                for i in 0..len {
                    tag[i] = ALNUM[idx[i]];
                }
                let slot = usize::from(key_slot(&tag[..len]));
                if tags[slot][0] == 0 {
                    tags[slot] = tag;
                    left -= 1;
                }
                // The next combination of `len` characters.
                let mut i = 0;
                while i < len {
                    idx[i] += 1;
                    if idx[i] < ALNUM.len() {
                        break;
                    }
                    idx[i] = 0;
                    i += 1;
                }
                if i == len || left == 0 {
                    break;
                }
            }
        }
        tags
    })
}

/// How many nodes may appear in a cluster during a test (each client keeps room for a
/// connection to each, opened only when a redirect names the node).
pub const SPARE_NODES: usize = 4;

/// The placeholder a command can hold so that all its keys share a slot: redis-benchmark's
/// cluster key names (`key:{tag}:__rand_int__`).
pub const TAG_PLACEHOLDER: &[u8] = b"{tag}";

/// How many redirects and retries a test met, by kind. None of them is a completed request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redirects {
    /// `MOVED`: the slot has a new owner; the slot map changed and the request went there.
    pub moved: u64,
    /// `ASK`: the slot is migrating; the request went to the target after `ASKING`.
    pub ask: u64,
    /// `TRYAGAIN`: a multi-key request during a migration; retried after a pause.
    pub tryagain: u64,
    /// `CLUSTERDOWN`: the cluster could not serve the slot; retried after a pause.
    pub clusterdown: u64,
}

impl Redirects {
    /// All kinds together.
    pub fn total(&self) -> u64 {
        self.moved + self.ask + self.tryagain + self.clusterdown
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Redirects) {
        self.moved += other.moved;
        self.ask += other.ask;
        self.tryagain += other.tryagain;
        self.clusterdown += other.clusterdown;
    }

    /// The kinds by the names reports use, with their counts.
    pub fn kinds(&self) -> [(&'static str, u64); 4] {
        [
            ("moved", self.moved),
            ("ask", self.ask),
            ("tryagain", self.tryagain),
            ("clusterdown", self.clusterdown),
        ]
    }
}

/// Where reads go (`--rfr`; with `--replicas` or `--replica`, replicas).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// Every request to the primary that owns its slot.
    Primary,
    /// Reads to the replicas of that primary (round robin); writes to the primary.
    Replicas,
    /// Reads to the primary and its replicas in turn; writes to the primary.
    Both,
}

/// One node of the test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Where it is.
    pub endpoint: Endpoint,
    /// `true` for a primary, `false` for a replica.
    pub primary: bool,
    /// A replica's primary (an index into [`Cluster::nodes`]).
    pub primary_index: Option<usize>,
}

/// How one command is routed: which of its arguments are keys (0 is the command's name) and
/// whether it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The key arguments; empty for a command without keys (it goes to the client's own
    /// primary, as redis-benchmark sends PING to the node of the client).
    pub keys: Vec<usize>,
    /// Writes go to the primary that owns the slot whatever [`Reads`] says.
    pub write: bool,
}

impl Route {
    /// The route of a command from respbench's own table (the default suite's commands and
    /// common ones), by its name and argument count (the name included); `None` for a command
    /// it does not know, whose route the server's `COMMAND INFO` tells.
    pub fn builtin(name: &[u8], argc: usize) -> Option<Route> {
        let name = name.to_ascii_uppercase();
        let first = |write| Some(Route { keys: if argc > 1 { vec![1] } else { vec![] }, write });
        match name.as_slice() {
            b"PING" | b"ECHO" => Some(Route { keys: vec![], write: false }),
            b"GET" | b"LRANGE" | b"HGET" | b"HGETALL" | b"EXISTS" | b"ZSCORE" | b"ZRANGE" | b"SISMEMBER"
            | b"SMEMBERS" | b"LINDEX" | b"LLEN" | b"SCARD" | b"ZCARD" | b"STRLEN" | b"TTL" | b"TYPE"
            | b"GETRANGE" | b"HEXISTS" | b"HLEN" | b"HMGET" | b"ZRANK" | b"XRANGE" | b"XLEN" => first(false),
            b"SET" | b"INCR" | b"DECR" | b"INCRBY" | b"LPUSH" | b"RPUSH" | b"LPOP" | b"RPOP" | b"SADD"
            | b"SREM" | b"HSET" | b"HINCRBY" | b"SPOP" | b"ZADD" | b"ZINCRBY" | b"ZPOPMIN" | b"ZPOPMAX"
            | b"XADD" | b"SETEX" | b"SETNX" | b"APPEND" | b"EXPIRE" | b"GETSET" | b"HDEL" | b"LTRIM"
            | b"LSET" => first(true),
            b"MSET" | b"MSETNX" => Some(Route { keys: (1..argc).step_by(2).collect(), write: true }),
            b"MGET" => Some(Route { keys: (1..argc).collect(), write: false }),
            b"DEL" | b"UNLINK" => Some(Route { keys: (1..argc).collect(), write: true }),
            _ => None,
        }
    }

    /// The route `COMMAND INFO` gives: the first and last key argument (a negative last counts
    /// from the end), the step between keys, and the flags (`write` makes it a write).
    pub fn from_command_info(first: i64, last: i64, step: i64, write: bool, argc: usize) -> Route {
        let argc = argc as i64;
        let last = if last < 0 { argc + last } else { last };
        let mut keys = Vec::new();
        if first > 0 && step > 0 {
            let mut k = first;
            while k <= last && k < argc {
                keys.push(k as usize);
                k += step;
            }
        }
        Route { keys, write }
    }

    /// The name and argument count of a template's command; `None` for an inline one.
    pub fn command_of(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
        let name = resp_arg(bytes, 0)?;
        let end = bytes.iter().position(|&b| b == b'\r')?;
        let argc = std::str::from_utf8(bytes.get(1..end)?).ok()?.parse().ok()?;
        Some((bytes[name].to_vec(), argc))
    }
}

/// What a test over several nodes shares: the nodes, the slot map and how requests are routed.
#[derive(Debug)]
pub struct Cluster {
    /// Every node, primaries and replicas: a client opens a connection to each, so that a
    /// replica promoted by a failover is already connected.
    pub nodes: Vec<Node>,
    /// Redis Cluster (`MOVED` and `ASK` are followed, `READONLY` sent to replicas); `false` for
    /// a standalone primary and its replicas.
    pub redirects: bool,
    /// Where reads go.
    pub reads: Reads,
    /// The route of the workload's template, or of each command of a mix, in order.
    pub routes: Vec<Route>,
    /// A request redirected or retried this many times ends as an error.
    pub max_attempts: u8,
    /// The first pause before retrying after `TRYAGAIN` or `CLUSTERDOWN`, doubled each time.
    pub retry_pause: Duration,
    /// The primary that owns each slot (`u16::MAX`: none known).
    map: RwLock<Vec<u16>>,
    /// The handshake of a replica's connection in a cluster: the test's, then `READONLY`.
    replica_handshake: Handshake,
    /// One router per client, made by the first of its connections.
    routers: Vec<OnceLock<Arc<Mutex<Router>>>>,
    /// Room for nodes that appear during the test (a new primary given slots): their
    /// addresses, in the order redirects named them. Their connections wait, unopened, until
    /// then.
    spares: Mutex<Vec<Endpoint>>,
    spare_room: usize,
}

impl Cluster {
    /// A test over `nodes` whose slots are owned as `owners` says (an index into `nodes` per
    /// slot, `u16::MAX` for none; for a standalone primary and its replicas, every slot is the
    /// primary's), for `clients` clients. `handshake` is the test's.
    pub fn new(
        nodes: Vec<Node>,
        owners: Vec<u16>,
        redirects: bool,
        reads: Reads,
        routes: Vec<Route>,
        clients: usize,
        handshake: &Handshake,
    ) -> Result<Cluster, String> {
        if nodes.is_empty() || nodes.len() >= usize::from(u16::MAX) {
            return Err(format!("a cluster of {} nodes", nodes.len()));
        }
        if owners.len() != usize::from(SLOTS) {
            return Err(format!("a slot map of {} slots", owners.len()));
        }
        let mut replica_handshake = handshake.clone();
        if redirects {
            replica_handshake.push("READONLY", &[b"READONLY"]);
        }
        // Only a cluster's redirects can name a node found later.
        let spare_room = if redirects { SPARE_NODES } else { 0 };
        Ok(Cluster {
            nodes,
            spares: Mutex::new(Vec::new()),
            spare_room,
            redirects,
            reads,
            routes,
            max_attempts: 16,
            retry_pause: Duration::from_millis(10),
            map: RwLock::new(owners),
            replica_handshake,
            routers: (0..clients).map(|_| OnceLock::new()).collect(),
        })
    }

    /// How many nodes a client has a connection for: the nodes found at the start, and room
    /// for some that appear during the test.
    pub fn len(&self) -> usize {
        self.nodes.len() + self.spare_room
    }

    /// Where node `i` is: `None` for room kept for a node that has not appeared (yet).
    pub fn endpoint(&self, i: usize) -> Option<Endpoint> {
        match self.nodes.get(i) {
            Some(n) => Some(n.endpoint.clone()),
            None => self.spares.lock().unwrap_or_else(|e| e.into_inner()).get(i - self.nodes.len()).cloned(),
        }
    }

    /// How many nodes a client connected to, or may have: the nodes found at the start and
    /// those that appeared since (node `i` for `i` below this has an [`Cluster::endpoint`]).
    pub fn appeared(&self) -> usize {
        self.nodes.len() + self.spares.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether node `i` is a primary (a node that appeared during the test is one: a redirect
    /// named it as a slot's owner).
    fn is_primary(&self, i: usize) -> bool {
        self.nodes.get(i).is_none_or(|n| n.primary)
    }

    /// Whether there are no nodes (never, once made).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The primary that owns `slot` now, if any is known.
    pub fn owner(&self, slot: u16) -> Option<usize> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        map.get(usize::from(slot)).copied().filter(|&o| o != u16::MAX).map(usize::from)
    }

    /// How many slots each node owns now.
    pub fn slot_counts(&self) -> Vec<u64> {
        let mut counts = vec![0; self.len()];
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        for &o in map.iter() {
            if let Some(c) = counts.get_mut(usize::from(o)) {
                *c += 1;
            }
        }
        counts
    }

    /// How long a request waits before its retry number `attempts`: [`Cluster::retry_pause`],
    /// doubling with each attempt up to 64 times it.
    fn pause(&self, attempts: u8) -> Duration {
        self.retry_pause * (1u32 << attempts.min(6))
    }

    /// The node at `host:port`, as a redirect names it; a node not seen before takes the next
    /// room kept for one, if any is left.
    fn node_at(&self, addr: &[u8]) -> Option<usize> {
        let addr = std::str::from_utf8(addr).ok()?;
        let (host, port) = addr.rsplit_once(':')?;
        let port: u16 = port.parse().ok()?;
        let is = |e: &Endpoint| match e {
            // An empty or `?` host means the one we already know (Redis's preferred endpoint
            // "unknown"): match the port alone then.
            Endpoint::Tcp { host: h, port: p } => *p == port && (host.is_empty() || host == "?" || h == host),
            Endpoint::Unix(_) => false,
        };
        if let Some(i) = self.nodes.iter().position(|n| is(&n.endpoint)) {
            return Some(i);
        }
        let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = spares.iter().position(is) {
            return Some(self.nodes.len() + k);
        }
        if spares.len() >= self.spare_room || host.is_empty() || host == "?" {
            return None;
        }
        spares.push(Endpoint::Tcp { host: host.to_string(), port });
        Some(self.nodes.len() + spares.len() - 1)
    }

    fn set_owner(&self, slot: u16, node: usize) {
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if let Some(o) = map.get_mut(usize::from(slot)) {
            *o = node as u16;
        }
    }

    /// The handshake of node `node`'s connections.
    pub(crate) fn handshake<'a>(&'a self, node: usize, test: &'a Handshake) -> &'a Handshake {
        match self.nodes.get(node) {
            Some(n) if !n.primary && self.redirects => &self.replica_handshake,
            _ => test,
        }
    }

    /// The router of client `client`, made on first use.
    pub(crate) fn router(&self, plan: &Plan, client: u64) -> Option<Arc<Mutex<Router>>> {
        let slot = self.routers.get(usize::try_from(client).ok()?)?;
        Some(Arc::clone(slot.get_or_init(|| Arc::new(Mutex::new(Router::new(plan, self, client))))))
    }
}

/// Why a request came back to its router instead of completing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Redirect {
    Moved,
    Ask,
    TryAgain,
    ClusterDown,
}

impl Redirect {
    /// The redirect an error reply asks for, if it is one.
    pub(crate) fn of(message: &[u8]) -> Option<Redirect> {
        let word = message.split(|&b| b == b' ').next().unwrap_or(message);
        match word {
            b"MOVED" => Some(Redirect::Moved),
            b"ASK" => Some(Redirect::Ask),
            b"TRYAGAIN" => Some(Redirect::TryAgain),
            b"CLUSTERDOWN" => Some(Redirect::ClusterDown),
            _ => None,
        }
    }

    pub(crate) fn count(self, r: &mut Redirects) {
        match self {
            Redirect::Moved => r.moved += 1,
            Redirect::Ask => r.ask += 1,
            Redirect::TryAgain => r.tryagain += 1,
            Redirect::ClusterDown => r.clusterdown += 1,
        }
    }
}

/// A request of a client, from its draw to its reply: its bytes are kept until then so that a
/// redirect can send them again.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) bytes: Vec<u8>,
    /// When the write that took its last byte first began; `Time::MAX` before.
    pub(crate) first_sent: Time,
    /// Its intended send time (open loop); `Time::MAX` in closed loop.
    pub(crate) intended: Time,
    /// When it was drawn: its `--timeout` counts from here.
    pub(crate) queued: Time,
    /// Which command of the mix.
    pub(crate) part: u16,
    /// Its key's slot; `SLOTS` for a command without keys.
    slot: u16,
    write: bool,
    attempts: u8,
    /// Send `ASKING` before it (an `ASK` redirect).
    pub(crate) asking: bool,
    /// Not before this time (a retry's pause).
    not_before: Time,
}

/// One client's requests over the nodes: what its connections share. Each connection locks it
/// when it fills its window, takes a reply's request back, or goes down.
#[derive(Debug)]
pub struct Router {
    client: u64,
    keys: KeyGen,
    mix_rng: Rng,
    schedule_rng: Rng,
    /// The requests of each node, drawn and not yet taken by its connection.
    queues: Vec<VecDeque<Request>>,
    /// Requests drawn and not finished (queued, in flight, or waiting to retry).
    outstanding: usize,
    /// The nodes whose connections must be drained: requests were queued for them, or the
    /// client is done.
    wake: Vec<usize>,
    woken: Vec<bool>,
    /// Whether each node's connection is up.
    up: Vec<bool>,
    /// Whether each node's connection went down (not: is still connecting): its requests go
    /// elsewhere meanwhile.
    down: Vec<bool>,
    /// Buffers of finished requests, to be used again.
    pool: Vec<Vec<u8>>,
    /// Open loop: the intended time of the next request and the mean gap.
    next_due: Time,
    interval: Duration,
    /// Round robin over replicas.
    turn: usize,
    /// The test's stop has been passed on to every connection of the client.
    stop_told: bool,
    /// The test has an open-loop schedule, which the lead connection keeps.
    open_loop: bool,
    /// A key without its `{tag}`, while its slot is computed.
    scratch: Vec<u8>,
}

impl Router {
    fn new(plan: &Plan, cluster: &Cluster, client: u64) -> Router {
        let n = cluster.len();
        let interval = plan.conn.open_loop.map_or(Duration::MAX, |ol| ol.interval(plan.connections));
        Router {
            client,
            keys: KeyGen::new(plan.workload.keys.clone(), Rng::for_stream(plan.seed, client)),
            mix_rng: Rng::for_stream(plan.seed ^ 0x0000_0000_3a1c_e5ed, client),
            schedule_rng: Rng::for_stream(plan.seed ^ 0x5eed_5c4e_d01e_0000, client),
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            outstanding: 0,
            wake: Vec::new(),
            woken: vec![false; n],
            up: vec![false; n],
            down: vec![false; n],
            pool: Vec::new(),
            next_due: Time::MAX,
            interval,
            turn: 0,
            stop_told: false,
            open_loop: plan.conn.open_loop.is_some(),
            scratch: Vec::new(),
        }
    }

    /// The node whose connection keeps the client's open-loop schedule: the first that is up.
    fn lead(&self) -> Option<usize> {
        self.up.iter().position(|&u| u)
    }

    /// Node `node`'s connection is up (its handshake went through).
    pub(crate) fn node_up(&mut self, plan: &Plan, node: usize, now: Time) {
        if let Some(u) = self.up.get_mut(node) {
            *u = true;
            self.down[node] = false;
        }
        if plan.conn.open_loop.is_some() && self.next_due == Time::MAX {
            // Spread the clients' first arrivals over one interval.
            let n = plan.connections.max(1);
            let interval = u64::try_from(self.interval.as_nanos()).unwrap_or(u64::MAX);
            self.next_due = now + Duration::from_nanos(interval / n * (self.client % n));
        }
    }

    /// Node `node`'s connection is down or ended; `lost` requests went with it (counted by the
    /// connection). What was queued for it goes elsewhere: the cluster redirects it.
    pub(crate) fn node_down(&mut self, cluster: &Cluster, node: usize, lost: impl Iterator<Item = Request>) {
        if let Some(u) = self.up.get_mut(node) {
            *u = false;
            self.down[node] = true;
        }
        for r in lost {
            self.finish(r);
        }
        let queued: Vec<Request> =
            self.queues.get_mut(node).map(|q| q.drain(..).collect()).unwrap_or_default();
        for r in queued {
            let to = self.node_for(cluster, r.slot, r.write);
            self.queue(to, r);
        }
        if (0..self.down.len()).filter(|&i| cluster.endpoint(i).is_some()).all(|i| self.down[i]) {
            // Nobody left to send them: they are lost with the client.
            let stranded: usize = self.queues.iter().map(VecDeque::len).sum();
            self.queues.iter_mut().for_each(VecDeque::clear);
            self.outstanding -= stranded;
        }
    }

    /// A request is over (its reply recorded, or lost).
    pub(crate) fn finish(&mut self, mut r: Request) {
        self.outstanding -= 1;
        if let Some(lead) = self.lead().filter(|_| self.open_loop) {
            // The window has room again: the lead must look at the schedule (its timer was
            // not set while the window was full).
            self.wake_node(lead);
        }
        r.bytes.clear();
        if self.pool.len() < 64 {
            self.pool.push(r.bytes);
        }
    }

    /// Whether the client has nothing left to do: the budget is spent (or the test stopped) and
    /// no request is outstanding.
    pub(crate) fn is_done(&self, plan: &Plan, stopped: bool) -> bool {
        self.outstanding == 0 && (stopped || plan.budget.is_exhausted())
    }

    /// Draws new requests while the client's window (`-P`, over all its nodes) and the budget
    /// or the schedule allow, and routes each to its node's queue.
    pub(crate) fn draw(&mut self, plan: &Plan, cluster: &Cluster, now: Time) {
        let window = plan.conn.pipeline.max(1) as usize;
        if let Some(ol) = plan.conn.open_loop {
            if self.lead().is_none() {
                return;
            }
            while self.outstanding < window && self.next_due <= now {
                if plan.budget.take(1) == 0 {
                    break;
                }
                let intended = self.next_due;
                self.draw_one(plan, cluster, intended, now);
                self.next_due = intended + self.gap(ol);
            }
            return;
        }
        if self.outstanding >= window {
            return;
        }
        let granted = plan.budget.take((window - self.outstanding) as u64);
        for _ in 0..granted {
            self.draw_one(plan, cluster, Time::MAX, now);
        }
    }

    fn gap(&mut self, ol: crate::plan::OpenLoop) -> Duration {
        if !ol.poisson {
            return self.interval;
        }
        let u = self.schedule_rng.next_f64();
        let nanos = -(1.0 - u).ln() * self.interval.as_nanos() as f64;
        Duration::from_nanos(nanos.min(u64::MAX as f64 / 2.0) as u64)
    }

    fn draw_one(&mut self, plan: &Plan, cluster: &Cluster, intended: Time, now: Time) {
        let workload = &plan.workload;
        let (template, part) = match &workload.mix {
            None => (&workload.template, 0),
            Some(m) => {
                let i = m.pick(&mut self.mix_rng);
                (&m.templates[i], i)
            }
        };
        let mut bytes = self.pool.pop().unwrap_or_default();
        template.write(&mut bytes, &mut self.keys);
        let route = cluster.routes.get(part).or(cluster.routes.first());
        let (slot, write) = match route {
            Some(r) => (request_slot(&mut bytes, &r.keys, &mut self.scratch), r.write),
            None => (SLOTS, true),
        };
        let r = Request {
            bytes,
            first_sent: Time::MAX,
            intended,
            queued: now,
            part: part.min(usize::from(u16::MAX)) as u16,
            slot,
            write,
            attempts: 0,
            asking: false,
            not_before: Time::ZERO,
        };
        self.outstanding += 1;
        let to = self.node_for(cluster, slot, write);
        self.queue(to, r);
    }

    /// The node a request for `slot` goes to: the slot's primary for a write, a replica of it
    /// for a read when [`Reads`] says so; a node that is up when that one is not (the cluster
    /// redirects the request where it belongs).
    fn node_for(&mut self, cluster: &Cluster, slot: u16, write: bool) -> usize {
        let n = cluster.len();
        let home = self.home(cluster);
        let primary = if slot == SLOTS { home } else { cluster.owner(slot).unwrap_or(home) };
        let mut to = primary;
        if !write && cluster.reads != Reads::Primary {
            let replicas = cluster.nodes.iter().enumerate().filter(|(i, node)| {
                node.primary_index == Some(primary) && !self.down.get(*i).copied().unwrap_or(true)
            });
            let count = replicas.clone().count() + usize::from(cluster.reads == Reads::Both);
            if count > 0 {
                self.turn = self.turn.wrapping_add(1);
                let pick = self.turn % count;
                to = replicas.map(|(i, _)| i).nth(pick).unwrap_or(primary);
            }
        }
        if !self.down.get(to).copied().unwrap_or(false) {
            // Up, or still connecting: its queue waits for it.
            return to;
        }
        // Down: any primary that is up, which redirects it (or answers, after a failover).
        (1..n)
            .map(|k| (to + k) % n)
            .find(|&i| cluster.is_primary(i) && cluster.endpoint(i).is_some() && !self.down[i])
            .or_else(|| self.lead())
            .unwrap_or(to)
    }

    /// The client's own primary, for commands without keys: client `c` on the `c % primaries`th.
    fn home(&self, cluster: &Cluster) -> usize {
        let primaries = cluster.nodes.iter().filter(|n| n.primary).count().max(1);
        let k = (self.client as usize) % primaries;
        cluster.nodes.iter().enumerate().filter(|(_, n)| n.primary).nth(k).map_or(0, |(i, _)| i)
    }

    fn queue(&mut self, node: usize, r: Request) {
        if let Some(q) = self.queues.get_mut(node) {
            q.push_back(r);
            self.wake_node(node);
        } else {
            self.outstanding -= 1;
        }
    }

    fn wake_node(&mut self, node: usize) {
        if !self.woken[node] {
            self.woken[node] = true;
            self.wake.push(node);
        }
    }

    /// The next request for node `node`'s connection, if one may go at `now`.
    pub(crate) fn take(&mut self, node: usize, now: Time) -> Option<Request> {
        let q = self.queues.get_mut(node)?;
        if q.front()?.not_before > now {
            return None;
        }
        q.pop_front()
    }

    /// The nodes whose connections must be drained now, once each.
    pub fn take_wakes(&mut self) -> Vec<usize> {
        for &n in &self.wake {
            self.woken[n] = false;
        }
        std::mem::take(&mut self.wake)
    }

    /// Asks every connection of the client to look again (the client is done, or a stop).
    pub(crate) fn wake_all(&mut self) {
        for n in 0..self.queues.len() {
            if !self.woken[n] {
                self.woken[n] = true;
                self.wake.push(n);
            }
        }
    }

    /// When node `node`'s connection must wake though no bytes arrive: the client's next
    /// arrival (kept by the lead), a queued retry's pause.
    pub(crate) fn timeout(&self, plan: &Plan, node: usize) -> Option<Time> {
        let mut next = None;
        if plan.conn.open_loop.is_some()
            && self.lead() == Some(node)
            && self.outstanding < plan.conn.pipeline.max(1) as usize
            && !plan.budget.is_exhausted()
        {
            next = Some(self.next_due);
        }
        if let Some(r) = self.queues.get(node).and_then(VecDeque::front) {
            next = Some(next.map_or(r.not_before, |n: Time| n.min(r.not_before)));
        }
        next
    }

    /// The test stopped: drops what was drawn and not sent, and wakes every connection of the
    /// client, once (a connection still waiting for replies comes back here on each drain).
    pub(crate) fn stop(&mut self) {
        if !self.stop_told {
            self.stop_told = true;
            self.drop_queued();
            self.wake_all();
        }
    }

    /// Requests drawn and not sent when the test stopped: dropped.
    fn drop_queued(&mut self) {
        let queued: Vec<Request> = self.queues.iter_mut().flat_map(|q| q.drain(..)).collect();
        for r in queued {
            self.finish(r);
        }
    }

    /// A reply redirected request `r`: routes it again. `Err` gives it back when it cannot go
    /// on (out of attempts, a node not known and no room for one, a run without redirects): it
    /// completes as the error it got.
    pub(crate) fn redirect(
        &mut self,
        cluster: &Cluster,
        mut r: Request,
        kind: Redirect,
        message: &[u8],
        now: Time,
    ) -> Result<(), Request> {
        r.attempts = r.attempts.saturating_add(1);
        if !cluster.redirects || r.attempts >= cluster.max_attempts {
            return Err(r);
        }
        r.asking = false;
        let to = match kind {
            Redirect::Moved | Redirect::Ask => {
                // "MOVED 3999 127.0.0.1:6381"
                let mut words = message.split(|&b| b == b' ').skip(1);
                let slot = words.next().and_then(|s| std::str::from_utf8(s).ok()?.parse::<u16>().ok());
                let Some(node) = words.next().and_then(|a| cluster.node_at(a)) else {
                    return Err(r);
                };
                if kind == Redirect::Moved {
                    if let Some(slot) = slot {
                        cluster.set_owner(slot, node);
                    }
                } else {
                    r.asking = true;
                }
                node
            }
            Redirect::TryAgain | Redirect::ClusterDown => {
                r.not_before = now + cluster.pause(r.attempts);
                self.node_for(cluster, r.slot, r.write)
            }
        };
        if self.down.get(to).copied().unwrap_or(false) {
            // Sent to a node that is down (a primary that failed, before its replica took
            // over): wait, then ask a node that is up, which knows better by then.
            r.not_before = now + cluster.pause(r.attempts);
            let to = self.node_for(cluster, r.slot, r.write);
            self.queue(to, r);
            return Ok(());
        }
        self.queue(to, r);
        Ok(())
    }
}

/// The slot of a request's key (`SLOTS` when it has none), from its encoded bytes; a `{tag}` in
/// the request is filled first with the tag of the slot its first key has without it, so that
/// every key of the request shares that slot and the slots follow the keys drawn.
/// `scratch` holds the key without its `{tag}` (a buffer kept by the caller, so that nothing is
/// allocated per request).
fn request_slot(bytes: &mut [u8], keys: &[usize], scratch: &mut Vec<u8>) -> u16 {
    let Some(&first) = keys.first() else { return SLOTS };
    let Some(range) = resp_arg(bytes, first) else { return SLOTS };
    let key = &bytes[range];
    let Some(at) = find(key, TAG_PLACEHOLDER) else { return key_slot(key) };
    // The key without its `{tag}`: what decides the slot.
    scratch.clear();
    scratch.extend_from_slice(&key[..at]);
    scratch.extend_from_slice(&key[at + TAG_PLACEHOLDER.len()..]);
    let slot = key_slot(scratch);
    let tag = slot_tags()[usize::from(slot)];
    let mut from = 0;
    while let Some(i) = find(&bytes[from..], TAG_PLACEHOLDER) {
        let i = from + i;
        bytes[i + 1..i + 4].copy_from_slice(&tag);
        from = i + TAG_PLACEHOLDER.len();
    }
    slot
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Where argument `i` (0 is the command's name) of a RESP-encoded command is in `bytes`
/// (`*N\r\n$len\r\n…`); `None` when it has fewer or is not a RESP array.
pub fn resp_arg(bytes: &[u8], i: usize) -> Option<std::ops::Range<usize>> {
    fn line(bytes: &[u8], from: usize, lead: u8) -> Option<(usize, usize)> {
        if *bytes.get(from)? != lead {
            return None;
        }
        let end = from + bytes[from..].iter().position(|&b| b == b'\r')?;
        let n = std::str::from_utf8(&bytes[from + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    }
    let (count, mut at) = line(bytes, 0, b'*')?;
    if i >= count {
        return None;
    }
    for k in 0..=i {
        let (len, start) = line(bytes, at, b'$')?;
        if k == i {
            return (start + len <= bytes.len()).then_some(start..start + len);
        }
        at = start + len + 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_check_value_and_redis_vectors() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        for (key, slot) in [
            (&b"foo"[..], 12182),
            (b"bar", 5061),
            (b"foo{bar}{zap}", 5061),
            (b"foo{}{bar}", 8363),
            (b"foo{{bar}}zap", 4015),
            (b"06S", 0),
        ] {
            assert_eq!(key_slot(key), slot, "{}", String::from_utf8_lossy(key));
        }
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"{}"), b"{}");
        assert_eq!(hash_tag(b"no}tag{"), b"no}tag{");
        assert_eq!(key_slot(b""), 0);
    }

    #[test]
    fn every_slot_has_a_tag_of_three_characters_at_most() {
        let tags = slot_tags();
        for (slot, tag) in tags.iter().enumerate() {
            let key = [b'{', tag[0], tag[1], tag[2], b'}'];
            assert_eq!(usize::from(key_slot(&key)), slot, "{:?}", String::from_utf8_lossy(&key));
        }
    }

    #[test]
    fn a_request_routes_by_its_key_and_fills_its_tags() {
        let mut req = Vec::new();
        crate::resp::encode_command(&[b"SET", b"key:000000000042", b"xxx"], &mut req);
        assert_eq!(resp_arg(&req, 1).map(|r| &req[r]), Some(&b"key:000000000042"[..]));
        assert_eq!(request_slot(&mut req, &[1], &mut Vec::new()), key_slot(b"key:000000000042"));
        assert_eq!(request_slot(&mut req, &[], &mut Vec::new()), SLOTS);
        assert_eq!(resp_arg(&req, 3), None);
        // MSET with redis-benchmark's cluster keys: one slot for all, the one the key has
        // without its tag.
        let mut req = Vec::new();
        crate::resp::encode_command(
            &[b"MSET", b"key:{tag}:000000000007", b"v", b"key:{tag}:000000000099", b"v"],
            &mut req,
        );
        let slot = request_slot(&mut req, &[1, 3], &mut Vec::new());
        assert_eq!(slot, key_slot(b"key::000000000007"));
        let a = resp_arg(&req, 1).unwrap();
        let b = resp_arg(&req, 3).unwrap();
        assert_eq!(key_slot(&req[a]), slot);
        assert_eq!(key_slot(&req[b]), slot);
        assert!(!req.windows(5).any(|w| w == TAG_PLACEHOLDER));
    }

    #[test]
    fn redirects_are_read_from_error_replies() {
        assert_eq!(Redirect::of(b"MOVED 3999 127.0.0.1:6381"), Some(Redirect::Moved));
        assert_eq!(Redirect::of(b"ASK 3999 127.0.0.1:6381"), Some(Redirect::Ask));
        assert_eq!(
            Redirect::of(b"TRYAGAIN Multiple keys request during rehashing of slot"),
            Some(Redirect::TryAgain)
        );
        assert_eq!(Redirect::of(b"CLUSTERDOWN The cluster is down"), Some(Redirect::ClusterDown));
        assert_eq!(Redirect::of(b"ERR unknown command"), None);
        assert_eq!(Redirect::of(b"MOVEDX"), None);
        let node = |port| Node {
            endpoint: Endpoint::Tcp { host: "127.0.0.1".into(), port },
            primary: true,
            primary_index: None,
        };
        let c = Cluster::new(
            vec![node(7000), node(7001)],
            vec![0; usize::from(SLOTS)],
            true,
            Reads::Primary,
            vec![],
            1,
            &Handshake::default(),
        )
        .unwrap();
        assert_eq!(c.node_at(b"127.0.0.1:7001"), Some(1));
        assert_eq!(c.node_at(b":7001"), Some(1));
        assert_eq!(c.node_at(b"garbage"), None);
        // A node not seen before takes the room kept for one, as long as there is some.
        assert_eq!(c.endpoint(2), None);
        assert_eq!(c.node_at(b"10.0.0.1:7001"), Some(2));
        assert_eq!(c.node_at(b"10.0.0.1:7001"), Some(2));
        assert_eq!(c.endpoint(2), Some(Endpoint::Tcp { host: "10.0.0.1".into(), port: 7001 }));
        for port in 1..SPARE_NODES as u16 {
            assert_eq!(c.node_at(format!("10.0.0.2:{port}").as_bytes()), Some(2 + usize::from(port)));
        }
        assert_eq!(c.node_at(b"10.0.0.3:1"), None, "no room left");
        assert_eq!(c.len(), 2 + SPARE_NODES);
        let mut counts = vec![0; c.len()];
        counts[0] = u64::from(SLOTS);
        assert_eq!(c.slot_counts(), counts);
        c.set_owner(5, 1);
        assert_eq!(c.owner(5), Some(1));
    }

    proptest! {
        #[test]
        fn keys_sharing_a_tag_share_a_slot(tag in "[a-z0-9:]{1,12}", a in "[a-z]{0,8}", b in "[a-z]{0,8}") {
            let one = format!("{a}{{{tag}}}{b}");
            let other = format!("{{{tag}}}:{b}{a}");
            prop_assert_eq!(key_slot(one.as_bytes()), key_slot(other.as_bytes()));
            prop_assert_eq!(key_slot(one.as_bytes()), key_slot(tag.as_bytes()));
            prop_assert!(key_slot(one.as_bytes()) < SLOTS);
        }
    }
}

/// Clients over two nodes driven by hand: routing by slot, `MOVED` and `ASK` followed, the
/// budget exact, a redirected request timed from its first send.
#[cfg(test)]
mod routing_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::conn::{Connection, Event};
    use crate::plan::{Budget, ConnConfig, Stop, Workload};
    use crate::stats::Stats;
    use crate::template::{KeySpace, Template};

    fn node(port: u16) -> Node {
        Node {
            endpoint: Endpoint::Tcp { host: "127.0.0.1".into(), port },
            primary: true,
            primary_index: None,
        }
    }

    /// A test of `n` GETs of random keys by one client with window `pipeline`, node 0 owning
    /// slots below 8192 and node 1 the rest.
    fn plan(n: u64, pipeline: u32) -> Arc<Plan> {
        let owners = (0..SLOTS).map(|s| u16::from(s >= 8192)).collect();
        let routes = vec![Route { keys: vec![1], write: false }];
        let hs = Handshake::default();
        let cluster =
            Cluster::new(vec![node(7000), node(7001)], owners, true, Reads::Primary, routes, 1, &hs).unwrap();
        Arc::new(Plan {
            conn: ConnConfig {
                handshake: hs,
                pipeline,
                keepalive: true,
                idle: false,
                open_loop: None,
                request_timeout: None,
                reconnect: None,
            },
            workload: Workload {
                template: Template::command(&[b"GET", b"key:__rand_int__"]),
                keys: KeySpace::Random { n: 1000 },
                mix: None,
            },
            budget: Budget::new(n),
            stop: Stop::new(None, Duration::from_secs(2)),
            seed: 7,
            connections: 1,
            measure_from: Time::ZERO,
            series: false,
            cluster: Some(cluster),
        })
    }

    /// Runs the client until it finishes; `answer(node, key, nth_time_seen)` is each node's
    /// reply. Returns the stats and how many requests each node was sent.
    fn run(plan: &Arc<Plan>, mut answer: impl FnMut(usize, &[u8], u32) -> Vec<u8>) -> (Stats, [u64; 2]) {
        let mut stats = plan.new_stats(Time::ZERO, 3).unwrap();
        let mut conns = [Connection::new(Arc::clone(plan), 0), Connection::new(Arc::clone(plan), 1)];
        let mut now = Time::from_micros(1);
        for c in &mut conns {
            c.handle_connected(now, &mut stats);
        }
        let mut seen: std::collections::HashMap<Vec<u8>, u32> = Default::default();
        let mut sent = [0u64; 2];
        let mut finished = [false; 2];
        for _round in 0..10_000 {
            now += Duration::from_micros(10);
            let mut wrote = false;
            for i in 0..2 {
                let mut replies = Vec::new();
                while let Some(bytes) = conns[i].poll_transmit(now) {
                    let bytes = bytes.to_vec();
                    conns[i].advance_transmit(bytes.len(), now, &mut stats);
                    wrote = true;
                    let mut rest = &bytes[..];
                    while !rest.is_empty() {
                        let name = resp_arg(rest, 0).unwrap();
                        if &rest[name.clone()] == b"ASKING" {
                            replies.extend_from_slice(b"+OK\r\n");
                            rest = &rest[name.end + 2..];
                            continue;
                        }
                        let k = resp_arg(rest, 1).unwrap();
                        let key = rest[k.clone()].to_vec();
                        let n = seen.entry(key.clone()).or_default();
                        *n += 1;
                        sent[i] += 1;
                        replies.extend(answer(i, &key, *n));
                        rest = &rest[k.end + 2..];
                    }
                }
                if !replies.is_empty() {
                    conns[i].handle_input(&replies, now + Duration::from_micros(5), &mut stats);
                }
                while let Some(ev) = conns[i].poll_event() {
                    if ev == Event::Finished {
                        finished[i] = true;
                    }
                    assert!(!matches!(ev, Event::Failed(_)), "{ev:?}");
                }
            }
            if finished == [true, true] {
                return (stats, sent);
            }
            if !wrote {
                for (i, c) in conns.iter_mut().enumerate() {
                    c.handle_timeout(now);
                    while let Some(ev) = c.poll_event() {
                        finished[i] |= ev == Event::Finished;
                    }
                }
            }
        }
        panic!("the client did not finish: {finished:?}, {} requests", stats.requests);
    }

    fn owner(key: &[u8]) -> usize {
        usize::from(key_slot(key) >= 8192)
    }

    #[test]
    fn requests_go_to_the_node_of_their_slot() {
        let plan = plan(500, 4);
        let (stats, sent) = run(&plan, |node, key, _| {
            assert_eq!(node, owner(key), "{}", String::from_utf8_lossy(key));
            b"$1\r\nx\r\n".to_vec()
        });
        assert_eq!(stats.requests, 500);
        assert_eq!(sent[0] + sent[1], 500);
        assert_eq!(stats.nodes[0].requests + stats.nodes[1].requests, 500);
        assert_eq!((stats.nodes[0].requests, stats.nodes[1].requests), (sent[0], sent[1]));
        assert!(sent[0] > 150 && sent[1] > 150, "{sent:?}");
        assert_eq!(stats.redirects.total(), 0);
    }

    #[test]
    fn moved_and_ask_are_followed_and_counted_not_completed() {
        let plan = plan(300, 2);
        // Node 0 says every slot it owns has moved to node 1 (the first time it sees a key);
        // node 1 answers ASK back to node 0 for keys ending in 7, once.
        let (stats, sent) = run(&plan, |node, key, nth| {
            let slot = key_slot(key);
            if node == 0 && nth == 1 {
                return format!("-MOVED {slot} 127.0.0.1:7001\r\n").into_bytes();
            }
            if node == 1 && key.ends_with(b"7") && nth <= 2 && owner(key) == 1 {
                return format!("-ASK {slot} 127.0.0.1:7000\r\n").into_bytes();
            }
            b"+OK\r\n".to_vec()
        });
        assert_eq!(stats.requests, 300, "every request completed once");
        assert_eq!(stats.errors.total(), 0);
        assert!(stats.redirects.moved > 0 && stats.redirects.ask > 0, "{:?}", stats.redirects);
        assert_eq!(sent[0] + sent[1], 300 + stats.redirects.total());
        // MOVED changed the map: node 0 owns nothing now.
        let c = plan.cluster.as_ref().unwrap();
        assert!(c.slot_counts()[0] < 8192);
        assert_eq!(stats.nodes[0].redirects.moved, stats.redirects.moved);
    }

    #[test]
    fn a_request_redirected_forever_ends_as_an_error() {
        let plan = plan(20, 1);
        let (stats, _) = run(&plan, |node, key, _| {
            let other = if node == 0 { 7001 } else { 7000 };
            format!("-MOVED {} 127.0.0.1:{other}\r\n", key_slot(key)).into_bytes()
        });
        assert_eq!(stats.requests, 20);
        assert_eq!(stats.errors.total(), 20);
        assert_eq!(stats.redirects.moved, 20 * 16);
    }
}
