//! Drawing the monitor. Each part of the screen is a widget over a borrowed [`App`] ([`Header`], [`GpuArea`],
//! [`HostPanel`], [`ProcessTable`], [`AdvicePane`], the sub-screens and the dialog), painted with one
//! [`Paint`] (theme and glyphs). [`layout::plan`] decides where they go from the size alone; [`hit_test`] says
//! what a click landed on, and the app decides what that does.
//!
//! Architecture invariant: nothing here reads the clock (times come from the samples) or mutates the app, except
//! the process table's scroll offset, which [`draw`] hands the table as its state (ratatui's `StatefulWidget`) so
//! that the offset a frame is drawn at is the one a click maps through.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, StatefulWidget, Widget, Wrap};

use crate::app::{App, Focus, Hit, Screen};

mod advice;
pub mod blit;
/// The `[ui]` section of the config file lives in [`crate::config::ui`] (the app reads it too); named here for the widgets.
pub use crate::config::ui as config;
pub mod fleet;
mod gpus;
pub mod graph;
mod header;
mod host;
mod jobs;
pub mod layout;
pub mod paint;
mod processes;
mod screens;
pub mod theme;

pub use advice::{AdvicePane, JobBar, job_bars};
pub use gpus::GpuArea;
pub use header::Header;
pub use host::HostPanel;
pub use layout::{AdviceStyle, GpuStyle, LayoutInput, MIN_HEIGHT, MIN_WIDTH, Plan};
pub use paint::Paint;
pub use processes::ProcessTable;

/// The layout of the main screen for the app's state in `area`, or `None` when the terminal is too small.
#[must_use]
pub fn plan(area: Rect, app: &App, paint: &Paint) -> Option<Plan> {
    // A short screen has no footer row; a status or the filter being typed then takes the last row, and the
    // rest is laid out above it (so it covers nothing) while that leaves at least the smallest screen.
    let needs_row = app.status.is_some() || app.table.editing_filter;
    if needs_row && area.height < layout::FOOTER_FROM && area.height > MIN_HEIGHT {
        let mut plan = plan_in(Rect { height: area.height - 1, ..area }, app, paint)?;
        plan.footer = Some(Rect { y: area.y + area.height - 1, height: 1, ..area });
        return Some(plan);
    }
    plan_in(area, app, paint)
}

fn plan_in(area: Rect, app: &App, paint: &Paint) -> Option<Plan> {
    let findings = app.findings();
    let judging = app.judging();
    let cleared = app.cleared().len();
    let (advice_full, advice_least) =
        advice::need(&findings, app.advice_selected, area.width, paint, judging.as_ref(), cleared);
    let count = |n: usize| u16::try_from(n).unwrap_or(u16::MAX).max(1);
    let mut plan = layout::plan(&LayoutInput {
        width: area.width,
        height: area.height,
        n_gpus: count(gpus::shown(app).len()),
        n_rows: count(if app.jobs.on { jobs::table_lines(app, &app.job_rows()) } else { app.row_count() }),
        banner: header::banner(app).is_some(),
        host_graphs: !app.ascii,
        mode: app.mode,
        advice_full,
        advice_least,
        bars: u16::try_from(advice::job_bars(app.accounts(), &findings).len()).unwrap_or(u16::MAX),
    })?;
    for rect in [&mut plan.header, &mut plan.gpus, &mut plan.table, &mut plan.advice]
        .into_iter()
        .chain(plan.banner.as_mut())
        .chain(plan.host.as_mut())
        .chain(plan.footer.as_mut())
    {
        rect.x += area.x;
        rect.y += area.y;
    }
    Some(plan)
}

/// Rows that fit in `area` (for paging): the process table's, or a sub-screen's while one is shown.
#[must_use]
pub fn table_rows(area: Rect, app: &App) -> usize {
    if !matches!(app.screen, Screen::Main) {
        // The header, the screen's title and the footer take three rows.
        return usize::from(area.height.saturating_sub(3)).max(1);
    }
    let paint = Paint::for_app(app);
    plan(area, app, &paint).map_or(1, |p| usize::from(p.table.height.saturating_sub(2)))
}

