//! GPM: support, samples and metrics, with the contract real libnvidia-ml needs: no two GPM calls at once on one
//! GPU (nor, unless the scenario allows it, on two GPUs: the real library crashed when they overlapped).

use std::collections::HashSet;
use std::ffi::{c_char, c_uint};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nvml_wrapper_sys::bindings::{
    nvmlGpmMetric_t__bindgen_ty_1, nvmlGpmMetricsGet_t, nvmlGpmSample_st, nvmlGpmSample_t, nvmlGpmSupport_t,
    nvmlReturn_t,
};

use crate::machine::{self, Dev, Machine, live, violation};
use crate::{device_fn, guard, put, ret};

/// What a GPM sample holds: when and where it was taken.
#[derive(Debug, Default)]
struct Sample {
    gpu: Option<usize>,
    /// The GPU instance of a MIG sample.
    gi: Option<u32>,
    t: f64,
}

/// The samples allocated and not yet freed, by address.
static SAMPLES: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

fn samples() -> std::sync::MutexGuard<'static, Option<HashSet<usize>>> {
    SAMPLES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Holds a GPU's GPM flag (and the machine's) for the length of one call; two holders at once break the contract.
struct Busy<'a> {
    flags: Vec<&'a AtomicBool>,
}

impl<'a> Busy<'a> {
    fn enter(machine: &'a Machine, gpu: usize, call: &str) -> Self {
        let mut flags = Vec::new();
        if let Some(g) = machine.gpus.get(gpu) {
            if g.gpm_busy.swap(true, Ordering::SeqCst) {
                violation(&format!("{call} on GPU {gpu} while another GPM call runs on the same GPU"));
            }
            flags.push(&g.gpm_busy);
        }
        if !machine.scenario.gpm_allow_cross_gpu {
            if machine.gpm_any.swap(true, Ordering::SeqCst) {
                violation(&format!("{call} on GPU {gpu} while a GPM call runs on another GPU"));
            }
            flags.push(&machine.gpm_any);
        }
        // The real call takes 1-2 ms; holding the flag as long makes overlapping callers collide as they would.
        std::thread::sleep(Duration::from_millis(machine.scenario.gpm_call_ms));
        Self { flags }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        for f in &self.flags {
            f.store(false, Ordering::SeqCst);
        }
    }
}

/// The sample behind a handle; an unknown or freed one breaks the contract.
fn sample_mut<'a>(handle: nvmlGpmSample_t, call: &str) -> &'a mut Sample {
    if !samples().as_ref().is_some_and(|s| s.contains(&(handle as usize))) {
        violation(&format!("{call} with a GPM sample that was never allocated or is already freed"));
    }
    // SAFETY: the address is in the registry: a live `Box<Sample>` from `nvmlGpmSampleAlloc`.
    unsafe { &mut *handle.cast::<Sample>() }
}

