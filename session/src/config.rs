//! A run's configuration: plain data, checked once from the options by the command line. What
//! is made or found from it later (the TLS client configuration, the nodes of a cluster) is the
//! session's.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use respbench_core::dist::{KeyDist, ValueSize};
use respbench_core::Endpoint;

/// Output style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The full report, as redis-benchmark prints it.
    Verbose,
    /// `-q`: one line per test.
    Quiet,
    /// `--csv`.
    Csv,
}

/// Which backend drives the connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// mio event loops (`--backend mio`, the default).
    Mio,
    /// smol tasks.
    Smol,
    /// io_uring (Linux).
    Uring,
}

impl Backend {
    /// The name `--backend` takes.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Mio => "mio",
            Backend::Smol => "smol",
            Backend::Uring => "uring",
        }
    }
}

/// `--rfr`: which nodes serve the requests when there are replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rfr {
    /// The primaries only.
    No,
    /// The replicas only.
    Yes,
    /// Primaries and replicas.
    All,
}

impl Rfr {
    /// The value `--rfr` takes.
    pub fn name(self) -> &'static str {
        match self {
            Rfr::No => "no",
            Rfr::Yes => "yes",
            Rfr::All => "all",
        }
    }
}

/// The replicas of a standalone primary: `--replicas auto` or `--replica HOST:PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replicas {
    /// Neither option: no replicas (or, with `--cluster`, the cluster's own).
    None,
    /// `--replicas auto`: the ones the primary reports.
    Auto,
    /// `--replica`, each as given.
    Listed(Vec<Endpoint>),
}

/// The most of a `--dataset` file read by default: 1 GiB.
pub const DATASET_MAX_BYTES: u64 = 1 << 30;

