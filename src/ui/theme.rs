//! Colours and glyphs in one place: four themes (dark, light, colour-blind safe, no colour) and two glyph sets
//! (Unicode, ASCII).

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::border;

use super::config::ThemeName;

/// How loaded something is, for colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Low,
    Moderate,
    High,
}

impl Level {
    /// The level of a percentage against nvitop's thresholds (`low_below`, `high_from`); N/A is moderate.
    #[must_use]
    pub fn of(value: Option<f64>, low_below: f64, high_from: f64) -> Self {
        match value {
            Some(v) if v < low_below => Self::Low,
            Some(v) if v >= high_from => Self::High,
            _ => Self::Moderate,
        }
    }
}

/// The styles every widget uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theme {
    pub name: ThemeName,
    pub base: Style,
    pub dim: Style,
    pub title: Style,
    pub label: Style,
    pub low: Style,
    pub moderate: Style,
    /// A heavy load (busy, nearly full): worth a look, not a fault, so never red.
    pub heavy: Style,
    /// Something wrong: a reading past a limit (temperature near slowdown, a capped or downgraded link).
    pub high: Style,
    /// Severity labels of findings: each differs from the others by more than its colour.
    pub info: Style,
    pub warning: Style,
    pub critical: Style,
    /// Errors and lost GPUs.
    pub alarm: Style,
    pub selected: Style,
    pub tagged: Style,
    pub header_row: Style,
    pub badge: Style,
    pub border: Style,
    pub banner: Style,
}

impl Theme {
    #[must_use]
    pub fn new(name: ThemeName) -> Self {
        let plain = Style::default();
        let bold = plain.add_modifier(Modifier::BOLD);
        match name {
            ThemeName::NoColor => Self {
                name,
                base: plain,
                dim: plain,
                title: bold,
                label: plain,
                low: plain,
                moderate: plain,
                heavy: plain,
                high: bold,
                info: plain.add_modifier(Modifier::UNDERLINED),
                warning: bold.add_modifier(Modifier::UNDERLINED),
                critical: bold.add_modifier(Modifier::REVERSED),
                alarm: bold.add_modifier(Modifier::REVERSED),
                selected: plain.add_modifier(Modifier::REVERSED),
                tagged: bold,
                header_row: bold.add_modifier(Modifier::UNDERLINED),
                badge: plain.add_modifier(Modifier::REVERSED),
                border: plain,
                banner: bold.add_modifier(Modifier::REVERSED),
            },
            ThemeName::Dark | ThemeName::Light | ThemeName::Colorblind => {
                // Load levels (low, moderate, heavy) never use red: a busy GPU is healthy. Red is for faults.
                let (low, moderate, heavy, high, alarm_bg, accent) = match name {
                    ThemeName::Colorblind => (
                        // Okabe-Ito: sky blue, yellow, reddish purple, vermillion; never red against green.
                        Color::Rgb(86, 180, 233),
                        Color::Rgb(240, 228, 66),
                        Color::Rgb(204, 121, 167),
                        Color::Rgb(230, 159, 0),
                        Color::Rgb(213, 94, 0),
                        Color::Rgb(0, 114, 178),
                    ),
                    ThemeName::Light => {
                        (Color::Green, Color::Rgb(150, 110, 0), Color::Magenta, Color::Red, Color::Red, Color::Blue)
                    }
                    _ => (Color::Green, Color::Yellow, Color::Magenta, Color::Red, Color::Red, Color::Cyan),
                };
                let fg = if name == ThemeName::Light { Color::Black } else { Color::Reset };
                let dim = Color::DarkGray;
                Self {
                    name,
                    base: plain.fg(fg),
                    dim: plain.fg(dim),
                    title: bold.fg(accent),
                    label: plain.fg(accent),
                    low: plain.fg(low),
                    moderate: plain.fg(moderate),
                    heavy: plain.fg(heavy),
                    high: plain.fg(high),
                    // INFO: accent text; WARN: dark on yellow; CRIT: bold underlined white on red.
                    info: bold.fg(accent),
                    warning: bold.fg(Color::Black).bg(moderate),
                    critical: bold.fg(Color::White).bg(alarm_bg).add_modifier(Modifier::UNDERLINED),
                    alarm: bold.fg(Color::White).bg(alarm_bg),
                    selected: plain.add_modifier(Modifier::REVERSED),
                    tagged: bold.fg(moderate),
                    header_row: bold.add_modifier(Modifier::REVERSED),
                    badge: bold.fg(moderate).add_modifier(Modifier::UNDERLINED),
                    border: plain.fg(dim),
                    banner: bold.fg(Color::Black).bg(moderate),
                }
            }
        }
    }

