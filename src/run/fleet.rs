//! `--prometheus URL`: every node found in that Prometheus server; `--once` prints it, otherwise the fleet view.

use std::time::Duration;

use crate::cli::Cli;
use crate::config::Config;
use crate::fleet::query::{Fleet, FleetOptions, check_url};

use super::{RunError, emit, emit_json};

/// Prints the fleet once, or runs the fleet view until the user quits.
pub(super) fn run(cli: &Cli, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let url = cli.view.prometheus.as_deref().unwrap_or_default();
    check_url(url).map_err(|e| RunError::Usage(e.to_string()))?;
    if !cli.view.once {
        return crate::fleet::run::run(url, interval.max(Duration::from_secs(1)), &config.keys)
            .map_err(RunError::Interactive);
    }
    let fleet = Fleet::query(url, &FleetOptions::default())?;
    if cli.view.json {
        emit_json(&fleet.to_json())?;
    } else {
        emit(&fleet.to_text())?;
    }
    Ok(0)
}
