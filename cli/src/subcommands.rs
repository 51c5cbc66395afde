//! `respbench merge` and `respbench plot`: their options (argh), handed to the outputs library
//! as plain data.

use std::io::Write;
use std::process::ExitCode;

use argh::FromArgs;
use respbench_report::compare::{CompareArgs, Verdict};
use respbench_report::merge::MergeArgs;
use respbench_report::say;

/// respbench merge: combines the JSON documents of several runs test by test (tests with the
/// same name add up) and prints one quiet line per test.
#[derive(FromArgs, Debug)]
#[argh(help_triggers("--help"))]
struct MergeOpts {
    /// write the merged document to this file, or to stdout with '-' (the lines are then not
    /// printed)
    #[argh(option)]
    json: Option<String>,
    /// merge documents that are neither the parts of one split run nor repeats of one
    /// configuration; the result is marked as a mixture
    #[argh(switch)]
    force: bool,
    /// the documents to merge, written by respbench --json
    #[argh(positional)]
    files: Vec<String>,
}

/// respbench compare: is B faster than A? Per test, B/A of rps, p50, p99, p99.9 with a 95%
/// interval and a verdict; exit 1 when --fail-if-slower fails, 2 when it cannot compare.
#[derive(FromArgs, Debug)]
#[argh(help_triggers("--help"))]
struct CompareOpts {
    /// side A's documents (respbench --json), several after one --a
    #[argh(option)]
    a: Vec<String>,
    /// side B's documents
    #[argh(option)]
    b: Vec<String>,
    /// compare runs that differ in more than the target, and tests not limited by the server
    #[argh(switch)]
    force: bool,
    /// write the comparison as a JSON document to this file, or to stdout with '-'
    #[argh(option)]
    json: Option<String>,
    /// exit 1 when a figure is slower by more than this (5%) with 95% confidence
    #[argh(option)]
    fail_if_slower: Option<String>,
    /// fail also when the interval reaches past --fail-if-slower
    #[argh(switch)]
    strict: bool,
    /// the two documents (A then B), or one of a run with --ab
    #[argh(positional)]
    files: Vec<String>,
}

/// Runs `respbench compare` with the arguments after `compare`.
pub fn compare(name: &str, args: &[&str]) -> ExitCode {
    let expanded = respbench_report::compare::expand_sides(args);
    let args: Vec<&str> = expanded.iter().map(String::as_str).collect();
    match crate::opts::parse_args::<CompareOpts>(&[name, "compare"], &args, "respbench compare --help") {
        Ok(CompareOpts { a, b, force, json, fail_if_slower, strict, files }) => {
            let args = CompareArgs { a, b, files, force, json, fail_if_slower, strict };
            match respbench_report::compare::run(&args, &mut std::io::stdout().lock(), &mut std::io::stderr())
            {
                Ok(Verdict::Passed) => ExitCode::SUCCESS,
                Ok(Verdict::Slower) => ExitCode::from(1),
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "respbench compare: {e}");
                    ExitCode::from(2)
                }
            }
        }
        // `diff`'s convention: 1 is an answer (B slower), 2 trouble.
        Err(code) => {
            if code == ExitCode::SUCCESS {
                code
            } else {
                ExitCode::from(2)
            }
        }
    }
}

/// Runs `respbench merge` with the arguments after `merge`.
pub fn merge(name: &str, args: &[&str]) -> ExitCode {
    let opts: MergeOpts = match crate::opts::parse_args(&[name, "merge"], args, "respbench merge --help") {
        Ok(o) => o,
        Err(code) => return code,
    };
    let args = MergeArgs { json: opts.json, force: opts.force, files: opts.files };
    match respbench_report::merge::run(&args, &mut std::io::stdout().lock(), &mut std::io::stderr()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say!("respbench merge: {e}");
            ExitCode::from(1)
        }
    }
}

/// respbench plot: draws the results of respbench --json runs (or respbench merge) as charts:
/// latency by percentile, open-loop latency against target rate and its service time,
/// per-second series, sweeps, repeats with their spread and backends side by side; under each,
/// the command line, server, date, backend and each test's verdict and client CPU; and capacity
/// (latency against achieved throughput).
#[cfg(feature = "plot")]
#[derive(FromArgs, Debug)]
#[argh(help_triggers("--help"))]
struct PlotOpts {
    /// the file to write: NAME.svg (the charts stacked in one SVG document; the default format,
    /// also for a NAME without extension), NAME.html (a self-contained report: summary table and
    /// charts), or - (SVG on stdout)
    #[argh(option, short = 'o')]
    output: Option<String>,
    /// the charts to draw, comma separated: percentiles, service, rate, series, sweep, repeat,
    /// backends, capacity (latency against achieved throughput: a --slo search, or --rps steps
    /// when named), compare (respbench compare --json's), ramp (--ramp's steps) (default: every
    /// one the results allow)
    #[argh(option)]
    charts: Option<String>,
    /// the documents to draw, written by respbench --json
    #[argh(positional)]
    files: Vec<String>,
}

/// Runs `respbench plot` with the arguments after `plot`.
#[cfg(feature = "plot")]
pub fn plot(name: &str, args: &[&str]) -> ExitCode {
    let opts: PlotOpts = match crate::opts::parse_args(&[name, "plot"], args, "respbench plot --help") {
        Ok(o) => o,
        Err(code) => return code,
    };
    let args =
        respbench_report::plot::PlotArgs { output: opts.output, charts: opts.charts, files: opts.files };
    match respbench_report::plot::run(&args, &mut std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say!("respbench plot: {e}");
            ExitCode::from(1)
        }
    }
}

/// `respbench plot` in a build without the `plot` feature.
#[cfg(not(feature = "plot"))]
pub fn plot(_: &str, _: &[&str]) -> ExitCode {
    say!(
        "respbench plot: this respbench was built without plotting (cargo feature `plot`, on by default): \
         rebuild without --no-default-features"
    );
    ExitCode::from(1)
}

/// `respbench man [markdown]` and `respbench completions bash|zsh|fish`: the manual and the
/// completions, generated from argh's help of every parser (the one list of options).
pub fn manual(name: &str, args: &[&str]) -> ExitCode {
    fn help<T: FromArgs>(command: &[&str], trigger: &str) -> String {
        T::from_args(command, &[trigger]).err().map(|e| e.output).unwrap_or_default()
    }
    let all = help::<crate::opts::Opts>(&[name], "--help-all");
    let merge = help::<MergeOpts>(&[name, "merge"], "--help");
    let compare = help::<CompareOpts>(&[name, "compare"], "--help");
    #[cfg(feature = "plot")]
    let plot = help::<PlotOpts>(&[name, "plot"], "--help");
    let subs = [
        #[cfg(feature = "plot")]
        ("plot", plot.as_str()),
        ("merge", merge.as_str()),
        ("compare", compare.as_str()),
    ];
    let m = respbench_report::manual::Manual::new(
        env!("CARGO_PKG_VERSION"),
        name,
        &all,
        crate::help::SHORT,
        &subs,
    );
    let text = match args {
        ["man"] => Some(respbench_report::manual::man_page(&m)),
        ["man", "markdown"] => Some(respbench_report::manual::markdown(&m)),
        ["completions", shell] => respbench_report::manual::completions(&m, shell),
        _ => None,
    };
    let Some(text) = text else {
        say!("usage: respbench man [markdown] | respbench completions bash|zsh|fish");
        return ExitCode::from(1);
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    ExitCode::SUCCESS
}
