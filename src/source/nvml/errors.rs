//! What NVML errors mean for the monitor: the one-line message when NVML cannot start, and the per-(GPU, field)
//! memo that stops asking a field that will never answer.

use std::collections::{HashMap, HashSet};

use nvml_wrapper::error::NvmlError;

/// After this many consecutive `Unknown`/`Timeout` errors on one GPU, a note is raised.
pub const TRANSIENT_NOTE_AFTER: u32 = 5;

/// Turns an `Nvml::init` failure into one line for people: what is missing and what to do.
#[must_use]
pub fn open_error_message(err: &NvmlError) -> String {
    match err {
        NvmlError::LibloadingError(e) => format!(
            "NVIDIA driver library libnvidia-ml.so.1 not found ({e}): install the NVIDIA driver, or in a container \
             enable the `utility` driver capability; or try --demo"
        ),
        NvmlError::LibraryNotFound => "NVIDIA driver library libnvidia-ml.so.1 not found: install the NVIDIA driver; \
                                       or try --demo"
            .to_string(),
        NvmlError::DriverNotLoaded => {
            "NVIDIA driver is not loaded (no kernel module): load it (modprobe nvidia) or check the install; \
             or try --demo"
                .to_string()
        }
        NvmlError::LibRmVersionMismatch => "NVIDIA driver/library version mismatch (the driver was upgraded but the \
                                            old kernel module is still loaded): reload the driver or reboot; or try \
                                            --demo"
            .to_string(),
        NvmlError::NoPermission => "no permission to open /dev/nvidiactl: run as a user with access to the NVIDIA \
                                    devices (or pass the devices into the container); or try --demo"
            .to_string(),
        other => format!("NVML could not start: {other}; try --demo"),
    }
}

/// How one failed call should be treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The field will never answer on this GPU with this driver: stop asking.
    Unsupported,
    /// Permission denied: it will not change while we run, so stop asking, and say so once.
    NoPermission,
    /// The GPU is gone or needs a reset: stop asking it anything.
    Lost,
    /// Possibly temporary (`Unknown`, `Timeout`): ask again next time, count the streak.
    Transient,
    /// Anything else: N/A this time, ask again.
    Other,
}

/// Sorts an NVML error into a [`Fault`].
#[must_use]
pub fn classify(err: &NvmlError) -> Fault {
    match err {
        NvmlError::NotSupported
        | NvmlError::FunctionNotFound
        | NvmlError::FailedToLoadSymbol(_)
        | NvmlError::UnexpectedVariant(_) => Fault::Unsupported,
        NvmlError::NoPermission => Fault::NoPermission,
        NvmlError::GpuLost | NvmlError::ResetRequired => Fault::Lost,
        NvmlError::Unknown | NvmlError::Timeout => Fault::Transient,
        _ => Fault::Other,
    }
}

/// Remembers, for one GPU, which fields never answer, whether the GPU is lost, and the streak of transient
/// errors. Keyed by any small copyable field name.
#[derive(Debug)]
pub struct FieldMemo<F> {
    gpu_index: u32,
    unsupported: HashSet<F>,
    /// Fields whose "other" error was already noted, so a note is not repeated every read.
    noted: HashSet<F>,
    /// Per-field errors seen this run, for the doctor: the first error text.
    first_errors: HashMap<F, String>,
    lost: bool,
    transient_streak: u32,
    transient_noted: bool,
    notes: Vec<String>,
}

impl<F: Copy + Eq + std::hash::Hash + std::fmt::Debug> FieldMemo<F> {
    /// A memo for the GPU with this NVML index.
    #[must_use]
    pub fn new(gpu_index: u32) -> Self {
        Self {
            gpu_index,
            unsupported: HashSet::new(),
            noted: HashSet::new(),
            first_errors: HashMap::new(),
            lost: false,
            transient_streak: 0,
            transient_noted: false,
            notes: Vec::new(),
        }
    }

