//! Tests of the whole host sampler over the fixture tree in `tests/fixtures/proc/tree`, copied into a temporary
//! directory so a second sample can be written over it.

use std::path::Path;

use super::*;
use crate::sample::{NetKind, ProcessRole, Serving};

const T0: UnixMs = 1_000_000;
const T1: UnixMs = 1_002_000;
const BOOT_MS: UnixMs = 1_700_000_000_000;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/tree"), dir.path());
    dir
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A stat line with the fields the sampler reads; the others are plausible constants.
fn stat_line(pid: u32, comm: &str, ppid: u32, session: u32, utime: u64, stime: u64, start: u64) -> String {
    format!(
        "{pid} ({comm}) S {ppid} {pid} {session} 34816 {pid} 4194304 100 0 0 0 {utime} {stime} 0 0 20 0 1 0 {start} \
         123456789 1000 18446744073709551615 1 1 0 0 0 0 0 16781312 1266 0 0 0 17 0 0 0 0 0 0\n"
    )
}

fn io_text(read: u64, write: u64) -> String {
    format!(
        "rchar: 0\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: {read}\nwrite_bytes: {write}\ncancelled_write_bytes: 0\n"
    )
}

fn sampler(dir: &Path) -> HostSampler {
    HostSampler::new(HostRoot::under(dir)).with_ticks_per_second(100)
}

fn find(processes: &[HostProcess], pid: u32) -> &HostProcess {
    processes.iter().find(|p| p.pid == pid).unwrap_or_else(|| panic!("PID {pid} missing from {processes:#?}"))
}

fn pids(processes: &[HostProcess]) -> Vec<u32> {
    processes.iter().map(|p| p.pid).collect()
}

/// The files that change between the first and the second sample: 2 s later, with known deltas.
fn write_second_sample(dir: &Path) {
    // Δ per CPU (user, system, idle, iowait, steal): cpu0 (150,30,20,0,0), cpu1 (60,20,60,60,0),
    // cpu3 (30,10,100,30,30); total Δ (240,60,180,90,30) over 600 ticks.
    write(
        dir,
        "proc/stat",
        "cpu  100240 500 20060 400180 3090 0 1000 2030 5000 0\n\
         cpu0 40150 200 8030 100020 1000 0 500 500 2000 0\n\
         cpu1 30060 100 6020 150060 1060 0 300 500 1500 0\n\
         cpu3 30030 200 6010 150100 1030 0 200 1030 1500 0\n\
         btime 1700000001\nprocs_running 2\nprocs_blocked 5\n",
    );
    write(dir, "proc/vmstat", "nr_free_pages 500000\npswpin 1200\npswpout 2050\n");
    // The GPU process used 3 s of CPU and read 20 MB in 2 s; a worker used 1.8 s.
    write(dir, "proc/1200/stat", &stat_line(1200, "pt_main_thread", 1100, 1000, 20_250, 3_050, 6100));
    write(dir, "proc/1200/io", &io_text(520_000_000, 6_096));
    write(dir, "proc/1300/stat", &stat_line(1300, "pt_data_worker", 1200, 1000, 1_060, 120, 6200));
    // PID 1301 was reused by a new worker: a different start time, so no delta against the old one.
    write(dir, "proc/1301/stat", &stat_line(1301, "pt_data_worker", 1200, 1000, 5_000, 100, 9000));
    // PID 1302 exited.
    std::fs::remove_dir_all(dir.join("proc/1302")).unwrap();
    write(dir, "proc/1200/task/1202/children", "");
    // Its thread 1201 used 1.96 s of CPU in 2 s (a pegged thread), 1200 used 0.1 s.
    write(dir, "proc/1200/task/1201/stat", &stat_line(1201, "pt_data_pin", 1100, 1000, 197, 1, 6100));
    write(dir, "proc/1200/task/1200/stat", &stat_line(1200, "pt_main_thread", 1100, 1000, 11, 1, 6100));
}

