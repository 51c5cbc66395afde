//! The real driver over several nodes on virtual time: each client's socket per node against
//! the simulation's scripted cluster (`ClusterServer`, a server per node), with exact counts
//! checked against what each node's server received. Routing by slot, `MOVED` and `ASK`
//! followed and counted, `TRYAGAIN` and `CLUSTERDOWN` retried after their pause, a redirect loop,
//! a primary that dies and its replica promoted, a node that appears, the stop with redirects
//! outstanding, an open-loop rate over the nodes, and a standalone primary with replicas. Each
//! runs on mio's, smol's and uring's ways of waiting (`Shape`), which must agree.
//!
//! The e2e tests in tests/ (cluster_routing.rs, cluster_report.rs) run the same scenarios against
//! real clusters, with wall-clock bounds and counts that can only be bounded.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use respbench_core::cluster::{key_slot, Cluster, Node, Reads, Route, SLOTS};
use respbench_core::template::{KeySpace, Template};
use respbench_core::{
    Budget, ConnConfig, Endpoint, Handshake, OpenLoop, PipelineMode, Plan, Stop, Time, Workload,
};
use respbench_driver::sim::cluster::{ClusterServer, SimNode};
use respbench_driver::sim::{test_run, Action, Happening, Server, Shape, Sim, SimResult};

const GRACE: Duration = Duration::from_secs(2);
/// Every node's time per command.
const SERVICE: Duration = Duration::from_micros(10);
/// The core's first pause before a retry (`Cluster::retry_pause`).
const PAUSE: Duration = Duration::from_millis(10);

fn at_ms(n: u64) -> Time {
    Time::from_micros(n * 1_000)
}

fn endpoint(addr: &str) -> Endpoint {
    let (host, port) = addr.rsplit_once(':').unwrap();
    Endpoint::Tcp { host: host.into(), port: port.parse().unwrap() }
}

/// Three primaries, the slots split evenly: `foo` (slot 12182) is node 2's.
fn three() -> ClusterServer {
    ClusterServer::new(&["127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"])
}

/// The slot map as a client found it at the start.
fn owners(c: &ClusterServer) -> Vec<u16> {
    (0..SLOTS).map(|s| c.owner(s).map_or(u16::MAX, |o| o as u16)).collect()
}

/// A change to the nodes' servers before a run (an outage).
type Tweak = dyn Fn(&mut Vec<(String, Server)>);

/// The options of a test over several nodes, as the command line would set them.
#[derive(Clone)]
struct Opts {
    /// `-n`; `None` with `--duration`.
    n: Option<u64>,
    clients: usize,
    pipeline: u32,
    /// `--pipeline-mode`.
    mode: PipelineMode,
    /// The command, its keys from `keys`.
    command: Vec<&'static [u8]>,
    keys: KeySpace,
    rps: Option<f64>,
    duration: Option<Duration>,
    /// Redis Cluster (`false`: a standalone primary and its replicas).
    redirects: bool,
    reads: Reads,
    /// How many of the cluster's nodes the client found at the start (the rest appear).
    found: Option<usize>,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            n: Some(3000),
            clients: 4,
            pipeline: 2,
            mode: PipelineMode::Window,
            command: vec![b"GET", b"key:__rand_int__"],
            keys: KeySpace::Random { n: 1000 },
            rps: None,
            duration: None,
            redirects: true,
            reads: Reads::Primary,
            found: None,
        }
    }
}

impl Opts {
    /// `foo` only (`-n`, one client, `-P 1`).
    fn foo(n: u64, command: &'static [u8]) -> Opts {
        let mut command = vec![command, b"foo"];
        if command[0] == b"SET" {
            command.push(b"x");
        }
        Opts { n: Some(n), clients: 1, pipeline: 1, command, keys: KeySpace::Literal, ..Opts::default() }
    }

