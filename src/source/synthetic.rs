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
    /// A parent fed by `DataLoader` worker children.
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
    /// Waits with no cause a specific rule can name (gpu-underfed says "cause unknown").
    GpuUnderfed,
    /// Tiny kernels launched from one pegged thread: utilization moderate, SM activity a small fraction of it.
    LaunchBound,
    /// Host-to-device copies near the link's capacity while the SMs idle.
    H2dCopyBound,
    /// A `DataLoader` job in a cgroup with a 2-CPU quota and 8 workers, throttled most periods.
    CpuQuota,
    /// A `DataLoader` job whose 8 workers wait for a dataset served over HTTP.
    RemoteStall,
    /// Busy with the SM clock locked well below its maximum, no power or thermal reason.
    ClocksLimited,
    /// Busy with HBM near its temperature limit.
    HbmHot,
    /// Busy with DRAM near its bandwidth and tensor cores idle.
    MemoryBound,
    /// A torchrun rank that waits for a slower rank in NCCL: utilization near 100 % (the collective's kernels
    /// spin), SM activity low.
    RankWaiting,
    /// The torchrun rank that sets the pace: one `DataLoader` worker pegged, its GPU mostly idle.
    RankStarved,
    /// A torchrun rank stuck in a collective: utilization 100 %, SM activity at NCCL's spinning level (18 %), no traffic.
    RankHung,
    /// A healthy job whose stdout (`slurm-%j.out`), TensorBoard events and checkpoints go to NFS and Lustre.
    NfsStdout,
    /// Eight pegged workers decoding JPEGs read from Lustre, warm in the page cache: CPU-bound, not remote.
    LustreWarmDecode,
    /// An inference server between requests: sixteen handler threads blocked in a socket read.
    InferenceServer,
    /// An underfed job whose logging thread is blocked writing to the NFS home (in D); its input is local.
    NfsLoggingThread,
    /// An optimizer offloaded to the CPU (gradient accumulation 8): the main thread runs AdamW while the GPU waits.
    CpuOffload,
    /// A young process compiling its model (`torch.compile`) with inductor's compile workers alive.
    CompileWarmup,
    /// Eight `DataLoader` workers confined to 2 CPUs by `taskset` while the other cores idle.
    PinnedCpus,
    /// Ten pegged training workers beside four idle persistent workers of the evaluation loader.
    EvalWorkersIdle,
    /// Eight `DataLoader` workers blocked reading their shards from NFS.
    NfsReadStall,
    /// A bursty inference server: 1.6 GiB held, kernels one second in nine, listening on port 8000 with connections.
    Serving,
    /// A torchrun rank computing evaluation metrics on the CPU: no GPU work, its main thread at 100 %.
    RankCpuBusy,
    /// A torchrun rank whose all-reduce runs over PCIe: traffic both ways alike, SM activity low, the main thread
    /// spinning in a synchronize.
    RankComm,
    /// One rank (of 16, on several nodes) starved by storage reads while NCCL's spinning kernels keep its
    /// utilization at 70 %: SM activity 5 %.
    RankSpinInput,
    /// A job whose host PID is outside gpusight's PID namespace (gpusight in a container without `--pid=host`).
    Unseen,
    /// A job flat out on a 1g slice of a MIG GPU: utilization N/A, whole-GPU SM activity 13 %, its main thread at
    /// 100 % (a PyTorch main thread's normal state).
    MigSlice,
}

mod input_cases;

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
    /// One torchrun job over every GPU; rank 1 (GPU 1) is starved by its single `DataLoader` worker and the
    /// others wait for it in NCCL.
    Straggler,
    /// One torchrun job over every GPU, every rank stuck in a collective.
    Hang,
    /// One torchrun job over every GPU; rank 0 (GPU 0) computes evaluation metrics on the CPU while the others wait
    /// in a barrier.
    Rank0Eval,
    /// One torchrun job over every GPU whose collectives run over PCIe and set its pace.
    CommBound,
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
    pub const NAMES: [&'static str; 41] = [
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
        "gpu-underfed",
        "launch-bound",
        "h2d-copy-bound",
        "cpu-quota-throttled",
        "remote-dataset-stall",
        "clocks-limited",
        "hbm-hot",
        "memory-bound",
        "straggler",
        "hang",
        "nfs-stdout",
        "lustre-warm-decode",
        "inference-server",
        "nfs-logging-thread",
        "cpu-offload",
        "compile-warmup",
        "pinned-cpus",
        "eval-workers-idle",
        "nfs-read-stall",
        "serving",
        "rank0-eval",
        "comm-bound",
        "nccl-spin-input-rank",
        "container-no-pidns",
        "mig-slice-busy",
    ];

    fn workload(self, gpu_index: u32) -> Workload {
        match self {
            // Only the first GPU falls off the bus; the others keep computing, as on a real box.
            Self::Uniform(Workload::Lost) if gpu_index > 0 => Workload::Compute,
            Self::Uniform(workload) => workload,
            Self::Mixed => MIX[gpu_index as usize % MIX.len()],
            Self::Scale => Workload::Compute,
            Self::Straggler if gpu_index == 1 => Workload::RankStarved,
            Self::Straggler => Workload::RankWaiting,
            Self::Hang => Workload::RankHung,
            Self::Rank0Eval if gpu_index == 0 => Workload::RankCpuBusy,
            Self::Rank0Eval => Workload::RankHung,
            Self::CommBound => Workload::RankComm,
        }
    }
}

/// Why a `--synthetic` spec was refused; the messages are for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A scenario name that is not one of [`Scenario::NAMES`].
    #[error("unknown synthetic scenario '{0}'; choose one of: {names}", names = Scenario::NAMES.join(", "))]
    UnknownScenario(String),
    /// A size that is not `GPUS` or `GPUSxPROCS` in range (the size, the whole spec).
    #[error("bad synthetic size '{0}' in '{1}': expected GPUS or GPUSxPROCS, e.g. 8x1000")]
    BadSize(String, String),
}

