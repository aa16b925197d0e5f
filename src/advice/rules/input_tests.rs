//! The input causes where training really runs: each case fires on its scenario and stays quiet, or names another
//! cause, one signal away (a mount read rather than only written, a warm cache rather than waits, an offloaded
//! step with or without DataLoader workers, a compile that is over, a CPU mask that is wide enough).

use crate::advice::testkit::{Build, get, has};
use crate::advice::{Rule, Severity};
use crate::sample::{HostProcess, Tick};

/// The GPU process of every single-GPU scenario.
const MAIN: u32 = 2001;

fn each(tick: &mut Tick, f: impl Fn(&mut HostProcess)) {
    for p in tick.processes.iter_mut().filter(|p| p.pid == MAIN || p.ppid == Some(MAIN)) {
        f(p);
    }
}

fn warnings(findings: &[crate::advice::Finding]) -> Vec<Rule> {
    findings.iter().filter(|f| f.severity >= Severity::Warning).map(|f| f.rule).collect()
}

#[test]
fn a_thread_in_d_on_a_written_nfs_mount_is_not_input_but_one_on_a_read_mount_is() {
    let f = Build::new("nfs-logging-thread").findings(90);
    assert!(!has(&f, Rule::InputBound), "{f:#?}");
    // One signal away: the file on the NFS home is open read-only (a dataset), so the thread in D reads it.
    let reading = Build::new("nfs-logging-thread").tick(|_, t| {
        each(t, |p| {
            if let Some(files) = p.remote_files.as_mut() {
                (files.read_only, files.written) = (files.written, 0);
            }
        });
    });
    let f = reading.findings(90);
    let input = get(&f, Rule::InputBound);
    assert!(input.remedy.contains("copy the dataset"), "{input:#?}");
    // A thread in dirty-page throttling is a writer too, whatever the mounts.
    let throttled = Build::new("nfs-logging-thread").tick(|_, t| {
        each(t, |p| {
            if p.pid == MAIN {
                (p.fs_waits, p.write_waits, p.remote_files) = (Some(0), Some(1), None);
            }
        });
    });
    assert!(!has(&throttled.findings(90), Rule::InputBound));
}

#[test]
fn reads_from_a_warm_cache_do_not_stall_but_reads_that_wait_do() {
    assert!(!has(&Build::new("lustre-warm-decode").findings(90), Rule::RemoteDatasetStall));
    // The same workers in Lustre waits: the reads keep them waiting.
    let waiting = Build::new("lustre-warm-decode").tick(|_, t| {
        each(t, |p| {
            if p.pid != MAIN {
                (p.remote_waits, p.fs_waits) = (Some(1), Some(1));
            }
        });
    });
    assert!(has(&waiting.findings(90), Rule::RemoteDatasetStall));
    // A real NFS stall with its waits gone (the cache warmed up) is no longer one.
    let warmed =
        Build::new("nfs-read-stall").tick(|_, t| each(t, |p| (p.remote_waits, p.fs_waits) = (Some(0), Some(0))));
    assert!(!has(&warmed.findings(90), Rule::RemoteDatasetStall));
}

/// Scenario `nfs-logging-thread` with one more file on the NFS home open read-only by the GPU process (a vocabulary,
/// a config), read at `read_mib_s` (`None`: the rate unknown).
fn logger_with_a_read_only_file(read_mib_s: Option<u64>) -> Build {
    Build::new("nfs-logging-thread").tick(move |_, t| {
        each(t, |p| {
            if p.pid == MAIN
                && let Some(files) = p.remote_files.as_mut()
            {
                files.read_only = 1;
                files.open += 1;
                files.mount = "/home".to_owned();
                files.read_bytes_per_s = read_mib_s.map(|m| m << 20);
            }
        });
    })
}

