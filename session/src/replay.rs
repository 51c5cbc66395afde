//! Replaying recorded traffic (`--replay FILE`) and recording it (`respbench capture`).
//!
//! A capture is read twice, each time streamed in bounded memory: once before anything
//! connects ([`Scan`]: is it a capture at all, its original clients, its commands by name, what
//! cannot be replayed, its malformed lines), and once while the test runs, by a reader thread
//! that hands each original client's commands, in order, to the client that plays it
//! ([`Replay`], the core's [`Feed`]), at most [`BUFFERED`] bytes ahead of the clients. The
//! core's clients send each record when it is due: its recorded instant, scaled by `--speed`.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use respbench_core::cluster::SLOTS;
use respbench_core::replay::{
    command_name, decode_record, encode_command, encode_record, parse_monitor_line, record_len, skip_of,
    Entry, Feed, Malformed, Next, Record, Skip, CAPTURE_HEADER, MAX_RECORD,
};
use respbench_core::Time;

use crate::error::Error;
pub use crate::replayed::{CaptureSettings, Figures, Settings, Skipped};

/// How many commands of their own the busiest commands get in the report; the rest are
/// counted together.
pub const BUSIEST: usize = 20;
/// The most original clients a capture may have: each is a connection.
pub const MAX_CLIENTS: usize = 100_000;
/// How many bytes of records the reader keeps ahead of the clients.
pub const BUFFERED: usize = 16 << 20;
/// How long before the first record is due the test starts: the connections' set-up and the
/// reader's first records.
pub const LEAD: Duration = Duration::from_millis(300);
/// How many commands a replaying client keeps unanswered at most (or `-P`, when more).
pub const WINDOW: u32 = 1024;
/// The longest gap between two commands a replay keeps, at the recorded pace (before
/// `--speed`): a longer one is played as this long, and said.
pub const MAX_GAP: Duration = Duration::from_secs(10);
/// The most command names a scan counts each on its own: commands of names met after the
/// table is full are counted together, under [`OTHER`] (a capture names a few hundred at most;
/// a hostile one a million, 193 MB when each had its own).
pub const MAX_NAMES: usize = 1024;
/// The longest client name kept: clients whose names share their first this many bytes are
/// played as one (MONITOR's are `IP:PORT` or `unix:PATH`, 113 bytes at most).
pub const MAX_CLIENT_NAME: usize = 128;

/// A client's name as a replay keeps it: its first [`MAX_CLIENT_NAME`] bytes.
fn client_key(client: &[u8]) -> &[u8] {
    &client[..client.len().min(MAX_CLIENT_NAME)]
}

/// The recorded instants as a replay plays them, in the file's order: each command the gap
/// after the one before it, but a step backwards is no gap (the clock goes on from it) and a
/// gap over [`MAX_GAP`] is played as [`MAX_GAP`]; both are counted, to be said.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// The instant recorded of the last command.
    prev: Option<u64>,
    /// Where the last command is played: µs after the first.
    pub offset_us: u64,
    /// Commands recorded before the one ahead of them.
    pub backwards: u64,
    /// The line (or record) of the first of them.
    pub backwards_line: u64,
    /// Gaps over [`MAX_GAP`].
    pub compressed: u64,
    /// The longest of them, µs, and its line.
    pub longest_us: u64,
    /// See `longest_us`.
    pub longest_line: u64,
}

impl Timeline {
    /// Where the command recorded at `micros`, on line `line`, is played: µs after the first.
    pub fn at(&mut self, micros: u64, line: u64) -> u64 {
        let max = MAX_GAP.as_micros() as u64;
        match self.prev.map(|p| micros.checked_sub(p)) {
            None => {}
            Some(None) => {
                if self.backwards == 0 {
                    self.backwards_line = line;
                }
                self.backwards += 1;
            }
            Some(Some(gap)) if gap > max => {
                if gap > self.longest_us {
                    (self.longest_us, self.longest_line) = (gap, line);
                }
                self.compressed += 1;
                self.offset_us += max;
            }
            Some(Some(gap)) => self.offset_us += gap,
        }
        self.prev = Some(micros);
        self.offset_us
    }
}

/// The malformed lines a scan names by number (it counts them all).
const NAMED_MALFORMED: usize = 20;
/// The title of the commands beyond the busiest.
pub const OTHER: &str = "(other commands)";

// ---- reading a capture ----

/// The two formats a capture comes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `redis-cli monitor`'s output: a line per command.
    Monitor,
    /// respbench's capture file ([`CAPTURE_HEADER`], then records).
    Capture,
}

impl Format {
    /// Its name in the reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::Monitor => "monitor",
            Format::Capture => "capture",
        }
    }
}

/// Reads the commands of a capture one at a time, in bounded memory: a line or record longer
/// than [`MAX_RECORD`] is malformed, not buffered.
pub struct Reader<R> {
    r: R,
    format: Format,
    buf: Vec<u8>,
    /// The unread bytes are `buf[at..]`.
    at: usize,
    eof: bool,
    /// The number of the last line (or record) read.
    pub line: u64,
}

/// What one line or record of a capture holds.
pub enum Item {
    /// A command.
    Entry(Entry),
    /// A line that is not one: its reason.
    Malformed(Malformed),
    /// A line with nothing to replay (empty, or redis-cli's `OK` to `MONITOR`).
    Nothing,
}

impl Reader<File> {
    /// Opens `path`, telling its format from its first bytes.
    pub fn open(path: &Path) -> io::Result<Reader<File>> {
        Reader::new(File::open(path)?)
    }
}

