//! What the monitor is fed with: a live stream of snapshots from the sampler thread, or a whole recording
//! that the app plays back itself.

use std::sync::Arc;
use std::sync::mpsc::Receiver;

use crate::sample::{MachineInfo, Snapshot, Tick};

/// One message from the sampler thread to the monitor.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedEvent {
    /// A new sample.
    Snapshot(Box<Snapshot>),
    /// The sampler has been waiting on NVML for this long; the monitor shows a banner until the next snapshot.
    Stalled { for_ms: u64 },
    /// A note for the user that does not stop sampling (shown in the status line).
    Note(String),
    /// The source failed for good; the text is phrased for a person.
    Failed(String),
    /// The source has no more data (e.g. a synthetic run with a tick limit).
    Ended,
}

/// Where the monitor's data comes from.
#[derive(Debug)]
pub enum Feed {
    /// Live data: the first snapshot (already read, so the first frame is not empty) and the channel the
    /// sampler thread sends into.
    Live { first: Box<Snapshot>, rx: Receiver<FeedEvent> },
    /// A recording, played back by the app at an adjustable speed. `ticks` must not be empty.
    Recording { machine: Arc<MachineInfo>, ticks: Vec<Tick>, label: String },
}
