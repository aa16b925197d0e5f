//! The advice engine: pure rules over the history that say why a job is slow or a GPU is sick.
//!
//! Architecture invariant: nothing here does I/O or reads the clock; time comes from the samples.
//!
//! Each rule (in [`rules`]) looks at the history and returns [`Observation`]s: a drafted finding plus whether its
//! condition is strong enough to make the finding appear (`enter`) or to keep an active one (`stay`). The
//! [`Advisor`] keeps the active set across evaluations (hysteresis), then applies the diagnosis order (a lost
//! GPU gets nothing but its loss; an input-bound GPU is not also called cpu-bound) and sorts worst first.

use serde::{Deserialize, Serialize};

use crate::fast_map::FastMap;
use crate::history::History;
use crate::sample::UnixMs;

pub mod account;
pub mod group;
pub mod judging;
pub mod place;
pub mod rules;
pub mod thresholds;
pub mod window;

#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;

pub use thresholds::Thresholds;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    /// The lower-case name used in text and JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }
}

impl Severity {
    /// Every severity, least severe first.
    pub const ALL: [Self; 3] = [Self::Info, Self::Warning, Self::Critical];
}

/// A severity name that is not one of [`Severity::name`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown severity '{0}': expected info, warning or critical")]
pub struct UnknownSeverity(pub String);

impl std::str::FromStr for Severity {
    type Err = UnknownSeverity;

    /// Reads back [`Severity::name`] (as text, JSON and the exporter's `severity` label spell it).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|s| s.name() == text).ok_or_else(|| UnknownSeverity(text.to_owned()))
    }
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
    /// The umbrella: a GPU that waits, with the cause a specific rule found or "cause unknown".
    GpuUnderfed,
    LaunchBound,
    H2dCopyBound,
    CpuQuotaThrottled,
    RemoteDatasetStall,
    ClocksLimited,
    HbmHot,
    MemoryBound,
    /// A rank of a multi-GPU job that the others wait for.
    RankStraggler,
    /// Every rank of a job stuck in a collective.
    CollectiveHang,
    /// The GPU waits for the main thread's own work (an optimizer on the CPU, metrics), not for its input.
    MainThreadBound,
    /// The job's workers share fewer CPUs than they need (`taskset`, a Slurm or Kubernetes cpuset).
    CpusPinned,
    /// A young process compiles its model (`torch.compile`): the GPU waits while it warms up.
    CompileWarmup,
    /// Not a rule about the GPUs: a signal the engine needs could not be read (e.g. no Xid source).
    Visibility,
    /// A server (listening TCP sockets with connections) whose GPU idles between requests: not an idle holder.
    Serving,
    /// A rank whose GPU waits for the job's collectives over PCIe or the network (traffic both ways).
    CommBound,
    /// The GPU waits for CPUs that other users' processes hold.
    CpuContention,
    /// The GPU waits for CPUs the job's own threads oversubscribe (more runnable threads than CPUs).
    CpuOversubscribed,
    /// The GPU waits while the job writes checkpoints (or other files) synchronously.
    CheckpointWrite,
    /// A process starting up: the GPU waits while it loads its model and data.
    StartUp,
    /// A job that restarts again and again: the GPU idles through each start-up.
    RestartLoop,
}

