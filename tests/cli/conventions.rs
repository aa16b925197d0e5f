//! The everyday conventions of the real binary: the tmux status line, CSV, no terminal, streaming and
//! compressed recordings, completions and the man page, and the exporter's listen address.

// Tests may start other programs (clippy.toml); helpers outside #[test] fns may expect.
#![allow(
    clippy::disallowed_methods,
    clippy::expect_used,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use std::io::Read as _;
use std::process::Stdio;

use crate::common::{command, gpusight, stderr, stdout, temp_dir};

#[test]
fn the_status_line_is_one_short_line_per_machine() {
    let output = gpusight(&["--status", "--synthetic", "mixed:8"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(text.lines().count(), 1, "{text}");
    let line = text.trim_end();
    assert!(line.chars().count() < 120, "{} chars: {line}", line.chars().count());
    assert!(line.starts_with("0:") && line.contains(" 7:") && line.contains('%') && line.contains('C'), "{line}");

    let only = stdout(&gpusight(&["--status", "--synthetic", "mixed:8", "--only", "2,5"]));
    assert!(only.starts_with("2:") && only.contains(" 5:") && !only.contains("0:"), "{only}");
    let custom = stdout(&gpusight(&["--status", "--demo", "--status-format", "GPU{index} {util}% {power}W"]));
    assert!(custom.starts_with("GPU0 ") && custom.trim_end().ends_with('W'), "{custom}");
    let bad = gpusight(&["--status", "--demo", "--status-format", "{nope}"]);
    assert_eq!(bad.status.code(), Some(3));
    assert!(stderr(&bad).contains("unknown placeholder '{nope}'"), "{}", stderr(&bad));
}

#[test]
fn the_status_line_on_a_recording_shows_its_finding() {
    let text = stdout(&command(&["--status", "--demo"]).env("LC_ALL", "C.UTF-8").output().expect("run"));
    assert!(text.starts_with("0:") && text.contains('⚠'), "the demo's last frame has a warning: {text}");
    let ascii = stdout(&gpusight(&["--status", "--demo", "--ascii"]));
    assert!(ascii.is_ascii() && ascii.contains('!'), "{ascii}");
}

#[test]
fn once_prints_csv_with_a_stable_header() {
    let output = gpusight(&["--synthetic", "mixed:4", "--once", "--format", "csv"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("at_ms,index,name,uuid,pci_bus_id,state,util_pct,"), "{}", lines[0]);
    assert!(lines[0].ends_with(",throttle,processes,findings"), "{}", lines[0]);
    let json = stdout(&gpusight(&["--synthetic", "mixed:4", "--once", "--format", "json"]));
    assert!(json.contains("\"schema\": \"gpusight.snapshot/2\""));
    let contradiction = gpusight(&["--demo", "--once", "--format", "csv", "--json"]);
    assert_eq!(contradiction.status.code(), Some(3));
    let without_once = gpusight(&["--demo", "--format", "csv"]);
    assert_eq!(without_once.status.code(), Some(3), "--format belongs to --once: {}", stderr(&without_once));
}

#[test]
fn the_monitor_without_a_terminal_says_so_in_one_line_and_exits_3() {
    let dir = temp_dir();
    let out = std::fs::File::create(dir.path().join("out.txt")).expect("create");
    let output = command(&["--demo"]).stdout(out).output().expect("run");
    assert_eq!(output.status.code(), Some(3));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    for hint in ["needs a terminal", "--once", "--status", "doctor"] {
        assert!(message.contains(hint), "no '{hint}' in {message}");
    }
    assert!(std::fs::read(dir.path().join("out.txt")).expect("read").is_empty(), "nothing drawn");
}

#[test]
fn record_dash_streams_json_lines_to_a_pipe_and_stops_when_it_closes() {
    let mut child = command(&["--record", "-", "--headless", "--synthetic", "compute", "--interval", "0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let mut pipe = child.stdout.take().expect("stdout");
    let mut lines = Vec::new();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while lines.len() < 3 && pipe.read(&mut byte).expect("read") == 1 {
        if byte[0] == b'\n' {
            lines.push(String::from_utf8(std::mem::take(&mut buf)).expect("utf-8"));
        } else {
            buf.push(byte[0]);
        }
    }
    drop(pipe); // As `head -3` does: the reader goes away.
    let status = child.wait().expect("wait");
    assert_eq!(lines.len(), 3);
    for line in &lines {
        serde_json::from_str::<serde_json::Value>(line).expect("a JSON line");
    }
    assert!(lines[0].contains("\"format\":\"gpusight-recording\""), "{}", lines[0]);
    assert_eq!(status.code(), Some(0), "a closed pipe is a clean end");
    let mut err = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut err).expect("read");
    assert!(!err.contains("Broken pipe"), "{err}");

    let monitor = gpusight(&["--record", "-", "--synthetic", "compute"]);
    assert_eq!(monitor.status.code(), Some(3), "the monitor draws on stdout: {}", stderr(&monitor));
    assert!(stderr(&monitor).contains("--headless"));
}

#[test]
fn a_gz_recording_is_gzip_and_replays() {
    let dir = temp_dir();
    let path = dir.path().join("run.jsonl.gz");
    let path_text = path.to_str().expect("utf-8");
    let mut child = command(&["--record", path_text, "--headless", "--synthetic", "mixed:2", "--interval", "0.1"])
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    // Poll until a few lines are on disk: the gzip stream is sync-flushed per line, so it decodes as it grows.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let lines = std::fs::read(&path).ok().map_or(0, |bytes| {
            let mut text = String::new();
            let _ = flate2::read::GzDecoder::new(bytes.as_slice()).read_to_string(&mut text);
            text.lines().count()
        });
        if lines >= 4 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the recording never reached 4 lines");
        std::thread::yield_now();
    }
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::TERM)
        .expect("SIGTERM");
    assert_eq!(child.wait().expect("wait").code(), Some(0));
    let bytes = std::fs::read(&path).expect("read");
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "real gzip");
    let replay = gpusight(&["--replay", path_text, "--once", "--json"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
}

#[test]
fn completions_and_the_man_page_print() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = gpusight(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}: {}", stderr(&output));
        assert!(stdout(&output).contains("doctor"), "{shell}");
    }
    assert_eq!(gpusight(&["completions", "tcsh"]).status.code(), Some(3));
    let man = gpusight(&["man"]);
    assert_eq!(man.status.code(), Some(0));
    assert!(stdout(&man).contains(".TH gpusight 1"), "{}", stdout(&man));
}

