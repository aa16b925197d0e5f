//! GPM (GPU Performance Monitoring) for every GPU, on one thread of its own.
//!
//! NVML's GPM calls cannot run at the same time on two GPUs: on two H200s (driver 580.159.04) one GPU's
//! `nvmlGpmMetricsGet` while the other GPU's `nvmlGpmSampleGet` was running crashed inside libnvidia-ml with
//! SIGSEGV within seconds, 4 runs in 5. So the GPM calls (sample alloc, get, free, metrics get) are made by this
//! thread alone, one GPU after the other: two of them cannot overlap because there is only one caller. The GPU
//! workers never call GPM; they take the latest metrics from [`GpmMonitor::latest`] without waiting.
//!
//! A GPM call that hangs holds up GPM alone: the workers keep reading everything else, GPM requests made while the
//! thread is busy are dropped (never queued), and metrics older than [`GpmMonitor`]'s staleness limit read as
//! unknown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};

use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::gpm::GpmMetricResult;
use nvml_wrapper::{Device, GpmSample, Nvml};

use super::errors::FieldMemo;
use super::fields::gpm_pct;
use super::worker::Field;
use crate::crash::{self, Family};
use crate::sample::{GpmMetrics, UnixMs};

/// The GPM metrics asked for, in one `nvmlGpmMetricsGet` per read: [`GpmMetrics`]'s rates, PCIe RX and TX, NVLink RX
/// and TX over all links, and GR engine active where a command uses it ([`gpm_request`]). GPM's PCIe counters cover
/// the whole window between two samples, so a GPU with GPM needs no PCIe thread of its own (whose
/// `nvmlDeviceGetPcieThroughput` blocks 20 ms and samples only those 20 ms). All nine were read on H200s (NVLink on a
/// pair joined by 18 links). NVML answers each metric with its own status, so a GPU without NVLink fails those two
/// alone; a driver that refuses the whole request for them is asked without them from then on ([`NvmlGpm::read`]).
const GPM_RATES: [GpmMetricId; 6] = [
    GpmMetricId::SmUtil,
    GpmMetricId::SmOccupancy,
    GpmMetricId::AnyTensorUtil,
    GpmMetricId::DramBwUtil,
    GpmMetricId::PcieRxPerSec,
    GpmMetricId::PcieTxPerSec,
];

/// NVLink's two rates, over all links.
const GPM_NVLINK: [GpmMetricId; 2] = [GpmMetricId::NvlinkTotalRxPerSec, GpmMetricId::NvlinkTotalTxPerSec];

/// The metrics of one `nvmlGpmMetricsGet`. GR engine active (`GraphicsUtil`) is asked for only when `gr_engine`:
/// on an H200 (driver 580) computing it took 1,491 µs of CPU a call, the other eight together under 10 µs
/// (`tools/nvml_probe.rs`, each metric alone; docs/performance.md), and only `export`, `--record` and `--once`
/// use it.
#[must_use]
pub fn gpm_request(gr_engine: bool, nvlink: bool) -> Vec<GpmMetricId> {
    let mut asked = GPM_RATES.to_vec();
    if nvlink {
        asked.extend(GPM_NVLINK);
    }
    if gr_engine {
        asked.push(GpmMetricId::GraphicsUtil);
    }
    asked
}

/// The value NVML gave for `metric` in an answer to `asked` (answers come in the order asked), if it gave one.
fn answered(asked: &[GpmMetricId], results: &[Result<GpmMetricResult, NvmlError>], metric: GpmMetricId) -> Option<f64> {
    let at = asked.iter().position(|m| *m == metric)?;
    results.get(at).and_then(|r| r.as_ref().ok()).map(|r| r.value)
}

/// GPM's PCIe rates are in MiB/s; gpusight's PCIe fields are in KB/s as `nvmlDeviceGetPcieThroughput` gives them,
/// and its KB are 1,000 bytes: in a steady pinned host-to-device copy on the H200, GPM's RX of 56,738 MiB/s
/// (59.49 GB/s) stood beside the throughput call's 59.79 million KB/s (`nvml_probe pcie`, docs/performance.md).
#[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "finite, non-negative, capped at u32::MAX")]
fn mib_s_to_kbps(value: f64) -> Option<u32> {
    (value.is_finite() && value >= 0.0).then(|| (value * 1_048.576).round().min(f64::from(u32::MAX)) as u32)
}

