//! The server's seconds over a window of a test (#51 item 4): what the server did while an
//! `--at` event disrupted the test, or over a capacity step, from the test's per-second server
//! series. Each node's samples whose span overlaps the window are summed: commands per second,
//! cores (mean over the spans and the highest second), the main thread's, the busiest thread's
//! (a server on this machine), the unusual seconds named, and the samples the server did not
//! answer (counted, never read as zeros).

use crate::sampler::ServerSeries;

/// One node's figures over the server seconds that overlap a window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerWindow {
    /// The node's address.
    pub node: String,
    /// The first overlapping sample's span start, seconds from the client series' origin.
    pub from_s: f64,
    /// The last overlapping sample's reading, seconds from the same origin.
    pub to_s: f64,
    /// Samples that answered and overlap the window.
    pub samples: u64,
    /// Ticks in the window the server did not answer.
    pub missing: u64,
    /// Commands processed over the samples' spans (`total_commands_processed`).
    pub commands: Option<u64>,
    /// Those commands per second.
    pub ops_per_sec: Option<f64>,
    /// Cores the server used, averaged over the spans (`used_cpu_*`).
    pub cpu_cores: Option<f64>,
    /// The highest of its samples' cores.
    pub cpu_peak_cores: Option<f64>,
    /// Its main thread's cores, averaged over the spans (`used_cpu_*_main_thread`).
    pub main_thread_cores: Option<f64>,
    /// The busiest thread by name over the spans and its cores (a server on this machine).
    pub busiest_thread: Option<(String, f64)>,
    /// The unusual seconds: `second 6: a fork`.
    pub unusual: Vec<String>,
}

impl ServerSeries {
    /// Each node's figures over the samples whose span overlaps `[from_s, to_s]` (seconds from
    /// the client series' origin); a node with no sample there is left out.
    pub fn window(&self, from_s: f64, to_s: f64) -> Vec<ServerWindow> {
        let mut out = Vec::new();
        for node in self.nodes() {
            let mut w = ServerWindow { node: node.to_string(), from_s: f64::INFINITY, ..Default::default() };
            let (mut span, mut cpu, mut main) = (0.0, (0.0, 0.0), (0.0, 0.0));
            let mut threads: Vec<(String, f64)> = Vec::new();
            let mut commands: Option<u64> = None;
            for s in self.samples.iter().filter(|s| s.node == node) {
                let start = s.at_s - s.span_s;
                if s.missing.is_some() {
                    if s.at_s >= from_s && s.at_s <= to_s {
                        w.missing += 1;
                    }
                    continue;
                }
                // Spans overlap the window: a reading's span is (at - span, at].
                if s.span_s <= 0.0 || s.at_s <= from_s || start >= to_s {
                    continue;
                }
                w.samples += 1;
                w.from_s = w.from_s.min(start);
                w.to_s = w.to_s.max(s.at_s);
                span += s.span_s;
                if let Some(n) = s.deltas.commands {
                    commands = Some(commands.unwrap_or(0).saturating_add(n));
                }
                if let Some(c) = s.cpu_cores {
                    cpu = (cpu.0 + c * s.span_s, cpu.1 + s.span_s);
                    w.cpu_peak_cores = Some(w.cpu_peak_cores.map_or(c, |p: f64| p.max(c)));
                }
                if let Some(c) = s.main_thread_cores {
                    main = (main.0 + c * s.span_s, main.1 + s.span_s);
                }
                for t in &s.threads {
                    match threads.iter_mut().find(|(n, _)| *n == t.name) {
                        Some(x) => x.1 += t.cores * s.span_s,
                        None => threads.push((t.name.clone(), t.cores * s.span_s)),
                    }
                }
                let words = s.unusual();
                if !words.is_empty() {
                    w.unusual.push(format!("second {}: {}", s.second, words.join(", ")));
                }
            }
            if w.samples == 0 && w.missing == 0 {
                continue;
            }
            let mean = |(sum, over): (f64, f64)| (over > 0.0).then(|| sum / over);
            w.commands = commands;
            w.ops_per_sec = commands.filter(|_| span > 0.0).map(|n| n as f64 / span);
            w.cpu_cores = mean(cpu);
            w.main_thread_cores = mean(main);
            w.busiest_thread = threads
                .into_iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .filter(|_| span > 0.0)
                .map(|(n, c)| (n, c / span));
            if w.samples == 0 {
                w.from_s = from_s;
                w.to_s = to_s;
            }
            out.push(w);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::{Counters, ServerSample, ThreadShare};

    fn sample(second: u64, at_s: f64, commands: u64, cores: f64) -> ServerSample {
        ServerSample {
            node: "n:1".into(),
            second,
            at_s,
            span_s: 1.0,
            deltas: Counters { commands: Some(commands), ..Counters::default() },
            cpu_cores: Some(cores),
            main_thread_cores: Some(cores / 2.0),
            threads: vec![
                ThreadShare { name: "redis-server".into(), tid: 1, cores: cores / 2.0 },
                ThreadShare { name: "io_thd_1".into(), tid: 2, cores: cores / 3.0 },
            ],
            ..ServerSample::default()
        }
    }

    #[test]
    fn the_seconds_that_overlap_a_window() {
        let series = ServerSeries {
            samples: vec![
                ServerSample { node: "n:1".into(), at_s: -0.1, ..ServerSample::default() },
                sample(0, 1.0, 1000, 0.2),
                sample(1, 2.0, 3000, 0.6),
                sample(2, 3.0, 5000, 1.0),
                ServerSample {
                    node: "n:1".into(),
                    second: 3,
                    at_s: 4.0,
                    missing: Some("no reply".into()),
                    ..ServerSample::default()
                },
                sample(4, 5.0, 1000, 0.2),
            ],
            ..ServerSeries::default()
        };
        // From 1.5 s to 3.5 s: the seconds ending at 2 and 3, and the missing tick at 4 is out.
        let w = &series.window(1.5, 3.5)[0];
        assert_eq!((w.samples, w.missing), (2, 0));
        assert_eq!((w.from_s, w.to_s), (1.0, 3.0));
        assert_eq!(w.commands, Some(8000));
        assert_eq!(w.ops_per_sec, Some(4000.0));
        assert!((w.cpu_cores.unwrap() - 0.8).abs() < 1e-9);
        assert_eq!(w.cpu_peak_cores, Some(1.0));
        assert!((w.main_thread_cores.unwrap() - 0.4).abs() < 1e-9);
        let (name, cores) = w.busiest_thread.clone().unwrap();
        assert_eq!(name, "redis-server");
        assert!((cores - 0.4).abs() < 1e-9);
        // A window over the missing tick counts it.
        let w = &series.window(3.5, 4.5)[0];
        assert_eq!((w.samples, w.missing), (1, 1));
        // None before the first second.
        assert!(series.window(-5.0, -1.0).is_empty());
    }
}
