//! The tests of a run: the default suite restricted by `-t`, a custom command or a mix, and what
//! `--preload` writes before each.

use std::io::Read;
use std::sync::Arc;

use respbench_core::dataset::{delimiter_for, has_fields, Dataset};
use respbench_core::suite::{custom_with_data, default_suite, Selection, TestSpec, DATA};
use respbench_core::template::Template;
use respbench_core::{Mix, Stats};

use crate::config::{Backend, Config};
use crate::cpu::ClientCpu;
use crate::error::Error;
use crate::input::ReadError;
use crate::result::{command_text, TestResult};
use crate::stop::StopHandle;

/// One test of the run: a request (or a mix of them) and how it is titled.
pub struct Case {
    /// The test.
    pub spec: TestSpec,
    /// A mix: its commands, their titles and the text of the mix.
    pub mix: Option<(Mix, Vec<String>)>,
    /// A replay (`--replay`): its mix is the capture's busiest commands, which its records name.
    pub replay: Option<Arc<crate::replay::Replay>>,
    /// A delivery test (`-t pubsub`, `-t blpop`): its subscribers or waiters, one of
    /// `--subscribers`' list (`None`: the list's first, or 1).
    pub subscribers: Option<usize>,
    /// Its title with each custom command cut to its name ([`command_name`]): what names it
    /// where the title's arguments must not go (`--metrics`' labels, served to whoever asks).
    pub label: String,
}

/// The name of a custom command from its first argument: upper case, printable ASCII, at most
/// 64 characters (`SET` of `set apikey TOKEN`); never one of its arguments.
pub fn command_name(first: &[u8]) -> String {
    first.iter().filter(|b| b.is_ascii_graphic()).take(64).map(|b| b.to_ascii_uppercase() as char).collect()
}

impl Case {
    /// A delivery test's subscribers or waiters, a socket each beside the test's connections
    /// (0 for any other test).
    pub fn listeners(&self, cfg: &Config) -> usize {
        match self.spec.template.stamp_at() {
            Some(_) => self.subscribers.or(cfg.open.subscribers.first().copied()).unwrap_or(1),
            None => 0,
        }
    }

    /// The templates its requests are made from: the test's, or each command of its mix.
    pub fn templates(&self) -> Vec<&Template> {
        match &self.mix {
            // Its commands are the capture's, routed by their own keys.
            Some(_) if self.replay.is_some() => Vec::new(),
            Some((m, _)) => m.templates().iter().collect(),
            None => vec![&self.spec.template],
        }
    }

    /// Every title this case reports under.
    pub fn titles(&self) -> Vec<&str> {
        let mut t: Vec<&str> =
            self.mix.iter().flat_map(|(_, titles)| titles.iter().map(String::as_str)).collect();
        t.push(&self.spec.title);
        t
    }

    /// The entries a run of this case reports: each command of a mix on its own, then the total.
    pub(crate) fn entries(
        &self,
        backend: Backend,
        cpu: ClientCpu,
        rate: Option<u64>,
        slack: Option<std::time::Duration>,
        mut stats: Stats,
    ) -> Vec<TestResult> {
        let mut out = Vec::new();
        if let Some((mix, titles)) = &self.mix {
            for ((part, title), template) in stats.parts.drain(..).zip(titles).zip(mix.templates()) {
                out.push(TestResult {
                    backend: Some(backend.name().to_string()),
                    ..TestResult::new(title.clone(), command_text(&template.display()), part)
                });
            }
        }
        out.push(TestResult {
            backend: Some(backend.name().to_string()),
            cpu: Some(cpu),
            target_rps: rate,
            slack,
            replay: self.replay.as_ref().map(|r| r.figures(&stats)),
            ..TestResult::new(self.spec.title.clone(), command_text(&self.spec.template.display()), stats)
        });
        out
    }
}

