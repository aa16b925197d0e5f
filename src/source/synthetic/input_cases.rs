//! The scenarios about where training really runs (shared file systems, CPU work that is not input,
//! `torch.compile`, pinned CPUs, idle evaluation workers): each job is built by the parent module's `add_job`, then
//! [`refine`] adds what the host sampler reads about its input path (waits by kind, remote files by open mode,
//! compile workers, CPU masks, device-to-host traffic).

use super::gpu::{GpuShape, STARVED_LOADER_GPU, Spread, WAITING_GPU};
use super::jobs::{
    COMPUTE_JOB, JobShape, LOADER_STEP, LoadShape, NO_LOAD, STEP_THREADS, ThreadShape, WorkerShape, worker as workers,
};
use super::processes::Slot;
use super::spec::Workload;
use crate::sample::{HostProcess, ProcessRole, RemoteFiles, Serving, Tick, WaitKind};

const MIB: u64 = 1 << 20;

/// A healthy job on a shared cluster: busy, SM activity moderate (a bf16 transformer), logs and checkpoints on NFS
/// and Lustre.
const HEALTHY_SHARED_GPU: GpuShape = GpuShape {
    util: Spread(85.0, 3.0),
    power_w: Spread(450.0, 15.0),
    temp_c: Spread(58.0, 2.0),
    sm_active: 42.0,
    tensor: 35.0,
    dram: 20.0,
    mem_gib: 60,
    rx_mbps: 300,
    ..WAITING_GPU
};

/// A GPU fed too slowly: little utilization, little SM activity.
const FED_SLOWLY_GPU: GpuShape = GpuShape {
    util: Spread(15.0, 4.0),
    power_w: Spread(190.0, 10.0),
    temp_c: Spread(42.0, 1.0),
    sm_active: 10.0,
    tensor: 8.0,
    dram: 2.0,
    mem_gib: 30,
    rx_mbps: 600,
    ..WAITING_GPU
};

/// An inference server between requests: almost nothing runs.
const SERVER_GPU: GpuShape = GpuShape {
    util: Spread(1.0, 1.0),
    power_w: Spread(120.0, 3.0),
    temp_c: Spread(36.0, 1.0),
    sm_active: 0.5,
    tensor: 0.3,
    dram: 0.2,
    mem_gib: 70,
    rx_mbps: 2,
    ..WAITING_GPU
};

/// Underfed with no input cause: a job whose logging thread is blocked on NFS.
const LOGGING_GPU: GpuShape = GpuShape {
    util: Spread(30.0, 5.0),
    power_w: Spread(240.0, 10.0),
    temp_c: Spread(46.0, 1.0),
    sm_active: 20.0,
    tensor: 16.0,
    dram: 4.0,
    mem_gib: 40,
    rx_mbps: 200,
    ..WAITING_GPU
};

/// An optimizer offloaded to the CPU: bursts of real work, then the GPU waits for the CPU's step; gradients go
/// down and parameters come back over PCIe at 1.5 GB/s each way.
const OFFLOAD_GPU: GpuShape = GpuShape {
    util: Spread(20.0, 4.0),
    power_w: Spread(230.0, 15.0),
    temp_c: Spread(45.0, 1.0),
    sm_active: 17.0,
    tensor: 15.0,
    dram: 4.0,
    mem_gib: 50,
    rx_mbps: 1_500,
    ..WAITING_GPU
};

/// Compiling: the GPU holds the model and does almost nothing.
const COMPILING_GPU: GpuShape = GpuShape {
    util: Spread(2.0, 2.0),
    power_w: Spread(125.0, 3.0),
    temp_c: Spread(37.0, 1.0),
    sm_active: 1.0,
    tensor: 0.5,
    dram: 0.3,
    mem_gib: 20,
    rx_mbps: 10,
    ..WAITING_GPU
};

/// The GPU profile of each of these scenarios' workloads.
pub(super) fn gpu_shape(workload: Workload) -> Option<GpuShape> {
    use Workload as W;
    Some(match workload {
        W::NfsStdout => HEALTHY_SHARED_GPU,
        W::LustreWarmDecode | W::EvalWorkersIdle => FED_SLOWLY_GPU,
        W::InferenceServer => SERVER_GPU,
        W::NfsLoggingThread => LOGGING_GPU,
        W::CpuOffload => OFFLOAD_GPU,
        W::CompileWarmup => COMPILING_GPU,
        W::PinnedCpus | W::NfsReadStall => STARVED_LOADER_GPU,
        _ => return None,
    })
}

