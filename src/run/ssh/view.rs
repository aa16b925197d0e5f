//! `gpusight ssh`'s live view: the fleet view's screen and widget over the hosts' nodes, each host's node
//! replaced as its reader sends it; a host silent for three intervals is shown stale. Quitting (q, SIGINT,
//! SIGTERM, SIGHUP) ends every ssh.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::app::signal::{SignalKind, SignalTarget};
use crate::app::{DialogButton, SignalDialog};
use crate::cli::Cli;
use crate::config::Config;
use crate::config::ui::ThemeName;
use crate::fleet::query::{Fleet, Node, NodeState};
use crate::fleet::screen::FleetScreen;
use crate::fleet::view::FleetView;
use crate::keys::{Action, KeyBinding, Keymap};
use crate::remote::host::{HostHandle, HostUpdate, ReaderConfig};
use crate::remote::ssh::{kill_command, run_to_end};
use crate::ui::Paint;

use super::super::terminal_events::{TerminalEvent, spawn_input, spawn_signals};

enum Message {
    Host(HostUpdate),
    Terminal(TerminalEvent),
    /// The outcome of a signal sent through ssh.
    Notice(String),
}

impl From<TerminalEvent> for Message {
    fn from(event: TerminalEvent) -> Self {
        Self::Terminal(event)
    }
}

/// The hosts' latest nodes and when each last sent a sample.
struct Hosts {
    nodes: Vec<Node>,
    last_sample: Vec<Option<Instant>>,
    ended: Vec<bool>,
    /// Silent this long, a host is stale: three intervals.
    stale_after: Duration,
}

impl Hosts {
    fn new(hosts: &[String], interval: Duration) -> Self {
        let connecting = |h: &String| crate::remote::nodes::empty(h, NodeState::Connecting, None);
        Self {
            nodes: hosts.iter().map(connecting).collect(),
            last_sample: vec![None; hosts.len()],
            ended: vec![false; hosts.len()],
            stale_after: interval * 3,
        }
    }

    fn take(&mut self, update: HostUpdate, now: Instant) {
        let Some(node) = self.nodes.get_mut(update.host) else { return };
        *node = *update.node;
        if update.sample {
            self.last_sample[update.host] = Some(now);
        }
        self.ended[update.host] |= update.last;
    }

    /// Marks the hosts that sent nothing for three intervals stale (and back up when they send again).
    fn mark_stale(&mut self, now: Instant) {
        for ((node, last), ended) in self.nodes.iter_mut().zip(&self.last_sample).zip(&self.ended) {
            let silent = last.map(|at| now.saturating_duration_since(at));
            match silent {
                Some(s) if !ended && s > self.stale_after && node.state == NodeState::Up => {
                    node.state = NodeState::Stale;
                    node.note = Some(format!("no sample for {} s", s.as_secs()));
                }
                Some(s) if node.state == NodeState::Stale => {
                    node.note = Some(format!("no sample for {} s", s.as_secs()));
                }
                _ => {}
            }
        }
    }

    fn fleet(&self) -> Fleet {
        Fleet { source: format!("ssh: {} hosts", self.nodes.len()), nodes: self.nodes.clone(), missing_columns: vec![] }
    }
}

