//! Multi-GPU jobs end to end: `gpusight doctor --synthetic straggler --duration 90s --json` names rank-straggler on
//! GPU 1, `doctor --synthetic hang` (collective-hang's two minutes, the synthetic default) names collective-hang, and
//! the other scenarios gain neither.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use crate::common::{command, warnings};

fn doctor(args: &[&str]) -> serde_json::Value {
    crate::common::doctor_json(args).1
}

fn findings(report: &serde_json::Value) -> Vec<serde_json::Value> {
    report["findings"].as_array().expect("findings").clone()
}

#[test]
fn doctor_names_the_straggler_on_gpu_1() {
    let report = doctor(&["--synthetic", "straggler", "--duration", "90s"]);
    let all = findings(&report);
    let straggler = all.iter().find(|f| f["rule"] == "rank-straggler").expect("rank-straggler");
    assert_eq!((straggler["gpu_index"].as_u64(), straggler["pid"].as_u64()), (Some(1), Some(3001)), "{straggler}");
    assert_eq!(straggler["severity"], "warning");
    // Its own cause is named, and the waiting rank's GPU names the straggler rather than "cause unknown".
    assert!(straggler["evidence"].as_str().expect("evidence").contains("cpu-bound-input"), "{straggler}");
    let mut warned = warnings(&report);
    warned.sort();
    assert_eq!(warned, vec!["cpu-bound-input".to_owned(), "rank-straggler".to_owned()], "{all:#?}");
}

#[test]
fn doctor_names_the_hang() {
    let report = doctor(&["--synthetic", "hang"]);
    let all = findings(&report);
    let hang = all.iter().find(|f| f["rule"] == "collective-hang").expect("collective-hang");
    assert_eq!(hang["severity"], "critical");
    assert_eq!(warnings(&report), vec!["collective-hang".to_owned()], "{all:#?}");
}

#[test]
fn older_scenarios_gain_no_job_finding() {
    for name in ["compute", "mixed", "input-bound", "launch-bound", "gpu-underfed", "churn"] {
        let report = doctor(&["--synthetic", name, "--duration", "90s"]);
        let job_rules: Vec<serde_json::Value> = findings(&report)
            .into_iter()
            .filter(|f| f["rule"] == "rank-straggler" || f["rule"] == "collective-hang")
            .collect();
        assert!(job_rules.is_empty(), "{name}: {job_rules:?}");
    }
}

fn once(args: &[&str]) -> String {
    let output = command(&["--once"]).args(args).output().expect("run gpusight");
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn once_shows_the_job_only_where_one_is_known() {
    let table = once(&["--synthetic", "straggler"]);
    assert!(
        table.contains(
            "Jobs:\n  torchrun train_ddp.py @127.0.0.1:29500, world size 2: rank 0 (GPU 0, PID 2001); rank 1 (GPU 1, \
             PID 3001)\n"
        ),
        "{table}"
    );
    assert!(!once(&["--synthetic", "compute"]).contains("Jobs:"));
    let json: serde_json::Value =
        serde_json::from_str(&once(&["--json", "--synthetic", "straggler"])).expect("stdout is JSON");
    let jobs: Vec<&serde_json::Value> =
        json["tick"]["processes"].as_array().expect("processes").iter().filter_map(|p| p.get("job")).collect();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(jobs[1]["key"], "torch:127.0.0.1:29500/none");
    assert_eq!((jobs[1]["rank"].as_u64(), jobs[1]["world_size"].as_u64()), (Some(1), Some(2)));
    assert_eq!(jobs[1]["launcher"], "torchrun");
    assert!(jobs[1].get("pod").is_none(), "unknown fields are absent");
}

/// The rules of the findings, with their severities.
fn verdicts(report: &serde_json::Value) -> Vec<(String, String)> {
    findings(report)
        .iter()
        .map(|f| {
            (f["rule"].as_str().unwrap_or_default().to_owned(), f["severity"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

#[test]
fn doctor_calls_a_bursty_server_serving_not_idle() {
    let report = doctor(&["--synthetic", "serving", "--duration", "330s"]);
    let all = verdicts(&report);
    assert!(all.contains(&("serving".to_owned(), "info".to_owned())), "{all:?}");
    assert!(!all.iter().any(|(r, _)| r == "idle-holder"), "{all:?}");
    assert_eq!(warnings(&report), Vec::<String>::new(), "{all:?}");
}

#[test]
fn doctor_calls_rank_0_in_a_cpu_phase_a_straggler_not_a_hang() {
    let report = doctor(&["--synthetic", "rank0-eval", "--duration", "150s"]);
    assert_eq!(warnings(&report), vec!["rank-straggler".to_owned()], "{report}");
    let straggler = findings(&report).into_iter().find(|f| f["rule"] == "rank-straggler").expect("straggler");
    assert!(
        straggler["title"].as_str().unwrap_or("").contains("busy on the CPU (main thread at 100 %)"),
        "{straggler}"
    );
}

#[test]
fn doctor_names_comm_bound_ranks_the_spinning_input_rank_and_what_it_cannot_judge() {
    let comm = doctor(&["--synthetic", "comm-bound", "--duration", "60s"]);
    assert_eq!(warnings(&comm), vec!["comm-bound".to_owned(), "comm-bound".to_owned()], "{comm}");
    let spin = doctor(&["--synthetic", "nccl-spin-input-rank", "--duration", "90s"]);
    assert_eq!(warnings(&spin), vec!["input-bound".to_owned()], "{spin}");
    let at_30 = doctor(&["--synthetic", "straggler", "--duration", "30s"]);
    let waiting_gpu_warns = findings(&at_30).iter().any(|f| f["gpu_index"] == 0 && f["severity"] != "info");
    assert!(!waiting_gpu_warns, "{at_30}");
    let container = doctor(&["--synthetic", "container-no-pidns", "--duration", "90s"]);
    assert_eq!(warnings(&container), Vec::<String>::new(), "{container}");
    let not_judged = container["not_judged"].to_string();
    assert!(not_judged.contains("gpu-underfed") && not_judged.contains("--pid=host"), "{not_judged}");
    let mig = doctor(&["--synthetic", "mig-slice-busy", "--duration", "90s"]);
    assert_eq!(warnings(&mig), Vec::<String>::new(), "{mig}");
    let not_judged = mig["not_judged"].to_string();
    assert!(not_judged.contains("util-misleading") && not_judged.contains("has no per-slice reading"), "{mig}");
    assert!(!not_judged.contains("cpu-bound-input"), "judged on its slice's SM activity: {mig}");
}
