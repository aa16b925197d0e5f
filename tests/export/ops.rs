//! The exporter binary as an operator runs it: the hostname it labels series with (NODE_NAME, --hostname), the
//! series it adds (HBM temperature, NVLink bytes, the default power limit), TLS and basic authentication from a
//! web configuration file, the built-in health probe, and a config file with an unknown key.

// Helpers outside #[test] fns unwrap too; the tests start the binary (clippy.toml).
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls;

use crate::common::{BIN, KillOnDrop, command, free_port, http_agent, poll, temp_dir};

/// A running `gpusight export` on a free loopback port, its stderr in a file.
struct Exporter {
    _child: KillOnDrop,
    addr: String,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl Exporter {
    /// Starts `gpusight ARGS export --listen ADDR EXPORT_ARGS` with `envs`, and waits until it accepts connections.
    fn start(args: &[&str], export_args: &[&str], envs: &[(&str, &str)]) -> Self {
        let dir = temp_dir();
        let stderr = dir.path().join("stderr");
        let addr = format!("127.0.0.1:{}", free_port());
        let mut command = command(args);
        command.args(["--interval", "0.2", "export", "--listen", &addr]).args(export_args);
        command.env_remove("NODE_NAME").env_remove("GPUSIGHT_WEB_CONFIG_FILE");
        for (key, value) in envs {
            command.env(key, value);
        }
        let child = command.stdout(Stdio::null()).stderr(std::fs::File::create(&stderr).unwrap()).spawn().unwrap();
        let child = KillOnDrop(child);
        poll("the exporter accepts connections", Duration::from_secs(30), || {
            std::net::TcpStream::connect(&addr).map(drop).map_err(|e| e.to_string())
        });
        Self { _child: child, addr, stderr, _dir: dir }
    }

    /// `/metrics` once it has a sample.
    fn metrics(&self) -> String {
        poll("/metrics has a sample", Duration::from_secs(30), || match http_get(&self.addr, "/metrics") {
            (200, body) => Ok(body),
            (status, body) => Err(format!("{status}: {body}")),
        })
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap()
    }
}

/// A plain HTTP GET: the status and body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    match http_agent(Duration::from_secs(5)).get(&format!("http://{addr}{path}")).call() {
        Ok(mut response) => (response.status().as_u16(), response.body_mut().read_to_string().unwrap_or_default()),
        Err(e) => (0, e.to_string()),
    }
}

/// Every `hostname="..."` value in an exposition.
fn hostnames(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split("hostname=\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn node_name_names_every_series_and_the_flag_wins_over_it() {
    let exporter = Exporter::start(&["--synthetic", "mixed:2"], &[], &[("NODE_NAME", "node-a")]);
    let text = exporter.metrics();
    assert!(text.lines().filter(|l| l.contains("hostname=")).count() > 20, "{text}");
    assert_eq!(hostnames(&text), ["node-a".to_owned()].into(), "every series carries the node's name");
    drop(exporter);
    let exporter = Exporter::start(&["--synthetic", "idle", "--hostname", "node-b"], &[], &[("NODE_NAME", "node-a")]);
    assert_eq!(hostnames(&exporter.metrics()), ["node-b".to_owned()].into());
}

/// The value of the first sample of `name` in an exposition.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn hbm_temperature_nvlink_and_the_default_power_limit_where_read_and_absent_where_not() {
    let hot = Exporter::start(&["--synthetic", "hbm-hot"], &[], &[]).metrics();
    assert_eq!(sample(&hot, "DCGM_FI_DEV_MEMORY_TEMP"), Some(92.0), "{hot}");
    assert!(hot.contains("# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge"));
    assert_eq!(sample(&hot, "gpusight_power_limit_default_watts"), Some(700.0), "{hot}");
    assert!(!hot.contains("DCGM_FI_PROF_NVLINK"), "no NVLink reading, no NVLink series: {hot}");

    let ranks = Exporter::start(&["--synthetic", "straggler"], &[], &[]).metrics();
    // 900 MiB/s of GPM in bytes per second, as dcgm-exporter writes it.
    assert_eq!(sample(&ranks, "DCGM_FI_PROF_NVLINK_RX_BYTES"), Some(900.0 * 1_048_576.0), "{ranks}");
    assert_eq!(sample(&ranks, "DCGM_FI_PROF_NVLINK_TX_BYTES"), Some(900.0 * 1_048_576.0), "{ranks}");
    assert!(!ranks.contains("DCGM_FI_DEV_MEMORY_TEMP"), "no HBM reading, no series (never a 0): {ranks}");

    let idle = Exporter::start(&["--synthetic", "idle"], &[], &[]).metrics();
    for absent in ["DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_PROF_NVLINK_RX_BYTES", "DCGM_FI_PROF_NVLINK_TX_BYTES"] {
        assert!(!idle.contains(absent), "{absent} without a reading: {idle}");
    }
}

