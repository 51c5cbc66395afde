//! The server's side of a test in the text report (#51): the verbose report's lines (what the
//! sampling cost, the seconds where the server did something unusual, named; its threads are in
//! the bottleneck's sentence) and `--series`' table of the server's seconds beside the client's.

use std::io::{self, Write};

use respbench_session::result::TestResult;
use respbench_session::sampler::ServerSample;

use crate::hdr::finite;

/// At most this many unusual seconds are named per test (the JSON has them all).
const UNUSUAL_SHOWN: usize = 20;

/// The verbose report's lines of the server's series: nothing without one.
pub fn write_verbose(e: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(s) = &e.server_series else { return Ok(()) };
    let ticks = s.samples.iter().filter(|x| x.edge.is_none()).count();
    let missing = s.samples.iter().filter(|x| x.missing.is_some()).count();
    let several = s.nodes().len() > 1;
    writeln!(
        out,
        "  server sampled every {} s ({ticks} samples{}, {} missing; {} INFO calls, {:.1} KB read, {:.1} ms of \
         the client's CPU, left out of its figure)",
        finite(s.interval.as_secs_f64()),
        if several { format!(" over {} nodes", s.nodes().len()) } else { String::new() },
        missing,
        s.cost.info_calls,
        s.cost.bytes_read as f64 / 1e3,
        finite(s.cost.user_s + s.cost.sys_s) * 1e3
    )?;
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

/// `--series`: the server's seconds, one row per sample, under the client's table.
pub fn write_series(e: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(s) = &e.server_series else { return Ok(()) };
    let several = s.nodes().len() > 1;
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
        opt(x.deltas.commands),
        x.ops_per_sec.map_or("-".into(), |r| format!("{:.2}", finite(r))),
        x.cpu_cores.map_or("-".into(), |c| format!("{:.2}", finite(c))),
        x.gauges.used_memory.map_or("-".into(), |b| format!("{:.1}", b as f64 / 1e6)),
        opt(x.gauges.connected_clients),
        opt(x.deltas.evicted),
        x.unusual().join(", "),
    )
}
