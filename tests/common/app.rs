//! The monitor without a terminal: built on a synthetic machine or a recording, fed snapshots, drawn into a test
//! terminal.

use std::sync::mpsc;

use gpusight::app::{App, AppOptions, Feed, FeedEvent};
use gpusight::sample::Snapshot;
use gpusight::source::Source;
use gpusight::source::replay::Recording;
use gpusight::source::synthetic::{SyntheticSource, SyntheticSpec};

/// A synthetic machine of `spec` (`mixed:8`, `input-bound`...).
pub fn synthetic(spec: &str) -> SyntheticSource {
    SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"))
}

/// The next snapshot of `source`, which must have one.
pub fn next_snapshot(source: &mut impl Source) -> Snapshot {
    source.next_snapshot().expect("tick").expect("some")
}

/// The monitor on live data whose first snapshot is `first`.
pub fn live_app(options: AppOptions, first: Snapshot) -> App {
    let (_tx, rx) = mpsc::channel();
    App::new(options, &Feed::Live { first: Box::new(first), backlog: Vec::new(), rx }).expect("app")
}

/// The monitor fed `n_ticks` snapshots of `source`, each changed by `edit` first.
pub fn fed_app(options: AppOptions, source: &mut impl Source, n_ticks: u64, edit: impl Fn(&mut Snapshot)) -> App {
    let mut first = next_snapshot(source);
    edit(&mut first);
    let mut app = live_app(options, first);
    for _ in 1..n_ticks {
        let mut snapshot = next_snapshot(source);
        edit(&mut snapshot);
        app.on_feed(FeedEvent::Snapshot(Box::new(snapshot)));
    }
    app
}

/// The monitor playing `recording`.
pub fn replay_app(options: AppOptions, recording: Recording) -> App {
    let feed = Feed::Recording { machine: recording.machine, ticks: recording.ticks, label: recording.label };
    App::new(options, &feed).expect("app")
}

/// The monitor drawn into a `width` x `height` test terminal, as text (trailing spaces trimmed).
pub fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| gpusight::ui::draw_view(frame, app)).unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..height {
        let line: String = (0..width).map(|x| buffer[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
