//! Records what this machine's GPUs answer through NVML into the fake NVML's scenario format (docs/fake-nvml.md):
//! the static facts once, then SAMPLES readings INTERVAL seconds apart as phases that repeat, the processes of the
//! last sample, and every call that answered an error (NotSupported, NoPermission, ...) as a fault for that call,
//! so the fake answers it the same way. The fake replays the file: `GPUSIGHT_FAKE_NVML=capture.toml`.
//!
//! What it records is what `gpusight --once --json` reads: exact bytes of memory, the full PCI address, GPM's
//! rates (PCIe included) over each interval, the counters (energy, throttle time, ECC, NVLink errors, each NVLink
//! link's data counters) where the card has them at the end of the capture, and each counter's rate over each
//! interval; NVLink in one `[gpu.nvlink]` record per GPU (state, version, far ends, each link's speed) and each
//! link's RX/TX rate in each phase.
//!
//! `cargo run --release --example nvml_capture -- [SAMPLES] [INTERVAL_S] > capture.toml` (default 10 samples, 1 s).
//! `GPUSIGHT_NVML_LIB` names another NVML library, as for gpusight: with the fake NVML, a capture of a scenario.

use std::error::Error;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, P2pCapabilitiesIndex, PcieUtilCounter, TemperatureSensor, TemperatureThreshold,
};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::device::{SampleValue, UsedGpuMemory};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, GpmSample, Nvml};

/// The cumulative throttle counters' field ids (gpusight's order) and the HBM temperature's.
const THROTTLE_FIELDS: [u32; 5] = [74, 76, 251, 252, 253];
const MEM_TEMP_FIELD: u32 = 82;
/// GPM metrics and the phase key each is replayed under: everything gpusight asks for.
const GPM: [(GpmMetricId, &str); 9] = [
    (GpmMetricId::GraphicsUtil, "gpm_graphics"),
    (GpmMetricId::SmUtil, "gpm_sm"),
    (GpmMetricId::SmOccupancy, "gpm_occupancy"),
    (GpmMetricId::AnyTensorUtil, "gpm_tensor"),
    (GpmMetricId::DramBwUtil, "gpm_dram"),
    (GpmMetricId::PcieRxPerSec, "gpm_pcie_rx_mib_s"),
    (GpmMetricId::PcieTxPerSec, "gpm_pcie_tx_mib_s"),
    (GpmMetricId::NvlinkTotalRxPerSec, "nvlink_rx_mib_s"),
    (GpmMetricId::NvlinkTotalTxPerSec, "nvlink_tx_mib_s"),
];
/// NVLink link slots NVML knows.
const MAX_LINKS: u32 = 18;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let samples: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10).max(1);
    let interval: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1.0_f64).max(0.1);
    // GPUSIGHT_NVML_LIB names another library, as for gpusight (the fake NVML, to test the capture itself).
    let nvml = match std::env::var_os("GPUSIGHT_NVML_LIB") {
        Some(path) => Nvml::builder().lib_path(&path).init()?,
        None => Nvml::init()?,
    };
    let mut out = String::new();
    writeln!(out, "# Captured by tools/nvml_capture.rs: {samples} samples {interval} s apart, replayed in a loop.")?;
    writeln!(out, "name = \"capture\"")?;
    writeln!(out, "driver_version = {:?}", nvml.sys_driver_version()?)?;
    writeln!(out, "cuda_driver_version = {}", nvml.sys_cuda_driver_version()?)?;
    writeln!(out, "nvml_version = {:?}", nvml.sys_nvml_version()?)?;
    // GPM calls on two GPUs must not overlap (they crashed libnvidia-ml): this one thread makes them all in turn.
    let mut gpus: Vec<GpuCapture<'_>> =
        (0..nvml.device_count()?).map(|i| nvml.device_by_index(i).map(GpuCapture::new)).collect::<Result<_, _>>()?;
    for g in &mut gpus {
        g.window_start(&nvml);
    }
    for _ in 0..samples {
        std::thread::sleep(Duration::from_secs_f64(interval));
        for g in &mut gpus {
            g.sample(&nvml, interval);
        }
    }
    for (i, g) in gpus.iter().enumerate() {
        let mut topo = Rec::default();
        topology(&nvml, &g.device, i, gpus.len(), &mut topo);
        out.push_str(&g.finish(&nvml, topo, samples, interval));
    }
    print!("{out}");
    Ok(())
}

