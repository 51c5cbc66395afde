//! Test reports in redis-benchmark's formats: verbose, quiet (`-q`), CSV (`--csv`) and the
//! progress line, plus respbench's error summary.
//!
//! The verbose distributions, the mean and the percentiles come from [`crate::hdr`], which replays
//! libhdr_histogram's C iterators as redis-benchmark 7 drives them. Given the same histogram, the
//! lines are the ones redis-benchmark prints.

use std::io::{self, Write};

use hdrhistogram::Histogram;
use respbench_core::Stats;

use respbench_session::cpu::ClientCpu;
use respbench_session::result::{NodeInfo, Schedule, StepValues, TestResult};
use respbench_session::timing::{self, Split};
use respbench_session::verdict::{Side, Verdict};

use crate::hdr::{bounded, linear_steps, percentile_steps, write_steps};
use crate::shared::{none_succeeded, quoted};

/// In an open loop's verbose report, the rows of the cumulative distribution kept as they are
/// before the rest is thinned (see [`bounded`]).
const OPEN_LOOP_FINE_ROWS: usize = 30;
// json.rs reaches `mean` and `value_at_percentile` through report.
pub(crate) use crate::hdr::{finite, mean, ms, value_at_percentile};

/// What a report needs besides the stats.
pub struct TestReport<'a> {
    /// The test's name, e.g. `GET` or `LRANGE_100 (first 100 elements)`.
    pub title: &'a str,
    /// The test's results.
    pub stats: &'a Stats,
    /// The client's own CPU during the test, when measured.
    pub cpu: Option<&'a ClientCpu>,
    /// Who limited the test, when judged.
    pub verdict: Option<&'a Verdict>,
    /// Parallel clients (`-c`).
    pub clients: usize,
    /// Of those, the connections the server turned away (maxclients, a refused handshake) and
    /// those that could not connect: the report counts the clients that ran.
    pub never_ran: (u64, u64),
    /// Payload size in bytes (`-d`, or the RESP length of a custom command).
    pub payload_bytes: usize,
    /// Lines describing value sizes and keys when they differ from redis-benchmark's (a `-d`
    /// range or list, `--key-dist`, `--key-prefix`), printed after the payload line; see
    /// [`workload_lines`].
    pub workload: Vec<String>,
    /// Whether connections are kept open (`-k 1`).
    pub keepalive: bool,
    /// `--threads` as given: 0 prints "multi-thread: no", any other count "yes" and the count,
    /// as redis-benchmark does.
    pub threads: usize,
    /// The server's `CONFIG GET save`; `None` leaves out both host configuration lines.
    pub server_save: Option<&'a str>,
    /// The server's `CONFIG GET appendonly`, shown when `server_save` is known.
    pub server_appendonly: Option<&'a str>,
    /// How the backend worked, when it has something to say (io_uring's receives and SQPOLL),
    /// after the client cpu line.
    pub backend_note: Option<String>,
    /// Over several nodes: each node of `stats.nodes`, in the same order; empty otherwise.
    pub nodes: &'a [NodeInfo],
    /// `--print-percentiles`: the percentiles the summary and the `-q` line show instead of
    /// redis-benchmark's (p50, p95, p99 and p50); empty keeps those.
    pub percentiles: &'a [f64],
}

/// The verbose report's lines about what respbench adds to redis-benchmark's load: `value
/// sizes: 16-1024 bytes` (the payload line then shows the largest), `keys: zipf:0.99 over
/// 1000` and `key prefix: b:`. None for redis-benchmark's own options, so its format is kept.
pub fn workload_lines(
    values: &respbench_core::dist::ValueSize,
    key_dist: respbench_core::dist::KeyDist,
    keyspace: Option<u64>,
    key_prefix: &str,
) -> Vec<String> {
    let mut lines = Vec::new();
    if !matches!(values, respbench_core::dist::ValueSize::Fixed(_)) {
        lines.push(format!("value sizes: {values} bytes"));
    }
    if let (false, Some(n)) = (key_dist == respbench_core::dist::KeyDist::Uniform, keyspace) {
        lines.push(format!("keys: {key_dist} over {n}"));
    }
    if !key_prefix.is_empty() {
        lines.push(format!("key prefix: {key_prefix}"));
    }
    lines
}

/// `50 parallel clients`, or, when some never ran, how many did and why the others did not:
/// `9 parallel clients (of -c 15: 6 refused by the server)`.
fn clients_line(clients: usize, (turned_away, unreachable): (u64, u64)) -> String {
    if turned_away + unreachable == 0 {
        return format!("{clients} parallel clients");
    }
    let ran = (clients as u64).saturating_sub(turned_away + unreachable);
    let mut why = Vec::new();
    if turned_away > 0 {
        why.push(format!("{turned_away} refused by the server"));
    }
    if unreachable > 0 {
        why.push(format!("{unreachable} could not connect"));
    }
    format!("{ran} parallel clients (of -c {clients}: {})", why.join(", "))
}

/// The header of CSV output, printed once before the rows.
pub const CSV_HEADER: &str = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"";

/// Whether the test titled `title` reads keys: its first word (`GET`, `LRANGE_100 (first 100
/// elements)`, a custom command's name) is a read with a key in respbench's command table.
pub fn reads(title: &str) -> bool {
    let word = title.split_whitespace().next().unwrap_or("");
    // The suite's LRANGE_100 is LRANGE.
    let name = word.split('_').next().unwrap_or(word);
    respbench_core::cluster::Route::builtin(name.as_bytes(), 2)
        .is_some_and(|r| !r.write && !r.keys.is_empty())
}

/// Writes a test's full report as redis-benchmark prints it without `-q` or `--csv`.
pub fn write_verbose(r: &TestReport, out: &mut impl Write) -> io::Result<()> {
    let s = r.stats;
    let h = &s.latency;
    writeln!(out, "====== {} ======", r.title)?;
    if none_succeeded(s) {
        // No rate, hit ratio or latency: they would be the errors' (or nothing's).
        writeln!(out, "  {}", no_success(s))?;
        writeln!(out, "  {}", clients_line(r.clients, r.never_ran))?;
        writeln!(out, "  {} bytes payload", r.payload_bytes)?;
        return Ok(());
    }
    writeln!(out, "  {} requests completed in {:.2} seconds", s.requests, finite(s.duration_secs()))?;
    writeln!(out, "  {}", clients_line(r.clients, r.never_ran))?;
    writeln!(out, "  {} bytes payload", r.payload_bytes)?;
    for line in &r.workload {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "  keep alive: {}", u8::from(r.keepalive))?;
    if let Some(save) = r.server_save {
        writeln!(out, "  host configuration \"save\": {save}")?;
        writeln!(out, "  host configuration \"appendonly\": {}", r.server_appendonly.unwrap_or(""))?;
    }
    if r.threads > 0 {
        writeln!(out, "  multi-thread: yes")?;
        writeln!(out, "  threads: {}", r.threads)?;
    } else {
        writeln!(out, "  multi-thread: no")?;
    }
    writeln!(out)?;
    writeln!(out, "Latency by percentile distribution:")?;
    write_steps(&percentile_steps(h, 1), h.len(), out)?;
    writeln!(out)?;
    let linear = linear_steps(h);
    if s.service.is_some() {
        // Open-loop latencies include queueing, and may span seconds: redis-benchmark's 1 ms
        // rows would be thousands of lines.
        match bounded(&linear, h.len(), OPEN_LOOP_FINE_ROWS) {
            (rows, Some(from)) => {
                writeln!(
                    out,
                    "Cumulative distribution of latencies (above {:.3} milliseconds, a row where the latency has doubled or 5% more requests are counted):",
                    ms(from)
                )?;
                write_steps(&rows, h.len(), out)?;
            }
            (rows, None) => {
                writeln!(out, "Cumulative distribution of latencies:")?;
                write_steps(&rows, h.len(), out)?;
            }
        }
    } else {
        writeln!(out, "Cumulative distribution of latencies:")?;
        write_steps(&linear, h.len(), out)?;
    }
    writeln!(out)?;
    let sum = Summary::of(h);
    writeln!(out, "Summary:")?;
    writeln!(out, "  throughput summary: {:.2} requests per second", finite(s.rps()))?;
    writeln!(out, "  latency summary (msec):")?;
    if r.percentiles.is_empty() {
        write_summary_table(&sum, out)?;
    } else {
        write_chosen_table(h, r.percentiles, out)?;
    }
    if let Some(c) = r.cpu {
        // respbench's own line, after redis-benchmark's summary so parsers of that stay whole.
        writeln!(
            out,
            "  client cpu: {:.2} usec per request (user+sys), {:.0}% of a core per event loop ({} loop{})",
            finite(c.per_request_us(s.requests)),
            finite(c.core_share() * 100.0),
            c.threads,
            if c.threads == 1 { "" } else { "s" },
        )?;
    }
    if let Some(v) = r.verdict {
        writeln!(out, "  bottleneck: {}", v.text)?;
    }
    // Hits mean something for reads; a write that replied nil (SET NX) is said too.
    if s.requests > 0 && (reads(r.title) || s.nils > 0) {
        writeln!(
            out,
            "  hits: {:.1}% ({} nil replies: keys that did not exist)",
            s.hit_share() * 100.0,
            s.nils
        )?;
    }
    if s.expired > 0 {
        writeln!(
            out,
            "  expired: {} of the nil replies were of keys the mix's sequential SET had written (expired, \
             or evicted or deleted since)",
            s.expired
        )?;
    }
    if let Some(note) = &r.backend_note {
        writeln!(out, "  {note}")?;
    }
    write_setup(s, r.keepalive, out)?;
    if s.abandoned > 0 {
        writeln!(out, "  abandoned: {} requests unanswered after the stop's grace", s.abandoned)?;
    }
    if let Some(line) = ending(r) {
        writeln!(out, "  {line}")?;
    }
    if s.service.is_some() {
        // Open loop: every arrival of the schedule, accounted for.
        writeln!(out, "  arrivals: {}", accounting(s))?;
    }
    if s.lower_bounds > 0 {
        writeln!(
            out,
            "  the latencies include {} lower bounds: requests never answered, timed to the test's end",
            s.lower_bounds
        )?;
    }
    if s.drops > 0 {
        writeln!(
            out,
            "  reconnects: {} ({} requests lost), {:.3} s down in all",
            s.drops,
            s.lost,
            s.downtime_micros as f64 / 1e6
        )?;
    }
    if let Some(d) = &s.delivery {
        write_delivery(d, out)?;
    }
    write_verify(&s.verify, None, out)?;
    write_nodes(s, r.nodes, out)
}