#[test]
fn two_samples_over_the_fixture_tree() {
    let dir = tree();
    let mut host = sampler(dir.path());

    let (tick, procs) = host.sample(T0, &[2000, 1200, 9999, 1200]);
    assert_eq!(tick.cpu, None, "shares need two samples");
    assert_eq!(tick.per_cpu_busy_pct, vec![None; 4]);
    assert_eq!((tick.swap_in_pages_per_s, tick.swap_out_pages_per_s), (None, None));
    assert_eq!(tick.mem_total_bytes, Some(16_000_000 * 1024));
    assert_eq!(tick.mem_available_bytes, Some(9_000_000 * 1024));
    assert_eq!((tick.swap_total_bytes, tick.swap_free_bytes), (Some(4_000_000 * 1024), Some(3_500_000 * 1024)));
    assert_eq!((tick.load_1, tick.load_5, tick.load_15), (Some(3.5), Some(2.25), Some(1.0)));
    assert_eq!(tick.procs_blocked, Some(3));
    assert_eq!(tick.uptime_s, Some(86_400));
    let psi = tick.psi.unwrap();
    assert_eq!((psi.cpu_some_avg10, psi.io_some_avg10, psi.io_full_avg10), (Some(4.0), Some(25.5), Some(18.0)));
    assert_eq!((psi.memory_some_avg10, psi.memory_full_avg10), (Some(0.0), Some(0.0)));

    // The session's ancestors (not sshd, not init), the GPU processes, their direct children (1302 was forked by
    // another thread), no grandchild (1500), no sibling (1400).
    assert_eq!(pids(&procs), vec![1000, 1100, 1200, 1300, 1301, 1302, 2000, 2001, 9999]);
    let role = |pid| find(&procs, pid).role;
    assert_eq!([role(1000), role(1100)], [ProcessRole::Parent; 2]);
    assert_eq!([role(1200), role(2000), role(9999)], [ProcessRole::Gpu; 3]);
    assert_eq!([role(1300), role(1301), role(1302), role(2001)], [ProcessRole::Child; 4]);

    let gpu = find(&procs, 1200);
    assert_eq!(gpu.ppid, Some(1100));
    assert_eq!((gpu.uid, gpu.user.as_deref()), (Some(1000), Some("alice")));
    assert_eq!(gpu.name, "pt_main_thread");
    assert_eq!(gpu.cmdline, "/usr/bin/python3 -u train.py --batch-size 256");
    assert_eq!(gpu.state, Some('R'));
    assert_eq!((gpu.cpu_pct, gpu.read_bytes_per_s, gpu.write_bytes_per_s), (None, None, None));
    assert_eq!(gpu.rss_bytes, Some(2_345_678 * 1024));
    assert_eq!(gpu.allowed_cpus, Some(vec![0, 1]));
    assert_eq!(gpu.nspid, Some(vec![1200]));
    assert_eq!(gpu.start_ticks, Some(6100));
    assert_eq!(gpu.started_at_ms, Some(BOOT_MS + 61_000));
    assert_eq!((gpu.n_threads, gpu.threads_in_d), (Some(3), Some(2)));
    assert_eq!(gpu.unreadable, None);
    assert_eq!(find(&procs, 1300).threads_in_d, None, "thread states are read for GPU processes only");
    assert_eq!(gpu.busiest_thread, None, "thread CPU needs two samples");

    let odd = find(&procs, 2001);
    assert_eq!((odd.name.as_str(), odd.state, odd.rss_bytes), ("my (odd) worker", Some('Z'), None));
    assert_eq!((odd.container_pid(), odd.user.as_deref(), odd.cmdline.as_str()), (Some(12), Some("root"), ""));
    assert_eq!(find(&procs, 9999).unreadable.as_deref(), Some("exited"));

    write_second_sample(dir.path());
    let (tick, procs) = host.sample(T1, &[1200, 2000]);
    let cpu = tick.cpu.unwrap();
    assert_eq!((cpu.user_pct, cpu.system_pct, cpu.iowait_pct), (40.0, 10.0, 15.0));
    assert_eq!((cpu.steal_pct, cpu.idle_pct, cpu.busy_pct), (5.0, 30.0, 50.0));
    assert_eq!(tick.per_cpu_busy_pct, vec![Some(90.0), Some(40.0), None, Some(20.0)], "cpu2 is offline");
    assert_eq!((tick.swap_in_pages_per_s, tick.swap_out_pages_per_s), (Some(100.0), Some(25.0)));
    assert_eq!(tick.procs_blocked, Some(5));

    assert_eq!(pids(&procs), vec![1000, 1100, 1200, 1300, 1301, 2000, 2001]);
    let gpu = find(&procs, 1200);
    assert_eq!(gpu.cpu_pct, Some(150.0));
    assert_eq!((gpu.read_bytes_per_s, gpu.write_bytes_per_s), (Some(10_000_000), Some(1_000)));
    assert_eq!(gpu.started_at_ms, Some(BOOT_MS + 61_000), "the first boot time is kept");
    let busiest = gpu.busiest_thread.as_ref().expect("a busiest thread");
    assert_eq!((busiest.tid, busiest.name.as_str()), (1201, "pt_data_pin"));
    assert!((busiest.cpu_pct - 98.0).abs() < 0.01, "{busiest:?}");
    assert_eq!(find(&procs, 1300).busiest_thread, None, "threads are read for GPU processes only");
    assert_eq!(find(&procs, 1300).cpu_pct, Some(90.0));
    assert_eq!(find(&procs, 1301).cpu_pct, None, "a reused PID has no delta");
    assert_eq!(find(&procs, 1100).cpu_pct, Some(0.0), "an idle launcher is 0 %, not N/A");

    // 1302 comes back with the same start time: it was forgotten when it vanished, so no delta spans the gap.
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/tree/proc/1302"),
        &dir.path().join("proc/1302"),
    );
    write(dir.path(), "proc/1200/task/1202/children", "1302 ");
    // The threads (and the children they forked) are walked every THREAD_WALK_PERIOD_MS: a tick 1 s after the last
    // walk carries its answer, the next one walks again and finds 1302.
    let (_, procs) = host.sample(T1 + 1_000, &[1200]);
    assert!(procs.iter().all(|p| p.pid != 1302), "not walked yet");
    let busiest = find(&procs, 1200).busiest_thread.clone().expect("carried");
    assert_eq!(busiest.tid, 1201, "the last walk's busiest thread is carried");
    let (_, procs) = host.sample(T1 + 2_000, &[1200]);
    assert_eq!(find(&procs, 1302).cpu_pct, None);
    assert_eq!(find(&procs, 1300).cpu_pct, Some(0.0));
}

