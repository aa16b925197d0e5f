//! What the monitor is fed with: a live stream of snapshots from the sampler thread, or a whole recording
//! that the app plays back itself.

use std::sync::Arc;
use std::sync::mpsc::Receiver;

use crate::sample::{MachineInfo, Snapshot, Tick};

pub use crate::source::sampler::FeedEvent;

/// Where the monitor's data comes from.
#[derive(Debug)]
pub enum Feed {
    /// Live data: the first snapshot (already read, so the first frame is not empty) and the channel the
    /// sampler thread sends into.
    Live { first: Box<Snapshot>, rx: Receiver<FeedEvent> },
    /// A recording, played back by the app at an adjustable speed. `ticks` must not be empty.
    Recording { machine: Arc<MachineInfo>, ticks: Vec<Tick>, label: String },
}