/// The words a delivery's lines use: pub/sub's subscribers, or a queue's waiting connections.
struct DeliveryWords {
    who: &'static str,
    sent: &'static str,
    got: &'static str,
    each: &'static str,
}

impl DeliveryWords {
    /// `3 subscribers`, `1 waiting connection`: the delivery's own.
    fn count(&self, d: &respbench_core::delivery::Delivery) -> String {
        format!("{} {}{}", d.subscribers, self.who, if d.subscribers == 1 { "" } else { "s" })
    }

    fn of(d: &respbench_core::delivery::Delivery) -> DeliveryWords {
        if d.queue {
            DeliveryWords { who: "waiting connection", sent: "pushed", got: "taken", each: "waiter" }
        } else {
            DeliveryWords { who: "subscriber", sent: "published", got: "delivered", each: "subscriber" }
        }
    }
}

/// `-t pubsub`: what the subscribers received and how long it took to reach them.
pub fn write_delivery(d: &respbench_core::delivery::Delivery, out: &mut impl Write) -> io::Result<()> {
    let r = &d.received;
    let w = DeliveryWords::of(d);
    // Pub/sub's replies count the receivers (a queue's push has no such count).
    let receivers = if d.queue {
        String::new()
    } else {
        format!(" (the server's replies counted {} receivers)", d.receivers)
    };
    let missed = if d.queue { String::new() } else { format!("; {} missed some", d.subscribers_missing) };
    writeln!(
        out,
        "  delivery: {}: {} {}, {} {}{receivers}, {} missing, {} duplicated, {} out of order",
        w.count(d),
        d.published,
        w.sent,
        r.delivered,
        w.got,
        d.missing,
        r.duplicated,
        r.out_of_order,
    )?;
    writeln!(
        out,
        "    per {}: {} to {} {}{missed}; {} ended early{}{}",
        w.each,
        d.min_delivered,
        d.max_delivered,
        w.got,
        d.failed,
        d.failure.as_ref().map(|f| format!(" (first: {f})")).unwrap_or_default(),
        match d.reconnects {
            0 => String::new(),
            n => format!(
                "; came back {n} times (--reconnect; the first ended: {})",
                d.reconnected.as_deref().unwrap_or("not known")
            ),
        },
    )?;
    if r.foreign > 0 {
        writeln!(out, "    {} messages without respbench's stamp (someone else publishing)", r.foreign)?;
    }
    if !r.latency.is_empty() {
        writeln!(out, "  delivery latency (msec, the intended send to the waiting connection's read):")?;
        write_summary_table(&Summary::of(&r.latency), out)?;
        writeln!(out, "  delivery service time (msec, from the actual send):")?;
        write_summary_table(&Summary::of(&r.service), out)?;
    }
    Ok(())
}

/// `-q`: a delivery test's one line after its own: `NAME: delivery to 3 subscribers: 2000
/// published, 6000 delivered, 0 missing, latency p50=0.311 p99=1.215 msec`. Nothing for another
/// test.
pub fn write_delivery_quiet(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(d) = &t.stats.delivery else { return Ok(()) };
    let w = DeliveryWords::of(d);
    let r = &d.received;
    write!(
        out,
        "{}: delivery to {}: {} {}, {} {}, {} missing",
        t.name,
        w.count(d),
        d.published,
        w.sent,
        r.delivered,
        w.got,
        d.missing
    )?;
    if r.latency.is_empty() {
        return writeln!(out);
    }
    let at = |p: f64| ms(value_at_percentile(&r.latency, p));
    writeln!(out, ", latency p50={:.3} p99={:.3} msec", at(50.0), at(99.0))
}

/// CSV: a delivery test's row after its own: `"delivery"`, the test, subscribers (or waiting
/// connections), published (pushed), delivered (taken), missing, duplicated, out of order, and
/// the delivery latency's p50, p99, p99.9 and max (ms; empty when nothing arrived). Nothing for
/// another test.
pub fn write_delivery_csv(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(d) = &t.stats.delivery else { return Ok(()) };
    let r = &d.received;
    let latency = if r.latency.is_empty() {
        "\"\",\"\",\"\",\"\"".to_string()
    } else {
        let at = |p: f64| ms(value_at_percentile(&r.latency, p));
        format!("\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"", at(50.0), at(99.0), at(99.9), ms(r.latency.max()))
    };
    writeln!(
        out,
        "\"delivery\",{},\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",{latency}",
        quoted(&t.name),
        d.subscribers,
        d.published,
        r.delivered,
        d.missing,
        r.duplicated,
        r.out_of_order
    )
}

/// `--verify`'s lines: the reads checked, the mismatches by kind, and the first ones (key,
/// expected, got; cut). Nothing without `--verify`. After a `-q` line (`quiet`, the test's
/// title), one line: `<title>: verify: …` and the first mismatch, if any.
pub fn write_verify(
    v: &respbench_core::stats::VerifyStats,
    quiet: Option<&str>,
    out: &mut impl Write,
) -> io::Result<()> {
    if !v.on {
        return Ok(());
    }
    let versions = if v.versions { "versions checked" } else { "versions not checked" };
    let counts = format!(
        "verify: {} reads checked, {} mismatches ({} wrong values, {} other keys' values, {} stale; {versions})",
        v.checked,
        v.mismatches(),
        v.wrong,
        v.other_key,
        v.stale
    );
    if let Some(title) = quiet {
        let first = v.shown.first().map(|m| {
            format!("; the first: {} {}: expected {}, got {}", m.kind.name(), m.key, m.expected, m.got)
        });
        return writeln!(out, "{title}: {counts}{}", first.unwrap_or_default());
    }
    writeln!(out, "  {counts}")?;
    for m in &v.shown {
        writeln!(out, "    {:<9} {}: expected {}, got {}", m.kind.name(), m.key, m.expected, m.got)?;
    }
    if v.mismatches() > v.shown.len() as u64 {
        writeln!(out, "    ({} more not shown)", v.mismatches() - v.shown.len() as u64)?;
    }
    Ok(())
}

/// respbench's per-node table of a test over several nodes (`--cluster`, replicas): a row per
/// node, those that served nothing too (where the reads went), then the redirects by kind.
/// Nothing for a test against one server.
pub fn write_nodes(s: &Stats, nodes: &[NodeInfo], out: &mut impl Write) -> io::Result<()> {
    if s.nodes.is_empty() {
        return Ok(());
    }
    let infos: Vec<NodeInfo> = (0..s.nodes.len()).map(|i| NodeInfo::nth(nodes, i)).collect();
    let width = infos.iter().map(|n| n.address.len()).max().unwrap_or(0).max("address".len());
    // The test's own length, as its rps: a node's share of the throughput.
    let duration = s.duration_secs();
    writeln!(out, "  nodes (requests by the node that answered them):")?;
    writeln!(
        out,
        "    {:width$} {:7} {:>5} {:>10} {:>12} {:>9} {:>9} {:>8} {:>9}",
        "address", "role", "slots", "requests", "rps", "p50 msec", "p99 msec", "errors", "redirects"
    )?;
    for (info, n) in infos.iter().zip(&s.nodes) {
        let rps = if duration > 0.0 { n.requests as f64 / duration } else { 0.0 };
        writeln!(
            out,
            "    {:width$} {:7} {:>5} {:>10} {:>12.2} {:>9.3} {:>9.3} {:>8} {:>9}",
            info.address,
            info.role(),
            info.slots,
            n.requests,
            finite(rps),
            ms(value_at_percentile(&n.latency, 50.0)),
            ms(value_at_percentile(&n.latency, 99.0)),
            n.errors.total(),
            n.redirects.total()
        )?;
    }
    let kinds: Vec<String> = s.redirects.kinds().iter().map(|(k, n)| format!("{n} {k}")).collect();
    writeln!(out, "  redirects: {} (not counted as requests)", kinds.join(", "))
}

/// respbench's connection set-up block, after the summary: how many connections were opened
/// (and how many a second when they are reopened: `-k 0`, the connect test), and p50, p99 and
/// max per phase in milliseconds.
pub fn write_setup(s: &Stats, keepalive: bool, out: &mut impl Write) -> io::Result<()> {
    let setup = &s.setup;
    let n = setup.count();
    if n == 0 {
        return Ok(());
    }
    let rate = if keepalive {
        String::new()
    } else {
        format!(", {:.2} per second", finite(n as f64 / s.duration_secs()))
    };
    writeln!(out, "  connection setup (msec), {n} connection{}{rate}:", if n == 1 { "" } else { "s" })?;
    writeln!(out, "    {:>9} {:>9} {:>9} {:>9}", "phase", "p50", "p99", "max")?;
    for (name, h) in setup.phases() {
        if h.is_empty() {
            continue;
        }
        writeln!(
            out,
            "    {name:>9} {:>9.3} {:>9.3} {:>9.3}",
            ms(value_at_percentile(h, 50.0)),
            ms(value_at_percentile(h, 99.0)),
            ms(h.max())
        )?;
    }
    Ok(())
}

/// One backend's column names in the side-by-side table of `--backend mio,smol`, as wide as
/// [`write_compare_row`]'s cells.
fn compare_columns() -> String {
    format!("  {:>13} {:>9} {:>9} {:>11} {:>6} ", "rps", "p50 msec", "p99 msec", "cpu us/req", "core")
}

/// The header of the side-by-side table (or of its CSV form): `width` is the longest title.
pub fn write_compare_header(
    csv: bool,
    backends: &[&str],
    width: usize,
    out: &mut impl Write,
) -> io::Result<()> {
    if csv {
        return writeln!(
            out,
            "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\",\"cpu_us_per_request\",\"cpu_core_share\",\"bottleneck\",\"backend\""
        );
    }
    let width = width.max("test".len());
    let mut top = format!("{:width$}", "");
    let mut cols = format!("{:width$}", "test");
    for b in backends {
        let group = compare_columns();
        let n = group.len() - 3;
        top.push_str(&format!("  {:-^n$} ", format!(" {b} ")));
        cols.push_str(&group);
    }
    writeln!(out, "{}", top.trim_end())?;
    writeln!(out, "{}", cols.trim_end())
}

/// One test on every backend: a row of the side-by-side table, or one CSV row per backend.
pub fn write_compare_row(
    csv: bool,
    runs: &[&TestResult],
    width: usize,
    out: &mut impl Write,
) -> io::Result<()> {
    let Some(first) = runs.first() else { return Ok(()) };
    if csv {
        for e in runs {
            let cpu = match (none_succeeded(&e.stats), e.cpu.unwrap_or_default()) {
                (true, _) => "\"\",\"\"".to_string(),
                (false, c) => {
                    format!(
                        "\"{:.2}\",\"{:.3}\"",
                        finite(c.per_request_us(e.stats.requests)),
                        finite(c.core_share())
                    )
                }
            };
            writeln!(
                out,
                "{},{cpu},\"{}\",\"{}\"",
                csv_figures(&e.name, &e.stats),
                e.verdict.as_ref().map_or("", |v| v.side.name()),
                e.backend.as_deref().unwrap_or(""),
            )?;
        }
        return Ok(());
    }
    let width = width.max("test".len());
    let name = match first.target_rps {
        Some(r) => format!("{} @ {r} rps", first.name),
        None => first.name.clone(),
    };
    let mut line = format!("{name:width$}");
    for e in runs {
        if none_succeeded(&e.stats) {
            line.push_str(&format!("  {:>51}", "no request succeeded"));
            continue;
        }
        let h = &e.stats.latency;
        let cpu = e.cpu.unwrap_or_default();
        line.push_str(&format!(
            "  {:13.2} {:9.3} {:9.3} {:11.2} {:5.0}%{}",
            finite(e.stats.rps()),
            ms(value_at_percentile(h, 50.0)),
            ms(value_at_percentile(h, 99.0)),
            finite(cpu.per_request_us(e.stats.requests)),
            finite(cpu.core_share() * 100.0),
            if e.verdict.as_ref().is_some_and(|v| v.side == Side::Client) { "*" } else { " " }
        ));
    }
    writeln!(out, "{}", line.trim_end())
}

/// The legend under the side-by-side table.
pub fn write_compare_footer(out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "\ncpu us/req: the client's user+sys CPU per request; core: its CPU as a share of one core per \
         event loop (* = the client limited the run, the server's main thread not being saturated: \
         the figures measure respbench)"
    )
}