    /// Whether NVML said the GPU is lost or needs a reset.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// Whether this field is known never to answer.
    #[must_use]
    pub fn is_unsupported(&self, field: F) -> bool {
        self.unsupported.contains(&field)
    }

    /// Whether the field should be asked at all (the GPU is not lost and the field is not memoised away).
    #[must_use]
    pub fn should_ask(&self, field: F) -> bool {
        !self.lost && !self.unsupported.contains(&field)
    }

    /// Marks a field as never answering without calling it (e.g. a capability known at open).
    pub fn mark_unsupported(&mut self, field: F) {
        self.unsupported.insert(field);
    }

    /// Calls `f` for `field` unless the field is memoised away or the GPU is lost, and records the outcome.
    pub fn call<T>(&mut self, field: F, f: impl FnOnce() -> Result<T, NvmlError>) -> Option<T> {
        if !self.should_ask(field) {
            return None;
        }
        match f() {
            Ok(value) => {
                self.ok();
                Some(value)
            }
            Err(err) => {
                self.record(field, &err);
                None
            }
        }
    }

    /// Records a success (ends a transient streak).
    pub fn ok(&mut self) {
        if self.transient_noted && self.transient_streak > 0 {
            self.notes.push(format!("GPU {}: NVML answers again", self.gpu_index));
        }
        self.transient_streak = 0;
        self.transient_noted = false;
    }

    /// Records an error for `field` and returns how it was classified.
    pub fn record(&mut self, field: F, err: &NvmlError) -> Fault {
        let fault = classify(err);
        self.first_errors.entry(field).or_insert_with(|| err.to_string());
        match fault {
            Fault::Unsupported => {
                self.unsupported.insert(field);
            }
            Fault::NoPermission => {
                self.unsupported.insert(field);
                self.notes.push(format!(
                    "GPU {}: {field:?} needs more privilege (no permission); shown as N/A",
                    self.gpu_index
                ));
            }
            Fault::Lost => {
                if !self.lost {
                    self.notes.push(format!(
                        "GPU {}: NVML reports the GPU lost or needing a reset ({err}); it is no longer read",
                        self.gpu_index
                    ));
                }
                self.lost = true;
            }
            Fault::Transient => {
                self.transient_streak += 1;
                if self.transient_streak >= TRANSIENT_NOTE_AFTER && !self.transient_noted {
                    self.transient_noted = true;
                    self.notes.push(format!(
                        "GPU {}: {} NVML calls in a row failed ({err}); readings may be missing",
                        self.gpu_index, self.transient_streak
                    ));
                }
            }
            Fault::Other => {
                if self.noted.insert(field) {
                    self.notes.push(format!("GPU {}: reading {field:?} failed: {err}", self.gpu_index));
                }
            }
        }
        fault
    }

