//! `gpusight report`: watch, then print the reproducibility record (Markdown, or JSON).

use std::time::Duration;

use crate::cli::Cli;
use crate::config::Config;
use crate::pipeline::Pipeline;
use crate::units::duration_label;

use super::watch::{Watcher, watch};
use super::{Data, RunError, emit, emit_json};

/// Watches for `duration` and prints the record; exit 0.
pub(super) fn run(data: &Data, cli: &Cli, config: &Config, duration: Duration) -> Result<i32, RunError> {
    let interval = Duration::from_secs_f64(config.general.interval_s);
    let watched = watch(data, config, interval, duration, Watcher::Report)?;
    let pipeline = &watched.pipeline;
    let mut report = crate::report::Report::new(&pipeline.history, Some(pipeline.first_tick()));
    (report.accounts, report.accounts_note) = crate::doctor::watch_accounts(pipeline);
    let cut_short = watched.cut_short.then(|| {
        format!(
            "CUT SHORT by Ctrl-C after {} of the {} asked for: this is what was seen so far.",
            duration_label(seconds(pipeline)),
            duration_label(duration.as_secs())
        )
    });
    if cli.view.json {
        let mut doc = report.to_json();
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("cut_short".to_owned(), serde_json::Value::Bool(cut_short.is_some()));
        }
        emit_json(&doc)?;
    } else {
        let cut = cut_short.map(|line| format!("> **{line}**\n\n")).unwrap_or_default();
        emit(&(cut + &report.to_markdown()))?;
    }
    Ok(0)
}

/// Seconds between the first and the newest sample of a pipeline.
pub(super) fn seconds(pipeline: &Pipeline) -> u64 {
    let history = &pipeline.history;
    history.times.get(0).copied().zip(history.now_ms()).map_or(0, |(a, b)| b.saturating_sub(a) / 1000)
}