/// The checked configuration of a run.
#[derive(Clone, Debug)]
pub struct Config {
    /// `-h`/`-p`, or `-s`.
    pub endpoint: Endpoint,
    /// `--cluster`.
    pub cluster: bool,
    /// `--rfr`, or its default (yes with `--replicas`/`--replica`, else no).
    pub rfr: Rfr,
    /// `--replicas auto` or `--replica`.
    pub replicas: Replicas,
    /// `--tls` (or a `rediss://` URI): the TLS options; the session makes the client
    /// configuration from them once ([`crate::tls_client`]).
    pub tls: Option<TlsOptions>,
    /// `--user`.
    pub user: Option<String>,
    /// `-a`.
    pub password: Option<String>,
    /// `--dbnum`.
    pub db: u32,
    /// `-c`: connections.
    pub clients: usize,
    /// `-n`: requests per test.
    pub requests: u64,
    /// `-d`'s fixed size, or the largest size of a range or list.
    pub datasize: usize,
    /// `-d` as given: fixed, a range or a weighted list.
    pub values: ValueSize,
    /// `--key-dist` (uniform without it).
    pub key_dist: KeyDist,
    /// `--key-prefix` (empty without it).
    pub key_prefix: String,
    /// `-3`: RESP3 (`HELLO 3`).
    pub resp3: bool,
    /// `--threads`: event loops (0: one).
    pub threads: usize,
    /// `--mptcp` (valkey-benchmark 9): every TCP connection, the startup one too, is a Linux
    /// MPTCP socket.
    pub mptcp: bool,
    /// `--enable-tracking`.
    pub tracking: bool,
    /// `-k`: keep connections alive.
    pub keepalive: bool,
    /// `--reconnect-every N` (memtier's `--reconnect-interval`): each connection closes and
    /// opens again after N requests, all answered ([`respbench_core::ConnConfig::reconnect_every`]).
    pub reconnect_every: Option<u64>,
    /// `-r`: the keyspace (`None`: literal keys).
    pub keyspace: Option<u64>,
    /// `-P`: requests in flight per client.
    pub pipeline: u32,
    /// `--pipeline-mode`: `-P`'s requests in batches (redis-benchmark's) or as a window.
    pub pipeline_mode: respbench_core::PipelineMode,
    /// The report's format.
    pub output: Output,
    /// `--precision`: significant figures of the histograms.
    pub precision: u8,
    /// `-l`: run the suite forever.
    pub repeat: bool,
    /// `--preload`: write the keys a read test reads first.
    pub preload: bool,
    /// `--dataset-shape`: the data built before the tests, shape by shape.
    pub dataset_shapes: Vec<crate::dataset::Shape>,
    /// `--dataset-only`: build the shapes and report them, no test.
    pub dataset_only: bool,
    /// `--miss-ok`: reads that mostly missed are not flagged.
    pub miss_ok: bool,
    /// The steps of a sweep (`-d`, `-c`, `-P`, `--threads` lists); one value each without.
    pub sweep: Sweep,
    /// `-t`, as given.
    pub tests: Option<String>,
    /// `-I`: idle connections.
    pub idle: bool,
    /// `-x`: the last argument from standard input.
    pub stdin_arg: bool,
    /// `--seed` (or the clock's).
    pub seed: u64,
    /// `-e`: print the server's error replies.
    pub show_errors: bool,
    /// `--no-server-probe`: respbench reads none of the server's counters (no `INFO`), so the
    /// verdict goes without the server's side.
    pub no_server_probe: bool,
    /// `--server-interval`: how often the server's `INFO` is sampled while a test runs (#51;
    /// `--no-server-probe` samples nothing).
    pub server_interval: std::time::Duration,
    /// `--num-functions`: the functions of the library `-t function_load` loads.
    pub num_functions: u32,
    /// `--num-keys-in-fcall`: the keys `-t fcall` passes.
    pub num_keys_in_fcall: u32,
    /// The default suite (no `-t`) is valkey-benchmark 9's, which ends with `function_load` and
    /// `fcall`: respbench runs under the name `valkey-benchmark`. Otherwise it is
    /// redis-benchmark 7's.
    pub valkey_suite: bool,
    /// `--dataset FILE` (valkey-benchmark 9): a CSV or TSV file whose rows fill the custom
    /// command's `__field:NAME__` placeholders, one row per request.
    pub dataset: Option<String>,
    /// `--maxdocs N`: read at most N rows of the dataset (0: all).
    pub maxdocs: usize,
    /// `--dataset-max-bytes N`: the most of the dataset file read (default [`DATASET_MAX_BYTES`]).
    pub dataset_max_bytes: u64,
    /// `--xml-root-element NAME`: an XML dataset's document element.
    pub xml_root_element: Option<String>,
    /// The custom command and its arguments, as bytes: an argument need not be UTF-8 (empty:
    /// the default suite).
    pub command: Vec<Vec<u8>>,
    /// The backends to run each test on, in order (one, unless comparing).
    pub backends: Vec<Backend>,
    /// `--uring-sqpoll`: the io_uring backend's rings have a submission-polling kernel thread.
    #[cfg_attr(not(all(feature = "uring", target_os = "linux")), allow(dead_code))]
    pub uring_sqpoll: bool,
    /// `--json`: where to write the JSON document; `-` is stdout.
    pub json: Option<String>,
    /// `--timeout`: how long a request may wait for its reply; `None` is forever.
    pub timeout: Option<Duration>,
    /// `--connect-timeout`: how long a connect may take (memtier's `--connection-timeout`);
    /// `None`: as long as the kernel tries (the startup connection: `--timeout` or 5 s).
    pub connect_timeout: Option<Duration>,
    /// `--drain-grace`: after a test's stop, how long requests in flight may take to be answered.
    pub drain_grace: Duration,
    /// `--reconnect`: failed connections come back.
    pub reconnect: bool,
    /// `--reconnect-backoff`, `--reconnect-factor`, `--reconnect-attempts`: how `--reconnect`
    /// paces a connection's attempts (10 ms doubling up to 1 s, no limit, without them).
    pub reconnect_backoff: respbench_core::Backoff,
    /// `--sentinel`, `--sentinel-master`: the primary is asked of a Sentinel.
    pub sentinel: Option<crate::sentinel::Sentinel>,
    /// `--retry-on` and its options: error replies after which a request is sent again.
    pub retry: Option<crate::retry::Settings>,
    /// Rate, time and mix options.
    pub open: OpenLoopConfig,
    /// `--worker`: the whole run this process does a share of (`None`: all of it).
    pub split: Option<Split>,
    /// `--start-at`: when the measured window begins.
    pub start_at: Option<StartAt>,
    /// `--key-args`: the custom command's key arguments (1 is the first after its name).
    pub key_args: Option<Vec<usize>>,
    /// `--slo`: a capacity search instead of the `--rps` steps.
    pub capacity: Option<crate::slo::Settings>,
    /// `--replay FILE`: the test replays a capture instead.
    pub replay: Option<crate::replayed::Settings>,
    /// `respbench capture`: record the server's traffic instead of running tests.
    pub capture: Option<crate::replayed::CaptureSettings>,
    /// `--ab HOST:PORT`: a second target, run in turn with the first (see [`crate::sides`]).
    pub ab: Option<Endpoint>,
    /// `--at`, `--at-node`: events during each test.
    pub events: crate::event::Events,
    /// `--metrics` (or `--prometheus-port`): the live metrics endpoint.
    pub metrics: Option<Metrics>,
    /// `--verify`, `--verify-only` (see `crate::verify`).
    pub verify: Verification,
    /// Run as memtier_benchmark (see [`crate::memtier`]): its outputs replace redis-benchmark's.
    pub memtier: Option<crate::memtier::Memtier>,
    /// `respbench run FILE.toml`: the scenario's client groups, which run at the same time, each
    /// checked from the options it stands for as a command line is; empty: the command line is
    /// the run's one group.
    pub groups: Vec<Group>,
    /// The scenario file the run was read from: its name and text.
    pub scenario: Option<(String, String)>,
}

