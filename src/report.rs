//! `gpusight report`: a reproducibility record of the machine and its steady state, as the benchmark playbook
//! asks for: GPU SKU and memory, driver and CUDA driver version, PCIe link and NUMA placement per GPU, power
//! limits and clocks, and over the window the medians of power, temperature, clocks and utilization, the share
//! of time each throttle reason was active, and whether thermal steady state was reached. Unknown fields say
//! "unknown" rather than being left out.

use serde::Serialize;
use serde_json::Value;

use crate::advice::rules::datapath::cpu_list;
use crate::advice::window::{Num, bytes_label, duration_label};
use crate::history::Readings;
use crate::history::{GpuSeries, History, Niche, Series};
use crate::sample::{GpuInfo, MachineInfo, ThrottleCounters, Tick, UnixMs, throttle};

mod markdown;
mod steady;

pub use steady::{SteadyCriterion, SteadyState};

/// The JSON schema name and version of [`Report::to_json`] (2: the accounts of each job's GPU time came).
pub const SCHEMA: &str = "gpusight.report/2";

/// The whole record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub host: HostSection,
    pub window: WindowSection,
    pub steady_criterion: SteadyCriterion,
    pub gpus: Vec<GpuReport>,
    /// Where each job's GPU time went over the window (empty unless the caller had a pipeline:
    /// [`crate::doctor::watch_accounts`]), and what to know about how far back they reach.
    pub accounts: Vec<crate::advice::account::Account>,
    pub accounts_note: Option<String>,
}

/// The host and the software stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostSection {
    pub hostname: String,
    pub source: String,
    pub kernel_release: Option<String>,
    pub n_cpus: usize,
    pub n_numa_nodes: usize,
    pub mem_total_bytes: Option<u64>,
    pub driver_version: Option<String>,
    /// The newest CUDA version the driver supports, as "13.0".
    pub cuda_driver_version: Option<String>,
    pub nvml_version: Option<String>,
    pub open_kernel_module: Option<bool>,
    /// The CPU model, where the source knew it (live runs).
    pub cpu_model: Option<String>,
    /// The CPU's frequency in MHz when sampling started.
    pub cpu_mhz: Option<u64>,
}

/// What the statistics cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowSection {
    pub from_ms: Option<UnixMs>,
    pub to_ms: Option<UnixMs>,
    pub duration_s: u64,
    /// Samples in the history the statistics are computed over.
    pub samples: usize,
}

/// Median, minimum and maximum of a reading over the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// The share of samples in which the reading was present.
    pub coverage: f64,
}

/// How much of the window one throttle reason was active.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThrottleShare {
    pub reason: &'static str,
    pub description: &'static str,
    /// Share (0–1) of samples whose reason bits had it set; `None` when no sample had the bits.
    pub share_of_samples: Option<f64>,
    /// Share (0–1) of the elapsed time by the driver's cumulative counters, where it keeps one and a baseline
    /// tick was given.
    pub share_of_time: Option<f64>,
}

/// One GPU: what it is and how it ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuReport {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub pci_bus_id: String,
    pub architecture: Option<String>,
    pub compute_capability: Option<String>,
    pub mem_total_bytes: Option<u64>,
    pub pcie_gen_now: Option<u32>,
    pub pcie_width_now: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub numa_node: Option<u32>,
    /// Local CPUs in range form ("0-15").
    pub local_cpus: Option<String>,
    pub power_limit_enforced_w: Option<f64>,
    pub power_limit_default_w: Option<f64>,
    pub power_limit_min_w: Option<f64>,
    pub power_limit_max_w: Option<f64>,
    pub max_sm_clock_mhz: Option<u32>,
    pub max_mem_clock_mhz: Option<u32>,
    pub temp_slowdown_c: Option<u32>,
    pub persistence_mode: Option<bool>,
    pub ecc_enabled: Option<bool>,
    /// Active NVLink links.
    pub nvlinks_active: Option<u32>,
    /// How this GPU reaches each other GPU (NVLink links, PCIe path), as `nvidia-smi topo -m` says it.
    pub peers: Vec<crate::sample::GpuPeer>,
    pub power_w: Option<Summary>,
    pub temp_c: Option<Summary>,
    pub sm_clock_mhz: Option<Summary>,
    pub mem_clock_mhz: Option<Summary>,
    pub util_pct: Option<Summary>,
    pub mem_used_bytes: Option<Summary>,
    pub throttle: Vec<ThrottleShare>,
    pub steady: SteadyState,
}

