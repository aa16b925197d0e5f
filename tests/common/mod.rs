//! Helpers shared by the integration tests: programs they start (Prometheus, exporters) and the monitor drawn
//! into a test terminal.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "each test file uses some of them"
)]

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

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

/// The monitor drawn into a `width` x `height` test terminal, as text (trailing spaces trimmed).
pub fn screen(app: &gpusight::app::App, width: u16, height: u16) -> String {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| gpusight::ui::draw_view(frame, app)).unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..height {
        let line: String = (0..width).map(|x| buffer[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `gpusight doctor ARGS --json` with no config file and colour allowed: its output and the document it printed.
pub fn doctor_json(args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_gpusight"))
        .arg("doctor")
        .args(args)
        .args(["--json"])
        .env_remove("NO_COLOR")
        .env("XDG_CONFIG_HOME", "/nonexistent-gpusight-test-config")
        .output()
        .expect("run gpusight");
    let json = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
    (output, json)
}
