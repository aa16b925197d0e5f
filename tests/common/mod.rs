//! Helpers shared by the end-to-end tests that start other programs (Prometheus, exporters).
#![allow(dead_code, clippy::unwrap_used, clippy::disallowed_methods)] // Each test file uses some of them.

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
