//! `--status`, the status-bar line: a watcher's live findings through the state file, a stale state ignored, the
//! deadline on a source that hangs, ASCII under a locale that is not UTF-8, literal braces, and the flags it
//! refuses.

// Tests may start other programs (clippy.toml); helpers outside #[test] fns may expect.
#![allow(
    clippy::disallowed_methods,
    clippy::expect_used,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use gpusight::output::status::{Badge, GpuStatus, StatusLine};
use gpusight::output::status_file::{StatusState, file_name, now_unix_ms, write_state};

use crate::common::pty::Session;
use crate::common::{command, poll, stderr, stdout, temp_dir};

/// `gpusight ARGS` in a UTF-8 locale with `runtime` as its runtime directory.
fn status_in(runtime: &Path, args: &[&str]) -> Output {
    command(args).env("XDG_RUNTIME_DIR", runtime).env("LC_ALL", "C.UTF-8").output().expect("run gpusight")
}

#[test]
fn the_monitor_gives_status_its_live_finding() {
    let runtime = temp_dir();
    let args = ["--synthetic", "input-bound", "--status"];
    let before = stdout(&status_in(runtime.path(), &args));
    assert!(!before.contains("input") && before.trim_end().ends_with('?'), "no watcher: one sample: {before}");

    // The watcher: the monitor sampling every 0.1 s, its rules and its account judging over 2 s.
    let config = runtime.path().join("config.toml");
    std::fs::write(&config, "[thresholds]\nwindow_s = 2\n\n[thresholds.account]\nwindow_s = 2\n").expect("config");
    let (dir, config) = (runtime.path().to_str().expect("utf-8"), config.to_str().expect("utf-8"));
    let watcher = ["--synthetic", "input-bound", "--interval", "0.1", "--config", config];
    let mut monitor = Session::gpusight(&watcher, &[("XDG_RUNTIME_DIR", dir)], 100, 30);
    let line = poll("the monitor's finding in --status", Duration::from_secs(20), || {
        let text = stdout(&status_in(runtime.path(), &args));
        if text.contains("⚠input") { Ok(text) } else { Err(text) }
    });
    assert_eq!(line.lines().count(), 1, "{line}");
    let json = status_in(runtime.path(), &["--synthetic", "input-bound", "--status", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(doc["watcher"], "monitor", "{doc}");
    assert_eq!(doc["status"]["gpus"][0]["finding"]["label"], "input", "{doc}");
    // Another scenario is another machine: the monitor's state is not its.
    let other = stdout(&status_in(runtime.path(), &["--synthetic", "compute", "--status"]));
    assert!(!other.contains("input"), "{other}");
    monitor.send("q");
    assert_eq!(monitor.exit_code(), 0);
}

#[test]
fn the_exporter_gives_status_its_live_finding_too() {
    let runtime = temp_dir();
    let config = runtime.path().join("config.toml");
    std::fs::write(&config, "[thresholds]\nwindow_s = 2\n\n[thresholds.account]\nwindow_s = 2\n").expect("config");
    let mut exporter =
        command(&["export", "--synthetic", "input-bound", "--listen", "127.0.0.1:0", "--interval", "0.1"])
            .arg("--config")
            .arg(&config)
            .env("XDG_RUNTIME_DIR", runtime.path())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
    let found = std::panic::catch_unwind(|| {
        poll("the exporter's finding in --status", Duration::from_secs(20), || {
            let text = stdout(&status_in(runtime.path(), &["--synthetic", "input-bound", "--status", "--json"]));
            if text.contains("\"watcher\":\"export\"") && text.contains("\"label\":\"input\"") {
                Ok(())
            } else {
                Err(text)
            }
        });
    });
    exporter.kill().expect("kill");
    exporter.wait().expect("wait");
    assert!(found.is_ok(), "the exporter's state never showed its finding");
}

/// A state of `input-bound` on one GPU, with its finding, written `age` ago.
fn write_input_state(runtime: &Path, age: Duration) {
    let line = StatusLine {
        gpus: vec![GpuStatus {
            index: 0,
            name: "NVIDIA H200".into(),
            util_pct: Some(31),
            temp_c: Some(52),
            finding: Some(Badge { label: "input".into(), severity: gpusight::advice::Severity::Warning }),
            ..GpuStatus::default()
        }],
        machine_finding: None,
        judged: true,
    };
    let written = now_unix_ms() - u64::try_from(age.as_millis()).expect("ms");
    let state = StatusState::new(line, written, Duration::from_secs(1), "export");
    write_state(&runtime.join("gpusight"), &file_name("synthetic-input-bound-1"), &state).expect("write");
}

#[test]
fn a_stale_state_is_ignored_and_a_fresh_one_is_read() {
    let runtime = temp_dir();
    let args = ["--synthetic", "input-bound", "--status"];
    write_input_state(runtime.path(), Duration::from_mins(1));
    let stale = stdout(&status_in(runtime.path(), &args));
    assert!(!stale.contains("⚠input") && stale.trim_end().ends_with('?'), "a watcher gone a minute: {stale}");
    write_input_state(runtime.path(), Duration::ZERO);
    assert_eq!(stdout(&status_in(runtime.path(), &args)), "0:31% 52C ⚠input\n");
}

#[test]
fn a_locale_that_is_not_utf8_gets_ascii() {
    for locale in [&[("LC_ALL", "C")][..], &[("LC_ALL", ""), ("LC_CTYPE", ""), ("LANG", "POSIX")]] {
        let mut status = command(&["--demo", "--status"]);
        for (name, value) in locale {
            status.env(name, value);
        }
        let text = stdout(&status.output().expect("run"));
        assert!(text.is_ascii() && text.contains("!idle-hold"), "{locale:?}: {text}");
    }
    let utf8 = stdout(&command(&["--demo", "--status"]).env("LC_ALL", "en_US.UTF-8").output().expect("run"));
    assert!(utf8.contains("⚠idle-hold"), "{utf8}");
}

#[test]
fn status_answers_within_its_deadline_when_the_source_hangs() {
    // Every synthetic sample takes a minute, as a hung NVML call would.
    let start = Instant::now();
    let mut child = command(&["--synthetic", "compute:2", "--status"])
        .env("XDG_RUNTIME_DIR", temp_dir().path())
        .env("GPUSIGHT_SYNTHETIC_DELAY_MS", "60000")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let exited = poll("--status to answer", Duration::from_secs(15), || {
        child.try_wait().expect("wait").ok_or_else(|| format!("running for {:?}", start.elapsed()))
    });
    let output = child.wait_with_output().expect("output");
    assert_eq!(exited.code(), Some(1), "{}", stderr(&output));
    assert_eq!(stdout(&output), "0:? 1:?\n", "the GPUs that did not answer, not 0:-% -C");
    assert!(stderr(&output).contains("no sample within 2 s"), "{}", stderr(&output));
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
}

#[test]
fn the_template_takes_literal_braces_and_the_flags_that_cannot_apply_are_refused() {
    let braces = command(&["--demo", "--status", "--status-format", "{{{index}}} {util}%"]).output().expect("run");
    assert_eq!(braces.status.code(), Some(0), "{}", stderr(&braces));
    assert_eq!(stdout(&braces), "{0} 0%\n");
    let csv = command(&["--demo", "--status", "--format", "csv"]).output().expect("run");
    assert_eq!(csv.status.code(), Some(3));
    assert!(stderr(&csv).contains("--format goes with --once"), "{}", stderr(&csv));
    let json = command(&["--demo", "--status", "--json"]).output().expect("run");
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(doc["schema"], "gpusight.status/1");
    assert_eq!(doc["status"]["gpus"][0]["finding"]["label"], "idle-hold", "{doc}");
}