    /// The plan of a test over the nodes of `view`, as discovery found them.
    fn plan(&self, view: &ClusterServer) -> Arc<Plan> {
        let found = self.found.unwrap_or(view.nodes().len());
        let nodes = view.nodes()[..found]
            .iter()
            .map(|n| Node {
                endpoint: endpoint(&n.addr),
                primary: n.replica_of.is_none(),
                primary_index: n.replica_of,
            })
            .collect();
        let template = Template::command(&self.command);
        let route = Route::builtin(self.command[0], self.command.len()).unwrap();
        let hs = Handshake::default();
        let cluster =
            Cluster::new(nodes, owners(view), self.redirects, self.reads, vec![route], &hs).unwrap();
        Arc::new(Plan {
            connections: self.clients as u64,
            cluster: Some(cluster),
            ..Plan::new(
                ConnConfig {
                    handshake: hs,
                    pipeline: self.pipeline,
                    pipeline_mode: self.mode,
                    open_loop: self.rps.map(|rate| OpenLoop { rate, poisson: false, slack: Duration::ZERO }),
                    ..ConnConfig::default()
                },
                Workload { template, keys: self.keys.clone(), mix: None },
                self.n.map_or_else(Budget::unlimited, Budget::new),
                Stop::new(self.duration.map(|d| Time::ZERO + d), GRACE),
            )
        })
    }

    /// The test against the cluster `make` builds (a new one per run), its nodes found as in
    /// `view`, on `shape`; `servers` may change the nodes' servers (an outage). Gives the result
    /// and the cluster's nodes as the run left them.
    fn run_on(
        &self,
        view: &ClusterServer,
        make: &dyn Fn() -> ClusterServer,
        servers: &Tweak,
        shape: Shape,
    ) -> (SimResult, Vec<SimNode>) {
        let shared = Arc::new(Mutex::new(make()));
        let mut nodes = ClusterServer::servers(&shared, SERVICE);
        servers(&mut nodes);
        let r = Sim::nodes(test_run(self.plan(view), self.clients), nodes).shape(shape).record_writes().run();
        let r = r.expect("the run");
        assert_eq!(r.stuck, 0, "{shape:?}: connections left waiting: {r:?}");
        assert_eq!(r.progress.live.load(Ordering::Relaxed), 0, "{shape:?}");
        assert_eq!(r.progress.completed.load(Ordering::Relaxed), r.outcome.stats.requests, "{shape:?}");
        let nodes = shared.lock().unwrap().nodes().to_vec();
        (r, nodes)
    }

    /// The test on mio's, smol's and uring's ways of waiting, which must agree; gives mio's.
    fn run_with(
        &self,
        view: &ClusterServer,
        make: &dyn Fn() -> ClusterServer,
        servers: &Tweak,
    ) -> (SimResult, Vec<SimNode>) {
        let mio = self.run_on(view, make, servers, Shape::Mio);
        for shape in [Shape::Smol, Shape::Uring] {
            let other = self.run_on(view, make, servers, shape);
            assert_eq!(Summary::of(&mio.0), Summary::of(&other.0), "the mio and {shape:?} shapes differ");
            assert_eq!(mio.1, other.1, "the servers saw different runs on mio and {shape:?}");
        }
        mio
    }

    fn run(&self, view: &ClusterServer, make: &dyn Fn() -> ClusterServer) -> (SimResult, Vec<SimNode>) {
        self.run_with(view, make, &|_| {})
    }
}

/// What must not depend on how a backend waits.
#[derive(Debug, PartialEq)]
struct Summary {
    failures: String,
    counts: [u64; 6],
    redirects: String,
    nodes: Vec<(u64, u64)>,
    moved: Vec<u16>,
    appeared: Vec<Endpoint>,
    per_server: Vec<u64>,
    end: Time,
    log: Vec<(Time, u64, Happening)>,
}

impl Summary {
    fn of(r: &SimResult) -> Summary {
        let s = &r.outcome.stats;
        let mut log = r.log.clone();
        log.sort_by_key(|(t, c, _)| (*t, *c));
        Summary {
            failures: format!("{:?}", r.outcome.failures),
            counts: [s.requests, s.abandoned, s.errors.total(), s.lost, r.commands, r.accepted],
            redirects: format!("{:?}", s.redirects),
            nodes: s.nodes.iter().map(|n| (n.requests, n.redirects.total())).collect(),
            moved: s.moved.keys().copied().collect(),
            appeared: s.appeared.clone(),
            per_server: r.per_server.clone(),
            end: r.end,
            log,
        }
    }
}

