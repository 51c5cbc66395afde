//! End-to-end test harness for respbench: real `redis-server` processes on loopback, a MONITOR
//! client, a tool abstraction that runs either `respbench` or the reference `redis-benchmark`
//! with a hard timeout, and parsers for the tools' output formats. [`tls`] adds certificates made
//! with `openssl` and servers with a TLS port.
//!
//! Every test starts its own server on a free port, so tests run in parallel. A missing
//! `redis-server` is a panic, never a silent skip.

use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const REDIS_MISSING: &str =
    "redis-server not found: install Debian's redis-server package (apt-get install redis-server redis-tools)";
const REDIS_CLI_MISSING: &str =
    "redis-cli not found: install Debian's redis-tools package (apt-get install redis-server redis-tools)";

pub mod cluster;
pub mod corrupt;
pub mod fake;
pub mod relay;
pub mod seccomp;

/// Instantiates checks written once as `fn(Tool)` for respbench: the `every` list on every
/// backend (`mio::NAME`, `smol::NAME`, `uring::NAME`), the `mio` list once, on mio (`mio::NAME`).
///
/// A check goes on every backend only when what it checks is the backend's: how it moves bytes
/// and time (a refused connect, a FIN mid-reply, a reset, partial writes under a deep pipeline,
/// TLS, a deadline or a Ctrl-C waking the loop, running out of descriptors, a node woken
/// mid-run). Options, reports, documents and routing are the command line's and the core's,
/// the same whatever waits for the sockets: they run once.
#[macro_export]
macro_rules! backend_tests {
    (every: [$($every:ident),* $(,)?], mio: [$($once:ident),* $(,)?] $(,)?) => {
        mod mio {
            $(#[test] fn $every() { super::$every($crate::respbench_on("mio")); })*
            $(#[test] fn $once() { super::$once($crate::respbench_on("mio")); })*
        }
        mod smol {
            $(#[test] fn $every() { super::$every($crate::respbench_on("smol")); })*
        }
        mod uring {
            $(#[test] fn $every() { super::$every($crate::respbench_on("uring")); })*
        }
    };
}

/// Every check on every backend: [`backend_tests!`] with an empty `mio` list.
#[macro_export]
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        $crate::backend_tests!(every: [$($name),*], mio: []);
    };
}

/// A new path in the temp directory for a test's JSON document, unique within the test binary:
/// `respbench-PREFIX-PID-TAG-N.json`.
pub fn json_path(prefix: &str, tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("respbench-{prefix}-{}-{tag}-{n}.json", std::process::id()))
}
pub mod tls;

/// The names of the files under `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn unique_tmpdir(prefix: &str) -> PathBuf {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let n = UNIQUE.fetch_add(1, Ordering::Relaxed);
    // Short names: a unix socket path must fit in 108 bytes.
    let dir = std::env::temp_dir().join(format!("{prefix}-{}-{n}-{nanos:x}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// A directory of the test's own in the temp directory, removed with what it holds when dropped
/// (a test that writes hundreds of megabytes leaves nothing behind).
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new empty directory named `PREFIX-PID-N-NANOS`.
    pub fn new(prefix: &str) -> Scratch {
        Scratch(unique_tmpdir(prefix))
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Polls `ready` every 10 ms until it holds; panics naming `what` after `limit`. For waiting
/// on what a test can observe (a server's count, a process's state) instead of sleeping for a
/// time it hopes is long enough.
pub fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Returns a loopback port that was free a moment ago (bind port 0, read it, release it).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// A `redis-server` child process on a free loopback port and a private unix socket, and a TLS
/// port when started by [`RedisServer::start_tls`].
///
/// Dropping it kills the server and removes its directory.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
    password: Option<String>,
    tls: Option<tls::TlsListener>,
}

impl RedisServer {
    /// Starts a server with the harness' default configuration.
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[])
    }

    /// Starts a server with extra `--name value` configuration, e.g. `[("requirepass", "x")]`;
    /// a value with spaces is passed as several arguments (`("rename-command", "CONFIG \"\"")`).
    pub fn start_with(config: &[(&str, &str)]) -> RedisServer {
        RedisServer::launch(config, None)
    }

    /// Starts a server with `config`, and a TLS port as well when `tls` is given.
    pub(crate) fn launch(config: &[(&str, &str)], tls: Option<tls::TlsSetup>) -> RedisServer {
        let password = config.iter().rev().find(|(k, _)| *k == "requirepass").map(|(_, v)| v.to_string());
        let mut last_err = String::new();
        // The ports are free when picked but another process may take them before redis binds them.
        for _attempt in 0..5 {
            let dir = unique_tmpdir("rbe2e");
            // A cluster node's bus listens on its port + 10000, which must be a port too.
            let cluster = config.iter().any(|&(k, v)| k == "cluster-enabled" && v == "yes");
            let port = std::iter::repeat_with(free_port).find(|&p| !cluster || p <= 55535).expect("a port");
            let tls_port = tls.as_ref().map(|_| free_port());
            let mut cmd = Command::new("redis-server");
            cmd.args(["--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--unixsocketperm", "700"])
                .arg("--port")
                .arg(port.to_string())
                .arg("--unixsocket")
                .arg(dir.join("redis.sock"))
                .arg("--dir")
                .arg(&dir)
                .arg("--logfile")
                .arg(dir.join("redis.log"));
            if let (Some(setup), Some(tls_port)) = (&tls, tls_port) {
                cmd.args(setup.server_args(tls_port));
            }
            // A value with spaces is several arguments (`rename-command CONFIG ""` takes two).
            for (k, v) in config {
                cmd.arg(format!("--{k}"));
                if v.contains(' ') {
                    cmd.args(v.split(' '));
                } else {
                    cmd.arg(v);
                }
            }
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
            let child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::NotFound => panic!("{REDIS_MISSING}"),
                Err(e) => panic!("spawning redis-server: {e}"),
            };
            let mut server = RedisServer { child, port, dir, password: password.clone(), tls: None };
            if let Err(e) = server.wait_ready(Duration::from_secs(10)) {
                last_err = e;
                continue;
            }
            if let (Some(setup), Some(tls_port)) = (tls, tls_port) {
                // Both listeners are up before the first PING is served, so a failure here is the
                // certificates' or the configuration's, which another attempt would not fix.
                if let Err(e) = setup.wait_ready(tls_port, Duration::from_secs(10)) {
                    let log = std::fs::read_to_string(server.dir.join("redis.log")).unwrap_or_default();
                    panic!("redis-server's TLS port {tls_port} does not answer: {e}\nlog:\n{log}");
                }
                server.tls = Some(setup.into_listener(tls_port));
            }
            return server;
        }
        panic!("redis-server did not start: {last_err}");
    }

    /// Kills the server (SIGKILL: sockets reset, nothing flushed), waits `down`, and starts a
    /// plain server (no TLS, default configuration) on the same port and directory: a crash and
    /// a restart, for tests of `--reconnect`.
    pub fn crash_and_restart(&mut self, down: Duration) {
        self.crash_and_relaunch(down, &[]);
        if let Err(e) = self.wait_ready(Duration::from_secs(10)) {
            panic!("redis-server did not restart on port {}: {e}", self.port);
        }
    }

    /// [`RedisServer::crash_and_restart`] with extra `--name value` configuration, returning as
    /// soon as the port accepts a connection, without sending anything: a server that loads its
    /// `dump.rdb` (saved in its directory before) answers `LOADING` meanwhile, and nothing of
    /// the test's own is counted in its `INFO errorstats`. A `bind` given moves the server to
    /// that address, on the same port.
    pub fn crash_and_restart_as(&mut self, down: Duration, config: &[(&str, &str)]) {
        self.crash_and_relaunch(down, config);
        let port = self.port;
        let host =
            config.iter().rev().find(|(k, _)| *k == "bind").map_or("127.0.0.1", |(_, v)| v).to_string();
        wait_until("the restarted server's port", Duration::from_secs(10), || {
            TcpStream::connect((host.as_str(), port)).is_ok()
        });
    }

    fn crash_and_relaunch(&mut self, down: Duration, config: &[(&str, &str)]) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        thread::sleep(down);
        let child = Command::new("redis-server")
            .args(["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"])
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .args(config.iter().flat_map(|(k, v)| [format!("--{k}"), v.to_string()]))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("restarting redis-server: {e}"));
        self.child = child;
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
                return Err(format!("redis-server exited with {status}; log:\n{log}"));
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
                let mut buf = [0u8; 64];
                if s.write_all(b"PING\r\n").is_ok() {
                    if let Ok(n) = s.read(&mut buf) {
                        // -NOAUTH also proves the server is serving commands.
                        if buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH") {
                            return Ok(());
                        }
                    }
                }
            }
            if Instant::now() > deadline {
                return Err(format!("no PING answer on port {} within {timeout:?}", self.port));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal to the server with `kill -NAME` (`"STOP"`, `"CONT"`, `"KILL"`).
    pub fn signal(&self, name: &str) {
        send_signal(self.pid(), name);
    }

    /// Path of the server's unix socket.
    pub fn socket_path(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    /// The `requirepass` the server was started with, if any.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// Runs `redis-cli` against the server (authenticated as the default user when a
    /// `requirepass` was configured) and returns its stdout with the trailing newline removed.
    pub fn cli<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-h", "127.0.0.1", "-p"]).arg(self.port.to_string());
        if let Some(pw) = &self.password {
            cmd.args(["--no-auth-warning", "-a", pw]);
        }
        cmd.args(args).stdin(Stdio::null());
        let out = match cmd.output() {
            Ok(o) => o,
            Err(e) if e.kind() == io::ErrorKind::NotFound => panic!("{REDIS_CLI_MISSING}"),
            Err(e) => panic!("running redis-cli: {e}"),
        };
        assert!(out.status.success(), "redis-cli failed: {}", String::from_utf8_lossy(&out.stderr));
        let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
        while s.ends_with('\n') {
            s.pop();
        }
        s
    }

    /// `DBSIZE` of database `db`.
    pub fn dbsize(&self, db: u32) -> u64 {
        let s = self.cli(&["-n", &db.to_string(), "DBSIZE"]);
        s.trim().parse().unwrap_or_else(|_| panic!("DBSIZE answered {s:?}"))
    }

    /// A field of `INFO <section>`, e.g. `info_field("stats", "total_connections_received")`.
    pub fn info_field(&self, section: &str, field: &str) -> Option<String> {
        let info = self.cli(&["INFO", section]);
        info.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':').map(|v| v.trim().to_string()))
    }

    /// `calls` of `cmdstat_<command>` in `INFO commandstats` (0 when the command never ran).
    pub fn command_calls(&self, command: &str) -> u64 {
        self.commandstat(command, "calls").map_or(0, |c| c as u64)
    }

    /// `rejected_calls` of `cmdstat_<command>`: its calls refused before they ran (`-READONLY`,
    /// `-MASTERDOWN`, `-NOAUTH`…), 0 when the command never came.
    pub fn command_rejected(&self, command: &str) -> u64 {
        self.commandstat(command, "rejected_calls").map_or(0, |c| c as u64)
    }

    /// The server's own mean execution time of `command`, µs (`INFO commandstats`'
    /// `usec_per_call`); `None` before its first call.
    pub fn usec_per_call(&self, command: &str) -> Option<f64> {
        self.commandstat(command, "usec_per_call")
    }

    /// One field of `command`'s `INFO commandstats` line; `None` before its first call.
    fn commandstat(&self, command: &str, field: &str) -> Option<f64> {
        let v = self.info_field("commandstats", &format!("cmdstat_{}", command.to_lowercase()))?;
        let found = v
            .split(',')
            .find_map(|kv| kv.strip_prefix(field).and_then(|r| r.strip_prefix('=')))
            .and_then(|c| c.parse().ok());
        Some(found.unwrap_or_else(|| panic!("unexpected commandstats line {v:?}")))
    }

    /// Waits (up to 30 s) until the server has executed `command` at least `n` times: a run
    /// under test is under way.
    pub fn wait_for_calls(&self, command: &str, n: u64) {
        let what = format!("port {}: {n} calls of {command}", self.port);
        wait_until(&what, Duration::from_secs(30), || self.command_calls(command) >= n);
    }

    /// The bytes waiting unread in the receive queues of the server's established loopback
    /// connections, from the kernel's own table (`/proc/net/tcp`): for a stopped server, the
    /// requests sent to it and not yet answered.
    pub fn queued_bytes(&self) -> u64 {
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        table
            .lines()
            .skip(1)
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                // local_address (IP:PORT in hex), rem_address, st (01: established), tx:rx.
                let port = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
                let rx = f.get(4)?.split(':').nth(1)?;
                (port == self.port && *f.get(3)? == "01").then(|| u64::from_str_radix(rx, 16).ok())?
            })
            .sum()
    }

    /// A TCP connection authenticated like [`RedisServer::cli`].
    pub fn connect(&self) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connecting to redis-server");
        if let Some(pw) = &self.password {
            s.write_all(&encode_command(&[b"AUTH", pw.as_bytes()])).expect("sending AUTH");
            let mut line = Vec::new();
            read_line(&mut s, &mut line).expect("reading AUTH reply");
            assert_eq!(line, b"+OK", "AUTH failed: {}", String::from_utf8_lossy(&line));
        }
        s
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The certificates are the test binary's (tls::TlsCerts::shared): they stay.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Sends signal `name` (`INT`, `TERM`, `STOP`, `CONT`, `KILL`) to `pid` with the `kill` command.
pub fn send_signal(pid: u32, name: &str) {
    let st =
        Command::new("kill").arg(format!("-{name}")).arg(pid.to_string()).status().expect("running kill");
    assert!(st.success(), "kill -{name} {pid} failed");
}