#[test]
fn children_found_without_children_files() {
    let dir = tree();
    for entry in std::fs::read_dir(dir.path().join("proc")).unwrap().flatten() {
        let Ok(tasks) = std::fs::read_dir(entry.path().join("task")) else { continue };
        for task in tasks.flatten() {
            let _ = std::fs::remove_file(task.path().join("children"));
        }
    }
    let (_, procs) = sampler(dir.path()).sample(T0, &[1200, 2000]);
    assert_eq!(pids(&procs), vec![1000, 1100, 1200, 1300, 1301, 1302, 2000, 2001]);
    assert_eq!(find(&procs, 1302).role, ProcessRole::Child);
    assert_eq!(find(&procs, 1200).threads_in_d, Some(2));
}

#[test]
fn outside_the_initial_pid_namespace_nothing_is_looked_up() {
    let dir = tree();
    std::fs::create_dir_all(dir.path().join("proc/self/ns")).unwrap();
    std::os::unix::fs::symlink("pid:[4026532999]", dir.path().join("proc/self/ns/pid")).unwrap();
    let (tick, procs) = sampler(dir.path()).sample(T0, &[1200]);
    assert_eq!(tick.mem_total_bytes, Some(16_000_000 * 1024), "host-wide readings still work");
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0].unreadable.as_deref(), Some(OUTSIDE_NAMESPACE));
    assert_eq!((procs[0].name.as_str(), procs[0].ppid, procs[0].start_ticks), ("", None, None));

    let inside = tree();
    std::fs::create_dir_all(inside.path().join("proc/self/ns")).unwrap();
    std::os::unix::fs::symlink("pid:[4026531836]", inside.path().join("proc/self/ns/pid")).unwrap();
    let (_, procs) = sampler(inside.path()).sample(T0, &[1200]);
    assert_eq!(find(&procs, 1200).unreadable, None);
}

