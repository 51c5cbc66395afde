//! The bridge between the session's results and the result document's types, below every
//! format: a run's [`TestResult`]s, configuration and server into [`doc`]'s types for the JSON
//! document and the capacity search's entries, and a test read back into a [`TestResult`] for
//! `respbench merge`, `compare` and the capacity search's merge, its histograms and counts
//! checked against each other.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use respbench_core::stats::{ErrorCounts, Interval, Second, Setup};
use respbench_core::{Stats, Time};

use respbench_session::cpu::ClientCpu;
use respbench_session::result::{NodeInfo, Side, StepValues, TestResult, Warning};
use respbench_session::timing::{ServerTime, Split};
use respbench_session::verdict::ServerCpu;

mod cache;

use crate::codec::{decode_histogram, ENCODING};
use crate::doc;
use crate::error::Error;
use crate::hdr::{finite, ms};

/// What keeps a test apart from others in `respbench merge`, read without its histograms: its
/// name, backend, target rate, sweep step and `--ab` side, as [`read_test`] reads them.
pub fn read_key(t: &doc::Test) -> (String, Option<String>, Option<u64>, Option<StepValues>, Option<Side>) {
    let side = t.side.as_deref().and_then(Side::of);
    (t.name.clone(), t.backend.clone(), t.target_rps, t.step.clone(), side)
}

/// A test's finding: `{"kind", "text", "figures": {name: value}}`.
fn warning(w: &Warning) -> doc::Finding {
    doc::Finding {
        kind: w.kind.name().into(),
        text: w.text.clone(),
        figures: w.figures.iter().map(|(k, v)| (k.to_string(), finite(*v))).collect(),
    }
}

/// The session's notices (`--preload`'s line, a missing server CONFIG): the document's
/// `warnings`, each `{"kind": "notice", "text"}`.
pub fn notices(lines: &[String]) -> Vec<doc::Notice> {
    lines.iter().map(|l| doc::Notice { kind: "notice".into(), text: l.clone() }).collect()
}

/// The scenario file the run was read from, for the document.
pub fn scenario(cfg: &respbench_session::config::Config) -> Option<doc::ScenarioFile> {
    cfg.scenario.as_ref().map(|(file, text)| doc::ScenarioFile { file: file.clone(), text: text.clone() })
}

