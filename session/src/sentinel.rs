//! `--sentinel HOST:PORT[,…] --sentinel-master NAME`: the primary is asked of a Sentinel
//! (`SENTINEL GET-MASTER-ADDR-BY-NAME`) before the run, and again each time a connection comes
//! back after a failure (`--reconnect`), so a failover is followed as production clients follow
//! it; a change of primary is kept as an address change of the test
//! ([`respbench_core::stats::Readdress`]), named after the master. With `--tls` the Sentinels
//! are spoken to over TLS too, with the run's settings (each checked for its own address).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use respbench_core::cluster::Route;
use respbench_core::resp::{encode_command, Value};
use respbench_core::template::Template;
use respbench_core::Endpoint;

/// A connection to a Sentinel: a socket, or TLS over one.
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// `--tls`: how a socket to a Sentinel becomes a TLS one (the session's handshake with the run's
/// settings, the Sentinel checked for its own address); its error is the handshake's message.
#[derive(Clone)]
pub struct Secure(pub Arc<Handshake>);

/// [`Secure`]'s handshake: the socket and the Sentinel's address in, the stream out.
pub type Handshake = dyn Fn(TcpStream, &Endpoint) -> Result<Box<dyn Stream>, String> + Send + Sync;

impl std::fmt::Debug for Secure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secure")
    }
}

/// How long one Sentinel may take to connect and to answer.
const WAIT: Duration = Duration::from_secs(1);
/// The most bytes of a Sentinel's reply read: an address is tens of bytes.
const REPLY_MAX: usize = 4096;
/// The most bytes of a `SENTINEL REPLICAS` reply read: about 1 KB a replica.
const REPLICAS_MAX: usize = 1 << 20;

/// The Sentinels' own user and password (`--sentinel-user`, `--sentinel-password`: Jedis'
/// `sentinelUser`/`sentinelPassword`, sentinel.conf's `sentinel sentinel-user`/`sentinel-pass`),
/// apart from the data nodes' `-a` and `--user`.
#[derive(Clone, PartialEq, Eq)]
pub struct Auth {
    /// The ACL user (`AUTH user password`), or none (`AUTH password`).
    pub user: Option<String>,
    /// The password.
    pub password: String,
}

impl std::fmt::Debug for Auth {
    /// The user only: the password stays out of debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth").field("user", &self.user).finish_non_exhaustive()
    }
}

/// Where the Sentinels are and which master to ask for.
#[derive(Clone, Debug)]
pub struct Sentinel {
    /// The Sentinels, asked in turn until one answers.
    pub sentinels: Vec<Endpoint>,
    /// The master's name in their configuration.
    pub master: String,
    /// How to authenticate to the Sentinels, when they ask for it.
    pub auth: Option<Auth>,
    /// `--tls`: the Sentinels are reached over TLS too, with the run's settings (set by the
    /// session once it has made them).
    pub tls: Option<Secure>,
    /// The `+switch-master`s of the master heard so far (a thread subscribed on a Sentinel,
    /// started with the first test).
    pub moves: Arc<AtomicU64>,
    /// The primary as last heard or asked (`+switch-master`'s new address, or a connection's
    /// answer over several nodes): a change bumps [`Sentinel::moves`] once.
    known: Arc<Mutex<Option<Endpoint>>>,
    /// Of [`Sentinel::moves`], those heard as `+switch-master` (the others a connection found).
    switches: Arc<AtomicU64>,
    watching: Arc<Once>,
}

impl Sentinel {
    /// Asks the `sentinels` for `master`.
    pub fn new(sentinels: Vec<Endpoint>, master: String) -> Sentinel {
        Sentinel {
            sentinels,
            master,
            auth: None,
            tls: None,
            moves: Arc::default(),
            known: Arc::default(),
            switches: Arc::default(),
            watching: Arc::new(Once::new()),
        }
    }
}

