//! The nodes a notification test (`-t expiry`, `-t tracking`, issue #52) writes to and
//! listens on: the `-h/-p` server, or over `--cluster` every primary found at startup, and
//! which of them serves each key (by its slot).

use respbench_core::cluster::key_slot;

use crate::error::Error;
use crate::routing::Multi;
use crate::server::Server;

/// The slots of a cluster.
const SLOTS: usize = 16384;

/// The primaries, and the one serving each slot.
pub(crate) struct Nodes {
    /// The primaries (one server without `--cluster`).
    pub primaries: Vec<Server>,
    /// A cluster's replicas (`--set-notify` sets them too: a failover makes one a primary).
    pub replicas: Vec<Server>,
    /// For each slot, its primary's index (empty: one server).
    owner: Vec<u16>,
}

impl Nodes {
    /// The nodes of `server`: `multi`'s primaries over `--cluster` (every slot served), else
    /// `server` alone. Replicas without `--cluster` are refused: the tests write and listen on
    /// one primary.
    pub fn new(server: &Server, multi: Option<&Multi>, cluster: bool, test: &str) -> Result<Nodes, Error> {
        let Some(multi) = multi else {
            return Ok(Nodes { primaries: vec![server.clone()], replicas: Vec::new(), owner: Vec::new() });
        };
        if !cluster {
            return Err(Error::Tests(format!("{test}: not over replicas: give the primary alone")));
        }
        let (mut primaries, mut owner) = (Vec::new(), vec![u16::MAX; SLOTS]);
        for node in multi.topology.nodes.iter().filter(|n| n.primary && n.usable()) {
            let k = u16::try_from(primaries.len())
                .map_err(|_| Error::Tests(format!("{test}: too many nodes")))?;
            for &(a, b) in &node.slots {
                for s in a..=b.min(SLOTS as u16 - 1) {
                    owner[s as usize] = k;
                }
            }
            primaries.push(server.node(&node.endpoint));
        }
        if let Some(s) = owner.iter().position(|&o| o == u16::MAX) {
            return Err(Error::Tests(format!("{test}: slot {s} has no primary that is up")));
        }
        let replicas =
            multi.topology.nodes.iter().filter(|n| !n.primary).map(|n| server.node(&n.endpoint)).collect();
        Ok(Nodes { primaries, replicas, owner })
    }

    /// The index of the primary serving `key`.
    pub fn of(&self, key: &[u8]) -> usize {
        self.owner.get(usize::from(key_slot(key))).map_or(0, |&o| usize::from(o))
    }

    /// Whether the test runs over a cluster.
    pub fn clustered(&self) -> bool {
        !self.owner.is_empty()
    }
}
