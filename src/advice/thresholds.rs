//! The rules' thresholds and windows, configurable under `[thresholds]`.

use serde::{Deserialize, Serialize};

/// Thresholds and windows of every rule. Defaults are in `config.example.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Seconds a condition must hold before most findings appear.
    pub window_s: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self { window_s: 30 }
    }
}
