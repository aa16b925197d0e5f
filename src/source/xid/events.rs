//! The NVML event thread: registers critical Xid and ECC events on every GPU and waits for them, pushing
//! [`GpuEvent`]s into a channel the reader drains.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::event::EventData;
use nvml_wrapper::{Device, EventSet, Nvml};

use super::meaning::xid_meaning;
use crate::sample::{EventOrigin, GpuEvent, GpuEventKind};

/// A GPU to watch: its NVML index and its device handle, shared with the reader threads.
pub type WatchedGpu = (u32, Arc<Device<'static>>);

/// How long one wait lasts; also how soon the thread notices it should stop.
const WAIT_MS: u32 = 500;

/// Status values shared with the reader.
const STATUS_STARTING: u8 = 0;
const STATUS_OK: u8 = 1;
const STATUS_UNAVAILABLE: u8 = 2;

/// The reader's side of the event thread. Dropping it stops the thread within one wait.
#[derive(Debug)]
pub struct NvmlEventThread {
    events: Receiver<GpuEvent>,
    notes: Receiver<String>,
    status: Arc<AtomicU8>,
    stop: Arc<AtomicBool>,
}

impl Drop for NvmlEventThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl NvmlEventThread {
    /// Starts the thread for these GPUs (NVML index, device).
    #[must_use]
    pub fn start(nvml: &'static Nvml, devices: Vec<WatchedGpu>) -> Self {
        let (event_tx, events) = mpsc::channel();
        let (note_tx, notes) = mpsc::channel();
        let status = Arc::new(AtomicU8::new(STATUS_STARTING));
        let stop = Arc::new(AtomicBool::new(false));
        let (status2, stop2) = (Arc::clone(&status), Arc::clone(&stop));
        let spawned = std::thread::Builder::new()
            .name("gpusight-nvml-events".to_string())
            .spawn(move || run(nvml, &devices, &event_tx, &note_tx, &status2, &stop2));
        if spawned.is_err() {
            status.store(STATUS_UNAVAILABLE, Ordering::Relaxed);
        }
        Self { events, notes, status, stop }
    }

    /// Whether events are being received: `None` while the thread is still registering.
    #[must_use]
    pub fn available(&self) -> Option<bool> {
        match self.status.load(Ordering::Relaxed) {
            STATUS_OK => Some(true),
            STATUS_UNAVAILABLE => Some(false),
            _ => None,
        }
    }

    /// Takes the events and notes queued since the last call.
    pub fn drain(&self) -> (Vec<GpuEvent>, Vec<String>) {
        (self.events.try_iter().collect(), self.notes.try_iter().collect())
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Builds one event set with every GPU that accepts the registration. A failed registration frees the set
/// (nvml-wrapper releases it), so the set is rebuilt without that GPU.
fn register<'a>(
    nvml: &'static Nvml,
    devices: &'a [WatchedGpu],
    notes: &Sender<String>,
) -> Option<(EventSet<'static>, Vec<&'a WatchedGpu>)> {
    let wanted = EventTypes::CRITICAL_XID_ERROR | EventTypes::DOUBLE_BIT_ECC_ERROR | EventTypes::SINGLE_BIT_ECC_ERROR;
    let mut candidates: Vec<&WatchedGpu> = devices.iter().collect();
    'rebuild: loop {
        let mut set = match nvml.create_event_set() {
            Ok(set) => set,
            Err(e) => {
                let _ = notes.send(format!("NVML events unavailable: creating the event set failed: {e}"));
                return None;
            }
        };
        for (i, entry) in candidates.iter().enumerate() {
            let (index, device) = (entry.0, &entry.1);
            let types = match device.supported_event_types() {
                Ok(supported) => supported & wanted,
                Err(_) => wanted,
            };
            if types.is_empty() {
                let _ = notes.send(format!("GPU {index}: does not report Xid/ECC events through NVML"));
                candidates.remove(i);
                continue 'rebuild;
            }
            match device.register_events(types, set) {
                Ok(s) => set = s,
                Err(e) => {
                    let _ = notes.send(format!("GPU {index}: registering Xid/ECC events failed: {e}"));
                    candidates.remove(i);
                    continue 'rebuild;
                }
            }
        }
        if candidates.is_empty() {
            return None;
        }
        return Some((set, candidates));
    }
}

fn run(
    nvml: &'static Nvml,
    devices: &[WatchedGpu],
    events: &Sender<GpuEvent>,
    notes: &Sender<String>,
    status: &AtomicU8,
    stop: &AtomicBool,
) {
    let _running = crate::crash::enter(crate::crash::Family::Events, None);
    let Some((set, registered)) = register(nvml, devices, notes) else {
        status.store(STATUS_UNAVAILABLE, Ordering::Relaxed);
        return;
    };
    status.store(STATUS_OK, Ordering::Relaxed);
    let mut error_streak = 0u32;
    while !stop.load(Ordering::Relaxed) {
        match set.wait(WAIT_MS) {
            Ok(data) => {
                error_streak = 0;
                let index = gpu_index_of(&data, &registered);
                for event in to_events(&data, index, now_ms()) {
                    if events.send(event).is_err() {
                        return;
                    }
                }
            }
            Err(NvmlError::Timeout) => error_streak = 0,
            Err(e) => {
                error_streak += 1;
                if error_streak == 10 {
                    let _ = notes.send(format!("NVML event wait keeps failing ({e}); Xid events may be missed"));
                }
                // Do not spin on an error that returns at once.
                std::thread::sleep(Duration::from_millis(u64::from(WAIT_MS)));
            }
        }
    }
}

/// The NVML index of the GPU an event is about: the registered device with the event's handle (which needs no
/// call, so it holds for a GPU that is lost and answers nothing, the one an Xid 79 is about), else the device's
/// index or UUID as NVML answers them.
fn gpu_index_of(data: &EventData<'_>, registered: &[&WatchedGpu]) -> Option<u32> {
    if let Some((index, _)) = registered.iter().find(|(_, d)| same_handle(&data.device, d)) {
        return Some(*index);
    }
    if let Ok(index) = data.device.index() {
        return Some(index);
    }
    let uuid = data.device.uuid().ok()?;
    registered.iter().find(|(_, d)| d.uuid().ok().as_deref() == Some(uuid.as_str())).map(|(i, _)| *i)
}

/// Whether two devices are the same NVML handle.
#[expect(unsafe_code, reason = "reading two device handles to compare them; neither is dereferenced")]
fn same_handle(a: &Device<'_>, b: &Device<'_>) -> bool {
    // SAFETY: `handle` only returns the stored pointer; it is compared, never used for a call.
    unsafe { a.handle() == b.handle() }
}

/// Turns one NVML event into our events (an event may carry several type bits).
fn to_events(data: &EventData<'_>, gpu_index: Option<u32>, at_ms: u64) -> Vec<GpuEvent> {
    let mut out = Vec::new();
    let make = |kind: GpuEventKind, message: String| GpuEvent {
        at_ms,
        gpu_index,
        kind,
        origin: EventOrigin::NvmlEvents,
        message,
    };
    if data.event_type.contains(EventTypes::CRITICAL_XID_ERROR) {
        let (code, message) = match data.event_data {
            Some(XidError::Value(v)) => {
                let code = u32::try_from(v).unwrap_or(u32::MAX);
                (code, format!("Xid {code} (NVML event): {}", xid_meaning(code)))
            }
            _ => (999, "Xid of unknown code (NVML event)".to_string()),
        };
        out.push(make(GpuEventKind::Xid { code, pid: None, process_name: None }, message));
    }
    if data.event_type.contains(EventTypes::DOUBLE_BIT_ECC_ERROR) {
        out.push(make(GpuEventKind::DoubleBitEcc, "double-bit (uncorrectable) ECC error (NVML event)".to_string()));
    }
    if data.event_type.contains(EventTypes::SINGLE_BIT_ECC_ERROR) {
        out.push(make(GpuEventKind::SingleBitEcc, "single-bit (corrected) ECC error (NVML event)".to_string()));
    }
    out
}
