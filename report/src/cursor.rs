//! `--follow-cursor`'s lines: the full iterations a test's clients made of a SCAN-family
//! command's cursor, and the elements they returned, in the verbose, `-q` and CSV reports. The
//! first calls and the continuations are reported as the test's two commands.

use std::io::{self, Write};

use respbench_core::stats::CursorStats;
use respbench_session::result::TestResult;

use crate::shared::quoted;

/// The figures of `t`, when it followed cursors.
fn of(t: &TestResult) -> Option<&CursorStats> {
    Some(&t.stats.cursor).filter(|c| c.followed)
}

/// `12 full iterations, 120072 elements (10006 an iteration)`, and the replies without a cursor.
fn words(c: &CursorStats) -> String {
    let per = c.elements.checked_div(c.iterations).map_or(String::new(), |e| format!(" ({e} an iteration)"));
    let bad = if c.bad > 0 { format!(", {} replies without a cursor", c.bad) } else { String::new() };
    format!("{} full iterations, {} elements{per}{bad}", c.iterations, c.elements)
}

/// The verbose report's line, under the test's figures.
pub fn write_verbose(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    match of(t) {
        Some(c) => writeln!(out, "  cursor (--follow-cursor): {}", words(c)),
        None => Ok(()),
    }
}

/// The `-q` line, after the test's: `SCAN 0: cursor: 12 full iterations, …`.
pub fn write_quiet(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    match of(t) {
        Some(c) => writeln!(out, "{}: cursor: {}", t.name, words(c)),
        None => Ok(()),
    }
}

/// The CSV row, after the test's: `"cursor"`, the test, iterations, elements, bad replies.
pub fn write_csv(t: &TestResult, out: &mut impl Write) -> io::Result<()> {
    match of(t) {
        Some(c) => {
            writeln!(
                out,
                "\"cursor\",{},\"{}\",\"{}\",\"{}\"",
                quoted(&t.name),
                c.iterations,
                c.elements,
                c.bad
            )
        }
        None => Ok(()),
    }
}