/// The fake's name for an NVML error (docs/fake-nvml.md, faults).
fn error_name(e: &NvmlError) -> &'static str {
    match e {
        NvmlError::NotSupported
        | NvmlError::FunctionNotFound
        | NvmlError::FailedToLoadSymbol(_)
        | NvmlError::UnexpectedVariant(_) => "not_supported",
        NvmlError::NoPermission => "no_permission",
        NvmlError::GpuLost => "gpu_is_lost",
        NvmlError::InvalidArg => "invalid_argument",
        NvmlError::NotFound => "not_found",
        NvmlError::Timeout => "timeout",
        NvmlError::DriverNotLoaded => "driver_not_loaded",
        NvmlError::LibRmVersionMismatch => "lib_rm_version_mismatch",
        _ => "unknown",
    }
}

/// One NVML call that answered an error: its name, its selector arguments and the error.
type Fault = (String, Vec<u32>, &'static str);

/// The `key = value` lines of one table, and the calls that failed while it was read.
#[derive(Debug, Default)]
struct Rec {
    text: String,
    faults: Vec<Fault>,
}

impl Rec {
    /// The value, or the error recorded as a fault of `call` with these arguments.
    fn ok<T>(&mut self, call: &str, args: &[u32], r: Result<T, NvmlError>) -> Option<T> {
        r.map_err(|e| self.faults.push((call.to_string(), args.to_vec(), error_name(&e)))).ok()
    }

    /// `key = value`, or the call's fault.
    fn put<T: std::fmt::Display>(&mut self, key: &str, call: &str, args: &[u32], r: Result<T, NvmlError>) {
        if let Some(v) = self.ok(call, args, r) {
            self.line(key, v);
        }
    }

    fn line(&mut self, key: &str, value: impl std::fmt::Display) {
        let _ = writeln!(self.text, "{key} = {value}");
    }
}

/// The counters read at one moment: energy (mJ) and the five throttle counters (ns).
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    at: Option<Instant>,
    energy_mj: Option<u64>,
    throttle_ns: [Option<u64>; 5],
}

/// Each NVLink link's data counters read at one moment: KiB received and transmitted (fields 139 and 138).
#[derive(Debug, Clone, Default)]
struct Traffic {
    at: Option<Instant>,
    kib: Vec<[Option<u64>; 2]>,
}

/// One GPU's capture so far.
struct GpuCapture<'n> {
    device: Device<'n>,
    /// How many NVLink links answer (0: no NVLink).
    links: u32,
    phases: Vec<Rec>,
    gpm: Option<GpmSample<'n>>,
    counters: Counters,
    traffic: Traffic,
}

impl<'n> GpuCapture<'n> {
    fn new(device: Device<'n>) -> Self {
        let links = link_count(&device);
        let (phases, counters, traffic) = (Vec::new(), Counters::default(), Traffic::default());
        Self { device, links, phases, gpm: None, counters, traffic }
    }

    /// The start of the first window: a GPM sample and the counters, so the first phase has rates too.
    fn window_start(&mut self, nvml: &'n Nvml) {
        let mut scratch = Rec::default();
        self.gpm = gpm_sample(&self.device, &mut scratch);
        self.counters = counters(&self.device, &mut scratch);
        self.traffic = traffic(nvml, &self.device, self.links, &mut scratch);
    }

