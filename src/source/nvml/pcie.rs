//! PCIe throughput, off the read path: each NVML call samples a 20 ms window and blocks, so one thread per GPU
//! reads TX and RX every couple of seconds and leaves the latest values where the reader takes them without
//! waiting. A GPU whose GPM reports PCIe (Hopper and later) needs none of this: while the GPM thread says so
//! through the shared flag, the thread makes no NVML call at all.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nvml_wrapper::Device;
use nvml_wrapper::enum_wrappers::device::PcieUtilCounter;

use super::errors::{Fault, classify};

/// Values older than this are not shown (the thread is stuck or the GPU stopped answering).
pub const PCIE_STALE_AFTER: Duration = Duration::from_secs(10);

/// What the PCIe thread last saw.
#[derive(Debug, Clone, Copy, Default)]
struct Latest {
    rx_kbps: Option<u32>,
    tx_kbps: Option<u32>,
    at: Option<Instant>,
    /// The GPU does not report PCIe throughput (or is lost): the thread has ended.
    unsupported: bool,
}

/// The reader's side of one GPU's PCIe thread. Dropping it stops the thread at its next wake-up.
#[derive(Debug)]
pub struct PcieMonitor {
    latest: Arc<Mutex<Latest>>,
    stale_after: Duration,
    _stop: mpsc::Sender<()>,
}

impl PcieMonitor {
    /// Starts the thread for this device; it reads nothing while `covered` is set (GPM reports PCIe). Returns
    /// `None` if the thread could not be spawned.
    #[must_use]
    pub fn start(
        gpu_index: u32,
        device: Arc<Device<'static>>,
        period: Duration,
        covered: Arc<AtomicBool>,
    ) -> Option<Self> {
        let latest = Arc::new(Mutex::new(Latest::default()));
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let shared = Arc::clone(&latest);
        std::thread::Builder::new()
            .name(format!("gpusight-pcie-{gpu_index}"))
            .spawn(move || run(gpu_index, &device, &shared, &stop_rx, period, &covered))
            .ok()?;
        Some(Self { latest, stale_after: PCIE_STALE_AFTER.max(period * 3), _stop: stop_tx })
    }

    /// The latest (RX, TX) in KB/s, without blocking on NVML; `None` when unknown or stale.
    #[must_use]
    pub fn latest(&self) -> (Option<u32>, Option<u32>) {
        let l = *self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        match l.at {
            Some(at) if at.elapsed() <= self.stale_after => (l.rx_kbps, l.tx_kbps),
            _ => (None, None),
        }
    }

    /// Whether the GPU has been found not to report PCIe throughput.
    #[must_use]
    pub fn unsupported(&self) -> bool {
        self.latest.lock().unwrap_or_else(PoisonError::into_inner).unsupported
    }
}

fn run(
    gpu_index: u32,
    device: &Device<'static>,
    latest: &Mutex<Latest>,
    stop: &mpsc::Receiver<()>,
    period: Duration,
    covered: &AtomicBool,
) {
    let _running = crate::crash::enter(crate::crash::Family::Pcie, Some(gpu_index));
    let mut rx_ok = true;
    let mut tx_ok = true;
    loop {
        let started = Instant::now();
        if covered.load(Ordering::Relaxed) {
            match stop.recv_timeout(period) {
                Err(RecvTimeoutError::Timeout) => continue,
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        let read = |counter: PcieUtilCounter, ok: &mut bool| -> Result<Option<u32>, ()> {
            if !*ok {
                return Ok(None);
            }
            match device.pcie_throughput(counter) {
                Ok(v) => Ok(Some(v)),
                Err(e) => match classify(&e) {
                    Fault::Unsupported | Fault::NoPermission => {
                        *ok = false;
                        Ok(None)
                    }
                    Fault::Lost => Err(()),
                    Fault::Transient | Fault::Other => Ok(None),
                },
            }
        };
        let rx = read(PcieUtilCounter::Receive, &mut rx_ok);
        let tx = read(PcieUtilCounter::Send, &mut tx_ok);
        {
            let mut l = latest.lock().unwrap_or_else(PoisonError::into_inner);
            match (rx, tx) {
                (Ok(rx), Ok(tx)) => {
                    l.rx_kbps = rx;
                    l.tx_kbps = tx;
                    l.at = Some(Instant::now());
                    l.unsupported = !rx_ok && !tx_ok;
                }
                _ => l.unsupported = true,
            }
            if l.unsupported {
                return;
            }
        }
        let wait = period.saturating_sub(started.elapsed()).max(Duration::from_millis(100));
        match stop.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
