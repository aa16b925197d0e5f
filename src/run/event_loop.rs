//! The monitor's event loop (it joins the app's state and the ui's widgets, so it lives with the modes): one channel carries key and mouse input (from an input thread), the sampler's messages (from
//! a forwarding thread) and termination signals. A recording is paced by a timeout on that channel, only while it
//! plays. The screen is redrawn after something happened, never on a busy loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyEventKind, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;

use crate::app::{App, AppOptions, Effect, Feed, FeedEvent};
use crate::keys::{Action, KeyBinding};
use crate::output::status_file::StateWriter;
use crate::terminal;
use crate::ui;

/// What wakes the loop.
#[derive(Debug)]
pub(crate) enum LoopEvent {
    Input(Event),
    Feed(Box<FeedEvent>),
    /// A snapshot is waiting in this slot (the newest; older ones not yet drawn were replaced).
    Snapshot(std::sync::Arc<crate::app::feed::Latest>),
    /// A terminating signal (SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, ...) arrived: restore and exit with 128 +
    /// the signal.
    Terminate(i32),
    InputFailed(String),
}

/// Runs the interactive monitor until the user quits; returns the exit code.
///
/// # Errors
/// The config's keys are invalid, the recording is empty, or the terminal cannot be used.
pub fn run(options: AppOptions, feed: Feed, mut status: Option<StateWriter>) -> color_eyre::Result<i32> {
    let mut app = App::new(options, &feed).map_err(|e| color_eyre::eyre::eyre!(e))?;
    let (tx, rx) = mpsc::channel::<LoopEvent>();
    spawn_signal_thread(tx.clone())?;
    if let Feed::Live { rx: feed_rx, .. } = feed {
        let tx = tx.clone();
        let latest = std::sync::Arc::new(crate::app::feed::Latest::default());
        std::thread::Builder::new().name("feed".into()).spawn(move || {
            while let Ok(event) = feed_rx.recv() {
                let sent = match event {
                    FeedEvent::Snapshot(snapshot) => {
                        !latest.put(snapshot) || tx.send(LoopEvent::Snapshot(std::sync::Arc::clone(&latest))).is_ok()
                    }
                    other => tx.send(LoopEvent::Feed(Box::new(other))).is_ok(),
                };
                if !sent {
                    break;
                }
            }
        })?;
    }
    let input_tx = tx;
    let quick = Arc::new(QuickQuit::default());
    let (input_quick, keymap) = (Arc::clone(&quick), app.keymap.clone());
    // Set when the loop ends, so that this thread reads no key meant for a screen that opened the monitor and
    // draws again after it (`gpusight ssh`'s view): it waits for input 100 ms at a time and checks it.
    let done = Arc::new(AtomicBool::new(false));
    let input_done = Arc::clone(&done);
    std::thread::Builder::new().name("input".into()).spawn(move || {
        let mut sent = 0u64;
        loop {
            match crossterm::event::poll(Duration::from_millis(100)) {
                _ if input_done.load(Ordering::SeqCst) => break,
                Ok(false) => continue,
                Ok(true) | Err(_) => {}
            }
            let event = match crossterm::event::read() {
                Ok(event) => LoopEvent::Input(event),
                Err(error) => LoopEvent::InputFailed(error.to_string()),
            };
            let failed = matches!(event, LoopEvent::InputFailed(_));
            let quit = matches!(&event, LoopEvent::Input(crossterm::event::Event::Key(key))
                if key.kind == crossterm::event::KeyEventKind::Press
                    && keymap.lookup(KeyBinding::from_event(key), false) == Some(Action::Quit));
            if input_tx.send(event).is_err() || failed {
                break;
            }
            sent += 1;
            if quit && input_quick.unanswered(sent) {
                // The screen is busy (a huge snapshot being taken in or drawn) and has not taken the key in
                // 50 ms: give the terminal back and end here, as the loop would have.
                terminal::restore();
                std::process::exit(0);
            }
        }
    })?;
    let mut tui = terminal::init(app.mouse)?;
    let result = event_loop_with(&mut tui, &mut app, &rx, terminal::suspend, &quick, &mut status);
    done.store(true, Ordering::SeqCst);
    terminal::restore();
    Ok(result?)
}

