//! Each process's own history: its key (PID and start time), its series with their own time column, the bound on
//! what it keeps ([`ProcessBound`]), and how a tick's GPU processes and their relatives become one row each.

use super::series::series_set;
use super::{Compact, History, InputSample, Ring, Scratch};
use crate::sample::{HostProcess, Tick, UnixMs};

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
        /// Since when its GPU memory has read one value.
        pub mem_level: Level,
        /// The newest sample at which its listening ports had connections on them at the read
        /// ([`crate::sample::Serving::connections`]), taken from every tick, kept or skipped: whether it had any
        /// in a window is one comparison.
        pub connected_ms: Option<UnixMs>,
    }
    series ProcessRow {
        pub times: UnixMs,
        /// GPU memory summed over the GPUs it uses.
        pub gpu_mem_bytes: Compact<u64>,
        /// SM utilization, the highest over its GPUs.
        pub sm_util_pct: Compact<u32>,
        pub cpu_pct: Compact<f32>,
        pub rss_bytes: Compact<u64>,
        pub read_bytes_per_s: Compact<u64>,
        pub state: Option<char>,
        pub threads_in_d: Compact<u32>,
        /// Busiest child's CPU use, percent of one core.
        pub max_child_cpu_pct: Compact<f32>,
        /// Children (DataLoader workers) in D state at this sample.
        pub children_in_d: Compact<u32>,
        pub n_children: Compact<u32>,
        /// Read rate of the process and its children together.
        pub tree_read_bytes_per_s: Compact<u64>,
        /// Write rate of the process and its children together (checkpoints, logs).
        pub tree_write_bytes_per_s: Compact<u64>,
        /// CPU use of the process's busiest thread, percent of one core.
        pub max_thread_cpu_pct: Compact<f32>,
        /// The highest share (%) of scheduler periods throttled by a CPU quota, over the process's and its
        /// children's cgroups.
        pub tree_throttled_pct: Compact<f32>,
        /// Established TCP connections held by the children (`DataLoader` workers fetching over the network).
        pub children_tcp: Compact<u32>,
        /// The input path in one record per sample: busy and compile workers, waits by kind, remote files by open
        /// mode and their read rate, the CPUs the process may run on (see [`InputSample`]).
        pub input: Option<InputSample>,
        /// Connections its listening ports accepted since gpusight began watching it
        /// ([`crate::sample::Serving::accepted`], cumulative, kept to `u32::MAX - 1`): the growth over a window
        /// is what it served in it.
        pub accepted: Compact<u32>,
    }
}

/// Since when a reading has held one value, gaps aside: a rule sees that a window is flat without walking it
/// (most processes' GPU memory, sampled at 8 GPUs × 1,000 processes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Level {
    value: Option<u64>,
    /// The time of the first sample of the current value.
    since_ms: Option<UnixMs>,
}

impl Level {
    /// Takes the reading of the sample at `at_ms` (a gap changes nothing).
    pub fn observe(&mut self, reading: Option<u64>, at_ms: UnixMs) {
        if let Some(value) = reading.filter(|v| self.value != Some(*v)) {
            *self = Self { value: Some(value), since_ms: Some(at_ms) };
        }
    }

    /// Whether every reading taken at or after `from_ms` is one value (or there is none).
    #[must_use]
    pub fn unchanged_from(&self, from_ms: UnixMs) -> bool {
        self.since_ms.is_none_or(|since| since <= from_ms)
    }
}

impl ProcessSeries {
    /// The time of the newest sample of this process.
    #[must_use]
    pub fn last_seen_ms(&self) -> Option<UnixMs> {
        self.times.last().copied()
    }
}

