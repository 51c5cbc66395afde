//! Where a test's time went: the server's own execution time for the test's calls (from its
//! `LATENCY HISTOGRAM`, else `INFO latencystats`, else `INFO commandstats`' `usec_per_call`),
//! the client machine's own pauses ([`ClientPauses`]), and the split of a latency into send
//! lateness, the server's execution and the rest ([`Split`]).
//!
//! What the server measures is command execution inside it (Redis's `call()`), not reading,
//! parsing or writing: the rest of the service time is the wire, both kernels and both
//! processes' queues. This module is pure: the readings come from [`crate::probe`].

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use respbench_core::resp::Value;
use respbench_core::stats::value_at_percentile;
use respbench_core::Stats;

/// What the server's figures measure, as the report and the JSON say it.
pub const MEASURES: &str =
    "command execution inside the server (its call()), not its reading, parsing or writing";

/// The percentiles the server's figures and the split are given at.
pub const PERCENTILES: [f64; 3] = [50.0, 99.0, 99.9];

/// Where the server's figures for a node came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `LATENCY HISTOGRAM` (Redis 7, Valkey): this test's calls, in power-of-two buckets.
    Histogram,
    /// `INFO latencystats` (no `LATENCY HISTOGRAM`): percentiles since the server's statistics
    /// were reset, not this test's alone; the test's own mean from commandstats.
    Latencystats,
    /// `INFO commandstats`: only the mean of this test's calls (`usec_per_call`).
    UsecPerCall,
}

impl Source {
    /// The name the JSON uses.
    pub fn name(self) -> &'static str {
        match self {
            Source::Histogram => "latency_histogram",
            Source::Latencystats => "latencystats",
            Source::UsecPerCall => "usec_per_call",
        }
    }

    /// The source as the report says it.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Histogram => "LATENCY HISTOGRAM, this test's calls",
            Source::Latencystats => "INFO latencystats, since the server's statistics were reset",
            Source::UsecPerCall => "INFO commandstats usec_per_call, this test's calls",
        }
    }

    /// The source named in the JSON, read back.
    pub fn from_name(name: &str) -> Option<Source> {
        [Source::Histogram, Source::Latencystats, Source::UsecPerCall].into_iter().find(|s| s.name() == name)
    }
}

/// One of the server's histogram buckets: calls whose execution took more than `lower_us` and
/// at most `upper_us` microseconds, as the server reports its bounds (rounded down to the
/// microsecond: the true bounds are below the next microsecond).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The bucket below's bound (0 for the first).
    pub lower_us: u64,
    /// The bound the server names the bucket by.
    pub upper_us: u64,
    /// Calls in it.
    pub count: u64,
}

/// One command's execution time at a node (or over every node: merged), for one test's calls.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandTime {
    /// The server's name of the command (`get`, `config|get`).
    pub command: String,
    /// Calls during the test.
    pub calls: u64,
    /// `LATENCY HISTOGRAM`: the test's calls by bucket, in order; empty from other sources.
    pub buckets: Vec<Bucket>,
    /// `INFO latencystats`: p50, p99 and p99.9 in microseconds since the statistics were reset.
    pub since_reset: Option<[f64; 3]>,
    /// The mean of the test's calls (commandstats' `usec` over `calls`), when read.
    pub usec_per_call: Option<f64>,
}