/// Writes a test's one-line report, as with `-q`.
pub fn write_quiet(r: &TestReport, out: &mut impl Write) -> io::Result<()> {
    write_quiet_marked(r, None, out)
}

/// The `-q` line's trailing fields, after redis-benchmark's `p50=… msec`: the verdict when it is
/// not "server" (`, bottleneck: client`), and `partial` says why the test has fewer requests
/// than asked (`, partial: interrupted after 5000 of 100000 requests`). Nothing when the server
/// limited a whole test: the line is then redis-benchmark's exactly.
fn quiet_trailer(r: &TestReport, partial: Option<&str>) -> String {
    let mut t = String::new();
    if let Some(v) = r.verdict.filter(|v| v.side != Side::Server) {
        t.push_str(&format!(", bottleneck: {}", v.side.name()));
    }
    if let Some(p) = partial {
        t.push_str(&format!(", partial: {p}"));
    }
    t
}

/// `no request succeeded: 49 replies in 0.02 s, every one an error reply`, or the same for a
/// test that received no reply at all.
pub fn no_success(s: &Stats) -> String {
    let lost =
        if s.lost > 0 { format!(", {} requests lost with their connections", s.lost) } else { String::new() };
    if s.requests == 0 {
        format!("no request succeeded: no reply in {:.2} seconds{lost}", finite(s.duration_secs()))
    } else {
        format!(
            "no request succeeded: {} replies in {:.2} seconds, every one an error reply{lost}",
            s.requests,
            finite(s.duration_secs())
        )
    }
}

/// [`write_quiet`], with `partial` saying why the test is incomplete (a Ctrl-C), when it is.
pub fn write_quiet_marked(r: &TestReport, partial: Option<&str>, out: &mut impl Write) -> io::Result<()> {
    let s = r.stats;
    let trailer = quiet_trailer(r, partial);
    if none_succeeded(s) {
        return writeln!(out, "{}: {}{trailer}", r.title, no_success(s));
    }
    if r.percentiles.is_empty() {
        let p50 = ms(value_at_percentile(&s.latency, 50.0));
        writeln!(
            out,
            "{}: {:.2} requests per second, p50={:.3} msec{trailer}",
            r.title,
            finite(s.rps()),
            p50
        )?;
    } else {
        let chosen: Vec<String> = r
            .percentiles
            .iter()
            .map(|&p| format!("{}={:.3} msec", percentile_name(p), ms(value_at_percentile(&s.latency, p))))
            .collect();
        writeln!(
            out,
            "{}: {:.2} requests per second, {}{trailer}",
            r.title,
            finite(s.rps()),
            chosen.join(", ")
        )?;
    }
    if s.abandoned + s.unsent + s.lost > 0 {
        // A line of its own, so redis-benchmark's line stays whole for its parsers.
        let silent = ending(r).map(|l| format!("; {l}")).unwrap_or_default();
        writeln!(out, "{}: {}{silent}", r.title, accounting(s))?;
    }
    Ok(())
}

/// How a test ended, when that needs saying: `all connections failed at 3.00 s …` when every
/// client lost its connections before the stop, else, when requests were left unanswered or
/// unsent, when replies stopped ([`silence`]); `None` otherwise.
fn ending(r: &TestReport) -> Option<String> {
    let s = r.stats;
    if s.failed_at(r.clients as u64).is_some() {
        Some(format!(
            "all connections failed at {:.2} s: the figures are what it measured before",
            finite(s.duration_secs())
        ))
    } else {
        (s.abandoned + s.unsent > 0).then(|| silence(s))
    }
}

/// When replies stopped: `no reply for the last 16.0 s of 20.0 s`.
pub fn silence(s: &Stats) -> String {
    format!("no reply for the last {:.1} s of {:.1} s", finite(s.silent_secs()), finite(s.duration_secs()))
}

/// Where a test's requests went: `2000 due = 500 completed + 0 error replies + 0 lost + 8
/// abandoned + 1492 unsent` in an open loop; the same without the arrivals in a closed one.
pub fn accounting(s: &Stats) -> String {
    let errors = s.error_replies();
    let parts = format!(
        "{} completed + {errors} error replies + {} lost + {} abandoned",
        s.requests.saturating_sub(errors),
        s.lost,
        s.abandoned
    );
    if s.service.is_some() {
        format!("{} due = {parts} + {} unsent", s.arrivals(), s.unsent)
    } else {
        parts
    }
}

/// The columns `--rps` adds to [`CSV_HEADER`].
pub const CSV_OPEN_LOOP_COLUMNS: &str =
    ",\"target_rps\",\"service_p50_latency_ms\",\"service_p99_latency_ms\"";

/// The columns a sweep (`-d`, `-c`, `-P` or `--threads` lists) adds, after the open loop's.
pub const CSV_SWEEP_COLUMNS: &str = ",\"datasize\",\"clients\",\"pipeline\",\"threads\"";

/// The columns every row ends with, after any others (so redis-benchmark's and the others keep
/// their places): failed requests (error replies and requests lost with a connection),
/// requests abandoned at the end, open-loop arrivals never sent, and the verdict (`server`,
/// `client`, `neither`, `machine`, `unknown`; empty on a mix's command rows, judged in total).
pub const CSV_ACCOUNT_COLUMNS: &str = ",\"errors\",\"abandoned\",\"unsent\",\"bottleneck\"";

/// Writes a test's CSV row (after [`CSV_HEADER`]); a `"` in the title is doubled, so the row stays
/// valid CSV (redis-benchmark leaves it as is). An open-loop step adds the
/// [`CSV_OPEN_LOOP_COLUMNS`].
pub fn write_csv_row(
    r: &TestReport,
    open_loop: Option<&TestResult>,
    step: Option<&StepValues>,
    out: &mut impl Write,
) -> io::Result<()> {
    write!(out, "{}", csv_figures(r.title, r.stats))?;
    if let Some(e) = open_loop {
        let (p50, p99) = service(&e.stats);
        // A mix's commands share the total's target, shown on its row only.
        let target = e.target_rps.map(|t| t.to_string()).unwrap_or_default();
        write!(out, ",\"{target}\",\"{p50:.3}\",\"{p99:.3}\"")?;
    }
    if let Some(step) = step {
        for k in ["datasize", "clients", "pipeline", "threads"] {
            write!(out, ",\"{}\"", step.get(k).unwrap_or_default())?;
        }
    }
    let s = r.stats;
    let side = r.verdict.map_or("", |v| v.side.name());
    writeln!(out, ",\"{}\",\"{}\",\"{}\",\"{side}\"", s.error_replies() + s.lost, s.abandoned, s.unsent)
}

/// A test's first eight CSV columns, redis-benchmark's: its title (quoted, a `"` doubled), its
/// rate and latency summary; empty figures when no request succeeded (the errors column says
/// why).
fn csv_figures(title: &str, s: &Stats) -> String {
    let title = quoted(title);
    if none_succeeded(s) {
        return format!("{title},\"\",\"\",\"\",\"\",\"\",\"\",\"\"");
    }
    let sum = Summary::of(&s.latency);
    format!(
        "{title},\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"",
        finite(s.rps()),
        sum.avg,
        sum.min,
        sum.p50,
        sum.p95,
        sum.p99,
        sum.max
    )
}

/// Service-time p50 and p99 in milliseconds (0 without a service histogram).
fn service(stats: &Stats) -> (f64, f64) {
    match &stats.service {
        Some(h) => (ms(value_at_percentile(h, 50.0)), ms(value_at_percentile(h, 99.0))),
        None => (0.0, 0.0),
    }
}

fn arrivals(poisson: bool) -> &'static str {
    if poisson {
        "Poisson"
    } else {
        "constant"
    }
}

