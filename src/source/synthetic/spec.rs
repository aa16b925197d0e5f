//! The `--synthetic` spec: the workloads a GPU can run, the named scenarios (which workload on which GPU) and
//! `SCENARIO[:GPUS[xPROCS]]` with the knobs read from the environment.

use std::str::FromStr;

use super::DEFAULT_START_MS;
use crate::sample::UnixMs;

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
    /// An inference server answering one short request every 45 s: 14 GiB held, its kernels too short for any
    /// sample, no connection open at any read, one more connection accepted each time.
    ServeRare,
    /// A training job whose caching allocator reserved 97 % of the card and holds it flat (PyTorch, JAX).
    VramCached,
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
    /// A job flat out on a 1g slice of a MIG GPU: utilization N/A, whole-GPU SM activity 13 %, its slice's own SM
    /// activity 97 % (`1g.18gb`, GI 7), its main thread at 100 % (a PyTorch main thread's normal state).
    MigSlice,
    /// A `ResNet` job with 8 `DataLoader` workers on a 16-CPU host that another user's `stress` keeps busy (1,400 % of a
    /// core): the workers are runnable but get 40 % of a core each; nothing waits on I/O.
    CpuContention,
    /// 8 `DataLoader` workers running 36 threads each (an OpenMP pool per worker) on a 16-CPU host with no idle core
    /// and nobody else on it.
    Oversubscribed,
    /// A job restarted every 90 s by the loop that runs it: a new PID with the same command line, its GPU unused for
    /// 10 s between processes and idle through each 15 s start-up.
    CrashLoop,
    /// A job that writes a checkpoint synchronously for 20 s of every minute: its main thread in D writing, its GPU
    /// idle meanwhile.
    CheckpointSync,
    /// A rank of a torchrun job over two nodes whose collectives run over TCP (NCCL's sockets): utilization near
    /// 100 % with SM activity 10 % (the collectives spin), the main thread asleep in sockets and locks, the traffic
    /// on `eth0`.
    NcclTcp,
    /// A job with `num_workers=0`: its main thread decodes JPEGs (95 % of a core, reading 40 MiB/s), its GPU 30 %
    /// busy.
    DecodeMain,
    /// One process whose kernel spins: utilization 100 %, SM activity 3 %, its main thread asleep in the driver.
    SpinKernel,
    /// A process 20 s old loading its checkpoint (GPU memory growing 1.5 GiB/s, utilization 0, no workers) for
    /// another 25 s, then training with 4 `DataLoader` workers.
    StartupLoad,
}

/// How long a `churn` process lives (virtual time).
pub const CHURN_LIFETIME_MS: u64 = 5_000;

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
    /// Two ranks (one per GPU) of a torchrun job over two nodes, its collectives over TCP.
    NcclTcp,
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
    pub const NAMES: [&'static str; 51] = [
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
        "serve-rare",
        "vram-cached",
        "rank0-eval",
        "comm-bound",
        "nccl-spin-input-rank",
        "container-no-pidns",
        "mig-slice-busy",
        "cpu-contention",
        "oversubscribed",
        "crash-loop",
        "checkpoint-sync",
        "nccl-tcp",
        "decode-main",
        "spin-kernel",
        "startup-load",
    ];

    /// The host's CPUs and NUMA nodes: a two-socket box of 32, or a 16-CPU host of one node where the scenario is
    /// about CPUs running out.
    pub(super) fn host_cpus(self) -> (u32, u32) {
        match self {
            Self::Uniform(Workload::CpuContention | Workload::Oversubscribed) => (16, 1),
            _ => (32, 2),
        }
    }

    pub(super) fn workload(self, gpu_index: u32) -> Workload {
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
            Self::NcclTcp => Workload::NcclTcp,
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
    #[error(
        "bad synthetic size '{0}' in '{1}': expected GPUS (1 to 64) or GPUSxPROCS (PROCS for the whole machine, 0 \
         to 100000), e.g. 8x1000"
    )]
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
            "serve-rare" => Self::Uniform(Workload::ServeRare),
            "vram-cached" => Self::Uniform(Workload::VramCached),
            "rank0-eval" => Self::Rank0Eval,
            "comm-bound" => Self::CommBound,
            "nccl-spin-input-rank" => Self::Uniform(Workload::RankSpinInput),
            "container-no-pidns" => Self::Uniform(Workload::Unseen),
            "mig-slice-busy" => Self::Uniform(Workload::MigSlice),
            "cpu-contention" => Self::Uniform(Workload::CpuContention),
            "oversubscribed" => Self::Uniform(Workload::Oversubscribed),
            "crash-loop" => Self::Uniform(Workload::CrashLoop),
            "checkpoint-sync" => Self::Uniform(Workload::CheckpointSync),
            "nccl-tcp" => Self::NcclTcp,
            "decode-main" => Self::Uniform(Workload::DecodeMain),
            "spin-kernel" => Self::Uniform(Workload::SpinKernel),
            "startup-load" => Self::Uniform(Workload::StartupLoad),
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
    /// Milliseconds [`SyntheticSource::next_tick`](super::SyntheticSource#method.next_tick) sleeps before it
    /// returns, like a slow NVML call, so the sampler thread is busy while the UI must stay responsive. A
    /// measurement knob: `parse` sets it from the environment variable [`DELAY_ENV`] (0 when unset); `tick_at`
    /// never sleeps.
    pub slow_ms: u64,
    /// After this many ticks, [`SyntheticSource::next_tick`](super::SyntheticSource#method.next_tick) dies of
    /// SIGSEGV inside a marked GPM call on GPU 0, as a driver library can: the crash path (terminal restore,
    /// message, recording kept) tested without a GPU. `parse` sets it from the environment variable [`CRASH_ENV`].
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
            Scenario::Straggler | Scenario::Hang | Scenario::Rank0Eval | Scenario::CommBound | Scenario::NcclTcp => 2,
            Scenario::Uniform(_) => 1,
        };
        let bad_size = || SpecError::BadSize(crate::text::echo(size), crate::text::echo(text));
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
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_sizes_and_rejects_nonsense() {
        let spec = SyntheticSpec::parse("scale:8x1000").expect("spec");
        assert_eq!((spec.n_gpus, spec.processes_per_gpu), (8, 125));
        assert!(SyntheticSpec::parse("warp-drive").unwrap_err().to_string().contains("unknown synthetic scenario"));
        assert!(SyntheticSpec::parse("idle:0").is_err());
        assert!(SyntheticSpec::parse("idle:2xq").is_err());
    }

    #[test]
    fn the_delay_knob_reads_whole_milliseconds() {
        assert_eq!(delay_ms(None), 0);
        assert_eq!(delay_ms(Some("80")), 80);
        assert_eq!(delay_ms(Some(" 900\n")), 900);
        assert_eq!(delay_ms(Some("slow")), 0, "a malformed value is ignored, not a panic");
    }
}