const FOUR_LOCAL_READERS: &[WorkerShape] = &[workers('S', 20.0, 30); 4];
const EIGHT_DECODERS: &[WorkerShape] = &[workers('R', 99.0, 0); 8];
const FOUR_SLOW_LOCAL: &[WorkerShape] = &[workers('S', 30.0, 2); 4];
const FOUR_KEEPING_UP: &[WorkerShape] = &[workers('S', 8.0, 3); 4];
const FOUR_WAITING: &[WorkerShape] = &[workers('S', 0.5, 0); 4];
/// Eight workers on two CPUs: each gets a quarter of one and waits runnable for the rest.
const EIGHT_SHARING_TWO_CPUS: &[WorkerShape] = &[WorkerShape { wait_cpu_pct: 70.0, ..workers('R', 24.0, 4) }; 8];
const EIGHT_NFS_READERS: &[WorkerShape] = &[WorkerShape { sleep: WaitKind::RemoteFs, ..workers('D', 9.0, 0) }; 8];
/// Ten training workers pegged, and four persistent workers of the evaluation loader waiting for the next epoch.
const TRAIN_AND_EVAL: &[WorkerShape] = &[
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('R', 99.0, 1),
    workers('S', 0.0, 0),
    workers('S', 0.0, 0),
    workers('S', 0.0, 0),
    workers('S', 0.0, 0),
];

/// The job of each of these scenarios' workloads.
pub(super) fn job(workload: Workload) -> Option<JobShape> {
    use Workload as W;
    let loader = JobShape {
        states: b"S",
        cpu_pct: 35.0,
        age_s: 1500,
        load: LoadShape { busy_cores: 1.5, psi_io: 1.0, ..NO_LOAD },
        threads: Some(LOADER_STEP),
        ..COMPUTE_JOB
    };
    Some(match workload {
        W::NfsStdout => JobShape {
            cmdline: "python train.py --out /home/alice/runs/7 --ckpt /lustre/alice/ckpt --workers 4",
            cpu_pct: 90.0,
            workers: FOUR_LOCAL_READERS,
            load: LoadShape { busy_cores: 1.8, psi_io: 1.5, ..NO_LOAD },
            ..loader
        },
        W::LustreWarmDecode => JobShape {
            cmdline: "python train.py --data /lustre/datasets/imagenet --workers 8",
            workers: EIGHT_DECODERS,
            load: LoadShape { busy_cores: 8.3, psi_io: 0.5, psi_cpu: 4.0, ..NO_LOAD },
            ..loader
        },
        W::InferenceServer => JobShape {
            cmdline: "python serve.py --model llama-8b --port 8000 --threads 16",
            cpu_pct: 3.0,
            load: LoadShape { busy_cores: 0.1, ..NO_LOAD },
            // Its event loop polls the listening socket and its clients' connections.
            threads: Some(ThreadShape { main_sleeps: &[WaitKind::Poll], ..STEP_THREADS }),
            ..loader
        },
        W::NfsLoggingThread => JobShape {
            cmdline: "python train.py --log-file /home/alice/train.log --workers 4",
            cpu_pct: 60.0,
            workers: FOUR_SLOW_LOCAL,
            // The step waits on the logging handler's lock, held by the thread blocked writing its log to NFS.
            // It launches the step a third of the time (the GPU computes 30 %), and sleeps on the lock the rest.
            threads: Some(ThreadShape {
                main_cpu: Some(0.35),
                main_sleeps: &[WaitKind::Lock],
                others_sleep: WaitKind::RemoteFs,
                ..LOADER_STEP
            }),
            load: LoadShape { busy_cores: 1.8, psi_io: 1.0, ..NO_LOAD },
            ..loader
        },
        W::CpuOffload => JobShape {
            cmdline: "python train_offload.py --offload-optimizer cpu --grad-accum 8 --workers 4",
            cpu_pct: 380.0,
            // The optimizer steps on the CPU in the main thread.
            threads: Some(STEP_THREADS),
            workers: FOUR_KEEPING_UP,
            load: LoadShape { busy_cores: 4.2, psi_io: 0.5, psi_cpu: 3.0, ..NO_LOAD },
            ..loader
        },
        W::CompileWarmup => JobShape {
            cmdline: "python train.py --compile --workers 4",
            cpu_pct: 100.0,
            age_s: 20,
            workers: FOUR_WAITING,
            load: LoadShape { busy_cores: 1.4, psi_io: 0.5, ..NO_LOAD },
            ..loader
        },
        W::PinnedCpus => JobShape {
            cmdline: "python train.py --workers 8 --batch-size 256",
            cpu_pct: 30.0,
            workers: EIGHT_SHARING_TWO_CPUS,
            load: LoadShape { busy_cores: 2.0, psi_io: 0.5, psi_cpu: 60.0, ..NO_LOAD },
            ..loader
        },
        W::EvalWorkersIdle => JobShape {
            cmdline: "python train.py --workers 10 --eval-workers 4 --persistent-workers",
            workers: TRAIN_AND_EVAL,
            load: LoadShape { busy_cores: 10.3, psi_io: 0.5, psi_cpu: 5.0, ..NO_LOAD },
            ..loader
        },
        W::NfsReadStall => JobShape {
            cmdline: "python train.py --data /mnt/datasets/imagenet --workers 8",
            workers: EIGHT_NFS_READERS,
            load: LoadShape { busy_cores: 1.1, psi_io: 1.0, ..NO_LOAD },
            ..loader
        },
        _ => return None,
    })
}

