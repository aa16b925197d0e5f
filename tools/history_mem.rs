//! The memory the consumer side keeps once the history is full (not a test: run by hand, see below).
//!
//! Feeds a synthetic machine's ticks into a [`Pipeline`] (history plus advice, as the monitor and `export` do) as
//! fast as it can, in the source's virtual time, so a 15-minute history at 0.1 s fills in a minute or two of wall
//! time. At every report it prints the process's resident memory split as `/proc/self/status` gives it (`RssAnon`
//! is gpusight's own share; no NVML here, so there is no driver share) and the history's own heap bytes, machine
//! rings and per-process rings apart.
//!
//! ```text
//! cargo run --release --example history_mem -- [SPEC] [INTERVAL_MS] [HISTORY_S] [REPORTS]
//! cargo run --release --example history_mem -- scale:8x1000 100 900 6
//! ```
//!
//! `HISTORY_S` is `[general] history_s` (900 by default), so the history holds `HISTORY_S * 1000 / INTERVAL_MS`
//! samples, as `run.rs` sizes it; the run takes that many ticks plus 10 %, and reports `REPORTS` times along the
//! way.

use std::time::Instant;

use gpusight::advice::Thresholds;
use gpusight::pipeline::Pipeline;
use gpusight::source::Source;
use gpusight::source::synthetic::{SyntheticSource, SyntheticSpec};

/// A `kB` field of `/proc/self/status`, in bytes.
fn status_kb(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "N/A".to_owned(), |b| format!("{:.1}", b as f64 / 1024.0 / 1024.0))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_owned());
    let spec_text = arg(0, "scale:8x1000");
    let interval_ms: u64 = arg(1, "100").parse()?;
    let history_s: u64 = arg(2, "900").parse()?;
    let reports: u64 = arg(3, "6").parse::<u64>()?.max(1);
    let capacity = usize::try_from(history_s * 1000 / interval_ms.max(1))?.clamp(60, 100_000);
    let ticks = capacity as u64 * 11 / 10;

    let mut spec = SyntheticSpec::parse(&spec_text)?;
    spec.interval_ms = interval_ms.max(1);
    let mut source = SyntheticSource::new(spec);
    let first = source.next_snapshot()?.ok_or("the synthetic source gave no first tick")?;
    let mut pipeline = Pipeline::new(&first, capacity, Thresholds::default());
    println!("history_mem: {spec_text} at {interval_ms} ms, history {history_s} s = {capacity} samples, {ticks} ticks");
    println!(
        "{:>8} {:>9} {:>8} {:>9} {:>11} {:>13} {:>10} {:>7}",
        "tick", "virtual_s", "rss_MiB", "anon_MiB", "history_MiB", "processes_MiB", "processes", "wall_s"
    );
    let start = Instant::now();
    let report = |n: u64, pipeline: &Pipeline| {
        let history = &pipeline.history;
        let (all, procs) = (history.heap_bytes() as u64, history.process_heap_bytes() as u64);
        let virtual_s = (n * interval_ms) as f64 / 1000.0;
        println!(
            "{n:>8} {virtual_s:>9.0} {:>8} {:>9} {:>11} {:>13} {:>10} {:>7.1}",
            mib(status_kb("VmRSS:")),
            mib(status_kb("RssAnon:")),
            mib(Some(all)),
            mib(Some(procs)),
            history.processes.len(),
            start.elapsed().as_secs_f64()
        );
    };
    report(1, &pipeline);
    let every = (ticks / reports).max(1);
    for n in 2..=ticks {
        let snapshot = source.next_snapshot()?.ok_or("the synthetic source ended")?;
        pipeline.ingest_owned(snapshot);
        if n % every == 0 || n == ticks {
            report(n, &pipeline);
        }
    }
    println!("peak: VmHWM {} MiB", mib(status_kb("VmHWM:")));
    Ok(())
}
