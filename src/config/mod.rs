//! The configuration file: every key has a default in code, and `config.example.toml` shows them all.
//!
//! Loading is forgiving where a stop would cost more than the mistake ([`Config::load_lenient`], what every
//! command uses): an unknown key is one warning naming the file, line and key, and is ignored, so a typo or a key
//! of a newer version never stops a daemon or blanks `--status`; a bad value in `[ui]` or `[keys]` (read only by
//! the monitor and the fleet view) is warned about and its section's defaults apply in the commands that do not
//! draw. Wrong values in `[general]` and `[thresholds]` stay errors for every command: they change what is
//! sampled and judged. `gpusight config check` is strict ([`Config::check_text`]): every unknown key and the first
//! bad value fail it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::advice::Thresholds;
use crate::keys::KeyOverrides;

pub mod ui;

use ui::UiConfig;

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
    /// A FIFO, a device or a directory: reading it could block for ever or mean nothing.
    #[error("config file {path} is not a regular file (it is {what}); give the path of a TOML file")]
    NotRegular { path: PathBuf, what: &'static str },
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
    Keys(#[from] crate::keys::KeymapError),
    /// A number out of its range (NaN, negative, a share above 1, a zero window).
    #[error("[{section}] {key} = {value}: {why}")]
    OutOfRange { section: &'static str, key: String, value: String, why: String },
    /// `exit_share` above `enter_share`: a finding would clear before it appears.
    #[error("[thresholds] exit_share = {exit} is above enter_share = {enter}: a finding would clear before it appears")]
    ExitAboveEnter { exit: f64, enter: f64 },
}

/// A key the file has that gpusight does not know, with the line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// 1-based.
    pub line: usize,
    /// The dotted path, e.g. `thresholds.windw_s`.
    pub key: String,
}

/// What a lenient load gave: the config and a line for each thing it ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub config: Config,
    /// One line each (unknown keys, a cosmetic section with a bad value), naming the file, for stderr.
    pub warnings: Vec<String>,
}

/// Sections whose keys are free-form (action names, checked by the keymap), not fields.
const FREE_FORM: [&str; 1] = ["keys"];

/// Sections only the drawing modes (the monitor, the fleet view) read.
const COSMETIC: [&str; 2] = ["ui", "keys"];

impl Config {
    /// Parses TOML text leniently ([`Config::load_lenient`]); `path` is only used in messages. `draws`: whether
    /// the command reads `[ui]` and `[keys]` (then a bad value there is an error; otherwise a warning, and that
    /// section's defaults apply).
    ///
    /// # Errors
    /// A syntax error or a bad value in a section the command reads, naming the key.
    pub fn parse_lenient(text: &str, path: &Path, draws: bool) -> Result<Loaded, ConfigError> {
        let (config, unknown, mut warnings) = Self::parse_parts(text, path, draws);
        let mut lines: Vec<String> = unknown
            .iter()
            .map(|u| format!("config file {}: line {}, unknown key {}: ignored", path.display(), u.line, u.key))
            .collect();
        lines.append(&mut warnings);
        Ok(Loaded { config: config?, warnings: lines })
    }

    /// `gpusight config check`: every unknown key, and the first bad value, of `text`.
    ///
    /// # Errors
    /// One line per problem, each naming the file and the key.
    pub fn check_text(text: &str, path: &Path) -> Result<Self, Vec<String>> {
        let (config, unknown, _) = Self::parse_parts(text, path, true);
        let mut problems: Vec<String> = unknown
            .iter()
            .map(|u| format!("config file {}: line {}, unknown key {}", path.display(), u.line, u.key))
            .collect();
        match config {
            Ok(config) if problems.is_empty() => Ok(config),
            Ok(_) => Err(problems),
            Err(e) => {
                problems.push(e.to_string());
                Err(problems)
            }
        }
    }

