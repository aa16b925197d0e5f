//! Jobs over several GPUs (issue 16): rank-straggler and collective-hang.
//!
//! The ranks of one job (processes with the same job key, see `host::job`) wait for each other at every collective.
//! A rank that waits shows HIGH NVML utilization (NCCL's kernels spin while they wait) with LOW GPM SM activity; the
//! rank that sets the pace shows lower utilization, its SM activity real work, or it waits on its own input. So the
//! busiest-looking GPU is a waiting one and the real culprit looks idle. When every rank spins with no work and no
//! traffic for a while, the job is stuck in a collective.

use super::super::window::{Ctx, MIB, Span, pct_label};
use super::super::{Observation, Rule, Severity, Thresholds};
use super::draft;
use crate::history::GpuSeries;
use crate::text::visible;

/// The evidence's tail when no rule knows the straggler's own cause; `advice::name_the_cause` replaces it when one
/// does.
pub const CAUSE_UNKNOWN: &str = "its own cause: unknown to the rules";

/// One rank of a job on one GPU, with its GPU's means over the rule's window.
#[derive(Debug, Clone)]
struct RankGpu {
    gpu: u32,
    pid: u32,
    rank: Option<u32>,
    span: Span,
    util: Option<f64>,
    sm_active: Option<f64>,
    /// Power as a share (%) of the enforced limit.
    power_pct: Option<f64>,
    /// PCIe RX + TX, MiB/s.
    pcie_mib_s: Option<f64>,
    /// NVLink RX + TX over all links, MiB/s, where GPM reads it.
    nvlink_mib_s: Option<f64>,
    throttled_share: f64,
}

/// A job with ranks on at least two GPUs.
#[derive(Debug, Clone)]
struct JobRanks {
    key: String,
    ranks: Vec<RankGpu>,
}

/// RX + TX in MiB/s from two rates in `per_mib` units per MiB; `None` when neither was read.
fn sum_mib_s(a: Option<f64>, b: Option<f64>, per_mib: f64) -> Option<f64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some((a.unwrap_or(0.0) + b.unwrap_or(0.0)) / per_mib),
    }
}

impl RankGpu {
    fn of(ctx: &Ctx<'_>, gpu: &GpuSeries, pid: u32, rank: Option<u32>, secs: u64) -> Option<Self> {
        let span = ctx.window(secs)?;
        let power = span.mean(&gpu.power_mw);
        let limit = span.mean(&gpu.power_limit_mw).filter(|l| *l > 0.0);
        // PCIe rates are in KB/s of 1,000 bytes (see `source::nvml::gpm`).
        let pcie = sum_mib_s(span.mean(&gpu.pcie_rx_kbps), span.mean(&gpu.pcie_tx_kbps), MIB / 1000.0);
        let nvlink = sum_mib_s(span.mean(&gpu.nvlink_rx_mib_s), span.mean(&gpu.nvlink_tx_mib_s), 1.0);
        Some(Self {
            gpu: gpu.index,
            pid,
            rank,
            span,
            util: span.mean(&gpu.util_pct),
            sm_active: span.mean(&gpu.sm_active_pct),
            power_pct: power.zip(limit).map(|(p, l)| p / l * 100.0),
            pcie_mib_s: pcie,
            nvlink_mib_s: nvlink,
            throttled_share: span.share(&gpu.throttle_bits, |b| b & super::waiting::THROTTLE_REASONS != 0),
        })
    }

    /// Whether the rank waits for another: busy by NVML's count, little SM work (or, without GPM, little power
    /// for its utilization).
    fn waiting(&self, t: &Thresholds) -> bool {
        let busy = self.util.is_some_and(|u| u >= t.straggler_waiting_min_util_pct);
        let idle_inside = match self.sm_active {
            Some(a) => a <= t.straggler_waiting_max_sm_active_pct,
            None => self.power_pct.is_some_and(|p| p <= t.straggler_waiting_max_power_pct),
        };
        busy && idle_inside
    }

