//! The advice engine: pure rules over the history that say why a job is slow or a GPU is sick.
//!
//! Architecture invariant: nothing here does I/O or reads the clock; time comes from the samples.

use serde::{Deserialize, Serialize};

use crate::history::History;
use crate::sample::UnixMs;

pub mod thresholds;

pub use thresholds::Thresholds;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

/// Every rule of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    InputBound,
    CpuBoundInput,
    ThermalThrottle,
    PowerCapped,
    HwSlowdown,
    PcieDowngraded,
    NumaMisplaced,
    VramNearlyFull,
    VramGrowing,
    IdleHolder,
    UtilMisleading,
    SharedGpu,
    HostMemoryPressure,
    CpuSteal,
    GpuErrors,
    DriverSanity,
    PersistenceOff,
    MigActive,
    /// Not a rule about the GPUs: a signal the engine needs could not be read (e.g. no Xid source).
    Visibility,
}

/// One thing the engine found, with the numbers that prove it and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub rule: Rule,
    pub severity: Severity,
    /// The GPU it is about (NVML index), if any.
    pub gpu_index: Option<u32>,
    /// The process it is about, if any.
    pub pid: Option<u32>,
    /// One line: what is wrong.
    pub title: String,
    /// The numbers over a named window, e.g. "SM util 4 % (median, 30 s); PSI io 36.8 %; PID 455 in D 40 % of reads".
    pub evidence: String,
    /// What to do.
    pub remedy: String,
    /// A longer explanation of the rule and why it matters.
    pub explanation: String,
    /// When the condition started to hold (sample time).
    pub since_ms: UnixMs,
}

/// Applies hysteresis across evaluations: a finding appears after its condition held for the rule's window and
/// clears only after it stopped holding for a while, so the advice pane does not flicker.
#[derive(Debug, Clone, Default)]
pub struct Advisor {
    active: Vec<Finding>,
}

impl Advisor {
    /// Re-evaluates the rules over `history` and returns the findings active now.
    pub fn update(&mut self, history: &History, thresholds: &Thresholds) -> &[Finding] {
        let _ = (history, thresholds);
        &self.active
    }
}

/// Evaluates every rule over `history` once, with no memory of earlier evaluations.
#[must_use]
pub fn evaluate(history: &History, thresholds: &Thresholds) -> Vec<Finding> {
    Advisor::default().update(history, thresholds).to_vec()
}
