//! The value syntaxes of the options: lengths of time, number lists, URIs, `HOST:PORT`,
//! percentiles, rates, mixes and backend lists. The command line maps each option's text through
//! one of these into the [`Config`](crate::config::Config); each error names the option and says
//! what it takes.

use std::time::Duration;

use respbench_core::Endpoint;

use respbench_core::template::Expiry;

use crate::config::{Backend, OptionError, PartKeys};

/// A bad value: the message names the option.
pub fn bad(option: &'static str, value: impl std::fmt::Display, why: &str) -> OptionError {
    OptionError::Invalid { option, value: value.to_string(), why: why.into() }
}

/// Parses an option that takes a number or a comma-separated list of them, each checked by
/// `each`.
pub fn numbers<T>(
    text: &str,
    option: &'static str,
    each: impl Fn(i64) -> Result<T, &'static str>,
) -> Result<Vec<T>, OptionError> {
    text.split(',')
        .map(|item| {
            let n: i64 = item
                .trim()
                .parse()
                .map_err(|_| bad(option, text, "expected a number, or a list like 1,2,4"))?;
            each(n).map_err(|why| bad(option, text, why))
        })
        .collect()
}

/// Parses a length of time: `30s`, `500ms`, `2m`, `1h`, `250us`, or a plain number of seconds
/// (fractions allowed); at most a year.
pub fn duration(option: &'static str, text: &str) -> Result<Duration, OptionError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 =
        num.parse().map_err(|_| bad(option, text, "expected a time such as 30s, 500ms or 2m"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad(option, text, "the units are us, ms, s, m and h")),
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 365.0 * 86_400.0 {
        return Err(bad(option, text, "must be at most a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The longest `--timeout` (and `--drain-grace`): as long as the latency histograms record.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// Parses an option's duration like `--timeout`'s: `5s`, `500ms` or plain (possibly fractional)
/// seconds, from 1 ms to 1 hour; `zero` says what to do instead of a zero.
pub fn bounded_duration(option: &'static str, v: &str, zero: &str) -> Result<Duration, OptionError> {
    let (number, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        (v, 1.0)
    };
    let why = "expected a duration such as 5s, 500ms or 1.5 (seconds)";
    let x: f64 = match number.trim().parse() {
        Ok(x) if number.bytes().all(|b| b.is_ascii_digit() || b == b'.') => x,
        _ => return Err(bad(option, v, why)),
    };
    let secs = x * scale;
    if !secs.is_finite() || secs > MAX_TIMEOUT.as_secs_f64() {
        return Err(bad(option, v, "the longest is 1 hour"));
    }
    let d = Duration::from_secs_f64(secs);
    if d < Duration::from_millis(1) {
        return Err(bad(option, v, &format!("must be at least 1ms ({zero})")));
    }
    Ok(d)
}

/// Reads `--retry-on` and its options ([`crate::retry`]): `on` is `--retry-on`'s list of error words (`LOADING,BUSY,TRYAGAIN`),
/// `backoff` `--retry-backoff FIRST[,MAX]` (durations: `1ms,1s`), `limit` `--retry-limit N`.
/// The others without `--retry-on` are refused.
pub fn retry(
    on: Option<&str>,
    backoff: Option<&str>,
    limit: Option<u32>,
    failed_keys: Option<String>,
) -> Result<Option<crate::retry::Settings>, OptionError> {
    let Some(on) = on else {
        let given = [
            ("--retry-backoff", backoff.is_some()),
            ("--retry-limit", limit.is_some()),
            ("--failed-keys", failed_keys.is_some()),
        ];
        return match given.iter().find(|(_, g)| *g) {
            Some((option, _)) => Err(bad(option, "", "needs --retry-on (the errors to retry)")),
            None => Ok(None),
        };
    };
    let words: Vec<String> = on.split(',').map(|w| w.trim().to_string()).collect();
    let word_ok = |w: &String| {
        !w.is_empty()
            && w.len() <= 32
            && w.bytes().all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
    };
    if words.len() > crate::retry::MOST_WORDS || !words.iter().all(word_ok) {
        return Err(bad(
            "--retry-on",
            on,
            "expected the first words of error replies in capitals, such as LOADING,BUSY,TRYAGAIN (at most 32)",
        ));
    }
    let (first, max) = match backoff {
        None => (crate::retry::FIRST, crate::retry::MAX),
        Some(text) => {
            let (a, b) = text.split_once(',').unwrap_or((text, text));
            let (first, max) = (duration("--retry-backoff", a)?, duration("--retry-backoff", b)?);
            if first.is_zero() || max < first || max > Duration::from_secs(3600) {
                return Err(bad(
                    "--retry-backoff",
                    text,
                    "expected FIRST[,MAX]: the first pause (doubled for each retry) and the longest, \
                     such as 1ms,1s; more than 0, at most 1 hour",
                ));
            }
            (first, max)
        }
    };
    let limit = limit.unwrap_or(crate::retry::LIMIT);
    if limit == 0 {
        return Err(bad("--retry-limit", limit, "must be 1 or more (a request's retries at most)"));
    }
    let retry =
        respbench_core::Retry { on: words, backoff: respbench_core::Backoff::doubling(first, max), limit };
    Ok(Some(crate::retry::Settings { retry, failed_keys }))
}

/// `--reconnect`'s first wait and its longest by default: 10 ms doubling up to 1 s.
const RECONNECT_FIRST: Duration = Duration::from_millis(10);
const RECONNECT_MAX: Duration = Duration::from_secs(1);

/// Reads `--reconnect`'s pacing: `backoff` `--reconnect-backoff FIRST[,MAX]` (default 10ms,1s),
/// `factor` `--reconnect-factor F` (each wait F times the one before; default 2), `attempts`
/// `--reconnect-attempts N` (in a row, then the connection fails for good; default no limit).
/// Given without `--reconnect` (`reconnect`), they are refused.
pub fn reconnect(
    reconnect: bool,
    backoff: Option<&str>,
    factor: Option<&str>,
    attempts: Option<u32>,
) -> Result<respbench_core::Backoff, OptionError> {
    let given = [
        ("--reconnect-backoff", backoff.is_some()),
        ("--reconnect-factor", factor.is_some()),
        ("--reconnect-attempts", attempts.is_some()),
    ];
    if let Some((option, _)) = given.iter().find(|(_, g)| *g && !reconnect) {
        return Err(bad(option, "", "needs --reconnect (connections that come back)"));
    }
    let (first, max) = match backoff {
        None => (RECONNECT_FIRST, RECONNECT_MAX),
        Some(text) => {
            let (a, b) = text.split_once(',').unwrap_or((text, text));
            let why = "leave --reconnect-backoff out for 10ms,1s";
            let (first, max) = (
                bounded_duration("--reconnect-backoff", a, why)?,
                bounded_duration("--reconnect-backoff", b, why)?,
            );
            if max < first {
                return Err(bad("--reconnect-backoff", text, "expected FIRST[,MAX] with MAX at least FIRST"));
            }
            (first, max)
        }
    };
    let factor = match factor {
        None => 2.0,
        Some(f) => f
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && *f > 0.0 && *f <= 1000.0)
            .ok_or_else(|| {
                bad("--reconnect-factor", f, "expected a number above 0, at most 1000 (2: each wait doubles)")
            })?,
    };
    if attempts == Some(0) {
        return Err(bad("--reconnect-attempts", 0, "must be 1 or more (leave it out for no limit)"));
    }
    Ok(respbench_core::Backoff { first, max, factor, attempts })
}

/// What a `redis://[user[:password]@]host[:port][/db]` URI says; each part only where given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Uri {
    /// The user, percent-decoded.
    pub user: Option<String>,
    /// The password, percent-decoded.
    pub password: Option<String>,
    /// The database number.
    pub db: Option<u32>,
    /// The server (port 6379 when not given).
    pub endpoint: Option<Endpoint>,
    /// `rediss://` (or `valkeys://`): TLS is asked for.
    pub secure: bool,
    /// `redis+sentinel://host:port[,host:port]/mastername[/db]`: the Sentinels and the
    /// master's name (the user and password are the data nodes', as `-a` and `--user`).
    pub sentinel: Option<(Vec<Endpoint>, String)>,
}

/// Parses `-u`'s URI: `redis://`, `rediss://`, `valkey://` or `valkeys://`, the user and
/// password percent-encoded.
pub fn uri(uri: &str) -> Result<Uri, OptionError> {
    if let Some(u) = sentinel_uri(uri)? {
        return Ok(u);
    }
    let plain = uri.strip_prefix("redis://").or_else(|| uri.strip_prefix("valkey://"));
    let secure = uri.strip_prefix("rediss://").or_else(|| uri.strip_prefix("valkeys://"));
    let Some(rest) = plain.or(secure) else {
        return Err(bad("-u", uri, "expected redis://[user:password@]host[:port][/db] (rediss:// for TLS)"));
    };
    let mut out = Uri { secure: secure.is_some(), ..Uri::default() };
    let (auth, hostpart) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, rest),
    };
    if let Some(a) = auth {
        // The user and password are percent-encoded in a URI (`%40` for `@`, `%3A` for `:`).
        let decode = |s: &str| percent_decode(s, uri);
        match a.split_once(':') {
            Some((u, p)) => {
                if !u.is_empty() {
                    out.user = Some(decode(u)?);
                }
                out.password = Some(decode(p)?);
            }
            None => out.password = Some(decode(a)?),
        }
    }
    let (hostport, db) = hostpart.split_once('/').unwrap_or((hostpart, ""));
    if !db.is_empty() {
        out.db = Some(db.parse().map_err(|_| bad("-u", uri, "the database must be a number"))?);
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
            (h, p.parse::<u16>().map_err(|_| bad("-u", uri, "the port must be 0 to 65535"))?)
        }
        _ => (hostport, 6379),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if !host.is_empty() {
        out.endpoint = Some(Endpoint::Tcp { host: host.to_string(), port });
    }
    Ok(out)
}

/// A Sentinel's port when a `redis+sentinel://` URL gives none.
const SENTINEL_PORT: u16 = 26379;

/// `redis+sentinel://[user:password@]host:port[,host:port…]/mastername[/db]` (`rediss+sentinel`
/// for TLS, `valkey+sentinel` and `valkeys+sentinel` too), as RedisVL and the Redis-Sentinel-Url
/// package spell it, a Sentinel without a port at 26379; `None` for any other scheme. The user
/// and password are the data nodes'; the Sentinels' own are `--sentinel-user` and
/// `--sentinel-password`.
fn sentinel_uri(uri: &str) -> Result<Option<Uri>, OptionError> {
    let schemes = [("redis+sentinel://", false), ("valkey+sentinel://", false)];
    let secure = [("rediss+sentinel://", true), ("valkeys+sentinel://", true)];
    let Some((rest, secure)) =
        schemes.iter().chain(&secure).find_map(|(s, tls)| Some((uri.strip_prefix(s)?, *tls)))
    else {
        return Ok(None);
    };
    let form = "expected redis+sentinel://[user:password@]host:port[,host:port]/mastername[/db]";
    let (nodes, path) = rest.split_once('/').ok_or_else(|| bad("-u", uri, form))?;
    // The user and password, parsed as a plain URI's of the first Sentinel.
    let (auth, hosts) = nodes.rsplit_once('@').map_or((None, nodes), |(a, h)| (Some(a), h));
    let first = hosts.split(',').next().unwrap_or_default();
    let mut out = match auth {
        Some(a) => self::uri(&format!("redis://{a}@{first}"))?,
        None => Uri::default(),
    };
    out.endpoint = None;
    out.secure = secure;
    let sentinels = hosts
        .split(',')
        .map(|h| {
            let h = h.trim();
            let port =
                h.rsplit_once(':').is_some_and(|(host, _)| !host.starts_with('[') || host.ends_with(']'));
            let h = if port { h.to_string() } else { format!("{h}:{SENTINEL_PORT}") };
            host_port(&h).map_err(|why| bad("-u", uri, why))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (master, db) = path.split_once('/').unwrap_or((path, ""));
    if !db.is_empty() {
        out.db = Some(db.parse().map_err(|_| bad("-u", uri, "the database must be a number"))?);
    }
    if master.is_empty() || master.len() > 256 {
        return Err(bad("-u", uri, form));
    }
    let master = percent_decode(master, uri)?;
    out.sentinel = Some((sentinels, master));
    Ok(Some(out))
}

/// Decodes the `%XX` escapes of a URI's part; a `%` not followed by two hex digits, or bytes
/// that are not UTF-8, are refused (said how).
fn percent_decode(s: &str, uri: &str) -> Result<String, OptionError> {
    let invalid = |why: &str| bad("-u", uri, why);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(v) if hex.is_some_and(|h| h.bytes().all(|c| c.is_ascii_hexdigit())) => out.push(v),
            _ => {
                let at = &s[i..s.len().min(i + 3)];
                return Err(invalid(&format!(
                    "'{at}' is not a percent-encoded byte (write '%25' for a '%')"
                )));
            }
        }
        i += 3;
    }
    String::from_utf8(out).map_err(|_| invalid("the user or password decodes to bytes that are not UTF-8"))
}

/// `--print-percentiles 50,99,99.9`: each a percentile from 0 to 100.
pub fn percentiles(list: &str) -> Result<Vec<f64>, OptionError> {
    list.split(',')
        .map(|p| match p.trim().parse::<f64>() {
            Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
            _ => Err(bad(
                "--print-percentiles",
                list,
                "expected percentiles from 0 to 100, like 50,99,99.9,99.99",
            )),
        })
        .collect()
}

/// Parses `HOST:PORT`, split at the last `:` (so `::1:6380` is host `::1`); brackets around
/// the host (`[::1]:6380`) are dropped.
pub fn host_port(text: &str) -> Result<Endpoint, &'static str> {
    let why = "expected HOST:PORT";
    let (host, port) = text.rsplit_once(':').ok_or(why)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if host.is_empty() {
        return Err(why);
    }
    let port = port.parse::<u16>().ok().filter(|&p| p != 0).ok_or("the port must be 1 to 65535")?;
    Ok(Endpoint::Tcp { host: host.to_string(), port })
}

