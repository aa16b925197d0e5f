//! The only module that touches the terminal's modes: raw mode, the alternate screen and mouse capture. It puts
//! them back on every exit path: a normal return, an error, a panic (the hook restores before printing), every
//! signal whose default action ends the process and that can be caught ([`TERMINATING_SIGNALS`]: the screens
//! restore, then exit with 128 + the signal; every other one, fault signals included, through [`crate::crash`]'s
//! handler, which restores from modes saved here and dies of the signal) and Ctrl-Z (restore, stop, re-enter on
//! `fg`).

use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The signals that end a process by default and can be handled in an orderly way (not the fatal ones a fault
/// raises, which a crash handler deals with): each screen that owns the terminal listens for all of them, restores,
/// and exits with 128 + the signal. SIGPIPE is left out: Rust ignores it, and a closed pipe is a write error.
pub const TERMINATING_SIGNALS: [i32; 11] = {
    use signal_hook::consts::signal::{
        SIGALRM, SIGHUP, SIGINT, SIGPROF, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGXCPU, SIGXFSZ,
    };
    [SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ]
};

/// The terminal type the monitor draws on.
pub type Tui = Terminal<CrosstermBackend<Stdout>>;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static MOUSE: AtomicBool = AtomicBool::new(false);
static HOOK: AtomicU8 = AtomicU8::new(0);

/// Enters raw mode and the alternate screen (and mouse capture when asked).
///
/// # Errors
/// The terminal refused a mode; whatever was entered is left again.
pub fn init(mouse: bool) -> io::Result<Tui> {
    install_panic_hook();
    MOUSE.store(mouse, Ordering::SeqCst);
    enter()?;
    Terminal::new(CrosstermBackend::new(io::stdout())).inspect_err(|_| restore())
}

fn enter() -> io::Result<()> {
    // Saves the modes to put back if a driver library kills the process with a fatal signal.
    crate::crash::terminal_entered(MOUSE.load(Ordering::SeqCst));
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut stdout = io::stdout();
    let result = if MOUSE.load(Ordering::SeqCst) {
        execute!(stdout, EnterAlternateScreen, EnableMouseCapture)
    } else {
        execute!(stdout, EnterAlternateScreen)
    };
    result.inspect_err(|_| restore())
}

/// Leaves raw mode, the alternate screen and mouse capture. Safe to call more than once and from a panic hook.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut stdout = io::stdout();
    if MOUSE.load(Ordering::SeqCst) {
        let _ = execute!(stdout, DisableMouseCapture);
    }
    // Errors are ignored on purpose: this runs on the way out and must try every step.
    let _ = execute!(stdout, LeaveAlternateScreen, crossterm::cursor::Show);
    let _ = disable_raw_mode();
    let _ = stdout.flush();
    crate::crash::terminal_left();
}

/// Installs color-eyre as the report for errors and panics, before any terminal setup: [`install_panic_hook`]
/// then wraps it, so a panic puts the terminal back first and color-eyre's report lands on a usable screen.
/// Called once by [`crate::run::main`]; a second call does nothing.
pub fn install_error_report() {
    // Only the environment section is left out: it tells users to set RUST_BACKTRACE, which the report's
    // location and message make unnecessary for a person reading it.
    let _ = color_eyre::config::HookBuilder::default().display_env_section(false).install();
}

/// Installs (once) a panic hook that restores the terminal and then runs the previous hook, so the panic message
/// lands on a usable screen.
pub fn install_panic_hook() {
    if HOOK.swap(1, Ordering::SeqCst) == 1 {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// Ctrl-Z: restores the terminal, stops the process like a shell job, and re-enters the monitor's modes when the
/// shell continues it (`fg`).
///
/// # Errors
/// The terminal could not be set up again.
pub fn suspend(terminal: &mut Tui) -> io::Result<()> {
    restore();
    // SIGSTOP cannot be caught, so the process stops here and continues on SIGCONT.
    signal_hook::low_level::raise(signal_hook::consts::SIGSTOP)?;
    enter()?;
    // Not `terminal.clear()`: it asks the terminal for the cursor position, and the input thread, blocked reading
    // events, holds crossterm's reader, so the answer never arrives and the monitor quit with "the cursor
    // position could not be read" after `fg`. Clear the screen directly and start from empty buffers instead, so
    // the next frame is drawn whole.
    execute!(io::stdout(), crossterm::terminal::Clear(crossterm::terminal::ClearType::All))?;
    *terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    Ok(())
}
