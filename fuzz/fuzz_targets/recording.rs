//! Fuzzes the recording reader, then everything a recording reaches: the pipeline (history and advice) and one
//! frame of the monitor drawn into a test terminal.
#![no_main]

use std::sync::Arc;

use gpusight::pipeline::Pipeline;
use gpusight::sample::Snapshot;
use gpusight::source::replay::Recording;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(recording) = Recording::from_reader(data, "fuzz input", "fuzz".to_owned()) else { return };
    let mut ticks = recording.ticks.iter().take(16);
    let Some(first) = ticks.next() else { return };
    let snapshot = |tick: &gpusight::sample::Tick| Snapshot { machine: Arc::clone(&recording.machine), tick: tick.clone() };
    let mut pipeline = Pipeline::new(&snapshot(first), 64, gpusight::advice::Thresholds::default());
    for tick in ticks {
        pipeline.ingest(&snapshot(tick));
    }
    let _ = pipeline.findings_seen();
    let feed = gpusight::app::Feed::Recording {
        machine: Arc::clone(&recording.machine),
        ticks: recording.ticks.iter().take(16).cloned().collect(),
        label: "fuzz".to_owned(),
    };
    let options = gpusight::app::AppOptions { own_uid: 1000, own_user: None, history_capacity: 64, ..Default::default() };
    let Ok(mut app) = gpusight::app::App::new(options, &feed) else { return };
    let _ = app.advance_playback(std::time::Duration::from_secs(3600));
    for (w, h) in [(120, 40), (80, 24)] {
        let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).expect("terminal");
        terminal.draw(|frame| gpusight::ui::draw(frame, &app)).expect("draw");
    }
});