impl CommandTime {
    /// The bucket that holds percentile `p` (0 to 100) of the test's calls, from the
    /// histogram: its bounds in microseconds.
    pub fn bucket_at(&self, p: f64) -> Option<(u64, u64)> {
        let total: u64 = self.buckets.iter().map(|b| b.count).sum();
        if total == 0 {
            return None;
        }
        let wanted = (((p.min(100.0) / 100.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for b in &self.buckets {
            seen = seen.saturating_add(b.count);
            if seen >= wanted {
                return Some((b.lower_us, b.upper_us));
            }
        }
        None
    }
}

/// A node's figures for one test, or why they are not known.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeTime {
    /// `host:port` (or the socket's path).
    pub address: String,
    /// Where the figures came from; `Err`: not known, and why (refused, renamed, a reset).
    pub source: Result<Source, String>,
    /// The test's commands at the node.
    pub commands: Vec<CommandTime>,
    /// The test's replies from this node, to hold the server's count against.
    pub expected_calls: Option<u64>,
}

impl NodeTime {
    /// The server's count of the test's calls.
    pub fn calls(&self) -> u64 {
        self.commands.iter().map(|c| c.calls).fold(0, u64::saturating_add)
    }

    /// Where the server's count is not the test's own (other clients on the server, a
    /// `--warmup`, rejected calls): the sentence that says so.
    pub fn mismatch(&self) -> Option<String> {
        let expected = self.expected_calls?;
        let calls = self.calls();
        (self.source.is_ok() && calls != expected).then(|| {
            format!(
                "the server counted {calls} calls of the test's commands at {} where the test had {expected} \
                 replies from it: other clients were using the server, or calls were not the test's",
                self.address
            )
        })
    }
}

/// The server's side of a test: each node's figures, and over several nodes their merge.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerTime {
    /// One per node the test used (one against a single server).
    pub nodes: Vec<NodeTime>,
    /// Over several nodes: every node's histograms added (empty against a single server).
    pub merged: Vec<CommandTime>,
}

impl ServerTime {
    /// The figures that speak for the whole test: the merge over several nodes, else the one
    /// node's; `None` when not known.
    pub fn overall(&self) -> Option<(&[CommandTime], Source)> {
        if self.nodes.len() > 1 {
            let source =
                self.nodes.iter().filter_map(|n| n.source.as_ref().ok()).copied().max_by_key(|s| *s as u8)?;
            return Some((&self.merged, source));
        }
        let n = self.nodes.first()?;
        Some((&n.commands, *n.source.as_ref().ok()?))
    }

    /// Adds the nodes' figures into [`ServerTime::merged`]: buckets by bound, calls, means
    /// weighted by calls (`since_reset` cannot be added: left out).
    pub fn merge_nodes(&mut self) {
        let mut by: BTreeMap<String, Merging> = BTreeMap::new();
        for c in self.nodes.iter().filter(|n| n.source.is_ok()).flat_map(|n| &n.commands) {
            let e = by.entry(c.command.clone()).or_default();
            e.0 = e.0.saturating_add(c.calls);
            for b in &c.buckets {
                let slot = e.1.entry(b.upper_us).or_insert((b.lower_us, 0));
                slot.1 = slot.1.saturating_add(b.count);
            }
            if let Some(u) = c.usec_per_call {
                e.2 += u * c.calls as f64;
                e.3 = e.3.saturating_add(c.calls);
            }
        }
        self.merged = by
            .into_iter()
            .map(|(command, (calls, buckets, usec, weighed))| CommandTime {
                command,
                calls,
                buckets: buckets
                    .into_iter()
                    .map(|(upper_us, (lower_us, count))| Bucket { lower_us, upper_us, count })
                    .collect(),
                since_reset: None,
                usec_per_call: (weighed > 0).then(|| usec / weighed as f64),
            })
            .collect();
    }
}

/// `LATENCY HISTOGRAM` read: by command, its calls and each bucket's (bound, cumulative
/// count).
pub type Histograms = BTreeMap<String, (u64, Vec<(u64, u64)>)>;

/// One command's merge over nodes: calls, buckets by bound (lower, count), the sum of the
/// means weighed by calls, and the calls weighed.
type Merging = (u64, BTreeMap<u64, (u64, u64)>, f64, u64);

/// One reading of a node's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeReading {
    /// `LATENCY HISTOGRAM`: by command, its calls and each bucket's (bound, cumulative count).
    pub histograms: Option<Histograms>,
    /// `INFO latencystats`: by command, p50/p99/p99.9 in microseconds.
    pub percentiles: Option<BTreeMap<String, [f64; 3]>>,
    /// `INFO commandstats`: by command, calls and microseconds.
    pub commandstats: Option<BTreeMap<String, (u64, u64)>>,
    /// Why nothing could be read (the server's words).
    pub refused: Option<String>,
}

