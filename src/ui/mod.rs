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
    /// One line per GPU.
    Compact,
    /// Two lines per GPU: readings, then clocks, link, throttle badges and a sparkline.
    Medium,
    /// A boxed panel per GPU with a history graph, `columns` panels side by side.
    Full { columns: u16 },
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
    /// Lines per finding in the advice pane (1 or 2).
    pub advice_lines: u16,
    pub footer: Rect,
}

const FULL_PANEL_HEIGHT: u16 = 7;

fn take(area: &mut Rect, height: u16) -> Rect {
    let height = height.min(area.height);
    let taken = Rect { height, ..*area };
    area.y += height;
    area.height -= height;
    taken
}

/// The layout of the main screen, or `None` when the terminal is too small.
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
    let n_findings = u16::try_from(app.findings().len()).unwrap_or(u16::MAX);
    let (advice_lines, advice_rows) = if tall { (2, n_findings.clamp(1, 4)) } else { (1, n_findings.clamp(1, 3)) };
    let advice_h = 1 + advice_rows * advice_lines;
    let fixed = 1 + banner_h + 1 + host_h + advice_h;
    let table_min = if tall { 2 + 8 } else { 2 + 4 };
    let room = area.height.saturating_sub(fixed + table_min);
    let columns = (area.width / 100).clamp(1, n_gpus);
    let full_h = n_gpus.div_ceil(columns) * FULL_PANEL_HEIGHT;
    let medium_h = 1 + 2 * n_gpus;
    let compact_h = 1 + n_gpus;
    let (gpu_style, gpus_h) = match app.mode {
        DisplayMode::Compact => (GpuStyle::Compact, compact_h),
        DisplayMode::Full if full_h <= room + table_min - 3 => (GpuStyle::Full { columns }, full_h),
        _ if full_h <= room && area.width >= 100 => (GpuStyle::Full { columns }, full_h),
        _ if medium_h <= room && area.width >= 100 => (GpuStyle::Medium, medium_h),
        _ => (GpuStyle::Compact, compact_h.min(room.max(2))),
    };
    let mut rest = area;
    let header = take(&mut rest, 1);
    let banner = (banner_h > 0).then(|| take(&mut rest, 1));
    let gpus = take(&mut rest, gpus_h);
    let host = take(&mut rest, host_h);
    let footer = Rect { y: rest.y + rest.height.saturating_sub(1), height: 1.min(rest.height), ..rest };
    rest.height = rest.height.saturating_sub(1);
    let advice = Rect { y: rest.y + rest.height.saturating_sub(advice_h), height: advice_h.min(rest.height), ..rest };
    rest.height = rest.height.saturating_sub(advice_h);
    Some(Plan { header, banner, gpus, gpu_style, host, host_full, table: rest, advice, advice_lines, footer })
}

impl App {
    /// nvitop forces the compact host panel in ASCII mode; so do we, braille being unavailable.
    fn ascii_compact_host(&self) -> bool {
        self.ascii
    }
}

/// Rows of the process table that fit in `area` (for paging).
#[must_use]
pub fn table_rows(area: Rect, app: &App) -> usize {
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
            screens::draw_advice(frame, &plan, app, &theme, &glyphs);
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

/// Draws the advice pane alone for `findings` into `buf` (for tests and other screens): one line per finding
/// when `two_lines` is false, else title and remedy on separate lines.
pub fn render_findings(
    findings: &[crate::advice::Finding],
    area: Rect,
    buf: &mut ratatui::buffer::Buffer,
    two_lines: bool,
    theme: config::ThemeName,
    ascii: bool,
) {
    use ratatui::widgets::Widget;
    let refs: Vec<&crate::advice::Finding> = findings.iter().collect();
    let lines = screens::advice_lines(
        &refs,
        None,
        area,
        if two_lines { 2 } else { 1 },
        &Theme::new(theme),
        &Glyphs::new(ascii),
    );
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
