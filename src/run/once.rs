//! `--once` (a table, JSON or CSV): one frame and exit. `--status` reads the same pipeline (`run/status.rs`).

use std::time::Duration;

use crate::cli::{Cli, OnceFormat};
use crate::config::Config;
use crate::pipeline::Pipeline;
use crate::source::OptionalReadings;

use super::data::{collect, next_snapshot};
use super::{Data, RunError, capacity, emit, only_visible, replay_into, use_ascii, use_color};

/// `--once`: one frame as a table, JSON or CSV.
pub(super) fn run(data: &Data, cli: &Cli, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let format = match (cli.view.format, cli.view.json) {
        (Some(OnceFormat::Table | OnceFormat::Csv), true) => {
            return Err(RunError::Usage("--json and --format table/csv contradict; give one".into()));
        }
        (Some(format), _) => format,
        (None, true) => OnceFormat::Json,
        (None, false) => OnceFormat::Table,
    };
    let pipeline = once_pipeline(data, cli, config, interval)?;
    let only_gpus =
        if cli.view.only_visible { only_visible(pipeline.history.machine())? } else { cli.data.only.clone() };
    match format {
        OnceFormat::Json => emit(&(crate::output::json::render(&pipeline) + "\n"))?,
        OnceFormat::Csv => emit(&crate::output::csv::render(&pipeline, &only_gpus))?,
        OnceFormat::Table => {
            let options = crate::output::table::TableOptions {
                ascii: use_ascii(cli),
                only_gpus,
                user: cli.view.user.clone(),
                pids: cli.view.pid.clone(),
                fit: super::text_fit(use_color(cli)),
            };
            emit(&crate::output::table::render(&pipeline, &options))?;
        }
    }
    Ok(0)
}

/// The pipeline `--once` shows: a recording up to `--at`, a few synthetic ticks, or two live samples.
pub(super) fn once_pipeline(data: &Data, cli: &Cli, config: &Config, interval: Duration) -> Result<Pipeline, RunError> {
    let capacity = capacity(config, interval);
    match data {
        Data::Recording(recording) => {
            let last = match cli.view.at {
                Some(seconds) => recording.index_at(seconds),
                None => recording.ticks.len().checked_sub(1),
            };
            let last = last.ok_or_else(|| RunError::EmptyRecording(recording.label.clone()))?;
            replay_into(recording, last, config, capacity)
        }
        Data::Synthetic(spec, _) => {
            let n = super::synthetic_at_samples(spec, cli.view.at)?;
            let mut source = data.open_source(config, interval, OptionalReadings::ALL)?;
            collect(source.as_mut(), n, capacity, config.thresholds.clone())
        }
        Data::Live(..) => live_within(data, config, interval, LIVE_DEADLINE),
    }
}

/// How long `--once` waits for its two live samples before it gives up: a driver whose init or calls hang must
/// not hold the command forever. A GPU that stops answering mid-read is reported as not answering well before.
pub const LIVE_DEADLINE: Duration = Duration::from_secs(10);

/// Two live samples (CPU %, I/O rates and GPM need a previous reading), taken on their own thread and waited for
/// until `deadline`: a source that hangs is left behind on that thread, which ends with the process.
fn live_within(data: &Data, config: &Config, interval: Duration, deadline: Duration) -> Result<Pipeline, RunError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (data, config) = (data.clone(), config.clone());
    let sample = move || {
        let done = (|| {
            let capacity = capacity(&config, interval);
            let mut source = data.open_source(&config, interval, OptionalReadings::ALL)?;
            let first = next_snapshot(source.as_mut())?;
            std::thread::sleep(interval.clamp(Duration::from_millis(500), Duration::from_secs(1)));
            let second = next_snapshot(source.as_mut())?;
            Pipeline::from_snapshots([first, second], capacity, config.thresholds.clone())
                .ok_or(RunError::NoFirstSample)
        })();
        let _ = tx.send(done);
    };
    std::thread::Builder::new().name("gpusight-once".into()).spawn(sample).map_err(RunError::Thread)?;
    rx.recv_timeout(deadline).unwrap_or(Err(RunError::NoAnswer(deadline.as_secs())))
}
