//! The fake machine, built from the scenario at the first `nvmlInit`: its GPUs and MIG devices with stable
//! handles, its virtual clock, the faults it plays, and NVML's contract (init before use, nothing after
//! shutdown), which it enforces by aborting.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nvml_wrapper_sys::bindings::{nvmlDevice_st, nvmlDevice_t, nvmlReturn_t};

use crate::ret;
use crate::scenario::{ErrorKind, GpuSpec, MigSpec, Phase, Scenario};

/// How many `nvmlInit` calls have not been matched by `nvmlShutdown`.
static INITS: AtomicU32 = AtomicU32::new(0);
/// Whether NVML was ever started in this process.
static EVER_STARTED: AtomicBool = AtomicBool::new(false);
/// The machine, built at the first successful `nvmlInit` and kept for the life of the process (handles given out
/// stay addresses into it, so a late call is caught as a contract violation, not a use after free).
static MACHINE: OnceLock<Result<Machine, String>> = OnceLock::new();

/// With `GPUSIGHT_FAKE_NVML_CALLS=FILE`: how many times each entry point was called, written to FILE when the
/// process exits (a count and a name per line, most called first; gpusight keeps NVML to the end and never calls
/// `nvmlShutdown`). How two builds' NVML calls per tick are compared.
static CALLS: OnceLock<Option<Mutex<BTreeMap<&'static str, u64>>>> = OnceLock::new();

fn calls() -> Option<&'static Mutex<BTreeMap<&'static str, u64>>> {
    CALLS
        .get_or_init(|| {
            std::env::var_os("GPUSIGHT_FAKE_NVML_CALLS")?;
            // SAFETY: registers a plain function with the C library's exit handlers (run at exit, or at dlclose
            // for a handler in this library).
            if unsafe { atexit(calls_at_exit) } != 0 {
                eprintln!("fake NVML: cannot register the call counts' writer");
            }
            Some(Mutex::new(BTreeMap::new()))
        })
        .as_ref()
}

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

extern "C" fn calls_at_exit() {
    // An unwind must not cross into C.
    let _ = std::panic::catch_unwind(write_calls);
}

/// Counts a call of `call` when calls are counted.
fn count(call: &'static str) {
    if let Some(map) = calls()
        && let Ok(mut map) = map.lock()
    {
        *map.entry(call).or_insert(0) += 1;
    }
}

/// Writes the counted calls to `GPUSIGHT_FAKE_NVML_CALLS`'s file; an error is printed, never fatal.
fn write_calls() {
    let (Some(map), Some(path)) = (calls(), std::env::var_os("GPUSIGHT_FAKE_NVML_CALLS")) else { return };
    let Ok(map) = map.lock() else { return };
    let mut rows: Vec<(&str, u64)> = map.iter().map(|(k, v)| (*k, *v)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let text = rows.iter().fold(String::new(), |mut text, (k, v)| {
        use std::fmt::Write as _;
        let _ = writeln!(text, "{v}\t{k}");
        text
    });
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("fake NVML: cannot write the call counts to {}: {e}", path.to_string_lossy());
    }
}

/// Prints a contract violation and aborts the process: the caller broke a rule real NVML does not forgive.
pub fn violation(what: &str) -> ! {
    eprintln!("fake NVML: CONTRACT VIOLATION: {what}");
    std::process::abort()
}

/// One handle's target: a GPU, or one of its MIG devices.
#[derive(Debug)]
pub struct Slot {
    pub gpu: usize,
    pub mig: Option<usize>,
}

/// One GPU of the machine.
#[derive(Debug)]
pub struct Gpu {
    pub index: u32,
    pub spec: GpuSpec,
    pub uuid: String,
    pub serial: String,
    pub pci_bus: u32,
    pub lost: AtomicBool,
    /// A GPM sample or metrics call is running on this GPU.
    pub gpm_busy: AtomicBool,
}

/// The whole machine.
#[derive(Debug)]
pub struct Machine {
    pub scenario: Scenario,
    pub gpus: Vec<Gpu>,
    /// Handles: the GPUs first, in index order, then every MIG device.
    pub slots: Box<[Slot]>,
    pub start: Instant,
    /// A GPM call is running on some GPU (for the cross-GPU rule).
    pub gpm_any: AtomicBool,
}

