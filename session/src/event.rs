//! Events during a test (`--at`): what to do and when ([`Event`], [`Action`]), where a command
//! goes ([`AtNode`]), the checks made before connecting ([`check`]) and what each did
//! ([`Fired`]). The thread that fires them is [`crate::fire`]; what they cost, the core's
//! [`respbench_core::disruption`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use respbench_core::Endpoint;

/// The earliest an event may come: the baseline is the second before it at least.
pub const EARLIEST: Duration = Duration::from_secs(1);

/// One `--at 'TIME CMD [ARG…]'`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When, after the measured window starts.
    pub at: Duration,
    /// What.
    pub action: Action,
    /// As given, after TIME (`CLIENT PAUSE 500 WRITE`, `exec kill -STOP 42`).
    pub text: String,
}

/// What an event does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A command, sent on a control connection of its own to each node of [`AtNode`].
    Command(Vec<String>),
    /// `exec PROGRAM [ARG…]`: a local program, run without a shell.
    Exec {
        /// The program (looked up in `PATH` when it has no `/`).
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
}

/// `--at-node`: where an event's command goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AtNode {
    /// The primaries (a standalone server is its own primary): the default.
    #[default]
    Primaries,
    /// The replicas.
    Replicas,
    /// Every node.
    All,
    /// One node, which must be one of the run's.
    Node(Endpoint),
}

/// The run's events and where their commands go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// In order of their time.
    pub list: Vec<Event>,
    /// `--at-node`.
    pub node: AtNode,
}

impl Events {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// When each is due, from the measured window's start.
    pub fn planned(&self) -> Vec<Duration> {
        self.list.iter().map(|e| e.at).collect()
    }
}

/// What one node said to an event's command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeReply {
    /// The node.
    pub node: String,
    /// The reply as text (an error reply starts with `-`), or why none came (connection refused,
    /// AUTH failed, …).
    pub reply: String,
    /// Whether it was an error (an error reply, or no reply).
    pub error: bool,
    /// From the send to the reply (or the failure).
    pub took: Duration,
}

/// What an event did, as the session saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A command's replies, one per node.
    Replies(Vec<NodeReply>),
    /// A program's exit: its status (`None`: killed by a signal, named in `stderr`), the first
    /// line of its standard error, and how long it ran.
    Exited {
        /// The exit code.
        status: Option<i32>,
        /// The first line of its standard error (empty if none).
        stderr: String,
        /// How long it ran.
        took: Duration,
    },
    /// A program that could not be started, and why.
    NotStarted(String),
    /// The test ended before the event was due.
    NotSent,
}

/// One event as it went: the event, when it was sent (after the measured window's start) and
/// what came of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    /// Which `--at`, from 0.
    pub index: usize,
    /// When it was sent, from the measured window's start.
    pub sent: Option<Duration>,
    /// What came of it.
    pub outcome: Outcome,
}

impl Outcome {
    /// Whether it failed: an error reply, no reply, a program that failed or never started.
    pub fn failed(&self) -> bool {
        match self {
            Outcome::Replies(r) => r.iter().any(|r| r.error),
            Outcome::Exited { status, .. } => *status != Some(0),
            Outcome::NotStarted(_) => true,
            Outcome::NotSent => false,
        }
    }

    /// In a few words: `OK (0.21 ms)`, `exit 0 (3.1 ms)`, `(error) ERR … (0.1 ms)`, each node's.
    pub fn describe(&self) -> String {
        let ms = |d: &Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
        match self {
            Outcome::Replies(r) if r.len() == 1 => format!("{} ({})", r[0].reply, ms(&r[0].took)),
            Outcome::Replies(r) => r
                .iter()
                .map(|r| format!("{}: {} ({})", r.node, r.reply, ms(&r.took)))
                .collect::<Vec<_>>()
                .join("; "),
            Outcome::Exited { status, stderr, took } => {
                let code = status.map_or("killed by a signal".to_string(), |c| format!("exit {c}"));
                if stderr.is_empty() {
                    format!("{code} ({})", ms(took))
                } else {
                    format!("{code} ({}): {stderr}", ms(took))
                }
            }
            Outcome::NotStarted(why) => format!("not started: {why}"),
            Outcome::NotSent => "not sent: the test ended first".into(),
        }
    }
}