/// The verbose report's "where the time went" lines: the server's own execution time for the
/// test's calls (per node over several), the client machine's own pauses, and the split of the
/// latency into its parts (a table). Nothing for what was not measured.
pub fn write_time(e: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let bucket = |b: Option<(u64, u64)>| match b {
        Some((lo, hi)) => format!("{:.3}-{:.3}", ms(lo), ms(hi)),
        None => "-".into(),
    };
    let command_line = |c: &timing::CommandTime| {
        let mut line = format!("{}: {} calls", c.command, c.calls);
        if !c.buckets.is_empty() {
            line += &format!(
                ", p50 {}, p99 {}, p99.9 {} msec",
                bucket(c.bucket_at(50.0)),
                bucket(c.bucket_at(99.0)),
                bucket(c.bucket_at(99.9))
            );
        }
        if let Some([a, b, c]) = c.since_reset {
            line +=
                &format!(", since reset p50 {:.3}, p99 {:.3}, p99.9 {:.3} msec", a / 1e3, b / 1e3, c / 1e3);
        }
        if let Some(u) = c.usec_per_call {
            line += &format!(", {:.2} usec per call", finite(u));
        }
        line
    };
    if let Some(st) = &e.server_time {
        let several = st.nodes.len() > 1;
        match st.overall() {
            Some((cmds, source)) => {
                writeln!(
                    out,
                    "  server's own execution time ({}; {}):",
                    source.describe(),
                    timing::MEASURES
                )?;
                for c in cmds {
                    writeln!(out, "    {}{}", if several { "all nodes: " } else { "" }, command_line(c))?;
                }
                if cmds.is_empty() {
                    writeln!(out, "    no call of the test's commands was counted")?;
                }
            }
            None if !several => {
                let why = st.nodes.first().and_then(|n| n.source.as_ref().err()).map_or("", String::as_str);
                writeln!(out, "  server's own execution time: not known ({why})")?;
            }
            None => writeln!(out, "  server's own execution time: not known at any node")?,
        }
        for n in st.nodes.iter().filter(|_| several) {
            match &n.source {
                Ok(_) => {
                    for c in &n.commands {
                        writeln!(out, "    {}: {}", n.address, command_line(c))?;
                    }
                }
                Err(why) => writeln!(out, "    {}: not known ({why})", n.address)?,
            }
        }
        for n in &st.nodes {
            if let Some(m) = n.mismatch() {
                writeln!(out, "  WARNING: {m}")?;
            }
        }
    }
    if let Some(p) = &e.pauses {
        writeln!(out, "  {}", p.describe())?;
    }
    let overall = e.server_time.as_ref().and_then(timing::ServerTime::overall);
    if let Some(sp) = Split::of(&e.stats, overall) {
        writeln!(
            out,
            "  where the time went (msec; each part's own percentile: the parts of a request add up, their \
             percentiles need not):"
        )?;
        writeln!(out, "    {:<36}{:>14}{:>14}{:>14}", "", "p50", "p99", "p99.9")?;
        let row = |name: &str, v: [u64; 3]| {
            format!("    {name:<36}{:>14.3}{:>14.3}{:>14.3}", ms(v[0]), ms(v[1]), ms(v[2]))
        };
        let range = |name: &str, v: [(u64, u64); 3]| {
            let r = v.map(|b| bucket(Some(b)));
            format!("    {name:<36}{:>14}{:>14}{:>14}", r[0], r[1], r[2])
        };
        writeln!(out, "{}", row("corrected latency", sp.corrected))?;
        if let Some(l) = sp.lateness {
            writeln!(out, "{}", row("= send lateness", l))?;
            writeln!(out, "{}", row("+ service time", sp.service))?;
        } else {
            writeln!(out, "{}", row("= service time (closed loop)", sp.service))?;
        }
        if let (Some(srv), Some(rest)) = (sp.server, sp.rest) {
            writeln!(out, "{}", range("    = server execution", srv))?;
            writeln!(out, "{}", range("    + the rest (wire, kernels, queues)", rest))?;
        }
    }
    Ok(())
}

/// respbench's lines after an open-loop test's verbose report: target and achieved rates, and the
/// service-time summary beside the corrected latencies above it.
pub fn write_open_loop(e: &TestResult, poisson: bool, out: &mut impl Write) -> io::Result<()> {
    let slack = e.slack.unwrap_or_default();
    let (Some(target), Some(h)) = (e.target_rps, &e.stats.service) else { return Ok(()) };
    writeln!(
        out,
        "  open loop: target {target} requests per second ({} arrivals), achieved {:.2}",
        arrivals(poisson),
        finite(e.stats.rps())
    )?;
    writeln!(
        out,
        "  latencies above count from each request's intended send time (coordinated omission corrected)"
    )?;
    writeln!(out, "  service time summary (msec, from the actual send):")?;
    write_summary_table(&Summary::of(h), out)?;
    if let Some(late) = &e.stats.lateness {
        let (p50, p99) = (value_at_percentile(late, 50.0), value_at_percentile(late, 99.0));
        writeln!(
            out,
            "  send lateness (msec, actual send - intended, on a {:.3} msec wake-up grid): p50 {:.3}, p99 {:.3}, max {:.3}",
            slack.as_secs_f64() * 1000.0,
            ms(p50),
            ms(p99),
            ms(late.max())
        )?;
    }
    Ok(())
}

/// The columns `--replay` adds to a CSV row: its fidelity, on the total's row (empty on its
/// commands' rows).
pub const CSV_REPLAY_COLUMNS: &str = ",\"sent_on_time_share\",\"lateness_p99_ms\"";

/// [`CSV_REPLAY_COLUMNS`]' values for `e`.
pub fn csv_replay_columns(e: &TestResult) -> String {
    match (&e.replay, &e.stats.lateness) {
        (Some(f), Some(late)) => {
            format!(",\"{:.4}\",\"{:.3}\"", f.on_time_share(), ms(value_at_percentile(late, 99.0)))
        }
        _ => ",\"\",\"\"".to_string(),
    }
}

/// A replay's lines after its test's report: what was played, how faithfully (the share sent
/// within 1 ms of its recorded instant, the send lateness), the service time, what was not
/// replayed and what could not be read. `quiet`: the fidelity line only.
pub fn write_replay(e: &TestResult, quiet: bool, out: &mut impl Write) -> io::Result<()> {
    let Some(f) = &e.replay else { return Ok(()) };
    let late = e.stats.lateness.as_ref().filter(|h| !h.is_empty());
    let lag = late.map_or(String::new(), |h| {
        format!(
            "; send lateness p50 {:.3}, p99 {:.3}, max {:.3} msec",
            ms(value_at_percentile(h, 50.0)),
            ms(value_at_percentile(h, 99.0)),
            ms(h.max())
        )
    });
    let fidelity = format!(
        "{} of {} commands ({:.1}%) sent within {:.3} msec of their recorded instant{lag}",
        f.sent_on_time,
        f.sent,
        f.on_time_share() * 100.0,
        respbench_session::result::LATENESS_KEPT_MICROS as f64 / 1000.0
    );
    if quiet {
        return writeln!(out, "{}: replay fidelity: {fidelity}", e.name);
    }
    let passes = if f.passes > 1 { format!(", {} passes", f.passes) } else { String::new() };
    writeln!(
        out,
        "  replay: {} ({}), {:.3} s recorded (as played), {} clients, at {}x speed{passes}",
        f.file, f.format, f.recorded_s, f.clients, f.speed
    )?;
    writeln!(out, "  replay fidelity: {fidelity}")?;
    if let Some(h) = &e.stats.service {
        writeln!(out, "  latencies above count from each command's recorded instant; service time (msec, from the actual send):")?;
        write_summary_table(&Summary::of(h), out)?;
    }
    if f.selects_added > 0 {
        writeln!(
            out,
            "  {} SELECTs added before commands recorded in another db than their connection's",
            f.selects_added
        )?;
    }
    for s in &f.skipped {
        writeln!(out, "  not replayed: {} {} ({})", s.count, s.command, s.reason)?;
    }
    if f.malformed > 0 {
        let lines: Vec<String> =
            f.malformed_lines.iter().map(|(n, why)| format!("line {n}: {why}")).collect();
        writeln!(out, "  malformed: {} lines not replayed ({})", f.malformed, lines.join("; "))?;
    }
    Ok(())
}

/// `-q` after an open-loop run's rate table: a line for each step that did not keep its
/// schedule (nothing when every step did).
pub fn write_schedules_not_kept(steps: &[TestResult], out: &mut impl Write) -> io::Result<()> {
    for e in steps {
        if let Some(s) = Schedule::of(e).filter(|s| !s.kept()) {
            writeln!(
                out,
                "{} @ {} rps: schedule not kept: achieved {:.2}, {}",
                e.name,
                e.target_rps.unwrap_or(0),
                finite(s.achieved_rps),
                s.describe()
            )?;
        }
    }
    Ok(())
}

/// `p50`, `p99.9`, `p99.99`: a percentile's name as memtier_benchmark gives it (up to three
/// decimals, none trailing).
pub fn percentile_name(p: f64) -> String {
    let s = format!("{p:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("p{s}")
}

/// The latency summary with the `--print-percentiles` columns: avg, min, the chosen ones, max.
fn write_chosen_table(h: &Histogram<u64>, chosen: &[f64], out: &mut impl Write) -> io::Result<()> {
    let sum = Summary::of(h);
    let mut head = format!("    {:>9} {:>9}", "avg", "min");
    let mut row = format!("    {:9.3} {:9.3}", sum.avg, sum.min);
    for &p in chosen {
        head += &format!(" {:>9}", percentile_name(p));
        row += &format!(" {:9.3}", ms(value_at_percentile(h, p)));
    }
    writeln!(out, "{head} {:>9}", "max")?;
    writeln!(out, "{row} {:9.3}", sum.max)
}

/// The two lines of redis-benchmark's latency summary: column names, then figures in msec.
fn write_summary_table(sum: &Summary, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "    {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}", "avg", "min", "p50", "p95", "p99", "max")?;
    writeln!(
        out,
        "    {:9.3} {:9.3} {:9.3} {:9.3} {:9.3} {:9.3}",
        sum.avg, sum.min, sum.p50, sum.p95, sum.p99, sum.max
    )
}

