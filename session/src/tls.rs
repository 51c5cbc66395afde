//! The TLS options made into the rustls client configuration every connection of a run shares
//! (feature `tls`), with redis-benchmark's meanings:
//!
//! - the server's certificate chain is verified against `--cacert`/`--cacertdir`, else the
//!   system's roots (OpenSSL's `SSL_VERIFY_PEER`, as redis-benchmark sets it up); `--insecure`
//!   accepts any certificate;
//! - unlike redis-benchmark, which checks no name (it never calls `SSL_set1_host`), the
//!   certificate must match the name the server was given by, `--sni NAME` or `-h NAME`, as
//!   every TLS client checks it; a server reached by IP address must be named by one of the
//!   certificate's IP addresses (subjectAltName), where it has any. A certificate with no IP
//!   address reached by IP, or a Unix socket without `--sni`, has nothing to match: its name is
//!   not checked (what `name_unchecked` says, which the session notes in the verbose report
//!   and the JSON);
//! - SNI is sent only with `--sni`;
//! - `--tls-ciphers` (TLS 1.2) is an OpenSSL cipher-list string evaluated over the suites rustls
//!   has (exact names, in OpenSSL's or IANA's spelling, among its rules), `--tls-ciphersuites`
//!   (TLS 1.3) exact names; each restricts its own protocol version only;
//! - no session resumption: every connection makes a full handshake, as redis-benchmark's do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use respbench_core::Endpoint;
use respbench_driver::Tls;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, VerifierBuilderError, WebPkiServerVerifier};
use rustls::crypto::{ring, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::version::{TLS12, TLS13};
use rustls::{
    CertificateError, CipherSuite, ClientConfig, DigitallySignedStruct, Error, RootCertStore,
    SignatureScheme, SupportedCipherSuite, SupportedProtocolVersion,
};

use crate::config::TlsOptions;
use respbench_core::conn::os_words;

/// Why the TLS settings cannot be made from the options; each names the option (and the file) at
/// fault, in the words the command line prints.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// A value an option does not take (`--sni`, `--tls-ciphers`, `--tls-ciphersuites`,
    /// `--tls-groups`).
    Invalid {
        /// The option.
        option: &'static str,
        /// The value given.
        value: String,
        /// Why it is refused, and what the option takes.
        why: String,
    },
    /// A file or directory an option names cannot be used (`--cacert`, `--cacertdir`, `--cert`,
    /// `--key`).
    File {
        /// The option.
        option: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What is wrong with it.
        why: FileError,
    },
    /// `--cert` without `--key`.
    CertWithoutKey,
    /// `--key` without `--cert`.
    KeyWithoutCert,
    /// `--key` is not the private key of `--cert`.
    NotTheKey {
        /// `--key`.
        key: PathBuf,
        /// `--cert`.
        cert: PathBuf,
    },
    /// rustls refused the client certificate and its key.
    ClientCert {
        /// `--cert`.
        cert: PathBuf,
        /// `--key`.
        key: PathBuf,
        /// rustls' reason.
        error: Error,
    },
    /// The host is neither a DNS name nor an IP address, so no certificate can be checked
    /// against it (without `--sni` or `--insecure`).
    UncheckableHost(String),
    /// No CA certificate in the system's roots; what was looked at.
    NoSystemRoots(Vec<String>),
    /// None of the CA certificates given can be used as a root.
    NoUsableRoot,
    /// `--tls-ciphers` and `--tls-ciphersuites` leave no cipher suite at all.
    NoSuites,
    /// rustls refused the protocol versions or the suites.
    Rustls(Error),
    /// The certificate verifier cannot be made from the roots.
    Verifier(VerifierBuilderError),
}

impl fmt::Display for TlsConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsConfigError::Invalid { option, value, why } => {
                write!(f, "invalid value '{value}' for {option}: {why}")
            }
            TlsConfigError::File { option, path, why } => write!(f, "{option} {}: {why}", path.display()),
            TlsConfigError::CertWithoutKey => {
                f.write_str("--cert needs --key (the client certificate's private key)")
            }
            TlsConfigError::KeyWithoutCert => f.write_str("--key needs --cert (the client certificate)"),
            TlsConfigError::NotTheKey { key, cert } => {
                write!(f, "--key {} is not the private key of --cert {}", key.display(), cert.display())
            }
            TlsConfigError::ClientCert { cert, key, error } => {
                write!(f, "--cert {} with --key {}: {error}", cert.display(), key.display())
            }
            TlsConfigError::UncheckableHost(host) => write!(
                f,
                "--tls: the host '{host}' is neither a DNS name nor an IP address, so the server's \
                 certificate cannot be checked against it: give --sni NAME (a name in the certificate), \
                 or --insecure to check nothing"
            ),
            TlsConfigError::NoSystemRoots(tried) => write!(
                f,
                "--tls: no CA certificate found in the system's roots (tried {}): give --cacert or \
                 --cacertdir, or --insecure to skip verification",
                tried.join(", ")
            ),
            TlsConfigError::NoUsableRoot => f.write_str(
                "--tls: none of the CA certificates given (--cacert, --cacertdir) can be used as a root",
            ),
            TlsConfigError::NoSuites => {
                f.write_str("--tls-ciphers and --tls-ciphersuites leave no cipher suite to offer")
            }
            TlsConfigError::Rustls(e) => write!(f, "TLS: {e}"),
            TlsConfigError::Verifier(e) => write!(f, "TLS: {e}"),
        }
    }
}

impl std::error::Error for TlsConfigError {}

/// What is wrong with a file (or directory) a TLS option names.
#[derive(Debug)]
#[non_exhaustive]
pub enum FileError {
    /// It cannot be read.
    Io(std::io::Error),
    /// It is not PEM.
    Pem(pem::Error),
    /// The file holds no certificate.
    NoCertificate,
    /// No file of the directory holds a certificate.
    NoCertificateInDir,
    /// The file holds no private key that can be read.
    NoKey,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Io(e) => f.write_str(&os_words(e)),
            FileError::Pem(e) => write!(f, "not a valid PEM file: {e}"),
            FileError::NoCertificate => f.write_str("no certificate (PEM) in the file"),
            FileError::NoCertificateInDir => f.write_str("no certificate (PEM) in any file of the directory"),
            FileError::NoKey => {
                f.write_str("no private key (PEM: PKCS#8, PKCS#1 or SEC1; encrypted keys are not read)")
            }
        }
    }
}

impl std::error::Error for FileError {}

impl From<pem::Error> for FileError {
    fn from(e: pem::Error) -> FileError {
        match e {
            pem::Error::Io(e) => FileError::Io(e),
            e => FileError::Pem(e),
        }
    }
}

