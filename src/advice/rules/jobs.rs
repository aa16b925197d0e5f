//! Jobs over several GPUs, one rank per GPU: rank-straggler and collective-hang.
//!
//! The ranks of one job (processes with the same job key, see `host::job`) wait for each other at every collective.
//! A rank that waits shows HIGH NVML utilization (NCCL's kernels spin while they wait) with LOW GPM SM activity; the
//! rank that sets the pace shows lower utilization, its SM activity real work, or it waits on its own input. So the
//! busiest-looking GPU is a waiting one and the real culprit looks idle. When every rank spins with no work and no
//! traffic for a while, the job is stuck in a collective; a rank with no GPU work whose main thread pegs a core is
//! busy on the CPU (evaluation on one rank), a straggler the others wait for, not a hang.

use super::super::window::{Ctx, MIB, Span, pct_label};
use super::super::{Observation, Rule, Severity, Thresholds};
use super::draft;
use crate::history::GpuSeries;
use crate::sample::JobInfo;
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
    /// The process's busiest thread over the window (median, % of one core; the whole process where threads were
    /// not read), and whether that thread is its main thread.
    cpu: Option<f64>,
    main_thread: bool,
}

/// A rank whose GPU shows no work and whose busiest thread is below this (% of one core) is blocked, not busy:
/// what a rank waiting in a gloo collective or a barrier on the CPU shows.
const BLOCKED_MAX_CPU_PCT: f64 = 30.0;

/// Points of NVML utilization within which two ranks count as equally busy: the driver samples utilization over
/// periods of 1/6 s to 1 s, so two GPUs that both run kernels all the time read anywhere from 97 to 100 % (a
/// rank waiting for a thermally throttled one read 99 % beside its 100 %, and was not called a waiter).
const UTIL_NOISE_PCT: f64 = 3.0;