/// One entry of `tests`. `epoch_us` is the run's epoch in microseconds since the Unix epoch, so
/// `start_us`/`end_us` are wall-clock times comparable across processes and machines.
pub fn test(e: &TestResult, epoch_us: u64) -> Result<doc::Test, Error> {
    let stats = &e.stats;
    let none = crate::shared::none_succeeded(stats);
    let count = |n: u64| (n > 0).then_some(n);
    let mut t = doc::Test {
        name: e.name.clone(),
        command: e.command.clone(),
        requests: stats.requests,
        nil_replies: stats.nils,
        expired_misses: count(stats.expired),
        array_replies: count(stats.arrays),
        array_elements: count(stats.array_elements),
        nil_elements: count(stats.nil_elements),
        errors: errors_map(&stats.errors),
        duration_s: finite(stats.duration_secs()),
        // No rate and no latency where no request succeeded: they would be the errors' (or
        // nothing's), as the text says.
        rps: (!none).then(|| finite(stats.rps())),
        latency_ms: (!none).then(|| doc::Latency::from(&stats.latency)),
        no_request_succeeded: none.then_some(true),
        histogram: doc::HistogramData::try_from(&stats.latency)?,
        bytes_sent: stats.bytes_sent,
        bytes_received: stats.bytes_received,
        connections_opened: stats.connections_opened,
        start_us: epoch_us.saturating_add(stats.start.as_micros()),
        end_us: epoch_us.saturating_add(stats.end.as_micros()),
        last_reply_us: Some(epoch_us.saturating_add(stats.last_reply.as_micros())),
        backend: e.backend.clone(),
        target_rps: e.target_rps,
        rps_slack_us: e.slack.map(|s| s.as_micros() as u64),
        clients_never_ran: (e.never_ran != (0, 0))
            .then_some(doc::NeverRan { refused: e.never_ran.0, unreachable: e.never_ran.1 }),
        failed_clients: count(stats.failed_clients),
        abandoned_requests: count(stats.abandoned),
        unsent_requests: count(stats.unsent),
        latency_lower_bounds: count(stats.lower_bounds),
        warnings: (!e.warnings.is_empty()).then(|| e.warnings.iter().map(warning).collect()),
        step: e.step.clone(),
        side: e.side.map(|s| s.name().into()),
        events: (!e.events.is_empty()).then(|| e.events.iter().map(|x| doc::EventEntry::of(e, x)).collect()),
        ramp: e.ramp.clone(),
        groups: match e.groups.is_empty() {
            true => None,
            false => Some(e.groups.iter().map(|g| test(g, epoch_us)).collect::<Result<_, _>>()?),
        },
        slo: e.slo.as_ref().map(doc::GroupSlo::of),
        ..doc::Test::default()
    };
    if let Some(h) = &stats.service {
        t.service_latency_ms = Some(doc::Latency::from(h));
        t.service_histogram = Some(doc::HistogramData::try_from(h)?);
        t.arrivals = Some(doc::Arrivals {
            due: stats.arrivals(),
            completed: stats.requests.saturating_sub(stats.error_replies()),
            error_replies: stats.error_replies(),
            lost: stats.lost,
            abandoned: stats.abandoned,
            unsent: stats.unsent,
        });
    }
    // A mix's commands record none of their own: the total has it.
    if let Some(h) = stats.lateness.as_ref().filter(|h| !h.is_empty()) {
        t.lateness = Some(doc::Distribution {
            ms: doc::Latency::from(h),
            histogram: doc::HistogramData::try_from(h)?,
        });
    }
    if stats.setup.count() > 0 {
        t.connection_setup = Some(setup(&stats.setup)?);
    }
    if !stats.nodes.is_empty() {
        let duration = stats.duration_secs();
        let nodes = stats
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| node(&NodeInfo::nth(&e.nodes, i), n, duration))
            .collect::<Result<Vec<_>, _>>()?;
        t.nodes = Some(nodes);
        t.redirects = Some(stats.redirects);
    }
    if stats.drops > 0 {
        t.reconnects = Some(doc::Reconnects {
            drops: stats.drops,
            lost_requests: stats.lost,
            downtime_s: stats.downtime_micros as f64 / 1e6,
            still_down: stats.still_down,
            resent: stats.resent,
            refused: stats.refused,
        });
    }
    if stats.retries.total() > 0 || stats.retries.gave_up > 0 {
        t.retries = Some(doc::Retries {
            by_error: stats.retries.by_error.kinds().iter().map(|k| (k.prefix.clone(), k.count)).collect(),
            gave_up: stats.retries.gave_up,
        });
    }
    if stats.cursor.followed {
        let c = &stats.cursor;
        t.cursor = Some(doc::Cursor { iterations: c.iterations, elements: c.elements, bad: c.bad });
    }
    if !stats.readdressed.is_empty() {
        let changes = stats.readdressed.iter().map(|r| doc::AddressChange {
            name: r.name.clone(),
            from: r.from.clone(),
            to: r.to.clone(),
            at_s: r.at.nanos_since(stats.start) as f64 / 1e9,
            connections: r.connections,
        });
        t.address_changes = Some(changes.collect());
    }
    if stats.verify.on {
        t.verify = Some(doc::Verify::from(&stats.verify));
    }
    t.replay = e.replay.as_ref().map(replay);
    if stats.keep_series {
        let series = stats
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| doc::SecondEntry {
                second: i as u64,
                ramp_step: stats.step_of_second(i).map(|k| k as u64),
                requests: s.requests,
                errors: s.errors,
                p50_ms: Some(ms(s.p50)),
                p90_ms: Some(ms(s.p90)),
                p99_ms: Some(ms(s.p99)),
                p999_ms: Some(ms(s.p999)),
                max_ms: Some(ms(s.max)),
                upper_bounds: s.bounds.then_some(true),
                histogram: None,
            })
            .collect();
        t.series = Some(series);
    }
    if let Some(c) = &e.cpu {
        t.client_cpu = Some(doc::ClientCpu {
            user_s: finite(c.user_s),
            sys_s: finite(c.sys_s),
            wall_s: finite(c.wall_s),
            threads: c.threads as u64,
            us_per_request: finite(c.per_request_us(stats.requests)),
            core_share: finite(c.core_share()),
            saturated: c.saturated(),
        });
    }
    if let Some(c) = &e.server_cpu {
        t.server_cpu = Some(doc::ServerCpu {
            cores: finite(c.cores),
            main_thread_share: c.main_share.map(finite),
            command_share: c.command_share.map(finite),
            wait_share: c.wait_share.map(finite),
            threaded: c.threaded.clone(),
        });
    }
    if let Some(v) = &e.verdict {
        t.bottleneck = Some(doc::Bottleneck {
            side: v.side.name().into(),
            text: v.text.clone(),
            machine_cpu_busy: v.machine.map(finite),
            client_wait_share: v.client_wait.map(finite),
        });
    }
    t.server_time = e.server_time.as_ref().map(doc::ServerTime::from);
    t.server_series =
        e.server_series.as_ref().map(|s| s.samples.iter().map(doc::ServerSample::from).collect());
    t.server_sampling = e.server_series.as_ref().map(doc::ServerSampling::from);
    t.server_threads = e.server_threads.as_ref().map(doc::ServerThreads::from);
    if let Some(p) = &e.pauses {
        t.client_pauses = Some(doc::ClientPauses::try_from(p)?);
    }
    t.delivery = stats.delivery.as_deref().map(doc::Delivery::try_from).transpose()?;
    t.expiry = stats.expiry.as_deref().map(doc::Expiry::try_from).transpose()?;
    t.tracking = stats.tracking.as_deref().map(doc::Tracking::try_from).transpose()?;
    t.cache_aside = stats.cache.as_deref().map(cache::cache_aside).transpose()?;
    let overall = e.server_time.as_ref().and_then(ServerTime::overall);
    t.time_split = Split::of(stats, overall).as_ref().map(doc::TimeSplit::from);
    Ok(t)
}