/// How many writes `--preload` keeps in flight per connection (more when `-P` says so).
pub(crate) const PRELOAD_PIPELINE: u32 = 64;

/// What `--preload` writes before `case`: SET of the key pattern a `GET` reads, with the `-d`
/// values, for the suite's GET, a custom `GET key`, or a mix holding one; `None` for a test
/// that reads no string key.
pub fn preload_case(cfg: &Config, case: &Case) -> Option<Case> {
    let spec = match &case.mix {
        Some((mix, _)) => mix.templates().iter().find_map(|t| respbench_core::suite::preload(t, &cfg.values)),
        None => respbench_core::suite::preload(&case.spec.template, &cfg.values),
    }?;
    let label = spec.title.split(' ').next().unwrap_or_default().to_string();
    Some(Case { spec, mix: None, replay: None, subscribers: None, label })
}

/// Whether [`preload_case`] has something for `case`, without making its values.
pub fn preloadable(case: &Case) -> bool {
    match &case.mix {
        Some((mix, _)) => mix.templates().iter().any(respbench_core::suite::preloadable),
        None => respbench_core::suite::preloadable(&case.spec.template),
    }
}

/// The tests to run: a mix, the custom command, or the default suite restricted by `-t`.
/// `warn` hears what is ignored; `stop` ends the read of a `--dataset`.
pub fn cases(cfg: &Config, stop: &StopHandle, warn: &mut dyn FnMut(&str)) -> Result<Vec<Case>, Error> {
    let cases = all_cases(cfg, stop, warn)?;
    // `--verify`: each test's commands must be ones it can check, said before connecting.
    for case in &cases {
        crate::verify::for_test(cfg, &case.templates())?;
        crate::cache_aside::for_test(cfg, &case.spec.title, &case.spec.template, case.mix.is_some())?;
    }
    if cfg.open.expiry.is_some()
        && !cfg.open.cache_aside
        && !cases.iter().flat_map(Case::templates).any(|t| t.expiry().is_some())
    {
        warn("WARNING: --expiry-range: no test sends SET key value, so nothing carries an expiry.");
    }
    Ok(cases)
}

