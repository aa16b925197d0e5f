//! The account's arithmetic: one span of a GPU's time split into causes from what the job's threads did over the
//! same span. Pure: no history, no clock; the book ([`super::book`]) gathers the inputs and keeps the results.
//!
//! The model: a training step alternates between the host preparing work and the GPU running it. The GPU idles while
//! the step's own (main) thread is not feeding it: it is computing on a CPU, waiting for a CPU, or asleep in
//! something (the input pipeline's queue, a read, a socket, a write). So the GPU's idle time is split in proportion to
//! what the main thread spent on those, over the span. Two corrections keep that honest:
//!
//! - A thread waiting for the GPU may spin on a CPU for as long as a kernel runs (a synchronize in its spin phase), so
//!   at most the kernel time of the span is taken off its CPU time: what is left is host work the GPU waited for.
//! - Time asleep in the NVIDIA driver is time waiting for the GPU, not a cause; where the GPU idled longer than the
//!   host-bound time explains, the rest is a GPU-side wait: copies (PCIe busy), collectives (a rank), else not
//!   determined.
//!
//! The time the GPU only looks busy (kernel time beyond twice the SM activity: a spinning collective or kernel) is
//! communication on a rank of a job over several GPUs (waiting for a slower rank where one is named), and the
//! kernels' own doing otherwise.

use crate::sample::WaitKind;

use super::Cause;

/// The GPU's time over one span, in seconds: busy, only looking busy, idle (they add up to `seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GpuTime {
    pub seconds: f64,
    pub busy: f64,
    pub looks_busy: f64,
    pub idle: f64,
}

impl GpuTime {
    /// The time of one sample `seconds` long: NVML utilization (a kernel ran), GPM SM activity where read, both in
    /// percent. Busy is the kernel time, but never more than twice the SM activity: a kernel that fills the GPU
    /// keeps at least half its SMs busy over its run (wave tails and launch ramps cost less than half), so kernel
    /// time beyond that is a kernel spinning on a few SMs, and only looks busy. Without utilization (a MIG slice),
    /// SM activity is the busy time.
    #[must_use]
    pub fn of_sample(seconds: f64, util_pct: Option<f64>, sm_active_pct: Option<f64>) -> Option<Self> {
        let kernel = util_pct.or(sm_active_pct)?.clamp(0.0, 100.0) / 100.0;
        let busy = sm_active_pct.map_or(kernel, |sm| kernel.min(2.0 * sm.clamp(0.0, 100.0) / 100.0));
        Some(Self {
            seconds,
            busy: busy * seconds,
            looks_busy: (kernel - busy) * seconds,
            idle: (1.0 - kernel) * seconds,
        })
    }

    /// Adds another span's time.
    pub fn add(&mut self, other: Self) {
        self.seconds += other.seconds;
        self.busy += other.busy;
        self.looks_busy += other.looks_busy;
        self.idle += other.idle;
    }

    /// The kernel time: busy or only looking busy.
    #[must_use]
    pub fn kernel(&self) -> f64 {
        self.busy + self.looks_busy
    }
}

/// What the main thread slept in over the span, as shares of its sleep that add up to 1 (empty: not known).
pub type SleepMix = Vec<(WaitKind, f64)>;

/// What the step's threads did over a span: the main thread's time, and the `DataLoader` workers'.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepTimes {
    pub span_ms: f64,
    pub main_on_cpu_ms: f64,
    pub main_wait_cpu_ms: f64,
    /// What its sleep was spent in.
    pub main_sleep: SleepMix,
    /// The workers' time, summed; `None` without workers.
    pub workers: Option<WorkerTimes>,
}

/// The `DataLoader` workers' time over a span, summed over the workers, ms: on a CPU, waiting for one, and asleep by
/// what they slept in (each worker's sleep counted under the wait its main thread was in at the gather).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WorkerTimes {
    pub count: u32,
    pub on_cpu_ms: f64,
    pub wait_cpu_ms: f64,
    pub read_ms: f64,
    pub remote_ms: f64,
    pub reclaim_ms: f64,
    /// Asleep waiting for work (their index queue) or in anything else.
    pub idle_ms: f64,
    /// The share of its span the busiest worker spent producing (0–1): where even it had slack, the step waits for
    /// the hand-over of ready batches rather than for the workers.
    pub busiest_share: f64,
}

