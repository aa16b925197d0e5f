//! What a GPU and the driver are, read once at open: identity, maxima, thresholds, settings, and the PCI
//! device's NUMA node and local CPUs from sysfs.

use std::collections::BTreeMap;
use std::path::Path;

use nvml_wrapper::Device;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureThreshold};
use nvml_wrapper::error::NvmlError;

use crate::host::parse::parse_cpulist;
use crate::sample::{GpuInfo, GpuPeer, PciePath};

/// The driver and library versions, read once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DriverInfo {
    /// For example "580.159.04".
    pub driver_version: Option<String>,
    /// The newest CUDA version the driver supports, as NVML encodes it: 13000 is 13.0.
    pub cuda_driver_version: Option<i32>,
    pub nvml_version: Option<String>,
    /// Whether `/proc/driver/nvidia/version` says the Open Kernel Module is loaded.
    pub open_kernel_module: Option<bool>,
}

/// Formats a PCI address in the sysfs form from its integer parts: `0000:81:00.0`. Domains above 0xffff (VMD)
/// keep all their digits.
#[must_use]
pub fn sysfs_bus_id(domain: u32, bus: u32, device: u32) -> String {
    format!("{domain:04x}:{bus:02x}:{device:02x}.0")
}

/// Parses a PCI address in any of the forms NVML, sysfs and the kernel log use (`00000000:81:00.0`,
/// `0000:81:00.0`, `0000:81:00`, upper or lower case) into (domain, bus, device).
#[must_use]
pub fn parse_bus_id(text: &str) -> Option<(u32, u32, u32)> {
    let text = text.trim();
    let text = text.strip_prefix("PCI:").unwrap_or(text);
    let without_function = match text.rsplit_once('.') {
        Some((head, func)) if !func.is_empty() && func.chars().all(|c| c.is_ascii_hexdigit()) => head,
        Some(_) => return None,
        None => text,
    };
    let mut parts = without_function.split(':');
    let (domain, bus, device) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || domain.is_empty() || domain.len() > 8 || bus.len() != 2 || device.len() != 2 {
        return None;
    }
    Some((
        u32::from_str_radix(domain, 16).ok()?,
        u32::from_str_radix(bus, 16).ok()?,
        u32::from_str_radix(device, 16).ok()?,
    ))
}

/// Whether the text of `/proc/driver/nvidia/version` names the open kernel module.
#[must_use]
pub fn is_open_kernel_module(version_text: &str) -> bool {
    version_text.contains("Open Kernel Module")
}

/// Parses sysfs `numa_node`: `-1` (none reported) is `None`.
#[must_use]
pub fn parse_numa_node(text: &str) -> Option<u32> {
    text.trim().parse::<i64>().ok().and_then(|n| u32::try_from(n).ok())
}

/// Parses `/proc/sys/kernel/pid_max`, defaulting to the kernel's 64-bit maximum when unreadable.
#[must_use]
pub fn parse_pid_max(text: Option<&str>) -> u32 {
    text.and_then(|t| t.trim().parse().ok()).unwrap_or(4_194_304)
}

/// Reads the NUMA node and local CPU list of a PCI device from sysfs under `sysfs_pci_devices`
/// (normally `/sys/bus/pci/devices`).
#[must_use]
pub fn read_pci_locality(sysfs_pci_devices: &Path, bus_id: &str) -> (Option<u32>, Option<Vec<u32>>) {
    let dir = sysfs_pci_devices.join(bus_id);
    let numa = std::fs::read_to_string(dir.join("numa_node")).ok().and_then(|t| parse_numa_node(&t));
    let cpus = std::fs::read_to_string(dir.join("local_cpulist")).ok().and_then(|t| parse_cpulist(&t));
    (numa, cpus)
}

