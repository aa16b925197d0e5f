//! PCIe throughput, off the read path: each NVML call samples a 20 ms window and blocks, so one thread per GPU
//! reads TX and RX every couple of seconds and leaves the latest values where the reader takes them without
//! waiting. A GPU whose GPM reports PCIe (Hopper and later) needs none of this: while the GPM thread says so
//! through the shared flag, the thread makes no NVML call at all.
//!
//! The counter counts all the link's traffic in its window, whatever made it. A first window taken with the open
//! measured gpusight's own start-up (the open and every GPU's first read, a burst of NVML calls), and `--once`,
//! whose second sample comes before the thread's second window, showed it: 17 to 19 MB/s RX on an idle H200 where
//! `nvidia-smi dmon -s t` showed 0. So the first window waits until the GPU's first read is done
//! ([`PcieMonitor::begin`]); `--once` takes its second sample half a second to a second after the first, and its
//! reading comes from that pause. Later windows are as before, every period.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nvml_wrapper::Device;
use nvml_wrapper::enum_wrappers::device::PcieUtilCounter;
use nvml_wrapper::error::NvmlError;

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
    /// Lets the thread take its first window; sent once, by [`PcieMonitor::begin`].
    begin: Option<mpsc::Sender<()>>,
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
        Self::start_reading(gpu_index, move |counter| device.pcie_throughput(counter), period, covered)
    }

    /// [`PcieMonitor::start`] with the call that reads a counter (the tests give their own).
    fn start_reading<R>(gpu_index: u32, read: R, period: Duration, covered: Arc<AtomicBool>) -> Option<Self>
    where
        R: FnMut(PcieUtilCounter) -> Result<u32, NvmlError> + Send + 'static,
    {
        let latest = Arc::new(Mutex::new(Latest::default()));
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (begin_tx, begin_rx) = mpsc::channel::<()>();
        let shared = Arc::clone(&latest);
        let thread = move || {
            // Dropped unbegun (the GPU never read once), the monitor ends the thread here.
            if begin_rx.recv().is_ok() {
                run(gpu_index, read, &shared, &stop_rx, period, &covered);
            }
        };
        std::thread::Builder::new().name(format!("gpusight-pcie-{gpu_index}")).spawn(thread).ok()?;
        Some(Self { latest, stale_after: PCIE_STALE_AFTER.max(period * 3), begin: Some(begin_tx), _stop: stop_tx })
    }

    /// Lets the thread take its first window, once the GPU's first read is done (later calls do nothing): a window
    /// taken before would count gpusight's own start-up calls as the link's traffic.
    pub fn begin(&mut self) {
        if let Some(begin) = self.begin.take() {
            let _ = begin.send(());
        }
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
    mut throughput: impl FnMut(PcieUtilCounter) -> Result<u32, NvmlError>,
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
        let mut read = |counter: PcieUtilCounter, ok: &mut bool| -> Result<Option<u32>, ()> {
            if !*ok {
                return Ok(None);
            }
            match throughput(counter) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter read as the thread makes it.
    type Read = Box<dyn FnMut(PcieUtilCounter) -> Result<u32, NvmlError> + Send>;

    /// Each counter read (RX or not), with whether `begun` was set then, to `calls`; RX 7 KB/s, TX 3.
    fn counting(begun: &Arc<AtomicBool>) -> (Read, mpsc::Receiver<(bool, bool)>) {
        let (tx, calls) = mpsc::channel();
        let begun = Arc::clone(begun);
        let read = move |counter: PcieUtilCounter| {
            let rx = matches!(counter, PcieUtilCounter::Receive);
            let _ = tx.send((rx, begun.load(Ordering::SeqCst)));
            Ok(if rx { 7 } else { 3 })
        };
        (Box::new(read), calls)
    }

    fn monitor(read: Read) -> PcieMonitor {
        let covered = Arc::new(AtomicBool::new(false));
        PcieMonitor::start_reading(0, read, Duration::from_hours(1), covered).expect("the thread starts")
    }

    #[test]
    fn the_first_window_comes_after_the_first_read() {
        let begun = Arc::new(AtomicBool::new(false));
        let (read, calls) = counting(&begun);
        let mut pcie = monitor(read);
        assert_eq!(pcie.latest(), (None, None));
        begun.store(true, Ordering::SeqCst);
        pcie.begin();
        pcie.begin();
        // A deadline, not a wait: the reads come as soon as the thread runs.
        let deadline = Duration::from_secs(30);
        assert_eq!(calls.recv_timeout(deadline), Ok((true, true)), "RX first, after begin");
        assert_eq!(calls.recv_timeout(deadline), Ok((false, true)), "then TX");
        drop(pcie);
        assert_eq!(calls.recv_timeout(deadline), Err(RecvTimeoutError::Disconnected), "one window a period");
    }

    #[test]
    fn a_gpu_that_never_read_gets_no_window() {
        let (read, calls) = counting(&Arc::new(AtomicBool::new(false)));
        drop(monitor(read));
        // The thread ends without a read, and drops the reader with its sender.
        assert_eq!(calls.recv_timeout(Duration::from_secs(30)), Err(RecvTimeoutError::Disconnected));
    }
}
