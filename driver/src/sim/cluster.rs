//! A scripted server of several nodes (a Redis Cluster) for the simulation: each node answers a
//! command by its key's slot, as Redis does: served by the slot's owner, `MOVED` from every other
//! node, `ASK` from a slot's owner while the slot migrates (and served by the importing node
//! after `ASKING`), `TRYAGAIN` while a slot is scripted to refuse, `CLUSTERDOWN` for a slot no
//! node serves. Nodes die (their sockets reset, their connects refused) and appear (a new address
//! that slots then move to). A replica serves its primary's reads on a socket that sent
//! `READONLY` and redirects the rest; a failover swaps a replica and its primary.
//!
//! It is one shared state (`Arc<Mutex<ClusterServer>>`, since every node's sockets see the same
//! slot map) and a [`Script`] per node ([`ClusterServer::script`]) for the simulation's
//! [`super::Server`], which hands it each command with its socket's number (`ASKING` holds for
//! the next command on that socket only) and the time it was read: changes scheduled for a time
//! ([`ClusterServer::at`]: a migration's end, a failover) apply before the first command read
//! then or later. [`ClusterServer::servers`] gives the simulation a server per node.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use respbench_core::cluster::{key_slot, Route, SLOTS};
use respbench_core::Time;

use super::{Action, Command, Script, Server};

/// A change of the cluster at a time ([`ClusterServer::at`]).
struct Change(Time, Box<dyn FnOnce(&mut ClusterServer) + Send>);

impl std::fmt::Debug for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Change at {:?}", self.0)
    }
}

/// One node of the scripted cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimNode {
    /// `host:port`, as redirects name it.
    pub addr: String,
    /// Down: its sockets are reset and its connects refused ([`ClusterServer::kill`]).
    pub dead: bool,
    /// Commands it read, and the redirects it answered (what `INFO commandstats` and
    /// `rejected_calls` count on a real node).
    pub calls: u64,
    /// See [`SimNode::calls`].
    pub moved: u64,
    /// See [`SimNode::calls`].
    pub ask: u64,
    /// See [`SimNode::calls`].
    pub tryagain: u64,
    /// See [`SimNode::calls`].
    pub clusterdown: u64,
    /// `ASKING` commands it read.
    pub asking: u64,
    /// A replica's primary; `None` for a primary.
    pub replica_of: Option<usize>,
    /// Reads it served as a replica.
    pub replica_reads: u64,
}

/// How a node answers one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// These bytes.
    Reply(Vec<u8>),
    /// The node is dead: the socket is reset.
    Dead,
}

/// The slot map and the nodes of a scripted cluster.
#[derive(Debug)]
pub struct ClusterServer {
    nodes: Vec<SimNode>,
    /// Each slot's owner; `None`: served by no node (`CLUSTERDOWN`).
    owner: Vec<Option<usize>>,
    /// Slots migrating from their owner to a node (`ASK`).
    migrating: HashMap<u16, usize>,
    /// Slots whose next commands are answered `TRYAGAIN`, with how many are left.
    tryagain: HashMap<u16, u64>,
    /// Sockets (by the simulation's connection number) whose next command follows `ASKING`.
    asking: HashSet<(usize, u64)>,
    /// Sockets that sent `READONLY`.
    readonly: HashSet<(usize, u64)>,
    /// What a served command is answered.
    reply: Vec<u8>,
    /// Changes still to come, in the order they were scheduled.
    changes: Vec<Change>,
}

impl ClusterServer {
    /// A cluster of primaries at `addrs`, the slots split evenly in order (node 0 has the
    /// first range), every served command answered `+OK`.
    pub fn new(addrs: &[&str]) -> ClusterServer {
        let n = addrs.len().max(1);
        let owner = (0..SLOTS as usize).map(|s| Some(s * n / SLOTS as usize)).collect();
        ClusterServer {
            nodes: addrs.iter().map(|a| SimNode { addr: a.to_string(), ..SimNode::default() }).collect(),
            owner,
            migrating: HashMap::new(),
            tryagain: HashMap::new(),
            asking: HashSet::new(),
            readonly: HashSet::new(),
            reply: b"+OK\r\n".to_vec(),
            changes: Vec::new(),
        }
    }

