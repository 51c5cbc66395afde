//! The server's seconds over an `--at` event's window and over a capacity step (#51 item 4), in
//! the text (`server over the window: 0.92 cores …`) and the JSON (`events[].server`,
//! `capacity[].steps[].server`): so a reader sees whether the server, and which of its threads,
//! was busy when the event cost latency or the step failed its objective.

use respbench_core::disruption::Disruption;
use respbench_session::result::TestResult;
use respbench_session::server_window::ServerWindow;
use serde::{Deserialize, Serialize};

use crate::hdr::finite;
use crate::shared::thousands;

/// One node's figures over the server seconds that overlap a window, as the JSON has them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerOver {
    /// The node's address.
    pub node: String,
    /// The server seconds covered: from the first overlapping sample's span start, seconds
    /// from the client series' origin…
    pub from_s: f64,
    /// …to its last one's reading.
    pub to_s: f64,
    /// Samples that answered.
    pub samples: u64,
    /// Ticks the server did not answer.
    pub missing: u64,
    /// Commands processed over those seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<u64>,
    /// Their rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_per_sec: Option<f64>,
    /// Cores the server used (mean over the seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cores: Option<f64>,
    /// Its busiest second's cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_peak_cores: Option<f64>,
    /// Its main thread's cores (mean).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub main_thread_cores: Option<f64>,
    /// Its busiest thread's name (a server on this machine)…
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_thread: Option<String>,
    /// …and cores (mean).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_thread_cores: Option<f64>,
    /// A capacity step: the bucket (µs, LATENCY HISTOGRAM) holding p99 of the step's busiest
    /// command at this node, and that command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_command_us: Option<[u64; 2]>,
    /// The command of `p99_command_us`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The unusual seconds among them (`second 6: a fork`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unusual: Vec<String>,
}

/// The figures of `t`'s server series over `[from_s, to_s]`, every node; empty without one.
pub fn over(t: &TestResult, from_s: f64, to_s: f64) -> Vec<ServerOver> {
    let Some(series) = &t.server_series else { return Vec::new() };
    series.window(from_s, to_s).iter().map(entry).collect()
}

/// An `--at` event's figures: the server seconds over its disruption window (from its first
/// 100 ms window to its last: to its recovery, or to the end of the test).
pub fn over_event(t: &TestResult, d: &Disruption) -> Vec<ServerOver> {
    let from = d.from.as_secs_f64();
    over(t, from, from + d.windows as f64 / 10.0)
}

/// Every node's figures in words, one line each (the verbose report's event and step lines).
pub fn lines(all: &[ServerOver]) -> impl Iterator<Item = String> + '_ {
    all.iter().map(move |w| words(w, all.len() > 1))
}

/// A capacity step's figures: its server seconds over the whole step, and each node's p99
/// command time from the step's `LATENCY HISTOGRAM`.
pub fn over_step(t: &TestResult) -> Vec<ServerOver> {
    let mut all = over(t, 0.0, t.stats.duration_secs());
    for w in &mut all {
        let node = t.server_time.as_ref().and_then(|st| st.nodes.iter().find(|n| n.address == w.node));
        let busiest = node.and_then(|n| n.commands.iter().max_by_key(|c| c.calls));
        if let Some((c, (lo, hi))) = busiest.and_then(|c| Some((c, c.bucket_at(99.0)?))) {
            w.p99_command_us = Some([lo, hi]);
            w.command = Some(c.command.clone());
        }
    }
    all
}

fn entry(w: &ServerWindow) -> ServerOver {
    ServerOver {
        node: w.node.clone(),
        from_s: finite(w.from_s),
        to_s: finite(w.to_s),
        samples: w.samples,
        missing: w.missing,
        commands: w.commands,
        ops_per_sec: w.ops_per_sec.map(finite),
        cpu_cores: w.cpu_cores.map(finite),
        cpu_peak_cores: w.cpu_peak_cores.map(finite),
        main_thread_cores: w.main_thread_cores.map(finite),
        busiest_thread: w.busiest_thread.as_ref().map(|b| b.0.clone()),
        busiest_thread_cores: w.busiest_thread.as_ref().map(|b| finite(b.1)),
        p99_command_us: None,
        command: None,
        unusual: w.unusual.clone(),
    }
}

