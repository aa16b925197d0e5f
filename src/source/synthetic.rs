//! Deterministic synthetic machines: named scenarios with known shapes (the workloads of a training box and
//! the faults we diagnose) and scale (N GPUs × M processes), for tests, benchmarks and demos without a GPU.
//!
//! The same scenario, size and seed always give the same ticks; time is virtual (it starts at a fixed moment and
//! advances by the interval each tick), so nothing here reads the clock.

use std::str::FromStr;
use std::sync::Arc;

use crate::sample::{
    CpuBreakdown, GpmMetrics, GpuInfo, GpuPeer, GpuProcess, GpuState, GpuTick, HostProcess, HostTick, MachineInfo,
    PciePath, ProcessKind, ProcessRole, Psi, SourceHealth, SourceKind, ThrottleCounters, Tick, UnixMs, throttle,
};

use super::{Source, SourceError};

/// 2025-11-24 00:00:00 UTC: the virtual start of every synthetic run.
pub const DEFAULT_START_MS: UnixMs = 1_763_942_400_000;
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const H200_MEM_BYTES: u64 = 150_754_820_096;
const TICKS_PER_SECOND: u64 = 100;

/// What one GPU is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Nothing runs; the link has downshifted as idle links do.
    Idle,
    /// Dense matrix products at the power cap.
    Compute,
    /// A training loop starved by storage reads: low SM, process often in D, high PSI io.
    InputBound,
    /// Starved by CPU preprocessing in the main process: one core at 100 %, little I/O.
    CpuBound,
    /// Busy and hot: thermal slowdown part of the time.
    Thermal,
    /// Busy on a link trained below its maximum.
    PcieDowngraded,
    /// Holds 20 GiB and does nothing.
    IdleHolder,
    /// GPU memory grows by 1 GiB every 2 s.
    Leak,
    /// Busy, then the GPU falls off the bus after `LOST_AFTER_TICKS` ticks (in `gpu-lost`, GPU 0 only).
    Lost,
    /// A parent fed by DataLoader worker children.
    Loader,
    /// Computes; one sample has the HW-slowdown bit, as around a clock or P-state change (`BLIP_TICK`).
    HwBlip,
    /// Computes; one corrected single-bit ECC event at `BLIP_TICK`.
    EccCorrected,
    /// A training job that writes a checkpoint all the time: low utilization, a thread in D writing, no reads.
    Writer,
    /// Short jobs that come and go: each slot's process exits after [`CHURN_LIFETIME_MS`] and a new one with a
    /// new PID takes its place, so per-process history must be forgotten (for soaks).
    Churn,
}

/// How long a `churn` process lives (virtual time).
pub const CHURN_LIFETIME_MS: u64 = 5_000;

/// Process slots per GPU in `churn` (plus `processes_per_gpu`).
const CHURN_SLOTS: u32 = 6;

/// The tick of the one odd sample in `hw-blip` and `ecc-corrected`.
pub const BLIP_TICK: u64 = 5;

/// Ticks before a `Lost` GPU disappears.
pub const LOST_AFTER_TICKS: u64 = 20;

/// A named scenario: which workload runs on which GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Every GPU runs one workload.
    Uniform(Workload),
    /// GPU i runs the i-th workload of a fixed mix (compute, input-bound, cpu-bound, idle holder, leak, loader,
    /// idle, idle), the shape of a shared training box.
    Mixed,
    /// Every GPU runs `processes_per_gpu` compute processes: for benchmarks.
    Scale,
}

const MIX: [Workload; 8] = [
    Workload::Compute,
    Workload::InputBound,
    Workload::CpuBound,
    Workload::IdleHolder,
    Workload::Leak,
    Workload::Loader,
    Workload::Idle,
    Workload::Idle,
];

impl Scenario {
    /// Every scenario name accepted on the command line.
    pub const NAMES: [&'static str; 16] = [
        "idle",
        "compute",
        "input-bound",
        "cpu-bound",
        "thermal",
        "pcie-downgraded",
        "idle-holder",
        "leak",
        "gpu-lost",
        "loader",
        "churn",
        "mixed",
        "scale",
        "hw-blip",
        "ecc-corrected",
        "writer",
    ];

