//! Is the job compute-bound or input-bound? input-bound, cpu-bound-input and util-misleading.
//!
//! System iowait alone cannot tell: one starved process on 16 CPUs reads 2 % iowait (nvml.md §10). The rules
//! read the GPU process's own signals instead: its D-state share (process, threads, DataLoader children), the
//! read rate of the process tree, PSI io, and its CPU use.

use super::super::window::{
    Ctx, MIB, Num, Span, align_iter, at, bytes_label, median, pct_label, share_label, share_of,
};
use super::super::{Observation, Rule, Severity};
use super::{draft, first_true};
use crate::history::{GpuSeries, ProcessSeries};

/// Per-sample signals of one GPU process, aligned with its GPU's and the host's samples.
struct ProcessSamples {
    span: Span,
    times: Vec<u64>,
    starved: Vec<bool>,
    util: Vec<Option<u32>>,
    self_in_d: Vec<bool>,
    child_in_d: Vec<bool>,
    read: Vec<Option<u64>>,
    cpu: Vec<Option<f32>>,
    child_cpu: Vec<Option<f32>>,
    psi_io: Vec<Option<f32>>,
    iowait: Vec<Option<f32>>,
}

/// A GPU process, its GPU and its window: what both rules need before they look at the samples.
struct Subject<'a> {
    process: &'a ProcessSeries,
    gpu: &'a GpuSeries,
    span: Span,
}

impl<'a> Subject<'a> {
    fn of(ctx: &Ctx<'a>, gpu_index: u32, pid: u32) -> Option<Self> {
        let process = ctx.process(pid)?;
        let gpu = ctx.history.gpu(gpu_index)?;
        let span = Span::of(&process.times, ctx.t.window_s, ctx.t.min_window_coverage)?;
        Some(Self { process, gpu, span })
    }

    /// For each GPU (by NVML index), whether it has a starved sample in the machine's `window_s` window. A
    /// compute process's window ends at the newest sample (it is in the newest tick) and spans at most
    /// `window_s`, so its samples match machine samples inside that window: on a GPU with none starved there,
    /// every process has a starved share of 0 and neither rule can fire.
    fn starved_gpus(ctx: &Ctx<'_>) -> Vec<(u32, bool)> {
        let limit = ctx.t.starved_util_pct;
        let span = ctx.window(ctx.t.window_s);
        ctx.history
            .gpus
            .iter()
            .map(|gpu| {
                let any = span
                    .is_some_and(|span| span.values(&gpu.util_pct).any(|u| u.is_some_and(|u| f64::from(u) < limit)));
                (gpu.index, any)
            })
            .collect()
    }

    /// The share of the window's samples in which the GPU was starved, as [`ProcessSamples::starved`] counts
    /// it, without building the samples. Both rules need at least `exit_share` of it, so at 8 GPUs × 1,000 busy
    /// processes almost every process stops here.
    fn starved_share(&self, ctx: &Ctx<'_>) -> f64 {
        let limit = ctx.t.starved_util_pct;
        share_of(
            align_iter(ctx.history, self.process, &self.span)
                .map(|(_, m)| at(&self.gpu.util_pct, m).is_some_and(|u| f64::from(u) < limit)),
        )
    }
}

impl ProcessSamples {
    fn read(ctx: &Ctx<'_>, subject: &Subject<'_>) -> Self {
        let Subject { process, gpu, span } = *subject;
        let host = &ctx.history.host;
        let n = span.window.len;
        let mut s = Self {
            span,
            times: Vec::with_capacity(n),
            starved: Vec::with_capacity(n),
            util: Vec::with_capacity(n),
            self_in_d: Vec::with_capacity(n),
            child_in_d: Vec::with_capacity(n),
            read: Vec::with_capacity(n),
            cpu: Vec::with_capacity(n),
            child_cpu: Vec::with_capacity(n),
            psi_io: Vec::with_capacity(n),
            iowait: Vec::with_capacity(n),
        };
        for (p, m) in align_iter(ctx.history, process, &span) {
            let util = at(&gpu.util_pct, m);
            s.times.push(process.times.get(p).copied().unwrap_or(0));
            s.starved.push(util.is_some_and(|u| f64::from(u) < ctx.t.starved_util_pct));
            s.util.push(util);
            let own_d = at(&process.state, Some(p)) == Some('D') || at(&process.threads_in_d, Some(p)).unwrap_or(0) > 0;
            s.self_in_d.push(own_d);
            s.child_in_d.push(at(&process.children_in_d, Some(p)).unwrap_or(0) > 0);
            s.read.push(at(&process.tree_read_bytes_per_s, Some(p)));
            s.cpu.push(at(&process.cpu_pct, Some(p)));
            s.child_cpu.push(at(&process.max_child_cpu_pct, Some(p)));
            s.psi_io.push(at(&host.psi_io_some, m));
            s.iowait.push(at(&host.iowait_pct, m));
        }
        s
    }

