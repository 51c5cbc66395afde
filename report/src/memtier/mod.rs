//! memtier_benchmark's outputs for a run of its command line (session's `memtier`): its stdout
//! table ([`table`]: `ALL STATS`, a row per command and `Totals`, the latency distribution) and
//! its `--json-out-file` document ([`json`]), in memtier's field names, nesting and number
//! formats, fed from the session's typed results. Counts are respbench's exact ones (what the
//! server executed); respbench's own figures for the run go under a `"respbench"` key.

pub mod config;
pub mod hdr;
pub mod json;
pub mod table;
pub mod verify;

use crate::error::Error;
use hdrhistogram::Histogram;
use respbench_core::shared::{new_histogram, value_at_percentile, DEFAULT_SIGFIG};
use respbench_core::Stats;
use respbench_session::memtier::Memtier;
use respbench_session::result::TestResult;

/// One row's figures as memtier computes them, over its run's duration.
#[derive(Clone, Debug)]
pub struct Figures {
    /// Requests answered.
    pub count: u64,
    /// Keys read that were found (memtier's hits): a GET's reply that was not nil, each
    /// element of an MGET's that was not; `--ratio`'s GETs only.
    pub hits: u64,
    /// Keys read that were missing (memtier's misses): nil replies and an MGET's nil elements.
    pub misses: u64,
    /// Whether hits and misses apply (the `Gets` row and `Totals` of `--ratio`).
    pub hits_apply: bool,
    /// Bytes received and sent.
    pub bytes_rx: u64,
    /// Bytes sent.
    pub bytes_tx: u64,
    /// The latencies, in microseconds.
    pub latency: Histogram<u64>,
    /// The run's duration in seconds (every row's rates are over it, as memtier's).
    pub seconds: f64,
}

impl Figures {
    /// Empty figures over `seconds`.
    fn empty(seconds: f64) -> Result<Figures, Error> {
        Ok(Figures {
            count: 0,
            hits: 0,
            misses: 0,
            hits_apply: false,
            bytes_rx: 0,
            bytes_tx: 0,
            latency: new_histogram(DEFAULT_SIGFIG).map_err(Error::Encode)?,
            seconds,
        })
    }

    /// Adds a part's stats.
    fn add(&mut self, s: &Stats) -> Result<(), Error> {
        self.count =
            self.count.checked_add(s.requests).ok_or_else(|| Error::Encode("count overflow".into()))?;
        // Key by key, as memtier counts an MGET's: an array reply's elements are its reads.
        let reads = s.requests.saturating_sub(s.arrays).saturating_add(s.array_elements);
        let missing = s.nils.saturating_add(s.nil_elements);
        self.hits = self.hits.saturating_add(reads.saturating_sub(missing));
        self.misses = self.misses.saturating_add(missing);
        self.bytes_rx = self.bytes_rx.saturating_add(s.bytes_received);
        self.bytes_tx = self.bytes_tx.saturating_add(s.bytes_sent);
        self.latency.add(&s.latency).map_err(|e| Error::Encode(format!("cannot merge latencies: {e:?}")))
    }

    /// Per second of the run.
    fn per_sec(&self, n: f64) -> f64 {
        if self.seconds > 0.0 {
            n / self.seconds
        } else {
            0.0
        }
    }

    /// Operations a second.
    pub fn ops_sec(&self) -> f64 {
        self.per_sec(self.count as f64)
    }

    /// Hits a second (replies that were not nil).
    pub fn hits_sec(&self) -> f64 {
        if self.hits_apply {
            self.per_sec(self.hits as f64)
        } else {
            0.0
        }
    }

    /// Misses a second (nil replies).
    pub fn misses_sec(&self) -> f64 {
        if self.hits_apply {
            self.per_sec(self.misses as f64)
        } else {
            0.0
        }
    }

    /// Whether the bytes are known: respbench counts a connection's bytes, not each
    /// command's, so a mix's rows have none (the table shows `---`, the JSON `null`).
    pub fn bytes_known(&self) -> bool {
        self.count == 0 || self.bytes_rx > 0 || self.bytes_tx > 0
    }

    /// KB a second, both ways.
    pub fn kb_sec(&self) -> f64 {
        self.per_sec(self.bytes_rx.saturating_add(self.bytes_tx) as f64 / 1024.0)
    }

    /// KB a second received.
    pub fn kb_sec_rx(&self) -> f64 {
        self.per_sec(self.bytes_rx as f64 / 1024.0)
    }

    /// KB a second sent.
    pub fn kb_sec_tx(&self) -> f64 {
        self.per_sec(self.bytes_tx as f64 / 1024.0)
    }