    /// The config with unknown keys left out, the unknown keys, and warnings for cosmetic sections left out.
    fn parse_parts(text: &str, path: &Path, draws: bool) -> (Result<Self, ConfigError>, Vec<UnknownKey>, Vec<String>) {
        use serde::Deserialize as _;
        let parse_error =
            |e: &toml::de::Error| ConfigError::Parse { path: path.to_owned(), message: one_line(e, text) };
        let mut root = match toml::de::DeTable::parse(text) {
            Ok(root) => root,
            Err(e) => return (Err(parse_error(&e)), Vec::new(), Vec::new()),
        };
        let schema = serde_json::to_value(Self::default()).unwrap_or_default();
        let mut unknown = Vec::new();
        prune_unknown(root.get_mut(), &schema, "", text, &mut unknown);
        unknown.sort_by_key(|u| u.line);
        let mut warnings = Vec::new();
        if !draws {
            for section in COSMETIC {
                if let Some(why) = cosmetic_error(root.get_ref(), section, text) {
                    warnings.push(format!(
                        "config file {}: {why}; [{section}] is ignored here (only the monitor and the fleet view \
                         read it)",
                        path.display()
                    ));
                    root.get_mut().remove(section);
                }
            }
        }
        let config = Self::deserialize(toml::de::Deserializer::from(root)).map_err(|e| parse_error(&e)).and_then(
            |config: Self| {
                config.check().map_err(|why| ConfigError::Invalid { path: path.to_owned(), why })?;
                Ok(config)
            },
        );
        (config, unknown, warnings)
    }

    /// Parses TOML text strictly; `path` is only used in messages.
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
        crate::keys::Keymap::with_overrides(&self.keys)?;
        // TOML values, not JSON: serde_json writes a NaN or an infinity as null, which would be shown as "= null".
        let mut sections = Vec::new();
        if let Ok(value) = toml::Value::try_from(&self.general) {
            sections.push(("general", value));
        }
        if let Ok(value) = toml::Value::try_from(&self.thresholds) {
            sections.push(("thresholds", value));
        }
        if let Ok(value) = toml::Value::try_from(&self.thresholds.account) {
            sections.push(("thresholds.account", value));
        }
        for (section, value) in &sections {
            let Some(fields) = value.as_table() else { continue };
            // A sub-table is a section of its own, above.
            for (key, value) in fields.iter().filter(|(_, v)| !v.is_table()) {
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
        if t.account.exit_share > t.account.enter_share {
            return Err(CheckError::ExitAboveEnter { exit: t.account.exit_share, enter: t.account.enter_share });
        }
        Ok(())
    }

    /// Reads the file at `path`.
    ///
    /// # Errors
    /// The file cannot be read or parsed.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::parse(&read_config(path)?, path)
    }

    /// Reads the file at `path` leniently (see [`Config::parse_lenient`]).
    ///
    /// # Errors
    /// The file cannot be read, or has a syntax error or a bad value the command reads.
    pub fn load_lenient(path: &Path, draws: bool) -> Result<Loaded, ConfigError> {
        Self::parse_lenient(&read_config(path)?, path, draws)
    }

    /// [`Config::load_or_default`], leniently: the explicit file if given, else the platform file if it exists,
    /// else the defaults.
    ///
    /// # Errors
    /// As [`Config::load_lenient`].
    pub fn load_or_default_lenient(explicit: Option<&Path>, draws: bool) -> Result<Loaded, ConfigError> {
        match explicit {
            Some(path) => Self::load_lenient(path, draws),
            None => match Self::default_path() {
                Some(path) if path.exists() => Self::load_lenient(&path, draws),
                _ => Ok(Loaded { config: Self::default(), warnings: Vec::new() }),
            },
        }
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
        if !link.file_type().is_symlink() {
            return None;
        }
        match std::fs::metadata(&path) {
            Ok(_) => return None,
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                return Some(format!("config {} is a symlink loop ({e}); using the defaults", path.display()));
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Some(format!("config {} cannot be followed ({e}); using the defaults", path.display()));
            }
            Err(_) => {}
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

/// The text of the config file at `path`, refusing what is not a regular file (a FIFO would block every command for
/// ever); an error says the operating system's reason (a symlink loop is "Too many levels of symbolic links").
fn read_config(path: &Path) -> Result<String, ConfigError> {
    let read_error = |source| ConfigError::Read { path: path.to_owned(), source };
    let kind = std::fs::metadata(path).map_err(read_error)?.file_type();
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt as _;
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a device"
        };
        return Err(ConfigError::NotRegular { path: path.to_owned(), what });
    }
    std::fs::read_to_string(path).map_err(read_error)
}

