//! Plain data that flows from the sources to everything else: what a machine is (`MachineInfo`, read once)
//! and what it did at one moment (`Tick`). A `Snapshot` pairs the two.
//!
//! Every reading that can fail to be read is an `Option`: `None` means "not read" (not supported, no
//! permission, GPU lost) and is shown as N/A; it is never replaced by 0. Units are in the field names.
//! These types are also the recording format (serde). Missing fields read as their defaults (`None`), so a
//! recording from an older gpusight still plays; removing or changing the meaning of a field means bumping
//! [`crate::source::replay::SCHEMA_VERSION`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch, as stamped by the source. All time in the pipeline comes from here;
/// nothing downstream reads the wall clock.
pub type UnixMs = u64;

/// One moment of the machine, with the machine it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The static description of the machine. Shared: it does not change between ticks.
    pub machine: Arc<MachineInfo>,
    /// What was read at this moment.
    pub tick: Tick,
}

/// Where the data comes from. Only the header and help text look at this; no rule or renderer branches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// NVML and /proc on this machine.
    #[default]
    Live,
    /// A recording played back.
    Replay,
    /// A deterministic synthetic scenario.
    Synthetic,
}

/// What a machine is: read once when the source starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MachineInfo {
    pub hostname: String,
    pub source: SourceKind,
    /// A name for the data: the scenario, the recording's file name, or the host.
    pub source_label: String,
    /// NVIDIA driver version, e.g. "580.159.04".
    pub driver_version: Option<String>,
    /// The newest CUDA version the driver supports, as NVML encodes it: 13000 is 13.0.
    pub cuda_driver_version: Option<i32>,
    pub nvml_version: Option<String>,
    /// Whether the NVIDIA Open Kernel Module is loaded (from /proc/driver/nvidia/version).
    pub open_kernel_module: Option<bool>,
    pub kernel_release: Option<String>,
    /// Number of logical CPUs on the host.
    pub n_cpus: usize,
    /// Number of NUMA nodes with CPUs (1 on single-socket hosts and most VMs).
    pub n_numa_nodes: usize,
    pub mem_total_bytes: Option<u64>,
    /// The host's boot time, to turn process start ticks into wall time.
    pub boot_time_ms: Option<UnixMs>,
    pub gpus: Vec<GpuInfo>,
    /// The host CPU's model and frequency (live only, read once by sysinfo; a recording keeps what it saw, and
    /// older recordings and synthetic machines have none). Left out of the JSON when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuIdentity>,
}

/// A CPU as `report` names it: "AMD EPYC 9654 96-Core Processor", 2400 MHz.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CpuIdentity {
    pub model: String,
    /// The first CPU's frequency when gpusight started, in MHz (`None` where the kernel does not say).
    pub mhz: Option<u64>,
}

/// What one GPU is: identity, maxima and settings that do not change while we watch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct GpuInfo {
    /// NVML index.
    pub index: u32,
    pub name: String,
    pub uuid: String,
    /// The PCI bus id in sysfs form, built from the integer fields: `0000:81:00.0`.
    pub pci_bus_id: String,
    /// Architecture name as NVML reports it ("Hopper").
    pub architecture: Option<String>,
    /// CUDA compute capability (major, minor).
    pub compute_capability: Option<(i32, i32)>,
    pub mem_total_bytes: Option<u64>,
    pub max_sm_clock_mhz: Option<u32>,
    pub max_mem_clock_mhz: Option<u32>,
    pub max_pcie_gen: Option<u32>,
    pub max_pcie_width: Option<u32>,
    pub power_limit_default_mw: Option<u32>,
    pub power_limit_min_mw: Option<u32>,
    pub power_limit_max_mw: Option<u32>,
    pub temp_slowdown_c: Option<u32>,
    pub temp_shutdown_c: Option<u32>,
    pub temp_gpu_max_c: Option<u32>,
    /// The memory's maximum operating temperature (`TemperatureThreshold::MemoryMax`), when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temp_mem_max_c: Option<u32>,
    /// NUMA node of the PCI device from sysfs; `None` when the host reports none (-1).
    pub numa_node: Option<u32>,
    /// CPUs local to the GPU (sysfs `local_cpulist`), as a sorted list of CPU ids.
    pub local_cpus: Option<Vec<u32>>,
    pub persistence_mode: Option<bool>,
    pub mig_enabled: Option<bool>,
    pub ecc_enabled: Option<bool>,
    /// Whether a display is attached to this GPU.
    pub display_active: Option<bool>,
    /// Whether the GPU has GPM metrics (Hopper and newer).
    pub gpm_supported: bool,
    /// Active NVLink links of this GPU (0 without NVLink); `None` when unknown.
    pub nvlinks_active: Option<u32>,
    /// How this GPU reaches each other GPU, as `nvidia-smi topo -m` says it.
    pub peers: Vec<GpuPeer>,
}

