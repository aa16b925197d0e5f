//! Why a GPU waits, end to end: `gpusight doctor --synthetic NAME --duration 90s --json` names NAME for each scenario
//! of a GPU waiting on its host or held back (gpu-underfed, launch-bound, h2d-copy-bound, cpu-quota-throttled,
//! remote-dataset-stall, clocks-limited, hbm-hot, memory-bound), with one verdict per waiting GPU, and the healthy
//! scenarios and the demo gain no new warning.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use crate::common::doctor_json as doctor;
use crate::common::warnings;

/// (rule, severity) of every active finding.
fn findings(report: &serde_json::Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (f["rule"].as_str().unwrap_or_default().to_owned(), f["severity"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

#[test]
fn each_waiting_scenario_is_named_by_doctor() {
    for (name, severity) in [
        ("gpu-underfed", "warning"),
        ("launch-bound", "warning"),
        ("h2d-copy-bound", "warning"),
        ("cpu-quota-throttled", "warning"),
        ("remote-dataset-stall", "warning"),
        ("clocks-limited", "warning"),
        ("hbm-hot", "warning"),
        ("memory-bound", "info"),
    ] {
        let (output, report) = doctor(&["--synthetic", name, "--duration", "90s"]);
        let found = findings(&report);
        assert!(found.contains(&(name.to_owned(), severity.to_owned())), "{name}: {found:?}");
        // One verdict: the named finding is the only warning.
        let expected: Vec<String> = if severity == "warning" { vec![name.to_owned()] } else { Vec::new() };
        assert_eq!(warnings(&report), expected, "{name}: {found:?}");
        assert_eq!(output.status.code(), Some(i32::from(severity == "warning")), "{name}");
    }
}

#[test]
fn the_umbrella_names_the_cause_and_the_healthy_stay_quiet() {
    let (_, report) = doctor(&["--synthetic", "launch-bound", "--duration", "90s"]);
    // One verdict per GPU: the account read from the threads names the cause, with the rule's GPU-side evidence after
    // it, and no umbrella beside it.
    let listed = report["findings"].as_array().expect("findings");
    assert!(listed.iter().all(|f| f["rule"] != "gpu-underfed"), "{report}");
    let verdict = listed.iter().find(|f| f["rule"] == "launch-bound").expect("the verdict");
    let evidence = verdict["evidence"].as_str().expect("evidence");
    assert!(
        evidence.starts_with("account over ") && evidence.contains("SM activity is 8 % of utilization"),
        "{verdict}"
    );
    for healthy in ["compute", "idle", "idle-holder", "writer", "hw-blip", "ecc-corrected", "churn"] {
        let (_, report) = doctor(&["--synthetic", healthy, "--duration", "90s"]);
        assert!(warnings(&report).is_empty(), "{healthy}: {:?}", findings(&report));
    }
    // The demo: still only its idle holder at the end, and no new warning among the cleared findings.
    let (_, demo) = doctor(&["--demo"]);
    assert_eq!(warnings(&demo), vec!["idle-holder".to_owned()]);
    let cleared_new: Vec<&serde_json::Value> = demo["cleared"]
        .as_array()
        .expect("cleared")
        .iter()
        .filter(|f| f["severity"] != "info")
        .filter(|f| !["input-bound", "cpu-bound-input"].contains(&f["rule"].as_str().unwrap_or_default()))
        .collect();
    assert!(cleared_new.is_empty(), "{cleared_new:?}");
}

#[test]
fn without_duration_a_synthetic_machine_is_watched_for_every_minute_rule() {
    // Synthetic time costs nothing: with no --duration, doctor watches long enough for the rules judged over a
    // minute, so `doctor --synthetic NAME` names NAME; only idle-holder's five minutes are left unjudged.
    for (name, rule) in [("gpu-underfed", "gpu-underfed"), ("straggler", "rank-straggler"), ("hang", "collective-hang")]
    {
        let (_, report) = doctor(&["--synthetic", name]);
        assert!(findings(&report).iter().any(|(r, _)| r == rule), "{name}: {report}");
        let not_judged: Vec<&str> =
            report["not_judged"].as_array().expect("not_judged").iter().filter_map(|n| n.as_str()).collect();
        assert!(not_judged.iter().all(|n| n.starts_with("idle-holder")), "{name}: {not_judged:?}");
    }
}
