//! Scenario files (`respbench run FILE.toml`): the connection, the phases, events and any number
//! of client groups that run at the same time, read with serde and the `toml` crate. Unknown keys
//! and wrong types are refused with the file, line and column and what was expected. A file is
//! read into the options a command line would give ([`Scenario::base_args`],
//! [`Scenario::group_args`]), which the command line checks as it checks its own: a command line
//! is a scenario of one group, and a file builds the same [`crate::config::Config`] per group.
//! (A TOML file has no null: an absent key is `None`, and `None` is not written.)

use std::fmt;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::config::OptionError;

/// The largest scenario file read: 1 MiB (a file is settings, not data).
pub const MAX_BYTES: u64 = 1 << 20;

/// The most groups a scenario may have.
pub const MAX_GROUPS: usize = 64;

/// A scenario file as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// Where to connect; the command line's `-h`, `-p`, `-s`, `-u`, `-a`, `--user`, `--tls`…
    /// override it.
    #[serde(default, skip_serializing_if = "Connection::is_empty")]
    pub connection: Connection,
    /// The phases before and of the measuring.
    #[serde(default, skip_serializing_if = "Phases::is_empty")]
    pub phases: Phases,
    /// Events during the measuring phase, each as `--at` takes it (`"2s CONFIG SET …"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// The client groups, which run at the same time in the measuring phase.
    pub groups: Vec<Spanned<Group>>,
}

/// The `[connection]` table.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Connection {
    /// `-h`.
    pub host: Option<String>,
    /// `-p`.
    pub port: Option<u16>,
    /// `-s`: a Unix socket.
    pub socket: Option<String>,
    /// `--user`.
    pub user: Option<String>,
    /// `-a` (better given on the command line or in REDISCLI_AUTH).
    pub password: Option<String>,
    /// `--tls`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls: bool,
    /// `--cluster`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cluster: bool,
    /// `--dbnum`.
    pub db: Option<u32>,
    /// `-3`: RESP3.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resp3: bool,
}

impl Connection {
    fn is_empty(&self) -> bool {
        *self == Connection::default()
    }
}

/// The `[phases]` table: preload, warm-up, then the measuring phase (a length or a count).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Phases {
    /// `--preload`: each group's keys written before it reads them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub preload: bool,
    /// `--warmup`: a length (`"1s"`), unmeasured.
    pub warmup: Option<String>,
    /// `--duration`: the measuring phase's length (`"5s"`).
    pub duration: Option<String>,
    /// `-n`: the measuring phase's requests, per group.
    pub requests: Option<u64>,
}

impl Phases {
    fn is_empty(&self) -> bool {
        *self == Phases::default()
    }
}

/// A `[[groups]]` entry: one workload, its own connections, keys and pace.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Group {
    /// Its name in every output (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// `-c`: its connections.
    pub clients: Option<u64>,
    /// `--threads`: its event loops.
    pub threads: Option<u64>,
    /// `-t`: one test of the suite (`get`).
    pub test: Option<String>,
    /// `--mix`: commands with weights (`"get:9,set:1"`).
    pub mix: Option<String>,
    /// A custom command and its arguments (`["SET", "k:__rand_int__", "v"]`).
    pub command: Option<Vec<String>>,
    /// `-r`: its keyspace.
    pub keyspace: Option<u64>,
    /// `--key-dist`.
    pub key_dist: Option<String>,
    /// `--key-prefix`.
    pub key_prefix: Option<String>,
    /// `-d`: value sizes, a number of bytes or `-d`'s text (`"16-1024"`).
    pub datasize: Option<Size>,
    /// `-P`.
    pub pipeline: Option<u32>,
    /// `--rps`: an open loop at this rate (the group's connections together); absent: a closed
    /// loop.
    pub rps: Option<u64>,
    /// `"cache-aside"` (`--cache-aside`): each GET that misses is followed on its connection by
    /// a SET of its key; the group reads with `test = "get"` unless it names a GET command.
    pub kind: Option<String>,
    /// `--expiry-range`: the TTL of the SETs the group sends (`"60"` s, `"500ms-1500ms"`).
    pub ttl: Option<String>,
    /// `--subscribers`: a delivery group's (`test = "pubsub"`) subscribers, the fan-out of
    /// each message (the group goes first).
    pub subscribers: Option<u64>,
    /// Its latency objectives, `--slo`'s syntax (`"p99<=2ms,p99.9<=10ms"`), judged on its
    /// figures at its rate: the group's verdict, and the run fails when one is missed.
    pub slo: Option<String>,
    /// `--ramp rps …`: the group's open-loop rate rising in steps while the other groups hold
    /// theirs (`"rps 100..300 step 100 every 1s"`; the phases' duration is the test's).
    pub ramp: Option<String>,
    /// `--rps LOW-HIGH` with `--slo`: the group's rate is searched in this range for the
    /// highest that meets its `slo` (a capacity search), the other groups at their own rates in
    /// every step (`"1000-50000"`).
    pub search: Option<String>,
}

