//! Recordings made on a real H200 while real PyTorch jobs ran (scripts/device/findings.sh and newfindings.sh,
//! docs/validation.md), replayed through `doctor --json`: the verdicts seen on the hardware stay the verdicts.
#![allow(clippy::expect_used, clippy::disallowed_methods)] // Tests run the binary and may panic on broken fixtures.

use serde_json::Value;

mod common;

/// `doctor --replay FIXTURE --json`: the document and the exit code.
fn doctor(fixture: &str) -> (Value, i32) {
    let path = format!("{}/tests/fixtures/h200/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let (output, doc) = common::doctor_json(&["--replay", &path]);
    (doc, output.status.code().expect("an exit code"))
}

fn rules(doc: &Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (f["rule"].as_str().unwrap_or("").to_owned(), f["severity"].as_str().unwrap_or("").to_owned()))
        .collect()
}

#[test]
fn a_loader_behind_a_slow_store_is_input_bound() {
    // ResNet-50 reading 24,000 small raw files through 2 DataLoader workers held behind io.max (600 reads/s,
    // 64 MiB/s) with the page cache dropped every second: torch.profiler put the DataLoader at 98.7 % of the step.
    // The workers read about 3 MiB/s and sat in D; a 5 MiB/s floor on "in D while reading" once hid this.
    let (doc, code) = doctor("small-files.jsonl.gz");
    assert_eq!(code, 1, "{doc}");
    assert_eq!(rules(&doc), vec![("input-bound".to_owned(), "warning".to_owned())], "{doc}");
    let finding = &doc["findings"][0];
    assert_eq!(finding["pid"], 775, "the training process");
    assert!(finding["evidence"].as_str().unwrap_or("").contains("a DataLoader child in 100 %"), "{finding}");
}

/// The findings at warning or worse.
fn warnings(doc: &Value) -> Vec<String> {
    rules(doc).into_iter().filter(|(_, s)| s == "warning" || s == "critical").map(|(r, _)| r).collect()
}

#[test]
fn pageable_copies_are_h2d_copy_bound_and_the_rest_is_said_under_it() {
    // 1 GiB from pageable memory each step with a tiny reduction: the profiler put copies at 99.6 % of the step, at
    // 9.55 GB/s. Everything else that holds on the GPU is info "secondary to" the one verdict.
    let (doc, code) = doctor("h2d-pageable.jsonl.gz");
    assert_eq!(code, 1, "{doc}");
    assert_eq!(warnings(&doc), ["h2d-copy-bound"], "{doc}");
}

#[test]
fn copies_hidden_under_compute_are_not_a_finding() {
    // Pinned copies at 54 GB/s on a side stream under bf16 matmuls: the GPU is busy (util 78 %, 680 W).
    let (doc, code) = doctor("h2d-overlap.jsonl.gz");
    assert_eq!(code, 0, "{doc}");
    assert!(warnings(&doc).is_empty(), "{doc}");
}

#[test]
fn a_dataset_read_over_http_is_a_remote_dataset_stall() {
    // Each JPEG from a 127.0.0.1 server sleeping 20 ms per request: DataLoader 54 % of the step.
    let (doc, code) = doctor("remote-http.jsonl.gz");
    assert_eq!(code, 1, "{doc}");
    assert_eq!(warnings(&doc), ["remote-dataset-stall"], "{doc}");
}

#[test]
fn the_same_job_from_local_disk_names_no_input_cause() {
    // The same job reading local files. It was underfed for real (GPU util mean 17 %: its main thread, at 98 % of a
    // core, spent most of the wall time in the profiler's trace callback while the workers idled), so the umbrella
    // may say so; no input or storage cause may be named.
    let (doc, _) = doctor("remote-local.jsonl.gz");
    for rule in rules(&doc).iter().map(|(r, _)| r.as_str()) {
        assert!(
            !matches!(rule, "input-bound" | "cpu-bound-input" | "remote-dataset-stall" | "cpu-quota-throttled"),
            "{rule} named on local files: {doc}"
        );
    }
    assert!(warnings(&doc).iter().all(|r| r == "gpu-underfed"), "{doc}");
}