    /// The mean latency in milliseconds (0 with no sample).
    pub fn avg_ms(&self) -> f64 {
        if self.latency.is_empty() {
            0.0
        } else {
            self.latency.mean() / 1000.0
        }
    }

    /// The least latency in milliseconds.
    pub fn min_ms(&self) -> f64 {
        if self.latency.is_empty() {
            0.0
        } else {
            self.latency.min() as f64 / 1000.0
        }
    }

    /// The greatest latency in milliseconds.
    pub fn max_ms(&self) -> f64 {
        if self.latency.is_empty() {
            0.0
        } else {
            self.latency.max() as f64 / 1000.0
        }
    }

    /// The latencies summed, in milliseconds.
    pub fn accumulated_ms(&self) -> u64 {
        (self.latency.mean() * self.latency.len() as f64 / 1000.0) as u64
    }

    /// The latency at `p` (0 to 100) in milliseconds.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        value_at_percentile(&self.latency, p) as f64 / 1000.0
    }
}

/// One run of the command line (`--run-count` makes several): each row's figures and the
/// totals.
pub struct Run<'a> {
    /// The rows (`Sets`, `Gets`, or each command's name), in memtier's order.
    pub rows: Vec<(String, Figures)>,
    /// The `Totals` row.
    pub totals: Figures,
    /// The run's total result, for respbench's own figures.
    pub result: &'a TestResult,
}

impl Run<'_> {
    /// Operations a second over the whole run (how memtier picks its best and worst run).
    fn ops_sec(&self) -> f64 {
        self.totals.ops_sec()
    }
}

/// The runs in `results`: each run of the mix is its commands' results, then its total.
pub fn runs<'a>(m: &Memtier, results: &'a [TestResult]) -> Result<Vec<Run<'a>>, Error> {
    let per_run = m.results_per_run();
    let mut out = Vec::new();
    for chunk in results.chunks(per_run).filter(|c| c.len() == per_run) {
        let total = &chunk[per_run - 1];
        let seconds = total.stats.duration_secs();
        let mut rows: Vec<(String, Figures)> = Vec::new();
        if m.ratio_rows {
            // memtier's rows are always Sets, Gets and Waits.
            for name in ["Sets", "Gets", "Waits"] {
                let mut f = Figures::empty(seconds)?;
                f.hits_apply = name == "Gets";
                rows.push((name.to_string(), f));
            }
        }
        for (name, part) in m.rows.iter().zip(chunk) {
            // `--command-stats-breakdown=line`: each line its own row, of the same name.
            match rows.iter_mut().find(|(n, _)| n == name && !m.by_line) {
                Some((_, f)) => f.add(&part.stats)?,
                None => {
                    let mut f = Figures::empty(seconds)?;
                    f.add(&part.stats)?;
                    rows.push((name.clone(), f));
                }
            }
        }
        let mut totals = Figures::empty(seconds)?;
        totals.hits_apply = m.ratio_rows;
        for (_, f) in &rows {
            totals.count = totals.count.saturating_add(f.count);
            if f.hits_apply {
                totals.hits = totals.hits.saturating_add(f.hits);
                totals.misses = totals.misses.saturating_add(f.misses);
            }
            totals
                .latency
                .add(&f.latency)
                .map_err(|e| Error::Encode(format!("cannot merge latencies: {e:?}")))?;
        }
        // The connections' bytes are the total's (handshakes included), as memtier's are.
        totals.bytes_rx = total.stats.bytes_received;
        totals.bytes_tx = total.stats.bytes_sent;
        out.push(Run { rows, totals, result: total });
    }
    Ok(out)
}

/// The sections memtier prints: `ALL STATS` for one run; with `--run-count N` the best run, the
/// worst and the average of all, by their operations a second.
pub fn sections<'r, 'a>(m: &Memtier, runs: &'r [Run<'a>]) -> Result<Vec<(String, Section<'r, 'a>)>, Error> {
    if runs.len() <= 1 || m.run_count <= 1 {
        return Ok(runs.iter().map(|r| ("ALL STATS".to_string(), Section::Run(r))).collect());
    }
    let by_rate = |a: &&Run, b: &&Run| a.ops_sec().total_cmp(&b.ops_sec());
    let best = runs.iter().max_by(by_rate).ok_or_else(|| Error::Encode("no run".into()))?;
    let worst = runs.iter().min_by(by_rate).ok_or_else(|| Error::Encode("no run".into()))?;
    Ok(vec![
        ("BEST RUN RESULTS".to_string(), Section::Run(best)),
        ("WORST RUN RESULTS".to_string(), Section::Run(worst)),
        (format!("AGGREGATED AVERAGE RESULTS ({} runs)", runs.len()), Section::Average(average(runs)?)),
    ])
}