    fn share(flags: &[bool]) -> f64 {
        share_of(flags.iter().copied())
    }

    fn median<T: Num>(values: &[Option<T>]) -> Option<f64> {
        median(values.iter().copied())
    }

    fn any_in_d(&self) -> Vec<bool> {
        self.self_in_d.iter().zip(&self.child_in_d).map(|(a, b)| *a || *b).collect()
    }
}

fn opt_pct(value: Option<f64>) -> String {
    value.map_or_else(|| "N/A".to_owned(), pct_label)
}

fn opt_rate(value: Option<f64>) -> String {
    value.map_or_else(|| "N/A".to_owned(), |r| format!("{}/s", bytes_label(r)))
}

/// The compute processes whose GPU was starved often enough for an input rule to hold, with their samples: both
/// input rules need `starved_share >= exit_share` whatever else they find, so the others are skipped before any
/// sample is built.
fn starved_processes(ctx: &Ctx<'_>) -> Vec<(u32, u32, ProcessSamples)> {
    let starved_gpus = Subject::starved_gpus(ctx);
    let mut out = Vec::new();
    for (gpu_index, pid) in ctx.compute_processes() {
        if !starved_gpus.iter().any(|(g, any)| *g == gpu_index && *any) {
            continue;
        }
        let Some(subject) = Subject::of(ctx, gpu_index, pid) else { continue };
        if subject.starved_share(ctx) < ctx.t.exit_share {
            continue;
        }
        let samples = ProcessSamples::read(ctx, &subject);
        out.push((gpu_index, pid, samples));
    }
    out
}

/// input-bound: the GPU is starved while its process tree waits for storage.
#[must_use]
pub fn input_bound(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, s) in starved_processes(ctx) {
        let starved_share = ProcessSamples::share(&s.starved);
        let d_share = ProcessSamples::share(&s.any_in_d());
        let self_d = ProcessSamples::share(&s.self_in_d);
        let child_d = ProcessSamples::share(&s.child_in_d);
        let read = ProcessSamples::median(&s.read);
        let psi = ProcessSamples::median(&s.psi_io);
        let reads_high = read.is_some_and(|r| r >= t.read_high_mib_s * MIB);
        let reads_some = read.is_some_and(|r| r >= t.read_low_mib_s * MIB);
        let pressure = psi.is_some_and(|p| p >= t.psi_io_some_pct) && (d_share > 0.0 || reads_some);
        let io_evidence = d_share >= t.d_state_share || reads_high || pressure;
        if !io_evidence || starved_share < t.exit_share {
            continue;
        }
        let label = s.span.label();
        let since = first_true(s.times.iter().copied(), s.starved.iter().copied(), ctx.now_ms);
        let finding = super::super::Finding {
            title: format!("GPU {gpu_index} is starved by its input pipeline (PID {pid} waits for storage)"),
            evidence: format!(
                "SM util median {} over {label} (below {} in {} of samples); PSI io some {}; PID {pid} or its \
                 threads in D {} of samples, a DataLoader child in D {}; reads {} (process and children); \
                 system iowait {}",
                opt_pct(ProcessSamples::median(&s.util)),
                pct_label(t.starved_util_pct),
                share_label(starved_share),
                opt_pct(psi),
                share_label(self_d),
                share_label(child_d),
                opt_rate(read),
                opt_pct(ProcessSamples::median(&s.iowait)),
            ),
            remedy: "Feed the GPU faster: copy the dataset to local NVMe (or a page-cache-friendly format), pack \
                     small files into shards, raise DataLoader num_workers, use pin_memory and prefetching."
                .to_owned(),
            explanation: "The GPU runs kernels only part of the time while the process that feeds it, or its \
                          DataLoader workers, sit in uninterruptible sleep (D) waiting for reads, and the host \
                          shows I/O pressure. System iowait is diluted over all CPUs and is not used alone; the \
                          process tree's D-state share, its read rate and PSI io are."
                .to_owned(),
            ..draft(Rule::InputBound, Severity::Warning, Some(gpu_index), Some(pid), since)
        };
        out.push(Observation::by_share(finding, starved_share, s.span.covered, t));
    }
    out
}

