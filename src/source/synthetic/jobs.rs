//! The job each workload runs on its GPU's host, as data: a launcher, the GPU process, its `DataLoader` workers,
//! what they add to the host's load, where their input comes from and how their threads spend their time
//! ([`JobShape`], [`ThreadShape`]).

use super::MIB;
use super::gpu::{Spread, fixed};
use super::spec::Workload;
use super::{everyday, input_cases};
use crate::sample::WaitKind;

/// The input states of the input-bound process over ten reads on the real H200.
const INPUT_STATES: &[u8] = b"RDRRDDRDRR";

/// What a workload adds to the host's load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LoadShape {
    pub(super) busy_cores: f64,
    pub(super) iowait_cores: f64,
    pub(super) psi_io: f32,
    pub(super) psi_cpu: f32,
}

pub(super) const NO_LOAD: LoadShape = LoadShape { busy_cores: 0.0, iowait_cores: 0.0, psi_io: 0.0, psi_cpu: 0.0 };

/// A `DataLoader` worker child of the job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct WorkerShape {
    pub(super) state: char,
    pub(super) cpu_pct: f32,
    pub(super) read_bytes_per_s: u64,
    /// Its threads' time runnable but waiting for a CPU, percent of one core (summed over its threads).
    pub(super) wait_cpu_pct: f32,
    /// What its main thread sleeps in when a gather finds it asleep: its index queue's pipe while it keeps up, a
    /// read, a socket.
    pub(super) sleep: WaitKind,
    /// The threads that share its work (an OpenMP or OpenCV pool: 1 without one); it runs at least four threads.
    pub(super) pool: u32,
}

/// A worker in `state` at `cpu_pct` of a core reading `read_mib` MiB/s, with no wait for a CPU and no thread pool:
/// asleep in a read when in D, else on its index queue.
pub(super) const fn worker(state: char, cpu_pct: f32, read_mib: u64) -> WorkerShape {
    WorkerShape {
        state,
        cpu_pct,
        read_bytes_per_s: read_mib * MIB,
        wait_cpu_pct: 0.0,
        sleep: if state == 'D' { WaitKind::Read } else { WaitKind::Pipe },
        pool: 1,
    }
}

/// How the GPU process's threads spend their time besides what its process readings say (the main thread's CPU is
/// its busiest thread's, its state the process's): the thread times the account reads ([`super::threads`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ThreadShape {
    /// The main thread's time on a CPU, share of a second, where it differs from the process's busiest thread's
    /// (a step thread that waits on a lock while another thread of the process works).
    pub(super) main_cpu: Option<f32>,
    /// The main thread's time runnable but waiting for a CPU, share of a second.
    pub(super) main_wait_cpu: f32,
    /// What the main thread sleeps in when a gather finds it asleep (S or D), cycled by tick.
    pub(super) main_sleeps: &'static [WaitKind],
    /// The other threads (CUDA's, the pin-memory thread, NCCL's, an OpenMP pool): their wait for a CPU (cores'
    /// worth), how many are runnable at a walk, and what the sleeping ones wait in.
    pub(super) others_wait_cpu: f32,
    pub(super) others_runnable: u32,
    pub(super) others_sleep: WaitKind,
}

/// A training step's thread: it launches the step's kernels and blocks in the driver for their results.
pub(super) const STEP_THREADS: ThreadShape = ThreadShape {
    main_cpu: None,
    main_wait_cpu: 0.005,
    main_sleeps: &[WaitKind::Gpu],
    others_wait_cpu: 0.0,
    others_runnable: 0,
    others_sleep: WaitKind::Lock,
};

/// A step that waits for its `DataLoader`'s batches on the workers' result queue.
pub(super) const LOADER_STEP: ThreadShape = ThreadShape { main_sleeps: &[WaitKind::Pipe], ..STEP_THREADS };

/// Where the job's input comes from, for the scenarios about it (all `None` in the older scenarios).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct InputShape {
    /// The job's cgroup: (path, quota in CPUs, share of periods throttled %).
    pub(super) cgroup: Option<(&'static str, f32, f32)>,
    /// Per worker: threads in a network wait, and established TCP connections.
    pub(super) worker_remote: Option<(u32, u32)>,
}

const LOCAL_INPUT: InputShape = InputShape { cgroup: None, worker_remote: None };

