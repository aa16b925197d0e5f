//! How the process table sorts: the columns it can sort by and their natural order.

use super::row::ProcessRow;

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

pub(super) fn compare(column: SortColumn, a: &ProcessRow<'_>, b: &ProcessRow<'_>, now_ms: u64) -> std::cmp::Ordering {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::test_tick as tick;
    use crate::table::{FixedFilters, TableState};

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
}
