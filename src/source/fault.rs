//! A fault-injecting source for tests: it wraps a [`SyntheticSource`] and turns its ticks into what the live
//! source hands out when things go wrong (NVML failing to start, a GPU lost mid-run, fields not supported, a call
//! that hangs, garbage process entries, processes vanishing, `/proc` denied), so every layer after the source can
//! be checked against those faults without a GPU.
//!
//! The transformations reuse the NVML layer's own pieces where they exist (the init message, the per-field memo
//! that writes the "GPU lost" note, the process-list sanity check), so the faults look as the live source makes
//! them look. Nothing here reads the clock except [`Fault::Hang`], which sleeps for its given duration.

use std::sync::Arc;
use std::time::Duration;

use nvml_wrapper::error::NvmlError;

use super::nvml::errors::FieldMemo;
use super::nvml::open_error_message;
use super::nvml::procs::{RawProcess, merge_processes};
use super::synthetic::SyntheticSource;
use super::{Source, SourceError};
use crate::sample::{GpuState, GpuTick, HostProcess, MachineInfo, Tick};

/// How NVML can fail to start, one per message the user can get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitFault {
    /// `libnvidia-ml.so.1` is not installed.
    LibraryMissing,
    /// The library is there but the kernel module is not loaded.
    DriverNotLoaded,
    /// The driver was upgraded and the old kernel module is still loaded.
    VersionMismatch,
    /// The device nodes are not accessible to this user (or container).
    NoPermission,
}

impl InitFault {
    /// Every init fault, for tests that go through them all.
    pub const ALL: [InitFault; 4] =
        [Self::LibraryMissing, Self::DriverNotLoaded, Self::VersionMismatch, Self::NoPermission];

    /// The NVML error the live source gets for this fault.
    #[must_use]
    pub fn nvml_error(self) -> NvmlError {
        match self {
            Self::LibraryMissing => NvmlError::LibraryNotFound,
            Self::DriverNotLoaded => NvmlError::DriverNotLoaded,
            Self::VersionMismatch => NvmlError::LibRmVersionMismatch,
            Self::NoPermission => NvmlError::NoPermission,
        }
    }

    /// The error opening the live source gives, with the message the user reads.
    #[must_use]
    pub fn source_error(self) -> SourceError {
        SourceError::NoDriver(open_error_message(&self.nvml_error()))
    }
}

/// One fault injected into the ticks of a wrapped synthetic source. Tick numbers count from 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// NVML reports GPU `gpu` lost (`GpuLost`) from tick `from_tick` on: its state is `Lost`, every reading
    /// `None`, its processes no longer listed, and the health notes say so once.
    GpuLost { gpu: u32, from_tick: u64 },
    /// Every per-GPU field of GPU `gpu` answers `NotSupported`: the tick keeps only the index and state.
    AllNotSupported { gpu: u32 },
    /// GPU `gpu`'s reader misses its deadline from tick `from_tick` on, as a hung call looks to the live source.
    NotAnswering { gpu: u32, from_tick: u64 },
    /// Reading tick `at_tick` blocks for `duration` before it returns, as a hung NVML call blocks the sampler.
    Hang { at_tick: u64, duration: Duration },
    /// GPU `gpu`'s process list holds the process-info ABI garbage (PID 0, a PID above `pid_max`, memory above
    /// the GPU's total) next to its real entries; they pass through the NVML layer's sanity check.
    GarbageProcesses { gpu: u32 },
    /// The processes of GPU `gpu` exit between the NVML list and the `/proc` reads: listed, but "exited".
    ProcessesVanish { gpu: u32 },
    /// Every `/proc/PID/*` read is denied (hidepid, another user's process under a hardened kernel).
    ProcDenied,
}

/// The PID limit the garbage entries are checked against (the kernel's default `pid_max` on 64-bit hosts).
pub const PID_MAX: u32 = 4_194_304;

/// A [`Source`] that injects [`Fault`]s into a synthetic machine's ticks.
#[derive(Debug)]
pub struct FaultSource {
    inner: SyntheticSource,
    faults: Vec<Fault>,
    n_ticks: u64,
    /// One memo per GPU, as the live reader keeps, so a lost GPU's note is written once.
    memos: Vec<FieldMemo<&'static str>>,
}