impl Rule {
    /// The rule's name as the catalogue, the config and JSON spell it ("input-bound").
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::InputBound => "input-bound",
            Self::CpuBoundInput => "cpu-bound-input",
            Self::ThermalThrottle => "thermal-throttle",
            Self::PowerCapped => "power-capped",
            Self::HwSlowdown => "hw-slowdown",
            Self::PcieDowngraded => "pcie-downgraded",
            Self::NumaMisplaced => "numa-misplaced",
            Self::VramNearlyFull => "vram-nearly-full",
            Self::VramGrowing => "vram-growing",
            Self::IdleHolder => "idle-holder",
            Self::UtilMisleading => "util-misleading",
            Self::SharedGpu => "shared-gpu",
            Self::HostMemoryPressure => "host-memory-pressure",
            Self::CpuSteal => "cpu-steal",
            Self::GpuErrors => "gpu-errors",
            Self::DriverSanity => "driver-sanity",
            Self::PersistenceOff => "persistence-off",
            Self::MigActive => "mig-active",
            Self::GpuUnderfed => "gpu-underfed",
            Self::LaunchBound => "launch-bound",
            Self::H2dCopyBound => "h2d-copy-bound",
            Self::CpuQuotaThrottled => "cpu-quota-throttled",
            Self::RemoteDatasetStall => "remote-dataset-stall",
            Self::ClocksLimited => "clocks-limited",
            Self::HbmHot => "hbm-hot",
            Self::MemoryBound => "memory-bound",
            Self::RankStraggler => "rank-straggler",
            Self::CollectiveHang => "collective-hang",
            Self::MainThreadBound => "main-thread-bound",
            Self::CpusPinned => "cpus-pinned",
            Self::CompileWarmup => "compile-warmup",
            Self::Visibility => "visibility",
            Self::Serving => "serving",
            Self::CommBound => "comm-bound",
            Self::CpuContention => "cpu-contention",
            Self::CpuOversubscribed => "cpu-oversubscribed",
            Self::CheckpointWrite => "checkpoint-write",
            Self::StartUp => "start-up",
            Self::RestartLoop => "restart-loop",
        }
    }
}

impl Rule {
    /// Every variant, in declaration order (a test checks it against the enum's own list of variants).
    pub const ALL: [Self; 39] = [
        Self::InputBound,
        Self::CpuBoundInput,
        Self::ThermalThrottle,
        Self::PowerCapped,
        Self::HwSlowdown,
        Self::PcieDowngraded,
        Self::NumaMisplaced,
        Self::VramNearlyFull,
        Self::VramGrowing,
        Self::IdleHolder,
        Self::UtilMisleading,
        Self::SharedGpu,
        Self::HostMemoryPressure,
        Self::CpuSteal,
        Self::GpuErrors,
        Self::DriverSanity,
        Self::PersistenceOff,
        Self::MigActive,
        Self::GpuUnderfed,
        Self::LaunchBound,
        Self::H2dCopyBound,
        Self::CpuQuotaThrottled,
        Self::RemoteDatasetStall,
        Self::ClocksLimited,
        Self::HbmHot,
        Self::MemoryBound,
        Self::RankStraggler,
        Self::CollectiveHang,
        Self::MainThreadBound,
        Self::CpusPinned,
        Self::CompileWarmup,
        Self::Visibility,
        Self::Serving,
        Self::CommBound,
        Self::CpuContention,
        Self::CpuOversubscribed,
        Self::CheckpointWrite,
        Self::StartUp,
        Self::RestartLoop,
    ];
}

/// The steps of the practitioners' diagnosis order (field guides): each rule belongs to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// Is the GPU visible and healthy, and who else is on it?
    Health,
    /// Is it throttled?
    Throttling,
    /// Is the job compute-bound or input-bound?
    Throughput,
    /// Is the data path and the host under it right?
    DataPath,
    /// Is something incompatible (driver against the GPUs)?
    Compatibility,
}

impl Step {
    /// The step's heading for people.
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Self::Health => "1. Health and visibility",
            Self::Throttling => "2. Throttling",
            Self::Throughput => "3. Compute- or input-bound",
            Self::DataPath => "4. Data path and host",
            Self::Compatibility => "5. Compatibility",
        }
    }
}