/// Each node's requests as the client counted them are what its server served: its calls less
/// the redirects it answered, the `ASKING`s it read, and `extra` (by node: `READONLY`s, commands
/// `u64::MAX`: the caller checks that node).
fn served_is_counted(r: &SimResult, nodes: &[SimNode], extra: &[u64]) {
    let s = &r.outcome.stats;
    for (i, n) in nodes.iter().enumerate() {
        let Some(k) = (i < s.nodes.len()).then_some(i) else { continue };
        if extra.get(i) == Some(&u64::MAX) {
            continue;
        }
        let redirected = n.moved + n.ask + n.tryagain + n.clusterdown;
        let extra = n.asking + extra.get(i).copied().unwrap_or(0);
        assert_eq!(s.nodes[k].requests, n.calls - redirected - extra, "node {i}: {n:?}");
        assert_eq!(s.nodes[k].redirects.total(), redirected, "node {i}: {n:?}");
    }
}

/// The e2e `requests_go_to_the_primary_of_their_slot` and `per_node_figures_add_up`: no
/// redirects, each node's count exactly what its server read.
#[test]
fn requests_go_to_the_node_of_their_slot() {
    let (r, nodes) = Opts::default().run(&three(), &three);
    let s = &r.outcome.stats;
    assert_eq!(s.requests, 3000);
    assert_eq!(s.redirects.total(), 0);
    assert_eq!(s.errors.total(), 0);
    served_is_counted(&r, &nodes, &[]);
    assert_eq!(nodes.iter().map(|n| n.calls).sum::<u64>(), 3000);
    assert_eq!(s.nodes.iter().map(|n| n.requests).sum::<u64>(), 3000);
    assert!(s.nodes[..3].iter().all(|n| n.requests > 800), "{:?}", Summary::of(&r).nodes);
    // Four clients, a socket to each of the three nodes; the room for nodes that may appear
    // opened nothing.
    assert_eq!(r.accepted, 12);
    assert!(s.appeared.is_empty() && s.moved.is_empty());
}

/// `-P 16` in batch mode spans a client's nodes: a batch goes out at one instant, a write per
/// node, and the next only when every node has answered its part; `-n` stays exact with a last
/// batch of 4. A window refills each node as its own replies land.
#[test]
fn a_batch_spans_the_nodes_and_waits_for_all_of_them() {
    let batch = Opts { n: Some(100), clients: 1, pipeline: 16, mode: PipelineMode::Batch, ..Opts::default() };
    let (r, _) = batch.run(&three(), &three);
    assert_eq!(r.outcome.stats.requests, 100);
    let mut rounds: Vec<(Time, u64, usize)> = Vec::new();
    for w in &r.writes {
        match rounds.last_mut() {
            Some((at, n, writes)) if *at == w.at => {
                *n += w.commands;
                *writes += 1;
            }
            _ => rounds.push((w.at, w.commands, 1)),
        }
    }
    let sizes: Vec<u64> = rounds.iter().map(|r| r.1).collect();
    assert_eq!(sizes, [16, 16, 16, 16, 16, 16, 4], "{:?}", r.writes);
    assert!(rounds.iter().all(|r| r.2 <= 3), "at most a write per node a batch: {rounds:?}");
    let window = Opts { mode: PipelineMode::Window, ..batch };
    let (r, _) = window.run(&three(), &three);
    assert_eq!(r.outcome.stats.requests, 100);
    assert!(r.writes.len() > 7 * 3, "a window writes more often: {:?}", r.writes);
}

/// The e2e `a_slot_migrated_mid_run` (its `MOVED` part), and core's `routing_tests`: a client
/// whose map is out of date follows each `MOVED` once per slot and counts it, not as a request.
#[test]
fn moved_is_followed_once_per_slot_and_counted() {
    let make = || {
        let mut c = three();
        c.assign(0, 999, Some(1));
        c
    };
    let opts = Opts { n: Some(2000), clients: 1, pipeline: 1, ..Opts::default() };
    let (r, nodes) = opts.run(&three(), &make);
    let s = &r.outcome.stats;
    assert_eq!((s.requests, s.errors.total()), (2000, 0));
    assert!(s.redirects.moved > 0);
    assert_eq!(s.redirects.moved, nodes[0].moved);
    assert_eq!(s.nodes[0].redirects.moved, nodes[0].moved);
    assert_eq!((s.redirects.ask, s.redirects.tryagain, s.redirects.clusterdown), (0, 0, 0));
    // One client, one request at a time: each slot moved once, then went straight to its owner.
    assert_eq!(s.moved.len() as u64, s.redirects.moved);
    let to = endpoint("127.0.0.1:7001");
    assert!(s.moved.iter().all(|(&slot, (_, e))| slot < 1000 && *e == to), "{:?}", s.moved);
    served_is_counted(&r, &nodes, &[]);
    // The slot counts at the end: the start's map with the MOVEDs the client met.
    let c = opts.plan(&three());
    let cluster = c.cluster.as_ref().unwrap();
    let (ends, counts) = cluster.at_end(s);
    let m = s.moved.len() as u64;
    assert_eq!(ends.len(), 3);
    assert_eq!(counts, [5462 - m, 5461 + m, 5461]);
}

