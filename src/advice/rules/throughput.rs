//! Is the job compute-bound or input-bound? input-bound, cpu-bound-input, main-thread-bound and util-misleading.
//!
//! System iowait alone cannot tell: one starved process on 16 CPUs reads 2 % iowait (measured on an H200). The rules
//! read the GPU process's own signals instead: D state together with reads (process, threads, DataLoader
//! children), the read and write rates of the process tree, PSI io, and per-thread CPU. Starvation is the *mean*
//! utilization over the window, so a job that waits 2 s of every 3 is seen even though a third of its 1 s samples
//! read 100 %.

use super::super::place::Place;
use super::super::window::{
    Ctx, MIB, Num, Span, align_iter, at, bytes_label, duration_label, median, pct_label, share_label, share_of,
};
use super::super::{Observation, Rule, Severity};
use super::{draft, first_true};
use crate::history::{InputSample, ProcessSeries, Readings};
use crate::sample::ProcessRole;

/// Per-sample signals of one GPU process, aligned with its GPU's and the host's samples.
pub(super) struct ProcessSamples {
    pub(super) span: Span,
    /// Where the process works, for people: "GPU 0", or "GPU 0 slice 1g.18gb (GI 7)" on a MIG GPU.
    pub(super) at: String,
    /// Its slice's GPU instance id, on a MIG GPU.
    pub(super) gpu_instance_id: Option<u32>,
    /// Judge the GPU's work by SM activity: its utilization may be NCCL spinning (see [`spin_inflated`]).
    pub(super) by_sm: bool,
    pub(super) times: Vec<u64>,
    pub(super) util: Vec<Option<u32>>,
    pub(super) sm_active: Vec<Option<f32>>,
    pub(super) self_in_d: Vec<bool>,
    pub(super) child_in_d: Vec<bool>,
    pub(super) read: Vec<Option<u64>>,
    pub(super) write: Vec<Option<u64>>,
    pub(super) cpu: Vec<Option<f32>>,
    pub(super) thread_cpu: Vec<Option<f32>>,
    pub(super) child_cpu: Vec<Option<f32>>,
    pub(super) psi_io: Vec<Option<f32>>,
    pub(super) iowait: Vec<Option<f32>>,
    pub(super) host_busy: Vec<Option<f32>>,
    /// Threads of the process and its `DataLoader` children in D at each sample.
    pub(super) d_count: Vec<u32>,
    /// The input path's record at each sample (workers, waits by kind, remote files by mode).
    pub(super) input: Vec<Option<InputSample>>,
    /// `PCIe` TX of the GPU (device to host), KB/s.
    pub(super) tx_kbps: Vec<Option<u32>>,
    /// `DataLoader` workers now, whether they worked in the window or not (compile workers left out).
    pub(super) children_now: u32,
}

/// A GPU process, its GPU and its window: what both rules need before they look at the samples.
struct Subject<'a> {
    process: &'a ProcessSeries,
    /// The GPU, or on a MIG GPU the process's slice, whose work is judged.
    place: Place<'a>,
    span: Span,
}

/// The mean of the present values (None when there are none).
fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0_u32);
    for v in values.flatten() {
        sum += v;
        n += 1;
    }
    (n > 0).then(|| sum / f64::from(n))
}

impl<'a> Subject<'a> {
    fn of(ctx: &Ctx<'a>, gpu_index: u32, pid: u32) -> Option<Self> {
        let process = ctx.process(pid)?;
        let place = ctx.place(gpu_index, pid)?;
        let span = Span::of(&process.times, ctx.t.window_s, ctx.t.min_window_coverage)?;
        Some(Self { process, place, span })
    }

    /// The places (GPUs, and on a MIG GPU its slices, see [`Ctx::places`]) whose mean utilization over the
    /// machine's `window_s` window is low enough for an input rule to hold (below `starved_exit_util_pct`). A
    /// compute process's window ends at the newest sample and spans at most `window_s`, so on a GPU that is busy on
    /// average no process is starved and neither rule looks further: at 8 GPUs × 1,000 busy processes almost every
    /// process stops here.
    fn starved_places(ctx: &Ctx<'_>) -> Vec<(u32, Option<u32>)> {
        let Some(span) = ctx.window(ctx.t.window_s) else { return Vec::new() };
        let low = |place: &Place<'_>| {
            let util = place.util().and_then(|u| mean(span.values(u).map(|u| u.map(f64::from))));
            let active = mean(span.values(place.sm_active()).map(|u| u.map(f64::from)));
            let work = if spin_inflated(ctx, place.gpu_index) { active.or(util) } else { util.or(active) };
            work.is_some_and(|m| m < ctx.t.starved_exit_util_pct)
        };
        ctx.places().iter().filter(|p| low(p)).map(Place::key).collect()
    }
}