/// The throughput–latency table of an open-loop run: one row per step (target rate).
/// A sweep's table for one test: a row per step (and per `--rps` rate), with the step's
/// parameters, throughput, latency, bytes on the wire each way and the client's CPU per request.
pub fn write_sweep_table(rows: &[TestResult], out: &mut impl Write) -> io::Result<()> {
    let Some(first) = rows.first() else { return Ok(()) };
    writeln!(out, "{}: sweep of {} steps", first.name, rows.len())?;
    writeln!(
        out,
        "  {:>12} {:>7} {:>5} {:>7} {:>10} {:>12} {:>9} {:>9} {:>9} {:>10} {:>8} {:>8} {:>7} {:>10}",
        "-d",
        "-c",
        "-P",
        "threads",
        "target rps",
        "rps",
        "avg msec",
        "p50 msec",
        "p99 msec",
        "p99.9 msec",
        "MB/s out",
        "MB/s in",
        "cpu us",
        "bottleneck"
    )?;
    for e in rows {
        let s = &e.stats;
        let h = &s.latency;
        let step = e.step.as_ref();
        let field = |k: &str| step.and_then(|v| v.get(k));
        let secs = s.duration_secs();
        let mbps = |bytes: u64| if secs > 0.0 { bytes as f64 / secs / 1e6 } else { 0.0 };
        if none_succeeded(s) {
            writeln!(
                out,
                "  {:>12} {:>7} {:>5} {:>7} {:>10} no request succeeded ({} errors)",
                field("datasize").unwrap_or_default(),
                field("clients").unwrap_or_default(),
                field("pipeline").unwrap_or_default(),
                threads_shown(field("threads")),
                e.target_rps.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                s.errors.total(),
            )?;
            continue;
        }
        writeln!(
            out,
            "  {:>12} {:>7} {:>5} {:>7} {:>10} {:>12.2} {:>9.3} {:>9.3} {:>9.3} {:>10.3} {:>8.2} {:>8.2} {:>7.2} {:>10}",
            field("datasize").unwrap_or_default(),
            field("clients").unwrap_or_default(),
            field("pipeline").unwrap_or_default(),
            threads_shown(field("threads")),
            e.target_rps.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            finite(s.rps()),
            mean(h) / 1000.0,
            ms(value_at_percentile(h, 50.0)),
            ms(value_at_percentile(h, 99.0)),
            ms(value_at_percentile(h, 99.9)),
            finite(mbps(s.bytes_sent)),
            finite(mbps(s.bytes_received)),
            finite(e.cpu.map_or(0.0, |c| c.per_request_us(s.requests))),
            e.verdict.as_ref().map_or("", |v| v.side.name()),
        )?;
    }
    write_spread(rows, out)?;
    writeln!(out)
}

/// A sweep table's `threads` cell: `-` for 0, redis-benchmark's "no --threads" (one loop).
fn threads_shown(threads: Option<String>) -> String {
    threads.filter(|t| t != "0").unwrap_or_else(|| "-".into())
}

/// `--repeat`: for each combination run more than once, the mean of its runs and their spread
/// (the sample standard deviation, as a share of the mean).
fn write_spread(rows: &[TestResult], out: &mut impl Write) -> io::Result<()> {
    let mut groups: Vec<(String, Vec<&TestResult>)> = Vec::new();
    for e in rows {
        // The runs of one combination differ in `run` only.
        let key = e.step.as_ref().map(|s| StepValues { run: 0, ..s.clone() });
        let key = format!("{key:?} {:?}", e.target_rps);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(e),
            None => groups.push((key, vec![e])),
        }
    }
    for (_, runs) in groups.iter().filter(|g| g.1.len() > 1) {
        let spread = |f: &dyn Fn(&TestResult) -> f64| {
            let v: Vec<f64> = runs.iter().map(|e| f(e)).collect();
            let n = v.len() as f64;
            let m = v.iter().sum::<f64>() / n;
            let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            (finite(m), if m > 0.0 { finite(sd / m * 100.0) } else { 0.0 })
        };
        let (rps, rps_sd) = spread(&|e| e.stats.rps());
        let (p50, p50_sd) = spread(&|e| ms(value_at_percentile(&e.stats.latency, 50.0)));
        let (p99, p99_sd) = spread(&|e| ms(value_at_percentile(&e.stats.latency, 99.0)));
        let step = runs[0].step.as_ref();
        let field = |k: &str| step.and_then(|v| v.get(k));
        // `--threads 0` is no option given (one loop): left out.
        let threads =
            field("threads").filter(|t| t != "0").map(|t| format!(" --threads {t}")).unwrap_or_default();
        writeln!(
            out,
            "  mean of {} runs at -d {} -c {} -P {}{threads}: {rps:.2} rps (± {rps_sd:.1}%), p50 {p50:.3} msec \
             (± {p50_sd:.1}%), p99 {p99:.3} msec (± {p99_sd:.1}%)",
            runs.len(),
            field("datasize").unwrap_or_default(),
            field("clients").unwrap_or_default(),
            field("pipeline").unwrap_or_default(),
        )?;
    }
    Ok(())
}

pub fn write_rate_table(steps: &[TestResult], poisson: bool, out: &mut impl Write) -> io::Result<()> {
    let Some(first) = steps.iter().find(|e| e.target_rps.is_some()) else { return Ok(()) };
    writeln!(out, "{}: open loop, {} arrivals", first.name, arrivals(poisson))?;
    writeln!(
        out,
        "  {:>12} {:>12} {:>9} {:>9} {:>10} {:>11} {:>11} {:>8} {:>10}",
        "target rps",
        "achieved",
        "p50 msec",
        "p99 msec",
        "p99.9 msec",
        "service p50",
        "service p99",
        "errors",
        "bottleneck"
    )?;
    for e in steps.iter().filter(|e| e.target_rps.is_some()) {
        if none_succeeded(&e.stats) {
            let target = e.target_rps.unwrap_or(0);
            writeln!(out, "  {target:>12} no request succeeded ({} errors)", e.stats.errors.total())?;
            continue;
        }
        let h = &e.stats.latency;
        let (s50, s99) = service(&e.stats);
        writeln!(
            out,
            "  {:>12} {:>12.2} {:>9.3} {:>9.3} {:>10.3} {:>11.3} {:>11.3} {:>8} {:>10}",
            e.target_rps.unwrap_or(0),
            finite(e.stats.rps()),
            ms(value_at_percentile(h, 50.0)),
            ms(value_at_percentile(h, 99.0)),
            ms(value_at_percentile(h, 99.9)),
            s50,
            s99,
            e.stats.errors.total(),
            e.verdict.as_ref().map_or("", |v| v.side.name()),
        )?;
    }
    writeln!(out)
}

/// One second of a running test, for `--live` (stderr).
pub fn live_line(title: &str, second: usize, s: &respbench_core::stats::Second) -> String {
    format!(
        "{title}: second {second}: {} requests per second, p50={:.3} msec, p99={:.3} msec, errors {}",
        s.requests,
        ms(s.p50),
        ms(s.p99),
        s.errors
    )
}

/// A test's per-second time series (`--series`).
pub fn write_series(stats: &Stats, out: &mut impl Write) -> io::Result<()> {
    let ramp = stats.ramp.is_some();
    writeln!(
        out,
        "  {:>6} {:>10} {:>12} {:>9} {:>9} {:>8}{}",
        "second",
        "requests",
        "rps",
        "p50 msec",
        "p99 msec",
        "errors",
        if ramp { "  step" } else { "" }
    )?;
    let total = stats.duration_secs();
    for (i, s) in stats.series.iter().enumerate() {
        // The last second may be partial.
        let length = (total - i as f64).clamp(1e-3, 1.0);
        let step = stats.step_of_second(i).map(|k| format!(" {:>5}", k + 1)).unwrap_or_default();
        writeln!(
            out,
            "  {:>6} {:>10} {:>12.2} {:>9.3} {:>9.3} {:>8}{step}",
            i,
            s.requests,
            s.requests as f64 / length,
            ms(s.p50),
            ms(s.p99),
            s.errors
        )?;
    }
    Ok(())
}

/// `--ramp`: a table of the test's steps, each with its level, figures and bottleneck, then
/// each step's verdict sentence when it is not the test's (`verbose`). Nothing without a ramp.
pub fn write_ramp(e: &TestResult, verbose: bool, out: &mut impl Write) -> io::Result<()> {
    let Some(r) = &e.ramp else { return Ok(()) };
    writeln!(
        out,
        "{}: ramp {} {}..{} step {} every {}s, {} steps{}",
        e.name,
        r.kind.name(),
        r.from,
        r.to,
        r.step,
        r.every_s,
        r.steps.len(),
        match r.kind {
            respbench_core::RampKind::Clients =>
                ", each client's connection opened at its step and kept open",
            respbench_core::RampKind::Rps => ", the connections kept open",
        }
    )?;
    writeln!(
        out,
        "  {:>4} {:>8} {:>10} {:>8} {:>10} {:>11} {:>9} {:>9} {:>10} {:>7} bottleneck",
        "step",
        "clients",
        "target rps",
        "start s",
        "requests",
        "rps",
        "p50 msec",
        "p99 msec",
        "p99.9 msec",
        "errors"
    )?;
    for (k, s) in r.steps.iter().enumerate() {
        let target = s.target_rps.map_or("-".to_string(), |t| t.to_string());
        let side = s.verdict.as_ref().map_or("unknown", |v| v.side.name());
        writeln!(
            out,
            "  {:>4} {:>8} {:>10} {:>8.1} {:>10} {:>11.2} {:>9.3} {:>9.3} {:>10.3} {:>7} {side}",
            k + 1,
            s.clients,
            target,
            s.start_s,
            s.requests,
            s.rps,
            ms(s.p50_us),
            ms(s.p99_us),
            ms(s.p999_us),
            s.errors
        )?;
    }
    if verbose {
        for (k, s) in r.steps.iter().enumerate() {
            if let Some(v) = &s.verdict {
                writeln!(out, "  step {}: {}", k + 1, v.text)?;
            }
        }
    }
    Ok(())
}

/// CSV: one row per `--ramp` step, after its test's (and its events'): `"ramp"`, the test, the
/// step's number, its clients, its target rate (empty in a closed loop), when it began and how
/// long it lasted (s), replies, error replies, replies per second, p50, p99 and p99.9 (ms), and
/// its bottleneck. Nothing without a ramp.
pub fn write_ramp_csv(e: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let Some(r) = &e.ramp else { return Ok(()) };
    let title = quoted(&e.name);
    for (k, s) in r.steps.iter().enumerate() {
        let target = s.target_rps.map(|t| t.to_string()).unwrap_or_default();
        let side = s.verdict.as_ref().map_or("unknown", |v| v.side.name());
        writeln!(
            out,
            "\"ramp\",{title},\"{}\",\"{}\",\"{target}\",\"{:.3}\",\"{:.3}\",\"{}\",\"{}\",\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{side}\"",
            k + 1,
            s.clients,
            s.start_s,
            s.duration_s,
            s.requests,
            s.errors,
            finite(s.rps),
            ms(s.p50_us),
            ms(s.p99_us),
            ms(s.p999_us)
        )?;
    }
    Ok(())
}

/// What the progress line shows of a running test.
#[derive(Clone, Copy, Debug)]
pub struct Progressed<'a> {
    /// The test (and step) running.
    pub title: &'a str,
    /// Seconds since it began.
    pub elapsed_s: f64,
    /// What it runs to.
    pub goal: respbench_session::observer::Goal,
    /// Requests completed so far.
    pub completed: u64,
    /// Requests per second since the line was last drawn, and since the test began.
    pub rps_now: f64,
    /// Requests per second since the test began.
    pub rps_overall: f64,
    /// The p99 of every request so far, in milliseconds.
    pub p99_ms: Option<f64>,
}