/// The e2e `a_slot_migrated_mid_run` (its `ASK` phase, then the migration's end): `ASK` is
/// followed with `ASKING` at the target, as many as there were `ASK`s; the map does not change
/// until the owner says `MOVED`.
#[test]
fn ask_is_followed_with_asking_then_moved_when_the_migration_ends() {
    let make = || {
        let mut c = three();
        c.migrate(12182, 1);
        c.at(at_ms(20), |c| c.assign(12182, 12182, Some(1)));
        c
    };
    let opts = Opts { n: Some(3000), clients: 2, pipeline: 2, ..Opts::foo(0, b"SET") };
    let (r, nodes) = opts.run(&three(), &make);
    let s = &r.outcome.stats;
    assert_eq!((s.requests, s.errors.total()), (3000, 0));
    assert!(s.redirects.ask > 0 && s.redirects.moved > 0, "{:?}", s.redirects);
    assert_eq!(s.redirects.ask, nodes[2].ask);
    assert_eq!(nodes[1].asking, nodes[2].ask, "an ASKING for each ASK");
    assert_eq!(s.redirects.moved, nodes[2].moved);
    assert_eq!(s.nodes[2].redirects.total(), nodes[2].ask + nodes[2].moved);
    served_is_counted(&r, &nodes, &[]);
    assert_eq!(s.nodes[1].requests + s.nodes[2].requests, 3000);
    // Each client learnt the slot's new owner from one MOVED.
    assert_eq!(s.redirects.moved, 2);
    let (_, counts) = opts.plan(&three()).cluster.as_ref().unwrap().at_end(s);
    assert_eq!(counts, [5462, 5462, 5460]);
}

/// The core's pause before retry number `k` (from 1): `Cluster::retry_pause` (10 ms) doubled
/// `k - 1` times, at most 64 times it: 10 ms, 20 ms, …, 640 ms.
fn pause(k: u32) -> Duration {
    PAUSE * (1 << (k - 1).min(6))
}

/// `TRYAGAIN` three times, then served: the request waits the three pauses; counted as
/// redirects, not requests.
#[test]
fn tryagain_is_retried_after_the_pause() {
    let make = || {
        let mut c = three();
        c.try_again(12182, 3);
        c
    };
    let (r, nodes) = Opts::foo(3, b"GET").run(&three(), &make);
    let s = &r.outcome.stats;
    assert_eq!((s.requests, s.errors.total(), s.redirects.tryagain), (3, 0, 3));
    assert_eq!(nodes[2].tryagain, 3);
    // Six commands one after another, and the pauses after the first three answers.
    let end = Time::ZERO + SERVICE * 6 + pause(1) + pause(2) + pause(3);
    assert_eq!(r.end, end);
}

/// A slot no node serves: `CLUSTERDOWN` 16 times, each after its pause, then the error.
#[test]
fn clusterdown_is_retried_sixteen_times_then_the_error() {
    let make = || {
        let mut c = three();
        c.assign(12182, 12182, None);
        c
    };
    let (r, nodes) = Opts::foo(2, b"GET").run(&three(), &make);
    let s = &r.outcome.stats;
    assert_eq!((s.requests, s.errors.total(), s.redirects.clusterdown), (2, 2, 32));
    assert_eq!(s.errors.kinds()[0].prefix, "CLUSTERDOWN");
    assert_eq!(nodes[2].clusterdown, 32);
    let pauses: Duration = (1..16).map(pause).sum();
    assert_eq!(r.end, Time::ZERO + SERVICE * 32 + pauses * 2);
}

