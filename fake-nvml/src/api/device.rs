//! One device's identity, settings and readings, and field values.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong};

use nvml_wrapper_sys::bindings::{
    nvmlDevice_t, nvmlFieldValue_t, nvmlGpuP2PStatus_t, nvmlGpuTopologyLevel_t, nvmlMemory_v2_t, nvmlPciInfo_t,
    nvmlUtilization_t, nvmlValue_t,
};

use crate::machine::{Dev, Gpu};
use crate::{device_fn, put, put_str, ret};

const MIB: u64 = 1 << 20;

/// The PCI description of a GPU, as NVML fills `nvmlPciInfo_t`.
pub fn pci_info(gpu: &Gpu) -> nvmlPciInfo_t {
    let mut busid = [0 as c_char; 32];
    let mut legacy = [0 as c_char; 16];
    let (domain, device) = (gpu.spec.pci_domain, gpu.spec.pci_device);
    let long = format!("{domain:08X}:{:02X}:{device:02X}.0", gpu.pci_bus);
    let short = format!("{domain:04X}:{:02X}:{device:02X}.0", gpu.pci_bus);
    for (dst, b) in busid.iter_mut().zip(long.bytes()) {
        *dst = b as c_char;
    }
    for (dst, b) in legacy.iter_mut().zip(short.bytes()) {
        *dst = b as c_char;
    }
    nvmlPciInfo_t {
        busIdLegacy: legacy,
        domain,
        bus: gpu.pci_bus,
        device,
        pciDeviceId: gpu.spec.pci_device_id,
        pciSubSystemId: gpu.spec.pci_subsystem_id,
        busId: busid,
    }
}

/// The device's name: a MIG device's is its GPU's, "MIG" and its profile, as real drivers answer.
fn name_of(d: &Dev) -> String {
    match d.mig {
        Some((_, m)) => format!("{} MIG {}", d.gpu.spec.name, m.profile),
        None => d.gpu.spec.name.clone(),
    }
}

fn uuid_of(d: &Dev) -> String {
    match d.mig {
        Some((i, m)) => format!("MIG-{}-{:02x}{:02x}{:02x}", d.gpu.uuid.trim_start_matches("GPU-"), i, m.gi, m.ci),
        None => d.gpu.uuid.clone(),
    }
}

device_fn!(nvmlDeviceGetName(name: *mut c_char, length: c_uint) |d| { put_str(name, length, &name_of(&d)) });
device_fn!(nvmlDeviceGetUUID(uuid: *mut c_char, length: c_uint) |d| { put_str(uuid, length, &uuid_of(&d)) });
device_fn!(nvmlDeviceGetSerial(serial: *mut c_char, length: c_uint) |d| { put_str(serial, length, &d.gpu.serial) });
device_fn!(nvmlDeviceGetIndex(index: *mut c_uint) |d| { put(index, d.gpu.index) });
device_fn!(nvmlDeviceGetPciInfo_v3(pci: *mut nvmlPciInfo_t) |d| { put(pci, pci_info(d.gpu)) });
device_fn!(nvmlDeviceGetArchitecture(arch: *mut c_uint) |d| { put(arch, d.gpu.spec.architecture.as_c()) });
device_fn!(nvmlDeviceGetCudaComputeCapability(major: *mut c_int, minor: *mut c_int) |d| {
    put(major, d.gpu.spec.compute_capability[0])?;
    put(minor, d.gpu.spec.compute_capability[1])
});
device_fn!(nvmlDeviceGetPersistenceMode(mode: *mut c_uint) |d| { put(mode, u32::from(d.gpu.spec.persistence)) });
device_fn!(nvmlDeviceGetDisplayActive(active: *mut c_uint) |d| { put(active, u32::from(d.gpu.spec.display_active)) });
device_fn!(nvmlDeviceGetEccMode(current: *mut c_uint, pending: *mut c_uint) |d| {
    put(current, u32::from(d.gpu.spec.ecc))?;
    put(pending, u32::from(d.gpu.spec.ecc))
});