/// Whether a GPU's utilization may be NCCL's kernels spinning: it holds a rank of a job over several GPUs (other
/// nodes' included) and GPM reads SM activity. There the work is judged by SM activity, which the spin does not
/// inflate, so an input-bound rank is not hidden behind its collectives' waits.
fn spin_inflated(ctx: &Ctx<'_>, gpu_index: u32) -> bool {
    ctx.history.gpu(gpu_index).is_some_and(|g| g.sm_active_pct.last_reading().is_some())
        && super::jobs::multi_rank_job(ctx, gpu_index).is_some()
}

impl ProcessSamples {
    fn read(ctx: &Ctx<'_>, subject: &Subject<'_>) -> Self {
        let Subject { process, place, span } = *subject;
        let host = &ctx.history.host;
        let n = span.window.len;
        let mut s = Self {
            span,
            at: place.label(),
            gpu_instance_id: place.gpu_instance_id(),
            by_sm: spin_inflated(ctx, place.gpu_index),
            times: Vec::with_capacity(n),
            util: Vec::with_capacity(n),
            sm_active: Vec::with_capacity(n),
            self_in_d: Vec::with_capacity(n),
            child_in_d: Vec::with_capacity(n),
            read: Vec::with_capacity(n),
            write: Vec::with_capacity(n),
            cpu: Vec::with_capacity(n),
            thread_cpu: Vec::with_capacity(n),
            child_cpu: Vec::with_capacity(n),
            psi_io: Vec::with_capacity(n),
            iowait: Vec::with_capacity(n),
            host_busy: Vec::with_capacity(n),
            d_count: Vec::with_capacity(n),
            input: Vec::with_capacity(n),
            tx_kbps: Vec::with_capacity(n),
            children_now: 0,
        };
        for (p, m) in align_iter(ctx.history, process, &span) {
            s.times.push(process.times.get(p).copied().unwrap_or(0));
            s.util.push(place.util().and_then(|u| at(u, m)));
            s.sm_active.push(at(place.sm_active(), m));
            let own_d = at(&process.state, Some(p)) == Some('D') || at(&process.threads_in_d, Some(p)).unwrap_or(0) > 0;
            s.self_in_d.push(own_d);
            s.child_in_d.push(at(&process.children_in_d, Some(p)).unwrap_or(0) > 0);
            s.read.push(at(&process.tree_read_bytes_per_s, Some(p)));
            s.write.push(at(&process.tree_write_bytes_per_s, Some(p)));
            s.cpu.push(at(&process.cpu_pct, Some(p)));
            s.thread_cpu.push(at(&process.max_thread_cpu_pct, Some(p)));
            s.child_cpu.push(at(&process.max_child_cpu_pct, Some(p)));
            s.psi_io.push(at(&host.psi_io_some, m));
            s.iowait.push(at(&host.iowait_pct, m));
            s.host_busy.push(at(&host.cpu_busy_pct, m));
            let own = at(&process.threads_in_d, Some(p)).unwrap_or(0).max(u32::from(own_d));
            s.d_count.push(own + at(&process.children_in_d, Some(p)).unwrap_or(0));
            s.input.push(at(&process.input, Some(p)));
            s.tx_kbps.push(place.pcie_tx().and_then(|tx| at(tx, m)));
        }
        let all = process.n_children.last_reading().unwrap_or(0);
        let compile = process.input.last_reading().map_or(0, |i| u32::from(i.compile_workers));
        s.children_now = all.saturating_sub(compile);
        s
    }

    /// The `DataLoader` workers that fed the GPU: the most that did work at one sample of the window (an idle
    /// persistent worker of an evaluation loader is not one; compile workers never are). Where no input record
    /// exists, the children now.
    pub(super) fn workers(&self) -> u32 {
        self.input.iter().flatten().map(|i| u32::from(i.busy_workers)).max().unwrap_or(self.children_now)
    }

    /// "10 DataLoader workers" or, with idle ones, "10 DataLoader workers (4 idle, not counted)".
    pub(super) fn workers_label(&self) -> String {
        let workers = self.workers();
        let idle = self.children_now.saturating_sub(workers);
        let plural = if workers == 1 { "" } else { "s" };
        if idle > 0 {
            format!("{workers} DataLoader worker{plural} ({idle} idle, not counted)")
        } else {
            format!("{workers} DataLoader worker{plural}")
        }
    }