/// The most commands a reply may name: Redis has about 240.
const MAX_COMMANDS: usize = 4096;
/// The most buckets of one command: 1 ns to an hour in powers of two is 42.
const MAX_BUCKETS: usize = 128;

/// Reads a `LATENCY HISTOGRAM` reply (a map, or in RESP2 an array of name and value): `None`
/// when it is not one.
pub fn parse_histogram(v: &Value) -> Option<Histograms> {
    let mut out = BTreeMap::new();
    for (name, body) in pairs(v)? {
        if out.len() >= MAX_COMMANDS {
            return None;
        }
        let name = text(name)?.to_ascii_lowercase();
        let mut calls = None;
        let mut cum = Vec::new();
        for (k, val) in pairs(body)? {
            match text(k)?.as_str() {
                "calls" => calls = Some(int(val)?),
                "histogram_usec" => {
                    for (b, c) in pairs(val)? {
                        if cum.len() >= MAX_BUCKETS {
                            return None;
                        }
                        cum.push((int(b)?, int(c)?));
                    }
                }
                _ => {}
            }
        }
        // Bounds rise and counts never fall: else it is not a histogram.
        if cum.windows(2).any(|w| w[1].0 <= w[0].0 || w[1].1 < w[0].1) {
            return None;
        }
        out.insert(name, (calls?, cum));
    }
    Some(out)
}

