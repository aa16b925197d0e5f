//! The scan of the other processes over trees written into a temporary directory.

use super::*;
use crate::sample::{CpuBreakdown, Psi};

const BOOT_MS: UnixMs = 1_700_000_000_000;
/// The baseline scan, 100 s after boot.
const T0: UnixMs = BOOT_MS + 100_000;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// One process of a tree.
#[derive(Clone, Copy)]
struct Proc {
    pid: u32,
    comm: &'static str,
    state: char,
    ppid: u32,
    uid: u32,
    cgroup: &'static str,
    /// utime; stime is written as 0.
    utime: u64,
    /// Start, in clock ticks (100 a second) since boot.
    start: u64,
}

fn stat_line(p: &Proc, threads: usize) -> String {
    let Proc { pid, comm, state, ppid, utime, start, .. } = *p;
    format!(
        "{pid} ({comm}) {state} {ppid} {pid} {pid} 0 -1 4194304 100 0 0 0 {utime} 0 0 0 20 0 {threads} 0 {start} \
         123456789 1000 18446744073709551615 1 1 0 0 0 0 0 16781312 1266 0 0 0 17 0 0 0 0 0 0\n"
    )
}

/// Writes a process's `stat`, `status` and `cgroup`, and a `task/TID/stat` for each of `threads` (TID and state).
fn add(dir: &Path, p: Proc, threads: &[(u32, char)]) {
    let n = threads.len().max(1);
    write(dir, &format!("proc/{}/stat", p.pid), &stat_line(&p, n));
    let uid = p.uid;
    write(dir, &format!("proc/{}/status", p.pid), &format!("Name:\t{}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n", p.comm));
    write(dir, &format!("proc/{}/cgroup", p.pid), &format!("0::{}\n", p.cgroup));
    for &(tid, state) in threads {
        let thread = Proc { pid: tid, state, ..p };
        write(dir, &format!("proc/{}/task/{tid}/stat", p.pid), &stat_line(&thread, n));
    }
}

const SESSION: &str = "/user.slice/user-1001.slice/session-4.scope";
const SLURM: &str = "/system.slice/slurmstepd.scope/job_812";

/// The tree at the baseline: a GPU job (launcher 50 under sshd 40, GPU process 100, its worker 101 and the worker's
/// child 102, a relative 45 the process sampler named), gpusight (400), and the others.
fn baseline_tree(dir: &Path) -> Vec<Proc> {
    let p =
        |pid, comm, state, ppid, uid, cgroup, utime| Proc { pid, comm, state, ppid, uid, cgroup, utime, start: 1_000 };
    let procs = vec![
        p(1, "systemd", 'S', 0, 0, "/init.scope", 1_000),
        p(40, "sshd", 'S', 1, 0, "/system.slice/ssh.service", 100),
        p(45, "tmux: server", 'S', 1, 1000, "/user.slice", 100),
        p(50, "torchrun", 'S', 40, 1000, "/job", 100),
        p(100, "pt_main_thread", 'R', 50, 1000, "/job", 5_000),
        p(101, "pt_data_worker", 'R', 100, 1000, "/job", 2_000),
        p(102, "ffmpeg", 'R', 101, 1000, "/job", 100),
        p(200, "make", 'S', 1, 1001, SESSION, 100),
        p(201, "cc1", 'R', 200, 1001, SESSION, 100),
        p(300, "python3", 'R', 1, 1002, SLURM, 10_000),
        p(400, "gpusight", 'R', 1, 0, "/user.slice", 300),
        p(500, "kworker/3:1", 'R', 2, 0, "/", 700),
        p(800, "backup", 'S', 1, 1002, "/system.slice/cron.service", 10),
    ];
    for proc in &procs {
        add(dir, *proc, &[]);
    }
    write(
        dir,
        "etc/passwd",
        "root:x:0:0::/root:/bin/sh\nalice:x:1001:1001::/home/alice:/bin/sh\nbob:x:1002:1002::/:/bin/sh\n",
    );
    std::os::unix::fs::symlink("400", dir.join("proc/self")).expect("self link");
    procs
}