/// Error replies by first word: `{"ERR": 10, "WRONGTYPE": 2}`.
fn errors_map(errors: &ErrorCounts) -> BTreeMap<String, u64> {
    errors.kinds().iter().map(|k| (k.prefix.clone(), k.count)).collect()
}

/// Reads an `errors` object back.
fn read_errors(map: &BTreeMap<String, u64>) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    for (prefix, &n) in map {
        errors.add(prefix.as_bytes(), n);
    }
    errors
}

/// Reads a `retries` object back (the keys of those that gave up stay in `--failed-keys`).
fn read_retries(r: &doc::Retries) -> respbench_core::stats::RetryStats {
    let mut back = respbench_core::stats::RetryStats { gave_up: r.gave_up, ..Default::default() };
    for (word, &n) in &r.by_error {
        back.by_error.add(word.as_bytes(), n);
    }
    back
}

/// One entry of a test's `nodes`: who the node is and what it answered; its `rps` is over the
/// test's `duration` (seconds), as the test's own.
fn node(info: &NodeInfo, n: &Stats, duration: f64) -> Result<doc::Node, Error> {
    let rps = if duration > 0.0 { n.requests as f64 / duration } else { 0.0 };
    Ok(doc::Node {
        address: info.address.clone(),
        role: info.role().into(),
        slots: info.slots,
        requests: n.requests,
        rps: finite(rps),
        errors: errors_map(&n.errors),
        nil_replies: n.nils,
        redirects: n.redirects,
        latency_ms: doc::Latency::from(&n.latency),
        histogram: doc::HistogramData::try_from(&n.latency)?,
        service_latency_ms: n.service.as_ref().map(doc::Latency::from),
        service_histogram: n.service.as_ref().map(doc::HistogramData::try_from).transpose()?,
    })
}

/// Reads a test's `nodes` back: each node's description and stats (over the test's interval,
/// `start` to `end`, which a node's entry does not carry).
fn read_nodes(
    nodes: &[doc::Node],
    name: &str,
    start: Time,
    end: Time,
) -> Result<(Vec<NodeInfo>, Vec<Stats>), Error> {
    let mut infos = Vec::new();
    let mut stats = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let decode = |k: &str, h: &doc::HistogramData| {
            decode_histogram(&h.data)
                .map_err(|e| Error::Document(format!("test '{name}': nodes[{i}].{k}: {e}")))
        };
        let latency = decode("histogram", &n.histogram)?;
        let mut s = Stats::new(start, latency.sigfig(), false).map_err(Error::Document)?;
        s.end = end;
        s.requests = n.requests;
        s.nils = n.nil_replies;
        s.errors = read_errors(&n.errors);
        s.redirects = n.redirects;
        s.latency = latency;
        s.service = n.service_histogram.as_ref().map(|h| decode("service_histogram", h)).transpose()?;
        infos.push(NodeInfo { address: n.address.clone(), primary: n.role != "replica", slots: n.slots });
        stats.push(s);
    }
    Ok((infos, stats))
}