/// (total, reserved, used, free) in bytes: a capture's exact figures where it has them, else from the MiB ones.
fn memory_of(d: &Dev) -> (u64, u64, u64, u64) {
    let (total, reserved, used, free) = if let Some((_, m)) = d.mig {
        (m.memory_total_mib * MIB, 0, m.memory_used_mib * MIB, None)
    } else {
        let (s, p) = (&d.gpu.spec, d.phase());
        (
            s.memory_total_bytes.unwrap_or(s.memory_total_mib * MIB),
            s.memory_reserved_bytes.unwrap_or(s.memory_reserved_mib * MIB),
            p.mem_used_bytes.unwrap_or(p.mem_used_mib * MIB),
            p.mem_free_bytes,
        )
    };
    let used = used.min(total.saturating_sub(reserved));
    (total, reserved, used, free.unwrap_or_else(|| total.saturating_sub(reserved + used)))
}

device_fn!(nvmlDeviceGetMemoryInfo_v2(memory: *mut nvmlMemory_v2_t) |d| {
    let (total, reserved, used, free) = memory_of(&d);
    let version = if memory.is_null() { 0 } else { (*memory).version };
    put(memory, nvmlMemory_v2_t { version, total, reserved, free, used })
});
device_fn!(nvmlDeviceGetUtilizationRates(u: *mut nvmlUtilization_t) |d| {
    d.whole_gpu_only()?;
    // Under MIG the whole GPU's utilization is not reported.
    if d.gpu.spec.mig {
        return Err(ret::NOT_SUPPORTED);
    }
    let p = d.phase();
    put(u, nvmlUtilization_t { gpu: p.util, memory: p.mem_util })
});
device_fn!(nvmlDeviceGetClockInfo(kind: c_uint, clock: *mut c_uint) |d| {
    d.whole_gpu_only()?;
    d.arg_faults("nvmlDeviceGetClockInfo", &[kind])?;
    let p = d.phase();
    // NVML_CLOCK_GRAPHICS 0, SM 1, MEM 2, VIDEO 3.
    match kind {
        0 | 1 => put(clock, p.sm_clock_mhz),
        2 => put(clock, p.mem_clock_mhz),
        _ => Err(ret::NOT_SUPPORTED),
    }
});
device_fn!(nvmlDeviceGetMaxClockInfo(kind: c_uint, clock: *mut c_uint) |d| {
    d.arg_faults("nvmlDeviceGetMaxClockInfo", &[kind])?;
    match kind {
        0 | 1 => put(clock, d.gpu.spec.max_sm_clock_mhz),
        2 => put(clock, d.gpu.spec.max_mem_clock_mhz),
        _ => Err(ret::NOT_SUPPORTED),
    }
});
device_fn!(nvmlDeviceGetPowerUsage(power: *mut c_uint) |d| {
    d.whole_gpu_only()?;
    put(power, (d.phase().power_w * 1000.0).round() as u32)
});
device_fn!(nvmlDeviceGetEnforcedPowerLimit(limit: *mut c_uint) |d| {
    put(limit, d.gpu.spec.power_limit_w.unwrap_or(d.gpu.spec.power_default_w) * 1000)
});
device_fn!(nvmlDeviceGetPowerManagementDefaultLimit(limit: *mut c_uint) |d| {
    put(limit, d.gpu.spec.power_default_w * 1000)
});
device_fn!(nvmlDeviceGetPowerManagementLimit(limit: *mut c_uint) |d| {
    put(limit, d.gpu.spec.power_limit_w.unwrap_or(d.gpu.spec.power_default_w) * 1000)
});
device_fn!(nvmlDeviceGetPowerManagementLimitConstraints(min: *mut c_uint, max: *mut c_uint) |d| {
    put(min, d.gpu.spec.power_min_w * 1000)?;
    put(max, d.gpu.spec.power_max_w * 1000)
});
device_fn!(nvmlDeviceGetTotalEnergyConsumption(energy: *mut c_ulonglong) |d| {
    d.whole_gpu_only()?;
    let joules = d.gpu.spec.integrate(d.machine.now(), |p| p.power_w);
    put(energy, d.gpu.spec.energy_start_mj.saturating_add((joules * 1000.0) as u64))
});
device_fn!(nvmlDeviceGetTemperature(sensor: c_uint, temp: *mut c_uint) |d| {
    d.whole_gpu_only()?;
    d.arg_faults("nvmlDeviceGetTemperature", &[sensor])?;
    if sensor != 0 {
        return Err(ret::INVALID_ARGUMENT);
    }
    put(temp, d.phase().temp_c)
});
device_fn!(nvmlDeviceGetTemperatureThreshold(kind: c_uint, temp: *mut c_uint) |d| {
    // SHUTDOWN 0, SLOWDOWN 1, MEM_MAX 2, GPU_MAX 3.
    d.arg_faults("nvmlDeviceGetTemperatureThreshold", &[kind])?;
    let s = &d.gpu.spec;
    match kind {
        0 => put(temp, s.temp_shutdown_c),
        1 => put(temp, s.temp_slowdown_c),
        2 => put(temp, s.temp_mem_max_c),
        3 => put(temp, s.temp_gpu_max_c),
        _ => Err(ret::NOT_SUPPORTED),
    }
});
device_fn!(nvmlDeviceGetNumFans(fans: *mut c_uint) |d| { put(fans, d.gpu.spec.fans) });
device_fn!(nvmlDeviceGetFanSpeed_v2(fan: c_uint, speed: *mut c_uint) |d| {
    d.arg_faults("nvmlDeviceGetFanSpeed_v2", &[fan])?;
    if fan >= d.gpu.spec.fans {
        return Err(ret::INVALID_ARGUMENT);
    }
    put(speed, d.phase().fan_pct)
});
device_fn!(nvmlDeviceGetFanSpeed(speed: *mut c_uint) |d| {
    if d.gpu.spec.fans == 0 {
        return Err(ret::NOT_SUPPORTED);
    }
    put(speed, d.phase().fan_pct)
});
device_fn!(nvmlDeviceGetCurrentClocksThrottleReasons(reasons: *mut c_ulonglong) |d| {
    d.whole_gpu_only()?;
    put(reasons, d.phase().throttle)
});
device_fn!(nvmlDeviceGetCurrentClocksEventReasons(reasons: *mut c_ulonglong) |d| {
    d.whole_gpu_only()?;
    put(reasons, d.phase().throttle)
});
device_fn!(nvmlDeviceGetSupportedClocksThrottleReasons(reasons: *mut c_ulonglong) |d| {
    let _ = d;
    put(reasons, 0x1ff)
});
device_fn!(nvmlDeviceGetPerformanceState(state: *mut c_uint) |d| {
    d.whole_gpu_only()?;
    put(state, d.phase().pstate)
});
device_fn!(nvmlDeviceGetCurrPcieLinkGeneration(gen_: *mut c_uint) |d| { put(gen_, d.phase().pcie_gen) });
device_fn!(nvmlDeviceGetCurrPcieLinkWidth(width: *mut c_uint) |d| { put(width, d.phase().pcie_width) });
device_fn!(nvmlDeviceGetMaxPcieLinkGeneration(gen_: *mut c_uint) |d| { put(gen_, d.gpu.spec.pcie_max_gen) });
device_fn!(nvmlDeviceGetMaxPcieLinkWidth(width: *mut c_uint) |d| { put(width, d.gpu.spec.pcie_max_width) });
device_fn!(nvmlDeviceGetPcieThroughput(counter: c_uint, value: *mut c_uint) |d| {
    d.whole_gpu_only()?;
    d.arg_faults("nvmlDeviceGetPcieThroughput", &[counter])?;
    let p = d.phase();
    // TX_BYTES 0, RX_BYTES 1. The real call samples a 20 ms window; the fake answers at once.
    match counter {
        0 => put(value, p.pcie_tx_kbps),
        1 => put(value, p.pcie_rx_kbps),
        _ => Err(ret::INVALID_ARGUMENT),
    }
});
device_fn!(nvmlDeviceGetPcieReplayCounter(value: *mut c_uint) |d| { put(value, d.gpu.spec.pcie_replay) });
device_fn!(nvmlDeviceGetEncoderUtilization(util: *mut c_uint, period: *mut c_uint) |d| {
    d.whole_gpu_only()?;
    put(util, d.phase().enc_util)?;
    put(period, 167_000)
});
device_fn!(nvmlDeviceGetDecoderUtilization(util: *mut c_uint, period: *mut c_uint) |d| {
    d.whole_gpu_only()?;
    put(util, d.phase().dec_util)?;
    put(period, 167_000)
});
device_fn!(nvmlDeviceGetTotalEccErrors(kind: c_uint, counter: c_uint, count: *mut c_ulonglong) |d| {
    if !d.gpu.spec.ecc {
        return Err(ret::NOT_SUPPORTED);
    }
    // Error type: corrected 0, uncorrected 1; counter type: volatile 0, aggregate 1.
    d.arg_faults("nvmlDeviceGetTotalEccErrors", &[kind, counter])?;
    let t = d.machine.now();
    let n = if kind == 0 {
        d.gpu.spec.integrate(t, |p| p.ecc_corrected_per_s)
    } else {
        d.gpu.spec.integrate(t, |p| p.ecc_uncorrected_per_s)
    };
    let start = d.gpu.spec.ecc_start[((counter.min(1) * 2) + kind.min(1)) as usize];
    put(count, start.saturating_add(n as u64))
});
device_fn!(nvmlDeviceGetRetiredPagesPendingStatus(pending: *mut c_uint) |d| {
    put(pending, u32::from(d.gpu.spec.retired_pages_pending))
});
device_fn!(nvmlDeviceGetRemappedRows(corr: *mut c_uint, unc: *mut c_uint, pending: *mut c_uint, failed: *mut c_uint) |d| {
    put(corr, d.gpu.spec.remapped_rows[0])?;
    put(unc, d.gpu.spec.remapped_rows[1])?;
    put(pending, u32::from(d.gpu.spec.remapped_rows_pending))?;
    put(failed, u32::from(d.gpu.spec.remapped_rows_failure))
});
device_fn!(nvmlDeviceGetTopologyCommonAncestor(other: nvmlDevice_t, level: *mut nvmlGpuTopologyLevel_t) |d| {
    let o = crate::machine::peer("nvmlDeviceGetTopologyCommonAncestor", other)?;
    d.arg_faults("nvmlDeviceGetTopologyCommonAncestor", &[o.gpu.index])?;
    if let Some(&at) = d.gpu.spec.topology.get(o.gpu.index as usize) {
        return put(level, at);
    }
    // Pairs of neighbours share a PCIe switch; the others meet at the host bridge (0) or the node.
    let same_pair = d.gpu.index / 2 == o.gpu.index / 2;
    put(level, if d.gpu.index == o.gpu.index { 0 } else if same_pair { 10 } else { 40 })
});
device_fn!(nvmlDeviceGetP2PStatus(other: nvmlDevice_t, index: c_uint, status: *mut nvmlGpuP2PStatus_t) |d| {
    let o = crate::machine::peer("nvmlDeviceGetP2PStatus", other)?;
    d.arg_faults("nvmlDeviceGetP2PStatus", &[o.gpu.index, index])?;
    if let (2, Some(&s)) = (index, d.gpu.spec.p2p_nvlink.get(o.gpu.index as usize)) {
        return put(status, s);
    }
    // P2P_CAPS_INDEX_NVLINK is 2; status 0 is OK, 5 (NOT_SUPPORTED) otherwise.
    let both_nvlink = d.gpu.spec.nvlink.is_some() && o.gpu.spec.nvlink.is_some();
    put(status, if index == 2 && both_nvlink { 0 } else { 5 })
});

