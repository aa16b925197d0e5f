//! What happened over time: fixed-capacity rings, struct-of-arrays, one time column for the machine and one per
//! process. A missing reading is pushed as `None` (a gap), never as 0, so graphs show gaps and rules do not see
//! fake idle periods.
//!
//! Memory is bounded: every ring has a fixed capacity, processes that have not been seen for a whole history
//! span are dropped, and the event list is capped.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::sample::{GpuEvent, GpuTick, HostProcess, MachineInfo, Snapshot, Tick, UnixMs};

pub mod input;
pub use input::InputSample;

/// A fixed-capacity ring: pushing past the capacity drops the oldest value. Index 0 is the oldest.
#[derive(Debug, Clone, PartialEq)]
pub struct Ring<T> {
    values: VecDeque<T>,
    capacity: usize,
}

impl<T> Ring<T> {
    /// An empty ring that holds at most `capacity` values (at least one).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self { values: VecDeque::new(), capacity }
    }

    /// Appends a value, dropping the oldest when full. The buffer grows by doubling up to the capacity and never
    /// past it (a `VecDeque` left to itself would round 9,000 slots up to 16,384).
    pub fn push(&mut self, value: T) {
        let len = self.values.len();
        if len == self.capacity {
            self.values.pop_front();
        } else if len == self.values.capacity() {
            let want = (len * 2).max(4).min(self.capacity);
            self.values.reserve_exact(want - len);
        }
        self.values.push_back(value);
    }

    /// Removes and returns the oldest value.
    pub fn pop_front(&mut self) -> Option<T> {
        self.values.pop_front()
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The newest value.
    #[must_use]
    pub fn last(&self) -> Option<&T> {
        self.values.back()
    }

    /// The value at `index` (0 is the oldest).
    #[must_use]
    pub fn get(&self, index: usize) -> Option<&T> {
        self.values.get(index)
    }

    /// Oldest to newest.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator + '_ {
        self.values.iter()
    }

    /// Bytes this ring holds on the heap (its allocated slots, full or not).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<T>()
    }

    /// The values from `start` (an index, 0 = oldest) to the newest.
    pub fn iter_from(&self, start: usize) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.values.range(start.min(self.values.len())..)
    }
}

/// A ring of optional readings: `None` is a gap.
pub type Series<T> = Ring<Option<T>>;

/// The time column and the index range of a window ending at the newest sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Index of the first sample in the window.
    pub start: usize,
    /// Number of samples in the window.
    pub len: usize,
    /// Time of the first and the newest sample in the window.
    pub first_ms: UnixMs,
    pub last_ms: UnixMs,
}

impl Window {
    /// How much time the window's samples span.
    #[must_use]
    pub fn span_ms(&self) -> u64 {
        self.last_ms.saturating_sub(self.first_ms)
    }
}

