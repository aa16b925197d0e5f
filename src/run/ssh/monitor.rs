//! One host's full monitor, opened from `gpusight ssh`'s view (Enter in a host's drill-down): the monitor's own
//! event loop fed from the same stream (the host's reader copies each snapshot to it), its signals sent through
//! ssh after the start-time check, `--readonly` kept. Its graphs start when it opens: the history the host's reader
//! keeps stays with the reader.

use std::time::Duration;

use crate::app::{Feed, FeedEvent, NotOnThisMachine, SignalKind, SignalOutcome, SignalSender, SignalTarget};
use crate::cli::Cli;
use crate::config::Config;
use crate::remote::host::HostHandle;
use crate::remote::ssh::{SshOptions, kill_command, run_to_end};

/// Sends the monitor's signals to a process on `host` through a short `ssh HOST` (see [`kill_command`]).
#[derive(Debug)]
struct SshSender {
    ssh: SshOptions,
    host: String,
}

impl SignalSender for SshSender {
    fn send(&self, target: &SignalTarget, kind: SignalKind) -> SignalOutcome {
        let command = kill_command(kind.name().trim_start_matches("SIG"), target.pid, target.start_ticks);
        match run_to_end(&self.ssh, &self.host, &command) {
            Ok((Some(0), _)) => SignalOutcome::Sent,
            Ok((Some(3), _)) => SignalOutcome::PidReused,
            Ok((_, Some(last))) if last.contains("Operation not permitted") => {
                SignalOutcome::PermissionDenied { owner: None }
            }
            Ok((_, last)) => SignalOutcome::Failed(last.unwrap_or_else(|| "ssh failed".to_owned())),
            Err(e) => SignalOutcome::Failed(format!("cannot run ssh: {e}")),
        }
    }
}

/// Opens `handle`'s host in the monitor until the user leaves it. `Ok(None)`: back to the fleet view (with a
/// notice when no sample came); `Ok(Some(code))`: a signal ended the monitor, so the view ends too.
pub(super) fn open(
    cli: &Cli,
    config: &Config,
    handle: &HostHandle,
    ssh: &SshOptions,
    readonly: bool,
) -> color_eyre::Result<Result<Option<i32>, String>> {
    let interval = Duration::from_secs_f64(config.general.interval_s);
    let rx = handle.tap();
    let wait = (interval * 3).max(Duration::from_secs(5));
    let first = match rx.recv_timeout(wait) {
        Ok(FeedEvent::Snapshot(first)) => first,
        Ok(FeedEvent::Failed(why)) => return Ok(Err(format!("{}: {why}", handle.name))),
        _ => return Ok(Err(format!("{}: no sample within {} s", handle.name, wait.as_secs()))),
    };
    let mut options =
        super::super::monitor::options(cli, config, interval).map_err(|e| color_eyre::eyre::eyre!("{e}"))?;
    options.readonly = readonly;
    options.process_inspector = Box::new(NotOnThisMachine { what: "remote" });
    options.signal_sender = Box::new(SshSender { ssh: ssh.clone(), host: handle.name.clone() });
    let feed = Feed::Live { first, backlog: Vec::new(), rx };
    // The monitor's loop takes the terminal as it finds it: the view's screen is given back first.
    crate::terminal::restore();
    let code = super::super::event_loop::run(options, feed, None)?;
    Ok(Ok((code != 0).then_some(code)))
}
