//! The documentation cannot rot (issue #54): the man page and the option reference are what
//! `respbench man` generates from the options today, the man page renders without a warning,
//! the completions complete, scripts/install puts everything where Debian looks.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use respbench_tests::respbench;

const T: Duration = Duration::from_secs(60);

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// Runs `program args` (a shell, man), its stdout and stderr, asserting it exited 0.
fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (scripts/ensure-shells installs it)"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{program} {args:?}: {}\n{stdout}\n{stderr}", out.status);
    (stdout, stderr)
}

/// The long options `respbench --help-all` lists.
fn long_options() -> Vec<String> {
    let all = respbench().run(&["--help-all"], T);
    assert!(all.status.success(), "{}", all.dump());
    let long: Vec<String> = all
        .stdout
        .lines()
        .filter(|l| l.starts_with("  -"))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")).map(str::to_string))
        .filter(|l| l != "--help-all")
        .collect();
    assert!(long.len() > 100, "{long:?}");
    long
}

#[test]
fn man_page_and_option_reference_are_current() {
    for (args, file) in [(&["man"][..], "docs/respbench.1"), (&["man", "markdown"][..], "docs/options.md")] {
        let out = respbench().run(args, T);
        assert!(out.status.success(), "{}", out.dump());
        let committed = std::fs::read_to_string(root().join(file)).unwrap_or_default();
        assert!(
            out.stdout == committed,
            "{file} is not what `respbench {}` generates from the options today: run scripts/gen-docs",
            args.join(" ")
        );
    }
    // Every option is in both, and in every shell's completions.
    let man = std::fs::read_to_string(root().join("docs/respbench.1")).unwrap();
    let reference = std::fs::read_to_string(root().join("docs/options.md")).unwrap();
    let scripts: Vec<(String, String)> = ["bash", "zsh", "fish"]
        .iter()
        .map(|shell| {
            let out = respbench().run(&["completions", shell], T);
            assert!(out.status.success(), "{}", out.dump());
            (shell.to_string(), out.stdout)
        })
        .collect();
    for long in long_options() {
        assert!(man.contains(&format!("\\fB{}\\fR", long.replace('-', "\\-"))), "{long} not in the man page");
        assert!(reference.contains(&format!("`{long}`")), "{long} not in docs/options.md");
        for (shell, script) in &scripts {
            let name = if shell == "fish" { format!("-l {}", &long[2..]) } else { long.clone() };
            assert!(script.contains(&name), "{long} not in the {shell} completions");
        }
    }
}

#[test]
fn man_page_renders_without_warnings() {
    let page = root().join("docs/respbench.1");
    let page = page.to_str().unwrap();
    let (text, warnings) = run("man", &["--warnings", "-l", page], &[("MANWIDTH", "80")]);
    assert_eq!(warnings, "", "man --warnings -l docs/respbench.1");
    for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SUBCOMMANDS", "EXAMPLES", "EXIT STATUS"] {
        assert!(text.lines().any(|l| l == section), "{section} missing:\n{text}");
    }
    // Options render as typed: a hyphen, not a typographic dash.
    assert!(text.contains("-P, --pipeline pipeline"), "{text}");
}

/// The bash script is self-contained (no bash-completion package, no respbench on PATH): sourced
/// in a bare `bash --norc`, its function completes `--pipel` to `--pipeline` (and
/// `--pipeline-mode`, which bash shows beside it), a subcommand's options, and the subcommands.
#[test]
fn bash_completion_completes_pipel_to_pipeline() {
    let out = respbench().run(&["completions", "bash"], T);
    assert!(out.status.success(), "{}", out.dump());
    let script = format!(
        "{}\ncomplete -p respbench\n\
         for words in 'respbench --pipel' 'respbench --pipeline-m' 'respbench -q --tls-ciph' 'respbench merge --f' 'respbench com'; do\n\
             read -ra COMP_WORDS <<<\"$words\"; COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
             _respbench; echo \"$words => ${{COMPREPLY[*]}}\"\n\
         done\n\
         COMP_WORDS=(respbench -p ''); COMP_CWORD=2; _respbench; echo \"value => ${{#COMPREPLY[@]}}\"",
        out.stdout
    );
    let (stdout, stderr) =
        run("env", &["-i", "PATH=/usr/bin:/bin", "bash", "--norc", "--noprofile", "-c", &script], &[]);
    assert_eq!(stderr, "");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "complete -o default -F _respbench respbench",
            "respbench --pipel => --pipeline --pipeline-mode",
            "respbench --pipeline-m => --pipeline-mode",
            "respbench -q --tls-ciph => --tls-ciphers --tls-ciphersuites",
            "respbench merge --f => --force",
            "respbench com => compare completions",
            // An option's value: no option names offered (bash falls back to file names).
            "value => 0",
        ]
    );
}

