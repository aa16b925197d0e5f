//! The process table: nvitop's columns plus container PID, host memory and state, sortable, filterable, with a
//! tree view. Rows that cannot be read say so instead of showing zeros.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme::{Glyphs, Theme};
use super::{format, paint, title_line};
use crate::app::{App, Focus, ProcessRow, SortColumn};

/// One column: title, width (0 = the rest), right-aligned, and the sort it stands for.
#[derive(Debug, Clone, Copy)]
struct Col {
    title: &'static str,
    width: usize,
    right: bool,
    sort: Option<SortColumn>,
}

const fn col(title: &'static str, width: usize, right: bool, sort: Option<SortColumn>) -> Col {
    Col { title, width, right, sort }
}

fn columns(width: u16, tree: bool) -> Vec<Col> {
    let wide = width >= 110;
    let narrow = width < 100;
    let mut cols = vec![
        col(if tree { "GPUS" } else { "GPU" }, if tree { 5 } else { 4 }, false, Some(SortColumn::Gpu)),
        col("PID", 7, true, Some(SortColumn::Pid)),
    ];
    if wide {
        cols.push(col("CPID", 6, true, None));
    }
    cols.push(col("USER", if narrow { 7 } else { 8 }, false, Some(SortColumn::User)));
    if !narrow {
        cols.push(col("T", 1, false, None));
    }
    cols.extend([
        col("GPU-MEM", 8, true, Some(SortColumn::GpuMem)),
        col("%SM", 4, true, Some(SortColumn::Sm)),
        col("%GMBW", 6, true, Some(SortColumn::Gmbw)),
        col("%CPU", 5, true, Some(SortColumn::Cpu)),
    ]);
    if !narrow {
        cols.push(col("HOST-MEM", 9, true, Some(SortColumn::HostMem)));
    }
    if wide {
        cols.push(col("S", 1, false, None));
    }
    cols.extend([
        col("TIME", if narrow { 8 } else { 10 }, true, Some(SortColumn::Time)),
        col("COMMAND", 0, false, Some(SortColumn::Command)),
    ]);
    cols
}

/// The sort column under x offset `x` of the header row.
#[must_use]
pub fn column_at(width: u16, x: u16, app: &App) -> Option<SortColumn> {
    let mut at = 2usize;
    for c in columns(width, app.table.tree) {
        let w = if c.width == 0 { usize::MAX / 2 } else { c.width };
        if usize::from(x) >= at && usize::from(x) < at + w + 1 {
            return c.sort;
        }
        at += w + 1;
    }
    None
}

fn cells(row: &ProcessRow<'_>, app: &App, glyphs: &Glyphs) -> Vec<String> {
    let host = row.host;
    let gpu = if app.table.tree {
        if row.gpus.is_empty() {
            "Host".to_owned()
        } else {
            row.gpus.iter().map(|g| g.gpu_index.to_string()).collect::<Vec<_>>().join(",")
        }
    } else {
        row.key.gpu_index.map_or_else(|| format::NA.to_owned(), |g| g.to_string())
    };
    let kind = row.gpus.first().map_or("-".to_owned(), |g| g.kind.letter().to_string());
    let command = match (row.pid, host) {
        (None, _) => "N/A (driver ABI: NVML returned no usable PID)".to_owned(),
        (Some(_), None) => "not visible here (outside this PID namespace)".to_owned(),
        (Some(_), Some(h)) if h.unreadable.is_some() => {
            format!("{} [{}]", row.command(), h.unreadable.clone().unwrap_or_default())
        }
        _ => row.command().to_owned(),
    };
    let mut prefix = String::new();
    if app.table.tree && row.depth > 0 {
        for last in &row.last_child[1..row.last_child.len().saturating_sub(1)] {
            prefix.push_str(if *last { glyphs.tree_space } else { glyphs.tree_pipe });
        }
        prefix.push_str(if row.last_child.last().copied().unwrap_or(true) {
            glyphs.tree_last
        } else {
            glyphs.tree_branch
        });
    }
    let now = app.tick().at_ms;
    vec![
        gpu,
        format::num(row.pid, ""),
        host.and_then(crate::sample::HostProcess::container_pid).map_or_else(|| "-".to_owned(), |p| p.to_string()),
        host.and_then(|h| h.user.clone()).unwrap_or_else(|| format::NA.to_owned()),
        kind,
        format::bytes(row.gpu_mem_bytes()),
        format::pct(row.sm_pct()),
        format::pct(row.gmbw_pct()),
        host.and_then(|h| h.cpu_pct).map_or_else(|| format::NA.to_owned(), |c| format!("{c:.0}")),
        format::bytes(host.and_then(|h| h.rss_bytes)),
        host.and_then(|h| h.state).map_or_else(|| "?".to_owned(), |s| s.to_string()),
        format::elapsed_ms(row.elapsed_ms(now)),
        format!("{prefix}{command}"),
    ]
}

