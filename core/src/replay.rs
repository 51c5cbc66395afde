//! Replaying recorded traffic: the records a capture holds, the two formats they come in
//! (`redis-cli monitor`'s text and respbench's own capture file), what cannot be replayed, and
//! the request source a replaying client draws from ([`Feed`], [`Record`]).
//!
//! Everything here is pure: the parsers take bytes and return what they found, the feed is a
//! trait the session implements over the file it streams. A client of a replay takes its
//! records one at a time from the feed, each with the instant it is due ([`Record::due`]),
//! and sends it then; its latency counts from that instant, as any open-loop request's does.

use std::fmt;

use crate::cluster::{key_slot, SLOTS};
use crate::Time;

/// One command as a capture recorded it: when the server ran it, for which client, in which
/// database, with which arguments (binary-safe).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Microseconds since the Unix epoch, as the server's clock said.
    pub micros: u64,
    /// The database the client was in.
    pub db: u32,
    /// The original client: `ip:port`, `unix:path` or `lua` as MONITOR names it.
    pub client: Vec<u8>,
    /// The command's name and arguments.
    pub args: Vec<Vec<u8>>,
}

/// Why a MONITOR line or a capture record could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Malformed {
    /// The time at the start of the line (`1339518083.107412`).
    Time,
    /// The `[db client]` part.
    Client,
    /// An argument: unterminated quotes, a bad escape, or bytes between arguments.
    Argument,
    /// A line with no command.
    Empty,
    /// A capture record whose lengths do not add up.
    Record,
    /// A line or record longer than the reader takes.
    TooLong,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Malformed::Time => "no time (seconds.microseconds) at its start",
            Malformed::Client => "no [db client] after the time",
            Malformed::Argument => "an argument is not a quoted string as MONITOR writes one",
            Malformed::Empty => "no command",
            Malformed::Record => "a capture record whose lengths do not add up",
            Malformed::TooLong => "longer than the reader takes",
        })
    }
}

// ---- redis-cli monitor's text ----

/// Appends `arg` quoted as Redis's `sdscatrepr` does for MONITOR: in double quotes, `\\` and
/// `"` escaped, `\n \r \t \a \b` by name, other printable ASCII as is, every other byte as
/// `\xhh` (lowercase).
pub fn quote_into(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'x', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
            }
        }
    }
    out.push(b'"');
}

/// The MONITOR line of `e`, as Redis writes it (without the status reply's `+` and the line's
/// end): `1339518083.107412 [0 127.0.0.1:60866] "keys" "*"`.
pub fn monitor_line(e: &Entry) -> Vec<u8> {
    let mut out = format!("{}.{:06} [{} ", e.micros / 1_000_000, e.micros % 1_000_000, e.db).into_bytes();
    out.extend_from_slice(&e.client);
    out.push(b']');
    for a in &e.args {
        out.push(b' ');
        quote_into(&mut out, a);
    }
    out
}

/// Reads one line of `redis-cli monitor`'s output (without its line end; a trailing `\r` is
/// taken off): the time, `[db client]`, then each argument in MONITOR's quoting.
pub fn parse_monitor_line(line: &[u8]) -> Result<Entry, Malformed> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"+").unwrap_or(line);
    let sp = line.iter().position(|&b| b == b' ').ok_or(Malformed::Time)?;
    let micros = parse_time(&line[..sp]).ok_or(Malformed::Time)?;
    let rest = line[sp + 1..].strip_prefix(b"[").ok_or(Malformed::Client)?;
    let close = rest.iter().position(|&b| b == b']').ok_or(Malformed::Client)?;
    let inside = &rest[..close];
    let sp = inside.iter().position(|&b| b == b' ').ok_or(Malformed::Client)?;
    let db = std::str::from_utf8(&inside[..sp])
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or(Malformed::Client)?;
    let client = inside[sp + 1..].to_vec();
    if client.is_empty() {
        return Err(Malformed::Client);
    }
    let mut args = Vec::new();
    let mut s = &rest[close + 1..];
    while !s.is_empty() {
        s = s.strip_prefix(b" ").ok_or(Malformed::Argument)?;
        let (arg, used) = unquote(s)?;
        args.push(arg);
        s = &s[used..];
    }
    if args.is_empty() {
        return Err(Malformed::Empty);
    }
    Ok(Entry { micros, db, client, args })
}