/// A client group of a scenario: its name and its configuration (the file's connection and
/// phases, then its own options).
#[derive(Clone, Debug)]
pub struct Group {
    /// Its name (`readers`).
    pub name: String,
    /// Where the file defines it (`rw.toml:9:1`), for the session's errors about it.
    pub at: String,
    /// Its options, checked.
    pub cfg: Config,
    /// Its latency objectives (`slo`), judged at its own rate: its verdict (empty: none).
    pub slo: Vec<crate::slo::Objective>,
}

/// Whether the replies are checked against values that encode their key and version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verification {
    /// Neither option.
    #[default]
    Off,
    /// `--verify`: SETs write values that encode their key and version, GETs are checked.
    On,
    /// `--verify-only`: every key of `-r` read once and checked, versions unknown.
    Only,
}

/// The values of the options that take lists: each combination is one step, run in order,
/// `--threads` varying fastest, then `-P`, `-c` and `-d`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// `-d`: each a value size (fixed, range or weighted).
    pub datasizes: Vec<ValueSize>,
    /// `-c`.
    pub clients: Vec<usize>,
    /// `-P`, at least 1 each.
    pub pipelines: Vec<u32>,
    /// `--threads`.
    pub threads: Vec<usize>,
    /// `--repeat`: runs of each combination.
    pub repeat: usize,
}

/// One combination of a [`Sweep`].
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// `-d`.
    pub values: ValueSize,
    /// `-c`.
    pub clients: usize,
    /// `-P`.
    pub pipeline: u32,
    /// `--threads`.
    pub threads: usize,
    /// Which run of the combination (`--repeat`), from 0.
    pub run: usize,
}

impl Sweep {
    /// Whether any option took more than one value, or runs repeat.
    pub fn is_sweep(&self) -> bool {
        self.datasizes.len() > 1
            || self.clients.len() > 1
            || self.pipelines.len() > 1
            || self.threads.len() > 1
            || self.repeat > 1
    }

    /// What tells `step` apart from the sweep's other steps: the options that take several
    /// values, as given (`-d 128 -c 100`).
    pub fn label(&self, step: &Step) -> String {
        let mut parts = Vec::new();
        if self.datasizes.len() > 1 {
            parts.push(format!("-d {}", step.values));
        }
        if self.clients.len() > 1 {
            parts.push(format!("-c {}", step.clients));
        }
        if self.pipelines.len() > 1 {
            parts.push(format!("-P {}", step.pipeline));
        }
        if self.threads.len() > 1 {
            parts.push(format!("--threads {}", step.threads));
        }
        if self.repeat > 1 {
            parts.push(format!("run {}/{}", step.run + 1, self.repeat));
        }
        parts.join(" ")
    }

    /// Every combination, in order.
    pub fn steps(&self) -> Vec<Step> {
        let mut out = Vec::new();
        for values in &self.datasizes {
            for &clients in &self.clients {
                for &pipeline in &self.pipelines {
                    for &threads in &self.threads {
                        for run in 0..self.repeat.max(1) {
                            out.push(Step { values: values.clone(), clients, pipeline, threads, run });
                        }
                    }
                }
            }
        }
        out
    }
}

