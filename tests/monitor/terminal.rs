//! The terminal is given back on every exit path, checked on the real binary in a pseudo-terminal: a panic (the
//! debug-only `GPUSIGHT_TEST_PANIC=1` trigger), SIGTERM and SIGHUP (a closed tmux pane or SSH session), and Ctrl-Z
//! followed by `fg`. "Given back" means the raw bytes leave the alternate screen (`ESC[?1049l`) and show the
//! cursor (`ESC[?25h`), and the pty's line discipline has ECHO and ICANON on again (raw mode left).
//! Also the signal path as an unprivileged user against a root-owned process, and `--readonly`.
#![allow(clippy::expect_used, clippy::disallowed_methods, reason = "fixture helpers may panic; tests spawn children")]

use crate::common::pty::Session;
use crate::common::{BIN, temp_dir, victim};

const LEAVE_ALT: &[u8] = b"\x1b[?1049l";
const ENTER_ALT: &[u8] = b"\x1b[?1049h";
const SHOW_CURSOR: &[u8] = b"\x1b[?25h";
/// Linux termios local flags.
const ECHO: u32 = 0o10;
const ICANON: u32 = 0o2;

fn last_index_of(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// The restore sequences come after the last time the alternate screen was entered, and raw mode is off.
fn assert_restored(session: &Session) {
    let raw = &session.raw;
    let entered = last_index_of(raw, ENTER_ALT).expect("the monitor entered the alternate screen");
    let left = last_index_of(raw, LEAVE_ALT).expect("the alternate screen was left");
    let shown = last_index_of(raw, SHOW_CURSOR).expect("the cursor was shown");
    assert!(left > entered && shown > entered, "restore sequences must follow the last entry");
    let flags = session.local_flags();
    assert!(flags & ECHO != 0 && flags & ICANON != 0, "raw mode left: local flags {flags:o}");
}

/// Waits until the monitor has drawn (it is in raw mode then).
fn wait_drawn(session: &mut Session) {
    session.wait_for("Processes");
    let flags = session.local_flags();
    assert!(flags & ECHO == 0 && flags & ICANON == 0, "the monitor runs in raw mode: {flags:o}");
}

// `GPUSIGHT_TEST_PANIC` exists in debug builds only (the README's `cargo test`); a release build has no such path.
#[cfg(debug_assertions)]
#[test]
fn a_panic_restores_the_terminal_before_the_message() {
    let mut session = Session::gpusight(&["--synthetic", "mixed:2"], &[("GPUSIGHT_TEST_PANIC", "1")], 120, 40);
    let status = session.exit_status();
    assert!(!status.success(), "a panic exits non-zero");
    assert_eq!(status.exit_code(), 101);
    assert_restored(&session);
    let left = last_index_of(&session.raw, LEAVE_ALT).expect("left");
    let message = last_index_of(&session.raw, b"GPUSIGHT_TEST_PANIC").expect("the panic message is printed");
    assert!(message > left, "the panic message comes after leaving the alternate screen, on the normal screen");
}

#[test]
fn sigterm_and_sighup_restore_the_terminal_and_exit_128_plus_the_signal() {
    for (signal, code) in [(rustix::process::Signal::TERM, 143), (rustix::process::Signal::HUP, 129)] {
        let mut session = Session::gpusight(&["--synthetic", "mixed:2"], &[], 120, 40);
        wait_drawn(&mut session);
        session.signal(signal);
        let status = session.exit_status();
        assert_eq!(status.exit_code(), code, "{signal:?}");
        assert_restored(&session);
    }
}

#[test]
fn ctrl_z_restores_and_stops_and_fg_redraws() {
    let mut session = Session::gpusight(&["--synthetic", "mixed:2"], &[], 120, 40);
    wait_drawn(&mut session);
    let before = session.raw.len();
    session.send("\x1a");
    session.wait_until("the process stopped", |s| s.state() == Some('T'));
    // Drain what it wrote before stopping, then check it gave the terminal back.
    session.wait_until("the restore sequences", |s| last_index_of(&s.raw[before..], LEAVE_ALT).is_some());
    assert_restored(&session);
    // `fg`: SIGCONT. The monitor re-enters raw mode and the alternate screen, and draws again.
    let before = session.raw.len();
    session.signal(rustix::process::Signal::CONT);
    session.wait_until("the alternate screen again", |s| last_index_of(&s.raw[before..], ENTER_ALT).is_some());
    session.wait_until("a redraw", |s| {
        last_index_of(&s.raw[before..], b"Processes").is_some() && s.parser.screen().contents().contains("Processes")
    });
    let flags = session.local_flags();
    assert!(flags & ECHO == 0, "raw mode again after fg: {flags:o}");
    session.send("q");
    assert_eq!(session.exit_status().exit_code(), 0);
    assert_restored(&session);
}

#[test]
fn readonly_k_sends_nothing_and_says_why() {
    let (mut victim, pid, start) = victim();
    let attach = format!("{pid}:{start}");
    let mut session =
        Session::gpusight(&["--synthetic", "compute", "--synthetic-attach", &attach, "--readonly"], &[], 120, 40);
    session.wait_for(&pid);
    session.send(&format!("/{pid}\r"));
    session.send("\x1b[B");
    session.send("K");
    let screen = session.wait_for("read-only mode");
    assert!(screen.contains("signals are off"), "{screen}");
    assert!(!screen.contains("SIGKILL ]"), "no dialog in --readonly: {screen}");
    session.send("e");
    session.wait_for("environment screen is off");
    assert!(victim.try_wait().expect("try_wait").is_none(), "the process is alive");
    session.send("q");
    assert_eq!(session.exit_status().exit_code(), 0);
    victim.kill().expect("kill");
    victim.wait().expect("wait");
}

/// Why the unprivileged test cannot run here, if it cannot.
fn cannot_drop_privileges() -> Option<&'static str> {
    if !rustix::process::getuid().is_root() {
        return Some("not root: cannot start a root-owned process and drop to nobody");
    }
    if !std::path::Path::new("/usr/bin/setpriv").exists() {
        return Some("no /usr/bin/setpriv");
    }
    None
}