/// Runs the view until the user quits; every ssh is ended on the way out.
pub(super) fn run(
    cli: &Cli,
    config: &Config,
    hosts: &[String],
    reader: &ReaderConfig,
    interval: Duration,
    readonly: bool,
) -> color_eyre::Result<i32> {
    let keymap = Keymap::with_overrides(&config.keys)?;
    let theme = if super::super::use_color(cli) {
        super::super::monitor::theme(cli, config).map_err(|e| color_eyre::eyre::eyre!("{e}"))?
    } else {
        ThemeName::NoColor
    };
    let paint = Paint { load: config.ui.load_colors, ..Paint::new(theme, super::super::use_ascii(cli)) };
    let (tx, rx) = mpsc::channel::<Message>();
    let (host_tx, host_rx) = mpsc::channel::<HostUpdate>();
    let mut handles = Vec::with_capacity(hosts.len());
    for (i, host) in hosts.iter().enumerate() {
        handles.push(HostHandle::spawn(i, host, reader, host_tx.clone())?);
    }
    drop(host_tx);
    forward(host_rx, tx.clone())?;
    let input_paused = Arc::new(AtomicBool::new(false));
    spawn_input("gpusight-ssh-input", tx.clone(), Some(Arc::clone(&input_paused)))?;
    spawn_signals("gpusight-ssh-signals", tx.clone())?;
    let mut session = Session {
        state: Hosts::new(hosts, interval),
        screen: FleetScreen {
            url: "over ssh".to_owned(),
            view: None,
            error: None,
            signals: !readonly,
            monitors: true,
            notice: None,
        },
        dialog: None,
        keymap: &keymap,
        reader,
        readonly,
        tx,
        handles: &handles,
        cli,
        config,
        input_paused,
        open: None,
    };
    session.screen.on_result(Ok(session.state.fleet()));
    let mut terminal = crate::terminal::init(false)?;
    let result = event_loop(&mut terminal, &rx, &mut session, &paint, interval);
    crate::terminal::restore();
    for handle in &handles {
        handle.end();
    }
    result
}

/// The loop's state: the hosts, the fleet screen, the signal dialog open (with its host), and how to signal.
struct Session<'a> {
    state: Hosts,
    screen: FleetScreen,
    dialog: Option<(String, SignalDialog)>,
    keymap: &'a Keymap,
    reader: &'a ReaderConfig,
    readonly: bool,
    tx: mpsc::Sender<Message>,
    handles: &'a [HostHandle],
    cli: &'a Cli,
    config: &'a Config,
    /// Set while a host's own monitor runs, whose input thread then reads the keys.
    input_paused: Arc<AtomicBool>,
    /// A host whose monitor Enter asked for (its index), opened before the next frame.
    open: Option<usize>,
}

/// What a key asks of the loop.
enum Step {
    Continue,
    Quit,
}