#[test]
fn export_listens_where_gpusight_listen_says_and_warns_off_loopback() {
    // A port that is taken makes export fail at once, after the address was chosen and checked.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = taken.local_addr().expect("addr").to_string();
    let output = command(&["export", "--synthetic", "idle"]).env("GPUSIGHT_LISTEN", &address).output().expect("run");
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).contains(&address), "GPUSIGHT_LISTEN is used: {}", stderr(&output));
    assert!(!stderr(&output).contains("no authentication"), "loopback gives no warning");

    let output =
        command(&["export", "--synthetic", "idle"]).env("GPUSIGHT_LISTEN", "not-an-address").output().expect("run");
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));

    // Off loopback: a port of this machine's wildcard address that is already taken, so nothing is served.
    let wildcard = std::net::TcpListener::bind("0.0.0.0:0").expect("bind");
    let port = wildcard.local_addr().expect("addr").port();
    let output = gpusight(&["export", "--synthetic", "idle", "--listen", &format!("0.0.0.0:{port}")]);
    let message = stderr(&output);
    let warning: Vec<&str> = message.lines().filter(|l| l.contains("no authentication")).collect();
    assert_eq!(warning.len(), 1, "{message}");
    assert!(warning[0].starts_with("gpusight: warning: serving 0.0.0.0:"), "{}", warning[0]);
}

/// The meaning the man page's EXIT STATUS section (one table for every command) gives `code`.
fn man_exit_meaning(man: &str, code: i32) -> String {
    let section = man.split(".SH \"EXIT STATUS\"\n").nth(1).expect("EXIT STATUS");
    let section = section.split("\n.SH ").next().unwrap_or_default();
    let entry = format!(".TP\n\\fB{code}\\fR\n");
    let at = section.find(&entry).unwrap_or_else(|| panic!("no {code} in {section}"));
    section[at + entry.len()..].lines().next().unwrap_or_default().replace("\\-", "-")
}

#[test]
fn the_man_pages_exit_statuses_are_what_the_binary_returns() {
    let man = stdout(&gpusight(&["man"]));
    let code = |args: &[&str]| gpusight(args).status.code().expect("an exit code");
    assert!(man_exit_meaning(&man, code(&["--frobnicate"])).contains("bad command line"));
    assert!(man_exit_meaning(&man, code(&["--once", "--synthetic", "idle"])).starts_with("success"));
    assert!(man_exit_meaning(&man, code(&["--replay", "/nonexistent/run.jsonl", "--once"])).contains("unreadable"));
    assert!(man_exit_meaning(&man, code(&["--synthetic", "idle"])).contains("without a terminal"));
    let doctor = |scenario: &str| code(&["doctor", "--synthetic", scenario, "--duration", "60s"]);
    assert!(man_exit_meaning(&man, doctor("compute")).contains("doctor: healthy"));
    assert!(man_exit_meaning(&man, doctor("input-bound")).contains("doctor: at least one warning"));
    assert!(man_exit_meaning(&man, doctor("gpu-lost")).contains("critical"));
    assert!(man_exit_meaning(&man, code(&["doctor", "--frobnicate"])).starts_with("could not run"));
    assert_eq!(code(&["doctor", "--frobnicate"]), gpusight::doctor::EXIT_UNKNOWN);
    assert_eq!(code(&["--frobnicate"]), gpusight::run::EXIT_CANNOT_RUN);
}