    /// One `[[gpu.phase]]`: the readings of this moment and the rates since the previous one.
    fn sample(&mut self, nvml: &'n Nvml, interval: f64) {
        let mut p = Rec::default();
        p.line("duration_s", interval);
        readings(&self.device, &mut p);
        let after = gpm_sample(&self.device, &mut p);
        if let (Some(before), Some(after)) = (&self.gpm, &after) {
            gpm_rates(nvml, before, after, &mut p);
        }
        self.gpm = after.or(self.gpm.take());
        let now = counters(&self.device, &mut p);
        counter_rates(&self.counters, &now, &mut p);
        self.counters = now;
        let now = traffic(nvml, &self.device, self.links, &mut p);
        traffic_rates(&self.traffic, &now, &mut p);
        self.traffic = now;
        self.phases.push(p);
    }

    /// The GPU's whole text: statics and counters at the end, links, phases, processes and faults.
    fn finish(&self, nvml: &'n Nvml, topo: Rec, samples: usize, interval: f64) -> String {
        let d = &self.device;
        let mut head = topo;
        head.text.insert_str(0, "\n[[gpu]]\nrepeat = true\n");
        statics(d, &mut head);
        limits(d, &mut head);
        health(d, nvml, &mut head);
        if let Some(e) = self.counters.energy_mj {
            head.line("energy_start_mj", e);
        }
        head.line("throttle_ns_start", format!("{:?}", self.counters.throttle_ns.map(|c| c.unwrap_or(0))));
        let mut links = Rec::default();
        nvlinks(d, &mut links);
        if !links.text.is_empty() {
            link_speeds(nvml, d, self.links, &mut links);
            let start: Vec<[u64; 2]> = self.traffic.kib.iter().map(|k| k.map(|v| v.unwrap_or(0))).collect();
            links.line("traffic_start_kib", format!("{start:?}"));
        }
        let mut procs = Rec::default();
        processes(d, &mut procs);
        let mut out = head.text;
        out.push_str(&links.text);
        for p in &self.phases {
            out.push_str("[[gpu.phase]]\n");
            out.push_str(&p.text);
        }
        out.push_str(&procs.text);
        let fixed = head.faults.iter().chain(&links.faults).chain(&procs.faults);
        out.push_str(&faults(fixed, &self.phases, samples, interval));
        out
    }
}

/// Identity and settings.
fn statics(d: &Device<'_>, s: &mut Rec) {
    s.put("name", "nvmlDeviceGetName", &[], d.name().map(|n| format!("{n:?}")));
    s.put("uuid", "nvmlDeviceGetUUID", &[], d.uuid().map(|u| format!("{u:?}")));
    s.put("serial", "nvmlDeviceGetSerial", &[], d.serial().map(|u| format!("{u:?}")));
    if let Some(p) = s.ok("nvmlDeviceGetPciInfo_v3", &[], d.pci_info()) {
        s.line("pci_domain", p.domain);
        s.line("pci_bus", p.bus);
        s.line("pci_device", p.device);
        s.line("pci_device_id", p.pci_device_id);
        if let Some(sub) = p.pci_sub_system_id {
            s.line("pci_subsystem_id", sub);
        }
    }
    if let Some(arch) = s.ok("nvmlDeviceGetArchitecture", &[], d.architecture()) {
        let arch = arch.to_string().to_lowercase();
        if ["kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell"]
            .contains(&arch.as_str())
        {
            s.line("architecture", format!("{arch:?}"));
        }
    }
    let cc = d.cuda_compute_capability().map(|c| format!("[{}, {}]", c.major, c.minor));
    s.put("compute_capability", "nvmlDeviceGetCudaComputeCapability", &[], cc);
    if let Some(m) = s.ok("nvmlDeviceGetMemoryInfo_v2", &[], d.memory_info()) {
        s.line("memory_total_bytes", m.total);
        s.line("memory_reserved_bytes", m.reserved);
    }
    s.put("fans", "nvmlDeviceGetNumFans", &[], d.num_fans());
    s.put("persistence", "nvmlDeviceGetPersistenceMode", &[], d.is_in_persistent_mode());
    s.put("ecc", "nvmlDeviceGetEccMode", &[], d.is_ecc_enabled().map(|e| e.currently_enabled));
    s.put("display_active", "nvmlDeviceGetDisplayActive", &[], d.is_display_active());
    s.put("gpm", "nvmlGpmQueryDeviceSupport", &[], d.gpm_support());
    s.put("mig", "nvmlDeviceGetMigMode", &[], d.mig_mode().map(|m| m.current == 1));
}