impl FromStr for Scenario {
    type Err = SpecError;

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
            "gpu-underfed" => Self::Uniform(Workload::GpuUnderfed),
            "launch-bound" => Self::Uniform(Workload::LaunchBound),
            "h2d-copy-bound" => Self::Uniform(Workload::H2dCopyBound),
            "cpu-quota-throttled" => Self::Uniform(Workload::CpuQuota),
            "remote-dataset-stall" => Self::Uniform(Workload::RemoteStall),
            "clocks-limited" => Self::Uniform(Workload::ClocksLimited),
            "hbm-hot" => Self::Uniform(Workload::HbmHot),
            "memory-bound" => Self::Uniform(Workload::MemoryBound),
            "mixed" => Self::Mixed,
            "scale" => Self::Scale,
            "straggler" => Self::Straggler,
            "hang" => Self::Hang,
            "nfs-stdout" => Self::Uniform(Workload::NfsStdout),
            "lustre-warm-decode" => Self::Uniform(Workload::LustreWarmDecode),
            "inference-server" => Self::Uniform(Workload::InferenceServer),
            "nfs-logging-thread" => Self::Uniform(Workload::NfsLoggingThread),
            "cpu-offload" => Self::Uniform(Workload::CpuOffload),
            "compile-warmup" => Self::Uniform(Workload::CompileWarmup),
            "pinned-cpus" => Self::Uniform(Workload::PinnedCpus),
            "eval-workers-idle" => Self::Uniform(Workload::EvalWorkersIdle),
            "nfs-read-stall" => Self::Uniform(Workload::NfsReadStall),
            "serving" => Self::Uniform(Workload::Serving),
            "rank0-eval" => Self::Rank0Eval,
            "comm-bound" => Self::CommBound,
            "nccl-spin-input-rank" => Self::Uniform(Workload::RankSpinInput),
            "container-no-pidns" => Self::Uniform(Workload::Unseen),
            "mig-slice-busy" => Self::Uniform(Workload::MigSlice),
            other => return Err(SpecError::UnknownScenario(other.to_owned())),
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
    /// The machine's hostname (`--hostname`, `NODE_NAME`); `synthetic-SCENARIO` when `None`.
    pub hostname: Option<String>,
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
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        let (name, size) = text.split_once(':').unwrap_or((text, ""));
        let scenario: Scenario = name.parse()?;
        let default_gpus = match scenario {
            Scenario::Mixed | Scenario::Scale | Scenario::Uniform(Workload::Churn) => 8,
            Scenario::Straggler | Scenario::Hang | Scenario::Rank0Eval | Scenario::CommBound => 2,
            Scenario::Uniform(_) => 1,
        };
        let bad_size = || SpecError::BadSize(size.to_owned(), text.to_owned());
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
            hostname: None,
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
        hostname: spec.hostname.clone().unwrap_or_else(|| format!("synthetic-{}", spec.scenario_name)),
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

/// A reading's centre and spread: each tick draws `centre ± spread` from the scenario's seeded noise (a spread
/// of 0 is a fixed value).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Spread(f64, f64);

/// What one workload looks like on its GPU: one profile per workload (see [`gpu_shape`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct GpuShape {
    util: Spread,
    power_w: Spread,
    temp_c: Spread,
    sm_mhz: Spread,
    bits: u64,
    sm_active: f64,
    tensor: f64,
    dram: f64,
    mem_gib: u64,
    rx_mbps: u32,
    /// The `PCIe` generation and width the link trained to, where not its maximum.
    link_gen: Option<u32>,
    link_width: Option<u32>,
    /// HBM temperature, only where a scenario is about it (the older scenarios leave it N/A).
    mem_temp_c: Option<u32>,
}

const fn fixed(value: f64) -> Spread {
    Spread(value, 0.0)
}

/// A GPU that does nothing; idle links downshift on purpose, which is never a finding.
const IDLE_GPU: GpuShape = GpuShape {
    util: fixed(0.0),
    power_w: Spread(72.0, 3.0),
    temp_c: Spread(31.0, 1.0),
    sm_mhz: fixed(345.0),
    bits: throttle::GPU_IDLE,
    sm_active: 0.0,
    tensor: 0.0,
    dram: 0.0,
    mem_gib: 0,
    rx_mbps: 0,
    link_gen: Some(1),
    link_width: None,
    mem_temp_c: None,
};

/// The base of the profiles below: clocks at the maximum, no throttle reason, the link at its maximum.
const WAITING_GPU: GpuShape = GpuShape { sm_mhz: fixed(1980.0), bits: 0, link_gen: None, ..IDLE_GPU };

/// Dense matrix products at the power cap.
const COMPUTE_GPU: GpuShape = GpuShape {
    util: Spread(99.0, 1.0),
    power_w: Spread(692.0, 6.0),
    temp_c: Spread(66.0, 2.0),
    sm_mhz: Spread(1500.0, 40.0),
    bits: throttle::SW_POWER_CAP,
    sm_active: 96.0,
    tensor: 93.0,
    dram: 16.0,
    mem_gib: 42,
    rx_mbps: 60,
    ..WAITING_GPU
};

const INPUT_BOUND_GPU: GpuShape = GpuShape {
    util: Spread(5.0, 4.0),
    power_w: Spread(150.0, 10.0),
    temp_c: Spread(41.0, 1.0),
    sm_active: 3.0,
    tensor: 2.0,
    dram: 0.6,
    mem_gib: 12,
    rx_mbps: 380,
    ..WAITING_GPU
};

const CPU_BOUND_GPU: GpuShape = GpuShape {
    util: Spread(2.0, 2.0),
    power_w: Spread(127.0, 5.0),
    temp_c: Spread(38.0, 1.0),
    sm_active: 1.0,
    tensor: 1.0,
    dram: 0.2,
    mem_gib: 9,
    rx_mbps: 5,
    ..WAITING_GPU
};

const PCIE_DOWNGRADED_GPU: GpuShape = GpuShape {
    util: Spread(85.0, 5.0),
    power_w: Spread(520.0, 20.0),
    temp_c: Spread(60.0, 2.0),
    sm_mhz: fixed(1755.0),
    sm_active: 80.0,
    tensor: 70.0,
    dram: 12.0,
    mem_gib: 30,
    rx_mbps: 9000,
    link_gen: Some(3),
    link_width: Some(8),
    ..WAITING_GPU
};

const IDLE_HOLDER_GPU: GpuShape =
    GpuShape { power_w: Spread(119.0, 3.0), temp_c: Spread(34.0, 1.0), mem_gib: 20, ..WAITING_GPU };

const LEAK_GPU: GpuShape = GpuShape {
    util: Spread(35.0, 5.0),
    power_w: Spread(260.0, 10.0),
    temp_c: Spread(45.0, 1.0),
    sm_active: 30.0,
    tensor: 25.0,
    dram: 5.0,
    mem_gib: 2,
    rx_mbps: 200,
    ..WAITING_GPU
};