/// One GPU's GPM reads. Implemented over NVML by [`NvmlGpm`]; tests give instrumented fakes.
pub trait GpmReader: Send + 'static {
    /// Takes a sample and returns the metrics between it and the previous one (`None` for the first).
    ///
    /// # Errors
    /// What NVML said.
    fn read(&mut self) -> Result<Option<GpmMetrics>, NvmlError>;

    /// PCIe (RX, TX) in KB/s over the window of the last [`GpmReader::read`], where the GPU reports them through
    /// GPM; `None` otherwise.
    fn pcie_kbps(&self) -> Option<(u32, u32)> {
        None
    }

    /// NVLink (RX, TX) in MiB/s over all links, over the window of the last [`GpmReader::read`], where the GPU
    /// reports them through GPM; `None` otherwise.
    fn nvlink_mib_s(&self) -> Option<(u32, u32)> {
        None
    }

    /// Each MIG slice's SM activity (GPU instance id, %) over the window of the last [`GpmReader::read`], on a GPU
    /// in MIG mode; empty otherwise.
    fn mig_sm_active(&self) -> Vec<(u32, f32)> {
        Vec::new()
    }
}

/// A GPM rate in MiB/s as a whole number of MiB/s.
#[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "finite, non-negative, capped at u32::MAX")]
fn mib_s(value: f64) -> Option<u32> {
    (value.is_finite() && value >= 0.0).then(|| value.round().min(f64::from(u32::MAX)) as u32)
}

/// GPM over NVML for one device. Its samples are allocated, filled, compared and freed on the GPM thread only.
#[derive(Debug)]
pub struct NvmlGpm {
    nvml: &'static Nvml,
    device: Arc<Device<'static>>,
    previous: Option<GpmSample<'static>>,
    pcie: Option<(u32, u32)>,
    nvlink: Option<(u32, u32)>,
    /// Whether to ask for GR engine active.
    gr_engine: bool,
    /// Whether NVLink rates are still worth asking for (no refusal yet).
    nvlink_asked: bool,
    /// On a GPU in MIG mode: each GPU instance id and its previous sample.
    mig_previous: Vec<(u32, Option<GpmSample<'static>>)>,
    mig_sm: Vec<(u32, f32)>,
}

impl NvmlGpm {
    /// A reader for this device; `gr_engine`: whether to ask for GR engine active too.
    #[must_use]
    pub fn new(nvml: &'static Nvml, device: Arc<Device<'static>>, gr_engine: bool) -> Self {
        Self {
            nvml,
            device,
            previous: None,
            pcie: None,
            nvlink: None,
            gr_engine,
            nvlink_asked: true,
            mig_previous: Vec::new(),
            mig_sm: Vec::new(),
        }
    }

    /// Also samples these GPU instances (a GPU in MIG mode), for each slice's SM activity.
    #[must_use]
    pub fn with_mig(mut self, gpu_instances: &[u32]) -> Self {
        self.mig_previous = gpu_instances.iter().map(|&gi| (gi, None)).collect();
        self
    }