/// Reads `--sentinel` (a comma-separated list of `HOST:PORT`) and `--sentinel-master`, or
/// `url`'s (`-u redis+sentinel://…`, [`uri`]), and the Sentinels' own `--sentinel-user` and
/// `--sentinel-password`.
pub fn sentinel(
    list: Option<&str>,
    master: Option<&str>,
    url: Option<(Vec<Endpoint>, String)>,
    auth: (Option<String>, Option<String>),
) -> Result<Option<crate::sentinel::Sentinel>, OptionError> {
    let found = match (url, list) {
        (Some(_), Some(_)) => {
            return Err(OptionError::Refused(
                "--sentinel: the Sentinels are -u redis+sentinel://'s already".into(),
            ))
        }
        (Some((sentinels, name)), None) => Some(crate::sentinel::Sentinel::new(sentinels, name)),
        (None, _) => sentinel_options(list, master)?,
    };
    let Some(mut s) = found else {
        return match auth {
            (None, None) => Ok(None),
            _ => Err(OptionError::Refused(
                "--sentinel-user and --sentinel-password need --sentinel or -u redis+sentinel://".into(),
            )),
        };
    };
    s.auth = match auth {
        (user, Some(password)) => Some(crate::sentinel::Auth { user, password }),
        (Some(_), None) => {
            return Err(OptionError::Refused("--sentinel-user needs --sentinel-password".into()))
        }
        (None, None) => None,
    };
    Ok(Some(s))
}

