//! The server panel (#51): under the client's requests per second and p99, second by second,
//! what the server did in the same seconds, from each test's `server_series`: its commands per
//! second, its CPU (user and sys, and its main thread's), each of its threads' CPU (a server on
//! the client's machine, from `/proc`), and its connected clients. Same time axis as the client's
//! series (the samples' `at_s` has the client series' origin); a sample the server did not
//! answer is a gap, not a zero.

use std::collections::BTreeMap;

use super::data::Test;
use super::svg::{extent, Axis, Chart, Dash, Line};

/// Threads drawn only when they used at least this share of a core in some sample (the idle
/// background threads would be a pile of lines at 0).
const BUSY_THREAD: f64 = 0.01;

/// One node of one test: its label and samples, in order.
struct Node<'a> {
    label: String,
    samples: Vec<&'a crate::doc::ServerSample>,
}

/// The server panel of `tests` (labelled by `labels`, in order) over the client series' `time`
/// axis; none when no test has a server series.
pub fn charts(tests: &[&Test], labels: &[String], time: &Axis) -> Vec<Chart> {
    let mut nodes = Vec::new();
    for (t, label) in tests.iter().zip(labels) {
        let mut by_node: BTreeMap<&str, Vec<&crate::doc::ServerSample>> = BTreeMap::new();
        for s in &t.server_series {
            by_node.entry(s.node.as_str()).or_default().push(s);
        }
        let several = by_node.len() > 1;
        for (node, samples) in by_node {
            let label = if several { format!("{label} {node}") } else { label.clone() };
            nodes.push(Node { label, samples });
        }
    }
    if nodes.is_empty() {
        return Vec::new();
    }
    let inside = |x: f64| x >= time.min && x <= time.max;
    // A delta's point is the middle of its span; a missing sample is a gap at its tick.
    let over_span = |n: &Node, f: &dyn Fn(&crate::doc::ServerSample) -> Option<f64>| -> Vec<(f64, f64)> {
        n.samples
            .iter()
            .filter_map(|s| {
                if s.missing.is_some() {
                    return Some((s.at_s, f64::NAN));
                }
                (s.span_s > 0.0).then(|| (s.at_s - s.span_s / 2.0, f(s).unwrap_or(f64::NAN)))
            })
            .filter(|p| inside(p.0))
            .collect()
    };
    let line = |label: String, points, color, dash| Line { label, points, color, dash, ..Line::default() };
    let (mut ops, mut cpu, mut threads, mut clients) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, n) in nodes.iter().enumerate() {
        ops.push(line(n.label.clone(), over_span(n, &|s| s.ops_per_sec), i, Dash::Solid));
        let user = |s: &crate::doc::ServerSample| Some((s.cpu_cores? - s.sys_cores?).max(0.0));
        cpu.push(line(format!("{} user", n.label), over_span(n, &user), i, Dash::Solid));
        cpu.push(line(format!("{} sys", n.label), over_span(n, &|s| s.sys_cores), i, Dash::Dashed));
        if n.samples.iter().any(|s| s.main_thread_cores.is_some()) {
            let main = over_span(n, &|s| s.main_thread_cores);
            cpu.push(line(format!("{} main thread", n.label), main, i, Dash::Dotted));
        }
        let gauge: Vec<(f64, f64)> = n
            .samples
            .iter()
            .map(|s| (s.at_s, s.connected_clients.map_or(f64::NAN, |c| c as f64)))
            .filter(|p| inside(p.0))
            .collect();
        clients.push(line(n.label.clone(), gauge, i, Dash::Solid));
        // Each thread by name (a name several threads share is their sum), in the order met.
        let mut names: Vec<&str> = Vec::new();
        for s in &n.samples {
            for t in s.threads.iter().filter(|t| t.cores >= BUSY_THREAD) {
                if !names.contains(&t.name.as_str()) {
                    names.push(&t.name);
                }
            }
        }
        for name in names {
            let cores = |s: &crate::doc::ServerSample| {
                let mine = s.threads.iter().filter(|t| t.name == name);
                mine.clone().next().map(|_| mine.map(|t| t.cores).sum())
            };
            let color = threads.len();
            threads.push(line(format!("{} {name}", n.label), over_span(n, &cores), color, Dash::Solid));
        }
    }
    let panel = |title: &str, y: &str, lines: Vec<Line>| {
        let (_, hi) = extent(&lines);
        Chart { title: title.into(), x: time.clone(), y: Axis::linear(y, 0.0, hi), lines, ..Chart::default() }
    };
    let mut charts = vec![
        panel("Server: commands per second (INFO), second by second", "commands per second", ops),
        panel("Server CPU: user and sys (INFO used_cpu_*), second by second", "cores", cpu),
    ];
    if !threads.is_empty() {
        charts.push(panel("Server CPU by thread (/proc), second by second", "cores", threads));
    }
    charts.push(panel("Server: connected clients, second by second", "connected clients", clients));
    charts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{ServerSample, ServerThread};

    fn sample(at_s: f64, span_s: f64, missing: bool) -> ServerSample {
        let thread = |name: &str, cores| ServerThread { name: name.into(), tid: 1, cores };
        ServerSample {
            node: "127.0.0.1:6379".into(),
            at_s,
            span_s,
            missing: missing.then(|| "no reply".into()),
            ops_per_sec: (!missing).then_some(1000.0 * at_s),
            cpu_cores: (!missing).then_some(0.5),
            sys_cores: (!missing).then_some(0.2),
            connected_clients: (!missing).then_some(51),
            threads: if missing {
                Vec::new()
            } else {
                vec![thread("redis-server", 0.4), thread("io_thd_1", 0.1), thread("bio_aof", 0.0)]
            },
            ..ServerSample::default()
        }
    }

    #[test]
    fn the_panel_is_on_the_client_seconds_with_gaps() {
        let mut t = Test { name: "GET".into(), ..Test::default() };
        t.server_series = vec![
            sample(-0.1, 0.0, false),
            sample(1.0, 1.0, false),
            sample(2.0, 0.0, true),
            sample(3.0, 2.0, false),
        ];
        let time = Axis::linear("time", 0.0, 3.0);
        let c = charts(&[&t], &["GET".to_string()], &time);
        let titles: Vec<&str> = c.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(titles.len(), 4, "{titles:?}");
        // Commands per second at each span's middle; the missing tick a gap; the start's no point.
        let ops = &c[0].lines[0].points;
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[0], (0.5, 1000.0));
        assert!(ops[1].0 == 2.0 && ops[1].1.is_nan());
        assert_eq!(ops[2], (2.0, 3000.0));
        let cpu: Vec<&str> = c[1].lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(cpu, ["GET user", "GET sys"]);
        assert!((c[1].lines[0].points[0].1 - 0.3).abs() < 1e-9);
        // The idle thread is left out.
        let threads: Vec<&str> = c[2].lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(threads, ["GET redis-server", "GET io_thd_1"]);
        assert_eq!(c[3].lines[0].points[0], (1.0, 51.0));
        assert!(charts(&[], &[], &time).is_empty());
    }
}