/// core's `a_request_redirected_forever_ends_as_an_error`: two nodes that send each other the
/// slot; after 16 attempts each request completes as the `MOVED` error.
#[test]
fn a_redirect_loop_ends_as_an_error() {
    let view = ClusterServer::new(&["127.0.0.1:7000", "127.0.0.1:7001"]);
    let bouncer = |other: &'static str| {
        Server::new(SERVICE, move |c| {
            Action::Reply(format!("-MOVED {} {other}\r\n", key_slot(&c.args[1])).into_bytes())
        })
    };
    let opts = Opts { n: Some(20), clients: 1, pipeline: 1, ..Opts::default() };
    let mut mio = None;
    for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
        let plan = opts.plan(&view);
        let servers = vec![
            ("127.0.0.1:7000".into(), bouncer("127.0.0.1:7001")),
            ("127.0.0.1:7001".into(), bouncer("127.0.0.1:7000")),
        ];
        let r = Sim::nodes(test_run(plan, 1), servers).shape(shape).run().unwrap();
        assert_eq!(r.stuck, 0);
        let sum = Summary::of(&r);
        assert_eq!(*mio.get_or_insert_with(|| Summary::of(&r)), sum, "{shape:?}");
        let s = &r.outcome.stats;
        assert_eq!((s.requests, s.errors.total(), s.redirects.moved), (20, 20, 20 * 16));
        assert_eq!(s.errors.kinds()[0].prefix, "MOVED");
        assert_eq!(r.per_server, [160, 160], "eight attempts at each");
        assert_eq!(s.nodes[0].redirects.moved + s.nodes[1].redirects.moved, 320);
    }
}

/// The e2e `a_killed_primary_mid_run` and `a_manual_failover_mid_run`: node 2 dies at 5 ms (its
/// sockets reset, its connects refused); its requests in flight are lost (`connection` errors);
/// the rest of its slots go to a live primary, which redirects them to the dead node until its
/// replica (node 3) is promoted at 30 ms, then to the replica: the run completes.
#[test]
fn a_primary_dies_and_its_replica_takes_over() {
    let make = || {
        let mut c = three();
        c.add_replica("127.0.0.1:7003", 2);
        c.at(at_ms(5), |c| c.kill(2));
        c.at(at_ms(30), |c| c.failover(3));
        c
    };
    let outage = |s: &mut Vec<(String, Server)>| s[2].1.outages = vec![(at_ms(5), Time::MAX)];
    let opts = Opts { n: Some(20_000), clients: 2, pipeline: 4, ..Opts::default() };
    let (r, nodes) = opts.run_with(&make(), &make, &outage);
    let s = &r.outcome.stats;
    // One connection of each client failed: node 2's.
    assert_eq!(r.outcome.failures.len(), 1, "{:?}", r.outcome.failures);
    assert_eq!(r.outcome.failures[0].1, 2);
    assert!(r.outcome.failures[0].0.to_string().contains("reset"), "{}", r.outcome.failures[0].0);
    assert!(s.lost > 0);
    assert_eq!(s.errors.total(), s.lost, "only the lost ones are errors");
    assert_eq!(s.errors.kinds()[0].prefix, "connection");
    assert_eq!(s.requests + s.lost, 20_000, "every request completed but the lost ones");
    assert!(s.nodes[3].requests > 0, "the promoted replica served none");
    assert!(s.redirects.moved > 0);
    // The replica's READONLY, one per client, is a call too.
    served_is_counted(&r, &nodes, &[0, 0, u64::MAX, 2]);
    // The dead node served what the clients counted; the lost requests are those it read and
    // whose answers went with the reset, and those written at the instant it died (the client
    // had not seen the reset yet) that it never read.
    assert_eq!(
        (nodes[2].moved, s.nodes[2].redirects.total()),
        (0, 0),
        "a primary redirects none of its own slots"
    );
    let unanswered = nodes[2].calls - s.nodes[2].requests;
    assert!(unanswered > 0 && unanswered <= s.lost, "{unanswered} read and unanswered, {} lost", s.lost);
    assert!(r.end > at_ms(30));
}