/// To every GPU of the machine: the closest PCIe ancestor the two share, and whether they reach each other over
/// NVLink (P2P status), as NVML numbers them; its own entry is 0.
fn topology(nvml: &Nvml, d: &Device<'_>, me: usize, count: usize, s: &mut Rec) {
    let mut levels = vec![0; count];
    let mut p2p = vec![0; count];
    for (j, (level, status)) in levels.iter_mut().zip(&mut p2p).enumerate() {
        let index = u32::try_from(j).unwrap_or(u32::MAX);
        let Ok(other) = nvml.device_by_index(index) else { continue };
        if j == me {
            continue;
        }
        let nvlink = P2pCapabilitiesIndex::NvLink;
        *status = s
            .ok("nvmlDeviceGetP2PStatus", &[index, nvlink.as_c()], d.p2p_status(&other, nvlink))
            .map_or(5, |p| p.as_c());
        *level = s
            .ok("nvmlDeviceGetTopologyCommonAncestor", &[index], d.topology_common_ancestor(other))
            .map_or(0, |l| l.as_c());
    }
    if count > 1 {
        s.line("topology", format!("{levels:?}"));
        s.line("p2p_nvlink", format!("{p2p:?}"));
    }
}

/// Maxima, limits and thresholds.
fn limits(d: &Device<'_>, s: &mut Rec) {
    s.put("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", &[1], d.max_clock_info(Clock::SM));
    s.put("max_mem_clock_mhz", "nvmlDeviceGetMaxClockInfo", &[2], d.max_clock_info(Clock::Memory));
    let default = d.power_management_limit_default().map(|mw| mw / 1000);
    s.put("power_default_w", "nvmlDeviceGetPowerManagementDefaultLimit", &[], default);
    if let Some(c) = s.ok("nvmlDeviceGetPowerManagementLimitConstraints", &[], d.power_management_limit_constraints()) {
        s.line("power_min_w", c.min_limit / 1000);
        s.line("power_max_w", c.max_limit / 1000);
    }
    s.put("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", &[], d.enforced_power_limit().map(|mw| mw / 1000));
    for (key, kind, n) in [
        ("temp_shutdown_c", TemperatureThreshold::Shutdown, 0),
        ("temp_slowdown_c", TemperatureThreshold::Slowdown, 1),
        ("temp_mem_max_c", TemperatureThreshold::MemoryMax, 2),
        ("temp_gpu_max_c", TemperatureThreshold::GpuMax, 3),
    ] {
        s.put(key, "nvmlDeviceGetTemperatureThreshold", &[n], d.temperature_threshold(kind));
    }
    s.put("pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration", &[], d.max_pcie_link_gen());
    s.put("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", &[], d.max_pcie_link_width());
}

/// PCIe replays, retired pages, row remapping and the ECC counters where they stand now.
fn health(d: &Device<'_>, nvml: &Nvml, s: &mut Rec) {
    s.put("pcie_replay", "nvmlDeviceGetPcieReplayCounter", &[], d.pcie_replay_counter());
    s.put("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", &[], d.are_pages_pending_retired());
    let rows = gpusight::source::nvml::worker::remapped_rows(nvml, d);
    if let Some(r) = s.ok("nvmlDeviceGetRemappedRows", &[], rows) {
        s.line("remapped_rows", format!("[{}, {}]", r.correctable, r.uncorrectable));
        s.line("remapped_rows_pending", r.pending);
        s.line("remapped_rows_failure", r.failure);
    }
    let mut ecc = [0_u64; 4];
    for (i, (counter, kind)) in [
        (EccCounter::Volatile, MemoryError::Corrected),
        (EccCounter::Volatile, MemoryError::Uncorrected),
        (EccCounter::Aggregate, MemoryError::Corrected),
        (EccCounter::Aggregate, MemoryError::Uncorrected),
    ]
    .into_iter()
    .enumerate()
    {
        // Arguments as NVML numbers them: error type (corrected 0), counter type (volatile 0).
        let args = [u32::from(i % 2 == 1), u32::from(i >= 2)];
        ecc[i] = s.ok("nvmlDeviceGetTotalEccErrors", &args, d.total_ecc_errors(kind, counter)).unwrap_or(0);
    }
    s.line("ecc_start", format!("{ecc:?}"));
}

