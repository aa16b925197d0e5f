//! The input side where training really runs, end to end: `gpusight doctor --synthetic NAME --duration 90s --json`
//! gives the verdict an expert would for each case (shared file systems written or read, CPU work that is not
//! input, torch.compile warming up, pinned CPUs, idle evaluation workers), and no finding of any scenario prints a
//! remedy that its own evidence contradicts.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use serde_json::Value;

use crate::common::doctor_json as doctor;
use crate::common::{finding, warnings};

fn all_findings(report: &Value) -> Vec<Value> {
    let list = |key: &str| report[key].as_array().cloned().unwrap_or_default();
    list("findings").into_iter().chain(list("cleared")).collect()
}

fn text<'a>(f: &'a Value, key: &str) -> &'a str {
    f[key].as_str().unwrap_or_default()
}

/// Runs a scenario for 90 s of synthetic time: (exit code, document).
fn run(name: &str) -> (i32, Value) {
    let (output, report) = doctor(&["--synthetic", name, "--duration", "90s"]);
    (output.status.code().expect("an exit code"), report)
}

#[test]
fn logs_checkpoints_and_servers_on_the_network_are_no_dataset_stall() {
    // stdout to slurm-%j.out and TensorBoard events on the NFS home, checkpoints on Lustre: a healthy job.
    let (code, report) = run("nfs-stdout");
    assert_eq!((code, warnings(&report)), (0, Vec::<String>::new()), "{report}");
    // An inference server's handler threads blocked in socket reads wait for requests, not for a dataset.
    let (code, report) = run("inference-server");
    assert_eq!((code, warnings(&report)), (0, Vec::<String>::new()), "{report}");
    assert!(all_findings(&report).iter().all(|f| f["rule"] != "remote-dataset-stall"), "{report}");
}

#[test]
fn a_warm_lustre_dataset_decoded_on_the_cpu_is_cpu_bound() {
    let (_, report) = run("lustre-warm-decode");
    assert_eq!(warnings(&report), vec!["cpu-bound-input".to_owned()], "{report}");
    assert!(all_findings(&report).iter().all(|f| f["rule"] != "remote-dataset-stall"), "{report}");
}

#[test]
fn a_logging_thread_blocked_on_nfs_is_not_the_input() {
    let (_, report) = run("nfs-logging-thread");
    assert!(all_findings(&report).iter().all(|f| f["rule"] != "input-bound"), "{report}");
    let umbrella = finding(&report, "gpu-underfed");
    assert!(text(umbrella, "evidence").contains("threads wait on writes to /home (nfs4)"), "{umbrella}");
    for f in all_findings(&report) {
        assert!(!text(&f, "remedy").contains("copy the dataset"), "{f}");
    }
}

#[test]
fn a_real_read_stall_on_nfs_is_still_a_remote_dataset_stall() {
    let (_, report) = run("nfs-read-stall");
    assert_eq!(warnings(&report), vec!["remote-dataset-stall".to_owned()], "{report}");
    let stall = finding(&report, "remote-dataset-stall");
    assert!(text(stall, "evidence").contains("8 files open read-only on /mnt/datasets (nfs4)"), "{stall}");
    let (_, report) = run("remote-dataset-stall");
    assert_eq!(warnings(&report), vec!["remote-dataset-stall".to_owned()], "{report}");
}

#[test]
fn an_optimizer_on_the_cpu_names_the_main_thread() {
    let (_, report) = run("cpu-offload");
    assert_eq!(warnings(&report), vec!["main-thread-bound".to_owned()], "{report}");
    let f = finding(&report, "main-thread-bound");
    assert_eq!(text(f, "title"), "GPU 0 waits for the main thread of PID 2001");
    assert!(text(f, "remedy").contains("optimizer step on the CPU"), "{f}");
    assert!(!text(f, "remedy").contains("Raise DataLoader num_workers"), "{f}");
}

#[test]
fn a_model_compiling_is_warming_up_not_starved() {
    let (code, report) = run("compile-warmup");
    assert_eq!((code, warnings(&report)), (0, Vec::<String>::new()), "{report}");
    let f = finding(&report, "compile-warmup");
    assert_eq!(f["severity"], "info");
    assert!(text(f, "title").contains("torch.compile warming up"), "{f}");
    for f in all_findings(&report) {
        assert!(!text(&f, "evidence").contains("1 DataLoader worker"), "the compile worker is no worker: {f}");
        assert!(!text(&f, "remedy").contains("torch.compile"), "{f}");
    }
}

