//! Live GPU readings through NVML (nvml-wrapper), in tiers, with per-GPU workers so one hung GPU does not stop
//! the others.
//!
//! [`NvmlGpus::open`] starts NVML, reads the static [`GpuInfo`] of every GPU once and starts one worker thread
//! per GPU, a PCIe-throughput thread per GPU, one GPM thread for all GPUs (GPM calls must never overlap across
//! GPUs: see [`gpm`]) and the Xid watch. [`NvmlGpus::read`] asks every worker to read and waits until a
//! deadline; a GPU that has not answered by then is reported as [`GpuState::NotAnswering`] while the others are
//! filled in. Which thread makes which NVML calls, and why, is in ARCHITECTURE.md ("NVML and threads").

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nvml_wrapper::{Device, Nvml};

use super::{OptionalReadings, SourceError};
use crate::sample::{GpuEvent, GpuInfo, GpuProcess, GpuState, GpuTick, UnixMs};
use crate::source::xid::XidWatch;

pub mod errors;
pub mod fields;
pub mod gpm;
pub mod info;
pub mod mig;
pub mod nvlink;
pub mod pcie;
pub mod procs;
pub mod tiers;
pub mod worker;

pub use errors::open_error_message;
pub use info::DriverInfo;
pub use tiers::TierPeriods;

use crate::crash::{self, Family};
use gpm::{GpmMonitor, GpmReader, NvmlGpm};
use tiers::Every;

/// How long [`NvmlGpus::read`] waits for the GPUs by default.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(400);

/// NVML, started once for the life of the process, so devices are `Device<'static>` and threads can hold them.
static NVML: OnceLock<Nvml> = OnceLock::new();

/// What one read produced.
#[derive(Debug, Clone, Default)]
pub struct GpuReadout {
    /// One entry per GPU, in the order of [`NvmlGpus::gpus`].
    pub gpus: Vec<GpuTick>,
    pub gpu_processes: Vec<GpuProcess>,
    /// Xid and ECC events seen since the previous read.
    pub events: Vec<GpuEvent>,
    /// Whether NVML Xid/ECC events are being received.
    pub nvml_events: Option<bool>,
    /// Whether the kernel log can be read for Xid lines.
    pub kernel_log: Option<bool>,
    /// Short messages about what could not be read, each raised once.
    pub notes: Vec<String>,
}

/// Options for [`NvmlGpus::open_with`].
#[derive(Debug, Clone)]
pub struct NvmlOptions {
    /// How long a read waits for the GPUs before reporting the late ones as not answering.
    pub deadline: Duration,
    /// How often the slower tiers are read.
    pub periods: TierPeriods,
    /// Whether to watch for Xid/ECC events (NVML events and the kernel log).
    pub watch_xid: bool,
    /// Read only these GPUs (NVML indices); empty: all. The others are not opened at all.
    pub only: Vec<u32>,
    /// The costly readings to take.
    pub optional: OptionalReadings,
}

impl Default for NvmlOptions {
    fn default() -> Self {
        Self {
            deadline: DEFAULT_DEADLINE,
            periods: TierPeriods::default(),
            watch_xid: true,
            only: Vec::new(),
            optional: OptionalReadings::ALL,
        }
    }
}

/// One GPU's place: its worker and what we know about its state.
#[derive(Debug)]
struct Slot {
    index: u32,
    requests: Option<Sender<worker::Request>>,
    /// A request was sent and not yet answered.
    busy: bool,
    lost: bool,
}

/// The live GPUs of this machine.
#[derive(Debug)]
pub struct NvmlGpus {
    driver: DriverInfo,
    gpus: Vec<GpuInfo>,
    slots: Vec<Slot>,
    replies: Receiver<worker::Reply>,
    seq: u64,
    deadline: Duration,
    xid: Option<XidWatch>,
    /// The GPM thread, when GPM is on and some GPU supports it; asked for a round every `gpm_every`.
    gpm: Option<GpmMonitor>,
    gpm_every: Every,
    notes: Vec<String>,
}

