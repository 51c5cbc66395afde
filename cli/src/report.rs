//! STUB
#![allow(dead_code)]
use respbench_core::Stats;
use std::io::{self, Write};
pub struct TestReport<'a> {
    pub title: &'a str,
    pub stats: &'a Stats,
    pub clients: usize,
    pub payload_bytes: usize,
    pub keepalive: bool,
    pub threads: usize,
    pub server_save: Option<&'a str>,
    pub server_appendonly: Option<&'a str>,
}
pub const CSV_HEADER: &str = "\"test\",\"rps\"";
pub fn write_verbose(r: &TestReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "====== {} ======\n  {} requests completed in {:.2} seconds",
        r.title,
        r.stats.requests,
        r.stats.duration_secs()
    )
}
pub fn write_quiet(r: &TestReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{}: {:.2} requests per second, p50={:.3} msec",
        r.title,
        r.stats.rps(),
        r.stats.latency.value_at_quantile(0.5) as f64 / 1000.0
    )
}
pub fn write_csv_row(r: &TestReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "\"{}\",\"{:.2}\"", r.title, r.stats.rps())
}
pub fn write_errors(r: &TestReport, _quiet: bool, out: &mut impl Write) -> io::Result<()> {
    if r.stats.errors.total() > 0 {
        writeln!(out, "errors: {}", r.stats.errors.total())?;
    }
    Ok(())
}
pub fn progress_line(title: &str, a: f64, b: f64, c: f64, d: f64) -> String {
    format!("{title}: rps={a:.1} (overall: {b:.1}) avg_msec={c:.3} (overall: {d:.3})\r")
}
