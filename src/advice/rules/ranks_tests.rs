//! Serving processes, multi-rank jobs, containers and MIG: each situation's scenario gets the verdict an expert
//! would give, and its healthy or truly faulty neighbour keeps the old one.

use crate::advice::testkit::{Build, get, has};
use crate::advice::{Finding, Rule, Severity};
use crate::sample::Tick;

/// The rules at warning or worse.
fn warnings(f: &[Finding]) -> Vec<Rule> {
    let mut rules: Vec<Rule> = f.iter().filter(|x| x.severity >= Severity::Warning).map(|x| x.rule).collect();
    rules.sort();
    rules
}

#[test]
fn a_bursty_server_is_serving_not_an_idle_holder() {
    let f = Build::new("serving").findings(330);
    assert!(!has(&f, Rule::IdleHolder), "{f:#?}");
    let serving = get(&f, Rule::Serving);
    assert_eq!((serving.severity, serving.gpu_index, serving.pid), (Severity::Info, Some(0), Some(2001)));
    assert!(serving.evidence.starts_with("serving: GPU busy 11 % of the time"), "{}", serving.evidence);
    assert!(serving.evidence.contains("holds 2.0 GiB"), "{}", serving.evidence);
    let traffic = "listens on port 8000: 136 connections accepted over 5 min, 3 open at the last read";
    assert!(serving.evidence.contains(traffic), "{}", serving.evidence);
    assert_eq!(warnings(&f), Vec::<Rule>::new(), "{f:#?}");
}

#[test]
fn serving_says_the_length_its_samples_cover() {
    // Ninety seconds of a five-minute window: the duty cycle is over 90 s, not "over 5 min".
    let early = Build::new("serving").findings(90);
    let evidence = &get(&early, Rule::Serving).evidence;
    assert!(evidence.contains("(mean utilization over 90 s)"), "{evidence}");
    // Once the samples cover the window, its nominal length.
    let full = Build::new("serving").findings(330);
    let evidence = &get(&full, Rule::Serving).evidence;
    assert!(evidence.contains("(mean utilization over 5 min)"), "{evidence}");
    // Before the short window is covered, nothing is said.
    assert!(!has(&Build::new("serving").findings(10), Rule::Serving));
}

#[test]
fn a_process_that_ran_kernels_is_not_idle_even_without_a_socket() {
    // The same bursty process with no listening socket read: it ran kernels, so it is not idle; not a server.
    let f = Build::new("serving").tick(|_, t| t.processes.iter_mut().for_each(|p| p.serving = None)).findings(330);
    assert!(!has(&f, Rule::IdleHolder) && !has(&f, Rule::Serving), "{f:#?}");
    // Without per-process samples, the GPU's activity counts while it is the only process.
    let no_own = Build::new("serving").tick(|_, t| {
        t.processes.iter_mut().for_each(|p| p.serving = None);
        t.gpu_processes.iter_mut().for_each(|p| p.sm_util_pct = None);
    });
    assert!(!has(&no_own.findings(330), Rule::IdleHolder));
}

#[test]
fn a_listening_process_with_no_traffic_and_no_kernels_is_still_an_idle_holder() {
    // The real idle holder: a notebook with its kernel's ports (its front end's heartbeats are no requests).
    let notebook = Build::new("idle-holder").tick(|_, t| {
        for p in t.processes.iter_mut().filter(|p| p.pid == 2001) {
            p.serving = Some(crate::sample::Serving { ports: vec![52_100, 52_101], connections: 5, accepted: None });
        }
    });
    let f = notebook.findings(330);
    assert_eq!(get(&f, Rule::IdleHolder).severity, Severity::Warning, "{f:#?}");
    let remedy = &get(&f, Rule::IdleHolder).remedy;
    assert!(remedy.contains("kill 2001 (SIGTERM), or kill -KILL 2001"), "a command, not a key: {remedy}");
    assert!(!has(&f, Rule::Serving));
    // A server nobody called for five minutes and whose GPU stayed idle: idle-holder, and it says it listens.
    let unused = Build::new("serving").tick(|_, t| {
        t.gpus[0].util_pct = Some(0);
        t.gpu_processes.iter_mut().for_each(|p| p.sm_util_pct = Some(0));
        for p in t.processes.iter_mut().filter(|p| p.pid == 2001) {
            p.serving = Some(crate::sample::Serving { ports: vec![8000], connections: 0, accepted: None });
        }
    });
    let f = unused.findings(330);
    assert!(
        get(&f, Rule::IdleHolder)
            .evidence
            .contains("listens on port 8000 with no connection at any read over 5 min (no requests)"),
        "{f:#?}"
    );
    assert!(!has(&f, Rule::Serving));
    // A stale per-process value that NVML carries over an idle GPU is no kernel.
    let stale =
        Build::new("idle-holder").tick(|_, t| t.gpu_processes.iter_mut().for_each(|p| p.sm_util_pct = Some(40)));
    assert!(has(&stale.findings(330), Rule::IdleHolder));
}

