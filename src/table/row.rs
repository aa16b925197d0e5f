//! The rows of the process table: one per NVML (GPU, process) entry in the flat view, one per host process in the
//! tree view (launchers above, workers below), each with a key that follows the process across ticks.

use std::collections::{BTreeMap, BTreeSet};

use crate::fast_map::FastMap;
use crate::sample::{GpuProcess, HostProcess, ProcessRole, Tick};

/// Identity of a row: stable across ticks so selection and tags follow the process, not the position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowKey {
    pub gpu_index: Option<u32>,
    pub pid: Option<u32>,
    pub start_ticks: Option<u64>,
    /// Tells apart rows that share everything else (several `pid: None` entries on one GPU).
    pub nth: usize,
}

/// The NVML entries of a row, inline when there is one (a row each in the flat view, built every frame).
pub type GpuEntries<'a> = smallvec::SmallVec<[&'a GpuProcess; 1]>;

/// One row of the table: a process on a GPU (flat view) or a host process with its GPUs (tree view).
#[derive(Debug, Clone)]
pub struct ProcessRow<'a> {
    pub key: RowKey,
    pub pid: Option<u32>,
    /// The NVML entries of this process (one in the flat view; none for a launcher in the tree view).
    pub gpus: GpuEntries<'a>,
    pub host: Option<&'a HostProcess>,
    /// Tree glyph prefix for the command column (empty in the flat view).
    pub depth: usize,
    pub last_child: Vec<bool>,
}

impl ProcessRow<'_> {
    #[must_use]
    pub fn gpu_mem_bytes(&self) -> Option<u64> {
        self.gpus.iter().filter_map(|g| g.used_gpu_memory_bytes).reduce(|a, b| a + b)
    }

    #[must_use]
    pub fn sm_pct(&self) -> Option<u32> {
        self.gpus.iter().filter_map(|g| g.sm_util_pct).max()
    }

    #[must_use]
    pub fn gmbw_pct(&self) -> Option<u32> {
        self.gpus.iter().filter_map(|g| g.mem_util_pct).max()
    }

    #[must_use]
    pub fn user(&self) -> Option<&str> {
        self.host.and_then(|h| h.user.as_deref())
    }

    /// The command line, or the short name when the command line is empty.
    #[must_use]
    pub fn command(&self) -> &str {
        match self.host {
            Some(h) if !h.cmdline.is_empty() => &h.cmdline,
            Some(h) => &h.name,
            None => "",
        }
    }

    /// Milliseconds the process has run at `now_ms`.
    #[must_use]
    pub fn elapsed_ms(&self, now_ms: u64) -> Option<u64> {
        self.host.and_then(|h| h.started_at_ms).map(|start| now_ms.saturating_sub(start))
    }

    /// Why no signal can be sent to this row, or `None` when one can.
    #[must_use]
    pub fn why_not_signalable(&self) -> Option<String> {
        let Some(pid) = self.pid else {
            return Some("its PID is N/A (driver ABI)".to_owned());
        };
        let Some(host) = self.host else {
            return Some(format!("PID {pid} is not visible here (outside this PID namespace)"));
        };
        // The start time is what makes a signal safe (it is re-checked through a pidfd before sending). Details
        // that could not be read beside it (another user's I/O counters) do not matter: the kernel decides
        // whether we may signal, and a refusal is shown with the owner.
        if host.start_ticks.is_none() {
            return Some(match &host.unreadable {
                Some(why) => format!("PID {pid} could not be read ({why})"),
                None => format!("PID {pid} has no start time to check its identity"),
            });
        }
        None
    }
}

/// One row per NVML (GPU, process) entry.
pub(super) fn flat_rows(tick: &Tick) -> Vec<ProcessRow<'_>> {
    // One lookup table per call: `Tick::process` is a linear search, quadratic over 8 GPUs x 1,000 processes.
    let by_pid: FastMap<u32, &HostProcess> = tick.processes.iter().map(|p| (p.pid, p)).collect();
    let nth = nth_of_each(&tick.gpu_processes);
    tick.gpu_processes
        .iter()
        .zip(nth)
        .map(|(gp, nth)| {
            let host = gp.pid.and_then(|pid| by_pid.get(&pid).copied());
            let key = RowKey {
                gpu_index: Some(gp.gpu_index),
                pid: gp.pid,
                start_ticks: host.and_then(|h| h.start_ticks),
                nth,
            };
            ProcessRow { key, pid: gp.pid, gpus: smallvec::smallvec![gp], host, depth: 0, last_child: Vec::new() }
        })
        .collect()
}

/// For each entry, how many entries before it share its (GPU, PID): 0 for all but repeated entries. A sort of the
/// entries' indices, not a map (a map's lookup per entry was most of a frame's table at 8 GPUs × 1,000 processes).
fn nth_of_each(entries: &[GpuProcess]) -> Vec<usize> {
    let mut order: Vec<(u32, Option<u32>, usize)> =
        entries.iter().enumerate().map(|(i, gp)| (gp.gpu_index, gp.pid, i)).collect();
    order.sort_unstable();
    let mut nth = vec![0; entries.len()];
    for run in order.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        for (n, &(_, _, i)) in run.iter().enumerate() {
            nth[i] = n;
        }
    }
    nth
}