    /// Per sample: whether every thread of the tree in D is accounted for by a wait on writes: dirty-page
    /// throttling or writeback, or a network file system wait while the tree's remote files are all open for
    /// writing (a log on an NFS home, a checkpoint on Lustre). Such a sample is not input waiting for storage.
    fn d_by_writes(&self, i: usize) -> bool {
        let (Some(input), d) = (self.input[i], self.d_count[i]) else { return false };
        let write_only_remote = input.remote_read_only == Some(0) && input.remote_written.unwrap_or(0) > 0;
        let fs = if write_only_remote { input.fs_waits.unwrap_or(0) } else { 0 };
        d > 0 && u32::from(input.write_waits.unwrap_or(0)) + u32::from(fs) >= d
    }

    /// Mean `PCIe` TX (device to host) in MiB/s.
    fn d2h_mib_s(&self) -> Option<f64> {
        mean(self.tx_kbps.iter().map(|v| v.map(|kb| f64::from(kb) * 1000.0 / MIB)))
    }

    pub(super) fn share(flags: &[bool]) -> f64 {
        share_of(flags.iter().copied())
    }

    pub(super) fn median<T: Num>(values: &[Option<T>]) -> Option<f64> {
        median(values.iter().copied())
    }

    /// How much the GPU worked at each sample: utilization, or SM activity where it is N/A (a MIG slice).
    fn work(&self) -> impl Iterator<Item = Option<f64>> + '_ {
        self.util.iter().zip(&self.sm_active).map(|(u, a)| u.map(f64::from).or(a.map(f64::from)))
    }

    /// Mean GPU utilization over the window; GPM SM activity where NVML utilization is N/A (MIG).
    fn mean_util(&self) -> Option<f64> {
        let util = mean(self.util.iter().map(|u| u.map(f64::from)));
        let active = mean(self.sm_active.iter().map(|a| a.map(f64::from)));
        if self.by_sm { active.or(util) } else { util.or(active) }
    }

    /// Per sample: the process tree in D while it reads from storage (or while its reads cannot be seen). Any
    /// bytes read count: a slow store delivers little (on the H200, DataLoader workers behind a throttled disk read
    /// 1.4 MiB/s and waited in D), so a read-rate floor would hide exactly the worst stores. A sample with no bytes
    /// read (a thread in D on a log file, a stray one), whose writes dominate (a checkpoint), or whose threads in D
    /// all wait on writes ([`Self::d_by_writes`]: a logging thread blocked on NFS) does not count.
    pub(super) fn in_d_reading(&self, t: &super::super::Thresholds) -> Vec<bool> {
        (0..self.times.len())
            .map(|i| {
                let read = self.read[i];
                let reads = read.is_none_or(|r| r > 0);
                let write = self.write[i].unwrap_or(0) as f64;
                let writing = write >= t.read_low_mib_s * MIB && write >= 2.0 * read.unwrap_or(0) as f64;
                (self.self_in_d[i] || self.child_in_d[i]) && reads && !writing && !self.d_by_writes(i)
            })
            .collect()
    }

    /// Per sample: a thread of the process, or a child, at a pegged core. Recordings made before per-thread CPU
    /// was read fall back to the whole process.
    fn pegged(&self, t: &super::super::Thresholds) -> Vec<bool> {
        self.busy(t, t.pegged_core_pct)
    }

    /// Per sample, whether the process's busiest thread is at `own_pct` of a core or more, or a child is pegged
    /// (`pegged_core_pct`).
    fn busy(&self, t: &super::super::Thresholds, own_pct: f64) -> Vec<bool> {
        let at = |v: Option<f32>, pct: f64| v.is_some_and(|c| f64::from(c) >= pct);
        let hot = |v: Option<f32>| at(v, t.pegged_core_pct);
        // A rank's own threads spin while it waits in a collective (a synchronizing main thread): only its workers
        // count there, unless it prepares its data itself and its GPU is not spinning ([`Self::prepares_alone`]).
        let own_count = !self.by_sm || self.prepares_alone(t);
        let own = |i: usize| own_count && at(self.thread_cpu[i].or(self.cpu[i]), own_pct);
        (0..self.times.len()).map(|i| own(i) || hot(self.child_cpu[i])).collect()
    }

    /// On a rank judged by SM activity: whether its own pegged thread is its work rather than a wait in a
    /// collective. It has no `DataLoader` workers (num_workers=0: the main thread prepares the data), and its GPU is
    /// not spinning in a collective: its NVML utilization stays low as well as its SM activity (NCCL's spinning
    /// kernels hold utilization near 100 % on a rank that waits for the others, whatever its `PCIe` traffic; copies
    /// do not count in utilization).
    fn prepares_alone(&self, t: &super::super::Thresholds) -> bool {
        let workerless = self.children_now == 0 && self.input.iter().flatten().all(|i| i.busy_workers == 0);
        // A slice has no utilization of its own; its SM activity is not inflated by spinning kernels.
        let util = if self.gpu_instance_id.is_some() {
            self.mean_util()
        } else {
            mean(self.util.iter().map(|u| u.map(f64::from)))
        };
        workerless && util.is_some_and(|u| u < t.starved_util_pct)
    }

    /// Per sample: whether the CPUs the process may run on have no idle core (less than one core's worth idle).
    pub(super) fn cpus_full(&self, n_cpus: usize) -> Vec<bool> {
        (0..self.times.len())
            .map(|i| {
                let allowed = self.input[i].and_then(|x| x.allowed_cpus.zip(x.allowed_busy_pct));
                let (cpus, busy) = match allowed {
                    Some((cpus, busy)) => (f64::from(cpus), Some(f64::from(busy))),
                    None => (n_cpus as f64, self.host_busy[i].map(f64::from)),
                };
                busy.is_some_and(|b| cpus - b / 100.0 * cpus < 1.0)
            })
            .collect()
    }

    /// Whether the tree writes much more than it reads (a checkpoint or log writer, not an input pipeline).
    fn writes_dominate(&self, t: &super::super::Thresholds) -> bool {
        let write = Self::median(&self.write).unwrap_or(0.0);
        let read = Self::median(&self.read).unwrap_or(0.0);
        write >= t.read_low_mib_s * MIB && write >= 2.0 * read
    }

    pub(super) fn util_evidence(&self) -> String {
        if self.gpu_instance_id.is_some() {
            return format!(
                "{} SM activity mean {} over {} (GPM of its GPU instance; the whole GPU's utilization does not \
                 describe a slice)",
                self.at,
                opt_pct(self.mean_util()),
                self.span.label()
            );
        }
        if self.by_sm {
            let util = mean(self.util.iter().map(|u| u.map(f64::from)));
            return format!(
                "GPM SM activity mean {} (GPU util mean {}, which NCCL's spinning kernels inflate on a rank) over {}",
                opt_pct(self.mean_util()),
                opt_pct(util),
                self.span.label()
            );
        }
        let util = self.mean_util();
        let gpm = mean(self.sm_active.iter().map(|a| a.map(f64::from)));
        let gpm = gpm.map_or_else(String::new, |a| format!(" (GPM SM activity mean {})", pct_label(a)));
        format!("GPU util mean {}{gpm} over {}", opt_pct(util), self.span.label())
    }
}

