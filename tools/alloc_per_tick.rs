//! Heap allocations per tick on the hot path (not a test: run by hand, see below).
//!
//! A counting global allocator around the system one; for each stage of a steady-state tick (the history full),
//! the mean number of allocations (calls to `alloc` and `realloc`) and bytes asked for, over `TICKS` ticks:
//! history ingest, the advice engine, the whole pipeline step, the host sampler over the fixture `/proc` tree.
//!
//! ```text
//! cargo run --release --example alloc_per_tick -- [TICKS]
//! ```

#![allow(unsafe_code, reason = "a `GlobalAlloc` must be implemented with unsafe fns")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use gpusight::advice::{Advisor, Thresholds};
use gpusight::host::{HostRoot, HostSampler};
use gpusight::pipeline::Pipeline;
use gpusight::sample::Snapshot;
use gpusight::source::Source;
use gpusight::source::synthetic::{SyntheticSource, SyntheticSpec};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` has too.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: as for `alloc`; `ptr` came from `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns (allocations, bytes) it made.
fn counted(f: impl FnOnce()) -> (u64, u64) {
    let (a, b) = (ALLOCS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
    f();
    (ALLOCS.load(Ordering::Relaxed) - a, BYTES.load(Ordering::Relaxed) - b)
}

fn line(stage: &str, ticks: u64, (allocs, bytes): (u64, u64)) {
    let (a, b) = (allocs as f64 / ticks as f64, bytes as f64 / ticks as f64 / 1024.0);
    println!("{stage:<44} {a:>12.1} {b:>12.1}");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ticks: u64 = std::env::args().nth(1).map_or(Ok(200), |a| a.parse())?;
    println!("{:<44} {:>12} {:>12}", "stage (mean per tick)", "allocations", "KiB asked");
    for (spec, interval_ms) in [("mixed:8", 1000), ("scale:8x1000", 1000), ("scale:8x1000", 100), ("churn:8", 100)] {
        let mut parsed = SyntheticSpec::parse(spec)?;
        parsed.interval_ms = interval_ms;
        let source = SyntheticSource::new(parsed);
        let machine = source.machine();
        let snapshot = |n| Snapshot { machine: machine.clone(), tick: source.tick_at(n) };
        // Fill a 900-sample history first, so rings are at their capacity, as in a long run.
        let warm: u64 = if interval_ms < 1000 { 4000 } else { 1300 };
        let mut pipeline = Pipeline::new(&snapshot(0), 900, Thresholds::default());
        for n in 1..warm {
            pipeline.ingest_owned(snapshot(n));
        }
        let label = |stage: &str| format!("{stage} {spec} @{interval_ms}ms");
        let mut history = pipeline.history.clone();
        let snapshots: Vec<Snapshot> = (warm..warm + ticks).map(snapshot).collect();
        line(
            &label("history.push_owned"),
            ticks,
            counted(|| snapshots.into_iter().for_each(|s| history.push_owned(s))),
        );
        let mut advisor = Advisor::default();
        let thresholds = Thresholds::default();
        advisor.update(&history, &thresholds);
        line(
            &label("advisor.update"),
            ticks,
            counted(|| {
                for _ in 0..ticks {
                    advisor.update(&history, &thresholds);
                }
            }),
        );
        let snapshots: Vec<Snapshot> = (warm..warm + ticks).map(snapshot).collect();
        line(
            &label("pipeline.ingest_owned"),
            ticks,
            counted(|| snapshots.into_iter().for_each(|s| pipeline.ingest_owned(s))),
        );
    }
    let root = HostRoot::under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/tree"));
    let mut sampler = HostSampler::new(root).with_ticks_per_second(100);
    let mut now_ms = 1_000_000;
    for pids in [&[][..], &[1200][..], &[1200, 2000][..]] {
        for _ in 0..3 {
            now_ms += 1000;
            let _ = sampler.sample(now_ms, pids);
        }
        line(
            &format!("host.sample fixture, GPU pids {pids:?}"),
            ticks,
            counted(|| {
                for _ in 0..ticks {
                    now_ms += 1000;
                    std::hint::black_box(sampler.sample(now_ms, pids));
                }
            }),
        );
    }
    Ok(())
}