/// What the status line says after `f` in a terminal of `area` where the full GPU panels do not fit (the layout
/// falls back to lines per GPU); `None` where they are shown.
#[must_use]
pub fn mode_note(area: Rect, app: &App) -> Option<String> {
    if app.mode != crate::config::ui::DisplayMode::Full {
        return None;
    }
    let paint = Paint::for_app(app);
    let full = plan(area, app, &paint).is_some_and(|p| matches!(p.gpu_style, layout::GpuStyle::Full { .. }));
    (!full).then(|| {
        format!(
            "full GPU panels do not fit in {}x{} with {} GPUs: lines per GPU instead (a larger terminal shows them)",
            area.width,
            area.height,
            gpus::shown(app).len()
        )
    })
}

/// The last offset the sub-screen in front scrolls to in a terminal of `area` (the explanation screen's), `None`
/// for the others.
#[must_use]
pub fn scroll_end(area: Rect, app: &App) -> Option<usize> {
    let Screen::Explain { index, .. } = app.screen else { return None };
    let paint = Paint::for_app(app);
    // The header, the screen's title and the footer take three rows.
    let visible = usize::from(area.height.saturating_sub(3));
    Some(screens::explain_lines(app, index, area.width, &paint).saturating_sub(visible))
}

/// What a mouse click at (`column`, `row`) landed on: a process row, a column header or a finding.
#[must_use]
pub fn hit_test(area: Rect, app: &App, column: u16, row: u16) -> Option<Hit> {
    if app.screen != Screen::Main || app.dialog.is_some() {
        return None;
    }
    let paint = Paint::for_app(app);
    let plan = plan(area, app, &paint)?;
    let inside = |r: Rect| column >= r.x && column < r.x + r.width && row >= r.y && row < r.y + r.height;
    if inside(plan.table) && app.jobs.on {
        return jobs::JobsTable { app, paint: &paint }.hit(plan.table, column, row);
    }
    if inside(plan.table) {
        let table = ProcessTable { app, paint: &paint };
        return table.hit(plan.table, column, row);
    }
    if inside(plan.advice) && !app.findings().is_empty() {
        let findings = app.findings();
        let pane = AdvicePane {
            findings: &findings,
            selected: app.advice_selected,
            focused: app.focus == Focus::Advice,
            style: plan.advice_style,
            paint: &paint,
            judging: None,
            cleared: &[],
            bars: &shown_bars(app, &plan),
        };
        return Some(pane.finding_at(plan.advice, row).map_or(Hit::Advice, Hit::Finding));
    }
    None
}

/// Draws the whole screen for the app's state, keeping the process table's scroll offset the frame settles (the
/// monitor draws with this: clicks then map through what was drawn).
pub fn draw(frame: &mut Frame<'_>, app: &mut App) {
    let area = frame.area();
    let mut offset = app.table.offset;
    frame.render_stateful_widget(Monitor { app }, area, &mut offset);
    app.table.offset = offset;
}

/// Draws the same screen as [`draw`] without keeping the scroll offset (screenshots and tests of one frame).
pub fn draw_view(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    let mut offset = app.table.offset;
    frame.render_stateful_widget(Monitor { app }, area, &mut offset);
}

/// The whole screen as one widget: the main screen or a sub-screen, and the dialog on top. Its state is the
/// process table's scroll offset.
struct Monitor<'a> {
    app: &'a App,
}

