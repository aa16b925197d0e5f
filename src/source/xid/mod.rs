//! Xid and ECC events: the NVML event thread and the kernel log (`/dev/kmsg`) parser, merged into one stream
//! of [`GpuEvent`]s with each event mapped to its GPU by PCI address.
//!
//! NVML events arrive live but carry no history and no process; the kernel log has the history from before we
//! started and names the host PID, but needs CAP_SYSLOG where `dmesg_restrict` is set. Both are used when
//! readable, and each reports whether it is, so the caller can say "no Xid source readable" rather than
//! pretend all is well.

use nvml_wrapper::Nvml;
use std::path::Path;

use crate::sample::{EventOrigin, GpuEvent, GpuEventKind, GpuInfo, UnixMs};
use crate::source::nvml::info::parse_bus_id;

pub mod events;
pub mod kmsg;
pub mod meaning;

pub use events::{NvmlEventThread, WatchedGpu};
pub use kmsg::{KmsgReader, NvrmEvent, ParsedXid, parse_kmsg_record, parse_nvrm_message};
pub use meaning::{
    CATALOG_URL, UNKNOWN_MEANING, XID_TABLE, XidAction, XidEntry, XidOrigin, XidSeverity, recovery_action, xid_entry,
    xid_meaning,
};

/// An NVML Xid event is taken to be the same as a kernel-log Xid of the same GPU and code this close in time.
const DUPLICATE_WINDOW_MS: u64 = 10_000;

/// What one poll found.
#[derive(Debug, Default)]
pub struct XidPoll {
    pub events: Vec<GpuEvent>,
    /// Whether NVML events are being received (`None`: not started or still registering).
    pub nvml_events: Option<bool>,
    /// Whether the kernel log is readable.
    pub kernel_log: Option<bool>,
    pub notes: Vec<String>,
}

/// Maps a kernel-log PCI address to the NVML index of the GPU at that address.
#[must_use]
pub fn gpu_for_bus(gpus: &[GpuInfo], bus: (u32, u32, u32)) -> Option<u32> {
    gpus.iter().find(|g| parse_bus_id(&g.pci_bus_id) == Some(bus)).map(|g| g.index)
}

/// Turns a parsed kernel-log record into an event, given the wall time of the record.
#[must_use]
pub fn kernel_event(gpus: &[GpuInfo], parsed: &ParsedXid, at_ms: UnixMs) -> GpuEvent {
    GpuEvent {
        at_ms,
        gpu_index: gpu_for_bus(gpus, parsed.event.bus),
        kind: parsed.event.kind.clone(),
        origin: EventOrigin::KernelLog,
        message: parsed.message.clone(),
    }
}

/// Drops NVML Xid events that a kernel-log Xid (same GPU and code, within the window) already reports: the
/// kernel line says more (process, details). `recent_kernel` holds the kernel-log Xids seen lately.
#[must_use]
pub fn drop_duplicates(nvml: Vec<GpuEvent>, recent_kernel: &[(Option<u32>, u32, UnixMs)]) -> Vec<GpuEvent> {
    nvml.into_iter()
        .filter(|e| {
            let GpuEventKind::Xid { code, .. } = e.kind else { return true };
            !recent_kernel
                .iter()
                .any(|&(gpu, c, at)| gpu == e.gpu_index && c == code && at.abs_diff(e.at_ms) <= DUPLICATE_WINDOW_MS)
        })
        .collect()
}

/// Watches both Xid sources for a set of GPUs.
#[derive(Debug)]
pub struct XidWatch {
    gpus: Vec<GpuInfo>,
    nvml_thread: Option<NvmlEventThread>,
    kmsg: Option<KmsgReader>,
    kernel_log: Option<bool>,
    /// Kernel-log Xids of the last while, for [`drop_duplicates`].
    recent_kernel: Vec<(Option<u32>, u32, UnixMs)>,
    notes: Vec<String>,
}