/// The `connection_setup` object: how many connections were set up, and each phase's
/// distribution (`tls` only when used).
fn setup(s: &Setup) -> Result<doc::ConnectionSetup, Error> {
    let mut phases = BTreeMap::new();
    for (name, h) in s.phases() {
        if name == "tls" && h.is_empty() {
            continue;
        }
        phases.insert(
            name.to_string(),
            doc::Phase { latency_ms: doc::Latency::from(h), histogram: doc::HistogramData::try_from(h)? },
        );
    }
    Ok(doc::ConnectionSetup { connections: s.count(), phases })
}

/// Reads `connection_setup` back (empty histograms of `sigfig` when the test has none).
fn read_setup(c: Option<&doc::ConnectionSetup>, name: &str, sigfig: u8) -> Result<Setup, Error> {
    let mut s = Setup::new(sigfig).map_err(Error::Document)?;
    let Some(c) = c else { return Ok(s) };
    for (phase, slot) in s.phases_mut() {
        if let Some(p) = c.phases.get(phase) {
            *slot = decode_histogram(&p.histogram.data)
                .map_err(|e| Error::Document(format!("test '{name}': connection_setup.{phase}: {e}")))?;
        }
    }
    Ok(s)
}

/// Reads a `tests` entry back (times are `start_us`/`end_us` as [`Time`]s since the Unix epoch).
pub fn read_test(t: &doc::Test) -> Result<TestResult, Error> {
    let name = t.name.clone();
    if t.histogram.encoding != ENCODING || t.histogram.unit != "us" {
        return Err(Error::Document(format!("test '{name}': histogram is not {ENCODING} in us")));
    }
    let decode = |what: &str, h: &doc::HistogramData| {
        decode_histogram(&h.data).map_err(|e| Error::Document(format!("test '{name}': {what}{e}")))
    };
    let latency = decode("", &t.histogram)?;
    let cpu = t.client_cpu.map(|c| ClientCpu {
        user_s: c.user_s,
        sys_s: c.sys_s,
        wall_s: c.wall_s,
        threads: c.threads as usize,
        share_override: Some(c.core_share),
    });
    let start = Time::from_micros(t.start_us);
    let service = t.service_histogram.as_ref().map(|h| decode("service: ", h)).transpose()?;
    // Absent from documents written before it existed.
    let lateness = t.lateness.as_ref().map(|l| decode("lateness: ", &l.histogram)).transpose()?;
    let series = match &t.series {
        Some(list) => list
            .iter()
            .map(read_second)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Document(format!("test '{name}': series: {e}")))?,
        None => Vec::new(),
    };
    let setup = read_setup(t.connection_setup.as_ref(), &name, latency.sigfig())?;
    let end = Time::from_micros(t.end_us).max(start);
    // Absent from documents written before it existed, whose end was the last reply.
    let last_reply = t.last_reply_us.map_or(end, Time::from_micros).max(start);
    let (nodes, node_stats) = read_nodes(t.nodes.as_deref().unwrap_or(&[]), &name, start, end)?;
    let reconnects = t.reconnects.unwrap_or_default();
    let stats = Stats {
        fine: None,
        appeared: Vec::new(),
        moved: Default::default(),
        found: node_stats.len(),
        requests: t.requests,
        nils: t.nil_replies,
        expired: t.expired_misses.unwrap_or(0),
        arrays: t.array_replies.unwrap_or(0),
        array_elements: t.array_elements.unwrap_or(0),
        nil_elements: t.nil_elements.unwrap_or(0),
        errors: read_errors(&t.errors),
        bytes_sent: t.bytes_sent,
        bytes_received: t.bytes_received,
        connections_opened: t.connections_opened,
        push_messages: 0,
        integer_sum: 0,
        delivery: match &t.delivery {
            Some(d) => Some(Box::new(
                d.read(latency.sigfig())
                    .map_err(|e| Error::Document(format!("test '{name}': delivery: {e}")))?,
            )),
            None => None,
        },
        tracking: match &t.tracking {
            Some(d) => Some(Box::new(
                d.read(latency.sigfig())
                    .map_err(|e| Error::Document(format!("test '{name}': tracking: {e}")))?,
            )),
            None => None,
        },
        cache: match &t.cache_aside {
            Some(c) => Some(Box::new(
                cache::read_cache_aside(c, latency.sigfig())
                    .map_err(|e| Error::Document(format!("test '{name}': cache_aside: {e}")))?,
            )),
            None => None,
        },
        expiry: match &t.expiry {
            Some(e) => Some(Box::new(
                e.read(latency.sigfig())
                    .map_err(|e| Error::Document(format!("test '{name}': expiry: {e}")))?,
            )),
            None => None,
        },
        start,
        end,
        last_reply,
        latency,
        service,
        lateness,
        series,
        keep_series: t.series.is_some(),
        recording: Default::default(),
        parts: Vec::new(),
        setup,
        drops: reconnects.drops,
        lost: reconnects.lost_requests,
        unsent: t.unsent_requests.unwrap_or(0),
        lower_bounds: t.latency_lower_bounds.unwrap_or(0),
        failed_clients: t.failed_clients.unwrap_or(0),
        downtime_micros: (reconnects.downtime_s * 1e6).round() as u64,
        still_down: reconnects.still_down,
        resent: reconnects.resent,
        refused: reconnects.refused,
        abandoned: t.abandoned_requests.unwrap_or(0),
        nodes: node_stats,
        redirects: t.redirects.unwrap_or_default(),
        retries: t.retries.as_ref().map(read_retries).unwrap_or_default(),
        cursor: t.cursor.as_ref().map_or_else(Default::default, |c| respbench_core::stats::CursorStats {
            followed: true,
            iterations: c.iterations,
            elements: c.elements,
            bad: c.bad,
        }),
        readdressed: t
            .address_changes
            .iter()
            .flatten()
            .map(|c| respbench_core::stats::Readdress {
                at: start + std::time::Duration::from_secs_f64(c.at_s.clamp(0.0, 1e9)),
                name: c.name.clone(),
                from: c.from.clone(),
                to: c.to.clone(),
                connections: c.connections,
            })
            .take(respbench_core::stats::READDRESSES_KEEP)
            .collect(),
        verify: t.verify.as_ref().map(respbench_core::stats::VerifyStats::from).unwrap_or_default(),
        // A ramp's steps are one run's: merged runs do not carry them.
        steps: Vec::new(),
        ramp: None,
    };
    check_totals(&name, &stats)?;
    // A group's objectives are judged again on the figures read (merged ones, in `merge`).
    let slo = t
        .slo
        .as_ref()
        .and_then(|s| respbench_session::slo::parse_objectives(&s.given()).ok())
        .map(|o| respbench_session::objective::Judged::of(&o, &stats));
    let server_cpu = t.server_cpu.as_ref().map(|c| ServerCpu {
        cores: c.cores,
        main_share: c.main_thread_share,
        command_share: c.command_share,
        wait_share: c.wait_share,
        threaded: c.threaded.clone(),
    });
    // The verdict is the run's own; merged runs are other loads, so it is not carried over.
    Ok(TestResult {
        name,
        command: t.command.clone(),
        backend: t.backend.clone(),
        cpu,
        target_rps: t.target_rps,
        slack: t.rps_slack_us.map(std::time::Duration::from_micros),
        never_ran: t.clients_never_ran.map_or((0, 0), |c| (c.refused, c.unreachable)),
        server_cpu,
        verdict: None,
        step: t.step.clone(),
        stats,
        nodes,
        warnings: Vec::new(),
        replay: t.replay.as_ref().map(|r| r.figures.clone()),
        side: t.side.as_deref().and_then(Side::of),
        // Not read back: merged runs do not carry them ([`TestResult::merge`]).
        server_time: None,
        pauses: None,
        server_series: None,
        server_threads: None,
        // A merged document's events are not carried: they were one run's, against its load.
        events: Vec::new(),
        ramp: None,
        // `merge` adds the groups by name (`TestResult::merge`).
        groups: t.groups.iter().flatten().map(read_test).collect::<Result<_, _>>()?,
        slo,
    })
}

