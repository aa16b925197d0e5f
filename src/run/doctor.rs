//! `gpusight doctor`: watch, then print every finding with its evidence and remedy; the exit code says the worst.

use std::time::Duration;

use crate::cli::{Cli, ColorWhen};
use crate::config::Config;
use crate::doctor::{DoctorReport, Scope};

use super::watch::{Watcher, watch};
use super::{Data, RunError, emit, emit_json, use_ascii, use_color};

/// doctor's own flags.
#[derive(Debug, Clone, Copy)]
pub(super) struct Options {
    pub color: ColorWhen,
    pub count_cleared: bool,
    /// `--instant`: only the rules that need no window are asked for.
    pub instant: bool,
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
    let duration = if options.instant {
        instant_default(cli, interval, duration)
    } else {
        synthetic_default(data, cli, config, duration)
    };
    let watched = watch(data, config, interval, duration, Watcher::Doctor)?;
    let scope = if options.instant { Scope::Instant } else { Scope::Every };
    let mut report = DoctorReport::scoped(&watched.pipeline, scope);
    report.recording = matches!(data, Data::Recording(..));
    report.count_cleared = options.count_cleared;
    report.cut_short_of_s = watched.cut_short.then_some(duration.as_secs());
    if cli.view.json {
        emit_json(&report.to_json())?;
    } else {
        let color = color(cli, options.color);
        // Blocks in the accounts' bars only where doctor colours: a terminal that takes one takes the other; a log
        // or a pipe gets ASCII.
        report.ascii = use_ascii(cli) || !color;
        emit(&report.to_text_fitted(super::text_fit(true).with_color(color)))?;
    }
    Ok(report.exit_code())
}

/// On a synthetic machine, whose time costs nothing, doctor without `--duration` watches long enough for every rule
/// judged over a minute or two (gpu-underfed, rank-straggler, collective-hang, vram-growing), so `doctor --synthetic NAME`
/// names NAME; idle-holder's five minutes still need `--duration 5m`. Live machines keep the 30 s default.
fn synthetic_default(data: &Data, cli: &Cli, config: &Config, duration: Duration) -> Duration {
    if !matches!(data, Data::Synthetic(..)) || cli.duration_given {
        return duration;
    }
    let t = &config.thresholds;
    let minute = [t.window_s, t.underfed_window_s, t.straggler_window_s, t.hang_window_s, t.vram_growth_window_s];
    duration.max(Duration::from_secs(minute.into_iter().max().unwrap_or(0)))
}

/// With `--instant` and no `--duration`, two intervals (at least 2 s): three samples at the default interval, enough
/// for every rule that needs no window, each of which judges every sample on its own; the floor leaves a live
/// sampler time for its first sample on a slow machine. Waiting the default 30 s would judge nothing more that was
/// asked for.
pub(super) fn instant_default(cli: &Cli, interval: Duration, duration: Duration) -> Duration {
    if cli.duration_given { duration } else { (interval * 2).max(INSTANT_MIN) }
}

/// The shortest watch `--instant` takes without `--duration`.
const INSTANT_MIN: Duration = Duration::from_secs(2);

/// doctor's colours: `always` and `never` as said; `auto` only on a terminal, and not with --no-color or NO_COLOR.
fn color(cli: &Cli, when: ColorWhen) -> bool {
    use std::io::IsTerminal;
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => use_color(cli) && std::io::stdout().is_terminal(),
    }
}
