//! No finding's remedy contradicts its own evidence, over every synthetic scenario's doctor report (active,
//! folded-in and cleared findings): rules added later, with their scenarios, are checked too.
#![allow(clippy::expect_used, reason = "tests may panic on a broken scenario")]

use gpusight::advice::{Finding, Thresholds};
use gpusight::doctor::DoctorReport;
use gpusight::pipeline::Pipeline;
use gpusight::source::synthetic::Scenario;

use crate::common::{next_snapshot, synthetic};

/// What a remedy must not say given what its evidence says. Each check reads the evidence and the remedy in lower
/// case and returns why they contradict, if they do.
fn contradictions(evidence: &str, remedy: &str) -> Vec<&'static str> {
    let (evidence, remedy) = (evidence.to_lowercase(), remedy.to_lowercase());
    let mut out = Vec::new();
    // The main thread is the limiter while DataLoader workers exist: more workers will not help.
    // "4 DataLoader workers" anywhere in the evidence: the number before any mention.
    let workers_exist = evidence.match_indices("dataloader worker").any(|(at, _)| {
        let before = evidence[..at].trim_end();
        before.rsplit(' ').next().and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n > 0)
    });
    let raises_workers =
        ["raise dataloader num_workers", "raise num_workers", "more dataloader workers", "num_workers from"]
            .iter()
            .any(|p| remedy.contains(p))
            && !remedy.contains("will not help");
    if evidence.contains("main thread") && workers_exist && raises_workers {
        out.push("a DataLoader-worker remedy for a main-thread bottleneck");
    }
    // A mount that is only written to is not a dataset to copy.
    let written_only =
        ["only written", "only writes", "write-only", "writes only"].iter().any(|p| evidence.contains(p));
    if written_only && remedy.contains("copy the dataset") {
        out.push("\"copy the dataset\" for a mount that is only written to");
    }
    // A serving process is not a forgotten one: no advice to kill it.
    let serving = ["serving", "inference server", "serves "].iter().any(|p| evidence.contains(p));
    let kills = ["press t", "press k", "kill "].iter().any(|p| remedy.contains(p)) || remedy.ends_with("kill it.");
    if serving && kills {
        out.push("kill advice for a process the evidence calls serving");
    }
    out
}

/// Every (rule, evidence, remedy) of a report: the active verdicts, what they folded in (with the verdict's remedy),
/// and the cleared findings.
fn checked(report: &DoctorReport) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut add = |f: &Finding| {
        out.push((f.rule.name().to_owned(), f.evidence.clone(), f.remedy.clone()));
        for also in &f.also {
            out.push((format!("{} (in {})", also.rule.name(), f.rule.name()), also.evidence.clone(), f.remedy.clone()));
        }
    };
    report.findings.iter().for_each(&mut add);
    report.cleared.iter().for_each(|c| add(&c.finding));
    out
}

fn doctor(spec: &str, ticks: usize) -> DoctorReport {
    let mut source = synthetic(spec);
    let mut pipeline = Pipeline::new(&next_snapshot(&mut source), 900, Thresholds::default());
    for _ in 1..ticks {
        pipeline.ingest_owned(next_snapshot(&mut source));
    }
    DoctorReport::new(&pipeline)
}

#[test]
fn no_remedy_contradicts_its_evidence_in_any_scenario() {
    let mut seen = 0;
    for name in Scenario::NAMES {
        // Scale's default is a benchmark's size; two GPUs of eight processes each show the same rules.
        let spec = if name == "scale" { "scale:2x8".to_owned() } else { name.to_owned() };
        let report = doctor(&spec, 130);
        for (rule, evidence, remedy) in checked(&report) {
            seen += 1;
            let wrong = contradictions(&evidence, &remedy);
            assert!(wrong.is_empty(), "{name}: {rule}: {wrong:?}\n  evidence: {evidence}\n  remedy: {remedy}");
        }
    }
    assert!(seen >= Scenario::NAMES.len(), "the scenarios gave {seen} findings to check");
}

#[test]
fn the_checks_catch_each_class() {
    let main_thread = "its main thread TID 2001 (python) at 100 % of one core (median); 4 DataLoader workers";
    assert_eq!(contradictions(main_thread, "Raise DataLoader num_workers from 4 to 8.").len(), 1);
    assert!(contradictions(main_thread, "The main thread is the limiter: more workers will not help.").is_empty());
    let no_workers = "its main thread TID 2001 (python) at 100 % of one core (median); 0 DataLoader workers";
    assert!(contradictions(no_workers, "Set num_workers to about 8.").is_empty());
    let later = "its main thread at 100 %; DataLoader worker PID 3002 at 40 %; 2 DataLoader workers";
    assert_eq!(contradictions(later, "Raise DataLoader num_workers from 2 to 8.").len(), 1);
    let written = "the job's mount /ckpt is only written to (checkpoints), nothing read";
    assert_eq!(contradictions(written, "Copy the dataset to local NVMe.").len(), 1);
    assert!(contradictions("reads 384 MiB/s from /data", "Copy the dataset to local NVMe.").is_empty());
    let serving = "PID 4242 (vllm) is serving: it holds 70 GiB between requests";
    assert_eq!(contradictions(serving, "Free the GPU: select the process and press T.").len(), 1);
    assert!(contradictions("no SM activity for 10 min", "Select the process and press T.").is_empty());
}