impl Session<'_> {
    fn on_key(&mut self, key: KeyBinding) -> Step {
        let Some(action) = self.keymap.lookup(key, self.dialog.is_some()) else { return Step::Continue };
        if let Some((host, dialog)) = &mut self.dialog {
            match action {
                Action::DialogConfirm => {
                    let (host, dialog) = (host.clone(), dialog.clone());
                    self.dialog = None;
                    self.send(&host, &dialog);
                }
                Action::DialogCancel | Action::Quit | Action::Back => self.dialog = None,
                Action::DialogLeft => dialog.button = dialog.button.moved(-1),
                Action::DialogRight => dialog.button = dialog.button.moved(1),
                other => {
                    if let Some(kind) = other.signal() {
                        dialog.button = DialogButton::Send(kind);
                    }
                }
            }
            return Step::Continue;
        }
        let drilled = self.screen.view.as_ref().filter(|v| v.drilled);
        if let Some(kind) = action.signal()
            && drilled.is_some()
        {
            self.open_dialog(kind);
            return Step::Continue;
        }
        if action == Action::Details
            && let Some(node) = drilled.and_then(FleetView::selected_node)
        {
            // Enter in a host's drill-down: the host's own monitor, while its stream runs.
            if matches!(node.state, NodeState::Up | NodeState::Stale) {
                self.open = self.handles.iter().position(|h| h.name == node.name);
            } else {
                let state = crate::fleet::view::state_word(node.state);
                self.screen.notice = Some(format!("{}: {state}: no stream to open a monitor on", node.name));
            }
            return Step::Continue;
        }
        if self.screen.on_action(action) { Step::Continue } else { Step::Quit }
    }

    /// T/K/I on a process of the drill-down: the dialog, or why not.
    fn open_dialog(&mut self, kind: SignalKind) {
        let view = self.screen.view.as_ref();
        let (Some(node), Some(process)) =
            (view.and_then(FleetView::selected_node), view.and_then(FleetView::selected_process))
        else {
            self.screen.notice = Some("no process selected".to_owned());
            return;
        };
        if self.readonly {
            self.screen.notice = Some("read-only (--readonly): no signals".to_owned());
            return;
        }
        let Some(start_ticks) = process.start_ticks else {
            self.screen.notice = Some(format!("PID {}: its start time is unknown, so no signal is sent", process.pid));
            return;
        };
        let target = SignalTarget {
            pid: process.pid,
            start_ticks,
            user: process.user.clone(),
            command: process.command.clone().unwrap_or_default(),
            gpu_mem_bytes: process.gpu_memory_bytes,
        };
        let dialog = SignalDialog { targets: vec![target], job: None, button: DialogButton::Send(kind) };
        self.dialog = Some((node.name.clone(), dialog));
    }

    /// Sends the dialog's signal through `ssh HOST` on a thread of its own; its outcome comes back as a notice.
    fn send(&mut self, host: &str, dialog: &SignalDialog) {
        let DialogButton::Send(kind) = dialog.button else { return };
        let Some(target) = dialog.targets.first() else { return };
        let name = kind.name().trim_start_matches("SIG");
        let command = kill_command(name, target.pid, target.start_ticks);
        let (ssh, host, tx, pid) = (self.reader.ssh.clone(), host.to_owned(), self.tx.clone(), target.pid);
        let what = format!("{} to PID {pid} on {host}", kind.name());
        self.screen.notice = Some(format!("sending {what}…"));
        let failed = format!("{what}: cannot start");
        let spawned = std::thread::Builder::new().name("gpusight-ssh-signal".into()).spawn(move || {
            let notice = match run_to_end(&ssh, &host, &command) {
                Ok((Some(0), _)) => format!("sent {what}"),
                Ok((Some(3), _)) => format!("{what}: not sent: the process is gone or its PID was reused"),
                Ok((_, Some(last))) => format!("{what}: failed: {last}"),
                Ok((_, None)) => format!("{what}: failed"),
                Err(e) => format!("{what}: cannot run ssh: {e}"),
            };
            let _ = tx.send(Message::Notice(notice));
        });
        if let Err(e) = spawned {
            self.screen.notice = Some(format!("{failed}: {e}"));
        }
    }
}

impl Session<'_> {
    /// Takes one message (or a timeout); `Some(exit code)` when the view should close.
    fn handle(&mut self, message: Result<Message, mpsc::RecvTimeoutError>, now: Instant) -> Option<i32> {
        match message {
            Ok(Message::Host(update)) => self.state.take(update, now),
            Ok(Message::Terminal(TerminalEvent::Key(key))) => {
                if matches!(self.on_key(key), Step::Quit) {
                    return Some(0);
                }
            }
            Ok(Message::Notice(text)) => self.screen.notice = Some(crate::text::visible(&text).into_owned()),
            Ok(Message::Terminal(TerminalEvent::Redraw)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(Message::Terminal(TerminalEvent::InputClosed)) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Some(0);
            }
            Ok(Message::Terminal(TerminalEvent::Terminate(signal))) => return Some(crate::exit::SIGNAL_BASE + signal),
        }
        None
    }
}

/// How long the view gathers hosts' samples before it draws them.
const FRAME_BATCH: Duration = Duration::from_millis(100);

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    rx: &mpsc::Receiver<Message>,
    session: &mut Session<'_>,
    paint: &Paint,
    interval: Duration,
) -> color_eyre::Result<i32> {
    loop {
        terminal.draw(|frame| {
            session.screen.draw_with(frame, paint);
            if let Some((_, dialog)) = &session.dialog {
                let area = frame.area();
                crate::ui::fleet::render_signal_dialog(dialog, paint, area, frame.buffer_mut());
            }
        })?;
        // Hosts' samples are gathered for up to FRAME_BATCH before the next frame: with many hosts, one frame per
        // batch of samples rather than one per host's sample. A key is drawn at once.
        let mut message = rx.recv_timeout(interval.min(Duration::from_secs(1)));
        let mut now = Instant::now();
        let until = now + FRAME_BATCH;
        loop {
            let sample = matches!(message, Ok(Message::Host(_)));
            if let Some(code) = session.handle(message, now) {
                return Ok(code);
            }
            let left = until.saturating_duration_since(Instant::now());
            if !sample || left.is_zero() {
                break;
            }
            match rx.recv_timeout(left) {
                Ok(next) => message = Ok(next),
                Err(_) => break,
            }
            now = Instant::now();
        }
        if let Some(index) = session.open.take()
            && let Some(code) = open_monitor(terminal, session, index)?
        {
            return Ok(code);
        }
        session.state.mark_stale(now);
        session.screen.on_result(Ok(session.state.fleet()));
    }
}