/// What the fd scan finds: remote files by mode on one mount each, and the read rate through the read-only ones.
fn files(read_only: (u32, &str, &str), written: (u32, &str, &str), read_mib_s: Option<u64>) -> RemoteFiles {
    let (n_read, read_mount, read_fs) = read_only;
    let (n_written, written_mount, written_fs) = written;
    let (mount, fs_type) = if n_read > 0 { (read_mount, read_fs) } else { (written_mount, written_fs) };
    RemoteFiles {
        open: n_read + n_written,
        fs_type: fs_type.to_owned(),
        mount: mount.to_owned(),
        read_only: n_read,
        written: n_written,
        modes_read: true,
        read_bytes_per_s: read_mib_s.map(|m| m * MIB),
        written_mount: if n_written > 0 { written_mount.to_owned() } else { String::new() },
        written_fs_type: if n_written > 0 { written_fs.to_owned() } else { String::new() },
        tcp_connections: 0,
    }
}

/// Sets the waits a process's threads sleep in: on sockets, on a network file system, on writes.
fn waits(process: &mut HostProcess, socket: u32, fs: u32, write: u32) {
    process.remote_waits = Some(socket + fs);
    process.fs_waits = Some(fs);
    process.write_waits = Some(write);
}

/// Adds what the host sampler reads about the input path of these scenarios' jobs (see the module's doc).
pub(super) fn refine(workload: Workload, slot: &Slot<'_>, tick: &mut Tick) {
    let main_pid = slot.base_pid() + 1;
    let n = slot.n;
    let mut compile_worker = None;
    for p in tick.processes.iter_mut().filter(|p| p.pid == main_pid || p.ppid == Some(main_pid)) {
        let main = p.role == ProcessRole::Gpu;
        match workload {
            Workload::NfsStdout => {
                // stdout to slurm-%j.out and TensorBoard events in the NFS home, checkpoints on Lustre; the logger
                // flushes now and then. The workers inherit stdout.
                let written = if main { 3 } else { 1 };
                p.remote_files = Some(files((0, "", ""), (written, "/home", "nfs4"), Some(0)));
                waits(p, 0, u32::from(main && n.is_multiple_of(3)), 0);
            }
            Workload::LustreWarmDecode => {
                // Each worker reads its JPEGs from Lustre at 25 MiB/s, all from the page cache: no waits.
                let reading = if main { (0, "", "") } else { (1, "/lustre", "lustre") };
                p.remote_files = Some(files(reading, (0, "", ""), Some(if main { 0 } else { 25 })));
                waits(p, 0, 0, 0);
            }
            Workload::InferenceServer => {
                // Sixteen handler threads blocked in a socket read, waiting for requests; clients connected to its
                // listening port.
                waits(p, 16, 0, 0);
                p.remote_files = Some(RemoteFiles { tcp_connections: 20, modes_read: true, ..RemoteFiles::default() });
                p.n_threads = Some(64);
                if main {
                    p.serving = Some(Serving { ports: vec![8000], connections: 20, accepted: Some(20) });
                }
            }
            Workload::NfsLoggingThread => {
                // The logging thread is in D, writing to the NFS home; the workers read local NVMe.
                if main {
                    p.threads_in_d = Some(1);
                    waits(p, 0, 1, 0);
                    p.remote_files = Some(files((0, "", ""), (2, "/home", "nfs4"), Some(0)));
                } else {
                    waits(p, 0, 0, 0);
                    p.remote_files = Some(files((0, "", ""), (1, "/home", "nfs4"), Some(0)));
                }
            }
            Workload::CpuOffload if main => {
                // AdamW on the CPU: the main thread at a full core, OpenMP threads beside it.
                p.busiest_thread =
                    Some(crate::sample::ThreadCpu { tid: main_pid, name: "pt_main_thread".to_owned(), cpu_pct: 99.5 });
            }
            Workload::CompileWarmup if main => {
                compile_worker = Some(compile_worker_of(p));
            }
            Workload::PinnedCpus => p.allowed_cpus = Some(vec![0, 1]),
            Workload::NfsReadStall if !main => {
                // Each worker blocked reading its shard from NFS (rpc_wait_bit_killable: D).
                waits(p, 0, 1, 0);
                p.remote_files = Some(files((1, "/mnt/datasets", "nfs4"), (0, "", ""), Some(3)));
            }
            Workload::NfsReadStall => waits(p, 0, 0, 0),
            _ => {}
        }
    }
    if let Some(worker) = compile_worker {
        tick.processes.push(worker);
    }
    if workload == Workload::CpuOffload
        && let Some(gpu) = tick.gpus.iter_mut().find(|g| g.index == slot.info.index)
    {
        // Gradients down to the host each step, as much as the parameters coming back.
        gpu.pcie_tx_kbps = gpu.pcie_rx_kbps;
    }
}

