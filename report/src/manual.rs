//! The manual from the one list of options: the man page `respbench(1)` (roff), the guide's
//! option reference (Markdown) and the shell completions (bash, zsh, fish). The list is argh's:
//! the binary hands over the help argh prints for each parser (`--help-all`, `merge --help`, …)
//! and the short help's usage and examples, so that an option added to the parser appears in
//! every one of them without another edit.

use std::fmt::Write as _;

/// One option as argh lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionDoc {
    /// `-h`, when it has a short name.
    pub short: Option<String>,
    /// `--host` (argh gives every option but a short-only one a long name).
    pub long: Option<String>,
    /// The value's name (`host`) when the option takes one; `None` for a switch.
    pub value: Option<String>,
    /// Whether the option may be given more than once (`--replica A --replica B`).
    pub repeatable: bool,
    /// What it does, argh's wrapped lines joined.
    pub help: String,
}

impl OptionDoc {
    /// The names, short first: `-h, --host`.
    pub fn names(&self) -> Vec<&str> {
        self.short.iter().chain(self.long.iter()).map(String::as_str).collect()
    }
}

/// A command: respbench itself or one of its subcommands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// `respbench` or `merge`.
    pub name: String,
    /// What it does: the paragraph argh prints under its usage line.
    pub about: String,
    /// Its usage lines (the short help's for respbench, argh's for a subcommand).
    pub usage: Vec<String>,
    /// Its options, in argh's order.
    pub options: Vec<OptionDoc>,
}

impl Command {
    /// Reads argh's help for `name` (`Usage:` line, the paragraph under it, the `Options:`
    /// list). `program` is the path argh put in the usage line, replaced by `respbench`.
    pub fn from_help(name: &str, program: &str, help: &str) -> Command {
        let mut lines = help.lines();
        let usage_line = lines.next().unwrap_or("").trim_start_matches("Usage: ");
        let usage = usage_line.replacen(program, "respbench", 1);
        let mut about = Vec::new();
        for line in lines.by_ref().skip_while(|l| l.trim().is_empty()) {
            if line.trim().is_empty() {
                break;
            }
            about.push(line.trim());
        }
        let options = options_of_help(help);
        Command { name: name.to_string(), about: about.join(" "), usage: vec![usage], options }
    }
}

/// Reads the options of argh's help: the `Options:` list (`  -h, --host  server hostname`,
/// continuation lines indented further) and the usage line's `[-h <host>]` groups, which say
/// which take a value and which repeat (`<replica...>`). argh's own help triggers are left out.
pub fn options_of_help(help: &str) -> Vec<OptionDoc> {
    let mut options: Vec<OptionDoc> = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Options:" {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if !line.starts_with(' ') {
            if !line.trim().is_empty() {
                inside = false;
            }
            continue;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent == 2 && trimmed.starts_with('-') {
            let mut rest = trimmed;
            let mut names = Vec::new();
            while rest.starts_with('-') {
                let end = rest.find(|c: char| c.is_whitespace() || c == ',').unwrap_or(rest.len());
                names.push(rest[..end].to_string());
                rest = rest[end..].trim_start_matches(',').trim_start();
            }
            let (short, long) = match names.as_slice() {
                [s, l, ..] => (Some(s.clone()), Some(l.clone())),
                [n] if n.starts_with("--") => (None, Some(n.clone())),
                [n] => (Some(n.clone()), None),
                [] => (None, None),
            };
            options.push(OptionDoc { short, long, value: None, repeatable: false, help: rest.to_string() });
        } else if let Some(last) = options.last_mut() {
            if !last.help.is_empty() {
                last.help.push(' ');
            }
            last.help.push_str(trimmed);
        }
    }
    let usage = help.lines().next().unwrap_or("");
    for group in usage.split('[').skip(1) {
        let group = group.split(']').next().unwrap_or("");
        let Some((name, value)) = group.split_once(" <") else { continue };
        let value = value.trim_end_matches('>');
        let (value, repeatable) = match value.strip_suffix("...") {
            Some(v) => (v, true),
            None => (value, false),
        };
        if let Some(o) =
            options.iter_mut().find(|o| o.short.as_deref() == Some(name) || o.long.as_deref() == Some(name))
        {
            o.value = Some(value.to_string());
            o.repeatable = repeatable;
        }
    }
    options.retain(|o| !matches!(o.long.as_deref(), Some("--help" | "--help-all")));
    options
}

