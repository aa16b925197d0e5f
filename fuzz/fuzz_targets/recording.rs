//! Fuzzes the size-limited recording reader (with small limits, so the bounds are reached), then everything a
//! recording reaches: the pipeline (history and advice), the `--once` table, `doctor`, `report`, and one frame of
//! the monitor drawn into a test terminal. No text output may carry a control character from the input.
#![no_main]

use std::sync::Arc;

use gpusight::pipeline::Pipeline;
use gpusight::sample::Snapshot;
use gpusight::source::replay::{ReadLimits, Recording};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = ReadLimits { max_line_bytes: 64 << 10, max_total_bytes: 1 << 20, max_gpus: 64, max_ticks_kept: 1_000 };
    let Ok(recording) = Recording::from_reader_with_limits(data, "fuzz input", "fuzz".to_owned(), limits) else {
        return;
    };
    let mut ticks = recording.ticks.iter().take(16);
    let Some(first) = ticks.next() else { return };
    let snapshot = |tick: &gpusight::sample::Tick| Snapshot { machine: Arc::clone(&recording.machine), tick: tick.clone() };
    let mut pipeline = Pipeline::new(&snapshot(first), 64, gpusight::advice::Thresholds::default());
    for tick in ticks {
        pipeline.ingest(&snapshot(tick));
    }
    let _ = pipeline.findings_seen();
    let table = gpusight::output::table::render(&pipeline, &gpusight::output::table::TableOptions::default());
    let doctor = gpusight::doctor::DoctorReport::new(&pipeline);
    let report = gpusight::report::Report::new(&pipeline.history, Some(pipeline.first_tick()));
    for text in [table, doctor.to_text(false), report.to_markdown()] {
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "a control character reached a text output");
    }
    let _ = (doctor.to_json(), report.to_json(), gpusight::output::json::render(&pipeline));
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
        terminal.draw(|frame| gpusight::ui::draw_view(frame, &app)).expect("draw");
    }
});