/// [`sentinel`]'s `--sentinel` and `--sentinel-master`.
fn sentinel_options(
    list: Option<&str>,
    master: Option<&str>,
) -> Result<Option<crate::sentinel::Sentinel>, OptionError> {
    let (list, master) = match (list, master) {
        (None, None) => return Ok(None),
        (Some(l), Some(m)) => (l, m),
        (Some(_), None) => {
            return Err(OptionError::Refused(
                "--sentinel needs --sentinel-master NAME (the master to ask for)".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(OptionError::Refused("--sentinel-master needs --sentinel HOST:PORT[,…]".into()))
        }
    };
    let sentinels = list
        .split(',')
        .map(|s| host_port(s.trim()).map_err(|why| OptionError::Refused(format!("--sentinel {list}: {why}"))))
        .collect::<Result<Vec<_>, _>>()?;
    if master.is_empty() || master.len() > 256 || master.bytes().any(|b| b.is_ascii_whitespace()) {
        return Err(OptionError::Refused(format!("--sentinel-master {master:?}: expected a master's name")));
    }
    Ok(Some(crate::sentinel::Sentinel::new(sentinels, master.to_string())))
}

/// Checks `--replay`, `--speed`, `--replay-loop`, `--strict` and `--replay-admin` into
/// [`crate::replayed::Settings`]; `None` without `--replay`.
pub fn replay(
    file: Option<&str>,
    speed: Option<&str>,
    passes: Option<u64>,
    strict: bool,
    admin: bool,
) -> Result<Option<crate::replayed::Settings>, OptionError> {
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
                return Err(bad(
                    "--speed",
                    s,
                    "expected a factor from 0.001 to 1000 (2 replays twice as fast)",
                ))
            }
        },
    };
    let passes = passes.unwrap_or(1);
    if passes == 0 || passes > 1_000_000 {
        return Err(bad(
            "--replay-loop",
            passes,
            "expected how many times to play the capture, 1 to 1000000",
        ));
    }
    Ok(Some(crate::replayed::Settings { file: file.into(), speed, passes, strict, admin }))
}

/// Checks `capture`'s `-o` and `--max-commands`: `None` when not `capturing`, where they are
/// refused.
pub fn capture(
    capturing: bool,
    output: Option<&str>,
    max_commands: Option<u64>,
) -> Result<Option<crate::replayed::CaptureSettings>, OptionError> {
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
        return Err(bad("--max-commands", 0, "expected how many commands to capture, at least 1"));
    }
    Ok(Some(crate::replayed::CaptureSettings { output: output.into(), max_commands }))
}

/// `--rps 1000,2000`: each rate 1 to 100,000,000 requests per second.
pub fn rates(list: &str) -> Result<Vec<u64>, OptionError> {
    list.split(',')
        .map(|r| {
            let rate: u64 = r
                .trim()
                .parse()
                .map_err(|_| bad("--rps", list, "expected requests per second, or a list like 1000,2000"))?;
            if rate == 0 || rate > 100_000_000 {
                return Err(bad("--rps", list, "each rate must be 1 to 100000000 requests per second"));
            }
            Ok(rate)
        })
        .collect()
}

/// redis-benchmark 8's `--rate N`: one total rate shared by every client and thread, each
/// command of a pipeline counting one: respbench's open loop at `N` (`--rps N`, latency from each
/// request's intended send). Returns the rates to run: `rps` (the `--rps` list already parsed)
/// if it is that one rate, else `[N]`. Refused with idle mode (`idle`, in redis-benchmark 8's
/// words), beside a capacity search (`search`: it finds the rate), beside another `--rps`, and
/// unless `N` is a whole number from 1 to 100,000,000.
pub fn rate(text: &str, rps: &[u64], idle: bool, search: bool) -> Result<Vec<u64>, OptionError> {
    if idle {
        return Err(OptionError::Refused("--rate cannot be used with idle mode (-I).".into()));
    }
    if search {
        return Err(OptionError::Conflict(
            "--rate",
            "--slo",
            "a capacity search finds the rate (--rps LOW-HIGH)",
        ));
    }
    let rate =
        text.trim().parse::<u64>().ok().filter(|r| (1..=100_000_000).contains(r)).ok_or_else(|| {
            bad("--rate", text, "the rate is requests per second, a whole number from 1 to 100000000")
        })?;
    match rps {
        [] => Ok(vec![rate]),
        [r] if *r == rate => Ok(vec![rate]),
        _ => Err(OptionError::Conflict(
            "--rate",
            "--rps",
            "both set the target rate: give one, or the same rate",
        )),
    }
}

/// The most subscribers `-t pubsub` opens (a thread waits on up to 128 of them with `poll(2)`).
pub const MAX_SUBSCRIBERS: usize = 10_000;

/// The most waiters `-t blpop` or `xreadgroup` opens (each a thread of its own: its reads are
/// blocking commands).
pub const MAX_WAITERS: usize = 1000;

/// `--subscribers 10` or a list (`1,10,100`): a delivery test's subscribers, a step each;
/// refused unless `-t` (`tests`) selects one (pubsub, blpop, xreadgroup).
pub fn subscribers(list: &str, tests: Option<&str>) -> Result<Vec<usize>, OptionError> {
    let tracking = tests.is_some_and(|t| t.split(',').any(|t| t.trim().eq_ignore_ascii_case("tracking")));
    if tests.and_then(respbench_core::suite::delivery_test).is_none() && !tracking {
        return Err(bad(
            "--subscribers",
            list,
            "it is for a delivery test (-t pubsub, blpop or xreadgroup) or -t tracking's readers",
        ));
    }
    // Any delivery test but pubsub is a waiters' test, wherever it stands in the list.
    let waiters = tests
        .unwrap_or_default()
        .split(',')
        .filter_map(respbench_core::suite::delivery_test)
        .any(|t| t != "pubsub");
    let (max, why) = if waiters {
        (MAX_WAITERS, "each count must be 1 to 1000 for -t blpop and xreadgroup, as in 10 or 1,10,100")
    } else {
        (MAX_SUBSCRIBERS, "each count must be 1 to 10000, as in 10 or 1,10,100")
    };
    list.split(',')
        .map(|r| match r.trim().parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(bad("--subscribers", list, why)),
        })
        .collect()
}