    /// Whether the rank's GPU works flat out: busy by NVML's count with real SM work (or, without GPM, high power).
    fn computing(&self, t: &Thresholds) -> bool {
        let busy = self.util.is_some_and(|u| u >= t.straggler_waiting_min_util_pct);
        let working = match self.sm_active {
            Some(a) => a >= t.straggler_compute_min_sm_active_pct,
            None => self.power_pct.is_some_and(|p| p >= t.straggler_compute_min_power_pct),
        };
        busy && working
    }

    /// "rank 1 (GPU 1, PID 3001)".
    fn who(&self) -> String {
        let rank = self.rank.map_or_else(|| "a rank".to_owned(), |r| format!("rank {r}"));
        format!("{rank} (GPU {}, PID {})", self.gpu, self.pid)
    }

    /// "util 99 %, SM activity 9 %".
    fn numbers(&self) -> String {
        let util = self.util.map_or_else(|| "N/A".to_owned(), pct_label);
        match (self.sm_active, self.power_pct) {
            (Some(a), _) => format!("util {util}, GPM SM activity {}", pct_label(a)),
            (None, Some(p)) => format!("util {util}, power {} of its limit (no GPM)", pct_label(p)),
            (None, None) => format!("util {util}"),
        }
    }
}

/// The jobs whose ranks hold compute contexts on at least two GPUs now, each rank with its GPU's window.
fn jobs(ctx: &Ctx<'_>, secs: u64) -> Vec<JobRanks> {
    let mut jobs: Vec<JobRanks> = Vec::new();
    for (gpu_index, pid) in ctx.compute_processes() {
        let Some(job) = ctx.host_process(pid).and_then(|p| p.job.as_ref()).filter(|j| j.is_shared()) else {
            continue;
        };
        let Some(gpu) = ctx.history.gpu(gpu_index).filter(|_| !ctx.gpu_lost(gpu_index)) else { continue };
        let Some(rank) = RankGpu::of(ctx, gpu, pid, job.rank, secs) else { continue };
        match jobs.iter_mut().find(|j| j.key == job.key) {
            Some(j) => j.ranks.push(rank),
            None => jobs.push(JobRanks { key: job.key.clone(), ranks: vec![rank] }),
        }
    }
    jobs.retain(|j| {
        let first = j.ranks.first().map(|r| r.gpu);
        j.ranks.iter().any(|r| Some(r.gpu) != first)
    });
    jobs
}

/// rank-straggler: within one job across GPUs, ranks that wait against the rank that sets the pace. One finding
/// on the straggler's GPU and PID.
#[must_use]
pub fn rank_straggler(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for job in jobs(ctx, t.straggler_window_s) {
        let (waiting, pacing): (Vec<&RankGpu>, Vec<&RankGpu>) = job.ranks.iter().partition(|r| r.waiting(t));
        // The straggler: the rank that works least by NVML's count among those that do not wait.
        let Some(straggler) = pacing.iter().min_by(|a, b| a.util.unwrap_or(0.0).total_cmp(&b.util.unwrap_or(0.0)))
        else {
            continue;
        };
        if waiting.is_empty() {
            continue;
        }
        let waits: Vec<String> = waiting.iter().map(|w| format!("{}: {}", w.who(), w.numbers())).collect();
        let own = if straggler.throttled_share >= t.enter_share {
            "its own cause: its GPU is throttled (see the throttling findings)".to_owned()
        } else if straggler.computing(t) {
            format!(
                "its own cause: compute: its GPU works flat out ({}) while the others wait, so this rank has more \
                 work per step than they do",
                straggler.numbers()
            )
        } else {
            CAUSE_UNKNOWN.to_owned()
        };
        let finding = super::super::Finding {
            title: format!(
                "{} slows job {} down: {} for it",
                straggler.who(),
                visible(&job.key),
                if waiting.len() == 1 {
                    "1 other rank waits".to_owned()
                } else {
                    format!("{} other ranks wait", waiting.len())
                }
            ),
            evidence: format!(
                "the straggler {}: {} over {}; waiting (NCCL spinning) {}; {own}",
                straggler.who(),
                straggler.numbers(),
                straggler.span.label(),
                waits.join("; ")
            ),
            remedy: if straggler.computing(t) && straggler.throttled_share < t.enter_share {
                format!(
                    "Give {} the same work per step as the others: every rank runs at the pace of the slowest. \
                     Split the batch evenly, bucket sequences by length, move work done on one rank only \
                     (evaluation, logging, checkpointing) off the step.",
                    straggler.who()
                )
            } else {
                format!(
                    "Fix what slows {} (its own cause above): every rank runs at the pace of the slowest. Give every \
                     rank the same input pipeline (DataLoader num_workers, storage, CPU share) and check its GPU's \
                     clocks and link.",
                    straggler.who()
                )
            },
            explanation: "In data-parallel training every rank waits for the others at each collective. A rank \
                that waits shows high utilization (NCCL's kernels spin) and little SM activity, so it looks the \
                busiest; the rank that sets the pace looks idler. Tools that show ranks as unrelated processes \
                point at the wrong GPU."
                .to_owned(),
            ..draft(Rule::RankStraggler, Severity::Warning, Some(straggler.gpu), Some(straggler.pid), ctx.now_ms)
        };
        let finding = super::super::Finding { since_ms: straggler.span.window.first_ms, ..finding };
        out.push(Observation { finding, enter: straggler.span.covered, stay: true });
    }
    out
}

