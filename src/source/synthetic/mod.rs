//! Deterministic synthetic machines: named scenarios with known shapes (the workloads of a training box and
//! the faults we diagnose) and scale (N GPUs × M processes), for tests, benchmarks and demos without a GPU.
//!
//! The same scenario, size and seed always give the same ticks; time is virtual (it starts at a fixed moment and
//! advances by the interval each tick), so nothing here reads the clock.
//!
//! The parts: `spec` (workloads, scenarios, `SCENARIO[:GPUS[xPROCS]]`), `gpu` (each workload's GPU profile,
//! `gpu_tick` reads it), `jobs` (each workload's job as a shape: launcher, GPU process, workers, load, input),
//! `processes` (the processes of one GPU's slot built from its job, ranks, scale extras, churn), `threads` (the
//! thread times of each job's processes, gathered at the live sampler's cadence), `host` (the host's tick) and
//! `input_cases` (the scenarios about where training really runs). This module builds the machine and
//! each tick from them.

use std::sync::Arc;

use crate::sample::{
    GpuInfo, GpuPeer, GpuProcess, GpuState, HostProcess, MachineInfo, PciePath, ProcessKind, SourceHealth, SourceKind,
    Tick, UnixMs,
};

use super::{Source, SourceError};
use gpu::gpu_tick;
use host::{HostLoad, host_tick};
use processes::add_processes;

/// 2025-11-24 00:00:00 UTC: the virtual start of every synthetic run.
pub const DEFAULT_START_MS: UnixMs = 1_763_942_400_000;
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const H200_MEM_BYTES: u64 = 150_754_820_096;
const TICKS_PER_SECOND: u64 = 100;

mod everyday;
mod gpu;
mod host;
mod input_cases;
mod jobs;
mod processes;
mod spec;
mod threads;

pub use spec::{
    BLIP_TICK, CHURN_LIFETIME_MS, CRASH_ENV, DELAY_ENV, LOST_AFTER_TICKS, Scenario, SpecError, SyntheticSpec, Workload,
};

/// A deterministic source of ticks for a [`SyntheticSpec`].
#[derive(Debug)]
pub struct SyntheticSource {
    spec: SyntheticSpec,
    machine: Arc<MachineInfo>,
    n_ticks: u64,
}

impl SyntheticSource {
    #[must_use]
    pub fn new(spec: SyntheticSpec) -> Self {
        let machine = Arc::new(machine_for(&spec));
        Self { spec, machine, n_ticks: 0 }
    }

    /// The tick at a given index, without advancing the source (ticks do not depend on earlier ones).
    #[must_use]
    pub fn tick_at(&self, n: u64) -> Tick {
        build_tick(&self.spec, &self.machine, n)
    }
}

impl Source for SyntheticSource {
    fn machine(&self) -> Arc<MachineInfo> {
        Arc::clone(&self.machine)
    }

    fn next_tick(&mut self) -> Result<Option<Tick>, SourceError> {
        if self.spec.slow_ms > 0 {
            // A measurement knob (see `SyntheticSpec::slow_ms`): this runs on the sampler thread, as NVML does.
            std::thread::sleep(std::time::Duration::from_millis(self.spec.slow_ms));
        }
        if self.spec.crash_after_ticks.is_some_and(|n| self.n_ticks >= n) {
            crash_like_a_driver();
        }
        let tick = self.tick_at(self.n_ticks);
        self.n_ticks += 1;
        Ok(Some(tick))
    }
}

/// Dies of SIGSEGV on this thread inside a marked GPM call on GPU 0 (see [`SyntheticSpec::crash_after_ticks`]).
fn crash_like_a_driver() {
    let _running = crate::crash::enter(crate::crash::Family::Gpm, Some(0));
    let _ = signal_hook::low_level::raise(signal_hook::consts::SIGSEGV);
}

