//! A program in a pseudo-terminal: its output read through a terminal parser, every raw byte kept (to check the
//! escape sequences that restore the terminal), keys sent, signals, the line discipline's flags and the exit.

use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

/// How long any wait on the program lasts before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

pub struct Session {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    output: mpsc::Receiver<Vec<u8>>,
    /// Every byte the program wrote.
    pub raw: Vec<u8>,
    pub parser: vt100::Parser,
}

impl Session {
    /// Starts `program ARGS` with `TERM=xterm-256color`, no runtime directory (`NO_RUNTIME_DIR`) and `env` in a
    /// `cols` x `rows` pseudo-terminal.
    pub fn start(program: &str, args: &[&str], env: &[(&str, &str)], cols: u16, rows: u16) -> Self {
        let pair = native_pty_system().openpty(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).expect("pty");
        let mut command = CommandBuilder::new(program);
        command.args(args);
        command.env("TERM", "xterm-256color");
        command.env("XDG_RUNTIME_DIR", super::NO_RUNTIME_DIR);
        for (k, v) in env {
            command.env(k, v);
        }
        let child = pair.slave.spawn_command(command).expect("spawn");
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
        Self {
            child,
            master: pair.master,
            writer,
            output,
            raw: Vec::new(),
            parser: vt100::Parser::new(rows.try_into().expect("rows"), cols.try_into().expect("cols"), 0),
        }
    }

    /// Starts `gpusight ARGS` with `env` in a `cols` x `rows` pseudo-terminal.
    pub fn gpusight(args: &[&str], env: &[(&str, &str)], cols: u16, rows: u16) -> Self {
        Self::start(super::BIN, args, env, cols, rows)
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.process_id().expect("pid")).expect("pid fits")
    }

    fn take(&mut self, bytes: &[u8]) {
        self.raw.extend_from_slice(bytes);
        self.parser.process(bytes);
    }

    /// The screen as text.
    pub fn screen(&self) -> String {
        self.parser.screen().contents()
    }

    /// Reads output until `done` holds or 20 s pass.
    pub fn wait_until(&mut self, what: &str, mut done: impl FnMut(&Self) -> bool) {
        let deadline = Instant::now() + DEADLINE;
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "{what} never happened; the screen was:\n{}", self.screen());
            if let Ok(bytes) = self.output.recv_timeout(left.min(Duration::from_millis(100))) {
                self.take(&bytes);
            }
        }
    }

    /// Reads output until `done(screen)` holds or 20 s pass; returns the screen.
    pub fn wait_screen(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        self.wait_until(what, |s| done(&s.screen()));
        self.screen()
    }

    /// Reads output until the screen contains `text` or 20 s pass; returns the screen.
    pub fn wait_for(&mut self, text: &str) -> String {
        self.wait_screen(&format!("'{text}' on screen"), |s| s.contains(text))
    }

    pub fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("write");
        self.writer.flush().expect("flush");
    }

    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.pid()).expect("pid");
        rustix::process::kill_process(pid, signal).expect("kill");
    }

    /// Whether the program is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Waits for the exit and drains the output; returns the exit status.
    pub fn exit_status(&mut self) -> portable_pty::ExitStatus {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                // Drain what the child wrote before it exited.
                while let Ok(bytes) = self.output.recv_timeout(Duration::from_millis(200)) {
                    self.take(&bytes);
                }
                return status;
            }
            assert!(Instant::now() < deadline, "the child did not exit");
            if let Ok(bytes) = self.output.recv_timeout(Duration::from_millis(100)) {
                self.take(&bytes);
            }
        }
    }

    /// Waits for the exit; returns the exit code.
    pub fn exit_code(&mut self) -> u32 {
        self.exit_status().exit_code()
    }

    /// The pty's local flags (ECHO, ICANON...), as the line discipline has them now.
    pub fn local_flags(&self) -> u32 {
        self.master.get_termios().expect("termios").local_flags.bits()
    }

    /// The process state letter from `/proc/PID/stat`.
    pub fn state(&self) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).ok()?;
        stat[stat.rfind(')')? + 1..].trim_start().chars().next()
    }
}