/// A phase's own rates of each link (a capture), RX (`dir` 0) or TX; empty where the phase gives none.
fn own_rates(p: &crate::scenario::Phase, dir: usize) -> &[f64] {
    if dir == 0 { &p.nvlink_link_rx_mib_s } else { &p.nvlink_link_tx_mib_s }
}

/// An NVLink field of one link (`scope`), or for 138 and 139 of all links (scope `u32::MAX`): the speed (164,
/// MB/s; 0 for a link that is down) and the TX (138) and RX (139) data counters, KiB: where the link's counters
/// start (a capture) plus what it carried since: its own rate where the phase gives each link's (a capture), else
/// the phase's NVLink rate shared evenly by the links that are up (a link that went down keeps what it carried
/// until then).
fn nvlink_field(d: &Dev, id: u32, scope: u32, t: f64) -> Result<(u32, nvmlValue_t), u32> {
    use crate::scenario::{NvlinkField, Phase};
    let Some(links) = d.gpu.spec.nvlink.as_ref() else { return Err(ret::NOT_SUPPORTED) };
    let kind = if id == 164 { NvlinkField::Speed } else { NvlinkField::Throughput };
    if links.not_supported.contains(&kind) {
        return Err(ret::NOT_SUPPORTED);
    }
    if (scope != u32::MAX && scope >= links.links) || (id == 164 && scope == u32::MAX) {
        return Err(ret::INVALID_ARGUMENT);
    }
    if id == 164 {
        let speed = if links.is_down(scope, t) { 0 } else { links.speed_of(scope) };
        return Ok((1, nvmlValue_t { uiVal: speed }));
    }
    // RX first, as the capture's `traffic_start_kib` pairs are.
    let dir = usize::from(id != 139);
    let total = |p: &Phase| if dir == 0 { p.nvlink_rx_mib_s } else { p.nvlink_tx_mib_s };
    let start = |l: usize| links.traffic_start_kib.get(l).map_or(0.0, |s| s[dir] as f64);
    let kib = if scope == u32::MAX {
        let all = |p: &Phase| if own_rates(p, dir).is_empty() { total(p) } else { own_rates(p, dir).iter().sum() };
        (0..links.links as usize).map(start).sum::<f64>() + d.gpu.spec.integrate(t, all) * 1024.0
    } else {
        let (until, sharing) =
            if links.is_down(scope, t) { (links.down_from_s, links.links) } else { (t, links.up_count(t)) };
        let sharing = f64::from(sharing.max(1));
        let own = |p: &Phase| own_rates(p, dir).get(scope as usize).copied().unwrap_or_else(|| total(p) / sharing);
        start(scope as usize) + d.gpu.spec.integrate(until, own) * 1024.0
    };
    Ok((3, nvmlValue_t { ullVal: kib as u64 }))
}

