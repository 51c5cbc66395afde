//! Fixtures for topologies: a Redis Cluster of real `redis-server --cluster-enabled yes`
//! processes ([`Cluster`]), made with `redis-cli --cluster create` and changed while a test runs
//! (slot migrations held half-way for ASK, finished for MOVED, a primary added, a failover, a
//! node killed), and a standalone primary with replicas ([`ReplicaSet`]).
//!
//! Each node is a [`RedisServer`] in its own directory (its `nodes.conf` with it); every wait
//! is bounded and panics with what it was waiting for. A cluster can also speak TLS only
//! ([`ClusterConfig::tls`]): one CA for every node, TLS on the cluster bus and replication.

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::tls::TlsCerts;
use crate::{free_port, RedisServer};

/// How long a fixture waits for the servers to agree before it panics.
const SETTLE: Duration = Duration::from_secs(30);

/// `cluster-node-timeout` unless a test asks for another: short, so failovers are quick.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(2000);

/// How [`Cluster::start_with`] configures the nodes.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// `cluster-node-timeout`: a long one keeps a killed node from being marked failed while a
    /// test looks ([`NODE_TIMEOUT`] by default).
    pub node_timeout: Duration,
    /// Every node also has a TLS port, with certificates of one CA ([`Cluster::certs`]), and
    /// `tls-cluster yes` and `tls-replication yes`: the cluster announces its TLS ports.
    pub tls: bool,
    /// More configuration for every node, as [`RedisServer::start_with`] takes it (a managed
    /// service's renamed commands: `("rename-command", "COMMAND \"\"")`).
    pub extra: Vec<(&'static str, &'static str)>,
}

impl Default for ClusterConfig {
    fn default() -> ClusterConfig {
        ClusterConfig { node_timeout: NODE_TIMEOUT, tls: false, extra: Vec::new() }
    }
}

/// A Redis Cluster on loopback: primaries owning all 16384 slots, each with its replicas.
/// Dropping it kills every node.
///
/// Nodes are named by their plain port ([`RedisServer::port`]), which [`RedisServer::cli`]
/// uses, also in a TLS cluster ([`Cluster::tls_port`] gives a node's TLS port).
pub struct Cluster {
    /// The running nodes, in the order started (primaries first, as `redis-cli --cluster
    /// create` was given them); [`Cluster::kill`] removes one.
    pub nodes: Vec<RedisServer>,
    config: ClusterConfig,
    /// With TLS: the certificates, and each node's plain and TLS ports.
    tls: Option<(TlsCerts, Vec<(u16, u16)>)>,
    /// The ids of the nodes [`Cluster::kill`] killed, which the others still know (as failed).
    killed: Vec<String>,
}

/// Runs one command on a node with `redis-cli` and returns its output; an error reply panics.
fn run(node: &RedisServer, args: &[&str]) -> String {
    let out = node.cli(args);
    let first = out.lines().next().unwrap_or("");
    // redis-cli prints error replies without a prefix when its output is not a terminal.
    for marker in ["ERR", "(error)", "MOVED", "ASK", "CLUSTERDOWN", "NOPERM", "READONLY", "IOERR", "BUSYKEY"]
    {
        assert!(!first.starts_with(marker), "port {}: {args:?} failed: {out}", node.port());
    }
    out
}

/// Whether `slot` is in a `CLUSTER NODES` line's slot fields (`0-5460`, `5461`; not the
/// `[slot->-id]` migration markers).
fn line_has_slot(line: &str, slot: u16) -> bool {
    line.split(' ').skip(8).any(|f| match f.split_once('-') {
        _ if f.starts_with('[') => false,
        Some((a, b)) => a.parse().is_ok_and(|a: u16| a <= slot) && b.parse().is_ok_and(|b: u16| slot <= b),
        None => f.parse() == Ok(slot),
    })
}

/// Whether a `CLUSTER NODES` line's flags say `master`.
fn is_primary(line: &str) -> bool {
    line.split(' ').nth(2).is_some_and(|f| f.split(',').any(|x| x == "master"))
}

/// How many slots a `CLUSTER NODES` line's slot fields cover.
fn line_slot_count(line: &str) -> usize {
    line.split(' ')
        .skip(8)
        .filter(|f| !f.starts_with('['))
        .map(|f| match f.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap_or(0) + 1 - a.parse::<usize>().unwrap_or(0),
            None => usize::from(f.parse::<u16>().is_ok()),
        })
        .sum()
}