/// inductor's compile worker pool, started by the main process: a child that is not a `DataLoader` worker.
fn compile_worker_of(main: &HostProcess) -> HostProcess {
    HostProcess {
        pid: main.pid + 50,
        ppid: Some(main.pid),
        role: ProcessRole::Child,
        name: "python3".to_owned(),
        cmdline: format!(
            "/usr/bin/python3 /usr/local/lib/python3.12/dist-packages/torch/_inductor/compile_worker/__main__.py \
             --pickler=torch._inductor.compile_worker.subproc_pool.SubprocPickler --kind=fork --workers=32 \
             --parent={} --read-fd=9 --write-fd=12",
            main.pid
        ),
        state: Some('R'),
        cpu_pct: Some(30.0),
        rss_bytes: Some(800 * MIB),
        read_bytes_per_s: Some(0),
        write_bytes_per_s: Some(0),
        start_ticks: main.start_ticks.map(|t| t + 500),
        started_at_ms: main.started_at_ms.map(|t| t + 5_000),
        n_threads: Some(3),
        remote_waits: Some(0),
        fs_waits: Some(0),
        write_waits: Some(0),
        remote_files: Some(RemoteFiles { modes_read: true, ..RemoteFiles::default() }),
        ..main.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SyntheticSource, SyntheticSpec};

    fn tick(name: &str) -> crate::sample::Tick {
        SyntheticSource::new(SyntheticSpec::parse(name).expect("spec")).tick_at(3)
    }

    #[test]
    fn the_compile_worker_is_a_child_that_is_no_dataloader_worker() {
        let t = tick("compile-warmup");
        let compile: Vec<_> = t.processes.iter().filter(|p| p.is_compile_worker()).collect();
        assert_eq!(compile.len(), 1);
        assert_eq!(compile[0].ppid, Some(2001));
        assert_eq!(t.processes.iter().filter(|p| p.ppid == Some(2001)).count(), 5, "4 DataLoader workers and it");
    }

    #[test]
    fn the_shared_file_system_cases_carry_their_open_modes() {
        let t = tick("nfs-stdout");
        let main = t.process(2001).and_then(|p| p.remote_files.clone()).expect("files");
        assert_eq!((main.read_only, main.written, main.written_mount.as_str()), (0, 3, "/home"));
        let t = tick("nfs-read-stall");
        let worker = t.process(2002).expect("worker");
        assert_eq!(worker.fs_waits, Some(1));
        assert_eq!(worker.remote_files.as_ref().map(|f| f.read_only), Some(1));
        let t = tick("cpu-offload");
        assert_eq!(t.gpus[0].pcie_tx_kbps, t.gpus[0].pcie_rx_kbps);
    }
}
