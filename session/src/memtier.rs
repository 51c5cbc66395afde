//! memtier_benchmark's command line: when respbench runs as `memtier_benchmark` (a link of that
//! name) or as `respbench memtier ARGS…`, memtier's options are read with memtier's meanings
//! ([`translate`]) into respbench's own options, which the usual path checks and runs, and the
//! settings of memtier's outputs ([`Memtier`]), which the report renders in memtier's shapes.
//!
//! memtier's `-c` is clients per thread and `-n` requests per client: respbench's `-c` is every
//! connection (`-c` × `-t`) and its `-n` every request (`-n` × `-c` × `-t`), exact. `--ratio`
//! and `--command` become a mix of custom commands (`--mix-command`), each with its own keys
//! (`--key-pattern`, `--command-key-pattern`) over `--key-minimum`..`--key-maximum`. An option
//! respbench cannot honour is an error naming it ([`MemtierError::Refused`]).

pub(crate) mod import;
mod statsd;

use std::fmt;

use crate::words;

/// What memtier's outputs need to know of its command line: the run's shape as memtier
/// counts it, the rows, and where the table and the JSON go.
#[derive(Clone, Debug, PartialEq)]
pub struct Memtier {
    /// `-t`: threads.
    pub threads: u64,
    /// `-c`: connections per thread.
    pub clients: u64,
    /// `-n`: requests per client (`None` with `--test-time`).
    pub requests: Option<u64>,
    /// `--test-time`: seconds.
    pub test_time: Option<u64>,
    /// `-x`/`--run-count`.
    pub run_count: u32,
    /// `--print-percentiles` (default 50, 99, 99.9).
    pub percentiles: Vec<f64>,
    /// `--hide-histogram`.
    pub hide_histogram: bool,
    /// `-o`/`--out-file`: the table goes there instead of stdout.
    pub out_file: Option<String>,
    /// `--json-out-file`.
    pub json_out_file: Option<String>,
    /// The row of each command of the mix, in the mix's order: `Sets`, `Gets` with `--ratio`,
    /// else each `--command`'s name as memtier shows it (`Hsets`); commands of one name share
    /// a row.
    pub rows: Vec<String>,
    /// Whether the rows are `--ratio`'s (`Sets`, `Gets`, `Waits`, with hits and misses), not
    /// `--command`'s.
    pub ratio_rows: bool,
    /// `--cluster-mode` (the `MOVED/sec` and `ASK/sec` fields).
    pub cluster: bool,
    /// memtier's `configuration` object: each option as memtier names it, with its value.
    pub configuration: Vec<(&'static str, ConfigValue)>,
    /// `--show-config`: the configuration printed before the results, as memtier's
    /// `name = value` lines.
    pub show_config: bool,
    /// `--hdr-file-prefix`: each run's latency files, `PREFIX_FULL_RUN_1.txt` and `.hgrm`, and
    /// the same per command (`PREFIX_GET_command_run_1.txt`).
    pub hdr_file_prefix: Option<String>,
    /// `--command-stats-breakdown=line`: a row per `--command` line, where memtier's default
    /// (`command`) gives commands of one name one row.
    pub by_line: bool,
    /// `--multi-key-get N`: `--ratio`'s GETs go as MGETs of up to N keys.
    pub multi_key_get: bool,
    /// The run is one custom command, not a mix (`--data-import`'s SETs): each run gives one
    /// result, which is its total too.
    pub one_command: bool,
    /// `--data-verify`/`--verify-only`: the import file's items read back after the run (or
    /// instead of it).
    pub verify: Option<Verify>,
}

impl Memtier {
    /// How many results each run gives: a result per row and the mix's total, or the one
    /// command's.
    pub fn results_per_run(&self) -> usize {
        if self.one_command {
            1
        } else {
            self.rows.len() + 1
        }
    }
}

/// What `--data-verify` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verify {
    /// The `--data-import` file whose items are read back.
    pub file: String,
    /// `--verify-only`: no test, only the check.
    pub only: bool,
}

/// A value of memtier's `configuration` object.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigValue {
    /// A number.
    Number(u64),
    /// A string (memtier writes its flags as `"true"`/`"false"`).
    Text(String),
    /// A number with decimals (memtier's `%f`: six of them).
    Float(f64),
    /// An option not given that memtier writes as `null` (a file or a name).
    Null,
}

/// A memtier command line that respbench cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemtierError {
    /// An option memtier has that respbench does not honour, and why.
    Refused {
        /// The option as given (`--monitor-input`).
        option: String,
        /// Why, or what to use instead.
        why: String,
    },
    /// An option's value memtier would take that is wrong here.
    BadValue {
        /// The option.
        option: String,
        /// The value given.
        value: String,
        /// What is expected.
        why: String,
    },
    /// Not an option of memtier_benchmark.
    Unknown(String),
    /// An argument that is no option (memtier's getopt leaves it, and memtier ignores it).
    Stray(String),
}

impl fmt::Display for MemtierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemtierError::Refused { option, why } => {
                write!(f, "memtier_benchmark's {option} is not supported by respbench: {why}")
            }
            MemtierError::BadValue { option, value, why } => write!(f, "{option} '{value}': {why}"),
            MemtierError::Unknown(option) => write!(f, "unknown memtier_benchmark option: {option}"),
            MemtierError::Stray(arg) => write!(
                f,
                "'{arg}' is not an option: memtier_benchmark ignores it, respbench refuses it (a quote \
                 may have ended an option's value early: a --command's quotes inside its own quotes)"
            ),
        }
    }
}

impl std::error::Error for MemtierError {}

/// The result of [`translate`]: respbench's options and memtier's outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Translated {
    /// respbench's options, without the program's name.
    pub args: Vec<String>,
    /// memtier's outputs.
    pub memtier: Memtier,
}

/// Whether respbench runs as memtier_benchmark: called by that name (argv0's file name), or as
/// `respbench memtier ARGS…`. Gives memtier's arguments (after the name or `memtier`).
pub fn dialect(args: &[String]) -> Option<&[String]> {
    let name = args.first()?;
    let file = std::path::Path::new(name).file_name().map(|f| f.to_string_lossy());
    if file.is_some_and(|f| f.starts_with("memtier_benchmark")) {
        return Some(&args[1..]);
    }
    (args.get(1).map(String::as_str) == Some("memtier")).then(|| &args[2..])
}

/// The options that take a value, by long name, with their short letter.
const VALUED: &[(&str, Option<char>)] = &[
    ("server", Some('s')),
    ("host", Some('h')),
    ("port", Some('p')),
    ("unix-socket", Some('S')),
    ("protocol", Some('P')),
    ("cert", None),
    ("key", None),
    ("cacert", None),
    ("sni", None),
    ("tls-protocols", None),
    ("out-file", Some('o')),
    ("hdr-file-prefix", None),
    ("client-stats", None),
    ("run-count", Some('x')),
    ("print-percentiles", None),
    ("requests", Some('n')),
    ("clients", Some('c')),
    ("threads", Some('t')),
    ("test-time", None),
    ("ratio", None),
    ("pipeline", None),
    ("data-size", Some('d')),
    ("data-offset", None),
    ("data-size-range", None),
    ("data-size-list", None),
    ("data-size-pattern", None),
    ("expiry-range", None),
    ("data-import", None),
    ("key-prefix", None),
    ("key-minimum", None),
    ("key-maximum", None),
    ("key-pattern", None),
    ("key-stddev", None),
    ("key-median", None),
    ("key-zipf-exp", None),
    ("reconnect-interval", None),
    ("max-reconnect-attempts", None),
    ("reconnect-backoff-factor", None),
    ("connection-timeout", None),
    ("thread-conn-start-min-jitter-micros", None),
    ("thread-conn-start-max-jitter-micros", None),
    ("multi-key-get", None),
    ("authenticate", Some('a')),
    ("select-db", None),
    ("wait-ratio", None),
    ("num-slaves", None),
    ("wait-timeout", None),
    ("json-out-file", None),
    ("command", None),
    ("command-key-pattern", None),
    ("command-ratio", None),
    ("monitor-input", None),
    ("monitor-pattern", None),
    ("command-stats-breakdown", None),
    ("rate-limiting", None),
    ("uri", Some('u')),
    ("statsd-host", None),
    ("statsd-port", None),
    ("statsd-prefix", None),
    ("statsd-run-label", None),
    ("graphite-port", None),
    ("scan-incremental-max-iterations", None),
    ("clients-start", None),
    ("clients-step", None),
    ("step-duration", None),
];

/// The switches, by long name, with their short letter.
const SWITCHES: &[(&str, Option<char>)] = &[
    ("ipv4", Some('4')),
    ("ipv6", Some('6')),
    ("tls", None),
    ("tls-skip-verify", None),
    ("debug", Some('D')),
    ("show-config", None),
    ("hide-histogram", None),
    ("print-all-runs", None),
    ("distinct-client-seed", None),
    ("randomize", None),
    ("random-data", Some('R')),
    ("data-verify", None),
    ("verify-only", None),
    ("generate-keys", None),
    ("reconnect-on-error", None),
    ("no-expiry", None),
    ("cluster-mode", None),
    ("help", None),
    ("version", Some('v')),
    ("scan-incremental-iteration", None),
];

/// Whether `option` (`--server`, `--test-time`) is one of memtier_benchmark's long options.
pub fn is_option(option: &str) -> bool {
    option.strip_prefix("--").is_some_and(|n| VALUED.iter().chain(SWITCHES).any(|(l, _)| *l == n))
}