#[test]
fn workers_confined_to_two_cpus_are_named_with_the_mask() {
    let (_, report) = run("pinned-cpus");
    assert_eq!(warnings(&report), vec!["cpus-pinned".to_owned()], "{report}");
    let f = finding(&report, "cpus-pinned");
    let evidence = text(f, "evidence");
    assert!(evidence.contains("PID 2001 may run on 2 CPUs (Cpus_allowed_list 0-1)"), "{evidence}");
    assert!(evidence.contains("its 8 DataLoader workers share them"), "{evidence}");
    assert!(evidence.contains("29 of 32 cores idle"), "{evidence}");
    assert!(text(f, "remedy").contains("taskset"), "{f}");
}

#[test]
fn idle_evaluation_workers_are_not_counted_as_feeding() {
    let (_, report) = run("eval-workers-idle");
    assert_eq!(warnings(&report), vec!["cpu-bound-input".to_owned()], "{report}");
    let f = finding(&report, "cpu-bound-input");
    assert!(text(f, "evidence").contains("10 DataLoader workers (4 idle, not counted)"), "{f}");
    assert!(text(f, "remedy").contains("num_workers from 10"), "{f}");
}

/// Why a finding's remedy contradicts its own evidence, if it does.
fn contradiction(f: &Value, compiling: bool) -> Option<&'static str> {
    let (evidence, remedy) = (text(f, "evidence"), text(f, "remedy"));
    let raises_workers = remedy.contains("Raise DataLoader num_workers") || remedy.contains("set num_workers to about");
    let moves_dataset =
        ["copy the dataset", "stage the dataset", "cache the shards"].iter().any(|m| remedy.contains(m));
    if raises_workers && (f["rule"] == "main-thread-bound" || evidence.contains("keep up")) {
        return Some("more workers while the main thread is the limiter");
    }
    if raises_workers && remedy.contains("will not help") {
        return Some("more workers and 'will not help' in one remedy");
    }
    if remedy.contains("set num_workers to about") && evidence.contains("idle, not counted") {
        return Some("'no DataLoader workers' while idle workers exist");
    }
    if moves_dataset && evidence.contains("not the input") {
        return Some("moving the dataset while the waits are writes");
    }
    if moves_dataset && f["rule"] == "input-bound" && evidence.contains("reads 0 B/s") && !evidence.contains("PSI") {
        return Some("moving the dataset with no reads");
    }
    if compiling && remedy.contains("torch.compile(") {
        return Some("torch.compile while the model is compiling");
    }
    None
}

#[test]
fn no_remedy_contradicts_its_own_evidence_in_any_scenario() {
    for name in gpusight::source::synthetic::Scenario::NAMES {
        if name == "scale" {
            continue; // 1,000 processes of one shape: nothing about remedies that the others do not cover.
        }
        let (_, report) = run(name);
        let findings = all_findings(&report);
        let compiling: Vec<u64> =
            findings.iter().filter(|f| f["rule"] == "compile-warmup").filter_map(|f| f["gpu_index"].as_u64()).collect();
        for f in &findings {
            let on_compiling_gpu = f["gpu_index"].as_u64().is_some_and(|g| compiling.contains(&g));
            if let Some(why) = contradiction(f, on_compiling_gpu) {
                panic!("{name}: {why}: {f}");
            }
        }
    }
}

#[test]
fn the_contradiction_check_catches_what_it_is_about() {
    let f = |rule: &str, evidence: &str, remedy: &str| serde_json::json!({"rule": rule, "evidence": evidence, "remedy": remedy});
    let main = f("cpu-bound-input", "4 DataLoader workers keep up", "Raise DataLoader num_workers from 4 to about 8.");
    assert!(contradiction(&main, false).is_some());
    let logs = f("input-bound", "threads wait on writes (not the input)", "Feed the GPU faster: copy the dataset.");
    assert!(contradiction(&logs, false).is_some());
    let compile = f("launch-bound", "", "use torch.compile(mode=\"reduce-overhead\")");
    assert!(contradiction(&compile, true).is_some());
    assert!(contradiction(&compile, false).is_none());
    let fine = f("cpu-bound-input", "8 DataLoader workers", "Raise DataLoader num_workers from 8 to about 20.");
    assert!(contradiction(&fine, false).is_none());
}