/// fish completes from the same list (`complete -C` asks it as the shell would), and zsh reads
/// its function.
#[test]
fn fish_and_zsh_completions() {
    let dir = std::env::temp_dir().join(format!("respbench-completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for shell in ["fish", "zsh"] {
        let out = respbench().run(&["completions", shell], T);
        assert!(out.status.success(), "{}", out.dump());
        std::fs::write(dir.join(shell), &out.stdout).unwrap();
    }
    let fish = dir.join("fish");
    let (stdout, _) = run(
        "fish",
        &[
            "--no-config",
            "-c",
            &format!(
                "source {}; complete -C 'respbench --pipel'; complete -C 'respbench merge --f'",
                fish.display()
            ),
        ],
        &[],
    );
    let names: Vec<&str> = stdout.lines().map(|l| l.split('\t').next().unwrap_or("")).collect();
    assert_eq!(names, ["--pipeline", "--pipeline-mode", "--force"], "{stdout}");
    let zsh = dir.join("zsh");
    run("zsh", &["-n", zsh.to_str().unwrap()], &[]);
    // Loaded by compinit from a directory on fpath, as the installed file is.
    std::fs::rename(&zsh, dir.join("_respbench")).unwrap();
    let (stdout, stderr) = run(
        "zsh",
        &[
            "-f",
            "-c",
            &format!(
                "fpath=({} $fpath); autoload -Uz compinit; compinit -u -D; echo ${{_comps[respbench]}}",
                dir.display()
            ),
        ],
        &[],
    );
    assert_eq!((stdout.trim(), stderr.as_str()), ("_respbench", ""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_shell_is_refused_with_the_usage() {
    let out = respbench().run(&["completions", "csh"], T);
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("respbench completions bash|zsh|fish"), "{}", out.dump());
}

/// scripts/install with DESTDIR and PREFIX: the binary, the man page and the three shells'
/// completions where Debian's man, bash-completion, zsh and fish look under the prefix.
#[test]
fn install_puts_everything_where_debian_looks() {
    let dest = std::env::temp_dir().join(format!("respbench-install-{}", std::process::id()));
    let bin = respbench().path;
    let (_, stderr) = run(
        root().join("scripts/install").to_str().unwrap(),
        &[],
        &[
            ("DESTDIR", dest.to_str().unwrap()),
            ("PREFIX", "/usr/local"),
            ("RESPBENCH_BIN", bin.to_str().unwrap()),
        ],
    );
    assert!(stderr.contains("installed respbench"), "{stderr}");
    let prefix = dest.join("usr/local");
    let installed = prefix.join("bin/respbench");
    let (version, _) = run(installed.to_str().unwrap(), &["--version"], &[]);
    assert!(version.starts_with("respbench "), "{version}");
    let man = std::fs::read_to_string(prefix.join("share/man/man1/respbench.1")).unwrap();
    assert_eq!(man, std::fs::read_to_string(root().join("docs/respbench.1")).unwrap());
    for (file, shell) in [
        ("share/bash-completion/completions/respbench", "bash"),
        ("share/zsh/site-functions/_respbench", "zsh"),
        ("share/fish/vendor_completions.d/respbench.fish", "fish"),
    ] {
        let text = std::fs::read_to_string(prefix.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(text, respbench().run(&["completions", shell], T).stdout, "{file}");
    }
    // man finds the page under the prefix by name, as `man respbench` does once installed.
    let manpath = prefix.join("share/man");
    let (page, _) = run("man", &["-M", manpath.to_str().unwrap(), "respbench"], &[("MANWIDTH", "80")]);
    assert!(page.contains("RESPBENCH(1)"), "{page}");
    let _ = std::fs::remove_dir_all(&dest);
}

/// The Markdown files of the README and the guide (not docs/incoming/, the drafts the lead folds
/// in).
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The lines of `text` outside fenced code blocks, numbered from 1.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// A heading's anchor as GitHub makes it: lower case, punctuation but `-` and `_` dropped,
/// spaces turned to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings.
fn anchors(text: &str) -> Vec<String> {
    prose(text)
        .iter()
        .filter(|(_, l)| l.starts_with('#'))
        .map(|(_, l)| anchor(l.trim_start_matches('#')))
        .collect()
}

/// Every relative link of the README and the guide resolves: the file exists, and the anchor
/// (`file.md#anchor`, `#anchor`) is one of its headings.
#[test]
fn every_relative_link_resolves() {
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for (n, line) in prose(&text) {
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                rest = &rest[at + 2..];
                let Some(end) = rest.find(')') else { break };
                let target = &rest[..end];
                rest = &rest[end..];
                if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                    continue;
                }
                checked += 1;
                let (path, fragment) = target.split_once('#').map_or((target, None), |(p, f)| (p, Some(f)));
                let resolved = if path.is_empty() { file.clone() } else { dir.join(path) };
                let ok = resolved.exists()
                    && fragment.is_none_or(|f| {
                        std::fs::read_to_string(&resolved).is_ok_and(|t| anchors(&t).iter().any(|a| a == f))
                    });
                if !ok {
                    broken.push(format!("{}:{n}: {target}", file.strip_prefix(root()).unwrap().display()));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} links found");
    assert!(broken.is_empty(), "{} broken links:\n{}", broken.len(), broken.join("\n"));
}

/// The README's and the guide's command lines marked runnable (a ```` ```sh runnable ````
/// fence) run against a real redis-server and exit 0: respbench (the one just built, first on
/// PATH) and redis-cli are pointed at the test's server by a wrapper; the commands run in a
/// temporary directory in which `examples/` is the repository's.
#[test]
fn every_runnable_block_runs() {
    let server = respbench_tests::RedisServer::start();
    let port = server.port();
    let work = std::env::temp_dir().join(format!("respbench-runnable-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let _ = std::os::unix::fs::symlink(root().join("examples"), work.join("examples"));
    let bin_dir = respbench().path.parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let prelude = format!(
        "set -euo pipefail\n\
         respbench() {{\n\
           case \"${{1:-}}\" in\n\
             merge|plot|compare|man|completions) command respbench \"$@\" ;;\n\
             run) command respbench run \"$2\" -p {port} \"${{@:3}}\" ;;\n\
             capture|memtier) command respbench \"$1\" -p {port} \"${{@:2}}\" ;;\n\
             *) command respbench -p {port} \"$@\" ;;\n\
           esac\n\
         }}\n\
         redis-cli() {{ command redis-cli -p {port} \"$@\"; }}\n"
    );
    let mut ran = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(root()).unwrap().display().to_string();
        let mut block: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            match &mut block {
                None if line.trim() == "```sh runnable" => block = Some((i + 1, String::new())),
                Some((start, body)) if line.trim() == "```" => {
                    let script = format!("{prelude}{body}");
                    let out = Command::new("bash")
                        .args(["-c", &script])
                        .current_dir(&work)
                        .env("PATH", &path)
                        .stdin(std::process::Stdio::null())
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{name}:{start}: {}\n{body}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    ran += 1;
                    block = None;
                }
                Some((_, body)) => {
                    body.push_str(line);
                    body.push('\n');
                }
                None => {}
            }
        }
        assert!(block.is_none(), "{name}: a runnable block is not closed");
    }
    assert!(ran >= 12, "only {ran} runnable blocks");
    let _ = std::fs::remove_dir_all(&work);
}
