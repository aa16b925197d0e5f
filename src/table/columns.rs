//! The process table's columns, in one list: title, width, alignment, the sort it stands for, which to drop
//! first when the terminal is narrow, and how to write a row's cell. The monitor's table, its header clicks and
//! `--once` all read this list; adding a column is adding an entry here.

use super::{ProcessRow, SortColumn};
use crate::sample::HostProcess;
use crate::units;
use std::fmt::Write as _;

/// Which column: for views that show a subset (the fleet view has no host readings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnId {
    Gpu,
    Pid,
    ContainerPid,
    User,
    Kind,
    GpuMem,
    Sm,
    Gmbw,
    Cpu,
    HostMem,
    State,
    Time,
    Command,
}

/// How a column's text sits in its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// What a cell needs besides its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellContext {
    /// The tick's time, for the TIME column.
    pub now_ms: u64,
    /// The table is a tree (the GPU column lists every GPU of the process).
    pub tree: bool,
}

/// One column of the process table.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub id: ColumnId,
    pub title: &'static str,
    /// Cells wide; 0 for the last column, which takes the rest.
    pub width: u16,
    pub align: Align,
    pub sort: Option<SortColumn>,
    /// Narrow terminals drop the columns with the highest number first; 0 is never dropped.
    pub drop_order: u8,
    pub cell: fn(&ProcessRow<'_>, &CellContext) -> String,
}

/// A process's GPU: its index, with `/GI` (the GPU instance id) for a process on a MIG slice.
fn gpu_and_slice(p: &crate::sample::GpuProcess) -> String {
    match p.gpu_instance_id {
        Some(gi) => format!("{}/{gi}", p.gpu_index),
        None => p.gpu_index.to_string(),
    }
}

fn gpu(row: &ProcessRow<'_>, ctx: &CellContext) -> String {
    if ctx.tree {
        if row.gpus.is_empty() {
            "Host".to_owned()
        } else {
            row.gpus.iter().map(|g| gpu_and_slice(g)).collect::<Vec<_>>().join(",")
        }
    } else if let Some(p) = row.gpus.first().filter(|p| p.gpu_instance_id.is_some()) {
        gpu_and_slice(p)
    } else {
        row.key.gpu_index.map_or_else(|| units::NA.to_owned(), |g| g.to_string())
    }
}

fn command(row: &ProcessRow<'_>, _: &CellContext) -> String {
    match (row.pid, row.host) {
        (None, _) => "N/A (driver ABI: NVML returned no usable PID)".to_owned(),
        (Some(_), None) => "not visible here (outside this PID namespace)".to_owned(),
        (Some(_), Some(h)) if h.unreadable.is_some() => {
            format!("{} [{}]", row.command(), h.unreadable.clone().unwrap_or_default())
        }
        _ => row.command().to_owned(),
    }
}

const fn column(
    id: ColumnId,
    title: &'static str,
    width: u16,
    align: Align,
    sort: Option<SortColumn>,
    drop_order: u8,
    cell: fn(&ProcessRow<'_>, &CellContext) -> String,
) -> Column {
    Column { id, title, width, align, sort, drop_order, cell }
}

/// Every column, left to right.
pub const COLUMNS: &[Column] = &[
    column(ColumnId::Gpu, "GPU", 4, Align::Left, Some(SortColumn::Gpu), 0, gpu),
    column(ColumnId::Pid, "PID", 7, Align::Right, Some(SortColumn::Pid), 0, |row, _| units::num(row.pid, "")),
    column(ColumnId::ContainerPid, "CPID", 6, Align::Right, None, 9, |row, _| {
        row.host.and_then(HostProcess::container_pid).map_or_else(|| "-".to_owned(), |p| p.to_string())
    }),
    column(ColumnId::User, "USER", 8, Align::Left, Some(SortColumn::User), 3, |row, _| {
        row.user().map_or_else(|| units::NA.to_owned(), ToOwned::to_owned)
    }),
    column(ColumnId::Kind, "T", 1, Align::Left, None, 7, |row, _| {
        row.gpus.first().map_or("-".to_owned(), |g| g.kind.letter().to_string())
    }),
    column(ColumnId::GpuMem, "GPU-MEM", 8, Align::Right, Some(SortColumn::GpuMem), 0, |row, _| {
        units::bytes(row.gpu_mem_bytes())
    }),
    column(ColumnId::Sm, "%SM", 4, Align::Right, Some(SortColumn::Sm), 0, |row, _| units::pct(row.sm_pct())),
    column(ColumnId::Gmbw, "%GMBW", 6, Align::Right, Some(SortColumn::Gmbw), 5, |row, _| units::pct(row.gmbw_pct())),
    column(ColumnId::Cpu, "%CPU", 5, Align::Right, Some(SortColumn::Cpu), 2, |row, _| {
        row.host.and_then(|h| h.cpu_pct).map_or_else(|| units::NA.to_owned(), |c| format!("{c:.0}"))
    }),
    column(ColumnId::HostMem, "HOST-MEM", 9, Align::Right, Some(SortColumn::HostMem), 6, |row, _| {
        units::bytes(row.host.and_then(|h| h.rss_bytes))
    }),
    column(ColumnId::State, "S", 1, Align::Left, None, 8, |row, _| {
        row.host.and_then(|h| h.state).map_or_else(|| "?".to_owned(), |s| s.to_string())
    }),
    column(ColumnId::Time, "TIME", 9, Align::Right, Some(SortColumn::Time), 4, |row, ctx| {
        units::elapsed_ms(row.elapsed_ms(ctx.now_ms))
    }),
    column(ColumnId::Command, "COMMAND", 0, Align::Left, Some(SortColumn::Command), 0, command),
];

/// The narrowest the command column gets before another column is dropped.
const MIN_COMMAND: u16 = 24;

/// The columns shown in `width` cells (after the two-cell row marker): the most that leave the command at least
/// `MIN_COMMAND` cells, dropping by [`Column::drop_order`].
#[must_use]
pub fn fit(width: u16) -> Vec<&'static Column> {
    let mut limit = u8::MAX;
    loop {
        let shown: Vec<&Column> = COLUMNS.iter().filter(|c| c.drop_order < limit).collect();
        let used: u16 = shown.iter().map(|c| c.width + 1).sum();
        let next = shown.iter().map(|c| c.drop_order).filter(|d| *d > 0).max();
        match next {
            Some(highest) if used + MIN_COMMAND > width => limit = highest,
            _ => return shown,
        }
    }
}