/// How one GPU reaches another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct GpuPeer {
    /// The other GPU's NVML index.
    pub index: u32,
    /// NVLink links that reach it (directly, or through NVSwitch); 0 when peer-to-peer over NVLink is not possible.
    pub nvlinks: Option<u32>,
    /// The closest PCIe ancestor the two share.
    pub pcie: Option<PciePath>,
}

/// The closest PCIe ancestor two GPUs share, in `nvidia-smi topo -m`'s terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PciePath {
    /// Two GPUs on one board.
    Board,
    /// At most one PCIe bridge (PIX).
    Bridge,
    /// Several PCIe bridges, no host bridge (PXB).
    Bridges,
    /// Through a PCIe host bridge (PHB).
    HostBridge,
    /// Between host bridges within one NUMA node (NODE).
    Node,
    /// Across NUMA nodes, over the CPU interconnect (SYS).
    System,
}

impl PciePath {
    /// `nvidia-smi topo -m`'s code.
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            Self::Board => "BOARD",
            Self::Bridge => "PIX",
            Self::Bridges => "PXB",
            Self::HostBridge => "PHB",
            Self::Node => "NODE",
            Self::System => "SYS",
        }
    }
}

impl GpuPeer {
    /// The connection as `nvidia-smi topo -m` prints it: `NV18` over NVLink, otherwise the PCIe code.
    #[must_use]
    pub fn label(&self) -> String {
        match (self.nvlinks, self.pcie) {
            (Some(n), _) if n > 0 => format!("NV{n}"),
            (_, Some(p)) => p.code().to_owned(),
            _ => "?".to_owned(),
        }
    }
}

/// What was read at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Tick {
    /// When the sample was taken (source's clock).
    pub at_ms: UnixMs,
    /// Per GPU, in the same order as `MachineInfo::gpus`.
    pub gpus: Vec<GpuTick>,
    pub host: HostTick,
    /// One entry per (GPU, process) pair NVML lists.
    pub gpu_processes: Vec<GpuProcess>,
    /// Host details of every GPU process and its relatives (parents up to the session, direct children).
    pub processes: Vec<HostProcess>,
    /// Xid and ECC events seen since the previous tick.
    pub events: Vec<GpuEvent>,
    /// How the sampler itself is doing.
    pub health: SourceHealth,
}

/// The state of one GPU's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GpuState {
    #[default]
    Ok,
    /// NVML said the GPU is lost or needs a reset; we stopped asking it.
    Lost,
    /// The GPU's calls did not answer in time this tick.
    NotAnswering,
}

/// Dynamic readings of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct GpuTick {
    pub index: u32,
    pub state: GpuState,
    /// NVML "GPU utilization": the share of time any kernel ran.
    pub util_pct: Option<u32>,
    /// NVML "memory utilization": the share of time device memory was read or written.
    pub mem_util_pct: Option<u32>,
    pub mem_used_bytes: Option<u64>,
    pub mem_reserved_bytes: Option<u64>,
    pub mem_free_bytes: Option<u64>,
    pub power_mw: Option<u32>,
    /// The enforced power limit, which may be below the default.
    pub power_limit_mw: Option<u32>,
    pub temp_c: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    /// Clock event (throttle) reason bits, see [`throttle`].
    pub throttle_bits: Option<u64>,
    /// Performance state, 0 (max) to 15.
    pub pstate: Option<u32>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
    /// PCIe throughput, read on a slower tier (each read blocks 20 ms).
    pub pcie_rx_kbps: Option<u32>,
    pub pcie_tx_kbps: Option<u32>,
    pub pcie_replay_count: Option<u64>,
    /// Energy since the driver loaded.
    pub energy_mj: Option<u64>,
    /// Cumulative time spent in each throttle reason since the driver loaded.
    pub throttle_ns: Option<ThrottleCounters>,
    /// GPM metrics (Hopper and newer), each 0–100 %.
    pub gpm: Option<GpmMetrics>,
    pub ecc: Option<EccCounts>,
    pub remapped_rows: Option<RemappedRows>,
    pub retired_pages_pending: Option<bool>,
    pub enc_util_pct: Option<u32>,
    pub dec_util_pct: Option<u32>,
    pub fan_pct: Option<u32>,
    /// HBM temperature (NVML field 82, `NVML_FI_DEV_MEMORY_TEMP`); N/A where the driver does not report it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_temp_c: Option<u32>,
    /// NVLink throughput over all links (GPM, Hopper and newer), MiB/s; absent without GPM or NVLink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_rx_mib_s: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_tx_mib_s: Option<u32>,
    /// The GPU's MIG devices when it is in MIG mode (empty otherwise, and in recordings made before they were
    /// read).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigTick>,
    /// Each NVLink link's state and error counters, read on the slow tier (empty without NVLink, and in older
    /// recordings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nvlinks: Vec<NvLinkTick>,
}