/// Everything the generators read: respbench's options and its subcommands'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manual {
    /// respbench's version, for the man page's footer.
    pub version: String,
    /// respbench itself.
    pub main: Command,
    /// The subcommands, each with its usage, purpose and options.
    pub subcommands: Vec<Command>,
    /// Example command lines (the short help's).
    pub examples: Vec<String>,
}

impl Manual {
    /// The manual of respbench `version`: `main_help` is argh's `--help-all`, `short_help` the
    /// short `--help` (its usage block gives the synopsis and its examples the examples), `subs`
    /// each subcommand's name and argh help (or its purpose alone, for one argh does not parse),
    /// `program` the path argh put in the usage lines.
    pub fn new(
        version: &str,
        program: &str,
        main_help: &str,
        short_help: &str,
        subs: &[(&str, &str)],
    ) -> Manual {
        let mut main = Command::from_help("respbench", program, main_help);
        let block = |title: &str| -> Vec<String> {
            let mut lines = short_help.lines().skip_while(|l| !l.starts_with(title));
            let first = lines.next().map(|l| l.trim_start_matches(title).trim().to_string());
            first
                .into_iter()
                .chain(lines.take_while(|l| !l.trim().is_empty()).map(|l| l.trim().to_string()))
                .filter(|l| !l.is_empty())
                .collect()
        };
        // A line may hold two short usages side by side (`respbench man …    respbench completions …`).
        main.usage = block("Usage:")
            .iter()
            .flat_map(|l| {
                let mut parts = vec![l.as_str()];
                while let Some(at) = parts.last().and_then(|p| p.get(1..)?.find("   respbench ")) {
                    let last = parts.pop().unwrap_or_default();
                    let (a, b) = last.split_at(at + 1);
                    parts.extend([a.trim_end(), b.trim_start()]);
                }
                parts.into_iter().map(str::to_string).collect::<Vec<_>>()
            })
            .collect();
        let examples = block("Examples");
        let others = OTHER_SUBCOMMANDS.iter().filter(|(n, _)| !subs.iter().any(|(s, _)| s == n));
        let subcommands = subs
            .iter()
            .chain(others)
            .map(|(name, help)| {
                let mut c = if help.starts_with("Usage: ") {
                    Command::from_help(name, program, help)
                } else {
                    Command { name: name.to_string(), about: help.to_string(), ..Command::default() }
                };
                // The short help's usage line, where it has one, is the one a person reads.
                if let Some(short) = main.usage.iter().find(|u| u.starts_with(&format!("respbench {name} ")))
                {
                    c.usage = vec![short.clone()];
                }
                c
            })
            .collect();
        Manual { version: version.to_string(), main, subcommands, examples }
    }

    /// Every long and short name of respbench's own options.
    fn all_names(&self) -> Vec<&str> {
        self.main.options.iter().flat_map(OptionDoc::names).collect()
    }
}

/// The subcommands argh does not parse, with their purpose (and `plot`'s, for a build without
/// it); their usage lines are the short help's.
const OTHER_SUBCOMMANDS: &[(&str, &str)] = &[
    (
        "plot",
        "draws the results of respbench --json runs as SVG charts or one HTML report (the plot feature)",
    ),
    (
        "capture",
        "records the commands a server receives (MONITOR), for --replay; takes the connection options",
    ),
    (
        "run",
        "runs a scenario file (TOML): several client groups at once, its options after the command line's",
    ),
    ("memtier", "runs a memtier_benchmark command line unchanged, with memtier's outputs"),
    ("completions", "prints the completion script of bash, zsh or fish"),
    ("man", "prints this manual page (roff), or with markdown the option reference"),
];

