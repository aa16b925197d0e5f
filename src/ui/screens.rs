//! The footer, the full screens (help, process details, environment, a finding's explanation)
//! and the signal dialog.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::advice::about;
use super::graph;
use super::paint::{Paint, fill};
use super::theme::Level;
use crate::app::{App, DialogButton, Screen, SignalDialog};
use crate::keys::Action;
use crate::units;

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

fn footer_line<'a>(app: &App, theme: &super::theme::Theme, width: usize) -> Line<'a> {
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

/// A full screen in front of the main one: help, process details, environment or a finding's explanation.
#[derive(Debug)]
pub struct SubScreen<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
    pub screen: &'a Screen,
}

impl Widget for SubScreen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (app, paint) = (self.app, self.paint);
        match self.screen {
            Screen::Main => {}
            Screen::Help { offset } => render_help(area, buf, *offset, app, paint),
            Screen::Details { pid, libraries } => render_details(area, buf, *pid, libraries, app, paint),
            Screen::Environment { pid, vars, offset } => {
                render_environment(area, buf, *pid, vars, *offset, paint);
            }
            Screen::Explain { index } => render_explain(area, buf, *index, app, paint),
        }
    }
}

fn render_environment(
    area: Rect,
    buf: &mut Buffer,
    pid: u32,
    vars: &crate::app::inspect::Pairs,
    offset: usize,
    paint: &Paint,
) {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let offset = &offset;
    let mut lines = vec![paint.title_line(
        &format!("Environment of PID {pid}"),
        vec![Span::styled("(Esc back) ", theme.dim)],
        area.width,
    )];
    match vars {
        Ok(vars) => {
            let visible = usize::from(area.height.saturating_sub(1));
            let offset = (*offset).min(vars.len().saturating_sub(visible));
            for (key, value) in vars.iter().skip(offset).take(visible) {
                lines.push(Line::from(vec![
                    Span::styled(key.clone(), theme.label),
                    Span::raw("="),
                    Span::raw(value.replace('\n', if glyphs.ascii { "\\n" } else { "␤" })),
                ]));
            }
        }
        Err(why) => {
            lines.push(Line::from(Span::styled(format!("Could not read the environment: {why}"), theme.high)));
        }
    }
    fill(area, buf, lines, theme.base);
}

fn render_explain(area: Rect, buf: &mut Buffer, index: usize, app: &App, paint: &Paint) {
    let theme = &paint.theme;
    let findings = app.findings();
    let Some(finding) = findings.get(index) else { return };
    let mut lines = vec![paint.title_line("Finding", vec![Span::styled("(Esc back) ", theme.dim)], area.width)];
    lines.push(Line::from(vec![
        paint.severity_of(finding),
        Span::styled(about(finding), theme.label),
        Span::styled(finding.title.clone(), theme.title),
    ]));
    lines.push(Line::from(""));
    let evidence = finding.evidence_with_also();
    for (label, text) in [("Evidence", &evidence), ("What to do", &finding.remedy), ("Why", &finding.explanation)] {
        lines.push(Line::from(Span::styled(label.to_owned(), theme.label)));
        for line in units::wrap(text, usize::from(area.width).saturating_sub(3)) {
            lines.push(Line::from(format!("  {line}")));
        }
        lines.push(Line::from(""));
    }
    lines.push(Line::from(Span::styled(format!("Since {}", units::utc(finding.since_ms)), theme.dim)));
    Clear.render(area, buf);
    Paragraph::new(lines).wrap(Wrap { trim: false }).style(theme.base).render(area, buf);
}

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

