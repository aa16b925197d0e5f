//! MIG: the mode, MIG device handles, and their GPU and compute instance ids.

use std::ffi::c_uint;

use nvml_wrapper_sys::bindings::nvmlDevice_t;

use crate::{device_fn, put, ret};

device_fn!(nvmlDeviceGetMigMode(current: *mut c_uint, pending: *mut c_uint) |d| {
    if d.mig.is_some() {
        return Err(ret::NOT_SUPPORTED);
    }
    // A GPU without MIG capability (consumer cards) answers NotSupported; the scenario's faults decide that.
    put(current, u32::from(d.gpu.spec.mig))?;
    put(pending, u32::from(d.gpu.spec.mig))
});
device_fn!(nvmlDeviceGetMaxMigDeviceCount(count: *mut c_uint) |d| {
    if d.mig.is_some() {
        return Err(ret::NOT_SUPPORTED);
    }
    // The H100/H200 can be split into at most seven.
    put(count, if d.gpu.spec.mig { 7 } else { 0 })
});
device_fn!(nvmlDeviceGetMigDeviceHandleByIndex(index: c_uint, mig: *mut nvmlDevice_t) |d| {
    if d.mig.is_some() || !d.gpu.spec.mig {
        return Err(ret::INVALID_ARGUMENT);
    }
    if index as usize >= d.gpu.spec.mig_devices.len() {
        return Err(ret::NOT_FOUND);
    }
    let slot = d.machine.mig_slot(d.gpu.index as usize, index as usize).ok_or(ret::NOT_FOUND)?;
    put(mig, d.machine.handle(slot))
});
device_fn!(nvmlDeviceIsMigDeviceHandle(is_mig: *mut c_uint) |d| { put(is_mig, u32::from(d.mig.is_some())) });
device_fn!(nvmlDeviceGetDeviceHandleFromMigDeviceHandle(parent: *mut nvmlDevice_t) |d| {
    if d.mig.is_none() {
        return Err(ret::INVALID_ARGUMENT);
    }
    put(parent, d.machine.handle(d.gpu.index as usize))
});
device_fn!(nvmlDeviceGetGpuInstanceId(id: *mut c_uint) |d| {
    let (_, m) = d.mig.ok_or(ret::NOT_SUPPORTED)?;
    put(id, m.gi)
});
device_fn!(nvmlDeviceGetComputeInstanceId(id: *mut c_uint) |d| {
    let (_, m) = d.mig.ok_or(ret::NOT_SUPPORTED)?;
    put(id, m.ci)
});