/// Makes the TLS settings of a run to `endpoint`. Every error names the option (and the file)
/// at fault.
pub fn client(o: &TlsOptions, endpoint: &Endpoint) -> Result<Tls, TlsConfigError> {
    let base = ring::default_provider();
    let kx_groups = match o.groups.as_deref() {
        Some(list) => kx_groups(list)?,
        None => base.kx_groups.clone(),
    };
    let provider = Arc::new(CryptoProvider {
        cipher_suites: cipher_suites(o.ciphers.as_deref(), o.ciphersuites.as_deref())?,
        kx_groups,
        ..base
    });
    // Offering a version with no suite would let a server pick it and fail the handshake.
    let versions: Vec<&'static SupportedProtocolVersion> = [&TLS13, &TLS12]
        .into_iter()
        .filter(|v| provider.cipher_suites.iter().any(|s| s.version() == *v))
        .collect();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(TlsConfigError::Rustls)?;
    let server_name = server_name(o.sni.as_deref(), endpoint, o.insecure)?;
    let verifier = {
        let (roots, given) = roots(o)?;
        let chain = if o.insecure {
            None
        } else {
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(TlsConfigError::Verifier)?;
            Some(webpki)
        };
        let unnamed = unnamed(o.sni.as_deref(), endpoint).then(|| server_name.clone());
        Arc::new(Verifier { chain, given, unnamed, algorithms: provider.signature_verification_algorithms })
    };
    let builder = builder.dangerous().with_custom_certificate_verifier(verifier);
    let mut config = match (&o.cert, &o.key) {
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) => return Err(TlsConfigError::CertWithoutKey),
        (None, Some(_)) => return Err(TlsConfigError::KeyWithoutCert),
        (Some(cert), Some(key)) => {
            let file = |option, path: &Path, why| TlsConfigError::File { option, path: path.into(), why };
            let chain = certs_in(cert).map_err(|why| file("--cert", cert, why))?;
            if chain.is_empty() {
                return Err(file("--cert", cert, FileError::NoCertificate));
            }
            let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| match e {
                pem::Error::NoItemsFound => file("--key", key, FileError::NoKey),
                e => file("--key", key, e.into()),
            })?;
            let (cert, key) = (cert.clone(), key.clone());
            builder.with_client_auth_cert(chain, key_der).map_err(|error| match error {
                Error::InconsistentKeys(_) => TlsConfigError::NotTheKey { key, cert },
                error => TlsConfigError::ClientCert { cert, key, error },
            })?
        }
    };
    config.enable_sni = o.sni.is_some();
    config.resumption = Resumption::disabled();
    Ok(Tls { config: Arc::new(config), server_name })
}

/// The name the server is checked against (and asked for, with `--sni`): `--sni`, else the host.
/// A Unix socket has none (`localhost` stands in, and is not checked: see [`unnamed`]). A host
/// that is neither an IP address nor a DNS name cannot be checked: an error, unless `--insecure`
/// checks nothing anyway.
fn server_name(
    sni: Option<&str>,
    endpoint: &Endpoint,
    insecure: bool,
) -> Result<ServerName<'static>, TlsConfigError> {
    let localhost = || ServerName::try_from("localhost").expect("a valid name");
    match (sni, endpoint) {
        (Some(name), _) => ServerName::try_from(name.to_string()).map_err(|_| TlsConfigError::Invalid {
            option: "--sni",
            value: name.to_string(),
            why: "not a DNS name".into(),
        }),
        (None, Endpoint::Tcp { host, .. }) => match ServerName::try_from(host.clone()) {
            Ok(name) => Ok(name),
            Err(_) if insecure => Ok(localhost()),
            Err(_) => Err(TlsConfigError::UncheckableHost(host.clone())),
        },
        (None, Endpoint::Unix(_)) => Ok(localhost()),
    }
}

/// Whether the server is reached by no name at all: a Unix socket without `--sni`.
fn unnamed(sni: Option<&str>, endpoint: &Endpoint) -> bool {
    sni.is_none() && matches!(endpoint, Endpoint::Unix(_))
}

/// Why the name of a server reached as `server_name` cannot be checked against its certificate
/// `end_entity`, or `None` when it is checked: a Unix socket without `--sni` (`unnamed`) has no
/// name; an IP address has nothing to match in a certificate that names no IP address
/// (subjectAltName `IP:`), as a certificate made for DNS names only. A certificate whose names
/// cannot be read is checked (and refused by the check), never passed.
pub(crate) fn name_unchecked(
    end_entity: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    unnamed: bool,
) -> Option<String> {
    if unnamed {
        return Some(
            "the server was reached over a Unix socket, by no name: give --sni NAME to check one".into(),
        );
    }
    match server_name {
        ServerName::IpAddress(ip) if names_an_ip_address(end_entity) == Some(false) => {
            let ip = std::net::IpAddr::from(*ip);
            Some(format!(
                "the server's certificate names no IP address (subjectAltName) and the server was \
                 reached by IP address ({ip}): give -h NAME or --sni NAME, a name in the certificate, \
                 to check one"
            ))
        }
        _ => None,
    }
}

/// Whether a DER certificate's subjectAltName holds an IP address (`iPAddress`, tag [7]); `None`
/// when the certificate cannot be read this far. Certificate ::= SEQUENCE { tbsCertificate
/// SEQUENCE { [0] version, serial, signature, issuer, validity, subject, spki, [1], [2],
/// [3] extensions }, … }; the extension 2.5.29.17 holds GeneralNames in an OCTET STRING.
fn names_an_ip_address(cert: &[u8]) -> Option<bool> {
    const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
    let (_, cert, _) = der_item(cert, 0x30)?;
    let (_, mut tbs, _) = der_item(cert, 0x30)?;
    while !tbs.is_empty() {
        let (tag, body, rest) = der_any(tbs)?;
        tbs = rest;
        if tag != 0xa3 {
            continue;
        }
        let (_, mut extensions, _) = der_item(body, 0x30)?;
        while !extensions.is_empty() {
            let (_, extension, rest) = der_item(extensions, 0x30)?;
            extensions = rest;
            let (_, oid, mut fields) = der_item(extension, 0x06)?;
            if oid != SUBJECT_ALT_NAME {
                continue;
            }
            if fields.first() == Some(&0x01) {
                fields = der_item(fields, 0x01)?.2; // critical
            }
            let (_, value, _) = der_item(fields, 0x04)?;
            let (_, mut names, _) = der_item(value, 0x30)?;
            while !names.is_empty() {
                let (tag, _, rest) = der_any(names)?;
                if tag == 0x87 {
                    return Some(true);
                }
                names = rest;
            }
            return Some(false);
        }
        return Some(false);
    }
    // No extensions: no subjectAltName.
    Some(false)
}

/// The DER item at the start of `input` if its tag is `tag`: (tag, contents, the bytes after it).
fn der_item(input: &[u8], tag: u8) -> Option<(u8, &[u8], &[u8])> {
    der_any(input).filter(|(t, _, _)| *t == tag)
}