#[test]
fn rank_0_busy_on_the_cpu_is_a_straggler_not_a_hang() {
    let f = Build::new("rank0-eval").findings(150);
    assert!(!has(&f, Rule::CollectiveHang), "{f:#?}");
    let straggler = get(&f, Rule::RankStraggler);
    assert_eq!((straggler.severity, straggler.gpu_index, straggler.pid), (Severity::Warning, Some(0), Some(2001)));
    assert_eq!(
        straggler.title, "rank 0 (GPU 0, PID 2001) is busy on the CPU (main thread at 100 %) while rank 1 waits",
        "{straggler:#?}"
    );
    assert!(straggler.evidence.contains("not a hang"), "{}", straggler.evidence);
    assert!(straggler.remedy.contains("py-spy dump --pid 2001"), "{}", straggler.remedy);
    assert_eq!(warnings(&f), vec![Rule::RankStraggler], "{f:#?}");
    // Its neighbour, the real hang: the rank that never joined is quiet on the CPU too.
    let hung = Build::new("rank0-eval").tick(|_, t| {
        for p in t.processes.iter_mut().filter(|p| p.pid == 2001) {
            p.cpu_pct = Some(1.0);
            p.busiest_thread.iter_mut().for_each(|b| b.cpu_pct = 1.0);
        }
    });
    let f = hung.findings(150);
    assert_eq!(get(&f, Rule::CollectiveHang).severity, Severity::Critical, "{f:#?}");
    assert!(!has(&f, Rule::RankStraggler));
}

#[test]
fn rank_0_busy_on_the_cpu_is_found_with_gloo_ranks_blocked_on_the_cpu() {
    // gloo: the waiting rank's GPU shows no work either; its threads block in the collective.
    let gloo = |cpu: f32| {
        Build::new("rank0-eval").tick(move |_, t: &mut Tick| {
            t.gpus[1].util_pct = Some(0);
            if let Some(g) = t.gpus[1].gpm.as_mut() {
                g.sm_active_pct = Some(0.0);
            }
            for p in t.processes.iter_mut().filter(|p| p.pid == 3001) {
                p.cpu_pct = Some(cpu);
                p.busiest_thread.iter_mut().for_each(|b| b.cpu_pct = cpu);
            }
        })
    };
    let f = gloo(2.0).findings(150);
    assert_eq!(get(&f, Rule::RankStraggler).gpu_index, Some(0), "{f:#?}");
    assert!(!has(&f, Rule::CollectiveHang));
    // Both ranks busy on the CPU (evaluation on every rank): nobody waits, no straggler.
    assert!(!has(&gloo(100.0).findings(150), Rule::RankStraggler));
}

#[test]
fn collectives_over_pcie_are_comm_bound_not_h2d_copy_bound() {
    let f = Build::new("comm-bound").findings(45);
    assert!(!has(&f, Rule::H2dCopyBound), "{f:#?}");
    let comm = get(&f, Rule::CommBound);
    assert_eq!(comm.severity, Severity::Warning);
    assert!(comm.evidence.contains("both ways alike"), "{}", comm.evidence);
    assert!(!comm.remedy.contains("pin_memory"), "{}", comm.remedy);
    let mut gpus: Vec<u32> = f.iter().filter(|x| x.rule == Rule::CommBound).filter_map(|x| x.gpu_index).collect();
    gpus.sort_unstable();
    assert_eq!(gpus, vec![0, 1]);
    assert_eq!(warnings(&f), vec![Rule::CommBound, Rule::CommBound], "{f:#?}");
    // Its neighbours: the same traffic one way is input copies (h2d-copy-bound); the same job's ranks as
    // unrelated processes are not a job's communication.
    let one_way = Build::new("comm-bound").tick(|_, t| t.gpus.iter_mut().for_each(|g| g.pcie_tx_kbps = Some(100_000)));
    let f = one_way.findings(45);
    assert!(has(&f, Rule::H2dCopyBound) && !has(&f, Rule::CommBound), "{f:#?}");
    let alone = Build::new("comm-bound").tick(|_, t| t.processes.iter_mut().for_each(|p| p.job = None));
    let f = alone.findings(45);
    assert!(!has(&f, Rule::CommBound), "{f:#?}");
}

