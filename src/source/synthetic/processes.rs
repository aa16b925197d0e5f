//! The processes of one GPU's slot at one tick: its job's launcher, GPU process and workers (from the job's
//! shape), the ranks of a multi-GPU job, the scale extras and the `churn` jobs that come and go.

use super::host::HostLoad;
use super::jobs::{COMPUTE_JOB, InputShape, JobShape, job_shape, worker};
use super::spec::{CHURN_LIFETIME_MS, SyntheticSpec, Workload};
use super::{GIB, MIB, TICKS_PER_SECOND, everyday, input_cases, jitter, threads};
use crate::sample::{GpuInfo, GpuProcess, HostProcess, ProcessKind, ProcessRole, Tick, UnixMs};

/// Process slots per GPU in `churn` (plus `processes_per_gpu`).
const CHURN_SLOTS: u32 = 6;

/// What a `churn` job's threads do: its step thread runs (its CPU and state are the job's), its one worker waits on
/// its index queue or, in D, reads.
const CHURN_JOB: JobShape = JobShape { workers: &[worker('S', 0.0, 0)], ..COMPUTE_JOB };

struct ProcSpec<'a> {
    pid: u32,
    ppid: u32,
    role: ProcessRole,
    user: &'a str,
    uid: u32,
    name: &'a str,
    cmdline: String,
    state: char,
    cpu_pct: f32,
    rss_bytes: u64,
    read_bytes_per_s: u64,
    started_secs_before: u64,
}

fn host_process(spec: &SyntheticSpec, info: &GpuInfo, at_ms: UnixMs, p: ProcSpec<'_>) -> HostProcess {
    let boot_ms = spec.start_ms - 86_400_000;
    let started_at_ms = at_ms.saturating_sub(p.started_secs_before * 1000).max(boot_ms);
    let start_ticks = (started_at_ms - boot_ms) / 1000 * TICKS_PER_SECOND;
    HostProcess {
        pid: p.pid,
        ppid: Some(p.ppid),
        role: p.role,
        uid: Some(p.uid),
        user: Some(p.user.to_owned()),
        name: p.name.to_owned(),
        cmdline: p.cmdline,
        state: Some(p.state),
        cpu_pct: Some(p.cpu_pct),
        rss_bytes: Some(p.rss_bytes),
        read_bytes_per_s: Some(p.read_bytes_per_s),
        write_bytes_per_s: Some(0),
        allowed_cpus: info.local_cpus.clone(),
        nspid: Some(vec![p.pid]),
        start_ticks: Some(start_ticks),
        started_at_ms: Some(started_at_ms),
        n_threads: Some(if p.role == ProcessRole::Gpu { 48 } else { 4 }),
        threads_in_d: Some(u32::from(p.state == 'D')),
        unreadable: None,
        // The main thread does the process's work in these scenarios.
        busiest_thread: (p.role == ProcessRole::Gpu).then(|| crate::sample::ThreadCpu {
            tid: p.pid,
            name: p.name.to_owned(),
            cpu_pct: p.cpu_pct.min(100.0),
        }),
        cgroup_cpu: None,
        remote_waits: None,
        remote_files: None,
        job: None,
        fs_waits: None,
        write_waits: None,
        serving: None,
        times: None,
    }
}

/// Makes the job of the one GPU rank 5 of a torchrun job over 16 ranks whose master is another node.
fn make_remote_rank(slot: &Slot<'_>, tick: &mut Tick) {
    let main = slot.base_pid() + 1;
    for p in tick.processes.iter_mut().filter(|p| p.pid == main) {
        p.job = Some(crate::sample::JobInfo {
            key: "torch:10.0.0.1:29500/none".to_owned(),
            rank: Some(5),
            local_rank: Some(0),
            world_size: Some(16),
            launcher: Some("torchrun".to_owned()),
            master: Some("10.0.0.1:29500".to_owned()),
            ..crate::sample::JobInfo::default()
        });
    }
}