/// Calls `check` until it gives `Ok`, for at most `limit`; panics with `what` and the last
/// `Err` after that.
fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + limit;
    loop {
        match check() {
            Ok(()) => return,
            Err(last) if Instant::now() > deadline => panic!("{what}: not after {limit:?}; last: {last}"),
            Err(_) => thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Runs `cmd` to completion; panics with what it printed if it takes longer than `limit`
/// (its output, a few kilobytes, fits in the pipes meanwhile).
fn output_within(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "{cmd:?} did not finish within {limit:?}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("wait")
}

/// A field of an INFO-style reply (`name:value` lines).
fn field<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    body.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(str::trim))
}

impl Cluster {
    /// Starts `primaries` primaries (at least 3, as `redis-cli --cluster create` requires) with
    /// `replicas_each` replicas each, and waits until every node says `cluster_state:ok`,
    /// knows every other and every replica's link to its primary is up.
    pub fn start(primaries: usize, replicas_each: usize) -> Cluster {
        Cluster::start_with(primaries, replicas_each, ClusterConfig::default())
    }

    /// [`Cluster::start`] with another node timeout, or TLS.
    pub fn start_with(primaries: usize, replicas_each: usize, config: ClusterConfig) -> Cluster {
        assert!(primaries >= 3, "redis-cli --cluster create needs at least 3 primaries, not {primaries}");
        let tls = config.tls.then(|| (TlsCerts::shared(), Vec::new()));
        let mut c = Cluster { nodes: Vec::new(), config, tls, killed: Vec::new() };
        for _ in 0..primaries * (1 + replicas_each) {
            let n = c.new_node();
            c.nodes.push(n);
        }
        let mut cmd = Command::new("redis-cli");
        if let Some((certs, _)) = &c.tls {
            cmd.arg("--tls").arg("--cacert").arg(&certs.ca);
        }
        cmd.arg("--cluster").arg("create");
        cmd.args(c.nodes.iter().map(|n| format!("127.0.0.1:{}", c.announced_port(n.port()))));
        cmd.args(["--cluster-replicas", &replicas_each.to_string(), "--cluster-yes"]);
        let out = output_within(&mut cmd, SETTLE);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("All 16384 slots covered"),
            "redis-cli --cluster create failed ({}):\n{text}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        c.wait_settled();
        c
    }

    /// A new cluster-enabled node, not yet part of anything.
    fn new_node(&mut self) -> RedisServer {
        let timeout = self.config.node_timeout.as_millis().to_string();
        let mut config = vec![
            ("cluster-enabled", "yes"),
            ("cluster-node-timeout", timeout.as_str()),
            // Relative to the node's own --dir.
            ("cluster-config-file", "nodes.conf"),
            // Replicas sync at once, not after the default 5 s wait for more of them.
            ("repl-diskless-sync-delay", "0"),
        ];
        config.extend(self.config.extra.iter().copied());
        let Some((certs, ports)) = &mut self.tls else { return RedisServer::start_with(&config) };
        // The cluster bus listens on the announced port + 10000.
        let tls_port = loop {
            let p = free_port();
            if p < 55000 {
                break p.to_string();
            }
        };
        let paths = [&certs.server.cert, &certs.server.key, &certs.client.cert, &certs.client.key, &certs.ca]
            .map(|p| p.to_str().expect("UTF-8 path"));
        config.extend([
            ("tls-port", tls_port.as_str()),
            ("tls-cert-file", paths[0]),
            ("tls-key-file", paths[1]),
            // The bus and replication connect as clients, and the server certificate is for
            // serverAuth only: without a client one, the peers refuse the handshake.
            ("tls-client-cert-file", paths[2]),
            ("tls-client-key-file", paths[3]),
            ("tls-ca-cert-file", paths[4]),
            ("tls-auth-clients", "no"),
            ("tls-cluster", "yes"),
            ("tls-replication", "yes"),
        ]);
        let n = RedisServer::start_with(&config);
        ports.push((n.port(), tls_port.parse().expect("a port")));
        n
    }

    /// The certificates of a TLS cluster ([`ClusterConfig::tls`]).
    pub fn certs(&self) -> Option<&TlsCerts> {
        self.tls.as_ref().map(|(certs, _)| certs)
    }