/// `seconds.micros` (six digits) as microseconds.
fn parse_time(t: &[u8]) -> Option<u64> {
    let dot = t.iter().position(|&b| b == b'.')?;
    let (s, us) = (&t[..dot], &t[dot + 1..]);
    let digits = |d: &[u8]| !d.is_empty() && d.len() <= 19 && d.iter().all(u8::is_ascii_digit);
    if !digits(s) || us.len() != 6 || !digits(us) {
        return None;
    }
    let s: u64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    let us: u64 = std::str::from_utf8(us).ok()?.parse().ok()?;
    s.checked_mul(1_000_000)?.checked_add(us)
}

/// One quoted argument at the start of `s`: its bytes and how many bytes of `s` it took.
fn unquote(s: &[u8]) -> Result<(Vec<u8>, usize), Malformed> {
    if s.first() != Some(&b'"') {
        return Err(Malformed::Argument);
    }
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        match *s.get(i).ok_or(Malformed::Argument)? {
            b'"' => return Ok((out, i + 1)),
            b'\\' => {
                let e = *s.get(i + 1).ok_or(Malformed::Argument)?;
                i += 2;
                out.push(match e {
                    b'\\' | b'"' => e,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'x' => {
                        let h = s.get(i..i + 2).ok_or(Malformed::Argument)?;
                        let v = std::str::from_utf8(h)
                            .ok()
                            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                            .ok_or(Malformed::Argument)?;
                        i += 2;
                        v
                    }
                    _ => return Err(Malformed::Argument),
                });
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
}

// ---- respbench's capture file ----

/// The first bytes of a respbench capture file, its format's version in them: a file that
/// does not start so is not one.
pub const CAPTURE_HEADER: &[u8] = b"respbench capture v1\n";

/// The longest record a reader takes (a command of Redis's largest bulk, 512 MiB, would not
/// replay in bounded memory): 64 MiB.
pub const MAX_RECORD: usize = 64 << 20;

/// Appends `e` as a capture record: its length (u32), then the time (u64 µs), the db (u32),
/// the client's length (u16) and bytes, the argument count (u32) and each argument's length
/// (u32) and bytes; little-endian.
pub fn encode_record(out: &mut Vec<u8>, e: &Entry) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&e.micros.to_le_bytes());
    out.extend_from_slice(&e.db.to_le_bytes());
    let client = &e.client[..e.client.len().min(usize::from(u16::MAX))];
    out.extend_from_slice(&(client.len() as u16).to_le_bytes());
    out.extend_from_slice(client);
    out.extend_from_slice(&(e.args.len() as u32).to_le_bytes());
    for a in &e.args {
        out.extend_from_slice(&(a.len() as u32).to_le_bytes());
        out.extend_from_slice(a);
    }
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// The length of the record that starts `buf` (after its own four bytes), once they are there.
pub fn record_len(buf: &[u8]) -> Option<usize> {
    let b: [u8; 4] = buf.get(..4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b) as usize)
}

/// Reads one whole record's body (what [`record_len`] says follows the length).
pub fn decode_record(body: &[u8]) -> Result<Entry, Malformed> {
    let mut r = body;
    let mut take = |n: usize| -> Result<&[u8], Malformed> {
        if r.len() < n {
            return Err(Malformed::Record);
        }
        let (a, b) = r.split_at(n);
        r = b;
        Ok(a)
    };
    let u32_of = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let micros = u64::from_le_bytes(take(8)?.try_into().map_err(|_| Malformed::Record)?);
    let db = u32_of(take(4)?);
    let clen = take(2)?;
    let clen = usize::from(u16::from_le_bytes([clen[0], clen[1]]));
    let client = take(clen)?.to_vec();
    let argc = u32_of(take(4)?) as usize;
    // Each argument takes four bytes at least: a count the body cannot hold is refused before
    // anything is allocated for it.
    if argc == 0 || argc > body.len() / 4 {
        return Err(Malformed::Record);
    }
    let mut args = Vec::with_capacity(argc);
    for _ in 0..argc {
        let n = u32_of(take(4)?) as usize;
        args.push(take(n)?.to_vec());
    }
    if !r.is_empty() {
        return Err(Malformed::Record);
    }
    Ok(Entry { micros, db, client, args })
}

