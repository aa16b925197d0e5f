//! Helpers the rules share: the evaluation context, windows that know whether the history covers them, shares
//! of samples that satisfy a condition, aligning a process's samples with the machine's, and number formatting
//! for evidence lines.

use std::cell::OnceCell;

use crate::fast_map::FastMap;
use crate::history::{History, ProcessSeries, Readings, Window, window_of};
use crate::sample::{GpuInfo, HostProcess, JobInfo, MachineInfo, ProcessKind, UnixMs};

use super::Thresholds;

/// A job with ranks on several GPUs, and the PID of one of its ranks.
type RankOf<'a> = (&'a JobInfo, u32);

/// Everything a rule reads: the history, the thresholds and the time of the newest sample, plus lookups built
/// once per evaluation (so 8 GPUs × 1,000 processes stay cheap).
#[derive(Debug, Clone)]
pub struct Ctx<'a> {
    pub history: &'a History,
    pub t: &'a Thresholds,
    pub machine: &'a MachineInfo,
    pub now_ms: UnixMs,
    processes: FastMap<u32, &'a ProcessSeries>,
    host_processes: FastMap<u32, &'a HostProcess>,
    /// (GPU, PID) of the compute processes, sorted.
    compute: Vec<(u32, u32)>,
    /// The same pairs as (PID, GPU), sorted: a process's GPUs side by side, for rules that judge a process once.
    by_pid: Vec<(u32, u32)>,
    /// The multi-rank job of each GPU ([`Ctx::multi_rank_job`]), worked out the first time a rule asks.
    multi_rank: OnceCell<Vec<(u32, Option<RankOf<'a>>)>>,
    /// Whether any compute process is a rank of a shared job, and whether any lives outside gpusight's PID
    /// namespace: worked out the first time a rule asks, so rules skip their per-process walk when none is.
    any_shared_job: OnceCell<bool>,
    any_outside: OnceCell<bool>,
}

impl<'a> Ctx<'a> {
    /// A context over `history`, or `None` when it holds no sample yet.
    #[must_use]
    pub fn new(history: &'a History, t: &'a Thresholds) -> Option<Self> {
        let now_ms = history.now_ms()?;
        let mut processes: FastMap<u32, &'a ProcessSeries> =
            crate::fast_map::map_with_capacity(history.processes.len());
        for series in history.processes.values() {
            let newer = processes.get(&series.key.pid).is_none_or(|old| series.last_seen_ms() > old.last_seen_ms());
            if newer {
                processes.insert(series.key.pid, series);
            }
        }
        let mut compute: Vec<(u32, u32)> = history
            .latest()
            .gpu_processes
            .iter()
            .filter(|p| matches!(p.kind, ProcessKind::Compute | ProcessKind::ComputeAndGraphics))
            .filter_map(|p| p.pid.map(|pid| (p.gpu_index, pid)))
            .collect();
        compute.sort_unstable();
        compute.dedup();
        let mut by_pid: Vec<(u32, u32)> = compute.iter().map(|&(gpu, pid)| (pid, gpu)).collect();
        by_pid.sort_unstable();
        let host_processes = history.latest().processes.iter().map(|p| (p.pid, p)).collect();
        Some(Self {
            history,
            t,
            machine: history.machine().as_ref(),
            now_ms,
            processes,
            host_processes,
            compute,
            by_pid,
            multi_rank: OnceCell::new(),
            any_shared_job: OnceCell::new(),
            any_outside: OnceCell::new(),
        })
    }

