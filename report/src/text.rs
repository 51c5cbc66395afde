//! Test reports in redis-benchmark's formats: verbose and quiet (`-q`) here, CSV (`--csv`) in
//! [`csv`], the side-by-side, sweep and rate tables in [`tables`], the progress and `--live` lines
//! in [`progress`], plus respbench's error summary; the sinks under [`crate::sink`] write them.
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

pub mod csv;
pub mod progress;
pub mod tables;
pub use self::csv::*;
pub use self::progress::*;
pub use self::tables::*;

/// In an open loop's verbose report, the rows of the cumulative distribution kept as they are
/// before the rest is thinned (see [`bounded`]).
const OPEN_LOOP_FINE_ROWS: usize = 30;
// json.rs reaches `mean` and `value_at_percentile` through report.
pub(crate) use crate::hdr::{finite, mean, ms, value_at_percentile};

/// What a test's `-q` line and CSV row need: its title, figures and verdict, the clients it
/// ran (to say when all of them failed) and the percentiles asked. A live test's comes from its
/// [`TestReport`] ([`TestReport::line`]); a merged test's and a scenario group's from their
/// [`TestResult`] ([`TestLine::of`]), so neither fakes the other's report.
#[derive(Clone, Copy, Debug)]
pub struct TestLine<'a> {
    /// The line's title (`GET`, `GET [mio] @ 1000 rps`, `TEST/GROUP`).
    pub title: &'a str,
    /// The test's results.
    pub stats: &'a Stats,
    /// Who limited the test, when judged.
    pub verdict: Option<&'a Verdict>,
    /// Parallel clients (`-c`); 0 when not known (a merged test), which never says that all
    /// connections failed.
    pub clients: usize,
    /// `--print-percentiles`: the percentiles shown instead of p50; empty keeps p50.
    pub percentiles: &'a [f64],
}

impl<'a> TestLine<'a> {
    /// The line of a test's result `e` titled `title`, when no run's shape is at hand (a merged
    /// test, a scenario's group): its clients are not known.
    pub fn of(e: &'a TestResult, title: &'a str, percentiles: &'a [f64]) -> TestLine<'a> {
        TestLine { title, stats: &e.stats, verdict: e.verdict.as_ref(), clients: 0, percentiles }
    }
}

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

impl<'a> TestReport<'a> {
    /// What the test's `-q` line and CSV row need of the report.
    pub fn line(&self) -> TestLine<'a> {
        TestLine {
            title: self.title,
            stats: self.stats,
            verdict: self.verdict,
            clients: self.clients,
            percentiles: self.percentiles,
        }
    }
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
    // A cache-aside test says its hits on its own line (its requests hold its SETs too).
    if s.requests > 0 && (reads(r.title) || s.nils > 0) && s.cache.is_none() {
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
    if let Some(c) = &s.cache {
        crate::cache::write(c, "", "  ", out)?;
    }
    if let Some(note) = &r.backend_note {
        writeln!(out, "  {note}")?;
    }
    write_setup(s, r.keepalive, out)?;
    if s.abandoned > 0 {
        writeln!(out, "  abandoned: {} requests unanswered after the stop's grace", s.abandoned)?;
    }
    if let Some(line) = ending(&r.line()) {
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
            "  reconnects: {} ({} requests lost{}), {:.3} s down in all",
            s.drops,
            s.lost,
            resent_words(s.resent, s.refused),
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

/// Writes a test's one-line report, as with `-q`.
pub fn write_quiet(r: &TestLine, out: &mut impl Write) -> io::Result<()> {
    write_quiet_marked(r, None, out)
}

/// The `-q` line's trailing fields, after redis-benchmark's `p50=… msec`: the verdict when it is
/// not "server" (`, bottleneck: client`), and `partial` says why the test has fewer requests
/// than asked (`, partial: interrupted after 5000 of 100000 requests`). Nothing when the server
/// limited a whole test: the line is then redis-benchmark's exactly.
fn quiet_trailer(r: &TestLine, partial: Option<&str>) -> String {
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
pub fn write_quiet_marked(r: &TestLine, partial: Option<&str>, out: &mut impl Write) -> io::Result<()> {
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
fn ending(r: &TestLine) -> Option<String> {
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
mod tests;

/// `, N sent again` when requests in flight at a move were sent again (`--sentinel`), and
/// `, N refused` when a replica refused some; empty otherwise.
fn resent_words(resent: u64, refused: u64) -> String {
    let mut w = String::new();
    if resent > 0 {
        w += &format!(", {resent} sent again");
    }
    if refused > 0 {
        w += &format!(", {refused} refused by a replica");
    }
    w
}
