//! The process table's model: which rows there are (flat or as a tree), how they are sorted and filtered, and
//! the table's own state (selection, tags, sort, filters). The widget in `ui/processes.rs` only draws it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::sample::{GpuProcess, HostProcess, ProcessRole, Tick};

/// A column the table can sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortColumn {
    Gpu,
    Pid,
    User,
    GpuMem,
    Sm,
    Gmbw,
    Cpu,
    HostMem,
    Time,
    Command,
}

impl SortColumn {
    /// In the order of the table's columns.
    pub const ALL: [SortColumn; 10] = [
        SortColumn::Gpu,
        SortColumn::Pid,
        SortColumn::User,
        SortColumn::GpuMem,
        SortColumn::Sm,
        SortColumn::Gmbw,
        SortColumn::Cpu,
        SortColumn::HostMem,
        SortColumn::Time,
        SortColumn::Command,
    ];

    /// Whether the natural order is largest first (resources) rather than A to Z.
    #[must_use]
    pub fn descending_by_default(self) -> bool {
        matches!(self, Self::GpuMem | Self::Sm | Self::Gmbw | Self::Cpu | Self::HostMem | Self::Time)
    }
}

/// Identity of a row: stable across ticks so selection and tags follow the process, not the position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowKey {
    pub gpu_index: Option<u32>,
    pub pid: Option<u32>,
    pub start_ticks: Option<u64>,
    /// Tells apart rows that share everything else (several `pid: None` entries on one GPU).
    pub nth: usize,
}

/// One row of the table: a process on a GPU (flat view) or a host process with its GPUs (tree view).
#[derive(Debug, Clone)]
pub struct ProcessRow<'a> {
    pub key: RowKey,
    pub pid: Option<u32>,
    /// The NVML entries of this process (one in the flat view; none for a launcher in the tree view).
    pub gpus: Vec<&'a GpuProcess>,
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

/// The table's state, owned by the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableState {
    pub sort: SortColumn,
    /// Reverse of the column's natural order.
    pub inverted: bool,
    pub filter: String,
    /// The filter is being typed.
    pub editing_filter: bool,
    pub only_gpu: Option<u32>,
    pub only_user: Option<String>,
    pub tree: bool,
    pub selected: Option<RowKey>,
    pub tagged: BTreeSet<RowKey>,
    /// First row shown (scroll position): settled by [`scroll_offset`] as the process table is drawn (the widget
    /// gets it as its state), and what a click on a row maps through, so a click selects the row drawn there.
    pub offset: usize,
    /// Characters of the command column scrolled off to the left (Left/Right outside a recording).
    pub command_offset: usize,
}

impl Default for TableState {
    fn default() -> Self {
        Self {
            sort: SortColumn::Gpu,
            inverted: false,
            filter: String::new(),
            editing_filter: false,
            only_gpu: None,
            only_user: None,
            tree: false,
            selected: None,
            tagged: BTreeSet::new(),
            offset: 0,
            command_offset: 0,
        }
    }
}

/// Filters that come from the command line and always apply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FixedFilters {
    pub gpus: Option<Vec<u32>>,
    pub user: Option<String>,
    pub pids: Vec<u32>,
    /// Only processes with a compute context (C or C+G), as nvitop's `-c`.
    pub compute: bool,
    /// Only processes with a graphics context (G or C+G), as nvitop's `-g`. With `compute`: either.
    pub graphics: bool,
}

/// The one rule for the process table's scroll position: from `offset` (where it was), the least scroll that keeps
/// the `selected` row on a page of `page` rows, and without a selection on screen no blank page below the last of
/// `n_rows` rows.
#[must_use]
pub fn scroll_offset(offset: usize, selected: Option<usize>, n_rows: usize, page: usize) -> usize {
    match selected {
        Some(i) if i >= offset + page => i + 1 - page,
        Some(i) if i < offset => i,
        _ => offset.min(n_rows.saturating_sub(page)),
    }
}

impl TableState {
    /// Back to the first row (new filters, another view); the next frame settles it (see [`scroll_offset`]).
    pub fn scroll_to_top(&mut self) {
        self.offset = 0;
    }

