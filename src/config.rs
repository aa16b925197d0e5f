//! The configuration file: every key has a default in code, and `config.example.toml` shows them all. Unknown
//! keys and wrong types are errors that name the key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::advice::Thresholds;
use crate::app::KeyOverrides;
use crate::ui_config::UiConfig;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub general: General,
    pub ui: UiConfig,
    /// Key overrides: action name = ["key", ...]. `?` in the monitor lists the actions and their keys.
    pub keys: KeyOverrides,
    pub thresholds: Thresholds,
}

/// Sampling and history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct General {
    /// Seconds between samples (0.1 to 60).
    pub interval_s: f64,
    /// Seconds of history kept in memory for graphs and rules.
    pub history_s: u64,
    /// Seconds between reads of the process lists, per-process utilization, energy and throttle counters.
    pub process_period_s: f64,
    /// Seconds between PCIe throughput reads (each blocks 20 ms on its own thread); 0 turns them off.
    pub pcie_period_s: f64,
    /// Seconds between GPM reads (SM activity, occupancy, tensor and DRAM activity) on the GPM thread; 0 turns
    /// them off.
    pub gpm_period_s: f64,
    /// Seconds between reads of ECC counts, retired pages and remapped rows.
    pub health_period_s: f64,
}

impl Default for General {
    fn default() -> Self {
        Self {
            interval_s: 1.0,
            history_s: 900,
            process_period_s: 2.0,
            pcie_period_s: 2.0,
            gpm_period_s: 2.0,
            health_period_s: 30.0,
        }
    }
}

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// The file parses, but a value cannot be meant ([`Config::check`]).
    #[error("config file {path}: {why}")]
    Invalid { path: PathBuf, why: CheckError },
}

/// A value of a config that parses but cannot be meant.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The `[keys]` overrides name an unknown action or key, leave no way out, or put a key on two actions.
    #[error(transparent)]
    Keys(#[from] crate::app::KeymapError),
    /// A number out of its range (NaN, negative, a share above 1, a zero window).
    #[error("[{section}] {key} = {value}: {why}")]
    OutOfRange { section: &'static str, key: String, value: String, why: String },
    /// `exit_share` above `enter_share`: a finding would clear before it appears.
    #[error("[thresholds] exit_share = {exit} is above enter_share = {enter}: a finding would clear before it appears")]
    ExitAboveEnter { exit: f64, enter: f64 },
}

impl Config {
    /// Parses TOML text; `path` is only used in messages.
    ///
    /// # Errors
    /// A syntax error, an unknown key or a wrong type, naming the key.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text)
            .map_err(|e| ConfigError::Parse { path: path.to_owned(), message: one_line(&e, text) })?;
        config.check().map_err(|why| ConfigError::Invalid { path: path.to_owned(), why })?;
        Ok(config)
    }

    /// Values that parse but cannot be meant: a NaN or negative threshold (`enter_share = nan` silently turned
    /// every finding off), a share above 1, a zero window, and a keymap with no way out or a key on two actions.
    /// Checked when the file is loaded, so every command refuses it, not only the monitor.
    ///
    /// # Errors
    /// The first bad value, naming its section and key.
    pub fn check(&self) -> Result<(), CheckError> {
        crate::app::Keymap::with_overrides(&self.keys)?;
        let mut sections = Vec::new();
        if let Ok(value) = serde_json::to_value(&self.general) {
            sections.push(("general", value));
        }
        if let Ok(value) = serde_json::to_value(&self.thresholds) {
            sections.push(("thresholds", value));
        }
        for (section, value) in &sections {
            let Some(fields) = value.as_object() else { continue };
            for (key, value) in fields {
                check_value(key, value).map_err(|why| CheckError::OutOfRange {
                    section,
                    key: key.clone(),
                    value: value.to_string(),
                    why,
                })?;
            }
        }
        let t = &self.thresholds;
        if t.exit_share > t.enter_share {
            return Err(CheckError::ExitAboveEnter { exit: t.exit_share, enter: t.enter_share });
        }
        Ok(())
    }

    /// Reads the file at `path`.
    ///
    /// # Errors
    /// The file cannot be read or parsed.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        Self::parse(&text, path)
    }

    /// The platform's config path (`~/.config/gpusight/config.toml` on Linux).
    #[must_use]
    pub fn default_path() -> Option<PathBuf> {
        directories::ProjectDirs::from("", "", "gpusight").map(|dirs| dirs.config_dir().join("config.toml"))
    }

    /// A config file at the platform path that is there but cannot be followed (a dangling symlink): the defaults
    /// are used, and this says why, instead of nothing.
    #[must_use]
    pub fn default_path_warning() -> Option<String> {
        let path = Self::default_path()?;
        let link = std::fs::symlink_metadata(&path).ok()?;
        if path.exists() || !link.file_type().is_symlink() {
            return None;
        }
        let target = std::fs::read_link(&path).map(|t| t.display().to_string()).unwrap_or_default();
        Some(format!("config {} is a symlink to {target}, which does not exist; using the defaults", path.display()))
    }

    /// The explicit file if given, else the platform file if it exists, else the defaults.
    ///
    /// # Errors
    /// The file named or found cannot be read or parsed.
    pub fn load_or_default(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        match explicit {
            Some(path) => Self::load(path),
            None => match Self::default_path() {
                Some(path) if path.exists() => Self::load(&path),
                _ => Ok(Self::default()),
            },
        }
    }
}

