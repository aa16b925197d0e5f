//! Sending signals to GPU processes safely: the PID is pinned with a pidfd, its start time is checked against
//! the row the user confirmed, and only then is the signal sent, so a recycled PID is never hit.

use std::fmt;
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal};

use crate::keys::Action;

/// The signals the monitor offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalKind {
    Term,
    Kill,
    Int,
}

impl SignalKind {
    /// The dialog's buttons, in order.
    pub const ALL: [SignalKind; 3] = [SignalKind::Term, SignalKind::Kill, SignalKind::Int];

    /// The conventional name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Term => "SIGTERM",
            Self::Kill => "SIGKILL",
            Self::Int => "SIGINT",
        }
    }

    fn signal(self) -> Signal {
        match self {
            Self::Term => Signal::TERM,
            Self::Kill => Signal::KILL,
            Self::Int => Signal::INT,
        }
    }
}

impl Action {
    /// The signal this action offers to send (through the dialog), if it is one of the signal actions.
    #[must_use]
    pub fn signal(self) -> Option<SignalKind> {
        match self {
            Self::SignalTerm => Some(SignalKind::Term),
            Self::SignalKill => Some(SignalKind::Kill),
            Self::SignalInt => Some(SignalKind::Int),
            _ => None,
        }
    }
}

/// A process the user confirmed, as it was on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalTarget {
    pub pid: u32,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22) when the row was read.
    pub start_ticks: u64,
    pub user: Option<String>,
    pub command: String,
    pub gpu_mem_bytes: Option<u64>,
}

/// What happened to one signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalOutcome {
    Sent,
    ExitedAlready,
    PermissionDenied {
        owner: Option<String>,
    },
    PidReused,
    /// Not attempted, with the reason (PID 1, our own PID).
    Refused(String),
    /// Another error from the kernel.
    Failed(String),
}

impl fmt::Display for SignalOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sent => write!(f, "sent"),
            Self::ExitedAlready => write!(f, "exited already"),
            Self::PermissionDenied { owner: Some(owner) } => write!(f, "permission denied: owned by {owner}"),
            Self::PermissionDenied { owner: None } => write!(f, "permission denied: owned by another user"),
            Self::PidReused => write!(f, "PID reused, nothing sent"),
            Self::Refused(why) => write!(f, "not sent: {why}"),
            Self::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// Sends signals; the app holds one, and tests give it a fake.
pub trait SignalSender: fmt::Debug {
    /// Sends `kind` to `target` if it is still the same process.
    fn send(&self, target: &SignalTarget, kind: SignalKind) -> SignalOutcome;
}

/// The real sender: pidfd, start-time check, then the signal.
#[derive(Debug, Clone)]
pub struct PidfdSender {
    /// Where procfs is mounted (`/proc`).
    pub proc_root: PathBuf,
}

impl Default for PidfdSender {
    fn default() -> Self {
        Self { proc_root: PathBuf::from("/proc") }
    }
}

/// The start time (field 22) of a `/proc/PID/stat` line, through the host's stat parser (the command name may
/// contain spaces and parentheses).
#[must_use]
pub fn parse_start_ticks(stat: &str) -> Option<u64> {
    crate::host::pid_parse::parse_pid_stat(stat).map(|s| s.starttime)
}

fn read_start_ticks(proc_root: &Path, pid: u32) -> Result<u64, Errno> {
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Errno::SRCH
        } else {
            Errno::from_io_error(&e).unwrap_or(Errno::IO)
        }
    })?;
    parse_start_ticks(&text).ok_or(Errno::INVAL)
}

fn outcome_of(errno: Errno, target: &SignalTarget) -> SignalOutcome {
    match errno {
        Errno::SRCH => SignalOutcome::ExitedAlready,
        Errno::PERM | Errno::ACCESS => SignalOutcome::PermissionDenied { owner: target.user.clone() },
        Errno::INVAL => SignalOutcome::Refused("the process is outside this PID namespace".to_owned()),
        other => SignalOutcome::Failed(other.to_string()),
    }
}

