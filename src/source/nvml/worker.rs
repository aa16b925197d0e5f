//! One GPU's reads, in tiers, on the GPU's own thread: a GPU whose driver calls hang holds up only its own
//! thread, never the others or the caller.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, Nvml};

use super::errors::FieldMemo;
use super::fields::{MEM_TEMP_FIELD, THROTTLE_COUNTER_FIELDS, answer_matches, as_counter, throttle_counters};
use super::pcie::PcieMonitor;
use super::procs::{ProcUtilTracker, RawProcess, RawUtilSample, merge_processes};
use super::tiers::{TierPeriods, TierScheduler};
use crate::crash::{self, Family};
use crate::sample::{EccCounts, GpuInfo, GpuProcess, GpuState, GpuTick, RemappedRows, ThrottleCounters, UnixMs};

/// The readings a GPU can fail to give, each memoised on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Util,
    Memory,
    Power,
    PowerLimit,
    Temp,
    SmClock,
    MemClock,
    Throttle,
    Pstate,
    PcieGen,
    PcieWidth,
    Fan,
    ComputeProcs,
    GraphicsProcs,
    ProcUtil,
    Energy,
    ThrottleCounters,
    ThrottleCounter(usize),
    MemTemp,
    EncUtil,
    DecUtil,
    Gpm,
    EccVolatileCorrected,
    EccVolatileUncorrected,
    EccAggregateCorrected,
    EccAggregateUncorrected,
    RetiredPending,
    RemappedRows,
    PcieReplay,
    Mig,
    NvLink,
    NvLinkSpeed,
    NvLinkTraffic,
}

/// A request to read at this sample time.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub seq: u64,
    pub now_ms: UnixMs,
}

/// One GPU's answer to a [`Request`].
#[derive(Debug)]
pub struct Reply {
    pub slot: usize,
    pub seq: u64,
    pub tick: GpuTick,
    pub processes: Vec<GpuProcess>,
    pub notes: Vec<String>,
    /// NVML said the GPU is lost; the worker has ended.
    pub lost: bool,
}

/// Everything one GPU's reads remember between reads.
#[derive(Debug)]
pub struct GpuReader {
    index: u32,
    nvml: &'static Nvml,
    device: Arc<Device<'static>>,
    memo: FieldMemo<Field>,
    schedule: TierScheduler,
    pid_max: u32,
    mem_total_bytes: Option<u64>,
    processes: Vec<GpuProcess>,
    proc_util: ProcUtilTracker,
    energy_mj: Option<u64>,
    throttle_ns: Option<ThrottleCounters>,
    mem_temp_c: Option<u32>,
    enc_util_pct: Option<u32>,
    dec_util_pct: Option<u32>,
    ecc: Option<EccCounts>,
    remapped_rows: Option<RemappedRows>,
    retired_pages_pending: Option<bool>,
    pcie_replay_count: Option<u64>,
    pcie: Option<PcieMonitor>,
    /// The MIG devices, read on the process tier when the GPU is in MIG mode.
    mig: Vec<crate::sample::MigTick>,
    mig_mode: bool,
    /// The NVLink links, read on the slow tier when the GPU has any.
    nvlinks: Vec<crate::sample::NvLinkTick>,
    has_nvlink: bool,
    /// Each link's speed (slow tier) and throughput counters with their rates (medium tier).
    link_readings: super::nvlink::LinkReadings,
    /// How many times the links' throughput was read: the second read comes at the second sample, so that a rate
    /// is known from the start (`--once` takes two samples), then on the medium tier.
    link_traffic_reads: u64,
}

