//! `--only GPU,...`: a source that shows only some GPUs, for every command. The live source also leaves the other
//! GPUs unopened (`NvmlOptions::only`); recordings and synthetic machines are filtered here, tick by tick, so that
//! every mode (monitor, `--once`, doctor, report, export, recording) sees the same machine.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{Source, SourceError};
use crate::sample::{MachineInfo, ProcessRole, Tick};

/// The GPUs asked for with `--only` (NVML indices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSelection {
    indices: Vec<u32>,
}

impl GpuSelection {
    /// The selection for `--only`; `None` when it is empty (every GPU).
    #[must_use]
    pub fn new(only: &[u32]) -> Option<Self> {
        let mut indices = only.to_vec();
        indices.sort_unstable();
        indices.dedup();
        (!indices.is_empty()).then_some(Self { indices })
    }

    /// The selected NVML indices, sorted.
    #[must_use]
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// Whether this GPU is selected.
    #[must_use]
    pub fn contains(&self, index: u32) -> bool {
        self.indices.binary_search(&index).is_ok()
    }

    /// Checks that every selected GPU exists on `machine`.
    ///
    /// # Errors
    /// The missing GPUs and the ones the machine has, in one line.
    pub fn check(&self, machine: &MachineInfo) -> Result<(), SourceError> {
        let have: Vec<String> = machine.gpus.iter().map(|g| g.index.to_string()).collect();
        let Some(missing) = self.indices.iter().find(|i| !machine.gpus.iter().any(|g| g.index == **i)) else {
            return Ok(());
        };
        Err(SourceError::Usage(if have.is_empty() {
            format!("--only {missing}: this machine has no GPUs")
        } else {
            format!("--only {missing}: there is no GPU {missing}; the GPUs are {}", have.join(", "))
        }))
    }

    /// The machine with only the selected GPUs.
    #[must_use]
    pub fn machine(&self, machine: &MachineInfo) -> MachineInfo {
        let mut out = machine.clone();
        out.gpus.retain(|g| self.contains(g.index));
        out
    }

    /// Keeps the selected GPUs' readings, processes and events, and the host processes related to those
    /// processes (their launchers and DataLoader workers). Machine-wide events (no GPU known) stay.
    pub fn tick(&self, tick: &mut Tick) {
        tick.gpus.retain(|g| self.contains(g.index));
        tick.gpu_processes.retain(|p| self.contains(p.gpu_index));
        tick.events.retain(|e| e.gpu_index.is_none_or(|i| self.contains(i)));
        let kept: HashSet<u32> = tick.gpu_processes.iter().filter_map(|p| p.pid).collect();
        let parent: HashMap<u32, u32> = tick.processes.iter().filter_map(|p| Some((p.pid, p.ppid?))).collect();
        // Walks up from `pid` (not included) and says whether a kept GPU process is found; bounded against cycles.
        let ancestors = |pid: u32| {
            let mut out = Vec::new();
            let mut at = pid;
            while let Some(&up) = parent.get(&at) {
                if out.len() >= parent.len() || out.contains(&up) {
                    break;
                }
                out.push(up);
                at = up;
            }
            out
        };
        let launchers: HashSet<u32> = kept.iter().flat_map(|&pid| ancestors(pid)).collect();
        tick.processes.retain(|p| match p.role {
            ProcessRole::Gpu => kept.contains(&p.pid),
            ProcessRole::Parent => launchers.contains(&p.pid),
            ProcessRole::Child => ancestors(p.pid).iter().any(|a| kept.contains(a)),
        });
    }
}

impl GpuSelection {
    /// Keeps only the selected GPUs in a whole recording.
    ///
    /// # Errors
    /// A selected GPU that the recorded machine does not have.
    pub fn recording(&self, recording: &mut super::replay::Recording) -> Result<(), SourceError> {
        self.check(&recording.machine)?;
        recording.machine = Arc::new(self.machine(&recording.machine));
        for tick in &mut recording.ticks {
            self.tick(tick);
        }
        Ok(())
    }
}