/// Who owns `/proc/PID`, by name from the user database next to `proc_root` (NSS for `/proc`, so LDAP users are
/// named; the fixture's passwd file in tests), else by uid; `None` when the process cannot be looked at.
fn owner_of(proc_root: &Path, pid: u32) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata(proc_root.join(pid.to_string())).ok()?.uid();
    let passwd = proc_root.parent().unwrap_or(Path::new("/")).join("etc/passwd");
    Some(crate::host::user_name(&passwd, uid).unwrap_or_else(|| format!("uid {uid}")))
}

impl SignalSender for PidfdSender {
    fn send(&self, target: &SignalTarget, kind: SignalKind) -> SignalOutcome {
        match self.send_checked(target, kind) {
            // The row did not know the owner (its details were not read): look it up for the message.
            SignalOutcome::PermissionDenied { owner: None } => {
                SignalOutcome::PermissionDenied { owner: owner_of(&self.proc_root, target.pid) }
            }
            other => other,
        }
    }
}

impl PidfdSender {
    fn send_checked(&self, target: &SignalTarget, kind: SignalKind) -> SignalOutcome {
        let own_pid = std::process::id();
        if target.pid <= 1 || target.pid == own_pid {
            return SignalOutcome::Refused(format!("PID {} is init or gpusight itself", target.pid));
        }
        let Ok(raw) = i32::try_from(target.pid) else {
            return SignalOutcome::Refused(format!("PID {} is out of range", target.pid));
        };
        let Some(pid) = Pid::from_raw(raw) else {
            return SignalOutcome::Refused("PID 0".to_owned());
        };
        let check = || match read_start_ticks(&self.proc_root, target.pid) {
            Ok(ticks) if ticks == target.start_ticks => Ok(()),
            Ok(_) => Err(SignalOutcome::PidReused),
            Err(errno) => Err(outcome_of(errno, target)),
        };
        match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
            Ok(pidfd) => {
                // Holding the pidfd pins the process: from here the PID cannot be recycled under us.
                if let Err(outcome) = check() {
                    return outcome;
                }
                match rustix::process::pidfd_send_signal(&pidfd, kind.signal()) {
                    Ok(()) => SignalOutcome::Sent,
                    Err(errno) => outcome_of(errno, target),
                }
            }
            Err(Errno::NOSYS) => {
                // Kernels before 5.3: the same identity check, then kill(); a small race remains.
                if let Err(outcome) = check() {
                    return outcome;
                }
                match rustix::process::kill_process(pid, kind.signal()) {
                    Ok(()) => SignalOutcome::Sent,
                    Err(errno) => outcome_of(errno, target),
                }
            }
            Err(errno) => outcome_of(errno, target),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_has_one_action_that_names_it() {
        for kind in SignalKind::ALL {
            let actions: Vec<&Action> = Action::ALL.iter().filter(|a| a.signal() == Some(kind)).collect();
            assert_eq!(actions.len(), 1, "{kind:?}: {actions:?}");
            assert!(actions[0].help().contains(kind.name()), "{:?}", actions[0]);
        }
    }

    #[test]
    fn start_ticks_are_field_22_even_with_odd_names() {
        let stat = "4242 (py (torch) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 12 0 987654 1000 10 \
                    18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
        assert_eq!(parse_start_ticks(stat), Some(987_654));
        assert_eq!(parse_start_ticks("garbage"), None);
        assert_eq!(parse_start_ticks("1 (x) S 1 2"), None);
    }

    #[test]
    fn outcomes_read_as_the_status_line_says_them() {
        assert_eq!(
            SignalOutcome::PermissionDenied { owner: Some("bob".into()) }.to_string(),
            "permission denied: owned by bob"
        );
        assert_eq!(SignalOutcome::ExitedAlready.to_string(), "exited already");
    }

    #[test]
    fn init_and_ourselves_are_refused() {
        let sender = PidfdSender::default();
        let target =
            |pid| SignalTarget { pid, start_ticks: 0, user: None, command: String::new(), gpu_mem_bytes: None };
        assert!(matches!(sender.send(&target(1), SignalKind::Kill), SignalOutcome::Refused(_)));
        assert!(matches!(sender.send(&target(std::process::id()), SignalKind::Kill), SignalOutcome::Refused(_)));
    }
}