impl Rule {
    /// The diagnosis step this rule answers.
    #[must_use]
    pub fn step(self) -> Step {
        match self {
            Self::Visibility
            | Self::GpuErrors
            | Self::PersistenceOff
            | Self::MigActive
            | Self::SharedGpu
            | Self::IdleHolder
            | Self::VramNearlyFull
            | Self::VramGrowing
            | Self::CollectiveHang
            | Self::Serving
            | Self::RestartLoop
            | Self::StartUp => Step::Health,
            Self::HwSlowdown | Self::ThermalThrottle | Self::PowerCapped | Self::ClocksLimited | Self::HbmHot => {
                Step::Throttling
            }
            Self::InputBound
            | Self::CpuBoundInput
            | Self::UtilMisleading
            | Self::GpuUnderfed
            | Self::LaunchBound
            | Self::H2dCopyBound
            | Self::CpuQuotaThrottled
            | Self::RemoteDatasetStall
            | Self::MemoryBound
            | Self::RankStraggler
            | Self::MainThreadBound
            | Self::CpusPinned
            | Self::CompileWarmup
            | Self::CommBound
            | Self::CpuContention
            | Self::CpuOversubscribed
            | Self::CheckpointWrite => Step::Throughput,
            Self::PcieDowngraded | Self::NumaMisplaced | Self::HostMemoryPressure | Self::CpuSteal => Step::DataPath,
            Self::DriverSanity => Step::Compatibility,
        }
    }
}

/// Diagnosis order: by step, then worst first within a step, then GPU (machine-wide first), rule, PID.
pub fn sort_by_diagnosis_order(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        a.rule
            .step()
            .cmp(&b.rule.step())
            .then(b.severity.cmp(&a.severity))
            .then(a.gpu_index.is_some().cmp(&b.gpu_index.is_some()))
            .then(a.gpu_index.cmp(&b.gpu_index))
            .then(a.rule.cmp(&b.rule))
            .then(a.pid.cmp(&b.pid))
    });
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
    /// On a GPU in MIG mode, the slice it is about (its GPU instance id): the slice's own readings judged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
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
    /// For a finding that defers to another rule on its GPU (gpu-underfed naming its cause, a weaker cause beside
    /// the strongest): that rule. Set by the diagnosis order (`name_the_cause`); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Rule>,
    /// What else was seen on this finding's GPU and process, folded into this verdict ([`fold_into_verdicts`]):
    /// the findings that defer to it. Empty in the engine's own view ([`Advisor::active`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<AlsoSeen>,
}

/// A finding folded into another one's verdict: its rule, process and evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlsoSeen {
    pub rule: Rule,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub evidence: String,
}

impl AlsoSeen {
    /// "launch-bound (PID 2001): gaps between kernels ...".
    #[must_use]
    pub fn line(&self) -> String {
        let pid = self.pid.map_or_else(String::new, |p| format!(" (PID {p})"));
        format!("{}{pid}: {}", self.rule.name(), self.evidence)
    }
}

impl Finding {
    /// What identifies a finding across evaluations: the same rule about the same GPU and process.
    #[must_use]
    pub fn key(&self) -> (Rule, Option<u32>, Option<u32>) {
        (self.rule, self.gpu_index, self.pid)
    }

    /// Where it is: its GPU and, on a MIG GPU, its slice. Verdicts are one per place.
    #[must_use]
    pub fn place(&self) -> (Option<u32>, Option<u32>) {
        (self.gpu_index, self.gpu_instance_id)
    }

    /// Whether this verdict is, or has folded in, the finding with `key`.
    #[must_use]
    pub fn covers(&self, key: (Rule, Option<u32>, Option<u32>)) -> bool {
        self.key() == key || (key.1 == self.gpu_index && self.also.iter().any(|a| (a.rule, a.pid) == (key.0, key.2)))
    }

    /// The evidence with what else was seen folded in, on one line: "EVIDENCE | also seen: RULE: EVIDENCE | ...".
    #[must_use]
    pub fn evidence_with_also(&self) -> String {
        let mut text = self.evidence.clone();
        for (n, also) in self.also.iter().enumerate() {
            text.push_str(if n == 0 { " | also seen: " } else { " | " });
            text.push_str(&also.line());
        }
        text
    }
}

/// What a rule saw for one (GPU, process): a drafted finding and how strongly its condition holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub finding: Finding,
    /// The condition is strong enough, over a covered window, for the finding to appear.
    pub enter: bool,
    /// The condition is still strong enough to keep the finding once it is active (weaker than `enter`).
    pub stay: bool,
}

