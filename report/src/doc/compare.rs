//! `comparison`: `respbench compare`'s answer, test by test.

use serde::{Deserialize, Serialize};

use super::*;

/// `comparison`: `respbench compare`'s answer for each test both sides ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Comparison {
    /// The baseline.
    pub a: ComparedSide,
    /// What is compared with it.
    pub b: ComparedSide,
    /// How the intervals were made.
    pub method: Method,
    /// The smallest change that counts, as a share (0.05): an interval within ± this that
    /// holds 0 is "no difference found".
    pub margin: f64,
    /// `--fail-if-slower`, as a share.
    #[serde(default)]
    pub fail_if_slower: Option<f64>,
    /// `--strict`: an interval that reaches past `fail_if_slower` fails too.
    pub strict: bool,
    /// What `--force` let through (configurations that differ, tests not limited by the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced: Option<Vec<String>>,
    /// Each test both sides ran.
    pub tests: Vec<ComparedTest>,
    /// The datasets both sides built (`--dataset-shape`), shape by shape (#50).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<crate::dataset_compare::ComparedMemory>,
    /// `--fail-if-slower`: some figure failed it (the command exits 1).
    pub failed: bool,
}

/// One side of a comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparedSide {
    /// Its documents.
    pub files: Vec<String>,
    /// `HOST:PORT` (or the socket) its runs went to.
    #[serde(default)]
    pub address: Option<String>,
    /// Its server, as its first document names it.
    pub server: Server,
}

/// `comparison.method`: the bootstrap.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Method {
    /// `bootstrap`.
    pub name: String,
    /// What is resampled: `runs, then seconds within each run`.
    pub unit: String,
    /// The interval's confidence (0.95).
    pub confidence: f64,
    /// Resamples drawn.
    pub resamples: u64,
    /// The resampling generator's seed (fixed: the same documents give the same intervals).
    pub seed: u64,
}

/// One test of a comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparedTest {
    /// The title (`GET`).
    pub name: String,
    /// The backend, when the documents compare several.
    #[serde(default)]
    pub backend: Option<String>,
    /// `--rps`: the step's target.
    #[serde(default)]
    pub target_rps: Option<u64>,
    /// A sweep's step (its `run` is 0: the runs are the repeats compared).
    #[serde(default)]
    pub step: Option<respbench_session::result::StepValues>,
    /// A's runs of it.
    pub runs_a: u64,
    /// B's runs of it.
    pub runs_b: u64,
    /// A's full seconds, over its runs (0 without a per-second series).
    pub seconds_a: u64,
    /// B's full seconds.
    pub seconds_b: u64,
    /// Why it was not compared (a side not limited by the server, no request succeeded).
    #[serde(default)]
    pub left_out: Option<String>,
    /// What `--force` let through for it.
    #[serde(default)]
    pub forced: Option<String>,
    /// rps, p50, p99, p99.9 (empty when left out).
    pub figures: Vec<ComparedFigure>,
}

/// One figure of a compared test: B against A with its interval and verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ComparedFigure {
    /// `rps`, `p50`, `p99`, `p99.9`.
    pub figure: String,
    /// `rps` or `ms`.
    pub unit: String,
    /// A's figure: the mean of its runs'.
    pub a: f64,
    /// B's.
    pub b: f64,
    /// B / A.
    pub ratio: f64,
    /// The interval's low end of B / A.
    pub ratio_low: f64,
    /// Its high end.
    pub ratio_high: f64,
    /// How much slower B is, as a share of A's figure (rps lower, latency higher; negative:
    /// faster).
    pub slower: f64,
    /// The interval's low end of `slower`.
    pub slower_low: f64,
    /// Its high end.
    pub slower_high: f64,
    /// `slower`, `faster`, `no_difference` or `inconclusive`.
    pub verdict: String,
    /// The verdict's sentence.
    pub text: String,
    /// Inconclusive: about how many more repeats would settle it.
    #[serde(default)]
    pub more_repeats: Option<u64>,
    /// `--fail-if-slower`: `fail`, `pass` or `undecided` (the interval reaches past it).
    #[serde(default)]
    pub gate: Option<String>,
}
