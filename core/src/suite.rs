//! redis-benchmark's tests: the default suite with its titles, commands, keys and payloads, the
//! `-t` selection, and custom commands.

use crate::dist::ValueSize;
use crate::resp::Value;
use crate::template::{Arg, Template, Values};

/// One test of a run: a title and the request every connection sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestSpec {
    /// The title printed in reports (`SET`, `LRANGE_100 (first 100 elements)`, or a custom
    /// command's arguments joined by spaces).
    pub title: String,
    /// The request.
    pub template: Template,
    /// The "bytes payload" figure of the report: `-d`, or a custom command's encoded length.
    pub payload_bytes: usize,
    /// Each request on a connection of its own, opened, handshaken and closed (the `connect`
    /// test: its rate is connections per second), whatever `-k` and `-P` say.
    pub connection_per_request: bool,
}

/// The names `-t` accepts, in suite order (`ping` and `lrange` select several tests).
pub const TEST_NAMES: &[&str] = &[
    "ping_inline",
    "ping_mbulk",
    "ping",
    "set",
    "get",
    "incr",
    "lpush",
    "rpush",
    "lpop",
    "rpop",
    "sadd",
    "hset",
    "spop",
    "zadd",
    "zpopmin",
    "lrange",
    "lrange_100",
    "lrange_300",
    "lrange_500",
    "lrange_600",
    "mset",
    "mget",
    "xadd",
    "connect",
    "function_load",
    "fcall",
    "pubsub",
    "blpop",
    "xreadgroup",
    "expiry",
    "tracking",
];

/// The delivery tests (issue #42): a publisher and subscribers, or pushes and waiters.
const DELIVERY: &[&str] = &["pubsub", "blpop", "xreadgroup"];

/// The first delivery test `-t`'s list (`tests`, comma-separated, any case) names, if any.
pub fn delivery_test(tests: &str) -> Option<&'static str> {
    tests.split(',').find_map(|t| DELIVERY.iter().copied().find(|d| t.trim().eq_ignore_ascii_case(d)))
}

/// Tests that only an explicit `-t` selects: not part of redis-benchmark's default suite
/// (`mget`, `function_load` and `fcall` are valkey-benchmark 9's, which its default suite runs;
/// the last two are for servers with FUNCTION).
const EXPLICIT_ONLY: &[&str] =
    &["connect", "mget", "function_load", "fcall", "pubsub", "blpop", "xreadgroup", "expiry", "tracking"];

/// Which tests `-t` selected: a comma-separated, case-insensitive list, as redis-benchmark reads
/// it. `None` selects every test.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    names: Option<Vec<String>>,
    /// Without names: valkey-benchmark 9's default, which runs `mget`, `function_load` and
    /// `fcall` too.
    valkey: bool,
}

impl Selection {
    /// Parses a `-t` list. Names that select no test are returned as the error, so the user hears
    /// of a typo instead of getting an empty run.
    pub fn parse(list: &str) -> Result<Selection, Vec<String>> {
        let names: Vec<String> =
            list.split(',').map(|s| s.trim().to_ascii_lowercase()).filter(|s| !s.is_empty()).collect();
        let unknown: Vec<String> =
            names.iter().filter(|n| !TEST_NAMES.contains(&n.as_str())).cloned().collect();
        if !unknown.is_empty() || names.is_empty() {
            return Err(if names.is_empty() { vec![list.to_string()] } else { unknown });
        }
        Ok(Selection { names: Some(names), valkey: false })
    }

    /// Every test of redis-benchmark 7's default run.
    pub fn all() -> Selection {
        Selection { names: None, valkey: false }
    }

    /// Every test of valkey-benchmark 9's default run: redis-benchmark's with `mget` after
    /// `mset`, then `function_load` and `fcall` (which it runs whatever the server).
    pub fn valkey_default() -> Selection {
        Selection { names: None, valkey: true }
    }

