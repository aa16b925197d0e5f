//! Every metric family the exporter renders, in the order it renders them, with the name a scraper sees: the one
//! table both [`super::metrics`] (which registers and fills them) and [`crate::fleet::query`] (which queries them back from
//! Prometheus) read, so a rename cannot break one side without the other.
//!
//! prometheus-client appends the unit (`_bytes`, `_seconds`, our `_ratio`) and, for counters, `_total` to the
//! registered name; [`MetricDef::exposed`] is the name after those rules, checked against the rendered text by
//! the tests of [`super::metrics`].

/// The job labels dcgm-exporter adds to the per-GPU series where it knows the workload on the GPU: `hpc_job`
/// (its HPC job mapping, a Slurm job id here, read from Slurm's cgroup) and `pod`, `namespace`, `container` (its
/// Kubernetes mapping, from the kubelet's pod-resources API); then gpusight's own: `pod_uid` (from the cgroup path)
/// and the `_env` labels, which a process's environment names and the process can therefore choose. gpusight
/// writes each only where the GPU's compute processes agree on a value, an `_env` label only where its trusted
/// counterpart is unknown; the fleet reader ([`crate::fleet::query::JOB_LABELS`]) reads them back to name the job
/// that holds each GPU.
pub mod job_labels {
    /// The HPC (Slurm) job id, from Slurm's cgroup.
    pub const HPC_JOB: &str = "hpc_job";
    /// The Kubernetes pod's name, from the kubelet.
    pub const POD: &str = "pod";
    /// The Kubernetes pod's namespace, from the kubelet.
    pub const NAMESPACE: &str = "namespace";
    /// The container's name in its pod, from the kubelet.
    pub const CONTAINER: &str = "container";
    /// The Kubernetes pod's uid, from the cgroup path.
    pub const POD_UID: &str = "pod_uid";
    /// The Slurm job id the environment names (`SLURM_JOB_ID`), where Slurm's cgroup names none.
    pub const HPC_JOB_ENV: &str = "hpc_job_env";
    /// The pod name the environment names (`POD_NAME`, `HOSTNAME`), where the kubelet names none.
    pub const POD_ENV: &str = "pod_env";
    /// The namespace the environment names (`POD_NAMESPACE`), where the kubelet names none.
    pub const NAMESPACE_ENV: &str = "namespace_env";
    /// Every job label the exporter writes, in the order it writes them.
    pub const ALL: [&str; 8] = [HPC_JOB, POD, NAMESPACE, CONTAINER, POD_UID, HPC_JOB_ENV, POD_ENV, NAMESPACE_ENV];
}

/// How a family is typed in the exposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// Counter semantics under a name without `_total` (dcgm-exporter's names): typed `untyped` so the client adds
    /// no suffix.
    Untyped,
    /// A counter: the client appends `_total`.
    Counter,
}

/// The unit suffix a family's name gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricUnit {
    Bytes,
    Seconds,
    /// Prometheus's `_ratio` for 0–1 shares (the client's own `Ratios` would write `_ratios`).
    Ratio,
}

/// One metric family: the name it is registered under, the name a scraper sees, its help text, unit and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    pub name: &'static str,
    pub exposed: &'static str,
    pub help: &'static str,
    pub unit: Option<MetricUnit>,
    pub kind: Kind,
}

/// The metric families, in rendering order (the exposition lists them in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    SmClock,
    MemClock,
    GpuTemp,
    MemoryTemp,
    PowerUsage,
    TotalEnergy,
    PcieTx,
    PcieRx,
    NvlinkTx,
    NvlinkRx,
    PcieReplay,
    NvlinkCrcFlitErrors,
    NvlinkReplayErrors,
    NvlinkRecoveryErrors,
    NvlinkUp,
    NvlinkBandwidthTotal,
    NvlinkBandwidthL0,
    NvlinkBandwidthL1,
    NvlinkBandwidthL2,
    NvlinkBandwidthL3,
    NvlinkBandwidthL4,
    NvlinkBandwidthL5,
    NvlinkBandwidthL6,
    NvlinkBandwidthL7,
    NvlinkBandwidthL8,
    NvlinkBandwidthL9,
    NvlinkBandwidthL10,
    NvlinkBandwidthL11,
    NvlinkBandwidthL12,
    NvlinkBandwidthL13,
    NvlinkBandwidthL14,
    NvlinkBandwidthL15,
    NvlinkBandwidthL16,
    NvlinkBandwidthL17,
    NvlinkLinkSpeed,
    NvlinkLinkRx,
    NvlinkLinkTx,
    GpuUtil,
    MemCopyUtil,
    EncUtil,
    DecUtil,
    XidErrors,
    FbFree,
    FbUsed,
    FbReserved,
    UncorrectableRemappedRows,
    CorrectableRemappedRows,
    RowRemapFailure,
    RemappedRowsPending,
    EccUncorrectedVolatile,
    GrEngineActive,
    SmActive,
    SmOccupancy,
    TensorActive,
    DramActive,
    GpuUp,
    PowerLimit,
    PowerLimitDefault,
    ThrottleReasonActive,
    Throttle,
    PcieLinkGen,
    PcieLinkGenMax,
    PcieLinkWidth,
    PcieLinkWidthMax,
    NumaNode,
    ProcessGpuMemory,
    ProcessSmUtilization,
    HostCpuIowait,
    HostCpuSteal,
    HostPressure,
    Finding,
    GpuSeconds,
    GpuEnergy,
}

