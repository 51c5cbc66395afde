//! A test's server series (#51) as the document's `server_series` and `server_sampling`.

use respbench_session::sampler::{ServerSample, ServerSeries};
use respbench_session::threads::ThreadVerdict;

use crate::doc;
use crate::hdr::finite;

/// The JSON's `server_series` and `server_sampling` of a test; `None` without.
pub fn entries(s: Option<&ServerSeries>) -> (Option<Vec<doc::ServerSample>>, Option<doc::ServerSampling>) {
    let Some(s) = s else { return (None, None) };
    let cost = doc::ServerSampling {
        interval_s: s.interval.as_secs_f64(),
        info_calls: s.cost.info_calls,
        bytes_read: s.cost.bytes_read,
        connections: s.cost.connections,
        cpu_s: finite(s.cost.user_s + s.cost.sys_s),
    };
    (Some(s.samples.iter().map(sample).collect()), Some(cost))
}

fn sample(s: &ServerSample) -> doc::ServerSample {
    doc::ServerSample {
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
            .map(|t| doc::ServerThread {
                name: t.name.clone(),
                tid: u64::from(t.tid),
                cores: finite(t.cores),
            })
            .collect(),
    }
}

/// The JSON's `server_threads`.
pub fn threads(v: &ThreadVerdict) -> doc::ServerThreads {
    doc::ServerThreads {
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
