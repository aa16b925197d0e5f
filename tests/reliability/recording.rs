//! Recording faults on the real binary: the recording's reader goes away mid-run (a write error, as a full disk
//! gives), and the monitor says so and goes on sampling. (SIGKILL'd recordings, SIGTERM, never overwriting and
//! corrupt lines are in tests/cli/commands.rs.)
#![allow(clippy::expect_used, clippy::disallowed_methods, reason = "fixture helpers may panic; tests spawn children")]

use std::io::{BufRead, BufReader};

use crate::common::pty::Session;
use crate::common::temp_dir;

#[test]
fn a_write_error_while_recording_is_said_and_monitoring_goes_on() {
    let dir = temp_dir();
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
    let fifo_arg = fifo.to_str().expect("utf-8");
    let args = ["--synthetic", "compute:2", "--interval", "0.1", "--record", fifo_arg, "--overwrite"];
    let mut session = Session::gpusight(&args, &[], 160, 40);
    let lines = reader.join().expect("reader thread");
    assert!(lines[0].contains("gpusight-recording") || lines[0].contains("\"schema\""), "{}", lines[0]);
    let screen = session.wait_for("recording stopped");
    assert!(screen.contains("monitoring goes on"), "{screen}");
    // Still sampling: the sample time in the header moves on after the note.
    let header = screen.lines().next().expect("header").to_owned();
    session.wait_screen("the monitor updating", |s| s.lines().next().is_some_and(|l| l != header));
    assert!(session.running(), "still running");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}