    /// One GPM sample per GPU instance and each slice's SM activity since the previous one. A slice that fails is
    /// left out this round; the whole GPU's read does not depend on it.
    fn read_mig(&mut self) {
        self.mig_sm.clear();
        for (gi, previous) in &mut self.mig_previous {
            let Ok(sample) = self.device.gpm_mig_sample(*gi) else { continue };
            let Some(before) = previous.replace(sample) else { continue };
            let Some(after) = previous.as_ref() else { continue };
            let asked = [GpmMetricId::SmUtil];
            let results = nvml_wrapper::gpm::gpm_metrics_get(self.nvml, &before, after, &asked);
            if let Some(pct) = results.ok().and_then(|r| answered(&asked, &r, GpmMetricId::SmUtil)).and_then(gpm_pct) {
                self.mig_sm.push((*gi, pct));
            }
        }
    }
}

impl GpmReader for NvmlGpm {
    fn read(&mut self) -> Result<Option<GpmMetrics>, NvmlError> {
        let sample = self.device.gpm_sample()?;
        // The slices are sampled on every round, the first included, so their rates come with the GPU's.
        self.read_mig();
        // The sample two reads back is freed here, on this thread, when `replace` hands it back and it drops.
        let Some(previous) = self.previous.replace(sample) else { return Ok(None) };
        let Some(current) = self.previous.as_ref() else { return Ok(None) };
        // One call computes every rate from the two samples; the NVLink pair used to cost a second call, about as
        // much driver CPU as the first.
        let mut asked = gpm_request(self.gr_engine, self.nvlink_asked);
        let results = match nvml_wrapper::gpm::gpm_metrics_get(self.nvml, &previous, current, &asked) {
            Ok(results) => results,
            Err(_) if self.nvlink_asked => {
                self.nvlink_asked = false;
                asked = gpm_request(self.gr_engine, false);
                nvml_wrapper::gpm::gpm_metrics_get(self.nvml, &previous, current, &asked)?
            }
            Err(e) => return Err(e),
        };
        let raw = |metric: GpmMetricId| answered(&asked, &results, metric);
        let value = |metric: GpmMetricId| raw(metric).and_then(gpm_pct);
        self.pcie = raw(GpmMetricId::PcieRxPerSec)
            .and_then(mib_s_to_kbps)
            .zip(raw(GpmMetricId::PcieTxPerSec).and_then(mib_s_to_kbps));
        self.nvlink = raw(GpmMetricId::NvlinkTotalRxPerSec)
            .and_then(mib_s)
            .zip(raw(GpmMetricId::NvlinkTotalTxPerSec).and_then(mib_s));
        // A GPU that answers NVLink's pair with an error (no NVLink) is not asked for it again.
        self.nvlink_asked &= self.nvlink.is_some();
        drop(previous);
        let metrics = GpmMetrics {
            sm_active_pct: value(GpmMetricId::SmUtil),
            sm_occupancy_pct: value(GpmMetricId::SmOccupancy),
            tensor_active_pct: value(GpmMetricId::AnyTensorUtil),
            dram_active_pct: value(GpmMetricId::DramBwUtil),
            gr_engine_active_pct: value(GpmMetricId::GraphicsUtil),
        };
        let any = [
            metrics.sm_active_pct,
            metrics.sm_occupancy_pct,
            metrics.tensor_active_pct,
            metrics.dram_active_pct,
            metrics.gr_engine_active_pct,
        ]
        .iter()
        .any(Option::is_some);
        Ok(any.then_some(metrics))
    }

    fn pcie_kbps(&self) -> Option<(u32, u32)> {
        self.pcie
    }

    fn nvlink_mib_s(&self) -> Option<(u32, u32)> {
        self.nvlink
    }

    fn mig_sm_active(&self) -> Vec<(u32, f32)> {
        self.mig_sm.clone()
    }
}

/// The latest metrics of one GPU and the sample time of the request that produced them.
#[derive(Debug, Clone, Default)]
struct Latest {
    metrics: Option<GpmMetrics>,
    pcie_kbps: Option<(u32, u32)>,
    nvlink_mib_s: Option<(u32, u32)>,
    /// Each MIG slice's SM activity: (GPU instance id, %).
    mig_sm: Vec<(u32, f32)>,
    at_ms: Option<UnixMs>,
}

#[derive(Debug, Default)]
struct Shared {
    latest: Vec<Latest>,
    /// Per slot, the flag that tells the GPU's PCIe thread that GPM reports PCIe, so it need not read it.
    pcie_covered: Vec<Option<Arc<AtomicBool>>>,
    notes: Vec<String>,
}

/// One GPU on the GPM thread.
struct Entry {
    index: u32,
    reader: Box<dyn GpmReader>,
    memo: FieldMemo<Field>,
}

/// The workers' side of the GPM thread. Dropping it ends the thread after the round it is in.
#[derive(Debug)]
pub struct GpmMonitor {
    /// NVML indices, in slot order.
    indices: Vec<u32>,
    requests: SyncSender<UnixMs>,
    shared: Arc<Mutex<Shared>>,
    stale_ms: u64,
}

impl GpmMonitor {
    /// Starts the thread for these GPUs (NVML index and reader). Metrics older than `stale_ms` (sample time) read
    /// as unknown. `None` if the thread could not be spawned.
    #[must_use]
    pub fn start(gpus: Vec<(u32, Box<dyn GpmReader>)>, stale_ms: u64) -> Option<Self> {
        let indices: Vec<u32> = gpus.iter().map(|(i, _)| *i).collect();
        let shared = Arc::new(Mutex::new(Shared {
            latest: vec![Latest::default(); gpus.len()],
            pcie_covered: vec![None; gpus.len()],
            notes: Vec::new(),
        }));
        // Room for one request: a request made while a round is running waits for the next round, and any more
        // are dropped, so a hung call never builds a queue.
        let (requests, rx) = mpsc::sync_channel(1);
        let entries: Vec<Entry> =
            gpus.into_iter().map(|(index, reader)| Entry { index, reader, memo: FieldMemo::new(index) }).collect();
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("gpusight-gpm".to_string())
            .spawn(move || run(entries, &rx, &thread_shared))
            .ok()?;
        Some(Self { indices, requests, shared, stale_ms })
    }

