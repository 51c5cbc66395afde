//! Topology discovery before a run: the nodes of a cluster (`--cluster`: `CLUSTER SHARDS`, or
//! `CLUSTER SLOTS` before Redis 7) or the replicas of a standalone primary (`--replicas auto`:
//! `ROLE`, or `INFO replication` where `ROLE` is refused), over the blocking startup
//! connection, so that TLS and AUTH are the run's own. Every problem found here ends the run
//! before it starts, with exit status 1.
//!
//! The parsers take whole [`Value`]s and are tested on hand-built replies, RESP2 and RESP3.

use respbench_core::cluster::SLOTS;
use respbench_core::resp::Value;
use respbench_core::Endpoint;

use crate::config::{Config, Replicas, Rfr};
use crate::error::StartupError;
use crate::server::{text, Conn, InfoError, Server};

/// Why a reply is not a topology (`CLUSTER SHARDS`, `CLUSTER SLOTS`, `ROLE`, `INFO
/// replication`), or why none could be read.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopologyError {
    /// A part of the reply is missing or not of its type: which (`a shard without slots`).
    Malformed(&'static str),
    /// A slot number out of range, as read.
    Slot(Value),
    /// A slot range that ends before it begins.
    SlotRange(u16, u16),
    /// A replica of `INFO replication` (`slave0`) without a field (`ip`, `port`).
    ReplicaField {
        /// The replica's line (`slave0`).
        replica: String,
        /// The field missing.
        field: &'static str,
    },
    /// `ROLE` names a role that is neither a primary's nor a replica's (`sentinel`).
    Role(String),
    /// `INFO replication` does so (`role:sentinel`).
    InfoRole(String),
    /// `ROLE` was refused (the server's words), and `INFO replication` could not be read.
    Refused {
        /// The server's reply to `ROLE`.
        role: String,
        /// Why `INFO replication` could not be read.
        info: InfoError,
    },
}

impl std::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TopologyError::Malformed(what) => f.write_str(what),
            TopologyError::Slot(v) => write!(f, "slot {v:?}"),
            TopologyError::SlotRange(a, b) => write!(f, "the slot range {a}-{b}"),
            TopologyError::ReplicaField { replica, field } => write!(f, "{replica} without {field}="),
            TopologyError::Role(role) => write!(f, "ROLE says {role}, not a primary"),
            TopologyError::InfoRole(role) => write!(f, "INFO replication says role:{role}"),
            TopologyError::Refused { role, info } => write!(f, "ROLE refused ({role}), {info}"),
        }
    }
}

impl std::error::Error for TopologyError {}

impl From<&'static str> for TopologyError {
    fn from(what: &'static str) -> TopologyError {
        TopologyError::Malformed(what)
    }
}

/// One server of the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Where to connect: always [`Endpoint::Tcp`], except a standalone primary given with `-s`.
    pub endpoint: Endpoint,
    /// The cluster node id; empty for a standalone server.
    pub id: String,
    /// Whether it is a primary (else a replica).
    pub primary: bool,
    /// The slots it serves, inclusive ranges in order; a replica carries its primary's.
    pub slots: Vec<(u16, u16)>,
    /// For a replica, the index of its primary in [`Topology::nodes`].
    pub primary_index: Option<usize>,
    /// `CLUSTER SHARDS`' health (`online`, `loading`, `fail`), or a standalone replica's state
    /// from `INFO replication` (`online`, `wait_bgsave`, ...); `online` when nothing says.
    pub health: String,
}

impl Node {
    /// Whether requests may go to it: a failed node never serves.
    pub fn usable(&self) -> bool {
        self.health != "fail"
    }

    /// How many slots it serves.
    pub fn slot_count(&self) -> usize {
        self.slots.iter().map(|&(a, b)| usize::from(b - a) + 1).sum()
    }
}

/// The servers a run can send requests to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Primaries first (a cluster's by their first slot), then the replicas.
    pub nodes: Vec<Node>,
    /// The command the topology was read with: `CLUSTER SHARDS`, `CLUSTER SLOTS`, `ROLE`,
    /// `INFO replication`, or `--replica` for replicas as given.
    pub source: &'static str,
}

/// The topology the options ask for, checked: every node that may serve was reached and
/// authenticated. `None` without `--cluster`, `--replicas` and `--replica`.
pub fn discover(cfg: &Config, server: &Server) -> Result<Option<Topology>, StartupError> {
    let topo = if cfg.cluster {
        discover_cluster(server)?
    } else if cfg.replicas != Replicas::None {
        discover_replicas(cfg, server)?
    } else {
        return Ok(None);
    };
    check_reachable(server, &topo)?;
    Ok(Some(topo))
}

