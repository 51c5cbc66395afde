//! Requests over several nodes, as the command line sets them up: the topology found at startup
//! (`topology.rs`), how each command is routed (respbench's table, else the server's
//! `COMMAND INFO`), and the core's [`Cluster`] for each test.

use std::sync::Arc;

use respbench_core::cluster::{Cluster, Node, Reads, Route, TAG_PLACEHOLDER};
use respbench_core::resp::Value;
use respbench_core::template::Template;
use respbench_core::{Handshake, Stats};

use crate::config::{Config, Rfr};
use crate::error::Error;
/// Why commands cannot be routed over the nodes: defined beside the session's [`Error`], which
/// wraps it, and named here, where the routes are found.
pub use crate::error::RoutingError;
use crate::result::NodeInfo;
use crate::server::{Conn, Server};
use crate::topology::{self, Topology};

/// What every test of a run over several nodes shares: the nodes and the routes of the
/// commands the server had to be asked about.
#[derive(Debug)]
pub struct Multi {
    /// The nodes found at startup.
    pub topology: Topology,
    /// The route of each command of the run, by upper-case name and argument count, and where
    /// it came from: respbench's table, `COMMAND INFO` or `COMMAND GETKEYS`.
    routes: Vec<(Vec<u8>, usize, Route, &'static str)>,
}

impl Multi {
    /// The nodes of a test over several nodes as it ended, as reports name them: the nodes found
    /// at the start and those that appeared during it (a redirect named them); a node that owns
    /// slots at the end is a primary (a replica promoted by a failover), and a replica serves its
    /// primary's slots.
    pub fn nodes_at_end(&self, cluster: &Cluster, stats: &Stats) -> Vec<NodeInfo> {
        let (endpoints, counts) = cluster.at_end(stats);
        let found = &self.topology.nodes;
        endpoints
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let address = e.to_string();
                let owned = counts.get(i).copied().unwrap_or(0);
                let node = found.get(i);
                let primary = owned > 0 || node.is_none_or(|n| n.primary);
                let slots = match node.and_then(|n| n.primary_index) {
                    Some(p) if !primary => counts.get(p).copied().unwrap_or(0),
                    _ => owned,
                };
                NodeInfo { address, primary, slots }
            })
            .collect()
    }

    /// The route of `template`'s command.
    fn route(&self, template: &Template) -> Route {
        let Some((name, argc)) = Route::command_of(template.as_bytes()) else {
            // Inline (PING_INLINE): no key.
            return Route { keys: vec![], write: false };
        };
        let upper = name.to_ascii_uppercase();
        self.routes
            .iter()
            .find(|(n, a, _, _)| *n == upper && *a == argc)
            .map(|(_, _, r, _)| r.clone())
            .or_else(|| Route::builtin(&upper, argc))
            .unwrap_or(Route { keys: vec![], write: true })
    }

    /// Which arguments of each command are keys, and who said so: for the report's header.
    pub fn describe_keys(&self) -> String {
        let parts: Vec<String> = self
            .routes
            .iter()
            .map(|(name, _, r, source)| {
                let name = String::from_utf8_lossy(name);
                let at = match r.keys.as_slice() {
                    [] => "no key".to_string(),
                    [k] => format!("key at argument {k}"),
                    ks => format!(
                        "keys at arguments {}",
                        ks.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(",")
                    ),
                };
                let rw = if r.write { "write" } else { "read" };
                format!("{name}: {at}, a {rw} ({source})")
            })
            .collect();
        format!("Routing: {}", parts.join("; "))
    }

    /// The core's view of the nodes for one test of `clients` clients: connections to every
    /// node, the slot map, where reads go, and the route of each of `templates`.
    pub fn cluster(&self, cfg: &Config, templates: &[&Template], handshake: &Handshake) -> Option<Cluster> {
        let nodes = self
            .topology
            .nodes
            .iter()
            .map(|n| Node {
                endpoint: n.endpoint.clone(),
                primary: n.primary,
                primary_index: n.primary_index,
            })
            .collect();
        let reads = match cfg.rfr {
            Rfr::No => Reads::Primary,
            Rfr::Yes => Reads::Replicas,
            Rfr::All => Reads::Both,
        };
        let routes = templates.iter().map(|t| self.route(t)).collect();
        let owners = if cfg.cluster {
            topology::slot_owners(&self.topology)
        } else {
            // A standalone primary serves every key: node 0 owns every slot.
            vec![0; usize::from(respbench_core::cluster::SLOTS)]
        };
        Cluster::new(nodes, owners, cfg.cluster, reads, routes, handshake).ok()
    }
}