/// 5 s later: every process used CPU, a process started since (600), and one that was there all along but missing
/// from the baseline (700).
fn five_seconds_later(dir: &Path, procs: &[Proc]) {
    let extra = |pid: u32| match pid {
        1 => 5,
        40 | 45 | 50 => 10,
        100 => 900,
        101 => 400,
        102 => 300,
        200 => 250,
        201 => 400,
        300 => 1_000,
        400 => 500,
        500 => 50,
        800 => 2,
        _ => 0,
    };
    for p in procs {
        let now = Proc { utime: p.utime + extra(p.pid), ..*p };
        if p.pid == 300 {
            add(dir, now, &[(300, 'R'), (301, 'R'), (302, 'S')]);
        } else {
            add(dir, now, &[]);
        }
    }
    let new = Proc {
        pid: 600,
        comm: "rsync",
        state: 'R',
        ppid: 1,
        uid: 1001,
        cgroup: "/user.slice/user-1001.slice/session-9.scope",
        utime: 100,
        start: 10_200,
    };
    add(dir, new, &[]);
    let old = Proc { pid: 700, comm: "sleeper", state: 'S', utime: 90_000, start: 5_000, ..new };
    add(dir, old, &[]);
}

fn clock(now_ms: UnixMs) -> ScanClock {
    ScanClock { now_ms, ticks_per_s: 100, boot_time_ms: Some(BOOT_MS) }
}

const GPU: &[u32] = &[100];
const RELATIVES: &[u32] = &[45, 50, 100, 101];

#[test]
fn a_scan_names_who_else_uses_the_cpus() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let root = HostRoot::under(d);
    let procs = baseline_tree(d);
    let mut others = OthersSampler::new(&root);
    assert_eq!(others.own_pid, Some(400));
    assert_eq!(others.sample(&root, clock(T0), true, GPU, RELATIVES), None, "the first scan sets the baseline");
    assert_eq!(others.sample(&root, clock(T0 + 1_000), true, GPU, RELATIVES), None, "not due for 5 s");

    five_seconds_later(d, &procs);
    let found = others.sample(&root, clock(T0 + 5_000), true, GPU, RELATIVES).expect("figures");
    assert_eq!(found.span_ms, 5_000);
    // 300 + 250 + 400 + 100 (600, new) + 50 + 5 + 2 ticks = 18.07 s of CPU in 5 s; the job (100, 101, 102, 50, 40
    // and the relative 45), gpusight (400) and the process missing from the baseline (700) are left out.
    assert!((found.cpu_pct - 361.4).abs() < 0.01, "{found:?}");
    // cc1 (201), two of python3's threads, rsync (600) and the kworker are runnable; gpusight and the job are not
    // counted.
    assert_eq!(found.runnable, 5);
    // Each group as "user cgroup pid command processes cpu%".
    let top: Vec<String> = found
        .top
        .iter()
        .map(|c| {
            let user = c.user.as_deref().unwrap_or("?");
            format!("{user} {} {} {} {} {:.1}", c.cgroup, c.pid, c.command, c.processes, c.cpu_pct)
        })
        .collect();
    assert_eq!(
        top,
        vec![
            format!("bob {SLURM} 300 python3 1 200.0"),
            format!("alice {SESSION} 201 cc1 2 130.0"),
            "alice /user.slice/user-1001.slice/session-9.scope 600 rsync 1 20.0".to_owned(),
            "root / 500 kworker/3:1 1 10.0".to_owned(),
            "root /init.scope 1 systemd 1 1.0".to_owned(),
        ],
        "the sixth group (backup, 0.4 %) is left out"
    );
    assert_eq!(found.top[0].uid, Some(1002));

    // Carried while the CPUs stay contended, dropped on a quiet tick.
    assert_eq!(others.sample(&root, clock(T0 + 6_000), true, GPU, RELATIVES).as_ref(), Some(&found));
    assert_eq!(others.sample(&root, clock(T0 + 7_000), false, GPU, RELATIVES), None);
    assert_eq!(others.sample(&root, clock(T0 + 8_000), true, GPU, RELATIVES), None, "not due, nothing carried");
    // A short quiet spell keeps the baseline: the scan 5 s after the last one has figures (nothing moved).
    let again = others.sample(&root, clock(T0 + 10_000), true, GPU, RELATIVES).expect("figures");
    assert_eq!((again.cpu_pct, again.top.len()), (0.0, 0));
    // A long one does not: the first scan after it only sets the baseline.
    assert_eq!(others.sample(&root, clock(T0 + 30_000), true, GPU, RELATIVES), None);
    assert!(others.sample(&root, clock(T0 + 35_000), true, GPU, RELATIVES).is_some());
}

