//! The terminal is given back whatever signal ends the monitor, checked on the real binary in a pseudo-terminal:
//! signals no screen handles (SIGPWR, SIGSTKFLT, SIGIO, the real-time signals, and the fault signals sent with
//! `kill`), and what the message says about a fault signal another process sent.
#![allow(clippy::expect_used, reason = "fixture helpers may panic")]

use crate::common::pty::Session;

const ENTER_ALT: &[u8] = b"\x1b[?1049h";
const LEAVE_ALT: &[u8] = b"\x1b[?1049l";
const MOUSE_OFF: &[u8] = b"\x1b[?1000l";
const SHOW_CURSOR: &[u8] = b"\x1b[?25h";
/// Linux termios local flags.
const ECHO: u32 = 0o10;
const ICANON: u32 = 0o2;

fn last_index_of(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// Starts the monitor, waits until it drew, sends `signal` with kill(2) and waits for it to die; returns the
/// session with every byte it wrote.
fn killed_by(signal: i32) -> Session {
    let mut session = Session::gpusight(&["--synthetic", "mixed:2"], &[], 120, 40);
    session.wait_for("Processes");
    #[expect(unsafe_code, reason = "kill(2) with a signal number rustix has no name for (real-time signals)")]
    // SAFETY: kill takes plain integers; the PID is our child's.
    let sent = unsafe { libc::kill(session.pid(), signal) };
    assert_eq!(sent, 0, "kill {signal}");
    let status = session.exit_status();
    assert!(!status.success(), "signal {signal} ends the process");
    session
}

/// After the last entry into the alternate screen come the sequences that leave it, turn the mouse off and show
/// the cursor, and raw mode is off.
fn assert_restored(session: &Session, signal: i32) {
    let raw = &session.raw;
    let entered = last_index_of(raw, ENTER_ALT).expect("the monitor entered the alternate screen");
    for (what, bytes) in [("leave the alternate screen", LEAVE_ALT), ("mouse off", MOUSE_OFF), ("cursor", SHOW_CURSOR)]
    {
        let at = last_index_of(raw, bytes);
        assert!(at.is_some_and(|at| at > entered), "signal {signal}: no '{what}' after entering the screen");
    }
    let flags = session.local_flags();
    assert!(flags & ECHO != 0 && flags & ICANON != 0, "signal {signal}: raw mode left on: local flags {flags:o}");
}

#[test]
fn every_signal_that_ends_the_process_restores_the_terminal() {
    for signal in [
        libc::SIGPWR,
        libc::SIGSTKFLT,
        libc::SIGIO,
        libc::SIGRTMIN(),
        libc::SIGRTMAX(),
        libc::SIGFPE,
        libc::SIGTRAP,
        libc::SIGSYS,
    ] {
        let session = killed_by(signal);
        assert_restored(&session, signal);
    }
}

#[test]
fn a_fault_signal_sent_with_kill_names_its_sender_not_a_bug() {
    for (signal, name) in [(libc::SIGSEGV, "SIGSEGV"), (libc::SIGABRT, "SIGABRT")] {
        let session = killed_by(signal);
        assert_restored(&session, signal);
        let left = last_index_of(&session.raw, LEAVE_ALT).expect("left");
        let text = String::from_utf8_lossy(&session.raw[left..]).to_string();
        let sender = format!("killed by {name}");
        assert!(text.contains(&sender), "{text}");
        let pid = format!("sent by PID {} (user ", std::process::id());
        assert!(text.contains(&pid) && text.contains(") with kill"), "the sender is named: {text}");
        assert!(!text.contains("gpusight bug"), "a signal sent by kill is no bug: {text}");
    }
}

#[test]
fn a_terminal_without_colour_or_box_drawing_gets_neither() {
    // An empty TERM is TERM unset.
    for term in ["", "vt100", "vt220", "xterm-mono"] {
        let mut session = Session::gpusight(&["--synthetic", "mixed:2"], &[("TERM", term)], 120, 40);
        session.wait_for("Processes");
        session.send("q");
        let _ = session.exit_status();
        let text = String::from_utf8_lossy(&session.raw).to_string();
        for sgr in ["\x1b[38;5;", "\x1b[48;5;", "\x1b[38;2;", "\x1b[48;2;"] {
            assert!(!text.contains(sgr), "TERM={term:?}: 256-colour or true-colour SGR sent");
        }
        assert!(!text.contains(['─', '│', '┌', '┐', '└', '┘', '╭', '╮']), "TERM={term:?}: box drawing sent");
    }
}