/// The scenarios whose GPU process is seen differently: a server's listening port, a process outside gpusight's
/// PID namespace (only its PID is known, as the host sampler marks it), a MIG slice's per-process utilization
/// (N/A, as the whole GPU's).
fn adjust_seen(slot: &Slot<'_>, workload: Workload, tick: &mut Tick) {
    let main = slot.base_pid() + 1;
    match workload {
        Workload::Serving => {
            // Four clients' keep-alive connections stay open; each burst of requests opens four more.
            let accepted = Some(4 * ((slot.n + 5) / 9));
            let serving = crate::sample::Serving { ports: vec![8000], connections: 3, accepted };
            tick.processes.iter_mut().filter(|p| p.pid == main).for_each(|p| p.serving = Some(serving.clone()));
        }
        Workload::ServeRare => {
            // One request every 45 s (the first at 10 s), over before any read: only the count of accepted
            // connections sees it.
            let serving =
                crate::sample::Serving { ports: vec![8000], connections: 0, accepted: Some((slot.n + 35) / 45) };
            tick.processes.iter_mut().filter(|p| p.pid == main).for_each(|p| p.serving = Some(serving.clone()));
        }
        Workload::Unseen => {
            tick.processes.retain(|p| p.pid != main && p.ppid != Some(main) && p.pid != slot.base_pid());
            tick.processes.push(HostProcess {
                pid: main,
                unreadable: Some(crate::host::OUTSIDE_NAMESPACE.to_owned()),
                ..HostProcess::default()
            });
        }
        Workload::MigSlice => {
            for p in tick.gpu_processes.iter_mut().filter(|p| p.gpu_index == slot.info.index) {
                if p.pid == Some(main) {
                    (p.sm_util_pct, p.mem_util_pct) = (None, None);
                }
                (p.gpu_instance_id, p.compute_instance_id) = (Some(super::gpu::MIG_SLICE_GI), Some(0));
            }
        }
        _ => {}
    }
}

/// Makes the job of one GPU a rank of one torchrun job over every GPU: GPU 0's launcher runs torchrun and is
/// every rank's parent (the other GPUs' launchers go), every process belongs to one user, and each rank carries
/// its job identity as the host sampler reads it from `/proc/PID/environ`.
fn make_rank(slot: &Slot<'_>, tick: &mut Tick) {
    let (torchrun, launcher, main) = (2000, slot.base_pid(), slot.base_pid() + 1);
    if slot.info.index > 0 {
        tick.processes.retain(|p| p.pid != launcher);
    }
    let rank = slot.info.index;
    for p in tick.processes.iter_mut().filter(|p| (launcher..launcher + 100).contains(&p.pid)) {
        (p.user, p.uid) = (Some("alice".to_owned()), Some(1001));
        if p.pid == torchrun {
            "torchrun".clone_into(&mut p.name);
            p.cmdline =
                format!("/usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node={} train_ddp.py", slot.spec.n_gpus);
        } else if p.pid == main {
            p.ppid = Some(torchrun);
            p.job = Some(crate::sample::JobInfo {
                key: "torch:127.0.0.1:29500/none".to_owned(),
                rank: Some(rank),
                local_rank: Some(rank),
                world_size: Some(slot.spec.n_gpus),
                launcher: Some("torchrun".to_owned()),
                master: Some("127.0.0.1:29500".to_owned()),
                ..crate::sample::JobInfo::default()
            });
        }
    }
}

/// One GPU's slot at one tick: what every process of it is built from.
pub(super) struct Slot<'a> {
    pub(super) spec: &'a SyntheticSpec,
    pub(super) info: &'a GpuInfo,
    pub(super) n: u64,
    pub(super) at_ms: UnixMs,
}

impl Slot<'_> {
    pub(super) fn base_pid(&self) -> u32 {
        2000 + self.info.index * 1000
    }

    pub(super) fn elapsed_s(&self) -> u64 {
        (self.at_ms - self.spec.start_ms) / 1000
    }

    pub(super) fn user(&self) -> (&'static str, u32) {
        let users = ["alice", "bob", "carol", "dave"];
        (users[self.info.index as usize % users.len()], 1001 + self.info.index % 4)
    }

    fn process(&self, p: ProcSpec<'_>) -> HostProcess {
        host_process(self.spec, self.info, self.at_ms, p)
    }
}