/// Encodes a command as a RESP array of bulk strings.
pub fn encode_command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one CRLF-terminated line byte by byte (the harness only reads short status lines this way).
fn read_line(s: &mut TcpStream, line: &mut Vec<u8>) -> io::Result<()> {
    line.clear();
    let mut b = [0u8; 1];
    loop {
        if s.read(&mut b)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if b[0] == b'\n' {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(());
        }
        line.push(b[0]);
    }
}

/// One command seen by MONITOR.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorEntry {
    /// When the server ran it: seconds since the Unix epoch, by its clock.
    pub time: f64,
    /// Database the command ran in.
    pub db: u32,
    /// Client address as printed by the server: `127.0.0.1:5555`, `unix:/path`, `lua`.
    pub client: String,
    /// Command name and arguments, unescaped.
    pub args: Vec<Vec<u8>>,
}

impl MonitorEntry {
    /// The command name, upper-cased.
    pub fn name(&self) -> String {
        self.args.first().map(|a| String::from_utf8_lossy(a).to_uppercase()).unwrap_or_default()
    }
}

/// Parses one MONITOR line: `1700000000.123456 [0 127.0.0.1:5555] "SET" "key" "VXK"`.
pub fn parse_monitor_line(line: &[u8]) -> Option<MonitorEntry> {
    let open = line.iter().position(|&b| b == b'[')?;
    let close = open + line[open..].iter().position(|&b| b == b']')?;
    let inner = std::str::from_utf8(&line[open + 1..close]).ok()?;
    let (db, client) = inner.split_once(' ')?;
    let db = db.parse().ok()?;
    let args = parse_quoted_args(&line[close + 1..])?;
    let time = std::str::from_utf8(&line[..open]).ok()?.trim().parse().ok()?;
    Some(MonitorEntry { time, db, client: client.to_string(), args })
}