/// The exit statuses, for the man page (the guide's chapter on exit codes says more).
const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "every test ran to completion, with no error reply and a completed request in each measured window",
    ),
    (
        "1",
        "bad options; the server could not be reached or refused; connections failed mid-run; an error \
         reply; a measured window with no completed request; --verify found a mismatch; an output \
         could not be written; with --slo, an objective no rate met",
    ),
    ("2", "respbench compare could not compare (1 is its answer that B is slower)"),
    ("130, 143", "interrupted by SIGINT or SIGTERM (128 + the signal); what completed is printed first"),
];

/// `text` escaped for roff: backslashes, hyphens (so that options copy as typed), and a line's
/// leading `.` or `'`.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    let mut out = String::new();
    for (i, line) in escaped.lines().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.starts_with('.') || line.starts_with('\'') {
            out.push_str("\\&");
        }
        out.push_str(line);
    }
    out
}

/// The roff of an option's tag line: `\fB\-h\fR, \fB\-\-host\fR \fIhost\fR`.
fn roff_tag(o: &OptionDoc) -> String {
    let names: Vec<String> = o.names().iter().map(|n| format!("\\fB{}\\fR", roff(n))).collect();
    let mut tag = names.join(", ");
    if let Some(v) = &o.value {
        let _ = write!(tag, " \\fI{}\\fR", roff(v));
        if o.repeatable {
            tag.push_str(" ...");
        }
    }
    tag
}

/// The man page respbench(1), in roff (man macros).
pub fn man_page(m: &Manual) -> String {
    let mut s = String::new();
    let _ = writeln!(s, ".\\\" Generated by `respbench man` from respbench's options: do not edit.");
    let _ = writeln!(s, ".TH RESPBENCH 1 \"\" \"respbench {}\" \"User Commands\"", roff(&m.version));
    // Left-adjusted and unhyphenated: long options and URIs neither stretch a line nor split.
    s.push_str(".ad l\n.nh\n");
    s.push_str(".SH NAME\nrespbench \\- a redis\\-benchmark compatible load generator for Redis and every RESP server\n");
    s.push_str(".SH SYNOPSIS\n.nf\n");
    for u in &m.main.usage {
        let _ = writeln!(s, "{}", roff(u));
    }
    for c in m
        .subcommands
        .iter()
        .filter(|c| !m.main.usage.iter().any(|u| u.starts_with(&format!("respbench {} ", c.name))))
    {
        for u in &c.usage {
            let _ = writeln!(s, "{}", roff(u));
        }
    }
    s.push_str(".fi\n.SH DESCRIPTION\n");
    let _ = writeln!(s, "{}", roff(&m.main.about));
    s.push_str(
        ".PP\nEvery redis\\-benchmark 7 option is taken with its meaning, valkey\\-benchmark 9's too, and \
         a memtier_benchmark command line runs unchanged as \\fBrespbench memtier\\fR \\fIARGS\\fR. \
         A long option takes its value as \\fB\\-\\-pipeline 16\\fR or \\fB\\-\\-pipeline=16\\fR.\n",
    );
    s.push_str(".SH OPTIONS\n");
    for o in &m.main.options {
        let _ = writeln!(s, ".TP\n{}\n{}", roff_tag(o), roff(&o.help));
    }
    s.push_str(".TP\n\\fB\\-\\-help\\fR\none screen: the options by group, examples, the subcommands\n");
    s.push_str(".TP\n\\fB\\-\\-help\\-all\\fR\nevery option with its meaning\n");
    s.push_str(".SH SUBCOMMANDS\n");
    for c in &m.subcommands {
        let _ = writeln!(s, ".SS {}", roff(&format!("respbench {}", c.name)));
        if !c.usage.is_empty() {
            s.push_str(".nf\n");
            for u in &c.usage {
                let _ = writeln!(s, "{}", roff(u));
            }
            s.push_str(".fi\n.PP\n");
        }
        let _ = writeln!(s, "{}", roff(&c.about));
        for o in &c.options {
            let _ = writeln!(s, ".TP\n{}\n{}", roff_tag(o), roff(&o.help));
        }
    }
    s.push_str(".SH EXAMPLES\n.nf\n");
    for e in &m.examples {
        let _ = writeln!(s, "{}", roff(e));
    }
    s.push_str(".fi\n.SH EXIT STATUS\n");
    for (code, meaning) in EXIT_STATUS {
        let _ = writeln!(s, ".TP\n\\fB{}\\fR\n{}", roff(code), roff(meaning));
    }
    s.push_str(
        ".SH ENVIRONMENT\n.TP\n\\fBREDISCLI_AUTH\\fR\nthe password, when \\fB\\-a\\fR is not given\n\
         .TP\n\\fBJOB_COMPLETION_INDEX\\fR, \\fBRESPBENCH_WORKERS\\fR\nthis worker's index and the \
         number of workers, when \\fB\\-\\-worker\\fR is not given\n",
    );
    s.push_str(
        ".SH SEE ALSO\n\\fBredis\\-benchmark\\fR(1), \\fBvalkey\\-benchmark\\fR(1), \\fBmemtier_benchmark\\fR(1), \
         \\fBredis\\-server\\fR(1).\nThe guide: docs/README.md in respbench's source.\n",
    );
    s
}