/// The readings of this moment (one phase).
fn readings(d: &Device<'_>, p: &mut Rec) {
    if let Some(u) = p.ok("nvmlDeviceGetUtilizationRates", &[], d.utilization_rates()) {
        p.line("util", u.gpu);
        p.line("mem_util", u.memory);
    }
    if let Some(m) = p.ok("nvmlDeviceGetMemoryInfo_v2", &[], d.memory_info()) {
        p.line("mem_used_bytes", m.used);
        p.line("mem_free_bytes", m.free);
    }
    let power = d.power_usage().map(|mw| format!("{:.3}", f64::from(mw) / 1000.0));
    p.put("power_w", "nvmlDeviceGetPowerUsage", &[], power);
    p.put("temp_c", "nvmlDeviceGetTemperature", &[0], d.temperature(TemperatureSensor::Gpu));
    if let Some(t) = field(d, MEM_TEMP_FIELD, p) {
        p.line("mem_temp_c", t);
    }
    p.put("sm_clock_mhz", "nvmlDeviceGetClockInfo", &[1], d.clock_info(Clock::SM));
    p.put("mem_clock_mhz", "nvmlDeviceGetClockInfo", &[2], d.clock_info(Clock::Memory));
    let throttle = d.current_throttle_reasons().map(|r| r.bits());
    p.put("throttle", "nvmlDeviceGetCurrentClocksThrottleReasons", &[], throttle);
    p.put("pstate", "nvmlDeviceGetPerformanceState", &[], d.performance_state().map(|s| s.as_c()));
    p.put("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", &[], d.current_pcie_link_gen());
    p.put("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", &[], d.current_pcie_link_width());
    p.put("pcie_rx_kbps", "nvmlDeviceGetPcieThroughput", &[1], d.pcie_throughput(PcieUtilCounter::Receive));
    p.put("pcie_tx_kbps", "nvmlDeviceGetPcieThroughput", &[0], d.pcie_throughput(PcieUtilCounter::Send));
    if d.num_fans().is_ok_and(|n| n > 0) {
        p.put("fan_pct", "nvmlDeviceGetFanSpeed_v2", &[0], d.fan_speed(0));
    }
    p.put("enc_util", "nvmlDeviceGetEncoderUtilization", &[], d.encoder_utilization().map(|u| u.utilization));
    p.put("dec_util", "nvmlDeviceGetDecoderUtilization", &[], d.decoder_utilization().map(|u| u.utilization));
}

/// One field value as a counter, or its error recorded (the whole call's, or the field's own).
fn field(d: &Device<'_>, id: u32, p: &mut Rec) -> Option<u64> {
    let call = "nvmlDeviceGetFieldValues";
    let answer = p.ok(call, &[], d.field_values_for(&[FieldId(id)]))?.into_iter().next()?;
    let value = p.ok(call, &[id], answer.and_then(|a| a.value))?;
    match value {
        SampleValue::U64(v) => Some(v),
        SampleValue::U32(v) => Some(u64::from(v)),
        SampleValue::I64(v) => u64::try_from(v).ok(),
        SampleValue::F64(_) => None,
    }
}