/// Reads `INFO latencystats`: `latency_percentiles_usec_get:p50=1.003,p99=2.007,p99.9=5.023`.
/// `None` when the section has no such line.
pub fn parse_latencystats(body: &str) -> Option<BTreeMap<String, [f64; 3]>> {
    let mut out = BTreeMap::new();
    for line in body.lines() {
        let Some((name, rest)) =
            line.strip_prefix("latency_percentiles_usec_").and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let f = |k: &str| {
            rest.trim().split(',').find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse::<f64>().ok())
        };
        if let (Some(a), Some(b), Some(c)) = (f("p50"), f("p99"), f("p99.9")) {
            if out.len() < MAX_COMMANDS {
                out.insert(name.to_ascii_lowercase(), [a, b, c]);
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Reads `INFO commandstats`: by command, `calls` and `usec`. `None` without a `cmdstat_` line.
pub fn parse_commandstats(body: &str) -> Option<BTreeMap<String, (u64, u64)>> {
    let mut out = BTreeMap::new();
    for line in body.lines() {
        let Some((name, rest)) = line.strip_prefix("cmdstat_").and_then(|l| l.split_once(':')) else {
            continue;
        };
        let f = |k: &str| {
            rest.trim().split(',').find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse::<u64>().ok())
        };
        if let (Some(calls), Some(usec)) = (f("calls"), f("usec")) {
            if out.len() < MAX_COMMANDS {
                out.insert(name.to_ascii_lowercase(), (calls, usec));
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

fn pairs(v: &Value) -> Option<Vec<(&Value, &Value)>> {
    match v {
        Value::Map(m) => Some(m.iter().map(|(k, v)| (k, v)).collect()),
        Value::Array(a) if a.len() % 2 == 0 => Some(a.chunks(2).map(|p| (&p[0], &p[1])).collect()),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Bulk(b) | Value::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<u64> {
    match v {
        Value::Integer(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

/// The server's name of the command a request template sends (`get`, lowercase), RESP or
/// inline; `None` for an empty template.
pub fn command_name(template: &[u8]) -> Option<String> {
    let word = if template.first() == Some(&b'*') {
        // `*N\r\n$L\r\nNAME\r\n`.
        let mut lines = template.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
        lines.next()?;
        let len: usize = std::str::from_utf8(lines.next()?.strip_prefix(b"$")?).ok()?.parse().ok()?;
        let name = lines.next()?;
        name.get(..len)?
    } else {
        template.split(|b| b.is_ascii_whitespace()).find(|w| !w.is_empty())?
    };
    Some(String::from_utf8_lossy(word).to_ascii_lowercase())
}

/// Whether the server's name `key` is of command `name` (`config|get` is of `config`).
fn of_command(key: &str, names: &[String]) -> bool {
    names.iter().any(|n| key == n || key.strip_prefix(n.as_str()).is_some_and(|r| r.starts_with('|')))
}

/// The test's calls of `names` at one node, from readings `before` and `after` it, by the best
/// source both have. `Err`: not known, and why.
pub fn between(
    before: &NodeReading,
    after: &NodeReading,
    names: &[String],
) -> Result<(Source, Vec<CommandTime>), String> {
    if let Some(why) = after.refused.as_ref().or(before.refused.as_ref()) {
        return Err(why.clone());
    }
    let reset = || "the server's statistics were reset during the test (CONFIG RESETSTAT)".to_string();
    let means = match (&before.commandstats, &after.commandstats) {
        (Some(b), Some(a)) => Some((b, a)),
        _ => None,
    };
    let mean = |name: &str| -> Option<f64> {
        let (b, a) = means?;
        let (c0, u0) = b.get(name).copied().unwrap_or((0, 0));
        let (c1, u1) = *a.get(name)?;
        let calls = c1.checked_sub(c0)?;
        (calls > 0).then(|| u1.saturating_sub(u0) as f64 / calls as f64)
    };
    if let (Some(b), Some(a)) = (&before.histograms, &after.histograms) {
        let mut out = Vec::new();
        for (name, (calls, cum)) in a.iter().filter(|(k, _)| of_command(k, names)) {
            let (calls0, cum0) = b.get(name).cloned().unwrap_or_default();
            let calls = calls.checked_sub(calls0).ok_or_else(reset)?;
            if calls == 0 {
                continue;
            }
            let (now, was) = (per_bucket(cum), per_bucket(&cum0));
            let mut buckets = Vec::new();
            for (upper, count) in now {
                let count = count.checked_sub(was.get(&upper).copied().unwrap_or(0)).ok_or_else(reset)?;
                if count > 0 {
                    buckets.push(Bucket { lower_us: lower_bound(upper), upper_us: upper, count });
                }
            }
            if was.keys().any(|k| !cum.iter().any(|(u, _)| u == k)) {
                return Err(reset());
            }
            out.push(CommandTime {
                command: name.clone(),
                calls,
                buckets,
                since_reset: None,
                usec_per_call: mean(name),
            });
        }
        return Ok((Source::Histogram, out));
    }
    let Some((b, a)) = means else {
        return Err("the server gave neither LATENCY HISTOGRAM nor INFO commandstats".into());
    };
    let mut out = Vec::new();
    for (name, (calls, _)) in a.iter().filter(|(k, _)| of_command(k, names)) {
        let calls = calls.checked_sub(b.get(name).map_or(0, |c| c.0)).ok_or_else(reset)?;
        if calls == 0 {
            continue;
        }
        let since_reset = after.percentiles.as_ref().and_then(|p| p.get(name)).copied();
        out.push(CommandTime {
            command: name.clone(),
            calls,
            buckets: Vec::new(),
            since_reset,
            usec_per_call: mean(name),
        });
    }
    let source = if after.percentiles.is_some() { Source::Latencystats } else { Source::UsecPerCall };
    Ok((source, out))
}

/// Cumulative counts as counts per bucket, by bound.
fn per_bucket(cum: &[(u64, u64)]) -> BTreeMap<u64, u64> {
    let mut prev = 0;
    cum.iter()
        .map(|&(upper, c)| {
            let n = c.saturating_sub(prev);
            prev = c;
            (upper, n)
        })
        .collect()
}

/// The bound of the bucket below one named `upper`: the server's buckets double (1, 2, 4, 8,
/// 16, 33, 66 …, each bound rounded down to the microsecond), so it is half, rounded down.
fn lower_bound(upper: u64) -> u64 {
    upper / 2
}

/// The client machine's own pauses during a test (jHiccup's method): how late an idle thread
/// that sleeps a fixed interval woke, and how late the event loops woke against the deadlines
/// they asked for.
#[derive(Clone, Debug)]
pub struct ClientPauses {
    /// The idle thread's interval, in microseconds.
    pub interval_us: u64,
    /// How late the idle thread woke, in microseconds.
    pub idle: Histogram<u64>,
    /// How late the event loops woke against their deadlines, in microseconds (`None`: no loop
    /// waited for a deadline).
    pub wake: Option<Histogram<u64>>,
    /// Per second of the test, the idle thread's longest pause, in microseconds.
    pub seconds: Vec<u64>,
    /// Per second of the test, the 99th percentile of the idle thread's pauses, microseconds.
    pub seconds_p99: Vec<u64>,
    /// How many times the idle thread woke.
    pub wakeups: u64,
}

impl From<&respbench_driver::Pauses> for ClientPauses {
    /// What the idle thread and the loops recorded ([`respbench_driver::Progress::pauses`]).
    fn from(p: &respbench_driver::Pauses) -> ClientPauses {
        ClientPauses {
            interval_us: p.interval.as_micros() as u64,
            idle: p.idle.clone(),
            wake: (!p.wake.is_empty()).then(|| p.wake.clone()),
            seconds: p.seconds.clone(),
            seconds_p99: p.seconds_p99(),
            wakeups: p.wakeups,
        }
    }
}

impl ClientPauses {
    /// The idle thread's pause at percentile `p`, in microseconds.
    pub fn at(&self, p: f64) -> u64 {
        value_at_percentile(&self.idle, p)
    }

    /// `this client's own pauses: p99 0.20 ms, p99.9 3.10 ms, max 24.0 ms (an idle thread woken
    /// every 1 ms); its event loops woke p99 0.05 ms late`.
    pub fn describe(&self) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        let mut s = format!(
            "this client's own pauses: p99 {:.2} ms, p99.9 {:.2} ms, max {:.1} ms (an idle thread sleeping {:.1} ms, \
             {} wake-ups)",
            ms(self.at(99.0)),
            ms(self.at(99.9)),
            ms(self.idle.max()),
            ms(self.interval_us),
            self.wakeups
        );
        if let Some(w) = self.wake.as_ref().filter(|w| !w.is_empty()) {
            s += &format!(
                "; its event loops woke late by p99 {:.2} ms, max {:.1} ms against their deadlines",
                ms(value_at_percentile(w, 99.0)),
                ms(w.max())
            );
        }
        s
    }
}

/// The share of a pause percentile within which a latency percentile counts as the client
/// machine's own (p99.9 latency at most 1.5 × the idle thread's p99.9 pause).
pub const WITHIN_PAUSES: f64 = 1.5;

/// Where the time of a test went, at [`PERCENTILES`], in microseconds: each part's own
/// percentile (the parts of one request add up; their percentiles need not).
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// From the intended send (open loop) or the send (closed loop) to the reply.
    pub corrected: [u64; 3],
    /// Open loop: how late requests were sent.
    pub lateness: Option<[u64; 3]>,
    /// From the send to the reply.
    pub service: [u64; 3],
    /// The server's execution: the bucket holding the percentile (bounds), when known.
    pub server: Option<[(u64, u64); 3]>,
    /// The service time less the server's execution: wire, kernels, both processes' queues.
    pub rest: Option<[(u64, u64); 3]>,
    /// Where the server's figures came from.
    pub source: Option<Source>,
}

impl Split {
    /// The split of a test's `stats` with the server's figures `server` (its whole-test
    /// commands and source); `None` for a test with no reply.
    pub fn of(stats: &Stats, server: Option<(&[CommandTime], Source)>) -> Option<Split> {
        if stats.latency.is_empty() {
            return None;
        }
        let at = |h: &Histogram<u64>| PERCENTILES.map(|p| value_at_percentile(h, p));
        let corrected = at(&stats.latency);
        let service = stats.service.as_ref().filter(|h| !h.is_empty()).map(at).unwrap_or(corrected);
        let lateness = stats.lateness.as_ref().filter(|h| !h.is_empty()).map(at);
        // One command's buckets (a mix's: all of them added).
        let server_buckets = server.filter(|(_, s)| *s == Source::Histogram).and_then(|(cmds, _)| {
            let all = CommandTime {
                command: String::new(),
                calls: 0,
                buckets: merge_buckets(cmds),
                since_reset: None,
                usec_per_call: None,
            };
            let b: Vec<(u64, u64)> = PERCENTILES.iter().filter_map(|&p| all.bucket_at(p)).collect();
            <[(u64, u64); 3]>::try_from(b).ok()
        });
        let rest = server_buckets.map(|sb| {
            let mut r = [(0, 0); 3];
            for i in 0..3 {
                r[i] = (service[i].saturating_sub(sb[i].1), service[i].saturating_sub(sb[i].0));
            }
            r
        });
        Some(Split {
            corrected,
            lateness,
            service,
            server: server_buckets,
            rest,
            source: server.map(|(_, s)| s),
        })
    }
}

/// Every command's buckets added by bound.
fn merge_buckets(cmds: &[CommandTime]) -> Vec<Bucket> {
    let mut by: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for b in cmds.iter().flat_map(|c| &c.buckets) {
        let e = by.entry(b.upper_us).or_insert((b.lower_us, 0));
        e.1 = e.1.saturating_add(b.count);
    }
    by.into_iter().map(|(upper_us, (lower_us, count))| Bucket { lower_us, upper_us, count }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::Bulk(s.as_bytes().to_vec())
    }

    /// A RESP2 `LATENCY HISTOGRAM` reply of one command.
    fn reply(name: &str, calls: i64, cum: &[(i64, i64)]) -> Value {
        let buckets = cum.iter().flat_map(|&(b, c)| [Value::Integer(b), Value::Integer(c)]).collect();
        Value::Array(vec![
            bulk(name),
            Value::Array(vec![
                bulk("calls"),
                Value::Integer(calls),
                bulk("histogram_usec"),
                Value::Array(buckets),
            ]),
        ])
    }

    #[test]
    fn the_test_s_calls_are_the_difference_of_two_readings() {
        let before = NodeReading {
            histograms: parse_histogram(&reply("get", 100, &[(1, 90), (2, 100)])),
            commandstats: parse_commandstats("cmdstat_get:calls=100,usec=50,usec_per_call=0.50\r\n"),
            ..Default::default()
        };
        let after = NodeReading {
            histograms: parse_histogram(&reply("get", 1100, &[(1, 90), (2, 600), (1056, 1100)])),
            commandstats: parse_commandstats(
                "cmdstat_get:calls=1100,usec=550050,usec_per_call=500.05\r\ncmdstat_info:calls=3,usec=9\r\n",
            ),
            ..Default::default()
        };
        let (source, cmds) = between(&before, &after, &["get".into()]).unwrap();
        assert_eq!(source, Source::Histogram);
        assert_eq!(cmds.len(), 1);
        let c = &cmds[0];
        assert_eq!(c.calls, 1000);
        assert_eq!(
            c.buckets,
            vec![
                Bucket { lower_us: 1, upper_us: 2, count: 500 },
                Bucket { lower_us: 528, upper_us: 1056, count: 500 }
            ]
        );
        assert_eq!(c.usec_per_call, Some(550.0));
        assert_eq!(c.bucket_at(50.0), Some((1, 2)));
        assert_eq!(c.bucket_at(50.1), Some((528, 1056)));
        assert_eq!(c.bucket_at(99.9), Some((528, 1056)));
        // A reset between the readings: not known, never a wrong figure.
        assert!(between(&after, &before, &["get".into()]).unwrap_err().contains("reset"));
    }

    #[test]
    fn older_servers_fall_back_and_refusals_are_not_known() {
        let before = NodeReading {
            commandstats: parse_commandstats("cmdstat_get:calls=10,usec=10\r\n"),
            ..Default::default()
        };
        let after = NodeReading {
            commandstats: parse_commandstats(
                "cmdstat_get:calls=30,usec=50\r\ncmdstat_set:calls=1,usec=1\r\n",
            ),
            ..Default::default()
        };
        let (source, cmds) = between(&before, &after, &["get".into()]).unwrap();
        assert_eq!(source, Source::UsecPerCall);
        assert_eq!((cmds[0].calls, cmds[0].usec_per_call), (20, Some(2.0)));
        let after = NodeReading {
            percentiles: parse_latencystats(
                "# Latencystats\r\nlatency_percentiles_usec_get:p50=1.003,p99=2.007,p99.9=5.023\r\n",
            ),
            ..after
        };
        let (source, cmds) = between(&before, &after, &["get".into()]).unwrap();
        assert_eq!(source, Source::Latencystats);
        assert_eq!(cmds[0].since_reset, Some([1.003, 2.007, 5.023]));
        let refused =
            NodeReading { refused: Some("NOPERM this user has no permissions".into()), ..Default::default() };
        assert!(between(&before, &refused, &["get".into()]).unwrap_err().contains("NOPERM"));
        assert!(between(&NodeReading::default(), &NodeReading::default(), &["get".into()]).is_err());
    }

    #[test]
    fn hostile_replies_are_not_histograms() {
        assert!(parse_histogram(&reply("get", 10, &[(2, 5), (1, 10)])).is_none());
        assert!(parse_histogram(&reply("get", 10, &[(1, 5), (2, 4)])).is_none());
        assert!(parse_histogram(&reply("get", -1, &[(1, 5)])).is_none());
        assert!(parse_histogram(&Value::Integer(3)).is_none());
        let many: Vec<(i64, i64)> = (0..200).map(|i| (i + 1, i + 1)).collect();
        assert!(parse_histogram(&reply("get", 200, &many)).is_none());
        // RESP3's map reads the same.
        let map = Value::Map(vec![(
            bulk("GET"),
            Value::Map(vec![
                (bulk("calls"), Value::Integer(3)),
                (bulk("histogram_usec"), Value::Map(vec![(Value::Integer(4), Value::Integer(3))])),
            ]),
        )]);
        assert_eq!(parse_histogram(&map).unwrap()["get"], (3, vec![(4, 3)]));
    }

    #[test]
    fn command_names_of_templates() {
        assert_eq!(command_name(b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n").as_deref(), Some("get"));
        assert_eq!(command_name(b"PING\r\n").as_deref(), Some("ping"));
        assert_eq!(command_name(b"*1\r\n$8\r\nGETRANGE\r\n").as_deref(), Some("getrange"));
        assert_eq!(command_name(b"").as_deref(), None);
        assert_eq!(command_name(b"*1\r\n$9\r\nGET\r\n"), None);
        assert!(of_command("config|get", &["config".into()]));
        assert!(!of_command("configx", &["config".into()]));
    }

    #[test]
    fn nodes_merge_by_bucket_and_counts_are_held_to_the_test() {
        let node = |address: &str, count: u64, expected: u64| NodeTime {
            address: address.into(),
            source: Ok(Source::Histogram),
            commands: vec![CommandTime {
                command: "get".into(),
                calls: count,
                buckets: vec![Bucket { lower_us: 8, upper_us: 16, count }],
                since_reset: None,
                usec_per_call: Some(10.0),
            }],
            expected_calls: Some(expected),
        };
        let mut t = ServerTime { nodes: vec![node("a:1", 10, 10), node("b:2", 30, 31)], merged: Vec::new() };
        t.merge_nodes();
        assert_eq!(t.merged[0].calls, 40);
        assert_eq!(t.merged[0].buckets, vec![Bucket { lower_us: 8, upper_us: 16, count: 40 }]);
        assert_eq!(t.overall().unwrap().1, Source::Histogram);
        assert_eq!(t.nodes[0].mismatch(), None);
        assert!(t.nodes[1].mismatch().unwrap().contains("30 calls"));
    }
}
