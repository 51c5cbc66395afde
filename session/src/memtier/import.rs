//! memtier_benchmark's `--data-import FILE`, `--generate-keys` and `--no-expiry` in its
//! dialect (its parent, session/src/memtier.rs): the file's items become respbench's `--dataset`, memtier's
//! CSV read by core's `memtier_import`, written in turn by one custom command, `SET` (or
//! `SETEX` with the items' expiry) of the file's key (or a key drawn as memtier draws it, with
//! `--generate-keys`) and its data.

use respbench_core::memtier_import;

use super::MemtierError;

/// The most of an import file read: 1 GiB, as `--dataset-max-bytes`' default.
const MAX_BYTES: u64 = 1 << 30;

/// What memtier's import options asked for.
#[derive(Default)]
pub(crate) struct Import {
    /// `--data-import FILE`.
    pub file: Option<String>,
    /// `--generate-keys`: keys drawn from the key range, values from the file.
    pub generate_keys: bool,
    /// `--no-expiry`: the items' expiry is not sent.
    pub no_expiry: bool,
    /// `--data-verify` (or `--verify-only`): the items read back after the run.
    pub verify: bool,
    /// `--verify-only`: no test, only the check.
    pub verify_only: bool,
}

/// The options memtier refuses with an import, and the ones that need it, with memtier's
/// messages; `given` says whether an option was on the line.
pub(crate) fn check(imp: &Import, given: &dyn Fn(&str) -> bool) -> Result<(), MemtierError> {
    let bad = |option: &str, why: &str| {
        Err(MemtierError::BadValue { option: format!("--{option}"), value: String::new(), why: why.into() })
    };
    if imp.file.is_none() {
        if imp.verify {
            return bad("data-verify", "use data-verify only with data-import");
        }
        if imp.no_expiry {
            return bad("no-expiry", "use no-expiry only with data-import");
        }
        return Ok(());
    }
    if given("cluster-mode") {
        return bad("cluster-mode", "Cluster mode cannot be specified when importing.");
    }
    if let Some(o) = ["data-size", "data-size-list", "data-size-range"].into_iter().find(|o| given(o)) {
        return bad(o, "data size cannot be specified when importing.");
    }
    if given("random-data") {
        return bad("random-data", "random-data cannot be specified when importing.");
    }
    let key_options = ["key-minimum", "key-maximum", "key-prefix"];
    if let Some(o) = key_options.into_iter().find(|o| !imp.generate_keys && given(o)) {
        return bad(o, "use key-minimum, key-maximum and key-prefix only with generate-keys.");
    }
    let refuse = |option: &str, why: &str| {
        Err(MemtierError::Refused { option: format!("--{option}"), why: why.into() })
    };
    if imp.verify && imp.generate_keys {
        return refuse("data-verify", "with --generate-keys a key does not keep its item's data to compare");
    }
    if given("expiry-range") {
        return refuse(
            "expiry-range",
            "with --data-import the items' own expiry is sent (or none with --no-expiry)",
        );
    }
    if given("command") || given("wait-ratio") || given("multi-key-get") {
        return refuse(
            "data-import",
            "it writes the file's items with --ratio's SETs, not with --command, WAITs or MGETs",
        );
    }
    Ok(())
}

/// The words of the command that writes the file's items: `SET` of each item's key (`key`
/// when `--generate-keys`) and data, or `SETEX` with its expiry when every item has one (memtier
/// sends `SETEX` for an item with an expiry, `SET` for one without; respbench sends one command
/// for all, so a file of both is refused unless `--no-expiry`). The file is read here, at most
/// [`MAX_BYTES`] of it, so that a bad record is said before anything connects, naming its line.
pub(crate) fn command(imp: &Import, file: &str, key: &str) -> Result<Vec<String>, MemtierError> {
    let dataset = read(file)?;
    let key = if imp.generate_keys { key } else { "__field:key__" };
    let (any, all) = memtier_import::expiries(&dataset);
    if imp.no_expiry || !any {
        Ok(vec!["SET".into(), key.into(), "__field:data__".into()])
    } else if all {
        Ok(vec!["SETEX".into(), key.into(), "__field:exptime__".into(), "__field:data__".into()])
    } else {
        Err(bad(
            file,
            "some items have an expiry and some none: respbench sends one command (SET or SETEX) for \
             all of them; give --no-expiry to send SET for all"
                .into(),
        ))
    }
}

/// memtier's import `file`, read (at most [`MAX_BYTES`] of it) and parsed: an error names the
/// file, and the line of a bad record.
pub(crate) fn read(file: &str) -> Result<respbench_core::dataset::Dataset, MemtierError> {
    let text = super::read_file("--data-import", file, MAX_BYTES)?;
    memtier_import::parse("", &text, 0).map_err(|e| bad(file, e.trim_start_matches(": ").into()))
}

/// An error in the `--data-import` file `file`.
fn bad(file: &str, why: String) -> MemtierError {
    MemtierError::BadValue { option: "--data-import".into(), value: file.into(), why }
}