impl Family {
    /// Every family, in rendering order: `Family::ALL[f as usize] == f`.
    pub const ALL: [Self; 73] = [
        Self::SmClock,
        Self::MemClock,
        Self::GpuTemp,
        Self::MemoryTemp,
        Self::PowerUsage,
        Self::TotalEnergy,
        Self::PcieTx,
        Self::PcieRx,
        Self::NvlinkTx,
        Self::NvlinkRx,
        Self::PcieReplay,
        Self::NvlinkCrcFlitErrors,
        Self::NvlinkReplayErrors,
        Self::NvlinkRecoveryErrors,
        Self::NvlinkUp,
        Self::NvlinkBandwidthTotal,
        Self::NvlinkBandwidthL0,
        Self::NvlinkBandwidthL1,
        Self::NvlinkBandwidthL2,
        Self::NvlinkBandwidthL3,
        Self::NvlinkBandwidthL4,
        Self::NvlinkBandwidthL5,
        Self::NvlinkBandwidthL6,
        Self::NvlinkBandwidthL7,
        Self::NvlinkBandwidthL8,
        Self::NvlinkBandwidthL9,
        Self::NvlinkBandwidthL10,
        Self::NvlinkBandwidthL11,
        Self::NvlinkBandwidthL12,
        Self::NvlinkBandwidthL13,
        Self::NvlinkBandwidthL14,
        Self::NvlinkBandwidthL15,
        Self::NvlinkBandwidthL16,
        Self::NvlinkBandwidthL17,
        Self::NvlinkLinkSpeed,
        Self::NvlinkLinkRx,
        Self::NvlinkLinkTx,
        Self::GpuUtil,
        Self::MemCopyUtil,
        Self::EncUtil,
        Self::DecUtil,
        Self::XidErrors,
        Self::FbFree,
        Self::FbUsed,
        Self::FbReserved,
        Self::UncorrectableRemappedRows,
        Self::CorrectableRemappedRows,
        Self::RowRemapFailure,
        Self::RemappedRowsPending,
        Self::EccUncorrectedVolatile,
        Self::GrEngineActive,
        Self::SmActive,
        Self::SmOccupancy,
        Self::TensorActive,
        Self::DramActive,
        Self::GpuUp,
        Self::PowerLimit,
        Self::PowerLimitDefault,
        Self::ThrottleReasonActive,
        Self::Throttle,
        Self::PcieLinkGen,
        Self::PcieLinkGenMax,
        Self::PcieLinkWidth,
        Self::PcieLinkWidthMax,
        Self::NumaNode,
        Self::ProcessGpuMemory,
        Self::ProcessSmUtilization,
        Self::HostCpuIowait,
        Self::HostCpuSteal,
        Self::HostPressure,
        Self::Finding,
        Self::GpuSeconds,
        Self::GpuEnergy,
    ];

    /// The name a scraper sees (and the fleet reader queries).
    #[must_use]
    pub const fn exposed(self) -> &'static str {
        self.def().exposed
    }

    /// The family's definition.
    #[must_use]
    pub const fn def(self) -> MetricDef {
        DEFS[self as usize]
    }
}

const fn def(
    name: &'static str,
    exposed: &'static str,
    help: &'static str,
    unit: Option<MetricUnit>,
    kind: Kind,
) -> MetricDef {
    MetricDef { name, exposed, help, unit, kind }
}

/// dcgm-exporter's per-link bandwidth counter: one family per link, the link in the name (`_L0` to `_L17`).
const fn link_bandwidth(name: &'static str) -> MetricDef {
    def(
        name,
        name,
        "NVLink data received and transmitted on this link since the driver loaded, in bytes (NVML's data counters: payload, without protocol headers).",
        None,
        Kind::Untyped,
    )
}