/// The columns with these ids, in the table's order.
#[must_use]
pub fn only(ids: &[ColumnId]) -> Vec<&'static Column> {
    COLUMNS.iter().filter(|c| ids.contains(&c.id)).collect()
}

/// One row as text: each column padded (or cut with `…`, `~` in ASCII) to its width, the last one to
/// `last_width` characters, separated by a space; trailing spaces trimmed.
#[must_use]
pub fn row_text(
    row: &ProcessRow<'_>,
    columns: &[&Column],
    ctx: &CellContext,
    last_width: usize,
    ascii: bool,
) -> String {
    let texts: Vec<String> = columns.iter().map(|c| (c.cell)(row, ctx)).collect();
    line(columns, &texts, last_width, ascii)
}

/// The titles as a header line, laid out like [`row_text`].
#[must_use]
pub fn header_text(columns: &[&Column], last_width: usize, ascii: bool) -> String {
    let titles: Vec<String> = columns.iter().map(|c| c.title.to_owned()).collect();
    line(columns, &titles, last_width, ascii)
}

/// `texts` (one per column) laid out as a line: each padded or cut to its column's width, the last column to
/// `last_width`, separated by a space; trailing spaces trimmed.
#[must_use]
pub fn line(columns: &[&Column], texts: &[String], last_width: usize, ascii: bool) -> String {
    let mut out = String::new();
    for (c, text) in columns.iter().zip(texts) {
        let width = if c.width == 0 { last_width } else { usize::from(c.width) };
        let text = units::truncate(text, width, ascii);
        match c.align {
            Align::Right => {
                let _ = write!(out, "{text:>width$} ");
            }
            Align::Left => {
                let _ = write!(out, "{text:<width$} ");
            }
        }
    }
    out.trim_end().to_owned()
}

/// The title of the column that sorts by `sort`.
#[must_use]
pub fn title_of(sort: SortColumn) -> &'static str {
    COLUMNS.iter().find(|c| c.sort == Some(sort)).map_or("", |c| c.title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sort_has_exactly_one_column() {
        for sort in SortColumn::ALL {
            assert_eq!(COLUMNS.iter().filter(|c| c.sort == Some(sort)).count(), 1, "{sort:?}");
        }
    }

    #[test]
    fn narrow_tables_drop_columns_in_order_and_keep_the_command() {
        let titles = |w| fit(w).iter().map(|c| c.title).collect::<Vec<_>>();
        assert_eq!(titles(200).len(), COLUMNS.len());
        let narrow = titles(38);
        assert_eq!(narrow, vec!["GPU", "PID", "GPU-MEM", "%SM", "COMMAND"]);
        let mid = titles(78);
        assert!(mid.contains(&"USER") && mid.contains(&"TIME") && !mid.contains(&"CPID"), "{mid:?}");
        for w in 38..200 {
            let used: u16 = fit(w).iter().map(|c| c.width + 1).sum();
            assert!(used + MIN_COMMAND <= w || fit(w).iter().all(|c| c.drop_order == 0), "{w}");
        }
    }
}