/// The training job of one GPU: a launcher shell, the GPU process, and its `DataLoader` workers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct JobShape {
    pub(super) name: &'static str,
    pub(super) cmdline: &'static str,
    /// Scheduler states, one per second of the run, cycled.
    pub(super) states: &'static [u8],
    pub(super) cpu_pct: f32,
    /// Read rate, MiB/s (jitter stream 20), and write rate (stream 21; `None`: 0 B/s).
    pub(super) read_mib: Spread,
    pub(super) write_mib: Option<Spread>,
    /// Seconds it has run when the scenario starts.
    pub(super) age_s: u64,
    pub(super) load: LoadShape,
    pub(super) workers: &'static [WorkerShape],
    pub(super) input: InputShape,
    /// How its threads spend their time; `None` where the scenario leaves thread times out (see [`job_shape`]).
    pub(super) threads: Option<ThreadShape>,
}

pub(super) const COMPUTE_JOB: JobShape = JobShape {
    name: "python",
    cmdline: "python train.py --model llama-8b --batch-size 16 --bf16",
    states: b"R",
    cpu_pct: 100.0,
    read_mib: fixed(0.0),
    write_mib: None,
    age_s: 3600,
    load: LoadShape { busy_cores: 1.0, psi_io: 2.2, ..NO_LOAD },
    workers: &[],
    input: LOCAL_INPUT,
    threads: Some(STEP_THREADS),
};

/// The job each workload runs, if any (`idle` and `churn` have none of this shape).
pub(super) fn job_shape(workload: Workload) -> Option<JobShape> {
    use Workload as W;
    Some(match workload {
        W::Idle | W::Churn => return None,
        W::Compute
        | W::Lost
        | W::Thermal
        | W::PcieDowngraded
        | W::HwBlip
        | W::EccCorrected
        | W::ClocksLimited
        | W::HbmHot
        | W::MemoryBound => COMPUTE_JOB,
        W::InputBound => JobShape {
            cmdline: "python train.py --data /mnt/nfs/imagenet --workers 0",
            states: INPUT_STATES,
            cpu_pct: 35.0,
            read_mib: Spread(380.0, 40.0),
            age_s: 1800,
            load: LoadShape { busy_cores: 0.35, iowait_cores: 0.6, psi_io: 36.8, psi_cpu: 0.0 },
            // It reads its samples itself: asleep in the reads whenever it is not on a CPU.
            threads: Some(READING_STEP),
            ..COMPUTE_JOB
        },
        W::CpuBound => JobShape {
            cmdline: "python finetune.py --tokenize-on-the-fly",
            cpu_pct: 99.8,
            // The raw text it tokenizes: a little I/O, read by the step's own thread.
            read_mib: Spread(3.0, 1.0),
            age_s: 2400,
            load: LoadShape { busy_cores: 1.0, psi_io: 1.0, psi_cpu: 6.1, ..NO_LOAD },
            ..COMPUTE_JOB
        },
        // The checkpoint writer: in D most samples (the states of the input-bound job), writing 800 MiB/s.
        W::Writer => JobShape {
            cmdline: "python train.py --save-every 5s",
            states: INPUT_STATES,
            cpu_pct: 40.0,
            write_mib: Some(Spread(800.0, 60.0)),
            age_s: 1200,
            load: LoadShape { busy_cores: 0.4, iowait_cores: 0.6, psi_io: 30.0, psi_cpu: 0.0 },
            threads: Some(ThreadShape { main_sleeps: &[WaitKind::Write], ..STEP_THREADS }),
            ..COMPUTE_JOB
        },
        W::IdleHolder => JobShape {
            cmdline: "python -m ipykernel_launcher -f kernel-3f2a.json",
            states: b"S",
            cpu_pct: 0.0,
            age_s: 7200,
            load: NO_LOAD,
            // A notebook kernel waiting for its user sleeps in its event loop's poll at 0 % CPU: the job does nothing.
            threads: Some(ThreadShape { main_sleeps: &[WaitKind::Poll], ..STEP_THREADS }),
            ..COMPUTE_JOB
        },
        W::Leak => JobShape {
            cmdline: "python serve.py --cache-kv",
            cpu_pct: 60.0,
            age_s: 600,
            load: LoadShape { busy_cores: 0.6, ..NO_LOAD },
            threads: Some(STEP_THREADS),
            ..COMPUTE_JOB
        },
        W::Loader => JobShape {
            cmdline: "python train.py --workers 2",
            states: b"S",
            cpu_pct: 30.0,
            age_s: 900,
            load: LoadShape { busy_cores: 1.3, iowait_cores: 0.3, psi_io: 30.2, psi_cpu: 0.0 },
            workers: LOADER_WORKERS,
            // The step waits on the workers' queue: one worker decodes and waits for work, the other reads in D.
            threads: Some(LOADER_STEP),
            ..COMPUTE_JOB
        },
        W::RankWaiting | W::RankStarved | W::RankHung | W::RankCpuBusy | W::RankComm | W::RankSpinInput => {
            return rank_job(workload);
        }
        // Servers and a job whose allocator holds the card; a job seen from a container; one on a MIG slice.
        W::Serving | W::ServeRare | W::VramCached => return Some(quiet_job(workload)),
        W::Unseen => JobShape { cmdline: "python train.py", states: b"S", cpu_pct: 45.0, ..COMPUTE_JOB },
        W::MigSlice => JobShape { cmdline: "python train.py --model resnet18", ..COMPUTE_JOB },
        _ if input_cases::job(workload).is_some() => return input_cases::job(workload),
        _ if everyday::job(workload).is_some() => return everyday::job(workload),
        _ => return host_wait_job(workload),
    })
}