/// Finds the nodes (`--cluster`: the cluster's; `--replicas`, `--replica`: the primary's
/// replicas) and the routes of `templates`' commands; `None` for a run against one server.
pub fn prepare(cfg: &Config, server: &Server, templates: &[&Template]) -> Result<Option<Arc<Multi>>, Error> {
    let Some(found) = topology::discover(cfg, server)? else { return Ok(None) };
    let topology = usable(found);
    let mut multi = Multi { topology, routes: Vec::new() };
    let mut conn = None;
    for t in templates {
        let Some((name, argc)) = Route::command_of(t.as_bytes()) else { continue };
        let upper = name.to_ascii_uppercase();
        if multi.routes.iter().any(|(n, a, _, _)| *n == upper && *a == argc) {
            continue;
        }
        if let Some(r) = Route::builtin(&upper, argc) {
            multi.routes.push((upper, argc, r, "respbench's table"));
            continue;
        }
        if let Some(keys) = &cfg.key_args {
            if let Some(&k) = keys.iter().find(|&&k| k >= argc) {
                let command = String::from_utf8_lossy(&name).into_owned();
                return Err(RoutingError::NoSuchArgument { command, argument: k, has: argc - 1 }.into());
            }
            // Nothing says it only reads: it goes to the primary.
            let route = Route { keys: keys.clone(), write: true };
            multi.routes.push((upper, argc, route, "--key-args"));
            continue;
        }
        if conn.is_none() {
            conn = Some(Conn::authenticated(server)?);
        }
        let c = conn.as_mut().expect("set above");
        let (route, source) = command_info(c, &name, t)?;
        multi.routes.push((upper, argc, route, source));
    }
    for t in templates {
        check_keys(&multi.route(t), t, cfg.cluster)?;
    }
    Ok(Some(Arc::new(multi)))
}

/// The topology without the nodes marked failed (a killed primary whose replica took over):
/// nobody connects to those.
fn usable(mut t: Topology) -> Topology {
    let keep: Vec<bool> = t.nodes.iter().map(|n| n.usable()).collect();
    let mut index = Vec::with_capacity(keep.len());
    let mut next = 0;
    for &k in &keep {
        index.push(k.then_some(next));
        next += usize::from(k);
    }
    let mut i = 0;
    t.nodes.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    for n in &mut t.nodes {
        n.primary_index = n.primary_index.and_then(|p| index.get(p).copied().flatten());
    }
    t
}

