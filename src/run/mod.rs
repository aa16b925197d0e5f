//! Runs a parsed command line: resolves the data flags into a [`Data`], then hands over to one module per mode.
//!
//! Every mode that samples in real time gets its sampler the same way ([`feed::spawn_feed`]) and builds its
//! pipeline the same way ([`Pipeline::from_ticks`] for a recording, [`Pipeline::from_snapshots`] for ticks a
//! source gave as fast as it could). `cli.rs` only parses; it imports nothing from here.
//!
//! | Mode | Module |
//! |---|---|
//! | the interactive monitor | `run/monitor.rs` |
//! | `--once` | `run/once.rs` |
//! | `--status` | `run/status.rs` |
//! | `doctor` | `run/doctor.rs` |
//! | `report` | `run/report.rs` |
//! | `--record FILE --headless` | `run/record.rs` |
//! | `export` | `run/export.rs` |
//! | `--prometheus URL` | `run/fleet.rs` |
//! | `ssh HOSTS…` | `run/ssh.rs` (its live view in `run/ssh/view.rs`) |
//! | `healthcheck` | `run/healthcheck.rs` |
//! | `config check` | `run/config_check.rs` |

mod config_check;
mod data;
mod doctor;
mod error;
mod event_loop;
mod export;
pub mod feed;
mod fleet;
mod healthcheck;
mod monitor;
mod once;
mod record;
mod report;
mod ssh;
mod status;
mod terminal_events;
mod watch;

use std::io::Write as _;
use std::time::Duration;

use crate::cli::{Cli, Command, DataArgs};
use crate::config::Config;
use crate::flag_checks::terminal_caps;
use crate::pipeline::Pipeline;
use crate::sample::MachineInfo;

pub use data::Data;
pub use error::RunError;
pub use feed::StallNotice;

/// Exit code of every command that could not run (no driver, a bad command line or config, an unreadable file, the
/// port in use, a write error, the monitor without a terminal): see [`crate::exit`].
pub const EXIT_CANNOT_RUN: i32 = crate::exit::CANNOT_RUN;

/// Runs gpusight with the process's arguments and returns the exit code. `main.rs` only calls this.
#[must_use]
pub fn main() -> i32 {
    // First of all, so that a driver library that crashes the process leaves the terminal usable and says why.
    crate::crash::install();
    crate::terminal::install_error_report();
    let args: Vec<String> = std::env::args().collect();
    let cli = match crate::cli::parse(&args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => return print_help(&e),
        Err(e) => {
            let _ = e.print();
            return EXIT_CANNOT_RUN;
        }
    };
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            // Messages can quote what came from outside (a path, a server's answer): no control character passes.
            let _ = writeln!(std::io::stderr(), "gpusight: {}", crate::text::visible(&e.to_string()));
            // Whatever the command and the cause: the monitoring convention's "unknown", never "critical".
            EXIT_CANNOT_RUN
        }
    }
}

/// Runs the command line and returns the exit code.
///
/// # Errors
/// Any failure, phrased for a person.
pub fn run(cli: &Cli) -> Result<i32, RunError> {
    match &cli.command {
        Some(Command::Completions { shell }) => return write_stdout(&crate::completions::completions(*shell)),
        Some(Command::Man) => return write_stdout(&crate::completions::man_page().map_err(RunError::ManPage)?),
        Some(Command::Config { action: crate::cli::ConfigAction::Check { file } }) => {
            return Ok(config_check::run(file.as_deref().or(cli.data.config.as_deref())));
        }
        Some(Command::Healthcheck { url, web_config_file, timeout }) => {
            return Ok(healthcheck::run(url.as_deref(), web_config_file.as_deref(), *timeout));
        }
        _ => {}
    }
    for warning in crate::flag_checks::check(cli).map_err(RunError::Usage)? {
        warn(&warning);
    }
    if let Some(Command::Ssh(args)) = &cli.command {
        let draws = !args.once && !args.doctor && !args.list;
        return ssh::run(cli, args, &effective_config(&cli.data, draws)?);
    }
    // Only the monitor and the fleet view read [ui] and [keys]: elsewhere a bad value there is a warning.
    let draws = cli.command.is_none() && !cli.view.once && !cli.view.status && !cli.data.headless;
    let config = effective_config(&cli.data, draws)?;
    let interval = Duration::from_secs_f64(config.general.interval_s);
    let data = Data::from_args(&cli.data, interval)?;
    match &cli.command {
        Some(Command::Doctor { duration, color, count_cleared, instant }) => doctor::run(
            &data,
            cli,
            &config,
            *duration,
            doctor::Options { color: *color, count_cleared: *count_cleared, instant: *instant },
        ),
        Some(Command::Report { duration }) => report::run(&data, cli, &config, *duration),
        Some(Command::Export { listen, web_config_file }) => {
            export::run(&data, &config, interval, *listen, web_config_file.as_deref())
        }
        Some(
            Command::Completions { .. }
            | Command::Man
            | Command::Config { .. }
            | Command::Healthcheck { .. }
            | Command::Ssh(_),
        ) => Ok(0),
        None if cli.data.headless => record::run(&data, &cli.data, &config, interval),
        None if cli.view.status => status::run(&data, cli, &config, interval),
        None if cli.view.prometheus.is_some() && !cli.view.once && !has_terminal() => Ok(no_terminal()),
        None if cli.view.prometheus.is_some() => fleet::run(cli, &config, interval),
        None if cli.view.once => once::run(&data, cli, &config, interval),
        None if cli.data.record.as_deref().is_some_and(|p| p.as_os_str() == "-") => {
            Err(RunError::Usage("--record - streams to stdout, where the monitor draws: add --headless".into()))
        }
        None if !has_terminal() => Ok(no_terminal()),
        None => monitor::run(data, cli, &config, interval),
    }
}

