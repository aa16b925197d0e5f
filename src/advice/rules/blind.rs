//! What the rules cannot judge, said rather than guessed: GPU processes gpusight cannot see (their host PIDs are
//! outside its PID namespace: a container without `--pid=host`), and on GPUs in MIG mode the rules that need a
//! reading a slice does not have (NVML utilization, PCIe, DRAM activity per slice), or every rule over the GPU's work
//! where the slices carry no SM activity. The rules in [`SLICE_RULES`] judge each slice by its own readings.
//!
//! [`judged`] drops the observations of the rules that would judge from what is not there; [`not_judged`] says so,
//! one visibility finding per GPU whose processes cannot be seen (mig-active says it for MIG).

use super::super::window::Ctx;
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, gpus_label};
use crate::host::OUTSIDE_NAMESPACE;

/// The rules that judge a GPU process from its host side (`/proc`: threads, reads, children, cgroup, job), or
/// call a GPU's waiting "cause unknown" because none of those held.
pub const PROCESS_RULES: [Rule; 14] = [
    Rule::InputBound,
    Rule::CpuBoundInput,
    Rule::LaunchBound,
    Rule::H2dCopyBound,
    Rule::CpuQuotaThrottled,
    Rule::RemoteDatasetStall,
    Rule::GpuUnderfed,
    Rule::NumaMisplaced,
    Rule::CommBound,
    Rule::MainThreadBound,
    Rule::CpusPinned,
    Rule::CompileWarmup,
    Rule::CpuContention,
    Rule::CpuOversubscribed,
];

/// The rules that judge how much a GPU works and that, on a GPU in MIG mode, judge each slice by its own readings
/// (GPM SM activity of its GPU instance, see `advice::place`): a 1g slice flat out is busy, whatever the card's 13 %.
/// Where the slices carry no SM activity (a driver without GPM per GPU instance) they are not judged.
pub const SLICE_RULES: [Rule; 10] = [
    Rule::InputBound,
    Rule::CpuBoundInput,
    Rule::MainThreadBound,
    Rule::CpuQuotaThrottled,
    Rule::RemoteDatasetStall,
    Rule::GpuUnderfed,
    Rule::CpusPinned,
    Rule::CompileWarmup,
    Rule::CpuContention,
    Rule::CpuOversubscribed,
];

/// Why a rule that needs NVML utilization cannot judge a slice.
const NO_SLICE_UTIL: &str = "NVML utilization has no per-slice reading: it is the card's, N/A under MIG";

/// Why a rule that needs PCIe traffic cannot judge a slice.
const NO_SLICE_PCIE: &str = "PCIe throughput has no per-slice reading: one link, shared by every slice";

/// Why the rules over a job's ranks cannot judge ranks on slices.
const RANKS_BY_UTIL: &str =
    "they compare ranks by NVML utilization, where NCCL's spinning kernels show, and a slice has none";

/// The rules over how much a GPU works that stay not judged on a GPU in MIG mode, each with the reading it needs
/// that a slice does not have.
pub const MIG_UNJUDGED: [(Rule, &str); 7] = [
    (Rule::UtilMisleading, NO_SLICE_UTIL),
    (Rule::LaunchBound, NO_SLICE_UTIL),
    (Rule::H2dCopyBound, NO_SLICE_PCIE),
    (Rule::CommBound, NO_SLICE_PCIE),
    (Rule::MemoryBound, "DRAM and tensor activity are not read per slice: gpusight reads SM activity per GPU instance"),
    (Rule::RankStraggler, RANKS_BY_UTIL),
    (Rule::CollectiveHang, RANKS_BY_UTIL),
];

/// The rules not judged on a MIG GPU whose slices carry no SM activity: every rule over its work.
pub fn mig_unread_rules() -> impl Iterator<Item = Rule> {
    SLICE_RULES.into_iter().chain(MIG_UNJUDGED.iter().map(|(r, _)| *r))
}

