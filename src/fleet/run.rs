//! The interactive fleet view (`gpusight --prometheus URL`): the node grid from a Prometheus server, refreshed
//! on a background thread, with a drill-down into one node. Keys go through the same keymap as the monitor.

use std::sync::mpsc;
use std::time::Duration;

use crossterm::event::{Event, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

use super::query::{Fleet, FleetOptions};
use super::view::FleetView;
use crate::app::action::Action;
use crate::app::keymap::{KeyBinding, KeyOverrides, Keymap};

enum Message {
    Fleet(Result<Box<Fleet>, String>),
    Key(KeyBinding),
    Redraw,
    InputClosed,
    /// A terminating signal: restore and exit with 128 + the signal.
    Terminate(i32),
}

/// The state of the fleet screen: the latest answer, or why there is none.
#[derive(Debug)]
pub struct FleetScreen {
    pub url: String,
    pub view: Option<FleetView>,
    /// The last query error (Prometheus unreachable, a bad answer); shown above the last good grid.
    pub error: Option<String>,
}

impl FleetScreen {
    /// Takes in a query result, keeping the selection when the fleet is refreshed.
    pub fn on_result(&mut self, result: Result<Fleet, String>) {
        match result {
            Ok(fleet) => {
                self.error = None;
                match &mut self.view {
                    Some(view) => view.fleet = fleet,
                    None => self.view = Some(FleetView::new(fleet)),
                }
            }
            Err(message) => self.error = Some(message),
        }
    }

    /// Applies an action; returns false when the screen should close.
    pub fn on_action(&mut self, action: Action) -> bool {
        match action {
            Action::Quit => {
                if let Some(view) = self.view.as_mut().filter(|v| v.drilled) {
                    view.set_drilled(false);
                    return true;
                }
                return false;
            }
            Action::Up => self.view.iter_mut().for_each(|v| v.move_selection(-1)),
            Action::Down => self.view.iter_mut().for_each(|v| v.move_selection(1)),
            Action::Details => self.view.iter_mut().for_each(|v| v.set_drilled(true)),
            Action::Back => self.view.iter_mut().for_each(|v| v.set_drilled(false)),
            _ => {}
        }
        true
    }

    /// Draws the screen: a title line with the source and state, the grid or drill-down, and the keys.
    pub fn draw(&self, frame: &mut ratatui::Frame<'_>) {
        let [title, body, footer] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
        let state = match (&self.error, &self.view) {
            (Some(error), _) => format!("  {error}"),
            (None, None) => "  querying…".to_owned(),
            (None, Some(view)) => format!("  {} nodes", view.fleet.nodes.len()),
        };
        let style = if self.error.is_some() {
            Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)
        } else {
            Style::new()
        };
        frame.render_widget(Line::styled(format!(" gpusight fleet │ {}{state}", self.url), style), title);
        if let Some(view) = &self.view {
            frame.render_widget(crate::ui::fleet::FleetWidget(view), body);
        }
        frame.render_widget(Line::raw(" ↑↓ select  Enter open node  Esc back  q quit"), footer);
    }
}

/// Runs the fleet view until the user quits, with the monitor's keymap and the config's `[keys]` overrides.
///
/// # Errors
/// The `[keys]` overrides do not make a keymap (the config check refuses them first), or the terminal cannot be
/// used.
pub fn run(url: &str, refresh: Duration, keys: &KeyOverrides) -> color_eyre::Result<i32> {
    let keymap = Keymap::with_overrides(keys)?;
    let (tx, rx) = mpsc::channel::<Message>();
    let signal_tx = tx.clone();
    {
        let (tx, url) = (tx.clone(), url.to_owned());
        std::thread::Builder::new().name("fleet-query".into()).spawn(move || {
            loop {
                let result = Fleet::query(&url, &FleetOptions::default()).map(Box::new).map_err(|e| e.to_string());
                if tx.send(Message::Fleet(result)).is_err() {
                    break;
                }
                std::thread::sleep(refresh);
            }
        })?;
    }
    {
        std::thread::Builder::new().name("fleet-input".into()).spawn(move || {
            loop {
                let message = match crossterm::event::read() {
                    Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                        Message::Key(KeyBinding::from_event(&key))
                    }
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
    }
    {
        let tx = signal_tx;
        let mut signals = signal_hook::iterator::Signals::new(crate::terminal::TERMINATING_SIGNALS)?;
        std::thread::Builder::new().name("fleet-signals".into()).spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let _ = tx.send(Message::Terminate(signal));
            }
        })?;
    }
    let mut terminal = crate::terminal::init(false)?;
    let mut screen = FleetScreen { url: super::query::redact_url(url), view: None, error: None };
    let result = (|| -> color_eyre::Result<i32> {
        loop {
            terminal.draw(|frame| screen.draw(frame))?;
            match rx.recv() {
                Ok(Message::Fleet(result)) => screen.on_result(result.map(|fleet| *fleet)),
                Ok(Message::Key(key)) => {
                    if let Some(action) = keymap.lookup(key, false)
                        && !screen.on_action(action)
                    {
                        return Ok(0);
                    }
                }
                Ok(Message::Redraw) => {}
                Ok(Message::InputClosed) | Err(_) => return Ok(0),
                Ok(Message::Terminate(signal)) => return Ok(128 + signal),
            }
        }
    })();
    crate::terminal::restore();
    result
}
