//! What happens when the process dies of a fatal signal (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP,
//! SIGSYS), most likely inside a driver library, where Rust cannot catch it; and of any other signal whose default
//! action ends the process and that no screen handles (SIGPWR, SIGSTKFLT, SIGIO, the real-time signals).
//!
//! Every NVML call site says which call family it runs with [`enter`], which keeps the family and the GPU in a
//! thread-local cell. The handler installed by [`install`] then, with async-signal-safe calls only (`write`,
//! `tcsetattr`, `signal`, `raise`):
//! 1. puts the terminal back if the monitor had it (the bytes and the saved `termios` were prepared by
//!    [`terminal_entered`] before any crash could happen);
//! 2. prints one message naming the signal and, for a signal another process sent with `kill` (`si_code` SI_USER
//!    or SI_QUEUE), who sent it; for a real fault, the call family and the GPU that were running on the crashing
//!    thread, and how to report it;
//! 3. restores the default action and raises the signal again, so the exit status and the core dump are the
//!    ones the signal would have given.
//!
//! A recording in progress loses nothing: the recorder flushes each line to the kernel as it is written.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The NVML call families, as the crash message and ARCHITECTURE.md name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Family {
    /// `nvmlInit`, device handles and the static description of each GPU.
    Open = 1,
    /// Utilization, memory, power, temperature, clocks, throttle reasons, P-state, link state.
    Fast = 2,
    /// GPM samples and metrics (`nvmlGpmSampleAlloc/Get/Free`, `nvmlGpmMetricsGet`).
    Gpm = 3,
    /// Running compute/graphics process lists and per-process utilization.
    Processes = 4,
    /// Field values (throttle nanosecond counters), encoder/decoder utilization.
    Fields = 5,
    /// Energy, ECC counts, retired pages, remapped rows, PCIe replay counter.
    Health = 6,
    /// PCIe RX/TX throughput.
    Pcie = 7,
    /// Xid/ECC event registration and waits.
    Events = 8,
}

impl Family {
    const ALL: [Self; 8] =
        [Self::Open, Self::Fast, Self::Gpm, Self::Processes, Self::Fields, Self::Health, Self::Pcie, Self::Events];

    /// A short name for messages.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Open => "NVML start-up and device description",
            Self::Fast => "per-tick readings (utilization, memory, power, clocks)",
            Self::Gpm => "GPM (nvmlGpmSampleGet / nvmlGpmMetricsGet)",
            Self::Processes => "process lists and per-process utilization",
            Self::Fields => "field values (throttle counters, encoder/decoder)",
            Self::Health => "health counters (energy, ECC, remapped rows)",
            Self::Pcie => "PCIe throughput",
            Self::Events => "Xid/ECC event wait",
        }
    }

    fn from_u8(value: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|f| *f as u8 == value)
    }
}

