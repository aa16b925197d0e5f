//! The Prometheus exporter web configuration file (`--web.config.file`): the exporter-toolkit format that
//! node_exporter and dcgm-exporter read, so one file serves every exporter on a node.
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt
//!   key_file: server.key
//!   client_ca_file: ca.crt          # with client_auth_type RequireAndVerifyClientCert or VerifyClientCertIfGiven
//!   client_auth_type: RequireAndVerifyClientCert
//!   min_version: TLS12              # TLS12 (default) or TLS13; TLS10 and TLS11 mean TLS12 here
//! basic_auth_users:
//!   prometheus: $2y$10$...          # bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\n')
//! http_server_config:
//!   headers:
//!     Strict-Transport-Security: max-age=31536000
//! ```
//!
//! Relative paths are relative to the file's directory. An unknown key, a key of the toolkit that gpusight does
//! not implement, a file that cannot be read or a hash that is not bcrypt is an error naming the file and the
//! key: a typo must not leave the exporter open. TLS runs on rustls with the `ring` provider; certificates are
//! read once, at start (restart the exporter to rotate them).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderName, HeaderValue};
use serde::Deserialize;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// Why a web configuration file cannot be used: the file, and what in it.
#[derive(Debug, thiserror::Error)]
#[error("web config file {path}: {message}")]
pub struct WebConfigError {
    pub path: PathBuf,
    pub message: String,
}

/// The file as written. Every key is named so that an unknown one is refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebConfig {
    tls_server_config: Option<RawTls>,
    http_server_config: Option<RawHttp>,
    basic_auth_users: Option<BTreeMap<String, String>>,
}

/// `tls_server_config`. The toolkit's keys gpusight does not implement are read only to refuse them by name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert_file: Option<String>,
    key_file: Option<String>,
    client_ca_file: Option<String>,
    client_auth_type: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    cert: Option<serde_norway::Value>,
    key: Option<serde_norway::Value>,
    client_ca: Option<serde_norway::Value>,
    cipher_suites: Option<serde_norway::Value>,
    curve_preferences: Option<serde_norway::Value>,
    prefer_server_cipher_suites: Option<serde_norway::Value>,
    client_allowed_sans: Option<serde_norway::Value>,
}

/// `http_server_config`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    /// Accepted for files shared with Go exporters; gpusight serves HTTP/1.1 either way.
    #[serde(rename = "http2")]
    _http2: Option<bool>,
    headers: Option<BTreeMap<String, String>>,
}

/// The response headers the toolkit lets a web configuration file set.
const ALLOWED_HEADERS: [&str; 5] = [
    "Strict-Transport-Security",
    "X-Content-Type-Options",
    "X-Frame-Options",
    "X-XSS-Protection",
    "Content-Security-Policy",
];

/// How a client certificate is asked for (Go's `tls.ClientAuthType`, as the toolkit names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    NoClientCert,
    /// Asked for, not required, not verified.
    RequestClientCert,
    /// Required, not verified.
    RequireAnyClientCert,
    /// Verified against `client_ca_file` when given.
    VerifyClientCertIfGiven,
    /// Required and verified against `client_ca_file`: the only mode that authenticates the client.
    RequireAndVerifyClientCert,
}

impl ClientAuth {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "" | "NoClientCert" => Self::NoClientCert,
            "RequestClientCert" => Self::RequestClientCert,
            "RequireAnyClientCert" => Self::RequireAnyClientCert,
            "VerifyClientCertIfGiven" => Self::VerifyClientCertIfGiven,
            "RequireAndVerifyClientCert" => Self::RequireAndVerifyClientCert,
            _ => return None,
        })
    }
}

