//! The interactive monitor: a recording is played by the app; live and synthetic data come from the sampler
//! thread, recorded on the way when `--record` is given, and each of their samples leaves the state `--status`
//! reads (`output::status_file`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::app::{AppOptions, Feed, HostInspector, NotOnThisMachine, PidfdSender, PlaybackStart, ProcessInspector};
use crate::cli::Cli;
use crate::config::Config;
use crate::output::status_file::StateWriter;
use crate::sample::Snapshot;
use crate::source::replay::Recorder;
use crate::source::{OptionalReadings, Source};

use super::data::next_snapshot;
use super::feed::{OnWriteError, Tap, spawn_feed};
use super::record::max_bytes;
use crate::config::ui::ThemeName;

use super::{Data, RunError, capacity, only_visible, use_ascii, use_color};

/// What reads a process's environment and libraries: `/proc` for a live source only. A synthetic or recorded
/// process does not run here, and its PID may be any local process's.
fn inspector(data: &Data) -> Box<dyn ProcessInspector> {
    match data {
        Data::Live(..) => Box::new(HostInspector::default()),
        Data::Synthetic(..) => Box::new(NotOnThisMachine { what: "synthetic" }),
        Data::Recording(_) => Box::new(NotOnThisMachine { what: "recorded" }),
    }
}

/// Runs the monitor until the user quits; returns its exit code.
pub(super) fn run(data: Data, cli: &Cli, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let mut options = options(cli, config, interval)?;
    let status = data.status_key().map(|key| StateWriter::new(&key, interval, "monitor"));
    options.process_inspector = inspector(&data);
    let (feed, sampler) = match data {
        Data::Recording(recording) => {
            if recording.ticks.is_empty() {
                return Err(RunError::EmptyRecording(recording.label));
            }
            (Feed::Recording { machine: recording.machine, ticks: recording.ticks, label: recording.label }, None)
        }
        live_or_synthetic => {
            // The screens do not show GR engine active; a recording keeps every reading.
            let optional = if cli.data.record.is_some() { OptionalReadings::ALL } else { OptionalReadings::NONE };
            let mut source = live_or_synthetic.open_source(config, interval, optional)?;
            let first = next_snapshot(source.as_mut())?;
            let backlog = synthetic_backlog(&live_or_synthetic, source.as_mut(), cli.view.at)?;
            let recorder = match &cli.data.record {
                Some(path) => {
                    let mut recorder = Recorder::create(path, &first.machine, cli.data.overwrite)?
                        .with_max_bytes(max_bytes(&cli.data));
                    recorder.write(&first.tick)?;
                    Some(recorder)
                }
                None => None,
            };
            let tap = Tap { recorder: Arc::new(Mutex::new(recorder)), on_error: OnWriteError::KeepSampling };
            let (sampler, rx) = spawn_feed(source, interval, true, Some(tap))?;
            (Feed::Live { first: Box::new(first), backlog, rx }, Some(sampler))
        }
    };
    if cli.view.only_visible {
        let machine = match &feed {
            Feed::Recording { machine, .. } => Arc::clone(machine),
            Feed::Live { first, .. } => Arc::clone(&first.machine),
        };
        options.only_gpus = Some(only_visible(&machine)?);
    }
    let code = super::event_loop::run(options, feed, status).map_err(RunError::Interactive);
    drop(sampler);
    code
}

/// `--at` on a synthetic machine: the samples up to there go first (its time is virtual), as many as
/// `--once --at` runs through and bounded the same way; none otherwise.
fn synthetic_backlog(data: &Data, source: &mut dyn Source, at: Option<f64>) -> Result<Vec<Snapshot>, RunError> {
    let mut backlog = Vec::new();
    if let (Data::Synthetic(spec, _), Some(_)) = (data, at) {
        // The first sample is taken already.
        let n = super::synthetic_at_samples(spec, at)?.saturating_sub(1);
        for _ in 0..n {
            match source.next_snapshot()? {
                Some(snapshot) => backlog.push(snapshot),
                None => break,
            }
        }
    }
    Ok(backlog)
}

/// The colour theme: `--theme`, else the config's `[ui] theme` (`--no-color` and `NO_COLOR` win over both where
/// the views paint).
pub(super) fn theme(cli: &Cli, config: &Config) -> Result<ThemeName, RunError> {
    let Some(theme) = &cli.view.theme else { return Ok(config.ui.theme) };
    let name = if theme == "default" { "dark" } else { theme.as_str() };
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|_| RunError::Usage(format!("unknown theme '{theme}': use default, light, colorblind or no-color")))
}

/// The monitor's options from the command line and the config.
pub(super) fn options(cli: &Cli, config: &Config, interval: Duration) -> Result<AppOptions, RunError> {
    let mut ui = config.ui.clone();
    ui.theme = theme(cli, config)?;
    Ok(AppOptions {
        interval,
        readonly: cli.view.readonly,
        only_gpus: (!cli.data.only.is_empty()).then(|| cli.data.only.clone()),
        user: cli.view.user.clone(),
        pids: cli.view.pid.clone(),
        compute: cli.view.compute,
        graphics: cli.view.graphics,
        ui,
        no_color: !use_color(cli),
        ascii: use_ascii(cli),
        keys: config.keys.clone(),
        thresholds: config.thresholds.clone(),
        history_capacity: capacity(config, interval),
        own_uid: rustix::process::getuid().as_raw(),
        own_user: std::env::var("USER").ok(),
        process_inspector: Box::new(HostInspector::default()),
        signal_sender: Box::new(PidfdSender::default()),
        // `--demo` opens where it gets interesting, with the history up to there; `--at` where asked.
        start: match (cli.view.at, cli.data.demo) {
            (Some(seconds), _) => PlaybackStart::At(seconds),
            (None, true) => PlaybackStart::FirstWarning,
            (None, false) => PlaybackStart::Beginning,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::synthetic::SyntheticSpec;

    #[test]
    fn only_a_live_source_reads_proc_for_the_environment() {
        let own = std::process::id();
        let synthetic = Data::Synthetic(SyntheticSpec::parse("compute").expect("spec"), None);
        let said = inspector(&synthetic).environment(own).expect_err("nothing read from /proc");
        assert!(said.starts_with("not available for a synthetic process"), "{said}");
        let recording = Data::Recording(crate::source::replay::Recording::demo().expect("demo"));
        let said = inspector(&recording).environment(own).expect_err("nothing read from /proc");
        assert!(said.starts_with("not available for a recorded process"), "{said}");
        let live = Data::Live(None, super::super::data::HostNaming::resolve(None, None, false));
        assert!(inspector(&live).environment(own).is_ok(), "a live process's environment is read");
    }
}
