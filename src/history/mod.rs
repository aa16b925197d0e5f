//! What happened over time: fixed-capacity rings, struct-of-arrays, one time column for the machine and one per
//! process. A missing reading is pushed as `None` (a gap), never as 0, so graphs show gaps and rules do not see
//! fake idle periods.
//!
//! Memory is bounded: every ring has a fixed capacity, processes that have not been seen for a whole history
//! span are dropped, and the event list is capped.
//!
//! The parts: [`ring`] (the fixed-capacity ring), [`window`] (windows over a time column, statistics),
//! [`series`] (the machine's series per GPU and for the host, declared once each), [`process`] (each process's
//! series, its bound and its row per tick), [`input`] (a process's input path as one record per sample), [`slices`]
//! (each MIG slice's SM activity and memory, for the rules that judge a slice's work), [`compact`] (an optional
//! reading in the bytes of the reading, which a process's series hold). This
//! module holds the [`History`] that pushes a tick into all of them.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::fast_map::FastMap;
use crate::sample::{GpuEvent, MachineInfo, Snapshot, Tick, UnixMs};

pub mod compact;
pub mod input;
pub mod process;
pub mod ring;
pub mod series;
pub mod slices;
pub mod window;

pub use compact::{Compact, Niche, Readings};
pub use input::InputSample;
pub use process::{Level, ProcessBound, ProcessKey, ProcessRow, ProcessSeries};
pub use ring::{Ring, Series};
pub use series::{GpuRow, GpuSeries, HostRow, HostSeries};
pub use slices::{SliceRow, SliceSeries};
pub use window::{Stats, Window, window_of};

/// Everything the pipeline remembers: the machine, the latest tick, the rings and recent events.
#[derive(Debug, Clone)]
pub struct History {
    machine: Arc<MachineInfo>,
    capacity: usize,
    process_bound: ProcessBound,
    pub times: Ring<UnixMs>,
    pub gpus: Vec<GpuSeries>,
    pub host: HostSeries,
    /// Each MIG slice's series (empty without MIG), aligned with `times`.
    pub slices: Vec<SliceSeries>,
    pub processes: FastMap<ProcessKey, ProcessSeries>,
    /// Events, oldest first, at most [`History::MAX_EVENTS`].
    pub events: VecDeque<GpuEvent>,
    latest: Tick,
    n_ticks: u64,
    /// Lookup lists rebuilt every tick, kept to reuse their buffers.
    scratch: Scratch,
}

/// The per-tick lookup lists of [`History::push_processes`]: (key, index into the tick) pairs.
#[derive(Debug, Clone, Default)]
struct Scratch {
    gpu_entries: Vec<(u32, usize)>,
    by_pid: Vec<(u32, usize)>,
    by_ppid: Vec<(u32, usize)>,
}

impl History {
    /// The most events kept.
    pub const MAX_EVENTS: usize = 256;

    /// An empty history for `machine` that keeps `capacity` samples, and per process the default
    /// [`ProcessBound`] (five minutes at one sample a second).
    #[must_use]
    pub fn new(machine: Arc<MachineInfo>, capacity: usize) -> Self {
        Self::with_process_bound(machine, capacity, ProcessBound::default())
    }

    /// An empty history for `machine` that keeps `capacity` samples, and per process what `process_bound` says.
    #[must_use]
    pub fn with_process_bound(machine: Arc<MachineInfo>, capacity: usize, process_bound: ProcessBound) -> Self {
        let gpus = machine.gpus.iter().map(|g| GpuSeries::new(g.index, capacity)).collect();
        Self {
            machine,
            capacity: capacity.max(1),
            process_bound,
            times: Ring::new(capacity),
            gpus,
            host: HostSeries::new(capacity),
            slices: Vec::new(),
            processes: FastMap::default(),
            events: VecDeque::new(),
            latest: Tick::default(),
            n_ticks: 0,
            scratch: Scratch::default(),
        }
    }

    /// The machine this history is about.
    #[must_use]
    pub fn machine(&self) -> &Arc<MachineInfo> {
        &self.machine
    }

    /// The newest tick (empty before the first push).
    #[must_use]
    pub fn latest(&self) -> &Tick {
        &self.latest
    }

    /// How many ticks were pushed since the start (not bounded by the capacity).
    #[must_use]
    pub fn n_ticks(&self) -> u64 {
        self.n_ticks
    }

    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// What each process keeps of its past.
    #[must_use]
    pub fn process_bound(&self) -> ProcessBound {
        self.process_bound
    }

    /// Time of the newest sample.
    #[must_use]
    pub fn now_ms(&self) -> Option<UnixMs> {
        self.times.last().copied()
    }

    /// The window of the last `span_ms` of the machine's time column.
    #[must_use]
    pub fn window(&self, span_ms: u64) -> Option<Window> {
        window_of(&self.times, span_ms)
    }

    /// Series of the GPU with this NVML index.
    #[must_use]
    pub fn gpu(&self, index: u32) -> Option<&GpuSeries> {
        crate::sample::by_index(&self.gpus, index, |g| g.index)
    }

    /// The series of the MIG slice a GPU process runs on, on a GPU in MIG mode.
    #[must_use]
    pub fn slice_of(&self, p: &crate::sample::GpuProcess) -> Option<&SliceSeries> {
        self.slices.iter().find(|s| s.holds(p))
    }

    /// The newest series of the process with this PID (the live one if the PID was reused).
    #[must_use]
    pub fn process(&self, pid: u32) -> Option<&ProcessSeries> {
        self.processes.values().filter(|p| p.key.pid == pid).max_by_key(|p| p.last_seen_ms())
    }