    /// The TLS port of the node on (plain) `port`; panics unless the cluster speaks TLS.
    pub fn tls_port(&self, port: u16) -> u16 {
        let (_, ports) =
            self.tls.as_ref().expect("not a TLS cluster: start it with ClusterConfig { tls: true }");
        ports.iter().find(|(p, _)| *p == port).map(|(_, t)| *t).unwrap_or_else(|| panic!("no node on {port}"))
    }

    /// The port the cluster announces for the node on (plain) `port`: its TLS port in a TLS
    /// cluster.
    fn announced_port(&self, port: u16) -> u16 {
        if self.tls.is_some() {
            self.tls_port(port)
        } else {
            port
        }
    }

    /// The plain port of the node announced with `port` (which may be a plain port already:
    /// the cluster tells plain clients plain ports).
    fn plain_port(&self, port: u16) -> u16 {
        match &self.tls {
            Some((_, ports)) => ports.iter().find(|(_, t)| *t == port).map_or(port, |(p, _)| *p),
            None => port,
        }
    }

    /// Waits until every node says `cluster_state:ok` and knows all the others (the killed ones
    /// too, marked failed), every node agrees with each running node's own role, and every
    /// replica's link to its primary is up. After killing a primary this waits for its replica
    /// to take over (which takes `cluster-node-timeout` and more: with a long one, it panics).
    pub fn wait_settled(&self) {
        let count = (self.nodes.len() + self.killed.len()).to_string();
        wait_for("every node in cluster_state:ok, knowing every other", SETTLE, || {
            for n in &self.nodes {
                let info = run(n, &["CLUSTER", "INFO"]);
                if field(&info, "cluster_state") != Some("ok") {
                    return Err(format!("port {}: {info}", n.port()));
                }
                if field(&info, "cluster_known_nodes") != Some(&count) {
                    return Err(format!(
                        "port {} knows {:?} nodes",
                        n.port(),
                        field(&info, "cluster_known_nodes")
                    ));
                }
            }
            Ok(())
        });
        // Roles travel by gossip: a node can still list a new replica as a primary (of no
        // slots) for a moment after `redis-cli --cluster create` is done.
        wait_for("every node to agree on every node's role", SETTLE, || {
            let own: Vec<(String, bool)> = self
                .nodes
                .iter()
                .map(|n| {
                    let line = self.own_line(n.port());
                    (line.split(' ').next().unwrap_or_default().to_string(), is_primary(&line))
                })
                .collect();
            for n in &self.nodes {
                let view = self.nodes_view(n);
                for line in view.lines() {
                    let id = line.split(' ').next().unwrap_or_default();
                    if self.killed.iter().any(|k| k == id) {
                        if line.split(' ').nth(2).is_some_and(|f| f.split(',').any(|x| x == "fail")) {
                            continue;
                        }
                        return Err(format!(
                            "port {} does not see a killed node as failed: {line}",
                            n.port()
                        ));
                    }
                    match own.iter().find(|(i, _)| i == id) {
                        Some((_, primary)) if *primary == is_primary(line) => {}
                        _ => return Err(format!("port {} sees {line}", n.port())),
                    }
                }
            }
            Ok(())
        });
        wait_for("every replica's master_link_status:up", SETTLE, || {
            for port in self.replica_ports() {
                let info = run(self.node(port), &["INFO", "replication"]);
                if field(&info, "master_link_status") != Some("up") {
                    return Err(format!("port {port}: {info}"));
                }
            }
            Ok(())
        });
    }

    /// The node on `port`.
    pub fn node(&self, port: u16) -> &RedisServer {
        self.nodes
            .iter()
            .find(|n| n.port() == port)
            .unwrap_or_else(|| panic!("no running node on port {port}"))
    }

    /// `CLUSTER NODES` as `node` sees it, its own line included.
    fn nodes_view(&self, node: &RedisServer) -> String {
        run(node, &["CLUSTER", "NODES"])
    }

    /// A node's own `CLUSTER NODES` line (flags `myself`).
    fn own_line(&self, port: u16) -> String {
        let view = self.nodes_view(self.node(port));
        view.lines()
            .find(|l| l.split(' ').nth(2).is_some_and(|f| f.contains("myself")))
            .unwrap_or_else(|| panic!("port {port}: no myself line in CLUSTER NODES:\n{view}"))
            .to_string()
    }