/// One NVLink link of a GPU: whether it is up, its version, and its data-link error counters since the driver
/// loaded (they only climb; a climbing one is a link going bad).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct NvLinkTick {
    pub link: u32,
    pub up: bool,
    pub version: Option<u32>,
    /// Flow-control digits received with a CRC error.
    pub crc_flit_errors: Option<u64>,
    /// Transmit replays.
    pub replay_errors: Option<u64>,
    /// Transmit recoveries (the link retrained).
    pub recovery_errors: Option<u64>,
    /// The link's speed, MB/s (10^6 bytes a second) in each direction (NVML field 164, read on the slow tier);
    /// `None` where the driver does not say, and for a link that is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_mb_s: Option<u32>,
    /// Data received and transmitted on this link since the driver loaded, KiB (NVML fields 139 and 138, read on
    /// the medium tier).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_kib: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_kib: Option<u64>,
    /// The receive and transmit rates between the last two reads of those counters, bytes a second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_bytes_s: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_bytes_s: Option<u64>,
}

/// One MIG device of a GPU in MIG mode: a GPU instance with one of its compute instances, as NVML lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MigTick {
    /// NVML's index of the MIG device on its GPU.
    pub index: u32,
    /// The GPU instance id (dcgm-exporter's `GPU_I_ID` label).
    pub gpu_instance_id: Option<u32>,
    pub compute_instance_id: Option<u32>,
    /// The profile, e.g. `1g.18gb` (dcgm-exporter's `GPU_I_PROFILE` label), from the device's name.
    pub profile: Option<String>,
    pub uuid: String,
    pub mem_used_bytes: Option<u64>,
    pub mem_total_bytes: Option<u64>,
    /// The slice's SM activity (GPM of its GPU instance), 0–100 %.
    pub sm_active_pct: Option<f32>,
}

impl MigTick {
    /// `1g.18gb (GI 7)`, or the MIG index when the profile is unknown.
    #[must_use]
    pub fn label(&self) -> String {
        let profile = self.profile.clone().unwrap_or_else(|| format!("MIG {}", self.index));
        match self.gpu_instance_id {
            Some(gi) => format!("{profile} (GI {gi})"),
            None => profile,
        }
    }
}

/// Cumulative nanoseconds in each throttle reason since the driver loaded (NVML field values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ThrottleCounters {
    pub sw_power_cap_ns: Option<u64>,
    pub sync_boost_ns: Option<u64>,
    pub sw_thermal_ns: Option<u64>,
    pub hw_thermal_ns: Option<u64>,
    pub hw_power_brake_ns: Option<u64>,
}

/// GPM (GPU performance monitoring) metrics over the last tick, in percent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct GpmMetrics {
    pub sm_active_pct: Option<f32>,
    pub sm_occupancy_pct: Option<f32>,
    pub tensor_active_pct: Option<f32>,
    pub dram_active_pct: Option<f32>,
    pub gr_engine_active_pct: Option<f32>,
}

/// ECC error counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct EccCounts {
    pub volatile_corrected: Option<u64>,
    pub volatile_uncorrected: Option<u64>,
    pub aggregate_corrected: Option<u64>,
    pub aggregate_uncorrected: Option<u64>,
}

/// Row remapping state (Ampere and newer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RemappedRows {
    pub correctable: u32,
    pub uncorrectable: u32,
    pub pending: bool,
    pub failure: bool,
}

/// Whether a GPU process is a compute or a graphics context (or both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    #[default]
    Compute,
    Graphics,
    ComputeAndGraphics,
}

impl ProcessKind {
    /// One letter, as nvidia-smi and nvitop show it.
    #[must_use]
    pub fn letter(self) -> char {
        match self {
            Self::Compute => 'C',
            Self::Graphics => 'G',
            Self::ComputeAndGraphics => 'X',
        }
    }
}

/// One process on one GPU, as NVML lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct GpuProcess {
    pub gpu_index: u32,
    /// Host PID. `None` when the driver returned an impossible value (the process-info ABI bug).
    pub pid: Option<u32>,
    pub kind: ProcessKind,
    pub used_gpu_memory_bytes: Option<u64>,
    /// Per-process SM utilization over the last sample window.
    pub sm_util_pct: Option<u32>,
    /// Per-process memory-bandwidth utilization.
    pub mem_util_pct: Option<u32>,
    pub enc_util_pct: Option<u32>,
    pub dec_util_pct: Option<u32>,
    /// The GPU and compute instance the process runs on, on a GPU in MIG mode (matches [`MigTick`]'s ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_instance_id: Option<u32>,
}

impl GpuProcess {
    /// The MIG device of `gpu` this process runs on, matched by its GPU and compute instance ids.
    #[must_use]
    pub fn mig_device<'a>(&self, gpu: &'a GpuTick) -> Option<&'a MigTick> {
        let gi = self.gpu_instance_id?;
        gpu.mig.iter().find(|m| {
            m.gpu_instance_id == Some(gi)
                && (self.compute_instance_id.is_none() || m.compute_instance_id == self.compute_instance_id)
        })
    }
}