/// The DER item at the start of `input` (single-byte tags, definite lengths of up to 4 bytes):
/// (tag, contents, the bytes after it); `None` when it is cut short or malformed.
fn der_any(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |l, &b| (l << 8) | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let (body, after) = rest.split_at(len);
    Some((tag, body, after))
}

/// The roots that verify the server: `--cacert` and `--cacertdir`, else the system's. A bad file
/// given is an error even with `--insecure` (as in redis-benchmark); finding no system root is
/// one only when certificates are verified.
fn roots(o: &TlsOptions) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), TlsConfigError> {
    let file = |option, path: &Path, why| TlsConfigError::File { option, path: path.into(), why };
    let mut certs = Vec::new();
    if let Some(path) = &o.cacert {
        let found = certs_in(path).map_err(|why| file("--cacert", path, why))?;
        if found.is_empty() {
            return Err(file("--cacert", path, FileError::NoCertificate));
        }
        certs.extend(found);
    }
    if let Some(dir) = &o.cacertdir {
        let found = certs_in_dir(dir).map_err(|why| file("--cacertdir", dir, why))?;
        if found.is_empty() {
            return Err(file("--cacertdir", dir, FileError::NoCertificateInDir));
        }
        certs.extend(found);
    }
    let from_system = o.cacert.is_none() && o.cacertdir.is_none();
    let mut tried = Vec::new();
    if from_system && !o.insecure {
        certs = system_roots(&mut tried);
    }
    // Hashed directories (c_rehash) link the same file under several names.
    certs.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
    certs.dedup();
    let given = if from_system { Vec::new() } else { certs.clone() };
    let mut store = RootCertStore::empty();
    let (_added, _unusable) = store.add_parsable_certificates(certs);
    if store.is_empty() && !o.insecure {
        return Err(if from_system {
            TlsConfigError::NoSystemRoots(tried)
        } else {
            TlsConfigError::NoUsableRoot
        });
    }
    Ok((store, given))
}

/// Files of CA bundles, as OpenSSL builds on these systems know them: Debian and Ubuntu,
/// Fedora and RHEL, openSUSE, Alpine and the BSDs.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The roots redis-benchmark's `SSL_CTX_set_default_verify_paths` finds: `SSL_CERT_FILE` (else
/// the system's bundle) and the directories of `SSL_CERT_DIR`. The default directory
/// (/etc/ssl/certs) is not read: where it exists it holds the bundle's certificates one per file.
/// `tried` gets what was looked at, for the error when nothing was found.
fn system_roots(tried: &mut Vec<String>) -> Vec<CertificateDer<'static>> {
    let mut certs = Vec::new();
    match std::env::var_os("SSL_CERT_FILE") {
        Some(file) => {
            tried.push(format!("SSL_CERT_FILE={}", Path::new(&file).display()));
            certs.extend(certs_in(Path::new(&file)).unwrap_or_default());
        }
        None => {
            if let Some(file) = SYSTEM_BUNDLES.iter().map(Path::new).find(|p| p.is_file()) {
                certs.extend(certs_in(file).unwrap_or_default());
            }
            tried.extend(SYSTEM_BUNDLES.iter().map(|s| s.to_string()));
        }
    }
    if let Some(dirs) = std::env::var_os("SSL_CERT_DIR") {
        tried.push(format!("SSL_CERT_DIR={}", Path::new(&dirs).display()));
        for dir in std::env::split_paths(&dirs) {
            certs.extend(certs_in_dir(&dir).unwrap_or_default());
        }
    }
    certs
}

/// Every certificate in a PEM file (none when it holds no `CERTIFICATE` section).
fn certs_in(file: &Path) -> Result<Vec<CertificateDer<'static>>, FileError> {
    Ok(CertificateDer::pem_file_iter(file)?.collect::<Result<Vec<_>, _>>()?)
}

/// Every certificate in the PEM files of a directory, following symbolic links; files that are
/// not PEM, or hold no certificate, are passed over (a hashed directory holds CRLs too).
fn certs_in_dir(dir: &Path) -> Result<Vec<CertificateDer<'static>>, FileError> {
    let entries = std::fs::read_dir(dir).map_err(FileError::Io)?;
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    // `is_file` follows links.
    Ok(files.iter().filter(|p| p.is_file()).flat_map(|p| certs_in(p).unwrap_or_default()).collect())
}