    /// The newest series of the process with this PID (the live one if the PID was reused).
    #[must_use]
    pub fn process(&self, pid: u32) -> Option<&'a ProcessSeries> {
        self.processes.get(&pid).copied()
    }

    /// The static description of the GPU with this index.
    #[must_use]
    pub fn gpu_info(&self, index: u32) -> Option<&'a GpuInfo> {
        crate::sample::by_index(&self.machine.gpus, index, |g| g.index)
    }

    /// A window of the machine's samples over the last `secs`, and whether the history covers it.
    #[must_use]
    pub fn window(&self, secs: u64) -> Option<Span> {
        Span::of(&self.history.times, secs, self.t.min_window_coverage)
    }

    /// Host details of a process in the newest tick.
    #[must_use]
    pub fn host_process(&self, pid: u32) -> Option<&'a HostProcess> {
        self.host_processes.get(&pid).copied()
    }

    /// The (GPU, PID) pairs of compute processes in the newest tick, sorted.
    #[must_use]
    pub fn compute_processes(&self) -> Vec<(u32, u32)> {
        self.compute.clone()
    }

    /// [`Ctx::compute_processes`] without the copy.
    #[must_use]
    pub fn compute_pairs(&self) -> &[(u32, u32)] {
        &self.compute
    }

    /// The (GPU, PID) pairs of compute processes on the GPU with this index (a slice of [`Ctx::compute_pairs`]).
    #[must_use]
    pub fn compute_on(&self, gpu_index: u32) -> &[(u32, u32)] {
        let start = self.compute.partition_point(|(g, _)| *g < gpu_index);
        let end = self.compute.partition_point(|(g, _)| *g <= gpu_index);
        &self.compute[start..end]
    }

    /// Each compute process of the newest tick once, in PID order, with the GPUs it is on (ascending): for rules
    /// whose judgement of a process is the same on each of its GPUs (its series are one per process).
    pub fn compute_by_process(&self) -> impl Iterator<Item = (u32, impl Iterator<Item = u32> + '_)> + '_ {
        self.by_pid.chunk_by(|a, b| a.0 == b.0).map(|run| (run[0].0, run.iter().map(|&(_, gpu)| gpu)))
    }

    /// The job of a compute process on `gpu_index` that has ranks on other GPUs, with that process's PID
    /// (the rules' `jobs::multi_rank_job`), worked out once per evaluation for every GPU.
    #[must_use]
    pub fn multi_rank_job(&self, gpu_index: u32) -> Option<(&'a JobInfo, u32)> {
        let all = self
            .multi_rank
            .get_or_init(|| self.history.gpus.iter().map(|g| (g.index, self.find_multi_rank_job(g.index))).collect());
        match all.iter().find(|(g, _)| *g == gpu_index) {
            Some((_, job)) => *job,
            None => self.find_multi_rank_job(gpu_index),
        }
    }

    /// [`Ctx::multi_rank_job`] worked out from the newest tick's compute processes: its key is shared and its world
    /// has more than one rank (other nodes' ranks included), or another compute process of the same job holds
    /// another GPU here.
    fn find_multi_rank_job(&self, gpu_index: u32) -> Option<(&'a JobInfo, u32)> {
        if !self.any_shared_job() {
            return None;
        }
        let job_of = |pid: u32| self.host_process(pid).and_then(|p| p.job.as_ref()).filter(|j| j.is_shared());
        self.compute_on(gpu_index).iter().find_map(|&(_, pid)| {
            let job = job_of(pid)?;
            let elsewhere =
                || self.compute.iter().any(|&(g, p)| g != gpu_index && job_of(p).is_some_and(|o| o.key == job.key));
            (job.world_size.is_some_and(|w| w > 1) || elsewhere()).then_some((job, pid))
        })
    }

    /// How many compute processes the newest tick lists on the GPU with this index (a binary search: rules ask it
    /// once per process, and 8 GPUs each listing 1,000 processes would make a scan per process quadratic).
    #[must_use]
    pub fn compute_count_on(&self, gpu_index: u32) -> usize {
        self.compute_on(gpu_index).len()
    }

    /// Whether any compute process of the newest tick is a rank of a job shared with other processes
    /// ([`JobInfo::is_shared`]).
    #[must_use]
    pub fn any_shared_job(&self) -> bool {
        *self.any_shared_job.get_or_init(|| {
            self.compute_by_process()
                .any(|(pid, _)| self.host_process(pid).and_then(|p| p.job.as_ref()).is_some_and(JobInfo::is_shared))
        })
    }

    /// Whether any compute process of the newest tick lives outside gpusight's PID namespace (its host details
    /// say [`crate::host::OUTSIDE_NAMESPACE`]).
    #[must_use]
    pub fn any_outside(&self) -> bool {
        *self.any_outside.get_or_init(|| {
            self.compute_by_process().any(|(pid, _)| {
                self.host_process(pid).is_some_and(|p| p.unreadable.as_deref() == Some(crate::host::OUTSIDE_NAMESPACE))
            })
        })
    }

    /// Whether the GPU with this index is lost in the newest sample.
    #[must_use]
    pub fn gpu_lost(&self, index: u32) -> bool {
        self.history.gpu(index).is_some_and(|g| g.lost.last().copied().unwrap_or(false))
    }
}

