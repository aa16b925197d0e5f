//! The consumer side of the data flow: a snapshot goes into the history, then the advice engine runs. The
//! monitor, `doctor`, `report`, `export` and `--once` all read what this holds.

use crate::advice::{Advisor, Finding, Thresholds};
use crate::history::History;
use crate::sample::Snapshot;

/// History plus findings, updated one snapshot at a time.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub history: History,
    pub thresholds: Thresholds,
    advisor: Advisor,
    findings: Vec<Finding>,
}

impl Pipeline {
    /// A pipeline for the machine of `first`, which it takes in.
    #[must_use]
    pub fn new(first: &Snapshot, capacity: usize, thresholds: Thresholds) -> Self {
        let mut pipeline = Self {
            history: History::new(std::sync::Arc::clone(&first.machine), capacity),
            thresholds,
            advisor: Advisor::default(),
            findings: Vec::new(),
        };
        pipeline.ingest(first);
        pipeline
    }

    /// Takes in one snapshot and re-evaluates the findings.
    pub fn ingest(&mut self, snapshot: &Snapshot) {
        self.history.push(snapshot);
        self.findings = self.advisor.update(&self.history, &self.thresholds).to_vec();
    }

    /// The findings active after the last snapshot, worst first.
    #[must_use]
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }
}
