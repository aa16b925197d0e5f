//! Everyday situations the account tells apart from the job's threads, end to end: `gpusight doctor --synthetic NAME
//! --json` names another user's processes holding the CPUs (cpu-contention), workers running too many threads
//! (cpu-oversubscribed), a crash loop (restart-loop), a synchronous checkpoint (checkpoint-write), collectives over
//! TCP (comm-bound), decoding in the main process (cpu-bound-input), a spinning kernel (util-misleading) and leaves a
//! start-up at information; each beside a neighbour it must not be confused with.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use serde_json::Value;

use crate::common::doctor_json;
use crate::common::{finding, warnings};

/// `doctor --synthetic NAME` with `args` after it: (exit code, document).
fn doctor(name: &str, args: &[&str]) -> (i32, Value) {
    let (output, report) = doctor_json(&[&["--synthetic", name], args].concat());
    (output.status.code().expect("an exit code"), report)
}

/// Every finding, active or cleared.
fn all_findings(report: &Value) -> Vec<Value> {
    let list = |key: &str| report[key].as_array().cloned().unwrap_or_default();
    list("findings").into_iter().chain(list("cleared")).collect()
}

fn rules(report: &Value) -> Vec<String> {
    all_findings(report).iter().map(|f| f["rule"].as_str().unwrap_or_default().to_owned()).collect()
}

fn text<'a>(f: &'a Value, key: &str) -> &'a str {
    f[key].as_str().unwrap_or_default()
}

/// Whether a remedy asks for more `DataLoader` workers.
fn raises_workers(f: &Value) -> bool {
    let remedy = text(f, "remedy");
    ["raise DataLoader num_workers", "Raise DataLoader num_workers", "set DataLoader num_workers", "set num_workers"]
        .iter()
        .any(|m| remedy.contains(m))
}

#[test]
fn another_users_processes_on_every_cpu_are_contention_never_more_workers() {
    let (code, report) = doctor("cpu-contention", &[]);
    assert_eq!((code, warnings(&report)), (1, vec!["cpu-contention".to_owned()]), "{report}");
    let f = finding(&report, "cpu-contention");
    assert!(text(f, "remedy").contains("bob's stress (PID 4242"), "{f}");
    assert!(!rules(&report).iter().any(|r| r == "input-bound"), "nothing waits on I/O: {report}");
    assert!(all_findings(&report).iter().all(|f| !raises_workers(f)), "{report}");
    // The neighbour: workers pegged on a host with idle CPUs are the input pipeline, and more of them help.
    let (_, decode) = doctor("lustre-warm-decode", &["--duration", "90s"]);
    assert!(!rules(&decode).iter().any(|r| r.starts_with("cpu-contention") || r == "cpu-oversubscribed"), "{decode}");
}

#[test]
fn workers_running_dozens_of_threads_each_oversubscribe_the_cpus() {
    let (code, report) = doctor("oversubscribed", &[]);
    assert_eq!((code, warnings(&report)), (1, vec!["cpu-oversubscribed".to_owned()]), "{report}");
    let remedy = text(finding(&report, "cpu-oversubscribed"), "remedy");
    assert!(remedy.contains("its 8 workers run up to 36 threads each"), "{remedy}");
    assert!(remedy.contains("Do not raise num_workers"), "{remedy}");
    assert!(all_findings(&report).iter().all(|f| !raises_workers(f)), "{report}");
    // The neighbour: the CPUs held by another user are not the job's own threads.
    let (_, contention) = doctor("cpu-contention", &[]);
    assert!(!rules(&contention).contains(&"cpu-oversubscribed".to_owned()), "{contention}");
}

#[test]
fn a_job_restarting_every_90_s_is_a_restart_loop_within_10_minutes() {
    let (code, report) = doctor("crash-loop", &["--duration", "10m"]);
    assert_eq!((code, warnings(&report)), (1, vec!["restart-loop".to_owned()]), "{report}");
    let f = finding(&report, "restart-loop");
    // Each restart has a new PID; the command line is the same.
    assert!(text(f, "evidence").contains("new processes 20001, 20002"), "{f}");
    assert!(text(f, "evidence").contains("python train.py --config exp7.yaml"), "{f}");
    // Its start-ups' memory growth is no leak.
    assert!(!rules(&report).contains(&"vram-growing".to_owned()), "{report}");
    // The neighbour: one process starting once is no loop.
    let (_, once) = doctor("startup-load", &["--duration", "10m"]);
    assert!(!rules(&once).contains(&"restart-loop".to_owned()), "{once}");
}

