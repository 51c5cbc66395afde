//! `--slo`'s presentation: the progress line of each step, the answer line, the table of steps,
//! CSV rows, the JSON document's `capacity` and reading it back (for `respbench merge`, which
//! judges a fleet's ladder again from the merged histograms).

use std::io::{self, Write};

use respbench_core::stats::value_at_percentile;
use respbench_session::capacity::{
    evaluate_ladder, format_us, judge, measure, miss_text, parse_objectives, Capacity, Conclusion, Found,
    Role, StepRecord,
};
use respbench_session::result::TestResult;

use crate::convert;
use crate::doc::{self, Document};
use crate::error::Error;

pub use crate::shared::thousands;

/// The percentiles the table and the chart show of a step: corrected p50, p99, p99.9 and the
/// service p99 (the corrected latency where no service time was kept), in microseconds.
pub fn percentiles(r: &TestResult) -> [u64; 4] {
    let h = &r.stats.latency;
    let s = r.stats.service.as_ref().unwrap_or(h);
    [
        value_at_percentile(h, 50.0),
        value_at_percentile(h, 99.0),
        value_at_percentile(h, 99.9),
        value_at_percentile(s, 99.0),
    ]
}

/// The objectives' values of a step: `p99 0.94 ms, p99.9 2.10 ms`.
fn values_text(c: &Capacity, s: &StepRecord) -> String {
    c.objectives
        .iter()
        .zip(&s.measured.values_us)
        .map(|(o, v)| format!("{} {}", o.label(), format_us(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The progress line of one step (stderr, on a terminal).
pub fn step_line(test: &str, n: usize, most: u32, c_objectives: &Capacity, s: &StepRecord) -> String {
    format!(
        "{test}: step {n}/{most} ({}): {} rps, achieved {:.0}: {}: {}",
        s.role.name(),
        thousands(s.rate),
        s.measured.achieved,
        values_text(c_objectives, s),
        if s.passed {
            "pass".to_string()
        } else {
            format!("fail ({})", miss_text(&c_objectives.objectives, s))
        }
    )
}

/// The answer line: `GET: 87,300 requests per second meet p99<=1ms (p99 0.94 ms); 91,000 did
/// not (p99 1.80 ms)`, or that no rate did.
pub fn answer_line(f: &Found) -> String {
    let c = &f.capacity;
    let slo: Vec<&str> = c.objectives.iter().map(|o| o.text.as_str()).collect();
    let slo = slo.join(",");
    let test = &f.test;
    match c.conclusion {
        Conclusion::Met { rate, step, above, confirmed } => {
            let s = &c.steps[step];
            let mut line =
                format!("{test}: {} requests per second meet {slo} ({})", thousands(rate), values_text(c, s));
            match above.map(|a| &c.steps[a]) {
                Some(a) => {
                    line += &format!("; {} did not ({})", thousands(a.rate), miss_text(&c.objectives, a))
                }
                None => line += "; no higher rate was tried (the top of the search met it)",
            }
            if !confirmed && !c.steps.iter().all(|s| s.role == Role::Ladder) {
                line += "; not confirmed: the step budget ran out (--slo-steps)";
            }
            line
        }
        Conclusion::Unreachable { lowest } => {
            let s = &c.steps[lowest];
            let budget = if c.out_of_steps { " (the step budget ran out, --slo-steps)" } else { "" };
            let passed = c.steps.iter().filter(|s| s.passed).count();
            if passed == 0 {
                format!(
                    "{test}: no rate tried meets {slo}: the lowest, {} rps, had {}{budget}",
                    thousands(s.rate),
                    values_text(c, s)
                )
            } else {
                // Steps passed, but each had a failure at or below its rate: the steps were noisy,
                // and saying that no rate met the objective would not be true.
                format!(
                    "{test}: no rate held {slo} in every step: {passed} of {} steps passed, but a step at or \
                     below each of them failed; the lowest, {} rps, had {}{budget} (noisy steps: a longer \
                     --duration steadies them)",
                    c.steps.len(),
                    thousands(s.rate),
                    values_text(c, s)
                )
            }
        }
        Conclusion::NotRun => format!("{test}: the capacity search ran no step"),
    }
}

/// The sentence when the client or the machine, not the server, limited the step above the
/// answer.
pub fn ceiling_line(f: &Found) -> Option<String> {
    let what = match f.capacity.conclusion {
        Conclusion::Met { .. } => "this ceiling was set by",
        _ => "the lowest step was limited by",
    };
    f.client_ceiling()
        .map(|v| format!("{}: {what} the {}, not the server: {}", f.test, v.side.name(), v.text))
}

/// A search's report in text (verbose and `-q`): its table, its answer and what capped it.
pub fn write_report(f: &Found, out: &mut impl Write) -> io::Result<()> {
    write_table(f, out)?;
    writeln!(out, "{}", answer_line(f))?;
    if let Some(line) = ceiling_line(f) {
        writeln!(out, "{line}")?;
    }
    out.flush()
}

/// The table of steps, in the order they ran.
pub fn write_table(f: &Found, out: &mut impl Write) -> io::Result<()> {
    let c = &f.capacity;
    if let Some(ceiling) = c.ceiling {
        writeln!(out, "{}: closed-loop probe: {:.0} rps", f.test, ceiling)?;
    }
    writeln!(
        out,
        "  {:>4} {:>8} {:>11} {:>11} {:>9} {:>9} {:>10} {:>11} {:>8} {:<6} why",
        "step",
        "role",
        "target rps",
        "achieved",
        "p50 msec",
        "p99 msec",
        "p99.9 msec",
        "service p99",
        "verdict",
        "result",
    )?;
    let ms = |us: u64| us as f64 / 1000.0;
    for (k, (s, r)) in c.steps.iter().zip(&f.results).enumerate() {
        let [p50, p99, p999, s99] = percentiles(r);
        writeln!(
            out,
            "  {:>4} {:>8} {:>11} {:>11.0} {:>9.3} {:>9.3} {:>10.3} {:>11.3} {:>8} {:<6} {}",
            k + 1,
            s.role.name(),
            s.rate,
            s.measured.achieved,
            ms(p50),
            ms(p99),
            ms(p999),
            ms(s99),
            r.verdict.as_ref().map_or("-", |v| v.side.name()),
            if s.passed { "pass" } else { "fail" },
            why(c, s)
        )?;
    }
    // Under the table, what the server did in each step (#51 item 4).
    for (k, r) in f.results.iter().enumerate() {
        for line in crate::server_window::lines(&crate::server_window::over_step(r)) {
            writeln!(out, "  step {}: {line}", k + 1)?;
        }
    }
    writeln!(out)
}

/// The table's `why`: the miss, and for a step run twice, why it was.
fn why(c: &Capacity, s: &StepRecord) -> String {
    let mut text = if s.passed { String::new() } else { miss_text(&c.objectives, s) };
    if let Some(pause) = s.rerun_after_pause_us {
        if !text.is_empty() {
            text += "; ";
        }
        text += &format!(
            "run twice: the first run failed while this client's own pauses ({}) exceeded the objective",
            format_us(pause)
        );
    }
    text
}

/// CSV's header for a search: one row per step.
pub const CSV_HEADER: &str = "\"test\",\"step\",\"role\",\"target_rps\",\"achieved_rps\",\"p50_latency_ms\",\"p99_latency_ms\",\"p99_9_latency_ms\",\"service_p99_ms\",\"verdict\",\"passed\",\"answer\"";

/// A search's rows.
pub fn write_csv(f: &Found, out: &mut impl Write) -> io::Result<()> {
    let answer = match f.capacity.conclusion {
        Conclusion::Met { step, .. } => Some(step),
        _ => None,
    };
    for (k, (s, r)) in f.capacity.steps.iter().zip(&f.results).enumerate() {
        let [p50, p99, p999, s99] = percentiles(r);
        let ms = |us: u64| format!("{:.3}", us as f64 / 1000.0);
        writeln!(
            out,
            "{},\"{}\",\"{}\",\"{}\",\"{:.2}\",\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",\"{}\",\"{}\"",
            crate::shared::quoted(&f.test),
            k + 1,
            s.role.name(),
            s.rate,
            s.measured.achieved,
            ms(p50),
            ms(p99),
            ms(p999),
            ms(s99),
            r.verdict.as_ref().map_or("", |v| v.side.name()),
            s.passed,
            answer == Some(k)
        )?;
    }
    Ok(())
}

/// The JSON document's `capacity`: one entry per test searched.
pub fn to_json(searches: &[Found], epoch_us: u64) -> Result<Vec<doc::Search>, Error> {
    searches.iter().map(|f| search_json(f, epoch_us)).collect()
}

fn search_json(f: &Found, epoch_us: u64) -> Result<doc::Search, Error> {
    let c = &f.capacity;
    let objectives = c.objectives.iter().map(doc::Objective::of).collect();
    let mut steps = Vec::new();
    for (s, r) in c.steps.iter().zip(&f.results) {
        let [p50, p99, p999, s99] = percentiles(r);
        steps.push(doc::SearchStep {
            target_rps: s.rate,
            role: s.role.name().into(),
            achieved_rps: finite(s.measured.achieved),
            passed: s.passed,
            miss: (!s.passed).then(|| miss_text(&c.objectives, s)),
            values_us: s.measured.values_us.clone(),
            latency_us: doc::StepLatency { p50, p99, p99_9: p999 },
            service_p99_us: s99,
            bottleneck: r.verdict.as_ref().map(|v| v.side.name().to_string()),
            rerun_after_pause_ms: s.rerun_after_pause_us.map(|us| finite(us / 1000.0)),
            server: crate::server_window::over_step(r),
            test: convert::test(r, epoch_us)?,
        });
    }
    let (answer, unreachable) = match c.conclusion {
        Conclusion::Met { rate, step, above, confirmed } => (
            Some(doc::Answer {
                rps: rate,
                step: step as u64,
                above_step: above.map(|a| a as u64),
                above_rps: above.map(|a| c.steps[a].rate),
                confirmed,
            }),
            None,
        ),
        Conclusion::Unreachable { lowest } => {
            (None, Some(doc::Unreachable { lowest_step: lowest as u64, lowest_rps: c.steps[lowest].rate }))
        }
        Conclusion::NotRun => (None, None),
    };
    Ok(doc::Search {
        test: f.test.clone(),
        objectives,
        resolution: c.resolution.to_string(),
        ceiling_rps: c.ceiling.map(finite),
        bounds_rps: [c.bounds.0, c.bounds.1],
        ladder: c.steps.first().is_some_and(|s| s.role == Role::Ladder),
        out_of_steps: c.out_of_steps,
        answer,
        unreachable,
        client_ceiling: f.client_ceiling().cloned(),
        line: answer_line(f),
        steps,
        probe: f.probe.as_ref().map(|p| convert::test(p, epoch_us)).transpose()?,
    })
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// One step of a document's search, read back: its fleet rate and role, and its test.
struct ReadStep {
    rate: u64,
    role: Role,
    test: TestResult,
    rerun_after_pause_ms: Option<f64>,
}

/// A document's searches read back, enough to merge: the objectives' text, the test, the steps.
fn read_search(v: &doc::Search) -> Result<(String, String, Vec<ReadStep>), Error> {
    let slo: Vec<&str> = v.objectives.iter().map(|o| o.text.as_str()).collect();
    let mut steps = Vec::new();
    for s in &v.steps {
        let role = match s.role.as_str() {
            "bracket" => Role::Bracket,
            "bisect" => Role::Bisect,
            "confirm" => Role::Confirm,
            _ => Role::Ladder,
        };
        steps.push(ReadStep {
            rate: s.target_rps,
            role,
            test: convert::read_test(&s.test)?,
            rerun_after_pause_ms: s.rerun_after_pause_ms,
        });
    }
    Ok((v.test.clone(), slo.join(","), steps))
}

/// `respbench merge` of a split run's searches: each ladder step's tests add up across the
/// parts, each step is judged again on the merged histograms and the fleet's rate, and the
/// ladder's answer is found from those. Empty when no document has a search.
pub fn merge(docs: &[Document]) -> Result<Vec<Found>, Error> {
    let entries: Vec<&Vec<doc::Search>> = docs.iter().filter_map(|d| d.capacity.as_ref()).collect();
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    if entries.len() != docs.len() {
        return Err(Error::Document("some documents have a capacity search and others not".into()));
    }
    let mut merged: Vec<(String, String, Vec<ReadStep>)> = Vec::new();
    for list in entries {
        for v in list {
            let (test, slo, steps) = read_search(v)?;
            match merged.iter_mut().find(|(t, s, _)| *t == test && *s == slo) {
                None => merged.push((test, slo, steps)),
                Some((_, _, acc)) => {
                    if acc.len() != steps.len()
                        || acc.iter().zip(&steps).any(|(a, b)| a.rate != b.rate || a.role != b.role)
                    {
                        return Err(Error::Document(format!(
                            "{test}: the parts' searches ran different steps: only a ladder (--worker with \
                             --rps LOW-HIGH) merges"
                        )));
                    }
                    for (a, b) in acc.iter_mut().zip(steps) {
                        a.test.merge(b.test).map_err(|e| Error::Document(e.to_string()))?;
                    }
                }
            }
        }
    }
    let poisson = docs.iter().any(|d| d.config.arrival == "poisson");
    let mut out = Vec::new();
    for (test, slo, steps) in merged {
        let objectives = parse_objectives(&slo).map_err(|e| Error::Document(e.to_string()))?;
        let mut records = Vec::new();
        let mut results = Vec::new();
        for s in steps {
            let measured = measure(&objectives, &s.test.stats, poisson, 1.0);
            let miss = judge(&objectives, s.rate, &measured);
            records.push(StepRecord {
                rate: s.rate,
                role: s.role,
                passed: miss.is_none(),
                miss,
                measured,
                rerun_after_pause_us: s.rerun_after_pause_ms.map(|ms| ms * 1000.0),
            });
            results.push(s.test);
        }
        let conclusion = if records.iter().all(|r| r.role == Role::Ladder) {
            evaluate_ladder(&records)
        } else {
            // Whole runs of the same search (the same steps, so the same server at the same
            // time from several machines): the highest rate that passed, judged again.
            evaluate_whole(&records)
        };
        let lo = records.iter().map(|r| r.rate).min().unwrap_or(0);
        let hi = records.iter().map(|r| r.rate).max().unwrap_or(0);
        let found = Found {
            test,
            capacity: Capacity {
                objectives,
                resolution: respbench_session::capacity::DEFAULT_RESOLUTION,
                ceiling: None,
                bounds: (lo, hi),
                steps: records,
                conclusion,
                out_of_steps: false,
            },
            results,
            probe: None,
            worker: None,
        };
        out.push(found);
    }
    Ok(out)
}

/// A whole run's search judged again: the highest rate that passed below every failure above
/// it, as the search concluded.
fn evaluate_whole(records: &[StepRecord]) -> Conclusion {
    let best = records.iter().enumerate().filter(|(_, s)| s.passed).max_by_key(|(i, s)| (s.rate, *i));
    match best {
        Some((step, s)) => {
            let above = records
                .iter()
                .enumerate()
                .filter(|(_, a)| !a.passed && a.rate > s.rate)
                .min_by_key(|(_, a)| a.rate)
                .map(|(i, _)| i);
            Conclusion::Met { rate: s.rate, step, above, confirmed: false }
        }
        None => evaluate_ladder(records),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_grouped_by_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(87_300), "87,300");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    /// An unreachable objective says "no rate tried meets" only when no step passed; when steps
    /// passed and failed again at or below their rate, it says the steps were noisy instead.
    #[test]
    fn an_unreachable_answer_is_true_to_its_steps() {
        let objectives = respbench_session::capacity::parse_objectives("p99<=1ms").unwrap();
        let step = |rate, role, p99: f64| StepRecord {
            rate,
            role,
            measured: respbench_session::capacity::Measured {
                achieved: rate as f64,
                offered: None,
                values_us: vec![p99],
            },
            passed: p99 <= 1000.0,
            rerun_after_pause_us: None,
            miss: (p99 > 1000.0).then_some(respbench_session::capacity::Miss::Objective { index: 0 }),
        };
        let found = |steps: Vec<StepRecord>| Found {
            test: "GET".into(),
            capacity: Capacity {
                objectives: objectives.clone(),
                resolution: respbench_session::capacity::DEFAULT_RESOLUTION,
                ceiling: None,
                bounds: (100, 400),
                conclusion: Conclusion::Unreachable { lowest: steps.len() - 1 },
                steps,
                out_of_steps: true,
            },
            results: Vec::new(),
            probe: None,
            worker: None,
        };
        let none =
            answer_line(&found(vec![step(400, Role::Bracket, 3000.0), step(200, Role::Bracket, 2000.0)]));
        assert!(none.starts_with("GET: no rate tried meets p99<=1ms: the lowest, 200 rps"), "{none}");
        let noisy = answer_line(&found(vec![
            step(400, Role::Bracket, 3000.0),
            step(200, Role::Bracket, 800.0),
            step(200, Role::Confirm, 1500.0),
        ]));
        assert!(
            noisy.starts_with("GET: no rate held p99<=1ms in every step: 1 of 3 steps passed"),
            "{noisy}"
        );
        assert!(!noisy.contains("no rate tried meets"), "{noisy}");
    }
}