#[test]
fn unreadable_io_is_none_with_a_reason() {
    let dir = tree();
    // Tests may run as root, where permissions do not deny: a directory in place of the file fails the read.
    std::fs::remove_file(dir.path().join("proc/1200/io")).unwrap();
    std::fs::create_dir(dir.path().join("proc/1200/io")).unwrap();
    let mut host = sampler(dir.path());
    host.sample(T0, &[1200]);
    let (_, procs) = host.sample(T1, &[1200]);
    let gpu = find(&procs, 1200);
    assert_eq!((gpu.read_bytes_per_s, gpu.write_bytes_per_s), (None, None));
    assert!(gpu.unreadable.as_deref().is_some_and(|r| r.starts_with("I/O counters")), "{:?}", gpu.unreadable);
    assert_eq!(gpu.cpu_pct, Some(0.0), "the rest is still read");
}

#[test]
fn machine_info_from_the_tree() {
    let dir = tree();
    let info = sampler(dir.path()).machine_info();
    assert_eq!(
        info,
        HostInfo {
            hostname: "trainbox-01".into(),
            n_cpus: 4,
            n_numa_nodes: 2,
            mem_total_bytes: Some(16_000_000 * 1024),
            boot_time_ms: Some(BOOT_MS),
            kernel_release: Some("6.8.0-45-generic".into()),
            open_kernel_module: Some(true),
        }
    );
    let mut machine = MachineInfo::default();
    info.fill(&mut machine);
    assert_eq!((machine.hostname.as_str(), machine.n_numa_nodes), ("trainbox-01", 2));

    std::fs::remove_dir_all(dir.path().join("sys/devices/system/node")).unwrap();
    std::fs::remove_dir_all(dir.path().join("proc/driver")).unwrap();
    std::fs::remove_dir_all(dir.path().join("proc/pressure")).unwrap();
    let mut host = sampler(dir.path());
    let info = host.machine_info();
    assert_eq!((info.n_numa_nodes, info.open_kernel_module), (1, None));
    assert_eq!(host.sample(T0, &[]).0.psi, None, "no PSI on this kernel");
}

#[test]
fn empty_root_gives_none_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut host = sampler(dir.path());
    let (tick, procs) = host.sample(T0, &[42]);
    assert_eq!(tick, HostTick::default());
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0].unreadable.as_deref(), Some("exited"));
    let info = host.machine_info();
    assert_eq!((info.n_cpus, info.n_numa_nodes, info.mem_total_bytes), (0, 1, None));
}

#[test]
fn the_sampler_can_move_to_a_sampler_thread() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<HostSampler>();
}

#[test]
fn the_input_path_of_a_gpu_process_and_its_workers() {
    let dir = tree();
    let d = dir.path();
    // The job runs in a cgroup with a 2-CPU quota; a thread waits on a socket, a worker on NFS; the job has a file
    // open on an NFS mount.
    write(d, "proc/1200/cgroup", "0::/job\n");
    write(d, "proc/1300/cgroup", "0::/job\n");
    write(d, "sys/fs/cgroup/job/cpu.max", "200000 100000\n");
    write(d, "sys/fs/cgroup/job/cpuset.cpus.effective", "0-3\n");
    write(d, "sys/fs/cgroup/job/cpu.stat", "nr_periods 100\nnr_throttled 10\nthrottled_usec 1000\n");
    write(d, "proc/1200/task/1201/wchan", "sk_wait_data");
    write(d, "proc/1200/task/1200/wchan", "futex_wait_queue");
    write(d, "proc/1300/wchan", "rpc_wait_bit_killable");
    write(
        d,
        "proc/1200/mountinfo",
        "22 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n40 22 0:45 / /mnt/data rw - nfs4 server:/export rw\n",
    );
    std::fs::create_dir_all(d.join("proc/1200/fd")).unwrap();
    std::os::unix::fs::symlink("/mnt/data/train/shard-0001.tar", d.join("proc/1200/fd/7")).unwrap();
    std::os::unix::fs::symlink("/dev/null", d.join("proc/1200/fd/0")).unwrap();
    let mut host = sampler(d);
    let (_, procs) = host.sample(T0, &[1200]);
    let gpu = find(&procs, 1200);
    let cgroup = gpu.cgroup_cpu.as_ref().expect("cgroup");
    assert_eq!((cgroup.path.as_str(), cgroup.quota_cpus, cgroup.cpuset_cpus), ("/job", Some(2.0), Some(4)));
    assert_eq!(cgroup.throttled_pct, None, "a share needs two readings");
    assert_eq!(gpu.remote_waits, Some(1), "the socket wait counts, the futex does not");
    let files = gpu.remote_files.as_ref().expect("fd scan");
    assert_eq!((files.open, files.fs_type.as_str(), files.mount.as_str()), (1, "nfs4", "/mnt/data"));
    let worker = find(&procs, 1300);
    assert_eq!(worker.remote_waits, Some(1));
    assert_eq!(worker.cgroup_cpu.as_ref().map(|c| c.path.as_str()), Some("/job"));
    // A parent is not read for any of it.
    assert!(procs.iter().filter(|p| p.role == ProcessRole::Parent).all(|p| p.cgroup_cpu.is_none()));
    write(d, "sys/fs/cgroup/job/cpu.stat", "nr_periods 120\nnr_throttled 25\nthrottled_usec 601000\n");
    let (_, procs) = host.sample(T1, &[1200]);
    let cgroup = find(&procs, 1200).cgroup_cpu.clone().expect("cgroup");
    assert_eq!(cgroup.throttled_pct, Some(75.0));
    assert_eq!(cgroup.throttled_ms_per_s, Some(300.0));
}

