//! Benchmarks of the host sampler over the fixture /proc tree in `tests/fixtures/proc/tree`: one tick of the
//! host-wide readings plus the GPU processes and their relatives, the work the sampler thread does each tick
//! besides NVML; the network counters alone; and a scan of the other processes over generated trees of 1,000
//! processes and over the live /proc. Run with `cargo bench --bench host`; figures go to docs/performance.md.
//!
//! The tree is read in place (the sampler only reads), so every iteration after the first has previous
//! counters and computes rates, as a running monitor does.

#![allow(clippy::expect_used, reason = "a benchmark with a broken fixture should stop loudly")]

use std::hint::black_box;
use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gpusight::host::net::NetSampler;
use gpusight::host::others::{OthersSampler, ScanClock};
use gpusight::host::{HostRoot, HostSampler};

/// The fixture tree: a session with a launcher, a GPU process (1200) with DataLoader workers, a second GPU
/// process (2000) in a container, and unrelated processes the sampler must not read.
fn root() -> HostRoot {
    HostRoot::under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/tree"))
}

fn host(c: &mut Criterion) {
    let mut group = c.benchmark_group("host");
    let cases: [(&str, &[u32]); 3] =
        [("machine_only", &[]), ("one_gpu_process", &[1200]), ("two_gpu_processes", &[1200, 2000])];
    for (name, gpu_pids) in cases {
        group.bench_function(BenchmarkId::new("sample", name), |b| {
            let mut sampler = HostSampler::new(root()).with_ticks_per_second(100);
            let mut now_ms = 1_000_000;
            b.iter(|| {
                now_ms += 1000;
                let (tick, processes) = sampler.sample(now_ms, black_box(gpu_pids));
                black_box((tick.mem_total_bytes, processes.len()))
            });
        });
    }
    // The live /proc with this process as the GPU process and 48 parked threads beside the main one: a PyTorch
    // process on a 32-vCPU host has about that many (intra-op pool, CUDA and NCCL threads), and the thread walk is
    // what grows with them. The loop's clock moves 1 s a tick, as the monitor's does at its default interval.
    let (park, parked) = std::sync::mpsc::channel::<()>();
    let parked = std::sync::Arc::new(std::sync::Mutex::new(parked));
    let threads: Vec<_> = (0..48)
        .map(|_| {
            let parked = std::sync::Arc::clone(&parked);
            std::thread::spawn(move || {
                let _ = parked.lock().map(|rx| rx.recv());
            })
        })
        .collect();
    // This process as the GPU process on the live /proc, the clock moving 1 s a tick.
    let live_self = |b: &mut criterion::Bencher<'_>| {
        let mut sampler = HostSampler::new(HostRoot::default());
        let own = [std::process::id()];
        let mut now_ms = 1_000_000;
        b.iter(|| {
            now_ms += 1000;
            let (tick, processes) = sampler.sample(now_ms, black_box(&own));
            black_box((tick.mem_total_bytes, processes.len()))
        });
    };
    group.bench_function(BenchmarkId::new("sample", "live_process_49_threads"), live_self);
    // The same process holding TCP connections, as a torchrun rank does (its store and NCCL bootstrap sockets): a
    // listener and four connections to it, eight connected sockets in all.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen on loopback");
    let addr = listener.local_addr().expect("listener address");
    let sockets: Vec<_> = (0..4)
        .filter_map(|_| {
            let out = std::net::TcpStream::connect(addr).ok()?;
            let (inbound, _) = listener.accept().ok()?;
            Some((out, inbound))
        })
        .collect();
    group.bench_function(BenchmarkId::new("sample", "live_process_49_threads_9_tcp_sockets"), live_self);
    drop(sockets);
    drop(listener);
    drop(park);
    drop(threads);
    group.bench_function("machine_info", |b| {
        let sampler = HostSampler::new(root()).with_ticks_per_second(100);
        b.iter(|| black_box(sampler.machine_info().n_cpus));
    });
    group.finish();
}