/// A replay's figures in the document.
fn replay(f: &respbench_session::replay::Figures) -> doc::Replay {
    doc::Replay { figures: f.clone(), on_time_share: f.on_time_share() }
}

/// A test read back must hold what its counts say: its latency histogram one value per reply
/// and per lower bound (`requests` + `latency_lower_bounds`), its service-time histogram one per
/// reply, each node's histogram one per reply of that node. A document whose histograms and
/// counts disagree (edited, or made up) is refused rather than merged into figures that mean
/// nothing.
pub fn check_totals(name: &str, s: &Stats) -> Result<(), Error> {
    let service = s.service.as_ref().map(Histogram::len);
    check_counts(s.latency.len(), service, s.requests, s.lower_bounds)
        .map_err(|e| Error::Document(format!("test '{name}': {e}")))?;
    for (i, n) in s.nodes.iter().enumerate() {
        if n.latency.len() != n.requests {
            return Err(Error::Document(format!(
                "test '{name}': its nodes[{i}].histogram holds {} values where the node's requests say {}",
                n.latency.len(),
                n.requests
            )));
        }
    }
    Ok(())
}

/// [`check_totals`]' rule for one test's histograms, by their lengths: the latency histogram
/// holds `requests + lower_bounds` values, the service time's (when there is one) `requests`.
/// The error says what disagrees, for the caller to name the test.
pub fn check_counts(
    latency: u64,
    service: Option<u64>,
    requests: u64,
    lower_bounds: u64,
) -> Result<(), Error> {
    let want = requests
        .checked_add(lower_bounds)
        .ok_or_else(|| Error::Document("requests + latency_lower_bounds overflows".into()))?;
    if latency != want {
        return Err(Error::Document(format!(
            "its histogram holds {latency} values where requests + latency_lower_bounds say {want}"
        )));
    }
    match service {
        Some(held) if held != requests => Err(Error::Document(format!(
            "its service_histogram holds {held} values where its requests say {requests}"
        ))),
        _ => Ok(()),
    }
}