/// A section's figures: one run's, or the average of the runs.
pub enum Section<'r, 'a> {
    /// One run.
    Run(&'r Run<'a>),
    /// The runs' average: the counts and bytes a run's mean, over the runs' mean duration, the
    /// latencies of every run together.
    Average(Run<'a>),
}

impl<'a> Section<'_, 'a> {
    /// The run the section shows.
    pub fn run(&self) -> &Run<'a> {
        match self {
            Section::Run(r) => r,
            Section::Average(r) => r,
        }
    }
}

/// The average of `runs` (memtier's `AGGREGATED AVERAGE RESULTS`).
fn average<'a>(runs: &[Run<'a>]) -> Result<Run<'a>, Error> {
    let n = runs.len() as u64;
    let first = runs.first().ok_or_else(|| Error::Encode("no run".into()))?;
    let seconds = runs.iter().map(|r| r.totals.seconds).sum::<f64>() / n as f64;
    let mean = |fs: &[&Figures]| -> Result<Figures, Error> {
        let mut out = Figures::empty(seconds)?;
        out.hits_apply = fs.first().is_some_and(|f| f.hits_apply);
        for f in fs {
            out.count = out.count.saturating_add(f.count);
            out.hits = out.hits.saturating_add(f.hits);
            out.misses = out.misses.saturating_add(f.misses);
            out.bytes_rx = out.bytes_rx.saturating_add(f.bytes_rx);
            out.bytes_tx = out.bytes_tx.saturating_add(f.bytes_tx);
            out.latency
                .add(&f.latency)
                .map_err(|e| Error::Encode(format!("cannot merge latencies: {e:?}")))?;
        }
        out.count /= n;
        out.hits /= n;
        out.misses /= n;
        out.bytes_rx /= n;
        out.bytes_tx /= n;
        Ok(out)
    };
    let mut rows = Vec::new();
    for (k, (name, _)) in first.rows.iter().enumerate() {
        let fs: Vec<&Figures> = runs.iter().filter_map(|r| r.rows.get(k).map(|(_, f)| f)).collect();
        rows.push((name.clone(), mean(&fs)?));
    }
    let totals: Vec<&Figures> = runs.iter().map(|r| &r.totals).collect();
    Ok(Run { rows, totals: mean(&totals)?, result: first.result })
}

/// Whether `--out-file` and `--json-out-file` can be written where they are named, found out
/// before the run (see [`crate::outputs::check_outputs`]).
pub fn check_outputs(m: &Memtier) -> Result<(), Error> {
    let first_hdr = m.hdr_file_prefix.as_ref().map(|p| hdr::full_run(p, 1));
    let files = [
        ("--out-file", &m.out_file),
        ("--json-out-file", &m.json_out_file),
        ("--hdr-file-prefix", &first_hdr),
    ];
    for (option, path) in files.iter().filter_map(|(o, p)| p.as_deref().filter(|p| *p != "-").map(|p| (o, p)))
    {
        crate::files::probe_writable(std::path::Path::new(path))
            .map_err(|source| Error::Write { output: format!("{option} {path}"), source })?;
    }
    Ok(())
}

/// Writes memtier's outputs for `results`: the table to stdout (or `--out-file`), the JSON to
/// `--json-out-file`. `interrupted`: the run did not complete.
pub fn write(m: &Memtier, results: &[TestResult], interrupted: bool, epoch_us: u64) -> Result<(), Error> {
    let runs = runs(m, results)?;
    let sections = sections(m, &runs)?;
    let mut text = if m.show_config { config::text(m) } else { String::new() };
    text.push_str(&table::header(m));
    for (title, s) in &sections {
        text.push_str(&table::section(m, title, s.run()));
    }
    match &m.out_file {
        Some(path) if path != "-" => {
            crate::files::write_atomically(std::path::Path::new(path), text.as_bytes())
                .map_err(|source| Error::Write { output: format!("--out-file {path}"), source })?
        }
        _ => {
            use std::io::Write;
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes())
                .and_then(|_| o.flush())
                .map_err(|source| Error::Io { what: "the table (stdout): cannot write".into(), source })?;
        }
    }
    if let Some(prefix) = &m.hdr_file_prefix {
        hdr::write_all(m, prefix, results, &runs, epoch_us)?;
    }
    if let Some(path) = &m.json_out_file {
        let doc = json::document(m, &sections, interrupted, epoch_us)?;
        crate::files::write_atomically(std::path::Path::new(path), doc.as_bytes())
            .map_err(|source| Error::Write { output: format!("--json-out-file {path}"), source })?;
    }
    Ok(())
}