impl<R: Read> Reader<R> {
    /// A reader of `r`, its format told from its first bytes.
    pub fn new(r: R) -> io::Result<Reader<R>> {
        let mut me = Reader {
            r,
            format: Format::Monitor,
            buf: Vec::with_capacity(1 << 16),
            at: 0,
            eof: false,
            line: 0,
        };
        while me.buf.len() < CAPTURE_HEADER.len() && !me.eof {
            me.more()?;
        }
        if me.buf.starts_with(CAPTURE_HEADER) {
            me.format = Format::Capture;
            me.at = CAPTURE_HEADER.len();
        }
        Ok(me)
    }

    /// The capture's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Reads more bytes into the buffer, keeping the unread ones.
    fn more(&mut self) -> io::Result<()> {
        if self.at > 0 && self.at * 2 >= self.buf.len() {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let len = self.buf.len();
        let want = (1 << 16).max(len - self.at);
        self.buf.resize(len + want, 0);
        let n = loop {
            match self.r.read(&mut self.buf[len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(len + n);
        self.eof = n == 0;
        Ok(())
    }

    /// The next line or record; `None` at the end.
    pub fn next_item(&mut self) -> io::Result<Option<Item>> {
        match self.format {
            Format::Monitor => self.next_line(),
            Format::Capture => self.next_record(),
        }
    }

    fn next_line(&mut self) -> io::Result<Option<Item>> {
        let mut scanned = 0;
        loop {
            let rest = &self.buf[self.at..];
            if let Some(i) = rest[scanned..].iter().position(|&b| b == b'\n') {
                let line = &rest[..scanned + i];
                self.line += 1;
                let item = if line.len() > MAX_RECORD {
                    Item::Malformed(Malformed::TooLong)
                } else {
                    line_item(line)
                };
                self.at += scanned + i + 1;
                return Ok(Some(item));
            }
            scanned = rest.len();
            if scanned > MAX_RECORD {
                // Too long to keep: skip to its end.
                self.line += 1;
                self.at = self.buf.len();
                loop {
                    self.more()?;
                    if self.eof {
                        return Ok(Some(Item::Malformed(Malformed::TooLong)));
                    }
                    if let Some(i) = self.buf[self.at..].iter().position(|&b| b == b'\n') {
                        self.at += i + 1;
                        return Ok(Some(Item::Malformed(Malformed::TooLong)));
                    }
                    self.at = self.buf.len();
                }
            }
            if self.eof {
                if rest.is_empty() {
                    return Ok(None);
                }
                // A last line without its end.
                self.line += 1;
                let item = line_item(rest);
                self.at = self.buf.len();
                return Ok(Some(item));
            }
            self.more()?;
        }
    }

    fn next_record(&mut self) -> io::Result<Option<Item>> {
        while self.buf.len() - self.at < 4 && !self.eof {
            self.more()?;
        }
        let rest = &self.buf[self.at..];
        if rest.is_empty() {
            return Ok(None);
        }
        self.line += 1;
        let Some(len) = record_len(rest).filter(|&n| n <= MAX_RECORD) else {
            // A length that cannot be one: nothing after it can be found again.
            self.at = self.buf.len();
            self.eof = true;
            return Ok(Some(Item::Malformed(if rest.len() < 4 {
                Malformed::Record
            } else {
                Malformed::TooLong
            })));
        };
        while self.buf.len() - self.at < 4 + len && !self.eof {
            self.more()?;
        }
        let rest = &self.buf[self.at..];
        if rest.len() < 4 + len {
            self.at = self.buf.len();
            return Ok(Some(Item::Malformed(Malformed::Record)));
        }
        let item = match decode_record(&rest[4..4 + len]) {
            Ok(e) => Item::Entry(e),
            Err(m) => Item::Malformed(m),
        };
        self.at += 4 + len;
        Ok(Some(item))
    }
}

/// Reads `bytes` as a capture file whatever they hold, to the end: the fuzz target
/// (fuzz/fuzz_targets/capture.rs) calls it. How many commands and malformed lines it found.
pub fn read_untrusted(bytes: &[u8]) -> (u64, u64) {
    let Ok(mut r) = Reader::new(bytes) else { return (0, 0) };
    let (mut commands, mut malformed) = (0, 0);
    while let Ok(Some(item)) = r.next_item() {
        match item {
            Item::Entry(_) => commands += 1,
            Item::Malformed(_) => malformed += 1,
            Item::Nothing => {}
        }
    }
    (commands, malformed)
}

/// One line of `redis-cli monitor`'s output.
fn line_item(line: &[u8]) -> Item {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() || line == b"OK" || line == b"+OK" {
        return Item::Nothing;
    }
    match parse_monitor_line(line) {
        Ok(e) => Item::Entry(e),
        Err(m) => Item::Malformed(m),
    }
}

/// What a capture holds, found by reading it once before anything connects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    /// Its format.
    pub format: Option<Format>,
    /// The original clients, in the order of their first command to replay.
    pub clients: Vec<Vec<u8>>,
    /// The commands to replay of each of `clients`, in its order.
    pub per_client: Vec<u64>,
    /// The commands to replay, by name, the busiest first (ties by name).
    pub names: Vec<(String, u64)>,
    /// The commands that are not replayed: by name, with why.
    pub skipped: Vec<(String, Skip, u64)>,
    /// How many lines (or records) were malformed, and the first of them with their numbers.
    pub malformed: u64,
    /// The first malformed lines: number and reason.
    pub malformed_lines: Vec<(u64, String)>,
    /// The first and last recorded instants (µs since the Unix epoch) of the commands to replay,
    /// in the file's order.
    pub first_us: u64,
    /// See `first_us`.
    pub last_us: u64,
    /// Their instants as played: the span, steps backwards and long gaps.
    pub timeline: Timeline,
    /// The commands to replay whose names came after [`MAX_NAMES`] others: counted together.
    pub unnamed: u64,
    /// The lines (or records) read.
    pub lines: u64,
}

impl Scan {
    /// The commands to replay, in all.
    pub fn commands(&self) -> u64 {
        self.names.iter().map(|(_, n)| n).sum::<u64>() + self.unnamed
    }

    /// The span from the first command to replay to the last, as played ([`Timeline`]).
    pub fn span(&self) -> Duration {
        Duration::from_micros(self.timeline.offset_us)
    }

    /// What a replay of `file` says on stderr before it starts: its span and commands, and the
    /// timestamps it does not keep.
    pub fn notices(&self, file: &Path) -> Vec<String> {
        let f = file.display();
        let t = &self.timeline;
        let mut out = vec![format!(
            "--replay {f}: {} commands from {} clients, recorded from Unix {:.6} to {:.6}, played over {:.3} s \
             (at --speed 1)",
            self.commands(),
            self.clients.len(),
            self.first_us as f64 / 1e6,
            self.last_us as f64 / 1e6,
            self.span().as_secs_f64()
        )];
        if t.backwards > 0 {
            out.push(format!(
                "WARNING: --replay {f}: {} commands were recorded before the one ahead of them (the first at line \
                 {}): played with no gap before them",
                t.backwards, t.backwards_line
            ));
        }
        if t.compressed > 0 {
            out.push(format!(
                "WARNING: --replay {f}: {} gaps between commands were longer than {} s (the longest {:.3} s, before \
                 line {}): played as {} s",
                t.compressed,
                MAX_GAP.as_secs(),
                t.longest_us as f64 / 1e6,
                t.longest_line,
                MAX_GAP.as_secs()
            ));
        }
        out
    }
}

/// Why `e` is not replayed ([`skip_of`]), but for [`Skip::Admin`]'s commands under
/// `--replay-admin`, which are.
fn skipped_of(s: &Settings, e: &Entry) -> Option<Skip> {
    skip_of(&e.client, &e.args).filter(|why| !(s.admin && *why == Skip::Admin))
}

/// Reads `s.file` through once: a file that is not a capture (its first line neither a MONITOR
/// line nor the capture header), one that cannot be read, one with nothing to replay, or under
/// `--strict` one with a malformed line is an error.
pub fn scan(s: &Settings) -> Result<Scan, Error> {
    let shown = s.file.display();
    let fail = |e: io::Error| Error::Tests(format!("--replay {shown}: cannot read it: {e}"));
    let mut r = Reader::open(&s.file).map_err(fail)?;
    let mut scan = Scan { format: Some(r.format()), ..Scan::default() };
    let mut index: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut names: HashMap<String, u64> = HashMap::new();
    let mut skipped: HashMap<(String, Skip), u64> = HashMap::new();
    let mut seen_entry = false;
    while let Some(item) = r.next_item().map_err(fail)? {
        let e = match item {
            Item::Nothing => continue,
            Item::Malformed(m) => {
                if !seen_entry && r.format() == Format::Monitor {
                    return Err(Error::Tests(format!(
                        "--replay {shown}: not a capture: line {} is not a MONITOR line ({m}), and the file \
                         does not start with respbench's capture header",
                        r.line
                    )));
                }
                if s.strict {
                    return Err(Error::Tests(format!("--replay {shown}: line {}: {m} (--strict)", r.line)));
                }
                scan.malformed += 1;
                if scan.malformed_lines.len() < NAMED_MALFORMED {
                    scan.malformed_lines.push((r.line, m.to_string()));
                }
                continue;
            }
            Item::Entry(e) => e,
        };
        seen_entry = true;
        let name = command_name(&e.args);
        if let Some(why) = skipped_of(s, &e) {
            let name = if skipped.len() >= MAX_NAMES && !skipped.contains_key(&(name.clone(), why)) {
                OTHER.to_string()
            } else {
                name
            };
            *skipped.entry((name, why)).or_default() += 1;
            continue;
        }
        let client = client_key(&e.client);
        if !index.contains_key(client) {
            if index.len() >= MAX_CLIENTS {
                return Err(Error::Tests(format!(
                    "--replay {shown}: more than {MAX_CLIENTS} clients (line {}): each would be a connection",
                    r.line
                )));
            }
            index.insert(client.to_vec(), index.len() as u32);
            scan.clients.push(client.to_vec());
            scan.per_client.push(0);
        }
        if let Some(&i) = index.get(client) {
            scan.per_client[i as usize] += 1;
        }
        if names.len() < MAX_NAMES || names.contains_key(&name) {
            *names.entry(name).or_default() += 1;
        } else {
            scan.unnamed += 1;
        }
        if scan.timeline.prev.is_none() {
            scan.first_us = e.micros;
        }
        scan.last_us = e.micros;
        scan.timeline.at(e.micros, r.line);
    }
    scan.lines = r.line;
    if !seen_entry {
        return Err(Error::Tests(format!("--replay {shown}: no command in it: not a capture")));
    }
    if scan.timeline.prev.is_none() {
        return Err(Error::Tests(format!("--replay {shown}: none of its commands can be replayed")));
    }
    scan.names = names.into_iter().collect();
    scan.names.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scan.skipped = skipped.into_iter().map(|((n, w), c)| (n, w, c)).collect();
    scan.skipped.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    Ok(scan)
}

// ---- the replay ----

/// A replay of one capture: what its scan found, the clients this process plays (with
/// `--worker I/N`, original client `j` is this worker's when `j % N == I`), and, while a test
/// runs, the reader that feeds them.
#[derive(Debug)]
pub struct Replay {
    /// The options.
    pub settings: Settings,
    /// What the capture holds.
    pub scan: Scan,
    /// `--key-prefix`: before each key, with the pass's number after it when it loops.
    pub key_prefix: String,
    /// The worker's share: (index, count).
    pub worker: (u64, u64),
    /// This process's clients: the original clients' indexes in the scan.
    pub mine: Vec<u32>,
    /// The db each connection starts in (`--dbnum`).
    pub db: u32,
    feed: Mutex<Option<Arc<Stream>>>,
    /// The SELECTs added before a client's command recorded in another db than its own.
    pub selects_added: AtomicU64,
}

impl Replay {
    /// The commands this process replays in all: its clients' in the capture, times the passes
    /// (`--replay-loop`).
    pub fn commands(&self) -> u64 {
        let mine: u64 = self.mine.iter().filter_map(|&j| self.scan.per_client.get(j as usize)).sum();
        mine.saturating_mul(self.settings.passes)
    }

    /// The replay of `scan`, for worker `worker` (index, count).
    pub fn new(settings: Settings, scan: Scan, key_prefix: String, worker: (u64, u64), db: u32) -> Replay {
        let (i, n) = (worker.0, worker.1.max(1));
        let mine = (0..scan.clients.len() as u32).filter(|j| u64::from(*j) % n == i).collect();
        Replay {
            settings,
            scan,
            key_prefix,
            worker: (i, n),
            mine,
            db,
            feed: Mutex::new(None),
            selects_added: AtomicU64::new(0),
        }
    }

    /// The titles of the report's commands: the busiest, then the rest together.
    pub fn titles(&self) -> Vec<String> {
        let mut t: Vec<String> = self.scan.names.iter().take(BUSIEST).map(|(n, _)| n.clone()).collect();
        if self.scan.names.len() > BUSIEST || self.scan.unnamed > 0 {
            t.push(OTHER.to_string());
        }
        t
    }

    /// How long a pass takes at `--speed`, and the gap before the next pass: the capture's span
    /// and its mean gap between commands.
    fn pass_micros(&self) -> u64 {
        let span = self.scan.timeline.offset_us;
        span + span / self.scan.commands().max(1)
    }

    /// The rate the capture was recorded at (commands a second over its span, passes
    /// included), at `--speed`.
    pub fn recorded_rate(&self) -> f64 {
        let secs = self.pass_micros() as f64 / 1e6 / self.settings.speed;
        let share = self.mine.len() as f64 / self.scan.clients.len().max(1) as f64;
        if secs > 0.0 {
            self.scan.commands() as f64 * share / secs
        } else {
            0.0
        }
    }

    /// Starts the reader: the first record is due at `origin` on the run's clock. The core's
    /// clients take their records from what this returns; [`Replay::stop`] ends the reader.
    pub fn start(self: &Arc<Replay>, origin: Time) -> Arc<dyn Feed> {
        let stream = Arc::new(Stream::new(self.mine.len()));
        *self.feed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&stream));
        let (me, s) = (Arc::clone(self), Arc::clone(&stream));
        std::thread::spawn(move || {
            let result = me.read_into(&s, origin);
            if let Err(e) = result {
                *s.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            }
            s.finish();
        });
        stream
    }

    /// A feed that waits for [`Replay::start`]: what the plan carries before the test starts.
    pub fn feed(self: &Arc<Replay>) -> Arc<dyn Feed> {
        Arc::new(Pending(Arc::clone(self)))
    }

    /// Stops the reader (the test ended) and says what went wrong reading, if anything did.
    pub fn stop(&self) -> Option<String> {
        let s = self.feed.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        s.cancel.store(true, Ordering::SeqCst);
        s.room.notify_all();
        let e = s.error.lock().unwrap_or_else(|p| p.into_inner()).take();
        e
    }

    /// The reader: each pass of the file, each command of this worker's clients into its
    /// client's queue, at most [`BUFFERED`] bytes ahead.
    fn read_into(&self, s: &Stream, origin: Time) -> io::Result<()> {
        let (wi, wn) = self.worker;
        let index: HashMap<&[u8], u32> =
            self.scan.clients.iter().enumerate().map(|(j, c)| (c.as_slice(), j as u32)).collect();
        let parts: HashMap<&str, u16> = self
            .scan
            .names
            .iter()
            .take(BUSIEST)
            .enumerate()
            .map(|(i, (n, _))| (n.as_str(), i as u16))
            .collect();
        let other = BUSIEST.min(self.scan.names.len()) as u16;
        let mut state: Vec<Player> =
            (0..self.mine.len()).map(|_| Player { db: self.db, block: None }).collect();
        let speed = self.settings.speed;
        let pass_us = self.pass_micros();
        for pass in 0..self.settings.passes {
            let prefix = match (self.key_prefix.is_empty(), self.settings.passes) {
                (true, 1) => Vec::new(),
                (_, 1) => self.key_prefix.clone().into_bytes(),
                _ => format!("{}{pass}:", self.key_prefix).into_bytes(),
            };
            let mut r = Reader::open(&self.settings.file)?;
            let mut last_due = Time::ZERO;
            let mut timeline = Timeline::default();
            while let Some(item) = r.next_item()? {
                if s.cancel.load(Ordering::Relaxed) {
                    return Ok(());
                }
                let Item::Entry(e) = item else { continue };
                if skipped_of(&self.settings, &e).is_some() {
                    continue;
                }
                // Every client's command moves the clock, this worker's or not.
                let played_us = timeline.at(e.micros, r.line);
                let Some(&j) = index.get(client_key(&e.client)) else { continue };
                if u64::from(j) % wn != wi {
                    continue;
                }
                let local = (u64::from(j) / wn) as usize;
                let offset_us = played_us as f64 + (pass * pass_us) as f64;
                let due = origin + Duration::from_nanos((offset_us * 1000.0 / speed) as u64);
                last_due = last_due.max(due);
                let name = command_name(&e.args);
                let part = parts.get(name.as_str()).copied().unwrap_or(other);
                let p = &mut state[local];
                let is_select = name == "SELECT";
                if !is_select && e.db != p.db && p.block.is_none() {
                    // Recorded in another db than the connection is in (a capture begun after
                    // the client's SELECT, or a pass begun where the last ended).
                    let db = e.db.to_string().into_bytes();
                    let (bytes, _) = encode_command(&[b"SELECT".to_vec(), db], b"");
                    let part = parts.get("SELECT").copied().unwrap_or(other);
                    s.push(local, Record { due, part, slot: SLOTS, bytes });
                    self.selects_added.fetch_add(1, Ordering::Relaxed);
                    p.db = e.db;
                }
                if is_select {
                    if let Some(db) = e.args.get(1).and_then(|a| std::str::from_utf8(a).ok()?.parse().ok()) {
                        p.db = db;
                    }
                }
                let (bytes, slot) = encode_command(&e.args, &prefix);
                if let Some(block) = &mut p.block {
                    // Inside MULTI: due with it, and on its first key's slot.
                    if block.slot == SLOTS {
                        block.slot = slot;
                    }
                    block.records.push(Record { due: block.due, part, slot, bytes });
                    let end = name == "EXEC" || name == "DISCARD";
                    if end || block.records.len() >= 10_000 {
                        let block = p.block.take().unwrap_or_default();
                        let slot = block.slot;
                        for mut rec in block.records {
                            rec.slot = slot;
                            s.push(local, rec);
                        }
                    }
                } else if name == "MULTI" {
                    p.block =
                        Some(Block { due, slot: SLOTS, records: vec![Record { due, part, slot, bytes }] });
                } else {
                    s.push(local, Record { due, part, slot, bytes });
                }
                s.advance(due);
                s.wait_for_room();
            }
            // A transaction the capture cut: sent as it is.
            for (local, p) in state.iter_mut().enumerate() {
                if let Some(block) = p.block.take() {
                    for rec in block.records {
                        s.push(local, rec);
                    }
                }
            }
            s.advance(last_due);
        }
        Ok(())
    }

    /// The figures of the replay for its test's result, `stats` being the test's.
    pub fn figures(&self, stats: &respbench_core::Stats) -> Figures {
        let (on_time, late) = match &stats.lateness {
            Some(h) if !h.is_empty() => {
                let threshold = crate::verdict::LATENESS_KEPT_MICROS;
                let on = h.count_between(0, threshold);
                (on, h.len())
            }
            _ => (0, 0),
        };
        Figures {
            file: self.settings.file.display().to_string(),
            format: self.scan.format.map_or("", Format::name).to_string(),
            speed: self.settings.speed,
            passes: self.settings.passes,
            clients: self.mine.len() as u64,
            recorded_s: self.scan.span().as_secs_f64(),
            sent: late,
            sent_on_time: on_time,
            selects_added: self.selects_added.load(Ordering::Relaxed),
            skipped: self
                .scan
                .skipped
                .iter()
                .map(|(n, why, c)| Skipped {
                    command: n.clone(),
                    reason: why.reason().to_string(),
                    count: *c,
                })
                .collect(),
            malformed: self.scan.malformed,
            malformed_lines: self.scan.malformed_lines.clone(),
        }
    }
}

/// The reader of one test's replay, stopped when it is dropped.
pub struct Reading(Arc<Replay>);

impl Reading {
    /// Starts `r`'s reader, its first record due at `origin`.
    pub fn start(r: &Arc<Replay>, origin: Time) -> Reading {
        let _ = r.start(origin);
        Reading(Arc::clone(r))
    }