/// A usable web configuration: TLS, basic authentication and extra response headers.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// The file it came from.
    pub path: PathBuf,
    /// The TLS server configuration, when the file has `tls_server_config`.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The server's own certificate (the first of `cert_file`), which `gpusight healthcheck` trusts.
    pub server_cert: Option<CertificateDer<'static>>,
    /// How client certificates are asked for.
    pub client_auth: ClientAuth,
    /// Basic authentication, when the file has `basic_auth_users`.
    pub basic_auth: Option<Arc<BasicAuth>>,
    /// Headers added to every response.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl WebConfig {
    /// Reads and checks the file at `path`.
    ///
    /// # Errors
    /// The file cannot be read or parsed, has an unknown or unsupported key, or names a certificate, key or hash
    /// that cannot be used; the message names the file and the key.
    pub fn load(path: &Path) -> Result<Self, WebConfigError> {
        let error = |message: String| WebConfigError { path: path.to_owned(), message };
        let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read it: {e}")))?;
        Self::parse(&text, path).map_err(error)
    }

    /// Parses the text of the file at `path` (relative paths in it are relative to its directory).
    fn parse(text: &str, path: &Path) -> Result<Self, String> {
        let raw: RawWebConfig = if text.trim().is_empty() {
            RawWebConfig::default()
        } else {
            serde_norway::from_str(text).map_err(|e| e.to_string())?
        };
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        let headers = headers(raw.http_server_config.and_then(|h| h.headers).unwrap_or_default())?;
        let basic_auth = match raw.basic_auth_users {
            Some(users) if !users.is_empty() => Some(Arc::new(BasicAuth::new(users)?)),
            _ => None,
        };
        let (tls, server_cert, client_auth) = match raw.tls_server_config {
            Some(tls) => {
                let (config, cert, auth) = tls_config(tls, dir)?;
                (Some(Arc::new(config)), Some(cert), auth)
            }
            None => (None, None, ClientAuth::NoClientCert),
        };
        Ok(Self { path: path.to_owned(), tls, server_cert, client_auth, basic_auth, headers })
    }

    /// Whether a client must prove who it is: basic authentication, or a client certificate verified against a
    /// CA. Without either, `/metrics` is open to whoever reaches the port.
    #[must_use]
    pub fn authenticates(&self) -> bool {
        self.basic_auth.is_some() || self.client_auth == ClientAuth::RequireAndVerifyClientCert
    }
}

/// The extra response headers, only those the toolkit allows.
fn headers(raw: BTreeMap<String, String>) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    raw.into_iter()
        .map(|(name, value)| {
            if !ALLOWED_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(&name)) {
                return Err(format!(
                    "http_server_config.headers.{name}: not a header the file may set (only {})",
                    ALLOWED_HEADERS.join(", ")
                ));
            }
            let bad = |e: &dyn std::fmt::Display| format!("http_server_config.headers.{name}: {e}");
            Ok((
                HeaderName::try_from(name.as_str()).map_err(|e| bad(&e))?,
                HeaderValue::try_from(value.as_str()).map_err(|e| bad(&e))?,
            ))
        })
        .collect()
}

