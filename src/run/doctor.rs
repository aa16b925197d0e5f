//! `gpusight doctor`: watch, then print every finding with its evidence and remedy; the exit code says the worst.

use std::time::Duration;

use crate::cli::{Cli, ColorWhen};
use crate::config::Config;

use super::watch::{Watcher, watch};
use super::{Data, RunError, emit, emit_json, use_color};

/// doctor's own flags.
#[derive(Debug, Clone, Copy)]
pub(super) struct Options {
    pub color: ColorWhen,
    pub count_cleared: bool,
}

/// Watches for `duration` and prints the diagnosis; returns its exit code (0 to 3).
pub(super) fn run(
    data: &Data,
    cli: &Cli,
    config: &Config,
    duration: Duration,
    options: Options,
) -> Result<i32, RunError> {
    let interval = Duration::from_secs_f64(config.general.interval_s);
    let watched = watch(data, config, interval, duration, Watcher::Doctor)?;
    let mut report = crate::doctor::DoctorReport::new(&watched.pipeline);
    report.count_cleared = options.count_cleared;
    report.cut_short_of_s = watched.cut_short.then_some(duration.as_secs());
    if cli.view.json {
        emit_json(&report.to_json())?;
    } else {
        emit(&report.to_text(color(cli, options.color)))?;
    }
    Ok(report.exit_code())
}

/// doctor's colours: `always` and `never` as said; `auto` only on a terminal, and not with --no-color or NO_COLOR.
fn color(cli: &Cli, when: ColorWhen) -> bool {
    use std::io::IsTerminal;
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => use_color(cli) && std::io::stdout().is_terminal(),
    }
}
