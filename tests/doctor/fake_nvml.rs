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

#[test]
fn nvlink_links_down_or_with_climbing_errors_are_found() {
    let dir = crate::common::temp_dir();
    let config = dir.path().join("config.toml");
    // The health tier (ECC, NVLink) every second, so a short watch sees the counters climb.
    std::fs::write(&config, "[general]\nhealth_period_s = 1.0\n").expect("config");
    let config = config.display().to_string();
    let out = run_on("nvl72", &["doctor", "--duration", "4s", "--interval", "0.5", "--json", "--config", &config]);
    assert!(matches!(out.status.code(), Some(1..=2)), "{}", stderr(&out));
    let doc = json(&out);
    let errors: Vec<&serde_json::Value> =
        doc["findings"].as_array().expect("findings").iter().filter(|f| f["rule"] == "gpu-errors").collect();
    let on = |gpu: u32| errors.iter().find(|f| f["gpu_index"] == gpu).map(|f| f["evidence"].to_string());
    let down = on(17).unwrap_or_else(|| panic!("GPU 17's link down: {errors:?}"));
    assert!(down.contains("NVLink link 3 down of 18"), "{down}");
    let climbing = on(40).unwrap_or_else(|| panic!("GPU 40's climbing errors: {errors:?}"));
    assert!(climbing.contains("NVLink data-link errors") && climbing.contains("link 7"), "{climbing}");
    assert!(on(0).is_none(), "a healthy neighbour has no NVLink finding: {errors:?}");
}
