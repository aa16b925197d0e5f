//! Recording faults on the real binary: the recording's reader goes away mid-run (a write error, as a full disk
//! gives), and the monitor says so and goes on sampling. (SIGKILL'd recordings, SIGTERM, never overwriting and
//! corrupt lines are in tests/cli.rs.)
#![allow(clippy::expect_used, clippy::disallowed_methods, reason = "fixture helpers may panic; tests spawn children")]

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

#[test]
fn a_write_error_while_recording_is_said_and_monitoring_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("recording.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    // The reader takes the header and two ticks, then closes its end: the next write fails with EPIPE.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(std::fs::File::open(&fifo).expect("open fifo")).lines();
            (0..3).map(|_| lines.next().expect("a line").expect("read")).collect::<Vec<String>>()
        })
    };
    let pair =
        native_pty_system().openpty(PtySize { rows: 40, cols: 160, pixel_width: 0, pixel_height: 0 }).expect("pty");
    let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_gpusight"));
    let fifo_arg = fifo.to_str().expect("utf-8");
    command.args(["--synthetic", "compute:2", "--interval", "0.1", "--record", fifo_arg, "--overwrite"]);
    command.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(command).expect("spawn");
    drop(pair.slave);
    let mut out = pair.master.try_clone_reader().expect("reader");
    let mut writer = pair.master.take_writer().expect("writer");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let lines = reader.join().expect("reader thread");
    assert!(lines[0].contains("gpusight-recording") || lines[0].contains("\"schema\""), "{}", lines[0]);
    let mut parser = vt100::Parser::new(40.try_into().expect("rows"), 160.try_into().expect("cols"), 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let wait_until = |what: &str, parser: &mut vt100::Parser, done: &dyn Fn(&str) -> bool| {
        while !done(&parser.screen().contents()) {
            assert!(Instant::now() < deadline, "{what}; the screen was:\n{}", parser.screen().contents());
            if let Ok(bytes) = rx.recv_timeout(Duration::from_millis(100)) {
                parser.process(&bytes);
            }
        }
    };
    wait_until("no note about the recording", &mut parser, &|s| s.contains("recording stopped"));
    let screen = parser.screen().contents();
    assert!(screen.contains("monitoring goes on"), "{screen}");
    // Still sampling: the sample time in the header moves on after the note.
    let header = screen.lines().next().expect("header").to_owned();
    wait_until("the monitor stopped updating", &mut parser, &|s| s.lines().next().is_some_and(|l| l != header));
    assert!(child.try_wait().expect("try_wait").is_none(), "still running");
    writer.write_all(b"q").expect("q");
    writer.flush().expect("flush");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "did not quit");
        let _ = rx.recv_timeout(Duration::from_millis(100));
    };
    assert_eq!(status.exit_code(), 0);
}