/// The window of the last `span_ms` milliseconds in a time column, ending at its newest sample.
#[must_use]
pub fn window_of(times: &Ring<UnixMs>, span_ms: u64) -> Option<Window> {
    let last_ms = *times.last()?;
    let from_ms = last_ms.saturating_sub(span_ms);
    // Times are non-decreasing, so a binary search finds the first sample inside the window.
    let (mut lo, mut hi) = (0, times.len());
    while lo < hi {
        let mid = usize::midpoint(lo, hi);
        if times.get(mid).is_some_and(|t| *t < from_ms) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let first_ms = *times.get(lo)?;
    Some(Window { start: lo, len: times.len() - lo, first_ms, last_ms })
}

/// Declares a set of aligned series once, and from that one list the struct of rings, the row of one sample of
/// each (a struct literal, so leaving a series out of a push does not compile), and everything that walks them
/// all: construction, pushing a row, dropping the oldest sample, the visitor and the heap bytes.
///
/// The fields before `series` are the set's keys (given to `new`); each field after it is one ring, declared with
/// the type of one sample.
macro_rules! series_set {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$key_meta:meta])* pub $key:ident: $key_ty:ty,)*
        }
        series $row:ident {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $($(#[$key_meta])* pub $key: $key_ty,)*
            $($(#[$field_meta])* pub $field: Ring<$ty>,)+
        }

        #[doc = concat!("One sample of every series of [`", stringify!($name), "`], pushed together.")]
        #[derive(Debug, Clone, PartialEq)]
        pub struct $row {
            $($(#[$field_meta])* pub $field: $ty,)+
        }

        impl $name {
            /// How many series the set holds.
            pub const N_SERIES: usize = [$(stringify!($field)),+].len();

            /// Empty series that keep at most `capacity` samples each.
            pub(crate) fn new($($key: $key_ty,)* capacity: usize) -> Self {
                Self { $($key,)* $($field: Ring::new(capacity),)+ }
            }

            /// Appends one sample to every series.
            pub fn push_row(&mut self, row: $row) {
                $(self.$field.push(row.$field);)+
            }

            /// Drops the oldest sample of every series (they stay aligned).
            pub fn pop_front(&mut self) {
                $(self.$field.pop_front();)+
            }

            /// Calls `visit` with the name, length and heap bytes of every series, in declaration order.
            pub fn for_each_series(&self, mut visit: impl FnMut(&'static str, usize, usize)) {
                $(visit(stringify!($field), self.$field.len(), self.$field.heap_bytes());)+
            }

            /// Bytes the series hold on the heap.
            fn heap_bytes(&self) -> usize {
                0 $(+ self.$field.heap_bytes())+
            }
        }
    };
}

series_set! {
    /// Per-GPU series, aligned with [`History::times`].
    pub struct GpuSeries {
        pub index: u32,
    }
    series GpuRow {
        pub lost: bool,
        pub util_pct: Option<u32>,
        pub mem_util_pct: Option<u32>,
        pub mem_used_bytes: Option<u64>,
        pub power_mw: Option<u32>,
        pub power_limit_mw: Option<u32>,
        pub temp_c: Option<u32>,
        pub sm_clock_mhz: Option<u32>,
        pub mem_clock_mhz: Option<u32>,
        pub throttle_bits: Option<u64>,
        pub pcie_gen: Option<u32>,
        pub pcie_width: Option<u32>,
        pub pcie_rx_kbps: Option<u32>,
        pub pcie_tx_kbps: Option<u32>,
        pub sm_active_pct: Option<f32>,
        pub sm_occupancy_pct: Option<f32>,
        pub tensor_active_pct: Option<f32>,
        pub dram_active_pct: Option<f32>,
        /// The driver's cumulative nanoseconds of HW thermal slowdown plus HW power brake.
        pub hw_slowdown_ns: Option<u64>,
        /// The driver's cumulative nanoseconds of SW plus HW thermal slowdown.
        pub thermal_ns: Option<u64>,
        /// Volatile corrected (single-bit) ECC errors since the driver loaded.
        pub ecc_corrected: Option<u64>,
        /// HBM temperature, °C.
        pub mem_temp_c: Option<u32>,
        /// NVLink RX and TX over all links, MiB/s (GPM).
        pub nvlink_rx_mib_s: Option<u32>,
        pub nvlink_tx_mib_s: Option<u32>,
    }
}

impl GpuSeries {
    /// Appends this GPU's readings in a tick; `None` (the GPU absent from the tick) is a gap in every series.
    pub(crate) fn push(&mut self, gpu: Option<&GpuTick>) {
        let gpm = gpu.and_then(|g| g.gpm);
        let ns = gpu.and_then(|g| g.throttle_ns);
        let sum = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a.saturating_add(b));
        self.push_row(GpuRow {
            lost: gpu.is_some_and(|g| g.state == crate::sample::GpuState::Lost),
            util_pct: gpu.and_then(|g| g.util_pct),
            mem_util_pct: gpu.and_then(|g| g.mem_util_pct),
            mem_used_bytes: gpu.and_then(|g| g.mem_used_bytes),
            power_mw: gpu.and_then(|g| g.power_mw),
            power_limit_mw: gpu.and_then(|g| g.power_limit_mw),
            temp_c: gpu.and_then(|g| g.temp_c),
            sm_clock_mhz: gpu.and_then(|g| g.sm_clock_mhz),
            mem_clock_mhz: gpu.and_then(|g| g.mem_clock_mhz),
            throttle_bits: gpu.and_then(|g| g.throttle_bits),
            pcie_gen: gpu.and_then(|g| g.pcie_gen),
            pcie_width: gpu.and_then(|g| g.pcie_width),
            pcie_rx_kbps: gpu.and_then(|g| g.pcie_rx_kbps),
            pcie_tx_kbps: gpu.and_then(|g| g.pcie_tx_kbps),
            sm_active_pct: gpm.and_then(|m| m.sm_active_pct),
            sm_occupancy_pct: gpm.and_then(|m| m.sm_occupancy_pct),
            tensor_active_pct: gpm.and_then(|m| m.tensor_active_pct),
            dram_active_pct: gpm.and_then(|m| m.dram_active_pct),
            hw_slowdown_ns: ns.and_then(|n| sum(n.hw_thermal_ns, n.hw_power_brake_ns)),
            thermal_ns: ns.and_then(|n| sum(n.sw_thermal_ns, n.hw_thermal_ns)),
            ecc_corrected: gpu.and_then(|g| g.ecc).and_then(|e| e.volatile_corrected),
            mem_temp_c: gpu.and_then(|g| g.mem_temp_c),
            nvlink_rx_mib_s: gpu.and_then(|g| g.nvlink_rx_mib_s),
            nvlink_tx_mib_s: gpu.and_then(|g| g.nvlink_tx_mib_s),
        });
    }
}

series_set! {
    /// Host-wide series, aligned with [`History::times`].
    pub struct HostSeries {}
    series HostRow {
        pub cpu_busy_pct: Option<f32>,
        pub iowait_pct: Option<f32>,
        pub steal_pct: Option<f32>,
        pub mem_available_bytes: Option<u64>,
        pub mem_total_bytes: Option<u64>,
        pub swap_used_bytes: Option<u64>,
        pub swap_in_pages_per_s: Option<f32>,
        pub swap_out_pages_per_s: Option<f32>,
        pub load_1: Option<f32>,
        pub psi_cpu_some: Option<f32>,
        pub psi_io_some: Option<f32>,
        pub psi_io_full: Option<f32>,
        pub psi_memory_some: Option<f32>,
    }
}

impl HostSeries {
    /// Appends the host's readings in a tick.
    fn push(&mut self, tick: &Tick) {
        let host = &tick.host;
        let cpu = host.cpu;
        let psi = host.psi;
        self.push_row(HostRow {
            cpu_busy_pct: cpu.map(|c| c.busy_pct),
            iowait_pct: cpu.map(|c| c.iowait_pct),
            steal_pct: cpu.map(|c| c.steal_pct),
            mem_available_bytes: host.mem_available_bytes,
            mem_total_bytes: host.mem_total_bytes,
            swap_used_bytes: host
                .swap_total_bytes
                .zip(host.swap_free_bytes)
                .map(|(total, free)| total.saturating_sub(free)),
            swap_in_pages_per_s: host.swap_in_pages_per_s,
            swap_out_pages_per_s: host.swap_out_pages_per_s,
            load_1: host.load_1,
            psi_cpu_some: psi.and_then(|p| p.cpu_some_avg10),
            psi_io_some: psi.and_then(|p| p.io_some_avg10),
            psi_io_full: psi.and_then(|p| p.io_full_avg10),
            psi_memory_some: psi.and_then(|p| p.memory_some_avg10),
        });
    }
}

/// How much of each process's past is kept, apart from the machine's own history.
///
/// The machine keeps `history_s` (15 minutes) at the sampling interval; kept per process at that rate, 1,000 GPU
/// processes at 0.1 s would take over a gigabyte. The rules that read per-process series look back at most the
/// longest window in [`crate::advice::Thresholds::windows`] (idle-holder's 5 minutes by default), and the
/// per-process readings NVML gives change every couple of seconds, so a process keeps its last `span_ms` at one
/// sample per `min_spacing_ms`: at most [`ProcessBound::points`] samples, whatever the interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessBound {
    /// The newest span a process keeps; a process not seen for this long is forgotten.
    pub span_ms: u64,
    /// A process sample closer than this to the one before it is skipped (the machine's own sample is not).
    pub min_spacing_ms: u64,
}

impl ProcessBound {
    /// The shortest span kept, so the details screen has five minutes to draw even with short rule windows.
    pub const MIN_SPAN_MS: u64 = 300_000;
    /// The most samples a process keeps over its span (the spacing widens for longer spans).
    pub const MAX_POINTS: u64 = 300;
    /// Samples are never kept closer than this (NVML's per-process readings refresh every ~2 s).
    pub const MIN_SPACING_MS: u64 = 1000;

    /// A bound whose span covers a rule window of `longest_window_s`.
    #[must_use]
    pub fn covering(longest_window_s: u64) -> Self {
        let span_ms = longest_window_s.saturating_mul(1000).max(Self::MIN_SPAN_MS);
        Self { span_ms, min_spacing_ms: span_ms.div_ceil(Self::MAX_POINTS).max(Self::MIN_SPACING_MS) }
    }

    /// The most samples a process's rings hold: one per spacing over the span, plus the one at its start.
    #[must_use]
    pub fn points(&self) -> usize {
        usize::try_from(self.span_ms / self.min_spacing_ms.max(1) + 1).unwrap_or(usize::MAX)
    }
}

impl Default for ProcessBound {
    fn default() -> Self {
        Self::covering(0)
    }
}

/// A process is identified by its PID and start time, so a reused PID starts a new history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessKey {
    pub pid: u32,
    pub start_ticks: Option<u64>,
}

series_set! {
    /// The history of one process, with its own time column (it lives for part of the machine's history).
    pub struct ProcessSeries {
        pub key: ProcessKey,
    }
    series ProcessRow {
        pub times: UnixMs,
        /// GPU memory summed over the GPUs it uses.
        pub gpu_mem_bytes: Option<u64>,
        /// SM utilization, the highest over its GPUs.
        pub sm_util_pct: Option<u32>,
        pub cpu_pct: Option<f32>,
        pub rss_bytes: Option<u64>,
        pub read_bytes_per_s: Option<u64>,
        pub state: Option<char>,
        pub threads_in_d: Option<u32>,
        /// Busiest child's CPU use, percent of one core.
        pub max_child_cpu_pct: Option<f32>,
        /// Children (DataLoader workers) in D state at this sample.
        pub children_in_d: Option<u32>,
        pub n_children: Option<u32>,
        /// Read rate of the process and its children together.
        pub tree_read_bytes_per_s: Option<u64>,
        /// Write rate of the process and its children together (checkpoints, logs).
        pub tree_write_bytes_per_s: Option<u64>,
        /// CPU use of the process's busiest thread, percent of one core.
        pub max_thread_cpu_pct: Option<f32>,
        /// The highest share (%) of scheduler periods throttled by a CPU quota, over the process's and its
        /// children's cgroups.
        pub tree_throttled_pct: Option<f32>,
        /// Threads of the process and its children asleep in network, NFS or FUSE waits.
        pub tree_remote_waits: Option<u32>,
        /// Open files of the process and its children on network or FUSE file systems.
        pub tree_remote_files: Option<u32>,
        /// Established TCP connections held by the children (`DataLoader` workers fetching over the network).
        pub children_tcp: Option<u32>,
        /// The input path in one record per sample: busy and compile workers, waits by kind, remote files by open
        /// mode and their read rate, the CPUs the process may run on (see [`InputSample`]).
        pub input: Option<InputSample>,
    }
}

impl ProcessSeries {
    /// The time of the newest sample of this process.
    #[must_use]
    pub fn last_seen_ms(&self) -> Option<UnixMs> {
        self.times.last().copied()
    }
}

/// Everything the pipeline remembers: the machine, the latest tick, the rings and recent events.
#[derive(Debug, Clone)]
pub struct History {
    machine: Arc<MachineInfo>,
    capacity: usize,
    process_bound: ProcessBound,
    pub times: Ring<UnixMs>,
    pub gpus: Vec<GpuSeries>,
    pub host: HostSeries,
    pub processes: HashMap<ProcessKey, ProcessSeries>,
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
            processes: HashMap::new(),
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
            series.push(tick.gpu(series.index));
        }
        self.host.push(&tick);
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

    /// `tick_gap_ms` is the time since the machine's previous sample: a process sample is skipped when it comes
    /// sooner than the bound's spacing after the last one kept, less half a gap, so sampling jitter at 0.1 s does
    /// not skip the sample due at one second.
    fn push_processes(&mut self, tick: &Tick, tick_gap_ms: u64) {
        // Every process NVML lists gets a series; host-only relatives are folded into their GPU process.
        // Lookups go through sorted (key, index) lists built once per tick, so 1,000 GPU processes with their
        // relatives cost O(n log n), not a scan of the whole tick per process.
        let Scratch { gpu_entries, by_pid, by_ppid } = &mut self.scratch;
        gpu_entries.clear();
        gpu_entries.extend(tick.gpu_processes.iter().enumerate().filter_map(|(i, p)| p.pid.map(|pid| (pid, i))));
        gpu_entries.sort_unstable();
        by_pid.clear();
        by_pid.extend(tick.processes.iter().enumerate().map(|(i, p)| (p.pid, i)));
        by_pid.sort_unstable();
        by_ppid.clear();
        by_ppid.extend(tick.processes.iter().enumerate().filter_map(|(i, p)| p.ppid.map(|ppid| (ppid, i))));
        by_ppid.sort_unstable();
        let mut rest = gpu_entries.as_slice();
        while let Some(&(pid, _)) = rest.first() {
            let n_entries = rest.iter().take_while(|(p, _)| *p == pid).count();
            let (entries, tail) = rest.split_at(n_entries);
            rest = tail;
            // The first host process listed with this PID, as `Tick::process` finds it.
            let host = matching(by_pid, pid).first().map(|(_, i)| &tick.processes[*i]);
            let key = ProcessKey { pid, start_ticks: host.and_then(|h| h.start_ticks) };
            let bound = self.process_bound;
            let capacity = self.capacity.min(bound.points());
            let series = self.processes.entry(key).or_insert_with(|| ProcessSeries::new(key, capacity));
            let due_ms = bound.min_spacing_ms.saturating_sub(tick_gap_ms / 2);
            if series.last_seen_ms().is_some_and(|seen| tick.at_ms.saturating_sub(seen) < due_ms) {
                continue;
            }
            while series.times.get(0).is_some_and(|first| tick.at_ms.saturating_sub(*first) > bound.span_ms) {
                series.pop_front();
            }
            let (mut mem, mut sm) = (None::<u64>, None::<u32>);
            for entry in entries.iter().map(|(_, i)| &tick.gpu_processes[*i]) {
                if let Some(bytes) = entry.used_gpu_memory_bytes {
                    mem = Some(mem.unwrap_or(0) + bytes);
                }
                if let Some(pct) = entry.sm_util_pct {
                    sm = Some(sm.map_or(pct, |s| s.max(pct)));
                }
            }
            let children = || matching(by_ppid, pid).iter().map(|(_, i)| &tick.processes[*i]);
            series.push_row(process_row(tick, host, mem, sm, children));
        }
    }

    /// Drops processes not seen for longer than the history spans (the machine's or the process bound's, the
    /// shorter), so memory stays flat.
    fn forget_old_processes(&mut self, now_ms: UnixMs) {
        let Some(oldest_ms) = self.times.get(0).copied() else {
            return;
        };
        let span_ms = now_ms.saturating_sub(oldest_ms).min(self.process_bound.span_ms);
        self.processes
            .retain(|_, series| series.last_seen_ms().is_some_and(|seen| now_ms.saturating_sub(seen) <= span_ms));
    }
}

/// The entries of a list sorted by key whose key is `key`, in their original order (the index breaks ties).
fn matching(sorted: &[(u32, usize)], key: u32) -> &[(u32, usize)] {
    let start = sorted.partition_point(|(k, _)| *k < key);
    let end = start + sorted[start..].partition_point(|(k, _)| *k == key);
    &sorted[start..end]
}

/// One sample of a GPU process: `host` is its own host entry, `children` lists the host processes whose parent it
/// is, `mem` and `sm` are its GPU memory and SM use over its GPUs.
fn process_row<'t, I>(
    tick: &'t Tick,
    host: Option<&'t HostProcess>,
    mem: Option<u64>,
    sm: Option<u32>,
    children: impl Fn() -> I,
) -> ProcessRow
where
    I: Iterator<Item = &'t HostProcess> + Clone,
{
    // Compile workers (torch.compile) are not DataLoader workers: their CPU and D are not the input's.
    let loaders = || children().filter(|c| !c.is_compile_worker());
    let children_in_d = loaders().filter(|c| c.state == Some('D')).count();
    let tree_read = host
        .and_then(|h| h.read_bytes_per_s)
        .map(|own| own + children().filter_map(|c| c.read_bytes_per_s).sum::<u64>());
    let tree_write = host
        .and_then(|h| h.write_bytes_per_s)
        .map(|own| own + children().filter_map(|c| c.write_bytes_per_s).sum::<u64>());
    let tree = || host.into_iter().chain(children());
    // Sums without a buffer (no allocation per tick): `None` when no process of the tree had the reading.
    let sum = |acc: Option<u32>, v: u32| Some(acc.unwrap_or(0).saturating_add(v));
    ProcessRow {
        times: tick.at_ms,
        gpu_mem_bytes: mem,
        sm_util_pct: sm,
        cpu_pct: host.and_then(|h| h.cpu_pct),
        rss_bytes: host.and_then(|h| h.rss_bytes),
        read_bytes_per_s: host.and_then(|h| h.read_bytes_per_s),
        state: host.and_then(|h| h.state),
        threads_in_d: host.and_then(|h| h.threads_in_d),
        max_child_cpu_pct: loaders().filter_map(|c| c.cpu_pct).reduce(f32::max),
        children_in_d: u32::try_from(children_in_d).ok(),
        n_children: u32::try_from(children().count()).ok(),
        tree_read_bytes_per_s: tree_read,
        tree_write_bytes_per_s: tree_write,
        max_thread_cpu_pct: host.and_then(|h| h.busiest_thread.as_ref()).map(|t| t.cpu_pct),
        tree_throttled_pct: tree().filter_map(|p| p.cgroup_cpu.as_ref().and_then(|c| c.throttled_pct)).reduce(f32::max),
        tree_remote_waits: tree().filter_map(|p| p.remote_waits).fold(None, sum),
        tree_remote_files: tree().filter_map(|p| p.remote_files.as_ref().map(|r| r.open)).fold(None, sum),
        children_tcp: children().filter_map(|p| p.remote_files.as_ref().map(|r| r.tcp_connections)).fold(None, sum),
        input: host.map(|h| InputSample::of(Some(h), &children(), &tick.host.per_cpu_busy_pct)),
    }
}