    /// Stops the reader; what went wrong reading the file, if anything did.
    pub fn stop(&self) -> Option<String> {
        self.0.stop()
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        let _ = self.0.stop();
    }
}

/// A replay's schedule: the recorded instants, kept when the commands were sent on time (the
/// rate is the capture's, whatever it was, so only the lateness judges it).
pub fn schedule(total: &crate::result::TestResult) -> Option<crate::verdict::Schedule> {
    total.replay.as_ref()?;
    crate::verdict::Schedule::of_stats(0, &total.stats)
}

/// The finding of a replay that did not keep the recorded gaps: its commands were sent late.
pub fn finding(total: &crate::result::TestResult) -> Option<crate::result::Warning> {
    let f = total.replay.as_ref()?;
    let sch = schedule(total)?;
    if !sch.late() {
        return None;
    }
    Some(crate::result::Warning {
        kind: crate::result::WarningKind::ScheduleNotKept,
        text: format!(
            "{}: the recorded gaps were not kept: {:.1}% of the commands were sent within {:.3} msec of their \
             instant, {} (over {:.3} msec is late)",
            total.name,
            f.on_time_share() * 100.0,
            crate::verdict::LATENESS_KEPT_MICROS as f64 / 1000.0,
            sch.describe(),
            sch.threshold_us() as f64 / 1000.0
        ),
        figures: vec![
            ("on_time_share", f.on_time_share()),
            ("lateness_p99_ms", sch.lateness_p99_us as f64 / 1000.0),
        ],
    })
}

/// What the reader keeps of an original client between its commands.
struct Player {
    /// The db its connection is in.
    db: u32,
    /// A transaction being read: it goes to the client whole.
    block: Option<Block>,
}

#[derive(Default)]
struct Block {
    due: Time,
    slot: u16,
    records: Vec<Record>,
}

/// The records read and not yet taken, per client: the feed the core's clients take from.
#[derive(Debug)]
struct Stream {
    queues: Vec<Mutex<VecDeque<Record>>>,
    /// Bytes of records held.
    held: AtomicUsize,
    /// The due time of the last record read (nanoseconds on the run's clock): no client's
    /// next record, not yet read, is due before it.
    frontier: AtomicU64,
    done: AtomicBool,
    cancel: AtomicBool,
    lock: Mutex<()>,
    room: Condvar,
    error: Mutex<Option<String>>,
}

impl Stream {
    fn new(clients: usize) -> Stream {
        Stream {
            queues: (0..clients).map(|_| Mutex::new(VecDeque::new())).collect(),
            held: AtomicUsize::new(0),
            frontier: AtomicU64::new(0),
            done: AtomicBool::new(false),
            cancel: AtomicBool::new(false),
            lock: Mutex::new(()),
            room: Condvar::new(),
            error: Mutex::new(None),
        }
    }

