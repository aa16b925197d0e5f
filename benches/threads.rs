//! What the thread evidence of the account costs: the host sampler over a job of 16 processes × 40 threads (two GPU
//! processes, each with seven DataLoader workers), a tick a second, with the thread times gathered and without them,
//! while the GPUs compute (the calm cadence) and while they wait (the urgent cadence: every main thread each second).
//! Each iteration is one minute of sampling, so its time over 60 s is the share of a core. Run with
//! `cargo bench --bench threads`; the figures go to docs/performance.md.
//!
//! The tree is generated under a temporary directory: every process has `stat`, `status`, `io`, `cmdline`, `wchan`,
//! `syscall` and its 40 threads `stat`, `schedstat`, `wchan` and `children`, as the live files are laid out.

#![allow(clippy::expect_used, reason = "a benchmark with a broken fixture should stop loudly")]

use std::hint::black_box;
use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gpusight::host::{HostRoot, HostSampler};

const THREADS: u32 = 40;
const GPU_PROCESSES: [u32; 2] = [5000, 6000];
const WORKERS: u32 = 7;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn stat(pid: u32, comm: &str, state: char, ppid: u32) -> String {
    format!(
        "{pid} ({comm}) {state} {ppid} {pid} 4000 34816 {pid} 4194304 100 0 0 0 1500 300 0 0 20 0 {THREADS} 0 6100 \
         123456789 1000 18446744073709551615 1 1 0 0 0 0 0 16781312 1266 0 0 0 17 0 0 0 0 0 0\n"
    )
}

/// One process of the job: its files and its threads'.
fn process(dir: &Path, pid: u32, ppid: u32, children: &[u32]) {
    let name = if children.is_empty() { "pt_data_worker" } else { "python" };
    write(dir, &format!("proc/{pid}/stat"), &stat(pid, name, 'S', ppid));
    write(
        dir,
        &format!("proc/{pid}/status"),
        &format!(
            "Name:\t{name}\nUid:\t1000\t1000\t1000\t1000\nVmRSS:\t2000000 kB\nThreads:\t{THREADS}\nCpus_allowed_list:\t0-31\nNSpid:\t{pid}\n"
        ),
    );
    write(dir, &format!("proc/{pid}/io"), "rchar: 0\nwchar: 0\nread_bytes: 1000\nwrite_bytes: 0\n");
    write(dir, &format!("proc/{pid}/cmdline"), "python\0train.py\0");
    write(dir, &format!("proc/{pid}/cgroup"), "0::/user.slice\n");
    write(dir, &format!("proc/{pid}/wchan"), "pipe_read");
    write(dir, &format!("proc/{pid}/syscall"), "0 0x9 0x7f 0x10000 0x0 0x0 0x0 0x7ffd 0x7f3b\n");
    for n in 0..THREADS {
        let tid = pid + n;
        let task = format!("proc/{pid}/task/{tid}");
        write(dir, &format!("{task}/stat"), &stat(tid, name, if n % 4 == 0 { 'R' } else { 'S' }, ppid));
        write(dir, &format!("{task}/schedstat"), "123456789000 2345678900 4567\n");
        write(dir, &format!("{task}/wchan"), if n == 0 { "pipe_read" } else { "futex_wait_queue" });
        let kids: Vec<String> = if n == 0 { children.iter().map(u32::to_string).collect() } else { Vec::new() };
        write(dir, &format!("{task}/children"), &format!("{} ", kids.join(" ")));
    }
}

/// The fixture tree's host files with the job added.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/tree");
    for file in ["proc/stat", "proc/meminfo", "proc/loadavg", "proc/vmstat", "proc/uptime", "etc/passwd"] {
        if let Ok(text) = std::fs::read_to_string(fixture.join(file)) {
            write(dir.path(), file, &text);
        }
    }
    for gpu in GPU_PROCESSES {
        let workers: Vec<u32> = (1..=WORKERS).map(|w| gpu + w * 100).collect();
        process(dir.path(), gpu, 1, &workers);
        for worker in workers {
            process(dir.path(), worker, gpu, &[]);
        }
    }
    dir
}

fn threads(c: &mut Criterion) {
    let dir = tree();
    let mut group = c.benchmark_group("thread_evidence");
    group.sample_size(10);
    for (name, urgent, gathered) in [
        ("computing_without", false, false),
        ("computing_with", false, true),
        ("waiting_without", true, false),
        ("waiting_with", true, true),
    ] {
        group.bench_function(BenchmarkId::new("one_minute_16x40", name), |b| {
            let mut sampler =
                HostSampler::new(HostRoot::under(dir.path())).with_ticks_per_second(100).with_thread_times(gathered);
            let urgent_pids: &[u32] = if urgent { &GPU_PROCESSES } else { &[] };
            let mut now_ms = 1_000_000;
            b.iter(|| {
                for _ in 0..60 {
                    now_ms += 1000;
                    let (_, processes) = sampler.sample_with(now_ms, black_box(&GPU_PROCESSES), urgent_pids);
                    black_box(processes.len());
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, threads);
criterion_main!(benches);