/// How a host process relates to the GPU processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProcessRole {
    /// It holds a GPU context.
    #[default]
    Gpu,
    /// An ancestor of a GPU process (a launcher: torchrun, bash, python -m).
    Parent,
    /// A child of a GPU process (a DataLoader worker).
    Child,
}

/// Host-side details of a process related to the GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct HostProcess {
    pub pid: u32,
    pub ppid: Option<u32>,
    pub role: ProcessRole,
    pub uid: Option<u32>,
    pub user: Option<String>,
    /// The short name (`comm`).
    pub name: String,
    /// The command line, arguments joined by spaces; empty when unreadable.
    pub cmdline: String,
    /// Scheduler state letter: R, S, D, Z, T, I.
    pub state: Option<char>,
    /// CPU use over the last interval, percent of one core (can exceed 100).
    pub cpu_pct: Option<f32>,
    pub rss_bytes: Option<u64>,
    /// Storage-layer read and write rates over the last interval.
    pub read_bytes_per_s: Option<u64>,
    pub write_bytes_per_s: Option<u64>,
    /// CPUs the process may run on (`Cpus_allowed_list`), sorted.
    pub allowed_cpus: Option<Vec<u32>>,
    /// PID in each nested namespace, outermost first (`NSpid`); more than one entry means a container.
    pub nspid: Option<Vec<u32>>,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22): the identity check before a signal.
    pub start_ticks: Option<u64>,
    /// Start time as wall time, when the boot time is known.
    pub started_at_ms: Option<UnixMs>,
    pub n_threads: Option<u32>,
    /// Threads of this process in uninterruptible sleep (D) at this tick.
    pub threads_in_d: Option<u32>,
    /// Why the details could not be read, when they could not (e.g. "permission denied", "exited").
    pub unreadable: Option<String>,
    /// The thread of this process that used the most CPU over the last interval (read for GPU processes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_thread: Option<ThreadCpu>,
    /// The CPU limits of the process's cgroup and how often they throttled it (GPU processes and children).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_cpu: Option<CgroupCpu>,
    /// Threads of this process asleep in a network, NFS or FUSE wait (`/proc/PID/task/TID/wchan`), read for the
    /// GPU processes and their children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_waits: Option<u32>,
    /// Open regular files on network or FUSE filesystems (`/proc/PID/fd` against `/proc/PID/mountinfo`), read
    /// every few seconds for the GPU processes and their children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_files: Option<RemoteFiles>,
    /// The multi-process job this GPU process belongs to (read for GPU processes only, once per process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<JobInfo>,
    /// Of `remote_waits`, the threads asleep in a network file system or FUSE wait (NFS, Lustre, SMB, Ceph, GPFS,
    /// BeeGFS, 9p, FUSE and virtiofs); the rest wait on a socket. Absent in recordings made before waits were split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_waits: Option<u32>,
    /// Threads asleep waiting for their writes to reach storage (dirty-page throttling, writeback, a journal
    /// commit), read with `remote_waits`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_waits: Option<u32>,
    /// The TCP ports this GPU process listens on and the connections on them (an inference or HTTP server), read
    /// every few seconds for GPU processes that are not ranks of a job; absent when it listens on none or was not
    /// read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<Serving>,
    /// Where its threads spent the time since the previous gather, and what they waited in (see [`ThreadTimes`]);
    /// read for the GPU processes and their descendants, more often while their GPU waits. Absent between gathers,
    /// on the first gather of a process, and in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<ThreadTimes>,
}

/// A GPU process's listening TCP sockets (see [`crate::host::serving`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Serving {
    /// The local ports it listens on, sorted (at most eight).
    pub ports: Vec<u16>,
    /// Connections on those ports at the last read: established, closing, or closed within the last minute
    /// (`TIME_WAIT`): requests served recently.
    pub connections: u32,
    /// Connections accepted on those ports since gpusight began watching the process, a cumulative count: the new
    /// connections seen between reads of its TCP tables and, where the process has a network namespace of its own
    /// (a container), that namespace's `PassiveOpens`, whichever grew more. Absent in recordings made before it
    /// was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<u64>,
}