/// Reads the cluster's nodes from the `-h/-p` node: `CLUSTER SHARDS`, or `CLUSTER SLOTS` when
/// the server does not know it (Redis 6). Errors: cluster support disabled, a reply that is
/// not a topology, slots without a primary that is up.
pub fn discover_cluster(server: &Server) -> Result<Topology, StartupError> {
    let seed = &server.endpoint;
    let mut c = Conn::authenticated(server)?;
    let host = match seed {
        Endpoint::Tcp { host, .. } => host.as_str(),
        Endpoint::Unix(_) => "127.0.0.1",
    };
    let tls = server.tls.is_some();
    let refused = |e: &[u8], shards: &str| {
        let e = text(e);
        StartupError::new(if e.contains("cluster support disabled") {
            format!("--cluster: {seed} has cluster support disabled (cluster-enabled no): drop --cluster")
        } else if e.starts_with("NOAUTH") {
            format!("{e} (use -a to give a password)")
        } else {
            format!("--cluster: {seed} refused CLUSTER SHARDS ({shards}) and CLUSTER SLOTS ({e})")
        })
    };
    let topo = match c.command(&[b"CLUSTER", b"SHARDS"])? {
        Value::Error(e) | Value::BulkError(e)
            if e.starts_with(b"NOAUTH") || text(&e).contains("support disabled") =>
        {
            return Err(refused(&e, ""))
        }
        // Redis 6 and other servers without SHARDS ("ERR Unknown subcommand"), or with it
        // renamed: SLOTS.
        Value::Error(shards) | Value::BulkError(shards) => match c.command(&[b"CLUSTER", b"SLOTS"])? {
            Value::Error(e) | Value::BulkError(e) => return Err(refused(&e, &text(&shards))),
            v => parse_slots(&v, host),
        },
        v => parse_shards(&v, host, tls),
    }
    .map_err(|why| {
        StartupError::new(format!("--cluster: {seed}'s reply is not a cluster topology: {why}"))
    })?;
    let unowned = slot_owners(&topo).iter().filter(|&&o| o == u16::MAX).count();
    if unowned > 0 {
        return Err(StartupError::new(format!(
            "--cluster: {unowned} of {SLOTS} slots have no primary that is up in the cluster of {seed} \
             (the cluster refuses requests until every slot is served: see CLUSTER INFO, \
             redis-cli --cluster check)"
        )));
    }
    Ok(topo)
}

/// Reads the replicas of the standalone `-h/-p` primary: `ROLE`, or `INFO replication` when
/// `ROLE` is refused (renamed on managed services). With `--replica`, those addresses replace
/// the reported ones (which NAT or containers can make unreachable), and the primary's role is
/// checked when the server tells it. `nodes[0]` is the primary.
pub fn discover_replicas(cfg: &Config, server: &Server) -> Result<Topology, StartupError> {
    let at = &server.endpoint;
    let mut c = Conn::authenticated(server)?;
    let role = match c.command(&[b"ROLE"])? {
        Value::Error(e) | Value::BulkError(e) if e.starts_with(b"NOAUTH") => {
            return Err(StartupError::new(format!("{} (use -a to give a password)", text(&e))))
        }
        Value::Error(role_err) | Value::BulkError(role_err) => {
            match crate::server::info(&mut c, b"replication") {
                Ok(body) => parse_info_replication(&body).map(|r| (r, "INFO replication")),
                Err(info) => Err(TopologyError::Refused { role: text(&role_err), info }),
            }
        }
        v => parse_role(&v).map(|r| (r, "ROLE")),
    };
    let primary = Node {
        endpoint: at.clone(),
        id: String::new(),
        primary: true,
        slots: Vec::new(),
        primary_index: None,
        health: "online".to_string(),
    };
    let replica = |endpoint: Endpoint, health: String| Node {
        endpoint,
        id: String::new(),
        primary: false,
        slots: Vec::new(),
        primary_index: Some(0),
        health,
    };
    let (reported, source) = match role {
        Ok((Role::Replica { of }, _)) => {
            return Err(StartupError::new(format!("-h/-p must be the primary: {at} is a replica of {of}")))
        }
        Ok((Role::Primary(r), source)) => (Some(r), source),
        Err(why) => match &cfg.replicas {
            // A proxy that answers neither may still front the named replicas.
            Replicas::Listed(_) => (None, "--replica"),
            _ => {
                return Err(StartupError::new(format!(
                    "--replicas auto: cannot read the replicas of {at}: {why}; name them with --replica HOST:PORT"
                )))
            }
        },
    };
    let mut nodes = vec![primary];
    let source = match &cfg.replicas {
        Replicas::Listed(given) => {
            nodes.extend(given.iter().map(|e| replica(e.clone(), "online".to_string())));
            "--replica"
        }
        _ => {
            nodes.extend(reported.unwrap_or_default().into_iter().map(|(e, health)| replica(e, health)));
            source
        }
    };
    if nodes.len() == 1 {
        // --rfr no with replicas is refused by the options.
        let rfr = if cfg.rfr == Rfr::No { Rfr::Yes } else { cfg.rfr };
        return Err(StartupError::new(format!("--rfr {}: {at} has no replicas", rfr.name())));
    }
    Ok(Topology { nodes, source })
}