/// The jobs that look idle or full and are not: a bursty server (asleep between requests), a server that answers
/// rarely, a job whose caching allocator holds the card.
fn quiet_job(workload: Workload) -> JobShape {
    // A server sleeps in its event loop's poll between requests.
    let server = JobShape {
        states: b"S",
        age_s: 3600,
        threads: Some(ThreadShape { main_sleeps: &[WaitKind::Poll], ..STEP_THREADS }),
        ..COMPUTE_JOB
    };
    match workload {
        Workload::Serving => JobShape {
            cmdline: "python serve.py --model resnet50 --port 8000",
            cpu_pct: 3.0,
            load: LoadShape { busy_cores: 0.1, ..NO_LOAD },
            ..server
        },
        Workload::ServeRare => {
            JobShape { cmdline: "python serve.py --model llama-7b --port 8000", cpu_pct: 0.5, load: NO_LOAD, ..server }
        }
        _ => JobShape { cmdline: "python train_jax.py --model gemma-7b --batch-size 64", ..COMPUTE_JOB },
    }
}

/// The `loader` job's two workers: one decoding, one in D reading.
const LOADER_WORKERS: &[WorkerShape] = &[worker('R', 55.0, 20), worker('D', 48.0, 310)];

/// Eight `DataLoader` workers, each at a quarter of a core: what a 2-CPU quota leaves them. Throttled, they wait
/// runnable most of each period.
const QUOTA_WORKERS: &[WorkerShape] = &[WorkerShape { wait_cpu_pct: 60.0, ..worker('R', 25.0, 0) }; 8];

/// Eight `DataLoader` workers asleep most of the time, waiting for their HTTP answers.
const REMOTE_WORKERS: &[WorkerShape] = &[WorkerShape { sleep: WaitKind::Socket, ..worker('S', 9.0, 0) }; 8];

/// Twelve `DataLoader` workers that keep up: mostly asleep.
const IDLE_WORKERS: &[WorkerShape] = &[worker('S', 6.0, 2); 12];

/// The one `DataLoader` worker of the starved rank, pegged.
const ONE_PEGGED_WORKER: &[WorkerShape] = &[worker('R', 99.5, 3)];

/// A step that reads its input itself: asleep in the reads whenever it is not on a CPU.
pub(super) const READING_STEP: ThreadShape = ThreadShape { main_sleeps: &[WaitKind::Read], ..STEP_THREADS };

