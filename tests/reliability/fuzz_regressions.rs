//! Inputs the fuzzers found that crashed gpusight, each replayed through what its fuzz target exercises, so the
//! fix stays fixed. The inputs live in tests/fixtures/fuzz/.
#![allow(clippy::expect_used, reason = "helpers outside #[test] functions; failing there fails the test")]

use std::sync::Arc;

use gpusight::app::{App, AppOptions, Feed};
use gpusight::pipeline::Pipeline;
use gpusight::sample::Snapshot;
use gpusight::source::replay::Recording;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::common::repo_path;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(repo_path(&format!("tests/fixtures/fuzz/{name}"))).expect("fixture")
}

/// What the `recording` fuzz target does: read, feed the pipeline, open the app on it, play it, draw it.
fn play_and_draw(bytes: &[u8]) -> Recording {
    let recording = Recording::from_reader(bytes, "fixture", "fixture".to_owned()).expect("a readable recording");
    let snapshot =
        |tick: &gpusight::sample::Tick| Snapshot { machine: Arc::clone(&recording.machine), tick: tick.clone() };
    let mut ticks = recording.ticks.iter();
    let first = ticks.next().expect("a tick");
    let mut pipeline = Pipeline::new(&snapshot(first), 64, gpusight::advice::Thresholds::default());
    for tick in ticks {
        pipeline.ingest(&snapshot(tick));
    }
    let feed = Feed::Recording {
        machine: Arc::clone(&recording.machine),
        ticks: recording.ticks.clone(),
        label: "fixture".to_owned(),
    };
    let options = AppOptions { own_uid: 1000, own_user: None, history_capacity: 64, ..AppOptions::default() };
    let mut app = App::new(options, &feed).expect("app");
    let _ = app.advance_playback(std::time::Duration::from_hours(1));
    for (w, h) in [(120, 40), (80, 24)] {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        terminal.draw(|frame| gpusight::ui::draw_view(frame, &app)).expect("draw");
    }
    recording
}

#[test]
fn a_recording_whose_clock_steps_back_plays_and_draws() {
    // Found by `cargo fuzz run recording`: the second tick is earlier than the first; the player's position
    // subtracted the first time from the current one and overflowed while drawing the header.
    let recording = play_and_draw(&fixture("recording-clock-steps-back.jsonl"));
    let times: Vec<u64> = recording.ticks.iter().map(|t| t.at_ms).collect();
    assert!(times.windows(2).any(|w| w[1] < w[0]), "the fixture's clock steps back: {times:?}");
}

/// What the `prometheus` fuzz target found: any answer that parses, an empty vector included, built into a fleet
/// whose source URL carries a password printed the password in the text's first line ("Fleet from
/// http://user:pw@..."): the model kept the URL it was given, and only `Fleet::query` redacted it first.
#[test]
fn a_fleet_built_from_a_url_with_a_password_never_prints_it() {
    use gpusight::fleet::query::{Answers, Fleet, FleetOptions, QUERIES, parse_vector};
    let text = String::from_utf8(fixture("prometheus-empty-vector.json")).expect("utf-8");
    let samples = parse_vector(&text).expect("a query result");
    let answers: Answers = QUERIES.iter().map(|q| ((*q).to_owned(), samples.clone())).collect();
    let fleet = Fleet::from_answers("http://user:pw@fuzz:9090", &answers, 0.0, &FleetOptions::default());
    let text = fleet.to_text();
    assert!(!text.contains("pw@") && text.contains("http://user:***@fuzz:9090"), "{text}");
    assert!(!fleet.to_json().to_string().contains("pw@"));
}