/// A job with ranks on at least two GPUs.
#[derive(Debug, Clone)]
struct JobRanks {
    key: String,
    /// The name people read (`host::job::display_name` over its first rank's command line).
    name: String,
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
        let own = ctx.process(pid).and_then(|p| Span::of(&p.times, secs, ctx.t.min_window_coverage).map(|s| (p, s)));
        let cpu = own.and_then(|(p, s)| s.median(&p.max_thread_cpu_pct).or_else(|| s.median(&p.cpu_pct)));
        let main_thread = ctx.host_process(pid).and_then(|h| h.busiest_thread.as_ref()).is_none_or(|b| b.tid == pid);
        Some(Self {
            gpu: gpu.index,
            pid,
            rank,
            cpu,
            main_thread,
            span,
            util: span.mean(&gpu.util_pct),
            sm_active: span.mean(&gpu.sm_active_pct),
            power_pct: power.zip(limit).map(|(p, l)| p / l * 100.0),
            pcie_mib_s: pcie,
            nvlink_mib_s: nvlink,
            throttled_share: span.share(&gpu.throttle_bits, |b| b & super::signals::THROTTLE_REASONS != 0),
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

    /// The rank's work for comparing the ranks of one job: GPM SM activity, or without GPM power as a share of the
    /// limit (`gpm` says which, the same for every rank).
    fn work(&self, gpm: bool) -> Option<f64> {
        if gpm { self.sm_active } else { self.power_pct }
    }

    /// Whether the rank waits for `pace`, a rank of the same job that works harder each step: it is at least as
    /// busy by NVML's count (its NCCL kernels spin through the time `pace` still computes) and does at most
    /// `straggler_relative_max_ratio` of `pace`'s work. What a rank that waits half of every step shows: measured on
    /// two H200s, SM activity 43 % at 90 % utilization beside 65 % at 81 %.
    fn waits_for(&self, pace: &Self, gpm: bool, t: &Thresholds) -> bool {
        let busy = self
            .util
            .zip(pace.util)
            .is_some_and(|(u, p)| u >= t.straggler_waiting_min_util_pct && u >= p - UTIL_NOISE_PCT);
        let less =
            self.work(gpm).zip(pace.work(gpm)).is_some_and(|(w, p)| p > 0.0 && w <= p * t.straggler_relative_max_ratio);
        busy && less
    }

    /// Whether the rank's GPU does real work: SM activity (or, without GPM, power) high enough for compute to be
    /// what sets its pace.
    fn computing(&self, t: &Thresholds) -> bool {
        match self.sm_active {
            Some(a) => a >= t.straggler_compute_min_sm_active_pct,
            None => self.power_pct.is_some_and(|p| p >= t.straggler_compute_min_power_pct),
        }
    }

    /// Whether the rank shows no GPU work at all: it is not in the step (stuck on the CPU, in I/O, or never
    /// reached the collective the others wait in).
    fn absent(&self, t: &Thresholds) -> bool {
        self.util.is_some_and(|u| u <= t.hang_max_absent_util_pct)
    }

    /// Whether the rank spins in a collective: busy by NVML's count with SM activity no higher than NCCL's spinning
    /// kernels give (18 % on an H200: one SM per channel) and no data moving. Without GPM no verdict: a spinning
    /// kernel cannot be told from work.
    fn spinning(&self, t: &Thresholds) -> bool {
        self.util.is_some_and(|u| u >= t.hang_min_util_pct)
            && self.sm_active.is_some_and(|a| a <= t.hang_max_sm_active_pct)
            && self.quiet(t)
    }

    /// Whether the rank is busy on the CPU instead of in the step: no GPU work while its busiest thread pegs a
    /// core (evaluation metrics, a checkpoint's preparation or logging on this rank alone). Not a hang: it will
    /// come back.
    fn cpu_busy(&self, t: &Thresholds) -> bool {
        self.absent(t) && self.cpu.is_some_and(|c| c >= t.pegged_core_pct)
    }

    /// Whether the rank waits with no GPU work and a quiet CPU: blocked in a collective or barrier on the CPU (gloo).
    fn blocked(&self, t: &Thresholds) -> bool {
        self.absent(t) && self.cpu.is_some_and(|c| c < BLOCKED_MAX_CPU_PCT)
    }

    /// "main thread at 100 %".
    fn cpu_label(&self) -> String {
        let which = if self.main_thread { "main thread" } else { "busiest thread" };
        format!("{which} at {}", self.cpu.map_or_else(|| "N/A".to_owned(), pct_label))
    }

    /// Whether no data moves over PCIe, or NVLink where read.
    fn quiet(&self, t: &Thresholds) -> bool {
        let quiet = |mib: Option<f64>| mib.is_none_or(|m| m <= t.hang_max_link_mib_s);
        quiet(self.pcie_mib_s) && quiet(self.nvlink_mib_s)
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

/// The job of a compute process on `gpu_index` that has ranks on other GPUs, with that process's PID: its key is
/// shared and its world has more than one rank (other nodes' ranks included), or another compute process of the
/// same job holds another GPU here. Worked out once per evaluation ([`Ctx::multi_rank_job`]).
pub(crate) fn multi_rank_job<'a>(ctx: &Ctx<'a>, gpu_index: u32) -> Option<(&'a JobInfo, u32)> {
    ctx.multi_rank_job(gpu_index)
}

/// The name people read for `job`, over the command line of its rank `pid` (the key stays its identity).
pub(crate) fn job_name(ctx: &Ctx<'_>, job: &JobInfo, pid: u32) -> String {
    crate::host::job::display_name(job, ctx.host_process(pid).map_or("", |h| h.cmdline.as_str()))
}

/// The jobs whose ranks hold compute contexts on at least two GPUs now, each rank with its GPU's window.
fn jobs(ctx: &Ctx<'_>, secs: u64) -> Vec<JobRanks> {
    let mut jobs: Vec<JobRanks> = Vec::new();
    if !ctx.any_shared_job() {
        return jobs;
    }
    for (gpu_index, pid) in ctx.compute_processes() {
        let host = ctx.host_process(pid);
        let Some(job) = host.and_then(|p| p.job.as_ref()).filter(|j| j.is_shared()) else {
            continue;
        };
        let Some(gpu) = ctx.history.gpu(gpu_index).filter(|_| !ctx.gpu_lost(gpu_index)) else { continue };
        let Some(rank) = RankGpu::of(ctx, gpu, pid, job.rank, secs) else { continue };
        if let Some(j) = jobs.iter_mut().find(|j| j.key == job.key) {
            j.ranks.push(rank);
        } else {
            let name = crate::host::job::display_name(job, host.map_or("", |h| h.cmdline.as_str()));
            jobs.push(JobRanks { key: job.key.clone(), name, ranks: vec![rank] });
        }
    }
    jobs.retain(|j| {
        let first = j.ranks.first().map(|r| r.gpu);
        j.ranks.iter().any(|r| Some(r.gpu) != first)
    });
    jobs
}

/// How a straggler was found: against ranks that spin with little SM work, or against ranks that do less work
/// than it at the same or higher utilization (it has more work per step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Waiting,
    MoreWork,
    /// The straggler shows no GPU work with a core pegged: it is busy on the CPU while the others wait.
    CpuBusy,
}

/// The straggler of a job and the ranks that wait for it, if any.
fn straggler_of<'j>(job: &'j JobRanks, t: &Thresholds) -> Option<(&'j RankGpu, Vec<&'j RankGpu>, Found)> {
    // A rank busy on the CPU while every other rank waits for it (spinning in NCCL, or blocked on the CPU).
    let (busy, others): (Vec<&RankGpu>, Vec<&RankGpu>) = job.ranks.iter().partition(|r| r.cpu_busy(t));
    if let Some(first) = lowest(&busy)
        && !others.is_empty()
        && others.iter().all(|r| r.waiting(t) || r.spinning(t) || r.blocked(t))
    {
        return Some((first, others, Found::CpuBusy));
    }
    let (waiting, pacing): (Vec<&RankGpu>, Vec<&RankGpu>) = job.ranks.iter().partition(|r| r.waiting(t));
    if !waiting.is_empty() {
        // The rank that works least by NVML's count among those that do not wait.
        let straggler = pacing.into_iter().min_by(|a, b| a.util.unwrap_or(0.0).total_cmp(&b.util.unwrap_or(0.0)))?;
        return Some((straggler, waiting, Found::Waiting));
    }
    // No rank spins idle: a rank with more work per step shows the most SM activity (or power) while the others,
    // at the same or higher utilization, do less.
    let gpm = job.ranks.iter().all(|r| r.sm_active.is_some());
    let pace = job
        .ranks
        .iter()
        .filter(|r| r.work(gpm).is_some())
        .max_by(|a, b| a.work(gpm).unwrap_or(0.0).total_cmp(&b.work(gpm).unwrap_or(0.0)))?;
    let waiting: Vec<&RankGpu> =
        job.ranks.iter().filter(|r| !std::ptr::eq(*r, pace) && r.waits_for(pace, gpm, t)).collect();
    (!waiting.is_empty()).then_some((pace, waiting, Found::MoreWork))
}

/// The straggler's own cause as far as the job's numbers tell, and whether it is compute; [`CAUSE_UNKNOWN`] lets
/// `advice::name_the_cause` name another rule's.
fn own_cause(straggler: &RankGpu, found: Found, t: &Thresholds) -> (String, bool) {
    if found == Found::CpuBusy {
        let text = format!(
            "its own cause: it is busy on the CPU, not in the step: its {} of one core (median) with no GPU work \
             (evaluation metrics, a checkpoint's preparation or logging on this rank alone); not a hang: a rank \
             that works comes back",
            straggler.cpu_label()
        );
        return (text, false);
    }
    if straggler.throttled_share >= t.enter_share {
        return ("its own cause: its GPU is throttled (see the throttling findings)".to_owned(), false);
    }
    if found == Found::MoreWork {
        let text = "its own cause: compute: it does more SM work than the ranks that wait for it while they are as \
                    busy or busier (their NCCL kernels spin through the rest of each step), so it has more work per \
                    step";
        return (text.to_owned(), true);
    }
    if straggler.computing(t) {
        let text = format!(
            "its own cause: compute: its GPU works flat out ({}) while the others wait, so this rank has more work \
             per step than they do",
            straggler.numbers()
        );
        return (text, true);
    }
    if straggler.absent(t) {
        let text = format!(
            "it shows no GPU work: it is not in the step (on the CPU, in I/O, or a checkpoint or evaluation on this \
             rank alone; collective-hang follows if it stays so for {}); {CAUSE_UNKNOWN}",
            crate::units::duration_label(t.hang_window_s)
        );
        return (text, false);
    }
    (CAUSE_UNKNOWN.to_owned(), false)
}

/// rank-straggler: within one job across GPUs, ranks that wait against the rank that sets the pace. One finding
/// on the straggler's GPU and PID. A job that collective-hang holds gets that verdict instead.
#[must_use]
pub fn rank_straggler(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let hung: Vec<String> = jobs(ctx, t.hang_window_s)
        .into_iter()
        .filter(|j| j.ranks.iter().all(|r| r.span.covered) && hang_of(ctx, j).is_some())
        .map(|j| j.key)
        .collect();
    let mut out = Vec::new();
    for job in jobs(ctx, t.straggler_window_s).iter().filter(|j| !hung.contains(&j.key)) {
        let Some((straggler, waiting, found)) = straggler_of(job, t) else { continue };
        let waits: Vec<String> = waiting.iter().map(|w| format!("{}: {}", w.who(), w.numbers())).collect();
        let (own, compute) = own_cause(straggler, found, t);
        let finding = super::super::Finding {
            title: straggler_title(straggler, &waiting, found, &job.name),
            evidence: format!(
                "the straggler {}: {} over {}; waiting (NCCL spinning) {}; {own}",
                straggler.who(),
                straggler.numbers(),
                straggler.span.label(),
                waits.join("; ")
            ),
            remedy: if found == Found::CpuBusy {
                format!(
                    "Take the CPU work off {}'s step, or share it: compute evaluation metrics on the GPU or on every \
                     rank (each its shard, then all_reduce), or hand them to a background process; py-spy dump \
                     --pid {} shows what it does. If the phase must stay, keep the process-group timeout above its \
                     length so the waiting ranks do not abort the job.",
                    straggler.who(),
                    straggler.pid
                )
            } else if compute {
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
                that waits shows high utilization (NCCL's kernels spin) and less SM activity, so it looks the \
                busiest; the rank that sets the pace looks idler, or, when it has more work per step, does more \
                SM work at a lower utilization. Tools that show ranks as unrelated processes point at the wrong GPU."
                .to_owned(),
            ..draft(Rule::RankStraggler, Severity::Warning, Some(straggler.gpu), Some(straggler.pid), ctx.now_ms)
        };
        let finding = super::super::Finding { since_ms: straggler.span.window.first_ms, ..finding };
        out.push(Observation { finding, enter: straggler.span.covered, stay: true });
    }
    out
}

/// The straggler's title: "rank 0 (GPU 0, PID 2001) is busy on the CPU (main thread at 100 %) while rank 1 waits",
/// else "rank 1 (GPU 1, PID 3001) slows job K down: 1 other rank waits for it".
fn straggler_title(straggler: &RankGpu, waiting: &[&RankGpu], found: Found, name: &str) -> String {
    if found == Found::CpuBusy {
        let mut ranks: Vec<String> =
            waiting.iter().map(|w| w.rank.map_or_else(|| format!("PID {}", w.pid), |r| r.to_string())).collect();
        ranks.truncate(4);
        let more = if waiting.len() > 4 { ", ..." } else { "" };
        let who = if waiting.len() == 1 { "rank" } else { "ranks" };
        let verb = if waiting.len() == 1 { "waits" } else { "wait" };
        return format!(
            "{} is busy on the CPU ({}) while {who} {}{more} {verb}",
            straggler.who(),
            straggler.cpu_label(),
            ranks.join(", ")
        );
    }
    let others = if waiting.len() == 1 {
        "1 other rank waits".to_owned()
    } else {
        format!("{} other ranks wait", waiting.len())
    };
    format!("{} slows job {} down: {others} for it", straggler.who(), visible(name))
}

/// A hung job's ranks over the hang window: those that spin in the collective and those that never joined it.
struct Hang<'j> {
    spinning: Vec<&'j RankGpu>,
    absent: Vec<&'j RankGpu>,
}

/// Whether a job is stuck: every rank spins with no work and no traffic, or shows no GPU work at all, at least one
/// spins, and no absent rank writes a checkpoint or pegs a core on the CPU (a rank saving a checkpoint or computing
/// evaluation metrics while the others wait is slow, not stuck: rank-straggler's verdict).
fn hang_of<'j>(ctx: &Ctx<'_>, job: &'j JobRanks) -> Option<Hang<'j>> {
    let t = ctx.t;
    let (spinning, rest): (Vec<&RankGpu>, Vec<&RankGpu>) = job.ranks.iter().partition(|r| r.spinning(t));
    // A rank busy on the CPU (its main thread pegged) is slow, not stuck: rank-straggler names it.
    if spinning.is_empty() || !rest.iter().all(|r| r.absent(t) && r.quiet(t) && !r.cpu_busy(t)) {
        return None;
    }
    let checkpoint =
        |r: &RankGpu| super::signals::ProcWindow::of(ctx, r.pid, t.hang_window_s).is_some_and(|w| w.writes_dominate(t));
    if rest.iter().any(|r| checkpoint(r)) {
        return None;
    }
    Some(Hang { spinning, absent: rest })
}

/// Every rank of the job on `gpu_index` waits in its collectives (busy by NVML's count, little SM work) while data
/// moves over PCIe or NVLink: no rank sets the pace, they all wait for the job's communication, whatever its
/// transport (NCCL over TCP sockets copies through the host, so PCIe moves too). The evidence per rank, or `None`.
pub(crate) fn all_ranks_wait_for_data(ctx: &Ctx<'_>, gpu_index: u32) -> Option<String> {
    let t = ctx.t;
    let job = jobs(ctx, t.window_s).into_iter().find(|j| j.ranks.iter().any(|r| r.gpu == gpu_index))?;
    let moving = job.ranks.iter().any(|r| !r.quiet(t));
    if !moving || !job.ranks.iter().all(|r| r.waiting(t) && r.span.covered) {
        return None;
    }
    let link = |m: Option<f64>| m.map_or_else(|| "N/A".to_owned(), |m| format!("{m:.0} MiB/s"));
    let ranks: Vec<String> = job
        .ranks
        .iter()
        .map(|r| format!("{}: {}, PCIe {}, NVLink {}", r.who(), r.numbers(), link(r.pcie_mib_s), link(r.nvlink_mib_s)))
        .collect();
    Some(format!(
        "every rank of job {} waits in its collectives while data moves: {}",
        visible(&job.name),
        ranks.join("; ")
    ))
}

/// The rank on the lowest GPU (then PID) of a list.
fn lowest<'j>(ranks: &[&'j RankGpu]) -> Option<&'j RankGpu> {
    ranks.iter().min_by_key(|r| (r.gpu, r.pid)).copied()
}

