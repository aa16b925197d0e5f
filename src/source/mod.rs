//! Where snapshots come from. Every source hands out owned [`Tick`]s of one [`MachineInfo`]; live NVML data, a
//! recording and a synthetic scenario all go through the same pipeline afterwards, and nothing downstream
//! branches on which one it was.
//!
//! Architecture invariant: nothing in this module knows ratatui, the terminal or the app.

use std::sync::Arc;

use crate::sample::{MachineInfo, Snapshot, Tick};

pub mod fault;
pub mod live;
pub mod nvml;
pub mod replay;
pub mod sampler;
pub mod select;
pub mod synthetic;
pub mod visible;
pub mod xid;

/// Readings that cost the driver real CPU time and that only some commands use: each command asks for those it
/// shows, serves or writes. Only the live source heeds it; synthetic data and recordings give what they have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionalReadings {
    /// GPM's GR engine active (`DCGM_FI_PROF_GR_ENGINE_ACTIVE`): 1.5 ms of driver CPU per GPU per GPM read on an
    /// H200, more than every other GPM metric together; `export` serves it and `--record` keeps it, the screens do
    /// not show it.
    pub gr_engine_active: bool,
}

impl OptionalReadings {
    /// Every reading.
    pub const ALL: Self = Self { gr_engine_active: true };
    /// Only what every command uses.
    pub const NONE: Self = Self { gr_engine_active: false };
}

/// Why a source could not start or go on. The messages are for people: they say what is missing and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// NVML could not be started; the text names what is missing (library, driver, permission).
    #[error("{0}")]
    NoDriver(String),
    /// A recording could not be read.
    #[error("{0}")]
    Recording(String),
    /// The command line asks for what the source does not have (`--only` a GPU that is not there).
    #[error("{0}")]
    Usage(String),
    /// The source stopped mid-run (the driver went away, the device vanished); the text says what happened.
    #[error("{0}")]
    Stopped(String),
}

/// A source of ticks for one machine.
pub trait Source: Send {
    /// The machine this source describes. It does not change over the source's life.
    fn machine(&self) -> Arc<MachineInfo>;

    /// Reads the next tick. Live sources block for the reads (not for pacing: the sampler paces them);
    /// recordings return their next frame. `Ok(None)` means the source has no more data.
    ///
    /// # Errors
    /// A fault that ends the source, phrased for a person.
    fn next_tick(&mut self) -> Result<Option<Tick>, SourceError>;

    /// Reads the next tick and pairs it with the machine.
    ///
    /// # Errors
    /// As [`Source::next_tick`].
    fn next_snapshot(&mut self) -> Result<Option<Snapshot>, SourceError> {
        Ok(self.next_tick()?.map(|tick| Snapshot { machine: self.machine(), tick }))
    }
}