const LOADER_GPU: GpuShape = GpuShape {
    util: Spread(20.0, 6.0),
    power_w: Spread(283.0, 20.0),
    temp_c: Spread(48.0, 1.0),
    sm_active: 18.0,
    tensor: 15.0,
    dram: 3.0,
    mem_gib: 14,
    rx_mbps: 1200,
    ..WAITING_GPU
};

const WRITER_GPU: GpuShape = GpuShape {
    util: Spread(20.0, 5.0),
    power_w: Spread(200.0, 10.0),
    temp_c: Spread(44.0, 1.0),
    sm_active: 15.0,
    tensor: 12.0,
    dram: 2.0,
    mem_gib: 40,
    rx_mbps: 20,
    ..WAITING_GPU
};

const CHURN_GPU: GpuShape = GpuShape {
    util: Spread(60.0, 30.0),
    power_w: Spread(400.0, 80.0),
    temp_c: Spread(55.0, 5.0),
    sm_mhz: fixed(1800.0),
    sm_active: 50.0,
    tensor: 40.0,
    dram: 8.0,
    mem_gib: 24,
    rx_mbps: 400,
    ..WAITING_GPU
};

/// Waits with no cause the rules can name: a process that sleeps between small steps.
const UNDERFED_GPU: GpuShape = GpuShape {
    util: Spread(18.0, 4.0),
    power_w: Spread(180.0, 10.0),
    temp_c: Spread(42.0, 1.0),
    sm_active: 12.0,
    tensor: 8.0,
    dram: 3.0,
    mem_gib: 30,
    rx_mbps: 300,
    ..WAITING_GPU
};

/// A kernel running most of the time by NVML's count, but tiny ones: SM activity a small fraction of it.
const LAUNCH_BOUND_GPU: GpuShape = GpuShape {
    util: Spread(72.0, 5.0),
    power_w: Spread(210.0, 10.0),
    temp_c: Spread(45.0, 1.0),
    sm_active: 6.0,
    tensor: 1.0,
    dram: 2.0,
    mem_gib: 8,
    rx_mbps: 20,
    ..WAITING_GPU
};

/// Host-to-device copies near the Gen5 x16 link's 63 GB/s while the SMs idle.
const H2D_GPU: GpuShape = GpuShape {
    util: Spread(6.0, 3.0),
    power_w: Spread(165.0, 8.0),
    temp_c: Spread(40.0, 1.0),
    sm_active: 3.0,
    tensor: 1.0,
    dram: 4.0,
    mem_gib: 24,
    rx_mbps: 46_000,
    ..WAITING_GPU
};

/// A `DataLoader` job that cannot keep its GPU busy (its CPU quota, or its remote dataset).
const STARVED_LOADER_GPU: GpuShape = GpuShape {
    util: Spread(22.0, 6.0),
    power_w: Spread(230.0, 15.0),
    temp_c: Spread(44.0, 1.0),
    sm_active: 16.0,
    tensor: 13.0,
    dram: 3.0,
    mem_gib: 40,
    rx_mbps: 900,
    ..WAITING_GPU
};

/// Busy at 1200 MHz of 1980 with no power or thermal reason: clocks locked (`nvidia-smi -lgc`).
const CLOCKS_LIMITED_GPU: GpuShape = GpuShape {
    power_w: Spread(430.0, 10.0),
    temp_c: Spread(55.0, 2.0),
    sm_mhz: fixed(1200.0),
    bits: 0,
    sm_active: 95.0,
    tensor: 90.0,
    ..COMPUTE_GPU
};

/// Busy, DRAM near its bandwidth, tensor cores idle: an embedding- or elementwise-heavy job.
const MEMORY_BOUND_GPU: GpuShape = GpuShape {
    util: Spread(98.0, 2.0),
    power_w: Spread(480.0, 15.0),
    temp_c: Spread(58.0, 2.0),
    sm_mhz: fixed(1980.0),
    bits: 0,
    sm_active: 88.0,
    tensor: 4.0,
    dram: 86.0,
    mem_gib: 70,
    ..COMPUTE_GPU
};

/// A rank waiting for a slower one in NCCL: the collective's kernels keep utilization near 100 % while few SMs
/// work (what the H200 showed for the waiting rank of a 2-rank `ResNet-50` job).
const RANK_WAITING_GPU: GpuShape = GpuShape {
    util: Spread(98.0, 1.0),
    power_w: Spread(180.0, 8.0),
    temp_c: Spread(52.0, 1.0),
    sm_active: 24.0,
    tensor: 6.0,
    dram: 4.0,
    mem_gib: 38,
    rx_mbps: 150,
    ..WAITING_GPU
};

/// The rank that sets the pace, fed by one `DataLoader` worker: 8 % utilization and 9 % SM activity, as on two
/// H200s (docs/validation.md).
const RANK_STARVED_GPU: GpuShape = GpuShape {
    util: Spread(8.0, 4.0),
    power_w: Spread(183.0, 8.0),
    temp_c: Spread(45.0, 1.0),
    sm_active: 9.0,
    tensor: 12.0,
    dram: 3.0,
    mem_gib: 38,
    rx_mbps: 40,
    ..WAITING_GPU
};

/// A rank stuck in a collective: a spinning kernel (one SM per NCCL channel: 18 % SM activity at idle power on an
/// H200), no work, no traffic.
const RANK_HUNG_GPU: GpuShape = GpuShape {
    util: fixed(100.0),
    power_w: Spread(124.0, 2.0),
    temp_c: Spread(40.0, 1.0),
    sm_active: 18.0,
    tensor: 0.0,
    dram: 0.2,
    mem_gib: 38,
    rx_mbps: 0,
    ..WAITING_GPU
};

/// A rank whose collectives run over PCIe (no NVLink between the GPUs, or through the host to the network): SM
/// activity low while its link carries 12 GB/s each way.
const RANK_COMM_GPU: GpuShape = GpuShape {
    util: Spread(60.0, 4.0),
    power_w: Spread(260.0, 10.0),
    temp_c: Spread(50.0, 1.0),
    sm_active: 22.0,
    tensor: 15.0,
    dram: 6.0,
    mem_gib: 38,
    rx_mbps: 12_000,
    ..WAITING_GPU
};

/// An input-starved rank of a job over several nodes: NCCL's kernels spin through its waits, so utilization reads
/// 70 % while SM activity is 5 %.
const RANK_SPIN_INPUT_GPU: GpuShape =
    GpuShape { util: Spread(70.0, 5.0), sm_active: 5.0, tensor: 3.0, mem_gib: 30, ..INPUT_BOUND_GPU };

