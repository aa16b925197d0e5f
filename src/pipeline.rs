//! The consumer side of the data flow: a snapshot goes into the history, then the advice engine runs. The
//! monitor, `doctor`, `report`, `export` and `--once` all read what this holds.

use crate::advice::account::Account;
use crate::advice::account::book::Totals;
use crate::advice::{Advisor, Finding, Thresholds};
use crate::fast_map::{FastMap, FastSet};
use crate::history::{History, ProcessBound};
use crate::sample::Snapshot;

/// History plus findings, updated one snapshot at a time.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub history: History,
    pub thresholds: Thresholds,
    advisor: Advisor,
    /// Every finding that was active at some point, newest version of each, with the time of the last sample it
    /// was active at, for `doctor`; at most [`Pipeline::MAX_SEEN`] (short jobs that come and go for weeks would
    /// otherwise add one each).
    seen: Vec<(Finding, crate::sample::UnixMs)>,
    /// The first tick taken in, the baseline for cumulative counters in `report`.
    first_tick: crate::sample::Tick,
}

/// The per-process bound that covers every rule window: the rules read a process's series over the windows in
/// [`Thresholds::windows`], so its history spans the longest of them (and at least [`ProcessBound::MIN_SPAN_MS`]).
#[must_use]
pub fn process_bound(thresholds: &Thresholds) -> ProcessBound {
    // The findings read off the accounts read the account book, not the process series.
    let rules = crate::advice::Rule::ALL.into_iter().filter(|r| !crate::advice::account::findings::read_off(*r));
    ProcessBound::covering(rules.filter_map(|r| thresholds.window_of(r)).max().unwrap_or(0))
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
            seen: Vec::new(),
            first_tick: first.tick.clone(),
        };
        pipeline.ingest(first);
        pipeline
    }

    /// A pipeline over a run of ticks of one machine (a recording, or the ticks a one-shot command collected):
    /// the first one starts it and the others are taken in order. `None` when `ticks` is empty. The monitor's
    /// player and every one-shot mode build their pipeline this way, so a recording is judged the same everywhere.
    #[must_use]
    pub fn from_ticks(
        machine: &std::sync::Arc<crate::sample::MachineInfo>,
        ticks: &[crate::sample::Tick],
        capacity: usize,
        thresholds: Thresholds,
    ) -> Option<Self> {
        let (first, rest) = ticks.split_first()?;
        let first = Snapshot { machine: std::sync::Arc::clone(machine), tick: first.clone() };
        let mut pipeline = Self::new(&first, capacity, thresholds);
        pipeline.ingest_ticks(rest);
        Some(pipeline)
    }

    /// A pipeline over snapshots in order (a source read as fast as it answers); `None` when there are none.
    #[must_use]
    pub fn from_snapshots(
        snapshots: impl IntoIterator<Item = Snapshot>,
        capacity: usize,
        thresholds: Thresholds,
    ) -> Option<Self> {
        let mut snapshots = snapshots.into_iter();
        let mut pipeline = Self::new(&snapshots.next()?, capacity, thresholds);
        for snapshot in snapshots {
            pipeline.ingest_owned(snapshot);
        }
        Some(pipeline)
    }

    /// Takes in ticks of this pipeline's machine, in order (a recording played forward).
    pub fn ingest_ticks(&mut self, ticks: &[crate::sample::Tick]) {
        let machine = std::sync::Arc::clone(self.history.machine());
        for tick in ticks {
            self.ingest_owned(Snapshot { machine: std::sync::Arc::clone(&machine), tick: tick.clone() });
        }
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

    /// The most findings [`Pipeline::findings_seen`] remembers; past it, the one that started longest ago and is
    /// not active now is forgotten.
    pub const MAX_SEEN: usize = 512;

    fn evaluate(&mut self) {
        // The active findings stay in the advisor (no copy per tick); the remembered ones are refreshed in place,
        // reusing their strings' buffers.
        let now_ms = self.history.now_ms().unwrap_or(0);
        self.advisor.update(&self.history, &self.thresholds);
        let active = self.advisor.verdicts();
        // Lookups by key, built once a tick: at scale thousands of verdicts each look for their slot, and each
        // remembered finding asks whether a verdict covers it.
        let mut slots: FastMap<FindingKey, usize> = crate::fast_map::map_with_capacity(self.seen.len());
        for (i, (f, _)) in self.seen.iter().enumerate() {
            slots.entry(f.key()).or_insert(i);
        }
        for finding in active {
            if let Some(&i) = slots.get(&finding.key()) {
                let (slot, until) = &mut self.seen[i];
                refresh(slot, finding);
                *until = now_ms;
            } else {
                slots.insert(finding.key(), self.seen.len());
                self.seen.push((finding.clone(), now_ms));
            }
        }
        let covered = covered_keys(active);
        // A finding remembered from when it was a verdict of its own, now folded into another one, still holds.
        for (slot, until) in &mut self.seen {
            if *until != now_ms && covered.contains(&slot.key()) {
                *until = now_ms;
            }
        }
        while self.seen.len() > Self::MAX_SEEN {
            let oldest = self
                .seen
                .iter()
                .enumerate()
                .filter(|(_, (f, _))| !covered.contains(&f.key()))
                .min_by_key(|(_, (f, _))| f.since_ms)
                .map(|(i, _)| i);
            match oldest {
                Some(i) => {
                    self.seen.swap_remove(i);
                }
                None => break,
            }
        }
    }

    /// Every finding that was active at some point since the pipeline started (the newest evidence of each),
    /// worst first. A phase that ended before the window did still shows here.
    #[must_use]
    pub fn findings_seen(&self) -> Vec<Finding> {
        self.findings_seen_until().into_iter().map(|(f, _)| f).collect()
    }

    /// [`Pipeline::findings_seen`] with the time of the last sample each finding was active at: a finding that
    /// cleared held from its `since_ms` to that time.
    #[must_use]
    pub fn findings_seen_until(&self) -> Vec<(Finding, crate::sample::UnixMs)> {
        let mut seen = self.seen.clone();
        seen.sort_by(|(a, _), (b, _)| {
            b.severity
                .cmp(&a.severity)
                .then(a.gpu_index.cmp(&b.gpu_index))
                .then(a.rule.cmp(&b.rule))
                .then(a.pid.cmp(&b.pid))
        });
        seen
    }

    /// The warnings and criticals that cleared within the last `keep_ms`, most recent first: what the pane keeps a
    /// dim trace of, so a problem that ended is not forgotten the moment it does.
    #[must_use]
    pub fn recently_cleared(&self, keep_ms: u64) -> Vec<Cleared> {
        let now = self.history.now_ms().unwrap_or(0);
        let active = self.advisor.verdicts();
        let mut out: Vec<Cleared> = self
            .seen
            .iter()
            .filter(|(f, until)| {
                *until < now
                    && now - *until <= keep_ms
                    && f.severity >= crate::advice::Severity::Warning
                    && !active.iter().any(|a| a.covers(f.key()))
            })
            .map(|(f, until)| Cleared {
                rule: f.rule,
                severity: f.severity,
                gpu_index: f.gpu_index,
                pid: f.pid,
                held_ms: until.saturating_sub(f.since_ms),
                ago_ms: now - *until,
            })
            .collect();
        out.sort_by_key(|c| c.ago_ms);
        out
    }

    /// What the rules watch before their first window is covered; `None` once they judge.
    #[must_use]
    pub fn judging(&self) -> Option<crate::advice::judging::Judging> {
        crate::advice::judging::Judging::of(&self.history, &self.thresholds)
    }

    /// The first tick this pipeline took in.
    #[must_use]
    pub fn first_tick(&self) -> &crate::sample::Tick {
        &self.first_tick
    }

    /// The findings active after the last snapshot, worst first: one verdict per GPU, with what else was seen on
    /// it folded in (see [`crate::advice::fold_into_verdicts`]).
    #[must_use]
    pub fn findings(&self) -> &[Finding] {
        self.advisor.verdicts()
    }

    /// Where each job's GPU time went over the account's window (`[thresholds.account] window_s`): one account per
    /// job and GPU (or MIG slice), as of the last snapshot.
    #[must_use]
    pub fn accounts(&self) -> &[Account] {
        self.advisor.accounts()
    }

    /// The accounts over the last `window_s` instead (doctor and report over their whole watch, where the book
    /// still holds it: fifteen minutes at least).
    #[must_use]
    pub fn accounts_over(&self, window_s: u64) -> Vec<Account> {
        let index = crate::advice::account::evidence::TickIndex::new(self.history.latest());
        let now_ms = self.history.now_ms().unwrap_or(0);
        self.advisor.book().accounts(now_ms, window_s, self.advisor.verdicts(), &index)
    }

    /// Each job's seconds per cause on each GPU since the pipeline started (the exporter's
    /// `gpusight_gpu_seconds_total`): (GPU, GPU instance, job, totals), for the jobs still on their GPU.
    pub fn account_totals(&self) -> impl Iterator<Item = (u32, Option<u32>, &str, &Totals)> {
        self.advisor.book().totals().map(|((gpu, gi), job, totals)| (gpu, gi, job, totals))
    }
}

