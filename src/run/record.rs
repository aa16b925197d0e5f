//! `--record FILE --headless`: sample and write until a signal asks to stop. Each tick is written (and flushed) on
//! the sampler thread before the next is sampled, so a crash while sampling loses no tick that was taken.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::cli::DataArgs;
use crate::config::Config;
use crate::source::OptionalReadings;
use crate::source::replay::Recorder;

use super::feed::{LiveFeed, Next, OnWriteError, Tap, is_broken_pipe, spawn_feed};
use super::{Data, RunError, warn};

/// Records until SIGINT, SIGTERM or SIGHUP, or until the source ends or fails.
pub(super) fn run(data: &Data, args: &DataArgs, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let Some(path) = &args.record else { return Err(RunError::Usage("--headless needs --record FILE".into())) };
    let source = data.open_source(config, interval, OptionalReadings::ALL)?;
    let machine = source.machine();
    let recorder = match Recorder::create(path, &machine, args.overwrite) {
        Ok(recorder) => recorder.with_max_bytes(max_bytes(args)),
        // `--record - | true`: the reader was gone before the header; as when it goes later, a quiet end.
        Err(e) if is_broken_pipe(&e) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let recorder = Arc::new(Mutex::new(Some(recorder)));
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|source| RunError::Signals { what: "signal", source })?;
    }
    if args.exit_on_stdin_eof {
        watch_stdin(Arc::clone(&stop))?;
    }
    let tap = Tap { recorder: Arc::clone(&recorder), on_error: OnWriteError::Stop };
    let mut feed = LiveFeed::new(spawn_feed(source, interval, false, Some(tap))?, &machine);
    warn(&format!(
        "recording to {} every {:.1} s; stop with Ctrl-C or SIGTERM",
        path.display(),
        interval.as_secs_f64()
    ));
    let mut result = Ok(0);
    while !stop.load(Ordering::Relaxed) {
        // Written on the sampler thread already; here only to say stalls and notes.
        match feed.next(Duration::from_millis(200), &warn) {
            Next::Snapshot(_) | Next::Idle => {}
            Next::Failed(message) => {
                result = Err(RunError::SamplingStopped(message));
                break;
            }
            Next::Ended => break,
        }
    }
    feed.sampler.stop();
    let mut slot = recorder.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(mut recorder) = slot.take() else { return result };
    warn(&format!("wrote {} samples to {}", recorder.n_ticks(), recorder.path().display()));
    if let Err(e) = recorder.finish()
        && result.is_ok()
        && !is_broken_pipe(&e)
    {
        result = Err(RunError::Record(e));
    }
    result
}

/// `--exit-on-stdin-eof`: a thread reads standard input to its end (or an error) and then asks the recorder to
/// stop, as a signal would. Over `gpusight ssh` standard input is the ssh channel: it ends when the session does,
/// even when no hangup is forwarded (ssh without a terminal sends none).
fn watch_stdin(stop: Arc<AtomicBool>) -> Result<(), RunError> {
    std::thread::Builder::new()
        .name("gpusight-stdin-eof".into())
        .spawn(move || {
            let mut buf = [0_u8; 4096];
            let mut stdin = std::io::stdin().lock();
            while std::io::Read::read(&mut stdin, &mut buf).is_ok_and(|n| n > 0) {}
            stop.store(true, Ordering::Relaxed);
        })
        .map(drop)
        .map_err(RunError::Thread)
}

/// `--record-max-mb` in bytes.
pub(super) fn max_bytes(args: &DataArgs) -> Option<u64> {
    args.record_max_mb.map(|mb| mb.saturating_mul(1_000_000))
}
