//! Everyday situations of a training box that the account of a GPU's time tells apart from its threads: another
//! user's processes holding the CPUs, workers running too many threads, a job in a crash loop, a synchronous
//! checkpoint, collectives over TCP, decoding in the main process, a spinning kernel, a job starting up. Each job is
//! built by the parent module's `add_job`; [`refine`] sets what changes over its life (its phases, its restarts) and
//! [`host`] what the host shows beside it (who else uses the CPUs, the network's traffic).

use super::gpu::{COMPUTE_GPU, GpuShape, Spread, WAITING_GPU};
use super::host::HostLoad;
use super::jobs::{
    COMPUTE_JOB, JobShape, LOADER_STEP, LoadShape, NO_LOAD, READING_STEP, STEP_THREADS, ThreadShape, WorkerShape,
    worker,
};
use super::processes::Slot;
use super::spec::Workload;
use super::{GIB, MIB, TICKS_PER_SECOND, jitter};
use crate::sample::{CpuConsumer, CpuOthers, HostProcess, NetKind, NetRate, Tick, WaitKind};

/// A `ResNet` job whose input pipeline is short of CPUs: its GPU a quarter of the time busy.
const SHORT_OF_CPUS_GPU: GpuShape = GpuShape {
    util: Spread(25.0, 5.0),
    power_w: Spread(240.0, 15.0),
    temp_c: Spread(45.0, 1.0),
    sm_active: 20.0,
    tensor: 16.0,
    dram: 3.0,
    mem_gib: 22,
    rx_mbps: 800,
    ..WAITING_GPU
};

/// A rank whose collectives cross TCP: its kernels spin in them nearly all the time on 10 % of the SMs, while its
/// link carries the gradients to the NIC and back (1.1 GB/s each way).
const TCP_RANK_GPU: GpuShape = GpuShape {
    util: Spread(99.0, 1.0),
    power_w: Spread(190.0, 8.0),
    temp_c: Spread(50.0, 1.0),
    sm_active: 10.0,
    tensor: 3.0,
    dram: 2.0,
    mem_gib: 60,
    rx_mbps: 1_100,
    ..WAITING_GPU
};

/// A GPU fed by a main thread that decodes its own samples: 30 % busy, its kernels filling the SMs.
const DECODE_MAIN_GPU: GpuShape = GpuShape {
    util: Spread(30.0, 4.0),
    power_w: Spread(260.0, 10.0),
    temp_c: Spread(47.0, 1.0),
    sm_active: 28.0,
    tensor: 22.0,
    dram: 4.0,
    mem_gib: 18,
    rx_mbps: 600,
    ..WAITING_GPU
};

/// A kernel that spins on a few SMs (a persistent kernel polling a flag): utilization 100 %, SM activity 3 %.
const SPIN_GPU: GpuShape = GpuShape {
    util: Spread(100.0, 0.0),
    power_w: Spread(135.0, 3.0),
    temp_c: Spread(41.0, 1.0),
    sm_active: 3.0,
    tensor: 0.0,
    dram: 0.1,
    mem_gib: 6,
    ..WAITING_GPU
};

/// A GPU receiving a checkpoint's weights (1.5 GB/s over PCIe) with no kernel running; `mem_gib` set by the phase.
const LOADING_GPU: GpuShape =
    GpuShape { power_w: Spread(120.0, 3.0), temp_c: Spread(35.0, 1.0), rx_mbps: 1_500, ..WAITING_GPU };

/// `crash-loop`'s cycle: a process lives 80 s (15 s of start-up, then training until it crashes), and the loop that
/// runs it starts the next one 10 s later.
const CRASH_CYCLE_S: u64 = 90;
const CRASH_GAP_S: u64 = 10;
const CRASH_STARTUP_S: u64 = 15;
/// The run starts this far into a cycle: 20 s into the first process's training.
const CRASH_OFFSET_S: u64 = 45;
/// The PID of the first process of `crash-loop`; each restart takes the next.
const CRASH_FIRST_PID: u32 = 20_000;

/// `checkpoint-sync`'s minute: 40 s of training, then 20 s writing the checkpoint.
const CHECKPOINT_EVERY_S: u64 = 60;
const CHECKPOINT_TRAIN_S: u64 = 40;