/// Energy and the throttle counters now; their errors go to `p`.
fn counters(d: &Device<'_>, p: &mut Rec) -> Counters {
    let energy_mj = p.ok("nvmlDeviceGetTotalEnergyConsumption", &[], d.total_energy_consumption());
    let throttle_ns = THROTTLE_FIELDS.map(|id| field(d, id, p));
    Counters { at: Some(Instant::now()), energy_mj, throttle_ns }
}

/// The throttle counters' rates (ns per s) between two readings.
fn counter_rates(before: &Counters, after: &Counters, p: &mut Rec) {
    let (Some(t0), Some(t1)) = (before.at, after.at) else { return };
    let secs = t1.duration_since(t0).as_secs_f64().max(1e-3);
    #[expect(clippy::cast_precision_loss, reason = "nanosecond counters over seconds: f64 is plenty")]
    let rates = before.throttle_ns.iter().zip(&after.throttle_ns).map(|(a, b)| match (a, b) {
        (Some(a), Some(b)) => b.saturating_sub(*a) as f64 / secs,
        _ => 0.0,
    });
    let rates: Vec<String> = rates.map(|r| format!("{r:.1}")).collect();
    p.line("throttle_ns_per_s", format!("[{}]", rates.join(", ")));
}

/// A GPM sample, or none (the GPU has no GPM, or the call failed: recorded).
fn gpm_sample<'n>(d: &Device<'n>, p: &mut Rec) -> Option<GpmSample<'n>> {
    if !d.gpm_support().unwrap_or(false) {
        return None;
    }
    p.ok("nvmlGpmSampleGet", &[], d.gpm_sample())
}

/// GPM's rates between two samples, each metric's error recorded on its own.
fn gpm_rates<'n>(nvml: &'n Nvml, before: &GpmSample<'n>, after: &GpmSample<'n>, p: &mut Rec) {
    let asked: Vec<GpmMetricId> = GPM.iter().map(|(m, _)| *m).collect();
    let Some(results) = p.ok("nvmlGpmMetricsGet", &[], nvml_wrapper::gpm::gpm_metrics_get(nvml, before, after, &asked))
    else {
        return;
    };
    for ((metric, key), result) in GPM.iter().zip(results) {
        if let Some(r) = p.ok("nvmlGpmMetricsGet", &[metric.as_c()], result) {
            p.line(key, format!("{:.3}", r.value));
        }
    }
}

/// `[gpu.nvlink]`: how many links answer, their version, which are down, their far ends and error counters. Nothing
/// when the first link does not answer (no NVLink); its error is recorded unless it is NotSupported.
fn nvlinks(d: &Device<'_>, s: &mut Rec) {
    let mut down = Vec::new();
    let mut remote = Vec::new();
    let mut counters = Vec::new();
    let mut version = None;
    let mut links = 0;
    for link in 0..MAX_LINKS {
        let w = d.link_wrapper_for(link);
        let up = match w.is_active() {
            Ok(up) => up,
            Err(NvmlError::NotSupported) if link == 0 => return,
            Err(e) if link == 0 => {
                s.faults.push(("nvmlDeviceGetNvLinkState".to_string(), Vec::new(), error_name(&e)));
                return;
            }
            Err(_) => break,
        };
        links += 1;
        if !up {
            down.push(link);
        }
        version = version.or(w.version().ok());
        let far = w.remote_pci_info().map(|p| [p.domain, p.bus, p.device]).unwrap_or_default();
        remote.push(far);
        let c = [ErrorCounter::DlReplay, ErrorCounter::DlRecovery, ErrorCounter::DlCrcFlit];
        let c = c.map(|kind| s.ok("nvmlDeviceGetNvLinkErrorCounter", &[link, kind.as_c()], w.error_counter(kind)));
        counters.push(c.map(|v| v.unwrap_or(0)));
    }
    let _ = writeln!(s.text, "[gpu.nvlink]\nlinks = {links}");
    if let Some(v) = version {
        s.line("version", v);
    }
    s.line("down", format!("{down:?}"));
    s.line("remote_pci", format!("{remote:?}"));
    s.line("counters_start", format!("{counters:?}"));
}

