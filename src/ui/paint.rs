//! The one painting context every widget draws with: the theme's styles and the glyph set, chosen once per
//! frame from the app's settings, and the small drawing helpers that need them.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::config::{LoadColors, ThemeName};
use super::theme::{Glyphs, Level, Theme};
use crate::advice::{Finding, Severity};

/// Theme, glyphs and where the load colours change, passed by reference to every widget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paint {
    pub theme: Theme,
    pub glyphs: Glyphs,
    pub load: LoadColors,
}

impl Paint {
    /// A painting context with the default load colours.
    #[must_use]
    pub fn new(theme: ThemeName, ascii: bool) -> Self {
        Self { theme: Theme::new(theme), glyphs: Glyphs::new(ascii), load: LoadColors::default() }
    }

    /// The app's theme, glyphs and load colours.
    #[must_use]
    pub fn for_app(app: &crate::app::App) -> Self {
        Self { load: app.load_colors, ..Self::new(app.theme, app.ascii) }
    }

    /// The load level of a utilization-like percentage (`[ui.load_colors]`).
    #[must_use]
    pub fn load_level(&self, pct: Option<f64>) -> Level {
        Level::of(pct, f64::from(self.load.light_below_pct), f64::from(self.load.heavy_from_pct))
    }

    /// The load level of a memory percentage.
    #[must_use]
    pub fn memory_level(&self, pct: Option<f64>) -> Level {
        Level::of(pct, f64::from(self.load.light_below_pct), f64::from(self.load.memory_heavy_from_pct))
    }

    /// The style of a utilization-like percentage.
    #[must_use]
    pub fn load_style(&self, pct: Option<f64>) -> Style {
        self.theme.level(self.load_level(pct))
    }

    /// The style of a memory percentage.
    #[must_use]
    pub fn memory_style(&self, pct: Option<f64>) -> Style {
        self.theme.level(self.memory_level(pct))
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
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a bar's filled cells: 0 to its width"
        )]
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

/// Clears `area` and draws `lines` into it with `style` underneath (what `Clear` and a `Paragraph` would draw,
/// written straight into the buffer: [`super::blit`]).
#[expect(clippy::needless_pass_by_value, reason = "the widgets hand over the lines they built")]
pub fn fill(area: Rect, buf: &mut Buffer, lines: Vec<Line<'_>>, style: Style) {
    super::blit::fill(area, buf, &lines, style);
}

/// A line of readings fitted to `width` columns without cutting a reading: what does not fit is dropped at a word
/// boundary (never "RX 148MB/" or "hw-the"), and a label left without its value at the end ("RX", "PCIe", "THR")
/// goes too. A line that fits is left as it is.
#[must_use]
pub fn fit_fields(line: Line<'_>, width: usize) -> Line<'_> {
    use unicode_width::UnicodeWidthStr;
    if line.width() <= width {
        return line;
    }
    let style = line.style;
    let mut out: Vec<Span<'_>> = Vec::new();
    let mut used = 0;
    for span in line.spans {
        let w = span.width();
        if used + w <= width {
            used += w;
            out.push(span);
            continue;
        }
        // The longest prefix that ends before a space and fits.
        let room = width - used;
        let content = span.content.as_ref();
        let cut = content
            .char_indices()
            .filter(|&(i, c)| c == ' ' && content[..i].width() <= room)
            .map(|(i, _)| i)
            .next_back();
        if let Some(cut) = cut.filter(|&c| c > 0) {
            out.push(Span::styled(content[..cut].to_owned(), span.style));
        }
        break;
    }
    // A label without its value: a last word with no digit in it ("RX", "THR", "no") is not a reading.
    while let Some(last) = out.last_mut() {
        let text = last.content.trim_end();
        let word_at = text.rfind(' ').map_or(0, |i| i + 1);
        let word = &text[word_at..];
        if word.is_empty() {
            out.pop();
            continue;
        }
        if word.bytes().any(|b| b.is_ascii_digit()) || word == "N/A" {
            break;
        }
        let kept = text[..word_at].to_owned();
        if kept.trim().is_empty() {
            out.pop();
        } else {
            last.content = kept.into();
        }
    }
    Line::from(out).style(style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_colours_follow_the_config() {
        let default = Paint::new(ThemeName::Dark, false);
        assert_eq!(default.load_level(Some(60.0)), Level::Moderate);
        assert_eq!(default.memory_level(Some(78.0)), Level::Moderate);
        let strict =
            Paint { load: LoadColors { light_below_pct: 5, heavy_from_pct: 50, memory_heavy_from_pct: 70 }, ..default };
        assert_eq!(strict.load_level(Some(60.0)), Level::High);
        assert_eq!(strict.load_level(Some(7.0)), Level::Moderate);
        assert_eq!(strict.memory_level(Some(78.0)), Level::High);
        assert_eq!(strict.load_style(Some(60.0)), strict.theme.heavy);
    }
}
