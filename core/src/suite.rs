//! redis-benchmark's tests: the default suite with its titles, commands, keys and payloads, the
//! `-t` selection, and custom commands.

use crate::template::{payload, Template};

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
    "xadd",
];

/// Which tests `-t` selected: a comma-separated, case-insensitive list, as redis-benchmark reads
/// it. `None` selects every test.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    names: Option<Vec<String>>,
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
        Ok(Selection { names: Some(names) })
    }

    /// Every test.
    pub fn all() -> Selection {
        Selection { names: None }
    }

    fn has(&self, name: &str) -> bool {
        match &self.names {
            None => true,
            Some(names) => names.iter().any(|n| n == name),
        }
    }
}

/// The default suite in redis-benchmark's order, restricted to `selection`. `data_size` is `-d`;
/// `random_keys` is whether `-r` was given (it turns ZADD's score into a placeholder too).
pub fn default_suite(selection: &Selection, data_size: usize, random_keys: bool) -> Vec<TestSpec> {
    let data = payload(data_size);
    let d = data.as_slice();
    let mut tests = Vec::new();
    let mut push = |title: &str, template: Template| {
        tests.push(TestSpec { title: title.to_string(), template, payload_bytes: data_size });
    };
    let s = selection;
    if s.has("ping_inline") || s.has("ping") {
        push("PING_INLINE", Template::inline(b"PING\r\n"));
    }
    let mut add = |title: &str, args: &[&[u8]]| push(title, Template::command(args));
    if s.has("ping_mbulk") || s.has("ping") {
        add("PING_MBULK", &[b"PING"]);
    }
    if s.has("set") {
        add("SET", &[b"SET", b"key:__rand_int__", d]);
    }
    if s.has("get") {
        add("GET", &[b"GET", b"key:__rand_int__"]);
    }
    if s.has("incr") {
        add("INCR", &[b"INCR", b"counter:__rand_int__"]);
    }
    if s.has("lpush") {
        add("LPUSH", &[b"LPUSH", b"mylist", d]);
    }
    if s.has("rpush") {
        add("RPUSH", &[b"RPUSH", b"mylist", d]);
    }
    if s.has("lpop") {
        add("LPOP", &[b"LPOP", b"mylist"]);
    }
    if s.has("rpop") {
        add("RPOP", &[b"RPOP", b"mylist"]);
    }
    if s.has("sadd") {
        add("SADD", &[b"SADD", b"myset", b"element:__rand_int__"]);
    }
    if s.has("hset") {
        add("HSET", &[b"HSET", b"myhash", b"element:__rand_int__", d]);
    }
    if s.has("spop") {
        add("SPOP", &[b"SPOP", b"myset"]);
    }
    if s.has("zadd") {
        let score: &[u8] = if random_keys { b"__rand_int__" } else { b"0" };
        add("ZADD", &[b"ZADD", b"myzset", score, b"element:__rand_int__"]);
    }
    if s.has("zpopmin") {
        add("ZPOPMIN", &[b"ZPOPMIN", b"myzset"]);
    }
    let lrange = ["lrange_100", "lrange_300", "lrange_500", "lrange_600"];
    if s.has("lrange") || lrange.iter().any(|n| s.has(n)) {
        add("LPUSH (needed to benchmark LRANGE)", &[b"LPUSH", b"mylist", d]);
    }
    for (name, last) in lrange.iter().zip(["99", "299", "499", "599"]) {
        if s.has("lrange") || s.has(name) {
            let n = &name[7..];
            add(&format!("LRANGE_{n} (first {n} elements)"), &[b"LRANGE", b"mylist", b"0", last.as_bytes()]);
        }
    }
    if s.has("mset") {
        let mut args: Vec<&[u8]> = vec![b"MSET"];
        for _ in 0..10 {
            args.push(b"key:__rand_int__");
            args.push(d);
        }
        add("MSET (10 keys)", &args);
    }
    if s.has("xadd") {
        add("XADD", &[b"XADD", b"mystream", b"*", b"myfield", d]);
    }
    tests
}

/// A custom command given after the options: its title is the arguments joined by spaces and its
/// "bytes payload" the encoded request's length, as in redis-benchmark.
pub fn custom(args: &[Vec<u8>]) -> TestSpec {
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let template = Template::command(&refs);
    let title = args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ");
    TestSpec { title, payload_bytes: template.len(), template }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(s: &[TestSpec]) -> Vec<&str> {
        s.iter().map(|t| t.title.as_str()).collect()
    }

    #[test]
    fn default_suite_matches_redis_benchmark_order() {
        let s = default_suite(&Selection::all(), 3, false);
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
        assert_eq!(titles(&default_suite(&sel, 3, false)), ["SET", "LPUSH"]);
        let sel = Selection::parse("ping").unwrap();
        assert_eq!(titles(&default_suite(&sel, 3, false)), ["PING_INLINE", "PING_MBULK"]);
        let sel = Selection::parse("lrange_300").unwrap();
        assert_eq!(
            titles(&default_suite(&sel, 3, false)),
            ["LPUSH (needed to benchmark LRANGE)", "LRANGE_300 (first 300 elements)"]
        );
        assert_eq!(Selection::parse("set,bogus").unwrap_err(), ["bogus"]);
        assert!(Selection::parse(",").is_err());
    }

    #[test]
    fn zadd_score_is_random_with_r() {
        let sel = Selection::parse("zadd").unwrap();
        let s = default_suite(&sel, 3, true);
        assert_eq!(
            s[0].template.as_bytes(),
            b"*4\r\n$4\r\nZADD\r\n$6\r\nmyzset\r\n$12\r\n__rand_int__\r\n$20\r\nelement:__rand_int__\r\n"
        );
    }

    #[test]
    fn custom_command_title_and_payload() {
        let t = custom(&[b"script".to_vec(), b"load".to_vec(), b"redis.call('set','foo','bar')".to_vec()]);
        assert_eq!(t.title, "script load redis.call('set','foo','bar')");
        assert_eq!(t.payload_bytes, t.template.len());
    }
}
