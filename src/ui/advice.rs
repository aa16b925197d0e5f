//! The advice pane. Short terminals: one line per finding (severity, GPU/PID, title) and a detail line with the
//! selected finding's evidence and remedy (`x` shows all of it). Tall terminals: each finding's title, evidence
//! and remedy on their own lines, wrapped.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::theme::{Glyphs, Theme};
use super::{format, title_line};
use crate::advice::{Finding, Severity};

/// Columns the evidence and remedy lines are indented by in the tall pane.
const INDENT: usize = 8;
/// Findings listed in the short pane.
const SHORT_ROWS: usize = 3;

pub(super) fn severity<'a>(finding: &Finding, theme: &Theme) -> Span<'a> {
    match finding.severity {
        Severity::Critical => Span::styled(" CRIT ", theme.alarm),
        Severity::Warning => Span::styled(" WARN ", theme.badge),
        Severity::Info => Span::styled(" INFO ", theme.label),
    }
}

pub(super) fn about(finding: &Finding) -> String {
    let gpu = finding.gpu_index.map_or_else(|| "host ".to_owned(), |g| format!("GPU {g} "));
    let pid = finding.pid.map_or_else(String::new, |p| format!("PID {p} "));
    format!(" {gpu}{pid}")
}

fn body_width(width: u16) -> usize {
    usize::from(width).saturating_sub(INDENT + 1).max(10)
}

/// Lines one finding takes in the tall pane at `width`.
fn tall_height(finding: &Finding, width: u16) -> usize {
    let w = body_width(width);
    1 + format::wrap(&finding.evidence, w).len() + format::wrap(&finding.remedy, w.saturating_sub(2)).len()
}

/// Rows the pane needs for `findings` at `width`, at most `max` (the title included).
#[must_use]
pub fn height(findings: &[&Finding], width: u16, tall: bool, max: u16) -> u16 {
    let body = if findings.is_empty() {
        1
    } else if tall {
        findings.iter().map(|f| tall_height(f, width)).sum()
    } else {
        findings.len().min(SHORT_ROWS) + 2
    };
    u16::try_from(body + 1).unwrap_or(u16::MAX).min(max)
}

/// The pane's lines for `findings` in `area`. `selected` is the finding the detail line is about; `focused` says
/// whether the pane has the keyboard (the selection is then highlighted).
#[must_use]
pub fn lines<'a>(
    findings: &[&Finding],
    selected: usize,
    focused: bool,
    area: Rect,
    tall: bool,
    theme: &Theme,
    glyphs: &Glyphs,
) -> Vec<Line<'a>> {
    let hint = if findings.is_empty() { String::new() } else { "(x explains, ^W focuses) ".to_owned() };
    let extra = vec![Span::styled(format!("({}) {hint}", findings.len()), theme.dim)];
    let mut lines = vec![title_line("Advice", extra, area.width, theme, glyphs)];
    if findings.is_empty() {
        lines.push(Line::from(Span::styled("  Nothing looks wrong: no finding held for its window.", theme.low)));
        return lines;
    }
    let selected = selected.min(findings.len() - 1);
    let width = usize::from(area.width);
    let arrow = if glyphs.ascii { "->" } else { "→" };
    let head = |i: usize, finding: &Finding| {
        let style = if focused && i == selected { theme.selected } else { theme.base };
        let mut spans = vec![Span::raw(" "), severity(finding, theme), Span::styled(about(finding), theme.label)];
        let used: usize = spans.iter().map(Span::width).sum();
        spans.push(Span::styled(format::truncate(&finding.title, width.saturating_sub(used), glyphs.ascii), style));
        Line::from(spans)
    };
    let room = usize::from(area.height.saturating_sub(1));
    if !tall {
        // The findings one line each, then the selected one's evidence and remedy (two lines, or the remedy alone).
        let wanted = findings.len().min(SHORT_ROWS);
        let (rows, detail) = if room >= wanted + 2 {
            (wanted, 2)
        } else if room >= 2 {
            (wanted.min(room - 1), 1)
        } else {
            (1, 0)
        };
        let first = selected.saturating_sub(rows - 1);
        for (i, finding) in findings.iter().enumerate().skip(first).take(rows) {
            lines.push(head(i, finding));
        }
        let finding = findings[selected];
        let remedy = format::truncate(&format!("{arrow} {}", finding.remedy), width.saturating_sub(8), glyphs.ascii);
        if detail == 2 {
            let evidence = format::truncate(&finding.evidence, width.saturating_sub(8), glyphs.ascii);
            lines.push(Line::from(vec![
                Span::styled(format!("{:>w$} ", "why", w = INDENT - 1), theme.dim),
                Span::styled(evidence, theme.dim),
            ]));
        }
        if detail >= 1 {
            lines.push(Line::from(vec![Span::raw(" ".repeat(INDENT)), Span::styled(remedy, theme.base)]));
        }
        return lines;
    }
    // Start early enough that the selected finding is on screen.
    let mut first = selected;
    let mut used = tall_height(findings[selected], area.width);
    while first > 0 && used + tall_height(findings[first - 1], area.width) <= room {
        first -= 1;
        used += tall_height(findings[first], area.width);
    }
    let w = body_width(area.width);
    let pad = " ".repeat(INDENT);
    for (i, finding) in findings.iter().enumerate().skip(first) {
        if lines.len() > room {
            break;
        }
        lines.push(head(i, finding));
        for (n, text) in format::wrap(&finding.evidence, w).into_iter().enumerate() {
            let label = if n == 0 { format!("{:>w$} ", "why", w = INDENT - 1) } else { pad.clone() };
            lines.push(Line::from(vec![Span::styled(label, theme.dim), Span::styled(text, theme.dim)]));
        }
        for (n, text) in format::wrap(&finding.remedy, w.saturating_sub(2)).into_iter().enumerate() {
            let lead = if n == 0 { format!("{pad}{arrow} ") } else { format!("{pad}  ") };
            lines.push(Line::from(vec![Span::styled(lead, theme.label), Span::styled(text, theme.base)]));
        }
    }
    lines.truncate(room + 1);
    lines
}
