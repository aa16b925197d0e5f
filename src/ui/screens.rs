//! The footer, the full screens (help, process details, environment, a finding's explanation)
//! and the signal dialog.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::advice::{about, severity};
use super::theme::{Glyphs, Level, Theme};
use super::{format, graph, paint, title_line};
use crate::app::{Action, App, Screen, SignalDialog, SignalKind};

pub fn draw_footer(frame: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    let line = if app.table.editing_filter {
        Line::from(vec![
            Span::styled(" Filter: ", theme.label),
            Span::raw(format!("{}_", app.table.filter)),
            Span::styled("   Enter keeps, Esc clears", theme.dim),
        ])
    } else if let Some(status) = &app.status {
        Line::from(Span::styled(format!(" {status}"), theme.tagged))
    } else {
        let keys = |action: Action| app.keymap.keys(action).first().map_or_else(String::new, ToString::to_string);
        let mut hints = vec![
            (keys(Action::Help), "help"),
            (keys(Action::Quit), "quit"),
            (keys(Action::Filter), "filter"),
            (keys(Action::Tree), "tree"),
            (keys(Action::Details), "details"),
            (keys(Action::Pause), "pause"),
            (format!("{}{}", keys(Action::SortPrev), keys(Action::SortNext)), "sort"),
            (format!("{}{}", keys(Action::SpanShorter), keys(Action::SpanLonger)), "span"),
        ];
        if app.playback.is_some() {
            hints.push((format!("{}{}", keys(Action::SeekBack), keys(Action::SeekForward)), "seek"));
            hints.push((format!("{}{}", keys(Action::Slower), keys(Action::Faster)), "speed"));
        }
        let mut spans = Vec::new();
        for (key, what) in hints {
            spans.push(Span::styled(format!(" {key}"), theme.title));
            spans.push(Span::styled(format!(" {what} "), theme.dim));
        }
        Line::from(spans)
    };
    paint(frame, area, vec![line], theme.base);
}

pub fn draw_screen(frame: &mut Frame<'_>, area: Rect, screen: &Screen, app: &App, theme: &Theme, glyphs: &Glyphs) {
    match screen {
        Screen::Main => {}
        Screen::Help => draw_help(frame, area, app, theme, glyphs),
        Screen::Details { pid, libraries } => draw_details(frame, area, *pid, libraries, app, theme, glyphs),
        Screen::Environment { pid, vars, offset } => {
            let mut lines = vec![title_line(
                &format!("Environment of PID {pid}"),
                vec![Span::styled("(Esc back) ", theme.dim)],
                area.width,
                theme,
                glyphs,
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
            paint(frame, area, lines, theme.base);
        }
        Screen::Explain { index } => {
            let findings = app.findings();
            let Some(finding) = findings.get(*index) else { return };
            let mut lines =
                vec![title_line("Finding", vec![Span::styled("(Esc back) ", theme.dim)], area.width, theme, glyphs)];
            lines.push(Line::from(vec![
                severity(finding, theme),
                Span::styled(about(finding), theme.label),
                Span::styled(finding.title.clone(), theme.title),
            ]));
            lines.push(Line::from(""));
            for (label, text) in
                [("Evidence", &finding.evidence), ("What to do", &finding.remedy), ("Why", &finding.explanation)]
            {
                lines.push(Line::from(Span::styled(label.to_owned(), theme.label)));
                lines.push(Line::from(format!("  {text}")));
                lines.push(Line::from(""));
            }
            lines.push(Line::from(Span::styled(format!("Since {}", format::utc(finding.since_ms)), theme.dim)));
            frame.render_widget(Clear, area);
            frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).style(theme.base), area);
        }
    }
}

fn draw_help(frame: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme, glyphs: &Glyphs) {
    let mut lines =
        vec![title_line("Keys", vec![Span::styled("(any key returns) ", theme.dim)], area.width, theme, glyphs)];
    let half = usize::from(area.width / 2);
    let entries: Vec<(String, &str)> = Action::ALL
        .iter()
        .filter(|a| {
            app.playback.is_some()
                || !matches!(
                    a,
                    Action::SeekBack
                        | Action::SeekForward
                        | Action::SeekBackLong
                        | Action::SeekForwardLong
                        | Action::JumpStart
                        | Action::JumpEnd
                        | Action::Slower
                        | Action::Faster
                )
        })
        .map(|a| (app.keymap.describe(*a), a.help()))
        .collect();
    let rows = entries.len().div_ceil(2);
    for r in 0..rows {
        let mut spans = Vec::new();
        for c in 0..2 {
            if let Some((keys, help)) = entries.get(c * rows + r) {
                let dim = app.readonly && help.contains("SIG");
                let style = if dim { theme.dim } else { theme.base };
                let keys = format::truncate(keys, 14, glyphs.ascii);
                let help = format::truncate(help, half.saturating_sub(17), glyphs.ascii);
                spans.push(Span::styled(format!(" {keys:>14} "), theme.title));
                spans.push(Span::styled(format!("{help:<w$}", w = half.saturating_sub(17)), style));
            }
        }
        lines.push(Line::from(spans));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        " Process type: C compute, G graphics, X both.  Colours: green < 10 % <= yellow < 75 % (memory 80 %) <= red.",
        theme.dim,
    )));
    lines.push(Line::from(Span::styled(
        format!(" Sampling every {:.1} s. Keys can be changed under [keys] in the config.", app.interval.as_secs_f64()),
        theme.dim,
    )));
    paint(frame, area, lines, theme.base);
}

