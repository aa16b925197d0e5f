//! The system's OpenSSH client, run as a child process: the one place gpusight runs another program.
//!
//! gpusight has no SSH implementation of its own and never holds a password: it runs `ssh` with
//! `-o BatchMode=yes` (a host that would ask for a password or a host key confirmation fails at once instead),
//! `-o ConnectTimeout=N` and `-T` (no terminal on the remote side), the user's own `--ssh-option`s and
//! `--ssh-config`, and one remote command. Authentication is the user's ssh setup (keys, agent, certificates,
//! `~/.ssh/config`). Each ssh runs in its own process group, so a Ctrl-C on the terminal reaches gpusight only,
//! and quitting ends the whole group.

// `std::process::Command` is banned crate-wide by clippy.toml (gpusight never shells out); this module is the one
// exception, because `gpusight ssh` is about running the system's ssh (see ARCHITECTURE.md, invariants).
#![allow(clippy::disallowed_methods, reason = "the one module that runs a program: the system's ssh client")]

use std::io::{BufRead as _, BufReader, Read};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How gpusight reaches the hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshOptions {
    /// The ssh client (`ssh` on `PATH`).
    pub program: String,
    /// `-o ConnectTimeout=`, whole seconds (at least 1).
    pub connect_timeout: Duration,
    /// `-F FILE`: an ssh config file instead of the user's.
    pub config_file: Option<std::path::PathBuf>,
    /// Each one passed as `-o OPTION`.
    pub options: Vec<String>,
}

impl Default for SshOptions {
    fn default() -> Self {
        Self { program: "ssh".to_owned(), connect_timeout: Duration::from_secs(10), config_file: None, options: vec![] }
    }
}

impl SshOptions {
    /// The arguments before the remote command: `-T -o BatchMode=yes -o ConnectTimeout=N [-F FILE] [-o OPT]...
    /// -- HOST`. BatchMode comes first: ssh takes the first value given for an option, so no `--ssh-option` can
    /// turn password prompts back on.
    #[must_use]
    pub fn args(&self, host: &str) -> Vec<String> {
        let mut args = vec!["-T".to_owned(), "-o".to_owned(), "BatchMode=yes".to_owned()];
        let seconds = self.connect_timeout.as_secs().max(1);
        args.extend(["-o".to_owned(), format!("ConnectTimeout={seconds}")]);
        if let Some(file) = &self.config_file {
            args.extend(["-F".to_owned(), file.display().to_string()]);
        }
        for option in &self.options {
            args.extend(["-o".to_owned(), option.clone()]);
        }
        args.extend(["--".to_owned(), host.to_owned()]);
        args
    }
}

/// A word quoted for the remote POSIX shell: as it is when it is safe, else in single quotes.
#[must_use]
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A path quoted for the remote shell, a leading `~/` left for the shell to expand to the home directory.
#[must_use]
pub fn quote_path(path: &str) -> String {
    match path.strip_prefix("~/") {
        Some(rest) => format!("~/{}", shell_quote(rest)),
        None => shell_quote(path),
    }
}

/// The remote command that streams samples: `GPUSIGHT --record - --headless --exit-on-stdin-eof --interval S`,
/// the binary's path quoted for the remote shell.
#[must_use]
pub fn stream_command(remote_gpusight: &str, interval: Duration) -> String {
    format!(
        "{} --record - --headless --exit-on-stdin-eof --interval {}",
        quote_path(remote_gpusight),
        interval.as_secs_f64()
    )
}

/// The remote command that sends `signal` (a name: TERM, KILL, INT) to `pid` only if its start time (clock
/// ticks since boot, the 22nd field of `/proc/PID/stat`) is still `start_ticks`: a PID reused by another process
/// is not signalled. It prints `gpusight: gone` and exits 3 when the process is not the same one.
#[must_use]
pub fn kill_command(signal: &str, pid: u32, start_ticks: u64) -> String {
    let signal = shell_quote(signal);
    format!(
        "s=$(sed 's/.*) //' /proc/{pid}/stat 2>/dev/null | cut -d' ' -f20); if [ \"$s\" = {start_ticks} ]; then \
         kill -s {signal} {pid}; else echo 'gpusight: process {pid} is gone or its PID was reused' >&2; exit 3; fi"
    )
}

/// The last lines ssh (or the remote command) wrote on stderr, kept bounded, and whether stderr has ended.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<Vec<String>>>, Arc<AtomicBool>);

/// How many stderr lines are kept, and how long each may be.
const TAIL_LINES: usize = 8;
const TAIL_LINE_BYTES: usize = 400;
/// The most stderr bytes read from one ssh (the rest is drained unread).
const TAIL_TOTAL_BYTES: u64 = 1 << 20;

impl StderrTail {
    fn push(&self, line: &str) {
        let line = crate::text::visible(&crate::text::bounded(line.trim_end(), TAIL_LINE_BYTES)).into_owned();
        if line.trim().is_empty() {
            return;
        }
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == TAIL_LINES {
            lines.remove(0);
        }
        lines.push(line);
    }