impl Observation {
    /// An observation whose condition has no hysteresis band: it holds or it does not.
    #[must_use]
    pub fn holds(finding: Finding) -> Self {
        Self { finding, enter: true, stay: true }
    }

    /// An observation over a share of samples: enters at `enter_share` when the window is covered, stays above
    /// `exit_share`.
    #[must_use]
    pub fn by_share(finding: Finding, share: f64, covered: bool, t: &Thresholds) -> Self {
        Self { finding, enter: covered && share >= t.enter_share, stay: share >= t.exit_share }
    }
}

/// Applies hysteresis across evaluations: a finding appears after its condition held for the rule's window and
/// clears only after it stopped holding for a while, so the advice pane does not flicker.
#[derive(Debug, Clone, Default)]
pub struct Advisor {
    active: Vec<Finding>,
    /// `active` with one verdict per GPU ([`fold_into_verdicts`]).
    verdicts: Vec<Finding>,
    /// The book the accounts of each job's GPU time are read from, and the accounts after the last update.
    book: account::AccountBook,
    accounts: Vec<account::Account>,
    /// The rules' observations the accounts replaced at the last update (place and rule): GPU-side evidence the next
    /// split reads (launch-bound, h2d-copy-bound).
    hints: Vec<(account::evidence::PlaceKey, Rule)>,
}

impl Advisor {
    /// Re-evaluates the rules over `history` and returns the findings active now, worst first.
    pub fn update(&mut self, history: &History, thresholds: &Thresholds) -> &[Finding] {
        self.book.push(history, thresholds, &self.verdicts, &self.hints);
        let index = account::evidence::TickIndex::new(history.latest());
        let now_ms = history.now_ms().unwrap_or(0);
        let accounts = self.book.accounts(now_ms, thresholds.account.window_s, &self.verdicts, &index);
        let phases = self.book.accounts(now_ms, thresholds.account.phase_window_s, &self.verdicts, &index);
        let reading = account::findings::Reading {
            accounts: &accounts,
            phases: &phases,
            book: &self.book,
            index: &index,
            machine: history.machine(),
            now_ms,
        };
        let (observations, replaced) =
            account::findings::observe(&reading, thresholds, rules::observe_all(history, thresholds));
        self.hints = replaced;
        let mut next: Vec<Finding> = Vec::with_capacity(observations.len());
        // The active findings by key (the first of a key, as a scan would find it): thousands of observations at
        // scale each look up their predecessor.
        let mut previous_since: FastMap<(Rule, Option<u32>, Option<u32>), UnixMs> =
            crate::fast_map::map_with_capacity(self.active.len());
        for f in &self.active {
            previous_since.entry(f.key()).or_insert(f.since_ms);
        }
        for obs in observations {
            let key = obs.finding.key();
            match previous_since.get(&key) {
                Some(&old_since) if obs.stay => {
                    let mut finding = obs.finding;
                    finding.since_ms = finding.since_ms.min(old_since);
                    next.push(finding);
                }
                None if obs.enter => next.push(obs.finding),
                _ => {}
            }
        }
        apply_diagnosis_order(&mut next, history);
        // An umbrella that named a cause ends with it: it does not turn into "cause unknown" the moment its cause
        // clears (their windows differ); it has to enter again, on its own, to say that.
        let had_cause =
            |f: &Finding| self.active.iter().any(|old| old.key() == f.key() && old.severity == Severity::Info);
        next.retain(|f| !(f.rule == Rule::GpuUnderfed && f.severity == Severity::Warning && had_cause(f)));
        sort_worst_first(&mut next);
        self.verdicts = fold_into_verdicts(next.clone());
        self.active = next;
        // The accounts again, with this evaluation's verdicts for the waiting no thread evidence explained.
        self.accounts = self.book.accounts(now_ms, thresholds.account.window_s, &self.verdicts, &index);
        self.book.forget_ended();
        &self.active
    }