/// Reads `data` as MONITOR lines and as a capture record's body, checking that whatever reads
/// as a command writes back to what reads as the same command: the fuzz target
/// (fuzz/fuzz_targets/capture.rs) and a property test call it. Panics on a mismatch only.
pub fn check_untrusted(data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        if let Ok(e) = parse_monitor_line(line) {
            assert_eq!(parse_monitor_line(&monitor_line(&e)).as_ref(), Ok(&e), "a MONITOR line read back");
            let _ = skip_of(&e.client, &e.args);
            let _ = encode_command(&e.args, b"p:");
        }
    }
    if let Ok(e) = decode_record(data) {
        let mut out = Vec::new();
        encode_record(&mut out, &e);
        assert_eq!(&out[4..], data, "a capture record written back");
    }
}

// ---- what can be replayed ----

/// Why a recorded command is not sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Skip {
    /// It blocks its connection (`BLPOP`, `WAIT`, `XREAD … BLOCK`, …).
    Blocking,
    /// `MONITOR`, `SUBSCRIBE` and the like: the connection would stop taking commands.
    Takeover,
    /// `CLIENT KILL`, `QUIT`, `SHUTDOWN`, replication: it acts on connections or the server,
    /// not on the data.
    Connection,
    /// `AUTH` (or `HELLO … AUTH`), whose password MONITOR does not show (the run's own `-a`
    /// authenticates).
    Auth,
    /// Run by a script (`[0 lua]`): its `EVAL` is replayed, and runs it.
    Script,
    /// It changes the server's configuration, its users or passwords, or its whole keyspace
    /// ([`ADMIN`]): sent only when asked for (`--replay-admin`).
    Admin,
}

/// The commands a replay leaves out unless asked to send them (`--replay-admin`), as a
/// command and its subcommands (none: every one): they change the target's configuration
/// (`CONFIG SET`, `MODULE LOAD`), who may connect (`ACL SETUSER`), its whole keyspace or its
/// scripts (`FLUSHALL`, `SWAPDB`, `FUNCTION FLUSH`), its persistence or its diagnostics
/// (`BGSAVE`, `SLOWLOG RESET`), or its cluster (`CLUSTER SETSLOT`), which a capture's target
/// is not for the capture to decide. (`CLIENT KILL`/`PAUSE`, `SHUTDOWN`, replication and
/// `FAILOVER` are never sent: [`Skip::Connection`].)
pub const ADMIN: &[(&str, &[&str])] = &[
    ("CONFIG", &["SET", "RESETSTAT", "REWRITE"]),
    ("ACL", &["SETUSER", "DELUSER", "LOAD", "SAVE"]),
    ("FLUSHALL", &[]),
    ("FLUSHDB", &[]),
    ("SWAPDB", &[]),
    ("DEBUG", &[]),
    ("MODULE", &["LOAD", "LOADEX", "UNLOAD"]),
    ("SCRIPT", &["FLUSH", "KILL"]),
    ("FUNCTION", &["FLUSH", "DELETE", "RESTORE", "KILL"]),
    ("SAVE", &[]),
    ("BGSAVE", &[]),
    ("BGREWRITEAOF", &[]),
    ("SLOWLOG", &["RESET"]),
    ("LATENCY", &["RESET"]),
    (
        "CLUSTER",
        &[
            "ADDSLOTS",
            "ADDSLOTSRANGE",
            "DELSLOTS",
            "DELSLOTSRANGE",
            "FLUSHSLOTS",
            "FORGET",
            "MEET",
            "REPLICATE",
            "RESET",
            "SETSLOT",
            "SET-CONFIG-EPOCH",
            "BUMPEPOCH",
            "FAILOVER",
            "SAVECONFIG",
        ],
    ),
];

impl Skip {
    /// What the report says of it.
    pub fn reason(self) -> &'static str {
        match self {
            Skip::Blocking => "blocks its connection",
            Skip::Takeover => "takes the connection over",
            Skip::Connection => "acts on connections or the server",
            Skip::Auth => "its password is not in the capture (-a authenticates each connection)",
            Skip::Script => "run by a script, whose EVAL is replayed",
            Skip::Admin => {
                "changes the server's configuration, users or whole keyspace (--replay-admin sends it)"
            }
        }
    }
}

