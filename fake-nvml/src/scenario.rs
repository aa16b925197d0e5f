//! The machine a scenario describes: GPUs, their readings over time (phases), processes, faults, Xid events, MIG
//! devices and NVLink links. The format is documented in docs/fake-nvml.md; the built-in scenarios are in
//! `scenarios/` and shipped inside the library.

use serde::Deserialize;

/// Built-in scenarios, by name.
pub const BUILT_INS: [(&str, &str); 4] = [
    ("h200", include_str!("../scenarios/h200.toml")),
    ("hgx8-mig", include_str!("../scenarios/hgx8-mig.toml")),
    ("nvl72", include_str!("../scenarios/nvl72.toml")),
    ("consumer", include_str!("../scenarios/consumer.toml")),
];

/// The most GPUs a scenario may describe.
pub const MAX_GPUS: usize = 72;

/// A whole machine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: String,
    #[serde(default = "defaults::driver")]
    pub driver_version: String,
    #[serde(default = "defaults::cuda")]
    pub cuda_driver_version: i32,
    #[serde(default = "defaults::nvml")]
    pub nvml_version: String,
    /// `nvmlInit_v2` sleeps this long before answering (a slow or hung driver).
    #[serde(default)]
    pub init_sleep_ms: u64,
    /// `nvmlInit_v2` fails with this error.
    #[serde(default)]
    pub init_error: Option<ErrorKind>,
    /// Virtual seconds per real second: phases, counters and events run this much faster than the clock.
    #[serde(default = "defaults::one")]
    pub speed: f64,
    /// How long one GPM sample call holds its GPU (the real one takes 1-2 ms); overlapping calls are caught.
    #[serde(default = "defaults::gpm_call_ms")]
    pub gpm_call_ms: u64,
    /// Whether two GPM calls on different GPUs may overlap (real libnvidia-ml crashed when they did).
    #[serde(default)]
    pub gpm_allow_cross_gpu: bool,
    #[serde(default, rename = "gpu")]
    pub gpus: Vec<GpuSpec>,
}

/// One GPU, or `count` identical ones.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpuSpec {
    pub count: u32,
    pub name: String,
    /// The first GPU's UUID; copies get their index in the last digits.
    pub uuid: Option<String>,
    pub serial: Option<String>,
    /// The first GPU's PCI bus number; copies take the next ones.
    pub pci_bus: Option<u32>,
    /// The PCI domain and device number, and the PCI device and subsystem ids (`nvmlPciInfo_t`).
    pub pci_domain: u32,
    pub pci_device: u32,
    pub pci_device_id: u32,
    pub pci_subsystem_id: u32,
    pub architecture: Arch,
    pub compute_capability: [i32; 2],
    pub memory_total_mib: u64,
    pub memory_reserved_mib: u64,
    /// Exact sizes in bytes (a capture), in place of the MiB figures.
    pub memory_total_bytes: Option<u64>,
    pub memory_reserved_bytes: Option<u64>,
    pub max_sm_clock_mhz: u32,
    pub max_mem_clock_mhz: u32,
    pub power_default_w: u32,
    pub power_min_w: u32,
    pub power_max_w: u32,
    /// The enforced limit; the default limit when absent.
    pub power_limit_w: Option<u32>,
    pub temp_slowdown_c: u32,
    pub temp_shutdown_c: u32,
    pub temp_gpu_max_c: u32,
    pub temp_mem_max_c: u32,
    pub pcie_max_gen: u32,
    pub pcie_max_width: u32,
    pub fans: u32,
    pub persistence: bool,
    pub ecc: bool,
    pub display_active: bool,
    pub gpm: bool,
    pub mig: bool,
    pub pcie_replay: u32,
    pub retired_pages_pending: bool,
    pub remapped_rows: [u32; 2],
    pub energy_start_mj: u64,
    /// Where the counters start: ECC (volatile corrected, volatile uncorrected, aggregate corrected, aggregate
    /// uncorrected) and the five throttle counters (ns); the phases' rates add to them.
    pub ecc_start: [u64; 4],
    pub throttle_ns_start: [u64; 5],
    pub remapped_rows_pending: bool,
    pub remapped_rows_failure: bool,
    /// To each GPU of the machine, by index (a capture): the closest PCIe ancestor the two share, as NVML numbers
    /// it (0 the board, 10 one switch, 20 several, 30 the host bridge, 40 the NUMA node, 50 the system), and the
    /// NVLink P2P status (0 OK, 5 not supported). Absent: neighbours in pairs share a switch, NVLink when both
    /// have links.
    pub topology: Vec<u32>,
    pub p2p_nvlink: Vec<u32>,
    /// Play the phases again from the first after the last (else the last holds).
    pub repeat: bool,
    #[serde(rename = "phase")]
    pub phases: Vec<Phase>,
    #[serde(rename = "process")]
    pub processes: Vec<ProcSpec>,
    #[serde(rename = "fault")]
    pub faults: Vec<FaultSpec>,
    #[serde(rename = "xid")]
    pub xids: Vec<XidSpec>,
    #[serde(rename = "mig_device")]
    pub mig_devices: Vec<MigSpec>,
    pub nvlink: Option<NvlinkSpec>,
}