/// collective-hang: the job makes no progress over the whole window: every rank spins in a collective (busy by
/// NVML's count, SM activity at NCCL's spinning level, no link traffic), or shows no GPU work at all because it
/// never reached the collective (and is not busy on the CPU). Critical: nothing moves until NCCL's watchdog aborts
/// the job at its timeout.
#[must_use]
pub fn collective_hang(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for job in jobs(ctx, t.hang_window_s) {
        let Some(hang) = hang_of(ctx, &job) else { continue };
        // The finding sits on the rank to look at: the first that never joined, else the lowest GPU's.
        let Some(first) = lowest(&hang.absent).or_else(|| lowest(&hang.spinning)) else { continue };
        let list = |rs: &[&RankGpu]| rs.iter().map(|r| format!("{}: {}", r.who(), r.numbers())).collect::<Vec<_>>();
        let link = |m: Option<f64>| m.map_or_else(|| "N/A".to_owned(), |m| format!("{m:.1} MiB/s"));
        let traffic: Vec<String> = job
            .ranks
            .iter()
            .map(|r| format!("GPU {} PCIe {} NVLink {}", r.gpu, link(r.pcie_mib_s), link(r.nvlink_mib_s)))
            .collect();
        let (title, absent) = if hang.absent.is_empty() {
            (
                format!("Job {} is stuck in a collective: every rank spins with no work", visible(&job.name)),
                String::new(),
            )
        } else {
            let who: Vec<String> = hang.absent.iter().map(|r| r.who()).collect();
            (
                format!("Job {} is stuck in a collective: {} never joined it", visible(&job.name), who.join(", ")),
                format!("; no GPU work (not in the collective): {}", list(&hang.absent).join("; ")),
            )
        };
        let finding = super::super::Finding {
            title,
            evidence: format!(
                "over {}: spinning in the collective: {}{absent}; traffic {}",
                first.span.label(),
                list(&hang.spinning).join("; "),
                traffic.join(", ")
            ),
            remedy: format!(
                "The job is stuck in a collective; NCCL's watchdog aborts it only at its timeout. Find where {} \
                 is (py-spy dump --pid {}; NCCL_DEBUG=INFO and TORCH_NCCL_TRACE_BUFFER_SIZE for the flight \
                 recorder), then stop the job and resume from its last checkpoint; a shorter process-group timeout \
                 fails such a job sooner.",
                first.who(),
                first.pid
            ),
            explanation: "NCCL's kernels spin while they wait for the other ranks: a rank in a collective that \
                cannot complete shows 100 % utilization with its SMs nearly idle (one SM per NCCL channel) and no \
                data moving, while a rank that never reached the collective shows no GPU work at all."
                .to_owned(),
            ..draft(Rule::CollectiveHang, Severity::Critical, Some(first.gpu), Some(first.pid), ctx.now_ms)
        };
        let finding = super::super::Finding { since_ms: first.span.window.first_ms, ..finding };
        out.push(Observation { finding, enter: first.span.covered, stay: true });
    }
    out
}