/// The processes of this moment with their exact memory and their latest utilization sample.
fn processes(d: &Device<'_>, s: &mut Rec) {
    let util = match d.process_utilization_stats(None) {
        Ok(u) => u,
        Err(e) => {
            s.faults.push(("nvmlDeviceGetProcessUtilization".to_string(), Vec::new(), error_name(&e)));
            Vec::new()
        }
    };
    let compute = s.ok("nvmlDeviceGetComputeRunningProcesses_v3", &[], d.running_compute_processes());
    let graphics = s.ok("nvmlDeviceGetGraphicsRunningProcesses_v3", &[], d.running_graphics_processes());
    let all =
        compute.into_iter().flatten().map(|p| (p, false)).chain(graphics.into_iter().flatten().map(|p| (p, true)));
    for (p, graphics) in all {
        let _ = writeln!(s.text, "[[gpu.process]]\npid = {}\ngraphics = {graphics}", p.pid);
        match p.used_gpu_memory {
            UsedGpuMemory::Used(bytes) => s.line("used_bytes", bytes),
            UsedGpuMemory::Unavailable => s.line("used_unknown", true),
        }
        if let Some(u) = util.iter().filter(|u| u.pid == p.pid).max_by_key(|u| u.timestamp) {
            let _ = writeln!(
                s.text,
                "sm = {}\nmem = {}\nenc = {}\ndec = {}",
                u.sm_util, u.mem_util, u.enc_util, u.dec_util
            );
        } else {
            s.line("no_samples", true);
        }
    }
}

/// `[[gpu.fault]]` tables: the fixed calls' errors for good, and each phase's: for good when every phase had it,
/// else in the windows of the phases that had it (first lap only).
fn faults<'a>(fixed: impl Iterator<Item = &'a Fault>, phases: &[Rec], samples: usize, interval: f64) -> String {
    let mut out = String::new();
    let mut write = |(call, args, error): &Fault, window: Option<usize>| {
        let _ = writeln!(out, "[[gpu.fault]]\ncall = {call:?}\nerror = {error:?}");
        if !args.is_empty() {
            let _ = writeln!(out, "args = {args:?}");
        }
        if let Some(i) = window {
            #[expect(clippy::cast_precision_loss, reason = "a phase number")]
            let from = i as f64 * interval;
            let _ = writeln!(out, "from_s = {from}\nuntil_s = {}", from + interval);
        }
    };
    let mut seen: Vec<&Fault> = Vec::new();
    for f in fixed {
        if !seen.contains(&f) {
            seen.push(f);
            write(f, None);
        }
    }
    let mut phase_faults: Vec<&Fault> = phases.iter().flat_map(|p| &p.faults).collect();
    phase_faults.dedup();
    for f in phase_faults {
        if seen.contains(&f) {
            continue;
        }
        seen.push(f);
        let hit: Vec<usize> = (0..phases.len()).filter(|&i| phases[i].faults.contains(f)).collect();
        if hit.len() == samples {
            write(f, None);
        } else {
            for i in hit {
                write(f, Some(i));
            }
        }
    }
    out
}

/// How many NVLink links answer their state, from link 0 on.
fn link_count(d: &Device<'_>) -> u32 {
    let answering = (0..MAX_LINKS).take_while(|&l| d.link_wrapper_for(l).is_active().is_ok()).count();
    u32::try_from(answering).unwrap_or(0)
}

