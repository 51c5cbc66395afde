//! What a run measured, as typed values: one [`TestResult`] per test (per step, per backend),
//! the nodes it went over and a sweep's step. The command line renders them (text, CSV, the
//! `--json` document) and `respbench merge` reads documents back into them.

use respbench_core::Stats;

use crate::config::Step;
use crate::cpu::ClientCpu;
use crate::timing::{ClientPauses, ServerTime};
/// The open-loop schedule's figures, at their old path (they are the verdict's input:
/// [`crate::verdict::Schedule`]).
pub use crate::verdict::{Schedule, LATENESS_KEPT_MICROS};
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
    /// The open loop's wake-up grid for this test ([`crate::config::Config::open_slack`]), if any.
    pub slack: Option<std::time::Duration>,
    /// Of the test's clients, how many never ran a request: turned away by the server
    /// (maxclients, a refused handshake) and unable to connect ([`crate::never_ran`]).
    pub never_ran: (u64, u64),
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
    /// What the session noticed about the test (not errors): the verbose report's block and the
    /// JSON carry them; stderr only when it is a terminal.
    pub warnings: Vec<Warning>,
    /// A replay's figures (`--replay`), on its total.
    pub replay: Option<crate::replayed::Figures>,
    /// `--ab`: the target that ran it.
    pub side: Option<Side>,
    /// The server's own execution time for the test's calls, per node (and merged), when read.
    pub server_time: Option<ServerTime>,
    /// The client machine's own pauses during the test, when measured.
    pub pauses: Option<ClientPauses>,
    /// The server's side second by second, every node (`--no-server-probe`: none).
    pub server_series: Option<crate::sampler::ServerSeries>,
    /// Which of the server's threads limited it, from the series.
    pub server_threads: Option<crate::threads::ThreadVerdict>,
    /// `--at`: each event of the test, what it did and what it cost (the total's only).
    pub events: Vec<EventResult>,
    /// `--ramp`: each step's figures and verdict (the total's only).
    pub ramp: Option<crate::ramp::RampResult>,
    /// A scenario's client groups (the total's only): each group's figures, named by its group;
    /// empty for a command line's one group.
    pub groups: Vec<TestResult>,
    /// A scenario group's latency objectives judged on its figures (its `slo`).
    pub slo: Option<crate::objective::Judged>,
}

/// One event of a test (`--at`): what it was, what came of it, and what it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct EventResult {
    /// The event.
    pub event: crate::event::Event,
    /// When it was sent and what came of it.
    pub fired: crate::event::Fired,
    /// Its disruption, from the 100 ms windows (`None`: never sent).
    pub cost: Option<respbench_core::disruption::Disruption>,
    /// Over a cluster: the nodes `MOVED` named as slots' owners in its window.
    pub moved_to: Vec<String>,
}

/// `--ab`'s two targets: A (`-h`/`-p`) and B (`--ab HOST:PORT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The first target, `-h`/`-p` (or `-s`).
    A,
    /// The second, `--ab`.
    B,
}

impl Side {
    /// Its name in the JSON document: `a`, `b`.
    pub fn name(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }

    /// The side a document names.
    pub fn of(name: &str) -> Option<Side> {
        match name {
            "a" => Some(Side::A),
            "b" => Some(Side::B),
            _ => None,
        }
    }
}

/// What a test's figures suggest measuring again differently: a finding, not an error.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    /// What was noticed.
    pub kind: WarningKind,
    /// The sentence for a reader (`GET: 99.0% of the replies were nil: …`).
    pub text: String,
    /// The figures behind it, by name (`nil_share`, `target_rps`, …).
    pub figures: Vec<(&'static str, f64)>,
}

/// The kinds of [`Warning`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WarningKind {
    /// respbench's own CPU limited the test: the figures measure the client.
    ClientLimited,
    /// Most replies were nil: the test measured misses.
    NilReplies,
    /// An open-loop target rate was not reached.
    RateNotMet,
    /// Requests still unanswered after the stop's grace were abandoned.
    Abandoned,
    /// An open-loop test did not keep its schedule ([`Schedule::kept`]).
    ScheduleNotKept,
}