/// Connects to and authenticates with every node that may serve (not the failed ones); the
/// first that fails is named in the error.
pub fn check_reachable(server: &Server, topo: &Topology) -> Result<(), StartupError> {
    for n in topo.nodes.iter().filter(|n| n.usable()) {
        let role = if n.primary { "primary" } else { "replica" };
        if let Err(e) = Conn::authenticated(&server.node(&n.endpoint)) {
            return Err(StartupError::new(format!(
                "{role} {} (from {}) cannot be reached: {}",
                n.endpoint, topo.source, e.message
            )));
        }
    }
    Ok(())
}

/// For each of the 16384 slots, the index in [`Topology::nodes`] of the primary serving it;
/// `u16::MAX` when none does (unassigned, or its primary failed).
pub fn slot_owners(topo: &Topology) -> Vec<u16> {
    let mut owners = vec![u16::MAX; usize::from(SLOTS)];
    for (i, n) in topo.nodes.iter().enumerate() {
        if n.primary && n.usable() {
            for &(a, b) in &n.slots {
                for s in a..=b.min(SLOTS - 1) {
                    owners[usize::from(s)] = i as u16;
                }
            }
        }
    }
    owners
}

/// The topology in a few lines, after redis-benchmark's cluster header ("Cluster has 3 master
/// nodes:"), with each node's role, slot count and health when not online.
pub fn describe(topo: &Topology) -> String {
    let primaries = topo.nodes.iter().filter(|n| n.primary).count();
    let replicas = topo.nodes.len() - primaries;
    let clustered = topo.nodes.iter().any(|n| !n.id.is_empty());
    let plural = |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let mut out = if clustered {
        format!(
            "Cluster has {primaries} {} and {replicas} {} ({}):\n\n",
            plural(primaries, "primary", "primaries"),
            plural(replicas, "replica", "replicas"),
            topo.source
        )
    } else {
        format!("Primary with {replicas} {} ({}):\n\n", plural(replicas, "replica", "replicas"), topo.source)
    };
    let (mut p, mut r) = (0, 0);
    for n in &topo.nodes {
        let (name, k) = if n.primary {
            p += 1;
            ("Primary", p - 1)
        } else {
            r += 1;
            ("Replica", r - 1)
        };
        out.push_str(&format!("{name} {k}: "));
        if !n.id.is_empty() {
            out.push_str(&format!("{} ", n.id));
        }
        out.push_str(&n.endpoint.to_string());
        if clustered {
            let count = n.slot_count();
            out.push_str(&format!(", {count} {}", plural(count, "slot", "slots")));
        }
        if let Some(of) = n.primary_index.and_then(|i| topo.nodes.get(i)) {
            out.push_str(&format!(", replica of {}", of.endpoint));
        }
        if n.health != "online" {
            out.push_str(&format!(" ({})", n.health));
        }
        out.push('\n');
    }
    out
}

/// The replicas a standalone server reports, with their state, or that it is a replica.
#[derive(Debug, PartialEq, Eq)]
enum Role {
    /// A primary, with its replicas and their states.
    Primary(Vec<(Endpoint, String)>),
    /// A replica of this primary (`host:port`).
    Replica { of: String },
}

/// A string-like value as text.
fn string(v: &Value) -> Option<String> {
    match v {
        Value::Bulk(b) | Value::Simple(b) | Value::Verbatim { text: b, .. } => Some(text(b)),
        Value::Integer(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An integer, sent as one or as a string.
fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(n) => Some(*n),
        other => string(other)?.trim().parse().ok(),
    }
}

/// The fields of a RESP3 map or a RESP2 flat array of names and values.
fn fields(v: &Value) -> Option<Vec<(String, &Value)>> {
    match v {
        Value::Map(pairs) => pairs.iter().map(|(k, v)| Some((string(k)?, v))).collect(),
        Value::Array(items) if items.len() % 2 == 0 => {
            items.chunks(2).map(|kv| Some((string(&kv[0])?, &kv[1]))).collect()
        }
        _ => None,
    }
}

/// The elements of an array (or a RESP3 set).
fn items(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(items) | Value::Set(items) => Some(items),
        _ => None,
    }
}

