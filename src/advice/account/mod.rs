//! The account of where each job's GPU time goes: per job and GPU (on a MIG GPU, per slice), the window's time split
//! into busy and the causes of the rest, which add up to 100 %. It is built from evidence, not matched as patterns:
//! the GPU's readings say how much of each span it waited ([`attribute::GpuTime`]), and the job's threads over the
//! same span say what for ([`attribute::attribute`]). Where the threads were not read (a recording made before they
//! were, a process whose threads are hidden), the account says so and gives the waiting time to the cause the rules
//! name from the per-process readings, or to *not determined*.
//!
//! The [`book::AccountBook`] keeps the attributed spans of every place (one entry a gather, or a second), the totals
//! since the start (the exporter's counters), and what it needs between ticks; [`Account`] is one job and place over
//! a window, as the advice pane, `doctor`, `report`, JSON and the exporter show it.
//!
//! Architecture invariant: as the rest of `advice/`, nothing here does I/O or reads the clock.

use serde::{Deserialize, Serialize};

use super::Rule;

pub mod attribute;
pub mod book;
pub mod evidence;
pub mod findings;
pub mod lineage;
pub mod remedy;
pub mod text;

pub use book::AccountBook;

/// Where a share of a GPU's time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// The GPU's SMs worked.
    Busy,
    /// Waiting for the input pipeline whose workers read local storage (or the step's thread reading it).
    InputBound,
    /// Waiting for input read over the network or a network file system.
    RemoteDatasetStall,
    /// Waiting for the input pipeline whose workers compute on a CPU (decode, augment), or for the step's thread
    /// preparing its data itself.
    CpuBoundInput,
    /// Waiting for a CPU that other users' processes hold.
    CpuContention,
    /// Waiting for a CPU: the job runs more threads than it has CPUs.
    CpuOversubscribed,
    /// Waiting for a CPU: the cgroup's CPU quota throttles the job.
    CpuQuotaThrottled,
    /// Waiting for a CPU: the job is pinned to fewer CPUs than it needs while others idle.
    CpusPinned,
    /// CPU work in the step's own thread.
    MainThreadBound,
    /// The step's thread launching many small kernels.
    LaunchBound,
    /// Copies to the GPU (pageable memory, or the link saturated).
    H2dCopyBound,
    /// Communication with the other ranks (network, PCIe, NVLink).
    CommBound,
    /// Waiting for a slower rank of the job.
    RankStraggler,
    /// Every rank spinning in a collective with no data moving: stuck, or about to be (collective-hang judges it).
    CollectiveHang,
    /// Writing checkpoints (or logs) synchronously.
    CheckpointWrite,
    /// The host short of memory: reclaim, swap-in.
    HostMemoryPressure,
    /// A process starting up: loading its model and data before the GPU works.
    StartUp,
    /// The job restarting: the GPU idle between one process's end and the next one's first work.
    RestartLoop,
    /// A model compiling (`torch.compile`) before the GPU works.
    CompileWarmup,
    /// A server waiting for its next request.
    Serving,
    /// Kernels that run nearly all the time on a sliver of the SMs: the GPU only looks busy.
    UtilMisleading,
    /// The job does nothing: its threads sleep, with no CPU and no I/O (idle-holder judges it).
    Idle,
    /// The evidence does not point at a cause.
    NotDetermined,
}

impl Cause {
    /// Every cause, busy first, not determined last (the order of bars and lists).
    pub const ALL: [Self; 23] = [
        Self::Busy,
        Self::InputBound,
        Self::RemoteDatasetStall,
        Self::CpuBoundInput,
        Self::CpuContention,
        Self::CpuOversubscribed,
        Self::CpuQuotaThrottled,
        Self::CpusPinned,
        Self::MainThreadBound,
        Self::LaunchBound,
        Self::H2dCopyBound,
        Self::CommBound,
        Self::RankStraggler,
        Self::CollectiveHang,
        Self::CheckpointWrite,
        Self::HostMemoryPressure,
        Self::StartUp,
        Self::RestartLoop,
        Self::CompileWarmup,
        Self::Serving,
        Self::UtilMisleading,
        Self::Idle,
        Self::NotDetermined,
    ];

