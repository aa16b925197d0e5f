//! A watch too short to judge, end to end: `doctor --duration 5s` on a healthy synthetic machine is unknown (3),
//! never healthy, and names the `--duration` that would judge; what a short watch saw still sets 1 or 2; and
//! `--instant` asks for the rules that need no window only, so a short watch of a healthy machine exits 0.
#![allow(clippy::expect_used, reason = "tests run the binary and may panic on broken output")]

use crate::common::{doctor_json, stderr, stdout};

/// The exit status of `doctor ARGS --json` and its document.
fn doctor(args: &[&str]) -> (i32, serde_json::Value) {
    let (output, doc) = doctor_json(args);
    (output.status.code().expect("an exit code"), doc)
}

#[test]
fn a_five_second_watch_of_a_healthy_machine_is_unknown_and_says_which_duration_would_judge() {
    let (code, doc) = doctor(&["--synthetic", "compute", "--duration", "5s"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["exit_code"], 3);
    assert_eq!(doc["verdict"], "unknown");
    assert_eq!(doc["instant"], false);
    let short = &doc["too_short"];
    assert_eq!((short["watched_s"].as_u64(), short["shortest_window_s"].as_u64()), (Some(5), Some(30)), "{doc}");
    assert_eq!(short["duration"], "30s");
    assert_eq!(short["remedy"], "run with --duration 30s or longer");
    assert!(short["windowed_rules"].as_u64().is_some_and(|n| n > 20), "{doc}");
    let summary = doc["summary"]["text"].as_str().expect("summary");
    assert!(summary.starts_with("too short to judge: watched 5 s, the shortest window is 30 s"), "{summary}");
    // The text says it at the top and as the verdict.
    let output = crate::common::command(&["doctor", "--synthetic", "compute", "--duration", "5s", "--no-color"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Summary: too short to judge"), "{text}");
    assert!(text.contains("Too short to judge: watched 5 s; the shortest window is 30 s"), "{text}");
    assert!(text.contains("Run with --duration 30s or longer, or with --instant"), "{text}");
    assert!(!text.contains("No problems found"), "{text}");
}

#[test]
fn a_short_watch_that_sees_a_gpu_fall_off_the_bus_is_critical() {
    // The synthetic GPU is lost at its 20th sample: 25 s is still shorter than the 30 s windows.
    let (code, doc) = doctor(&["--synthetic", "gpu-lost", "--duration", "25s"]);
    assert_eq!(code, 2, "{doc}");
    assert_eq!(doc["verdict"], "critical");
    assert!(doc["too_short"].is_object(), "the windowed rules were still not judged: {doc}");
    assert_eq!(crate::common::finding(&doc, "gpu-errors")["severity"], "critical");
}

#[test]
fn instant_checks_the_rules_without_a_window_in_two_samples() {
    // Without --duration, two intervals: three samples, not the 30 s default.
    let (code, doc) = doctor(&["--synthetic", "compute", "--instant"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!((doc["verdict"].as_str(), doc["instant"].as_bool()), (Some("ok"), Some(true)), "{doc}");
    assert_eq!((doc["watched"]["samples"].as_u64(), doc["watched"]["duration_s"].as_u64()), (Some(3), Some(2)));
    assert!(doc["instant_rules"].as_array().is_some_and(|r| r.iter().any(|r| r == "gpu-errors")), "{doc}");
    assert_eq!(doc["not_judged"].as_array().map(Vec::len), Some(0), "the windowed rules were not asked for: {doc}");
    // What it sees still counts.
    let (code, doc) = doctor(&["--synthetic", "gpu-lost", "--duration", "25s", "--instant"]);
    assert_eq!((code, doc["verdict"].as_str()), (2, Some("critical")), "{doc}");
}