#[test]
fn an_unprivileged_user_cannot_kill_a_root_process_and_is_told_who_owns_it() {
    if let Some(why) = cannot_drop_privileges() {
        println!("skipped: {why}");
        return;
    }
    // A copy of the binary that nobody can execute (the build tree may sit under a private directory).
    let dir = temp_dir();
    let binary = dir.path().join("gpusight");
    std::fs::copy(BIN, &binary).expect("copy binary");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod dir");
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).expect("chmod binary");
    }
    let (mut victim, pid, start) = victim();
    let attach = format!("{pid}:{start}");
    let binary = binary.to_str().expect("utf-8 path");
    let args = [
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        binary,
        "--synthetic",
        "compute",
        "--synthetic-attach",
        &attach,
    ];
    let mut session =
        Session::start("/usr/bin/setpriv", &args, &[("HOME", "/tmp"), ("XDG_CONFIG_HOME", "/tmp")], 120, 40);
    session.wait_for(&pid);
    session.send(&format!("/{pid}\r"));
    session.send("\x1b[B");
    // The environment screen is for the user's own processes only.
    session.send("e");
    session.wait_for("is not yours");
    session.send("K");
    session.wait_for("SIGKILL ]");
    session.send("\r");
    let screen = session.wait_for("permission denied");
    assert!(screen.contains("owned by root"), "{screen}");
    assert!(victim.try_wait().expect("try_wait").is_none(), "the root-owned process is alive");
    session.send("q");
    assert_eq!(session.exit_status().exit_code(), 0);
    victim.kill().expect("kill");
    victim.wait().expect("wait");
}

/// A fatal signal inside a driver call (the synthetic source's `GPUSIGHT_SYNTHETIC_CRASH_AFTER` dies of SIGSEGV
/// inside a marked GPM call, as libnvidia-ml did on two GPUs): the terminal is given back before the process dies,
/// the message names the call family and the GPU, the process dies of the signal itself (so a core dump and the
/// shell's "Segmentation fault" are as they would be), and the recording keeps every line written before it.
#[test]
fn a_fatal_signal_in_a_driver_call_restores_the_terminal_names_the_call_and_keeps_the_recording() {
    let dir = temp_dir();
    let path = dir.path().join("crash.jsonl");
    let path_text = path.to_str().expect("utf-8 path");
    let mut session = Session::gpusight(
        &["--synthetic", "mixed:2", "--interval", "0.1", "--record", path_text],
        &[("GPUSIGHT_SYNTHETIC_CRASH_AFTER", "8")],
        120,
        40,
    );
    let status = session.exit_status();
    assert!(!status.success(), "the process dies of the signal");
    assert!(status.signal().is_some_and(|s| s.contains("Segmentation")), "{status:?}");
    assert_restored(&session);
    let left = last_index_of(&session.raw, LEAVE_ALT).expect("left");
    let text = String::from_utf8_lossy(&session.raw[left..]).to_string();
    assert!(text.contains("killed by SIGSEGV"), "{text}");
    assert!(text.contains("GPM") && text.contains("on GPU 0"), "the call family and the GPU are named: {text}");
    let recording = gpusight::source::replay::Recording::open(&path).expect("the recording reads");
    assert!(!recording.truncated_tail, "no line was cut");
    assert_eq!(recording.ticks.len(), 8, "every tick sampled before the crash was written");
}

#[test]
fn every_terminating_signal_restores_the_terminal() {
    // Found in the hardening pass: SIGQUIT, SIGUSR1 and SIGALRM ended the monitor with the terminal left raw.
    for (signal, code) in [
        (rustix::process::Signal::QUIT, 131),
        (rustix::process::Signal::USR1, 138),
        (rustix::process::Signal::ALARM, 142),
    ] {
        let mut session = Session::gpusight(&["--synthetic", "mixed:2"], &[], 120, 40);
        wait_drawn(&mut session);
        session.signal(signal);
        let status = session.exit_status();
        assert_eq!(status.exit_code(), code, "{signal:?}");
        assert_restored(&session);
    }
}