pub(super) fn opt_pct(value: Option<f64>) -> String {
    value.map_or_else(|| "N/A".to_owned(), pct_label)
}

fn opt_rate(value: Option<f64>) -> String {
    value.map_or_else(|| "N/A".to_owned(), |r| format!("{}/s", bytes_label(r)))
}

/// The compute processes on GPUs whose mean utilization is low enough for an input rule to hold, with their
/// samples; the others are skipped before any sample is built.
pub(super) fn starved_processes(ctx: &Ctx<'_>) -> Vec<(u32, u32, ProcessSamples)> {
    let starved = Subject::starved_places(ctx);
    let mut out = Vec::new();
    for (gpu_index, pid) in ctx.compute_processes() {
        if !starved.iter().any(|(g, _)| *g == gpu_index) {
            continue;
        }
        let Some(subject) = Subject::of(ctx, gpu_index, pid) else { continue };
        if !starved.contains(&subject.place.key()) {
            continue;
        }
        let samples = ProcessSamples::read(ctx, &subject);
        if samples.mean_util().is_none_or(|m| m >= ctx.t.starved_exit_util_pct) {
            continue;
        }
        out.push((gpu_index, pid, samples));
    }
    out
}

/// Whether a starved process's finding may appear (mean under `starved_util_pct` over a covered window) and
/// stay (mean under `starved_exit_util_pct`).
pub(super) fn starved(s: &ProcessSamples, t: &super::super::Thresholds) -> (bool, bool) {
    let m = s.mean_util().unwrap_or(100.0);
    (s.span.covered && m < t.starved_util_pct, m < t.starved_exit_util_pct)
}