/// The one kind of group beside the plain one.
pub const CACHE_ASIDE: &str = "cache-aside";

/// `-d`'s value: bytes, or its text.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Size {
    /// A fixed size in bytes.
    Bytes(u64),
    /// `-d`'s syntax: a range or a weighted list.
    Text(String),
}

/// Why a scenario file is refused: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file as named.
    pub file: String,
    /// Line and column, from 1, when the error has a place.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some((line, col)) => write!(f, "{}:{line}:{col}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// A scenario file read and checked: its name, its text and what it holds.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The file as named.
    pub file: String,
    /// Its text.
    pub text: String,
    /// What it holds.
    pub parsed: File,
}

/// Reads and checks the scenario file `path` (at most [`MAX_BYTES`]).
pub fn read(path: &str) -> Result<Scenario, ScenarioError> {
    let fail = |message: String| ScenarioError { file: path.to_string(), at: None, message };
    let f = std::fs::File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(f, MAX_BYTES + 1), &mut text)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(fail(format!("larger than {MAX_BYTES} bytes: a scenario is settings, not data")));
    }
    parse(path, text)
}

/// Checks a scenario's `text`, named `file` in errors.
pub fn parse(file: &str, text: String) -> Result<Scenario, ScenarioError> {
    let parsed: File = toml::from_str(&text).map_err(|e| ScenarioError {
        file: file.to_string(),
        at: e.span().map(|s| line_col(&text, s.start)),
        message: e.message().trim_end().to_string(),
    })?;
    let s = Scenario { file: file.to_string(), text, parsed };
    s.check()?;
    Ok(s)
}

/// The line and column, from 1, of byte `at` of `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..at.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let col = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, col)
}

impl Scenario {
    /// Where group `k` is in the file: `rw.toml:9:1`.
    pub fn group_at(&self, k: usize) -> String {
        let (line, col) = line_col(&self.text, self.parsed.groups[k].span().start);
        format!("{}:{line}:{col}", self.file)
    }

    /// An error at group `k`'s place in the file.
    pub fn group_error(&self, k: usize, message: impl fmt::Display) -> ScenarioError {
        let g = &self.parsed.groups[k];
        ScenarioError {
            file: self.file.clone(),
            at: Some(line_col(&self.text, g.span().start)),
            message: format!("group '{}': {message}", g.get_ref().name),
        }
    }

