//! `--json PATH`: the result document, written at the end (whatever happened to the other
//! outputs) from what this output kept: every result, the run's notices (and `--slo`'s searches, which the session keeps).

use std::io::Write;

use respbench_session::result::TestResult;
use respbench_session::server::ServerInfo;

use super::{Event, Output, RunEnd};
use crate::error::Error;
use crate::{convert, json};

/// The result document.
pub struct Json {
    path: String,
    /// Where `-` writes (stdout); a file is written whole or not at all.
    out: Option<Box<dyn Write>>,
    /// The command line the document says ran.
    command_line: Vec<String>,
    /// `--slo`: the document has its searches.
    capacity: bool,
    info: ServerInfo,
    server_b: Option<ServerInfo>,
    kept: Vec<TestResult>,
    notices: Vec<String>,
    /// `--key-prefix`: the dataset's first keys are named with it.
    key_prefix: String,
    /// `respbench run FILE.toml`: the file the run read.
    scenario: Option<crate::doc::ScenarioFile>,
    /// `--dataset-shape`: what was built.
    dataset: Option<crate::dataset::Dataset>,
}

impl Json {
    /// The document to `path`, or to `out` for `-`; `command_line` as it says it ran;
    /// `capacity`: the run searches (`--slo`).
    pub fn new(
        path: &str,
        out: Box<dyn Write>,
        command_line: Vec<String>,
        capacity: bool,
        key_prefix: String,
    ) -> Self {
        Json {
            key_prefix,
            scenario: None,
            dataset: None,
            path: path.to_string(),
            out: (path == "-").then_some(out),
            command_line,
            capacity,
            info: ServerInfo::default(),
            server_b: None,
            kept: Vec::new(),
            notices: Vec::new(),
        }
    }
}

impl Json {
    /// The document records the scenario file the run read (`respbench run --from` runs it
    /// again).
    pub fn with_scenario(mut self, scenario: Option<crate::doc::ScenarioFile>) -> Self {
        self.scenario = scenario;
        self
    }
}

impl Output for Json {
    fn on(&mut self, ev: &Event<'_>) -> Result<(), Error> {
        match ev {
            Event::Begin(b) => {
                self.info = b.info.clone();
                self.server_b = b.server_b.cloned();
            }
            Event::Message(line) => self.notices.push(line.to_string()),
            Event::Dataset(built) => self.dataset = Some(crate::dataset::to_json(built, &self.key_prefix)),
            Event::Results(results) => self.kept.extend(results.iter().cloned()),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, end: &RunEnd<'_>) -> Result<(), Error> {
        let output = |e: String| Error::Output(e);
        let tests = self.kept.iter().map(|e| convert::test(e, end.epoch_us)).collect::<Result<Vec<_>, _>>();
        let tests = tests.map_err(|e| output(e.to_string()))?;
        let mut doc =
            json::document(end.config.clone(), crate::doc::Server::from(&self.info), end.interrupted, tests);
        doc.command_line = Some(self.command_line.clone());
        doc.warnings = (!self.notices.is_empty()).then(|| convert::notices(&self.notices));
        doc.late_by_s = end.late_by_s;
        doc.server_b = self.server_b.as_ref().map(crate::doc::Server::from);
        doc.dataset = self.dataset.clone();
        doc.scenario = self.scenario.clone();
        if self.capacity {
            let searches = crate::capacity::to_json(end.searches, end.epoch_us);
            doc.capacity = Some(searches.map_err(|e| output(e.to_string()))?);
        }
        match &mut self.out {
            Some(out) => {
                let text = doc.to_text()?;
                out.write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(|e| Error::json(&self.path, e))
            }
            None => json::write_json(&self.path, &doc),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::fixture::{feed, result, Shared};

    /// The document to the writer for `-`: the results, notices and command line it kept.
    #[test]
    fn the_document_of_what_it_kept() {
        let out = Shared::default();
        let mut sink = Json::new(
            "-",
            Box::new(out.clone()),
            vec!["respbench".into(), "-q".into()],
            false,
            String::new(),
        );
        let results = [result("GET")];
        feed(&mut sink, &["mio"], &[Event::Message("WARNING: a notice"), Event::Results(&results)]).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&out.text()).unwrap();
        assert_eq!(doc["command_line"], serde_json::json!(["respbench", "-q"]));
        assert_eq!(doc["tests"].as_array().unwrap().len(), 1);
        assert_eq!(doc["tests"][0]["name"], "GET");
        assert_eq!(doc["tests"][0]["requests"], 100);
        assert_eq!(doc["warnings"], serde_json::json!([{"kind": "notice", "text": "WARNING: a notice"}]));
        assert_eq!(doc["interrupted"], false);
    }
}