/// Parses a sequence of redis-quoted strings (`sdscatrepr` format) separated by spaces.
pub fn parse_quoted_args(mut s: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    loop {
        while let [b' ', rest @ ..] = s {
            s = rest;
        }
        if s.is_empty() {
            return Some(args);
        }
        if s[0] != b'"' {
            return None;
        }
        let mut arg = Vec::new();
        let mut i = 1;
        loop {
            match *s.get(i)? {
                b'"' => {
                    i += 1;
                    break;
                }
                b'\\' => {
                    let c = *s.get(i + 1)?;
                    i += 2;
                    match c {
                        b'n' => arg.push(b'\n'),
                        b'r' => arg.push(b'\r'),
                        b't' => arg.push(b'\t'),
                        b'a' => arg.push(0x07),
                        b'b' => arg.push(0x08),
                        b'x' => {
                            let hex = std::str::from_utf8(s.get(i..i + 2)?).ok()?;
                            arg.push(u8::from_str_radix(hex, 16).ok()?);
                            i += 2;
                        }
                        other => arg.push(other),
                    }
                }
                c => {
                    arg.push(c);
                    i += 1;
                }
            }
        }
        args.push(arg);
        s = &s[i..];
    }
}

/// A MONITOR connection collecting commands on a background thread.
pub struct Monitor {
    stream: TcpStream,
    sentinel: TcpStream,
    entries: Arc<Mutex<Vec<MonitorEntry>>>,
    thread: Option<JoinHandle<()>>,
}