#[test]
fn an_input_bound_rank_is_found_behind_nccls_spin() {
    let f = Build::new("nccl-spin-input-rank").findings(90);
    let input = get(&f, Rule::InputBound);
    assert_eq!((input.severity, input.gpu_index), (Severity::Warning, Some(0)));
    assert!(input.evidence.contains("GPM SM activity mean"), "{}", input.evidence);
    assert_eq!(warnings(&f), vec![Rule::InputBound], "{f:#?}");
    // The same GPU in a job of its own is judged by utilization as before (70 % is not starved).
    let alone = Build::new("nccl-spin-input-rank").tick(|_, t| t.processes.iter_mut().for_each(|p| p.job = None));
    assert!(!has(&alone.findings(90), Rule::InputBound));
}

#[test]
fn a_waiting_rank_at_30_s_is_not_blamed() {
    let f = Build::new("straggler").findings(30);
    let spin = f.iter().find(|x| x.rule == Rule::UtilMisleading && x.gpu_index == Some(0)).expect("GPU 0");
    assert_eq!(spin.severity, Severity::Info, "{spin:#?}");
    assert_eq!(spin.title, "GPU 0 waits in a collective; judging which rank is slow");
    assert!(!f.iter().any(|x| x.gpu_index == Some(0) && x.severity >= Severity::Warning), "{f:#?}");
    // Its neighbour: the same numbers on a GPU of a single-GPU job still warn.
    let alone = Build::new("straggler").tick(|_, t| t.processes.iter_mut().for_each(|p| p.job = None));
    let f = alone.findings(30);
    let misleading = f.iter().find(|x| x.rule == Rule::UtilMisleading && x.gpu_index == Some(0)).expect("GPU 0");
    assert_eq!(misleading.severity, Severity::Warning);
}

#[test]
fn processes_outside_the_pid_namespace_are_not_judged() {
    let f = Build::new("container-no-pidns").findings(90);
    assert!(!has(&f, Rule::GpuUnderfed), "{f:#?}");
    let note = f.iter().find(|x| x.rule == Rule::Visibility && x.gpu_index == Some(0)).expect("not judged");
    assert_eq!(note.severity, Severity::Info);
    assert_eq!(note.title, "Cannot see the processes on GPU 0: not judged");
    assert!(note.evidence.contains("gpu-underfed"), "{}", note.evidence);
    assert_eq!(warnings(&f), Vec::<Rule>::new(), "{f:#?}");
    // Its neighbour: the same GPU with the process in view is underfed, cause unknown.
    let seen = Build::new("gpu-underfed").findings(90);
    assert_eq!(get(&seen, Rule::GpuUnderfed).severity, Severity::Warning);
    assert!(!seen.iter().any(|x| x.rule == Rule::Visibility && x.gpu_index.is_some()));
}

#[test]
fn a_busy_mig_slice_is_judged_by_its_own_sm_activity_not_the_whole_gpus() {
    let f = Build::new("mig-slice-busy").findings(90);
    for rule in [Rule::CpuBoundInput, Rule::GpuUnderfed, Rule::UtilMisleading, Rule::LaunchBound, Rule::InputBound] {
        assert!(!has(&f, rule), "{rule:?}: {f:#?}");
    }
    let mig = get(&f, Rule::MigActive);
    assert!(mig.evidence.contains("not judged there ("), "{}", mig.evidence);
    assert!(mig.evidence.contains("util-misleading") && !mig.evidence.contains("cpu-bound-input"), "{}", mig.evidence);
    // Its neighbour: the same job with MIG off is called cpu-bound, as its numbers say.
    let whole = Build::new("mig-slice-busy")
        .machine(|m| m.gpus.iter_mut().for_each(|g| g.mig_enabled = Some(false)))
        .tick(|_, t| t.gpus.iter_mut().for_each(|g| g.util_pct = Some(13)));
    assert!(has(&whole.findings(90), Rule::CpuBoundInput));
}