    /// Bytes the rings and the event list hold on the heap (the newest tick and the maps' own tables left out): the
    /// figure the per-process bound keeps flat, reported by `tools/history_mem.rs`.
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        let gpus: usize = self.gpus.iter().map(GpuSeries::heap_bytes).sum();
        let processes: usize = self.processes.values().map(ProcessSeries::heap_bytes).sum();
        self.times.heap_bytes()
            + gpus
            + slices::heap_bytes(&self.slices)
            + self.host.heap_bytes()
            + processes
            + self.events.capacity() * std::mem::size_of::<GpuEvent>()
    }

    /// Bytes the per-process rings hold on the heap.
    #[must_use]
    pub fn process_heap_bytes(&self) -> usize {
        self.processes.values().map(ProcessSeries::heap_bytes).sum()
    }

    /// Takes in a snapshot. If the machine changed (another recording, GPUs added), history starts over.
    pub fn push(&mut self, snapshot: &Snapshot) {
        self.restart_if_other_machine(&snapshot.machine);
        self.push_tick(snapshot.tick.clone());
    }

    /// [`History::push`] for a snapshot the caller no longer needs: the tick is kept without a copy (at 8 GPUs ×
    /// 1,000 processes the copy is thousands of allocations per tick).
    pub fn push_owned(&mut self, snapshot: Snapshot) {
        self.restart_if_other_machine(&snapshot.machine);
        self.push_tick(snapshot.tick);
    }

    fn restart_if_other_machine(&mut self, machine: &Arc<MachineInfo>) {
        if !Arc::ptr_eq(&self.machine, machine) && *self.machine != **machine {
            *self = Self::with_process_bound(Arc::clone(machine), self.capacity, self.process_bound);
        }
    }

    /// Takes in a tick of this history's machine.
    ///
    /// A clock that steps back (an NTP step while recording, recordings spliced together) does not make time run
    /// backwards here: every window, binary search and "for how long" assumes times that never decrease, so such
    /// a tick is placed at the newest time already held, and later ticks count on from there.
    pub fn push_tick(&mut self, mut tick: Tick) {
        if let Some(&newest) = self.times.last()
            && tick.at_ms < newest
        {
            tick.at_ms = newest;
        }
        let at_ms = tick.at_ms;
        let tick_gap_ms = self.times.last().map_or(0, |newest| at_ms - newest);
        self.times.push(at_ms);
        for series in &mut self.gpus {
            series.push(tick.gpu(series.index), self.latest.gpu(series.index));
        }
        self.host.push(&tick);
        slices::push(&mut self.slices, &tick, self.times.len() - 1, self.capacity);
        self.push_processes(&tick, tick_gap_ms);
        for event in &tick.events {
            if self.events.len() == Self::MAX_EVENTS {
                self.events.pop_front();
            }
            self.events.push_back(event.clone());
        }
        self.forget_old_processes(at_ms);
        self.latest = tick;
        self.n_ticks += 1;
    }
}

/// Ticks for the tests of every part.
#[cfg(test)]
mod test_ticks {
    use std::sync::Arc;

    use crate::sample::{GpuInfo, GpuProcess, GpuTick, MachineInfo, Tick, UnixMs};

    pub(super) fn machine(n_gpus: u32) -> Arc<MachineInfo> {
        Arc::new(MachineInfo {
            gpus: (0..n_gpus).map(|index| GpuInfo { index, ..GpuInfo::default() }).collect(),
            ..MachineInfo::default()
        })
    }

    pub(super) fn tick(at_ms: UnixMs, util: Option<u32>) -> Tick {
        Tick { at_ms, gpus: vec![GpuTick { index: 0, util_pct: util, ..GpuTick::default() }], ..Tick::default() }
    }

    /// A tick at `at_ms` with process 42 on GPU 0.
    pub(super) fn with_process(at_ms: UnixMs) -> Tick {
        Tick {
            at_ms,
            gpu_processes: vec![GpuProcess { pid: Some(42), used_gpu_memory_bytes: Some(1), ..GpuProcess::default() }],
            ..tick(at_ms, Some(50))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_ticks::{machine, tick};
    use super::*;

    #[test]
    fn a_missing_reading_is_a_gap_not_a_zero() {
        let mut history = History::new(machine(1), 10);
        history.push_tick(tick(1000, Some(90)));
        history.push_tick(tick(2000, None));
        // A tick without the GPU at all is also a gap.
        history.push_tick(Tick { at_ms: 3000, ..Tick::default() });
        let util: Vec<_> = history.gpus[0].util_pct.readings().collect();
        assert_eq!(util, vec![Some(90), None, None]);
        let stats = Stats::of(util).expect("one value present");
        assert_eq!((stats.n_present, stats.n_total), (1, 3));
        assert!((stats.mean - 90.0).abs() < f64::EPSILON);
    }

    #[test]
    fn an_owned_push_equals_a_borrowed_one() {
        let snapshot = Snapshot { machine: machine(1), tick: tick(1000, Some(5)) };
        let (mut a, mut b) = (History::new(machine(1), 10), History::new(machine(1), 10));
        a.push(&snapshot);
        b.push_owned(snapshot);
        assert_eq!((a.latest(), &a.gpus, &a.times), (b.latest(), &b.gpus, &b.times));
    }

    #[test]
    fn a_new_machine_starts_history_over() {
        let mut history = History::new(machine(1), 10);
        history.push_tick(tick(1000, Some(1)));
        let other = Snapshot { machine: machine(2), tick: tick(2000, Some(2)) };
        history.push(&other);
        assert_eq!(history.gpus.len(), 2);
        assert_eq!(history.times.len(), 1);
    }
}