fn pad(text: &str, width: usize, right: bool, ascii: bool) -> String {
    let text = format::truncate(text, width, ascii);
    if right { format!("{text:>width$}") } else { format!("{text:<width$}") }
}

fn row_line(values: &[String], cols: &[Col], width: u16, ascii: bool) -> String {
    // `values` has every column (the wide set); pick those shown.
    let names =
        ["GPU", "PID", "CPID", "USER", "T", "GPU-MEM", "%SM", "%GMBW", "%CPU", "HOST-MEM", "S", "TIME", "COMMAND"];
    let mut out = String::new();
    let mut used = 2;
    for c in cols {
        let title = if c.title == "GPUS" { "GPU" } else { c.title };
        let Some(i) = names.iter().position(|n| *n == title) else { continue };
        let w = if c.width == 0 { usize::from(width).saturating_sub(used) } else { c.width };
        out.push_str(&pad(&values[i], w, c.right, ascii));
        out.push(' ');
        used += w + 1;
    }
    out.trim_end().to_owned()
}

pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme, glyphs: &Glyphs) {
    if area.height < 2 {
        return;
    }
    let rows = app.rows();
    let table = &app.table;
    let cols = columns(area.width, table.tree);
    let arrow = if table.inverted ^ table.sort.descending_by_default() { glyphs.down } else { glyphs.up };
    let mut extra = vec![Span::styled(format!("({}) ", rows.len()), theme.dim)];
    let sort_name = cols.iter().find(|c| c.sort == Some(table.sort)).map_or("", |c| c.title);
    extra.push(Span::styled(format!("sort {sort_name}{arrow} "), theme.dim));
    if table.tree {
        extra.push(Span::styled("[tree] ", theme.label));
    }
    if table.editing_filter || !table.filter.is_empty() {
        let cursor = if table.editing_filter { "_" } else { "" };
        extra.push(Span::styled(format!("filter /{}{cursor} ", table.filter), theme.tagged));
    }
    if let Some(gpu) = table.only_gpu {
        extra.push(Span::styled(format!("GPU {gpu} only "), theme.tagged));
    }
    if let Some(user) = &table.only_user {
        extra.push(Span::styled(format!("user {user} "), theme.tagged));
    }
    if !table.tagged.is_empty() {
        extra.push(Span::styled(format!("{} tagged ", table.tagged.len()), theme.tagged));
    }
    if app.is_frozen() {
        extra.push(Span::styled("PAUSED ", theme.banner));
    }
    let selected = app.selected_index(&rows);
    if selected.is_some() && !app.readonly {
        extra.push(Span::styled("(T/K/I: TERM/KILL/INT) ", theme.dim));
    }
    let mut lines = vec![title_line("Processes", extra, area.width, theme, glyphs)];
    let mut header = String::from("  ");
    for c in &cols {
        let mut title = c.title.to_owned();
        if c.sort == Some(table.sort) {
            title.push_str(arrow);
        }
        let w = if c.width == 0 { usize::from(area.width).saturating_sub(header.chars().count()) } else { c.width };
        header.push_str(&pad(&title, w, c.right, glyphs.ascii));
        header.push(' ');
    }
    let header = format!("{:<width$}", header.trim_end(), width = usize::from(area.width));
    lines.push(Line::from(Span::styled(header, theme.header_row)));
    let page = usize::from(area.height - 2);
    let offset = match selected {
        Some(i) if i >= table.offset + page => i + 1 - page,
        Some(i) if i < table.offset => i,
        _ => table.offset.min(rows.len().saturating_sub(page)),
    };
    if rows.is_empty() {
        let why = if app.tick().gpu_processes.is_empty() {
            "no GPU processes"
        } else {
            "no process matches the filters (Esc clears)"
        };
        lines.push(Line::from(Span::styled(format!("  {why}"), theme.dim)));
    }
    for (i, row) in rows.iter().enumerate().skip(offset).take(page) {
        let tagged = table.tagged.contains(&row.key);
        let marker = if tagged { "* " } else { "  " };
        let text = format!(
            "{marker}{}",
            row_line(&cells(row, app, glyphs), &cols, area.width.saturating_sub(2), glyphs.ascii)
        );
        let mut style = theme.base;
        let own = row.host.and_then(|h| h.uid) == Some(app.own_uid);
        if !own {
            style = theme.dim;
        }
        if row.pid.is_none() || row.host.is_none_or(|h| h.unreadable.is_some()) {
            style = theme.moderate;
        }
        if !row.gpus.is_empty() && app.table.tree {
            style = style.add_modifier(Modifier::BOLD);
        }
        if tagged {
            style = theme.tagged;
        }
        if Some(i) == selected && app.focus == Focus::Processes {
            style = theme.selected.patch(Style::default().add_modifier(Modifier::BOLD));
        }
        let text = format!("{text:<width$}", width = usize::from(area.width));
        lines.push(Line::from(Span::styled(text, style)));
    }
    paint(frame, area, lines, theme.base);
}