/// "util-misleading, launch-bound (needs NVML utilization, ...); h2d-copy-bound, comm-bound (needs PCIe ...); ...":
/// the rules not judged on MIG, grouped by the reason.
#[must_use]
pub fn mig_unjudged_said() -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (rule, why) in MIG_UNJUDGED {
        match groups.iter_mut().find(|(w, _)| *w == why) {
            Some((_, rules)) => rules.push(rule.name()),
            None => groups.push((why, vec![rule.name()])),
        }
    }
    let parts: Vec<String> = groups.iter().map(|(why, rules)| format!("{} ({why})", rules.join(", "))).collect();
    parts.join("; ")
}

/// Whether the host details of a process are out of reach: its PID is outside gpusight's PID namespace.
fn outside(ctx: &Ctx<'_>, pid: u32) -> bool {
    ctx.host_process(pid).is_some_and(|p| p.unreadable.as_deref() == Some(OUTSIDE_NAMESPACE))
}

/// The PIDs of a GPU's compute processes that cannot be seen, and whether that is all of them.
fn unseen(ctx: &Ctx<'_>, gpu_index: u32) -> (Vec<u32>, bool) {
    if !ctx.any_outside() {
        return (Vec::new(), false);
    }
    let pids = ctx.compute_on(gpu_index);
    let out: Vec<u32> = pids.iter().map(|&(_, pid)| pid).filter(|pid| outside(ctx, *pid)).collect();
    let all = !pids.is_empty() && out.len() == pids.len();
    (out, all)
}

/// Whether a rule's finding rests on readings that exist: not a process rule about a process that cannot be seen
/// (or about a GPU none of whose processes can be); on a GPU in MIG mode, only a rule judged per slice, about a slice
/// whose SM activity is read.
pub fn judged(ctx: &Ctx<'_>, finding: &Finding) -> bool {
    let Some(gpu) = finding.gpu_index else { return true };
    if ctx.mig(gpu) {
        if MIG_UNJUDGED.iter().any(|(r, _)| *r == finding.rule) {
            return false;
        }
        if SLICE_RULES.contains(&finding.rule) && (finding.gpu_instance_id.is_none() || !ctx.slices_read(gpu)) {
            return false;
        }
    }
    if !PROCESS_RULES.contains(&finding.rule) {
        return true;
    }
    match finding.pid {
        Some(pid) if outside(ctx, pid) => false,
        Some(_) => true,
        None => !unseen(ctx, gpu).1,
    }
}

/// visibility, per GPU: its compute processes live outside gpusight's PID namespace, so the process rules are
/// not judged there (rather than calling the GPU underfed for a cause they could not look for).
#[must_use]
pub fn not_judged(ctx: &Ctx<'_>) -> Vec<Observation> {
    let mut out = Vec::new();
    for gpu in &ctx.machine.gpus {
        let (pids, _) = unseen(ctx, gpu.index);
        if pids.is_empty() {
            continue;
        }
        let list: Vec<String> = pids.iter().take(8).map(u32::to_string).collect();
        let rules: Vec<&str> = PROCESS_RULES.iter().map(|r| r.name()).collect();
        let finding = Finding {
            title: format!("Cannot see the processes on {}: not judged", gpus_label(&[gpu.index])),
            evidence: format!(
                "PID {}{} (NVML's host PID) is {OUTSIDE_NAMESPACE}: gpusight runs in a container without the host's \
                 PID namespace; not judged for {}: {}",
                list.join(", "),
                if pids.len() > 8 { ", ..." } else { "" },
                if pids.len() == 1 { "it" } else { "them" },
                rules.join(", "),
            ),
            remedy: "Run gpusight on the host, or give its container the host's PID namespace (docker run --pid=host; \
                     Kubernetes hostPID: true) to judge these processes."
                .to_owned(),
            explanation: "NVML names GPU processes by their host PID; from inside a container's own PID namespace \
                          those PIDs do not exist in /proc, so their threads, reads, workers and cgroup cannot be \
                          read. GPU-side rules (utilization, memory, throttling, errors) still hold."
                .to_owned(),
            ..draft(Rule::Visibility, Severity::Info, Some(gpu.index), None, ctx.now_ms)
        };
        out.push(Observation::holds(finding));
    }
    out
}