impl Sentinel {
    /// Where a connection that comes back after a failure goes: the primary asked again, and
    /// with `replicas` (`--rfr` over several nodes) the replicas listed again too, a primary
    /// found elsewhere than [`Sentinel::known`] said being a move (every connection follows,
    /// the replicas' too). The first call starts the thread that listens for the master's
    /// `+switch-master`.
    pub fn locate(&self, replicas: bool) -> respbench_driver::Locate {
        self.watching.call_once(|| {
            let me = self.clone();
            let _ = std::thread::Builder::new().name("sentinel".into()).spawn(move || me.watch());
        });
        let me = self.clone();
        let find: Arc<dyn Fn() -> Option<Endpoint> + Send + Sync> = match replicas {
            false => Arc::new(move || me.primary().ok()),
            true => Arc::new(move || me.primary().ok().inspect(|p| me.heard(p.clone()))),
        };
        let me = self.clone();
        respbench_driver::Locate {
            name: format!("{} (Sentinel)", self.master),
            find,
            moves: Arc::clone(&self.moves),
            switches: Arc::clone(&self.switches),
            replicas: replicas.then(|| {
                Arc::new(move || {
                    // The primary is no replica, whatever a list not yet brought up to date says.
                    let primary = me.known.lock().ok().and_then(|k| k.clone());
                    let mut listed = me.replicas().ok()?;
                    listed.retain(|r| Some(r) != primary.as_ref());
                    Some(listed)
                }) as Arc<dyn Fn() -> Option<Vec<Endpoint>> + Send + Sync>
            }),
        }
    }

    /// The primary is at `at` (the run's start, a `+switch-master`, a connection's answer): a
    /// change from the one known bumps [`Sentinel::moves`] (not the first).
    pub fn heard(&self, at: Endpoint) {
        self.heard_by(at, false);
    }