fn render_help(area: Rect, buf: &mut Buffer, offset: usize, app: &App, paint: &Paint) {
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

fn render_details(
    area: Rect,
    buf: &mut Buffer,
    pid: u32,
    libraries: &crate::app::inspect::Pairs,
    app: &App,
    paint: &Paint,
) {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let host = app.tick().process(pid);
    let name = host.map_or_else(
        || units::NA.to_owned(),
        |h| if h.cmdline.is_empty() { h.name.clone() } else { h.cmdline.clone() },
    );
    let user = host.and_then(|h| h.user.clone()).unwrap_or_else(|| units::NA.to_owned());
    let mut lines = vec![paint.title_line(
        &format!("Process {pid}"),
        vec![Span::styled("(Esc back, e environment) ", theme.dim)],
        area.width,
    )];
    // The whole command line, wrapped (up to three lines) after the user.
    let lead = format!(" USER {user}  COMMAND ");
    let lead_w = lead.chars().count();
    let text_w = usize::from(area.width).saturating_sub(lead_w).max(20);
    let mut command = units::wrap(&name, text_w);
    if command.len() > 3 {
        command.truncate(3);
        if let Some(last) = command.last_mut() {
            *last = units::truncate(&format!("{last} …"), text_w, glyphs.ascii);
        }
    }
    for (n, part) in command.into_iter().enumerate() {
        lines.push(Line::from(if n == 0 {
            vec![
                Span::styled(" USER ", theme.label),
                Span::raw(user.clone()),
                Span::styled("  COMMAND ", theme.label),
                Span::raw(part),
            ]
        } else {
            vec![Span::raw(" ".repeat(lead_w)), Span::raw(part)]
        }));
    }
    let graphs = process_graphs(app, pid);
    if graphs.is_empty() {
        lines.push(Line::from(Span::styled(" no history for this process yet", theme.dim)));
    }
    let half = usize::from(area.width / 2).saturating_sub(2);
    let graph_h = usize::from(area.height.saturating_sub(8)).clamp(2, 24) / 2;
    for pair in graphs.chunks(2) {
        let mut title = Vec::new();
        let mut rendered = Vec::new();
        for ProcessGraph { name, values, max_text, scale } in pair {
            let max = scale.top(values);
            title.push(Span::styled(format!(" {name:<8} {max_text:<w$}", w = half.saturating_sub(9)), theme.label));
            rendered.push(graph::area_graph(values, max, half, graph_h.saturating_sub(1).max(1), glyphs.ascii));
        }
        lines.push(Line::from(title));
        for row in 0..graph_h.saturating_sub(1).max(1) {
            let mut spans = Vec::new();
            for g in &rendered {
                spans.push(Span::raw(" "));
                spans.push(Span::styled(format!("{:<half$}", g[row]), theme.level(Level::Low)));
                spans.push(Span::raw(" "));
            }
            lines.push(Line::from(spans));
        }
    }
    push_libraries(&mut lines, libraries, paint);
    fill(area, buf, lines, theme.base);
}

/// The details screen's "CUDA libraries" section: each mapped library with its version, or why none are shown.
fn push_libraries(lines: &mut Vec<Line<'_>>, libraries: &crate::app::inspect::Pairs, paint: &Paint) {
    let theme = &paint.theme;
    lines.push(Line::from(Span::styled(" CUDA libraries", theme.title)));
    match libraries {
        Ok(libs) if libs.is_empty() => lines.push(Line::from(Span::styled("  none mapped", theme.dim))),
        Ok(libs) => {
            for (name, version) in libs {
                lines.push(Line::from(vec![
                    Span::styled(format!("  {name:<24}"), theme.label),
                    Span::raw(version.clone()),
                ]));
            }
        }
        Err(why) => lines.push(Line::from(Span::styled(format!("  {why}"), theme.dim))),
    }
}

/// How a graph's top is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GraphScale {
    /// A share of a whole (the GPU's SMs): always 0 to 100.
    Percent,
    /// Percent of one core, which passes 100 with several threads: 100, or the highest value above it.
    PercentOfCores,
    /// An amount (bytes): the highest value, at least 1.
    Amount,
}

impl GraphScale {
    /// The value at the top of a graph of `values`.
    fn top(self, values: &[Option<f64>]) -> f64 {
        let highest = |floor: f64| values.iter().flatten().copied().fold(floor, f64::max);
        match self {
            Self::Percent => 100.0,
            Self::PercentOfCores => highest(100.0),
            Self::Amount => highest(1.0),
        }
    }
}

/// One graph of the details screen: its name, values (oldest first), the caption with the maximum, and its scale.
#[derive(Debug, Clone, PartialEq)]
struct ProcessGraph {
    name: &'static str,
    values: Vec<Option<f64>>,
    max_text: String,
    scale: GraphScale,
}

