//! The explanation of one finding: its evidence, what to do and why.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use crate::app::App;
use crate::ui::advice::about;
use crate::ui::paint::Paint;
use crate::units;

pub(super) fn render_explain(area: Rect, buf: &mut Buffer, index: usize, app: &App, paint: &Paint) {
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