/// A key from the file as it is shown in a message: control characters made visible, cut to about 60 bytes.
fn shown_key(key: &str) -> String {
    crate::text::visible(&crate::text::bounded(key, 60)).into_owned()
}

/// Takes the keys `schema` (the defaults, as JSON) does not have out of `table`, noting each with its line, and
/// goes down into the tables it does have (not into free-form ones such as `[keys]`).
fn prune_unknown(
    table: &mut toml::de::DeTable<'_>,
    schema: &serde_json::Value,
    path: &str,
    text: &str,
    unknown: &mut Vec<UnknownKey>,
) {
    let Some(fields) = schema.as_object() else { return };
    let join = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
    let strays: Vec<(String, usize)> = table
        .iter()
        .filter(|(key, _)| !fields.contains_key(key.get_ref().as_ref()))
        .map(|(key, _)| (key.get_ref().to_string(), key.span().start))
        .collect();
    for (key, at) in strays {
        table.remove(key.as_str());
        unknown.push(UnknownKey { line: line_of(text, at), key: shown_key(&join(&key)) });
    }
    for (key, value) in table.iter_mut() {
        let full = join(key.get_ref());
        if FREE_FORM.contains(&full.as_str()) {
            continue;
        }
        if let (toml::de::DeValue::Table(sub), Some(sub_schema)) = (value.get_mut(), fields.get(key.get_ref().as_ref()))
        {
            prune_unknown(sub, sub_schema, &full, text, unknown);
        }
    }
}

/// Why a cosmetic section (`[ui]`, `[keys]`) of `root` cannot be used, if it cannot.
fn cosmetic_error(root: &toml::de::DeTable<'_>, section: &str, text: &str) -> Option<String> {
    use serde::Deserialize as _;
    let value = root.get(section)?.clone();
    let deserializer = toml::de::ValueDeserializer::from(value);
    let result = match section {
        "ui" => UiConfig::deserialize(deserializer).map(drop),
        _ => match KeyOverrides::deserialize(deserializer) {
            Ok(keys) => return crate::keys::Keymap::with_overrides(&keys).err().map(|e| format!("[keys]: {e}")),
            Err(e) => Err(e),
        },
    };
    result.err().map(|e| one_line(&e, text))
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at.min(text.len())).map_or(1, |before| before.matches('\n').count() + 1)
}

/// The range a setting may take, by the unit in its name: shares and fits from 0 to 1, percentages from 0 to
/// 100, windows from 1 s to 30 days, everything else finite and not negative.
fn check_value(key: &str, value: &toml::Value) -> Result<(), String> {
    let number = match value {
        toml::Value::Float(number) => *number,
        toml::Value::Integer(number) => *number as f64,
        _ => return Err("not a number".to_owned()),
    };
    if number.is_nan() {
        return Err(format!("NaN is not allowed for {key}"));
    }
    if number.is_infinite() {
        return Err(format!("infinity is not allowed for {key}; give a finite number"));
    }
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
        Some((key, _)) if !line.starts_with('[') => {
            format!("line {line_no}, {}{}: {message}", shown_key(&section), shown_key(key.trim()))
        }
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
