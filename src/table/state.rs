//! The table's own state (selection, tags, sort, filters, scroll) and the filters from the command line; from
//! them and a tick, the rows as the table shows them.

use std::collections::BTreeSet;

use super::row::{ProcessRow, RowKey, flat_rows, tree_rows};
use super::sort::{SortColumn, compare};
use crate::sample::Tick;

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

    /// How many rows [`TableState::rows`] gives, without sorting them (the layout asks every frame).
    #[must_use]
    pub fn count(&self, tick: &Tick, fixed: &FixedFilters) -> usize {
        let filtered = fixed.gpus.is_some()
            || fixed.user.is_some()
            || !fixed.pids.is_empty()
            || fixed.compute
            || fixed.graphics
            || self.only_gpu.is_some()
            || self.only_user.is_some()
            || !self.filter.is_empty();
        if self.tree {
            self.rows(tick, fixed).len()
        } else if filtered {
            flat_rows(tick).iter().filter(|row| self.keeps(row, fixed)).count()
        } else {
            // A row per NVML entry, none filtered out.
            tick.gpu_processes.len()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_tick as tick;

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
    fn the_count_is_the_number_of_rows_shown_in_each_view_and_filter() {
        let tick = tick("mixed:8");
        let states = [
            TableState::default(),
            TableState { only_gpu: Some(1), ..TableState::default() },
            TableState { filter: "python".into(), ..TableState::default() },
            TableState { tree: true, ..TableState::default() },
            TableState { tree: true, only_gpu: Some(2), ..TableState::default() },
        ];
        let fixed = [FixedFilters::default(), FixedFilters { compute: true, ..FixedFilters::default() }];
        for state in &states {
            for fixed in &fixed {
                assert_eq!(state.count(&tick, fixed), state.rows(&tick, fixed).len(), "tree {}", state.tree);
            }
        }
    }

    #[test]
    fn repeated_entries_of_one_process_on_one_gpu_get_their_own_rows() {
        let mut tick = tick("mixed:8");
        let first = tick.gpu_processes[0].clone();
        tick.gpu_processes.push(first.clone());
        tick.gpu_processes.push(crate::sample::GpuProcess { pid: None, ..first });
        tick.gpu_processes.push(crate::sample::GpuProcess { pid: None, ..first });
        let rows = TableState::default().rows(&tick, &FixedFilters::default());
        let mut keys: Vec<RowKey> = rows.iter().map(|r| r.key).collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "every row has its own key");
        let gpu = Some(tick.gpu_processes[0].gpu_index);
        let nth_of = |pid: Option<u32>| -> BTreeSet<usize> {
            rows.iter().filter(|r| r.key.pid == pid && r.key.gpu_index == gpu).map(|r| r.key.nth).collect()
        };
        assert_eq!(nth_of(tick.gpu_processes[0].pid), BTreeSet::from([0, 1]), "the repeat is the second");
        assert_eq!(nth_of(None), BTreeSet::from([0, 1]), "two entries without a PID");
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
}