fn nvml() -> Result<&'static Nvml, SourceError> {
    if let Some(n) = NVML.get() {
        return Ok(n);
    }
    // GPUSIGHT_NVML_LIB names another NVML library (a driver installed outside the loader's path, or a test
    // that needs the "library not found" path on any machine).
    let n = match std::env::var_os("GPUSIGHT_NVML_LIB") {
        Some(path) => Nvml::builder().lib_path(&path).init(),
        None => Nvml::init(),
    }
    .map_err(|e| SourceError::NoDriver(open_error_message(&e)))?;
    // Another thread may have won the race; either instance is fine, the loser is dropped.
    let _ = NVML.set(n);
    NVML.get().ok_or_else(|| SourceError::NoDriver("NVML started but could not be kept".to_string()))
}

/// NVML gives no per-process utilization on a GPU in MIG mode; a process alone on its slice is given the slice's
/// SM activity (GPM of its GPU instance) as its SM share, so the process table and the rules see a job that keeps
/// its slice busy as busy. Processes sharing a slice stay unknown.
fn attribute_slices(tick: &GpuTick, processes: &mut [GpuProcess]) {
    for i in 0..processes.len() {
        let Some(slice) = processes[i].mig_device(tick) else { continue };
        let (gi, ci) = (processes[i].gpu_instance_id, processes[i].compute_instance_id);
        let alone = processes.iter().filter(|p| p.gpu_instance_id == gi && p.compute_instance_id == ci).count() == 1;
        if alone && processes[i].sm_util_pct.is_none() {
            #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a percentage in 0..=100")]
            let pct = slice.sm_active_pct.map(|v| v.round().clamp(0.0, 100.0) as u32);
            processes[i].sm_util_pct = pct;
        }
    }
}

/// The driver's versions, and whether its kernel module is the open one.
fn driver_info(nvml: &'static Nvml) -> DriverInfo {
    DriverInfo {
        driver_version: nvml.sys_driver_version().ok(),
        cuda_driver_version: nvml.sys_cuda_driver_version().ok(),
        nvml_version: nvml.sys_nvml_version().ok(),
        open_kernel_module: std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .map(|t| info::is_open_kernel_module(&t)),
    }
}

/// The GPM thread for the GPUs that have GPM, or none (no such GPU, or the thread could not start: said in a note).
/// Each GPU's PCIe flag tells its PCIe thread when GPM covers its rates.
fn start_gpm(
    readers: Vec<(u32, Box<dyn GpmReader>)>,
    pcie_flags: Vec<(u32, Arc<AtomicBool>)>,
    gpm_ms: u64,
    notes: &mut Vec<String>,
) -> Option<GpmMonitor> {
    if readers.is_empty() {
        return None;
    }
    // Metrics from more than three GPM periods ago (10 s at least) are too old to show.
    let monitor = GpmMonitor::start(readers, (gpm_ms * 3).max(10_000));
    match &monitor {
        Some(m) => {
            for (index, flag) in pcie_flags {
                m.share_pcie_flag(index, flag);
            }
        }
        None => notes.push("could not start the GPM thread; SM activity is not read".to_string()),
    }
    monitor
}

impl NvmlGpus {
    /// Starts NVML with the default options.
    ///
    /// # Errors
    /// [`SourceError::NoDriver`] with one line naming what is missing (library, driver, permission).
    pub fn open() -> Result<Self, SourceError> {
        Self::open_with(NvmlOptions::default())
    }

