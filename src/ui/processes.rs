//! The process table: nvitop's columns plus container PID, host memory and state, sortable, filterable, with a
//! tree view; the command column scrolls sideways. Rows that cannot be read say so instead of showing zeros.
//! The columns come from [`crate::table::columns`], the one list of them. The scroll offset is the widget's state
//! (ratatui's `StatefulWidget`): drawing settles it by [`crate::table::scroll_offset`] and the hit test maps
//! a click through the offset last drawn, so a click selects the row drawn under the pointer.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{StatefulWidget, Widget};

use super::paint::{Paint, fill};
use crate::app::{App, Focus, Hit};
use crate::table::columns::{self, CellContext, Column};
use crate::table::{ProcessRow, scroll_offset};

/// Cells the command column gets in `width` after the fixed-width columns.
fn command_width(cols: &[&Column], width: u16) -> usize {
    let fixed: usize = cols.iter().filter(|c| c.width > 0).map(|c| usize::from(c.width) + 1).sum();
    usize::from(width).saturating_sub(fixed)
}

/// The process table over the app's rows and table state. Drawn as a `StatefulWidget` its state is the scroll
/// offset ([`crate::table::TableState::offset`]), which it settles; drawn as a `Widget` it settles a copy.
#[derive(Debug)]
pub struct ProcessTable<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
}

impl ProcessTable<'_> {
    /// The tree glyphs before a row's command.
    fn tree_prefix(&self, row: &ProcessRow<'_>) -> String {
        let glyphs = &self.paint.glyphs;
        let mut prefix = String::new();
        if self.app.table.tree && row.depth > 0 {
            for last in &row.last_child[1..row.last_child.len().saturating_sub(1)] {
                prefix.push_str(if *last { glyphs.tree_space } else { glyphs.tree_pipe });
            }
            prefix.push_str(if row.last_child.last().copied().unwrap_or(true) {
                glyphs.tree_last
            } else {
                glyphs.tree_branch
            });
        }
        prefix
    }

    /// One row as text across `width` cells (the two-cell marker not included).
    fn row_text(&self, row: &ProcessRow<'_>, cols: &[&Column], width: u16) -> String {
        let ctx = CellContext { now_ms: self.app.tick().at_ms, tree: self.app.table.tree };
        let texts: Vec<String> = cols
            .iter()
            .map(|c| {
                let text = (c.cell)(row, &ctx);
                if c.width == 0 {
                    // The command scrolls sideways by the table's offset; the tree glyphs stay put.
                    let scrolled: String = text.chars().skip(self.app.table.command_offset).collect();
                    format!("{}{scrolled}", self.tree_prefix(row))
                } else {
                    text
                }
            })
            .collect();
        columns::line(cols, &texts, command_width(cols, width), self.paint.ascii())
    }

    /// What a click at (`column`, `row`) inside `area` (the table's rectangle) landed on: a row (its index in the
    /// rows, through the offset the table was last drawn at) or a column header.
    #[must_use]
    pub fn hit(&self, area: Rect, column: u16, row: u16) -> Option<Hit> {
        if row == area.y {
            return None;
        }
        if row == area.y + 1 {
            let x = usize::from(column.saturating_sub(area.x));
            let mut at = 2usize;
            for c in columns::fit(area.width.saturating_sub(2)) {
                let w = if c.width == 0 { usize::MAX / 2 } else { usize::from(c.width) };
                if x >= at && x < at + w + 1 {
                    return c.sort.map(Hit::Header);
                }
                at += w + 1;
            }
            return None;
        }
        Some(Hit::Row(self.app.table.offset + usize::from(row - area.y - 2)))
    }
}

impl Widget for ProcessTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let mut offset = self.app.table.offset;
        StatefulWidget::render(self, area, buf, &mut offset);
    }
}

impl StatefulWidget for ProcessTable<'_> {
    /// The scroll offset: the first row shown.
    type State = usize;

    fn render(self, area: Rect, buf: &mut Buffer, offset: &mut usize) {
        let (app, paint) = (self.app, self.paint);
        let (theme, glyphs) = (&paint.theme, &paint.glyphs);
        if area.height < 2 {
            return;
        }
        let rows = app.rows();
        let table = &app.table;
        let cols = columns::fit(area.width.saturating_sub(2));
        let arrow = if table.inverted ^ table.sort.descending_by_default() { glyphs.down } else { glyphs.up };
        let selected = app.selected_index(&rows);
        let extra = title_extras(app, paint, arrow, rows.len(), selected);
        let mut lines = vec![paint.title_line("Processes", extra, area.width)];
        let titles: Vec<String> = cols
            .iter()
            .map(|c| if c.sort == Some(table.sort) { format!("{}{arrow}", c.title) } else { c.title.to_owned() })
            .collect();
        let last = command_width(&cols, area.width.saturating_sub(2));
        let header = format!("  {}", columns::line(&cols, &titles, last, glyphs.ascii));
        let header = format!("{header:<width$}", width = usize::from(area.width));
        lines.push(Line::from(Span::styled(header, theme.header_row)));
        *offset = scroll_offset(*offset, selected, rows.len(), usize::from(area.height - 2));
        if rows.is_empty() {
            let why = if app.tick().gpu_processes.is_empty() {
                "no GPU processes"
            } else {
                "no process matches the filters (Esc clears)"
            };
            lines.push(Line::from(Span::styled(format!("  {why}"), theme.dim)));
        }
        let findings = app.findings();
        for (i, row) in rows.iter().enumerate().skip(*offset).take(usize::from(area.height - 2)) {
            let tagged = table.tagged.contains(&row.key);
            let marker = if tagged { "*" } else { " " };
            let worst = row.pid.and_then(|pid| {
                findings
                    .iter()
                    .filter(|f| f.pid == Some(pid) || f.also.iter().any(|a| a.pid == Some(pid)))
                    .map(|f| f.severity)
                    .max()
                    .filter(|s| *s >= crate::advice::Severity::Warning)
            });
            let text = self.row_text(row, &cols, area.width.saturating_sub(2));
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
            let text = format!("{text:<width$}", width = usize::from(area.width.saturating_sub(2)));
            let chip = if worst.is_some() { super::gpus::chip(worst, paint) } else { Span::styled(" ", style) };
            lines.push(Line::from(vec![Span::styled(marker, style), chip, Span::styled(text, style)]));
        }
        fill(area, buf, lines, theme.base);
    }
}

