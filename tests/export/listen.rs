//! `export` faults at the command line: it listens on loopback unless told otherwise, and a port in use is a
//! one-line error naming the address, not a hang or a panic. (Malformed and stalled clients: tests/export/server.rs.)
#![allow(clippy::disallowed_methods, reason = "the test runs the binary")]

use clap::Parser;
use gpusight::cli::{Cli, Command};

use crate::common::BIN;

#[test]
fn export_listens_on_loopback_by_default() {
    let cli = Cli::try_parse_from(["gpusight", "export"]).expect("parses");
    let Some(Command::Export { listen, .. }) = cli.command else { panic!("export command") };
    assert!(listen.ip().is_loopback(), "{listen}");
}

#[test]
fn a_port_in_use_is_a_clear_error_from_the_binary() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let output = std::process::Command::new(BIN)
        .args(["--synthetic", "idle", "export", "--listen", &addr])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&addr) && stderr.contains("in use"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn the_no_authentication_warning_names_the_port_bound() {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(BIN)
        .args(["--synthetic", "idle", "export", "--listen", "0.0.0.0:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let stderr = child.stderr.take().expect("stderr");
    let warning = std::io::BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("no authentication"))
        .unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(warning.contains("warning: serving 0.0.0.0:"), "{warning}");
    assert!(!warning.contains("0.0.0.0:0:"), "the port bound is named, not 0: {warning}");
}