pub(super) fn add_processes(
    spec: &SyntheticSpec,
    info: &GpuInfo,
    workload: Workload,
    n: u64,
    at_ms: UnixMs,
    tick: &mut Tick,
    load: &mut HostLoad,
) {
    let slot = Slot { spec, info, n, at_ms };
    if let Some(job) = job_shape(workload) {
        let from = tick.processes.len();
        add_job(&slot, &job, tick);
        if matches!(
            workload,
            Workload::RankWaiting
                | Workload::RankStarved
                | Workload::RankHung
                | Workload::RankCpuBusy
                | Workload::RankComm
                | Workload::NcclTcp
        ) {
            make_rank(&slot, tick);
        }
        if workload == Workload::RankSpinInput {
            make_remote_rank(&slot, tick);
        }
        adjust_seen(&slot, workload, tick);
        load.busy_cores += job.load.busy_cores;
        load.iowait_cores += job.load.iowait_cores;
        load.psi_io = load.psi_io.max(job.load.psi_io);
        load.psi_cpu = load.psi_cpu.max(job.load.psi_cpu);
        input_cases::refine(workload, &slot, tick);
        everyday::refine(workload, &slot, tick);
        everyday::host(workload, &slot, load);
        // The slot's processes (the earlier slots' are never removed, so they start at `from`).
        threads::add_times(&slot, workload, &job, &mut tick.processes[from..]);
    }
    if workload == Workload::Churn {
        add_churn(spec, info, n, at_ms, tick);
        load.busy_cores += f64::from(CHURN_SLOTS) * 0.5;
    }
    add_scale_extras(&slot, tick);
}

/// The job of one GPU: its launcher, the GPU process, its workers, and what NVML lists.
fn add_job(slot: &Slot<'_>, job: &JobShape, tick: &mut Tick) {
    let (user, uid) = slot.user();
    let (launcher_pid, main_pid) = (slot.base_pid(), slot.base_pid() + 1);
    let elapsed_s = slot.elapsed_s();
    let seed = slot.spec.seed ^ u64::from(slot.info.index) << 40;
    let gpu = tick.gpu(slot.info.index).cloned().unwrap_or_default();
    let gpu_used_bytes = gpu.mem_used_bytes.unwrap_or(0).saturating_sub(560 * MIB);
    let sm = gpu.util_pct.unwrap_or(0).saturating_sub(1);
    let common = ProcSpec {
        pid: launcher_pid,
        ppid: 1,
        role: ProcessRole::Parent,
        user,
        uid,
        name: "bash",
        cmdline: "bash run.sh".to_owned(),
        state: 'S',
        cpu_pct: 0.0,
        rss_bytes: 4 * MIB,
        read_bytes_per_s: 0,
        started_secs_before: job.age_s + 5 + elapsed_s,
    };
    // One state a second of the run, whatever the interval: at a tenth of a second, the main thread's gathers (one
    // a second) would otherwise always meet the same state of the cycle.
    let state = char::from(job.states[usize::try_from(elapsed_s).unwrap_or(0) % job.states.len()]);
    let read = u64::from(jitter(seed, slot.n, 20, job.read_mib.0, job.read_mib.1)) * MIB;
    tick.processes.push(slot.process(ProcSpec { cmdline: common.cmdline.clone(), ..common }));
    let mut main = slot.process(ProcSpec {
        pid: main_pid,
        ppid: launcher_pid,
        role: ProcessRole::Gpu,
        name: job.name,
        cmdline: job.cmdline.to_owned(),
        state,
        cpu_pct: job.cpu_pct,
        rss_bytes: 6 * GIB,
        read_bytes_per_s: read,
        started_secs_before: job.age_s + elapsed_s,
        ..common
    });
    if let Some(write) = job.write_mib {
        main.write_bytes_per_s = Some(u64::from(jitter(seed, slot.n, 21, write.0, write.1)) * MIB);
    }
    with_input(&mut main, &job.input, false);
    tick.processes.push(main);
    tick.gpu_processes.push(GpuProcess {
        gpu_index: slot.info.index,
        pid: Some(main_pid),
        kind: ProcessKind::Compute,
        used_gpu_memory_bytes: Some(gpu_used_bytes),
        sm_util_pct: Some(sm),
        mem_util_pct: Some(sm / 4),
        enc_util_pct: Some(0),
        dec_util_pct: Some(0),
        gpu_instance_id: None,
        compute_instance_id: None,
    });
    for (k, worker) in job.workers.iter().enumerate() {
        let mut child = slot.process(ProcSpec {
            pid: main_pid + 1 + u32::try_from(k).unwrap_or(0),
            ppid: main_pid,
            role: ProcessRole::Child,
            user,
            uid,
            name: "pt_data_worker",
            cmdline: job.cmdline.to_owned(),
            state: worker.state,
            cpu_pct: worker.cpu_pct,
            rss_bytes: 900 * MIB,
            read_bytes_per_s: worker.read_bytes_per_s,
            started_secs_before: job.age_s - 10 + elapsed_s,
        });
        child.n_threads = Some(worker.pool.max(4));
        with_input(&mut child, &job.input, true);
        tick.processes.push(child);
    }
}