/// Runs host `index`'s monitor with the fleet view's input paused, then takes the terminal back; `Some(code)`
/// when a signal ended the monitor (the view ends with it).
fn open_monitor(
    terminal: &mut ratatui::DefaultTerminal,
    session: &mut Session<'_>,
    index: usize,
) -> color_eyre::Result<Option<i32>> {
    let Some(handle) = session.handles.get(index) else { return Ok(None) };
    session.input_paused.store(true, Ordering::SeqCst);
    let result = super::monitor::open(session.cli, session.config, handle, &session.reader.ssh, session.readonly);
    // A new terminal: entering the alternate screen again clears it, and its first frame draws everything.
    *terminal = crate::terminal::init(false)?;
    session.input_paused.store(false, Ordering::SeqCst);
    match result? {
        Ok(code) => Ok(code),
        Err(notice) => {
            session.screen.notice = Some(crate::text::visible(&notice).into_owned());
            Ok(None)
        }
    }
}

fn forward(host_rx: mpsc::Receiver<HostUpdate>, tx: mpsc::Sender<Message>) -> std::io::Result<()> {
    std::thread::Builder::new().name("gpusight-ssh-updates".into()).spawn(move || {
        for update in host_rx {
            if tx.send(Message::Host(update)).is_err() {
                break;
            }
        }
    })?;
    Ok(())
}

/// Reads keys for the view, 100 ms at a time, and none while `paused` (a host's monitor reads them then).
#[cfg(test)]
mod tests {
    use super::*;

    fn update(host: usize, state: NodeState, sample: bool, last: bool) -> HostUpdate {
        let node = Box::new(crate::remote::nodes::empty(&format!("h{host}"), state, None));
        HostUpdate { host, node, sample, last }
    }

    #[test]
    fn a_host_silent_for_three_intervals_is_stale_until_it_sends_again() {
        let start = Instant::now();
        let mut hosts = Hosts::new(&["h0".to_owned(), "h1".to_owned()], Duration::from_secs(1));
        assert!(hosts.nodes.iter().all(|n| n.state == NodeState::Connecting));
        hosts.take(update(0, NodeState::Up, true, false), start);
        hosts.take(update(1, NodeState::Up, true, false), start);
        hosts.take(update(1, NodeState::Up, true, false), start + Duration::from_secs(3));
        hosts.mark_stale(start + Duration::from_millis(3500));
        let states: Vec<NodeState> = hosts.nodes.iter().map(|n| n.state).collect();
        assert_eq!(states, [NodeState::Stale, NodeState::Up]);
        assert_eq!(hosts.nodes[0].note.as_deref(), Some("no sample for 3 s"));
        hosts.take(update(0, NodeState::Up, true, false), start + Duration::from_secs(4));
        hosts.mark_stale(start + Duration::from_secs(4));
        assert_eq!(hosts.nodes[0].state, NodeState::Up);
        // A host whose stream ended keeps the state its reader gave (lost), never "stale".
        hosts.take(update(1, NodeState::Lost, false, true), start + Duration::from_secs(4));
        hosts.mark_stale(start + Duration::from_mins(1));
        assert_eq!(hosts.nodes[1].state, NodeState::Lost);
    }
}