    /// The style of a load level.
    #[must_use]
    pub fn level(&self, level: Level) -> Style {
        match level {
            Level::Low => self.low,
            Level::Moderate => self.moderate,
            Level::High => self.heavy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THEMES: [ThemeName; 4] = [ThemeName::Dark, ThemeName::Light, ThemeName::Colorblind, ThemeName::NoColor];

    fn has_red(style: Style) -> bool {
        [style.fg, style.bg].into_iter().flatten().any(|c| matches!(c, Color::Red | Color::LightRed))
    }

    #[test]
    fn severities_differ_by_more_than_red_in_every_theme() {
        for name in THEMES {
            let theme = Theme::new(name);
            let (info, warning, critical) = (theme.info, theme.warning, theme.critical);
            assert!(info != warning && warning != critical && info != critical, "{name:?}");
            // Info and warning are told apart from critical without red: background or modifiers differ.
            assert!(!has_red(info) && !has_red(warning), "{name:?}: only critical may be red");
            assert!(
                warning.bg != critical.bg || warning.add_modifier != critical.add_modifier,
                "{name:?}: warning and critical differ by more than the text colour"
            );
            assert!(info.bg != warning.bg || info.add_modifier != warning.add_modifier, "{name:?}");
        }
    }

    #[test]
    fn healthy_load_levels_are_never_red() {
        for name in THEMES {
            let theme = Theme::new(name);
            for level in [Level::Low, Level::Moderate, Level::High] {
                assert!(!has_red(theme.level(level)), "{name:?} {level:?}");
            }
        }
    }
}

/// Glyphs: Unicode box drawing, blocks and braille, or ASCII.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Glyphs {
    pub ascii: bool,
    pub border: border::Set<'static>,
    pub bar_full: char,
    pub bar_empty: char,
    pub up: &'static str,
    pub down: &'static str,
    pub play: &'static str,
    pub degree: &'static str,
    pub sep: &'static str,
    pub tree_branch: &'static str,
    pub tree_last: &'static str,
    pub tree_pipe: &'static str,
    pub tree_space: &'static str,
}

const ASCII_BORDER: border::Set<'static> = border::Set {
    top_left: "+",
    top_right: "+",
    bottom_left: "+",
    bottom_right: "+",
    vertical_left: "|",
    vertical_right: "|",
    horizontal_top: "-",
    horizontal_bottom: "-",
};

impl Glyphs {
    #[must_use]
    pub fn new(ascii: bool) -> Self {
        if ascii {
            Self {
                ascii,
                border: ASCII_BORDER,
                bar_full: '#',
                bar_empty: '.',
                up: "^",
                down: "v",
                play: ">",
                degree: "C",
                sep: "|",
                tree_branch: "|- ",
                tree_last: "`- ",
                tree_pipe: "|  ",
                tree_space: "   ",
            }
        } else {
            Self {
                ascii,
                border: border::ROUNDED,
                bar_full: '█',
                bar_empty: '░',
                up: "▲",
                down: "▼",
                play: "▶",
                degree: "°C",
                sep: "│",
                tree_branch: "├─ ",
                tree_last: "└─ ",
                tree_pipe: "│  ",
                tree_space: "   ",
            }
        }
    }
}