/// Which job a GPU process belongs to (see [`crate::host::job`]): its rank and what ties it to the other ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct JobInfo {
    /// A stable id shared by every rank of the job: `torch:ADDR:PORT[/RUN_ID]`, `slurm:ID`, `launcher:PID`,
    /// `container:ID`, or `pid:PID` for a process that is a job of its own.
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
    /// The launcher among its ancestors: torchrun, deepspeed, accelerate, srun, mpirun.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
    /// `MASTER_ADDR:MASTER_PORT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master: Option<String>,
    /// The Slurm job id: from Slurm's cgroup where it names one, else from the environment (`SLURM_JOB_ID`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slurm_job_id: Option<String>,
    /// The Kubernetes pod's name and namespace as the process's environment says (`POD_NAME`, else `HOSTNAME` in a
    /// pod; `POD_NAMESPACE`): the process chooses them, so the exporter labels them `pod_env` and `namespace_env`.
    /// (Recordings made before `pod_uid` existed may hold the uid here.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The container id (Docker, or the Kubernetes container) from the cgroup path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Why part of it could not be read (e.g. "environment unreadable: permission denied"); never an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The Slurm job step from Slurm's cgroup: a number, `batch`, `extern` or `interactive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_step: Option<String>,
    /// Whether `slurm_job_id` was read from Slurm's cgroup (which the process cannot choose) rather than from its
    /// environment (`SLURM_JOB_ID`, which it can).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub slurm_job_from_cgroup: bool,
    /// The Kubernetes pod's uid, from the cgroup path the kubelet made for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// The Slurm job's name as its environment says (`SLURM_JOB_NAME`), for people only: never part of the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_job_name: Option<String>,
}

impl JobInfo {
    /// Whether the process shares its job with others (its key is not its own PID).
    #[must_use]
    pub fn is_shared(&self) -> bool {
        !self.key.starts_with("pid:")
    }
}

/// The CPU limits of a process's cgroup (v2 `cpu.max`, `cpu.stat`, `cpuset.cpus.effective`; v1 `cpu.cfs_quota_us`,
/// `cpu.cfs_period_us`, `cpu.stat`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CgroupCpu {
    /// The cgroup's path inside its hierarchy, e.g. `/kubepods.slice/pod1/abc` or `/gs_quota`.
    pub path: String,
    /// The CPU quota in CPUs (quota / period); `None` when unlimited ("max", -1).
    pub quota_cpus: Option<f32>,
    /// CPUs in the cgroup's effective cpuset, when read.
    pub cpuset_cpus: Option<u32>,
    /// Share (%) of the scheduler periods of the last interval in which the cgroup was throttled.
    pub throttled_pct: Option<f32>,
    /// Time throttled per second of the last interval, in milliseconds.
    pub throttled_ms_per_s: Option<f32>,
}

/// Open dataset files on a network or FUSE filesystem, and TCP connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RemoteFiles {
    /// Regular files open on such filesystems.
    pub open: u32,
    /// The filesystem type of the first one (the first one open read-only, where modes were read), e.g. "nfs4",
    /// "fuse.s3fs", "lustre", "cifs".
    pub fs_type: String,
    /// Its mount point.
    pub mount: String,
    /// TCP connections the process holds (a `DataLoader` worker fetching over HTTP or S3 holds some): its TCP
    /// sockets, or where the kernel does not name a socket's protocol, its established connections in
    /// `/proc/PID/net/tcp`; for a worker, those it did not inherit from its parent.
    pub tcp_connections: u32,
    /// Of `open`, the files open read-only (`flags` of `/proc/PID/fdinfo/FD`): a dataset being read. Absent (0) in
    /// recordings made before open modes were read; `modes_read` says which.
    #[serde(skip_serializing_if = "is_zero")]
    pub read_only: u32,
    /// Of `open`, the files open for writing (logs, `slurm-%j.out`, checkpoints, TensorBoard events).
    #[serde(skip_serializing_if = "is_zero")]
    pub written: u32,
    /// Whether `read_only` and `written` were read (false in older recordings).
    #[serde(skip_serializing_if = "is_false")]
    pub modes_read: bool,
    /// Bytes per second read through the read-only remote descriptors since the previous scan (their `pos` in
    /// `/proc/PID/fdinfo/FD`; a descriptor opened since counts from 0). `None` on a first scan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_bytes_per_s: Option<u64>,
    /// The mount point of the first remote file open for writing (`mount` names a read-only one where there is one).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub written_mount: String,
    /// The file system type of `written_mount`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub written_fs_type: String,
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_false(b: &bool) -> bool {
    !*b
}

/// One thread's CPU use: which thread, what it is called, and how much of one core it used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ThreadCpu {
    pub tid: u32,
    /// The thread's name (`comm` of `/proc/PID/task/TID/stat`), e.g. "python" or "pt_main_thread".
    pub name: String,
    /// Percent of one core over the last interval.
    pub cpu_pct: f32,
}

/// How a process's threads spent the time between two gathers, from `/proc/PID/task/TID/schedstat` (the time on a
/// CPU and the time runnable but waiting for one, to the nanosecond), and what the sleeping ones waited in at the
/// gather (`wchan`, else `syscall` and the file descriptor it names). The time a thread was neither on a CPU nor
/// waiting for one it slept; what it slept in is known at the gather only, so the account reads the waits as a
/// sample over many gathers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ThreadTimes {
    /// The time the figures cover: since the previous gather of this process, ms.
    pub span_ms: u32,
    /// The main thread (TID = PID): the step's own thread in a training process, the loop of a `DataLoader` worker.
    pub main: ThreadTime,
    /// Every thread of the process, the main thread included, when all were walked at this gather; `None` when only
    /// the main thread was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all: Option<AllThreads>,
}