    /// The rows of `tick` as the table shows them: filtered, then sorted (or as a tree).
    #[must_use]
    pub fn rows<'a>(&self, tick: &'a Tick, fixed: &FixedFilters) -> Vec<ProcessRow<'a>> {
        let flat = flat_rows(tick);
        let keep = |row: &ProcessRow<'_>| self.keeps(row, fixed);
        if self.tree {
            tree_rows(tick, &flat.into_iter().filter(keep).collect::<Vec<_>>())
        } else {
            let mut rows: Vec<ProcessRow<'a>> = flat.into_iter().filter(keep).collect();
            let now_ms = tick.at_ms;
            rows.sort_by(|a, b| {
                let order = compare(self.sort, a, b, now_ms);
                let order = if self.sort.descending_by_default() { order.reverse() } else { order };
                let order = if self.inverted { order.reverse() } else { order };
                order.then_with(|| a.key.cmp(&b.key))
            });
            rows
        }
    }

    fn keeps(&self, row: &ProcessRow<'_>, fixed: &FixedFilters) -> bool {
        let gpu = row.key.gpu_index;
        if let Some(only) = &fixed.gpus
            && !gpu.is_some_and(|g| only.contains(&g))
        {
            return false;
        }
        if let Some(user) = &fixed.user
            && row.user() != Some(user.as_str())
        {
            return false;
        }
        if !fixed.pids.is_empty() && !row.pid.is_some_and(|p| fixed.pids.contains(&p)) {
            return false;
        }
        if fixed.compute || fixed.graphics {
            use crate::sample::ProcessKind::{Compute, ComputeAndGraphics, Graphics};
            let wanted = |kind| match kind {
                Compute => fixed.compute,
                Graphics => fixed.graphics,
                ComputeAndGraphics => true,
            };
            if !row.gpus.iter().any(|g| wanted(g.kind)) {
                return false;
            }
        }
        if self.only_gpu.is_some() && gpu != self.only_gpu {
            return false;
        }
        if let Some(user) = &self.only_user
            && row.user() != Some(user.as_str())
        {
            return false;
        }
        if self.filter.is_empty() {
            return true;
        }
        let needle = self.filter.to_lowercase();
        let pid = row.pid.map(|p| p.to_string()).unwrap_or_default();
        [row.command(), row.user().unwrap_or(""), row.host.map_or("", |h| h.name.as_str()), pid.as_str()]
            .iter()
            .any(|field| field.to_lowercase().contains(&needle))
    }
}

fn compare(column: SortColumn, a: &ProcessRow<'_>, b: &ProcessRow<'_>, now_ms: u64) -> std::cmp::Ordering {
    match column {
        SortColumn::Gpu => a.key.gpu_index.cmp(&b.key.gpu_index).then(a.pid.cmp(&b.pid)),
        SortColumn::Pid => a.pid.cmp(&b.pid),
        SortColumn::User => a.user().cmp(&b.user()),
        SortColumn::GpuMem => a.gpu_mem_bytes().cmp(&b.gpu_mem_bytes()),
        SortColumn::Sm => a.sm_pct().cmp(&b.sm_pct()),
        SortColumn::Gmbw => a.gmbw_pct().cmp(&b.gmbw_pct()),
        SortColumn::Cpu => {
            let cpu = |r: &ProcessRow<'_>| r.host.and_then(|h| h.cpu_pct);
            cpu(a).partial_cmp(&cpu(b)).unwrap_or(std::cmp::Ordering::Equal)
        }
        SortColumn::HostMem => a.host.and_then(|h| h.rss_bytes).cmp(&b.host.and_then(|h| h.rss_bytes)),
        SortColumn::Time => a.elapsed_ms(now_ms).cmp(&b.elapsed_ms(now_ms)),
        SortColumn::Command => a.command().cmp(b.command()),
    }
}

/// One row per NVML (GPU, process) entry.
fn flat_rows(tick: &Tick) -> Vec<ProcessRow<'_>> {
    let mut seen: BTreeMap<(u32, Option<u32>), usize> = BTreeMap::new();
    // One lookup table per call: `Tick::process` is a linear search, quadratic over 8 GPUs x 1,000 processes.
    let by_pid: HashMap<u32, &HostProcess> = tick.processes.iter().map(|p| (p.pid, p)).collect();
    tick.gpu_processes
        .iter()
        .map(|gp| {
            let host = gp.pid.and_then(|pid| by_pid.get(&pid).copied());
            let nth = seen.entry((gp.gpu_index, gp.pid)).or_insert(0);
            let key = RowKey {
                gpu_index: Some(gp.gpu_index),
                pid: gp.pid,
                start_ticks: host.and_then(|h| h.start_ticks),
                nth: *nth,
            };
            *nth += 1;
            ProcessRow { key, pid: gp.pid, gpus: vec![gp], host, depth: 0, last_child: Vec::new() }
        })
        .collect()
}