impl Default for GpuSpec {
    fn default() -> Self {
        Self {
            count: 1,
            name: "NVIDIA H200".to_string(),
            uuid: None,
            serial: None,
            pci_bus: None,
            pci_domain: 0,
            pci_device: 0,
            pci_device_id: 0x2335_10de,
            pci_subsystem_id: 0x18be_10de,
            architecture: Arch::Hopper,
            compute_capability: [9, 0],
            memory_total_mib: 143_771,
            memory_reserved_mib: 615,
            memory_total_bytes: None,
            memory_reserved_bytes: None,
            max_sm_clock_mhz: 1980,
            max_mem_clock_mhz: 3201,
            power_default_w: 700,
            power_min_w: 200,
            power_max_w: 700,
            power_limit_w: None,
            temp_slowdown_c: 89,
            temp_shutdown_c: 95,
            temp_gpu_max_c: 87,
            temp_mem_max_c: 95,
            pcie_max_gen: 5,
            pcie_max_width: 16,
            fans: 0,
            persistence: true,
            ecc: true,
            display_active: false,
            gpm: true,
            mig: false,
            pcie_replay: 0,
            retired_pages_pending: false,
            remapped_rows: [0, 0],
            energy_start_mj: 0,
            ecc_start: [0; 4],
            throttle_ns_start: [0; 5],
            remapped_rows_pending: false,
            remapped_rows_failure: false,
            topology: Vec::new(),
            p2p_nvlink: Vec::new(),
            repeat: false,
            phases: Vec::new(),
            processes: Vec::new(),
            faults: Vec::new(),
            xids: Vec::new(),
            mig_devices: Vec::new(),
            nvlink: None,
        }
    }
}

/// GPU architectures, as NVML numbers them (`nvmlDeviceArchitecture_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    Kepler,
    Maxwell,
    Pascal,
    Volta,
    Turing,
    Ampere,
    Ada,
    Hopper,
    Blackwell,
}

impl Arch {
    /// NVML's number for the architecture.
    pub fn as_c(self) -> u32 {
        match self {
            Self::Kepler => 2,
            Self::Maxwell => 3,
            Self::Pascal => 4,
            Self::Volta => 5,
            Self::Turing => 6,
            Self::Ampere => 7,
            Self::Ada => 8,
            Self::Hopper => 9,
            Self::Blackwell => 10,
        }
    }
}