/// One thread's time over a gather's span, and its state at the gather.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ThreadTime {
    /// ms on a CPU (schedstat's first field; `utime + stime` in clock ticks where the kernel has no schedstat).
    pub on_cpu_ms: u32,
    /// ms runnable but waiting for a CPU (schedstat's second field); `None` where the kernel has no schedstat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_cpu_ms: Option<u32>,
    /// Its scheduler state at the gather: R, S, D, ...
    pub state: Option<char>,
    /// What it waited in at the gather, when it slept (S or D).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<WaitKind>,
}

/// Every thread of a process over a gather's span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct AllThreads {
    /// The time the figures cover: since the previous walk of all the process's threads, ms.
    pub span_ms: u32,
    /// Threads walked.
    pub threads: u32,
    /// Summed over the threads: ms on a CPU, and ms runnable but waiting for one (`None` without schedstat).
    pub on_cpu_ms: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_cpu_ms: Option<u32>,
    /// Threads runnable (R) at the gather.
    pub runnable: u32,
    /// The sleeping threads at the gather, counted by what they waited in.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub waits: std::collections::BTreeMap<WaitKind, u32>,
}

/// What a sleeping thread waits in, from its `wchan` (the kernel function it sleeps in) or, where that is generic or
/// hidden, its `syscall` and the file descriptor the call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// A lock or condition variable (`futex`): a `queue.Queue` get, the GIL, a CUDA or NCCL host thread's handoff.
    Lock,
    /// `poll`, `select` or `epoll` on descriptors it does not name: a multiprocessing queue's pipe, sockets, an
    /// event loop.
    Poll,
    /// A read on a pipe: a multiprocessing queue (a `DataLoader`'s batches, a worker's indices).
    Pipe,
    /// A read from local storage: a block device's I/O, a page fault on a file.
    Read,
    /// A network or FUSE file system: NFS and Sun RPC, FUSE, SMB, Lustre, Ceph, GPFS, BeeGFS, 9p.
    RemoteFs,
    /// Writes reaching storage: `fsync`, dirty-page throttling, writeback, a journal commit.
    Write,
    /// A socket: receive, send, connect, accept.
    Socket,
    /// The NVIDIA driver: an `ioctl` or `poll` on `/dev/nvidia*` (a blocking synchronize).
    Gpu,
    /// Memory reclaim or swap-in: the host is short of memory.
    Reclaim,
    /// A timed sleep (`nanosleep`): `time.sleep`.
    Sleep,
    /// Anything else (waiting for a child, a signal, an unnamed kernel wait).
    Other,
    /// Neither `wchan` nor `syscall` could be read (another user's process without ptrace access).
    Hidden,
}

impl WaitKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 12] = [
        Self::Lock,
        Self::Poll,
        Self::Pipe,
        Self::Read,
        Self::RemoteFs,
        Self::Write,
        Self::Socket,
        Self::Gpu,
        Self::Reclaim,
        Self::Sleep,
        Self::Other,
        Self::Hidden,
    ];

    /// The kind's name as JSON spells it ("remote_fs").
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Lock => "lock",
            Self::Poll => "poll",
            Self::Pipe => "pipe",
            Self::Read => "read",
            Self::RemoteFs => "remote_fs",
            Self::Write => "write",
            Self::Socket => "socket",
            Self::Gpu => "gpu",
            Self::Reclaim => "reclaim",
            Self::Sleep => "sleep",
            Self::Other => "other",
            Self::Hidden => "hidden",
        }
    }
}

impl HostProcess {
    /// Whether this process is a `torch.compile` (inductor) compile worker rather than a `DataLoader` worker: its
    /// command line runs `torch/_inductor/compile_worker` (the subprocess pool) or another inductor module.
    #[must_use]
    pub fn is_compile_worker(&self) -> bool {
        let c = self.cmdline.as_str();
        c.contains("compile_worker") || c.contains("torch/_inductor/") || c.contains("torch._inductor.")
    }

    /// The PID inside the process's own namespace when it runs in a container.
    #[must_use]
    pub fn container_pid(&self) -> Option<u32> {
        match self.nspid.as_deref() {
            Some([_, .., last]) => Some(*last),
            _ => None,
        }
    }
}

