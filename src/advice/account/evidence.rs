//! What one tick says about each job on each GPU, as the account reads it: the job's step process on the place, its
//! workers, and the context the split needs (a rank, a server, the CPUs and who holds them). Pure, over a [`Tick`].

use crate::fast_map::FastMap;
use crate::sample::{GpuTick, HostProcess, MachineInfo, ProcessKind, ProcessRole, Tick, WaitKind};

use super::attribute::{CpuWaitSplit, WorkerTimes};

/// A place: a GPU index and, on a GPU in MIG mode, a slice's GPU instance id.
pub type PlaceKey = (u32, Option<u32>);

/// The processes of one tick, indexed once: by PID, and each descendant's GPU process.
#[derive(Debug)]
pub struct TickIndex<'a> {
    pub tick: &'a Tick,
    by_pid: FastMap<u32, &'a HostProcess>,
    /// Each process below a GPU process, by the GPU process it belongs to.
    below: FastMap<u32, Vec<&'a HostProcess>>,
}

impl<'a> TickIndex<'a> {
    /// Indexes `tick`'s processes.
    #[must_use]
    pub fn new(tick: &'a Tick) -> Self {
        let by_pid: FastMap<u32, &HostProcess> = tick.processes.iter().map(|p| (p.pid, p)).collect();
        let mut below: FastMap<u32, Vec<&HostProcess>> = FastMap::default();
        for p in tick.processes.iter().filter(|p| p.role == ProcessRole::Child) {
            // Follow the parents up to the GPU process (descendants are a few levels deep at most).
            let mut up = p.ppid;
            for _ in 0..8 {
                let Some(parent) = up.and_then(|pid| by_pid.get(&pid)) else { break };
                if parent.role == ProcessRole::Gpu {
                    below.entry(parent.pid).or_default().push(p);
                    break;
                }
                up = parent.ppid;
            }
        }
        Self { tick, by_pid, below }
    }

    #[must_use]
    pub fn process(&self, pid: u32) -> Option<&'a HostProcess> {
        self.by_pid.get(&pid).copied()
    }

    /// The processes below a GPU process (its `DataLoader` workers and their children).
    #[must_use]
    pub fn below(&self, pid: u32) -> &[&'a HostProcess] {
        self.below.get(&pid).map_or(&[], Vec::as_slice)
    }

    /// The compute processes on a place, with the GPU memory each holds there.
    pub fn compute_on(&self, place: PlaceKey) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
        self.tick
            .gpu_processes
            .iter()
            .filter(move |p| p.gpu_index == place.0 && (place.1.is_none() || p.gpu_instance_id == place.1))
            .filter(|p| matches!(p.kind, ProcessKind::Compute | ProcessKind::ComputeAndGraphics))
            .filter_map(|p| Some((p.pid?, p.sm_util_pct.unwrap_or(0), p.used_gpu_memory_bytes.unwrap_or(0))))
    }

    /// The job's step process on a place, and how many other processes share the place with it: the compute process
    /// whose kernels used the most of the SMs (NVML's per-process samples), then the one holding the most GPU
    /// memory. A notebook that holds memory idle beside a training job is not the job whose time is accounted.
    #[must_use]
    pub fn step_on(&self, place: PlaceKey) -> Option<(u32, usize)> {
        let mut all: Vec<(u32, u32, u64)> = self.compute_on(place).collect();
        all.sort_unstable_by_key(|&(pid, sm, mem)| (std::cmp::Reverse(sm), std::cmp::Reverse(mem), pid));
        let mut pids: Vec<u32> = Vec::with_capacity(all.len());
        for (pid, _, _) in all {
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
        pids.first().map(|&pid| (pid, pids.len() - 1))
    }

    /// Whether the process is a rank of a job over several GPUs: its job key is shared, and its world has more than
    /// one rank or another GPU process here shares the key.
    #[must_use]
    pub fn is_rank(&self, process: &HostProcess) -> bool {
        let Some(job) = process.job.as_ref().filter(|j| j.is_shared()) else { return false };
        job.world_size.is_some_and(|w| w > 1)
            || self.tick.gpu_processes.iter().filter_map(|g| g.pid).any(|pid| {
                pid != process.pid && self.process(pid).and_then(|p| p.job.as_ref()).is_some_and(|j| j.key == job.key)
            })
    }
}