    fn cost(r: &Record) -> usize {
        r.bytes.len() + std::mem::size_of::<Record>()
    }

    fn push(&self, client: usize, r: Record) {
        self.held.fetch_add(Stream::cost(&r), Ordering::SeqCst);
        self.queues[client].lock().unwrap_or_else(|e| e.into_inner()).push_back(r);
    }

    /// Everything due before `due` has been read.
    fn advance(&self, due: Time) {
        self.frontier.fetch_max(due.as_nanos(), Ordering::SeqCst);
    }

    fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
    }

    /// Waits while the clients hold [`BUFFERED`] bytes or more.
    fn wait_for_room(&self) {
        let mut g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        while self.held.load(Ordering::SeqCst) >= BUFFERED && !self.cancel.load(Ordering::SeqCst) {
            g = self.room.wait_timeout(g, Duration::from_millis(5)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

impl Feed for Stream {
    fn next(&self, client: u64, _now: Time) -> Next {
        // Read before the queue: a record pushed after them is due after what they say.
        let done = self.done.load(Ordering::SeqCst);
        let frontier = Time::from_nanos(self.frontier.load(Ordering::SeqCst));
        let Some(q) = self.queues.get(client as usize) else { return Next::End };
        let r = q.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
        match r {
            Some(r) => {
                let before = self.held.fetch_sub(Stream::cost(&r), Ordering::SeqCst);
                if before >= BUFFERED && before - Stream::cost(&r) < BUFFERED {
                    self.room.notify_one();
                }
                Next::Record(r)
            }
            None if done => Next::End,
            None => Next::NotBefore(frontier),
        }
    }
}

/// The feed a plan carries before its test starts the reader ([`Replay::start`]): it hands
/// out what the started one does.
#[derive(Debug)]
struct Pending(Arc<Replay>);

impl Feed for Pending {
    fn next(&self, client: u64, now: Time) -> Next {
        let s = self.0.feed.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match s {
            Some(s) => s.next(client, now),
            None => Next::NotBefore(now),
        }
    }
}

// ---- capturing ----

/// What a capture recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Captured {
    /// Commands written.
    pub commands: u64,
    /// Lines MONITOR sent that could not be read (counted, not written).
    pub malformed: u64,
    /// Distinct clients seen.
    pub clients: u64,
}

/// How long a capture that was told to stop goes on reading what MONITOR had sent already
/// (until a read finds nothing for 100 ms).
const DRAIN: Duration = Duration::from_secs(1);

/// Runs `MONITOR` on `conn` and writes each command to `out` as a capture record (after the
/// header) until `until`, `max` commands, or `stop` says so; from then on it still writes what
/// MONITOR had sent (what the socket holds), for at most [`DRAIN`].
pub fn capture(
    conn: crate::server::Conn,
    out: &mut dyn Write,
    until: Option<Instant>,
    max: Option<u64>,
    stop: &dyn Fn() -> bool,
) -> Result<Captured, Error> {
    let mut conn = conn;
    let reply = conn.command(&[b"MONITOR"]).map_err(Error::Startup)?;
    if let respbench_core::resp::Value::Error(e) = &reply {
        return Err(Error::Tests(format!("MONITOR was refused: {}", String::from_utf8_lossy(e))));
    }
    conn.set_timeout(Duration::from_millis(100));
    let mut r = Reader {
        r: conn.into_reader(),
        format: Format::Monitor,
        buf: Vec::new(),
        at: 0,
        eof: false,
        line: 0,
    };
    let fail = |e: io::Error| Error::Tests(format!("capture: cannot write the file: {e}"));
    out.write_all(CAPTURE_HEADER).map_err(fail)?;
    let mut done = Captured::default();
    let mut clients: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let mut rec = Vec::new();
    let mut draining: Option<Instant> = None;
    loop {
        if max.is_some_and(|m| done.commands >= m) || draining.is_some_and(|d| d.elapsed() >= DRAIN) {
            break;
        }
        if draining.is_none() && (stop() || until.is_some_and(|u| Instant::now() >= u)) {
            draining = Some(Instant::now());
        }
        match r.next_line() {
            Ok(Some(Item::Entry(e))) => {
                if clients.len() < MAX_CLIENTS && !clients.contains(&e.client) {
                    clients.insert(e.client.clone());
                }
                rec.clear();
                encode_record(&mut rec, &e);
                out.write_all(&rec).map_err(fail)?;
                done.commands += 1;
            }
            Ok(Some(Item::Malformed(_))) => done.malformed += 1,
            Ok(Some(Item::Nothing)) => {}
            Ok(None) => return Err(Error::Tests("capture: the server closed the MONITOR connection".into())),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                r.eof = false;
                if draining.is_some() {
                    // Nothing more had been sent.
                    break;
                }
            }
            Err(e) => return Err(Error::Tests(format!("capture: reading MONITOR: {e}"))),
        }
    }
    done.clients = clients.len() as u64;
    out.flush().map_err(fail)?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use respbench_core::replay::monitor_line;

    fn entry(us: u64, client: &str, args: &[&str]) -> Entry {
        Entry {
            micros: us,
            db: 0,
            client: client.into(),
            args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        }
    }

    /// A command, or a malformed line's number and reason.
    type Read = Result<Entry, (u64, Malformed)>;

    fn read_all(bytes: &[u8]) -> (Format, Vec<Read>) {
        let mut r = Reader::new(bytes).unwrap();
        let mut out = Vec::new();
        while let Some(item) = r.next_item().unwrap() {
            match item {
                Item::Entry(e) => out.push(Ok(e)),
                Item::Malformed(m) => out.push(Err((r.line, m))),
                Item::Nothing => {}
            }
        }
        (r.format(), out)
    }

    #[test]
    fn both_formats_read_the_same_commands() {
        let entries = [
            entry(1_000_000, "1.1.1.1:1", &["SET", "k", "a b"]),
            entry(1_000_500, "1.1.1.1:2", &["GET", "k"]),
        ];
        let mut text = b"OK\n".to_vec();
        let mut file = CAPTURE_HEADER.to_vec();
        for e in &entries {
            text.extend_from_slice(&monitor_line(e));
            text.extend_from_slice(b"\r\n");
            encode_record(&mut file, e);
        }
        let want: Vec<_> = entries.iter().cloned().map(Ok).collect();
        assert_eq!(read_all(&text), (Format::Monitor, want.clone()));
        assert_eq!(read_all(&file), (Format::Capture, want));
    }

    #[test]
    fn malformed_lines_are_numbered_and_reading_goes_on() {
        let text = b"1.000001 [0 a:1] \"PING\"\ngarbage\n1.000002 [0 a:1] \"PING\n1.000003 [0 a:1] \"PING\"";
        let (_, items) = read_all(text);
        assert_eq!(items.len(), 4);
        assert_eq!(items[1], Err((2, Malformed::Time)));
        assert_eq!(items[2], Err((3, Malformed::Argument)));
        assert!(items[3].is_ok(), "the last line, without its end");
    }

    #[test]
    fn untrusted_bytes_are_read_to_the_end() {
        assert_eq!(read_untrusted(b""), (0, 0));
        assert_eq!(read_untrusted(b"x\n1.000001 [0 a:1] \"PING\"\n"), (1, 1));
        let mut file = CAPTURE_HEADER.to_vec();
        file.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(read_untrusted(&file), (0, 1), "a length past the limit ends the file");
    }

    #[test]
    fn a_truncated_capture_record_is_malformed() {
        let mut file = CAPTURE_HEADER.to_vec();
        encode_record(&mut file, &entry(1, "a:1", &["PING"]));
        file.pop();
        let (_, items) = read_all(&file);
        assert_eq!(items, vec![Err((1, Malformed::Record))]);
    }

    fn temp(name: &str, bytes: &[u8]) -> PathBuf {
        let p = std::env::temp_dir().join(format!("respbench-replay-{name}-{}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn the_timeline_plays_steps_backwards_as_no_gap_and_long_gaps_as_the_bound() {
        let mut t = Timeline::default();
        let year = 365 * 86_400 * 1_000_000u64;
        let played: Vec<u64> =
            [(100, 1), (160, 2), (50, 3), (70, 4), (70 + year, 5), (71 + year, 6), (10, 7)]
                .iter()
                .map(|&(us, line)| t.at(us, line))
                .collect();
        assert_eq!(played, [0, 60, 60, 80, 10_000_080, 10_000_081, 10_000_081]);
        assert_eq!((t.backwards, t.backwards_line), (2, 3));
        assert_eq!((t.compressed, t.longest_us, t.longest_line), (1, year, 5));
    }

    #[test]
    fn names_and_client_names_are_bounded() {
        let mut text = b"OK\n".to_vec();
        for i in 0..MAX_NAMES + 5 {
            text.extend_from_slice(&monitor_line(&entry(i as u64, "a:1", &[&format!("CMD{i}")])));
            text.push(b'\n');
        }
        let long = "c".repeat(1000);
        text.extend_from_slice(&monitor_line(&entry(2_000, &long, &["GET", "k"])));
        text.push(b'\n');
        let p = temp("names", &text);
        let s = crate::syntax::replay(Some(p.to_str().unwrap()), None, None, false, false).unwrap().unwrap();
        let scan = scan(&s).unwrap();
        assert_eq!((scan.names.len(), scan.unnamed, scan.commands()), (MAX_NAMES, 6, MAX_NAMES as u64 + 6));
        assert_eq!(scan.clients[1].len(), MAX_CLIENT_NAME);
        let r = Replay::new(s, scan, String::new(), (0, 1), 0);
        assert_eq!(r.titles().last().map(String::as_str), Some(OTHER));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_scan_counts_clients_commands_and_what_is_skipped() {
        let mut text = b"OK\n".to_vec();
        for e in [
            entry(10, "a:1", &["SET", "k", "v"]),
            entry(20, "b:2", &["BLPOP", "q", "0"]),
            entry(30, "b:2", &["GET", "k"]),
            entry(40, "lua", &["GET", "k"]),
            entry(50, "a:1", &["GET", "k"]),
        ] {
            text.extend_from_slice(&monitor_line(&e));
            text.push(b'\n');
        }
        text.extend_from_slice(b"nonsense\n");
        let p = temp("scan", &text);
        let s = crate::syntax::replay(Some(p.to_str().unwrap()), None, None, false, false).unwrap().unwrap();
        let scan = scan(&s).unwrap();
        assert_eq!(scan.clients, vec![b"a:1".to_vec(), b"b:2".to_vec()]);
        assert_eq!(scan.names, vec![("GET".to_string(), 2), ("SET".to_string(), 1)]);
        assert_eq!(scan.skipped.len(), 2);
        assert_eq!((scan.malformed, scan.malformed_lines[0].0), (1, 7));
        assert_eq!((scan.first_us, scan.last_us, scan.span()), (10, 50, Duration::from_micros(40)));
        let strict = Settings { strict: true, ..s.clone() };
        let e = super::scan(&strict).unwrap_err().to_string();
        assert!(e.contains("line 7"), "{e}");
        std::fs::remove_file(&p).unwrap();
        let p = temp("notcapture", b"{\"json\": true}\n");
        let e = super::scan(&Settings { file: p.clone(), ..s }).unwrap_err().to_string();
        assert!(e.contains("not a capture: line 1"), "{e}");
        std::fs::remove_file(&p).unwrap();
    }

    /// The reader hands each client its own commands in order, a transaction with one due
    /// time, SELECT added where a command was recorded in another db, and every pass.
    #[test]
    fn the_feed_gives_each_client_its_commands() {
        let mut e = vec![
            entry(1_000_000, "a:1", &["SET", "k", "v"]),
            entry(1_000_100, "b:2", &["MULTI"]),
            entry(1_000_200, "b:2", &["INCR", "n"]),
            entry(1_000_300, "b:2", &["EXEC"]),
            entry(1_000_400, "a:1", &["GET", "k"]),
        ];
        e[4].db = 3;
        let mut file = CAPTURE_HEADER.to_vec();
        for x in &e {
            encode_record(&mut file, x);
        }
        let p = temp("feed", &file);
        let s = crate::syntax::replay(Some(p.to_str().unwrap()), Some("2"), Some(2), false, false)
            .unwrap()
            .unwrap();
        let scan = scan(&s).unwrap();
        let r = Arc::new(Replay::new(s, scan, "p".into(), (0, 1), 0));
        let origin = Time::from_nanos(1_000_000);
        let feed = r.start(origin);
        let mut got: [Vec<(u64, String)>; 2] = Default::default();
        for (c, out) in got.iter_mut().enumerate() {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                match feed.next(c as u64, Time::ZERO) {
                    Next::Record(rec) => {
                        let text = String::from_utf8_lossy(&rec.bytes).replace("\r\n", " ");
                        out.push(((rec.due.as_nanos() - origin.as_nanos()) / 1000, text));
                    }
                    Next::End => break,
                    Next::NotBefore(_) => {
                        assert!(Instant::now() < deadline);
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        }
        assert!(r.stop().is_none());
        // Pass 1 starts a pass (400 µs of span + a mean gap of 80) later: 240 µs at speed 2.
        assert_eq!(
            got[0],
            vec![
                (0, "*3 $3 SET $4 p0:k $1 v ".into()),
                (200, "*2 $6 SELECT $1 3 ".into()),
                (200, "*2 $3 GET $4 p0:k ".into()),
                (240, "*2 $6 SELECT $1 0 ".into()),
                (240, "*3 $3 SET $4 p1:k $1 v ".into()),
                (440, "*2 $6 SELECT $1 3 ".into()),
                (440, "*2 $3 GET $4 p1:k ".into()),
            ]
        );
        assert_eq!(
            got[1][..3],
            [(50, "*1 $5 MULTI ".into()), (50, "*2 $4 INCR $4 p0:n ".into()), (50, "*1 $4 EXEC ".into())]
        );
        assert_eq!(got[1].len(), 6);
        assert_eq!(r.selects_added.load(Ordering::Relaxed), 3);
        std::fs::remove_file(&p).unwrap();
    }
}