const SENTINEL: &[u8] = b"respbench-e2e-monitor-sentinel";

impl Monitor {
    /// Connects to `server`, sends MONITOR and starts collecting.
    pub fn start(server: &RedisServer) -> Monitor {
        let mut stream = server.connect();
        stream.write_all(&encode_command(&[b"MONITOR"])).expect("sending MONITOR");
        let mut line = Vec::new();
        read_line(&mut stream, &mut line).expect("reading MONITOR reply");
        assert_eq!(line, b"+OK", "MONITOR failed: {}", String::from_utf8_lossy(&line));
        // Opened now so its AUTH is not monitored later.
        let sentinel = server.connect();
        let entries = Arc::new(Mutex::new(Vec::new()));
        let reader = stream.try_clone().expect("cloning monitor stream");
        let sink = Arc::clone(&entries);
        let thread = thread::spawn(move || {
            let mut reader = BufReader::new(reader);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let line = buf.strip_suffix(b"\r\n").unwrap_or(&buf);
                let Some(line) = line.strip_prefix(b"+") else { continue };
                if let Some(e) = parse_monitor_line(line) {
                    sink.lock().unwrap().push(e);
                }
            }
        });
        Monitor { stream, sentinel, entries, thread: Some(thread) }
    }

    /// Waits until every command sent before this call has been seen, stops, and returns the
    /// commands collected, without the harness' own sentinel.
    pub fn finish(mut self) -> Vec<MonitorEntry> {
        self.sentinel.write_all(&encode_command(&[b"ECHO", SENTINEL])).expect("sending sentinel");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let seen =
                self.entries.lock().unwrap().iter().any(|e| e.args.get(1).map(|a| &a[..]) == Some(SENTINEL));
            if seen {
                break;
            }
            assert!(Instant::now() < deadline, "MONITOR never showed the sentinel command");
            thread::sleep(Duration::from_millis(5));
        }
        let _ = self.stream.shutdown(Shutdown::Both);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut entries = std::mem::take(&mut *self.entries.lock().unwrap());
        let sentinel_pos = entries.iter().position(|e| e.args.get(1).map(|a| &a[..]) == Some(SENTINEL));
        if let Some(p) = sentinel_pos {
            let client = entries[p].client.clone();
            entries.retain(|e| e.client != client);
        }
        entries
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

/// Which program a [`Tool`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// The binary under test.
    Respbench,
    /// The reference `/usr/bin/redis-benchmark`.
    RedisBenchmark,
}

/// A benchmark program to run against the test servers.
#[derive(Clone, Debug)]
pub struct Tool {
    /// Which program this is.
    pub kind: ToolKind,
    /// Path of its executable.
    pub path: PathBuf,
    /// Arguments put before every command line (respbench's `--backend NAME`).
    pub pre_args: Vec<String>,
    /// Environment variables set for the run.
    pub env: Vec<(String, String)>,
    /// Runs in the child between fork and exec (to restrict it, e.g. with a seccomp filter).
    pub pre_exec: Option<fn() -> std::io::Result<()>>,
}

/// The respbench binary: `$RESPBENCH_BIN`, else `respbench` next to the test's `deps/` directory.
pub fn respbench() -> Tool {
    let path = match std::env::var_os("RESPBENCH_BIN") {
        Some(p) => PathBuf::from(p),
        None => {
            let exe = std::env::current_exe().expect("current_exe");
            // <target>/<profile>/deps/<test-binary>
            let profile_dir =
                exe.parent().and_then(Path::parent).expect("test binary is not in <target>/<profile>/deps");
            profile_dir.join(format!("respbench{}", std::env::consts::EXE_SUFFIX))
        }
    };
    assert!(path.is_file(), "{} does not exist: build it first: cargo build -p respbench", path.display());
    Tool { kind: ToolKind::Respbench, path, pre_args: Vec::new(), env: Vec::new(), pre_exec: None }
}

