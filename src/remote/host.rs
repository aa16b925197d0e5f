//! One reader thread per host: it reads the host's stream (`gpusight --record -` over ssh) within the recording
//! reader's bounds, feeds the host's own [`Pipeline`] (history and findings), and sends owned [`HostUpdate`]s over
//! a channel to the thread that shows them. Data flows one way: nothing is sent back to the reader.

use std::io::BufReader;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::advice::Thresholds;
use crate::fleet::query::{Node, NodeState};
use crate::pipeline::Pipeline;
use crate::sample::Snapshot;
use crate::source::replay::{ReadLimits, StreamError, StreamItem, StreamReader};
use crate::source::sampler::FeedEvent;

use super::ssh::{SshOptions, SshProcess, StderrTail};

/// The exit status of a POSIX shell that could not find the command.
const COMMAND_NOT_FOUND: i32 = 127;
/// The exit status of ssh itself failing (connection, authentication, host key).
const SSH_FAILED: i32 = 255;

/// How to install gpusight, for the message on a host without it.
pub const INSTALL_HINT: &str = "install it there with `cargo install gpusight` or `pip install gpusight`, or give \
                                its path with --remote-gpusight PATH";

/// What a host whose gpusight predates `gpusight ssh` says (it does not know `--exit-on-stdin-eof`).
const OLDER_REMOTE: &str = "the gpusight on this host is older than this one (it has no --exit-on-stdin-eof): \
                            update it there, or give --remote-command";

/// What a reader thread sends: the host (its index in the host list) and its node now.
#[derive(Debug, Clone)]
pub struct HostUpdate {
    pub host: usize,
    pub node: Box<Node>,
    /// Whether this update carries a new sample (the stale clock restarts), or only a state change.
    pub sample: bool,
    /// The end of this host's stream: no update follows.
    pub last: bool,
}

/// How one host's reader runs.
#[derive(Debug, Clone)]
pub struct ReaderConfig {
    pub ssh: SshOptions,
    /// The remote command (see [`super::ssh::stream_command`]).
    pub command: String,
    pub capacity: usize,
    pub thresholds: Thresholds,
    pub limits: ReadLimits,
    /// Stop after this many samples (`--once`, `--doctor`); `None`: until the stream ends or the host is ended.
    pub stop_after: Option<usize>,
}

/// The bounds a host's stream is read within: the recording reader's line length and GPU count.
#[must_use]
pub fn stream_limits() -> ReadLimits {
    ReadLimits::default()
}

/// A host being read: its ssh (ended by [`HostHandle::end`]) and the reader thread, which returns the pipeline
/// and the host's last node.
#[derive(Debug)]
pub struct HostHandle {
    pub name: String,
    process: Arc<Mutex<Option<SshProcess>>>,
    /// Where the reader also sends each snapshot while the host's own monitor is open ([`HostHandle::tap`]).
    tap: Tap,
    thread: Option<std::thread::JoinHandle<HostOutcome>>,
}

/// The channel a host's snapshots are copied to while its monitor is open.
type Tap = Arc<Mutex<Option<Sender<FeedEvent>>>>;

/// What a reader leaves when it ends: the pipeline (`None` when no sample came) and the host's last node.
#[derive(Debug)]
pub struct HostOutcome {
    pub pipeline: Option<Pipeline>,
    pub node: Node,
}

impl HostHandle {
    /// Starts ssh to `host` and its reader thread, which sends [`HostUpdate`]s tagged `index` to `tx`.
    ///
    /// # Errors
    /// The ssh client cannot be started, or the thread cannot.
    pub fn spawn(index: usize, host: &str, config: &ReaderConfig, tx: Sender<HostUpdate>) -> std::io::Result<Self> {
        let (process, stdout) = SshProcess::spawn(&config.ssh, host, &config.command)?;
        let stderr = process.stderr.clone();
        let process = Arc::new(Mutex::new(Some(process)));
        let tap: Tap = Arc::default();
        let reader = Reader { index, host: host.to_owned(), config: config.clone(), tx, stderr, tap: Arc::clone(&tap) };
        let shared = Arc::clone(&process);
        let thread = std::thread::Builder::new()
            .name(format!("gpusight-host-{index}"))
            .spawn(move || reader.run(BufReader::new(stdout), &shared))?;
        Ok(Self { name: host.to_owned(), process, tap, thread: Some(thread) })
    }

    /// From the next sample on, every snapshot of this host is also sent to the returned receiver, as a sampler
    /// feeds the monitor (`FeedEvent`), and the end of the stream as [`FeedEvent::Failed`]; until the receiver is
    /// dropped.
    #[must_use]
    pub fn tap(&self) -> std::sync::mpsc::Receiver<FeedEvent> {
        let (tx, rx) = std::sync::mpsc::channel();
        *self.tap.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        rx
    }

    /// Ends the host's ssh (its stdin closed, its process group sent SIGTERM); the reader then sees the end of
    /// its stream.
    pub fn end(&self) {
        if let Some(mut process) = self.process.lock().unwrap_or_else(PoisonError::into_inner).take() {
            process.end();
        }
    }

    /// Ends the host and waits for its reader.
    pub fn join(mut self) -> Option<HostOutcome> {
        self.end();
        self.thread.take().and_then(|t| t.join().ok())
    }

    /// The local ssh's process ID while it runs.
    #[must_use]
    pub fn ssh_pid(&self) -> Option<u32> {
        self.process.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(SshProcess::pid)
    }
}