#[test]
fn waits_are_split_and_remote_reads_are_measured_between_scans() {
    let dir = tree();
    let d = dir.path();
    // The GPU process's thread waits on a socket, another on dirty-page throttling; its worker on NFS. The process
    // reads a shard on NFS read-only (fd 7) and appends to a log there (fd 8).
    write(d, "proc/1200/task/1201/wchan", "sk_wait_data");
    write(d, "proc/1200/task/1200/stat", &stat_line(1200, "pt_main_thread", 1100, 1000, 11, 1, 6100));
    write(d, "proc/1200/task/1200/wchan", "balance_dirty_pages");
    write(d, "proc/1300/wchan", "rpc_wait_bit_killable");
    write(
        d,
        "proc/1200/mountinfo",
        "22 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n40 22 0:45 / /mnt/data rw - nfs4 server:/export rw\n",
    );
    std::fs::create_dir_all(d.join("proc/1200/fd")).unwrap();
    std::os::unix::fs::symlink("/mnt/data/train/shard-0001.tar", d.join("proc/1200/fd/7")).unwrap();
    std::os::unix::fs::symlink("/mnt/data/logs/train.log", d.join("proc/1200/fd/8")).unwrap();
    write(d, "proc/1200/fdinfo/7", "pos:\t1000000\nflags:\t0100000\nino:\t70\n");
    write(d, "proc/1200/fdinfo/8", "pos:\t4096\nflags:\t0102001\nino:\t80\n");
    let mut host = sampler(d);
    let (_, procs) = host.sample(T0, &[1200]);
    let gpu = find(&procs, 1200);
    assert_eq!((gpu.remote_waits, gpu.fs_waits, gpu.write_waits), (Some(1), Some(0), Some(1)));
    let worker = find(&procs, 1300);
    assert_eq!((worker.remote_waits, worker.fs_waits, worker.write_waits), (Some(1), Some(1), Some(0)));
    let files = gpu.remote_files.clone().expect("fd scan");
    assert_eq!((files.open, files.read_only, files.written), (2, 1, 1));
    assert_eq!(files.read_bytes_per_s, None, "a rate needs two scans");
    // The next scan is due 5 s later; in between the last answer is carried.
    write(d, "proc/1200/fdinfo/7", "pos:\t41000000\nflags:\t0100000\nino:\t70\n");
    let (_, procs) = host.sample(T1, &[1200]);
    assert_eq!(find(&procs, 1200).remote_files.as_ref().and_then(|f| f.read_bytes_per_s), None);
    let (_, procs) = host.sample(T0 + 5_000, &[1200]);
    let files = find(&procs, 1200).remote_files.clone().expect("fd scan");
    assert_eq!(files.read_bytes_per_s, Some(8_000_000), "40 MB in 5 s through the read-only descriptor");
}

