//! Findings judged per MIG slice: a slice's own SM activity says how busy the place a process runs is, so a job
//! flat out on a 1g slice is not idle however little of the card it uses, a starved job on a slice is called so by
//! name, two slices of one GPU get their own verdicts, and a slice without SM activity is not judged.

use crate::advice::testkit::{Build, get, has};
use crate::advice::{Finding, Rule, Severity};

/// The rules over how much a GPU works that would call a slice's job waiting.
const WAITING_RULES: [Rule; 8] = [
    Rule::InputBound,
    Rule::CpuBoundInput,
    Rule::MainThreadBound,
    Rule::GpuUnderfed,
    Rule::UtilMisleading,
    Rule::LaunchBound,
    Rule::IdleHolder,
    Rule::MemoryBound,
];

fn warnings(findings: &[Finding]) -> Vec<Rule> {
    findings.iter().filter(|f| f.severity >= Severity::Warning).map(|f| f.rule).collect()
}

#[test]
fn a_job_saturating_a_1g_slice_is_not_idle_underfed_or_cpu_bound() {
    let f = Build::new("mig-slice-busy").findings(90);
    for rule in WAITING_RULES {
        assert!(!has(&f, rule), "{rule:?}: {f:#?}");
    }
    assert_eq!(warnings(&f), Vec::<Rule>::new(), "{f:#?}");
    let mig = get(&f, Rule::MigActive);
    assert!(mig.evidence.contains("GPU 0 1g.18gb (GI 7) SM 9"), "{}", mig.evidence);
    // The same job transplanted by the test kit: a busy GPU's work on a slice, the card at 13 %.
    let busy = Build::new("compute").mig_slice(0, 0, 3, |sm| sm);
    let f = busy.findings(90);
    assert_eq!(warnings(&f), Vec::<Rule>::new(), "{f:#?}");
}

#[test]
fn a_starved_loader_on_a_slice_is_input_bound_and_names_the_slice() {
    let f = Build::new("input-bound").mig_slice(0, 0, 7, |sm| sm).findings(90);
    let input = get(&f, Rule::InputBound);
    assert_eq!(input.severity, Severity::Warning);
    assert_eq!((input.gpu_index, input.gpu_instance_id), (Some(0), Some(7)));
    assert!(input.title.starts_with("GPU 0 slice 1g.18gb (GI 7) is starved"), "{}", input.title);
    assert!(input.evidence.contains("GPU 0 slice 1g.18gb (GI 7) SM activity mean"), "{}", input.evidence);
    assert!(input.evidence.contains("GPM of its GPU instance"), "{}", input.evidence);
    // Its neighbour: the same loader with the slice busy is not starved.
    let fed = Build::new("input-bound").mig_slice(0, 0, 7, |_| Some(96.0)).findings(90);
    assert!(!has(&fed, Rule::InputBound), "{fed:#?}");
}

#[test]
fn two_slices_of_one_gpu_get_separate_verdicts() {
    // mixed: GPU 0 computes, GPU 1 is starved by storage, GPU 2 by CPU preprocessing; all three jobs on GPU 0.
    let build =
        Build::new("mixed:3").mig_slice(0, 0, 1, |sm| sm).mig_slice(1, 0, 2, |sm| sm).mig_slice(2, 0, 3, |sm| sm);
    let f = build.findings(90);
    let on_slice = |gi: u32| -> Vec<&Finding> {
        f.iter().filter(|x| x.gpu_index == Some(0) && x.gpu_instance_id == Some(gi)).collect()
    };
    assert!(on_slice(1).is_empty(), "the computing slice: {f:#?}");
    let input = get(&f, Rule::InputBound);
    assert_eq!(input.gpu_instance_id, Some(2), "{input:#?}");
    let cpu = get(&f, Rule::CpuBoundInput);
    assert_eq!((cpu.gpu_instance_id, cpu.severity), (Some(3), Severity::Warning), "{cpu:#?}");
    assert!(cpu.title.starts_with("GPU 0 slice 1g.18gb (GI 3) waits for CPU preprocessing"), "{}", cpu.title);
    // One verdict per slice: neither defers to the other's cause.
    assert!(input.cause.is_none() && cpu.cause.is_none(), "{f:#?}");
}

#[test]
fn a_mig_gpu_without_slice_sm_activity_is_not_judged_and_says_so() {
    let unread = Build::new("input-bound").mig_slice(0, 0, 7, |_| None);
    let f = unread.findings(90);
    for rule in WAITING_RULES {
        assert!(!has(&f, rule), "{rule:?}: {f:#?}");
    }
    let mig = get(&f, Rule::MigActive);
    assert!(mig.evidence.contains("no slice SM activity on GPU 0"), "{}", mig.evidence);
    assert!(mig.evidence.contains("input-bound"), "{}", mig.evidence);
    let not_judged = crate::doctor::blind_spots(&unread.history(90));
    assert!(not_judged.iter().any(|n| n.contains("its slices carry no SM activity")), "{not_judged:?}");
    // With the slice read, only the rules that need what a slice lacks are listed.
    let read = get(&Build::new("input-bound").mig_slice(0, 0, 7, |sm| sm).findings(90), Rule::MigActive).clone();
    assert!(!read.evidence.contains("no slice SM activity"), "{}", read.evidence);
    assert!(read.evidence.contains("own): util-misleading, launch-bound, h2d-copy-bound"), "{}", read.evidence);
    assert!(read.explanation.contains("util-misleading, launch-bound (NVML utilization"), "{}", read.explanation);
    assert!(!read.evidence.contains("input-bound"), "{}", read.evidence);
}