    /// Starts NVML, reads every GPU's static description and starts the workers.
    ///
    /// # Errors
    /// [`SourceError::NoDriver`] with one line naming what is missing (library, driver, permission).
    pub fn open_with(options: NvmlOptions) -> Result<Self, SourceError> {
        let NvmlOptions { deadline, periods, watch_xid, only, optional } = options;
        let _running = crash::enter(Family::Open, None);
        let nvml = nvml()?;
        let mut notes = Vec::new();
        let driver = driver_info(nvml);
        let count =
            nvml.device_count().map_err(|e| SourceError::NoDriver(format!("NVML could not count the GPUs: {e}")))?;
        if count == 0 {
            notes.push("NVML is running but reports no GPUs".to_string());
        }
        let pid_max = info::parse_pid_max(std::fs::read_to_string("/proc/sys/kernel/pid_max").ok().as_deref());
        let (reply_tx, replies) = mpsc::channel();
        let mut gpus = Vec::new();
        let mut slots = Vec::new();
        let mut devices: Vec<(u32, Arc<Device<'static>>)> = Vec::new();
        let mut gpm_readers: Vec<(u32, Box<dyn GpmReader>)> = Vec::new();
        let mut pcie_flags: Vec<(u32, Arc<AtomicBool>)> = Vec::new();
        for index in (0..count).filter(|i| only.is_empty() || only.contains(i)) {
            let _running = crash::enter(Family::Open, Some(index));
            let device = match nvml.device_by_index(index) {
                Ok(d) => Arc::new(d),
                Err(e) => {
                    notes.push(format!("GPU {index}: NVML could not open it ({e}); it is not read"));
                    gpus.push(GpuInfo { index, name: "unavailable GPU".to_string(), ..GpuInfo::default() });
                    slots.push(Slot { index, requests: None, busy: false, lost: true });
                    continue;
                }
            };
            let gpu = info::read_gpu_info(index, &device, &mut notes);
            let pcie_covered = Arc::new(AtomicBool::new(false));
            let reader =
                worker::GpuReader::new(nvml, Arc::clone(&device), &gpu, pid_max, periods, Arc::clone(&pcie_covered));
            let (req_tx, req_rx) = mpsc::channel();
            let slot_no = slots.len();
            let replies_tx = reply_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("gpusight-gpu-{index}"))
                .spawn(move || worker::run(reader, slot_no, &req_rx, &replies_tx));
            let requests = match spawned {
                Ok(_) => Some(req_tx),
                Err(e) => {
                    notes.push(format!("GPU {index}: could not start its reader thread ({e}); it is not read"));
                    None
                }
            };
            let lost = requests.is_none();
            slots.push(Slot { index, requests, busy: false, lost });
            if gpu.gpm_supported && periods.gpm_ms > 0 {
                let mut reader = NvmlGpm::new(nvml, Arc::clone(&device), optional.gr_engine_active);
                if gpu.mig_enabled == Some(true) {
                    let slices = mig::read_mig_devices(nvml, &device).unwrap_or_default();
                    let instances: Vec<u32> = slices.iter().filter_map(|m| m.gpu_instance_id).collect();
                    reader = reader.with_mig(&instances);
                }
                gpm_readers.push((index, Box::new(reader)));
                pcie_flags.push((index, pcie_covered));
            }
            devices.push((index, device));
            gpus.push(gpu);
        }
        info::read_topology(nvml, &mut gpus, &devices);
        let gpm = start_gpm(gpm_readers, pcie_flags, periods.gpm_ms, &mut notes);
        let xid = watch_xid.then(|| XidWatch::start(Some((nvml, devices)), &gpus));
        Ok(Self {
            driver,
            gpus,
            slots,
            replies,
            seq: 0,
            deadline,
            xid,
            gpm,
            gpm_every: Every::new(periods.gpm_ms),
            notes,
        })
    }

    /// The driver and library versions.
    #[must_use]
    pub fn driver_info(&self) -> DriverInfo {
        self.driver.clone()
    }

    /// The static description of every GPU, in NVML index order.
    #[must_use]
    pub fn gpus(&self) -> &[GpuInfo] {
        &self.gpus
    }

    /// Changes how long reads wait for the GPUs (e.g. a fraction of the sampling interval).
    pub fn set_deadline(&mut self, deadline: Duration) {
        self.deadline = deadline;
    }

    /// Reads every GPU at sample time `now_ms`, waiting at most the configured deadline.
    pub fn read(&mut self, now_ms: UnixMs) -> GpuReadout {
        self.read_within(now_ms, self.deadline)
    }