/// respbench on a given backend (`mio`, `smol` or `uring`): every command line gets `--backend NAME` first.
pub fn respbench_on(backend: &str) -> Tool {
    Tool { pre_args: vec!["--backend".to_string(), backend.to_string()], ..respbench() }
}

/// The reference tool, Debian's `/usr/bin/redis-benchmark`.
pub fn redis_benchmark() -> Tool {
    let path = PathBuf::from("/usr/bin/redis-benchmark");
    assert!(
        path.is_file(),
        "redis-benchmark not found: install Debian's redis-tools package (apt-get install redis-server redis-tools)"
    );
    Tool { kind: ToolKind::RedisBenchmark, path, pre_args: Vec::new(), env: Vec::new(), pre_exec: None }
}

/// What a finished (or killed) tool run produced.
#[derive(Debug)]
pub struct Output {
    /// Exit status.
    pub status: ExitStatus,
    /// Everything written to stdout.
    pub stdout: String,
    /// Everything written to stderr.
    pub stderr: String,
    /// Whether the harness killed it on timeout.
    pub timed_out: bool,
}

impl Output {
    /// A readable dump for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "status: {}{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            if self.timed_out { " (killed on timeout)" } else { "" },
            self.stdout,
            self.stderr
        )
    }
}

/// A tool process started with [`Tool::spawn`].
pub struct Running {
    child: Child,
    stdout: Option<JoinHandle<Vec<u8>>>,
    /// What the process has written to stdout so far.
    printed: Arc<Mutex<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    started: Instant,
}

/// Reads `r` to its end on a thread, keeping what came so far in `so_far`.
fn drain_into<R: Read + Send + 'static>(mut r: R, so_far: Arc<Mutex<Vec<u8>>>) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        loop {
            match r.read(&mut chunk) {
                Ok(0) | Err(_) => return std::mem::take(&mut *so_far.lock().unwrap()),
                Ok(n) => so_far.lock().unwrap().extend_from_slice(&chunk[..n]),
            }
        }
    })
}

fn drain<R: Read + Send + 'static>(mut r: R) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

impl Running {
    /// OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (up to 30 s) until the process has printed `text` on stdout; panics with what it
    /// printed otherwise. For acting on a run once it says it has got somewhere.
    pub fn wait_for_stdout(&self, text: &str) {
        let limit = Duration::from_secs(30);
        let printed = || String::from_utf8_lossy(&self.printed.lock().unwrap()).into_owned();
        let deadline = Instant::now() + limit;
        while !printed().contains(text) {
            assert!(Instant::now() < deadline, "no {text:?} on stdout within {limit:?}:\n{}", printed());
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Time since spawn.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether the process has ended ([`Running::wait`] still returns what it printed).
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Sends SIGINT via `kill -INT`, which avoids a libc dependency.
    pub fn interrupt(&self) {
        self.signal("INT");
    }

    /// Sends a signal with `kill -NAME` (`"INT"`, `"TERM"`).
    pub fn signal(&self, name: &str) {
        send_signal(self.pid(), name);
    }

    /// Waits up to `timeout`; on expiry kills the process and returns with `timed_out` set.
    pub fn wait_lenient(mut self, timeout: Duration) -> Output {
        let deadline = Instant::now() + timeout;
        let mut timed_out = false;
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                break st;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                let _ = self.child.kill();
                break self.child.wait().expect("wait after kill");
            }
            thread::sleep(Duration::from_millis(10));
        };
        let stdout = self.stdout.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
        let stderr = self.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
        Output {
            status,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            timed_out,
        }
    }

