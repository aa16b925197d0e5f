//! Drawing the monitor. Widgets only read the [`App`]; `draw` lays the screen out for the terminal's size
//! (compact rows at 80x24, full panels when there is room) and puts screens and the dialog on top.
//!
//! Architecture invariant: nothing here mutates the app or reads the clock; times come from the samples.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use crate::app::{App, Screen};

mod advice;
pub mod config;
pub mod format;
mod gpus;
pub mod graph;
mod header;
mod host;
mod processes;
mod screens;
pub mod theme;

use config::DisplayMode;
use theme::{Glyphs, Theme};

/// The smallest terminal the monitor draws in; below it a message says what size is needed.
pub const MIN_WIDTH: u16 = 70;
pub const MIN_HEIGHT: u16 = 20;

/// How each GPU is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuStyle {
    /// `per_gpu` lines per GPU (1 to 4): readings; clocks and PCIe link; GPM and throttle badges; a sparkline.
    Lines { per_gpu: u16 },
    /// A boxed panel per GPU `height` rows high with history graphs, `columns` panels side by side.
    Full { columns: u16, height: u16 },
}

/// Where everything goes on the main screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub header: Rect,
    pub banner: Option<Rect>,
    pub gpus: Rect,
    pub gpu_style: GpuStyle,
    pub host: Rect,
    pub host_full: bool,
    pub table: Rect,
    pub advice: Rect,
    /// Title, evidence and remedy of each finding on their own lines (else one line each and a detail line).
    pub advice_tall: bool,
    pub footer: Rect,
}

/// The smallest full panel: a border, five lines of readings and a border.
const FULL_PANEL_HEIGHT: u16 = 7;
/// The tallest panel; past this the graphs are tall enough and the table gets the rest.
const MAX_PANEL_HEIGHT: u16 = 22;

fn take(area: &mut Rect, height: u16) -> Rect {
    let height = height.min(area.height);
    let taken = Rect { height, ..*area };
    area.y += height;
    area.height -= height;
    taken
}

/// The layout of the main screen, or `None` when the terminal is too small.
///
/// The GPU area gets the most detail that still leaves the process table about six rows (eight when tall) and
/// the advice pane its findings: full panels from 100 columns, else four, three, two or one line per GPU. Full
/// panels grow taller (with taller graphs) into rows the process table would leave empty.
#[must_use]
pub fn plan(area: Rect, app: &App) -> Option<Plan> {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    let n_gpus = u16::try_from(gpus::shown(app).len()).unwrap_or(u16::MAX).max(1);
    let tall = area.height >= 40;
    let banner_h = u16::from(header::banner(app).is_some());
    let host_full = tall && !app.ascii_compact_host();
    let host_h = if host_full { 5 } else { 1 };
    let findings = app.findings();
    let advice_max = if tall { (area.height / 4).max(6) } else { 5 };
    let mut advice_h = advice::height(&findings, area.width, tall, advice_max);
    let n_rows = u16::try_from(app.tick().gpu_processes.len()).unwrap_or(u16::MAX).max(1);
    let table_min = 2 + n_rows.min(if tall { 8 } else { 6 });
    let table_want = 2 + n_rows;
    let fixed = 1 + banner_h + host_h + advice_h + 1;
    let room = area.height.saturating_sub(fixed + table_min);
    let columns = (area.width / 100).clamp(1, n_gpus);
    let panel_rows = n_gpus.div_ceil(columns);
    let full_h = panel_rows * FULL_PANEL_HEIGHT;
    let lines_h = |per: u16| 1 + per * n_gpus;
    // One line per GPU must show every GPU: the table gives up rows down to three, then the advice pane.
    let bare = 1 + banner_h + host_h + 1;
    let compact = (GpuStyle::Lines { per_gpu: 1 }, lines_h(1).min(area.height.saturating_sub(bare + 2 + 5)));
    let (gpu_style, gpus_h) = match app.mode {
        DisplayMode::Compact => compact,
        DisplayMode::Full if full_h <= room + table_min - 3 => {
            (GpuStyle::Full { columns, height: FULL_PANEL_HEIGHT }, full_h)
        }
        _ if full_h <= room && area.width >= 100 => {
            // Grow the panels into the rows the table would leave empty (keeping a third of the screen for it).
            let table_keep = table_want.min(area.height / 3).max(table_min);
            let gpu_room = area.height.saturating_sub(fixed + table_keep).max(full_h);
            let height = (gpu_room / panel_rows).clamp(FULL_PANEL_HEIGHT, MAX_PANEL_HEIGHT);
            (GpuStyle::Full { columns, height }, panel_rows * height)
        }
        _ => [4, 3, 2]
            .into_iter()
            .find(|per| lines_h(*per) <= room)
            .map_or(compact, |per| (GpuStyle::Lines { per_gpu: per }, lines_h(per))),
    };
    advice_h = advice_h.min(area.height.saturating_sub(bare + gpus_h + 5)).max(2);
    let mut rest = area;
    let header = take(&mut rest, 1);
    let banner = (banner_h > 0).then(|| take(&mut rest, 1));
    let gpus = take(&mut rest, gpus_h);
    let host = take(&mut rest, host_h);
    let footer = Rect { y: rest.y + rest.height.saturating_sub(1), height: 1.min(rest.height), ..rest };
    rest.height = rest.height.saturating_sub(1);
    let advice = Rect { y: rest.y + rest.height.saturating_sub(advice_h), height: advice_h.min(rest.height), ..rest };
    rest.height = rest.height.saturating_sub(advice_h);
    Some(Plan { header, banner, gpus, gpu_style, host, host_full, table: rest, advice, advice_tall: tall, footer })
}