/// Host-wide readings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct HostTick {
    pub cpu: Option<CpuBreakdown>,
    /// Busy percent per logical CPU, indexed by CPU id (offline CPUs are `None`).
    pub per_cpu_busy_pct: Vec<Option<f32>>,
    pub mem_total_bytes: Option<u64>,
    pub mem_available_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_free_bytes: Option<u64>,
    /// Pages swapped in and out per second.
    pub swap_in_pages_per_s: Option<f32>,
    pub swap_out_pages_per_s: Option<f32>,
    pub load_1: Option<f32>,
    pub load_5: Option<f32>,
    pub load_15: Option<f32>,
    pub procs_blocked: Option<u32>,
    pub psi: Option<Psi>,
    pub uptime_s: Option<u64>,
    /// Throughput of each network interface since the previous read (`/proc/net/dev`; loopback left out) and of each
    /// InfiniBand port (`/sys/class/infiniband/DEV/ports/N/counters/port_rcv_data` and `port_xmit_data`, which count
    /// 4-byte words); empty on the first tick, when not read, and in older recordings. At most
    /// [`NetRate::MAX_LISTED`] entries: the busiest (received plus sent) first, ties by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<NetRate>,
    /// The processes outside the GPU jobs that used CPU since the previous scan, grouped by user and cgroup; read only
    /// while the CPUs are contended (see `host::others`), `None` otherwise and in older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_others: Option<CpuOthers>,
}

/// The throughput of one network interface or InfiniBand port over the last interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetRate {
    /// The interface (`eth0`), or `DEV/PORT` for an InfiniBand port (`mlx5_0/1`).
    pub name: String,
    pub kind: NetKind,
    pub rx_bytes_per_s: u64,
    pub tx_bytes_per_s: u64,
}

impl NetRate {
    /// How many interfaces and ports a tick lists at most: a host with many containers has a virtual interface
    /// each, and the busiest are the ones that say where the traffic goes.
    pub const MAX_LISTED: usize = 16;
}

/// What carries an interface's traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetKind {
    /// An interface backed by a device (`/sys/class/net/IFACE/device` exists): Ethernet, and also Wi-Fi and IPoIB,
    /// whose traffic its InfiniBand port counts again.
    Ethernet,
    /// An InfiniBand (RDMA) port, its counters from `/sys/class/infiniband`.
    Infiniband,
    /// An interface with no device behind it: bridges, veth pairs, `docker0`, tunnels, bonds.
    Virtual,
}

/// The CPU used by the processes outside the GPU jobs over one span between two scans (see `host::others`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuOthers {
    /// The span the figures cover, ms (since the previous scan).
    pub span_ms: u32,
    /// CPU used by every process outside the GPU jobs, % of one core, summed (can exceed 100).
    pub cpu_pct: f32,
    /// Their threads runnable (state R) at the scan: every thread of the processes grouped in `top`'s candidates
    /// (the busiest, see `host::others`), the main thread of the others.
    pub runnable: u32,
    /// The largest consumers grouped by (uid, cgroup), most CPU first, at most 5.
    pub top: Vec<CpuConsumer>,
}

/// One group of processes outside the GPU jobs: one user's processes in one cgroup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuConsumer {
    /// `None` when the process left before its `status` was read.
    pub uid: Option<u32>,
    pub user: Option<String>,
    /// The cgroup path (the v2 unified line of /proc/PID/cgroup, e.g. `/user.slice/user-1001.slice/session-4.scope`
    /// or a Slurm job's `/system.slice/slurmstepd.scope/job_812`; the v1 `cpu` controller's path where there is no
    /// unified line; empty when unreadable).
    pub cgroup: String,
    /// The busiest process of the group: its PID and command name (`comm`).
    pub pid: u32,
    pub command: String,
    /// The group's processes that used CPU in the span, among the busiest read (see `host::others`).
    pub processes: u32,
    /// % of one core, summed over the group.
    pub cpu_pct: f32,
}

/// Host CPU time shares over the last interval, in percent of all CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CpuBreakdown {
    pub user_pct: f32,
    pub system_pct: f32,
    pub iowait_pct: f32,
    pub steal_pct: f32,
    pub idle_pct: f32,
    /// Everything that is not idle, iowait or steal.
    pub busy_pct: f32,
}

/// Pressure stall information (`/proc/pressure/*`), the `avg10` values in percent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Psi {
    pub cpu_some_avg10: Option<f32>,
    pub io_some_avg10: Option<f32>,
    pub io_full_avg10: Option<f32>,
    pub memory_some_avg10: Option<f32>,
    pub memory_full_avg10: Option<f32>,
}

/// Where an event was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventOrigin {
    NvmlEvents,
    KernelLog,
    Synthetic,
}

/// What kind of GPU event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum GpuEventKind {
    Xid { code: u32, pid: Option<u32>, process_name: Option<String> },
    SingleBitEcc,
    DoubleBitEcc,
    FallenOffBus,
}

/// An Xid or ECC event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuEvent {
    pub at_ms: UnixMs,
    /// The GPU it is about, when it could be mapped by bus id.
    pub gpu_index: Option<u32>,
    pub kind: GpuEventKind,
    pub origin: EventOrigin,
    /// The raw text (kernel log line) or a description.
    pub message: String,
}

