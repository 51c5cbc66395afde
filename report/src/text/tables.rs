//! The tables the text and CSV reports sum a run up in: backends side by side, a sweep's steps
//! (with `--repeat`'s spread) and an open loop's rates.

use super::*;

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

/// The throughput–latency table of an open-loop run: one row per step (target rate).
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