impl WorkerTimes {
    /// The time the workers spent producing (or trying to): everything but waiting for work.
    #[must_use]
    pub fn producing_ms(&self) -> f64 {
        self.on_cpu_ms + self.wait_cpu_ms + self.read_ms + self.remote_ms + self.reclaim_ms
    }
}

/// What the step's CPU work is, where GPU-side evidence or the job's shape says more than "the main thread".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StepCpu {
    /// The step's own work (an optimizer on the CPU, metrics, Python between kernels).
    #[default]
    MainThread,
    /// Launching many small kernels (launch-bound holds on the GPU).
    Launch,
    /// Copying to the GPU from pageable memory (h2d-copy-bound holds on the GPU).
    Copy,
    /// Preparing the data itself: no `DataLoader` workers, and the process reads its input.
    DataPrep,
    /// Producing a checkpoint: serializing and copying it out while the process writes heavily.
    Checkpoint,
}

/// Who a wait for a CPU is owed to, as shares that add up to 1 (or all zero: not known).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuWaitSplit {
    pub quota: f64,
    pub pinned: f64,
    pub own: f64,
    pub others: f64,
}

impl CpuWaitSplit {
    /// Splits `seconds` of waiting for a CPU into its causes; with no split known, to not determined.
    fn apportion(&self, seconds: f64, out: &mut Vec<(Cause, f64)>) {
        let total = self.quota + self.pinned + self.own + self.others;
        if total <= 0.0 {
            // Nobody holds the CPUs the job wants beyond them: the wait is the scheduler's own latency, owed to no one.
            push(out, Cause::NotDetermined, seconds);
            return;
        }
        for (cause, share) in [
            (Cause::CpuQuotaThrottled, self.quota),
            (Cause::CpusPinned, self.pinned),
            (Cause::CpuOversubscribed, self.own),
            (Cause::CpuContention, self.others),
        ] {
            push(out, cause, seconds * share / total);
        }
    }
}

/// What the job is, as far as the split needs it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Context {
    /// A rank of a job over several GPUs.
    pub rank: bool,
    /// Its ranks on this host at this sample: whether every one of them spins in a collective (busy by NVML's count,
    /// little SM work), and whether data moves over their PCIe or NVLink.
    pub all_ranks_spin: bool,
    pub data_moving: bool,
    /// Another rank of its job is named the straggler the others wait for.
    pub straggler_elsewhere: bool,
    /// A server: it listens on TCP ports (not a rank, not a notebook kernel).
    pub serving: bool,
    /// The job does nothing: its threads and workers used next to no CPU and moved no data over the span.
    pub idle: bool,
    /// The GPU's PCIe link carried copies (a GPU-side wait with the link busy is a copy).
    pub pcie_busy: bool,
    pub step_cpu: StepCpu,
    pub cpu_wait: CpuWaitSplit,
}

impl Context {
    /// What the time a GPU only looks busy is for this job: on a rank, waiting for the slower rank where not every
    /// rank spins, communication where they all do and data moves, a collective that does not progress where
    /// nothing moves; elsewhere the step's launches where its thread is busy on a CPU, else the kernels' own shape.
    fn hollow(&self, main_busy: bool) -> Cause {
        if self.rank {
            if self.straggler_elsewhere || !self.all_ranks_spin {
                Cause::RankStraggler
            } else if self.data_moving {
                Cause::CommBound
            } else {
                Cause::CollectiveHang
            }
        } else if main_busy {
            match self.step_cpu {
                StepCpu::Launch => Cause::LaunchBound,
                _ => Cause::UtilMisleading,
            }
        } else {
            Cause::UtilMisleading
        }
    }
}

/// Adds `seconds` to `cause` in `out` (ignoring nothing-at-all).
fn push(out: &mut Vec<(Cause, f64)>, cause: Cause, seconds: f64) {
    if seconds <= 0.0 || !seconds.is_finite() {
        return;
    }
    match out.iter_mut().find(|(c, _)| *c == cause) {
        Some((_, s)) => *s += seconds,
        None => out.push((cause, seconds)),
    }
}