    /// The lines kept, oldest first.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The last line, if any.
    #[must_use]
    pub fn last(&self) -> Option<String> {
        self.lines().pop()
    }

    fn read_from(&self, stderr: impl Read) {
        let mut reader = BufReader::new(stderr.take(TAIL_TOTAL_BYTES));
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            self.push(&String::from_utf8_lossy(&line));
            line.clear();
        }
        self.1.store(true, Ordering::Release);
    }

    /// Waits (at most `deadline`) until stderr has ended, so that ssh's last line, written just before it exited,
    /// is kept: ssh's stdout can end before its stderr is read to the end. True when it has.
    pub fn wait_ended(&self, deadline: Duration) -> bool {
        let start = std::time::Instant::now();
        while !self.1.load(Ordering::Acquire) {
            if start.elapsed() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

/// One running ssh: its stdout to read, its stdin held open (closing it tells the remote gpusight to exit), its
/// stderr's last lines.
#[derive(Debug)]
pub struct SshProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    pub stderr: StderrTail,
}

impl SshProcess {
    /// Starts `ssh ARGS HOST COMMAND` in its own process group, stdin and stdout as pipes, stderr read on its own
    /// thread into [`StderrTail`]. Returns the process and its stdout.
    ///
    /// # Errors
    /// The ssh client cannot be started (not installed).
    pub fn spawn(options: &SshOptions, host: &str, command: &str) -> std::io::Result<(Self, ChildStdout)> {
        use std::os::unix::process::CommandExt as _;
        let mut child = Command::new(&options.program)
            .args(options.args(host))
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
        let stderr = StderrTail::default();
        if let Some(pipe) = child.stderr.take() {
            let tail = stderr.clone();
            std::thread::Builder::new().name("gpusight-ssh-stderr".into()).spawn(move || tail.read_from(pipe))?;
        }
        let stdin = child.stdin.take();
        Ok((Self { child, stdin, stderr }, stdout))
    }

    /// The local ssh's process ID (also its process group's).
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ends the session: closes ssh's stdin (the remote gpusight sees end of input and exits), then sends SIGTERM
    /// to ssh's process group, and reaps it.
    pub fn end(&mut self) {
        self.stdin.take();
        if let Some(pid) = i32::try_from(self.child.id()).ok().and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
        }
        let _ = self.child.wait();
    }

    /// ssh's exit status if it has exited: `Some(code)`, `Some(None)` when a signal ended it; `None` while it runs.
    ///
    /// # Errors
    /// The status cannot be read.
    pub fn try_exit(&mut self) -> std::io::Result<Option<Option<i32>>> {
        Ok(self.child.try_wait()?.map(|s| s.code()))
    }

    /// Waits for ssh to exit; its exit code (`None` when a signal ended it).
    pub fn wait(&mut self) -> Option<i32> {
        self.stdin.take();
        self.child.wait().ok().and_then(|s| s.code())
    }
}

impl Drop for SshProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.end();
        }
    }
}

/// Runs `ssh HOST COMMAND` to its end with stdin closed: its exit code (`None` when a signal ended it) and its
/// stderr's last line.
///
/// # Errors
/// The ssh client cannot be started.
pub fn run_to_end(options: &SshOptions, host: &str, command: &str) -> std::io::Result<(Option<i32>, Option<String>)> {
    let (mut process, stdout) = SshProcess::spawn(options, host, command)?;
    process.stdin.take();
    let _ = std::io::copy(&mut stdout.take(1 << 20), &mut std::io::sink());
    let code = process.wait();
    process.stderr.wait_ended(Duration::from_secs(1));
    Ok((code, process.stderr.last()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_mode_and_the_timeout_come_before_the_users_options() {
        let options = SshOptions {
            connect_timeout: Duration::from_secs(5),
            config_file: Some("/tmp/ssh_config".into()),
            options: vec!["Port=2222".to_owned()],
            ..SshOptions::default()
        };
        assert_eq!(
            options.args("node01").join(" "),
            "-T -o BatchMode=yes -o ConnectTimeout=5 -F /tmp/ssh_config -o Port=2222 -- node01"
        );
        let zero = SshOptions { connect_timeout: Duration::ZERO, ..SshOptions::default() };
        assert!(zero.args("h").contains(&"ConnectTimeout=1".to_owned()));
    }

    #[test]
    fn the_remote_binary_is_quoted_for_the_remote_shell() {
        assert_eq!(shell_quote("gpusight"), "gpusight");
        assert_eq!(shell_quote("/opt/my tools/gpusight"), "'/opt/my tools/gpusight'");
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
        assert_eq!(shell_quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(quote_path("~/my bin/gpusight"), "~/'my bin/gpusight'");
        assert_eq!(
            stream_command("~/bin/gpusight", Duration::from_millis(500)),
            "~/bin/gpusight --record - --headless --exit-on-stdin-eof --interval 0.5"
        );
    }

    #[test]
    fn a_signal_is_sent_only_to_the_same_process() {
        let command = kill_command("TERM", 4242, 123_456);
        assert!(
            command.contains("/proc/4242/stat")
                && command.contains("= 123456")
                && command.contains("kill -s TERM 4242")
        );
    }
}