    /// The name JSON, the exporter's `cause` label and the rules use: the rule's name where the cause is a rule's.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::NotDetermined => "not-determined",
            other => other.rule().map_or("busy", Rule::name),
        }
    }

    /// A few words for people, as the account's lines show it.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::InputBound => "input: reading storage",
            Self::RemoteDatasetStall => "input: remote storage or network",
            Self::CpuBoundInput => "input: preparing on CPUs",
            Self::CpuContention => "waiting for CPUs others hold",
            Self::CpuOversubscribed => "waiting for CPUs: too many threads",
            Self::CpuQuotaThrottled => "waiting for CPUs: CPU quota",
            Self::CpusPinned => "waiting for CPUs: pinned",
            Self::MainThreadBound => "CPU work in the step",
            Self::LaunchBound => "launching small kernels",
            Self::H2dCopyBound => "copies to the GPU",
            Self::CommBound => "communication",
            Self::RankStraggler => "waiting for a slower rank",
            Self::CollectiveHang => "stuck in a collective",
            Self::CheckpointWrite => "writing checkpoints",
            Self::HostMemoryPressure => "host memory pressure",
            Self::StartUp => "start-up",
            Self::RestartLoop => "restarts",
            Self::CompileWarmup => "compiling the model",
            Self::Serving => "waiting for requests",
            Self::UtilMisleading => "kernels leave the SMs idle",
            Self::Idle => "the job does nothing",
            Self::NotDetermined => "not determined",
        }
    }

    /// What the GPU waits for, as a finding's title says it: "GPU 0 waits for {this}".
    #[must_use]
    pub fn waited_for(self) -> &'static str {
        match self {
            Self::InputBound => "its input pipeline reading storage",
            Self::RemoteDatasetStall => "its input over the network or a network file system",
            Self::CpuBoundInput => "its input pipeline preparing data on CPUs",
            Self::CpuContention => "CPUs other processes hold",
            Self::CpuOversubscribed => "CPUs its own threads oversubscribe",
            Self::CpuQuotaThrottled => "CPUs its cgroup's quota throttles",
            Self::CpusPinned => "the few CPUs it is pinned to",
            Self::MainThreadBound => "CPU work in its step's own thread",
            Self::LaunchBound => "kernel launches",
            Self::H2dCopyBound => "copies to the GPU",
            Self::CommBound => "the job's communication",
            Self::RankStraggler => "a slower rank",
            Self::CollectiveHang => "a collective that does not progress",
            Self::CheckpointWrite => "checkpoint writes",
            Self::HostMemoryPressure => "host memory (reclaim, swap)",
            Self::StartUp => "its job to start up",
            Self::RestartLoop => "its job to restart",
            Self::CompileWarmup => "its model to compile",
            Self::Serving => "requests",
            Self::UtilMisleading => "nothing: its kernels leave the SMs idle",
            Self::Idle => "its job, which does nothing",
            Self::Busy | Self::NotDetermined => "something the threads do not show",
        }
    }

    /// The rule whose finding speaks for this cause (`None` for busy; gpu-underfed for not determined).
    #[must_use]
    pub fn rule(self) -> Option<Rule> {
        let rule = match self {
            Self::Busy => return None,
            Self::InputBound => Rule::InputBound,
            Self::RemoteDatasetStall => Rule::RemoteDatasetStall,
            Self::CpuBoundInput => Rule::CpuBoundInput,
            Self::CpuContention => Rule::CpuContention,
            Self::CpuOversubscribed => Rule::CpuOversubscribed,
            Self::CpuQuotaThrottled => Rule::CpuQuotaThrottled,
            Self::CpusPinned => Rule::CpusPinned,
            Self::MainThreadBound => Rule::MainThreadBound,
            Self::LaunchBound => Rule::LaunchBound,
            Self::H2dCopyBound => Rule::H2dCopyBound,
            Self::CommBound => Rule::CommBound,
            Self::RankStraggler => Rule::RankStraggler,
            Self::CollectiveHang => Rule::CollectiveHang,
            Self::CheckpointWrite => Rule::CheckpointWrite,
            Self::HostMemoryPressure => Rule::HostMemoryPressure,
            Self::StartUp => Rule::StartUp,
            Self::RestartLoop => Rule::RestartLoop,
            Self::CompileWarmup => Rule::CompileWarmup,
            Self::Serving => Rule::Serving,
            Self::UtilMisleading => Rule::UtilMisleading,
            Self::Idle => Rule::IdleHolder,
            Self::NotDetermined => Rule::GpuUnderfed,
        };
        Some(rule)
    }

    /// The cause a rule's verdict names (the account of a place without thread evidence gives its waiting time to
    /// it); `None` for rules that are not about why a GPU waits.
    #[must_use]
    pub fn of_rule(rule: Rule) -> Option<Self> {
        Self::ALL.into_iter().find(|c| *c != Self::NotDetermined && c.rule() == Some(rule))
    }

    /// Whether the cause is how a healthy job spends its time, never a warning: busy, a server between requests.
    /// Start-up and compiling are info: a job's first minutes.
    #[must_use]
    pub fn is_healthy(self) -> bool {
        matches!(self, Self::Busy | Self::Serving)
    }

    /// Whether a large share of this cause is at most info: a phase every job goes through once.
    #[must_use]
    pub fn is_phase(self) -> bool {
        matches!(self, Self::StartUp | Self::CompileWarmup)
    }
}