/// Why the events cannot run as given; each names the event as `--at` gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventError {
    /// The test has no fixed length (a `-n` test): the event's text.
    NoDuration(String),
    /// The event comes before [`EARLIEST`].
    TooEarly(String),
    /// The event comes at or after the test's end.
    Beyond {
        /// The event.
        event: String,
        /// When it comes.
        at: Duration,
        /// The test's `--duration`.
        duration: Duration,
    },
    /// The program an event runs is not an executable file (`in_path`: looked for in `PATH`).
    NoProgram {
        /// The event.
        event: String,
        /// The program named.
        program: String,
        /// Whether it was looked for in `PATH` (a name without `/`).
        in_path: bool,
    },
}

impl std::fmt::Display for EventError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use respbench_core::conn::format_duration;
        match self {
            EventError::NoDuration(e) => write!(
                f,
                "--at '{e}': events need a test of fixed length: give --duration (a -n test has no fixed window)"
            ),
            EventError::TooEarly(e) => write!(
                f,
                "--at '{e}': an event must come 1 s into the test at least (its baseline is the time before it)"
            ),
            EventError::Beyond { event, at, duration } => write!(
                f,
                "--at '{event}': {} is not within --duration {}",
                format_duration(*at),
                format_duration(*duration)
            ),
            EventError::NoProgram { event, program, in_path } => write!(
                f,
                "--at '{event}': no program '{program}' (not an executable file{})",
                if *in_path { " in PATH" } else { "" }
            ),
        }
    }
}

impl std::error::Error for EventError {}

/// Checks the events against the run before connecting: each within `--duration` (and not
/// before [`EARLIEST`]), a test of fixed length, and each program found.
pub fn check(events: &Events, duration: Option<Duration>) -> Result<(), EventError> {
    let Some(first) = events.list.first() else { return Ok(()) };
    let Some(d) = duration else { return Err(EventError::NoDuration(show(first))) };
    for e in &events.list {
        if e.at < EARLIEST {
            return Err(EventError::TooEarly(show(e)));
        }
        if e.at >= d {
            return Err(EventError::Beyond { event: show(e), at: e.at, duration: d });
        }
        if let Action::Exec { program, .. } = &e.action {
            if find_program(program, std::env::var_os("PATH").as_deref()).is_none() {
                let in_path = !program.contains('/');
                return Err(EventError::NoProgram { event: show(e), program: program.clone(), in_path });
            }
        }
    }
    Ok(())
}

fn show(e: &Event) -> String {
    format!("{} {}", respbench_core::conn::format_duration(e.at), e.text)
}

/// The executable file `program` names: itself when it has a `/`, else the first in `path`.
pub fn find_program(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(path?).map(|dir| dir.join(program)).find(|p| runnable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(at: u64, action: Action) -> Event {
        Event { at: Duration::from_millis(at), action, text: "x".into() }
    }

    #[test]
    fn events_are_checked_against_the_test() {
        let cmd = || Action::Command(vec!["PING".into()]);
        let one = |e| Events { list: vec![e], node: AtNode::Primaries };
        let ten = Some(Duration::from_secs(10));
        assert!(check(&one(ev(5000, cmd())), ten).is_ok());
        let e = check(&one(ev(5000, cmd())), None).unwrap_err().to_string();
        assert!(e.contains("give --duration"), "{e}");
        let e = check(&one(ev(10_000, cmd())), ten).unwrap_err().to_string();
        assert!(e.contains("is not within --duration 10s"), "{e}");
        let e = check(&one(ev(500, cmd())), ten).unwrap_err().to_string();
        assert!(e.contains("1 s into the test"), "{e}");
        let exec = |p: &str| Action::Exec { program: p.into(), args: vec![] };
        assert!(check(&one(ev(2000, exec("sh"))), ten).is_ok());
        let e = check(&one(ev(2000, exec("no-such-program-here"))), ten).unwrap_err().to_string();
        assert!(e.contains("no program 'no-such-program-here' (not an executable file in PATH)"), "{e}");
        // A file that is not executable.
        let plain = std::env::temp_dir().join(format!("respbench-not-a-program-{}", std::process::id()));
        std::fs::write(&plain, "x").unwrap();
        let path = plain.to_string_lossy().into_owned();
        let e = check(&one(ev(2000, exec(&path))), ten).unwrap_err().to_string();
        let _ = std::fs::remove_file(&plain);
        assert!(e.contains(&format!("no program '{path}' (not an executable file)")), "{e}");
    }
}