/// A 1g slice flat out on a MIG H200: a seventh of the SMs, 13 % of the whole GPU's SM activity.
const MIG_SLICE_GPU: GpuShape = GpuShape {
    util: fixed(0.0),
    power_w: Spread(190.0, 8.0),
    temp_c: Spread(42.0, 1.0),
    sm_active: 13.0,
    tensor: 11.0,
    dram: 4.0,
    mem_gib: 16,
    rx_mbps: 50,
    ..WAITING_GPU
};

/// A bursty inference server: a request keeps the GPU busy one second in nine, it idles in between.
fn serving_gpu(n: u64) -> GpuShape {
    let busy = n % 9 == 4;
    GpuShape {
        util: if busy { Spread(95.0, 3.0) } else { fixed(0.0) },
        power_w: Spread(if busy { 420.0 } else { 110.0 }, 8.0),
        temp_c: Spread(38.0, 1.0),
        sm_active: if busy { 70.0 } else { 0.0 },
        tensor: if busy { 40.0 } else { 0.0 },
        dram: if busy { 10.0 } else { 0.0 },
        mem_gib: 2,
        rx_mbps: if busy { 30 } else { 0 },
        ..WAITING_GPU
    }
}

/// The profile of a workload's GPU at tick `n`, `secs` seconds into the run.
fn gpu_shape(workload: Workload, n: u64, secs: u64) -> GpuShape {
    use Workload as W;
    match workload {
        W::Idle => IDLE_GPU,
        W::Compute | W::Lost | W::HwBlip | W::EccCorrected => COMPUTE_GPU,
        W::InputBound => INPUT_BOUND_GPU,
        W::CpuBound => CPU_BOUND_GPU,
        W::Thermal => thermal_gpu(n),
        W::PcieDowngraded => PCIE_DOWNGRADED_GPU,
        W::IdleHolder => IDLE_HOLDER_GPU,
        // GPU memory grows by 1 GiB every 2 s, up to 120 GiB more.
        W::Leak => GpuShape { mem_gib: LEAK_GPU.mem_gib + (secs / 2).min(120), ..LEAK_GPU },
        W::Loader => LOADER_GPU,
        W::Writer => WRITER_GPU,
        W::Churn => CHURN_GPU,
        W::GpuUnderfed => UNDERFED_GPU,
        W::LaunchBound => LAUNCH_BOUND_GPU,
        W::H2dCopyBound => H2D_GPU,
        W::CpuQuota | W::RemoteStall => STARVED_LOADER_GPU,
        W::ClocksLimited => CLOCKS_LIMITED_GPU,
        W::HbmHot => GpuShape { mem_temp_c: Some(92), ..COMPUTE_GPU },
        W::MemoryBound => MEMORY_BOUND_GPU,
        W::RankWaiting => RANK_WAITING_GPU,
        W::RankStarved => RANK_STARVED_GPU,
        W::RankHung => RANK_HUNG_GPU,
        W::Serving => serving_gpu(n),
        W::RankCpuBusy => GpuShape { mem_gib: 38, ..WAITING_GPU },
        W::RankComm => RANK_COMM_GPU,
        W::RankSpinInput => RANK_SPIN_INPUT_GPU,
        W::Unseen => UNDERFED_GPU,
        W::MigSlice => MIG_SLICE_GPU,
        _ => input_cases::gpu_shape(workload).unwrap_or(WAITING_GPU),
    }
}

/// Busy and hot: thermal slowdown three ticks of four.
fn thermal_gpu(n: u64) -> GpuShape {
    let hot = !n.is_multiple_of(4);
    GpuShape {
        util: Spread(98.0, 2.0),
        power_w: Spread(560.0, 20.0),
        temp_c: Spread(89.0, 1.5),
        sm_mhz: Spread(if hot { 1050.0 } else { 1410.0 }, 0.0),
        bits: if hot { throttle::SW_THERMAL_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN } else { throttle::SW_POWER_CAP },
        sm_active: 90.0,
        tensor: 85.0,
        dram: 14.0,
        mem_gib: 40,
        rx_mbps: 50,
        link_gen: None,
        link_width: None,
        mem_temp_c: None,
    }
}

fn gpu_tick(spec: &SyntheticSpec, info: &GpuInfo, workload: Workload, n: u64, at_ms: UnixMs) -> GpuTick {
    if workload == Workload::Lost && n >= LOST_AFTER_TICKS {
        return GpuTick { index: info.index, state: GpuState::Lost, ..GpuTick::default() };
    }
    let seed = spec.seed ^ u64::from(info.index) << 32;
    let j = |stream, s: Spread| jitter(seed, n, stream, s.0, s.1);
    let shape = gpu_shape(workload, n, (at_ms - spec.start_ms) / 1000);
    let util = j(0, shape.util);
    let power_w = j(1, shape.power_w);
    let bits =
        if workload == Workload::HwBlip && n == BLIP_TICK { shape.bits | throttle::HW_SLOWDOWN } else { shape.bits };
    let corrected = u64::from(workload == Workload::EccCorrected && n >= BLIP_TICK);
    let reserved = 615 * MIB;
    let mem_gib = shape.mem_gib;
    let used = (mem_gib * GIB + if mem_gib > 0 { 560 * MIB } else { 0 }).min(H200_MEM_BYTES - reserved);
    let rx = f64::from(shape.rx_mbps);
    let (pcie_gen, pcie_width) = (shape.link_gen.or(info.max_pcie_gen), shape.link_width.or(info.max_pcie_width));
    // MIG leaves the whole GPU's utilization N/A; collectives send what they receive.
    let mig = info.mig_enabled == Some(true);
    let tx_share = if workload == Workload::RankComm { 1.0 } else { 0.1 };
    GpuTick {
        index: info.index,
        state: GpuState::Ok,
        util_pct: (!mig).then_some(util.min(100)),
        mem_util_pct: (!mig).then_some((util / 4).min(100)),
        mem_used_bytes: Some(used),
        mem_reserved_bytes: Some(reserved),
        mem_free_bytes: Some(H200_MEM_BYTES - reserved - used),
        power_mw: Some(power_w * 1000),
        power_limit_mw: info.power_limit_default_mw,
        temp_c: Some(j(2, shape.temp_c)),
        sm_clock_mhz: Some(j(3, shape.sm_mhz)),
        mem_clock_mhz: Some(3201),
        throttle_bits: Some(bits),
        pstate: Some(if workload == Workload::Idle { 8 } else { 0 }),
        pcie_gen,
        pcie_width,
        pcie_rx_kbps: Some(jitter(seed, n, 4, rx * 1000.0, rx * 50.0)),
        pcie_tx_kbps: Some(jitter(seed, n, 5, rx * 1000.0 * tx_share, rx * 50.0 * tx_share)),
        pcie_replay_count: Some(1),
        energy_mj: Some(1_000_000_000 + n * u64::from(power_w) * spec.interval_ms),
        throttle_ns: Some(throttle_counters(workload, bits, n * spec.interval_ms * 1_000_000)),
        gpm: info.gpm_supported.then(|| gpm_metrics(seed, n, &shape, util)),
        ecc: Some(crate::sample::EccCounts {
            volatile_corrected: Some(corrected),
            volatile_uncorrected: Some(0),
            aggregate_corrected: Some(corrected),
            aggregate_uncorrected: Some(0),
        }),
        remapped_rows: Some(crate::sample::RemappedRows::default()),
        retired_pages_pending: Some(false),
        enc_util_pct: Some(0),
        dec_util_pct: Some(0),
        fan_pct: None,
        mem_temp_c: shape.mem_temp_c,
        nvlink_rx_mib_s: nvlink_mib_s(info, workload),
        nvlink_tx_mib_s: nvlink_mib_s(info, workload),
    }
}