/// The value of one field at this moment: Ok(value) or the field's own error.
fn field_value(d: &Dev, id: u32, scope: u32) -> Result<(u32, nvmlValue_t), u32> {
    let p = d.phase();
    let t = d.machine.now();
    let counter = |i: usize| {
        d.gpu.spec.throttle_ns_start[i].saturating_add(d.gpu.spec.integrate(t, |p| p.throttle_ns_per_s[i]) as u64)
    };
    // A capture's per-field answer: the field's own error (ids in either numbering: 269-271 are 251-253), for
    // every scope (`args = [id]`) or one (`args = [id, scope]`: an NVLink field of one link).
    let canonical = if (269..=271).contains(&id) { id - 18 } else { id };
    for fid in [id, canonical] {
        crate::machine::arg_faults("nvmlDeviceGetFieldValues", d.gpu, t, &[fid, scope])?;
    }
    // valueType: 0 double, 1 unsigned int, 3 unsigned long long.
    match id {
        82 => Ok((1, nvmlValue_t { uiVal: p.mem_temp_c })),
        186 => Ok((1, nvmlValue_t { uiVal: (p.power_w * 1000.0) as u32 })),
        74 => Ok((3, nvmlValue_t { ullVal: counter(0) })),
        76 => Ok((3, nvmlValue_t { ullVal: counter(1) })),
        // Canonical 251-253, or 269-271 as drivers from 580.82 number them.
        251 | 269 => Ok((3, nvmlValue_t { ullVal: counter(2) })),
        252 | 270 => Ok((3, nvmlValue_t { ullVal: counter(3) })),
        253 | 271 => Ok((3, nvmlValue_t { ullVal: counter(4) })),
        91 => d.gpu.spec.nvlink.as_ref().map(|l| (1, nvmlValue_t { uiVal: l.links })).ok_or(ret::NOT_SUPPORTED),
        138 | 139 | 164 => nvlink_field(d, id, scope, t),
        _ => Err(ret::NOT_SUPPORTED),
    }
}

device_fn!(nvmlDeviceGetFieldValues(count: c_int, values: *mut nvmlFieldValue_t) |d| {
    if values.is_null() || count < 0 {
        return Err(ret::INVALID_ARGUMENT);
    }
    // SAFETY: NVML's contract: `values` points at `count` entries whose fieldId (and scopeId) the caller set.
    let entries = std::slice::from_raw_parts_mut(values, count as usize);
    let now_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |t| t.as_micros());
    for e in entries {
        e.timestamp = i64::try_from(now_us).unwrap_or(0);
        e.latencyUsec = 0;
        match field_value(&d, e.fieldId, e.scopeId) {
            Ok((kind, value)) => {
                e.valueType = kind;
                e.value = value;
                e.nvmlReturn = ret::SUCCESS;
            }
            Err(code) => e.nvmlReturn = code,
        }
    }
    Ok(())
});
