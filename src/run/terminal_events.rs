//! The two threads every full-screen view beside the monitor needs (the fleet view, `gpusight ssh`'s view): one
//! turns terminal input into key and redraw messages, one turns a terminating signal into a message, so the view's
//! loop restores the terminal before it exits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crossterm::event::{Event, KeyEventKind};

use crate::keys::KeyBinding;

/// What the terminal or a signal tells a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TerminalEvent {
    /// A key pressed (or repeated).
    Key(KeyBinding),
    /// The terminal was resized: draw again.
    Redraw,
    /// Input ended (the terminal went away): leave.
    InputClosed,
    /// A terminating signal: restore the terminal and exit with 128 + the signal.
    Terminate(i32),
}

/// Reads terminal input on a thread named `name` and sends each key and resize as `M`. While `paused` is set
/// (another program has the terminal, as when the view hands it to a monitor over ssh), input is left unread.
///
/// # Errors
/// The thread cannot be started.
pub(super) fn spawn_input<M>(name: &str, tx: mpsc::Sender<M>, paused: Option<Arc<AtomicBool>>) -> std::io::Result<()>
where
    M: From<TerminalEvent> + Send + 'static,
{
    let pausable = paused.is_some();
    let is_paused = move || paused.as_ref().is_some_and(|p| p.load(Ordering::SeqCst));
    std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        loop {
            if is_paused() {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            // A view that never pauses blocks in `read`; one that does looks every 100 ms whether it should.
            if pausable {
                match crossterm::event::poll(Duration::from_millis(100)) {
                    Ok(false) => continue,
                    _ if is_paused() => continue,
                    Ok(true) | Err(_) => {}
                }
            }
            let event = match crossterm::event::read() {
                Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                    TerminalEvent::Key(KeyBinding::from_event(&key))
                }
                Ok(Event::Resize(..)) => TerminalEvent::Redraw,
                Ok(_) => continue,
                Err(_) => TerminalEvent::InputClosed,
            };
            let closed = event == TerminalEvent::InputClosed;
            if tx.send(M::from(event)).is_err() || closed {
                break;
            }
        }
    })?;
    Ok(())
}

/// Waits on a thread named `name` for the first terminating signal and sends it as `M`.
///
/// # Errors
/// The signal handlers or the thread cannot be set up.
pub(super) fn spawn_signals<M>(name: &str, tx: mpsc::Sender<M>) -> std::io::Result<()>
where
    M: From<TerminalEvent> + Send + 'static,
{
    let mut signals = signal_hook::iterator::Signals::new(crate::terminal::TERMINATING_SIGNALS)?;
    std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _ = tx.send(M::from(TerminalEvent::Terminate(signal)));
        }
    })?;
    Ok(())
}