/// The configuration with the command line's overrides applied and checked. Unknown keys are warned about and
/// ignored; `draws`: whether the command reads `[ui]` and `[keys]` (see [`Config::parse_lenient`]).
///
/// # Errors
/// A bad config file or an out-of-range interval.
pub fn effective_config(data: &DataArgs, draws: bool) -> Result<Config, RunError> {
    if data.config.is_none()
        && let Some(warning) = Config::default_path_warning()
    {
        warn(&warning);
    }
    let loaded = Config::load_or_default_lenient(data.config.as_deref(), draws)?;
    for warning in &loaded.warnings {
        warn(warning);
    }
    let mut config = loaded.config;
    if let Some(interval) = data.interval {
        config.general.interval_s = interval;
    }
    let interval = config.general.interval_s;
    if !(0.1..=60.0).contains(&interval) {
        let interval = crate::text::echo_number(interval);
        return Err(RunError::Usage(format!("interval {interval} s is out of range: use 0.1 to 60 seconds")));
    }
    Ok(config)
}

/// A line on stderr, "gpusight: " first (never a panic, even when stderr is a closed pipe); text from outside is
/// made visible.
pub fn warn(message: &str) {
    let _ = writeln!(std::io::stderr(), "gpusight: {}", crate::text::visible(message));
}

/// `--help` or `--version` on stdout, checked as every output is: 0 once written (or when the reader went away),
/// else one line on stderr and [`EXIT_CANNOT_RUN`].
fn print_help(e: &clap::Error) -> i32 {
    use std::io::IsTerminal as _;
    let styled = e.render();
    let styles = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = if styles && terminal_caps().color { styled.ansi().to_string() } else { styled.to_string() };
    emit_or_fail(&text, 0)
}

/// Writes `text` to stdout as [`emit`] does: `code` once written, else the error on stderr and [`EXIT_CANNOT_RUN`].
fn emit_or_fail(text: &str, code: i32) -> i32 {
    match emit(text) {
        Ok(()) => code,
        Err(e) => {
            warn(&e.to_string());
            EXIT_CANNOT_RUN
        }
    }
}

/// Writes a one-shot output to stdout. A reader that went away (`| head -1`) ends the command quietly, as it
/// does for other command-line tools; any other write error (a full disk) is one line, not a panic.
fn emit(text: &str) -> Result<(), RunError> {
    emit_bytes(text.as_bytes())
}

fn emit_bytes(bytes: &[u8]) -> Result<(), RunError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(RunError::Stdout(e)),
    }
}

fn emit_json(value: &serde_json::Value) -> Result<(), RunError> {
    emit(&(serde_json::to_string_pretty(value).unwrap_or_default() + "\n"))
}

/// [`emit`] for a whole command's output (completions, the man page): exit 0 once written.
fn write_stdout(bytes: &[u8]) -> Result<i32, RunError> {
    emit_bytes(bytes).map(|()| 0)
}

/// The interactive views draw on a terminal: both stdin and stdout must be one.
fn has_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// One line instead of the terminal library's "No such device or address" (ssh without -t, cron, a pipe).
fn no_terminal() -> i32 {
    warn(
        "the monitor needs a terminal (stdin and stdout); without one use --once [--json|--format csv], --status, \
         or `gpusight doctor` (ssh: use ssh -t)",
    );
    EXIT_CANNOT_RUN
}

fn use_color(cli: &Cli) -> bool {
    !cli.view.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && terminal_caps().color
}