/// Reads the static description of one GPU. Every field that does not answer is `None`; nothing here fails.
/// Errors other than "not supported" are returned as notes.
pub fn read_gpu_info(index: u32, device: &Device<'_>, notes: &mut Vec<String>) -> GpuInfo {
    let mut note = |what: &str, err: &NvmlError| {
        if !matches!(
            err,
            NvmlError::NotSupported
                | NvmlError::FunctionNotFound
                | NvmlError::FailedToLoadSymbol(_)
                | NvmlError::UnexpectedVariant(_)
        ) {
            notes.push(format!("GPU {index}: reading {what} failed: {err}"));
        }
    };
    let mut get = |what: &str, r: Result<u32, NvmlError>| r.map_err(|e| note(what, &e)).ok();

    let pci = device.pci_info();
    let pci_bus_id = match &pci {
        Ok(p) => sysfs_bus_id(p.domain, p.bus, p.device),
        Err(_) => String::new(),
    };
    let (numa_node, local_cpus) = if pci_bus_id.is_empty() {
        (None, None)
    } else {
        read_pci_locality(Path::new("/sys/bus/pci/devices"), &pci_bus_id)
    };
    let constraints = device.power_management_limit_constraints().ok();

    GpuInfo {
        index,
        name: device.name().unwrap_or_else(|_| "unknown GPU".to_string()),
        uuid: device.uuid().unwrap_or_default(),
        pci_bus_id,
        architecture: device.architecture().ok().map(|a| a.to_string()),
        compute_capability: device.cuda_compute_capability().ok().map(|c| (c.major, c.minor)),
        mem_total_bytes: device.memory_info().ok().map(|m| m.total).filter(|&t| t > 0),
        max_sm_clock_mhz: get("max SM clock", device.max_clock_info(Clock::SM)),
        max_mem_clock_mhz: get("max memory clock", device.max_clock_info(Clock::Memory)),
        max_pcie_gen: get("max PCIe generation", device.max_pcie_link_gen()),
        max_pcie_width: get("max PCIe width", device.max_pcie_link_width()),
        power_limit_default_mw: get("default power limit", device.power_management_limit_default()),
        power_limit_min_mw: constraints.as_ref().map(|c| c.min_limit),
        power_limit_max_mw: constraints.as_ref().map(|c| c.max_limit),
        temp_slowdown_c: get("slowdown temperature", device.temperature_threshold(TemperatureThreshold::Slowdown)),
        temp_shutdown_c: get("shutdown temperature", device.temperature_threshold(TemperatureThreshold::Shutdown)),
        temp_gpu_max_c: get("GPU max temperature", device.temperature_threshold(TemperatureThreshold::GpuMax)),
        temp_mem_max_c: get("memory max temperature", device.temperature_threshold(TemperatureThreshold::MemoryMax)),
        numa_node,
        local_cpus,
        persistence_mode: device.is_in_persistent_mode().ok(),
        mig_enabled: device.mig_mode().ok().map(|m| m.current == 1),
        ecc_enabled: device.is_ecc_enabled().ok().map(|e| e.currently_enabled),
        display_active: device.is_display_active().ok(),
        gpm_supported: device.gpm_support().unwrap_or(false),
        nvlinks_active: active_nvlinks(device),
        peers: Vec::new(),
    }
}

use super::nvlink::MAX_NVLINKS;

/// How many NVLink links of this GPU are up; `None` when NVML does not say for the first link.
fn active_nvlinks(device: &Device<'_>) -> Option<u32> {
    let mut active = 0;
    for link in 0..MAX_NVLINKS {
        match device.link_wrapper_for(link).is_active() {
            Ok(true) => active += 1,
            Ok(false) => {}
            Err(_) if link == 0 => return None,
            Err(_) => break,
        }
    }
    Some(active)
}

/// NVLink links of `device` whose far end is the GPU with this PCI bus id.
fn direct_nvlinks(device: &Device<'_>, peer_bus: Option<(u32, u32, u32)>) -> u32 {
    let mut direct = 0;
    for link in 0..MAX_NVLINKS {
        let wrapper = device.link_wrapper_for(link);
        if !wrapper.is_active().unwrap_or(false) {
            continue;
        }
        let remote = wrapper.remote_pci_info().ok().map(|p| (p.domain, p.bus, p.device));
        if remote.is_some() && remote == peer_bus {
            direct += 1;
        }
    }
    direct
}