/// input-bound: the GPU is starved on average while its process tree waits for storage reads.
#[must_use]
pub fn input_bound(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, s) in starved_processes(ctx) {
        let (enter, stay) = starved(&s, t);
        if s.writes_dominate(t) {
            continue;
        }
        let in_d_reading = s.in_d_reading(t);
        let d_share = ProcessSamples::share(&in_d_reading);
        let reading = |own: &[bool]| {
            ProcessSamples::share(&own.iter().zip(&in_d_reading).map(|(a, b)| *a && *b).collect::<Vec<_>>())
        };
        let self_d = reading(&s.self_in_d);
        let child_d = reading(&s.child_in_d);
        let read = ProcessSamples::median(&s.read);
        let psi = ProcessSamples::median(&s.psi_io);
        let psi_high = psi.is_some_and(|p| p >= t.psi_io_some_pct);
        let pegged = ProcessSamples::share(&s.pegged(t)) >= t.exit_share;
        // A high read rate alone is a decode pipeline's too: with pegged workers and calm PSI it is not storage; and
        // with no idle CPU it is what runnable workers read between their turns on a CPU (they wait for the CPU, not
        // for the reads: cpu-contention's or cpu-oversubscribed's).
        let cpus_full = ProcessSamples::share(&s.cpus_full(ctx.machine.n_cpus)) >= t.exit_share;
        let reads_high = read.is_some_and(|r| r >= t.read_high_mib_s * MIB) && (psi_high || !pegged) && !cpus_full;
        let reads_some = read.is_some_and(|r| r >= t.read_low_mib_s * MIB);
        // PSI is host-wide: someone else's writes (a checkpoint) raise it too, so it counts only with this
        // process's own reads or a real share of its samples in D while reading (a stray one is not enough).
        let pressure = psi_high && (reads_some || d_share >= t.d_state_share / 3.0);
        let io_evidence = d_share >= t.d_state_share || reads_high || pressure;
        if !io_evidence || !stay {
            continue;
        }
        let label = s.span.label();
        let by_writes = share_of((0..s.times.len()).map(|i| s.d_by_writes(i)));
        let writes_note = if by_writes > 0.0 {
            format!("; in D waiting on writes (not counted) in {} of samples", share_label(by_writes))
        } else {
            String::new()
        };
        let times_low = s.work().map(|u| u.is_some_and(|u| u < t.starved_util_pct));
        let since = first_true(s.times.iter().copied(), times_low, ctx.now_ms);
        let finding = super::super::Finding {
            title: format!("{} is starved by its input pipeline (PID {pid} waits for storage)", s.at),
            evidence: format!(
                "{}; PSI io some {}; in D while reading: PID {pid} or its threads in {} of samples, a DataLoader \
                 child in {}{writes_note}; reads {} (process and children); system iowait {}",
                s.util_evidence(),
                opt_pct(psi),
                share_label(self_d),
                share_label(child_d),
                opt_rate(read),
                opt_pct(ProcessSamples::median(&s.iowait)),
            ),
            remedy: "Feed the GPU faster: copy the dataset to local NVMe (or a page-cache-friendly format), pack \
                     small files into shards, raise DataLoader num_workers, use pin_memory and prefetching."
                .to_owned(),
            explanation: format!(
                "The GPU computes less than {} of the time on average over {label} while the process that feeds it, \
                 or its DataLoader workers, sit in uninterruptible sleep (D) reading, and the host shows I/O \
                 pressure. System iowait is diluted over all CPUs and is not used alone; D state counts only with \
                 reads (a checkpoint writer is not input-bound), and a high read rate with pegged workers and calm \
                 PSI is CPU-bound decoding, not storage.",
                pct_label(t.starved_util_pct)
            ),
            gpu_instance_id: s.gpu_instance_id,
            ..draft(Rule::InputBound, Severity::Warning, Some(gpu_index), Some(pid), since)
        };
        out.push(Observation { finding, enter, stay });
    }
    out
}

/// Who pegs a core for a starved GPU: a DataLoader worker (by PID), a thread of the process (by TID), or the
/// whole process when per-thread CPU is not available. A worker that is itself pegged (at `pegged_core_pct` or
/// more) is named even next to a busier main thread: the workers do not keep up, so the input is the limiter.
fn pegged_who(ctx: &Ctx<'_>, pid: u32, s: &ProcessSamples) -> (String, bool, bool) {
    let thread = ProcessSamples::median(&s.thread_cpu);
    let child = ProcessSamples::median(&s.child_cpu);
    let latest = ctx.history.latest();
    let busiest_child = latest
        .processes
        .iter()
        .filter(|p| p.ppid == Some(pid) && p.role == ProcessRole::Child && !p.is_compile_worker())
        .max_by(|a, b| a.cpu_pct.unwrap_or(0.0).total_cmp(&b.cpu_pct.unwrap_or(0.0)));
    let worker_pegged = child.is_some_and(|c| c >= ctx.t.pegged_core_pct);
    if worker_pegged || child.unwrap_or(0.0) >= thread.or_else(|| ProcessSamples::median(&s.cpu)).unwrap_or(0.0) {
        let who = busiest_child.map_or_else(
            || "a DataLoader worker".to_owned(),
            |c| format!("DataLoader worker PID {} ({})", c.pid, c.name),
        );
        return (format!("{who} at {} of one core (median)", opt_pct(child)), true, false);
    }
    match ctx.host_process(pid).and_then(|p| p.busiest_thread.as_ref()) {
        Some(busy) if thread.is_some() => {
            let main = busy.tid == pid;
            let which = if main { "its main thread" } else { "its thread" };
            (
                format!("{which} TID {} ({}) at {} of one core (median)", busy.tid, busy.name, opt_pct(thread)),
                false,
                main,
            )
        }
        _ => (
            format!(
                "PID {pid} at {} of one core (whole process; per-thread CPU not recorded)",
                opt_pct(ProcessSamples::median(&s.cpu))
            ),
            false,
            true,
        ),
    }
}

