//! End to end: the real binary in a pseudo-terminal, keys sent, the screen read back through a terminal
//! parser, the exit code checked. Needs the CLI's `--synthetic SCENARIO` and `--synthetic-attach PID`.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "fixture helpers may panic; tests may spawn a child to signal"
)]

use std::os::unix::process::ExitStatusExt as _;

use crate::common::pty::Session;
use crate::common::victim;

#[test]
fn monitor_starts_shows_gpus_and_quits_with_q() {
    let mut session = Session::gpusight(&["--synthetic", "mixed:8"], &[], 120, 40);
    let screen = session.wait_for("Processes");
    assert!(screen.contains("SYNTHETIC"), "{screen}");
    session.send("?");
    session.wait_for("Keys");
    session.send("x");
    session.wait_for("Processes");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn too_small_terminal_says_so() {
    let mut session = Session::gpusight(&["--synthetic", "compute"], &[], 36, 8);
    session.wait_for("Terminal too small");
    session.send("\x03");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn a_small_pane_draws_the_monitor() {
    let mut session = Session::gpusight(&["--synthetic", "mixed:8"], &[], 40, 10);
    let screen = session.wait_for("Processes");
    assert!(!screen.contains("too small"), "{screen}");
    session.send("\x03");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn kill_from_the_monitor_reaches_a_real_process() {
    let (mut victim, pid, start) = victim();
    let mut session = attached(&pid, start);
    session.send("K");
    session.wait_for("SIGKILL ]");
    session.send("\r");
    session.wait_for("sent");
    let status = victim.wait().expect("wait");
    assert_eq!(status.signal(), Some(9));
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

/// The monitor on a synthetic machine that lists `pid` (believed to have started at `start_ticks`) as a GPU
/// process, with that process selected through the filter (`/PID` Enter selects the first match).
fn attached(pid: &str, start_ticks: u64) -> Session {
    let attach = format!("{pid}:{start_ticks}");
    let mut session = Session::gpusight(&["--synthetic", "compute", "--synthetic-attach", &attach], &[], 120, 40);
    session.wait_for(pid);
    session.send(&format!("/{pid}\r"));
    session
}

#[test]
fn the_demo_draws_and_every_screen_opens_and_closes() {
    let mut session = Session::gpusight(&["--demo"], &[], 120, 40);
    let screen = session.wait_for("Processes");
    assert!(screen.contains("H200") && screen.contains("REC"), "{screen}");
    // It opens on a warning with the process it is about, not on an idle GPU.
    let screen = session.wait_for("WARN");
    assert!(screen.contains("python3 train.py") && !screen.contains("no GPU processes"), "{screen}");
    // Seek into the input phase, where the table has processes.
    session.send("\x1b[1;2C\x1b[1;2C");
    session.wait_for("python3");
    // Select the first process (Enter and e need one).
    session.send("\x1b[B");
    // Each opens with its key and closes with Esc, except the tree view, which its key toggles (as in nvitop).
    for (key, opened, close) in [("?", "Keys", "\x1b"), ("t", "[tree]", "t"), ("\r", "CUDA libraries", "\x1b")] {
        session.send(key);
        session.wait_for(opened);
        session.send(close);
        session.wait_screen(&format!("{key} closes"), |s| !s.contains(opened) && s.contains("Processes"));
    }
    session.send("/");
    session.wait_for("Filter:");
    session.send("\x1b");
    session.wait_screen("the filter closes", |s| !s.contains("Filter:"));
    // A recording's PIDs are not processes of this machine: no environment and no signal path.
    session.send("e");
    session.wait_for("no environment to read");
    session.send("K");
    let screen = session.wait_for("so there are no signals");
    assert!(!screen.contains("Send a signal"), "{screen}");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
    let raw = String::from_utf8_lossy(&session.raw);
    assert!(raw.contains("\x1b[?1049l"), "the alternate screen was left");
    assert!(raw.contains("\x1b[?25h"), "the cursor was shown again");
}

#[test]
fn k_then_esc_sends_nothing() {
    let (mut victim, pid, start) = victim();
    let mut session = attached(&pid, start);
    session.send("K");
    session.wait_for("Send a signal");
    session.send("\x1b");
    let screen = session.wait_screen("the dialog closes", |s| !s.contains("Send a signal"));
    assert!(!screen.contains(&format!("{pid}: sent")), "{screen}");
    assert!(victim.try_wait().expect("try_wait").is_none(), "nothing was sent");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
    victim.kill().expect("kill");
    victim.wait().expect("wait");
}

#[test]
fn sigterm_from_the_monitor_reaches_a_real_process() {
    let (mut victim, pid, start) = victim();
    let mut session = attached(&pid, start);
    session.send("T");
    session.wait_for("SIGTERM ]");
    session.send("\r");
    session.wait_for("sent");
    let status = victim.wait().expect("wait");
    assert_eq!(status.signal(), Some(15));
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn a_process_that_already_exited_is_reported_as_such() {
    let (mut victim, pid, start) = victim();
    let mut session = attached(&pid, start);
    victim.kill().expect("kill");
    victim.wait().expect("wait");
    session.send("T");
    session.wait_for("SIGTERM ]");
    session.send("\r");
    session.wait_for("exited already");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn a_reused_pid_is_refused_and_nothing_is_sent() {
    let (mut victim, pid, start) = victim();
    // The monitor believes the process started at another time: the PID now belongs to someone else.
    let mut session = attached(&pid, start + 1);
    session.send("K");
    session.wait_for("SIGKILL ]");
    session.send("\r");
    session.wait_for("PID reused");
    assert!(victim.try_wait().expect("try_wait").is_none(), "the process is alive");
    victim.kill().expect("kill");
    victim.wait().expect("wait");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn at_opens_the_monitor_at_that_time_and_says_when_it_clamps() {
    for at in ["120", "2m", "1m60s"] {
        let mut session = Session::gpusight(&["--demo", "--at", at], &[], 120, 40);
        let screen = session.wait_for("Processes");
        assert!(screen.contains("02:00/") || screen.contains("02:01/"), "--at {at}:\n{screen}");
        session.send("q");
        assert_eq!(session.exit_code(), 0);
    }
    let mut session = Session::gpusight(&["--demo", "--at", "99999"], &[], 120, 40);
    let screen = session.wait_for("long; starting at");
    assert!(screen.contains("recording is 05:"), "{screen}");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn the_first_screen_says_what_is_judged_not_that_nothing_is_wrong() {
    // From the first frame, before any rule has had its window: how long until a verdict, and the waiting GPU.
    for (cols, rows) in [(40, 10), (80, 24), (200, 60)] {
        let mut session = Session::gpusight(&["--synthetic", "input-bound"], &[], cols, rows);
        let screen = session.wait_screen("the first frame", |s| s.contains("Judging"));
        assert!(!screen.contains("Nothing looks wrong"), "{cols}x{rows}:\n{screen}");
        assert!(screen.contains("first verdict in"), "{cols}x{rows}:\n{screen}");
        if rows >= 24 {
            assert!(screen.contains("GPU 0: ") && screen.contains("% busy"), "{cols}x{rows}:\n{screen}");
        }
        session.send("q");
        assert_eq!(session.exit_code(), 0);
    }
}