    /// Reads every GPU at sample time `now_ms`, waiting at most `deadline` for them.
    pub fn read_within(&mut self, now_ms: UnixMs, deadline: Duration) -> GpuReadout {
        let mut out = GpuReadout { notes: std::mem::take(&mut self.notes), ..GpuReadout::default() };
        if let Some(gpm) = &self.gpm {
            if self.gpm_every.due(now_ms) {
                gpm.request(now_ms);
            }
            out.notes.extend(gpm.take_notes());
        }
        // Late answers to earlier requests: the worker is free again; its data is too old to use.
        while let Ok(late) = self.replies.try_recv() {
            self.settle(&late, &mut out.notes);
        }
        self.seq += 1;
        let seq = self.seq;
        for slot in &mut self.slots {
            if slot.lost || slot.busy {
                continue;
            }
            let Some(requests) = &slot.requests else { continue };
            if requests.send(worker::Request { seq, now_ms }).is_ok() {
                slot.busy = true;
            } else {
                slot.requests = None;
                slot.lost = true;
                out.notes.push(format!("GPU {}: its reader thread ended; it is no longer read", slot.index));
            }
        }
        let mut fresh: Vec<Option<worker::Reply>> = (0..self.slots.len()).map(|_| None).collect();
        let until = Instant::now() + deadline;
        while self.slots.iter().enumerate().any(|(i, s)| s.busy && fresh[i].is_none()) {
            let left = until.saturating_duration_since(Instant::now());
            match self.replies.recv_timeout(left) {
                Ok(reply) => {
                    self.settle(&reply, &mut out.notes);
                    if reply.seq == seq {
                        let slot = reply.slot;
                        if let Some(place) = fresh.get_mut(slot) {
                            *place = Some(reply);
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        for (slot, reply) in self.slots.iter().zip(fresh) {
            if let Some(mut reply) = reply {
                reply.tick.gpm = self.gpm.as_ref().and_then(|g| g.latest(slot.index, now_ms));
                // GPM's PCIe rates (the whole window) stand in for the PCIe thread's, which stops reading while
                // GPM has them.
                if let Some((rx, tx)) = self.gpm.as_ref().and_then(|g| g.latest_pcie(slot.index, now_ms)) {
                    (reply.tick.pcie_rx_kbps, reply.tick.pcie_tx_kbps) = (Some(rx), Some(tx));
                }
                if let Some(gpm) = &self.gpm {
                    for (gi, pct) in gpm.latest_mig(slot.index, now_ms) {
                        let slice = reply.tick.mig.iter_mut().find(|m| m.gpu_instance_id == Some(gi));
                        if let Some(slice) = slice {
                            slice.sm_active_pct = Some(pct);
                        }
                    }
                }
                attribute_slices(&reply.tick, &mut reply.processes);
                let nvlink = self.gpm.as_ref().and_then(|g| g.latest_nvlink(slot.index, now_ms));
                (reply.tick.nvlink_rx_mib_s, reply.tick.nvlink_tx_mib_s) = (nvlink.map(|n| n.0), nvlink.map(|n| n.1));
                out.gpus.push(reply.tick);
                out.gpu_processes.extend(reply.processes);
            } else {
                let state = if slot.lost { GpuState::Lost } else { GpuState::NotAnswering };
                out.gpus.push(GpuTick { index: slot.index, state, ..GpuTick::default() });
            }
        }
        if let Some(xid) = &mut self.xid {
            let poll = xid.poll(now_ms);
            out.events = poll.events;
            out.nvml_events = poll.nvml_events;
            out.kernel_log = poll.kernel_log;
            out.notes.extend(poll.notes);
        }
        out
    }

    /// Records that a worker answered: it is free again, and lost if it said so.
    fn settle(&mut self, reply: &worker::Reply, notes: &mut Vec<String>) {
        notes.extend(reply.notes.iter().cloned());
        if let Some(slot) = self.slots.get_mut(reply.slot) {
            slot.busy = false;
            if reply.lost {
                slot.lost = true;
                slot.requests = None;
            }
        }
    }
}
