//! cpu-contention and cpu-oversubscribed from the per-process readings: a starved GPU whose `DataLoader` workers are
//! runnable on a host with no idle CPU. Where the job's threads were read, the account says this from their time
//! waiting for a CPU (and replaces these observations); here, in recordings made before threads were read and for
//! processes whose threads are hidden, the same situation is told from what each sample carries: the workers' state
//! and CPU, the host's busy CPUs, and the CPU the job itself uses.
//!
//! Runnable workers on a host with no idle core wait for a CPU, whoever holds the cores: they are not waiting for
//! storage (that is D), nor short of workers (more would queue for the same CPUs). Who holds them decides which:
//! the CPUs the job does not use itself are other processes' (contention); where the job's own use fills them, it
//! oversubscribes its CPUs.

use super::super::window::{Ctx, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::draft;
use super::throughput::{ProcessSamples, opt_pct, starved, starved_processes};
use crate::sample::ProcessRole;

/// Idle CPUs (cores' worth) below which a host has none to spare: less than one whole core idle.
const NO_IDLE_CORE: f64 = 1.0;
/// Cores other processes must hold on the job's CPUs for a wait to be theirs: one whole core.
const OTHERS_MIN_CORES: f64 = 1.0;

/// What one sample says about the job's wait for CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CpuSample {
    /// No idle core on the CPUs the job may use, and at least one busy worker runnable, none reading in D.
    waiting: bool,
    /// Cores the job used, and the cores of its CPUs busy with other processes.
    job_cores: f64,
    others_cores: f64,
}

/// Per sample: whether the job's workers waited for CPUs, and who held them.
fn samples(ctx: &Ctx<'_>, s: &ProcessSamples) -> Vec<CpuSample> {
    let n_cpus = ctx.machine.n_cpus as f64;
    let in_d = s.in_d_reading(ctx.t);
    (0..s.times.len())
        .map(|i| {
            let input = s.input[i];
            let (cpus, busy_pct) = match input.and_then(|x| x.allowed_cpus.zip(x.allowed_busy_pct)) {
                Some((cpus, busy)) => (f64::from(cpus), Some(f64::from(busy))),
                None => (n_cpus, s.host_busy[i].map(f64::from)),
            };
            let busy_cores = busy_pct.map_or(0.0, |b| b / 100.0 * cpus);
            let job_cores = (f64::from(s.cpu[i].unwrap_or(0.0))
                + f64::from(input.and_then(|x| x.workers_cpu_pct).unwrap_or(0)))
                / 100.0;
            let runnable = input.is_some_and(|x| x.workers_runnable > 0);
            // Pinned to CPUs that are full while CPUs outside the mask idle: the mask is the cause (cpus-pinned).
            let idle_outside =
                s.host_busy[i].map_or(0.0, |b| (n_cpus - cpus) - (f64::from(b) / 100.0 * n_cpus - busy_cores));
            let full = busy_pct.is_some() && cpus - busy_cores < NO_IDLE_CORE && idle_outside < NO_IDLE_CORE;
            CpuSample {
                waiting: full && runnable && !in_d[i],
                job_cores,
                others_cores: (busy_cores - job_cores).max(0.0),
            }
        })
        .collect()
}

/// The share of samples in which the workers waited for CPUs that other processes held (`others`), or that the
/// job's own use filled.
fn share_where(samples: &[CpuSample], others: bool) -> f64 {
    let hits = samples.iter().filter(|c| c.waiting && (c.others_cores >= OTHERS_MIN_CORES) == others).count();
    hits as f64 / samples.len().max(1) as f64
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// cpu-contention: the workers wait for CPUs that other processes hold.
#[must_use]
pub fn cpu_contention(ctx: &Ctx<'_>) -> Vec<Observation> {
    judge(ctx, Rule::CpuContention)
}

/// cpu-oversubscribed: the workers wait for CPUs the job's own threads fill.
#[must_use]
pub fn cpu_oversubscribed(ctx: &Ctx<'_>) -> Vec<Observation> {
    judge(ctx, Rule::CpuOversubscribed)
}

fn judge(ctx: &Ctx<'_>, rule: Rule) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, s) in starved_processes(ctx) {
        if s.workers() == 0 {
            continue;
        }
        let (starved_enter, starved_stay) = starved(&s, t);
        let cpu = samples(ctx, &s);
        let share = share_where(&cpu, rule == Rule::CpuContention);
        if !starved_stay || share < t.exit_share {
            continue;
        }
        let finding = finding(ctx, rule, (gpu_index, pid), &s, &cpu, share);
        out.push(Observation {
            finding,
            enter: starved_enter && share >= t.enter_share,
            stay: starved_stay && share >= t.exit_share,
        });
    }
    out
}

