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

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crate::handshake::Handshake;
use crate::shared::Endpoint;
/// The redirect counts, at their old path (they are the stats': [`crate::stats::Redirects`]).
pub use crate::stats::Redirects;
use crate::stats::Stats;
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
/// command becomes, as redis-benchmark's `crc16_slottable.h` has it. Made once per test, with
/// its [`Cluster`].
fn slot_tags() -> Vec<[u8; 3]> {
    {
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
    }
}

/// How many nodes may appear in a cluster during a test (each client keeps room for a
/// connection to each, opened only when a redirect names the node).
pub const SPARE_NODES: usize = 4;

/// The placeholder a command can hold so that all its keys share a slot: redis-benchmark's
/// cluster key names (`key:{tag}:__rand_int__`).
pub const TAG_PLACEHOLDER: &[u8] = b"{tag}";

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

    /// Whether a request of command `name` (with `args`, the name first) may be sent twice with
    /// the effect of once, so that one in flight when its connection went down is sent again:
    /// the reads of [`Route::builtin`]'s table, `PING` and `ECHO`, and the writes that set a
    /// value whatever was there (`SET` without `GET`, `SETEX`, `MSET`, `HSET`, `HMSET`, `SADD`,
    /// `SREM`, `ZADD` without `INCR`, `HDEL`, `DEL`, `UNLINK`, `EXPIRE`, `PEXPIRE`, `LSET`).
    /// Not those whose second run changes more (`INCR`, `LPUSH`, `LPOP`, `APPEND`, `XADD`,
    /// `ZINCRBY`, `SETNX`'s reply, scripts, `PUBLISH`), nor commands it does not know.
    pub fn repeatable(name: &[u8], args: &[&[u8]]) -> bool {
        let name = name.to_ascii_uppercase();
        let has = |word: &[u8]| args.iter().skip(1).any(|a| a.eq_ignore_ascii_case(word));
        match name.as_slice() {
            b"SET" => !has(b"GET"),
            b"ZADD" => !has(b"INCR"),
            b"SETEX" | b"PSETEX" | b"MSET" | b"HSET" | b"HMSET" | b"SADD" | b"SREM" | b"HDEL" | b"DEL"
            | b"UNLINK" | b"EXPIRE" | b"PEXPIRE" | b"LSET" | b"PING" | b"ECHO" => true,
            _ => Route::builtin(&name, args.len()).is_some_and(|r| !r.write),
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

/// What a test over several nodes shares: the nodes found at its start, the slot map then, and
/// how requests are routed. Read-only: each client keeps its own view of what changed since
/// (its router), as a cluster client library does.
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
    /// The primary that owns each slot at the start (`u16::MAX`: none known).
    owners: Vec<u16>,
    /// The handshake of a replica's connection: the test's (without `--sentinel`'s `ROLE`
    /// check), then `READONLY` in a cluster.
    replica_handshake: Handshake,
    /// Room for nodes that appear during the test (a new primary given slots): each client
    /// keeps this many connections unopened until a redirect names a node.
    spare_room: usize,
    /// The shortest hash tag of each slot: what `{tag}` in a command becomes.
    tags: Vec<[u8; 3]>,
    /// `--sentinel --rfr … --reconnect`: a request waits for its node while that node's
    /// connection is down (it comes back where the Sentinel now says): a write for the primary,
    /// never sent to a replica; a read for a replica, never sent to the primary (one of the
    /// replicas when all are down). `false`: a request whose node is down goes to a primary that
    /// is up.
    pub waits: bool,
}

impl Cluster {
    /// A test over `nodes` whose slots are owned as `owners` says (an index into `nodes` per
    /// slot, `u16::MAX` for none; for a standalone primary and its replicas, every slot is the
    /// primary's). `handshake` is the test's.
    pub fn new(
        nodes: Vec<Node>,
        owners: Vec<u16>,
        redirects: bool,
        reads: Reads,
        routes: Vec<Route>,
        handshake: &Handshake,
    ) -> Result<Cluster, String> {
        if nodes.is_empty() || nodes.len() >= usize::from(u16::MAX) {
            return Err(format!("a cluster of {} nodes", nodes.len()));
        }
        if owners.len() != usize::from(SLOTS) {
            return Err(format!("a slot map of {} slots", owners.len()));
        }
        let mut replica_handshake = handshake.for_replica();
        if redirects {
            replica_handshake.push("READONLY", &[b"READONLY"]);
        }
        // Only a cluster's redirects can name a node found later.
        let spare_room = if redirects { SPARE_NODES } else { 0 };
        Ok(Cluster {
            nodes,
            spare_room,
            redirects,
            reads,
            routes,
            max_attempts: 16,
            retry_pause: Duration::from_millis(10),
            owners,
            replica_handshake,
            tags: slot_tags(),
            waits: false,
        })
    }

    /// How many nodes a client has a connection for: the nodes found at the start, and room
    /// for some that appear during the test.
    pub fn len(&self) -> usize {
        self.nodes.len() + self.spare_room
    }

    /// Whether there are no nodes (never, once made).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The primary that owned `slot` at the start, if any.
    pub fn owner(&self, slot: u16) -> Option<usize> {
        self.owners.get(usize::from(slot)).copied().filter(|&o| o != u16::MAX).map(usize::from)
    }

    /// The nodes as the test ended, seen from its stats: the nodes found at the start, then
    /// those that appeared during it ([`Stats::appeared`]); and how many slots each owned at
    /// the end (the start's map with the `MOVED`s the clients met, [`Stats::moved`]).
    pub fn at_end(&self, stats: &Stats) -> (Vec<Endpoint>, Vec<u64>) {
        let mut endpoints: Vec<Endpoint> = self.nodes.iter().map(|n| n.endpoint.clone()).collect();
        endpoints.extend(stats.appeared.iter().cloned());
        let mut owners: Vec<usize> = self.owners.iter().map(|&o| usize::from(o)).collect();
        for (&slot, (_, to)) in &stats.moved {
            if let (Some(o), Some(i)) =
                (owners.get_mut(usize::from(slot)), endpoints.iter().position(|e| e == to))
            {
                *o = i;
            }
        }
        let mut counts = vec![0; endpoints.len()];
        for o in owners {
            if let Some(c) = counts.get_mut(o) {
                *c += 1;
            }
        }
        (endpoints, counts)
    }

    /// How long a request waits before its retry number `attempts` (from 1):
    /// [`Cluster::retry_pause`], doubling with each attempt up to 64 times it (10 ms, 20 ms, …,
    /// 640 ms).
    fn pause(&self, attempts: u8) -> Duration {
        self.retry_pause * (1u32 << attempts.saturating_sub(1).min(6))
    }

    /// The handshake of node `node`'s connections.
    pub(crate) fn handshake(&self, node: usize, test: &Handshake) -> Handshake {
        match self.nodes.get(node) {
            Some(n) if !n.primary => self.replica_handshake.clone(),
            _ => test.clone(),
        }
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

    /// Its index in [`crate::disruption::REDIRECT_KINDS`].
    pub(crate) fn index(self) -> usize {
        match self {
            Redirect::Moved => 0,
            Redirect::Ask => 1,
            Redirect::TryAgain => 2,
            Redirect::ClusterDown => 3,
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

/// A request of a client that the router keeps from its draw to its reply: its bytes are kept
/// so that a redirect can send them again.
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
    pub(crate) slot: u16,
    pub(crate) write: bool,
    attempts: u8,
    /// `--retry-on`: how many times it was sent again after an error that means "wait".
    pub(crate) retries: u32,
    /// Send `ASKING` before it (an `ASK` redirect).
    pub(crate) asking: bool,
    /// Not before this time (a retry's pause).
    not_before: Time,
    /// `--verify`: its key and version.
    pub(crate) tag: crate::verify::Tag,
    /// A read of a key the mix's writer had written ([`crate::Mix::written`]).
    pub(crate) written: bool,
}

impl Request {
    /// A request drawn at `now`.
    pub(crate) fn new(
        bytes: Vec<u8>,
        intended: Time,
        part: u16,
        slot: u16,
        write: bool,
        now: Time,
    ) -> Request {
        Request {
            bytes,
            first_sent: Time::MAX,
            intended,
            queued: now,
            part,
            slot,
            write,
            attempts: 0,
            retries: 0,
            asking: false,
            not_before: Time::ZERO,
            tag: crate::verify::Tag::default(),
            written: false,
        }
    }
}

/// Where one client's requests go over the nodes: its view of the slot map (the start's, and
/// the `MOVED`s it met since), the nodes that appeared, each node's queue, and the requests in
/// flight that a redirect may send again. Owned by the client ([`crate::Client`]), so shared
/// with nobody.
#[derive(Debug)]
pub(crate) struct Router {
    client: u64,
    /// The requests of each node, routed and not yet taken by its connection.
    queues: Vec<VecDeque<Request>>,
    /// Requests on the wire, by the id their connection carries.
    sent: Vec<Option<Request>>,
    free: Vec<u32>,
    /// Whether each node's connection went down (not: is still connecting): its requests go
    /// elsewhere meanwhile.
    pub(crate) down: Vec<bool>,
    /// Buffers of finished requests, to be used again.
    pool: Vec<Vec<u8>>,
    /// Round robin over replicas.
    turn: usize,
    /// Nodes that appeared during the test, in the order redirects named them: node
    /// `nodes.len() + k` is `appeared[k]`.
    pub(crate) appeared: Vec<Endpoint>,
    /// Slots whose owner changed since the start, as `MOVED` said.
    moved: HashMap<u16, u16>,
    /// A key without its `{tag}`, while its slot is computed.
    scratch: Vec<u8>,
}

impl Router {
    /// The router of client `client` over `nodes` connections.
    pub(crate) fn new(client: u64, nodes: usize) -> Router {
        Router {
            client,
            queues: (0..nodes).map(|_| VecDeque::new()).collect(),
            sent: Vec::new(),
            free: Vec::new(),
            down: vec![false; nodes],
            pool: Vec::new(),
            turn: 0,
            appeared: Vec::new(),
            moved: HashMap::new(),
            scratch: Vec::new(),
        }
    }

    /// Where node `i` is: `None` for room kept for a node that has not appeared (yet).
    pub(crate) fn endpoint(&self, cluster: Option<&Cluster>, i: usize) -> Option<Endpoint> {
        let c = cluster?;
        match c.nodes.get(i) {
            Some(n) => Some(n.endpoint.clone()),
            None => self.appeared.get(i - c.nodes.len()).cloned(),
        }
    }

    /// The primary that owns `slot` as this client knows it.
    fn owner(&self, cluster: &Cluster, slot: u16) -> Option<usize> {
        match self.moved.get(&slot) {
            Some(&n) => Some(usize::from(n)),
            None => cluster.owner(slot),
        }
    }

    /// Whether node `i` is a primary (a node that appeared during the test is one: a redirect
    /// named it as a slot's owner).
    fn is_primary(cluster: &Cluster, i: usize) -> bool {
        cluster.nodes.get(i).is_none_or(|n| n.primary)
    }

    /// Whether node `i` is known (found at the start, or appeared).
    fn is_known(&self, cluster: &Cluster, i: usize) -> bool {
        i < cluster.nodes.len() + self.appeared.len()
    }

    /// A buffer for a new request's bytes.
    pub(crate) fn buffer(&mut self) -> Vec<u8> {
        self.pool.pop().unwrap_or_default()
    }

    /// The slot of a request drawn into `bytes` by the command of the mix `part`, its `{tag}`s
    /// filled; and whether it writes.
    pub(crate) fn slot_of(&mut self, cluster: &Cluster, part: usize, bytes: &mut [u8]) -> (u16, bool) {
        let route = cluster.routes.get(part).or(cluster.routes.first());
        match route {
            Some(r) => (request_slot(bytes, &r.keys, &mut self.scratch, &cluster.tags), r.write),
            None => (SLOTS, true),
        }
    }

    /// The node a request for `slot` goes to: the slot's primary for a write, a replica of it
    /// for a read when [`Reads`] says so; a node that is up when that one is not (the cluster
    /// redirects the request where it belongs). `lead` is the client's first node that is up.
    pub(crate) fn node_for(
        &mut self,
        cluster: &Cluster,
        slot: u16,
        write: bool,
        lead: Option<usize>,
    ) -> usize {
        let n = self.queues.len();
        let home = self.home(cluster);
        let primary = if slot == SLOTS { home } else { self.owner(cluster, slot).unwrap_or(home) };
        let mut to = primary;
        if !write && cluster.reads != Reads::Primary {
            let down = &self.down;
            let replicas = cluster.nodes.iter().enumerate().filter(|(i, node)| {
                node.primary_index == Some(primary) && !down.get(*i).copied().unwrap_or(true)
            });
            let count = replicas.clone().count() + usize::from(cluster.reads == Reads::Both);
            if count > 0 {
                self.turn = self.turn.wrapping_add(1);
                let pick = self.turn % count;
                to = replicas.map(|(i, _)| i).nth(pick).unwrap_or(primary);
            } else if cluster.waits && cluster.reads == Reads::Replicas {
                // Every replica is down, coming back where the Sentinel says: the read waits for
                // one of them, not sent to the primary.
                let all = cluster.nodes.iter().enumerate().filter(|(_, n)| n.primary_index == Some(primary));
                let count = all.clone().count();
                if count > 0 {
                    self.turn = self.turn.wrapping_add(1);
                    to = all.map(|(i, _)| i).nth(self.turn % count).unwrap_or(primary);
                }
            }
        }
        if cluster.waits || !self.down.get(to).copied().unwrap_or(false) {
            // Up, or still connecting: its queue waits for it.
            return to;
        }
        // Down: any primary that is up, which redirects it (or answers, after a failover).
        (1..n)
            .map(|k| (to + k) % n)
            .find(|&i| Self::is_primary(cluster, i) && self.is_known(cluster, i) && !self.down[i])
            .or(lead)
            .unwrap_or(to)
    }

    /// The client's own primary, for commands without keys: client `c` on the `c % primaries`th.
    fn home(&self, cluster: &Cluster) -> usize {
        let primaries = cluster.nodes.iter().filter(|n| n.primary).count().max(1);
        let k = (self.client as usize) % primaries;
        cluster.nodes.iter().enumerate().filter(|(_, n)| n.primary).nth(k).map_or(0, |(i, _)| i)
    }

    /// Queues `r` for node `node`; `false` (the request dropped) when there is no such node.
    pub(crate) fn queue(&mut self, node: usize, r: Request) -> bool {
        match self.queues.get_mut(node) {
            Some(q) => {
                q.push_back(r);
                true
            }
            None => {
                self.recycle(r);
                false
            }
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

    /// When node `node`'s first queued request may go (a retry's pause).
    pub(crate) fn queued_at(&self, node: usize) -> Option<Time> {
        self.queues.get(node)?.front().map(|r| r.not_before)
    }

    /// Keeps a request on the wire until its reply: the id its connection carries.
    pub(crate) fn hold(&mut self, r: Request) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.sent[id as usize] = Some(r);
                id
            }
            None => {
                self.sent.push(Some(r));
                (self.sent.len() - 1) as u32
            }
        }
    }

    /// The bytes of the request on the wire with id `id`.
    pub(crate) fn bytes(&self, id: u32) -> &[u8] {
        self.sent.get(id as usize).and_then(Option::as_ref).map_or(&[], |r| &r.bytes)
    }

    /// The request on the wire with id `id`, taken back.
    pub(crate) fn release(&mut self, id: u32) -> Option<Request> {
        let r = self.sent.get_mut(id as usize)?.take();
        if r.is_some() {
            self.free.push(id);
        }
        r
    }

    /// Every request queued, taken out (a node gone with no one to send them, or the stop).
    pub(crate) fn drain_queues(&mut self) -> Vec<Request> {
        self.queues.iter_mut().flat_map(|q| q.drain(..)).collect()
    }

    /// Queues `r` for node `node` ahead of what waits there (a request in flight when its
    /// connection went down, sent again first); dropped when there is no such node.
    pub(crate) fn requeue(&mut self, node: usize, r: Request) {
        match self.queues.get_mut(node) {
            Some(q) => q.push_front(r),
            None => self.recycle(r),
        }
    }

    /// Node `node`'s queue, taken out (the node went down: its requests go elsewhere).
    pub(crate) fn drain_queue(&mut self, node: usize) -> Vec<Request> {
        self.queues.get_mut(node).map(|q| q.drain(..).collect()).unwrap_or_default()
    }

    /// A finished request's buffer, for the next one.
    pub(crate) fn recycle(&mut self, mut r: Request) {
        r.bytes.clear();
        if self.pool.len() < 64 {
            self.pool.push(r.bytes);
        }
    }

    /// `--retry-on`: request `r`, answered on node `node` by an error that means "wait", goes
    /// again on that node at `at(retry)` (`retry` its number, from 1); `Err` gives it back when
    /// it has been retried `limit` times already (it gives up: the error is its answer).
    pub(crate) fn retry(
        &mut self,
        mut r: Request,
        node: usize,
        limit: u32,
        at: impl FnOnce(u32) -> Time,
    ) -> Result<(), Request> {
        if r.retries >= limit {
            return Err(r);
        }
        r.retries += 1;
        r.not_before = at(r.retries);
        self.queue(node, r);
        Ok(())
    }

    /// The node at `host:port`, as a redirect names it; a node not seen before takes the next
    /// room kept for one, if any is left.
    fn node_at(&mut self, cluster: &Cluster, addr: &[u8]) -> Option<usize> {
        let addr = std::str::from_utf8(addr).ok()?;
        let (host, port) = addr.rsplit_once(':')?;
        let port: u16 = port.parse().ok()?;
        let is = |e: &Endpoint| match e {
            // An empty or `?` host means the one we already know (Redis's preferred endpoint
            // "unknown"): match the port alone then.
            Endpoint::Tcp { host: h, port: p } => *p == port && (host.is_empty() || host == "?" || h == host),
            Endpoint::Unix(_) => false,
        };
        if let Some(i) = cluster.nodes.iter().position(|n| is(&n.endpoint)) {
            return Some(i);
        }
        if let Some(k) = self.appeared.iter().position(is) {
            return Some(cluster.nodes.len() + k);
        }
        if self.appeared.len() >= cluster.spare_room || host.is_empty() || host == "?" {
            return None;
        }
        self.appeared.push(Endpoint::Tcp { host: host.to_string(), port });
        Some(cluster.nodes.len() + self.appeared.len() - 1)
    }

    /// A reply redirected request `r`: routes it again (`Ok` with the node it now waits for,
    /// and, for a `MOVED`, the slot and the node that owns it now). `Err` gives it back when it
    /// cannot go on (out of attempts, a node not known and no room for one, a run without
    /// redirects): it completes as the error it got.
    pub(crate) fn redirect(
        &mut self,
        cluster: &Cluster,
        mut r: Request,
        kind: Redirect,
        message: &[u8],
        now: Time,
        lead: Option<usize>,
    ) -> Result<(usize, Option<(u16, usize)>), Request> {
        r.attempts = r.attempts.saturating_add(1);
        if !cluster.redirects || r.attempts >= cluster.max_attempts {
            return Err(r);
        }
        r.asking = false;
        let mut moved = None;
        let to = match kind {
            Redirect::Moved | Redirect::Ask => {
                // "MOVED 3999 127.0.0.1:6381"
                let mut words = message.split(|&b| b == b' ').skip(1);
                let slot = words.next().and_then(|s| std::str::from_utf8(s).ok()?.parse::<u16>().ok());
                let Some(node) = words.next().and_then(|a| self.node_at(cluster, a)) else {
                    return Err(r);
                };
                if kind == Redirect::Moved {
                    if let Some(slot) = slot.filter(|&s| s < SLOTS) {
                        self.moved.insert(slot, node as u16);
                        moved = Some((slot, node));
                    }
                } else {
                    r.asking = true;
                }
                node
            }
            Redirect::TryAgain | Redirect::ClusterDown => {
                r.not_before = now + cluster.pause(r.attempts);
                self.node_for(cluster, r.slot, r.write, lead)
            }
        };
        let to = if self.down.get(to).copied().unwrap_or(false) {
            // Sent to a node that is down (a primary that failed, before its replica took
            // over): wait, then ask a node that is up, which knows better by then.
            r.not_before = now + cluster.pause(r.attempts);
            self.node_for(cluster, r.slot, r.write, lead)
        } else {
            to
        };
        self.queue(to, r);
        Ok((to, moved))
    }
}

/// The slot of a request's key (`SLOTS` when it has none), from its encoded bytes; a `{tag}` in
/// the request is filled first with the tag of the slot its first key has without it, so that
/// every key of the request shares that slot and the slots follow the keys drawn.
/// `scratch` holds the key without its `{tag}` (a buffer kept by the caller, so that nothing is
/// allocated per request).
fn request_slot(bytes: &mut [u8], keys: &[usize], scratch: &mut Vec<u8>, tags: &[[u8; 3]]) -> u16 {
    let Some(&first) = keys.first() else { return SLOTS };
    let Some(range) = resp_arg(bytes, first) else { return SLOTS };
    let key = &bytes[range];
    let Some(at) = find(key, TAG_PLACEHOLDER) else { return key_slot(key) };
    // The key without its `{tag}`: what decides the slot.
    scratch.clear();
    scratch.extend_from_slice(&key[..at]);
    scratch.extend_from_slice(&key[at + TAG_PLACEHOLDER.len()..]);
    let slot = key_slot(scratch);
    let tag = tags[usize::from(slot)];
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
        assert_eq!(
            request_slot(&mut req, &[1], &mut Vec::new(), &slot_tags()),
            key_slot(b"key:000000000042")
        );
        assert_eq!(request_slot(&mut req, &[], &mut Vec::new(), &slot_tags()), SLOTS);
        assert_eq!(resp_arg(&req, 3), None);
        // MSET with redis-benchmark's cluster keys: one slot for all, the one the key has
        // without its tag.
        let mut req = Vec::new();
        crate::resp::encode_command(
            &[b"MSET", b"key:{tag}:000000000007", b"v", b"key:{tag}:000000000099", b"v"],
            &mut req,
        );
        let slot = request_slot(&mut req, &[1, 3], &mut Vec::new(), &slot_tags());
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
            &Handshake::default(),
        )
        .unwrap();
        let mut r = Router::new(0, c.len());
        assert_eq!(r.node_at(&c, b"127.0.0.1:7001"), Some(1));
        assert_eq!(r.node_at(&c, b":7001"), Some(1));
        assert_eq!(r.node_at(&c, b"garbage"), None);
        // A node not seen before takes the room kept for one, as long as there is some.
        assert_eq!(r.endpoint(Some(&c), 2), None);
        assert_eq!(r.node_at(&c, b"10.0.0.1:7001"), Some(2));
        assert_eq!(r.node_at(&c, b"10.0.0.1:7001"), Some(2));
        assert_eq!(r.endpoint(Some(&c), 2), Some(Endpoint::Tcp { host: "10.0.0.1".into(), port: 7001 }));
        for port in 1..SPARE_NODES as u16 {
            assert_eq!(r.node_at(&c, format!("10.0.0.2:{port}").as_bytes()), Some(2 + usize::from(port)));
        }
        assert_eq!(r.node_at(&c, b"10.0.0.3:1"), None, "no room left");
        assert_eq!(c.len(), 2 + SPARE_NODES);
        assert_eq!(c.owner(5), Some(0));
        // The slot counts at the end: the start's map and the MOVEDs the clients met.
        let mut stats = Stats::new(Time::ZERO, 3, false).unwrap();
        stats.moved.insert(5, (Time::ZERO, node(7001).endpoint));
        let (endpoints, counts) = c.at_end(&stats);
        assert_eq!(endpoints.len(), 2);
        assert_eq!(counts, vec![u64::from(SLOTS) - 1, 1]);
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
    use crate::client::Client;
    use crate::conn::Event;
    use crate::plan::{Budget, ConnConfig, Plan, Stop, Workload};
    use crate::stats::Stats;
    use crate::template::{KeySpace, Template};

    /// Which commands a request in flight at a move is sent again for (`--sentinel`).
    #[test]
    fn commands_safe_to_repeat() {
        let ok = |args: &[&[u8]]| Route::repeatable(args[0], args);
        for yes in [
            &[&b"GET"[..], b"k"][..],
            &[b"set", b"k", b"v", b"EX", b"10"],
            &[b"MGET", b"a", b"b"],
            &[b"PING"],
        ] {
            assert!(ok(yes), "{yes:?}");
        }
        for no in [
            &[&b"INCR"[..], b"k"][..],
            &[b"SET", b"k", b"v", b"get"],
            &[b"ZADD", b"z", b"INCR", b"1", b"m"],
            &[b"LPUSH", b"l", b"v"],
            &[b"EVAL", b"return 1", b"0"],
            &[b"FOO"],
        ] {
            assert!(!ok(no), "{no:?}");
        }
    }

    fn node(port: u16) -> Node {
        Node {
            endpoint: Endpoint::Tcp { host: "127.0.0.1".into(), port },
            primary: true,
            primary_index: None,
        }
    }

    /// `Cluster::waits` (`--sentinel --rfr … --reconnect`): a request whose node is down waits
    /// for it: a read for a replica (never the primary), a write for the primary (never the
    /// replica that leads); without it, each goes to a node that is up.
    #[test]
    fn over_a_sentinel_requests_wait_for_their_node() {
        let replica = Node { primary: false, primary_index: Some(0), ..node(7001) };
        let owners = vec![0; usize::from(SLOTS)];
        let routes = vec![Route { keys: vec![1], write: false }];
        let hs = Handshake::default();
        let mut c =
            Cluster::new(vec![node(7000), replica], owners, false, Reads::Replicas, routes, &hs).unwrap();
        for waits in [false, true] {
            c.waits = waits;
            let mut r = Router::new(0, 2);
            assert_eq!(r.node_for(&c, 5, false, Some(0)), 1, "a read at the replica");
            r.down[1] = true;
            assert_eq!(r.node_for(&c, 5, false, Some(0)), usize::from(waits), "the replica down: a read");
            r.down = vec![true, false];
            assert_eq!(r.node_for(&c, 5, true, Some(1)), usize::from(!waits), "the primary down: a write");
        }
    }

    /// A test of `n` GETs of random keys by one client with window `pipeline`, node 0 owning
    /// slots below 8192 and node 1 the rest.
    fn plan(n: u64, pipeline: u32) -> Arc<Plan> {
        plan_in(n, pipeline, crate::plan::PipelineMode::Window)
    }

    /// [`plan`] with the pipeline kept going in `mode`.
    fn plan_in(n: u64, pipeline: u32, mode: crate::plan::PipelineMode) -> Arc<Plan> {
        let owners = (0..SLOTS).map(|s| u16::from(s >= 8192)).collect();
        let routes = vec![Route { keys: vec![1], write: false }];
        let hs = Handshake::default();
        let cluster =
            Cluster::new(vec![node(7000), node(7001)], owners, true, Reads::Primary, routes, &hs).unwrap();
        Arc::new(Plan {
            seed: 7,
            cluster: Some(cluster),
            ..Plan::new(
                ConnConfig { handshake: hs, pipeline, pipeline_mode: mode, ..ConnConfig::default() },
                Workload {
                    template: Template::command(&[b"GET", b"key:__rand_int__"]),
                    keys: KeySpace::Random { n: 1000 },
                    mix: None,
                },
                Budget::new(n),
                Stop::new(None, Duration::from_secs(2)),
            )
        })
    }

    /// Runs the client until it finishes; `answer(node, key, nth_time_seen)` is each node's
    /// reply. Returns the stats and how many requests each node was sent.
    fn run(plan: &Arc<Plan>, answer: impl FnMut(usize, &[u8], u32) -> Vec<u8>) -> (Stats, [u64; 2]) {
        let (stats, sent, _) = run_rounds(plan, answer);
        (stats, sent)
    }

    /// [`run`], and how many requests each round wrote to both nodes together (rounds that
    /// wrote none left out).
    fn run_rounds(
        plan: &Arc<Plan>,
        mut answer: impl FnMut(usize, &[u8], u32) -> Vec<u8>,
    ) -> (Stats, [u64; 2], Vec<u64>) {
        let mut stats = plan.new_stats(Time::ZERO, 3).unwrap();
        let mut client = Client::new(Arc::clone(plan), 0);
        let mut now = Time::from_micros(1);
        for i in 0..2 {
            client.handle_connected(i, now, &mut stats);
        }
        let mut seen: std::collections::HashMap<Vec<u8>, u32> = Default::default();
        let mut sent = [0u64; 2];
        let mut finished = [false; 2];
        let mut rounds = Vec::new();
        for _round in 0..10_000 {
            let before = sent[0] + sent[1];
            now += Duration::from_micros(10);
            let mut wrote = false;
            for i in 0..2 {
                let mut replies = Vec::new();
                while let Some(bytes) = client.poll_transmit(i, now) {
                    let bytes = bytes.to_vec();
                    client.advance_transmit(i, bytes.len(), now, &mut stats);
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
                    client.handle_input(i, &replies, now + Duration::from_micros(5), &mut stats);
                }
                while let Some(ev) = client.poll_event(i) {
                    if ev == Event::Finished {
                        finished[i] = true;
                    }
                    assert!(!matches!(ev, Event::Failed { .. }), "{ev:?}");
                }
            }
            while client.poll_wake().is_some() {}
            if sent[0] + sent[1] > before {
                rounds.push(sent[0] + sent[1] - before);
            }
            if finished == [true, true] {
                return (stats, sent, rounds);
            }
            if !wrote {
                for (i, f) in finished.iter_mut().enumerate() {
                    client.handle_timeout(i, now);
                    while let Some(ev) = client.poll_event(i) {
                        *f |= ev == Event::Finished;
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
    fn a_batch_spans_the_nodes_and_the_next_waits_for_all_of_it() {
        use crate::plan::PipelineMode;
        let reply = |_: usize, _: &[u8], _: u32| b"$1\r\nx\r\n".to_vec();
        // Node 0 answers within its round, node 1 within the same round after it: a batch of
        // 16 split over both is answered in one round, and the next is drawn only then.
        let (stats, sent, rounds) = run_rounds(&plan_in(100, 16, PipelineMode::Batch), reply);
        assert_eq!(stats.requests, 100);
        assert_eq!(sent[0] + sent[1], 100);
        assert_eq!(rounds, [16, 16, 16, 16, 16, 16, 4], "-n 100 -P 16: six batches and a last of 4");
        // The window refills from node 0's replies as node 1's part is still out, so a round
        // writes more than 16 (and the run takes fewer rounds).
        let (stats, _, window) = run_rounds(&plan_in(100, 16, PipelineMode::Window), reply);
        assert_eq!(stats.requests, 100);
        assert!(window.len() < rounds.len() && window.iter().any(|&n| n > 16), "{window:?}");
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
        // MOVED changed the client's map: node 0 owns fewer slots now.
        let c = plan.cluster.as_ref().unwrap();
        assert!(c.at_end(&stats).1[0] < 8192);
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