    fn has(&self, name: &str) -> bool {
        match &self.names {
            None if self.valkey => {
                !matches!(name, "connect" | "pubsub" | "blpop" | "xreadgroup" | "expiry" | "tracking")
            }
            None => !EXPLICIT_ONLY.contains(&name),
            Some(names) => names.iter().any(|n| n == name),
        }
    }
}

/// The default suite in redis-benchmark's order, restricted to `selection`. `values` is `-d`
/// (a fixed size gives redis-benchmark's exact requests); `random_keys` is whether `-r` was
/// given (it turns ZADD's score into a placeholder too); `key_prefix` (`--key-prefix`, empty
/// for none) is put before every key name (`key:__rand_int__`, `counter:…`, `mylist`, …), not
/// before set members or hash fields.
pub fn default_suite(
    selection: &Selection,
    values: &ValueSize,
    random_keys: bool,
    key_prefix: &str,
) -> Vec<TestSpec> {
    // Made when the first test that carries a value is: a run of GET or PING with a large -d
    // allocates none.
    let shared = std::cell::LazyCell::new(|| Values::new(values));
    let no_values = Values::new(&ValueSize::Fixed(0));
    let payload_bytes = values.max();
    let name = |n: &str| [key_prefix.as_bytes(), n.as_bytes()].concat();
    let (key, counter) = (name("key:__rand_int__"), name("counter:__rand_int__"));
    let (mylist, myset, myhash) = (name("mylist"), name("myset"), name("myhash"));
    let (myzset, mystream) = (name("myzset"), name("mystream"));
    use Arg::{Bytes as B, Value as V};
    let mut tests = Vec::new();
    let mut push = |title: &str, template: Template| {
        tests.push(TestSpec {
            title: title.to_string(),
            template,
            payload_bytes,
            connection_per_request: false,
        });
    };
    let s = selection;
    if s.has("ping_inline") || s.has("ping") {
        push("PING_INLINE", Template::inline(b"PING\r\n"));
    }
    let mut add = |title: &str, args: &[Arg]| {
        let carries = args.iter().any(|a| matches!(a, Arg::Value));
        push(title, Template::with_values(args, if carries { &shared } else { &no_values }))
    };
    if s.has("ping_mbulk") || s.has("ping") {
        add("PING_MBULK", &[B(b"PING")]);
    }
    if s.has("set") {
        add("SET", &[B(b"SET"), B(&key), V]);
    }
    if s.has("get") {
        add("GET", &[B(b"GET"), B(&key)]);
    }
    if s.has("incr") {
        add("INCR", &[B(b"INCR"), B(&counter)]);
    }
    if s.has("lpush") {
        add("LPUSH", &[B(b"LPUSH"), B(&mylist), V]);
    }
    if s.has("rpush") {
        add("RPUSH", &[B(b"RPUSH"), B(&mylist), V]);
    }
    if s.has("lpop") {
        add("LPOP", &[B(b"LPOP"), B(&mylist)]);
    }
    if s.has("rpop") {
        add("RPOP", &[B(b"RPOP"), B(&mylist)]);
    }
    if s.has("sadd") {
        add("SADD", &[B(b"SADD"), B(&myset), B(b"element:__rand_int__")]);
    }
    if s.has("hset") {
        add("HSET", &[B(b"HSET"), B(&myhash), B(b"element:__rand_int__"), V]);
    }
    if s.has("spop") {
        add("SPOP", &[B(b"SPOP"), B(&myset)]);
    }
    if s.has("zadd") {
        let score: &[u8] = if random_keys { b"__rand_int__" } else { b"0" };
        add("ZADD", &[B(b"ZADD"), B(&myzset), B(score), B(b"element:__rand_int__")]);
    }
    if s.has("zpopmin") {
        add("ZPOPMIN", &[B(b"ZPOPMIN"), B(&myzset)]);
    }
    let lrange = ["lrange_100", "lrange_300", "lrange_500", "lrange_600"];
    if s.has("lrange") || lrange.iter().any(|n| s.has(n)) {
        add("LPUSH (needed to benchmark LRANGE)", &[B(b"LPUSH"), B(&mylist), V]);
    }
    for (lname, last) in lrange.iter().zip(["99", "299", "499", "599"]) {
        if s.has("lrange") || s.has(lname) {
            let n = &lname[7..];
            add(
                &format!("LRANGE_{n} (first {n} elements)"),
                &[B(b"LRANGE"), B(&mylist), B(b"0"), B(last.as_bytes())],
            );
        }
    }
    if s.has("mset") {
        add(MSET_TITLE, &ten_keys(b"MSET", &key));
    }
    if s.has("mget") {
        add(MGET_TITLE, &ten_keys(b"MGET", &key));
    }
    if s.has("xadd") {
        add("XADD", &[B(b"XADD"), B(&mystream), B(b"*"), B(b"myfield"), V]);
    }
    if s.has("pubsub") {
        // Delivery latency (issue #42): each payload starts with its stamp; the session's
        // subscribers time it. Only an explicit `-t` selects it.
        let t = Template::stamped(&[b"PUBLISH", &name(PUBSUB_CHANNEL)], payload_bytes);
        tests.push(TestSpec {
            title: PUBSUB_TITLE.into(),
            payload_bytes: payload_bytes.max(crate::delivery::STAMP_LEN),
            template: t,
            connection_per_request: false,
        });
    }
    if s.has("blpop") {
        // The same for a list: LPUSH, and the session's waiters in BLPOP.
        let t = Template::stamped(&[b"LPUSH", &name(BLPOP_KEY)], payload_bytes);
        tests.push(TestSpec {
            title: BLPOP_TITLE.into(),
            payload_bytes: payload_bytes.max(crate::delivery::STAMP_LEN),
            template: t,
            connection_per_request: false,
        });
    }
    if s.has("xreadgroup") {
        // The same for a stream: XADD, and the session's consumers of one group.
        let t = Template::stamped(&[b"XADD", &name(STREAM_KEY), b"*", b"payload"], payload_bytes);
        tests.push(TestSpec {
            title: STREAM_TITLE.into(),
            payload_bytes: payload_bytes.max(crate::delivery::STAMP_LEN),
            template: t,
            connection_per_request: false,
        });
    }
    if s.has("expiry") {
        // Expiry lag (issue #52): the session writes each key with its own deadline and times
        // its expired event; this request is what the reports show of it.
        let t =
            Template::command(&[b"SET", &name(crate::expiry::EXPIRY_KEY), b"value", b"PXAT", b"deadline"]);
        tests.push(TestSpec {
            title: crate::expiry::EXPIRY_TITLE.into(),
            payload_bytes,
            template: t,
            connection_per_request: false,
        });
    }
    if s.has("tracking") {
        // Invalidation latency (issue #52): the session's readers track the keys it writes.
        let t = Template::command(&[b"SET", &name(crate::tracking::TRACKING_KEY), b"value"]);
        tests.push(TestSpec {
            title: crate::tracking::TRACKING_TITLE.into(),
            payload_bytes,
            template: t,
            connection_per_request: false,
        });
    }
    if s.has("connect") {
        // Open a connection, handshake, one PING, close: what connection-rate guides measure.
        let t = Template::command(&[b"PING"]);
        tests.push(TestSpec {
            title: "CONNECT (open, PING, close)".into(),
            payload_bytes: t.len(),
            template: t,
            connection_per_request: true,
        });
    }
    tests
}

