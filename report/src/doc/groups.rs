//! A scenario's groups as tests of their own, for the readers that pair or draw tests
//! (`respbench compare`, `respbench plot`).

use super::Test;

impl Test {
    /// Its groups (a scenario's), each a test entry named `TEST/GROUP` as the `-q` lines name
    /// it; none for a test of one group.
    pub fn groups_as_tests(&self) -> impl Iterator<Item = Test> + '_ {
        self.groups.iter().flatten().map(|g| Test { name: format!("{}/{}", self.name, g.name), ..g.clone() })
    }
}