/// `--channels M` (1 to 1000): `-t pubsub`'s channels; refused over `--cluster` (sharded
/// pub/sub has one channel) and without `-t pubsub`.
pub fn channels(v: &str, tests: Option<&str>, cluster: bool) -> Result<u64, OptionError> {
    if !tests.is_some_and(|t| t.split(',').any(|t| t.trim().eq_ignore_ascii_case("pubsub"))) {
        return Err(bad("--channels", v, "it is for -t pubsub"));
    }
    if cluster {
        return Err(bad("--channels", v, "sharded pub/sub over --cluster has one channel"));
    }
    match v.trim().parse::<u64>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(bad("--channels", v, "must be 1 to 1000")),
    }
}

/// `-t expiry`'s options (`--expiry-window`, `--expiry-grace`, `--expiry-volatile`,
/// `--expiry-persistent`: each `Some` when given; `--set-notify`), refused unless `-t`
/// (`tests`) selects `expiry`. The window and the grace are at most an hour each, the other
/// keys at most 100 million.
pub fn expiry_test(
    given: [Option<&str>; 4],
    set_notify: bool,
    tests: Option<&str>,
) -> Result<crate::config::ExpiryConfig, OptionError> {
    let mut e = crate::config::ExpiryConfig { set_notify, ..Default::default() };
    let names = ["--expiry-window", "--expiry-grace", "--expiry-volatile", "--expiry-persistent"];
    let selected = tests.is_some_and(|t| t.split(',').any(|t| t.trim().eq_ignore_ascii_case("expiry")));
    if let Some((name, v)) =
        names.iter().zip(given).find_map(|(n, v)| v.map(|v| (*n, v))).filter(|_| !selected)
    {
        return Err(bad(name, v, "it is for -t expiry"));
    }
    if set_notify && !selected {
        return Err("--set-notify is for -t expiry".into());
    }
    for alone in ["expiry", "tracking"] {
        let has = |t: &str| t.split(',').any(|t| t.trim().eq_ignore_ascii_case(alone));
        if let Some(t) =
            tests.filter(|t| has(t) && t.split(',').any(|t| !t.trim().eq_ignore_ascii_case(alone)))
        {
            let why = format!("-t {alone} runs alone (its writer is one connection): give the other tests a run of their own");
            return Err(bad("-t", t, &why));
        }
    }
    for (i, slot) in [&mut e.window, &mut e.grace].into_iter().enumerate() {
        if let Some(v) = given[i] {
            *slot = duration(names[i], v)?;
            if *slot > Duration::from_secs(3600) {
                return Err(bad(names[i], v, "must be at most 1h"));
            }
        }
    }
    for (i, slot) in [&mut e.volatile, &mut e.persistent].into_iter().enumerate() {
        if let Some(v) = given[i + 2] {
            *slot = v
                .trim()
                .parse()
                .ok()
                .filter(|&n| n <= 100_000_000)
                .ok_or_else(|| bad(names[i + 2], v, "a count of keys from 0 to 100000000"))?;
        }
    }
    Ok(e)
}

/// `-t tracking`'s options (`--tracking-mode default|bcast|optin`, `--tracking-prefix`
/// repeated, `--tracking-redirect`, `--tracking-off N`), refused unless `-t` (`tests`) selects
/// `tracking`; prefixes only with `bcast`.
pub fn tracking_test(
    mode: Option<&str>,
    prefixes: &[String],
    redirect: bool,
    off: Option<&str>,
    tests: Option<&str>,
) -> Result<crate::config::TrackingConfig, OptionError> {
    use crate::config::TrackingMode;
    let selected = tests.is_some_and(|t| t.split(',').any(|t| t.trim().eq_ignore_ascii_case("tracking")));
    let given = [mode.is_some(), !prefixes.is_empty(), redirect, off.is_some()];
    let names = ["--tracking-mode", "--tracking-prefix", "--tracking-redirect", "--tracking-off"];
    if let Some((name, _)) = names.iter().zip(given).find(|(_, g)| *g).filter(|_| !selected) {
        return Err(format!("{name} is for -t tracking").into());
    }
    let mode = match mode.map(|m| m.trim().to_ascii_lowercase()).as_deref() {
        None | Some("default") => TrackingMode::Default,
        Some("bcast") => TrackingMode::Bcast,
        Some("optin") => TrackingMode::Optin,
        Some(_) => return Err(bad("--tracking-mode", mode.unwrap_or_default(), "default, bcast or optin")),
    };
    if let Some(p) = prefixes.first().filter(|_| mode != TrackingMode::Bcast) {
        return Err(bad("--tracking-prefix", p, "prefixes are for --tracking-mode bcast"));
    }
    if let Some(p) = prefixes.iter().find(|p| p.is_empty() || p.len() > 1024) {
        return Err(bad("--tracking-prefix", p, "a prefix of 1 to 1024 bytes"));
    }
    if prefixes.len() > 64 {
        return Err("--tracking-prefix: at most 64 prefixes".into());
    }
    let off = match off {
        None => 0,
        Some(v) => v
            .trim()
            .parse()
            .ok()
            .filter(|&n: &u64| n <= crate::tracking::MAX_READERS as u64)
            .ok_or_else(|| bad("--tracking-off", v, "a count of readers from 0 to 1000"))?,
    };
    Ok(crate::config::TrackingConfig { mode, prefixes: prefixes.to_vec(), redirect, off })
}

/// The largest weight of a mix's command.
const MAX_WEIGHT: u64 = 1_000_000;

/// `--mix get:10,set:1`: test names with weights (1 when left out), names lower-cased; a
/// command's own keys after `@` ([`mix_keys`]) are left out here.
pub fn mix(spec: &str) -> Result<Vec<(String, u64)>, OptionError> {
    spec.split(',')
        .map(|part| {
            let part = part.split_once('@').map_or(part, |(p, _)| p).trim();
            let (name, weight) = part.rsplit_once(':').unwrap_or((part, "1"));
            let weight: u64 = weight
                .parse()
                .ok()
                .filter(|w| (1..=MAX_WEIGHT).contains(w))
                .ok_or_else(|| bad("--mix", spec, "each weight must be 1 to 1000000 (name:weight)"))?;
            Ok((name.to_ascii_lowercase(), weight))
        })
        .collect()
}

/// The keys of each command of `--mix 'set:1@sequential/10000,get:10@zipf:0.99'`: after `@`
/// a `--key-dist` (`seq` for `sequential`) and, after `/`, its keyspace length (`-r`'s when
/// left out); `None` for a command without `@`.
pub fn mix_keys(spec: &str) -> Result<Vec<Option<PartKeys>>, OptionError> {
    spec.split(',').map(|part| part_keys("--mix", spec, part.split_once('@').map(|(_, k)| k))).collect()
}

