//! The sampler thread: paces a source at the interval and hands owned snapshots to a sink; a watchdog thread
//! notices when a sample is late (a hung NVML call cannot be cancelled) and says so, so the UI keeps drawing and
//! tells the user. The consumer never blocks on the source.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sample::Snapshot;

use super::Source;

/// What the sampler tells its consumer.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedEvent {
    /// A new sample.
    Snapshot(Box<Snapshot>),
    /// The sample in progress has taken this long so far (sent by the watchdog, repeatedly while it lasts).
    Stalled { for_ms: u64 },
    /// A note for the user that does not stop sampling (e.g. the recording stopped after a write error).
    Note(String),
    /// The source failed and stopped.
    Failed(String),
    /// The source has no more data (end of a recording).
    Ended,
}

/// Where the sampler sends events. Returning `false` means the consumer is gone and the sampler stops.
pub type Sink = Arc<dyn Fn(FeedEvent) -> bool + Send + Sync>;

/// A running sampler; dropping it asks the thread to stop (it stops after the sample in progress).
#[derive(Debug)]
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    watchdog: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling `source` every `interval` into `sink`. `first_sample_sent` means the caller already took
    /// a first snapshot itself, so the thread waits one interval before its first read.
    ///
    /// # Errors
    /// The OS refused to start a thread.
    pub fn spawn(
        mut source: Box<dyn Source>,
        interval: Duration,
        sink: Sink,
        first_sample_sent: bool,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        // Milliseconds since `epoch` when the sample in progress started; 0 when none is in progress.
        let busy_since = Arc::new(AtomicU64::new(0));
        let epoch = Instant::now();
        let thread = {
            let (stop, busy_since, sink) = (Arc::clone(&stop), Arc::clone(&busy_since), Arc::clone(&sink));
            std::thread::Builder::new().name("gpusight-sampler".into()).spawn(move || {
                let mut next_at = Instant::now() + if first_sample_sent { interval } else { Duration::ZERO };
                while !stop.load(Ordering::Relaxed) {
                    sleep_until(next_at, &stop);
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    next_at += interval;
                    let started = Instant::now();
                    // Behind by more than one interval (a slow read): do not burst to catch up.
                    if next_at < started {
                        next_at = started + interval;
                    }
                    busy_since.store(millis_since(epoch, started).max(1), Ordering::Relaxed);
                    let result = source.next_snapshot();
                    busy_since.store(0, Ordering::Relaxed);
                    let keep_going = match result {
                        Ok(Some(snapshot)) => sink(FeedEvent::Snapshot(Box::new(snapshot))),
                        Ok(None) => {
                            sink(FeedEvent::Ended);
                            false
                        }
                        Err(e) => {
                            sink(FeedEvent::Failed(e.to_string()));
                            false
                        }
                    };
                    if !keep_going {
                        break;
                    }
                }
                stop.store(true, Ordering::Relaxed);
            })?
        };
        let watchdog = {
            let stop = Arc::clone(&stop);
            let late_after = (interval * 2).max(Duration::from_secs(2));
            std::thread::Builder::new().name("gpusight-watchdog".into()).spawn(move || {
                let check_every = Duration::from_millis(250);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(check_every);
                    let since = busy_since.load(Ordering::Relaxed);
                    if since == 0 {
                        continue;
                    }
                    let busy_for = Duration::from_millis(millis_since(epoch, Instant::now()).saturating_sub(since));
                    if busy_for >= late_after {
                        let for_ms = u64::try_from(busy_for.as_millis()).unwrap_or(u64::MAX);
                        if !sink(FeedEvent::Stalled { for_ms }) {
                            break;
                        }
                    }
                }
            })?
        };
        Ok(Self { stop, thread: Some(thread), watchdog: Some(watchdog) })
    }

    /// Waits until the source ends on its own (a recording played to its end), then stops the watchdog.
    pub fn stop_after_end(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.stop();
    }

    /// Asks the threads to stop and waits for the sampler to finish its current read.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(watchdog) = self.watchdog.take() {
            let _ = watchdog.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // Do not join here: a read stuck in the driver would hang the exit. The threads see the flag and end.
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn millis_since(epoch: Instant, at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(epoch).as_millis()).unwrap_or(u64::MAX)
}

/// Sleeps until `deadline` in short steps so a stop request is noticed quickly.
fn sleep_until(deadline: Instant, stop: &AtomicBool) {
    loop {
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(100)));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::source::replay::{Recording, ReplaySource};
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    #[test]
    fn the_sampler_sends_every_tick_then_ends() {
        let mut synthetic = SyntheticSource::new(SyntheticSpec::parse("idle:2").expect("spec"));
        let machine = synthetic.machine();
        let ticks: Vec<_> = (0..5).map(|_| synthetic.next_tick().expect("tick").expect("some")).collect();
        let recording = Recording {
            machine,
            ticks,
            truncated_tail: false,
            stopped_early: None,
            label: "t".into(),
            dropped_ticks: 0,
            first_at_ms: None,
            notes: Vec::new(),
        };
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink: Sink = {
            let seen = Arc::clone(&seen);
            Arc::new(move |event| {
                seen.lock().expect("lock").push(event);
                true
            })
        };
        let sampler =
            Sampler::spawn(Box::new(ReplaySource::new(recording)), Duration::ZERO, sink, false).expect("spawn");
        sampler.stop_after_end();
        let seen = seen.lock().expect("lock");
        let n_snapshots = seen.iter().filter(|e| matches!(e, FeedEvent::Snapshot(_))).count();
        assert_eq!(n_snapshots, 5);
        assert_eq!(seen.last(), Some(&FeedEvent::Ended));
    }
}