/// [`cases`], before the expiry is checked.
fn all_cases(cfg: &Config, stop: &StopHandle, warn: &mut dyn FnMut(&str)) -> Result<Vec<Case>, Error> {
    if let Some(s) = &cfg.replay {
        return Ok(vec![replay_case(cfg, s)?]);
    }
    if let Some(n) = cfg.reconnect_every {
        let clash = [
            (n == 0, "0 (give at least 1)"),
            (!cfg.open.rates.is_empty() || cfg.capacity.is_some(), "--rps or --slo (a closed loop only)"),
            (!cfg.keepalive, "-k 0"),
            (cfg.cluster, "--cluster (a client over several nodes keeps its connections)"),
            (cfg.replay.is_some(), "--replay"),
            (cfg.idle, "-I"),
        ];
        if let Some((_, what)) = clash.iter().find(|(on, _)| *on) {
            return Err(Error::Tests(format!("--reconnect-every: not with {what}")));
        }
    }
    if cfg.open.mix_in_turn && cfg.open.mix_in_turn_per_client {
        return Err(Error::Tests("--mix-in-turn and --mix-in-turn-per-client: give one".into()));
    }
    if (cfg.open.mix_in_turn || cfg.open.mix_in_turn_per_client) && !cfg.open.has_mix() {
        let option = if cfg.open.mix_in_turn { "--mix-in-turn" } else { "--mix-in-turn-per-client" };
        return Err(Error::Tests(format!("{option} needs --mix or --mix-command")));
    }
    if cfg.open.follow_cursor_limit > 0 && !cfg.open.follow_cursor {
        return Err(Error::Tests("--follow-cursor-limit needs --follow-cursor".into()));
    }
    if cfg.open.follow_cursor {
        let (spec, mix, titles) = crate::cursor::test(cfg)?;
        let label = command_name(&cfg.command[0]);
        return Ok(vec![Case { spec, mix: Some((mix, titles)), replay: None, subscribers: None, label }]);
    }
    let dataset = dataset(cfg, stop)?;
    if cfg.open.has_mix() {
        if dataset.is_some() {
            return Err(Error::Tests("--dataset fills a custom command, not a --mix".into()));
        }
        return Ok(vec![mix_case(cfg)?]);
    }
    if cfg.command.iter().any(|a| a == b";") {
        if cfg.tests.is_some() {
            warn("WARNING: Option -t is ignored.");
        }
        return Ok(vec![sequence_case(cfg, dataset.as_ref())?]);
    }
    let mut cases = Vec::new();
    let custom = cfg.command.first().map(|name| command_name(name));
    for mut spec in tests(cfg, dataset.as_ref(), warn)? {
        if let Some(e) = cfg.open.expiry {
            with_expiry(&mut spec, e);
        }
        if cfg.cluster && spec.title == respbench_core::suite::PUBSUB_TITLE {
            // Sharded pub/sub: SPUBLISH, routed by the channel's slot.
            spec = respbench_core::suite::sharded_pubsub(&cfg.key_prefix, cfg.datasize);
        } else if cfg.open.channels > 1 && spec.title == respbench_core::suite::PUBSUB_TITLE {
            spec = respbench_core::suite::pubsub_channels(&cfg.key_prefix, cfg.open.channels, cfg.datasize);
        }
        let counts = &cfg.open.subscribers;
        if spec.template.stamp_at().is_none() || counts.len() < 2 {
            let label = custom.clone().unwrap_or_else(|| spec.title.clone());
            cases.push(Case { spec, mix: None, replay: None, subscribers: None, label });
            continue;
        }
        // A list of subscriber counts: a test each, titled by its count.
        for &n in counts {
            let mut spec = spec.clone();
            spec.title = format!("{} --subscribers {n}", spec.title);
            let label = custom.clone().unwrap_or_else(|| spec.title.clone());
            cases.push(Case { spec, mix: None, replay: None, subscribers: Some(n), label });
        }
    }
    Ok(cases)
}

/// `--expiry-range`: a `SET key value` test gets `EX` or `PX` and a time drawn per request;
/// any other test is left as it is (MSET and the rest cannot carry a time).
fn with_expiry(spec: &mut TestSpec, e: respbench_core::template::Expiry) {
    if let Some(t) = spec.template.with_expiry(e) {
        spec.template = t;
    }
}

