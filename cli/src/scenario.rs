//! `respbench run FILE.toml [OPTIONS]`: the scenario file (session's scenario) stands for options
//! the command line would give; each group is checked as a command line is, after the
//! command line's own options, which override the file's.

use argh::FromArgs;
use respbench_session::config::{Config, Group};
use respbench_session::scenario::{self, Scenario};

/// Takes `run FILE` (or `run --from DOCUMENT`: the scenario a result recorded) off `args` (after
/// the program's name) and reads the file, with how many arguments it took; `None` without `run`.
pub fn take(args: &mut Vec<String>) -> Result<Option<(Scenario, usize)>, String> {
    if args.get(1).map(String::as_str) != Some("run") {
        return Ok(None);
    }
    if args.get(2).map(String::as_str) == Some("--from") {
        let Some(doc) = args.get(3).cloned() else {
            return Err(
                "respbench run --from: give the result document: respbench run --from out.json".into()
            );
        };
        args.drain(1..4);
        let (file, text) = respbench_report::rerun::scenario_of(&doc)?;
        return scenario::parse(&file, text).map(|s| Some((s, 3))).map_err(|e| e.to_string());
    }
    let Some(file) = args.get(2).filter(|f| !f.starts_with('-')).cloned() else {
        return Err("respbench run: give the scenario file: respbench run FILE.toml [OPTIONS]".into());
    };
    args.drain(1..3);
    scenario::read(&file).map(|s| Some((s, 2))).map_err(|e| e.to_string())
}

/// Whether the command line `args` gave the option `name` (or its other spelling).
pub fn given(args: &[String]) -> impl Fn(&str) -> bool + '_ {
    const LONG: [(&str, &str); 11] = [
        ("-h", "--host"),
        ("-p", "--port"),
        ("-s", "--socket"),
        ("-a", "--password"),
        ("-u", "--uri"),
        ("-c", "--clients"),
        ("-n", "--requests"),
        ("-d", "--datasize"),
        ("-r", "--keyspacelen"),
        ("-P", "--pipeline"),
        ("-t", "--tests"),
    ];
    move |name: &str| {
        let long = LONG.iter().find(|(s, _)| *s == name).map(|(_, l)| *l);
        args.iter().any(|a| a == name || Some(a.as_str()) == long)
    }
}

/// Each group's configuration: `user` (the command line's options) and the file's base options,
/// then the group's; the connection's secrets and the suite are the run's (`base`).
pub fn groups(name: &str, s: &Scenario, user: &[String], mut base: Config) -> Result<Config, String> {
    if !base.command.is_empty() {
        return Err(
            "respbench run: a group's command goes in the scenario file, not after the options".into()
        );
    }
    let given = given(user);
    let head: Vec<String> = user.iter().cloned().chain(s.base_args(&given)).collect();
    for (k, group) in s.names().into_iter().enumerate() {
        let argv: Vec<String> = head.iter().cloned().chain(s.group_args(k, &given)).collect();
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let opts = crate::opts::Opts::from_args(&[name], &argv)
            .map_err(|e| s.group_error(k, e.output.trim_end()).to_string())?;
        let mut cfg = opts.check().map_err(|e| s.group_error(k, e).to_string())?;
        let command = std::mem::take(&mut cfg.command);
        cfg.command =
            crate::args::command_bytes(&argv, command).map_err(|e| s.group_error(k, e).to_string())?;
        cfg.password.clone_from(&base.password);
        cfg.valkey_suite = base.valkey_suite;
        base.groups.push(Group { name: group, at: s.group_at(k), cfg });
    }
    // The run's connections are its groups'.
    base.clients = base.groups.iter().map(|g| g.cfg.clients).sum();
    base.scenario = Some((s.file.clone(), s.text.clone()));
    Ok(base)
}