fn summary<T: Num + Niche>(series: &Series<T>, scale: f64) -> Option<Summary> {
    let stats = crate::history::Stats::of(series.readings().map(|v| v.map(|v| v.as_f64() * scale)))?;
    Some(Summary { median: stats.median, min: stats.min, max: stats.max, coverage: stats.coverage() })
}

fn watts(mw: Option<u32>) -> Option<f64> {
    mw.map(|m| f64::from(m) / 1000.0)
}

/// Share of time per reason from the cumulative counters between `baseline` and `latest`.
fn counter_share(reason: u64, baseline: Option<&Tick>, latest: &Tick, index: u32) -> Option<f64> {
    let pick = |c: &ThrottleCounters| match reason {
        throttle::SW_POWER_CAP => c.sw_power_cap_ns,
        throttle::SYNC_BOOST => c.sync_boost_ns,
        throttle::SW_THERMAL_SLOWDOWN => c.sw_thermal_ns,
        throttle::HW_THERMAL_SLOWDOWN => c.hw_thermal_ns,
        throttle::HW_POWER_BRAKE_SLOWDOWN => c.hw_power_brake_ns,
        _ => None,
    };
    let base = baseline?;
    let elapsed_ns = latest.at_ms.checked_sub(base.at_ms)?.checked_mul(1_000_000).filter(|e| *e > 0)?;
    let before = pick(&base.gpu(index)?.throttle_ns?)?;
    let after = pick(&latest.gpu(index)?.throttle_ns?)?;
    let share = after.checked_sub(before)? as f64 / elapsed_ns as f64;
    Some(share.clamp(0.0, 1.0))
}

fn gpu_report(info: &GpuInfo, series: Option<&GpuSeries>, history: &History, baseline: Option<&Tick>) -> GpuReport {
    let latest = history.latest().gpu(info.index);
    let criterion = SteadyCriterion::default();
    let throttle = throttle::REASONS
        .iter()
        .map(|(bit, reason, description)| ThrottleShare {
            reason,
            description,
            share_of_samples: series.and_then(|s| {
                let present: Vec<u64> = s.throttle_bits.readings().flatten().collect();
                (!present.is_empty())
                    .then(|| present.iter().filter(|b| *b & bit != 0).count() as f64 / present.len() as f64)
            }),
            share_of_time: counter_share(*bit, baseline, history.latest(), info.index),
        })
        .collect();
    GpuReport {
        index: info.index,
        name: info.name.clone(),
        uuid: info.uuid.clone(),
        pci_bus_id: info.pci_bus_id.clone(),
        architecture: info.architecture.clone(),
        compute_capability: info.compute_capability.map(|(a, b)| format!("{a}.{b}")),
        mem_total_bytes: info.mem_total_bytes,
        pcie_gen_now: latest.and_then(|g| g.pcie_gen),
        pcie_width_now: latest.and_then(|g| g.pcie_width),
        pcie_gen_max: info.max_pcie_gen,
        pcie_width_max: info.max_pcie_width,
        numa_node: info.numa_node,
        local_cpus: info.local_cpus.as_deref().map(cpu_list),
        power_limit_enforced_w: watts(latest.and_then(|g| g.power_limit_mw)),
        power_limit_default_w: watts(info.power_limit_default_mw),
        power_limit_min_w: watts(info.power_limit_min_mw),
        power_limit_max_w: watts(info.power_limit_max_mw),
        max_sm_clock_mhz: info.max_sm_clock_mhz,
        max_mem_clock_mhz: info.max_mem_clock_mhz,
        temp_slowdown_c: info.temp_slowdown_c,
        persistence_mode: info.persistence_mode,
        ecc_enabled: info.ecc_enabled,
        nvlinks_active: info.nvlinks_active,
        peers: info.peers.clone(),
        power_w: series.and_then(|s| summary(&s.power_mw, 0.001)),
        temp_c: series.and_then(|s| summary(&s.temp_c, 1.0)),
        sm_clock_mhz: series.and_then(|s| summary(&s.sm_clock_mhz, 1.0)),
        mem_clock_mhz: series.and_then(|s| summary(&s.mem_clock_mhz, 1.0)),
        util_pct: series.and_then(|s| summary(&s.util_pct, 1.0)),
        mem_used_bytes: series.and_then(|s| summary(&s.mem_used_bytes, 1.0)),
        throttle,
        steady: series.map_or_else(SteadyState::unknown, |s| steady::detect(&history.times, s, &criterion)),
    }
}

