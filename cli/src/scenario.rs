//! `respbench run FILE.toml [OPTIONS]`: the scenario file (session's scenario) stands for options
//! the command line would give; each group is checked as a command line is, after the
//! command line's own options, which override the file's.

use argh::FromArgs;
use respbench_session::config::{Config, Group};
use respbench_session::scenario::{given, Scenario, ScenarioError};

/// Why a scenario's groups make no run.
#[derive(Debug)]
pub enum GroupsError {
    /// A command after the options: a group's goes in the file.
    CommandGiven,
    /// A group's options, checked as a command line's, are refused (the file and group named).
    Group(ScenarioError),
}

impl std::fmt::Display for GroupsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupsError::CommandGiven => f.write_str(
                "respbench run: a group's command goes in the scenario file, not after the options",
            ),
            GroupsError::Group(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for GroupsError {}

/// Each group's configuration: `user` (the command line's options) and the file's base options,
/// then the group's; the connection's secrets and the suite are the run's (`base`).
pub fn groups(name: &str, s: &Scenario, user: &[String], mut base: Config) -> Result<Config, GroupsError> {
    if !base.command.is_empty() {
        return Err(GroupsError::CommandGiven);
    }
    let given = given(user);
    let head: Vec<String> = user.iter().cloned().chain(s.base_args(&given)).collect();
    for (k, group) in s.names().into_iter().enumerate() {
        let argv: Vec<String> = head.iter().cloned().chain(s.group_args(k, &given)).collect();
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let opts = crate::opts::Opts::from_args(&[name], &argv)
            .map_err(|e| GroupsError::Group(s.group_error(k, e.output.trim_end())))?;
        let mut cfg = opts.check().map_err(|e| GroupsError::Group(s.group_error(k, e)))?;
        let command = std::mem::take(&mut cfg.command);
        cfg.command = crate::args::command_bytes(&argv, command)
            .map_err(|e| GroupsError::Group(s.group_error(k, e)))?;
        cfg.password.clone_from(&base.password);
        cfg.valkey_suite = base.valkey_suite;
        let slo = s.group_slo(k).map_err(GroupsError::Group)?;
        base.groups.push(Group { name: group, at: s.group_at(k), cfg, slo });
    }
    // The run's connections are its groups'.
    base.clients = base.groups.iter().map(|g| g.cfg.clients).sum();
    base.scenario = Some((s.file.clone(), s.text.clone()));
    Ok(base)
}
