//! The command line: flags, subcommands, picking the source, and exit codes. `main.rs` only calls [`main`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::Config;
use crate::source::SourceError;

/// Exit code when no NVIDIA driver could be used, or the command line was wrong (as clap does for bad flags).
pub const EXIT_NO_DRIVER: i32 = 2;
/// Exit code for any other failure (bad file, unreadable recording, port in use).
pub const EXIT_FAILURE: i32 = 1;

/// gpusight: a terminal GPU monitor that says why your training job is slow.
#[derive(Debug, Parser)]
#[command(name = "gpusight", version, about, long_about = None, args_conflicts_with_subcommands = false)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub view: ViewArgs,
}

/// Where the data comes from, and recording. Shared by every command.
#[derive(Debug, Args, Clone, Default)]
pub struct DataArgs {
    /// Play the recording of a real H200 embedded in the binary (works on any machine).
    #[arg(long, global = true, conflicts_with_all = ["replay", "synthetic"])]
    pub demo: bool,
    /// Play a recording made with --record.
    #[arg(long, value_name = "FILE", global = true, conflicts_with = "synthetic")]
    pub replay: Option<PathBuf>,
    /// Use a synthetic machine: `SCENARIO[:GPUS[xPROCS]]`, e.g. input-bound, mixed:8, scale:8x1000.
    #[arg(long, value_name = "SPEC", global = true)]
    pub synthetic: Option<String>,
    /// For tests: list a real PID (with its start ticks) as a GPU process of the synthetic machine.
    #[arg(long, value_name = "PID[:START_TICKS]", global = true, hide = true)]
    pub synthetic_attach: Vec<String>,
    /// Seconds between samples (0.1 to 60).
    #[arg(long, value_name = "SECONDS", global = true)]
    pub interval: Option<f64>,
    /// Record what is sampled to FILE (JSON Lines).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// With --record: record without drawing until SIGINT/SIGTERM/SIGHUP.
    #[arg(long, requires = "record")]
    pub headless: bool,
    /// With --record: replace FILE if it exists.
    #[arg(long, requires = "record")]
    pub overwrite: bool,
    /// Read the config from FILE instead of the platform path.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
}

/// How to show it.
#[derive(Debug, Args, Clone, Default)]
pub struct ViewArgs {
    /// Print one snapshot as a table and exit.
    #[arg(short = '1', long)]
    pub once: bool,
    /// With --once (or doctor/report): print JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// On a recording or a synthetic machine: start at SECONDS from its start, with the history up to there
    /// (--once: that frame; default the last frame, or for --demo the first warning).
    #[arg(long, value_name = "SECONDS")]
    pub at: Option<f64>,
    /// Show only these GPUs (NVML indices).
    #[arg(long, value_name = "GPU", num_args = 1.., value_delimiter = ',')]
    pub only: Vec<u32>,
    /// Show only processes of this user.
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// Show only these processes.
    #[arg(long, value_name = "PID", num_args = 1.., value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// No signals and no environment screen.
    #[arg(long)]
    pub readonly: bool,
    /// No colour (also when NO_COLOR is set).
    #[arg(long, global = true)]
    pub no_color: bool,
    /// ASCII only: no box drawing, braille or block glyphs.
    #[arg(long, global = true)]
    pub ascii: bool,
    /// Colour theme: default, light or colorblind.
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,
    /// Show the fleet found in this Prometheus server instead of this machine.
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,
    /// Show only the GPUs CUDA_VISIBLE_DEVICES makes visible (nvitop's -ov).
    #[arg(long)]
    pub only_visible: bool,
    /// Monitor: show only processes with a compute context (C or C+G).
    #[arg(long)]
    pub compute: bool,
    /// Monitor: show only processes with a graphics context (G or C+G).
    #[arg(long)]
    pub graphics: bool,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Watch for a while, print every finding with its evidence and remedy; exit 0 (healthy), 1 (warnings) or
    /// 2 (critical).
    Doctor {
        /// How long to watch, e.g. 30s, 2m.
        #[arg(long, default_value = "30s", value_parser = parse_duration)]
        duration: Duration,
    },
    /// A reproducibility record of the machine and its steady state (Markdown, or --json).
    Report {
        /// How long to watch, e.g. 10m.
        #[arg(long, default_value = "10m", value_parser = parse_duration)]
        duration: Duration,
    },
    /// Serve Prometheus metrics with dcgm-exporter's names on /metrics.
    Export {
        /// Address to listen on. Loopback by default; give 0.0.0.0:9400 to serve the network.
        #[arg(long, default_value = "127.0.0.1:9400")]
        listen: std::net::SocketAddr,
    },
}

/// Parses `30s`, `10m`, `1h`, `500ms` or a plain number of seconds.
///
/// # Errors
/// Text that is not a duration, phrased for a person.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("'{text}' is not a duration; try 30s, 10m or 1h"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("unknown unit '{other}' in '{text}'; use ms, s, m or h")),
    };
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 7.0 * 86_400.0 {
        return Err(format!("'{text}' is out of range (more than 0, at most 7 days)"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Runs gpusight with the process's arguments and returns the exit code.
#[must_use]
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_NO_DRIVER } else { 0 };
        }
    };
    match crate::run::run(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpusight: {e}");
            match e {
                RunError::Source(SourceError::NoDriver(_)) | RunError::Usage(_) => EXIT_NO_DRIVER,
                _ => EXIT_FAILURE,
            }
        }
    }
}

/// Why a command failed; each message is one line for a person.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Record(#[from] crate::source::replay::RecordError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Other(String),
}

/// The configuration with the command line's overrides applied and checked.
///
/// # Errors
/// A bad config file or an out-of-range interval.
pub fn effective_config(data: &DataArgs) -> Result<Config, RunError> {
    let mut config = Config::load_or_default(data.config.as_deref())?;
    if let Some(interval) = data.interval {
        config.general.interval_s = interval;
    }
    let interval = config.general.interval_s;
    if !(0.1..=60.0).contains(&interval) {
        return Err(RunError::Usage(format!("interval {interval} s is out of range: use 0.1 to 60 seconds")));
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("0s").is_err());
    }

    #[test]
    fn the_command_line_parses() {
        let cli = Cli::try_parse_from(["gpusight", "--demo", "--once", "--json"]).expect("parse");
        assert!(cli.data.demo && cli.view.once && cli.view.json);
        let cli =
            Cli::try_parse_from(["gpusight", "doctor", "--duration", "60s", "--replay", "x.jsonl"]).expect("parse");
        assert!(matches!(cli.command, Some(Command::Doctor { duration }) if duration == Duration::from_secs(60)));
        assert!(Cli::try_parse_from(["gpusight", "--demo", "--replay", "x"]).is_err());
        assert!(Cli::try_parse_from(["gpusight", "--headless"]).is_err());
    }
}