#[test]
fn a_thread_writing_to_nfs_beside_a_file_it_does_not_read_is_no_dataset_stall() {
    // The logging thread in an NFS wait while the process also holds a file there open read-only, unread.
    for rate in [Some(0), None] {
        let f = logger_with_a_read_only_file(rate).findings(90);
        assert!(!has(&f, Rule::RemoteDatasetStall), "read at {rate:?} MiB/s: {f:#?}");
    }
    // Threads waiting on write-back are never file system waits, whatever is open read-only.
    let write_back = logger_with_a_read_only_file(Some(0)).tick(|_, t| {
        each(t, |p| {
            if p.pid == MAIN {
                (p.fs_waits, p.remote_waits, p.write_waits) = (Some(0), Some(0), Some(1));
            }
        });
    });
    assert!(!has(&write_back.findings(90), Rule::RemoteDatasetStall));
    // One signal away: the process reads through that file while it waits, so the wait is a read.
    let f = logger_with_a_read_only_file(Some(5)).findings(90);
    assert!(has(&f, Rule::RemoteDatasetStall), "{f:#?}");
    // Workers in NFS waits count however little comes through: they fetch the input (a stalled open reads 0 B/s).
    let stalled = Build::new("nfs-read-stall").tick(|_, t| {
        each(t, |p| {
            if let Some(files) = p.remote_files.as_mut() {
                files.read_bytes_per_s = Some(0);
            }
        });
    });
    assert!(has(&stalled.findings(90), Rule::RemoteDatasetStall));
}

#[test]
fn a_servers_socket_waits_are_no_stall_but_workers_with_their_own_connections_are() {
    assert!(!has(&Build::new("inference-server").findings(90), Rule::RemoteDatasetStall));
    let f = Build::new("remote-dataset-stall").findings(90);
    assert_eq!(warnings(&f), vec![Rule::RemoteDatasetStall]);
}

#[test]
fn an_offloaded_step_names_the_main_thread_with_or_without_workers() {
    let f = Build::new("cpu-offload").findings(90);
    assert_eq!(warnings(&f), vec![Rule::MainThreadBound], "{f:#?}");
    assert!(!has(&f, Rule::CpuBoundInput));
    // No DataLoader workers: the device-to-host traffic still says the CPU work is the step's own.
    let alone = Build::new("cpu-offload").tick(|_, t| t.processes.retain(|p| p.ppid != Some(MAIN)));
    let f = alone.findings(90);
    assert_eq!(warnings(&f), vec![Rule::MainThreadBound], "{f:#?}");
    assert!(get(&f, Rule::MainThreadBound).remedy.contains("offloaded optimizer"));
    // Neither workers nor traffic back to the host: the main process may be preparing data (cpu-bound-input).
    let tokenizing = Build::new("cpu-offload").tick(|_, t| {
        t.processes.retain(|p| p.ppid != Some(MAIN));
        t.gpus[0].pcie_tx_kbps = Some(500);
    });
    let f = tokenizing.findings(90);
    assert_eq!(warnings(&f), vec![Rule::CpuBoundInput], "{f:#?}");
    assert!(!has(&Build::new("cpu-bound").findings(90), Rule::MainThreadBound));
}

#[test]
fn a_pegged_worker_next_to_a_busier_main_thread_is_cpu_bound_input() {
    // The main thread at a full core, its four workers keeping up, no traffic back to the host: the step's pace.
    let step = Build::new("cpu-offload").tick(|_, t| t.gpus[0].pcie_tx_kbps = Some(500));
    let f = step.findings(90);
    assert_eq!(warnings(&f), vec![Rule::MainThreadBound], "{f:#?}");
    assert!(get(&f, Rule::MainThreadBound).evidence.contains("keep up"), "{f:#?}");
    // One signal away: a worker pegged at 96 % does not keep up, whatever the main thread's 100 %.
    let pegged = Build::new("cpu-offload").tick(|_, t| {
        t.gpus[0].pcie_tx_kbps = Some(500);
        if let Some(worker) = t.processes.iter_mut().find(|p| p.ppid == Some(MAIN)) {
            worker.cpu_pct = Some(96.0);
        }
    });
    let f = pegged.findings(90);
    assert!(!has(&f, Rule::MainThreadBound), "{f:#?}");
    assert_eq!(warnings(&f), vec![Rule::CpuBoundInput], "{f:#?}");
    let cpu = get(&f, Rule::CpuBoundInput);
    assert!(cpu.evidence.contains("DataLoader worker PID"), "{}", cpu.evidence);
    assert!(cpu.remedy.contains("Raise DataLoader num_workers"), "{}", cpu.remedy);
    assert!(!cpu.remedy.contains("will not help"), "{}", cpu.remedy);
    // With the offloaded optimizer's traffic too, a pegged worker still makes it the input's.
    let offload = Build::new("cpu-offload").tick(|_, t| {
        if let Some(worker) = t.processes.iter_mut().find(|p| p.ppid == Some(MAIN)) {
            worker.cpu_pct = Some(96.0);
        }
    });
    assert!(!has(&offload.findings(90), Rule::MainThreadBound));
}