/// `--dataset FILE`'s rows (at most `--maxdocs`), read before anything connects, no further
/// than those rows and at most `--dataset-max-bytes`, a stop heard as it reads; `None` without
/// the option.
fn dataset(cfg: &Config, stop: &StopHandle) -> Result<Option<Arc<Dataset>>, Error> {
    let Some(path) = &cfg.dataset else { return Ok(None) };
    if cfg.command.is_empty() {
        return Err(Error::Tests(
            "--dataset fills the __field:NAME__ placeholders of a custom command: give one after the options"
                .into(),
        ));
    }
    if cfg.cluster || cfg.replicas != crate::config::Replicas::None {
        // The routing reads a command's key positions from its template, which leaves a
        // row's arguments out.
        return Err(Error::Tests(
            "--dataset runs against one server: not with --cluster or --replicas".into(),
        ));
    }
    // As valkey-benchmark 9 decides: a name with `.xml` needs the root element, and is an XML
    // file unless it also says `.csv` or `.tsv`.
    let lower = path.to_ascii_lowercase();
    if lower.contains(".xml") && cfg.xml_root_element.is_none() {
        return Err(Error::Tests(format!(
            "--dataset {path}: an XML dataset needs --xml-root-element (the element each document is)"
        )));
    }
    let xml = cfg
        .xml_root_element
        .clone()
        .filter(|_| lower.contains(".xml") && !lower.contains(".csv") && !lower.contains(".tsv"));
    let max = cfg.dataset_max_bytes;
    // The file's size when it has one (not a FIFO or a device).
    let size = std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len());
    let bound = || {
        let what = match size {
            Some(s) => format!("the file is {s} bytes"),
            None => "it goes on".to_string(),
        };
        let rows = match cfg.maxdocs {
            0 => String::new(),
            n => format!(" without its first {n} rows (--maxdocs)"),
        };
        Error::Tests(format!(
            "--dataset {path}: {what}, more than the {max} bytes ({}) it is read to at most{rows}: give \
             --maxdocs or raise --dataset-max-bytes",
            crate::error::human_bytes(max)
        ))
    };
    if size.is_some_and(|s| s > max) && cfg.maxdocs == 0 {
        return Err(bound());
    }
    let (root, rows) = (xml.clone(), cfg.maxdocs);
    let text = crate::input::read_bounded(path.as_ref(), max, stop, move |t| {
        respbench_core::dataset::rows_end(t, root.as_deref(), rows)
    })
    .map_err(|e| match e {
        ReadError::Io(e) => Error::Tests(format!("--dataset {path}: cannot read it: {e}")),
        ReadError::TooLarge { .. } => bound(),
        ReadError::Stopped { read } => {
            Error::Tests(format!("--dataset {path}: interrupted after reading {read} bytes of it"))
        }
    })?;
    let parsed = if let Some(root) = &xml {
        Dataset::parse_xml(path, &text, root, cfg.maxdocs)
    } else if respbench_core::memtier_import::is_memtier(&text) {
        // memtier_benchmark's --data-import file: fields key, data and exptime.
        respbench_core::memtier_import::parse(&format!("--dataset {path}"), &text, cfg.maxdocs)
    } else {
        Dataset::parse(path, &text, delimiter_for(path), cfg.maxdocs)
    };
    parsed.map(|d| Some(Arc::new(d))).map_err(Error::Tests)
}

/// The test of one custom command: [`custom_with_data`], or with `--dataset` and
/// `__field:NAME__` placeholders a template that takes a row per request (`__data__` in it is
/// a value of `-d`'s largest size).
fn command_spec(args: &[Vec<u8>], cfg: &Config, dataset: Option<&Arc<Dataset>>) -> Result<TestSpec, Error> {
    let Some(dataset) = dataset.filter(|_| args.iter().any(|a| has_fields(a))) else {
        return Ok(custom_with_data(args, &cfg.values));
    };
    let has_data = args.iter().any(|a| a.windows(DATA.len()).any(|w| w == DATA));
    let largest = if has_data { respbench_core::template::payload(cfg.values.max()) } else { Vec::new() };
    let inlined: Vec<Vec<u8>> = args
        .iter()
        .map(|a| {
            let mut out = Vec::with_capacity(a.len());
            let mut rest = &a[..];
            while let Some(at) = rest.windows(DATA.len()).position(|w| w == DATA).filter(|_| has_data) {
                out.extend_from_slice(&rest[..at]);
                out.extend_from_slice(&largest);
                rest = &rest[at + DATA.len()..];
            }
            out.extend_from_slice(rest);
            out
        })
        .collect();
    let refs: Vec<&[u8]> = inlined.iter().map(Vec::as_slice).collect();
    let template = Template::with_dataset(&refs, dataset).map_err(Error::Tests)?;
    let title = args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ");
    Ok(TestSpec { title, payload_bytes: template.len(), template, connection_per_request: false })
}

