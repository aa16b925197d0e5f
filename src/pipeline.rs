//! The consumer side of the data flow: a snapshot goes into the history, then the advice engine runs. The
//! monitor, `doctor`, `report`, `export` and `--once` all read what this holds.

use crate::advice::{Advisor, Finding, Thresholds};
use crate::history::{History, ProcessBound};
use crate::sample::Snapshot;

/// History plus findings, updated one snapshot at a time.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub history: History,
    pub thresholds: Thresholds,
    advisor: Advisor,
    findings: Vec<Finding>,
    /// Every finding that was active at some point, newest version of each, for `doctor`.
    seen: Vec<Finding>,
    /// The first tick taken in, the baseline for cumulative counters in `report`.
    first_tick: crate::sample::Tick,
}

/// The per-process bound that covers every rule window: the rules read a process's series over the windows in
/// [`Thresholds::windows`], so its history spans the longest of them (and at least [`ProcessBound::MIN_SPAN_MS`]).
#[must_use]
pub fn process_bound(thresholds: &Thresholds) -> ProcessBound {
    ProcessBound::covering(thresholds.windows().iter().map(|(_, secs)| *secs).max().unwrap_or(0))
}

impl Pipeline {
    /// A pipeline for the machine of `first`, which it takes in.
    #[must_use]
    pub fn new(first: &Snapshot, capacity: usize, thresholds: Thresholds) -> Self {
        let mut pipeline = Self {
            history: History::with_process_bound(
                std::sync::Arc::clone(&first.machine),
                capacity,
                process_bound(&thresholds),
            ),
            thresholds,
            advisor: Advisor::default(),
            findings: Vec::new(),
            seen: Vec::new(),
            first_tick: first.tick.clone(),
        };
        pipeline.ingest(first);
        pipeline
    }

    /// Takes in one snapshot and re-evaluates the findings.
    pub fn ingest(&mut self, snapshot: &Snapshot) {
        self.history.push(snapshot);
        self.evaluate();
    }

    /// [`Pipeline::ingest`] for a snapshot the caller no longer needs (the monitor's feed): no copy of the tick.
    pub fn ingest_owned(&mut self, snapshot: Snapshot) {
        self.history.push_owned(snapshot);
        self.evaluate();
    }

    fn evaluate(&mut self) {
        self.findings = self.advisor.update(&self.history, &self.thresholds).to_vec();
        for finding in &self.findings {
            let same = |f: &Finding| (f.rule, f.gpu_index, f.pid) == (finding.rule, finding.gpu_index, finding.pid);
            match self.seen.iter_mut().find(|f| same(f)) {
                Some(slot) => *slot = finding.clone(),
                None => self.seen.push(finding.clone()),
            }
        }
    }

    /// Every finding that was active at some point since the pipeline started (the newest evidence of each),
    /// worst first. A phase that ended before the window did still shows here.
    #[must_use]
    pub fn findings_seen(&self) -> Vec<Finding> {
        let mut seen = self.seen.clone();
        seen.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(a.gpu_index.cmp(&b.gpu_index))
                .then(a.rule.cmp(&b.rule))
                .then(a.pid.cmp(&b.pid))
        });
        seen
    }

    /// The first tick this pipeline took in.
    #[must_use]
    pub fn first_tick(&self) -> &crate::sample::Tick {
        &self.first_tick
    }

    /// The findings active after the last snapshot, worst first.
    #[must_use]
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }
}