impl StatefulWidget for Monitor<'_> {
    type State = usize;

    fn render(self, area: Rect, buf: &mut Buffer, offset: &mut usize) {
        let app = self.app;
        let paint = Paint::for_app(app);
        blit::restyle(area, buf, paint.theme.base);
        let Some(plan) = plan(area, app, &paint) else {
            TooSmall { paint: &paint }.render(area, buf);
            return;
        };
        let header = Header { app, paint: &paint, host_folded: plan.host.is_none() };
        match &app.screen {
            Screen::Main => {
                header.render(plan.header, buf);
                if let Some(banner) = plan.banner {
                    header::Banner { app, paint: &paint }.render(banner, buf);
                }
                GpuArea { app, paint: &paint, style: plan.gpu_style }.render(plan.gpus, buf);
                if let Some(host) = plan.host {
                    HostPanel { app, paint: &paint, full: plan.host_full }.render(host, buf);
                }
                if app.jobs.on {
                    jobs::JobsTable { app, paint: &paint }.render(plan.table, buf);
                } else {
                    StatefulWidget::render(ProcessTable { app, paint: &paint }, plan.table, buf, offset);
                }
                let findings = app.findings();
                let judging = app.judging();
                let cleared = app.cleared();
                AdvicePane {
                    findings: &findings,
                    selected: app.advice_selected,
                    focused: app.focus == Focus::Advice,
                    style: plan.advice_style,
                    paint: &paint,
                    judging: judging.as_ref(),
                    cleared: &cleared,
                    bars: &shown_bars(app, &plan),
                }
                .render(plan.advice, buf);
            }
            screen => {
                header.render(plan.header, buf);
                let footer_h = u16::from(plan.footer.is_some());
                let body = Rect { y: area.y + 1, height: area.height.saturating_sub(1 + footer_h), ..area };
                screens::SubScreen { app, paint: &paint, screen }.render(body, buf);
            }
        }
        if let Some(footer) = plan.footer {
            screens::Footer { app, paint: &paint }.render(footer, buf);
        } else if app.status.is_some() || app.table.editing_filter {
            // No footer row: the status or the filter being typed takes the last row.
            let last = Rect { y: area.y + area.height - 1, height: 1, ..area };
            screens::Footer { app, paint: &paint }.render(last, buf);
        }
        if let Some(dialog) = &app.dialog {
            screens::Dialog { dialog, paint: &paint }.render(area, buf);
        }
    }
}

/// The jobs' bars the advice pane draws under `plan`: the jobs that waited longest, as many as it gives rows.
fn shown_bars(app: &App, plan: &Plan) -> Vec<JobBar> {
    let mut bars = advice::job_bars(app.accounts(), &app.findings());
    bars.truncate(usize::from(plan.advice_bars));
    bars
}

/// Below the smallest size: what is needed.
struct TooSmall<'a> {
    paint: &'a Paint,
}

impl Widget for TooSmall<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let lines = vec![
            Line::from(Span::styled("Terminal too small", self.paint.theme.title)),
            Line::from(format!("needs {MIN_WIDTH}x{MIN_HEIGHT}; this is {}x{}", area.width, area.height)),
            Line::from("(q quits)"),
        ];
        let height = u16::try_from(lines.len()).unwrap_or(3).min(area.height);
        let y = area.y + area.height.saturating_sub(height) / 2;
        let rect = Rect { y, height, ..area };
        Paragraph::new(lines).alignment(Alignment::Center).wrap(Wrap { trim: true }).render(rect, buf);
    }
}

/// Draws the advice pane alone for `findings` into `buf` (for tests and other screens), as a pane.
pub fn render_findings(findings: &[crate::advice::Finding], area: Rect, buf: &mut Buffer, paint: &Paint) {
    let refs: Vec<&crate::advice::Finding> = findings.iter().collect();
    AdvicePane {
        findings: &refs,
        selected: 0,
        focused: false,
        style: AdviceStyle::Pane,
        paint,
        judging: None,
        cleared: &[],
        bars: &[],
    }
    .render(area, buf);
}

/// Helpers for the widgets' buffer tests: an app on a synthetic machine and a widget drawn into a buffer.
#[cfg(test)]
pub(crate) mod test_support {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;

    use crate::app::{App, AppOptions, Feed, FeedEvent};
    use crate::source::Source;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    /// An app fed `n_ticks` ticks of a synthetic scenario.
    pub fn app(spec: &str, n_ticks: u64) -> App {
        let mut source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"));
        let first = source.next_snapshot().expect("tick").expect("some");
        let (_tx, rx) = std::sync::mpsc::channel();
        let options = AppOptions { own_uid: 1001, history_capacity: 600, ..AppOptions::default() };
        let mut app = App::new(options, &Feed::Live { first: Box::new(first), backlog: Vec::new(), rx }).expect("app");
        for _ in 1..n_ticks {
            let snapshot = source.next_snapshot().expect("tick").expect("some");
            app.on_feed(FeedEvent::Snapshot(Box::new(snapshot)));
        }
        app
    }

    /// `widget` drawn into a `width` x `height` buffer, as lines with trailing spaces trimmed.
    pub fn render(widget: impl Widget, width: u16, height: u16) -> Vec<String> {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        widget.render(area, &mut buf);
        (0..height)
            .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect::<String>().trim_end().to_owned())
            .collect()
    }
}