    /// The accounts of each job's GPU time over `account_window_s`, after the last update.
    #[must_use]
    pub fn accounts(&self) -> &[account::Account] {
        &self.accounts
    }

    /// The book the accounts are read from: the totals since the start, and accounts over other windows.
    #[must_use]
    pub fn book(&self) -> &account::AccountBook {
        &self.book
    }

    /// The findings active after the last update, each rule's own (the engine's view: co-findings that defer to a
    /// cause are there, at info, with [`Finding::cause`] set).
    #[must_use]
    pub fn active(&self) -> &[Finding] {
        &self.active
    }

    /// The findings active after the last update as people see them: one verdict per GPU, what else was seen on
    /// it folded into [`Finding::also`]; worst first.
    #[must_use]
    pub fn verdicts(&self) -> &[Finding] {
        &self.verdicts
    }
}

/// Evaluates every rule over `history` once, with no memory of earlier evaluations.
#[must_use]
pub fn evaluate(history: &History, thresholds: &Thresholds) -> Vec<Finding> {
    Advisor::default().update(history, thresholds).to_vec()
}

/// Removes findings that a more basic diagnosis explains: a lost GPU gets only gpu-errors; an input-bound GPU is
/// not also cpu-bound. Then makes one verdict per waiting GPU (see [`name_the_cause`]).
pub(crate) fn apply_diagnosis_order(findings: &mut Vec<Finding>, history: &History) {
    let lost: Vec<u32> =
        history.gpus.iter().filter(|g| g.lost.last().copied().unwrap_or(false)).map(|g| g.index).collect();
    let input_bound: Vec<(Option<u32>, Option<u32>)> =
        findings.iter().filter(|f| f.rule == Rule::InputBound).map(Finding::place).collect();
    findings.retain(|f| match f.gpu_index {
        Some(gpu) if lost.contains(&gpu) => f.rule == Rule::GpuErrors,
        Some(_) if f.rule == Rule::CpuBoundInput => !input_bound.contains(&f.place()),
        _ => true,
    });
    let seeds = job_causes(findings, history);
    name_the_cause(findings, &seeds, history);
}

/// The causes a job-wide finding gives the other ranks' GPUs: rank-straggler is why the waiting ranks' GPUs do
/// little (every GPU of the job but the straggler's), collective-hang why every rank's GPU does nothing. Each entry
/// is (GPU, rule, PID of the finding).
fn job_causes(findings: &[Finding], history: &History) -> Vec<(u32, Rule, Option<u32>)> {
    let latest = history.latest();
    let key_of = |pid: u32| latest.processes.iter().find(|p| p.pid == pid).and_then(|p| p.job.as_ref()).map(|j| &j.key);
    let mut seeds: Vec<(u32, Rule, Option<u32>)> = Vec::new();
    for f in findings.iter().filter(|f| matches!(f.rule, Rule::RankStraggler | Rule::CollectiveHang)) {
        let Some(key) = f.pid.and_then(key_of) else { continue };
        for gp in &latest.gpu_processes {
            let same_job = gp.pid.and_then(key_of) == Some(key);
            let own_gpu = f.rule == Rule::RankStraggler && Some(gp.gpu_index) == f.gpu_index;
            if same_job && !own_gpu && !seeds.iter().any(|(g, _, _)| *g == gp.gpu_index) {
                seeds.push((gp.gpu_index, f.rule, f.pid));
            }
        }
    }
    seeds
}