/// `@DIST[/N]` of a mix command (without the `@`): its own distribution and keyspace.
fn part_keys(option: &'static str, text: &str, keys: Option<&str>) -> Result<Option<PartKeys>, OptionError> {
    let Some(keys) = keys else { return Ok(None) };
    let (dist, n) = match keys.trim().split_once('/') {
        Some((d, n)) => {
            let n = n.trim().parse::<u64>().ok().filter(|&n| n <= MAX_KEYSPACE).ok_or_else(|| {
                bad(
                    option,
                    text,
                    "the keyspace after / must be a number of keys, 0 to 10^12 (get@zipf/10000)",
                )
            })?;
            (d, Some(n))
        }
        None => (keys, None),
    };
    let dist = match dist.trim().to_ascii_lowercase().as_str() {
        "seq" => respbench_core::dist::KeyDist::Sequential,
        d => respbench_core::dist::KeyDist::parse(d).map_err(|why| {
            bad(option, text, &format!("{why} (seq for sequential), after @: get:10@zipf:0.99/10000"))
        })?,
    };
    Ok(Some(PartKeys { dist, n }))
}

/// The largest keyspace a mix command takes, as `-r`: 10^12 keys (12 digits).
const MAX_KEYSPACE: u64 = 1_000_000_000_000;

/// `--mix-command 'WEIGHT COMMAND ARG...'`: the arguments and the weight (its own keys,
/// `WEIGHT@DIST/N`, are [`mix_command_keys`]'s). The arguments are split as redis-cli splits
/// a line ([`crate::words::split_args`]): `'1 HSET h name "User 1"'` has an argument with a blank, and
/// `"\x86"` is the byte 0x86.
pub fn mix_command(text: &str) -> Result<(Vec<Vec<u8>>, u64), OptionError> {
    let text = text.trim_start();
    let (first, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let weight: u64 = Some(first)
        .and_then(|w| w.split_once('@').map_or(w, |(w, _)| w).parse().ok())
        .filter(|w| (1..=MAX_WEIGHT).contains(w))
        .ok_or_else(|| {
            bad("--mix-command", text, "expected 'WEIGHT COMMAND ARG...' with a weight of 1 to 1000000")
        })?;
    let args = crate::words::split_args(rest).map_err(|why| bad("--mix-command", text, &why))?;
    if args.is_empty() {
        return Err(bad("--mix-command", text, "the command is missing after the weight"));
    }
    Ok((args, weight))
}

/// The keys of `--mix-command '3@zipf:0.99/1000 GET key:__rand_int__'`: as [`mix_keys`], after
/// the weight.
pub fn mix_command_keys(text: &str) -> Result<Option<PartKeys>, OptionError> {
    let first = text.split_whitespace().next().unwrap_or("");
    part_keys("--mix-command", text, first.split_once('@').map(|(_, k)| k))
}

/// `--expiry-range MIN-MAX`: seconds (`EX`), or milliseconds with `ms` on both (`PX`:
/// `500ms-1500ms`); one number is a fixed time. From 1 to 10^10.
pub fn expiry_range(text: &str) -> Result<Expiry, OptionError> {
    let why = "expected MIN-MAX seconds (1-2) or milliseconds (500ms-1500ms), from 1 to 10000000000, MIN at most MAX";
    let t = text.trim().to_ascii_lowercase();
    let (lo, hi) = t.split_once('-').unwrap_or((&t, &t));
    let unit = |v: &str| -> (String, bool) {
        let v = v.trim();
        match v.strip_suffix("ms") {
            Some(n) => (n.trim().to_string(), true),
            None => (v.strip_suffix('s').unwrap_or(v).trim().to_string(), false),
        }
    };
    let ((lo, lo_ms), (hi, hi_ms)) = (unit(lo), unit(hi));
    if lo_ms != hi_ms {
        return Err(bad("--expiry-range", text, "give both ends in the same unit: 1-2 or 500ms-1500ms"));
    }
    let number = |n: &str| n.parse::<u64>().ok().filter(|n| (1..=Expiry::MAX).contains(n));
    match (number(&lo), number(&hi)) {
        (Some(lo), Some(hi)) if lo <= hi => Ok(Expiry { lo, hi, millis: lo_ms }),
        _ => Err(bad("--expiry-range", text, why)),
    }
}

/// `--key-args 1,3`: argument positions from 1.
pub fn key_args(list: &str) -> Result<Vec<usize>, OptionError> {
    let parsed: Result<Vec<usize>, _> = list.split(',').map(|k| k.trim().parse::<usize>()).collect();
    match parsed {
        Ok(k) if !k.is_empty() && k.iter().all(|&k| k >= 1) => Ok(k),
        _ => Err(bad("--key-args", list, "argument positions from 1, comma separated: 1 or 1,3")),
    }
}

/// `--backend mio,uring`: each backend once.
pub fn backends(list: &str) -> Result<Vec<Backend>, OptionError> {
    let mut backends = Vec::new();
    for name in list.split(',') {
        let b = match name.trim() {
            "mio" => Backend::Mio,
            "smol" => Backend::Smol,
            "uring" => Backend::Uring,
            other => return Err(bad("--backend", other, "the backends are mio, smol and uring")),
        };
        if backends.contains(&b) {
            return Err(bad("--backend", list, "a backend is listed twice"));
        }
        backends.push(b);
    }
    Ok(backends)
}

/// A share given in percent, above 0 and below 100 (`respbench compare --fail-if-slower 5%`, or
/// `5`): 0.05.
pub fn percent(option: &'static str, text: &str) -> Result<f64, OptionError> {
    let n = text.trim().strip_suffix('%').unwrap_or(text.trim());
    match n.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p / 100.0),
        _ => Err(bad(option, text, "give a percentage above 0 and below 100, e.g. 5%")),
    }
}

/// An event's TIME: parts of a number and a unit (`h`, `m`, `s`, `ms`), as `30s`, `1m30s` or
/// `500ms`; at most a year.
pub fn event_time(text: &str) -> Result<Duration, OptionError> {
    let why = "TIME is like 30s, 1m30s or 500ms (units h, m, s, ms)";
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return Err(bad("--at", text, why));
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let unit_end = rest[digits..].find(|c: char| c.is_ascii_digit()).map_or(rest.len(), |u| digits + u);
        let number: f64 = rest[..digits].parse().map_err(|_| bad("--at", text, why))?;
        let scale = match &rest[digits..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            _ => return Err(bad("--at", text, why)),
        };
        total += number * scale;
        rest = &rest[unit_end..];
    }
    if !total.is_finite() || total > 365.0 * 86_400.0 {
        return Err(bad("--at", text, "must be at most a year"));
    }
    Ok(Duration::from_secs_f64(total))
}

/// Splits `text` into words as redis-cli does its command line: at white space, except within
/// double quotes (with the escapes `\"`, `\\`, `\n`, `\r`, `\t`) or single quotes (with `\'`);
/// a closing quote must end its word.
pub fn words(text: &str) -> Result<Vec<String>, &'static str> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else { return Ok(out) };
        let mut word = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("a quote is not closed"),
                    Some(c) if c == first => break,
                    Some('\\') => match (first, chars.next()) {
                        (_, None) => return Err("a quote is not closed"),
                        ('"', Some('n')) => word.push('\n'),
                        ('"', Some('r')) => word.push('\r'),
                        ('"', Some('t')) => word.push('\t'),
                        ('"', Some(c @ ('"' | '\\'))) | ('\'', Some(c @ '\'')) => word.push(c),
                        (_, Some(c)) => {
                            word.push('\\');
                            word.push(c);
                        }
                    },
                    Some(c) => word.push(c),
                }
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return Err("a closing quote must be followed by a space");
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                word.push(c);
            }
        }
        out.push(word);
    }
}