/// The tree: every host process related to the kept GPU processes, launchers above, workers below, one row
/// per host process (its GPUs merged), in PID order at each level. GPU entries without a host process come last.
pub(super) fn tree_rows<'a>(tick: &'a Tick, kept: &[ProcessRow<'a>]) -> Vec<ProcessRow<'a>> {
    let kept_pids: BTreeSet<u32> = kept.iter().filter_map(|r| r.pid).collect();
    // Which host processes to show: the kept GPU processes, their ancestors and their direct children.
    let by_pid: BTreeMap<u32, &HostProcess> = tick.processes.iter().map(|p| (p.pid, p)).collect();
    let mut shown: BTreeSet<u32> = BTreeSet::new();
    for pid in &kept_pids {
        let mut current = Some(*pid);
        while let Some(pid) = current {
            if !shown.insert(pid) {
                break;
            }
            current = by_pid.get(&pid).and_then(|p| p.ppid).filter(|pp| by_pid.contains_key(pp));
        }
    }
    for process in &tick.processes {
        if process.role == ProcessRole::Child && process.ppid.is_some_and(|pp| kept_pids.contains(&pp)) {
            shown.insert(process.pid);
        }
    }
    let mut children: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
    for pid in &shown {
        let parent = by_pid.get(pid).and_then(|p| p.ppid).filter(|pp| shown.contains(pp));
        children.entry(parent).or_default().push(*pid);
    }
    // The kept rows by PID, so each host process finds its GPU entries by a binary search, not a scan of them all.
    let mut kept_by_pid: Vec<(u32, usize)> =
        kept.iter().enumerate().filter_map(|(i, r)| r.pid.map(|p| (p, i))).collect();
    kept_by_pid.sort_unstable();
    let mut rows = Vec::new();
    let mut stack: Vec<(u32, usize, Vec<bool>)> = Vec::new();
    let roots = children.get(&None).cloned().unwrap_or_default();
    for (i, root) in roots.iter().enumerate().rev() {
        stack.push((*root, 0, vec![i + 1 == roots.len()]));
    }
    while let Some((pid, depth, last_child)) = stack.pop() {
        let host = by_pid.get(&pid).copied();
        let from = kept_by_pid.partition_point(|(p, _)| *p < pid);
        let to = kept_by_pid.partition_point(|(p, _)| *p <= pid);
        let gpus: GpuEntries<'_> =
            kept_by_pid[from..to].iter().flat_map(|(_, i)| kept[*i].gpus.iter().copied()).collect();
        let key = RowKey { gpu_index: None, pid: Some(pid), start_ticks: host.and_then(|h| h.start_ticks), nth: 0 };
        rows.push(ProcessRow { key, pid: Some(pid), gpus, host, depth, last_child: last_child.clone() });
        if let Some(kids) = children.get(&Some(pid)) {
            for (i, kid) in kids.iter().enumerate().rev() {
                let mut path = last_child.clone();
                path.push(i + 1 == kids.len());
                stack.push((*kid, depth + 1, path));
            }
        }
    }
    rows.extend(kept.iter().filter(|r| r.host.is_none()).cloned());
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_tick as tick;
    use crate::table::{FixedFilters, TableState};

    #[test]
    fn another_users_process_with_unreadable_io_can_still_be_signalled() {
        fn row_of<'a>(key: RowKey, gpu: &'a GpuProcess, host: &'a HostProcess) -> ProcessRow<'a> {
            let gpus = smallvec::smallvec![gpu];
            ProcessRow { key, pid: gpu.pid, gpus, host: Some(host), depth: 0, last_child: vec![] }
        }
        // What the host sampler reports for a root-owned process seen by an unprivileged user: stat readable
        // (start time known), I/O counters denied. The kernel, not the table, decides whether the signal goes.
        let tick = tick("compute");
        let gpu = tick.gpu_processes.first().expect("a GPU process");
        let mut host = tick.process(gpu.pid.expect("pid")).expect("host").clone();
        host.unreadable = Some("I/O counters: permission denied".to_owned());
        let key = RowKey { gpu_index: Some(gpu.gpu_index), pid: gpu.pid, start_ticks: host.start_ticks, nth: 0 };
        assert_eq!(row_of(key, gpu, &host).why_not_signalable(), None);
        // Without a start time there is nothing to check the identity against: no signal.
        host.start_ticks = None;
        host.unreadable = Some("permission denied".to_owned());
        let row = row_of(key, gpu, &host);
        assert!(row.why_not_signalable().is_some_and(|why| why.contains("permission denied")));
    }

    #[test]
    fn tree_puts_launchers_above_and_workers_below() {
        let tick = tick("loader");
        let state = TableState { tree: true, ..TableState::default() };
        let rows = state.rows(&tick, &FixedFilters::default());
        let gpu_row = rows.iter().position(|r| !r.gpus.is_empty()).expect("a GPU process");
        assert!(rows[..gpu_row].iter().all(|r| r.depth < rows[gpu_row].depth), "launchers come first");
        let children: Vec<_> = rows[gpu_row + 1..].iter().filter(|r| r.depth > rows[gpu_row].depth).collect();
        assert!(!children.is_empty(), "DataLoader workers under the GPU process");
        assert!(children.iter().all(|r| r.host.is_some_and(|h| h.role == ProcessRole::Child)));
    }
}