/// Splits the GPU's waiting time over one span (idle, and only looking busy) into causes, from the step's threads.
/// The busy time is not in the result; the causes add up to `gpu.idle + gpu.looks_busy`.
#[must_use]
pub fn attribute(gpu: GpuTime, step: &StepTimes, ctx: &Context) -> Vec<(Cause, f64)> {
    let mut out = Vec::new();
    let span_s = step.span_ms.max(1.0) / 1000.0;
    // The span's share of the step thread's time, scaled to the GPU's span (they are read at nearly the same moments).
    let scale = gpu.seconds.max(f64::EPSILON) / span_s;
    let on_cpu = step.main_on_cpu_ms / 1000.0 * scale;
    let wait_cpu = step.main_wait_cpu_ms / 1000.0 * scale;
    // A rank whose own step waits for its input is the slow one: its collectives' spin is the others' data arriving
    // while it catches up, so that time is split as idle time is.
    let input_bound =
        step.main_sleep.iter().any(|(k, share)| *share >= 0.5 && is_input_wait(*k, step.workers.is_some()));
    let (hollow_time, idle) =
        if ctx.rank && input_bound { (0.0, gpu.idle + gpu.looks_busy) } else { (gpu.looks_busy, gpu.idle) };
    push(&mut out, ctx.hollow(on_cpu >= MAIN_BUSY_SHARE * gpu.seconds), hollow_time);
    if idle <= 0.0 {
        return out;
    }
    let asleep = (gpu.seconds - on_cpu - wait_cpu).max(0.0);
    let host_cpu = (on_cpu - (gpu.busy + hollow_time)).max(0.0);
    let mut parts: Vec<(Part, f64)> = vec![(Part::StepCpu, host_cpu), (Part::CpuWait, wait_cpu)];
    let mut waits_for_gpu = 0.0;
    if step.main_sleep.is_empty() {
        let unknown = if ctx.idle { Cause::Idle } else { Cause::NotDetermined };
        parts.push((Part::Cause(unknown), asleep));
    }
    for &(kind, share) in &step.main_sleep {
        match sleep_part(kind, ctx, step.workers.is_some()) {
            Some(part) => parts.push((part, asleep * share)),
            None => waits_for_gpu += asleep * share,
        }
    }
    let host_bound: f64 = parts.iter().map(|(_, s)| s).sum();
    // The idle time is split in proportion to the host-bound parts, each at most its own length; what they do not
    // explain is a wait on the GPU's side.
    let fill = if host_bound > idle { idle / host_bound } else { 1.0 };
    for (part, seconds) in parts {
        spend(part, seconds * fill, step, ctx, &mut out);
    }
    let rest = (idle - host_bound).max(0.0);
    let gpu_side = if ctx.rank {
        Cause::CommBound
    } else if waits_for_gpu > 0.0 && ctx.pcie_busy {
        Cause::H2dCopyBound
    } else {
        Cause::NotDetermined
    };
    push(&mut out, gpu_side, rest);
    out
}

/// The share of a span its main thread must spend on a CPU to count as busy issuing work: a thread that launches
/// kernels back to back, or computes, is on a CPU nearly all the time; one that waits for its next batch is not.
const MAIN_BUSY_SHARE: f64 = 0.8;

/// Whether the main thread's sleep in `kind` waits for its input: a read, a network file system, or (with
/// `DataLoader` workers) the loader's queue.
fn is_input_wait(kind: WaitKind, workers: bool) -> bool {
    matches!(kind, WaitKind::Read | WaitKind::RemoteFs) || (workers && matches!(kind, WaitKind::Pipe | WaitKind::Poll))
}

/// A part of the main thread's time, before the input pipeline and the waits for a CPU are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    StepCpu,
    CpuWait,
    Pipeline,
    Cause(Cause),
}

/// What the main thread's sleep in `kind` is: a part of the account, or `None` for a wait on the GPU itself.
fn sleep_part(kind: WaitKind, ctx: &Context, workers: bool) -> Option<Part> {
    let generic = matches!(kind, WaitKind::Pipe | WaitKind::Lock | WaitKind::Poll | WaitKind::Sleep | WaitKind::Other);
    let part = match kind {
        WaitKind::Gpu => return None,
        _ if ctx.idle && (generic || kind == WaitKind::Hidden) => Part::Cause(Cause::Idle),
        WaitKind::Pipe | WaitKind::Lock | WaitKind::Poll if workers => Part::Pipeline,
        WaitKind::Pipe | WaitKind::Lock | WaitKind::Poll | WaitKind::Socket if ctx.serving => {
            Part::Cause(Cause::Serving)
        }
        WaitKind::Pipe | WaitKind::Lock | WaitKind::Poll | WaitKind::Socket if ctx.rank => {
            Part::Cause(Cause::CommBound)
        }
        WaitKind::Socket | WaitKind::RemoteFs => Part::Cause(Cause::RemoteDatasetStall),
        WaitKind::Read => Part::Cause(Cause::InputBound),
        WaitKind::Write => Part::Cause(Cause::CheckpointWrite),
        WaitKind::Reclaim => Part::Cause(Cause::HostMemoryPressure),
        WaitKind::Pipe | WaitKind::Lock | WaitKind::Poll | WaitKind::Sleep | WaitKind::Other | WaitKind::Hidden => {
            Part::Cause(Cause::NotDetermined)
        }
    };
    Some(part)
}

