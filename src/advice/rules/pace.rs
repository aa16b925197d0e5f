//! What else sets a waiting GPU's pace on the host: CPUs the job may run on that are too few for its workers
//! (cpus-pinned), and a model that is still compiling (compile-warmup). Both are causes the one verdict per GPU
//! names (`advice::CAUSES`).

use super::super::window::{Ctx, duration_label, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::draft;
use super::signals::{GpuWindow, ProcWindow};
use super::waiting::waiting_processes;
use crate::sample::HostProcess;

/// "0-1,4,6-7": a sorted CPU list as `Cpus_allowed_list` writes it.
#[must_use]
pub fn cpu_list_label(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(",")
}

/// Who confined the process to its CPUs, from its job and cgroup, and what widens the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Confiner {
    /// A Kubernetes pod (static CPU manager: an integer CPU request equal to its limit gets exclusive CPUs).
    Kubernetes,
    /// A Slurm job step (its cgroup cpuset, or `--cpu-bind`).
    Slurm,
    /// The cgroup's own cpuset (`docker --cpuset-cpus`, systemd `AllowedCPUs`).
    Cpuset,
    /// An affinity mask narrower than the cgroup's (`taskset`, `numactl`, `os.sched_setaffinity`).
    Affinity,
}

impl Confiner {
    fn of(process: &HostProcess, allowed: u32) -> Self {
        let job = process.job.as_ref();
        let path = process.cgroup_cpu.as_ref().map_or("", |c| c.path.as_str());
        if job.is_some_and(|j| j.pod.is_some()) || path.contains("kubepods") {
            Self::Kubernetes
        } else if job.is_some_and(|j| j.slurm_job_id.is_some()) || path.contains("slurm") {
            Self::Slurm
        } else if process.cgroup_cpu.as_ref().and_then(|c| c.cpuset_cpus) == Some(allowed) {
            Self::Cpuset
        } else {
            Self::Affinity
        }
    }

    /// Where the set comes from, for the evidence.
    fn label(self) -> &'static str {
        match self {
            Self::Kubernetes => "a Kubernetes pod (the static CPU manager's exclusive CPUs)",
            Self::Slurm => "a Slurm job step (its cpuset or --cpu-bind)",
            Self::Cpuset => "its cgroup's cpuset",
            Self::Affinity => "an affinity mask (taskset, numactl or sched_setaffinity)",
        }
    }

    /// How to give the job `need` CPUs.
    fn remedy(self, need: u32) -> String {
        match self {
            Self::Kubernetes => format!(
                "raise the pod's integer CPU request and limit together (requests.cpu = limits.cpu = {need}): the \
                 kubelet's static CPU manager gives a Guaranteed pod exactly that many exclusive CPUs"
            ),
            Self::Slurm => format!(
                "ask Slurm for more CPUs per task (--cpus-per-task={need}, passed to srun as well) and check \
                 --cpu-bind (binding each task to one core confines its workers with it; --cpu-bind=none or \
                 =cores with enough CPUs lets them spread)"
            ),
            Self::Cpuset => {
                format!("widen the cgroup's cpuset (docker --cpuset-cpus, systemd AllowedCPUs) to at least {need} CPUs")
            }
            Self::Affinity => format!(
                "widen the CPU mask the job starts with (taskset -c, numactl --physcpubind or --cpunodebind) to at \
                 least {need} CPUs, on the GPU's NUMA node"
            ),
        }
    }
}

/// cpus-pinned: the GPU waits while the process may run on fewer CPUs than it has busy `DataLoader` workers (plus
/// its main thread), those CPUs are full and other cores idle: `taskset`, a Slurm cpuset or binding, or a
/// Kubernetes static CPU manager gave the job too few. No quota throttles it, so cpu-quota-throttled is silent.
#[must_use]
pub fn cpus_pinned(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, gw, pw) in waiting_processes(ctx, t.window_s) {
        let Some(allowed) = pw.inputs().last().flatten().and_then(|i| i.allowed_cpus).map(u32::from) else {
            continue;
        };
        let workers = pw.workers();
        if workers < allowed {
            continue;
        }
        let share =
            pw.span.share(&pw.series.input, |i| i.allowed_busy_pct.is_some_and(|b| f64::from(b) >= t.pinned_busy_pct));
        let busy = super::super::window::median(pw.inputs().map(|i| i.and_then(|i| i.allowed_busy_pct).map(u32::from)));
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a count of cores")]
        let idle = ctx
            .window(t.window_s)
            .and_then(|w| w.median(&ctx.history.host.cpu_busy_pct))
            .map(|b| ((100.0 - b).max(0.0) / 100.0 * ctx.machine.n_cpus as f64).floor() as u32);
        if share < t.exit_share || idle.is_none_or(|idle| idle < allowed) {
            continue;
        }
        out.push(pinned_finding(ctx, (gpu_index, pid), &pw, (allowed, workers, busy, idle.unwrap_or(0)), share, &gw));
    }
    out
}

