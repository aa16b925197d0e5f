//! Benchmarks of the monitor's frame: a full frame drawn with ratatui's `TestBackend` at 80x24 and 200x60 for
//! 8 GPUs x 500 processes with 900 ticks of history and for the demo recording's last frame, and one whole
//! update for a new snapshot (ingest, advice, frame) at 8 GPUs x 1,000 processes. The budget (product.md):
//! ingest + advice + a full frame <= 5 ms per tick. Run with `cargo bench --bench render -- --quick`.

#![allow(clippy::expect_used, reason = "a benchmark with a broken fixture should stop loudly")]

use std::hint::black_box;
use std::sync::mpsc;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use gpusight::app::{App, AppOptions, Feed, FeedEvent, NoInspector};
use gpusight::keys::Action;
use gpusight::source::Source;
use gpusight::source::replay::Recording;
use gpusight::source::synthetic::{SyntheticSource, SyntheticSpec};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const SIZES: [(u16, u16); 2] = [(80, 24), (200, 60)];

fn options() -> AppOptions {
    AppOptions {
        own_uid: 1001,
        own_user: Some("alice".into()),
        history_capacity: 900,
        process_inspector: Box::new(NoInspector),
        ..AppOptions::default()
    }
}

/// An app fed `n` ticks of `spec`, and the source to take the next ticks from.
fn synthetic_app(spec: &str, n: u64) -> (App, SyntheticSource) {
    let mut source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("valid spec"));
    let first = source.next_snapshot().expect("tick").expect("some");
    let (_tx, rx) = mpsc::channel();
    let mut app = App::new(options(), &Feed::Live { first: Box::new(first), backlog: Vec::new(), rx }).expect("app");
    for _ in 1..n {
        app.on_feed(FeedEvent::Snapshot(Box::new(source.next_snapshot().expect("tick").expect("some"))));
    }
    (app, source)
}

/// The demo recording at its last tick.
fn demo_app() -> App {
    let recording = Recording::demo().expect("the embedded demo recording");
    let feed = Feed::Recording { machine: recording.machine, ticks: recording.ticks, label: "demo (H200)".into() };
    let mut app = App::new(options(), &feed).expect("app");
    app.update(Action::JumpEnd);
    app
}

fn frames(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    let (scale, _) = synthetic_app("scale:8x500", 900);
    let demo = demo_app();
    for (name, app) in [("scale:8x500", &scale), ("demo-last", &demo)] {
        for (w, h) in SIZES {
            let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
            group.bench_function(BenchmarkId::new(name, format!("{w}x{h}")), |b| {
                b.iter(|| {
                    // A forced full redraw: the diff against the last frame would otherwise hide the writing.
                    terminal.clear().expect("clear");
                    terminal.draw(|frame| gpusight::ui::draw_view(frame, black_box(app))).expect("draw");
                });
            });
        }
    }
    group.finish();
}

fn whole_update(c: &mut Criterion) {
    let mut group = c.benchmark_group("update");
    let (mut app, mut source) = synthetic_app("scale:8x1000", 900);
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    // Each iteration takes the source's next tick (made in the untimed setup), so time moves forward as it
    // does live and the history and rules see a steady stream, not the same ticks again.
    let mut next = move || Box::new(source.next_snapshot().expect("tick").expect("some"));
    group.bench_function("ingest+advice+frame/scale:8x1000/200x60", |b| {
        b.iter_batched(
            &mut next,
            |snapshot| {
                app.on_feed(FeedEvent::Snapshot(snapshot));
                terminal.draw(|frame| gpusight::ui::draw_view(frame, &app)).expect("draw");
            },
            BatchSize::SmallInput,
        );
    });
    group.bench_function("ingest+advice/scale:8x1000", |b| {
        b.iter_batched(&mut next, |snapshot| app.on_feed(FeedEvent::Snapshot(snapshot)), BatchSize::SmallInput);
    });
    group.bench_function("frame/scale:8x1000/200x60", |b| {
        b.iter(|| {
            terminal.draw(|frame| gpusight::ui::draw_view(frame, black_box(&app))).expect("draw");
        });
    });
    group.finish();
}

criterion_group!(benches, frames, whole_update);
criterion_main!(benches);