/// The readings of one stretch of time. Absent fields take the idle H200's readings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Phase {
    /// How long the phase lasts, in virtual seconds; the last phase holds when absent.
    pub duration_s: Option<f64>,
    pub util: u32,
    pub mem_util: u32,
    pub mem_used_mib: u64,
    /// Exact used and free memory in bytes (a capture), in place of `mem_used_mib` and the remainder.
    pub mem_used_bytes: Option<u64>,
    pub mem_free_bytes: Option<u64>,
    pub power_w: f64,
    pub temp_c: u32,
    pub mem_temp_c: u32,
    pub sm_clock_mhz: u32,
    pub mem_clock_mhz: u32,
    pub throttle: u64,
    pub pstate: u32,
    pub pcie_gen: u32,
    pub pcie_width: u32,
    pub pcie_rx_kbps: u32,
    pub pcie_tx_kbps: u32,
    pub fan_pct: u32,
    pub enc_util: u32,
    pub dec_util: u32,
    /// GPM metrics in percent (graphics engine, SM activity, occupancy, tensor, DRAM).
    pub gpm_graphics: f64,
    pub gpm_sm: f64,
    pub gpm_occupancy: f64,
    pub gpm_tensor: f64,
    pub gpm_dram: f64,
    /// GPM's PCIe rates in MiB/s (a capture); absent, they follow `pcie_rx_kbps`/`pcie_tx_kbps`.
    pub gpm_pcie_rx_mib_s: Option<f64>,
    pub gpm_pcie_tx_mib_s: Option<f64>,
    /// NVLink throughput over all links, MiB/s (GPM's, and shared evenly by the links that are up for their data
    /// counters unless the next two give each link's own).
    pub nvlink_rx_mib_s: f64,
    pub nvlink_tx_mib_s: f64,
    /// Each link's own RX and TX rates, MiB/s, by link number (a capture): its data counters (fields 139 and 138)
    /// climb at these.
    pub nvlink_link_rx_mib_s: Vec<f64>,
    pub nvlink_link_tx_mib_s: Vec<f64>,
    /// Nanoseconds per second spent in each cumulative throttle reason: SW power cap, sync boost, SW thermal,
    /// HW thermal, HW power brake.
    pub throttle_ns_per_s: [f64; 5],
    /// ECC errors per second, corrected and uncorrected.
    pub ecc_corrected_per_s: f64,
    pub ecc_uncorrected_per_s: f64,
}

impl Default for Phase {
    fn default() -> Self {
        Self {
            duration_s: None,
            util: 0,
            mem_util: 0,
            mem_used_mib: 0,
            mem_used_bytes: None,
            mem_free_bytes: None,
            power_w: 119.0,
            temp_c: 33,
            mem_temp_c: 37,
            sm_clock_mhz: 345,
            mem_clock_mhz: 3201,
            throttle: 0,
            pstate: 0,
            pcie_gen: 5,
            pcie_width: 16,
            pcie_rx_kbps: 0,
            pcie_tx_kbps: 0,
            fan_pct: 30,
            enc_util: 0,
            dec_util: 0,
            gpm_graphics: 0.0,
            gpm_sm: 0.0,
            gpm_occupancy: 0.0,
            gpm_tensor: 0.0,
            gpm_dram: 0.0,
            gpm_pcie_rx_mib_s: None,
            gpm_pcie_tx_mib_s: None,
            nvlink_rx_mib_s: 0.0,
            nvlink_tx_mib_s: 0.0,
            nvlink_link_rx_mib_s: Vec::new(),
            nvlink_link_tx_mib_s: Vec::new(),
            throttle_ns_per_s: [0.0; 5],
            ecc_corrected_per_s: 0.0,
            ecc_uncorrected_per_s: 0.0,
        }
    }
}

/// A process on the GPU, or `count` of them with consecutive PIDs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProcSpec {
    pub pid: u32,
    pub count: u32,
    pub graphics: bool,
    /// `None`: NVML cannot tell (unprivileged MIG, WDDM).
    pub used_mib: Option<u64>,
    /// Exact memory in bytes (a capture), in place of `used_mib`.
    pub used_bytes: Option<u64>,
    /// NVML cannot tell its memory (a capture of unprivileged MIG, WDDM).
    pub used_unknown: bool,
    /// NVML has no utilization sample for it (a capture): it is left out of the process utilization answer.
    pub no_samples: bool,
    pub sm: u32,
    pub mem: u32,
    pub enc: u32,
    pub dec: u32,
    /// The MIG device it runs on (index into the GPU's `mig_device` list).
    pub mig: Option<usize>,
    pub from_s: f64,
    pub until_s: Option<f64>,
}