/// Books `seconds` of one part: the step's CPU by what it is, a wait for a CPU by whom it is owed to, the input
/// pipeline by what its workers did.
fn spend(part: Part, seconds: f64, step: &StepTimes, ctx: &Context, out: &mut Vec<(Cause, f64)>) {
    match part {
        Part::Cause(cause) => push(out, cause, seconds),
        // On a rank moving data, a main thread on a CPU beyond the kernels spins in a synchronize while the copy
        // engines move the collective's data (copies are not kernels).
        Part::StepCpu if ctx.rank && ctx.data_moving => push(out, Cause::CommBound, seconds),
        Part::StepCpu => {
            let cause = match ctx.step_cpu {
                StepCpu::MainThread => Cause::MainThreadBound,
                StepCpu::Launch => Cause::LaunchBound,
                StepCpu::Copy => Cause::H2dCopyBound,
                StepCpu::DataPrep => Cause::CpuBoundInput,
                StepCpu::Checkpoint => Cause::CheckpointWrite,
            };
            push(out, cause, seconds);
        }
        Part::CpuWait => ctx.cpu_wait.apportion(seconds, out),
        Part::Pipeline => {
            let Some(w) = step.workers.filter(|w| w.producing_ms() > 0.0) else {
                // The workers wait for work while the step waits for a batch: the hand-over itself (the pin-memory
                // thread, collation, the queue) is slow, which threads alone do not tell.
                push(out, Cause::NotDetermined, seconds);
                return;
            };
            // The workers account for as much of the wait as the busiest of them was busy; a worker with slack had its
            // batches ready, so past that the step waits for the hand-over (pin-memory thread, collation, a lock).
            let theirs = seconds * w.busiest_share.clamp(0.0, 1.0);
            push(out, Cause::NotDetermined, seconds - theirs);
            let per_ms = theirs / w.producing_ms();
            push(out, Cause::CpuBoundInput, w.on_cpu_ms * per_ms);
            ctx.cpu_wait.apportion(w.wait_cpu_ms * per_ms, out);
            push(out, Cause::InputBound, w.read_ms * per_ms);
            push(out, Cause::RemoteDatasetStall, w.remote_ms * per_ms);
            push(out, Cause::HostMemoryPressure, w.reclaim_ms * per_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(out: &[(Cause, f64)], cause: Cause) -> f64 {
        out.iter().find(|(c, _)| *c == cause).map_or(0.0, |(_, s)| *s)
    }

    fn total(out: &[(Cause, f64)]) -> f64 {
        out.iter().map(|(_, s)| s).sum()
    }

    /// One second of GPU time at `util` % with SM activity `sm` %.
    fn gpu(util: f64, sm: Option<f64>) -> GpuTime {
        GpuTime::of_sample(1.0, Some(util), sm).expect("a reading")
    }

    fn step(on_cpu: f64, wait_cpu: f64, sleep: SleepMix, workers: Option<WorkerTimes>) -> StepTimes {
        StepTimes { span_ms: 1000.0, main_on_cpu_ms: on_cpu, main_wait_cpu_ms: wait_cpu, main_sleep: sleep, workers }
    }

    #[test]
    fn busy_is_kernel_time_up_to_twice_the_sm_activity() {
        let healthy = gpu(100.0, Some(80.0));
        assert!((healthy.busy - 1.0).abs() < 1e-9 && healthy.looks_busy.abs() < 1e-9);
        let spin = gpu(100.0, Some(5.0));
        assert!((spin.busy - 0.1).abs() < 1e-9 && (spin.looks_busy - 0.9).abs() < 1e-9);
        let no_gpm = gpu(40.0, None);
        assert!((no_gpm.busy - 0.4).abs() < 1e-9 && (no_gpm.idle - 0.6).abs() < 1e-9);
        let slice = GpuTime::of_sample(2.0, None, Some(50.0)).expect("a slice");
        assert!((slice.busy - 1.0).abs() < 1e-9 && (slice.idle - 1.0).abs() < 1e-9);
        assert_eq!(GpuTime::of_sample(1.0, None, None), None);
    }

    #[test]
    fn a_step_waiting_on_its_loader_queue_is_the_input_pipeline_split_by_its_workers() {
        // The GPU runs 40 % of the time; the main thread spins in a synchronize while it does (on a CPU 45 %), and
        // sleeps on the loader's pipe the rest. The workers read 3 parts for every part they decode.
        let workers = WorkerTimes {
            count: 4,
            on_cpu_ms: 500.0,
            read_ms: 1500.0,
            idle_ms: 2000.0,
            busiest_share: 1.0,
            ..WorkerTimes::default()
        };
        let out = attribute(
            gpu(40.0, Some(35.0)),
            &step(450.0, 0.0, vec![(WaitKind::Pipe, 1.0)], Some(workers)),
            &Context::default(),
        );
        assert!((total(&out) - 0.6).abs() < 1e-9, "{out:?}");
        // Asleep 550 ms of the second, all on the queue: 0.55 s of the 0.6 s idle, three parts reading to one decoding.
        assert!((share(&out, Cause::InputBound) - 0.55 * 0.75).abs() < 1e-6, "{out:?}");
        assert!((share(&out, Cause::CpuBoundInput) - 0.55 * 0.25).abs() < 1e-6, "{out:?}");
        assert!(share(&out, Cause::MainThreadBound) < 0.06, "the spin is not the step's work: {out:?}");
    }

    #[test]
    fn a_pegged_main_thread_with_an_idle_gpu_is_the_steps_own_work() {
        let out = attribute(gpu(30.0, Some(28.0)), &step(990.0, 10.0, Vec::new(), None), &Context::default());
        assert!((share(&out, Cause::MainThreadBound) - 0.69).abs() < 0.02, "{out:?}");
        let launch = Context { step_cpu: StepCpu::Launch, ..Context::default() };
        assert!(
            share(&attribute(gpu(30.0, Some(28.0)), &step(990.0, 10.0, Vec::new(), None), &launch), Cause::LaunchBound)
                > 0.6
        );
    }

    #[test]
    fn waiting_for_a_cpu_goes_to_whoever_holds_the_cpus() {
        // Workers that mostly wait for a CPU: other users' processes hold three quarters of the shortfall.
        let workers = WorkerTimes {
            count: 8,
            on_cpu_ms: 1000.0,
            wait_cpu_ms: 3000.0,
            busiest_share: 1.0,
            ..WorkerTimes::default()
        };
        let ctx = Context {
            cpu_wait: CpuWaitSplit { others: 3.0, own: 1.0, ..CpuWaitSplit::default() },
            ..Context::default()
        };
        let out = attribute(gpu(20.0, Some(18.0)), &step(200.0, 0.0, vec![(WaitKind::Lock, 1.0)], Some(workers)), &ctx);
        assert!((share(&out, Cause::CpuContention) - 0.8 * 0.75 * 0.75).abs() < 0.03, "{out:?}");
        assert!((share(&out, Cause::CpuOversubscribed) - 0.8 * 0.75 * 0.25).abs() < 0.03, "{out:?}");
        assert!(share(&out, Cause::InputBound) < 1e-9, "nobody reads: {out:?}");
    }

    #[test]
    fn a_rank_waiting_in_a_spinning_collective_is_communication_or_the_straggler() {
        let spin = || attribute(gpu(100.0, Some(5.0)), &step(1000.0, 0.0, Vec::new(), None), &Context::default());
        assert!((share(&spin(), Cause::UtilMisleading) - 0.9).abs() < 1e-9, "alone: the kernels' own shape");
        // Every rank spins while data moves: the job waits for its communication.
        let all = Context { rank: true, all_ranks_spin: true, data_moving: true, ..Context::default() };
        let out = attribute(gpu(100.0, Some(5.0)), &step(1000.0, 0.0, Vec::new(), None), &all);
        assert!((share(&out, Cause::CommBound) - 0.9).abs() < 1e-9, "{out:?}");
        // Some rank does not spin: this one waits for it.
        let some = Context { all_ranks_spin: false, ..all };
        let out = attribute(gpu(100.0, Some(5.0)), &step(1000.0, 0.0, Vec::new(), None), &some);
        assert!((share(&out, Cause::RankStraggler) - 0.9).abs() < 1e-9, "{out:?}");
        // Every rank spins and nothing moves: a collective that does not progress.
        let stuck = Context { data_moving: false, ..all };
        let out = attribute(gpu(100.0, Some(5.0)), &step(1000.0, 0.0, Vec::new(), None), &stuck);
        assert!((share(&out, Cause::CollectiveHang) - 0.9).abs() < 1e-9, "{out:?}");
        // A rank whose own step reads its input is the slow one: its spin is split as idle time, to its reads.
        let reading = attribute(gpu(100.0, Some(5.0)), &step(50.0, 0.0, vec![(WaitKind::Read, 1.0)], None), &some);
        assert!(share(&reading, Cause::InputBound) > 0.8, "{reading:?}");
    }

    #[test]
    fn a_worker_with_slack_leaves_the_queue_wait_to_the_hand_over() {
        // The busiest worker produced half its time: half the queue wait is the workers', the rest not determined.
        let workers =
            WorkerTimes { count: 2, on_cpu_ms: 1000.0, idle_ms: 1000.0, busiest_share: 0.5, ..WorkerTimes::default() };
        let out =
            attribute(gpu(0.0, None), &step(0.0, 0.0, vec![(WaitKind::Lock, 1.0)], Some(workers)), &Context::default());
        assert!((share(&out, Cause::CpuBoundInput) - 0.5).abs() < 1e-9, "{out:?}");
        assert!((share(&out, Cause::NotDetermined) - 0.5).abs() < 1e-9, "{out:?}");
    }

    #[test]
    fn a_job_that_does_nothing_is_idle_not_undetermined() {
        let idle = Context { idle: true, ..Context::default() };
        let out = attribute(gpu(0.0, None), &step(0.0, 0.0, vec![(WaitKind::Poll, 1.0)], None), &idle);
        assert!((share(&out, Cause::Idle) - 1.0).abs() < 1e-9, "{out:?}");
    }

    #[test]
    fn sleeps_are_named_by_what_they_wait_in() {
        let one =
            |kind: WaitKind, ctx: &Context| attribute(gpu(0.0, None), &step(0.0, 0.0, vec![(kind, 1.0)], None), ctx);
        let none = Context::default();
        assert!((share(&one(WaitKind::Write, &none), Cause::CheckpointWrite) - 1.0).abs() < 1e-9);
        assert!((share(&one(WaitKind::Read, &none), Cause::InputBound) - 1.0).abs() < 1e-9);
        assert!((share(&one(WaitKind::RemoteFs, &none), Cause::RemoteDatasetStall) - 1.0).abs() < 1e-9);
        assert!((share(&one(WaitKind::Reclaim, &none), Cause::HostMemoryPressure) - 1.0).abs() < 1e-9);
        assert!((share(&one(WaitKind::Sleep, &none), Cause::NotDetermined) - 1.0).abs() < 1e-9);
        let server = Context { serving: true, ..none };
        assert!((share(&one(WaitKind::Poll, &server), Cause::Serving) - 1.0).abs() < 1e-9);
        let rank = Context { rank: true, ..none };
        assert!((share(&one(WaitKind::Socket, &rank), Cause::CommBound) - 1.0).abs() < 1e-9);
        // Asleep in the driver while the GPU idles: a GPU-side wait, a copy when the link is busy.
        let copy = Context { pcie_busy: true, ..none };
        assert!((share(&one(WaitKind::Gpu, &copy), Cause::H2dCopyBound) - 1.0).abs() < 1e-9);
        assert!((share(&one(WaitKind::Gpu, &none), Cause::NotDetermined) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_causes_always_add_up_to_the_waiting_time() {
        for util in [0.0, 10.0, 55.0, 99.0] {
            for sm in [None, Some(1.0), Some(30.0)] {
                for on_cpu in [0.0, 300.0, 1000.0] {
                    let g = gpu(util, sm);
                    let out = attribute(
                        g,
                        &step(on_cpu, 100.0, vec![(WaitKind::Pipe, 0.5), (WaitKind::Gpu, 0.5)], None),
                        &Context::default(),
                    );
                    assert!((total(&out) - (g.idle + g.looks_busy)).abs() < 1e-9, "{util} {sm:?} {on_cpu}: {out:?}");
                }
            }
        }
    }
}