/// The `DataLoader` workers' time over their gathers this tick, scaled to `span_ms` (compile workers left out):
/// summed over the workers that hold the step up, those within four fifths of the busiest one's producing share
/// (with in-order delivery the step waits for the slowest worker's batch; a worker with slack has its batches
/// ready). `None` without workers.
#[must_use]
pub fn worker_times(workers: &[&HostProcess], span_ms: f64) -> Option<WorkerTimes> {
    let feeding: Vec<&&HostProcess> = workers.iter().filter(|w| !w.is_compile_worker()).collect();
    if feeding.is_empty() {
        return None;
    }
    let each: Vec<WorkerTimes> = feeding.iter().filter_map(|w| one_worker(w, span_ms)).collect();
    let busiest = each.iter().map(|w| w.busiest_share).fold(0.0, f64::max);
    let mut out = WorkerTimes {
        count: u32::try_from(feeding.len()).unwrap_or(u32::MAX),
        busiest_share: busiest,
        ..WorkerTimes::default()
    };
    for w in each.iter().filter(|w| w.busiest_share >= BOTTLENECK_SHARE * busiest) {
        out.on_cpu_ms += w.on_cpu_ms;
        out.wait_cpu_ms += w.wait_cpu_ms;
        out.read_ms += w.read_ms;
        out.remote_ms += w.remote_ms;
        out.reclaim_ms += w.reclaim_ms;
        out.idle_ms += w.idle_ms;
    }
    Some(out)
}

/// Workers within this share of the busiest one's producing time hold the step up with it.
const BOTTLENECK_SHARE: f64 = 0.8;

/// One worker's time over its gather, scaled to `span_ms`, with its own producing share in `busiest_share`.
fn one_worker(w: &HostProcess, span_ms: f64) -> Option<WorkerTimes> {
    let times = w.times.as_ref().filter(|t| t.span_ms > 0)?;
    let scale = span_ms / f64::from(times.span_ms);
    // A worker's own threads (an OpenMP pool) wait for CPUs too: the walk over all of them says so when it ran.
    let (on_cpu, wait_cpu) = match &times.all {
        Some(all) if all.span_ms > 0 => {
            let s = span_ms / f64::from(all.span_ms);
            (f64::from(all.on_cpu_ms) * s, f64::from(all.wait_cpu_ms.unwrap_or(0)) * s)
        }
        _ => (f64::from(times.main.on_cpu_ms) * scale, f64::from(times.main.wait_cpu_ms.unwrap_or(0)) * scale),
    };
    let main_busy = f64::from(times.main.on_cpu_ms) + f64::from(times.main.wait_cpu_ms.unwrap_or(0));
    let asleep = (f64::from(times.span_ms) - main_busy).max(0.0) * scale;
    let mut out = WorkerTimes { count: 1, on_cpu_ms: on_cpu, wait_cpu_ms: wait_cpu, ..WorkerTimes::default() };
    match times.main.wait {
        Some(WaitKind::Read) => out.read_ms = asleep,
        Some(WaitKind::RemoteFs | WaitKind::Socket) => out.remote_ms = asleep,
        Some(WaitKind::Reclaim) => out.reclaim_ms = asleep,
        _ => out.idle_ms = asleep,
    }
    // Its main thread's own share: an OpenMP pool's summed time can exceed the span.
    let main_producing = (main_busy + if out.idle_ms > 0.0 { 0.0 } else { asleep / scale }) / f64::from(times.span_ms);
    out.busiest_share = main_producing.min(1.0);
    Some(out)
}

/// The cores a process used and wanted over its last gather: on a CPU, and on a CPU or waiting for one. From the
/// walk over all its threads where it ran, else its CPU use (and its main thread's wait).
fn cores(p: &HostProcess) -> (f64, f64) {
    let used = f64::from(p.cpu_pct.unwrap_or(0.0)) / 100.0;
    let Some(times) = p.times.as_ref() else { return (used, used) };
    if let Some(all) = times.all.as_ref().filter(|a| a.span_ms > 0) {
        let span = f64::from(all.span_ms);
        let on = f64::from(all.on_cpu_ms) / span;
        return (on, on + f64::from(all.wait_cpu_ms.unwrap_or(0)) / span);
    }
    let wait = f64::from(times.main.wait_cpu_ms.unwrap_or(0)) / f64::from(times.span_ms.max(1));
    (used, used + wait)
}