    /// The ports of the running nodes whose own view says they are `role` (`master`, `slave`).
    fn ports_by_role(&self, role: &str) -> Vec<u16> {
        self.nodes
            .iter()
            .map(|n| n.port())
            .filter(|&p| self.own_line(p).split(' ').nth(2).is_some_and(|f| f.split(',').any(|x| x == role)))
            .collect()
    }

    /// The ports of the primaries (as each node says of itself), in start order.
    pub fn primary_ports(&self) -> Vec<u16> {
        self.ports_by_role("master")
    }

    /// The ports of the replicas (as each node says of itself), in start order.
    pub fn replica_ports(&self) -> Vec<u16> {
        self.ports_by_role("slave")
    }

    /// How many slots the node on `port` owns, as it says itself (0 for a replica).
    pub fn slots_of(&self, port: u16) -> usize {
        line_slot_count(&self.own_line(port))
    }

    /// The cluster node id of the node on `port`.
    pub fn node_id(&self, port: u16) -> String {
        run(self.node(port), &["CLUSTER", "MYID"]).trim().to_string()
    }

    /// The port of the primary owning `slot`, as the node on `asked` says.
    pub fn owner_of(&self, slot: u16, asked: u16) -> u16 {
        let view = self.nodes_view(self.node(asked));
        let line = view
            .lines()
            .find(|l| l.split(' ').nth(2).is_some_and(|f| f.contains("master")) && line_has_slot(l, slot))
            .unwrap_or_else(|| panic!("port {asked}: no primary owns slot {slot}:\n{view}"));
        let addr = line.split(' ').nth(1).unwrap_or_default();
        let port = addr.split('@').next().and_then(|a| a.rsplit_once(':')).map(|(_, p)| p);
        let port = port
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected CLUSTER NODES line {line:?}"));
        self.plain_port(port)
    }

    /// Starts moving `slot` from the primary on `from` to the one on `to`: `to` is IMPORTING
    /// and `from` MIGRATING, so `from` answers ASK for the slot's keys it no longer has.
    pub fn begin_migration(&self, slot: u16, from: u16, to: u16) {
        let s = slot.to_string();
        run(self.node(to), &["CLUSTER", "SETSLOT", &s, "IMPORTING", &self.node_id(from)]);
        run(self.node(from), &["CLUSTER", "SETSLOT", &s, "MIGRATING", &self.node_id(to)]);
    }

    /// Moves every key of `slot` from `from` to `to` with `MIGRATE` (after
    /// [`Cluster::begin_migration`]); returns how many.
    pub fn move_keys(&self, slot: u16, from: u16, to: u16) -> usize {
        let s = slot.to_string();
        // With tls-cluster, MIGRATE connects over TLS: the announced port.
        let to_port = self.announced_port(to).to_string();
        let mut moved = 0;
        loop {
            let keys = run(self.node(from), &["CLUSTER", "GETKEYSINSLOT", &s, "100"]);
            let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
            if keys.is_empty() {
                return moved;
            }
            let mut args = vec!["MIGRATE", "127.0.0.1", &to_port, "", "0", "5000", "KEYS"];
            args.extend(&keys);
            run(self.node(from), &args);
            moved += keys.len();
        }
    }

    /// Ends the move of `slot` to `to`: `CLUSTER SETSLOT slot NODE id` on `to`, `from` and
    /// every other primary, then waits until every node says `to` owns it, so that the others
    /// answer MOVED.
    pub fn finish_migration(&self, slot: u16, from: u16, to: u16) {
        let s = slot.to_string();
        let id = self.node_id(to);
        let mut order = vec![to, from];
        order.extend(self.primary_ports().into_iter().filter(|p| *p != to && *p != from));
        for p in order {
            run(self.node(p), &["CLUSTER", "SETSLOT", &s, "NODE", &id]);
        }
        for n in &self.nodes {
            wait_for(&format!("port {} to see slot {slot} at port {to}", n.port()), SETTLE, || {
                match self.owner_of(slot, n.port()) {
                    p if p == to => Ok(()),
                    p => Err(format!("owner {p}")),
                }
            });
        }
    }

    /// Moves `slot` with its keys from the primary on `from` to the one on `to`, all steps.
    pub fn migrate_slot(&self, slot: u16, from: u16, to: u16) {
        self.begin_migration(slot, from, to);
        self.move_keys(slot, from, to);
        self.finish_migration(slot, from, to);
    }