/// The process's graphs over the span shown.
fn process_graphs(app: &App, pid: u32) -> Vec<ProcessGraph> {
    let series = app.view().history.process(pid);
    let start = series.and_then(|s| crate::history::window_of(&s.times, app.span_s * 1000)).map_or(0, |w| w.start);
    match series {
        Some(s) => {
            let mem: Vec<Option<f64>> = s.gpu_mem_bytes.iter_from(start).map(|v| v.map(|b| b as f64)).collect();
            let rss: Vec<Option<f64>> = s.rss_bytes.iter_from(start).map(|v| v.map(|b| b as f64)).collect();
            let sm: Vec<Option<f64>> = s.sm_util_pct.iter_from(start).map(|v| v.map(f64::from)).collect();
            let cpu: Vec<Option<f64>> = s.cpu_pct.iter_from(start).map(|v| v.map(f64::from)).collect();
            let max_of = |v: &[Option<f64>]| v.iter().flatten().copied().reduce(f64::max);
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "byte counts: whole and positive"
            )]
            let max_bytes = |v: &[Option<f64>]| max_of(v).map(|m| m as u64);
            let graph =
                |name, values: Vec<Option<f64>>, max_text, scale| ProcessGraph { name, values, max_text, scale };
            vec![
                graph("GPU-MEM", mem.clone(), format!("max {}", units::bytes(max_bytes(&mem))), GraphScale::Amount),
                graph("%SM", sm.clone(), format!("max {}", units::pct(max_of(&sm))), GraphScale::Percent),
                graph("%CPU", cpu.clone(), format!("max {}", units::pct(max_of(&cpu))), GraphScale::PercentOfCores),
                graph("HOST-MEM", rss.clone(), format!("max {}", units::bytes(max_bytes(&rss))), GraphScale::Amount),
            ]
        }
        None => Vec::new(),
    }
}

/// The signal confirmation dialog, centred on the screen.
#[derive(Debug)]
pub struct Dialog<'a> {
    pub dialog: &'a SignalDialog,
    pub paint: &'a Paint,
}

impl Widget for Dialog<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        render_dialog(area, buf, self.dialog, self.paint);
    }
}

fn render_dialog(area: Rect, buf: &mut Buffer, dialog: &SignalDialog, paint: &Paint) {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let width = area.width.min(76);
    let shown = dialog.targets.len().min(6);
    let height = (u16::try_from(shown).unwrap_or(6) + 6).min(area.height);
    let rect = Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(glyphs.border)
        .border_style(theme.high)
        .title(Span::styled(" Send a signal ", theme.title));
    let inner = block.inner(rect);
    Clear.render(rect, buf);
    block.render(rect, buf);
    let n = dialog.targets.len();
    let question = match &dialog.job {
        Some(job) => format!("Send a signal to every rank of {}: {n} processes?", crate::text::visible(job)),
        None if n == 1 => "Send a signal to this process?".to_owned(),
        None => format!("Send a signal to these {n} processes?"),
    };
    let mut lines = vec![Line::from(units::truncate(&question, usize::from(inner.width), glyphs.ascii))];
    for target in dialog.targets.iter().take(shown) {
        let text = format!(
            " PID {} ({}) holds {} GPU memory: {}",
            target.pid,
            target.user.clone().unwrap_or_else(|| units::NA.to_owned()),
            units::bytes(target.gpu_mem_bytes),
            target.command
        );
        lines.push(Line::from(Span::styled(
            units::truncate(&text, usize::from(inner.width), glyphs.ascii),
            theme.label,
        )));
    }
    if n > shown && dialog.job.is_some() {
        // A job's every PID is named: the ranks not listed above on one line.
        let rest: Vec<String> = dialog.targets[shown..].iter().map(|t| t.pid.to_string()).collect();
        let text = format!(" and {} more: PID {}", n - shown, rest.join(", "));
        lines.push(Line::from(units::truncate(&text, usize::from(inner.width), glyphs.ascii)));
    } else if n > shown {
        lines.push(Line::from(format!(" and {} more", n - shown)));
    }
    lines.push(Line::from(""));
    let mut buttons = Vec::new();
    for button in DialogButton::ALL {
        let style = if button == dialog.button { theme.alarm } else { theme.base };
        buttons.push(Span::raw("  "));
        buttons.push(Span::styled(format!("[ {} ]", button.label()), style));
    }
    lines.push(Line::from(buttons));
    lines.push(Line::from(Span::styled("  Enter sends the highlighted one; Esc, n or q cancel", theme.dim)));
    Paragraph::new(lines).style(theme.base).render(inner, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::config::ThemeName;
    use crate::ui::test_support::app;

    #[test]
    fn graph_scales_choose_their_tops() {
        let (low, high) = ([Some(30.0), None, Some(2.0)], [Some(250.0), Some(40.0)]);
        assert_eq!((GraphScale::Percent.top(&low), GraphScale::Percent.top(&high)), (100.0, 100.0));
        assert_eq!((GraphScale::PercentOfCores.top(&low), GraphScale::PercentOfCores.top(&high)), (100.0, 250.0));
        assert_eq!((GraphScale::Amount.top(&low), GraphScale::Amount.top(&[None, Some(0.5)])), (30.0, 1.0));
    }

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