/// Sets what the scenario says about a process's input path: its cgroup's quota and throttling, and for a worker
/// its network waits and connections. The older scenarios set none of it.
fn with_input(process: &mut HostProcess, input: &InputShape, worker: bool) {
    if let Some((path, quota_cpus, throttled_pct)) = input.cgroup {
        process.cgroup_cpu = Some(crate::sample::CgroupCpu {
            path: path.to_owned(),
            quota_cpus: Some(quota_cpus),
            cpuset_cpus: None,
            throttled_pct: Some(throttled_pct),
            throttled_ms_per_s: Some(throttled_pct * 10.0),
        });
    }
    if let Some((waits, tcp)) = input.worker_remote {
        process.remote_waits = Some(if worker { waits } else { 0 });
        process.remote_files =
            Some(crate::sample::RemoteFiles { tcp_connections: if worker { tcp } else { 0 }, ..Default::default() });
    }
}

/// Extra processes for scale tests: small compute jobs on this GPU.
fn add_scale_extras(slot: &Slot<'_>, tick: &mut Tick) {
    let users = ["alice", "bob", "carol", "dave"];
    let seed = slot.spec.seed ^ u64::from(slot.info.index) << 40;
    for k in 0..slot.spec.processes_per_gpu {
        let pid = slot.base_pid() + 100 + k;
        let stream = 100 + u64::from(k);
        tick.processes.push(slot.process(ProcSpec {
            pid,
            ppid: 1,
            role: ProcessRole::Gpu,
            user: users[k as usize % users.len()],
            uid: 1001 + k % 4,
            name: "python",
            cmdline: format!("python worker.py --shard {k}"),
            state: if k % 3 == 0 { 'R' } else { 'S' },
            cpu_pct: f32::from(u16::try_from(jitter(seed, slot.n, stream, 20.0, 20.0)).unwrap_or(u16::MAX)),
            rss_bytes: 512 * MIB,
            read_bytes_per_s: 0,
            started_secs_before: 100 + u64::from(k) + slot.elapsed_s(),
        }));
        tick.gpu_processes.push(GpuProcess {
            gpu_index: slot.info.index,
            pid: Some(pid),
            kind: ProcessKind::Compute,
            used_gpu_memory_bytes: Some(256 * MIB),
            sm_util_pct: Some(jitter(seed, slot.n, stream + 1, 5.0, 5.0)),
            mem_util_pct: Some(1),
            enc_util_pct: Some(0),
            dec_util_pct: Some(0),
            gpu_instance_id: None,
            compute_instance_id: None,
        });
    }
}

