//! `gpusight ssh`'s live view: the fleet view's screen and widget over the hosts' nodes, each host's node
//! replaced as its reader sends it; a host silent for three intervals is shown stale. Quitting (q, SIGINT,
//! SIGTERM, SIGHUP) ends every ssh.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyEventKind};

use crate::cli::Cli;
use crate::config::Config;
use crate::config::ui::ThemeName;
use crate::fleet::query::{Fleet, Node, NodeState};
use crate::fleet::screen::FleetScreen;
use crate::keys::{KeyBinding, Keymap};
use crate::remote::host::{HostHandle, HostUpdate, ReaderConfig};
use crate::ui::Paint;

enum Message {
    Host(HostUpdate),
    Key(KeyBinding),
    Redraw,
    InputClosed,
    Terminate(i32),
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
    _readonly: bool,
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
    spawn_input(tx.clone())?;
    spawn_signals(tx)?;
    let mut terminal = crate::terminal::init(false)?;
    let result = event_loop(&mut terminal, &rx, &keymap, &paint, hosts, interval);
    crate::terminal::restore();
    for handle in &handles {
        handle.end();
    }
    result
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    rx: &mpsc::Receiver<Message>,
    keymap: &Keymap,
    paint: &Paint,
    hosts: &[String],
    interval: Duration,
) -> color_eyre::Result<i32> {
    let mut state = Hosts::new(hosts, interval);
    let mut screen = FleetScreen { url: format!("ssh: {}", hosts.len()), view: None, error: None };
    screen.on_result(Ok(state.fleet()));
    loop {
        terminal.draw(|frame| screen.draw_with(frame, paint))?;
        let message = rx.recv_timeout(interval.min(Duration::from_secs(1)));
        let now = Instant::now();
        match message {
            Ok(Message::Host(update)) => state.take(update, now),
            Ok(Message::Key(key)) => {
                if let Some(action) = keymap.lookup(key, false)
                    && !screen.on_action(action)
                {
                    return Ok(0);
                }
            }
            Ok(Message::Redraw) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(Message::InputClosed) | Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(0),
            Ok(Message::Terminate(signal)) => return Ok(crate::exit::SIGNAL_BASE + signal),
        }
        state.mark_stale(now);
        screen.on_result(Ok(state.fleet()));
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

fn spawn_input(tx: mpsc::Sender<Message>) -> std::io::Result<()> {
    std::thread::Builder::new().name("gpusight-ssh-input".into()).spawn(move || {
        loop {
            let message = match crossterm::event::read() {
                Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => Message::Key(KeyBinding::from_event(&key)),
                Ok(Event::Resize(..)) => Message::Redraw,
                Ok(_) => continue,
                Err(_) => Message::InputClosed,
            };
            let closed = matches!(message, Message::InputClosed);
            if tx.send(message).is_err() || closed {
                break;
            }
        }
    })?;
    Ok(())
}

fn spawn_signals(tx: mpsc::Sender<Message>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new(crate::terminal::TERMINATING_SIGNALS)?;
    std::thread::Builder::new().name("gpusight-ssh-signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _ = tx.send(Message::Terminate(signal));
        }
    })?;
    Ok(())
}