/// The channel `-t pubsub` publishes to (after `--key-prefix`).
pub const PUBSUB_CHANNEL: &str = "respbench:channel";
/// The title of `-t pubsub`'s test under `--cluster`: sharded pub/sub.
pub const SHARDED_TITLE: &str = "SPUBLISH (delivery to shard subscribers)";

/// `-t pubsub` under `--cluster`: `SPUBLISH` to the channel (after `key_prefix`), routed by its
/// slot as a key is; the session's subscribers `SSUBSCRIBE` on the node that owns it.
pub fn sharded_pubsub(key_prefix: &str, payload_bytes: usize) -> TestSpec {
    let channel = [key_prefix.as_bytes(), PUBSUB_CHANNEL.as_bytes()].concat();
    TestSpec {
        title: SHARDED_TITLE.into(),
        template: Template::stamped(&[b"SPUBLISH", &channel], payload_bytes),
        payload_bytes: payload_bytes.max(crate::delivery::STAMP_LEN),
        connection_per_request: false,
    }
}

/// `-t pubsub --channels M`: `PUBLISH` to `respbench:channel:000000` … (after `key_prefix`),
/// the channels in turn; the subscribers subscribe to all of them.
pub fn pubsub_channels(key_prefix: &str, channels: u64, payload_bytes: usize) -> TestSpec {
    let base = [key_prefix.as_bytes(), PUBSUB_CHANNEL.as_bytes(), b":"].concat();
    TestSpec {
        title: format!("{PUBSUB_TITLE} --channels {channels}"),
        template: Template::stamped_channels(b"PUBLISH", &base, channels, payload_bytes),
        payload_bytes: payload_bytes.max(crate::delivery::STAMP_LEN),
        connection_per_request: false,
    }
}

