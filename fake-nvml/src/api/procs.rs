//! Process lists (`_v3`, `nvmlProcessInfo_t`) and per-process utilization samples.

use std::ffi::{c_uint, c_ulonglong};

use nvml_wrapper_sys::bindings::{nvmlProcessInfo_t, nvmlProcessUtilizationSample_t};

use crate::machine::Dev;
use crate::scenario::ProcSpec;
use crate::{device_fn, put, ret};

/// NVML's "not a MIG process" instance id.
const NO_INSTANCE: u32 = u32::MAX;

/// The processes running now on this device (a MIG device lists only its own), with their PIDs.
fn running(d: &Dev, graphics: bool) -> Vec<(u32, &'static ProcSpec)> {
    let t = d.machine.now();
    let mut out = Vec::new();
    for p in &d.gpu.spec.processes {
        let alive = t >= p.from_s && p.until_s.is_none_or(|u| t < u);
        let here = match d.mig {
            Some((m, _)) => p.mig == Some(m),
            None => true,
        };
        if alive && here && p.graphics == graphics {
            out.extend((0..p.count).map(|i| (p.pid.saturating_add(i), p)));
        }
    }
    out
}

unsafe fn list(d: &Dev, graphics: bool, count: *mut c_uint, infos: *mut nvmlProcessInfo_t) -> Result<(), u32> {
    if count.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    let procs = running(d, graphics);
    let n = u32::try_from(procs.len()).unwrap_or(u32::MAX);
    // SAFETY: `count` is not null and points at the caller's capacity (NVML's contract).
    let room = unsafe { *count };
    unsafe { count.write(n) };
    if infos.is_null() || room < n {
        return if n == 0 { Ok(()) } else { Err(ret::INSUFFICIENT_SIZE) };
    }
    for (i, (pid, spec)) in procs.iter().enumerate() {
        let (gi, ci) = match spec.mig.and_then(|m| d.gpu.spec.mig_devices.get(m)) {
            Some(m) => (m.gi, m.ci),
            None => (NO_INSTANCE, NO_INSTANCE),
        };
        let info = nvmlProcessInfo_t {
            pid: *pid,
            // NVML_VALUE_NOT_AVAILABLE (unsigned long long -1) when the driver cannot tell.
            usedGpuMemory: if spec.used_unknown {
                u64::MAX
            } else {
                spec.used_bytes.or(spec.used_mib.map(|m| m << 20)).unwrap_or(u64::MAX)
            },
            gpuInstanceId: gi,
            computeInstanceId: ci,
        };
        // SAFETY: the caller's array holds `room` >= n entries.
        unsafe { infos.add(i).write(info) };
    }
    Ok(())
}

device_fn!(nvmlDeviceGetComputeRunningProcesses_v3(count: *mut c_uint, infos: *mut nvmlProcessInfo_t) |d| {
    list(&d, false, count, infos)
});
device_fn!(nvmlDeviceGetGraphicsRunningProcesses_v3(count: *mut c_uint, infos: *mut nvmlProcessInfo_t) |d| {
    list(&d, true, count, infos)
});
device_fn!(nvmlDeviceGetMPSComputeRunningProcesses_v3(count: *mut c_uint, infos: *mut nvmlProcessInfo_t) |d| {
    let _ = d;
    put(count, 0)?;
    let _ = infos;
    Ok(())
});

device_fn!(nvmlDeviceGetProcessUtilization(
    samples: *mut nvmlProcessUtilizationSample_t,
    count: *mut c_uint,
    last_seen: c_ulonglong
) |d| {
    // Not supported on MIG devices (the NVML header says so), nor on a GPU in MIG mode.
    d.whole_gpu_only()?;
    if d.gpu.spec.mig {
        return Err(ret::NOT_SUPPORTED);
    }
    if count.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| u64::try_from(t.as_micros()).unwrap_or(u64::MAX));
    if now_us <= last_seen {
        return Err(ret::NOT_FOUND);
    }
    let mut procs = running(&d, false);
    procs.extend(running(&d, true));
    procs.retain(|(_, spec)| !spec.no_samples);
    let n = u32::try_from(procs.len()).unwrap_or(u32::MAX);
    if n == 0 {
        return Err(ret::NOT_FOUND);
    }
    let room = *count;
    count.write(n);
    if samples.is_null() || room < n {
        return Err(ret::INSUFFICIENT_SIZE);
    }
    for (i, (pid, spec)) in procs.iter().enumerate() {
        let s = nvmlProcessUtilizationSample_t {
            pid: *pid,
            timeStamp: now_us,
            smUtil: spec.sm,
            memUtil: spec.mem,
            encUtil: spec.enc,
            decUtil: spec.dec,
        };
        samples.add(i).write(s);
    }
    Ok(())
});