thread_local! {
    /// The call family running on this thread: family in the low byte, GPU index + 1 above it (0: no GPU).
    /// Const-initialised with no destructor, so the handler reads it with a plain thread-local load.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// Marks an NVML call family as running on this thread until dropped.
#[derive(Debug)]
#[must_use = "the family is marked only while the guard lives"]
pub struct CallGuard {
    previous: u64,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Says that this thread is about to call NVML functions of `family` (on `gpu`, if one), until the guard drops.
pub fn enter(family: Family, gpu: Option<u32>) -> CallGuard {
    let gpu_bits = gpu.map_or(0, |g| u64::from(g) + 1);
    let previous = CURRENT.with(|c| c.replace((gpu_bits << 8) | family as u64));
    CallGuard { previous }
}

/// The family and GPU marked on this thread now, if any.
#[must_use]
pub fn current() -> Option<(Family, Option<u32>)> {
    decode(CURRENT.with(Cell::get))
}

fn decode(value: u64) -> Option<(Family, Option<u32>)> {
    let family = Family::from_u8((value & 0xff) as u8)?;
    let gpu = (value >> 8).checked_sub(1).and_then(|g| u32::try_from(g).ok());
    Some((family, gpu))
}

/// The terminal state to put back, prepared outside the handler.
struct SavedTerminal {
    fd: libc::c_int,
    termios: libc::termios,
    /// Escape sequences that leave the alternate screen, mouse capture, and show the cursor.
    leave: &'static [u8],
}

static SAVED: OnceLock<SavedTerminal> = OnceLock::new();
static TERMINAL_ACTIVE: AtomicBool = AtomicBool::new(false);
static INSTALLED: AtomicBool = AtomicBool::new(false);

const LEAVE_WITH_MOUSE: &[u8] =
    b"\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[0m\x1b[?1049l\x1b[?25h\r\n";
const LEAVE: &[u8] = b"\x1b[0m\x1b[?1049l\x1b[?25h\r\n";

/// Called by `terminal.rs` just before it puts the terminal in raw mode: saves the modes to restore if the
/// process dies of a fatal signal while the monitor has the terminal.
#[expect(unsafe_code, reason = "termios calls through libc")]
pub fn terminal_entered(mouse: bool) {
    let fd = libc::STDOUT_FILENO;
    if SAVED.get().is_none() {
        // SAFETY: `termios` is plain data that `tcgetattr` fills in whole on success; on failure it is not used.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: a valid fd number and a pointer to a live, writable `termios`.
        if unsafe { libc::tcgetattr(fd, &raw mut termios) } == 0 {
            let _ = SAVED.set(SavedTerminal { fd, termios, leave: if mouse { LEAVE_WITH_MOUSE } else { LEAVE } });
        }
    }
    TERMINAL_ACTIVE.store(true, Ordering::SeqCst);
}

/// Called by `terminal.rs` once it has restored the terminal itself.
pub fn terminal_left() {
    TERMINAL_ACTIVE.store(false, Ordering::SeqCst);
}

/// The signals a fault raises (or `abort` does): a crash unless another process sent it with `kill`.
const FATAL: [libc::c_int; 7] =
    [libc::SIGSEGV, libc::SIGBUS, libc::SIGABRT, libc::SIGILL, libc::SIGFPE, libc::SIGTRAP, libc::SIGSYS];

/// The other signals whose default action ends the process and that neither [`FATAL`] nor
/// [`crate::terminal::TERMINATING_SIGNALS`] names: SIGPWR, SIGSTKFLT, SIGIO and the real-time signals. Nothing in
/// gpusight expects them, so the handler only puts the terminal back, says who sent the signal and dies of it.
fn other_terminating() -> impl Iterator<Item = libc::c_int> {
    [libc::SIGPWR, libc::SIGSTKFLT, libc::SIGIO].into_iter().chain(libc::SIGRTMIN()..=libc::SIGRTMAX())
}

/// The user names the handler can give without a lookup: root and the user gpusight runs as (read from
/// `/etc/passwd` at install, never through NSS in a handler).
static OWN_USER: OnceLock<(u32, String)> = OnceLock::new();

/// Installs the fatal-signal handler (once), for the fault signals (`FATAL`) and the other signals that end the process by default.
/// Rust's own SIGSEGV/SIGBUS handler (stack-overflow detection) is replaced: an overflow is reported by this
/// handler as a crash with no NVML call running.
#[expect(unsafe_code, reason = "sigaction through libc")]
pub fn install() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let uid = rustix::process::getuid().as_raw();
    if let Some(name) = std::fs::read("/etc/passwd")
        .ok()
        .and_then(|b| crate::host::parse_passwd(&String::from_utf8_lossy(&b)).remove(&uid))
    {
        let _ = OWN_USER.set((uid, name));
    }
    for signal in FATAL.into_iter().chain(other_terminating()) {
        // SAFETY: `action` is zeroed plain data, then filled in: a handler of the `sa_sigaction` type with
        // SA_SIGINFO, an empty mask, and SA_ONSTACK so Rust's per-thread alternate stacks are used where they exist.
        // `on_fatal` only makes async-signal-safe calls.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&raw mut action.sa_mask);
            libc::sigaction(signal, &raw const action, std::ptr::null_mut());
        }
    }
}

fn signal_name(signal: libc::c_int) -> &'static [u8] {
    match signal {
        libc::SIGSEGV => b"SIGSEGV (segmentation fault)",
        libc::SIGBUS => b"SIGBUS (bus error)",
        libc::SIGABRT => b"SIGABRT (abort)",
        libc::SIGILL => b"SIGILL (illegal instruction)",
        libc::SIGFPE => b"SIGFPE (arithmetic exception)",
        libc::SIGTRAP => b"SIGTRAP (trace trap)",
        libc::SIGSYS => b"SIGSYS (bad system call)",
        libc::SIGPWR => b"SIGPWR (power failure)",
        libc::SIGSTKFLT => b"SIGSTKFLT",
        libc::SIGIO => b"SIGIO",
        _ => b"a real-time signal",
    }
}

/// Writes `bytes` to `fd`, ignoring errors: the process is dying and has nothing better to do.
#[expect(unsafe_code, reason = "write(2) through libc, async-signal-safe")]
fn write_all(fd: libc::c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: the pointer and length describe a live byte slice.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        let Ok(n) = usize::try_from(n) else { return };
        if n == 0 {
            return;
        }
        bytes = bytes.get(n..).unwrap_or_default();
    }
}

/// Formats `value` in decimal into `buf` without allocating; returns the digits.
fn decimal(mut value: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        let digit = (value % 10) as u8;
        buf[at] = b'0' + digit;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    &buf[at..]
}