/// A source that passes on only the selected GPUs.
#[derive(Debug)]
pub struct Selected<S> {
    inner: S,
    selection: GpuSelection,
    machine: Arc<MachineInfo>,
}

impl<S: Source> Selected<S> {
    /// Wraps `inner`.
    ///
    /// # Errors
    /// A selected GPU that the machine does not have.
    pub fn new(inner: S, selection: GpuSelection) -> Result<Self, SourceError> {
        let machine = inner.machine();
        selection.check(&machine)?;
        let machine = Arc::new(selection.machine(&machine));
        Ok(Self { inner, selection, machine })
    }
}

impl<S: Source> Source for Selected<S> {
    fn machine(&self) -> Arc<MachineInfo> {
        Arc::clone(&self.machine)
    }

    fn next_tick(&mut self) -> Result<Option<Tick>, SourceError> {
        let mut tick = self.inner.next_tick()?;
        if let Some(tick) = &mut tick {
            self.selection.tick(tick);
        }
        Ok(tick)
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn machine(&self) -> Arc<MachineInfo> {
        (**self).machine()
    }

    fn next_tick(&mut self) -> Result<Option<Tick>, SourceError> {
        (**self).next_tick()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    fn source(spec: &str) -> SyntheticSource {
        SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"))
    }

    #[test]
    fn empty_means_every_gpu() {
        assert_eq!(GpuSelection::new(&[]), None);
        assert!(GpuSelection::new(&[1, 1, 0]).is_some_and(|s| s.contains(0) && s.contains(1) && !s.contains(2)));
    }

    #[test]
    fn only_the_selected_gpus_and_their_processes_pass() {
        let selection = GpuSelection::new(&[1]).expect("one");
        let mut only = Selected::new(source("mixed:4"), selection).expect("GPU 1 exists");
        assert_eq!(only.machine().gpus.iter().map(|g| g.index).collect::<Vec<_>>(), vec![1]);
        for _ in 0..5 {
            let tick = only.next_tick().expect("tick").expect("some");
            assert!(tick.gpus.iter().all(|g| g.index == 1) && tick.gpus.len() == 1);
            assert!(tick.gpu_processes.iter().all(|p| p.gpu_index == 1));
            let gpu_pids: HashSet<u32> = tick.gpu_processes.iter().filter_map(|p| p.pid).collect();
            for p in tick.processes.iter().filter(|p| p.role == ProcessRole::Gpu) {
                assert!(gpu_pids.contains(&p.pid), "host process {} belongs to another GPU", p.pid);
            }
        }
    }

    #[test]
    fn children_and_launchers_of_kept_processes_stay() {
        let mut full = source("loader:2");
        let tick = full.next_tick().expect("tick").expect("some");
        let children = tick.processes.iter().filter(|p| p.role == ProcessRole::Child).count();
        assert!(children > 0, "the loader scenario has DataLoader workers");
        let gpu0 = GpuSelection::new(&[0]).expect("one");
        let mut kept = tick;
        gpu0.tick(&mut kept);
        // Every child left has a kept GPU process above it; every GPU process left is on GPU 0.
        let kept_pids: HashSet<u32> = kept.gpu_processes.iter().filter_map(|p| p.pid).collect();
        assert!(kept.gpu_processes.iter().all(|p| p.gpu_index == 0));
        for child in kept.processes.iter().filter(|p| p.role == ProcessRole::Child) {
            assert!(child.ppid.is_some_and(|pp| kept_pids.contains(&pp)), "orphaned child {}", child.pid);
        }
    }

    #[test]
    fn a_missing_gpu_is_named_with_the_ones_there_are() {
        let err = Selected::new(source("compute:2"), GpuSelection::new(&[1, 7]).expect("two")).expect_err("no GPU 7");
        let text = err.to_string();
        assert!(text.contains("there is no GPU 7") && text.contains("the GPUs are 0, 1"), "{text}");
    }
}