/// What identifies a finding ([`Finding::key`]).
type FindingKey = (crate::advice::Rule, Option<u32>, Option<u32>);

/// The keys the verdicts `active` cover ([`Finding::covers`]): their own, and those of the findings folded into
/// them (on their GPU).
fn covered_keys(active: &[Finding]) -> FastSet<FindingKey> {
    let mut keys = crate::fast_map::set_with_capacity(active.len());
    for verdict in active {
        keys.insert(verdict.key());
        keys.extend(verdict.also.iter().map(|a| (a.rule, verdict.gpu_index, a.pid)));
    }
    keys
}

/// Copies `from` into `slot` field by field: `String::clone_from` keeps the slot's buffers when they are large
/// enough, so refreshing a finding that stays active allocates nothing.
fn refresh(slot: &mut Finding, from: &Finding) {
    let Finding {
        rule,
        severity,
        gpu_index,
        pid,
        gpu_instance_id,
        title,
        evidence,
        remedy,
        explanation,
        since_ms,
        cause,
        also,
    } = from;
    slot.rule = *rule;
    slot.severity = *severity;
    slot.gpu_index = *gpu_index;
    slot.pid = *pid;
    slot.gpu_instance_id = *gpu_instance_id;
    slot.title.clone_from(title);
    slot.evidence.clone_from(evidence);
    slot.remedy.clone_from(remedy);
    slot.explanation.clone_from(explanation);
    slot.since_ms = *since_ms;
    slot.cause = *cause;
    slot.also.clone_from(also);
}