/// Who a wait for a CPU is owed to, for the job of `step` (with the processes below it): its cgroup's quota when it
/// throttles; the CPUs it is pinned to when it wants more than they have while others idle; its own threads when it
/// wants more than its CPUs; other users' processes for the CPUs they take from it.
#[must_use]
pub fn cpu_wait_split(
    machine: &MachineInfo,
    tick: &Tick,
    step: &HostProcess,
    below: &[&HostProcess],
    quota_throttled_pct: f64,
) -> CpuWaitSplit {
    let job = || std::iter::once(step).chain(below.iter().copied());
    let throttled = job().filter_map(|p| p.cgroup_cpu.as_ref()?.throttled_pct).fold(0.0_f32, f32::max);
    if f64::from(throttled) >= quota_throttled_pct {
        return CpuWaitSplit { quota: 1.0, ..CpuWaitSplit::default() };
    }
    let (used, wanted) = job().map(cores).fold((0.0, 0.0), |(u, w), (pu, pw)| (u + pu, w + pw));
    let per_cpu = &tick.host.per_cpu_busy_pct;
    let online: Vec<u32> =
        (0..per_cpu.len()).filter(|i| per_cpu[*i].is_some()).filter_map(|i| u32::try_from(i).ok()).collect();
    let allowed: Vec<u32> = step.allowed_cpus.clone().unwrap_or_else(|| online.clone());
    let capacity = if allowed.is_empty() { machine.n_cpus.max(1) as f64 } else { allowed.len() as f64 };
    let busy_of = |cpus: &mut dyn Iterator<Item = &u32>| -> f64 {
        cpus.filter_map(|c| per_cpu.get(usize::try_from(*c).ok()?).copied().flatten())
            .map(|b| f64::from(b) / 100.0)
            .sum()
    };
    // Others on the job's CPUs: what those CPUs did beyond the job itself; where per-CPU readings are missing, the
    // host's busy share, or what the scan of other processes measured.
    let others = if per_cpu.iter().any(Option::is_some) {
        (busy_of(&mut allowed.iter()) - used).max(0.0)
    } else if let Some(cpu) = tick.host.cpu {
        (f64::from(cpu.busy_pct) / 100.0 * machine.n_cpus as f64 - used).max(0.0) * capacity
            / machine.n_cpus.max(1) as f64
    } else {
        0.0
    };
    let own = (wanted - capacity).max(0.0);
    let outside: Vec<&u32> = online.iter().filter(|c| !allowed.contains(c)).collect();
    let idle_outside = outside.len() as f64 - busy_of(&mut outside.into_iter());
    if own > 0.0 && idle_outside >= 1.0 {
        return CpuWaitSplit { pinned: own, others, ..CpuWaitSplit::default() };
    }
    CpuWaitSplit { own, others, ..CpuWaitSplit::default() }
}

/// The GPU's readings for the account: NVML utilization and GPM SM activity, in percent (a slice: its own SM
/// activity, no utilization). `None` for a GPU lost or not answering.
#[must_use]
pub fn readings(gpu: &GpuTick, slice: Option<u32>) -> Option<(Option<f64>, Option<f64>)> {
    if gpu.state != crate::sample::GpuState::Ok {
        return None;
    }
    if let Some(gi) = slice {
        let sm = gpu.mig.iter().find(|m| m.gpu_instance_id == Some(gi))?.sm_active_pct?;
        return Some((None, Some(f64::from(sm))));
    }
    let util = gpu.util_pct.map(f64::from);
    let sm = gpu.gpm.and_then(|g| g.sm_active_pct).map(f64::from);
    (util.is_some() || sm.is_some()).then_some((util, sm))
}