/// Who sent a signal with `kill` or `sigqueue` (`si_code` `SI_USER` or `SI_QUEUE`): a fault or `abort` inside the
/// process is never that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sender {
    pid: i32,
    uid: u32,
}

#[expect(unsafe_code, reason = "reads the siginfo the kernel handed the handler")]
fn sender(info: *const libc::siginfo_t) -> Option<Sender> {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; a null pointer is checked. For SI_USER
    // and SI_QUEUE the kill fields (pid, uid) are the ones filled in.
    let info = unsafe { info.as_ref()? };
    if info.si_code != libc::SI_USER && info.si_code != libc::SI_QUEUE {
        return None;
    }
    // SAFETY: as above, the union's kill member is the valid one for these codes.
    Some(unsafe { Sender { pid: info.si_pid(), uid: info.si_uid() } })
}

/// " sent by PID N (user U) with kill", without allocating.
fn write_sender(fd: libc::c_int, sender: Sender) {
    let mut buf = [0u8; 10];
    write_all(fd, b" sent by PID ");
    write_all(fd, decimal(sender.pid.unsigned_abs(), &mut buf));
    write_all(fd, b" (user ");
    match OWN_USER.get() {
        _ if sender.uid == 0 => write_all(fd, b"root"),
        Some((uid, name)) if *uid == sender.uid => write_all(fd, name.as_bytes()),
        _ => {
            write_all(fd, b"uid ");
            write_all(fd, decimal(sender.uid, &mut buf));
        }
    }
    write_all(fd, b") with kill");
}

/// The message, written piece by piece to `fd`.
fn write_message(fd: libc::c_int, signal: libc::c_int, sent: Option<Sender>, running: Option<(Family, Option<u32>)>) {
    write_all(fd, b"gpusight: killed by ");
    write_all(fd, signal_name(signal));
    if let Some(sent) = sent {
        write_sender(fd, sent);
        write_all(fd, b".\n");
        return;
    }
    if !FATAL.contains(&signal) {
        write_all(fd, b".\n");
        return;
    }
    match running {
        Some((family, gpu)) => {
            write_all(fd, b" inside the NVIDIA driver library during ");
            write_all(fd, family.name().as_bytes());
            if let Some(gpu) = gpu {
                let mut buf = [0u8; 10];
                write_all(fd, b" on GPU ");
                write_all(fd, decimal(gpu, &mut buf));
            }
            write_all(
                fd,
                b".\ngpusight: please report it with the driver version (nvidia-smi), the GPU model and this message",
            );
            if family == Family::Gpm {
                write_all(fd, b"; meanwhile `gpm_period_s = 0` under [general] in the config turns GPM off");
            }
            write_all(fd, b".\n");
        }
        None => write_all(
            fd,
            b" with no NVML call running on the crashing thread: a gpusight bug; please report it with this message.\n",
        ),
    }
}

#[expect(unsafe_code, reason = "a signal handler calls async-signal-safe libc functions")]
extern "C" fn on_fatal(signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    if TERMINAL_ACTIVE.swap(false, Ordering::SeqCst)
        && let Some(saved) = SAVED.get()
    {
        write_all(saved.fd, saved.leave);
        // SAFETY: tcsetattr is async-signal-safe; the fd and the saved termios were valid when saved.
        unsafe {
            libc::tcsetattr(saved.fd, libc::TCSANOW, &raw const saved.termios);
        }
    }
    write_message(libc::STDERR_FILENO, signal, sender(info), decode(CURRENT.with(Cell::get)));
    // SAFETY: signal and raise are async-signal-safe. With the default action back, the raised signal (blocked
    // while this handler runs) is delivered when it returns; a fault re-executes the faulting instruction.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_marks_and_unmarks_the_family() {
        assert_eq!(current(), None);
        {
            let _outer = enter(Family::Fast, Some(1));
            assert_eq!(current(), Some((Family::Fast, Some(1))));
            {
                let _inner = enter(Family::Gpm, None);
                assert_eq!(current(), Some((Family::Gpm, None)));
            }
            assert_eq!(current(), Some((Family::Fast, Some(1))));
        }
        assert_eq!(current(), None);
    }

    #[test]
    fn gpu_zero_is_not_no_gpu() {
        let _g = enter(Family::Processes, Some(0));
        assert_eq!(current(), Some((Family::Processes, Some(0))));
    }

    #[test]
    fn decimals_without_allocating() {
        let mut buf = [0u8; 10];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(7, &mut buf), b"7");
        assert_eq!(decimal(u32::MAX, &mut buf), b"4294967295");
    }

    #[test]
    fn every_family_round_trips() {
        for f in Family::ALL {
            assert_eq!(Family::from_u8(f as u8), Some(f));
            assert!(!f.name().is_empty());
        }
        assert_eq!(Family::from_u8(0), None);
    }
}
