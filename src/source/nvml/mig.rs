//! The MIG devices of a GPU in MIG mode: each one's profile (from its name, `... MIG 1g.18gb`), GPU and compute
//! instance ids (raw NVML calls nvml-wrapper 0.13 does not wrap), UUID and memory. Read on the GPU's worker, on
//! the process tier; the slices' SM activity comes from the GPM thread (`gpm.rs`, one sample per GPU instance).

use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::{Device, Nvml};

use crate::sample::MigTick;

/// The profile in a MIG device's name: `NVIDIA H100 80GB HBM3 MIG 1g.10gb` is `1g.10gb`.
#[must_use]
pub fn profile_from_name(name: &str) -> Option<String> {
    let (_, profile) = name.rsplit_once(" MIG ")?;
    let profile = profile.trim();
    (!profile.is_empty() && profile.len() <= 32).then(|| profile.to_owned())
}

/// Which instance id to read.
#[derive(Debug, Clone, Copy)]
enum Instance {
    Gpu,
    Compute,
}

/// A MIG device's GPU or compute instance id, which nvml-wrapper 0.13 does not wrap.
#[expect(unsafe_code, reason = "NVML calls nvml-wrapper does not wrap, through their loaded symbols")]
fn instance_id(nvml: &Nvml, mig: &Device<'_>, which: Instance) -> Result<u32, NvmlError> {
    let lib = nvml.lib();
    let sym = match which {
        Instance::Gpu => lib.nvmlDeviceGetGpuInstanceId.as_ref(),
        Instance::Compute => lib.nvmlDeviceGetComputeInstanceId.as_ref(),
    }
    .map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
    let mut id: u32 = 0;
    // SAFETY: `sym` is nvmlDeviceGetGpuInstanceId or nvmlDeviceGetComputeInstanceId as loaded from the NVML
    // library, with the header's signature (a device handle, an `unsigned int*` output). The handle is a live MIG
    // device of the same `Nvml`, and the pointer is to a local `u32` (C `unsigned int` on Linux) that outlives
    // the call.
    let code = unsafe { sym(mig.handle(), &raw mut id) };
    nvml_try(code)?;
    Ok(id)
}

/// Reads every MIG device of `device` (a GPU in MIG mode). A missing index (a layout with holes) is skipped; a
/// failure of the count or of a device handle is the error.
pub fn read_mig_devices(nvml: &Nvml, device: &Device<'_>) -> Result<Vec<MigTick>, NvmlError> {
    let count = device.mig_device_count()?;
    let mut out = Vec::new();
    for index in 0..count {
        let mig = match device.mig_device_by_index(index) {
            Ok(mig) => mig,
            Err(NvmlError::NotFound | NvmlError::InvalidArg) => continue,
            Err(e) => return Err(e),
        };
        let memory = mig.memory_info().ok();
        out.push(MigTick {
            index,
            gpu_instance_id: instance_id(nvml, &mig, Instance::Gpu).ok(),
            compute_instance_id: instance_id(nvml, &mig, Instance::Compute).ok(),
            profile: mig.name().ok().as_deref().and_then(profile_from_name),
            uuid: mig.uuid().unwrap_or_default(),
            mem_used_bytes: memory.as_ref().map(|m| m.used),
            mem_total_bytes: memory.as_ref().map(|m| m.total).filter(|&t| t > 0),
            sm_active_pct: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_come_from_the_device_name() {
        assert_eq!(profile_from_name("NVIDIA H100 80GB HBM3 MIG 1g.10gb").as_deref(), Some("1g.10gb"));
        assert_eq!(profile_from_name("NVIDIA H200 MIG 3g.71gb").as_deref(), Some("3g.71gb"));
        assert_eq!(profile_from_name("NVIDIA H200 MIG 1c.3g.71gb").as_deref(), Some("1c.3g.71gb"));
        assert_eq!(profile_from_name("NVIDIA H200"), None);
        assert_eq!(profile_from_name("NVIDIA H200 MIG "), None);
    }
}
