//! `gpusight healthcheck`: asks a running exporter's `/healthz` and exits 0 when it answers 200, 1 otherwise, so a
//! container's HEALTHCHECK needs no curl in the image. Over https it trusts exactly the certificate of the
//! exporter's web configuration file (the probe runs beside the exporter, usually on loopback).

use std::io::Read as _;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs as _};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls;

use crate::export::web_config::{WebConfig, pinned_client};

use super::warn;

/// The most of an answer read: `/healthz` says a line or two.
const MAX_ANSWER: u64 = 64 << 10;

/// Where to probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    pub host: String,
    pub port: u16,
    pub path: String,
}

/// Probes and returns the exit code: 0 when `/healthz` answered 200, 1 for anything else (an answer of 503, no
/// answer, a file or URL that cannot be used), with one line on stderr saying which.
pub(super) fn run(url: Option<&str>, web_config: Option<&Path>, timeout: Duration) -> i32 {
    match probe_once(url, web_config, timeout) {
        Ok((200, first_line)) => super::emit_or_fail(&format!("healthy: {first_line}\n"), 0),
        Ok((status, first_line)) => {
            warn(&format!("unhealthy: HTTP {status}: {first_line}"));
            crate::exit::WARNING
        }
        Err(message) => {
            warn(&format!("unhealthy: {message}"));
            crate::exit::WARNING
        }
    }
}

fn probe_once(url: Option<&str>, web_config: Option<&Path>, timeout: Duration) -> Result<(u16, String), String> {
    let web = web_config.map(WebConfig::load).transpose().map_err(|e| e.to_string())?;
    let pinned = web.as_ref().and_then(|w| w.server_cert.clone());
    let target = match url {
        Some(url) => parse_url(url)?,
        None => default_target(std::env::var("GPUSIGHT_LISTEN").ok().as_deref(), pinned.is_some())?,
    };
    let tls = match (target.https, pinned) {
        (false, _) => None,
        (true, Some(cert)) => Some(pinned_client(cert).map_err(|e| format!("TLS: {e}"))?),
        (true, None) => {
            return Err("https needs the exporter's --web.config.file to know which certificate to trust".to_owned());
        }
    };
    let (status, body) = get(&target, tls, timeout)?;
    Ok((status, body.lines().next().unwrap_or("").to_owned()))
}

/// The URL of the exporter `GPUSIGHT_LISTEN` names (an unspecified address is probed on loopback), else
/// `127.0.0.1:9400`.
///
/// # Errors
/// A `GPUSIGHT_LISTEN` that is not an address.
pub fn default_target(listen: Option<&str>, https: bool) -> Result<Target, String> {
    let addr: SocketAddr = match listen.map(str::trim).filter(|l| !l.is_empty()) {
        Some(listen) => crate::cli::parse_listen(listen).map_err(|e| format!("GPUSIGHT_LISTEN: {e}"))?,
        None => SocketAddr::from(([127, 0, 0, 1], 9400)),
    };
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv6() => "::1".to_owned(),
        ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
        ip => ip.to_string(),
    };
    Ok(Target { https, host, port: addr.port(), path: "/healthz".to_owned() })
}

/// Parses `http[s]://HOST[:PORT][/PATH]` (`[::1]` for IPv6; the port defaults to 9400, the path to `/healthz`).
///
/// # Errors
/// Another scheme, no host, or a port that is not a number.
pub fn parse_url(url: &str) -> Result<Target, String> {
    let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(format!("'{url}' is not an http:// or https:// URL"));
    };
    let (authority, path) = rest.find('/').map_or((rest, "/healthz"), |at| rest.split_at(at));
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').ok_or_else(|| format!("'{url}': unclosed [ in the host"))?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(format!("'{url}' has no host"));
    }
    let port = port.map_or(Ok(9400), |p| p.parse().map_err(|_| format!("'{url}': '{p}' is not a port")))?;
    Ok(Target { https, host: host.to_owned(), port, path: path.to_owned() })
}

/// One `GET` with `Connection: close`: the status and the body (bounded).
fn get(target: &Target, tls: Option<rustls::ClientConfig>, timeout: Duration) -> Result<(u16, String), String> {
    let where_ = format!("{}:{}", target.host, target.port);
    let addr = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {where_}: {e}"))?
        .next()
        .ok_or_else(|| format!("{where_} has no address"))?;
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("cannot connect to {where_}: {e}"))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let host = if target.host.contains(':') { format!("[{}]", target.host) } else { target.host.clone() };
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {host}:{}\r\nUser-Agent: gpusight-healthcheck\r\nConnection: close\r\n\r\n",
        target.path, target.port
    );
    let answer = match tls {
        None => exchange(stream, &request),
        Some(config) => {
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|e| format!("'{}' is not a TLS server name: {e}", target.host))?;
            let connection = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| format!("TLS: {e}"))?;
            exchange(rustls::StreamOwned::new(connection, stream), &request)
        }
    }
    .map_err(|e| format!("{where_}: {e}"))?;
    parse_answer(&answer).ok_or_else(|| format!("{where_} did not answer HTTP"))
}

/// Writes the request and reads the answer until the server closes (a TLS close without close_notify ends it
/// too).
fn exchange(mut stream: impl std::io::Read + std::io::Write, request: &str) -> std::io::Result<Vec<u8>> {
    stream.write_all(request.as_bytes())?;
    stream.flush()?;
    let mut answer = Vec::new();
    match stream.take(MAX_ANSWER).read_to_end(&mut answer) {
        Ok(_) => Ok(answer),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => Ok(answer),
        Err(e) => Err(e),
    }
}

/// The status code and body of an HTTP/1.x answer.
fn parse_answer(answer: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(answer);
    let status = text.strip_prefix("HTTP/1.")?.get(2..5)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    Some((status, body.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let t = parse_url("http://127.0.0.1:9400/healthz").expect("url");
        assert_eq!((t.https, t.host.as_str(), t.port, t.path.as_str()), (false, "127.0.0.1", 9400, "/healthz"));
        let t = parse_url("https://[::1]:9500").expect("url");
        assert_eq!((t.https, t.host.as_str(), t.port, t.path.as_str()), (true, "::1", 9500, "/healthz"));
        let t = parse_url("http://localhost/x").expect("url");
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("localhost", 9400, "/x"));
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("http://:9400").is_err());
        assert!(parse_url("http://h:port").is_err());
    }

    #[test]
    fn the_default_target_follows_gpusight_listen() {
        let t = default_target(Some("0.0.0.0:9500"), false).expect("target");
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 9500));
        let t = default_target(Some("[::]:9400"), true).expect("target");
        assert_eq!((t.host.as_str(), t.https), ("::1", true));
        let t = default_target(None, false).expect("target");
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 9400));
        assert!(default_target(Some("nonsense"), false).is_err());
    }

    #[test]
    fn answers_parse() {
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nok\nlast"), Some((200, "ok\nlast".to_owned())));
        assert_eq!(parse_answer(b"HTTP/1.0 503 x\r\n\r\n"), Some((503, String::new())));
        assert_eq!(parse_answer(b"SSH-2.0"), None);
    }
}
