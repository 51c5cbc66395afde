//! What a replay is asked (`--replay`'s and `respbench capture`'s options, checked in
//! [`crate::syntax`]) and what it reports (its [`Figures`]): plain data that the configuration and the results hold, below the
//! replay itself (crate::replay), which reads the capture and runs it.

use std::path::PathBuf;

/// `--replay FILE` and its options, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The capture: `redis-cli monitor`'s output or respbench's capture file.
    pub file: PathBuf,
    /// `--speed`: 2 replays twice as fast.
    pub speed: f64,
    /// `--replay-loop`: how many times the capture is played.
    pub passes: u64,
    /// `--strict`: the first malformed line is an error.
    pub strict: bool,
    /// `--replay-admin`: the commands that change the server's configuration, users or whole
    /// keyspace (`respbench_core::replay::ADMIN`) are sent, not skipped.
    pub admin: bool,
}

/// `respbench capture`'s options, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureSettings {
    /// `-o`: the capture file.
    pub output: PathBuf,
    /// `--max-commands`: stop after this many.
    pub max_commands: Option<u64>,
}

/// A replay's figures in its test's result; the `--json` document's `replay` carries them as
/// they are (with the feature `serde`), beside their `on_time_share`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(default))]
pub struct Figures {
    /// The capture.
    pub file: String,
    /// `monitor` or `capture`.
    pub format: String,
    /// `--speed`.
    pub speed: f64,
    /// `--replay-loop`.
    pub passes: u64,
    /// The connections: the original clients this process played.
    pub clients: u64,
    /// The capture's span, first command to last, in seconds, as played at `--speed 1`
    /// (`crate::replay::Timeline`).
    pub recorded_s: f64,
    /// The commands sent (with their lateness recorded).
    pub sent: u64,
    /// Of those, how many were sent within [`1 ms (`crate::verdict::LATENESS_KEPT_MICROS`)`] of their
    /// recorded instant.
    pub sent_on_time: u64,
    /// SELECTs sent before a command recorded in another db than its connection was in.
    pub selects_added: u64,
    /// The commands not replayed, by name.
    pub skipped: Vec<Skipped>,
    /// The malformed lines (or records), and the first of them by number.
    pub malformed: u64,
    /// See `malformed`: (its number from 1, what is wrong with it), in the document
    /// `{"line", "reason"}` each.
    #[cfg_attr(feature = "serde", serde(with = "numbered"))]
    pub malformed_lines: Vec<(u64, String)>,
}

/// `malformed_lines` in the document: `{"line": N, "reason": "…"}` each.
#[cfg(feature = "serde")]
mod numbered {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Default, Serialize, Deserialize)]
    #[serde(default)]
    struct Line {
        line: u64,
        reason: String,
    }

    pub fn serialize<S: Serializer>(lines: &[(u64, String)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(lines.iter().map(|(line, reason)| Line { line: *line, reason: reason.clone() }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(u64, String)>, D::Error> {
        Ok(Vec::<Line>::deserialize(d)?.into_iter().map(|l| (l.line, l.reason)).collect())
    }
}

impl Figures {
    /// The share of the commands sent that went on time.
    pub fn on_time_share(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.sent_on_time as f64 / self.sent as f64
        }
    }
}

/// Commands of one name that were not replayed.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(default))]
pub struct Skipped {
    /// The command.
    pub command: String,
    /// Why not.
    pub reason: String,
    /// How many.
    pub count: u64,
}