/// One `--at 'TIME CMD [ARG…]'` or `--at 'TIME exec PROGRAM [ARG…]'`, its words split as
/// redis-cli splits a command line ([`words`]: an argument with spaces is quoted).
pub fn event(text: &str) -> Result<crate::event::Event, OptionError> {
    use crate::event::{Action, Event};
    let trimmed = text.trim_start();
    let time =
        trimmed.split_whitespace().next().ok_or_else(|| bad("--at", text, "expected 'TIME CMD [ARG...]'"))?;
    let at = event_time(time)?;
    let given = trimmed[time.len()..].trim();
    let rest = words(given).map_err(|why| bad("--at", text, why))?;
    let action = match rest.split_first() {
        None => return Err(bad("--at", text, "expected a command after TIME: 'TIME CMD [ARG...]'")),
        Some((x, prog)) if x == "exec" => match prog.split_first() {
            None => {
                return Err(bad("--at", text, "expected a program after exec: 'TIME exec PROGRAM [ARG...]'"))
            }
            Some((p, args)) => Action::Exec { program: p.clone(), args: args.to_vec() },
        },
        Some(_) => Action::Command(rest.clone()),
    };
    Ok(Event { at, action, text: given.to_string() })
}

/// `--at` (each given) and `--at-node` (`primary`, `replica`, `all` or `HOST:PORT`): the run's
/// events in order of their time.
pub fn events(at: &[String], node: Option<&str>) -> Result<crate::event::Events, OptionError> {
    use crate::event::AtNode;
    let mut list = at.iter().map(|t| event(t)).collect::<Result<Vec<_>, _>>()?;
    list.sort_by_key(|e| e.at);
    let node = match node {
        None | Some("primary") => AtNode::Primaries,
        Some("replica") => AtNode::Replicas,
        Some("all") => AtNode::All,
        Some(n) => AtNode::Node(
            host_port(n).map_err(|_| bad("--at-node", n, "expected primary, replica, all or HOST:PORT"))?,
        ),
    };
    if list.is_empty() && node != AtNode::Primaries {
        return Err("--at-node says where --at's commands go: give --at".into());
    }
    Ok(crate::event::Events { list, node })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_pacing_is_checked() {
        let ms = Duration::from_millis;
        let b = reconnect(true, None, None, None).unwrap();
        assert_eq!((b.first, b.max, b.factor, b.attempts), (ms(10), ms(1000), 2.0, None));
        let b = reconnect(true, Some("1s,3600s"), Some("1.5"), Some(3)).unwrap();
        assert_eq!((b.first, b.max, b.factor, b.attempts), (ms(1000), ms(3_600_000), 1.5, Some(3)));
        // 1 s, then 1.5 s, 2.25 s…, up to the longest.
        assert_eq!(
            (b.next(Duration::ZERO), b.next(ms(1000)), b.next(ms(1500))),
            (ms(1000), ms(1500), ms(2250))
        );
        assert_eq!(b.next(ms(3_000_000)), ms(3_600_000));
        assert_eq!(reconnect(true, Some("2s"), None, None).unwrap().max, ms(2000));
        for (backoff, factor, attempts) in [
            (Some("0"), None, None),
            (Some("2s,1s"), None, None),
            (Some("x"), None, None),
            (None, Some("0"), None),
            (None, Some("-1"), None),
            (None, Some("inf"), None),
            (None, None, Some(0)),
        ] {
            assert!(
                reconnect(true, backoff, factor, attempts).is_err(),
                "{backoff:?} {factor:?} {attempts:?}"
            );
        }
        let e = reconnect(false, None, None, Some(3)).unwrap_err().to_string();
        assert!(e.contains("--reconnect-attempts") && e.contains("needs --reconnect"), "{e}");
    }

    #[test]
    fn replay_and_capture_options_are_checked() {
        assert_eq!(replay(None, None, None, false, false), Ok(None));
        assert!(replay(None, Some("2"), None, false, false).is_err());
        let s = replay(Some("f"), Some("2"), Some(3), true, false).unwrap().unwrap();
        assert_eq!((s.speed, s.passes, s.strict), (2.0, 3, true));
        for bad in ["0", "-1", "nan", "inf", "x", "2000"] {
            assert!(replay(Some("f"), Some(bad), None, false, false).is_err(), "{bad}");
        }
        assert!(replay(Some("f"), None, Some(0), false, false).is_err());
        assert!(capture(true, None, None).is_err());
        assert!(capture(true, Some("o"), Some(0)).is_err());
        assert!(capture(false, Some("o"), None).is_err());
        assert_eq!(capture(false, None, None), Ok(None));
    }

    #[test]
    fn tracking_options_need_tracking_and_prefixes_need_bcast() {
        use crate::config::TrackingMode;
        let t = Some("tracking");
        let p = vec!["a:".to_string(), "b:".to_string()];
        let c = tracking_test(Some("BCAST"), &p, true, Some("2"), t).unwrap();
        assert_eq!((c.mode, c.prefixes.len(), c.redirect, c.off), (TrackingMode::Bcast, 2, true, 2));
        assert_eq!(tracking_test(None, &[], false, None, t).unwrap().mode, TrackingMode::Default);
        assert_eq!(tracking_test(Some("optin"), &[], false, None, t).unwrap().mode, TrackingMode::Optin);
        for (mode, prefixes, off, tests, why) in [
            (Some("optin"), &[][..], None, Some("get"), "--tracking-mode is for -t tracking"),
            (None, &[][..], Some("1"), Some("expiry"), "--tracking-off is for -t tracking"),
            (Some("optin"), &p[..], None, t, "prefixes are for --tracking-mode bcast"),
            (None, &p[..], None, t, "prefixes are for --tracking-mode bcast"),
            (Some("lazy"), &[][..], None, t, "default, bcast or optin"),
            (None, &[][..], Some("1001"), t, "a count of readers from 0 to 1000"),
        ] {
            let e = tracking_test(mode, prefixes, false, off, tests).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn rate_is_one_positive_rate_and_names_itself() {
        assert_eq!(rate("32", &[], false, false).unwrap(), [32]);
        assert_eq!(rate("32", &[32], false, false).unwrap(), [32]);
        for bad in ["0", "-1", "abc", "", "1.5", "100000001"] {
            let e = rate(bad, &[], false, false).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "invalid value '{bad}' for --rate: the rate is requests per second, a whole number from 1 to 100000000"
                )
            );
        }
        let idle = rate("1", &[], true, false).unwrap_err().to_string();
        assert_eq!(idle, "--rate cannot be used with idle mode (-I).");
        assert!(rate("0", &[], true, false).unwrap_err().to_string().contains("idle mode (-I)"));
        for rps in [&[33][..], &[32, 64]] {
            let e = rate("32", rps, false, false).unwrap_err().to_string();
            assert_eq!(e, "--rate and --rps conflict: both set the target rate: give one, or the same rate");
        }
        assert!(rate("32", &[], false, true)
            .unwrap_err()
            .to_string()
            .starts_with("--rate and --slo conflict"));
    }

    #[test]
    fn words_split_as_redis_cli_splits_them() {
        let w = |t: &str| words(t).map(|v| v.join("|"));
        assert_eq!(w("  SET k  v "), Ok("SET|k|v".into()));
        assert_eq!(w(r#"SET k "a b\"c\\ \n""#), Ok("SET|k|a b\"c\\ \n".into()));
        assert_eq!(w(r"SET k 'it\'s \n'"), Ok("SET|k|it's \\n".into()));
        assert_eq!(w(r#"SET k """#), Ok("SET|k|".into()));
        assert_eq!(w(""), Ok(String::new()));
        assert!(w(r#"SET "k"v"#).is_err() && w(r#"SET "k"#).is_err() && w("SET 'k\\").is_err());
        let e = event(r#"2s exec sh -c "kill -STOP 1""#).unwrap();
        let crate::event::Action::Exec { program, args } = &e.action else { panic!("{e:?}") };
        assert_eq!(
            (program.as_str(), args.as_slice()),
            ("sh", &["-c".to_string(), "kill -STOP 1".to_string()][..])
        );
        assert_eq!(e.text, r#"exec sh -c "kill -STOP 1""#);
        assert!(event("2s SET 'k").unwrap_err().to_string().contains("a quote is not closed"));
    }

    fn timeout(v: &str) -> Result<Duration, String> {
        bounded_duration("--timeout", v, "leave --timeout out to wait forever").map_err(|e| e.to_string())
    }

    #[test]
    fn a_bounded_duration_takes_seconds_or_milliseconds() {
        assert_eq!(timeout("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(timeout("5"), Ok(Duration::from_secs(5)));
        assert_eq!(timeout("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(timeout("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(timeout("3600s"), Ok(Duration::from_secs(3600)));
        for v in
            ["0", "0ms", "0.0001", "-1", "x", "5h", "1e3", "inf", "NaN", "", "3601", "99999999999999999999"]
        {
            let e = timeout(v).unwrap_err();
            assert!(e.contains("--timeout"), "{v}: {e}");
        }
        assert!(timeout("0").unwrap_err().contains("leave --timeout out"));
    }

    #[test]
    fn a_duration_takes_units_up_to_a_year() {
        let d = |v: &str| duration("--duration", v);
        assert_eq!(d("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(d("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(d("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(d("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(d("1.5"), Ok(Duration::from_millis(1500)));
        for v in ["", "x", "5d", "-1s", "9999h"] {
            assert!(d(v).unwrap_err().to_string().contains("--duration"), "{v}");
        }
    }

    #[test]
    fn uri_sets_auth_host_port_db() {
        let u = uri("redis://bench:pw@example.com:6390/4").unwrap();
        assert_eq!(u.endpoint, Some(Endpoint::Tcp { host: "example.com".into(), port: 6390 }));
        assert_eq!((u.user.as_deref(), u.password.as_deref(), u.db), (Some("bench"), Some("pw"), Some(4)));
        assert!(!uri("redis://h").unwrap().secure && uri("rediss://h").unwrap().secure);
        assert_eq!(
            uri("redis://[::1]:6380").unwrap().endpoint,
            Some(Endpoint::Tcp { host: "::1".into(), port: 6380 })
        );
        assert!(uri("http://h").unwrap_err().to_string().contains("-u"));
    }

    #[test]
    fn uri_user_and_password_are_percent_decoded() {
        let u = uri("redis://b%40nch:p%3Aw%25d%2F@example.com/2").unwrap();
        assert_eq!(
            (u.user.as_deref(), u.password.as_deref(), u.db),
            (Some("b@nch"), Some("p:w%d/"), Some(2))
        );
        assert_eq!(uri("redis://%C3%A9t%C3%A9@h").unwrap().password.as_deref(), Some("été"));
        for b in ["redis://:%zz@h", "redis://:abc%4@h", "redis://:%@h", "redis://:%ff@h"] {
            let e = uri(b).unwrap_err().to_string();
            assert!(e.contains("-u"), "{b}: {e}");
        }
        assert!(uri("redis://:%zz@h")
            .unwrap_err()
            .to_string()
            .contains("'%zz' is not a percent-encoded byte"));
    }

    #[test]
    fn lists_check_each_item() {
        assert_eq!(rates("1000, 2000"), Ok(vec![1000, 2000]));
        assert!(rates("0").is_err() && rates("x").is_err() && rates("100000001").is_err());
        assert_eq!(mix("GET:10,set"), Ok(vec![("get".into(), 10), ("set".into(), 1)]));
        assert!(mix("get:0").is_err() && mix("get:1000001").is_err());
        assert_eq!(mix_command("3 SET k v"), Ok((vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()], 3)));
        let (args, _) = mix_command(r#"1 HSET h name "User 1" blob "\x86\x00\"" 'it\'s'"#).unwrap();
        assert_eq!(args, [&b"HSET"[..], b"h", b"name", b"User 1", b"blob", b"\x86\x00\"", b"it's"]);
        assert!(mix_command("3").is_err() && mix_command("x SET").is_err());
        use respbench_core::dist::KeyDist;
        let spec = "set:1@seq/10000,GET:10@zipf:0.99,ping";
        assert_eq!(mix(spec), Ok(vec![("set".into(), 1), ("get".into(), 10), ("ping".into(), 1)]));
        assert_eq!(
            mix_keys(spec),
            Ok(vec![
                Some(PartKeys { dist: KeyDist::Sequential, n: Some(10_000) }),
                Some(PartKeys { dist: KeyDist::Zipf(0.99), n: None }),
                None
            ])
        );
        for bad in ["get@zipf:0", "get@nope", "get@seq/x", "get@seq/1000000000001", "get@"] {
            assert!(mix_keys(bad).is_err(), "{bad}");
        }
        assert_eq!(mix_command("3@uniform/7 GET k"), Ok((vec![b"GET".to_vec(), b"k".to_vec()], 3)));
        assert_eq!(
            mix_command_keys("3@uniform/7 GET k"),
            Ok(Some(PartKeys { dist: KeyDist::Uniform, n: Some(7) }))
        );
        assert_eq!(mix_command_keys("3 GET k"), Ok(None));
        assert_eq!(expiry_range("1-2"), Ok(Expiry { lo: 1, hi: 2, millis: false }));
        assert_eq!(expiry_range("5s-10s"), Ok(Expiry { lo: 5, hi: 10, millis: false }));
        assert_eq!(expiry_range("500ms-1500ms"), Ok(Expiry { lo: 500, hi: 1500, millis: true }));
        assert_eq!(expiry_range("7"), Ok(Expiry { lo: 7, hi: 7, millis: false }));
        for bad in ["0-2", "2-1", "1-2ms", "x", "1-10000000001", "-", ""] {
            assert!(expiry_range(bad).is_err(), "{bad}");
        }
        assert_eq!(key_args("1,3"), Ok(vec![1, 3]));
        assert!(key_args("0").is_err() && key_args("").is_err());
        assert_eq!(backends("mio,uring"), Ok(vec![Backend::Mio, Backend::Uring]));
        assert!(backends("mio,mio").unwrap_err().to_string().contains("twice"));
        assert_eq!(percentiles("50,99.9"), Ok(vec![50.0, 99.9]));
        assert!(percentiles("101").is_err());
        assert_eq!(host_port("[::1]:6380"), Ok(Endpoint::Tcp { host: "::1".into(), port: 6380 }));
        assert!(host_port("h:0").is_err() && host_port(":1").is_err() && host_port("h").is_err());
        let positive = |n: i64| (n > 0).then_some(n).ok_or("must be positive");
        assert_eq!(numbers("1,2", "-c", positive), Ok(vec![1, 2]));
        assert!(numbers("1,0", "-c", positive).unwrap_err().to_string().contains("must be positive"));
    }

    #[test]
    fn percentages() {
        assert_eq!(percent("--fail-if-slower", "5%"), Ok(0.05));
        assert_eq!(percent("--fail-if-slower", "2.5"), Ok(0.025));
        for v in ["0", "100%", "-1%", "five", ""] {
            let e = percent("--fail-if-slower", v).unwrap_err().to_string();
            assert!(e.contains("--fail-if-slower") && e.contains("above 0 and below 100"), "{v}: {e}");
        }
    }

    #[test]
    fn event_times_and_specs() {
        let ms = |n| Duration::from_millis(n);
        assert_eq!(event_time("30s").unwrap(), ms(30_000));
        assert_eq!(event_time("1m30s").unwrap(), ms(90_000));
        assert_eq!(event_time("500ms").unwrap(), ms(500));
        assert_eq!(event_time("1h2m3s4ms").unwrap(), ms(3_723_004));
        assert_eq!(event_time("2.5s").unwrap(), ms(2500));
        for t in ["", "5", "5x", "s", "1m30", "-1s", "5 s"] {
            let e = event_time(t).unwrap_err().to_string();
            assert!(e.contains("TIME is like 30s, 1m30s or 500ms"), "{t}: {e}");
        }
        let e = event("5s CLIENT PAUSE 500 WRITE").unwrap();
        assert_eq!(e.at, ms(5000));
        assert_eq!(
            e.action,
            crate::event::Action::Command(vec![
                "CLIENT".into(),
                "PAUSE".into(),
                "500".into(),
                "WRITE".into()
            ])
        );
        assert_eq!(e.text, "CLIENT PAUSE 500 WRITE");
        let e = event("4s exec kill -STOP 42").unwrap();
        assert_eq!(
            e.action,
            crate::event::Action::Exec { program: "kill".into(), args: vec!["-STOP".into(), "42".into()] }
        );
        assert!(event("4s").unwrap_err().to_string().contains("expected a command after TIME"));
        assert!(event("4s exec").unwrap_err().to_string().contains("expected a program after exec"));
        let all = events(&["5s PING".into(), "2s BGSAVE".into()], Some("127.0.0.1:7001")).unwrap();
        assert_eq!(all.planned(), [ms(2000), ms(5000)]);
        assert_eq!(
            all.node,
            crate::event::AtNode::Node(Endpoint::Tcp { host: "127.0.0.1".into(), port: 7001 })
        );
        assert!(events(&["5s PING".into()], Some("leader"))
            .unwrap_err()
            .to_string()
            .contains("primary, replica, all or HOST:PORT"));
        assert!(events(&[], Some("all")).unwrap_err().to_string().contains("give --at"));
    }
}

/// Parses `--ramp`: `clients FROM..TO step N every DURATION` or `rps FROM..TO step N every
/// DURATION` (`clients 10..200 step 10 every 5s`): levels from FROM up to TO by N, each held
/// for DURATION (whole milliseconds, at least 100ms). The ramp's start is the test's, set when
/// it runs.
pub fn ramp(text: &str) -> Result<respbench_core::Ramp, OptionError> {
    use respbench_core::{Ramp, RampKind};
    const SHAPE: &str = "expected 'clients FROM..TO step N every DURATION' or 'rps FROM..TO step N every \
                         DURATION', e.g. 'clients 10..200 step 10 every 5s'";
    let words: Vec<&str> = text.split_whitespace().collect();
    let [kind, range, "step", step, "every", every] = words[..] else {
        return Err(bad("--ramp", text, SHAPE));
    };
    let kind = match kind {
        "clients" => RampKind::Clients,
        "rps" => RampKind::Rps,
        _ => return Err(bad("--ramp", text, "a ramp raises 'clients' or 'rps'")),
    };
    let (max, what) = match kind {
        RampKind::Clients => (1_000_000, "clients must be 1 to 1000000"),
        RampKind::Rps => (1_000_000_000, "a rate must be 1 to 1000000000 requests a second"),
    };
    let number = |s: &str| -> Result<u64, OptionError> {
        let n: u64 = s.parse().map_err(|_| bad("--ramp", text, SHAPE))?;
        if (1..=max).contains(&n) {
            Ok(n)
        } else {
            Err(bad("--ramp", text, what))
        }
    };
    let (from, to) = range.split_once("..").ok_or_else(|| bad("--ramp", text, SHAPE))?;
    let (from, to, step) = (number(from)?, number(to)?, number(step)?);
    if from > to {
        return Err(bad("--ramp", text, "a ramp goes up: FROM must be at most TO"));
    }
    let every = duration("--ramp", every)?;
    if every < Duration::from_millis(100) || every.subsec_nanos() % 1_000_000 != 0 {
        return Err(bad("--ramp", text, "each step lasts whole milliseconds, at least 100ms"));
    }
    let r = Ramp { kind, from, to, step, every, start: respbench_core::Time::ZERO };
    if r.steps() > 1_000 {
        return Err(bad("--ramp", text, "a ramp has at most 1000 steps"));
    }
    Ok(r)
}

#[cfg(test)]
mod ramp_tests {
    use super::*;
    use respbench_core::RampKind;

    #[test]
    fn a_ramp_parses_and_bad_ones_name_the_option() {
        let r = ramp("clients 10..200 step 10 every 5s").unwrap();
        assert_eq!(
            (r.kind, r.from, r.to, r.step, r.every),
            (RampKind::Clients, 10, 200, 10, Duration::from_secs(5))
        );
        assert_eq!(r.steps(), 20);
        let r = ramp("rps 1000..50000 step 1000 every 2s").unwrap();
        assert_eq!((r.kind, r.steps(), r.level(49), r.level(60)), (RampKind::Rps, 50, 50_000, 50_000));
        // A step that does not divide the range: the last level is TO.
        let r = ramp("clients 2..9 step 3 every 1s").unwrap();
        assert_eq!((0..4).map(|k| r.level(k)).collect::<Vec<_>>(), vec![2, 5, 8, 9]);
        for bad in [
            "",
            "clients",
            "clients 10..5 step 1 every 1s",
            "clients 0..5 step 1 every 1s",
            "clients 1..5 step 0 every 1s",
            "clients 1..5 step 1 every 0s",
            "clients 1..5 step 1 every 10ms",
            "clients 1..5 step 1",
            "conns 1..5 step 1 every 1s",
            "rps 1-5 step 1 every 1s",
            "rps 1..1000000 step 1 every 1s",
            "rps 1..5 step 1 every 1s extra",
        ] {
            let e = ramp(bad).unwrap_err().to_string();
            assert!(e.contains("--ramp"), "{bad}: {e}");
        }
    }
}