/// `text` as Markdown prose or a table cell: what Markdown would read as emphasis, an HTML tag
/// or a cell's end escaped (`__rand_int__` stays as typed), no line breaks.
fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('_', "\\_")
        .replace('*', "\\*")
        .replace('<', "&lt;")
        .replace('|', "\\|")
        .replace('\n', " ")
}

/// The option reference in Markdown: a table per command.
pub fn markdown(m: &Manual) -> String {
    let mut s = String::new();
    s.push_str(
        "# Option reference\n\n<!-- Generated by `respbench man markdown` from respbench's options \
         (scripts/gen-docs): do not edit. -->\n\n",
    );
    s.push_str(
        "Every option of respbench, as `respbench --help-all` lists it; the man page \
         ([respbench.1](respbench.1)) and the shell completions (`respbench completions bash|zsh|fish`) \
         come from the same list. The [guide](README.md) explains each in its chapter.\n\n",
    );
    let table = |s: &mut String, c: &Command| {
        if c.options.is_empty() {
            return;
        }
        s.push_str("| option | value | meaning |\n| --- | --- | --- |\n");
        for o in &c.options {
            let names: Vec<String> = o.names().iter().map(|n| format!("`{n}`")).collect();
            let value = o.value.as_deref().map_or(String::new(), |v| {
                format!("`<{v}>`{}", if o.repeatable { " (repeatable)" } else { "" })
            });
            let _ = writeln!(s, "| {} | {} | {} |", names.join(", "), value, cell(&o.help));
        }
        s.push('\n');
    };
    s.push_str("## respbench\n\n```\n");
    for u in &m.main.usage {
        let _ = writeln!(s, "{u}");
    }
    s.push_str("```\n\n");
    let _ = writeln!(s, "{}\n", cell(&m.main.about));
    table(&mut s, &m.main);
    for c in &m.subcommands {
        let _ = writeln!(s, "## respbench {}\n", c.name);
        if !c.usage.is_empty() {
            let _ = writeln!(s, "```\n{}\n```\n", c.usage.join("\n"));
        }
        let _ = writeln!(s, "{}\n", cell(&c.about));
        table(&mut s, c);
    }
    s
}

/// The shells `respbench completions` writes for.
pub const SHELLS: &[&str] = &["bash", "zsh", "fish"];

/// The completion script for `shell` (one of [`SHELLS`]), or `None` for another shell.
pub fn completions(m: &Manual, shell: &str) -> Option<String> {
    match shell {
        "bash" => Some(bash(m)),
        "zsh" => Some(zsh(m)),
        "fish" => Some(fish(m)),
        _ => None,
    }
}

/// The names of `c`'s options that take a value.
fn valued(c: &Command) -> Vec<&str> {
    c.options.iter().filter(|o| o.value.is_some()).flat_map(OptionDoc::names).collect()
}