/// A slot number in range.
fn slot(v: &Value) -> Result<u16, TopologyError> {
    int(v)
        .filter(|s| (0..i64::from(SLOTS)).contains(s))
        .map(|s| s as u16)
        .ok_or_else(|| TopologyError::Slot(v.clone()))
}

/// A range of slots from its first and last, in order.
fn slot_range(first: &Value, last: &Value) -> Result<(u16, u16), TopologyError> {
    match (slot(first)?, slot(last)?) {
        (a, b) if a <= b => Ok((a, b)),
        (a, b) => Err(TopologyError::SlotRange(a, b)),
    }
}

/// Where a node announced with `endpoint` is: NULL or empty (`cluster-preferred-endpoint-type
/// unknown-endpoint`, for nodes behind one address) means the address connected to,
/// `seed_host`; `?` (no hostname known) means its `ip`, when there is one.
fn node_host(endpoint: Option<&Value>, ip: Option<&Value>, seed_host: &str) -> String {
    let known = |v: Option<&Value>| v.and_then(string).filter(|h| !h.is_empty() && h != "?");
    match endpoint.and_then(string) {
        Some(h) if h == "?" => known(ip).unwrap_or_else(|| seed_host.to_string()),
        _ => known(endpoint).unwrap_or_else(|| seed_host.to_string()),
    }
}