impl GpuReader {
    /// A reader for one GPU, told what is known from the static info so it does not ask what cannot answer.
    #[must_use]
    pub fn new(
        nvml: &'static Nvml,
        device: Arc<Device<'static>>,
        info: &GpuInfo,
        pid_max: u32,
        periods: TierPeriods,
        pcie_covered: Arc<AtomicBool>,
    ) -> Self {
        let mut memo = FieldMemo::new(info.index);
        if info.ecc_enabled == Some(false) {
            for f in [
                Field::EccVolatileCorrected,
                Field::EccVolatileUncorrected,
                Field::EccAggregateCorrected,
                Field::EccAggregateUncorrected,
            ] {
                memo.mark_unsupported(f);
            }
        }
        // Passive data-center boards have no fans; asking fan 0 gives InvalidArg every time.
        if device.num_fans().map_or(true, |n| n == 0) {
            memo.mark_unsupported(Field::Fan);
        }
        let pcie = (periods.pcie_ms > 0)
            .then(|| {
                PcieMonitor::start(
                    info.index,
                    Arc::clone(&device),
                    Duration::from_millis(periods.pcie_ms),
                    pcie_covered,
                )
            })
            .flatten();
        Self {
            index: info.index,
            nvml,
            device,
            memo,
            schedule: TierScheduler::new(periods),
            pid_max,
            mem_total_bytes: info.mem_total_bytes,
            processes: Vec::new(),
            proc_util: ProcUtilTracker::default(),
            energy_mj: None,
            throttle_ns: None,
            mem_temp_c: None,
            enc_util_pct: None,
            dec_util_pct: None,
            ecc: None,
            remapped_rows: None,
            retired_pages_pending: None,
            pcie_replay_count: None,
            pcie,
            mig: Vec::new(),
            mig_mode: info.mig_enabled == Some(true),
            nvlinks: Vec::new(),
            has_nvlink: info.nvlinks_active.is_some(),
            link_readings: super::nvlink::LinkReadings::default(),
            link_traffic_reads: 0,
        }
    }

    /// Reads the tiers due at `now_ms`. Slower tiers keep their last values between their reads.
    pub fn read(&mut self, now_ms: UnixMs) -> (GpuTick, Vec<GpuProcess>) {
        let mut tick = GpuTick { index: self.index, ..GpuTick::default() };
        if self.memo.is_lost() {
            tick.state = GpuState::Lost;
            return (tick, Vec::new());
        }
        let due = self.schedule.due(now_ms);
        self.read_fast(&mut tick);
        if due.medium {
            self.read_medium();
        }
        if due.slow {
            self.read_slow();
        }
        // After the slow tier, which lists the links: a GPU without NVLink has none and costs nothing here.
        if !self.nvlinks.is_empty() {
            if due.slow {
                self.read_link_speeds();
            }
            if due.medium || self.link_traffic_reads == 1 {
                self.link_traffic_reads += 1;
                self.read_link_traffic(now_ms);
            }
        }
        if let Some(pcie) = &mut self.pcie {
            (tick.pcie_rx_kbps, tick.pcie_tx_kbps) = pcie.latest();
            // This read's NVML calls are done: the PCIe thread's first window no longer measures them.
            pcie.begin();
        }
        tick.energy_mj = self.energy_mj;
        tick.throttle_ns = self.throttle_ns;
        tick.mem_temp_c = self.mem_temp_c;
        tick.enc_util_pct = self.enc_util_pct;
        tick.dec_util_pct = self.dec_util_pct;
        tick.ecc = self.ecc;
        tick.remapped_rows = self.remapped_rows;
        tick.retired_pages_pending = self.retired_pages_pending;
        tick.pcie_replay_count = self.pcie_replay_count;
        tick.mig.clone_from(&self.mig);
        tick.nvlinks.clone_from(&self.nvlinks);
        self.link_readings.apply(&mut tick.nvlinks);
        if self.memo.is_lost() {
            // Lost during this read: nothing read after the loss is trustworthy.
            return (GpuTick { index: self.index, state: GpuState::Lost, ..GpuTick::default() }, Vec::new());
        }
        let mut processes = self.processes.clone();
        self.proc_util.apply(&mut processes);
        (tick, processes)
    }

