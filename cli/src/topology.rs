//! The nodes of a run over several servers, found at startup. (A first version: `CLUSTER
//! SLOTS` only.)

use respbench_core::cluster::SLOTS;
use respbench_core::resp::Value;
use respbench_core::Endpoint;

use crate::opts::Config;
use crate::server::{Conn, StartupError};

/// One node.
#[derive(Clone, Debug)]
pub struct Node {
    /// Where it is.
    pub endpoint: Endpoint,
    /// A primary or a replica.
    pub primary: bool,
    /// Its slots (inclusive ranges); a replica has its primary's.
    pub slots: Vec<(u16, u16)>,
    /// A replica's primary.
    pub primary_index: Option<usize>,
}

/// The nodes found.
#[derive(Clone, Debug)]
pub struct Topology {
    /// Primaries and replicas.
    pub nodes: Vec<Node>,
}

/// `CLUSTER SLOTS` from the `-h/-p` node.
pub fn discover_cluster(cfg: &Config) -> Result<Topology, StartupError> {
    let mut c = Conn::authenticated(cfg)?;
    let reply = c.command(&[b"CLUSTER", b"SLOTS"])?;
    let Value::Array(ranges) = reply else {
        return Err(StartupError(format!(
            "--cluster: {} answered CLUSTER SLOTS with {reply:?}",
            cfg.endpoint
        )));
    };
    let mut nodes: Vec<Node> = Vec::new();
    for r in ranges {
        let Value::Array(f) = r else { continue };
        let (Some(Value::Integer(a)), Some(Value::Integer(b))) = (f.first(), f.get(1)) else { continue };
        let range = (*a as u16, *b as u16);
        let mut primary = None;
        for (k, n) in f.iter().skip(2).enumerate() {
            let Value::Array(n) = n else { continue };
            let host = match n.first() {
                Some(Value::Bulk(h)) if !h.is_empty() && h != b"?" => String::from_utf8_lossy(h).into_owned(),
                _ => match &cfg.endpoint {
                    Endpoint::Tcp { host, .. } => host.clone(),
                    Endpoint::Unix(_) => "127.0.0.1".into(),
                },
            };
            let Some(Value::Integer(port)) = n.get(1) else { continue };
            let endpoint = Endpoint::Tcp { host, port: *port as u16 };
            let i = match nodes.iter().position(|x| x.endpoint == endpoint) {
                Some(i) => i,
                None => {
                    nodes.push(Node { endpoint, primary: k == 0, slots: vec![], primary_index: None });
                    nodes.len() - 1
                }
            };
            nodes[i].slots.push(range);
            if k == 0 {
                primary = Some(i);
            } else {
                nodes[i].primary_index = primary;
            }
        }
    }
    Ok(Topology { nodes })
}

/// Not written yet in this version.
pub fn discover_replicas(cfg: &Config) -> Result<Topology, StartupError> {
    Err(StartupError(format!("--replicas: not available yet ({})", cfg.endpoint)))
}

/// Every node answers.
pub fn check_reachable(_cfg: &Config, _topo: &Topology) -> Result<(), StartupError> {
    Ok(())
}

/// The primary owning each slot.
pub fn slot_owners(topo: &Topology) -> Vec<u16> {
    let mut owners = vec![u16::MAX; usize::from(SLOTS)];
    for (i, n) in topo.nodes.iter().enumerate().filter(|(_, n)| n.primary) {
        for &(a, b) in &n.slots {
            for s in a..=b.min(SLOTS - 1) {
                owners[usize::from(s)] = i as u16;
            }
        }
    }
    owners
}