/// The causes of a waiting GPU, strongest first: a model that compiles (`torch.compile` warming up) explains
/// everything else a young process shows; then the most specific root cause wins (a server waits for requests; a
/// CPU quota or a narrow CPU mask is why the preprocessing is short of CPU; a remote dataset is why reads are slow;
/// a rank's collectives over PCIe or the network are why its copies run both ways; a pegged main thread is what
/// h2d-copy-bound and launch-bound see too, with GPU-side evidence that says more, and main-thread-bound says it
/// when neither holds). Last, util-misleading: with no host-side cause, kernels that run nearly all the time on a
/// sliver of the SMs are why the SMs idle (a step of tiny kernels, even captured in a CUDA graph); the GPU is not
/// waiting for anything, so "cause unknown" would mislead.
pub const CAUSES: [Rule; 16] = [
    Rule::CompileWarmup,
    Rule::Serving,
    Rule::StartUp,
    Rule::CpuQuotaThrottled,
    Rule::CpuContention,
    Rule::CpuOversubscribed,
    Rule::CpusPinned,
    Rule::CheckpointWrite,
    Rule::RemoteDatasetStall,
    Rule::InputBound,
    Rule::CommBound,
    Rule::H2dCopyBound,
    Rule::LaunchBound,
    Rule::MainThreadBound,
    Rule::CpuBoundInput,
    Rule::UtilMisleading,
];

/// A place findings are about: a GPU index, and on a MIG GPU a slice's GPU instance id.
type PlaceKey = (u32, Option<u32>);

/// One verdict per waiting GPU. The strongest cause on a GPU keeps its warning and its own rule name; any weaker
/// cause on the same GPU becomes info with [`Finding::cause`] naming the strongest (util-misleading too: it is the
/// weakest cause); and the umbrella gpu-underfed becomes info naming the cause. With no cause, gpu-underfed stays
/// the warning, says "cause unknown" and lists the causes that did not hold. [`fold_into_verdicts`] then folds the
/// infos into their verdict.
pub(crate) fn name_the_cause(findings: &mut [Finding], job_causes: &[(u32, Rule, Option<u32>)], history: &History) {
    let slice = |gpu: u32, gi: u32| history.slices.iter().find(|s| s.gpu_index == gpu && s.gpu_instance_id == gi);
    // A job-wide cause (see [`job_causes`]) comes first: it is not in `CAUSES`, so no per-GPU cause displaces it.
    // Per place: a GPU, or a slice of a MIG GPU (each slice's job has its own verdict).
    let mut strongest: Vec<(PlaceKey, Rule, Option<u32>)> =
        job_causes.iter().map(|&(gpu, rule, pid)| ((gpu, None), rule, pid)).collect();
    for f in findings.iter() {
        // A finding that already defers to another (an account's weaker cause) is no candidate.
        if f.cause.is_some() {
            continue;
        }
        let (Some(gpu), Some(rank)) = (f.gpu_index, CAUSES.iter().position(|c| *c == f.rule)) else { continue };
        let place = (gpu, f.gpu_instance_id);
        match strongest.iter_mut().find(|(p, _, _)| *p == place) {
            Some(entry) if CAUSES.iter().position(|c| *c == entry.1).is_some_and(|r| rank < r) => {
                *entry = (place, f.rule, f.pid);
            }
            Some(_) => {}
            None => strongest.push((place, f.rule, f.pid)),
        }
    }
    // A straggler that knows its own cause (busy on the CPU, compute, throttled) is the cause on its own GPU where
    // no rule names another.
    for f in
        findings.iter().filter(|f| f.rule == Rule::RankStraggler && !f.evidence.contains(rules::jobs::CAUSE_UNKNOWN))
    {
        let place = f.gpu_index.map(|gpu| (gpu, f.gpu_instance_id));
        if let Some(place) = place.filter(|place| !strongest.iter().any(|(p, _, _)| p == place)) {
            strongest.push((place, f.rule, f.pid));
        }
    }
    for f in findings.iter_mut() {
        let Some(gpu) = f.gpu_index else { continue };
        let found = strongest.iter().find(|(p, _, _)| *p == (gpu, f.gpu_instance_id)).copied();
        if f.rule == Rule::RankStraggler {
            name_the_stragglers_cause(f, found.map(|((gpu, _), rule, pid)| (gpu, rule, pid)));
            continue;
        }
        let Some((_, cause, cause_pid)) = found else {
            if f.rule == Rule::GpuUnderfed {
                let names: Vec<&str> = CAUSES.iter().map(|c| c.name()).collect();
                f.evidence = format!("{}; none of {} held", f.evidence, names.join(", "));
            }
            continue;
        };
        if f.rule == Rule::GpuUnderfed {
            f.severity = Severity::Info;
            f.cause = Some(cause);
            let pid = cause_pid.map_or_else(String::new, |p| format!(" in PID {p}"));
            let at = place::label_of(gpu, f.gpu_instance_id.and_then(|gi| slice(gpu, gi)));
            f.title = if cause == Rule::UtilMisleading {
                format!("{at} does little work: its kernels leave the SMs idle (see util-misleading)")
            } else {
                format!("{at} is underfed: the cause is {}{pid} (see that finding)", cause.name())
            };
            f.remedy = format!("Follow the remedy of {}.", cause.name());
        } else if f.rule != cause && CAUSES.contains(&f.rule) {
            f.severity = Severity::Info;
            f.cause = Some(cause);
        }
    }
}

