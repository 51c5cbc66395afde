//! A scenario's groups as tests of their own, for the readers that pair or draw tests
//! (`respbench compare`, `respbench plot`).

use serde::{Deserialize, Serialize};

use super::{Objective, Test};
use respbench_session::objective::Judged;

/// `groups[].slo`: a group's latency objectives judged on its figures at its rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupSlo {
    /// Every objective held.
    pub met: bool,
    /// The verdict in words (`met (p99 1.20 ms <= 2ms)`, `missed: p99 3.10 ms > 2ms`).
    pub text: String,
    /// Each objective, its value and whether it held.
    pub objectives: Vec<GroupObjective>,
}

/// One objective of `groups[].slo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupObjective {
    /// The objective, as `capacity[].objectives` has it.
    #[serde(flatten)]
    pub objective: Objective,
    /// What the group measured at that percentile, in microseconds.
    pub value_us: f64,
    /// It held.
    pub held: bool,
}

impl GroupSlo {
    /// The document's form of `j`.
    pub fn of(j: &Judged) -> GroupSlo {
        let objectives = j
            .objectives
            .iter()
            .enumerate()
            .map(|(i, o)| GroupObjective {
                objective: Objective::of(o),
                value_us: j.values_us.get(i).copied().unwrap_or(0.0),
                held: j.held(i),
            })
            .collect();
        GroupSlo { met: j.met(), text: j.text(), objectives }
    }

    /// The objectives as `--slo` gives them (`p99<=2ms,p99.9<=10ms`), to judge merged figures.
    pub fn given(&self) -> String {
        self.objectives.iter().map(|o| o.objective.text.as_str()).collect::<Vec<_>>().join(",")
    }
}

impl Test {
    /// Its groups (a scenario's), each a test entry named `TEST/GROUP` as the `-q` lines name
    /// it; none for a test of one group.
    pub fn groups_as_tests(&self) -> impl Iterator<Item = Test> + '_ {
        self.groups.iter().flatten().map(|g| Test { name: format!("{}/{}", self.name, g.name), ..g.clone() })
    }
}