/// Verifies the server's certificate: a chain to a trusted root, in date, for a server, as
/// redis-benchmark does, and for the name the server was given by (rustls' check, which
/// redis-benchmark does not make: OpenSSL checks a name only when asked with `SSL_set1_host`),
/// except where [`name_unchecked`] finds nothing to match. rustls checks the name last, after
/// the chain, so accepting its name error in those cases accepts nothing else.
///
/// A server whose certificate is itself one of the CA certificates given (`--cacert`,
/// `--cacertdir`: a self-signed certificate made with `openssl req -x509` and handed to both
/// sides) is accepted too, as OpenSSL does: webpki refuses a CA certificate as a server's
/// (`CaUsedAsEndEntity`), a check it makes after the dates, so such a certificate is in date
/// and exactly the one the user trusts; its handshake signature is still verified, and its name
/// checked as any other's.
///
/// `--insecure` (no chain): any certificate is accepted. Either way the handshake's signatures
/// are checked against the key in the certificate, so the server must hold that key
/// (`SSL_VERIFY_NONE` does the same).
#[derive(Debug)]
struct Verifier {
    /// The chain's verifier; `None` with `--insecure`.
    chain: Option<Arc<WebPkiServerVerifier>>,
    /// The CA certificates given (`--cacert`, `--cacertdir`).
    given: Vec<CertificateDer<'static>>,
    /// A Unix socket without `--sni`: the stand-in name, which is not checked.
    unnamed: Option<ServerName<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        let unnamed = self.unnamed.as_ref() == Some(&server_name.to_owned());
        let unchecked = || name_unchecked(end_entity, server_name, unnamed).is_some();
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if unchecked() => Ok(ServerCertVerified::assertion()),
            Err(Error::InvalidCertificate(CertificateError::Other(e)))
                if format!("{e:?}").contains("CaUsedAsEndEntity")
                    && self.given.iter().any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                // webpki stopped before the name: it is checked here.
                if !unchecked() {
                    let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
                    rustls::client::verify_server_name(&cert, server_name)?;
                }
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A suite rustls (ring) has, under both its names. TLS 1.3 suites have one name: OpenSSL uses
/// IANA's.
struct Suite {
    openssl: &'static str,
    iana: &'static str,
    id: CipherSuite,
}

const TLS13_SUITES: &[Suite] = &[
    Suite {
        openssl: "TLS_AES_256_GCM_SHA384",
        iana: "TLS_AES_256_GCM_SHA384",
        id: CipherSuite::TLS13_AES_256_GCM_SHA384,
    },
    Suite {
        openssl: "TLS_AES_128_GCM_SHA256",
        iana: "TLS_AES_128_GCM_SHA256",
        id: CipherSuite::TLS13_AES_128_GCM_SHA256,
    },
    Suite {
        openssl: "TLS_CHACHA20_POLY1305_SHA256",
        iana: "TLS_CHACHA20_POLY1305_SHA256",
        id: CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    },
];

const TLS12_SUITES: &[Suite] = &[
    Suite {
        openssl: "ECDHE-ECDSA-AES256-GCM-SHA384",
        iana: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        id: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    },
    Suite {
        openssl: "ECDHE-ECDSA-AES128-GCM-SHA256",
        iana: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        id: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    },
    Suite {
        openssl: "ECDHE-ECDSA-CHACHA20-POLY1305",
        iana: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        id: CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    },
    Suite {
        openssl: "ECDHE-RSA-AES256-GCM-SHA384",
        iana: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        id: CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    },
    Suite {
        openssl: "ECDHE-RSA-AES128-GCM-SHA256",
        iana: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        id: CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    },
    Suite {
        openssl: "ECDHE-RSA-CHACHA20-POLY1305",
        iana: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        id: CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    },
];

/// The suites offered, in order of preference: `--tls-ciphersuites` (TLS 1.3) then
/// `--tls-ciphers` (TLS 1.2), each in the order given; a version whose option is left out keeps
/// all its suites (as OpenSSL does); an empty list leaves that version out.
fn cipher_suites(
    ciphers: Option<&str>,
    ciphersuites: Option<&str>,
) -> Result<Vec<SupportedCipherSuite>, TlsConfigError> {
    let all = ring::ALL_CIPHER_SUITES;
    let mut out = Vec::new();
    for (option, list, table, other) in [
        ("--tls-ciphersuites", ciphersuites, TLS13_SUITES, ("TLS 1.2", "--tls-ciphers", TLS12_SUITES)),
        ("--tls-ciphers", ciphers, TLS12_SUITES, ("TLS 1.3", "--tls-ciphersuites", TLS13_SUITES)),
    ] {
        let chosen: Vec<&Suite> = match list {
            None => table.iter().collect(),
            // OpenSSL's cipher-list language (`DEFAULT:-AES128-SHA256`, `HIGH:!aNULL`).
            Some(list) if option == "--tls-ciphers" => cipher_list(list)?,
            Some(list) => parse_suites(option, list, table, other)?,
        };
        for s in chosen {
            let suite =
                all.iter().find(|a| a.suite() == s.id).expect("the table lists the provider's suites");
            if !out.iter().any(|o: &SupportedCipherSuite| o.suite() == s.id) {
                out.push(*suite);
            }
        }
    }
    if out.is_empty() {
        return Err(TlsConfigError::NoSuites);
    }
    Ok(out)
}

/// The suites named in one option's list (colons; `--tls-ciphers` also takes commas and spaces,
/// as OpenSSL's cipher lists do).
fn parse_suites(
    option: &'static str,
    list: &str,
    table: &'static [Suite],
    (other_version, other_option, other_table): (&str, &str, &'static [Suite]),
) -> Result<Vec<&'static Suite>, TlsConfigError> {
    let separators: &[char] = if option == "--tls-ciphers" { &[':', ',', ' '] } else { &[':'] };
    let mut chosen = Vec::new();
    for name in list.split(separators).map(str::trim).filter(|n| !n.is_empty()) {
        let find = |t: &'static [Suite]| {
            t.iter().find(|s| s.openssl.eq_ignore_ascii_case(name) || s.iana.eq_ignore_ascii_case(name))
        };
        if let Some(s) = find(table) {
            chosen.push(s);
            continue;
        }
        let why = if find(other_table).is_some() {
            format!("'{name}' is a {other_version} suite: give it to {other_option}")
        } else if is_keyword(name) {
            format!("'{name}' is an OpenSSL cipher-list keyword or rule; respbench (rustls) takes exact suite names only")
        } else {
            format!(
                "'{name}' is not a suite rustls has (it has no CBC or CCM suites, no RSA key exchange, nothing before \
                 TLS 1.2)"
            )
        };
        let why = format!("{why}; the suites are: {}", suite_names(table));
        return Err(TlsConfigError::Invalid { option, value: list.to_string(), why });
    }
    Ok(chosen)
}

/// OpenSSL's cipher-list operators (`!aNULL`, `-RC4`, `+AES`, `@STRENGTH`, `ECDHE+AESGCM`) and
/// aliases (`HIGH`, `DEFAULT`, `ALL`, `kEECDH`), which no suite name looks like.
fn is_keyword(name: &str) -> bool {
    name.starts_with(['!', '-', '+', '@']) || name.contains('+') || !name.contains(['-', '_'])
}

/// The OpenSSL aliases that `s` (a TLS 1.2 suite rustls has) belongs to, and its strength in
/// bits for `@STRENGTH`. Every such suite is ECDHE with AEAD encryption, so it is in `ALL`,
/// `DEFAULT` and `HIGH`; aliases for what rustls lacks (`kRSA`, `DHE`, `PSK`, `CBC` ciphers,
/// `MEDIUM`, `LOW`, `eNULL`, `aNULL`, `COMPLEMENTOFDEFAULT`, …) match none of them.
fn aliases(s: &Suite) -> (Vec<&'static str>, u32) {
    let mut a = vec![
        "ALL", "DEFAULT", "HIGH", "FIPS", "TLSv1.2", "AEAD", "ECDHE", "EECDH", "kECDHE", "kEECDH", "ECDH",
        "kECDH",
    ];
    a.push(if s.openssl.contains("ECDSA") { "aECDSA" } else { "aRSA" });
    if s.openssl.contains("ECDSA") {
        a.push("ECDSA");
    }
    let strength = if s.openssl.contains("AES128") { 128 } else { 256 };
    if s.openssl.contains("CHACHA20") {
        a.extend(["CHACHA20", "SHA256"]);
    } else {
        a.extend(["AES", "AESGCM", if strength == 128 { "AES128" } else { "AES256" }]);
        a.push(if strength == 128 { "SHA256" } else { "SHA384" });
    }
    (a, strength)
}

/// Whether one term of a rule (`ECDHE`, `AESGCM`, a suite's name) matches `s`.
fn term_matches(term: &str, s: &Suite) -> bool {
    s.openssl.eq_ignore_ascii_case(term) || s.iana.eq_ignore_ascii_case(term) || aliases(s).0.contains(&term)
}

