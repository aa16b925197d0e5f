//! The one painting context every widget draws with: the theme's styles and the glyph set, chosen once per
//! frame from the app's settings, and the small drawing helpers that need them.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::config::ThemeName;
use super::theme::{Glyphs, Theme};
use crate::advice::{Finding, Severity};

/// Theme and glyphs, passed by reference to every widget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paint {
    pub theme: Theme,
    pub glyphs: Glyphs,
}

impl Paint {
    #[must_use]
    pub fn new(theme: ThemeName, ascii: bool) -> Self {
        Self { theme: Theme::new(theme), glyphs: Glyphs::new(ascii) }
    }

    /// Whether the glyphs are ASCII only.
    #[must_use]
    pub fn ascii(&self) -> bool {
        self.glyphs.ascii
    }

    /// A section title: " Title ─────" across the width, with `extra` after the title.
    #[must_use]
    pub fn title_line<'a>(&self, title: &str, extra: Vec<Span<'a>>, width: u16) -> Line<'a> {
        let mut spans = vec![Span::styled(format!(" {title} "), self.theme.title)];
        spans.extend(extra);
        let used: usize = spans.iter().map(Span::width).sum();
        let rule = if self.glyphs.ascii { "-" } else { "─" };
        spans.push(Span::styled(rule.repeat(usize::from(width).saturating_sub(used + 1)), self.theme.border));
        Line::from(spans)
    }

    /// A bar of `width` cells filled to `pct`.
    #[must_use]
    pub fn bar(&self, pct: Option<f64>, width: usize) -> String {
        let Some(pct) = pct else { return " ".repeat(width) };
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let filled = ((pct / 100.0).clamp(0.0, 1.0) * width as f64).round() as usize;
        let mut s: String = std::iter::repeat_n(self.glyphs.bar_full, filled).collect();
        s.extend(std::iter::repeat_n(self.glyphs.bar_empty, width - filled));
        s
    }

    /// A finding's severity label, styled so that the three differ by more than their colour.
    #[must_use]
    pub fn severity<'a>(&self, severity: Severity) -> Span<'a> {
        match severity {
            Severity::Critical => Span::styled(" CRIT ", self.theme.critical),
            Severity::Warning => Span::styled(" WARN ", self.theme.warning),
            Severity::Info => Span::styled(" INFO ", self.theme.info),
        }
    }

    /// The severity label of `finding`.
    #[must_use]
    pub fn severity_of<'a>(&self, finding: &Finding) -> Span<'a> {
        self.severity(finding.severity)
    }
}

/// Clears `area` and draws `lines` into it with `style` underneath.
pub fn fill(area: Rect, buf: &mut Buffer, lines: Vec<Line<'_>>, style: Style) {
    Clear.render(area, buf);
    Paragraph::new(lines).style(style).render(area, buf);
}
