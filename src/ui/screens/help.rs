//! The help screen: every action with its keys, generated from the keymap, in one or two columns.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::keys::Action;
use crate::ui::paint::{Paint, fill};
use crate::units;

/// What a help row is about, for how it is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HelpKind {
    /// An action that works wherever its keys do.
    Plain,
    /// An action that sends a signal: dimmed where signals are off (`--readonly`).
    Signal,
}

/// One row of the help screen: an action's keys, what it does, and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HelpRow {
    keys: String,
    help: &'static str,
    kind: HelpKind,
}

/// The help entries: keys and what they do (the playback keys only while a recording plays).
fn help_entries(app: &App) -> Vec<HelpRow> {
    Action::ALL
        .iter()
        .filter(|a| {
            app.playback.is_some()
                || !matches!(
                    a,
                    Action::SeekBackLong
                        | Action::SeekForwardLong
                        | Action::JumpStart
                        | Action::JumpEnd
                        | Action::Slower
                        | Action::Faster
                )
        })
        .map(|a| HelpRow {
            keys: app.keymap.describe(*a),
            help: a.help(),
            kind: if a.signal().is_some() { HelpKind::Signal } else { HelpKind::Plain },
        })
        .collect()
}

/// The help screen's lines at `width`: every entry with its description wrapped beside the keys, in two
/// columns from 120 cells, then the notes (wrapped too).
#[must_use]
pub fn help_lines<'a>(app: &App, paint: &Paint, width: u16) -> Vec<Line<'a>> {
    let theme = &paint.theme;
    let entries = help_entries(app);
    let columns = if width >= 120 { 2 } else { 1 };
    let col_w = usize::from(width) / columns;
    let keys_w = entries.iter().map(|e| e.keys.chars().count()).max().unwrap_or(8).clamp(6, 16).min(col_w / 3);
    let text_w = col_w.saturating_sub(keys_w + 3).max(10);
    // Each entry as its own block of lines.
    let blocks: Vec<Vec<Line<'a>>> = entries
        .iter()
        .map(|HelpRow { keys, help, kind }| {
            let dim = app.readonly && *kind == HelpKind::Signal;
            let style = if dim { theme.dim } else { theme.base };
            let key_lines = units::wrap(keys, keys_w);
            let help_lines = units::wrap(help, text_w);
            (0..key_lines.len().max(help_lines.len()))
                .map(|n| {
                    let k = key_lines.get(n).map_or("", String::as_str);
                    let h = help_lines.get(n).map_or("", String::as_str);
                    Line::from(vec![
                        Span::styled(format!(" {k:>keys_w$} "), theme.title),
                        Span::styled(format!(" {h:<text_w$}"), style),
                    ])
                })
                .collect()
        })
        .collect();
    let mut lines = Vec::new();
    if columns == 1 {
        lines.extend(blocks.into_iter().flatten());
    } else {
        let half = blocks.len().div_ceil(2);
        let (left, right) = blocks.split_at(half);
        let left: Vec<Line<'a>> = left.iter().flatten().cloned().collect();
        let right: Vec<Line<'a>> = right.iter().flatten().cloned().collect();
        for n in 0..left.len().max(right.len()) {
            let mut spans: Vec<Span<'a>> =
                left.get(n).map_or_else(|| vec![Span::raw(" ".repeat(keys_w + 3 + text_w))], |l| l.spans.clone());
            if let Some(r) = right.get(n) {
                spans.extend(r.spans.clone());
            }
            lines.push(Line::from(spans));
        }
    }
    lines.push(Line::from(""));
    let notes = [
        format!(
            "Process type: C compute, G graphics, X both. Load colours: green below {} %, yellow, then magenta from \
             {} % (memory {} %), set under [ui.load_colors]; red is kept for faults, and findings are INFO, WARN (on \
             yellow) or CRIT (on red).",
            paint.load.light_below_pct, paint.load.heavy_from_pct, paint.load.memory_heavy_from_pct
        ),
        "Left/Right scroll the command column (seek while a recording plays). Enter on a finding (after ^W) \
         selects its process and GPU, so T, K and I act on it; x explains the finding."
            .to_owned(),
        format!("Sampling every {:.1} s. Keys can be changed under [keys] in the config.", app.interval.as_secs_f64()),
    ];
    for note in notes {
        for line in units::wrap(&note, usize::from(width).saturating_sub(2)) {
            lines.push(Line::from(Span::styled(format!(" {line}"), theme.dim)));
        }
    }
    lines
}

pub(super) fn render_help(area: Rect, buf: &mut Buffer, offset: usize, app: &App, paint: &Paint) {
    let theme = &paint.theme;
    let body = help_lines(app, paint, area.width);
    let visible = usize::from(area.height.saturating_sub(1));
    let offset = offset.min(body.len().saturating_sub(visible));
    let more = body.len().saturating_sub(offset + visible);
    let hint = match (offset > 0 || more > 0, area.width >= 70) {
        (true, true) => format!("(Up/Down scroll, {more} more below; other keys return) "),
        (true, false) => format!("({more} more, Up/Down) "),
        (false, _) => "(any key returns) ".to_owned(),
    };
    let mut lines = vec![paint.title_line("Keys", vec![Span::styled(hint, theme.dim)], area.width)];
    lines.extend(body.into_iter().skip(offset).take(visible));
    fill(area, buf, lines, theme.base);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::config::ThemeName;
    use crate::ui::test_support::app;

    #[test]
    fn help_dims_exactly_the_signal_rows_in_read_only_mode() {
        let paint = Paint::new(ThemeName::Dark, false);
        let mut app = app("compute", 2);
        // The description span of each row at a width where every description fits on one line.
        let styles = |app: &App| -> Vec<(String, ratatui::style::Style)> {
            help_lines(app, &paint, 200)
                .iter()
                .flat_map(|l| l.spans.iter().skip(1).step_by(2))
                .map(|s| (s.content.trim().to_owned(), s.style))
                .filter(|(text, _)| !text.is_empty())
                .collect()
        };
        assert!(styles(&app).iter().all(|(_, style)| *style != paint.theme.dim), "nothing dimmed by default");
        app.readonly = true;
        let dimmed: Vec<String> =
            styles(&app).into_iter().filter(|(_, style)| *style == paint.theme.dim).map(|(text, _)| text).collect();
        let signals: Vec<&str> = Action::ALL.iter().filter(|a| a.signal().is_some()).map(|a| a.help()).collect();
        assert_eq!(dimmed, signals);
    }

    #[test]
    fn help_wraps_every_description_whole_at_any_width() {
        let app = app("compute", 2);
        let paint = Paint::new(ThemeName::Dark, false);
        for width in [40, 60, 80, 120, 200] {
            let lines: Vec<String> = help_lines(&app, &paint, width)
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
                .collect();
            assert!(lines.iter().all(|l| l.chars().count() <= usize::from(width)), "{width}: {lines:#?}");
            let text = lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(!text.contains('…'), "{width}: {text}");
            for action in [Action::SortBy, Action::Tag, Action::Details] {
                // In two columns the halves interleave; every word is there.
                for word in action.help().split_whitespace() {
                    assert!(text.contains(word), "{width}: '{word}' of {action:?} missing");
                }
            }
        }
    }
}