    /// Waits up to `timeout`; on expiry kills the process and panics with what it printed.
    pub fn wait(self, timeout: Duration) -> Output {
        let out = self.wait_lenient(timeout);
        assert!(!out.timed_out, "tool did not finish within {timeout:?}\n{}", out.dump());
        out
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// CPU hogs (`yes > /dev/null`) pinned to one CPU, killed when dropped (a failed assertion
/// included): a busy client machine on demand.
pub struct Hogs(Vec<Child>);

impl Hogs {
    /// `n` hogs on CPU `cpu` (`taskset -c`).
    pub fn on(cpu: &str, n: usize) -> Hogs {
        Hogs(
            (0..n)
                .map(|_| {
                    Command::new("taskset")
                        .args(["-c", cpu, "yes"])
                        .stdout(Stdio::null())
                        .spawn()
                        .expect("taskset yes")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for h in &mut self.0 {
            let _ = h.kill();
            let _ = h.wait();
        }
    }
}

impl Tool {
    /// This tool started by `taskset -c CPU`: pinned from its first instruction, so every thread
    /// it starts (and ends: pinning a running respbench raced with them) inherits the CPU.
    pub fn pinned(&self, cpu: &str) -> Tool {
        let pre_args = ["-c".to_string(), cpu.to_string(), self.path.display().to_string()]
            .into_iter()
            .chain(self.pre_args.iter().cloned())
            .collect();
        Tool { path: PathBuf::from("taskset"), pre_args, ..self.clone() }
    }

    /// Whether this is the binary under test (assertions on fixed redis-benchmark defects apply).
    pub fn is_respbench(&self) -> bool {
        self.kind == ToolKind::Respbench
    }

    /// Short name for messages.
    pub fn name(&self) -> &'static str {
        match self.kind {
            ToolKind::Respbench => "respbench",
            ToolKind::RedisBenchmark => "redis-benchmark",
        }
    }

    /// Starts the tool with piped stdout/stderr and stdin from /dev/null.
    pub fn spawn<S: AsRef<OsStr>>(&self, args: &[S]) -> Running {
        let mut cmd = Command::new(&self.path);
        cmd.args(&self.pre_args).args(args).envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(f) = self.pre_exec {
            // SAFETY: the hooks given here make system calls only (no allocation, no locks).
            unsafe { std::os::unix::process::CommandExt::pre_exec(&mut cmd, f) };
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {}: {e}", self.path.display()));
        let printed = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().map(|r| drain_into(r, Arc::clone(&printed)));
        let stderr = child.stderr.take().map(drain);
        Running { child, stdout, printed, stderr, started: Instant::now() }
    }

    /// Runs to completion; past `timeout` the process is killed and the call panics with its output.
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S], timeout: Duration) -> Output {
        self.spawn(args).wait(timeout)
    }

    /// Like [`Tool::run`] but returns a timed-out run (killed) instead of panicking.
    pub fn run_lenient<S: AsRef<OsStr>>(&self, args: &[S], timeout: Duration) -> Output {
        self.spawn(args).wait_lenient(timeout)
    }
}

/// Lines of tool output as a terminal would show them: anything before a line's last `\r`
/// (progress updates) is dropped.
pub fn display_lines(out: &str) -> Vec<&str> {
    out.split('\n').map(|l| l.rsplit('\r').next().unwrap_or(l)).collect()
}

/// One `-q` result line.
#[derive(Clone, Debug, PartialEq)]
pub struct QuietLine {
    /// Test title, e.g. `SET` or `MSET (10 keys)`.
    pub title: String,
    /// Requests per second.
    pub rps: f64,
    /// Median latency in milliseconds.
    pub p50: f64,
}

/// Parses `TITLE: 12345.67 requests per second, p50=0.123 msec` lines, with or without
/// respbench's trailing fields (`, bottleneck: client`, `, partial: …`); other lines are ignored.
pub fn parse_quiet(out: &str) -> Vec<QuietLine> {
    display_lines(out)
        .into_iter()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" requests per second, p50=")?;
            let (title, rps) = head.rsplit_once(": ")?;
            let (p50, rest) = tail.split_once(" msec")?;
            if !(rest.is_empty() || rest.starts_with(", ")) {
                return None;
            }
            Some(QuietLine {
                title: title.to_string(),
                rps: rps.trim().parse().ok()?,
                p50: p50.parse().ok()?,
            })
        })
        .collect()
}

/// Parses CSV output: each line of comma-separated double-quoted fields (`""` escapes a quote).
/// Lines that are not wholly quoted fields (warnings) are skipped.
pub fn parse_csv(out: &str) -> Vec<Vec<String>> {
    fn row(line: &str) -> Option<Vec<String>> {
        let mut fields = Vec::new();
        let mut chars = line.chars().peekable();
        loop {
            if chars.next()? != '"' {
                return None;
            }
            let mut f = String::new();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        f.push('"');
                    }
                    '"' => break,
                    c => f.push(c),
                }
            }
            fields.push(f);
            match chars.next() {
                None => return Some(fields),
                Some(',') => {}
                Some(_) => return None,
            }
        }
    }
    display_lines(out).into_iter().filter(|l| !l.is_empty()).filter_map(row).collect()
}

/// The parts of a verbose result block the tests check.
#[derive(Clone, Debug, PartialEq)]
pub struct VerboseBlock {
    /// Title from `====== TITLE ======`.
    pub title: String,
    /// From `N requests completed in S seconds`.
    pub requests: u64,
    /// From `N requests completed in S seconds`.
    pub seconds: f64,
    /// From `throughput summary: X requests per second`, when present.
    pub rps: Option<f64>,
}

/// Parses verbose result blocks in output order.
pub fn parse_verbose(out: &str) -> Vec<VerboseBlock> {
    let mut blocks: Vec<VerboseBlock> = Vec::new();
    for line in display_lines(out) {
        let t = line.trim();
        if let Some(title) = t.strip_prefix("====== ").and_then(|r| r.strip_suffix(" ======")) {
            blocks.push(VerboseBlock { title: title.to_string(), requests: 0, seconds: f64::NAN, rps: None });
        } else if let Some((n, rest)) = t.split_once(" requests completed in ") {
            if let (Some(b), Some(s)) = (blocks.last_mut(), rest.strip_suffix(" seconds")) {
                b.requests = n.parse().unwrap_or(0);
                b.seconds = s.parse().unwrap_or(f64::NAN);
            }
        } else if let Some(r) =
            t.strip_prefix("throughput summary: ").and_then(|r| r.strip_suffix(" requests per second"))
        {
            if let Some(b) = blocks.last_mut() {
                b.rps = r.parse().ok();
            }
        }
    }
    blocks
}

