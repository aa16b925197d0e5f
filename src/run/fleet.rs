//! `--prometheus URL`: every node found in that Prometheus server; `--once` prints it, otherwise the fleet view:
//! the node grid refreshed on a background thread, with a drill-down into one node, keys through the monitor's
//! keymap (state in `fleet/screen.rs`, widget in `ui/fleet.rs`).

use std::sync::mpsc;
use std::time::Duration;

use crate::cli::Cli;
use crate::config::Config;
use crate::fleet::query::{Fleet, FleetError, FleetOptions, check_url, redact_url};
use crate::fleet::screen::FleetScreen;
use crate::keys::{KeyOverrides, Keymap};

use super::terminal_events::{TerminalEvent, spawn_input, spawn_signals};
use super::{RunError, emit, emit_json, use_ascii, use_color};
use crate::config::ui::ThemeName;
use crate::ui::Paint;

/// Prints the fleet once, or runs the fleet view until the user quits.
pub(super) fn run(cli: &Cli, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let url = cli.view.prometheus.as_deref().unwrap_or_default();
    check_url(url).map_err(|e| RunError::Usage(e.to_string()))?;
    if !cli.view.once {
        let theme = if use_color(cli) { super::monitor::theme(cli, config)? } else { ThemeName::NoColor };
        let paint = Paint { load: config.ui.load_colors, ..Paint::new(theme, use_ascii(cli)) };
        return run_view(url, interval.max(Duration::from_secs(1)), &config.keys, &paint)
            .map_err(RunError::Interactive);
    }
    let fleet = Fleet::query(url, &FleetOptions::default())?;
    if cli.view.json {
        emit_json(&fleet.to_json())?;
    } else {
        emit(&fleet.to_text())?;
    }
    Ok(0)
}

enum Message {
    Fleet(Result<Box<Fleet>, FleetError>),
    Terminal(TerminalEvent),
}

impl From<TerminalEvent> for Message {
    fn from(event: TerminalEvent) -> Self {
        Self::Terminal(event)
    }
}

/// Runs the fleet view until the user quits, with the monitor's keymap and the config's `[keys]` overrides.
///
/// # Errors
/// The `[keys]` overrides do not make a keymap (the config check refuses them first), or the terminal cannot be
/// used.
fn run_view(url: &str, refresh: Duration, keys: &KeyOverrides, paint: &Paint) -> color_eyre::Result<i32> {
    let keymap = Keymap::with_overrides(keys)?;
    let (tx, rx) = mpsc::channel::<Message>();
    let signal_tx = tx.clone();
    {
        let (tx, url) = (tx.clone(), url.to_owned());
        std::thread::Builder::new().name("fleet-query".into()).spawn(move || {
            loop {
                let result = Fleet::query(&url, &FleetOptions::default()).map(Box::new);
                if tx.send(Message::Fleet(result)).is_err() {
                    break;
                }
                std::thread::sleep(refresh);
            }
        })?;
    }
    spawn_input("fleet-input", tx, None)?;
    spawn_signals("fleet-signals", signal_tx)?;
    let mut terminal = crate::terminal::init(false)?;
    let mut screen =
        FleetScreen { url: redact_url(url), view: None, error: None, signals: false, monitors: false, notice: None };
    let result = (|| -> color_eyre::Result<i32> {
        loop {
            terminal.draw(|frame| screen.draw_with(frame, paint))?;
            match rx.recv() {
                Ok(Message::Fleet(result)) => screen.on_result(result.map(|fleet| *fleet)),
                Ok(Message::Terminal(TerminalEvent::Key(key))) => {
                    if let Some(action) = keymap.lookup(key, false)
                        && !screen.on_action(action)
                    {
                        return Ok(0);
                    }
                }
                Ok(Message::Terminal(TerminalEvent::Redraw)) => {}
                Ok(Message::Terminal(TerminalEvent::InputClosed)) | Err(_) => return Ok(0),
                Ok(Message::Terminal(TerminalEvent::Terminate(signal))) => {
                    return Ok(crate::exit::SIGNAL_BASE + signal);
                }
            }
        }
    })();
    crate::terminal::restore();
    result
}