/// The rustls server configuration of `tls_server_config`, the server's certificate and the client-auth mode.
fn tls_config(tls: RawTls, dir: &Path) -> Result<(rustls::ServerConfig, CertificateDer<'static>, ClientAuth), String> {
    refuse_unsupported(&tls)?;
    let key = "tls_server_config";
    let cert_file = tls.cert_file.filter(|f| !f.is_empty()).ok_or(format!("{key}.cert_file is missing"))?;
    let key_file = tls.key_file.filter(|f| !f.is_empty()).ok_or(format!("{key}.key_file is missing"))?;
    let certs = read_certs(&dir.join(&cert_file), &format!("{key}.cert_file"))?;
    let private_key = read_key(&dir.join(&key_file))?;
    let client_auth = match tls.client_auth_type.as_deref() {
        None => ClientAuth::NoClientCert,
        Some(text) => ClientAuth::parse(text).ok_or_else(|| {
            format!(
                "{key}.client_auth_type: '{text}' is not one of NoClientCert, RequestClientCert, \
                 RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"
            )
        })?,
    };
    let client_ca = tls.client_ca_file.filter(|f| !f.is_empty());
    let versions = versions(tls.min_version.as_deref(), tls.max_version.as_deref())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| format!("{key}: {e}"))?;
    let builder = match (client_auth, client_ca) {
        (ClientAuth::NoClientCert, Some(_)) => {
            return Err(format!(
                "{key}.client_ca_file is set but client_auth_type is NoClientCert: set client_auth_type \
                 (e.g. RequireAndVerifyClientCert) or drop client_ca_file"
            ));
        }
        (ClientAuth::NoClientCert, None) => builder.with_no_client_auth(),
        (ClientAuth::RequestClientCert | ClientAuth::RequireAnyClientCert, _) => {
            let mandatory = client_auth == ClientAuth::RequireAnyClientCert;
            let algorithms = provider.signature_verification_algorithms;
            builder.with_client_cert_verifier(Arc::new(AnyClientCert { mandatory, algorithms }))
        }
        (ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert, None) => {
            return Err(format!("{key}.client_ca_file is required with client_auth_type {client_auth:?}"));
        }
        (ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert, Some(ca)) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_certs(&dir.join(&ca), &format!("{key}.client_ca_file"))? {
                roots.add(cert).map_err(|e| format!("{key}.client_ca_file {ca}: {e}"))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if client_auth == ClientAuth::VerifyClientCertIfGiven {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(verifier.build().map_err(|e| format!("{key}.client_ca_file {ca}: {e}"))?)
        }
    };
    let server_cert = certs.first().cloned().ok_or(format!("{key}.cert_file {cert_file} has no certificate"))?;
    let mut config = builder
        .with_single_cert(certs, private_key)
        .map_err(|e| format!("{key}: {cert_file} and {key_file} do not make a usable pair: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((config, server_cert, client_auth))
}

/// The toolkit's keys gpusight does not implement: each refused by name, rather than silently ignored.
fn refuse_unsupported(tls: &RawTls) -> Result<(), String> {
    let unsupported = [
        ("cert", tls.cert.is_some(), "give the certificate as a file with cert_file"),
        ("key", tls.key.is_some(), "give the key as a file with key_file"),
        ("client_ca", tls.client_ca.is_some(), "give the CA as a file with client_ca_file"),
        ("cipher_suites", tls.cipher_suites.is_some(), "rustls offers only its own safe suites"),
        ("curve_preferences", tls.curve_preferences.is_some(), "rustls chooses the key exchange itself"),
        ("prefer_server_cipher_suites", tls.prefer_server_cipher_suites.is_some(), "rustls decides the order"),
        ("client_allowed_sans", tls.client_allowed_sans.is_some(), "trust a client CA that issues only them"),
    ];
    match unsupported.into_iter().find(|(_, given, _)| *given) {
        Some((name, _, instead)) => Err(format!("tls_server_config.{name} is not supported by gpusight: {instead}")),
        None => Ok(()),
    }
}

/// The protocol versions from `min_version` and `max_version` (rustls has TLS 1.2 and 1.3 only).
fn versions(min: Option<&str>, max: Option<&str>) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    let rank = |key: &str, text: &str| match text {
        "TLS10" | "TLS11" | "TLS12" => Ok(12),
        "TLS13" => Ok(13),
        other => Err(format!("tls_server_config.{key}: '{other}' is not one of TLS10, TLS11, TLS12, TLS13")),
    };
    let low = min.map_or(Ok(12), |m| rank("min_version", m))?;
    let high = max.map_or(Ok(13), |m| rank("max_version", m))?;
    if low > high {
        return Err("tls_server_config: min_version is above max_version".to_owned());
    }
    Ok([(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)]
        .into_iter()
        .filter(|(v, _)| (low..=high).contains(v))
        .map(|(_, version)| version)
        .collect())
}

/// Every certificate of a PEM file.
fn read_certs(path: &Path, key: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{key} {}: {e}", path.display()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{key} {}: not a PEM certificate: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{key} {}: no PEM certificate in it", path.display()));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let key = "tls_server_config.key_file";
    let bytes = std::fs::read(path).map_err(|e| format!("{key} {}: {e}", path.display()))?;
    PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|e| format!("{key} {}: no usable PEM private key: {e}", path.display()))
}