/// The closest PCIe ancestor each pair of GPUs shares, by their indexes, smaller first. NVML is asked once a pair:
/// where two GPUs meet in the PCIe tree is the same seen from either (28 calls at 8 GPUs, not 56).
fn pcie_paths(
    nvml: &nvml_wrapper::Nvml,
    devices: &[(u32, std::sync::Arc<Device<'static>>)],
) -> BTreeMap<(u32, u32), PciePath> {
    use nvml_wrapper::enum_wrappers::device::TopologyLevel;
    let mut paths = BTreeMap::new();
    for (i, (a, da)) in devices.iter().enumerate() {
        for (b, _) in devices.iter().skip(i + 1).filter(|(b, _)| b != a) {
            // nvml-wrapper takes the other device by value: a second handle to it, from its index.
            let other = nvml.device_by_index(*b).ok();
            let Some(level) = other.and_then(|o| da.topology_common_ancestor(o).ok()) else { continue };
            let path = match level {
                TopologyLevel::Internal => PciePath::Board,
                TopologyLevel::Single => PciePath::Bridge,
                TopologyLevel::Multiple => PciePath::Bridges,
                TopologyLevel::HostBridge => PciePath::HostBridge,
                TopologyLevel::Node => PciePath::Node,
                TopologyLevel::System => PciePath::System,
            };
            paths.insert(pair_key(*a, *b), path);
        }
    }
    paths
}

/// The key of the pair `a`, `b` in [`pcie_paths`]: either way round, the same.
fn pair_key(a: u32, b: u32) -> (u32, u32) {
    (a.min(b), a.max(b))
}

/// Fills in each GPU's `peers`: NVLink links to the other GPU (directly, or all of them when the two reach each
/// other over NVLink through NVSwitch) and the closest PCIe ancestor the two share. Called once at start-up.
pub fn read_topology(
    nvml: &nvml_wrapper::Nvml,
    gpus: &mut [GpuInfo],
    devices: &[(u32, std::sync::Arc<Device<'static>>)],
) {
    use nvml_wrapper::enum_wrappers::device::{P2pCapabilitiesIndex, P2pStatus};
    let bus = |index: u32| gpus.iter().find(|g| g.index == index).and_then(|g| parse_bus_id(&g.pci_bus_id));
    let paths = pcie_paths(nvml, devices);
    let mut peers: Vec<(u32, GpuPeer)> = Vec::new();
    for (a, da) in devices {
        let active = gpus.iter().find(|g| g.index == *a).and_then(|g| g.nvlinks_active).unwrap_or(0);
        for (b, db) in devices.iter().filter(|(b, _)| b != a) {
            let pcie = paths.get(&pair_key(*a, *b)).copied();
            let nvlinks = if active == 0 {
                Some(0)
            } else {
                let direct = direct_nvlinks(da, bus(*b));
                let over_nvlink = matches!(da.p2p_status(db, P2pCapabilitiesIndex::NvLink), Ok(P2pStatus::Ok));
                // Through NVSwitch every active link reaches every peer, as nvidia-smi counts them.
                Some(if direct > 0 {
                    direct
                } else if over_nvlink {
                    active
                } else {
                    0
                })
            };
            peers.push((*a, GpuPeer { index: *b, nvlinks, pcie }));
        }
    }
    for (a, peer) in peers {
        if let Some(g) = gpus.iter_mut().find(|g| g.index == a) {
            g.peers.push(peer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_from_integers() {
        assert_eq!(sysfs_bus_id(0, 0x81, 0), "0000:81:00.0");
        assert_eq!(sysfs_bus_id(0, 0x1b, 0x1f), "0000:1b:1f.0");
        assert_eq!(sysfs_bus_id(0x10000, 0x01, 0), "10000:01:00.0", "VMD domains keep their digits");
    }

    #[test]
    fn bus_ids_in_every_form_parse_alike() {
        let want = Some((0, 0x81, 0));
        assert_eq!(parse_bus_id("00000000:81:00.0"), want);
        assert_eq!(parse_bus_id("0000:81:00.0"), want);
        assert_eq!(parse_bus_id("0000:81:00"), want);
        assert_eq!(parse_bus_id("PCI:0000:81:00"), want);
        assert_eq!(parse_bus_id("0000:CB:00"), Some((0, 0xcb, 0)));
        assert_eq!(parse_bus_id("10000:01:00.0"), Some((0x10000, 1, 0)));
        assert_eq!(parse_bus_id("81:00"), None);
        assert_eq!(parse_bus_id("0000:81:00.x"), None);
        assert_eq!(parse_bus_id("zz00:81:00"), None);
        assert_eq!(parse_bus_id(""), None);
    }

    #[test]
    fn open_module_detection() {
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n";
        let closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n";
        assert!(is_open_kernel_module(open));
        assert!(!is_open_kernel_module(closed));
    }

    #[test]
    fn numa_and_pid_max() {
        assert_eq!(parse_numa_node("-1\n"), None);
        assert_eq!(parse_numa_node("1\n"), Some(1));
        assert_eq!(parse_numa_node("x"), None);
        assert_eq!(parse_pid_max(Some("32768\n")), 32_768);
        assert_eq!(parse_pid_max(None), 4_194_304);
        assert_eq!(parse_pid_max(Some("junk")), 4_194_304);
    }

    #[test]
    fn locality_from_a_fake_sysfs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dev = dir.path().join("0000:81:00.0");
        std::fs::create_dir(&dev).expect("mkdir");
        std::fs::write(dev.join("numa_node"), "1\n").expect("write");
        std::fs::write(dev.join("local_cpulist"), "16-19,48\n").expect("write");
        assert_eq!(read_pci_locality(dir.path(), "0000:81:00.0"), (Some(1), Some(vec![16, 17, 18, 19, 48])));
        assert_eq!(read_pci_locality(dir.path(), "0000:82:00.0"), (None, None));
    }
}
