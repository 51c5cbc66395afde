//! `tests[].server_series` and `tests[].server_sampling` (#51): the server's side of a test,
//! second by second, every node, and what reading it cost.

use respbench_session::sampler;
use respbench_session::threads::ThreadVerdict;
use serde::{Deserialize, Serialize};

use crate::hdr::finite;

/// One sample of one node: deltas since its previous reading that answered, gauges as read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerSample {
    /// The node's address.
    pub node: String,
    /// The client's second (the `series`' origin) its last interval lies in.
    pub second: u64,
    /// When it was read, seconds from the client series' origin (negative before it).
    pub at_s: f64,
    /// Seconds since the node's previous reading that answered (0 at the start).
    pub span_s: f64,
    /// `start` or `end`: the readings at the test's edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
    /// Why there is no reading at this tick (the next sample's deltas cover its time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// Commands processed since the previous reading (`total_commands_processed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<u64>,
    /// `keyspace_hits` since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hits: Option<u64>,
    /// `keyspace_misses` since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub misses: Option<u64>,
    /// `evicted_keys` since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted: Option<u64>,
    /// `expired_keys` since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expired: Option<u64>,
    /// `rejected_connections` since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_connections: Option<u64>,
    /// `total_forks` since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forks: Option<u64>,
    /// Commands per second over the span.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_per_sec: Option<f64>,
    /// Cores the server used over the span (`used_cpu_sys` + `used_cpu_user`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cores: Option<f64>,
    /// Cores its main thread used (`used_cpu_*_main_thread`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub main_thread_cores: Option<f64>,
    /// Cores it used in the kernel (`used_cpu_sys`); its user time is `cpu_cores` less this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sys_cores: Option<f64>,
    /// `used_memory`, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_memory: Option<u64>,
    /// `used_memory_rss`, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_memory_rss: Option<u64>,
    /// `mem_fragmentation_ratio`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<f64>,
    /// `connected_clients`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected_clients: Option<u64>,
    /// `blocked_clients`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_clients: Option<u64>,
    /// `latest_fork_usec`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_fork_usec: Option<u64>,
    /// `rdb_bgsave_in_progress:1`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bgsave_in_progress: bool,
    /// `aof_rewrite_in_progress:1`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub aof_rewrite_in_progress: bool,
    /// `master_repl_offset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repl_offset: Option<u64>,
    /// The most lagging replica's `lag`, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_lag_max: Option<u64>,
    /// What was unusual, in words (a fork, evictions, a missing sample).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unusual: Vec<String>,
    /// A local server's threads over the span.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ServerThread>,
}

/// One thread of a local server over a sample's span.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerThread {
    /// Its name (`redis-server`, `io_thd_1`).
    pub name: String,
    /// Its id.
    pub tid: u64,
    /// Cores it used.
    pub cores: f64,
}

/// `server_sampling`: the sampling's interval and cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerSampling {
    /// `--server-interval`, seconds.
    pub interval_s: f64,
    /// `INFO` commands sent (in the server's `total_commands_processed`, so in `commands`).
    pub info_calls: u64,
    /// Bytes of replies read.
    pub bytes_read: u64,
    /// Connections opened or tried (in the server's `total_connections_received`).
    pub connections: u64,
    /// CPU the sampling used on the client, seconds (left out of `client_cpu`).
    pub cpu_s: f64,
}

/// `server_threads`: which of the server's threads limited it (#51 item 3).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerThreads {
    /// `main_thread`, `io_threads`, `neither` or `unknown`.
    pub limit: String,
    /// The node (over several, the one with the busiest thread).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The busiest thread's name (from INFO: `main thread` or `other threads together`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest: Option<String>,
    /// Its cores over the test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_cores: Option<f64>,
    /// The main thread's cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub main_thread_cores: Option<f64>,
    /// Every other thread's together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_cores: Option<f64>,
    /// `/proc` or `INFO`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The sentence (also at the end of the bottleneck's).
    pub text: String,
}

/// A sample with every field there is (the schema's test).
impl From<&sampler::ServerSeries> for ServerSampling {
    /// The `server_sampling` object: what reading the server cost.
    fn from(s: &sampler::ServerSeries) -> ServerSampling {
        ServerSampling {
            interval_s: s.interval.as_secs_f64(),
            info_calls: s.cost.info_calls,
            bytes_read: s.cost.bytes_read,
            connections: s.cost.connections,
            cpu_s: finite(s.cost.user_s + s.cost.sys_s),
        }
    }
}

impl From<&sampler::ServerSample> for ServerSample {
    /// One sample of the `server_series`.
    fn from(s: &sampler::ServerSample) -> ServerSample {
        ServerSample {
            node: s.node.clone(),
            second: s.second,
            at_s: finite(s.at_s),
            span_s: finite(s.span_s),
            edge: s.edge.map(|e| e.name().to_string()),
            missing: s.missing.clone(),
            commands: s.deltas.commands,
            hits: s.deltas.hits,
            misses: s.deltas.misses,
            evicted: s.deltas.evicted,
            expired: s.deltas.expired,
            rejected_connections: s.deltas.rejected,
            forks: s.deltas.forks,
            ops_per_sec: s.ops_per_sec.map(finite),
            cpu_cores: s.cpu_cores.map(finite),
            main_thread_cores: s.main_thread_cores.map(finite),
            sys_cores: s.sys_cores.map(finite),
            used_memory: s.gauges.used_memory,
            used_memory_rss: s.gauges.rss,
            fragmentation: s.gauges.fragmentation.map(finite),
            connected_clients: s.gauges.connected_clients,
            blocked_clients: s.gauges.blocked_clients,
            latest_fork_usec: s.gauges.latest_fork_usec,
            bgsave_in_progress: s.gauges.bgsave,
            aof_rewrite_in_progress: s.gauges.aof_rewrite,
            repl_offset: s.gauges.repl_offset,
            replica_lag_max: s.gauges.replica_lag_max,
            unusual: s.unusual(),
            threads: s
                .threads
                .iter()
                .map(|t| ServerThread { name: t.name.clone(), tid: u64::from(t.tid), cores: finite(t.cores) })
                .collect(),
        }
    }
}

impl From<&ThreadVerdict> for ServerThreads {
    /// The `server_threads` object.
    fn from(v: &ThreadVerdict) -> ServerThreads {
        ServerThreads {
            limit: v.limit.name().into(),
            node: v.node.clone(),
            busiest: v.busiest.as_ref().map(|b| b.0.clone()),
            busiest_cores: v.busiest.as_ref().map(|b| finite(b.1)),
            main_thread_cores: v.main_cores.map(finite),
            other_cores: v.other_cores.map(finite),
            source: v.source.map(str::to_string),
            text: v.text.clone(),
        }
    }
}

#[cfg(test)]
pub(super) fn full_sample() -> ServerSample {
    let n = Some(1);
    ServerSample {
        edge: Some("end".into()),
        missing: Some("m".into()),
        commands: n,
        hits: n,
        misses: n,
        evicted: n,
        expired: n,
        rejected_connections: n,
        forks: n,
        ops_per_sec: Some(1.0),
        cpu_cores: Some(1.0),
        main_thread_cores: Some(1.0),
        sys_cores: Some(1.0),
        used_memory: n,
        used_memory_rss: n,
        fragmentation: Some(1.0),
        connected_clients: n,
        blocked_clients: n,
        latest_fork_usec: n,
        bgsave_in_progress: true,
        aof_rewrite_in_progress: true,
        repl_offset: n,
        replica_lag_max: n,
        unusual: vec!["a fork".into()],
        threads: vec![ServerThread::default()],
        ..ServerSample::default()
    }
}