fn pinned_finding(
    ctx: &Ctx<'_>,
    (gpu_index, pid): (u32, u32),
    pw: &ProcWindow<'_>,
    (allowed, workers, busy, idle): (u32, u32, Option<f64>, u32),
    share: f64,
    gw: &GpuWindow<'_>,
) -> Observation {
    let t = ctx.t;
    let process = ctx.host_process(pid);
    let list = process.and_then(|p| p.allowed_cpus.as_deref()).map_or_else(String::new, cpu_list_label);
    let confiner = process.map_or(Confiner::Affinity, |p| Confiner::of(p, allowed));
    let need = workers + 2;
    let plural = if workers == 1 { "" } else { "s" };
    let finding = Finding {
        title: format!(
            "{} waits: PID {pid} may run on {allowed} CPUs for {workers} DataLoader worker{plural}",
            gw.place.label()
        ),
        evidence: format!(
            "{}; PID {pid} may run on {allowed} CPUs (Cpus_allowed_list {list}), set by {}; its {workers} \
             DataLoader worker{plural} share them, busy {} (median); {idle} of {} cores idle; full in {} of samples",
            gw.evidence(),
            confiner.label(),
            busy.map_or_else(|| "N/A".to_owned(), pct_label),
            ctx.machine.n_cpus,
            share_label(share),
        ),
        remedy: format!(
            "Give the job CPUs for its workers: {}; or, where the CPUs are fixed, set num_workers to about {} so \
             the workers do not take turns on them.",
            confiner.remedy(need),
            allowed.saturating_sub(1).max(1),
        ),
        explanation: "A process may run only on the CPUs of its affinity mask (Cpus_allowed_list in \
                      /proc/PID/status), which its DataLoader workers inherit. When they are fewer than the busy \
                      workers, the workers take turns on them while other cores idle, and the GPU waits for \
                      batches. No quota throttles them, so cgroup counters show nothing; the busy share of the \
                      allowed CPUs does."
            .to_owned(),
        gpu_instance_id: gw.place.gpu_instance_id(),
        ..draft(Rule::CpusPinned, Severity::Warning, Some(gpu_index), Some(pid), ctx.now_ms)
    };
    let enter = gw.span.covered && pw.span.covered && share >= t.enter_share;
    Observation { finding, enter, stay: share >= t.exit_share }
}

/// compile-warmup: a young process (under `compile_warmup_max_age_s`) with `torch.compile` (inductor) compile
/// workers alive, at work (a busy compile worker or a pegged main thread), while its GPU waits over a covered
/// `window_s`: it is compiling its model, not starved. Info: the verdict for the GPU until the model runs.
#[must_use]
pub fn compile_warmup(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, gw, pw) in waiting_processes(ctx, t.window_s) {
        let Some(process) = ctx.host_process(pid) else { continue };
        let Some(age_s) = process.started_at_ms.map(|s| ctx.now_ms.saturating_sub(s) / 1000) else { continue };
        let latest = pw.inputs().last().flatten();
        let compilers = latest.map_or(0, |i| u32::from(i.compile_workers));
        if age_s >= t.compile_warmup_max_age_s || compilers == 0 {
            continue;
        }
        let busy_compilers = pw.inputs().flatten().map(|i| u32::from(i.compile_busy)).max().unwrap_or(0);
        let main = pw.busiest_thread();
        if busy_compilers == 0 && main.is_none_or(|m| m < t.launch_thread_pct) {
            continue;
        }
        let worker = ctx
            .history
            .latest()
            .processes
            .iter()
            .find(|p| p.ppid == Some(pid) && p.is_compile_worker())
            .map_or_else(String::new, |p| format!(" (PID {})", p.pid));
        let finding = Finding {
            title: format!("{} waits while PID {pid} compiles its model (torch.compile warming up)", gw.place.label()),
            evidence: format!(
                "PID {pid} started {} ago; {compilers} torch.compile worker{}{worker} alive, {busy_compilers} busy; its \
                 busiest thread at {} of one core (median); {}",
                duration_label(age_s),
                if compilers == 1 { "" } else { "s" },
                main.map_or_else(|| "N/A".to_owned(), pct_label),
                gw.evidence(),
            ),
            remedy: "Nothing to fix while it warms up: the first steps of a compiled model trace and compile it while \
                     the GPU idles. If it lasts or comes back, look for recompilations (TORCH_LOGS=recompiles: \
                     shapes or Python values that change from step to step), keep inductor's caches between runs \
                     (TORCHINDUCTOR_CACHE_DIR on a persistent local disk), and expect minutes with \
                     mode=\"max-autotune\"."
                .to_owned(),
            explanation: "torch.compile traces the model in the main thread and compiles its kernels in a pool of \
                          compile workers (torch/_inductor/compile_worker), the first time each graph runs. Until it \
                          is done the GPU waits, and the signs of a starved job (a pegged main thread, a busy child \
                          process) are the compiler's. The compile workers are not DataLoader workers."
                .to_owned(),
            gpu_instance_id: gw.place.gpu_instance_id(),
            ..draft(Rule::CompileWarmup, Severity::Info, Some(gpu_index), Some(pid), ctx.now_ms)
        };
        // Said once the GPU's and the process's windows are covered, as the other causes of a waiting GPU.
        let enter = gw.span.covered && pw.span.covered;
        out.push(Observation { finding, enter, stay: true });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_as_the_kernel_writes_them() {
        assert_eq!(cpu_list_label(&[0, 1]), "0-1");
        assert_eq!(cpu_list_label(&[0, 1, 2, 4, 6, 7]), "0-2,4,6-7");
        assert_eq!(cpu_list_label(&[5]), "5");
        assert_eq!(cpu_list_label(&[]), "");
    }
}