/// The list `-t blpop` pushes to (after `--key-prefix`).
pub const BLPOP_KEY: &str = "respbench:queue";
/// The title of `-t blpop`'s test.
pub const BLPOP_TITLE: &str = "LPUSH (delivery to BLPOP waiters)";
/// The stream `-t xreadgroup` adds to (after `--key-prefix`); its consumers' group is
/// [`STREAM_GROUP`].
pub const STREAM_KEY: &str = "respbench:stream";
/// The consumer group of `-t xreadgroup`.
pub const STREAM_GROUP: &str = "respbench";
/// The title of `-t xreadgroup`'s test.
pub const STREAM_TITLE: &str = "XADD (delivery to XREADGROUP consumers)";
/// The title of `-t pubsub`'s test.
pub const PUBSUB_TITLE: &str = "PUBLISH (delivery to subscribers)";

/// The title of valkey-benchmark 9's `fcall` test, whose library must be loaded first
/// ([`function_library`] with one function).
pub const FCALL_TITLE: &str = "FCALL";

/// A Lua library for `FUNCTION LOAD` (`benchlib`) of `functions` functions, `foo1` to
/// `fooN`; each returns its first key `with_keys`, else 0.
pub fn function_library(functions: u32, with_keys: bool) -> Vec<u8> {
    let body = if with_keys { "return keys[1]" } else { "return 0" };
    let mut lib = String::from("#!lua name=benchlib\n");
    for n in 1..=functions {
        lib += &format!("redis.register_function('foo{n}', function(keys, args) {body} end)\n");
    }
    lib.into_bytes()
}

/// valkey-benchmark 9's function tests that `selection` names: `function_load` (`FUNCTION LOAD
/// REPLACE` of a library of `functions` functions, `--num-functions`) and `fcall` (`FCALL foo1`
/// with `keys` keys, `key1` …, `--num-keys-in-fcall`).
pub fn function_tests(selection: &Selection, functions: u32, keys: u32) -> Vec<TestSpec> {
    let mut tests = Vec::new();
    if selection.has("function_load") {
        let lib = function_library(functions, false);
        let t = Template::command(&[b"FUNCTION", b"LOAD", b"REPLACE", &lib]);
        tests.push(TestSpec {
            title: "FUNCTION LOAD".into(),
            payload_bytes: t.len(),
            template: t,
            connection_per_request: false,
        });
    }
    if selection.has("fcall") {
        let names: Vec<Vec<u8>> = (1..=keys).map(|i| format!("key{i}").into_bytes()).collect();
        let n = keys.to_string();
        let mut args: Vec<&[u8]> = vec![b"FCALL", b"foo1", n.as_bytes()];
        args.extend(names.iter().map(Vec::as_slice));
        let t = Template::command(&args);
        tests.push(TestSpec {
            title: FCALL_TITLE.into(),
            payload_bytes: t.len(),
            template: t,
            connection_per_request: false,
        });
    }
    tests
}