/// NVLink traffic (MiB/s, each way) of the ranks of the multi-GPU scenarios where GPM reads it: the gradients'
/// all-reduce while the job runs, nothing while it hangs. The other scenarios leave it N/A, as they were recorded.
fn nvlink_mib_s(info: &GpuInfo, workload: Workload) -> Option<u32> {
    let rate = match workload {
        Workload::RankWaiting | Workload::RankStarved => 900,
        Workload::RankHung => 0,
        _ => return None,
    };
    info.gpm_supported.then_some(rate)
}

/// The driver's cumulative throttle counters after `elapsed_ns`: a reason in `bits` counts all the time, thermal
/// three quarters of it.
fn throttle_counters(workload: Workload, bits: u64, elapsed_ns: u64) -> ThrottleCounters {
    let thermal = if workload == Workload::Thermal { Some(elapsed_ns * 3 / 4) } else { Some(0) };
    ThrottleCounters {
        sw_power_cap_ns: Some(if bits & throttle::SW_POWER_CAP != 0 { elapsed_ns } else { 0 }),
        sync_boost_ns: Some(0),
        sw_thermal_ns: thermal,
        hw_thermal_ns: thermal,
        hw_power_brake_ns: Some(0),
    }
}

#[expect(clippy::cast_possible_truncation, reason = "percentages capped at 100 fit an f32")]
fn gpm_metrics(seed: u64, n: u64, shape: &GpuShape, util: u32) -> GpmMetrics {
    let f = |stream, base: f64| (f64::from(jitter(seed, n, stream, base * 10.0, base)) / 10.0).min(100.0) as f32;
    GpmMetrics {
        sm_active_pct: Some(f(6, shape.sm_active)),
        sm_occupancy_pct: Some(f(7, shape.sm_active * 0.15)),
        tensor_active_pct: Some(f(8, shape.tensor)),
        dram_active_pct: Some(f(9, shape.dram)),
        gr_engine_active_pct: Some(f(10, f64::from(util))),
    }
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
        cgroup_cpu: None,
        remote_waits: None,
        remote_files: None,
        job: None,
        fs_waits: None,
        write_waits: None,
        serving: None,
    }
}

/// The input states of the input-bound process over ten reads on the real H200.
const INPUT_STATES: &[u8] = b"RDRRDDRDRR";

/// What a workload adds to the host's load.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LoadShape {
    busy_cores: f64,
    iowait_cores: f64,
    psi_io: f32,
    psi_cpu: f32,
}

const NO_LOAD: LoadShape = LoadShape { busy_cores: 0.0, iowait_cores: 0.0, psi_io: 0.0, psi_cpu: 0.0 };

/// A `DataLoader` worker child of the job.
#[derive(Debug, Clone, Copy, PartialEq)]
struct WorkerShape {
    state: char,
    cpu_pct: f32,
    read_bytes_per_s: u64,
}