/// Merges ranges that touch, in order.
fn merge_ranges(mut r: Vec<(u16, u16)>) -> Vec<(u16, u16)> {
    r.sort_unstable();
    let mut out: Vec<(u16, u16)> = Vec::with_capacity(r.len());
    for (a, b) in r {
        match out.last_mut() {
            Some(last) if u32::from(a) <= u32::from(last.1) + 1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Orders nodes as [`Topology::nodes`] promises: primaries by their first slot (slot-less ones
/// last), then the replicas in their primaries' order, with `primary_index` updated.
/// `primary_of[i]` is the index in `nodes` of replica `i`'s primary.
fn order(nodes: Vec<Node>, primary_of: Vec<Option<usize>>) -> Vec<Node> {
    let mut idx: Vec<usize> = (0..nodes.len()).collect();
    let key = |i: &usize| {
        let n = &nodes[*i];
        let first = n.slots.first().map_or(u32::MAX, |s| u32::from(s.0));
        // A replica sorts after every primary, by its primary's place.
        let by =
            primary_of[*i].map_or(first, |p| nodes[p].slots.first().map_or(u32::MAX, |s| u32::from(s.0)));
        (!n.primary, by, *i)
    };
    idx.sort_by_key(key);
    let mut new_index = vec![0; nodes.len()];
    for (new, &old) in idx.iter().enumerate() {
        new_index[old] = new;
    }
    let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
    idx.iter()
        .map(|&old| {
            let mut n = slots[old].take().expect("each node once");
            n.primary_index = primary_of[old].map(|p| new_index[p]);
            n
        })
        .collect()
}

/// Parses `CLUSTER SHARDS` (Redis 7+): shards of `slots` (a flat list of range starts and ends)
/// and `nodes` (each with `id`, `endpoint`/`ip`, `port`/`tls-port`, `role`, `health`), as RESP2
/// flat arrays or RESP3 maps. With `tls`, a node's `tls-port` is used when given. An unknown
/// endpoint is found by [`node_host`].
fn parse_shards(v: &Value, seed_host: &str, tls: bool) -> Result<Topology, TopologyError> {
    let mut nodes = Vec::new();
    let mut primary_of = Vec::new();
    for shard in items(v).ok_or("not an array of shards")? {
        let shard = fields(shard).ok_or("a shard is not a map")?;
        let get = |name: &str| shard.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        let bounds = items(get("slots").ok_or("a shard without slots")?).ok_or("slots are not an array")?;
        if bounds.len() % 2 != 0 {
            return Err("an odd number of slot bounds".into());
        }
        let ranges: Vec<(u16, u16)> =
            bounds.chunks(2).map(|p| slot_range(&p[0], &p[1])).collect::<Result<_, _>>()?;
        let ranges = merge_ranges(ranges);
        let first = nodes.len();
        let mut primary = None;
        for node in items(get("nodes").ok_or("a shard without nodes")?).ok_or("nodes are not an array")? {
            let node = fields(node).ok_or("a node is not a map")?;
            let get = |name: &str| node.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
            let port = if tls { get("tls-port").or(get("port")) } else { get("port").or(get("tls-port")) };
            let port =
                port.and_then(int).filter(|p| (1..=65535).contains(p)).ok_or("a node without a port")?;
            let host = node_host(get("endpoint"), get("ip"), seed_host);
            let is_primary = get("role").and_then(string).as_deref() == Some("master");
            if is_primary && primary.is_none() {
                primary = Some(nodes.len());
            }
            nodes.push(Node {
                endpoint: Endpoint::Tcp { host, port: port as u16 },
                id: get("id").and_then(string).unwrap_or_default(),
                primary: is_primary,
                slots: ranges.clone(),
                primary_index: None,
                health: get("health").and_then(string).unwrap_or_else(|| "online".to_string()),
            });
        }
        primary_of.extend(nodes[first..].iter().map(|n| if n.primary { None } else { primary }));
    }
    Ok(Topology { nodes: order(nodes, primary_of), source: "CLUSTER SHARDS" })
}

/// Parses `CLUSTER SLOTS`: entries `[start, end, [host, port, id, ...], [replica...]...]`, a
/// node's ranges merged by its id; an unknown host is found by [`node_host`] (with the `ip` of
/// the node's metadata, Redis 7). Every node is taken as online:
/// the reply leaves failed replicas out.
fn parse_slots(v: &Value, seed_host: &str) -> Result<Topology, TopologyError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut primary_of: Vec<Option<usize>> = Vec::new();
    let mut ranges: Vec<Vec<(u16, u16)>> = Vec::new();
    for entry in items(v).ok_or("not an array of slot ranges")? {
        let e = items(entry).filter(|e| e.len() >= 3).ok_or("a slot range is not an array")?;
        let range = slot_range(&e[0], &e[1])?;
        let mut primary = None;
        for (k, node) in e[2..].iter().enumerate() {
            let n = items(node).filter(|n| n.len() >= 2).ok_or("a node is not [host, port, ...]")?;
            let port = int(&n[1]).filter(|p| (1..=65535).contains(p)).ok_or("a node without a port")?;
            let meta = n.get(3).and_then(fields).unwrap_or_default();
            let ip = meta.iter().find(|(k, _)| k == "ip").map(|(_, v)| *v);
            let host = node_host(n.first(), ip, seed_host);
            let endpoint = Endpoint::Tcp { host, port: port as u16 };
            let id = n.get(2).and_then(string).unwrap_or_default();
            // Without ids (a proxy's imitation), the address names the node.
            let at =
                nodes.iter().position(|x| if id.is_empty() { x.endpoint == endpoint } else { x.id == id });
            let i = at.unwrap_or_else(|| {
                nodes.push(Node {
                    endpoint,
                    id,
                    primary: k == 0,
                    slots: Vec::new(),
                    primary_index: None,
                    health: "online".to_string(),
                });
                primary_of.push(None);
                ranges.push(Vec::new());
                nodes.len() - 1
            });
            ranges[i].push(range);
            if k == 0 {
                primary = Some(i);
            } else {
                primary_of[i] = primary;
            }
        }
    }
    for (n, r) in nodes.iter_mut().zip(ranges) {
        n.slots = merge_ranges(r);
    }
    Ok(Topology { nodes: order(nodes, primary_of), source: "CLUSTER SLOTS" })
}

/// Parses `ROLE`: `["master", offset, [[ip, port, offset]...]]` or `["slave", host, port,
/// state, offset]` (`replica` too). `ROLE` gives no replica state: each is taken as online.
fn parse_role(v: &Value) -> Result<Role, TopologyError> {
    let e = items(v).filter(|e| !e.is_empty()).ok_or("ROLE replied with no array")?;
    match string(&e[0]).as_deref() {
        Some("master") => {
            let list = e.get(2).and_then(items).ok_or("ROLE gave a primary without its replica list")?;
            let mut out = Vec::new();
            for r in list {
                let r = items(r).filter(|r| r.len() >= 2).ok_or("a replica is not [ip, port, offset]")?;
                let host = string(&r[0]).ok_or("a replica without an address")?;
                let port =
                    int(&r[1]).filter(|p| (1..=65535).contains(p)).ok_or("a replica without a port")?;
                out.push((Endpoint::Tcp { host, port: port as u16 }, "online".to_string()));
            }
            Ok(Role::Primary(out))
        }
        Some("slave" | "replica") => {
            let host = e.get(1).and_then(string).unwrap_or_default();
            let port = e.get(2).and_then(int).unwrap_or_default();
            Ok(Role::Replica { of: format!("{host}:{port}") })
        }
        Some(other) => Err(TopologyError::Role(other.to_string())),
        None => Err("ROLE replied with no role".into()),
    }
}

/// Parses `INFO replication`: `role:master` with `slaveN:ip=...,port=...,state=...` lines, or
/// `role:slave` with `master_host` and `master_port`.
fn parse_info_replication(body: &str) -> Result<Role, TopologyError> {
    let field = |name: &str| {
        body.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(|v| v.trim().to_string()))
    };
    match field("role").as_deref() {
        Some("master") => {
            let mut out = Vec::new();
            for line in body.lines() {
                let Some((name, kv)) = line.split_once(':') else { continue };
                if !name
                    .strip_prefix("slave")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                {
                    continue;
                }
                let get = |k: &str| kv.split(',').find_map(|p| p.trim().strip_prefix(k)?.strip_prefix('='));
                let missing = |field| TopologyError::ReplicaField { replica: name.to_string(), field };
                let host = get("ip").ok_or_else(|| missing("ip"))?;
                let port = get("port")
                    .and_then(|p| p.parse::<u16>().ok())
                    .filter(|&p| p != 0)
                    .ok_or_else(|| missing("port"))?;
                let state = get("state").unwrap_or("online");
                out.push((Endpoint::Tcp { host: host.to_string(), port }, state.to_string()));
            }
            Ok(Role::Primary(out))
        }
        Some("slave" | "replica") => {
            let host = field("master_host").unwrap_or_default();
            let port = field("master_port").unwrap_or_default();
            Ok(Role::Replica { of: format!("{host}:{port}") })
        }
        Some(other) => Err(TopologyError::InfoRole(other.to_string())),
        None => Err("INFO replication has no role".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bulk(s.as_bytes().to_vec())
    }

    fn i(n: i64) -> Value {
        Value::Integer(n)
    }

    fn arr(v: Vec<Value>) -> Value {
        Value::Array(v)
    }

    fn tcp(host: &str, port: u16) -> Endpoint {
        Endpoint::Tcp { host: host.into(), port }
    }

    /// A RESP2 `CLUSTER SHARDS` node.
    fn shard_node(id: &str, ip: &str, endpoint: Value, port: i64, role: &str, health: &str) -> Value {
        arr(vec![
            b("id"),
            b(id),
            b("port"),
            i(port),
            b("tls-port"),
            i(port + 1000),
            b("ip"),
            b(ip),
            b("endpoint"),
            endpoint,
            b("role"),
            b(role),
            b("replication-offset"),
            i(42),
            b("health"),
            b(health),
        ])
    }

    /// Turns RESP2 flat name/value arrays into RESP3 maps, where `fields` would read them.
    fn to_resp3(v: &Value, depth: usize) -> Value {
        match v {
            Value::Array(items) if depth % 2 == 1 => {
                Value::Map(items.chunks(2).map(|kv| (kv[0].clone(), to_resp3(&kv[1], depth + 1))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(|x| to_resp3(x, depth + 1)).collect()),
            other => other.clone(),
        }
    }

    fn three_shards() -> Value {
        // Given out of slot order, as a server may.
        arr(vec![
            arr(vec![
                b("slots"),
                arr(vec![i(5461), i(10922)]),
                b("nodes"),
                arr(vec![
                    shard_node("b2", "127.0.0.1", b("127.0.0.1"), 30005, "replica", "online"),
                    shard_node("b1", "127.0.0.1", b("127.0.0.1"), 30002, "master", "online"),
                ]),
            ]),
            arr(vec![
                b("slots"),
                arr(vec![i(0), i(5460)]),
                b("nodes"),
                arr(vec![
                    shard_node("a1", "127.0.0.1", b("127.0.0.1"), 30001, "master", "online"),
                    shard_node("a2", "10.0.0.9", b("?"), 30004, "replica", "loading"),
                ]),
            ]),
            arr(vec![
                b("slots"),
                arr(vec![i(10923), i(12000), i(12001), i(16383)]),
                b("nodes"),
                arr(vec![
                    shard_node("c1", "127.0.0.1", Value::Null, 30003, "master", "online"),
                    shard_node("c2", "127.0.0.1", b("127.0.0.1"), 30006, "replica", "fail"),
                ]),
            ]),
        ])
    }

    #[test]
    fn cluster_shards_in_resp2_and_resp3() {
        let resp2 = three_shards();
        let resp3 = to_resp3(&resp2, 0);
        assert!(matches!(&resp3, Value::Array(s) if matches!(&s[0], Value::Map(_))));
        for v in [resp2, resp3] {
            let t = parse_shards(&v, "seed.example", false).unwrap();
            assert_eq!(t.source, "CLUSTER SHARDS");
            let ids: Vec<&str> = t.nodes.iter().map(|n| n.id.as_str()).collect();
            assert_eq!(ids, ["a1", "b1", "c1", "a2", "b2", "c2"]);
            let a = &t.nodes[0];
            assert_eq!(
                (a.primary, &a.endpoint, a.slots.as_slice()),
                (true, &tcp("127.0.0.1", 30001), [(0, 5460)].as_slice())
            );
            // Ranges that touch are one; NULL means the address connected to.
            assert_eq!(t.nodes[2].slots, [(10923, 16383)]);
            assert_eq!(t.nodes[2].endpoint, tcp("seed.example", 30003));
            // `?` falls back to the ip; a replica carries its primary's slots and index.
            let a2 = &t.nodes[3];
            assert_eq!(
                (&a2.endpoint, a2.primary, a2.primary_index),
                (&tcp("10.0.0.9", 30004), false, Some(0))
            );
            assert_eq!((a2.slots.as_slice(), a2.health.as_str()), ([(0, 5460)].as_slice(), "loading"));
            assert_eq!(t.nodes[4].primary_index, Some(1));
            assert!(!t.nodes[5].usable());
            let owners = slot_owners(&t);
            assert_eq!((owners[0], owners[5461], owners[16383]), (0, 1, 2));
            assert!(owners.iter().all(|&o| o < 3));
            // Over TLS, the TLS ports.
            let t = parse_shards(&v, "h", true).unwrap();
            assert_eq!(t.nodes[0].endpoint, tcp("127.0.0.1", 31001));
        }
    }

    #[test]
    fn failed_and_missing_primaries_leave_slots_unowned() {
        let v = arr(vec![
            arr(vec![
                b("slots"),
                arr(vec![i(0), i(99)]),
                b("nodes"),
                arr(vec![shard_node("a1", "127.0.0.1", b("127.0.0.1"), 7000, "master", "fail")]),
            ]),
            // A new primary with no slots yet.
            arr(vec![
                b("slots"),
                arr(vec![]),
                b("nodes"),
                arr(vec![shard_node("n1", "127.0.0.1", b("127.0.0.1"), 7001, "master", "online")]),
            ]),
        ]);
        let t = parse_shards(&v, "h", false).unwrap();
        assert_eq!(t.nodes.len(), 2);
        assert!(slot_owners(&t).iter().all(|&o| o == u16::MAX));
        assert_eq!(t.nodes[1].slot_count(), 0);
    }

    #[test]
    fn malformed_topologies_say_why() {
        assert!(parse_shards(&b("x"), "h", false).is_err());
        let odd = arr(vec![arr(vec![b("slots"), arr(vec![i(0)]), b("nodes"), arr(vec![])])]);
        assert!(parse_shards(&odd, "h", false).unwrap_err().to_string().contains("odd"));
        let big = arr(vec![arr(vec![b("slots"), arr(vec![i(0), i(16384)]), b("nodes"), arr(vec![])])]);
        assert!(parse_shards(&big, "h", false).unwrap_err().to_string().contains("slot"));
        assert!(parse_slots(&arr(vec![arr(vec![i(0)])]), "h").is_err());
        let backwards = arr(vec![arr(vec![i(9), i(3), arr(vec![b("h"), i(1), b("id")])])]);
        assert!(parse_slots(&backwards, "h").unwrap_err().to_string().contains("9-3"));
        assert!(parse_role(&arr(vec![])).is_err());
    }

    #[test]
    fn cluster_slots_merge_a_nodes_ranges() {
        let node = |host: Value, port: i64, id: &str| arr(vec![host, i(port), b(id)]);
        let meta = |host: Value, port: i64, id: &str, ip: &str| {
            arr(vec![host, i(port), b(id), arr(vec![b("ip"), b(ip)])])
        };
        let v = arr(vec![
            arr(vec![i(5461), i(10922), node(b("127.0.0.1"), 7001, "b1"), node(b("127.0.0.1"), 7004, "b2")]),
            arr(vec![i(0), i(100), node(b("127.0.0.1"), 7000, "a1"), meta(b("?"), 7003, "a2", "10.0.0.3")]),
            arr(vec![i(10923), i(16383), node(b(""), 7002, "c1")]),
            arr(vec![
                i(101),
                i(5460),
                node(b("127.0.0.1"), 7000, "a1"),
                meta(b("?"), 7003, "a2", "10.0.0.3"),
            ]),
        ]);
        let t = parse_slots(&v, "seed").unwrap();
        assert_eq!(t.source, "CLUSTER SLOTS");
        let ids: Vec<&str> = t.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["a1", "b1", "c1", "a2", "b2"]);
        assert_eq!(t.nodes[0].slots, [(0, 5460)]);
        assert_eq!(t.nodes[2].endpoint, tcp("seed", 7002));
        let a2 = &t.nodes[3];
        assert_eq!(
            (&a2.endpoint, a2.primary_index, a2.slots.as_slice()),
            (&tcp("10.0.0.3", 7003), Some(0), [(0, 5460)].as_slice())
        );
        assert_eq!(t.nodes[4].primary_index, Some(1));
        assert!(slot_owners(&t).iter().all(|&o| o < 3));
    }

    #[test]
    fn role_of_a_primary_and_of_a_replica() {
        let v = arr(vec![
            b("master"),
            i(3129659),
            arr(vec![
                arr(vec![b("127.0.0.1"), b("9001"), b("3129242")]),
                arr(vec![b("10.0.0.2"), i(9002), b("3129543")]),
            ]),
        ]);
        assert_eq!(
            parse_role(&v),
            Ok(Role::Primary(vec![
                (tcp("127.0.0.1", 9001), "online".into()),
                (tcp("10.0.0.2", 9002), "online".into())
            ]))
        );
        assert_eq!(parse_role(&arr(vec![b("master"), i(0), arr(vec![])])), Ok(Role::Primary(vec![])));
        let v = arr(vec![b("slave"), b("127.0.0.1"), i(9000), b("connected"), i(3167038)]);
        assert_eq!(parse_role(&v), Ok(Role::Replica { of: "127.0.0.1:9000".into() }));
        assert!(parse_role(&arr(vec![b("sentinel"), arr(vec![])]))
            .unwrap_err()
            .to_string()
            .contains("sentinel"));
    }

    #[test]
    fn info_replication_of_a_primary_and_of_a_replica() {
        let body = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
                    slave0:ip=127.0.0.1,port=6380,state=online,offset=1234,lag=0\r\n\
                    slave1:ip=10.0.0.2,port=6381,state=wait_bgsave,offset=0,lag=1\r\n\
                    master_failover_state:no-failover\r\nmaster_replid:abc\r\n";
        assert_eq!(
            parse_info_replication(body),
            Ok(Role::Primary(vec![
                (tcp("127.0.0.1", 6380), "online".into()),
                (tcp("10.0.0.2", 6381), "wait_bgsave".into())
            ]))
        );
        let body = "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\nmaster_link_status:up\r\n";
        assert_eq!(parse_info_replication(body), Ok(Role::Replica { of: "10.0.0.1:6379".into() }));
        assert!(parse_info_replication("# Replication\r\n").is_err());
        assert!(parse_info_replication("role:master\r\nslave0:ip=h,state=online\r\n")
            .unwrap_err()
            .to_string()
            .contains("port"));
    }

    #[test]
    fn describe_names_roles_and_slots() {
        let t = parse_shards(&three_shards(), "h", false).unwrap();
        let d = describe(&t);
        assert!(d.starts_with("Cluster has 3 primaries and 3 replicas (CLUSTER SHARDS):\n\n"), "{d}");
        assert!(d.contains("Primary 0: a1 127.0.0.1:30001, 5461 slots\n"), "{d}");
        assert!(
            d.contains("Replica 0: a2 10.0.0.9:30004, 5461 slots, replica of 127.0.0.1:30001 (loading)\n"),
            "{d}"
        );
        assert!(d.contains("(fail)"), "{d}");
        let t = Topology {
            nodes: vec![
                Node {
                    endpoint: tcp("p", 1),
                    id: String::new(),
                    primary: true,
                    slots: vec![],
                    primary_index: None,
                    health: "online".into(),
                },
                Node {
                    endpoint: tcp("r", 2),
                    id: String::new(),
                    primary: false,
                    slots: vec![],
                    primary_index: Some(0),
                    health: "online".into(),
                },
            ],
            source: "ROLE",
        };
        assert_eq!(
            describe(&t),
            "Primary with 1 replica (ROLE):\n\nPrimary 0: p:1\nReplica 0: r:2, replica of p:1\n"
        );
    }
}