/// Whether the GPU's PCIe link carried copies this tick: RX + TX at least a fifth of what the link can carry (a
/// fifth of a Gen5 x16 link is 12 GB/s; an input pipeline's batches move far less).
#[must_use]
pub fn pcie_busy(gpu: &GpuTick, max_gen: Option<u32>, max_width: Option<u32>) -> bool {
    let traffic_kb_s = f64::from(gpu.pcie_rx_kbps.unwrap_or(0)) + f64::from(gpu.pcie_tx_kbps.unwrap_or(0));
    let generation = gpu.pcie_gen.or(max_gen);
    let width = gpu.pcie_width.or(max_width);
    let link_kb_s =
        generation.and_then(crate::advice::rules::signals::lane_gb_s).zip(width).map(|(l, w)| l * f64::from(w) * 1e6);
    link_kb_s.is_some_and(|link| traffic_kb_s >= link / 5.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{AllThreads, ThreadTime, ThreadTimes};

    fn worker(pid: u32, on: u32, wait: u32, kind: WaitKind) -> HostProcess {
        HostProcess {
            pid,
            ppid: Some(100),
            role: ProcessRole::Child,
            times: Some(ThreadTimes {
                span_ms: 1000,
                main: ThreadTime { on_cpu_ms: on, wait_cpu_ms: Some(wait), state: Some('S'), wait: Some(kind) },
                all: None,
            }),
            ..HostProcess::default()
        }
    }

    #[test]
    fn workers_are_summed_by_what_they_did() {
        let (a, b) = (worker(101, 200, 100, WaitKind::Read), worker(102, 900, 0, WaitKind::Pipe));
        let w = worker_times(&[&a, &b], 2000.0).expect("workers");
        assert_eq!(w.count, 2);
        assert!((w.on_cpu_ms - 2200.0).abs() < 1e-6 && (w.wait_cpu_ms - 200.0).abs() < 1e-6, "{w:?}");
        assert!((w.read_ms - 1400.0).abs() < 1e-6 && (w.idle_ms - 200.0).abs() < 1e-6, "{w:?}");
        // An OpenMP pool inside a worker: the walk over its threads counts their waits for a CPU.
        let mut c = worker(103, 300, 50, WaitKind::Lock);
        c.times.as_mut().expect("times").all = Some(AllThreads {
            span_ms: 1000,
            threads: 35,
            on_cpu_ms: 3000,
            wait_cpu_ms: Some(9000),
            ..AllThreads::default()
        });
        let w = worker_times(&[&c], 1000.0).expect("workers");
        assert!((w.wait_cpu_ms - 9000.0).abs() < 1e-6, "{w:?}");
        assert!(worker_times(&[], 1000.0).is_none());
    }

    fn tick(per_cpu: &[f32]) -> Tick {
        let mut tick = Tick::default();
        tick.host.per_cpu_busy_pct = per_cpu.iter().map(|b| Some(*b)).collect();
        tick
    }

    fn step(cpu_pct: f32, allowed: Option<Vec<u32>>) -> HostProcess {
        HostProcess {
            pid: 100,
            role: ProcessRole::Gpu,
            cpu_pct: Some(cpu_pct),
            allowed_cpus: allowed,
            ..HostProcess::default()
        }
    }

    #[test]
    fn a_cpu_wait_is_owed_to_who_holds_the_cpus() {
        let machine = MachineInfo { n_cpus: 4, ..MachineInfo::default() };
        // Every CPU busy, the job uses one core: the others hold three.
        let mut busy_workers = worker(101, 300, 600, WaitKind::Pipe);
        busy_workers.cpu_pct = Some(30.0);
        let split = cpu_wait_split(&machine, &tick(&[100.0; 4]), &step(70.0, None), &[&busy_workers], 20.0);
        assert!(split.others > 2.5 && split.own < 1e-9, "{split:?}");
        // The job's own 35 threads a worker on 4 CPUs that nobody else uses: its own oversubscription.
        let mut omp = worker(101, 1000, 9000, WaitKind::Lock);
        omp.cpu_pct = Some(300.0);
        omp.times.as_mut().expect("times").all = Some(AllThreads {
            span_ms: 1000,
            threads: 35,
            on_cpu_ms: 3000,
            wait_cpu_ms: Some(9000),
            ..AllThreads::default()
        });
        let split = cpu_wait_split(&machine, &tick(&[100.0; 4]), &step(100.0, None), &[&omp], 20.0);
        assert!(split.own > 8.0 && split.others < 0.5, "{split:?}");
        // Pinned to 2 CPUs while the other 2 idle: the pin.
        let split =
            cpu_wait_split(&machine, &tick(&[100.0, 100.0, 0.0, 0.0]), &step(100.0, Some(vec![0, 1])), &[&omp], 20.0);
        assert!(split.pinned > 8.0 && split.own < 1e-9, "{split:?}");
        // A throttling quota is the cause whatever else.
        let mut quota = step(100.0, None);
        quota.cgroup_cpu =
            Some(crate::sample::CgroupCpu { throttled_pct: Some(60.0), ..crate::sample::CgroupCpu::default() });
        assert!((cpu_wait_split(&machine, &tick(&[100.0; 4]), &quota, &[], 20.0).quota - 1.0).abs() < 1e-9);
    }
}
