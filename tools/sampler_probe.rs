//! What the host sampler costs against a live process: `sampler_probe PID [TICKS]` samples the host with PID as the
//! GPU process TICKS times (default 200), the clock moving 1 s a tick as at `--interval 1`, and prints the CPU of
//! this thread per tick. Run it under `perf record -g` to see where a tick goes.
#![allow(clippy::expect_used, reason = "a diagnostic tool: a failed call should stop it loudly")]

use gpusight::host::{HostRoot, HostSampler};

fn thread_cpu_us() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0) / 1000
}

fn main() {
    let mut args = std::env::args().skip(1);
    let pid: u32 = args.next().and_then(|a| a.parse().ok()).expect("usage: sampler_probe PID [TICKS]");
    let ticks: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let mut sampler = HostSampler::new(HostRoot::default());
    let mut now_ms = 1_000_000;
    let mut last = Vec::new();
    let start = thread_cpu_us();
    for _ in 0..ticks {
        now_ms += 1000;
        last = sampler.sample(now_ms, &[pid]).1;
    }
    let per_tick = (thread_cpu_us() - start) / ticks.max(1);
    println!("{ticks} ticks against PID {pid} ({} rows): {per_tick} us of CPU a tick", last.len());
    for p in &last {
        let tcp = p.remote_files.as_ref().map(|r| r.tcp_connections);
        println!("  {:>7} {:?} threads {:?} tcp {tcp:?} {}", p.pid, p.role, p.n_threads, p.name);
    }
}