/// `--tls-ciphers` evaluated as OpenSSL evaluates a cipher list, over the TLS 1.2 suites rustls
/// has: rules separated by `:`, `,` or spaces; each a suite name or aliases joined by `+` (all
/// of them must match); a rule adds what it matches (at the end, keeping what is there), `-`
/// removes it, `!` removes it for good, `+` moves it to the end; `@STRENGTH` sorts by key
/// length. A rule that matches nothing is no error, as in OpenSSL: only a list that leaves no
/// suite is refused, saying what each rule matched.
fn cipher_list(list: &str) -> Result<Vec<&'static Suite>, TlsConfigError> {
    // An empty list turns TLS 1.2 off, as with --tls-ciphersuites.
    if list.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut chosen: Vec<usize> = Vec::new();
    let mut killed = vec![false; TLS12_SUITES.len()];
    let mut said = Vec::new();
    for rule in list.split([':', ',', ' ']).map(str::trim).filter(|r| !r.is_empty()) {
        if rule.starts_with('@') {
            if rule.eq_ignore_ascii_case("@STRENGTH") {
                chosen.sort_by_key(|&i| std::cmp::Reverse(aliases(&TLS12_SUITES[i]).1));
            }
            continue;
        }
        let (op, body) = match rule.as_bytes()[0] {
            b @ (b'!' | b'-' | b'+') => (b, &rule[1..]),
            _ => (0, rule),
        };
        let matched: Vec<usize> = (0..TLS12_SUITES.len())
            .filter(|&i| body.split('+').all(|t| !t.is_empty() && term_matches(t, &TLS12_SUITES[i])))
            .collect();
        said.push(format!("{rule} matched {}", matched.len()));
        match op {
            b'!' => {
                chosen.retain(|i| !matched.contains(i));
                matched.iter().for_each(|&i| killed[i] = true);
            }
            b'-' => chosen.retain(|i| !matched.contains(i)),
            b'+' => {
                let (moved, kept): (Vec<usize>, Vec<usize>) =
                    chosen.iter().partition(|i| matched.contains(i));
                chosen = kept.into_iter().chain(moved).collect();
            }
            _ => {
                for i in matched {
                    if !killed[i] && !chosen.contains(&i) {
                        chosen.push(i);
                    }
                }
            }
        }
    }
    if chosen.is_empty() {
        let tls13 = list
            .split([':', ',', ' '])
            .filter(|n| TLS13_SUITES.iter().any(|s| s.iana.eq_ignore_ascii_case(n.trim())))
            .map(|n| format!("; '{}' is a TLS 1.3 suite: give it to --tls-ciphersuites", n.trim()))
            .collect::<String>();
        let why = format!(
            "it leaves no TLS 1.2 suite ({}){tls13}; the TLS 1.2 suites rustls has (no CBC or CCM suites, no \
             RSA key exchange, nothing before TLS 1.2) are: {}",
            said.join(", "),
            suite_names(TLS12_SUITES)
        );
        return Err(TlsConfigError::Invalid { option: "--tls-ciphers", value: list.to_string(), why });
    }
    Ok(chosen.into_iter().map(|i| &TLS12_SUITES[i]).collect())
}

/// The key exchange groups rustls (ring) has, by OpenSSL's names for them.
const GROUPS: &[(&[&str], rustls::NamedGroup)] = &[
    (&["X25519", "x25519"], rustls::NamedGroup::X25519),
    (&["P-256", "secp256r1", "prime256v1"], rustls::NamedGroup::secp256r1),
    (&["P-384", "secp384r1"], rustls::NamedGroup::secp384r1),
];

/// `--tls-groups`: OpenSSL's groups list (names separated by `:`, in order of preference; a name
/// after `?` is skipped where it is unknown) over the groups rustls has.
fn kx_groups(list: &str) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, TlsConfigError> {
    let known = || GROUPS.iter().map(|(names, _)| names.join("/")).collect::<Vec<_>>().join(", ");
    let invalid = |why| TlsConfigError::Invalid { option: "--tls-groups", value: list.to_string(), why };
    let mut out: Vec<&'static dyn rustls::crypto::SupportedKxGroup> = Vec::new();
    for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        let (optional, name) = match name.strip_prefix('?') {
            Some(n) => (true, n),
            None => (false, name),
        };
        let group = GROUPS.iter().find(|(names, _)| names.iter().any(|n| n.eq_ignore_ascii_case(name)));
        let Some((_, id)) = group else {
            if optional {
                continue;
            }
            return Err(invalid(format!(
                "'{name}' is not a group rustls has (put '?' before it to skip it); the groups are: {}",
                known()
            )));
        };
        let kx = ring::ALL_KX_GROUPS
            .iter()
            .find(|g| g.name() == *id)
            .expect("the table lists the provider's groups");
        if !out.iter().any(|g| g.name() == *id) {
            out.push(*kx);
        }
    }
    if out.is_empty() {
        return Err(invalid(format!("it leaves no group; the groups are: {}", known())));
    }
    Ok(out)
}