#[test]
fn without_the_boot_time_a_process_missing_from_the_baseline_counts_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let root = HostRoot::under(d);
    let procs = baseline_tree(d);
    let mut others = OthersSampler::new(&root);
    let clock = |now_ms| ScanClock { boot_time_ms: None, ..clock(now_ms) };
    others.sample(&root, clock(T0), true, GPU, RELATIVES);
    five_seconds_later(d, &procs);
    let found = others.sample(&root, clock(T0 + 5_000), true, GPU, RELATIVES).expect("figures");
    assert_eq!(found.top[0].command, "sleeper", "900 s of CPU in a 5 s span: {found:?}");
}

#[test]
fn no_proc_no_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = HostRoot::under(dir.path());
    let mut others = OthersSampler::new(&root);
    assert_eq!(others.own_pid, None);
    assert_eq!(others.sample(&root, clock(T0), true, &[], &[]), None);
    let found = others.sample(&root, clock(T0 + 5_000), true, &[], &[]).expect("an empty scan has figures");
    assert_eq!((found.cpu_pct, found.runnable, found.top.len()), (0.0, 0, 0));
}

#[test]
fn the_job_is_the_gpu_processes_their_ancestors_and_descendants() {
    let stat = |pid, ppid| Seen {
        stat: PidStat { pid, ppid, comm: String::new(), state: 'S', ..PidStat::default() },
        cpu_ticks: 0,
    };
    // 1 ← 10 ← 20 (GPU) ← 30 ← 40; 20 ← 31; 1 ← 50 (a sibling tree) ← 60; 2 ← 70 (a kernel thread).
    let seen = [stat(1, 0), stat(10, 1), stat(20, 10), stat(30, 20), stat(40, 30), stat(31, 20), stat(50, 1)];
    let seen: Vec<Seen> = seen.into_iter().chain([stat(60, 50), stat(70, 2)]).collect();
    let pids = |idx: Vec<usize>| idx.into_iter().map(|i| seen[i].stat.pid).collect::<Vec<u32>>();
    assert_eq!(pids(outside_jobs(&seen, &[20], &[], None)), vec![1, 50, 60, 70], "PID 1 is never the job's");
    assert_eq!(pids(outside_jobs(&seen, &[20], &[60], Some(70))), vec![1, 50]);
    assert_eq!(pids(outside_jobs(&seen, &[], &[], None)).len(), seen.len());
    // A GPU process that left still leaves its descendants out (they were reparented: nothing to follow).
    assert_eq!(pids(outside_jobs(&seen, &[99], &[], None)).len(), seen.len());
}

#[test]
fn contention_is_a_busy_half_or_cpu_pressure() {
    let tick = |busy: Option<f32>, psi: Option<f32>| HostTick {
        cpu: busy.map(|busy_pct| CpuBreakdown { busy_pct, ..CpuBreakdown::default() }),
        psi: Some(Psi { cpu_some_avg10: psi, ..Psi::default() }),
        ..HostTick::default()
    };
    assert!(!contended(&HostTick::default()), "nothing read, nothing contended");
    assert!(!contended(&tick(Some(49.9), Some(4.9))));
    assert!(contended(&tick(Some(50.0), None)));
    assert!(contended(&tick(None, Some(5.0))), "the first tick has PSI but no busy share");
    assert!(contended(&tick(Some(10.0), Some(12.0))), "crowded onto a few CPUs of an idle host");
}

#[test]
fn the_unified_line_names_the_cgroup() {
    assert_eq!(unified_cgroup("0::/user.slice/user-1001.slice/session-4.scope\n"), Some(SESSION));
    let hybrid = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/system.slice/docker-abc.scope\n";
    assert_eq!(unified_cgroup(hybrid), Some("/system.slice/docker-abc.scope"));
    assert_eq!(
        unified_cgroup("12:memory:/slurm/uid_1/job_7\n4:cpu,cpuacct:/slurm/uid_1/job_7\n"),
        Some("/slurm/uid_1/job_7")
    );
    assert_eq!(unified_cgroup("garbage\n"), None);
}

#[test]
fn shares_of_a_core() {
    assert!((share_of_core(250, 100, 5_000) - 50.0).abs() < 1e-4);
    assert!((share_of_core(1_000, 100, 2_000) - 500.0).abs() < 1e-4);
    assert!((share_of_core(0, 100, 5_000)).abs() < 1e-6);
}