/// The main thread's pace: a starved GPU whose process's main thread is pegged while its `DataLoader` workers keep
/// up, or while the step sends its results back to the host (`PCIe` TX at or above `main_thread_d2h_mib_s`: the
/// gradients of an optimizer offloaded to the CPU). Then the CPU work is the step's own (an optimizer step,
/// metrics, syncs), not the input's, and main-thread-bound says so instead of cpu-bound-input. Needs per-thread CPU:
/// the whole process at 100 % is the normal state of a PyTorch job.
struct MainPace {
    who: String,
    /// The busiest thread is the main thread (else another thread of the process, under D2H traffic).
    main: bool,
    d2h_mib_s: Option<f64>,
}

fn main_pace(ctx: &Ctx<'_>, pid: u32, s: &ProcessSamples) -> Option<MainPace> {
    let (who, worker, main) = pegged_who(ctx, pid, s);
    let thread_known = ProcessSamples::median(&s.thread_cpu).is_some();
    let d2h = s.d2h_mib_s();
    let d2h_heavy = d2h.is_some_and(|m| m >= ctx.t.main_thread_d2h_mib_s);
    // Workers that exist and none pegged keep up: busy ones, or idle ones whose batches wait for the main thread.
    let keep_up = s.workers() > 0 || s.children_now > 0;
    let paces = !worker && thread_known && ((main && keep_up) || d2h_heavy);
    paces.then_some(MainPace { who, main, d2h_mib_s: d2h })
}

/// Per sample, a pegged thread or worker that is not waiting for storage reads; and its share of the window.
fn pegged_not_reading(s: &ProcessSamples, t: &super::super::Thresholds) -> (Vec<bool>, f64) {
    busy_not_reading(s, t, t.pegged_core_pct)
}

/// As [`pegged_not_reading`], with the process's own busiest thread counted from `own_pct` of a core.
fn busy_not_reading(s: &ProcessSamples, t: &super::super::Thresholds, own_pct: f64) -> (Vec<bool>, f64) {
    let in_d_reading = s.in_d_reading(t);
    let flags: Vec<bool> = s.busy(t, own_pct).iter().zip(&in_d_reading).map(|(p, d)| *p && !*d).collect();
    let share = ProcessSamples::share(&flags);
    (flags, share)
}

/// The idle cores of the host (median over the window), as a number and as text.
fn idle_cores(ctx: &Ctx<'_>, s: &ProcessSamples) -> (Option<u32>, String) {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a count of cores: small and positive")]
    let idle_cores = ProcessSamples::median(&s.host_busy)
        .map(|busy| ((100.0 - busy).max(0.0) / 100.0 * ctx.machine.n_cpus as f64).floor() as u32);
    let idle_text = idle_cores
        .map_or_else(|| "idle cores unknown".to_owned(), |n| format!("{n} of {} cores idle", ctx.machine.n_cpus));
    (idle_cores, idle_text)
}