impl Config {
    /// The capacity search the run makes: `--slo`'s, or a scenario's searched group's.
    pub fn searched(&self) -> Option<&crate::slo::Settings> {
        self.capacity.as_ref().or_else(|| self.groups.iter().find_map(|g| g.cfg.capacity.as_ref()))
    }

    /// The target rate a ramp's test as a whole was asked for, given the test's `rate`: the mean
    /// of its steps' (a rate ramp's levels; a clients ramp's share of `--rps` by its clients).
    pub fn ramp_target(&self, rate: Option<u64>) -> Option<u64> {
        use respbench_core::RampKind;
        let Some(r) = self.open.ramp else { return rate };
        let n = r.steps().max(1) as u128;
        let sum: u128 = match r.kind {
            RampKind::Rps => (0..r.steps()).map(|k| r.level(k) as u128).sum(),
            RampKind::Clients => {
                let rate = rate? as u128;
                (0..r.steps()).map(|k| rate * r.level(k) as u128 / r.to.max(1) as u128).sum()
            }
        };
        u64::try_from(sum / n).ok()
    }

    /// `--ramp`: checks it against the other options and makes the run one test that holds the
    /// ramp: `-c` (a clients ramp) or `--rps` (a rate ramp) become the ramp's last level, and
    /// `--duration`, unless given, its steps' length. `given`: which of the options a ramp does
    /// not go with (`-n`, `--slo`, `--worker`) the command line was given. `ramp` is the
    /// option's value as [`crate::syntax::ramp`] read it.
    pub fn apply_ramp(
        &mut self,
        ramp: Option<respbench_core::Ramp>,
        given: &[(&'static str, bool)],
    ) -> Result<(), OptionError> {
        use respbench_core::RampKind;
        let Some(r) = ramp else { return Ok(()) };
        let why = "a ramp is one test whose level rises; a list makes a test per value";
        if self.idle {
            return Err(OptionError::Conflict("--ramp", "-I", "idle mode sends nothing to ramp"));
        }
        if let Some(&(name, _)) = given.iter().find(|(_, g)| *g) {
            let why = match name {
                "-n" => "a ramp runs for its steps' length (or --duration)",
                "--slo" => "a capacity search runs its own steps",
                "--worker" => "a ramp's levels are the whole run's, not a worker's share",
                _ => "",
            };
            return Err(OptionError::Conflict("--ramp", name, why));
        }
        if !self.keepalive {
            return Err(OptionError::Conflict("--ramp", "-k 0", "a ramp keeps its connections open"));
        }
        if !self.open.warmup.is_zero() {
            return Err(OptionError::Conflict("--ramp", "--warmup", "the ramp's first step is its warm-up"));
        }
        if self.replay.is_some() {
            return Err(OptionError::Conflict("--ramp", "--replay", "a replay keeps its recorded pace"));
        }
        if self.sweep.is_sweep() || self.open.rates.len() > 1 {
            return Err(OptionError::Conflict(
                "--ramp",
                "a list (-c, -d, -P, --threads, --rps, --repeat)",
                why,
            ));
        }
        match r.kind {
            RampKind::Clients => {
                self.clients = r.to as usize;
                self.sweep.clients = vec![r.to as usize];
            }
            RampKind::Rps => {
                if !self.open.rates.is_empty() {
                    return Err(OptionError::Conflict("--ramp rps", "--rps", "the ramp gives the rates"));
                }
                self.open.rates = vec![r.to];
            }
        }
        if self.open.rates.is_empty() && (self.open.poisson || self.open.slack.is_some()) {
            return Err("--arrival poisson and --rps-slack need a target rate (--rps, or --ramp rps)".into());
        }
        let every = u32::try_from(r.steps()).ok().and_then(|n| r.every.checked_mul(n));
        self.open.duration = self.open.duration.or(every);
        self.open.ramp = Some(r);
        Ok(())
    }

    /// The open loop's wake-up grid at `rate` requests a second (all loops together):
    /// `--rps-slack`; else none while each event loop's share is at most
    /// [`respbench_core::OpenLoop::EXACT_UP_TO`] a second (the grid would save no wake-ups),
    /// and above that [`respbench_core::OpenLoop::DEFAULT_SLACK`], or a twentieth of the
    /// tightest latency objective of a capacity search (`--slo`) when that is less: a step's
    /// requests may go out up to this late, and that lateness is in the latency an objective
    /// judges (250 µs against `p99<=1ms` moved the simulated M/D/1 answer from 0.78 to 0.68 of
    /// the capacity).
    pub fn open_slack(&self, rate: u64) -> Duration {
        if let Some(s) = self.open.slack {
            return s;
        }
        let loops = respbench_driver::loops(self.threads, self.clients) as u64;
        if rate / loops <= respbench_core::OpenLoop::EXACT_UP_TO {
            return Duration::ZERO;
        }
        let tightest =
            self.capacity.iter().flat_map(|c| &c.objectives).map(|o| o.limit_us).fold(f64::MAX, f64::min);
        let slo_share = Duration::from_secs_f64((tightest / 20.0 / 1e6).clamp(0.0, 1.0));
        respbench_core::OpenLoop::DEFAULT_SLACK.min(slo_share)
    }

    /// This configuration at `step`.
    pub fn at(&self, step: &Step) -> Config {
        let mut c = self.clone();
        c.datasize = step.values.max();
        c.values = step.values.clone();
        c.clients = step.clients;
        c.pipeline = step.pipeline;
        c.threads = step.threads;
        c
    }
}

/// The options beyond redis-benchmark's: target rates, time-based runs, warmup, mixes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpenLoopConfig {
    /// `--subscribers`: a delivery test's (`-t pubsub`) subscribers, one step each (empty: 1).
    pub subscribers: Vec<usize>,
    /// `--channels`: `-t pubsub` publishes to this many channels in turn, each subscriber
    /// subscribed to all (0 or 1: the one channel).
    pub channels: u64,
    /// `--rps`: one step per rate; empty is closed loop.
    pub rates: Vec<u64>,
    /// The rate was given as redis-benchmark 8's `--rate`: the text keeps redis-benchmark's
    /// shape (`-q` prints each test's line, no table of rates).
    pub as_rate: bool,
    /// `--arrival poisson`.
    pub poisson: bool,
    /// `--rps-slack`: the schedule's wake-up grid; `None` is the default ([`Config::open_slack`]).
    pub slack: Option<Duration>,
    /// `--duration`: each test (each step) runs this long; `None` counts `-n` requests.
    pub duration: Option<Duration>,
    /// `--warmup`: results of this first stretch are discarded.
    pub warmup: Duration,
    /// `--mix` test names with weights, in order.
    pub mix: Vec<(String, u64)>,
    /// `--mix-command`: custom commands (arguments) with weights.
    pub mix_commands: Vec<(Vec<Vec<u8>>, u64)>,
    /// `--mix`'s commands' own keys (`get:10@zipf:0.99/10000`), one per command of `mix`;
    /// empty (or `None`) draws from `-r` and `--key-dist`.
    pub mix_keys: Vec<Option<PartKeys>>,
    /// `--mix-command`'s own keys (`'3@zipf/1000 GET k:__rand_int__'`), one per command.
    pub mix_command_keys: Vec<Option<PartKeys>>,
    /// `--expiry-range`: every `SET key value` of the tests carries `EX` or `PX` with a time
    /// drawn from it.
    pub expiry: Option<respbench_core::template::Expiry>,
    /// `--follow-cursor`: the custom SCAN-family command follows the cursors its replies return.
    pub follow_cursor: bool,
    /// `--follow-cursor-limit N`: each walk at most N continuations, then from 0 again (0: to
    /// the end).
    pub follow_cursor_limit: u64,
    /// `--mix-in-turn`: the mix's commands sent in turn, each its weight's times in a row,
    /// instead of drawn at random: one turn shared by the test's clients.
    pub mix_in_turn: bool,
    /// `--mix-in-turn-per-client`: the same, each client on its own turn (memtier's order of
    /// its `--command`s: `MULTI`, a write and `EXEC` go in their order on each connection).
    pub mix_in_turn_per_client: bool,
    /// `--cache-aside`: each GET that misses is followed by a SET of its key (with
    /// `--expiry-range`'s time) on the same connection.
    pub cache_aside: bool,
    /// `--series`: print each test's time series.
    pub show_series: bool,
    /// `--live`: print each second on stderr while a test runs.
    pub live: bool,
    /// `--hlog`: the interval log's path.
    pub hlog: Option<String>,
    /// `--hgrm`: the prefix of each test's percentile-distribution file.
    pub hgrm: Option<String>,
    /// `--statsd`: each second's figures sent to StatsD (see [`crate::statsd`]).
    pub statsd: Option<Statsd>,
    /// `--print-percentiles`: the percentiles the report shows instead of its own (empty: its
    /// own).
    pub percentiles: Vec<f64>,
    /// `--ramp`: the clients or the rate rise step by step within one test (its `start` is
    /// set when the test runs).
    pub ramp: Option<respbench_core::Ramp>,
    /// `-t expiry`'s settings.
    pub expiry_test: ExpiryConfig,
    /// `-t tracking`'s settings.
    pub tracking_test: TrackingConfig,
}

/// `-t tracking`'s mode of `CLIENT TRACKING` (issue #52).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrackingMode {
    /// The server remembers the keys each reader read and invalidates those.
    #[default]
    Default,
    /// `BCAST`: every write under a registered prefix invalidates every reader registered for
    /// it, whether it read the key or not.
    Bcast,
    /// `OPTIN`: only the reads after `CLIENT CACHING yes` are tracked (each reader sends it
    /// before each read).
    Optin,
}