/// The network counters alone: the fixture tree (`/proc/net/dev` with three interfaces, one InfiniBand port) and
/// the live machine's, the clock moving 1 s a tick.
fn net(c: &mut Criterion) {
    let mut group = c.benchmark_group("host");
    for (name, root) in [("fixture", root()), ("live", HostRoot::default())] {
        group.bench_function(BenchmarkId::new("net", name), |b| {
            let mut sampler = NetSampler::new(&root);
            let mut now_ms = 1_000_000;
            b.iter(|| {
                now_ms += 1000;
                black_box(sampler.sample(now_ms).len())
            });
        });
    }
    group.finish();
}

/// How many processes the generated trees of [`others`] hold.
const OTHERS_PROCESSES: u32 = 1_000;

/// Writes a tree of [`OTHERS_PROCESSES`] processes under `dir`: users 1000 to 1009, each in a cgroup of its own, one
/// process in eight runnable, one in ten with four threads. `start` sets every process's start time, so two trees
/// with different starts look like all new processes to each other's scans.
fn write_processes(dir: &Path, start: u64) {
    for pid in 100..100 + OTHERS_PROCESSES {
        let uid = 1000 + pid % 10;
        let state = if pid.is_multiple_of(8) { 'R' } else { 'S' };
        let threads = if pid.is_multiple_of(10) { 4 } else { 1 };
        let stat = |id: u32| {
            format!(
                "{id} (worker-{pid}) {state} 1 {pid} {pid} 0 -1 4194304 100 0 0 0 {} 7 0 0 20 0 {threads} 0 {start} \
                 123456789 1000 18446744073709551615 1 1 0 0 0 0 0 16781312 1266 0 0 0 17 0 0 0 0 0 0\n",
                u64::from(pid) * 3
            )
        };
        let proc_dir = dir.join("proc").join(pid.to_string());
        std::fs::create_dir_all(&proc_dir).expect("process directory");
        std::fs::write(proc_dir.join("stat"), stat(pid)).expect("stat");
        std::fs::write(proc_dir.join("status"), format!("Name:\tworker\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"))
            .expect("status");
        std::fs::write(proc_dir.join("cgroup"), format!("0::/user.slice/user-{uid}.slice/session-1.scope\n"))
            .expect("cgroup");
        for tid in (0..threads).map(|t| pid * 100 + t) {
            let task = proc_dir.join("task").join(tid.to_string());
            std::fs::create_dir_all(&task).expect("task directory");
            std::fs::write(task.join("stat"), stat(tid)).expect("task stat");
        }
    }
}

/// A scan of the other processes (`host::others`) at every call: over two generated trees of
/// [`OTHERS_PROCESSES`] processes that alternate, so every scan finds every process busy and groups the busiest
/// (the most work a scan does), and over the live /proc. The clock moves 5 s a call, the scan period.
fn others(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let trees = [dir.path().join("a"), dir.path().join("b")];
    write_processes(&trees[0], 1_000);
    write_processes(&trees[1], 2_000);
    let roots = trees.map(|t| HostRoot::under(&t));
    let mut group = c.benchmark_group("host");
    group.bench_function(BenchmarkId::new("others_scan", "fixture_1000_processes"), |b| {
        let mut sampler = OthersSampler::new(&roots[0]);
        let mut n = 0u64;
        b.iter(|| {
            n += 1;
            let clock = ScanClock { now_ms: 1_000_000 + n * 5_000, ticks_per_s: 100, boot_time_ms: None };
            let root = &roots[usize::from(n.is_multiple_of(2))];
            black_box(sampler.sample(root, clock, true, &[], &[]).map(|o| o.top.len()))
        });
    });
    let live = HostRoot::default();
    let live_processes = std::fs::read_dir("/proc").map_or(0, |d| {
        d.flatten().filter(|e| e.file_name().to_str().is_some_and(|n| n.parse::<u32>().is_ok())).count()
    });
    eprintln!("host/others_scan/live: {live_processes} processes in /proc");
    group.bench_function(BenchmarkId::new("others_scan", "live"), |b| {
        let mut sampler = OthersSampler::new(&live);
        let mut now_ms = 1_000_000;
        b.iter(|| {
            now_ms += 5_000;
            let clock = ScanClock { now_ms, ticks_per_s: 100, boot_time_ms: None };
            black_box(sampler.sample(&live, clock, true, &[std::process::id()], &[]).map(|o| o.runnable))
        });
    });
    group.finish();
}

criterion_group!(benches, host, net, others);
criterion_main!(benches);
