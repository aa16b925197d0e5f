//! `doctor` on the live NVML path, on the fake NVML (`fake-nvml/`): a watch over an 8-GPU board with two GPUs in
//! MIG mode, and a consumer card that answers NotSupported to everything optional, both end with a verdict.
#![allow(clippy::expect_used, reason = "test helpers panic on a broken fixture or a gpusight that will not start")]

use crate::common::fake_nvml::run_on;
use crate::common::{json, stderr};

#[test]
fn doctor_judges_an_eight_gpu_board_with_mig() {
    let out = run_on("hgx8-mig", &["doctor", "--duration", "4s", "--interval", "0.5", "--json"]);
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", stderr(&out));
    let doc = json(&out);
    assert!(doc["findings"].is_array(), "{doc}");
}

#[test]
fn doctor_on_a_consumer_card_has_a_verdict() {
    let out = run_on("consumer", &["doctor", "--duration", "3s", "--interval", "0.5", "--json"]);
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", stderr(&out));
    assert!(json(&out)["findings"].is_array());
}
