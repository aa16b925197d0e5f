//! The event loop: one channel carries key and mouse input (from an input thread), the sampler's messages (from
//! a forwarding thread) and termination signals. A recording is paced by a timeout on that channel, only while it
//! plays. The screen is redrawn after something happened, never on a busy loop.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use crossterm::event::{Event, KeyEventKind, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;

use super::{App, AppOptions, Effect, Feed, FeedEvent};
use crate::terminal;
use crate::ui;

/// What wakes the loop.
#[derive(Debug)]
pub(crate) enum LoopEvent {
    Input(Event),
    Feed(Box<FeedEvent>),
    /// SIGTERM, SIGHUP or SIGINT arrived: restore and exit with 128 + the signal.
    Terminate(i32),
    InputFailed(String),
}

/// Runs the interactive monitor until the user quits; returns the exit code.
///
/// # Errors
/// The config's keys are invalid, the recording is empty, or the terminal cannot be used.
pub fn run(options: AppOptions, feed: Feed) -> color_eyre::Result<i32> {
    let mut app = App::new(options, &feed).map_err(|e| color_eyre::eyre::eyre!(e))?;
    let (tx, rx) = mpsc::channel::<LoopEvent>();
    spawn_signal_thread(tx.clone())?;
    if let Feed::Live { rx: feed_rx, .. } = feed {
        let tx = tx.clone();
        std::thread::Builder::new().name("feed".into()).spawn(move || {
            while let Ok(event) = feed_rx.recv() {
                if tx.send(LoopEvent::Feed(Box::new(event))).is_err() {
                    break;
                }
            }
        })?;
    }
    let input_tx = tx;
    std::thread::Builder::new().name("input".into()).spawn(move || {
        loop {
            let event = match crossterm::event::read() {
                Ok(event) => LoopEvent::Input(event),
                Err(error) => LoopEvent::InputFailed(error.to_string()),
            };
            let failed = matches!(event, LoopEvent::InputFailed(_));
            if input_tx.send(event).is_err() || failed {
                break;
            }
        }
    })?;
    let mut tui = terminal::init(app.mouse)?;
    let result = event_loop(&mut tui, &mut app, &rx, terminal::suspend);
    terminal::restore();
    Ok(result?)
}

fn spawn_signal_thread(tx: Sender<LoopEvent>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT])?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _ = tx.send(LoopEvent::Terminate(signal));
        }
    })?;
    Ok(())
}

fn backend_error(error: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("cannot draw on the terminal: {error}"))
}

/// The loop itself, generic over the backend so tests can drive it on a `TestBackend`.
pub(crate) fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    rx: &Receiver<LoopEvent>,
    mut suspend: impl FnMut(&mut Terminal<B>) -> std::io::Result<()>,
) -> std::io::Result<i32> {
    let mut last_frame = Instant::now();
    // Test-only: GPUSIGHT_TEST_PANIC=1 panics after the first frame, so tests can check the terminal is restored.
    // Debug builds only: release builds have no such path.
    #[cfg(debug_assertions)]
    let test_panic = std::env::var_os("GPUSIGHT_TEST_PANIC").is_some_and(|v| v == "1");
    loop {
        terminal.draw(|frame| ui::draw(frame, app)).map_err(backend_error)?;
        #[cfg(debug_assertions)]
        assert!(!test_panic, "GPUSIGHT_TEST_PANIC: a panic after the first frame, as asked");
        let area = terminal.size().map_err(backend_error)?;
        app.page_rows = ui::table_rows(Rect::new(0, 0, area.width, area.height), app).max(1);
        let event = match app.until_next_frame() {
            Some(wait) => match rx.recv_timeout(wait) {
                Ok(event) => Some(event),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return Ok(0),
            },
            None => match rx.recv() {
                Ok(event) => Some(event),
                Err(_) => return Ok(0),
            },
        };
        let now = Instant::now();
        app.advance_playback(now - last_frame);
        last_frame = now;
        let effect = match event {
            None => Effect::None,
            Some(LoopEvent::Feed(feed)) => {
                app.on_feed(*feed);
                Effect::None
            }
            Some(LoopEvent::Terminate(signal)) => return Ok(128 + signal),
            Some(LoopEvent::InputFailed(message)) => {
                return Err(std::io::Error::other(format!("cannot read the terminal: {message}")));
            }
            Some(LoopEvent::Input(Event::Key(key))) if key.kind != KeyEventKind::Release => app.on_key(key),
            Some(LoopEvent::Input(Event::Mouse(mouse))) => {
                let area = Rect::new(0, 0, area.width, area.height);
                match mouse.kind {
                    MouseEventKind::Down(_) => {
                        if let Some(hit) = ui::hit_test(area, app, mouse.column, mouse.row) {
                            app.on_hit(hit);
                        }
                    }
                    MouseEventKind::ScrollDown => app.scroll(3),
                    MouseEventKind::ScrollUp => app.scroll(-3),
                    _ => {}
                }
                Effect::None
            }
            Some(LoopEvent::Input(_)) => Effect::None,
        };
        match effect {
            Effect::None => {}
            Effect::Quit => return Ok(0),
            Effect::Redraw => terminal.clear().map_err(backend_error)?,
            Effect::Suspend => {
                suspend(terminal)?;
                last_frame = Instant::now();
            }
        }
    }
}