/// cpu-bound-input: the GPU is starved on average while a thread of its process, or a DataLoader worker, pegs a
/// core and the tree is not waiting for storage. Names the thread or worker, the number of workers and the idle
/// cores, so the remedy is a number. Where the main thread sets the pace with workers that keep up, it is
/// main-thread-bound's (see [`main_thread_bound`]).
#[must_use]
pub fn cpu_bound_input(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, s) in starved_processes(ctx) {
        let (starved_enter, starved_stay) = starved(&s, t);
        let (flags, share) = pegged_not_reading(&s, t);
        if share < t.exit_share || !starved_stay || main_pace(ctx, pid, &s).is_some() {
            continue;
        }
        let (who, worker, main_thread) = pegged_who(ctx, pid, &s);
        let workers = s.workers();
        let (idle_cores, idle_text) = idle_cores(ctx, &s);
        let spare = idle_cores.unwrap_or(0).saturating_sub(1).max(1);
        let plural = if workers == 1 { "" } else { "s" };
        let remedy = if worker && idle_cores.is_some_and(|n| n < 2) {
            format!(
                "The workers keep every CPU busy ({workers} worker{plural}, {idle_text}): more workers would only queue \
                 for them. Make each sample cheaper: pre-decode or pre-resize offline, decode on the GPU (DALI, \
                 torchvision.io.decode_jpeg on cuda); if each worker runs several threads, give it one \
                 (torch.set_num_threads(1) in worker_init_fn, OMP_NUM_THREADS=1)."
            )
        } else if worker {
            format!(
                "Raise DataLoader num_workers from {workers} to about {} (the job has {workers} worker{plural}, \
                 {idle_text}); or make each sample cheaper: pre-decode or pre-resize offline, decode on the GPU (DALI, \
                 torchvision.io.decode_jpeg on cuda).",
                workers + spare.min(workers.max(1) * 3),
            )
        } else if workers == 0 && main_thread {
            format!(
                "The main process prepares the data itself (no DataLoader workers): set num_workers to about {} \
                 ({idle_text}), or pre-tokenize or pre-decode offline. If its step has no data to prepare, the \
                 thread is launching kernels instead (see launch-bound's remedy); py-spy dump --pid {pid} tells which.",
                spare.min(8)
            )
        } else if main_thread {
            format!(
                "The main thread is the limiter while {workers} worker{plural} keep up: more workers will not help. \
                 Look at what it does per step: collate and host-to-device copies (pin_memory=True, \
                 non_blocking=True), kernel launches (a larger batch, CUDA graphs), `.item()` syncs."
            )
        } else {
            format!(
                "A helper thread is the limiter (the job has {workers} DataLoader worker{plural}, {idle_text}): if it \
                 is the pin-memory thread, pin in the workers or send uint8 and convert on the GPU; otherwise profile \
                 it (py-spy dump --pid {pid})."
            )
        };
        let since = first_true(s.times.iter().copied(), flags.iter().copied(), ctx.now_ms);
        let finding = super::super::Finding {
            title: format!("{} waits for CPU preprocessing in PID {pid}", s.at),
            evidence: format!(
                "{}; {who}; {}; {idle_text}; reads {}; held in {} of samples",
                s.util_evidence(),
                s.workers_label(),
                opt_rate(ProcessSamples::median(&s.read)),
                share_label(share),
            ),
            remedy,
            explanation: "One CPU core is saturated by the process that feeds the GPU (one of its threads) or by one \
                          of its DataLoader workers, while the GPU is idle on average and the tree is not waiting \
                          for storage: CPU-side preprocessing is the limiter. The whole process at 100 % is the \
                          normal state of a PyTorch main thread and is not used; per-thread CPU is. Workers are the \
                          children that did work in the window: idle persistent workers (an evaluation loader's) \
                          and torch.compile's compile workers are not counted."
                .to_owned(),
            gpu_instance_id: s.gpu_instance_id,
            ..draft(Rule::CpuBoundInput, Severity::Warning, Some(gpu_index), Some(pid), since)
        };
        out.push(Observation {
            finding,
            enter: starved_enter && share >= t.enter_share,
            stay: starved_stay && share >= t.exit_share,
        });
    }
    out
}

