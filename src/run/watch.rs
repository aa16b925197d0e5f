//! `doctor` and `report` watch for a while: live in real time (with progress on a terminal, Ctrl-C ending it
//! early with what it has), synthetic in virtual time, a recording over its whole length.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::pipeline::Pipeline;
use crate::source::OptionalReadings;

use super::data::collect;
use super::feed::{LiveFeed, Next, spawn_feed};
use super::{Data, RunError, capacity, replay_into};

/// What a watch gave: the pipeline, and whether Ctrl-C ended it before its duration.
pub(super) struct Watched {
    pub pipeline: Pipeline,
    pub cut_short: bool,
}

/// Which command watches, for its progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Watcher {
    Doctor,
    Report,
}

impl Watcher {
    fn name(self) -> &'static str {
        match self {
            Self::Doctor => "doctor",
            Self::Report => "report",
        }
    }
}

/// Watches for `duration`: live in real time, synthetic in virtual time, a recording over its whole length.
pub(super) fn watch(
    data: &Data,
    config: &Config,
    interval: Duration,
    duration: Duration,
    watcher: Watcher,
) -> Result<Watched, RunError> {
    let needed = capacity(config, interval).max(duration_samples(duration, interval) + 1);
    let done = |pipeline| Watched { pipeline, cut_short: false };
    match data {
        Data::Recording(recording) => {
            let last = recording.ticks.len().saturating_sub(1);
            replay_into(recording, last, config, needed.max(recording.ticks.len())).map(done)
        }
        Data::Synthetic(..) => {
            let mut source = data.open_source(config, interval, OptionalReadings::NONE)?;
            let n = duration_samples(duration, interval) as u64 + 1;
            collect(source.as_mut(), n, needed, config.thresholds.clone()).map(done)
        }
        Data::Live(..) => watch_live(data, config, interval, duration, watcher, needed),
    }
}

fn watch_live(
    data: &Data,
    config: &Config,
    interval: Duration,
    duration: Duration,
    watcher: Watcher,
    capacity: usize,
) -> Result<Watched, RunError> {
    let source = data.open_source(config, interval, OptionalReadings::NONE)?;
    let machine = source.machine();
    let mut feed = LiveFeed::new(spawn_feed(source, interval, false, None)?, &machine);
    let interrupt = Interrupt::install()?;
    let progress = Progress::new(watcher);
    let deadline = Instant::now() + duration;
    let mut pipeline: Option<Pipeline> = None;
    let mut cut_short = false;
    // Stalls and notes are not said: the progress line owns stderr's last line.
    let quiet = |_: &str| {};
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if interrupt.raised() {
            cut_short = true;
            break;
        }
        progress.show(left, pipeline.as_ref());
        match feed.next(left.min(Duration::from_millis(250)), &quiet) {
            Next::Snapshot(snapshot) => match &mut pipeline {
                Some(p) => p.ingest_owned(*snapshot),
                None => pipeline = Some(Pipeline::new(&snapshot, capacity, config.thresholds.clone())),
            },
            Next::Failed(message) => {
                progress.clear();
                return Err(RunError::SamplingStopped(message));
            }
            Next::Ended => break,
            Next::Idle => {}
        }
    }
    progress.clear();
    feed.sampler.stop();
    drop(interrupt);
    let pipeline = pipeline.ok_or(RunError::NoSampleInWindow)?;
    Ok(Watched { pipeline, cut_short })
}

/// How many samples `duration` holds at `interval`, at least one.
fn duration_samples(duration: Duration, interval: Duration) -> usize {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "ceil of a positive, finite ratio")]
    let n = (duration.as_secs_f64() / interval.as_secs_f64().max(0.001)).ceil() as usize;
    n.max(1)
}

/// Progress of a live watch on stderr, only when stderr is a terminal: the time left and the findings so far.
struct Progress {
    watcher: Watcher,
    on: bool,
}

impl Progress {
    fn new(watcher: Watcher) -> Self {
        use std::io::IsTerminal;
        Self { watcher, on: std::io::stderr().is_terminal() }
    }

    fn show(&self, left: Duration, pipeline: Option<&Pipeline>) {
        if self.on {
            let findings = pipeline.map_or(0, |p| p.findings().len());
            let _ = write!(std::io::stderr(), "\r\x1b[2K{}", progress_line(self.watcher.name(), left, findings));
        }
    }

    fn clear(&self) {
        if self.on {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// The progress line of a live watch.
fn progress_line(command: &str, left: Duration, findings: usize) -> String {
    format!(
        "gpusight {command}: {} s left, {findings} finding{} so far (Ctrl-C stops and prints what was seen)",
        left.as_secs(),
        if findings == 1 { "" } else { "s" }
    )
}

/// Ctrl-C (SIGINT) during a live watch: the first sets a flag so the watch ends and prints what it has; a
/// second one ends the process as usual. The handlers are removed when the watch ends.
struct Interrupt {
    flag: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl Interrupt {
    fn install() -> Result<Self, RunError> {
        let flag = Arc::new(AtomicBool::new(false));
        let bad = |source| RunError::Signals { what: "Ctrl-C", source };
        let sigint = signal_hook::consts::SIGINT;
        let ids = vec![
            signal_hook::flag::register_conditional_default(sigint, Arc::clone(&flag)).map_err(bad)?,
            signal_hook::flag::register(sigint, Arc::clone(&flag)).map_err(bad)?,
        ];
        Ok(Self { flag, ids })
    }

    fn raised(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    #[test]
    fn ctrl_c_during_a_watch_sets_the_flag_instead_of_ending_the_process() {
        let interrupt = Interrupt::install().expect("handlers");
        assert!(!interrupt.raised());
        signal_hook::low_level::raise(signal_hook::consts::SIGINT).expect("raise");
        assert!(interrupt.raised(), "the first Ctrl-C ends the watch, not the process");
        drop(interrupt);
    }

    #[test]
    fn progress_says_the_time_left_and_the_findings_so_far() {
        assert_eq!(
            progress_line("doctor", Duration::from_millis(12_400), 1),
            "gpusight doctor: 12 s left, 1 finding so far (Ctrl-C stops and prints what was seen)"
        );
        assert!(progress_line("report", Duration::ZERO, 3).starts_with("gpusight report: 0 s left, 3 findings"));
        let mut source = SyntheticSource::new(SyntheticSpec::parse("idle").expect("spec"));
        let pipeline = collect(&mut source, 11, 60, Config::default().thresholds).expect("pipeline");
        assert_eq!(super::super::report::seconds(&pipeline), 10);
    }
}