impl Default for ProcSpec {
    fn default() -> Self {
        Self {
            pid: 1000,
            count: 1,
            graphics: false,
            used_mib: Some(1024),
            used_bytes: None,
            used_unknown: false,
            no_samples: false,
            sm: 0,
            mem: 0,
            enc: 0,
            dec: 0,
            mig: None,
            from_s: 0.0,
            until_s: None,
        }
    }
}

/// What a call answers, or how long it sleeps first, in a window of virtual time.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// The NVML function's name (`nvmlDeviceGetPowerUsage`), or `*` for every call on this GPU.
    pub call: String,
    /// Only calls whose leading selector arguments are these (a clock, sensor, threshold, fan, PCIe counter, ECC
    /// error and counter type, NVLink link and counter; for `nvmlDeviceGetFieldValues` the field id, answered as
    /// that entry's own status). Empty: every call.
    #[serde(default)]
    pub args: Vec<u32>,
    #[serde(default)]
    pub error: Option<ErrorKind>,
    #[serde(default)]
    pub sleep_ms: u64,
    #[serde(default)]
    pub from_s: f64,
    #[serde(default)]
    pub until_s: Option<f64>,
}

/// NVML errors a fault can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    NotSupported,
    NoPermission,
    Unknown,
    GpuIsLost,
    InvalidArgument,
    NotFound,
    Timeout,
    DriverNotLoaded,
    LibRmVersionMismatch,
}

/// An Xid error delivered through the event set at a virtual time.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidSpec {
    pub at_s: f64,
    pub xid: u64,
}

/// One MIG device: a GPU instance with one compute instance.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigSpec {
    /// The profile, e.g. `1g.18gb`; the device's name is the GPU's name, "MIG" and this.
    pub profile: String,
    pub gi: u32,
    #[serde(default)]
    pub ci: u32,
    pub memory_total_mib: u64,
    #[serde(default)]
    pub memory_used_mib: u64,
    /// SM activity of the slice in percent (GPM per GPU instance).
    #[serde(default)]
    pub gpm_sm: f64,
}

/// The GPU's NVLink links.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NvlinkSpec {
    pub links: u32,
    pub version: u32,
    /// Per-link speed in MB/s, as NVML's field 164 (`NVML_FI_DEV_NVLINK_GET_SPEED`) gives it.
    pub speed_mbps: u32,
    /// Speeds of the first links, overriding `speed_mbps` for those links (a link trained at a lower rate).
    pub link_speed_mbps: Vec<u32>,
    /// Links that are down (from `down_from_s` on; up before).
    pub down: Vec<u32>,
    pub down_from_s: f64,
    /// The per-link field values that answer NotSupported: `speed`, `throughput`.
    pub not_supported: Vec<NvlinkField>,
    /// `gpus`: the links go round the other GPUs of the machine; `switch`: to NVSwitches.
    pub remote: String,
    /// Links whose error counters climb, and how fast (per virtual second) from `errors_from_s` on.
    pub errors_on: Vec<u32>,
    pub errors_from_s: f64,
    pub crc_per_s: f64,
    pub replay_per_s: f64,
    pub recovery_per_s: f64,
    /// Each link's far end as (domain, bus, device), in place of `remote` (a capture).
    pub remote_pci: Vec<[u32; 3]>,
    /// Each link's error counters at the start (replay, recovery, CRC flit; a capture); the rates add to them.
    pub counters_start: Vec<[u64; 3]>,
    /// Each link's data counters at the start, KiB received and transmitted (fields 139 and 138; a capture); the
    /// rates add to them.
    pub traffic_start_kib: Vec<[u64; 2]>,
}

impl Default for NvlinkSpec {
    fn default() -> Self {
        Self {
            links: 18,
            version: 4,
            speed_mbps: 26_562,
            link_speed_mbps: Vec::new(),
            down: Vec::new(),
            down_from_s: 0.0,
            not_supported: Vec::new(),
            remote: "gpus".to_string(),
            errors_on: Vec::new(),
            errors_from_s: 0.0,
            crc_per_s: 0.0,
            replay_per_s: 0.0,
            recovery_per_s: 0.0,
            remote_pci: Vec::new(),
            counters_start: Vec::new(),
            traffic_start_kib: Vec::new(),
        }
    }
}