/// What a device handle resolved to.
#[derive(Debug, Clone, Copy)]
pub struct Dev {
    pub machine: &'static Machine,
    pub gpu: &'static Gpu,
    pub mig: Option<(usize, &'static MigSpec)>,
    pub slot: usize,
}

fn uuid_for(name: &str, index: u32) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("GPU-{:08x}-fa4e-4000-8000-{:012x}", (h >> 32) as u32, u64::from(index) + (h & 0xffff) * 0x1_0000)
}

impl Machine {
    fn build(scenario: Scenario) -> Self {
        let mut gpus = Vec::new();
        for spec in &scenario.gpus {
            for copy in 0..spec.count {
                let index = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
                let uuid = match &spec.uuid {
                    Some(u) if spec.count == 1 => u.clone(),
                    Some(u) => format!("{}{:02x}", u.get(..u.len().saturating_sub(2)).unwrap_or(u), copy),
                    None => uuid_for(&scenario.name, index),
                };
                let serial = spec.serial.clone().map_or_else(|| format!("165{index:010}"), |s| format!("{s}{copy}"));
                let pci_bus = spec.pci_bus.map_or(0x10 + index * 3, |b| b + copy);
                gpus.push(Gpu {
                    index,
                    spec: spec.clone(),
                    uuid,
                    serial,
                    pci_bus,
                    lost: AtomicBool::new(false),
                    gpm_busy: AtomicBool::new(false),
                });
            }
        }
        let mut slots: Vec<Slot> = (0..gpus.len()).map(|gpu| Slot { gpu, mig: None }).collect();
        for (g, gpu) in gpus.iter().enumerate() {
            if gpu.spec.mig {
                slots.extend((0..gpu.spec.mig_devices.len()).map(|m| Slot { gpu: g, mig: Some(m) }));
            }
        }
        Self { scenario, gpus, slots: slots.into_boxed_slice(), start: Instant::now(), gpm_any: AtomicBool::new(false) }
    }

    /// Virtual seconds since the machine started.
    pub fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * self.scenario.speed
    }

    /// The handle of a slot.
    pub fn handle(&'static self, slot: usize) -> nvmlDevice_t {
        self.slots.get(slot).map_or(std::ptr::null_mut(), |s| std::ptr::from_ref(s).cast::<nvmlDevice_st>().cast_mut())
    }

    /// The slot of a MIG device of a GPU.
    pub fn mig_slot(&self, gpu: usize, mig: usize) -> Option<usize> {
        self.slots.iter().position(|s| s.gpu == gpu && s.mig == Some(mig))
    }

    fn resolve(&'static self, handle: nvmlDevice_t) -> Option<Dev> {
        let base = self.slots.as_ptr() as usize;
        let size = std::mem::size_of::<Slot>();
        let at = (handle as usize).checked_sub(base)?;
        if at % size != 0 {
            return None;
        }
        let slot = at / size;
        let s = self.slots.get(slot)?;
        let gpu = self.gpus.get(s.gpu)?;
        let mig = s.mig.and_then(|m| gpu.spec.mig_devices.get(m).map(|spec| (m, spec)));
        Some(Dev { machine: self, gpu, mig, slot })
    }
}

/// Starts (or counts another start of) NVML, building the machine the first time.
pub fn init() -> nvmlReturn_t {
    let machine = MACHINE.get_or_init(|| {
        let name = std::env::var("GPUSIGHT_FAKE_NVML").unwrap_or_else(|_| "h200".to_string());
        Scenario::load(&name).map(Machine::build)
    });
    let machine = match machine {
        Ok(m) => m,
        Err(e) => {
            eprintln!("fake NVML: {e}");
            return ret::UNKNOWN;
        }
    };
    if machine.scenario.init_sleep_ms > 0 {
        std::thread::sleep(Duration::from_millis(machine.scenario.init_sleep_ms));
    }
    if let Some(e) = machine.scenario.init_error {
        return error_code(e);
    }
    INITS.fetch_add(1, Ordering::SeqCst);
    EVER_STARTED.store(true, Ordering::SeqCst);
    ret::SUCCESS
}

/// Ends one start of NVML.
pub fn shutdown() -> nvmlReturn_t {
    let left = INITS.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    if left.is_err() {
        return ret::UNINITIALIZED;
    }
    ret::SUCCESS
}