/// Whether a client's command `args` can be sent again, and if not, why.
pub fn skip_of(client: &[u8], args: &[Vec<u8>]) -> Option<Skip> {
    if client == b"lua" {
        return Some(Skip::Script);
    }
    let name = args.first()?;
    let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
    let sub = |n: &str| args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(n.as_bytes()));
    const BLOCKING: &[&str] = &[
        "BLPOP",
        "BRPOP",
        "BRPOPLPUSH",
        "BLMOVE",
        "BLMPOP",
        "BZPOPMIN",
        "BZPOPMAX",
        "BZMPOP",
        "WAIT",
        "WAITAOF",
    ];
    const TAKEOVER: &[&str] = &["MONITOR", "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "SYNC", "PSYNC"];
    const CONNECTION: &[&str] =
        &["QUIT", "SHUTDOWN", "RESET", "REPLCONF", "REPLICAOF", "SLAVEOF", "FAILOVER"];
    if BLOCKING.iter().any(|n| is(n)) {
        return Some(Skip::Blocking);
    }
    if (is("XREAD") || is("XREADGROUP")) && args.iter().any(|a| a.eq_ignore_ascii_case(b"BLOCK")) {
        return Some(Skip::Blocking);
    }
    if TAKEOVER.iter().any(|n| is(n)) {
        return Some(Skip::Takeover);
    }
    if CONNECTION.iter().any(|n| is(n)) || (is("CLIENT") && (sub("KILL") || sub("PAUSE") || sub("REPLY"))) {
        return Some(Skip::Connection);
    }
    // HELLO 3 is replayed (the connection speaks RESP3 from then on, as the client's did);
    // with AUTH in it, its password is not in the capture.
    if is("AUTH") || (is("HELLO") && args.iter().skip(2).any(|a| a.eq_ignore_ascii_case(b"AUTH"))) {
        return Some(Skip::Auth);
    }
    if ADMIN.iter().any(|(n, subs)| is(n) && (subs.is_empty() || subs.iter().any(|s| sub(s)))) {
        return Some(Skip::Admin);
    }
    None
}

/// The command's name as the report counts it: upper case, with its subcommand for the
/// commands that have them (`CLIENT SETNAME`, `CONFIG GET`).
pub fn command_name(args: &[Vec<u8>]) -> String {
    let Some(name) = args.first() else { return String::new() };
    let mut n = String::from_utf8_lossy(name).to_ascii_uppercase();
    const CONTAINERS: &[&str] = &[
        "CLIENT", "CONFIG", "CLUSTER", "COMMAND", "OBJECT", "MEMORY", "SCRIPT", "FUNCTION", "XINFO",
        "XGROUP", "ACL", "MODULE", "SLOWLOG", "LATENCY",
    ];
    if CONTAINERS.contains(&n.as_str()) {
        if let Some(s) = args.get(1) {
            n.push(' ');
            n.push_str(&String::from_utf8_lossy(s).to_ascii_uppercase());
        }
    }
    n.truncate(64);
    n
}

/// The arguments of `args` that are keys, for the commands whose keys a replay can find
/// without the server (prefixing keys per pass, and a cluster's slot): the first argument of
/// most commands, every argument of the multi-key reads and deletes, every other of `MSET`.
/// Commands with no key (`PING`, `SELECT`, `MULTI`, …) and those whose keys need the server's
/// key specs (`EVAL`, `ZUNIONSTORE`, …) give none.
pub fn key_positions(args: &[Vec<u8>]) -> impl Iterator<Item = usize> {
    let n = args.len();
    let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
    let (first, step, end): (usize, usize, usize) = match name.as_slice() {
        b"DEL" | b"UNLINK" | b"EXISTS" | b"TOUCH" | b"MGET" | b"WATCH" | b"SINTER" | b"SUNION" | b"SDIFF"
        | b"PFCOUNT" => (1, 1, n),
        b"MSET" | b"MSETNX" => (1, 2, n),
        b"RENAME" | b"RENAMENX" | b"RPOPLPUSH" | b"LMOVE" | b"SMOVE" | b"COPY" | b"SINTERSTORE"
        | b"SUNIONSTORE" | b"SDIFFSTORE" | b"PFMERGE" => {
            (1, 1, if name == b"COPY" || name == b"SMOVE" || name == b"LMOVE" { 3 } else { n })
        }
        b"PING" | b"ECHO" | b"SELECT" | b"MULTI" | b"EXEC" | b"DISCARD" | b"UNWATCH" | b"INFO"
        | b"DBSIZE" | b"FLUSHDB" | b"FLUSHALL" | b"CLIENT" | b"CONFIG" | b"COMMAND" | b"TIME" | b"SCAN"
        | b"KEYS" | b"RANDOMKEY" | b"EVAL" | b"EVALSHA" | b"FCALL" | b"SCRIPT" | b"FUNCTION" | b"PUBLISH"
        | b"CLUSTER" | b"SLOWLOG" | b"LATENCY" | b"MEMORY" | b"DEBUG" | b"SAVE" | b"BGSAVE" | b"LASTSAVE"
        | b"ROLE" | b"SWAPDB" | b"READONLY" | b"READWRITE" | b"ASKING" | b"OBJECT" | b"ZUNIONSTORE"
        | b"ZINTERSTORE" | b"ZDIFFSTORE" | b"ZUNION" | b"ZINTER" | b"ZDIFF" | b"SINTERCARD"
        | b"ZINTERCARD" | b"LMPOP" | b"ZMPOP" | b"XREAD" | b"XREADGROUP" | b"SORT" | b"SORT_RO"
        | b"MIGRATE" | b"GEORADIUS" | b"GEORADIUSBYMEMBER" => (1, 1, 1),
        _ => (1, 1, n.min(2)),
    };
    (first..end.min(n)).step_by(step.max(1))
}