    /// What the file says beyond serde's types: at least one group, names given once and
    /// printable, each group sending one thing.
    fn check(&self) -> Result<(), ScenarioError> {
        let groups = &self.parsed.groups;
        if groups.is_empty() {
            return Err(ScenarioError {
                file: self.file.clone(),
                at: None,
                message: "no [[groups]]: a scenario has at least one group".into(),
            });
        }
        if groups.len() > MAX_GROUPS {
            return Err(
                self.group_error(MAX_GROUPS, format_args!("a scenario has at most {MAX_GROUPS} groups"))
            );
        }
        for (k, g) in groups.iter().enumerate() {
            let g = g.get_ref();
            let ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
            if g.name.is_empty() || g.name.len() > 64 || !g.name.chars().all(ok) {
                return Err(self.group_error(
                    k,
                    "a name is 1 to 64 letters, digits, '-', '_' or '.' (it names the group's figures)",
                ));
            }
            if groups[..k].iter().any(|o| o.get_ref().name == g.name) {
                return Err(self.group_error(k, "a second group of that name: names tell groups apart"));
            }
            let cache = match g.kind.as_deref() {
                None => false,
                Some(CACHE_ASIDE) => true,
                Some(other) => {
                    return Err(self.group_error(
                        k,
                        format_args!("unknown kind '{other}': the one kind is \"{CACHE_ASIDE}\""),
                    ))
                }
            };
            if cache && g.mix.is_some() {
                return Err(self.group_error(k, "a cache-aside group reads with GET alone, not a mix"));
            }
            let sends = [g.test.is_some(), g.mix.is_some(), g.command.is_some()];
            let given = sends.iter().filter(|&&s| s).count();
            if given != 1 && !(cache && given == 0) {
                return Err(self.group_error(
                    k,
                    "give exactly one of test (\"get\"), mix (\"get:9,set:1\") or command ([\"SET\", \"k\", \"v\"])",
                ));
            }
            if g.test.as_deref().is_some_and(|t| t.contains(',')) {
                return Err(self.group_error(k, "test names one test; several at once are a mix"));
            }
            if g.search.is_some() && (g.slo.is_none() || g.rps.is_some() || g.ramp.is_some()) {
                return Err(self.group_error(
                    k,
                    "search is the range its rate is searched in for its slo: give slo, and not rps or ramp",
                ));
            }
            if g.search.is_some() && groups[..k].iter().any(|o| o.get_ref().search.is_some()) {
                return Err(self.group_error(k, "a second group searched: one group is searched at a time"));
            }
            if g.command.as_ref().is_some_and(Vec::is_empty) {
                return Err(self.group_error(k, "command is empty: give the command's name and arguments"));
            }
        }
        Ok(())
    }

    /// The options the file's connection, phases and events stand for, leaving out those the
    /// command line gave (`given` says whether it gave an option): it overrides the file.
    pub fn base_args(&self, given: &dyn Fn(&str) -> bool) -> Vec<String> {
        let c = &self.parsed.connection;
        let p = &self.parsed.phases;
        let uri = given("-u");
        let mut out = Args { out: Vec::new(), given };
        out.opt("-h", c.host.as_ref().filter(|_| !uri && !given("-s")));
        out.opt("-p", c.port.as_ref().filter(|_| !uri && !given("-s")));
        out.opt("-s", c.socket.as_ref().filter(|_| !uri && !given("-h") && !given("-p")));
        out.opt("--user", c.user.as_ref().filter(|_| !uri));
        out.opt("-a", c.password.as_ref().filter(|_| !uri && !given("--askpass")));
        out.switch("--tls", c.tls && !uri);
        out.switch("--cluster", c.cluster);
        out.opt("--dbnum", c.db.as_ref().filter(|_| !uri));
        out.switch("-3", c.resp3);
        out.switch("--preload", p.preload);
        out.opt("--warmup", p.warmup.as_ref());
        out.opt("--duration", p.duration.as_ref());
        out.opt("-n", p.requests.as_ref());
        if !given("--at") {
            for e in &self.parsed.events {
                out.out.extend(["--at".to_string(), e.clone()]);
            }
        }
        out.out
    }

    /// The options group `k` stands for (after [`Scenario::base_args`]), its custom command
    /// last, leaving out those the command line gave.
    pub fn group_args(&self, k: usize, given: &dyn Fn(&str) -> bool) -> Vec<String> {
        let g = self.parsed.groups[k].get_ref();
        let mut out = Args { out: Vec::new(), given };
        out.opt("-c", g.clients.as_ref());
        out.opt("--threads", g.threads.as_ref());
        out.opt("-t", g.test.as_ref());
        out.opt("--mix", g.mix.as_ref());
        out.opt("-r", g.keyspace.as_ref());
        out.opt("--key-dist", g.key_dist.as_ref());
        out.opt("--key-prefix", g.key_prefix.as_ref());
        let size = g.datasize.as_ref().map(|s| match s {
            Size::Bytes(n) => n.to_string(),
            Size::Text(t) => t.clone(),
        });
        out.opt("-d", size.as_ref());
        out.opt("-P", g.pipeline.as_ref());
        match &g.search {
            // A searched group: its objectives are the search's, its range --rps's.
            Some(range) => {
                out.opt("--slo", g.slo.as_ref());
                out.opt("--rps", Some(range));
                // The test's warm-up is the phases', not --slo's default.
                let none = "0".to_string();
                out.opt("--warmup", Some(&none).filter(|_| self.parsed.phases.warmup.is_none()));
            }
            None => {
                out.opt("--rps", g.rps.as_ref());
                out.opt("--ramp", g.ramp.as_ref());
            }
        }
        out.opt("--expiry-range", g.ttl.as_ref());
        out.opt("--subscribers", g.subscribers.as_ref());
        if g.kind.as_deref() == Some(CACHE_ASIDE) {
            out.switch("--cache-aside", true);
            let get = "get".to_string();
            out.opt("-t", Some(&get).filter(|_| g.test.is_none() && g.command.is_none()));
        }
        out.out.extend(g.command.iter().flatten().cloned());
        out.out
    }

