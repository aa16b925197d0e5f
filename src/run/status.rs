//! `--status`: one line for a status bar. When a watcher on this machine (the monitor, `export`) keeps a fresh
//! state of the same data ([`crate::output::status_file`]), the line is the watcher's, findings included; else it
//! is one sample, taken on its own thread and waited for at most [`DEADLINE`] (a hung NVML init or call prints
//! `?` markers instead of hanging the status bar), and `{finding}` reads `?`: one sample judges nothing. A
//! recording is read to its last frame, with its findings, as `--once` reads it.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::cli::Cli;
use crate::config::Config;
use crate::output::status::{
    NO_ANSWER_MARKER, NO_GPU_MARKER, StatusLine, StatusOptions, StatusTemplate, render_line, utf8_locale,
};
use crate::output::status_file;
use crate::pipeline::Pipeline;
use crate::sample::MachineInfo;
use crate::source::{OptionalReadings, SourceError};

use super::data::next_snapshot;
use super::{Data, EXIT_CANNOT_RUN, RunError, capacity, emit, use_ascii, warn};

/// How long `--status` waits for its own sample before it prints what it has.
pub(super) const DEADLINE: Duration = Duration::from_secs(2);

/// The schema of `--status --json`.
const JSON_SCHEMA: &str = "gpusight.status/1";

/// What the line was made from.
enum Outcome {
    /// A watcher's fresh state (which watcher), or a pipeline (`None`).
    Line(StatusLine, Option<String>),
    /// No driver: the no-GPU marker, as before a driver is installed.
    NoDriver,
    /// The sample did not come in time; the machine, when the source had opened.
    TimedOut(Option<Arc<MachineInfo>>),
}

/// `--status` (and `--status --json`).
pub(super) fn run(data: &Data, cli: &Cli, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let deadline = Instant::now() + DEADLINE;
    let options = options(cli)?;
    let outcome = match data {
        Data::Recording(_) => {
            Outcome::Line(StatusLine::from_pipeline(&super::once::once_pipeline(data, cli, config, interval)?), None)
        }
        _ => match data.status_key().and_then(|key| status_file::read_fresh(&key)) {
            Some(state) => Outcome::Line(state.line, Some(state.watcher)),
            None => sample_within(data, config, interval, deadline)?,
        },
    };
    let (line, watcher, code) = match outcome {
        Outcome::Line(line, watcher) => (line, watcher, 0),
        Outcome::NoDriver => (StatusLine::default(), None, EXIT_CANNOT_RUN),
        Outcome::TimedOut(machine) => {
            warn(&format!("no sample within {} s: GPUs that did not answer read '?'", DEADLINE.as_secs()));
            (machine.map(|m| StatusLine::unanswered(&m)).unwrap_or_default(), None, crate::exit::WARNING)
        }
    };
    let line = line.only(&cli.data.only);
    if cli.view.json {
        let doc = serde_json::json!({ "schema": JSON_SCHEMA, "watcher": watcher, "status": line });
        emit(&(doc.to_string() + "\n"))?;
        return Ok(code);
    }
    let text = if line.gpus.is_empty() && code == crate::exit::WARNING {
        NO_ANSWER_MARKER.to_owned()
    } else {
        render_line(&line, &options)
    };
    // Without a driver the marker is the whole line.
    let text = if code == EXIT_CANNOT_RUN { NO_GPU_MARKER.to_owned() } else { text };
    emit(&(text + "\n"))?;
    Ok(code)
}

/// The template, `--only` and ASCII (`--ascii`, a dumb terminal, or a locale that is not UTF-8).
fn options(cli: &Cli) -> Result<StatusOptions, RunError> {
    let template = match &cli.view.status_format {
        Some(text) => StatusTemplate::parse(text).map_err(|e| RunError::Usage(e.to_string()))?,
        None => StatusTemplate::default(),
    };
    let env = |name| std::env::var(name).ok();
    let utf8 = utf8_locale(env("LC_ALL").as_deref(), env("LC_CTYPE").as_deref(), env("LANG").as_deref());
    Ok(StatusOptions { template, only_gpus: cli.data.only.clone(), ascii: use_ascii(cli) || !utf8 })
}

/// One sample on its own thread, waited for until `deadline`: a source that hangs (NVML init, a GPU's call) is
/// left behind on that thread, which ends with the process.
fn sample_within(data: &Data, config: &Config, interval: Duration, deadline: Instant) -> Result<Outcome, RunError> {
    enum Message {
        Machine(Arc<MachineInfo>),
        Done(Result<StatusLine, RunError>),
    }
    let (tx, rx) = mpsc::channel();
    let (data, config) = (data.clone(), config.clone());
    let sample = move || {
        let done = (|| {
            let mut source = data.open_source(&config, interval, OptionalReadings::NONE)?;
            let _ = tx.send(Message::Machine(source.machine()));
            let first = next_snapshot(source.as_mut())?;
            let pipeline = Pipeline::new(&first, capacity(&config, interval), config.thresholds.clone());
            // One sample judges nothing, whatever a rule may say about it.
            Ok(StatusLine { judged: false, ..StatusLine::from_pipeline(&pipeline) })
        })();
        let _ = tx.send(Message::Done(done));
    };
    std::thread::Builder::new().name("gpusight-status".into()).spawn(sample).map_err(RunError::Thread)?;
    let mut machine = None;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Message::Machine(m)) => machine = Some(m),
            Ok(Message::Done(Ok(line))) => return Ok(Outcome::Line(line, None)),
            Ok(Message::Done(Err(RunError::Source(SourceError::NoDriver(_))))) => return Ok(Outcome::NoDriver),
            Ok(Message::Done(Err(e))) => return Err(e),
            Err(_) => return Ok(Outcome::TimedOut(machine)),
        }
    }
}