/// valkey-benchmark 9's command sequence, `incr foo ; 3 incr bar`: commands separated by `;`
/// arguments, each with an optional repeat count first. Each connection sends whole sequences
/// ([`Mix::sequence`]), so `-n` counts commands (rounded up to whole sequences) and each
/// reports its own latency; the test reports as one, titled by the whole line, as
/// valkey-benchmark's does.
fn sequence_case(cfg: &Config, dataset: Option<&Arc<Dataset>>) -> Result<Case, Error> {
    let mut templates = Vec::new();
    let mut names = Vec::new();
    for part in cfg.command.split(|a| a == b";") {
        let (repeat, args) = match part.split_first() {
            Some((n, rest)) if !rest.is_empty() && !n.is_empty() && n.iter().all(u8::is_ascii_digit) => {
                let n: usize = std::str::from_utf8(n).ok().and_then(|n| n.parse().ok()).unwrap_or(0);
                (n, rest)
            }
            _ => (1, part),
        };
        if args.is_empty() || repeat == 0 {
            return Err(Error::Tests("a command sequence has an empty command: 'cmd ; [N] cmd ...'".into()));
        }
        names.push(match part.len() - args.len() {
            0 => command_name(&args[0]),
            _ => format!("{repeat} {}", command_name(&args[0])),
        });
        let mut spec = command_spec(args, cfg, dataset)?;
        if let Some(e) = cfg.open.expiry {
            with_expiry(&mut spec, e);
        }
        templates.extend(std::iter::repeat_n(spec.template, repeat.min(1_000_000)));
    }
    let title =
        cfg.command.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ");
    let first = templates[0].clone();
    let payload_bytes = templates.iter().map(Template::len).max().unwrap_or(0);
    let mix = Mix::sequence(templates).map_err(Error::Tests)?;
    // No titles: the commands are not reported one by one.
    Ok(Case {
        spec: TestSpec { title, template: first, payload_bytes, connection_per_request: false },
        mix: Some((mix, Vec::new())),
        replay: None,
        subscribers: None,
        label: names.join(" ; "),
    })
}

/// `--replay FILE`: the capture scanned (an error before connecting when it is not one), and
/// one case whose clients play its original clients.
fn replay_case(cfg: &Config, s: &crate::replay::Settings) -> Result<Case, Error> {
    if !cfg.open.rates.is_empty() || cfg.capacity.is_some() || cfg.open.has_mix() || !cfg.command.is_empty() {
        return Err(Error::Tests(
            "--replay plays the capture's own commands on its own schedule: not with --rps, --slo, --mix or a command"
                .into(),
        ));
    }
    let scan = crate::replay::scan(s)?;
    let worker = cfg.split.as_ref().map_or((0, 1), |w| (w.worker.index, w.worker.count));
    let replay =
        Arc::new(crate::replay::Replay::new(s.clone(), scan, cfg.key_prefix.clone(), worker, cfg.db));
    let titles = replay.titles();
    let names = titles.iter().map(|t| Template::command(&[t.as_bytes()])).collect();
    let mix = Mix::replay(names, replay.feed()).map_err(Error::Tests)?;
    let title = format!("REPLAY {}", s.file.display());
    let spec = TestSpec {
        template: Template::command(&[b"REPLAY"]),
        title,
        payload_bytes: 0,
        connection_per_request: false,
    };
    let label = spec.title.clone();
    Ok(Case { spec, mix: Some((mix, titles)), replay: Some(replay), subscribers: None, label })
}