/// `-t tracking`'s settings (issue #52).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrackingConfig {
    /// `--tracking-mode`.
    pub mode: TrackingMode,
    /// `--tracking-prefix`, repeated: `BCAST`'s prefixes, whole key names' starts (empty: the
    /// test's keys, `--key-prefix` then `respbench:tracking:`).
    pub prefixes: Vec<String>,
    /// `--tracking-redirect`: readers speak RESP2 and their invalidations come as
    /// `__redis__:invalidate` messages on a subscribed connection of their own (`REDIRECT`),
    /// where without it they speak RESP3 and read pushes.
    pub redirect: bool,
    /// `--tracking-off N`: the first N readers send `CLIENT TRACKING off` once they have read,
    /// and are to hear nothing after.
    pub off: u64,
}

/// `-t expiry`'s settings (issue #52).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiryConfig {
    /// `--expiry-window`: the timed keys' deadlines spread over this (2 s).
    pub window: Duration,
    /// `--expiry-grace`: how long after a key's deadline its notification is waited for (5 s).
    pub grace: Duration,
    /// `--expiry-volatile`: other keys written first with deadlines a day ahead.
    pub volatile: u64,
    /// `--expiry-persistent`: other keys written first without a deadline.
    pub persistent: u64,
    /// `--set-notify`: turn the server's expired events on (`notify-keyspace-events` plus
    /// `Ex`) for the test and restore the old setting after it.
    pub set_notify: bool,
}