/// `args` as a RESP request, each key argument (see [`key_positions`]) prefixed with
/// `prefix`, and the slot of its first key ([`SLOTS`] for a command without one).
pub fn encode_command(args: &[Vec<u8>], prefix: &[u8]) -> (Vec<u8>, u16) {
    let keys: Vec<usize> =
        if prefix.is_empty() && args.len() <= 1 { Vec::new() } else { key_positions(args).collect() };
    let size: usize = args.iter().map(|a| a.len() + prefix.len() + 16).sum::<usize>() + 16;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    let mut slot = SLOTS;
    let mut key = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let is_key = keys.contains(&i);
        let p = if is_key { prefix } else { &[][..] };
        out.extend_from_slice(format!("${}\r\n", a.len() + p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
        if is_key && slot == SLOTS {
            key.clear();
            key.extend_from_slice(p);
            key.extend_from_slice(a);
            slot = key_slot(&key);
        }
    }
    (out, slot)
}

// ---- the request source ----

/// One command of a replay, ready to go: when it is due, its bytes, and where it is counted
/// and routed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// When it is due on the run's clock: the recorded instant, scaled by `--speed`.
    pub due: Time,
    /// Its command's part of the test's stats (the busiest commands each have one).
    pub part: u16,
    /// Its first key's slot ([`SLOTS`] without a key); a transaction's commands all have the
    /// slot of its first key, so over a cluster they go to one node.
    pub slot: u16,
    /// The RESP request.
    pub bytes: Vec<u8>,
}

/// What a client of a replay gets when it asks its [`Feed`] for its next record.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Its next record.
    Record(Record),
    /// Its next record has not been read yet: none of its records is due before this time
    /// (what the reader has read up to), so it asks again then.
    NotBefore(Time),
    /// It has no more records.
    End,
}

/// Where the clients of a replay take their records from: the session reads the capture and
/// hands each original client's commands, in order, to the client that plays it.
pub trait Feed: fmt::Debug + Send + Sync {
    /// Client `client`'s next record, if the reader has it, at `now`.
    fn next(&self, client: u64, now: Time) -> Next;
}

/// A replaying client's view of its feed: the record it holds until it is due.
#[derive(Debug)]
pub(crate) struct Player {
    feed: std::sync::Arc<dyn Feed>,
    client: u64,
    head: Option<Record>,
    /// When to ask the feed again while it has nothing yet.
    retry: Time,
    ended: bool,
}

impl Player {
    /// Client `client` of `feed`.
    pub(crate) fn new(feed: std::sync::Arc<dyn Feed>, client: u64) -> Player {
        Player { feed, client, head: None, retry: Time::ZERO, ended: false }
    }

    /// Asks the feed for the next record unless one is held, the feed has ended, or it said to
    /// wait.
    fn fill(&mut self, now: Time) {
        if self.head.is_some() || self.ended || now < self.retry {
            return;
        }
        match self.feed.next(self.client, now) {
            Next::Record(r) => self.head = Some(r),
            // The reader is behind the clock: it is asked again a millisecond later.
            Next::NotBefore(t) => self.retry = t.max(now + std::time::Duration::from_millis(1)),
            Next::End => self.ended = true,
        }
    }

    /// When the next record is due ([`Time::MAX`] when the feed has ended), or when to ask the
    /// feed again.
    pub(crate) fn due(&self) -> Time {
        match &self.head {
            Some(r) => r.due,
            None if self.ended => Time::MAX,
            None => self.retry,
        }
    }