/// The finding: the GPU's work, the workers' CPU, the cores the job and the others use, and the remedy from them.
fn finding(
    ctx: &Ctx<'_>,
    rule: Rule,
    (gpu_index, pid): (u32, u32),
    s: &ProcessSamples,
    cpu: &[CpuSample],
    share: f64,
) -> Finding {
    let workers = s.workers();
    let per_worker = median(
        s.input
            .iter()
            .flatten()
            .filter(|x| x.busy_workers > 0)
            .map(|x| f64::from(x.workers_cpu_pct.unwrap_or(0)) / f64::from(x.busy_workers.max(1))),
    );
    let job = median(cpu.iter().map(|c| c.job_cores));
    let others = median(cpu.iter().map(|c| c.others_cores));
    let evidence = format!(
        "{}; no idle CPU on the job's CPUs (host busy median {}); {workers} DataLoader workers runnable at a median {} \
         of a core each, none waiting for storage; the job uses {job:.1} cores, other processes {others:.1}; held \
         in {} of samples",
        s.util_evidence(),
        opt_pct(ProcessSamples::median(&s.host_busy)),
        pct_label(per_worker),
        share_label(share)
    );
    let (title, remedy) = if rule == Rule::CpuContention {
        (
            format!("{} waits for CPUs other processes hold (PID {pid}'s workers are runnable)", s.at),
            contention_remedy(ctx),
        )
    } else {
        (format!("{} waits for CPUs its own job oversubscribes (PID {pid})", s.at), oversubscribed_remedy(ctx, pid))
    };
    Finding {
        title,
        evidence,
        remedy,
        explanation: "Runnable DataLoader workers on a host with no idle core wait for a CPU: they are not waiting \
                      for storage (that is D state) nor too few (more would queue for the same CPUs). The CPUs the \
                      job does not use itself are other processes'; where its own use fills them, it runs more \
                      threads than it has CPUs. Judged from the per-process readings where thread times were not \
                      read."
            .to_owned(),
        gpu_instance_id: s.gpu_instance_id,
        ..draft(rule, Severity::Warning, Some(gpu_index), Some(pid), s.times.first().copied().unwrap_or(ctx.now_ms))
    }
}

/// Names the other processes where the scan of them says who they are.
fn contention_remedy(ctx: &Ctx<'_>) -> String {
    let others = ctx.history.latest().host.cpu_others.as_ref();
    let who = others.and_then(|o| o.top.first()).map_or_else(
        || "processes outside the job".to_owned(),
        |c| {
            format!(
                "{}'s {} (PID {}, cgroup {})",
                c.user.clone().unwrap_or_else(|| "another user".to_owned()),
                crate::text::visible(&c.command),
                c.pid,
                crate::text::visible(&c.cgroup)
            )
        },
    );
    format!(
        "Other processes hold the CPUs the job needs ({who}): ask their owners, run where CPUs are free, or reserve \
         CPUs for the job (Slurm --exclusive or --cpus-per-task, a Kubernetes Guaranteed pod with the static CPU \
         manager, a cpuset). More DataLoader workers would only queue for the same CPUs."
    )
}

/// Names the threads each worker runs.
fn oversubscribed_remedy(ctx: &Ctx<'_>, pid: u32) -> String {
    let threads = ctx
        .history
        .latest()
        .processes
        .iter()
        .filter(|p| p.ppid == Some(pid) && p.role == ProcessRole::Child && !p.is_compile_worker())
        .filter_map(|p| p.n_threads)
        .max();
    let per_worker = threads.map_or_else(String::new, |n| format!(" (a worker runs up to {n} threads)"));
    format!(
        "The job runs more threads than it has CPUs{per_worker}: give each DataLoader worker one thread \
         (torch.set_num_threads(1) in worker_init_fn, OMP_NUM_THREADS=1 and MKL_NUM_THREADS=1 in their environment, \
         cv2.setNumThreads(0)), and keep num_workers below the CPUs it may use. Do not raise num_workers."
    )
}