/// collective-hang: every rank of a job busy by NVML's count, with SM activity near 0 and no link traffic, over
/// the whole window. Critical: nothing moves until NCCL's watchdog aborts the job at its timeout.
#[must_use]
pub fn collective_hang(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for job in jobs(ctx, t.hang_window_s) {
        let quiet = |mib: Option<f64>| mib.is_none_or(|m| m <= t.hang_max_link_mib_s);
        let stuck = |r: &RankGpu| {
            r.util.is_some_and(|u| u >= t.hang_min_util_pct)
                && r.sm_active.is_some_and(|a| a <= t.hang_max_sm_active_pct)
                && quiet(r.pcie_mib_s)
                && quiet(r.nvlink_mib_s)
        };
        if !job.ranks.iter().all(stuck) {
            continue;
        }
        let Some(first) = job.ranks.iter().min_by_key(|r| (r.gpu, r.pid)) else { continue };
        let ranks: Vec<String> = job.ranks.iter().map(|r| format!("{}: {}", r.who(), r.numbers())).collect();
        let link = |m: Option<f64>| m.map_or_else(|| "N/A".to_owned(), |m| format!("{m:.1} MiB/s"));
        let traffic: Vec<String> = job
            .ranks
            .iter()
            .map(|r| format!("GPU {} PCIe {} NVLink {}", r.gpu, link(r.pcie_mib_s), link(r.nvlink_mib_s)))
            .collect();
        let finding = super::super::Finding {
            title: format!("Job {} is stuck in a collective: every rank spins with no work", visible(&job.key)),
            evidence: format!("over {}: {}; traffic {}", first.span.label(), ranks.join("; "), traffic.join(", ")),
            remedy: "The job is stuck in a collective; NCCL's watchdog aborts it only at its timeout. Find the rank \
                     that did not reach it (py-spy dump --pid on each rank; NCCL_DEBUG=INFO and \
                     TORCH_NCCL_TRACE_BUFFER_SIZE for the flight recorder), then stop the job and resume from its \
                     last checkpoint; a shorter process-group timeout fails such a job sooner."
                .to_owned(),
            explanation: "NCCL's kernels spin while they wait for the other ranks, so a job stuck in a collective \
                shows every GPU at 100 % utilization with its SMs idle and no data moving."
                .to_owned(),
            ..draft(Rule::CollectiveHang, Severity::Critical, Some(first.gpu), Some(first.pid), ctx.now_ms)
        };
        let finding = super::super::Finding { since_ms: first.span.window.first_ms, ..finding };
        out.push(Observation { finding, enter: first.span.covered, stay: true });
    }
    out
}