    /// Group `k`'s latency objectives (`slo`), refused at its place in the file when they
    /// cannot be read.
    pub fn group_slo(&self, k: usize) -> Result<Vec<crate::slo::Objective>, ScenarioError> {
        let g = self.parsed.groups[k].get_ref();
        match g.slo.as_ref().filter(|_| g.search.is_none()) {
            Some(text) => crate::slo::parse_objectives(text).map_err(|e| self.group_error(k, e)),
            None => Ok(Vec::new()),
        }
    }

    /// The groups' names, in the file's order.
    pub fn names(&self) -> Vec<String> {
        self.parsed.groups.iter().map(|g| g.get_ref().name.clone()).collect()
    }
}

/// `--print-scenario`: the scenario file a command line stands for (its options, split at `=`
/// already, without the program's name), as TOML: the connection, the phases and one group.
/// Options a file has no place for (the outputs, `-a`, a URI) are listed in a comment, to be
/// given on the command line with `respbench run`. `takes_value`: whether an option takes a
/// value.
pub fn of_args(args: &[String], takes_value: &dyn Fn(&str) -> bool) -> Result<String, OptionError> {
    let mut f = File::default();
    let mut g = Group::default();
    let (mut left, mut i) = (Vec::new(), 0);
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') || a.len() == 1 {
            g.command = Some(args[i..].to_vec());
            break;
        }
        let value = if takes_value(a) { args.get(i + 1).cloned() } else { None };
        i += 1 + usize::from(value.is_some());
        let refused = OptionError::Refused;
        let text = || value.clone().ok_or_else(|| refused(format!("{a} needs a value")));
        let num = || text()?.parse::<u64>().map_err(|_| refused(format!("{a}: a number, not {value:?}")));
        let c = &mut f.connection;
        match a.as_str() {
            "-h" | "--host" => c.host = Some(text()?),
            "-p" | "--port" => {
                c.port = Some(u16::try_from(num()?).map_err(|_| refused(format!("{a}: a port")))?)
            }
            "-s" | "--socket" => c.socket = Some(text()?),
            "--user" => c.user = Some(text()?),
            "--tls" => c.tls = true,
            "--cluster" => c.cluster = true,
            "--dbnum" => {
                c.db = Some(u32::try_from(num()?).map_err(|_| refused(format!("{a}: a db number")))?)
            }
            "-3" => c.resp3 = true,
            "--preload" => f.phases.preload = true,
            "--warmup" => f.phases.warmup = Some(text()?),
            "--duration" => f.phases.duration = Some(text()?),
            "-n" | "--requests" => f.phases.requests = Some(num()?),
            "--at" => f.events.push(text()?),
            "-c" | "--clients" => g.clients = Some(num()?),
            "--threads" => g.threads = Some(num()?),
            "-t" | "--tests" => g.test = Some(text()?),
            "--mix" => g.mix = Some(text()?),
            "-r" | "--keyspacelen" => g.keyspace = Some(num()?),
            "--key-dist" => g.key_dist = Some(text()?),
            "--key-prefix" => g.key_prefix = Some(text()?),
            "-d" | "--datasize" => g.datasize = Some(Size::Text(text()?)),
            "-P" | "--pipeline" => {
                g.pipeline = Some(u32::try_from(num()?).map_err(|_| refused(format!("{a}: -P")))?)
            }
            "--rps" => g.rps = Some(num()?),
            "--ramp" => g.ramp = Some(text()?),
            "--cache-aside" => g.kind = Some(CACHE_ASIDE.into()),
            "--expiry-range" => g.ttl = Some(text()?),
            "--subscribers" => g.subscribers = Some(num()?),
            "--print-scenario" => {}
            // A password stays off the file (and off the screen).
            "-a" | "--password" | "-u" | "--uri" => left.push(a.clone()),
            _ => left.push(value.as_ref().map_or(a.clone(), |v| format!("{a} {v}"))),
        }
    }
    g.name = match (&g.test, &g.mix, &g.command) {
        (Some(t), _, _) => t.clone(),
        (_, Some(_), _) => "mix".into(),
        (_, _, Some(c)) => c[0].to_ascii_lowercase().chars().filter(|&c| c.is_ascii_alphanumeric()).collect(),
        _ => {
            return Err(OptionError::Refused(
                "--print-scenario: the default suite is many tests, and a group sends one: give -t NAME, \
                        --mix or a command"
                    .into(),
            ))
        }
    };
    f.groups.push(Spanned::new(0..0, g));
    let text = toml::to_string(&f).map_err(|e| OptionError::Refused(format!("--print-scenario: {e}")))?;
    parse("the command line", text.clone())
        .map_err(|e| OptionError::Refused(format!("--print-scenario: {e}")))?;
    Ok(match left.is_empty() {
        true => text,
        false => format!("# Not in the file: give them on the command line: {}\n{text}", left.join(" ")),
    })
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