/// The e2e `a_node_added_mid_run`: node 3 is given node 2's slots at 5 ms; a client opens its
/// socket to it only when a redirect names it, and its figures go under `Stats::appeared`.
#[test]
fn a_node_that_appears_gets_a_socket_when_a_redirect_names_it() {
    let make = || {
        let mut c = three();
        let new = c.add_node("127.0.0.1:7003");
        c.at(at_ms(5), move |c| c.assign(10923, 16383, Some(new)));
        c
    };
    let opts = Opts { n: Some(20_000), clients: 2, ..Opts::default() };
    let (r, nodes) = opts.run(&three(), &make);
    let s = &r.outcome.stats;
    assert_eq!((s.requests, s.errors.total()), (20_000, 0));
    assert_eq!(s.appeared, [endpoint("127.0.0.1:7003")]);
    assert!(s.nodes[3].requests > 0);
    served_is_counted(&r, &nodes, &[]);
    assert_eq!(s.redirects.moved, nodes[2].moved);
    // Two clients, three sockets each, then one to the new node each; the other spare rooms
    // opened nothing.
    assert_eq!(r.accepted, 8);
    let per_client = 3 + respbench_core::cluster::SPARE_NODES as u64;
    for c in 0..2 {
        let opened = r.times(c * per_client + 3, Happening::Connect);
        assert_eq!(opened.len(), 1, "client {c}");
        assert!(opened[0] >= at_ms(5), "client {c} opened it at {:?}", opened[0]);
        for k in 4..per_client {
            assert!(r.times(c * per_client + k, Happening::Connect).is_empty());
        }
    }
    let (ends, counts) = opts.plan(&three()).cluster.as_ref().unwrap().at_end(s);
    let m = s.moved.len() as u64;
    assert_eq!(ends.len(), 4);
    assert_eq!(counts, [5462, 5461, 5461 - m, m]);
}

/// The stop with redirects outstanding: a slot that keeps migrating (`ASK` for every request);
/// the `ASK`s that come back after the stop are not followed, and count as abandoned.
#[test]
fn the_stop_abandons_the_redirects_outstanding() {
    let make = || {
        let mut c = three();
        c.migrate(12182, 1);
        c
    };
    let opts =
        Opts { n: None, duration: Some(Duration::from_millis(1)), pipeline: 4, ..Opts::foo(0, b"GET") };
    let (r, nodes) = opts.run(&three(), &make);
    let s = &r.outcome.stats;
    assert!(s.abandoned > 0 && s.requests > 0, "{} {}", s.abandoned, s.requests);
    assert_eq!(s.redirects.ask, nodes[2].ask, "every ASK counted, those after the stop too");
    // Every request was asked to go elsewhere; those that went completed.
    assert_eq!(nodes[2].ask, s.requests + s.abandoned);
    assert_eq!(nodes[1].asking, s.requests);
    assert_eq!(s.errors.total(), 0);
}

impl Opts {
    /// `--rps 1000 --duration 2s -c 6 -P 1`: 2000 arrivals over the nodes.
    fn rps_1000_over_six() -> Opts {
        Opts {
            n: None,
            clients: 6,
            pipeline: 1,
            rps: Some(1000.0),
            duration: Some(Duration::from_secs(2)),
            ..Opts::default()
        }
    }
}

/// The e2e `an_open_loop_rate_over_a_cluster`: `--rps 1000` over six clients and three nodes
/// for 2 s sends exactly 2000, each node's count what its server read.
#[test]
fn an_open_loop_rate_over_several_nodes_is_exact() {
    let opts = Opts::rps_1000_over_six();
    let (r, nodes) = opts.run(&three(), &three);
    let s = &r.outcome.stats;
    assert_eq!(s.requests, 2000);
    // Every arrival of the schedule completed: none abandoned, none unsent.
    assert_eq!((s.abandoned, s.unsent, s.lower_bounds, s.arrivals()), (0, 0, 0, 2000));
    assert_eq!(nodes.iter().map(|n| n.calls).sum::<u64>(), 2000);
    served_is_counted(&r, &nodes, &[]);
    assert_eq!(s.redirects.total(), 0);
}

