//! The Prometheus exposition of one snapshot: dcgm-exporter's metric names, units and labels for every field we
//! read, plus our own `gpusight_*` series (throttle reasons, PCIe link, NUMA, processes, host pressure, findings).
//!
//! A pure function of the data: the same snapshot always gives the same text. Every series is encoded by
//! prometheus-client from a [`Registry`] of `SampleFamily` metrics, so no text is formatted by hand here. A reading
//! that is `None` gives no sample at all (never a 0), and a family without samples is left out entirely.
//!
//! dcgm-exporter types a few monotonic fields (`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, the PCIe replay counter and
//! the remapped-row counts) as `counter` while their names do not end in `_total`. prometheus-client always appends
//! `_total` to counters, so we keep the names exactly (dashboards query names, not types) and declare those series
//! `untyped`; their values keep counter semantics (monotonic since the driver loaded).

use std::collections::BTreeMap;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::advice::Finding;
use crate::sample::{GpuEventKind, GpuInfo, GpuState, GpuTick, MachineInfo, Tick, throttle};

/// The `Content-Type` of what [`render`] produces (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

const MIB: u64 = 1 << 20;

/// One label set: keys in the order dcgm-exporter writes them.
type Labels = Vec<(&'static str, String)>;

/// A sample value: integers stay integers in the text, readings with a fraction are floats.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Int(u64),
    Float(f64),
}

/// One metric family with its samples in a fixed order. Implements [`EncodeMetric`] so the registry encodes it.
#[derive(Debug)]
struct SampleFamily {
    metric_type: MetricType,
    samples: Vec<(Labels, Value)>,
}

impl EncodeMetric for SampleFamily {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        for (labels, value) in &self.samples {
            let mut sample = encoder.encode_family(labels)?;
            match (self.metric_type, *value) {
                (MetricType::Counter, Value::Int(v)) => sample.encode_counter::<NoLabelSet, _, u64>(&v, None)?,
                (MetricType::Counter, Value::Float(v)) => sample.encode_counter::<NoLabelSet, _, f64>(&v, None)?,
                (_, Value::Int(v)) => sample.encode_gauge(&v)?,
                (_, Value::Float(v)) => sample.encode_gauge(&v)?,
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        self.metric_type
    }

    fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// The last Xid seen on each GPU, carried across snapshots: `DCGM_FI_DEV_XID_ERRORS` is "the value of the last
/// Xid", while a [`Tick`] only holds the events since the previous one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XidMemory {
    last: BTreeMap<u32, (u32, String)>,
}

impl XidMemory {
    /// Remembers the Xid events of `tick` (the newest one per GPU wins).
    pub fn observe(&mut self, tick: &Tick) {
        for event in &tick.events {
            if let (Some(gpu), GpuEventKind::Xid { code, .. }) = (event.gpu_index, &event.kind) {
                let message: String = event.message.chars().take(120).collect();
                self.last.insert(gpu, (*code, message));
            }
        }
    }