/// The tree: every host process related to the kept GPU processes, launchers above, workers below, one row
/// per host process (its GPUs merged), in PID order at each level. GPU entries without a host process come last.
fn tree_rows<'a>(tick: &'a Tick, kept: &[ProcessRow<'a>]) -> Vec<ProcessRow<'a>> {
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
    let mut rows = Vec::new();
    let mut stack: Vec<(u32, usize, Vec<bool>)> = Vec::new();
    let roots = children.get(&None).cloned().unwrap_or_default();
    for (i, root) in roots.iter().enumerate().rev() {
        stack.push((*root, 0, vec![i + 1 == roots.len()]));
    }
    while let Some((pid, depth, last_child)) = stack.pop() {
        let host = by_pid.get(&pid).copied();
        let gpus: Vec<&GpuProcess> = kept.iter().filter(|r| r.pid == Some(pid)).flat_map(|r| r.gpus.clone()).collect();
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
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    fn tick(spec: &str) -> Tick {
        SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec")).tick_at(5)
    }

    #[test]
    fn another_users_process_with_unreadable_io_can_still_be_signalled() {
        // What the host sampler reports for a root-owned process seen by an unprivileged user: stat readable
        // (start time known), I/O counters denied. The kernel, not the table, decides whether the signal goes.
        let tick = tick("compute");
        let gpu = tick.gpu_processes.first().expect("a GPU process");
        let mut host = tick.process(gpu.pid.expect("pid")).expect("host").clone();
        host.unreadable = Some("I/O counters: permission denied".to_owned());
        let key = RowKey { gpu_index: Some(gpu.gpu_index), pid: gpu.pid, start_ticks: host.start_ticks, nth: 0 };
        let row = ProcessRow { key, pid: gpu.pid, gpus: vec![gpu], host: Some(&host), depth: 0, last_child: vec![] };
        assert_eq!(row.why_not_signalable(), None);
        // Without a start time there is nothing to check the identity against: no signal.
        host.start_ticks = None;
        host.unreadable = Some("permission denied".to_owned());
        let row = ProcessRow { key, pid: gpu.pid, gpus: vec![gpu], host: Some(&host), depth: 0, last_child: vec![] };
        assert!(row.why_not_signalable().is_some_and(|why| why.contains("permission denied")));
    }

    #[test]
    fn sorts_by_gpu_memory_largest_first_and_inverts() {
        let tick = tick("mixed:8");
        let mut state = TableState { sort: SortColumn::GpuMem, ..TableState::default() };
        let rows = state.rows(&tick, &FixedFilters::default());
        let mem: Vec<Option<u64>> = rows.iter().map(ProcessRow::gpu_mem_bytes).collect();
        assert!(mem.windows(2).all(|w| w[0] >= w[1]), "{mem:?}");
        state.inverted = true;
        let rows = state.rows(&tick, &FixedFilters::default());
        let mem: Vec<Option<u64>> = rows.iter().map(ProcessRow::gpu_mem_bytes).collect();
        assert!(mem.windows(2).all(|w| w[0] <= w[1]), "{mem:?}");
    }

    #[test]
    fn filters_by_text_gpu_and_user() {
        let tick = tick("mixed:8");
        let all = TableState::default().rows(&tick, &FixedFilters::default()).len();
        assert!(all > 3);
        let gpu1 = TableState { only_gpu: Some(1), ..TableState::default() };
        assert!(gpu1.rows(&tick, &FixedFilters::default()).iter().all(|r| r.key.gpu_index == Some(1)));
        let first = TableState::default().rows(&tick, &FixedFilters::default())[0].command().to_owned();
        let word = first.split_whitespace().last().expect("a word").to_owned();
        let text = TableState { filter: word.clone(), ..TableState::default() };
        let matched = text.rows(&tick, &FixedFilters::default());
        assert!(!matched.is_empty() && matched.len() <= all);
        assert!(matched.iter().all(|r| r.command().to_lowercase().contains(&word.to_lowercase())
            || r.user().is_some_and(|u| u.contains(&word))));
        let nobody = TableState { filter: "no-such-process-anywhere".into(), ..TableState::default() };
        assert!(nobody.rows(&tick, &FixedFilters::default()).is_empty());
    }

    #[test]
    fn compute_and_graphics_filters_keep_their_kind() {
        let mut tick = tick("mixed:8");
        tick.gpu_processes[0].kind = crate::sample::ProcessKind::Graphics;
        tick.gpu_processes[1].kind = crate::sample::ProcessKind::ComputeAndGraphics;
        let all = TableState::default().rows(&tick, &FixedFilters::default()).len();
        let graphics = FixedFilters { graphics: true, ..FixedFilters::default() };
        assert_eq!(TableState::default().rows(&tick, &graphics).len(), 2);
        let compute = FixedFilters { compute: true, ..FixedFilters::default() };
        assert_eq!(TableState::default().rows(&tick, &compute).len(), all - 1);
        let both = FixedFilters { compute: true, graphics: true, ..FixedFilters::default() };
        assert_eq!(TableState::default().rows(&tick, &both).len(), all);
    }

    #[test]
    fn the_scroll_follows_the_selection_by_the_least_and_fills_the_page() {
        // Below the page: the selection becomes the last row shown; above it: the first.
        assert_eq!(scroll_offset(0, Some(12), 20, 5), 8);
        assert_eq!(scroll_offset(8, Some(3), 20, 5), 3);
        // On the page: nothing moves.
        assert_eq!(scroll_offset(8, Some(10), 20, 5), 8);
        // Fewer rows than before (or none selected): no blank page below the last row.
        assert_eq!(scroll_offset(8, None, 10, 5), 5);
        assert_eq!(scroll_offset(8, None, 3, 5), 0);
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