/// One second of a `series`: its summary (`respbench/2`), or, in a `respbench/1` document, the
/// summary of the histogram it carried.
fn read_second(s: &doc::SecondEntry) -> Result<Second, Error> {
    if let Some(h) = &s.histogram {
        let data = h
            .as_str()
            .or_else(|| h.get("data")?.as_str())
            .ok_or_else(|| Error::Document("a second's histogram without data".into()))?;
        let latency = decode_histogram(data)?;
        return Ok(Second::of(&Interval { requests: s.requests, errors: s.errors, latency, service: None }));
    }
    let us = |v: Option<f64>, k: &str| {
        v.filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| (v * 1000.0).round() as u64)
            .ok_or_else(|| Error::Document(format!("a second without '{k}'")))
    };
    Ok(Second {
        requests: s.requests,
        errors: s.errors,
        p50: us(s.p50_ms, "p50_ms")?,
        p90: us(s.p90_ms, "p90_ms")?,
        p99: us(s.p99_ms, "p99_ms")?,
        p999: us(s.p999_ms, "p999_ms")?,
        max: us(s.max_ms, "max_ms")?,
        bounds: s.upper_bounds.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode_histogram;
    use respbench_core::cluster::Redirects;
    use serde_json::json;
    use serde_json::Value;

    /// A test's fields as the document names them.
    #[test]
    fn a_test_has_the_schema_shape() {
        let mut s = sample(0, &[100, 200, 300, 5000]);
        s.errors.record(b"ERR unknown command");
        s.bytes_sent = 10;
        let cpu = ClientCpu { user_s: 0.25, sys_s: 0.25, wall_s: 1.0, threads: 1, share_override: None };
        let e = TestResult {
            backend: Some("mio".into()),
            cpu: Some(cpu),
            ..TestResult::new("PING".into(), "PING".into(), s)
        };
        let t = value(&test(&e, 1_000_000).unwrap());
        assert_eq!(t["requests"], 4);
        assert_eq!(t["errors"]["ERR"], 1);
        assert_eq!(t["start_us"], 1_000_000);
        assert_eq!(t["end_us"], 1_000_013);
        assert_eq!(t["latency_ms"]["min"], 0.1);
        assert_eq!(t["histogram"]["sigfig"], 3);
        assert_eq!(t["backend"], "mio");
        assert_eq!(t["client_cpu"]["us_per_request"], 125_000.0);
        assert_eq!(t["client_cpu"]["core_share"], 0.5);
        assert_eq!(t["client_cpu"]["saturated"], false);
        for k in ["avg", "min", "p50", "p90", "p95", "p99", "p99_9", "p99_99", "max"] {
            assert!(t["latency_ms"][k].is_f64(), "{k}");
        }
        // Serialized and parsed again, nothing changes.
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), t);
    }

    /// A test entry as the JSON it is written as.
    fn value(t: &doc::Test) -> Value {
        serde_json::to_value(t).unwrap()
    }

    fn sample(start_us: u64, values: &[u64]) -> Stats {
        let mut s = Stats::new(Time::from_micros(start_us), 3, false).unwrap();
        for (i, &v) in values.iter().enumerate() {
            s.record(v * 1000, 0, Time::from_micros(start_us + 10 + i as u64));
        }
        s
    }

    fn entry(name: &str, stats: Stats, cpu: Option<ClientCpu>) -> TestResult {
        TestResult { backend: Some("mio".into()), cpu, ..TestResult::new(name.into(), name.into(), stats) }
    }

    #[test]
    fn a_days_series_is_megabytes_of_json() {
        // A day of seconds at 100k requests per second with six-figure latencies: the test's
        // entry in the document stays near 10 MB (it held a histogram per second before).
        let second = Second {
            requests: 100_000,
            errors: 12,
            p50: 123_456,
            p90: 234_567,
            p99: 345_678,
            p999: 456_789,
            max: 567_890,
            bounds: false,
        };
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap().with_series();
        s.series = vec![second; 86_400];
        let e = entry("GET", s, None);
        let text = serde_json::to_string(&test(&e, 0).unwrap()).unwrap();
        assert!(text.len() < 12_000_000, "{} bytes", text.len());
        assert!(text.len() > 8_000_000, "{} bytes: every second is there", text.len());
    }

    #[test]
    fn seconds_read_back_from_both_schemas() {
        let mut i = Interval::new();
        for v in 1..=100 {
            i.latency.record(v * 10).unwrap();
        }
        i.requests = 100;
        i.errors = 2;
        let want = Second::of(&i);
        // respbench/1: the second's histogram, summarised on reading.
        let v1 = json!({"second": 0, "requests": 100, "errors": 2, "p50_ms": 0.5, "p99_ms": 0.99,
            "max_ms": 1.0, "histogram": encode_histogram(&i.latency).unwrap()});
        assert_eq!(read_second(&serde_json::from_value(v1).unwrap()).unwrap(), want);
        // respbench/2: the summary as written.
        let mut s = Stats::new(Time::ZERO, 3, false).unwrap().with_series();
        s.series = vec![want, Second { bounds: true, ..want }];
        let e = entry("GET", s, None);
        let typed = test(&e, 0).unwrap();
        let t = value(&typed);
        assert_eq!(t["series"][1]["upper_bounds"], true);
        assert!(t["series"][0].get("upper_bounds").is_none() && t["series"][0].get("histogram").is_none());
        let back: Vec<Second> = typed.series.unwrap().iter().map(|v| read_second(v).unwrap()).collect();
        assert_eq!(back, [want, Second { bounds: true, ..want }]);
        let cut = json!({"second": 0, "requests": 1, "errors": 0, "p50_ms": 1.0});
        assert!(read_second(&serde_json::from_value(cut).unwrap())
            .unwrap_err()
            .to_string()
            .contains("p90_ms"));
    }

    /// A test with no reply has no rate and no latency (null, and `no_request_succeeded`), and
    /// no NaN anywhere.
    #[test]
    fn no_requests_gives_no_figures() {
        let mut s = sample(5, &[]);
        // A test that asked for nothing (`-n 0`) failed at nothing: its zeros stay.
        assert!(value(&test(&entry("GET", s.clone(), None), 0).unwrap())["rps"].is_f64());
        s.lost = 2;
        let t = value(&test(&entry("GET", s, None), 0).unwrap());
        assert!(t["rps"].is_null() && t["latency_ms"].is_null(), "{t}");
        assert_eq!(t["no_request_succeeded"], true);
        assert_eq!(t["duration_s"], 0.0);
        assert!(!serde_json::to_string(&t).unwrap().contains("NaN"));
        let t = value(&test(&entry("GET", sample(5, &[3]), None), 0).unwrap());
        assert!(t.get("no_request_succeeded").is_none() && t["rps"].is_f64(), "{t}");
    }

    /// `--verify`'s counts and the mismatches shown go into the `verify` object and read back
    /// (merge keeps them); a test without `--verify` has none.
    #[test]
    fn verify_round_trips() {
        use respbench_core::stats::{Mismatch, Shown, VerifyStats};
        let plain = value(&test(&entry("GET", sample(5, &[3, 4]), None), 0).unwrap());
        assert!(plain.get("verify").is_none(), "{plain}");
        let mut s = sample(5, &[3, 4]);
        let shown = Shown {
            kind: Mismatch::OtherKey,
            key: "key:1".into(),
            expected: "rb1".into(),
            got: "rb2".into(),
        };
        s.verify = VerifyStats {
            on: true,
            versions: true,
            checked: 2,
            wrong: 3,
            other_key: 1,
            stale: 5,
            shown: vec![shown],
        };
        let typed = test(&entry("GET", s.clone(), None), 0).unwrap();
        let t = value(&typed);
        assert_eq!(t["verify"]["checked"], 2);
        assert_eq!(
            t["verify"]["shown"][0],
            json!({"kind": "other_key", "key": "key:1", "expected": "rb1", "got": "rb2"})
        );
        assert_eq!(read_test(&typed).unwrap().stats.verify, s.verify);
    }

    #[test]
    fn nodes_and_redirects_round_trip() {
        let mut s = Stats::new(Time::from_micros(0), 3, true).unwrap().with_nodes(2, 0).unwrap();
        let at = Time::from_micros(2_000_000);
        for k in 0..40u64 {
            let node = (k % 4 == 0) as usize;
            let error: Option<&[u8]> = (k == 1).then_some(b"WRONGTYPE x");
            s.record_request(0, 100_000 + k * 1000, 50_000, error, at);
            s.record_node(node, 100_000 + k * 1000, 50_000, error, at);
        }
        s.nodes[1].nils = 3;
        s.nils = 3;
        s.redirects = Redirects { moved: 5, ask: 2, tryagain: 1, clusterdown: 0 };
        s.nodes[0].redirects = Redirects { moved: 5, ask: 2, ..Redirects::default() };
        s.nodes[1].redirects.tryagain = 1;
        for late in [0, 40_000, 90_000, 2_500_000] {
            s.record_lateness(late);
        }
        let mut e = entry("GET", s, None);
        e.nodes = vec![
            NodeInfo { address: "127.0.0.1:7000".into(), primary: true, slots: 16384 },
            NodeInfo { address: "127.0.0.1:7001".into(), primary: false, slots: 16384 },
        ];
        let typed = test(&e, 0).unwrap();
        let t = value(&typed);
        assert_eq!(t["redirects"], json!({"moved": 5, "ask": 2, "tryagain": 1, "clusterdown": 0}));
        let n = &t["nodes"][1];
        assert_eq!(n["address"], "127.0.0.1:7001");
        assert_eq!(n["role"], "replica");
        assert_eq!(n["slots"], 16384);
        assert_eq!(n["requests"], 10);
        // Over the test's two seconds, as the test's own rps.
        assert_eq!(n["rps"], 5.0);
        assert_eq!(n["nil_replies"], 3);
        assert_eq!(n["redirects"]["tryagain"], 1);
        assert_eq!(t["nodes"][0]["errors"], json!({"WRONGTYPE": 1}));
        assert_eq!(n["latency_ms"]["p50"], 0.116);
        assert!(n["histogram"]["data"].is_string() && n["service_histogram"]["data"].is_string());
        assert_eq!(t["lateness"]["ms"]["max"], 2.501, "2.5 ms within 3 significant figures");
        assert_eq!(t["lateness"]["ms"]["p50"], 0.04);
        let back = read_test(&typed).unwrap();
        assert_eq!(back.stats.lateness, e.stats.lateness);
        assert_eq!(back.nodes, e.nodes);
        assert_eq!(back.stats.redirects, e.stats.redirects);
        for (a, b) in back.stats.nodes.iter().zip(&e.stats.nodes) {
            assert_eq!((a.requests, a.nils, a.errors.total()), (b.requests, b.nils, b.errors.total()));
            assert_eq!((&a.latency, &a.service, &a.redirects), (&b.latency, &b.service, &b.redirects));
            assert_eq!((a.start, a.end), (back.stats.start, back.stats.end));
        }
        // A test against one server has neither field, and reads back without nodes.
        let typed = test(&entry("GET", sample(0, &[100]), None), 0).unwrap();
        let t = value(&typed);
        assert!(t.get("nodes").is_none() && t.get("redirects").is_none());
        let back = read_test(&typed).unwrap();
        assert!(back.nodes.is_empty() && back.stats.nodes.is_empty());
        assert_eq!(back.stats.redirects.total(), 0);
    }

    #[test]
    fn histogram_round_trips() {
        let s = sample(0, &[1, 2, 3, 1000, 123_456, 3_600_000]);
        let back = decode_histogram(&encode_histogram(&s.latency).unwrap()).unwrap();
        assert_eq!(back, s.latency);
        let latency = s.latency.clone();
        let cpu = ClientCpu { user_s: 1.5, sys_s: 0.5, wall_s: 4.0, threads: 2, share_override: None };
        let t = test(&entry("SET", s, Some(cpu)), 0).unwrap();
        let read = read_test(&t).unwrap();
        assert_eq!(read.name, "SET");
        assert_eq!(read.backend.as_deref(), Some("mio"));
        assert_eq!(read.stats.latency, latency);
        assert_eq!(read.stats.requests, 6);
        let back = read.cpu.unwrap();
        assert_eq!((back.user_s, back.sys_s, back.threads, back.core_share()), (1.5, 0.5, 2, 0.25));
    }
}