    /// Starts a new cluster-enabled node, introduces it with `CLUSTER MEET` and waits until
    /// every node knows it and it says `cluster_state:ok`; it is a primary owning no slot.
    /// Returns its port.
    pub fn add_primary(&mut self) -> u16 {
        let n = self.new_node();
        let port = n.port();
        self.nodes.push(n);
        run(&self.nodes[0], &["CLUSTER", "MEET", "127.0.0.1", &self.announced_port(port).to_string()]);
        // The new node serves (a MIGRATE to it is refused with CLUSTERDOWN until then) once
        // it has learnt every slot's owner.
        self.wait_settled();
        port
    }

    /// Makes the replica on `replica` a primary in its primary's place with `CLUSTER
    /// FAILOVER`, and waits until it says so and the cluster has settled again
    /// ([`Cluster::wait_settled`]: the old primary is then its replica, linked).
    pub fn failover(&self, replica: u16) {
        run(self.node(replica), &["CLUSTER", "FAILOVER"]);
        wait_for(&format!("port {replica} to become a primary"), SETTLE, || {
            let line = self.own_line(replica);
            if is_primary(&line) {
                Ok(())
            } else {
                Err(line)
            }
        });
        self.wait_settled();
    }

    /// Kills the node on `port` (SIGKILL) and removes it; the others mark it failed after
    /// `cluster-node-timeout` (and a killed primary's replica takes over: see
    /// [`Cluster::wait_settled`]).
    pub fn kill(&mut self, port: u16) {
        let id = self.node_id(port);
        let i =
            self.nodes.iter().position(|n| n.port() == port).unwrap_or_else(|| panic!("no node on {port}"));
        drop(self.nodes.remove(i));
        self.killed.push(id);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The certificates are the test binary's (TlsCerts::shared): they stay.
        self.nodes.clear();
    }
}

/// A standalone primary with replicas (`--replicaof`). Dropping it kills them all.
pub struct ReplicaSet {
    /// The primary.
    pub primary: RedisServer,
    /// Its replicas.
    pub replicas: Vec<RedisServer>,
}

impl ReplicaSet {
    /// Starts a primary and `n` replicas of it, and waits until the primary says
    /// `connected_slaves:n`, each `state=online`.
    pub fn start(n: usize) -> ReplicaSet {
        ReplicaSet::start_with(n, &[])
    }

    /// [`ReplicaSet::start`] with extra configuration of the primary, e.g. `("rename-command",
    /// "ROLE \"\"")`.
    pub fn start_with(n: usize, primary_config: &[(&str, &str)]) -> ReplicaSet {
        // Replicas sync at once, not after the default 5 s wait for more of them.
        let mut config = vec![("repl-diskless-sync-delay", "0")];
        config.extend_from_slice(primary_config);
        let primary = RedisServer::start_with(&config);
        let of = format!("127.0.0.1 {}", primary.port());
        let replicas: Vec<RedisServer> =
            (0..n).map(|_| RedisServer::start_with(&[("replicaof", of.as_str())])).collect();
        let set = ReplicaSet { primary, replicas };
        let want = n.to_string();
        wait_for(&format!("{n} online replicas of port {}", set.primary.port()), SETTLE, || {
            let info = set.primary.cli(&["INFO", "replication"]);
            let online =
                info.lines().filter(|l| l.starts_with("slave") && l.contains("state=online")).count();
            if field(&info, "connected_slaves") == Some(&want) && online == n {
                Ok(())
            } else {
                Err(info)
            }
        });
        set
    }

    /// The replicas' ports.
    pub fn replica_ports(&self) -> Vec<u16> {
        self.replicas.iter().map(|r| r.port()).collect()
    }

    /// How many replicas the primary reports online in `INFO replication`.
    pub fn online_replicas(&self) -> usize {
        let info = self.primary.cli(&["INFO", "replication"]);
        info.lines().filter(|l| l.starts_with("slave") && l.contains("state=online")).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_nodes_slot_fields() {
        let line = "07c3 127.0.0.1:30004@40004 myself,master - 0 0 1 connected 0-5460 5462 [5461->-e7d1]";
        assert!(line_has_slot(line, 0) && line_has_slot(line, 5460) && line_has_slot(line, 5462));
        assert!(!line_has_slot(line, 5461) && !line_has_slot(line, 5463));
        assert_eq!(line_slot_count(line), 5462);
        assert_eq!(line_slot_count("e7d1 127.0.0.1:30005@40005 slave 07c3 0 0 1 connected"), 0);
    }
}