/// Options being written, those the command line gave left out.
struct Args<'a> {
    out: Vec<String>,
    given: &'a dyn Fn(&str) -> bool,
}

impl Args<'_> {
    fn opt(&mut self, name: &str, value: Option<&impl ToString>) {
        if let Some(v) = value.filter(|_| !(self.given)(name)) {
            self.out.extend([name.to_string(), v.to_string()]);
        }
    }

    fn switch(&mut self, name: &str, on: bool) {
        if on && !(self.given)(name) {
            self.out.push(name.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str =
        "[phases]\nduration = \"5s\"\n\n[[groups]]\nname = \"readers\"\nclients = 20\ntest = \"get\"\n\n\
                       [[groups]]\nname = \"writers\"\nclients = 5\ntest = \"set\"\nrps = 500\n";

    #[test]
    fn a_file_is_the_options_of_its_groups() {
        let s = parse("rw.toml", TWO.into()).unwrap();
        let none = |_: &str| false;
        assert_eq!(s.base_args(&none), ["--duration", "5s"]);
        assert_eq!(s.group_args(0, &none), ["-c", "20", "-t", "get"]);
        assert_eq!(s.group_args(1, &none), ["-c", "5", "-t", "set", "--rps", "500"]);
        assert_eq!(s.names(), ["readers", "writers"]);
    }

    #[test]
    fn the_command_line_overrides_the_file() {
        let text = format!("[connection]\nhost = \"db\"\nport = 7000\ntls = true\n{TWO}");
        let s = parse("rw.toml", text).unwrap();
        assert_eq!(s.base_args(&|o| o == "-p"), ["-h", "db", "--tls", "--duration", "5s"]);
        assert_eq!(s.base_args(&|o| o == "-u"), ["--duration", "5s"]);
        assert_eq!(s.group_args(0, &|o| o == "-c"), ["-t", "get"]);
    }

    #[test]
    fn an_option_given_either_way_is_given() {
        let args: Vec<String> = ["--port", "7000", "-c", "5", "--tls"].map(String::from).to_vec();
        let given = given(&args);
        assert!(given("-p") && given("-c") && given("--tls"));
        assert!(!given("-h") && !given("-n") && !given("--cluster"));
    }

    #[test]
    fn an_unknown_key_is_refused_at_its_line_and_column() {
        let text = TWO.replace("rps = 500", "rps = 500\n  rate = 10");
        let e = parse("rw.toml", text).unwrap_err();
        assert_eq!(e.at, Some((14, 3)), "{e}");
        assert!(e.message.contains("unknown field `rate`") && e.message.contains("`rps`"), "{e}");
        assert!(e.to_string().starts_with("rw.toml:14:3: "), "{e}");
    }

    #[test]
    fn a_wrong_type_is_refused_saying_what_was_expected() {
        let e = parse("rw.toml", TWO.replace("clients = 20", "clients = \"many\"")).unwrap_err();
        assert_eq!(e.at.map(|a| a.0), Some(6), "{e}");
        assert!(e.message.contains("invalid type") && e.message.contains("u64"), "{e}");
    }

    #[test]
    fn impossible_groups_are_refused_at_the_group() {
        let both = TWO.replace("test = \"set\"", "test = \"set\"\nmix = \"get:1\"");
        let e = parse("rw.toml", both).unwrap_err();
        assert_eq!(e.at, Some((9, 1)), "{e}");
        assert!(e.message.starts_with("group 'writers': give exactly one of"), "{e}");
        let twice = TWO.replace("\"writers\"", "\"readers\"");
        assert!(parse("rw.toml", twice).unwrap_err().message.contains("a second group"));
        let none = "[phases]\nduration = \"5s\"\n";
        assert!(parse("rw.toml", none.into()).unwrap_err().message.contains("missing field `groups`"));
        let several = TWO.replace("test = \"get\"", "test = \"get,set\"");
        assert!(parse("rw.toml", several).unwrap_err().message.contains("a mix"));
    }

    #[test]
    fn a_command_line_prints_as_the_file_it_stands_for() {
        let args: Vec<String> =
            ["-p", "7000", "-c", "5", "--rps", "500", "-t", "set", "--json", "x", "-a", "pw", "--tls"]
                .map(String::from)
                .to_vec();
        let value = |o: &str| ["-p", "-c", "--rps", "-t", "--json", "-a"].contains(&o);
        let toml = of_args(&args, &value).unwrap();
        assert!(
            toml.starts_with("# Not in the file: give them on the command line: --json x -a\n"),
            "{toml}"
        );
        assert!(!toml.contains("pw"), "{toml}");
        let back = parse("p.toml", toml.lines().skip(1).collect::<Vec<_>>().join("\n")).unwrap();
        let none = |_: &str| false;
        assert_eq!(back.base_args(&none), ["-p", "7000", "--tls"]);
        assert_eq!(back.group_args(0, &none), ["-c", "5", "-t", "set", "--rps", "500"]);
        let command: Vec<String> = ["-n", "10", "INCR", "-x"].map(String::from).to_vec();
        let toml = of_args(&command, &|o| o == "-n").unwrap();
        assert!(toml.contains("name = \"incr\"") && toml.contains("command = [\"INCR\", \"-x\"]"), "{toml}");
        assert!(of_args(&[], &none).unwrap_err().to_string().contains("the default suite"));
    }

    #[test]
    fn a_cache_aside_group_reads_with_get_and_sets_what_missed() {
        let text = "[[groups]]\nname = \"cache\"\nkind = \"cache-aside\"\nkeyspace = 1000\nttl = \"60\"\n";
        let s = parse("c.toml", text.into()).unwrap();
        let none = |_: &str| false;
        assert_eq!(
            s.group_args(0, &none),
            ["-r", "1000", "--expiry-range", "60", "--cache-aside", "-t", "get"]
        );
        let e = parse("c.toml", text.replace("cache-aside", "write-behind")).unwrap_err();
        assert!(e.message.contains("unknown kind 'write-behind'"), "{e}");
        let e = parse("c.toml", format!("{text}mix = \"get:1\"\n")).unwrap_err();
        assert!(e.message.contains("GET alone"), "{e}");
        let args: Vec<String> =
            ["-t", "get", "--cache-aside", "--expiry-range", "60"].map(String::from).to_vec();
        let toml = of_args(&args, &|o| o == "-t" || o == "--expiry-range").unwrap();
        assert!(toml.contains("kind = \"cache-aside\"") && toml.contains("ttl = \"60\""), "{toml}");
    }

    #[test]
    fn a_file_too_large_or_missing_is_refused_by_name() {
        let e = read("/nonexistent/x.toml").unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.toml: cannot open"), "{e}");
    }
}
