//! Benchmarks for the budgets in product.md: sample ingest into the history, advice over a full history, a whole
//! pipeline step (ingest plus advice), and serialization (JSON, the `--once` table, Prometheus text). Run with `cargo bench --bench pipeline`; figures go to docs/performance.md.

#![allow(clippy::expect_used, reason = "a benchmark with a broken fixture should stop loudly")]

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use gpusight::advice::{Advisor, Thresholds};
use gpusight::history::History;
use gpusight::pipeline::Pipeline;
use gpusight::sample::{GpuProcess, Snapshot, Tick};
use gpusight::source::Source;
use gpusight::source::synthetic::{SyntheticSource, SyntheticSpec};

fn source(spec: &str) -> SyntheticSource {
    SyntheticSource::new(SyntheticSpec::parse(spec).expect("valid spec"))
}

/// A history of `n` ticks of `spec`, and the next snapshot to push.
fn filled(spec: &str, n: u64, capacity: usize) -> (History, Snapshot) {
    let source = source(spec);
    let machine = source.machine();
    let mut history = History::new(machine.clone(), capacity);
    for i in 0..n {
        history.push_tick(source.tick_at(i));
    }
    (history, Snapshot { machine, tick: source.tick_at(n) })
}

fn ingest(c: &mut Criterion) {
    let mut group = c.benchmark_group("ingest");
    for spec in ["compute:1x10", "compute:1x1000", "mixed:8x10", "scale:8x1000"] {
        let (history, next) = filled(spec, 900, 900);
        group.bench_with_input(BenchmarkId::from_parameter(spec), &next, |b, next| {
            let mut history = history.clone();
            // Each push one interval later than the last, as live ticks are: a tick at the same time again would
            // be skipped by the per-process bound and measure nothing.
            let mut next = next.clone();
            b.iter(|| {
                next.tick.at_ms += 1000;
                history.push(black_box(&next));
            });
        });
    }
    group.finish();
}

fn advice(c: &mut Criterion) {
    let mut group = c.benchmark_group("advice");
    for spec in ["mixed:8", "scale:8x1000"] {
        let (history, _) = filled(spec, 900, 900);
        let thresholds = Thresholds::default();
        group.bench_function(BenchmarkId::new("evaluate_full_history", spec), |b| {
            let mut advisor = Advisor::default();
            b.iter(|| black_box(advisor.update(&history, &thresholds).len()));
        });
    }
    group.finish();
}

/// One step of the monitor's consumer side: a new snapshot into a full history, then the advice engine. This is
/// the per-tick work the 5 ms budget at 8 GPUs × 1,000 processes covers, less the frame.
fn step(c: &mut Criterion) {
    let mut group = c.benchmark_group("step");
    for spec in ["compute:1x10", "mixed:8", "scale:8x1000"] {
        let source = source(spec);
        let machine = source.machine();
        let mut pipeline =
            Pipeline::new(&Snapshot { machine: machine.clone(), tick: source.tick_at(0) }, 900, Thresholds::default());
        for i in 1..900 {
            pipeline.history.push_tick(source.tick_at(i));
        }
        let mut n = 900;
        group.bench_function(BenchmarkId::new("ingest_and_advice", spec), |b| {
            b.iter_batched(
                || {
                    n += 1;
                    Snapshot { machine: machine.clone(), tick: source.tick_at(n) }
                },
                |snapshot| {
                    pipeline.ingest(&snapshot);
                    snapshot
                },
                BatchSize::SmallInput,
            );
        });
        // The same with the snapshot handed over, as the monitor's feed can (no copy of the tick). Both variants
        // drop the tick they replace inside the timed part.
        group.bench_function(BenchmarkId::new("ingest_owned_and_advice", spec), |b| {
            b.iter_batched(
                || {
                    n += 1;
                    Snapshot { machine: machine.clone(), tick: source.tick_at(n) }
                },
                |snapshot| pipeline.ingest_owned(snapshot),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn serialize(c: &mut Criterion) {
    let mut group = c.benchmark_group("serialize");
    for spec in ["compute:1", "scale:8x1000"] {
        let mut source = source(spec);
        let first = source.next_snapshot().expect("tick").expect("some");
        let pipeline = Pipeline::new(&first, 60, Thresholds::default());
        group.bench_function(BenchmarkId::new("json", spec), |b| {
            b.iter(|| black_box(gpusight::output::json::render(&pipeline).len()));
        });
        group.bench_function(BenchmarkId::new("once_table", spec), |b| {
            b.iter(|| {
                black_box(
                    gpusight::output::table::render(&pipeline, &gpusight::output::table::TableOptions::default()).len(),
                )
            });
        });
        let xids = gpusight::export::metrics::XidMemory::default();
        let (machine, tick) = (pipeline.history.machine(), pipeline.history.latest());
        group.bench_function(BenchmarkId::new("prometheus", spec), |b| {
            b.iter(|| {
                let text = gpusight::export::metrics::render(machine, tick, pipeline.findings(), "bench", &xids)
                    .expect("render");
                black_box(text.len())
            });
        });
    }
    group.finish();
}

/// `tick` with each GPU process listed on every GPU of the machine, as the fake NVML's `scale:` scenario lists them
/// (8 GPUs × 1,000 processes: 8,000 entries a tick, 1,000 PIDs, each process judged on 8 GPUs).
fn on_every_gpu(mut tick: Tick) -> Tick {
    let mut gpus: Vec<u32> = tick.gpus.iter().map(|g| g.index).collect();
    gpus.sort_unstable();
    let procs = std::mem::take(&mut tick.gpu_processes);
    tick.gpu_processes =
        gpus.iter().flat_map(|&gpu_index| procs.iter().map(move |p| GpuProcess { gpu_index, ..p.clone() })).collect();
    tick
}

/// History and advice at 8 GPUs × 1,000 processes, each process on every GPU (the fake NVML's shape, heavier than
/// `scale:8x1000`'s 125 a GPU): a tick pushed into a full history, the advice over it, and both as one step. The
/// 5 ms budget covers the step plus the frame.
fn every_gpu(c: &mut Criterion) {
    let spec = "scale:8x1000";
    let mut group = c.benchmark_group("every_gpu");
    let source = source(spec);
    let machine = source.machine();
    let tick = |n: u64| on_every_gpu(source.tick_at(n));
    let mut pipeline = Pipeline::new(&Snapshot { machine: machine.clone(), tick: tick(0) }, 900, Thresholds::default());
    for i in 1..900 {
        pipeline.history.push_tick(tick(i));
    }
    let thresholds = Thresholds::default();
    group.bench_function(BenchmarkId::new("advice", spec), |b| {
        let mut advisor = Advisor::default();
        b.iter(|| black_box(advisor.update(&pipeline.history, &thresholds).len()));
    });
    let mut n = 900;
    let mut history = pipeline.history.clone();
    group.bench_function(BenchmarkId::new("history_push_owned", spec), |b| {
        b.iter_batched(
            || {
                n += 1;
                Snapshot { machine: machine.clone(), tick: tick(n) }
            },
            |snapshot| history.push_owned(snapshot),
            BatchSize::SmallInput,
        );
    });
    group.bench_function(BenchmarkId::new("ingest_owned_and_advice", spec), |b| {
        b.iter_batched(
            || {
                n += 1;
                Snapshot { machine: machine.clone(), tick: tick(n) }
            },
            |snapshot| pipeline.ingest_owned(snapshot),
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group!(benches, ingest, advice, step, serialize, every_gpu);
criterion_main!(benches);