/// main-thread-bound: the GPU is starved on average while the main thread of its process pegs a core and the
/// `DataLoader` workers keep up (or the step sends its results back to the host): the step's own CPU work sets the
/// pace (an optimizer offloaded to the CPU, metrics computed in Python, host syncs), not the input.
#[must_use]
pub fn main_thread_bound(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, s) in starved_processes(ctx) {
        let (starved_enter, starved_stay) = starved(&s, t);
        let (flags, share) = busy_not_reading(&s, t, t.main_thread_busy_pct.min(t.pegged_core_pct));
        if share < t.exit_share || !starved_stay {
            continue;
        }
        let Some(pace) = main_pace(ctx, pid, &s) else { continue };
        let workers = s.workers();
        let child = ProcessSamples::median(&s.child_cpu);
        let feeders = if workers == 0 && s.children_now == 0 {
            "no DataLoader workers".to_owned()
        } else if workers == 0 {
            format!("its {} DataLoader workers idle: their batches are ready", s.children_now)
        } else {
            format!("{} keep up (busiest at {} of one core, median)", s.workers_label(), opt_pct(child))
        };
        let d2h = pace
            .d2h_mib_s
            .map_or_else(String::new, |m| format!("; PCIe TX (device to host) mean {}/s", bytes_label(m * MIB)));
        let offload = pace.d2h_mib_s.is_some_and(|m| m >= t.main_thread_d2h_mib_s);
        let title = if pace.main {
            format!("{} waits for the main thread of PID {pid}", s.at)
        } else {
            format!("{} waits for CPU work in the step of PID {pid}", s.at)
        };
        let finding = super::super::Finding {
            title,
            evidence: format!(
                "{}; {}; {feeders}{d2h}; reads {}; held in {} of samples",
                s.util_evidence(),
                pace.who,
                opt_rate(ProcessSamples::median(&s.read)),
                share_label(share),
            ),
            remedy: format!(
                "The step's own CPU work sets the pace, not the input: more DataLoader workers will not help. \
                 Profile one step (py-spy dump --pid {pid}, or torch.profiler with CPU activities) and look at what \
                 runs between the GPU's kernels: {}metrics or logging computed in Python every step (compute them \
                 on the GPU, every N steps), `.item()` and `.cpu()` syncs, Python work in the training loop.",
                if offload {
                    "the optimizer step on the CPU (the step copies its results back to the host: an offloaded \
                     optimizer; overlap it with the backward pass, use a fused CPU Adam, or keep the optimizer on the \
                     GPU if memory allows), "
                } else {
                    "an optimizer step on the CPU, "
                }
            ),
            explanation: "One thread of the process that drives the GPU, its main thread, is saturated while the \
                          GPU is idle on average; its DataLoader workers keep up (none is pegged) or the step sends \
                          large results back to the host. The CPU work is the step's own: an optimizer offloaded to \
                          the CPU, metrics or logging in Python, host syncs. More workers or faster storage would \
                          not change it."
                .to_owned(),
            gpu_instance_id: s.gpu_instance_id,
            ..draft(Rule::MainThreadBound, Severity::Warning, Some(gpu_index), Some(pid), {
                first_true(s.times.iter().copied(), flags.iter().copied(), ctx.now_ms)
            })
        };
        out.push(Observation {
            finding,
            enter: starved_enter && share >= t.enter_share,
            stay: starved_stay && share >= t.exit_share,
        });
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
        if let Some((job, pid)) = super::jobs::multi_rank_job(ctx, gpu.index) {
            let finding = rank_spinning(ctx, gpu.index, (job, pid), &span, &signal, share);
            out.push(Observation::by_share(
                super::super::Finding { since_ms: since, ..finding },
                share,
                span.covered,
                t,
            ));
            continue;
        }
        let finding = super::super::Finding {
            title: format!("GPU {} looks busy but does little work", gpu.index),
            evidence: format!(
                "GPU util median {} over {} while {signal}; held in {} of samples",
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

/// util-misleading on a rank of a job over several GPUs: high utilization with little SM work is NCCL's kernels
/// spinning while the rank waits in a collective, for a slower rank or for the job's traffic. Which rank is slow is
/// rank-straggler's (or collective-hang's) judgement over its longer window, so this says what is still being
/// judged, as info, rather than blame the rank that waits.
fn rank_spinning(
    ctx: &Ctx<'_>,
    gpu_index: u32,
    (job, pid): (&crate::sample::JobInfo, u32),
    span: &Span,
    signal: &str,
    share: f64,
) -> super::super::Finding {
    let t = ctx.t;
    let judged = ctx.window(t.straggler_window_s).is_some_and(|s| s.covered);
    let rank = job.rank.map_or_else(|| format!("PID {pid}"), |r| format!("rank {r} (PID {pid})"));
    let job_name = super::jobs::job_name(ctx, job, pid);
    let gpu = ctx.history.gpu(gpu_index);
    let util = gpu.and_then(|g| span.median(&g.util_pct));
    let (title, judging) = if judged {
        (
            format!(
                "GPU {gpu_index} waits in a collective of job {}: its utilization is NCCL spinning",
                crate::text::visible(&job_name)
            ),
            "the rank it waits for is named by rank-straggler or collective-hang when one is found".to_owned(),
        )
    } else {
        (
            format!("GPU {gpu_index} waits in a collective; judging which rank is slow"),
            format!(
                "judging which rank is slow: rank-straggler needs {} of data",
                duration_label(t.straggler_window_s)
            ),
        )
    };
    super::super::Finding {
        title,
        evidence: format!(
            "{rank} of job {}: GPU util median {} over {} while {signal}; held in {} of samples; {judging}",
            crate::text::visible(&job_name),
            opt_pct(util),
            span.label(),
            share_label(share),
        ),
        remedy: "Nothing to do on this GPU: it waits for the other ranks. Look at the rank that rank-straggler names \
                 (or at the job's traffic, see comm-bound)."
            .to_owned(),
        explanation: "In a job over several GPUs every rank waits for the others at each collective, and NCCL's \
                      kernels spin while they wait: utilization near 100 % with few SMs working. The rank that \
                      looks busiest is a waiting one; blaming it would point at the wrong GPU."
            .to_owned(),
        ..draft(Rule::UtilMisleading, Severity::Info, Some(gpu_index), None, ctx.now_ms)
    }
}
