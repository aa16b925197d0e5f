//! The metrics server on loopback: routes, content type, the state before the first sample, a port in use, and
//! a malformed request that must not block other clients. `promtool check metrics` on the exposition too.

// Helpers outside #[test] fns unwrap too; tests may start other programs (clippy.toml).
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests start servers and clients and may panic on broken fixtures"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use gpusight::export::metrics::CONTENT_TYPE;
use gpusight::export::{ExportError, ExportHandle, ExportServer};

use crate::common::{http_agent, required, synthetic_pipeline};

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let mut response = http_agent(Duration::from_secs(5)).get(&format!("http://{addr}{path}")).call().unwrap();
    let content_type =
        response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (response.status().as_u16(), content_type, response.body_mut().read_to_string().unwrap())
}

#[test]
fn routes_and_first_sample() {
    let handle = ExportHandle::new();
    let server = ExportServer::bind(loopback(), handle.clone()).unwrap().spawn().unwrap();
    let addr = server.local_addr();

    let (status, _, body) = get(addr, "/metrics");
    assert_eq!(status, 503, "{body}");
    let (status, _, body) = get(addr, "/healthz");
    assert_eq!((status, body.as_str()), (503, "waiting for the first sample\n"));

    handle.publish(&synthetic_pipeline("compute:2", 6, 600));
    let (status, content_type, body) = get(addr, "/metrics");
    assert_eq!(status, 200);
    assert_eq!(content_type, CONTENT_TYPE);
    assert!(body.contains(r#"DCGM_FI_DEV_GPU_UTIL{gpu="1""#), "{body}");
    assert!(body.contains(r#"hostname="synthetic-compute""#));
    assert_eq!(Some(body.as_str()), handle.current().as_deref());

    let (status, _, body) = get(addr, "/healthz");
    assert_eq!(status, 200);
    assert!(body.starts_with("ok\nlast sample "), "{body}");

    let (status, _, body) = get(addr, "/nope");
    assert_eq!(status, 404);
    assert!(body.contains("/metrics"));
    server.stop().unwrap();
}

#[test]
fn hostname_override() {
    let handle = ExportHandle::with_hostname("node-7");
    handle.publish(&synthetic_pipeline("idle:1", 6, 600));
    assert!(handle.current().unwrap().contains(r#"hostname="node-7""#));
}

#[test]
fn port_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind(loopback()).unwrap();
    let addr = taken.local_addr().unwrap();
    let err = ExportServer::bind(addr, ExportHandle::new()).unwrap_err();
    assert!(matches!(err, ExportError::AddressInUse(_)));
    assert_eq!(err.to_string(), format!("{addr} is already in use; pick another with --listen"));
}

#[test]
fn malformed_and_stalled_clients_do_not_block_others() {
    let handle = ExportHandle::new();
    handle.publish(&synthetic_pipeline("idle:1", 6, 600));
    let server = ExportServer::bind(loopback(), handle).unwrap().spawn().unwrap();
    let addr = server.local_addr();
    // A client that sends half a request line and stalls.
    let mut stalled = TcpStream::connect(addr).unwrap();
    stalled.write_all(b"GET /metr").unwrap();
    // A client that sends garbage: it gets an error response or a closed connection, never a hang.
    let mut garbage = TcpStream::connect(addr).unwrap();
    garbage.write_all(b"\x00\x01 NOT HTTP\r\n\r\n").unwrap();
    garbage.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reply = Vec::new();
    let _ = garbage.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.is_empty() || reply.starts_with("HTTP/1.1 400"), "{reply}");
    // Others are still served.
    for _ in 0..3 {
        assert_eq!(get(addr, "/metrics").0, 200);
    }
    // Stopping does not hang on the stalled client.
    server.stop().unwrap();
    drop(stalled);
}

/// `promtool check metrics` accepts the exposition. Its lint flags only what dcgm-exporter compatibility imposes:
/// the `modelName` label (camelCase) and `_COUNTER` in `DCGM_FI_DEV_PCIE_REPLAY_COUNTER`.
#[test]
fn promtool_accepts_the_exposition() {
    let Some(promtool) = required("promtool") else { return };
    let handle = ExportHandle::new();
    handle.publish(&synthetic_pipeline("mixed:8", 6, 600));
    let text = handle.current().unwrap();
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    // Exit 1 is a parse error; 3 is lint findings only.
    assert!(output.status.success() || output.status.code() == Some(3), "promtool failed:\n{report}");
    for line in report.lines().filter(|l| !l.trim().is_empty()) {
        let accepted = line.ends_with("label names should be written in 'snake_case' not 'camelCase'")
            || line == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'";
        assert!(accepted, "unexpected promtool finding: {line}");
    }
}

/// Sends one keep-alive `GET /healthz` on `stream` and reads its whole answer, leaving the connection idle.
fn keep_alive_request(stream: &mut TcpStream) -> String {
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    // The answer is whole once its headers and the body of Content-Length have come.
    loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the answer");
        answer.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&answer);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_owned))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return text.into_owned();
            }
        }
    }
}

/// 256 keep-alive clients idle between requests hold every connection slot; a real scrape still gets its answer
/// at once (well within the 5 s after which idle connections time out by themselves), because the longest-idle
/// one is closed to admit it.
#[test]
fn keep_alive_clients_at_the_cap_do_not_stop_a_real_scrape() {
    let handle = ExportHandle::new();
    handle.publish(&synthetic_pipeline("idle:1", 6, 600));
    let limits = gpusight::export::server::ServerLimits::default();
    let server = ExportServer::bind(loopback(), handle).unwrap().with_limits(limits).spawn().unwrap();
    let addr = server.local_addr();
    let mut clients: Vec<TcpStream> = (0..limits.max_connections)
        .map(|_| {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            assert!(keep_alive_request(&mut stream).starts_with("HTTP/1.1 200"));
            stream
        })
        .collect();
    let scrape = http_agent(Duration::from_secs(2));
    let mut response = scrape.get(&format!("http://{addr}/metrics")).call().expect("the scrape is answered");
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.body_mut().read_to_string().unwrap().contains("DCGM_FI_DEV_GPU_UTIL{"));
    // The one closed was the first, idle the longest; the newest is still served on its connection.
    let mut buf = [0u8; 16];
    assert_eq!(clients[0].read(&mut buf).unwrap_or(0), 0, "the longest-idle connection was closed");
    let newest = clients.last_mut().unwrap();
    assert!(keep_alive_request(newest).starts_with("HTTP/1.1 200"));
    server.stop().unwrap();
}

#[test]
fn a_connection_serves_a_bounded_number_of_requests() {
    let handle = ExportHandle::new();
    handle.publish(&synthetic_pipeline("idle:1", 6, 600));
    let limits = gpusight::export::server::ServerLimits { max_requests_per_connection: 3, ..Default::default() };
    let server = ExportServer::bind(loopback(), handle).unwrap().with_limits(limits).spawn().unwrap();
    let mut stream = TcpStream::connect(server.local_addr()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for _ in 0..2 {
        assert!(!keep_alive_request(&mut stream).to_ascii_lowercase().contains("connection: close"));
    }
    let last = keep_alive_request(&mut stream);
    assert!(last.to_ascii_lowercase().contains("connection: close"), "{last}");
    let mut buf = [0u8; 16];
    assert_eq!(stream.read(&mut buf).unwrap_or(0), 0, "closed after the last request it serves");
    server.stop().unwrap();
}