/// The progress line (a terminal's stderr only), ending in `\r` so the next one overwrites it,
/// as memtier_benchmark's `[RUN #1 9%, 1 secs]`: `[GET: 41%, 1.2 s, 1.7 s left] 34123 rps (now
/// 35010), p99 1.234 msec, 41000 of 100000 requests` (the share done, the time elapsed and left). The share is of `-n` or of
/// `--duration`; the time left is the duration's rest, or, for `-n`, the rest at the rate so
/// far (after the duration's end, the requests still in flight drain).
pub fn progress_line(p: &Progressed) -> String {
    use respbench_session::observer::Goal;
    let (share, left, of) = match p.goal {
        Goal::Requests(n) => {
            let share = if n == 0 { 1.0 } else { (p.completed as f64 / n as f64).min(1.0) };
            let left = (p.rps_overall > 0.0).then(|| n.saturating_sub(p.completed) as f64 / p.rps_overall);
            (share, left, format!("{} of {n} requests", p.completed))
        }
        Goal::Duration(d) => {
            let d = d.as_secs_f64();
            let share = if d > 0.0 { (p.elapsed_s / d).min(1.0) } else { 1.0 };
            (share, Some((d - p.elapsed_s).max(0.0)), format!("{} requests of {d:.1} s", p.completed))
        }
    };
    let left = match left {
        Some(l) if share >= 1.0 && matches!(p.goal, Goal::Duration(_)) && l == 0.0 => "draining".to_string(),
        Some(l) => format!("{:.1} s left", finite(l)),
        None => "? s left".to_string(),
    };
    let p99 = p.p99_ms.map_or("-".to_string(), |v| format!("{:.3}", finite(v)));
    format!(
        "[{}: {:.0}%, {:.1} s, {left}] {:.0} rps (now {:.0}), p99 {p99} msec, {of}\r",
        p.title,
        finite(share * 100.0).floor(),
        finite(p.elapsed_s),
        finite(p.rps_overall),
        finite(p.rps_now),
    )
}

/// `line` (a progress line ending in `\r`) cut to fit `columns` (a terminal's width; one column
/// is kept free, where a terminal would wrap), `…` marking the cut.
pub fn fit_progress(line: &str, columns: Option<usize>) -> String {
    let text = line.strip_suffix('\r').unwrap_or(line);
    match columns {
        Some(c) if c > 1 && text.chars().count() > c - 1 => {
            let kept: String = text.chars().take(c.saturating_sub(2)).collect();
            format!("{kept}…\r")
        }
        _ => line.to_string(),
    }
}

/// Spaces over the last `width` bytes of progress, then `\r`: what redis-benchmark prints before
/// a report on a terminal (`"%*s\r"`).
pub fn clear_progress(width: usize) -> String {
    format!("{:width$}\r", " ")
}

/// Writes the error replies of a test, if any: `  errors: N (ERR: n, WRONGTYPE: m)` after a
/// verbose report, or `<title>: errors: N (…)` after a quiet line (which itself stays exactly
/// redis-benchmark's). redis-benchmark has no such line: it exits on the first error reply.
pub fn write_errors(r: &TestReport, quiet: bool, out: &mut impl Write) -> io::Result<()> {
    let errors = &r.stats.errors;
    let total = errors.total();
    if total == 0 {
        return Ok(());
    }
    if quiet {
        write!(out, "{}: ", r.title)?;
    } else {
        write!(out, "  ")?;
    }
    write!(out, "errors: {total} (")?;
    for (i, k) in errors.kinds().iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        write!(out, "{sep}{}: {}", k.prefix, k.count)?;
    }
    writeln!(out, ")")
}

/// The summary figures in milliseconds, as redis-benchmark computes them.
struct Summary {
    avg: f64,
    min: f64,
    p50: f64,
    p95: f64,
    p99: f64,
    max: f64,
}

impl Summary {
    fn of(h: &Histogram<u64>) -> Summary {
        Summary {
            avg: mean(h) / 1000.0,
            // Lowest equivalent of the smallest value, highest equivalent of the largest, as C's
            // hdr_min and hdr_max; both 0 when empty.
            min: ms(h.min()),
            p50: ms(value_at_percentile(h, 50.0)),
            p95: ms(value_at_percentile(h, 95.0)),
            p99: ms(value_at_percentile(h, 99.0)),
            max: ms(h.max()),
        }
    }
}