/// In words: `server 127.0.0.1:6379 over 4.0-7.0 s: CPU 92% of a core (peak 98%), main thread
/// 90%, busiest thread io_thd_1 95%, 41,200 commands/s, p99 get 16-32 µs; second 6: a fork; 1
/// sample missing`.
pub fn words(w: &ServerOver, several: bool) -> String {
    let pct = |c: f64| format!("{:.0}%", c * 100.0);
    let node = if several { format!(" {}", w.node) } else { String::new() };
    let mut parts = Vec::new();
    if let Some(c) = w.cpu_cores {
        let peak = w.cpu_peak_cores.map(|p| format!(" (peak {})", pct(p))).unwrap_or_default();
        parts.push(format!("CPU {} of a core{peak}", pct(c)));
    }
    if let Some(m) = w.main_thread_cores {
        parts.push(format!("main thread {}", pct(m)));
    }
    if let (Some(n), Some(c)) = (&w.busiest_thread, w.busiest_thread_cores) {
        parts.push(format!("busiest thread {n} {}", pct(c)));
    }
    if let Some(r) = w.ops_per_sec {
        parts.push(format!("{} commands/s", thousands(r.round() as u64)));
    }
    if let (Some([lo, hi]), Some(c)) = (w.p99_command_us, &w.command) {
        parts.push(format!("p99 {c} {lo}-{hi} µs"));
    }
    let mut line = if w.samples == 0 {
        format!("server{node}: no sample answered in its window")
    } else {
        // A span that began a moment before the origin (the test's start reading) is from 0.0.
        let at = |x: f64| if x.abs() < 0.05 { 0.0 } else { x };
        format!("server{node} over {:.1}-{:.1} s: {}", at(w.from_s), at(w.to_s), parts.join(", "))
    };
    for u in &w.unusual {
        line += &format!("; {u}");
    }
    if w.missing > 0 {
        line += &format!("; {} sample{} missing", w.missing, if w.missing == 1 { "" } else { "s" });
    }
    line
}

/// A window's figures with every field there is (the schema's test).
#[cfg(test)]
pub(crate) fn full() -> ServerOver {
    ServerOver {
        commands: Some(1),
        ops_per_sec: Some(1.0),
        cpu_cores: Some(1.0),
        cpu_peak_cores: Some(1.0),
        main_thread_cores: Some(1.0),
        busiest_thread: Some("io_thd_1".into()),
        busiest_thread_cores: Some(1.0),
        p99_command_us: Some([1, 2]),
        command: Some("get".into()),
        unusual: vec!["second 1: a fork".into()],
        ..ServerOver::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_words() {
        let w = ServerOver {
            node: "127.0.0.1:6379".into(),
            from_s: 4.0,
            to_s: 7.0,
            samples: 3,
            missing: 1,
            ops_per_sec: Some(41_200.4),
            cpu_cores: Some(0.92),
            cpu_peak_cores: Some(0.98),
            main_thread_cores: Some(0.9),
            busiest_thread: Some("io_thd_1".into()),
            busiest_thread_cores: Some(0.95),
            p99_command_us: Some([16, 32]),
            command: Some("get".into()),
            unusual: vec!["second 6: a fork".into()],
            ..ServerOver::default()
        };
        assert_eq!(
            words(&w, false),
            "server over 4.0-7.0 s: CPU 92% of a core (peak 98%), main thread 90%, busiest thread io_thd_1 95%, \
             41,200 commands/s, p99 get 16-32 µs; second 6: a fork; 1 sample missing"
        );
        let none = ServerOver { node: "a:1".into(), missing: 2, ..ServerOver::default() };
        assert_eq!(words(&none, true), "server a:1: no sample answered in its window; 2 samples missing");
    }
}