    /// Notes raised since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        self.memo.take_notes()
    }

    /// Whether the GPU is lost.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.memo.is_lost()
    }

    fn read_fast(&mut self, tick: &mut GpuTick) {
        let _running = crash::enter(Family::Fast, Some(self.index));
        let d = &self.device;
        let m = &mut self.memo;
        if let Some(u) = m.call(Field::Util, || d.utilization_rates()) {
            tick.util_pct = Some(u.gpu);
            tick.mem_util_pct = Some(u.memory);
        }
        if let Some(mem) = m.call(Field::Memory, || d.memory_info()) {
            tick.mem_used_bytes = Some(mem.used);
            tick.mem_reserved_bytes = Some(mem.reserved);
            tick.mem_free_bytes = Some(mem.free);
        }
        tick.power_mw = m.call(Field::Power, || d.power_usage());
        tick.power_limit_mw = m.call(Field::PowerLimit, || d.enforced_power_limit());
        tick.temp_c = m.call(Field::Temp, || d.temperature(TemperatureSensor::Gpu));
        tick.sm_clock_mhz = m.call(Field::SmClock, || d.clock_info(Clock::SM));
        tick.mem_clock_mhz = m.call(Field::MemClock, || d.clock_info(Clock::Memory));
        tick.throttle_bits = m.call(Field::Throttle, || d.current_throttle_reasons()).map(|r| r.bits());
        tick.pstate = m.call(Field::Pstate, || d.performance_state()).map(|p| p.as_c()).filter(|&p| p <= 15);
        tick.pcie_gen = m.call(Field::PcieGen, || d.current_pcie_link_gen());
        tick.pcie_width = m.call(Field::PcieWidth, || d.current_pcie_link_width());
        tick.fan_pct = m.call(Field::Fan, || d.fan_speed(0));
    }

    fn read_medium(&mut self) {
        self.read_processes();
        if self.mig_mode {
            let _running = crash::enter(Family::Processes, Some(self.index));
            let (nvml, d) = (self.nvml, &self.device);
            if let Some(mig) = self.memo.call(Field::Mig, || super::mig::read_mig_devices(nvml, d)) {
                self.mig = mig;
            }
        }
        let _running = crash::enter(Family::Fields, Some(self.index));
        let d = &self.device;
        let m = &mut self.memo;
        self.enc_util_pct = m.call(Field::EncUtil, || d.encoder_utilization()).map(|u| u.utilization);
        self.dec_util_pct = m.call(Field::DecUtil, || d.decoder_utilization()).map(|u| u.utilization);
        self.throttle_ns = self.read_throttle_counters();
        self.mem_temp_c = self.read_mem_temp();
    }

    /// HBM temperature from field 82 (`NVML_FI_DEV_MEMORY_TEMP`), on the medium tier: one field value, well under
    /// a millisecond warm. A driver that does not know the field is never asked again.
    fn read_mem_temp(&mut self) -> Option<u32> {
        let d = &self.device;
        let answers = self.memo.call(Field::MemTemp, || d.field_values_for(&[FieldId(MEM_TEMP_FIELD)]))?;
        match answers.first()? {
            Ok(sample) if sample.field.0 == MEM_TEMP_FIELD => match &sample.value {
                Ok(v) => as_counter(v).and_then(|c| u32::try_from(c).ok()).filter(|&c| c > 0 && c < 200),
                Err(NvmlError::InvalidArg | NvmlError::NotSupported) => {
                    self.memo.mark_unsupported(Field::MemTemp);
                    None
                }
                Err(e) => {
                    self.memo.record(Field::MemTemp, e);
                    None
                }
            },
            Ok(_) => None,
            Err(NvmlError::InvalidArg | NvmlError::NotSupported) => {
                self.memo.mark_unsupported(Field::MemTemp);
                None
            }
            Err(e) => {
                self.memo.record(Field::MemTemp, e);
                None
            }
        }
    }

    fn read_processes(&mut self) {
        let _running = crash::enter(Family::Processes, Some(self.index));
        let d = &self.device;
        let m = &mut self.memo;
        let to_raw = |list: Vec<nvml_wrapper::struct_wrappers::device::ProcessInfo>| -> Vec<RawProcess> {
            list.into_iter()
                .map(|p| RawProcess {
                    pid: p.pid,
                    used_bytes: match p.used_gpu_memory {
                        UsedGpuMemory::Used(b) => Some(b),
                        UsedGpuMemory::Unavailable => None,
                    },
                    mig: p.gpu_instance_id.map(|gi| (gi, p.compute_instance_id)),
                })
                .collect()
        };
        let compute = m.call(Field::ComputeProcs, || d.running_compute_processes()).map(to_raw);
        let graphics = m.call(Field::GraphicsProcs, || d.running_graphics_processes()).map(to_raw);
        if compute.is_none()
            && graphics.is_none()
            && !(m.is_unsupported(Field::ComputeProcs) && m.is_unsupported(Field::GraphicsProcs))
        {
            // Both lists failed this time: keep the previous list rather than claim the GPU is empty.
            return;
        }
        self.processes = merge_processes(
            self.index,
            compute.as_deref().unwrap_or(&[]),
            graphics.as_deref().unwrap_or(&[]),
            self.pid_max,
            self.mem_total_bytes,
        );
        let listed: Vec<u32> = self.processes.iter().filter_map(|p| p.pid).collect();
        if listed.is_empty() {
            // Nothing to attribute utilization to: the call (about 2 ms of driver CPU on an H200) cannot tell
            // anything an idle GPU's row would show.
            self.proc_util.update(&[], &listed);
            return;
        }
        let since = self.proc_util.last_seen_us();
        let samples = m.call(Field::ProcUtil, || match d.process_utilization_stats(since) {
            Err(NvmlError::NotFound) => Ok(Vec::new()),
            other => other,
        });
        if let Some(samples) = samples {
            let raw: Vec<RawUtilSample> = samples
                .iter()
                .map(|s| RawUtilSample {
                    pid: s.pid,
                    timestamp_us: s.timestamp,
                    sm: s.sm_util,
                    mem: s.mem_util,
                    enc: s.enc_util,
                    dec: s.dec_util,
                })
                .collect();
            self.proc_util.update(&raw, &listed);
        }
    }

    fn read_throttle_counters(&mut self) -> Option<ThrottleCounters> {
        let d = &self.device;
        let ids: Vec<FieldId> = THROTTLE_COUNTER_FIELDS.iter().map(|&id| FieldId(id)).collect();
        let answers = self.memo.call(Field::ThrottleCounters, || d.field_values_for(&ids))?;
        let mut slots = [None; 5];
        for (i, slot) in slots.iter_mut().enumerate() {
            if !self.memo.should_ask(Field::ThrottleCounter(i)) {
                continue;
            }
            let Some(answer) = answers.get(i) else { continue };
            match answer {
                Ok(sample) if answer_matches(THROTTLE_COUNTER_FIELDS[i], sample.field.0) => match &sample.value {
                    Ok(v) => *slot = as_counter(v),
                    Err(NvmlError::InvalidArg) => self.memo.mark_unsupported(Field::ThrottleCounter(i)),
                    Err(e) => {
                        self.memo.record(Field::ThrottleCounter(i), e);
                    }
                },
                Ok(_) => {}
                // The driver does not know this id (older than CUDA 12.9): never ask again.
                Err(NvmlError::InvalidArg) => self.memo.mark_unsupported(Field::ThrottleCounter(i)),
                Err(e) => {
                    self.memo.record(Field::ThrottleCounter(i), e);
                }
            }
        }
        if (0..5).all(|i| self.memo.is_unsupported(Field::ThrottleCounter(i))) {
            self.memo.mark_unsupported(Field::ThrottleCounters);
        }
        throttle_counters(slots)
    }

    fn read_slow(&mut self) {
        let _running = crash::enter(Family::Health, Some(self.index));
        let d = &self.device;
        let m = &mut self.memo;
        // Energy costs ~3 ms of driver time per read on an H200 and nothing needs it fresher: power is read each
        // tick, and the counter is for `export` and reports, where dcgm-exporter itself samples every 30 s.
        self.energy_mj = m.call(Field::Energy, || d.total_energy_consumption());
        let vc =
            m.call(Field::EccVolatileCorrected, || d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile));
        let vu = m
            .call(Field::EccVolatileUncorrected, || d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile));
        let ac =
            m.call(Field::EccAggregateCorrected, || d.total_ecc_errors(MemoryError::Corrected, EccCounter::Aggregate));
        let au = m.call(Field::EccAggregateUncorrected, || {
            d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Aggregate)
        });
        self.ecc = [vc, vu, ac, au].iter().any(Option::is_some).then_some(EccCounts {
            volatile_corrected: vc,
            volatile_uncorrected: vu,
            aggregate_corrected: ac,
            aggregate_uncorrected: au,
        });
        self.retired_pages_pending = m.call(Field::RetiredPending, || d.are_pages_pending_retired());
        let nvml = self.nvml;
        self.remapped_rows = m.call(Field::RemappedRows, || remapped_rows(nvml, d));
        self.pcie_replay_count = m.call(Field::PcieReplay, || d.pcie_replay_counter()).map(u64::from);
        if self.has_nvlink
            && let Some(links) = m.call(Field::NvLink, || super::nvlink::read_nvlinks(d))
        {
            self.nvlinks = links;
        }
    }
}