/// What an account was built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The job's threads: the time on a CPU, waiting for one, and what they slept in.
    Threads,
    /// The per-process readings alone (threads not read): the waiting time goes to the cause the rules name.
    Processes,
}

/// One cause's part of an account.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CauseShare {
    pub cause: Cause,
    pub seconds: f64,
    /// Of the account's seconds, 0–1; the shares of an account add up to 1.
    pub share: f64,
    /// The energy the GPU drew over this part, joules: the busy part at the power it drew while busy, each waiting
    /// cause at the power it drew while waiting (what the waiting cost). `None` without power readings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
}

/// Where one job's time on one GPU (or MIG slice) went over a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    pub gpu_index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    /// The job as the jobs view knows it (`torch:ADDR:PORT`, `slurm:ID`, `pid:PID`, ...).
    pub job: String,
    /// The job's GPU process on this GPU at the end of the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its command, for people.
    pub command: String,
    /// The window, and the seconds of it the account covers (samples with GPU readings while the job held the GPU).
    pub window_s: f64,
    pub seconds: f64,
    pub basis: Basis,
    /// Busy first, then the causes largest first; shares add up to 1.
    pub causes: Vec<CauseShare>,
    /// The GPU's energy over the account, joules (NVML's energy counter where it moved, else power over time), and
    /// whether the job had the GPU alone (else the energy is the GPU's, shared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    pub alone: bool,
    /// What the account could not see, for people ("thread times not recorded (a recording made before they were
    /// read)", "the threads of PID 2001 are hidden").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<String>,
}

impl Account {
    /// The share of `cause`, 0 when absent.
    #[must_use]
    pub fn share(&self, cause: Cause) -> f64 {
        self.causes.iter().find(|c| c.cause == cause).map_or(0.0, |c| c.share)
    }

    /// The largest cause that is not busy, with its share.
    #[must_use]
    pub fn top_waiting(&self) -> Option<&CauseShare> {
        self.causes.iter().filter(|c| c.cause != Cause::Busy).max_by(|a, b| a.share.total_cmp(&b.share))
    }

    /// The energy spent while the GPU waited (every cause but busy), joules.
    #[must_use]
    pub fn waiting_energy_j(&self) -> Option<f64> {
        let parts: Vec<f64> =
            self.causes.iter().filter(|c| c.cause != Cause::Busy).filter_map(|c| c.energy_j).collect();
        (!parts.is_empty()).then(|| parts.iter().sum())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod cause_tests {
    use super::*;

    #[test]
    fn every_cause_has_a_rule_but_busy_and_names_are_unique() {
        let mut names: Vec<&str> = Cause::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Cause::ALL.len());
        for cause in Cause::ALL {
            assert_eq!(cause.rule().is_none(), cause == Cause::Busy, "{cause:?}");
            if cause != Cause::Busy && cause != Cause::NotDetermined {
                assert_eq!(Cause::of_rule(cause.rule().expect("a rule")), Some(cause));
                assert_eq!(cause.name(), cause.rule().expect("a rule").name());
            }
        }
        assert_eq!(Cause::of_rule(Rule::GpuErrors), None);
        assert_eq!(Cause::NotDetermined.name(), "not-determined");
    }
}