/// The range a setting may take, by the unit in its name: shares and fits from 0 to 1, percentages from 0 to
/// 100, windows from 1 s to 30 days, everything else finite and not negative.
fn check_value(key: &str, value: &serde_json::Value) -> Result<(), String> {
    // serde_json writes a NaN or an infinity as null.
    let Some(number) = value.as_f64() else { return Err("not a finite number".to_owned()) };
    if number < 0.0 {
        return Err("must not be negative".to_owned());
    }
    if (key.ends_with("_share") || key.ends_with("_r2") || key.ends_with("_coverage")) && number > 1.0 {
        return Err("is a share: use 0 to 1".to_owned());
    }
    if key.ends_with("_pct") && number > 100.0 {
        return Err("is a percentage: use 0 to 100".to_owned());
    }
    if key.ends_with("window_s") && !(1.0..=30.0 * 86_400.0).contains(&number) {
        return Err("is a window: use 1 s to 30 days".to_owned());
    }
    Ok(())
}

/// toml's errors span several lines with a caret picture; say it on one line with the line number, the section
/// and the key, so a wrong type names what is wrong ("line 2, [general] interval_s: invalid type: ...").
fn one_line(error: &toml::de::Error, text: &str) -> String {
    let message = error.message().trim().to_owned();
    let Some(span) = error.span() else { return message };
    let before = &text[..span.start.min(text.len())];
    let line_no = before.matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("").trim();
    let section = before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| format!("{l} "))
        .unwrap_or_default();
    match line.split_once('=') {
        Some((key, _)) if !line.starts_with('[') => format!("line {line_no}, {section}{}: {message}", key.trim()),
        _ => format!("line {line_no}: {message}"),
    }
}

impl General {
    /// The NVML tier periods these settings ask for.
    #[must_use]
    pub fn tier_periods(&self) -> crate::source::nvml::TierPeriods {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "milliseconds from a range-checked number of seconds"
        )]
        let ms = |s: f64| (s.max(0.0) * 1000.0).round() as u64;
        crate::source::nvml::TierPeriods {
            medium_ms: ms(self.process_period_s).max(100),
            slow_ms: ms(self.health_period_s).max(1000),
            pcie_ms: ms(self.pcie_period_s),
            // Not more often than once a second: the metrics compare two samples, and each costs driver time.
            gpm_ms: if self.gpm_period_s > 0.0 { ms(self.gpm_period_s).max(1000) } else { 0 },
        }
    }
}