/// The ranks of a torchrun job over several GPUs.
fn rank_job(workload: Workload) -> Option<JobShape> {
    use Workload as W;
    let rank = JobShape {
        cmdline: "/usr/bin/python3 -u train_ddp.py --arch resnet50 --workers 12",
        states: b"S",
        cpu_pct: 40.0,
        age_s: 900,
        load: LoadShape { busy_cores: 1.2, psi_io: 1.0, psi_cpu: 2.0, ..NO_LOAD },
        workers: IDLE_WORKERS,
        // Blocked in the driver until the step's collectives complete.
        threads: Some(STEP_THREADS),
        ..COMPUTE_JOB
    };
    Some(match workload {
        W::RankWaiting => rank,
        W::RankHung => rank,
        W::RankStarved => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --arch resnet50 --workers 1",
            cpu_pct: 30.0,
            load: LoadShape { busy_cores: 1.4, psi_io: 1.0, psi_cpu: 4.0, ..NO_LOAD },
            workers: ONE_PEGGED_WORKER,
            threads: Some(LOADER_STEP),
            ..rank
        },
        // Rank 0's evaluation: the main thread computes metrics on the CPU; its workers wait for the next epoch.
        W::RankCpuBusy => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --arch resnet50 --workers 12 --eval-on-rank0",
            states: b"R",
            cpu_pct: 100.0,
            threads: Some(STEP_THREADS),
            ..rank
        },
        // The main thread spins in a synchronize while the all-reduce crosses PCIe.
        W::RankComm => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --arch vit-h --workers 8",
            states: b"R",
            cpu_pct: 100.0,
            threads: Some(STEP_THREADS),
            ..rank
        },
        W::RankSpinInput => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --data /mnt/nfs/imagenet --workers 0",
            states: INPUT_STATES,
            cpu_pct: 35.0,
            read_mib: Spread(380.0, 40.0),
            load: LoadShape { busy_cores: 0.35, iowait_cores: 0.6, psi_io: 36.8, psi_cpu: 0.0 },
            workers: &[],
            // Its step thread reads its own input (num_workers=0) from NFS.
            threads: Some(ThreadShape { main_sleeps: &[WaitKind::Read], ..STEP_THREADS }),
            ..rank
        },
        _ => return None,
    })
}

/// The jobs of the scenarios where a GPU waits on its host: underfed, launches, copies, a CPU quota, a remote dataset.
fn host_wait_job(workload: Workload) -> Option<JobShape> {
    use Workload as W;
    let loader = JobShape {
        cmdline: "python train.py --workers 8 --batch-size 128",
        states: b"S",
        cpu_pct: 35.0,
        age_s: 1500,
        load: LoadShape { busy_cores: 2.3, psi_io: 1.0, psi_cpu: 20.0, ..NO_LOAD },
        workers: QUOTA_WORKERS,
        threads: Some(LOADER_STEP),
        ..COMPUTE_JOB
    };
    Some(match workload {
        W::GpuUnderfed => JobShape {
            cmdline: "python train.py --config exp42.yaml",
            states: b"S",
            cpu_pct: 45.0,
            age_s: 1200,
            load: LoadShape { busy_cores: 0.5, psi_io: 1.0, ..NO_LOAD },
            // It sleeps between small steps (`time.sleep`, a throttle in its loop): nothing names why.
            threads: Some(ThreadShape { main_sleeps: &[WaitKind::Sleep], ..STEP_THREADS }),
            ..COMPUTE_JOB
        },
        W::LaunchBound => JobShape {
            cmdline: "python rl_policy.py --batch-size 8",
            load: LoadShape { busy_cores: 1.0, psi_io: 1.0, ..NO_LOAD },
            // The step thread launches tiny kernels back to back: on a CPU all the time.
            threads: Some(STEP_THREADS),
            ..COMPUTE_JOB
        },
        W::H2dCopyBound => JobShape {
            cmdline: "python train.py --pin-memory false --batch-size 4096",
            load: LoadShape { busy_cores: 1.0, psi_io: 1.0, ..NO_LOAD },
            // The step thread copies each batch from pageable memory: on a CPU all the time.
            threads: Some(STEP_THREADS),
            ..COMPUTE_JOB
        },
        W::CpuQuota => JobShape {
            input: InputShape { cgroup: Some(("/kubepods.slice/pod-7f3a/train", 2.0, 72.0)), ..LOCAL_INPUT },
            ..loader
        },
        W::RemoteStall => JobShape {
            cmdline: "python train.py --data https://datasets.internal/imagenet --workers 8",
            load: LoadShape { busy_cores: 1.1, psi_io: 1.0, ..NO_LOAD },
            workers: REMOTE_WORKERS,
            input: InputShape { worker_remote: Some((1, 1)), ..LOCAL_INPUT },
            ..loader
        },
        _ => return None,
    })
}
#[cfg(test)]
mod tests {
    use super::super::test_source as source;

    #[test]
    fn input_bound_shows_the_signals_seen_on_the_h200() {
        let s = source("input-bound");
        let states: String = (0..10).filter_map(|n| s.tick_at(n).process(2001).and_then(|p| p.state)).collect();
        assert_eq!(states, "RDRRDDRDRR");
        let tick = s.tick_at(3);
        assert!(tick.gpus[0].util_pct.expect("util") < 10);
        assert!(tick.host.psi.and_then(|p| p.io_some_avg10).expect("psi") > 30.0);
    }
}