#[test]
fn a_compile_warms_up_only_while_young_and_with_its_workers() {
    let f = Build::new("compile-warmup").findings(90);
    assert_eq!(get(&f, Rule::CompileWarmup).severity, Severity::Info);
    // Ten seconds of a 30 s window: too little to judge, nothing said yet.
    assert!(!has(&Build::new("compile-warmup").findings(10), Rule::CompileWarmup));
    assert!(warnings(&f).is_empty(), "{f:#?}");
    let old = Build::new("compile-warmup").tick(|_, t| {
        each(t, |p| p.started_at_ms = p.started_at_ms.map(|s| s.saturating_sub(3_600_000)));
    });
    assert!(!has(&old.findings(90), Rule::CompileWarmup), "an hour old: not warming up");
    let none = Build::new("compile-warmup").tick(|_, t| t.processes.retain(|p| !p.is_compile_worker()));
    let f = none.findings(90);
    assert!(!has(&f, Rule::CompileWarmup));
    // Without the compiler, a pegged main thread with idle workers is the main thread's pace.
    assert_eq!(warnings(&f), vec![Rule::MainThreadBound], "{f:#?}");
}

#[test]
fn pinned_cpus_name_the_launcher_that_set_them() {
    let f = Build::new("pinned-cpus").findings(90);
    assert_eq!(warnings(&f), vec![Rule::CpusPinned], "{f:#?}");
    assert!(get(&f, Rule::CpusPinned).remedy.contains("taskset -c"));
    let slurm = Build::new("pinned-cpus").tick(|_, t| {
        each(t, |p| {
            if p.pid == MAIN {
                p.job = Some(crate::sample::JobInfo { slurm_job_id: Some("4242".to_owned()), ..Default::default() });
            }
        });
    });
    assert!(get(&slurm.findings(90), Rule::CpusPinned).remedy.contains("--cpus-per-task=10"));
    let pod = Build::new("pinned-cpus").tick(|_, t| {
        each(t, |p| {
            p.cgroup_cpu = Some(crate::sample::CgroupCpu {
                path: "/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope".to_owned(),
                cpuset_cpus: Some(2),
                ..Default::default()
            });
        });
    });
    let f = pod.findings(90);
    let remedy = &get(&f, Rule::CpusPinned).remedy;
    assert!(remedy.contains("requests.cpu = limits.cpu = 10"), "{remedy}");
    // A mask as wide as the workers need is not the cause.
    let wide = Build::new("pinned-cpus").tick(|_, t| each(t, |p| p.allowed_cpus = Some((0..12).collect())));
    assert!(!has(&wide.findings(90), Rule::CpusPinned));
}

#[test]
fn only_workers_that_work_are_counted() {
    let f = Build::new("eval-workers-idle").findings(90);
    let cpu = get(&f, Rule::CpuBoundInput);
    assert!(cpu.evidence.contains("10 DataLoader workers (4 idle, not counted)"), "{}", cpu.evidence);
    assert!(cpu.remedy.contains("from 10 to about"), "{}", cpu.remedy);
}