#[test]
fn the_healthcheck_probes_a_real_exporter() {
    let exporter = Exporter::start(&["--synthetic", "idle"], &[], &[]);
    exporter.metrics();
    let healthcheck = |args: &[&str], listen: Option<&str>| {
        let mut command = Command::new(BIN);
        command.arg("healthcheck").args(args).env_remove("GPUSIGHT_WEB_CONFIG_FILE").env_remove("GPUSIGHT_LISTEN");
        if let Some(listen) = listen {
            command.env("GPUSIGHT_LISTEN", listen);
        }
        command.output().unwrap()
    };
    let url = format!("http://{}/healthz", exporter.addr);
    let output = healthcheck(&["--url", &url], None);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("healthy: ok"), "{output:?}");
    // Without --url, the port of GPUSIGHT_LISTEN (0.0.0.0 is probed on loopback), as in the image.
    let port = exporter.addr.rsplit(':').next().unwrap();
    let output = healthcheck(&[], Some(&format!("0.0.0.0:{port}")));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // Nothing listening: unhealthy, exit 1, one line saying why.
    let output = healthcheck(&["--url", &format!("http://127.0.0.1:{}/healthz", free_port()), "--timeout", "2s"], None);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unhealthy: cannot connect"), "{stderr}");
    // A 404 is not healthy either.
    let output = healthcheck(&["--url", &format!("http://{}/nope", exporter.addr)], None);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
}

/// A CA, a server certificate for localhost signed by it, and a client certificate signed by it, as PEM files.
struct Pki {
    dir: tempfile::TempDir,
    ca: rustls::pki_types::CertificateDer<'static>,
    client_cert: rustls::pki_types::CertificateDer<'static>,
    client_key: String,
}

fn pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "gpusight test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf = |name: &str, usage: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_owned()]).unwrap();
        params.extended_key_usages = vec![usage];
        (params.signed_by(&key, &ca).unwrap(), key)
    };
    let (server, server_key) = leaf("localhost", ExtendedKeyUsagePurpose::ServerAuth);
    let (client, client_key) = leaf("prometheus", ExtendedKeyUsagePurpose::ClientAuth);
    let dir = temp_dir();
    std::fs::write(dir.path().join("server.crt"), server.pem()).unwrap();
    std::fs::write(dir.path().join("server.key"), server_key.serialize_pem()).unwrap();
    std::fs::write(dir.path().join("ca.crt"), ca.pem()).unwrap();
    Pki { dir, ca: ca.der().clone(), client_cert: client.der().clone(), client_key: client_key.serialize_pem() }
}

/// A GET over TLS that verifies the server against `pki`'s CA (as `localhost`), optionally with basic credentials
/// and the client certificate: the status and the response head and body, or why there is none.
fn https_get(
    addr: &str,
    path: &str,
    pki: &Pki,
    user: Option<&str>,
    with_client_cert: bool,
) -> Result<(u16, String), String> {
    use rustls::pki_types::PrivateKeyDer;
    use rustls::pki_types::pem::PemObject as _;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca.clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = if with_client_cert {
        let key = PrivateKeyDer::from_pem_slice(pki.client_key.as_bytes()).unwrap();
        builder.with_client_auth_cert(vec![pki.client_cert.clone()], key).unwrap()
    } else {
        builder.with_no_client_auth()
    };
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tls = rustls::StreamOwned::new(connection, tcp);
    let auth = user.map(|u| {
        use base64::Engine as _;
        format!("Authorization: Basic {}\r\n", base64::engine::general_purpose::STANDARD.encode(u))
    });
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{}Connection: close\r\n\r\n", auth.unwrap_or_default());
    tls.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    match tls.read_to_end(&mut answer) {
        Ok(_) => {}
        Err(e) if !answer.is_empty() && e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(e.to_string()),
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).ok_or_else(|| format!("not HTTP: {text}"))?;
    Ok((status, text))
}

