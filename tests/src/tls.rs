//! TLS for the end-to-end tests: certificates made with the `openssl` command line at test time,
//! `redis-server` with a TLS port next to its plain one, and a listener that reads the server name
//! (SNI) out of a client's ClientHello.
//!
//! Keys are ECDSA P-256: every TLS stack in play (OpenSSL in redis-server, redis-benchmark and
//! redis-cli; rustls with ring in respbench) takes them, and a handshake costs a fraction of an
//! RSA one, which matters to the tests that set up thousands of connections (`-k 0`).

use std::ffi::OsString;
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{mpsc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use crate::RedisServer;

const OPENSSL_MISSING: &str = "openssl not found: install Debian's openssl package (apt-get install openssl)";

/// A certificate and its private key, both PEM files.
#[derive(Clone, Debug)]
pub struct CertKey {
    /// The certificate.
    pub cert: PathBuf,
    /// Its private key (PKCS#8, unencrypted).
    pub key: PathBuf,
}

/// The certificates of the TLS tests, made by [`TlsCerts::make`] in one directory.
#[derive(Clone, Debug)]
pub struct TlsCerts {
    /// Where they are.
    pub dir: PathBuf,
    /// The test CA, which signed every certificate here except `wrong_ca`.
    pub ca: PathBuf,
    /// A directory for `--cacertdir`: a copy of `ca` and its `openssl rehash` link
    /// (`<subject hash>.0`), the layout OpenSSL's directory lookup needs.
    pub ca_dir: PathBuf,
    /// An unrelated, self-signed CA that signed nothing here.
    pub wrong_ca: PathBuf,
    /// A server certificate naming `IP:127.0.0.1` and `DNS:localhost`.
    pub server: CertKey,
    /// A server certificate naming only `DNS:redis.example` (neither the address nor `localhost`).
    pub other_name: CertKey,
    /// A server certificate naming `IP:192.0.2.1` (another address, TEST-NET-1) and
    /// `DNS:localhost`.
    pub other_ip: CertKey,
    /// A server certificate like `server` (same names, same key) valid only on 2020-01-01.
    pub expired: CertKey,
    /// A client certificate (extended key usage `clientAuth`) for `--tls-auth-clients yes`.
    pub client: CertKey,
}

/// Runs `openssl` in `dir`; panics with its stderr when it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let out = match Command::new("openssl").args(args).current_dir(dir).stdin(Stdio::null()).output() {
        Ok(o) => o,
        Err(e) if e.kind() == io::ErrorKind::NotFound => panic!("{OPENSSL_MISSING}"),
        Err(e) => panic!("running openssl: {e}"),
    };
    assert!(
        out.status.success(),
        "openssl {} failed in {}:\n{}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// `openssl req` options for a new unencrypted P-256 key.
const NEW_EC_KEY: [&str; 5] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/// Extensions of a server certificate for `names` (a `subjectAltName` value).
fn server_ext(names: &str) -> String {
    format!(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n\
         subjectAltName={names}\n"
    )
}

/// A minimal `openssl ca` configuration: the only way OpenSSL 3.0 (Debian 12) has to choose a
/// certificate's start date (`x509 -not_before` came in 3.4), which an expired certificate needs.
const CA_CONF: &str = "[ca]\ndefault_ca = test_ca\n[test_ca]\ndatabase = cadb/index.txt\n\
new_certs_dir = cadb\nserial = cadb/serial\ndefault_md = sha256\npolicy = any\n\
[any]\ncommonName = supplied\n";

impl TlsCerts {
    /// Makes a CA, the server, client and wrong-CA certificates and the CA directory in `dir`
    /// (which must exist) with the `openssl` command line. Takes about a third of a second.
    pub fn make(dir: &Path) -> TlsCerts {
        TlsCerts::generate(dir);
        TlsCerts::at(dir)
    }

    /// The certificates every TLS server and cluster of this test binary uses, made once: the
    /// first test to ask makes them under `<target>/tmp` in a directory named after the binary
    /// and its build time, and every later one, in this process or another (nextest runs each
    /// test in a process of its own), reads them from there. Nothing writes to them after that,
    /// and they are valid for ten years, so sharing them changes no test.
    pub fn shared() -> TlsCerts {
        static SHARED: OnceLock<TlsCerts> = OnceLock::new();
        SHARED.get_or_init(TlsCerts::made_once).clone()
    }

    fn made_once() -> TlsCerts {
        let exe = std::env::current_exe().expect("current_exe");
        let built = std::fs::metadata(&exe)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        // <target>/<profile>/deps/<test binary>
        let tmp = exe
            .ancestors()
            .nth(3)
            .map(|target| target.join("tmp"))
            .filter(|t| std::fs::create_dir_all(t).is_ok())
            .unwrap_or_else(std::env::temp_dir);
        let name = exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = tmp.join(format!("respbench-tls-{name}-{built:x}"));
        // Only a complete set is ever renamed into place, so one that is there is whole.
        if !dir.join("made").is_file() {
            let fresh = tmp.join(format!(
                "respbench-tls-{name}-{built:x}.{}.{}",
                std::process::id(),
                crate::UNIQUE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&fresh).unwrap_or_else(|e| panic!("creating {}: {e}", fresh.display()));
            TlsCerts::generate(&fresh);
            write(&fresh.join("made"), "");
            // Another process may have put its set there first: then ours goes.
            if std::fs::rename(&fresh, &dir).is_err() {
                let _ = std::fs::remove_dir_all(&fresh);
            }
            assert!(dir.join("made").is_file(), "no certificates in {}", dir.display());
        }
        TlsCerts::at(&dir)
    }

    /// Makes the files [`TlsCerts::at`] names in `dir`.
    fn generate(dir: &Path) {
        let p = |name: &str| dir.join(name);
        for (name, cn) in [("ca", "respbench test CA"), ("wrong-ca", "respbench wrong CA")] {
            let (key, crt, subj) = (format!("{name}.key"), format!("{name}.crt"), format!("/CN={cn}"));
            openssl(
                dir,
                &[
                    &["req", "-x509"][..],
                    &NEW_EC_KEY,
                    &["-keyout", &key, "-out", &crt, "-days", "3650", "-subj", &subj],
                    &["-addext", "basicConstraints=critical,CA:TRUE"],
                    &["-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                ]
                .concat(),
            );
        }
        let leaves = [
            ("server", "respbench test server", server_ext("IP:127.0.0.1,DNS:localhost")),
            ("other-name", "respbench other-name server", server_ext("DNS:redis.example")),
            ("other-ip", "respbench other-ip server", server_ext("IP:192.0.2.1,DNS:localhost")),
            (
                "client",
                "respbench test client",
                "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
                    .to_string(),
            ),
        ];
        for (name, cn, ext) in &leaves {
            let (key, csr, crt, extfile) =
                (format!("{name}.key"), format!("{name}.csr"), format!("{name}.crt"), format!("{name}.ext"));
            write(&p(&extfile), ext);
            let subj = format!("/CN={cn}");
            openssl(
                dir,
                &[&["req"][..], &NEW_EC_KEY, &["-keyout", &key, "-out", &csr, "-subj", &subj]].concat(),
            );
            openssl(
                dir,
                &[
                    "x509",
                    "-req",
                    "-in",
                    &csr,
                    "-CA",
                    "ca.crt",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    &crt,
                    "-days",
                    "3650",
                    "-extfile",
                    &extfile,
                ],
            );
        }
        // The expired certificate: server.csr again, signed for one day in 2020.
        std::fs::create_dir_all(p("cadb")).expect("creating cadb");
        write(&p("cadb/index.txt"), "");
        write(&p("cadb/serial"), "1000\n");
        write(&p("ca.conf"), CA_CONF);
        openssl(
            dir,
            &[
                "ca",
                "-batch",
                "-notext",
                "-config",
                "ca.conf",
                "-cert",
                "ca.crt",
                "-keyfile",
                "ca.key",
                "-in",
                "server.csr",
                "-out",
                "expired.crt",
                "-startdate",
                "20200101000000Z",
                "-enddate",
                "20200102000000Z",
                "-extfile",
                "server.ext",
            ],
        );
        // --cacertdir: OpenSSL looks certificates up by subject hash, through the links rehash makes.
        let ca_dir = p("cadir");
        std::fs::create_dir_all(&ca_dir).expect("creating cadir");
        std::fs::copy(p("ca.crt"), ca_dir.join("ca.crt")).expect("copying ca.crt");
        openssl(dir, &["rehash", "cadir"]);
        let linked = std::fs::read_dir(&ca_dir)
            .expect("reading cadir")
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().ends_with(".0"));
        assert!(linked, "openssl rehash made no <hash>.0 link in {}", ca_dir.display());
    }

    /// The certificates [`TlsCerts::generate`] made in `dir`.
    fn at(dir: &Path) -> TlsCerts {
        let p = |name: &str| dir.join(name);
        let ca_dir = p("cadir");
        let pair = |cert: &str, key: &str| CertKey { cert: p(cert), key: p(key) };
        TlsCerts {
            dir: dir.to_path_buf(),
            ca: p("ca.crt"),
            ca_dir,
            wrong_ca: p("wrong-ca.crt"),
            server: pair("server.crt", "server.key"),
            other_name: pair("other-name.crt", "other-name.key"),
            other_ip: pair("other-ip.crt", "other-ip.key"),
            expired: pair("expired.crt", "server.key"),
            client: pair("client.crt", "client.key"),
        }
    }
}

/// Which certificate a TLS server presents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerCert {
    /// [`TlsCerts::server`]: names 127.0.0.1 and localhost.
    #[default]
    Good,
    /// [`TlsCerts::other_name`]: names neither.
    OtherName,
    /// [`TlsCerts::other_ip`]: names another address, and localhost.
    OtherIp,
    /// [`TlsCerts::expired`].
    Expired,
}

/// How [`RedisServer::start_tls`] configures the TLS port.
#[derive(Clone, Copy, Debug, Default)]
pub struct TlsOptions {
    /// The certificate the server presents.
    pub cert: ServerCert,
    /// `--tls-auth-clients yes`: a client must present a certificate signed by the test CA.
    pub auth_clients: bool,
}

/// What [`RedisServer::launch`] needs to add a TLS port.
pub(crate) struct TlsSetup {
    pub(crate) certs: TlsCerts,
    options: TlsOptions,
}

/// A running server's TLS port and certificates.
pub(crate) struct TlsListener {
    port: u16,
    pub(crate) certs: TlsCerts,
}

impl TlsSetup {
    fn server_pair(&self) -> &CertKey {
        match self.options.cert {
            ServerCert::Good => &self.certs.server,
            ServerCert::OtherName => &self.certs.other_name,
            ServerCert::OtherIp => &self.certs.other_ip,
            ServerCert::Expired => &self.certs.expired,
        }
    }

    /// redis-server's TLS options.
    pub(crate) fn server_args(&self, tls_port: u16) -> Vec<OsString> {
        let pair = self.server_pair();
        let auth = if self.options.auth_clients { "yes" } else { "no" };
        vec![
            "--tls-port".into(),
            tls_port.to_string().into(),
            "--tls-cert-file".into(),
            pair.cert.clone().into(),
            "--tls-key-file".into(),
            pair.key.clone().into(),
            "--tls-ca-cert-file".into(),
            self.certs.ca.clone().into(),
            "--tls-auth-clients".into(),
            auth.into(),
        ]
    }

    /// Waits until `redis-cli --tls` gets PONG from the TLS port. The chain is verified unless
    /// the server's certificate is the expired one; a client certificate is always offered.
    pub(crate) fn wait_ready(&self, tls_port: u16, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut cmd = Command::new("redis-cli");
            cmd.args(["--tls", "-h", "127.0.0.1", "-p", &tls_port.to_string()]);
            if self.options.cert == ServerCert::Expired {
                cmd.arg("--insecure");
            } else {
                cmd.arg("--cacert").arg(&self.certs.ca);
            }
            cmd.arg("--cert").arg(&self.certs.client.cert).arg("--key").arg(&self.certs.client.key);
            let out = output_within(cmd.arg("PING"), Duration::from_secs(5))?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            if out.status.success() && stdout.trim() == "PONG" {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "redis-cli --tls PING: {}; stdout {stdout:?}; stderr {:?}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn into_listener(self, port: u16) -> TlsListener {
        TlsListener { port, certs: self.certs }
    }
}

/// Runs `cmd` to completion, killing it after `timeout`.
fn output_within(cmd: &mut Command, timeout: Duration) -> Result<Output, String> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(
        |e| match e.kind() {
            io::ErrorKind::NotFound => crate::REDIS_CLI_MISSING.to_string(),
            _ => format!("spawning {cmd:?}: {e}"),
        },
    )?;
    let deadline = Instant::now() + timeout;
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{cmd:?} did not finish within {timeout:?}"));
        }
        thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().map_err(|e| e.to_string())
}

impl RedisServer {
    /// Starts a server with a plain port (for [`RedisServer::cli`] and `INFO`) and a TLS port
    /// ([`RedisServer::tls_port`]) configured by `options`, with the test binary's certificates
    /// ([`RedisServer::certs`], [`TlsCerts::shared`]).
    pub fn start_tls(options: TlsOptions) -> RedisServer {
        RedisServer::start_tls_with(options, &[])
    }

    /// [`RedisServer::start_tls`] with extra configuration, as in [`RedisServer::start_with`]
    /// (`[("tls-protocols", "TLSv1.3")]`, say).
    pub fn start_tls_with(options: TlsOptions, config: &[(&str, &str)]) -> RedisServer {
        RedisServer::launch(config, Some(TlsSetup { certs: TlsCerts::shared(), options }))
    }

    /// The TLS port on 127.0.0.1; panics unless started by [`RedisServer::start_tls`].
    pub fn tls_port(&self) -> u16 {
        self.tls_listener().port
    }

    /// The certificates of a server started by [`RedisServer::start_tls`].
    pub fn certs(&self) -> &TlsCerts {
        &self.tls_listener().certs
    }

    fn tls_listener(&self) -> &TlsListener {
        self.tls.as_ref().expect("not a TLS server: start it with RedisServer::start_tls")
    }
}

/// A listener on a free loopback port that reads the ClientHello of the first TLS client to
/// connect, then closes the connection: it shows what a client puts in the clear, such as the
/// server name (SNI), which a real server does not report.
///
/// It listens on 127.0.0.1 and, on the same port when it can, on ::1, so `-h localhost` reaches
/// it whichever address the name resolves to first.
pub struct HelloCapture {
    port: u16,
    hello: mpsc::Receiver<Result<Vec<u8>, String>>,
}

impl HelloCapture {
    /// Starts listening; gives up after 30 s without a client.
    pub fn start() -> HelloCapture {
        let v4 = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
        let port = v4.local_addr().expect("local_addr").port();
        let mut listeners = vec![v4];
        listeners.extend(TcpListener::bind(("::1", port)).ok());
        for l in &listeners {
            l.set_nonblocking(true).expect("nonblocking listener");
        }
        let (tx, hello) = mpsc::channel();
        thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                for l in &listeners {
                    if let Ok((s, _)) = l.accept() {
                        let _ = tx.send(read_client_hello(s));
                        return;
                    }
                }
                thread::sleep(Duration::from_millis(5));
            }
        });
        HelloCapture { port, hello }
    }

    /// The port, on 127.0.0.1 (and ::1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The first client's ClientHello handshake message (type, length and body, without the
    /// record layer), or why it could not be read; `None` when no client has connected within
    /// `wait`.
    pub fn client_hello(&self, wait: Duration) -> Option<Result<Vec<u8>, String>> {
        self.hello.recv_timeout(wait).ok()
    }
}