impl Default for ExpiryConfig {
    fn default() -> ExpiryConfig {
        ExpiryConfig {
            window: Duration::from_secs(2),
            grace: Duration::from_secs(5),
            volatile: 0,
            persistent: 0,
            set_notify: false,
        }
    }
}

impl OpenLoopConfig {
    /// Whether a mix replaces the suite.
    pub fn has_mix(&self) -> bool {
        !self.mix.is_empty() || !self.mix_commands.is_empty()
    }

    /// Whether per-second series are kept (time-based or open-loop runs, or asked for).
    pub fn keeps_series(&self) -> bool {
        self.duration.is_some()
            || !self.rates.is_empty()
            || self.show_series
            || self.live
            || self.hlog.is_some()
            || self.statsd.is_some()
    }
}

/// A mix command's own keys (`--mix get:10@zipf:0.99/10000`): its distribution, and its
/// keyspace length (`None`: `-r`'s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PartKeys {
    /// How its keys are drawn.
    pub dist: KeyDist,
    /// How many keys; `None` takes `-r`'s.
    pub n: Option<u64>,
}

/// The TLS options as given, used when `--tls` or a `rediss://` URI turns TLS on.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// `--sni`.
    pub sni: Option<String>,
    /// `--cacert`.
    pub cacert: Option<PathBuf>,
    /// `--cacertdir`.
    pub cacertdir: Option<PathBuf>,
    /// `--insecure`: no certificate check.
    pub insecure: bool,
    /// `--cert`.
    pub cert: Option<PathBuf>,
    /// `--key`.
    pub key: Option<PathBuf>,
    /// `--tls-ciphers` (TLS 1.2).
    pub ciphers: Option<String>,
    /// `--tls-ciphersuites` (TLS 1.3).
    pub ciphersuites: Option<String>,
    /// `--tls-groups`: the key exchange groups, in OpenSSL's list syntax.
    pub groups: Option<String>,
}