    fn workload(self, gpu_index: u32) -> Workload {
        match self {
            // Only the first GPU falls off the bus; the others keep computing, as on a real box.
            Self::Uniform(Workload::Lost) if gpu_index > 0 => Workload::Compute,
            Self::Uniform(workload) => workload,
            Self::Mixed => MIX[gpu_index as usize % MIX.len()],
            Self::Scale => Workload::Compute,
        }
    }
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Ok(match name {
            "idle" => Self::Uniform(Workload::Idle),
            "compute" => Self::Uniform(Workload::Compute),
            "input-bound" | "input" => Self::Uniform(Workload::InputBound),
            "cpu-bound" | "cpu" => Self::Uniform(Workload::CpuBound),
            "thermal" => Self::Uniform(Workload::Thermal),
            "pcie-downgraded" | "pcie" => Self::Uniform(Workload::PcieDowngraded),
            "idle-holder" => Self::Uniform(Workload::IdleHolder),
            "leak" => Self::Uniform(Workload::Leak),
            "gpu-lost" | "lost" => Self::Uniform(Workload::Lost),
            "loader" => Self::Uniform(Workload::Loader),
            "churn" => Self::Uniform(Workload::Churn),
            "hw-blip" => Self::Uniform(Workload::HwBlip),
            "ecc-corrected" => Self::Uniform(Workload::EccCorrected),
            "writer" => Self::Uniform(Workload::Writer),
            "mixed" => Self::Mixed,
            "scale" => Self::Scale,
            other => {
                return Err(format!("unknown synthetic scenario '{other}'; choose one of: {}", Self::NAMES.join(", ")));
            }
        })
    }
}

/// A synthetic machine: scenario, size and pacing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntheticSpec {
    pub scenario: Scenario,
    pub scenario_name: String,
    pub n_gpus: u32,
    /// Extra compute processes per GPU (for `scale`; other scenarios add these to their own).
    pub processes_per_gpu: u32,
    pub interval_ms: u64,
    pub start_ms: UnixMs,
    pub seed: u64,
    /// Real PIDs to list as GPU processes on GPU 0 (with their start ticks, if known), so tests can exercise the
    /// signal path against a real child process.
    pub attach_pids: Vec<(u32, Option<u64>)>,
    /// Milliseconds [`SyntheticSource::next_tick`] sleeps before it returns, like a slow NVML call, so the
    /// sampler thread is busy while the UI must stay responsive. A measurement knob: `parse` sets it from the
    /// environment variable [`DELAY_ENV`] (0 when unset); `tick_at` never sleeps.
    pub slow_ms: u64,
    /// After this many ticks, [`SyntheticSource::next_tick`] dies of SIGSEGV inside a marked GPM call on GPU 0, as
    /// a driver library can: the crash path (terminal restore, message, recording kept) tested without a GPU.
    /// `parse` sets it from the environment variable [`CRASH_ENV`].
    pub crash_after_ticks: Option<u64>,
}

/// The environment variable that makes every synthetic sample slow (milliseconds), for latency measurements.
pub const DELAY_ENV: &str = "GPUSIGHT_SYNTHETIC_DELAY_MS";

/// The environment variable that makes the synthetic source crash after that many ticks (see
/// [`SyntheticSpec::crash_after_ticks`]).
pub const CRASH_ENV: &str = "GPUSIGHT_SYNTHETIC_CRASH_AFTER";