    /// The next record if it is due at `now`.
    pub(crate) fn take_due(&mut self, now: Time) -> Option<Record> {
        self.fill(now);
        if self.head.as_ref().is_some_and(|r| r.due <= now) {
            return self.head.take();
        }
        None
    }

    /// Whether every record has been handed out.
    pub(crate) fn spent(&self) -> bool {
        self.ended && self.head.is_none()
    }

    /// The intended times of the records due before `until` that were never sent (the test
    /// stopped): the one held, and those the feed has before then.
    pub(crate) fn remaining(&mut self, until: Time) -> Vec<Time> {
        let mut out = Vec::new();
        loop {
            match self.head.take() {
                Some(r) if r.due < until => out.push(r.due),
                Some(r) => {
                    self.head = Some(r);
                    return out;
                }
                None => match self.feed.next(self.client, until) {
                    Next::Record(r) => self.head = Some(r),
                    Next::NotBefore(_) | Next::End => return out,
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(args: &[&[u8]]) -> Entry {
        Entry {
            micros: 1_339_518_083_107_412,
            db: 0,
            client: b"127.0.0.1:60866".to_vec(),
            args: args.iter().map(|a| a.to_vec()).collect(),
        }
    }

    #[test]
    fn reads_redis_documented_line() {
        let e = parse_monitor_line(br#"1339518083.107412 [0 127.0.0.1:60866] "keys" "*""#).unwrap();
        assert_eq!(e, entry(&[b"keys", b"*"]));
        let e = parse_monitor_line(
            b"1339518085.219425 [2 unix:/tmp/redis.sock] \"set\" \"a b\" \"\\x00\\xff\\\"\\\\\\n\"\r",
        )
        .unwrap();
        assert_eq!((e.db, e.client.as_slice()), (2, &b"unix:/tmp/redis.sock"[..]));
        assert_eq!(e.args, vec![b"set".to_vec(), b"a b".to_vec(), b"\x00\xff\"\\\n".to_vec()]);
        let lua = parse_monitor_line(br#"1339518083.107412 [0 lua] "get" "k""#).unwrap();
        assert_eq!(skip_of(&lua.client, &lua.args), Some(Skip::Script));
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let cases: &[(&[u8], Malformed)] = &[
            (b"OK", Malformed::Time),
            (b"", Malformed::Time),
            (b"1339518083.10741 [0 a:1] \"x\"", Malformed::Time),
            (b"1339518083.107412 0 a:1] \"x\"", Malformed::Client),
            (b"1339518083.107412 [x a:1] \"x\"", Malformed::Client),
            (b"1339518083.107412 [0 a:1]", Malformed::Empty),
            (b"1339518083.107412 [0 a:1] \"x", Malformed::Argument),
            (b"1339518083.107412 [0 a:1] \"x\"\"y\"", Malformed::Argument),
            (b"1339518083.107412 [0 a:1] \"\\xzz\"", Malformed::Argument),
            (b"1339518083.107412 [0 a:1] \"\\q\"", Malformed::Argument),
            (b"1339518083.107412 [0 a:1] x", Malformed::Argument),
            (b"99999999999999999999.000000 [0 a:1] \"x\"", Malformed::Time),
        ];
        for (line, want) in cases {
            assert_eq!(parse_monitor_line(line), Err(want.clone()), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn a_record_with_lengths_that_do_not_add_up_is_refused() {
        let mut buf = Vec::new();
        encode_record(&mut buf, &entry(&[b"SET", b"k", b"v"]));
        let body = &buf[4..];
        assert_eq!(record_len(&buf), Some(body.len()));
        assert_eq!(decode_record(body).unwrap(), entry(&[b"SET", b"k", b"v"]));
        for cut in 0..body.len() {
            assert_eq!(decode_record(&body[..cut]), Err(Malformed::Record), "cut at {cut}");
        }
        let mut long = body.to_vec();
        long.push(0);
        assert_eq!(decode_record(&long), Err(Malformed::Record));
        // An argument count no body could hold is refused before allocating.
        let mut huge = body.to_vec();
        let at = 8 + 4 + 2 + 15;
        huge[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode_record(&huge), Err(Malformed::Record));
    }

    #[test]
    fn what_cannot_be_replayed_is_named() {
        let c = b"1.2.3.4:5".as_slice();
        let s = |args: &[&[u8]]| skip_of(c, &entry(args).args);
        assert_eq!(s(&[b"blpop", b"q", b"0"]), Some(Skip::Blocking));
        assert_eq!(s(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"]), Some(Skip::Blocking));
        assert_eq!(s(&[b"XREAD", b"STREAMS", b"s", b"0"]), None);
        assert_eq!(s(&[b"monitor"]), Some(Skip::Takeover));
        assert_eq!(s(&[b"subscribe", b"ch"]), Some(Skip::Takeover));
        assert_eq!(s(&[b"client", b"kill", b"1.2.3.4:5"]), Some(Skip::Connection));
        assert_eq!(s(&[b"client", b"setname", b"x"]), None);
        assert_eq!(s(&[b"auth", b"(redacted)"]), Some(Skip::Auth));
        assert_eq!(s(&[b"HELLO", b"3"]), None);
        assert_eq!(s(&[b"HELLO", b"3", b"AUTH", b"u", b"(redacted)"]), Some(Skip::Auth));
        assert_eq!(s(&[b"get", b"k"]), None);
        assert_eq!(s(&[b"config", b"set", b"requirepass", b"x"]), Some(Skip::Admin));
        assert_eq!(s(&[b"CONFIG", b"GET", b"maxmemory"]), None);
        assert_eq!(s(&[b"acl", b"setuser", b"u", b"on"]), Some(Skip::Admin));
        assert_eq!(s(&[b"ACL", b"WHOAMI"]), None);
        assert_eq!(s(&[b"flushall", b"async"]), Some(Skip::Admin));
        assert_eq!(s(&[b"FLUSHDB"]), Some(Skip::Admin));
        assert_eq!(s(&[b"debug", b"sleep", b"1"]), Some(Skip::Admin));
        assert_eq!(s(&[b"FUNCTION", b"LOAD", b"#!lua name=l\n"]), None);
        assert_eq!(s(&[b"FUNCTION", b"FLUSH"]), Some(Skip::Admin));
        assert_eq!(s(&[b"CLUSTER", b"SETSLOT", b"1", b"NODE", b"n"]), Some(Skip::Admin));
        assert_eq!(s(&[b"CLUSTER", b"SLOTS"]), None);
        assert_eq!(command_name(&entry(&[b"acl", b"setuser", b"u"]).args), "ACL SETUSER");
        assert_eq!(command_name(&entry(&[b"client", b"setname", b"x"]).args), "CLIENT SETNAME");
        assert_eq!(command_name(&entry(&[b"lpush", b"q", b"x"]).args), "LPUSH");
    }

    #[test]
    fn keys_are_prefixed_and_give_the_slot() {
        let e = entry(&[b"MSET", b"a", b"1", b"b", b"2"]);
        let (bytes, slot) = encode_command(&e.args, b"p1:");
        assert_eq!(bytes, b"*5\r\n$4\r\nMSET\r\n$4\r\np1:a\r\n$1\r\n1\r\n$4\r\np1:b\r\n$1\r\n2\r\n");
        assert_eq!(slot, key_slot(b"p1:a"));
        let (bytes, slot) = encode_command(&entry(&[b"select", b"2"]).args, b"p:");
        assert_eq!((bytes.as_slice(), slot), (&b"*2\r\n$6\r\nselect\r\n$1\r\n2\r\n"[..], SLOTS));
        let (bytes, _) = encode_command(&entry(&[b"HSET", b"h", b"f", b"v"]).args, b"x");
        assert_eq!(bytes, b"*4\r\n$4\r\nHSET\r\n$2\r\nxh\r\n$1\r\nf\r\n$1\r\nv\r\n");
    }

    fn arb_entry() -> impl Strategy<Value = Entry> {
        (
            0u64..=u64::MAX / 2,
            0u32..16,
            "[a-z0-9.:]{1,20}",
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..6),
        )
            .prop_map(|(micros, db, client, args)| Entry {
                micros,
                db,
                client: client.into_bytes(),
                args,
            })
    }

    proptest! {
        /// MONITOR's quoting round-trips any bytes: binary values, spaces, quotes, backslashes
        /// and `\x` escapes come back byte for byte.
        #[test]
        fn monitor_quoting_round_trips(e in arb_entry()) {
            let line = monitor_line(&e);
            prop_assert!(!line.contains(&b'\n'));
            prop_assert_eq!(parse_monitor_line(&line), Ok(e));
        }

        /// A capture record round-trips, and no prefix of it reads as a record.
        #[test]
        fn capture_records_round_trip(e in arb_entry()) {
            let mut buf = Vec::new();
            encode_record(&mut buf, &e);
            let n = record_len(&buf).unwrap();
            prop_assert_eq!(n + 4, buf.len());
            prop_assert_eq!(decode_record(&buf[4..]), Ok(e));
        }

        /// Whatever the bytes, the parsers answer without panicking.
        #[test]
        fn any_bytes_are_read_or_refused(b in prop::collection::vec(any::<u8>(), 0..200)) {
            check_untrusted(&b);
            let mut line = b"1.000001 [0 a:1] ".to_vec();
            line.extend_from_slice(&b);
            check_untrusted(&line);
        }
    }
}

#[cfg(test)]
mod client_tests {
    //! A replaying client on virtual time: each record goes when it is due and not before,
    //! a transaction's records (one due time) in one write, and the client finishes when its
    //! feed ends.
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;
    use crate::plan::{Budget, ConnConfig, Mix, PipelineMode, Plan, Stop, Workload};
    use crate::template::{KeySpace, Template};
    use crate::{Client, Event};

    #[derive(Debug)]
    struct Script(Mutex<Vec<Record>>);

    impl Feed for Script {
        fn next(&self, _: u64, _: Time) -> Next {
            let mut v = self.0.lock().unwrap();
            if v.is_empty() {
                Next::End
            } else {
                Next::Record(v.remove(0))
            }
        }
    }

    fn rec(ms: u64, args: &[&[u8]]) -> Record {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        Record {
            due: Time::from_micros(ms * 1000),
            part: 0,
            slot: SLOTS,
            bytes: encode_command(&args, b"").0,
        }
    }

    #[test]
    fn records_go_at_their_instants_and_a_transaction_in_one_write() {
        let records = vec![
            rec(10, &[b"SET", b"a", b"1"]),
            rec(25, &[b"MULTI"]),
            rec(25, &[b"INCR", b"n"]),
            rec(25, &[b"EXEC"]),
            rec(40, &[b"GET", b"a"]),
        ];
        let feed: Arc<dyn Feed> = Arc::new(Script(Mutex::new(records)));
        let plan = Plan {
            ..Plan::new(
                ConnConfig {
                    pipeline: 1024,
                    pipeline_mode: PipelineMode::Window,
                    open_loop: Some(crate::OpenLoop { rate: 100.0, poisson: false, slack: Duration::ZERO }),
                    ..ConnConfig::default()
                },
                Workload {
                    template: Template::command(&[b"REPLAY"]),
                    keys: KeySpace::Literal,
                    mix: Some(Mix::replay(vec![Template::command(&[b"ALL"])], feed).unwrap()),
                },
                Budget::unlimited(),
                Stop::new(None, Duration::from_secs(2)),
            )
        };
        let mut stats = plan.new_stats(Time::ZERO, 3).unwrap();
        let mut c = Client::new(Arc::new(plan), 0);
        let ms = |m: u64| Time::from_micros(m * 1000);
        c.handle_connected(0, ms(0), &mut stats);
        while c.poll_event(0).is_some() {}
        // Virtual time: wake when the client asks, send what it hands out, answer at once.
        let mut now = ms(0);
        let mut writes: Vec<(u64, String)> = Vec::new();
        for _ in 0..100 {
            while let Some(b) = c.poll_transmit(0, now) {
                let (n, text) = (b.len(), String::from_utf8_lossy(b).into_owned());
                writes.push((
                    now.as_micros() / 1000,
                    text.split("\r\n")
                        .filter(|l| l.chars().all(char::is_alphabetic) && !l.is_empty())
                        .collect::<Vec<_>>()
                        .join(" "),
                ));
                c.advance_transmit(0, n, now, &mut stats);
                let replies = text.matches('*').count();
                c.handle_input(0, "+OK\r\n".repeat(replies).as_bytes(), now, &mut stats);
            }
            if matches!(c.poll_event(0), Some(Event::Finished)) {
                break;
            }
            match c.poll_timeout(0) {
                Some(t) => now = now.max(t),
                None => break,
            }
            c.handle_timeout(0, now);
        }
        assert_eq!(
            writes,
            vec![(10, "SET a".into()), (25, "MULTI INCR n EXEC".into()), (40, "GET a".into())],
            "each at its instant, the transaction in one write"
        );
        assert_eq!(stats.requests, 5);
        let late = stats.lateness.as_ref().unwrap();
        assert_eq!((late.len(), late.max()), (5, 0), "none late on an exact clock");
        assert!(c.is_closed(0), "finished once its feed ended");
    }
}