impl GpuReader {
    /// Each link's speed in one field-values call for the links that are up, on the slow tier (it changes only
    /// when a link retrains). A down link has no speed.
    fn read_link_speeds(&mut self) {
        let _running = crash::enter(Family::Health, Some(self.index));
        let up: Vec<u32> = self.nvlinks.iter().filter(|l| l.up).map(|l| l.link).collect();
        for l in self.nvlinks.iter().filter(|l| !l.up) {
            self.link_readings.record_speed(l.link, None);
        }
        if up.is_empty() || !self.memo.should_ask(Field::NvLinkSpeed) {
            return;
        }
        let asks: Vec<(u32, u32)> = up.iter().map(|&link| (super::nvlink::SPEED_FIELD, link)).collect();
        let (nvml, d) = (self.nvml, &self.device);
        let Some(answers) = self.memo.call(Field::NvLinkSpeed, || super::nvlink::link_field_values(nvml, d, &asks))
        else {
            return;
        };
        if super::nvlink::never_answers(&answers) {
            self.memo.mark_unsupported(Field::NvLinkSpeed);
        }
        for (&link, answer) in up.iter().zip(&answers) {
            let speed = answer.as_ref().ok().and_then(|&v| u32::try_from(v).ok());
            self.link_readings.record_speed(link, speed);
        }
    }