/// memtier's options as getopt_long reads them: `--name value`, `--name=value`, `-c 5`,
/// `-c5`, switches `--tls`, `-R`. Each is `(long name, value)`; the name is memtier's long
/// one whichever spelling was given.
fn options(args: &[String]) -> Result<Vec<(&'static str, Option<String>)>, MemtierError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        let (name, attached): (&'static str, Option<String>) = if let Some(long) = a.strip_prefix("--") {
            let (n, v) = long.split_once('=').map_or((long, None), |(n, v)| (n, Some(v.to_string())));
            let found = VALUED.iter().chain(SWITCHES).find(|(l, _)| *l == n);
            match found {
                Some((l, _)) => (l, v),
                None => return Err(MemtierError::Unknown(format!("--{n}"))),
            }
        } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            let c = short.chars().next().unwrap_or('-');
            let rest = &short[c.len_utf8()..];
            let found = VALUED.iter().chain(SWITCHES).find(|(_, s)| *s == Some(c));
            match found {
                Some((l, _)) => (l, (!rest.is_empty()).then(|| rest.to_string())),
                None => return Err(MemtierError::Unknown(format!("-{c}"))),
            }
        } else {
            return Err(MemtierError::Stray(a.to_string()));
        };
        let valued = VALUED.iter().any(|(l, _)| *l == name);
        let value = match (valued, attached) {
            (true, Some(v)) => Some(v),
            (true, None) => match args.get(i) {
                Some(v) => {
                    i += 1;
                    Some(v.clone())
                }
                None => {
                    return Err(MemtierError::BadValue {
                        option: format!("--{name}"),
                        value: String::new(),
                        why: "a value is missing".into(),
                    })
                }
            },
            (false, Some(v)) if a.starts_with("--") => {
                return Err(MemtierError::BadValue {
                    option: format!("--{name}"),
                    value: v,
                    why: "this switch takes no value".into(),
                })
            }
            (false, Some(rest)) => {
                // Bundled short switches (`-RD`) are not taken apart: name the rest.
                return Err(MemtierError::Unknown(format!("-{rest}")));
            }
            (false, None) => None,
        };
        out.push((name, value));
    }
    Ok(out)
}

/// A number from `option`'s value.
fn number(option: &str, value: &str) -> Result<u64, MemtierError> {
    value.trim().parse::<u64>().map_err(|_| MemtierError::BadValue {
        option: format!("--{option}"),
        value: value.to_string(),
        why: "expected a whole number".into(),
    })
}

/// A number that must be positive.
fn positive(option: &str, value: &str) -> Result<u64, MemtierError> {
    match number(option, value)? {
        0 => Err(MemtierError::BadValue {
            option: format!("--{option}"),
            value: value.to_string(),
            why: "must be at least 1".into(),
        }),
        n => Ok(n),
    }
}

/// A number above 0, with decimals (memtier's `strtod`).
fn above_zero(option: &str, value: &str) -> Result<f64, MemtierError> {
    value.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0).ok_or_else(|| {
        MemtierError::BadValue {
            option: format!("--{option}"),
            value: value.to_string(),
            why: "expected a number above 0".into(),
        }
    })
}

/// `--key-median` and `--key-stddev` as the mean (a key number, as memtier's median) and
/// deviation of respbench's gaussian keys: memtier's defaults (the range's middle and a sixth of
/// it) for the one not given, memtier's checks (a `G` in `--key-pattern`, the median within the
/// range). Neither given: memtier's defaults, the deviation at least half a key (respbench's
/// least, for a range under 3 keys wide).
fn normal_keys(
    pattern: &str,
    median: Option<f64>,
    stddev: Option<f64>,
    key_min: u64,
    key_max: u64,
) -> Result<(f64, f64), MemtierError> {
    let width = (key_max - key_min) as f64;
    let (middle, sixth) = (width / 2.0 + key_min as f64 + 0.5, width / 6.0);
    if median.is_none() && stddev.is_none() {
        return Ok((middle, sixth.max(0.5)));
    }
    let option = if median.is_some() { "--key-median" } else { "--key-stddev" };
    if !pattern.contains('G') {
        return Err(MemtierError::BadValue {
            option: option.into(),
            value: pattern.to_string(),
            why: "key-stddev and key-median are only allowed together with key-pattern set to G".into(),
        });
    }
    let mean = match median {
        Some(m) if m < key_min as f64 || m > key_max as f64 => {
            return Err(MemtierError::BadValue {
                option: "--key-median".into(),
                value: m.to_string(),
                why: format!("must be between key-minimum {key_min} and key-maximum {key_max}"),
            })
        }
        Some(m) => m,
        None => middle,
    };
    let sd = stddev.unwrap_or(sixth);
    if sd < 0.5 {
        return Err(MemtierError::BadValue {
            option: "--key-stddev".into(),
            value: sd.to_string(),
            why: "respbench's gaussian keys need a deviation of at least 0.5 keys".into(),
        });
    }
    Ok((mean, sd))
}

/// `--reconnect-on-error` with its pacing as respbench's `--reconnect` options: memtier waits
/// 1 s before each attempt, or, with `--reconnect-backoff-factor F`, F s before the first and F
/// times the wait before for each next one (without a cap: respbench's is an hour); it gives up
/// after `--max-reconnect-attempts N` attempts in a row (0, its default: never).
fn reconnect_pacing(factor: Option<f64>, attempts: u64) -> Result<Vec<String>, MemtierError> {
    let (first, factor) = match factor {
        Some(f) if !(0.001..=3600.0).contains(&f) => {
            return Err(MemtierError::BadValue {
                option: "--reconnect-backoff-factor".into(),
                value: f.to_string(),
                why: "respbench's first wait (F seconds) is from 1 ms to 1 hour".into(),
            })
        }
        Some(f) => (f, f),
        None => (1.0, 1.0),
    };
    let mut out = vec!["--reconnect".to_string()];
    push(&mut out, "--reconnect-backoff", &format!("{first}s,3600s"));
    push(&mut out, "--reconnect-factor", &factor.to_string());
    if attempts > 0 {
        let n = u32::try_from(attempts).map_err(|_| MemtierError::BadValue {
            option: "--max-reconnect-attempts".into(),
            value: attempts.to_string(),
            why: "too many".into(),
        })?;
        push(&mut out, "--reconnect-attempts", &n.to_string());
    }
    Ok(out)
}

/// The largest `--monitor-input` file read.
const MONITOR_MAX_BYTES: u64 = 16 << 20;

/// The most lines `__monitor_line@__` draws from: each is a command of respbench's mix, with
/// figures of its own for each client (a mix takes at most 64 commands: 1,000 of them over 200
/// clients held 1.0 GB, 64 held 86 MB).
const MONITOR_MAX_DRAWN: usize = 64;

/// `--monitor-input FILE`: each `--command "__monitor_lineN__"` becomes the command of the
/// file's Nth line that has one (memtier's: from the line's first `"` to its end, split as a
/// `--command`). The file is read whole, up to 16 MiB.
///
/// `--command "__monitor_line@__"` (at most one) takes a line for each request, as memtier's
/// `--monitor-pattern`: each line becomes a command of the mix with the placeholder's
/// `--command-ratio`. `sequential` (`S`, memtier's default): the lines in turn, wrapping
/// (respbench's `--mix-in-turn`: `Some(true)` is returned); it must be the only `--command`.
/// `R` (`Some(false)`): a line drawn uniformly, the other commands' weights times the number
/// of lines, so the placeholder keeps its share. `None`: no `__monitor_line@__`.
fn monitor_lines(
    commands: &mut Vec<Command>,
    file: &str,
    sequential: bool,
) -> Result<Option<bool>, MemtierError> {
    let bad =
        |why: String| MemtierError::BadValue { option: "--monitor-input".into(), value: file.into(), why };
    let text = read_file("--monitor-input", file, MONITOR_MAX_BYTES)?;
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter_map(|l| l.iter().position(|&b| b == b'"').map(|q| &l[q..]))
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    let words = |line: &[u8]| -> Result<Vec<Vec<u8>>, MemtierError> {
        command_words(std::str::from_utf8(line).map_err(|_| bad("a MONITOR line is not UTF-8 text".into()))?)
    };
    let drawn = |c: &Command| c.words.len() == 1 && c.words[0] == b"__monitor_line@__";
    for c in commands
        .iter_mut()
        .filter(|c| !drawn(c) && c.words.len() == 1 && c.words[0].starts_with(b"__monitor_line"))
    {
        let placeholder = String::from_utf8_lossy(&c.words[0]).into_owned();
        let index = placeholder.strip_prefix("__monitor_line").and_then(|r| r.strip_suffix("__"));
        let line =
            index.and_then(|n| n.parse::<usize>().ok()).filter(|n| *n >= 1).and_then(|n| lines.get(n - 1));
        let Some(line) = line else {
            return Err(MemtierError::BadValue {
                option: "--command".into(),
                value: placeholder,
                why: format!(
                    "invalid monitor placeholder (valid range: __monitor_line1__ to __monitor_line{}__ or __monitor_line@__)",
                    lines.len()
                ),
            });
        };
        c.words = words(line)?;
    }
    let Some(at) = commands.iter().position(drawn) else { return Ok(None) };
    let refuse =
        |why: &str| MemtierError::Refused { option: "--command=__monitor_line@__".into(), why: why.into() };
    if commands.iter().filter(|c| drawn(c)).count() > 1 {
        return Err(refuse("give it once"));
    }
    if lines.is_empty() {
        return Err(bad("no commands found in the monitor input file".into()));
    }
    if sequential && commands.len() > 1 {
        return Err(refuse(
            "with --monitor-pattern S it must be the only --command (respbench sends the file's lines in turn); --monitor-pattern R mixes it with others",
        ));
    }
    let placeholder = commands.remove(at);
    let scale = u64::try_from(lines.len()).unwrap_or(u64::MAX);
    for c in commands.iter_mut() {
        c.ratio = c.ratio.checked_mul(scale).filter(|r| *r <= 1_000_000).ok_or_else(|| {
            refuse("with the other --commands' ratios, more than 1000000 requests in one round")
        })?;
    }
    let mut expanded: Vec<Command> = Vec::with_capacity(lines.len());
    for line in &lines {
        let w = words(line)?;
        // Drawn at random, a line given twice is one command of twice the weight.
        match expanded.iter_mut().find(|c| !sequential && c.words == w) {
            Some(c) => c.ratio = c.ratio.saturating_add(placeholder.ratio),
            None => expanded.push(Command {
                words: w,
                ratio: placeholder.ratio,
                pattern: placeholder.pattern.clone(),
            }),
        }
        if expanded.len() > MONITOR_MAX_DRAWN {
            return Err(bad(format!(
                "more than {MONITOR_MAX_DRAWN} {}lines: respbench's mix takes at most 64 commands (respbench --replay FILE plays a capture of any length)",
                if sequential { "" } else { "different " }
            )));
        }
    }
    commands.splice(at..at, expanded);
    Ok(Some(sequential))
}