/// The title of the default suite's MSET.
pub const MSET_TITLE: &str = "MSET (10 keys)";
/// The title of valkey-benchmark 9's `-t mget` (in its default suite, not redis-benchmark's).
pub const MGET_TITLE: &str = "MGET (10 keys)";

/// MSET's or MGET's (`command`) arguments: ten keys, `key` each (its placeholder drawn apart in
/// each: valkey-benchmark's `__rand_int__`), MSET's each followed by a value.
fn ten_keys<'a>(command: &'static [u8], key: &'a [u8]) -> Vec<Arg<'a>> {
    let mut args = vec![Arg::Bytes(command)];
    for _ in 0..10 {
        args.push(Arg::Bytes(key));
        if command == b"MSET" {
            args.push(Arg::Value);
        }
    }
    args
}

/// The default suite's MSET or MGET (`title`) for Redis Cluster: its ten keys are
/// redis-benchmark's cluster names, `key:{tag}:__rand_int__`, so that one request's keys share a
/// slot (the router fills the tag from the first key's slot; see [`crate::cluster`]). `None` for
/// another test.
pub fn cluster_ten_keys(title: &str, values: &ValueSize, key_prefix: &str) -> Option<TestSpec> {
    let command: &'static [u8] = match title {
        MSET_TITLE => b"MSET",
        MGET_TITLE => b"MGET",
        _ => return None,
    };
    let shared = Values::new(if command == b"MSET" { values } else { &ValueSize::Fixed(0) });
    let key = [key_prefix.as_bytes(), b"key:{tag}:__rand_int__"].concat();
    Some(TestSpec {
        title: title.to_string(),
        template: Template::with_values(&ten_keys(command, &key), &shared),
        payload_bytes: values.max(),
        connection_per_request: false,
    })
}

/// A custom command given after the options: its title is the arguments joined by spaces and its
/// "bytes payload" the encoded request's length, as in redis-benchmark.
pub fn custom(args: &[Vec<u8>]) -> TestSpec {
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let template = Template::command(&refs);
    let title = args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ");
    TestSpec { title, payload_bytes: template.len(), template, connection_per_request: false }
}

/// valkey-benchmark 9's placeholder for a value of `-d` bytes.
pub const DATA: &[u8] = b"__data__";

/// [`custom`] with valkey-benchmark 9's `__data__` filled from `values` (`-d`): an argument
/// that is `__data__` is a value of a size drawn per request (`-d 16-1024`), and `__data__`
/// inside an argument becomes a value of the largest size.
pub fn custom_with_data(args: &[Vec<u8>], values: &ValueSize) -> TestSpec {
    if !args.iter().any(|a| a.windows(DATA.len()).any(|w| w == DATA)) {
        return custom(args);
    }
    let shared = Values::new(values);
    let inlined: Vec<Vec<u8>> = args
        .iter()
        .map(|a| {
            let mut out = Vec::with_capacity(a.len());
            let mut rest = &a[..];
            while let Some(at) = rest.windows(DATA.len()).position(|w| w == DATA) {
                out.extend_from_slice(&rest[..at]);
                out.extend_from_slice(shared.largest());
                rest = &rest[at + DATA.len()..];
            }
            out.extend_from_slice(rest);
            out
        })
        .collect();
    let parts: Vec<Arg> = args
        .iter()
        .zip(&inlined)
        .map(|(a, inlined)| if a == DATA { Arg::Value } else { Arg::Bytes(inlined) })
        .collect();
    let template = Template::with_values(&parts, &shared);
    let title = args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ");
    TestSpec { title, payload_bytes: template.len(), template, connection_per_request: false }
}