/// Replaces each run of exactly 12 ASCII digits that follows a `:` with `<12>`, so key shapes
/// (`key:000000000042` → `key:<12>`) compare across tools and random draws.
pub fn key_shape(arg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(arg.len());
    let mut i = 0;
    while i < arg.len() {
        out.push(arg[i]);
        if arg[i] == b':' {
            let run = arg[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if run == 12 {
                out.extend_from_slice(b"<12>");
                i += 1 + run;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Splits a command line like a shell would for the simple cases in published guides:
/// whitespace separates words, double and single quotes group, no escapes.
pub fn split_command_line(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Checks a `--json` document with independent implementations (`tests/python/check_json.py`):
/// validates it against `docs/respbench.schema.json` with Python's `jsonschema`, and decodes every
/// histogram with Python's `hdrhistogram` package, whose count and percentiles must be the ones
/// the document reports. Panics with the checker's output when they disagree.
///
/// The interpreter is `$RESPBENCH_PYTHON`, which `scripts/test` points at the virtual environment
/// it makes in `target/pyenv`, else that environment if it exists; without either the check fails
/// and says how to get one.
pub fn check_json_independently(document: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    python_check("check_json.py", &[&root.join("docs/respbench.schema.json"), document])
}

/// A `--json` document: checked with [`check_json_independently`], read, and removed (its
/// text, for the test to parse).
pub fn take_document(path: &Path) -> String {
    check_json_independently(path);
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    text
}

/// Reads an `--hlog` interval log with HdrHistogram's Python `HistogramLogReader` (the `hdrh`
/// package; see [`check_json_independently`] for the interpreter) and gives each tag's summed
/// count and its number of intervals.
pub fn read_hlog_independently(log: &Path) -> Vec<(String, u64, u64)> {
    let out = python_check("check_hlog.py", &[log]);
    out.lines()
        .map(|l| {
            let mut f = l.rsplitn(3, ' ');
            let intervals = f.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{out}"));
            let count = f.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{out}"));
            (f.next().unwrap_or_default().to_string(), count, intervals)
        })
        .collect()
}

/// What HdrHistogram's own `HistogramLogProcessor` (Java, Debian's `libhdrhistogram-java`) makes
/// of an `--hlog` log with its defaults (no `-tag`: the untagged lines; values divided by 10^6,
/// so nanoseconds print as milliseconds), or of the lines tagged `tag`.
#[derive(Clone, Debug, PartialEq)]
pub struct JavaHlog {
    /// The percentile distribution's total count.
    pub count: u64,
    /// The value at the 50th percentile, as it printed it (milliseconds).
    pub p50_ms: f64,
    /// The largest value, as it printed it.
    pub max_ms: f64,
    /// What it printed.
    pub output: String,
}

/// Runs `HistogramLogProcessor -i LOG [-tag TAG]` from the jar at `$RESPBENCH_HDRHISTOGRAM_JAR`,
/// else Debian's `/usr/share/java/hdrhistogram.jar`; fails the test when java or the jar is
/// missing (scripts/ensure-renderers installs them) or when the tool fails.
pub fn read_hlog_with_java(log: &Path, tag: Option<&str>) -> JavaHlog {
    let jar = std::env::var("RESPBENCH_HDRHISTOGRAM_JAR")
        .unwrap_or_else(|_| "/usr/share/java/hdrhistogram.jar".into());
    assert!(
        Path::new(&jar).is_file(),
        "{jar} is missing: install Debian's libhdrhistogram-java and a JRE (scripts/ensure-renderers does)"
    );
    let mut cmd = Command::new("java");
    cmd.args(["-cp", &jar, "org.HdrHistogram.HistogramLogProcessor", "-i"]).arg(log);
    if let Some(t) = tag {
        cmd.args(["-tag", t]);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("java: {e}: install a JRE (default-jre-headless)"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.trim().is_empty(),
        "HistogramLogProcessor failed on {log:?}:\n{text}{err}"
    );
    let fields = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let p50_ms = text
        .lines()
        .map(fields)
        .find(|f| f.len() >= 3 && f[1] == "0.500000000000")
        .and_then(|f| f[0].parse().ok())
        .unwrap_or_else(|| panic!("no 50% line in\n{text}"));
    // #[Max     =        11.14, Total count    =         1997]
    let footer =
        text.lines().find(|l| l.starts_with("#[Max")).unwrap_or_else(|| panic!("no #[Max in\n{text}"));
    let number = |after: &str| -> f64 {
        let rest = &footer[footer.find(after).unwrap_or_else(|| panic!("{footer}")) + after.len()..];
        rest.trim_start_matches([' ', '=']).split([',', ']']).next().unwrap().trim().parse().unwrap()
    };
    JavaHlog { count: number("Total count") as u64, p50_ms, max_ms: number("#[Max"), output: text }
}

/// Java HdrHistogram's own percentile distribution (`outputPercentileDistribution`, as
/// `HistogramLogProcessor -o` writes it to its `.hgrm`) of a histogram of microseconds in
/// milliseconds: `data` (a `--json` histogram's V2 deflate base64) goes into a one-interval log
/// beside `scratch`, which the Java tool reads with
/// `-outputValueUnitRatio 1000`. The lines about the log's time range are left out.
pub fn java_hgrm_of(data: &str, scratch: &Path) -> String {
    let jar = std::env::var("RESPBENCH_HDRHISTOGRAM_JAR")
        .unwrap_or_else(|_| "/usr/share/java/hdrhistogram.jar".into());
    assert!(Path::new(&jar).is_file(), "{jar} is missing: install Debian's libhdrhistogram-java and a JRE");
    let log = scratch.with_extension("hlog");
    std::fs::write(
        &log,
        format!("#[StartTime: 0.000 (seconds since epoch)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n0.000,1.000,0.0,{data}\n"),
    )
    .unwrap();
    let out = Command::new("java")
        .args(["-cp", &jar, "org.HdrHistogram.HistogramLogProcessor", "-outputValueUnitRatio", "1000", "-i"])
        .arg(&log)
        .arg("-o")
        .arg(scratch)
        .output()
        .unwrap_or_else(|e| panic!("java: {e}: install a JRE (default-jre-headless)"));
    assert!(out.status.success(), "HistogramLogProcessor: {}", String::from_utf8_lossy(&out.stderr));
    // The tool appends `.hgrm` to the -o name.
    let hgrm = std::path::PathBuf::from(format!("{}.hgrm", scratch.display()));
    let text = std::fs::read_to_string(&hgrm).unwrap();
    for p in [&log, &hgrm, &scratch.to_path_buf()] {
        let _ = std::fs::remove_file(p);
    }
    text.lines()
        .filter(|l| !l.starts_with("#[Overall") && !l.starts_with("#[StartTime"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Reads a YAML file with PyYAML's safe loader (the `pyyaml` package; see
/// [`check_json_independently`] for the interpreter) and gives its documents as a JSON array.
pub fn yaml_as_json(file: &Path) -> String {
    python_check("yaml_to_json.py", &[file])
}

/// Validates Kubernetes manifests offline and strictly (unknown fields are errors) against the
/// API's schemas, with the `kubernetes-validate` package (see [`check_json_independently`] for
/// the interpreter); fails the test with its findings.
pub fn kubernetes_validate(file: &Path) -> String {
    python_check("validate_kubernetes.py", &[file])
}

/// Runs `tests/python/SCRIPT ARGS` and gives its stdout; fails the test when it exits non-zero.
fn python_check(script: &str, args: &[&Path]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    // scripts/test's environment, when the variable is not set (a bare `cargo nextest run`).
    let made_by_scripts_test = root.join("target/pyenv/bin/python");
    let python = std::env::var_os("RESPBENCH_PYTHON")
        .or_else(|| made_by_scripts_test.is_file().then(|| made_by_scripts_test.into()))
        .unwrap_or_else(|| {
            panic!(
                "RESPBENCH_PYTHON is not set: run the tests with scripts/test, which creates a Python \
             environment with the jsonschema and hdrhistogram packages, or point it at such a python"
            )
        });
    let out = Command::new(&python)
        .arg(root.join("tests/python").join(script))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", Path::new(&python).display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} rejected {:?}:\n{stdout}{}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_line_parses_and_unescapes() {
        let e = parse_monitor_line(
            br#"1700000000.123456 [3 127.0.0.1:5555] "SET" "key:000000000042" "a\"b\\c\x00\n""#,
        )
        .unwrap();
        assert_eq!(e.db, 3);
        assert_eq!(e.client, "127.0.0.1:5555");
        assert_eq!(e.args, vec![b"SET".to_vec(), b"key:000000000042".to_vec(), b"a\"b\\c\0\n".to_vec()]);
        let e = parse_monitor_line(br#"1.0 [0 unix:/tmp/x/redis.sock] "PING""#).unwrap();
        assert_eq!(e.client, "unix:/tmp/x/redis.sock");
        assert!(parse_monitor_line(b"garbage").is_none());
    }

    #[test]
    fn key_shape_replaces_only_12_digit_runs_after_colon() {
        assert_eq!(key_shape(b"key:000000000042"), b"key:<12>");
        assert_eq!(key_shape(b"element:123456789012x:1"), b"element:<12>x:1");
        assert_eq!(key_shape(b"key:1234567890123"), b"key:1234567890123");
        assert_eq!(key_shape(b"000000000042"), b"000000000042");
        assert_eq!(key_shape(b"key:__rand_int__"), b"key:__rand_int__");
    }

    #[test]
    fn output_parsers() {
        let q = "SET: rps=0.0 (overall: -nan) avg_msec=-nan (overall: -nan)\r   \rSET: 19999.98 requests per second, p50=0.215 msec\nMSET (10 keys): 5.00 requests per second, p50=1.000 msec\n\n";
        assert_eq!(
            parse_quiet(q),
            vec![
                QuietLine { title: "SET".into(), rps: 19999.98, p50: 0.215 },
                QuietLine { title: "MSET (10 keys)".into(), rps: 5.0, p50: 1.0 }
            ]
        );
        let csv = "\"test\",\"rps\"\nWARNING: x\n\"SET\",\"1.00\"\n";
        assert_eq!(parse_csv(csv), vec![vec!["test", "rps"], vec!["SET", "1.00"]]);
        let v = "x\r====== SET ======\n  200 requests completed in 0.01 seconds\n  throughput summary: 20000.00 requests per second\n";
        let b = parse_verbose(v);
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].title.as_str(), b[0].requests, b[0].seconds, b[0].rps),
            ("SET", 200, 0.01, Some(20000.0))
        );
    }

    #[test]
    fn command_line_splitting() {
        assert_eq!(
            split_command_line(r#"redis-benchmark -n 1 script load "redis.call('set','foo','bar')""#),
            vec!["redis-benchmark", "-n", "1", "script", "load", "redis.call('set','foo','bar')"]
        );
    }
}