/// `--mix set:1,get:10 --mix-command '2 HSET h f v'`: one case whose requests are drawn by weight.
fn mix_case(cfg: &Config) -> Result<Case, Error> {
    let mut parts = Vec::new();
    let mut described = Vec::new();
    // As described, with each custom command's name for its text.
    let mut named = Vec::new();
    for (name, weight) in &cfg.open.mix {
        let selection = Selection::parse(name).map_err(|unknown| {
            Error::Tests(format!(
                "invalid value for --mix: unknown test {}; the tests are: {}",
                unknown.join(", "),
                respbench_core::suite::TEST_NAMES.join(",")
            ))
        })?;
        // A name that selects several tests (ping, lrange) stands for the last: the one it names.
        let spec = suite(cfg, &selection)
            .pop()
            .ok_or_else(|| Error::Tests(format!("invalid value for --mix: {name} selects no test")))?;
        parts.push((spec, *weight));
        described.push(format!("{name}:{weight}"));
        named.push(format!("{name}:{weight}"));
    }
    for (args, weight) in &cfg.open.mix_commands {
        let spec = custom_with_data(args, &cfg.values);
        described.push(format!("'{}':{weight}", spec.title));
        named.push(format!("{}:{weight}", args.first().map_or_else(String::new, |a| command_name(a))));
        parts.push((spec, *weight));
    }
    // Each command's own keys, in the order of `parts`: the --mix tests, then --mix-command's.
    let own = |list: &[Option<crate::config::PartKeys>], len: usize| {
        (0..len).map(|i| list.get(i).copied().flatten()).collect::<Vec<_>>()
    };
    let mut own_keys = own(&cfg.open.mix_keys, cfg.open.mix.len());
    own_keys.extend(own(&cfg.open.mix_command_keys, cfg.open.mix_commands.len()));
    let mut keys = Vec::with_capacity(parts.len());
    for ((k, d), named) in own_keys.iter().zip(&mut described).zip(&mut named) {
        let Some(k) = k else {
            keys.push(None);
            continue;
        };
        let n = k.n.or(cfg.keyspace).ok_or_else(|| {
            Error::Tests(format!("--mix: {d} has keys of its own but no keyspace: give -r or @DIST/N"))
        })?;
        let space = k.dist.space(n).map_err(|why| Error::Tests(format!("--mix: {d}: {why}")))?;
        let keys_of = format!("@{}/{n}", k.dist);
        d.push_str(&keys_of);
        named.push_str(&keys_of);
        keys.push(Some(space));
    }
    if let Some(e) = cfg.open.expiry {
        for (spec, _) in &mut parts {
            with_expiry(spec, e);
        }
    }
    let total: u64 = parts.iter().map(|(_, w)| w).sum();
    let titles = parts.iter().map(|(s, w)| format!("{} (mix {w}/{total})", s.title)).collect();
    let payload_bytes = parts.iter().map(|(s, _)| s.payload_bytes).max().unwrap_or(0);
    let first = parts[0].0.template.clone();
    let mix = Mix::new(parts.into_iter().map(|(s, w)| (s.template, w)).collect())
        .and_then(|m| m.with_keys(keys))
        .map(|m| match (cfg.open.mix_in_turn, cfg.open.mix_in_turn_per_client) {
            (true, _) => m.in_turn(),
            (_, true) => m.in_turn_per_client(),
            _ => m,
        })
        .map_err(Error::Tests)?;
    let spec = TestSpec {
        title: format!("MIX ({})", described.join(",")),
        template: first,
        payload_bytes,
        connection_per_request: false,
    };
    let label = format!("MIX ({})", named.join(","));
    Ok(Case { spec, mix: Some((mix, titles)), replay: None, subscribers: None, label })
}

/// The tests to run: the custom command, or the default suite restricted by `-t`.
fn tests(
    cfg: &Config,
    dataset: Option<&Arc<Dataset>>,
    warn: &mut dyn FnMut(&str),
) -> Result<Vec<TestSpec>, Error> {
    if !cfg.command.is_empty() {
        if cfg.tests.is_some() {
            warn("WARNING: Option -t is ignored.");
        }
        let mut args: Vec<Vec<u8>> = cfg.command.clone();
        if cfg.stdin_arg {
            let mut last = Vec::new();
            std::io::stdin()
                .read_to_end(&mut last)
                .map_err(|e| Error::Tests(format!("-x: cannot read standard input: {e}")))?;
            args.push(last);
        }
        return Ok(vec![command_spec(&args, cfg, dataset)?]);
    }
    let selection = match &cfg.tests {
        Some(list) => Selection::parse(list).map_err(|unknown| {
            Error::Tests(format!(
                "invalid value '{list}' for -t: unknown test {}; the tests are: {}{}",
                unknown.join(", "),
                respbench_core::suite::TEST_NAMES.join(","),
                unknown_tests_hint(&unknown)
            ))
        })?,
        None if cfg.valkey_suite => Selection::valkey_default(),
        None => Selection::all(),
    };
    Ok(suite(cfg, &selection))
}

