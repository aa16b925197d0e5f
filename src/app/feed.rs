//! What the monitor is fed with: a live stream of snapshots from the sampler thread, or a whole recording
//! that the app plays back itself.

use std::sync::Arc;
use std::sync::mpsc::Receiver;

use crate::sample::{MachineInfo, Snapshot, Tick};

pub use crate::source::sampler::FeedEvent;

/// Where the monitor's data comes from.
#[derive(Debug)]
pub enum Feed {
    /// Live data: the first snapshot (already read, so the first frame is not empty), the snapshots already taken
    /// after it (a synthetic machine run ahead to `--at`; they go into the history before the first frame, never
    /// through the channel, whose newest-only slot would skip them), and the channel the sampler thread sends into.
    Live { first: Box<Snapshot>, backlog: Vec<Snapshot>, rx: Receiver<FeedEvent> },
    /// A recording, played back by the app at an adjustable speed. `ticks` must not be empty.
    Recording { machine: Arc<MachineInfo>, ticks: Vec<Tick>, label: String },
}

/// The newest snapshot not yet taken by the screen. The sampler side puts every snapshot here and the screen takes
/// the newest when it is ready, so a screen slower than the sampler (64 GPUs x 100,000 processes every 0.1 s)
/// skips snapshots instead of queueing them without bound (it reached 3.6 GB in 8 s, and `q` waited behind the
/// queue). The source's one-time notes of a skipped snapshot are carried to the next, so none is lost.
#[derive(Debug, Default)]
pub struct Latest {
    slot: std::sync::Mutex<Option<Box<Snapshot>>>,
}

impl Latest {
    /// Keeps `snapshot` as the newest; true when the slot was empty, i.e. the screen needs waking.
    pub fn put(&self, mut snapshot: Box<Snapshot>) -> bool {
        let mut slot = self.slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let was_empty = match slot.take() {
            Some(skipped) => {
                let mut notes = skipped.tick.health.notes;
                if !notes.is_empty() {
                    notes.append(&mut snapshot.tick.health.notes);
                    snapshot.tick.health.notes = notes;
                }
                false
            }
            None => true,
        };
        *slot = Some(snapshot);
        was_empty
    }

    /// The newest snapshot, if one arrived since the last take.
    pub fn take(&self) -> Option<Box<Snapshot>> {
        self.slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(at_ms: u64, note: Option<&str>) -> Box<Snapshot> {
        let mut tick = Tick { at_ms, ..Tick::default() };
        tick.health.notes.extend(note.map(str::to_owned));
        Box::new(Snapshot { machine: Arc::new(MachineInfo::default()), tick })
    }

    #[test]
    fn a_slow_screen_gets_the_newest_snapshot_and_no_note_is_lost() {
        let latest = Latest::default();
        assert!(latest.put(snapshot(1, Some("GPU 3 lost"))), "the first wakes the screen");
        for at in 2..10_000 {
            assert!(!latest.put(snapshot(at, None)), "a pending snapshot is replaced, not queued");
        }
        let newest = latest.take().expect("newest");
        assert_eq!(newest.tick.at_ms, 9_999);
        assert_eq!(newest.tick.health.notes, vec!["GPU 3 lost".to_owned()]);
        assert!(latest.take().is_none());
        assert!(latest.put(snapshot(10_000, None)), "after a take the next one wakes the screen again");
    }
}