/// cpu-bound-input: the GPU is starved while the process or one of its children pegs a core, with little I/O.
#[must_use]
pub fn cpu_bound_input(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, s) in starved_processes(ctx) {
        let pegged = |v: &Option<f32>| v.is_some_and(|c| f64::from(c) >= t.pegged_core_pct);
        let flags: Vec<bool> = (0..s.times.len())
            .map(|i| {
                let little_io = !s.self_in_d[i]
                    && !s.child_in_d[i]
                    && s.read[i].is_none_or(|r| (r as f64) < t.read_low_mib_s * MIB);
                s.starved[i] && (pegged(&s.cpu[i]) || pegged(&s.child_cpu[i])) && little_io
            })
            .collect();
        let share = ProcessSamples::share(&flags);
        if share < t.exit_share {
            continue;
        }
        let own = ProcessSamples::median(&s.cpu);
        let child = ProcessSamples::median(&s.child_cpu);
        let who = if own.unwrap_or(0.0) >= child.unwrap_or(0.0) {
            format!("PID {pid} itself at {} of one core (median)", opt_pct(own))
        } else {
            format!("its busiest child at {} of one core (median; PID {pid} at {})", opt_pct(child), opt_pct(own))
        };
        let since = first_true(s.times.iter().copied(), flags.iter().copied(), ctx.now_ms);
        let finding = super::super::Finding {
            title: format!("GPU {gpu_index} waits for CPU preprocessing in PID {pid}"),
            evidence: format!(
                "SM util median {} over {}; {who}; reads {}; condition held in {} of samples",
                opt_pct(ProcessSamples::median(&s.util)),
                s.span.label(),
                opt_rate(ProcessSamples::median(&s.read)),
                share_label(share),
            ),
            remedy: "Move preprocessing (decoding, tokenization, augmentation) out of the main process: more \
                     DataLoader workers, pre-tokenize or pre-decode offline, or do it on the GPU."
                .to_owned(),
            explanation: "One CPU core is saturated by the process that feeds the GPU (or by one of its workers) \
                          while the GPU is mostly idle and there is little I/O: Python-side preprocessing is the \
                          limiter, not storage and not the GPU."
                .to_owned(),
            ..draft(Rule::CpuBoundInput, Severity::Warning, Some(gpu_index), Some(pid), since)
        };
        out.push(Observation::by_share(finding, share, s.span.covered, t));
    }
    out
}

/// util-misleading: high NVML utilization while SM activity (GPM) or power says the GPU does little.
#[must_use]
pub fn util_misleading(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let util = span.values(&gpu.util_pct);
        let active = span.values(&gpu.sm_active_pct);
        let power = span.values(&gpu.power_mw);
        let limit = span.values(&gpu.power_limit_mw);
        let mut used_gpm = false;
        let flags: Vec<bool> = util
            .zip(active)
            .zip(power.zip(limit))
            .map(|((u, a), (p, l))| {
                let busy = u.is_some_and(|u| f64::from(u) >= t.misleading_util_pct);
                let low = match (a, p, l) {
                    (Some(a), _, _) => {
                        used_gpm = true;
                        f64::from(a) < t.misleading_sm_active_pct
                    }
                    (None, Some(p), Some(l)) if l > 0 => f64::from(p) < f64::from(l) * t.misleading_power_pct / 100.0,
                    _ => false,
                };
                busy && low
            })
            .collect();
        let share = share_of(flags.iter().copied());
        if share < t.exit_share {
            continue;
        }
        let signal = if used_gpm {
            format!("GPM SM activity median {}", opt_pct(span.median(&gpu.sm_active_pct)))
        } else {
            format!(
                "power median {} W of a {} W limit (no GPM on this GPU)",
                span.median(&gpu.power_mw).map_or_else(|| "N/A".to_owned(), |p| format!("{:.0}", p / 1000.0)),
                span.median(&gpu.power_limit_mw).map_or_else(|| "N/A".to_owned(), |p| format!("{:.0}", p / 1000.0)),
            )
        };
        let times = ctx.history.times.iter_from(span.window.start).copied();
        let since = first_true(times, flags.iter().copied(), ctx.now_ms);
        let finding = super::super::Finding {
            title: format!("GPU {} looks busy but does little work", gpu.index),
            evidence: format!(
                "util median {} over {} while {signal}; held in {} of samples",
                opt_pct(span.median(&gpu.util_pct)),
                span.label(),
                share_label(share)
            ),
            remedy: "Profile the step (Nsight Systems, torch.profiler): look for many tiny kernels, small batches, \
                     low occupancy, or ranks spinning in NCCL collectives while waiting for a slow peer."
                .to_owned(),
            explanation: "NVML utilization is the share of time any kernel ran, however small. SM activity (GPM, \
                          Hopper and newer) says how much of the chip worked; where it is absent, power far below \
                          the limit at full utilization says the same."
                .to_owned(),
            ..draft(Rule::UtilMisleading, Severity::Warning, Some(gpu.index), None, since)
        };
        out.push(Observation::by_share(finding, share, span.covered, t));
    }
    out
}
