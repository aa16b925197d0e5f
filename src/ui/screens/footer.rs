//! The last line: the filter being typed, the last status, or the key hints of the view in front.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::app::App;
use crate::keys::Action;
use crate::ui::paint::{Paint, fill};

/// The last line: the filter being typed, the last status, or the main keys.
#[derive(Debug)]
pub struct Footer<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
}

impl Widget for Footer<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (app, theme) = (self.app, &self.paint.theme);
        fill(area, buf, vec![footer_line(app, theme, usize::from(area.width))], theme.base);
    }
}

fn footer_line<'a>(app: &App, theme: &crate::ui::theme::Theme, width: usize) -> Line<'a> {
    if app.table.editing_filter {
        Line::from(vec![
            Span::styled(" Filter: ", theme.label),
            Span::raw(format!("{}_", app.table.filter)),
            Span::styled("   Enter keeps, Esc clears", theme.dim),
        ])
    } else if let Some(status) = &app.status {
        Line::from(Span::styled(format!(" {status}"), theme.tagged))
    } else {
        let hints = footer_hints(app);
        // As many whole hints as fit; `?` (first) says where the rest are.
        let mut spans = Vec::new();
        let mut used = 0;
        for (key, what) in hints {
            let (key, what) = (format!(" {key}"), format!(" {what} "));
            used += key.chars().count() + what.chars().count();
            if used > width {
                break;
            }
            spans.push(Span::styled(key, theme.title));
            spans.push(Span::styled(what, theme.dim));
        }
        Line::from(spans)
    }
}

/// The footer's key hints: the jobs view's own while it is on, else the process table's.
fn footer_hints(app: &App) -> Vec<(String, &'static str)> {
    let keys = |action: Action| app.keymap.keys(action).first().map_or_else(String::new, ToString::to_string);
    // Two keys side by side: "[]" when each is one character, "Left/Right" otherwise.
    let pair = |a: Action, b: Action| {
        let (a, b) = (keys(a), keys(b));
        if a.chars().count() == 1 && b.chars().count() == 1 { format!("{a}{b}") } else { format!("{a}/{b}") }
    };
    if app.jobs.on {
        // T/K/I reach every rank of the selected job, or the one rank picked with the mouse.
        let signals = format!("{}{}{}", keys(Action::SignalTerm), keys(Action::SignalKill), keys(Action::SignalInt));
        let whom = if app.selected_rank(&app.job_rows()).is_some() { "signal rank" } else { "signal job" };
        return vec![
            (keys(Action::Help), "help"),
            (keys(Action::Quit), "quit"),
            (keys(Action::Jobs), "processes"),
            (keys(Action::Details), "ranks"),
            (signals, whom),
            (keys(Action::Pause), "pause"),
        ];
    }
    let mut hints = vec![
        (keys(Action::Help), "help"),
        (keys(Action::Quit), "quit"),
        (keys(Action::Filter), "filter"),
        (keys(Action::Tree), "tree"),
        (keys(Action::Details), "details"),
        (keys(Action::Pause), "pause"),
        (pair(Action::SortPrev, Action::SortNext), "sort"),
        (pair(Action::SpanShorter, Action::SpanLonger), "span"),
    ];
    if app.playback.is_some() {
        hints.push((pair(Action::SeekBack, Action::SeekForward), "seek"));
        hints.push((pair(Action::Slower, Action::Faster), "speed"));
    } else {
        hints.push((pair(Action::SeekBack, Action::SeekForward), "command"));
    }
    hints
}