/// `COMMAND INFO name`: its key positions and whether it writes; for a command whose keys move
/// with its arguments (`EVAL script numkeys key…`), `COMMAND GETKEYS` on the command as given
/// (`t`, its template) says which arguments are keys.
fn command_info(c: &mut Conn, name: &[u8], t: &Template) -> Result<(Route, &'static str), RoutingError> {
    let argc = Route::command_of(t.as_bytes()).map_or(0, |(_, n)| n);
    let shown = String::from_utf8_lossy(name).into_owned();
    let reply = c.command(&[b"COMMAND", b"INFO", name]).map_err(RoutingError::Connection)?;
    let fail = |why: &str| RoutingError::UnknownKeys { command: shown.clone(), why: why.to_string() };
    let entry = match reply {
        Value::Array(mut a) if !a.is_empty() => a.swap_remove(0),
        Value::Error(e) => {
            return Err(fail(&format!("COMMAND INFO failed: {}", String::from_utf8_lossy(&e))))
        }
        _ => return Err(fail("COMMAND INFO gave no answer")),
    };
    let Value::Array(fields) = entry else { return Err(fail("the server does not know the command")) };
    let int = |i: usize| match fields.get(i) {
        Some(Value::Integer(n)) => Some(*n),
        _ => None,
    };
    let flags: Vec<Vec<u8>> = match fields.get(2) {
        Some(Value::Array(f)) | Some(Value::Set(f)) => f
            .iter()
            .filter_map(|v| match v {
                Value::Simple(s) | Value::Bulk(s) => Some(s.to_ascii_lowercase()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    // Only a command the server flags `readonly` is a read: EVAL, which may write, has
    // neither flag, and goes to the primary.
    let write = !flags.iter().any(|f| f == b"readonly");
    if flags.iter().any(|f| f == b"movablekeys") {
        let args: Vec<&[u8]> = (0..argc).filter_map(|i| t.arg(i)).collect();
        let mut request: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS"];
        request.extend(&args);
        let keys = match c.command(&request).map_err(RoutingError::Connection)? {
            Value::Array(k) => k,
            Value::Error(e) => {
                return Err(fail(&format!("COMMAND GETKEYS failed: {}", String::from_utf8_lossy(&e))))
            }
            other => return Err(fail(&format!("COMMAND GETKEYS gave {other:?}"))),
        };
        // Each key the server names is the first argument equal to it not taken yet.
        let mut positions = Vec::new();
        for k in keys {
            let (Value::Bulk(k) | Value::Simple(k)) = k else { continue };
            let at = (1..args.len()).find(|i| args[*i] == k.as_slice() && !positions.contains(i));
            positions.extend(at);
        }
        return Ok((Route { keys: positions, write }, "COMMAND GETKEYS"));
    }
    let (Some(first), Some(last), Some(step)) = (int(3), int(4), int(5)) else {
        return Err(fail("COMMAND INFO has no key positions"));
    };
    Ok((Route::from_command_info(first, last, step, write, argc), "COMMAND INFO"))
}

/// Refuses a command whose keys would span slots (CROSSSLOT at every request): several key
/// arguments, one of them drawn (`__rand_int__`, `__rand_num__`) with no hash tag, or literal keys in
/// different slots.
fn check_keys(route: &Route, t: &Template, cluster: bool) -> Result<(), RoutingError> {
    if !cluster || route.keys.len() < 2 {
        return Ok(());
    }
    let bytes = t.as_bytes();
    let args: Vec<&[u8]> = route.keys.iter().filter_map(|&k| t.arg(k)).collect();
    let drawn = |a: &[u8]| a.windows(12).any(|w| w == b"__rand_int__" || w == b"__rand_num__");
    let tagged = |a: &[u8]| {
        a.windows(TAG_PLACEHOLDER.len()).any(|w| w == TAG_PLACEHOLDER) || {
            let tag = respbench_core::cluster::hash_tag(a);
            tag.len() < a.len() && !drawn(tag)
        }
    };
    let name =
        Route::command_of(bytes).map(|(n, _)| String::from_utf8_lossy(&n).into_owned()).unwrap_or_default();
    if args.iter().any(|a| drawn(a) && !tagged(a)) {
        return Err(RoutingError::DrawnKeysSpanSlots(name));
    }
    let slots: Vec<u16> =
        args.iter().filter(|a| !drawn(a)).map(|a| respbench_core::cluster::key_slot(a)).collect();
    if slots.windows(2).any(|w| w[0] != w[1]) {
        return Err(RoutingError::KeysInDifferentSlots(name));
    }
    Ok(())
}