/// The whole of `file`, the value of `option`, refused when it cannot be read or is larger than
/// `max` bytes (no more than that is read).
fn read_file(option: &str, file: &str, max: u64) -> Result<Vec<u8>, MemtierError> {
    use std::io::Read;
    let bad = |why: String| MemtierError::BadValue { option: option.into(), value: file.into(), why };
    let mut text = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(max + 1).read_to_end(&mut text))
        .map_err(|e| bad(format!("cannot read it: {e}")))?;
    if text.len() as u64 > max {
        return Err(bad(format!("larger than {max} bytes")));
    }
    Ok(text)
}

/// `--scan-incremental-iteration`'s command, with memtier's checks: exactly one `--command`, a
/// `SCAN` with a cursor, `--pipeline 1`, no `--cluster-mode`; its words as they are (no
/// `__key__` or `__data__`: respbench's followed command is its own custom command).
fn scan_command(commands: &[Command], pipeline: u64, cluster: bool) -> Result<Vec<String>, MemtierError> {
    let refuse =
        |why: &str| MemtierError::Refused { option: "--scan-incremental-iteration".into(), why: why.into() };
    let [c] = commands else {
        return Err(refuse("it requires exactly one --command (a SCAN command)"));
    };
    if !c.words[0].eq_ignore_ascii_case(b"SCAN") || c.words.len() < 2 {
        return Err(refuse("it requires the command to be a SCAN command with a cursor (e.g. 'SCAN 0')"));
    }
    if pipeline != 1 {
        return Err(refuse("it requires --pipeline 1"));
    }
    if cluster {
        return Err(refuse("it is not supported in cluster mode"));
    }
    if c.words.iter().any(|w| holds(w, b"__key__") || holds(w, b"__data__")) {
        return Err(refuse("its SCAN cannot hold __key__ or __data__ here"));
    }
    let text =
        |w: &Vec<u8>| String::from_utf8(w.clone()).map_err(|_| refuse("its SCAN's arguments must be text"));
    c.words.iter().map(text).collect()
}

/// `--wait-ratio`'s SETS and WAITS, and the WAIT command's words.
type Wait = ((u64, u64), String);

/// `--wait-ratio SETS:WAITS` (`wait[0]`) with `--num-slaves` and `--wait-timeout` (`wait[1]`,
/// `wait[2]`: memtier's `MIN-MAX` ranges, default `0-0`, here one value, `N` or `N-N`): the
/// ratio and the command, `WAIT NUMREPLICAS TIMEOUT`; `None` without a WAIT. memtier sends
/// WAITs only with `--ratio`'s SETs, and not in cluster mode.
fn wait_command(
    wait: &[Option<String>; 3],
    ratio_rows: bool,
    sets: u64,
    cluster: bool,
) -> Result<Option<Wait>, MemtierError> {
    let bad = |option: &str, value: &str, why: &str| MemtierError::BadValue {
        option: format!("--{option}"),
        value: value.to_string(),
        why: why.to_string(),
    };
    let one = |option: &str, v: &Option<String>| -> Result<u64, MemtierError> {
        let Some(v) = v else { return Ok(0) };
        let (lo, hi) = v.split_once('-').unwrap_or((v, v));
        let (lo, hi) = (number(option, lo)?, number(option, hi)?);
        if lo != hi {
            return Err(MemtierError::Refused {
                option: format!("--{option}"),
                why: format!("'{v}': a range is not supported, respbench's WAIT takes one value (N or N-N)"),
            });
        }
        Ok(lo)
    };
    let (replicas, timeout) = (one("num-slaves", &wait[1])?, one("wait-timeout", &wait[2])?);
    let Some(r) = &wait[0] else { return Ok(None) };
    let (a, b) = r
        .split_once(':')
        .and_then(|(a, b)| Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?)))
        .filter(|(a, b)| *a > 0 || *b > 0)
        .ok_or_else(|| bad("wait-ratio", r, "must be expressed as [0-n]:[0-n]"))?;
    if b == 0 {
        return Ok(None);
    }
    if a == 0 || sets == 0 || !ratio_rows || cluster {
        let why = "memtier sends WAITs between --ratio's SETs (SETS:WAITS with SETS above 0), not with --command or --cluster-mode";
        return Err(bad("wait-ratio", r, why));
    }
    Ok(Some(((a, b), format!("WAIT {replicas} {timeout}"))))
}

/// `--ratio S:G`.
fn ratio(value: &str) -> Result<(u64, u64), MemtierError> {
    let bad = || MemtierError::BadValue {
        option: "--ratio".into(),
        value: value.to_string(),
        why: "expected SETS:GETS, e.g. 1:10".into(),
    };
    let (s, g) = value.split_once(':').ok_or_else(bad)?;
    let (s, g) = (s.trim().parse::<u64>().map_err(|_| bad())?, g.trim().parse::<u64>().map_err(|_| bad())?);
    if s == 0 && g == 0 || s > 1_000_000 || g > 1_000_000 {
        return Err(bad());
    }
    Ok((s, g))
}

/// memtier's key pattern `letter` as a respbench `--key-dist` and its count of keys, numbered
/// as memtier's obj_gen.cpp numbers them: `R` uniform and `S`/`P` in turn over
/// `--key-minimum` … `--key-maximum` (`XADD s __key__-0` needs IDs above 0-0); `G` normal over
/// the same keys, of [`normal_keys`]' mean and deviation; `Z` Zipf over
/// `max(--key-minimum, 1)` … `--key-maximum`, key `k` weighing `1 / k^θ` (`--key-zipf-exp`,
/// memtier's default 1).
fn key_dist(
    option: &str,
    letter: &str,
    zipf_exp: Option<&str>,
    (mean, sd): (f64, f64),
    (key_min, key_max): (u64, u64),
) -> Result<(String, u64), MemtierError> {
    let keys = key_max - key_min + 1;
    let from = |dist: &str| (if key_min > 0 { format!("{dist}:{key_min}") } else { dist.to_string() }, keys);
    match letter.trim() {
        "R" => Ok(from("uniform")),
        "S" | "P" => Ok(from("sequential")),
        "G" => Ok(from(&format!("gaussian:{mean}:{sd}"))),
        "Z" => {
            let first = key_min.max(1);
            let n = if key_max <= first { 1 } else { key_max - first + 1 };
            Ok((format!("zipf:{}:{first}", zipf_exp.unwrap_or("1")), n))
        }
        other => Err(MemtierError::BadValue {
            option: format!("--{option}"),
            value: other.to_string(),
            why: "the patterns are R, S, G, Z and P".into(),
        }),
    }
}

/// A `--command`'s words, as memtier splits them (redis-cli's quoting, sdssplitargs:
/// [`words::split_args`]): a quoted word may hold blanks, and `"\x86"` is that byte.
fn command_words(text: &str) -> Result<Vec<Vec<u8>>, MemtierError> {
    let bad =
        |why: String| MemtierError::BadValue { option: "--command".into(), value: text.to_string(), why };
    let split = words::split_args(text).map_err(bad)?;
    if split.is_empty() {
        return Err(bad("the command is empty".into()));
    }
    Ok(split)
}

/// memtier's checks of a line with `--command`s (memtier_benchmark.cpp's
/// `verify_arbitrary_command_option`), in its words: no `--key-pattern` and no `--ratio` (each
/// command has its own), and `P` for every command or none.
fn arbitrary_checks(opts: &[(&str, Option<String>)], commands: &[Command]) -> Result<(), MemtierError> {
    if commands.is_empty() {
        return Ok(());
    }
    let given =
        |n: &str| opts.iter().rev().find(|(k, _)| *k == n).map(|(_, v)| v.clone().unwrap_or_default());
    let bad = |option: &str, value: String, why: &str| {
        Err(MemtierError::BadValue { option: format!("--{option}"), value, why: why.into() })
    };
    if let Some(v) = given("key-pattern") {
        return bad(
            "key-pattern",
            v,
            "when using arbitrary command, key pattern is configured with --command-key-pattern option.",
        );
    }
    if let Some(v) = given("ratio") {
        return bad(
            "ratio",
            v,
            "when using arbitrary command, ratio is configured with --command-ratio option.",
        );
    }
    let parallel = commands.iter().filter(|c| c.pattern == "P").count();
    if parallel > 0 && parallel != commands.len() {
        return bad(
            "command-key-pattern",
            "P".into(),
            "parallel key-pattern must be configured to all commands.",
        );
    }
    Ok(())
}

/// Whether `word` holds `part`.
fn holds(word: &[u8], part: &[u8]) -> bool {
    word.windows(part.len()).any(|w| w == part)
}

/// `word` with each `__key__` made `key`.
fn with_key(word: &[u8], key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(word.len());
    let mut rest = word;
    while let Some(at) = rest.windows(7).position(|w| w == b"__key__") {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(key);
        rest = &rest[at + 7..];
    }
    out.extend_from_slice(rest);
    out
}

/// A command's row as memtier names it: `HSET` is `Hsets`.
fn row_name(command: &str) -> String {
    let lower = command.to_ascii_lowercase();
    let mut chars = lower.chars();
    let first = chars.next().map(|c| c.to_ascii_uppercase().to_string()).unwrap_or_default();
    format!("{first}{}s", chars.as_str())
}

