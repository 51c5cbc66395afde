//! `respbench run --from DOCUMENT`: the scenario file a result document recorded, to run again.

/// The scenario `path`'s document recorded: the file as it was named (so the run's test is
/// named as the first's) and its text.
pub fn scenario_of(path: &str) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let doc = crate::merge::read_document(path, &text)?;
    match doc.scenario {
        Some(s) => Ok((s.file, s.text)),
        None => Err(format!(
            "{path}: the document records no scenario: it was not written by respbench run FILE.toml"
        )),
    }
}
