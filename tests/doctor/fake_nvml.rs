//! `doctor` on the live NVML path, on the fake NVML (`fake-nvml/`): a watch over an 8-GPU board with two GPUs in
//! MIG mode, and a consumer card that answers NotSupported to everything optional, both end with a verdict.
#![allow(clippy::expect_used, reason = "test helpers panic on a broken fixture or a gpusight that will not start")]

use crate::common::fake_nvml::run_on;
use crate::common::{json, stderr};

#[test]
fn doctor_judges_an_eight_gpu_board_with_mig() {
    let out = run_on("hgx8-mig", &["doctor", "--instant", "--duration", "4s", "--interval", "0.5", "--json"]);
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", stderr(&out));
    let doc = json(&out);
    let findings = doc["findings"].as_array().expect("findings");
    // The slices carry SM activity (GPM per GPU instance): only the rules that need what a slice lacks stay unjudged.
    let mig = findings.iter().find(|f| f["rule"] == "mig-active").expect("mig-active");
    let evidence = mig["evidence"].to_string();
    assert!(evidence.contains("judged by its own SM activity") && !evidence.contains("input-bound"), "{evidence}");
    assert!(!evidence.contains("no slice SM activity"), "{evidence}");
}

#[test]
fn doctor_on_a_consumer_card_has_a_verdict() {
    // --instant without --duration: 2 s of the live path, not the 30 s default.
    let out = run_on("consumer", &["doctor", "--instant", "--interval", "0.5", "--json"]);
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", stderr(&out));
    let doc = json(&out);
    assert!(doc["findings"].is_array());
    assert!(doc["watched"]["duration_s"].as_u64().is_some_and(|s| s <= 2), "{doc}");
    assert_eq!(doc["instant"], true);
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

/// Two jobs on two 3g slices of one H100, whole-GPU SM activity 13 %: the one whose slice is busy is not idle;
/// the one whose slice does nothing while it holds 20 GB is an idle holder. Judged per slice, from each slice's
/// GPM SM activity.
#[test]
fn idle_holder_is_judged_per_mig_slice() {
    let dir = crate::common::temp_dir();
    let slice = |gi: u32, sm: f64| {
        format!(
            "[[gpu.mig_device]]\nprofile = \"3g.40gb\"\ngi = {gi}\nmemory_total_mib = 40192\nmemory_used_mib = 20000\n\
             gpm_sm = {sm:.1}\n"
        )
    };
    let toml = format!(
        "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\nmemory_total_mib = 81559\nmig = true\n\
         [[gpu.phase]]\nmem_used_mib = 40000\ngpm_sm = 13.0\n{}{}\
         [[gpu.process]]\npid = 3300\nmig = 0\nused_mib = 20000\n[[gpu.process]]\npid = 3301\nmig = 1\nused_mib = 20000\n",
        slice(1, 95.0),
        slice(2, 0.0)
    );
    let scenario = crate::common::fake_nvml::scenario_file(dir.path(), "mig-two-jobs", &toml);
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[general]\ngpm_period_s = 1.0\n[thresholds]\nidle_holder_window_s = 3\n").expect("config");
    let config = config.display().to_string();
    let out = run_on(&scenario, &["doctor", "--duration", "6s", "--interval", "0.5", "--json", "--config", &config]);
    let doc = json(&out);
    let idle: Vec<&serde_json::Value> =
        doc["findings"].as_array().expect("findings").iter().filter(|f| f["rule"] == "idle-holder").collect();
    assert!(idle.iter().any(|f| f["pid"] == 3301), "the job on the idle slice: {doc}");
    assert!(!idle.iter().any(|f| f["pid"] == 3300), "the job saturating its slice is not idle: {doc}");
}

/// A link that goes down two seconds into the watch: gpu-errors names it as a link that was up; its neighbour
/// GPU, all links up, has no finding.
#[test]
fn an_nvlink_link_that_goes_down_mid_run_is_named() {
    let dir = crate::common::temp_dir();
    let scenario = crate::common::fake_nvml::scenario_file(
        dir.path(),
        "link-down",
        "name = \"link-down\"\n[[gpu]]\n[gpu.nvlink]\n[[gpu.phase]]\nutil = 100\n\
         [[gpu]]\n[gpu.nvlink]\ndown = [4]\ndown_from_s = 2.0\n[[gpu.phase]]\nutil = 100\n",
    );
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[general]\nhealth_period_s = 1.0\n").expect("config");
    let config = config.display().to_string();
    let out = run_on(&scenario, &["doctor", "--duration", "4s", "--interval", "0.5", "--json", "--config", &config]);
    let doc = json(&out);
    let errors: Vec<&serde_json::Value> =
        doc["findings"].as_array().expect("findings").iter().filter(|f| f["rule"] == "gpu-errors").collect();
    let on = |gpu: u32| errors.iter().find(|f| f["gpu_index"] == gpu).map(|f| f["evidence"].to_string());
    let down = on(1).unwrap_or_else(|| panic!("GPU 1's link 4 went down: {doc}"));
    assert!(down.contains("NVLink link 4 (was up) down of 18"), "{down}");
    assert!(on(0).is_none(), "GPU 0's links are all up: {errors:?}");
}