/// bash: self-contained (`complete -F` over static lists; neither the bash-completion package
/// nor respbench on PATH). An option's value completes as a file name (`-o default`).
fn bash(m: &Manual) -> String {
    let mut s = String::new();
    s.push_str("# bash completion for respbench. Generated by `respbench completions bash`: do not edit.\n");
    s.push_str("_respbench() {\n    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" sub=\"\"\n");
    s.push_str("    [ \"$COMP_CWORD\" -gt 0 ] && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n");
    s.push_str(
        "    [ \"${#COMP_WORDS[@]}\" -gt 1 ] && [ \"$COMP_CWORD\" -gt 1 ] && sub=\"${COMP_WORDS[1]}\"\n",
    );
    let subs: Vec<&str> = m.subcommands.iter().map(|c| c.name.as_str()).collect();
    let _ = writeln!(s, "    local subcommands=\"{}\"", subs.join(" "));
    s.push_str("    local options valued\n    case \"$sub\" in\n");
    for c in m.subcommands.iter().filter(|c| !c.options.is_empty()) {
        let names: Vec<&str> = c.options.iter().flat_map(OptionDoc::names).chain(["--help"]).collect();
        let _ = writeln!(
            s,
            "    {})\n        options=\"{}\"\n        valued=\"{}\" ;;",
            c.name,
            names.join(" "),
            valued(c).join(" ")
        );
    }
    let names: Vec<&str> = m.all_names().into_iter().chain(["--help", "--help-all"]).collect();
    let _ = writeln!(
        s,
        "    *)\n        options=\"{}\"\n        valued=\"{}\" ;;\n    esac",
        names.join(" "),
        valued(&m.main).join(" ")
    );
    s.push_str("    COMPREPLY=()\n");
    s.push_str("    case \" $valued \" in *\" $prev \"*) [ -n \"$prev\" ] && return 0 ;; esac\n");
    s.push_str("    if [[ \"$cur\" == -* ]]; then\n");
    s.push_str("        COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n");
    s.push_str("    elif [ \"$COMP_CWORD\" -eq 1 ]; then\n");
    s.push_str("        COMPREPLY=($(compgen -W \"$subcommands\" -- \"$cur\"))\n    fi\n    return 0\n}\n");
    s.push_str("complete -o default -F _respbench respbench\n");
    s
}

/// `help`'s first clause, for a completion's one-line description: up to the first `;` or
/// `(`, at most 80 characters.
fn brief(help: &str) -> String {
    let end = help.find([';', '(']).unwrap_or(help.len());
    let mut b: String = help[..end].trim().chars().take(80).collect();
    if b.is_empty() {
        b = help.chars().take(80).collect();
    }
    b
}

/// zsh: an `#compdef` function over `_arguments`.
fn zsh(m: &Manual) -> String {
    // Inside '…': a quote closes it; inside [...] the brackets and colons are _arguments'.
    let esc = |t: &str| {
        brief(t)
            .replace('\\', "\\\\")
            .replace('[', "\\[")
            .replace(']', "\\]")
            .replace(':', "\\:")
            .replace('\'', "'\\''")
    };
    let spec = |o: &OptionDoc| -> Vec<String> {
        let names = o.names();
        let exclusive = if names.len() > 1 { format!("({})", names.join(" ")) } else { String::new() };
        let repeat = if o.repeatable { "*" } else { "" };
        let value = o.value.as_deref().map_or(String::new(), |v| format!(":{v}:_files"));
        names.iter().map(|n| format!("'{repeat}{exclusive}{n}[{}]{value}'", esc(&o.help))).collect()
    };
    let mut s = String::new();
    s.push_str("#compdef respbench\n# zsh completion for respbench. Generated by `respbench completions zsh`: do not edit.\n");
    s.push_str("_respbench() {\n    if (( CURRENT == 2 )) && [[ $words[2] != -* ]]; then\n");
    let subs: Vec<String> = m
        .subcommands
        .iter()
        .map(|c| {
            format!("'{}:{}'", c.name, esc(c.about.trim_start_matches(&format!("respbench {}: ", c.name))))
        })
        .collect();
    let _ = writeln!(s, "        local -a subcommands=({})", subs.join(" "));
    s.push_str("        _describe subcommand subcommands\n        return\n    fi\n    case $words[2] in\n");
    for c in m.subcommands.iter().filter(|c| !c.options.is_empty()) {
        let specs: Vec<String> = c.options.iter().flat_map(spec).collect();
        let _ = writeln!(
            s,
            "    {})\n        _arguments -s {} '*:file:_files' ;;",
            c.name,
            specs.join(" \\\n            ")
        );
    }
    let specs: Vec<String> = m.main.options.iter().flat_map(spec).collect();
    let _ = writeln!(
        s,
        "    *)\n        _arguments -s {} '*::command:' ;;\n    esac\n}}",
        specs.join(" \\\n            ")
    );
    s.push_str("_respbench \"$@\"\n");
    s
}