/// Where the job's input comes from, for the scenarios about it (all `None` in the older scenarios).
#[derive(Debug, Clone, Copy, PartialEq)]
struct InputShape {
    /// The job's cgroup: (path, quota in CPUs, share of periods throttled %).
    cgroup: Option<(&'static str, f32, f32)>,
    /// Per worker: threads in a network wait, and established TCP connections.
    worker_remote: Option<(u32, u32)>,
}

const LOCAL_INPUT: InputShape = InputShape { cgroup: None, worker_remote: None };

/// The training job of one GPU: a launcher shell, the GPU process, and its `DataLoader` workers.
#[derive(Debug, Clone, Copy, PartialEq)]
struct JobShape {
    name: &'static str,
    cmdline: &'static str,
    /// Scheduler states, one per tick, cycled.
    states: &'static [u8],
    cpu_pct: f32,
    /// Read rate, MiB/s (jitter stream 20), and write rate (stream 21; `None`: 0 B/s).
    read_mib: Spread,
    write_mib: Option<Spread>,
    /// Seconds it has run when the scenario starts.
    age_s: u64,
    load: LoadShape,
    workers: &'static [WorkerShape],
    input: InputShape,
}

const COMPUTE_JOB: JobShape = JobShape {
    name: "python",
    cmdline: "python train.py --model llama-8b --batch-size 16 --bf16",
    states: b"R",
    cpu_pct: 100.0,
    read_mib: fixed(0.0),
    write_mib: None,
    age_s: 3600,
    load: LoadShape { busy_cores: 1.0, psi_io: 2.2, ..NO_LOAD },
    workers: &[],
    input: LOCAL_INPUT,
};

/// The job each workload runs, if any (`idle` and `churn` have none of this shape).
fn job_shape(workload: Workload) -> Option<JobShape> {
    use Workload as W;
    Some(match workload {
        W::Idle | W::Churn => return None,
        W::Compute
        | W::Lost
        | W::Thermal
        | W::PcieDowngraded
        | W::HwBlip
        | W::EccCorrected
        | W::ClocksLimited
        | W::HbmHot
        | W::MemoryBound => COMPUTE_JOB,
        W::InputBound => JobShape {
            cmdline: "python train.py --data /mnt/nfs/imagenet --workers 0",
            states: INPUT_STATES,
            cpu_pct: 35.0,
            read_mib: Spread(380.0, 40.0),
            age_s: 1800,
            load: LoadShape { busy_cores: 0.35, iowait_cores: 0.6, psi_io: 36.8, psi_cpu: 0.0 },
            ..COMPUTE_JOB
        },
        W::CpuBound => JobShape {
            cmdline: "python finetune.py --tokenize-on-the-fly",
            cpu_pct: 99.8,
            age_s: 2400,
            load: LoadShape { busy_cores: 1.0, psi_io: 1.0, psi_cpu: 6.1, ..NO_LOAD },
            ..COMPUTE_JOB
        },
        // The checkpoint writer: in D most samples (the states of the input-bound job), writing 800 MiB/s.
        W::Writer => JobShape {
            cmdline: "python train.py --save-every 5s",
            states: INPUT_STATES,
            cpu_pct: 40.0,
            write_mib: Some(Spread(800.0, 60.0)),
            age_s: 1200,
            load: LoadShape { busy_cores: 0.4, iowait_cores: 0.6, psi_io: 30.0, psi_cpu: 0.0 },
            ..COMPUTE_JOB
        },
        W::IdleHolder => JobShape {
            cmdline: "python -m ipykernel_launcher -f kernel-3f2a.json",
            states: b"S",
            cpu_pct: 0.0,
            age_s: 7200,
            load: NO_LOAD,
            ..COMPUTE_JOB
        },
        W::Leak => JobShape {
            cmdline: "python serve.py --cache-kv",
            cpu_pct: 60.0,
            age_s: 600,
            load: LoadShape { busy_cores: 0.6, ..NO_LOAD },
            ..COMPUTE_JOB
        },
        W::Loader => JobShape {
            cmdline: "python train.py --workers 2",
            states: b"S",
            cpu_pct: 30.0,
            age_s: 900,
            load: LoadShape { busy_cores: 1.3, iowait_cores: 0.3, psi_io: 30.2, psi_cpu: 0.0 },
            workers: &[
                WorkerShape { state: 'R', cpu_pct: 55.0, read_bytes_per_s: 20 * MIB },
                WorkerShape { state: 'D', cpu_pct: 48.0, read_bytes_per_s: 310 * MIB },
            ],
            ..COMPUTE_JOB
        },
        W::RankWaiting | W::RankStarved | W::RankHung | W::RankCpuBusy | W::RankComm | W::RankSpinInput => {
            return rank_job(workload);
        }
        // A server: asleep between requests; a job seen from a container; a job flat out on a MIG slice.
        W::Serving => JobShape {
            cmdline: "python serve.py --model resnet50 --port 8000",
            states: b"S",
            cpu_pct: 3.0,
            age_s: 3600,
            load: LoadShape { busy_cores: 0.1, ..NO_LOAD },
            ..COMPUTE_JOB
        },
        W::Unseen => JobShape { cmdline: "python train.py", states: b"S", cpu_pct: 45.0, ..COMPUTE_JOB },
        W::MigSlice => JobShape { cmdline: "python train.py --model resnet18", ..COMPUTE_JOB },
        _ if input_cases::job(workload).is_some() => return input_cases::job(workload),
        _ => return host_wait_job(workload),
    })
}

/// Eight `DataLoader` workers, each at a quarter of a core: what a 2-CPU quota leaves them.
const QUOTA_WORKERS: &[WorkerShape] = &[WorkerShape { state: 'R', cpu_pct: 25.0, read_bytes_per_s: 0 }; 8];

/// Eight `DataLoader` workers asleep most of the time, waiting for their HTTP answers.
const REMOTE_WORKERS: &[WorkerShape] = &[WorkerShape { state: 'S', cpu_pct: 9.0, read_bytes_per_s: 0 }; 8];

/// Twelve `DataLoader` workers that keep up: mostly asleep.
const IDLE_WORKERS: &[WorkerShape] = &[WorkerShape { state: 'S', cpu_pct: 6.0, read_bytes_per_s: 2 * MIB }; 12];

/// The one `DataLoader` worker of the starved rank, pegged.
const ONE_PEGGED_WORKER: &[WorkerShape] = &[WorkerShape { state: 'R', cpu_pct: 99.5, read_bytes_per_s: 3 * MIB }];

/// The ranks of a torchrun job over several GPUs.
fn rank_job(workload: Workload) -> Option<JobShape> {
    use Workload as W;
    let rank = JobShape {
        cmdline: "/usr/bin/python3 -u train_ddp.py --arch resnet50 --workers 12",
        states: b"S",
        cpu_pct: 40.0,
        age_s: 900,
        load: LoadShape { busy_cores: 1.2, psi_io: 1.0, psi_cpu: 2.0, ..NO_LOAD },
        workers: IDLE_WORKERS,
        ..COMPUTE_JOB
    };
    Some(match workload {
        W::RankWaiting | W::RankHung => rank,
        W::RankStarved => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --arch resnet50 --workers 1",
            cpu_pct: 30.0,
            load: LoadShape { busy_cores: 1.4, psi_io: 1.0, psi_cpu: 4.0, ..NO_LOAD },
            workers: ONE_PEGGED_WORKER,
            ..rank
        },
        // Rank 0's evaluation: the main thread computes metrics on the CPU; its workers wait for the next epoch.
        W::RankCpuBusy => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --arch resnet50 --workers 12 --eval-on-rank0",
            states: b"R",
            cpu_pct: 100.0,
            ..rank
        },
        // The main thread spins in a synchronize while the all-reduce crosses PCIe.
        W::RankComm => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --arch vit-h --workers 8",
            states: b"R",
            cpu_pct: 100.0,
            ..rank
        },
        W::RankSpinInput => JobShape {
            cmdline: "/usr/bin/python3 -u train_ddp.py --data /mnt/nfs/imagenet --workers 0",
            states: INPUT_STATES,
            cpu_pct: 35.0,
            read_mib: Spread(380.0, 40.0),
            load: LoadShape { busy_cores: 0.35, iowait_cores: 0.6, psi_io: 36.8, psi_cpu: 0.0 },
            workers: &[],
            ..rank
        },
        _ => return None,
    })
}