    /// The last Xid code and its message on a GPU, if one was seen.
    #[must_use]
    pub fn last(&self, gpu_index: u32) -> Option<(u32, &str)> {
        self.last.get(&gpu_index).map(|(code, message)| (*code, message.as_str()))
    }
}

/// The reason label values of `gpusight_throttle_reason_active`, named as dcgm-exporter names clock events.
const REASON_LABELS: [(u64, &str); 9] = [
    (throttle::GPU_IDLE, "gpu_idle"),
    (throttle::APPLICATIONS_CLOCKS_SETTING, "clocks_setting"),
    (throttle::SW_POWER_CAP, "power_cap"),
    (throttle::HW_SLOWDOWN, "hw_slowdown"),
    (throttle::SYNC_BOOST, "sync_boost"),
    (throttle::SW_THERMAL_SLOWDOWN, "sw_thermal"),
    (throttle::HW_THERMAL_SLOWDOWN, "hw_thermal"),
    (throttle::HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake"),
    (throttle::DISPLAY_CLOCK_SETTING, "display_clocks"),
];

/// Collects samples per family in registration order.
#[derive(Debug, Default)]
struct Builder {
    families: Vec<(&'static str, &'static str, Option<Unit>, SampleFamily)>,
}

impl Builder {
    fn family(&mut self, name: &'static str, help: &'static str, unit: Option<Unit>, metric_type: MetricType) -> usize {
        // The encoder ends every help text with a full stop itself.
        let help = help.trim_end_matches('.');
        self.families.push((name, help, unit, SampleFamily { metric_type, samples: Vec::new() }));
        self.families.len() - 1
    }

    fn push(&mut self, family: usize, labels: &Labels, value: Option<Value>) {
        if let (Some(value), Some(entry)) = (value, self.families.get_mut(family)) {
            entry.3.samples.push((labels.clone(), value));
        }
    }

    fn into_registry(self) -> Registry {
        let mut registry = Registry::default();
        for (name, help, unit, family) in self.families {
            match unit {
                Some(unit) => registry.register_with_unit(name, help, unit, family),
                None => registry.register(name, help, family),
            }
        }
        registry
    }
}

/// The PCI bus id as NVML and dcgm-exporter write it (`00000000:81:00.0`), from the sysfs form (`0000:81:00.0`).
#[must_use]
pub fn dcgm_bus_id(sysfs: &str) -> String {
    match sysfs.split_once(':') {
        Some((domain, rest)) if domain.len() <= 8 && domain.chars().all(|c| c.is_ascii_hexdigit()) => {
            format!("{domain:0>8}:{rest}").to_ascii_uppercase()
        }
        _ => sysfs.to_ascii_uppercase(),
    }
}

/// The label set dcgm-exporter puts on every GPU series.
fn gpu_labels(info: &GpuInfo, machine: &MachineInfo, hostname: &str) -> Labels {
    vec![
        ("gpu", info.index.to_string()),
        ("UUID", info.uuid.clone()),
        ("pci_bus_id", dcgm_bus_id(&info.pci_bus_id)),
        ("device", format!("nvidia{}", info.index)),
        ("modelName", info.name.clone()),
        ("hostname", hostname.to_owned()),
        ("DCGM_FI_DRIVER_VERSION", machine.driver_version.clone().unwrap_or_default()),
    ]
}

/// Prometheus's unit suffix for 0–1 shares (`_ratio`; prometheus-client's `Unit::Ratios` would write `_ratios`).
fn ratio_unit() -> Unit {
    Unit::Other("ratio".to_owned())
}

fn int<T: Into<u64>>(value: Option<T>) -> Option<Value> {
    value.map(|v| Value::Int(v.into()))
}

fn ratio(pct: Option<f32>) -> Option<Value> {
    pct.map(|p| Value::Float(f64::from(p) / 100.0))
}

fn flag(on: bool) -> Value {
    Value::Int(u64::from(on))
}

/// Renders one snapshot as Prometheus text: dcgm-exporter's series for every GPU field we have, then ours.
///
/// `hostname` becomes the `hostname` label (dcgm-exporter's current key; it was `Hostname` before its #655).
///
/// # Errors
/// Only when the encoder fails to write into the string, which does not happen in practice.
#[allow(clippy::too_many_lines)]
pub fn render(
    machine: &MachineInfo,
    tick: &Tick,
    findings: &[Finding],
    hostname: &str,
    xids: &XidMemory,
) -> Result<String, std::fmt::Error> {
    let mut b = Builder::default();
    let (gauge, untyped, counter) = (MetricType::Gauge, MetricType::Unknown, MetricType::Counter);
    let sm_clock = b.family("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", None, gauge);
    let mem_clock = b.family("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", None, gauge);
    let temp = b.family("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", None, gauge);
    let power = b.family("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", None, gauge);
    let energy =
        b.family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", None, untyped);
    let pcie_tx = b.family("DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", None, gauge);
    let pcie_rx = b.family("DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", None, gauge);
    let replay = b.family("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", None, untyped);
    let util = b.family("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", None, gauge);
    let copy_util = b.family("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", None, gauge);
    let enc = b.family("DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", None, gauge);
    let dec = b.family("DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", None, gauge);
    let xid = b.family("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", None, gauge);
    let fb_free = b.family("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", None, gauge);
    let fb_used = b.family("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", None, gauge);
    let fb_reserved = b.family("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", None, gauge);
    let rows_unc = b.family(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors.",
        None,
        untyped,
    );
    let rows_cor = b.family(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for correctable errors.",
        None,
        untyped,
    );
    let rows_fail = b.family("DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed.", None, gauge);
    let rows_pending = b.family(
        "gpusight_remapped_rows_pending",
        "Whether a row remap is pending: the GPU needs a reset (1) or not (0).",
        None,
        gauge,
    );
    let ecc_uncorrected = b.family(
        "gpusight_ecc_uncorrected_volatile",
        "Uncorrected ECC errors since the driver loaded (volatile count).",
        None,
        gauge,
    );
    let gr_active =
        b.family("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", None, gauge);
    let sm_active =
        b.family("DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", None, gauge);
    let sm_occ = b.family("DCGM_FI_PROF_SM_OCCUPANCY", "The ratio of number of warps resident on an SM.", None, gauge);
    let tensor =
        b.family("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", None, gauge);
    let dram = b.family(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        None,
        gauge,
    );

    let up = b.family(
        "gpusight_gpu_up",
        "Whether the GPU answered at the last sample (0: lost or not answering).",
        None,
        gauge,
    );
    let power_limit = b.family("gpusight_power_limit_watts", "The enforced power limit.", None, gauge);
    let reason_active = b.family(
        "gpusight_throttle_reason_active",
        "Whether a clock event (throttle) reason is active now (1) or not (0).",
        None,
        gauge,
    );
    let throttled = b.family(
        "gpusight_throttle",
        "Cumulative time spent in a clock event (throttle) reason since the driver loaded.",
        Some(Unit::Seconds),
        counter,
    );
    let link_gen = b.family("gpusight_pcie_link_gen", "Current PCIe link generation.", None, gauge);
    let link_gen_max =
        b.family("gpusight_pcie_link_gen_max", "Maximum PCIe link generation of the GPU and slot.", None, gauge);
    let link_width = b.family("gpusight_pcie_link_width", "Current PCIe link width (lanes).", None, gauge);
    let link_width_max = b.family("gpusight_pcie_link_width_max", "Maximum PCIe link width (lanes).", None, gauge);
    let numa = b.family("gpusight_numa_node", "NUMA node of the GPU's PCI device.", None, gauge);
    let proc_mem = b.family("gpusight_process_gpu_memory", "GPU memory used by a process.", Some(Unit::Bytes), gauge);
    let proc_sm = b.family(
        "gpusight_process_sm_utilization",
        "Share of the last sample window in which a process ran a kernel on the GPU's SMs.",
        Some(ratio_unit()),
        gauge,
    );
    let iowait =
        b.family("gpusight_host_cpu_iowait", "Share of all CPU time spent in iowait.", Some(ratio_unit()), gauge);
    let steal = b.family(
        "gpusight_host_cpu_steal",
        "Share of all CPU time stolen by the hypervisor.",
        Some(ratio_unit()),
        gauge,
    );
    let psi = b.family(
        "gpusight_host_pressure",
        "Pressure stall information, avg10: share of time some or all tasks stalled on a resource.",
        Some(ratio_unit()),
        gauge,
    );
    let finding = b.family("gpusight_finding", "An active finding of the advice engine (1 while active).", None, gauge);

    for info in &machine.gpus {
        let Some(g) = tick.gpu(info.index) else { continue };
        let labels = gpu_labels(info, machine, hostname);
        b.push(up, &labels, Some(flag(g.state == GpuState::Ok)));
        b.push(numa, &labels, int(info.numa_node));
        b.push(link_gen_max, &labels, int(info.max_pcie_gen));
        b.push(link_width_max, &labels, int(info.max_pcie_width));
        if g.state != GpuState::Ok {
            continue;
        }
        push_dcgm_gpu(
            &mut b,
            g,
            &labels,
            &DcgmFamilies {
                sm_clock,
                mem_clock,
                temp,
                power,
                energy,
                pcie_tx,
                pcie_rx,
                replay,
                util,
                copy_util,
                enc,
                dec,
                fb_free,
                fb_used,
                fb_reserved,
                rows_unc,
                rows_cor,
                rows_fail,
            },
        );
        if let Some((code, message)) = xids.last(info.index) {
            let mut xid_labels = labels.clone();
            xid_labels.push(("err_code", code.to_string()));
            xid_labels.push(("err_msg", message.to_owned()));
            b.push(xid, &xid_labels, Some(Value::Int(u64::from(code))));
        }
        b.push(rows_pending, &labels, g.remapped_rows.map(|rows| flag(rows.pending)));
        b.push(ecc_uncorrected, &labels, int(g.ecc.and_then(|e| e.volatile_uncorrected)));
        if info.gpm_supported
            && let Some(gpm) = &g.gpm
        {
            b.push(gr_active, &labels, ratio(gpm.gr_engine_active_pct));
            b.push(sm_active, &labels, ratio(gpm.sm_active_pct));
            b.push(sm_occ, &labels, ratio(gpm.sm_occupancy_pct));
            b.push(tensor, &labels, ratio(gpm.tensor_active_pct));
            b.push(dram, &labels, ratio(gpm.dram_active_pct));
        }
        b.push(power_limit, &labels, g.power_limit_mw.map(|mw| Value::Float(f64::from(mw) / 1000.0)));
        if let Some(bits) = g.throttle_bits {
            for (bit, reason) in REASON_LABELS {
                let mut reason_labels = labels.clone();
                reason_labels.push(("reason", reason.to_owned()));
                b.push(reason_active, &reason_labels, Some(flag(bits & bit != 0)));
            }
        }
        if let Some(counters) = &g.throttle_ns {
            let per_reason = [
                ("power_cap", counters.sw_power_cap_ns),
                ("sync_boost", counters.sync_boost_ns),
                ("sw_thermal", counters.sw_thermal_ns),
                ("hw_thermal", counters.hw_thermal_ns),
                ("hw_power_brake", counters.hw_power_brake_ns),
            ];
            for (reason, ns) in per_reason {
                let mut reason_labels = labels.clone();
                reason_labels.push(("reason", reason.to_owned()));
                #[allow(clippy::cast_precision_loss)]
                b.push(throttled, &reason_labels, ns.map(|ns| Value::Float(ns as f64 / 1e9)));
            }
        }
        b.push(link_gen, &labels, int(g.pcie_gen));
        b.push(link_width, &labels, int(g.pcie_width));
    }

    for process in &tick.gpu_processes {
        let (Some(pid), Some(info)) =
            (process.pid, crate::sample::by_index(&machine.gpus, process.gpu_index, |i| i.index))
        else {
            continue;
        };
        let host = tick.process(pid);
        let labels: Labels = vec![
            ("gpu", info.index.to_string()),
            ("UUID", info.uuid.clone()),
            ("hostname", hostname.to_owned()),
            ("pid", pid.to_string()),
            ("user", host.and_then(|h| h.user.clone()).unwrap_or_default()),
            ("command", host.map(|h| h.name.clone()).unwrap_or_default()),
        ];
        b.push(proc_mem, &labels, int(process.used_gpu_memory_bytes));
        b.push(proc_sm, &labels, process.sm_util_pct.map(|p| Value::Float(f64::from(p) / 100.0)));
    }

    let host_labels: Labels = vec![("hostname", hostname.to_owned())];
    if let Some(cpu) = &tick.host.cpu {
        b.push(iowait, &host_labels, ratio(Some(cpu.iowait_pct)));
        b.push(steal, &host_labels, ratio(Some(cpu.steal_pct)));
    }
    if let Some(p) = &tick.host.psi {
        let series = [
            ("cpu", "some", p.cpu_some_avg10),
            ("io", "some", p.io_some_avg10),
            ("io", "full", p.io_full_avg10),
            ("memory", "some", p.memory_some_avg10),
            ("memory", "full", p.memory_full_avg10),
        ];
        for (resource, kind, value) in series {
            let mut labels = host_labels.clone();
            labels.push(("resource", resource.to_owned()));
            labels.push(("kind", kind.to_owned()));
            b.push(psi, &labels, ratio(value));
        }
    }

    for f in findings {
        let labels: Labels = vec![
            ("hostname", hostname.to_owned()),
            ("rule", rule_name(f)),
            ("severity", severity_name(f)),
            ("gpu", f.gpu_index.map(|i| i.to_string()).unwrap_or_default()),
            ("pid", f.pid.map(|p| p.to_string()).unwrap_or_default()),
        ];
        b.push(finding, &labels, Some(Value::Int(1)));
    }

    let registry = b.into_registry();
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)?;
    Ok(text)
}

/// The family handles of the dcgm-exporter GPU series.
#[derive(Debug)]
struct DcgmFamilies {
    sm_clock: usize,
    mem_clock: usize,
    temp: usize,
    power: usize,
    energy: usize,
    pcie_tx: usize,
    pcie_rx: usize,
    replay: usize,
    util: usize,
    copy_util: usize,
    enc: usize,
    dec: usize,
    fb_free: usize,
    fb_used: usize,
    fb_reserved: usize,
    rows_unc: usize,
    rows_cor: usize,
    rows_fail: usize,
}

fn push_dcgm_gpu(b: &mut Builder, g: &GpuTick, labels: &Labels, f: &DcgmFamilies) {
    let mib = |bytes: Option<u64>| bytes.map(|v| Value::Int(v / MIB));
    b.push(f.sm_clock, labels, int(g.sm_clock_mhz));
    b.push(f.mem_clock, labels, int(g.mem_clock_mhz));
    b.push(f.temp, labels, int(g.temp_c));
    b.push(f.power, labels, g.power_mw.map(|mw| Value::Float(f64::from(mw) / 1000.0)));
    b.push(f.energy, labels, int(g.energy_mj));
    b.push(f.pcie_tx, labels, g.pcie_tx_kbps.map(|kb| Value::Int(u64::from(kb) * 1024)));
    b.push(f.pcie_rx, labels, g.pcie_rx_kbps.map(|kb| Value::Int(u64::from(kb) * 1024)));
    b.push(f.replay, labels, int(g.pcie_replay_count));
    b.push(f.util, labels, int(g.util_pct));
    b.push(f.copy_util, labels, int(g.mem_util_pct));
    b.push(f.enc, labels, int(g.enc_util_pct));
    b.push(f.dec, labels, int(g.dec_util_pct));
    b.push(f.fb_free, labels, mib(g.mem_free_bytes));
    b.push(f.fb_used, labels, mib(g.mem_used_bytes));
    b.push(f.fb_reserved, labels, mib(g.mem_reserved_bytes));
    if let Some(rows) = &g.remapped_rows {
        b.push(f.rows_unc, labels, Some(Value::Int(u64::from(rows.uncorrectable))));
        b.push(f.rows_cor, labels, Some(Value::Int(u64::from(rows.correctable))));
        b.push(f.rows_fail, labels, Some(flag(rows.failure)));
    }
}

/// The rule's name as the config and JSON spell it (`input-bound`).
fn rule_name(f: &Finding) -> String {
    serde_json::to_value(f.rule).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The severity as JSON spells it (`warning`).
fn severity_name(f: &Finding) -> String {
    serde_json::to_value(f.severity).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}
