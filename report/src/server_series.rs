//! The server's side of a test in the text report (#51): the verbose report's lines (what the
//! sampling cost, the server's threads over the test, the seconds where the server did something
//! unusual, named) and `--series`' table of the server's seconds beside the client's.

use std::io::{self, Write};

use respbench_session::result::TestResult;
use respbench_session::sampler::{ServerSample, ServerSeries};

use crate::hdr::finite;

/// At most this many unusual seconds are named per test (the JSON has them all).
const UNUSUAL_SHOWN: usize = 20;

/// The verbose report's lines of the server's series: nothing without one.
pub fn write_verbose(e: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(s) = &e.server_series else { return Ok(()) };
    let ticks = s.samples.iter().filter(|x| x.edge.is_none()).count();
    let missing = s.samples.iter().filter(|x| x.missing.is_some()).count();
    let several = nodes(s).len() > 1;
    writeln!(
        out,
        "  server sampled every {} s ({ticks} samples{}, {} missing; {} INFO calls, {:.1} KB read, {:.1} ms of \
         the client's CPU, left out of its figure)",
        finite(s.interval.as_secs_f64()),
        if several { format!(" over {} nodes", nodes(s).len()) } else { String::new() },
        missing,
        s.cost.info_calls,
        s.cost.bytes_read as f64 / 1e3,
        finite(s.cost.user_s + s.cost.sys_s) * 1e3
    )?;
    for node in nodes(s) {
        let threads = busiest_threads(s, node);
        if !threads.is_empty() {
            let list: Vec<String> = threads.iter().map(|(n, c)| format!("{n} {c:.2}")).collect();
            let at = if several { format!(" of {node}") } else { String::new() };
            writeln!(out, "  server threads{at} (cores, over the test): {}", list.join(", "))?;
        }
    }
    let mut shown = 0;
    for x in &s.samples {
        let words = x.unusual();
        if words.is_empty() {
            continue;
        }
        if shown == UNUSUAL_SHOWN {
            writeln!(out, "  server: more unusual seconds in the JSON's server_series")?;
            break;
        }
        shown += 1;
        let at = if several { format!("{}: ", x.node) } else { String::new() };
        writeln!(out, "  server {at}second {}: {}", x.second, words.join(", "))?;
    }
    Ok(())
}

/// The nodes of a series, in order.
fn nodes(s: &ServerSeries) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for x in &s.samples {
        if !out.contains(&x.node.as_str()) {
            out.push(&x.node);
        }
    }
    out
}

/// A node's threads by name, each with the cores it used over the samples that read it (the CPU
/// added up over their spans, divided by their length), busiest first.
pub fn busiest_threads(s: &ServerSeries, node: &str) -> Vec<(String, f64)> {
    let mut cpu: Vec<(String, f64)> = Vec::new();
    let mut length = 0.0;
    for x in s.samples.iter().filter(|x| x.node == node && !x.threads.is_empty()) {
        length += x.span_s;
        for t in &x.threads {
            match cpu.iter_mut().find(|(n, _)| *n == t.name) {
                Some((_, c)) => *c += t.cores * x.span_s,
                None => cpu.push((t.name.clone(), t.cores * x.span_s)),
            }
        }
    }
    if length <= 0.0 {
        return Vec::new();
    }
    for (_, c) in &mut cpu {
        *c /= length;
    }
    cpu.sort_by(|a, b| b.1.total_cmp(&a.1));
    cpu
}

/// `--series`: the server's seconds, one row per sample, under the client's table.
pub fn write_series(e: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(s) = &e.server_series else { return Ok(()) };
    let several = nodes(s).len() > 1;
    writeln!(
        out,
        "  server{} {:>6} {:>10} {:>12} {:>6} {:>10} {:>8} {:>8}  unusual",
        if several { " node" } else { "" },
        "second",
        "commands",
        "ops/s",
        "cores",
        "memory MB",
        "clients",
        "evicted",
    )?;
    for x in &s.samples {
        writeln!(out, "{}", row(x, several))?;
    }
    Ok(())
}

fn row(x: &ServerSample, several: bool) -> String {
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |n| n.to_string());
    let node = if several { format!(" {}", x.node) } else { String::new() };
    let edge = x.edge.map(|e| format!(" ({})", e.name())).unwrap_or_default();
    format!(
        "  server{node} {:>6} {:>10} {:>12} {:>6} {:>10} {:>8} {:>8}  {}{edge}",
        x.second,
        opt(x.commands),
        x.ops_per_sec.map_or("-".into(), |r| format!("{:.2}", finite(r))),
        x.cpu_cores.map_or("-".into(), |c| format!("{:.2}", finite(c))),
        x.used_memory.map_or("-".into(), |b| format!("{:.1}", b as f64 / 1e6)),
        opt(x.connected_clients),
        opt(x.evicted),
        x.unusual().join(", "),
    )
}
