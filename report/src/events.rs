//! A test's events (`--at`) in every output: the verbose report's section per event, `-q`'s
//! line per event, CSV's row per event, and the JSON's `events`.

use std::io::{self, Write};
use std::time::Duration;

use respbench_core::disruption::{Disruption, REDIRECT_KINDS};
use respbench_session::result::{EventResult, TestResult};

use crate::doc;
use crate::shared::{latency_kind as kind, quoted, unfinished};

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn when(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

/// The event as given: `5s CLIENT PAUSE 500 WRITE`.
fn given(e: &EventResult) -> String {
    format!("{} {}", respbench_core::conn::format_duration(e.event.at), e.event.text)
}

/// The window in words: `recovered in 512.3 ms`, `no disruption`, `not recovered by the end`.
fn verdict(d: &Disruption) -> String {
    match d.recovered {
        None => "not recovered by the end of the test".into(),
        Some(_) if !d.disrupted => "no disruption seen".into(),
        Some(w) => format!("window {:.1} ms", w.as_secs_f64() * 1e3),
    }
}

fn redirects(d: &Disruption) -> String {
    let r: Vec<String> = REDIRECT_KINDS
        .iter()
        .zip(d.redirects)
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    if r.is_empty() {
        "none".into()
    } else {
        r.join(", ")
    }
}

fn errors(d: &Disruption) -> String {
    let mut e: Vec<String> = d.error_kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    if d.lost > 0 {
        e.push(format!("{} lost with their connection", d.lost));
    }
    if e.is_empty() {
        "none".into()
    } else {
        e.join(", ")
    }
}

/// The verbose report's section for each event.
pub fn write_verbose(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    for e in &t.events {
        writeln!(out, "  Event --at '{}':", given(e))?;
        match e.fired.sent {
            Some(s) => writeln!(out, "    sent at {}: {}", when(s), e.fired.outcome.describe())?,
            None => writeln!(out, "    {}", e.fired.outcome.describe())?,
        }
        let Some(d) = &e.cost else { continue };
        let lat = kind(t);
        let healthy = if d.threshold == u64::MAX {
            "too few of its 100 ms windows had replies to judge latency: only errors, losses and redirects count"
                .to_string()
        } else {
            format!("healthy at p99 <= {:.3} ms (1.2 x its highest 100 ms window's p99)", ms(d.threshold))
        };
        writeln!(
            out,
            "    baseline ({} s before, {lat} latency): p50 {:.3} ms, p99 {:.3} ms over {} replies; {healthy}",
            d.baseline_windows as f64 / 10.0,
            ms(d.baseline_p50),
            ms(d.baseline_p99),
            d.baseline_requests,
        )?;
        writeln!(out, "    {}", verdict(d))?;
        let (abandoned, unsent) = unfinished(t, d);
        writeln!(
            out,
            "    in {} windows of 100 ms from {}: {} replies ({:.0}/s), max {:.3} ms, p99 {:.3} ms",
            d.windows,
            when(d.from),
            d.requests,
            d.rate(),
            ms(d.max),
            ms(d.p99)
        )?;
        writeln!(
            out,
            "    errors: {}; redirects: {}; abandoned {abandoned}, unsent {unsent}",
            errors(d),
            redirects(d)
        )?;
        if !e.moved_to.is_empty() {
            writeln!(out, "    slots moved to: {}", e.moved_to.join(", "))?;
        }
        for line in crate::server_window::lines(&crate::server_window::over_event(t, d)) {
            writeln!(out, "    {line}")?;
        }
    }
    Ok(())
}

/// `-q`: one line per event.
pub fn write_quiet(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    write_quiet_as(&t.name, t, out)
}

/// [`write_quiet`] with another title: the side-by-side table's `NAME [BACKEND]`.
pub fn write_quiet_as(title: &str, t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    for e in &t.events {
        let cost = match &e.cost {
            Some(d) => format!(
                ": {}, max {:.3} ms, p99 {:.3} ms ({}), errors {}, redirects {}",
                verdict(d),
                ms(d.max),
                ms(d.p99),
                kind(t),
                d.errors + d.lost,
                d.redirects.iter().sum::<u64>()
            ),
            None => String::new(),
        };
        writeln!(out, "{title}: event '{}' {}{cost}", given(e), e.fired.outcome.describe())?;
    }
    Ok(())
}

/// `merge`'s line for an event of its inputs: what it was, when it was sent, and its window as
/// the input that fired it measured it (only that input's load: said).
pub fn merged_line(test: &str, e: &doc::EventEntry) -> String {
    let from = e.part.map(|p| format!(" (from input {p}'s load alone)")).unwrap_or_default();
    let sent = e.sent_s.map_or("never sent".to_string(), |s| format!("sent at {s:.3} s"));
    let cost = match &e.disruption {
        Some(d) => match d.window_ms {
            Some(w) if d.disrupted => {
                format!(": window {w:.1} ms, max {:.3} ms, p99 {:.3} ms ({})", d.max_ms, d.p99_ms, d.latency)
            }
            Some(_) => ": no disruption seen".to_string(),
            None => ": not recovered by the end of the test".to_string(),
        },
        None => String::new(),
    };
    let at = respbench_core::conn::format_duration(
        std::time::Duration::try_from_secs_f64(e.at_s).unwrap_or_default(),
    );
    format!("{test}: event '{at} {}' {sent}{cost}{from}", e.command)
}

/// CSV: one row per event, after its test's: `"event"`, the test, the event, when it was sent,
/// what came of it, the window in ms (empty: not recovered), max and p99 (ms), errors,
/// redirects, lost, abandoned, unsent, replies per second.
pub fn write_csv(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    write_csv_as(&t.name, t, out)
}

/// [`write_csv`] with another title: the side-by-side table's `NAME [BACKEND]`.
pub fn write_csv_as(title: &str, t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    let q = quoted;
    for e in &t.events {
        let sent = e.fired.sent.map(|s| format!("{:.3}", secs(s))).unwrap_or_default();
        write!(out, "\"event\",{},{},\"{sent}\",{}", q(title), q(&given(e)), q(&e.fired.outcome.describe()))?;
        match &e.cost {
            Some(d) => {
                let window = d.recovered.map(|w| format!("{:.1}", w.as_secs_f64() * 1e3)).unwrap_or_default();
                let (abandoned, unsent) = unfinished(t, d);
                writeln!(
                    out,
                    ",\"{window}\",\"{:.3}\",\"{:.3}\",\"{}\",\"{}\",\"{}\",\"{abandoned}\",\"{unsent}\",\"{:.0}\"",
                    ms(d.max),
                    ms(d.p99),
                    d.errors,
                    d.redirects.iter().sum::<u64>(),
                    d.lost,
                    d.rate()
                )?;
            }
            None => writeln!(out, ",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\"")?,
        }
    }
    Ok(())
}