/// `startup-load`'s process loads its checkpoint for the run's first 25 s (it is 20 s old at the start).
const LOAD_UNTIL_S: u64 = 25;

/// Where `crash-loop` is `secs` into the run: which process (its index) and how far into its cycle.
fn crash_cycle(secs: u64) -> (u64, u64) {
    let at = secs + CRASH_OFFSET_S;
    (at / CRASH_CYCLE_S, at % CRASH_CYCLE_S)
}

/// The GPU profile of these scenarios' workloads at `secs` into the run.
pub(super) fn gpu_shape(workload: Workload, secs: u64) -> Option<GpuShape> {
    use Workload as W;
    Some(match workload {
        W::CpuContention | W::Oversubscribed => SHORT_OF_CPUS_GPU,
        W::CrashLoop => match crash_cycle(secs).1 {
            // Between processes the card is empty; through a start-up the weights arrive, 2 GiB a second.
            at if at < CRASH_GAP_S => GpuShape { mem_gib: 0, rx_mbps: 0, ..LOADING_GPU },
            at if at < CRASH_GAP_S + CRASH_STARTUP_S => GpuShape { mem_gib: 1 + 2 * (at - CRASH_GAP_S), ..LOADING_GPU },
            _ => GpuShape { mem_gib: 32, ..COMPUTE_GPU },
        },
        W::CheckpointSync if secs % CHECKPOINT_EVERY_S < CHECKPOINT_TRAIN_S => GpuShape { mem_gib: 48, ..COMPUTE_GPU },
        W::CheckpointSync => {
            GpuShape { power_w: Spread(130.0, 3.0), temp_c: Spread(44.0, 1.0), mem_gib: 48, ..WAITING_GPU }
        }
        W::NcclTcp => TCP_RANK_GPU,
        W::DecodeMain => DECODE_MAIN_GPU,
        W::SpinKernel => SPIN_GPU,
        W::StartupLoad if secs < LOAD_UNTIL_S => GpuShape { mem_gib: 4 + secs * 3 / 2, ..LOADING_GPU },
        W::StartupLoad => GpuShape { mem_gib: 42, ..COMPUTE_GPU },
        _ => return None,
    })
}

/// Eight workers each runnable a whole core's worth but given 40 % of one: the CPUs are someone else's.
const CONTENDED_WORKERS: &[WorkerShape] = &[WorkerShape { wait_cpu_pct: 55.0, ..worker('R', 40.0, 0) }; 8];

/// Eight workers each running a pool of 36 threads (OpenMP, OpenCV) on 16 CPUs: each gets its share of the CPUs,
/// its threads wait runnable for 15 cores' worth.
const OVERSUBSCRIBED_WORKERS: &[WorkerShape] =
    &[WorkerShape { wait_cpu_pct: 1_500.0, pool: 36, ..worker('R', 190.0, 0) }; 8];

/// Workers that keep up: asleep on their index queue.
const KEEPING_UP: &[WorkerShape] = &[worker('S', 6.0, 2); 8];

/// The four workers `startup-load` starts once its checkpoint is loaded: they keep up.
const FOUR_AFTER_LOADING: &[WorkerShape] = &[worker('S', 10.0, 5); 4];