/// How a one-shot text output (`--once`, `doctor`) fits where it goes: the width from `COLUMNS`, else the
/// terminal's when stdout is one, else none (a pipe gets full lines); colour when `color` allows it and stdout is
/// a terminal.
fn text_fit(color: bool) -> crate::output::fit::Fit {
    use std::io::IsTerminal as _;
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let size = if terminal { rustix::termios::tcgetwinsize(&stdout).ok().map(|w| w.ws_col) } else { None };
    let columns = std::env::var("COLUMNS").ok();
    crate::output::fit::Fit {
        width: crate::output::fit::width_from(columns.as_deref(), size),
        color: color && terminal,
    }
}

/// `--ascii`, or a terminal without box drawing (`TERM` unset on a terminal, `dumb`, `vt100`, `xterm-mono`).
fn use_ascii(cli: &Cli) -> bool {
    cli.view.ascii || !terminal_caps().unicode
}

/// The most samples `--at` may ask a synthetic machine to run through (the longest history kept).
const MAX_AT_SAMPLES: u64 = 100_000;
/// The most work `--at` may ask a synthetic machine for: samples times processes, each process read, stored and
/// judged once per sample (about 5 µs in a release build, so some 25 s at most).
const MAX_AT_WORK: u64 = 5_000_000;

/// How many samples a synthetic machine runs through to reach `at` seconds (two without it: rates need a previous
/// sample). Refused, with the largest `--at` that would do, when it is past [`MAX_AT_SAMPLES`] or the samples
/// times the processes are past [`MAX_AT_WORK`]: the frame is built by running every sample before it, and
/// `scale:64x100000 --at 99999` would take hours.
fn synthetic_at_samples(spec: &crate::source::synthetic::SyntheticSpec, at: Option<f64>) -> Result<u64, RunError> {
    let interval_ms = spec.interval_ms.max(1);
    let Some(seconds) = at else { return Ok(2) };
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a non-negative count, bounded below")]
    let samples = (seconds.max(0.0) * 1000.0 / interval_ms as f64).min(u64::MAX as f64 / 2.0) as u64 + 1;
    // The scenario's own processes (a few per GPU) and the extra ones of GPUSxPROCS.
    let processes = u64::from(spec.n_gpus) * (u64::from(spec.processes_per_gpu) + 4);
    let most = (MAX_AT_WORK / processes.max(1)).clamp(2, MAX_AT_SAMPLES);
    if samples <= most {
        return Ok(samples);
    }
    let largest = (most - 1) * interval_ms / 1000;
    let fewer = if most < MAX_AT_SAMPLES { ", or fewer processes" } else { "" };
    let seconds = crate::text::echo_number(seconds);
    Err(RunError::Usage(format!(
        "--at {seconds} is past what a synthetic machine is run to here: the frame needs about {samples} samples of \
         about {processes} processes ({} process-samples) run before it, and gpusight runs at most {MAX_AT_SAMPLES} \
         samples and {MAX_AT_WORK} process-samples: give --at {largest} or less{fewer}",
        samples.saturating_mul(processes),
    )))
}

/// The samples the history keeps: `history_s` at this interval, at least 60 and at most 100,000.
fn capacity(config: &Config, interval: Duration) -> usize {
    let samples = config.general.history_s as f64 / interval.as_secs_f64().max(0.01);
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "ceil of a positive, finite ratio")]
    let samples = samples.ceil() as usize;
    samples.clamp(60, 100_000)
}

/// A pipeline over a recording's ticks up to `last` (inclusive).
fn replay_into(
    recording: &crate::source::replay::Recording,
    last: usize,
    config: &Config,
    capacity: usize,
) -> Result<Pipeline, RunError> {
    let ticks = recording.ticks.get(..=last).unwrap_or(&recording.ticks);
    Pipeline::from_ticks(&recording.machine, ticks, capacity, config.thresholds.clone())
        .ok_or_else(|| RunError::EmptyRecording(recording.label.clone()))
}

/// `--only-visible`: the GPUs `CUDA_VISIBLE_DEVICES` makes visible (all of them when it is not set).
fn only_visible(machine: &MachineInfo) -> Result<Vec<u32>, RunError> {
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(value) => match crate::source::visible::visible_gpus(&value, &machine.gpus).map_err(RunError::Usage)? {
            gpus if gpus.is_empty() => Err(RunError::Usage("CUDA_VISIBLE_DEVICES is empty: no GPU is visible".into())),
            gpus => Ok(gpus),
        },
        Err(_) => Ok(machine.gpus.iter().map(|g| g.index).collect()),
    }
}