    /// Asks for a round of GPM reads for sample time `now_ms`. Never blocks: if a round is already waiting, this
    /// request is dropped.
    pub fn request(&self, now_ms: UnixMs) {
        match self.requests.try_send(now_ms) {
            Ok(()) | Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {}
        }
    }

    /// The latest metrics of the GPU with this NVML index, unless older than the staleness limit at `now_ms`.
    #[must_use]
    pub fn latest(&self, index: u32, now_ms: UnixMs) -> Option<GpmMetrics> {
        let slot = self.indices.iter().position(|&i| i == index)?;
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let latest = shared.latest.get(slot)?;
        let at_ms = latest.at_ms?;
        // A clock that stepped back leaves `at_ms` in the future: keep the value rather than hide it.
        (now_ms.saturating_sub(at_ms) <= self.stale_ms).then_some(latest.metrics).flatten()
    }

    /// The latest PCIe (RX, TX) in KB/s of the GPU with this NVML index, from GPM, unless older than the staleness
    /// limit at `now_ms`.
    #[must_use]
    pub fn latest_pcie(&self, index: u32, now_ms: UnixMs) -> Option<(u32, u32)> {
        let slot = self.indices.iter().position(|&i| i == index)?;
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let latest = shared.latest.get(slot)?;
        let at_ms = latest.at_ms?;
        (now_ms.saturating_sub(at_ms) <= self.stale_ms).then_some(latest.pcie_kbps).flatten()
    }

    /// The latest NVLink (RX, TX) in MiB/s of the GPU with this NVML index, from GPM, unless older than the
    /// staleness limit at `now_ms`.
    #[must_use]
    pub fn latest_nvlink(&self, index: u32, now_ms: UnixMs) -> Option<(u32, u32)> {
        let slot = self.indices.iter().position(|&i| i == index)?;
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let latest = shared.latest.get(slot)?;
        let at_ms = latest.at_ms?;
        (now_ms.saturating_sub(at_ms) <= self.stale_ms).then_some(latest.nvlink_mib_s).flatten()
    }

    /// The latest SM activity of each MIG slice (GPU instance id, %) of the GPU with this NVML index, unless older
    /// than the staleness limit at `now_ms`.
    #[must_use]
    pub fn latest_mig(&self, index: u32, now_ms: UnixMs) -> Vec<(u32, f32)> {
        let Some(slot) = self.indices.iter().position(|&i| i == index) else { return Vec::new() };
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        match shared.latest.get(slot) {
            Some(latest) if latest.at_ms.is_some_and(|at| now_ms.saturating_sub(at) <= self.stale_ms) => {
                latest.mig_sm.clone()
            }
            _ => Vec::new(),
        }
    }

    /// Hands over the flag this GPU's PCIe thread watches: set while GPM reports the GPU's PCIe rates, cleared when a
    /// read brings none, so the thread reads PCIe itself only when GPM does not.
    pub fn share_pcie_flag(&self, index: u32, flag: Arc<AtomicBool>) {
        let Some(slot) = self.indices.iter().position(|&i| i == index) else { return };
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(place) = shared.pcie_covered.get_mut(slot) {
            *place = Some(flag);
        }
    }

    /// Notes raised on the GPM thread since the last call (a GPU without GPM, a failed call).
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.lock().unwrap_or_else(PoisonError::into_inner).notes)
    }
}