/// What to say after `-t`'s unknown names: the test each was likely meant to be (`gte` is `get`,
/// `lrange100` is `lrange_100`), or, for a name no test is near (`hget`, `del`), how to benchmark
/// a command of one's own.
fn unknown_tests_hint(unknown: &[String]) -> String {
    let tests = respbench_core::suite::TEST_NAMES;
    let mut meant = Vec::new();
    let mut others = Vec::new();
    for name in unknown {
        let folded = name.replace('-', "_");
        // A command respbench knows (HGET, DEL) is one to give after the options, not a typo.
        let command = respbench_core::cluster::Route::builtin(name.as_bytes(), 2).is_some();
        let within = if folded.len() < 5 { 1 } else { 2 };
        match nearest(&folded, tests, within).filter(|_| !command) {
            Some(t) => meant.push(format!("{t} for {name}")),
            None => others.push(name.as_str()),
        }
    }
    let mut hint = String::new();
    if !meant.is_empty() {
        hint.push_str(&format!("\ndid you mean {}?", meant.join(", ")));
    }
    if !others.is_empty() {
        let known = |n: &&&str| respbench_core::cluster::Route::builtin(n.as_bytes(), 2).is_some();
        let example = others.iter().find(known).map_or("GET".to_string(), |n| n.to_ascii_uppercase());
        hint.push_str(&format!(
            "\n{} {}: to benchmark a command, give it after the options (respbench -n 100000 {example} \
             key:__rand_int__)",
            others.join(", "),
            if others.len() == 1 { "is not a test of the suite" } else { "are not tests of the suite" },
        ));
    }
    hint
}

/// The candidate nearest to `word` by edit distance (Levenshtein), if it is at most `within`
/// edits away (and closer than the word is long).
pub fn nearest<'a>(word: &str, candidates: &[&'a str], within: usize) -> Option<&'a str> {
    // Optimal string alignment: an insertion, deletion, substitution or swap of two
    // neighbours is one edit (`gte` is one from `get`).
    let distance = |a: &str, b: &str| {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for (i, row) in d.iter_mut().enumerate() {
            row[0] = i;
        }
        for (j, cell) in d[0].iter_mut().enumerate() {
            *cell = j;
        }
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
                }
            }
        }
        d[a.len()][b.len()]
    };
    let (best, d) = candidates.iter().map(|c| (*c, distance(word, c))).min_by_key(|(_, d)| *d)?;
    (d <= within && d < word.chars().count()).then_some(best)
}

/// The default suite restricted to `selection`; in cluster mode MSET's and MGET's keys share a
/// hash tag.
fn suite(cfg: &Config, selection: &Selection) -> Vec<TestSpec> {
    // Sequential keys (--sequential) leave ZADD's score fixed: each ZADD then takes one value,
    // so `-r 50 -n 50 --sequential -t zadd` adds 50 members, as valkey-benchmark 9's own test
    // has it.
    let random_keys = cfg.keyspace.is_some() && cfg.key_dist != respbench_core::dist::KeyDist::Sequential;
    let mut specs = default_suite(selection, &cfg.values, random_keys, &cfg.key_prefix);
    if cfg.cluster {
        for s in specs.iter_mut() {
            if let Some(tagged) =
                respbench_core::suite::cluster_ten_keys(&s.title, &cfg.values, &cfg.key_prefix)
            {
                *s = tagged;
            }
        }
    }
    specs.extend(respbench_core::suite::function_tests(selection, cfg.num_functions, cfg.num_keys_in_fcall));
    specs
}