/// Summary statistics of the present (non-gap) values in an iterator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub n_present: usize,
    pub n_total: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
}

impl Stats {
    /// Statistics of the present values; `None` when every value is a gap.
    pub fn of<I, T>(values: I) -> Option<Self>
    where
        I: IntoIterator<Item = Option<T>>,
        T: Into<f64>,
    {
        let mut n_total = 0;
        let mut present: Vec<f64> = Vec::new();
        for value in values {
            n_total += 1;
            if let Some(v) = value {
                present.push(v.into());
            }
        }
        if present.is_empty() {
            return None;
        }
        present.sort_by(f64::total_cmp);
        let n = present.len();
        let median = if n % 2 == 1 { present[n / 2] } else { f64::midpoint(present[n / 2 - 1], present[n / 2]) };
        let mean = present.iter().sum::<f64>() / n as f64;
        Some(Self { n_present: n, n_total, min: present[0], max: present[n - 1], mean, median })
    }

    /// The share of samples (gaps count against) that were present.
    #[must_use]
    pub fn coverage(&self) -> f64 {
        if self.n_total == 0 { 0.0 } else { self.n_present as f64 / self.n_total as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{GpuInfo, GpuProcess, HostProcess};

    fn machine(n_gpus: u32) -> Arc<MachineInfo> {
        Arc::new(MachineInfo {
            gpus: (0..n_gpus).map(|index| GpuInfo { index, ..GpuInfo::default() }).collect(),
            ..MachineInfo::default()
        })
    }

    fn tick(at_ms: UnixMs, util: Option<u32>) -> Tick {
        Tick { at_ms, gpus: vec![GpuTick { index: 0, util_pct: util, ..GpuTick::default() }], ..Tick::default() }
    }

    #[test]
    fn ring_drops_the_oldest_when_full() {
        let mut ring = Ring::new(3);
        for v in 1..=5 {
            ring.push(v);
        }
        assert_eq!(ring.iter().copied().collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(ring.len(), 3);
        assert_eq!(ring.last(), Some(&5));
    }

    #[test]
    fn a_missing_reading_is_a_gap_not_a_zero() {
        let mut history = History::new(machine(1), 10);
        history.push_tick(tick(1000, Some(90)));
        history.push_tick(tick(2000, None));
        // A tick without the GPU at all is also a gap.
        history.push_tick(Tick { at_ms: 3000, ..Tick::default() });
        let util: Vec<_> = history.gpus[0].util_pct.iter().copied().collect();
        assert_eq!(util, vec![Some(90), None, None]);
        let stats = Stats::of(util).expect("one value present");
        assert_eq!((stats.n_present, stats.n_total), (1, 3));
        assert!((stats.mean - 90.0).abs() < f64::EPSILON);
    }

    #[test]
    fn window_covers_the_last_span() {
        let mut history = History::new(machine(1), 100);
        for i in 0..10 {
            history.push_tick(tick(1000 * i, Some(1)));
        }
        let window = history.window(3000).expect("window");
        assert_eq!((window.start, window.len, window.first_ms, window.last_ms), (6, 4, 6000, 9000));
        assert_eq!(history.window(1_000_000).map(|w| w.len), Some(10));
    }

    #[test]
    fn processes_get_their_own_time_column_and_are_forgotten() {
        let mut history = History::new(machine(1), 3);
        let with_process = |at_ms| Tick {
            at_ms,
            gpu_processes: vec![GpuProcess {
                pid: Some(42),
                used_gpu_memory_bytes: Some(1 << 30),
                ..GpuProcess::default()
            }],
            ..tick(at_ms, Some(50))
        };
        history.push_tick(with_process(1000));
        history.push_tick(with_process(2000));
        let series = history.process(42).expect("series");
        assert_eq!(series.gpu_mem_bytes.iter().copied().collect::<Vec<_>>(), vec![Some(1 << 30); 2]);
        for at_ms in [3000, 4000, 5000, 6000] {
            history.push_tick(tick(at_ms, Some(0)));
        }
        assert!(history.process(42).is_none(), "a process gone for a whole span is dropped");
    }

    /// A tick at `at_ms` with process 42 on GPU 0.
    fn with_process(at_ms: UnixMs) -> Tick {
        Tick {
            at_ms,
            gpu_processes: vec![GpuProcess { pid: Some(42), used_gpu_memory_bytes: Some(1), ..GpuProcess::default() }],
            ..tick(at_ms, Some(50))
        }
    }

    #[test]
    fn ring_buffers_never_grow_past_their_capacity() {
        let mut ring = Ring::new(9000);
        for v in 0..20_000_u64 {
            ring.push(v);
        }
        assert_eq!(ring.len(), 9000);
        assert_eq!(ring.heap_bytes(), 9000 * std::mem::size_of::<u64>(), "no slack past the capacity");
    }

    #[test]
    fn per_process_rings_stop_at_their_own_bound_at_a_fast_interval() {
        // 15 minutes of machine history at 0.1 s, a process present throughout.
        let bound = ProcessBound::default();
        let mut history = History::with_process_bound(machine(1), 9000, bound);
        for n in 0..12_000 {
            history.push_tick(with_process(n * 100));
        }
        assert_eq!(history.times.len(), 9000, "the machine keeps its whole capacity");
        let series = history.process(42).expect("series");
        assert_eq!(bound.points(), 301);
        assert_eq!(series.times.len(), 301, "one sample a second over five minutes");
        let kept: Vec<UnixMs> = series.times.iter().copied().collect();
        assert_eq!((kept.first().copied(), kept.last().copied()), (Some(899_000), Some(1_199_000)));
        assert!(kept.windows(2).all(|w| w[1] - w[0] == 1000), "evenly spaced, one a second");
        assert_eq!(series.times.heap_bytes(), 301 * std::mem::size_of::<UnixMs>());
        // Every series of the process stays aligned with its time column.
        series.for_each_series(|name, len, _| assert_eq!(len, 301, "{name}"));
        // Pushing on changes nothing in size.
        let before = history.process_heap_bytes();
        for n in 12_000..13_000 {
            history.push_tick(with_process(n * 100));
        }
        assert_eq!(history.process_heap_bytes(), before);
    }

    #[test]
    fn per_process_rings_keep_every_sample_at_one_second_up_to_the_span() {
        let mut history = History::with_process_bound(machine(1), 900, ProcessBound::default());
        for n in 0..1000 {
            // Jitter of a few ms either way must not cost a sample.
            let jitter = if n % 2 == 0 { 3 } else { 0 };
            history.push_tick(with_process(n * 1000 + jitter));
        }
        let series = history.process(42).expect("series");
        assert_eq!(series.times.len(), 301);
        assert_eq!(series.times.last().copied(), Some(999_000));
    }

    #[test]
    fn a_longer_rule_window_widens_the_spacing_not_the_point_count() {
        let bound = ProcessBound::covering(3600);
        assert_eq!((bound.span_ms, bound.min_spacing_ms, bound.points()), (3_600_000, 12_000, 301));
        let mut history = History::with_process_bound(machine(1), 36_000, bound);
        for n in 0..50_000 {
            history.push_tick(with_process(n * 100));
        }
        assert_eq!(history.process(42).map(|s| s.times.len()), Some(301));
    }

    #[test]
    fn a_process_gone_for_the_process_span_is_forgotten_before_the_machine_span() {
        let mut history = History::with_process_bound(machine(1), 9000, ProcessBound::default());
        history.push_tick(with_process(0));
        for n in 1..=3000 {
            history.push_tick(tick(n * 100, Some(0)));
        }
        assert!(history.process(42).is_some(), "seen 300 s ago: still kept");
        history.push_tick(tick(300_100, Some(0)));
        assert!(history.process(42).is_none(), "gone for longer than the process span");
    }

    #[test]
    fn a_process_on_several_gpus_sums_memory_and_finds_its_children() {
        let mut history = History::new(machine(2), 10);
        let entry = |gpu_index, mem, sm| GpuProcess {
            gpu_index,
            pid: Some(7),
            used_gpu_memory_bytes: mem,
            sm_util_pct: sm,
            ..GpuProcess::default()
        };
        let host = |pid, ppid, state, cpu, read| HostProcess {
            pid,
            ppid: Some(ppid),
            state: Some(state),
            cpu_pct: Some(cpu),
            read_bytes_per_s: Some(read),
            start_ticks: Some(500),
            ..HostProcess::default()
        };
        let tick = Tick {
            at_ms: 1000,
            gpu_processes: vec![entry(1, Some(3), Some(20)), entry(0, Some(4), None), entry(0, None, Some(70))],
            // The process itself, two children (one in D) and an unrelated process whose parent is elsewhere.
            processes: vec![
                host(9, 7, 'D', 30.0, 5),
                host(7, 1, 'R', 99.0, 100),
                host(8, 7, 'S', 60.0, 1),
                host(3, 2, 'S', 1.0, 1),
            ],
            ..tick(1000, Some(50))
        };
        history.push_tick(tick);
        let series = history.process(7).expect("series");
        assert_eq!(series.key, ProcessKey { pid: 7, start_ticks: Some(500) });
        assert_eq!(series.gpu_mem_bytes.last(), Some(&Some(7)));
        assert_eq!(series.sm_util_pct.last(), Some(&Some(70)));
        assert_eq!(series.n_children.last(), Some(&Some(2)));
        assert_eq!(series.children_in_d.last(), Some(&Some(1)));
        assert_eq!(series.max_child_cpu_pct.last(), Some(&Some(60.0)));
        assert_eq!(series.tree_read_bytes_per_s.last(), Some(&Some(106)));
        assert_eq!(history.processes.len(), 1, "host-only relatives get no series of their own");
    }

    #[test]
    fn an_owned_push_equals_a_borrowed_one() {
        let snapshot = Snapshot { machine: machine(1), tick: tick(1000, Some(5)) };
        let (mut a, mut b) = (History::new(machine(1), 10), History::new(machine(1), 10));
        a.push(&snapshot);
        b.push_owned(snapshot);
        assert_eq!((a.latest(), &a.gpus, &a.times), (b.latest(), &b.gpus, &b.times));
    }

    /// The (name, length, heap bytes) of every series a visitor walks.
    fn visited(visit: impl FnOnce(&mut dyn FnMut(&'static str, usize, usize))) -> Vec<(&'static str, usize, usize)> {
        let mut seen = Vec::new();
        visit(&mut |name, len, bytes| seen.push((name, len, bytes)));
        seen
    }

    /// Checks one set of series after `n` pushes: every series was visited once, pushed `n` times and counted in
    /// the heap bytes, and the struct holds no ring the visitor does not walk (a ring's size does not depend on
    /// its element type, so the struct's size is its keys plus one ring per visited series).
    fn check_series_set(seen: &[(&'static str, usize, usize)], n_series: usize, heap: usize, n: usize, rest: usize) {
        let mut names: Vec<_> = seen.iter().map(|(name, _, _)| *name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!((seen.len(), names.len()), (n_series, n_series), "each series visited once");
        for (name, len, bytes) in seen {
            assert_eq!(*len, n, "{name} pushed every tick");
            assert!(*bytes > 0, "{name} counted in the heap bytes");
        }
        assert_eq!(heap, seen.iter().map(|(_, _, bytes)| bytes).sum::<usize>(), "heap bytes sum every series");
        assert_eq!(rest, n_series * std::mem::size_of::<Ring<u8>>(), "no ring outside the visited list");
    }

    #[test]
    fn every_series_is_pushed_visited_and_counted_in_the_heap_bytes() {
        let mut history = History::new(machine(1), 10);
        for at_ms in [1000, 2000, 3000] {
            history.push_tick(with_process(at_ms));
        }
        let (gpu, host) = (&history.gpus[0], &history.host);
        let process = history.process(42).expect("series");
        let gpu_seen = visited(|v| gpu.for_each_series(v));
        let gpu_rest = std::mem::size_of::<GpuSeries>() - std::mem::size_of::<u64>();
        check_series_set(&gpu_seen, GpuSeries::N_SERIES, gpu.heap_bytes(), 3, gpu_rest);
        // The slowdown and ECC counters were once left out of the GPU's heap bytes.
        for name in ["hw_slowdown_ns", "thermal_ns", "ecc_corrected"] {
            assert!(gpu_seen.iter().any(|(seen, _, _)| *seen == name), "{name}");
        }
        let host_seen = visited(|v| host.for_each_series(v));
        check_series_set(&host_seen, HostSeries::N_SERIES, host.heap_bytes(), 3, std::mem::size_of::<HostSeries>());
        let process_seen = visited(|v| process.for_each_series(v));
        let process_rest = std::mem::size_of::<ProcessSeries>() - std::mem::size_of::<ProcessKey>();
        check_series_set(&process_seen, ProcessSeries::N_SERIES, process.heap_bytes(), 3, process_rest);
        let rings = history.times.heap_bytes() + gpu.heap_bytes() + host.heap_bytes() + process.heap_bytes();
        assert_eq!(history.heap_bytes(), rings + history.events.capacity() * std::mem::size_of::<GpuEvent>());
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