/// Issue #24 over a cluster: `--rps 1000` over six clients and three nodes for 2 s, node 1's
/// path dead from 0.5 s to the end. The requests for its slots that queued in the clients
/// behind the dead connection were never sent: every arrival is completed, abandoned or
/// unsent, exactly, and the unanswered ones are in the histogram as lower bounds.
#[test]
fn a_node_stalled_to_the_end_leaves_no_arrival_unaccounted() {
    let stall = |s: &mut Vec<(String, Server)>| s[1].1.stalls = vec![(at_ms(500), Time::MAX)];
    let opts = Opts::rps_1000_over_six();
    let (r, _) = opts.run_with(&three(), &three, &stall);
    let s = &r.outcome.stats;
    let counts = (s.requests, s.lost, s.abandoned, s.unsent, s.lower_bounds);
    assert_eq!(s.arrivals(), 2000, "{counts:?}");
    assert_eq!(s.requests + s.lost + s.abandoned + s.unsent, 2000, "{counts:?}");
    assert_eq!(s.lower_bounds, s.abandoned + s.unsent);
    assert_eq!(s.latency.len(), s.requests + s.abandoned + s.unsent);
    // What went before 0.5 s was answered; after it, each client waited on node 1 (one request
    // in flight each) and most of the schedule was never sent.
    assert!((490..=510).contains(&s.requests) && s.unsent > 1400, "{counts:?}");
}

/// The e2e `the_read_write_split`: a standalone primary and two replicas, no redirects; reads go
/// round robin to the replicas, writes to the primary.
#[test]
fn a_standalone_primary_with_replicas_splits_reads_and_writes() {
    let mut view = ClusterServer::new(&["127.0.0.1:6379"]);
    view.add_replica("127.0.0.1:6380", 0);
    view.add_replica("127.0.0.1:6381", 0);
    let servers = || {
        ["127.0.0.1:6379", "127.0.0.1:6380", "127.0.0.1:6381"]
            .map(|a| (a.to_string(), Server::replying(b"+OK\r\n", SERVICE)))
            .to_vec()
    };
    for (command, write) in [(&b"GET"[..], false), (&b"SET"[..], true)] {
        let mut cmd: Vec<&'static [u8]> = vec![if write { b"SET" } else { b"GET" }, b"key:__rand_int__"];
        if write {
            cmd.push(b"x");
        }
        let opts =
            Opts { command: cmd, redirects: false, reads: Reads::Replicas, n: Some(2000), ..Opts::default() };
        let mut mio = None;
        for shape in [Shape::Mio, Shape::Smol, Shape::Uring] {
            let r =
                Sim::nodes(test_run(opts.plan(&view), opts.clients), servers()).shape(shape).run().unwrap();
            assert_eq!(r.stuck, 0);
            let sum = Summary::of(&r);
            assert_eq!(*mio.get_or_insert_with(|| Summary::of(&r)), sum, "{shape:?}");
            let s = &r.outcome.stats;
            assert_eq!((s.requests, s.redirects.total(), s.errors.total()), (2000, 0, 0));
            // No room for nodes that appear without a cluster: three sockets per client.
            assert_eq!(r.accepted, 12);
            let served: Vec<u64> = s.nodes.iter().map(|n| n.requests).collect();
            assert_eq!(served, r.per_server, "{}", String::from_utf8_lossy(command));
            if write {
                assert_eq!(r.per_server, [2000, 0, 0]);
            } else {
                let [p, a, b] = r.per_server[..] else { panic!() };
                assert_eq!((p, a + b), (0, 2000));
                assert!(a.abs_diff(b) <= opts.clients as u64, "round robin: {a} and {b}");
            }
        }
    }
}

/// Three primaries and a replica of each (nodes 3, 4, 5 of 0, 1, 2).
fn six() -> ClusterServer {
    let mut c = three();
    for p in 0..3 {
        c.add_replica(&format!("127.0.0.1:{}", 7003 + p), p);
    }
    c
}