    /// [`Sentinel::heard`], from a `+switch-master` when `switch` (counted in
    /// [`Sentinel::switches`] first, so that a loop that sees the move sees how it came).
    fn heard_by(&self, at: Endpoint, switch: bool) {
        let Ok(mut known) = self.known.lock() else { return };
        if known.as_ref() != Some(&at) && known.replace(at).is_some() {
            if switch {
                self.switches.fetch_add(1, Ordering::Relaxed);
            }
            self.moves.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Listens for `+switch-master` on the Sentinels in turn, for the life of the process:
    /// each of this master's bumps [`Sentinel::moves`].
    fn watch(&self) {
        loop {
            for s in &self.sentinels {
                let _ = self.listen(s);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Subscribes on the Sentinel at `at` and counts the master's switches until the
    /// connection ends.
    fn listen(&self, at: &Endpoint) -> Result<(), SentinelError> {
        let (mut s, tcp) = self.connect_socket(at)?;
        // Nothing may come for long: the read waits (the process ends the thread).
        tcp.set_read_timeout(None)?;
        let mut out = Vec::new();
        encode_command(&[b"SUBSCRIBE", b"+switch-master"], &mut out);
        s.write_all(&out)?;
        let mut buf = Vec::new();
        loop {
            while let Some((v, used)) =
                Value::parse(&buf).map_err(|e| SentinelError::Bad(format!("{e:?}")))?
            {
                buf.drain(..used);
                // ["message", "+switch-master", "<name> <old ip> <old port> <new ip> <new port>"]
                if let Value::Array(a) = v {
                    if let [Value::Bulk(kind), _, Value::Bulk(text)] = a.as_slice() {
                        let words: Vec<&[u8]> = text.split(|&b| b == b' ').collect();
                        if kind == b"message" && words.first() == Some(&self.master.as_bytes()) {
                            match switched_to(&words) {
                                // Once, whether heard here first or found by a connection.
                                Some(to) if self.known.lock().is_ok_and(|k| k.is_some()) => {
                                    self.heard_by(to, true);
                                }
                                _ => {
                                    self.switches.fetch_add(1, Ordering::Relaxed);
                                    self.moves.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    }
                }
            }
            read_more(&mut s, &mut buf, REPLY_MAX)?;
        }
    }

    /// The primary as the first Sentinel that answers says; the error says what each said.
    pub fn primary(&self) -> Result<Endpoint, SentinelError> {
        let mut why = Vec::new();
        for s in &self.sentinels {
            match self.ask(s) {
                Ok(e) => return Ok(e),
                Err(e) => why.push(format!("{s}: {e}")),
            }
        }
        Err(SentinelError::NoPrimary { master: self.master.clone(), why: why.join("; ") })
    }

    /// `--rfr`: the master's replicas as the first Sentinel that answers lists them
    /// (`SENTINEL REPLICAS`), those it holds down or disconnected left out.
    pub fn replicas(&self) -> Result<Vec<Endpoint>, SentinelError> {
        let mut why = Vec::new();
        for at in &self.sentinels {
            let asked = self.connect(at).and_then(|mut s| {
                let args: [&[u8]; 3] = [b"SENTINEL", b"REPLICAS", self.master.as_bytes()];
                replicas(call_within(&mut s, &args, REPLICAS_MAX)?)
            });
            match asked {
                Ok(r) => return Ok(r),
                Err(e) => why.push(format!("{at}: {e}")),
            }
        }
        Err(SentinelError::NoPrimary { master: self.master.clone(), why: why.join("; ") })
    }

    /// Asks the Sentinel at `at` for the master's address.
    fn ask(&self, at: &Endpoint) -> Result<Endpoint, SentinelError> {
        let mut s = self.connect(at)?;
        address(call(&mut s, &[b"SENTINEL", b"GET-MASTER-ADDR-BY-NAME", self.master.as_bytes()])?)
    }

    /// A connection to the Sentinel at `at`, authenticated when [`Sentinel::auth`] says so.
    fn connect(&self, at: &Endpoint) -> Result<Box<dyn Stream>, SentinelError> {
        Ok(self.connect_socket(at)?.0)
    }

    /// [`Sentinel::connect`], and its socket, whose timeouts the caller may change.
    fn connect_socket(&self, at: &Endpoint) -> Result<(Box<dyn Stream>, TcpStream), SentinelError> {
        let tcp = connect(at)?;
        let socket = tcp.try_clone()?;
        let mut s = match &self.tls {
            None => Box::new(tcp) as Box<dyn Stream>,
            Some(secure) => (secure.0)(tcp, at).map_err(SentinelError::Bad)?,
        };
        if let Some(a) = &self.auth {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            args.extend(a.user.as_deref().map(str::as_bytes));
            args.push(a.password.as_bytes());
            match call(&mut s, &args)? {
                Value::Error(e) | Value::BulkError(e) => {
                    return Err(SentinelError::Bad(format!("AUTH: {}", String::from_utf8_lossy(&e))))
                }
                _ => {}
            }
        }
        Ok((s, socket))
    }
}

/// `--sentinel` with `--reconnect` against the primary alone: which of the test's commands
/// (`templates`, in the plan's order) a request in flight at a move is sent again for, once its
/// connection is back ([`respbench_core::Plan::resend`], [`Route::repeatable`]). Always `Some`:
/// a request a replica refused (`READONLY`, `MASTERDOWN`) goes again whatever its command.
pub(crate) fn resend(templates: &[&Template]) -> Option<Arc<[bool]>> {
    let each: Arc<[bool]> = templates
        .iter()
        .map(|t| {
            let Some((_, argc)) = Route::command_of(t.as_bytes()) else { return false };
            let args: Vec<&[u8]> = (0..argc).filter_map(|i| t.arg(i)).collect();
            args.first().is_some_and(|name| Route::repeatable(name, &args))
        })
        .collect();
    // Always, even with no command safe to repeat: a request a replica refused goes again.
    Some(each)
}

/// The new address in a `+switch-master` message's words (`<name> <old ip> <old port> <new ip>
/// <new port>`).
fn switched_to(words: &[&[u8]]) -> Option<Endpoint> {
    let [_, _, _, ip, port] = words else { return None };
    let host = std::str::from_utf8(ip).ok()?.to_string();
    let port = std::str::from_utf8(port).ok()?.parse().ok()?;
    Some(Endpoint::Tcp { host, port })
}

/// Sends `args` on `s` and reads the one reply, of at most [`REPLY_MAX`] bytes.
fn call(s: &mut dyn Stream, args: &[&[u8]]) -> Result<Value, SentinelError> {
    call_within(s, args, REPLY_MAX)
}

/// [`call`] for a reply of at most `max` bytes.
fn call_within(s: &mut dyn Stream, args: &[&[u8]], max: usize) -> Result<Value, SentinelError> {
    let mut out = Vec::new();
    encode_command(args, &mut out);
    s.write_all(&out)?;
    let mut buf = Vec::new();
    loop {
        if let Some((v, _)) = Value::parse(&buf).map_err(|e| SentinelError::Bad(format!("{e:?}")))? {
            return Ok(v);
        }
        read_more(s, &mut buf, max)?;
    }
}

/// The replicas in a `SENTINEL REPLICAS` reply (an array of flat field lists: `ip`, `port`,
/// `flags`, …), without those whose flags say down or disconnected.
fn replicas(v: Value) -> Result<Vec<Endpoint>, SentinelError> {
    let bad = |why: &str| SentinelError::Bad(why.to_string());
    let Value::Array(list) = v else {
        return match v {
            Value::Error(e) | Value::BulkError(e) => {
                Err(SentinelError::Bad(String::from_utf8_lossy(&e).into()))
            }
            _ => Err(bad("a SENTINEL REPLICAS reply that is not a list")),
        };
    };
    let mut out = Vec::new();
    for r in list {
        let Value::Array(fields) = r else { return Err(bad("a replica that is not a list of fields")) };
        let field = |name: &[u8]| {
            fields.chunks(2).find_map(|kv| match kv {
                [Value::Bulk(k), Value::Bulk(v)] if k == name => std::str::from_utf8(v).ok(),
                _ => None,
            })
        };
        let down = field(b"flags")
            .is_none_or(|f| f.split(',').any(|f| matches!(f, "s_down" | "o_down" | "disconnected")));
        let host = field(b"ip").ok_or_else(|| bad("a replica without its ip"))?;
        let port = field(b"port").and_then(|p| p.parse::<u16>().ok()).ok_or_else(|| bad("a bad port"))?;
        if !down {
            out.push(Endpoint::Tcp { host: host.to_string(), port });
        }
    }
    Ok(out)
}

/// Reads what the Sentinel sent next onto `buf`, which holds at most `max` bytes of a reply or
/// message not yet whole.
fn read_more(s: &mut dyn Stream, buf: &mut Vec<u8>, max: usize) -> Result<(), SentinelError> {
    if buf.len() >= max {
        return Err(SentinelError::Bad(format!("a reply longer than {max} bytes")));
    }
    let mut chunk = [0u8; 512];
    let n = s.read(&mut chunk)?;
    if n == 0 {
        return Err(SentinelError::Closed);
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// A connection to the Sentinel at `at`, its reads and writes bounded by [`WAIT`].
fn connect(at: &Endpoint) -> Result<TcpStream, SentinelError> {
    let bad = |why: &str| SentinelError::Bad(why.to_string());
    let Endpoint::Tcp { host, port } = at else { return Err(bad("not a TCP address")) };
    let addr = (host.as_str(), *port).to_socket_addrs()?.next().ok_or_else(|| bad("no address"))?;
    let s = TcpStream::connect_timeout(&addr, WAIT)?;
    s.set_read_timeout(Some(WAIT)).and_then(|_| s.set_write_timeout(Some(WAIT)))?;
    Ok(s)
}

/// The address in a `GET-MASTER-ADDR-BY-NAME` reply: `[host, port]`.
fn address(v: Value) -> Result<Endpoint, SentinelError> {
    let bad = |why: &str| SentinelError::Bad(why.to_string());
    match v {
        Value::Array(a) => match a.as_slice() {
            [Value::Bulk(h), Value::Bulk(p)] => {
                let host = String::from_utf8(h.clone()).map_err(|_| bad("a host that is not UTF-8"))?;
                let port = std::str::from_utf8(p)
                    .ok()
                    .and_then(|p| p.parse::<u16>().ok())
                    .ok_or_else(|| bad("a bad port"))?;
                Ok(Endpoint::Tcp { host, port })
            }
            _ => Err(bad("a reply that is not [host, port]")),
        },
        Value::Null => Err(bad("no such master")),
        Value::Error(e) | Value::BulkError(e) => {
            Err(SentinelError::Bad(String::from_utf8_lossy(&e).into_owned()))
        }
        _ => Err(bad("a reply that is not [host, port]")),
    }
}

/// Why a Sentinel did not name the primary, or a subscription to it ended. Its words are the
/// ones the run prints after the Sentinel's address.
#[derive(Debug)]
#[non_exhaustive]
pub enum SentinelError {
    /// Reaching it, writing or reading failed.
    Io(std::io::Error),
    /// What it sent, or where it is, was not what a Sentinel's address and replies are.
    Bad(String),
    /// It closed the connection.
    Closed,
    /// No Sentinel named the primary of `master`: `why` says what each one said.
    NoPrimary {
        /// The `--sentinel-master` name.
        master: String,
        /// Each Sentinel's address and reason.
        why: String,
    },
}

impl std::fmt::Display for SentinelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SentinelError::Io(e) => write!(f, "{e}"),
            SentinelError::Bad(why) => f.write_str(why),
            SentinelError::Closed => f.write_str("closed the connection"),
            SentinelError::NoPrimary { master, why } => {
                write!(f, "no Sentinel named the primary of '{master}': {why}")
            }
        }
    }
}

impl std::error::Error for SentinelError {}

impl From<std::io::Error> for SentinelError {
    fn from(e: std::io::Error) -> Self {
        SentinelError::Io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_replies() {
        let b = |s: &str| Value::Bulk(s.as_bytes().to_vec());
        let one = |ip: &str, port: &str, flags: &str| {
            Value::Array(vec![b("name"), b("x"), b("ip"), b(ip), b("port"), b(port), b("flags"), b(flags)])
        };
        let list = Value::Array(vec![
            one("10.0.0.2", "6380", "slave"),
            one("10.0.0.3", "6381", "s_down,slave"),
            one("10.0.0.4", "6382", "slave,disconnected"),
        ]);
        assert_eq!(replicas(list).unwrap(), vec![Endpoint::Tcp { host: "10.0.0.2".into(), port: 6380 }]);
        assert!(replicas(Value::Array(vec![one("h", "x", "slave")])).is_err());
        assert!(replicas(Value::Array(vec![b("h")])).is_err());
        assert!(replicas(Value::Error(b"ERR No such master with that name".to_vec())).is_err());
        assert_eq!(replicas(Value::Array(vec![])).unwrap(), vec![]);
    }

    #[test]
    fn sentinel_urls() {
        let tcp = |h: &str, port| Endpoint::Tcp { host: h.into(), port };
        let u = crate::syntax::uri("redis+sentinel://bench:pw@10.0.0.1:26379,h:26380/mymaster/3").unwrap();
        assert_eq!(u.sentinel, Some((vec![tcp("10.0.0.1", 26379), tcp("h", 26380)], "mymaster".into())));
        assert_eq!((u.user.as_deref(), u.password.as_deref(), u.db), (Some("bench"), Some("pw"), Some(3)));
        assert_eq!((u.endpoint, u.secure), (None, false));
        let u = crate::syntax::uri("rediss+sentinel://[::1]:5000/m%20n").unwrap();
        assert_eq!(u.sentinel, Some((vec![tcp("::1", 5000)], "m n".into())));
        assert!(u.secure && u.password.is_none() && u.db.is_none());
        let u = crate::syntax::uri("redis+sentinel://h,[::1],h2:7/m").unwrap();
        assert_eq!(u.sentinel.unwrap().0, vec![tcp("h", 26379), tcp("::1", 26379), tcp("h2", 7)]);
        for bad in [
            "redis+sentinel://h:1",
            "redis+sentinel://h:1/",
            "redis+sentinel://h:x/m",
            "redis+sentinel://h:1/m/x",
        ] {
            assert!(crate::syntax::uri(bad).is_err(), "{bad}");
        }
        let url = Some((vec![tcp("h", 1)], "m".to_string()));
        assert!(crate::syntax::sentinel(Some("h:2"), None, url.clone(), (None, None)).is_err());
        assert_eq!(crate::syntax::sentinel(None, None, url, (None, None)).unwrap().unwrap().master, "m");
    }

    #[test]
    fn options_and_replies() {
        let parse = |l, m| crate::syntax::sentinel(l, m, None, (None, None));
        let s = parse(Some("127.0.0.1:26379,h:1"), Some("mymaster")).unwrap().unwrap();
        assert_eq!(s.sentinels.len(), 2);
        assert!(parse(Some("x"), Some("m")).is_err());
        assert!(parse(Some("h:1"), None).is_err());
        assert!(parse(None, Some("m")).is_err());
        assert!(parse(Some("h:1"), Some("a b")).is_err());
        assert!(parse(None, None).unwrap().is_none());
        // The Sentinels' own credentials, kept out of debug output.
        let pw = |u: Option<&str>, p: Option<&str>| (u.map(String::from), p.map(String::from));
        let with = |auth| crate::syntax::sentinel(Some("h:1"), Some("m"), None, auth);
        let a = with(pw(Some("sentinel"), Some("s3cret"))).unwrap().unwrap().auth.unwrap();
        assert_eq!((a.user.as_deref(), a.password.as_str()), (Some("sentinel"), "s3cret"));
        assert!(!format!("{a:?}").contains("s3cret"));
        assert!(with(pw(Some("u"), None)).is_err());
        assert!(crate::syntax::sentinel(None, None, None, pw(None, Some("p"))).is_err());
        let ok = Value::Array(vec![Value::Bulk(b"10.0.0.1".to_vec()), Value::Bulk(b"6380".to_vec())]);
        assert_eq!(address(ok).unwrap(), Endpoint::Tcp { host: "10.0.0.1".into(), port: 6380 });
        assert_eq!(address(Value::Null).unwrap_err().to_string(), "no such master");
        assert!(address(Value::Array(vec![Value::Bulk(b"h".to_vec()), Value::Bulk(b"x".to_vec())])).is_err());
        assert!(address(Value::Error(b"ERR no".to_vec())).is_err());
    }
}