impl WarningKind {
    /// The kind's name in the JSON document.
    pub fn name(self) -> &'static str {
        match self {
            WarningKind::ClientLimited => "client_limited",
            WarningKind::NilReplies => "nil_replies",
            WarningKind::RateNotMet => "rate_not_met",
            WarningKind::Abandoned => "abandoned",
            WarningKind::ScheduleNotKept => "schedule_not_kept",
        }
    }
}

/// Why a result cannot take another run of its test (`respbench merge`): the counts of one of
/// them do not add up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeError {
    /// The test's name.
    pub test: String,
    /// The node whose figures do not add up, when they are one node's (its address).
    pub node: Option<String>,
    /// Why, in the core's words (a count that overflows).
    pub why: String,
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.node {
            Some(node) => write!(f, "test '{}': node {node}: {}", self.test, self.why),
            None => write!(f, "test '{}': {}", self.test, self.why),
        }
    }
}

impl std::error::Error for MergeError {}

impl TestResult {
    /// The test `name` of request template `command` with its `stats`, and nothing else known
    /// yet: no backend, CPU, rate, verdict, step, nodes or warnings.
    pub fn new(name: String, command: String, stats: Stats) -> TestResult {
        TestResult {
            name,
            command,
            backend: None,
            cpu: None,
            target_rps: None,
            slack: None,
            never_ran: (0, 0),
            server_cpu: None,
            verdict: None,
            step: None,
            stats,
            nodes: Vec::new(),
            warnings: Vec::new(),
            replay: None,
            side: None,
            server_time: None,
            pauses: None,
            server_series: None,
            server_threads: None,
            events: Vec::new(),
            ramp: None,
            groups: Vec::new(),
            slo: None,
        }
    }

    /// Adds `e`, the same test run elsewhere at the same time (another load machine, another
    /// worker), to this one: counts and histograms add up, nodes by address, target rates and
    /// client CPU sum, and the busiest server CPU reading stands.
    pub fn merge(&mut self, mut e: TestResult) -> Result<(), MergeError> {
        let acc = self;
        // Nodes are matched by address, not by position: each load machine lists the cluster's
        // nodes in the order it found them.
        let mine = std::mem::take(&mut acc.stats.nodes);
        let theirs = std::mem::take(&mut e.stats.nodes);
        acc.stats.merge(&e.stats).map_err(|why| MergeError { test: e.name.clone(), node: None, why })?;
        acc.stats.nodes = mine;
        for (k, stats) in theirs.into_iter().enumerate() {
            let info = NodeInfo::nth(&e.nodes, k);
            match acc.nodes.iter().position(|n| n.address == info.address) {
                Some(at) => acc.stats.nodes[at].merge(&stats).map_err(|why| MergeError {
                    test: e.name.clone(),
                    node: Some(info.address.clone()),
                    why,
                })?,
                None => {
                    acc.nodes.push(info);
                    acc.stats.nodes.push(stats);
                }
            }
        }
        acc.never_ran = (acc.never_ran.0 + e.never_ran.0, acc.never_ran.1 + e.never_ran.1);
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
        // Each run's own: the server's counts were every run's calls, each machine's pauses its
        // own; a merge does not say them.
        acc.server_time = None;
        acc.pauses = None;
        acc.server_series = None;
        acc.server_threads = None;
        acc.server_cpu = match (acc.server_cpu.take(), e.server_cpu) {
            (Some(a), Some(b)) => Some(if b.cores > a.cores { b } else { a }),
            (a, b) => a.or(b),
        };
        // A scenario's groups, by name: each worker ran its share of every group.
        for g in std::mem::take(&mut e.groups) {
            match acc.groups.iter_mut().find(|a| a.name == g.name) {
                Some(a) => a.merge(g)?,
                None => acc.groups.push(g),
            }
        }
        // A group's objectives hold or not on the figures added up.
        if let Some(j) = &acc.slo {
            acc.slo = Some(crate::objective::Judged::of(&j.objectives, &acc.stats));
        }
        Ok(())
    }
}

impl Schedule {
    /// The schedule of an open-loop test's result; `None` for a closed-loop test, a mix's
    /// command (the total has the figures) or a test that sent nothing.
    pub fn of(e: &TestResult) -> Option<Schedule> {
        Schedule::of_stats(e.target_rps?, &e.stats)
    }
}

/// The values of the swept options at one step of a sweep, as each of its results records them:
/// the result document's `step` object (with the feature `serde`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