/// How the sampler is doing: what it can see and whether it keeps up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SourceHealth {
    /// Whether NVML Xid/ECC events are being received.
    pub nvml_events: Option<bool>,
    /// Whether the kernel log can be read for Xid lines.
    pub kernel_log: Option<bool>,
    /// Set while an NVML call has not returned for longer than the watchdog allows.
    pub nvml_stalled_ms: Option<u64>,
    /// Short messages about what could not be read (shown once in the UI).
    pub notes: Vec<String>,
}

/// Clock event (throttle) reason bits, as NVML defines them.
pub mod throttle {
    pub const GPU_IDLE: u64 = 0x1;
    pub const APPLICATIONS_CLOCKS_SETTING: u64 = 0x2;
    pub const SW_POWER_CAP: u64 = 0x4;
    pub const HW_SLOWDOWN: u64 = 0x8;
    pub const SYNC_BOOST: u64 = 0x10;
    pub const SW_THERMAL_SLOWDOWN: u64 = 0x20;
    pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;
    pub const HW_POWER_BRAKE_SLOWDOWN: u64 = 0x80;
    pub const DISPLAY_CLOCK_SETTING: u64 = 0x100;

    /// Every reason with a short badge name and a description, in bit order.
    pub const REASONS: [(u64, &str, &str); 9] = [
        (GPU_IDLE, "idle", "GPU idle"),
        (APPLICATIONS_CLOCKS_SETTING, "app-clk", "applications clocks setting"),
        (SW_POWER_CAP, "pwr-cap", "software power cap"),
        (HW_SLOWDOWN, "hw-slow", "hardware slowdown"),
        (SYNC_BOOST, "sync", "sync boost"),
        (SW_THERMAL_SLOWDOWN, "sw-therm", "software thermal slowdown"),
        (HW_THERMAL_SLOWDOWN, "hw-therm", "hardware thermal slowdown"),
        (HW_POWER_BRAKE_SLOWDOWN, "pwr-brake", "hardware power brake"),
        (DISPLAY_CLOCK_SETTING, "disp-clk", "display clock setting"),
    ];

    /// The badge names of the reasons set in `bits`, leaving out "idle".
    #[must_use]
    pub fn active_badges(bits: u64) -> Vec<&'static str> {
        REASONS.iter().filter(|(bit, _, _)| bits & bit != 0 && *bit != GPU_IDLE).map(|(_, name, _)| *name).collect()
    }
}

impl Tick {
    /// The GPU reading with this NVML index.
    #[must_use]
    pub fn gpu(&self, index: u32) -> Option<&GpuTick> {
        by_index(&self.gpus, index, |g| g.index)
    }

    /// Host details of a process, if read.
    #[must_use]
    pub fn process(&self, pid: u32) -> Option<&HostProcess> {
        self.processes.iter().find(|p| p.pid == pid)
    }
}

/// The item of a GPU list with this index. GPUs are almost always listed in index order from 0, so the slot at
/// `index` is tried first and the search is O(1); otherwise every item is looked at. Rules and history look a GPU
/// up for every GPU of every tick, so a linear search made them quadratic in the number of GPUs.
#[must_use]
pub fn by_index<T>(items: &[T], index: u32, key: impl Fn(&T) -> u32) -> Option<&T> {
    let slot = usize::try_from(index).ok().and_then(|i| items.get(i)).filter(|item| key(item) == index);
    slot.or_else(|| items.iter().find(|item| key(item) == index))
}

#[cfg(test)]
mod mig_tests {
    use super::*;

    #[test]
    fn old_recordings_read_without_mig_fields_and_new_ones_round_trip() {
        let old: GpuTick = serde_json::from_str(r#"{"index":0,"state":"ok","util_pct":5}"#).expect("old tick");
        assert!(old.mig.is_empty());
        let old: GpuProcess = serde_json::from_str(r#"{"gpu_index":0,"pid":7,"kind":"compute"}"#).expect("old process");
        assert_eq!((old.gpu_instance_id, old.compute_instance_id), (None, None));
        let slice = MigTick {
            index: 0,
            gpu_instance_id: Some(7),
            compute_instance_id: Some(0),
            profile: Some("1g.18gb".to_owned()),
            sm_active_pct: Some(95.0),
            ..MigTick::default()
        };
        let tick = GpuTick { mig: vec![slice.clone()], ..GpuTick::default() };
        let back: GpuTick = serde_json::from_str(&serde_json::to_string(&tick).expect("write")).expect("read");
        assert_eq!(back, tick);
        assert!(!serde_json::to_string(&GpuTick::default()).expect("write").contains("mig"), "absent when empty");
        assert_eq!(slice.label(), "1g.18gb (GI 7)");
        let process = GpuProcess { gpu_instance_id: Some(7), compute_instance_id: Some(0), ..GpuProcess::default() };
        assert_eq!(process.mig_device(&tick).map(|m| m.index), Some(0));
        let elsewhere = GpuProcess { gpu_instance_id: Some(8), ..GpuProcess::default() };
        assert!(elsewhere.mig_device(&tick).is_none());
    }
}