impl TlsOptions {
    /// The names of the options given.
    pub fn given(&self) -> Vec<&'static str> {
        [
            ("--sni", self.sni.is_some()),
            ("--cacert", self.cacert.is_some()),
            ("--cacertdir", self.cacertdir.is_some()),
            ("--insecure", self.insecure),
            ("--cert", self.cert.is_some()),
            ("--key", self.key.is_some()),
            ("--tls-ciphers", self.ciphers.is_some()),
            ("--tls-ciphersuites", self.ciphersuites.is_some()),
            ("--tls-groups", self.groups.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// One worker of several: its index (from 0) and how many there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Worker {
    /// This worker, from 0.
    pub index: u64,
    /// How many workers share the run.
    pub count: u64,
}

/// What the whole run was, of which a worker does its share: the JSON's `config` records these,
/// the same on every worker, and the shares under `worker`.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// This worker.
    pub worker: Worker,
    /// `-n` of the whole run.
    pub requests: u64,
    /// `-c` of the whole run (a list when it sweeps).
    pub clients: Vec<usize>,
    /// `--rps` of the whole run.
    pub rates: Vec<u64>,
    /// `--seed` of the whole run (or the clock's).
    pub seed: u64,
    /// This worker's part of the `-r` keyspace, the first key and how many: what
    /// `--key-dist sequential` and `--preload` go over.
    pub keys: Option<(u64, u64)>,
}

/// `--start-at`: when the measured window begins, in microseconds since the Unix epoch, and the
/// text given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartAt {
    /// Microseconds since the Unix epoch.
    pub unix_us: u64,
    /// As given.
    pub text: String,
}

/// Where the metrics endpoint listens, and how long it lingers after the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metrics {
    /// The address to bind (`--metrics`, or 127.0.0.1 and `--prometheus-port`).
    pub addr: std::net::SocketAddr,
    /// As given, for messages (`--metrics 127.0.0.1:9100`).
    pub given: String,
    /// After the run, how long the endpoint waits for a scrape that serves the final figures
    /// (zero: it closes at once).
    pub linger: Duration,
}

/// Where the seconds go and how their metrics are named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statsd {
    /// The StatsD server's host, as given (a name or an address).
    pub host: String,
    /// Its UDP port.
    pub port: u16,
    /// The metric names' first part, as memtier sanitizes it (letters, digits, `_`, `-`, `.`;
    /// anything else `_`); empty: the names start with the label.
    pub prefix: String,
    /// The run's label, as memtier sanitizes it (letters, digits, `_`, `-`).
    pub label: String,
    /// `--graphite-port`: Graphite's HTTP port on the same host, where each test's start and
    /// end are POSTed as event annotations; `None`: no annotations.
    pub graphite_port: Option<u16>,
}

impl Statsd {
    /// What each metric's name starts with: `PREFIX.LABEL.`, or `LABEL.` with no prefix.
    pub fn name_start(&self) -> String {
        match self.prefix.is_empty() {
            true => format!("{}.", self.label),
            false => format!("{}.{}.", self.prefix, self.label),
        }
    }
}