/// The running machine, counting a call of `call`; aborts if NVML is not started (before init, or after the last
/// shutdown).
pub fn live(call: &'static str) -> &'static Machine {
    count(call);
    started(call)
}

/// The running machine for a call already counted; aborts if NVML is not started.
fn started(call: &'static str) -> &'static Machine {
    if INITS.load(Ordering::SeqCst) == 0 {
        if EVER_STARTED.load(Ordering::SeqCst) {
            violation(&format!("{call} called after nvmlShutdown"));
        }
        violation(&format!("{call} called before nvmlInit"));
    }
    match MACHINE.get() {
        Some(Ok(m)) => m,
        _ => violation(&format!("{call} called without a machine")),
    }
}

/// NVML's code for a scenario's error.
pub fn error_code(e: ErrorKind) -> nvmlReturn_t {
    match e {
        ErrorKind::NotSupported => ret::NOT_SUPPORTED,
        ErrorKind::NoPermission => ret::NO_PERMISSION,
        ErrorKind::Unknown => ret::UNKNOWN,
        ErrorKind::GpuIsLost => ret::GPU_IS_LOST,
        ErrorKind::InvalidArgument => ret::INVALID_ARGUMENT,
        ErrorKind::NotFound => ret::NOT_FOUND,
        ErrorKind::Timeout => ret::TIMEOUT,
        ErrorKind::DriverNotLoaded => ret::DRIVER_NOT_LOADED,
        ErrorKind::LibRmVersionMismatch => ret::LIB_RM_VERSION_MISMATCH,
    }
}

/// Resolves a device handle for `call` and plays the GPU's faults: a lost GPU answers GpuIsLost to everything.
pub fn device(call: &'static str, handle: nvmlDevice_t) -> Result<Dev, nvmlReturn_t> {
    count(call);
    peer(call, handle)
}

/// [`device`] for a call's second device handle (the other GPU of a pair): the same faults, but the call, counted
/// once by its first handle, is not counted again.
pub fn peer(call: &'static str, handle: nvmlDevice_t) -> Result<Dev, nvmlReturn_t> {
    let machine = started(call);
    let dev = machine.resolve(handle).ok_or(ret::INVALID_ARGUMENT)?;
    faults(call, dev.gpu, machine.now())?;
    Ok(dev)
}

/// Plays the faults of `gpu` that cover `call` at virtual time `t`.
pub fn faults(call: &str, gpu: &Gpu, t: f64) -> Result<(), nvmlReturn_t> {
    if gpu.lost.load(Ordering::SeqCst) {
        return Err(ret::GPU_IS_LOST);
    }
    play(gpu, t, |f| f.args.is_empty() && (f.call == "*" || f.call == call))
}

/// Plays the faults of `gpu` for `call` with these selector arguments (a clock, a sensor, a link, a field id):
/// those whose `args` are a prefix of `args`. Faults without `args` were played when the handle was resolved.
pub fn arg_faults(call: &str, gpu: &Gpu, t: f64, args: &[u32]) -> Result<(), nvmlReturn_t> {
    play(gpu, t, |f| !f.args.is_empty() && f.call == call && args.starts_with(&f.args))
}

fn play(gpu: &Gpu, t: f64, covers: impl Fn(&crate::scenario::FaultSpec) -> bool) -> Result<(), nvmlReturn_t> {
    for f in &gpu.spec.faults {
        if !covers(f) || t < f.from_s || f.until_s.is_some_and(|u| t >= u) {
            continue;
        }
        if f.sleep_ms > 0 {
            std::thread::sleep(Duration::from_millis(f.sleep_ms));
        }
        if let Some(e) = f.error {
            if e == ErrorKind::GpuIsLost {
                gpu.lost.store(true, Ordering::SeqCst);
            }
            return Err(error_code(e));
        }
    }
    Ok(())
}

impl Dev {
    /// The phase in force now (the idle defaults when the GPU has none).
    pub fn phase(&self) -> Phase {
        self.gpu.spec.phase_at(self.machine.now()).0.cloned().unwrap_or_default()
    }

    /// Plays the faults for `call` with these selector arguments (see [`arg_faults`]).
    pub fn arg_faults(&self, call: &str, args: &[u32]) -> Result<(), nvmlReturn_t> {
        arg_faults(call, self.gpu, self.machine.now(), args)
    }

    /// A MIG handle answers NotSupported where real NVML does (device-level readings).
    pub fn whole_gpu_only(&self) -> Result<(), nvmlReturn_t> {
        if self.mig.is_some() { Err(ret::NOT_SUPPORTED) } else { Ok(()) }
    }
}
