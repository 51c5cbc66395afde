//! `respbench run FILE.toml` and `respbench run --from DOCUMENT` (the scenario file a result
//! document recorded, to run again): the scenario read off the command line.

use respbench_session::scenario::{self, Scenario};

use crate::error::Error;

/// Takes `run FILE` (or `run --from DOCUMENT`: the scenario a result recorded) off `args` (after
/// the program's name) and reads the file, with how many arguments it took; `None` without `run`.
pub fn take(args: &mut Vec<String>) -> Result<Option<(Scenario, usize)>, Error> {
    if args.get(1).map(String::as_str) != Some("run") {
        return Ok(None);
    }
    if args.get(2).map(String::as_str) == Some("--from") {
        let Some(doc) = args.get(3).cloned() else {
            return Err(Error::Refused(
                "respbench run --from: give the result document: respbench run --from out.json".into(),
            ));
        };
        args.drain(1..4);
        let (file, text) = scenario_of(&doc)?;
        return scenario::parse(&file, text).map(|s| Some((s, 3))).map_err(Error::Scenario);
    }
    let Some(file) = args.get(2).filter(|f| !f.starts_with('-')).cloned() else {
        return Err(Error::Refused(
            "respbench run: give the scenario file: respbench run FILE.toml [OPTIONS]".into(),
        ));
    };
    args.drain(1..3);
    scenario::read(&file).map(|s| Some((s, 2))).map_err(Error::Scenario)
}

/// The scenario `path`'s document recorded: the file as it was named (so the run's test is
/// named as the first's) and its text.
pub fn scenario_of(path: &str) -> Result<(String, String), Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| Error::Io { what: format!("cannot read {path}"), source })?;
    let doc = crate::merge::read_document(path, &text)?;
    match doc.scenario {
        Some(s) => Ok((s.file, s.text)),
        None => Err(Error::Document(format!(
            "{path}: the document records no scenario: it was not written by respbench run FILE.toml"
        ))),
    }
}