impl App {
    /// nvitop forces the compact host panel in ASCII mode; so do we, braille being unavailable.
    fn ascii_compact_host(&self) -> bool {
        self.ascii
    }
}

/// Rows that fit in `area` (for paging): the process table's, or the environment screen's while it is shown.
#[must_use]
pub fn table_rows(area: Rect, app: &App) -> usize {
    if matches!(app.screen, Screen::Environment { .. }) {
        // The header, the screen's title and the footer take three rows.
        return usize::from(area.height.saturating_sub(3)).max(1);
    }
    plan(area, app).map_or(1, |p| usize::from(p.table.height.saturating_sub(2)))
}

/// A mouse click at (`column`, `row`): selects a process row or sorts by a header.
pub fn click(area: Rect, app: &mut App, column: u16, row: u16) {
    if app.screen != Screen::Main || app.dialog.is_some() {
        return;
    }
    let Some(plan) = plan(area, app) else { return };
    let table = plan.table;
    if column < table.x || column >= table.x + table.width || row < table.y + 1 || row >= table.y + table.height {
        return;
    }
    if row == table.y + 1 {
        if let Some(sort) = processes::column_at(table.width, column - table.x, app) {
            app.click_header(sort);
        }
    } else {
        app.click_row(usize::from(row - table.y - 2));
    }
}

/// Draws the whole screen for the app's state.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    let theme = Theme::new(app.theme);
    let glyphs = Glyphs::new(app.ascii);
    frame.render_widget(Block::default().style(theme.base), area);
    let Some(plan) = plan(area, app) else {
        draw_too_small(frame, area, &theme);
        return;
    };
    match &app.screen {
        Screen::Main => {
            header::draw(frame, &plan, app, &theme, &glyphs);
            gpus::draw(frame, &plan, app, &theme, &glyphs);
            host::draw(frame, &plan, app, &theme, &glyphs);
            processes::draw(frame, plan.table, app, &theme, &glyphs);
            draw_advice(frame, &plan, app, &theme, &glyphs);
            screens::draw_footer(frame, plan.footer, app, &theme);
        }
        screen => {
            header::draw(frame, &plan, app, &theme, &glyphs);
            let body = Rect { y: area.y + 1, height: area.height - 2, ..area };
            screens::draw_screen(frame, body, screen, app, &theme, &glyphs);
            screens::draw_footer(frame, plan.footer, app, &theme);
        }
    }
    if let Some(dialog) = &app.dialog {
        screens::draw_dialog(frame, area, dialog, &theme, &glyphs);
    }
}

fn draw_too_small(frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
    let lines = vec![
        Line::from(Span::styled("Terminal too small", theme.title)),
        Line::from(format!(
            "gpusight needs at least {MIN_WIDTH}x{MIN_HEIGHT}; this one is {}x{}.",
            area.width, area.height
        )),
        Line::from("Enlarge the window or pane (q quits)."),
    ];
    let height = u16::try_from(lines.len()).unwrap_or(3).min(area.height);
    let y = area.y + area.height.saturating_sub(height) / 2;
    let rect = Rect { y, height, ..area };
    frame.render_widget(Paragraph::new(lines).alignment(Alignment::Center).wrap(Wrap { trim: true }), rect);
}

fn draw_advice(frame: &mut Frame<'_>, plan: &Plan, app: &App, theme: &Theme, glyphs: &Glyphs) {
    let findings = app.findings();
    let focused = app.focus == crate::app::Focus::Advice;
    let lines = advice::lines(&findings, app.advice_selected, focused, plan.advice, plan.advice_tall, theme, glyphs);
    paint(frame, plan.advice, lines, theme.base);
}

/// Draws the advice pane alone for `findings` into `buf` (for tests and other screens): one line per finding and
/// a detail line when `tall` is false, else title, evidence and remedy on their own lines.
pub fn render_findings(
    findings: &[crate::advice::Finding],
    area: Rect,
    buf: &mut ratatui::buffer::Buffer,
    tall: bool,
    theme: config::ThemeName,
    ascii: bool,
) {
    use ratatui::widgets::Widget;
    let refs: Vec<&crate::advice::Finding> = findings.iter().collect();
    let lines = advice::lines(&refs, 0, false, area, tall, &Theme::new(theme), &Glyphs::new(ascii));
    Paragraph::new(lines).render(area, buf);
}

/// A section title: " Title ─────" across the width, with `extra` after the title.
fn title_line<'a>(title: &str, extra: Vec<Span<'a>>, width: u16, theme: &Theme, glyphs: &Glyphs) -> Line<'a> {
    let mut spans = vec![Span::styled(format!(" {title} "), theme.title)];
    spans.extend(extra);
    let used: usize = spans.iter().map(Span::width).sum();
    let rule = if glyphs.ascii { "-" } else { "─" };
    spans.push(Span::styled(rule.repeat(usize::from(width).saturating_sub(used + 1)), theme.border));
    Line::from(spans)
}

/// A bar of `width` cells filled to `pct`.
fn bar(pct: Option<f64>, width: usize, glyphs: &Glyphs) -> String {
    let Some(pct) = pct else { return " ".repeat(width) };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let filled = ((pct / 100.0).clamp(0.0, 1.0) * width as f64).round() as usize;
    let mut s: String = std::iter::repeat_n(glyphs.bar_full, filled).collect();
    s.extend(std::iter::repeat_n(glyphs.bar_empty, width - filled));
    s
}

/// Renders lines into an area, clearing it first.
fn paint(frame: &mut Frame<'_>, area: Rect, lines: Vec<Line<'_>>, style: Style) {
    frame.render_widget(Clear, area);
    frame.render_widget(Paragraph::new(lines).style(style), area);
}