/// dcgm-exporter's per-link bandwidth families, by link number.
pub const NVLINK_BANDWIDTH_LINKS: [Family; 18] = [
    Family::NvlinkBandwidthL0,
    Family::NvlinkBandwidthL1,
    Family::NvlinkBandwidthL2,
    Family::NvlinkBandwidthL3,
    Family::NvlinkBandwidthL4,
    Family::NvlinkBandwidthL5,
    Family::NvlinkBandwidthL6,
    Family::NvlinkBandwidthL7,
    Family::NvlinkBandwidthL8,
    Family::NvlinkBandwidthL9,
    Family::NvlinkBandwidthL10,
    Family::NvlinkBandwidthL11,
    Family::NvlinkBandwidthL12,
    Family::NvlinkBandwidthL13,
    Family::NvlinkBandwidthL14,
    Family::NvlinkBandwidthL15,
    Family::NvlinkBandwidthL16,
    Family::NvlinkBandwidthL17,
];

/// The definitions, indexed by [`Family`].
const DEFS: [MetricDef; 73] = [
    def("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", None, Kind::Gauge),
    def("DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", None, Kind::Gauge),
    def("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", None, Kind::Gauge),
    def("DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", None, Kind::Gauge),
    def("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", None, Kind::Gauge),
    def(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "Total energy consumption since boot (in mJ).",
        None,
        Kind::Untyped,
    ),
    def(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "The rate of data transmitted over NVLink, all links, in bytes per second.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "The rate of data received over NVLink, all links, in bytes per second.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "Total number of PCIe retries.",
        None,
        Kind::Untyped,
    ),
    def(
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "NVLink flow-control CRC errors of one link (label nvlink) since the driver loaded.",
        None,
        Kind::Untyped,
    ),
    def(
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "NVLink replay errors of one link (label nvlink) since the driver loaded.",
        None,
        Kind::Untyped,
    ),
    def(
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "NVLink recovery errors of one link (label nvlink) since the driver loaded.",
        None,
        Kind::Untyped,
    ),
    def(
        "gpusight_nvlink_link_up",
        "gpusight_nvlink_link_up",
        "Whether an NVLink link (label nvlink) is up: 1 up, 0 down.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "NVLink data received and transmitted over all links since the driver loaded, in bytes (NVML's data counters: payload, without protocol headers).",
        None,
        Kind::Untyped,
    ),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L1"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L2"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L3"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L4"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L5"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L6"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L7"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L8"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L9"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L10"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L11"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L12"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L13"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L14"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L15"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L16"),
    link_bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L17"),
    def(
        "gpusight_nvlink_link_speed_bytes_per_second",
        "gpusight_nvlink_link_speed_bytes_per_second",
        "The speed of an NVLink link (label nvlink) in each direction, in bytes per second; absent while it is down.",
        None,
        Kind::Gauge,
    ),
    def(
        "gpusight_nvlink_link_rx_bytes_per_second",
        "gpusight_nvlink_link_rx_bytes_per_second",
        "The rate of data received on an NVLink link (label nvlink), in bytes per second, between the last two reads of its counter.",
        None,
        Kind::Gauge,
    ),
    def(
        "gpusight_nvlink_link_tx_bytes_per_second",
        "gpusight_nvlink_link_tx_bytes_per_second",
        "The rate of data transmitted on an NVLink link (label nvlink), in bytes per second, between the last two reads of its counter.",
        None,
        Kind::Gauge,
    ),
    def("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", None, Kind::Gauge),
    def("DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", None, Kind::Gauge),
    def("DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", None, Kind::Gauge),
    def("DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", None, Kind::Gauge),
    def(
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_XID_ERRORS",
        "Value of the last XID error encountered.",
        None,
        Kind::Gauge,
    ),
    def("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", None, Kind::Gauge),
    def("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", None, Kind::Gauge),
    def(
        "DCGM_FI_DEV_FB_RESERVED",
        "DCGM_FI_DEV_FB_RESERVED",
        "Framebuffer memory reserved (in MiB).",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors.",
        None,
        Kind::Untyped,
    ),
    def(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for correctable errors.",
        None,
        Kind::Untyped,
    ),
    def(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "Whether remapping of rows has failed.",
        None,
        Kind::Gauge,
    ),
    def(
        "gpusight_remapped_rows_pending",
        "gpusight_remapped_rows_pending",
        "Whether a row remap is pending: the GPU needs a reset (1) or not (0).",
        None,
        Kind::Gauge,
    ),
    def(
        "gpusight_ecc_uncorrected_volatile",
        "gpusight_ecc_uncorrected_volatile",
        "Uncorrected ECC errors since the driver loaded (volatile count).",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "Ratio of time the graphics engine is active.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_SM_ACTIVE",
        "The ratio of cycles an SM has at least 1 warp assigned.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_PROF_SM_OCCUPANCY",
        "DCGM_FI_PROF_SM_OCCUPANCY",
        "The ratio of number of warps resident on an SM.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        None,
        Kind::Gauge,
    ),
    def(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        None,
        Kind::Gauge,
    ),
    def(
        "gpusight_gpu_up",
        "gpusight_gpu_up",
        "Whether the GPU answered at the last sample (0: lost or not answering).",
        None,
        Kind::Gauge,
    ),
    def("gpusight_power_limit_watts", "gpusight_power_limit_watts", "The enforced power limit.", None, Kind::Gauge),
    def(
        "gpusight_power_limit_default_watts",
        "gpusight_power_limit_default_watts",
        "The default power limit (the board's normal budget; the enforced limit below it was lowered).",
        None,
        Kind::Gauge,
    ),
    def(
        "gpusight_throttle_reason_active",
        "gpusight_throttle_reason_active",
        "Whether a clock event (throttle) reason is active now (1) or not (0).",
        None,
        Kind::Gauge,
    ),
    def(
        "gpusight_throttle",
        "gpusight_throttle_seconds_total",
        "Cumulative time spent in a clock event (throttle) reason since the driver loaded.",
        Some(MetricUnit::Seconds),
        Kind::Counter,
    ),
    def("gpusight_pcie_link_gen", "gpusight_pcie_link_gen", "Current PCIe link generation.", None, Kind::Gauge),
    def(
        "gpusight_pcie_link_gen_max",
        "gpusight_pcie_link_gen_max",
        "Maximum PCIe link generation of the GPU and slot.",
        None,
        Kind::Gauge,
    ),
    def("gpusight_pcie_link_width", "gpusight_pcie_link_width", "Current PCIe link width (lanes).", None, Kind::Gauge),
    def(
        "gpusight_pcie_link_width_max",
        "gpusight_pcie_link_width_max",
        "Maximum PCIe link width (lanes).",
        None,
        Kind::Gauge,
    ),
    def("gpusight_numa_node", "gpusight_numa_node", "NUMA node of the GPU's PCI device.", None, Kind::Gauge),
    def(
        "gpusight_process_gpu_memory",
        "gpusight_process_gpu_memory_bytes",
        "GPU memory used by a process.",
        Some(MetricUnit::Bytes),
        Kind::Gauge,
    ),
    def(
        "gpusight_process_sm_utilization",
        "gpusight_process_sm_utilization_ratio",
        "Share of the last sample window in which a process ran a kernel on the GPU's SMs.",
        Some(MetricUnit::Ratio),
        Kind::Gauge,
    ),
    def(
        "gpusight_host_cpu_iowait",
        "gpusight_host_cpu_iowait_ratio",
        "Share of all CPU time spent in iowait.",
        Some(MetricUnit::Ratio),
        Kind::Gauge,
    ),
    def(
        "gpusight_host_cpu_steal",
        "gpusight_host_cpu_steal_ratio",
        "Share of all CPU time stolen by the hypervisor.",
        Some(MetricUnit::Ratio),
        Kind::Gauge,
    ),
    def(
        "gpusight_host_pressure",
        "gpusight_host_pressure_ratio",
        "Pressure stall information, avg10: share of time some or all tasks stalled on a resource.",
        Some(MetricUnit::Ratio),
        Kind::Gauge,
    ),
    def(
        "gpusight_finding",
        "gpusight_finding",
        "An active finding of the advice engine (1 while active).",
        None,
        Kind::Gauge,
    ),
    def(
        "gpusight_gpu",
        "gpusight_gpu_seconds_total",
        "A job's time on a GPU (or MIG slice) since the exporter started, by cause (label cause): busy, or what the GPU waited for.",
        Some(MetricUnit::Seconds),
        Kind::Counter,
    ),
    def(
        "gpusight_gpu_energy_joules",
        "gpusight_gpu_energy_joules_total",
        "The energy a GPU drew over a job's time on it since the exporter started, by cause (label cause), in joules.",
        None,
        Kind::Counter,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_family_once_in_declaration_order() {
        for (i, family) in Family::ALL.iter().enumerate() {
            assert_eq!(*family as usize, i, "{family:?}");
        }
        let mut names: Vec<_> = Family::ALL.iter().map(|f| f.exposed()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Family::ALL.len(), "two families share a name");
    }

    #[test]
    fn every_job_label_the_fleet_reads_is_one_the_exporter_writes() {
        for label in crate::fleet::query::JOB_LABELS {
            assert!(job_labels::ALL.contains(&label), "the fleet reads {label}, which the exporter never writes");
        }
        let mut written = job_labels::ALL.to_vec();
        written.sort_unstable();
        written.dedup();
        assert_eq!(written.len(), job_labels::ALL.len(), "a job label is listed twice");
    }
}