#[test]
fn gpu_processes_get_their_job_once_per_process() {
    let dir = tree();
    write(
        dir.path(),
        "proc/1200/environ",
        "PATH=/usr/bin\0RANK=1\0LOCAL_RANK=1\0WORLD_SIZE=2\0MASTER_ADDR=127.0.0.1\0MASTER_PORT=29500\0",
    );
    let mut host = sampler(dir.path());
    let (_, procs) = host.sample(T0, &[1200, 2000]);
    let job = find(&procs, 1200).job.clone().expect("a job");
    assert_eq!(job.key, "torch:127.0.0.1:29500");
    assert_eq!((job.rank, job.local_rank, job.world_size), (Some(1), Some(1), Some(2)));
    assert_eq!(job.launcher.as_deref(), Some("torchrun"), "PID 1100 runs torchrun");
    assert_eq!(job.note, None);
    // No environ file: a note, never an error, and a job of its own.
    let alone = find(&procs, 2000).job.clone().expect("a job");
    assert_eq!(alone.key, "pid:2000");
    assert!(alone.note.as_deref().is_some_and(|n| n.starts_with("environment unreadable")), "{alone:?}");
    assert_eq!(find(&procs, 1300).job, None, "only GPU processes have a job");

    // The environment is read once per process: a changed file is not read again for the same start time.
    write(dir.path(), "proc/1200/environ", "RANK=7\0");
    let (_, procs) = host.sample(T1, &[1200]);
    assert_eq!(find(&procs, 1200).job.as_ref().and_then(|j| j.rank), Some(1));
}

#[test]
fn thread_times_come_from_schedstat_with_the_main_threads_wait() {
    let dir = tree();
    let d = dir.path();
    // The GPU process's main thread sleeps reading a pipe (its DataLoader's queue): `wchan` is generic, the call and
    // its descriptor say what it is. Its other threads: one on a socket, one runnable. Its worker 1300 reads a file.
    let sched = |d: &Path, rel: &str, run_ms: u64, wait_ms: u64| {
        write(d, rel, &format!("{} {} 10\n", run_ms * 1_000_000, wait_ms * 1_000_000));
    };
    let stat = std::fs::read_to_string(d.join("proc/1200/stat")).unwrap().replacen(") R ", ") S ", 1);
    write(d, "proc/1200/stat", &stat);
    write(d, "proc/1200/task/1200/stat", &stat);
    write(d, "proc/1200/task/1200/wchan", "do_sys_poll");
    write(d, "proc/1200/task/1200/syscall", "0 0x9 0x7f 0x10000 0x0 0x0 0x0 0x7ffd 0x7f3b\n");
    std::fs::create_dir_all(d.join("proc/1200/fd")).unwrap();
    std::os::unix::fs::symlink("pipe:[4242]", d.join("proc/1200/fd/9")).unwrap();
    write(d, "proc/1200/task/1201/wchan", "sk_wait_data");
    write(d, "proc/1300/task/1300/wchan", "io_schedule");
    // One sampler over two ticks 2 s apart, the GPU process urgent.
    sched(d, "proc/1200/task/1200/schedstat", 100, 10);
    sched(d, "proc/1200/task/1201/schedstat", 50, 0);
    sched(d, "proc/1200/task/1202/schedstat", 50, 0);
    sched(d, "proc/1300/task/1300/schedstat", 100, 0);
    let mut host = sampler(d);
    let (_, procs) = host.sample_with(T0, &[1200], &[1200]);
    assert_eq!(find(&procs, 1200).times, None, "the first gather only sets the counters");
    sched(d, "proc/1200/task/1200/schedstat", 500, 310);
    sched(d, "proc/1200/task/1201/schedstat", 850, 0);
    sched(d, "proc/1200/task/1202/schedstat", 850, 400);
    sched(d, "proc/1300/task/1300/schedstat", 1300, 100);
    let (_, procs) = host.sample_with(T1, &[1200], &[1200]);
    let times = find(&procs, 1200).times.clone().expect("gathered");
    assert_eq!(times.span_ms, 2_000);
    assert_eq!((times.main.on_cpu_ms, times.main.wait_cpu_ms), (400, Some(300)));
    assert_eq!(times.main.wait, Some(crate::sample::WaitKind::Pipe), "{times:?}");
    let all = times.all.expect("the thread walk is due every 2 s");
    assert_eq!((all.span_ms, all.threads, all.on_cpu_ms, all.wait_cpu_ms), (2_000, 3, 400 + 800 + 800, Some(700)));
    assert_eq!(all.waits.get(&crate::sample::WaitKind::Socket), Some(&1));
    let worker = find(&procs, 1300).times.clone().expect("a worker of an urgent process is gathered too");
    assert_eq!((worker.main.on_cpu_ms, worker.main.wait_cpu_ms), (1_200, Some(100)));
    // Not urgent: the main thread is read every 10 s, so nothing is due 1 s later.
    let (_, procs) = host.sample_with(T1 + 1_000, &[1200], &[]);
    assert_eq!(find(&procs, 1300).times, None);
}

