//! End to end: the real binary in a pseudo-terminal, keys sent, the screen read back through a terminal
//! parser, the exit code checked. Needs the CLI's `--synthetic SCENARIO` and `--synthetic-attach PID`.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "fixture helpers may panic; tests may spawn a child to signal"
)]

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt as _;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

struct Session {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    output: mpsc::Receiver<Vec<u8>>,
    parser: vt100::Parser,
    /// Every byte the program wrote, to check the escape sequences that restore the terminal.
    raw: Vec<u8>,
}

impl Session {
    fn start(args: &[&str], cols: u16, rows: u16) -> Self {
        let pty = native_pty_system();
        let pair = pty.openpty(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).expect("pty");
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_gpusight"));
        command.args(args);
        command.env("TERM", "xterm-256color");
        let child = pair.slave.spawn_command(command).expect("spawn gpusight");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("reader");
        let writer = pair.master.take_writer().expect("writer");
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        // The master must live as long as the session; leak it into the reader's lifetime.
        std::mem::forget(pair.master);
        Self {
            child,
            writer,
            output,
            parser: vt100::Parser::new(rows.try_into().expect("rows"), cols.try_into().expect("cols"), 0),
            raw: Vec::new(),
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
        self.raw.extend_from_slice(bytes);
    }

    /// Reads output until `done(screen)` holds or 20 s pass; returns the screen.
    fn wait_until(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.parser.screen().contents();
            if done(&screen) {
                return screen;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "{what} never happened; the screen was:\n{screen}");
            if let Ok(bytes) = self.output.recv_timeout(left) {
                self.take(&bytes);
            }
        }
    }

    /// Reads output until the screen contains `text` or 20 s pass; returns the screen.
    fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.parser.screen().contents();
            if screen.contains(text) {
                return screen;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "'{text}' never appeared; the screen was:\n{screen}");
            if let Ok(bytes) = self.output.recv_timeout(left) {
                self.take(&bytes);
            }
        }
    }

    fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("write");
        self.writer.flush().expect("flush");
    }

    fn exit_code(&mut self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            while let Ok(bytes) = self.output.try_recv() {
                self.take(&bytes);
            }
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.exit_code();
            }
            assert!(Instant::now() < deadline, "gpusight did not exit");
            // Wait for more output (or the end of it) instead of sleeping.
            if let Ok(bytes) = self.output.recv_timeout(Duration::from_millis(100)) {
                self.take(&bytes);
            }
        }
    }
}

#[test]
fn monitor_starts_shows_gpus_and_quits_with_q() {
    let mut session = Session::start(&["--synthetic", "mixed:8"], 120, 40);
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
    let mut session = Session::start(&["--synthetic", "compute"], 36, 8);
    session.wait_for("Terminal too small");
    session.send("\x03");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn a_small_pane_draws_the_monitor() {
    let mut session = Session::start(&["--synthetic", "mixed:8"], 40, 10);
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

/// Spawns `sleep 60` and returns it with its start ticks from /proc (its own child: not the live system's state).
fn victim() -> (std::process::Child, String, u64) {
    let child = std::process::Command::new("sleep").arg("60").spawn().expect("spawn sleep");
    let pid = child.id().to_string();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let start = gpusight::app::signal::parse_start_ticks(&stat).expect("start ticks");
    (child, pid, start)
}

/// The monitor on a synthetic machine that lists `pid` (believed to have started at `start_ticks`) as a GPU
/// process, with that process selected through the filter (`/PID` Enter selects the first match).
fn attached(pid: &str, start_ticks: u64) -> Session {
    let attach = format!("{pid}:{start_ticks}");
    let mut session = Session::start(&["--synthetic", "compute", "--synthetic-attach", &attach], 120, 40);
    session.wait_for(pid);
    session.send(&format!("/{pid}\r"));
    session
}

#[test]
fn the_demo_draws_and_every_screen_opens_and_closes() {
    let mut session = Session::start(&["--demo"], 120, 40);
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
        session.wait_until(&format!("{key} closes"), |s| !s.contains(opened) && s.contains("Processes"));
    }
    session.send("/");
    session.wait_for("Filter:");
    session.send("\x1b");
    session.wait_until("the filter closes", |s| !s.contains("Filter:"));
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
    let screen = session.wait_until("the dialog closes", |s| !s.contains("Send a signal"));
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