fn draw_details(
    frame: &mut Frame<'_>,
    area: Rect,
    pid: u32,
    libraries: &crate::app::inspect::Pairs,
    app: &App,
    theme: &Theme,
    glyphs: &Glyphs,
) {
    let host = app.tick().process(pid);
    let name = host.map_or_else(
        || format::NA.to_owned(),
        |h| if h.cmdline.is_empty() { h.name.clone() } else { h.cmdline.clone() },
    );
    let user = host.and_then(|h| h.user.clone()).unwrap_or_else(|| format::NA.to_owned());
    let mut lines = vec![title_line(
        &format!("Process {pid}"),
        vec![Span::styled("(Esc back, e environment) ", theme.dim)],
        area.width,
        theme,
        glyphs,
    )];
    lines.push(Line::from(vec![
        Span::styled(" USER ", theme.label),
        Span::raw(user),
        Span::styled("  COMMAND ", theme.label),
        Span::raw(format::truncate(&name, usize::from(area.width).saturating_sub(30), glyphs.ascii)),
    ]));
    let series = app.view().history.process(pid);
    let start = series.and_then(|s| crate::history::window_of(&s.times, app.span_s * 1000)).map_or(0, |w| w.start);
    let graphs: Vec<(&str, Vec<Option<f64>>, String)> = match series {
        Some(s) => {
            #[allow(clippy::cast_precision_loss)]
            let mem: Vec<Option<f64>> = s.gpu_mem_bytes.iter_from(start).map(|v| v.map(|b| b as f64)).collect();
            #[allow(clippy::cast_precision_loss)]
            let rss: Vec<Option<f64>> = s.rss_bytes.iter_from(start).map(|v| v.map(|b| b as f64)).collect();
            let sm: Vec<Option<f64>> = s.sm_util_pct.iter_from(start).map(|v| v.map(f64::from)).collect();
            let cpu: Vec<Option<f64>> = s.cpu_pct.iter_from(start).map(|v| v.map(f64::from)).collect();
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let max_of = |v: &[Option<f64>]| v.iter().flatten().copied().reduce(f64::max);
            vec![
                ("GPU-MEM", mem.clone(), format!("max {}", format::bytes(max_of(&mem).map(|m| m as u64)))),
                ("%SM", sm.clone(), format!("max {}", format::pct(max_of(&sm)))),
                ("%CPU", cpu.clone(), format!("max {}", format::pct(max_of(&cpu)))),
                ("HOST-MEM", rss.clone(), format!("max {}", format::bytes(max_of(&rss).map(|m| m as u64)))),
            ]
        }
        None => Vec::new(),
    };
    if graphs.is_empty() {
        lines.push(Line::from(Span::styled(" no history for this process yet", theme.dim)));
    }
    let half = usize::from(area.width / 2).saturating_sub(2);
    let graph_h = usize::from(area.height.saturating_sub(8)).clamp(2, 24) / 2;
    for pair in graphs.chunks(2) {
        let mut title = Vec::new();
        let mut rendered = Vec::new();
        for (name, values, max_text) in pair {
            let max = match *name {
                "%SM" => 100.0,
                "%CPU" => values.iter().flatten().copied().fold(100.0, f64::max),
                _ => values.iter().flatten().copied().fold(1.0, f64::max),
            };
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
    paint(frame, area, lines, theme.base);
}

pub fn draw_dialog(frame: &mut Frame<'_>, area: Rect, dialog: &SignalDialog, theme: &Theme, glyphs: &Glyphs) {
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
    frame.render_widget(Clear, rect);
    frame.render_widget(block, rect);
    let mut lines = vec![Line::from(format!(
        "Send a signal to {}?",
        if dialog.targets.len() == 1 {
            "this process".to_owned()
        } else {
            format!("these {} processes", dialog.targets.len())
        }
    ))];
    for target in dialog.targets.iter().take(shown) {
        let text = format!(
            " PID {} ({}) holds {} GPU memory: {}",
            target.pid,
            target.user.clone().unwrap_or_else(|| format::NA.to_owned()),
            format::bytes(target.gpu_mem_bytes),
            target.command
        );
        lines.push(Line::from(Span::styled(
            format::truncate(&text, usize::from(inner.width), glyphs.ascii),
            theme.label,
        )));
    }
    if dialog.targets.len() > shown {
        lines.push(Line::from(format!(" and {} more", dialog.targets.len() - shown)));
    }
    lines.push(Line::from(""));
    let mut buttons = Vec::new();
    for (i, label) in SignalKind::ALL.iter().map(|k| k.name()).chain(std::iter::once("Cancel")).enumerate() {
        let style = if i == dialog.button { theme.alarm } else { theme.base };
        buttons.push(Span::raw("  "));
        buttons.push(Span::styled(format!("[ {label} ]"), style));
    }
    lines.push(Line::from(buttons));
    lines.push(Line::from(Span::styled("  Enter sends the highlighted one; Esc, n or q cancel", theme.dim)));
    frame.render_widget(Paragraph::new(lines).style(theme.base), inner);
}
