//! NVLink: each link's state, version, far end and error counters.

use std::ffi::{c_uint, c_ulonglong};

use nvml_wrapper_sys::bindings::nvmlPciInfo_t;

use crate::machine::Dev;
use crate::scenario::NvlinkSpec;
use crate::{device_fn, put, ret};

/// The GPU's links, and that `link` is one of them; the faults of `call` on this link answer first.
fn link_of(d: &Dev, link: c_uint, call: &str) -> Result<&'static NvlinkSpec, u32> {
    d.whole_gpu_only()?;
    d.arg_faults(call, &[link])?;
    let spec = d.gpu.spec.nvlink.as_ref().ok_or(ret::NOT_SUPPORTED)?;
    if link >= spec.links {
        return Err(ret::INVALID_ARGUMENT);
    }
    Ok(spec)
}

device_fn!(nvmlDeviceGetNvLinkState(link: c_uint, active: *mut c_uint) |d| {
    // A fault on this call (or on this link alone) answers first; a link scheduled down answers down from its time.
    let spec = link_of(&d, link, "nvmlDeviceGetNvLinkState")?;
    put(active, u32::from(!spec.is_down(link, d.machine.now())))
});
device_fn!(nvmlDeviceGetNvLinkVersion(link: c_uint, version: *mut c_uint) |d| {
    let spec = link_of(&d, link, "nvmlDeviceGetNvLinkVersion")?;
    put(version, spec.version)
});
device_fn!(nvmlDeviceGetNvLinkRemotePciInfo_v2(link: c_uint, pci: *mut nvmlPciInfo_t) |d| {
    let spec = link_of(&d, link, "nvmlDeviceGetNvLinkRemotePciInfo_v2")?;
    let gpus = &d.machine.gpus;
    if let Some(&[domain, bus, device]) = spec.remote_pci.get(link as usize) {
        // A capture's far end: a GPU of the machine when one has that address, else a device of its own.
        let mut info = super::device::pci_info(d.gpu);
        if let Some(far) = gpus.iter().find(|g| (g.spec.pci_domain, g.pci_bus, g.spec.pci_device) == (domain, bus, device)) {
            info = super::device::pci_info(far);
        }
        (info.domain, info.bus, info.device) = (domain, bus, device);
        let long = format!("{domain:08X}:{bus:02X}:{device:02X}.0");
        for (dst, b) in info.busId.iter_mut().zip(long.bytes().chain(std::iter::repeat(0))) {
            *dst = b as std::ffi::c_char;
        }
        put(pci, info)
    } else if spec.remote == "gpus" && gpus.len() > 1 {
        // Link i goes to the (i mod (n-1))-th other GPU.
        let others: Vec<_> = gpus.iter().filter(|g| g.index != d.gpu.index).collect();
        let far = others[link as usize % others.len()];
        put(pci, super::device::pci_info(far))
    } else {
        // An NVSwitch: a bus of its own.
        let mut info = super::device::pci_info(d.gpu);
        info.bus = 0xf0 + link % 8;
        put(pci, info)
    }
});
device_fn!(nvmlDeviceGetNvLinkErrorCounter(link: c_uint, counter: c_uint, value: *mut c_ulonglong) |d| {
    let spec = link_of(&d, link, "nvmlDeviceGetNvLinkErrorCounter")?;
    d.arg_faults("nvmlDeviceGetNvLinkErrorCounter", &[link, counter])?;
    // DL_REPLAY 0, DL_RECOVERY 1, DL_CRC_FLIT 2, DL_CRC_DATA 3, DL_ECC_DATA 4.
    let rate = match counter {
        0 => spec.replay_per_s,
        1 => spec.recovery_per_s,
        2 => spec.crc_per_s,
        3 | 4 => 0.0,
        _ => return Err(ret::INVALID_ARGUMENT),
    };
    let since = (d.machine.now() - spec.errors_from_s).max(0.0);
    let n = if spec.errors_on.contains(&link) { rate * since } else { 0.0 };
    let start = spec.counters_start.get(link as usize).and_then(|c| c.get(counter as usize)).copied().unwrap_or(0);
    put(value, start.saturating_add(n as u64))
});
device_fn!(nvmlDeviceGetNvLinkCapability(link: c_uint, capability: c_uint, result: *mut c_uint) |d| {
    link_of(&d, link, "nvmlDeviceGetNvLinkCapability")?;
    let _ = capability;
    put(result, 1)
});