/// Reads TLS records from `s` until they hold a whole first handshake message, and returns it.
fn read_client_hello(mut s: TcpStream) -> Result<Vec<u8>, String> {
    s.set_nonblocking(false).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
    let mut message = Vec::new();
    loop {
        let mut header = [0u8; 5];
        s.read_exact(&mut header).map_err(|e| format!("reading a TLS record header: {e}"))?;
        if header[0] != 22 {
            return Err(format!("not a TLS handshake record: it starts with {:02x?}", header));
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let mut fragment = vec![0u8; len];
        s.read_exact(&mut fragment).map_err(|e| format!("reading a TLS record: {e}"))?;
        message.extend_from_slice(&fragment);
        if message.len() >= 4 {
            let want =
                4 + (usize::from(message[1]) << 16 | usize::from(message[2]) << 8 | usize::from(message[3]));
            if message.len() >= want {
                message.truncate(want);
                return Ok(message);
            }
        }
    }
}

/// The host name in a ClientHello's `server_name` extension, `None` without one.
pub fn client_hello_sni(hello: &[u8]) -> Result<Option<String>, String> {
    struct Cursor<'a>(&'a [u8]);
    impl<'a> Cursor<'a> {
        fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
            if self.0.len() < n {
                return Err(format!("ClientHello truncated: {n} bytes wanted, {} left", self.0.len()));
            }
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            Ok(head)
        }
        fn u8(&mut self) -> Result<usize, String> {
            Ok(usize::from(self.take(1)?[0]))
        }
        fn u16(&mut self) -> Result<usize, String> {
            let b = self.take(2)?;
            Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
        }
        fn u24(&mut self) -> Result<usize, String> {
            let b = self.take(3)?;
            Ok(usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]))
        }
    }
    let mut c = Cursor(hello);
    if c.u8()? != 1 {
        return Err(format!("not a ClientHello: handshake type {}", hello[0]));
    }
    let len = c.u24()?;
    let mut body = Cursor(c.take(len)?);
    body.take(2 + 32)?; // legacy_version, random
    let n = body.u8()?;
    body.take(n)?; // legacy_session_id
    let n = body.u16()?;
    body.take(n)?; // cipher_suites
    let n = body.u8()?;
    body.take(n)?; // legacy_compression_methods
    if body.0.is_empty() {
        return Ok(None);
    }
    let n = body.u16()?;
    let mut extensions = Cursor(body.take(n)?);
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let n = extensions.u16()?;
        let mut data = Cursor(extensions.take(n)?);
        if kind != 0 {
            continue;
        }
        let n = data.u16()?;
        let mut names = Cursor(data.take(n)?);
        while !names.0.is_empty() {
            let name_type = names.u8()?;
            let n = names.u16()?;
            let name = names.take(n)?;
            if name_type == 0 {
                return Ok(Some(String::from_utf8_lossy(name).into_owned()));
            }
        }
        return Ok(None);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unique_tmpdir;

    /// A ClientHello body with `extensions` (type, data) appended, as a handshake message.
    fn hello_with(extensions: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.extend([0]); // no session id
        body.extend([0, 2, 0x13, 0x01]); // one cipher suite
        body.extend([1, 0]); // null compression
        let mut ext = Vec::new();
        for (kind, data) in extensions {
            ext.extend(kind.to_be_bytes());
            ext.extend((data.len() as u16).to_be_bytes());
            ext.extend(data);
        }
        body.extend((ext.len() as u16).to_be_bytes());
        body.extend(ext);
        let mut msg = vec![1];
        msg.extend(&(body.len() as u32).to_be_bytes()[1..]);
        msg.extend(body);
        msg
    }

    fn sni_extension(name: &str) -> (u16, Vec<u8>) {
        let mut entry = vec![0];
        entry.extend((name.len() as u16).to_be_bytes());
        entry.extend(name.as_bytes());
        let mut data = (entry.len() as u16).to_be_bytes().to_vec();
        data.extend(entry);
        (0, data)
    }

    #[test]
    fn sni_is_read_from_a_client_hello() {
        let with = hello_with(&[(10, vec![0, 2, 0, 29]), sni_extension("redis.example")]);
        assert_eq!(client_hello_sni(&with), Ok(Some("redis.example".to_string())));
        let without = hello_with(&[(10, vec![0, 2, 0, 29])]);
        assert_eq!(client_hello_sni(&without), Ok(None));
        for cut in 1..with.len() {
            assert!(client_hello_sni(&with[..cut]).is_err(), "a prefix of {cut} bytes parsed");
        }
        assert!(client_hello_sni(b"*1\r\n$4\r\nPING\r\n").is_err());
    }

    /// The certificates are what the tests take them for, as OpenSSL sees them.
    #[test]
    fn certificates_verify_as_intended() {
        let dir = unique_tmpdir("rbtlscerts");
        let certs = TlsCerts::make(&dir);
        // (success, stdout and stderr)
        let verify = |ca_option: &str, ca: &Path, purpose: &str, cert: &Path| {
            let out = Command::new("openssl")
                .arg("verify")
                .arg(ca_option)
                .arg(ca)
                .args(["-purpose", purpose])
                .arg(cert)
                .output()
                .expect("running openssl verify");
            let text =
                format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            (out.status.success(), text)
        };
        for (cert, purpose) in
            [(&certs.server, "sslserver"), (&certs.other_name, "sslserver"), (&certs.client, "sslclient")]
        {
            let (ok, text) = verify("-CAfile", &certs.ca, purpose, &cert.cert);
            assert!(ok, "{}: {text}", cert.cert.display());
        }
        // -CApath finds the CA only through the hash link.
        let (ok, text) = verify("-CApath", &certs.ca_dir, "sslserver", &certs.server.cert);
        assert!(ok, "-CApath: {text}");
        let (ok, text) = verify("-CAfile", &certs.ca, "sslserver", &certs.expired.cert);
        assert!(!ok && text.contains("certificate has expired"), "{text}");
        let (ok, text) = verify("-CAfile", &certs.wrong_ca, "sslserver", &certs.server.cert);
        assert!(!ok && text.contains("unable to get local issuer certificate"), "{text}");
        // Names: only `server` (and `expired`) name the loopback address.
        for (cert, names) in [
            (&certs.server.cert, "IP Address:127.0.0.1, DNS:localhost"),
            (&certs.expired.cert, "IP Address:127.0.0.1, DNS:localhost"),
            (&certs.other_name.cert, "DNS:redis.example"),
        ] {
            let out = Command::new("openssl")
                .args(["x509", "-noout", "-ext", "subjectAltName", "-in"])
                .arg(cert)
                .output()
                .expect("running openssl x509");
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(text.lines().nth(1).map(str::trim), Some(names), "{}", cert.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