/// A finding that held and cleared: what, for how long, and how long ago.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleared {
    pub rule: crate::advice::Rule,
    pub severity: crate::advice::Severity,
    pub gpu_index: Option<u32>,
    pub pid: Option<u32>,
    /// From its start to the last sample it held at.
    pub held_ms: u64,
    /// From the last sample it held at to the newest sample.
    pub ago_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::Rule;
    use crate::source::Source;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    #[test]
    fn the_process_bound_covers_the_longest_rule_window() {
        let default = process_bound(&Thresholds::default());
        assert_eq!((default.span_ms, default.min_spacing_ms, default.points()), (300_000, 1000, 301));
        let long = process_bound(&Thresholds { idle_holder_window_s: 1800, ..Thresholds::default() });
        assert_eq!((long.span_ms, long.min_spacing_ms, long.points()), (1_800_000, 6000, 301));
        let short = process_bound(&Thresholds { idle_holder_window_s: 60, ..Thresholds::default() });
        assert_eq!(short.span_ms, ProcessBound::MIN_SPAN_MS, "never under five minutes");
    }

    #[test]
    fn refresh_copies_every_field() {
        let from = Finding {
            rule: Rule::IdleHolder,
            severity: crate::advice::Severity::Warning,
            gpu_index: Some(3),
            pid: Some(42),
            gpu_instance_id: None,
            title: "t".to_owned(),
            evidence: "e".to_owned(),
            remedy: "r".to_owned(),
            explanation: "x".to_owned(),
            since_ms: 7,
            cause: Some(Rule::InputBound),
            also: vec![crate::advice::AlsoSeen { rule: Rule::CpuBoundInput, pid: Some(42), evidence: "c".to_owned() }],
        };
        let mut slot = Finding {
            rule: Rule::SharedGpu,
            gpu_index: None,
            pid: None,
            gpu_instance_id: None,
            title: "a much longer old title".to_owned(),
            since_ms: 1,
            cause: None,
            also: Vec::new(),
            ..from.clone()
        };
        refresh(&mut slot, &from);
        assert_eq!(slot, from);
    }

    #[test]
    fn the_findings_seen_are_capped_dropping_the_oldest() {
        let source = SyntheticSource::new(SyntheticSpec::parse("idle").expect("spec"));
        let machine = source.machine();
        let snapshot = |n| Snapshot { machine: machine.clone(), tick: source.tick_at(n) };
        let mut pipeline = Pipeline::new(&snapshot(0), 600, Thresholds::default());
        let old = |i: u32| Finding {
            rule: Rule::IdleHolder,
            severity: crate::advice::Severity::Warning,
            gpu_index: Some(0),
            pid: Some(10_000 + i),
            gpu_instance_id: None,
            title: String::new(),
            evidence: String::new(),
            remedy: String::new(),
            explanation: String::new(),
            since_ms: u64::from(i),
            cause: None,
            also: Vec::new(),
        };
        pipeline.seen = (0..600).map(|i| (old(i), 0)).collect();
        pipeline.ingest_owned(snapshot(1));
        assert_eq!(pipeline.findings_seen().len(), Pipeline::MAX_SEEN);
        let pids: Vec<u32> = pipeline.findings_seen().iter().filter_map(|f| f.pid).collect();
        assert!(!pids.contains(&10_000) && pids.contains(&10_599), "the oldest went first");
    }

    #[test]
    fn the_findings_seen_are_those_active_along_the_way() {
        let source = SyntheticSource::new(SyntheticSpec::parse("mixed:8").expect("spec"));
        let machine = source.machine();
        let snapshot = |n| Snapshot { machine: machine.clone(), tick: source.tick_at(n) };
        let mut pipeline = Pipeline::new(&snapshot(0), 600, Thresholds::default());
        let mut keys = Vec::new();
        for n in 1..120 {
            pipeline.ingest_owned(snapshot(n));
            keys.extend(pipeline.findings().iter().map(Finding::key));
        }
        assert!(!pipeline.findings().is_empty(), "mixed:8 has findings after two minutes");
        keys.sort();
        keys.dedup();
        let mut seen: Vec<_> = pipeline.findings_seen().iter().map(Finding::key).collect();
        seen.sort();
        assert_eq!(seen, keys);
        for finding in pipeline.findings() {
            assert!(pipeline.findings_seen().contains(finding), "the newest version of an active finding is kept");
        }
    }
}