/// `RequestClientCert` and `RequireAnyClientCert`: a client certificate is asked for (or required) and its
/// handshake signature checked, but it is not verified against any CA, as Go's TLS does in these modes. It
/// proves nothing about who the client is.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::server::danger::ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A TLS client configuration that trusts exactly one server certificate (the exporter's own, from its web
/// configuration file), whatever name the server is reached by: what `gpusight healthcheck` uses on loopback.
///
/// # Errors
/// When rustls refuses the provider's defaults (it does not in practice).
pub fn pinned_client(server_cert: CertificateDer<'static>) -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned { cert: server_cert, algorithms }))
        .with_no_client_auth())
}

/// Trusts one certificate, byte for byte.
#[derive(Debug)]
struct Pinned {
    cert: CertificateDer<'static>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.cert.as_ref() {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::ApplicationVerificationFailure))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The most bcrypt verifications run at once: each takes tens of milliseconds of one core, so a flood of wrong
/// passwords costs at most this many cores and waits, and never stalls the server's own thread.
const VERIFY_AT_ONCE: usize = 2;

/// The most successful verifications remembered (cleared when full).
const CACHE_ENTRIES: usize = 256;

/// Basic authentication against bcrypt hashes. A success is remembered (as a SHA-256 of user, password and hash,
/// never the password), so Prometheus's scrape every few seconds costs one hash, not one bcrypt run.
#[derive(Debug)]
pub struct BasicAuth {
    users: BTreeMap<String, String>,
    /// A hash of the same cost to verify against for an unknown user, so that the time taken does not say which
    /// users exist.
    decoy: String,
    verified: Mutex<HashSet<[u8; 32]>>,
    slots: Arc<tokio::sync::Semaphore>,
}

impl BasicAuth {
    /// Checks that every hash is bcrypt.
    ///
    /// # Errors
    /// A user whose hash is not a bcrypt hash, naming the user.
    pub fn new(users: BTreeMap<String, String>) -> Result<Self, String> {
        let mut cost = 10;
        for (user, hash) in &users {
            let parts: bcrypt::HashParts = hash.parse().map_err(|e| {
                format!("basic_auth_users.{user}: not a bcrypt hash ({e}); make one with htpasswd -nBC 10 \"\" | tr -d ':\\n'")
            })?;
            cost = parts.get_cost();
        }
        let decoy = bcrypt::hash_with_salt("gpusight decoy", cost, [0x5a; 16])
            .map_err(|e| format!("basic_auth_users: {e}"))?
            .format_for_version(bcrypt::Version::TwoB);
        Ok(Self {
            users,
            decoy,
            verified: Mutex::new(HashSet::new()),
            slots: Arc::new(tokio::sync::Semaphore::new(VERIFY_AT_ONCE)),
        })
    }