/// The `churn` processes of one GPU at one tick: slot `k` runs generation `g` of its job, which started at
/// `g * CHURN_LIFETIME_MS - offset_k` and exits `CHURN_LIFETIME_MS` later; each generation has a new PID (PIDs
/// wrap below the kernel's `pid_max`, so a long run also reuses PIDs with new start times), plus one worker child.
fn add_churn(spec: &SyntheticSpec, info: &GpuInfo, n: u64, at_ms: UnixMs, tick: &mut Tick) {
    const FIRST_PID: u64 = 100_000;
    const PID_SPAN: u64 = 4_000_000;
    let elapsed_ms = at_ms - spec.start_ms;
    let seed = spec.seed ^ u64::from(info.index) << 40;
    let slots = u64::from(CHURN_SLOTS);
    let n_gpus = u64::from(spec.n_gpus.max(1));
    for k in 0..slots {
        // Whole seconds, so a job's start time (in clock ticks, derived at second resolution) stays put.
        let offset_ms = k * CHURN_LIFETIME_MS / slots / 1000 * 1000;
        let generation = (elapsed_ms + offset_ms) / CHURN_LIFETIME_MS;
        let born_ms = (generation * CHURN_LIFETIME_MS).saturating_sub(offset_ms);
        // Two PIDs per job (the job and its worker), unique per (generation, GPU, slot) until they wrap.
        let serial = (generation * n_gpus + u64::from(info.index)) * slots + k;
        let pid = u32::try_from(FIRST_PID + (serial * 2) % PID_SPAN).unwrap_or(u32::MAX);
        let age_s = (elapsed_ms - born_ms) / 1000;
        let stream = 300 + k;
        let cpu = f32::from(u16::try_from(jitter(seed, n, stream, 60.0, 40.0)).unwrap_or(u16::MAX));
        let job = |pid, ppid, role, name: &str, cpu_pct, state| ProcSpec {
            pid,
            ppid,
            role,
            user: ["alice", "bob", "carol", "dave"][(serial % 4) as usize],
            uid: 1001 + u32::try_from(serial % 4).unwrap_or(0),
            name: "python",
            cmdline: format!("python {name} --job {serial}"),
            state,
            cpu_pct,
            rss_bytes: (1 + serial % 4) * GIB,
            read_bytes_per_s: u64::from(jitter(seed, n, stream + 1, 40.0, 40.0)) * MIB,
            started_secs_before: age_s,
        };
        let from = tick.processes.len();
        tick.processes.push(host_process(spec, info, at_ms, job(pid, 1, ProcessRole::Gpu, "sweep.py", cpu, 'R')));
        let worker = job(
            pid + 1,
            pid,
            ProcessRole::Child,
            "sweep.py worker",
            cpu / 2.0,
            if n.is_multiple_of(7) { 'D' } else { 'S' },
        );
        tick.processes.push(host_process(spec, info, at_ms, worker));
        let slot = Slot { spec, info, n, at_ms };
        threads::add_times(&slot, Workload::Churn, &CHURN_JOB, &mut tick.processes[from..]);
        tick.gpu_processes.push(GpuProcess {
            gpu_index: info.index,
            pid: Some(pid),
            kind: ProcessKind::Compute,
            // Grows over the job's life, as a job warming its caches does.
            used_gpu_memory_bytes: Some((2 + age_s.min(4)) * GIB),
            sm_util_pct: Some(jitter(seed, n, stream + 2, 50.0, 40.0)),
            mem_util_pct: Some(10),
            enc_util_pct: Some(0),
            dec_util_pct: Some(0),
            gpu_instance_id: None,
            compute_instance_id: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::SyntheticSource;
    use super::super::test_source as source;
    use super::*;

    #[test]
    fn scale_lists_every_process() {
        let tick = source("scale:8x1000").tick_at(0);
        assert_eq!(tick.gpu_processes.len(), 1000 + 8);
    }

    #[test]
    fn churn_replaces_processes_with_new_pids() {
        let s = source("churn:2");
        let pids = |n: u64| -> Vec<u32> {
            let mut pids: Vec<u32> = s.tick_at(n).gpu_processes.iter().filter_map(|p| p.pid).collect();
            pids.sort_unstable();
            pids
        };
        let first = pids(0);
        assert_eq!(first.len(), 2 * CHURN_SLOTS as usize);
        // One second later (1 s interval), at most the slot whose generation turned over has a new PID.
        let later = pids(CHURN_LIFETIME_MS / 1000);
        assert!(later.iter().all(|p| !first.contains(p)), "every job was replaced after a lifetime");
        // A job keeps one start time over its life, at any interval, so it keeps one history.
        let fast =
            SyntheticSource::new(SyntheticSpec { interval_ms: 10, ..SyntheticSpec::parse("churn:1").expect("spec") });
        let start_of = |n: u64| {
            let tick = fast.tick_at(n);
            tick.gpu_processes
                .iter()
                .filter_map(|p| tick.process(p.pid?))
                .map(|h| (h.pid, h.start_ticks))
                .collect::<Vec<_>>()
        };
        let early = start_of(1);
        for n in 2..100 {
            for (pid, start) in start_of(n) {
                if let Some((_, was)) = early.iter().find(|(p, _)| *p == pid) {
                    assert_eq!(start, *was, "PID {pid} at tick {n}");
                }
            }
        }
        let tick = s.tick_at(3);
        for gpu_process in &tick.gpu_processes {
            let pid = gpu_process.pid.expect("pid");
            let host = tick.process(pid).expect("host process");
            assert!(tick.processes.iter().any(|c| c.ppid == Some(pid)), "PID {pid} has a worker");
            assert!(host.start_ticks.is_some());
        }
    }
}