impl Drop for HostHandle {
    fn drop(&mut self) {
        self.end();
    }
}

struct Reader {
    index: usize,
    host: String,
    config: ReaderConfig,
    tx: Sender<HostUpdate>,
    stderr: StderrTail,
    tap: Tap,
}

impl Reader {
    /// Copies an event to the host's monitor while one is open; forgets a monitor that closed.
    fn to_tap(&self, event: impl FnOnce() -> FeedEvent) {
        let mut tap = self.tap.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = tap.as_ref()
            && tx.send(event()).is_err()
        {
            *tap = None;
        }
    }

    fn send(&self, node: Node, sample: bool, last: bool) {
        let _ = self.tx.send(HostUpdate { host: self.index, node: Box::new(node), sample, last });
    }

    fn run(self, stdout: impl std::io::BufRead, process: &Arc<Mutex<Option<SshProcess>>>) -> HostOutcome {
        let mut stream = StreamReader::new(stdout, self.config.limits);
        let mut machine = None;
        let mut pipeline: Option<Pipeline> = None;
        let mut samples = 0_usize;
        let end = loop {
            match stream.next_item() {
                Ok(Some(StreamItem::Machine(m))) => machine = Some(m),
                Ok(Some(StreamItem::Tick(tick))) => {
                    let Some(machine) = &machine else { continue };
                    let snapshot = Snapshot { machine: Arc::clone(machine), tick: *tick };
                    self.to_tap(|| FeedEvent::Snapshot(Box::new(snapshot.clone())));
                    match &mut pipeline {
                        Some(p) => p.ingest_owned(snapshot),
                        None => {
                            pipeline =
                                Some(Pipeline::new(&snapshot, self.config.capacity, self.config.thresholds.clone()));
                        }
                    }
                    samples += 1;
                    if let Some(p) = &pipeline {
                        self.send(super::nodes::node(&self.host, p, NodeState::Up, None), true, false);
                    }
                    if self.config.stop_after.is_some_and(|n| samples >= n) {
                        break (NodeState::Up, None);
                    }
                }
                Ok(None) => break self.ended(process),
                Err(StreamError::Bad { line, what }) => {
                    end_process(process);
                    break (NodeState::BadStream, Some(format!("bad stream at line {line}: {what}")));
                }
                Err(StreamError::Io(e)) => {
                    end_process(process);
                    break (NodeState::Lost, Some(format!("reading the stream failed: {e}")));
                }
            }
        };
        end_process(process);
        self.to_tap(|| FeedEvent::Failed(end.1.clone().unwrap_or_else(|| "the host's stream ended".to_owned())));
        let node = match &pipeline {
            Some(p) => super::nodes::node(&self.host, p, end.0, end.1),
            None => super::nodes::empty(&self.host, end.0, end.1),
        };
        self.send(node.clone(), false, true);
        HostOutcome { pipeline, node }
    }

    /// The stream ended: why, from ssh's exit status and its last error line.
    fn ended(&self, process: &Arc<Mutex<Option<SshProcess>>>) -> (NodeState, Option<String>) {
        let code = wait_exit(process, Duration::from_secs(5));
        // ssh's last line may still be on its way through the stderr reader: its pipe ends when ssh does.
        self.stderr.wait_ended(Duration::from_secs(1));
        let lines = self.stderr.lines();
        let last = lines.last().cloned();
        let not_found = lines.iter().any(|l| l.contains("command not found") || l.ends_with(": not found"));
        if lines.iter().any(|l| l.contains("--exit-on-stdin-eof")) {
            return (NodeState::Lost, Some(OLDER_REMOTE.to_owned()));
        }
        match code {
            Some(COMMAND_NOT_FOUND) => {
                (NodeState::NoGpusight, Some(format!("gpusight is not on this host: {INSTALL_HINT}")))
            }
            _ if not_found => (NodeState::NoGpusight, Some(format!("gpusight is not on this host: {INSTALL_HINT}"))),
            Some(SSH_FAILED) => {
                (NodeState::Lost, Some(last.unwrap_or_else(|| "ssh failed (exit status 255) and said nothing".into())))
            }
            Some(code) => {
                let said = last.map(|l| format!(": {l}")).unwrap_or_default();
                (NodeState::Lost, Some(format!("the remote gpusight exited with status {code}{said}")))
            }
            None => (NodeState::Lost, Some(last.unwrap_or_else(|| "ssh ended (killed by a signal)".to_owned()))),
        }
    }
}

/// Ends the host's ssh if it still runs.
fn end_process(process: &Arc<Mutex<Option<SshProcess>>>) {
    if let Some(mut p) = process.lock().unwrap_or_else(PoisonError::into_inner).take() {
        p.end();
    }
}

/// ssh's exit status once it exits (its stdout has closed, so it is about to), within `deadline`; `None` when a
/// signal ended it, it was ended already, or it did not exit in time (then it is ended).
fn wait_exit(process: &Arc<Mutex<Option<SshProcess>>>, deadline: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        {
            let mut slot = process.lock().unwrap_or_else(PoisonError::into_inner);
            let p = slot.as_mut()?;
            match p.try_exit() {
                Ok(Some(code)) => {
                    slot.take();
                    return code;
                }
                Ok(None) if start.elapsed() < deadline => {}
                _ => {
                    if let Some(mut p) = slot.take() {
                        p.end();
                    }
                    return None;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