fn host_section(machine: &MachineInfo) -> HostSection {
    HostSection {
        hostname: machine.hostname.clone(),
        source: machine.source_label.clone(),
        kernel_release: machine.kernel_release.clone(),
        n_cpus: machine.n_cpus,
        n_numa_nodes: machine.n_numa_nodes,
        mem_total_bytes: machine.mem_total_bytes,
        driver_version: machine.driver_version.clone(),
        cuda_driver_version: machine.cuda_driver_version.map(|v| format!("{}.{}", v / 1000, v % 1000 / 10)),
        nvml_version: machine.nvml_version.clone(),
        open_kernel_module: machine.open_kernel_module,
        cpu_model: machine.cpu.as_ref().map(|c| c.model.clone()),
        cpu_mhz: machine.cpu.as_ref().and_then(|c| c.mhz),
    }
}

impl Report {
    /// The record of `history` (its machine and every sample it holds). `baseline` is the first tick of the
    /// window when the caller kept it: with it, the driver's cumulative throttle counters give the share of
    /// time per reason, not only the share of samples.
    #[must_use]
    pub fn new(history: &History, baseline: Option<&Tick>) -> Self {
        let machine = history.machine();
        let from_ms = history.times.get(0).copied();
        let to_ms = history.now_ms();
        let gpus =
            machine.gpus.iter().map(|info| gpu_report(info, history.gpu(info.index), history, baseline)).collect();
        Self {
            host: host_section(machine),
            window: WindowSection {
                from_ms,
                to_ms,
                duration_s: from_ms.zip(to_ms).map_or(0, |(a, b)| b.saturating_sub(a) / 1000),
                samples: history.times.len(),
            },
            steady_criterion: SteadyCriterion::default(),
            gpus,
            accounts: Vec::new(),
            accounts_note: None,
        }
    }

    /// The versioned JSON document (`"schema": "gpusight.report/2"`); unknown fields are `null`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut doc = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut doc {
            map.insert("schema".to_owned(), Value::String(SCHEMA.to_owned()));
            map.insert("steady_criterion_text".to_owned(), Value::String(self.steady_criterion.describe()));
        }
        doc
    }

    /// The record as Markdown, with "unknown" for every field that could not be read.
    #[must_use]
    pub fn to_markdown(&self) -> String {
        // Names and labels come from outside; no control character reaches the terminal.
        crate::text::visible_lines(&markdown::render(self)).into_owned()
    }
}

/// A memory size for the record, or "unknown".
fn size(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "unknown".to_owned(), |b| bytes_label(b.as_f64()))
}

/// A duration for the record.
fn span(secs: u64) -> String {
    duration_label(secs)
}

#[cfg(test)]
mod tests;