impl XidWatch {
    /// Starts watching: the NVML event thread when `nvml` is given, and `/dev/kmsg` when it can be opened. The
    /// first [`XidWatch::poll`] returns the Xids still in the kernel's log from before we started.
    #[must_use]
    pub fn start(nvml: Option<(&'static Nvml, Vec<WatchedGpu>)>, gpus: &[GpuInfo]) -> Self {
        Self::start_with_kmsg(nvml, gpus, Path::new("/dev/kmsg"))
    }

    /// As [`XidWatch::start`], reading the kernel log from `kmsg_path`.
    #[must_use]
    pub fn start_with_kmsg(nvml: Option<(&'static Nvml, Vec<WatchedGpu>)>, gpus: &[GpuInfo], kmsg_path: &Path) -> Self {
        let mut notes = Vec::new();
        let (kmsg, kernel_log) = match KmsgReader::open(kmsg_path) {
            Ok(r) => (Some(r), None),
            Err(e) => {
                notes.push(format!(
                    "kernel log {} not readable ({e}): Xid history and process names are unavailable; run with \
                     CAP_SYSLOG or as root to see them",
                    kmsg_path.display()
                ));
                (None, Some(false))
            }
        };
        let nvml_thread = nvml.map(|(nvml, devices)| NvmlEventThread::start(nvml, devices));
        Self { gpus: gpus.to_vec(), nvml_thread, kmsg, kernel_log, recent_kernel: Vec::new(), notes }
    }

    /// Collects the events seen since the last poll. Kernel-log times come from the record's boot-relative
    /// stamp and `/proc/uptime`; NVML events are stamped when received.
    pub fn poll(&mut self, now_ms: UnixMs) -> XidPoll {
        let mut out = XidPoll { notes: std::mem::take(&mut self.notes), ..XidPoll::default() };
        if let Some(reader) = &mut self.kmsg {
            let pass = reader.read_available();
            if let Some(errno) = pass.failed {
                out.notes.push(format!(
                    "kernel log not readable ({errno}): Xid history and process names are unavailable; run with \
                     CAP_SYSLOG or as root to see them"
                ));
                self.kmsg = None;
                self.kernel_log = Some(false);
            } else {
                self.kernel_log = Some(true);
            }
            if !pass.records.is_empty() {
                let uptime_ms = std::fs::read_to_string("/proc/uptime").ok().and_then(|t| kmsg::parse_uptime_ms(&t));
                for parsed in &pass.records {
                    let at_ms = uptime_ms.map_or(now_ms, |up| kmsg::kmsg_wall_ms(now_ms, up, parsed.ts_usec));
                    let event = kernel_event(&self.gpus, parsed, at_ms);
                    if let GpuEventKind::Xid { code, .. } = event.kind {
                        self.recent_kernel.push((event.gpu_index, code, at_ms));
                    }
                    out.events.push(event);
                }
            }
        }
        self.recent_kernel.retain(|&(_, _, at)| now_ms.saturating_sub(at) <= 2 * DUPLICATE_WINDOW_MS);
        if let Some(thread) = &self.nvml_thread {
            let (events, notes) = thread.drain();
            out.events.extend(drop_duplicates(events, &self.recent_kernel));
            out.notes.extend(notes);
            out.nvml_events = thread.available();
        }
        out.kernel_log = self.kernel_log;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus() -> Vec<GpuInfo> {
        ["0000:01:00.0", "0000:cb:00.0", "0001:81:00.0"]
            .iter()
            .enumerate()
            .map(|(i, bus)| GpuInfo {
                index: u32::try_from(i).expect("small"),
                pci_bus_id: (*bus).to_string(),
                ..GpuInfo::default()
            })
            .collect()
    }

    #[test]
    fn bus_mapping() {
        let g = gpus();
        assert_eq!(gpu_for_bus(&g, (0, 1, 0)), Some(0));
        assert_eq!(gpu_for_bus(&g, (0, 0xcb, 0)), Some(1));
        assert_eq!(gpu_for_bus(&g, (1, 0x81, 0)), Some(2));
        assert_eq!(gpu_for_bus(&g, (0, 0x81, 0)), None, "domain matters");
        let parsed =
            parse_kmsg_record("3,5,1000,-;NVRM: Xid (PCI:0000:CB:00): 109, pid=7, name=x, Ch 1").expect("parses");
        let e = kernel_event(&g, &parsed, 42);
        assert_eq!((e.gpu_index, e.origin, e.at_ms), (Some(1), EventOrigin::KernelLog, 42));
    }

    fn nvml_xid(gpu: u32, code: u32, at_ms: u64) -> GpuEvent {
        GpuEvent {
            at_ms,
            gpu_index: Some(gpu),
            kind: GpuEventKind::Xid { code, pid: None, process_name: None },
            origin: EventOrigin::NvmlEvents,
            message: String::new(),
        }
    }

    #[test]
    fn duplicates_of_kernel_lines_are_dropped() {
        let recent = [(Some(0), 79, 10_000)];
        let kept = drop_duplicates(
            vec![nvml_xid(0, 79, 10_500), nvml_xid(1, 79, 10_500), nvml_xid(0, 48, 10_500), nvml_xid(0, 79, 40_000)],
            &recent,
        );
        let kept: Vec<(Option<u32>, u64)> = kept.iter().map(|e| (e.gpu_index, e.at_ms)).collect();
        assert_eq!(kept, vec![(Some(1), 10_500), (Some(0), 10_500), (Some(0), 40_000)]);
    }

    #[test]
    fn watch_on_a_fixture_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kmsg");
        std::fs::write(&path, "3,1,5000000,-;NVRM: Xid (PCI:0000:01:00): 48, DBE\n").expect("write");
        let mut watch = XidWatch::start_with_kmsg(None, &gpus(), &path);
        let poll = watch.poll(1_000_000);
        assert_eq!(poll.kernel_log, Some(true));
        assert_eq!(poll.nvml_events, None);
        assert_eq!(poll.events.len(), 1);
        assert_eq!(poll.events[0].gpu_index, Some(0));
        // The file is at its end now: nothing new.
        assert!(watch.poll(1_001_000).events.is_empty());

        let mut missing = XidWatch::start_with_kmsg(None, &gpus(), &dir.path().join("nope"));
        let poll = missing.poll(5);
        assert_eq!(poll.kernel_log, Some(false));
        assert_eq!(poll.notes.len(), 1);
    }
}