fn machine_for(spec: &SyntheticSpec) -> MachineInfo {
    let (n_cpus, n_nodes) = spec.scenario.host_cpus();
    let cpus_per_node = n_cpus / n_nodes;
    let gpus = (0..spec.n_gpus)
        .map(|index| {
            // Two NUMA nodes (or one); the first half of the GPUs sits on node 0.
            let node = u32::from(n_nodes > 1 && index >= spec.n_gpus.div_ceil(2));
            let first_cpu = node * cpus_per_node;
            let workload = spec.scenario.workload(index);
            GpuInfo {
                index,
                name: "NVIDIA H200".to_owned(),
                uuid: format!("GPU-5e1f0000-0000-4000-8000-{:012x}", u64::from(index) + 1),
                pci_bus_id: format!("0000:{:02x}:00.0", 0x18 + index * 0x10),
                architecture: Some("Hopper".to_owned()),
                compute_capability: Some((9, 0)),
                mem_total_bytes: Some(H200_MEM_BYTES),
                max_sm_clock_mhz: Some(1980),
                max_mem_clock_mhz: Some(3201),
                max_pcie_gen: Some(5),
                max_pcie_width: Some(16),
                power_limit_default_mw: Some(700_000),
                power_limit_min_mw: Some(200_000),
                power_limit_max_mw: Some(700_000),
                temp_slowdown_c: Some(89),
                temp_shutdown_c: Some(95),
                temp_gpu_max_c: Some(87),
                temp_mem_max_c: None,
                numa_node: Some(node),
                local_cpus: Some((first_cpu..first_cpu + cpus_per_node).collect()),
                persistence_mode: Some(true),
                mig_enabled: Some(workload == Workload::MigSlice),
                ecc_enabled: Some(true),
                display_active: Some(false),
                gpm_supported: workload != Workload::Lost || index > 0,
                // An HGX board: every GPU reaches every other over 18 NVLinks through NVSwitch; PCIe paths cross
                // the CPU interconnect between the two NUMA halves.
                nvlinks_active: Some(18),
                peers: (0..spec.n_gpus)
                    .filter(|&peer| peer != index)
                    .map(|peer| GpuPeer {
                        index: peer,
                        nvlinks: Some(18),
                        pcie: Some(if u32::from(n_nodes > 1 && peer >= spec.n_gpus.div_ceil(2)) == node {
                            PciePath::Node
                        } else {
                            PciePath::System
                        }),
                    })
                    .collect(),
            }
        })
        .collect();
    MachineInfo {
        hostname: spec.hostname.clone().unwrap_or_else(|| format!("synthetic-{}", spec.scenario_name)),
        source: SourceKind::Synthetic,
        source_label: format!("synthetic {} ({} GPUs)", spec.scenario_name, spec.n_gpus),
        driver_version: Some("580.159.04".to_owned()),
        cuda_driver_version: Some(13000),
        nvml_version: Some("13.580.159.04".to_owned()),
        open_kernel_module: Some(true),
        kernel_release: Some("6.8.0-synthetic".to_owned()),
        n_cpus: n_cpus as usize,
        n_numa_nodes: n_nodes as usize,
        mem_total_bytes: Some(2048 * GIB),
        boot_time_ms: Some(DEFAULT_START_MS - 86_400_000),
        gpus,
        cpu: None,
    }
}

/// A small deterministic hash, for jitter that depends only on (seed, tick, stream).
fn noise(seed: u64, n: u64, stream: u64) -> f64 {
    let mut x = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ stream.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// `base` plus or minus `spread`, deterministic.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "clamped at 0 and rounded; far below u32::MAX"
)]
fn jitter(seed: u64, n: u64, stream: u64, base: f64, spread: f64) -> u32 {
    (base + (noise(seed, n, stream) * 2.0 - 1.0) * spread).max(0.0).round() as u32
}
fn build_tick(spec: &SyntheticSpec, machine: &MachineInfo, n: u64) -> Tick {
    let at_ms = spec.start_ms + n * spec.interval_ms;
    let mut tick = Tick { at_ms, health: SourceHealth::default(), ..Tick::default() };
    tick.health.nvml_events = Some(true);
    tick.health.kernel_log = Some(true);
    let mut load = HostLoad::default();
    for info in &machine.gpus {
        let workload = spec.scenario.workload(info.index);
        let gpu = gpu_tick(spec, info, workload, n, at_ms);
        let lost = gpu.state == GpuState::Lost;
        tick.gpus.push(gpu);
        if !lost {
            add_processes(spec, info, workload, n, at_ms, &mut tick, &mut load);
        }
    }
    for (pid, start_ticks) in &spec.attach_pids {
        tick.gpu_processes.push(GpuProcess {
            gpu_index: 0,
            pid: Some(*pid),
            kind: ProcessKind::Compute,
            used_gpu_memory_bytes: Some(512 * MIB),
            sm_util_pct: Some(0),
            mem_util_pct: Some(0),
            ..GpuProcess::default()
        });
        tick.processes.push(HostProcess {
            pid: *pid,
            name: "attached".to_owned(),
            cmdline: format!("attached test process {pid}"),
            state: Some('S'),
            start_ticks: *start_ticks,
            ..HostProcess::default()
        });
    }
    if n == BLIP_TICK && spec.scenario == Scenario::Uniform(Workload::EccCorrected) {
        tick.events.push(crate::sample::GpuEvent {
            at_ms,
            gpu_index: Some(0),
            kind: crate::sample::GpuEventKind::SingleBitEcc,
            origin: crate::sample::EventOrigin::NvmlEvents,
            message: "single-bit ECC error".to_owned(),
        });
    }
    tick.host = host_tick(spec, machine, n, &load);
    tick
}

/// A source for `text`, for the tests of every part.
#[cfg(test)]
fn test_source(text: &str) -> SyntheticSource {
    SyntheticSource::new(SyntheticSpec::parse(text).expect("spec"))
}

#[cfg(test)]
mod tests {
    use super::test_source as source;
    use super::*;

    #[test]
    fn the_same_spec_gives_the_same_ticks() {
        let (mut a, mut b) = (source("mixed:8"), source("mixed:8"));
        for _ in 0..5 {
            assert_eq!(a.next_tick().expect("tick"), b.next_tick().expect("tick"));
        }
    }

    #[test]
    fn every_scenario_builds_ticks() {
        for name in Scenario::NAMES {
            let mut source = source(&format!("{name}:2"));
            let tick = source.next_tick().expect("tick").expect("some");
            assert_eq!(tick.gpus.len(), 2, "{name}");
        }
    }
}