/// Makes the job of the one GPU rank 5 of a torchrun job over 16 ranks whose master is another node.
fn make_remote_rank(slot: &Slot<'_>, tick: &mut Tick) {
    let main = slot.base_pid() + 1;
    for p in tick.processes.iter_mut().filter(|p| p.pid == main) {
        p.job = Some(crate::sample::JobInfo {
            key: "torch:10.0.0.1:29500/none".to_owned(),
            rank: Some(5),
            local_rank: Some(0),
            world_size: Some(16),
            launcher: Some("torchrun".to_owned()),
            master: Some("10.0.0.1:29500".to_owned()),
            ..crate::sample::JobInfo::default()
        });
    }
}

/// The scenarios whose GPU process is seen differently: a server's listening port, a process outside gpusight's
/// PID namespace (only its PID is known, as the host sampler marks it), a MIG slice's per-process utilization
/// (N/A, as the whole GPU's).
fn adjust_seen(slot: &Slot<'_>, workload: Workload, tick: &mut Tick) {
    let main = slot.base_pid() + 1;
    match workload {
        Workload::Serving => {
            let serving = crate::sample::Serving { ports: vec![8000], connections: 3 };
            tick.processes.iter_mut().filter(|p| p.pid == main).for_each(|p| p.serving = Some(serving.clone()));
        }
        Workload::Unseen => {
            tick.processes.retain(|p| p.pid != main && p.ppid != Some(main) && p.pid != slot.base_pid());
            tick.processes.push(HostProcess {
                pid: main,
                unreadable: Some(crate::host::OUTSIDE_NAMESPACE.to_owned()),
                ..HostProcess::default()
            });
        }
        Workload::MigSlice => {
            for p in tick.gpu_processes.iter_mut().filter(|p| p.pid == Some(main)) {
                (p.sm_util_pct, p.mem_util_pct) = (None, None);
            }
        }
        _ => {}
    }
}

/// Makes the job of one GPU a rank of one torchrun job over every GPU: GPU 0's launcher runs torchrun and is
/// every rank's parent (the other GPUs' launchers go), every process belongs to one user, and each rank carries
/// its job identity as the host sampler reads it from `/proc/PID/environ`.
fn make_rank(slot: &Slot<'_>, tick: &mut Tick) {
    let (torchrun, launcher, main) = (2000, slot.base_pid(), slot.base_pid() + 1);
    if slot.info.index > 0 {
        tick.processes.retain(|p| p.pid != launcher);
    }
    let rank = slot.info.index;
    for p in tick.processes.iter_mut().filter(|p| (launcher..launcher + 100).contains(&p.pid)) {
        (p.user, p.uid) = (Some("alice".to_owned()), Some(1001));
        if p.pid == torchrun {
            "torchrun".clone_into(&mut p.name);
            p.cmdline =
                format!("/usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node={} train_ddp.py", slot.spec.n_gpus);
        } else if p.pid == main {
            p.ppid = Some(torchrun);
            p.job = Some(crate::sample::JobInfo {
                key: "torch:127.0.0.1:29500/none".to_owned(),
                rank: Some(rank),
                local_rank: Some(rank),
                world_size: Some(slot.spec.n_gpus),
                launcher: Some("torchrun".to_owned()),
                master: Some("127.0.0.1:29500".to_owned()),
                ..crate::sample::JobInfo::default()
            });
        }
    }
}

/// The jobs of the scenarios where a GPU waits on its host: underfed, launches, copies, a CPU quota, a remote dataset.
fn host_wait_job(workload: Workload) -> Option<JobShape> {
    use Workload as W;
    let loader = JobShape {
        cmdline: "python train.py --workers 8 --batch-size 128",
        states: b"S",
        cpu_pct: 35.0,
        age_s: 1500,
        load: LoadShape { busy_cores: 2.3, psi_io: 1.0, psi_cpu: 20.0, ..NO_LOAD },
        workers: QUOTA_WORKERS,
        ..COMPUTE_JOB
    };
    Some(match workload {
        W::GpuUnderfed => JobShape {
            cmdline: "python train.py --config exp42.yaml",
            states: b"S",
            cpu_pct: 45.0,
            age_s: 1200,
            load: LoadShape { busy_cores: 0.5, psi_io: 1.0, ..NO_LOAD },
            ..COMPUTE_JOB
        },
        W::LaunchBound => JobShape {
            cmdline: "python rl_policy.py --batch-size 8",
            load: LoadShape { busy_cores: 1.0, psi_io: 1.0, ..NO_LOAD },
            ..COMPUTE_JOB
        },
        W::H2dCopyBound => JobShape {
            cmdline: "python train.py --pin-memory false --batch-size 4096",
            load: LoadShape { busy_cores: 1.0, psi_io: 1.0, ..NO_LOAD },
            ..COMPUTE_JOB
        },
        W::CpuQuota => JobShape {
            input: InputShape { cgroup: Some(("/kubepods.slice/pod-7f3a/train", 2.0, 72.0)), ..LOCAL_INPUT },
            ..loader
        },
        W::RemoteStall => JobShape {
            cmdline: "python train.py --data https://datasets.internal/imagenet --workers 8",
            load: LoadShape { busy_cores: 1.1, psi_io: 1.0, ..NO_LOAD },
            workers: REMOTE_WORKERS,
            input: InputShape { worker_remote: Some((1, 1)), ..LOCAL_INPUT },
            ..loader
        },
        _ => return None,
    })
}

/// One GPU's slot at one tick: what every process of it is built from.
struct Slot<'a> {
    spec: &'a SyntheticSpec,
    info: &'a GpuInfo,
    n: u64,
    at_ms: UnixMs,
}

impl Slot<'_> {
    fn base_pid(&self) -> u32 {
        2000 + self.info.index * 1000
    }

    fn elapsed_s(&self) -> u64 {
        (self.at_ms - self.spec.start_ms) / 1000
    }

    fn user(&self) -> (&'static str, u32) {
        let users = ["alice", "bob", "carol", "dave"];
        (users[self.info.index as usize % users.len()], 1001 + self.info.index % 4)
    }

    fn process(&self, p: ProcSpec<'_>) -> HostProcess {
        host_process(self.spec, self.info, self.at_ms, p)
    }
}