/// The per-link field values a scenario can make answer NotSupported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NvlinkField {
    /// Field 164, the link's speed.
    Speed,
    /// Fields 138 and 139, the link's TX and RX data counters.
    Throughput,
}

impl NvlinkSpec {
    /// Whether `link` is down at virtual time `t`.
    pub fn is_down(&self, link: u32, t: f64) -> bool {
        self.down.contains(&link) && t >= self.down_from_s
    }

    /// How many links are up at `t`.
    pub fn up_count(&self, t: f64) -> u32 {
        (0..self.links).filter(|&l| !self.is_down(l, t)).count() as u32
    }

    /// The speed of `link`, MB/s.
    pub fn speed_of(&self, link: u32) -> u32 {
        self.link_speed_mbps.get(link as usize).copied().unwrap_or(self.speed_mbps)
    }
}

mod defaults {
    pub fn driver() -> String {
        "580.159.04".to_string()
    }
    pub fn cuda() -> i32 {
        13000
    }
    pub fn nvml() -> String {
        "13.580.159.04".to_string()
    }
    pub fn one() -> f64 {
        1.0
    }
    pub fn gpm_call_ms() -> u64 {
        1
    }
}

impl Scenario {
    /// Parses a scenario and checks its bounds.
    pub fn parse(text: &str) -> Result<Self, String> {
        let scenario: Self = toml::from_str(text).map_err(|e| e.to_string())?;
        let count: u64 = scenario.gpus.iter().map(|g| u64::from(g.count)).sum();
        if count == 0 || count > MAX_GPUS as u64 {
            return Err(format!("a scenario has 1 to {MAX_GPUS} GPUs, this one {count}"));
        }
        if !(scenario.speed > 0.0 && scenario.speed.is_finite()) {
            return Err("speed must be a positive number".to_string());
        }
        for gpu in &scenario.gpus {
            for p in &gpu.processes {
                if p.mig.is_some_and(|m| m >= gpu.mig_devices.len()) {
                    return Err(format!("process {} names a MIG device the GPU does not have", p.pid));
                }
            }
        }
        Ok(scenario)
    }

    /// A generated scale scenario, `scale:G` or `scale:GxP`: G busy H200s with NVLink, each with P processes,
    /// and GPM calls that take no time (for measuring gpusight's own cost).
    pub fn scale(spec: &str) -> Result<Self, String> {
        let (gpus, procs) = spec.split_once('x').unwrap_or((spec, "0"));
        let gpus: u32 = gpus.parse().map_err(|_| format!("scale:{spec}: GPUs are a number"))?;
        let procs: u32 = procs.parse().map_err(|_| format!("scale:{spec}: processes are a number"))?;
        // PIDs from 10000: under 32768, the smallest pid_max, so gpusight's sanity check (a PID above the
        // machine's pid_max is no PID) keeps them on every machine.
        let process = if procs > 0 {
            format!("[[gpu.process]]\npid = 10000\ncount = {procs}\nsm = 50\nmem = 10\n")
        } else {
            String::new()
        };
        Self::parse(&format!(
            "name = \"scale\"\ngpm_call_ms = 0\n[[gpu]]\ncount = {gpus}\n[gpu.nvlink]\n[[gpu.phase]]\nutil = 90\n\
             power_w = 600.0\nmem_used_mib = 100000\ngpm_sm = 80.0\n{process}"
        ))
    }

    /// Loads a scenario from a built-in name or a file path.
    pub fn load(name_or_path: &str) -> Result<Self, String> {
        if let Some(spec) = name_or_path.strip_prefix("scale:") {
            return Self::scale(spec);
        }
        if let Some((_, text)) = BUILT_INS.iter().find(|(n, _)| *n == name_or_path) {
            return Self::parse(text).map_err(|e| format!("built-in scenario {name_or_path}: {e}"));
        }
        let text = std::fs::read_to_string(name_or_path).map_err(|e| {
            format!("cannot read scenario {name_or_path}: {e} (built-ins: h200, hgx8-mig, nvl72, consumer)")
        })?;
        Self::parse(&text).map_err(|e| format!("scenario {name_or_path}: {e}"))
    }
}