impl FaultSource {
    /// Wraps `inner` and injects `faults` into its ticks.
    #[must_use]
    pub fn new(inner: SyntheticSource, faults: Vec<Fault>) -> Self {
        let memos = inner.machine().gpus.iter().map(|g| FieldMemo::new(g.index)).collect();
        Self { inner, faults, n_ticks: 0, memos }
    }

    /// What opening the live source gives when NVML fails to start this way: always an error.
    ///
    /// # Errors
    /// Always: the [`SourceError::NoDriver`] the live source returns for `fault`.
    pub fn open_failing(fault: InitFault) -> Result<Self, SourceError> {
        Err(fault.source_error())
    }

    /// The tick at index `n` with the faults applied, without advancing the source and without sleeping.
    #[must_use]
    pub fn faulty_tick_at(&mut self, n: u64) -> Tick {
        let mut tick = self.inner.tick_at(n);
        let machine = self.inner.machine();
        for fault in self.faults.clone() {
            self.apply(&fault, n, &machine, &mut tick);
        }
        tick
    }

    fn apply(&mut self, fault: &Fault, n: u64, machine: &MachineInfo, tick: &mut Tick) {
        match *fault {
            Fault::GpuLost { gpu, from_tick } if n >= from_tick => {
                let slot = machine.gpus.iter().position(|g| g.index == gpu);
                if let Some(memo) = slot.and_then(|i| self.memos.get_mut(i)) {
                    // The first call after the loss records it; later ticks are not asked (the memo says lost).
                    let _ = memo.call("utilization", || Err::<u32, _>(NvmlError::GpuLost));
                    tick.health.notes.extend(memo.take_notes());
                }
                replace_gpu(tick, gpu, GpuState::Lost);
                drop_processes_of(tick, gpu);
            }
            Fault::NotAnswering { gpu, from_tick } if n >= from_tick => {
                replace_gpu(tick, gpu, GpuState::NotAnswering);
                drop_processes_of(tick, gpu);
            }
            Fault::AllNotSupported { gpu } => replace_gpu(tick, gpu, GpuState::Ok),
            Fault::GarbageProcesses { gpu } => {
                let mem_total = machine.gpus.iter().find(|g| g.index == gpu).and_then(|g| g.mem_total_bytes);
                let mut raw: Vec<RawProcess> = tick
                    .gpu_processes
                    .iter()
                    .filter(|p| p.gpu_index == gpu)
                    .filter_map(|p| Some(RawProcess { pid: p.pid?, used_bytes: p.used_gpu_memory_bytes, mig: None }))
                    .collect();
                raw.extend([
                    RawProcess { pid: 0, used_bytes: Some(1 << 30), mig: None },
                    RawProcess { pid: u32::MAX, used_bytes: Some(1 << 30), mig: None },
                    RawProcess { pid: 4242, used_bytes: Some(u64::MAX), mig: None },
                ]);
                let merged = merge_processes(gpu, &raw, &[], PID_MAX, mem_total);
                // The sane entries keep their utilization from the synthetic tick.
                let old: Vec<_> = tick.gpu_processes.iter().filter(|p| p.gpu_index == gpu).cloned().collect();
                tick.gpu_processes.retain(|p| p.gpu_index != gpu);
                tick.gpu_processes.extend(merged.into_iter().map(|mut p| {
                    if let Some(same) = old.iter().find(|o| p.pid.is_some() && o.pid == p.pid) {
                        p.sm_util_pct = same.sm_util_pct;
                        p.mem_util_pct = same.mem_util_pct;
                    }
                    p
                }));
            }
            Fault::ProcessesVanish { gpu } => {
                let pids: Vec<u32> =
                    tick.gpu_processes.iter().filter(|p| p.gpu_index == gpu).filter_map(|p| p.pid).collect();
                for host in tick.processes.iter_mut().filter(|h| pids.contains(&h.pid)) {
                    *host = unreadable(host.pid, "exited");
                }
            }
            Fault::ProcDenied => {
                for host in &mut tick.processes {
                    *host = unreadable(host.pid, "permission denied");
                }
            }
            Fault::GpuLost { .. } | Fault::NotAnswering { .. } | Fault::Hang { .. } => {}
        }
    }
}

/// A process whose details could not be read: only its PID and the reason, as the host sampler reports it.
fn unreadable(pid: u32, why: &str) -> HostProcess {
    HostProcess { pid, unreadable: Some(why.to_owned()), ..HostProcess::default() }
}

