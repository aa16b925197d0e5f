//! The `[ui]` section of the config file: theme, graph span and layout.

use serde::{Deserialize, Serialize};

/// A colour theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ThemeName {
    /// For dark terminals.
    #[default]
    Dark,
    /// For light terminals.
    Light,
    /// Okabe-Ito blue/orange instead of green/red, safe for colour-blind readers.
    Colorblind,
    /// No colours: bold and reverse only (also chosen by `NO_COLOR` or `--no-color`).
    NoColor,
}

/// How GPUs are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DisplayMode {
    /// Choose by terminal size.
    #[default]
    Auto,
    /// Full GPU panels when they fit at all.
    Full,
    /// One line per GPU.
    Compact,
}

/// Where the load colours change, in percent (nvitop's thresholds): light (green) below `light_below_pct`,
/// heavy (magenta) from `heavy_from_pct` (`memory_heavy_from_pct` for memory), moderate (yellow) between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoadColors {
    pub light_below_pct: u8,
    pub heavy_from_pct: u8,
    pub memory_heavy_from_pct: u8,
}

impl Default for LoadColors {
    fn default() -> Self {
        Self { light_below_pct: 10, heavy_from_pct: 75, memory_heavy_from_pct: 80 }
    }
}

/// Settings of the interactive monitor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UiConfig {
    pub theme: ThemeName,
    /// Seconds of history the graphs show at start (`[`/`]` change it).
    pub graph_span_s: u64,
    pub mode: DisplayMode,
    /// Whether the mouse selects rows, sorts and scrolls.
    pub mouse: bool,
    /// Where the load colours change (`[ui.load_colors]`).
    pub load_colors: LoadColors,
}

impl Default for UiConfig {
    fn default() -> Self {
        Self {
            theme: ThemeName::Dark,
            graph_span_s: 120,
            mode: DisplayMode::Auto,
            mouse: true,
            load_colors: LoadColors::default(),
        }
    }
}

/// The graph spans `[`/`]` step through, in seconds.
pub const SPANS_S: [u64; 8] = [30, 60, 120, 300, 600, 900, 1800, 3600];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_defaults_match_the_code() {
        let text = "theme = \"dark\"\ngraph_span_s = 120\nmode = \"auto\"\nmouse = true\n\
                    [load_colors]\nlight_below_pct = 10\nheavy_from_pct = 75\nmemory_heavy_from_pct = 80\n";
        let parsed: UiConfig = toml::from_str(text).expect("valid");
        assert_eq!(parsed, UiConfig::default());
        let error = toml::from_str::<UiConfig>("theme = \"purple\"").expect_err("bad theme");
        assert!(error.to_string().contains("purple"), "{error}");
    }
}
