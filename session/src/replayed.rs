//! What a replay is asked (`--replay`'s and `respbench capture`'s options, checked) and what it
//! reports (its [`Figures`]): plain data that the configuration and the results hold, below the
//! replay itself (crate::replay), which reads the capture and runs it.

use std::path::PathBuf;

use crate::config::OptionError;

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

/// Checks `--replay`, `--speed`, `--replay-loop`, `--strict` and `--replay-admin` into
/// [`Settings`]; `None` without `--replay`.
pub fn settings(
    file: Option<&str>,
    speed: Option<&str>,
    passes: Option<u64>,
    strict: bool,
    admin: bool,
) -> Result<Option<Settings>, OptionError> {
    let Some(file) = file else {
        if speed.is_some() || passes.is_some() || strict || admin {
            return Err(OptionError::Refused(
                "--speed, --replay-loop, --strict and --replay-admin are --replay's: give --replay FILE"
                    .into(),
            ));
        }
        return Ok(None);
    };
    let speed = match speed {
        None => 1.0,
        Some(s) => match s.parse::<f64>() {
            Ok(v) if v.is_finite() && (0.001..=1000.0).contains(&v) => v,
            _ => {
                return Err(crate::syntax::bad(
                    "--speed",
                    s,
                    "expected a factor from 0.001 to 1000 (2 replays twice as fast)",
                ))
            }
        },
    };
    let passes = passes.unwrap_or(1);
    if passes == 0 || passes > 1_000_000 {
        return Err(crate::syntax::bad(
            "--replay-loop",
            passes,
            "expected how many times to play the capture, 1 to 1000000",
        ));
    }
    Ok(Some(Settings { file: file.into(), speed, passes, strict, admin }))
}

/// Checks `capture`'s `-o` and `--max-commands`: `None` when not `capturing`, where they are
/// refused.
pub fn capture_settings(
    capturing: bool,
    output: Option<&str>,
    max_commands: Option<u64>,
) -> Result<Option<CaptureSettings>, OptionError> {
    if !capturing {
        if output.is_some() || max_commands.is_some() {
            return Err(OptionError::Refused(
                "-o and --max-commands are respbench capture's: respbench capture -o FILE ...".into(),
            ));
        }
        return Ok(None);
    }
    let output = output
        .ok_or_else(|| OptionError::Refused("respbench capture writes its file where -o FILE says".into()))?;
    if max_commands == Some(0) {
        return Err(crate::syntax::bad(
            "--max-commands",
            0,
            "expected how many commands to capture, at least 1",
        ));
    }
    Ok(Some(CaptureSettings { output: output.into(), max_commands }))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        assert_eq!(settings(None, None, None, false, false), Ok(None));
        assert!(settings(None, Some("2"), None, false, false).is_err());
        let s = settings(Some("f"), Some("2"), Some(3), true, false).unwrap().unwrap();
        assert_eq!((s.speed, s.passes, s.strict), (2.0, 3, true));
        for bad in ["0", "-1", "nan", "inf", "x", "2000"] {
            assert!(settings(Some("f"), Some(bad), None, false, false).is_err(), "{bad}");
        }
        assert!(settings(Some("f"), None, Some(0), false, false).is_err());
        assert!(capture_settings(true, None, None).is_err());
        assert!(capture_settings(true, Some("o"), Some(0)).is_err());
        assert!(capture_settings(false, Some("o"), None).is_err());
        assert_eq!(capture_settings(false, None, None), Ok(None));
    }
}
