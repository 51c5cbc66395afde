//! `--follow-cursor`: a SCAN-family custom command (`SCAN 0 MATCH k:* COUNT 100`, `HSCAN h 0`,
//! `SSCAN`, `ZSCAN`) sent as clients walking a keyspace send it: each client from cursor 0,
//! then with the cursor each reply returns until it returns 0, then from 0 again
//! ([`respbench_core::cursor`]). The first calls and the continuations are reported as two
//! commands; the test counts the full iterations (the report's cursor.rs writes them).

use respbench_core::cursor::{FIRST, NEXT};
use respbench_core::suite::{custom_with_data, TestSpec};
use respbench_core::Mix;

use crate::config::{Config, Verification};
use crate::error::Error;

/// The commands that take a cursor, and the argument that carries it.
const COMMANDS: &[(&str, usize)] = &[("SCAN", 1), ("HSCAN", 2), ("SSCAN", 2), ("ZSCAN", 2)];

/// The test of `--follow-cursor`: the custom command checked (a SCAN-family command with cursor
/// 0, one call at a time on each connection, against one server), and its mix of two commands
/// with their titles.
pub fn test(cfg: &Config) -> Result<(TestSpec, Mix, Vec<String>), Error> {
    let bad = |why: String| Error::Tests(format!("--follow-cursor: {why}"));
    let name =
        cfg.command.first().map(|a| String::from_utf8_lossy(a).to_ascii_uppercase()).unwrap_or_default();
    let Some(&(_, arg)) = COMMANDS.iter().find(|(c, _)| *c == name) else {
        return Err(bad(format!(
            "give a SCAN, HSCAN, SSCAN or ZSCAN command after the options (got '{name}'), e.g. SCAN 0 COUNT 100"
        )));
    };
    if cfg.command.get(arg).map(Vec::as_slice) != Some(b"0") {
        return Err(bad(format!("{name}'s cursor (argument {arg}) must be 0, where each iteration starts")));
    }
    let clash = [
        (
            cfg.pipeline > 1 || cfg.sweep.pipelines.iter().any(|&p| p > 1),
            "-P above 1 (each call waits for the cursor of the last)",
        ),
        (cfg.cluster, "--cluster (a cursor belongs to one node)"),
        (cfg.open.has_mix(), "--mix"),
        (cfg.command.iter().any(|a| a == b";"), "a command sequence"),
        (cfg.retry.is_some(), "--retry-on"),
        (cfg.verify != Verification::Off, "--verify"),
        (cfg.replay.is_some(), "--replay"),
        (cfg.dataset.is_some(), "--dataset"),
    ];
    if let Some((_, what)) = clash.iter().find(|(on, _)| *on) {
        return Err(bad(format!("not with {what}")));
    }
    let spec = custom_with_data(&cfg.command, &cfg.values);
    let mut titles = vec![String::new(); 2];
    titles[usize::from(FIRST)] = format!("{} (first call)", spec.title);
    titles[usize::from(NEXT)] = format!("{} (continuation)", spec.title);
    let mix = Mix::cursor(spec.template.clone(), arg).with_cursor_limit(cfg.open.follow_cursor_limit);
    Ok((spec, mix, titles))
}
