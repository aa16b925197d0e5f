//! The one way every real-time mode starts sampling: [`spawn_feed`] puts a source on the sampler thread (with a
//! recorder writing each tick on that thread when `--record` is given) and returns the receiving end; [`LiveFeed`]
//! reads it, saying stalls and notes the same way in every mode.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::sample::{MachineInfo, Snapshot};
use crate::source::Source;
use crate::source::replay::{RecordError, Recorder};
use crate::source::sampler::{FeedEvent, Sampler, Sink};

use super::RunError;

/// What a recorder on the sampler thread does when a write fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnWriteError {
    /// `--record --headless`: the recording is the point, so sampling stops (a reader of `--record -` that went
    /// away ends it quietly).
    Stop,
    /// The monitor: the recording stops, a note says so once, and monitoring goes on.
    KeepSampling,
}

/// A recorder that writes every tick on the sampler thread before the next one is sampled, so a crash loses no
/// tick that was taken.
#[derive(Debug)]
pub struct Tap {
    pub recorder: Arc<Mutex<Option<Recorder>>>,
    pub on_error: OnWriteError,
}

/// Starts sampling `source` every `interval` on its own thread. `first_sample_sent` means the caller already took
/// a first snapshot itself (the thread waits one interval before its first read).
///
/// # Errors
/// The OS refused to start the thread.
pub fn spawn_feed(
    source: Box<dyn Source>,
    interval: Duration,
    first_sample_sent: bool,
    tap: Option<Tap>,
) -> Result<(Sampler, Receiver<FeedEvent>), RunError> {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let sink: Sink = Arc::new(move |event: FeedEvent| {
        let (event, note) = match &tap {
            Some(tap) => record(tap, event),
            None => (event, None),
        };
        let last = matches!(event, FeedEvent::Failed(_) | FeedEvent::Ended);
        let Ok(tx) = tx.lock() else { return false };
        if let Some(note) = note {
            let _ = tx.send(FeedEvent::Note(note));
        }
        tx.send(event).is_ok() && !last
    });
    let sampler = Sampler::spawn(source, interval, sink, first_sample_sent).map_err(RunError::Thread)?;
    Ok((sampler, rx))
}

/// Writes a snapshot to the tap's recorder: the event to pass on, and a note for the user.
fn record(tap: &Tap, event: FeedEvent) -> (FeedEvent, Option<String>) {
    let FeedEvent::Snapshot(snapshot) = event else { return (event, None) };
    let mut slot = tap.recorder.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(recorder) = slot.as_mut() else { return (FeedEvent::Snapshot(snapshot), None) };
    match (recorder.write(&snapshot.tick), tap.on_error) {
        (Ok(()), _) => (FeedEvent::Snapshot(snapshot), None),
        // `--record - | head`: the reader has what it wanted.
        (Err(e), OnWriteError::Stop) if is_broken_pipe(&e) => (FeedEvent::Ended, None),
        (Err(e), OnWriteError::Stop) => (FeedEvent::Failed(e.to_string()), None),
        (Err(e), OnWriteError::KeepSampling) => {
            *slot = None;
            (FeedEvent::Snapshot(snapshot), Some(format!("recording stopped: {e}; monitoring goes on")))
        }
    }
}

/// A write that failed because the reader of `--record -` went away.
pub(super) fn is_broken_pipe(e: &RecordError) -> bool {
    matches!(e, RecordError::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// What [`LiveFeed::next`] gives.
#[derive(Debug)]
pub enum Next {
    /// A new sample.
    Snapshot(Box<Snapshot>),
    /// The source failed and stopped; the text is the source's.
    Failed(String),
    /// The source has no more data, or the sampler is gone.
    Ended,
    /// Nothing within the timeout (a stall or a note was said, if any).
    Idle,
}

/// The receiving end of a feed, for the modes without a screen: stalls are said once per stall and notes are
/// passed to `say` (stderr, or nothing during a watch that draws a progress line).
#[derive(Debug)]
pub struct LiveFeed {
    pub sampler: Sampler,
    rx: Receiver<FeedEvent>,
    stalls: StallNotice,
}

impl LiveFeed {
    /// A feed for `machine`'s source, already spawned.
    #[must_use]
    pub fn new((sampler, rx): (Sampler, Receiver<FeedEvent>), machine: &MachineInfo) -> Self {
        Self { sampler, rx, stalls: StallNotice::new(machine) }
    }

    /// Waits up to `timeout` for the next event that matters.
    pub fn next(&mut self, timeout: Duration, say: &dyn Fn(&str)) -> Next {
        match self.rx.recv_timeout(timeout) {
            Ok(FeedEvent::Snapshot(snapshot)) => {
                if let Some(line) = self.stalls.on_sample() {
                    say(&line);
                }
                Next::Snapshot(snapshot)
            }
            Ok(FeedEvent::Stalled { for_ms }) => {
                if let Some(line) = self.stalls.on_stall(for_ms) {
                    say(&line);
                }
                Next::Idle
            }
            Ok(FeedEvent::Note(note)) => {
                say(&note);
                Next::Idle
            }
            Ok(FeedEvent::Failed(message)) => Next::Failed(message),
            Ok(FeedEvent::Ended) | Err(RecvTimeoutError::Disconnected) => Next::Ended,
            Err(RecvTimeoutError::Timeout) => Next::Idle,
        }
    }
}

/// Says a stall once per stall, naming the source, and once more when samples come again; the watchdog reports
/// a stall every 250 ms while it lasts.
#[derive(Debug)]
pub struct StallNotice {
    source: &'static str,
    stalled_ms: Option<u64>,
}

impl StallNotice {
    #[must_use]
    pub fn new(machine: &MachineInfo) -> Self {
        let source = match machine.source {
            crate::sample::SourceKind::Live => "NVML",
            crate::sample::SourceKind::Replay => "the recording",
            crate::sample::SourceKind::Synthetic => "the synthetic source",
        };
        Self { source, stalled_ms: None }
    }

    /// The watchdog says the sample in progress has taken `for_ms`: a line the first time in a stall.
    pub fn on_stall(&mut self, for_ms: u64) -> Option<String> {
        let first = self.stalled_ms.is_none();
        self.stalled_ms = Some(for_ms);
        first.then(|| format!("{} has not answered for {:.1} s; waiting", self.source, ms_to_s(for_ms)))
    }

    /// A sample arrived: a line if it ends a stall.
    pub fn on_sample(&mut self) -> Option<String> {
        let for_ms = self.stalled_ms.take()?;
        Some(format!("{} answered again after more than {:.1} s", self.source, ms_to_s(for_ms)))
    }
}

fn ms_to_s(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_said_once_naming_the_source_and_its_end_once() {
        let machine = MachineInfo { source: crate::sample::SourceKind::Synthetic, ..MachineInfo::default() };
        let mut notice = StallNotice::new(&machine);
        assert_eq!(notice.on_sample(), None);
        let first = notice.on_stall(2000).expect("said once");
        assert!(first.contains("the synthetic source has not answered for 2.0 s"), "{first}");
        for ms in (2250..10_000).step_by(250) {
            assert_eq!(notice.on_stall(ms), None, "said again at {ms} ms");
        }
        let end = notice.on_sample().expect("the end is said");
        assert!(end.contains("answered again after more than 9.8 s"), "{end}");
        assert_eq!(notice.on_sample(), None);
        assert!(StallNotice::new(&MachineInfo::default()).on_stall(2000).expect("live").starts_with("NVML "));
    }
}