/// The job of each of these scenarios' workloads.
pub(super) fn job(workload: Workload) -> Option<JobShape> {
    use Workload as W;
    let resnet = JobShape {
        cmdline: "python train.py --arch resnet50 --workers 8 --batch-size 256",
        states: b"S",
        cpu_pct: 30.0,
        age_s: 1800,
        load: LoadShape { busy_cores: 15.6, psi_cpu: 45.0, psi_io: 0.5, ..NO_LOAD },
        // The step waits on the workers' queue, and for a CPU itself when it wakes.
        threads: Some(ThreadShape { main_wait_cpu: 0.1, ..LOADER_STEP }),
        ..COMPUTE_JOB
    };
    Some(match workload {
        W::CpuContention => JobShape { workers: CONTENDED_WORKERS, ..resnet },
        W::Oversubscribed => JobShape {
            cpu_pct: 40.0,
            load: LoadShape { busy_cores: 15.6, psi_cpu: 80.0, psi_io: 0.5, ..NO_LOAD },
            workers: OVERSUBSCRIBED_WORKERS,
            threads: Some(ThreadShape { main_wait_cpu: 0.2, ..LOADER_STEP }),
            ..resnet
        },
        // Training, loading in its start-ups ([`refine`]): asleep in its reads there.
        W::CrashLoop => JobShape {
            cmdline: "python train.py --config exp7.yaml --resume /ckpt/last.pt",
            threads: Some(READING_STEP),
            ..COMPUTE_JOB
        },
        // Asleep in its writes while it saves ([`refine`]).
        W::CheckpointSync => JobShape {
            cmdline: "python train.py --model llama-8b --save-every 60 --save-sync",
            load: LoadShape { busy_cores: 1.0, psi_io: 4.0, ..NO_LOAD },
            threads: Some(ThreadShape { main_sleeps: &[WaitKind::Write], ..STEP_THREADS }),
            ..COMPUTE_JOB
        },
        W::NcclTcp => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --arch resnet152 --workers 8",
            states: b"S",
            cpu_pct: 15.0,
            age_s: 900,
            load: LoadShape { busy_cores: 1.5, psi_io: 0.5, ..NO_LOAD },
            workers: KEEPING_UP,
            // Gloo's and NCCL's socket transports: the step blocks in a socket or on the proxy thread's handoff.
            threads: Some(ThreadShape {
                main_sleeps: &[WaitKind::Socket, WaitKind::Socket, WaitKind::Lock],
                ..STEP_THREADS
            }),
            ..COMPUTE_JOB
        },
        W::DecodeMain => JobShape {
            cmdline: "python train.py --data /data/imagenet --num-workers 0",
            states: b"RRRRRRRRRRRRRRRRRRRD",
            cpu_pct: 95.0,
            read_mib: Spread(40.0, 5.0),
            load: LoadShape { busy_cores: 1.0, psi_io: 2.0, ..NO_LOAD },
            threads: Some(READING_STEP),
            ..COMPUTE_JOB
        },
        // Blocked in the driver, waiting for the kernel that never ends its spin.
        W::SpinKernel => JobShape {
            cmdline: "python bench.py --persistent-kernel",
            states: b"S",
            cpu_pct: 1.0,
            load: NO_LOAD,
            ..COMPUTE_JOB
        },
        W::StartupLoad => JobShape {
            cmdline: "python train.py --model llama-8b --resume /nvme/ckpt/step-12000.pt --workers 4",
            age_s: 20,
            workers: FOUR_AFTER_LOADING,
            threads: Some(READING_STEP),
            ..COMPUTE_JOB
        },
        _ => return None,
    })
}

/// The main process of the slot's job (as `add_job` built it).
fn main_of<'t>(slot: &Slot<'_>, tick: &'t mut Tick) -> Option<&'t mut HostProcess> {
    let main = slot.base_pid() + 1;
    tick.processes.iter_mut().find(|p| p.pid == main)
}

/// Sets what the step thread does in a phase: its state (cycled by second), its CPU and its busiest thread's.
fn doing(p: &mut HostProcess, states: &[u8], cpu_pct: f32, secs: u64) {
    p.state = Some(char::from(states[usize::try_from(secs).unwrap_or(0) % states.len()]));
    p.cpu_pct = Some(cpu_pct);
    p.threads_in_d = Some(u32::from(p.state == Some('D')));
    if let Some(thread) = p.busiest_thread.as_mut() {
        (thread.tid, thread.cpu_pct) = (p.pid, cpu_pct.min(100.0));
    }
}

