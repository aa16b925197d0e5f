//! The scaffolding every integration-test binary shares (each includes this file with `#[path]`): the binary and
//! its outputs, temp dirs and repository paths, helper programs (Prometheus, a process to signal), the monitor
//! built on a synthetic machine or a recording (`app`), pipelines and exporters in-process (`export`), and the
//! binary in a pseudo-terminal (`pty`).
#![allow(
    dead_code,
    unused_imports,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "each test binary uses some of the helpers; they start programs and panic on broken fixtures"
)]

pub mod app;
pub mod export;
pub mod fake_nvml;
pub mod pty;

pub use app::{fed_app, live_app, next_snapshot, replay_app, screen, synthetic};
pub use export::{Prometheus, http_agent, serve, synthetic_pipeline};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The gpusight binary cargo built for the tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_gpusight");

/// The runtime directory tests give gpusight unless they make their own: it does not exist, so no watcher leaves
/// a state there and `--status` finds none.
pub const NO_RUNTIME_DIR: &str = "/nonexistent-gpusight-test-runtime";

/// `gpusight ARGS` with no config file, colour allowed, no listen address from the environment and no stdin.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_remove("NO_COLOR")
        // A width from the environment would fit the text outputs; tests read full lines unless they set it.
        .env_remove("COLUMNS")
        .env_remove("GPUSIGHT_LISTEN")
        // A config in the user's home must not change what the tests see.
        .env("XDG_CONFIG_HOME", "/nonexistent-gpusight-test-config")
        // Nor may a gpusight the user runs (the state --status reads), and no test leaves one behind.
        .env("XDG_RUNTIME_DIR", NO_RUNTIME_DIR)
        .stdin(Stdio::null());
    command
}

/// Runs `gpusight ARGS` as [`command`] sets it up, to the end.
pub fn gpusight(args: &[&str]) -> Output {
    command(args).output().expect("run gpusight")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON document on stdout.
pub fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

/// `gpusight doctor ARGS --json` with no config file and colour allowed: its output and the document it printed.
pub fn doctor_json(args: &[&str]) -> (Output, serde_json::Value) {
    let output = command(&["doctor"]).args(args).args(["--json"]).output().expect("run gpusight");
    let json = json(&output);
    (output, json)
}

/// The rules of a doctor document's active findings at warning or worse.
pub fn warnings(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| f["rule"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The active finding of `rule` in a doctor document (panics naming the document when there is none).
pub fn finding<'a>(report: &'a serde_json::Value, rule: &str) -> &'a serde_json::Value {
    report["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["rule"] == rule))
        .unwrap_or_else(|| panic!("no {rule}: {report}"))
}

/// A path in the repository (`tests/fixtures/...`, `deploy/...`).
pub fn repo_path(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A fresh temporary directory, removed when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// Kills a child process when the test ends, on every path.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The program's path on `PATH`, if it is installed.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// `prometheus` or `promtool` (Debian's `prometheus` package), or `None` (and a note) when it is not installed
/// outside CI; in CI (`CI=true`) a missing one fails the test.
pub fn required(program: &str) -> Option<PathBuf> {
    let found = find_program(program);
    if found.is_none() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{program} is missing: apt-get install -y prometheus");
        eprintln!("skipped: {program} is not installed (Debian package `prometheus`)");
    }
    found
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Polls `check` until it returns `Ok` or `deadline` passes (then panics with the last reason).
pub fn poll<T>(what: &str, deadline: Duration, mut check: impl FnMut() -> Result<T, String>) -> T {
    let start = Instant::now();
    loop {
        match check() {
            Ok(value) => return value,
            Err(why) if start.elapsed() > deadline => panic!("{what}: not reached within {deadline:?}: {why}"),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// A process to signal: `sleep 60`, this test's own child (not the live system's state), with its PID and its
/// start ticks from /proc.
pub fn victim() -> (Child, String, u64) {
    let child = Command::new("sleep").arg("60").spawn().expect("spawn sleep");
    let pid = child.id().to_string();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let start = gpusight::app::signal::parse_start_ticks(&stat).expect("start ticks");
    (child, pid, start)
}