device_fn!(nvmlGpmQueryDeviceSupport(support: *mut nvmlGpmSupport_t) |d| {
    let version = if support.is_null() { 0 } else { (*support).version };
    put(support, nvmlGpmSupport_t { version, isSupportedDevice: u32::from(d.gpu.spec.gpm && d.mig.is_none()) })
});

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleAlloc(sample: *mut nvmlGpmSample_t) -> nvmlReturn_t {
    guard(|| {
        live("nvmlGpmSampleAlloc");
        let raw = Box::into_raw(Box::new(Sample::default()));
        samples().get_or_insert_with(HashSet::new).insert(raw as usize);
        unsafe { put(sample, raw.cast::<nvmlGpmSample_st>()) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleFree(sample: nvmlGpmSample_t) -> nvmlReturn_t {
    guard(|| {
        live("nvmlGpmSampleFree");
        let known = samples().as_mut().is_some_and(|s| s.remove(&(sample as usize)));
        if !known {
            violation("nvmlGpmSampleFree with a GPM sample that was never allocated or is already freed");
        }
        // SAFETY: it was in the registry: a `Box<Sample>` from `nvmlGpmSampleAlloc`, now removed, freed once.
        drop(unsafe { Box::from_raw(sample.cast::<Sample>()) });
        Ok(())
    })
}

fn take(d: &Dev, sample: nvmlGpmSample_t, gi: Option<u32>, call: &str) -> Result<(), nvmlReturn_t> {
    if !d.gpu.spec.gpm || d.mig.is_some() {
        return Err(ret::NOT_SUPPORTED);
    }
    if let Some(gi) = gi
        && !d.gpu.spec.mig_devices.iter().any(|m| m.gi == gi)
    {
        return Err(ret::NOT_FOUND);
    }
    let s = sample_mut(sample, call);
    let _busy = Busy::enter(d.machine, d.gpu.index as usize, call);
    *s = Sample { gpu: Some(d.gpu.index as usize), gi, t: d.machine.now() };
    Ok(())
}

device_fn!(nvmlGpmSampleGet(sample: nvmlGpmSample_t) |d| { take(&d, sample, None, "nvmlGpmSampleGet") });
device_fn!(nvmlGpmMigSampleGet(gi: c_uint, sample: nvmlGpmSample_t) |d| {
    take(&d, sample, Some(gi), "nvmlGpmMigSampleGet")
});

/// Static names for the metric info (nvml-wrapper reads them as C strings).
fn info() -> nvmlGpmMetric_t__bindgen_ty_1 {
    let name = c"fake".as_ptr().cast_mut();
    let unit = c"%".as_ptr().cast_mut();
    nvmlGpmMetric_t__bindgen_ty_1 { shortName: name, longName: name.cast::<c_char>(), unit }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmMetricsGet(request: *mut nvmlGpmMetricsGet_t) -> nvmlReturn_t {
    guard(|| {
        let call = "nvmlGpmMetricsGet";
        let m = live(call);
        if request.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        // SAFETY: NVML's contract: a valid request the caller owns.
        let req = unsafe { &mut *request };
        let (s1, s2) = (sample_mut(req.sample1, call), sample_mut(req.sample2, call));
        let (Some(g1), Some(g2)) = (s1.gpu, s2.gpu) else { return Err(ret::INVALID_ARGUMENT) };
        if g1 != g2 || s1.gi != s2.gi || s2.t < s1.t {
            return Err(ret::INVALID_ARGUMENT);
        }
        let gpu = m.gpus.get(g2).ok_or(ret::INVALID_ARGUMENT)?;
        machine::faults(call, gpu, m.now())?;
        let _busy = Busy::enter(m, g2, call);
        let phase = gpu.spec.phase_at(s2.t).0.cloned().unwrap_or_default();
        let mig_sm = s2.gi.and_then(|gi| gpu.spec.mig_devices.iter().find(|d| d.gi == gi)).map(|d| d.gpm_sm);
        let n = (req.numMetrics as usize).min(req.metrics.len());
        for metric in &mut req.metrics[..n] {
            let value = match metric.metricId {
                1 => Some(mig_sm.unwrap_or(phase.gpm_graphics)),
                2 => Some(mig_sm.unwrap_or(phase.gpm_sm)),
                3 => Some(phase.gpm_occupancy),
                5 => Some(phase.gpm_tensor),
                10 => Some(phase.gpm_dram),
                // PCIe in MiB/s: a capture's own, else from the KB/s readings (KB of 1,000 bytes, as gpusight
                // converts them back); NVLink totals in MiB/s.
                20 => Some(phase.gpm_pcie_tx_mib_s.unwrap_or(f64::from(phase.pcie_tx_kbps) / 1_048.576)),
                21 => Some(phase.gpm_pcie_rx_mib_s.unwrap_or(f64::from(phase.pcie_rx_kbps) / 1_048.576)),
                60 => gpu.spec.nvlink.as_ref().map(|_| phase.nvlink_rx_mib_s),
                61 => gpu.spec.nvlink.as_ref().map(|_| phase.nvlink_tx_mib_s),
                _ => None,
            };
            metric.metricInfo = info();
            // A capture's per-metric answer: the metric's own error.
            if let Err(code) = machine::arg_faults(call, gpu, m.now(), &[metric.metricId]) {
                metric.nvmlReturn = code;
                continue;
            }
            match value {
                Some(v) => {
                    metric.value = v;
                    metric.nvmlReturn = ret::SUCCESS;
                }
                None => metric.nvmlReturn = ret::NOT_SUPPORTED,
            }
        }
        Ok(())
    })
}