    /// The notes raised since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// The fields known never to answer, for diagnostics.
    #[must_use]
    pub fn unsupported_fields(&self) -> Vec<F> {
        self.unsupported.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_errors_name_what_is_missing() {
        // A library path that does not exist gives the same error as a machine without the driver.
        let Err(err) = nvml_wrapper::Nvml::builder()
            .lib_path(std::ffi::OsStr::new("/nonexistent/gpusight-test/libnvidia-ml.so.1"))
            .init()
        else {
            panic!("a missing library cannot load");
        };
        assert!(matches!(err, NvmlError::LibloadingError(_)));
        let msg = open_error_message(&err);
        assert!(msg.contains("libnvidia-ml.so.1 not found"), "{msg}");
        assert!(msg.contains("--demo"));
        let msg = open_error_message(&NvmlError::DriverNotLoaded);
        assert!(msg.contains("driver is not loaded") && msg.contains("--demo"), "{msg}");
        let msg = open_error_message(&NvmlError::LibRmVersionMismatch);
        assert!(msg.contains("version mismatch") && msg.contains("reload the driver or reboot"), "{msg}");
        let msg = open_error_message(&NvmlError::NoPermission);
        assert!(msg.contains("/dev/nvidiactl"), "{msg}");
        let msg = open_error_message(&NvmlError::LibraryNotFound);
        assert!(msg.contains("libnvidia-ml.so.1"), "{msg}");
        let msg = open_error_message(&NvmlError::InsufficientMemory);
        assert!(msg.contains("insufficient memory") && msg.contains("--demo"), "{msg}");
        for msg in [
            open_error_message(&NvmlError::DriverNotLoaded),
            open_error_message(&NvmlError::Unknown),
            open_error_message(&NvmlError::LibRmVersionMismatch),
        ] {
            assert!(!msg.contains('\n'), "one line: {msg}");
        }
    }

    #[test]
    fn classification() {
        assert_eq!(classify(&NvmlError::NotSupported), Fault::Unsupported);
        assert_eq!(classify(&NvmlError::FunctionNotFound), Fault::Unsupported);
        assert_eq!(classify(&NvmlError::FailedToLoadSymbol("x".into())), Fault::Unsupported);
        assert_eq!(classify(&NvmlError::UnexpectedVariant(26)), Fault::Unsupported);
        assert_eq!(classify(&NvmlError::GpuLost), Fault::Lost);
        assert_eq!(classify(&NvmlError::ResetRequired), Fault::Lost);
        assert_eq!(classify(&NvmlError::Unknown), Fault::Transient);
        assert_eq!(classify(&NvmlError::Timeout), Fault::Transient);
        assert_eq!(classify(&NvmlError::NoPermission), Fault::NoPermission);
        assert_eq!(classify(&NvmlError::InvalidArg), Fault::Other);
    }

    #[test]
    fn unsupported_is_asked_once() {
        let mut memo = FieldMemo::new(0);
        let mut calls = 0;
        for _ in 0..3 {
            let got: Option<u32> = memo.call("fan", || {
                calls += 1;
                Err(NvmlError::NotSupported)
            });
            assert_eq!(got, None);
        }
        assert_eq!(calls, 1);
        assert!(memo.is_unsupported("fan"));
        // Other fields are still asked.
        assert_eq!(memo.call("power", || Ok(5u32)), Some(5));
    }

    #[test]
    fn lost_stops_every_field_and_notes_once() {
        let mut memo = FieldMemo::new(3);
        assert_eq!(memo.call::<u32>("util", || Err(NvmlError::GpuLost)), None);
        assert!(memo.is_lost());
        let mut called = false;
        let got: Option<u32> = memo.call("power", || {
            called = true;
            Ok(1)
        });
        assert_eq!(got, None);
        assert!(!called);
        let notes = memo.take_notes();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("GPU 3"));
    }

    #[test]
    fn transient_streak_notes_after_k_and_recovers() {
        let mut memo = FieldMemo::new(1);
        for _ in 0..TRANSIENT_NOTE_AFTER - 1 {
            let _: Option<u32> = memo.call("util", || Err(NvmlError::Unknown));
        }
        assert!(memo.take_notes().is_empty());
        let _: Option<u32> = memo.call("util", || Err(NvmlError::Timeout));
        assert_eq!(memo.take_notes().len(), 1);
        // Still asked: transient errors are not memoised.
        assert!(memo.should_ask("util"));
        // More failures do not repeat the note.
        let _: Option<u32> = memo.call("util", || Err(NvmlError::Unknown));
        assert!(memo.take_notes().is_empty());
        assert_eq!(memo.call("util", || Ok(7u32)), Some(7));
        assert_eq!(memo.take_notes().len(), 1, "recovery is noted");
    }

    #[test]
    fn other_errors_note_once_and_keep_asking() {
        let mut memo = FieldMemo::new(0);
        let _: Option<u32> = memo.call("fan", || Err(NvmlError::InvalidArg));
        let _: Option<u32> = memo.call("fan", || Err(NvmlError::InvalidArg));
        assert_eq!(memo.take_notes().len(), 1);
        assert!(memo.should_ask("fan"));
    }
}