/// A window over a time column, with its length in seconds and whether the data covers it.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub window: Window,
    pub secs: u64,
    /// Whether the samples span at least `min_window_coverage` of the window.
    pub covered: bool,
}

impl Span {
    /// The window of the last `secs` of `times`.
    #[must_use]
    pub fn of(times: &crate::history::Ring<UnixMs>, secs: u64, min_coverage: f64) -> Option<Self> {
        let span_ms = secs.saturating_mul(1000);
        let window = window_of(times, span_ms)?;
        let covered = window.len >= 2 && window.span_ms() as f64 >= span_ms as f64 * min_coverage;
        Some(Self { window, secs, covered })
    }

    /// The values of a series (aligned with this window's time column) inside the window.
    pub fn values<'s, T: Copy + 's>(&self, series: &'s impl Readings<T>) -> impl Iterator<Item = Option<T>> + 's {
        series.readings_from(self.window.start)
    }

    /// The share of the window's samples whose value is present and satisfies `pred`; gaps count against.
    #[must_use]
    pub fn share<T: Copy>(&self, series: &impl Readings<T>, pred: impl Fn(T) -> bool) -> f64 {
        share_of(self.values(series).map(|v| v.is_some_and(&pred)))
    }

    /// The mean of the present values of a series in the window.
    #[must_use]
    pub fn mean<T: Num>(&self, series: &impl Readings<T>) -> Option<f64> {
        let (mut sum, mut n) = (0.0, 0_u32);
        for v in self.values(series).flatten() {
            sum += v.as_f64();
            n += 1;
        }
        (n > 0).then(|| sum / f64::from(n))
    }

    /// The median of the present values of a series in the window.
    #[must_use]
    pub fn median<T: Num>(&self, series: &impl Readings<T>) -> Option<f64> {
        median(self.values(series))
    }

    /// The window's length for people: "30 s", "10 min".
    #[must_use]
    pub fn label(&self) -> String {
        duration_label(self.secs)
    }

    /// The length the samples actually cover, at most the window's: each of the `len` samples stands for one
    /// sampling interval, so 90 one-second samples cover "90 s" of a five-minute window.
    #[must_use]
    pub fn covered_secs(&self) -> u64 {
        let span_ms = self.window.span_ms();
        let intervals = (self.window.len as u64).saturating_sub(1);
        if intervals == 0 {
            return 0;
        }
        let covered_ms = span_ms + span_ms / intervals;
        ((covered_ms + 500) / 1000).min(self.secs)
    }

    /// The length the samples cover for people: the window's label once they cover all of it, "90 s" before.
    #[must_use]
    pub fn covered_label(&self) -> String {
        duration_label(self.covered_secs())
    }
}

/// A reading that can be turned into `f64` for statistics (byte counts included, which `Into<f64>` leaves out).
pub trait Num: Copy {
    /// The value as `f64` (byte counts above 2^53 lose precision, far beyond any memory size).
    fn as_f64(self) -> f64;
}

impl Num for u32 {
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Num for u64 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl Num for f32 {
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Num for f64 {
    fn as_f64(self) -> f64 {
        self
    }
}

/// The median of the present values.
pub fn median<T: Num>(values: impl IntoIterator<Item = Option<T>>) -> Option<f64> {
    crate::history::Stats::of(values.into_iter().map(|v| v.map(Num::as_f64))).map(|s| s.median)
}

/// The share of `true` in a sequence (0 when empty).
#[must_use]
pub fn share_of(flags: impl Iterator<Item = bool>) -> f64 {
    let (mut yes, mut all) = (0_u32, 0_u32);
    for flag in flags {
        all += 1;
        yes += u32::from(flag);
    }
    if all == 0 { 0.0 } else { f64::from(yes) / f64::from(all) }
}

/// For each sample of a process inside `span` (its own window), the index of the machine sample taken at the
/// same time. Process samples are pushed with the machine's, so every one has a match; a walk finds them.
#[must_use]
pub fn align(history: &History, process: &ProcessSeries, span: &Span) -> Vec<(usize, Option<usize>)> {
    let mut pairs = Vec::with_capacity(span.window.len);
    pairs.extend(align_iter(history, process, span));
    pairs
}

/// [`align`] without the vector: the pairs one at a time, for rules that can decide without keeping them.
pub fn align_iter<'h>(
    history: &'h History,
    process: &'h ProcessSeries,
    span: &Span,
) -> impl Iterator<Item = (usize, Option<usize>)> + 'h {
    let times = &history.times;
    let start = span.window.start;
    let first_ms = process.times.get(start).copied();
    let now_ms = history.now_ms();
    let mut m = match (first_ms, now_ms) {
        (Some(first_ms), Some(now_ms)) => {
            window_of(times, now_ms.saturating_sub(first_ms)).map_or(times.len(), |w| w.start)
        }
        // Nothing to align: an empty walk.
        _ => times.len(),
    };
    let n = if first_ms.is_some() && now_ms.is_some() { span.window.len } else { 0 };
    process.times.iter_from(start).take(n).enumerate().map(move |(offset, t)| {
        while times.get(m).is_some_and(|mt| mt < t) {
            m += 1;
        }
        let matched = times.get(m).is_some_and(|mt| mt == t).then_some(m);
        (start + offset, matched)
    })
}

/// The value of a series at an index, flattening gaps and missing indices.
#[must_use]
pub fn at<T: Copy>(series: &impl Readings<T>, index: Option<usize>) -> Option<T> {
    index.and_then(|i| series.reading(i))
}

/// The labels advice evidence is written with live in [`crate::units`], with every other output's units.
pub use crate::units::{bytes_label, duration_label, pct_label, share_label};

/// Bytes per MiB, for thresholds given in MiB.
pub const MIB: f64 = 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_well() {
        assert_eq!(duration_label(30), "30 s");
        assert_eq!(duration_label(600), "10 min");
        assert_eq!(duration_label(5400), "1 h 30 min");
        assert_eq!(bytes_label(20.5 * 1024.0 * MIB), "20.5 GiB");
        assert_eq!(bytes_label(380.0 * MIB), "380 MiB");
        assert_eq!(pct_label(36.8), "37 %");
        assert_eq!(pct_label(2.04), "2.0 %");
        assert_eq!(share_label(0.4), "40 %");
    }

    #[test]
    fn compute_processes_are_counted_per_gpu() {
        let history = crate::advice::testkit::Build::new("mixed:8x10").history(2);
        let t = Thresholds::default();
        let ctx = Ctx::new(&history, &t).expect("a sample");
        let pairs = ctx.compute_processes();
        assert!(!pairs.is_empty());
        for gpu in 0..9 {
            assert_eq!(ctx.compute_count_on(gpu), pairs.iter().filter(|(g, _)| *g == gpu).count(), "GPU {gpu}");
        }
    }

    #[test]
    fn share_counts_gaps_against() {
        assert!((share_of([true, false, true, true].into_iter()) - 0.75).abs() < 1e-9);
        assert!(share_of(std::iter::empty()).abs() < 1e-9);
    }
}