fn web_config(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("web.yml");
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn tls_and_basic_auth_from_a_web_config_file() {
    let pki = pki();
    let hash = bcrypt::hash_with_salt("s3cret", 4, [3; 16]).unwrap().format_for_version(bcrypt::Version::TwoY);
    let config = web_config(
        pki.dir.path(),
        &format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: \
             '{hash}'\nhttp_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
        ),
    );
    let exporter = Exporter::start(&["--synthetic", "idle"], &["--web.config.file", config.to_str().unwrap()], &[]);
    let (status, text) = poll("the exporter answers over TLS", Duration::from_secs(30), || {
        https_get(&exporter.addr, "/metrics", &pki, None, false)
    });
    assert_eq!(status, 401, "{text}");
    assert!(text.to_ascii_lowercase().contains("www-authenticate: basic"), "{text}");
    let (status, text) = https_get(&exporter.addr, "/metrics", &pki, Some("prometheus:wrong"), false).unwrap();
    assert_eq!(status, 401, "{text}");
    let (status, text) = https_get(&exporter.addr, "/metrics", &pki, Some("nobody:s3cret"), false).unwrap();
    assert_eq!(status, 401, "{text}");
    let (status, text) = poll("a sample", Duration::from_secs(30), || {
        match https_get(&exporter.addr, "/metrics", &pki, Some("prometheus:s3cret"), false)? {
            (503, _) => Err("no sample yet".to_owned()),
            answer => Ok(answer),
        }
    });
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("DCGM_FI_DEV_GPU_UTIL{") && text.to_ascii_lowercase().contains("x-content-type-options: nosniff")
    );
    // /healthz needs no credentials, so probes need none; plain HTTP gets nothing.
    assert_eq!(https_get(&exporter.addr, "/healthz", &pki, None, false).unwrap().0, 200);
    assert_eq!(http_get(&exporter.addr, "/metrics").0, 0, "plain HTTP on a TLS port");
    // The probe trusts exactly the configured certificate.
    let output = Command::new(BIN)
        .args(["healthcheck", "--url", &format!("https://{}/healthz", exporter.addr), "--web.config.file"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // Basic auth is authentication: no warning about an open /metrics (the warning is only for non-loopback, so
    // the log must not mention it either way here), and the log says https.
    assert!(exporter.stderr().contains("serving https://"), "{}", exporter.stderr());
}

#[test]
fn a_client_certificate_can_be_required() {
    let pki = pki();
    let config = web_config(
        pki.dir.path(),
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: ca.crt\n  \
         client_auth_type: RequireAndVerifyClientCert\n",
    );
    let exporter = Exporter::start(&["--synthetic", "idle"], &["--web.config.file", config.to_str().unwrap()], &[]);
    let answer =
        poll("the exporter answers a client with a certificate", Duration::from_secs(30), || {
            match https_get(&exporter.addr, "/metrics", &pki, None, true)? {
                (503, _) => Err("no sample yet".to_owned()),
                answer => Ok(answer),
            }
        });
    assert_eq!(answer.0, 200, "{}", answer.1);
    assert!(https_get(&exporter.addr, "/metrics", &pki, None, false).is_err(), "no client certificate, no answer");
}

#[test]
fn a_bad_web_config_file_stops_the_exporter_naming_the_file_and_key() {
    let dir = temp_dir();
    let config = web_config(dir.path(), "basic_auth_users:\n  prometheus: plaintext\n");
    let output = Command::new(BIN)
        .args(["--synthetic", "idle", "export", "--listen", "127.0.0.1:0", "--web.config.file"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(config.to_str().unwrap()) && stderr.contains("basic_auth_users.prometheus"), "{stderr}");
}

#[test]
fn an_unknown_config_key_is_a_warning_for_daemons_and_an_error_for_config_check() {
    let dir = temp_dir();
    let config = dir.path().join("gpusight.toml");
    std::fs::write(&config, "[general]\ninterval_s = 0.5\nfrobnicate = 1\n\n[ui]\ntheme = \"purple\"\n").unwrap();
    let config_arg = config.to_str().unwrap();
    // export starts, says what it ignored, and serves.
    let exporter = Exporter::start(&["--synthetic", "idle", "--config", config_arg], &[], &[]);
    assert!(exporter.metrics().contains("DCGM_FI_DEV_GPU_UTIL{"));
    let stderr = exporter.stderr();
    assert!(stderr.contains("line 3, unknown key general.frobnicate: ignored"), "{stderr}");
    assert!(stderr.contains("[ui] is ignored here"), "{stderr}");
    // --status still prints its line.
    let output = Command::new(BIN).args(["--synthetic", "idle", "--status", "--config", config_arg]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(!String::from_utf8_lossy(&output.stdout).trim().is_empty());
    // config check is strict: exit 3 (could not run: a bad config file) naming each problem.
    let output = Command::new(BIN).args(["config", "check", config_arg]).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("line 3, unknown key general.frobnicate") && stderr.contains("purple"), "{stderr}");
    std::fs::write(&config, "[general]\ninterval_s = 0.5\n").unwrap();
    let output = Command::new(BIN).args(["config", "check", config_arg]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).ends_with(": ok\n"), "{output:?}");
}
