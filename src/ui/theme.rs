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
    pub high: Style,
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
                high: bold,
                alarm: bold.add_modifier(Modifier::REVERSED),
                selected: plain.add_modifier(Modifier::REVERSED),
                tagged: bold,
                header_row: bold.add_modifier(Modifier::UNDERLINED),
                badge: plain.add_modifier(Modifier::REVERSED),
                border: plain,
                banner: bold.add_modifier(Modifier::REVERSED),
            },
            ThemeName::Dark | ThemeName::Light | ThemeName::Colorblind => {
                let (low, moderate, high, alarm_bg, accent) = match name {
                    ThemeName::Colorblind => (
                        // Okabe-Ito: blue, yellow, vermillion; never red against green.
                        Color::Rgb(86, 180, 233),
                        Color::Rgb(240, 228, 66),
                        Color::Rgb(230, 159, 0),
                        Color::Rgb(213, 94, 0),
                        Color::Rgb(0, 114, 178),
                    ),
                    ThemeName::Light => (Color::Green, Color::Rgb(150, 110, 0), Color::Red, Color::Red, Color::Blue),
                    _ => (Color::Green, Color::Yellow, Color::Red, Color::Red, Color::Cyan),
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
                    high: plain.fg(high),
                    alarm: bold.fg(Color::White).bg(alarm_bg),
                    selected: plain.add_modifier(Modifier::REVERSED),
                    tagged: bold.fg(moderate),
                    header_row: bold.add_modifier(Modifier::REVERSED),
                    badge: bold.fg(Color::Black).bg(high),
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
            Level::High => self.high,
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