/// `A (B), C (D)`: OpenSSL's name with IANA's where they differ.
fn suite_names(table: &[Suite]) -> String {
    let names: Vec<String> = table
        .iter()
        .map(|s| if s.openssl == s.iana { s.iana.to_string() } else { format!("{} ({})", s.openssl, s.iana) })
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_options_name_the_option_and_the_file() {
        let at = Endpoint::Tcp { host: "10.0.0.1".into(), port: 6379 };
        let err = |o: TlsOptions| client(&o, &at).unwrap_err().to_string();
        let e = err(TlsOptions { cacert: Some("/nonexistent/ca.crt".into()), ..TlsOptions::default() });
        assert!(e.contains("--cacert /nonexistent/ca.crt: No such file or directory"), "{e}");
        // As in redis-benchmark, a CA file given must load even when nothing is verified.
        let insecure = TlsOptions { insecure: true, ..TlsOptions::default() };
        let e = err(TlsOptions { cacertdir: Some("/nonexistent".into()), ..insecure.clone() });
        assert!(e.contains("--cacertdir /nonexistent"), "{e}");
        let e = err(TlsOptions { cert: Some("/nonexistent/c.crt".into()), ..insecure.clone() });
        assert!(e.contains("--cert needs --key"), "{e}");
        let e = err(TlsOptions { key: Some("/nonexistent/c.key".into()), ..insecure.clone() });
        assert!(e.contains("--key needs --cert"), "{e}");
        let e = err(TlsOptions { sni: Some("not a name".into()), ..insecure.clone() });
        assert!(e.contains("--sni"), "{e}");
        let e = err(TlsOptions { ciphers: Some("MEDIUM".into()), ..insecure });
        assert!(e.contains("--tls-ciphers"), "{e}");
    }

    /// An EC CA and a server certificate it signed for `server.test` (valid 2026-2126), the
    /// server's key (PKCS#8), and another CA with its key (SEC1): openssl ecparam prime256v1,
    /// req -x509, x509 -req with subjectAltName=DNS:server.test, CA:FALSE, serverAuth.
    const CA: &str = "-----BEGIN CERTIFICATE-----
MIIBkDCCATWgAwIBAgIUHtUWLWlO21/8Xdfab9JSC03S0zMwCgYIKoZIzj0EAwIw
HDEaMBgGA1UEAwwRcmVzcGJlbmNoIHRlc3QgQ0EwIBcNMjYxMTMwMjEzOTEyWhgP
MjEyNjExMDYyMTM5MTJaMBwxGjAYBgNVBAMMEXJlc3BiZW5jaCB0ZXN0IENBMFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2+kFcMTnFOyemVdC2YPDldfGQB/kNN5r
FmXpM18WdCcrauZRyXbcu1O8O7vsMNlgUKhQxvPH92rWKSrfDgxroaNTMFEwHQYD
VR0OBBYEFFPv0EWO0cm8xU8sAAJssu/D9AsUMB8GA1UdIwQYMBaAFFPv0EWO0cm8
xU8sAAJssu/D9AsUMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIh
APvB9Dm4WytCQeLxOb2Sg5tDQ64ep7SEC3b7CBE9o/iNAiEA3FL0Avdjw2fNdaNN
wp2Oh28x0j9NTs7rEs/0HLOl4OI=
-----END CERTIFICATE-----";
    const SERVER: &str = "-----BEGIN CERTIFICATE-----
MIIBnTCCAUOgAwIBAgIBAjAKBggqhkjOPQQDAjAcMRowGAYDVQQDDBFyZXNwYmVu
Y2ggdGVzdCBDQTAgFw0yNjExMzAyMTM5MTJaGA8yMTI2MTEwNjIxMzkxMlowFjEU
MBIGA1UEAwwLc2VydmVyLnRlc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARx
tonCpoSXkuwcr6QZW//iTtQR0OxcYs+OGa/Igd4Lq7n7smEeDuSDi4IB1lCny2EM
YSUA62yLbhic21abqOECo3oweDAWBgNVHREEDzANggtzZXJ2ZXIudGVzdDAJBgNV
HRMEAjAAMBMGA1UdJQQMMAoGCCsGAQUFBwMBMB0GA1UdDgQWBBTcpF2XBE7n/CfM
1dgZjxoxyXCsBzAfBgNVHSMEGDAWgBRT79BFjtHJvMVPLAACbLLvw/QLFDAKBggq
hkjOPQQDAgNIADBFAiBsja1XWtbQsfFcNVKsAgLdXCtw3p3VOEmX3tsra57rwQIh
ANwvFz2HwE23mW3y3m/+egsoS6G+lE3M4DoNBTp7ARhK
-----END CERTIFICATE-----";
    const OTHER_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBgjCCASegAwIBAgIUL2qrWeZtoFbHI/7cl3pOFFG8UHIwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKYW5vdGhlciBDQTAgFw0yNjExMzAyMTM5MTJaGA8yMTI2MTEw
NjIxMzkxMlowFTETMBEGA1UEAwwKYW5vdGhlciBDQTBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABDLSAXW2x5todGELhScAt6vwsTiZWl2jJEM/9p6xRlSHt+6yRMkd
K1uZavZWMbKI88iGQdQXfY/b8NYyt20N7wujUzBRMB0GA1UdDgQWBBRK7J52oLFS
X67qiw4Unb4o1Fi/dzAfBgNVHSMEGDAWgBRK7J52oLFSX67qiw4Unb4o1Fi/dzAP
BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQD9EKTyu+SPnbgg11+C
wsEYDqwci/keFmsx7lUR600ahgIhALhndweRjRbADXBwkaAaSl2aruHR32Xcw7od
OogQ07j/
-----END CERTIFICATE-----";
    const SERVER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8TKacKHwzIAnD5pJ
BTVFkRuxzayq/CabZIHLDu0bNe2hRANCAARxtonCpoSXkuwcr6QZW//iTtQR0Oxc
Ys+OGa/Igd4Lq7n7smEeDuSDi4IB1lCny2EMYSUA62yLbhic21abqOEC
-----END PRIVATE KEY-----";
    const OTHER_KEY: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIMOqT2CRb50w39BR4qexSf8y6I3ZiPzDLb1Clsz7QyfjoAoGCCqGSM49
AwEHoUQDQgAEMtIBdbbHm2h0YQuFJwC3q/CxOJlaXaMkQz/2nrFGVIe37rJEyR0r
W5lq9lYxsojzyIZB1Bd9j9vw1jK3bQ3vCw==
-----END EC PRIVATE KEY-----";

    /// A time the certificates are valid at.
    fn in_2030() -> UnixTime {
        UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_893_456_000))
    }

    /// A fresh directory under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("respbench-tls-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn der(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }

    fn chain_only(roots_pem: &str) -> Verifier {
        let mut roots = RootCertStore::empty();
        roots.add(der(roots_pem)).unwrap();
        let provider = Arc::new(ring::default_provider());
        Verifier {
            algorithms: provider.signature_verification_algorithms,
            chain: Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap(),
            ),
            given: vec![der(roots_pem)],
            unnamed: None,
        }
    }

    fn not_for_the_name(r: &Result<ServerCertVerified, Error>) -> bool {
        matches!(
            r,
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
            ))
        )
    }

    /// The chain, and the name where the certificate has one to match: SERVER names only
    /// `DNS:server.test`, so by IP address there is nothing to match and it passes on its chain.
    #[test]
    fn the_chain_and_the_name_are_verified() {
        let v = chain_only(CA);
        let name = |n: &'static str| ServerName::try_from(n).unwrap();
        for n in ["server.test", "127.0.0.1", "::1"] {
            assert!(v.verify_server_cert(&der(SERVER), &[], &name(n), &[], in_2030()).is_ok(), "{n}");
        }
        for n in ["other.example", "localhost", "test"] {
            let r = v.verify_server_cert(&der(SERVER), &[], &name(n), &[], in_2030());
            assert!(not_for_the_name(&r), "{n}: {r:?}");
        }
        assert_eq!(names_an_ip_address(der(SERVER).as_ref()), Some(false));
        assert!(name_unchecked(&der(SERVER), &name("127.0.0.1"), false).is_some());
        assert_eq!(name_unchecked(&der(SERVER), &name("server.test"), false), None);
        // A certificate that cannot be read this far is checked, never passed.
        for bad in [&b""[..], b"\x30\x03\x30\x01", b"\x30\x84\xff\xff\xff\xff", b"\x04\x00"] {
            let bad = CertificateDer::from(bad.to_vec());
            assert_eq!(names_an_ip_address(bad.as_ref()), None);
            assert_eq!(name_unchecked(&bad, &name("127.0.0.1"), false), None);
        }
        // A Unix socket without --sni: the stand-in name is not checked.
        let unix = Verifier { unnamed: Some(name("localhost")), ..chain_only(CA) };
        assert!(unix.verify_server_cert(&der(SERVER), &[], &name("localhost"), &[], in_2030()).is_ok());
        let r = unix.verify_server_cert(&der(SERVER), &[], &name("other.example"), &[], in_2030());
        assert!(not_for_the_name(&r));
        let e =
            chain_only(OTHER_CA).verify_server_cert(&der(SERVER), &[], &name("server.test"), &[], in_2030());
        assert_eq!(e.unwrap_err(), Error::InvalidCertificate(CertificateError::UnknownIssuer));
        let in_2200 = UnixTime::since_unix_epoch(std::time::Duration::from_secs(7_258_118_400));
        let e = v.verify_server_cert(&der(SERVER), &[], &name("other.example"), &[], in_2200).unwrap_err();
        assert!(matches!(e, Error::InvalidCertificate(CertificateError::ExpiredContext { .. })), "{e:?}");
        // A CA certificate given as a root, used as the server's own (self-signed servers): taken
        // when it is the very certificate given and in date, refused otherwise; its name is
        // checked as any other's (CA names none: by IP address it passes, by name it does not).
        assert!(v.verify_server_cert(&der(CA), &[], &name("127.0.0.1"), &[], in_2030()).is_ok());
        assert!(not_for_the_name(&v.verify_server_cert(&der(CA), &[], &name("x.example"), &[], in_2030())));
        let other =
            chain_only(OTHER_CA).verify_server_cert(&der(CA), &[], &name("x.example"), &[], in_2030());
        assert!(other.is_err(), "{other:?}");
        let late = v.verify_server_cert(&der(CA), &[], &name("x.example"), &[], in_2200);
        assert!(
            matches!(late, Err(Error::InvalidCertificate(CertificateError::ExpiredContext { .. }))),
            "{late:?}"
        );
        // --insecure takes even that.
        let any = Verifier {
            chain: None,
            given: Vec::new(),
            unnamed: None,
            algorithms: ring::default_provider().signature_verification_algorithms,
        };
        assert!(any.verify_server_cert(&der(SERVER), &[], &name("x.example"), &[], in_2200).is_ok());
    }

    #[test]
    fn roots_from_a_file_and_a_directory() {
        let dir = scratch("roots");
        std::fs::write(dir.join("both.pem"), format!("{CA}\n{OTHER_CA}\n")).unwrap();
        let o = |cacert: Option<&str>, cacertdir: Option<&str>| TlsOptions {
            cacert: cacert.map(|f| dir.join(f)),
            cacertdir: cacertdir.map(|d| dir.join(d)),
            ..TlsOptions::default()
        };
        assert_eq!(roots(&o(Some("both.pem"), None)).unwrap().0.len(), 2);
        // A hashed directory: links, a copy, a file that is not PEM, a key, a subdirectory.
        let certs = dir.join("certs");
        std::fs::create_dir_all(certs.join("sub")).unwrap();
        std::fs::write(certs.join("ca.pem"), CA).unwrap();
        std::os::unix::fs::symlink(certs.join("ca.pem"), certs.join("1a2b3c4d.0")).unwrap();
        std::os::unix::fs::symlink(dir.join("both.pem"), certs.join("both.pem")).unwrap();
        std::fs::write(certs.join("README"), "not a certificate").unwrap();
        std::fs::write(certs.join("key.pem"), SERVER_KEY).unwrap();
        assert_eq!(roots(&o(None, Some("certs"))).unwrap().0.len(), 2);
        assert_eq!(roots(&o(Some("both.pem"), Some("certs"))).unwrap().0.len(), 2);
        std::fs::write(dir.join("key.pem"), SERVER_KEY).unwrap();
        let e = roots(&o(Some("key.pem"), None)).unwrap_err().to_string();
        assert!(e.contains("--cacert") && e.contains("key.pem: no certificate"), "{e}");
        let e = roots(&o(None, Some("certs/sub"))).unwrap_err().to_string();
        assert!(e.contains("sub: no certificate (PEM) in any file"), "{e}");
        let e = roots(&o(Some("missing.pem"), None)).unwrap_err().to_string();
        assert!(e.ends_with("missing.pem: No such file or directory"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn client_certificates_need_their_key() {
        let dir = scratch("client");
        for (f, pem) in [("c.pem", SERVER), ("k.pem", SERVER_KEY), ("other.pem", OTHER_KEY)] {
            std::fs::write(dir.join(f), pem).unwrap();
        }
        let endpoint = Endpoint::Tcp { host: "127.0.0.1".into(), port: 6379 };
        let o = |key: &str| TlsOptions {
            insecure: true,
            cert: Some(dir.join("c.pem")),
            key: Some(dir.join(key)),
            ..TlsOptions::default()
        };
        let tls = client(&o("k.pem"), &endpoint).unwrap();
        assert!(tls.config.client_auth_cert_resolver.has_certs());
        let e = client(&o("other.pem"), &endpoint).unwrap_err().to_string();
        assert!(e.contains("other.pem is not the private key of --cert"), "{e}");
        let e = client(&o("c.pem"), &endpoint).unwrap_err().to_string();
        assert!(e.contains("c.pem: no private key"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sni_and_the_server_name() {
        let tcp = |h: &str| Endpoint::Tcp { host: h.into(), port: 6379 };
        let name = |sni, e| server_name(sni, &e, false).unwrap();
        assert_eq!(name(None, tcp("10.0.0.1")), ServerName::try_from("10.0.0.1").unwrap());
        assert_eq!(name(None, tcp("::1")), ServerName::try_from("::1").unwrap());
        assert_eq!(name(None, tcp("cache.example")), ServerName::try_from("cache.example").unwrap());
        // A host that cannot be checked is an error, unless nothing is checked.
        let e = server_name(None, &tcp("bad host"), false).unwrap_err().to_string();
        assert!(e.contains("'bad host'") && e.contains("--sni NAME") && e.contains("--insecure"), "{e}");
        assert_eq!(
            server_name(None, &tcp("bad host"), true).unwrap(),
            ServerName::try_from("localhost").unwrap()
        );
        assert_eq!(
            name(None, tcp("under_score.example")),
            ServerName::try_from("under_score.example").unwrap()
        );
        assert_eq!(
            name(None, Endpoint::Unix("/tmp/r.sock".into())),
            ServerName::try_from("localhost").unwrap()
        );
        assert_eq!(name(Some("sni.example"), tcp("10.0.0.1")), ServerName::try_from("sni.example").unwrap());
        assert!(server_name(Some("not a name"), &tcp("h"), true).unwrap_err().to_string().contains("--sni"));
        assert!(unnamed(None, &Endpoint::Unix("/tmp/r.sock".into())));
        assert!(!unnamed(Some("sni.example"), &Endpoint::Unix("/tmp/r.sock".into())));
        assert!(!unnamed(None, &tcp("10.0.0.1")));
    }

    fn names(suites: &[SupportedCipherSuite]) -> Vec<CipherSuite> {
        suites.iter().map(|s| s.suite()).collect()
    }

    #[test]
    fn the_tables_name_every_suite_of_the_provider() {
        let mut listed: Vec<CipherSuite> = TLS13_SUITES.iter().chain(TLS12_SUITES).map(|s| s.id).collect();
        let mut all = names(ring::ALL_CIPHER_SUITES);
        listed.sort_by_key(|s| u16::from(*s));
        all.sort_by_key(|s| u16::from(*s));
        assert_eq!(listed, all);
        for s in TLS13_SUITES {
            assert_eq!(ring::ALL_CIPHER_SUITES.iter().find(|a| a.suite() == s.id).unwrap().version(), &TLS13);
        }
        for s in TLS12_SUITES {
            assert_eq!(ring::ALL_CIPHER_SUITES.iter().find(|a| a.suite() == s.id).unwrap().version(), &TLS12);
            // rustls' own name is IANA's.
            assert_eq!(format!("{:?}", s.id), s.iana);
        }
    }

    #[test]
    fn without_options_every_suite_is_offered() {
        let all = cipher_suites(None, None).unwrap();
        assert_eq!(all.len(), ring::ALL_CIPHER_SUITES.len());
        assert_eq!(all[0].version(), &TLS13);
    }

    #[test]
    fn ciphers_restrict_tls12_only_and_keep_their_order() {
        let s =
            cipher_suites(Some("ECDHE-RSA-CHACHA20-POLY1305:TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"), None)
                .unwrap();
        let tls12: Vec<_> = s.iter().filter(|s| s.version() == &TLS12).map(|s| s.suite()).collect();
        assert_eq!(
            tls12,
            [
                CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
                CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
            ]
        );
        assert_eq!(s.iter().filter(|s| s.version() == &TLS13).count(), TLS13_SUITES.len());
        // OpenSSL's other separators, any case, and a name given twice.
        let s = cipher_suites(Some("ecdhe-ecdsa-aes128-gcm-sha256, ECDHE-ECDSA-AES128-GCM-SHA256"), None)
            .unwrap();
        assert_eq!(s.iter().filter(|s| s.version() == &TLS12).count(), 1);
    }

    #[test]
    fn ciphersuites_restrict_tls13_only() {
        let s = cipher_suites(None, Some("TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256")).unwrap();
        assert_eq!(
            names(&s[..2]),
            [CipherSuite::TLS13_CHACHA20_POLY1305_SHA256, CipherSuite::TLS13_AES_128_GCM_SHA256]
        );
        assert_eq!(s.len(), 2 + TLS12_SUITES.len());
        // An empty list turns TLS 1.3 off, as in OpenSSL; both empty leave nothing.
        let s = cipher_suites(None, Some("")).unwrap();
        assert!(s.iter().all(|s| s.version() == &TLS12));
        assert!(cipher_suites(Some(""), Some("")).unwrap_err().to_string().contains("no cipher suite"));
    }

    #[test]
    fn bad_names_say_why_and_list_the_suites() {
        // A list that leaves nothing names what each rule matched and the suites there are.
        let e = cipher_suites(Some("HIGH:!aRSA:!ECDSA"), None).unwrap_err().to_string();
        assert!(
            e.contains("--tls-ciphers") && e.contains("HIGH matched 6, !aRSA matched 3, !ECDSA matched 3"),
            "{e}"
        );
        assert!(e.contains("ECDHE-RSA-AES128-GCM-SHA256 (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)"), "{e}");
        for name in
            ["ECDHE-RSA-AES128-SHA", "AES128-GCM-SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA", "MEDIUM", "kRSA"]
        {
            let e = cipher_suites(Some(name), None).unwrap_err().to_string();
            assert!(e.contains(&format!("{name} matched 0")) && e.contains("no CBC or CCM"), "{name}: {e}");
        }
        let e = cipher_suites(None, Some("TLS_AES_128_CCM_SHA256")).unwrap_err().to_string();
        assert!(e.contains("--tls-ciphersuites") && e.contains("not a suite rustls has"), "{e}");
        assert!(e.contains("TLS_AES_128_GCM_SHA256, TLS_CHACHA20"), "{e}");
        let e = cipher_suites(Some("TLS_AES_128_GCM_SHA256"), None).unwrap_err().to_string();
        assert!(e.contains("is a TLS 1.3 suite: give it to --tls-ciphersuites"), "{e}");
        let e = cipher_suites(None, Some("ECDHE-RSA-AES128-GCM-SHA256")).unwrap_err().to_string();
        assert!(e.contains("is a TLS 1.2 suite: give it to --tls-ciphers"), "{e}");
    }

    #[test]
    fn groups_follow_openssls_list() {
        let names = |l: &str| kx_groups(l).unwrap().iter().map(|g| g.name()).collect::<Vec<_>>();
        assert_eq!(names("P-256:X25519"), [rustls::NamedGroup::secp256r1, rustls::NamedGroup::X25519]);
        assert_eq!(
            names("prime256v1:secp384r1:?X448"),
            [rustls::NamedGroup::secp256r1, rustls::NamedGroup::secp384r1]
        );
        let e = kx_groups("X448").unwrap_err().to_string();
        assert!(e.contains("'X448' is not a group rustls has") && e.contains("X25519/x25519, P-256"), "{e}");
        assert!(kx_groups("?X448").unwrap_err().to_string().contains("leaves no group"));
    }

    /// The TLS 1.2 suites `list` leaves, by OpenSSL name, in order.
    fn tls12(list: &str) -> Vec<&'static str> {
        cipher_list(list).unwrap().iter().map(|s| s.openssl).collect()
    }

    #[test]
    fn cipher_lists_are_evaluated_as_openssl_does() {
        let all: Vec<&str> = TLS12_SUITES.iter().map(|s| s.openssl).collect();
        for list in [
            "DEFAULT",
            "ALL",
            "HIGH",
            "DEFAULT:-AES128-SHA256",
            "HIGH:!aNULL:!MD5",
            "ALL:COMPLEMENTOFDEFAULT",
        ] {
            assert_eq!(tls12(list), all, "{list}");
        }
        assert_eq!(
            tls12("ECDHE+AESGCM+aRSA"),
            ["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"]
        );
        assert_eq!(tls12("CHACHA20"), ["ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"]);
        // `-` removes, and a later rule may add back; `!` is for good.
        assert_eq!(tls12("AES128:-aRSA:ECDHE-RSA-AES128-GCM-SHA256").len(), 2);
        assert_eq!(tls12("AES128:!aRSA:ECDHE-RSA-AES128-GCM-SHA256"), ["ECDHE-ECDSA-AES128-GCM-SHA256"]);
        // `+` moves to the end; @STRENGTH sorts by key length, stable.
        assert_eq!(
            tls12("AESGCM:+AES256"),
            [
                "ECDHE-ECDSA-AES128-GCM-SHA256",
                "ECDHE-RSA-AES128-GCM-SHA256",
                "ECDHE-ECDSA-AES256-GCM-SHA384",
                "ECDHE-RSA-AES256-GCM-SHA384"
            ]
        );
        assert_eq!(
            tls12("AES128, CHACHA20 @STRENGTH")[..2],
            ["ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"]
        );
        // Exact names still work, in either spelling and any case.
        assert_eq!(tls12("tls_ecdhe_rsa_with_aes_128_gcm_sha256"), ["ECDHE-RSA-AES128-GCM-SHA256"]);
    }
}
