//! NVLink: each link's state, version, far end and error counters.

use std::ffi::{c_uint, c_ulonglong};

use nvml_wrapper_sys::bindings::nvmlPciInfo_t;

use crate::machine::Dev;
use crate::scenario::NvlinkSpec;
use crate::{device_fn, put, ret};

/// The GPU's links, and that `link` is one of them.
fn link_of(d: &Dev, link: c_uint) -> Result<&'static NvlinkSpec, u32> {
    d.whole_gpu_only()?;
    let spec = d.gpu.spec.nvlink.as_ref().ok_or(ret::NOT_SUPPORTED)?;
    if link >= spec.links {
        return Err(ret::INVALID_ARGUMENT);
    }
    Ok(spec)
}

device_fn!(nvmlDeviceGetNvLinkState(link: c_uint, active: *mut c_uint) |d| {
    let spec = link_of(&d, link)?;
    put(active, u32::from(!spec.is_down(link, d.machine.now())))
});
device_fn!(nvmlDeviceGetNvLinkVersion(link: c_uint, version: *mut c_uint) |d| {
    let spec = link_of(&d, link)?;
    put(version, spec.version)
});
device_fn!(nvmlDeviceGetNvLinkRemotePciInfo_v2(link: c_uint, pci: *mut nvmlPciInfo_t) |d| {
    let spec = link_of(&d, link)?;
    let gpus = &d.machine.gpus;
    if spec.remote == "gpus" && gpus.len() > 1 {
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
    let spec = link_of(&d, link)?;
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
    put(value, n as u64)
});
device_fn!(nvmlDeviceGetNvLinkCapability(link: c_uint, capability: c_uint, result: *mut c_uint) |d| {
    link_of(&d, link)?;
    let _ = capability;
    put(result, 1)
});
