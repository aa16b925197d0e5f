//! Recordings made on a real H200 while real PyTorch jobs ran (scripts/device/findings.sh and newfindings.sh,
//! docs/validation.md), replayed through `doctor --json`: the verdicts seen on the hardware stay the verdicts.
#![allow(clippy::expect_used, clippy::disallowed_methods)] // Tests run the binary and may panic on broken fixtures.

use std::process::Command;

use serde_json::Value;

/// `doctor --replay FIXTURE --json`: the document and the exit code.
fn doctor(fixture: &str) -> (Value, i32) {
    let path = format!("{}/tests/fixtures/h200/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_gpusight"))
        .args(["doctor", "--replay", &path, "--json"])
        .output()
        .expect("gpusight runs");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("doctor prints JSON");
    (doc, out.status.code().expect("an exit code"))
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