impl GpuSpec {
    /// The phase in force at virtual time `t` and when it began.
    pub fn phase_at(&self, t: f64) -> (Option<&Phase>, f64) {
        let Some(last) = self.phases.last() else { return (None, 0.0) };
        let total: f64 = self.phases.iter().map(|p| p.duration_s.unwrap_or(f64::INFINITY)).sum();
        let mut t_in = t.max(0.0);
        let mut base = 0.0;
        if self.repeat && total.is_finite() && total > 0.0 {
            let laps = (t_in / total).floor();
            base = laps * total;
            t_in -= base;
        }
        let mut start = 0.0;
        for phase in &self.phases {
            let d = phase.duration_s.unwrap_or(f64::INFINITY);
            if t_in < start + d {
                return (Some(phase), base + start);
            }
            start += d;
        }
        (Some(last), base + start - last.duration_s.unwrap_or(0.0))
    }

    /// The integral from 0 to `t` of a per-second quantity of the phases.
    pub fn integrate(&self, t: f64, rate: impl Fn(&Phase) -> f64) -> f64 {
        let idle = Phase::default();
        if self.phases.is_empty() {
            return rate(&idle) * t.max(0.0);
        }
        let mut sum = 0.0;
        let mut at = 0.0;
        // Walks phase by phase; a repeating list is walked lap by lap (bounded: a lap is at least a millisecond).
        let mut guard = 0u32;
        while at < t && guard < 1_000_000 {
            guard += 1;
            let (phase, start) = self.phase_at(at);
            let phase = phase.unwrap_or(&idle);
            let end = phase.duration_s.map_or(t, |d| (start + d).min(t)).max(at + 1e-3).min(t);
            sum += rate(phase) * (end - at);
            at = end;
            if end >= t {
                break;
            }
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_parses() {
        for (name, _) in BUILT_INS {
            let s = Scenario::load(name).unwrap_or_else(|e| panic!("{e}"));
            assert!(!s.gpus.is_empty(), "{name}");
        }
    }

    #[test]
    fn scale_scenarios_are_generated() {
        let s = Scenario::load("scale:8x1000").expect("scale");
        assert_eq!(s.gpus[0].count, 8);
        assert_eq!(s.gpus[0].processes[0].count, 1000);
        assert!(Scenario::load("scale:73").is_err());
        assert!(Scenario::load("scale:x").is_err());
    }

    #[test]
    fn gpu_counts_are_bounded() {
        assert!(Scenario::parse("").is_err());
        assert!(Scenario::parse("[[gpu]]\ncount = 73\n").is_err());
        assert!(Scenario::parse("[[gpu]]\ncount = 72\n").is_ok());
        assert!(Scenario::parse("[[gpu]]\nbogus = 1\n").is_err(), "unknown keys are refused");
    }

    #[test]
    fn phases_follow_each_other_and_the_last_holds() {
        let s = Scenario::parse(
            "[[gpu]]\n[[gpu.phase]]\nduration_s = 10\nutil = 5\n[[gpu.phase]]\nduration_s = 5\nutil = 90\n",
        )
        .expect("parse");
        let g = &s.gpus[0];
        assert_eq!(g.phase_at(0.0).0.map(|p| p.util), Some(5));
        assert_eq!(g.phase_at(12.0).0.map(|p| p.util), Some(90));
        assert_eq!(g.phase_at(100.0).0.map(|p| p.util), Some(90));
        let energy = g.integrate(15.0, |p| f64::from(p.util));
        assert!((energy - (50.0 + 450.0)).abs() < 1e-6, "{energy}");
    }

    #[test]
    fn repeating_phases_wrap() {
        let s = Scenario::parse(
            "[[gpu]]\nrepeat = true\n[[gpu.phase]]\nduration_s = 1\nutil = 1\n[[gpu.phase]]\nduration_s = 1\nutil = 2\n",
        )
        .expect("parse");
        assert_eq!(s.gpus[0].phase_at(2.5).0.map(|p| p.util), Some(1));
        assert_eq!(s.gpus[0].phase_at(3.5).0.map(|p| p.util), Some(2));
    }
}