#[test]
fn network_throughput_over_the_tree() {
    let dir = tree();
    let d = dir.path();
    let mut host = sampler(d);
    assert!(host.sample(T0, &[1200]).0.net.is_empty(), "rates need two reads");
    // 2 s later: eth0 received 20 MB and sent 2 MB, docker0 nothing; the InfiniBand port moved 25 M words in and
    // 50 M out (100 MB and 200 MB).
    write(
        d,
        "proc/net/dev",
        "Inter-|   Receive                                                |  Transmit\n \
         face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls \
         carrier compressed\n    lo: 22463118 6049 0 0 0 0 0 0 22463118 6049 0 0 0 0 0 0\n  \
         eth0: 3136032423 83217 0 0 0 0 0 0 5068076 54685 0 0 0 0 0 0\n\
         docker0: 524288 1024 0 0 0 0 0 0 262144 512 0 0 0 0 0 0\n",
    );
    write(d, "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "275000000\n");
    write(d, "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "175000000\n");
    let (tick, _) = host.sample(T1, &[1200]);
    let rates: Vec<(&str, NetKind, u64, u64)> =
        tick.net.iter().map(|r| (r.name.as_str(), r.kind, r.rx_bytes_per_s, r.tx_bytes_per_s)).collect();
    assert_eq!(
        rates,
        vec![
            ("mlx5_0/1", NetKind::Infiniband, 50_000_000, 100_000_000),
            ("eth0", NetKind::Ethernet, 10_000_000, 1_000_000),
            ("docker0", NetKind::Virtual, 0, 0),
        ]
    );
}

#[test]
fn the_other_processes_are_scanned_while_the_cpus_are_contended() {
    let dir = tree();
    let d = dir.path();
    write(d, "proc/1400/cgroup", "0::/user.slice/user-1000.slice/session-2.scope\n");
    let mut host = sampler(d);
    // PSI cpu some at 4 %, and no busy share on the first tick: not contended, not scanned.
    assert_eq!(host.sample(T0, &[1200]).0.cpu_others, None);
    write(d, "proc/pressure/cpu", "some avg10=20.00 avg60=10.00 avg300=5.00 total=1000\n");
    assert_eq!(host.sample(T0 + 1_000, &[1200]).0.cpu_others, None, "the first scan sets the baseline");
    // In 5 s: vim (1400, a sibling of the job in its session) used 2 s of CPU, the other GPU process (2000, not
    // listed this tick) 1 s, systemd 0.1 s; the worker's child 1500 and sshd 900 (an ancestor) are the job's.
    write(d, "proc/1400/stat", &stat_line(1400, "vim", 1000, 1000, 203, 1, 5500));
    write(d, "proc/2000/stat", &stat_line(2000, "python3", 1, 2000, 500, 100, 7000));
    write(d, "proc/1/stat", &stat_line(1, "systemd", 0, 1, 510, 300, 1));
    write(d, "proc/1500/stat", &stat_line(1500, "pt_pin_memory", 1300, 1000, 303, 1, 6300));
    write(d, "proc/900/stat", &stat_line(900, "sshd", 1, 900, 110, 10, 300));
    let (tick, _) = host.sample(T0 + 6_000, &[1200]);
    let others = tick.cpu_others.expect("figures");
    assert_eq!(others.span_ms, 5_000);
    assert!((others.cpu_pct - 62.0).abs() < 0.01, "{others:?}");
    let top: Vec<(Option<&str>, &str, u32, u32)> =
        others.top.iter().map(|c| (c.user.as_deref(), c.cgroup.as_str(), c.pid, c.processes)).collect();
    assert_eq!(
        top,
        vec![(Some("alice"), "/user.slice/user-1000.slice/session-2.scope", 1400, 1), (Some("root"), "", 2000, 2)]
    );
    assert!((others.top[1].cpu_pct - 22.0).abs() < 0.01);
    // Outside the initial PID namespace the job's processes cannot be told from the others: no scan.
    std::fs::create_dir_all(d.join("proc/self/ns")).unwrap();
    std::os::unix::fs::symlink("pid:[4026532999]", d.join("proc/self/ns/pid")).unwrap();
    let mut contained = sampler(d);
    contained.sample(T0, &[1200]);
    assert_eq!(contained.sample(T0 + 5_000, &[1200]).0.cpu_others, None);
}

/// `/proc/net/tcp` with a listener on port 8000 (socket 5001) and `extra` lines after it.
fn tcp_table(extra: &str) -> String {
    format!(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
         0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5001 1 0\n{extra}"
    )
}

#[test]
fn a_listening_gpu_process_has_the_connections_it_accepted_counted_every_second() {
    let dir = tree();
    let d = dir.path();
    for sub in ["proc/2000/fd", "proc/2000/ns", "proc/self/ns"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    std::os::unix::fs::symlink("socket:[5001]", d.join("proc/2000/fd/3")).unwrap();
    // gpusight and the server share the host's network namespace: the namespace's counter is not the server's.
    std::os::unix::fs::symlink("net:[1]", d.join("proc/2000/ns/net")).unwrap();
    std::os::unix::fs::symlink("net:[1]", d.join("proc/self/ns/net")).unwrap();
    write(d, "proc/2000/net/tcp", &tcp_table(""));
    write(d, "proc/2000/net/snmp", "Tcp: PassiveOpens\nTcp: 900\n");
    let mut host = sampler(d);
    let serving = |procs: &[HostProcess]| find(procs, 2000).serving.clone().expect("listens");
    let (_, procs) = host.sample(T0, &[2000]);
    assert_eq!(serving(&procs), Serving { ports: vec![8000], connections: 0, accepted: Some(0) });
    // A request the server closed first leaves its TIME_WAIT line: counted at the next second, between fd scans
    // (the connections at the last read are the fd scan's, carried).
    let closed = "   1: 0A000002:1F40 0A000009:C001 06 00000000:00000000 03:00001234 00000000     0        0 0 3 0\n";
    write(d, "proc/2000/net/tcp", &tcp_table(closed));
    write(d, "proc/2000/net/snmp", "Tcp: PassiveOpens\nTcp: 950\n");
    let (_, procs) = host.sample(T0 + 1_000, &[2000]);
    assert_eq!(serving(&procs), Serving { ports: vec![8000], connections: 0, accepted: Some(1) });
    // A tick 600 ms later is not due: carried. The next second, a new connection in flight (socket 5002).
    let open = "   2: 0A000002:1F40 0A000009:C002 01 00000000:00000000 00:00000000 00000000  1000        0 5002 1 0\n";
    write(d, "proc/2000/net/tcp", &tcp_table(&format!("{closed}{open}")));
    let (_, procs) = host.sample(T0 + 1_600, &[2000]);
    assert_eq!(serving(&procs).accepted, Some(1));
    let (_, procs) = host.sample(T0 + 2_000, &[2000]);
    assert_eq!(serving(&procs).accepted, Some(2));
    // The fd scan, 5 s after the first, sees the socket as the server's own: two connections at the read, none new.
    std::os::unix::fs::symlink("socket:[5002]", d.join("proc/2000/fd/4")).unwrap();
    let (_, procs) = host.sample(T0 + 5_000, &[2000]);
    assert_eq!(serving(&procs), Serving { ports: vec![8000], connections: 2, accepted: Some(2) });
}