/// The key pattern of a `GET key` request; `None` for any other.
fn get_key(template: &Template) -> Option<Vec<u8>> {
    let (Value::Array(args), _) = Value::parse(template.as_bytes()).ok()?? else { return None };
    let [Value::Bulk(command), Value::Bulk(key)] = args.as_slice() else { return None };
    command.eq_ignore_ascii_case(b"GET").then(|| key.to_vec())
}

/// Whether `--preload` has something to write before a test of `template` ([`preload`]),
/// without making its values (which may be a gigabyte).
pub fn preloadable(template: &Template) -> bool {
    get_key(template).is_some()
}

/// What `--preload` writes before a test whose request is `GET key`: `SET key VALUE`, the
/// same key pattern with values from `values`, so that every key the test can read exists once
/// it has run over the keyspace. `None` for any other request.
pub fn preload(template: &Template, values: &ValueSize) -> Option<TestSpec> {
    let key = get_key(template)?;
    let template =
        Template::with_values(&[Arg::Bytes(b"SET"), Arg::Bytes(&key), Arg::Value], &Values::new(values));
    Some(TestSpec {
        title: format!("SET {}", String::from_utf8_lossy(&key)),
        template,
        payload_bytes: values.max(),
        connection_per_request: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(s: &[TestSpec]) -> Vec<&str> {
        s.iter().map(|t| t.title.as_str()).collect()
    }

    #[test]
    fn default_suite_matches_redis_benchmark_order() {
        let s = default_suite(&Selection::all(), &ValueSize::Fixed(3), false, "");
        assert_eq!(
            titles(&s),
            [
                "PING_INLINE",
                "PING_MBULK",
                "SET",
                "GET",
                "INCR",
                "LPUSH",
                "RPUSH",
                "LPOP",
                "RPOP",
                "SADD",
                "HSET",
                "SPOP",
                "ZADD",
                "ZPOPMIN",
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_100 (first 100 elements)",
                "LRANGE_300 (first 300 elements)",
                "LRANGE_500 (first 500 elements)",
                "LRANGE_600 (first 600 elements)",
                "MSET (10 keys)",
                "XADD",
            ]
        );
        assert_eq!(s[0].template.as_bytes(), b"PING\r\n");
        assert_eq!(s[2].template.as_bytes(), b"*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nVXK\r\n");
        assert_eq!(
            s[12].template.as_bytes(),
            b"*4\r\n$4\r\nZADD\r\n$6\r\nmyzset\r\n$1\r\n0\r\n$20\r\nelement:__rand_int__\r\n"
        );
        assert_eq!(
            s[18].template.as_bytes(),
            b"*4\r\n$6\r\nLRANGE\r\n$6\r\nmylist\r\n$1\r\n0\r\n$3\r\n599\r\n"
        );
    }

    #[test]
    fn selection_follows_t() {
        let sel = Selection::parse("SET,lpush").unwrap();
        assert_eq!(titles(&default_suite(&sel, &ValueSize::Fixed(3), false, "")), ["SET", "LPUSH"]);
        let sel = Selection::parse("ping").unwrap();
        assert_eq!(
            titles(&default_suite(&sel, &ValueSize::Fixed(3), false, "")),
            ["PING_INLINE", "PING_MBULK"]
        );
        let sel = Selection::parse("lrange_300").unwrap();
        assert_eq!(
            titles(&default_suite(&sel, &ValueSize::Fixed(3), false, "")),
            ["LPUSH (needed to benchmark LRANGE)", "LRANGE_300 (first 300 elements)"]
        );
        assert_eq!(Selection::parse("set,bogus").unwrap_err(), ["bogus"]);
        assert!(Selection::parse(",").is_err());
    }

    #[test]
    fn zadd_score_is_random_with_r() {
        let sel = Selection::parse("zadd").unwrap();
        let s = default_suite(&sel, &ValueSize::Fixed(3), true, "");
        assert_eq!(
            s[0].template.as_bytes(),
            b"*4\r\n$4\r\nZADD\r\n$6\r\nmyzset\r\n$12\r\n__rand_int__\r\n$20\r\nelement:__rand_int__\r\n"
        );
    }

    #[test]
    fn key_prefix_goes_before_every_key_name() {
        let s = default_suite(&Selection::all(), &ValueSize::Fixed(3), true, "{b}");
        let keys: Vec<&[u8]> = s.iter().map(|t| t.template.as_bytes()).collect();
        assert!(keys[2].ends_with(b"$19\r\n{b}key:__rand_int__\r\n$3\r\nVXK\r\n"), "SET");
        assert!(String::from_utf8_lossy(keys[4]).contains("{b}counter:__rand_int__"), "INCR");
        assert!(String::from_utf8_lossy(keys[10]).contains("{b}myhash\r\n$20\r\nelement:"), "HSET field");
        for (t, bytes) in s.iter().zip(&keys) {
            let text = String::from_utf8_lossy(bytes);
            let ok = text.contains("{b}") || t.title.starts_with("PING");
            assert!(ok, "{}: {text}", t.title);
        }
        // An empty prefix is redis-benchmark's names.
        let plain = default_suite(&Selection::all(), &ValueSize::Fixed(3), true, "");
        assert!(plain.iter().all(|t| !String::from_utf8_lossy(t.template.as_bytes()).contains('{')));
    }

    #[test]
    fn valkeys_default_adds_the_function_tests_and_redis_benchmarks_does_not() {
        let v = ValueSize::Fixed(3);
        let titles = |s: &Selection| {
            let mut t: Vec<String> = default_suite(s, &v, false, "").into_iter().map(|t| t.title).collect();
            t.extend(function_tests(s, 10, 0).into_iter().map(|t| t.title));
            t
        };
        let redis = titles(&Selection::all());
        let valkey = titles(&Selection::valkey_default());
        assert_eq!(redis.len(), 21);
        // valkey-benchmark's MGET comes after MSET, before XADD.
        assert_eq!((&redis[19], &redis[20]), (&MSET_TITLE.to_string(), &"XADD".to_string()));
        assert_eq!(valkey[..20], redis[..20]);
        assert_eq!(valkey[20..], [MGET_TITLE, "XADD", "FUNCTION LOAD", "FCALL"]);
    }

    #[test]
    fn mget_is_valkeys_ten_keys_each_drawn_apart() {
        let mget = |prefix: &str| {
            let s = default_suite(&Selection::parse("mget").unwrap(), &ValueSize::Fixed(3), true, prefix);
            assert_eq!(titles(&s), ["MGET (10 keys)"]);
            s[0].template.as_bytes().to_vec()
        };
        let key = "$16\r\nkey:__rand_int__\r\n".repeat(10);
        assert_eq!(String::from_utf8(mget("")).unwrap(), format!("*11\r\n$4\r\nMGET\r\n{key}"));
        assert!(String::from_utf8(mget("{b}"))
            .unwrap()
            .ends_with(&"$19\r\n{b}key:__rand_int__\r\n".repeat(10)));
        // Each key is drawn apart, as valkey-benchmark's __rand_int__: ten keys of 10^12.
        let s = default_suite(&Selection::parse("mget").unwrap(), &ValueSize::Fixed(3), true, "");
        let space = crate::keys::KeySpace::Random { n: 1_000_000_000_000 };
        let mut keys = crate::keys::KeyGen::new(space, crate::rng::Rng::new(7));
        let mut sent = Vec::new();
        s[0].template.write(&mut sent, &mut keys);
        let text = String::from_utf8(sent).unwrap();
        let drawn: std::collections::HashSet<&str> =
            text.split("\r\n").filter(|a| a.starts_with("key:")).collect();
        assert_eq!(drawn.len(), 10, "{text}");
        // Over a cluster the ten share a hash tag, and MSET's keep their values.
        let c = cluster_ten_keys(MGET_TITLE, &ValueSize::Fixed(3), "").unwrap();
        let text = String::from_utf8(c.template.as_bytes().to_vec()).unwrap();
        assert_eq!(text.matches("key:{tag}:__rand_int__").count(), 10, "{text}");
        assert!(text.starts_with("*11\r\n$4\r\nMGET\r\n"), "{text}");
        let m = cluster_ten_keys(MSET_TITLE, &ValueSize::Fixed(3), "").unwrap();
        assert!(String::from_utf8_lossy(m.template.as_bytes()).starts_with("*21\r\n$4\r\nMSET\r\n"));
        assert!(cluster_ten_keys("SET", &ValueSize::Fixed(3), "").is_none());
    }

    #[test]
    fn a_test_without_a_value_shares_no_payload() {
        // -d 100000 -t get,ping: the requests carry no value, so none is made.
        let values = ValueSize::Fixed(100_000);
        let suite = default_suite(&Selection::parse("get,ping").unwrap(), &values, true, "");
        assert!(
            suite.iter().all(|t| t.template.len() < 100),
            "{:?}",
            suite.iter().map(|t| t.template.len()).collect::<Vec<_>>()
        );
        let with_set = default_suite(&Selection::parse("get,set").unwrap(), &values, true, "");
        let set = with_set.iter().find(|t| t.title == "SET").unwrap();
        assert!(set.template.len() > 100_000);
        // GET's bytes are the same whatever -d is.
        let small = default_suite(&Selection::parse("get").unwrap(), &ValueSize::Fixed(3), true, "");
        assert_eq!(small[0].template.len(), suite.iter().find(|t| t.title == "GET").unwrap().template.len());
    }

    #[test]
    fn variable_sizes_make_value_slots() {
        let spec = ValueSize::Range { lo: 16, hi: 1024 };
        let s = default_suite(&Selection::all(), &spec, false, "");
        let slotted: Vec<&str> =
            s.iter().filter(|t| t.template.has_value_slots()).map(|t| t.title.as_str()).collect();
        assert_eq!(
            slotted,
            ["SET", "LPUSH", "RPUSH", "HSET", "LPUSH (needed to benchmark LRANGE)", "MSET (10 keys)", "XADD"]
        );
        assert!(s.iter().all(|t| t.payload_bytes == 1024));
    }

    #[test]
    fn custom_command_title_and_payload() {
        let t = custom(&[b"script".to_vec(), b"load".to_vec(), b"redis.call('set','foo','bar')".to_vec()]);
        assert_eq!(t.title, "script load redis.call('set','foo','bar')");
        assert_eq!(t.payload_bytes, t.template.len());
    }

    #[test]
    fn preload_writes_what_get_reads() {
        let values = ValueSize::Fixed(5);
        let suite = default_suite(&Selection::parse("get,set,lpush").unwrap(), &values, true, "app:");
        let get = suite.iter().find(|t| t.title == "GET").unwrap();
        let fill = preload(&get.template, &values).unwrap();
        assert_eq!(fill.title, "SET app:key:__rand_int__");
        // The same bytes as the suite's SET, at the same value size.
        let set = suite.iter().find(|t| t.title == "SET").unwrap();
        assert_eq!(fill.template.as_bytes(), set.template.as_bytes());
        let custom_get = custom(&[b"get".to_vec(), b"user:__rand_int__".to_vec()]);
        assert_eq!(preload(&custom_get.template, &values).unwrap().title, "SET user:__rand_int__");
        for t in suite.iter().filter(|t| t.title != "GET") {
            assert!(preload(&t.template, &values).is_none(), "{}", t.title);
        }
        assert!(preload(&Template::inline(b"PING\r\n"), &values).is_none());
        assert!(preloadable(&get.template) && !preloadable(&Template::inline(b"PING\r\n")));
    }
}