/// One verdict per GPU: each finding that defers to a cause on its GPU ([`Finding::cause`]) is folded into the
/// finding that speaks for that GPU, as an [`AlsoSeen`]: the cause's own finding there, or else (a job-wide cause
/// found on another GPU) the gpu-underfed umbrella that names it. A finding about another process than its verdict
/// stays separate and says what it is secondary to. Returns the findings worst first.
#[must_use]
pub fn fold_into_verdicts(findings: Vec<Finding>) -> Vec<Finding> {
    let (deferring, mut out): (Vec<Finding>, Vec<Finding>) =
        findings.into_iter().partition(|f| f.cause.is_some() && f.gpu_index.is_some());
    // The umbrellas first: a weaker cause may fold into one that stays.
    let (umbrellas, weaker): (Vec<Finding>, Vec<Finding>) =
        deferring.into_iter().partition(|f| f.rule == Rule::GpuUnderfed);
    for mut f in umbrellas.into_iter().chain(weaker) {
        let same_process = |v: &Finding| v.pid.is_none() || f.pid.is_none() || v.pid == f.pid;
        let target = out
            .iter()
            .position(|v| v.place() == f.place() && Some(v.rule) == f.cause && same_process(v))
            .or_else(|| {
                out.iter().position(|v| {
                    v.place() == f.place() && v.rule == Rule::GpuUnderfed && v.cause == f.cause && same_process(v)
                })
            });
        if let Some(i) = target {
            let also = AlsoSeen { rule: f.rule, pid: f.pid, evidence: std::mem::take(&mut f.evidence) };
            out[i].also.push(also);
            out[i].also.extend(f.also);
        } else {
            if f.rule != Rule::GpuUnderfed {
                let cause = f.cause.map_or("", Rule::name);
                f.evidence = format!("secondary to {cause} on this GPU; {}", f.evidence);
            }
            out.push(f);
        }
    }
    sort_worst_first(&mut out);
    out
}

/// A straggler's own cause, where a rule on its GPU knows it, replaces "unknown" in its evidence.
fn name_the_stragglers_cause(f: &mut Finding, cause: Option<(u32, Rule, Option<u32>)>) {
    let Some((_, cause, pid)) = cause.filter(|(_, rule, _)| CAUSES.contains(rule)) else { return };
    let pid = pid.map_or_else(String::new, |p| format!(" in PID {p}"));
    let named = format!("its own cause: {}{pid} (see that finding)", cause.name());
    f.evidence = f.evidence.replace(rules::jobs::CAUSE_UNKNOWN, &named);
    f.remedy = format!("{} Here: follow the remedy of {}.", f.remedy, cause.name());
}

/// Worst first: severity, then GPU (machine-wide findings first), then rule, then PID.
pub(crate) fn sort_worst_first(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.gpu_index.is_some().cmp(&b.gpu_index.is_some()))
            .then(a.gpu_index.cmp(&b.gpu_index))
            .then(a.rule.cmp(&b.rule))
            .then(a.pid.cmp(&b.pid))
    });
}
