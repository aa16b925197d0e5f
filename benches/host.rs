//! Benchmarks of the host sampler over the fixture /proc tree in `tests/fixtures/proc/tree`: one tick of the
//! host-wide readings plus the GPU processes and their relatives, the work the sampler thread does each tick
//! besides NVML. Run with `cargo bench --bench host`; figures go to docs/performance.md.
//!
//! The tree is read in place (the sampler only reads), so every iteration after the first has previous
//! counters and computes rates, as a running monitor does.

#![allow(clippy::expect_used, reason = "a benchmark with a broken fixture should stop loudly")]

use std::hint::black_box;
use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
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

criterion_group!(benches, host);
criterion_main!(benches);