#[test]
fn a_synchronous_checkpoint_is_named_once_five_minutes_are_watched() {
    let (code, report) = doctor("checkpoint-sync", &["--duration", "6m"]);
    assert_eq!((code, warnings(&report)), (1, vec!["checkpoint-write".to_owned()]), "{report}");
    let f = finding(&report, "checkpoint-write");
    assert!(text(f, "remedy").contains("asynchronously"), "{f}");
    assert!(!rules(&report).iter().any(|r| r == "input-bound" || r == "gpu-underfed"), "{report}");
    // Before the phase window is covered, a third of the time spent writing is not judged yet: no warning.
    let (code, early) = doctor("checkpoint-sync", &["--duration", "4m"]);
    assert_eq!((code, warnings(&early)), (0, Vec::<String>::new()), "{early}");
}

#[test]
fn collectives_over_tcp_are_communication_on_both_ranks() {
    let (code, report) = doctor("nccl-tcp", &[]);
    assert_eq!((code, warnings(&report)), (1, vec!["comm-bound".to_owned(), "comm-bound".to_owned()]), "{report}");
    let gpus: Vec<u64> =
        report["findings"].as_array().expect("findings").iter().filter_map(|f| f["gpu_index"].as_u64()).collect();
    assert_eq!(gpus, vec![0, 1], "{report}");
    assert!(!rules(&report).iter().any(|r| r == "util-misleading" || r == "collective-hang"), "{report}");
    // The neighbour: one process's spinning kernel is no collective.
    let (_, spin) = doctor("spin-kernel", &[]);
    assert!(!rules(&spin).contains(&"comm-bound".to_owned()), "{spin}");
}

#[test]
fn a_main_thread_decoding_its_own_jpegs_wants_workers() {
    let (code, report) = doctor("decode-main", &[]);
    assert_eq!((code, warnings(&report)), (1, vec!["cpu-bound-input".to_owned()]), "{report}");
    let f = finding(&report, "cpu-bound-input");
    assert!(text(f, "remedy").contains("set DataLoader num_workers"), "{f}");
    assert!(!rules(&report).iter().any(|r| r == "input-bound" || r == "main-thread-bound"), "{report}");
    // The neighbour: a job whose workers decode already is told about its workers, not to start some.
    let (_, workers) = doctor("lustre-warm-decode", &["--duration", "90s"]);
    assert!(!text(finding(&workers, "cpu-bound-input"), "remedy").contains("set DataLoader num_workers"), "{workers}");
}

#[test]
fn a_spinning_kernel_is_utilization_that_misleads_and_nothing_else() {
    let (code, report) = doctor("spin-kernel", &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(rules(&report), vec!["util-misleading".to_owned()], "{report}");
    assert_eq!(finding(&report, "util-misleading")["severity"], "warning", "{report}");
    // The neighbour: a GPU whose kernels fill the SMs is busy.
    let (_, compute) = doctor("compute", &[]);
    assert!(!rules(&compute).contains(&"util-misleading".to_owned()), "{compute}");
}

#[test]
fn a_job_loading_its_checkpoint_is_starting_up_not_leaking() {
    let (code, report) = doctor("startup-load", &[]);
    assert_eq!((code, warnings(&report)), (0, Vec::<String>::new()), "{report}");
    assert!(!rules(&report).contains(&"vram-growing".to_owned()), "{report}");
    for f in all_findings(&report).iter().filter(|f| f["rule"] == "start-up") {
        assert_eq!(f["severity"], "info", "{f}");
    }
    // The neighbour: memory that keeps growing after the start-up is a leak.
    let (_, leak) = doctor("leak", &["--duration", "90s"]);
    assert!(rules(&leak).contains(&"vram-growing".to_owned()), "{leak}");
}