/// Sets what changes over these scenarios' jobs' lives: a phase, a restart, a job identity.
pub(super) fn refine(workload: Workload, slot: &Slot<'_>, tick: &mut Tick) {
    let secs = slot.elapsed_s();
    let seed = slot.spec.seed ^ u64::from(slot.info.index) << 40;
    match workload {
        Workload::CrashLoop => restart(slot, tick),
        Workload::CheckpointSync if secs % CHECKPOINT_EVERY_S >= CHECKPOINT_TRAIN_S => {
            // Saving: the step thread asleep in D writing 1 GiB/s of state (3 % of a core copying it), its GPU idle.
            if let Some(p) = main_of(slot, tick) {
                doing(p, b"D", 3.0, secs);
                p.write_bytes_per_s = Some(u64::from(jitter(seed, slot.n, 21, 1_024.0, 60.0)) * MIB);
            }
        }
        Workload::StartupLoad if secs < LOAD_UNTIL_S => {
            // Loading its checkpoint from NVMe: reading (in D half the time) and unpickling; no workers yet.
            let main = slot.base_pid() + 1;
            tick.processes.retain(|p| p.ppid != Some(main));
            if let Some(p) = main_of(slot, tick) {
                doing(p, b"RD", 60.0, secs);
                p.read_bytes_per_s = Some(u64::from(jitter(seed, slot.n, 20, 1_536.0, 80.0)) * MIB);
            }
        }
        Workload::StartupLoad => {
            // The workers start with the first epoch, when the checkpoint is loaded.
            let (main, started) = (slot.base_pid() + 1, slot.spec.start_ms + LOAD_UNTIL_S * 1000);
            for p in tick.processes.iter_mut().filter(|p| p.ppid == Some(main)) {
                p.started_at_ms = Some(started);
                p.start_ticks = Some((started - boot_ms(slot)) / 1000 * TICKS_PER_SECOND);
            }
        }
        Workload::NcclTcp => two_nodes(slot, tick),
        _ => {}
    }
}

/// The machine's boot, as the parent module sets it.
fn boot_ms(slot: &Slot<'_>) -> u64 {
    slot.spec.start_ms - 86_400_000
}

/// `crash-loop`: between processes there is none; each process has its own PID and start time, loads for its first
/// 15 s, then trains.
fn restart(slot: &Slot<'_>, tick: &mut Tick) {
    let (life, at) = crash_cycle(slot.elapsed_s());
    let main = slot.base_pid() + 1;
    if at < CRASH_GAP_S {
        tick.processes.retain(|p| p.pid != main);
        tick.gpu_processes.retain(|p| p.pid != Some(main));
        return;
    }
    let pid = CRASH_FIRST_PID + u32::try_from(life).unwrap_or(0);
    // It started when its cycle's gap ended (before the run, for the first).
    let started =
        (slot.spec.start_ms + (life * CRASH_CYCLE_S + CRASH_GAP_S) * 1000).saturating_sub(CRASH_OFFSET_S * 1000);
    for p in tick.gpu_processes.iter_mut().filter(|p| p.pid == Some(main)) {
        p.pid = Some(pid);
    }
    if let Some(p) = main_of(slot, tick) {
        p.pid = pid;
        p.nspid = Some(vec![pid]);
        p.started_at_ms = Some(started);
        p.start_ticks = Some((started - boot_ms(slot)) / 1000 * TICKS_PER_SECOND);
        if at < CRASH_GAP_S + CRASH_STARTUP_S {
            doing(p, b"RD", 60.0, slot.elapsed_s());
            p.read_bytes_per_s = Some(2 * GIB);
        } else {
            doing(p, b"R", 100.0, slot.elapsed_s());
        }
    }
}

/// `nccl-tcp`: the two ranks here are ranks 0 and 1 of a job of four over two nodes, its rendezvous on the other.
fn two_nodes(slot: &Slot<'_>, tick: &mut Tick) {
    for p in &mut tick.processes {
        if p.pid == 2000 && p.name == "torchrun" {
            "/usr/bin/python3 /usr/local/bin/torchrun --nnodes=2 --nproc-per-node=2 --rdzv-endpoint=10.0.0.1:29500 \
             train_ddp.py"
                .clone_into(&mut p.cmdline);
        }
        if p.pid == slot.base_pid() + 1
            && let Some(job) = p.job.as_mut()
        {
            "torch:10.0.0.1:29500/none".clone_into(&mut job.key);
            job.world_size = Some(4);
            job.master = Some("10.0.0.1:29500".to_owned());
        }
    }
}