/// The e2e `cluster_reads_from_replicas`: with reads to replicas, a cluster replica serves its
/// primary's reads after the `READONLY` of its handshake; writes go to the primaries.
#[test]
fn cluster_reads_go_to_replicas_after_readonly() {
    for write in [false, true] {
        let command: Vec<&'static [u8]> =
            if write { vec![b"SET", b"key:__rand_int__", b"x"] } else { vec![b"GET", b"key:__rand_int__"] };
        let opts = Opts { command, reads: Reads::Replicas, ..Opts::default() };
        let (r, nodes) = opts.run(&six(), &six);
        let s = &r.outcome.stats;
        assert_eq!((s.requests, s.redirects.total(), s.errors.total()), (3000, 0, 0));
        // Each replica read the READONLY of each of the four clients.
        served_is_counted(&r, &nodes, &[0, 0, 0, 4, 4, 4]);
        // Each replica socket's first write is its READONLY alone: no read went before its
        // reply (#56 item 3).
        for server in 3..6 {
            let mut first = std::collections::BTreeMap::new();
            for w in r.writes.iter().filter(|w| w.server == server) {
                first.entry(w.conn).or_insert(w.commands);
            }
            assert_eq!(first.len(), 4, "replica {server}: {first:?}");
            assert!(first.values().all(|&n| n == 1), "replica {server}'s first writes: {first:?}");
        }
        let primaries: u64 = s.nodes[..3].iter().map(|n| n.requests).sum();
        let replicas: Vec<u64> = nodes[3..].iter().map(|n| n.replica_reads).collect();
        if write {
            assert_eq!((primaries, replicas), (3000, vec![0, 0, 0]));
        } else {
            assert_eq!((primaries, replicas.iter().sum::<u64>()), (0, 3000));
            assert!(replicas.iter().all(|&n| n > 800), "{replicas:?}");
        }
    }
}

/// The e2e `a_manual_failover_mid_run`: node 5 takes over node 2's slots at 5 ms, node 2
/// following it; node 2 then answers its old slots' writes `MOVED`, and the run completes with
/// no error.
#[test]
fn a_manual_failover_moves_the_writes_to_the_promoted_replica() {
    let make = || {
        let mut c = six();
        c.at(at_ms(5), |c| c.failover(5));
        c
    };
    let opts = Opts { n: Some(20_000), command: vec![b"SET", b"key:__rand_int__", b"x"], ..Opts::default() };
    let (r, nodes) = opts.run(&six(), &make);
    let s = &r.outcome.stats;
    assert_eq!((s.requests, s.errors.total()), (20_000, 0));
    assert!(r.outcome.failures.is_empty(), "{:?}", r.outcome.failures);
    assert!(s.redirects.moved > 0 && s.nodes[5].requests > 0);
    assert_eq!(s.redirects.moved, nodes[2].moved);
    served_is_counted(&r, &nodes, &[0, 0, 0, 4, 4, 4]);
    let to = endpoint("127.0.0.1:7005");
    assert!(s.moved.values().all(|(_, e)| *e == to));
}

/// A primary that dies with no replica to take over: its requests in flight are lost, and each
/// later request for its slots goes to a live primary, which sends it to the dead node; after
/// 16 attempts it completes as the `MOVED` error. The other slots' requests complete.
#[test]
fn a_primary_that_dies_with_no_replica_ends_its_slots_requests_as_errors() {
    let make = || {
        let mut c = three();
        c.at(at_ms(5), |c| c.kill(2));
        c
    };
    let outage = |s: &mut Vec<(String, Server)>| s[2].1.outages = vec![(at_ms(5), Time::MAX)];
    let opts = Opts { n: Some(2000), clients: 2, pipeline: 4, ..Opts::default() };
    let (r, nodes) = opts.run_with(&three(), &make, &outage);
    let s = &r.outcome.stats;
    let errors = |prefix: &str| s.errors.kinds().iter().find(|k| k.prefix == prefix).map_or(0, |k| k.count);
    let moved = errors("MOVED");
    assert!(s.lost > 0 && moved > 0, "{:?}", s.errors);
    assert_eq!(errors("connection"), s.lost);
    assert_eq!(s.errors.total(), s.lost + moved);
    assert_eq!(s.requests + s.lost, 2000);
    // Each such request was sent away 16 times, by the live primaries only.
    assert_eq!(s.redirects.moved, 16 * moved);
    assert_eq!(nodes[0].moved + nodes[1].moved, 16 * moved);
    // A live primary's calls: served, or answered MOVED; the last MOVED of a request also
    // completes it, as its error.
    let calls = nodes[0].calls + nodes[1].calls;
    assert_eq!(calls + moved, s.nodes[0].requests + s.nodes[1].requests + s.redirects.moved);
    assert_eq!(nodes[2].moved, 0);
    let pauses: Duration = (1..16).map(pause).sum();
    assert!(r.end > at_ms(5) + pauses);
}