    /// Served commands are answered `reply` (not `+OK`).
    pub fn replying(mut self, reply: &[u8]) -> ClusterServer {
        self.reply = reply.to_vec();
        self
    }

    /// The nodes, in the order they were added.
    pub fn nodes(&self) -> &[SimNode] {
        &self.nodes
    }

    /// The node that owns `slot`.
    pub fn owner(&self, slot: u16) -> Option<usize> {
        self.owner.get(usize::from(slot)).copied().flatten()
    }

    /// A node appears at `addr` (owning nothing yet); its index.
    pub fn add_node(&mut self, addr: &str) -> usize {
        self.nodes.push(SimNode { addr: addr.to_string(), ..SimNode::default() });
        self.nodes.len() - 1
    }

    /// A replica of `primary` appears at `addr`; its index.
    pub fn add_replica(&mut self, addr: &str, primary: usize) -> usize {
        let i = self.add_node(addr);
        self.nodes[i].replica_of = Some(primary);
        i
    }

    /// A failover: `replica` takes its primary's slots and becomes a primary; the old primary
    /// (and its other replicas) follow it. Nothing when `replica` is not one.
    pub fn failover(&mut self, replica: usize) {
        let Some(old) = self.nodes.get(replica).and_then(|n| n.replica_of) else { return };
        for o in self.owner.iter_mut().filter(|o| **o == Some(old)) {
            *o = Some(replica);
        }
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if i == old || (i != replica && n.replica_of == Some(old)) {
                n.replica_of = Some(replica);
            }
        }
        self.nodes[replica].replica_of = None;
    }

    /// Slots `from..=to` now belong to `node` (a finished migration, a failover): their old
    /// owners answer `MOVED` to it. `None` leaves them unserved (`CLUSTERDOWN`).
    pub fn assign(&mut self, from: u16, to: u16, node: Option<usize>) {
        for s in from..=to.min(SLOTS - 1) {
            self.owner[usize::from(s)] = node;
            self.migrating.remove(&s);
        }
    }

    /// `slot` starts migrating to `node`: its owner answers `ASK`, `node` serves it after
    /// `ASKING` (and answers `MOVED` to the owner without).
    pub fn migrate(&mut self, slot: u16, node: usize) {
        self.migrating.insert(slot, node);
    }

    /// The next `count` commands for `slot` are answered `TRYAGAIN` (a multi-key command while
    /// the slot's keys are split between two nodes).
    pub fn try_again(&mut self, slot: u16, count: u64) {
        self.tryagain.insert(slot, count);
    }

    /// `node` dies: [`ClusterServer::answer`] says [`Answer::Dead`]; [`ClusterServer::revive`]
    /// brings it back.
    pub fn kill(&mut self, node: usize) {
        self.nodes[node].dead = true;
    }

    /// `change` happens at `t`: before the first command any node reads at `t` or later.
    pub fn at(&mut self, t: Time, change: impl FnOnce(&mut ClusterServer) + Send + 'static) {
        self.changes.push(Change(t, Box::new(change)));
    }

    /// Applies the changes due by `now`, in the order they were scheduled.
    fn apply_due(&mut self, now: Time) {
        while let Some(k) = self.changes.iter().position(|c| c.0 <= now) {
            let Change(_, change) = self.changes.remove(k);
            change(self);
        }
    }

    /// A simulation's server per node of `shared`, as (`host:port`, server), each serving a
    /// command in `service`.
    pub fn servers(shared: &Arc<Mutex<ClusterServer>>, service: Duration) -> Vec<(String, Server)> {
        let addrs: Vec<String> =
            shared.lock().unwrap_or_else(|e| e.into_inner()).nodes.iter().map(|n| n.addr.clone()).collect();
        addrs
            .into_iter()
            .enumerate()
            .map(|(i, a)| {
                let script = ClusterServer::script(shared, i);
                (a, Server::new(service, move |c| script(c)))
            })
            .collect()
    }

    /// `node` is up again.
    pub fn revive(&mut self, node: usize) {
        self.nodes[node].dead = false;
    }

    /// The slot of a command's keys (`Ok(None)` for a command without keys, `Err` when they
    /// span slots), and whether it writes (a command respbench's table does not know: its
    /// first argument is the key, and it writes).
    fn slot_of(args: &[Vec<u8>]) -> Result<(Option<u16>, bool), ()> {
        let name = args.first().map(|a| a.as_slice()).unwrap_or_default();
        let (keys, write) = match Route::builtin(name, args.len()) {
            Some(r) => (r.keys, r.write),
            None if args.len() > 1 => (vec![1], true),
            None => (vec![], true),
        };
        let mut slot = None;
        for k in keys {
            let Some(key) = args.get(k) else { continue };
            let s = key_slot(key);
            if slot.is_some_and(|o| o != s) {
                return Err(());
            }
            slot = Some(s);
        }
        Ok((slot, write))
    }

    /// How `node` answers `args` read on socket `conn`.
    pub fn answer(&mut self, node: usize, conn: u64, args: &[Vec<u8>]) -> Answer {
        let Some(n) = self.nodes.get_mut(node) else { return Answer::Dead };
        if n.dead {
            return Answer::Dead;
        }
        n.calls += 1;
        let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
        let asking = self.asking.remove(&(node, conn));
        match name.as_slice() {
            b"ASKING" => {
                self.nodes[node].asking += 1;
                self.asking.insert((node, conn));
                return Answer::Reply(b"+OK\r\n".to_vec());
            }
            b"READONLY" => {
                self.readonly.insert((node, conn));
                return Answer::Reply(b"+OK\r\n".to_vec());
            }
            b"AUTH" | b"SELECT" | b"HELLO" | b"CLIENT" => return Answer::Reply(b"+OK\r\n".to_vec()),
            _ => {}
        }
        let (slot, write) = match ClusterServer::slot_of(args) {
            Ok((Some(s), write)) => (s, write),
            Ok((None, _)) => return Answer::Reply(self.reply.clone()),
            Err(()) => {
                return Answer::Reply(b"-CROSSSLOT Keys in request don't hash to the same slot\r\n".to_vec())
            }
        };
        let node_stats = &mut self.nodes[node];
        let Some(owner) = self.owner[usize::from(slot)] else {
            node_stats.clusterdown += 1;
            return Answer::Reply(b"-CLUSTERDOWN Hash slot not served\r\n".to_vec());
        };
        if let Some(left) = self.tryagain.get_mut(&slot).filter(|l| **l > 0) {
            *left -= 1;
            node_stats.tryagain += 1;
            return Answer::Reply(b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n".to_vec());
        }
        let importing = self.migrating.get(&slot).copied();
        if owner == node {
            if let Some(to) = importing {
                node_stats.ask += 1;
                return Answer::Reply(format!("-ASK {slot} {}\r\n", self.nodes[to].addr).into_bytes());
            }
            return Answer::Reply(self.reply.clone());
        }
        if importing == Some(node) && asking {
            return Answer::Reply(self.reply.clone());
        }
        if node_stats.replica_of == Some(owner) && !write && self.readonly.contains(&(node, conn)) {
            node_stats.replica_reads += 1;
            return Answer::Reply(self.reply.clone());
        }
        node_stats.moved += 1;
        Answer::Reply(format!("-MOVED {slot} {}\r\n", self.nodes[owner].addr).into_bytes())
    }

    /// Node `node` as a [`Script`] for the simulation's server: a dead node resets the socket.
    pub fn script(shared: &Arc<Mutex<ClusterServer>>, node: usize) -> Script {
        let shared = Arc::clone(shared);
        Arc::new(move |c: &Command| {
            let mut cluster = shared.lock().unwrap_or_else(|e| e.into_inner());
            cluster.apply_due(c.at);
            match cluster.answer(node, c.conn, c.args) {
                Answer::Reply(b) => Action::Reply(b),
                Answer::Dead => Action::ReplyAndReset(Vec::new()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    fn reply(a: Answer) -> String {
        match a {
            Answer::Reply(b) => String::from_utf8(b).unwrap(),
            Answer::Dead => "dead".into(),
        }
    }

    /// Three nodes; `foo` is in slot 12182 (node 2), `bar` in 5061 (node 0).
    fn three() -> ClusterServer {
        ClusterServer::new(&["127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"])
    }

    #[test]
    fn the_owner_serves_and_the_others_answer_moved() {
        let mut c = three();
        assert_eq!((key_slot(b"foo"), key_slot(b"bar")), (12182, 5061));
        assert_eq!(c.owner(12182), Some(2));
        assert_eq!(c.owner(0), Some(0));
        assert_eq!(c.owner(16383), Some(2));
        assert_eq!(reply(c.answer(2, 0, &cmd(&["GET", "foo"]))), "+OK\r\n");
        assert_eq!(reply(c.answer(0, 0, &cmd(&["GET", "foo"]))), "-MOVED 12182 127.0.0.1:7002\r\n");
        assert_eq!(reply(c.answer(2, 0, &cmd(&["SET", "bar", "x"]))), "-MOVED 5061 127.0.0.1:7000\r\n");
        // A command without keys is served by any node; keys of two slots by none.
        assert_eq!(reply(c.answer(1, 0, &cmd(&["PING"]))), "+OK\r\n");
        assert!(reply(c.answer(2, 0, &cmd(&["MGET", "foo", "bar"]))).starts_with("-CROSSSLOT"));
        // A hash tag keeps keys together.
        assert_eq!(reply(c.answer(2, 0, &cmd(&["MSET", "{foo}a", "1", "{foo}b", "2"]))), "+OK\r\n");
        let n = c.nodes();
        assert_eq!((n[0].calls, n[0].moved, n[2].calls, n[2].moved), (1, 1, 4, 1));
    }

    #[test]
    fn a_migrating_slot_asks_and_the_importer_serves_after_asking() {
        let mut c = three();
        c.migrate(12182, 1);
        assert_eq!(reply(c.answer(2, 0, &cmd(&["GET", "foo"]))), "-ASK 12182 127.0.0.1:7001\r\n");
        // Without ASKING the importer sends the client back to the owner.
        assert_eq!(reply(c.answer(1, 5, &cmd(&["GET", "foo"]))), "-MOVED 12182 127.0.0.1:7002\r\n");
        assert_eq!(reply(c.answer(1, 5, &cmd(&["ASKING"]))), "+OK\r\n");
        assert_eq!(reply(c.answer(1, 5, &cmd(&["GET", "foo"]))), "+OK\r\n");
        // ASKING holds for one command, on its own socket.
        assert_eq!(reply(c.answer(1, 5, &cmd(&["GET", "foo"]))).get(..6), Some("-MOVED"));
        c.answer(1, 5, &cmd(&["ASKING"]));
        assert_eq!(reply(c.answer(1, 6, &cmd(&["GET", "foo"]))).get(..6), Some("-MOVED"));
        // The migration ends: the old owner answers MOVED to the new one.
        c.assign(12182, 12182, Some(1));
        assert_eq!(reply(c.answer(2, 0, &cmd(&["GET", "foo"]))), "-MOVED 12182 127.0.0.1:7001\r\n");
        assert_eq!(reply(c.answer(1, 0, &cmd(&["GET", "foo"]))), "+OK\r\n");
        let n = c.nodes();
        assert_eq!((n[2].ask, n[1].asking, n[1].moved), (1, 2, 3));
    }

    #[test]
    fn tryagain_and_clusterdown() {
        let mut c = three();
        c.try_again(12182, 2);
        for _ in 0..2 {
            assert!(reply(c.answer(2, 0, &cmd(&["GET", "foo"]))).starts_with("-TRYAGAIN "));
        }
        assert_eq!(reply(c.answer(2, 0, &cmd(&["GET", "foo"]))), "+OK\r\n");
        c.assign(12000, 12999, None);
        assert_eq!(reply(c.answer(0, 0, &cmd(&["GET", "foo"]))), "-CLUSTERDOWN Hash slot not served\r\n");
        assert_eq!(reply(c.answer(0, 0, &cmd(&["GET", "bar"]))), "+OK\r\n");
        assert_eq!((c.nodes()[2].tryagain, c.nodes()[0].clusterdown), (2, 1));
    }

    #[test]
    fn a_node_dies_and_a_node_appears() {
        let mut c = three().replying(b"$1\r\nv\r\n");
        c.kill(2);
        assert_eq!(c.answer(2, 0, &cmd(&["GET", "foo"])), Answer::Dead);
        // A failover: a new node takes the dead one's slots.
        let new = c.add_node("127.0.0.1:7003");
        assert_eq!(new, 3);
        c.assign(10923, 16383, Some(new));
        assert_eq!(reply(c.answer(0, 0, &cmd(&["GET", "foo"]))), "-MOVED 12182 127.0.0.1:7003\r\n");
        assert_eq!(reply(c.answer(3, 0, &cmd(&["GET", "foo"]))), "$1\r\nv\r\n");
        c.revive(2);
        assert_eq!(reply(c.answer(2, 0, &cmd(&["GET", "foo"]))), "-MOVED 12182 127.0.0.1:7003\r\n");
        assert_eq!(c.nodes()[2].calls, 1, "a dead node counts nothing");
    }

    #[test]
    fn a_replica_serves_reads_after_readonly_and_a_failover_swaps_it_in() {
        // One primary (every slot) and its replica; `foo` is in slot 12182.
        let mut c = ClusterServer::new(&["127.0.0.1:7000"]);
        let r = c.add_replica("127.0.0.1:7001", 0);
        let moved = "-MOVED 12182 127.0.0.1:7000\r\n";
        assert_eq!(reply(c.answer(r, 1, &cmd(&["GET", "foo"]))), moved, "no READONLY yet");
        assert_eq!(reply(c.answer(r, 1, &cmd(&["READONLY"]))), "+OK\r\n");
        assert_eq!(reply(c.answer(r, 1, &cmd(&["GET", "foo"]))), "+OK\r\n");
        assert_eq!(reply(c.answer(r, 1, &cmd(&["GET", "foo"]))), "+OK\r\n", "READONLY stays");
        assert_eq!(reply(c.answer(r, 1, &cmd(&["SET", "foo", "x"]))), moved, "writes go to the primary");
        assert_eq!(reply(c.answer(r, 2, &cmd(&["GET", "foo"]))), moved, "another socket");
        assert_eq!(c.nodes()[r].replica_reads, 2);

        c.failover(r);
        assert_eq!((c.nodes()[r].replica_of, c.nodes()[0].replica_of), (None, Some(r)));
        assert_eq!(c.owner(12182), Some(r));
        assert_eq!(reply(c.answer(r, 1, &cmd(&["SET", "foo", "x"]))), "+OK\r\n");
        assert_eq!(reply(c.answer(0, 3, &cmd(&["SET", "foo", "x"]))), "-MOVED 12182 127.0.0.1:7001\r\n");
        c.answer(0, 3, &cmd(&["READONLY"]));
        assert_eq!(
            reply(c.answer(0, 3, &cmd(&["GET", "foo"]))),
            "+OK\r\n",
            "the old primary is a replica now"
        );
        // A node that is not a replica: no failover.
        c.failover(r);
        assert_eq!(c.owner(12182), Some(r));
    }
}