/// Adds what the host shows beside these scenarios' jobs: another user's processes on the CPUs, the network.
pub(super) fn host(workload: Workload, slot: &Slot<'_>, load: &mut HostLoad) {
    let seed = slot.spec.seed ^ u64::from(slot.info.index) << 40;
    let j = |stream: u64, base: f64, spread: f64| jitter(seed, slot.n, stream, base, spread);
    match workload {
        Workload::CpuContention => {
            let cpu_pct = f32::from(u16::try_from(j(30, 1_400.0, 40.0)).unwrap_or(u16::MAX));
            load.cpu_others = Some(CpuOthers {
                span_ms: 5_000,
                cpu_pct: cpu_pct + 6.0,
                runnable: 15,
                top: vec![CpuConsumer {
                    uid: Some(1002),
                    user: Some("bob".to_owned()),
                    cgroup: "/user.slice/user-1002.slice/session-9.scope".to_owned(),
                    pid: 4242,
                    command: "stress".to_owned(),
                    processes: 14,
                    cpu_pct,
                }],
            });
        }
        Workload::Oversubscribed => {
            // The CPUs are contended, so the scan of the other processes runs: it finds the system's daemons.
            load.cpu_others = Some(CpuOthers {
                span_ms: 5_000,
                cpu_pct: 4.0,
                runnable: 0,
                top: vec![CpuConsumer {
                    uid: Some(0),
                    user: Some("root".to_owned()),
                    cgroup: "/system.slice/systemd-journald.service".to_owned(),
                    pid: 412,
                    command: "systemd-journal".to_owned(),
                    processes: 1,
                    cpu_pct: 3.0,
                }],
            });
        }
        Workload::NcclTcp => {
            // Each rank's gradients leave and arrive over the NIC: the two ranks' traffic adds up on `eth0`.
            let (rx, tx) = (u64::from(j(31, 1_100.0, 50.0)) * 1_000_000, u64::from(j(32, 1_100.0, 50.0)) * 1_000_000);
            match load.net.iter_mut().find(|r| r.name == "eth0") {
                Some(eth0) => {
                    eth0.rx_bytes_per_s += rx;
                    eth0.tx_bytes_per_s += tx;
                }
                None => load.net.push(NetRate {
                    name: "eth0".to_owned(),
                    kind: NetKind::Ethernet,
                    rx_bytes_per_s: rx,
                    tx_bytes_per_s: tx,
                }),
            }
        }
        _ => {}
    }
}

/// Whether the GPU's traffic goes both ways alike (collectives send what they receive).
pub(super) fn symmetric(workload: Workload) -> bool {
    workload == Workload::NcclTcp
}

#[cfg(test)]
mod tests {
    use super::super::test_source as source;
    use super::*;
    use crate::sample::ProcessRole;

    #[test]
    fn a_crash_loop_restarts_every_90_s_with_a_new_pid_and_the_same_command() {
        let s = source("crash-loop");
        let step = |n: u64| {
            let tick = s.tick_at(n);
            let gpu = tick.gpu(0).and_then(|g| g.util_pct);
            let p = tick.processes.iter().find(|p| p.role == ProcessRole::Gpu).cloned();
            (p, gpu)
        };
        // 20 s into the first process's training; it crashes 45 s in, the next starts 10 s later and loads for 15 s.
        let (first, util) = step(0);
        let first = first.expect("the first process");
        assert_eq!(first.pid, CRASH_FIRST_PID);
        assert!(util.is_some_and(|u| u > 90));
        assert!(step(50).0.is_none(), "between processes");
        let (second, util) = step(60);
        let second = second.expect("the second process");
        assert_eq!((second.pid, second.cmdline.as_str()), (CRASH_FIRST_PID + 1, first.cmdline.as_str()));
        assert_eq!(second.started_at_ms, Some(s.tick_at(55).at_ms));
        assert_eq!(util, Some(0), "loading");
        assert!(step(75).1.is_some_and(|u| u > 90), "training");
    }

    #[test]
    fn the_contended_host_names_who_else_holds_its_cpus() {
        let tick = source("cpu-contention").tick_at(3);
        let others = tick.host.cpu_others.expect("the other processes");
        assert_eq!((others.top[0].user.as_deref(), others.top[0].command.as_str()), (Some("bob"), "stress"));
        assert!(tick.host.per_cpu_busy_pct.iter().all(|b| b.is_some_and(|b| b > 90.0)), "every CPU busy");
        assert_eq!(tick.host.per_cpu_busy_pct.len(), 16);
        let tcp = source("nccl-tcp").tick_at(3);
        let eth0 = tcp.host.net.iter().find(|r| r.name == "eth0").expect("eth0");
        assert!(eth0.rx_bytes_per_s > 2_000_000_000, "both ranks' traffic: {eth0:?}");
    }
}