/// What the table's title says after "Processes": the count, the sort, the modes and filters in force, and the
/// signal keys when a row is selected.
fn title_extras(
    app: &App,
    paint: &Paint,
    arrow: &'static str,
    n_rows: usize,
    selected: Option<usize>,
) -> Vec<Span<'static>> {
    let (theme, table) = (&paint.theme, &app.table);
    let mut extra = vec![Span::styled(format!("({n_rows}) "), theme.dim)];
    extra.push(Span::styled(format!("sort {}{arrow} ", columns::title_of(table.sort)), theme.dim));
    if table.tree {
        extra.push(Span::styled("[tree] ", theme.label));
    }
    if table.command_offset > 0 {
        extra.push(Span::styled(format!("command +{} ", table.command_offset), theme.tagged));
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
    if selected.is_some() && !app.readonly {
        extra.push(Span::styled("(T/K/I: TERM/KILL/INT) ", theme.dim));
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::SortColumn;
    use crate::ui::config::ThemeName;
    use crate::ui::test_support::{app, render};

    #[test]
    fn narrow_tables_keep_the_essential_columns_and_the_command_scrolls() {
        let mut app = app("mixed:8", 5);
        let paint = Paint::new(ThemeName::Dark, false);
        let narrow = render(ProcessTable { app: &app, paint: &paint }, 40, 5);
        assert!(narrow[0].starts_with(" Processes (6) sort GPU"), "{narrow:?}");
        assert_eq!(narrow[1].split_whitespace().collect::<Vec<_>>(), ["GPU▲", "PID", "GPU-MEM", "%SM", "COMMAND"]);
        assert!(narrow[2].contains("2001") && narrow[2].contains("python"), "{narrow:?}");
        let wide = render(ProcessTable { app: &app, paint: &paint }, 160, 5);
        assert!(wide[1].contains("CPID") && wide[1].contains("HOST-MEM") && wide[1].contains("TIME"), "{wide:?}");
        app.table.command_offset = 7;
        let scrolled = render(ProcessTable { app: &app, paint: &paint }, 160, 5);
        assert!(scrolled[0].contains("command +7"), "{scrolled:?}");
        assert!(scrolled[2].ends_with("train.py --model llama-8b --batch-size 16 --bf16"), "{scrolled:?}");
        assert!(!scrolled[2].contains("python train.py"), "{scrolled:?}");
    }

    #[test]
    fn hit_says_what_a_click_landed_on() {
        let app = app("mixed:8", 5);
        let paint = Paint::new(ThemeName::Dark, false);
        let table = ProcessTable { app: &app, paint: &paint };
        let area = Rect::new(0, 10, 120, 8);
        assert_eq!(table.hit(area, 5, 10), None, "the title line");
        assert_eq!(table.hit(area, 3, 11), Some(Hit::Header(SortColumn::Gpu)));
        assert_eq!(table.hit(area, 10, 11), Some(Hit::Header(SortColumn::Pid)));
        assert_eq!(table.hit(area, 100, 11), Some(Hit::Header(SortColumn::Command)));
        assert_eq!(table.hit(area, 30, 14), Some(Hit::Row(2)));
    }

    #[test]
    fn drawing_settles_the_offset_that_a_click_maps_through() {
        let mut app = app("mixed:16", 5);
        let paint = Paint::new(ThemeName::Dark, false);
        let rows = app.rows();
        let (n, last) = (rows.len(), rows[rows.len() - 1].key);
        drop(rows);
        app.table.selected = Some(last);
        // Four rows on the page: the frame scrolls to the selected last row and keeps that offset.
        let area = Rect::new(0, 0, 120, 6);
        let mut buf = Buffer::empty(area);
        let mut offset = app.table.offset;
        StatefulWidget::render(ProcessTable { app: &app, paint: &paint }, area, &mut buf, &mut offset);
        assert_eq!(offset, n - 4);
        let last_line: String = (0..area.width).map(|x| buf[(x, 5)].symbol()).collect();
        assert!(last_line.contains(&last.pid.expect("a PID").to_string()), "{last_line}");
        app.table.offset = offset;
        let table = ProcessTable { app: &app, paint: &paint };
        assert_eq!(table.hit(area, 30, 5), Some(Hit::Row(n - 1)), "the last line drawn is the last row");
        assert_eq!(table.hit(area, 30, 2), Some(Hit::Row(n - 4)), "the first line drawn is the offset's row");
    }
}
