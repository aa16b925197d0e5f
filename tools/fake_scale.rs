//! The real NVML code path (`source::nvml::NvmlGpus`: workers, GPM thread, Xid watch) at scale on the fake NVML
//! with zero call times: CPU time per tick per GPU over TICKS reads of a scenario with GPUS GPUs and PROCS processes
//! each (the fake's generated `scale:GPUSxPROCS` scenario), and the resident memory after them.
//!
//! ```sh
//! cargo build --release -p gpusight-fake-nvml
//! GPUSIGHT_NVML_LIB=target/release/libgpusight_fake_nvml.so GPUSIGHT_FAKE_NVML=scale:8x1000 \
//!   cargo run --release --example fake_scale -- 900
//! ```

use std::error::Error;
use std::time::{Duration, Instant};

use gpusight::source::nvml::{NvmlGpus, NvmlOptions};

/// utime + stime of this process in clock ticks, and its resident set in pages (from /proc/self/stat and statm).
fn cpu_ticks_and_rss_pages() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_comm = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // After the command: state is field 3 of stat(5), so utime (14) and stime (15) are at 11 and 12 here.
    let cpu = field(11) + field(12);
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let rss = statm.split_whitespace().nth(1).and_then(|f| f.parse().ok()).unwrap_or(0);
    (cpu, rss)
}

fn main() -> Result<(), Box<dyn Error>> {
    let ticks: u32 = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(600).max(1);
    let scenario = std::env::var("GPUSIGHT_FAKE_NVML").unwrap_or_default();
    if std::env::var_os("GPUSIGHT_NVML_LIB").is_none() || !scenario.starts_with("scale:") {
        eprintln!("set GPUSIGHT_NVML_LIB to the fake NVML and GPUSIGHT_FAKE_NVML=scale:GPUSxPROCS (e.g. scale:8x1000)");
        return Ok(());
    }
    let options = NvmlOptions { deadline: Duration::from_secs(5), ..NvmlOptions::default() };
    let mut nvml = NvmlGpus::open_with(options)?;
    let gpus = u32::try_from(nvml.gpus().len()).unwrap_or(1).max(1);
    let start_ms = 1_800_000_000_000_u64;
    // Warm up: the first reads start the tiers, GPM and the process lists.
    for i in 0..5 {
        let _ = nvml.read(start_ms + i * 1000);
    }
    let (cpu0, _) = cpu_ticks_and_rss_pages();
    let wall = Instant::now();
    let mut processes = 0;
    for i in 0..u64::from(ticks) {
        processes = nvml.read(start_ms + (i + 5) * 1000).gpu_processes.len();
    }
    let elapsed = wall.elapsed();
    let (cpu1, rss_pages) = cpu_ticks_and_rss_pages();
    let cpu_s = cpu1.saturating_sub(cpu0) as f64 / 100.0;
    let per_tick_gpu_us = cpu_s * 1e6 / f64::from(ticks) / f64::from(gpus);
    println!(
        "{scenario}: {gpus} GPUs, {processes} GPU processes, {ticks} ticks ({ticks} s of sample time) in {:.2} s wall; \
         CPU {cpu_s:.2} s = {per_tick_gpu_us:.0} us per tick per GPU; RSS {} MiB",
        elapsed.as_secs_f64(),
        rss_pages * 4096 / (1 << 20)
    );
    Ok(())
}