fn replace_gpu(tick: &mut Tick, gpu: u32, state: GpuState) {
    if let Some(slot) = tick.gpus.iter_mut().find(|g| g.index == gpu) {
        *slot = GpuTick { index: gpu, state, ..GpuTick::default() };
    }
}

fn drop_processes_of(tick: &mut Tick, gpu: u32) {
    let pids: Vec<u32> = tick.gpu_processes.iter().filter(|p| p.gpu_index == gpu).filter_map(|p| p.pid).collect();
    tick.gpu_processes.retain(|p| p.gpu_index != gpu);
    let still_listed = |pid: u32| tick.gpu_processes.iter().any(|p| p.pid == Some(pid));
    let gone: Vec<u32> = pids.into_iter().filter(|pid| !still_listed(*pid)).collect();
    tick.processes.retain(|h| !gone.contains(&h.pid) && !h.ppid.is_some_and(|pp| gone.contains(&pp)));
}

impl Source for FaultSource {
    fn machine(&self) -> Arc<MachineInfo> {
        self.inner.machine()
    }

    fn next_tick(&mut self) -> Result<Option<Tick>, SourceError> {
        let n = self.n_ticks;
        self.n_ticks += 1;
        let hang = self.faults.iter().find_map(|f| match f {
            Fault::Hang { at_tick, duration } if *at_tick == n => Some(*duration),
            _ => None,
        });
        if let Some(duration) = hang {
            std::thread::sleep(duration);
        }
        Ok(Some(self.faulty_tick_at(n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::synthetic::SyntheticSpec;

    fn source(spec: &str, faults: Vec<Fault>) -> FaultSource {
        FaultSource::new(SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec")), faults)
    }

    #[test]
    fn a_lost_gpu_is_lost_from_its_tick_with_one_note() {
        let mut s = source("compute:2", vec![Fault::GpuLost { gpu: 1, from_tick: 3 }]);
        let before = s.faulty_tick_at(2);
        assert_eq!(before.gpus[1].state, GpuState::Ok);
        let at = s.faulty_tick_at(3);
        assert_eq!(at.gpus[1], GpuTick { index: 1, state: GpuState::Lost, ..GpuTick::default() });
        assert!(at.gpu_processes.iter().all(|p| p.gpu_index == 0));
        assert!(at.health.notes.iter().any(|n| n.contains("GPU 1") && n.contains("lost")), "{:?}", at.health);
        assert!(s.faulty_tick_at(4).health.notes.is_empty(), "the note is written once");
        assert!(at.gpus[0].util_pct.is_some());
    }

    #[test]
    fn garbage_entries_pass_the_sanity_check_as_none() {
        let mut s = source("compute", vec![Fault::GarbageProcesses { gpu: 0 }]);
        let tick = s.faulty_tick_at(0);
        let nones: Vec<_> = tick.gpu_processes.iter().filter(|p| p.pid.is_none()).collect();
        assert_eq!(nones.len(), 3);
        assert!(nones.iter().all(|p| p.used_gpu_memory_bytes.is_none()));
        assert!(tick.gpu_processes.iter().any(|p| p.pid.is_some()));
    }

    #[test]
    fn vanished_and_denied_processes_are_unreadable() {
        let mut s = source("loader", vec![Fault::ProcessesVanish { gpu: 0 }]);
        let tick = s.faulty_tick_at(0);
        let pid = tick.gpu_processes[0].pid.expect("pid");
        assert_eq!(tick.process(pid).and_then(|h| h.unreadable.as_deref()), Some("exited"));
        let mut s = source("loader", vec![Fault::ProcDenied]);
        let tick = s.faulty_tick_at(0);
        assert!(!tick.processes.is_empty());
        assert!(tick.processes.iter().all(|h| h.unreadable.as_deref() == Some("permission denied")
            && h.cpu_pct.is_none()
            && h.read_bytes_per_s.is_none()));
    }

    #[test]
    fn init_faults_are_errors_with_their_message() {
        for fault in InitFault::ALL {
            let Err(SourceError::NoDriver(message)) = FaultSource::open_failing(fault) else {
                panic!("{fault:?} must fail as NoDriver");
            };
            assert!(message.contains("--demo") && !message.contains('\n'), "{message}");
        }
    }
}