/// Why the options make no run: the command line's check of its options into a [`Config`] (and of
/// the session's parts of it) fails with one, and prints it before the pointer to `--help`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum OptionError {
    /// A value an option does not take.
    Invalid {
        /// The option (`--rps`).
        option: &'static str,
        /// The value given.
        value: String,
        /// Why, and what the option takes.
        why: String,
    },
    /// Two options that cannot go together: the first, the second, and what to do instead
    /// (empty when there is nothing to say).
    Conflict(&'static str, &'static str, &'static str),
    /// An argument that is not UTF-8 where text is needed.
    NotText {
        /// The option it is the value of; `None` for an argument of its own.
        option: Option<String>,
        /// The argument, shown escaped.
        value: String,
    },
    /// Anything else the options cannot ask for (an option that needs another, a limit): the
    /// reason.
    Refused(String),
    /// `--worker`, `--start-at`, or the run's split over the workers.
    Worker(WorkerError),
    /// The capacity search's settings (`--slo` and its options).
    Slo(crate::slo::SloError),
    /// `--dataset-shape` (a description, or the shapes together) or `--dataset-only`.
    Shape(crate::dataset::ShapeError),
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionError::Invalid { option, value, why } => {
                write!(f, "invalid value '{value}' for {option}: {why}")
            }
            OptionError::Conflict(first, second, "") => write!(f, "{first} and {second} conflict"),
            OptionError::Conflict(first, second, why) => write!(f, "{first} and {second} conflict: {why}"),
            OptionError::NotText { option: Some(option), value } => {
                write!(f, "{option}: the value {value} is not UTF-8, and {option} takes text")
            }
            OptionError::NotText { option: None, value } => {
                write!(f, "the argument {value} is not UTF-8, and only a command's arguments may be bytes")
            }
            OptionError::Refused(why) => f.write_str(why),
            OptionError::Worker(e) => e.fmt(f),
            OptionError::Slo(e) => e.fmt(f),
            OptionError::Shape(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for OptionError {}

impl From<String> for OptionError {
    fn from(why: String) -> OptionError {
        OptionError::Refused(why)
    }
}

impl From<WorkerError> for OptionError {
    fn from(e: WorkerError) -> OptionError {
        OptionError::Worker(e)
    }
}

impl From<crate::dataset::ShapeError> for OptionError {
    fn from(e: crate::dataset::ShapeError) -> OptionError {
        OptionError::Shape(e)
    }
}

impl From<crate::slo::SloError> for OptionError {
    fn from(e: crate::slo::SloError) -> OptionError {
        OptionError::Slo(e)
    }
}

impl From<crate::event::EventError> for OptionError {
    fn from(e: crate::event::EventError) -> OptionError {
        OptionError::Refused(e.to_string())
    }
}

impl From<&str> for OptionError {
    fn from(why: &str) -> OptionError {
        OptionError::Refused(why.to_string())
    }
}

/// The most workers one run may be split over.
pub(crate) const MAX_WORKERS: u64 = 100_000;

/// Why a worker, `--worker`, `--start-at` or a run's split over workers is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerError {
    /// The count of workers is not 1 to 100000.
    Count,
    /// The index is not below the count.
    Index {
        /// The index given.
        index: u64,
        /// The count of workers.
        count: u64,
    },
    /// A value `--worker` or `--start-at` does not take.
    Invalid {
        /// The option.
        option: &'static str,
        /// The value given.
        value: String,
        /// Why, and what it takes.
        why: String,
    },
    /// A `-c` that gives the workers fewer than one connection each.
    FewerClients {
        /// The worker.
        worker: Worker,
        /// The whole run's `-c`.
        clients: usize,
    },
    /// An `--rps` that gives the workers less than one request per second each.
    LowerRate {
        /// The worker.
        worker: Worker,
        /// The whole run's rate.
        rate: u64,
    },
    /// A delivery test (`-t pubsub`, `blpop`, `xreadgroup`), which workers cannot share yet.
    Delivery {
        /// The worker.
        worker: Worker,
        /// The test.
        test: &'static str,
    },
    /// Fewer keys than workers, where each needs keys of its own.
    FewerKeys {
        /// The worker.
        worker: Worker,
        /// What needs them: `--preload` or `--key-dist sequential`.
        by: &'static str,
        /// `-r`.
        keys: u64,
    },
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerError::Count => write!(f, "the count of workers must be 1 to {MAX_WORKERS}"),
            WorkerError::Index { index, count } => {
                write!(f, "the index counts from 0, so worker {index} of {count} does not exist")
            }
            WorkerError::Invalid { option, value, why } => write!(f, "invalid value '{value}' for {option}: {why}"),
            WorkerError::FewerClients { worker: Worker { index, count }, clients } => write!(
                f,
                "--worker {index}/{count}: -c {clients} gives {count} workers fewer than one connection each; give \
                 -c {count} or more (-c is the whole run's, divided among the workers)"
            ),
            WorkerError::LowerRate { worker: Worker { index, count }, rate } => write!(
                f,
                "--worker {index}/{count}: --rps {rate} gives {count} workers less than one request per second \
                 each (--rps is the whole run's, divided among the workers)"
            ),
            WorkerError::Delivery { worker: Worker { index, count }, test } => write!(
                f,
                "--worker {index}/{count} with -t {test}: not yet: every worker's subscribers would hear every \
                 worker's publishers while each counts against its own publishes only; run it from one process"
            ),
            WorkerError::FewerKeys { worker: Worker { index, count }, by, keys } => write!(
                f,
                "--worker {index}/{count}: {by} over -r {keys} keys leaves some of {count} workers no key; give \
                 -r {count} or more"
            ),
        }
    }
}

impl std::error::Error for WorkerError {}
