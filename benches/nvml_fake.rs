//! One tick of the real NVML code path (`source::nvml::NvmlGpus::read`: the per-GPU workers, the GPM thread, the
//! Xid watch) on the fake NVML with every call timed at zero, so what is measured is gpusight's own cost: for a
//! GB200 NVL72 rack (`nvl72`, 72 GPUs), an HGX box with MIG (`hgx8-mig`) and 8 GPUs × 1,000 processes
//! (`scale:8x1000`). Each read is one second of sample time after the last, so the slower tiers (process lists,
//! GPM rounds, the 30 s tier) come around as they do live.
//!
//! Two groups: `nvml_read_cpu` measures the process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`: every thread, the
//! workers and the GPM thread included) and gives it per GPU as its throughput line; `nvml_read_wall` the wall time
//! of a read (the workers run in parallel).
//!
//! ```sh
//! cargo build --release --locked -p gpusight-fake-nvml
//! cargo bench --locked --bench nvml_fake -- --measurement-time 5
//! ```
//!
//! NVML is started once per process and the fake builds its machine then, so each scenario runs in a child
//! process of this bench (the same executable, the same arguments). Without the fake library (looked for beside
//! the bench in the target directory, or named by `GPUSIGHT_NVML_LIB`) the bench says how to build it and
//! measures nothing.

#![allow(clippy::expect_used, reason = "a benchmark with a broken fixture should stop loudly")]

#[path = "../tools/fake_env.rs"]
mod fake_env;

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkId, Criterion, Throughput};
use gpusight::source::OptionalReadings;
use gpusight::source::nvml::{NvmlGpus, NvmlOptions};

/// Set in a child: the scenario it measures (its name; `GPUSIGHT_FAKE_NVML` holds what the fake loads).
const CHILD: &str = "GPUSIGHT_BENCH_NVML_FAKE";

/// The CPU time of the whole process (all threads), in nanoseconds.
struct ProcessCpu;

fn process_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

impl Measurement for ProcessCpu {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        process_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        process_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

/// Nanoseconds of CPU shown as ns, µs or ms; the throughput line is the CPU time per element (per GPU).
struct CpuFormatter;

fn scale_ns(typical: f64, values: &mut [f64], units: [&'static str; 3]) -> &'static str {
    let (factor, unit) = if typical < 1e3 {
        (1.0, units[0])
    } else if typical < 1e6 {
        (1e-3, units[1])
    } else {
        (1e-6, units[2])
    };
    for v in values {
        *v *= factor;
    }
    unit
}

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        scale_ns(typical, values, ["ns CPU", "µs CPU", "ms CPU"])
    }
    fn scale_throughputs(&self, typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let per = match *throughput {
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => n.max(1) as f64,
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) | Throughput::Bits(n) => n.max(1) as f64,
        };
        for v in values.iter_mut() {
            *v /= per;
        }
        scale_ns(typical / per, values, ["ns CPU/GPU", "µs CPU/GPU", "ms CPU/GPU"])
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

/// Sample time of the first read (any fixed time: the tiers only look at differences).
const START_MS: u64 = 1_800_000_000_000;

/// Measures one scenario: NVML is already pointed at the fake and the scenario by the environment.
fn bench_one(name: &str) {
    let options =
        NvmlOptions { deadline: Duration::from_secs(5), optional: OptionalReadings::ALL, ..NvmlOptions::default() };
    let mut nvml = NvmlGpus::open_with(options).expect("the fake NVML opens");
    let gpus = nvml.gpus().len() as u64;
    let mut at_ms = START_MS;
    let mut read = move || {
        at_ms += 1000;
        let readout = nvml.read(at_ms);
        black_box((readout.gpus.len(), readout.gpu_processes.len()))
    };
    // Warm up: the first reads start the tiers, GPM and the process lists.
    let (_, processes) = (0..5).map(|_| read()).last().unwrap_or_default();
    eprintln!("nvml_fake: {name}: {gpus} GPUs, {processes} GPU processes");

    let mut cpu = Criterion::default().with_measurement(ProcessCpu).configure_from_args();
    let mut group = cpu.benchmark_group("nvml_read_cpu");
    group.throughput(Throughput::Elements(gpus));
    group.bench_function(BenchmarkId::from_parameter(name), |b| b.iter(&mut read));
    group.finish();

    let mut wall = Criterion::default().configure_from_args();
    let mut group = wall.benchmark_group("nvml_read_wall");
    group.bench_function(BenchmarkId::from_parameter(name), |b| b.iter(&mut read));
    group.finish();
    wall.final_summary();
}

/// Runs this bench again for each scenario, with the environment that points NVML at the fake and the scenario.
#[allow(clippy::disallowed_methods, reason = "a bench re-runs itself: NVML can be started only once a process")]
fn run_children(library: &std::path::Path) -> i32 {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let exe = std::env::current_exe().expect("this bench's path");
    let mut code = 0;
    for name in fake_env::SCENARIOS {
        let scenario = fake_env::zero_time_scenario(name, dir.path()).expect("the built-in scenario");
        let status = std::process::Command::new(&exe)
            .args(std::env::args_os().skip(1))
            .env("GPUSIGHT_NVML_LIB", library)
            .env("GPUSIGHT_FAKE_NVML", scenario)
            .env(CHILD, name)
            .status()
            .expect("the bench runs again");
        if !status.success() {
            eprintln!("nvml_fake: {name} failed: {status}");
            code = 1;
        }
    }
    code
}

fn main() {
    if let Ok(name) = std::env::var(CHILD) {
        bench_one(&name);
        return;
    }
    let Some(library) = fake_env::fake_library() else {
        eprintln!(
            "nvml_fake: skipped: the fake NVML ({}) is not built; build it with `{}` (or name it with \
             GPUSIGHT_NVML_LIB) and run the bench again",
            fake_env::LIBRARY,
            fake_env::BUILD_IT
        );
        return;
    };
    std::process::exit(run_children(&library));
}