fn add_processes(
    spec: &SyntheticSpec,
    info: &GpuInfo,
    workload: Workload,
    n: u64,
    at_ms: UnixMs,
    tick: &mut Tick,
    load: &mut HostLoad,
) {
    let slot = Slot { spec, info, n, at_ms };
    if let Some(job) = job_shape(workload) {
        add_job(&slot, &job, tick);
        if matches!(
            workload,
            Workload::RankWaiting
                | Workload::RankStarved
                | Workload::RankHung
                | Workload::RankCpuBusy
                | Workload::RankComm
        ) {
            make_rank(&slot, tick);
        }
        if workload == Workload::RankSpinInput {
            make_remote_rank(&slot, tick);
        }
        adjust_seen(&slot, workload, tick);
        load.busy_cores += job.load.busy_cores;
        load.iowait_cores += job.load.iowait_cores;
        load.psi_io = load.psi_io.max(job.load.psi_io);
        load.psi_cpu = load.psi_cpu.max(job.load.psi_cpu);
        input_cases::refine(workload, &slot, tick);
    }
    if workload == Workload::Churn {
        add_churn(spec, info, n, at_ms, tick);
        load.busy_cores += f64::from(CHURN_SLOTS) * 0.5;
    }
    add_scale_extras(&slot, tick);
}

/// The job of one GPU: its launcher, the GPU process, its workers, and what NVML lists.
fn add_job(slot: &Slot<'_>, job: &JobShape, tick: &mut Tick) {
    let (user, uid) = slot.user();
    let (launcher_pid, main_pid) = (slot.base_pid(), slot.base_pid() + 1);
    let elapsed_s = slot.elapsed_s();
    let seed = slot.spec.seed ^ u64::from(slot.info.index) << 40;
    let gpu = tick.gpu(slot.info.index).cloned().unwrap_or_default();
    let gpu_used_bytes = gpu.mem_used_bytes.unwrap_or(0).saturating_sub(560 * MIB);
    let sm = gpu.util_pct.unwrap_or(0).saturating_sub(1);
    let common = ProcSpec {
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
        started_secs_before: job.age_s + 5 + elapsed_s,
    };
    let state = char::from(job.states[usize::try_from(slot.n).unwrap_or(0) % job.states.len()]);
    let read = u64::from(jitter(seed, slot.n, 20, job.read_mib.0, job.read_mib.1)) * MIB;
    tick.processes.push(slot.process(ProcSpec { cmdline: common.cmdline.clone(), ..common }));
    let mut main = slot.process(ProcSpec {
        pid: main_pid,
        ppid: launcher_pid,
        role: ProcessRole::Gpu,
        name: job.name,
        cmdline: job.cmdline.to_owned(),
        state,
        cpu_pct: job.cpu_pct,
        rss_bytes: 6 * GIB,
        read_bytes_per_s: read,
        started_secs_before: job.age_s + elapsed_s,
        ..common
    });
    if let Some(write) = job.write_mib {
        main.write_bytes_per_s = Some(u64::from(jitter(seed, slot.n, 21, write.0, write.1)) * MIB);
    }
    with_input(&mut main, &job.input, false);
    tick.processes.push(main);
    tick.gpu_processes.push(GpuProcess {
        gpu_index: slot.info.index,
        pid: Some(main_pid),
        kind: ProcessKind::Compute,
        used_gpu_memory_bytes: Some(gpu_used_bytes),
        sm_util_pct: Some(sm),
        mem_util_pct: Some(sm / 4),
        enc_util_pct: Some(0),
        dec_util_pct: Some(0),
    });
    for (k, worker) in job.workers.iter().enumerate() {
        let mut child = slot.process(ProcSpec {
            pid: main_pid + 1 + u32::try_from(k).unwrap_or(0),
            ppid: main_pid,
            role: ProcessRole::Child,
            user,
            uid,
            name: "pt_data_worker",
            cmdline: job.cmdline.to_owned(),
            state: worker.state,
            cpu_pct: worker.cpu_pct,
            rss_bytes: 900 * MIB,
            read_bytes_per_s: worker.read_bytes_per_s,
            started_secs_before: job.age_s - 10 + elapsed_s,
        });
        with_input(&mut child, &job.input, true);
        tick.processes.push(child);
    }
}

/// Sets what the scenario says about a process's input path: its cgroup's quota and throttling, and for a worker
/// its network waits and connections. The older scenarios set none of it.
fn with_input(process: &mut HostProcess, input: &InputShape, worker: bool) {
    if let Some((path, quota_cpus, throttled_pct)) = input.cgroup {
        process.cgroup_cpu = Some(crate::sample::CgroupCpu {
            path: path.to_owned(),
            quota_cpus: Some(quota_cpus),
            cpuset_cpus: None,
            throttled_pct: Some(throttled_pct),
            throttled_ms_per_s: Some(throttled_pct * 10.0),
        });
    }
    if let Some((waits, tcp)) = input.worker_remote {
        process.remote_waits = Some(if worker { waits } else { 0 });
        process.remote_files =
            Some(crate::sample::RemoteFiles { tcp_connections: if worker { tcp } else { 0 }, ..Default::default() });
    }
}

/// Extra processes for scale tests: small compute jobs on this GPU.
fn add_scale_extras(slot: &Slot<'_>, tick: &mut Tick) {
    let users = ["alice", "bob", "carol", "dave"];
    let seed = slot.spec.seed ^ u64::from(slot.info.index) << 40;
    for k in 0..slot.spec.processes_per_gpu {
        let pid = slot.base_pid() + 100 + k;
        let stream = 100 + u64::from(k);
        tick.processes.push(slot.process(ProcSpec {
            pid,
            ppid: 1,
            role: ProcessRole::Gpu,
            user: users[k as usize % users.len()],
            uid: 1001 + k % 4,
            name: "python",
            cmdline: format!("python worker.py --shard {k}"),
            state: if k % 3 == 0 { 'R' } else { 'S' },
            cpu_pct: f32::from(u16::try_from(jitter(seed, slot.n, stream, 20.0, 20.0)).unwrap_or(u16::MAX)),
            rss_bytes: 512 * MIB,
            read_bytes_per_s: 0,
            started_secs_before: 100 + u64::from(k) + slot.elapsed_s(),
        }));
        tick.gpu_processes.push(GpuProcess {
            gpu_index: slot.info.index,
            pid: Some(pid),
            kind: ProcessKind::Compute,
            used_gpu_memory_bytes: Some(256 * MIB),
            sm_util_pct: Some(jitter(seed, slot.n, stream + 1, 5.0, 5.0)),
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
        let cpu = f32::from(u16::try_from(jitter(seed, n, stream, 60.0, 40.0)).unwrap_or(u16::MAX));
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

#[expect(clippy::cast_possible_truncation, reason = "percentages and rates of a synthetic host fit an f32")]
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
        assert!(SyntheticSpec::parse("warp-drive").unwrap_err().to_string().contains("unknown synthetic scenario"));
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
