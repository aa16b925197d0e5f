//! What the rules cannot judge, said rather than guessed: GPU processes gpusight cannot see (their host PIDs are
//! outside its PID namespace: a container without `--pid=host`), and GPUs in MIG mode, whose whole-GPU
//! utilization and SM activity do not describe what one slice does.
//!
//! [`judged`] drops the observations of the rules that would judge from what is not there; [`not_judged`] says so,
//! one visibility finding per GPU whose processes cannot be seen (mig-active says it for MIG).

use super::super::window::Ctx;
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, gpus_label};
use crate::host::OUTSIDE_NAMESPACE;

/// The rules that judge a GPU process from its host side (`/proc`: threads, reads, children, cgroup, job), or
/// call a GPU's waiting "cause unknown" because none of those held.
pub const PROCESS_RULES: [Rule; 12] = [
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
];

/// The rules that judge how much a GPU works from its whole-GPU utilization or GPM SM activity: on a MIG GPU
/// these describe the card, not the slice a job runs in (a 1g slice flat out is a seventh of the SMs).
pub const MIG_BLIND_RULES: [Rule; 15] = [
    Rule::InputBound,
    Rule::CpuBoundInput,
    Rule::UtilMisleading,
    Rule::LaunchBound,
    Rule::H2dCopyBound,
    Rule::CpuQuotaThrottled,
    Rule::RemoteDatasetStall,
    Rule::GpuUnderfed,
    Rule::MemoryBound,
    Rule::RankStraggler,
    Rule::CollectiveHang,
    Rule::CommBound,
    Rule::MainThreadBound,
    Rule::CpusPinned,
    Rule::CompileWarmup,
];

/// Whether the host details of a process are out of reach: its PID is outside gpusight's PID namespace.
fn outside(ctx: &Ctx<'_>, pid: u32) -> bool {
    ctx.host_process(pid).is_some_and(|p| p.unreadable.as_deref() == Some(OUTSIDE_NAMESPACE))
}

/// The PIDs of a GPU's compute processes that cannot be seen, and whether that is all of them.
fn unseen(ctx: &Ctx<'_>, gpu_index: u32) -> (Vec<u32>, bool) {
    let pids: Vec<u32> =
        ctx.compute_processes().into_iter().filter(|(g, _)| *g == gpu_index).map(|(_, pid)| pid).collect();
    let out: Vec<u32> = pids.iter().copied().filter(|pid| outside(ctx, *pid)).collect();
    let all = !pids.is_empty() && out.len() == pids.len();
    (out, all)
}

/// Whether a GPU runs in MIG mode.
pub fn mig(ctx: &Ctx<'_>, gpu_index: u32) -> bool {
    ctx.gpu_info(gpu_index).is_some_and(|g| g.mig_enabled == Some(true))
}

/// Whether a rule's finding rests on readings that exist: not a process rule about a process that cannot be seen
/// (or about a GPU none of whose processes can be), not a rule over whole-GPU work on a MIG GPU.
pub fn judged(ctx: &Ctx<'_>, finding: &Finding) -> bool {
    let Some(gpu) = finding.gpu_index else { return true };
    if MIG_BLIND_RULES.contains(&finding.rule) && mig(ctx, gpu) {
        return false;
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