/// fish: `complete -c respbench` lines, subcommands' options under their subcommand.
fn fish(m: &Manual) -> String {
    let esc = |t: &str| brief(t).replace('\\', "\\\\").replace('\'', "\\'");
    let line = |o: &OptionDoc, cond: &str| {
        let mut l = format!("complete -c respbench -n '{cond}'");
        for n in o.names() {
            match n.strip_prefix("--") {
                Some(long) => {
                    let _ = write!(l, " -l {long}");
                }
                None => {
                    let _ = write!(l, " -s {}", n.trim_start_matches('-'));
                }
            }
        }
        if o.value.is_some() {
            l.push_str(" -r");
        }
        let _ = write!(l, " -d '{}'", esc(&o.help));
        l
    };
    let mut s = String::from(
        "# fish completion for respbench. Generated by `respbench completions fish`: do not edit.\n",
    );
    let subs: Vec<&str> = m.subcommands.iter().map(|c| c.name.as_str()).collect();
    for c in &m.subcommands {
        let _ = writeln!(
            s,
            "complete -c respbench -n '__fish_use_subcommand' -f -a {} -d '{}'",
            c.name,
            esc(c.about.trim_start_matches(&format!("respbench {}: ", c.name)))
        );
    }
    let not_sub = format!("not __fish_seen_subcommand_from {}", subs.join(" "));
    for o in &m.main.options {
        let _ = writeln!(s, "{}", line(o, &not_sub));
    }
    for c in &m.subcommands {
        for o in &c.options {
            let _ = writeln!(s, "{}", line(o, &format!("__fish_seen_subcommand_from {}", c.name)));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELP: &str = "Usage: prog [-h <host>] [--askpass] [--replica <replica...>] [--print-percentiles <print-percentiles>]

respbench: a load generator. Runs things.

Options:
  -h, --host        server hostname (default 127.0.0.1)
  --askpass         read the password from the terminal without echo (or one
                    line of stdin)
  --replica         a replica (repeatable)
  --print-percentiles
                    the latency percentiles
  --help-all        display usage information
";

    #[test]
    fn reads_argh_help() {
        let o = options_of_help(HELP);
        assert_eq!(o.len(), 4);
        assert_eq!(o[0].names(), ["-h", "--host"]);
        assert_eq!(o[0].value.as_deref(), Some("host"));
        assert_eq!(o[1].help, "read the password from the terminal without echo (or one line of stdin)");
        assert_eq!(o[1].value, None);
        assert!(o[2].repeatable);
        assert_eq!(o[3].help, "the latency percentiles");
        assert_eq!(o[3].value.as_deref(), Some("print-percentiles"));
        let c = Command::from_help("respbench", "prog", HELP);
        assert_eq!(c.about, "respbench: a load generator. Runs things.");
    }

    #[test]
    fn roff_escapes_what_troff_reads() {
        assert_eq!(roff(".start\n'quote\na-b \\n"), "\\&.start\n\\&'quote\na\\-b \\en");
    }

    #[test]
    fn markdown_keeps_text_as_typed() {
        assert_eq!(cell("__rand_int__ a|b <x> 2*3"), "\\_\\_rand\\_int\\_\\_ a\\|b &lt;x> 2\\*3");
    }

    #[test]
    fn every_shell_names_every_option() {
        let m =
            Manual::new("1.0", "prog", HELP, "Usage: respbench [options]\n\nExamples\n  respbench -q\n", &[]);
        for shell in SHELLS {
            let script = completions(&m, shell).unwrap();
            for name in ["host", "askpass", "replica", "print-percentiles"] {
                assert!(script.contains(name), "{shell}: {name}");
            }
        }
        assert_eq!(completions(&m, "csh"), None);
        assert!(man_page(&m).contains(".SH EXAMPLES\n.nf\nrespbench \\-q\n"));
    }
}