    /// Whether an `Authorization` header value names a user with the right password.
    pub async fn allows(self: &Arc<Self>, header: Option<&HeaderValue>) -> bool {
        let Some((user, password)) = header.and_then(|h| credentials(h.as_bytes())) else { return false };
        let hash = self.users.get(&user);
        let key = cache_key(&user, &password, hash.map_or("", String::as_str));
        if hash.is_some() && self.verified.lock().unwrap_or_else(PoisonError::into_inner).contains(&key) {
            return true;
        }
        let Ok(_slot) = Arc::clone(&self.slots).acquire_owned().await else { return false };
        let known = hash.is_some();
        let against = hash.cloned().unwrap_or_else(|| self.decoy.clone());
        let matches = tokio::task::spawn_blocking(move || bcrypt::verify(password, &against).unwrap_or(false))
            .await
            .unwrap_or(false);
        if matches && known {
            let mut verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
            if verified.len() >= CACHE_ENTRIES {
                verified.clear();
            }
            verified.insert(key);
        }
        matches && known
    }
}

/// The user and password of a `Basic` authorization header.
fn credentials(header: &[u8]) -> Option<(String, String)> {
    use base64::Engine as _;
    let text = std::str::from_utf8(header).ok()?.trim();
    let (scheme, encoded) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// SHA-256 of user, password and hash, with separators: what the cache of successes holds.
fn cache_key(user: &str, password: &str, hash: &str) -> [u8; 32] {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [user, password, hash] {
        context.update(&(part.len() as u64).to_le_bytes());
        context.update(part.as_bytes());
    }
    let mut key = [0; 32];
    key.copy_from_slice(context.finish().as_ref());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<WebConfig, String> {
        WebConfig::parse(text, Path::new("/nonexistent/web.yml"))
    }

    #[test]
    fn unknown_and_unsupported_keys_are_refused_by_name() {
        let error = parse("basic_auth_user:\n  a: b\n").expect_err("typo");
        assert!(error.contains("basic_auth_user"), "{error}");
        let error = parse("tls_server_config:\n  cert_fil: x\n").expect_err("typo");
        assert!(error.contains("cert_fil"), "{error}");
        let error = parse("tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n").expect_err("no");
        assert!(error.contains("tls_server_config.cipher_suites is not supported"), "{error}");
        let error = parse("http_server_config:\n  headers:\n    X-Evil: 1\n").expect_err("header");
        assert!(error.contains("headers.X-Evil"), "{error}");
    }

    #[test]
    fn bad_hashes_and_missing_files_are_named() {
        let error = parse("basic_auth_users:\n  prometheus: secret\n").expect_err("plain text");
        assert!(error.contains("basic_auth_users.prometheus: not a bcrypt hash"), "{error}");
        let error = parse("tls_server_config:\n  key_file: k.pem\n").expect_err("no cert");
        assert!(error.contains("tls_server_config.cert_file is missing"), "{error}");
        let error = parse("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n").expect_err("no file");
        assert!(error.contains("tls_server_config.cert_file /nonexistent/c.pem"), "{error}");
    }

    #[test]
    fn an_empty_file_configures_nothing() {
        let config = parse("").expect("empty");
        assert!(config.tls.is_none() && config.basic_auth.is_none() && !config.authenticates());
        let config = parse("http_server_config:\n  http2: true\n  headers:\n    X-Frame-Options: deny\n").expect("ok");
        assert_eq!(config.headers.len(), 1);
    }

    #[test]
    fn versions_follow_min_and_max() {
        assert_eq!(versions(None, None).expect("default").len(), 2);
        assert_eq!(versions(Some("TLS13"), None).expect("1.3").len(), 1);
        assert_eq!(versions(Some("TLS10"), Some("TLS12")).expect("1.2").len(), 1);
        assert!(versions(Some("TLS13"), Some("TLS12")).is_err());
        assert!(versions(Some("SSL3"), None).is_err());
    }

    #[test]
    fn basic_credentials_parse() {
        assert_eq!(credentials(b"Basic dXNlcjpwYTpzcw=="), Some(("user".to_owned(), "pa:ss".to_owned())));
        assert_eq!(credentials(b"Bearer abc"), None);
        assert_eq!(credentials(b"Basic !!!"), None);
        assert_ne!(cache_key("a", "bc", "h"), cache_key("ab", "c", "h"));
    }

    #[test]
    fn right_password_passes_wrong_one_and_unknown_user_do_not() {
        let hash =
            bcrypt::hash_with_salt("s3cret", 4, [7; 16]).expect("hash").format_for_version(bcrypt::Version::TwoY);
        let auth = Arc::new(BasicAuth::new(BTreeMap::from([("prom".to_owned(), hash)])).expect("auth"));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let header = |text: &str| {
            use base64::Engine as _;
            HeaderValue::try_from(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(text)))
                .expect("header")
        };
        runtime.block_on(async {
            assert!(auth.allows(Some(&header("prom:s3cret"))).await);
            // The second time from the cache.
            assert!(auth.allows(Some(&header("prom:s3cret"))).await);
            assert!(!auth.allows(Some(&header("prom:wrong"))).await);
            assert!(!auth.allows(Some(&header("nobody:s3cret"))).await);
            assert!(!auth.allows(None).await);
        });
    }
}