/// The delay [`DELAY_ENV`] asks for; 0 when unset or not a whole number of milliseconds.
fn delay_ms(value: Option<&str>) -> u64 {
    value.and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

impl SyntheticSpec {
    /// Parses `SCENARIO[:GPUS[xPROCS]]`, e.g. `input-bound`, `mixed:8`, `scale:8x1000`.
    ///
    /// # Errors
    /// An unknown scenario or a malformed size, phrased for a person.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (name, size) = text.split_once(':').unwrap_or((text, ""));
        let scenario: Scenario = name.parse()?;
        let default_gpus = match scenario {
            Scenario::Mixed | Scenario::Scale | Scenario::Uniform(Workload::Churn) => 8,
            Scenario::Uniform(_) => 1,
        };
        let bad_size = || format!("bad synthetic size '{size}' in '{text}': expected GPUS or GPUSxPROCS, e.g. 8x1000");
        let (n_gpus, processes_per_gpu) = if size.is_empty() {
            (default_gpus, if scenario == Scenario::Scale { 125 } else { 0 })
        } else {
            let (gpus, procs) = size.split_once('x').unwrap_or((size, "0"));
            let n_gpus: u32 = gpus.parse().map_err(|_| bad_size())?;
            let n_procs: u32 = procs.parse().map_err(|_| bad_size())?;
            if !(1..=64).contains(&n_gpus) || n_procs > 100_000 {
                return Err(bad_size());
            }
            // In `GPUSxPROCS` the process count is for the whole machine, as in "8 GPUs × 1,000 processes".
            (n_gpus, n_procs.div_ceil(n_gpus))
        };
        Ok(Self {
            scenario,
            scenario_name: name.to_owned(),
            n_gpus,
            processes_per_gpu,
            interval_ms: 1000,
            start_ms: DEFAULT_START_MS,
            seed: 1,
            attach_pids: Vec::new(),
            slow_ms: delay_ms(std::env::var(DELAY_ENV).ok().as_deref()),
            crash_after_ticks: std::env::var(CRASH_ENV).ok().and_then(|v| v.trim().parse().ok()),
        })
    }
}

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
    let n_cpus = 32;
    let cpus_per_node = n_cpus / 2;
    let gpus = (0..spec.n_gpus)
        .map(|index| {
            // Two NUMA nodes; the first half of the GPUs sits on node 0.
            let node = u32::from(index >= spec.n_gpus.div_ceil(2));
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
                numa_node: Some(node),
                local_cpus: Some((first_cpu..first_cpu + cpus_per_node).collect()),
                persistence_mode: Some(true),
                mig_enabled: Some(false),
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
                        pcie: Some(if (peer >= spec.n_gpus.div_ceil(2)) == (node == 1) {
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
        hostname: format!("synthetic-{}", spec.scenario_name),
        source: SourceKind::Synthetic,
        source_label: format!("synthetic {} ({} GPUs)", spec.scenario_name, spec.n_gpus),
        driver_version: Some("580.159.04".to_owned()),
        cuda_driver_version: Some(13000),
        nvml_version: Some("13.580.159.04".to_owned()),
        open_kernel_module: Some(true),
        kernel_release: Some("6.8.0-synthetic".to_owned()),
        n_cpus: n_cpus as usize,
        n_numa_nodes: 2,
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
    #[allow(clippy::cast_precision_loss)]
    let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
    unit
}

/// `base` plus or minus `spread`, deterministic.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn jitter(seed: u64, n: u64, stream: u64, base: f64, spread: f64) -> u32 {
    (base + (noise(seed, n, stream) * 2.0 - 1.0) * spread).max(0.0).round() as u32
}

/// What a workload contributes to the host at one tick.
#[derive(Debug, Default)]
struct HostLoad {
    busy_cores: f64,
    iowait_cores: f64,
    psi_io: f32,
    psi_cpu: f32,
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

#[allow(clippy::too_many_lines)]
fn gpu_tick(spec: &SyntheticSpec, info: &GpuInfo, workload: Workload, n: u64, at_ms: UnixMs) -> GpuTick {
    let seed = spec.seed ^ u64::from(info.index) << 32;
    let j = |stream, base, spread| jitter(seed, n, stream, base, spread);
    let secs = (at_ms - spec.start_ms) / 1000;
    let mut gpu = GpuTick {
        index: info.index,
        state: GpuState::Ok,
        power_limit_mw: info.power_limit_default_mw,
        pcie_gen: info.max_pcie_gen,
        pcie_width: info.max_pcie_width,
        pcie_replay_count: Some(1),
        ecc: Some(crate::sample::EccCounts {
            volatile_corrected: Some(0),
            volatile_uncorrected: Some(0),
            aggregate_corrected: Some(0),
            aggregate_uncorrected: Some(0),
        }),
        remapped_rows: Some(crate::sample::RemappedRows::default()),
        retired_pages_pending: Some(false),
        enc_util_pct: Some(0),
        dec_util_pct: Some(0),
        fan_pct: None,
        ..GpuTick::default()
    };
    // (util, power W, temp C, sm MHz, throttle bits, gpm sm active, tensor, dram, memory used GiB, rx MB/s)
    let (util, power_w, temp, sm_mhz, bits, sm_active, tensor, dram, mem_gib, rx_mbps) = match workload {
        Workload::Idle => (0, j(1, 72.0, 3.0), j(2, 31.0, 1.0), 345, throttle::GPU_IDLE, 0.0, 0.0, 0.0, 0, 0),
        Workload::Compute | Workload::Lost | Workload::HwBlip | Workload::EccCorrected => (
            j(0, 99.0, 1.0),
            j(1, 692.0, 6.0),
            j(2, 66.0, 2.0),
            j(3, 1500.0, 40.0),
            throttle::SW_POWER_CAP,
            96.0,
            93.0,
            16.0,
            42,
            60,
        ),
        Workload::InputBound => (j(0, 5.0, 4.0), j(1, 150.0, 10.0), j(2, 41.0, 1.0), 1980, 0, 3.0, 2.0, 0.6, 12, 380),
        Workload::CpuBound => (j(0, 2.0, 2.0), j(1, 127.0, 5.0), j(2, 38.0, 1.0), 1980, 0, 1.0, 1.0, 0.2, 9, 5),
        Workload::Thermal => {
            let hot = !n.is_multiple_of(4);
            let bits = if hot {
                throttle::SW_THERMAL_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN
            } else {
                throttle::SW_POWER_CAP
            };
            (
                j(0, 98.0, 2.0),
                j(1, 560.0, 20.0),
                j(2, 89.0, 1.5),
                if hot { 1050 } else { 1410 },
                bits,
                90.0,
                85.0,
                14.0,
                40,
                50,
            )
        }
        Workload::PcieDowngraded => {
            (j(0, 85.0, 5.0), j(1, 520.0, 20.0), j(2, 60.0, 2.0), 1755, 0, 80.0, 70.0, 12.0, 30, 9000)
        }
        Workload::IdleHolder => (0, j(1, 119.0, 3.0), j(2, 34.0, 1.0), 1980, 0, 0.0, 0.0, 0.0, 20, 0),
        Workload::Leak => {
            let grown = (secs / 2).min(120);
            (j(0, 35.0, 5.0), j(1, 260.0, 10.0), j(2, 45.0, 1.0), 1980, 0, 30.0, 25.0, 5.0, 2 + grown, 200)
        }
        Workload::Loader => (j(0, 20.0, 6.0), j(1, 283.0, 20.0), j(2, 48.0, 1.0), 1980, 0, 18.0, 15.0, 3.0, 14, 1200),
        Workload::Writer => (j(0, 20.0, 5.0), j(1, 200.0, 10.0), j(2, 44.0, 1.0), 1980, 0, 15.0, 12.0, 2.0, 40, 20),
        Workload::Churn => (j(0, 60.0, 30.0), j(1, 400.0, 80.0), j(2, 55.0, 5.0), 1800, 0, 50.0, 40.0, 8.0, 24, 400),
    };
    if workload == Workload::Lost && n >= LOST_AFTER_TICKS {
        return GpuTick { index: info.index, state: GpuState::Lost, ..GpuTick::default() };
    }
    if workload == Workload::PcieDowngraded {
        gpu.pcie_gen = Some(3);
        gpu.pcie_width = Some(8);
    }
    if workload == Workload::Idle {
        // Idle links downshift on purpose: never a finding.
        gpu.pcie_gen = Some(1);
    }
    let bits = if workload == Workload::HwBlip && n == BLIP_TICK { bits | throttle::HW_SLOWDOWN } else { bits };
    if workload == Workload::EccCorrected && n >= BLIP_TICK {
        gpu.ecc = gpu.ecc.map(|e| crate::sample::EccCounts {
            volatile_corrected: Some(1),
            aggregate_corrected: Some(1),
            ..e
        });
    }
    let reserved = 615 * MIB;
    let used = (mem_gib * GIB + if mem_gib > 0 { 560 * MIB } else { 0 }).min(H200_MEM_BYTES - reserved);
    gpu.util_pct = Some(util.min(100));
    gpu.mem_util_pct = Some((util / 4).min(100));
    gpu.mem_used_bytes = Some(used);
    gpu.mem_reserved_bytes = Some(reserved);
    gpu.mem_free_bytes = Some(H200_MEM_BYTES - reserved - used);
    gpu.power_mw = Some(power_w * 1000);
    gpu.temp_c = Some(temp);
    gpu.sm_clock_mhz = Some(sm_mhz);
    gpu.mem_clock_mhz = Some(3201);
    gpu.throttle_bits = Some(bits);
    gpu.pstate = Some(if workload == Workload::Idle { 8 } else { 0 });
    gpu.pcie_rx_kbps = Some(j(4, f64::from(rx_mbps) * 1000.0, f64::from(rx_mbps) * 50.0));
    gpu.pcie_tx_kbps = Some(j(5, f64::from(rx_mbps) * 100.0, f64::from(rx_mbps) * 5.0));
    gpu.energy_mj = Some(1_000_000_000 + n * u64::from(power_w) * spec.interval_ms);
    let elapsed_ns = n * spec.interval_ms * 1_000_000;
    let capped = |mask: u64| {
        if bits & mask != 0 { Some(elapsed_ns) } else { Some(0) }
    };
    gpu.throttle_ns = Some(ThrottleCounters {
        sw_power_cap_ns: capped(throttle::SW_POWER_CAP),
        sync_boost_ns: Some(0),
        sw_thermal_ns: if workload == Workload::Thermal { Some(elapsed_ns * 3 / 4) } else { Some(0) },
        hw_thermal_ns: if workload == Workload::Thermal { Some(elapsed_ns * 3 / 4) } else { Some(0) },
        hw_power_brake_ns: Some(0),
    });
    if info.gpm_supported {
        #[allow(clippy::cast_possible_truncation, reason = "a percentage from 0 to 100 fits an f32")]
        let f = |stream, base: f64| (f64::from(jitter(seed, n, stream, base * 10.0, base)) / 10.0).min(100.0) as f32;
        gpu.gpm = Some(GpmMetrics {
            sm_active_pct: Some(f(6, sm_active)),
            sm_occupancy_pct: Some(f(7, sm_active * 0.15)),
            tensor_active_pct: Some(f(8, tensor)),
            dram_active_pct: Some(f(9, dram)),
            gr_engine_active_pct: Some(f(10, f64::from(util))),
        });
    }
    gpu
}

struct ProcSpec<'a> {
    pid: u32,
    ppid: u32,
    role: ProcessRole,
    user: &'a str,
    uid: u32,
    name: &'a str,
    cmdline: String,
    state: char,
    cpu_pct: f32,
    rss_bytes: u64,
    read_bytes_per_s: u64,
    started_secs_before: u64,
}

fn host_process(spec: &SyntheticSpec, info: &GpuInfo, at_ms: UnixMs, p: ProcSpec<'_>) -> HostProcess {
    let boot_ms = spec.start_ms - 86_400_000;
    let started_at_ms = at_ms.saturating_sub(p.started_secs_before * 1000).max(boot_ms);
    let start_ticks = (started_at_ms - boot_ms) / 1000 * TICKS_PER_SECOND;
    HostProcess {
        pid: p.pid,
        ppid: Some(p.ppid),
        role: p.role,
        uid: Some(p.uid),
        user: Some(p.user.to_owned()),
        name: p.name.to_owned(),
        cmdline: p.cmdline,
        state: Some(p.state),
        cpu_pct: Some(p.cpu_pct),
        rss_bytes: Some(p.rss_bytes),
        read_bytes_per_s: Some(p.read_bytes_per_s),
        write_bytes_per_s: Some(0),
        allowed_cpus: info.local_cpus.clone(),
        nspid: Some(vec![p.pid]),
        start_ticks: Some(start_ticks),
        started_at_ms: Some(started_at_ms),
        n_threads: Some(if p.role == ProcessRole::Gpu { 48 } else { 4 }),
        threads_in_d: Some(u32::from(p.state == 'D')),
        unreadable: None,
        // The main thread does the process's work in these scenarios.
        busiest_thread: (p.role == ProcessRole::Gpu).then(|| crate::sample::ThreadCpu {
            tid: p.pid,
            name: p.name.to_owned(),
            cpu_pct: p.cpu_pct.min(100.0),
        }),
    }
}

#[allow(clippy::too_many_lines)]
fn add_processes(
    spec: &SyntheticSpec,
    info: &GpuInfo,
    workload: Workload,
    n: u64,
    at_ms: UnixMs,
    tick: &mut Tick,
    load: &mut HostLoad,
) {
    let gpu_index = info.index;
    let base_pid = 2000 + gpu_index * 1000;
    let launcher_pid = base_pid;
    let main_pid = base_pid + 1;
    let elapsed_s = (at_ms - spec.start_ms) / 1000;
    let gpu = tick.gpu(gpu_index).cloned().unwrap_or_default();
    let seed = spec.seed ^ u64::from(gpu_index) << 40;
    let users = ["alice", "bob", "carol", "dave"];
    let user = users[gpu_index as usize % users.len()];
    let uid = 1001 + gpu_index % 4;
    let mut main =
        |name: &str, cmdline: String, state: char, cpu_pct: f32, read: u64, mem_bytes: u64, sm: u32, age: u64| {
            tick.processes.push(host_process(
                spec,
                info,
                at_ms,
                ProcSpec {
                    pid: launcher_pid,
                    ppid: 1,
                    role: ProcessRole::Parent,
                    user,
                    uid,
                    name: "bash",
                    cmdline: "bash run.sh".to_owned(),
                    state: 'S',
                    cpu_pct: 0.0,
                    rss_bytes: 4 * MIB,
                    read_bytes_per_s: 0,
                    started_secs_before: age + 5 + elapsed_s,
                },
            ));
            tick.processes.push(host_process(
                spec,
                info,
                at_ms,
                ProcSpec {
                    pid: main_pid,
                    ppid: launcher_pid,
                    role: ProcessRole::Gpu,
                    user,
                    uid,
                    name,
                    cmdline,
                    state,
                    cpu_pct,
                    rss_bytes: 6 * GIB,
                    read_bytes_per_s: read,
                    started_secs_before: age + elapsed_s,
                },
            ));
            tick.gpu_processes.push(GpuProcess {
                gpu_index,
                pid: Some(main_pid),
                kind: ProcessKind::Compute,
                used_gpu_memory_bytes: Some(mem_bytes),
                sm_util_pct: Some(sm),
                mem_util_pct: Some(sm / 4),
                enc_util_pct: Some(0),
                dec_util_pct: Some(0),
            });
        };
    let used = gpu.mem_used_bytes.unwrap_or(0).saturating_sub(560 * MIB);
    let sm = gpu.util_pct.unwrap_or(0).saturating_sub(1);
    // The input-bound process's states over ten reads on the real H200: RDRRDDRDRR.
    #[allow(clippy::items_after_statements, reason = "kept next to its one use; this function is split by issue 17")]
    const INPUT_STATES: &[u8; 10] = b"RDRRDDRDRR";
    match workload {
        Workload::Idle | Workload::Churn => {}
        Workload::Compute
        | Workload::Lost
        | Workload::Thermal
        | Workload::PcieDowngraded
        | Workload::HwBlip
        | Workload::EccCorrected => {
            let cmd = "python train.py --model llama-8b --batch-size 16 --bf16".to_owned();
            main("python", cmd, 'R', 100.0, 0, used, sm, 3600);
            load.busy_cores += 1.0;
            load.psi_io = load.psi_io.max(2.2);
        }
        Workload::InputBound => {
            let state = char::from(INPUT_STATES[(n % 10) as usize]);
            let read = u64::from(jitter(seed, n, 20, 380.0, 40.0)) * MIB;
            main(
                "python",
                "python train.py --data /mnt/nfs/imagenet --workers 0".to_owned(),
                state,
                35.0,
                read,
                used,
                sm,
                1800,
            );
            load.busy_cores += 0.35;
            load.iowait_cores += 0.6;
            load.psi_io = load.psi_io.max(36.8);
        }
        Workload::CpuBound => {
            main("python", "python finetune.py --tokenize-on-the-fly".to_owned(), 'R', 99.8, 0, used, sm, 2400);
            load.busy_cores += 1.0;
            load.psi_io = load.psi_io.max(1.0);
            load.psi_cpu = load.psi_cpu.max(6.1);
        }
        Workload::Writer => {
            // The checkpoint writer: in D most samples (the states of the input-bound job), writing 800 MiB/s.
            let state = char::from(INPUT_STATES[(n % 10) as usize]);
            main("python", "python train.py --save-every 5s".to_owned(), state, 40.0, 0, used, sm, 1200);
            if let Some(p) = tick.processes.iter_mut().find(|p| p.pid == main_pid) {
                p.write_bytes_per_s = Some(u64::from(jitter(seed, n, 21, 800.0, 60.0)) * MIB);
            }
            load.busy_cores += 0.4;
            load.iowait_cores += 0.6;
            load.psi_io = load.psi_io.max(30.0);
        }
        Workload::IdleHolder => {
            main("python", "python -m ipykernel_launcher -f kernel-3f2a.json".to_owned(), 'S', 0.0, 0, used, 0, 7200);
        }
        Workload::Leak => {
            main("python", "python serve.py --cache-kv".to_owned(), 'R', 60.0, 0, used, sm, 600);
            load.busy_cores += 0.6;
        }
        Workload::Loader => {
            main("python", "python train.py --workers 2".to_owned(), 'S', 30.0, 0, used, sm, 900);
            for (k, (state, cpu, read)) in [('R', 55.0, 20 * MIB), ('D', 48.0, 310 * MIB)].into_iter().enumerate() {
                let pid = main_pid + 1 + u32::try_from(k).unwrap_or(0);
                tick.processes.push(host_process(
                    spec,
                    info,
                    at_ms,
                    ProcSpec {
                        pid,
                        ppid: main_pid,
                        role: ProcessRole::Child,
                        user,
                        uid,
                        name: "pt_data_worker",
                        cmdline: "python train.py --workers 2".to_owned(),
                        state,
                        cpu_pct: cpu,
                        rss_bytes: 900 * MIB,
                        read_bytes_per_s: read,
                        started_secs_before: 890 + elapsed_s,
                    },
                ));
            }
            load.busy_cores += 1.3;
            load.iowait_cores += 0.3;
            load.psi_io = load.psi_io.max(30.2);
        }
    }
    if workload == Workload::Churn {
        add_churn(spec, info, n, at_ms, tick);
        load.busy_cores += f64::from(CHURN_SLOTS) * 0.5;
    }
    // Extra processes for scale tests: small compute jobs on this GPU.
    for k in 0..spec.processes_per_gpu {
        let pid = base_pid + 100 + k;
        let stream = 100 + u64::from(k);
        tick.processes.push(host_process(
            spec,
            info,
            at_ms,
            ProcSpec {
                pid,
                ppid: 1,
                role: ProcessRole::Gpu,
                user: users[k as usize % users.len()],
                uid: 1001 + k % 4,
                name: "python",
                cmdline: format!("python worker.py --shard {k}"),
                state: if k % 3 == 0 { 'R' } else { 'S' },
                cpu_pct: jitter(seed, n, stream, 20.0, 20.0) as f32,
                rss_bytes: 512 * MIB,
                read_bytes_per_s: 0,
                started_secs_before: 100 + u64::from(k) + elapsed_s,
            },
        ));
        tick.gpu_processes.push(GpuProcess {
            gpu_index,
            pid: Some(pid),
            kind: ProcessKind::Compute,
            used_gpu_memory_bytes: Some(256 * MIB),
            sm_util_pct: Some(jitter(seed, n, stream + 1, 5.0, 5.0)),
            mem_util_pct: Some(1),
            enc_util_pct: Some(0),
            dec_util_pct: Some(0),
        });
    }
}

/// The `churn` processes of one GPU at one tick: slot `k` runs generation `g` of its job, which started at
/// `g * CHURN_LIFETIME_MS - offset_k` and exits `CHURN_LIFETIME_MS` later; each generation has a new PID (PIDs
/// wrap below the kernel's `pid_max`, so a long run also reuses PIDs with new start times), plus one worker child.
fn add_churn(spec: &SyntheticSpec, info: &GpuInfo, n: u64, at_ms: UnixMs, tick: &mut Tick) {
    const FIRST_PID: u64 = 100_000;
    const PID_SPAN: u64 = 4_000_000;
    let elapsed_ms = at_ms - spec.start_ms;
    let seed = spec.seed ^ u64::from(info.index) << 40;
    let slots = u64::from(CHURN_SLOTS);
    let n_gpus = u64::from(spec.n_gpus.max(1));
    for k in 0..slots {
        // Whole seconds, so a job's start time (in clock ticks, derived at second resolution) stays put.
        let offset_ms = k * CHURN_LIFETIME_MS / slots / 1000 * 1000;
        let generation = (elapsed_ms + offset_ms) / CHURN_LIFETIME_MS;
        let born_ms = (generation * CHURN_LIFETIME_MS).saturating_sub(offset_ms);
        // Two PIDs per job (the job and its worker), unique per (generation, GPU, slot) until they wrap.
        let serial = (generation * n_gpus + u64::from(info.index)) * slots + k;
        let pid = u32::try_from(FIRST_PID + (serial * 2) % PID_SPAN).unwrap_or(u32::MAX);
        let age_s = (elapsed_ms - born_ms) / 1000;
        let stream = 300 + k;
        let cpu = jitter(seed, n, stream, 60.0, 40.0) as f32;
        let job = |pid, ppid, role, name: &str, cpu_pct, state| ProcSpec {
            pid,
            ppid,
            role,
            user: ["alice", "bob", "carol", "dave"][(serial % 4) as usize],
            uid: 1001 + u32::try_from(serial % 4).unwrap_or(0),
            name: "python",
            cmdline: format!("python {name} --job {serial}"),
            state,
            cpu_pct,
            rss_bytes: (1 + serial % 4) * GIB,
            read_bytes_per_s: u64::from(jitter(seed, n, stream + 1, 40.0, 40.0)) * MIB,
            started_secs_before: age_s,
        };
        tick.processes.push(host_process(spec, info, at_ms, job(pid, 1, ProcessRole::Gpu, "sweep.py", cpu, 'R')));
        let worker = job(
            pid + 1,
            pid,
            ProcessRole::Child,
            "sweep.py worker",
            cpu / 2.0,
            if n.is_multiple_of(7) { 'D' } else { 'S' },
        );
        tick.processes.push(host_process(spec, info, at_ms, worker));
        tick.gpu_processes.push(GpuProcess {
            gpu_index: info.index,
            pid: Some(pid),
            kind: ProcessKind::Compute,
            // Grows over the job's life, as a job warming its caches does.
            used_gpu_memory_bytes: Some((2 + age_s.min(4)) * GIB),
            sm_util_pct: Some(jitter(seed, n, stream + 2, 50.0, 40.0)),
            mem_util_pct: Some(10),
            enc_util_pct: Some(0),
            dec_util_pct: Some(0),
        });
    }
}

#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
fn host_tick(spec: &SyntheticSpec, machine: &MachineInfo, n: u64, load: &HostLoad) -> HostTick {
    let n_cpus = machine.n_cpus as f64;
    let busy_cores = load.busy_cores + 0.4;
    let iowait = (load.iowait_cores / n_cpus * 100.0) as f32;
    let busy = (busy_cores / n_cpus * 100.0) as f32;
    let steal = 0.0;
    let per_cpu = (0..machine.n_cpus)
        .map(|cpu| {
            let pinned = (cpu as f64) < load.busy_cores.ceil();
            Some(if pinned { 97.0 } else { f64::from(jitter(spec.seed, n, 200 + cpu as u64, 2.0, 2.0)) as f32 })
        })
        .collect();
    let mem_total = machine.mem_total_bytes.unwrap_or(0);
    HostTick {
        cpu: Some(CpuBreakdown {
            user_pct: busy * 0.8,
            system_pct: busy * 0.2,
            iowait_pct: iowait,
            steal_pct: steal,
            idle_pct: (100.0 - busy - iowait - steal).max(0.0),
            busy_pct: busy,
        }),
        per_cpu_busy_pct: per_cpu,
        mem_total_bytes: Some(mem_total),
        mem_available_bytes: Some(mem_total / 10 * 7),
        swap_total_bytes: Some(0),
        swap_free_bytes: Some(0),
        swap_in_pages_per_s: Some(0.0),
        swap_out_pages_per_s: Some(0.0),
        load_1: Some((busy_cores + load.iowait_cores) as f32),
        load_5: Some((busy_cores + load.iowait_cores) as f32 * 0.9),
        load_15: Some((busy_cores + load.iowait_cores) as f32 * 0.8),
        procs_blocked: Some(u32::from(load.iowait_cores > 0.0)),
        psi: Some(Psi {
            cpu_some_avg10: Some(load.psi_cpu.max(0.5)),
            io_some_avg10: Some(load.psi_io.max(0.2)),
            io_full_avg10: Some(load.psi_io * 0.8),
            memory_some_avg10: Some(0.0),
            memory_full_avg10: Some(0.0),
        }),
        uptime_s: Some(86_400 + n * spec.interval_ms / 1000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> SyntheticSource {
        SyntheticSource::new(SyntheticSpec::parse(text).expect("spec"))
    }

    #[test]
    fn the_same_spec_gives_the_same_ticks() {
        let (mut a, mut b) = (source("mixed:8"), source("mixed:8"));
        for _ in 0..5 {
            assert_eq!(a.next_tick().expect("tick"), b.next_tick().expect("tick"));
        }
    }

    #[test]
    fn parse_accepts_sizes_and_rejects_nonsense() {
        let spec = SyntheticSpec::parse("scale:8x1000").expect("spec");
        assert_eq!((spec.n_gpus, spec.processes_per_gpu), (8, 125));
        assert!(SyntheticSpec::parse("warp-drive").unwrap_err().contains("unknown synthetic scenario"));
        assert!(SyntheticSpec::parse("idle:0").is_err());
        assert!(SyntheticSpec::parse("idle:2xq").is_err());
    }

    #[test]
    fn every_scenario_builds_ticks() {
        for name in Scenario::NAMES {
            let mut source = source(&format!("{name}:2"));
            let tick = source.next_tick().expect("tick").expect("some");
            assert_eq!(tick.gpus.len(), 2, "{name}");
        }
    }

    #[test]
    fn scale_lists_every_process() {
        let tick = source("scale:8x1000").tick_at(0);
        assert_eq!(tick.gpu_processes.len(), 1000 + 8);
    }

    #[test]
    fn input_bound_shows_the_signals_seen_on_the_h200() {
        let s = source("input-bound");
        let states: String = (0..10).filter_map(|n| s.tick_at(n).process(2001).and_then(|p| p.state)).collect();
        assert_eq!(states, "RDRRDDRDRR");
        let tick = s.tick_at(3);
        assert!(tick.gpus[0].util_pct.expect("util") < 10);
        assert!(tick.host.psi.and_then(|p| p.io_some_avg10).expect("psi") > 30.0);
    }

    #[test]
    fn gpu_lost_mid_run_keeps_the_other_gpus() {
        let s = source("gpu-lost:2");
        let before = s.tick_at(LOST_AFTER_TICKS - 1);
        let after = s.tick_at(LOST_AFTER_TICKS);
        assert_eq!(before.gpus[0].state, GpuState::Ok);
        assert_eq!(after.gpus[0].state, GpuState::Lost);
        assert_eq!(after.gpus[0].util_pct, None);
        assert!(after.gpu_processes.iter().all(|p| p.gpu_index != 0));
        assert_eq!(after.gpus[1].state, GpuState::Ok, "the other GPU keeps going");
        assert!(after.gpus[1].util_pct.is_some());
    }

    #[test]
    fn churn_replaces_processes_with_new_pids() {
        let s = source("churn:2");
        let pids = |n: u64| -> Vec<u32> {
            let mut pids: Vec<u32> = s.tick_at(n).gpu_processes.iter().filter_map(|p| p.pid).collect();
            pids.sort_unstable();
            pids
        };
        let first = pids(0);
        assert_eq!(first.len(), 2 * CHURN_SLOTS as usize);
        // One second later (1 s interval), at most the slot whose generation turned over has a new PID.
        let later = pids(CHURN_LIFETIME_MS / 1000);
        assert!(later.iter().all(|p| !first.contains(p)), "every job was replaced after a lifetime");
        // A job keeps one start time over its life, at any interval, so it keeps one history.
        let fast =
            SyntheticSource::new(SyntheticSpec { interval_ms: 10, ..SyntheticSpec::parse("churn:1").expect("spec") });
        let start_of = |n: u64| {
            let tick = fast.tick_at(n);
            tick.gpu_processes
                .iter()
                .filter_map(|p| tick.process(p.pid?))
                .map(|h| (h.pid, h.start_ticks))
                .collect::<Vec<_>>()
        };
        let early = start_of(1);
        for n in 2..100 {
            for (pid, start) in start_of(n) {
                if let Some((_, was)) = early.iter().find(|(p, _)| *p == pid) {
                    assert_eq!(start, *was, "PID {pid} at tick {n}");
                }
            }
        }
        let tick = s.tick_at(3);
        for gpu_process in &tick.gpu_processes {
            let pid = gpu_process.pid.expect("pid");
            let host = tick.process(pid).expect("host process");
            assert!(tick.processes.iter().any(|c| c.ppid == Some(pid)), "PID {pid} has a worker");
            assert!(host.start_ticks.is_some());
        }
    }

    #[test]
    fn the_delay_knob_reads_whole_milliseconds() {
        assert_eq!(delay_ms(None), 0);
        assert_eq!(delay_ms(Some("80")), 80);
        assert_eq!(delay_ms(Some(" 900\n")), 900);
        assert_eq!(delay_ms(Some("slow")), 0, "a malformed value is ignored, not a panic");
    }

    #[test]
    fn leak_grows_and_idle_links_downshift() {
        let leak = source("leak");
        let early = leak.tick_at(2).gpus[0].mem_used_bytes.expect("mem");
        let late = leak.tick_at(60).gpus[0].mem_used_bytes.expect("mem");
        assert!(late > early + 20 * GIB);
        assert_eq!(source("idle").tick_at(0).gpus[0].pcie_gen, Some(1));
    }
}