fn run(mut entries: Vec<Entry>, requests: &Receiver<UnixMs>, shared: &Mutex<Shared>) {
    while let Ok(now_ms) = requests.recv() {
        for (slot, entry) in entries.iter_mut().enumerate() {
            if entry.memo.is_lost() || !entry.memo.should_ask(Field::Gpm) {
                continue;
            }
            let read = {
                let _running = crash::enter(Family::Gpm, Some(entry.index));
                let reader = &mut entry.reader;
                entry.memo.call(Field::Gpm, || reader.read())
            };
            let pcie_kbps = entry.reader.pcie_kbps().filter(|_| matches!(read, Some(Some(_))));
            let nvlink_mib_s = entry.reader.nvlink_mib_s().filter(|_| matches!(read, Some(Some(_))));
            let mig_sm = entry.reader.mig_sm_active();
            let notes = entry.memo.take_notes();
            let mut shared = shared.lock().unwrap_or_else(PoisonError::into_inner);
            shared.notes.extend(notes);
            if let Some(Some(flag)) = shared.pcie_covered.get(slot) {
                flag.store(pcie_kbps.is_some(), Ordering::Relaxed);
            }
            if let (Some(Some(metrics)), Some(latest)) = (read, shared.latest.get_mut(slot)) {
                *latest = Latest { metrics: Some(metrics), pcie_kbps, nvlink_mib_s, mig_sm, at_ms: Some(now_ms) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Barrier, mpsc};

    use super::*;

    fn result(metric_id: GpmMetricId, value: f64) -> GpmMetricResult {
        let metric_info = nvml_wrapper::struct_wrappers::gpm::GpmMetricInfo {
            short_name: String::new(),
            long_name: String::new(),
            unit: String::new(),
        };
        GpmMetricResult { metric_id, value, metric_info }
    }

    #[test]
    fn gr_engine_active_is_asked_for_only_when_a_command_uses_it() {
        let screen = gpm_request(false, true);
        assert!(!screen.contains(&GpmMetricId::GraphicsUtil));
        assert_eq!(screen.len(), 8, "the four rates, PCIe's two and NVLink's two: {screen:?}");
        let export = gpm_request(true, true);
        assert_eq!(export.len(), 9);
        assert!(export.contains(&GpmMetricId::GraphicsUtil));
        let refused_nvlink = gpm_request(true, false);
        assert!(!refused_nvlink.contains(&GpmMetricId::NvlinkTotalRxPerSec));
        assert!(refused_nvlink.contains(&GpmMetricId::GraphicsUtil));
    }

    #[test]
    fn answers_are_found_by_metric_whatever_was_asked() {
        for gr_engine in [false, true] {
            let asked = gpm_request(gr_engine, true);
            // NVML answers in the order asked; a metric the GPU lacks comes back as its own error.
            let results: Vec<_> = asked
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    if *m == GpmMetricId::NvlinkTotalTxPerSec {
                        Err(NvmlError::NotSupported)
                    } else {
                        Ok(result(*m, i as f64))
                    }
                })
                .collect();
            assert_eq!(answered(&asked, &results, GpmMetricId::SmUtil), Some(0.0));
            assert_eq!(answered(&asked, &results, GpmMetricId::PcieTxPerSec), Some(5.0));
            assert_eq!(answered(&asked, &results, GpmMetricId::NvlinkTotalRxPerSec), Some(6.0));
            assert_eq!(answered(&asked, &results, GpmMetricId::NvlinkTotalTxPerSec), None);
            assert_eq!(answered(&asked, &results, GpmMetricId::GraphicsUtil), gr_engine.then_some(8.0));
        }
        // A short answer (fewer results than asked) reads as unknown, not as another metric's value.
        let asked = gpm_request(true, true);
        assert_eq!(answered(&asked, &[Ok(result(GpmMetricId::SmUtil, 1.0))], GpmMetricId::DramBwUtil), None);
    }

    /// Counts how many GPM reads are running at once across every fake GPU, and the most ever seen.
    #[derive(Debug, Default)]
    struct Overlap {
        running: AtomicUsize,
        most: AtomicUsize,
        reads: AtomicUsize,
    }

    /// A fake GPU whose read stays "inside the driver" long enough for another thread to come in if it could.
    struct FakeGpu {
        overlap: Arc<Overlap>,
        value: f32,
        done: mpsc::Sender<()>,
    }

    impl GpmReader for FakeGpu {
        fn read(&mut self) -> Result<Option<GpmMetrics>, NvmlError> {
            let now = self.overlap.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.overlap.most.fetch_max(now, Ordering::SeqCst);
            // Stay inside: give every other thread many chances to run.
            for _ in 0..200 {
                std::thread::yield_now();
            }
            self.overlap.running.fetch_sub(1, Ordering::SeqCst);
            self.overlap.reads.fetch_add(1, Ordering::SeqCst);
            let _ = self.done.send(());
            Ok(Some(GpmMetrics { sm_active_pct: Some(self.value), ..GpmMetrics::default() }))
        }
    }

    #[test]
    fn gpm_calls_of_eight_gpus_never_overlap_when_read_from_eight_threads() {
        const GPUS: u32 = 8;
        const ROUNDS: usize = 20;
        let overlap = Arc::new(Overlap::default());
        let (done_tx, done_rx) = mpsc::channel();
        let gpus: Vec<(u32, Box<dyn GpmReader>)> = (0..GPUS)
            .map(|i| {
                let fake = FakeGpu { overlap: Arc::clone(&overlap), value: i as f32, done: done_tx.clone() };
                (i, Box::new(fake) as Box<dyn GpmReader>)
            })
            .collect();
        let monitor = Arc::new(GpmMonitor::start(gpus, u64::MAX).expect("thread"));
        // Eight worker threads, one per GPU, each asking for rounds and reading their GPU's latest metrics at the
        // same moments, as the per-GPU workers do.
        let barrier = Arc::new(Barrier::new(GPUS as usize));
        let workers: Vec<_> = (0..GPUS)
            .map(|gpu| {
                let (monitor, barrier) = (Arc::clone(&monitor), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        barrier.wait();
                        monitor.request(round as u64);
                        let _ = monitor.latest(gpu, round as u64);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
        // At least one whole round ran (requests made while a round runs are dropped, by design).
        for _ in 0..GPUS {
            done_rx.recv().expect("a read");
        }
        assert_eq!(overlap.most.load(Ordering::SeqCst), 1, "two GPM reads ran at the same time");
        assert!(overlap.reads.load(Ordering::SeqCst) >= GPUS as usize);
    }

    #[test]
    fn the_instrument_sees_overlap_when_eight_threads_call_gpm_directly() {
        // The control for the test above: were the workers to call GPM themselves, as they did before the GPM
        // thread, the instrument would see two reads at once.
        let overlap = Arc::new(Overlap::default());
        let (done_tx, _done_rx) = mpsc::channel();
        for _ in 0..50 {
            let barrier = Arc::new(Barrier::new(8));
            let threads: Vec<_> = (0..8)
                .map(|i| {
                    let mut fake = FakeGpu { overlap: Arc::clone(&overlap), value: i as f32, done: done_tx.clone() };
                    let barrier = Arc::clone(&barrier);
                    std::thread::spawn(move || {
                        barrier.wait();
                        let _ = fake.read();
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("thread");
            }
            if overlap.most.load(Ordering::SeqCst) > 1 {
                return;
            }
        }
        panic!("eight threads calling at once never overlapped: the instrument cannot see overlap");
    }

    /// A fake GPU that hangs until told to go on.
    struct HangingGpu {
        go_on: Receiver<()>,
        entered: mpsc::Sender<()>,
    }

    impl GpmReader for HangingGpu {
        fn read(&mut self) -> Result<Option<GpmMetrics>, NvmlError> {
            let _ = self.entered.send(());
            let _ = self.go_on.recv();
            Ok(Some(GpmMetrics::default()))
        }
    }

    #[test]
    fn a_hung_gpm_call_never_blocks_the_caller_and_its_metrics_go_stale() {
        let (go_tx, go_rx) = mpsc::channel();
        let (entered_tx, entered_rx) = mpsc::channel();
        let (done_tx, _done_rx) = mpsc::channel();
        let overlap = Arc::new(Overlap::default());
        let gpus: Vec<(u32, Box<dyn GpmReader>)> = vec![
            (0, Box::new(FakeGpu { overlap, value: 42.0, done: done_tx })),
            (1, Box::new(HangingGpu { go_on: go_rx, entered: entered_tx })),
        ];
        let monitor = GpmMonitor::start(gpus, 5_000).expect("thread");
        monitor.request(1_000);
        entered_rx.recv().expect("GPU 1 entered its read");
        // GPU 0 was read before GPU 1 hung.
        assert_eq!(monitor.latest(0, 1_000).and_then(|m| m.sm_active_pct), Some(42.0));
        // Requests while hung return at once and do not pile up.
        for t in 0..1_000 {
            monitor.request(2_000 + t);
        }
        // Past the staleness limit the value is unknown, not a frozen number.
        assert_eq!(monitor.latest(0, 6_001), None);
        assert_eq!(monitor.latest(7, 1_000), None, "no such GPU");
        go_tx.send(()).expect("release");
    }

    /// A GPU whose GPM reports PCIe rates, or not.
    struct WithPcie(Option<(u32, u32)>);

    impl GpmReader for WithPcie {
        fn read(&mut self) -> Result<Option<GpmMetrics>, NvmlError> {
            Ok(Some(GpmMetrics { sm_active_pct: Some(50.0), ..GpmMetrics::default() }))
        }

        fn pcie_kbps(&self) -> Option<(u32, u32)> {
            self.0
        }

        /// NVLink alongside PCIe, as a GPU with both answers: a tenth of the PCIe numbers, in MiB/s.
        fn nvlink_mib_s(&self) -> Option<(u32, u32)> {
            self.0.map(|(rx, tx)| (rx / 10, tx / 10))
        }
    }

    #[test]
    fn gpm_pcie_rates_reach_the_reader_and_tell_the_pcie_thread_to_rest() {
        let gpus: Vec<(u32, Box<dyn GpmReader>)> =
            vec![(0, Box::new(WithPcie(Some((2_048, 1_024))))), (1, Box::new(WithPcie(None)))];
        let monitor = GpmMonitor::start(gpus, 10_000).expect("thread");
        let covered = [Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(true))];
        monitor.share_pcie_flag(0, Arc::clone(&covered[0]));
        monitor.share_pcie_flag(1, Arc::clone(&covered[1]));
        monitor.request(1_000);
        // The round is done once GPU 1's metrics are in (GPUs are read in order).
        while monitor.latest(1, 1_000).is_none() {
            std::thread::yield_now();
        }
        assert_eq!(monitor.latest_pcie(0, 1_000), Some((2_048, 1_024)));
        assert!(covered[0].load(Ordering::Relaxed), "GPU 0's PCIe thread may rest");
        assert_eq!(monitor.latest_pcie(1, 1_000), None);
        assert!(!covered[1].load(Ordering::Relaxed), "GPU 1's PCIe thread must read PCIe itself");
        assert_eq!(monitor.latest_pcie(0, 20_000), None, "stale after the limit");
        // NVLink rates come from the same call, with the same staleness.
        assert_eq!(monitor.latest_nvlink(0, 1_000), Some((204, 102)));
        assert_eq!(monitor.latest_nvlink(1, 1_000), None);
        assert_eq!(monitor.latest_nvlink(0, 20_000), None, "stale after the limit");
    }

    #[test]
    fn gpm_nvlink_rates_are_whole_mib_per_second() {
        assert_eq!(mib_s(1.5), Some(2));
        assert_eq!(mib_s(0.0), Some(0));
        assert_eq!(mib_s(-1.0), None);
        assert_eq!(mib_s(f64::NAN), None);
        assert_eq!(mib_s(1e30), Some(u32::MAX));
    }

    #[test]
    fn gpm_pcie_mib_per_second_becomes_kb_per_second() {
        assert_eq!(mib_s_to_kbps(1.5), Some(1_573));
        assert_eq!(mib_s_to_kbps(56_737.9), Some(59_494_000));
        assert_eq!(mib_s_to_kbps(0.0), Some(0));
        assert_eq!(mib_s_to_kbps(-1.0), None);
        assert_eq!(mib_s_to_kbps(f64::NAN), None);
        assert_eq!(mib_s_to_kbps(1e30), Some(u32::MAX));
    }

    struct Unsupported;

    impl GpmReader for Unsupported {
        fn read(&mut self) -> Result<Option<GpmMetrics>, NvmlError> {
            Err(NvmlError::NotSupported)
        }
    }

    #[test]
    fn a_gpu_without_gpm_is_asked_once() {
        let (done_tx, done_rx) = mpsc::channel();
        let overlap = Arc::new(Overlap::default());
        let gpus: Vec<(u32, Box<dyn GpmReader>)> =
            vec![(0, Box::new(Unsupported)), (1, Box::new(FakeGpu { overlap, value: 7.0, done: done_tx }))];
        let monitor = GpmMonitor::start(gpus, 10_000).expect("thread");
        monitor.request(0);
        done_rx.recv().expect("GPU 1 read");
        monitor.request(1);
        done_rx.recv().expect("GPU 1 read again");
        assert_eq!(monitor.latest(0, 1), None);
        assert_eq!(monitor.latest(1, 1).and_then(|m| m.sm_active_pct), Some(7.0));
    }
}
