//! The explanation of one finding: its evidence, what to do and why, scrolled by Up/Down/PageUp/PageDown/Home/End
//! where it does not fit.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::ui::advice::{about, wrap_hanging};
use crate::ui::paint::{Paint, fill};
use crate::units;

/// The explanation's lines below the screen's title, each within `width`.
fn body<'a>(finding: &crate::advice::Finding, width: u16, paint: &Paint) -> Vec<Line<'a>> {
    let theme = &paint.theme;
    let width = usize::from(width);
    let head = vec![paint.severity_of(finding), Span::styled(about(finding), theme.label)];
    let head_w: usize = head.iter().map(Span::width).sum();
    let mut lines = Vec::new();
    for (n, text) in wrap_hanging(&finding.title, width.saturating_sub(head_w).max(8), width.saturating_sub(2).max(8))
        .into_iter()
        .enumerate()
    {
        if n == 0 {
            let mut spans = head.clone();
            spans.push(Span::styled(text, theme.title));
            lines.push(Line::from(spans));
        } else {
            lines.push(Line::from(vec![Span::raw("  "), Span::styled(text, theme.title)]));
        }
    }
    lines.push(Line::from(""));
    let evidence = finding.evidence_with_also();
    for (label, text) in [("Evidence", &evidence), ("What to do", &finding.remedy), ("Why", &finding.explanation)] {
        lines.push(Line::from(Span::styled(label.to_owned(), theme.label)));
        for line in units::wrap(text, width.saturating_sub(3)) {
            lines.push(Line::from(format!("  {line}")));
        }
        lines.push(Line::from(""));
    }
    lines.push(Line::from(Span::styled(format!("Since {}", units::utc(finding.since_ms)), theme.dim)));
    lines
}

/// How many lines the explanation of finding `index` takes below its title at `width`.
#[must_use]
pub fn explain_lines(app: &App, index: usize, width: u16, paint: &Paint) -> usize {
    app.findings().get(index).map_or(0, |f| body(f, width, paint).len())
}

pub(super) fn render_explain(area: Rect, buf: &mut Buffer, index: usize, offset: usize, app: &App, paint: &Paint) {
    let theme = &paint.theme;
    let findings = app.findings();
    let Some(finding) = findings.get(index) else { return };
    let body = body(finding, area.width, paint);
    let visible = usize::from(area.height.saturating_sub(1));
    let offset = offset.min(body.len().saturating_sub(visible));
    let more = body.len().saturating_sub(offset + visible);
    let hint = match (offset > 0 || more > 0, area.width >= 50) {
        (true, true) => format!("(Up/Down scroll, {more} more below; Esc back) "),
        (true, false) => format!("({more} more, Esc) "),
        (false, _) => "(Esc back) ".to_owned(),
    };
    let mut lines = vec![paint.title_line("Finding", vec![Span::styled(hint, theme.dim)], area.width)];
    lines.extend(body.into_iter().skip(offset).take(visible));
    fill(area, buf, lines, theme.base);
}