/// The answers of one per-link field, each link's value or none; the errors recorded as faults of
/// `nvmlDeviceGetFieldValues` with the field id: one for every link when all answered the same error, else one
/// per link that failed (`args = [field, link]`).
fn per_link(p: &mut Rec, field: u32, answers: &[Result<u64, NvmlError>]) -> Vec<Option<u64>> {
    let call = "nvmlDeviceGetFieldValues";
    let errors: Vec<Option<&'static str>> = answers.iter().map(|a| a.as_ref().err().map(error_name)).collect();
    match errors.first() {
        Some(&Some(first)) if errors.iter().all(|e| *e == Some(first)) => {
            p.faults.push((call.to_string(), vec![field], first));
        }
        _ => {
            for (link, e) in (0..).zip(&errors) {
                if let Some(e) = e {
                    p.faults.push((call.to_string(), vec![field, link], e));
                }
            }
        }
    }
    answers.iter().map(|a| a.as_ref().ok().copied()).collect()
}

/// Each link's data counters now, in one field-values call (scoped per link); their errors go to `p`.
fn traffic(nvml: &Nvml, d: &Device<'_>, links: u32, p: &mut Rec) -> Traffic {
    use gpusight::source::nvml::nvlink::{THROUGHPUT_RX_FIELD, THROUGHPUT_TX_FIELD, link_field_values};
    if links == 0 {
        return Traffic::default();
    }
    let asks: Vec<(u32, u32)> = (0..links).flat_map(|l| [(THROUGHPUT_RX_FIELD, l), (THROUGHPUT_TX_FIELD, l)]).collect();
    let at = Some(Instant::now());
    let Some(answers) = p.ok("nvmlDeviceGetFieldValues", &[], link_field_values(nvml, d, &asks)) else {
        return Traffic { at, kib: Vec::new() };
    };
    let (rx, tx): (Vec<_>, Vec<_>) = answers.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let rx: Vec<_> = rx.into_iter().map(|(_, a)| a).collect();
    let tx: Vec<_> = tx.into_iter().map(|(_, a)| a).collect();
    let (rx, tx) = (per_link(p, THROUGHPUT_RX_FIELD, &rx), per_link(p, THROUGHPUT_TX_FIELD, &tx));
    Traffic { at, kib: rx.into_iter().zip(tx).map(|(r, t)| [r, t]).collect() }
}

/// Each link's RX and TX rates (MiB/s) between two readings of its data counters, 0 where either read failed.
fn traffic_rates(before: &Traffic, after: &Traffic, p: &mut Rec) {
    let (Some(t0), Some(t1)) = (before.at, after.at) else { return };
    if after.kib.is_empty() {
        return;
    }
    let secs = t1.duration_since(t0).as_secs_f64().max(1e-3);
    for (dir, key) in [(0, "nvlink_link_rx_mib_s"), (1, "nvlink_link_tx_mib_s")] {
        let rates: Vec<String> = (after.kib.iter().enumerate())
            .map(|(l, now)| match (before.kib.get(l).and_then(|b| b[dir]), now[dir]) {
                #[expect(clippy::cast_precision_loss, reason = "KiB counters over seconds: f64 is plenty")]
                (Some(a), Some(b)) => format!("{:.3}", b.saturating_sub(a) as f64 / 1024.0 / secs),
                _ => "0.0".to_string(),
            })
            .collect();
        p.line(key, format!("[{}]", rates.join(", ")));
    }
}

/// Each link's speed (field 164, MB/s; 0 for a link that is not trained): `speed_mbps`, the fastest, and
/// `link_speed_mbps`, link by link. Nothing when no link answers it.
fn link_speeds(nvml: &Nvml, d: &Device<'_>, links: u32, s: &mut Rec) {
    use gpusight::source::nvml::nvlink::{SPEED_FIELD, link_field_values};
    let asks: Vec<(u32, u32)> = (0..links).map(|l| (SPEED_FIELD, l)).collect();
    let Some(answers) = s.ok("nvmlDeviceGetFieldValues", &[], link_field_values(nvml, d, &asks)) else { return };
    let speeds = per_link(s, SPEED_FIELD, &answers);
    if let Some(top) = speeds.iter().flatten().max() {
        s.line("speed_mbps", top);
        s.line("link_speed_mbps", format!("{:?}", speeds.iter().map(|v| v.unwrap_or(0)).collect::<Vec<_>>()));
    }
}
