//! The `--once` table and the JSON document on fixed data (synthetic machines and the embedded demo), as insta
//! snapshots: a change to either output shows up in review.
#![allow(clippy::expect_used, reason = "fixtures that fail to build should stop the test loudly")]

use gpusight::advice::Thresholds;
use gpusight::output::table::TableOptions;
use gpusight::pipeline::Pipeline;
use gpusight::sample::Snapshot;
use gpusight::source::replay::Recording;

use crate::common::synthetic_pipeline;

/// A pipeline over the demo recording up to `seconds` from its start.
fn demo(seconds: f64) -> Pipeline {
    let recording = Recording::demo().expect("demo");
    let last = recording.index_at(seconds).expect("index");
    let snapshot = |i: usize| Snapshot { machine: recording.machine.clone(), tick: recording.ticks[i].clone() };
    let mut pipeline = Pipeline::new(&snapshot(0), 900, Thresholds::default());
    for i in 1..=last {
        pipeline.ingest(&snapshot(i));
    }
    pipeline
}

#[test]
fn once_table_on_a_mixed_8_gpu_box_with_findings() {
    insta::assert_snapshot!(
        "once_mixed8",
        gpusight::output::table::render(&synthetic_pipeline("mixed:8", 40, 900), &TableOptions::default())
    );
}

#[test]
fn once_table_on_a_lost_gpu() {
    insta::assert_snapshot!(
        "once_gpu_lost",
        gpusight::output::table::render(
            &synthetic_pipeline("gpu-lost:2", 25, 900),
            &TableOptions { ascii: true, ..TableOptions::default() }
        )
    );
}

#[test]
fn once_table_on_the_demo_in_its_input_bound_phase() {
    let text = gpusight::output::table::render(&demo(150.0), &TableOptions::default());
    assert!(text.contains("train.py --data /mnt/nfs/imagenet"), "{text}");
    insta::assert_snapshot!("once_demo_150s", text);
}

#[test]
fn once_json_on_a_two_gpu_box() {
    let mut json: serde_json::Value =
        serde_json::from_str(&gpusight::output::json::render(&synthetic_pipeline("loader:2", 3, 900)))
            .expect("valid JSON");
    assert_eq!(json["schema"], "gpusight.snapshot/1");
    // The version changes with every release; the document's shape is what the snapshot is about.
    json["gpusight_version"] = serde_json::Value::String("[version]".to_owned());
    insta::assert_json_snapshot!("once_json_loader2", json);
}

#[test]
fn once_table_filters_by_gpu_user_and_pid() {
    let pipeline = synthetic_pipeline("mixed:8", 3, 900);
    let only = |options: TableOptions| gpusight::output::table::render(&pipeline, &options);
    let text = only(TableOptions { only_gpus: vec![1, 2], ..TableOptions::default() });
    let gpu_rows: Vec<&str> = text.lines().filter(|l| l.contains(" H200 ")).collect();
    assert_eq!(gpu_rows.len(), 2, "{text}");
    assert!(text.contains("3001") && text.contains("4001") && !text.contains("2001"), "{text}");
    let text = only(TableOptions { user: Some("carol".to_owned()), ..TableOptions::default() });
    assert!(text.contains("4001") && !text.contains("3001"), "{text}");
    let text = only(TableOptions { pids: vec![5001], ..TableOptions::default() });
    assert!(text.contains("5001") && !text.contains("4001"), "{text}");
    let text = only(TableOptions { user: Some("nobody".to_owned()), ..TableOptions::default() });
    assert!(text.contains("No GPU processes match."), "{text}");
}