impl History {
    /// `tick_gap_ms` is the time since the machine's previous sample: a process sample is skipped when it comes
    /// sooner than the bound's spacing after the last one kept, less half a gap, so sampling jitter at 0.1 s does
    /// not skip the sample due at one second.
    pub(super) fn push_processes(&mut self, tick: &Tick, tick_gap_ms: u64) {
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
            let series =
                self.processes.entry(key).or_insert_with(|| ProcessSeries::new(key, Level::default(), None, capacity));
            if host.and_then(|h| h.serving.as_ref()).is_some_and(|s| s.connections > 0) {
                series.connected_ms = Some(tick.at_ms);
            }
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
            series.mem_level.observe(mem, tick.at_ms);
            series.push_row(process_row(tick, host, mem, sm, children));
        }
    }

    /// Drops processes not seen for longer than the history spans (the machine's or the process bound's, the
    /// shorter), so memory stays flat.
    pub(super) fn forget_old_processes(&mut self, now_ms: UnixMs) {
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
        gpu_mem_bytes: Compact::new(mem),
        sm_util_pct: Compact::new(sm),
        cpu_pct: Compact::new(host.and_then(|h| h.cpu_pct)),
        rss_bytes: Compact::new(host.and_then(|h| h.rss_bytes)),
        read_bytes_per_s: Compact::new(host.and_then(|h| h.read_bytes_per_s)),
        state: host.and_then(|h| h.state),
        threads_in_d: Compact::new(host.and_then(|h| h.threads_in_d)),
        max_child_cpu_pct: Compact::new(loaders().filter_map(|c| c.cpu_pct).reduce(f32::max)),
        children_in_d: Compact::new(u32::try_from(children_in_d).ok()),
        n_children: Compact::new(u32::try_from(children().count()).ok()),
        tree_read_bytes_per_s: Compact::new(tree_read),
        tree_write_bytes_per_s: Compact::new(tree_write),
        max_thread_cpu_pct: Compact::new(host.and_then(|h| h.busiest_thread.as_ref()).map(|t| t.cpu_pct)),
        tree_throttled_pct: Compact::new(
            tree().filter_map(|p| p.cgroup_cpu.as_ref().and_then(|c| c.throttled_pct)).reduce(f32::max),
        ),
        children_tcp: Compact::new(
            children().filter_map(|p| p.remote_files.as_ref().map(|r| r.tcp_connections)).fold(None, sum),
        ),
        input: host.map(|h| InputSample::of(Some(h), &children(), &tick.host.per_cpu_busy_pct)),
        accepted: Compact::new(
            host.and_then(|h| h.serving.as_ref()?.accepted).map(|a| u32::try_from(a).unwrap_or(u32::MAX)),
        ),
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Readings;
    use crate::history::test_ticks::{machine, tick, with_process};
    use crate::sample::GpuProcess;

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
        assert_eq!(series.gpu_mem_bytes.readings().collect::<Vec<_>>(), vec![Some(1 << 30); 2]);
        for at_ms in [3000, 4000, 5000, 6000] {
            history.push_tick(tick(at_ms, Some(0)));
        }
        assert!(history.process(42).is_none(), "a process gone for a whole span is dropped");
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
        // 8 GPUs × 1,000 processes keep 300,000 of these samples: the readings are compact (no `Option` padding),
        // so a sample takes 128 bytes over all its series, where `Option` fields took about 200 (the 4 of them
        // that count a server's accepted connections, and the 4 of the workers' CPU and runnable count in the input
        // record: 1.2 MB each at that scale).
        assert!(before / 301 <= 128, "{} bytes a process sample", before / 301);
    }

    #[test]
    fn a_level_knows_since_when_a_reading_held_its_value_through_gaps() {
        let mut level = Level::default();
        assert!(level.unchanged_from(0), "no reading at all is flat");
        for (at_ms, reading) in [(1000, Some(5)), (2000, None), (3000, Some(5)), (4000, Some(7)), (5000, None)] {
            level.observe(reading, at_ms);
        }
        assert!(level.unchanged_from(4000) && level.unchanged_from(4500));
        assert!(!level.unchanged_from(3999), "it changed at 4000");
        // Through the history: a process whose memory changed once.
        let mut history = History::new(machine(1), 100);
        for n in 0..10_u64 {
            let mut tick = with_process(n * 1000);
            tick.gpu_processes[0].used_gpu_memory_bytes = Some(if n < 4 { 1 << 30 } else { 2 << 30 });
            history.push_tick(tick);
        }
        let series = history.process(42).expect("series");
        assert!(series.mem_level.unchanged_from(4000) && !series.mem_level.unchanged_from(3000));
    }

    #[test]
    fn a_servers_accepted_count_is_a_series_and_its_connections_a_time() {
        let mut history = History::new(machine(1), 100);
        for n in 0..10_u64 {
            let mut tick = with_process(n * 1000);
            let serving = crate::sample::Serving {
                ports: vec![8000],
                connections: u32::from(n == 3),
                accepted: (n > 0).then_some(if n == 9 { u64::MAX } else { n / 4 }),
            };
            tick.processes.push(HostProcess { pid: 42, serving: Some(serving), ..HostProcess::default() });
            history.push_tick(tick);
        }
        let series = history.process(42).expect("series");
        let accepted: Vec<Option<u32>> = series.accepted.readings().collect();
        assert_eq!(accepted[..3], [None, Some(0), Some(0)]);
        assert_eq!(accepted[8], Some(2));
        assert_eq!(accepted[9], Some(u32::MAX - 1), "a count past the type's range stays a reading");
        assert_eq!(series.connected_ms, Some(3000), "the newest sample with connections");
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
        assert_eq!(series.gpu_mem_bytes.last_reading(), Some(7));
        assert_eq!(series.sm_util_pct.last_reading(), Some(70));
        assert_eq!(series.n_children.last_reading(), Some(2));
        assert_eq!(series.children_in_d.last_reading(), Some(1));
        assert_eq!(series.max_child_cpu_pct.last_reading(), Some(60.0));
        assert_eq!(series.tree_read_bytes_per_s.last_reading(), Some(106));
        assert_eq!(history.processes.len(), 1, "host-only relatives get no series of their own");
    }
}
