//! What a run measured, as typed values: one [`TestResult`] per test (per step, per backend),
//! the nodes it went over and a sweep's step. The command line renders them (text, CSV, the
//! `--json` document) and `respbench merge` reads documents back into them.

use respbench_core::Stats;

use crate::config::Step;
use crate::cpu::ClientCpu;
use crate::verdict::{ServerCpu, Verdict};

/// How much of a request template `command` keeps: `-d 1000000` would otherwise put a megabyte
/// of `x` in every test.
const COMMAND_KEEP: usize = 4096;

/// One test's results: a test of the suite at one step, rate and backend, or one command of a
/// mix.
#[derive(Clone, Debug)]
pub struct TestResult {
    /// The title, as in the text report.
    pub name: String,
    /// The request template (see [`command_text`]).
    pub command: String,
    /// The backend that ran it (`None` in documents written before the field existed).
    pub backend: Option<String>,
    /// The client's CPU during the test (`None` likewise).
    pub cpu: Option<ClientCpu>,
    /// The open-loop target rate of this test (step), if any.
    pub target_rps: Option<u64>,
    /// The server's CPU during the test (`INFO cpu`), when it could be read.
    pub server_cpu: Option<ServerCpu>,
    /// Who limited the test.
    pub verdict: Option<Verdict>,
    /// A sweep's step.
    pub step: Option<StepValues>,
    /// Counts, times and histograms.
    pub stats: Stats,
    /// Over several nodes: each node of `stats.nodes`, in the same order; empty otherwise.
    pub nodes: Vec<NodeInfo>,
}

impl TestResult {
    /// Adds `e`, the same test run elsewhere at the same time (another load machine, another
    /// worker), to this one: counts and histograms add up, nodes by address, target rates and
    /// client CPU sum, and the busiest server CPU reading stands.
    pub fn merge(&mut self, mut e: TestResult) -> Result<(), String> {
        let acc = self;
        // Nodes are matched by address, not by position: each load machine lists the cluster's
        // nodes in the order it found them.
        let mine = std::mem::take(&mut acc.stats.nodes);
        let theirs = std::mem::take(&mut e.stats.nodes);
        acc.stats.merge(&e.stats).map_err(|err| format!("test '{}': {err}", e.name))?;
        acc.stats.nodes = mine;
        for (k, stats) in theirs.into_iter().enumerate() {
            let info = NodeInfo::nth(&e.nodes, k);
            match acc.nodes.iter().position(|n| n.address == info.address) {
                Some(at) => acc.stats.nodes[at]
                    .merge(&stats)
                    .map_err(|err| format!("test '{}': node {}: {err}", e.name, info.address))?,
                None => {
                    acc.nodes.push(info);
                    acc.stats.nodes.push(stats);
                }
            }
        }
        // Two machines each aiming at R give 2R together.
        acc.target_rps = acc.target_rps.zip(e.target_rps).map(|(a, b)| a + b);
        acc.cpu = match (acc.cpu, e.cpu) {
            (Some(mut a), Some(b)) => {
                a.merge(&b);
                Some(a)
            }
            // One run without the figure: the sum would be wrong.
            _ => None,
        };
        // Runs against the same server at the same time see the same server: the
        // busiest reading stands for it.
        acc.server_cpu = match (acc.server_cpu.take(), e.server_cpu) {
            (Some(a), Some(b)) => Some(if b.cores > a.cores { b } else { a }),
            (a, b) => a.or(b),
        };
        Ok(())
    }
}

/// The values of the swept options at one step of a sweep, as each of its results records them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepValues {
    /// `-d`, as given (`128`, `64-1024`, `64:3,1024:1`).
    pub datasize: String,
    /// `-c`: a worker's results name the whole run's, as its other workers' do, so they merge.
    pub clients: u64,
    /// `-P`.
    pub pipeline: u64,
    /// `--threads`.
    pub threads: u64,
    /// Which run of the combination (`--repeat`), from 0.
    pub run: u64,
}

impl StepValues {
    /// The values of `step`.
    pub fn of(step: &Step) -> StepValues {
        StepValues {
            datasize: step.values.to_string(),
            clients: step.clients as u64,
            pipeline: u64::from(step.pipeline),
            threads: step.threads as u64,
            run: step.run as u64,
        }
    }

    /// The values a table shows, by their JSON names (`datasize`, `clients`, `pipeline`,
    /// `threads`, `run`).
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "datasize" => self.datasize.clone(),
            "clients" => self.clients.to_string(),
            "pipeline" => self.pipeline.to_string(),
            "threads" => self.threads.to_string(),
            "run" => self.run.to_string(),
            _ => return None,
        })
    }
}

/// One node of a test over several nodes (`--cluster`, replicas), as reports name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Where it is: `host:port`.
    pub address: String,
    /// A primary, else a replica.
    pub primary: bool,
    /// How many slots it serves (a replica: its primary's).
    pub slots: u64,
}

impl NodeInfo {
    /// The nodes of a test over several nodes as it ended: the nodes found at the start and
    /// those that appeared during it (a redirect named them); a node that owns slots at the
    /// end is a primary (a replica promoted by a failover), and a replica serves its primary's
    /// slots.
    pub fn at_end(
        cluster: &respbench_core::cluster::Cluster,
        multi: &crate::routing::Multi,
        stats: &Stats,
    ) -> Vec<NodeInfo> {
        let (endpoints, counts) = cluster.at_end(stats);
        let found = &multi.topology.nodes;
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

    /// `primary` or `replica`.
    pub fn role(&self) -> &'static str {
        if self.primary {
            "primary"
        } else {
            "replica"
        }
    }

    /// The description of node `i` of `nodes`, or a stand-in when there is none.
    pub fn nth(nodes: &[NodeInfo], i: usize) -> NodeInfo {
        nodes.get(i).cloned().unwrap_or(NodeInfo { address: format!("node {i}"), primary: true, slots: 0 })
    }
}

/// A request template as `command` shows it: lossy UTF-8, cut at 4096 bytes.
pub fn command_text(template: &[u8]) -> String {
    String::from_utf8_lossy(&template[..template.len().min(COMMAND_KEEP)]).into_owned()
}