fn spawn_signal_thread(tx: Sender<LoopEvent>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new(terminal::TERMINATING_SIGNALS)?;
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

/// How long a quit key may wait for a busy screen before the input thread ends the monitor itself.
const QUICK_QUIT_AFTER: Duration = Duration::from_millis(50);

/// What the input thread needs to quit by itself: `q` answers within 100 ms under any load, even while the loop
/// is inside one long ingest or draw (64 GPUs x 100,000 processes took 0.5 s a snapshot).
#[derive(Debug, Default)]
pub(crate) struct QuickQuit {
    /// A quit key ends the monitor in the state the loop last saw ([`App::quit_key_quits`]).
    armed: AtomicBool,
    /// Input events the loop has taken.
    taken: AtomicU64,
}

impl QuickQuit {
    /// Waits up to [`QUICK_QUIT_AFTER`] for the loop to take the `sent`th input event; true when it did not
    /// and a quit key would have ended the monitor.
    fn unanswered(&self, sent: u64) -> bool {
        self.unanswered_within(sent, QUICK_QUIT_AFTER)
    }

    fn unanswered_within(&self, sent: u64, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        while Instant::now() < until {
            if self.taken.load(Ordering::SeqCst) >= sent {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        self.taken.load(Ordering::SeqCst) < sent && self.armed.load(Ordering::SeqCst)
    }
}

/// The loop itself, generic over the backend so tests can drive it on a `TestBackend`.
#[cfg(test)]
pub(crate) fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    rx: &Receiver<LoopEvent>,
    suspend: impl FnMut(&mut Terminal<B>) -> std::io::Result<()>,
) -> std::io::Result<i32> {
    event_loop_with(terminal, app, rx, suspend, &QuickQuit::default(), &mut None)
}

/// The loop, telling the input thread what it needs to quit by itself, and writing the state `--status` reads
/// after each sample when `status` is given.
fn event_loop_with<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    rx: &Receiver<LoopEvent>,
    mut suspend: impl FnMut(&mut Terminal<B>) -> std::io::Result<()>,
    quick: &QuickQuit,
    status: &mut Option<StateWriter>,
) -> std::io::Result<i32> {
    quick.armed.store(app.quit_key_quits(), Ordering::SeqCst);
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
        app.scroll_end = ui::scroll_end(Rect::new(0, 0, area.width, area.height), app);
        let first = match app.until_next_frame() {
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
        // Everything that is already waiting is handled before the next frame, keys first in their order and the
        // newest snapshot last, so `q` is never stuck behind snapshots and frames.
        let mut batch: Vec<Option<LoopEvent>> = vec![first];
        batch.extend(rx.try_iter().take(256).map(Some));
        let mut snapshot = None;
        for event in batch {
            let event = match event {
                Some(LoopEvent::Snapshot(latest)) => {
                    snapshot = Some(latest);
                    continue;
                }
                other => other,
            };
            if matches!(event, Some(LoopEvent::Input(_) | LoopEvent::InputFailed(_))) {
                quick.taken.fetch_add(1, Ordering::SeqCst);
            }
            if let Some(code) = handle(terminal, app, event, area, &mut suspend, &mut last_frame)? {
                return Ok(code);
            }
            quick.armed.store(app.quit_key_quits(), Ordering::SeqCst);
        }
        if let Some(newest) = snapshot.and_then(|latest| latest.take()) {
            app.on_feed(FeedEvent::Snapshot(newest));
            if let Some(status) = status.as_mut() {
                status.publish(app.live_pipeline());
            }
        }
        // `f` where the full panels do not fit: said in the status line, not silently ignored.
        if std::mem::take(&mut app.mode_asked)
            && let Some(note) = ui::mode_note(Rect::new(0, 0, area.width, area.height), app)
        {
            app.status = Some(note);
        }
    }
}

/// Handles one event; `Some(code)` when the monitor ends.
fn handle<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    event: Option<LoopEvent>,
    area: ratatui::layout::Size,
    suspend: &mut impl FnMut(&mut Terminal<B>) -> std::io::Result<()>,
    last_frame: &mut Instant,
) -> std::io::Result<Option<i32>> {
    {
        let effect = match event {
            None => Effect::None,
            Some(LoopEvent::Feed(feed)) => {
                app.on_feed(*feed);
                Effect::None
            }
            Some(LoopEvent::Terminate(signal)) => return Ok(Some(crate::exit::SIGNAL_BASE + signal)),
            Some(LoopEvent::Snapshot(latest)) => {
                if let Some(newest) = latest.take() {
                    app.on_feed(FeedEvent::Snapshot(newest));
                }
                Effect::None
            }
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
            Effect::Quit => return Ok(Some(0)),
            Effect::Redraw => terminal.clear().map_err(backend_error)?,
            Effect::Suspend => {
                suspend(terminal)?;
                *last_frame = Instant::now();
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::source::Source as _;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    #[test]
    fn q_is_answered_before_a_waiting_snapshot_is_taken_in() {
        let mut source = SyntheticSource::new(SyntheticSpec::parse("mixed:2").expect("spec"));
        let first = source.next_snapshot().expect("tick").expect("some");
        let (_feed_tx, feed_rx) = mpsc::channel();
        let mut app =
            App::new(AppOptions::default(), &Feed::Live { first: Box::new(first), backlog: Vec::new(), rx: feed_rx })
                .expect("app");
        // The sampler ran far ahead: thousands of snapshots, one slot, one wake-up, then the user's q.
        let latest = Arc::new(crate::app::feed::Latest::default());
        let (tx, rx) = mpsc::channel();
        for _ in 0..2000 {
            if latest.put(Box::new(source.next_snapshot().expect("tick").expect("some"))) {
                tx.send(LoopEvent::Snapshot(Arc::clone(&latest))).expect("send");
            }
        }
        tx.send(LoopEvent::Input(Event::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE)))).expect("q");
        let mut terminal = Terminal::new(ratatui::backend::TestBackend::new(120, 40)).expect("terminal");
        let code = event_loop(&mut terminal, &mut app, &rx, |_| Ok(())).expect("loop");
        assert_eq!(code, 0);
        assert_eq!(app.view().history.n_ticks(), 1, "q ended the monitor before the waiting snapshot was taken in");
        assert!(latest.take().is_some(), "the snapshot was left waiting");
    }

    #[test]
    fn the_input_thread_quits_by_itself_only_when_a_quit_key_is_left_waiting() {
        let quick = QuickQuit::default();
        quick.armed.store(true, Ordering::SeqCst);
        assert!(quick.unanswered_within(1, Duration::ZERO), "the loop has not taken the key: quit here");
        quick.taken.store(1, Ordering::SeqCst);
        assert!(!quick.unanswered_within(1, Duration::ZERO), "the loop took it: it quits (or not) itself");
        quick.armed.store(false, Ordering::SeqCst);
        assert!(!quick.unanswered_within(2, Duration::ZERO), "a dialog or the filter is open: q is not a quit");
    }

    #[test]
    fn q_quits_only_on_the_main_screen_with_nothing_being_typed() {
        let mut source = SyntheticSource::new(SyntheticSpec::parse("mixed:2").expect("spec"));
        let first = source.next_snapshot().expect("tick").expect("some");
        let (_feed_tx, feed_rx) = mpsc::channel();
        let mut app =
            App::new(AppOptions::default(), &Feed::Live { first: Box::new(first), backlog: Vec::new(), rx: feed_rx })
                .expect("app");
        assert!(app.quit_key_quits());
        let _ = app.on_key(KeyEvent::new(KeyCode::Char('/'), KeyModifiers::NONE));
        assert!(!app.quit_key_quits(), "typing a filter: q is a letter");
        let _ = app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        assert!(app.quit_key_quits());
        let _ = app.update(Action::Help);
        assert!(!app.quit_key_quits(), "the help screen: q leaves it");
    }
}