/// Appends option `a` with its value `b`.
fn push(out: &mut Vec<String>, a: &str, b: &str) {
    out.push(a.to_string());
    out.push(b.to_string());
}

/// One `--command` and its own settings.
struct Command {
    words: Vec<Vec<u8>>,
    ratio: u64,
    pattern: String,
}

/// Reads memtier_benchmark's command line `args` (after the program's name) with memtier's
/// meanings and defaults into respbench's options and memtier's outputs.
pub fn translate(args: &[String]) -> Result<Translated, MemtierError> {
    let opts = options(args)?;
    let refuse = |option: &str, why: &str| -> Result<Translated, MemtierError> {
        Err(MemtierError::Refused { option: format!("--{option}"), why: why.to_string() })
    };
    let mut out: Vec<String> = Vec::new();
    let (mut threads, mut clients, mut requests, mut test_time) = (4u64, 50u64, None, None);
    let mut all_keys = false;
    let (mut sets, mut gets) = (1u64, 10u64);
    let (mut key_min, mut key_max) = (0u64, 10_000_000u64);
    let mut key_prefix = "memtier-".to_string();
    let mut key_pattern = "R:R".to_string();
    let mut zipf_exp: Option<String> = None;
    // --key-median, --key-stddev.
    let (mut median, mut stddev): (Option<f64>, Option<f64>) = (None, None);
    let mut data_size: Option<String> = None;
    // --data-size-pattern S, and whether the size is --data-size-range's.
    let (mut size_by_key, mut size_range) = (false, false);
    let mut run_count = 1u32;
    let mut percentiles = vec![50.0, 99.0, 99.9];
    let (mut hide_histogram, mut cluster, mut randomize, mut show_config) = (false, false, false, false);
    let (mut out_file, mut json_out_file) = (None, None);
    let (mut hdr_file_prefix, mut by_line) = (None, false);
    // --wait-ratio, --num-slaves, --wait-timeout.
    let mut wait: [Option<String>; 3] = [None, None, None];
    let mut multi_key_get = 0u64;
    let mut commands: Vec<Command> = Vec::new();
    // --scan-incremental-iteration, --scan-incremental-max-iterations.
    let (mut scan, mut scan_limit) = (false, 0u64);
    // --data-import, --generate-keys, --no-expiry.
    let mut import = import::Import::default();
    // --monitor-input, and whether --monitor-pattern is S (memtier's default).
    let (mut monitor, mut monitor_in_turn): (Option<String>, bool) = (None, true);
    let mut pipeline = 1u64;
    let mut rate: Option<u64> = None;
    // --reconnect-on-error, --reconnect-backoff-factor, --max-reconnect-attempts.
    let (mut reconnect, mut backoff_factor, mut reconnect_attempts) = (false, None, 0u64);
    let mut config: Vec<(&'static str, ConfigValue)> = Vec::new();
    let (mut server, mut port, mut protocol) = ("localhost".to_string(), 6379u64, "redis".to_string());
    let (mut tls, mut socket, mut host_given) = (false, false, false);
    // --clients-start, --clients-step, --step-duration.
    let mut staircase: (Option<u64>, Option<u64>, Option<u64>) = (None, None, None);
    let mut statsd = statsd::FromMemtier::default();
    for (name, value) in &opts {
        let v = value.as_deref().unwrap_or("");
        match *name {
            "server" | "host" => {
                host_given = true;
                server = v.to_string();
                push(&mut out, "-h", v);
            }
            "port" => {
                port = number(name, v)?;
                push(&mut out, "-p", v);
            }
            "unix-socket" => {
                socket = true;
                push(&mut out, "-s", v);
            }
            "protocol" => match v {
                "redis" | "resp2" => protocol = v.to_string(),
                "resp3" => {
                    protocol = v.to_string();
                    out.push("-3".into());
                }
                _ => {
                    return refuse("protocol", &format!("'{v}': respbench speaks RESP (redis, resp2, resp3)"))
                }
            },
            "tls" => {
                tls = true;
                out.push("--tls".into());
            }
            "cert" | "key" | "cacert" | "sni" => push(&mut out, &format!("--{name}"), v),
            "tls-skip-verify" => out.push("--insecure".into()),
            "authenticate" => match v.split_once(':') {
                Some((user, pass)) if !user.is_empty() => {
                    push(&mut out, "--user", user);
                    push(&mut out, "-a", pass);
                }
                _ => push(&mut out, "-a", v),
            },
            "cluster-mode" => {
                cluster = true;
                out.push("--cluster".into());
            }
            "threads" => threads = positive(name, v)?,
            "clients" => clients = positive(name, v)?,
            "requests" if v == "allkeys" => all_keys = true,
            "requests" => requests = Some(positive(name, v)?),
            "test-time" => test_time = Some(positive(name, v)?),
            "ratio" => (sets, gets) = ratio(v)?,
            "wait-ratio" => wait[0] = Some(v.to_string()),
            "multi-key-get" => multi_key_get = number(name, v)?,
            "num-slaves" => wait[1] = Some(v.to_string()),
            "wait-timeout" => wait[2] = Some(v.to_string()),
            // memtier's own check: an explicit minimum is 1 or more (its default is 0).
            "key-minimum" => key_min = positive(name, v)?,
            "key-maximum" => key_max = number(name, v)?,
            "key-prefix" => key_prefix = v.to_string(),
            "key-pattern" => key_pattern = v.to_string(),
            "key-zipf-exp" => zipf_exp = Some(v.to_string()),
            "data-size" => {
                size_range = false;
                data_size = Some(positive(name, v)?.to_string())
            }
            "data-size-range" => {
                size_range = true;
                data_size = Some(v.to_string())
            }
            "data-size-list" => {
                size_range = false;
                data_size = Some(v.to_string())
            }
            "data-size-pattern" => {
                size_by_key = match v {
                    "R" => false,
                    "S" => true,
                    _ => {
                        return Err(MemtierError::BadValue {
                            option: "--data-size-pattern".into(),
                            value: v.to_string(),
                            why: "expected R (random) or S (by the key's place in the range)".into(),
                        })
                    }
                }
            }
            "expiry-range" => push(&mut out, "--expiry-range", v),
            "command" => commands.push(Command { words: command_words(v)?, ratio: 1, pattern: "R".into() }),
            "command-ratio" | "command-key-pattern" => {
                let Some(last) = commands.last_mut() else {
                    return refuse(name, "it applies to the --command before it, and there is none");
                };
                if *name == "command-ratio" {
                    last.ratio = positive(name, v)?;
                } else {
                    last.pattern = v.to_string();
                }
            }
            "command-stats-breakdown" => {
                by_line = match v.to_ascii_lowercase().as_str() {
                    "command" => false,
                    "line" => true,
                    _ => {
                        return Err(MemtierError::BadValue {
                            option: "--command-stats-breakdown".into(),
                            value: v.to_string(),
                            why: "must be 'command' or 'line'".into(),
                        })
                    }
                }
            }
            // memtier's default: no prefix, no files.
            "hdr-file-prefix" => hdr_file_prefix = (!v.is_empty()).then(|| v.to_string()),
            // The connect's own limit in seconds; 0, memtier's default, none.
            "connection-timeout" => match number(name, v)? {
                0 => {}
                secs => push(&mut out, "--connect-timeout", &format!("{secs}s")),
            },
            "pipeline" => pipeline = positive(name, v)?,
            "rate-limiting" => rate = Some(positive(name, v)?),
            "select-db" => push(&mut out, "--dbnum", v),
            "distinct-client-seed" => {}
            "randomize" => randomize = true,
            "run-count" => {
                run_count =
                    u32::try_from(positive(name, v)?).ok().filter(|&n| n <= 1000).ok_or_else(|| {
                        MemtierError::BadValue {
                            option: "--run-count".into(),
                            value: v.into(),
                            why: "at most 1000".into(),
                        }
                    })?
            }
            "print-percentiles" => {
                percentiles = v
                    .split(',')
                    .map(|p| p.trim().parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p)))
                    .collect::<Option<Vec<_>>>()
                    .filter(|l| !l.is_empty())
                    .ok_or_else(|| MemtierError::BadValue {
                        option: "--print-percentiles".into(),
                        value: v.into(),
                        why: "expected percentiles from 0 to 100, e.g. 50,99,99.9".into(),
                    })?;
            }
            "hide-histogram" => hide_histogram = true,
            "out-file" => out_file = Some(v.to_string()),
            "json-out-file" => json_out_file = Some(v.to_string()),
            // Each connection anew after N requests, all answered (memtier's client.cpp holds its
            // pipeline so that none crosses the N-th): respbench's --reconnect-every.
            "reconnect-interval" => push(&mut out, "--reconnect-every", &positive(name, v)?.to_string()),
            "reconnect-on-error" => reconnect = true,
            "reconnect-backoff-factor" => backoff_factor = Some(above_zero(name, v)?),
            "max-reconnect-attempts" => reconnect_attempts = number(name, v)?,
            "clients-start" => staircase.0 = Some(positive(name, v)?),
            "clients-step" => staircase.1 = Some(positive(name, v)?),
            "step-duration" => staircase.2 = Some(positive(name, v)?),
            "show-config" => show_config = true,
            "scan-incremental-iteration" => scan = true,
            // memtier's strtoul: 0 (its default) follows each cursor to 0; without
            // --scan-incremental-iteration it does nothing, as in memtier.
            "scan-incremental-max-iterations" => scan_limit = number(name, v)?,
            "monitor-input" => monitor = Some(v.to_string()),
            "monitor-pattern" if v == "S" || v == "R" => monitor_in_turn = v == "S",
            "monitor-pattern" => {
                return Err(MemtierError::BadValue {
                    option: "--monitor-pattern".into(),
                    value: v.to_string(),
                    why: "expected S (sequential) or R (random)".into(),
                })
            }
            "help" | "version" => return refuse(name, "run 'respbench --help' for respbench's own options"),
            // respbench's values are always pseudo-random (redis-benchmark's payload), made once
            // as memtier makes its -R buffer once: see docs/differences.md.
            "random-data" => {}
            "data-import" => import.file = Some(v.to_string()),
            "generate-keys" => import.generate_keys = true,
            "no-expiry" => import.no_expiry = true,
            "data-verify" => import.verify = true,
            "verify-only" => (import.verify, import.verify_only) = (true, true),
            "key-median" => median = Some(above_zero(name, v)?),
            "key-stddev" => stddev = Some(above_zero(name, v)?),
            "statsd-host" | "statsd-port" | "statsd-prefix" | "statsd-run-label" | "graphite-port" => {
                statsd.set(name, v)?
            }
            other => return refuse(other, "not implemented"),
        }
    }
    import::check(&import, &|o| opts.iter().any(|(k, _)| *k == o))?;
    if import.file.is_some() && gets > 0 && !import.verify_only {
        return Err(MemtierError::BadValue {
            option: "--ratio".into(),
            value: format!("{sets}:{gets}"),
            why: "with --data-import respbench writes the file's items with SETs only: give --ratio 1:0"
                .into(),
        });
    }
    out.extend(statsd.args());
    if reconnect {
        out.extend(reconnect_pacing(backoff_factor, reconnect_attempts)?);
    }
    if cluster && opts.iter().any(|(k, _)| *k == "reconnect-interval") {
        return refuse("reconnect-interval", "cluster mode does not support it (as memtier's)");
    }
    let mut drawn_lines = None;
    if let Some(file) = &monitor {
        if cluster {
            return refuse("monitor-input", "it is not supported in cluster mode");
        }
        // `__monitor_line@__` with --monitor-pattern S: the file's commands in turn, one turn
        // for every client (memtier's shared index); with R, drawn at random.
        drawn_lines = monitor_lines(&mut commands, file, monitor_in_turn)?;
        if drawn_lines == Some(true) {
            out.push("--mix-in-turn".into());
        }
    }
    // memtier's default server is localhost.
    if !host_given && !socket {
        push(&mut out, "-h", &server);
    }
    if key_max < key_min {
        return Err(MemtierError::BadValue {
            option: "--key-maximum".into(),
            value: key_max.to_string(),
            why: format!("below --key-minimum {key_min}"),
        });
    }
    arbitrary_checks(&opts, &commands)?;
    let keys = key_max - key_min + 1;
    let (set_pattern, get_pattern) = key_pattern.split_once(':').ok_or_else(|| MemtierError::BadValue {
        option: "--key-pattern".into(),
        value: key_pattern.clone(),
        why: "expected SET:GET patterns, e.g. R:R".into(),
    })?;
    let connections =
        clients.checked_mul(threads).filter(|&c| c <= 100_000).ok_or_else(|| MemtierError::BadValue {
            option: "--clients".into(),
            value: clients.to_string(),
            why: "-c x -t is above 100000".into(),
        })?;
    // memtier's `allkeys`: every key of the range once, split between the clients with P:P
    // (each its slice, the last its leftover), else the range's width per client.
    let parallel = commands.first().map_or(set_pattern == "P", |c| c.pattern == "P");
    let total = match (all_keys, requests, test_time) {
        (true, _, _) if parallel => {
            requests = Some((key_max - key_min) / connections + 1);
            Some(keys)
        }
        (true, _, _) => {
            requests = Some((key_max - key_min).max(1));
            requests.and_then(|r| r.checked_mul(connections))
        }
        (false, Some(r), _) => r.checked_mul(connections),
        (false, None, Some(_)) => None,
        (false, None, None) => {
            requests = Some(10_000);
            Some(10_000 * connections)
        }
    };
    push(&mut out, "-c", &connections.to_string());
    push(&mut out, "--threads", &threads.to_string());
    match (total, test_time) {
        (Some(n), _) if requests.is_some() => push(&mut out, "-n", &n.to_string()),
        (_, Some(t)) => {
            push(&mut out, "--duration", &format!("{t}s"));
            // memtier waits for every reply after --test-time: respbench up to a minute.
            push(&mut out, "--drain-grace", "60s");
        }
        _ => {
            return Err(MemtierError::BadValue {
                option: "--requests".into(),
                value: requests.map(|r| r.to_string()).unwrap_or_default(),
                why: "too many requests".into(),
            })
        }
    }
    if requests.is_some() && test_time.is_some() {
        return refuse("test-time", "give -n or --test-time, not both (memtier runs to the first)");
    }
    // memtier's staircase: per thread, to -c, each step for --step-duration seconds.
    match staircase {
        (None, None, None) => {}
        (Some(start), Some(step), Some(every)) if test_time.is_some() && requests.is_none() => {
            let (from, by) = (start.saturating_mul(threads).min(connections), step.saturating_mul(threads));
            push(&mut out, "--ramp", &format!("clients {from}..{connections} step {by} every {every}s"));
        }
        (Some(_), Some(_), Some(_)) => {
            return refuse("clients-start", "the staircase runs for --test-time, not -n (as memtier's)")
        }
        _ => {
            return refuse("clients-start", "--clients-start, --clients-step and --step-duration go together")
        }
    }
    push(&mut out, "-P", &pipeline.to_string());
    // memtier's S sizes --ratio's SETs by their key's place in --data-size-range, and only
    // them; a fixed size or a list is as it is.
    if size_by_key && size_range && !commands.is_empty() {
        let why =
            "memtier sizes only --ratio's SETs by their key (a --command's __data__ gets the size of key 0)";
        return refuse("data-size-pattern", why);
    }
    match (&data_size, size_by_key && size_range) {
        (Some(range), true) => push(&mut out, "-d", &format!("{range}/key")),
        _ => push(&mut out, "-d", data_size.as_deref().unwrap_or("32")),
    }
    push(&mut out, "-r", &keys.to_string());
    if let Some(r) = rate {
        push(&mut out, "--rps", &r.saturating_mul(connections).to_string());
    }
    if run_count > 1 {
        push(&mut out, "--repeat", &run_count.to_string());
    }
    // memtier's keys come from a constant seed unless --randomize.
    if !randomize {
        push(&mut out, "--seed", "0");
    }
    // memtier's JSON has the run's seconds.
    if json_out_file.is_some() {
        out.push("--series".into());
    }
    let pcts: Vec<String> = percentiles.iter().map(|p| p.to_string()).collect();
    push(&mut out, "--print-percentiles", &pcts.join(","));
    let normal = normal_keys(&key_pattern, median, stddev, key_min, key_max)?;
    // memtier's key names: the prefix and the number in its own digits (`memtier-1234`).
    let key = format!("{key_prefix}__rand_num__");
    let zipf = zipf_exp.as_deref();
    let range = (key_min, key_max);
    let mut rows = Vec::new();
    let ratio_rows = commands.is_empty();
    let waits = wait_command(&wait, ratio_rows, sets, cluster)?;
    if multi_key_get > 0 && (!ratio_rows || cluster) {
        let why = "memtier sends MGETs for --ratio's GETs, not with --command or --cluster-mode";
        return refuse("multi-key-get", why);
    }
    if multi_key_get.min(gets) > 10_000 {
        return refuse("multi-key-get", "respbench sends at most 10000 keys in one MGET");
    }
    if let Some(file) = &import.file {
        // The file's items in turn, as memtier's import writes them (memtier_import.rs), with
        // `--generate-keys` to memtier's key names (the SET key pattern's numbers, unpadded).
        let words = import::command(&import, file, &key)?;
        if import.generate_keys {
            let (dist, n) = key_dist("key-pattern", set_pattern, zipf, normal, range)?;
            push(&mut out, "--key-dist", &dist);
            // memtier's `Z` leaves key 0 out: -r is its count.
            if let Some(r) = out.iter().position(|a| a == "-r").and_then(|at| out.get_mut(at + 1)) {
                *r = n.to_string();
            }
        }
        push(&mut out, "--dataset", file);
        out.push("--".into());
        out.extend(words);
        rows.push("Sets".to_string());
    } else if ratio_rows {
        // With WAITs, `a` SETs to `b` WAITs: the weights times `a`.
        let by = waits.as_ref().map_or(1, |w| w.0 .0);
        let weight = |w: u64, by: u64| {
            w.checked_mul(by).filter(|w| *w <= 1_000_000).ok_or_else(|| MemtierError::BadValue {
                option: "--wait-ratio".into(),
                value: wait[0].clone().unwrap_or_default(),
                why: "with --ratio, more than 1000000 requests in one round".into(),
            })
        };
        if sets > 0 {
            let (dist, n) = key_dist("key-pattern", set_pattern, zipf, normal, range)?;
            push(&mut out, "--mix-command", &format!("{}@{dist}/{n} SET {key} __data__", weight(sets, by)?));
            rows.push("Sets".to_string());
        }
        if gets > 0 {
            let (dist, n) = key_dist("key-pattern", get_pattern, zipf, normal, range)?;
            // memtier's --multi-key-get N: a round's GETs as MGETs of N keys, the last of the
            // rest (1:10 with 4: MGETs of 4, 4 and 2 keys).
            let parts = match multi_key_get {
                0 => vec![(0, gets)],
                n => vec![(n, gets / n), (gets % n, 1)],
            };
            let mget = |k: u64| format!("MGET{}", format!(" {key}").repeat(k as usize));
            for (k, times) in parts.into_iter().filter(|(k, t)| *t > 0 && (*k > 0 || multi_key_get == 0)) {
                let words = if k == 0 { format!("GET {key}") } else { mget(k) };
                push(&mut out, "--mix-command", &format!("{}@{dist}/{n} {words}", weight(times, by)?));
                rows.push("Gets".to_string());
            }
        }
        if let Some(((_, b), words)) = &waits {
            push(&mut out, "--mix-command", &format!("{} {words}", weight(sets, *b)?));
            rows.push("Waits".to_string());
        }
    } else if scan {
        // The command goes after the options, followed (respbench's --follow-cursor): memtier's
        // rows for the first calls and the continuations.
        let words = scan_command(&commands, pipeline, cluster)?;
        out.push("--follow-cursor".into());
        if scan_limit > 0 {
            push(&mut out, "--follow-cursor-limit", &scan_limit.to_string());
        }
        out.push("--".into());
        out.extend(words);
        rows.extend(["Scan 0s".to_string(), "Scan <cursor>s".to_string()]);
    } else {
        for c in &commands {
            let (dist, n) = key_dist("command-key-pattern", &c.pattern, zipf, normal, range)?;
            // Each word as respbench's --mix-command splits it back (quoted when it holds a
            // blank, a quote or a byte outside printable ASCII).
            let words: Vec<String> =
                c.words.iter().map(|w| words::quote_arg(&with_key(w, key.as_bytes()))).collect();
            push(&mut out, "--mix-command", &format!("{}@{dist}/{n} {}", c.ratio, words.join(" ")));
            rows.push(row_name(&String::from_utf8_lossy(&c.words[0])));
        }
        if commands.len() > 1 && drawn_lines.is_none() {
            // memtier's client sends its --commands in turn, each --command-ratio times in a
            // row (client.h, advance_arbitrary_command_index): so do respbench's, each on its own.
            out.push("--mix-in-turn-per-client".into());
        }
    }
    use ConfigValue::{Float, Null, Number, Text};
    let flag = |b: bool| Text(if b { "true" } else { "false" }.into());
    // The value last given to an option, as memtier keeps the last.
    let last = |n: &str| opts.iter().rev().find(|(k, _)| *k == n).map(|(_, v)| v.as_deref().unwrap_or(""));
    let text = |n: &str| last(n).map_or(Null, |v| Text(v.to_string()));
    let given = |n: &str| flag(last(n).is_some());
    let whole = |n: &str| Number(last(n).and_then(|v| v.trim().parse().ok()).unwrap_or(0));
    let float = |n: &str| Float(last(n).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0));
    let range = |n: &str, sep: &str| Text(last(n).map_or(format!("0{sep}0"), |v| v.replace(['-', ':'], sep)));
    let family = match (last("ipv4"), last("ipv6")) {
        (Some(_), _) => "AF_INET",
        (_, Some(_)) => "AF_INET6",
        _ => "Unspecified",
    };
    // memtier's `configuration`, every key in its order (memtier_benchmark.cpp's
    // config_print_to_json); the password is not written.
    config.extend([
        ("server", Text(server)),
        ("port", Number(port)),
        ("uri", Text(last("uri").unwrap_or("").to_string())),
        ("unix socket", text("unix-socket")),
        ("address family", Text(family.into())),
        ("protocol", Text(protocol)),
        ("out_file", out_file.clone().map_or(Null, Text)),
        ("tls", flag(tls)),
        ("cert", text("cert")),
        ("key", text("key")),
        ("cacert", text("cacert")),
        ("tls_skip_verify", given("tls-skip-verify")),
        ("sni", text("sni")),
        ("client_stats", text("client-stats")),
        ("run_count", Number(u64::from(run_count))),
        ("debug", Number(0)),
        ("requests", Number(requests.unwrap_or(0))),
        ("rate_limit", Number(rate.unwrap_or(0))),
        ("clients", Number(clients)),
        ("threads", Number(threads)),
        ("test_time", Number(test_time.unwrap_or(0))),
        ("ratio", Text(format!("{sets}:{gets}"))),
        ("pipeline", Number(pipeline)),
        ("data_size", Number(data_size.as_deref().map_or(Some(32), |d| d.parse().ok()).unwrap_or(0))),
        ("data_offset", whole("data-offset")),
        ("random_data", given("random-data")),
        ("data_size_range", range("data-size-range", ":")),
        ("data_size_list", Text(last("data-size-list").unwrap_or("").to_string())),
        ("data_size_pattern", Text(last("data-size-pattern").unwrap_or("R").to_string())),
        ("expiry_range", range("expiry-range", ":")),
        ("data_import", text("data-import")),
        ("data_verify", given("data-verify")),
        ("verify_only", given("verify-only")),
        ("generate_keys", given("generate-keys")),
        ("key_prefix", Text(key_prefix)),
        ("key_minimum", Number(key_min)),
        ("key_maximum", Number(key_max)),
        ("key_pattern", Text(key_pattern.clone())),
        ("key_stddev", float("key-stddev")),
        ("key_median", float("key-median")),
        ("key_zipf_exp", float("key-zipf-exp")),
        ("reconnect_interval", whole("reconnect-interval")),
        ("connection_timeout", whole("connection-timeout")),
        ("thread_conn_start_min_jitter_micros", whole("thread-conn-start-min-jitter-micros")),
        ("thread_conn_start_max_jitter_micros", whole("thread-conn-start-max-jitter-micros")),
        ("multi_key_get", whole("multi-key-get")),
        ("authenticate", Text(last("authenticate").map_or("", |_| "(not shown)").to_string())),
        ("select-db", whole("select-db")),
        ("no-expiry", given("no-expiry")),
        ("wait-ratio", range("wait-ratio", ":")),
        ("num-slaves", range("num-slaves", ":")),
        ("wait-timeout", range("wait-timeout", "-")),
        ("print-all-runs", given("print-all-runs")),
    ]);
    if let (Some(start), Some(step), Some(every)) = staircase {
        config.extend([
            ("clients_start", Number(start)),
            ("clients_step", Number(step)),
            ("step_duration", Number(every)),
        ]);
    }
    Ok(Translated {
        args: out,
        memtier: Memtier {
            threads,
            clients,
            requests,
            test_time: if requests.is_some() { None } else { test_time },
            run_count,
            percentiles,
            hide_histogram,
            out_file,
            json_out_file,
            rows,
            ratio_rows,
            cluster,
            configuration: config,
            show_config,
            hdr_file_prefix,
            by_line,
            multi_key_get: multi_key_get > 0,
            one_command: import.file.is_some(),
            verify: import
                .file
                .clone()
                .filter(|_| import.verify)
                .map(|file| Verify { file, only: import.verify_only }),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(line: &str) -> Result<Translated, MemtierError> {
        let args: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        translate(&args)
    }

    /// The value respbench's option `name` got.
    fn opt<'a>(tr: &'a Translated, name: &str) -> Option<&'a str> {
        tr.args.iter().position(|a| a == name).map(|i| tr.args[i + 1].as_str())
    }

    fn mix(tr: &Translated) -> Vec<&str> {
        tr.args.windows(2).filter(|w| w[0] == "--mix-command").map(|w| w[1].as_str()).collect()
    }

    #[test]
    fn defaults_are_memtiers() {
        let tr = t("").unwrap();
        // 4 threads of 50 clients, 10000 requests each.
        assert_eq!(opt(&tr, "-c"), Some("200"));
        assert_eq!(opt(&tr, "--threads"), Some("4"));
        assert_eq!(opt(&tr, "-n"), Some("2000000"));
        assert_eq!(opt(&tr, "-d"), Some("32"));
        assert_eq!(opt(&tr, "-r"), Some("10000001"));
        assert_eq!(opt(&tr, "--seed"), Some("0"));
        assert_eq!(
            mix(&tr),
            [
                "1@uniform/10000001 SET memtier-__rand_num__ __data__",
                "10@uniform/10000001 GET memtier-__rand_num__"
            ]
        );
        assert_eq!(tr.memtier.rows, ["Sets", "Gets"]);
        assert_eq!(tr.memtier.percentiles, [50.0, 99.0, 99.9]);
        assert_eq!((tr.memtier.threads, tr.memtier.clients, tr.memtier.requests), (4, 50, Some(10_000)));
    }

    #[test]
    fn clients_are_per_thread_and_requests_per_client() {
        let tr =
            t("--ratio 1:10 -t 2 -c 5 -n 100 --key-maximum 1000 --pipeline=4 -s 10.0.0.1 -p7000").unwrap();
        assert_eq!(opt(&tr, "-c"), Some("10"));
        assert_eq!(opt(&tr, "-n"), Some("1000"));
        assert_eq!(opt(&tr, "-P"), Some("4"));
        assert_eq!(opt(&tr, "-r"), Some("1001"));
        assert_eq!(opt(&tr, "-h"), Some("10.0.0.1"));
        assert_eq!(opt(&tr, "-p"), Some("7000"));
        let tr = t("--test-time 3 -c 2 -t 1 --rate-limiting 100").unwrap();
        assert_eq!(opt(&tr, "--duration"), Some("3s"));
        assert_eq!(opt(&tr, "-n"), None);
        // Per connection in memtier, the whole run's in respbench.
        assert_eq!(opt(&tr, "--rps"), Some("200"));
    }

    #[test]
    fn allkeys_with_parallel_keys_writes_the_range_once() {
        let tr = t("-n allkeys --key-pattern P:P --ratio 1:0 --key-minimum 1 --key-maximum 5000 -c 50 -t 2")
            .unwrap();
        assert_eq!(opt(&tr, "-n"), Some("5000"));
        assert_eq!(mix(&tr), ["1@sequential:1/5000 SET memtier-__rand_num__ __data__"]);
        assert_eq!(tr.memtier.rows, ["Sets"]);
        // memtier's own count per client: the range over the clients, plus one.
        assert_eq!(tr.memtier.requests, Some(4999 / 100 + 1));
    }

    #[test]
    fn commands_take_their_ratio_and_key_pattern() {
        let args: Vec<String> = [
            "--command",
            "HSET h __key__ __data__",
            "--command-ratio",
            "2",
            "--command-key-pattern=G",
            "--command=GET __key__",
            "--key-prefix",
            "",
            "--key-maximum",
            "99",
            "-a",
            "alice:s3cret",
            "-P",
            "resp3",
        ]
        .map(str::to_string)
        .to_vec();
        let tr = translate(&args).unwrap();
        assert_eq!(
            mix(&tr),
            ["2@gaussian:50:16.5/100 HSET h __rand_num__ __data__", "1@uniform/100 GET __rand_num__"]
        );
        assert_eq!(tr.memtier.rows, ["Hsets", "Gets"]);
        assert!(!tr.memtier.ratio_rows);
        assert_eq!((opt(&tr, "--user"), opt(&tr, "-a")), (Some("alice"), Some("s3cret")));
        assert!(tr.args.iter().any(|a| a == "-3"));
    }

    #[test]
    fn command_words_take_redis_cli_escapes() {
        let w = command_words(r#"SET k "{\"a\":\"b\x41\"}" '\x00'"#).unwrap();
        assert_eq!(w, [&b"SET"[..], b"k", br#"{"a":"bA"}"#, br"\x00"]);
        assert_eq!(command_words(r#"RESTORE k 0 "\x04\xdf""#).unwrap()[3], [4, 0xdf]);
        let e = command_words(r#"SET k "open"#).unwrap_err().to_string();
        assert!(e.contains("--command") && e.contains("not closed"), "{e}");
        // Words with blanks or bytes outside text reach respbench's --mix-command quoted, so
        // that it splits them back into the same arguments.
        let args = [
            "--command",
            r#"EVAL "return redis.call('ping')" 0"#,
            "--command",
            r#"RESTORE __key__ 0 "\x86\"""#,
        ];
        let tr = translate(&args.map(str::to_string)).unwrap();
        assert_eq!(
            mix(&tr),
            [
                r#"1@uniform/10000001 EVAL "return redis.call('ping')" 0"#,
                r#"1@uniform/10000001 RESTORE memtier-__rand_num__ 0 "\x86\"""#
            ]
        );
        let back = crate::syntax::mix_command(mix(&tr)[1]).unwrap().0;
        assert_eq!(back[3], [0x86, b'"']);
        // memtier's checks of a line with --commands, in its words.
        for (extra, named) in [
            (["--key-pattern", "P:P"], "key pattern is configured with --command-key-pattern"),
            (["--ratio", "1:1"], "ratio is configured with --command-ratio"),
            (["--command-key-pattern", "P"], "parallel key-pattern must be configured to all commands"),
        ] {
            let mut args = vec!["--command", "SET __key__ x", "--command", "GET __key__"];
            args.extend(extra);
            let e =
                translate(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>()).unwrap_err().to_string();
            assert!(e.contains(named), "{e}");
        }
        let e = t("-n 5 stray").unwrap_err().to_string();
        assert!(e.starts_with("'stray' is not an option: memtier_benchmark ignores it"), "{e}");
        // After --test-time, replies are waited for as memtier does, up to a minute.
        let tr = t("--test-time 1").unwrap();
        assert_eq!(opt(&tr, "--drain-grace"), Some("60s"));
        assert_eq!(opt(&t("-n 5").unwrap(), "--drain-grace"), None);
    }

    #[test]
    fn key_median_and_stddev_centre_the_gaussian_keys() {
        let tr = t("--key-pattern G:G --key-minimum 100 --key-maximum 1099 --key-median 600 --key-stddev 25")
            .unwrap();
        // Key numbers run from --key-minimum, as memtier's: its key 600 is respbench's.
        assert_eq!(
            mix(&tr),
            [
                "1@gaussian:600:25:100/1000 SET memtier-__rand_num__ __data__",
                "10@gaussian:600:25:100/1000 GET memtier-__rand_num__"
            ]
        );
        // Neither given: memtier's middle (its width / 2 + minimum + 0.5) and a sixth of the width.
        let tr = t("--key-pattern P:G --key-minimum 100 --key-maximum 1099").unwrap();
        assert_eq!(mix(&tr)[1], "10@gaussian:600:166.5:100/1000 GET memtier-__rand_num__");
        assert_eq!(mix(&tr)[0], "1@sequential:100/1000 SET memtier-__rand_num__ __data__");
        // One given: memtier's default for the other (the middle, a sixth of the range).
        let tr = t("--key-pattern R:G --key-maximum 600 --key-stddev 10").unwrap();
        assert_eq!(mix(&tr)[1], "10@gaussian:300.5:10/601 GET memtier-__rand_num__");
        assert_eq!(mix(&tr)[0], "1@uniform/601 SET memtier-__rand_num__ __data__");
    }

    #[test]
    fn zipf_keys_are_memtiers_own_numbers() {
        // Z weighs key k by 1 / k^θ over --key-minimum … --key-maximum; from 1 when the
        // minimum is 0 (memtier's "will limit keys to positive"), θ 1 unless given.
        let tr = t("--key-pattern Z:Z --key-minimum 100 --key-maximum 1099 --key-zipf-exp 0.8").unwrap();
        assert_eq!(mix(&tr)[1], "10@zipf:0.8:100/1000 GET memtier-__rand_num__");
        let tr = t("--key-pattern S:Z --key-maximum 1000").unwrap();
        assert_eq!(mix(&tr)[1], "10@zipf:1:1/1000 GET memtier-__rand_num__");
        assert_eq!(mix(&tr)[0], "1@sequential/1001 SET memtier-__rand_num__ __data__");
        let args = [
            "--command",
            "GET __key__",
            "--command-key-pattern",
            "Z",
            "--key-minimum",
            "5",
            "--key-maximum",
            "5",
        ];
        let tr = translate(&args.map(str::to_string)).unwrap();
        assert_eq!(mix(&tr), ["1@zipf:1:5/1 GET memtier-__rand_num__"]);
    }

    #[test]
    fn the_staircase_is_a_ramp_of_every_threads_clients() {
        let tr = t("-t 2 -c 10 --test-time 6 --clients-start 2 --clients-step 3 --step-duration 2").unwrap();
        assert_eq!(opt(&tr, "--ramp"), Some("clients 4..20 step 6 every 2s"));
        assert_eq!(opt(&tr, "--duration"), Some("6s"));
        assert!(t("--clients-start 2 --test-time 5").is_err());
        assert!(t("-n 5 --clients-start 2 --clients-step 1 --step-duration 1").is_err());
    }

    #[test]
    fn refusals_name_the_option() {
        for (line, named) in [
            ("--monitor-input f", "--monitor-input"),
            ("-P memcache_text", "--protocol"),
            ("--command=\"SET\"k", "--command"),
            ("--data-import x --ratio 1:0", "--data-import 'x': cannot read it"),
            ("--no-expiry", "--no-expiry"),
            ("--data-verify", "use data-verify only with data-import"),
            ("--bogus 3", "--bogus"),
            ("--monitor-input m.txt", "cannot read it"),
            ("--monitor-pattern X", "--monitor-pattern"),
            ("--connection-timeout 1.5", "--connection-timeout"),
            // memtier's own checks of the gaussian's settings, and respbench's least deviation.
            ("--key-median 5", "--key-median"),
            ("--key-pattern G:G --key-maximum 100 --key-median 500", "--key-median"),
            ("--key-pattern G:G --key-stddev 0", "--key-stddev"),
            ("--key-pattern G:G --key-stddev 0.1", "--key-stddev"),
            ("--data-size-pattern X", "--data-size-pattern"),
            ("--data-size-range 10-100 --data-size-pattern S --command=SET", "--data-size-pattern"),
            ("-c", "--clients"),
            ("--ratio 1", "--ratio"),
            ("--key-minimum 5 --key-maximum 4", "--key-maximum"),
            ("--key-minimum 0", "--key-minimum"),
            ("--command-ratio 3", "--command-ratio"),
            ("-n 0", "--requests"),
            ("--command-stats-breakdown both", "--command-stats-breakdown"),
        ] {
            let e = t(line).unwrap_err().to_string();
            assert!(e.contains(named), "{line}: {e}");
        }
    }

    #[test]
    fn a_monitor_line_for_each_request() {
        let file = std::env::temp_dir().join(format!("respbench-monitor-unit-{}.txt", std::process::id()));
        let capture =
            "OK\n1.1 [0 a:1] \"SET\" \"a\" \"1\"\n1.2 [0 a:1] \"GET\" \"a\"\n1.3 [0 a:1] \"INCR\" \"n\"\n";
        std::fs::write(&file, capture).unwrap();
        let f = file.to_str().unwrap();
        let at = |line: &str| -> Vec<String> {
            let mut a: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            a.extend(["--monitor-input".to_string(), f.to_string()]);
            a
        };
        // S (memtier's default): the lines in turn.
        let tr = translate(&at("--command=__monitor_line@__")).unwrap();
        assert_eq!(
            mix(&tr),
            ["1@uniform/10000001 SET a 1", "1@uniform/10000001 GET a", "1@uniform/10000001 INCR n"]
        );
        assert!(tr.args.iter().any(|a| a == "--mix-in-turn"), "{:?}", tr.args);
        assert_eq!(tr.memtier.rows, ["Sets", "Gets", "Incrs"]);
        // R: each line a command of the mix; beside another --command, whose share it keeps.
        let tr = translate(&at("--command=__monitor_line@__ --monitor-pattern R")).unwrap();
        assert_eq!(
            mix(&tr),
            ["1@uniform/10000001 SET a 1", "1@uniform/10000001 GET a", "1@uniform/10000001 INCR n"]
        );
        let tr = translate(&at(
            "--command=PING --command-ratio 2 --command=__monitor_line@__ --monitor-pattern R",
        ))
        .unwrap();
        assert_eq!(mix(&tr)[0], "6@uniform/10000001 PING");
        assert_eq!(mix(&tr).len(), 4);
        // A capture of 65 commands: 64 different ones and a repeat, drawn at random; in turn, too many.
        let long: String = (0..65).map(|i| format!("1.{i} [0 a:1] \"GET\" \"k{}\"\n", i % 64)).collect();
        std::fs::write(&file, long).unwrap();
        let tr = translate(&at("--command=__monitor_line@__ --monitor-pattern R")).unwrap();
        assert_eq!((mix(&tr).len(), mix(&tr)[0]), (64, "2@uniform/10000001 GET k0"));
        let e = translate(&at("--command=__monitor_line@__")).unwrap_err().to_string();
        assert!(e.contains("more than 64 lines"), "{e}");
        std::fs::write(&file, capture).unwrap();
        for (line, why) in [
            ("--command=PING --command=__monitor_line@__", "the only --command"),
            ("--command=__monitor_line@__ --command=__monitor_line@__ --monitor-pattern R", "once"),
            ("--command=__monitor_line4__", "__monitor_line3__ or __monitor_line@__"),
        ] {
            let e = translate(&at(line)).unwrap_err().to_string();
            assert!(e.contains(why), "{line}: {e}");
        }
        let _ = std::fs::remove_file(&file);
    }

    #[test]
    fn waits_go_between_the_sets() {
        let tr = t("--ratio 1:10 --wait-ratio 2:1 --num-slaves 1-1 --wait-timeout 50").unwrap();
        assert_eq!(
            mix(&tr),
            [
                "2@uniform/10000001 SET memtier-__rand_num__ __data__",
                "20@uniform/10000001 GET memtier-__rand_num__",
                "1 WAIT 1 50"
            ]
        );
        assert_eq!(tr.memtier.rows, ["Sets", "Gets", "Waits"]);
        // memtier's default replicas and timeout, 0-0; a ratio without WAITs sends none.
        assert_eq!(mix(&t("--ratio 3:0 --wait-ratio 1:1").unwrap())[1], "3 WAIT 0 0");
        assert_eq!(mix(&t("--wait-ratio 1:0").unwrap()).len(), 2);
        for (line, named) in [
            ("--wait-ratio 1:1 --num-slaves 0-2", "--num-slaves"),
            ("--wait-ratio 1:1 --wait-timeout 10-100", "--wait-timeout"),
            ("--wait-ratio x", "--wait-ratio"),
            ("--ratio 0:1 --wait-ratio 1:1", "--wait-ratio"),
            ("--command=PING --wait-ratio 1:1", "--wait-ratio"),
        ] {
            let e = t(line).unwrap_err().to_string();
            assert!(e.contains(named), "{line}: {e}");
        }
    }

    #[test]
    fn multi_key_gets_are_mgets_of_the_gets() {
        let mix_of = |line: &str| {
            t(line).unwrap().args.iter().filter(|a| a.contains("GET")).cloned().collect::<Vec<_>>()
        };
        let k = "memtier-__rand_num__";
        assert_eq!(
            mix_of("--ratio 1:10 --multi-key-get 4 --key-maximum 9"),
            [format!("2@uniform/10 MGET {k} {k} {k} {k}"), format!("1@uniform/10 MGET {k} {k}")]
        );
        // More keys than a round's GETs: one MGET of them all; GETs without the option.
        assert_eq!(
            mix_of("--ratio 1:3 --multi-key-get 8 --key-maximum 9"),
            [format!("1@uniform/10 MGET {k} {k} {k}")]
        );
        assert_eq!(
            mix_of("--ratio 1:3 --multi-key-get 0 --key-maximum 9"),
            [format!("3@uniform/10 GET {k}")]
        );
        let tr = t("--ratio 1:10 --multi-key-get 4").unwrap();
        assert_eq!(
            (tr.memtier.rows, tr.memtier.multi_key_get),
            (vec!["Sets".to_string(), "Gets".into(), "Gets".into()], true)
        );
        for line in [
            "--command=PING --multi-key-get 2",
            "--cluster-mode --multi-key-get 2",
            "--ratio 1:20000 --multi-key-get 20000",
        ] {
            assert!(t(line).unwrap_err().to_string().contains("--multi-key-get"), "{line}");
        }
    }

    #[test]
    fn hdr_files_and_the_breakdown_are_read() {
        let tr = t("--hdr-file-prefix /tmp/p --command-stats-breakdown=LINE --connection-timeout 0").unwrap();
        assert_eq!((tr.memtier.hdr_file_prefix.as_deref(), tr.memtier.by_line), (Some("/tmp/p"), true));
        // No prefix (memtier's default), rows by command name (its default).
        let tr = t("--command-stats-breakdown command").unwrap();
        assert_eq!((tr.memtier.hdr_file_prefix, tr.memtier.by_line), (None, false));
        assert_eq!(t("--hdr-file-prefix=").unwrap().memtier.hdr_file_prefix, None);
    }

    #[test]
    fn scan_iteration_follows_the_cursor() {
        let v = |line: &str| -> Vec<String> {
            let mut a: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            a.extend(["--command".to_string(), "SCAN 0 MATCH memtier-* COUNT 100".to_string()]);
            a
        };
        let tr = translate(&v("--scan-incremental-iteration -n 5")).unwrap();
        let tail = tr.args.iter().position(|a| a == "--follow-cursor").map(|i| &tr.args[i..]);
        assert_eq!(
            tail.map(<[String]>::to_vec).unwrap_or_default(),
            ["--follow-cursor", "--", "SCAN", "0", "MATCH", "memtier-*", "COUNT", "100"]
        );
        assert!(!tr.args.iter().any(|a| a == "--mix-command"), "{:?}", tr.args);
        assert_eq!(tr.memtier.rows, ["Scan 0s", "Scan <cursor>s"]);
        for (line, why) in [
            ("--scan-incremental-iteration --pipeline 2", "--pipeline 1"),
            ("--scan-incremental-iteration --cluster-mode", "cluster mode"),
            ("--scan-incremental-iteration --command=GET", "exactly one --command"),
            ("--scan-incremental-iteration --scan-incremental-max-iterations x", "whole number"),
        ] {
            let e = translate(&v(line)).unwrap_err().to_string();
            assert!(e.contains(why), "{line}: {e}");
        }
        let tr = translate(&v("--scan-incremental-iteration --scan-incremental-max-iterations 3")).unwrap();
        let tail = tr.args.iter().position(|a| a == "--follow-cursor").map(|i| &tr.args[i..i + 4]);
        assert_eq!(tail.unwrap_or_default(), ["--follow-cursor", "--follow-cursor-limit", "3", "--"]);
        let tr = translate(&v("--scan-incremental-iteration --scan-incremental-max-iterations 0")).unwrap();
        assert!(!tr.args.iter().any(|a| a == "--follow-cursor-limit"), "{:?}", tr.args);
        let e = t("--scan-incremental-iteration --command=HSCAN").unwrap_err().to_string();
        assert!(e.contains("SCAN command"), "{e}");
    }

    #[test]
    fn the_size_pattern_s_sizes_by_the_key() {
        let tr = t("--data-size-range 10-1000 --data-size-pattern S").unwrap();
        assert_eq!(opt(&tr, "-d"), Some("10-1000/key"));
        // A fixed size or a list is as it is; R draws.
        assert_eq!(opt(&t("-d 64 --data-size-pattern S").unwrap(), "-d"), Some("64"));
        assert_eq!(
            opt(&t("--data-size-range 10-1000 --data-size-pattern R").unwrap(), "-d"),
            Some("10-1000")
        );
    }

    #[test]
    fn reconnects_are_paced_as_memtiers() {
        // 1 s before each attempt, no limit; the pacing alone, without --reconnect-on-error,
        // changes nothing (as in memtier).
        let tr = t("--reconnect-on-error").unwrap();
        assert_eq!(opt(&tr, "--reconnect-backoff"), Some("1s,3600s"));
        assert_eq!(opt(&tr, "--reconnect-factor"), Some("1"));
        assert_eq!(opt(&tr, "--reconnect-attempts"), None);
        assert!(tr.args.iter().any(|a| a == "--reconnect"));
        let tr = t("--reconnect-on-error --reconnect-backoff-factor 1.5 --max-reconnect-attempts 3").unwrap();
        assert_eq!(opt(&tr, "--reconnect-backoff"), Some("1.5s,3600s"));
        assert_eq!(opt(&tr, "--reconnect-factor"), Some("1.5"));
        assert_eq!(opt(&tr, "--reconnect-attempts"), Some("3"));
        let tr = t("--reconnect-backoff-factor 2 --max-reconnect-attempts 0").unwrap();
        assert!(!tr.args.iter().any(|a| a.starts_with("--reconnect")), "{:?}", tr.args);
        for line in ["--reconnect-backoff-factor 0", "--reconnect-on-error --reconnect-backoff-factor 5000"] {
            assert!(t(line).unwrap_err().to_string().contains("--reconnect-backoff-factor"), "{line}");
        }
        assert_eq!(opt(&t("--reconnect-interval 100").unwrap(), "--reconnect-every"), Some("100"));
        assert!(t("--reconnect-interval 0").unwrap_err().to_string().contains("--reconnect-interval"));
        assert!(t("--reconnect-interval 5 --cluster-mode").unwrap_err().to_string().contains("cluster mode"));
    }

    #[test]
    fn the_connection_timeout_bounds_the_connect_alone() {
        let args = t("--connection-timeout 3").unwrap().args;
        assert!(args.windows(2).any(|w| w == ["--connect-timeout", "3s"]), "{args:?}");
        assert!(!args.iter().any(|a| a == "--timeout"), "{args:?}");
        // 0, memtier's default: no limit.
        assert!(!t("--connection-timeout 0").unwrap().args.iter().any(|a| a == "--connect-timeout"));
    }

    #[test]
    fn the_dialect_is_the_name_or_the_subcommand() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(dialect(&v(&["/usr/bin/memtier_benchmark", "-c", "1"])), Some(&v(&["-c", "1"])[..]));
        assert_eq!(dialect(&v(&["respbench", "memtier", "-c", "1"])), Some(&v(&["-c", "1"])[..]));
        assert_eq!(dialect(&v(&["respbench", "-c", "1"])), None);
        assert!(is_option("--test-time") && is_option("--hide-histogram") && !is_option("--duration"));
    }
}
