//! `--verify` and `--verify-only` checked into the [`Config`], and each test's
//! [`respbench_core::verify::Verify`] made from its commands. The values, the checks and the
//! counting are the core's (core/src/verify.rs).

use std::sync::Arc;

use respbench_core::dist::KeyDist;
use respbench_core::template::Template;
use respbench_core::verify::{Verify, HEADER};

use crate::config::{Config, OptionError, Verification};
use crate::error::Error;

/// The largest value `--verify` checks: a connection holds a whole reply to check it, so `-c`
/// connections hold up to this much each.
pub const LARGEST: usize = 16 << 20;

/// Checks `--verify` (`verify`) and `--verify-only` (`only`) against the rest of `c` and sets
/// them: `--verify-only` is a GET of each key of `-r` once (sequential keys; `-n` is the
/// keyspace unless given, `requests_given`). An error names the option.
pub fn check(c: &mut Config, verify: bool, only: bool, requests_given: bool) -> Result<(), OptionError> {
    c.verify = match (verify, only) {
        (false, false) => return Ok(()),
        (true, true) => {
            return Err(OptionError::Refused(
                "--verify and --verify-only: give one (--verify-only reads what a --verify run wrote)".into(),
            ))
        }
        (true, false) => Verification::On,
        (false, true) => Verification::Only,
    };
    let name = if only { "--verify-only" } else { "--verify" };
    let Some(keyspace) = c.keyspace else {
        return Err(OptionError::Refused(format!("{name} needs -r: each value holds its key's number")));
    };
    for d in &c.sweep.datasizes {
        if !d.is_fixed() {
            return Err(OptionError::Refused(format!(
                "{name} needs one value size: -d {d} draws sizes (give -d {})",
                d.max()
            )));
        }
        if d.max() > LARGEST {
            return Err(OptionError::Refused(format!(
                "{name} takes -d up to {LARGEST} bytes (each connection holds the value it checks), got -d {d}"
            )));
        }
        if d.max() < HEADER {
            return Err(OptionError::Refused(format!(
                "{name} needs -d of at least {HEADER} bytes (each value holds its key and version), got -d {d}"
            )));
        }
    }
    let conflict = [
        (c.preload, "--preload"),
        (c.replay.is_some(), "--replay"),
        (c.dataset.is_some(), "--dataset"),
        (c.idle, "-I"),
        (c.capacity.is_some(), "--slo"),
        (c.open.expiry.is_some(), "--expiry-range"),
    ];
    if let Some((_, other)) = conflict.iter().find(|(on, _)| *on) {
        return Err(OptionError::Refused(format!(
            "{name} cannot go with {other}: it writes or sends values --verify does not encode"
        )));
    }
    if only {
        if c.open.has_mix() || !c.command.is_empty() || c.tests.is_some() {
            return Err(OptionError::Refused(
                "--verify-only reads every key with GET: it takes no -t, --mix or command".into(),
            ));
        }
        c.tests = Some("get".into());
        c.key_dist = KeyDist::Sequential;
        if !requests_given && c.open.duration.is_none() {
            c.requests = keyspace;
        }
    }
    Ok(())
}

/// The verification of a test made of `templates` (its mix's commands in order, or its one
/// command) under `cfg`; `None` without `--verify`. An error says what cannot be verified.
pub fn for_test(cfg: &Config, templates: &[&Template]) -> Result<Option<Arc<Verify>>, Error> {
    if cfg.verify == Verification::Off {
        return Ok(None);
    }
    let bytes: Vec<&[u8]> = templates.iter().map(|t| t.as_bytes()).collect();
    let keyspace = cfg.keyspace.unwrap_or(0);
    // A worker of several shares its clients' indices, so their keys, with the other workers.
    let versions = cfg.verify == Verification::On && cfg.split.is_none();
    Verify::new(&bytes, cfg.values.max(), cfg.clients as u64, keyspace, versions)
        .map(|v| Some(Arc::new(v)))
        .map_err(Error::Tests)
}