/// After redis-benchmark's `Could not connect to Redis at HOST:PORT: Connection refused`: where
/// respbench looked, and how to point it elsewhere (the commonest first-run mistake: no server
/// there, or another port).
pub fn refused_hint(error: &str) -> Option<String> {
    let at = error.strip_prefix("Could not connect to Redis at ")?;
    let (address, why) = at.split_once(": ")?;
    if !why.starts_with("Connection refused") {
        return None;
    }
    Some(format!(
        "Nothing accepts connections at {address}: start a server there (redis-server --port PORT), \
         or point respbench at yours with -h HOST -p PORT (or -s SOCKET, or -u redis://HOST:PORT)."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use respbench_core::Time;

    /// Stats over `values` (microseconds), one second long.
    fn stats(values: impl IntoIterator<Item = u64>) -> Stats {
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap();
        for v in values {
            s.record(v * 1000, 0, Time::from_micros(1_000_000));
        }
        s
    }

    #[test]
    fn workload_lines_only_for_what_redis_benchmark_lacks() {
        use respbench_core::dist::{KeyDist, ValueSize};
        assert!(workload_lines(&ValueSize::Fixed(3), KeyDist::Uniform, Some(10), "").is_empty());
        assert_eq!(
            workload_lines(&ValueSize::Range { lo: 16, hi: 1024 }, KeyDist::Zipf(0.99), Some(1000), "b:"),
            ["value sizes: 16-1024 bytes", "keys: zipf:0.99 over 1000", "key prefix: b:"]
        );
        let s = stats([100]);
        let mut r = report("SET", &s);
        r.workload = vec!["value sizes: 16:3,1024:1 bytes".into()];
        let mut out = Vec::new();
        write_verbose(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("  3 bytes payload\n  value sizes: 16:3,1024:1 bytes\n  keep alive: 1\n"),
            "{text}"
        );
    }

    fn report<'a>(title: &'a str, s: &'a Stats) -> TestReport<'a> {
        TestReport {
            title,
            stats: s,
            percentiles: &[],
            cpu: None,
            verdict: None,
            clients: 50,
            never_ran: (0, 0),
            payload_bytes: 3,
            workload: Vec::new(),
            keepalive: true,
            threads: 0,
            server_save: Some(""),
            server_appendonly: Some("no"),
            backend_note: None,
            nodes: &[],
        }
    }

    fn verbose(r: &TestReport) -> String {
        let mut out = Vec::new();
        write_verbose(r, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The lines of the section that starts with `header`, up to the next blank line.
    fn section<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
        text.lines().skip_while(|l| *l != header).skip(1).take_while(|l| !l.is_empty()).collect()
    }

    /// (percentile, ms, cumulative count) of a distribution line.
    fn parse(line: &str) -> (f64, f64, u64) {
        let (pct, rest) = line.split_once("% <= ").unwrap();
        let (ms, rest) = rest.split_once(" milliseconds (cumulative count ").unwrap();
        (pct.parse().unwrap(), ms.parse().unwrap(), rest.trim_end_matches(')').parse().unwrap())
    }

    // The expected texts below were checked byte for byte against libhdr_histogram's C
    // iterators (redis deps/hdr_histogram) driven by redis-benchmark's printing loops, for a
    // histogram with the same bounds and values.
    #[test]
    fn verbose_report_for_one_to_a_thousand() {
        let s = stats(1..=1000);
        let expected = "\
====== GET ======
  1000 requests completed in 1.00 seconds
  50 parallel clients
  3 bytes payload
  keep alive: 1
  host configuration \"save\": 
  host configuration \"appendonly\": no
  multi-thread: no

Latency by percentile distribution:
0.000% <= 0.001 milliseconds (cumulative count 1)
50.000% <= 0.500 milliseconds (cumulative count 500)
75.000% <= 0.750 milliseconds (cumulative count 750)
87.500% <= 0.875 milliseconds (cumulative count 875)
93.750% <= 0.938 milliseconds (cumulative count 938)
96.875% <= 0.969 milliseconds (cumulative count 969)
98.438% <= 0.985 milliseconds (cumulative count 985)
99.219% <= 0.993 milliseconds (cumulative count 993)
99.609% <= 0.997 milliseconds (cumulative count 997)
99.805% <= 0.999 milliseconds (cumulative count 999)
99.902% <= 1.000 milliseconds (cumulative count 1000)
100.000% <= 1.000 milliseconds (cumulative count 1000)

Cumulative distribution of latencies:
10.000% <= 0.100 milliseconds (cumulative count 100)
20.000% <= 0.200 milliseconds (cumulative count 200)
30.000% <= 0.300 milliseconds (cumulative count 300)
40.000% <= 0.400 milliseconds (cumulative count 400)
50.000% <= 0.500 milliseconds (cumulative count 500)
60.000% <= 0.600 milliseconds (cumulative count 600)
70.000% <= 0.700 milliseconds (cumulative count 700)
80.000% <= 0.800 milliseconds (cumulative count 800)
90.000% <= 0.900 milliseconds (cumulative count 900)
100.000% <= 1.000 milliseconds (cumulative count 1000)

Summary:
  throughput summary: 1000.00 requests per second
  latency summary (msec):
          avg       min       p50       p95       p99       max
        0.500     0.001     0.500     0.950     0.990     1.000
  hits: 100.0% (0 nil replies: keys that did not exist)
";
        assert_eq!(verbose(&report("GET", &s)), expected);
    }

    #[test]
    fn distributions_are_monotonic_and_end_at_the_total() {
        // A skewed set: most values under a millisecond, a tail to 40 ms.
        let values = (0..5000u64).map(|i| 50 + (i * i * 7919) % 900).chain((0..60).map(|i| 1500 + i * 650));
        let s = stats(values);
        let total = s.requests;
        let text = verbose(&report("GET", &s));
        for header in ["Latency by percentile distribution:", "Cumulative distribution of latencies:"] {
            let lines: Vec<_> = section(&text, header).into_iter().map(parse).collect();
            assert!(lines.len() > 3, "{header}");
            for w in lines.windows(2) {
                assert!(w[0].0 <= w[1].0 && w[0].1 <= w[1].1 && w[0].2 <= w[1].2, "{header}: {w:?}");
            }
            let last = lines.last().unwrap();
            assert_eq!((last.0, last.2), (100.0, total), "{header}");
        }
        // After the first step above 2 ms and the one following it, levels are whole
        // milliseconds apart; the values shown are bucket ends, a few µs past the level.
        let cumulative: Vec<_> =
            section(&text, "Cumulative distribution of latencies:").into_iter().map(parse).collect();
        let first_above = cumulative.iter().position(|l| l.1 > 2.0).unwrap();
        for w in cumulative[first_above + 1..].windows(2) {
            let gap = ((w[1].1 - w[0].1) * 1000.0).round() as u64;
            assert!(gap >= 950 && (gap + 50) % 1000 < 100, "{w:?}");
        }
        // The sections are separated by single blank lines and the report ends with the summary.
        assert!(text.contains("  multi-thread: no\n\nLatency by percentile distribution:\n0.000% <= "));
        assert!(
            text.contains(" milliseconds (cumulative count 5060)\n\nCumulative distribution of latencies:\n")
        );
        assert!(text.contains(" milliseconds (cumulative count 5060)\n\nSummary:\n  throughput summary: "));
        assert!(text.ends_with("\n") && !text.ends_with("\n\n"));
        // The summary table's last row, then respbench's own lines (hits).
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[lines.len() - 2].len(), 4 + 6 * 9 + 5);
        assert_eq!(lines[lines.len() - 1], "  hits: 100.0% (0 nil replies: keys that did not exist)");
    }

    #[test]
    fn header_variants() {
        let s = stats([1]);
        let mut r = report("PING_INLINE", &s);
        r.threads = 4;
        r.keepalive = false;
        r.server_save = None;
        let text = verbose(&r);
        assert!(text.starts_with(
            "====== PING_INLINE ======\n  1 requests completed in 1.00 seconds\n  50 parallel clients\n  3 bytes payload\n  keep alive: 0\n  multi-thread: yes\n  threads: 4\n\n"
        ));
        r.threads = 0;
        r.server_save = Some("3600 1 300 100 60 10000");
        r.server_appendonly = None;
        assert!(verbose(&r).contains(
            "  host configuration \"save\": 3600 1 300 100 60 10000\n  host configuration \"appendonly\": \n  multi-thread: no\n\n"
        ));
    }

    /// `--print-percentiles`: the -q line and the summary's columns show the chosen ones, named
    /// as memtier names them, with the values of the C rule the rest of the report uses.
    #[test]
    fn chosen_percentiles() {
        let names: Vec<String> =
            [50.0, 99.0, 99.9, 99.99, 99.999, 0.5].iter().map(|p| percentile_name(*p)).collect();
        assert_eq!(names, ["p50", "p99", "p99.9", "p99.99", "p99.999", "p0.5"]);
        let s = stats((1..=10_000).map(|v| v * 10));
        let mut r = report("GET", &s);
        let chosen = [50.0, 99.9, 99.99];
        r.percentiles = &chosen;
        let mut out = Vec::new();
        write_quiet(&r, &mut out).unwrap();
        let at = |p: f64| ms(value_at_percentile(&s.latency, p));
        let want = format!(
            "GET: {:.2} requests per second, p50={:.3} msec, p99.9={:.3} msec, p99.99={:.3} msec\n",
            s.rps(),
            at(50.0),
            at(99.9),
            at(99.99)
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
        assert!(at(99.99) > at(99.9) && at(99.9) > at(50.0));
        let text = verbose(&r);
        let head = format!(
            "    {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            "avg", "min", "p50", "p99.9", "p99.99", "max"
        );
        assert!(text.contains(&head), "{text}");
        assert!(text.contains(&format!(" {:9.3} {:9.3} ", at(99.9), at(99.99))), "{text}");
    }

    #[test]
    fn quiet_and_csv_rows() {
        let s = stats(1..=1000);
        let r = report("GET", &s);
        let mut out = Vec::new();
        write_quiet(&r, &mut out).unwrap();
        assert_eq!(out, b"GET: 1000.00 requests per second, p50=0.500 msec\n");
        let mut out = Vec::new();
        write_csv_row(&report("MSET (10 keys) \"x\"", &s), None, None, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"MSET (10 keys) \"\"x\"\"\",\"1000.00\",\"0.500\",\"0.001\",\"0.500\",\"0.950\",\"0.990\",\"1.000\",\"0\",\"0\",\"0\",\"\"\n"
        );
        assert_eq!(CSV_HEADER.split(',').count(), 8);
    }

    fn verdict(side: Side) -> Verdict {
        Verdict { side, text: String::new(), machine: None, client_wait: None }
    }

    #[test]
    fn quiet_and_csv_carry_a_verdict_that_is_not_the_server() {
        let s = stats(1..=1000);
        let line = |side: Option<Side>, partial: Option<&str>| {
            let v = side.map(verdict);
            let mut r = report("GET", &s);
            r.verdict = v.as_ref();
            let mut out = Vec::new();
            write_quiet_marked(&r, partial, &mut out).unwrap();
            let mut csv = Vec::new();
            write_csv_row(&r, None, None, &mut csv).unwrap();
            (String::from_utf8(out).unwrap(), String::from_utf8(csv).unwrap())
        };
        // The server limited it: redis-benchmark's line exactly; CSV names it.
        let (q, c) = line(Some(Side::Server), None);
        assert_eq!(q, "GET: 1000.00 requests per second, p50=0.500 msec\n");
        assert!(c.ends_with(",\"0\",\"0\",\"0\",\"server\"\n"), "{c}");
        let (q, c) = line(Some(Side::Machine), None);
        assert_eq!(q, "GET: 1000.00 requests per second, p50=0.500 msec, bottleneck: machine\n");
        assert!(c.ends_with(",\"machine\"\n"), "{c}");
        let (q, _) = line(Some(Side::Client), Some("interrupted after 1000 of 100000 requests"));
        assert_eq!(
            q,
            "GET: 1000.00 requests per second, p50=0.500 msec, bottleneck: client, partial: interrupted after \
             1000 of 100000 requests\n"
        );
        assert_eq!(CSV_ACCOUNT_COLUMNS, ",\"errors\",\"abandoned\",\"unsent\",\"bottleneck\"");
    }

    #[test]
    fn side_by_side_csv_keeps_the_peers_columns_and_ends_with_verdict_and_backend() {
        let e = TestResult {
            backend: Some("smol".into()),
            verdict: Some(verdict(Side::Neither)),
            ..TestResult::new("GET".into(), String::new(), stats(1..=1000))
        };
        let mut out = Vec::new();
        write_compare_header(true, &["smol"], 3, &mut out).unwrap();
        write_compare_row(true, &[&e], 3, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with(CSV_HEADER), "{text}");
        assert!(lines[0].ends_with(",\"cpu_us_per_request\",\"cpu_core_share\",\"bottleneck\",\"backend\""));
        assert!(lines[1].starts_with("\"GET\",\"1000.00\",\"0.500\","), "{text}");
        assert!(lines[1].ends_with(",\"neither\",\"smol\""), "{text}");
        assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
    }

    #[test]
    fn hits_are_said_for_reads_only() {
        let s = stats(1..=10);
        for (title, shown) in
            [("GET", true), ("LRANGE_100 (first 100 elements)", true), ("SET", false), ("PING_MBULK", false)]
        {
            assert_eq!(verbose(&report(title, &s)).contains("  hits: "), shown, "{title}");
        }
        assert!(
            reads("hget h f") && reads("GET (-d 16)") && !reads("script load x") && !reads("MSET (10 keys)")
        );
        // A write that replied nil (SET NX on a key that exists) is said.
        let mut s = stats(1..=10);
        s.nils = 4;
        assert!(verbose(&report("SET", &s)).contains("  hits: 60.0% (4 nil replies"));
    }

    #[test]
    fn an_open_loop_distribution_stays_a_few_dozen_lines() {
        // Corrected latencies from 100 µs to 3 s (a backlog): 1 ms rows would be thousands.
        let mut s = Stats::new(Time::ZERO, 3, true).unwrap();
        for i in 0..30_000u64 {
            s.record((100 + i * 100) * 1000, 100_000, Time::from_micros(1_000_000));
        }
        let text = verbose(&report("GET", &s));
        let header = text.lines().find(|l| l.starts_with("Cumulative distribution of latencies")).unwrap();
        assert!(header.contains("a row where the latency has doubled or 5% more"), "{header}");
        let rows: Vec<_> = section(&text, header).into_iter().map(parse).collect();
        assert!(rows.len() <= OPEN_LOOP_FINE_ROWS + 20 + 12, "{} rows", rows.len());
        assert_eq!(rows.last().map(|r| (r.0, r.2)), Some((100.0, 30_000)));
        for w in rows.windows(2) {
            assert!(w[0].1 < w[1].1 && w[0].2 < w[1].2, "{w:?}");
        }
        for w in rows[OPEN_LOOP_FINE_ROWS..rows.len() - 1].windows(2) {
            assert!(w[1].1 >= 2.0 * w[0].1 * 0.999 || w[1].2 - w[0].2 >= 30_000 / 20, "{w:?}");
        }
        // A closed loop keeps redis-benchmark's rows, however many.
        let mut c = stats([]);
        for i in 0..3000u64 {
            c.record((100 + i * 1000) * 1000, 0, Time::from_micros(1_000_000));
        }
        let text = verbose(&report("GET", &c));
        assert!(section(&text, "Cumulative distribution of latencies:").len() > 1000);
    }

    #[test]
    fn sweep_table_units_and_no_threads_zero() {
        let mut rows = Vec::new();
        for run in 0..2 {
            rows.push(TestResult {
                step: Some(StepValues { datasize: "3".into(), clients: 50, pipeline: 1, threads: 0, run }),
                ..TestResult::new("GET".into(), String::new(), stats(1..=100))
            });
        }
        let mut out = Vec::new();
        write_sweep_table(&rows, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(" p99 msec p99.9 msec "), "{text}");
        assert!(text.contains("mean of 2 runs at -d 3 -c 50 -P 1: "), "{text}");
        assert!(!text.contains("threads 0"), "{text}");
        let row = text.lines().nth(2).unwrap();
        assert_eq!(row.split_whitespace().nth(3), Some("-"), "{text}");
    }

    #[test]
    fn summary_uses_bucket_equivalents_like_c() {
        // 2049 µs falls in a two-wide bucket [2048, 2049]: min is its lowest equivalent, max and
        // percentiles its highest, the mean its median (checked against hdr_mean and friends).
        let s = stats([2049, 2049, 5001]);
        let mut out = Vec::new();
        write_csv_row(&report("X", &s), None, None, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"X\",\"3.00\",\"3.033\",\"2.048\",\"2.049\",\"5.003\",\"5.003\",\"5.003\",\"0\",\"0\",\"0\",\"\"\n"
        );
    }

    /// A test in which nothing succeeded prints no rate, hit ratio or latency in any format
    /// (issue #35), and no NaN: golden lines for a test with no reply and one of error replies.
    #[test]
    fn no_success_prints_no_figures() {
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap();
        // A test that asked for nothing (`-n 0`) failed at nothing: its zeros stay.
        assert!(!none_succeeded(&s));
        s.failed_clients = 1;
        let r = report("GET", &s);
        let text = verbose(&r);
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(
            text.starts_with("====== GET ======\n  no request succeeded: no reply in 0.00 seconds\n"),
            "{text}"
        );
        for figure in ["throughput", "Latency by percentile", "hits:", "latency summary"] {
            assert!(!text.contains(figure), "{figure}: {text}");
        }
        let mut out = Vec::new();
        write_quiet(&r, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "GET: no request succeeded: no reply in 0.00 seconds\n");
        let mut out = Vec::new();
        write_csv_row(&r, None, None, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"GET\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"0\",\"0\",\"0\",\"\"\n"
        );
        let mut s = stats([100, 200]);
        s.errors.add(b"DENIED protected mode", 2);
        s.lost = 3;
        let r = report("GET", &s);
        let mut out = Vec::new();
        write_quiet(&r, &mut out).unwrap();
        write_errors(&r, true, &mut out).unwrap();
        // The rate table's row says it too.
        let mut e = TestResult::new("GET".into(), "GET".into(), s.clone());
        e.target_rps = Some(500);
        let mut table = Vec::new();
        write_rate_table(&[e], false, &mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(table.contains("           500 no request succeeded (2 errors)"), "{table}");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET: no request succeeded: 2 replies in 1.00 seconds, every one an error reply, 3 requests lost with \
             their connections\nGET: errors: 2 (DENIED: 2)\n"
        );
    }

    #[test]
    fn unfinished_requests_are_counted_in_every_form() {
        // An open loop whose server stopped answering: 500 answered, 8 abandoned, 1492 never sent.
        let mut s = Stats::new(Time::ZERO, 3, true).unwrap();
        for i in 0..500u64 {
            s.record(1_000_000, 1_000_000, Time::from_micros(i * 1_000));
        }
        s.end_at(Time::from_micros(4_000_000));
        s.abandoned = 8;
        s.unsent = 1492;
        for _ in 0..1500 {
            s.record_unfinished(2_000_000_000);
        }
        let r = report("PING", &s);
        let text = verbose(&r);
        assert!(text.contains("  500 requests completed in 4.00 seconds\n"), "{text}");
        assert!(text.contains("  throughput summary: 125.00 requests per second\n"), "{text}");
        assert!(
            text.contains(
                "  arrivals: 2000 due = 500 completed + 0 error replies + 0 lost + 8 abandoned + 1492 unsent\n"
            ),
            "{text}"
        );
        assert!(text.contains("  the latencies include 1500 lower bounds"), "{text}");
        assert!(text.contains("  no reply for the last 3.5 s of 4.0 s\n"), "{text}");
        let mut out = Vec::new();
        write_quiet(&r, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PING: 125.00 requests per second, p50=2000.895 msec\n\
             PING: 2000 due = 500 completed + 0 error replies + 0 lost + 8 abandoned + 1492 unsent; \
             no reply for the last 3.5 s of 4.0 s\n"
        );
        let mut out = Vec::new();
        write_csv_row(&r, None, None, &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with(",\"0\",\"8\",\"1492\",\"\"\n"));
    }

    /// Three nodes, a replica among them that served nothing: one second long.
    fn cluster_stats() -> (Stats, Vec<NodeInfo>) {
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap().with_nodes(3, 0).unwrap();
        let at = Time::from_micros(1_000_000);
        // 300 requests at node 0 (100 µs each), 100 at node 2 (2 ms each, one an error).
        for (node, count, micros) in [(0, 300, 100), (2, 100, 2000)] {
            for k in 0..count {
                let error: Option<&[u8]> = (node == 2 && k == 0).then_some(b"ERR x");
                s.record_request(0, micros * 1000, 0, error, at);
                s.record_node(node, micros * 1000, 0, error, at);
            }
        }
        s.redirects.moved = 12;
        s.redirects.ask = 3;
        s.nodes[0].redirects.moved = 12;
        s.nodes[2].redirects.ask = 3;
        let node = |a: &str, primary, slots| NodeInfo { address: a.into(), primary, slots };
        let nodes = vec![
            node("127.0.0.1:7000", true, 8192),
            node("127.0.0.1:7001", false, 8192),
            node("10.0.0.12:7002", true, 8192),
        ];
        (s, nodes)
    }

    #[test]
    fn nodes_table_after_the_summary() {
        let (s, nodes) = cluster_stats();
        let mut r = report("GET", &s);
        r.nodes = &nodes;
        let text = verbose(&r);
        let expected = "\
  nodes (requests by the node that answered them):
    address        role    slots   requests          rps  p50 msec  p99 msec   errors redirects
    127.0.0.1:7000 primary  8192        300       300.00     0.100     0.100        0        12
    127.0.0.1:7001 replica  8192          0         0.00     0.000     0.000        0         0
    10.0.0.12:7002 primary  8192        100       100.00     2.000     2.000        1         3
  redirects: 12 moved, 3 ask, 0 tryagain, 0 clusterdown (not counted as requests)
";
        assert!(text.ends_with(expected), "{text}");
        assert!(text.contains("  hits: 100.0% "), "the table comes after the summary: {text}");
        // Quiet and CSV lines are redis-benchmark's, nodes or not.
        let mut plain = stats(std::iter::repeat_n(100, 300).chain(std::iter::repeat_n(2000, 100)));
        plain.errors = s.errors.clone();
        let lines = |r: &TestReport| {
            let (mut quiet, mut csv) = (Vec::new(), Vec::new());
            write_quiet(r, &mut quiet).unwrap();
            write_csv_row(r, None, None, &mut csv).unwrap();
            (quiet, csv)
        };
        assert_eq!(lines(&r), lines(&report("GET", &plain)));
        // Without nodes, nothing.
        assert!(!verbose(&report("GET", &plain)).contains("nodes"));
    }

    #[test]
    fn progress_line_format() {
        use respbench_session::observer::Goal;
        let mut p = Progressed {
            title: "SET (-d 128)",
            elapsed_s: 1.25,
            goal: Goal::Requests(100_000),
            completed: 41_000,
            rps_now: 35_010.4,
            rps_overall: 32_800.0,
            p99_ms: Some(1.2345),
        };
        // 59000 requests left at 32800 rps: 1.8 s.
        assert_eq!(
            progress_line(&p),
            "[SET (-d 128): 41%, 1.2 s, 1.8 s left] 32800 rps (now 35010), p99 1.234 msec, 41000 of 100000 \
             requests\r"
        );
        p.goal = Goal::Duration(std::time::Duration::from_secs(10));
        p.p99_ms = None;
        p.rps_overall = f64::NAN;
        assert_eq!(
            progress_line(&p),
            "[SET (-d 128): 12%, 1.2 s, 8.8 s left] 0 rps (now 35010), p99 - msec, 41000 requests of 10.0 s\r"
        );
        p.elapsed_s = 10.4;
        assert!(progress_line(&p).starts_with("[SET (-d 128): 100%, 10.4 s, draining] "));
        assert_eq!(clear_progress(3), "   \r");
        // Cut to a terminal's width, one column free.
        assert_eq!(fit_progress("[GET: 5%] 10 rps\r", Some(10)), "[GET: 5%…\r");
        assert_eq!(fit_progress("[GET: 5%] 10 rps\r", Some(80)), "[GET: 5%] 10 rps\r");
        assert_eq!(fit_progress("[GET: 5%] 10 rps\r", None), "[GET: 5%] 10 rps\r");
    }

    #[test]
    fn errors_line_only_when_there_are_errors() {
        let mut s = stats(1..=10);
        let mut out = Vec::new();
        write_errors(&report("GET", &s), false, &mut out).unwrap();
        assert!(out.is_empty());
        for _ in 0..990 {
            s.errors.record(b"ERR unknown command");
        }
        for _ in 0..10 {
            s.errors.record(b"WRONGTYPE Operation against a key");
        }
        let r = report("GET", &s);
        let mut out = Vec::new();
        write_errors(&r, false, &mut out).unwrap();
        assert_eq!(out, b"  errors: 1000 (ERR: 990, WRONGTYPE: 10)\n");
        let mut out = Vec::new();
        write_errors(&r, true, &mut out).unwrap();
        assert_eq!(out, b"GET: errors: 1000 (ERR: 990, WRONGTYPE: 10)\n");
    }

    /// `--verify`'s lines: the counts, each mismatch shown, and how many more were not.
    #[test]
    fn verify_lines_say_the_counts_and_the_mismatches() {
        use respbench_core::stats::{Mismatch, Shown, VerifyStats};
        let mut out = Vec::new();
        write_verify(&VerifyStats::default(), None, &mut out).unwrap();
        write_verify(&VerifyStats::default(), Some("SET"), &mut out).unwrap();
        assert!(out.is_empty(), "nothing without --verify");
        let shown = Shown {
            kind: Mismatch::Stale,
            key: "key:7".into(),
            expected: "rb7 v2".into(),
            got: "(nil)".into(),
        };
        let v = VerifyStats {
            on: true,
            versions: true,
            checked: 10,
            wrong: 1,
            other_key: 0,
            stale: 1,
            shown: vec![shown],
        };
        write_verify(&v, None, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  verify: 10 reads checked, 2 mismatches (1 wrong values, 0 other keys' values, 1 stale; versions checked)\n    stale     key:7: expected rb7 v2, got (nil)\n    (1 more not shown)\n"
        );
        // After a -q line, one line of its own.
        let mut out = Vec::new();
        write_verify(&v, Some("GET"), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET: verify: 10 reads checked, 2 mismatches (1 wrong values, 0 other keys' values, 1 stale; versions checked); the first: stale key:7: expected rb7 v2, got (nil)\n"
        );
    }
}