    /// Each up link's RX and TX counters (KiB) in one field-values call, on the medium tier; the rates are the
    /// deltas between reads. A link that is down is forgotten, so its rate starts afresh when it comes back.
    fn read_link_traffic(&mut self, now_ms: UnixMs) {
        let _running = crash::enter(Family::Fields, Some(self.index));
        let up: Vec<u32> = self.nvlinks.iter().filter(|l| l.up).map(|l| l.link).collect();
        for l in self.nvlinks.iter().filter(|l| !l.up) {
            self.link_readings.forget_traffic(l.link);
        }
        if up.is_empty() || !self.memo.should_ask(Field::NvLinkTraffic) {
            return;
        }
        let asks: Vec<(u32, u32)> = up
            .iter()
            .flat_map(|&link| [(super::nvlink::THROUGHPUT_RX_FIELD, link), (super::nvlink::THROUGHPUT_TX_FIELD, link)])
            .collect();
        let (nvml, d) = (self.nvml, &self.device);
        let Some(answers) = self.memo.call(Field::NvLinkTraffic, || super::nvlink::link_field_values(nvml, d, &asks))
        else {
            return;
        };
        if super::nvlink::never_answers(&answers) {
            self.memo.mark_unsupported(Field::NvLinkTraffic);
            return;
        }
        for (&link, pair) in up.iter().zip(answers.chunks(2)) {
            let rx = pair.first().and_then(|a| a.as_ref().ok().copied());
            let tx = pair.get(1).and_then(|a| a.as_ref().ok().copied());
            if rx.is_none() && tx.is_none() {
                self.link_readings.forget_traffic(link);
            } else {
                self.link_readings.record_traffic(link, now_ms, rx, tx);
            }
        }
    }
}

/// Reads the row-remapping state (Ampere and newer), which nvml-wrapper 0.13 does not wrap.
///
/// # Errors
/// What NVML said.
#[expect(unsafe_code, reason = "an NVML call nvml-wrapper does not wrap, through its loaded symbol")]
pub fn remapped_rows(nvml: &Nvml, device: &Device<'_>) -> Result<RemappedRows, NvmlError> {
    let sym =
        nvml.lib().nvmlDeviceGetRemappedRows.as_ref().map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
    let (mut corr, mut unc, mut pending, mut failure): (u32, u32, u32, u32) = (0, 0, 0, 0);
    // SAFETY: `sym` is nvmlDeviceGetRemappedRows as loaded from the NVML library, with the signature of the NVML
    // header (device handle, then four `unsigned int*` outputs). The handle comes from a live `Device` of the
    // same `Nvml`, which outlives this call, and the four pointers are to local `u32`s (= C `unsigned int` on
    // Linux) that live across the call; NVML writes only through them.
    let code = unsafe { sym(device.handle(), &raw mut corr, &raw mut unc, &raw mut pending, &raw mut failure) };
    nvml_try(code)?;
    Ok(RemappedRows { correctable: corr, uncorrectable: unc, pending: pending != 0, failure: failure != 0 })
}

/// The worker thread's loop: answer each request until the requests stop or the GPU is lost.
pub fn run(mut reader: GpuReader, slot: usize, requests: &Receiver<Request>, replies: &Sender<Reply>) {
    while let Ok(req) = requests.recv() {
        let (tick, processes) = reader.read(req.now_ms);
        let lost = reader.is_lost();
        let reply = Reply { slot, seq: req.seq, tick, processes, notes: reader.take_notes(), lost };
        if replies.send(reply).is_err() || lost {
            return;
        }
    }
}
